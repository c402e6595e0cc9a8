/* Physical Memory Protection (privileged ISA, "Physical Memory Protection") as QEMU 7.2's virt
 * hart enforces it: the registers' reset and WARL behaviour (granularity, kept bits), no entry
 * (S/U denied, M allowed), NAPOT of several sizes, NA4, TOR (entry 0 from address 0), priority
 * of overlapping entries, partial matches, R/W/X denied from S and from U for loads, stores,
 * AMOs, LR and fetches (cause and tval), a fetch whose second parcel crosses into a page
 * without X, device registers, M-mode unaffected by unlocked entries, MPRV with MPP = U/S/M,
 * and last (a lock holds until reset) locked entries: M denied, writes ignored, the TOR
 * neighbour's pmpaddr frozen. Self-checking; every check prints. Traps are recorded by the
 * M-mode handler and printed from M.
 *
 * Left out on purpose: a 4-byte instruction whose second parcel is in the same page but in a
 * region without X. QEMU 7.2 checks only the first parcel then (and, without -singlestep,
 * only the first instruction of a translation block); the model checks both parcels as the
 * spec asks (crates/sim/README.md, "PMP"). */
#include <stdio.h>
#include "rvtest.h"

#define XLEN __riscv_xlen
#define MSTATUS_MPRV (1ul << 17)
#define CAUSE_FETCH 1
#define CAUSE_LOAD 5
#define CAUSE_STORE 7
#define NO_TRAP (-1l)

#define A_OFF 0x00
#define A_TOR 0x08
#define A_NA4 0x10
#define A_NAPOT 0x18
#define P_R 0x01
#define P_W 0x02
#define P_X 0x04
#define P_L 0x80

#define NAPOT(base, size) (((unsigned long)(base) >> 2) | (((unsigned long)(size) >> 3) - 1))

extern char pmp_code[], pmp_fn[], pmp_fn_locked[], pmp_fn_cross[];
static volatile uint32_t page[1024] __attribute__((aligned(4096)));
#define AT(off) ((unsigned long)page + (off))

static int fails;
static void check(const char *what, unsigned long got, unsigned long want) {
    printf("%-52s %lx%s\n", what, got, got == want ? "" : "  FAIL");
    if (got != want) {
        printf("  want %lx\n", want);
        fails++;
    }
}

/* The last trap the M handler saw (lower modes' SYS_LEAVE calls aside). */
static volatile unsigned long traps, t_cause, t_tval, t_epc;

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)vec;
    unsigned long from = (CSR_READ(mstatus) & MSTATUS_MPP) >> 11;
    if ((cause == CAUSE_ECALL_U || cause == CAUSE_ECALL_S) && f->a7 == SYS_LEAVE) return 0;
    traps++;
    t_cause = cause;
    t_tval = CSR_READ(mtval);
    t_epc = epc;
    if (cause == CAUSE_FETCH) {
        /* A function that cannot be fetched "returns" -1: to its caller in M, and out of
         * m_enter from below (the lower mode may not be able to fetch anything). */
        f->a0 = -1;
        return from == 3 ? f->ra : 0;
    }
    return epc + insn_len(epc);
}

unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)cause; (void)f; (void)vec;
    return epc + insn_len(epc); /* nothing is delegated */
}

/* Print the trap an access took (or none) against the wanted one; tval as an offset from
 * `base`. */
static void outcome(const char *what, long want_cause, unsigned long base, unsigned long want_off) {
    long cause = traps ? (long)t_cause : NO_TRAP;
    unsigned long off = traps ? t_tval - base : 0;
    int ok = traps <= 1 && cause == want_cause && (cause == NO_TRAP || off == want_off);
    if (cause == NO_TRAP)
        printf("%-52s no trap%s\n", what, ok ? "" : "  FAIL");
    else
        printf("%-52s cause %ld tval +%lx%s\n", what, cause, off, ok ? "" : "  FAIL");
    if (!ok) {
        if (want_cause == NO_TRAP) printf("  want no trap\n");
        else printf("  want cause %ld tval +%lx\n", want_cause, want_off);
        fails++;
    }
}

/* Accesses, run in S or U through m_enter (or called in M). */
static long lo_lw(long a) { return *(volatile uint32_t *)a; }
static long lo_lb(long a) { return *(volatile uint8_t *)a; }
static long lo_sw(long a) { *(volatile uint32_t *)a = 0x11; return 0; }
static long lo_amo(long a) {
    long r = 1;
    __asm__ volatile("amoadd.w %0, %0, (%1)" : "+r"(r) : "r"(a) : "memory");
    return r;
}
static long lo_lr(long a) {
    long r;
    __asm__ volatile("lr.w %0, (%1)" : "=r"(r) : "r"(a) : "memory");
    return r;
}
#if XLEN == 64
static long lo_ld(long a) { return *(volatile uint64_t *)a; }
#endif
static long lo_call(long a) { return ((long (*)(void))a)(); }

/* Run `fn(arg)` at `mode` (0 U, 1 S, 3 M) with the trap record cleared. */
static long run(lower_fn fn, long arg, int mode) {
    traps = 0;
    return mode == 3 ? fn(arg) : m_enter(arg, fn, (unsigned long)mode);
}

static const char *mode_name(int mode) { return mode == 0 ? "U" : mode == 1 ? "S" : "M"; }

/* pmpcfg byte of entry i (through pmpcfg0/2 on RV64, pmpcfg0..3 on RV32). */
static unsigned long cfg_reg(int r) {
    switch (r) {
    case 0: return CSR_READ(pmpcfg0);
#if XLEN == 32
    case 1: return CSR_READ(pmpcfg1);
    case 3: return CSR_READ(pmpcfg3);
#endif
    default: return CSR_READ(pmpcfg2);
    }
}
static void cfg_reg_write(int r, unsigned long v) {
    switch (r) {
    case 0: CSR_WRITE(pmpcfg0, v); break;
#if XLEN == 32
    case 1: CSR_WRITE(pmpcfg1, v); break;
    case 3: CSR_WRITE(pmpcfg3, v); break;
#endif
    default: CSR_WRITE(pmpcfg2, v); break;
    }
}
#define PER_REG (XLEN / 8)
static int reg_of(int i) { return XLEN == 64 ? (i / 8) * 2 : i / 4; }
static unsigned cfg_get(int i) { return (cfg_reg(reg_of(i)) >> (8 * (i % PER_REG))) & 0xff; }
static void cfg_set(int i, unsigned v) {
    unsigned long r = cfg_reg(reg_of(i));
    int sh = 8 * (i % PER_REG);
    r = (r & ~(0xfful << sh)) | ((unsigned long)v << sh);
    cfg_reg_write(reg_of(i), r);
}

static void addr_set(int i, unsigned long v) {
    switch (i) {
    case 0: CSR_WRITE(pmpaddr0, v); break;
    case 1: CSR_WRITE(pmpaddr1, v); break;
    case 2: CSR_WRITE(pmpaddr2, v); break;
    case 11: CSR_WRITE(pmpaddr11, v); break;
    case 12: CSR_WRITE(pmpaddr12, v); break;
    case 13: CSR_WRITE(pmpaddr13, v); break;
    case 14: CSR_WRITE(pmpaddr14, v); break;
    default: CSR_WRITE(pmpaddr15, v); break;
    }
}
static unsigned long addr_get(int i) {
    switch (i) {
    case 0: return CSR_READ(pmpaddr0);
    case 11: return CSR_READ(pmpaddr11);
    case 12: return CSR_READ(pmpaddr12);
    default: return CSR_READ(pmpaddr14);
    }
}

/* Test entries 0..2 off; entry 15 lets everything through below them. */
static void reset_tests(void) {
    for (int i = 0; i < 3; i++) cfg_set(i, 0);
    addr_set(15, -1l);
    cfg_set(15, A_NAPOT | P_R | P_W | P_X);
}

static void registers(void) {
    check("reset pmpcfg0", CSR_READ(pmpcfg0), 0);
    check("reset pmpaddr0", CSR_READ(pmpaddr0), 0);
    /* Granularity: with G = 0 all ones reads back whatever A is (QEMU 7.2 keeps every bit,
     * on RV64 also 63:54). */
    CSR_WRITE(pmpaddr0, -1l);
    check("pmpaddr0 all ones, A=OFF", CSR_READ(pmpaddr0), -1ul);
    CSR_WRITE(pmpcfg0, A_NAPOT);
    CSR_WRITE(pmpaddr0, -1l);
    check("pmpaddr0 all ones, A=NAPOT", CSR_READ(pmpaddr0), -1ul);
    /* QEMU 7.2 keeps pmpcfg's reserved bits 6:5 and the reserved R=0 W=1. */
    CSR_WRITE(pmpcfg0, 0x7f);
    check("pmpcfg0 = 0x7f (bits 6:5 kept)", CSR_READ(pmpcfg0), 0x7f);
    CSR_WRITE(pmpcfg0, A_NAPOT | P_W);
    check("pmpcfg0 = NAPOT|W (R=0 W=1 kept)", CSR_READ(pmpcfg0), A_NAPOT | P_W);
    CSR_WRITE(pmpcfg0, 0);
    CSR_WRITE(pmpaddr0, 0);
}

static void no_entry(void) {
    /* No entry matches (entry 0 is NA4 at address 0, no permission; the others are OFF): S
     * and U cannot even fetch their first instruction; M can do all. (With every entry OFF,
     * QEMU 7.2's mret to S or U raises an illegal-instruction exception instead: not the
     * spec, so not tested.) */
    addr_set(0, 0);
    cfg_set(0, A_NA4);
    for (int mode = 1; mode >= 0; mode--) {
        char what[64];
        long r = run(lo_lw, AT(0), mode);
        snprintf(what, sizeof what, "no entry: %s runs a function", mode_name(mode));
        outcome(what, CAUSE_FETCH, (unsigned long)lo_lw, 0);
        check("  it returned", (unsigned long)r, -1ul);
    }
    page[0] = 0x1234;
    run(lo_lw, AT(0), 3);
    outcome("no entry: M loads", NO_TRAP, 0, 0);
    run(lo_sw, AT(0), 3);
    outcome("no entry: M stores", NO_TRAP, 0, 0);
    check("  and reads back", page[0], 0x11);
    run(lo_call, (long)pmp_fn, 3);
    outcome("no entry: M fetches", NO_TRAP, 0, 0);
    /* Device registers are checked too: the UART's LSR from S with entry 15 over RAM only. */
    addr_set(15, NAPOT(0x80000000ul, 0x80000000ul));
    cfg_set(15, A_NAPOT | P_R | P_W | P_X);
    run(lo_lb, 0x10000005, 1);
    outcome("RAM only: S reads the UART's LSR", CAUSE_LOAD, 0x10000000, 5);
    run(lo_lw, 0x0200bff8, 1);
    outcome("RAM only: S reads CLINT mtime", CAUSE_LOAD, 0x02000000, 0xbff8);
    reset_tests();
    long lsr = run(lo_lb, 0x10000005, 1);
    outcome("all: S reads the UART's LSR", NO_TRAP, 0, 0);
    check("  LSR", (unsigned long)lsr, 0x60);
}

/* One region at `base` (size `size`, A given by `a`) with no permission ahead of the RW entry 1
 * over the whole page: S loads just inside and just outside each edge. */
static void region(const char *name, int a, unsigned long base, unsigned long size) {
    char what[80];
    addr_set(1, NAPOT(page, 4096));
    cfg_set(1, A_NAPOT | P_R | P_W);
    if (a == A_NA4) addr_set(0, base >> 2);
    else addr_set(0, NAPOT(base, size));
    cfg_set(0, (unsigned)a);
    unsigned long probes[4] = {base - 4, base, base + size - 4, base + size};
    long want[4] = {NO_TRAP, CAUSE_LOAD, CAUSE_LOAD, NO_TRAP};
    for (int k = 0; k < 4; k++) {
        run(lo_lw, (long)probes[k], 1);
        snprintf(what, sizeof what, "%s: S lw at +%lx", name, probes[k] - (unsigned long)page);
        outcome(what, want[k], (unsigned long)page, probes[k] - (unsigned long)page);
    }
    reset_tests();
}

static void tor(void) {
    /* Entry 0 TOR from address 0 to page+0x40, R and X (the code below the page runs),
     * entry 1 TOR page+0x40..page+0x80 with nothing. */
    addr_set(0, AT(0x40) >> 2);
    cfg_set(0, A_TOR | P_R | P_X);
    addr_set(1, AT(0x80) >> 2);
    cfg_set(1, A_TOR);
    run(lo_lw, AT(0x3c), 1);
    outcome("TOR 0..+40 RX: S lw at +3c", NO_TRAP, 0, 0);
    run(lo_sw, AT(0x3c), 1);
    outcome("TOR 0..+40 RX: S sw at +3c", CAUSE_STORE, AT(0), 0x3c);
    run(lo_sw, AT(0), 0);
    outcome("TOR 0..+40 RX: U sw at +0", CAUSE_STORE, AT(0), 0);
    run(lo_lw, AT(0x40), 1);
    outcome("TOR +40..+80: S lw at +40", CAUSE_LOAD, AT(0), 0x40);
    run(lo_lw, AT(0x7c), 1);
    outcome("TOR +40..+80: S lw at +7c", CAUSE_LOAD, AT(0), 0x7c);
    run(lo_sw, AT(0x80), 1);
    outcome("TOR +40..+80: S sw at +80 (entry 15)", NO_TRAP, 0, 0);
    /* Entry 1 TOR with pmpaddr0 >= pmpaddr1 matches nothing. */
    addr_set(1, AT(0x40) >> 2);
    run(lo_lw, AT(0x40), 1);
    outcome("TOR empty (top = bottom): S lw at +40", NO_TRAP, 0, 0);
    reset_tests();
}

static void priority(void) {
    /* Entry 0 (read-only, 256 bytes) wins over entry 1 (read-write, the page). */
    addr_set(0, NAPOT(page, 256));
    cfg_set(0, A_NAPOT | P_R);
    addr_set(1, NAPOT(page, 4096));
    cfg_set(1, A_NAPOT | P_R | P_W);
    run(lo_sw, AT(0x10), 1);
    outcome("entry 0 R over entry 1 RW: S sw at +10", CAUSE_STORE, AT(0), 0x10);
    run(lo_sw, AT(0x110), 1);
    outcome("entry 0 R over entry 1 RW: S sw at +110", NO_TRAP, 0, 0);
    /* The other way round: entry 0 RW over the page hides entry 1's none. */
    cfg_set(0, 0);
    addr_set(0, NAPOT(page, 4096));
    cfg_set(0, A_NAPOT | P_R | P_W);
    addr_set(1, NAPOT(page, 256));
    cfg_set(1, A_NAPOT);
    run(lo_sw, AT(0x10), 1);
    outcome("entry 0 RW over entry 1 none: S sw at +10", NO_TRAP, 0, 0);
    reset_tests();
}

static void partial(void) {
    /* Entry 0: NA4 at +24, read-only; entry 1: the page, read-write. */
    addr_set(0, AT(0x24) >> 2);
    cfg_set(0, A_NA4 | P_R);
    addr_set(1, NAPOT(page, 4096));
    cfg_set(1, A_NAPOT | P_R | P_W);
    run(lo_lw, AT(0x24), 1);
    outcome("NA4 +24 R: S lw at +24", NO_TRAP, 0, 0);
#if XLEN == 64
    /* An 8-byte load over +20..+27 matches entry 0 in part: it fails although both entries
     * allow reads, in M as well (the rule holds whatever L, R, W, X are). */
    run(lo_ld, AT(0x20), 1);
    outcome("NA4 +24 R: S ld at +20 (partly in entry 0)", CAUSE_LOAD, AT(0), 0x20);
    run(lo_ld, AT(0x20), 3);
    outcome("NA4 +24 R: M ld at +20 (partly in entry 0)", CAUSE_LOAD, AT(0), 0x20);
    run(lo_ld, AT(0x28), 1);
    outcome("NA4 +24 R: S ld at +28", NO_TRAP, 0, 0);
#endif
    reset_tests();
}

/* Loads, stores, AMOs, LR and fetches from S and U under one entry over the page (data) and
 * one over the code page, with the given permissions. */
static void perms(const char *name, unsigned p, long want_l, long want_s, long want_amo,
                  long want_x) {
    char what[80];
    addr_set(0, NAPOT(page, 4096));
    cfg_set(0, A_NAPOT | p);
    addr_set(1, NAPOT(pmp_code, 4096));
    cfg_set(1, A_NAPOT | p);
    for (int mode = 1; mode >= 0; mode--) {
        const char *m = mode_name(mode);
        run(lo_lw, AT(0x100), mode);
        snprintf(what, sizeof what, "%s: %s lw", name, m);
        outcome(what, want_l, AT(0), 0x100);
        run(lo_lr, AT(0x104), mode);
        snprintf(what, sizeof what, "%s: %s lr.w", name, m);
        outcome(what, want_l, AT(0), 0x104);
        run(lo_sw, AT(0x108), mode);
        snprintf(what, sizeof what, "%s: %s sw", name, m);
        outcome(what, want_s, AT(0), 0x108);
        run(lo_amo, AT(0x10c), mode);
        snprintf(what, sizeof what, "%s: %s amoadd.w", name, m);
        outcome(what, want_amo, AT(0), 0x10c);
        long r = run(lo_call, (long)pmp_fn, mode);
        snprintf(what, sizeof what, "%s: %s calls code", name, m);
        outcome(what, want_x, (unsigned long)pmp_code, 0);
        check("  it returned", (unsigned long)r, want_x == NO_TRAP ? 0x5a : -1ul);
    }
    reset_tests();
}

static void fetch_across_pages(void) {
    long r;
    addr_set(0, NAPOT(pmp_code, 4096));
    addr_set(1, NAPOT(pmp_code + 4096, 4096));
    cfg_set(0, A_NAPOT | P_X);
    cfg_set(1, A_NAPOT | P_R);
    r = run(lo_call, (long)pmp_fn_cross, 1);
    outcome("X page, then R page: S runs the 4-byte insn at +ffe", CAUSE_FETCH,
            (unsigned long)pmp_code, 0x1000);
    check("  epc", t_epc - (unsigned long)pmp_code, 0xffe);
    cfg_set(0, A_NAPOT | P_R);
    cfg_set(1, A_NAPOT | P_X);
    r = run(lo_call, (long)pmp_fn_cross, 0);
    outcome("R page, then X page: U runs the 4-byte insn at +ffe", CAUSE_FETCH,
            (unsigned long)pmp_code, 0xffe);
    cfg_set(0, A_NAPOT | P_X);
    r = run(lo_call, (long)pmp_fn_cross, 1);
    outcome("X pages: S runs the 4-byte insn at +ffe", NO_TRAP, 0, 0);
    check("  it returned", (unsigned long)r, 0x36);
    reset_tests();
}

static void m_mode(void) {
    /* Unlocked entries do not apply to M. */
    addr_set(0, NAPOT(page, 4096));
    cfg_set(0, A_NAPOT);
    addr_set(1, NAPOT(pmp_code, 4096));
    cfg_set(1, A_NAPOT);
    run(lo_sw, AT(0x200), 3);
    outcome("none, unlocked: M sw", NO_TRAP, 0, 0);
    run(lo_amo, AT(0x200), 3);
    outcome("none, unlocked: M amoadd.w", NO_TRAP, 0, 0);
    long r = run(lo_call, (long)pmp_fn, 3);
    outcome("none, unlocked: M calls code", NO_TRAP, 0, 0);
    check("  it returned", (unsigned long)r, 0x5a);
    reset_tests();
}

static void mprv(void) {
    /* The page read-only for S/U: M's loads and stores with MPRV = 1 are checked at MPP's
     * privilege; fetches are not (the code page has no X for S/U here). */
    addr_set(0, NAPOT(page, 4096));
    cfg_set(0, A_NAPOT | P_R);
    addr_set(1, NAPOT(pmp_code, 4096));
    cfg_set(1, A_NAPOT | P_R);
    static const unsigned long mpp[3] = {0, 1, 3};
    static const char *names[3] = {"MPRV, MPP=U: M sw", "MPRV, MPP=S: M sw", "MPRV, MPP=M: M sw"};
    for (int k = 0; k < 3; k++) {
        CSR_CLEAR(mstatus, MSTATUS_MPP);
        CSR_SET(mstatus, MSTATUS_MPRV | mpp[k] << 11);
        traps = 0;
        page[0x300 / 4] = 5;
        CSR_CLEAR(mstatus, MSTATUS_MPRV);
        outcome(names[k], mpp[k] == 3 ? NO_TRAP : CAUSE_STORE, AT(0), 0x300);
    }
    CSR_CLEAR(mstatus, MSTATUS_MPP);
    CSR_SET(mstatus, MSTATUS_MPRV);
    traps = 0;
    unsigned long v = page[0x300 / 4];
    long r = ((long (*)(void))pmp_fn)();
    CSR_CLEAR(mstatus, MSTATUS_MPRV);
    outcome("MPRV, MPP=U: M lw, then calls code", NO_TRAP, 0, 0);
    check("  loaded", v, 5);
    check("  it returned", (unsigned long)r, 0x5a);
    reset_tests();
}

static void locked(void) {
    char what[64];
    /* Entry 14: NAPOT 8 over pmp_fn_locked, L and R: M cannot fetch it, can read it. */
    addr_set(14, NAPOT(pmp_fn_locked, 8));
    cfg_set(14, P_L | A_NAPOT | P_R);
    long r = run(lo_call, (long)pmp_fn_locked, 3);
    outcome("L R over code: M calls it", CAUSE_FETCH, (unsigned long)pmp_code, 0x800);
    check("  it returned", (unsigned long)r, -1ul);
    run(lo_lw, (long)pmp_fn_locked, 3);
    outcome("L R over code: M lw", NO_TRAP, 0, 0);
    /* Entry 13: NAPOT 256 at +800 of the page, L and R: M stores fail, loads do not. */
    addr_set(13, NAPOT(AT(0x800), 256));
    cfg_set(13, P_L | A_NAPOT | P_R);
    run(lo_sw, AT(0x8fc), 3);
    outcome("L R: M sw at +8fc", CAUSE_STORE, AT(0), 0x8fc);
    run(lo_amo, AT(0x800), 3);
    outcome("L R: M amoadd.w at +800", CAUSE_STORE, AT(0), 0x800);
    run(lo_lw, AT(0x800), 3);
    outcome("L R: M lw at +800", NO_TRAP, 0, 0);
    run(lo_sw, AT(0x900), 3);
    outcome("L R: M sw at +900 (outside)", NO_TRAP, 0, 0);
    /* Locked: writes to its pmpcfg and pmpaddr are ignored. */
    cfg_set(13, A_NAPOT | P_R | P_W | P_X);
    check("locked pmp13cfg after a write", cfg_get(13), P_L | A_NAPOT | P_R);
    addr_set(14, 0);
    check("locked pmpaddr14 after a write", addr_get(14) == NAPOT(pmp_fn_locked, 8), 1);
    /* Entry 12: TOR +c00..+d00 locked, L R W: pmpaddr11 (its bottom) ignores writes; entry
     * 11's own pmpcfg does not. */
    addr_set(11, AT(0xc00) >> 2);
    addr_set(12, AT(0xd00) >> 2);
    cfg_set(12, P_L | A_TOR | P_R | P_W);
    addr_set(11, AT(0xb00) >> 2);
    check("pmpaddr11 under a locked TOR after a write", addr_get(11) == AT(0xc00) >> 2, 1);
    cfg_set(11, A_NA4 | P_R);
    check("pmp11cfg (unlocked) after a write", cfg_get(11), A_NA4 | P_R);
    cfg_set(11, 0);
    run(lo_sw, AT(0xc00), 3);
    outcome("L RW TOR: M sw at +c00", NO_TRAP, 0, 0);
    run(lo_call, AT(0xc00), 3);
    outcome("L RW TOR: M jumps to +c00", CAUSE_FETCH, AT(0), 0xc00);
    run(lo_lw, AT(0xb00), 3);
    outcome("L RW TOR: M lw at +b00 (below)", NO_TRAP, 0, 0);
    /* Locked entries apply to S as to M; entry 15 still covers the rest. */
    run(lo_sw, AT(0xcfc), 1);
    outcome("L RW TOR: S sw at +cfc", NO_TRAP, 0, 0);
    snprintf(what, sizeof what, "L R: S sw at +800");
    run(lo_sw, AT(0x800), 1);
    outcome(what, CAUSE_STORE, AT(0), 0x800);
}

int main(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    registers();
    no_entry();
    region("NAPOT 8 at +8", A_NAPOT, AT(0x8), 8);
    region("NAPOT 256 at +100", A_NAPOT, AT(0x100), 256);
    region("NAPOT 2048 at +800", A_NAPOT, AT(0x800), 2048);
    region("NA4 at +20", A_NA4, AT(0x20), 4);
    tor();
    priority();
    partial();
    /* An AMO needs R, then W: QEMU 7.2 reports a missing R as a load access fault (5), the
     * spec says store/AMO access fault (7) for any AMO. */
    perms("none", 0, CAUSE_LOAD, CAUSE_STORE, CAUSE_LOAD, CAUSE_FETCH);
    perms("R", P_R, NO_TRAP, CAUSE_STORE, CAUSE_STORE, CAUSE_FETCH);
    perms("RW", P_R | P_W, NO_TRAP, NO_TRAP, NO_TRAP, CAUSE_FETCH);
    perms("X", P_X, CAUSE_LOAD, CAUSE_STORE, CAUSE_LOAD, NO_TRAP);
    /* Reserved R=0 W=1 as QEMU 7.2 keeps it: write-only. */
    perms("W (reserved)", P_W, CAUSE_LOAD, NO_TRAP, CAUSE_LOAD, CAUSE_FETCH);
    fetch_across_pages();
    m_mode();
    mprv();
    locked();
    printf("pmp: %d failure%s\n", fails, fails == 1 ? "" : "s");
    return fails != 0;
}
