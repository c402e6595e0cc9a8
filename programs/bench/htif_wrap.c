/* The benchmark workload (workload.c) for hosts that speak HTIF instead of semihosting, such as
 * Spike: picolibc's stdout goes to the HTIF console (device 1, command 1: putchar) and _exit
 * writes (code << 1) | 1 to `tohost`. Linked with workload.c by build.sh (no --oslib).
 *
 * After the program's own output it prints one more line, the number of instructions retired
 * from the first C constructor to the first character written: that stretch is the same on every
 * correct hart (it has no polling), so two hosts that print the same two lines agree on the
 * computation and on its instruction count (crates/sim/tests/htif_workload.rs). RV64 only: a
 * console command needs a single 64-bit store to `tohost`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* In .data (picolibc.ld has no .tohost output section); hosts find them by symbol. */
volatile uint64_t tohost __attribute__((section(".data.tohost"), aligned(64)));
volatile uint64_t fromhost __attribute__((section(".data.tohost"), aligned(64)));

static uint64_t start_instret, first_output_instret;

static inline uint64_t instret(void) {
    uint64_t v;
    __asm__ volatile("csrr %0, minstret" : "=r"(v));
    return v;
}

__attribute__((constructor)) static void htif_start(void) { start_instret = instret(); }

/* One HTIF request, then wait until the host has taken it (the host clears `tohost`). Spike also
 * answers a console write in `fromhost`; clearing it lets the next answer in. */
static void htif_send(uint64_t cmd) {
    tohost = cmd;
    while (tohost != 0) {
    }
    fromhost = 0;
}

static void htif_putc(char c) { htif_send((1ull << 56) | (1ull << 48) | (uint8_t)c); }

static int stdout_put(char c, FILE *f) {
    (void)f;
    if (first_output_instret == 0) first_output_instret = instret();
    htif_putc(c);
    return (uint8_t)c;
}

static FILE htif_stdout = FDEV_SETUP_STREAM(stdout_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdout = &htif_stdout;
FILE *const stderr = &htif_stdout;

/* Decimal without stdio, so that printing it does not move the count printed. */
static void put_u64(uint64_t v) {
    char d[24];
    int n = 0;
    do d[n++] = (char)('0' + v % 10); while ((v /= 10) != 0);
    while (n) htif_putc(d[--n]);
}

void _exit(int code) {
    static const char label[] = "instructions to first output ";
    for (const char *p = label; *p; p++) htif_putc(*p);
    put_u64(first_output_instret - start_instret);
    htif_putc('\n');
    htif_send(((uint64_t)code << 1) | 1);
    for (;;) {
    }
}
