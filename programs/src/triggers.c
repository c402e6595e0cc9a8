/* Debug triggers (Debug spec, "Sdtrig (ISA Extension)") as QEMU 7.2's virt hart has them: the
 * registers (two triggers, tinfo, reset values, what tdata1 keeps of a write: types 2 and 6,
 * m/s/u, execute/store/load, the sizes QEMU supports; everything else reads 0), execute
 * triggers (the pc of an instruction, 2- and 4-byte, not the middle of one), load and store
 * triggers (the bytes an access touches overlap the watched ones: size any = XLEN/8 bytes,
 * or 1, 2, 4, 8), AMO, LR and SC, the m/s/u filters from M, S and U (MPRV does not change
 * the privilege they see), a breakpoint delegated to S, a disarmed trigger, two triggers, and
 * the priority over a PMP access fault (fetch and load). Each breakpoint is cause 3, tval 0,
 * epc = the instruction, which does not execute. Self-checking; every check prints.
 * Data accesses are only those where QEMU 7.2 and the spec agree: see below.
 *
 * Left out on purpose (crates/sim/README.md, "Debug triggers"): a write of 0 to tdata1, which
 * QEMU 7.2 ignores (the spec guarantees it disables the trigger; the model does that), and a
 * misaligned LR/SC/AMO on a watched address (QEMU 7.2 raises the misaligned exception, the
 * spec's priority table puts the breakpoint first; the model follows the spec), accesses that
 * miss tdata2 but touch the bytes after it (QEMU watches XLEN/8 bytes for size any, and the
 * size code's number of bytes otherwise; the spec matches the accessed bytes' addresses), an
 * access of another size than the trigger's, and misaligned loads and stores near tdata2. */
#include <stdio.h>
#include "rvtest.h"

#define XLEN __riscv_xlen
#define TYPE(t) ((unsigned long)(t) << (XLEN - 4))
#define T_LOAD 0x01ul
#define T_STORE 0x02ul
#define T_EXEC 0x04ul
#define T_U 0x08ul
#define T_S 0x10ul
#define T_M 0x40ul
#define SIZELO(n) ((unsigned long)(n) << 16)
#define CAUSE_FETCH 1
#define CAUSE_LOAD_MISALIGNED 4
#define NO_TRAP (-1l)
#define NI __attribute__((noinline))

extern char trig_code[], trig_fn[], trig_c[], trig_nx[];
static volatile uint32_t data[16] __attribute__((aligned(64)));
#define D4 ((long)&data[4])

static int fails;
static void check(const char *what, unsigned long got, unsigned long want) {
    printf("%-52s %lx%s\n", what, got, got == want ? "" : "  FAIL");
    if (got != want) {
        printf("  want %lx\n", want);
        fails++;
    }
}

/* The last trap a handler saw (lower modes' SYS_LEAVE calls aside). */
static volatile unsigned long traps, t_cause, t_tval, t_epc, t_where, t_first, t_first_epc;

static unsigned long record(unsigned long cause, unsigned long tval, unsigned long epc, int where) {
    if (++traps == 1) {
        t_first = cause;
        t_first_epc = epc;
    }
    t_cause = cause;
    t_tval = tval;
    t_epc = epc;
    t_where = where;
    return epc + insn_len(epc);
}

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)vec;
    unsigned long from = (CSR_READ(mstatus) & MSTATUS_MPP) >> 11;
    if ((cause == CAUSE_ECALL_U || cause == CAUSE_ECALL_S) && f->a7 == SYS_LEAVE) return 0;
    unsigned long next = record(cause, CSR_READ(mtval), epc, 3);
    if (cause == CAUSE_FETCH) {
        /* A function that cannot be fetched "returns" -1 (out of m_enter from below). */
        f->a0 = -1;
        return from == 3 ? f->ra : 0;
    }
    return next;
}

unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)f; (void)vec;
    return record(cause, CSR_READ(stval), epc, 1);
}

/* Print the trap (or none) against the wanted one: breakpoints must have tval 0. */
static void outcome(const char *what, long want_cause, unsigned long want_epc) {
    long cause = traps ? (long)t_cause : NO_TRAP;
    int ok = traps <= 1 && cause == want_cause &&
             (cause == NO_TRAP || (t_epc == want_epc && (cause != CAUSE_BREAKPOINT || t_tval == 0)));
    if (cause == NO_TRAP)
        printf("%-52s no trap%s\n", what, ok ? "" : "  FAIL");
    else
        printf("%-52s cause %ld in %s tval %lx at %s%s\n", what, cause, t_where == 3 ? "M" : "S",
               t_tval, t_epc == want_epc ? "epc" : "other", ok ? "" : "  FAIL");
    if (!ok) {
        if (want_cause == NO_TRAP) printf("  want no trap\n");
        else printf("  want cause %ld at %lx (got %lx)\n", want_cause, want_epc, t_epc);
        fails++;
    }
}

/* Accesses, run in S or U through m_enter (or called in M). Each is one instruction at a
 * label, so the wanted epc is known. */
extern char at_lw[], at_lh[], at_lb[], at_sw[], at_sb[], at_amo[], at_lr[], at_sc[];
NI static long lo_lw(long a) {
    long r;
    __asm__ volatile("at_lw: lw %0, 0(%1)" : "=r"(r) : "r"(a) : "memory");
    return r;
}
NI static long lo_lh(long a) {
    long r;
    __asm__ volatile("at_lh: lh %0, 0(%1)" : "=r"(r) : "r"(a) : "memory");
    return r;
}
NI static long lo_lb(long a) {
    long r;
    __asm__ volatile("at_lb: lb %0, 0(%1)" : "=r"(r) : "r"(a) : "memory");
    return r;
}
NI static long lo_sw(long a) {
    __asm__ volatile("at_sw: sw %0, 0(%1)" :: "r"(0x11l), "r"(a) : "memory");
    return 0;
}
NI static long lo_sb(long a) {
    __asm__ volatile("at_sb: sb %0, 0(%1)" :: "r"(0x22l), "r"(a) : "memory");
    return 0;
}
NI static long lo_amo(long a) {
    long r = 1;
    __asm__ volatile("at_amo: amoadd.w %0, %0, (%1)" : "+r"(r) : "r"(a) : "memory");
    return r;
}
NI static long lo_lr(long a) {
    long r = 0;
    __asm__ volatile("at_lr: lr.w %0, (%1)" : "+r"(r) : "r"(a) : "memory");
    return r;
}
/* LR then SC of 5 at a (the LR is not watched by a store trigger); returns SC's rd (5 when
 * the SC was skipped by its breakpoint). */
NI static long lo_sc(long a) {
    long r = 5, v;
    __asm__ volatile("lr.w %1, (%2)\nat_sc: sc.w %0, %0, (%2)" : "+r"(r), "=&r"(v) : "r"(a) : "memory");
    return r;
}
NI static long lo_call(long a) { return ((long (*)(long))a)(0x100); }
NI static long lo_tdata1(long a) { (void)a; return CSR_READ(0x7a1); }

/* Run `fn(arg)` at `mode` (0 U, 1 S, 3 M) with the trap record cleared. */
static long run(lower_fn fn, long arg, int mode) {
    traps = 0;
    return mode == 3 ? fn(arg) : m_enter(arg, fn, (unsigned long)mode);
}

static const char *mode_name(int mode) { return mode == 0 ? "U" : mode == 1 ? "S" : "M"; }

static void arm(int sel, unsigned long tdata1, unsigned long tdata2) {
    CSR_WRITE(0x7a0, sel);
    CSR_WRITE(0x7a1, TYPE(2)); /* disarmed (QEMU 7.2 ignores a write of 0) */
    CSR_WRITE(0x7a2, tdata2);
    CSR_WRITE(0x7a1, tdata1);
}
static void disarm_all(void) {
    arm(1, TYPE(2), 0);
    arm(0, TYPE(2), 0);
}

/* What tdata1 reads after a write. */
static void warl(const char *what, unsigned long v, unsigned long want) {
    CSR_WRITE(0x7a1, v);
    check(what, CSR_READ(0x7a1), want);
}

static void registers(void) {
    check("reset tselect", CSR_READ(0x7a0), 0);
    check("reset tdata1", CSR_READ(0x7a1), TYPE(2));
    check("reset tdata2", CSR_READ(0x7a2), 0);
    check("reset tdata3", CSR_READ(0x7a3), 0);
    check("tinfo (types 2 and 6)", CSR_READ(0x7a4), 0x44);
    CSR_WRITE(0x7a0, 1);
    check("tselect = 1", CSR_READ(0x7a0), 1);
    check("  tinfo", CSR_READ(0x7a4), 0x44);
    check("  tdata1", CSR_READ(0x7a1), TYPE(2));
    CSR_WRITE(0x7a0, 2);
    check("tselect = 2 (no third trigger: ignored)", CSR_READ(0x7a0), 1);
    CSR_WRITE(0x7a0, 0);
    /* tcontrol (0x7a5) is not there; tdata1 is an M-mode CSR. */
    traps = 0;
    unsigned long v = 0;
    __asm__ volatile("csrr %0, 0x7a5" : "+r"(v));
    outcome("csrr tcontrol", CAUSE_ILLEGAL, t_epc);
    run(lo_tdata1, 0, 1);
    outcome("S reads tdata1", CAUSE_ILLEGAL, t_epc);
    CSR_WRITE(0x7a2, -1l);
    check("tdata2 = all ones", CSR_READ(0x7a2), -1ul);
    CSR_WRITE(0x7a3, -1l);
    check("tdata3 = all ones (ignored)", CSR_READ(0x7a3), 0);
    CSR_WRITE(0x7a4, 0);
    check("tinfo = 0 (ignored)", CSR_READ(0x7a4), 0x44);
    CSR_WRITE(0x7a2, 0);
    warl("tdata1 = type 2 | 0x7f (bit 5 is 0)", TYPE(2) | 0x7f, TYPE(2) | 0x5f);
    warl("tdata1 = type 2 | action 1", TYPE(2) | 1ul << 12 | T_M | T_LOAD, TYPE(2) | T_M | T_LOAD);
    warl("tdata1 = type 2 | match 1", TYPE(2) | 1ul << 7 | T_M | T_LOAD, TYPE(2) | T_M | T_LOAD);
    warl("tdata1 = type 2 | chain", TYPE(2) | 1ul << 11 | T_M | T_LOAD, TYPE(2) | T_M | T_LOAD);
    warl("tdata1 = type 2 | timing", TYPE(2) | 1ul << 18 | T_M | T_LOAD, TYPE(2) | T_M | T_LOAD);
    warl("tdata1 = type 2 | select", TYPE(2) | 1ul << 19 | T_M | T_LOAD, TYPE(2) | T_M | T_LOAD);
    warl("tdata1 = type 2 | hit", TYPE(2) | 1ul << 20 | T_M | T_LOAD, TYPE(2) | T_M | T_LOAD);
    warl("tdata1 = type 2 | dmode", TYPE(2) | 1ul << (XLEN - 5) | T_M, TYPE(2) | T_M);
    warl("tdata1 = type 2 | size 1", TYPE(2) | SIZELO(1) | T_M, TYPE(2) | SIZELO(1) | T_M);
    warl("tdata1 = type 2 | size 4", TYPE(2) | SIZELO(3) | T_M, TYPE(2) | SIZELO(3) | T_M);
#if XLEN == 64
    warl("tdata1 = type 2 | size 8 (sizehi 1)", TYPE(2) | 1ul << 21 | SIZELO(1) | T_M,
         TYPE(2) | 1ul << 21 | SIZELO(1) | T_M);
    warl("tdata1 = type 2 | size 6 (not kept)", TYPE(2) | 1ul << 21 | T_M, TYPE(2) | T_M);
#endif
    warl("tdata1 = type 6 | 0x7f", TYPE(6) | 0x7f, TYPE(6) | 0x5f);
    warl("tdata1 = type 6 | vs vu size 8", TYPE(6) | 3ul << 23 | 5ul << 16 | T_M,
         TYPE(6) | 3ul << 23 | 5ul << 16 | T_M);
    warl("tdata1 = type 6 | size 6 (not kept)", TYPE(6) | 4ul << 16 | T_M, TYPE(6) | T_M);
    warl("tdata1 = type 6 | hit0 select uncertain", TYPE(6) | 3ul << 21 | 1ul << 20 | 1ul << 5 | T_M,
         TYPE(6) | T_M);
    warl("tdata1 = type 3 (icount: ignored)", TYPE(3) | 0x7ff, TYPE(6) | T_M);
    warl("tdata1 = type 15 (ignored)", TYPE(15), TYPE(6) | T_M);
    warl("tdata1 = type 2", TYPE(2), TYPE(2));
}

static void execute(void) {
    long r;
    arm(0, TYPE(2) | T_M | T_EXEC, (unsigned long)trig_fn);
    r = run(lo_call, (long)trig_fn, 3);
    outcome("exec trig_fn, m: M calls it", CAUSE_BREAKPOINT, (unsigned long)trig_fn);
    check("  result (first instruction skipped)", r, 0x106);
    arm(0, TYPE(2) | T_M | T_EXEC, (unsigned long)trig_fn + 4);
    r = run(lo_call, (long)trig_fn, 3);
    outcome("exec trig_fn+4, m: M calls it", CAUSE_BREAKPOINT, (unsigned long)trig_fn + 4);
    check("  result", r, 0x105);
    arm(0, TYPE(2) | T_M | T_EXEC, (unsigned long)trig_fn + 2);
    r = run(lo_call, (long)trig_fn, 3);
    outcome("exec trig_fn+2 (inside an instruction)", NO_TRAP, 0);
    check("  result", r, 0x107);
    arm(0, TYPE(2) | T_M | T_EXEC, (unsigned long)trig_c + 2);
    r = run(lo_call, (long)trig_c, 3);
    outcome("exec trig_c+2 (after a 2-byte one)", CAUSE_BREAKPOINT, (unsigned long)trig_c + 2);
    check("  result", r, 0x105);
    arm(0, TYPE(2) | T_M | T_EXEC | SIZELO(1), (unsigned long)trig_c);
    r = run(lo_call, (long)trig_c, 3);
    outcome("exec trig_c, size 1", CAUSE_BREAKPOINT, (unsigned long)trig_c);
    check("  result", r, 0x106);
    arm(0, TYPE(2) | T_M | T_LOAD | T_STORE, (unsigned long)trig_fn);
    r = run(lo_call, (long)trig_fn, 3);
    outcome("load/store trigger on trig_fn: M calls it", NO_TRAP, 0);
    /* Privilege filters: each mode against each enable bit. */
    unsigned long bits[3] = {T_U, T_S, T_M};
    for (int b = 0; b < 3; b++) {
        for (int mode = 0; mode <= 3; mode += (mode == 1 ? 2 : 1)) {
            char what[64];
            int want = (b == 0 && mode == 0) || (b == 1 && mode == 1) || (b == 2 && mode == 3);
            arm(0, TYPE(2) | bits[b] | T_EXEC, (unsigned long)trig_fn);
            r = run(lo_call, (long)trig_fn, mode);
            snprintf(what, sizeof what, "exec, %c only: %s calls trig_fn", "usm"[b], mode_name(mode));
            outcome(what, want ? CAUSE_BREAKPOINT : NO_TRAP, (unsigned long)trig_fn);
            check("  result", r, want ? 0x106 : 0x107);
        }
    }
    arm(0, TYPE(6) | T_S | T_EXEC, (unsigned long)trig_fn + 8);
    r = run(lo_call, (long)trig_fn, 1);
    outcome("exec trig_fn+8, type 6, s: S calls it", CAUSE_BREAKPOINT, (unsigned long)trig_fn + 8);
    check("  result", r, 0x103);
    arm(0, TYPE(2) | T_EXEC, (unsigned long)trig_fn);
    r = run(lo_call, (long)trig_fn, 3);
    outcome("exec with no privilege enabled: M", NO_TRAP, 0);
    disarm_all();
}

/* A load trigger at data[4] (size `size`, 0 = any) against a load at `off` of `bytes`. */
static void load_at(unsigned long size, long off, int bytes, int want) {
    char what[64];
    arm(0, TYPE(2) | T_M | T_LOAD | SIZELO(size), D4);
    lower_fn fn = bytes == 4 ? lo_lw : bytes == 2 ? lo_lh : lo_lb;
    char *at = bytes == 4 ? at_lw : bytes == 2 ? at_lh : at_lb;
    run(fn, D4 + off, 3);
    snprintf(what, sizeof what, "load trig size %s: M %s at %+ld", size ? (size == 1 ? "1" : size == 2 ? "2" : "4") : "any",
             bytes == 4 ? "lw" : bytes == 2 ? "lh" : "lb", off);
    outcome(what, want ? CAUSE_BREAKPOINT : NO_TRAP, (unsigned long)at);
}

static void loads_stores(void) {
    int any = XLEN / 8;
    /* The accesses where QEMU 7.2 and the spec agree: one that includes the watched byte, of
     * the size the trigger asks for, fires; one that neither includes it nor touches the XLEN/8
     * (size any) or size-code (QEMU) bytes from it does not. */
    load_at(0, 0, 4, 1);
    load_at(0, 0, 1, 1);
    load_at(0, -4, 4, 0);
    load_at(0, any, 1, 0);
    load_at(1, 0, 1, 1);
    load_at(1, 1, 1, 0);
    load_at(2, 0, 2, 1);
    load_at(2, 2, 1, 0);
    load_at(3, 0, 4, 1);
    load_at(3, 4, 4, 0);
    arm(0, TYPE(2) | T_M | T_LOAD, D4);
    run(lo_sw, D4, 3);
    outcome("load trig: M sw", NO_TRAP, 0);
    run(lo_amo, D4, 3);
    outcome("load trig: M amoadd.w", CAUSE_BREAKPOINT, (unsigned long)at_amo);
    run(lo_lr, D4, 3);
    outcome("load trig: M lr.w", CAUSE_BREAKPOINT, (unsigned long)at_lr);
    run(lo_lr, D4 + 2, 3);
    outcome("load trig: M lr.w misaligned, outside", CAUSE_LOAD_MISALIGNED, (unsigned long)at_lr);
    arm(0, TYPE(6) | T_M | T_LOAD, D4);
    run(lo_lw, D4, 3);
    outcome("load trig type 6 (any): M lw", CAUSE_BREAKPOINT, (unsigned long)at_lw);
    /* Stores: the store does not happen. */
    data[4] = 0x99;
    arm(0, TYPE(2) | T_M | T_STORE, D4);
    run(lo_sw, D4, 3);
    outcome("store trig: M sw", CAUSE_BREAKPOINT, (unsigned long)at_sw);
    check("  memory unchanged", data[4], 0x99);
    run(lo_sb, D4, 3);
    outcome("store trig: M sb", CAUSE_BREAKPOINT, (unsigned long)at_sb);
    run(lo_sb, D4 - 1, 3);
    outcome("store trig: M sb at -1", NO_TRAP, 0);
    check("  memory unchanged", data[4], 0x99);
    run(lo_lw, D4, 3);
    outcome("store trig: M lw", NO_TRAP, 0);
    run(lo_amo, D4, 3);
    outcome("store trig: M amoadd.w", CAUSE_BREAKPOINT, (unsigned long)at_amo);
    check("  memory unchanged", data[4], 0x99);
    long r = run(lo_sc, D4, 3);
    outcome("store trig: M lr.w, sc.w", CAUSE_BREAKPOINT, (unsigned long)at_sc);
    check("  sc.w skipped", r, 5);
    check("  memory unchanged", data[4], 0x99);
    arm(0, TYPE(2) | T_M | T_STORE, D4 + 8);
    r = run(lo_sc, D4, 3);
    outcome("store trig elsewhere: M lr.w, sc.w", NO_TRAP, 0);
    check("  sc.w succeeded", r, 0);
    check("  memory", data[4], 5);
    /* Privilege filters on data, and MPRV (which does not change the privilege triggers see). */
    unsigned long bits[3] = {T_U, T_S, T_M};
    for (int b = 0; b < 3; b++) {
        for (int mode = 0; mode <= 3; mode += (mode == 1 ? 2 : 1)) {
            char what[64];
            int want = (b == 0 && mode == 0) || (b == 1 && mode == 1) || (b == 2 && mode == 3);
            arm(0, TYPE(2) | bits[b] | T_LOAD | T_STORE, D4);
            run(lo_sw, D4, mode);
            snprintf(what, sizeof what, "store/load, %c only: %s sw", "usm"[b], mode_name(mode));
            outcome(what, want ? CAUSE_BREAKPOINT : NO_TRAP, (unsigned long)at_sw);
        }
    }
    arm(0, TYPE(2) | T_U | T_LOAD, D4);
    CSR_CLEAR(mstatus, MSTATUS_MPP);
    CSR_SET(mstatus, 1ul << 17);
    traps = 0;
    lo_lw(D4);
    CSR_CLEAR(mstatus, 1ul << 17);
    outcome("load trig u: M lw with MPRV, MPP = U", NO_TRAP, 0);
    arm(0, TYPE(2) | T_M | T_LOAD, D4);
    CSR_SET(mstatus, 1ul << 17);
    traps = 0;
    lo_lw(D4);
    CSR_CLEAR(mstatus, 1ul << 17);
    outcome("load trig m: M lw with MPRV, MPP = U", CAUSE_BREAKPOINT, (unsigned long)at_lw);
    disarm_all();
}

static void two_and_delegation(void) {
    /* Trigger 1 alone, then both. */
    arm(1, TYPE(2) | T_M | T_STORE, D4 + 32);
    run(lo_sw, D4 + 32, 3);
    outcome("trigger 1 store: M sw", CAUSE_BREAKPOINT, (unsigned long)at_sw);
    arm(0, TYPE(2) | T_M | T_LOAD, D4);
    run(lo_lw, D4, 3);
    outcome("trigger 0 load, trigger 1 store: M lw", CAUSE_BREAKPOINT, (unsigned long)at_lw);
    run(lo_sw, D4 + 32, 3);
    outcome("  M sw at trigger 1's", CAUSE_BREAKPOINT, (unsigned long)at_sw);
    run(lo_sw, D4, 3);
    outcome("  M sw at trigger 0's", NO_TRAP, 0);
    check("tselect", CSR_READ(0x7a0), 0);
    CSR_WRITE(0x7a0, 1);
    check("trigger 1 tdata1", CSR_READ(0x7a1), TYPE(2) | T_M | T_STORE);
    check("trigger 1 tdata2", CSR_READ(0x7a2) == (unsigned long)D4 + 32, 1);
    CSR_WRITE(0x7a1, TYPE(2) | T_M);
    run(lo_sw, D4 + 32, 3);
    outcome("trigger 1 without store: M sw", NO_TRAP, 0);
    disarm_all();
    /* A breakpoint delegated to S: taken in S from U and from S. */
    CSR_WRITE(stvec, s_trap_entry);
    CSR_WRITE(medeleg, 1 << CAUSE_BREAKPOINT);
    arm(0, TYPE(2) | T_U | T_S | T_LOAD, D4);
    run(lo_lw, D4, 0);
    outcome("delegated: U lw", CAUSE_BREAKPOINT, (unsigned long)at_lw);
    run(lo_lw, D4, 1);
    outcome("delegated: S lw", CAUSE_BREAKPOINT, (unsigned long)at_lw);
    arm(0, TYPE(2) | T_U | T_EXEC, (unsigned long)trig_fn);
    long r = run(lo_call, (long)trig_fn, 0);
    outcome("delegated: U calls trig_fn", CAUSE_BREAKPOINT, (unsigned long)trig_fn);
    check("  result", r, 0x106);
    CSR_WRITE(medeleg, 0);
    disarm_all();
}

/* The breakpoint comes before a PMP access fault (Debug spec, "Priority"). Entry 0: the
 * page at trig_nx, R W, no X; entry 1: the data word at data[4], nothing; entry 2: all. */
static void priority(void) {
    unsigned long nx = (unsigned long)trig_nx;
    CSR_WRITE(pmpaddr0, (nx >> 2) | 0x1ff);
    CSR_WRITE(pmpaddr1, (unsigned long)D4 >> 2);
    CSR_WRITE(pmpaddr2, -1l);
    CSR_WRITE(pmpcfg0, 0x1f101bul);
    long r = run(lo_call, (long)trig_nx, 1);
    outcome("no trigger: S calls trig_nx (no X)", CAUSE_FETCH, nx);
    check("  result", r, -1ul);
    arm(0, TYPE(2) | T_S | T_EXEC, nx);
    /* The breakpoint, then (its instruction skipped) the next one's fetch fault. */
    r = run(lo_call, (long)trig_nx, 1);
    check("exec trig_nx, s: S calls it: traps", traps, 2);
    check("  first: cause", t_first, CAUSE_BREAKPOINT);
    check("  first: at trig_nx", t_first_epc == nx, 1);
    check("  then: cause", t_cause, CAUSE_FETCH);
    check("  then: at trig_nx + 4", t_epc == nx + 4, 1);
    arm(0, TYPE(2) | T_S | T_LOAD, D4);
    run(lo_lw, D4, 1);
    outcome("load trig: S lw where PMP denies it", CAUSE_BREAKPOINT, (unsigned long)at_lw);
    disarm_all();
    run(lo_lw, D4, 1);
    outcome("no trigger: S lw where PMP denies it", 5, (unsigned long)at_lw);
    pmp_open_all();
}

int main(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    pmp_open_all();
    registers();
    execute();
    loads_stores();
    two_and_delegation();
    priority();
    printf("triggers: %d failure%s\n", fails, fails == 1 ? "" : "s");
    return fails != 0;
}
