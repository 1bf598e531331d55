/* ivy-matrix static site: each backend's slowest tests, and the tests that got slower, and why. */
"use strict";

(function () {
  const M = window.ivyMatrix;
  const { h, name, shown, makeHash, show, dashboardHref, load, setStatus } = M;

  function secondsText(value) {
    return M.secondsText(value);
  }

  function testLink(dashboard, row, backend) {
    return h("a", { href: dashboardHref(dashboard.id, { test: row, cell: backend }) }, name(row));
  }

  function slowestTable(doc, backend) {
    const cells = doc.backends[backend] || [];
    return h("table", { class: "slowest", id: "slowest" },
      h("caption", { class: "sr", text: "The slowest tests on " + backend + ", longest first" }),
      h("thead", null, h("tr", null,
        h("th", { scope: "col", text: "#" }),
        h("th", { scope: "col", text: "Test" }),
        h("th", { scope: "col", text: "Dashboard" }),
        h("th", { scope: "col", class: "time", text: "Time" }))),
      h("tbody", null, cells.map(function (cell, i) {
        const dashboard = M.index.dashboards[cell[0]];
        return h("tr", { "data-test": cell[1], "data-seconds": cell[2] },
          h("td", { text: String(i + 1) }),
          h("th", { scope: "row" }, testLink(dashboard, cell[1], backend)),
          h("td", null, h("a", { href: dashboardHref(dashboard.id, { backend: backend, sort: "time" }) }, name(dashboard.key))),
          h("td", { class: "time", text: secondsText(cell[2]) }));
      })));
  }

  function why(item) {
    const parts = [];
    if (item[7]) parts.push(h("strong", { text: item[7] }));
    if (item[8]) parts.push(h("a", { href: item[8], rel: "noopener noreferrer", target: "_blank", text: "compare" }));
    for (const change of item[9]) {
      parts.push(h("span", null, name(change[0]), " " + shown(change[1] || "-") + " → " + shown(change[2] || "-")));
    }
    return parts.map(function (part, i) { return [i ? ", " : "", part]; });
  }

  function slowerTable(items) {
    return h("table", { class: "slower", id: "slower" },
      h("caption", { class: "sr", text: "Tests at least 2 times and 5 s longer than their median of their last runs" }),
      h("thead", null, h("tr", null,
        h("th", { scope: "col", text: "Test" }),
        h("th", { scope: "col", text: "Backend" }),
        h("th", { scope: "col", class: "time", text: "Time" }),
        h("th", { scope: "col", class: "time", text: "Median" }),
        h("th", { scope: "col", text: "Since" }),
        h("th", { scope: "col", text: "Why" }))),
      h("tbody", null, items.map(function (item) {
        const dashboard = M.index.dashboards[item[0]];
        return h("tr", { "data-test": item[1], "data-backend": item[2] },
          h("th", { scope: "row" }, testLink(dashboard, item[1], item[2])),
          h("td", null, name(item[2])),
          h("td", { class: "time", text: secondsText(item[3]) }),
          h("td", { class: "time", text: secondsText(item[4]) + " of " + item[5] + " runs" }),
          h("td", { text: "run " + item[6] }),
          h("td", null, why(item)));
      })));
  }

  function slowestView(params) {
    setStatus("Loading the slowest tests…");
    return load("slowest").then(function (doc) {
      const backends = Object.keys(doc.backends);
      const asked = params.get("backend");
      const backend = backends.includes(asked) ? asked : backends[0] || "";
      const nodes = [h("h1", { text: "Slowest tests" })];
      if (!backends.length) {
        nodes.push(h("p", { text: "No result has a duration: the result files give no time for their test cases." }));
        return show(nodes, "Slowest tests", "slowest");
      }
      nodes.push(h("nav", { class: "backends", "aria-label": "Backends" },
        backends.map(function (b, i) {
          const current = b === backend;
          return [i ? " · " : "", h("a", { href: makeHash("/slowest", { backend: b }), "aria-current": current ? "page" : null }, name(b))];
        })));
      nodes.push(h("h2", { id: "slowest-backend" }, "The slowest on ", name(backend)));
      nodes.push(h("div", { class: "scroll" }, slowestTable(doc, backend)));
      if (doc.slower.length) {
        nodes.push(h("h2", { id: "slower-tests", text: "Slower" }));
        nodes.push(h("p", { text: "At least 2 times and 5 s longer than the median of their last 10 runs, since the run named, and what changed then." }));
        nodes.push(h("div", { class: "scroll" }, slowerTable(doc.slower)));
      }
      show(nodes, "Slowest tests", "slowest");
    });
  }

  M.views.slowest = slowestView;
})();
