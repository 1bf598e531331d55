/* ivy-matrix static site: the grid of one dashboard: filters, sorts, result strips, keyboard moves. */
"use strict";

(function () {
  const M = window.ivyMatrix;
  const {
    GRID_PAGE,
    STATUS,
    SYMBOL,
    h,
    name,
    shown,
    firstLine,
    plural,
    makeHash,
    show,
    load,
    replaceHash,
    parseHash,
    setStatus,
    dashboardById,
    RANK,
  } = M;

  const SORTS = [
    ["order", "dashboard order"],
    ["status", "status (worst first)"],
    ["since", "failing longest first"],
    ["flaky", "flakiest first"],
    ["time", "slowest first"],
    ["name", "name"],
  ];
  const STATUS_FILTERS = [
    ["", "any status"],
    ["attention", "not passing"],
    ["failure", "failure"],
    ["flaky", "flaky"],
    ["skipped", "skipped"],
    ["missing", "missing"],
    ["success", "success"],
  ];

  // ------------------------------------------------------------------ one dashboard

  function jobsOf(doc) {
    if (doc._jobs) return doc._jobs;
    const base = doc.jobs.base;
    doc._jobs = doc.jobs.list.map(function (j) {
      return { run: j[0], attempt: j[1], sha: j[2], time: j[3], url: j[4] === null ? "" : base + j[4] };
    });
    return doc._jobs;
  }

  function cellStatus(doc, cellIndex) {
    return cellIndex < 0 ? "missing" : STATUS[doc.cells[cellIndex].s];
  }

  function cellCounts(cell, status) {
    // Case counts [passed, failed, skipped, flaky, total] when the state has them; else the
    // cell counts as one case.
    if (cell && cell.c) return { failed: cell.c[1], total: cell.c[4], counts: cell.c };
    if (status === "missing") return { failed: 0, total: 0, counts: null };
    return { failed: status === "failure" ? 1 : 0, total: 1, counts: null };
  }

  function flips(cell) {
    let count = 0;
    let last = null;
    for (const letter of cell.h) {
      if (letter === "y") count++;
      if (letter === "k") continue;
      const passing = letter !== "f";
      if (last !== null && passing !== last) count++;
      last = passing;
    }
    return count;
  }

  function rowMatches(doc, row, filters, columns) {
    if (filters.q && !row[0].toLowerCase().includes(filters.q)) return false;
    if (!filters.status && !filters.sig) return true;
    return columns.some(function (i) {
      const cellIndex = row[1 + i];
      const status = cellStatus(doc, cellIndex);
      if (filters.sig && (cellIndex < 0 || doc.cells[cellIndex].m !== filters.sig)) return false;
      if (!filters.status) return true;
      if (filters.status === "attention") return status !== "success";
      return status === filters.status;
    });
  }

  // A row's newest duration on backend i (seconds), or null: the dashboard's rows hold them
  // after their cells when it has any (docs/site.md).
  function seconds(doc, row, i) {
    const value = row[1 + doc.backends.length + i];
    return value === undefined ? null : value;
  }

  // The row's longest newest duration over the backends shown, and that backend's index.
  function longest(doc, row, columns) {
    let best = null;
    let where = -1;
    for (const i of columns) {
      const value = seconds(doc, row, i);
      if (value !== null && (best === null || value > best)) {
        best = value;
        where = i;
      }
    }
    return { seconds: best, backend: where };
  }

  function secondsText(value) {
    if (value < 10) return (Math.round(value * 1000) / 1000) + " s";
    if (value < 60) return value.toFixed(1) + " s";
    const total = Math.round(value);
    const minutes = Math.floor(total / 60);
    if (minutes < 60) return minutes + " min " + (total % 60) + " s";
    return Math.floor(minutes / 60) + " h " + (minutes % 60) + " min";
  }

  function rowKey(doc, row, columns, sort) {
    if (sort === "time") {
      const found = longest(doc, row, columns).seconds;
      return found === null ? -1 : found;
    }
    let best = 0;
    for (const i of columns) {
      const cellIndex = row[1 + i];
      const cell = cellIndex < 0 ? null : doc.cells[cellIndex];
      let value;
      if (sort === "status") value = RANK[cellStatus(doc, cellIndex)];
      else if (sort === "since") value = cell && cell.n ? cell.n : 0;
      else value = cell ? flips(cell) : 0;
      if (value > best) best = value;
    }
    return best;
  }

  function sortedRows(doc, rows, columns, sort) {
    const order = rows.map(function (row, i) { return { row: row, i: i }; });
    if (sort === "name") {
      order.sort(function (a, b) { return a.row[0] < b.row[0] ? -1 : a.row[0] > b.row[0] ? 1 : a.i - b.i; });
    } else if (sort === "status" || sort === "since" || sort === "flaky" || sort === "time") {
      for (const item of order) item.key = rowKey(doc, item.row, columns, sort);
      order.sort(function (a, b) { return b.key - a.key || a.i - b.i; });
    }
    return order.map(function (item) { return item.row; });
  }

  // The strip of a cell's newest results, oldest left: one element, drawn as gradients.
  // Each result is a 6px block with a 1px gap, so the runs can be counted. Colour is not the
  // only mark: a failure is a full-height block, a flaky pass two thirds, a pass a low bar and
  // a skip a thin line, so the strip reads the same in grey or to a colour-blind eye. The
  // colours are the page's own (app.css), light or dark.
  const STRIP = {
    f: { colour: "var(--failure)", height: 10 },
    y: { colour: "var(--flaky)", height: 7 },
    s: { colour: "var(--success)", height: 4 },
    k: { colour: "var(--skipped)", height: 2 },
  };

  function strip(cell) {
    const letters = cell.h.split("").reverse();
    const node = h("span", { class: "strip", "aria-hidden": "true" });
    if (!letters.length) return node;
    const layers = [];
    const sizes = [];
    for (const letter of Object.keys(STRIP)) {
      if (letters.indexOf(letter) < 0) continue;
      const stops = [];
      letters.forEach(function (other, i) {
        const start = i * 7;
        const colour = other === letter ? STRIP[letter].colour : "transparent";
        stops.push(colour + " " + start + "px " + (start + 6) + "px", "transparent " + (start + 6) + "px " + (start + 7) + "px");
      });
      layers.push("linear-gradient(to right," + stops.join(",") + ")");
      sizes.push("100% " + STRIP[letter].height + "px");
    }
    node.style.backgroundImage = layers.join(",");
    node.style.backgroundSize = sizes.join(",");
    node.style.width = (letters.length * 7 - 1) + "px";
    return node;
  }

  function cellLabel(backend, status, cell, counts) {
    const parts = [backend + ": " + status];
    // The visible "44/256" is part of the name, as assistive technology expects.
    if (counts.counts && counts.failed && counts.total > 1) parts.push(counts.failed + "/" + counts.total + " cases failed");
    if (cell && cell.n) parts.push("failing for " + plural(cell.n, "run"));
    if (cell && cell.f) parts.push("flaky");
    return parts.join(", ");
  }

  // One cell of the grid, without its data-test: rows share cells, so each distinct cell of
  // each backend is built once and cloned (see renderGrid).
  function gridCell(doc, cellIndex, backend) {
    const status = cellStatus(doc, cellIndex);
    const cell = cellIndex < 0 ? null : doc.cells[cellIndex];
    const counts = cellCounts(cell, status);
    const td = h("td", {
      class: "cell " + status,
      "data-backend": backend,
      "data-status": status,
      "data-failed": counts.failed,
      "data-total": counts.total,
    });
    if (!cell) {
      td.appendChild(h("span", { class: "sr", text: backend + ": no result" }));
      return td;
    }
    // How much of a parametrized test fails: 44/256 says more than a red mark.
    const label = counts.counts && counts.failed && counts.total > 1 ? counts.failed + "/" + counts.total : "";
    td.appendChild(h("button", {
      type: "button", class: "cell-button", tabindex: "-1",
      "aria-label": cellLabel(backend, status, cell, counts),
    }, h("span", { class: "symbol", "aria-hidden": "true", text: SYMBOL[status] }),
      label ? h("span", { class: "cases", "aria-hidden": "true", text: label }) : null,
      strip(cell)));
    return td;
  }

  function option(value, label, selected) {
    return h("option", { value: value, selected: value === selected }, label);
  }

  function gridControls(doc, filters, update) {
    const sigs = new Map();
    for (const cell of doc.cells) if (cell.m) sigs.set(cell.m, (doc.messages || {})[cell.m] || cell.m);
    function field(id, label, control) {
      return h("div", { class: "field" }, h("label", { for: id, text: label }), control);
    }
    const search = h("input", { id: "f-q", type: "search", value: filters.rawQ, autocomplete: "off" });
    let timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { update({ q: search.value, page: "" }); }, 150);
    });
    function select(id, key, options) {
      const node = h("select", { id: id }, options);
      node.addEventListener("change", function () {
        const change = { page: "" };
        change[key] = node.value;
        update(change);
      });
      return node;
    }
    return h("form", { class: "controls", role: "search", onsubmit: function (e) { e.preventDefault(); } },
      field("f-q", "Test name", search),
      field("f-backend", "Backend", select("f-backend", "backend",
        [option("", "all backends", filters.backend)].concat(doc.backends.map(function (b) { return option(b, shown(b), filters.backend); })))),
      field("f-status", "Status", select("f-status", "status",
        STATUS_FILTERS.map(function (s) { return option(s[0], s[1], filters.status); }))),
      sigs.size ? field("f-sig", "Failure", select("f-sig", "sig",
        [option("", "any failure", filters.sig)].concat(Array.from(sigs.keys()).sort().map(function (s) { return option(s, firstLine(sigs.get(s)).slice(0, 120), filters.sig); })))) : null,
      field("f-sort", "Sort by", select("f-sort", "sort",
        SORTS.map(function (s) { return option(s[0], s[1], filters.sort); }))));
  }

  function readFilters(params, doc) {
    const backend = doc.backends.includes(params.get("backend")) ? params.get("backend") : "";
    const status = STATUS_FILTERS.some(function (s) { return s[0] === params.get("status"); }) ? params.get("status") : "";
    const sort = SORTS.some(function (s) { return s[0] === params.get("sort"); }) ? params.get("sort") : "order";
    const rawQ = params.get("q") || "";
    const page = Math.max(1, parseInt(params.get("page") || "1", 10) || 1);
    return { backend: backend, status: status, sort: sort, rawQ: rawQ, q: rawQ.toLowerCase(), sig: params.get("sig") || "", page: page };
  }

  // The grid on screen: its dashboard and its filters (the URL less the open cell), so that
  // opening or closing a cell's detail does not draw the grid again.
  let onScreen = null;

  function gridView(id, params) {
    const dashboard = dashboardById(id);
    if (!dashboard) throw new Error("no dashboard " + JSON.stringify(id) + " in this site");
    const filters = new URLSearchParams(params);
    filters.delete("test");
    filters.delete("cell");
    const key = id + "?" + filters.toString();
    if (!onScreen || onScreen.key !== key) setStatus("Loading " + dashboard.key + "…");
    return load("d/" + id).then(function (doc) {
      if (!onScreen || onScreen.key !== key || document.body.dataset.view !== "grid") {
        renderGrid(doc, filters);
        onScreen = { key: key };
      }
      const test = params.get("test");
      const backend = params.get("cell");
      if (test !== null && backend) M.openDetail(doc, test, backend);
      else M.closeDetail(false);
    });
  }

  function renderGrid(doc, params) {
    const filters = readFilters(params, doc);
    const path = "/d/" + doc.id;
    function current() {
      return { backend: filters.backend, status: filters.status, sort: filters.sort === "order" ? "" : filters.sort, q: filters.rawQ, sig: filters.sig, page: filters.page > 1 ? filters.page : "" };
    }
    function update(change) {
      const next = Object.assign(current(), change);
      replaceHash(path, next);
      const params = parseHash().params;
      onScreen = { key: doc.id + "?" + params.toString() };
      renderGrid(doc, params);
    }
    const columns = filters.backend ? [doc.backends.indexOf(filters.backend)] : doc.backends.map(function (_, i) { return i; });
    // The time column: each row's longest newest duration over the backends shown.
    const timed = doc.rows.some(function (row) { return row.length > 1 + doc.backends.length; });
    const matching = doc.rows.filter(function (row) { return rowMatches(doc, row, filters, columns); });
    const rows = sortedRows(doc, matching, columns, filters.sort);
    const pages = Math.max(1, Math.ceil(rows.length / GRID_PAGE));
    const page = Math.min(filters.page, pages);
    const slice = rows.slice((page - 1) * GRID_PAGE, page * GRID_PAGE);
    const body = h("tbody");
    const fragment = document.createDocumentFragment();
    const built = new Map();
    for (const row of slice) {
      const tr = document.createElement("tr");
      tr.appendChild(h("th", { scope: "row" }, name(row[0])));
      if (timed) {
        const found = longest(doc, row, columns);
        const label = found.seconds === null ? "" : secondsText(found.seconds);
        tr.appendChild(h("td", {
          class: "time",
          title: found.seconds === null ? "" : doc.backends[found.backend] + ": " + found.seconds + " s",
          text: label,
        }));
      }
      for (const i of columns) {
        const key = row[1 + i] + ":" + i;
        let proto = built.get(key);
        if (!proto) built.set(key, (proto = gridCell(doc, row[1 + i], doc.backends[i])));
        const td = proto.cloneNode(true);
        td.dataset.test = row[0];
        tr.appendChild(td);
      }
      fragment.appendChild(tr);
    }
    body.appendChild(fragment);
    const first = body.querySelector("button");
    if (first) first.tabIndex = 0;
    body.addEventListener("keydown", gridKeys);
    body.addEventListener("click", function (event) {
      const button = event.target.closest("button.cell-button");
      if (!button) return;
      const td = button.parentElement;
      location.hash = makeHash(path, Object.assign(current(), { test: td.dataset.test, cell: td.dataset.backend }));
    });
    const pager = pages > 1 ? h("nav", { class: "pager", "aria-label": "Pages" },
      page > 1 ? h("a", { href: makeHash(path, Object.assign(current(), { page: page - 1 })), text: "← previous" }) : null,
      " page " + page + " of " + pages + " ",
      page < pages ? h("a", { href: makeHash(path, Object.assign(current(), { page: page + 1 })), text: "next →" }) : null) : null;
    const focused = document.activeElement && document.activeElement.id;
    show([
      h("p", { class: "crumbs" }, h("a", { href: "#/summary", text: "Summary" }), " › ", name(doc.key)),
      h("h1", null, name(doc.key)),
      gridControls(doc, filters, update),
      h("p", { class: "count", role: "status", text: "Showing " + slice.length + " of " + plural(rows.length, "matching test") + " (" + doc.rows.length + " in all)" }),
      pager,
      h("div", { class: "scroll" }, h("table", { class: "grid", id: "grid" },
        h("caption", { class: "sr", text: doc.key + ": one row per test, one column per backend; the strip shows the newest results, oldest left" }),
        h("thead", null, h("tr", null, h("th", { scope: "col", text: "Test" }),
          timed ? h("th", { scope: "col", class: "time", text: "Time" }) : null,
          columns.map(function (i) { return h("th", { scope: "col" }, name(doc.backends[i])); }))),
        body)),
    ], doc.key, "grid");
    if (focused && focused.startsWith("f-")) {
      const again = document.getElementById(focused);
      if (again) {
        again.focus();
        if (again.type === "search") again.setSelectionRange(again.value.length, again.value.length);
      }
    }
  }

  // Arrow keys move between the grid's cells (one tab stop for the whole grid).
  function gridKeys(event) {
    const button = event.target.closest("button.cell-button");
    if (!button) return;
    const td = button.parentElement;
    const tr = td.parentElement;
    let target = null;
    const moves = { ArrowRight: 1, ArrowLeft: -1 };
    if (event.key in moves) {
      let next = moves[event.key] > 0 ? td.nextElementSibling : td.previousElementSibling;
      while (next && !next.querySelector("button")) next = moves[event.key] > 0 ? next.nextElementSibling : next.previousElementSibling;
      target = next;
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      let row = event.key === "ArrowDown" ? tr.nextElementSibling : tr.previousElementSibling;
      const column = Array.prototype.indexOf.call(tr.children, td);
      while (row && !(row.children[column] && row.children[column].querySelector("button"))) {
        row = event.key === "ArrowDown" ? row.nextElementSibling : row.previousElementSibling;
      }
      target = row ? row.children[column] : null;
    } else {
      return;
    }
    event.preventDefault();
    const next = target && target.querySelector("button");
    if (next) {
      button.tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
    }
  }

  M.views.grid = gridView;
  Object.assign(M, { jobsOf, cellStatus, cellCounts, secondsText });
})();
