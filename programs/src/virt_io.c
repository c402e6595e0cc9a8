/* What QEMU virt's devices without a driver answer, as M-mode software sees them (issue 32 item
 * 2: the model answers as QEMU does, so firmware behaves the same): the PCIe host bridge's ECAM
 * (the configuration header of 00:00.0, the all-ones of an absent function, what a write to a
 * read-only identifier leaves), the PCIe PIO and MMIO windows with no device (low and high, the
 * high one where OpenSBI 1.1 reads out of range), and the goldfish RTC (its alarm registers,
 * that TIME advances, its alarm's interrupt on PLIC source 11 waking wfi; the time itself is the
 * host's under QEMU). Printed, not self-checked:
 * the expected output is QEMU's. */
#include <stdio.h>
#include <stdint.h>

#define ECAM 0x30000000ul
#define CFG(bus, dev, fn, off) \
    (*(volatile uint32_t *)(ECAM + ((bus) << 20) + ((dev) << 15) + ((fn) << 12) + (off)))
#define RTC(off) (*(volatile uint32_t *)(0x101000ul + (off)))
#define PLIC(off) (*(volatile uint32_t *)(0x0c000000ul + (off)))

static uint32_t rd32(uintptr_t a) { return *(volatile uint32_t *)a; }
static uint8_t rd8(uintptr_t a) { return *(volatile uint8_t *)a; }

int main(void) {
    printf("ecam 00:00.0:");
    for (int off = 0; off < 0x40; off += 4)
        printf(" %08lx", (unsigned long)CFG(0, 0, 0, off));
    printf("\n");
    printf("ecam 00:00.0 cap 0x40 %08lx 0x100 %08lx\n", (unsigned long)CFG(0, 0, 0, 0x40),
           (unsigned long)CFG(0, 0, 0, 0x100));
    printf("ecam absent: 00:01.0 %08lx 00:00.1 %08lx 01:00.0 %08lx byte %02x\n",
           (unsigned long)CFG(0, 1, 0, 0), (unsigned long)CFG(0, 0, 1, 0),
           (unsigned long)CFG(1, 0, 0, 0), rd8(ECAM + (1 << 15)));
    CFG(0, 0, 0, 4) = 0xffffffff;
    printf("ecam 00:00.0 command/status after all-ones %08lx\n", (unsigned long)CFG(0, 0, 0, 4));
    CFG(0, 0, 0, 4) = 0;
    /* Which bits keep an all-ones write (QEMU's write masks), then zeros written back. */
    static const int offs[] = {0x08, 0x0c, 0x10, 0x24, 0x30, 0x3c, 0x40, 0x80, 0xfc, 0x100};
    printf("ecam 00:00.0 written:");
    for (unsigned i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        CFG(0, 0, 0, offs[i]) = 0xffffffff;
        printf(" %02x=%08lx", offs[i], (unsigned long)CFG(0, 0, 0, offs[i]));
        CFG(0, 0, 0, offs[i]) = 0;
    }
    printf("\n");
    *(volatile uint8_t *)(ECAM + 0x3d) = 0xff;
    *(volatile uint16_t *)(ECAM + 0x0c) = 0xabcd;
    printf("ecam 00:00.0 narrow writes: 0x0c %08lx 0x3c %08lx\n", (unsigned long)CFG(0, 0, 0, 0x0c),
           (unsigned long)CFG(0, 0, 0, 0x3c));
    CFG(0, 0, 0, 0) = 0x12345678;
    CFG(0, 1, 0, 0) = 0x12345678;
    printf("ecam after writes: id %08lx absent %08lx\n", (unsigned long)CFG(0, 0, 0, 0),
           (unsigned long)CFG(0, 1, 0, 0));
    printf("pio %08lx %02x\n", (unsigned long)rd32(0x03000000ul), rd8(0x0300fffful));
    printf("mmio %08lx %08lx %02x\n", (unsigned long)rd32(0x40000000ul),
           (unsigned long)rd32(0x7ffffffcul), rd8(0x50000001ul));
    *(volatile uint32_t *)0x40000000ul = 0x12345678;
    printf("mmio after write %08lx\n", (unsigned long)rd32(0x40000000ul));
#if __riscv_xlen == 64
    printf("high mmio %08lx %08lx\n", (unsigned long)rd32(0x48003524cul),
           (unsigned long)rd32(0x7fffffffcul));
#endif
    printf("rtc alarm %08lx %08lx irq %08lx status %08lx\n", (unsigned long)RTC(0x08),
           (unsigned long)RTC(0x0c), (unsigned long)RTC(0x10), (unsigned long)RTC(0x18));
    uint32_t lo1 = RTC(0x00), hi1 = RTC(0x04);
    for (volatile int i = 0; i < 1000; i++)
        ;
    uint32_t lo2 = RTC(0x00), hi2 = RTC(0x04);
    uint64_t t1 = (uint64_t)hi1 << 32 | lo1, t2 = (uint64_t)hi2 << 32 | lo2;
    printf("rtc time advances: %s\n", t2 > t1 ? "yes" : "no");

    /* The alarm's interrupt: 250 ms ahead (QEMU's RTC follows the host's clock: far enough that
     * QEMU logging every instruction still prints the next line first), source 11 enabled on
     * context 0 (M), MEIE set and mstatus.MIE clear, so that wfi waits for it and returns
     * without a trap. */
    PLIC(4 * 11) = 1;
    PLIC(0x2000) = 1u << 11;
    PLIC(0x200000) = 0;
    RTC(0x10) = 1;
    lo1 = RTC(0x00);
    hi1 = RTC(0x04);
    uint64_t at = ((uint64_t)hi1 << 32 | lo1) + 250000000;
    RTC(0x0c) = at >> 32;
    RTC(0x08) = (uint32_t)at;
    printf("rtc alarm armed: status %08lx pending %08lx\n", (unsigned long)RTC(0x18),
           (unsigned long)PLIC(0x1000));
    __asm__ volatile("csrw mie, %0" ::"r"(1ul << 11));
    __asm__ volatile("wfi");
    unsigned long mip;
    __asm__ volatile("csrr %0, mip" : "=r"(mip));
    uint32_t claim = PLIC(0x200004);
    printf("rtc alarm fired: meip %lu status %08lx claim %lu\n", (mip >> 11) & 1,
           (unsigned long)RTC(0x18), (unsigned long)claim);
    RTC(0x1c) = 0;
    PLIC(0x200004) = claim;
    __asm__ volatile("csrr %0, mip" : "=r"(mip));
    printf("rtc interrupt cleared: meip %lu pending %08lx\n", (mip >> 11) & 1,
           (unsigned long)PLIC(0x1000));
    __asm__ volatile("csrw mie, zero");
    RTC(0x10) = 0;
    PLIC(0x2000) = 0;
    PLIC(4 * 11) = 0;
    return 0;
}
