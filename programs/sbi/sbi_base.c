/* sbi_base: the non-PMU SBI extensions an S-mode payload relies on, checked against the SBI
 * v3.0 text: Base (4), legacy console putchar (5.2), TIME (6), IPI (7), RFENCE (8), HSM (9),
 * suspend, SRST argument checks (10), DBCN (12). Ends with SRST shutdown; sbi_fail checks SRST
 * "system failure". */
#include "sbi.h"

static int wait_irq(unsigned cause, unsigned long before) {
    /* wfi returns when an interrupt is pending-and-enabled in sie (even with SIE off) */
    for (int k = 0; k < 100 && irq_count[cause] == before; k++) __asm__ volatile("wfi");
    return irq_count[cause] != before;
}

static void test_base(void) {
    struct sbiret r = SBI0(EID_BASE, 0);
    check("base 4.1", "get_spec_version: SUCCESS, bit 31 and bits above 31 zero",
          r.error == 0 && (r.value >> 31) == 0, "%s value %lx", err_name(r.error), r.value);
    printf("# spec version %lu.%lu\n", r.value >> 24 & 0x7f, r.value & 0xffffff);
    r = SBI0(EID_BASE, 1);
    check("base 4.2", "get_impl_id: SUCCESS", r.error == 0, "%s", err_name(r.error));
    printf("# impl id %lu\n", r.value);
    check("base 4.3", "get_impl_version: SUCCESS", SBI0(EID_BASE, 2).error == 0, "%s",
          err_name(SBI0(EID_BASE, 2).error));
    static const struct {
        unsigned long eid;
        const char *name;
    } exts[] = {{EID_BASE, "probe Base"},     {EID_TIME, "probe TIME"}, {EID_IPI, "probe IPI"},
                {EID_RFENCE, "probe RFENCE"}, {EID_HSM, "probe HSM"},   {EID_SRST, "probe SRST"},
                {EID_PMU, "probe PMU"},       {EID_DBCN, "probe DBCN"}};
    unsigned long spec = SBI0(EID_BASE, 0).value;
    for (unsigned k = 0; k < sizeof exts / sizeof exts[0]; k++) {
        r = SBI1(EID_BASE, 3, exts[k].eid);
        if (exts[k].eid == EID_DBCN && spec < 0x2000000 && r.error == 0 && r.value == 0) {
            check("base 4.4", "probe DBCN: 0 below SBI 2.0 (not available)", 1, "-");
            continue;
        }
        check("base 4.4", exts[k].name, r.error == 0 && r.value != 0, "%s value %lu",
              err_name(r.error), r.value);
    }
    check_ok_val("base 4.4", "probe of an unknown extension 0x12345678 -> 0",
                 SBI1(EID_BASE, 3, 0x12345678), 0);
    static const char *ids[] = {"get_mvendorid: SUCCESS", "get_marchid: SUCCESS",
                                "get_mimpid: SUCCESS"};
    static const char *sect[] = {"base 4.5", "base 4.6", "base 4.7"};
    for (unsigned k = 0; k < 3; k++) check_err(sect[k], ids[k], SBI0(EID_BASE, 4 + k), SBI_SUCCESS);
    check_err("binary encoding 3", "unknown extension 0x12345678 -> NOT_SUPPORTED",
              SBI0(0x12345678, 0), SBI_ERR_NOT_SUPPORTED);
    check_err("binary encoding 3", "unknown Base function 7 -> NOT_SUPPORTED", SBI0(EID_BASE, 7),
              SBI_ERR_NOT_SUPPORTED);
    check_err("binary encoding 3", "unknown TIME function 1 -> NOT_SUPPORTED", SBI0(EID_TIME, 1),
              SBI_ERR_NOT_SUPPORTED);
}

static void test_console(void) {
    static const char msg[] = "dbcn write: hello\n";
    if (SBI1(EID_BASE, 3, EID_DBCN).value == 0) {
        /* DBCN is SBI 2.0: an SBI without it answers NOT_SUPPORTED (3) */
        check_err("dbcn 12.1", "console_write: NOT_SUPPORTED as probed (not available)",
                  SBI3(EID_DBCN, 0, sizeof msg - 1, (unsigned long)msg, 0), SBI_ERR_NOT_SUPPORTED);
        goto legacy;
    }
    struct sbiret r = SBI3(EID_DBCN, 0, sizeof msg - 1, (unsigned long)msg, 0);
    check("dbcn 12.1", "console_write: SUCCESS, all bytes written",
          r.error == 0 && r.value == sizeof msg - 1, "%s value %lu", err_name(r.error), r.value);
    const char *w = "dbcn write_byte\n";
    long e = 0;
    for (; *w; w++) e |= SBI1(EID_DBCN, 2, (unsigned char)*w).error;
    check("dbcn 12.3", "console_write_byte: SUCCESS", e == 0, "%s", err_name(e));
    static char buf[16];
    r = SBI3(EID_DBCN, 1, sizeof buf, (unsigned long)buf, 0);
    check("dbcn 12.2", "console_read of up to 16 bytes: SUCCESS, at most 16",
          r.error == 0 && r.value <= sizeof buf, "%s value %lu", err_name(r.error), r.value);
    r = SBI3(EID_DBCN, 0, 4, (unsigned long)msg, 0x100);
    check("dbcn 12.1", "console_write beyond memory -> INVALID_PARAM (or FAILED)",
          r.error == SBI_ERR_INVALID_PARAM || r.error == SBI_ERR_FAILED, "%s", err_name(r.error));
legacy:;
    const char *l = "legacy putchar\n";
    e = 0;
    for (; *l; l++) e |= SBI1(EID_LEGACY_PUTCHAR, 0, (unsigned char)*l).error;
    check("legacy 5.2", "console_putchar returns 0", e == 0, "%ld", e);
}

static void test_time(void) {
    CSR_CLEAR(sie, 1ul << IRQ_STI);
    /* a deadline in the past with STIE masked: pending, not taken */
    check_err("time 6.1", "set_timer(0): SUCCESS", SBI1(EID_TIME, 0, 0), SBI_SUCCESS);
    unsigned long t0 = rdtime();
    while (!(CSR_READ(sip) >> IRQ_STI & 1) && rdtime() - t0 < 10000000) {
    }
    check("time 6.1", "a deadline in the past makes sip.STIP pending (sie.STIE masked)",
          CSR_READ(sip) >> IRQ_STI & 1, "sip %lx", CSR_READ(sip));
    SBI2(EID_TIME, 0, -1ul, -1ul);
    check("time 6.1", "set_timer(-1) clears the pending STIP (masked)", !(CSR_READ(sip) >> IRQ_STI & 1),
          "sip %lx", CSR_READ(sip));
    /* a deadline 1 ms ahead (10 MHz timebase on virt; any timebase: it comes) with STIE on */
    unsigned long before = irq_count[IRQ_STI];
    CSR_SET(sie, 1ul << IRQ_STI);
    CSR_SET(sstatus, SSTATUS_SIE);
    uint64_t when = rdtime() + 10000;
#if XLEN == 64
    SBI1(EID_TIME, 0, when);
#else
    SBI2(EID_TIME, 0, (unsigned long)when, (unsigned long)(when >> 32));
#endif
    int got = wait_irq(IRQ_STI, before);
    uint64_t now = rdtime();
    CSR_CLEAR(sstatus, SSTATUS_SIE);
    CSR_CLEAR(sie, 1ul << IRQ_STI);
    check("time 6.1", "the timer interrupt arrives, not before its time", got && now >= when,
          "%d interrupts, time %llu, deadline %llu", (int)(irq_count[IRQ_STI] - before),
          (unsigned long long)now, (unsigned long long)when);
}

static void test_ipi(unsigned long hartid) {
    unsigned long before = irq_count[IRQ_SSI];
    CSR_SET(sie, 1ul << IRQ_SSI);
    CSR_SET(sstatus, SSTATUS_SIE);
    struct sbiret r = SBI2(EID_IPI, 0, 1, hartid);
    int got = wait_irq(IRQ_SSI, before);
    check("ipi 7.1", "send_ipi to itself: SUCCESS and SSI taken", r.error == 0 && got,
          "%s, %d interrupts", err_name(r.error), (int)(irq_count[IRQ_SSI] - before));
    before = irq_count[IRQ_SSI];
    r = SBI2(EID_IPI, 0, 0, -1ul);
    got = wait_irq(IRQ_SSI, before);
    check("ipi 7.1", "send_ipi hart_mask_base -1 (all harts): SUCCESS and SSI taken",
          r.error == 0 && got, "%s, %d interrupts", err_name(r.error),
          (int)(irq_count[IRQ_SSI] - before));
    CSR_CLEAR(sstatus, SSTATUS_SIE);
    CSR_CLEAR(sie, 1ul << IRQ_SSI);
    check_err("ipi 7.1", "send_ipi to a hart that does not exist -> INVALID_PARAM",
              SBI2(EID_IPI, 0, 1, hartid + 1), SBI_ERR_INVALID_PARAM);
    check(("ipi 7.1"), "no SSI pending after the refused IPI", !(CSR_READ(sip) >> IRQ_SSI & 1),
          "sip %lx", CSR_READ(sip));
    CSR_CLEAR(sip, 1ul << IRQ_SSI);
}

static void test_rfence(unsigned long hartid) {
    check_err("rfence 8.1", "remote_fence_i to itself: SUCCESS", SBI2(EID_RFENCE, 0, 1, hartid),
              SBI_SUCCESS);
    check_err("rfence 8.2", "remote_sfence_vma to itself (one page): SUCCESS",
              SBI4(EID_RFENCE, 1, 1, hartid, 0x80200000, 0x1000), SBI_SUCCESS);
    check_err("rfence 8.2", "remote_sfence_vma to all harts (whole space): SUCCESS",
              SBI4(EID_RFENCE, 1, 0, -1ul, 0, -1ul), SBI_SUCCESS);
    check_err("rfence 8.3", "remote_sfence_vma_asid to itself: SUCCESS",
              SBI5(EID_RFENCE, 2, 1, hartid, 0x80200000, 0x1000, 1), SBI_SUCCESS);
    check_err("rfence 8.1", "remote_fence_i to a hart that does not exist -> INVALID_PARAM",
              SBI2(EID_RFENCE, 0, 1, hartid + 1), SBI_ERR_INVALID_PARAM);
    check_err("rfence 8.2", "remote_sfence_vma to a hart that does not exist -> INVALID_PARAM",
              SBI4(EID_RFENCE, 1, 2, hartid, 0, 0x1000), SBI_ERR_INVALID_PARAM);
}

static void test_hsm(unsigned long hartid) {
    check_ok_val("hsm 9.3", "hart_get_status of itself: STARTED (0)", SBI1(EID_HSM, 2, hartid), 0);
    check_err("hsm 9.3", "hart_get_status of a hart that does not exist -> INVALID_PARAM",
              SBI1(EID_HSM, 2, hartid + 1), SBI_ERR_INVALID_PARAM);
    check_err("hsm 9.1", "hart_start of itself (started) -> ALREADY_AVAILABLE",
              SBI3(EID_HSM, 0, hartid, 0x80200000, 0), SBI_ERR_ALREADY_AVAILABLE);
    check_err("hsm 9.1", "hart_start of a hart that does not exist -> INVALID_PARAM",
              SBI3(EID_HSM, 0, hartid + 1, 0x80200000, 0), SBI_ERR_INVALID_PARAM);
}

/* HSM 9.4: a retentive suspend returns SUCCESS once an interrupt is pending (here the timer,
 * enabled in sie with sstatus.SIE off, so it stays pending and is not taken). */
static void test_suspend(void) {
    check_err("hsm 9.4", "hart_suspend type 1 (reserved) -> INVALID_PARAM",
              SBI3(EID_HSM, 3, 1, 0, 0), SBI_ERR_INVALID_PARAM);
    SBI2(EID_TIME, 0, -1ul, -1ul);
    CSR_SET(sie, 1ul << IRQ_STI);
    uint64_t when = rdtime() + 10000;
#if XLEN == 64
    SBI1(EID_TIME, 0, when);
#else
    SBI2(EID_TIME, 0, (unsigned long)when, (unsigned long)(when >> 32));
#endif
    struct sbiret r = SBI3(EID_HSM, 3, 0, 0, 0);
    uint64_t now = rdtime();
    int pending = CSR_READ(sip) >> IRQ_STI & 1;
    SBI2(EID_TIME, 0, -1ul, -1ul);
    CSR_CLEAR(sie, 1ul << IRQ_STI);
    check("hsm 9.4", "hart_suspend retentive: SUCCESS after the timer interrupt became pending",
          r.error == 0 && pending && now >= when, "%s, STIP %d, time %llu, deadline %llu",
          err_name(r.error), pending, (unsigned long long)now, (unsigned long long)when);
}

static void test_srst_args(void) {
    check_err("srst 10.1", "system_reset type 3 (reserved) -> INVALID_PARAM", SBI2(EID_SRST, 0, 3, 0),
              SBI_ERR_INVALID_PARAM);
    check_err("srst 10.1", "system_reset reason 2 (reserved) -> INVALID_PARAM",
              SBI2(EID_SRST, 0, 0, 2), SBI_ERR_INVALID_PARAM);
}

int main(unsigned long hartid, unsigned long dtb) {
    (void)dtb;
    printf("sbi_base: rv%d hart %lu\n", XLEN, hartid);
    test_base();
    test_console();
    test_time();
    test_ipi(hartid);
    test_rfence(hartid);
    test_hsm(hartid);
    test_suspend();
    test_srst_args();
    return summary("sbi_base");
}
