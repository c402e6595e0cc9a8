/* Synchronous traps into an M-mode handler: ecall from M, S and U mode, illegal instructions
 * (32- and 16-bit encodings, privileged CSRs/instructions from lower modes, FP with FS=0),
 * ebreak and c.ebreak breakpoints that the handler skips, mret back to M/S/U, mtvec in
 * direct and in vectored mode (exceptions use slot 0). Self-checking. */
#include <stdio.h>
#include "rvtest.h"

struct event { unsigned char cause, from; signed char vec; };
static struct event events[64];
static int nevents;
static const char mode_name[] = "US?M";

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    unsigned from = (CSR_READ(mstatus) >> 11) & 3;
    if (nevents < 64) events[nevents++] = (struct event){ (unsigned char)cause, (unsigned char)from, (signed char)vec };
    switch (cause) {
    case CAUSE_ECALL_U: case CAUSE_ECALL_S: case CAUSE_ECALL_M:
        if (f->a7 == SYS_LEAVE) return 0;
        if (f->a7 == 1) f->a0 = f->a0 + f->a1;          /* "add" system call */
        else if (f->a7 == 2) f->a0 = from;                /* "which mode called me" */
        return epc + 4;
    case CAUSE_ILLEGAL: case CAUSE_BREAKPOINT:
        return epc + insn_len(epc);
    default:
        printf("unexpected trap cause %lu at %lx\n", cause, epc);
        return epc + insn_len(epc);
    }
}
unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)cause; (void)f; (void)vec;
    return epc + 4; /* not used: nothing is delegated here */
}

static inline long sys(long n, long a, long b) {
    register long a0 __asm__("a0") = a, a1 __asm__("a1") = b, a7 __asm__("a7") = n;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a7) : "memory");
    return a0;
}

/* Instructions that trap in any mode. */
static inline void common_traps(void) {
    __asm__ volatile("ebreak");
    __asm__ volatile(".option push\n.option rvc\nc.ebreak\n.option pop");
    __asm__ volatile(".4byte 0xc0001073"); /* csrrw x0, cycle, x0: write to a read-only CSR */
    __asm__ volatile(".2byte 0x0000");     /* c.unimp */
    __asm__ volatile(".4byte 0x0000000b"); /* custom-0 opcode, not implemented */
}

static long user_part(long arg) {
    long r = sys(1, arg, 22);
    r += sys(2, 0, 0) * 100;                          /* 0: called from U */
    common_traps();
    __asm__ volatile("csrr t0, mstatus" ::: "t0");    /* M CSR from U */
    __asm__ volatile("csrr t0, sstatus" ::: "t0");    /* S CSR from U */
    __asm__ volatile("mret");
    __asm__ volatile("sret");
    __asm__ volatile("wfi");                          /* illegal in U when S-mode exists */
    __asm__ volatile("rdcycle t0" ::: "t0");          /* mcounteren.CY = 0 */
    return r;
}

static long super_part(long arg) {
    long r = sys(1, arg, 1000);
    r += sys(2, 0, 0) * 100;                          /* 1: called from S */
    common_traps();
    __asm__ volatile("csrr t0, mstatus" ::: "t0");    /* M CSR from S */
    __asm__ volatile("csrr t0, sstatus" ::: "t0");    /* fine in S */
    __asm__ volatile("csrw sscratch, %0" :: "r"(r));  /* fine in S */
    __asm__ volatile("mret");                         /* illegal in S */
    __asm__ volatile("rdcycle t0" ::: "t0");          /* mcounteren.CY = 0 */
    return CSR_READ(sscratch) + 1;
}

static long short_user(long arg) {
    __asm__ volatile("c.ebreak");
    return sys(1, arg, arg);
}

#define M 3
#define S 1
#define U 0
static const struct event want[] = {
    /* direct mode, from M */
    {11, M, -1}, {11, M, -1}, {3, M, -1}, {3, M, -1}, {2, M, -1}, {2, M, -1}, {2, M, -1},
#if __riscv_flen
    {2, M, -1},
#endif
    /* U-mode */
    {8, U, -1}, {8, U, -1}, {3, U, -1}, {3, U, -1}, {2, U, -1}, {2, U, -1}, {2, U, -1},
    {2, U, -1}, {2, U, -1}, {2, U, -1}, {2, U, -1}, {2, U, -1}, {2, U, -1}, {8, U, -1},
    /* S-mode */
    {9, S, -1}, {9, S, -1}, {3, S, -1}, {3, S, -1}, {2, S, -1}, {2, S, -1}, {2, S, -1},
    {2, S, -1}, {2, S, -1}, {2, S, -1}, {9, S, -1},
    /* vectored mode: exceptions use slot 0 */
    {11, M, 0}, {3, M, 0}, {3, M, 0}, {2, M, 0}, {2, M, 0}, {2, M, 0},
    {3, U, 0}, {8, U, 0}, {8, U, 0},
};

int main(void) {
    int fails = 0;
    pmp_open_all();
    CSR_WRITE(mcounteren, 0);
    CSR_WRITE(mtvec, m_trap_entry);

    long r = sys(1, 40, 2);
    if (r != 42) { printf("FAIL ecall add from M: %ld\n", r); fails++; }
    r = sys(2, 0, 0);
    if (r != 3) { printf("FAIL ecall mode from M: %ld\n", r); fails++; }
    common_traps();
#if __riscv_flen
    unsigned long fs = CSR_READ(mstatus) & MSTATUS_FS;
    CSR_CLEAR(mstatus, MSTATUS_FS);
    __asm__ volatile("fmv.d.x ft0, zero");            /* FS=Off: illegal */
    CSR_SET(mstatus, fs);
#endif

    r = m_enter(20, user_part, 0);
    if (r != 42) { printf("FAIL user part: %ld\n", r); fails++; }
    r = m_enter(7, super_part, 1);
    if (r != 1108) { printf("FAIL supervisor part: %ld\n", r); fails++; }

    CSR_WRITE(mtvec, (unsigned long)m_vector_table | 1);
    r = sys(1, 1, 2);
    common_traps();
    r += m_enter(5, short_user, 0);
    if (r != 13) { printf("FAIL vectored part: %ld\n", r); fails++; }
    CSR_WRITE(mtvec, m_trap_entry);

    int nwant = sizeof want / sizeof want[0];
    for (int i = 0; i < nevents; i++)
        printf("trap %2d: cause %2u from %c vec %d\n", i, events[i].cause, mode_name[events[i].from], events[i].vec);
    if (nevents != nwant) { printf("FAIL %d traps, want %d\n", nevents, nwant); fails++; }
    for (int i = 0; i < nevents && i < nwant; i++)
        if (events[i].cause != want[i].cause || events[i].from != want[i].from || events[i].vec != want[i].vec) {
            printf("FAIL trap %d: want cause %u from %c vec %d\n", i, want[i].cause, mode_name[want[i].from], want[i].vec);
            fails++;
        }
    printf("traps fails=%d\n", fails);
    return fails;
}
