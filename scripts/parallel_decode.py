#!/usr/bin/env python3
"""Parallel decode figures (README "Parallel and chunked decode"): `rvtrace decode ntrace|etrace
--jobs 1` vs `--jobs 2` on the workload, best of N runs (the machine is shared: the best run is
the one least disturbed), at several sync periods: bits/instr, chunks, speed-up.

    python3 scripts/parallel_decode.py [RVTRACE] [RUNS]
"""
import os, re, subprocess, sys, tempfile, time

R = sys.argv[1] if len(sys.argv) > 1 else "target/release/rvtrace"
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
ELF = "programs/bench/workload-rv64gc.elf"
CHUNK = 64 << 10  # rvtrace_flow::chunk::CHUNK_BYTES


def run(*args):
    return subprocess.run([R, *args], check=True, capture_output=True, text=True)


def best(args):
    """Best wall time of RUNS runs, and the CPU time (user + system) of that run."""
    t = []
    for _ in range(RUNS):
        c0 = os.times()
        s = time.perf_counter()
        run(*args)
        w = time.perf_counter() - s
        c1 = os.times()
        t.append((w, c1.children_user + c1.children_system - c0.children_user - c0.children_system))
    return min(t)


def main():
    d = tempfile.mkdtemp()
    ing = os.path.join(d, "w.ing")
    run("run", ELF, "--ingress", ing)
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print("| trace | sync option | bits/instr | syncs | chunks of 64 KiB | jobs 1 wall (CPU) s | jobs 2 wall (CPU) s | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    protos = sys.argv[3:] or ["ntrace", "etrace"]
    for proto, opt, vals in [("ntrace", "--sync-period", [64, 256, 4096]),
                             ("etrace", "--resync", [64, 256, 4096])]:
        if proto not in protos:
            continue
        for v in vals:
            t = os.path.join(d, f"w.{proto}")
            out = run("encode", proto, ing, "-o", t, opt, str(v)).stderr
            size = os.path.getsize(t)
            stats = ["--stats"] if proto == "ntrace" else []  # decode etrace always says them
            st = run("decode", proto, t, "--elf", ELF, *stats).stderr
            insns = int(re.search(r"(\d+) instructions", st).group(1))
            syncs = count_syncs(proto, t)
            a = best(["decode", proto, t, "--elf", ELF, "--jobs", "1"])
            b = best(["decode", proto, t, "--elf", ELF, "--jobs", "2"])
            print(f"| {proto} | {opt} {v} | {size * 8 / insns:.3f} | {syncs} | "
                  f"{max(1, min(syncs, size // CHUNK + 1))} | {a[0]:.2f} ({a[1]:.2f}) | "
                  f"{b[0]:.2f} ({b[1]:.2f}) | {a[0] / b[0]:.2f}x |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def count_syncs(proto, t):
    # The dump names each synchronization message or packet.
    out = run("dump", proto, t).stdout
    if proto == "ntrace":
        return len(re.findall(r"TCODE\[6\]=(?:9|11|12|29) ", out))
    return len(re.findall(r"^\S+\s+F3S0 ", out, re.M))


if __name__ == "__main__":
    main()
