/* Counter CSR access rules (privileged spec: Zicntr, Zihpm, Sscofpmf), as software sees them:
 * mhpmcounter/mhpmevent 3..18 implemented, the write masks of mcountinhibit/mcounteren/
 * scounteren/mhpmevent3,18 (read after writing all ones and zero), writes to inhibited
 * counters, the write semantics of mcountinhibit (the csrw that starts counting is not
 * counted, the one that stops it is), U/S
 * access to every counter class under mcounteren/scounteren (illegal instruction otherwise,
 * counted by the M handler), scountovf from M, S (masked by mcounteren) and U (illegal), and on
 * RV32 the *h halves with the carry out of the low half. Never prints a cycle or time value.
 * Only what QEMU 10 and the spec agree on (the rest is in pmu_spec; programs/README.md). */
#include "pmu.h"

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)vec;
    if (cause == CAUSE_ILLEGAL) {
        illegal++;
        return epc + insn_len(epc);
    }
    if ((cause == CAUSE_ECALL_U || cause == CAUSE_ECALL_S) && f->a7 == SYS_LEAVE)
        return 0;
    printf("FAIL unexpected trap cause %lx at %lx\n", cause, epc);
    return epc + insn_len(epc);
}

unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    return m_trap(cause, epc, f, vec);
}

/* 2. Write masks. */
static void masks(void) {
    STOP_ALL();
    PROBE("mcountinhibit", CSR_MCOUNTINHIBIT);
    STOP_ALL();
    PROBE("mcounteren", CSR_MCOUNTEREN);
    PROBE("scounteren", CSR_SCOUNTEREN);
    /* Sscofpmf mhpmevent bits 57:56 are WPRI (read-only zero here, kept by QEMU): not shown. */
#if __riscv_xlen == 32
    PROBE("mhpmevent3", CSR_MHPMEVENT + 3);
    PROBE("mhpmevent18", CSR_MHPMEVENT + 18);
    PROBE_MASKED("mhpmevent3h", CSR_MHPMEVENTH + 3, ~(3ul << 24));
    PROBE_MASKED("mhpmevent18h", CSR_MHPMEVENTH + 18, ~(3ul << 24));
#else
    PROBE_MASKED("mhpmevent3", CSR_MHPMEVENT + 3, ~(3ul << 56));
    PROBE_MASKED("mhpmevent18", CSR_MHPMEVENT + 18, ~(3ul << 56));
#endif
    /* scountovf is a read-only CSR number (bits 11:10 = 3): the write is illegal. */
    PROBE("scountovf", CSR_SCOUNTOVF);
    STOP_ALL();
}

/* 3. Write semantics of minstret and mcountinhibit (M-mode). */
static void write_semantics(void) {
    unsigned long a, c, d;
    STOP_ALL();
    CSRW_I(CSR_MINSTRET, 1000);
    a = CSRR_I(CSR_MINSTRET);
    printf("minstret inhibited: wrote 1000, read %lu\n", a);
    evt_set(3, EV_INSTRUCTIONS, 0);
    /* Start counting (not counted), 5 nops, stop counting (counted): 6. */
    CSRW_I(CSR_MINSTRET, 0);
    mhpmcounter_write(3, 0);
    __asm__ volatile("csrw mcountinhibit, zero\n\t"
                     "nop\n\tnop\n\tnop\n\tnop\n\tnop\n\t"
                     "csrw mcountinhibit, %0" :: "r"(-1l) : "memory");
    c = CSRR_I(CSR_MINSTRET);
    d = mhpmcounter_read(3);
    printf("start, 5 nops, stop: minstret %lu, mhpmcounter3 (INSTRUCTIONS) %lu\n", c, d);
    /* mcycle does not move while inhibited. */
    CSRW_I(CSR_MCYCLE, 77);
    for (volatile int i = 0; i < 10; i++) {
    }
    printf("mcycle inhibited: wrote 77, read %lu\n", CSRR_I(CSR_MCYCLE));
    mhpmevent_write(3, 0);
}

/* 4. S/U access to the user-level counters. */
static const char *const user_names[] = {
    "cycle", "time", "instret", "hpmcounter3", "hpmcounter18", "hpmcounter19", "hpmcounter31",
#if __riscv_xlen == 32
    "cycleh", "timeh", "instreth", "hpmcounter3h", "hpmcounter19h",
#endif
};
#define NUSER (int)(sizeof user_names / sizeof user_names[0])

#define TRY(i, num) do { int b_ = illegal; (void)CSRR_I(num); if (illegal != b_) mask |= 1l << (i); } while (0)

/* Runs in S or U: bit i set when user_names[i] traps. */
static long try_user_counters(long arg) {
    (void)arg;
    long mask = 0;
    TRY(0, CSR_CYCLE);
    TRY(1, CSR_TIME);
    TRY(2, CSR_INSTRET);
    TRY(3, CSR_HPMCOUNTER + 3);
    TRY(4, CSR_HPMCOUNTER + 18);
    TRY(5, CSR_HPMCOUNTER + 19);
    TRY(6, CSR_HPMCOUNTER + 31);
#if __riscv_xlen == 32
    TRY(7, CSR_CYCLEH);
    TRY(8, CSR_TIMEH);
    TRY(9, CSR_INSTRETH);
    TRY(10, CSR_HPMCOUNTERH + 3);
    TRY(11, CSR_HPMCOUNTERH + 19);
#endif
    return mask;
}

static long try_scountovf(long arg) {
    (void)arg;
    int b = illegal;
    unsigned long v = CSRR_I(CSR_SCOUNTOVF);
    return illegal != b ? -1 : (long)v;
}

/* From S: ecall SYS_LEAVE; U-mode access run from S. */
static long s_then_u(long arg) {
    return s_enter(arg, try_user_counters);
}

static void access_case(const char *what, unsigned long men, unsigned long sen, int mode) {
    CSRW_I(CSR_MCOUNTEREN, men);
    CSRW_I(CSR_SCOUNTEREN, sen);
    illegal = 0;
    long mask = m_enter(0, try_user_counters, mode);
    printf("%-36s", what);
    for (int i = 0; i < NUSER; i++)
        printf(" %c", (mask >> i) & 1 ? 'X' : 'r');
    printf("  (%d illegal)\n", illegal);
}

static void user_access(void) {
    RUN_ALL();
    evt_set(3, EV_INSTRUCTIONS, 0);
    printf("user counters (r readable, X illegal):");
    for (int i = 0; i < NUSER; i++)
        printf(" %s", user_names[i]);
    printf("\n");
    access_case("S mcounteren=0", 0, 0, 1);
    access_case("S mcounteren=~0", ~0ul, 0, 1);
    access_case("S mcounteren=CY|IR|HPM19", CNT_CY | CNT_IR | CNT_HPM(19), 0, 1);
    access_case("U mcounteren=~0 scounteren=0", ~0ul, 0, 0);
    access_case("U mcounteren=~0 scounteren=~0", ~0ul, ~0ul, 0);
    access_case("U mcounteren=0 scounteren=~0", 0, ~0ul, 0);
    access_case("U mcounteren=TM|HPM3 scounteren=IR|HPM3", CNT_TM | CNT_HPM(3), CNT_IR | CNT_HPM(3), 0);
    /* U entered from S (sret) with everything enabled. */
    CSRW_I(CSR_MCOUNTEREN, ~0ul);
    CSRW_I(CSR_SCOUNTEREN, ~0ul);
    illegal = 0;
    long mask = m_enter(0, s_then_u, 1);
    printf("%-36s", "U via S, both ~0");
    for (int i = 0; i < NUSER; i++)
        printf(" %c", (mask >> i) & 1 ? 'X' : 'r');
    printf("  (%d illegal)\n", illegal);
    STOP_ALL();
    mhpmevent_write(3, 0);
}

/* 5. scountovf: bit n = OF of counter n; S sees the bits enabled in mcounteren, U traps. */
static void overflow_bits(void) {
    STOP_ALL();
    evt_set(3, 0, EVT_OF);
    evt_set(5, 0, EVT_OF);
    evt_set(18, 0, EVT_OF);
    printf("OF set on 3, 5, 18: mhpmevent OF bits 3=%d 4=%d 5=%d 18=%d\n",
           (evt_hi_read(3) & EVT_OF) != 0, (evt_hi_read(4) & EVT_OF) != 0,
           (evt_hi_read(5) & EVT_OF) != 0, (evt_hi_read(18) & EVT_OF) != 0);
    printf("scountovf from M: %lx\n", CSRR_I(CSR_SCOUNTOVF));
    static const unsigned long ens[] = { 0, CNT_HPM(3), CNT_HPM(5) | CNT_HPM(18), ~0ul };
    for (int i = 0; i < 4; i++) {
        CSRW_I(CSR_MCOUNTEREN, ens[i]);
        long v = m_enter(0, try_scountovf, 1);
        printf("scountovf from S, mcounteren=%lx: %lx\n", CSRR_I(CSR_MCOUNTEREN), (unsigned long)v);
    }
    CSRW_I(CSR_SCOUNTEREN, ~0ul);
    illegal = 0;
    long v = m_enter(0, try_scountovf, 0);
    printf("scountovf from U, both ~0: %s (%d illegal)\n", v == -1 ? "illegal" : "readable", illegal);
    evt_set(3, 0, 0);
    evt_set(5, 0, 0);
    evt_set(18, 0, 0);
    printf("OF cleared: scountovf from M: %lx\n", CSRR_I(CSR_SCOUNTOVF));
    CSRW_I(CSR_MCOUNTEREN, 0);
    CSRW_I(CSR_SCOUNTEREN, 0);
}

#if __riscv_xlen == 32
/* 6. RV32: the high halves, and the carry out of the low half. */
static void halves(void) {
    STOP_ALL();
    CSRW_I(CSR_MINSTRET, 0xfffffffful);
    CSRW_I(CSR_MINSTRETH, 5);
    evt_set(3, EV_INSTRUCTIONS, 0);
    mhpmcounter_write(3, 0xfffffffeul);
    mhpmcounterh_write(3, 0x7);
    CSRW_I(CSR_MCYCLE, 0xfffffffful);
    CSRW_I(CSR_MCYCLEH, 9);
    printf("inhibited: minstreth %lu minstret %lx mhpmcounter3h %lu mhpmcounter3 %lx mcycleh %lu\n",
           CSRR_I(CSR_MINSTRETH), CSRR_I(CSR_MINSTRET), mhpmcounterh_read(3), mhpmcounter_read(3),
           CSRR_I(CSR_MCYCLEH));
    /* start (not counted), 4 nops, stop (counted): +5 */
    __asm__ volatile("csrw mcountinhibit, zero\n\t"
                     "nop\n\tnop\n\tnop\n\tnop\n\t"
                     "csrw mcountinhibit, %0" :: "r"(-1l) : "memory");
    printf("after 5: minstreth %lu minstret %lu mhpmcounter3h %lu mhpmcounter3 %lu mcycleh %lu\n",
           CSRR_I(CSR_MINSTRETH), CSRR_I(CSR_MINSTRET), mhpmcounterh_read(3), mhpmcounter_read(3),
           CSRR_I(CSR_MCYCLEH));
    printf("user halves from M: instreth %lu hpmcounter3h %lu cycleh %lu\n",
           CSRR_I(CSR_INSTRETH), CSRR_I(CSR_HPMCOUNTERH + 3), CSRR_I(CSR_CYCLEH));
    /* Writing the high half alone keeps the low half. */
    CSRW_I(CSR_MINSTRETH, 0x12345678ul);
    printf("minstreth written: minstreth %lx minstret %lu\n", CSRR_I(CSR_MINSTRETH), CSRR_I(CSR_MINSTRET));
    mhpmevent_write(3, 0);
}
#endif

int main(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    pmp_open_all();
    hpm_implemented(3, 18); /* 19..31: pmu_spec (QEMU differs from the spec there) */
    masks();
    write_semantics();
    user_access();
    overflow_bits();
#if __riscv_xlen == 32
    halves();
#endif
    printf("pmu_access done\n");
    return 0;
}
