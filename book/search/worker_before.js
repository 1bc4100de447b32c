// In the search worker, before the theme's code: the book's index settings.
// The theme takes them from its translations, and for Chinese those name a
// Japanese segmenter loaded from a file, which a worker started from a blob
// cannot load; the book indexes Han characters in pairs (worker_cjk.js)
// with English's stemmer for the rest, and no trimmer (it would take a Han
// character for punctuation and drop it).
self.addEventListener("message", function (ev) {
  var m = ev.data;
  if (m && m.type === 0 && self.__book_edition === "zh") {
    m.data.config.lang = ["en"];
    m.data.options.pipeline = ["stemmer"];
  }
});
