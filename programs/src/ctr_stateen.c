/* Control Transfer Records (Ssctr v1.0) and Smstateen ("State Enable Access Control"): with
 * mstateen0.CTR = 0, S-mode accesses to sctrctl, sctrstatus, sctrdepth, to sireg* while siselect
 * is in 0x200..0x2FF, and SCTRCLR raise illegal instruction, while qualified transfers go on
 * being recorded; with it 1 they work. U-mode never has access. mstateen0.CSRIND (bit 60; RV32
 * mstateen0h bit 28) opens siselect/sireg* (Sscsrind). Printed per access: which trapped; then
 * what was recorded meanwhile. QEMU 10 differs from the spec here (programs/README.md, "QEMU
 * and CTR"): the expected output is QEMU's corrected by qemu-to-spec.awk. */
#include "ctr.h"

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

static const char *const ops[] = { "sctrctl", "sctrstatus", "sctrdepth", "siselect", "sireg",
                                   "sireg2", "sireg3", "sireg4", "sctrclr" };
#define NOPS (sizeof ops / sizeof ops[0])
static int trapped[NOPS];

#define TRY(k, stmt)                                                                           \
    do {                                                                                       \
        int before_ = illegal;                                                                 \
        stmt;                                                                                  \
        trapped[k] = illegal != before_;                                                       \
    } while (0)

static long lower_access(long arg) {
    TRY(0, (void)CSRR_I(CSR_SCTRCTL));
    TRY(1, (void)CSRR_I(CSR_SCTRSTATUS));
    TRY(2, (void)CSRR_I(CSR_SCTRDEPTH));
    TRY(3, CSRW_I(CSR_SISELECT, 0x200));
    TRY(4, (void)CSRR_I(CSR_SIREG));
    TRY(5, (void)CSRR_I(CSR_SIREG2));
    TRY(6, (void)CSRR_I(CSR_SIREG3));
    TRY(7, (void)CSRR_I(CSR_SIREG4));
    TRY(8, SCTRCLR());
    return u_work(arg);
}

static void access(const char *what, unsigned long mode, unsigned long ctl) {
    ctr_reset(0);
    CSRW_I(CSR_MCTRCTL, ctl);
    illegal = 0;
    m_enter(3, lower_access, mode);
    CSRW_I(CSR_MCTRCTL, 0);
    printf("%s: illegal", what);
    for (unsigned k = 0; k < NOPS; k++)
        if (trapped[k])
            printf(" %s", ops[k]);
    printf("\n");
    ctr_types("  recorded meanwhile", 16);
}

static void stateen(void) {
    unsigned long on = STATEEN_CTR | STATEEN_CSRIND;
    CSR_WRITE(mtvec, m_trap_entry);
    CSRW_I(CSR_STATEEN_HI, on);
    unsigned long got = CSRR_I(CSR_STATEEN_HI);
    printf("mstateen0 CTR and CSRIND written, read back: CTR %d CSRIND %d\n", (got & STATEEN_CTR) != 0,
           (got & STATEEN_CSRIND) != 0);
    access("S, mstateen0.CTR=1", 1, CTL_S);
    access("U, mstateen0.CTR=1", 0, CTL_U);
    CSRW_I(CSR_STATEEN_HI, STATEEN_CSRIND);
    printf("mstateen0.CTR cleared: %s\n", CSRR_I(CSR_STATEEN_HI) & STATEEN_CTR ? "still set" : "clear");
    access("S, mstateen0.CTR=0", 1, CTL_S);
    access("U, mstateen0.CTR=0", 0, CTL_U);
    CSRW_I(CSR_STATEEN_HI, STATEEN_CTR);
    access("S, mstateen0.CSRIND=0", 1, CTL_S);
    /* M-mode is not affected. */
    printf("M reads sctrstatus: wrptr %lu\n", CSRR_I(CSR_SCTRSTATUS) & 0xff);
    CSRW_I(CSR_STATEEN_HI, on);
}

int main(void) {
    CSR_CLEAR(mstatus, MSTATUS_MIE);
    pmp_open_all();
    stateen();
    ctr_reset(0);
    printf("ctr_stateen done\n");
    return 0;
}
