#!/usr/bin/env python3
"""The Chinese edition (docs/zh/, README.zh.md) kept in step with the English.

  zh_sync.py --check [ZH_FILE...]    every check below, on the named files or all
  zh_sync.py --stamp ZH_FILE...      record the English revision a file translates
  zh_sync.py --root DIR ...          another checkout (default: this script's)

Each Chinese file has an English twin: docs/zh/X.md translates docs/X.md and
README.zh.md translates README.md (docs/zh/glossary.md, the term list, has
none). --check holds every pair to four rules and exits 1 if one is broken:

1. The same program, other words: the fenced blocks (```...```) are the
   English's, byte for byte and in the same order, and so is the directive
   comment before each (<!-- norun: -->, <!-- exit: N -->, <!-- sketch: -->),
   so the docs suite's run of the English blocks covers both editions.
   A ```mermaid block may differ only in its labels. The first block that
   differs is named, with both line numbers and the first line that differs.
2. The revision: the comment after the first line,

     <!-- zh-sync: translates docs/X.md sha256 <16 hex of the English file>
       <8 hex of the section's text>  <the section's heading line>
       ...
     -->

   records what the English was when the translation was last brought in
   step. When the English file changes, the check names the English sections
   whose text changed, was added or was removed since, so the translation of
   exactly those is updated in the same commit, and then re-stamped (--stamp,
   which refuses a file whose blocks differ from the English).
3. Links: every relative link resolves (the file exists; a #anchor is a
   heading's GitHub anchor in the file it points at), and the Chinese file
   links the same files as the English, a chapter's twin in place of the
   chapter, the language link on each first line apart. Every English file
   opens with a link to its Chinese twin, and every
   Chinese file with one back.
4. The glossary (docs/zh/glossary.md): one rendering per term. No Chinese
   file's prose (fenced blocks, inline code and link targets apart) uses a
   rendering the glossary's "通行说法" column (common usage elsewhere, which
   this book leaves out for consistency) or "不用" column (misleading or
   coined) lists, unless it is part of a rendering the "中文" column chose;
   and every rendering the "中文" column chose is used somewhere, so the list
   holds the terms the chapters use.

Every English docs/*.md and README.md must have its twin. Prints one line per
problem, "FILE:LINE: what" where a line is known, then "N files, M problems".
"""

import argparse
import hashlib
import os
import re
import sys
import unicodedata

GLOSSARY = "docs/zh/glossary.md"
HEADER_OPEN = "<!-- zh-sync: translates "
DIRECTIVE = re.compile(r"^<!--\s*(norun|exit|sketch)\b.*-->$")
HEADING = re.compile(r"^(#{1,6}) +(.*?)\s*#*\s*$")
LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]*(?:\([^()]*\))?[^()\s]*)\)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
PREAMBLE = "(before the first heading)"


_texts = {}


def read(path):
    """A file's text, read again only when it changed (a check reads each
    file several times)."""
    st = os.stat(path)
    key = (st.st_mtime_ns, st.st_size)
    if _texts.get(path, (None,))[0] != key:
        with open(path, encoding="utf-8") as f:
            _texts[path] = (key, f.read())
    return _texts[path][1]


def sha(text, n):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


# --- pairs ----------------------------------------------------------------

def english_of(zh_rel):
    """The English twin of a Chinese file (paths relative to the root), or
    None for the glossary."""
    if zh_rel == "README.zh.md":
        return "README.md"
    if zh_rel == GLOSSARY:
        return None
    if zh_rel.startswith("docs/zh/"):
        return "docs/" + zh_rel[len("docs/zh/"):]
    raise ValueError(f"{zh_rel} is not a file of the Chinese edition")


def twin_of(en_rel):
    """The Chinese twin of an English chapter or README, or None."""
    if en_rel == "README.md":
        return "README.zh.md"
    if re.fullmatch(r"docs/[^/]+\.md", en_rel):
        return "docs/zh/" + en_rel[len("docs/"):]
    return None


def english_files(root):
    docs = sorted(f for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    return ["README.md"] + ["docs/" + f for f in docs]


def chinese_files(root):
    zh = os.path.join(root, "docs", "zh")
    found = sorted("docs/zh/" + f for f in os.listdir(zh) if f.endswith(".md")) if os.path.isdir(zh) else []
    if os.path.exists(os.path.join(root, "README.zh.md")):
        found.insert(0, "README.zh.md")
    return found


# --- structure of a markdown file ----------------------------------------

def lines_outside_fences(lines):
    """(index, line) of the lines that are not inside a fenced block (fence
    lines themselves included as inside)."""
    inside = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            inside = not inside
            continue
        if not inside:
            yield i, line


def fenced_blocks(lines):
    """Each fenced block as (first line number, info string, directive, body
    lines), the directive being the comment on the last non-empty line before
    the fence when it is one of the docs suite's."""
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start = i
            info = lines[i][3:].strip()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            k = start - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            directive = lines[k].strip() if k >= 0 and DIRECTIVE.match(lines[k].strip()) else ""
            blocks.append((start + 1, info, directive, lines[start + 1:j]))
            i = j + 1
        else:
            i += 1
    return blocks


MERMAID_LABELS = [
    (re.compile(r"^(\s*participant \S+ as ).*$"), r"\1…"),
    (re.compile(r"^(\s*(?:loop|alt|else|opt|rect|critical|break)\b).*$"), r"\1 …"),
    (re.compile(r'(--|==|-\.)\s*"[^"]*"\s*(-->|==>|\.->)'), r'\1 "…" \2'),
    (re.compile(r'\["[^"]*"\]'), "[…]"),
    (re.compile(r"\[[^\]\[]*\]"), "[…]"),
    (re.compile(r"\|[^|]*\|"), "|…|"),
    (re.compile(r"^([^:]*?): .*$"), r"\1: …"),
]


def mermaid_skeleton(line):
    """A mermaid line with its labels replaced, so that two editions compare
    equal when only their labels differ ([*] is a state, not a label)."""
    line = line.replace("[*]", "\0")
    for pattern, repl in MERMAID_LABELS:
        line = pattern.sub(repl, line)
    return line.replace("\0", "[*]")


def sections(lines):
    """The file cut at its headings (outside fences): a list of (key, heading
    line, text). The key is the heading line, with " (2)", " (3)" for repeats;
    text before the first heading is its own section."""
    starts = [i for i, line in lines_outside_fences(lines) if HEADING.match(line)]
    cuts = ([0] if not starts or starts[0] != 0 else []) + starts + [len(lines)]
    seen = {}
    result = []
    for a, b in zip(cuts, cuts[1:]):
        if a == b:
            continue
        heading = lines[a] if HEADING.match(lines[a]) and a in starts else PREAMBLE
        seen[heading] = seen.get(heading, 0) + 1
        key = heading if seen[heading] == 1 else f"{heading} ({seen[heading]})"
        result.append((key, heading, "\n".join(lines[a:b])))
    return result


def slug(heading_text):
    """GitHub's anchor for a heading: lower case, everything but letters,
    digits (any script), spaces, '-' and '_' dropped, spaces to '-'."""
    text = LINK.sub(lambda m: m.group(2), heading_text)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(lines):
    found, seen = set(), {}
    for _, line in lines_outside_fences(lines):
        m = HEADING.match(line)
        if m:
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
    return found


def links(lines):
    """(line number, target) of the markdown links outside fenced blocks and
    inline code."""
    for i, line in lines_outside_fences(lines):
        for m in LINK.finditer(INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line)):
            yield i + 1, m.group(3)


def prose(lines, keep_code=False):
    """The file's text without fenced blocks, HTML comments and link targets
    (and inline code, unless keep_code), for the glossary's checks."""
    out = []
    in_comment = False
    for _, line in lines_outside_fences(lines):
        if in_comment or line.lstrip().startswith("<!--"):
            in_comment = "-->" not in line
            out.append("")
            continue
        if not keep_code:
            # Emphasis markers apart too: 错误*完成* is 错误完成 to a reader.
            line = INLINE_CODE.sub(" ", line).replace("*", "")
        out.append(LINK.sub(lambda m: m.group(1) + "[" + m.group(2) + "]", line))
    return out


# --- the header ------------------------------------------------------------

def header_for(en_rel, en_text):
    lines = [f"{HEADER_OPEN}{en_rel} sha256 {sha(en_text, 16)}"]
    for key, _, text in sections(en_text.split("\n")):
        lines.append(f"  {sha(text, 8)}  {key}")
    lines.append("-->")
    return lines


def parse_header(lines):
    """(line index of the header, English path, file hash, {section key: hash})
    or None when the file has no header."""
    for i, line in enumerate(lines[:5]):
        if line.startswith(HEADER_OPEN):
            m = re.fullmatch(re.escape(HEADER_OPEN) + r"(\S+) sha256 ([0-9a-f]{16})", line)
            if not m:
                return i, None, None, {}
            recorded = {}
            j = i + 1
            while j < len(lines) and lines[j] != "-->":
                s = re.fullmatch(r"  ([0-9a-f]{8})  (.*)", lines[j])
                if s:
                    recorded[s.group(2)] = s.group(1)
                j += 1
            return i, m.group(1), m.group(2), recorded
    return None


def strip_header(lines):
    h = parse_header(lines)
    if not h:
        return lines
    i = h[0]
    j = i
    while j < len(lines) and lines[j] != "-->":
        j += 1
    return lines[:i] + lines[j + 1:]


def body_of(root, zh_rel):
    """A Chinese file's lines without its zh-sync header, and how many lines
    the header took (to give line numbers as they are on disk)."""
    lines = read(os.path.join(root, zh_rel)).split("\n")
    body = strip_header(lines)
    return body, len(lines) - len(body)


# --- the checks ------------------------------------------------------------

class Report:
    def __init__(self):
        self.problems = []

    def add(self, where, what):
        self.problems.append(f"{where}: {what}")


def check_blocks(root, zh_rel, en_rel, report):
    zh, offset = body_of(root, zh_rel)
    en = read(os.path.join(root, en_rel)).split("\n")
    zb, eb = fenced_blocks(zh), fenced_blocks(en)
    for n, (z, e) in enumerate(zip(zb, eb), 1):
        zline, zinfo, zdir, zbody = z
        eline, einfo, edir, ebody = e
        why = None
        if zinfo != einfo:
            why = f"```{zinfo} where the English has ```{einfo}"
        elif zdir != edir:
            why = f"directive {zdir or '(none)'!r} where the English has {edir or '(none)'!r}"
        else:
            same = (lambda a, b: mermaid_skeleton(a) == mermaid_skeleton(b)) if einfo == "mermaid" \
                else (lambda a, b: a == b)
            for k in range(max(len(zbody), len(ebody))):
                a = zbody[k] if k < len(zbody) else "(end of block)"
                b = ebody[k] if k < len(ebody) else "(end of block)"
                if not same(a, b):
                    why = f"its line {k + 1} is {a!r}, the English's is {b!r}"
                    break
        if why:
            report.add(f"{zh_rel}:{zline + offset}",
                       f"block {n} differs from {en_rel}:{eline}'s: {why}")
            return False
    if len(zb) != len(eb):
        report.add(zh_rel, f"has {len(zb)} fenced blocks, {en_rel} has {len(eb)}"
                   + (f"; the first missing is {en_rel}:{eb[len(zb)][0]}" if len(zb) < len(eb) else
                      f"; the first extra is at line {zb[len(eb)][0] + offset}"))
        return False
    return True


def check_structure(root, zh_rel, en_rel, report):
    """The same headings, level by level, and in each section every number
    the English's prose states (a dropped sentence usually drops one)."""
    zh, offset = body_of(root, zh_rel)
    en = read(os.path.join(root, en_rel)).split("\n")
    zs, es = sections(zh), sections(en)
    # The language link before the title is each edition's own.
    zpre = zs[0][2].count("\n") + 1 if zs and zs[0][1] == PREAMBLE else 0
    zs = [s for s in zs if s[1] != PREAMBLE]
    es = [s for s in es if s[1] != PREAMBLE]
    level = lambda h: len(h) - len(h.lstrip("#")) if h != PREAMBLE else 0
    for (zk, zh_heading, _), (ek, en_heading, _) in zip(zs, es):
        if level(zh_heading) != level(en_heading):
            report.add(zh_rel, f"heading {zh_heading!r} stands where {en_rel} has {en_heading!r}: "
                       "the headings should be the English's, one for one, at the same levels")
            return
    if len(zs) != len(es):
        report.add(zh_rel, f"has {len(zs)} sections, {en_rel} has {len(es)}")
        return
    start = zpre
    for (zk, _, ztext), (ek, _, etext) in zip(zs, es):
        znums, enums = numbers(ztext), numbers(etext)
        missing = []
        for n in sorted(set(enums), key=enums.index):
            want, have = enums.count(n), znums.count(n)
            if have < want:
                missing.append(n if want == 1 else f"{n} ({want} times, here {have})")
        if missing:
            report.add(f"{zh_rel}:{start + offset + 1}",
                       f"section {zk!r} lacks numbers its English section {ek!r} states: " + ", ".join(missing))
        start += ztext.count("\n") + 1


NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")


def numbers(section_text):
    """The numbers of a section's prose (fences, comments, inline code and
    link targets apart), thousands separators dropped."""
    text = "\n".join(prose(section_text.split("\n"), keep_code=True))
    # Inline code may run across a line break; it is not prose either way.
    text = re.sub(r"(`+)(?:(?!\n\s*\n).)+?\1", " ", text, flags=re.S)
    return [re.sub(r",(?=\d{3}\b)", "", m.group(0)).rstrip(".,") for m in NUMBER.finditer(text)]


def _punct(c):
    return c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" or unicodedata.category(c).startswith("P")


def _flanking(text, i, n):
    """(left-flanking, right-flanking) of the delimiter run text[i:i+n], as
    CommonMark defines them (the line's ends count as whitespace)."""
    before = text[i - 1] if i > 0 else " "
    after = text[i + n] if i + n < len(text) else " "
    left = not after.isspace() and (not _punct(after) or before.isspace() or _punct(before))
    right = not before.isspace() and (not _punct(before) or after.isspace() or _punct(after))
    return left, right


def check_emphasis(root, rel, report):
    """**bold** and *italic* that GitHub renders as written: a closing ** right
    after full-width punctuation and right before a CJK character (“**注意。**然后”)
    closes nothing, and the asterisks show. Checked per paragraph."""
    lines = read(os.path.join(root, rel)).split("\n")
    paragraph = []

    def judge(paragraph):
        if not paragraph:
            return
        number = paragraph[0][0]
        text = " ".join(INLINE_CODE.sub(lambda m: "x" * len(m.group(0)), l) for _, l in paragraph)
        text = re.sub(r"^(\s*)[*-] ", r"\1- ", text)
        for run in ("**", "*"):
            pattern = re.compile(r"(?<!\*)\*\*(?!\*)" if run == "**" else r"(?<!\*)\*(?!\*)")
            spots = [m.start() for m in pattern.finditer(text)]
            for k in range(0, len(spots) - 1, 2):
                opening, closing = spots[k], spots[k + 1]
                if not _flanking(text, opening, len(run))[0] or not _flanking(text, closing, len(run))[1]:
                    shown = text[max(0, opening - 8):closing + len(run) + 8]
                    report.add(f"{rel}:{number}", f"{run}...{run} that GitHub will not render as emphasis "
                               f"(punctuation just inside a {run} that touches a letter outside): {shown!r}")
                    return

    for i, line in lines_outside_fences(lines):
        if not line.strip() or HEADING.match(line) or line.lstrip().startswith(("|", "<!--")):
            judge(paragraph)
            paragraph = []
            if line.lstrip().startswith("|"):
                judge([(i + 1, line)])
            continue
        if re.match(r"^\s*([*-]|\d+\.) ", line) or line.startswith(">"):
            judge(paragraph)
            paragraph = []
        paragraph.append((i + 1, line))
    judge(paragraph)


def check_revision(root, zh_rel, en_rel, report):
    zh = read(os.path.join(root, zh_rel)).split("\n")
    en_text = read(os.path.join(root, en_rel))
    h = parse_header(zh)
    stamp = f"scripts/zh_sync.py --stamp {zh_rel}"
    if not h:
        report.add(f"{zh_rel}:2", f"no '{HEADER_OPEN.strip()} ...' comment after the first line: "
                   f"once the translation is in step with {en_rel}, run {stamp}")
        return
    i, recorded_en, recorded_hash, recorded = h
    if recorded_en != en_rel:
        report.add(f"{zh_rel}:{i + 1}", f"the header names {recorded_en}, but this file translates {en_rel}")
        return
    if recorded_hash == sha(en_text, 16):
        return
    now = sections(en_text.split("\n"))
    changed = []
    for key, _, text in now:
        if key not in recorded:
            changed.append(f"{key!r} (added)")
        elif recorded[key] != sha(text, 8):
            changed.append(f"{key!r}")
    keys_now = {k for k, _, _ in now}
    changed += [f"{k!r} (removed)" for k in recorded if k not in keys_now]
    report.add(f"{zh_rel}:{i + 1}",
               f"{en_rel} changed since this translation (sha256 {recorded_hash} recorded, "
               f"{sha(en_text, 16)} now); English sections changed: "
               + (", ".join(changed) if changed else "none by heading (the header lists no sections)")
               + f". Translate those, then run {stamp}")


def resolve(root, file_rel, target):
    """(repository path or None for external, anchor) of a link target."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return None, None
    path, _, anchor = target.partition("#")
    if not path:
        return file_rel, anchor
    joined = os.path.normpath(os.path.join(os.path.dirname(file_rel), path))
    return joined.replace(os.sep, "/"), anchor


def check_links(root, rel, report, cache):
    """Every relative link of one file resolves; returns the multiset of link
    targets (repository paths), the first line's apart."""
    lines = read(os.path.join(root, rel)).split("\n")
    targets = []
    for number, target in links(lines):
        path, anchor = resolve(root, rel, target)
        if path is None:
            continue
        full = os.path.join(root, path)
        if path.startswith("..") or not os.path.exists(full):
            report.add(f"{rel}:{number}", f"link {target!r}: {path} does not exist")
            continue
        if anchor:
            if not path.endswith(".md"):
                report.add(f"{rel}:{number}", f"link {target!r}: an anchor into a file that is not markdown")
            else:
                if path not in cache:
                    cache[path] = anchors(read(full).split("\n"))
                if anchor not in cache[path]:
                    report.add(f"{rel}:{number}", f"link {target!r}: {path} has no heading whose anchor is #{anchor}")
        if number != 1:
            targets.append(path)
    return targets


def check_language_links(root, zh_rel, en_rel, report):
    zh_first = read(os.path.join(root, zh_rel)).split("\n")[0]
    back = [resolve(root, zh_rel, t)[0] for _, t in links([zh_first])]
    if en_rel not in back:
        report.add(f"{zh_rel}:1", f"the first line should link back to {en_rel} (\"English\")")


def glossary(root):
    """[(line, english, [chosen renderings], [renderings not used], [common usages])]

    The table's header names its columns: | English | 中文 | 通行说法 | 不用 | ...,
    the 通行说法 column (common usage this book does not write) optional."""
    rows = []
    lines = read(os.path.join(root, GLOSSARY)).split("\n")
    columns = None
    for i, line in enumerate(lines, 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells and cells[:2] == ["English", "中文"] and "不用" in cells:
            columns = {name: k for k, name in enumerate(cells)}
            continue
        if columns is None or not cells or set(line) <= set("|- "):
            if columns is not None and not cells:
                columns = None
            continue

        def cell(name, sep):
            k = columns.get(name)
            text = cells[k] if k is not None and k < len(cells) else ""
            return [x.strip() for x in text.split(sep) if x.strip()]
        rows.append((i, cells[0], cell("中文", " / "), cell("不用", "、"), cell("通行说法", "、")))
    return rows


def check_glossary(root, zh_rels, report, check_used=True):
    if not os.path.exists(os.path.join(root, GLOSSARY)):
        report.add(GLOSSARY, "missing")
        return
    rows = glossary(root)
    if not rows:
        report.add(GLOSSARY, "no table with the columns | English | 中文 | 通行说法 | 不用 | found")
        return
    chosen_all = sorted({c for _, _, cs, _, _ in rows for c in cs}, key=len, reverse=True)
    texts = {rel: prose(read(os.path.join(root, rel)).split("\n")) for rel in zh_rels if rel != GLOSSARY}
    with_code = {rel: "\n".join(prose(read(os.path.join(root, rel)).split("\n"), keep_code=True))
                 for rel in texts}
    for line, english, chosen, avoid, common in rows:
        for a in common + avoid:
            covers = [c for c in chosen_all if a in c and c != a]
            why = ("is common usage, but this book writes" if a in common else "is not used:")
            for rel, lines in texts.items():
                for n, text in enumerate(lines, 1):
                    start = text.find(a)
                    while start != -1:
                        if not any(_covered(text, c, start, len(a)) for c in covers):
                            report.add(f"{rel}:{_line_of(root, rel, n, text)}",
                                       f"{a!r} for {english!r} {why} {' / '.join(chosen)} "
                                       f"(the glossary, {GLOSSARY}:{line})")
                        start = text.find(a, start + 1)
        for c in chosen if check_used else []:
            if not any(c in t for t in with_code.values()):
                report.add(f"{GLOSSARY}:{line}", f"{c!r} ({english}) is used by no chapter: "
                           "drop the row, or use the term")


def _covered(text, chosen, start, length):
    k = text.find(chosen, max(0, start - len(chosen) + 1))
    while k != -1 and k <= start:
        if k + len(chosen) >= start + length:
            return True
        k = text.find(chosen, k + 1)
    return False


def _line_of(root, rel, n, text):
    """prose() keeps one entry per line outside fences; map back to the line."""
    lines = read(os.path.join(root, rel)).split("\n")
    outside = [i for i, _ in lines_outside_fences(lines)]
    return outside[n - 1] + 1 if n - 1 < len(outside) else "?"


def check(root, only=None):
    report = Report()
    zh_rels = chinese_files(root)
    for en_rel in english_files(root) if only is None else []:
        if twin_of(en_rel) not in zh_rels:
            report.add(en_rel, f"has no Chinese twin {twin_of(en_rel)}")
    for en_rel in english_files(root) if only is None else []:
        zh = twin_of(en_rel)
        if zh not in zh_rels:
            continue
        first = read(os.path.join(root, en_rel)).split("\n")[0]
        if zh not in [resolve(root, en_rel, t)[0] for _, t in links([first])]:
            report.add(f"{en_rel}:1", f"the first line should link to {zh} (\"中文\")")
    cache = {}
    selected = [r for r in zh_rels if only is None or r in only]
    for zh_rel in selected:
        en_rel = english_of(zh_rel)
        if en_rel is None:
            check_links(root, zh_rel, report, cache)
            continue
        if not os.path.exists(os.path.join(root, en_rel)):
            report.add(zh_rel, f"translates {en_rel}, which does not exist")
            continue
        check_blocks(root, zh_rel, en_rel, report)
        check_revision(root, zh_rel, en_rel, report)
        check_structure(root, zh_rel, en_rel, report)
        check_emphasis(root, zh_rel, report)
        check_language_links(root, zh_rel, en_rel, report)
        zt = check_links(root, zh_rel, report, cache)
        et = [twin_of(t) if twin_of(t) and twin_of(t) in zh_rels else t
              for t in check_links(root, en_rel, Report(), cache)]
        for t in sorted(set(zt) | set(et)):
            if zt.count(t) != et.count(t):
                report.add(zh_rel, f"links {t} {zt.count(t)} times, {en_rel} {et.count(t)} times"
                           + (" (its twin)" if t != twin_of(t) and t in zh_rels else ""))
    check_glossary(root, selected, report, check_used=only is None)
    return selected, report


def stamp(root, zh_rel):
    en_rel = english_of(zh_rel)
    if en_rel is None:
        raise SystemExit(f"{zh_rel} translates no English file; nothing to stamp")
    report = Report()
    if not check_blocks(root, zh_rel, en_rel, report):
        for p in report.problems:
            print(p)
        raise SystemExit(f"{zh_rel}: not stamped: its blocks are not {en_rel}'s")
    lines = strip_header(read(os.path.join(root, zh_rel)).split("\n"))
    new = lines[:1] + header_for(en_rel, read(os.path.join(root, en_rel))) + lines[1:]
    with open(os.path.join(root, zh_rel), "w", encoding="utf-8") as f:
        f.write("\n".join(new))
    print(f"{zh_rel}: stamped with {en_rel} sha256 {sha(read(os.path.join(root, en_rel)), 16)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--stamp", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    files = [os.path.relpath(os.path.abspath(f), root).replace(os.sep, "/") for f in args.files]
    if args.stamp:
        if not files:
            ap.error("--stamp needs the Chinese files to stamp")
        for f in files:
            stamp(root, f)
        return 0
    selected, report = check(root, files or None)
    for p in report.problems:
        print(p)
    print(f"{len(selected)} files, {len(report.problems)} problems")
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
