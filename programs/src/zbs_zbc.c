/* Zbs and Zbc (RISC-V Bit-Manipulation ISA-extensions 1.0.0, "Zbs: Single-bit instructions",
 * "Zbc: Carry-less multiplication"): every instruction, in inline assembly so that each one is
 * exactly there, with edge operands: bit 0 and bit XLEN-1, a register bit index beyond XLEN (only
 * its low log2(XLEN) bits count), every immediate form at shamt 0, 1, XLEN/2 and XLEN-1, clmul of
 * all-ones, and the clmulh/clmulr identities. Built with -march=..._zbs_zbc. Each result is printed
 * and checked against plain C (shifts and loops); the printed output is compared with QEMU's. */
#include <stdio.h>

#define XLEN __riscv_xlen
#define W (XLEN / 4)
typedef unsigned long u;

static int fails;
#define CHECK(x) do { if (!(x)) { printf("FAIL line %d\n", __LINE__); fails++; } } while (0)

#define RTYPE(op) \
    __attribute__((noinline)) static u op(u a, u b) { u r; __asm__ volatile(#op " %0,%1,%2" : "=r"(r) : "r"(a), "r"(b)); return r; }
RTYPE(bclr)
RTYPE(bext)
RTYPE(binv)
RTYPE(bset)
RTYPE(clmul)
RTYPE(clmulh)
RTYPE(clmulr)
/* The immediate forms, shamt a constant. */
#define ITYPE(op, a, n) ({ u r_; __asm__ volatile(#op " %0,%1,%2" : "=r"(r_) : "r"(a), "i"(n)); r_; })

static u bit(u n) { return 1ul << (n & (XLEN - 1)); }
static u ref_clmul(u a, u b) { u r = 0; for (int i = 0; i < XLEN; i++) if ((b >> i) & 1) r ^= a << i; return r; }
static u ref_clmulh(u a, u b) { u r = 0; for (int i = 1; i < XLEN; i++) if ((b >> i) & 1) r ^= a >> (XLEN - i); return r; }
static u ref_clmulr(u a, u b) { u r = 0; for (int i = 0; i < XLEN; i++) if ((b >> i) & 1) r ^= a >> (XLEN - i - 1); return r; }
static u rev(u x) { u r = 0; for (int i = 0; i < XLEN; i++) r |= ((x >> i) & 1) << (XLEN - 1 - i); return r; }

static volatile u seed = (u)0x9e3779b97f4a7c15ull;
static u next(void) { seed = seed * (u)6364136223846793005ull + (u)1442695040888963407ull; return seed; }

/* The register forms of Zbs for one operand and bit index, printed and checked. */
static void zbs(u a, u n) {
    u c = bclr(a, n), e = bext(a, n), i = binv(a, n), s = bset(a, n);
    printf("a=%0*lx n=%3ld: bclr %0*lx bext %lu binv %0*lx bset %0*lx\n", W, a, (long)n, W, c, e, W, i, W, s);
    CHECK(c == (a & ~bit(n)));
    CHECK(e == ((a >> (n & (XLEN - 1))) & 1));
    CHECK(i == (a ^ bit(n)));
    CHECK(s == (a | bit(n)));
}

/* The immediate forms at one shamt, for operands 0, all-ones and a pattern. */
#define ZBSI(n) do { \
    u v_[3] = {0, ~0ul, (u)0x5a5a5a5a5a5a5a5aull}; \
    for (int k = 0; k < 3; k++) { \
        u a = v_[k]; \
        u c = ITYPE(bclri, a, n), e = ITYPE(bexti, a, n), i = ITYPE(binvi, a, n), s = ITYPE(bseti, a, n); \
        printf("a=%0*lx i=%3d: bclri %0*lx bexti %lu binvi %0*lx bseti %0*lx\n", W, a, n, W, c, e, W, i, W, s); \
        CHECK(c == (a & ~bit(n)) && e == ((a >> (n)) & 1) && i == (a ^ bit(n)) && s == (a | bit(n))); \
    } \
} while (0)

static void zbc(u a, u b) {
    u l = clmul(a, b), h = clmulh(a, b), r = clmulr(a, b);
    printf("a=%0*lx b=%0*lx: clmul %0*lx clmulh %0*lx clmulr %0*lx\n", W, a, W, b, W, l, W, h, W, r);
    CHECK(l == ref_clmul(a, b));
    CHECK(h == ref_clmulh(a, b));
    CHECK(r == ref_clmulr(a, b));
    /* clmulr is bits 2*XLEN-2..XLEN-1 of the product: clmulh shifted up, and clmul's top bit. */
    CHECK(r == ((h << 1) | (l >> (XLEN - 1))));
    /* The spec's identity: clmulr(a, b) = rev(clmul(rev(a), rev(b))). */
    CHECK(r == rev(clmul(rev(a), rev(b))));
}

int main(void) {
    const u top = 1ul << (XLEN - 1), ones = ~0ul;
    const u as[] = {0, 1, top, ones, (u)0x5555555555555555ull, (u)0x0123456789abcdefull};
    /* Bit 0, 1, XLEN/2, XLEN-1; XLEN (= bit 0), XLEN+3, 2*XLEN-1 and -1 (= bit XLEN-1). */
    const u ns[] = {0, 1, XLEN / 2, XLEN - 1, XLEN, XLEN + 3, 2 * XLEN - 1, (u)-1};
    for (unsigned k = 0; k < sizeof as / sizeof as[0]; k++)
        for (unsigned j = 0; j < sizeof ns / sizeof ns[0]; j++)
            zbs(as[k], ns[j]);
    ZBSI(0);
    ZBSI(1);
    ZBSI(XLEN / 2);
    ZBSI(XLEN - 1);

    const u cs[] = {0, 1, 2, top, ones, top | 1, (u)0xaaaaaaaaaaaaaaaaull, (u)0x0123456789abcdefull};
    for (unsigned k = 0; k < sizeof cs / sizeof cs[0]; k++)
        for (unsigned j = 0; j < sizeof cs / sizeof cs[0]; j++)
            zbc(cs[k], cs[j]);
    /* All-ones squared over GF(2): every other bit, low and high halves alike. */
    CHECK(clmul(ones, ones) == (u)0x5555555555555555ull);
    CHECK(clmulh(ones, ones) == (u)0x5555555555555555ull);
    CHECK(clmulr(ones, ones) == (u)0xaaaaaaaaaaaaaaaaull);
    CHECK(clmulh(top, top) == top >> 1 && clmul(top, top) == 0 && clmulr(top, 1) == 1);

    u acc = 0;
    for (int k = 0; k < 100; k++) {
        u a = next(), b = next();
        u l = clmul(a, b), h = clmulh(a, b), r = clmulr(a, b);
        CHECK(l == ref_clmul(a, b) && h == ref_clmulh(a, b) && r == ref_clmulr(a, b));
        u c = bclr(a, b), e = bext(a, b), i = binv(a, b), s = bset(a, b);
        CHECK(c == (a & ~bit(b)) && e == ((a >> (b & (XLEN - 1))) & 1) && i == (a ^ bit(b)) && s == (a | bit(b)));
        acc = acc * 31 + l + h + r + c + e + i + s;
    }
    printf("zbs_zbc %0*lx fails=%d\n", W, acc, fails);
    return fails != 0;
}
