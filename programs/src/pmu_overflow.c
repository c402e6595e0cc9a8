/* Counter overflow (Sscofpmf) and privilege-mode filtering (Sscofpmf xINH bits, Smcntrpmf
 * mcyclecfg/minstretcfg). A counter preset to 2^64-10 (INSTRUCTIONS) wraps while LCOFI cannot be
 * taken: OF is set in its mhpmevent (RV32: mhpmeventh), scountovf shows it, mip.LCOFIP is set;
 * the interrupt is then taken exactly once, right after the `csrs mstatus` that sets MIE. A
 * second wrap with OF still set raises nothing. Delegated through mideleg, LCOFI is taken in S
 * (right after `csrs sstatus` SIE, or at the first U instruction after mret) and shows in sip.
 * A carry into the high half (2^32-10) is no overflow. Filtering: the same U- and S-mode work
 * counted with UINH/SINH/MINH set and clear. Deterministic: every interrupt is made pending
 * while it cannot be taken; no cycle value is printed. */
#include "pmu.h"

struct event { char who; unsigned long cause, epc; };
static struct event events[16];
static volatile int nevents;

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)vec;
    if (cause == (CAUSE_IRQ | IRQ_LCOFI)) {
        if (nevents < 16) events[nevents++] = (struct event){ 'M', cause, epc };
        CSR_CLEAR(mip, MIP_LCOFIP);
        return epc;
    }
    if (PMU_LEAVE(cause, epc))
        return 0;
    if (cause == CAUSE_ILLEGAL) {
        illegal++;
        return epc + insn_len(epc);
    }
    if ((cause == CAUSE_ECALL_U || cause == CAUSE_ECALL_S) && f->a7 == SYS_LEAVE)
        return 0;
    printf("FAIL unexpected M trap cause %lx at %lx\n", cause, epc);
    return epc + insn_len(epc);
}

unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)f;
    (void)vec;
    if (cause == (CAUSE_IRQ | IRQ_LCOFI)) {
        if (nevents < 16) events[nevents++] = (struct event){ 'S', cause, epc };
        CSR_CLEAR(sip, MIP_LCOFIP);
        return epc;
    }
    printf("FAIL unexpected S trap cause %lx at %lx\n", cause, epc);
    return epc + insn_len(epc);
}

extern char after_mie[], after_mie2[], after_sie[];

/* Sets mstatus.MIE (an LCOFI pending and enabled is taken right after it), then clears it. */
static __attribute__((noinline)) void enable_mie(void) {
    __asm__ volatile("csrs mstatus, %0\n"
                     ".globl after_mie\n"
                     "after_mie:\n\t"
                     "csrc mstatus, %0" :: "r"(MSTATUS_MIE) : "memory");
}

static __attribute__((noinline)) void enable_mie2(void) {
    __asm__ volatile("csrs mstatus, %0\n"
                     ".globl after_mie2\n"
                     "after_mie2:\n\t"
                     "csrc mstatus, %0" :: "r"(MSTATUS_MIE) : "memory");
}

/* Counting on (not counted), 20 nops, counting off (counted): 21 instructions. */
static __attribute__((noinline)) void run21(void) {
    __asm__ volatile("csrw mcountinhibit, zero\n\t"
                     ".rept 20\n\tnop\n\t.endr\n\t"
                     "csrw mcountinhibit, %0" :: "r"(-1l) : "memory");
}

/* S-mode: enable SIE (a pending delegated LCOFI is taken right after), then disable it. */
static long s_enable_sie(long arg) {
    unsigned long sip = CSR_READ(sip) & MIP_LCOFIP;
    __asm__ volatile("csrs sstatus, %0\n"
                     ".globl after_sie\n"
                     "after_sie:\n\t"
                     "csrc sstatus, %0" :: "r"(MSTATUS_SIE) : "memory");
    return (long)sip + arg;
}

static const char *where(unsigned long epc) {
    if (epc == (unsigned long)after_mie) return "after csrs mstatus";
    if (epc == (unsigned long)after_mie2) return "after csrs mstatus (2)";
    if (epc == (unsigned long)after_sie) return "after csrs sstatus";
    if (epc == (unsigned long)u_work) return "first U instruction";
    return "elsewhere";
}

static void show_events(const char *what) {
    printf("%s: %d interrupt%s", what, nevents, nevents == 1 ? "" : "s");
    for (int i = 0; i < nevents; i++)
        printf("; %c-mode cause %lu %s", events[i].who, events[i].cause & ~CAUSE_IRQ, where(events[i].epc));
    printf("\n");
    nevents = 0;
}

static void show_state(const char *what, int n) {
    unsigned long of = (evt_hi_read(n) & EVT_OF) != 0;
    printf("%s: counter %d = %llx, OF %lu, scountovf %lx, mip.LCOFIP %d, sip.LCOFIP %d\n", what, n,
           (unsigned long long)ctr_read(n), of, CSRR_I(CSR_SCOUNTOVF),
           (CSR_READ(mip) & MIP_LCOFIP) != 0, (CSR_READ(sip) & MIP_LCOFIP) != 0);
}

/* 1. Wrap in M with LCOFI enabled in mie but MIE clear; take it; wrap again with OF set. */
static void overflow_m(void) {
    STOP_ALL();
    CSR_CLEAR(mstatus, MSTATUS_MIE);
    CSR_SET(mie, MIP_LCOFIP);
    evt_set(3, EV_INSTRUCTIONS, 0);
    ctr_write(3, -10ull);
    show_state("preset 2^64-10", 3);
    run21();
    show_state("after 21 instructions", 3);
    enable_mie();
    show_events("MIE set");
    show_state("after the handler", 3);
    /* Second wrap, OF still set: no interrupt. */
    ctr_write(3, -10ull);
    run21();
    show_state("second wrap with OF set", 3);
    enable_mie2();
    show_events("MIE set again");
    /* Carry into the high half is no overflow. */
    evt_set(3, EV_INSTRUCTIONS, 0);
    ctr_write(3, 0xfffffff6ull);
    run21();
    show_state("2^32-10 + 21", 3);
    enable_mie();
    show_events("MIE set");
    evt_set(3, 0, 0);
}

/* 2. CPU_CYCLES counter: preset 2^64-5, 21 instructions take at least 5 cycles. */
static void overflow_cycles(void) {
    STOP_ALL();
    evt_set(4, EV_CPU_CYCLES, 0);
    ctr_write(4, -5ull);
    run21();
    printf("CPU_CYCLES 2^64-5, 21 instructions: OF %d, scountovf %lx, mip.LCOFIP %d\n",
           (evt_hi_read(4) & EVT_OF) != 0, CSRR_I(CSR_SCOUNTOVF), (CSR_READ(mip) & MIP_LCOFIP) != 0);
    enable_mie();
    show_events("MIE set");
    evt_set(4, 0, 0);
}

/* 3. LCOFI taken at the mret into U (M interrupts are always enabled in U). */
static void overflow_to_u(void) {
    STOP_ALL();
    evt_set(5, EV_INSTRUCTIONS, 0);
    ctr_write(5, -10ull);
    run21();
    show_state("counter 5 wrapped", 5);
    long r = m_enter(10, u_work, 0);
    show_events("mret to U");
    printf("U work result %ld\n", r);
    evt_set(5, 0, 0);
}

/* 4. Delegated to S: pending in M is never taken there; taken in S after csrs sstatus, or in
 * S at the first U instruction after an mret to U. */
static void overflow_delegated(void) {
    STOP_ALL();
    CSR_SET(mideleg, MIP_LCOFIP);
    evt_set(6, EV_INSTRUCTIONS, 0);
    ctr_write(6, -10ull);
    run21();
    show_state("delegated, counter 6 wrapped", 6);
    enable_mie();
    show_events("MIE set in M");
    long sip = m_enter(0, s_enable_sie, 1);
    printf("S saw sip.LCOFIP %ld\n", sip);
    show_events("SIE set in S");
    ctr_write(6, -10ull);
    evt_set(6, EV_INSTRUCTIONS, 0); /* clear OF */
    run21();
    long r = m_enter(5, u_work, 0);
    show_events("mret to U, delegated");
    printf("U work result %ld\n", r);
    evt_set(6, 0, 0);
    CSR_CLEAR(mideleg, MIP_LCOFIP);
}

/* 5. Privilege-mode filtering (RV64 only: QEMU 10 ignores the RV32 filter bits, README; pmu_spec
 * checks them on RV32). */
#if __riscv_xlen == 64
static void filtering(void) {
    /* One counter at a time: QEMU maps each event to one counter only (README). */
    static const struct { unsigned long inh; const char *name; } inhs[] = {
        { 0, "none" }, { EVT_UINH, "UINH" }, { EVT_MINH, "MINH" },
        { EVT_SINH, "SINH" }, { EVT_MINH | EVT_SINH | EVT_UINH, "all" },
    };
    CSR_CLEAR(mie, MIP_LCOFIP);
    for (int mode = 0; mode <= 1; mode++) {
        printf("%c-mode work, INSTRUCTIONS with inhibit", mode ? 'S' : 'U');
        for (int i = 0; i < 5; i++) {
            STOP_ALL();
            evt_set(3, EV_INSTRUCTIONS, inhs[i].inh);
            ctr_write(3, 0);
            RUN_ALL();
            m_enter(100, work_leave, mode);
            STOP_ALL();
            printf(" %s %llu", inhs[i].name, (unsigned long long)ctr_read(3));
        }
        printf("\n");
    }
    evt_set(3, 0, 0);
    /* Smcntrpmf: minstretcfg and mcyclecfg. */
    static const struct { unsigned long cfg; const char *name; } cfgs[] = {
        { 0, "none" }, { EVT_UINH, "UINH" }, { EVT_MINH, "MINH" }, { EVT_MINH | EVT_SINH | EVT_UINH, "all" },
    };
    for (int i = 0; i < 4; i++) {
        STOP_ALL();
        CSRW_I(CSR_MINSTRETCFG, cfgs[i].cfg);
        CSRW_I(CSR_MCYCLECFG, cfgs[i].cfg);
        CSRW_I(CSR_MINSTRET, 0);
        uint64_t c0 = mcycle64();
        RUN_ALL();
        m_enter(100, work_leave, 0);
        STOP_ALL();
        uint64_t c1 = mcycle64();
        printf("U-mode work, minstretcfg/mcyclecfg %s: minstret %llu, mcycle %s\n", cfgs[i].name,
               (unsigned long long)minstret64(), c1 == c0 ? "unchanged" : "counted");
    }
    CSRW_I(CSR_MINSTRETCFG, 0);
    CSRW_I(CSR_MCYCLECFG, 0);
}
#endif

int main(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    CSR_WRITE(stvec, s_trap_entry);
    pmp_open_all();
    /* QEMU masks scountovf with mcounteren even in M-mode (README): all enabled, so M's reads
     * show every OF bit, as the spec says they always do. */
    CSRW_I(CSR_MCOUNTEREN, ~0ul);
    overflow_m();
    overflow_cycles();
    overflow_to_u();
    overflow_delegated();
#if __riscv_xlen == 64
    filtering();
#endif
    printf("pmu_overflow done\n");
    return 0;
}
