#!/bin/sh
# qemu-pcs.sh ELF > PCS : the retired-PC list ("0x%x" per line) of ELF under QEMU.
# QEMU (default qemu-system-riscv{32,64} on PATH), QEMU_CPU (CPU properties after
# "-cpu rvXX,h=false,": the hart model has no H) and QEMU_ARGS (extra arguments, e.g. the
# -icount of programs/qemu.conf) can be set in the environment; QEMU 8.1 and later
# get -accel tcg,one-insn-per-tb=on instead of -singlestep.
# QEMU is run in the current directory with ELF exactly as given: picolibc copies the
# semihosting command line (= the -kernel string) into argv, so the path's length changes the
# instruction stream. The program's console output goes to stderr, QEMU's exit status is kept.
# Same convention as the Rust helper in crates/cli/tests/programs.rs (see programs/README.md):
#   * one "Trace 0: HOST [CS_BASE/PC/FLAGS/CFLAGS] SYM" line per executed instruction;
#   * "Stopped execution of TB chain before HOST [PC]": that (last) Trace did not execute;
#   * "riscv_cpu_do_interrupt: ..., async:0, cause:C, epc:E": the last Trace trapped; it is
#     dropped unless C is a breakpoint (3) or an ecall (8, 9, 11); async:1 drops nothing;
#   * PCs before the first execution of the ELF entry point (QEMU's reset stub) are dropped.
set -eu
elf=${1:?usage: qemu-pcs.sh ELF}
case $(riscv64-unknown-elf-readelf -h "$elf" | awk '/Class:/ {print $2}') in
ELF32) xlen=32 qemu=${QEMU:-qemu-system-riscv32} ;;
*) xlen=64 qemu=${QEMU:-qemu-system-riscv64} ;;
esac
one=-singlestep
case $("$qemu" --version | awk '/version/ {print $4; exit}') in
[0-7].* | 8.0.*) ;;
*) one="-accel tcg,one-insn-per-tb=on" ;;
esac
entry=$(riscv64-unknown-elf-readelf -h "$elf" | awk '/Entry point/ {print $4}')
log=$(mktemp "${TMPDIR:-/tmp}/qemu-pcs.XXXXXX")
trap 'rm -f "$log"' EXIT
status=0
# shellcheck disable=SC2086
$qemu -M virt -cpu "rv$xlen,h=false${QEMU_CPU:+,$QEMU_CPU}" -bios none -nographic \
    -semihosting-config enable=on,target=native ${QEMU_ARGS:-} \
    $one -d exec,nochain,int -D "$log" -kernel "$elf" </dev/null 1>&2 || status=$?
awk -v entry="$entry" '
function norm(h) { sub(/^0x/, "", h); sub(/^0+/, "", h); return h == "" ? "0" : h }
function flush() { if (have) { if (!started && pc == want) started = 1; if (started) print "0x" pc; have = 0 } }
BEGIN { want = norm(entry) }
/^Trace / {
    flush()
    split($4, f, "/"); pc = norm(f[2]); have = 1; next
}
/^Stopped execution of TB chain before / {
    s = $0; sub(/.*\[/, "", s); sub(/\].*/, "", s)
    if (!have || norm(s) != pc) { print "qemu-pcs.sh: unexpected line: " $0 > "/dev/stderr"; exit 2 }
    have = 0; next
}
/^riscv_cpu_do_interrupt: / {
    if ($0 ~ /async:0,/) {
        c = $0; sub(/.*cause:/, "", c); sub(/,.*/, "", c); c = norm(c)
        e = $0; sub(/.*epc:/, "", e); sub(/,.*/, "", e)
        if (!have || norm(e) != pc) { print "qemu-pcs.sh: trap epc is not the last PC: " $0 > "/dev/stderr"; exit 2 }
        if (c != "3" && c != "8" && c != "9" && c != "b") have = 0
    }
    next
}
{ print "qemu-pcs.sh: unknown log line: " $0 > "/dev/stderr"; exit 2 }
END { flush() }
' "$log"
exit $status
