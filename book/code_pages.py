"""The book's code pages: every tracked file outside docs/, highlighted, one
anchor per line (code/04_rdma_write/client.cpp.html#L12, as a forge numbers
them), and a listing per directory (code/04_rdma_write/index.html), where a
symbolic link (each stage's run.sh) shows what it points to and leads there.
Each page names the chapters that link to it, in both editions.

Plain HTML with a stylesheet of its own and no script: a page the chapters
link to must open from a local folder, and the browser suite loads each.
"""

import html
import os
import posixpath

from pygments.lexers import get_lexer_for_filename, TextLexer
from pygments.token import STANDARD_TYPES
from pygments.formatters import HtmlFormatter
from pygments.util import ClassNotFound

CSS = """
body { font: 14px/1.5 sans-serif; margin: 0; color: #1f2328; }
header { padding: .6em 1em; border-bottom: 1px solid #d0d7de; background: #f6f8fa;
         position: sticky; top: 0; z-index: 1; }
header p { margin: .3em 0 0; }
header a { color: #0969da; text-decoration: none; }
main { padding: .5em 1em 2em; }
table.code { border-collapse: collapse; font: 13px/1.45 monospace; }
table.code td.n { text-align: right; padding: 0 .8em 0 .4em; user-select: none; vertical-align: top; }
table.code td.n a { color: #6e7781; text-decoration: none; }
table.code td.l { white-space: pre; padding-left: .8em; border-left: 1px solid #d0d7de; }
table.code tr:target { background: #fff8c5; }
table.code tr { scroll-margin-top: 6em; }
ul.listing { list-style: none; padding-left: 0; font-family: monospace; }
p.note { color: #57606a; }
"""

# Files the site has no use showing as text.
BINARY_SUFFIXES = (".png", ".jpg", ".gif", ".pdf", ".pcap", ".pcapng", ".gz", ".xz", ".ko")


def page_path(repo_path):
    """The site path of a repository file's page."""
    return posixpath.join("code", repo_path + ".html")


def dir_page_path(repo_dir):
    return posixpath.join("code", repo_dir, "index.html") if repo_dir else "code/index.html"


def shown(repo_path):
    """A file the site shows: not the chapters (the book is made of them),
    not a binary, not the checkout's hidden files (.ci/, .gitignore)."""
    return (not repo_path.startswith("docs/") and not repo_path.endswith(BINARY_SUFFIXES)
            and not any(part.startswith(".") for part in repo_path.split("/")))


def link_target(repo, repo_path):
    """Where a tracked symbolic link points, as a path in the repository, or
    None when it points outside it."""
    target = posixpath.normpath(posixpath.join(posixpath.dirname(repo_path), os.readlink(repo / repo_path)))
    return None if target.startswith("../") else target


def lines_of(path, text):
    """The file's lines as highlighted HTML, one string per line."""
    try:
        lexer = get_lexer_for_filename(posixpath.basename(path), stripnl=False, ensurenl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False, ensurenl=False)
    rows, row = [], []
    for ttype, value in lexer.get_tokens(text):
        css = None
        while ttype is not None and css is None:
            css = STANDARD_TYPES.get(ttype)
            ttype = ttype.parent
        pieces = value.split("\n")
        for i, piece in enumerate(pieces):
            if i:
                rows.append("".join(row))
                row = []
            if piece:
                escaped = html.escape(piece, quote=False)
                row.append(f'<span class="{css}">{escaped}</span>' if css else escaped)
    if row or not rows:
        rows.append("".join(row))
    if text.endswith("\n") and rows and rows[-1] == "":
        rows.pop()
    return rows


def header(repo_path, depth, is_dir, readers=()):
    """The breadcrumbs, and the chapters that link here (readers: their
    English and Chinese site paths and titles)."""
    up = "../" * depth
    crumbs = [f'<a href="{up}index.html">The book</a> · <a href="{up}zh/index.html">本书</a> · '
              f'<a href="{up}code/index.html">code</a>']
    parts = repo_path.split("/") if repo_path else []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if last and not is_dir:
            crumbs.append(html.escape(part))
        else:
            crumbs.append(f'<a href="{up}{dir_page_path("/".join(parts[: i + 1]))}">{html.escape(part)}</a>')
    text = " / ".join(crumbs)
    if readers:
        chapters = []
        for en, title, zh in readers:
            item = f'<a href="{up}{en}">{html.escape(title)}</a>'
            if zh:
                item += f' (<a href="{up}{zh}">中文</a>)'
            chapters.append(item)
        text += "<p>Read with: " + " · ".join(chapters) + "</p>"
    return text


def document(title, depth, head, body):
    up = "../" * depth
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>{html.escape(title)} · rdma-tutorial's code</title>"
            f"<link rel=\"stylesheet\" href=\"{up}assets/code.css\"></head>\n"
            f"<body><header>{head}</header><main>\n{body}\n</main></body></html>\n")


def write_file_page(site, repo, path, readers):
    dest = site / page_path(path)
    depth = page_path(path).count("/")
    raw = (repo / path).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        body = f'<p class="note">{html.escape(path)} is not text ({len(raw)} bytes).</p>'
    else:
        rows = lines_of(path, text)
        body = "<table class=\"code\">\n" + "\n".join(
            f'<tr id="L{n}"><td class="n"><a href="#L{n}">{n}</a></td><td class="l">{row}</td></tr>'
            for n, row in enumerate(rows, 1)) + "\n</table>"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(document(path, depth, header(path, depth, False, readers), body), encoding="utf-8")


def write_dir_page(site, directory, entries, readers):
    """entries: (name, is_dir, where a link points or None)."""
    dest = site / dir_page_path(directory)
    depth = dir_page_path(directory).count("/")
    up = "../" * depth
    items = []
    for name, is_dir, points_to in sorted(entries, key=lambda e: (not e[1], e[0])):
        full = posixpath.join(directory, name) if directory else name
        shown_as = points_to or full
        target = dir_page_path(shown_as) if is_dir else page_path(shown_as)
        label = html.escape(name + ("/" if is_dir else ""))
        if points_to:
            label += f" → {html.escape(points_to + ('/' if is_dir else ''))}"
        items.append(f'<li><a href="{up}{target}">{label}</a></li>')
    body = '<ul class="listing">\n' + "\n".join(items) + "\n</ul>"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(document(directory or "all files", depth, header(directory, depth, True, readers), body),
                    encoding="utf-8")


def write_all(site, tracked, repo, readers):
    """Every shown file's page and every directory's listing, under
    site/code/; readers maps a repository path to the chapters linking it."""
    files, links = [], []
    for f in tracked:
        if not shown(f):
            continue
        if (repo / f).is_symlink():
            target = link_target(repo, f)
            if target is not None and (repo / target).exists():
                links.append((f, target, (repo / target).is_dir()))
        elif (repo / f).is_file():
            files.append(f)
    listing = {}

    def add(path, is_dir, points_to=None):
        parts = path.split("/")
        for i in range(len(parts)):
            parent = "/".join(parts[:i])
            last = i == len(parts) - 1
            listing.setdefault(parent, set()).add(
                (parts[i], is_dir if last else True, points_to if last else None))

    for f in files:
        write_file_page(site, repo, f, readers.get(f, ()))
        add(f, False)
    for f, target, is_dir in links:
        add(f, is_dir, target)
    for directory, entries in listing.items():
        write_dir_page(site, directory, entries, readers.get(directory, ()))
    css = CSS + HtmlFormatter(style="default").get_style_defs("table.code")
    (site / "assets").mkdir(parents=True, exist_ok=True)
    (site / "assets/code.css").write_text(css, encoding="utf-8")
    return len(files)
