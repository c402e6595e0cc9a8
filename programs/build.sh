#!/bin/sh
# Rebuilds every test program into programs/elf/<name>-<arch>.elf (the S-mode SBI payloads into
# programs/sbi/elf/, see sbi_build below).
# Needs Debian's bare-metal GCC and picolibc:
#   apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf
# Flags are those of the conformance programs' build.sh (-O2 -g, picolibc semihosting,
# RAM at 0x80000000). Afterwards the DWARF sections are stripped (symbols are kept) so the
# committed ELFs stay small; the loaded bytes are unchanged. KEEP_DEBUG=1 keeps them.
# Runnable from any directory; stops at the first error.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/src"
out="$here/elf"
mkdir -p "$out"
cc=riscv64-unknown-elf-gcc
strip=riscv64-unknown-elf-strip
command -v "$cc" >/dev/null || { echo "build.sh: $cc not found" >&2; exit 1; }

mem="-Wl,--defsym=__flash=0x80000000 -Wl,--defsym=__flash_size=0x200000 -Wl,--defsym=__ram=0x80200000 -Wl,--defsym=__ram_size=0x200000"
common="-O2 -g --specs=picolibc.specs --oslib=semihost --crt0=semihost $mem -fdebug-prefix-map=$here=programs"

arch_flags() {
    case $1 in
    rv64gc)   echo "-march=rv64gc -mabi=lp64d -mcmodel=medany" ;;
    rv32imac) echo "-march=rv32imac -misa-spec=2.2 -mabi=ilp32" ;;
    rv64g)    echo "-march=rv64g -mabi=lp64d -mcmodel=medany" ;;      # no C: picolibc rv64iafd multilib
    rv32ima)  echo "-march=rv32ima -misa-spec=2.2 -mabi=ilp32" ;;     # no C: picolibc rv32ia multilib
    *) echo "build.sh: unknown arch $1" >&2; exit 1 ;;
    esac
}

# name_asm_file ELF SOURCE: gcc assembles a .S given with other sources to a temporary object
# whose name ("ccXXXXXX.o") becomes the FILE symbol of its local symbols, so an ELF that keeps
# its symbol table differs at every build; the symbol takes the source's name instead.
name_asm_file() {
    for sym in $(riscv64-unknown-elf-readelf -sW "$1" | awk '$4 == "FILE" && $8 ~ /^cc.*[.]o$/ { print $8 }'); do
        riscv64-unknown-elf-objcopy --redefine-sym "$sym=$(basename "$2")" "$1"
    done
}

# build NAME "ARCHS" SOURCES...
build() {
    name=$1 archs=$2
    shift 2
    for arch in $archs; do
        elf="$out/$name-$arch.elf"
        # shellcheck disable=SC2046
        $cc $common $(arch_flags "$arch") "$@" -lm -o "$elf"
        if [ "${KEEP_DEBUG:-0}" != 1 ]; then $strip --strip-debug "$elf"; fi
        echo "built elf/$name-$arch.elf"
    done
}

both="rv64gc rv32imac"
build recurse    "$both" recurse.c
build switch     "$both" switch.c
build fnptr      "$both" fnptr.c
build loops      "$both" loops.c
build setjmp     "$both" setjmp.c
build stdio      "$both" stdio.c
build heap       "$both" heap.c
build float      "$both" float.c
build mixed      "$both" mixed.c mixed.S
build traps      "$both" traps.c rvtest.S
build timer      "$both" timer.c rvtest.S
build sdeleg     "$both" sdeleg.c rvtest.S
build csrs       "$both" csrs.c rvtest.S
build no_h       "$both" no_h.c rvtest.S
build pmu_access "$both" pmu_access.c rvtest.S
build pmu_spec   "$both" pmu_spec.c rvtest.S
build pmu_overflow "$both" pmu_overflow.c rvtest.S
build pmu_events "$both" pmu_events.c rvtest.S
build ctr_m      "$both" ctr_m.c ctr_regions.S
build ctr_su     "$both" ctr_su.c ctr_regions.S rvtest.S
build ctr_stateen "$both" ctr_stateen.c ctr_regions.S rvtest.S
build sstc       "$both" sstc.c rvtest.S
build pmp        "$both" pmp.c pmp.S rvtest.S
build triggers   "$both" triggers.c triggers.S rvtest.S
build vm         "$both" vm.c rvtest.S
build plic       "$both" plic.c rvtest.S
build virt_io    "$both" virt_io.c
# The tiny S-mode kernel: its own linker script (user programs linked at their virtual
# addresses, loaded into RAM pages: kernel/kernel.ld); no loop-to-memset/memcpy calls, which
# would send the U-mode programs into libc's (kernel, non-user) pages.
build kernel     "$both" kernel/kernel.c kernel/kentry.S kernel/user_a.c kernel/user_b.c rvtest.S \
    -T kernel/kernel.ld -fno-tree-loop-distribute-patterns

# The same kernel as a small system (programs/system/, kept out of elf/: it needs its user
# programs loaded beside it): the kernel without user code (SEPARATE_USERS), and each user
# program an ELF file of its own linked at the same virtual addresses (kernel/user.ld), loaded
# at the physical pages the kernel maps: `rvtrace run system/kernel-rv64gc.elf --load
# system/user_a-rv64gc.elf --load system/user_b-rv64gc.elf`.
sys="$here/system"
mkdir -p "$sys"
# kernel.ld without the user sections (empty output sections there upset the data segment).
kld=$(mktemp "${TMPDIR:-/tmp}/kernel.XXXXXX.ld")
sed '/User program A: text/,/a user section is larger than its page/d' kernel/kernel.ld >"$kld"
# shellcheck disable=SC2046
$cc $common $(arch_flags rv64gc) -DSEPARATE_USERS kernel/kernel.c kernel/kentry.S rvtest.S \
    -T "$kld" -fno-tree-loop-distribute-patterns -lm -o "$sys/kernel-rv64gc.elf"
rm -f "$kld"
for user in a:0x80100000:0x80101000 b:0x80102000:0x80103000; do
    u=${user%%:*} pas=${user#*:}
    # shellcheck disable=SC2046
    $cc -O2 -g -fdebug-prefix-map="$here"=programs $(arch_flags rv64gc) -nostdlib -nostartfiles \
        -ffreestanding -fno-tree-loop-distribute-patterns -DSEPARATE_USERS -DMAIN="user_${u}_main" \
        -T kernel/user.ld -Wl,--defsym=TEXT_PA="${pas%%:*}" -Wl,--defsym=DATA_PA="${pas#*:}" \
        kernel/user_start.S "kernel/user_$u.c" -o "$sys/user_$u-rv64gc.elf"
    name_asm_file "$sys/user_$u-rv64gc.elf" kernel/user_start.S
done
for elf in "$sys"/*.elf; do
    # The kernel's empty .tdata goes too: strip would otherwise grow its data segment's file
    # size to reach .tdata's file offset (2 MiB of zeros, overlapping the next segment). The
    # user programs keep their DWARF (6 KB each): source lines and coverage per process are
    # tested with them (crates/cli/tests/kernel_trace.rs).
    case $elf in */user_*) ;; *)
        if [ "${KEEP_DEBUG:-0}" != 1 ]; then $strip --strip-debug --remove-section=.tdata "$elf"; fi ;;
    esac
    echo "built system/$(basename "$elf")"
done

# Zba/Zbb (bitmanip) and Zbs/Zbc (zbs_zbc): compiled with the extensions, linked against the
# plain multilib (picolibc has no multilib with them, and the ABI is the same).
for prog_ext in bitmanip:_zba_zbb zbs_zbc:_zbs_zbc; do
    prog=${prog_ext%%:*} ext=${prog_ext#*:}
    for arch in rv64gc rv32imac; do
        obj=$(mktemp "${TMPDIR:-/tmp}/$prog.XXXXXX.o")
        # shellcheck disable=SC2046
        $cc $common $(arch_flags "$arch" | sed "s/-march=$arch/-march=${arch}$ext/") -c "$prog.c" -o "$obj"
        # shellcheck disable=SC2046
        $cc $common $(arch_flags "$arch") "$obj" -lm -o "$out/$prog-${arch}$ext.elf"
        rm -f "$obj"
        if [ "${KEEP_DEBUG:-0}" != 1 ]; then $strip --strip-debug "$out/$prog-${arch}$ext.elf"; fi
        echo "built elf/$prog-${arch}$ext.elf"
    done
done
build nocompress "rv64g rv32ima" nocompress.c

# The no-C builds must not contain a single 16-bit instruction (padding .2byte 0 aside).
for elf in "$out"/nocompress-*.elf; do
    n=$(riscv64-unknown-elf-objdump -d "$elf" | awk -F'\t' 'NF >= 3 && $2 ~ /^[0-9a-f][0-9a-f][0-9a-f][0-9a-f] +$/ && $3 !~ /^\.2byte/' | wc -l)
    if [ "$n" -ne 0 ]; then echo "build.sh: $elf has $n compressed instructions" >&2; exit 1; fi
done

# HTIF programs (riscv-tests style, no picolibc): run only on the hart model, since QEMU's virt
# machine has no HTIF. Kept out of elf/ so the QEMU comparison does not pick them up.
for code in 0 3; do
    $cc -march=rv64gc -mabi=lp64d -nostdlib -nostartfiles -Wl,-N -Wl,--no-warn-rwx-segments -Wl,--discard-all -Wl,-Ttext=0x80000000 -DEXIT_CODE=$code \
        "$here/htif/htif.S" -o "$here/htif/htif-exit$code-rv64gc.elf"
    echo "built htif/htif-exit$code-rv64gc.elf"
done

# printf over SiFive's ITC (itc/): stores to the ITC stimulus port, which QEMU's virt machine
# does not have; run on the hart model with `rvtrace run --itc 0x1000000`. Kept out of elf/ so
# the QEMU comparison does not pick it up.
for arch in $both; do
    # shellcheck disable=SC2046
    $cc $common $(arch_flags "$arch") "$here/itc/itc_printf.c" -lm -o "$here/itc/itc_printf-$arch.elf"
    if [ "${KEEP_DEBUG:-0}" != 1 ]; then $strip --strip-debug "$here/itc/itc_printf-$arch.elf"; fi
    echo "built itc/itc_printf-$arch.elf"
done

# S-mode SBI payloads (sbi/): no libc; entered in S-mode by an SBI implementation (OpenSBI, or
# `rvtrace run --sbi`), linked where QEMU's -kernel and OpenSBI's fw_jump expect the next stage.
# Kept out of elf/ (sbi/elf/): the semihosting tests and qemu-expected.sh run every elf/*.elf.
sbi_build() {
    name=$1
    shift
    for arch in rv64gc rv32imac; do
        case $arch in
        rv64gc) base=0x80200000 ;;
        rv32imac) base=0x80400000 ;;
        esac
        elf="$here/sbi/elf/$name-$arch.elf"
        mkdir -p "$here/sbi/elf"
        # shellcheck disable=SC2046
        $cc -O2 -g -ffreestanding -nostdlib -nostartfiles -fno-builtin -Wall -Wextra -Werror \
            -fdebug-prefix-map="$here=programs" $(arch_flags "$arch") -T "$here/sbi/payload.ld" \
            -Wl,--defsym=__payload_base=$base -Wl,--no-warn-rwx-segments -Wl,--build-id=none \
            "$here/sbi/start.S" "$here/sbi/lib.c" "$@" -lgcc -o "$elf"
        if [ "${KEEP_DEBUG:-0}" != 1 ]; then $strip --strip-debug "$elf"; fi
        echo "built sbi/elf/$name-$arch.elf"
    done
}
sbi_build sbi_pmu "$here/sbi/sbi_pmu.c"
sbi_build sbi_base "$here/sbi/sbi_base.c"
sbi_build sbi_fail "$here/sbi/sbi_fail.c"
sbi_build sbi_fault "$here/sbi/sbi_fault.c"
sbi_build pmu_stat "$here/sbi/pmu_stat.c"
sbi_build sbi_v3 "$here/sbi/sbi_v3.c"
sbi_build sse "$here/sbi/sse.c"

# S-mode payloads for the boot modes (rvtrace run --sbi / --bios, QEMU -bios FW -kernel):
# no libc, linked where fw_jump jumps (0x80200000 on RV64, 0x80400000 on RV32). Kept out of
# elf/ (they are not bare-metal programs).
for arch in rv64gc rv32imac; do
    case $arch in rv64gc) at=0x80200000 ;; *) at=0x80400000 ;; esac
    for name in sbi_hello sbi_state semihost_s smp; do
        # Assembled to a fixed object name first: the ELF's symbol table names the object, so a
        # temporary name would make every build differ.
        obj="$(mktemp -d "${TMPDIR:-/tmp}/boot.XXXXXX")"
        # shellcheck disable=SC2046
        $cc $(arch_flags "$arch") -c -o "$obj/$name.o" "$here/boot/$name.S"
        # shellcheck disable=SC2046
        (cd "$obj" && $cc $(arch_flags "$arch") -nostdlib -nostartfiles -static -Wl,-Ttext=$at \
            -Wl,--no-relax -Wl,-e,_start -Wl,-N -Wl,--no-warn-rwx-segments \
            -o "$here/boot/$name-$arch.elf" "$name.o")
        rm -rf "$obj"
        echo "built boot/$name-$arch.elf"
    done
done

# DWARF-4 builds for the analysis tests (coverage, AutoFDO: crates/analysis): debug info kept,
# -gdwarf-4 because Debian's autofdo 0.19 reads DWARF 4 only, and picolibc's crt0 linked after
# the program's own objects: autofdo stops at the first compilation unit it cannot parse, and
# picolibc's are DWARF 5, so the program's units must come first (the layout is otherwise that
# of elf/). Kept out of elf/ (the QEMU comparison runs every elf/*.elf).
dwarf_build() {
    name=$1 archs=$2
    shift 2
    for arch in $archs; do
        case $arch in
        rv64gc) crt0=/usr/lib/picolibc/riscv64-unknown-elf/lib/rv64imafdc/lp64d/crt0-semihost.o ;;
        rv32imac) crt0=/usr/lib/picolibc/riscv64-unknown-elf/lib/rv32imac/ilp32/crt0-semihost.o ;;
        esac
        mkdir -p "$here/dwarf"
        # -fno-partial-inlining: GCC's split of a function (an inlined head, an out-of-line
        # rest) gives DWARF in which autofdo 0.19's create_llvm_prof names an inlined call
        # site with bytes it never wrote (a different name each run, which llvm-profdata then
        # may refuse).
        # shellcheck disable=SC2046
        $cc $(echo "$common" | sed 's/ -g / -gdwarf-4 /') -fno-partial-inlining -nostartfiles $(arch_flags "$arch") "$@" "$crt0" -lm \
            -o "$here/dwarf/$name-$arch.elf"
        for src in "$@"; do
            case $src in *.S) name_asm_file "$here/dwarf/$name-$arch.elf" "$src" ;; esac
        done
        echo "built dwarf/$name-$arch.elf"
    done
}
# Inlined functions and a GCC clone (quick_sort.constprop.0), linked the usual way (picolibc's
# crt0 first, DWARF 5 everywhere, which create_llvm_prof cannot read) with the debug information
# kept: the source lines, inline frames and LLVM sample profile of crates/cli/tests/analysis.rs.
# shellcheck disable=SC2046
$cc $common $(arch_flags rv64gc) inline.c -lm -o "$here/dwarf/inline-rv64gc.elf"
echo "built dwarf/inline-rv64gc.elf"
dwarf_build recurse "$both" recurse.c
dwarf_build setjmp rv64gc setjmp.c
dwarf_build loops rv64gc loops.c
dwarf_build traps rv64gc traps.c rvtest.S

# Linux user programs (programs/linux/): static and freestanding (raw system calls, no C
# library), with Debian's gcc-riscv64-linux-gnu for its kernel headers (system-call numbers,
# perf_event_attr). A few kilobytes each, committed beside their sources; perf_count stripped,
# collatz with its symbols (a decode names its functions).
lcc=riscv64-linux-gnu-gcc
command -v "$lcc" >/dev/null || { echo "build.sh: $lcc not found (apt-get install gcc-riscv64-linux-gnu)" >&2; exit 1; }
for prog in perf_count collatz; do
    $lcc -O2 -static -nostdlib -ffreestanding -fno-pic -no-pie -march=rv64gc -mabi=lp64d \
        -o "$here/linux/$prog" "$here/linux/$prog.c"
    [ "$prog" = collatz ] || riscv64-linux-gnu-strip "$here/linux/$prog"
    echo "built linux/$prog"
done
