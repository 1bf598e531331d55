/* ivy-matrix static site: routing: the view the URL names, drawn once the index is loaded. */
"use strict";

(function () {
  const M = window.ivyMatrix;
  const { failed, load, parseHash } = M;

  function route() {
    const place = parseHash();
    // Not painted until the view this URL names is (show() sets it a frame after drawing).
    document.body.dataset.painted = "";
    const path = place.path;
    let work;
    if (path === "/summary") work = M.views.summary();
    else if (path === "/attention") work = M.views.attention(place.params);
    else if (path === "/groups") work = M.views.groups(place.params);
    else if (path === "/slowest") work = M.views.slowest(place.params);
    else if (path.startsWith("/d/")) work = M.views.grid(path.slice(3), place.params);
    else work = M.index.failing > 0 ? M.views.attention(place.params) : M.views.summary();
    return Promise.resolve(work).catch(failed);
  }

  // ------------------------------------------------------------------ start

  window.addEventListener("hashchange", route);
  load("index")
    .then(function (data) {
      M.index = data;
      return route();
    })
    .catch(failed);
})();
