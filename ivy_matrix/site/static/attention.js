/* ivy-matrix static site: needs attention (cells grouped by why, then by signature) and the failure groups. */
"use strict";

(function () {
  const M = window.ivyMatrix;
  const { STATUS, SYMBOL, h, name, firstLine, plural, makeHash, show, dashboardHref, load } = M;

  const GROUPS = [
    ["new", "New failures", "failing in the newest run only"],
    ["failing", "Failing for several runs", "failing in each of the newest runs"],
    ["flaky", "Flaky", "passed only after reruns, or flips between passing and failing"],
    ["fixed", "Fixed recently", "passing now, failed in one of the last 3 runs"],
    ["stale", "Stale", "no result in the newest runs of its backend"],
  ];

  // ------------------------------------------------------------------ needs attention

  // A listed test of the data ([dashboard number, test, [[backend, letter, runs], ...]]).
  function entryOf(listed) {
    return {
      dashboard: M.index.dashboards[listed[0]],
      row: listed[1],
      cells: listed[2].map(function (c) { return { backend: c[0], status: STATUS[c[1]], runs: c[2] }; }),
    };
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

  // The landing view loads the first tests of each group (data/attention.js), one group
  // alone its own file (data/attention/<group>.js): each holds what the view shows.
  function attentionView(params) {
    const asked = params.get("group") || "";
    const only = GROUPS.some(function (g) { return g[0] === asked; }) ? asked : "";
    return load(only ? "attention/" + only : "attention").then(function (attention) {
      const counts = attention.counts;
      const nodes = [h("h1", { text: "Needs attention" })];
      nodes.push(h("ul", { class: "group-counts" }, GROUPS.map(function (g) {
        return h("li", null, h("a", { href: makeHash("/attention", { group: g[0] }),
          "aria-current": only === g[0] ? "true" : null }, g[1] + ": " + plural(counts[g[0]][0], "test")));
      })));
      if (!GROUPS.some(function (g) { return counts[g[0]][0] > 0; })) {
        nodes.push(h("p", { class: "all-green", text: "Nothing needs attention: every test passes on every backend." }));
      }
      for (const [key, title, help] of GROUPS) {
        const listed = attention.groups[key];
        if (!listed || !listed.length) continue;
        const [total, signatures] = counts[key];
        const section = h("section", { "aria-labelledby": "group-" + key },
          h("h2", { id: "group-" + key }, title + " ", h("span", { class: "count", text: "(" + plural(total, "test") + ")" })),
          h("p", { class: "help", text: help }));
        let shownRows = 0;
        for (const [sig, tests, rows] of listed) {
          shownRows += rows.length;
          const message = messageOf(sig, attention.messages);
          if (sig || signatures > 1) {
            section.appendChild(h("h3", { class: "signature" },
              sig ? h("a", { href: makeHash("/groups", { sig: sig }) }, message ? firstLine(message) : "signature " + sig)
                : "No failure message recorded",
              " ", h("span", { class: "count", text: "(" + plural(tests, "test") + ")" })));
          }
          section.appendChild(attentionTable(rows.map(entryOf)));
        }
        if (shownRows < total) {
          section.appendChild(h("p", null, "Showing " + shownRows + " of " + total + ". ",
            only ? "" : h("a", { href: makeHash("/attention", { group: key }), text: "Show this group alone" })));
        }
        nodes.push(section);
      }
      return show(nodes, "Needs attention", "attention");
    });
  }

  // ------------------------------------------------------------------ failure groups

  // How a signature's tests fail across their backends (grouping.py's kinds).
  const KINDS = {
    shared: "shared: one error on two or more backends, none passing",
    "backend-specific": "backend-specific: its backends' own error",
    divergent: "divergent: no two failing backends agree",
  };

  // The file that holds one signature's group (overview.py's shard_of).
  function shardOf(sig) {
    const first = sig.slice(0, 1);
    return first && "0123456789abcdef".includes(first) ? first : "0";
  }

  // A group of the data: [signature, line, tests, backends, kind, [[dashboard, test, backends]]].
  function groupOf(listed) {
    return {
      sig: listed[0],
      message: listed[1],
      tests: listed[2],
      backends: new Set(listed[3]),
      kind: listed[4],
      sample: listed[5].map(function (t) { return { dashboard: M.index.dashboards[t[0]], row: t[1], on: new Set(t[2]) }; }),
    };
  }

  function groupTitle(group) {
    if (!group.sig) return "No failure message recorded";
    return group.message ? firstLine(group.message) : "Signature " + group.sig;
  }

  function groupTable(group) {
    const backends = M.index.backends.filter(function (b) { return group.backends.has(b); });
    return h("div", { class: "scroll" }, h("table", { class: "grid small" },
      h("thead", null, h("tr", null, h("th", { scope: "col", text: "Test" }),
        backends.map(function (b) { return h("th", { scope: "col" }, name(b)); }))),
      h("tbody", null, group.sample.map(function (t) {
        return h("tr", null,
          h("th", { scope: "row" }, h("a", { href: dashboardHref(t.dashboard.id) }, name(t.dashboard.key)), " · ", name(t.row)),
          backends.map(function (b) {
            return t.on.has(b)
              ? h("td", { class: "failure" }, h("a", { href: dashboardHref(t.dashboard.id, { test: t.row, cell: b }), "aria-label": "failure on " + b }, SYMBOL.failure))
              : h("td", null);
          }));
      }))));
  }

  // Every group loads data/groups.js (each signature's line and a sample of its tests); one
  // group alone, the file of its signature's first digit (data/groups/<h>.js).
  function groupsView(params) {
    const chosen = params.get("sig");
    return load(chosen === null ? "groups" : "groups/" + shardOf(chosen)).then(function (doc) {
      const groups = doc.groups.map(groupOf).filter(function (g) { return chosen === null || g.sig === chosen; });
      const nodes = [h("h1", { text: "Failure groups" }),
        h("p", { text: "Failing cells grouped by their failure's signature: the message's first line with numbers, addresses, quoted values, paths and backend names taken out." })];
      if (chosen !== null) nodes.push(h("p", null, h("a", { href: "#/groups", text: "All failure groups" })));
      if (!groups.length) nodes.push(h("p", { class: "all-green", text: chosen === null ? "No test fails now." : "No test fails with this signature now." }));
      // The overview first: one line per group; then each group's tests (a sample of each
      // unless one group is chosen).
      if (chosen === null && groups.length) {
        nodes.push(h("table", { class: "groups" },
          h("thead", null, h("tr", null, ["Failure", "Tests", "Backends", "Kind"].map(function (t) { return h("th", { scope: "col", text: t }); }))),
          h("tbody", null, groups.map(function (g) {
            return h("tr", null,
              h("th", { scope: "row", class: "message-cell" }, h("a", { href: makeHash("/groups", { sig: g.sig }) }, groupTitle(g))),
              h("td", { class: "num", text: String(g.tests) }),
              h("td", null, M.index.backends.filter(function (b) { return g.backends.has(b); }).map(function (b, i) { return [i ? ", " : "", name(b)]; })),
              h("td", { class: "kind", title: KINDS[g.kind] || null, text: g.kind }));
          }))));
      }
      for (const group of groups) {
        if (!group.sample.length) break; // the rows of the page are spent
        const limit = group.sample.length;
        nodes.push(h("section", { class: "failure-group" },
          h("h2", null, groupTitle(group)),
          h("p", { class: "count", text: plural(group.tests, "test") + " on " + plural(group.backends.size, "backend") + (KINDS[group.kind] ? " · " + KINDS[group.kind] : "") + (group.sig ? " · signature " + group.sig : "") }),
          groupTable(group),
          group.tests > limit
            ? h("p", null, "Showing " + limit + " of " + group.tests + " tests. ", chosen === null ? h("a", { href: makeHash("/groups", { sig: group.sig }), text: "Show them all" }) : null)
            : null));
      }
      return show(nodes, "Failure groups", "groups");
    });
  }

  M.views.attention = attentionView;
  M.views.groups = groupsView;
})();
