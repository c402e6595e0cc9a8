#!/bin/sh
# Regenerates programs/expected/<name>.out: the console output of every programs/elf/<name>.elf
# under QEMU (an independent implementation), run as
#   cd programs && QEMU -M virt -cpu rvXX,h=false[,PROPS] -bios none -nographic \
#       -semihosting-config enable=on,target=native [EXTRA] -kernel elf/<name>.elf
# QEMU, PROPS and EXTRA per program come from qemu.conf (default: Debian's QEMU 7.2 on PATH,
# no PROPS; its rvtrace column is for crates/cli/tests/programs.rs); QEMU 10 is
# target/tools/qemu10/bin/qemu-system-riscvXX (scripts/setup.sh). h=false: the hart model has no
# H extension (crates/sim/README.md, "No H").
# Without a semihosting chardev QEMU writes the program's console output (picolibc: SYS_WRITEC
# for stdout and stderr alike) to its own stderr; that is what is recorded. QEMU's stdout (the
# UART) must stay empty and its exit status (= the program's) must be 0.
# qemu.conf's output column: "qemu" records QEMU's output as is; "spec" keeps QEMU 10's output
# in expected/qemu-10/ and writes expected/<name>.out through qemu-to-spec.awk (the lines where
# QEMU differs from the spec, corrected); "none" records nothing (checked elsewhere).
# Programs run on QEMU 10 are also run on QEMU 7.2 (-cpu rvXX,h=false,sscofpmf=true, same EXTRA) for
# reference: expected/qemu-7.2/<name>.out (used by no test; README, "QEMU and the spec"), except
# the CTR programs (QEMU 7.2 has no CTR).
# Runnable from any directory; stops at the first failure. ONLY=<name> regenerates one file.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$here"
mkdir -p expected expected/qemu-10 expected/qemu-7.2
tmp=$(mktemp "${TMPDIR:-/tmp}/qemu-expected.XXXXXX")
trap 'rm -f "$tmp" "$tmp.out"' EXIT

# run QEMU_BIN CPU_PROPS ELF OUT EXTRA...: console output to OUT; returns QEMU's exit status.
run() {
    bin=$1 props=$2 elf=$3 out=$4
    shift 4
    cpu="-cpu rv$xlen,h=false"
    [ "$props" != - ] && cpu="$cpu,$props"
    status=0
    # shellcheck disable=SC2086
    timeout 120 "$bin" -M virt $cpu -bios none -nographic -semihosting-config enable=on,target=native \
        "$@" -kernel "$elf" </dev/null >"$tmp" 2>"$out" || status=$?
    if [ -s "$tmp" ]; then echo "qemu-expected.sh: $elf wrote to QEMU's stdout:" >&2; cat "$tmp" >&2; exit 1; fi
    return $status
}

for elf in elf/*.elf; do
    name=$(basename "$elf" .elf)
    [ -n "${ONLY:-}" ] && [ "$ONLY" != "$name" ] && continue
    prog=${name%-*}
    case $(riscv64-unknown-elf-readelf -h "$elf" | awk '/Class:/ {print $2}') in
    ELF32) xlen=32 ;;
    *) xlen=64 ;;
    esac
    line=$(awk -v p="$prog" '$1 == p { print; exit }' qemu.conf)
    if [ -z "$line" ]; then line="$prog 7.2 - qemu yes -"; fi
    # shellcheck disable=SC2086
    set -- $line
    qemu=$2 props=$3 output=$4
    [ $# -ge 6 ] || { echo "qemu-expected.sh: qemu.conf: $prog: short line" >&2; exit 1; }
    shift 6 # the rvtrace column (6) is for crates/cli/tests/programs.rs
    case $qemu in
    7.2) bin=qemu-system-riscv$xlen ;;
    10)
        bin=$root/target/tools/qemu10/bin/qemu-system-riscv$xlen
        [ -x "$bin" ] || { echo "qemu-expected.sh: $bin missing (run scripts/setup.sh)" >&2; exit 1; }
        ;;
    *) echo "qemu-expected.sh: qemu.conf: $prog: unknown QEMU $qemu" >&2; exit 1 ;;
    esac
    case $output in
    qemu) out=expected/$name.out ;;
    spec | none) out=expected/qemu-10/$name.out ;;
    *) echo "qemu-expected.sh: qemu.conf: $prog: unknown output $output" >&2; exit 1 ;;
    esac
    if ! run "$bin" "$props" "$elf" "$out" "$@"; then
        echo "qemu-expected.sh: $name exited with status $status:" >&2
        cat "$out" >&2
        exit 1
    fi
    case $output in
    qemu) echo "expected/$name.out: $(wc -l <"$out") lines (QEMU $qemu)" ;;
    spec)
        awk -v prog="$prog" -v xlen="$xlen" -f qemu-to-spec.awk "$out" >"$tmp.out"
        mv "$tmp.out" "expected/$name.out"
        echo "expected/$name.out: $(wc -l <"expected/$name.out") lines (QEMU $qemu, corrected to the spec; QEMU's in $out)"
        ;;
    none)
        rm -f "$out"
        echo "$name: ran on QEMU $qemu (no expected file)"
        ;;
    esac
    # (not for the CTR programs: QEMU 7.2 has no Smctr/Ssctr)
    if [ "$qemu" = 10 ] && [ "$output" != none ] && ! echo "$props" | grep -q smctr; then
        ref=expected/qemu-7.2/$name.out
        props7=-
        [ "$props" != - ] && props7=sscofpmf=true
        if ! run "qemu-system-riscv$xlen" "$props7" "$elf" "$ref" "$@"; then
            echo "(exit status $status)" >>"$ref"
        fi
        echo "$ref: $(wc -l <"$ref") lines (QEMU 7.2, reference only)"
    fi
done
