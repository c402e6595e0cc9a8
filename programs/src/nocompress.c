/* Built without the C extension (rv64g / rv32ima, with picolibc's matching no-C multilib),
 * so every instruction of the program, including libc, is 32 bits wide: recursion, a dense
 * switch, indirect calls, printf and (RV64) hardware double arithmetic. Self-checking. */
#include <stdio.h>
#include <string.h>

static int fails;
static void check(const char *what, long got, long want) {
    printf("%-10s %ld\n", what, got);
    if (got != want) { printf("FAIL %s: want %ld\n", what, want); fails++; }
}

__attribute__((noinline)) static long tri(long n) { return n == 0 ? 0 : (n + tri(n - 1)) % 100000; }

__attribute__((noinline)) static long step(int op, long v) {
    switch (op) {
    case 0: return v + 3;
    case 1: return v * 2;
    case 2: return v - 7;
    case 3: return v ^ 0x55;
    case 4: return v >> 1;
    case 5: return v | 0x100;
    case 6: return v % 1000;
    case 7: return -v;
    default: return v;
    }
}

static long sq(long x) { return x * x; }
static long cube(long x) { return x * x * x; }
static long (*const fns[])(long) = { sq, cube };

int main(void) {
    check("tri(300)", tri(300), 45150);
    long v = 1, w = 1;
    for (int i = 0; i < 200; i++) v = step((i * 5) % 9, v);
    for (int i = 0; i < 200; i++) {
        int op = (i * 5) % 9;
        w = op == 0 ? w + 3 : op == 1 ? w * 2 : op == 2 ? w - 7 : op == 3 ? w ^ 0x55 : op == 4 ? w >> 1 :
            op == 5 ? (w | 0x100) : op == 6 ? w % 1000 : op == 7 ? -w : w;
    }
    check("switch", v, w);
    long s = 0;
    for (int i = 0; i < 20; i++) s += fns[i & 1](i);
    check("fnptr", s, 21040);
    char buf[32];
    strcpy(buf, "no compressed");
    check("strlen", (long)strlen(buf), 13);
    volatile double d = 1.5;
    double acc = 0;
    for (int i = 0; i < 10; i++) acc = acc * d + i;
    printf("double     %.6f\n", acc);
    if (acc != 206.66015625) { puts("FAIL double"); fails++; }   /* exact in binary */
    printf("nocompress fails=%d\n", fails);
    return fails;
}
