#!/bin/sh
# Regenerates programs/expected/opensbi-<version>/<name>.out: what each S-mode SBI payload
# (sbi/elf/*.elf; sources in sbi/) prints under OpenSBI (generic platform, fw_jump.bin) on
# QEMU 10, run as
#   QEMU10 -M virt -cpu rvXX,h=false,sscofpmf=true,smcntrpmf=true -nographic -icount shift=0 \
#       -bios fw_jump.bin -kernel sbi/elf/<name>.elf </dev/null
# Firmwares: OpenSBI 1.5.1 (Debian bookworm-backports, unpacked by scripts/setup.sh into
# target/tools/opensbi; RV64 and RV32) and OpenSBI 1.1 (Debian bookworm's `opensbi` package in
# /usr/lib; RV64 only, skipped with a message when not installed). The UART output is kept
# from the payload's first line ("<prog>: rvXX hart N") on, without OpenSBI's banner and
# without carriage returns. QEMU must exit with status 0 (OpenSBI shuts down through the virt
# test device, whatever the SRST reason). -icount shift=0: QEMU's counters count instructions
# only with it, so the counts (pmu_stat) and counter-dependent results repeat from run to run.
# The .bin, not the .elf: Debian's fw_jump.elf is position independent, linked at 0, and QEMU
# refuses to load it over its reset ROM. Runnable from any directory; stops at the first
# failure. ONLY=<name> regenerates one payload.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$here"
tmp=$(mktemp "${TMPDIR:-/tmp}/sbi-expected.XXXXXX")
trap 'rm -f "$tmp"' EXIT

# record VERSION BANNER FW ELF: one payload under one firmware (whose banner says BANNER).
record() {
    version=$1 banner=$2 fw=$3 elf=$4
    name=$(basename "$elf" .elf)
    prog=${name%-*}
    dir=expected/opensbi-$version
    mkdir -p "$dir"
    status=0
    timeout 60 "$qemu" -M virt -cpu "rv$xlen,h=false,sscofpmf=true,smcntrpmf=true" -nographic \
        -icount shift=0 -bios "$fw" -kernel "$elf" </dev/null >"$tmp" 2>&1 || status=$?
    if [ $status -ne 0 ]; then
        echo "sbi-expected.sh: $name (OpenSBI $version): QEMU exited with status $status:" >&2
        cat "$tmp" >&2
        exit 1
    fi
    if ! tr -d '\r' <"$tmp" | grep -qx "OpenSBI $banner"; then
        echo "sbi-expected.sh: $fw is not OpenSBI $version:" >&2
        head -3 "$tmp" >&2
        exit 1
    fi
    tr -d '\r' <"$tmp" | awk -v p="$prog: rv" 'index($0, p) == 1 { on = 1 } on' >"$dir/$name.out"
    if [ ! -s "$dir/$name.out" ]; then echo "sbi-expected.sh: $name printed no first line" >&2; exit 1; fi
    echo "$dir/$name.out: $(wc -l <"$dir/$name.out") lines, $(grep -c '^FAIL' "$dir/$name.out" || true) FAIL"
}

for elf in sbi/elf/*.elf; do
    name=$(basename "$elf" .elf)
    [ -n "${ONLY:-}" ] && [ "$ONLY" != "${name%-*}" ] && continue
    # sbi_fault loops in its trap handler for ever on QEMU (rvtrace stops it: crates/cli/tests/sbi.rs).
    [ "${name%-*}" = sbi_fault ] && continue
    case $(riscv64-unknown-elf-readelf -h "$elf" | awk '/Class:/ {print $2}') in
    ELF32) xlen=32 ;;
    *) xlen=64 ;;
    esac
    qemu=$root/target/tools/qemu10/bin/qemu-system-riscv$xlen
    fw151=$root/target/tools/opensbi/usr/lib/riscv$xlen-linux-gnu/opensbi/generic/fw_jump.bin
    for f in "$qemu" "$fw151"; do
        [ -e "$f" ] || { echo "sbi-expected.sh: $f missing (run scripts/setup.sh)" >&2; exit 1; }
    done
    record 1.5.1 v1.5 "$fw151" "$elf"
    fw11=/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin
    if [ "$xlen" = 64 ]; then
        if [ -e "$fw11" ]; then
            record 1.1 v1.1 "$fw11" "$elf"
        else
            echo "sbi-expected.sh: $fw11 missing (apt-get install opensbi): OpenSBI 1.1 skipped" >&2
        fi
    fi
done
