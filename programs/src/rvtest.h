/* Shared helpers for the privileged test programs (trap entries are in rvtest.S). */
#ifndef RVTEST_H
#define RVTEST_H
#include <stdint.h>

#define CSR_READ(csr) ({ unsigned long v_; __asm__ volatile("csrr %0, " #csr : "=r"(v_)); v_; })
#define CSR_WRITE(csr, v) __asm__ volatile("csrw " #csr ", %0" :: "r"((unsigned long)(v)) : "memory")
#define CSR_SET(csr, v) __asm__ volatile("csrs " #csr ", %0" :: "r"((unsigned long)(v)) : "memory")
#define CSR_CLEAR(csr, v) __asm__ volatile("csrc " #csr ", %0" :: "r"((unsigned long)(v)) : "memory")

#define MSTATUS_SIE  (1ul << 1)
#define MSTATUS_MIE  (1ul << 3)
#define MSTATUS_SPIE (1ul << 5)
#define MSTATUS_MPIE (1ul << 7)
#define MSTATUS_SPP  (1ul << 8)
#define MSTATUS_MPP  (3ul << 11)
#define MSTATUS_FS   (3ul << 13)

#define IRQ_SSI 1
#define IRQ_MSI 3
#define IRQ_STI 5
#define IRQ_MTI 7
#define CAUSE_IRQ (1ul << (sizeof(long) * 8 - 1))

#define CAUSE_ILLEGAL 2
#define CAUSE_BREAKPOINT 3
#define CAUSE_MISALIGNED_STORE 6
#define CAUSE_ECALL_U 8
#define CAUSE_ECALL_S 9
#define CAUSE_ECALL_M 11

/* QEMU virt CLINT */
#define CLINT_MSIP     ((volatile uint32_t *)0x2000000)
#define CLINT_MTIMECMP ((volatile uint32_t *)0x2004000)
#define CLINT_MTIME    ((volatile uint32_t *)0x200bff8)

/* Saved by the trap entries in this order (t0 second, a0 at index 4). */
struct frame {
    unsigned long ra, t0, t1, t2, a0, a1, a2, a3, a4, a5, a6, a7, t3, t4, t5, t6;
};

/* ecall number (in a7) that the lower-mode trampoline uses to leave m_enter/s_enter. */
#define SYS_LEAVE 0x4c

typedef long (*lower_fn)(long);
/* Run fn(arg) in U (mode 0) or S (mode 1) from M-mode; returns fn's result. */
long m_enter(long arg, lower_fn fn, unsigned long mode);
/* Run fn(arg) in U-mode from S-mode. */
long s_enter(long arg, lower_fn fn);

/* Supplied by each program. Return the new xepc, or 0 to leave m_enter/s_enter with f->a0.
 * vec is -1 for the direct entry, else the vector-table slot that was used. */
unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec);
unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec);

extern char m_trap_entry[], m_vector_table[], s_trap_entry[], s_vector_table[];

/* Length of the instruction at pc (2 or 4), read from memory. */
static inline unsigned long insn_len(unsigned long pc) {
    return (*(volatile uint16_t *)pc & 3) == 3 ? 4 : 2;
}

/* Let S and U mode access all memory (QEMU denies S/U accesses while no PMP entry is set). */
static inline void pmp_open_all(void) {
    CSR_WRITE(pmpaddr0, -1l);
    CSR_WRITE(pmpcfg0, 0x1f); /* NAPOT, R W X */
}

static inline void timer_set(uint64_t when) {
#if __riscv_xlen == 64
    *(volatile uint64_t *)CLINT_MTIMECMP = when;
#else
    CLINT_MTIMECMP[1] = 0xffffffffu; /* no spurious match while the halves are written */
    CLINT_MTIMECMP[0] = (uint32_t)when;
    CLINT_MTIMECMP[1] = (uint32_t)(when >> 32);
#endif
}

static inline uint64_t timer_now(void) {
#if __riscv_xlen == 64
    return *(volatile uint64_t *)CLINT_MTIME;
#else
    /* Read once, no retry loop: the low half wraps only every ~429 s of QEMU time. */
    uint32_t hi = CLINT_MTIME[1], lo = CLINT_MTIME[0];
    return (uint64_t)hi << 32 | lo;
#endif
}

#endif
