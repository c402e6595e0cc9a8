/* sbi_v3: the SBI v3.0 functions that need several harts or are new in SBI 2.0/3.0, checked
 * against the specification's text, one line per check (sbi.h): TIME (6.1, the deadline
 * measured against the device tree's timebase-frequency, as kvm-unit-tests' riscv/sbi does),
 * IPI (7.1) and HSM (9.1-9.3) across harts, the PMU firmware events (11.5) and counter 1
 * (11.7), FWFT (18.1, 18.2, per hart), DBTR (19.1-19.8, a load trigger firing in S-mode) and SUSP (13.1, last: a successful suspend resumes at
 * resume_addr and the run ends there). Only the boot hart prints; the others leave what they
 * saw in memory. An extension the SBI does not implement (probe 0) is one "(not available)"
 * line. Chapters: 6 TIME, 7 IPI, 9 HSM, 11 PMU, 13 SUSP, 18 FWFT, 19 DBTR (SBI v3.0); the
 * DBTR sections number its functions 19.1 (FID 0) to 19.8 (FID 7). */
#include "sbi.h"

#define EID_SUSP 0x53555350
#define EID_FWFT 0x46574654
#define EID_DBTR 0x44425452
#define SBI_ERR_BAD_RANGE -11
#define SBI_ERR_DENIED_LOCKED -14
#define MAX_HARTS 8
#define HSM_STARTED 0
#define HSM_STOPPED 1
#define SIP_STIP (1ul << IRQ_STI)
#define SIP_SSIP (1ul << IRQ_SSI)
/* Bound of every wait for another hart (iterations of a loop of an SBI call or a few loads). */
#define WAIT 2000000

static unsigned long me, nharts;

/* ---- the device tree: /cpus timebase-frequency (Devicetree Specification 5, flattened) ---- */

static uint32_t be32(const void *p) {
    const unsigned char *b = p;
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static int streq(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

/* The value of /cpus/timebase-frequency, 0 if the tree has none. */
static uint32_t timebase_frequency(unsigned long dtb) {
    const unsigned char *fdt = (const unsigned char *)dtb;
    if (!fdt || be32(fdt) != 0xd00dfeed) return 0;
    const unsigned char *p = fdt + be32(fdt + 8), *strings = (const unsigned char *)fdt + be32(fdt + 12);
    int depth = 0, in_cpus = 0;
    for (;;) {
        uint32_t tok = be32(p);
        p += 4;
        if (tok == 1) { /* FDT_BEGIN_NODE: the name, NUL-terminated, padded to 4 */
            const char *name = (const char *)p;
            depth++;
            if (depth == 2) in_cpus = streq(name, "cpus");
            unsigned n = 0;
            while (name[n]) n++;
            p += (n + 4) & ~3u;
        } else if (tok == 2) { /* FDT_END_NODE */
            if (depth == 2) in_cpus = 0;
            depth--;
        } else if (tok == 3) { /* FDT_PROP: len, nameoff, value padded to 4 */
            uint32_t len = be32(p), nameoff = be32(p + 4);
            if (in_cpus && depth == 2 && len == 4 &&
                streq((const char *)strings + nameoff, "timebase-frequency"))
                return be32(p + 8);
            p += 8 + ((len + 3) & ~3u);
        } else if (tok != 4) { /* FDT_NOP; FDT_END or anything else ends the walk */
            return 0;
        }
    }
}

/* ---- TIME (chapter 6) ---- */

static void test_time(unsigned long dtb) {
    uint32_t tb = timebase_frequency(dtb);
    check("time 6.1", "the device tree has /cpus/timebase-frequency", tb != 0, "none");
    if (!tb) return;
    /* kvm-unit-tests' riscv/sbi "set_timer": a deadline of now + d, where d and the margin are
     * microseconds turned into ticks by timebase-frequency; the interrupt arrives and the time
     * it is seen at lies in [d, d + margin]. 20 ms each: the timer interrupt "must" come after
     * stime_value is reached (6.1), and no later than one margin (200 ms, kvm-unit-tests'
     * default) after it. */
    unsigned long d = tb / 50, margin = tb / 5;
    CSR_CLEAR(sstatus, SSTATUS_SIE);
    CSR_SET(sie, 1ul << IRQ_STI);
    /* kvm-unit-tests' loop: read time (one csrr, unsigned long), then look whether the
     * interrupt came. The deadline is moved by 0..7 ticks so that it falls at each place of
     * the loop: an interrupt taken right after the csrr that read a time before the deadline
     * would show as an early one. */
    unsigned bad = 0, lost = 0;
    unsigned long worst = 0;
    struct sbiret r = {0, 0};
    for (unsigned long p = 0; p < 8; p++) {
        unsigned long before = irq_count[IRQ_STI];
        unsigned long begin = CSR_READ(time), end;
        /* RV32: the upper half of the uint64_t is 0, as time is below 2^32 (429 s at 10 MHz)
         * while this runs */
        r = sbi_call(EID_TIME, 0, begin + d + p, 0, 0, 0, 0, 0);
        CSR_SET(sstatus, SSTATUS_SIE);
        while ((end = CSR_READ(time)) <= begin + d + p + margin && irq_count[IRQ_STI] == before)
            __asm__ volatile("nop");
        CSR_CLEAR(sstatus, SSTATUS_SIE);
        if (irq_count[IRQ_STI] != before + 1) {
            lost++;
        } else if (end - begin < d + p || end - begin > d + p + margin) {
            if (!bad++) worst = end - begin - p;
        }
    }
    check_err("time 6.1", "set_timer(time + 20 ms): SUCCESS", r, SBI_SUCCESS);
    check("time 6.1", "set_timer: the timer interrupt arrives within the margin", lost == 0,
          "%u of 8 lost", lost);
    check("time 6.1", "set_timer: timer delay honored (kvm-unit-tests' measure, 8 phases)", bad == 0,
          "%u of 8 early or late, the first at %lu ticks, want %lu..%lu", bad, worst, d, d + margin);
    uint64_t begin, end;
    /* The same with the interrupt masked in sie: STIP becomes pending at the deadline, and a
     * deadline infinitely far away clears it (6.1). */
    CSR_CLEAR(sie, 1ul << IRQ_STI);
    begin = rdtime();
    r = sbi_call(EID_TIME, 0, (unsigned long)(begin + d), (unsigned long)((begin + d) >> 32), 0, 0, 0, 0);
    /* STIP first, then the time (the other order would race with the deadline) */
    while (!(CSR_READ(sip) & SIP_STIP) && rdtime() <= begin + d + margin) __asm__ volatile("nop");
    end = rdtime();
    check("time 6.1", "set_timer with STIE clear: STIP pending, delay honored",
          r.error == 0 && (CSR_READ(sip) & SIP_STIP) && end - begin >= d && end - begin <= d + margin,
          "%s, sip %lx, %llu ticks", err_name(r.error), CSR_READ(sip), (unsigned long long)(end - begin));
    sbi_call(EID_TIME, 0, -1ul, -1ul, 0, 0, 0, 0);
    check("time 6.1", "set_timer(-1) clears the pending STIP", !(CSR_READ(sip) & SIP_STIP), "sip %lx",
          CSR_READ(sip));
    sbi_call(EID_TIME, 0, 0, 0, 0, 0, 0, 0);
    check("time 6.1", "set_timer(0): STIP pending at once", (CSR_READ(sip) & SIP_STIP) != 0, "sip %lx",
          CSR_READ(sip));
    sbi_call(EID_TIME, 0, -1ul, -1ul, 0, 0, 0, 0);
}

/* ---- PMU firmware events (11.5) and counter 1 (11.7) ---- */

static void test_pmu(void) {
    if (!SBI1(EID_BASE, 3, EID_PMU).value) {
        check("ext-pmu 11.5", "PMU (not available)", 1, "-");
        return;
    }
    /* The firmware counters below XLEN, named from base 0: OpenSBI 1.5.1 returns the mask bit
     * for the counter index and indexes its tables by it when the base is not 0 (it then
     * writes outside them), so every set here starts at 0. */
    unsigned long n = SBI0(EID_PMU, PMU_NUM_COUNTERS).value, fwmask = 0;
    for (unsigned long i = 0; i < n && i < XLEN; i++) {
        struct sbiret r = SBI1(EID_PMU, PMU_COUNTER_GET_INFO, i);
        if (r.error == 0 && (long)r.value < 0) fwmask |= 1ul << i; /* bit XLEN-1: firmware */
    }
    /* counter 1 would be the time CSR, which counts no event */
    check_err("ext-pmu 11.7", "counter_get_info(1): time is no counter -> INVALID_PARAM",
              SBI1(EID_PMU, PMU_COUNTER_GET_INFO, 1), SBI_ERR_INVALID_PARAM);
    if (!fwmask) {
        check("ext-pmu 11.5", "firmware counters exist", 0, "none");
        return;
    }
    /* every standard firmware event (table "PMU Firmware Events", 0..21) on every firmware
     * counter, as KVM's selftest configures SBI_PMU_FW_ACCESS_LOAD on each */
    unsigned bad = 0, first_bad = 0;
    for (unsigned code = 0; code <= 21; code++) {
        for (unsigned long b = 0; b < XLEN; b++) {
            if (!(fwmask >> b & 1)) continue;
            struct sbiret r = pmu_config_matching(0, 1ul << b, CFG_CLEAR_VALUE | CFG_AUTO_START, EV_FW(code), 0);
            if (r.error || r.value != b) {
                if (!bad++) first_bad = code;
            } else if (pmu_stop(b, 1, STOP_RESET).error) {
                if (!bad++) first_bad = code;
            }
        }
    }
    check("ext-pmu 11.5", "each firmware event 0..21 configures on each firmware counter", bad == 0,
          "%u failures, first event %u", bad, first_bad);
    /* counts: SET_TIMER counts the calls; ACCESS_LOAD (2) counts none here (no load faults) */
    struct sbiret t = pmu_config_matching(0, fwmask, CFG_CLEAR_VALUE | CFG_AUTO_START, EV_FW(FW_SET_TIMER), 0);
    struct sbiret a = pmu_config_matching(0, fwmask, CFG_CLEAR_VALUE | CFG_AUTO_START, EV_FW(2), 0);
    for (int k = 0; k < 3; k++) sbi_call(EID_TIME, 0, -1ul, -1ul, 0, 0, 0, 0);
    check_ok_val("ext-pmu 11.5", "SET_TIMER counts 3 set_timer calls", SBI1(EID_PMU, PMU_COUNTER_FW_READ, t.value), 3);
    check_ok_val("ext-pmu 11.5", "ACCESS_LOAD counts no access fault", SBI1(EID_PMU, PMU_COUNTER_FW_READ, a.value), 0);
    if (!t.error) pmu_stop(t.value, 1, STOP_RESET);
    if (!a.error) pmu_stop(a.value, 1, STOP_RESET);
}

/* ---- FWFT (chapter 18) ---- */

#define FWFT_MISALIGNED_EXC_DELEG 0
#define FWFT_LOCK 1ul

static int have_fwft;
static unsigned long misaligned; /* the boot hart's MISALIGNED_EXC_DELEG value */

static void test_fwft(void) {
    if (!have_fwft) {
        check("fwft 18", "FWFT (not available)", 1, "-");
        return;
    }
    struct sbiret r = SBI1(EID_FWFT, 1, FWFT_MISALIGNED_EXC_DELEG);
    check("fwft 18.2", "get MISALIGNED_EXC_DELEG: SUCCESS, 0 or 1", r.error == 0 && r.value <= 1,
          "%s value %lu", err_name(r.error), r.value);
    misaligned = r.value;
    printf("# fwft MISALIGNED_EXC_DELEG = %lu\n", misaligned);
    check_err("fwft 18.1", "set MISALIGNED_EXC_DELEG to its value: SUCCESS",
              SBI3(EID_FWFT, 0, FWFT_MISALIGNED_EXC_DELEG, misaligned, 0), SBI_SUCCESS);
    check_err("fwft 18.1", "set value 2 -> INVALID_PARAM",
              SBI3(EID_FWFT, 0, FWFT_MISALIGNED_EXC_DELEG, 2, 0), SBI_ERR_INVALID_PARAM);
    check_err("fwft 18.1", "set with reserved flag bit 1 -> INVALID_PARAM",
              SBI3(EID_FWFT, 0, FWFT_MISALIGNED_EXC_DELEG, misaligned, 2), SBI_ERR_INVALID_PARAM);
    static const struct {
        unsigned long feature;
        const char *what;
    } reserved[] = {{6, "local reserved feature 6"},
                    {0x40000000, "platform local feature 0x40000000"},
                    {0x80000000, "global reserved feature 0x80000000"},
                    {0xc0000000, "platform global feature 0xc0000000"}};
    char buf[96];
    for (unsigned k = 0; k < sizeof reserved / sizeof reserved[0]; k++) {
        const char *w = reserved[k].what;
        unsigned n = 0;
        for (const char *p = "get "; *p;) buf[n++] = *p++;
        for (const char *p = w; *p;) buf[n++] = *p++;
        for (const char *p = " -> DENIED"; *p;) buf[n++] = *p++;
        buf[n] = 0;
        check_err("fwft 18.2", buf, SBI1(EID_FWFT, 1, reserved[k].feature), SBI_ERR_DENIED);
        buf[0] = 's';
        check_err("fwft 18.1", buf, SBI3(EID_FWFT, 0, reserved[k].feature, 0, 0), SBI_ERR_DENIED);
    }
    /* LANDING_PAD .. POINTER_MASKING_PMLEN: a value, or NOT_SUPPORTED for both functions */
    unsigned odd = 0;
    for (unsigned long f = 1; f <= 5; f++) {
        struct sbiret g = SBI1(EID_FWFT, 1, f);
        printf("# fwft feature %lu: get %s value %lu\n", f, err_name(g.error), g.value);
        if (g.error == SBI_ERR_NOT_SUPPORTED) {
            if (SBI3(EID_FWFT, 0, f, 1, 0).error != SBI_ERR_NOT_SUPPORTED) odd++;
        } else if (g.error != 0) {
            odd++;
        }
    }
    check("fwft 18.2", "features 1..5: a value, or NOT_SUPPORTED from get and set", odd == 0, "%u odd",
          odd);
    /* LOCK: "once set, the feature value can no longer be modified until hart reset" */
    check_err("fwft 18.1", "set with LOCK: SUCCESS",
              SBI3(EID_FWFT, 0, FWFT_MISALIGNED_EXC_DELEG, misaligned, FWFT_LOCK), SBI_SUCCESS);
    check_err("fwft 18.1", "set after LOCK -> DENIED_LOCKED",
              SBI3(EID_FWFT, 0, FWFT_MISALIGNED_EXC_DELEG, misaligned, 0), SBI_ERR_DENIED_LOCKED);
    check_ok_val("fwft 18.2", "get after LOCK: the value", SBI1(EID_FWFT, 1, FWFT_MISALIGNED_EXC_DELEG),
                 misaligned);
}

/* ---- DBTR (chapter 19) ---- */

#if XLEN == 64
#define REG_S "sd"
#define REG_L "ld"
#else
#define REG_S "sw"
#define REG_L "lw"
#endif

/* A trap entry for the trigger checks: records scause and sepc, steps over the 4-byte
 * instruction that trapped, returns. */
volatile unsigned long dbtr_cause, dbtr_epc;
__asm__(".text\n.balign 4\n.globl dbtr_trap\ndbtr_trap:\n"
        "addi sp, sp, -16\n" REG_S " t0, 0(sp)\n" REG_S " t1, 8(sp)\n"
        "la t0, dbtr_cause\ncsrr t1, scause\n" REG_S " t1, 0(t0)\n"
        "la t0, dbtr_epc\ncsrr t1, sepc\n" REG_S " t1, 0(t0)\n"
        "addi t1, t1, 4\ncsrw sepc, t1\n"
        REG_L " t0, 0(sp)\n" REG_L " t1, 8(sp)\naddi sp, sp, 16\nsret\n");
void dbtr_trap(void);

static volatile uint32_t dbtr_var;
static unsigned long dbtr_mem[4 * 8] __attribute__((aligned(16)));

/* One 4-byte load of dbtr_var under dbtr_trap: 1 if it raised a breakpoint (cause 3) at the
 * load. */
static int dbtr_load_traps(void) {
    unsigned long at, v;
    dbtr_cause = 0;
    dbtr_epc = 0;
    unsigned long old = CSR_READ(stvec);
    CSR_WRITE(stvec, (unsigned long)dbtr_trap);
    __asm__ volatile(".option push\n.option norvc\n1: lw %1, 0(%2)\n.option pop\nla %0, 1b"
                     : "=&r"(at), "=&r"(v) : "r"(&dbtr_var) : "memory");
    CSR_WRITE(stvec, old);
    return dbtr_cause == 3 && dbtr_epc == at;
}

static void test_dbtr(void) {
    if (!SBI1(EID_BASE, 3, EID_DBTR).value) {
        check("dbtr 19", "DBTR (not available)", 1, "-");
        return;
    }
    const unsigned long type2 = 2ul << (XLEN - 4), load = 1, s_mode = 1ul << 4, m_mode = 1ul << 6;
    struct sbiret r = SBI1(EID_DBTR, 0, 0);
    unsigned long max = r.value;
    check("dbtr 19.1", "num_triggers(0): SUCCESS, trig_max >= 2", r.error == 0 && max >= 2 && max <= 8,
          "%s value %lu", err_name(r.error), max);
    if (r.error || max < 2 || max > 8) return;
    check_ok_val("dbtr 19.1", "num_triggers(an S-mode load trigger) = trig_max",
                 SBI1(EID_DBTR, 0, type2 | load | s_mode), max);
    check_err("dbtr 19.3", "read_triggers without shared memory -> NO_SHMEM", SBI2(EID_DBTR, 2, 0, 1),
              SBI_ERR_NO_SHMEM);
    check_err("dbtr 19.2", "set_shmem not XLEN/8 aligned -> INVALID_PARAM",
              SBI3(EID_DBTR, 1, (unsigned long)dbtr_mem + 1, 0, 0), SBI_ERR_INVALID_PARAM);
    check_err("dbtr 19.2", "set_shmem with flags -> INVALID_PARAM",
              SBI3(EID_DBTR, 1, (unsigned long)dbtr_mem, 0, 1), SBI_ERR_INVALID_PARAM);
    check_err("dbtr 19.2", "set_shmem: SUCCESS", SBI3(EID_DBTR, 1, (unsigned long)dbtr_mem, 0, 0), SBI_SUCCESS);
    check_err("dbtr 19.4", "install trig_max triggers -> BAD_RANGE", SBI1(EID_DBTR, 3, max), SBI_ERR_BAD_RANGE);
    /* a trigger with m set is invalid (the chapter's constraint): the failing index 0 */
    dbtr_mem[0] = 99;
    dbtr_mem[1] = type2 | load | s_mode | m_mode;
    dbtr_mem[2] = (unsigned long)&dbtr_var;
    dbtr_mem[3] = 0;
    r = SBI1(EID_DBTR, 3, 1);
    check("dbtr 19.4", "install with tdata1.m -> INVALID_PARAM, value 0", r.error == SBI_ERR_INVALID_PARAM && r.value == 0,
          "%s value %lu", err_name(r.error), r.value);
    dbtr_mem[1] = type2 | load | s_mode;
    r = SBI1(EID_DBTR, 3, 1);
    unsigned long idx = dbtr_mem[0];
    check("dbtr 19.4", "install an S-mode load trigger: SUCCESS, trig_idx written back",
          r.error == 0 && idx < max, "%s value %lu, trig_idx %lu", err_name(r.error), r.value, idx);
    if (r.error || idx >= max) return;
    check("dbtr 19.4", "the installed trigger fires on the load: a breakpoint in S-mode", dbtr_load_traps(),
          "scause %lx sepc %lx", dbtr_cause, dbtr_epc);
    if (idx + 1 < max) { /* read_triggers covers base + count < trig_max */
        r = SBI2(EID_DBTR, 2, idx, 1);
        check("dbtr 19.3", "read_triggers: mapped, s saved, tdata1 and tdata2 as installed",
              r.error == 0 && (dbtr_mem[0] & 1) && (dbtr_mem[0] & 4) && dbtr_mem[1] == (type2 | load | s_mode) &&
                  dbtr_mem[2] == (unsigned long)&dbtr_var,
              "%s state %lx tdata1 %lx tdata2 %lx", err_name(r.error), dbtr_mem[0], dbtr_mem[1], dbtr_mem[2]);
    }
    check_err("dbtr 19.7", "disable_triggers: SUCCESS", SBI2(EID_DBTR, 7, idx, 1), SBI_SUCCESS);
    check("dbtr 19.7", "a disabled trigger does not fire", !dbtr_load_traps(), "scause %lx", dbtr_cause);
    check_err("dbtr 19.6", "enable_triggers: SUCCESS", SBI2(EID_DBTR, 6, idx, 1), SBI_SUCCESS);
    check("dbtr 19.6", "an enabled trigger fires again", dbtr_load_traps(), "scause %lx", dbtr_cause);
    check_err("dbtr 19.6", "enable_triggers of trig_max -> INVALID_PARAM", SBI2(EID_DBTR, 6, max, 1),
              SBI_ERR_INVALID_PARAM);
    check_err("dbtr 19.8", "uninstall_triggers: SUCCESS", SBI2(EID_DBTR, 5, idx, 1), SBI_SUCCESS);
    check("dbtr 19.8", "an uninstalled trigger does not fire", !dbtr_load_traps(), "scause %lx", dbtr_cause);
    check_err("dbtr 19.8", "uninstall of a free trigger -> INVALID_PARAM", SBI2(EID_DBTR, 5, idx, 1),
              SBI_ERR_INVALID_PARAM);
    dbtr_mem[0] = idx;
    check_err("dbtr 19.5", "update of a free trigger -> FAILED", SBI1(EID_DBTR, 4, 1), SBI_ERR_FAILED);
    SBI3(EID_DBTR, 1, -1ul, -1ul, 0);
}

/* ---- the other harts: HSM (9) and IPI (7) ---- */

/* What each secondary hart saw: 1 started (its SSIE set, waiting), 2 IPI taken; its FWFT
 * answers; the a0 it was started with. */
static volatile unsigned long sec_phase[MAX_HARTS], sec_a0[MAX_HARTS];
static volatile long sec_fwft_set[MAX_HARTS];
static unsigned char sec_stack[MAX_HARTS][1024] __attribute__((aligned(16)));

/* A started hart: a0 = its id, a1 = opaque = its stack top (HSM 9.1 "Hart Start Register
 * State"). */
__asm__(".text\n.balign 4\n.globl secondary_entry\nsecondary_entry:\n"
        ".option push\n.option norelax\nla gp, __global_pointer$\n.option pop\n"
        "mv sp, a1\nla t0, trap_entry\ncsrw stvec, t0\ncall secondary\n1: j 1b\n");
void secondary_entry(void);

void secondary(unsigned long hartid) {
    unsigned long h = hartid % MAX_HARTS;
    sec_a0[h] = hartid;
    /* FWFT values and locks are per hart: the boot hart's LOCK does not bind this one */
    sec_fwft_set[h] = have_fwft ? SBI3(EID_FWFT, 0, FWFT_MISALIGNED_EXC_DELEG, misaligned, 0).error : 0;
    CSR_SET(sie, SIP_SSIP);
    __asm__ volatile("fence rw, rw" ::: "memory");
    sec_phase[h] = 1;
    /* wfi wakes on SSIP, pending and enabled in sie, with sstatus.SIE clear (no trap) */
    for (unsigned long k = 0; k < WAIT && !(CSR_READ(sip) & SIP_SSIP); k++) __asm__ volatile("wfi");
    if (CSR_READ(sip) & SIP_SSIP) {
        CSR_CLEAR(sip, SIP_SSIP);
        __asm__ volatile("fence rw, rw" ::: "memory");
        sec_phase[h] = 2;
    }
    SBI0(EID_HSM, 1); /* hart_stop: does not return */
    for (;;) __asm__ volatile("wfi");
}

static int wait_status(unsigned long h, unsigned long status) {
    for (unsigned long k = 0; k < WAIT; k++) {
        struct sbiret r = SBI1(EID_HSM, 2, h);
        if (r.error == 0 && r.value == status) return 1;
    }
    return 0;
}

static int wait_phase(unsigned long h, unsigned long phase) {
    for (unsigned long k = 0; k < WAIT && sec_phase[h] < phase; k++) __asm__ volatile("nop");
    return sec_phase[h] >= phase;
}

static int have_susp;

static void test_harts(void) {
    for (nharts = 0; nharts < MAX_HARTS && SBI1(EID_HSM, 2, nharts).error == 0; nharts++)
        ;
    printf("# %lu harts\n", nharts);
    check_ok_val("hsm 9.3", "hart_get_status of the calling hart: STARTED", SBI1(EID_HSM, 2, me), HSM_STARTED);
    if (nharts < 2) {
        check("hsm 9.1", "other harts (one hart: not tried)", 1, "-");
        return;
    }
    unsigned long others = 0, started = 0, ready = 0, ipi = 0, fwft = 0, a0 = 0;
    for (unsigned long h = 0; h < nharts; h++) {
        if (h == me) continue;
        others |= 1ul << h;
        if (!wait_status(h, HSM_STOPPED)) continue;
        struct sbiret r = SBI3(EID_HSM, 0, h, (unsigned long)secondary_entry,
                               (unsigned long)&sec_stack[h][sizeof sec_stack[h]]);
        if (r.error == 0) started |= 1ul << h;
    }
    check("hsm 9.1", "hart_start of every STOPPED hart: SUCCESS", started == others, "started %lx of %lx",
          started, others);
    for (unsigned long h = 0; h < nharts; h++)
        if (started >> h & 1 && wait_phase(h, 1)) ready |= 1ul << h;
    check("hsm 9.1", "every started hart runs at start_addr with a1 = opaque (its stack)",
          ready == others, "ready %lx", ready);
    for (unsigned long h = 0; h < nharts; h++) {
        if (ready >> h & 1 && sec_a0[h] == h) a0 |= 1ul << h;
        if (ready >> h & 1 && sec_fwft_set[h] == 0) fwft |= 1ul << h;
    }
    check("hsm 9.1", "a0 = hartid in every started hart", a0 == others, "%lx", a0);
    if (have_fwft)
        check("fwft 18.1", "LOCK is per hart: the other harts still set MISALIGNED_EXC_DELEG", fwft == others,
              "%lx", fwft);
    unsigned long first = __builtin_ctzl(others);
    check_ok_val("hsm 9.3", "hart_get_status of a started hart: STARTED", SBI1(EID_HSM, 2, first), HSM_STARTED);
    check_err("hsm 9.1", "hart_start of a started hart -> ALREADY_AVAILABLE",
              SBI3(EID_HSM, 0, first, (unsigned long)secondary_entry, 0), SBI_ERR_ALREADY_AVAILABLE);
    if (have_susp)
        check_err("susp 13.1", "system_suspend with other harts started -> DENIED",
                  SBI3(EID_SUSP, 0, 0, (unsigned long)secondary_entry, 0), SBI_ERR_DENIED);
    /* IPI 7.1 to every other hart: the base names the first, the mask the rest */
    struct sbiret r = SBI2(EID_IPI, 0, others >> first, first);
    check_err("ipi 7.1", "send_ipi to every other hart: SUCCESS", r, SBI_SUCCESS);
    for (unsigned long h = 0; h < nharts; h++)
        if (ready >> h & 1 && wait_phase(h, 2)) ipi |= 1ul << h;
    check("ipi 7.1", "every other hart takes SSIP", ipi == others, "%lx of %lx", ipi, others);
    check("ipi 7.1", "the sender's own SSIP stays clear", !(CSR_READ(sip) & SIP_SSIP), "sip %lx", CSR_READ(sip));
    unsigned long stopped = 0;
    for (unsigned long h = 0; h < nharts; h++)
        if (others >> h & 1 && wait_status(h, HSM_STOPPED)) stopped |= 1ul << h;
    check("hsm 9.2", "every other hart STOPPED after hart_stop", stopped == others, "%lx", stopped);
}

/* ---- SUSP (chapter 13): last, as the run goes on at resume_addr ---- */

static volatile uint64_t susp_deadline;
static volatile unsigned long susp_sp;
#define SUSP_OPAQUE 0x5a17ul

__asm__(".text\n.balign 4\n.globl susp_resume\nsusp_resume:\n"
        ".option push\n.option norelax\nla gp, __global_pointer$\n.option pop\n"
        "la t0, susp_sp\n"
#if XLEN == 64
        "ld sp, 0(t0)\n"
#else
        "lw sp, 0(t0)\n"
#endif
        "la t0, trap_entry\ncsrw stvec, t0\ncall resumed\n1: j 1b\n");
void susp_resume(void);

/* Resumed (13.1, table "SUSP System Resume Register State"): satp 0, sstatus.SIE 0, a0 the
 * hart id, a1 opaque; woken by the timer interrupt armed before. */
void resumed(unsigned long a0, unsigned long a1) {
    unsigned long sstatus = CSR_READ(sstatus), satp = CSR_READ(satp), sip = CSR_READ(sip);
    uint64_t now = rdtime();
    check("susp 13.1", "resumed at resume_addr with a0 = hartid, a1 = opaque", a0 == me && a1 == SUSP_OPAQUE,
          "a0 %lx a1 %lx", a0, a1);
    check("susp 13.1", "resumed with satp = 0 and sstatus.SIE = 0", satp == 0 && !(sstatus & SSTATUS_SIE),
          "satp %lx sstatus %lx", satp, sstatus);
    check("susp 13.1", "woken by the timer: STIP pending, time past the deadline",
          (sip & SIP_STIP) && now >= susp_deadline, "sip %lx", sip);
    sbi_call(EID_TIME, 0, -1ul, -1ul, 0, 0, 0, 0);
    sbi_exit(summary("sbi_v3"));
}

static void test_susp(void) {
    if (!have_susp) {
        check("susp 13", "SUSP (not available)", 1, "-");
        return;
    }
    check_err("susp 13.1", "reserved sleep type 1 -> INVALID_PARAM",
              SBI3(EID_SUSP, 0, 1, (unsigned long)susp_resume, 0), SBI_ERR_INVALID_PARAM);
    check_err("susp 13.1", "platform sleep type 0x80000000 (none implemented) -> INVALID_PARAM",
              SBI3(EID_SUSP, 0, 0x80000000ul, (unsigned long)susp_resume, 0), SBI_ERR_INVALID_PARAM);
    if (nharts >= 2) /* an SBI may refuse SUSPEND_TO_RAM on one hart before it looks further */
        check_err("susp 13.1", "resume_addr outside memory -> INVALID_ADDRESS",
                  SBI3(EID_SUSP, 0, 0, 0x10, 0), SBI_ERR_INVALID_ADDRESS);
    /* SUSPEND_TO_RAM, woken by the supervisor timer 1 ms later (sie.STIE, SIE clear) */
    __asm__ volatile("mv %0, sp" : "=r"(susp_sp));
    CSR_CLEAR(sstatus, SSTATUS_SIE);
    CSR_SET(sie, 1ul << IRQ_STI);
    susp_deadline = rdtime() + 10000;
    sbi_call(EID_TIME, 0, (unsigned long)susp_deadline, (unsigned long)(susp_deadline >> 32), 0, 0, 0, 0);
    struct sbiret r = SBI3(EID_SUSP, 0, 0, (unsigned long)susp_resume, SUSP_OPAQUE);
    if (r.error == SBI_ERR_NOT_SUPPORTED && nharts < 2) {
        check("susp 13.1", "SUSPEND_TO_RAM: NOT_SUPPORTED (one hart: not tried)", 1, "-");
        sbi_call(EID_TIME, 0, -1ul, -1ul, 0, 0, 0, 0);
        return;
    }
    check("susp 13.1", "SUSPEND_TO_RAM resumes at resume_addr (does not return)", 0, "%s", err_name(r.error));
}

int main(unsigned long hartid, unsigned long dtb) {
    me = hartid;
    printf("sbi_v3: rv%d hart %lu\n", XLEN, hartid);
    have_susp = SBI1(EID_BASE, 3, EID_SUSP).value != 0;
    have_fwft = SBI1(EID_BASE, 3, EID_FWFT).value != 0;
    printf("# probe: SUSP %d FWFT %d\n", have_susp, have_fwft);
    test_time(dtb);
    test_pmu();
    test_fwft();
    test_dbtr();
    test_harts();
    test_susp();
    return summary("sbi_v3");
}
