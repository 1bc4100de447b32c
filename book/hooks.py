"""MkDocs hooks that turn docs/ and docs/zh/ into the book (scripts/book.sh).

The chapters are written to be read on a forge: they link to each other as
NN-name.md, to the other edition as zh/NN-name.md or ../NN-name.md, to the
figures under ../img/, and to the code as ../04_rdma_write/client.cpp (a
file) or ../04_rdma_write/ (a stage). Two builds make the book, the English
edition at the site's root and the Chinese one under zh/, both from the files
as they are; these hooks make every such link land in the site:

  - a link inside the edition being built is left to MkDocs, which turns
    X.md into X.html and warns when X.md does not exist;
  - every other link (the other edition, the figures seen from zh/, the
    code) is rewritten to "book-site:PATH", PATH being where the target lives
    in the built site, and made relative to the page once the page is HTML;
  - the code is a page per tracked file under code/ (code_pages.py: the
    file highlighted, one anchor per line, #L12), a listing per directory;
  - after each ```cpp block that quotes the sources, a line names where the
    quote comes from and links to its first line there.

Headings get GitHub's anchors (lower case, punctuation dropped, one hyphen
per space), which is what the chapters' #section links were written against.
"""

import importlib.util
import json
import os
import posixpath
import re
import subprocess
import sys
from pathlib import Path

BOOK = Path(__file__).resolve().parent
REPO = BOOK.parent
DOCS = REPO / "docs"

sys.path.insert(0, str(BOOK))
import code_pages  # noqa: E402  (book/code_pages.py, beside this file)

_spec = importlib.util.spec_from_file_location("chapter_quotes", REPO / "scripts/tests/chapter_quotes.py")
chapter_quotes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chapter_quotes)

# An inline link or image: [text](target) or ![alt](target "title").
LINK = re.compile(r'(!?\[(?:[^\[\]]|\[[^\]]*\])*\]\()(<[^>]*>|[^)\s]+)((?:\s+"[^"]*")?\))')
SITE_REF = "book-site:"
SITE_HREF = re.compile(r'(href|src)="' + re.escape(SITE_REF) + r'([^"]*)"')
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")

# "from FILE, lines N-M" in each edition's words: (from, comma, one line, lines).
QUOTED_FROM = {
    "en": ("from", ", ", "line {}", "lines {}-{}"),
    "zh": ("引自", "，", "第 {} 行", "第 {}–{} 行"),
}


def gfm_slug(value, separator="-"):
    """GitHub's heading anchor: lower case, no punctuation, a hyphen per space."""
    value = re.sub(r"[^\w\- ]", "", value.strip().lower())
    return value.replace(" ", separator)


def edition(config):
    return "zh" if Path(config["docs_dir"]).resolve() == (DOCS / "zh").resolve() else "en"


def site_root(ed):
    """Where an edition's pages are in the built site."""
    return "zh/" if ed == "zh" else ""


def doc_site_path(rel):
    """The site path of a file under docs/ (rel is relative to docs/)."""
    if rel.endswith(".md"):
        stem = rel[:-3]
        if posixpath.basename(stem) == "README":
            stem = posixpath.join(posixpath.dirname(stem), "index")
        return stem + ".html"
    return rel


def tracked_files():
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True,
                         text=True, check=True).stdout
    return [f for f in out.split("\0") if f]


class State:
    """What every page of one build needs: which files the repository
    tracks, and the quotable sources' lines."""

    def __init__(self):
        self.tracked = set(tracked_files())
        self.dirs = {posixpath.dirname(f) for f in self.tracked}
        for d in list(self.dirs):
            while d:
                d = posixpath.dirname(d)
                self.dirs.add(d)
        # A tracked symbolic link (each stage's run.sh) is its target's page.
        self.links = {}
        for f in self.tracked:
            if (REPO / f).is_symlink():
                target = code_pages.link_target(REPO, f)
                if target is not None:
                    self.links[f] = target
        self.sources = {}
        self.raw = {}
        for f in sorted(self.tracked):
            if chapter_quotes.SOURCE_DIR.match(f) and f.endswith(chapter_quotes.SOURCE_SUFFIXES):
                lines = (REPO / f).read_text(encoding="utf-8", errors="replace").splitlines()
                self.raw[f] = lines
                index = {}
                for n, line in enumerate(lines, 1):
                    norm = chapter_quotes.normalise(line)
                    if norm:
                        index.setdefault(norm, []).append(n)
                self.sources[f] = index
        self.broken = []
        # Repository path -> the English pages linking it: (site path, title, Chinese twin or None).
        self.readers = {}

    def read_with(self, repo_paths, page_site_path, title, twin):
        """The English page at page_site_path links to or quotes repo_paths."""
        zh = twin if twin.startswith("zh/") and twin != "zh/index.html" else None
        for path in repo_paths:
            self.readers.setdefault(path, []).append((page_site_path, title, zh))


STATE = None


def on_config(config, **_):
    global STATE
    STATE = State()
    config["mdx_configs"].setdefault("toc", {})["slugify"] = gfm_slug
    return config


def on_files(files, config, **_):
    """The English build reads docs/ without its zh/ folder."""
    if edition(config) == "en":
        for f in list(files):
            if f.src_uri.startswith("zh/"):
                files.remove(f)
    return files


def site_target(repo_path, is_dir):
    """Where the repository path lands in the site, or None if nowhere."""
    if repo_path == "docs" or repo_path.startswith("docs/"):
        rel = repo_path[len("docs/"):] if repo_path != "docs" else ""
        if is_dir or rel == "" or rel == "zh":
            return posixpath.join(rel, "index.html") if rel else "index.html"
        return doc_site_path(rel) if (DOCS / rel).exists() else None
    repo_path = STATE.links.get(repo_path, repo_path)
    if not code_pages.shown(repo_path if repo_path != "." else ""):
        return None
    if is_dir or repo_path in STATE.dirs or repo_path == ".":
        d = "" if repo_path == "." else repo_path
        return code_pages.dir_page_path(d) if d in STATE.dirs else None
    if repo_path in STATE.tracked:
        return code_pages.page_path(repo_path)
    return None


def rewrite_link(target, page_repo, ed, code):
    """The link as the built page needs it, or None to leave it; page_repo is
    the page's path in the repository (docs/zh/04-rdma-write.md). A link to
    the code adds the file (or folder) to code."""
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
        return None
    path, _, frag = target.partition("#")
    is_dir = path.endswith("/")
    repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(page_repo), path))
    if repo_path.startswith("../"):
        return None
    docs_root = "docs/zh/" if ed == "zh" else "docs/"
    inside = repo_path.startswith(docs_root) and not (ed == "en" and repo_path.startswith("docs/zh/"))
    if inside and not is_dir and repo_path.endswith(".md"):
        return None  # MkDocs' own: X.md -> X.html, checked by it
    where = site_target(repo_path, is_dir)
    if where is None:
        STATE.broken.append((page_repo, target))
        return None
    if where.startswith("code/"):
        code.add(STATE.links.get(repo_path, repo_path))
    return SITE_REF + where + ("#" + frag if frag else "")


def quote_source(block, chapter_stage, heading):
    """(file, first, last) in the sources where a ```cpp block's lines are,
    or None: the file where most of them follow one another, preferring the
    chapter's stage, a file the heading names, and a file no exercise is."""
    lines = [chapter_quotes.normalise(l) for l in block]
    lines = [l for l in lines if l]
    if not lines:
        return None
    best = None
    for f, index in STATE.sources.items():
        if lines[0] not in index and not any(l in index for l in lines[:3]):
            continue
        first_line = next(l for l in lines if l in index)
        for start in index[first_line]:
            pos, matched, last = start, 0, start
            for l in lines:
                after = [n for n in index.get(l, ()) if pos <= n <= pos + 80]
                if after:
                    pos = last = after[0]
                    matched += 1
            score = (matched,
                     "/exercises/" not in f,
                     f.startswith(chapter_stage + "/") if chapter_stage else False,
                     posixpath.basename(f) in heading,
                     -(last - start))
            if best is None or score > best[0]:
                best = (score, f, start, last)
    if best is None or best[0][0] * 2 < len(lines):
        return None
    f, first, last = best[1], best[2], best[3]
    # The normalising skips comment-only lines; a quote that opens with
    # comments opens where they are in the file.
    lead = []
    for line in block:
        if chapter_quotes.normalise(line):
            break
        if line.strip():
            lead.append(line.strip())
    raw = STATE.raw[f]
    if lead and first - len(lead) >= 1 and [l.strip() for l in raw[first - 1 - len(lead):first - 1]] == lead:
        first -= len(lead)
    return f, first, last


def segments(markdown):
    """The markdown as ("text", lines) and ("fence", lines, language) runs, in
    order; a fence's lines include its opening and closing lines."""
    out, fence = [], None
    for line in markdown.split("\n"):
        if fence is None:
            m = FENCE.match(line)
            if m:
                fence = m.group(2)
                out.append(("fence", [line], m.group(3)))
            elif out and out[-1][0] == "text":
                out[-1][1].append(line)
            else:
                out.append(("text", [line]))
        else:
            out[-1][1].append(line)
            stripped = line.strip()
            if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
                fence = None
    return out


def quote_line(block, stage, heading, ed, quoted):
    """The "from FILE, lines N-M" line for a ```cpp block that quotes the
    sources, or None; the file quoted is added to quoted."""
    found = quote_source(block, stage, heading)
    if not found:
        return None
    f, first, last = found
    word, comma, one, many = QUOTED_FROM[ed]
    where = one.format(first) if first == last else many.format(first, last)
    href = SITE_REF + code_pages.page_path(f) + f"#L{first}"
    quoted.add(f)
    return f'<p class="book-quoted-from">{word} <a href="{href}"><code>{f}</code>{comma}{where}</a></p>'


def chapter_stage(page_repo):
    """The stage folder of a chapter (docs/04-rdma-write.md: 04_rdma_write), or None."""
    m = re.match(r"(\d\d)-", posixpath.basename(page_repo))
    if not m:
        return None
    return next((d for d in sorted(STATE.dirs) if d.startswith(m.group(1) + "_") and "/" not in d), None)


def on_page_markdown(markdown, page, config, files, **_):
    ed = edition(config)
    page_repo = posixpath.join("docs/zh" if ed == "zh" else "docs", page.file.src_uri)
    page.meta["book_site_path"] = site_root(ed) + page.file.dest_uri
    page.meta["book_twin"] = twin_of(page_repo, ed)
    runs = segments(markdown)
    # MkDocs takes a title only from a first line that is a heading; the
    # chapters open with the language line (and zh's with its sync record).
    title = next((l[2:].strip() for run in runs if run[0] == "text" for l in run[1] if l.startswith("# ")), None)
    if title:
        page.title = re.sub(r"`([^`]*)`", r"\1", title)

    code = set()  # the repository files this page links to or quotes

    def fix(m):
        new = rewrite_link(m.group(2), page_repo, ed, code)
        return m.group(0) if new is None else m.group(1) + new + m.group(3)

    stage, heading, prev, out = chapter_stage(page_repo), "", "", []
    for run in runs:
        lines = run[1]
        if run[0] == "text":
            # Links inside fenced blocks stay as written.
            out.append(LINK.sub(fix, "\n".join(lines)))
            heading = next((l for l in reversed(lines) if l.startswith("#")), heading)
            prev = next((l for l in reversed(lines) if l.strip()), prev)
            continue
        out.append("\n".join(lines))
        sketch = chapter_quotes.SKETCH.match(prev.strip())
        if run[2] == "cpp" and not sketch:
            line = quote_line(lines[1:-1], stage, heading, ed, code)
            if line:
                out.append("\n" + line)
        prev = lines[-1]
    if ed == "en":
        STATE.read_with(code, page.meta["book_site_path"], page.title, page.meta["book_twin"])
    return "\n".join(out)


def twin_of(page_repo, ed):
    """The other edition's page for this one (its site path), or that
    edition's contents when it has no such page (the glossary)."""
    if ed == "zh":
        other = "docs/" + page_repo[len("docs/zh/"):]
        return doc_site_path(other[len("docs/"):]) if (REPO / other).exists() else "index.html"
    other = "docs/zh/" + page_repo[len("docs/"):]
    return "zh/" + doc_site_path(page_repo[len("docs/"):]) if (REPO / other).exists() else "zh/index.html"


def relative(site_path, from_site_path):
    path, _, frag = site_path.partition("#")
    rel = posixpath.relpath(path, posixpath.dirname(from_site_path) or ".")
    return rel + ("#" + frag if frag else "")


def on_page_context(context, page, config, **_):
    """The header's language switch: this page and its twin in the other
    edition (site paths, made relative with the page's links)."""
    here, twin = page.meta["book_site_path"], page.meta["book_twin"]
    en, zh = (here, twin) if edition(config) == "en" else (twin, here)
    config["extra"]["alternate"] = [
        {"name": "English", "link": SITE_REF + en, "lang": "en"},
        {"name": "中文", "link": SITE_REF + zh, "lang": "zh"},
    ]
    return context


def on_post_page(output, page, **_):
    here = page.meta["book_site_path"]
    return SITE_HREF.sub(lambda m: f'{m.group(1)}="{relative(m.group(2), here)}"', output)


def on_post_build(config, **_):
    ed = edition(config)
    site = Path(config["site_dir"])
    for page, target in STATE.broken:
        print(f"book: {page}: a link to {target} lands nowhere in the site", file=sys.stderr)
    if ed == "en":
        code_pages.write_all(site, sorted(STATE.tracked), REPO, STATE.readers)
    vendor = os.environ.get("BOOK_MERMAID")
    if vendor:
        dest = site / "assets/vendor/mermaid.min.js"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(Path(vendor).read_bytes())
        licence = Path(vendor[: -len(".min.js")] + ".LICENSE")
        if licence.exists():
            (dest.parent / "mermaid.LICENSE").write_bytes(licence.read_bytes())
    write_search(site, ed)
    # A sitemap lists absolute URLs for crawlers, and the theme's 404 page
    # links with absolute paths for a server's missing pages: a book read
    # from a folder has no use for either.
    for name in ("sitemap.xml", "sitemap.xml.gz", "404.html"):
        (site / name).unlink(missing_ok=True)


def write_search(site, ed):
    """assets/book/search.js (page.js with the worker's code: book/search/
    around the theme's worker) and search/search_index.js (the index as a
    script, in place of the theme's search_index.json)."""
    theme_worker = next((site / "assets/javascripts/workers").glob("search.*.min.js"))
    parts = [f"self.__book_edition = {json.dumps(ed)};\n",
             (BOOK / "search/worker_before.js").read_text(encoding="utf-8"),
             # The theme's worker, without its source map comment (the map is not in a blob).
             re.sub(r"//# sourceMappingURL=\S+\s*$", "", theme_worker.read_text(encoding="utf-8")) + "\n"]
    if ed == "zh":
        parts.append((BOOK / "search/worker_cjk.js").read_text(encoding="utf-8"))
    script = (f"var __book_edition = {json.dumps(ed)};\n"
              f"var __book_worker_code = {json.dumps(parts, ensure_ascii=False)};\n"
              + (BOOK / "search/page.js").read_text(encoding="utf-8"))
    dest = site / "assets/book/search.js"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(script, encoding="utf-8")
    # The theme's search_index.json, as a script page.js loads (and only that).
    index = site / "search/search_index.json"
    data = json.loads(index.read_text(encoding="utf-8"))
    (site / "search/search_index.js").write_text(
        "__book_search_index(" + json.dumps(data, ensure_ascii=False) + ");\n", encoding="utf-8")
    index.unlink()
