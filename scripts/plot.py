#!/usr/bin/env python3
"""Draw the chapters' figures from the benchmark's CSVs.

    scripts/plot.py                    every figure: docs/data/NAME.csv -> docs/img/NAME.svg
    scripts/plot.py 04-write-rate      only these figures
    scripts/plot.py --check            draw in memory and compare with the committed SVGs
    scripts/plot.py --data DIR --out DIR

Where DATA/linux-MAJOR.MINOR/NAME.csv exists (scripts/bench.sh
--second-kernel), figures 02, 04 and 05 draw its points beside the main
CSV's, with hollow markers and dashed lines; it must come from the same
run (the same date), or it is refused. Where DATA/runs/NAME.csv (and
DATA/linux-MAJOR.MINOR/runs/NAME.csv) holds every run of 04's or 05's
points, each run is drawn as a dot and the ratio panel gives the median of
the ratios of the runs that took turns; of the same run too.

scripts/bench.sh writes the CSVs: comment lines "# key: value" with the
conditions of the run (figure, date, kernel, device, perftest, repetitions),
then a header row, then one row per point. Each point is the median of the
runs, with its spread in the _min and _max columns. A malformed file is
refused with its line number (exit 2); --check exits 1 naming every stale
picture, and 77 when this matplotlib is not the one that drew them.

The output is the same bytes for the same CSV: a fixed svg.hashsalt, text
kept as text, and no date in the SVG's metadata (the caption names the date
of the measurement, which is data). Needs matplotlib (python3-matplotlib,
installed by scripts/install_deps.sh unless --no-docs).
"""

import argparse
import csv
import io
import math
import os
import re
import sys
import textwrap

HEADER_KEYS = ("figure", "date", "kernel", "device", "perftest", "repetitions")
OURS, PERFTEST, OTHER = "#1f5fa8", "#c0392b", "#6c7a89"


class BadData(Exception):
    """A CSV that cannot be drawn; the message starts with FILE:LINE."""


def size_text(n):
    n = int(n)
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def read_csv(path, columns, text_columns=(), optional=()):
    """The table at PATH: (header dict, list of row dicts). COLUMNS must be
    its header row exactly; every field is a finite number but those in
    TEXT_COLUMNS, and those in OPTIONAL may be empty (None)."""
    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise BadData(f"{name}: cannot read: {e.strerror}") from None
    header, rows, fields = {}, [], None
    for number, line in enumerate(lines, 1):
        where = f"{name}:{number}"
        if not line.strip():
            continue
        if line.startswith("#"):
            m = re.match(r"#\s*([a-z]+):\s*(.*?)\s*$", line)
            if not m:
                raise BadData(f"{where}: a comment line must be '# key: value'")
            header[m.group(1)] = m.group(2)
            continue
        values = next(csv.reader([line]))
        if fields is None:
            if values != list(columns):
                raise BadData(f"{where}: the header row must be {','.join(columns)}")
            fields = values
            continue
        if len(values) != len(fields):
            raise BadData(f"{where}: {len(values)} fields, the header has {len(fields)}")
        row = {}
        for key, value in zip(fields, values):
            if value == "" and key in optional:
                row[key] = None
            elif key in text_columns:
                if not value:
                    raise BadData(f"{where}: {key} is empty")
                row[key] = value
            else:
                try:
                    row[key] = float(value)
                except ValueError:
                    raise BadData(f"{where}: {key} is '{value}', not a number") from None
                if not math.isfinite(row[key]) or row[key] < 0:
                    raise BadData(f"{where}: {key} is '{value}', not a finite number >= 0")
        for key in fields:  # a median outside its own spread is not a bench.sh row
            lo, hi = row.get(key + "_min"), row.get(key + "_max")
            if row.get(key) is not None and lo is not None and hi is not None and not lo <= row[key] <= hi:
                raise BadData(f"{where}: {key} {row[key]:g} lies outside its spread {lo:g} to {hi:g}")
        rows.append(row)
    missing = [k for k in HEADER_KEYS if k not in header]
    if missing:
        raise BadData(f"{name}:1: the header lacks '# {missing[0]}: ...'")
    if header["figure"] != os.path.splitext(name)[0]:
        raise BadData(f"{name}:1: '# figure: {header['figure']}' in a file named {name}")
    if fields is None:
        raise BadData(f"{name}:{len(lines)}: no header row")
    if not rows:
        raise BadData(f"{name}:{len(lines)}: no data rows")
    return header, rows


def caption(fig, header, also=()):
    """Two lines under the plot (three beside another kernel): where and how it was measured."""
    lines = [header["device"],
             f"{header['kernel']}, perftest {header['perftest']}, repetitions {header['repetitions']}, "
             f"measured {header['date']} by scripts/bench.sh. Only ratios on the same device mean anything."]
    lines += [f"Hollow markers, dashed: {h['kernel']} in the same run and the same kind of guest." for h, _ in also]
    if "turns" in header:
        lines.append("Small dots: every run (each set a little aside, one program's left of the next's); the programs "
                     "took turns, and a ratio 'in turns' is the median of each turn's ratio, its bar their spread.")
    lines = [part for line in lines for part in textwrap.wrap(line, 150)]
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=6.5, color="#555555", va="bottom")
    # Room for the caption and the x axis's label above it.
    fig.subplots_adjust(bottom=(0.6 + 0.1 * len(lines)) / fig.get_figheight())


def size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    # Past eight sizes, every other label, so they do not run together.
    step = 2 if len(sizes) > 8 else 1
    ax.set_xticklabels([size_text(s) if i % step == 0 else "" for i, s in enumerate(sizes)], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel("message size")


def log_panel(ax, ylabel):
    """A panel whose values span decades: log y, labelled, gridded."""
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)


def series(ax, rows, x, y, label, color, style="-", marker="o", hollow=False):
    """A median line with its spread; HOLLOW for the second kernel's points."""
    xs = [r[x] for r in rows]
    ys = [r[y] for r in rows]
    lo = [r[y] - r[y + "_min"] for r in rows]
    hi = [r[y + "_max"] - r[y] for r in rows]
    ax.errorbar(xs, ys, yerr=[lo, hi], label=label, color=color, linestyle="--" if hollow else style, marker=marker,
                markersize=4, capsize=3, linewidth=1.0 if hollow else 1.4,
                markerfacecolor="white" if hollow else color, alpha=0.8 if hollow else 1.0)


def kernel_name(header):
    """'Linux 6.12.118+deb12-amd64' -> 'Linux 6.12'."""
    m = re.match(r"Linux (\d+\.\d+)", header["kernel"])
    return f"Linux {m.group(1)}" if m else header["kernel"]


def tables(header, rows, also):
    """(label suffix, rows, hollow, runs) for the main table, then for each
    other kernel's; the suffix names the kernel only when there is more than
    one; runs: the table's every run (header["turns"], load_runs), or {}."""
    if not also:
        return [("", rows, False, header.get("turns", {}))]
    return [(f", {kernel_name(header)}", rows, False, header.get("turns", {}))] + \
        [(f", {kernel_name(h)}", r, True, h.get("turns", {})) for h, r in also]


def every_run(ax, turns, program, field, color, marker, hollow, shift):
    """Each run of PROGRAM as a small dot, its size's column moved aside by
    SHIFT (a factor on the log axis) so that two programs' dots do not
    cover each other: where the runs fall in two stretches, both show."""
    points = [(size * shift, v[field]) for (size, _, name), v in sorted(turns.items())
              if name == program and v[field] is not None]
    if points:
        ax.scatter([x for x, _ in points], [y for _, y in points], s=9, marker=marker, linewidths=0.6,
                   facecolors="none" if hollow else color, edgecolors=color, alpha=0.55, zorder=1)


def turn_ratios(turns, num, den, field):
    """{size: (median, min, max)} of NUM's run over DEN's run in each turn
    where both printed; the median as bench.sh takes it (the lower middle)."""
    by_size = {}
    for (size, turn, name), v in turns.items():
        other = turns.get((size, turn, den))
        if name == num and v[field] is not None and other is not None and other[field]:
            by_size.setdefault(size, []).append(v[field] / other[field])
    return {s: (sorted(r)[(len(r) - 1) // 2], min(r), max(r)) for s, r in by_size.items()}


def ratio_panel(ax, runs, pairs, goal=None, goal_text=""):
    """RUNS as tables() gives them; PAIRS: (numerator, denominator, label,
    color), the first two each (median column, program in the runs CSV,
    field). With the runs, a size's ratio is the median of its turns'
    ratios, with their spread."""
    for suffix, rows, hollow, turns in runs:
        for num, den, label, color in pairs:
            xs = [r["size_bytes"] for r in rows]
            style = dict(marker="o", markersize=4, color=color, linestyle="--" if hollow else "-",
                         markerfacecolor="white" if hollow else color)
            by_turn = turn_ratios(turns, num[1], den[1], num[2]) if turns else {}
            if by_turn:
                xs = [x for x in xs if x in by_turn]
                mid = [by_turn[x][0] for x in xs]
                ax.errorbar(xs, mid, yerr=[[m - by_turn[x][1] for x, m in zip(xs, mid)],
                                           [by_turn[x][2] - m for x, m in zip(xs, mid)]],
                            capsize=2, linewidth=1.0 if hollow else 1.4, label=label + " (in turns)" + suffix,
                            **style)
            else:
                ax.plot(xs, [r[num[0]] / r[den[0]] for r in rows], label=label + suffix, **style)
    ax.axhline(1.0, color="#999999", linewidth=0.8)
    if goal is not None:
        ax.axhline(goal, color="#2e8b57", linestyle=":", linewidth=1.2, label=goal_text)
    ax.set_ylabel("ratio")
    ax.legend(fontsize=7, loc="best")
    ax.grid(True, alpha=0.3)


def fig_02(plt, header, rows, also):
    fig, ax = plt.subplots(figsize=(7.6, 4.6))
    sizes = [r["size_bytes"] for r in rows]
    for suffix, table, hollow, _ in tables(header, rows, also):
        series(ax, table, "size_bytes", "reg_us", "ibv_reg_mr + ibv_dereg_mr (median, spread of runs)" + suffix,
               PERFTEST, hollow=hollow)
    # A cost in proportion to the pages: a line of slope 1 through the largest size.
    last = rows[-1]
    ax.plot([sizes[0], sizes[-1]], [last["reg_us"] * sizes[0] / sizes[-1], last["reg_us"]],
            linestyle="--", color=OTHER, linewidth=1, label="in proportion to the pages (through the largest)")
    ax.axhline(rows[0]["reg_us"], linestyle=":", color=OTHER, linewidth=1, label="the one-page cost")
    log_panel(ax, "microseconds per registration")
    size_axis(ax, sizes)
    ax.set_ylim(bottom=min(r["reg_us_min"] for _, table, _, _ in tables(header, rows, also) for r in table) / 2)
    ax.set_title("02: a fixed cost per call for small buffers; for large ones the pages dominate", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    return fig


def fig_04(plt, header, rows, also):
    fig, (rate, bw, ratio) = plt.subplots(3, 1, figsize=(7.6, 7.4), sharex=True,
                                          gridspec_kw={"height_ratios": [3, 2, 1.6]})
    sizes = [r["size_bytes"] for r in rows]
    runs = tables(header, rows, also)
    for suffix, table, hollow, turns in runs:
        every_run(rate, turns, "04 rdma_write", "mpps", OURS, "o", hollow, 0.93)
        every_run(rate, turns, "04 ib_write_bw", "mpps", PERFTEST, "s", hollow, 1.07)
        series(rate, table, "size_bytes", "ours_mpps", "04 rdma_write" + suffix, OURS, hollow=hollow)
        series(rate, table, "size_bytes", "perftest_mpps", "ib_write_bw" + suffix, PERFTEST, style="--", marker="s",
               hollow=hollow)
        series(bw, table, "size_bytes", "ours_mbps", "04 rdma_write" + suffix, OURS, hollow=hollow)
        series(bw, table, "size_bytes", "perftest_mbps", "ib_write_bw" + suffix, PERFTEST, style="--", marker="s",
               hollow=hollow)
    log_panel(rate, "million messages / s")
    rate.legend(fontsize=7 if also else 8, ncol=2 if also else 1)
    rate.set_title("04: the rate holds while each write costs per message, then falls as the bytes dominate",
                   fontsize=9)
    log_panel(bw, "MB / s")
    ratio_panel(ratio, runs,
                [(("ours_mpps", "04 rdma_write", "mpps"), ("perftest_mpps", "04 ib_write_bw", "mpps"),
                  "rdma_write / ib_write_bw, message rate", OURS)],
                0.95, "the goal: 0.95")
    size_axis(ratio, sizes)
    fig.subplots_adjust(hspace=0.12)
    return fig


def fig_05(plt, header, rows, also):
    # Beside a second kernel, three more lines: the legends go to the right.
    fig, (lat, ratio) = plt.subplots(2, 1, figsize=(10.4 if also else 7.6, 6.6), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 1.4]})
    sizes = [r["size_bytes"] for r in rows]
    runs = tables(header, rows, also)
    for suffix, table, hollow, turns in runs:
        for (prefix, label, color, marker), shift in zip((("ours", "05 write_imm --latency", OURS, "o"),
                                                          ("write_lat", "ib_write_lat", PERFTEST, "s"),
                                                          ("send_lat", "ib_send_lat", OTHER, "^")), (0.9, 1.0, 1.1)):
            every_run(lat, turns, label if prefix == "ours" else "05 " + label, "median_us", color, marker, hollow,
                      shift)
            series(lat, table, "size_bytes", prefix + "_median_us", label + ", median" + suffix, color, marker=marker,
                   hollow=hollow)
            if not hollow:  # the other kernel's medians only: six more lines would hide the figure
                lat.plot(sizes, [r[prefix + "_p99_us"] for r in table], color=color, linestyle=":", marker=marker,
                         markersize=3, linewidth=1, label=label + ", 99 %" + suffix)
    log_panel(lat, "one-way latency, microseconds")
    if also:
        lat.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.subplots_adjust(right=0.66)
    else:
        lat.legend(fontsize=7, ncol=2)
    lat.set_title("05: write_imm sits above both perftest tools, most where a message is small; the bytes narrow the gap",
                  fontsize=9)
    ours = ("ours_median_us", "05 write_imm --latency", "median_us")
    ratio_panel(ratio, runs,
                [(ours, ("write_lat_median_us", "05 ib_write_lat", "median_us"), "median: write_imm / ib_write_lat", OURS),
                 (ours, ("send_lat_median_us", "05 ib_send_lat", "median_us"), "median: write_imm / ib_send_lat", OTHER)],
                1.1, "the goal: at most 1.1 x ib_write_lat")
    if also:
        ratio.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    size_axis(ratio, sizes)
    fig.subplots_adjust(hspace=0.1)
    return fig


def fig_06(plt, header, rows, also):
    fig, (total, rate) = plt.subplots(2, 1, figsize=(7.6, 6.4), sharex=True, gridspec_kw={"height_ratios": [1, 1]})
    clients = sorted({int(r["client"]) for r in rows})
    fair = 0
    for c in clients:
        mine = [r for r in rows if int(r["client"]) == c]
        greedy = mine[0]["role"] == "greedy"
        color = PERFTEST if greedy else ["#1f5fa8", "#4a90d9", "#8ab8ea"][fair % 3]
        fair += 0 if greedy else 1
        label = f"client {c} ({mine[0]['role']}, {int(mine[-1]['records'])} records)"
        seconds = [r["time_ms"] / 1000 for r in mine]
        total.step(seconds, [r["records"] for r in mine], where="post", color=color, linewidth=1.6, label=label)
        # Records per second between two progress lines, while the client streamed.
        pts = [(b["time_ms"] / 1000, (b["records"] - a["records"]) / ((b["time_ms"] - a["time_ms"]) / 1000))
               for a, b in zip(mine, mine[1:]) if b["time_ms"] > a["time_ms"] and b["records"] > a["records"]]
        if pts:
            rate.plot([t for t, _ in pts], [v for _, v in pts], color=color, marker="o", markersize=3, linewidth=1.2)
    total.set_ylabel("records consumed so far")
    total.legend(fontsize=8)
    total.grid(True, alpha=0.3)
    total.set_title("06: beside the fair clients the greedy one falls to a fraction of its rate alone, "
                    "and they finish first", fontsize=9)
    rate.set_ylabel("records / s, per 50 ms")
    rate.set_xlabel("seconds since the first record")
    rate.grid(True, alpha=0.3)
    fig.subplots_adjust(hspace=0.1)
    return fig


def fig_08(plt, header, rows, also):
    fig, axes = plt.subplots(2, 2, figsize=(8.2, 6.4))
    modes = []
    for r in rows:
        if r["mode"] not in modes:
            modes.append(r["mode"])
    sizes = sorted({r["size_bytes"] for r in rows})
    colors = {"--poll": "#1f5fa8", "--event": "#2e8b57", "--hybrid": "#8e44ad",
              "ib_send_lat": PERFTEST, "ib_send_lat -e": "#e59866"}
    panels = ((axes[0][0], "median_us", "median latency, us", True), (axes[0][1], "p99_us", "99 % latency, us", True),
              (axes[1][0], "cpu_us_per_msg", "client CPU per message, us", False),
              (axes[1][1], "wakeups_per_msg", "client wake-ups per message", False))
    width = 0.8 / len(modes)
    for ax, value, title, log in panels:
        for i, mode in enumerate(modes):
            xs, ys, lo, hi = [], [], [], []
            for j, size in enumerate(sizes):
                r = next((r for r in rows if r["mode"] == mode and r["size_bytes"] == size), None)
                if r is None or r[value] is None:
                    continue
                xs.append(j + (i - (len(modes) - 1) / 2) * width)
                ys.append(r[value])
                lo.append(r[value] - r[value + "_min"])
                hi.append(r[value + "_max"] - r[value])
            if xs:
                ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, color=colors.get(mode, OTHER), label=mode)
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([size_text(s) for s in sizes])
        ax.set_title(title, fontsize=9)
        if log:
            ax.set_yscale("log")
        ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("08: sleeping pays a wake-up per message, in latency and (in this guest) in CPU; "
                 "the hybrid keeps polling's latency", fontsize=10)
    fig.subplots_adjust(hspace=0.3)
    return fig


def fig_08_paced(plt, header, rows, also):
    fig, (cpu, lat) = plt.subplots(2, 1, figsize=(7.6, 7.0), sharex=True, gridspec_kw={"height_ratios": [1, 1.3]})
    modes = []
    for r in rows:
        if r["mode"] not in modes:
            modes.append(r["mode"])
    colors = {"--poll": "#1f5fa8", "--event": "#2e8b57", "--hybrid": "#8e44ad"}
    # Back to back (rate 0) has no rate to stand on: it is drawn one step
    # (x 4) past the highest offered rate, its tick labelled, the line to it dashed.
    rates = sorted({r["rate_per_s"] for r in rows if r["rate_per_s"] > 0})
    b2b = rates[-1] * 4 if rates else 1.0
    for r in rows:
        r["x"] = r["rate_per_s"] if r["rate_per_s"] > 0 else b2b
    for mode in modes:
        mine = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["x"])
        paced = [r for r in mine if r["rate_per_s"] > 0]
        last = [r for r in mine if r["rate_per_s"] == 0]
        color = colors.get(mode, OTHER)
        for ax, key, label, style in ((cpu, "server_cpu_s_per_s", mode + ", the server", "-"),
                                      (lat, "median_us", mode + ", median", "-"),
                                      (lat, "p99_us", mode + ", 99 %", ":")):
            series(ax, paced, "x", key, label, color, style=style, marker="o" if style == "-" else "^")
            if paced and last:
                ax.plot([paced[-1]["x"], last[0]["x"]], [paced[-1][key], last[0][key]], color=color,
                        linestyle="--", linewidth=1)
            if last:
                ax.errorbar([last[0]["x"]], [last[0][key]], yerr=[[last[0][key] - last[0][key + "_min"]],
                                                                  [last[0][key + "_max"] - last[0][key]]],
                            color=color, marker="s" if style == "-" else "^", markersize=5, capsize=3,
                            markerfacecolor="white")
        # A rate the mode could not keep up with (most rounds late): what it did instead.
        for r in paced:
            if r["achieved_per_s"] < 0.9 * r["rate_per_s"]:
                cpu.annotate(f"{r['achieved_per_s']:.0f}/s done", (r["x"], r["server_cpu_s_per_s"]),
                             textcoords="offset points", xytext=(0, -12), ha="center", fontsize=7, color=color)
    cpu.set_ylabel("server CPU, seconds per second")
    cpu.set_ylim(bottom=0)
    cpu.grid(True, which="both", alpha=0.3)
    cpu.legend(fontsize=7, loc="upper left")
    cpu.set_title("08 paced: a polling server burns a CPU at any rate; a sleeping one pays per wake-up until it "
                  "cannot keep up;\nthe hybrid sleeps at low rates and spins at high ones", fontsize=9)
    log_panel(lat, "client's one-way latency, microseconds")
    lat.legend(fontsize=7, ncol=3, loc="upper right")
    lat.set_xscale("log")
    lat.set_xticks(rates + [b2b])
    lat.set_xticklabels([f"{r:g}" for r in rates] + ["back to\nback"], fontsize=8)
    lat.minorticks_off()
    lat.set_xlabel("rounds a second the client offers (--rate)")
    fig.subplots_adjust(hspace=0.1)
    return fig


# 09 prints microseconds with three decimals: a pool time printed as 0.000
# was below that, and a log axis cannot show zero. It is drawn at this floor,
# the most the printed number says.
FLOOR_US = 0.001


def fig_09(plt, header, rows, also):
    fig, ax = plt.subplots(figsize=(7.6, 4.6))
    for r in rows:
        for k in ("pool_us", "pool_us_min", "pool_us_max"):
            r[k] = max(r[k], FLOOR_US)
    sizes = [r["size_bytes"] for r in rows]
    series(ax, rows, "size_bytes", "reg_us", "ibv_reg_mr + ibv_dereg_mr per message", PERFTEST)
    series(ax, rows, "size_bytes", "pool_us", "pool alloc + release", OURS, marker="s")
    for r in rows:
        ax.annotate(f"{r['reg_us'] / r['pool_us']:.0f}x", (r["size_bytes"], math.sqrt(r["reg_us"] * r["pool_us"])),
                    fontsize=8, ha="center", color="#333333")
    log_panel(ax, "microseconds per buffer")
    size_axis(ax, sizes)
    ax.set_title("09: registering per message costs hundreds of times the pool, more with every page", fontsize=10)
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 0.1))
    return fig


def fig_10(plt, header, rows, also):
    fig, (bw, kept, ratio) = plt.subplots(3, 1, figsize=(7.6, 8.2), sharex=True,
                                          gridspec_kw={"height_ratios": [3, 2, 1.6]})
    losses = sorted({r["loss_pct"] for r in rows})
    sizes = sorted({r["size_bytes"] for r in rows})
    # Loss rates from 0 to 5 % span no scale a 0 can sit on: evenly spaced, labelled.
    for r in rows:
        r["x"] = losses.index(r["loss_pct"])
    # Per size a marker and a shade; per program the color and line of figure 04.
    shades = {OURS: ["#1f5fa8", "#7fa7d6"], PERFTEST: ["#c0392b", "#e59890"]}
    markers = ["o", "^", "D"]
    failed = []
    for i, size in enumerate(sizes):
        mine = [r for r in rows if r["size_bytes"] == size]
        lossless = next((r for r in mine if r["loss_pct"] == 0), None)
        for prefix, label, color, style in (("ours", "04 rdma_write", OURS, "-"),
                                            ("perftest", "ib_write_bw", PERFTEST, "--")):
            key = prefix + "_mbps"
            drawn = [r for r in mine if r[key] is not None]
            failed += [(r["x"], color) for r in mine if r[key] is None]
            shade = shades[color][i % 2]
            series(bw, drawn, "x", key, f"{label}, {size_text(size)}", shade, style=style, marker=markers[i % 3])
            if lossless is not None and lossless[key]:
                kept.plot([r["x"] for r in drawn], [r[key] / lossless[key] for r in drawn], color=shade,
                          linestyle=style, marker=markers[i % 3], markersize=4, linewidth=1.4)
        both = [r for r in mine if r["ours_mbps"] is not None and r["perftest_mbps"] is not None]
        ratio.plot([r["x"] for r in both], [r["ours_mbps"] / r["perftest_mbps"] for r in both], marker=markers[i % 3],
                   markersize=4, color=shades[OURS][i % 2], label=f"rdma_write / ib_write_bw, {size_text(size)}")
    log_panel(bw, "MB / s")
    bw.legend(fontsize=7, ncol=2)
    bw.set_title("10: with 1 % of the packets lost, 64 KiB writes keep about a quarter of their rate, "
                 "with 5 % about 3 %\n(4 KiB writes: about half, and a tenth); 04 and ib_write_bw alike", fontsize=9)
    # A point with no run that finished: a cross at the foot of the panel.
    for x, color in failed:
        bw.plot([x], [0.04], marker="x", color=color, markersize=7, transform=bw.get_xaxis_transform(), clip_on=False)
    if failed:
        bw.text(0.01, 0.1, "x: no run finished (the CSV's note says why)", transform=bw.transAxes, fontsize=7,
                color="#555555")
    kept.set_ylabel("share of its own rate\nat 0 % loss")
    kept.axhline(1.0, color="#999999", linewidth=0.8)
    kept.set_ylim(bottom=0)
    kept.grid(True, alpha=0.3)
    ratio.axhline(1.0, color="#999999", linewidth=0.8)
    ratio.set_ylabel("ratio")
    ratio.legend(fontsize=7, loc="best")
    ratio.grid(True, alpha=0.3)
    ratio.set_xticks(range(len(losses)))
    ratio.set_xticklabels([f"{p:g} %" for p in losses], fontsize=8)
    ratio.set_xlabel("packets lost at random, each way (tc netem on both guests' eth0)")
    fig.subplots_adjust(hspace=0.12, top=0.93)
    return fig


def spread_columns(*names):
    """Each column as bench.sh writes it: the median, then its _min and _max."""
    return [c for n in names for c in (n, n + "_min", n + "_max")]


LOSS_MEASURED = spread_columns("ours_mbps", "perftest_mbps", "ours_retries", "perftest_retries", "ours_sent_pkts",
                               "perftest_sent_pkts")

# name: (columns, text columns, optional columns, draw)
FIGURES = {
    "02-registration": (["size_bytes"] + spread_columns("reg_us"), (), (), fig_02),
    "04-write-rate": (["size_bytes"] + spread_columns("ours_mbps", "ours_mpps", "perftest_mbps", "perftest_mpps"),
                      (), (), fig_04),
    "05-latency": (["size_bytes"] + spread_columns("ours_median_us", "ours_p99_us", "write_lat_median_us",
                                                   "write_lat_p99_us", "send_lat_median_us", "send_lat_p99_us"),
                   (), (), fig_05),
    "06-greedy": (["time_ms", "client", "role", "records"], ("role",), (), fig_06),
    "08-modes": (["mode", "size_bytes"] + spread_columns("median_us", "p99_us", "cpu_us_per_msg", "wakeups_per_msg"),
                 ("mode",), spread_columns("cpu_us_per_msg", "wakeups_per_msg"), fig_08),
    "08-paced": (["mode", "rate_per_s", "iters"] + spread_columns("median_us", "p99_us", "server_cpu_s_per_s",
                                                                   "server_cpu_us_per_msg", "late_share",
                                                                   "achieved_per_s"),
                 ("mode",), (), fig_08_paced),
    "09-pool-cost": (["size_bytes"] + spread_columns("reg_us", "pool_us"), (), (), fig_09),
    # A point where every run of a program failed has that program's columns
    # empty; the note says what failed (bench.sh never leaves a point out).
    "10-loss": (["loss_pct", "size_bytes", "iters"] + LOSS_MEASURED +
                ["ours_failed", "perftest_failed", "wire_sent_pkts", "wire_lost_pkts", "note"],
                ("note",), LOSS_MEASURED + ["note"], fig_10),
}


# The figures that draw a second kernel's points beside the first's.
BESIDE = ("02-registration", "04-write-rate", "05-latency")
# The figures that draw every run (DATA/runs/NAME.csv, bench.sh's runs_csv)
# when it is there: the fields each run printed.
RUNS = {"04-write-rate": ("mbps", "mpps"), "05-latency": ("median_us", "p99_us")}


def load_runs(name, data_dir, header):
    """HEADER["turns"] = {(size, turn, program): {field: value or None}}
    from DATA_DIR/runs/NAME.csv, which must be of the same run; nothing
    when the file is not there."""
    path = os.path.join(data_dir, "runs", name + ".csv")
    if name not in RUNS or not os.path.isfile(path):
        return
    fields = RUNS[name]
    h, rows = read_csv(path, ["size_bytes", "turn", "program", *fields], ("program",), fields)
    if h["date"] != header["date"]:
        raise BadData(f"runs/{name}.csv:1: measured {h['date']}, {name}.csv {header['date']}: not the same run")
    header["turns"] = {(r["size_bytes"], r["turn"], r["program"]): {f: r[f] for f in fields} for r in rows}


def load(name, data_dir):
    """(header, rows, also): the CSV, and for the figures in BESIDE every
    DATA/linux-*/NAME.csv as (header, rows), which must be of the same run."""
    columns, text, optional, _ = FIGURES[name]
    header, rows = read_csv(os.path.join(data_dir, name + ".csv"), columns, text, optional)
    load_runs(name, data_dir, header)
    also = []
    for sub in sorted(os.listdir(data_dir)) if name in BESIDE else []:
        path = os.path.join(data_dir, sub, name + ".csv")
        if not sub.startswith("linux-") or not os.path.isfile(path):
            continue
        h, r = read_csv(path, columns, text, optional)
        if h["date"] != header["date"]:
            raise BadData(f"{sub}/{name}.csv:1: measured {h['date']}, {name}.csv {header['date']}: "
                          "not the same run (scripts/bench.sh --second-kernel writes both)")
        load_runs(name, os.path.join(data_dir, sub), h)
        also.append((h, r))
    return header, rows, also


def render(name, header, rows, also=()):
    """The SVG bytes of figure NAME, drawn from its CSV's HEADER and ROWS
    (and ALSO, another kernel's tables)."""
    draw = FIGURES[name][3]
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams.update({"svg.hashsalt": "rdma-tutorial", "svg.fonttype": "none",
                                "font.family": "DejaVu Sans", "axes.titlesize": 10})
    fig = draw(plt, header, rows, also)
    caption(fig, header, also)
    out = io.BytesIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)
    return out.getvalue()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    docs = os.path.join(os.path.dirname(here), "docs")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], usage=__doc__.split("\n\n")[1])
    p.add_argument("figures", nargs="*", help="figure names (default: all)")
    p.add_argument("--data", default=os.path.join(docs, "data"))
    p.add_argument("--out", default=os.path.join(docs, "img"))
    p.add_argument("--check", action="store_true")
    args = p.parse_args()
    unknown = [f for f in args.figures if f not in FIGURES]
    if unknown:
        print(f"plot: no figure '{unknown[0]}' (known: {', '.join(FIGURES)})", file=sys.stderr)
        return 2
    names = args.figures or list(FIGURES)
    loaded = {}
    for name in names:  # every CSV is checked before anything is drawn
        try:
            loaded[name] = load(name, args.data)
        except BadData as e:
            print(f"plot: {e}", file=sys.stderr)
            return 2
    try:
        import matplotlib
    except ImportError:
        # Debian's python3-matplotlib is in Debian's Python; the python3 first
        # on PATH may be another one (pyenv, a venv). Run again under it.
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system) \
                and not os.environ.get("RDMA_TUTORIAL_PLOT_REEXEC"):
            os.environ["RDMA_TUTORIAL_PLOT_REEXEC"] = "1"
            os.execv(system, [system, os.path.abspath(__file__)] + sys.argv[1:])
        print("plot: matplotlib is missing (scripts/install_deps.sh, or apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 77 if args.check else 1
    stale = []
    for name in names:
        svg = render(name, *loaded[name])
        target = os.path.join(args.out, name + ".svg")
        if not args.check:
            os.makedirs(args.out, exist_ok=True)
            with open(target, "wb") as f:
                f.write(svg)
            print(f"plot: wrote {target}")
            continue
        try:
            with open(target, "rb") as f:
                committed = f.read()
        except OSError:
            committed = b""
        if committed == svg:
            print(f"plot: {name}.svg is what {name}.csv draws")
            continue
        drawn_by = re.search(rb"Matplotlib v([0-9.]+)", committed)
        if drawn_by and drawn_by.group(1).decode() != matplotlib.__version__:
            print(f"plot: {name}.svg was drawn by matplotlib {drawn_by.group(1).decode()}, this is "
                  f"{matplotlib.__version__}: not comparable", file=sys.stderr)
            return 77
        stale.append(name)
        print(f"plot: {target} is stale: {name}.csv draws other bytes (run scripts/plot.py {name})",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
