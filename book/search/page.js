// The book's search, set up before the theme's script runs (it reads
// window.__search once). The theme starts its search worker from a file
// and fetches the index as JSON; a page opened from a local folder
// (file://) may do neither, so the worker is started from a blob of its
// code (built into this file by book/hooks.py) and the index comes from a
// script, search/search_index.js, which hands it to __book_search_index.
// That script (about 1 MB) is loaded when the reader first goes to the
// search box, not with every page: the worker builds its index from it.
(function () {
  var ready;
  var index = new Promise(function (resolve) { ready = resolve; });
  window.__book_search_index = function (data) { ready(data); };

  var indexScript = new URL("../../search/search_index.js", document.currentScript.src).href;
  var asked = false;
  function load() {
    if (asked) return;
    asked = true;
    var s = document.createElement("script");
    s.src = indexScript;
    document.head.appendChild(s);
  }
  document.addEventListener("focusin", function (ev) {
    if (ev.target.matches && ev.target.matches(".md-search__input")) load();
  });
  document.addEventListener("change", function (ev) {
    if (ev.target.id === "__search" && ev.target.checked) load();
  });
  if (new URLSearchParams(location.search).has("q")) load();

  var worker = URL.createObjectURL(
    new Blob(__book_worker_code, { type: "text/javascript" }));

  // Chinese has no spaces between words: the index holds each run of Han
  // characters as its overlapping pairs (worker_cjk.js), so a query's run
  // becomes the same pairs, all required: 完成队列 -> +完成 +成队 +队列.
  var HAN = /[\u3400-\u9fff\uf900-\ufaff]+/g;
  function pairs(run) {
    if (run.length === 1) return run;
    var out = [];
    for (var i = 0; i + 1 < run.length; i++) out.push("+" + run.slice(i, i + 2));
    return out.join(" ");
  }
  function transform(query) {
    return query.replace(/[*+\-:^~"]/g, " ").replace(HAN, function (run) {
      return " " + pairs(run) + " ";
    }).replace(/\s+/g, " ").trim();
  }

  window.__search = { worker: worker, index: index };
  if (__book_edition === "zh") window.__search.transform = transform;
})();
