#!/bin/sh
# Prints the bits/instruction table of N-Trace and E-Trace modes (crates/ntrace/README.md,
# "Bits per instruction"): trace file bytes x 8 / retired instructions, framing included.
#
#   scripts/bits-per-instr.sh [EXTRA.elf ...]     # e.g. a CoreMark build, one row each
#
# Rows: the benchmark workload (programs/bench), the test programs NexRv can handle (summed), and
# any ELF given. Needs target/release/rvtrace (or RVTRACE=path). With NEXRV=path/to/NexRv (the
# reference C code of riscv-non-isa/tg-nexus-trace, refcode/c) and riscv64-unknown-elf-objdump,
# two more columns: NexRv's own encoder at -cs 8 -rpt 2 and at -cs 8 -rpt 3 (its best).
# The best N-Trace mode's trace is decoded back and compared with the run's PC list.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
rv=${RVTRACE:-$here/target/release/rvtrace}
[ -x "$rv" ] || { echo "bits-per-instr.sh: build rvtrace first (cargo build --release)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The test programs NexRv handles: no traps (NexRv has none: its own HTM encode + decode of the
# others does not give their PC list back: traps, interrupts, CSR and PMP faults, the kernel's
# virtual addresses; zbs_zbc's instructions are unknown to its objdump conversion).
progs="bitmanip-rv32imac_zba_zbb bitmanip-rv64gc_zba_zbb csrs-rv64gc float-rv32imac float-rv64gc
fnptr-rv32imac fnptr-rv64gc heap-rv32imac heap-rv64gc loops-rv32imac loops-rv64gc mixed-rv32imac
mixed-rv64gc nocompress-rv32ima nocompress-rv64g pmu_events-rv32imac pmu_events-rv64gc
recurse-rv32imac recurse-rv64gc setjmp-rv32imac setjmp-rv64gc stdio-rv32imac stdio-rv64gc
switch-rv32imac switch-rv64gc"

best="--call-stack 8 --hist-patterns --repeat-branch"
# name|encoder|options
modes="btm|ntrace|--mode btm
htm|ntrace|--mode htm
htm+cs8|ntrace|--call-stack 8
htm+cs8+rpt|ntrace|--call-stack 8 --repeat-history
htm+cs8+rpt+rb|ntrace|--call-stack 8 --repeat-history --repeat-branch
best|ntrace|$best
preset-nexrv|ntrace|--preset nexrv --call-stack 8 --repeat-history
et-ref|etrace|--preset reference
et-best|etrace|--implicit-return --implicit-exception --branch-prediction 256 --jump-target-cache 16"

# Adds the trace bytes of every mode (and NexRv's) of one ELF to $tmp/sum.<mode>.
measure() {
    elf=$1
    "$rv" run "$elf" --ingress "$tmp/r.ing" --itype-width 4 --pcs "$tmp/r.pcs" >/dev/null 2>&1 || true
    n=$(wc -l <"$tmp/r.pcs")
    echo "$n" >>"$tmp/sum.insns"
    echo "$modes" | while IFS='|' read -r name enc opts; do
        extra=""
        [ "$name" = et-ref ] && extra="--elf $elf"
        # shellcheck disable=SC2086
        "$rv" encode "$enc" "$tmp/r.ing" -o "$tmp/t.bin" $opts $extra >/dev/null 2>&1
        stat -c %s "$tmp/t.bin" >>"$tmp/sum.$name"
        if [ "$name" = best ]; then
            "$rv" decode ntrace "$tmp/t.bin" --elf "$elf" --pcs "$tmp/d.pcs" >/dev/null 2>&1 || true
            cmp -s "$tmp/d.pcs" "$tmp/r.pcs" || echo "bits-per-instr.sh: $elf: best mode does not decode to the run's PCs" >&2
        fi
    done
    if [ -n "${NEXRV:-}" ]; then
        riscv64-unknown-elf-objdump -d "$elf" >"$tmp/o.txt"
        "$NEXRV" -conv -objd "$tmp/o.txt" -pcinfo "$tmp/pi.txt" >/dev/null
        "$NEXRV" -conv -pcinfo "$tmp/pi.txt" -pconly "$tmp/r.pcs" -pcseq "$tmp/ps.txt" >/dev/null
        for r in 2 3; do
            "$NEXRV" -enco "$tmp/ps.txt" -nex "$tmp/n.bin" -cs 8 -rpt $r >/dev/null
            stat -c %s "$tmp/n.bin" >>"$tmp/sum.nexrv-rpt$r"
        done
    fi
}

cols="btm htm htm+cs8 htm+cs8+rpt htm+cs8+rpt+rb best preset-nexrv"
[ -n "${NEXRV:-}" ] && cols="$cols nexrv-rpt2 nexrv-rpt3"
cols="$cols et-ref et-best"

row() {
    label=$1
    insns=$(paste -sd+ "$tmp/sum.insns" | bc)
    line="| $label | $insns |"
    for c in $cols; do
        b=$(paste -sd+ "$tmp/sum.$c" | bc)
        line="$line $(echo "scale=4; $b * 8 / $insns" | bc | sed 's/^\./0./') |"
    done
    echo "$line"
    rm -f "$tmp"/sum.*
}

hdr="| program | instructions |"
sep="|---|---:|"
for c in $cols; do hdr="$hdr $c |"; sep="$sep---:|"; done
echo "$hdr"
echo "$sep"
for w in rv64gc rv32imac; do
    measure "$here/programs/bench/workload-$w.elf"
    row "workload-$w"
done
for p in $progs; do measure "$here/programs/elf/$p.elf"; done
row "test programs ($(echo $progs | wc -w) ELFs)"
for e in "$@"; do
    measure "$e"
    row "$(basename "$e" .elf)"
done
