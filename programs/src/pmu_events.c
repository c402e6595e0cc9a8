/* Event counting over a known region. Counters 3..13 are programmed with INSTRUCTIONS,
 * BRANCH_INSTRUCTIONS, L1D read access (loads), L1D write access (stores), BRANCH_MISSES, L1D
 * read miss and CPU_CYCLES (SBI PMU event_idx values), and the hart model's raw events
 * compressed instructions, atomics, calls and returns; then one region runs between the only
 * `csrw mcountinhibit, zero` of the program (which is not counted) and the next
 * `csrw mcountinhibit, REG` (which is): loops with loads and stores, data-dependent branches,
 * calls through function pointers, recursion, LR/SC, AMOs, compressed code (the whole program
 * is built with C), and on RV64 FP loads and stores. The counts are printed as fixed-width hex
 * by a printer without data-dependent branches, so the retired-PC list is the same whatever
 * the counts are (QEMU counts only cycles and instructions, yet its PC list must still equal
 * the hart model's). crates/sim/tests/counters.rs checks the printed counts against its own
 * classification of the retired instructions between the two markers. */
#include <stdio.h>
#include <stdint.h>
#include "pmu.h"

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)f;
    (void)vec;
    printf("FAIL unexpected trap cause %lx at %lx\n", cause, epc);
    return epc + insn_len(epc);
}

unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    return m_trap(cause, epc, f, vec);
}

static const struct { int n; unsigned long event; const char *name; } counters[] = {
    { 3, EV_INSTRUCTIONS, "INSTRUCTIONS" },
    { 4, EV_BRANCH_INSTRUCTIONS, "BRANCH_INSTRUCTIONS" },
    { 5, EV_L1D_READ_ACCESS, "L1D_READ_ACCESS" },
    { 6, EV_L1D_WRITE_ACCESS, "L1D_WRITE_ACCESS" },
    { 7, EV_BRANCH_MISSES, "BRANCH_MISSES" },
    { 8, EV_L1D_READ_MISS, "L1D_READ_MISS" },
    { 9, EV_CPU_CYCLES, "CPU_CYCLES" },
    /* raw events of the hart model (crates/sim: counters.rs RAW_EVENTS) */
    { 10, 0x20008, "RAW_COMPRESSED" },
    { 11, 0x2000a, "RAW_ATOMICS" },
    { 12, 0x20004, "RAW_CALLS" },
    { 13, 0x20005, "RAW_RETURNS" },
};
#define NCOUNTERS (int)(sizeof counters / sizeof counters[0])

/* 16 hex digits, same instructions for every value. */
static void put_hex64(uint64_t v) {
    static const char digits[] = "0123456789abcdef";
    char buf[17];
    for (int i = 0; i < 16; i++)
        buf[i] = digits[(v >> (60 - 4 * i)) & 15];
    buf[16] = 0;
    fputs(buf, stdout);
}

/* ---- the region's work ---- */
#define N 256
static volatile uint32_t src[N], dst[N];
static volatile uint32_t shared_word;
#if __riscv_flen >= 64
static volatile double fsrc[32];
#endif

static uint32_t lfsr(uint32_t x) { return (x >> 1) ^ (-(x & 1u) & 0xd0000001u); }

static __attribute__((noinline)) uint32_t op_add(uint32_t a, uint32_t b) { return a + b; }
static __attribute__((noinline)) uint32_t op_xor(uint32_t a, uint32_t b) { return a ^ b; }
static __attribute__((noinline)) uint32_t op_mix(uint32_t a, uint32_t b) { return (a << 3) - b; }
static uint32_t (*const ops[4])(uint32_t, uint32_t) = { op_add, op_xor, op_mix, op_add };

static __attribute__((noinline)) uint32_t fib(uint32_t n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static __attribute__((noinline)) uint32_t atomics(uint32_t k) {
    uint32_t old, t, r = 0;
    for (uint32_t i = 0; i < k; i++) {
        __asm__ volatile("amoadd.w %0, %1, (%2)" : "=r"(old) : "r"(i + 1), "r"(&shared_word) : "memory");
        r += old;
        __asm__ volatile("amoswap.w %0, %1, (%2)" : "=r"(old) : "r"(r), "r"(&shared_word) : "memory");
        /* LR/SC increment; the SC succeeds (no other hart, no trap in between). */
        __asm__ volatile("1: lr.w %0, (%2)\n\t"
                         "addi %1, %0, 1\n\t"
                         "sc.w %1, %1, (%2)\n\t"
                         "bnez %1, 1b"
                         : "=&r"(old), "=&r"(t) : "r"(&shared_word) : "memory");
        r ^= old;
    }
    return r;
}

static __attribute__((noinline)) uint32_t region_work(void) {
    uint32_t x = 0x1234567u, acc = 0;
    for (int i = 0; i < N; i++) {             /* stores */
        x = lfsr(x);
        src[i] = x;
    }
    for (int i = 0; i < N; i++) {             /* loads, stores, data-dependent branches */
        uint32_t v = src[i];
        if (v & 1)
            acc += v;
        else
            acc ^= v >> 3;
        if ((v & 6) == 6)
            dst[i] = acc;
        else
            dst[(i * 7) & (N - 1)] = v;
    }
    for (int i = 0; i < 64; i++)              /* indirect calls */
        acc = ops[src[i] & 3](acc, src[i + 1]);
    acc += fib(12);                           /* calls and returns */
    acc += atomics(20);
#if __riscv_flen >= 64
    double d = 0;
    for (int i = 0; i < 32; i++)              /* FP stores and loads */
        fsrc[i] = (double)src[i] * 0.5;
    for (int i = 0; i < 32; i++)
        d += fsrc[i];
    acc += (uint32_t)d;
#endif
    return acc;
}

int main(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    STOP_ALL();
    for (int i = 0; i < NCOUNTERS; i++) {
        evt_set(counters[i].n, counters[i].event, 0);
        ctr_write(counters[i].n, 0);
    }
    CSRW_I(CSR_MINSTRET, 0);
#if __riscv_xlen == 32
    CSRW_I(CSR_MINSTRETH, 0);
#endif
    uint32_t r;
    /* The region: from after this csrw (not counted) up to and including the stopping csrw. */
    __asm__ volatile("csrw mcountinhibit, zero" ::: "memory");
    r = region_work();
    __asm__ volatile("csrw mcountinhibit, %0" :: "r"(-1l) : "memory");
    for (int i = 0; i < NCOUNTERS; i++) {
        /* n, event and name are the same in every run; only the count goes through put_hex64 */
        printf("hpm%d event %05lx %-19s count ", counters[i].n, counters[i].event, counters[i].name);
        put_hex64(ctr_read(counters[i].n));
        fputs("\n", stdout);
    }
    fputs("minstret ", stdout);
    put_hex64(minstret64());
    fputs("\nresult ", stdout);
    put_hex64(r);
    fputs("\npmu_events done\n", stdout);
    return 0;
}
