#!/usr/bin/env python3
"""Run the benchmarks, compare their figures with the last recorded ones, print the table.

Every bench prints lines `figure KEY VALUE UNIT` (crates/testkit/src/bench.rs). This script runs
the benches (or reads saved bench output with --from), collects those lines, and prints one
Markdown table: each figure now, as last recorded in bench/figures.tsv, the change, and the
issue's target. --record stores the new figures in bench/figures.tsv; --readme also writes the
table into README.md between its `bench-table` markers.

    scripts/bench.py                       # run every bench, print the comparison
    scripts/bench.py --from out.txt        # the same from saved `cargo bench` output
    scripts/bench.py --record --readme     # ... and keep the figures, refresh the README table

Figures are wall-clock on a shared 2-core machine: compare ratios within one run, not across
machines; the table says the load average at the time of the run.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = os.path.join(ROOT, "bench", "figures.tsv")
README = os.path.join(ROOT, "README.md")
START, END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"

# The benches that print figures: (cargo package, bench target).
BENCHES = [
    ("rvtrace-sim", "hart"),
    ("rvtrace-tandem", "check"),
    ("rvtrace-ntrace", "ntrace"),
    ("rvtrace-etrace", "etrace"),
    ("rvtrace-ingress", "text"),
    ("rvtrace-analysis", "profile"),
]

FIGURE = re.compile(r"^figure (\S+) (\S+) (\S+)$")
COLUMNS = ["key", "unit", "better", "target", "recorded", "date", "description"]


def read_figures():
    """bench/figures.tsv: one row per tracked figure (COLUMNS, tab-separated, '-' = none)."""
    rows = {}
    order = []
    if not os.path.exists(FIGURES):
        return rows, order
    with open(FIGURES, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cells = line.split("\t")
            if cells[0] == "key":
                continue
            if len(cells) != len(COLUMNS):
                sys.exit(f"{FIGURES}:{n}: expected {len(COLUMNS)} tab-separated columns, found {len(cells)}")
            row = dict(zip(COLUMNS, cells))
            if row["better"] not in ("up", "down"):
                sys.exit(f"{FIGURES}:{n}: 'better' is up or down, not {row['better']!r}")
            rows[row["key"]] = row
            order.append(row["key"])
    return rows, order


def write_figures(rows, order):
    with open(FIGURES, "w", encoding="utf-8") as f:
        f.write("# Tracked benchmark figures, written by scripts/bench.py --record (edit better/target/description by hand)\n")
        f.write("\t".join(COLUMNS) + "\n")
        for key in order:
            f.write("\t".join(rows[key][c] for c in COLUMNS) + "\n")


def collect(texts):
    """The figures in bench output, in order of appearance; a repeated key keeps its best value."""
    now = {}
    order = []
    for text in texts:
        for line in text.splitlines():
            m = FIGURE.match(line.strip())
            if not m:
                continue
            key, value, unit = m.group(1), float(m.group(2)), m.group(3)
            if key not in now:
                order.append(key)
                now[key] = (value, unit)
            else:
                now[key] = (value, unit)
    return now, order


def run_benches():
    texts = []
    for package, bench in BENCHES:
        cmd = ["cargo", "bench", "-q", "-p", package, "--bench", bench]
        print("running:", " ".join(cmd), file=sys.stderr, flush=True)
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout + r.stderr)
            sys.exit(f"{' '.join(cmd)} failed with status {r.returncode}")
        texts.append(r.stdout)
    return texts


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.4f}" if abs(v) < 10 else f"{v:.1f}" if abs(v) < 1000 else f"{v:.0f}"


def table(rows, order, now, now_order, load):
    keys = order + [k for k in now_order if k not in rows]
    out = [
        f"Figures of {datetime.date.today()} (load average {load}); 'recorded' is bench/figures.tsv.",
        "",
        "| figure | unit | now | recorded | change | target | met |",
        "|---|---|---:|---:|---:|---:|:---:|",
    ]
    for key in keys:
        row = rows.get(key, {})
        value, unit = now.get(key, (None, row.get("unit", "-")))
        rec = row.get("recorded", "-")
        rec_v = None if rec in ("-", "") else float(rec)
        change = "-"
        if value is not None and rec_v:
            change = f"{(value / rec_v - 1) * 100:+.1f}%"
        target = row.get("target", "-")
        met = "-"
        if value is not None and target not in ("-", ""):
            t = float(target)
            met = "yes" if (value >= t if row.get("better", "up") == "up" else value <= t) else "no"
        desc = row.get("description", "")
        name = f"{key}" + (f" ({desc})" if desc and desc != "-" else "")
        out.append(f"| {name} | {unit} | {fmt(value)} | {fmt(rec_v)} | {change} | {target} | {met} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="files", nargs="+", metavar="FILE", help="read saved bench output instead of running the benches")
    ap.add_argument("--record", action="store_true", help="store the new figures in bench/figures.tsv")
    ap.add_argument("--readme", action="store_true", help="write the table into README.md between the bench-table markers")
    a = ap.parse_args()

    rows, order = read_figures()
    if a.files:
        texts = []
        for p in a.files:
            with open(p, encoding="utf-8") as f:
                texts.append(f.read())
    else:
        texts = run_benches()
    now, now_order = collect(texts)
    if not now:
        sys.exit("no `figure KEY VALUE UNIT` lines in the bench output")
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "unknown"
    text = table(rows, order, now, now_order, load)
    print(text)

    if a.record:
        today = str(datetime.date.today())
        for key in now_order:
            value, unit = now[key]
            if key not in rows:
                better = "down" if unit.startswith("bits") else "up"  # fewer bits per instruction is better
                rows[key] = {"key": key, "unit": unit, "better": better, "target": "-", "recorded": "-", "date": "-", "description": "-"}
                order.append(key)
            rows[key]["recorded"] = f"{value:.4f}"
            rows[key]["unit"] = unit
            rows[key]["date"] = today
        write_figures(rows, order)
    if a.readme:
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        if START not in readme or END not in readme:
            sys.exit(f"README.md has no {START} ... {END} section")
        head, rest = readme.split(START, 1)
        _, tail = rest.split(END, 1)
        with open(README, "w", encoding="utf-8") as f:
            f.write(head + START + "\n" + text + "\n" + END + tail)


if __name__ == "__main__":
    main()
