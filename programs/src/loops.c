/* Long-running loops: a 50000-iteration xorshift loop, a sieve of Eratosthenes up to
 * 30000, bubble sort (nested loops) and a do/while digit loop. Self-checking. */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

static int fails;
static void check(const char *what, unsigned long got, unsigned long want) {
    printf("%-10s %lu\n", what, got);
    if (got != want) { printf("FAIL %s: want %lu\n", what, want); fails++; }
}

#define SIEVE 30000
static uint8_t composite[SIEVE + 1];

int main(void) {
    /* 1: long counted loop */
    uint32_t x = 2463534242u, sum = 0;
    for (int i = 0; i < 50000; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        sum += x >> 24;
    }
    check("xorshift", x, 3936722372u);
    check("bytesum", sum, 6365519);

    /* 2: sieve */
    memset(composite, 0, sizeof composite);
    int primes = 0;
    for (int i = 2; i <= SIEVE; i++) {
        if (composite[i]) continue;
        primes++;
        for (int j = i * i; j <= SIEVE; j += i) composite[j] = 1;
    }
    check("primes", primes, 3245);

    /* 3: nested loops */
    int a[120];
    for (int i = 0; i < 120; i++) a[i] = (i * 7919) % 120;
    for (int i = 0; i < 119; i++)
        for (int j = 0; j < 119 - i; j++)
            if (a[j] > a[j + 1]) { int t = a[j]; a[j] = a[j + 1]; a[j + 1] = t; }
    int ok = 1;
    for (int i = 0; i < 120; i++) ok &= a[i] == i;
    check("bubble", ok, 1);

    /* 4: do/while */
    unsigned long n = 1, digits = 0;
    for (int k = 0; k < 300; k++) {
        unsigned long m = n;
        do { digits += m % 10; m /= 10; } while (m);
        n = n * 3 + 1;
        if (n > 1000000000ul) n %= 99991;
    }
    check("digits", digits, 8929);
    printf("loops fails=%d\n", fails);
    return fails;
}
