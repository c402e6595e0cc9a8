/*
 * perf_count: a Linux user program that counts a known loop with perf_event_open(2) through the
 * kernel's riscv-pmu-sbi driver and the SBI PMU (issue 32 item 5).
 *
 * Freestanding (raw system calls, no C library), so the counted window is exactly the
 * instructions of count_loop's asm block: after the enabling ioctl returns to user mode,
 *     mv   t0, n          1
 *  1: addi t0, t0, -1     n
 *     bnez t0, 1b         n   (conditional branches: n)
 *     mv   a0, fd         1
 *     mv   a1, DISABLE    1
 *     ecall               0   (ECALL does not retire: privileged ISA, "Machine Instructions Retired")
 * i.e. 2n + 3 instructions and n branches in user mode. The events exclude the kernel
 * (exclude_kernel: the driver asks the SBI for SINH, which the hart applies through Sscofpmf's
 * mhpmevent or Smcntrpmf's mcyclecfg/minstretcfg), so the kernel's own work between the ioctls
 * is not counted.
 *
 * Prints one line per event and loop length: "perf: EVENT n=N count=C" (or "perf: EVENT
 * error=E" when a system call fails), then "perf: done".
 */
#include <asm/unistd.h>
#include <linux/perf_event.h>

typedef unsigned long u64;

static long sys(long nr, long a0, long a1, long a2, long a3, long a4)
{
    register long x10 __asm__("a0") = a0;
    register long x11 __asm__("a1") = a1;
    register long x12 __asm__("a2") = a2;
    register long x13 __asm__("a3") = a3;
    register long x14 __asm__("a4") = a4;
    register long x17 __asm__("a7") = nr;
    __asm__ volatile("ecall"
                     : "+r"(x10)
                     : "r"(x11), "r"(x12), "r"(x13), "r"(x14), "r"(x17)
                     : "memory");
    return x10;
}

static void put(const char *s)
{
    long n = 0;
    while (s[n])
        n++;
    sys(__NR_write, 1, (long)s, n, 0, 0);
}

static void put_num(long v)
{
    char buf[24];
    int i = sizeof buf - 1;
    int neg = v < 0;
    u64 u = neg ? -(u64)v : (u64)v;
    buf[i] = 0;
    do {
        buf[--i] = '0' + u % 10;
        u /= 10;
    } while (u);
    if (neg)
        buf[--i] = '-';
    put(&buf[i]);
}

/* Enable the counter, run the loop n times, disable it: the window described above. */
static long count_loop(long fd, long n)
{
    register long a0 __asm__("a0") = fd;
    register long a1 __asm__("a1") = PERF_EVENT_IOC_ENABLE;
    register long a2 __asm__("a2") = 0;
    register long a7 __asm__("a7") = __NR_ioctl;
    register long s2 __asm__("s2") = fd;
    register long s3 __asm__("s3") = PERF_EVENT_IOC_DISABLE;
    register long s4 __asm__("s4") = n;
    __asm__ volatile("ecall\n"
                     "mv t0, s4\n"
                     "1: addi t0, t0, -1\n"
                     "bnez t0, 1b\n"
                     "mv a0, s2\n"
                     "mv a1, s3\n"
                     "ecall\n"
                     : "+r"(a0), "+r"(a1)
                     : "r"(a2), "r"(a7), "r"(s2), "r"(s3), "r"(s4)
                     : "t0", "memory");
    return a0;
}

static void measure(const char *name, u64 config, long n)
{
    struct perf_event_attr attr;
    char *p = (char *)&attr;
    for (unsigned i = 0; i < sizeof attr; i++)
        p[i] = 0;
    attr.type = PERF_TYPE_HARDWARE;
    attr.size = sizeof attr;
    attr.config = config;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    put("perf: ");
    put(name);
    long fd = sys(__NR_perf_event_open, (long)&attr, 0, -1, -1, 0);
    if (fd < 0) {
        put(" error=");
        put_num(fd);
        put("\n");
        return;
    }
    long r = count_loop(fd, n);
    u64 count = 0;
    long got = r < 0 ? r : sys(__NR_read, fd, (long)&count, sizeof count, 0, 0);
    if (got != sizeof count) {
        put(" error=");
        put_num(got < 0 ? got : -1);
        put("\n");
    } else {
        put(" n=");
        put_num(n);
        put(" count=");
        put_num((long)count);
        put("\n");
    }
    sys(__NR_close, fd, 0, 0, 0, 0);
}

void _start(void) __attribute__((noreturn));
void _start(void)
{
    static const struct {
        const char *name;
        u64 config;
    } events[] = {
        {"instructions", PERF_COUNT_HW_INSTRUCTIONS},
        {"branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
        {"cycles", PERF_COUNT_HW_CPU_CYCLES},
    };
    for (unsigned e = 0; e < sizeof events / sizeof events[0]; e++) {
        measure(events[e].name, events[e].config, 1000);
        measure(events[e].name, events[e].config, 100000);
    }
    put("perf: done\n");
    sys(__NR_exit, 0, 0, 0, 0, 0);
    for (;;)
        ;
}
