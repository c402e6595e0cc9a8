/* Driver for mixed.S (compressed and uncompressed code mixed in one function). Self-checking. */
#include <stdio.h>

long mix_sum(long n);
long mix_dispatch(long k, long x);
#if __riscv_xlen == 64
long mix_rv64(long *p);
#else
long mix_rv32(long *p);
#endif

static int fails;
static void check(const char *what, long got, long want) {
    printf("%-12s %ld\n", what, got);
    if (got != want) { printf("FAIL %s: want %ld\n", what, want); fails++; }
}

int main(void) {
    long want = 0;
    for (long i = 1; i <= 500; i++) want += (3 * i) ^ 1;
    check("mix_sum", mix_sum(500), want);
    check("mix_sum(0)", mix_sum(0), 0);
    for (int round = 0; round < 3; round++) {
        long x = round * 10 + 3;
        check("h0", mix_dispatch(0, x), x + 5);
        check("h1", mix_dispatch(1, x), 2 * (x + 100));
        check("h2", mix_dispatch(2, x), 2 * x + 1);
        check("h3", mix_dispatch(3, x), 2 * (7 * x) + 1);
        check("h4", mix_dispatch(4, x), 7);
    }
    check("h4(0)", mix_dispatch(4, 0), -1);
#if __riscv_xlen == 64
    static union { long l[2]; double d; } u[2];
    u[0].l[0] = 0x7fffffff; u[0].l[1] = 5; u[1].d = 2.75;
    long r = mix_rv64(&u[0].l[0]);
    /* a1 = (int)(0x7fffffff + 5) + 1 = -2147483643, p[1] = (int)(5 - a1) = -2147483648,
     * result = a1 + (long)(2 * 2.75) */
    check("rv64 r", r, -2147483643l + 5);
    check("rv64 p1", u[0].l[1], -2147483648l);
    check("rv64 d*2", (long)(u[1].d * 4), 22);
#else
    long p[2] = { -100, 0x12345 };
    long r = mix_rv32(p);
    check("rv32 r", r, (-100 >> 2) | (0x12345 & 0x1f));
    check("rv32 p1", p[1], 0x12345 & 0x1f);
#endif
    printf("mixed fails=%d\n", fails);
    return fails;
}
