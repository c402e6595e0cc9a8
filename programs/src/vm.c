/* Address translation (privileged ISA, "Supervisor-Level ISA": Sv32 / Sv39, Sv48, Sv57, "Virtual
 * Address Translation Process", "Memory Privilege in mstatus Register") as QEMU 7.2's virt hart
 * does it: satp WARL; walks ending at every level (4 KiB, 2 MiB / 4 MiB, 1 GiB, 512 GiB with
 * Sv48, 256 TiB with Sv57); page faults of fetches, loads, stores, AMOs, LR and SC with their
 * tval (a 4-byte instruction and a word crossing into an unmapped page too); invalid PTEs,
 * W without R, reserved bits, a pointer at level 0, a misaligned superpage, non-canonical
 * addresses; U pages with SUM, S fetch from a U page, MXR; MPRV with MPP = S/U/M; A and D set
 * by the hart; sfence.vma (all, by address inside a superpage, by ASID) showing a remapped
 * page; a page-table page that PMP denies (access faults of each kind).
 *
 * M-mode builds the tables (an identity leaf over the program keeps its code, data and stack
 * where they are) and runs each access in S or U through m_enter; nothing is delegated, so
 * every trap is recorded by the M handler and printed from M. Self-checking; every check
 * prints. Every table change is followed by an sfence.vma before the next translated access,
 * so no result depends on what a TLB kept. */
#include <stdio.h>
#include "rvtest.h"
#include "vm.h"

#define XLEN __riscv_xlen
#define NO_TRAP (-1l)

static int fails;
static void check(const char *what, unsigned long got, unsigned long want) {
    printf("%-56s %lx%s\n", what, got, got == want ? "" : "  FAIL");
    if (got != want) {
        printf("  want %lx\n", want);
        fails++;
    }
}

/* The last trap the M handler saw (lower modes' SYS_LEAVE calls aside). */
static volatile unsigned long traps, t_cause, t_tval;

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)vec;
    unsigned long from = (CSR_READ(mstatus) & MSTATUS_MPP) >> 11;
    if ((cause == CAUSE_ECALL_U || cause == CAUSE_ECALL_S) && f->a7 == SYS_LEAVE) return 0;
    traps++;
    t_cause = cause;
    t_tval = CSR_READ(mtval);
    if (cause == CAUSE_FETCH_PAGE || cause == CAUSE_FETCH_ACCESS) {
        /* A function that cannot be fetched "returns" -1 out of m_enter. */
        f->a0 = -1;
        return from == 3 ? f->ra : 0;
    }
    /* Every other fault is in the program's own (identity-mapped) code. */
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
        printf("%-56s no trap%s\n", what, ok ? "" : "  FAIL");
    else
        printf("%-56s cause %ld tval +%lx%s\n", what, cause, off, ok ? "" : "  FAIL");
    if (!ok) {
        if (want_cause == NO_TRAP) printf("  want no trap\n");
        else printf("  want cause %ld tval +%lx\n", want_cause, want_off);
        fails++;
    }
}

/* Accesses, run in S or U through m_enter. */
static long lo_lw(long a) { return *(volatile uint32_t *)a; }
static long lo_sw(long a) { *(volatile uint32_t *)a = 0x5157; return 0; }
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
/* lr.w then sc.w of the same word: sc's result (0 = stored). */
static long lo_lrsc(long a) {
    long r, v = 7;
    __asm__ volatile("lr.w %0, (%1)\n\tsc.w %0, %2, (%1)" : "=&r"(r) : "r"(a), "r"(v) : "memory");
    return r;
}
/* A load then a store to the same word (the store finds the load's translation). */
static long lo_lw_sw(long a) {
    long v = *(volatile uint32_t *)a;
    *(volatile uint32_t *)a = (uint32_t)v + 1;
    return v;
}
static long lo_call(long a) { return ((long (*)(void))a)(); }
static long lo_fence_va(long a) {
    vm_fence_va((unsigned long)a);
    return 0;
}

/* Run `fn(arg)` at `mode` (0 U, 1 S) with the trap record cleared. */
static long run(lower_fn fn, long arg, int mode) {
    traps = 0;
    return m_enter(arg, fn, (unsigned long)mode);
}

/* ---- page tables ---- */

static pte_t pool_pages[24][VM_PTES] __attribute__((aligned(4096)));
static struct vm_pool pool;
static pte_t *root;
static int levels;
static unsigned vm_mode;

/* Physical pages the tests map. */
static volatile uint32_t data[6][1024] __attribute__((aligned(4096)));
static volatile uint16_t code[2][2048] __attribute__((aligned(4096)));

#define RAM 0x80000000ul
/* The identity leaf over the program: 1 GiB (level 2) on RV64, 4 MiB on Sv32. */
#if XLEN == 64
#define IDENT_LEVEL 2
#else
#define IDENT_LEVEL 1
#endif
/* Test window: 4 KiB pages at TV, TV + 0x1000, ... (nothing is there physically on QEMU's virt,
 * so that an untranslated access faults). */
#define TV 0x28000000ul
#define MEGA vm_level_size(1)
/* A megapage (2 MiB / 4 MiB) at TV + 2 MEGA. */
#define TV_MEGA (TV + 2 * MEGA)

static void fence_i(void) { __asm__ volatile(".word 0x0000100f" ::: "memory"); }

static pte_t *slot(unsigned long va, int level) {
    pte_t *e = vm_slot(&pool, root, levels, va, level);
    if (!e) {
        printf("page-table pool empty\n");
        fails++;
        static pte_t dummy;
        return &dummy;
    }
    return e;
}

/* Set the leaf of `va` at `level` and fence (from M: sfence.vma is an M instruction too). */
static void map(unsigned long va, unsigned long pa, int level, unsigned long flags) {
    *slot(va, level) = vm_leaf(pa, flags);
    vm_fence();
}

static void set_pte(unsigned long va, int level, pte_t v) {
    *slot(va, level) = v;
    vm_fence();
}

/* The identity leaf, with U for runs in U-mode (S cannot fetch from U pages). */
static void ident(int user) {
    unsigned long f = PTE_V | PTE_RWX | PTE_A | PTE_D | (user ? PTE_U : 0);
    map(RAM, RAM, IDENT_LEVEL, f);
}

/* A fresh tree for satp MODE `mode` with the identity leaf, satp pointing at it. */
static void build(unsigned mode, unsigned asid) {
    pool.pages = pool_pages;
    pool.count = sizeof pool_pages / sizeof pool_pages[0];
    pool.used = 0;
    vm_mode = mode;
    levels = vm_levels(mode);
    root = vm_alloc(&pool);
    ident(0);
    CSR_WRITE(satp, vm_satp(mode, asid, root));
    vm_fence();
}

#define RWAD (PTE_V | PTE_R | PTE_W | PTE_A | PTE_D)
#define PA(p) ((unsigned long)(p))

static void fill_data(void) {
    for (int k = 0; k < 6; k++)
        for (int i = 0; i < 1024; i++) data[k][i] = 0x1000 * (k + 1) + i;
}

/* ---- checks ---- */

static void satp_warl(void) {
#if XLEN == 64
    unsigned long r = PA(pool_pages) >> 12;
    CSR_WRITE(satp, SATP_MODE(VM_SV39) | SATP_ASID(0xffff) | r);
    check("satp Sv39, ASID ffff", CSR_READ(satp), SATP_MODE(VM_SV39) | SATP_ASID(0xffff) | r);
    CSR_WRITE(satp, SATP_MODE(VM_SV48) | r);
    check("satp Sv48", CSR_READ(satp), SATP_MODE(VM_SV48) | r);
    CSR_WRITE(satp, SATP_MODE(VM_SV57) | r);
    check("satp Sv57", CSR_READ(satp), SATP_MODE(VM_SV57) | r);
    CSR_WRITE(satp, SATP_MODE(VM_SV48) | r);
    CSR_WRITE(satp, SATP_MODE(11) | 5);
    check("satp MODE 11 (reserved): write ignored", CSR_READ(satp), SATP_MODE(VM_SV48) | r);
    CSR_WRITE(satp, SATP_MODE(1) | 5);
    check("satp MODE 1 (reserved): write ignored", CSR_READ(satp), SATP_MODE(VM_SV48) | r);
#else
    unsigned long r = PA(pool_pages) >> 12;
    CSR_WRITE(satp, SATP_MODE(VM_SV32) | SATP_ASID(0x1ff) | r);
    check("satp Sv32, ASID 1ff", CSR_READ(satp), SATP_MODE(VM_SV32) | SATP_ASID(0x1ff) | r);
#endif
    CSR_WRITE(satp, 0);
    check("satp Bare", CSR_READ(satp), 0);
}

/* Loads through a leaf at every level the mode has. */
static void walks(const char *name) {
    char what[80];
    /* 4 KiB. */
    map(TV, PA(data[1]), 0, RWAD);
    snprintf(what, sizeof what, "%s 4K page: S lw", name);
    check(what, run(lo_lw, TV + 8, 1), data[1][2]);
    /* 2 MiB / 4 MiB: the megapage over the data pages. */
    unsigned long mbase = PA(data[0]) & ~(MEGA - 1);
    map(TV_MEGA, mbase, 1, RWAD);
    snprintf(what, sizeof what, "%s megapage: S lw", name);
    check(what, run(lo_lw, TV_MEGA + (PA(data[3]) - mbase) + 12, 1), data[3][3]);
#if XLEN == 64
    /* 1 GiB: an alias of RAM at 4 GiB. */
    map(0x100000000ul, RAM, 2, RWAD);
    snprintf(what, sizeof what, "%s gigapage: S lw", name);
    check(what, run(lo_lw, 0x100000000ul + (PA(data[2]) - RAM), 1), data[2][0]);
    if (levels >= 4) {
        /* 512 GiB: a level-3 leaf at VA 512 GiB over PA 0. */
        map(1ul << 39, 0, 3, RWAD);
        snprintf(what, sizeof what, "%s 512 GiB page: S lw", name);
        check(what, run(lo_lw, (1ul << 39) + PA(data[4]) + 4, 1), data[4][1]);
    }
    if (levels >= 5) {
        /* 256 TiB: a level-4 leaf at VA 256 TiB over PA 0. */
        map(1ul << 48, 0, 4, RWAD);
        snprintf(what, sizeof what, "%s 256 TiB page: S lw", name);
        check(what, run(lo_lw, (1ul << 48) + PA(data[5]) + 4, 1), data[5][1]);
    }
    /* Non-canonical: the bits above the address width must copy its top bit. */
    unsigned long nc = 1ul << (12 + levels * 9); /* first bit above the VA */
    snprintf(what, sizeof what, "%s non-canonical (bit %d) S lw", name, 12 + levels * 9);
    run(lo_lw, nc | TV, 1);
    outcome(what, CAUSE_LOAD_PAGE, nc | TV, 0);
    unsigned long neg = -(1ul << (11 + levels * 9)) | TV; /* sign-extended: canonical */
    run(lo_sw, neg, 1);
    snprintf(what, sizeof what, "%s canonical negative, unmapped: S sw", name);
    outcome(what, CAUSE_STORE_PAGE, neg, 0);
#endif
}

static void faults(void) {
    unsigned long v0 = TV, v1 = TV + 0x1000, v2 = TV + 0x2000;
    map(v0, PA(data[0]), 0, 0); /* V = 0 */
    map(v1, PA(data[1]), 0, PTE_V | PTE_R | PTE_A);
    run(lo_lw, v0 + 4, 1);
    outcome("V=0: S lw", CAUSE_LOAD_PAGE, v0, 4);
    run(lo_sw, v0 + 8, 1);
    outcome("V=0: S sw", CAUSE_STORE_PAGE, v0, 8);
    /* QEMU 7.2 translates an AMO for reading first: a load page fault here (the spec says
     * store/AMO page fault for every AMO; the model does as QEMU, as for PMP). */
    run(lo_amo, v0 + 12, 1);
    outcome("V=0: S amoadd.w (QEMU: load page fault)", CAUSE_LOAD_PAGE, v0, 12);
    run(lo_lr, v0 + 16, 1);
    outcome("V=0: S lr.w", CAUSE_LOAD_PAGE, v0, 16);
    run(lo_call, v0, 1);
    outcome("V=0: S call", CAUSE_FETCH_PAGE, v0, 0);
    check("R only: S lw", run(lo_lw, v1 + 20, 1), data[1][5]);
    run(lo_sw, v1 + 20, 1);
    outcome("R only: S sw", CAUSE_STORE_PAGE, v1, 20);
    run(lo_amo, v1 + 24, 1);
    outcome("R only: S amoadd.w", CAUSE_STORE_PAGE, v1, 24);
    run(lo_lrsc, v1 + 28, 1);
    outcome("R only: S lr.w + sc.w", CAUSE_STORE_PAGE, v1, 28);
    run(lo_call, v1, 1);
    outcome("R only: S call", CAUSE_FETCH_PAGE, v1, 0);
    /* Reserved encodings: W without R (with and without X). */
    map(v2, PA(data[2]), 0, PTE_V | PTE_W | PTE_A | PTE_D);
    run(lo_lw, v2, 1);
    outcome("W without R: S lw", CAUSE_LOAD_PAGE, v2, 0);
    run(lo_sw, v2, 1);
    outcome("W without R: S sw", CAUSE_STORE_PAGE, v2, 0);
    map(v2, PA(data[2]), 0, PTE_V | PTE_W | PTE_X | PTE_A | PTE_D);
    run(lo_lw, v2, 1);
    outcome("W+X without R: S lw", CAUSE_LOAD_PAGE, v2, 0);
#if XLEN == 64
    /* Bits 63:54 are reserved without Svnapot/Svpbmt (N = 63, PBMT = 62:61). */
    static const int rbits[] = {54, 60, 61, 63};
    for (unsigned k = 0; k < sizeof rbits / sizeof rbits[0]; k++) {
        char what[64];
        set_pte(v2, 0, vm_leaf(PA(data[2]), RWAD) | (1ul << rbits[k]));
        run(lo_lw, v2, 1);
        snprintf(what, sizeof what, "reserved PTE bit %d: S lw", rbits[k]);
        outcome(what, CAUSE_LOAD_PAGE, v2, 0);
    }
#endif
    /* RSW (bits 9:8) are software's. */
    set_pte(v2, 0, vm_leaf(PA(data[2]), RWAD) | (3ul << 8));
    check("RSW bits set: S lw", run(lo_lw, v2 + 4, 1), data[2][1]);
    /* A misaligned superpage: PPN[0] not zero in a level-1 leaf. */
    unsigned long mbase = PA(data[0]) & ~(MEGA - 1);
    map(TV_MEGA, mbase + 0x1000, 1, RWAD);
    run(lo_lw, TV_MEGA + 0x40, 1);
    outcome("misaligned megapage: S lw", CAUSE_LOAD_PAGE, TV_MEGA, 0x40);
    run(lo_call, TV_MEGA, 1);
    outcome("misaligned megapage: S call", CAUSE_FETCH_PAGE, TV_MEGA, 0);
    map(TV_MEGA, mbase, 1, RWAD);
    /* A pointer in a level-0 PTE (no level below). */
    set_pte(v2, 0, vm_pointer((const void *)data[2]));
    run(lo_lw, v2, 1);
    outcome("pointer PTE at level 0: S lw", CAUSE_LOAD_PAGE, v2, 0);
}

/* A non-leaf PTE with D, A or U set: reserved ("For non-leaf PTEs, the D, A, and U bits are
 * reserved for future standard use"). */
static void nonleaf_bits(void) {
    unsigned long v = TV;
    map(v, PA(data[1]), 0, RWAD);
    pte_t *l1 = slot(v, 1);
    pte_t ptr = *l1;
    static const struct { unsigned long bit; const char *name; } b[] = {
        {PTE_A, "non-leaf with A: S lw"},
        {PTE_D, "non-leaf with D: S lw"},
        {PTE_U, "non-leaf with U: S lw"},
    };
    for (unsigned k = 0; k < 3; k++) {
        *l1 = ptr | b[k].bit;
        vm_fence();
        run(lo_lw, v, 1);
        outcome(b[k].name, CAUSE_LOAD_PAGE, v, 0);
    }
    *l1 = ptr | PTE_G;
    vm_fence();
    check("non-leaf with G: S lw", run(lo_lw, v, 1), data[1][0]);
    *l1 = ptr;
    vm_fence();
}

/* Fetches: a function copied into a code page, executed through its mapping. */
static void fetches(void) {
    /* li a0, 42; ret at the start of code[0]; li a0, 42 across code[0]'s end into code[1]. */
    code[0][0] = 0x0513; code[0][1] = 0x02a0; code[0][2] = 0x8067; code[0][3] = 0x0000;
    code[0][2047] = 0x0513;
    code[1][0] = 0x02a0; code[1][1] = 0x8067; code[1][2] = 0x0000;
    fence_i();
    unsigned long c0 = TV + 0x10000, c1 = c0 + 0x1000;
    map(c0, PA(code[0]), 0, PTE_V | PTE_R | PTE_X | PTE_A);
    map(c1, PA(code[1]), 0, PTE_V | PTE_R | PTE_X | PTE_A);
    check("X page: S call", run(lo_call, c0, 1), 42);
    check("insn crossing into an X page: S call", run(lo_call, c0 + 4094, 1), 42);
    map(c1, PA(code[1]), 0, 0);
    run(lo_call, c0 + 4094, 1);
    outcome("insn crossing into an unmapped page: S call", CAUSE_FETCH_PAGE, c0, 4094 + 2);
    map(c1, PA(code[1]), 0, PTE_V | PTE_R | PTE_A);
    run(lo_call, c0 + 4094, 1);
    outcome("insn crossing into a page without X: S call", CAUSE_FETCH_PAGE, c0, 4094 + 2);
    map(c0, PA(code[0]), 0, PTE_V | PTE_X | PTE_A);
    check("X only: S call", run(lo_call, c0, 1), 42);
    run(lo_lw, c0, 1);
    outcome("X only: S lw", CAUSE_LOAD_PAGE, c0, 0);
    CSR_SET(mstatus, MSTATUS_MXR);
    check("X only, MXR: S lw", run(lo_lw, c0, 1), 0x02a00513);
    CSR_CLEAR(mstatus, MSTATUS_MXR);
}

/* A word that crosses from a mapped page into the next one. */
static void crossing(void) {
    unsigned long v0 = TV + 0x20000, v1 = v0 + 0x1000;
    map(v0, PA(data[3]), 0, RWAD);
    map(v1, PA(data[1]), 0, RWAD); /* not the physical successor */
    unsigned long want = (data[3][1023] >> 16) | (data[1][0] << 16);
    check("lw across two pages mapped apart: S", run(lo_lw, v0 + 4094, 1) & 0xffffffffu, want);
    map(v1, PA(data[1]), 0, 0);
    run(lo_lw, v0 + 4094, 1);
    outcome("lw crossing into an unmapped page: S", CAUSE_LOAD_PAGE, v0, 4096);
    run(lo_sw, v0 + 4094, 1);
    outcome("sw crossing into an unmapped page: S", CAUSE_STORE_PAGE, v0, 4096);
    check("  and the first page is unchanged", data[3][1023], 0x1000 * 4 + 1023);
}

/* U pages: U-mode needs U; S needs SUM for loads and stores and never fetches them. */
static void user_pages(void) {
    unsigned long vu = TV + 0x3000, vs = TV + 0x4000, cu = TV + 0x5000;
    map(vu, PA(data[1]), 0, RWAD | PTE_U);
    map(vs, PA(data[2]), 0, RWAD);
    map(cu, PA(code[0]), 0, PTE_V | PTE_R | PTE_X | PTE_A | PTE_U);
    run(lo_lw, vu, 1);
    outcome("U page, SUM=0: S lw", CAUSE_LOAD_PAGE, vu, 0);
    run(lo_sw, vu, 1);
    outcome("U page, SUM=0: S sw", CAUSE_STORE_PAGE, vu, 0);
    CSR_SET(mstatus, MSTATUS_SUM);
    check("U page, SUM=1: S lw", run(lo_lw, vu + 4, 1), data[1][1]);
    check("U page, SUM=1: S sw", run(lo_sw, vu + 8, 1), 0);
    check("  stored", data[1][2], 0x5157);
    run(lo_call, cu, 1);
    outcome("U page, SUM=1: S call", CAUSE_FETCH_PAGE, cu, 0);
    CSR_CLEAR(mstatus, MSTATUS_SUM);
    /* U-mode: the identity leaf gets U for the run. */
    ident(1);
    check("U page: U lw", run(lo_lw, vu + 12, 0), data[1][3]);
    check("U page: U call", run(lo_call, cu, 0), 42);
    run(lo_lw, vs, 0);
    outcome("S page: U lw", CAUSE_LOAD_PAGE, vs, 0);
    run(lo_sw, vs + 4, 0);
    outcome("S page: U sw", CAUSE_STORE_PAGE, vs, 4);
    map(cu, PA(code[0]), 0, PTE_V | PTE_X | PTE_A | PTE_U);
    run(lo_lw, cu, 0);
    outcome("U X-only page: U lw", CAUSE_LOAD_PAGE, cu, 0);
    CSR_SET(mstatus, MSTATUS_MXR);
    check("U X-only page, MXR: U lw", run(lo_lw, cu, 0), 0x02a00513);
    CSR_CLEAR(mstatus, MSTATUS_MXR);
    map(cu, PA(code[0]), 0, PTE_V | PTE_R | PTE_X | PTE_A);
    run(lo_call, cu, 0);
    outcome("S code page: U call", CAUSE_FETCH_PAGE, cu, 0);
    ident(0);
}

/* MPRV: M-mode loads and stores translate at MPP's privilege; fetches never. One access with
 * MPRV set and nothing else (the C code around it uses the stack). */
static long mprv_lw(unsigned long a, unsigned long mpp) {
    long v = -1;
    unsigned long set = MSTATUS_MPRV | mpp << 11;
    traps = 0;
    __asm__ volatile("csrc mstatus, %[mpp]\n\t"
                     "csrs mstatus, %[set]\n\t"
                     "lw %[v], 0(%[a])\n\t"
                     "csrc mstatus, %[mprv]"
                     : [v] "+r"(v)
                     : [a] "r"(a), [set] "r"(set), [mpp] "r"(MSTATUS_MPP), [mprv] "r"(MSTATUS_MPRV)
                     : "memory");
    return v;
}

static void mprv(void) {
    unsigned long vs = TV + 0x6000, vu = TV + 0x7000;
    map(vs, PA(data[4]), 0, RWAD);
    map(vu, PA(data[5]), 0, RWAD | PTE_U);
    check("MPRV, MPP=S: M lw of an S page", mprv_lw(vs + 4, 1), data[4][1]);
    outcome("  trap", NO_TRAP, 0, 0);
    mprv_lw(vu, 1);
    outcome("MPRV, MPP=S: M lw of a U page (SUM=0)", CAUSE_LOAD_PAGE, vu, 0);
    CSR_SET(mstatus, MSTATUS_SUM);
    check("MPRV, MPP=S: M lw of a U page (SUM=1)", mprv_lw(vu + 8, 1), data[5][2]);
    CSR_CLEAR(mstatus, MSTATUS_SUM);
    check("MPRV, MPP=U: M lw of a U page", mprv_lw(vu + 4, 0), data[5][1]);
    mprv_lw(vs, 0);
    outcome("MPRV, MPP=U: M lw of an S page", CAUSE_LOAD_PAGE, vs, 0);
    /* MPP = M: no translation, TV is not RAM. */
    mprv_lw(vs, 3);
    outcome("MPRV, MPP=M: M lw of a virtual address", CAUSE_LOAD_ACCESS, vs, 0);
    check("MPRV, MPP=M: M lw of RAM", mprv_lw(PA(&data[4][3]), 3), data[4][3]);
}

/* A and D: the hart sets them. */
static void accessed_dirty(void) {
    unsigned long v = TV + 0x8000;
    pte_t *e = slot(v, 0);
    *e = vm_leaf(PA(data[0]), PTE_V | PTE_R | PTE_W);
    vm_fence();
    check("A=0 D=0: S lw", run(lo_lw, v, 1), data[0][0]);
    check("  then PTE A D", *e & (PTE_A | PTE_D), PTE_A);
    unsigned long old = data[0][1];
    check("A=1 D=0: S lw then sw", run(lo_lw_sw, v + 4, 1), old);
    check("  then PTE A D", *e & (PTE_A | PTE_D), PTE_A | PTE_D);
    *e = vm_leaf(PA(data[0]), PTE_V | PTE_R | PTE_W);
    vm_fence();
    check("A=0 D=0: S sw", run(lo_sw, v + 8, 1), 0);
    check("  then PTE A D", *e & (PTE_A | PTE_D), PTE_A | PTE_D);
    *e = vm_leaf(PA(data[0]), PTE_V | PTE_R | PTE_W);
    vm_fence();
    old = data[0][3];
    check("A=0 D=0: S amoadd.w", run(lo_amo, v + 12, 1), old);
    check("  then PTE A D", *e & (PTE_A | PTE_D), PTE_A | PTE_D);
    *e = vm_leaf(PA(data[0]), PTE_V | PTE_R);
    vm_fence();
    run(lo_sw, v, 1);
    outcome("A=0 R only: S sw (faults)", CAUSE_STORE_PAGE, v, 0);
    check("  then PTE A D (unchanged)", *e & (PTE_A | PTE_D), 0);
    pte_t *c = slot(TV + 0x10000, 0);
    *c = vm_leaf(PA(code[0]), PTE_V | PTE_X);
    vm_fence();
    check("A=0: S call", run(lo_call, TV + 0x10000, 1), 42);
    check("  then PTE A D", *c & (PTE_A | PTE_D), PTE_A);
}

/* sfence.vma: a remapped page is seen after the fence. */
static void fences(void) {
    unsigned long v = TV + 0x9000;
    map(v, PA(data[1]), 0, RWAD);
    check("before remap: S lw", run(lo_lw, v, 1), data[1][0]);
    *slot(v, 0) = vm_leaf(PA(data[2]), RWAD);
    run(lo_fence_va, v, 1); /* sfence.vma v in S */
    check("remapped, sfence.vma va (in S): S lw", run(lo_lw, v, 1), data[2][0]);
    *slot(v, 0) = vm_leaf(PA(data[3]), RWAD);
    vm_fence_asid(CSR_READ(satp) >> (XLEN == 64 ? 44 : 22) & (XLEN == 64 ? 0xffff : 0x1ff));
    check("remapped, sfence.vma x0, asid: S lw", run(lo_lw, v, 1), data[3][0]);
    /* A megapage remapped, fenced by an address inside it (not its first page). */
    unsigned long mbase = PA(data[0]) & ~(MEGA - 1);
    map(TV_MEGA, mbase, 1, RWAD);
    unsigned long off = PA(data[4]) - mbase;
    check("megapage: S lw", run(lo_lw, TV_MEGA + off, 1), data[4][0]);
    *slot(TV_MEGA, 1) = vm_leaf(mbase, RWAD & ~PTE_W);
    vm_fence_va(TV_MEGA + off + 0x1000);
    run(lo_sw, TV_MEGA + off, 1);
    outcome("megapage made read-only, sfence.vma inside: S sw", CAUSE_STORE_PAGE, TV_MEGA, off);
    /* satp with another ASID (the tables are the same): the mapping still applies. */
    unsigned long satp = CSR_READ(satp);
    CSR_WRITE(satp, (satp & ~SATP_ASID(XLEN == 64 ? 0xffff : 0x1ff)) | SATP_ASID(5));
    vm_fence();
    check("ASID 5: S lw", run(lo_lw, v + 4, 1), data[3][1]);
    CSR_WRITE(satp, satp);
    vm_fence();
}

#define NAPOT(base, size) (((unsigned long)(base) >> 2) | (((unsigned long)(size) >> 3) - 1))

/* The level-0 table of TV denied to S by PMP: the walk's PTE read is an access fault of the
 * access's kind, tval the virtual address. */
static void pmp_on_tables(void) {
    unsigned long v = TV + 0xa000;
    map(v, PA(data[1]), 0, RWAD | PTE_X);
    check("PTE readable: S lw", run(lo_lw, v, 1), data[1][0]);
    pte_t *table = (pte_t *)((unsigned long)slot(v, 0) & ~(VM_PAGE - 1));
    CSR_WRITE(pmpaddr0, NAPOT(table, VM_PAGE));
    CSR_WRITE(pmpaddr1, -1l);
    CSR_WRITE(pmpcfg0, 0x18 | 0x1f << 8); /* entry 0 NAPOT no access, entry 1 all RWX */
    vm_fence();
    run(lo_lw, v + 4, 1);
    outcome("PTE read denied by PMP: S lw", CAUSE_LOAD_ACCESS, v, 4);
    run(lo_sw, v + 8, 1);
    outcome("PTE read denied by PMP: S sw", CAUSE_STORE_ACCESS, v, 8);
    run(lo_amo, v + 8, 1);
    outcome("PTE read denied by PMP: S amoadd.w (QEMU: load)", CAUSE_LOAD_ACCESS, v, 8);
    run(lo_call, v, 1);
    outcome("PTE read denied by PMP: S call", CAUSE_FETCH_ACCESS, v, 0);
    /* The page itself denied: the final address is checked at the access's privilege. */
    CSR_WRITE(pmpaddr0, NAPOT(data[1], VM_PAGE));
    vm_fence();
    run(lo_lw, v + 12, 1);
    outcome("page denied by PMP: S lw", CAUSE_LOAD_ACCESS, v, 12);
    pmp_open_all();
    vm_fence();
    check("PMP open again: S lw", run(lo_lw, v + 12, 1), data[1][3]);
}

int main(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    pmp_open_all();
    fill_data();
    satp_warl();
#if XLEN == 64
    build(VM_SV39, 0);
    walks("Sv39");
#else
    build(VM_SV32, 0);
    walks("Sv32");
#endif
    faults();
    nonleaf_bits();
    fetches();
    crossing();
    user_pages();
    mprv();
    accessed_dirty();
    fences();
    pmp_on_tables();
#if XLEN == 64
    build(VM_SV48, 3);
    walks("Sv48");
    build(VM_SV57, 4);
    walks("Sv57");
#endif
    CSR_WRITE(satp, 0);
    printf("%s (%d failures)\n", fails ? "FAIL" : "PASS", fails);
    return fails != 0;
}
