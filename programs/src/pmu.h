/* Counter CSRs (privileged spec: Zicntr/Zihpm, Sscofpmf, Smcntrpmf) for the pmu_* programs.
 * CSRs are named by number (the assembler of binutils 2.40 knows neither mcyclecfg nor the RV32
 * *h event CSRs): csrr/csrw with an "i" operand, so any constant expression works. */
#ifndef PMU_H
#define PMU_H
#include <stdio.h>
#include <string.h>
#include "rvtest.h"

#define CSRR_I(num) ({ unsigned long v_ = 0; __asm__ volatile("csrr %0, %1" : "+r"(v_) : "i"(num)); v_; })
#define CSRW_I(num, v) __asm__ volatile("csrw %1, %0" :: "r"((unsigned long)(v)), "i"(num) : "memory")

#define CSR_CYCLE        0xC00
#define CSR_TIME         0xC01
#define CSR_INSTRET      0xC02
#define CSR_HPMCOUNTER   0xC00 /* + n */
#define CSR_CYCLEH       0xC80
#define CSR_TIMEH        0xC81
#define CSR_INSTRETH     0xC82
#define CSR_HPMCOUNTERH  0xC80 /* + n */
#define CSR_MCYCLE       0xB00
#define CSR_MINSTRET     0xB02
#define CSR_MHPMCOUNTER  0xB00 /* + n */
#define CSR_MCYCLEH      0xB80
#define CSR_MINSTRETH    0xB82
#define CSR_MHPMCOUNTERH 0xB80 /* + n */
#define CSR_MHPMEVENT    0x320 /* + n, n >= 3 */
#define CSR_MHPMEVENTH   0x720 /* + n, RV32 Sscofpmf */
#define CSR_MCOUNTINHIBIT 0x320
#define CSR_MCOUNTEREN   0x306
#define CSR_SCOUNTEREN   0x106
#define CSR_SCOUNTOVF    0xDA0
#define CSR_MCYCLECFG    0x321 /* Smcntrpmf */
#define CSR_MINSTRETCFG  0x322
#define CSR_MCYCLECFGH   0x721
#define CSR_MINSTRETCFGH 0x722

/* mcountinhibit / mcounteren bits */
#define CNT_CY (1ul << 0)
#define CNT_TM (1ul << 1)
#define CNT_IR (1ul << 2)
#define CNT_HPM(n) (1ul << (n))

/* SBI PMU event_idx values (SBI spec, PMU extension): type << 16 | code */
#define EV_CPU_CYCLES 0x1
#define EV_INSTRUCTIONS 0x2
#define EV_BRANCH_INSTRUCTIONS 0x5
#define EV_BRANCH_MISSES 0x6
#define EV_CACHE(id, op, res) (0x10000 | (id) << 3 | (op) << 1 | (res))
#define EV_L1D_READ_ACCESS EV_CACHE(0, 0, 0)
#define EV_L1D_READ_MISS EV_CACHE(0, 0, 1)
#define EV_L1D_WRITE_ACCESS EV_CACHE(0, 1, 0)
#define EV_L1I_READ_ACCESS EV_CACHE(1, 0, 0)

/* Sscofpmf bits of mhpmevent (RV64), and of mhpmeventh / mcyclecfgh / minstretcfgh (RV32):
 * OF 63, MINH 62, SINH 61, UINH 60, VSINH 59, VUINH 58 (Smcntrpmf: the same bits but OF). */
#if __riscv_xlen == 64
#define EVT_HI(bit) (1ul << (bit))
#else
#define EVT_HI(bit) (1ul << ((bit) - 32))
#endif
#define EVT_OF EVT_HI(63)
#define EVT_MINH EVT_HI(62)
#define EVT_SINH EVT_HI(61)
#define EVT_UINH EVT_HI(60)
#define EVT_VSINH EVT_HI(59)
#define EVT_VUINH EVT_HI(58)

#define IRQ_LCOFI 13
#define MIP_LCOFIP (1ul << IRQ_LCOFI)

/* Per-index accessors for the counters 3..31 (a switch over constant CSR numbers). */
#define HPM_INDICES X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) \
    X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)

#define HPM_ACCESSORS(name, base)                                                              \
    static inline unsigned long name##_read(int n) {                                           \
        switch (n) {                                                                           \
        HPM_INDICES                                                                            \
        }                                                                                      \
        return 0;                                                                              \
    }
#define X(k) case k: return CSRR_I(CSR_MHPMCOUNTER + k);
HPM_ACCESSORS(mhpmcounter, CSR_MHPMCOUNTER)
#undef X
#define X(k) case k: return CSRR_I(CSR_MHPMEVENT + k);
HPM_ACCESSORS(mhpmevent, CSR_MHPMEVENT)
#undef X
#define X(k) case k: return CSRR_I(CSR_HPMCOUNTER + k);
HPM_ACCESSORS(hpmcounter, CSR_HPMCOUNTER)
#undef X

#define HPM_WRITER(name, base)                                                                 \
    static inline void name##_write(int n, unsigned long v) {                                  \
        switch (n) {                                                                           \
        HPM_INDICES                                                                            \
        }                                                                                      \
    }
#define X(k) case k: CSRW_I(CSR_MHPMCOUNTER + k, v); break;
HPM_WRITER(mhpmcounter, CSR_MHPMCOUNTER)
#undef X
#define X(k) case k: CSRW_I(CSR_MHPMEVENT + k, v); break;
HPM_WRITER(mhpmevent, CSR_MHPMEVENT)
#undef X

#if __riscv_xlen == 32
#define X(k) case k: return CSRR_I(CSR_MHPMCOUNTERH + k);
HPM_ACCESSORS(mhpmcounterh, CSR_MHPMCOUNTERH)
#undef X
#define X(k) case k: return CSRR_I(CSR_MHPMEVENTH + k);
HPM_ACCESSORS(mhpmeventh, CSR_MHPMEVENTH)
#undef X
#define X(k) case k: CSRW_I(CSR_MHPMCOUNTERH + k, v); break;
HPM_WRITER(mhpmcounterh, CSR_MHPMCOUNTERH)
#undef X
#define X(k) case k: CSRW_I(CSR_MHPMEVENTH + k, v); break;
HPM_WRITER(mhpmeventh, CSR_MHPMEVENTH)
#undef X
#endif

/* The Sscofpmf/filter bits of counter n's event: mhpmevent (RV64) or mhpmeventh (RV32). */
static inline unsigned long evt_hi_read(int n) {
#if __riscv_xlen == 64
    return mhpmevent_read(n);
#else
    return mhpmeventh_read(n);
#endif
}

/* Program counter n: event (low bits) and Sscofpmf bits (EVT_*, OF normally clear). */
static inline void evt_set(int n, unsigned long event, unsigned long hi) {
#if __riscv_xlen == 64
    mhpmevent_write(n, event | hi);
#else
    mhpmevent_write(n, event);
    mhpmeventh_write(n, hi);
#endif
}

/* 64-bit counter n (the halves read while counting is inhibited). */
static inline uint64_t ctr_read(int n) {
#if __riscv_xlen == 64
    return mhpmcounter_read(n);
#else
    return (uint64_t)mhpmcounterh_read(n) << 32 | mhpmcounter_read(n);
#endif
}

static inline void ctr_write(int n, uint64_t v) {
#if __riscv_xlen == 64
    mhpmcounter_write(n, v);
#else
    mhpmcounter_write(n, (uint32_t)v);
    mhpmcounterh_write(n, (uint32_t)(v >> 32));
#endif
}

static inline uint64_t minstret64(void) {
#if __riscv_xlen == 64
    return CSRR_I(CSR_MINSTRET);
#else
    return (uint64_t)CSRR_I(CSR_MINSTRETH) << 32 | CSRR_I(CSR_MINSTRET);
#endif
}

static inline uint64_t mcycle64(void) {
#if __riscv_xlen == 64
    return CSRR_I(CSR_MCYCLE);
#else
    return (uint64_t)CSRR_I(CSR_MCYCLEH) << 32 | CSRR_I(CSR_MCYCLE);
#endif
}

#define STOP_ALL() CSRW_I(CSR_MCOUNTINHIBIT, -1l)
#define RUN_ALL() CSRW_I(CSR_MCOUNTINHIBIT, 0)

#define W (int)(2 * sizeof(long))

/* u_leave(result): the end of a U/S-mode function run by m_enter, without an ecall (QEMU counts
 * ecall as retired, the spec does not: README). Its first instruction reads an M-mode CSR,
 * which is illegal in U and S; the M handler recognises the PC (PMU_LEAVE) and leaves m_enter
 * with a0. An illegal instruction retires neither in QEMU nor in the spec. */
__asm__(".text\n"
        ".globl u_leave\n"
        "u_leave:\n\t"
        "csrr zero, mscratch\n\t"
        "j u_leave\n");
extern void u_leave(long result) __attribute__((noreturn));
#define PMU_LEAVE(cause, epc) ((cause) == CAUSE_ILLEGAL && (epc) == (unsigned long)u_leave)

/* The program counts illegal-instruction traps here (its M handler skips them). */
static volatile int illegal;

/* Read, write ~0, read, write 0, read, restore; "illegal" if the first read traps. */
#define PROBE(name, num) PROBE_MASKED(name, num, ~0ul)

/* PROBE printing only the bits of `shown` (for fields where QEMU and the spec differ). */
#define PROBE_MASKED(name, num, shown)                                                        \
    do {                                                                                      \
        illegal = 0;                                                                          \
        unsigned long o = CSRR_I(num);                                                        \
        if (illegal) {                                                                        \
            printf("%-13s illegal\n", name);                                                  \
            break;                                                                            \
        }                                                                                     \
        CSRW_I(num, ~0ul);                                                                    \
        unsigned long a = CSRR_I(num);                                                        \
        CSRW_I(num, 0);                                                                       \
        unsigned long b = CSRR_I(num);                                                        \
        CSRW_I(num, o);                                                                       \
        printf("%-13s %0*lx ones %0*lx zero %0*lx%s\n", name, W, o & (shown), W, a & (shown),  \
               W, b & (shown), illegal ? " (write illegal)" : "");                            \
    } while (0)

/* Which programmable counters exist: write a pattern to mhpmcounterN and an event to
 * mhpmeventN (counting inhibited), read both back, for N = lo..hi. Consecutive N with the same
 * result share a line. */
static __attribute__((unused)) void hpm_implemented(int lo, int hi) {
    char prev[96] = "", cur[96];
    int first = lo;
    STOP_ALL();
    for (int n = lo; n <= hi + 1; n++) {
        if (n <= hi) {
            illegal = 0;
            unsigned long pat = 0x5a5a0000ul | (unsigned long)n;
            mhpmcounter_write(n, pat);
            int wc = illegal;
            unsigned long c = mhpmcounter_read(n);
            int rc = illegal - wc;
            illegal = 0;
            mhpmevent_write(n, EV_INSTRUCTIONS);
            int we = illegal;
            unsigned long e = mhpmevent_read(n);
            int re = illegal - we;
            illegal = 0;
            unsigned long u = hpmcounter_read(n); /* the user CSR, from M */
            int ru = illegal;
            snprintf(cur, sizeof cur, "counter %s%s event %s%s hpmcounter %s",
                     rc ? "illegal" : c == pat ? "rw" : c == 0 ? "zero" : "other",
                     wc ? " (write illegal)" : "",
                     re ? "illegal" : e == EV_INSTRUCTIONS ? "rw" : e == 0 ? "zero" : "other",
                     we ? " (write illegal)" : "",
                     ru ? "illegal" : u == c ? "= counter" : "differs");
            mhpmevent_write(n, 0);
            mhpmcounter_write(n, 0);
        }
        if (n == hi + 1 || (n > lo && strcmp(cur, prev) != 0)) {
            if (first == n - 1)
                printf("hpm %d: %s\n", first, prev);
            else
                printf("hpm %d-%d: %s\n", first, n - 1, prev);
            first = n;
        }
        strcpy(prev, cur);
    }
}

/* Work for U/S mode: a loop of n iterations (5 instructions each). */
static __attribute__((noinline, unused)) long u_work(long n) {
    volatile long s = 0;
    for (long i = 0; i < n; i++)
        s += i;
    return s;
}

/* u_work, then back to M through u_leave (no ecall in the counted region). */
static __attribute__((noinline, unused)) long work_leave(long n) {
    u_leave(u_work(n));
}

#endif
