/* Machine-mode interrupts from the QEMU virt CLINT, with deterministic interrupt points:
 * timer (MTI) woken from wfi with mstatus.MIE=0 and taken right after the csrs that sets MIE,
 * timer taken right after a wfi with MIE=1 (epc = wfi+4), timer already due before MIE is set,
 * software interrupt (MSI) via CLINT msip, MSI and MTI pending together (priority, back-to-back
 * after mret), interrupts taken in U-mode right after mret and right after a U-mode store to
 * msip, mtvec in direct and in vectored mode (slot = cause). Self-checking. */
#include <stdio.h>
#include "rvtest.h"

struct event { unsigned char cause, irq, from; signed char vec; };
static struct event events[64];
static int nevents;

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    unsigned from = (CSR_READ(mstatus) >> 11) & 3;
    int irq = (cause & CAUSE_IRQ) != 0;
    cause &= ~CAUSE_IRQ;
    if (nevents < 64) events[nevents++] = (struct event){ (unsigned char)cause, (unsigned char)irq, (unsigned char)from, (signed char)vec };
    if (irq) {
        if (cause == IRQ_MTI) timer_set(~0ull);          /* no further timer interrupt */
        else if (cause == IRQ_MSI) *CLINT_MSIP = 0;
        return epc;                                      /* interrupts resume at epc */
    }
    if ((cause == CAUSE_ECALL_U || cause == CAUSE_ECALL_M) && f->a7 == SYS_LEAVE) return 0;
    return epc + insn_len(epc);
}
unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)cause; (void)f; (void)vec;
    return epc + 4; /* not used: nothing is delegated */
}

/* CLINT clock: 10 MHz. With MIE=0 the wfi only has to wake up, so any delay will do; with MIE=1
 * the interrupt must not come before the wfi, 3 instructions later: 0.5 s of QEMU (real) time. */
#define SHORT_DELTA 1000
#define SAFE_DELTA 5000000

static void wfi_then_enable(void) {
    CSR_CLEAR(mstatus, MSTATUS_MIE);
    CSR_WRITE(mie, 1ul << IRQ_MTI);
    timer_set(timer_now() + SHORT_DELTA);
    __asm__ volatile("wfi");                           /* wakes on the pending MTI, MIE=0: no trap */
    CSR_SET(mstatus, MSTATUS_MIE);                     /* the interrupt is taken right after this */
    CSR_CLEAR(mstatus, MSTATUS_MIE);
}

static void wfi_enabled(void) {
    CSR_WRITE(mie, 1ul << IRQ_MTI);
    timer_set(timer_now() + SAFE_DELTA);
    CSR_SET(mstatus, MSTATUS_MIE);
    __asm__ volatile("wfi");                           /* trap with mepc = wfi + 4 */
    CSR_CLEAR(mstatus, MSTATUS_MIE);
}

static void timer_due(void) {
    CSR_WRITE(mie, 1ul << IRQ_MTI);
    timer_set(0);                                      /* already due: MTIP is set */
    CSR_SET(mstatus, MSTATUS_MIE);                     /* taken right after this */
    CSR_CLEAR(mstatus, MSTATUS_MIE);
}

static void software(void) {
    CSR_WRITE(mie, 1ul << IRQ_MSI);
    *CLINT_MSIP = 1;
    CSR_SET(mstatus, MSTATUS_MIE);                     /* taken right after this */
    CSR_CLEAR(mstatus, MSTATUS_MIE);
}

static void both_pending(void) {
    CSR_WRITE(mie, (1ul << IRQ_MTI) | (1ul << IRQ_MSI));
    timer_set(0);
    *CLINT_MSIP = 1;
    CSR_SET(mstatus, MSTATUS_MIE);                     /* MSI first, then MTI right after its mret */
    CSR_CLEAR(mstatus, MSTATUS_MIE);
}

static long user_poke(long arg) {
    *CLINT_MSIP = 1;                                   /* M interrupts are always enabled in U */
    return arg + 1;
}
static long user_plain(long arg) { return arg * 2; }

static void in_user(void) {
    CSR_WRITE(mie, 1ul << IRQ_MTI);
    timer_set(0);                                      /* pending, MIE=0: taken after the mret */
    long r = m_enter(20, user_plain, 0);
    CSR_WRITE(mie, 1ul << IRQ_MSI);
    r += m_enter(1, user_poke, 0);
    if (r != 42) printf("FAIL user results %ld\n", r);
}

#define M 3
#define U 0
static const struct event want[] = {
    /* direct */
    {7, 1, M, -1}, {7, 1, M, -1}, {7, 1, M, -1}, {3, 1, M, -1}, {3, 1, M, -1}, {7, 1, M, -1},
    {7, 1, U, -1}, {8, 0, U, -1}, {3, 1, U, -1}, {8, 0, U, -1},
    /* vectored */
    {7, 1, M, 7}, {7, 1, M, 7}, {7, 1, M, 7}, {3, 1, M, 3}, {3, 1, M, 3}, {7, 1, M, 7},
    {7, 1, U, 7}, {8, 0, U, 0}, {3, 1, U, 3}, {8, 0, U, 0}, {11, 0, M, 0},
};

int main(void) {
    int fails = 0;
    pmp_open_all();
    timer_set(~0ull);
    for (int vectored = 0; vectored < 2; vectored++) {
        CSR_WRITE(mtvec, vectored ? (unsigned long)m_vector_table | 1 : (unsigned long)m_trap_entry);
        wfi_then_enable();
        wfi_enabled();
        timer_due();
        software();
        both_pending();
        in_user();
    }
    __asm__ volatile("ecall");                         /* exceptions use slot 0 */
    CSR_WRITE(mie, 0);
    CSR_WRITE(mtvec, m_trap_entry);

    int nwant = sizeof want / sizeof want[0];
    for (int i = 0; i < nevents; i++)
        printf("trap %2d: %s %u from %c vec %d\n", i, events[i].irq ? "interrupt" : "exception",
               events[i].cause, "US?M"[events[i].from], events[i].vec);
    if (nevents != nwant) { printf("FAIL %d traps, want %d\n", nevents, nwant); fails++; }
    for (int i = 0; i < nevents && i < nwant; i++)
        if (events[i].cause != want[i].cause || events[i].irq != want[i].irq || events[i].from != want[i].from ||
            events[i].vec != want[i].vec) {
            printf("FAIL trap %d: want %u/%u from %c vec %d\n", i, want[i].irq, want[i].cause, "US?M"[want[i].from], want[i].vec);
            fails++;
        }
    printf("timer fails=%d\n", fails);
    return fails;
}
