/* sbi_pmu: every SBI PMU function (SBI v3.0 chapter 11) with valid and invalid arguments,
 * checked against the specification text; counting checks on the hart's counters (cycles,
 * instructions, hpmcounterN reads, Sscofpmf overflow interrupt, snapshots). One line per
 * check ("ok"/"FAIL", section, what); lines starting with '#' are information. */
#include "sbi.h"

#define S6 "ext-pmu 11.6"
#define S7 "ext-pmu 11.7"
#define S8 "ext-pmu 11.8"
#define S9 "ext-pmu 11.9"
#define S10 "ext-pmu 11.10"
#define S11 "ext-pmu 11.11"
#define S12 "ext-pmu 11.12"
#define S13 "ext-pmu 11.13"
#define S14 "ext-pmu 11.14"
#define SHW "ext-pmu 11.1"

#define MAXC 64
static unsigned long ncount; /* num_counters */
static unsigned nc;          /* counters looked at: min(ncount, MAXC) */
static unsigned long info[MAXC];
static int info_ok[MAXC];

static unsigned long hwmask; /* hardware counters among 0..XLEN-1 */
static unsigned long progmask;
static unsigned fw0;         /* first firmware counter */
static unsigned long fwmask; /* firmware counters relative to fw0 */

static int is_hw(unsigned i) { return i < nc && info_ok[i] && !(info[i] >> (XLEN - 1)); }
static int is_fw(unsigned i) { return i < nc && info_ok[i] && (info[i] >> (XLEN - 1)); }
static unsigned csr_of(unsigned i) { return info[i] & 0xfff; }
/* A programmable hardware counter (hpmcounter3..31: has an mhpmevent, can overflow). */
static int is_prog(unsigned i) { return is_hw(i) && csr_of(i) >= 0xc03 && csr_of(i) <= 0xc1f; }

/* The mask (relative to base) of the counters in [base, base + XLEN) that satisfy pred. */
static unsigned long mask_of(int (*pred)(unsigned), unsigned base) {
    unsigned long m = 0;
    for (unsigned k = 0; k < XLEN && base + k < nc; k++)
        if (pred(base + k)) m |= 1ul << k;
    return m;
}
static unsigned first_of(int (*pred)(unsigned)) {
    for (unsigned i = 0; i < nc; i++)
        if (pred(i)) return i;
    return nc;
}

/* 4 KiB snapshot area (11.13) and event-info entries (11.14). */
static uint64_t shmem[512] __attribute__((aligned(4096)));
static uint32_t evinfo[4 * 8] __attribute__((aligned(16)));

static struct sbiret pmu1(unsigned long fid, unsigned long a) { return SBI1(EID_PMU, fid, a); }

/* Free counter i for the next test (start it, then stop with RESET, answers ignored). */
static void release(unsigned i) {
    pmu_start(i, 1, 0, 0);
    pmu_stop(i, 1, STOP_RESET);
}

static int snapshot_ok;            /* snapshot_set_shmem is implemented */
static unsigned long spec_version; /* base 4.1: major << 24 | minor */

static void test_counters_info(void) {
    struct sbiret r = SBI0(EID_PMU, PMU_NUM_COUNTERS);
    check(S6, "num_counters returns SBI_SUCCESS and at least one counter",
          r.error == 0 && r.value > 0, "%s value %lu", err_name(r.error), r.value);
    ncount = r.value;
    nc = ncount < MAXC ? ncount : MAXC;
    if (ncount > MAXC) printf("# %lu counters; only the first %u are looked at\n", ncount, nc);

    unsigned hw = 0, fw = 0, bad = 0, badcsr = 0, badres = 0;
    for (unsigned i = 0; i < nc; i++) {
        r = pmu1(PMU_COUNTER_GET_INFO, i);
        info[i] = r.value;
        info_ok[i] = r.error == 0;
        if (r.error) {
            /* not every index below num_counters needs a counter behind it (11.6 counts
             * counters, 11.7 answers INVALID_PARAM for an invalid one) */
            if (r.error != SBI_ERR_INVALID_PARAM) bad++;
            printf("# counter %u: counter_get_info %s\n", i, err_name(r.error));
            continue;
        }
        if (is_fw(i)) {
            fw++;
            continue;
        }
        hw++;
        /* hardware: CSR is a counter CSR (cycle..hpmcounter31), reserved bits [XLEN-2:18] 0 */
        if (csr_of(i) < 0xc00 || csr_of(i) > 0xc1f) badcsr++;
        if ((r.value << 1 >> 1) >> 18) badres++;
    }
    check(S7, "counter_get_info answers SUCCESS or INVALID_PARAM below num_counters", bad == 0,
          "%u other answers", bad);
    check(S7, "hardware counters name a counter CSR 0xc00..0xc1f", badcsr == 0,
          "%u counters outside", badcsr);
    check(S7, "counter_info reserved bits [XLEN-2:18] are zero", badres == 0, "%u counters",
          badres);
    unsigned dup = 0;
    for (unsigned i = 0; i < nc; i++)
        for (unsigned j = i + 1; j < nc; j++)
            if (is_hw(i) && is_hw(j) && csr_of(i) == csr_of(j)) dup++;
    check(S7, "no two hardware counters share a CSR", dup == 0, "%u pairs", dup);
    printf("# %u hardware counters, %u firmware counters\n", hw, fw);
    for (unsigned i = 0; i < nc; i++)
        if (is_hw(i))
            printf("# counter %u: csr 0x%x width %lu\n", i, csr_of(i), (info[i] >> 12) & 63);
    check_err(S7, "counter_get_info(num_counters) is INVALID_PARAM",
              pmu1(PMU_COUNTER_GET_INFO, ncount), SBI_ERR_INVALID_PARAM);
    check_err(S7, "counter_get_info(-1) is INVALID_PARAM", pmu1(PMU_COUNTER_GET_INFO, -1ul),
              SBI_ERR_INVALID_PARAM);
}

/* a b c d, concatenated in buf (a check's name). */
static const char *cat(char *buf, unsigned size, const char *a, const char *b, const char *c,
                       const char *d) {
    const char *parts[4] = {a, b, c, d};
    unsigned n = 0;
    for (unsigned k = 0; k < 4; k++)
        for (const char *p = parts[k]; *p && n + 1 < size; p++) buf[n++] = *p;
    buf[n] = 0;
    return buf;
}

/* Undo a wrong success of a call that should have failed, so that later checks start from a
 * known state: a counter configured by config_matching (which == 0) or started (1). */
static void undo(int which, struct sbiret r) {
    if (r.error) return;
    if (which == 0) release(r.value); /* counter_idx values are absolute */
    if (which == 1)
        for (unsigned k = 0; k < nc; k++) pmu_stop(k, 1, 0);
}

/* Invalid sets of counters and reserved flag bits: the same for config_matching (11.8),
 * start (11.9) and stop (11.10); none may touch a counter. */
static void test_bad_sets(const char *sect, const char *fn, int which, unsigned long good_flags,
                          unsigned long reserved_flag) {
    unsigned c;
    struct {
        const char *what;
        unsigned long base, mask;
    } sets[] = {
        {"mask bit at num_counters", ncount - 1, 3},
        {"base num_counters", ncount, 1},
        {"base -1", -1ul, 1},
        {"base + bit wraps to counter 0", -2ul, 4},
        {"mask top bit", 0, 1ul << (XLEN - 1)},
    };
    char what[96];
    for (unsigned k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        struct sbiret r;
        if (ncount >= XLEN && k == 4) continue; /* the top bit names a valid counter */
        if (which == 0)
            r = pmu_config_matching(sets[k].base, sets[k].mask, good_flags, EV_HW(HW_INSTRUCTIONS), 0);
        else if (which == 1)
            r = pmu_start(sets[k].base, sets[k].mask, good_flags, 0);
        else
            r = pmu_stop(sets[k].base, sets[k].mask, good_flags);
        undo(which, r);
        check_err(sect, cat(what, sizeof what, fn, ": invalid counter, ", sets[k].what, " -> INVALID_PARAM"),
                  r, SBI_ERR_INVALID_PARAM);
    }
    /* reserved flag bits, on a counter the call would otherwise accept: config_matching on
     * free counters, start on a configured stopped counter, stop on a started one */
    struct sbiret r;
    if (which == 0) {
        r = pmu_config_matching(0, progmask, good_flags | reserved_flag, EV_HW(HW_INSTRUCTIONS), 0);
        undo(0, r);
    } else {
        struct sbiret m = pmu_config_matching(0, progmask, which == 2 ? CFG_AUTO_START : 0,
                                              EV_HW(HW_INSTRUCTIONS), 0);
        if (m.error) {
            check(sect, "a counter for the reserved-flag check", 0, "%s", err_name(m.error));
            return;
        }
        c = m.value;
        r = which == 1 ? pmu_start(c, 1, good_flags | reserved_flag, 0)
                       : pmu_stop(c, 1, good_flags | reserved_flag);
        release(c);
    }
    check_err(sect, cat(what, sizeof what, fn, ": reserved flag bit", " -> INVALID_PARAM", ""), r,
              SBI_ERR_INVALID_PARAM);
}


static void test_config_matching(void) {
    struct sbiret r0 = pmu_config_matching(0, progmask, 1ul << (XLEN - 1), EV_HW(HW_INSTRUCTIONS), 0);
    check_err(S8, "counter_config_matching: top flag bit -> INVALID_PARAM", r0, SBI_ERR_INVALID_PARAM);
    undo(0, r0);

    /* events nobody counts: NOT_SUPPORTED ("none of the counters can monitor the event") */
    check_err(S8, "unassigned general event code 0x100 -> NOT_SUPPORTED",
              pmu_config_matching(0, hwmask, 0, EV_HW(0x100), 0), SBI_ERR_NOT_SUPPORTED);
    check_err(S8, "undefined event type 5 -> NOT_SUPPORTED",
              pmu_config_matching(0, hwmask, 0, 0x50001, 0), SBI_ERR_NOT_SUPPORTED);
    if (fw0 < nc) {
        check_err(S8, "reserved firmware event code 22 -> NOT_SUPPORTED",
                  pmu_config_matching(fw0, fwmask, 0, EV_FW(22), 0), SBI_ERR_NOT_SUPPORTED);
        check_err(S8, "firmware event on hardware counters only -> NOT_SUPPORTED",
                  pmu_config_matching(0, hwmask, 0, EV_FW(FW_SET_TIMER), 0), SBI_ERR_NOT_SUPPORTED);
        check_err(S8, "CPU_CYCLES on firmware counters only -> NOT_SUPPORTED",
                  pmu_config_matching(fw0, fwmask, 0, EV_HW(HW_CPU_CYCLES), 0), SBI_ERR_NOT_SUPPORTED);
    }

    /* CPU_CYCLES with CLEAR_VALUE | AUTO_START: a hardware counter of the set, running, ~0 */
    struct sbiret r = pmu_config_matching(0, hwmask, CFG_CLEAR_VALUE | CFG_AUTO_START,
                                          EV_HW(HW_CPU_CYCLES), 0);
    unsigned cyc = r.value;
    check(S8, "CPU_CYCLES with CLEAR_VALUE|AUTO_START: a hardware counter of the set",
          r.error == 0 && cyc < XLEN && (hwmask >> cyc & 1), "%s value %lu", err_name(r.error), r.value);
    if (r.error || cyc >= XLEN || !(hwmask >> cyc & 1)) return;
    uint64_t a = read_counter_csr(csr_of(cyc));
    spin(1000);
    uint64_t b = read_counter_csr(csr_of(cyc));
    check(S8, "CLEAR_VALUE: the cycle counter starts near 0", a < 1000000, "%llu",
          (unsigned long long)a);
    check(S8, "AUTO_START: the cycle counter runs", b > a, "%llu then %llu", (unsigned long long)a,
          (unsigned long long)b);
    check_err(S8, "AUTO_START: counter_start on it -> ALREADY_STARTED", pmu_start(cyc, 1, 0, 0),
              SBI_ERR_ALREADY_STARTED);
    check_err(S8, "a set of only started counters -> NOT_SUPPORTED (counters not started)",
              pmu_config_matching(cyc, 1, 0, EV_HW(HW_CPU_CYCLES), 0), SBI_ERR_NOT_SUPPORTED);
    check_err(S10, "counter_stop of the cycle counter", pmu_stop(cyc, 1, STOP_RESET), SBI_SUCCESS);

    /* INSTRUCTIONS on a programmable counter, flags 0, then SKIP_MATCH (first counter of the
     * set, i.e. base + lowest mask bit) */
    r = pmu_config_matching(0, progmask, 0, EV_HW(HW_INSTRUCTIONS), 0);
    unsigned c = r.value;
    check(S8, "INSTRUCTIONS on the programmable counters: one of the set",
          r.error == 0 && c < XLEN && (progmask >> c & 1), "%s value %lu", err_name(r.error), r.value);
    if (r.error || c >= XLEN || !(progmask >> c & 1)) return;
    check_ok_val(S8, "SKIP_MATCH base=counter mask=1 -> that counter",
                 pmu_config_matching(c, 1, CFG_SKIP_MATCH, EV_HW(HW_INSTRUCTIONS), 0), c);
    if (c >= 2)
        check_ok_val(S8, "SKIP_MATCH base=counter-2 mask=0b100 -> first counter of the set",
                     pmu_config_matching(c - 2, 4, CFG_SKIP_MATCH, EV_HW(HW_INSTRUCTIONS), 0), c);
    /* CLEAR_VALUE on a counter holding a value; without it the value stays */
    pmu_start(c, 1, START_SET_INIT_VALUE, 123456789);
    pmu_stop(c, 1, 0);
    uint64_t held = read_counter_csr(csr_of(c));
    check(S9, "SET_INIT_VALUE then stop: counter value >= initial value", held >= 123456789 && held < 123456789 + 100000,
          "%llu", (unsigned long long)held);
    r = pmu_config_matching(c, 1, CFG_SKIP_MATCH, EV_HW(HW_INSTRUCTIONS), 0);
    check(S8, "SKIP_MATCH without CLEAR_VALUE keeps the value",
          r.error == 0 && read_counter_csr(csr_of(c)) == held, "%s, value %llu (held %llu)",
          err_name(r.error), (unsigned long long)read_counter_csr(csr_of(c)), (unsigned long long)held);
    r = pmu_config_matching(c, 1, CFG_SKIP_MATCH | CFG_CLEAR_VALUE, EV_HW(HW_INSTRUCTIONS), 0);
    check(S8, "SKIP_MATCH|CLEAR_VALUE zeroes the stopped counter",
          r.error == 0 && read_counter_csr(csr_of(c)) == 0, "%s, value %llu", err_name(r.error),
          (unsigned long long)read_counter_csr(csr_of(c)));
    /* AUTO_START has no impact on the counter value */
    pmu_start(c, 1, START_SET_INIT_VALUE, 5000000);
    pmu_stop(c, 1, 0);
    held = read_counter_csr(csr_of(c));
    r = pmu_config_matching(c, 1, CFG_SKIP_MATCH | CFG_AUTO_START, EV_HW(HW_INSTRUCTIONS), 0);
    uint64_t v = read_counter_csr(csr_of(c));
    check(S8, "SKIP_MATCH|AUTO_START: started from the value it held",
          r.error == 0 && v >= held && v < held + 100000, "%s, value %llu (held %llu)", err_name(r.error),
          (unsigned long long)v, (unsigned long long)held);
    release(c);

    /* the filter hints SET_VUINH..SET_MINH (may be ignored): accepted; whether S-mode work is
     * counted with each is information */
    static const struct {
        unsigned long flag;
        const char *name;
    } hints[] = {{CFG_SET_VUINH, "SET_VUINH"}, {CFG_SET_VSINH, "SET_VSINH"},
                 {CFG_SET_UINH, "SET_UINH"},   {CFG_SET_SINH, "SET_SINH"},
                 {CFG_SET_MINH, "SET_MINH"}};
    for (unsigned k = 0; k < 5; k++) {
        r = pmu_config_matching(0, progmask, hints[k].flag | CFG_CLEAR_VALUE, EV_HW(HW_INSTRUCTIONS), 0);
        char what[64];
        check(S8, cat(what, sizeof what, hints[k].name, " accepted", "", ""), r.error == 0 && r.value < XLEN && (progmask >> r.value & 1), "%s value %lu",
              err_name(r.error), r.value);
        if (r.error) continue;
        unsigned k2 = r.value;
        pmu_start(k2, 1, 0, 0);
        spin(10000);
        pmu_stop(k2, 1, 0);
        uint64_t n2 = read_counter_csr(csr_of(k2));
        printf("# " S8 " %s: S-mode loop of 20001 instructions %s\n", hints[k].name,
               n2 >= 20001 ? "counted" : n2 < 1000 ? "not counted" : "partly counted");
        release(k2);
    }
}

static void test_start_stop(void) {
    struct sbiret r = pmu_config_matching(0, progmask, 0, EV_HW(HW_INSTRUCTIONS), 0);
    if (r.error) {
        printf("FAIL " S8 " INSTRUCTIONS counter for the start/stop checks: got %s\n", err_name(r.error));
        n_fail++;
        return;
    }
    unsigned c = r.value, csr = csr_of(c);
    r = pmu_start(c, 1, 1ul << (XLEN - 1), 0);
    check_err(S9, "counter_start: top flag bit -> INVALID_PARAM", r, SBI_ERR_INVALID_PARAM);
    if (r.error == 0) pmu_stop(c, 1, 0);
    check_err(S9, "counter_start SET_INIT_VALUE", pmu_start(c, 1, START_SET_INIT_VALUE, 1000000),
              SBI_SUCCESS);
    uint64_t a = read_counter_csr(csr);
    spin(10000);
    uint64_t b = read_counter_csr(csr);
    check(S9, "hpmcounter read after SET_INIT_VALUE 1000000 is the initial value plus a little",
          a >= 1000000 && a < 1000000 + 10000, "%llu", (unsigned long long)a);
    check(SHW, "INSTRUCTIONS counts a 20001-instruction S-mode loop (+ <200)",
          b - a >= 20001 && b - a < 20001 + 200, "%llu", (unsigned long long)(b - a));
    check_err(S9, "counter_start of a started counter -> ALREADY_STARTED", pmu_start(c, 1, 0, 0),
              SBI_ERR_ALREADY_STARTED);
    check_err(S10, "counter_stop TAKE_SNAPSHOT without shared memory -> NO_SHMEM",
              pmu_stop(c, 1, STOP_TAKE_SNAPSHOT), SBI_ERR_NO_SHMEM);
    pmu_stop(c, 1, 0); /* whether or not the NO_SHMEM call stopped it */
    a = read_counter_csr(csr);
    spin(1000);
    b = read_counter_csr(csr);
    check(S10, "a stopped counter does not count", a == b, "%llu then %llu", (unsigned long long)a,
          (unsigned long long)b);
    check_err(S10, "counter_stop of a stopped counter -> ALREADY_STOPPED", pmu_stop(c, 1, 0),
              SBI_ERR_ALREADY_STOPPED);
    check_err(S9, "counter_start INIT_SNAPSHOT without shared memory -> NO_SHMEM",
              pmu_start(c, 1, START_INIT_SNAPSHOT, 0), SBI_ERR_NO_SHMEM);
    pmu_stop(c, 1, 0);
    /* restart without flags: counting continues from the current value (11.9 note) */
    a = read_counter_csr(csr);
    struct sbiret r1 = pmu_start(c, 1, 0, 0);
    spin(1000);
    struct sbiret r2 = pmu_stop(c, 1, 0);
    b = read_counter_csr(csr);
    check_err(S9, "counter_start without flags", r1, SBI_SUCCESS);
    check_err(S10, "counter_stop", r2, SBI_SUCCESS);
    check(S9, "restart without flags continues from the current value", b >= a + 2001 && b < a + 2001 + 10000,
          "%llu then %llu", (unsigned long long)a, (unsigned long long)b);
    /* RESET frees the counter: matching it alone finds it again */
    check_err(S10, "counter_stop RESET of a started counter", (pmu_start(c, 1, 0, 0), pmu_stop(c, 1, STOP_RESET)),
              SBI_SUCCESS);
    check_ok_val(S10, "after RESET the counter is matched again (mask = that counter)",
                 pmu_config_matching(c, 1, 0, EV_HW(HW_CPU_CYCLES), 0), c);
    release(c);

    /* cycles and instructions rise together over a loop */
    struct sbiret rc = pmu_config_matching(0, hwmask, CFG_CLEAR_VALUE, EV_HW(HW_CPU_CYCLES), 0);
    struct sbiret ri = pmu_config_matching(0, hwmask & ~(rc.error ? 0 : 1ul << rc.value), CFG_CLEAR_VALUE,
                                           EV_HW(HW_INSTRUCTIONS), 0);
    check(SHW, "CPU_CYCLES and INSTRUCTIONS on two hardware counters", rc.error == 0 && ri.error == 0 && rc.value != ri.value,
          "%s %lu / %s %lu", err_name(rc.error), rc.value, err_name(ri.error), ri.value);
    if (rc.error || ri.error) return;
    unsigned long m = 1ul << rc.value | 1ul << ri.value;
    check_err(S9, "counter_start of two counters in one call", pmu_start(0, m, 0, 0), SBI_SUCCESS);
    uint64_t c0 = read_counter_csr(csr_of(rc.value)), i0 = read_counter_csr(csr_of(ri.value));
    spin(50000);
    uint64_t c1 = read_counter_csr(csr_of(rc.value)), i1 = read_counter_csr(csr_of(ri.value));
    check_err(S10, "counter_stop of two counters in one call", pmu_stop(0, m, 0), SBI_SUCCESS);
    check(SHW, "CPU_CYCLES rises over a 100001-instruction loop", c1 > c0, "%llu then %llu",
          (unsigned long long)c0, (unsigned long long)c1);
    check(SHW, "INSTRUCTIONS rises by the loop's 100001 instructions (+ <200)",
          i1 - i0 >= 100001 && i1 - i0 < 100001 + 200, "%llu", (unsigned long long)(i1 - i0));
    check_err(S10, "counter_stop of two stopped counters -> ALREADY_STOPPED", pmu_stop(0, m, 0),
              SBI_ERR_ALREADY_STOPPED);
    release(rc.value);
    release(ri.value);
}

static void test_fw(void) {
    unsigned h = first_of(is_hw);
    check_err(S11, "counter_fw_read of a hardware counter -> INVALID_PARAM",
              pmu1(PMU_COUNTER_FW_READ, h), SBI_ERR_INVALID_PARAM);
    check_err(S11, "counter_fw_read(num_counters) -> INVALID_PARAM",
              pmu1(PMU_COUNTER_FW_READ, ncount), SBI_ERR_INVALID_PARAM);
    if (spec_version < 0x2000000) {
        /* counter_fw_read_hi is SBI 2.0 (11.15): an older SBI has no such function (3) */
        check_err(S12, "counter_fw_read_hi: NOT_SUPPORTED below SBI 2.0 (not supported)",
                  pmu1(PMU_COUNTER_FW_READ_HI, h), SBI_ERR_NOT_SUPPORTED);
    } else {
        check_err(S12, "counter_fw_read_hi of a hardware counter -> INVALID_PARAM",
                  pmu1(PMU_COUNTER_FW_READ_HI, h), SBI_ERR_INVALID_PARAM);
        check_err(S12, "counter_fw_read_hi(num_counters) -> INVALID_PARAM",
                  pmu1(PMU_COUNTER_FW_READ_HI, ncount), SBI_ERR_INVALID_PARAM);
    }
    if (fw0 >= nc) {
        check(S11, "firmware counters exist for the firmware-event checks", 0, "none");
        return;
    }
    /* placed without CLEAR_VALUE first: OpenSBI 1.5.1 answers an index that is not a firmware
     * counter and, with CLEAR_VALUE, clears memory at that index minus the number of hardware
     * counters (an M-mode store fault, a hang; README "OpenSBI and the spec") */
    struct sbiret r = pmu_config_matching(fw0, fwmask, 0, EV_FW(FW_SET_TIMER), 0);
    unsigned f = r.value; /* counter_idx values are absolute (11.8 returns counter_idx) */
    check(S8, "SBI_PMU_FW_SET_TIMER (11.5) on the firmware counters: one of them", r.error == 0 && is_fw(f), "%s value %lu",
          err_name(r.error), r.value);
    if (r.error || !is_fw(f)) return;
    pmu_start(f, 1, START_SET_INIT_VALUE, 5);
    pmu_stop(f, 1, 0);
    check_ok_val(S8, "SKIP_MATCH|CLEAR_VALUE on the firmware counter -> that counter",
                 pmu_config_matching(f, 1, CFG_SKIP_MATCH | CFG_CLEAR_VALUE, EV_FW(FW_SET_TIMER), 0), f);
    check_ok_val(S11, "counter_fw_read after CLEAR_VALUE: 0", pmu1(PMU_COUNTER_FW_READ, f), 0);
    /* 0x1_ffff_fffe + 3 set_timer calls = 0x2_0000_0001: the carry into the high half */
    check_err(S9, "counter_start SET_INIT_VALUE 0x1fffffffe on the firmware counter",
              pmu_start(f, 1, START_SET_INIT_VALUE, 0x1fffffffeull), SBI_SUCCESS);
    for (int k = 0; k < 3; k++) SBI1(EID_TIME, 0, -1ul);
    check_err(S10, "counter_stop of the firmware counter", pmu_stop(f, 1, 0), SBI_SUCCESS);
    SBI1(EID_TIME, 0, -1ul); /* not counted: stopped */
    uint64_t want = 0x200000001ull;
    check_ok_val(S11, "counter_fw_read: 3 set_timer calls counted from 0x1fffffffe",
                 pmu1(PMU_COUNTER_FW_READ, f), (unsigned long)want);
    if (spec_version >= 0x2000000)
        check_ok_val(S12, "counter_fw_read_hi: upper 32 bits (RV32), 0 (RV64)",
                     pmu1(PMU_COUNTER_FW_READ_HI, f), XLEN == 32 ? (unsigned long)(want >> 32) : 0);
    check_err(S10, "counter_stop of the stopped firmware counter -> ALREADY_STOPPED",
              pmu_stop(f, 1, 0), SBI_ERR_ALREADY_STOPPED);
    release(f);
}

static void test_snapshot(void) {
    /* disabling when nothing is set is a plain success (or the function is absent) */
    struct sbiret r = SBI3(EID_PMU, PMU_SNAPSHOT_SET_SHMEM, -1ul, -1ul, 0);
    if (r.error == SBI_ERR_NOT_SUPPORTED) {
        check(S13, "snapshot_set_shmem: NOT_SUPPORTED (optional; not supported)", 1, "-");
        return;
    }
    check_err(S13, "snapshot_set_shmem all-ones (disable)", r, SBI_SUCCESS);
    unsigned long p = (unsigned long)shmem;
    check_err(S13, "snapshot_set_shmem: flags != 0 -> INVALID_PARAM",
              SBI3(EID_PMU, PMU_SNAPSHOT_SET_SHMEM, p, 0, 1), SBI_ERR_INVALID_PARAM);
    check_err(S13, "snapshot_set_shmem: not 4096-aligned -> INVALID_PARAM",
              SBI3(EID_PMU, PMU_SNAPSHOT_SET_SHMEM, p + 8, 0, 0), SBI_ERR_INVALID_PARAM);
    r = SBI3(EID_PMU, PMU_SNAPSHOT_SET_SHMEM, p, 0x100, 0);
    check(S13, "snapshot_set_shmem: address beyond memory -> INVALID_ADDRESS (or FAILED, 3.2 note)",
          r.error == SBI_ERR_INVALID_ADDRESS || r.error == SBI_ERR_FAILED, "%s", err_name(r.error));
    check_err(S13, "snapshot_set_shmem of a 4 KiB page of RAM",
              SBI3(EID_PMU, PMU_SNAPSHOT_SET_SHMEM, p, 0, 0), SBI_SUCCESS);
    snapshot_ok = 1;

    r = pmu_config_matching(0, progmask, CFG_CLEAR_VALUE, EV_HW(HW_INSTRUCTIONS), 0);
    if (r.error || r.value < 1) {
        printf("FAIL " S8 " INSTRUCTIONS counter for the snapshot checks: got %s %lu\n", err_name(r.error), r.value);
        n_fail++;
        return;
    }
    unsigned c = r.value;
    for (unsigned k = 0; k < 512; k++) shmem[k] = 0xa5a5a5a5a5a5a5a5ull;
    pmu_start(c, 1, START_SET_INIT_VALUE, 7000);
    spin(100);
    /* base = c - 1, mask = 0b10: counter c is slot 1 (relative to counter_idx_base) */
    check_err(S10, "counter_stop TAKE_SNAPSHOT", pmu_stop(c - 1, 2, STOP_TAKE_SNAPSHOT), SBI_SUCCESS);
    uint64_t v = read_counter_csr(csr_of(c));
    check(S13, "snapshot counter_values[1] (base = counter - 1) equals hpmcounter", shmem[2] == v,
          "%llx, hpmcounter %llx", (unsigned long long)shmem[2], (unsigned long long)v);
    check(S13, "snapshot value is the initial value plus the loop", v >= 7000 + 201 && v < 7000 + 201 + 10000,
          "%llu", (unsigned long long)v);
    check(S13, "snapshot counter_overflow_bitmap is 0 (no overflow)", shmem[0] == 0, "%llx",
          (unsigned long long)shmem[0]);
    unsigned changed = 0;
    for (unsigned k = 1; k < 512; k++)
        if (k != 2 && shmem[k] != 0xa5a5a5a5a5a5a5a5ull) changed++;
    check(S10, "TAKE_SNAPSHOT leaves the other counters' values (and the rest) alone", changed == 0,
          "%u words changed", changed);
    /* INIT_SNAPSHOT: the counter starts from its slot */
    shmem[1] = 777000;
    check_err(S9, "counter_start INIT_SNAPSHOT", pmu_start(c, 1, START_INIT_SNAPSHOT, 0), SBI_SUCCESS);
    spin(100);
    pmu_stop(c, 1, 0);
    v = read_counter_csr(csr_of(c));
    check(S9, "INIT_SNAPSHOT: the counter started from counter_values[0]", v >= 777000 + 201 && v < 777000 + 201 + 10000,
          "%llu", (unsigned long long)v);
    release(c);
}

static void test_overflow(void) {
    struct sbiret r = pmu_config_matching(0, progmask, 0, EV_HW(HW_INSTRUCTIONS), 0);
    if (r.error) {
        printf("FAIL " S8 " INSTRUCTIONS counter for the overflow check: got %s\n", err_name(r.error));
        n_fail++;
        return;
    }
    unsigned c = r.value, csr = csr_of(c);
    irq_count[IRQ_LCOFI] = 0;
    lcofi_scountovf = 0;
    CSR_CLEAR(sip, 1ul << IRQ_LCOFI);
    CSR_SET(sie, 1ul << IRQ_LCOFI);
    CSR_SET(sstatus, SSTATUS_SIE);
    /* Sscofpmf: preset 2^64 - 1000, the wrap raises LCOFI (delegated to S by the firmware) */
    pmu_start(c, 1, START_SET_INIT_VALUE, -1000ull);
    spin(5000);
    CSR_CLEAR(sstatus, SSTATUS_SIE);
    CSR_CLEAR(sie, 1ul << IRQ_LCOFI);
    r = pmu_stop(c, 1, snapshot_ok ? STOP_TAKE_SNAPSHOT : 0);
    uint64_t v = read_counter_csr(csr);
    check(SHW, "overflow: LCOFI taken by the S-mode handler exactly once", irq_count[IRQ_LCOFI] == 1,
          "%lu interrupts", irq_count[IRQ_LCOFI]);
    check(SHW, "overflow: scountovf shows the counter's OF bit", lcofi_scountovf >> (csr - 0xc00) & 1,
          "scountovf %lx", lcofi_scountovf);
    check(SHW, "overflow: the counter wrapped (value < 10001 after the loop)", v < 10001 + 200, "%llu",
          (unsigned long long)v);
    if (snapshot_ok) {
        /* stopped with counter_idx_base = c: the counter is bit 0 and counter_values[0] */
        check(S13, "TAKE_SNAPSHOT after the overflow: overflow bitmap bit 0 (base = counter)",
              r.error == 0 && shmem[0] == 1, "%s bitmap %llx", err_name(r.error),
              (unsigned long long)shmem[0]);
        check(S13, "TAKE_SNAPSHOT after the overflow: counter_values[0] equals hpmcounter",
              shmem[1] == v, "%llx, hpmcounter %llx", (unsigned long long)shmem[1],
              (unsigned long long)v);
    }
    release(c);
}

static void test_event_info(void) {
    static const unsigned long ev[] = {EV_HW(HW_CPU_CYCLES), EV_HW(HW_INSTRUCTIONS), EV_HW(0x100),
                                       EV_FW(FW_SET_TIMER),  EV_FW(22),              0x50001};
    const unsigned n = sizeof ev / sizeof ev[0];
    int want[6];
    /* what config_matching says about each event (all counters free) */
    for (unsigned k = 0; k < n; k++) {
        int is_fw_ev = ev[k] >> 16 == 0xf;
        struct sbiret r = is_fw_ev ? pmu_config_matching(fw0, fwmask, 0, ev[k], 0)
                                   : pmu_config_matching(0, hwmask, 0, ev[k], 0);
        want[k] = r.error == 0;
        if (r.error == 0) release(r.value);
    }
    for (unsigned k = 0; k < n; k++) {
        evinfo[4 * k] = ev[k];
        evinfo[4 * k + 1] = 0xffffffffu;
        evinfo[4 * k + 2] = evinfo[4 * k + 3] = 0;
    }
    unsigned long p = (unsigned long)evinfo;
    struct sbiret r = SBI4(EID_PMU, PMU_EVENT_GET_INFO, p, 0, n, 0);
    if (r.error == SBI_ERR_NOT_SUPPORTED) {
        check(S14, "event_get_info: NOT_SUPPORTED (not supported)", 1, "-");
        return;
    }
    check_err(S14, "event_get_info of 6 events", r, SBI_SUCCESS);
    unsigned bad = 0;
    for (unsigned k = 0; k < n; k++)
        if (evinfo[4 * k + 1] != (unsigned)want[k]) {
            bad++;
            printf("# event 0x%lx: output 0x%x, config_matching %s\n", ev[k], (unsigned)evinfo[4 * k + 1],
                   want[k] ? "finds a counter" : "finds none");
        }
    check(S14, "output word = 1 exactly for the events config_matching can place", bad == 0,
          "%u entries differ", bad);
    check_err(S14, "event_get_info: flags != 0 -> INVALID_PARAM",
              SBI4(EID_PMU, PMU_EVENT_GET_INFO, p, 0, n, 1), SBI_ERR_INVALID_PARAM);
    check_err(S14, "event_get_info: not 16-byte aligned -> INVALID_PARAM",
              SBI4(EID_PMU, PMU_EVENT_GET_INFO, p + 8, 0, 1, 0), SBI_ERR_INVALID_PARAM);
    evinfo[0] = EV_HW(HW_CPU_CYCLES) | 1u << 20;
    check_err(S14, "event_get_info: reserved event_idx bit 20 -> INVALID_PARAM",
              SBI4(EID_PMU, PMU_EVENT_GET_INFO, p, 0, 1, 0), SBI_ERR_INVALID_PARAM);
    r = SBI4(EID_PMU, PMU_EVENT_GET_INFO, p, 0x100, 1, 0);
    check(S14, "event_get_info: address beyond memory -> INVALID_ADDRESS (or FAILED, 3.2 note)",
          r.error == SBI_ERR_INVALID_ADDRESS || r.error == SBI_ERR_FAILED, "%s", err_name(r.error));
}

/* Invalid counter sets and reserved flags last: an implementation that mishandles them may
 * leave counters in an unknown state. */
static void test_hostile(void) {
    test_bad_sets(S8, "counter_config_matching", 0, 0, 1ul << 8);
    test_bad_sets(S9, "counter_start", 1, 0, 1ul << 2);
    test_bad_sets(S10, "counter_stop", 2, 0, 1ul << 2);
}

int main(unsigned long hartid, unsigned long dtb) {
    (void)dtb;
    printf("sbi_pmu: rv%d hart %lu\n", XLEN, hartid);
    CSR_WRITE(scounteren, -1l);
    spec_version = SBI0(EID_BASE, 0).value;
    printf("# SBI %lu.%lu; the checks are SBI 3.0's\n", spec_version >> 24, spec_version & 0xffffff);
    test_counters_info();
    if (nc == 0) return summary("sbi_pmu");
    hwmask = mask_of(is_hw, 0);
    progmask = mask_of(is_prog, 0);
    fw0 = first_of(is_fw);
    fwmask = fw0 < nc ? mask_of(is_fw, fw0) : 0;
    test_fw();
    test_config_matching();
    test_start_stop();
    test_snapshot();
    test_overflow();
    test_event_info();
    test_hostile();
    check_err(S6, "unknown PMU function 9 -> NOT_SUPPORTED", SBI0(EID_PMU, 9), SBI_ERR_NOT_SUPPORTED);
    return summary("sbi_pmu");
}
