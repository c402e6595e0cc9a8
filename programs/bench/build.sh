#!/bin/sh
# Builds the benchmark workload for rv64gc and rv32imac (same flags as programs/build.sh).
# EXPECTED is the checksum QEMU prints for the program (checked with qemu-system-riscv64/32 -M virt).
set -e
cd "$(dirname "$0")"
mem="-Wl,--defsym=__flash=0x80000000 -Wl,--defsym=__flash_size=0x200000 -Wl,--defsym=__ram=0x80200000 -Wl,--defsym=__ram_size=0x200000"
common="-O2 -g --specs=picolibc.specs --oslib=semihost --crt0=semihost $mem"
riscv64-unknown-elf-gcc $common -DEXPECTED=${EXPECTED64:-0x625d70d5u} -march=rv64gc -mabi=lp64d -mcmodel=medany workload.c -o workload-rv64gc.elf
riscv64-unknown-elf-gcc $common -DEXPECTED=${EXPECTED32:-0x625d70d5u} -march=rv32imac -misa-spec=2.2 -mabi=ilp32 workload.c -o workload-rv32imac.elf
