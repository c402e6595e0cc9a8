#!/bin/sh
# Regenerates programs/expected/<name>.out: the console output of every programs/elf/<name>.elf
# under QEMU (an independent implementation), run as
#   cd programs && qemu-system-riscv{64,32} -M virt -bios none -nographic \
#       -semihosting-config enable=on,target=native -kernel elf/<name>.elf
# Without a semihosting chardev QEMU writes the program's console output (picolibc: SYS_WRITEC
# for stdout and stderr alike) to its own stderr; that is what is recorded. QEMU's stdout (the
# UART) must stay empty and its exit status (= the program's) must be 0.
# Runnable from any directory; stops at the first failure.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
mkdir -p expected
tmp=$(mktemp "${TMPDIR:-/tmp}/qemu-expected.XXXXXX")
trap 'rm -f "$tmp"' EXIT
for elf in elf/*.elf; do
    name=$(basename "$elf" .elf)
    case $(riscv64-unknown-elf-readelf -h "$elf" | awk '/Class:/ {print $2}') in
    ELF32) qemu=qemu-system-riscv32 ;;
    *) qemu=qemu-system-riscv64 ;;
    esac
    status=0
    timeout 120 $qemu -M virt -bios none -nographic -semihosting-config enable=on,target=native \
        -kernel "$elf" </dev/null >"$tmp" 2>"expected/$name.out" || status=$?
    if [ "$status" -ne 0 ]; then
        echo "qemu-expected.sh: $name exited with status $status:" >&2
        cat "expected/$name.out" >&2
        exit 1
    fi
    if [ -s "$tmp" ]; then echo "qemu-expected.sh: $name wrote to QEMU's stdout:" >&2; cat "$tmp" >&2; exit 1; fi
    echo "expected/$name.out: $(wc -l <"expected/$name.out") lines"
done
