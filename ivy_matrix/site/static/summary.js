/* ivy-matrix static site: the summary: every dashboard × backend, per-backend totals and sparklines. */
"use strict";

(function () {
  const M = window.ivyMatrix;
  const {
    ROW_LIMIT,
    h,
    name,
    shown,
    plural,
    makeHash,
    show,
    dashboardHref,
    percent,
    formatPercent,
    step,
    svg,
    runLabel,
  } = M;

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
    for (const backend of M.index.backends) totals[backend] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    for (const dashboard of M.index.dashboards) {
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

  // The failing tests by how their backends share the failure (grouping.py), as the index
  // page says it: "3 shared failures, 12 jax-only, 1 divergent".
  function kindsLine(kinds) {
    if (!kinds || !kinds.length) return null;
    const said = kinds.map(function (k) {
      const [kind, backends, rows] = k;
      if (kind === "shared") return rows + " shared " + (rows === 1 ? "failure" : "failures");
      if (kind === "backend-specific") return rows + " " + backends.map(shown).join("+") + "-only";
      return rows + " " + shown(kind);
    });
    return h("p", { class: "kinds", text: "Failing tests across backends: " + said.join(", ") + "." });
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
    const trend = M.index.trend || { runs: [], backends: {} };
    const withCases = M.index.backends.some(function (b) { return totals[b][9] > 0; });
    const backendRows = M.index.backends.map(function (backend) {
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
      M.index.backends.map(function (b) { return h("th", { scope: "col" }, name(b)); }));
    const rows = M.index.dashboards.slice(0, ROW_LIMIT).map(function (d) {
      return h(
        "tr", null,
        h("th", { scope: "row" }, h("a", { href: dashboardHref(d.id) }, name(d.key))),
        M.index.backends.map(function (b) {
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
          plural(M.index.dashboards.length, "dashboard") + ", " +
          plural(M.index.dashboards.reduce(function (s, d) { return s + d.rows; }, 0), "test") +
          (newest ? "; newest run " + runLabel({ run: newest[0], sha: newest[1], time: newest[2] }) : "") +
          ". Passing/total per backend by each test's newest result; a pass after reruns counts as passing, skipped tests count in neither."),
        h("h2", { text: "By backend" }),
        h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "Totals by backend" },
          h("table", { class: "totals" },
            h("thead", null, h("tr", null,
              ["Backend", "Passing/total", "Pass rate"].concat(withCases ? ["Failed cases"] : [], ["Last runs"]).map(function (t) { return h("th", { scope: "col", text: t }); }))),
            h("tbody", null, backendRows))),
        parityLine(trend),
        kindsLine(M.index.kinds),
        h("h2", { text: "By dashboard" }),
        h("div", { class: "scroll" },
          h("table", { class: "summary" }, h("thead", null, header), h("tbody", null, rows))),
        M.index.dashboards.length > ROW_LIMIT
          ? h("p", { text: "Showing the first " + ROW_LIMIT + " of " + M.index.dashboards.length + " dashboards." })
          : null,
      ],
      "Summary",
      "summary"
    );
  }

  M.views.summary = summaryView;
})();
