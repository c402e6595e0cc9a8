/* The S-mode runtime of the SBI payloads (sbi.h). */
#include <stdarg.h>
#include "sbi.h"

struct sbiret sbi_call(unsigned long eid, unsigned long fid, unsigned long a0, unsigned long a1,
                       unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5) {
    register unsigned long r0 __asm__("a0") = a0;
    register unsigned long r1 __asm__("a1") = a1;
    register unsigned long r2 __asm__("a2") = a2;
    register unsigned long r3 __asm__("a3") = a3;
    register unsigned long r4 __asm__("a4") = a4;
    register unsigned long r5 __asm__("a5") = a5;
    register unsigned long r6 __asm__("a6") = fid;
    register unsigned long r7 __asm__("a7") = eid;
    __asm__ volatile("ecall"
                     : "+r"(r0), "+r"(r1)
                     : "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6), "r"(r7)
                     : "memory");
    struct sbiret r = {(long)r0, r1};
    return r;
}

struct sbiret pmu_config_matching(unsigned long base, unsigned long mask, unsigned long flags,
                                  unsigned long event_idx, uint64_t event_data) {
#if XLEN == 64
    return SBI5(EID_PMU, PMU_COUNTER_CONFIG_MATCHING, base, mask, flags, event_idx, event_data);
#else
    return sbi_call(EID_PMU, PMU_COUNTER_CONFIG_MATCHING, base, mask, flags, event_idx,
                    (unsigned long)event_data, (unsigned long)(event_data >> 32));
#endif
}

struct sbiret pmu_start(unsigned long base, unsigned long mask, unsigned long flags,
                        uint64_t initial_value) {
#if XLEN == 64
    return SBI4(EID_PMU, PMU_COUNTER_START, base, mask, flags, initial_value);
#else
    return SBI5(EID_PMU, PMU_COUNTER_START, base, mask, flags, (unsigned long)initial_value,
                (unsigned long)(initial_value >> 32));
#endif
}

struct sbiret pmu_stop(unsigned long base, unsigned long mask, unsigned long flags) {
    return SBI3(EID_PMU, PMU_COUNTER_STOP, base, mask, flags);
}

/* ---- console ---- */

static int dbcn = -1; /* unknown, 0 = legacy putchar, 1 = DBCN */

static void write_bytes(const char *s, unsigned long n) {
    if (dbcn < 0) dbcn = SBI1(EID_BASE, 3, EID_DBCN).value != 0; /* base 4.4 probe */
    if (dbcn) {
        while (n) { /* DBCN 12.1: may write fewer bytes than asked */
            struct sbiret r = SBI3(EID_DBCN, 0, n, (unsigned long)s, 0);
            if (r.error || r.value == 0 || r.value > n) break;
            s += r.value;
            n -= r.value;
        }
    } else {
        while (n--) SBI1(EID_LEGACY_PUTCHAR, 0, (unsigned char)*s++);
    }
}

void putstr(const char *s) {
    unsigned long n = 0;
    while (s[n]) n++;
    write_bytes(s, n);
}

/* printf: %d %i %u %x %X %c %s %p %%, length l/ll/z, flags '0' '-', width. Output is collected
 * in a line buffer and written per line (one DBCN call per line). */
static char line[256];
static unsigned line_len;

static void out(char c) {
    line[line_len++] = c;
    if (c == '\n' || line_len == sizeof line) {
        write_bytes(line, line_len);
        line_len = 0;
    }
}

static void out_num(uint64_t v, unsigned base, int neg, int width, char pad, int left, int upper) {
    char buf[24];
    int n = 0;
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    do {
        buf[n++] = digits[v % base];
        v /= base;
    } while (v);
    int len = n + neg;
    if (neg && (pad == '0' || left)) out('-');
    if (!left)
        for (int i = len; i < width; i++) out(pad);
    if (neg && !(pad == '0' || left)) out('-');
    while (n) out(buf[--n]);
    if (left)
        for (int i = len; i < width; i++) out(' ');
}

static int vprintf_(const char *fmt, va_list ap) {
    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            out(*fmt);
            continue;
        }
        fmt++;
        int left = 0, width = 0, lng = 0;
        char pad = ' ';
        for (;; fmt++) {
            if (*fmt == '-') left = 1;
            else if (*fmt == '0') pad = '0';
            else break;
        }
        while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
        while (*fmt == 'l' || *fmt == 'z') {
            lng++;
            fmt++;
        }
        uint64_t v;
        switch (*fmt) {
        case 'd':
        case 'i': {
            int64_t s = lng >= 2 ? va_arg(ap, long long) : lng ? va_arg(ap, long) : va_arg(ap, int);
            out_num(s < 0 ? -(uint64_t)s : (uint64_t)s, 10, s < 0, width, pad, left, 0);
            break;
        }
        case 'u':
        case 'x':
        case 'X':
            v = lng >= 2 ? va_arg(ap, unsigned long long)
                : lng  ? va_arg(ap, unsigned long)
                       : va_arg(ap, unsigned);
            out_num(v, *fmt == 'u' ? 10 : 16, 0, width, pad, left, *fmt == 'X');
            break;
        case 'p':
            out('0');
            out('x');
            out_num((uintptr_t)va_arg(ap, void *), 16, 0, width, pad, left, 0);
            break;
        case 'c':
            out((char)va_arg(ap, int));
            break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            int n = 0;
            while (s[n]) n++;
            if (!left)
                for (int i = n; i < width; i++) out(' ');
            for (int i = 0; i < n; i++) out(s[i]);
            if (left)
                for (int i = n; i < width; i++) out(' ');
            break;
        }
        case '%':
            out('%');
            break;
        default:
            out('%');
            out(*fmt);
            if (!*fmt) return 0;
        }
    }
    return 0;
}

int printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf_(fmt, ap);
    va_end(ap);
    return 0;
}

static void flush(void) {
    if (line_len) write_bytes(line, line_len);
    line_len = 0;
}

void sbi_exit(int status) {
    flush();
    SBI2(EID_SRST, 0, 0, status ? 1 : 0); /* SRST 10.1: shutdown, no reason / system failure */
    putstr("FAIL srst 10.1 system_reset returned\n");
    for (;;) __asm__ volatile("wfi");
}

/* ---- checks ---- */

int n_ok, n_fail;

const char *err_name(long e) {
    static const char *names[] = {"SUCCESS",         "ERR_FAILED",          "ERR_NOT_SUPPORTED",
                                  "ERR_INVALID_PARAM", "ERR_DENIED",        "ERR_INVALID_ADDRESS",
                                  "ERR_ALREADY_AVAILABLE", "ERR_ALREADY_STARTED",
                                  "ERR_ALREADY_STOPPED", "ERR_NO_SHMEM", "ERR_INVALID_STATE",
                                  "ERR_BAD_RANGE", "ERR_TIMEOUT", "ERR_IO", "ERR_DENIED_LOCKED"};
    /* SBI v3.0, binary-encoding.adoc, table "Standard SBI Errors": 0 to -14. */
    if (e <= 0 && e >= -14) return names[-e];
    return "ERR_(unknown)";
}

void check(const char *sect, const char *what, int cond, const char *fmt, ...) {
    if (cond) {
        n_ok++;
        printf("ok %s %s\n", sect, what);
        return;
    }
    n_fail++;
    printf("FAIL %s %s: got ", sect, what);
    va_list ap;
    va_start(ap, fmt);
    vprintf_(fmt, ap);
    va_end(ap);
    out('\n');
}

void check_err(const char *sect, const char *what, struct sbiret r, long want) {
    check(sect, what, r.error == want, "%s (%ld), want %s", err_name(r.error), r.error,
          err_name(want));
}

void check_ok_val(const char *sect, const char *what, struct sbiret r, unsigned long want) {
    check(sect, what, r.error == 0 && r.value == want, "%s value %lu, want SUCCESS value %lu",
          err_name(r.error), r.value, want);
}

int summary(const char *name) {
    printf("%s: %d ok, %d FAIL\n", name, n_ok, n_fail);
    return n_fail != 0;
}

/* ---- traps ---- */

volatile unsigned long irq_count[16];
volatile unsigned long lcofi_scountovf;

void trap_handler(struct trap_frame *f) {
    (void)f;
    unsigned long cause = CSR_READ(scause);
    unsigned long code = cause << 1 >> 1;
    if ((long)cause < 0 && code < 16) {
        irq_count[code]++;
        switch (code) {
        case IRQ_SSI:
            CSR_CLEAR(sip, 1ul << IRQ_SSI);
            return;
        case IRQ_STI: /* TIME 6.1: a time infinitely far away clears the pending bit */
            sbi_call(EID_TIME, 0, -1ul, -1ul, 0, 0, 0, 0);
            return;
        case IRQ_LCOFI: /* Sscofpmf: scountovf shows the OF bits (as mcounteren allows) */
            __asm__ volatile("csrr %0, 0xda0" : "=r"(lcofi_scountovf));
            CSR_CLEAR(sip, 1ul << IRQ_LCOFI);
            return;
        }
    }
    printf("FAIL trap unexpected: scause %lx sepc %lx stval %lx\n", cause, CSR_READ(sepc),
           CSR_READ(stval));
    n_fail++;
    sbi_exit(1);
}

/* ---- counters ---- */

#define RD(n)                                                                                      \
    case n:                                                                                        \
        __asm__ volatile("csrr %0, " #n : "=r"(v));                                               \
        break;
static unsigned long csr_read_num(unsigned csr) {
    unsigned long v = 0;
    switch (csr) {
        RD(0xc00) RD(0xc01) RD(0xc02) RD(0xc03) RD(0xc04) RD(0xc05) RD(0xc06) RD(0xc07)
        RD(0xc08) RD(0xc09) RD(0xc0a) RD(0xc0b) RD(0xc0c) RD(0xc0d) RD(0xc0e) RD(0xc0f)
        RD(0xc10) RD(0xc11) RD(0xc12) RD(0xc13) RD(0xc14) RD(0xc15) RD(0xc16) RD(0xc17)
        RD(0xc18) RD(0xc19) RD(0xc1a) RD(0xc1b) RD(0xc1c) RD(0xc1d) RD(0xc1e) RD(0xc1f)
#if XLEN == 32
        RD(0xc80) RD(0xc81) RD(0xc82) RD(0xc83) RD(0xc84) RD(0xc85) RD(0xc86) RD(0xc87)
        RD(0xc88) RD(0xc89) RD(0xc8a) RD(0xc8b) RD(0xc8c) RD(0xc8d) RD(0xc8e) RD(0xc8f)
        RD(0xc90) RD(0xc91) RD(0xc92) RD(0xc93) RD(0xc94) RD(0xc95) RD(0xc96) RD(0xc97)
        RD(0xc98) RD(0xc99) RD(0xc9a) RD(0xc9b) RD(0xc9c) RD(0xc9d) RD(0xc9e) RD(0xc9f)
#endif
    }
    return v;
}

uint64_t read_counter_csr(unsigned csr) {
#if XLEN == 64
    return csr_read_num(csr);
#else
    for (;;) {
        uint32_t hi = csr_read_num(csr + 0x80), lo = csr_read_num(csr);
        if (csr_read_num(csr + 0x80) == hi) return (uint64_t)hi << 32 | lo;
    }
#endif
}

uint64_t rdtime(void) { return read_counter_csr(0xc01); }

void spin(unsigned long n) {
    __asm__ volatile("1: addi %0, %0, -1\n bnez %0, 1b" : "+r"(n));
}
