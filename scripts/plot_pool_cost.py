#!/usr/bin/env python3
"""Draw stage 09's cost table as an SVG: registering per message against a pool.

Reads the output of the stage 09 program (a file, or standard input), keeps
its machine lines

    pool-cost <bytes> <reg_us> <pool_us> <ratio>

and draws both costs against the buffer size: sizes on a log2 axis, times on a
log10 axis, because both span orders of magnitude and a straight line on such
axes is the power law a reader should look for (flat: the cost does not grow
with the size; rising: it grows with the number of pages).

Writes the SVG to standard output, or to FILE with -o. Exits 2 when the input
has no pool-cost line (usually: the wrong file, or the program failed early).
Python 3 standard library only, so the docs build needs nothing installed.
"""

import argparse
import math
import re
import sys
from xml.sax.saxutils import escape

LINE = re.compile(r"^pool-cost\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")

WIDTH, HEIGHT = 760, 460
LEFT, RIGHT, TOP, BOTTOM = 80, 30, 70, 60
TITLE = "Registering per message vs a pre-registered pool"
SERIES = (
    ("ibv_reg_mr + ibv_dereg_mr", "#c0392b"),
    ("pool alloc + release", "#2471a3"),
)
# The program prints microseconds with three decimals: a pool time printed as
# 0.000 was below that, and a log axis cannot show zero. It is drawn at this
# floor instead, which is the most the printed number says.
FLOOR_US = 0.001


def parse(text):
    rows = []
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        size, reg_us, pool_us, ratio = m.groups()
        try:
            row = (int(size), float(reg_us), float(pool_us), float(ratio))
        except ValueError:
            continue  # a malformed line is not data; the others still are
        if row[0] > 0 and all(math.isfinite(v) for v in row[1:]):
            rows.append(row)
    rows.sort()
    return rows


def size_text(size):
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return f"{size >> 20} MiB"
    if size >= 1 << 10 and size % (1 << 10) == 0:
        return f"{size >> 10} KiB"
    return f"{size} B"


def us_text(us):
    return f"{us:g} us"


def render(rows):
    sizes = [r[0] for r in rows]
    times = [max(t, FLOOR_US) for r in rows for t in (r[1], r[2])]
    x_lo, x_hi = math.log2(min(sizes)), math.log2(max(sizes))
    if x_hi == x_lo:  # one size: give the axis some width around it
        x_lo, x_hi = x_lo - 1, x_hi + 1
    y_lo = math.floor(math.log10(min(times)))
    y_hi = math.ceil(math.log10(max(times)))
    if y_hi == y_lo:
        y_hi += 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_of(size):
        return LEFT + (math.log2(size) - x_lo) / (x_hi - x_lo) * plot_w

    def y_of(us):
        return TOP + (y_hi - math.log10(max(us, FLOOR_US))) / (y_hi - y_lo) * plot_h

    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2:.1f}" y="28" text-anchor="middle" font-size="16">{escape(TITLE)}</text>',
    ]

    # Grid and tick labels: one line per decade, one per size measured.
    for decade in range(y_lo, y_hi + 1):
        us = 10.0 ** decade
        y = y_of(us)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{escape(us_text(us))}</text>')
    for size in sizes:
        x = x_of(size)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + plot_h}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{escape(size_text(size))}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 16}" text-anchor="middle">'
               'buffer size (log2 scale)</text>')
    out.append(f'<text transform="translate(20 {TOP + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
               'time per message, microseconds (log10 scale)</text>')

    # The two series, each a polyline with a dot per measurement.
    for column, (_, colour) in enumerate(SERIES, start=1):
        points = " ".join(f"{x_of(r[0]):.1f},{y_of(r[column]):.1f}" for r in rows)
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for r in rows:
            out.append(f'<circle cx="{x_of(r[0]):.1f}" cy="{y_of(r[column]):.1f}" r="3" fill="{colour}"/>')

    # The ratio above each pool point: how many pool messages one
    # registration would pay for.
    for size, _, pool_us, ratio in rows:
        out.append(f'<text x="{x_of(size):.1f}" y="{y_of(pool_us) - 9:.1f}" text-anchor="middle" '
                   f'font-size="10" fill="#555">{ratio:.0f}x</text>')

    # Legend: one row between the title and the plot, where no data can
    # run into it whatever the numbers are.
    x, y = LEFT, 50
    for name, colour in SERIES:
        out.append(f'<line x1="{x}" y1="{y - 4}" x2="{x + 24}" y2="{y - 4}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{x + 30}" y="{y}">{escape(name)}</text>')
        x += 40 + 7 * len(name)
    out.append(f'<text x="{x}" y="{y}" fill="#555">(Nx: the pool is N times cheaper)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(
        description="Turn the 'pool-cost' lines of stage 09's output into an SVG plot.",
        epilog="example: 09_mempool/run.sh | scripts/plot_pool_cost.py -o docs/09-pool-cost.svg")
    parser.add_argument("input", nargs="?", help="the program's output (default: standard input)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the SVG here (default: standard output)")
    args = parser.parse_args()

    if args.input:
        try:
            with open(args.input, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(f"plot_pool_cost: cannot read {args.input}: {e.strerror}", file=sys.stderr)
            return 2
    else:
        text = sys.stdin.read()

    rows = parse(text)
    if not rows:
        where = args.input or "standard input"
        print(f"plot_pool_cost: no 'pool-cost <bytes> <reg_us> <pool_us> <ratio>' lines in {where}; "
              "is it the output of stage 09's cost table?", file=sys.stderr)
        return 2

    svg = render(rows)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(svg)
    else:
        sys.stdout.write(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
