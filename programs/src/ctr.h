/* Control Transfer Records (Smctr/Ssctr v1.0, specs/ctr-v1.0/body.adoc) for the ctr_* programs:
 * CSR numbers, mctrctl fields, the recording regions of ctr_regions.S and an entry printer.
 * Entries are printed as source, target, TYPE and V (ctrdata.CC/CCV and ctrtarget.MISP are
 * masked: QEMU models neither), addresses relative to ctr_text (the start of ctr_regions.S),
 * "0" for zero, raw hex elsewhere. */
#ifndef CTR_H
#define CTR_H
#include "pmu.h"

#define CSR_SCTRCTL    0x14e
#define CSR_SCTRSTATUS 0x14f
#define CSR_SCTRDEPTH  0x15f
#define CSR_VSCTRCTL   0x24e
#define CSR_MCTRCTL    0x34e
#define CSR_SISELECT   0x150
#define CSR_SIREG      0x151
#define CSR_SIREG2     0x152
#define CSR_SIREG3     0x153
#define CSR_SIREG4     0x155
#define CSR_SIREG5     0x156
#define CSR_SIREG6     0x157
#define CSR_MSTATEEN0  0x30c
#define CSR_MSTATEEN0H 0x31c
#define CSR_MEDELEG    0x302

/* mctrctl ("Machine Control Transfer Records Control Register") */
#define CTL_U (1ul << 0)
#define CTL_S (1ul << 1)
#define CTL_M (1ul << 2)
#define CTL_RASEMU (1ul << 7)
#define CTL_STE (1ul << 8)
#define CTL_MTE (1ul << 9)
#define CTL_BPFRZ (1ul << 11)
#define CTL_LCOFIFRZ (1ul << 12)
#if __riscv_xlen == 64
/* "Transfer Type Filtering": the filter bit of TYPE t is bit 32 + t (EXCINH 33 .. DIRLJMPINH
 * 47; NTBREN, bit 36, enables). RV32 cannot reach bits 63:32 (note in "CSR Listing"). */
#define CTL_FILTER(t) (1ul << (32 + (t)))
#define CTL_NTBREN CTL_FILTER(4)
#else
#define CTL_NTBREN 0ul
#endif

#define FROZEN (1ul << 31)
#define SCTRCLR() __asm__ volatile(".word 0x10400073" ::: "memory") /* "Supervisor CTR Clear" */

/* mstateen0 (RV32: mstateen0h) bits: CTR 54, CSRIND 60 (Smstateen, Smcsrind). */
#if __riscv_xlen == 64
#define STATEEN_CTR (1ul << 54)
#define STATEEN_CSRIND (1ul << 60)
#define CSR_STATEEN_HI CSR_MSTATEEN0
#else
#define STATEEN_CTR (1ul << 22)
#define STATEEN_CSRIND (1ul << 28)
#define CSR_STATEEN_HI CSR_MSTATEEN0H
#endif

extern char ctr_text[], ctr_text_end[];

/* Recording regions (ctr_regions.S): each writes mctrctl = ctl as its first instruction,
 * runs its transfers and writes mctrctl = 0 before it returns. mtvec must be ctr_mhandler
 * (M-mode regions) or ctr_mleave (ctr_enter). */
void r_calls(unsigned long ctl);
void r_jumps(unsigned long ctl);
void r_branches(unsigned long ctl);
void r_traps(unsigned long ctl);
void r_mix(unsigned long ctl);
void r_loop(unsigned long ctl, unsigned long n);
void r_ras(unsigned long ctl);
void r_ebreak(unsigned long ctl);
void r_lcofi(unsigned long ctl);
extern char ctr_mhandler[], ctr_mleave[], ctr_shandler[];
/* Set mctrctl = ctl as the last instruction before an mret into fn in mode (0 U, 1 S); fn
 * ends by trapping to M, where ctr_mleave (mtvec) writes mctrctl = 0 as its first instruction
 * and returns from ctr_enter. */
void ctr_enter(unsigned long ctl, void (*fn)(void), unsigned long mode);
void u_body(void), u_ecall(void), s_body(void), s_ecall(void), s_sret_u(void), u_msi(void),
    s_lcofi(void), s_lcofi_poll(void);

static inline void ctr_pr_addr(unsigned long a) {
    if (a == 0)
        printf(" 0");
    else if (a >= (unsigned long)ctr_text && a < (unsigned long)ctr_text_end)
        printf(" R+%lx", a - (unsigned long)ctr_text);
    else
        printf(" %lx", a);
}

struct ctr_entry { unsigned long src, dst, data; };

static inline struct ctr_entry ctr_entry(int i) {
    struct ctr_entry e;
    CSRW_I(CSR_SISELECT, 0x200 + i);
    e.src = CSRR_I(CSR_SIREG);
    e.dst = CSRR_I(CSR_SIREG2);
    e.data = CSRR_I(CSR_SIREG3);
    return e;
}

/* WRPTR, FROZEN and logical entries 0..n-1: "V TYPE source -> target" (TYPE = ctrdata & 0xf). */
static __attribute__((unused)) void ctr_dump(const char *what, int n) {
    unsigned long st = CSRR_I(CSR_SCTRSTATUS);
    printf("%s: wrptr %lu%s\n", what, st & 0xff, st & FROZEN ? " frozen" : "");
    for (int i = 0; i < n; i++) {
        struct ctr_entry e = ctr_entry(i);
        printf("  %d: V%lu t%lu", i, e.src & 1, e.data & 0xf);
        ctr_pr_addr(e.src & ~1ul);
        printf(" ->");
        ctr_pr_addr(e.dst & ~1ul);
        printf("\n");
    }
}

/* The TYPEs of the valid entries, oldest first, on one line (at most n entries). */
static __attribute__((unused)) void ctr_types(const char *what, int n) {
    unsigned long st = CSRR_I(CSR_SCTRSTATUS);
    int valid = 0;
    while (valid < n && (ctr_entry(valid).src & 1))
        valid++;
    printf("%s: wrptr %lu%s, types", what, st & 0xff, st & FROZEN ? " frozen" : "");
    for (int i = valid - 1; i >= 0; i--)
        printf(" %lu", ctr_entry(i).data & 0xf);
    printf("\n");
}

/* Empty buffer, WRPTR 0, not frozen, depth code d. */
static inline void ctr_reset(unsigned long d) {
    CSRW_I(CSR_MCTRCTL, 0);
    CSRW_I(CSR_SCTRDEPTH, d);
    CSRW_I(CSR_SCTRSTATUS, 0);
    SCTRCLR();
}

#endif
