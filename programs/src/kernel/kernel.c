/* A tiny S-mode kernel (programs/README.md, "kernel"). M-mode (main, after picolibc's crt0)
 * opens PMP, delegates U-mode ecalls and page faults to S and runs kernel_main in S-mode.
 * The kernel builds one page table per process (Sv39 on RV64, Sv32 on RV32): the kernel's
 * memory identity-mapped as one global superpage (G=1, U=0), the process's text, data and
 * stack pages at its user virtual addresses (U=1); A and D are preset, so no page faults on
 * them. It runs process A (ASID 1), process B (ASID 2), and A again (ASID 1: its data page
 * kept its state), each entered with csrw satp + sfence.vma + sret (kentry.S), serves their
 * write/getpid/exit ecalls (write copies the string from user memory with SUM=1) and kills B
 * at its store page fault. Then satp = 0 (Bare) and back to M, which exits. */
#include "kernel.h"
#include "../rvtest.h"
#include <stdio.h>

#define SSTATUS_SUM (1ul << 18)
#define CAUSE_FETCH_PF 12
#define CAUSE_LOAD_PF 13
#define CAUSE_STORE_PF 15

/* PTE bits (privileged ISA, "Sv32" / "Sv39"). */
#define PTE_V (1ul << 0)
#define PTE_R (1ul << 1)
#define PTE_W (1ul << 2)
#define PTE_X (1ul << 3)
#define PTE_U (1ul << 4)
#define PTE_G (1ul << 5)
#define PTE_A (1ul << 6)
#define PTE_D (1ul << 7)

#if __riscv_xlen == 64
typedef uint64_t pte_t;
#define LEVELS 3
#define VPN_BITS 9
#define SATP_MODE (8ul << 60) /* Sv39 */
#define SATP_ASID_SHIFT 44
#define SATP_ASID_MASK 0xfffful /* 16 bits */
#else
typedef uint32_t pte_t;
#define LEVELS 2
#define VPN_BITS 10
#define SATP_MODE (1ul << 31) /* Sv32 */
#define SATP_ASID_SHIFT 22
#define SATP_ASID_MASK 0x1fful /* 9 bits */
#endif
#define PTES (PAGE / sizeof(pte_t))

extern char k_trap_entry[];
void run_user(unsigned long entry, unsigned long sp, unsigned long satp);
#ifdef SEPARATE_USERS
/* The programs are ELF files of their own (user.ld: entry at the start of the text page). */
#define A_TEXT_PA ((char *)UA_TEXT_PA)
#define A_DATA_PA ((char *)UA_DATA_PA)
#define B_TEXT_PA ((char *)UB_TEXT_PA)
#define B_DATA_PA ((char *)UB_DATA_PA)
#define A_ENTRY UA_TEXT
#define B_ENTRY UB_TEXT
#else
extern char __user_a_text_pa[], __user_a_data_pa[], __user_b_text_pa[], __user_b_data_pa[];
void user_a_main(void);
void user_b_main(void);
#define A_TEXT_PA __user_a_text_pa
#define A_DATA_PA __user_a_data_pa
#define B_TEXT_PA __user_b_text_pa
#define B_DATA_PA __user_b_data_pa
#define A_ENTRY ((unsigned long)user_a_main)
#define B_ENTRY ((unsigned long)user_b_main)
#endif

/* A process: its page tables (one page per level), its stack page, what it did. */
struct proc {
    const char *name;
    unsigned long asid;
    pte_t table[LEVELS][PTES] __attribute__((aligned(4096)));
    char stack[PAGE] __attribute__((aligned(4096)));
    unsigned long lo, hi; /* its user virtual range */
    long status;          /* exit status, or -cause if killed */
    int writes;
};
/* Not in .bss (kernel.ld: .kernel_pages, not cleared by crt0, whose byte-wise clear would cost
 * ~5 instructions a byte): make_space clears the page tables itself, a word at a time. */
static struct proc procs[2] __attribute__((aligned(4096), section(".kernel_pages")));
static struct proc *current;

static pte_t leaf(unsigned long pa, unsigned long flags) {
    return (pte_t)((pa >> 12) << 10 | flags | PTE_V | PTE_A);
}

static unsigned long vpn(unsigned long va, int level) {
    return (va >> (12 + VPN_BITS * level)) & ((1ul << VPN_BITS) - 1);
}

/* Map the 4 KiB page va -> pa with flags through the process's tables (table[0] is the root,
 * table[i] the next level's only table). */
static void map_page(struct proc *p, unsigned long va, unsigned long pa, unsigned long flags) {
    for (int l = 0; l < LEVELS - 1; l++) {
        pte_t *e = &p->table[l][vpn(va, LEVELS - 1 - l)];
        *e = (pte_t)(((unsigned long)p->table[l + 1] >> 12) << 10 | PTE_V);
    }
    p->table[LEVELS - 1][vpn(va, 0)] = leaf(pa, flags | PTE_U);
}

static unsigned long make_space(struct proc *p, const char *name, unsigned long asid, unsigned long text_va,
                                char *text_pa, unsigned long data_va, char *data_pa, unsigned long stack_va) {
    for (unsigned long i = 0; i < LEVELS * PTES; i++)
        (&p->table[0][0])[i] = 0;
    p->writes = 0;
    p->name = name;
    p->asid = asid;
    p->lo = text_va;
    p->hi = stack_va + PAGE;
    /* The kernel: 0x80000000 as one global superpage (1 GiB gigapage in Sv39, 4 MiB
     * megapage in Sv32), readable, writable, executable, not user-accessible. */
    p->table[0][vpn(0x80000000ul, LEVELS - 1)] = leaf(0x80000000ul, PTE_R | PTE_W | PTE_X | PTE_G | PTE_D);
    map_page(p, text_va, (unsigned long)text_pa, PTE_R | PTE_X);
    map_page(p, data_va, (unsigned long)data_pa, PTE_R | PTE_W | PTE_D);
    map_page(p, stack_va, (unsigned long)p->stack, PTE_R | PTE_W | PTE_D);
    return SATP_MODE | asid << SATP_ASID_SHIFT | (unsigned long)p->table[0] >> 12;
}

/* write(1, buf, len): copy the string out of the process's memory (SUM=1 lets S-mode read
 * U pages) and print it with the process's name. */
static long sys_write(struct proc *p, unsigned long buf, unsigned long len) {
    char copy[128];
    if (len >= sizeof copy || buf < p->lo || buf + len > p->hi || buf + len < buf)
        return -1;
    CSR_SET(sstatus, SSTATUS_SUM);
    for (unsigned long i = 0; i < len; i++)
        copy[i] = ((volatile char *)buf)[i];
    CSR_CLEAR(sstatus, SSTATUS_SUM);
    copy[len] = 0;
    printf("[%s asid %lu] %s", p->name, p->asid, copy);
    p->writes++;
    return (long)len;
}

/* Called by k_trap_entry with the process's registers (x1..x31 at f[1..31], sepc at f[32]).
 * Returns 0 to resume the process, 1 when it is finished. */
unsigned long k_trap(unsigned long *f) {
    unsigned long cause = CSR_READ(scause), tval = CSR_READ(stval);
    struct proc *p = current;
    if (cause == CAUSE_ECALL_U) {
        long a0 = (long)f[10];
        f[32] += 4;
        switch (f[17]) {
        case SYS_WRITE:
            f[10] = a0 == 1 ? (unsigned long)sys_write(p, f[11], f[12]) : (unsigned long)-1;
            return 0;
        case SYS_GETPID:
            f[10] = p->asid;
            return 0;
        case SYS_EXIT:
            p->status = a0;
            printf("kernel: %s exit(%ld) at pc %#lx\n", p->name, a0, f[32] - 4);
            return 1;
        default:
            f[10] = (unsigned long)-1;
            return 0;
        }
    }
    if (cause == CAUSE_FETCH_PF || cause == CAUSE_LOAD_PF || cause == CAUSE_STORE_PF) {
        printf("kernel: %s killed: page fault cause %lu at pc %#lx, stval %#lx\n", p->name, cause, f[32], tval);
        p->status = -(long)cause;
        return 1;
    }
    printf("FAIL kernel: unexpected trap cause %#lx at pc %#lx, stval %#lx\n", cause, f[32], tval);
    p->status = -100;
    return 1;
}

static void run(struct proc *p, unsigned long entry, unsigned long satp) {
    current = p;
    p->status = -1000;
    run_user(entry, p->hi, satp);
    current = 0;
    unsigned long s = CSR_READ(satp);
    printf("kernel: back from %s, satp %s asid %lu, status %ld, %d writes\n", p->name,
           s == satp ? "kept" : "CHANGED", (s >> SATP_ASID_SHIFT) & SATP_ASID_MASK, p->status, p->writes);
}

static long kernel_main(long arg) {
    (void)arg;
    CSR_WRITE(stvec, k_trap_entry);
    struct proc *a = &procs[0], *b = &procs[1];
    unsigned long satp_a = make_space(a, "A", 1, UA_TEXT, A_TEXT_PA, UA_DATA, A_DATA_PA, UA_STACK);
    unsigned long satp_b = make_space(b, "B", 2, UB_TEXT, B_TEXT_PA, UB_DATA, B_DATA_PA, UB_STACK);
    printf("kernel: S-mode, satp %#lx; A satp %#lx, B satp %#lx\n", (unsigned long)CSR_READ(satp), satp_a, satp_b);
    run(a, A_ENTRY, satp_a);
    run(b, B_ENTRY, satp_b);
    run(a, A_ENTRY, satp_a);
    CSR_WRITE(satp, 0);
    __asm__ volatile("sfence.vma" ::: "memory");
    printf("kernel: satp %#lx, done\n", (unsigned long)CSR_READ(satp));
    int ok = a->status == 2 && b->status == -CAUSE_STORE_PF && a->writes == 4 && b->writes == 2;
    return ok ? 0 : 1;
}

/* Unused: the S-mode trap entry of rvtest.S (the kernel has its own, kentry.S). */
unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)f, (void)vec;
    printf("FAIL s_trap cause %#lx epc %#lx\n", cause, epc);
    return 0;
}

/* M-mode: only the end of kernel_main (SYS_LEAVE) comes here. */
unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)vec;
    if (cause == CAUSE_ECALL_S && f->a7 == SYS_LEAVE)
        return 0;
    printf("FAIL m_trap cause %#lx epc %#lx mtval %#lx\n", cause, epc, (unsigned long)CSR_READ(mtval));
    return 0;
}

int main(void) {
    pmp_open_all();
    CSR_WRITE(mtvec, m_trap_entry);
    CSR_WRITE(medeleg, 1ul << CAUSE_ECALL_U | 1ul << CAUSE_FETCH_PF | 1ul << CAUSE_LOAD_PF | 1ul << CAUSE_STORE_PF);
    long r = m_enter(0, kernel_main, 1);
    printf("kernel: %s\n", r == 0 ? "ok" : "FAIL");
    return (int)r;
}
