/* printf over SiFive's ITC (Instrumentation Trace Component): text prints on stimulus channel 0,
 * "no load string" (NLS) prints on channels 1-3, the way SiFive's itc_utils sends them
 * (sifive/trace-decoder doc/ITCPrint.md, examples/itc_utils; crates/ntrace/README.md, "SiFive
 * dialect"). Every line also goes to the console through semihosting, so a test can compare what
 * a trace decoder prints from the trace with what the program printed.
 *
 * Run on the hart model with the port (QEMU's virt has none):
 *   rvtrace run itc_printf-rv64gc.elf --itc 0x1000000 --ingress t.ing
 *   rvtrace encode ntrace t.ing --dialect sifive -o t.bin
 *   rvtrace decode ntrace t.bin --elf itc_printf-rv64gc.elf --itc-print -
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef ITC_BASE
#define ITC_BASE 0x1000000UL
#endif
/* The trace encoder's registers: itcTraceEnable (a bit per channel), itcStimulus[32]. */
#define ITC_ENABLE (*(volatile uint32_t *)(ITC_BASE + 0x60))
#define ITC_STIMULUS(ch) ((volatile uint32_t *)(ITC_BASE + 0x80 + 4 * (ch)))

/* NLS formats: "channel:format" in the ELF's .comment section; the trace carries only the
 * arguments, packed into one 32-bit store. */
#ident "1:count %d of %d"
#ident "2:fields %u %d %x"
#ident "3:bytes %c%c%c%c"

/* A stimulus register reads 0 while its FIFO is full. */
static void itc_wait(volatile uint32_t *s)
{
    while (*s == 0) {
    }
}

/* Text: 4 bytes per 32-bit store (little endian: the first byte is the least significant), the
 * rest as a 16-bit store at +2 and an 8-bit store at +3. */
static void itc_text(int ch, const char *p, size_t n)
{
    volatile uint32_t *s = ITC_STIMULUS(ch);
    for (; n >= 4; p += 4, n -= 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        itc_wait(s);
        *s = w;
    }
    if (n >= 2) {
        uint16_t h;
        memcpy(&h, p, 2);
        itc_wait(s);
        ((volatile uint16_t *)s)[1] = h;
        p += 2;
        n -= 2;
    }
    if (n) {
        itc_wait(s);
        ((volatile uint8_t *)s)[3] = (uint8_t)*p;
    }
}

/* printf to the console and, as a text print, to channel 0. */
static void say(const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 1)
        n = sizeof buf - 1;
    fputs(buf, stdout);
    itc_text(0, buf, (size_t)n);
}

static void itc_nls(int ch, uint32_t data)
{
    volatile uint32_t *s = ITC_STIMULUS(ch);
    itc_wait(s);
    *s = data;
}

int main(void)
{
    static const char *const words[] = {"a", "be", "sea", "deep", "eaves", "fennel", "gallery"};
    ITC_ENABLE = 0xf; /* channels 0-3 */
    say("Hello from the ITC\n");
    /* Line lengths 2..8 end in every mix of 32-, 16- and 8-bit stores. */
    for (int i = 0; i < 7; i++)
        say("%s\n", words[i]);
    for (int i = 1; i <= 3; i++) {
        say("line %d of %d: %s\n", i, 3, words[i + 2]);
        /* Two arguments: 16 bits each. */
        itc_nls(1, (uint32_t)i << 16 | 3);
        printf("count %d of %d\n", i, 3);
    }
    /* Three arguments: 11, 11 and 10 bits; %d reads its field as signed. */
    unsigned u = 2047;
    int d = -5;
    unsigned x = 0x2a;
    itc_nls(2, (u & 0x7ff) << 21 | ((uint32_t)d & 0x7ff) << 10 | (x & 0x3ff));
    printf("fields %u %d %x\n", u, d, x);
    /* Four arguments: bytes, the first the most significant. */
    itc_nls(3, (uint32_t)'r' << 24 | (uint32_t)'v' << 16 | (uint32_t)'t' << 8 | 'r');
    printf("bytes %c%c%c%c\n", 'r', 'v', 't', 'r');
    say("Bye\n");
    return 0;
}
