#!/usr/bin/env bash
# Build the chapters, both editions, as one site to read in a browser.
#
#   scripts/book.sh [--out DIR] [--serve [PORT]]
#
# Reads docs/ (the English edition, at the site's root) and docs/zh/ (the
# Chinese, under zh/) as they are, with MkDocs and its Material theme
# (book/mkdocs.yml, book/mkdocs.zh.yml, book/hooks.py): navigation in
# reading order, search in each edition, a language switch to the same
# chapter in the other, the figures, the mermaid diagrams drawn, and every
# link to the code opening a highlighted copy of the file with an anchor per
# line (code/04_rdma_write/client.cpp.html#L12). The site asks nothing of
# the network: open DIR/index.html from the folder, or serve it.
#
#   --out DIR       where the site goes (default: build-book/ in the checkout);
#                   DIR is emptied first
#   --serve [PORT]  then serve it on http://127.0.0.1:PORT/ (default 8000)
#                   until Ctrl-C
#   -h, --help      show this text
#
# Needs mkdocs, mkdocs-material, python3-pymdownx and mermaid's script
# (scripts/install_deps.sh brings all of them; --no-docs leaves them out).
set -euo pipefail

usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }

# shellcheck source=lib.sh
source "${BASH_SOURCE[0]%/*}/lib.sh"
root=$(repo_root)
out="$root/build-book" serve=0 port=8000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) [[ $# -ge 2 ]] || { echo "book: --out needs a folder" >&2; exit 2; }; out=$2; shift 2 ;;
    --serve) serve=1; shift
             if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then port=$1; shift; fi ;;
    -h|--help) usage; exit 0 ;;
    *) echo "book: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done

# What the book needs, each named with the package that brings it. Debian's
# mkdocs runs on the system's python3, whatever python3 comes first in PATH.
py=/usr/bin/python3
missing=()
[[ -x /usr/bin/mkdocs ]] || missing+=("mkdocs (package mkdocs)")
$py -c 'import mkdocs, material' 2>/dev/null || missing+=("the Material theme (package mkdocs-material)")
$py -c 'import pymdownx, pygments' 2>/dev/null || missing+=("pymdownx and pygments (packages python3-pymdownx, python3-pygments)")
mermaid=$(book_mermaid_path)
[[ -s "$mermaid" ]] || missing+=("mermaid's script ($mermaid, fetched once by scripts/install_deps.sh)")
if [[ ${#missing[@]} -gt 0 ]]; then
  {
    echo "book: cannot build the site; missing:"
    printf '  %s\n' "${missing[@]}"
    echo "likely fix: scripts/install_deps.sh (without --no-docs)"
  } >&2
  exit 1
fi

mkdir -p "$out"
out=$(cd "$out" && pwd -P)
case "$out/" in
  "$root/docs/"*|"$root/book/"*) echo "book: --out $out is inside the sources; choose a folder outside docs/ and book/" >&2; exit 2 ;;
esac
started=$SECONDS
# English at the root (MkDocs empties it first), then Chinese under zh/.
export BOOK_MERMAID="$mermaid"
/usr/bin/mkdocs build --quiet --clean --config-file "$root/book/mkdocs.yml" --site-dir "$out"
/usr/bin/mkdocs build --quiet --clean --config-file "$root/book/mkdocs.zh.yml" --site-dir "$out/zh"
pages=$(find "$out" -name '*.html' -not -path "$out/code/*" | wc -l)
code=$(find "$out/code" -name '*.html' | wc -l)
echo "book: $pages pages of chapters and $code of code in $out ($((SECONDS - started)) s)"
echo "book: open file://$out/index.html (中文: file://$out/zh/index.html), or scripts/book.sh --serve"

if [[ $serve == 1 ]]; then
  echo "book: serving $out on http://127.0.0.1:$port/ (Ctrl-C ends it)"
  exec $py -m http.server --bind 127.0.0.1 --directory "$out" "$port"
fi
