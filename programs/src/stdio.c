/* Console output through picolibc's semihosting stdio: puts, putchar, printf with many
 * conversions, snprintf/sscanf/strtol round trips, fputs and fwrite; the last line goes to
 * stderr (in picolibc stdin/stdout/stderr are one semihosting console stream, SYS_WRITEC per
 * character). Self-checking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

static int fails;

int main(void) {
    puts("puts: hello from rvtrace's test program");
    for (const char *p = "putchar: abc\n"; *p; p++) putchar(*p);
    printf("ints: %d %i %u %x %X %o %5d|%-5d|%05d %+d\n", -42, 17, 4000000000u, 0xbeef, 0xbeef, 8, 42, 42, 42, 7);
    printf("longs: %ld %lu %lld %llx %hhd %hd\n", -123456789l, 123456789ul, -1234567890123ll, 0x123456789abcll, (char)300, (short)70000);
    printf("sizes: %zu %td %jd\n", sizeof(long), (ptrdiff_t)-3, (intmax_t)99);
    printf("strings: [%s] [%10s] [%-10s] [%.3s] %c%c %%\n", "abc", "right", "left", "truncate", 'o', 'k');
    printf("floats: %f %.2f %e %g %g %a\n", 3.14159, -2.5, 12345.678, 0.0001, 1e20, 1.0);
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%s-%04d-%x", "id", 77, 255);
    printf("snprintf: %s (%d)\n", buf, n);
    if (strcmp(buf, "id-0077-ff") != 0 || n != 10) { puts("FAIL snprintf"); fails++; }
    n = snprintf(buf, 8, "%s", "0123456789");
    if (strcmp(buf, "0123456") != 0 || n != 10) { puts("FAIL snprintf truncation"); fails++; }
    int a = 0; unsigned b = 0; char word[16];
    if (sscanf("  -17 0x1f token", "%d %x %15s", &a, &b, word) != 3 || a != -17 || b != 31 || strcmp(word, "token")) {
        puts("FAIL sscanf"); fails++;
    }
    char *end;
    long v = strtol("  -9876xyz", &end, 10);
    if (v != -9876 || strcmp(end, "xyz") != 0) { puts("FAIL strtol"); fails++; }
    if (strtoul("777", NULL, 8) != 511 || atoi("123") != 123) { puts("FAIL strtoul/atoi"); fails++; }
    printf("scanned: %d %u %s %ld\n", a, b, word, v);
    fputs("fputs: line via fputs\n", stdout);
    fwrite("fwrite: 17 bytes\n", 1, 17, stdout);
    for (int i = 0; i < 5; i++) printf("%d%s", i * i, i < 4 ? "," : "\n");
    printf("stdio fails=%d\n", fails);
    fflush(stdout);
    fprintf(stderr, "stderr: last line\n");
    return fails;
}
