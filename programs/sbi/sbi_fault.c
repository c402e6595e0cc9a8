/* sbi_fault: a payload caught in a trap loop. Its trap handler returns to the instruction that
 * trapped, and that instruction is a store to physical address 0, where no memory is (QEMU's
 * virt machine and the hart model alike): a store/AMO access fault, again and again. Under
 * OpenSBI the fault is not delegated: each one goes through the firmware, which redirects it to
 * the payload's handler (rvtrace must still see the loop, issue 29). QEMU spins forever. */
#include "sbi.h"

/* The handler: back to the faulting store (sepc unchanged). */
__attribute__((naked, aligned(4))) static void back_to_fault(void) {
    __asm__ volatile("sret");
}

int main(unsigned long hartid, unsigned long dtb) {
    (void)dtb;
    printf("sbi_fault: rv%d hart %lu: a store to address 0, its handler returning to it\n", XLEN,
           hartid);
    __asm__ volatile("csrw stvec, %0" ::"r"(back_to_fault));
    *(volatile unsigned long *)0 = 1;
    sbi_exit(0);
}
