/* Control Transfer Records (Smctr/Ssctr v1.0) across privilege modes: the WARL masks of the
 * CTR CSRs, recording in U and S with M-mode handlers under many mctrctl settings ("Privilege
 * Mode Transitions": source or target 0; "External Traps": U->M needs MTE and STE, U->S STE,
 * S->M MTE, whatever EXCINH/INTRINH say; an MSI from U), traps delegated to S and sret,
 * freeze on a Sscofpmf overflow interrupt delegated to S (LCOFIFRZ) and none when S only
 * polls sip, sctrctl as S-mode's view of
 * mctrctl (M and MTE read-only 0). mstateen0 opens CTR and CSRIND to S-mode (ctr_stateen
 * closes them). Entries are printed (ctr.h); the expected output is QEMU 10's (see ctr_m.c). */
#include "ctr.h"

#define CAUSE_ECALL_U_BIT (1ul << CAUSE_ECALL_U)

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)vec;
    if (cause == CAUSE_ILLEGAL) {
        illegal++;
        return epc + 4; /* every probed instruction is 4 bytes */
    }
    if ((cause == CAUSE_ECALL_U || cause == CAUSE_ECALL_S) && f->a7 == SYS_LEAVE)
        return 0;
    printf("FAIL unexpected M trap cause %lx at %lx\n", cause, epc);
    return epc + insn_len(epc);
}

unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)f;
    (void)vec;
    printf("FAIL unexpected S trap cause %lx at %lx\n", cause, epc);
    return epc + insn_len(epc);
}

/* 1. Write masks (from M). */
static void masks(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    PROBE("mctrctl", CSR_MCTRCTL);
    PROBE("sctrctl", CSR_SCTRCTL);
    PROBE("sctrdepth", CSR_SCTRDEPTH);
    PROBE("sctrstatus", CSR_SCTRSTATUS);
    PROBE("siselect", CSR_SISELECT);
    ctr_reset(0);
}

/* 2. Transitions: mret from M into a lower-mode body (ctr_regions.S), which ends by trapping
 * to M (ctr_mleave stops recording first). */
struct transition {
    const char *what;
    unsigned long ctl;
    void (*fn)(void);
    unsigned long mode;
    int deleg; /* medeleg: ecall from U to S */
};

static const struct transition transitions[] = {
    { "U|S, U body", CTL_U | CTL_S, u_body, 0, 0 },
    { "M, U body", CTL_M, u_body, 0, 0 },
    { "U|M, U body", CTL_U | CTL_M, u_body, 0, 0 },
    { "U|STE, U body", CTL_U | CTL_STE, u_body, 0, 0 },
    { "U|MTE, U body", CTL_U | CTL_MTE, u_body, 0, 0 },
    { "U|STE|MTE, U body", CTL_U | CTL_STE | CTL_MTE, u_body, 0, 0 },
#if __riscv_xlen == 64
    { "U|STE|MTE|EXCINH, U body", CTL_U | CTL_STE | CTL_MTE | CTL_FILTER(1), u_body, 0, 0 },
    { "U|M|EXCINH, U body", CTL_U | CTL_M | CTL_FILTER(1), u_body, 0, 0 },
    { "U|M|TRETINH, U body", CTL_U | CTL_M | CTL_FILTER(3), u_body, 0, 0 },
#endif
    { "S, S body", CTL_S, s_body, 1, 0 },
    { "S|MTE, S ecall", CTL_S | CTL_MTE, s_ecall, 1, 0 },
    { "S, S ecall", CTL_S, s_ecall, 1, 0 },
    { "S|STE, S ecall", CTL_S | CTL_STE, s_ecall, 1, 0 },
    { "U|S, U ecall to S", CTL_U | CTL_S, u_ecall, 0, 1 },
    { "U, U ecall to S", CTL_U, u_ecall, 0, 1 },
    { "U|STE, U ecall to S", CTL_U | CTL_STE, u_ecall, 0, 1 },
    { "S, U ecall to S", CTL_S, u_ecall, 0, 1 },
    { "U|S, U ecall to M", CTL_U | CTL_S, u_ecall, 0, 0 },
    { "U|S|STE|MTE, U ecall to M", CTL_U | CTL_S | CTL_STE | CTL_MTE, u_ecall, 0, 0 },
    { "U|M, U MSI", CTL_U | CTL_M, u_msi, 0, 0 },
    { "U|STE|MTE, U MSI", CTL_U | CTL_STE | CTL_MTE, u_msi, 0, 0 },
#if __riscv_xlen == 64
    { "U|STE|MTE|INTRINH, U MSI", CTL_U | CTL_STE | CTL_MTE | CTL_FILTER(2), u_msi, 0, 0 },
    { "U|M|INTRINH, U MSI", CTL_U | CTL_M | CTL_FILTER(2), u_msi, 0, 0 },
#endif
    { "U|S, S sret to U", CTL_U | CTL_S, s_sret_u, 1, 0 },
    { "S, S sret to U", CTL_S, s_sret_u, 1, 0 },
    { "U, S sret to U", CTL_U, s_sret_u, 1, 0 },
};

static void transitions_run(void) {
    CSR_WRITE(stvec, ctr_shandler);
    CSR_SET(mie, 1ul << IRQ_MSI); /* u_msi's interrupt (mstatus.MIE stays clear in M) */
    for (unsigned i = 0; i < sizeof transitions / sizeof transitions[0]; i++) {
        const struct transition *t = &transitions[i];
        ctr_reset(0);
        CSRW_I(CSR_MEDELEG, t->deleg ? CAUSE_ECALL_U_BIT : 0);
        CSR_WRITE(mtvec, ctr_mleave);
        ctr_enter(t->ctl, t->fn, t->mode);
        CSR_WRITE(mtvec, m_trap_entry);
        CSRW_I(CSR_MEDELEG, 0);
        *(volatile uint32_t *)CLINT_MSIP = 0;
        ctr_dump(t->what, 7);
    }
}

/* 3. Freeze on an LCOFI delegated to S ("Freeze": a trap to M-mode or to S-mode); an LCOFI seen
 * only in sip (never trapped) does not freeze. Counter 3 (INSTRUCTIONS) wraps in M before the
 * mret (counting stopped again), so LCOFIP is pending when S sets SIE. */
static void lcofi_s(void) {
    static const struct { const char *what; unsigned long ctl; void (*fn)(void); } cases[] = {
        { "S|LCOFIFRZ, LCOFI to S", CTL_S | CTL_LCOFIFRZ, s_lcofi },
        { "S, LCOFI to S", CTL_S, s_lcofi },
        { "S|LCOFIFRZ, LCOFI only seen in sip", CTL_S | CTL_LCOFIFRZ, s_lcofi_poll },
    };
    CSR_WRITE(stvec, ctr_shandler);
    CSR_SET(mideleg, MIP_LCOFIP);
    CSR_SET(mie, MIP_LCOFIP);
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        STOP_ALL();
        evt_set(3, EV_INSTRUCTIONS, 0); /* clears OF */
        ctr_write(3, -10ull);
        RUN_ALL();
        __asm__ volatile(".rept 12\n\tnop\n\t.endr" ::: "memory");
        STOP_ALL();
        ctr_reset(0);
        CSR_CLEAR(mstatus, MSTATUS_SIE); /* (an earlier sret into U may have set it) */
        CSR_WRITE(mtvec, ctr_mleave);
        ctr_enter(cases[i].ctl, cases[i].fn, 1);
        CSR_WRITE(mtvec, m_trap_entry);
        printf("%s: sip.LCOFIP %d after\n", cases[i].what, (CSR_READ(mip) & MIP_LCOFIP) != 0);
        ctr_dump(cases[i].what, 8);
    }
    evt_set(3, 0, 0);
    CSR_CLEAR(mie, MIP_LCOFIP);
    CSR_CLEAR(mideleg, MIP_LCOFIP);
}

/* 3. sctrctl from S: a view of mctrctl without M and MTE. */
static unsigned long seen[4];

static long s_view(long arg) {
    seen[0] = CSRR_I(CSR_SCTRCTL);
    CSRW_I(CSR_SCTRCTL, ~0ul);
    seen[1] = CSRR_I(CSR_SCTRCTL);
    CSRW_I(CSR_SCTRCTL, 0);
    seen[2] = CSRR_I(CSR_SCTRCTL);
    return arg;
}

static void view(void) {
    ctr_reset(0);
    /* Everything but the mode enables (nothing recorded). */
    CSRW_I(CSR_MCTRCTL, ~(CTL_U | CTL_S | CTL_M));
    unsigned long m0 = CSRR_I(CSR_MCTRCTL);
    m_enter(0, s_view, 1);
    unsigned long m1 = CSRR_I(CSR_MCTRCTL);
    CSRW_I(CSR_MCTRCTL, 0);
    printf("mctrctl %0*lx: S reads sctrctl %0*lx, writes ones, reads %0*lx, writes 0, reads %0*lx; "
           "mctrctl then %0*lx\n", W, m0, W, seen[0], W, seen[1], W, seen[2], W, m1);
}

int main(void) {
    CSR_CLEAR(mstatus, MSTATUS_MIE);
    pmp_open_all();
    CSRW_I(CSR_STATEEN_HI, STATEEN_CTR | STATEEN_CSRIND);
    masks();
    transitions_run();
    lcofi_s();
    view();
    ctr_reset(0);
    printf("ctr_su done\n");
    return 0;
}
