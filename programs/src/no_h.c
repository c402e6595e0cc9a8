/* The hart has no hypervisor extension (crates/sim/README.md, "No H"), compared with QEMU 7.2
 * run with -cpu rvXX,h=false: misa without H; the M-level trap CSRs H adds (mtinst, mtval2) and
 * the hypervisor and VS CSRs raise illegal instruction; so do hfence.vvma and hfence.gvma; the
 * bits QEMU keeps anyway without H (mstatus/mstatush MPV and GVA, the VS interrupt bits of
 * mideleg and mie) read back as there. Kept apart from csrs.c, whose ELF a reference-flow
 * vector was made from (crates/etrace/tests/vectors). */
#include <stdio.h>
#include "rvtest.h"

static volatile int illegal;

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)f;
    (void)vec;
    if (cause == CAUSE_ILLEGAL)
        illegal++;
    else
        printf("FAIL unexpected trap cause %lx at %lx\n", cause, epc);
    return epc + insn_len(epc);
}

unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    return m_trap(cause, epc, f, vec);
}

#define W (int)(2 * sizeof(long))

/* Read, write ~0, read, write 0, read, restore; by number (GCC need not know H's names). */
#define PROBE(name, num)                                                                      \
    do {                                                                                      \
        unsigned long o = 0, a = 0, b = 0, ones = ~0ul, zero = 0;                             \
        illegal = 0;                                                                          \
        __asm__ volatile("csrr %0, " #num : "+r"(o));                                         \
        if (illegal) {                                                                        \
            printf("%-11s illegal\n", name);                                                  \
            break;                                                                            \
        }                                                                                     \
        __asm__ volatile("csrw " #num ", %1\n\tcsrr %0, " #num : "+r"(a) : "r"(ones));        \
        __asm__ volatile("csrw " #num ", %1\n\tcsrr %0, " #num : "+r"(b) : "r"(zero));        \
        __asm__ volatile("csrw " #num ", %0" ::"r"(o));                                       \
        printf("%-11s %0*lx ones %0*lx zero %0*lx\n", name, W, o, W, a, W, b);                \
    } while (0)

int main(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    printf("misa.H %lu\n", (CSR_READ(misa) >> 7) & 1);
    PROBE("mtinst", 0x34a);
    PROBE("mtval2", 0x34b);
    PROBE("hstatus", 0x600);
    PROBE("hedeleg", 0x602);
    PROBE("hideleg", 0x603);
    PROBE("hgatp", 0x680);
    PROBE("vsstatus", 0x200);
    PROBE("vsatp", 0x280);
    illegal = 0;
    __asm__ volatile(".insn r 0x73, 0, 0x11, x0, x0, x0" ::: "memory"); /* hfence.vvma */
    __asm__ volatile(".insn r 0x73, 0, 0x31, x0, x0, x0" ::: "memory"); /* hfence.gvma */
    printf("hfence illegal %d of 2\n", illegal);
#if __riscv_xlen == 32
    PROBE("mstatush", 0x310);
#else
    {
        unsigned long o = CSR_READ(mstatus), bits = 3ul << 38; /* GVA, MPV */
        CSR_SET(mstatus, bits);
        unsigned long a = CSR_READ(mstatus) & bits;
        CSR_WRITE(mstatus, o);
        printf("mstatus.MPV/GVA ones %0*lx\n", W, a);
    }
#endif
    {
        unsigned long vs = (1ul << 2) | (1ul << 6) | (1ul << 10) | (1ul << 12);
        unsigned long o = CSR_READ(mideleg);
        CSR_WRITE(mideleg, vs);
        unsigned long d = CSR_READ(mideleg) & vs;
        CSR_WRITE(mideleg, o);
        o = CSR_READ(mie);
        CSR_WRITE(mie, vs);
        unsigned long e = CSR_READ(mie) & vs;
        CSR_WRITE(mie, o);
        printf("VS bits kept: mideleg %lx mie %lx\n", d, e);
    }
    printf("no_h done\n");
    return 0;
}
