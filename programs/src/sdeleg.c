/* Delegation to S-mode: medeleg (illegal instruction, breakpoint, ecall from U) and mideleg
 * (supervisor software and timer interrupts); stvec in direct and in vectored mode; delegated
 * exceptions from U and from S itself, S ecalls still going to M, M exceptions never delegated,
 * SSIP set by S (taken right after the csrs, or right after sstatus.SIE is set, or on entry
 * to U), and an M timer interrupt forwarded to S as STIP (SBI style) with the S handler
 * calling back into M; sret and mret everywhere. Self-checking. */
#include <stdio.h>
#include "rvtest.h"

struct event { char who; unsigned char cause, irq, from; signed char vec; };
static struct event events[80];
static int nevents;

static void record(char who, unsigned long cause, unsigned from, long vec) {
    if (nevents < 80)
        events[nevents++] = (struct event){ who, (unsigned char)(cause & ~CAUSE_IRQ), (cause & CAUSE_IRQ) != 0,
                                            (unsigned char)from, (signed char)vec };
}

enum { SYS_ADD = 1, SYS_MODE = 2, SYS_SET_TIMER = 3, SYS_CLEAR_STIP = 4 };

static inline long sys(long n, long a, long b) {
    register long a0 __asm__("a0") = a, a1 __asm__("a1") = b, a7 __asm__("a7") = n;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a7) : "memory");
    return a0;
}

/* M-mode: ecalls from S (SBI-like services), the machine timer, M's own exceptions. */
unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    unsigned from = (CSR_READ(mstatus) >> 11) & 3;
    record('M', cause, from, vec);
    if (cause == (CAUSE_IRQ | IRQ_MTI)) {
        CSR_CLEAR(mie, 1ul << IRQ_MTI);
        timer_set(~0ull);
        CSR_SET(mip, 1ul << IRQ_STI);                  /* forward to S */
        return epc;
    }
    if (cause == CAUSE_ECALL_S || cause == CAUSE_ECALL_M) {
        switch (f->a7) {
        case SYS_LEAVE: return 0;
        case SYS_ADD: f->a0 += f->a1; break;
        case SYS_MODE: f->a0 = from; break;
        case SYS_SET_TIMER: timer_set(f->a0); CSR_SET(mie, 1ul << IRQ_MTI); break;
        case SYS_CLEAR_STIP: CSR_CLEAR(mip, 1ul << IRQ_STI); break;
        }
        return epc + 4;
    }
    return epc + insn_len(epc);
}

/* S-mode: delegated exceptions and interrupts. */
unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    unsigned from = (CSR_READ(sstatus) & MSTATUS_SPP) ? 1 : 0;
    record('S', cause, from, vec);
    if (cause == (CAUSE_IRQ | IRQ_SSI)) { CSR_CLEAR(sip, 1ul << IRQ_SSI); return epc; }
    if (cause == (CAUSE_IRQ | IRQ_STI)) { sys(SYS_CLEAR_STIP, 0, 0); return epc; }
    if (cause == CAUSE_ECALL_U) {
        if (f->a7 == SYS_LEAVE) return 0;
        if (f->a7 == SYS_ADD) f->a0 = f->a0 * 1000 + f->a1;   /* S's own "add" differs from M's */
        return epc + 4;
    }
    return epc + insn_len(epc);                         /* illegal instruction, breakpoint */
}

static long user_main(long arg) {
    long r = sys(SYS_ADD, arg, 7);
    __asm__ volatile("ebreak");
    __asm__ volatile("c.ebreak");
    __asm__ volatile(".2byte 0x0000");                  /* c.unimp */
    __asm__ volatile("csrr t0, sstatus" ::: "t0");      /* S CSR from U */
    return r;
}
static long user_short(long arg) { return sys(SYS_ADD, arg, 1); }

static long timer_chain(void) {
    long r = sys(SYS_SET_TIMER, 0, 0);                  /* due now: MTI right after the mret, */
    return r;                                           /* then STI in S right after that mret */
}

static long super_main(long arg) {
    long r = 0;
    __asm__ volatile("ebreak");                         /* delegated: handled in S */
    __asm__ volatile(".4byte 0xc0001073");              /* illegal, delegated */
    r += sys(SYS_MODE, 0, 0);                           /* ecall from S: M (1) */
    CSR_WRITE(sie, (1ul << IRQ_SSI) | (1ul << IRQ_STI));
    CSR_SET(sstatus, MSTATUS_SIE);
    CSR_SET(sip, 1ul << IRQ_SSI);                       /* taken right after this */
    CSR_CLEAR(sstatus, MSTATUS_SIE);
    CSR_SET(sip, 1ul << IRQ_SSI);                       /* pending, SIE=0 */
    r += 10;
    CSR_SET(sstatus, MSTATUS_SIE);                      /* taken right after this */
    timer_chain();
    CSR_CLEAR(sstatus, MSTATUS_SIE);
    r += s_enter(arg, user_main) * 10;                  /* (arg*1000+7)*10 */
    CSR_SET(sip, 1ul << IRQ_SSI);                       /* pending, SIE=0: taken on entry to U */
    r += s_enter(5, user_short) * 100000;               /* 5001 */

    CSR_WRITE(stvec, (unsigned long)s_vector_table | 1);
    CSR_SET(sstatus, MSTATUS_SIE);
    CSR_SET(sip, 1ul << IRQ_SSI);                       /* slot 1 */
    __asm__ volatile("c.ebreak");                       /* slot 0 */
    timer_chain();                                      /* STI in slot 5 */
    CSR_CLEAR(sstatus, MSTATUS_SIE);
    r += s_enter(2, user_short);                        /* ecalls in slot 0: 2001 */
    CSR_WRITE(stvec, s_trap_entry);
    return r;
}

#define M 3
#define S 1
#define U 0
static const struct event want[] = {
    { 'M', 3, 0, M, -1 },                                                   /* M ebreak stays in M */
    { 'S', 3, 0, S, -1 }, { 'S', 2, 0, S, -1 }, { 'M', 9, 0, S, -1 },       /* S ebreak, illegal, ecall */
    { 'S', 1, 1, S, -1 }, { 'S', 1, 1, S, -1 },                             /* SSI twice */
    { 'M', 9, 0, S, -1 }, { 'M', 7, 1, S, -1 }, { 'S', 5, 1, S, -1 }, { 'M', 9, 0, S, -1 }, /* timer chain */
    { 'S', 8, 0, U, -1 }, { 'S', 3, 0, U, -1 }, { 'S', 3, 0, U, -1 }, { 'S', 2, 0, U, -1 },
    { 'S', 2, 0, U, -1 }, { 'S', 8, 0, U, -1 },                             /* user_main */
    { 'S', 1, 1, U, -1 }, { 'S', 8, 0, U, -1 }, { 'S', 8, 0, U, -1 },       /* SSI on entry, user_short */
    { 'S', 1, 1, S, 1 }, { 'S', 3, 0, S, 0 },                               /* vectored stvec */
    { 'M', 9, 0, S, -1 }, { 'M', 7, 1, S, -1 }, { 'S', 5, 1, S, 5 }, { 'M', 9, 0, S, -1 },
    { 'S', 8, 0, U, 0 }, { 'S', 8, 0, U, 0 },
    { 'M', 9, 0, S, -1 },                                                   /* S leaves */
};

int main(void) {
    int fails = 0;
    pmp_open_all();
    timer_set(~0ull);
    CSR_WRITE(mtvec, m_trap_entry);
    CSR_WRITE(stvec, s_trap_entry);
    CSR_WRITE(medeleg, (1ul << CAUSE_ILLEGAL) | (1ul << CAUSE_BREAKPOINT) | (1ul << CAUSE_ECALL_U));
    CSR_WRITE(mideleg, (1ul << IRQ_SSI) | (1ul << IRQ_STI));
    CSR_WRITE(mie, 0);

    __asm__ volatile("ebreak");                         /* M exceptions are never delegated */
    long r = m_enter(3, super_main, 1);
    long want_r = 1 + 10 + (3 * 1000 + 7) * 10 + 5001l * 100000 + 2001;
    if (r != want_r) { printf("FAIL result %ld, want %ld\n", r, want_r); fails++; }
    CSR_WRITE(medeleg, 0);
    CSR_WRITE(mideleg, 0);

    int nwant = sizeof want / sizeof want[0];
    for (int i = 0; i < nevents; i++)
        printf("trap %2d: %c-mode handler, %s %u from %c vec %d\n", i, events[i].who,
               events[i].irq ? "interrupt" : "exception", events[i].cause, "US?M"[events[i].from], events[i].vec);
    if (nevents != nwant) { printf("FAIL %d traps, want %d\n", nevents, nwant); fails++; }
    for (int i = 0; i < nevents && i < nwant; i++)
        if (events[i].who != want[i].who || events[i].cause != want[i].cause || events[i].irq != want[i].irq ||
            events[i].from != want[i].from || events[i].vec != want[i].vec) {
            printf("FAIL trap %d: want %c %u/%u from %c vec %d\n", i, want[i].who, want[i].irq, want[i].cause,
                   "US?M"[want[i].from], want[i].vec);
            fails++;
        }
    printf("sdeleg result %ld fails=%d\n", r, fails);
    return fails;
}
