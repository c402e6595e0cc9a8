#!/bin/sh
# Builds the benchmark workload for rv64gc and rv32imac (same flags as programs/build.sh).
# EXPECTED is the checksum QEMU prints for the program (checked with qemu-system-riscv64/32 -M virt).
set -e
cd "$(dirname "$0")"
mem="-Wl,--defsym=__flash=0x80000000 -Wl,--defsym=__flash_size=0x200000 -Wl,--defsym=__ram=0x80200000 -Wl,--defsym=__ram_size=0x200000"
common="-O2 -g --specs=picolibc.specs --oslib=semihost --crt0=semihost $mem"
riscv64-unknown-elf-gcc $common -DEXPECTED=${EXPECTED64:-0x625d70d5u} -march=rv64gc -mabi=lp64d -mcmodel=medany workload.c -o workload-rv64gc.elf
riscv64-unknown-elf-gcc $common -DEXPECTED=${EXPECTED32:-0x625d70d5u} -march=rv32imac -misa-spec=2.2 -mabi=ilp32 workload.c -o workload-rv32imac.elf
# The workload on HTIF instead of semihosting (htif_wrap.c), for Spike; hosted crt0 so that main's
# return goes through exit() to _exit. RV64 only (an HTIF console command is one 64-bit store).
riscv64-unknown-elf-gcc -O2 -g --specs=picolibc.specs --crt0=hosted $mem -DEXPECTED=${EXPECTED64:-0x625d70d5u} -march=rv64gc -mabi=lp64d -mcmodel=medany workload.c htif_wrap.c -o workload-htif-rv64gc.elf
# The workload in S-mode with and without address translation (vm_wrap.c).
for vm in 0 1; do
    riscv64-unknown-elf-gcc $common -DEXPECTED=${EXPECTED64:-0x625d70d5u} -Dmain=workload_main -march=rv64gc -mabi=lp64d -mcmodel=medany -c workload.c -o /tmp/workload-vm64.o
    riscv64-unknown-elf-gcc $common -DVM=$vm -march=rv64gc -mabi=lp64d -mcmodel=medany vm_wrap.c /tmp/workload-vm64.o ../src/rvtest.S -o workload-s-vm$vm-rv64gc.elf
    riscv64-unknown-elf-gcc $common -DEXPECTED=${EXPECTED32:-0x625d70d5u} -Dmain=workload_main -march=rv32imac -misa-spec=2.2 -mabi=ilp32 -c workload.c -o /tmp/workload-vm32.o
    riscv64-unknown-elf-gcc $common -DVM=$vm -march=rv32imac -misa-spec=2.2 -mabi=ilp32 vm_wrap.c /tmp/workload-vm32.o ../src/rvtest.S -o workload-s-vm$vm-rv32imac.elf
done
rm -f /tmp/workload-vm64.o /tmp/workload-vm32.o
