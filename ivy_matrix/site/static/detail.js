/* ivy-matrix static site: a cell's detail: since when it fails and what changed then, its transitions, its failure, its newest jobs. */
"use strict";

(function () {
  const M = window.ivyMatrix;
  const {
    STATUS,
    SYMBOL,
    h,
    name,
    shown,
    shownMessage,
    plural,
    makeHash,
    dashboardHref,
    runLabel,
    shortSha,
    safeUrl,
    jobLink,
    parseHash,
    jobsOf,
    cellStatus,
    cellCounts,
  } = M;

  // ------------------------------------------------------------------ cell detail

  const dialog = document.getElementById("detail");
  const detailBody = document.getElementById("detail-body");
  let returnFocus = null;
  let lastCell = null; // [test, backend] of the detail shown last

  // Runs of equal outcome, newest first: the transitions of a cell's history.
  function transitions(cell, jobs) {
    const spans = [];
    for (let i = 0; i < cell.h.length; i++) {
      const status = STATUS[cell.h[i]];
      const job = jobs[cell.j[i]];
      const last = spans[spans.length - 1];
      if (last && last.status === status) {
        last.from = job;
        last.count++;
      } else {
        spans.push({ status: status, to: job, from: job, count: 1 });
      }
    }
    return spans;
  }

  // What changed between the last pass and the first failure (the data's blame, docs/site.md):
  // the compare link (plain http(s) only), the changed packages, the notes. Text only.
  function blameNodes(blame, blames, cell, jobs) {
    const nodes = [h("h3", { text: "What changed" })];
    const url = blame.u !== undefined ? safeUrl(blames.base + blame.u) : "";
    if (url) {
      const from = jobs[cell.p];
      const to = jobs[cell.i];
      const label = from && to && from.sha && to.sha ? "compare " + shortSha(from.sha) + "..." + shortSha(to.sha) : "compare the commits";
      nodes.push(h("p", { class: "compare" }, h("a", { href: url, rel: "noopener noreferrer", target: "_blank", text: label })));
    }
    if (blame.c && blame.c.length) {
      nodes.push(h("ul", { class: "changes" }, blame.c.map(function (change) {
        return h("li", null, name(change[0]), " " + shown(change[1] || "(none)") + " -> " + shown(change[2] || "(none)"));
      })));
    } else if (blame.h === "code only") {
      nodes.push(h("p", { class: "changes", text: "Same environment: no package changed." }));
    }
    if (blame.x && blame.x.length) {
      nodes.push(h("p", { class: "blame-notes", text: shown(blame.x.join("; ")) }));
    }
    return nodes;
  }

  function openDetail(doc, test, backend) {
    lastCell = [test, backend];
    const row = doc.rows.find(function (r) { return r[0] === test; });
    const column = doc.backends.indexOf(backend);
    if (!row || column < 0) {
      closeDetail(false);
      return;
    }
    const jobs = jobsOf(doc);
    const cellIndex = row[1 + column];
    const status = cellStatus(doc, cellIndex);
    const cell = cellIndex < 0 ? null : doc.cells[cellIndex];
    const counts = cellCounts(cell, status);
    const nodes = [
      h("h2", { id: "detail-title" }, name(test), " · ", name(backend)),
      h("p", { class: "detail-status " + status }, SYMBOL[status] + " " + status),
    ];
    if (cell) {
      const facts = [];
      if (cell.n) {
        facts.push("failing since " + runLabel(jobs[cell.i]) + (cell.o ? ", at least " : ", ") + plural(cell.n, "run"));
      }
      if (cell.p !== undefined) facts.push((cell.n ? "last pass " : "last passed in ") + runLabel(jobs[cell.p]));
      else if (cell.n) facts.push("no pass in the results kept");
      if (cell.f) facts.push(cell.f === "rerun" ? "flaky: passed only after reruns" : "flaky: flips between passing and failing");
      const blame = cell.b === undefined || !doc.blames ? null : doc.blames.list[cell.b];
      // The hint closes the sentence: "failing since run R (...); last pass run Q (...): both".
      if (facts.length) nodes.push(h("p", { class: "since", text: facts.join("; ") + (blame && blame.h ? ": " + blame.h : "") }));
      if (blame) nodes.push.apply(nodes, blameNodes(blame, doc.blames, cell, jobs));
      if (counts.counts) {
        const c = counts.counts;
        nodes.push(h("p", { class: "cases-line", text: c[1] + " of " + c[4] + " cases failed, " + c[0] + " passed, " + c[2] + " skipped" + (c[3] ? ", " + c[3] + " flaky" : "") }));
      }
      const message = cell.m ? (doc.messages || {})[cell.m] : "";
      const own = cell.e || message;
      if (own) nodes.push(h("h3", { text: "Failure" }), h("pre", { class: "message", text: shownMessage(own) }));
      nodes.push(h("h3", { text: "History (newest first)" }),
        h("ol", { class: "transitions" }, transitions(cell, jobs).map(function (span) {
          const range = span.count > 1 ? " from " + runLabel(span.from) + " to " + runLabel(span.to) : " in " + runLabel(span.to);
          return h("li", { class: span.status }, SYMBOL[span.status] + " " + span.status + range + " (" + plural(span.count, "run") + ")");
        })));
      nodes.push(h("h3", { text: "Newest jobs" }), h("ul", { class: "jobs" }, cell.j.slice(0, 3).map(function (j, i) {
        const job = jobs[j];
        return h("li", null, jobLink(job, runLabel(job) + (job && job.attempt > 1 ? " attempt " + job.attempt : "")), ": " + STATUS[cell.h[i]]);
      })));
      if (cell.m) {
        const same = doc.backends.filter(function (b, i) {
          const other = row[1 + i];
          return i !== column && other >= 0 && doc.cells[other].m === cell.m;
        });
        nodes.push(h("h3", { text: "Same failure" }), h("p", null,
          same.length ? ["Also on ", same.map(function (b, i) { return [i ? ", " : "", h("a", { href: dashboardHref(doc.id, { test: test, cell: b }) }, name(b))]; }), ". "] : "On no other backend of this test. ",
          h("a", { href: makeHash("/groups", { sig: cell.m }), text: "Every test with this failure" })));
      }
    } else {
      nodes.push(h("p", { text: "This test has no result on this backend." }));
    }
    detailBody.replaceChildren.apply(detailBody, nodes);
    if (!dialog.open) {
      returnFocus = document.activeElement;
      dialog.showModal();
    }
    document.getElementById("detail-close").focus();
  }

  function closeDetail(updateUrl) {
    if (dialog.open) dialog.close();
    if (updateUrl) {
      const place = parseHash();
      place.params.delete("test");
      place.params.delete("cell");
      const rest = place.params.toString();
      history.replaceState(null, "", "#" + place.path + (rest ? "?" + rest : ""));
    }
  }

  document.getElementById("detail-close").addEventListener("click", function () { closeDetail(true); });
  dialog.addEventListener("close", function () {
    const place = parseHash();
    if (place.params.has("test")) closeDetail(true);
    if (returnFocus && document.contains(returnFocus)) returnFocus.focus();
    else focusCell();
    returnFocus = null;
  });

  // After a reload with a cell in the URL, closing the detail focuses that cell in the grid.
  function focusCell() {
    if (!lastCell) return;
    for (const td of document.querySelectorAll("#grid td.cell")) {
      if (td.dataset.test === lastCell[0] && td.dataset.backend === lastCell[1]) {
        const button = td.querySelector("button");
        if (button) button.focus();
        return;
      }
    }
  }

  Object.assign(M, { openDetail, closeDetail });
})();
