#!/bin/sh
# Makes crates/ntrace/tests/vectors/nexrv (see README.md there). NEXRV = the NexRv binary.
set -eu
NEXRV=${NEXRV:-/tmp/nexrv/NexRv.exe}
V=$1            # output directory
E=$2            # programs/elf
mkdir -p "$V"; cd "$V"
enc() { # enc PCSEQ OUT.bin CFG
    case $3 in
    btm) o=-nobhm ;; htm) o= ;; htm-rpt2) o="-rpt 2" ;; htm-cs8) o="-cs 8" ;; htm-cs8-rpt2) o="-cs 8 -rpt 2" ;;
    esac
    # shellcheck disable=SC2086
    "$NEXRV" -enco "$1" -nex "$2" $o >/dev/null
}
for spec in "fnptr-rv64gc:btm htm htm-rpt2 htm-cs8 htm-cs8-rpt2" \
            "setjmp-rv64gc:btm htm htm-rpt2 htm-cs8 htm-cs8-rpt2" \
            "recurse-rv32imac:htm-rpt2 htm-cs8 htm-cs8-rpt2"; do
    p=${spec%%:*}
    cp "$E/$p.elf" "$p.elf"
    rvtrace run "$p.elf" --pcs "$p.pcs.txt" >/dev/null
    riscv64-unknown-elf-objdump -d "$p.elf" > "$p-OBJD.txt"
    "$NEXRV" -conv -objd "$p-OBJD.txt" -pcinfo "$p-PCINFO.txt" >/dev/null
    "$NEXRV" -conv -pcinfo "$p-PCINFO.txt" -pconly "$p.pcs.txt" -pcseq "$p-PCSEQ.txt" >/dev/null
    for c in ${spec#*:}; do enc "$p-PCSEQ.txt" "$p-$c.bin" "$c"; done
    if [ "$p" = fnptr-rv64gc ]; then
        # Traces cut after line K of the PCSEQ (NexRv's end of trace): 3003 a taken branch,
        # 4067 a branch that fills HIST, 6468 a return, 6484 an indirect jump.
        for k in 3003 4067 6468 6484; do
            head -n $k "$p-PCSEQ.txt" > cut.txt
            for c in btm htm htm-rpt2 htm-cs8 htm-cs8-rpt2; do enc cut.txt "$p-cut$k-$c.bin" "$c"; done
        done
        rm cut.txt
    fi
    gzip -9n "$p-PCSEQ.txt"
    rm "$p.pcs.txt" "$p-OBJD.txt" "$p-PCINFO.txt"
done
# 2,200,000 linear 4-byte instructions from 0x80000000, a taken branch, an indirect jump back to
# 0x80000000, one 2-byte instruction: one I-CNT of 4,400,004 half-words (more than 2^22).
python3 -c "
import sys
w = sys.stdout.write
for i in range(2200000): w('0x%X,L4\n' % (0x80000000 + 4 * i))
w('0x%X,B4\n' % (0x80000000 + 4 * 2200000))
w('0x80000000,JI4\n0x80000000,L2\n')" > long.txt
enc long.txt long-btm.bin btm; enc long.txt long-htm.bin htm
rm long.txt
