/* The tiny S-mode kernel (kernel.c, kentry.S, user_a.c, user_b.c, kernel.ld): memory layout
 * and system call numbers shared by the kernel and its two user programs. */
#ifndef KERNEL_H
#define KERNEL_H

/* System calls (a7 = number, a0..a2 = arguments, a0 = result), numbered as Linux's. */
#define SYS_WRITE 64  /* write(1, buf, len) -> len, or -1 if buf is not the caller's memory */
#define SYS_EXIT 93   /* exit(status): never returns */
#define SYS_GETPID 172 /* getpid() -> the process number (= its ASID) */

/* User virtual addresses (kernel.ld places the sections there). The two programs use
 * disjoint virtual ranges: the trace decoders hold one image of the ELF. In the system build
 * (SEPARATE_USERS, programs/system/: each program its own ELF, linked by user.ld) both run at
 * the same virtual addresses, told apart by their ASID. */
#define UA_TEXT 0x10000ul   /* user_a: text page */
#define UA_DATA 0x11000ul   /* user_a: data page */
#define UA_STACK 0x1f000ul  /* user_a: stack page (top 0x20000) */
#ifdef SEPARATE_USERS
#define UB_TEXT UA_TEXT
#define UB_DATA UA_DATA
#define UB_STACK UA_STACK
/* Where user.ld loads the programs (p_paddr): the pages kernel.ld gives them otherwise. */
#define UA_TEXT_PA 0x80100000ul
#define UA_DATA_PA 0x80101000ul
#define UB_TEXT_PA 0x80102000ul
#define UB_DATA_PA 0x80103000ul
#else
#define UB_TEXT 0x20000ul
#define UB_DATA 0x21000ul
#define UB_STACK 0x2f000ul
#endif
#define PAGE 4096ul

#define USER_TEXT(p) __attribute__((section(".user_" #p ".text"), noinline))
#define USER_DATA(p) __attribute__((section(".user_" #p ".data")))

/* The user side of the system calls (inline: the ecall sits in the caller's page). */
static inline __attribute__((always_inline)) long u_syscall(long n, long a0, long a1, long a2) {
    register long r_a0 __asm__("a0") = a0;
    register long r_a1 __asm__("a1") = a1;
    register long r_a2 __asm__("a2") = a2;
    register long r_a7 __asm__("a7") = n;
    __asm__ volatile("ecall" : "+r"(r_a0) : "r"(r_a1), "r"(r_a2), "r"(r_a7) : "memory");
    return r_a0;
}

#endif
