/* CSR reset values and WARL write behaviour, as software sees them: for each CSR, the value at
 * start, then what reads back after writing all ones and after writing zero (the original value
 * is restored after each probe). CSRs that do not exist raise illegal instruction, which the
 * M-mode handler counts and skips. The expected output is QEMU's (programs/expected/), so this
 * pins the hart model's CSR file to QEMU 7.2's virt CPU. Counters and time are only probed for
 * existence, never printed (their values are not deterministic under QEMU); the counter
 * control CSRs (mcounteren, scounteren, mcountinhibit, mhpmevent*) are probed by pmu_access
 * against QEMU 10 (QEMU 7.2 stores all ones in them). */
#include <stdio.h>
#include "rvtest.h"

static volatile int illegal;

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)f;
    (void)vec;
    if (cause == CAUSE_ILLEGAL) {
        illegal++;
        return epc + insn_len(epc);
    }
    printf("FAIL unexpected trap cause %lx at %lx\n", cause, epc);
    return epc + insn_len(epc);
}

unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    return m_trap(cause, epc, f, vec);
}

#define W (int)(2 * sizeof(long))

/* Read, write ~0, read, write 0, read, restore. A trapping access leaves the register at 0. */
#define PROBE(csr)                                                                            \
    do {                                                                                      \
        unsigned long o = 0, a = 0, b = 0, ones = ~0ul, zero = 0;                             \
        illegal = 0;                                                                          \
        __asm__ volatile("csrr %0, " #csr : "+r"(o));                                         \
        if (illegal) {                                                                        \
            printf("%-13s illegal\n", #csr);                                                  \
            break;                                                                            \
        }                                                                                     \
        __asm__ volatile("csrw " #csr ", %1\n\tcsrr %0, " #csr : "+r"(a) : "r"(ones));        \
        __asm__ volatile("csrw " #csr ", %1\n\tcsrr %0, " #csr : "+r"(b) : "r"(zero));        \
        __asm__ volatile("csrw " #csr ", %0" ::"r"(o));                                       \
        printf("%-13s %0*lx ones %0*lx zero %0*lx%s\n", #csr, W, o, W, a, W, b,               \
               illegal ? " (write illegal)" : "");                                            \
    } while (0)

/* Only whether a read works (values are time-dependent). */
#define EXISTS(csr)                                                                           \
    do {                                                                                      \
        unsigned long v = 0;                                                                  \
        illegal = 0;                                                                          \
        __asm__ volatile("csrr %0, " #csr : "+r"(v));                                         \
        printf("%-13s %s\n", #csr, illegal ? "illegal" : "readable");                         \
    } while (0)

/* Value only, no writes (writing would break the program). */
#define SHOW(csr)                                                                             \
    do {                                                                                      \
        unsigned long v = 0;                                                                  \
        illegal = 0;                                                                          \
        __asm__ volatile("csrr %0, " #csr : "+r"(v));                                         \
        printf("%-13s %0*lx%s\n", #csr, W, v, illegal ? " illegal" : "");                     \
    } while (0)

int main(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    SHOW(misa);
    SHOW(mvendorid);
    SHOW(mhartid);
    SHOW(mstatus);
    /* mstatus without MIE/SIE/MPRV/FS (those change how this program runs). */
    {
        unsigned long o = CSR_READ(mstatus), keep = MSTATUS_MIE | MSTATUS_SIE | (1ul << 17) | MSTATUS_FS;
        CSR_WRITE(mstatus, (o & keep) | (~0ul & ~keep));
        unsigned long a = CSR_READ(mstatus);
        CSR_WRITE(mstatus, o & keep);
        unsigned long b = CSR_READ(mstatus);
        CSR_WRITE(mstatus, o);
        printf("%-13s ones %0*lx zero %0*lx\n", "mstatus*", W, a & ~keep, W, b & ~keep);
    }
    PROBE(medeleg);
    PROBE(mideleg);
    PROBE(mie);
    PROBE(mip);
    PROBE(mscratch);
    PROBE(mepc);
    PROBE(mcause);
    PROBE(mtval);
    PROBE(stvec);
    PROBE(sscratch);
    PROBE(sepc);
    PROBE(scause);
    PROBE(stval);
    PROBE(sie);
    PROBE(sip);
    PROBE(satp);
    PROBE(pmpaddr0);
    PROBE(pmpaddr1);
    PROBE(pmpaddr15);
    SHOW(pmpcfg0);
    PROBE(tselect);
    EXISTS(cycle);
    EXISTS(instret);
    EXISTS(mcycle);
    EXISTS(minstret);
    EXISTS(hpmcounter3);
    EXISTS(mhpmcounter3);
#if __riscv_flen
    PROBE(fflags);
    PROBE(frm);
    PROBE(fcsr);
#else
    EXISTS(fcsr);
#endif
    /* The same mstatus fields through sstatus. */
    {
        unsigned long o = CSR_READ(sstatus), keep = MSTATUS_SIE | MSTATUS_FS;
        CSR_WRITE(sstatus, (o & keep) | (~0ul & ~keep));
        unsigned long a = CSR_READ(sstatus);
        CSR_WRITE(sstatus, o & keep);
        unsigned long b = CSR_READ(sstatus);
        CSR_WRITE(sstatus, o);
        printf("%-13s ones %0*lx zero %0*lx\n", "sstatus*", W, a & ~keep, W, b & ~keep);
    }
    /* mtvec/stvec: a reserved mode (2) and vectored mode with an unaligned base. */
    {
        unsigned long o = CSR_READ(mtvec), v;
        CSR_WRITE(mtvec, 0x80000102ul);
        v = CSR_READ(mtvec);
        CSR_WRITE(mtvec, 0x80000105ul);
        unsigned long v2 = CSR_READ(mtvec);
        CSR_WRITE(mtvec, o);
        printf("mtvec         mode2 %0*lx vectored %0*lx\n", W, v, W, v2);
    }
    printf("csrs done\n");
    return 0;
}
