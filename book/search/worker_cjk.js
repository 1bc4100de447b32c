// In the search worker, after the theme's code (Chinese edition only): each
// word lunr's tokenizer finds is cut into runs of Han characters and runs
// of anything else. A Han run is indexed as its overlapping pairs (or the
// one character), which page.js's query transform asks for; the rest loses
// the punctuation at its ends, as the trimmer this pipeline leaves out would.
(function () {
  var lunr = self.lunr;
  var split = lunr.tokenizer;
  var HAN = /[\u3400-\u9fff\uf900-\ufaff]+/g;
  var EDGES = /^[^\w\u3400-\u9fff\uf900-\ufaff]+|[^\w\u3400-\u9fff\uf900-\ufaff]+$/g;

  function token(text, metadata, start) {
    var m = lunr.utils.clone(metadata) || {};
    if (m.position) m.position = [m.position[0] + start, text.length];
    return new lunr.Token(text, m);
  }

  function rest(out, text, metadata, start) {
    var trimmed = text.replace(EDGES, "");
    if (trimmed) out.push(token(trimmed, metadata, start + text.indexOf(trimmed)));
  }

  function tokenizer(obj, metadata) {
    var out = [];
    split(obj, metadata).forEach(function (t) {
      var s = t.toString(), last = 0, m;
      HAN.lastIndex = 0;
      while ((m = HAN.exec(s)) !== null) {
        rest(out, s.slice(last, m.index), t.metadata, last);
        var run = m[0];
        if (run.length === 1) out.push(token(run, t.metadata, m.index));
        for (var i = 0; i + 1 < run.length; i++)
          out.push(token(run.slice(i, i + 2), t.metadata, m.index + i));
        last = m.index + run.length;
      }
      rest(out, s.slice(last), t.metadata, last);
    });
    return out;
  }
  // The theme sets the separator on lunr.tokenizer; the split reads it there.
  tokenizer.separator = split.separator;
  lunr.tokenizer = tokenizer;
})();
