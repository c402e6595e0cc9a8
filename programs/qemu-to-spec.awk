# qemu-to-spec.awk: QEMU 10's output of a "spec" program of qemu.conf -> what the spec says it
# must print (programs/README.md, "QEMU and the spec", "QEMU and CTR"). Run with -v prog=NAME
# -v xlen=32|64 (qemu-expected.sh does): pmu_spec (privileged spec) or ctr_stateen (CTR v1.0,
# Smstateen, Sscsrind). Every rule must fire exactly as often as listed in END (else exit 1),
# so a QEMU that changes its behaviour cannot go unnoticed.
function fix(rule) { fired[rule]++ }
BEGIN {
    if (prog != "pmu_spec" && prog != "ctr_stateen" || xlen != 32 && xlen != 64) {
        printf "qemu-to-spec.awk: no rules for prog=%s xlen=%s\n", prog, xlen > "/dev/stderr"
        bad = 1; exit 1
    }
}
prog == "ctr_stateen" {
    # CTR v1.0 "State Enable Access Control": with mstateen0.CTR=0, S-mode accesses to sireg*
    # while siselect is in 0x200..0x2FF raise illegal instruction. QEMU lets them through.
    if ($0 == "S, mstateen0.CTR=0: illegal sctrctl sctrstatus sctrdepth sctrclr") {
        print "S, mstateen0.CTR=0: illegal sctrctl sctrstatus sctrdepth sireg sireg2 sireg3 sireg4 sctrclr"
        fix("ctrsireg"); next
    }
    # Smstateen/Sscsrind: mstateen0 bit 60 (CSRIND) is writable, on RV32 as mstateen0h bit 28.
    # QEMU's mstateen0h keeps it read-only 0, so S-mode can never reach siselect/sireg*.
    if ($0 == "mstateen0 CTR and CSRIND written, read back: CTR 1 CSRIND 0") {
        print "mstateen0 CTR and CSRIND written, read back: CTR 1 CSRIND 1"; fix("csrind"); next
    }
    if ($0 == "S, mstateen0.CTR=1: illegal siselect sireg sireg2 sireg3 sireg4") {
        print "S, mstateen0.CTR=1: illegal"; fix("csrind"); next
    }
    if ($0 == "S, mstateen0.CTR=0: illegal sctrctl sctrstatus sctrdepth siselect sireg sireg2 sireg3 sireg4 sctrclr") {
        print "S, mstateen0.CTR=0: illegal sctrctl sctrstatus sctrdepth sireg sireg2 sireg3 sireg4 sctrclr"
        fix("csrind"); next
    }
    print; next
}
# Unimplemented counters are read-only zero, counter and event selector alike (privileged spec,
# Zihpm: "a legal implementation is to make both the counter and its corresponding event
# selector be read-only 0"). QEMU: mhpmcounterN and hpmcounterN illegal, mhpmeventN read/write.
$0 == "hpm 19-31: counter illegal (write illegal) event rw hpmcounter illegal" {
    print "hpm 19-31: counter zero event zero hpmcounter = counter"; fix("hpm"); next
}
$1 ~ /^mhpmevent(19|31|19h)$/ && $4 ~ /^f[0-9a-f]+$/ {
    z = $4; gsub(/[0-9a-f]/, "0", z); sub(/ ones [0-9a-f]+ /, " ones " z " "); print; fix("event"); next
}
# Smcntrpmf: only MINH, SINH, UINH (bits 62:60; RV32 mcyclecfgh/minstretcfgh 30:28) exist
# without H (VSINH/VUINH need H; crates/sim/README.md, "No H"), the other bits are WPRI
# (read-only zero). QEMU stores every bit but those two.
$1 ~ /^(mcyclecfg|minstretcfg)h?$/ && $4 ~ /^f[0-9a-f]+$/ {
    hi = (length($4) == 16) ? "7000000000000000" : ($1 ~ /h$/) ? "70000000" : "00000000"
    sub(/ ones [0-9a-f]+ /, " ones " hi " "); print; fix("cfg"); next
}
# A CSR write takes effect after the writing instruction, which does not count itself: write
# X, read X; write X, 3 nops, read X+3. QEMU counts the csrw too.
/^(minstret|mhpmcounter3 \(INSTRUCTIONS\)) counting: wrote 5000, read 5001; wrote 5000, 3 nops, read 5004$/ {
    sub(/read 5001/, "read 5000"); sub(/read 5004/, "read 5003"); print; fix("write"); next
}
# ecall and ebreak raise exceptions and do not retire, so they are not counted (privileged
# spec: they "should not increment minstret"). QEMU counts them (an illegal instruction it
# does not count, as the spec says).
/^trap regions \(handler \+ stop\): ecall [0-9]+, ebreak [0-9]+, illegal [0-9]+ \(traps 1 1\)$/ {
    e = $7; sub(/,/, "", e); b = $9; sub(/,/, "", b)
    sub(/ecall [0-9]+,/, "ecall " (e - 1) ","); sub(/ebreak [0-9]+,/, "ebreak " (b - 1) ",")
    print; fix("trap"); next
}
# Sscofpmf: scountovf is masked by mcounteren only for reads below M-mode; M reads every OF bit.
$0 == "scountovf from M, OF on 3 and 4: mcounteren=HPM4 10, mcounteren=0 0" {
    print "scountovf from M, OF on 3 and 4: mcounteren=HPM4 18, mcounteren=0 18"; fix("ovf"); next
}
# Filtering: the relations hold (QEMU 10 ignores the RV32 filter bits in mhpmeventh,
# mcyclecfgh, minstretcfgh: "no" there).
/^U-mode work, / && / no/ { gsub(/ no/, " yes"); print; fix("filter"); next }
{ print }
END {
    if (bad) exit bad
    if (prog == "ctr_stateen") {
        want["ctrsireg"] = xlen == 32 ? 0 : 1; want["csrind"] = xlen == 32 ? 3 : 0
        check()
        exit bad
    }
    want["hpm"] = 1; want["event"] = xlen == 32 ? 3 : 2; want["cfg"] = xlen == 32 ? 4 : 2
    want["write"] = 2; want["trap"] = 1; want["ovf"] = 1; want["filter"] = xlen == 32 ? 2 : 0
    check()
    exit bad
}
function check(r) {
    for (r in want) if (fired[r] + 0 != want[r]) {
        printf "qemu-to-spec.awk: %s: rule %s fired %d times, want %d (did QEMU change?)\n", prog, r, fired[r], want[r] > "/dev/stderr"
        bad = 1
    }
}
