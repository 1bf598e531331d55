/* ivy-matrix static site: the views over the data files in data/ (docs/site.md).
 *
 * No framework and no build step. Data comes as <script src> files that call ivyMatrix.put
 * (fetch() of file:// URLs fails in Chromium). Every name from the data is shown as text
 * (textContent / text nodes), never parsed as HTML; links are only plain http(s) URLs. The
 * view's state lives in the URL (#/d/<id>?backend=jax&status=failure), so any view can be
 * linked and reloaded. At most ROW_LIMIT table rows are in the document at once.
 */
"use strict";

(function () {
  const ROW_LIMIT = 2000; // rows of one grid page, and of the needs-attention view
  const GROUP_PREVIEW = 200; // rows of each attention group before "show all"
  const GROUP_SAMPLE = 20; // tests of each failure group on the page of every group
  const STATUS = { s: "success", f: "failure", y: "flaky", k: "skipped" };
  const SYMBOL = { success: "✓", failure: "✗", flaky: "≈", skipped: "–", missing: "·" };
  // Worst first, for sorting by status.
  const RANK = { failure: 4, flaky: 3, missing: 2, skipped: 1, success: 0 };
  const GROUPS = [
    ["new", "New failures", "failing in the newest run only"],
    ["failing", "Failing for several runs", "failing in each of the newest runs"],
    ["flaky", "Flaky", "passed only after reruns, or flips between passing and failing"],
    ["fixed", "Fixed recently", "passing now, failed in one of the last 3 runs"],
    ["stale", "Stale", "no result in the newest runs of its backend"],
  ];
  const SORTS = [
    ["order", "dashboard order"],
    ["status", "status (worst first)"],
    ["since", "failing longest first"],
    ["flaky", "flakiest first"],
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

  // ------------------------------------------------------------------ data loading

  const loaded = Object.create(null);
  const pending = Object.create(null);
  window.ivyMatrix = {
    put(name, document) {
      loaded[name] = document;
    },
  };

  function load(name) {
    if (loaded[name]) return Promise.resolve(loaded[name]);
    if (!pending[name]) {
      pending[name] = new Promise(function (resolve, reject) {
        const tag = document.createElement("script");
        tag.src = "data/" + name + ".js";
        tag.onload = function () {
          if (loaded[name]) resolve(loaded[name]);
          else reject(new Error("data/" + name + ".js holds no ivy-matrix data"));
        };
        tag.onerror = function () {
          delete pending[name];
          reject(new Error("cannot load data/" + name + ".js"));
        };
        document.head.appendChild(tag);
      });
    }
    return pending[name];
  }

  // ------------------------------------------------------------------ DOM helpers

  // Format and control characters (bidi overrides, zero-width characters) could disguise a
  // name: they are shown as U+FFFD. The data-test attribute keeps the exact name.
  const HIDDEN = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;

  function shown(name) {
    return String(name).replace(HIDDEN, "\uFFFD");
  }

  function h(tag, attributes) {
    const node = document.createElement(tag);
    if (attributes) {
      for (const key of Object.keys(attributes)) {
        const value = attributes[key];
        if (value === null || value === undefined || value === false) continue;
        if (key === "class") node.className = value;
        else if (key === "text") node.textContent = value;
        else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
        else node.setAttribute(key, value === true ? "" : String(value));
      }
    }
    for (let i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }

  function add(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) child.forEach(function (c) { add(node, c); });
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }

  // A name from the data: isolated from the text around it, its hidden characters visible.
  function name(text) {
    return h("bdi", { text: shown(text) });
  }

  function safeUrl(url) {
    return /^https?:\/\/[^\s"'<>`\\]+$/i.test(url) ? url : "";
  }

  function jobLink(job, label) {
    const url = job ? safeUrl(job.url) : "";
    if (!url) return label;
    return h("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, label);
  }

  function svg(tag, attributes) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const key of Object.keys(attributes || {})) node.setAttribute(key, attributes[key]);
    return node;
  }

  function percent(passing, total) {
    return total ? (100 * passing) / total : null;
  }

  function formatPercent(value) {
    if (value === null) return "–";
    return (value === 100 || value === 0 ? value.toFixed(0) : value.toFixed(1)) + "%";
  }

  // Colour steps of a pass rate (app.css draws them).
  function step(value) {
    if (value === null) return "step-none";
    if (value >= 100) return "step-all";
    if (value >= 95) return "step-95";
    if (value >= 80) return "step-80";
    if (value >= 50) return "step-50";
    return "step-low";
  }

  function plural(count, word) {
    return count + " " + word + (count === 1 ? "" : "s");
  }

  function shortSha(sha) {
    return sha ? sha.slice(0, 7) : "";
  }

  function runLabel(job) {
    if (!job) return "an older run";
    const parts = [shortSha(job.sha), job.time ? job.time.slice(0, 10) : ""].filter(Boolean);
    return "run " + job.run + (parts.length ? " (" + parts.join(", ") + ")" : "");
  }

  // ------------------------------------------------------------------ the URL

  function parseHash() {
    let text = location.hash.replace(/^#/, "");
    if (!text.startsWith("/")) text = "/" + text;
    const mark = text.indexOf("?");
    const path = mark < 0 ? text : text.slice(0, mark);
    const params = new URLSearchParams(mark < 0 ? "" : text.slice(mark + 1));
    let decoded = path;
    try {
      decoded = decodeURI(path);
    } catch (error) {
      // A malformed escape in a hand-made link: the path as written (it matches no view).
    }
    return { path: decoded, params: params };
  }

  function makeHash(path, params) {
    const query = new URLSearchParams();
    for (const key of Object.keys(params)) {
      const value = params[key];
      if (value !== null && value !== undefined && value !== "") query.set(key, String(value));
    }
    const text = query.toString();
    return "#" + path + (text ? "?" + text : "");
  }

  // The view's own changes (a filter typed) replace the URL without a new history entry.
  function replaceHash(path, params) {
    history.replaceState(null, "", makeHash(path, params));
  }

  // ------------------------------------------------------------------ page frame

  const view = document.getElementById("view");
  const status = document.getElementById("status");
  let index = null;

  function setStatus(text) {
    status.textContent = text;
    status.hidden = !text;
  }

  function markNav(current) {
    for (const link of document.querySelectorAll("nav a[data-view]")) {
      if (link.dataset.view === current) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
  }

  function show(nodes, title, current) {
    view.replaceChildren.apply(view, nodes.filter(function (node) { return node; }));
    document.title = title + " · Test dashboards";
    markNav(current);
    setStatus("");
    document.body.dataset.view = current;
    // Painted: after the next frame (the benchmark reads this mark).
    requestAnimationFrame(function () {
      setTimeout(function () {
        performance.mark("ivy-painted:" + current);
        document.body.dataset.painted = current;
      }, 0);
    });
  }

  function dashboardById(id) {
    return index.dashboards.find(function (d) { return d.id === id; }) || null;
  }

  function dashboardHref(id, params) {
    return makeHash("/d/" + id, params || {});
  }

  function route() {
    const place = parseHash();
    const path = place.path;
    let work;
    if (path === "/summary") work = summaryView();
    else if (path === "/attention") work = attentionView(place.params);
    else if (path === "/groups") work = groupsView(place.params);
    else if (path.startsWith("/d/")) work = gridView(path.slice(3), place.params);
    else work = index.failing > 0 ? attentionView(place.params) : summaryView();
    return Promise.resolve(work).catch(failed);
  }

  function failed(error) {
    setStatus("");
    view.replaceChildren(
      h("h1", { text: "Cannot show this view" }),
      h("p", { class: "error", text: String(error && error.message ? error.message : error) }),
      h("p", { text: "Open index.html from the site's folder, with data/ beside it." })
    );
  }

  // ------------------------------------------------------------------ summary

  function sparkline(points, label) {
    const width = 120;
    const height = 28;
    const values = points.map(function (p) { return p && p[1] ? p[0] / p[1] : null; });
    const known = values.filter(function (v) { return v !== null; });
    const chart = svg("svg", {
      width: width, height: height, viewBox: "0 0 " + width + " " + height,
      role: "img", class: "spark",
    });
    const title = svg("title", {});
    title.textContent = label;
    chart.appendChild(title);
    if (!known.length) return chart;
    const low = Math.min.apply(null, known);
    const high = Math.max.apply(null, known);
    const span = high - low || 1;
    const stepX = values.length > 1 ? (width - 4) / (values.length - 1) : 0;
    let line = [];
    function flush() {
      if (line.length === 1) {
        const [x, y] = line[0].split(",");
        chart.appendChild(svg("circle", { cx: x, cy: y, r: 1.5, class: "spark-line" }));
      } else if (line.length) {
        chart.appendChild(svg("polyline", { points: line.join(" "), class: "spark-line" }));
      }
      line = [];
    }
    values.forEach(function (value, i) {
      if (value === null) return flush();
      const x = 2 + i * stepX;
      const y = height - 3 - ((value - low) / span) * (height - 6);
      line.push(x.toFixed(1) + "," + y.toFixed(1));
    });
    flush();
    return chart;
  }

  // Per backend, the index's column counts added up over every dashboard.
  function backendTotals() {
    const totals = {};
    for (const backend of index.backends) totals[backend] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    for (const dashboard of index.dashboards) {
      for (const backend of Object.keys(dashboard.b)) {
        const counts = dashboard.b[backend];
        for (let i = 0; i < counts.length; i++) totals[backend][i] += counts[i];
      }
    }
    return totals;
  }

  function parityLine(trend) {
    const parity = trend.parity || [];
    const last = parity[parity.length - 1];
    if (!last || !last[1]) return null;
    const only = Object.keys(trend.fails_only || {}).filter(function (b) { return trend.fails_only[b]; });
    return h("p", { class: "parity" },
      "Newest run: " + last[0] + " of " + plural(last[1], "test") + " that ran on every backend passed on all of them (" +
      formatPercent(percent(last[0], last[1])) + ")" +
      (only.length ? "; failing on one backend only: " + only.map(function (b) { return shown(b) + " " + trend.fails_only[b]; }).join(", ") : "") + ". ",
      sparkline(parity.map(function (p) { return p[1] ? p : null; }), "share of tests green on every backend over the last " + plural(parity.length, "run")));
  }

  function delta(now, before) {
    const change = now - before;
    if (!change) return null;
    const text = (change > 0 ? "+" : "−") + Math.abs(change);
    return h("span", {
      class: change > 0 ? "delta up" : "delta down",
      title: "passing since the previous run: " + text,
      text: text,
    });
  }

  function countsCell(counts, href, label) {
    if (!counts) return h("td", { class: "step-none" }, h("span", { class: "sr", text: "no tests" }));
    const value = percent(counts[0], counts[1]);
    return h(
      "td",
      { class: "counts " + step(value), "data-passing": counts[0], "data-total": counts[1] },
      h("a", { href: href }, counts[0] + "/" + counts[1], h("span", { class: "sr", text: " passing: " + label })),
      delta(counts[0], counts[2])
    );
  }

  function summaryView() {
    const totals = backendTotals();
    const trend = index.trend || { runs: [], backends: {} };
    const withCases = index.backends.some(function (b) { return totals[b][9] > 0; });
    const backendRows = index.backends.map(function (backend) {
      const t = totals[backend];
      const points = trend.backends[backend] || [];
      const rate = formatPercent(percent(t[0], t[1]));
      return h(
        "tr", null,
        h("th", { scope: "row" }, name(backend)),
        countsCell(t, makeHash("/attention", {}), backend),
        h("td", { class: "num", text: rate }),
        withCases ? h("td", { class: "num", text: t[8] + " of " + t[9] }) : null,
        h("td", null, sparkline(points, backend + " pass rate over the last " + plural(points.length, "run")))
      );
    });
    const header = h("tr", null, h("th", { scope: "col", text: "Dashboard" }),
      index.backends.map(function (b) { return h("th", { scope: "col" }, name(b)); }));
    const rows = index.dashboards.slice(0, ROW_LIMIT).map(function (d) {
      return h(
        "tr", null,
        h("th", { scope: "row" }, h("a", { href: dashboardHref(d.id) }, name(d.key))),
        index.backends.map(function (b) {
          return countsCell(d.b[b], dashboardHref(d.id, { backend: b }), d.key + " on " + b);
        })
      );
    });
    const runs = trend.runs || [];
    const newest = runs.length ? runs[runs.length - 1] : null;
    return show(
      [
        h("h1", { text: "Summary" }),
        h("p", null,
          plural(index.dashboards.length, "dashboard") + ", " +
          plural(index.dashboards.reduce(function (s, d) { return s + d.rows; }, 0), "test") +
          (newest ? "; newest run " + runLabel({ run: newest[0], sha: newest[1], time: newest[2] }) : "") +
          ". Passing/total per backend by each test's newest result; a pass after reruns counts as passing, skipped tests count in neither."),
        h("h2", { text: "By backend" }),
        h("table", { class: "totals" },
          h("thead", null, h("tr", null,
            ["Backend", "Passing/total", "Pass rate"].concat(withCases ? ["Failed cases"] : [], ["Last runs"]).map(function (t) { return h("th", { scope: "col", text: t }); }))),
          h("tbody", null, backendRows)),
        parityLine(trend),
        h("h2", { text: "By dashboard" }),
        h("div", { class: "scroll" },
          h("table", { class: "summary" }, h("thead", null, header), h("tbody", null, rows))),
        index.dashboards.length > ROW_LIMIT
          ? h("p", { text: "Showing the first " + ROW_LIMIT + " of " + index.dashboards.length + " dashboards." })
          : null,
      ],
      "Summary",
      "summary"
    );
  }

  // ------------------------------------------------------------------ needs attention

  // Attention items, grouped: group -> signature -> [{dashboard, row, backends: [...]}].
  function attentionGroups(items) {
    const groups = {};
    for (const item of items) {
      const [d, row, backend, group, letter, runs, sig] = item;
      const bySig = (groups[group] = groups[group] || new Map());
      const key = sig || "";
      let rows = bySig.get(key);
      if (!rows) bySig.set(key, (rows = new Map()));
      const rowKey = d + "\u0000" + row;
      let entry = rows.get(rowKey);
      if (!entry) rows.set(rowKey, (entry = { dashboard: index.dashboards[d], row: row, cells: [] }));
      entry.cells.push({ backend: backend, status: STATUS[letter], runs: runs });
    }
    return groups;
  }

  function cellLinks(entry) {
    return entry.cells.map(function (cell, i) {
      const href = dashboardHref(entry.dashboard.id, { test: entry.row, cell: cell.backend });
      const runs = cell.runs > 1 ? " (" + cell.runs + " runs)" : "";
      return [i ? ", " : "", h("a", { href: href, class: "cell-link " + cell.status },
        SYMBOL[cell.status] + " ", name(cell.backend), runs)];
    });
  }

  function attentionTable(entries) {
    return h("table", { class: "attention" },
      h("thead", null, h("tr", null,
        ["Dashboard", "Test", "Backends"].map(function (t) { return h("th", { scope: "col", text: t }); }))),
      h("tbody", null, entries.map(function (entry) {
        return h("tr", null,
          h("td", null, h("a", { href: dashboardHref(entry.dashboard.id) }, name(entry.dashboard.key))),
          h("th", { scope: "row" }, name(entry.row)),
          h("td", null, cellLinks(entry)));
      })));
  }

  function messageOf(sig, messages) {
    return sig && messages ? messages[sig] : "";
  }

  function attentionView(params) {
    return load("attention").then(function (attention) {
      const only = params.get("group") || "";
      const groups = attentionGroups(attention.items);
      const nodes = [h("h1", { text: "Needs attention" })];
      nodes.push(h("ul", { class: "group-counts" }, GROUPS.map(function (g) {
        const bySig = groups[g[0]];
        const count = bySig ? Array.from(bySig.values()).reduce(function (s, rows) { return s + rows.size; }, 0) : 0;
        return h("li", null, h("a", { href: makeHash("/attention", { group: g[0] }),
          "aria-current": only === g[0] ? "true" : null }, g[1] + ": " + plural(count, "test")));
      })));
      if (!attention.items.length) {
        nodes.push(h("p", { class: "all-green", text: "Nothing needs attention: every test passes on every backend." }));
      }
      let budget = ROW_LIMIT;
      for (const [key, title, help] of GROUPS) {
        if (only && key !== only) continue;
        const bySig = groups[key];
        if (!bySig) continue;
        const total = Array.from(bySig.values()).reduce(function (s, rows) { return s + rows.size; }, 0);
        const section = h("section", { "aria-labelledby": "group-" + key },
          h("h2", { id: "group-" + key }, title + " ", h("span", { class: "count", text: "(" + plural(total, "test") + ")" })),
          h("p", { class: "help", text: help }));
        const cap = Math.min(budget, only ? ROW_LIMIT : GROUP_PREVIEW);
        let shownRows = 0;
        const sigs = Array.from(bySig.keys()).sort(function (a, b) {
          return bySig.get(b).size - bySig.get(a).size || (a < b ? -1 : a > b ? 1 : 0);
        });
        for (const sig of sigs) {
          if (shownRows >= cap) break;
          const entries = Array.from(bySig.get(sig).values()).slice(0, cap - shownRows);
          shownRows += entries.length;
          const message = messageOf(sig, attention.messages);
          if (sig || sigs.length > 1) {
            section.appendChild(h("h3", { class: "signature" },
              sig ? h("a", { href: makeHash("/groups", { sig: sig }) }, message ? shown(message) : "signature " + sig)
                : "No failure message recorded",
              " ", h("span", { class: "count", text: "(" + plural(bySig.get(sig).size, "test") + ")" })));
          }
          section.appendChild(attentionTable(entries));
        }
        if (shownRows < total) {
          section.appendChild(h("p", null, "Showing " + shownRows + " of " + total + ". ",
            only ? "" : h("a", { href: makeHash("/attention", { group: key }), text: "Show this group alone" })));
        }
        budget -= shownRows;
        nodes.push(section);
      }
      return show(nodes, "Needs attention", "attention");
    });
  }

  // ------------------------------------------------------------------ failure groups

  // Failing cells by signature: signature -> {backends, tests: Map(key -> {dashboard, row, on})}.
  function failureGroups(items) {
    const bySig = new Map();
    for (const [d, row, backend, , letter, , sig] of items) {
      if (letter !== "f") continue;
      const key = sig || "";
      let group = bySig.get(key);
      if (!group) bySig.set(key, (group = { sig: key, backends: new Set(), tests: new Map() }));
      group.backends.add(backend);
      const test = d + "\u0000" + row;
      if (!group.tests.has(test)) group.tests.set(test, { dashboard: index.dashboards[d], row: row, on: new Set() });
      group.tests.get(test).on.add(backend);
    }
    return Array.from(bySig.values()).sort(function (a, b) {
      return b.tests.size - a.tests.size || (a.sig < b.sig ? -1 : a.sig > b.sig ? 1 : 0);
    });
  }

  function groupTitle(group, messages) {
    const message = messageOf(group.sig, messages);
    if (!group.sig) return "No failure message recorded";
    return message ? shown(message) : "Signature " + group.sig;
  }

  function groupTable(group, limit) {
    const backends = index.backends.filter(function (b) { return group.backends.has(b); });
    const tests = Array.from(group.tests.values()).slice(0, limit);
    return h("div", { class: "scroll" }, h("table", { class: "grid small" },
      h("thead", null, h("tr", null, h("th", { scope: "col", text: "Test" }),
        backends.map(function (b) { return h("th", { scope: "col" }, name(b)); }))),
      h("tbody", null, tests.map(function (t) {
        return h("tr", null,
          h("th", { scope: "row" }, h("a", { href: dashboardHref(t.dashboard.id) }, name(t.dashboard.key)), " · ", name(t.row)),
          backends.map(function (b) {
            return t.on.has(b)
              ? h("td", { class: "failure" }, h("a", { href: dashboardHref(t.dashboard.id, { test: t.row, cell: b }), "aria-label": "failure on " + b }, SYMBOL.failure))
              : h("td", null);
          }));
      }))));
  }

  function groupsView(params) {
    return load("attention").then(function (attention) {
      const chosen = params.get("sig");
      const groups = failureGroups(attention.items).filter(function (g) { return chosen === null || g.sig === chosen; });
      const nodes = [h("h1", { text: "Failure groups" }),
        h("p", { text: "Failing cells grouped by their failure's signature: the message's first line with numbers, addresses, quoted values, paths and backend names taken out." })];
      if (chosen !== null) nodes.push(h("p", null, h("a", { href: "#/groups", text: "All failure groups" })));
      if (!groups.length) nodes.push(h("p", { class: "all-green", text: chosen === null ? "No test fails now." : "No test fails with this signature now." }));
      // The overview first: one line per group; then each group's tests (a sample of each
      // unless one group is chosen).
      if (chosen === null && groups.length) {
        nodes.push(h("table", { class: "groups" },
          h("thead", null, h("tr", null, ["Failure", "Tests", "Backends"].map(function (t) { return h("th", { scope: "col", text: t }); }))),
          h("tbody", null, groups.slice(0, ROW_LIMIT / 2).map(function (g) {
            return h("tr", null,
              h("th", { scope: "row", class: "message-cell" }, h("a", { href: makeHash("/groups", { sig: g.sig }) }, groupTitle(g, attention.messages))),
              h("td", { class: "num", text: String(g.tests.size) }),
              h("td", null, index.backends.filter(function (b) { return g.backends.has(b); }).map(function (b, i) { return [i ? ", " : "", name(b)]; })));
          }))));
      }
      let budget = ROW_LIMIT / 2;
      for (const group of groups) {
        if (budget <= 0) break;
        const limit = Math.min(budget, chosen === null ? GROUP_SAMPLE : ROW_LIMIT);
        budget -= Math.min(limit, group.tests.size);
        nodes.push(h("section", { class: "failure-group" },
          h("h2", null, groupTitle(group, attention.messages)),
          h("p", { class: "count", text: plural(group.tests.size, "test") + " on " + plural(group.backends.size, "backend") + (group.sig ? " · signature " + group.sig : "") }),
          groupTable(group, limit),
          group.tests.size > limit
            ? h("p", null, "Showing " + limit + " of " + group.tests.size + " tests. ", chosen === null ? h("a", { href: makeHash("/groups", { sig: group.sig }), text: "Show them all" }) : null)
            : null));
      }
      return show(nodes, "Failure groups", "groups");
    });
  }

  // ------------------------------------------------------------------ one dashboard

  function jobsOf(doc) {
    if (doc._jobs) return doc._jobs;
    const base = doc.jobs.base;
    doc._jobs = doc.jobs.list.map(function (j) {
      return { run: j[0], attempt: j[1], sha: j[2], time: j[3], url: j[4] === null ? "" : base + j[4] };
    });
    return doc._jobs;
  }

  function cellStatus(doc, index) {
    return index < 0 ? "missing" : STATUS[doc.cells[index].s];
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

  function rowKey(doc, row, columns, sort) {
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
    } else if (sort === "status" || sort === "since" || sort === "flaky") {
      for (const item of order) item.key = rowKey(doc, item.row, columns, sort);
      order.sort(function (a, b) { return b.key - a.key || a.i - b.i; });
    }
    return order.map(function (item) { return item.row; });
  }

  // The strip of a cell's newest results, oldest left: one element, drawn as a gradient.
  const STRIP_COLOURS = { s: "#1a7f37", f: "#cf222e", y: "#bf8700", k: "#8c959f" };

  // Each result is a 6px block with a 1px gap, so the runs can be counted.
  function strip(cell) {
    const letters = cell.h.split("").reverse();
    const node = h("span", { class: "strip", "aria-hidden": "true" });
    if (!letters.length) return node;
    const stops = [];
    letters.forEach(function (letter, i) {
      const start = i * 7;
      stops.push(STRIP_COLOURS[letter] + " " + start + "px " + (start + 6) + "px");
      if (i < letters.length - 1) stops.push("transparent " + (start + 6) + "px " + (start + 7) + "px");
    });
    node.style.backgroundImage = "linear-gradient(to right," + stops.join(",") + ")";
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
        [option("", "any failure", filters.sig)].concat(Array.from(sigs.keys()).sort().map(function (s) { return option(s, shown(sigs.get(s)).slice(0, 120), filters.sig); })))) : null,
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
      if (test !== null && backend) openDetail(doc, test, backend);
      else closeDetail(false);
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
    const matching = doc.rows.filter(function (row) { return rowMatches(doc, row, filters, columns); });
    const rows = sortedRows(doc, matching, columns, filters.sort);
    const pages = Math.max(1, Math.ceil(rows.length / ROW_LIMIT));
    const page = Math.min(filters.page, pages);
    const slice = rows.slice((page - 1) * ROW_LIMIT, page * ROW_LIMIT);
    const body = h("tbody");
    const fragment = document.createDocumentFragment();
    const built = new Map();
    for (const row of slice) {
      const tr = document.createElement("tr");
      tr.appendChild(h("th", { scope: "row" }, name(row[0])));
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
      if (facts.length) nodes.push(h("p", { class: "since", text: facts.join("; ") }));
      if (counts.counts) {
        const c = counts.counts;
        nodes.push(h("p", { class: "cases-line", text: c[1] + " of " + c[4] + " cases failed, " + c[0] + " passed, " + c[2] + " skipped" + (c[3] ? ", " + c[3] + " flaky" : "") }));
      }
      const message = cell.m ? (doc.messages || {})[cell.m] : "";
      const own = cell.e || message;
      if (own) nodes.push(h("h3", { text: "Failure" }), h("pre", { class: "message", text: shown(own) }));
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
          same.length ? ["Also on ", same.map(function (b, i) { return [i ? ", " : "", h("a", { href: dashboardHref(doc.id, { test: test, cell: b }) }, name(b))]; })] : "On no other backend of this test. ",
          " ", h("a", { href: makeHash("/groups", { sig: cell.m }), text: "Every test with this failure" })));
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

  // ------------------------------------------------------------------ start

  window.addEventListener("hashchange", route);
  load("index")
    .then(function (data) {
      index = data;
      return route();
    })
    .catch(failed);
})();
