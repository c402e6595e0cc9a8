/* The PLIC and the 16550's interrupt on QEMU virt, as M-mode software sees them: register values
 * after reset (16550: IER, IIR, LCR, MCR, LSR, MSR, SCR, the divisor latch; PLIC: priority,
 * pending, enables, thresholds, claim), what the PLIC registers keep of all-ones writes
 * (priority bits, enable bit 0, a threshold above 7), and the 16550's THR-empty interrupt on
 * source 10 through context 0 (M): IIR, the pending bit, MEIP, a claim, the IIR read that
 * acknowledges it, completion, a threshold that masks it, and the interrupt taken in M with
 * mstatus.MIE. No byte is transmitted (QEMU's serial output must stay empty). Printed, not
 * self-checked: the expected output is QEMU's. */
#include <stdio.h>
#include "rvtest.h"

#define UART(r) (((volatile uint8_t *)0x10000000)[r])
#define PLIC(off) (*(volatile uint32_t *)(0x0c000000ul + (off)))
#define PRIO(n) PLIC(4 * (n))
#define PENDING PLIC(0x1000)
#define ENABLE(ctx) PLIC(0x2000 + 0x80 * (ctx))
#define THRESHOLD(ctx) PLIC(0x200000 + 0x1000 * (ctx))
#define CLAIM(ctx) PLIC(0x200004 + 0x1000 * (ctx))
#define IRQ_MEI 11
#define UART_IRQ 10

static volatile int taken, claimed_in_trap;

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)f; (void)vec;
    if (cause == (CAUSE_IRQ | IRQ_MEI)) {
        taken++;
        claimed_in_trap = CLAIM(0);
        UART(1) = 0;                         /* IER off: the line drops */
        CLAIM(0) = claimed_in_trap;
        return epc;
    }
    printf("unexpected trap cause %lx at %lx\n", cause, epc);
    return epc + insn_len(epc);
}
unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)cause; (void)f; (void)vec;
    return epc + 4;
}

static int meip(void) { return (CSR_READ(mip) >> IRQ_MEI) & 1; }

int main(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    printf("uart reset: ier %02x iir %02x lcr %02x mcr %02x lsr %02x msr %02x scr %02x\n",
           UART(1), UART(2), UART(3), UART(4), UART(5), UART(6), UART(7));
    UART(3) = 0x80;
    printf("uart divisor %02x%02x\n", UART(1), UART(0));
    UART(3) = 0x03;
    printf("plic reset: prio10 %x pending %x enable0 %x enable1 %x threshold %x %x claim %x %x\n",
           PRIO(UART_IRQ), PENDING, ENABLE(0), ENABLE(1), THRESHOLD(0), THRESHOLD(1), CLAIM(0),
           CLAIM(1));

    PRIO(UART_IRQ) = 0xffffffffu;
    PRIO(0) = 0xffffffffu;
    ENABLE(1) = 0xffffffffu;
    THRESHOLD(1) = 8;
    printf("plic writes: prio10 %x prio0 %x enable1 %x threshold1 %x\n", PRIO(UART_IRQ), PRIO(0),
           ENABLE(1), THRESHOLD(1));
    ENABLE(1) = 0;
    THRESHOLD(1) = 7;
    printf("plic threshold1 %x\n", THRESHOLD(1));
    THRESHOLD(1) = 0;

    PRIO(UART_IRQ) = 1;
    ENABLE(0) = 1u << UART_IRQ;
    printf("before ier: iir %02x pending %x meip %d\n", UART(2), PENDING, meip());
    UART(1) = 0x02;                          /* THR is empty: its interrupt is raised */
    printf("ier thre: pending %x meip %d\n", PENDING, meip());
    unsigned c = CLAIM(0);
    printf("claim %u: pending %x meip %d claim again %u\n", c, PENDING, meip(), CLAIM(0));
    printf("iir %02x then %02x\n", UART(2), UART(2));
    CLAIM(0) = c;
    printf("complete: pending %x meip %d\n", PENDING, meip());
    UART(1) = 0;
    UART(1) = 0x02;                          /* raised again */
    printf("ier off/on: iir %02x pending %x meip %d\n", UART(2), PENDING, meip());
    UART(1) = 0;
    UART(1) = 0x02;
    THRESHOLD(0) = 1;
    printf("threshold 1: pending %x meip %d\n", PENDING, meip());
    THRESHOLD(0) = 0;
    UART(2) = 0x01;                          /* FIFOs on */
    printf("fifo: iir %02x\n", UART(2));

    CSR_WRITE(mie, 1ul << IRQ_MEI);
    CSR_SET(mstatus, MSTATUS_MIE);           /* taken right after this */
    CSR_CLEAR(mstatus, MSTATUS_MIE);
    printf("trap: taken %d claimed %d pending %x meip %d\n", taken, claimed_in_trap, PENDING,
           meip());
    CSR_WRITE(mie, 0);
    UART(2) = 0;
    PRIO(UART_IRQ) = 0;
    ENABLE(0) = 0;
    return 0;
}
