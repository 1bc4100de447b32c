#!/usr/bin/env python3
"""Unit suite: the Chinese edition is in step with the English.

  zh_test.py SOURCE_ROOT

First the checkout itself: scripts/zh_sync.py --check must find no problem
(every English chapter and README has its twin, the same fenced blocks, the
revision recorded is the English's, links resolve, the glossary holds). Then
the check is shown to catch what it is for, on a copy of the docs in a
temporary folder (the code folders linked, not copied): an English paragraph
edited without its translation fails with its section named, until the
translation is stamped; a heading added or removed is named as such; a
changed line in a Chinese code block fails with the block's number and line,
a mermaid label may differ but not an arrow; a rendering the glossary rules
out fails, and so does a common usage it lists (named as such, with the
book's rendering), but neither inside inline code; a broken anchor and a
missing twin are named. Prints "ok: ..." per case and exits 1 on the first that fails.
"""

import contextlib
import io
import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import zh_sync  # noqa: E402

failures = 0


def expect(name, condition, detail=""):
    global failures
    if condition:
        print(f"ok: {name}")
    else:
        failures += 1
        print(f"FAILED: {name}" + (f"\n  {detail}" if detail else ""))


def problems(root, only=None):
    return zh_sync.check(root, only)[1].problems


def edit(root, rel, old, new, count=1):
    path = os.path.join(root, rel)
    text = zh_sync.read(path)
    assert old in text, f"{rel} has no {old!r} to edit"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, count))


def copy_tree(tmp):
    """docs/ and the READMEs copied, every other top-level entry linked."""
    for entry in os.listdir(ROOT):
        if entry in (".git", "build"):
            continue
        src, dst = os.path.join(ROOT, entry), os.path.join(tmp, entry)
        if entry == "docs":
            shutil.copytree(src, dst)
        elif entry in ("README.md", "README.zh.md"):
            shutil.copy(src, dst)
        else:
            os.symlink(src, dst)


def first_prose_line(rel_lines):
    """(line index, heading key of its section) of the first plain paragraph
    line after the title, outside fences, for the edit case."""
    lines = rel_lines
    sections = zh_sync.sections(lines)
    pos = 0
    for key, heading, text in sections:
        n = text.count("\n") + 1
        if heading.startswith("## "):
            for k in range(pos + 1, pos + n):
                if re.match(r"^[A-Z][a-z]", lines[k]) and k in dict(zh_sync.lines_outside_fences(lines)):
                    return k, key
        pos += n
    raise AssertionError("no paragraph found")


# --- the checkout ---------------------------------------------------------

found = problems(ROOT)
expect("the Chinese edition in this checkout is in step with the English (scripts/zh_sync.py --check)",
       not found, "\n  ".join(found[:40]) + (f"\n  ... {len(found) - 40} more" if len(found) > 40 else ""))

# GitHub's anchors, which the section links rely on.
for heading, anchor in [("Ports — `ports.cpp`", "ports--portscpp"),
                        ("How fast", "how-fast"),
                        ("RDMA Write：目标端什么也看不到", "rdma-write目标端什么也看不到"),
                        ("线上（`tshark`）", "线上tshark")]:
    expect(f"the anchor of {heading!r} is #{anchor}", zh_sync.slug(heading) == anchor, zh_sync.slug(heading))

# --- what the check catches, on a copy -------------------------------------

chapter, twin = "docs/04-rdma-write.md", "docs/zh/04-rdma-write.md"
with tempfile.TemporaryDirectory() as tmp:
    copy_tree(tmp)
    before = problems(tmp)
    expect("the copy starts in step", not before, "\n  ".join(before[:10]))

    en = zh_sync.read(os.path.join(tmp, chapter)).split("\n")
    k, key = first_prose_line(en)
    edit(tmp, chapter, en[k], en[k].replace(" ", " really ", 1))
    found = problems(tmp)
    expect(f"an English paragraph edited alone fails, naming its section {key!r}",
           any(p.startswith(twin) and repr(key) in p and "changed since" in p for p in found),
           "\n  ".join(found))
    expect("and names no section that did not change",
           all(p.count("', '") == 0 for p in found if "changed since" in p), "\n  ".join(found))

    with contextlib.redirect_stdout(io.StringIO()):
        zh_sync.stamp(tmp, twin)
    found = problems(tmp)
    expect("once the translation is stamped, the check passes again", not found, "\n  ".join(found))

    edit(tmp, chapter, "\n## ", "\n## A section the translation lacks\n\nNew words.\n\n## ")
    found = problems(tmp)
    expect("a section added to the English is named as added",
           any("'## A section the translation lacks' (added)" in p for p in found), "\n  ".join(found))
    edit(tmp, chapter, "\n## A section the translation lacks\n\nNew words.\n", "")
    found = problems(tmp)
    expect("taking it out again restores the recorded revision", not found, "\n  ".join(found))

    # Every English file opens with a link to its Chinese twin.
    first = zh_sync.read(os.path.join(tmp, chapter)).split("\n")[0]
    edit(tmp, chapter, first, "English only")
    found = problems(tmp)
    expect("an English chapter whose first line does not link its Chinese twin fails",
           any(p.startswith(f"{chapter}:1") and twin in p for p in found), "\n  ".join(found))
    edit(tmp, chapter, "English only", first)

    # A changed line in a Chinese code block.
    zh = zh_sync.read(os.path.join(tmp, twin)).split("\n")
    blocks = zh_sync.fenced_blocks(zh)
    n, (line, info, _, body) = next((i, b) for i, b in enumerate(blocks, 1) if b[1] == "console" and b[3])
    edit(tmp, twin, "\n".join(body), "\n".join(body[:-1] + [body[-1] + " "]))
    found = problems(tmp)
    expect(f"a trailing space in the Chinese block {n} fails, naming block {n} and its line",
           any(p.startswith(f"{twin}:{line}") and f"block {n} differs" in p for p in found),
           "\n  ".join(found))
    edit(tmp, twin, "\n".join(body[:-1] + [body[-1] + " "]), "\n".join(body))
    refused = False
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            edit(tmp, twin, "\n".join(body), "\n".join(body[:-1]))
            zh_sync.stamp(tmp, twin)
    except SystemExit as e:
        refused = "not stamped" in str(e)
    expect("--stamp refuses a file whose blocks are not the English's", refused)
    edit(tmp, twin, "\n".join(body[:-1]), "\n".join(body))

    # Mermaid: labels may differ, the diagram may not.
    mermaid = next(b for b in blocks if b[1] == "mermaid")
    arrow_line = next(x for x in mermaid[3] if "->>" in x)
    edit(tmp, twin, arrow_line, arrow_line.split(": ")[0] + ": 标签已改")
    expect("a mermaid label translated differently passes", not problems(tmp))
    edit(tmp, twin, arrow_line.split(": ")[0] + ": 标签已改", arrow_line.replace("->>", "-->>"))
    found = problems(tmp)
    expect("a mermaid arrow changed fails", any("differs" in p for p in found), "\n  ".join(found))
    edit(tmp, twin, arrow_line.replace("->>", "-->>"), arrow_line)

    # The glossary: a rendering it rules out.
    rows = zh_sync.glossary(tmp)
    line, english, chosen, avoid, _ = next(r for r in rows if r[3] and not any(r[3][0] in c for c in r[2]))
    title = next(x for x in zh_sync.read(os.path.join(tmp, twin)).split("\n") if x.startswith("# "))
    edit(tmp, twin, title, title + "\n\n这里写成了" + avoid[0] + "。")
    found = problems(tmp)
    expect(f"{avoid[0]!r} in prose fails, pointing at the glossary's {chosen[0]!r}",
           any(f"{avoid[0]!r} for {english!r} is not used" in p and f"glossary.md:{line}" in p
               for p in found), "\n  ".join(found))
    edit(tmp, twin, "这里写成了" + avoid[0] + "。", "代码里的 `" + avoid[0] + "` 不算。")
    found = problems(tmp)
    expect("the same word inside inline code passes", not found, "\n  ".join(found))

    # A common usage the glossary lists: not wrong, but not this book's word.
    line, english, chosen, _, common = next(r for r in rows if r[4] and not any(r[4][0] in c for c in r[2]))
    edit(tmp, twin, "代码里的 `" + avoid[0] + "` 不算。", "这里写成了" + common[0] + "。")
    found = problems(tmp)
    expect(f"the common usage {common[0]!r} in prose fails, naming the book's {chosen[0]!r}",
           any(f"{common[0]!r} for {english!r} is common usage, but this book writes {' / '.join(chosen)}" in p
               and f"glossary.md:{line}" in p for p in found), "\n  ".join(found))
    edit(tmp, twin, "这里写成了" + common[0] + "。", "代码里的 `" + avoid[0] + "` 不算。")
    found = problems(tmp)
    expect("and once it is gone, the check passes again", not found, "\n  ".join(found))

    # Links: an anchor that is no heading, a twin that is missing.
    edit(tmp, twin, "代码里的 `" + avoid[0] + "` 不算。", "见[这里](#没有这个标题)。")
    found = problems(tmp)
    expect("a link to a heading that does not exist fails",
           any("#没有这个标题" in p for p in found), "\n  ".join(found))
    os.remove(os.path.join(tmp, twin))
    found = problems(tmp)
    expect("an English chapter without its Chinese twin fails",
           any(p.startswith(chapter) and "no Chinese twin" in p for p in found), "\n  ".join(found))

print(f"zh_test: {'all cases held' if not failures else f'{failures} failed'}")
sys.exit(1 if failures else 0)
