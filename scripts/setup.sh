#!/bin/sh
# Installs what rvtrace's tests need on a Debian machine that already has Rust:
# the RISC-V cross compiler and picolibc (to rebuild test programs), QEMU (the
# independent reference the hart model is compared with) and cmake. Safe to run repeatedly.
set -eu
need=""
command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 || need="$need gcc-riscv64-unknown-elf"
[ -e /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs ] || need="$need picolibc-riscv64-unknown-elf"
command -v qemu-system-riscv64 >/dev/null 2>&1 || need="$need qemu-system-misc"
# cmake builds Berkeley SoftFloat, the independent oracle of the soft-float tests.
command -v cmake >/dev/null 2>&1 || need="$need cmake"
[ -z "$need" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
echo "setup: installing$need" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null
