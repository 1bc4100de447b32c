#!/usr/bin/env python3
"""Unit suite: the code a chapter shows is the code the stages build.

  chapter_quotes.py SOURCE_ROOT
  chapter_quotes.py --self-test

Every line of every ```cpp block in docs/*.md must be a line of the sources:
the git-tracked .cpp, .hpp, .h and .cc files under 0?_*/ and common/. A
chapter that quotes a line the program no longer has (renamed, reworded,
moved to a helper) teaches code nobody can find; this test says which line.

Both sides are normalised before comparing: leading and trailing whitespace
stripped, runs of whitespace inside a line collapsed to one space, and a
trailing // comment dropped (one that is not inside a "string literal"), so a
chapter may annotate a line or indent it differently. A line that is empty
once normalised (blank, or a comment only) is not checked. A line "..." is
checked like any other, and fails: a block that leaves code out is a sketch.

A block is a sketch when the last non-empty line before its opening fence is

  <!-- sketch: REASON -->

(REASON is required), in the place and style of the <!-- norun: why --> and
<!-- exit: N --> comments before ```console blocks (common/tools/chapter.hpp).
Sketches are not checked. A sketch marker without a reason, or one that is not
right before a ```cpp block, is an error.

Prints each offending line as "docs/FILE.md:LINE: not in the sources: LINE AS
WRITTEN", then "N cpp blocks, M lines checked, K not in the sources" (N counts
the blocks checked, sketches apart). Exits 1 if any line is not in the
sources, on an error, or when no cpp block was checked at all (the test must
not pass for want of anything to check). Before the chapters, a self-test of
the matching on built-in examples runs (alone with --self-test); if it fails,
nothing else is trusted.
"""

import glob
import os
import re
import subprocess
import sys

SOURCE_DIR = re.compile(r"^(0[^/]_[^/]*|common)/")
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc")
SKETCH = re.compile(r"^<!--\s*sketch\b(?P<colon>:?)(?P<reason>.*?)-->$")
FENCE = "```"


def strip_comment(line):
    """The line without a trailing // comment; a // inside "..." is not one."""
    in_string = False
    i = 0
    while i < len(line):
        c = line[i]
        if in_string:
            if c == "\\":
                i += 1  # the escaped character, a quote included
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif line.startswith("//", i):
            return line[:i]
        i += 1
    return line


def normalise(line):
    """The form both sides are compared in: no trailing // comment, no outer
    whitespace, one space for each run of whitespace inside."""
    return " ".join(strip_comment(line).split())


def source_lines(root):
    """The normalised lines of the tracked sources under 0?_*/ and common/."""
    files = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                           text=True, check=True).stdout.split("\0")
    files = [f for f in files if SOURCE_DIR.match(f) and f.endswith(SOURCE_SUFFIXES)]
    lines = set()
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as src:
            lines.update(normalise(line) for line in src)
    lines.discard("")
    return files, lines


def sketch_reason(line):
    """None if the line is no sketch marker, else its reason ("" if it has none)."""
    m = SKETCH.match(line.strip())
    if not m:
        return None
    return m.group("reason").strip() if m.group("colon") else ""


def check_chapter(name, text, sources):
    """Checks one chapter's cpp blocks against the set of normalised source lines.
    Returns (blocks checked, sketches, lines checked, messages, lines not in the
    sources, errors)."""
    blocks = sketches = checked = missing = errors = 0
    messages = []
    lines = text.split("\n")
    previous, previous_at = "", 0  # the last non-empty line outside a block
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        if not line.startswith(FENCE):
            if line.strip():
                if sketch_reason(previous) is not None:
                    messages.append(f"{name}:{previous_at}: a sketch marker must be right before a ```cpp block")
                    errors += 1
                previous, previous_at = line, i + 1
            i += 1
            continue
        # A fenced block: only ```cpp ones are checked, but every block is
        # skipped whole, so a fence inside a ```text block opens nothing.
        opening = i + 1
        is_cpp = line == FENCE + "cpp"
        reason = sketch_reason(previous)
        if reason is not None and not is_cpp:
            messages.append(f"{name}:{previous_at}: a sketch marker must be right before a ```cpp block")
            errors += 1
        elif reason == "":
            messages.append(f"{name}:{previous_at}: a sketch marker needs a reason: <!-- sketch: REASON -->")
            errors += 1
        sketch = is_cpp and bool(reason)
        previous, previous_at = "", 0
        i += 1
        body = []
        while i < len(lines) and lines[i].rstrip() != FENCE:
            body.append((i + 1, lines[i].rstrip("\r")))
            i += 1
        if i == len(lines):
            messages.append(f"{name}:{opening}: the block opened here is never closed")
            errors += 1
        i += 1  # the closing fence
        if not is_cpp:
            continue
        if sketch:
            sketches += 1
            continue
        blocks += 1
        for number, written in body:
            normal = normalise(written)
            if not normal:
                continue
            checked += 1
            if normal not in sources:
                messages.append(f"{name}:{number}: not in the sources: {written}")
                missing += 1
    if sketch_reason(previous) is not None:
        messages.append(f"{name}:{previous_at}: a sketch marker must be right before a ```cpp block")
        errors += 1
    return blocks, sketches, checked, messages, missing, errors


def self_test():
    """The matching on built-in examples. Returns the failures, one line each."""
    sources = {normalise(s) for s in [
        "    int rc = ibv_query_port(ctx, port, &attr);",
        '  std::puts("see http://example.org");  // a URL',
        "  if (rc != 0) {",
    ]}
    failures = []

    def expect(what, text, checked, missing, errors=0, sketches=0):
        got = check_chapter("t.md", text, sources)
        want = (checked, missing, errors, sketches)
        have = (got[2], got[4], got[5], got[1])
        if have != want:
            failures.append(f"self-test: {what}: (checked, missing, errors, sketches) {have}, expected {want}: "
                            + " | ".join(got[3]))

    expect("a line with a trailing comment matches its source line",
           "```cpp\nint rc = ibv_query_port(ctx,  port, &attr);  // the port's state\n```\n", 1, 0)
    expect("a line differing by one identifier does not match",
           "```cpp\nint rc = ibv_query_port(ctx, port, &pattr);\n```\n", 1, 1)
    expect("a // inside a string is not a comment",
           '```cpp\nstd::puts("see http://example.org");\n```\n', 1, 0)
    expect("a // inside a string is kept, so a shorter string does not match",
           '```cpp\nstd::puts("see http://");\n```\n', 1, 1)
    expect("comment-only and blank lines are not checked",
           "```cpp\n// the call\n\n  if (rc != 0) {\n```\n", 1, 0)
    expect('"..." is an elision, not a line of the sources',
           "```cpp\nif (rc != 0) {\n...  // and so on\n```\n", 2, 1)
    expect("a sketch-marked block is skipped",
           "<!-- sketch: the idea, not the code -->\n\n```cpp\nmade_up();\n...\n```\n", 0, 0, sketches=1)
    expect("a sketch marker with an empty reason is an error",
           "<!-- sketch: -->\n```cpp\nif (rc != 0) {\n```\n", 1, 0, errors=1)
    expect("a sketch marker with no colon is an error",
           "<!-- sketch -->\n```cpp\nif (rc != 0) {\n```\n", 1, 0, errors=1)
    expect("a sketch marker before prose is an error, and the block after it is checked",
           "<!-- sketch: why -->\nSome prose.\n\n```cpp\nmade_up();\n```\n", 1, 1, errors=1)
    expect("a sketch marker before a console block is an error",
           "<!-- sketch: why -->\n```console\n$ true\n```\n", 0, 0, errors=1)
    expect("a ```cpp line inside another block opens nothing",
           "```text\n```cpp\nmade_up();\n```\n", 0, 0)
    expect("only a fence exactly ```cpp opens a checked block",
           "```cpp title\nmade_up();\n```\n", 0, 0)
    expect("a block never closed is an error",
           "```cpp\nif (rc != 0) {\n", 1, 0, errors=1)
    return failures


def main():
    if sys.argv[1:] == ["--self-test"]:
        failures = self_test()
        print("\n".join(failures) if failures else "ok: the self-test's examples match as they should")
        return 1 if failures else 0
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    failures = self_test()
    if failures:
        print("\n".join(failures))
        print("the matching itself is broken: the chapters were not checked")
        return 1

    root = sys.argv[1]
    files, sources = source_lines(root)
    chapters = sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    blocks = sketches = checked = missing = errors = 0
    for path in chapters:
        with open(path, encoding="utf-8") as chapter:
            text = chapter.read()
        b, s, c, messages, m, e = check_chapter(os.path.relpath(path, root), text, sources)
        blocks, sketches, checked, missing, errors = blocks + b, sketches + s, checked + c, missing + m, errors + e
        for message in messages:
            print(message)
    if not files:
        print(f"no source file (.cpp .hpp .h .cc) tracked under 0?_*/ or common/ in {root}")
        errors += 1
    if blocks == 0:
        print(f"no cpp block checked in {len(chapters)} chapters (docs/*.md): nothing was compared")
        errors += 1
    if sketches:
        print(f"{sketches} sketch blocks not checked")
    print(f"{blocks} cpp blocks, {checked} lines checked, {missing} not in the sources")
    return 1 if missing or errors else 0


if __name__ == "__main__":
    sys.exit(main())
