/* pmu_stat: a `perf stat`-like S-mode example. Finds a counter for each event through the SBI
 * PMU (counter_config_matching with SET_MINH: S-mode work only), starts each from 0
 * (counter_start SET_INIT_VALUE), runs a workload, stops them (counter_stop), reads hardware
 * counters through their CSR (counter_get_info) and firmware counters through counter_fw_read,
 * and prints a table: event, count, per 1000 instructions. Events no counter can take are
 * shown as <not supported>. */
#include "sbi.h"

static const struct {
    const char *name;
    unsigned long event_idx;
} events[] = {
    {"cycles", EV_HW(HW_CPU_CYCLES)},
    {"instructions", EV_HW(HW_INSTRUCTIONS)},
    {"branches", EV_HW(HW_BRANCH_INSTRUCTIONS)},
    {"branch-misses", EV_HW(HW_BRANCH_MISSES)},
    {"cache-references", EV_HW(HW_CACHE_REFERENCES)},
    {"cache-misses", EV_HW(HW_CACHE_MISSES)},
    {"L1-dcache-loads", EV_CACHE(0, 0, 0)},
    {"L1-dcache-load-misses", EV_CACHE(0, 0, 1)},
    {"L1-dcache-stores", EV_CACHE(0, 1, 0)},
    {"L1-icache-load-misses", EV_CACHE(1, 0, 1)},
    {"sbi-set-timer", EV_FW(FW_SET_TIMER)},
};
#define NEV (sizeof events / sizeof events[0])

/* ---- the workload: sieve, insertion sort of pseudo-random data, a data-dependent walk ---- */
static unsigned char sieve[20000];
static uint32_t data[600];

static uint32_t workload(void) {
    uint32_t sum = 0;
    for (unsigned i = 2; i < sizeof sieve; i++) sieve[i] = 1;
    for (unsigned i = 2; i * i < sizeof sieve; i++)
        if (sieve[i])
            for (unsigned j = i * i; j < sizeof sieve; j += i) sieve[j] = 0;
    for (unsigned i = 0; i < sizeof sieve; i++) sum += sieve[i];
    uint32_t x = 2463534242u;
    for (unsigned i = 0; i < sizeof data / sizeof data[0]; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data[i] = x;
    }
    for (unsigned i = 1; i < sizeof data / sizeof data[0]; i++) {
        uint32_t v = data[i];
        unsigned j = i;
        for (; j > 0 && data[j - 1] > v; j--) data[j] = data[j - 1];
        data[j] = v;
    }
    for (unsigned i = 0; i < sizeof data / sizeof data[0]; i += 7) sum = sum * 31 + data[i];
    for (unsigned k = 0; k < 4; k++) /* firmware work: counted by sbi-set-timer */
        sbi_call(EID_TIME, 0, -1ul, -1ul, 0, 0, 0, 0);
    return sum;
}

static void print_count(uint64_t v, uint64_t instrs) {
    printf("%20llu", (unsigned long long)v);
    if (instrs) {
        uint64_t t = (v * 10000 + instrs / 2) / instrs; /* per 1000, one decimal */
        printf("  %10llu.%llu", (unsigned long long)(t / 10), (unsigned long long)(t % 10));
    }
    printf("\n");
}

int main(unsigned long hartid, unsigned long dtb) {
    (void)dtb;
    printf("pmu_stat: rv%d hart %lu\n", XLEN, hartid);
    unsigned long n = SBI0(EID_PMU, PMU_NUM_COUNTERS).value;
    if (n > 64) n = 64;
    unsigned long info[64];
    int valid[64];
    for (unsigned i = 0; i < n; i++) {
        struct sbiret r = SBI1(EID_PMU, PMU_COUNTER_GET_INFO, i);
        info[i] = r.value;
        valid[i] = r.error == 0;
    }
    /* each event on a free counter: hardware events among the hardware counters, firmware
     * events among the firmware counters (first XLEN of each kind) */
    int ctr[NEV];
    for (unsigned e = 0; e < NEV; e++) {
        int fw = events[e].event_idx >> 16 == 0xf;
        unsigned long base = n, mask = 0;
        for (unsigned i = 0; i < n; i++) {
            if (!valid[i] || (int)(info[i] >> (XLEN - 1)) != fw) continue;
            if (base == n) base = i;
            if (i - base < XLEN) mask |= 1ul << (i - base);
        }
        struct sbiret r = mask ? pmu_config_matching(base, mask, CFG_SET_MINH,
                                                     events[e].event_idx, 0)
                               : (struct sbiret){SBI_ERR_NOT_SUPPORTED, 0};
        ctr[e] = -1;
        if (r.error == 0 && r.value < n && valid[r.value] && (int)(info[r.value] >> (XLEN - 1)) == fw)
            ctr[e] = r.value;
        else if (r.error == 0)
            printf("# %s: counter_config_matching answered counter %lu, not a %s counter\n",
                   events[e].name, r.value, fw ? "firmware" : "hardware");
    }
    for (unsigned e = 0; e < NEV; e++)
        if (ctr[e] >= 0) pmu_start(ctr[e], 1, START_SET_INIT_VALUE, 0);
    uint32_t result = workload();
    for (unsigned e = 0; e < NEV; e++)
        if (ctr[e] >= 0) pmu_stop(ctr[e], 1, 0);

    uint64_t val[NEV], instrs = 0;
    for (unsigned e = 0; e < NEV; e++) {
        if (ctr[e] < 0) continue;
        if (info[ctr[e]] >> (XLEN - 1)) {
            val[e] = SBI1(EID_PMU, PMU_COUNTER_FW_READ, ctr[e]).value;
#if XLEN == 32
            val[e] |= (uint64_t)SBI1(EID_PMU, PMU_COUNTER_FW_READ_HI, ctr[e]).value << 32;
#endif
        } else {
            val[e] = read_counter_csr(info[ctr[e]] & 0xfff);
        }
        if (events[e].event_idx == EV_HW(HW_INSTRUCTIONS)) instrs = val[e];
    }
    printf("\n Performance counter stats for the workload (SBI PMU, S-mode):\n\n");
    printf("  %-24s %20s  %12s\n", "event", "count", "per 1000 ins");
    for (unsigned e = 0; e < NEV; e++) {
        printf("  %-24s ", events[e].name);
        if (ctr[e] < 0) {
            printf("%20s\n", "<not supported>");
            continue;
        }
        print_count(val[e], instrs);
    }
    printf("\n workload result %x\n", (unsigned)result);
    for (unsigned e = 0; e < NEV; e++)
        if (ctr[e] >= 0) pmu_stop(ctr[e], 1, STOP_RESET), pmu_start(ctr[e], 1, 0, 0),
                         pmu_stop(ctr[e], 1, STOP_RESET);
    return 0;
}
