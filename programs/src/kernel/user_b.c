/* User program B of the tiny kernel (kernel.c): U-mode, text and data at UB_TEXT/UB_DATA.
 * Fibonacci numbers by recursion, two lines through SYS_WRITE (one of them a write the kernel
 * refuses: a buffer outside B's memory), then a store to its own text page, which is not
 * writable: the kernel kills B at the store page fault. */
#include "kernel.h"

#define TEXT USER_TEXT(b)
#define DATA USER_DATA(b)

DATA static char line[64];
DATA static char head[] = "hello from B: fib(15) = ";
DATA static char refused[] = "write of a kernel address: ";

TEXT static unsigned long fib(unsigned long n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

TEXT static char *put_dec(char *p, long v) {
    char tmp[24];
    int n = 0;
    unsigned long u = v < 0 ? -(unsigned long)v : (unsigned long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *p++ = '-';
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

TEXT void user_b_main(void) {
    say(put_dec(put_str(line, head), (long)fib(15)));
    long r = u_syscall(SYS_WRITE, 1, 0x80000000l, 8);
    say(put_dec(put_str(line, refused), r));
    *(volatile int *)(UB_TEXT + 0x10) = 0; /* text is R+X: store page fault */
    u_syscall(SYS_EXIT, 0, 0, 0);
    for (;;) {
    }
}
