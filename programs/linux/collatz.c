/*
 * collatz: a Linux user program for whole-system decode (issue 31 item 5): linked at the same
 * address as busybox (static, non-PIE: 0x10000), so only the context a trace reports tells
 * their code apart. Sums the Collatz steps of 1..N and prints "collatz: N=N steps=S"; calls,
 * returns and data-dependent branches for a decoder to follow. Freestanding (raw system
 * calls, no C library) and not stripped: its functions name the decoded flow.
 */
#include <asm/unistd.h>

#define N 3000

static long sys(long nr, long a0, long a1, long a2)
{
    register long x10 __asm__("a0") = a0;
    register long x11 __asm__("a1") = a1;
    register long x12 __asm__("a2") = a2;
    register long x17 __asm__("a7") = nr;
    __asm__ volatile("ecall" : "+r"(x10) : "r"(x11), "r"(x12), "r"(x17) : "memory");
    return x10;
}

/* The steps from v to 1 (kept out of line: a call per number). */
__attribute__((noinline)) static long steps(unsigned long v)
{
    long s = 0;
    while (v != 1) {
        v = (v & 1) ? 3 * v + 1 : v / 2;
        s++;
    }
    return s;
}

__attribute__((noinline)) static void put_line(long n, long total)
{
    char buf[64];
    const char *head = "collatz: N=";
    int i = 0;
    for (const char *p = head; *p; p++)
        buf[i++] = *p;
    for (int k = 0; k < 2; k++) {
        long v = k ? total : n;
        char digits[24];
        int d = 0;
        do {
            digits[d++] = '0' + v % 10;
            v /= 10;
        } while (v);
        while (d)
            buf[i++] = digits[--d];
        if (!k)
            for (const char *p = " steps="; *p; p++)
                buf[i++] = *p;
    }
    buf[i++] = '\n';
    sys(__NR_write, 1, (long)buf, i);
}

void _start(void) __attribute__((noreturn));
void _start(void)
{
    long total = 0;
    for (unsigned long v = 1; v <= N; v++)
        total += steps(v);
    put_line(N, total);
    sys(__NR_exit, 0, 0, 0);
    for (;;)
        ;
}
