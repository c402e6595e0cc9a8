#!/usr/bin/env python3
"""Run the benchmarks, compare their figures with the last recorded ones, print the table.

Every bench prints lines `figure KEY VALUE UNIT` (crates/testkit/src/bench.rs). This script runs
the benches (or reads saved bench output with --from), collects those lines, and prints one
Markdown table: each figure now, as last recorded in bench/figures.tsv, the change, and the
issue's target. --record stores the new figures (with the date and load average) in
bench/figures.tsv; --readme also writes the table into README.md between its `bench-table`
markers: figures not measured in this run appear as last recorded, with their own date and load.

    scripts/bench.py                       # run every bench, print the comparison
    scripts/bench.py --from out.txt        # the same from saved `cargo bench` output
    scripts/bench.py --record --readme     # ... and keep the figures, refresh the README table
    scripts/bench.py --boot-only           # only the Linux boot side by side (issue 33)
    scripts/bench.py --from /dev/null --readme   # the README table from bench/figures.tsv alone

--boot adds the Linux boot benchmark (boot_bench): Debian's kernel from scripts/setup.sh with a
small initramfs whose /init prints a marker and powers off, timed to the marker line on one hart
under QEMU 7.2 + OpenSBI 1.5.1, rvtrace `run --sbi` (also writing the ingress stream, and with
--stats), rvtrace under the same OpenSBI, and Spike
(the Spike venv with OpenSBI 1.5.1's fw_jump.elf; its figure is left out when it does not reach the marker
in time), in interleaved rounds; each figure is the median. Each round also times the first
500 M instructions of the boot on 1 and on 4 harts (whole runs): their ratio is 4 harts' cost per
instruction over one hart's in the bring-up; and the whole boot to power-off on 1 and on 4 harts,
each time over its instruction count (from one `--stats` run before the rounds: the runs are
deterministic); and the same boot followed by a parallel user workload (/init starts four busybox
processes that each hash /bin/busybox PARALLEL_ROUNDS times, then powers off): the workload's
time per instruction (this run's time and instructions less the whole boot's) on 4 harts over 1
hart compares the model's cost on the same work, where the boot's guest code differs with the
number of harts. Missing tools are skipped with a message.

Figures are wall-clock on a shared 2-core machine: compare ratios within one run, not across
machines; the table says the load average at the time of the run.
"""

import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

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
COLUMNS = ["key", "unit", "better", "target", "recorded", "date", "load", "description"]


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
            if len(cells) == len(COLUMNS) - 1:
                # A file from before the load column.
                cells.insert(COLUMNS.index("load"), "-")
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
    """The figures in bench output, in order of appearance; a repeated key keeps its last value."""
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


# The Linux boot benchmark (issue 33).
TOOLS = os.path.join(ROOT, "target", "tools")
KERNEL = os.path.join(TOOLS, "debian-riscv64", "boot", "Image")
BUSYBOX = os.path.join(TOOLS, "debian-riscv64", "usr", "bin", "busybox")
FW_JUMP = os.path.join(TOOLS, "opensbi", "usr", "lib", "riscv64-linux-gnu", "opensbi", "generic", "fw_jump.bin")
SPIKE = os.path.join(TOOLS, "spike-venv", "bin", "spike")
# OpenSBI 1.5.1's fw_jump.elf (Debian bookworm's 1.1 prints its banner on Spike, then nothing from
# the kernel); Spike's device tree has a 16550, so the kernel's console is ttyS0 as on QEMU (the
# Debian kernel has no hvc console over the SBI). Spike does not exit at the power-off (the ELF has
# no tohost symbol): the figure is the time to the marker, as for the others.
SPIKE_FW = os.path.join(TOOLS, "opensbi", "usr", "lib", "riscv64-linux-gnu", "opensbi", "generic", "fw_jump.elf")
MARKER = "rvtrace: user space reached"
BOOT_TIMEOUT = 300
# Instructions of the boot run on 1 and on 4 harts for the per-instruction comparison (the
# secondary harts are up well before: `smp: Brought up 1 node, 4 CPUs` by about 300 M).
SMP_INSNS = 500_000_000
SPIKE_TIMEOUT = 120
# Hashes of /bin/busybox each of the parallel workload's four processes runs (a hash of its
# 1.6 MB is ~0.23 G instructions: ~1.8 G in all).
PARALLEL_ROUNDS = 2


def newc(entries):
    """A newc cpio archive of (name, mode, data, (rdev major, minor)) entries and its trailer."""
    out = bytearray()
    for ino, (name, mode, data, rdev) in enumerate(entries + [("TRAILER!!!", 0, b"", (0, 0))], 1):
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name) + 1, 0]
        out += b"070701" + "".join(f"{v:08X}" for v in fields).encode() + name.encode() + b"\0"
        out += b"\0" * (-len(out) % 4)
        out += data + b"\0" * (-len(data) % 4)
    return bytes(out)


def initramfs(path, parallel=0):
    """/dev/console, busybox-static as /bin/busybox, and /init: print MARKER, power off. With
    `parallel`, /init first runs four processes at once, each hashing /bin/busybox `parallel` times
    (a background job's stdin is /dev/null, so the archive has one)."""
    with open(BUSYBOX, "rb") as f:
        busybox = f.read()
    work = ""
    if parallel:
        job = f"i=0; while [ $i -lt {parallel} ]; do $B sha256sum $B >/dev/null; i=$((i+1)); done"
        work = f"B=/bin/busybox\nfor p in 1 2 3 4; do ( {job} ) & done\nwait\n"
    init = f"#!/bin/busybox sh\n{work}/bin/busybox echo '{MARKER}'\n/bin/busybox poweroff -f\n".encode()
    dev_null = [("dev/null", 0o20666, b"", (1, 3))] if parallel else []
    with open(path, "wb") as f:
        f.write(newc([
            ("dev", 0o40755, b"", (0, 0)),
            ("dev/console", 0o20600, b"", (5, 1)),
        ] + dev_null + [
            ("bin", 0o40755, b"", (0, 0)),
            ("bin/busybox", 0o100755, busybox, (0, 0)),
            ("init", 0o100755, init, (0, 0)),
        ]))


def time_to_marker(cmd, timeout):
    """Seconds from start until MARKER arrives on stdout; None if it does not within `timeout`."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    took = None
    try:
        for line in p.stdout:
            if MARKER.encode() in line:
                took = time.monotonic() - start
                break
    finally:
        timer.cancel()
        p.kill()
        p.wait()
    return took


def time_run(cmd, timeout):
    """Seconds the whole command takes; None if it fails or does not end within `timeout`."""
    start = time.monotonic()
    try:
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    # `--max-insns` ends the run with status 125 (the payload did not shut down).
    return time.monotonic() - start if r.returncode in (0, 124, 125) else None


def count_insns(cmd):
    """Instructions a `run --stats` command retires in all (None if it fails)."""
    try:
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           timeout=BOOT_TIMEOUT, text=True)
    except subprocess.TimeoutExpired:
        return None
    m = re.search(r"after (\d+) instructions", r.stderr)
    return int(m.group(1)) if r.returncode == 0 and m else None


def boot_bench(rounds):
    """Figure lines for the boot to user space, medians of `rounds` interleaved rounds."""
    missing = [p for p in (KERNEL, BUSYBOX, FW_JUMP) if not os.path.exists(p)]
    qemu = shutil.which("qemu-system-riscv64")
    if missing or not qemu:
        print(f"boot bench skipped: {', '.join(missing) or 'qemu-system-riscv64 (QEMU 7.2) not on PATH'} "
              "missing (scripts/setup.sh installs the kernel and OpenSBI)", file=sys.stderr)
        return ""
    print("running: cargo build --release -p rvtrace", file=sys.stderr, flush=True)
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "rvtrace"], cwd=ROOT, check=True)
    rvtrace = os.path.join(ROOT, "target", "release", "rvtrace")
    tmp = tempfile.mkdtemp(prefix="rvtrace-boot-")
    rd = os.path.join(tmp, "initramfs.cpio")
    initramfs(rd)
    def boot_args(initrd):
        return ["--initrd", initrd, "--bootargs", "console=ttyS0"]
    args = boot_args(rd)
    runs = {
        "qemu72.linux_boot": [qemu, "-M", "virt", "-m", "128M", "-nographic", "-bios", FW_JUMP,
                              "-kernel", KERNEL, "-initrd", rd, "-append", "console=ttyS0"],
        "hart.linux_boot_sbi": [rvtrace, "run", "--sbi", KERNEL] + args,
        "hart.linux_boot_opensbi": [rvtrace, "run", "--bios", FW_JUMP, KERNEL] + args,
        # Issue 33 goal 2: the same boot writing the ingress stream, and with --stats.
        # (A run writing trace stops at 100 M instructions unless told otherwise.)
        "hart.linux_boot_sbi_ingress": [rvtrace, "run", "--sbi", KERNEL, "--max-insns", "0", "--ingress",
                                        os.path.join(tmp, "boot.ingress")] + args,
        "hart.linux_boot_sbi_stats": [rvtrace, "run", "--sbi", KERNEL, "--stats"] + args,
    }
    # Issue 33 goal 1, several harts: the first SMP_INSNS instructions of the boot on 1 and on 4
    # harts (all harts' instructions together), whole runs.
    smp = {h: [rvtrace, "run", "--sbi", "--harts", str(h), KERNEL, "--max-insns", str(SMP_INSNS)] + args
           for h in (1, 4)}
    # ... and the whole boot to power-off, per instruction.
    whole = {h: [rvtrace, "run", "--sbi", "--harts", str(h), KERNEL] + args for h in (1, 4)}
    insns = {h: count_insns(cmd + ["--stats"]) for h, cmd in whole.items()}
    print(f"boot bench: whole boot instructions {insns}", file=sys.stderr, flush=True)
    # ... and the boot followed by the parallel workload: its own instructions are the difference.
    rd_par = os.path.join(tmp, "parallel.cpio")
    initramfs(rd_par, PARALLEL_ROUNDS)
    par = {h: [rvtrace, "run", "--sbi", "--harts", str(h), KERNEL] + boot_args(rd_par) for h in (1, 4)}
    par_insns = {h: count_insns(cmd + ["--stats"]) for h, cmd in par.items()}
    print(f"boot bench: boot + parallel workload instructions {par_insns}", file=sys.stderr, flush=True)
    if os.path.exists(SPIKE) and os.path.exists(SPIKE_FW):
        runs["spike.linux_boot"] = [SPIKE, "-m128", "--kernel", KERNEL, "--initrd", rd,
                                    "--bootargs", "console=ttyS0", SPIKE_FW]
    else:
        print(f"boot bench: Spike skipped ({SPIKE} or {SPIKE_FW} missing)", file=sys.stderr)
    times = {k: [] for k in runs}
    for r in range(rounds):
        for key, cmd in list(runs.items()):
            spike = key.startswith("spike")
            t = time_to_marker(cmd, SPIKE_TIMEOUT if spike else BOOT_TIMEOUT)
            print(f"boot bench round {r + 1}: {key} {'no marker' if t is None else f'{t:.2f} s'}", file=sys.stderr, flush=True)
            if t is not None:
                times[key].append(t)
            elif spike:
                print(f"boot bench: Spike did not reach the marker in {SPIKE_TIMEOUT} s; left out", file=sys.stderr)
                del runs[key]
        for h, cmd in smp.items():
            t = time_run(cmd, BOOT_TIMEOUT)
            print(f"boot bench round {r + 1}: {SMP_INSNS} instructions on {h} hart(s) "
                  f"{'failed' if t is None else f'{t:.2f} s'}", file=sys.stderr, flush=True)
            if t is not None:
                times.setdefault(f"smp{h}", []).append(t)
        for h, cmd in whole.items():
            whole_t = None
            t = time_run(cmd, BOOT_TIMEOUT) if insns[h] else None
            print(f"boot bench round {r + 1}: whole boot on {h} hart(s) "
                  f"{'failed' if t is None else f'{t:.2f} s'}", file=sys.stderr, flush=True)
            if t is not None:
                times.setdefault(f"whole{h}", []).append(t / insns[h])
                whole_t = t
            # (The workload's time is this run's less the whole boot's of the same round.)
            t = time_run(par[h], BOOT_TIMEOUT) if par_insns[h] and whole_t else None
            print(f"boot bench round {r + 1}: boot + parallel workload on {h} hart(s) "
                  f"{'failed' if t is None else f'{t:.2f} s'}", file=sys.stderr, flush=True)
            if t is not None:
                times.setdefault(f"par{h}", []).append((t - whole_t) / (par_insns[h] - insns[h]))
    shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items() if len(v) == rounds}
    lines = [f"figure {k} {v:.3f} s" for k, v in med.items() if not k.startswith(("smp", "whole", "par"))]
    for k in ("hart.linux_boot_sbi", "hart.linux_boot_opensbi", "spike.linux_boot"):
        if k in med and "qemu72.linux_boot" in med:
            lines.append(f"figure {k}_vs_qemu {med[k] / med['qemu72.linux_boot']:.3f} xQEMU")
    if "hart.linux_boot_sbi_ingress" in med and "qemu72.linux_boot" in med:
        lines.append(f"figure hart.linux_boot_ingress_vs_qemu "
                     f"{med['hart.linux_boot_sbi_ingress'] / med['qemu72.linux_boot']:.3f} xQEMU")
    if "hart.linux_boot_sbi_stats" in med and "hart.linux_boot_sbi" in med:
        lines.append(f"figure hart.linux_boot_stats_vs_plain "
                     f"{med['hart.linux_boot_sbi_stats'] / med['hart.linux_boot_sbi']:.3f} x")
    if "smp1" in med and "smp4" in med:
        # The same number of instructions: the time ratio is the ratio per instruction.
        lines.append(f"figure hart.linux_smp4_per_insn {med['smp4'] / med['smp1']:.3f} x")
    if "whole1" in med and "whole4" in med:
        lines.append(f"figure hart.linux_smp4_boot_per_insn {med['whole4'] / med['whole1']:.3f} x")
    if "par1" in med and "par4" in med:
        lines.append(f"figure hart.linux_smp4_parallel_per_insn {med['par4'] / med['par1']:.3f} x")
    return "\n".join(lines) + "\n"


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.4f}" if abs(v) < 10 else f"{v:.1f}" if abs(v) < 1000 else f"{v:.0f}"


def table(rows, order, now, now_order, load):
    """The Markdown table: every figure measured in this run, with its last recorded value and the
    change; every other tracked figure as last recorded, with its own date and load (so a run of
    some benches still writes a whole table)."""
    keys = order + [k for k in now_order if k not in rows]
    today = str(datetime.date.today())
    head = (
        f"Figures of {today} (load average {load}) where 'measured' says so; the others as last"
        " recorded in bench/figures.tsv ('measured': their date and load average)."
        if now
        else "Figures as last recorded in bench/figures.tsv ('measured': their date and load average)."
    )
    out = [
        head,
        "",
        "| figure | unit | value | measured | previous | change | target | met |",
        "|---|---|---:|---|---:|---:|---:|:---:|",
    ]
    for key in keys:
        row = rows.get(key, {})
        rec = row.get("recorded", "-")
        rec_v = None if rec in ("-", "") else float(rec)
        if key in now:
            value, unit = now[key]
            when = f"{today}, load {load.split()[0]}"
            prev = rec_v
        else:
            value, unit = rec_v, row.get("unit", "-")
            rec_load = row.get("load", "-")
            when = row.get("date", "-") + ("" if rec_load in ("-", "") else f", load {rec_load.split()[0]}")
            prev = None
        change = "-"
        if value is not None and prev:
            change = f"{(value / prev - 1) * 100:+.1f}%"
        target = row.get("target", "-")
        met = "-"
        if value is not None and target not in ("-", ""):
            t = float(target)
            met = "yes" if (value >= t if row.get("better", "up") == "up" else value <= t) else "no"
        desc = row.get("description", "")
        name = f"{key}" + (f" ({desc})" if desc and desc != "-" else "")
        out.append(f"| {name} | {unit} | {fmt(value)} | {when} | {fmt(prev)} | {change} | {target} | {met} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="files", nargs="+", metavar="FILE", help="read saved bench output instead of running the benches")
    ap.add_argument("--record", action="store_true", help="store the new figures in bench/figures.tsv")
    ap.add_argument("--readme", action="store_true", help="write the table into README.md between the bench-table markers")
    ap.add_argument("--boot", action="store_true", help="also run the Linux boot benchmark (minutes)")
    ap.add_argument("--boot-only", action="store_true", help="run only the Linux boot benchmark")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the boot benchmark (default 3)")
    a = ap.parse_args()

    rows, order = read_figures()
    if a.files:
        texts = []
        for p in a.files:
            with open(p, encoding="utf-8") as f:
                texts.append(f.read())
    elif not a.boot_only:
        texts = run_benches()
    else:
        texts = []
    if a.boot or a.boot_only:
        texts.append(boot_bench(a.rounds))
    now, now_order = collect(texts)
    if not now and not a.files:
        sys.exit("no `figure KEY VALUE UNIT` lines in the bench output")
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "unknown"
    text = table(rows, order, now, now_order, load)
    print(text)

    if a.record:
        today = str(datetime.date.today())
        for key in now_order:
            value, unit = now[key]
            if key not in rows:
                # Fewer bits per instruction, seconds, times QEMU's time are better.
                better = "down" if unit.startswith("bits") or unit in ("s", "xQEMU") else "up"
                rows[key] = {"key": key, "unit": unit, "better": better, "target": "-", "recorded": "-", "date": "-", "load": "-", "description": "-"}
                order.append(key)
            rows[key]["recorded"] = f"{value:.4f}"
            rows[key]["unit"] = unit
            rows[key]["date"] = today
            rows[key]["load"] = load
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
