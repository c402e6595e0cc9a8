/* Zba and Zbb: built with -march=..._zba_zbb, so GCC emits sh1add/sh2add/sh3add (and the .uw forms
 * on RV64), andn/orn/xnor, clz/ctz/cpop (and the w forms), min/max(u), sext.b/h, zext.h, rol/ror,
 * orc.b and rev8 for the builtins and idioms below. Results are printed and checked against
 * values computed with plain shifts and loops (the checks are compiled the same way, so the
 * printed output, compared with QEMU's, is the real check). */
#include <stdint.h>
#include <stdio.h>

static volatile unsigned long seed = (unsigned long)0x9e3779b97f4a7c15ull;
static unsigned long next(void) { seed = seed * (unsigned long)6364136223846793005ull + (unsigned long)1442695040888963407ull; return seed; }

static int fails;
#define CHECK(x) do { if (!(x)) { printf("FAIL line %d\n", __LINE__); fails++; } } while (0)

__attribute__((noinline)) static long idx(long *a, long i) { return a[i] + a[i + 1]; }
__attribute__((noinline)) static unsigned long rotl(unsigned long x, unsigned n) { return (x << (n & (8 * sizeof x - 1))) | (x >> (-n & (8 * sizeof x - 1))); }
__attribute__((noinline)) static unsigned long andn(unsigned long a, unsigned long b) { return a & ~b; }
__attribute__((noinline)) static unsigned long orn(unsigned long a, unsigned long b) { return a | ~b; }
__attribute__((noinline)) static unsigned long xnor(unsigned long a, unsigned long b) { return ~(a ^ b); }
__attribute__((noinline)) static long smin(long a, long b) { return a < b ? a : b; }
__attribute__((noinline)) static unsigned long umax(unsigned long a, unsigned long b) { return a > b ? a : b; }
__attribute__((noinline)) static long sextb(long x) { return (signed char)x; }
__attribute__((noinline)) static long sexth(long x) { return (short)x; }
__attribute__((noinline)) static unsigned long zexth(unsigned long x) { return (unsigned short)x; }
#if __riscv_xlen == 64
__attribute__((noinline)) static unsigned long adduw(unsigned long a, unsigned int b) { return a + b; }
__attribute__((noinline)) static unsigned long sh2adduw(unsigned long a, unsigned int b) { return a + ((unsigned long)b << 2); }
__attribute__((noinline)) static int clzw(unsigned int x) { return x ? __builtin_clz(x) : 32; }
#endif

int main(void) {
    long arr[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    unsigned long acc = 0;
    CHECK(idx(arr, 3) == 9);
    for (int i = 0; i < 200; i++) {
        unsigned long a = next(), b = next();
        unsigned n = (unsigned)(b % 97);
        acc = acc * 31 + (unsigned long)__builtin_popcountl(a);
        acc = acc * 31 + (unsigned long)(a ? __builtin_clzl(a) : 64);
        acc = acc * 31 + (unsigned long)(a ? __builtin_ctzl(a) : 64);
        acc = acc * 31 + rotl(a, n) + andn(a, b) + orn(a, b) + xnor(a, b);
        acc = acc * 31 + (unsigned long)smin((long)a, (long)b) + umax(a, b);
        acc = acc * 31 + (unsigned long)sextb((long)a) + (unsigned long)sexth((long)b) + zexth(a);
        acc = acc * 31 + __builtin_bswap32((uint32_t)a);
#if __riscv_xlen == 64
        acc = acc * 31 + __builtin_bswap64(b) + adduw(a, (unsigned)b) + sh2adduw(b, (unsigned)a);
        acc = acc * 31 + (unsigned long)clzw((unsigned)a) + (unsigned long)__builtin_popcount((unsigned)b);
#endif
        CHECK((unsigned long)__builtin_popcountl(a & b) <= (unsigned long)__builtin_popcountl(a));
    }
    printf("bitmanip %lx fails=%d\n", acc, fails);
    return fails != 0;
}
