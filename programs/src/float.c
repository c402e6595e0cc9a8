/* Floating point: float and double arithmetic, sqrt, fma, conversions, comparisons,
 * libm calls and printf of doubles. Hardware F/D on rv64gc (also checks fflags),
 * soft-float (libgcc) on rv32imac. Self-checking with tolerances. */
#include <stdio.h>
#include <math.h>
#include <stdint.h>

static int fails;
static void checkd(const char *what, double got, double want, double tol) {
    printf("%-10s %.9g\n", what, got);
    if (!(fabs(got - want) <= tol)) { printf("FAIL %s: want %.9g\n", what, want); fails++; }
}
static void checki(const char *what, long got, long want) {
    printf("%-10s %ld\n", what, got);
    if (got != want) { printf("FAIL %s: want %ld\n", what, want); fails++; }
}

__attribute__((noinline)) static double newton_sqrt(double x) {
    double g = x > 1 ? x / 2 : 1;
    for (int i = 0; i < 30; i++) g = 0.5 * (g + x / g);
    return g;
}
__attribute__((noinline)) static float harmonic_f(int n) {
    float s = 0;
    for (int i = 1; i <= n; i++) s += 1.0f / (float)i;
    return s;
}
__attribute__((noinline)) static double leibniz_pi(int n) {
    double s = 0, sign = 1;
    for (int i = 0; i < n; i++) { s += sign / (2 * i + 1); sign = -sign; }
    return 4 * s;
}

static volatile double vd[4] = { 2.0, -3.5, 1e300, 0.1 };
static volatile float vf[4] = { 1.5f, -0.25f, 3e38f, 0.1f };

int main(void) {
    checkd("sqrt(2)", newton_sqrt(2.0), 1.4142135623730951, 1e-15);
    checkd("libsqrt", sqrt(vd[0]), 1.4142135623730951, 0);
    checkd("sqrtf", sqrtf(vf[0]), 1.2247448713915890, 1e-7);
    checkd("H(200)f", harmonic_f(200), 5.878030948121446, 1e-5);
    checkd("pi", leibniz_pi(2000), 3.1410926536210413, 1e-12);
#if __riscv_flen
    checkd("fma", fma(vd[3], 10.0, -1.0), 5.551115123125783e-17, 0);     /* fused: fmadd.d */
    checkd("fmaf", fmaf(vf[3], 10.0f, -1.0f), 1.4901161e-08, 1e-15);
#else
    checkd("fma", fma(vd[3], 10.0, -1.0), 0, 0);   /* picolibc's soft-float fma is not fused */
    checkd("fmaf", fmaf(vf[3], 10.0f, -1.0f), 0, 0);
#endif
    checkd("exp(1)", exp(1.0), 2.718281828459045, 1e-15);
    checkd("sin(1)", sin(vd[0] / 2), 0.8414709848078965, 1e-15);
    checkd("atan2", atan2(1.0, vd[1]), 2.8632929945846817, 1e-15);
    checkd("pow", pow(vd[0], 0.5), 1.4142135623730951, 1e-15);

    /* conversions and rounding */
    checki("(int)-3.5", (int)vd[1], -3);
    checki("lround", lround(vd[1]), -4);
    checki("floor", (long)floor(vd[1]), -4);
    checki("ceil", (long)ceil(vd[1]), -3);
    checki("f2u", (long)(unsigned)(vf[0] * 1000), 1500);
    checki("i2d", (long)((double)(int64_t)123456789012ll / 1000), 123456789);
    float big = vf[2] * 10.0f;                 /* overflows to +inf */
    checki("isinf", isinf(big) != 0, 1);
    volatile double inf = vd[2] * vd[2];       /* volatile: no fmsub contraction */
    double nan = inf - inf;
    checki("isnan", isnan(nan) != 0, 1);
    checki("nan==nan", nan == nan, 0);
    checki("lt", vd[1] < vd[0], 1);
    checki("fmin", (long)fmin(vd[0], vd[1]), -3);
    double tiny = vd[3];
    for (int i = 0; i < 350; i++) tiny /= 10;  /* underflows through subnormals to 0 */
    checki("zero", tiny == 0.0, 1);
    printf("mixed %.3f %.2e %g\n", vd[3] * 3, (double)vf[2], (double)vf[1]);

#if __riscv_flen
    /* fflags after an inexact division, with hardware FP only */
    unsigned long flags;
    __asm__ volatile("csrw fflags, zero");
    volatile double q = vd[0] / 3.0;
    __asm__ volatile("csrr %0, fflags" : "=r"(flags));
    checki("NX", flags & 1, 1);
    __asm__ volatile("csrw fflags, zero");
    q = vd[0] / 0.0;
    __asm__ volatile("csrr %0, fflags" : "=r"(flags));
    checki("DZ", (flags >> 3) & 1, 1);
    (void)q;
#endif
    printf("float fails=%d\n", fails);
    return fails;
}
