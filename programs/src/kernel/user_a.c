/* User program A of the tiny kernel (kernel.c): U-mode, text and data at UA_TEXT/UA_DATA.
 * Counts Collatz steps (a loop with calls), prints two lines through SYS_WRITE and exits
 * with its run number (its data page keeps the count between runs). Only user_a code and data:
 * no libc (the kernel's pages are not user-accessible). */
#include "kernel.h"

#define TEXT USER_TEXT(a)
#define DATA USER_DATA(a)

DATA static volatile int runs;
DATA static char line[64];
DATA static char hello[] = "hello from A, pid ";
DATA static char steps[] = "collatz steps 1..";
DATA static char comma_run[] = ", run ";
DATA static char colon[] = ": ";

TEXT static unsigned long collatz(unsigned long n) {
    unsigned long s = 0;
    while (n != 1) {
        n = (n & 1) ? 3 * n + 1 : n / 2;
        s++;
    }
    return s;
}

/* Append the decimal digits of v at p; returns the new end. */
TEXT static char *put_dec(char *p, unsigned long v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

TEXT static char *put_str(char *p, const char *s) {
    while (*s)
        *p++ = *s++;
    return p;
}

TEXT static void say(char *end) {
    *end++ = '\n';
    u_syscall(SYS_WRITE, 1, (long)line, end - line);
}

TEXT void user_a_main(void) {
    int run = ++runs;
    char *p = put_str(line, hello);
    p = put_dec(p, (unsigned long)u_syscall(SYS_GETPID, 0, 0, 0));
    p = put_str(p, comma_run);
    say(put_dec(p, (unsigned long)run));
    unsigned long n = 20 * run, total = 0;
    for (unsigned long i = 1; i <= n; i++)
        total += collatz(i);
    p = put_str(line, steps);
    p = put_dec(p, n);
    p = put_str(p, colon);
    say(put_dec(p, total));
    u_syscall(SYS_EXIT, run, 0, 0);
    for (;;) {
    }
}
