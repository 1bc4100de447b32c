#!/usr/bin/env python3
"""The chapters' figures: every committed CSV under docs/data/ draws the
committed SVG under docs/img/ byte for byte (a picture older than its data
fails), and scripts/plot.py refuses a malformed CSV with its line number.
No device needed. The comparison is skipped (exit 77) without matplotlib,
or with another matplotlib than the one that drew the figures; the
refusals are checked either way.

  plot_test.py SOURCE_ROOT
"""

import csv
import glob
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
plot = os.path.join(root, "scripts", "plot.py")
data = os.path.join(root, "docs", "data")
failures = 0


def expect(ok, what):
    global failures
    print(("ok: " if ok else "FAIL: ") + what)
    failures += 0 if ok else 1


def run(*args):
    return subprocess.run([sys.executable, plot, *args], capture_output=True, text=True)


figures = sorted(os.path.splitext(os.path.basename(f))[0] for f in glob.glob(os.path.join(data, "*.csv")))
svgs = sorted(os.path.splitext(os.path.basename(f))[0] for f in glob.glob(os.path.join(root, "docs", "img", "*.svg")))
expect(len(figures) >= 7, f"at least seven figures' data in docs/data ({len(figures)})")
expect(figures == svgs, f"one SVG per CSV (CSVs {figures}, SVGs {svgs})")

# Malformed copies of 04's table, each refused with the line at fault.
with open(os.path.join(data, "04-write-rate.csv"), encoding="utf-8") as f:
    good = f.read().splitlines()
header_row = next(i for i, line in enumerate(good) if not line.startswith("#"))
first_row = header_row + 1


def with_field(line, i, value):
    fields = line.split(",")
    fields[i] = value
    return ",".join(fields)


cases = [
    ("a field that is not a number", first_row, lambda rows: with_field(rows[first_row], 1, "fast"), "not a number"),
    ("a row with a field missing", first_row + 1, lambda rows: rows[first_row + 1].rsplit(",", 1)[0],
     "fields, the header has"),
    ("a negative rate", first_row + 2, lambda rows: with_field(rows[first_row + 2], 4, "-1"), "finite number >= 0"),
    ("another header row", header_row, lambda rows: with_field(rows[header_row], 4, "ours_rate"),
     "the header row must be"),
    ("a median outside its spread", first_row, lambda rows: with_field(rows[first_row], 4, "1000"),
     "lies outside its spread"),
    ("a comment that is not '# key: value'", 1, lambda rows: "# measured on a Tuesday", "a comment line must be"),
]
for what, index, change, message in cases:
    rows = list(good)
    rows[index] = change(rows)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "04-write-rate.csv"), "w", encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")
        r = run("--data", tmp, "--out", tmp, "04-write-rate")
        expect(r.returncode == 2 and f"04-write-rate.csv:{index + 1}: " in r.stderr and message in r.stderr,
               f"{what} is refused at line {index + 1}: exit {r.returncode}, {r.stderr.strip()!r}")
        expect(not os.path.exists(os.path.join(tmp, "04-write-rate.svg")), f"{what}: no picture drawn")
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "04-write-rate.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(line for line in good if not line.startswith("# kernel:")) + "\n")
    r = run("--data", tmp, "--out", tmp, "04-write-rate")
    expect(r.returncode == 2 and "lacks '# kernel: ...'" in r.stderr, f"a header without the kernel is refused: {r.stderr.strip()!r}")
# A second kernel's table beside the first (bench.sh --second-kernel): drawn
# when it is of the same run, refused when it is not.
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "04-write-rate.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(good) + "\n")
    alone = run("--data", tmp, "--out", os.path.join(tmp, "alone"), "04-write-rate")
    os.mkdir(os.path.join(tmp, "linux-9.9"))
    other = [line.replace("# kernel: Linux ", "# kernel: Linux 9.9-") if line.startswith("# kernel:") else line
             for line in good]
    with open(os.path.join(tmp, "linux-9.9", "04-write-rate.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(other) + "\n")
    beside = run("--data", tmp, "--out", os.path.join(tmp, "beside"), "04-write-rate")
    drawn = {}
    for name in ("alone", "beside"):
        path = os.path.join(tmp, name, "04-write-rate.svg")
        drawn[name] = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    expect(alone.returncode == 0 and beside.returncode == 0 and "Linux 9.9" in drawn["beside"]
           and "Linux 9.9" not in drawn["alone"], "another kernel's table of the same run is drawn beside the first")
    with open(os.path.join(tmp, "linux-9.9", "04-write-rate.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(re.sub(r"^# date: .*", "# date: 1999-01-01", line) for line in other) + "\n")
    r = run("--data", tmp, "--out", tmp, "04-write-rate")
    expect(r.returncode == 2 and "linux-9.9/04-write-rate.csv:1: " in r.stderr and "not the same run" in r.stderr,
           f"another kernel's table of another day is refused: {r.stderr.strip()!r}")
# Every run (DATA/runs/NAME.csv, bench.sh's runs_csv): drawn when it is of
# the same run, refused when it is not; a run that printed nothing is empty.
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "04-write-rate.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(good) + "\n")
    os.mkdir(os.path.join(tmp, "runs"))
    heading = [line for line in good[:header_row] if not line.startswith("# what:")]
    runs = heading + ["size_bytes,turn,program,mbps,mpps"]
    for line in good[first_row:]:
        v = line.split(",")
        runs += [f"{v[0]},1,04 rdma_write,{v[1]},{v[4]}", f"{v[0]},1,04 ib_write_bw,{v[7]},{v[10]}",
                 f"{v[0]},2,04 rdma_write,{v[2]},{v[5]}", f"{v[0]},2,04 ib_write_bw,,"]
    with open(os.path.join(tmp, "runs", "04-write-rate.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(runs) + "\n")
    r = run("--data", tmp, "--out", tmp, "04-write-rate")
    svg = open(os.path.join(tmp, "04-write-rate.svg"), encoding="utf-8").read() if r.returncode == 0 else ""
    expect(r.returncode == 0 and "(in turns)" in svg and "Small dots: every run" in svg,
           f"every run of the same day is drawn, the ratio in turns: exit {r.returncode} {r.stderr.strip()}")
    with open(os.path.join(tmp, "runs", "04-write-rate.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(re.sub(r"^# date: .*", "# date: 1999-01-01", line) for line in runs) + "\n")
    r = run("--data", tmp, "--out", tmp, "04-write-rate")
    expect(r.returncode == 2 and "runs/04-write-rate.csv:1: " in r.stderr and "not the same run" in r.stderr,
           f"runs of another day are refused: {r.stderr.strip()!r}")
# 10-loss: where every run of a program failed, bench.sh leaves that
# program's numbers empty and says why in the note. Such a point is drawn
# (a cross at the foot of the panel), not refused; an empty number anywhere
# else still is.
with open(os.path.join(data, "10-loss.csv"), encoding="utf-8") as f:
    loss = f.read().splitlines()
loss_header = next(i for i, line in enumerate(loss) if not line.startswith("#"))
loss_columns = next(csv.reader([loss[loss_header]]))


def loss_row(line, **changes):
    """LINE of 10-loss.csv with the named fields replaced."""
    fields = dict(zip(loss_columns, next(csv.reader([line]))))
    fields.update(changes)
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([fields[c] for c in loss_columns])
    return out.getvalue()


last = len(loss) - 1  # the highest loss rate's largest size
all_failed = {c: "" for c in loss_columns if c.startswith("perftest_") and c != "perftest_failed"}
all_failed.update(perftest_failed="5", note="ib_write_bw: 5 of 5 runs failed (did not end within 30 s)")
for what, index, changes, refused in (
        ("a point whose ib_write_bw runs all failed (its numbers empty, a note)", last, all_failed, None),
        ("an empty iteration count", last, {"iters": ""}, "iters is '', not a number"),
        ("a failed-run count that is not a number", loss_header + 1, {"ours_failed": "some"}, "not a number")):
    rows = list(loss)
    rows[index] = loss_row(rows[index], **changes)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "10-loss.csv"), "w", encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")
        r = run("--data", tmp, "--out", tmp, "10-loss")
        svg = os.path.join(tmp, "10-loss.svg")
        if refused is None:
            drawn = open(svg, encoding="utf-8").read() if os.path.exists(svg) else ""
            expect(r.returncode == 0 and "no run finished" in drawn,
                   f"10-loss: {what} is drawn, marked with a cross: exit {r.returncode} {r.stderr.strip()}")
        else:
            expect(r.returncode == 2 and f"10-loss.csv:{index + 1}: " in r.stderr and refused in r.stderr
                   and not os.path.exists(svg), f"10-loss: {what} is refused at line {index + 1}: {r.stderr.strip()!r}")
r = run("no-such-figure")
expect(r.returncode == 2 and "no figure 'no-such-figure'" in r.stderr, "an unknown figure is refused")

# The committed pictures are what their data draws.
r = run("--check")
print(r.stdout + r.stderr, end="")
if r.returncode == 77 and failures == 0:
    print("skip: the pictures were not compared (above: why); the refusals held")
    sys.exit(77)
expect(r.returncode == 0, "every committed SVG is what its CSV draws (scripts/plot.py --check)")

# ...and the check can fail: one number changed makes that picture stale.
with tempfile.TemporaryDirectory() as tmp:
    tmp = os.path.join(tmp, "data")
    shutil.copytree(data, tmp)  # a second kernel's tables (linux-*/) too
    rows = list(good)
    for i in (4, 5, 6):  # ours_mpps and its spread, doubled
        rows[first_row] = with_field(rows[first_row], i, str(float(rows[first_row].split(",")[i]) * 2))
    with open(os.path.join(tmp, "04-write-rate.csv"), "w", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    r = run("--check", "--data", tmp)
    expect(r.returncode == 1 and "04-write-rate.svg is stale" in r.stderr and "05-latency.svg is what" in r.stdout,
           f"a changed number makes its picture, and only it, stale: exit {r.returncode}")
    # Drawing twice gives the same bytes.
    out1, out2 = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    run("--data", tmp, "--out", out1, "06-greedy")
    run("--data", tmp, "--out", out2, "06-greedy")
    with open(os.path.join(out1, "06-greedy.svg"), "rb") as a, open(os.path.join(out2, "06-greedy.svg"), "rb") as b:
        expect(a.read() == b.read(), "two drawings of one CSV are the same bytes")

print(f"{failures} failed" if failures else "all plot checks held")
sys.exit(1 if failures else 0)
