/* ivy-matrix static site: needs attention (cells grouped by why, then by signature) and the failure groups. */
"use strict";

(function () {
  const M = window.ivyMatrix;
  const {
    ROW_LIMIT,
    STATUS,
    SYMBOL,
    h,
    name,
    shown,
    firstLine,
    plural,
    makeHash,
    show,
    dashboardHref,
    load,
    GROUP_PREVIEW,
    GROUP_SAMPLE,
  } = M;

  const GROUPS = [
    ["new", "New failures", "failing in the newest run only"],
    ["failing", "Failing for several runs", "failing in each of the newest runs"],
    ["flaky", "Flaky", "passed only after reruns, or flips between passing and failing"],
    ["fixed", "Fixed recently", "passing now, failed in one of the last 3 runs"],
    ["stale", "Stale", "no result in the newest runs of its backend"],
  ];

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
      if (!entry) rows.set(rowKey, (entry = { dashboard: M.index.dashboards[d], row: row, cells: [] }));
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
              sig ? h("a", { href: makeHash("/groups", { sig: sig }) }, message ? firstLine(message) : "signature " + sig)
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

  // How a signature's tests fail across their backends (grouping.py's kinds).
  const KINDS = {
    shared: "shared: one error on two or more backends, none passing",
    "backend-specific": "backend-specific: its backends' own error",
    divergent: "divergent: no two failing backends agree",
  };

  // The data's ranking of the signatures (most cells, then most backends) and their kinds.
  function signatureInfo(attention) {
    const info = new Map();
    (attention.signatures || []).forEach(function (s, i) { info.set(s.signature, { rank: i, kind: s.kind }); });
    return info;
  }

  // Failing cells by signature: signature -> {backends, tests: Map(key -> {dashboard, row, on})}.
  function failureGroups(items, info) {
    const bySig = new Map();
    for (const [d, row, backend, , letter, , sig] of items) {
      if (letter !== "f") continue;
      const key = sig || "";
      let group = bySig.get(key);
      if (!group) bySig.set(key, (group = { sig: key, backends: new Set(), tests: new Map() }));
      group.backends.add(backend);
      const test = d + "\u0000" + row;
      if (!group.tests.has(test)) group.tests.set(test, { dashboard: M.index.dashboards[d], row: row, on: new Set() });
      group.tests.get(test).on.add(backend);
    }
    const rank = function (g) { const found = info.get(g.sig); return found ? found.rank : Infinity; };
    return Array.from(bySig.values()).sort(function (a, b) {
      return rank(a) - rank(b) || b.tests.size - a.tests.size || (a.sig < b.sig ? -1 : a.sig > b.sig ? 1 : 0);
    });
  }

  function groupTitle(group, messages) {
    const message = messageOf(group.sig, messages);
    if (!group.sig) return "No failure message recorded";
    return message ? firstLine(message) : "Signature " + group.sig;
  }

  function groupTable(group, limit) {
    const backends = M.index.backends.filter(function (b) { return group.backends.has(b); });
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
      const info = signatureInfo(attention);
      const kindOf = function (g) { const found = info.get(g.sig); return found ? found.kind : ""; };
      const groups = failureGroups(attention.items, info).filter(function (g) { return chosen === null || g.sig === chosen; });
      const nodes = [h("h1", { text: "Failure groups" }),
        h("p", { text: "Failing cells grouped by their failure's signature: the message's first line with numbers, addresses, quoted values, paths and backend names taken out." })];
      if (chosen !== null) nodes.push(h("p", null, h("a", { href: "#/groups", text: "All failure groups" })));
      if (!groups.length) nodes.push(h("p", { class: "all-green", text: chosen === null ? "No test fails now." : "No test fails with this signature now." }));
      // The overview first: one line per group; then each group's tests (a sample of each
      // unless one group is chosen).
      if (chosen === null && groups.length) {
        nodes.push(h("table", { class: "groups" },
          h("thead", null, h("tr", null, ["Failure", "Tests", "Backends", "Kind"].map(function (t) { return h("th", { scope: "col", text: t }); }))),
          h("tbody", null, groups.slice(0, ROW_LIMIT / 2).map(function (g) {
            return h("tr", null,
              h("th", { scope: "row", class: "message-cell" }, h("a", { href: makeHash("/groups", { sig: g.sig }) }, groupTitle(g, attention.messages))),
              h("td", { class: "num", text: String(g.tests.size) }),
              h("td", null, M.index.backends.filter(function (b) { return g.backends.has(b); }).map(function (b, i) { return [i ? ", " : "", name(b)]; })),
              h("td", { class: "kind", title: KINDS[kindOf(g)] || null, text: kindOf(g) }));
          }))));
      }
      // The overview table takes at most half the rows; one chosen group, all of them.
      let budget = chosen === null ? ROW_LIMIT / 2 : ROW_LIMIT;
      for (const group of groups) {
        if (budget <= 0) break;
        const limit = Math.min(budget, chosen === null ? GROUP_SAMPLE : ROW_LIMIT);
        budget -= Math.min(limit, group.tests.size);
        nodes.push(h("section", { class: "failure-group" },
          h("h2", null, groupTitle(group, attention.messages)),
          h("p", { class: "count", text: plural(group.tests.size, "test") + " on " + plural(group.backends.size, "backend") + (KINDS[kindOf(group)] ? " · " + KINDS[kindOf(group)] : "") + (group.sig ? " · signature " + group.sig : "") }),
          groupTable(group, limit),
          group.tests.size > limit
            ? h("p", null, "Showing " + limit + " of " + group.tests.size + " tests. ", chosen === null ? h("a", { href: makeHash("/groups", { sig: group.sig }), text: "Show them all" }) : null)
            : null));
      }
      return show(nodes, "Failure groups", "groups");
    });
  }

  M.views.attention = attentionView;
  M.views.groups = groupsView;
})();
