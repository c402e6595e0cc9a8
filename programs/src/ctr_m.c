/* Control Transfer Records (Smctr v1.0) in M-mode: every transfer type recorded by the regions
 * of ctr_regions.S (calls and returns, compressed forms, x5 links, co-routine swaps, jumps with
 * and without linkage, taken and not-taken branches with NTBREN, exceptions, an interrupt,
 * trap returns), each transfer-type filter bit, the depth (16..256, reserved codes), WRPTR
 * wrap-around, entries at or beyond the depth, SCTRCLR, entry writes through sireg*, RASEMU,
 * and freezes on a breakpoint (BPFRZ) and on a Sscofpmf counter overflow interrupt
 * (LCOFIFRZ). The entries are printed (ctr.h), not checked here: the expected output comes
 * from QEMU 10, with the lines where QEMU differs from the spec corrected (programs/README.md,
 * "QEMU and CTR"). */
#include "ctr.h"

#define MIE_MSIE (1ul << IRQ_MSI)

/* 1. sctrdepth: every code 0..7 written, read back. */
static void depth_codes(void) {
    printf("sctrdepth written 0..7 reads");
    for (unsigned long d = 0; d < 8; d++) {
        CSRW_I(CSR_SCTRDEPTH, d);
        printf(" %lu", CSRR_I(CSR_SCTRDEPTH));
    }
    printf("\n");
}

/* 2. Each depth: depth + 2 taken branches from WRPTR 0 wrap to WRPTR 2; entry depth-1 is the
 * oldest kept; entry depth (< 256) reads 0 and ignores a write. */
static void depths(void) {
    for (unsigned long d = 0; d <= 4; d++) {
        int n = 16 << d;
        ctr_reset(d);
        r_loop(CTL_M, n + 3);
        int valid = 0;
        for (int i = 0; i < 256; i++)
            valid += ctr_entry(i).src & 1;
        struct ctr_entry e0 = ctr_entry(0), last = ctr_entry(n - 1);
        printf("depth %d: wrptr %lu, %d valid, entry 0 t%lu", n, CSRR_I(CSR_SCTRSTATUS) & 0xff, valid,
               e0.data & 0xf);
        ctr_pr_addr(e0.src & ~1ul);
        printf(" ->");
        ctr_pr_addr(e0.dst & ~1ul);
        printf(", entry %d V%lu", n - 1, last.src & 1);
        if (n < 256) {
            CSRW_I(CSR_SISELECT, 0x200 + n);
            CSRW_I(CSR_SIREG, 0x80000001ul);
            CSRW_I(CSR_SIREG3, 9);
            struct ctr_entry b = ctr_entry(n);
            printf(", entry %d after a write %lx %lx %lx", n, b.src, b.dst, b.data);
        }
        printf("\n");
    }
}

/* 3. The regions, depth 16 (r_mix: 64). */
static void regions(void) {
    ctr_reset(0);
    r_calls(CTL_M);
    ctr_dump("calls", 16);
    ctr_reset(0);
    r_jumps(CTL_M);
    ctr_dump("jumps", 12);
    ctr_reset(0);
    r_branches(CTL_M);
    ctr_dump("branches", 5);
#if __riscv_xlen == 64
    ctr_reset(0);
    r_branches(CTL_M | CTL_NTBREN);
    ctr_dump("branches with NTBREN", 10);
#endif
    ctr_reset(0);
    r_traps(CTL_M);
    ctr_dump("traps", 8);
    CSR_SET(mie, MIE_MSIE);
    ctr_reset(2);
    r_mix(CTL_M | CTL_NTBREN);
    ctr_dump("mix", 22);
#if __riscv_xlen == 64
    static const unsigned long types[] = { 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15 };
    for (unsigned i = 0; i < sizeof types / sizeof types[0]; i++) {
        char what[40];
        unsigned long t = types[i];
        /* NTBREN enables type 4; the other bits inhibit their type. */
        unsigned long ctl = CTL_M | (t == 4 ? 0 : CTL_NTBREN | CTL_FILTER(t));
        snprintf(what, sizeof what, "mix, filter bit %lu", 32 + t);
        ctr_reset(2);
        r_mix(ctl);
        ctr_types(what, 64);
    }
#endif
    CSR_CLEAR(mie, MIE_MSIE);
}

/* 4. SCTRCLR zeroes every entry (WRPTR is not an entry register); the next record goes to
 * WRPTR. */
static void clear(void) {
    ctr_reset(0);
    r_calls(CTL_M);
    SCTRCLR();
    int nonzero = 0;
    for (int i = 0; i < 256; i++) {
        struct ctr_entry e = ctr_entry(i);
        nonzero += (e.src | e.dst | e.data) != 0;
    }
    printf("sctrclr: wrptr %lu, %d entries not zero\n", CSRR_I(CSR_SCTRSTATUS) & 0xff, nonzero);
    r_loop(CTL_M, 2);
    ctr_dump("one record after sctrclr", 2);
}

/* 5. Entries written through sireg*, read back; sireg4..6 read 0; logical entry X is physical
 * (WRPTR - X - 1) % depth. */
static void entry_writes(void) {
    ctr_reset(0);
    for (int i = 0; i < 3; i++) {
        CSRW_I(CSR_SISELECT, 0x200 + i);
        CSRW_I(CSR_SIREG, 0x80001001ul + 0x100 * i);
        CSRW_I(CSR_SIREG2, 0x80002000ul + 0x100 * i);
        CSRW_I(CSR_SIREG3, 9 + i);
    }
    CSRW_I(CSR_SISELECT, 0x200);
    CSRW_I(CSR_SIREG4, 1);
    printf("siselect 0x200: sireg4 %lx sireg5 %lx sireg6 %lx\n", CSRR_I(CSR_SIREG4), CSRR_I(CSR_SIREG5),
           CSRR_I(CSR_SIREG6));
    CSRW_I(CSR_SISELECT, 0x2ff);
    printf("siselect 0x2ff reads %lx\n", CSRR_I(CSR_SISELECT));
    ctr_dump("written entries 0..2", 4);
    CSRW_I(CSR_SCTRSTATUS, 1);
    ctr_dump("wrptr set to 1", 4);
    CSRW_I(CSR_SCTRSTATUS, FROZEN | 3);
    printf("sctrstatus written FROZEN|3 reads %lx\n", CSRR_I(CSR_SCTRSTATUS));
    r_loop(CTL_M, 3);
    ctr_dump("frozen by software, 2 taken branches", 4);
    CSRW_I(CSR_SCTRSTATUS, 0);
}

/* 6. RAS emulation: filter bits (DIRCALLINH) and MTE ignored. */
static void ras(void) {
    ctr_reset(0);
#if __riscv_xlen == 64
    r_ras(CTL_M | CTL_RASEMU | CTL_MTE | CTL_FILTER(9));
#else
    r_ras(CTL_M | CTL_RASEMU | CTL_MTE);
#endif
    ctr_dump("rasemu", 5);
}

/* 7. Freeze: an ebreak with BPFRZ, a Sscofpmf counter overflow interrupt with LCOFIFRZ; and
 * both without the freeze bits. */
static void freeze(void) {
    ctr_reset(0);
    r_ebreak(CTL_M | CTL_BPFRZ);
    ctr_dump("ebreak, BPFRZ", 5);
    ctr_reset(0);
    r_ebreak(CTL_M);
    ctr_dump("ebreak", 7);
    CSR_SET(mie, MIP_LCOFIP);
    for (int frz = 1; frz >= 0; frz--) {
        STOP_ALL();
        evt_set(3, EV_INSTRUCTIONS, 0); /* clears OF */
        ctr_write(3, -10ull);
        ctr_reset(0);
        r_lcofi(CTL_M | (frz ? CTL_LCOFIFRZ : 0));
        ctr_dump(frz ? "counter overflow, LCOFIFRZ" : "counter overflow", 8);
    }
    evt_set(3, 0, 0);
    CSR_CLEAR(mie, MIP_LCOFIP);
}

int main(void) {
    CSR_CLEAR(mstatus, MSTATUS_MIE);
    CSR_WRITE(mtvec, ctr_mhandler);
    CSRW_I(CSR_MCOUNTEREN, ~0ul);
    depth_codes();
    depths();
    regions();
    clear();
    entry_writes();
    ras();
    freeze();
    ctr_reset(0);
    printf("ctr_m done\n");
    return 0;
}
