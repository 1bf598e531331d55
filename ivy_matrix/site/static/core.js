/* ivy-matrix static site: the shared part of the views over the data files in data/
 * (docs/site.md). The other scripts (summary.js, attention.js, grid.js, detail.js, main.js)
 * add their views to window.ivyMatrix.
 *
 * No framework and no build step. Data comes as <script src> files that call ivyMatrix.put
 * (fetch() of file:// URLs fails in Chromium). Every name from the data is shown as text
 * (textContent / text nodes), never parsed as HTML; links are only plain http(s) URLs. The
 * view's state lives in the URL (#/d/<id>?backend=jax&status=failure), so any view can be
 * linked and reloaded. At most ROW_LIMIT table rows are in the document at once.
 */
"use strict";

(function () {
  const M = (window.ivyMatrix = {});

  // Table rows of a view at most (the cross-dashboard views' files hold no more than they
  // show: overview.py's limits), and of one page of a grid: a grid row costs the browser
  // most (4 backends: ~0.2 ms of style and layout each), and 1,000 paint in half the time
  // of 2,000 (bench/README.md).
  const ROW_LIMIT = 2000;
  const GRID_PAGE = 1000;
  const STATUS = { s: "success", f: "failure", y: "flaky", k: "skipped" };
  const SYMBOL = { success: "✓", failure: "✗", flaky: "≈", skipped: "–", missing: "·" };
  // Worst first, for sorting by status.
  const RANK = { failure: 4, flaky: 3, missing: 2, skipped: 1, success: 0 };
  // ------------------------------------------------------------------ data loading

  const loaded = Object.create(null);
  const pending = Object.create(null);
  // The data files call ivyMatrix.put(name, document): this is all they need of the page.
  M.put = function (name, document) {
    loaded[name] = document;
  };

  function load(name) {
    if (loaded[name]) return Promise.resolve(loaded[name]);
    if (!pending[name]) {
      pending[name] = new Promise(function (resolve, reject) {
        const tag = document.createElement("script");
        tag.src = "data/" + name + ".js";
        tag.onload = function () {
          performance.mark("ivy-loaded:" + name);
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

  // A failure message keeps its line breaks (a <pre> shows them); its other hidden
  // characters are shown as names' are.
  const LINE_BREAK = /\r\n|[\r\n\u2028\u2029]/;
  function shownMessage(text) {
    return String(text).split(LINE_BREAK).map(shown).join("\n");
  }

  // A message where one line fits (a heading, a table cell, a link): its first line, with
  // an ellipsis when more lines follow.
  function firstLine(text) {
    const lines = String(text).split(LINE_BREAK);
    return shown(lines[0]) + (lines.length > 1 && lines.slice(1).join("").trim() ? " …" : "");
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
    // Drawn (the document holds the view), then painted after the next frame: the benchmark
    // reads both marks.
    performance.mark("ivy-drawn:" + current);
    requestAnimationFrame(function () {
      setTimeout(function () {
        performance.mark("ivy-painted:" + current);
        document.body.dataset.painted = current;
      }, 0);
    });
  }

  function dashboardById(id) {
    return M.index.dashboards.find(function (d) { return d.id === id; }) || null;
  }

  function dashboardHref(id, params) {
    return makeHash("/d/" + id, params || {});
  }

  function failed(error) {
    setStatus("");
    view.replaceChildren(
      h("h1", { text: "Cannot show this view" }),
      h("p", { class: "error", text: String(error && error.message ? error.message : error) }),
      h("p", { text: "Open index.html from the site's folder, with data/ beside it." })
    );
  }

  Object.assign(M, {
    ROW_LIMIT, GRID_PAGE, STATUS, SYMBOL, RANK,
    load, shown, shownMessage, firstLine, h, name, safeUrl, shortSha, jobLink, svg, percent, formatPercent, step, plural, runLabel,
    parseHash, makeHash, replaceHash, setStatus, show, dashboardById, dashboardHref, failed,
    index: null, // data/index.js, once loaded (main.js)
    views: {},
  });
})();
