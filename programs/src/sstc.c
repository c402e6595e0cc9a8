/* Sstc (privileged ISA, "Sstc" Extension for Supervisor-mode Timer Interrupts) on QEMU 7.2's
 * default CPU: stimecmp (and RV32 stimecmph) reset value and WARL, menvcfg.STCE, the S-mode access
 * rule (mcounteren.TM and menvcfg.STCE both needed, U never), STIP driven by stimecmp and
 * read-only in mip while STCE is 1, software-writable again once STCE is 0, a delegated STI
 * taken in S at the instruction after sstatus.SIE is set, a non-delegated one in M, and wfi woken
 * by the timer. Self-checking; every check prints.
 *
 * Left out on purpose: M-mode writes of stimecmp while STCE is 0. The spec says STIP then
 * "reverts to its defined behavior as if this extension is not implemented"; QEMU 7.2 drives
 * STIP from such writes anyway (crates/sim/README.md, "Sstc"). */
#include <stdio.h>
#include "rvtest.h"

#define STCE_WORD (1ul << (__riscv_xlen == 64 ? 63 : 31))
#define MIP_STIP (1ul << IRQ_STI)
#define MCOUNTEREN_TM 2ul

static int fails;
static void check(const char *what, unsigned long got, unsigned long want) {
    printf("%-44s %lx%s\n", what, got, got == want ? "" : "  FAIL");
    if (got != want) {
        printf("  want %lx\n", want);
        fails++;
    }
}

static void stce(int on) {
#if __riscv_xlen == 64
    if (on) CSR_SET(0x30a, STCE_WORD); else CSR_CLEAR(0x30a, STCE_WORD);
#else
    if (on) CSR_SET(0x31a, STCE_WORD); else CSR_CLEAR(0x31a, STCE_WORD);
#endif
}

static void stimecmp_write(uint64_t v) {
#if __riscv_xlen == 64
    __asm__ volatile("csrw 0x14d, %0" :: "r"(v));
#else
    /* Interrupts are off wherever this runs: a match between the two writes does no harm. */
    __asm__ volatile("csrw 0x14d, %0" :: "r"((uint32_t)v));
    __asm__ volatile("csrw 0x15d, %0" :: "r"((uint32_t)(v >> 32)));
#endif
}

static uint64_t stimecmp_read(void) {
    unsigned long lo;
    __asm__ volatile("csrr %0, 0x14d" : "=r"(lo));
#if __riscv_xlen == 64
    return lo;
#else
    unsigned long hi;
    __asm__ volatile("csrr %0, 0x15d" : "=r"(hi));
    return (uint64_t)hi << 32 | lo;
#endif
}

static volatile unsigned long traps, last_cause, s_irqs, m_irqs;

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)vec;
    traps++;
    last_cause = cause;
    if (cause == (CAUSE_IRQ | IRQ_STI)) {
        m_irqs++;
        stimecmp_write(~0ull);                    /* STIP clears: taken once */
        return epc;
    }
    if ((cause == CAUSE_ECALL_U || cause == CAUSE_ECALL_S) && f->a7 == SYS_LEAVE) return 0;
    return epc + insn_len(epc);
}

unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)vec; (void)f;
    if (cause == (CAUSE_IRQ | IRQ_STI)) {
        s_irqs++;
        __asm__ volatile("csrw 0x14d, %0" :: "r"(-1l));
#if __riscv_xlen == 32
        __asm__ volatile("csrw 0x15d, %0" :: "r"(-1l));
#endif
        return epc;
    }
    return epc + insn_len(epc);
}

/* Below M: read stimecmp; the trap cause (negated) when it is not accessible. */
static long lower_read(long arg) {
    (void)arg;
    traps = 0;
    unsigned long v;
    __asm__ volatile("csrr %0, 0x14d" : "=r"(v));
    return traps ? -(long)last_cause : (long)(v & 0xfff);
}

/* In S: arm the timer as already due, then open sstatus.SIE: the STI comes right after. */
static long s_due(long arg) {
    (void)arg;
    __asm__ volatile("csrw 0x14d, zero");
#if __riscv_xlen == 32
    __asm__ volatile("csrw 0x15d, zero");
#endif
    CSR_SET(sstatus, MSTATUS_SIE);
    CSR_CLEAR(sstatus, MSTATUS_SIE);
    return (long)(CSR_READ(sip) & MIP_STIP);
}

int main(void) {
    pmp_open_all();
    CSR_WRITE(mtvec, m_trap_entry);
    CSR_WRITE(stvec, s_trap_entry);

    check("reset stimecmp", (unsigned long)stimecmp_read(), 0);
    check("reset mip.STIP", CSR_READ(mip) & MIP_STIP, 0);
    CSR_WRITE(0x30a, -1l);
    check("menvcfg all ones", CSR_READ(0x30a), __riscv_xlen == 64 ? 0xc0000000000000f1ul : 0xf1);
#if __riscv_xlen == 32
    CSR_WRITE(0x31a, -1l);
    check("menvcfgh all ones", CSR_READ(0x31a), 0xc0000000ul);
    CSR_WRITE(0x31a, 0);
#endif
    CSR_WRITE(0x30a, 0);
    stimecmp_write(0x123456789abcull);
    check("stimecmp holds 64 bits", (unsigned long)(stimecmp_read() >> 16), 0x12345678ul);

    /* S-mode access: TM and STCE both needed; U never (an S-level CSR). */
    const long illegal = -CAUSE_ILLEGAL;
    CSR_WRITE(mcounteren, 0);
    check("S read, TM=0 STCE=0", (unsigned long)m_enter(0, lower_read, 1), (unsigned long)illegal);
    CSR_WRITE(mcounteren, MCOUNTEREN_TM);
    check("S read, TM=1 STCE=0", (unsigned long)m_enter(0, lower_read, 1), (unsigned long)illegal);
    stce(1);
    check("S read, TM=1 STCE=1", (unsigned long)m_enter(0, lower_read, 1), 0xabc);
    check("U read, TM=1 STCE=1", (unsigned long)m_enter(0, lower_read, 0), (unsigned long)illegal);
    CSR_WRITE(mcounteren, 0);
    check("S read, TM=0 STCE=1", (unsigned long)m_enter(0, lower_read, 1), (unsigned long)illegal);
    CSR_WRITE(mcounteren, MCOUNTEREN_TM);

    /* STCE=1: STIP is the comparison, read-only in mip. */
    stimecmp_write(0);
    check("STCE=1, stimecmp 0: STIP", CSR_READ(mip) & MIP_STIP, MIP_STIP);
    CSR_CLEAR(mip, MIP_STIP);
    check("  csrc mip.STIP ignored", CSR_READ(mip) & MIP_STIP, MIP_STIP);
    stimecmp_write(~0ull);
    check("STCE=1, stimecmp max: STIP", CSR_READ(mip) & MIP_STIP, 0);
    CSR_SET(mip, MIP_STIP);
    check("  csrs mip.STIP ignored", CSR_READ(mip) & MIP_STIP, 0);

    /* STCE=0 (timer not due): STIP is software's bit again. */
    stce(0);
    CSR_SET(mip, MIP_STIP);
    check("STCE=0: csrs mip.STIP", CSR_READ(mip) & MIP_STIP, MIP_STIP);
    CSR_CLEAR(mip, MIP_STIP);
    check("STCE=0: csrc mip.STIP", CSR_READ(mip) & MIP_STIP, 0);
    stce(1);

    /* Delegated: taken in S right after the csrs that sets SIE. */
    CSR_WRITE(mideleg, MIP_STIP);
    CSR_WRITE(mie, MIP_STIP);
    s_irqs = 0;
    check("S: sip.STIP after the handler", (unsigned long)m_enter(0, s_due, 1), 0);
    check("S: interrupts taken in S", s_irqs, 1);

    /* Not delegated: taken in M. */
    CSR_WRITE(mideleg, 0);
    m_irqs = 0;
    stimecmp_write(0);
    CSR_SET(mstatus, MSTATUS_MIE);
    CSR_CLEAR(mstatus, MSTATUS_MIE);
    check("M: interrupts taken in M", m_irqs, 1);
    check("M: mcause", last_cause, CAUSE_IRQ | IRQ_STI);

    /* wfi with MIE=0 wakes when time reaches stimecmp; the interrupt is then taken in M. */
    m_irqs = 0;
    uint64_t now = stimecmp_read();          /* max after the handler */
    check("after the handler: stimecmp max", (unsigned long)(now >> 32), 0xfffffffful);
    {
        unsigned long lo;
        __asm__ volatile("csrr %0, time" : "=r"(lo));
        now = lo;
#if __riscv_xlen == 32
        unsigned long hi;
        __asm__ volatile("csrr %0, timeh" : "=r"(hi));
        now |= (uint64_t)hi << 32;
#endif
    }
    stimecmp_write(now + 1000);
    __asm__ volatile("wfi");
    check("wfi woke with STIP", CSR_READ(mip) & MIP_STIP, MIP_STIP);
    CSR_SET(mstatus, MSTATUS_MIE);
    CSR_CLEAR(mstatus, MSTATUS_MIE);
    check("wfi: interrupts taken in M", m_irqs, 1);

    CSR_WRITE(mie, 0);
    printf("sstc fails=%d\n", fails);
    return fails;
}
