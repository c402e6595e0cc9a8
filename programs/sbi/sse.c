/* sse: SBI v3.0 chapter 17, Supervisor Software Events (EID 0x535345), checked against the
 * specification's text, one line per check (sbi.h). Sections as the chapter numbers them:
 * 17.1 event ids, 17.2 states, 17.3 priority, 17.4 attributes, 17.5 injection (entry), 17.6
 * completion, 17.7-17.16 the functions FID 0-9 (read_attrs, write_attrs, register,
 * unregister, enable, disable, complete, inject, hart_unmask, hart_mask).
 *
 * Handlers: every event's ENTRY_ARG is its own context (struct ctx: a stack, and what the
 * handler saw); the entry stub switches to that stack, saves every register, calls
 * sse_handler(ctx, a6 = hart id, frame), restores them and calls complete, which resumes the
 * interrupted code. The boot hart prints; the other harts run sec_loop until told to stop,
 * so an event taken there interrupts that loop at whatever instruction it is at. */
#include "sbi.h"

#define EID_SSE 0x535345
#define SSE_READ_ATTRS 0
#define SSE_WRITE_ATTRS 1
#define SSE_REGISTER 2
#define SSE_UNREGISTER 3
#define SSE_ENABLE 4
#define SSE_DISABLE 5
#define SSE_COMPLETE 6
#define SSE_INJECT 7
#define SSE_HART_UNMASK 8
#define SSE_HART_MASK 9
#define SBI_ERR_INVALID_STATE -10
#define SBI_ERR_BAD_RANGE -11
/* 17.1 table "SSE Event ID Space" */
#define EV_LOCAL_RAS 0x00000000ul
#define EV_LOCAL_PMU 0x00010000ul
#define EV_LOCAL_SOFTWARE 0xffff0000ul
#define EV_GLOBAL_SOFTWARE 0xffff8000ul
/* 17.4 table "SSE Event Attributes" */
#define A_STATUS 0
#define A_PRIORITY 1
#define A_CONFIG 2
#define A_PREFERRED_HART 3
#define A_ENTRY_PC 4
#define A_ENTRY_ARG 5
#define A_INT_SEPC 6
#define A_INT_FLAGS 7
#define A_INT_A6 8
#define A_INT_A7 9
#define ST_UNUSED 0
#define ST_REGISTERED 1
#define ST_ENABLED 2
#define ST_RUNNING 3
#define ST_PENDING 4
#define ST_INJECTABLE 8
#define SSTATUS_SPIE (1ul << 5)
#define SSTATUS_SPP (1ul << 8)
#define MAX_HARTS 8
/* Bound of a wait for another hart (loop iterations): QEMU runs harts on host threads, which
 * a loaded host may leave unscheduled for a while; the model answers within a quantum. */
#define WAIT 200000000

static unsigned long me, nharts;

/* An event's context: ENTRY_ARG points here (stack_top, saved_sp and swapped are the
 * stub's). */
struct ctx {
    unsigned long stack_top, saved_sp;
    /* The entry had a6 = ENTRY_ARG and a7 = hart id (OpenSBI 1.5.1, an earlier draft),
     * which the stub swaps so that the handler runs and the rest is checked. */
    volatile unsigned long swapped;
    unsigned long event;
    volatile unsigned long count, a6, sepc, sstatus, order, t0, a0, scountovf;
    unsigned long attrs[10];
    volatile long read_err;
    /* Inject this event from the handler, then note `watch`'s count. */
    unsigned long inject, watch_count;
    struct ctx *watch;
    volatile long inject_err;
    /* Stop this PMU counter + 1 in the handler, as an overflow handler does (Linux's): an SBI
     * may keep LCOFI raised until then (OpenSBI 1.5.1 clears it in counter_stop). */
    unsigned long stop_counter;
    unsigned char stack[2048] __attribute__((aligned(16)));
};

static struct ctx c_local[MAX_HARTS], c_global, c_pmu;
static volatile unsigned long seq;

/* The entry (17.5): a6 = hart id, a7 = ENTRY_ARG (the ctx), every other register the
 * interrupted code's. A hart id is below 0x10000 and a ctx is not: when a7 is below it,
 * a6 and a7 came the other way round (noted in ctx->swapped; t0 saved in sscratch). */
#if XLEN == 64
#define REG_S "sd"
#define REG_L "ld"
#define SZ "8"
#else
#define REG_S "sw"
#define REG_L "lw"
#define SZ "4"
#endif
__asm__(".text\n.balign 4\n.globl sse_entry\nsse_entry:\n"
        "csrw sscratch, t0\nli t0, 0x10000\nbgeu a7, t0, 1f\n"
        "xor a6, a6, a7\nxor a7, a6, a7\nxor a6, a6, a7\nli t0, 1\nj 2f\n"
        "1: li t0, 0\n2: " REG_S " t0, 2*" SZ "(a7)\ncsrr t0, sscratch\n"
        REG_S " sp, " SZ "(a7)\n" REG_L " sp, 0(a7)\n"
        "addi sp, sp, -32*" SZ "\n"
        ".irp r, 1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
        REG_S " x\\r, \\r*" SZ "(sp)\n.endr\n"
        "mv a0, a7\nmv a1, a6\nmv a2, sp\ncall sse_handler\n"
        ".irp r, 1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
        REG_L " x\\r, \\r*" SZ "(sp)\n.endr\n"
        REG_L " sp, " SZ "(a7)\n"
        "li a7, 0x535345\nli a6, 6\necall\n"
        "1: j 1b\n");
void sse_entry(void);

/* An SSE call whose return address is sse_ecall_ret (the pc an event taken at its return
 * interrupts). */
__asm__(".text\n.balign 4\n.globl sse_ecall\nsse_ecall:\n"
        "li a7, 0x535345\necall\n.globl sse_ecall_ret\nsse_ecall_ret:\nret\n");
struct sbiret sse_ecall(unsigned long a0, unsigned long a1, unsigned long a2, unsigned long a3,
                        unsigned long a4, unsigned long a5, unsigned long fid);
void sse_ecall_ret(void);
#define SSE(fid, a, b, c, d, e) sse_ecall(a, b, c, d, e, 0, fid)

/* n iterations of a 2-instruction loop (a0 counts down), between pmu_loop and pmu_loop_end. */
__asm__(".text\n.balign 4\n.globl pmu_loop\npmu_loop:\n1: addi a0, a0, -1\nbnez a0, 1b\nret\n"
        ".globl pmu_loop_end\npmu_loop_end:\n");
unsigned long pmu_loop(unsigned long n);
void pmu_loop_end(void);

/* Spin until *flag != 0 (a0 = flag), between sec_loop and sec_loop_end. */
__asm__(".text\n.balign 4\n.globl sec_loop\nsec_loop:\n1: lw t0, 0(a0)\nbnez t0, 2f\nj 1b\n2: ret\n"
        ".globl sec_loop_end\nsec_loop_end:\n");
void sec_loop(volatile int *flag);
void sec_loop_end(void);

void sse_handler(struct ctx *c, unsigned long hartid, unsigned long *frame) {
    c->a6 = hartid;
    c->sepc = CSR_READ(sepc);
    c->sstatus = CSR_READ(sstatus);
    c->t0 = frame[5];
    c->a0 = frame[10];
    __asm__ volatile("csrr %0, 0xda0" : "=r"(c->scountovf));
    c->read_err = SSE(SSE_READ_ATTRS, c->event, 0, 10, (unsigned long)c->attrs, 0).error;
    c->order = __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
    if (c->stop_counter) pmu_stop(c->stop_counter - 1, 1, 0);
    if (c->inject) {
        c->inject_err = SSE(SSE_INJECT, c->inject, hartid, 0, 0, 0).error;
        c->watch_count = c->watch->count;
    }
    __asm__ volatile("fence rw, rw" ::: "memory");
    c->count++;
}

static unsigned long attrs[10];

static struct sbiret read_attr(unsigned long ev, unsigned long a) {
    return SSE(SSE_READ_ATTRS, ev, a, 1, (unsigned long)attrs, 0);
}

static unsigned long attr(unsigned long ev, unsigned long a) {
    struct sbiret r = read_attr(ev, a);
    return r.error ? 0xbad : attrs[0];
}

static long write_attr(unsigned long ev, unsigned long a, unsigned long v) {
    attrs[0] = v;
    return SSE(SSE_WRITE_ATTRS, ev, a, 1, (unsigned long)attrs, 0).error;
}

static void setup(struct ctx *c, unsigned long ev) {
    c->stack_top = (unsigned long)&c->stack[sizeof c->stack];
    c->event = ev;
}

static long reg(struct ctx *c, unsigned long ev) {
    setup(c, ev);
    return SSE(SSE_REGISTER, ev, (unsigned long)sse_entry, (unsigned long)c, 0, 0).error;
}

static int have_mask;

/* ---- 17.1, 17.2, 17.4, 17.7-17.12, 17.15, 17.16: ids, states, attributes, errors ---- */

static void test_rules(void) {
    struct ctx *l = &c_local[me];
    struct sbiret r = SSE(SSE_HART_MASK, 0, 0, 0, 0, 0);
    have_mask = r.error != SBI_ERR_NOT_SUPPORTED;
    check_err("sse 17.16", "hart_mask at first -> ALREADY_STOPPED (events start masked)", r,
              SBI_ERR_ALREADY_STOPPED);
    check_err("sse 17.1", "register LOCAL_HIGH_PRIO_RAS (no RAS source) -> NOT_SUPPORTED",
              SSE(SSE_REGISTER, EV_LOCAL_RAS, (unsigned long)sse_entry, 0, 0, 0), SBI_ERR_NOT_SUPPORTED);
    check_err("sse 17.1", "register a reserved event id (2) -> INVALID_PARAM",
              SSE(SSE_REGISTER, 2, (unsigned long)sse_entry, 0, 0, 0), SBI_ERR_INVALID_PARAM);
    check_err("sse 17.1", "enable a platform-specific id no platform defines (0x4000) -> INVALID_PARAM",
              SSE(SSE_ENABLE, 0x4000, 0, 0, 0, 0), SBI_ERR_INVALID_PARAM);
    check_ok_val("sse 17.4", "STATUS of LOCAL_SOFTWARE at first: UNUSED, injectable", read_attr(EV_LOCAL_SOFTWARE, 0),
                 0);
    check("sse 17.4", "STATUS value: UNUSED, not pending", attrs[0] == ST_UNUSED || attrs[0] == ST_INJECTABLE,
          "%lx", attrs[0]);
    check_err("sse 17.7", "read_attrs attr_count 0 -> INVALID_PARAM",
              SSE(SSE_READ_ATTRS, EV_LOCAL_SOFTWARE, 0, 0, (unsigned long)attrs, 0), SBI_ERR_INVALID_PARAM);
    check_err("sse 17.7", "read_attrs of attributes 9..10 (10 reserved) -> BAD_RANGE",
              SSE(SSE_READ_ATTRS, EV_LOCAL_SOFTWARE, 9, 2, (unsigned long)attrs, 0), SBI_ERR_BAD_RANGE);
    check_err("sse 17.7", "read_attrs to memory not XLEN/8 aligned -> INVALID_ADDRESS",
              SSE(SSE_READ_ATTRS, EV_LOCAL_SOFTWARE, 0, 1, (unsigned long)attrs + 2, 0),
              SBI_ERR_INVALID_ADDRESS);
    check_err("sse 17.8", "write_attrs STATUS (read-only) -> DENIED", SSE(SSE_WRITE_ATTRS, EV_LOCAL_SOFTWARE, A_STATUS,
              1, (unsigned long)attrs, 0), SBI_ERR_DENIED);
    check("sse 17.8", "write_attrs PREFERRED_HART of a local event (read-only) -> DENIED",
          write_attr(EV_LOCAL_SOFTWARE, A_PREFERRED_HART, me) == SBI_ERR_DENIED, "%s",
          err_name(write_attr(EV_LOCAL_SOFTWARE, A_PREFERRED_HART, me)));
    check("sse 17.8", "write_attrs CONFIG with reserved bit 1 -> INVALID_PARAM",
          write_attr(EV_LOCAL_SOFTWARE, A_CONFIG, 2) == SBI_ERR_INVALID_PARAM, "-");
    check("sse 17.8", "write_attrs INTERRUPTED_SEPC while not RUNNING -> INVALID_STATE",
          write_attr(EV_LOCAL_SOFTWARE, A_INT_SEPC, 0) == SBI_ERR_INVALID_STATE, "-");
    check("sse 17.4", "PRIORITY writable while UNUSED", write_attr(EV_LOCAL_SOFTWARE, A_PRIORITY, 7) == 0 &&
          attr(EV_LOCAL_SOFTWARE, A_PRIORITY) == 7, "-");
    check_err("sse 17.10", "unregister an UNUSED event -> INVALID_STATE", SSE(SSE_UNREGISTER, EV_LOCAL_SOFTWARE, 0, 0,
              0, 0), SBI_ERR_INVALID_STATE);
    check_err("sse 17.11", "enable an UNUSED event -> INVALID_STATE", SSE(SSE_ENABLE, EV_LOCAL_SOFTWARE, 0, 0, 0, 0),
              SBI_ERR_INVALID_STATE);
    check_err("sse 17.9", "register with an odd entry pc -> INVALID_PARAM",
              SSE(SSE_REGISTER, EV_LOCAL_SOFTWARE, (unsigned long)sse_entry + 1, 0, 0, 0), SBI_ERR_INVALID_PARAM);
    check("sse 17.9", "register LOCAL_SOFTWARE: SUCCESS", reg(l, EV_LOCAL_SOFTWARE) == 0, "-");
    check("sse 17.4", "STATUS REGISTERED, ENTRY_PC and ENTRY_ARG as registered",
          (attr(EV_LOCAL_SOFTWARE, A_STATUS) & 3) == ST_REGISTERED &&
              attr(EV_LOCAL_SOFTWARE, A_ENTRY_PC) == (unsigned long)sse_entry &&
              attr(EV_LOCAL_SOFTWARE, A_ENTRY_ARG) == (unsigned long)l,
          "status %lx", attr(EV_LOCAL_SOFTWARE, A_STATUS));
    check("sse 17.4", "PREFERRED_HART of a local event is the calling hart",
          attr(EV_LOCAL_SOFTWARE, A_PREFERRED_HART) == me, "%lx", attr(EV_LOCAL_SOFTWARE, A_PREFERRED_HART));
    check_err("sse 17.9", "register a REGISTERED event -> INVALID_STATE",
              SSE(SSE_REGISTER, EV_LOCAL_SOFTWARE, (unsigned long)sse_entry, 0, 0, 0), SBI_ERR_INVALID_STATE);
    check_err("sse 17.12", "disable a REGISTERED event -> INVALID_STATE", SSE(SSE_DISABLE, EV_LOCAL_SOFTWARE, 0, 0, 0,
              0), SBI_ERR_INVALID_STATE);
    check_err("sse 17.11", "enable: SUCCESS", SSE(SSE_ENABLE, EV_LOCAL_SOFTWARE, 0, 0, 0, 0), SBI_SUCCESS);
    check("sse 17.4", "PRIORITY not writable while ENABLED -> INVALID_STATE",
          write_attr(EV_LOCAL_SOFTWARE, A_PRIORITY, 0) == SBI_ERR_INVALID_STATE, "-");
    check_err("sse 17.10", "unregister an ENABLED event -> INVALID_STATE", SSE(SSE_UNREGISTER, EV_LOCAL_SOFTWARE, 0, 0,
              0, 0), SBI_ERR_INVALID_STATE);
    check_err("sse 17.12", "disable: SUCCESS", SSE(SSE_DISABLE, EV_LOCAL_SOFTWARE, 0, 0, 0, 0), SBI_SUCCESS);
    check("sse 17.4", "PRIORITY writable again while REGISTERED", write_attr(EV_LOCAL_SOFTWARE, A_PRIORITY, 5) == 0,
          "-");
    check_err("sse 17.14", "inject a local event on a hart that does not exist -> INVALID_PARAM",
              SSE(SSE_INJECT, EV_LOCAL_SOFTWARE, 4096, 0, 0, 0), SBI_ERR_INVALID_PARAM);
    check_err("sse 17.13", "complete with no event running: SUCCESS", SSE(SSE_COMPLETE, 0, 0, 0, 0, 0), SBI_SUCCESS);
}

/* ---- 17.5, 17.6, 17.15, 17.16: entry at the call's return, completion, masking ---- */

static void test_entry(void) {
    struct ctx *l = &c_local[me];
    SSE(SSE_ENABLE, EV_LOCAL_SOFTWARE, 0, 0, 0, 0);
    if (have_mask) {
        check_err("sse 17.14", "inject LOCAL_SOFTWARE on the calling hart while masked: SUCCESS",
                  SSE(SSE_INJECT, EV_LOCAL_SOFTWARE, me, 0, 0, 0), SBI_SUCCESS);
        check("sse 17.16", "masked: not taken, STATUS pending", l->count == 0 &&
              (attr(EV_LOCAL_SOFTWARE, A_STATUS) & 7) == (ST_ENABLED | ST_PENDING),
              "count %lu status %lx", l->count, attr(EV_LOCAL_SOFTWARE, A_STATUS));
    }
    /* Known interrupted state: sepc, SIE set (no interrupt is enabled in sie), SPP and SPIE. */
    CSR_WRITE(sepc, 0x1234);
    CSR_SET(sstatus, SSTATUS_SIE | SSTATUS_SPIE);
    CSR_CLEAR(sstatus, SSTATUS_SPP);
    struct sbiret r;
    if (have_mask) {
        r = SSE(SSE_HART_UNMASK, 0, 0, 0, 0, 0);
        check_err("sse 17.15", "hart_unmask: SUCCESS", r, SBI_SUCCESS);
    } else {
        r = SSE(SSE_INJECT, EV_LOCAL_SOFTWARE, me, 0, 0, 0);
    }
    unsigned long sepc_after = CSR_READ(sepc), sstatus_after = CSR_READ(sstatus);
    CSR_CLEAR(sstatus, SSTATUS_SIE);
    check("sse 17.5", "the pending event is taken as the call returns, once", l->count == 1, "count %lu", l->count);
    check("sse 17.5", "entry: a6 = hart id, a7 = ENTRY_ARG (the handler's context)", l->a6 == me && !l->swapped,
          "a6 %lx%s", l->a6, l->swapped ? ", a6 = ENTRY_ARG and a7 = hart id" : "");
    check("sse 17.5", "entry: sepc = the interrupted pc (the instruction after the ecall)",
          l->sepc == (unsigned long)sse_ecall_ret, "sepc %lx want %lx", l->sepc, (unsigned long)sse_ecall_ret);
    check("sse 17.5", "entry: sstatus.SPP = S, SPIE = the interrupted SIE (1), SIE = 0",
          (l->sstatus & SSTATUS_SPP) && (l->sstatus & SSTATUS_SPIE) && !(l->sstatus & SSTATUS_SIE), "sstatus %lx",
          l->sstatus);
    check("sse 17.4", "in the handler: STATUS RUNNING, not pending", l->read_err == 0 &&
          (l->attrs[A_STATUS] & 7) == ST_RUNNING, "%s status %lx", err_name(l->read_err), l->attrs[A_STATUS]);
    check("sse 17.5", "INTERRUPTED_SEPC = the interrupted sepc", l->attrs[A_INT_SEPC] == 0x1234, "%lx",
          l->attrs[A_INT_SEPC]);
    check("sse 17.5", "INTERRUPTED_FLAGS = interrupted SPP (0) | SPIE (1) << 1", l->attrs[A_INT_FLAGS] == 2, "%lx",
          l->attrs[A_INT_FLAGS]);
    check("sse 17.5", "INTERRUPTED_A6/A7 = the call's a6 (FID) and a7 (EID)",
          l->attrs[A_INT_A6] == (have_mask ? SSE_HART_UNMASK : SSE_INJECT) && l->attrs[A_INT_A7] == EID_SSE,
          "a6 %lx a7 %lx", l->attrs[A_INT_A6], l->attrs[A_INT_A7]);
    check("sse 17.6", "complete resumes the interrupted call: its a0 = SUCCESS", r.error == 0, "%s",
          err_name(r.error));
    check("sse 17.6", "complete restores sepc and sstatus (SIE = SPIE = 1, SPP = 0, SPIE from the flags)",
          sepc_after == 0x1234 && (sstatus_after & SSTATUS_SIE) && (sstatus_after & SSTATUS_SPIE) &&
              !(sstatus_after & SSTATUS_SPP),
          "sepc %lx sstatus %lx", sepc_after, sstatus_after);
    check("sse 17.13", "after complete: ENABLED, not pending", (attr(EV_LOCAL_SOFTWARE, A_STATUS) & 7) == ST_ENABLED,
          "%lx", attr(EV_LOCAL_SOFTWARE, A_STATUS));
    if (have_mask)
        check_err("sse 17.15", "hart_unmask again -> ALREADY_STARTED", SSE(SSE_HART_UNMASK, 0, 0, 0, 0, 0),
                  SBI_ERR_ALREADY_STARTED);
    /* Injected while unmasked: taken at the inject's return. */
    r = SSE(SSE_INJECT, EV_LOCAL_SOFTWARE, me, 0, 0, 0);
    check("sse 17.14", "inject while unmasked: taken at once, then SUCCESS", r.error == 0 && l->count == 2,
          "%s count %lu", err_name(r.error), l->count);
    /* One-shot (CONFIG bit 0): REGISTERED after complete. */
    SSE(SSE_DISABLE, EV_LOCAL_SOFTWARE, 0, 0, 0, 0);
    check("sse 17.4", "CONFIG one-shot writable while REGISTERED", write_attr(EV_LOCAL_SOFTWARE, A_CONFIG, 1) == 0, "-");
    SSE(SSE_ENABLE, EV_LOCAL_SOFTWARE, 0, 0, 0, 0);
    SSE(SSE_INJECT, EV_LOCAL_SOFTWARE, me, 0, 0, 0);
    check("sse 17.13", "a one-shot event is REGISTERED after complete",
          l->count == 3 && (attr(EV_LOCAL_SOFTWARE, A_STATUS) & 7) == ST_REGISTERED, "count %lu status %lx", l->count,
          attr(EV_LOCAL_SOFTWARE, A_STATUS));
    write_attr(EV_LOCAL_SOFTWARE, A_CONFIG, 0);
    SSE(SSE_ENABLE, EV_LOCAL_SOFTWARE, 0, 0, 0, 0);
}

/* ---- 17.3 priorities ---- */

static void test_priority(void) {
    struct ctx *l = &c_local[me], *g = &c_global;
    check("sse 17.9", "register GLOBAL_SOFTWARE: SUCCESS", reg(g, EV_GLOBAL_SOFTWARE) == 0, "-");
    check("sse 17.4", "PREFERRED_HART of the global event set to the calling hart",
          write_attr(EV_GLOBAL_SOFTWARE, A_PREFERRED_HART, me) == 0 && attr(EV_GLOBAL_SOFTWARE, A_PREFERRED_HART) == me,
          "-");
    SSE(SSE_ENABLE, EV_GLOBAL_SOFTWARE, 0, 0, 0, 0);
    if (have_mask) {
        /* Two pending, equal priority 5: the lower event id first. Then global priority 1. */
        for (int round = 0; round < 2; round++) {
            unsigned long gp = round ? 1 : 5;
            SSE(SSE_DISABLE, EV_GLOBAL_SOFTWARE, 0, 0, 0, 0);
            write_attr(EV_GLOBAL_SOFTWARE, A_PRIORITY, gp);
            SSE(SSE_ENABLE, EV_GLOBAL_SOFTWARE, 0, 0, 0, 0);
            unsigned long lc = l->count, gc = g->count;
            SSE(SSE_HART_MASK, 0, 0, 0, 0, 0);
            SSE(SSE_INJECT, EV_LOCAL_SOFTWARE, me, 0, 0, 0);
            SSE(SSE_INJECT, EV_GLOBAL_SOFTWARE, me, 0, 0, 0);
            check("sse 17.16", "hart_mask holds both injected events back", lc == l->count && gc == g->count,
                  "ran %lu, %lu", l->count - lc, g->count - gc);
            SSE(SSE_HART_UNMASK, 0, 0, 0, 0, 0);
            int ok = l->count == lc + 1 && g->count == gc + 1 && (round ? g->order < l->order : l->order < g->order);
            if (round)
                check("sse 17.3", "global priority 1 before local priority 5", ok, "local #%lu global #%lu",
                      l->order, g->order);
            else
                check("sse 17.3", "equal priorities: the lower event id (LOCAL_SOFTWARE) first", ok,
                      "local #%lu global #%lu", l->order, g->order);
        }
    }
    /* Global (priority 1) is higher than local (5): injected from the local handler it preempts
     * at once; injected from the global handler the local one waits for its completion. */
    l->inject = EV_GLOBAL_SOFTWARE;
    l->watch = g;
    unsigned long gc = g->count;
    SSE(SSE_INJECT, EV_LOCAL_SOFTWARE, me, 0, 0, 0);
    l->inject = 0;
    check("sse 17.3", "a higher-priority event injected in a handler preempts it at once",
          l->inject_err == 0 && l->watch_count == gc + 1, "%s, global ran %lu", err_name(l->inject_err),
          l->watch_count - gc);
    g->inject = EV_LOCAL_SOFTWARE;
    g->watch = l;
    unsigned long lc = l->count;
    SSE(SSE_INJECT, EV_GLOBAL_SOFTWARE, me, 0, 0, 0);
    g->inject = 0;
    check("sse 17.3", "a lower-priority event injected in a handler waits for its completion",
          g->inject_err == 0 && g->watch_count == lc && l->count == lc + 1, "%s, local ran %lu then %lu",
          err_name(g->inject_err), g->watch_count - lc, l->count - lc);
}

/* ---- LOCAL_PMU_OVERFLOW (17.1, with Sscofpmf): a counter's overflow is the event ---- */

#define PMU_N 1000
static void test_pmu(void) {
    struct ctx *p = &c_pmu;
    long e = reg(p, EV_LOCAL_PMU);
    if (e == SBI_ERR_NOT_SUPPORTED) {
        check("sse 17.1", "LOCAL_PMU_OVERFLOW (no Sscofpmf: not available)", 1, "-");
        return;
    }
    check("sse 17.9", "register LOCAL_PMU_OVERFLOW: SUCCESS", e == 0, "%s", err_name(e));
    check_err("sse 17.11", "enable LOCAL_PMU_OVERFLOW: SUCCESS", SSE(SSE_ENABLE, EV_LOCAL_PMU, 0, 0, 0, 0),
              SBI_SUCCESS);
    /* INSTRUCTIONS on a programmable counter (base 3, 16 of them), M-mode inhibited, starting
     * PMU_N below 2^64: it wraps after PMU_N S-mode instructions, in pmu_loop. */
    struct sbiret r = pmu_config_matching(3, 0xffff, CFG_SET_MINH | CFG_CLEAR_VALUE, EV_HW(HW_INSTRUCTIONS), 0);
    if (r.error) {
        check("sse 17.1", "LOCAL_PMU_OVERFLOW: an INSTRUCTIONS counter", 0, "%s", err_name(r.error));
        return;
    }
    unsigned long idx = r.value;
    p->stop_counter = idx + 1;
    r = pmu_start(idx, 1, START_SET_INIT_VALUE, (uint64_t)0 - PMU_N);
    unsigned long left = pmu_loop(PMU_N);
    struct sbiret stop = pmu_stop(idx, 1, STOP_RESET);
    check_err("sse 17.1", "the handler stopped the counter: counter_stop -> ALREADY_STOPPED", stop,
              SBI_ERR_ALREADY_STOPPED);
    check("sse 17.1", "a counter overflow (Sscofpmf) delivers LOCAL_PMU_OVERFLOW, once", r.error == 0 && p->count == 1,
          "%s count %lu", err_name(r.error), p->count);
    check("sse 17.5", "taken at an instruction of the counting loop (sepc in pmu_loop)",
          p->sepc >= (unsigned long)pmu_loop && p->sepc < (unsigned long)pmu_loop_end, "sepc %lx", p->sepc);
    check("sse 17.1", "the counter's OF bit is set in the handler (scountovf)", p->scountovf >> idx & 1, "%lx",
          p->scountovf);
    /* The loop's own a0 when interrupted: PMU_N - done iterations; the counter wrapped after
     * PMU_N counted instructions, some before the loop (the calls' returns), 2 per iteration. */
    unsigned long done = PMU_N - p->a0;
    check("sse 17.1", "taken within 32 instructions after the PMU_N-th counted one",
          2 * done <= PMU_N && 2 * done + 32 >= PMU_N, "%lu loop instructions of %u", 2 * done, PMU_N);
    check("sse 17.6", "complete resumes the loop: it runs to its end", left == 0, "%lu left", left);
    check("sse 17.13", "LOCAL_PMU_OVERFLOW ENABLED again after complete", (attr(EV_LOCAL_PMU, A_STATUS) & 7) ==
          ST_ENABLED, "%lx", attr(EV_LOCAL_PMU, A_STATUS));
    SSE(SSE_DISABLE, EV_LOCAL_PMU, 0, 0, 0, 0);
    SSE(SSE_UNREGISTER, EV_LOCAL_PMU, 0, 0, 0, 0);
}

/* ---- other harts: a global event on its preferred hart, a local one injected there ---- */

static volatile int sec_ready[MAX_HARTS], sec_stop;
static unsigned char sec_stack[MAX_HARTS][1024] __attribute__((aligned(16)));

__asm__(".text\n.balign 4\n.globl secondary_entry\nsecondary_entry:\n"
        ".option push\n.option norelax\nla gp, __global_pointer$\n.option pop\n"
        "mv sp, a1\nla t0, trap_entry\ncsrw stvec, t0\ncall secondary\n1: j 1b\n");
void secondary_entry(void);

/* Each started hart registers and enables its own LOCAL_SOFTWARE (a local event's state is
 * per hart, 17.2), unmasks, and spins until told to stop. */
void secondary(unsigned long hartid) {
    unsigned long h = hartid % MAX_HARTS;
    long e = reg(&c_local[h], EV_LOCAL_SOFTWARE);
    if (!e) e = SSE(SSE_ENABLE, EV_LOCAL_SOFTWARE, 0, 0, 0, 0).error;
    SSE(SSE_HART_UNMASK, 0, 0, 0, 0, 0);
    __asm__ volatile("fence rw, rw" ::: "memory");
    sec_ready[h] = e ? 2 : 1;
    sec_loop(&sec_stop);
    SBI0(EID_HSM, 1);
    for (;;) __asm__ volatile("wfi");
}

static int wait_count(struct ctx *c, unsigned long n) {
    for (unsigned long k = 0; k < WAIT && c->count < n; k++) __asm__ volatile("nop");
    return c->count >= n;
}

static void test_harts(void) {
    for (nharts = 0; nharts < MAX_HARTS && SBI1(EID_HSM, 2, nharts).error == 0; nharts++)
        ;
    printf("# %lu harts\n", nharts);
    struct ctx *g = &c_global;
    SSE(SSE_DISABLE, EV_GLOBAL_SOFTWARE, 0, 0, 0, 0);
    if (nharts < 2) {
        check("sse 17.4", "PREFERRED_HART that is no hart -> INVALID_PARAM",
              write_attr(EV_GLOBAL_SOFTWARE, A_PREFERRED_HART, 1) == SBI_ERR_INVALID_PARAM, "-");
        check("sse 17.2", "other harts (one hart: not tried)", 1, "-");
        return;
    }
    unsigned long started = 0;
    for (unsigned long h = 0; h < nharts; h++) {
        if (h == me) continue;
        struct sbiret r = SBI3(EID_HSM, 0, h, (unsigned long)secondary_entry,
                               (unsigned long)&sec_stack[h][sizeof sec_stack[h]]);
        if (r.error == 0) started |= 1ul << h;
    }
    unsigned long ready = 0;
    for (unsigned long h = 0; h < nharts; h++)
        for (unsigned long k = 0; k < WAIT && started >> h & 1 && !sec_ready[h]; k++) __asm__ volatile("nop");
    for (unsigned long h = 0; h < nharts; h++)
        if (sec_ready[h] == 1) ready |= 1ul << h;
    check("sse 17.2", "every other hart registers and enables its own LOCAL_SOFTWARE", ready == started && started,
          "%lx of %lx (hart %lu: HSM state %ld, step %d)", ready, started, nharts - 1,
          (long)SBI1(EID_HSM, 2, nharts - 1).value, sec_ready[nharts - 1]);
    /* The global event on the last hart. */
    unsigned long target = nharts - 1 == me ? 0 : nharts - 1, gc = g->count;
    check("sse 17.4", "PREFERRED_HART = another hart: SUCCESS",
          write_attr(EV_GLOBAL_SOFTWARE, A_PREFERRED_HART, target) == 0, "-");
    SSE(SSE_ENABLE, EV_GLOBAL_SOFTWARE, 0, 0, 0, 0);
    struct sbiret r = SSE(SSE_INJECT, EV_GLOBAL_SOFTWARE, me, 0, 0, 0);
    check_err("sse 17.14", "inject GLOBAL_SOFTWARE (hart_id ignored): SUCCESS", r, SBI_SUCCESS);
    int ran = wait_count(g, gc + 1);
    check("sse 17.2", "the global event runs on its preferred hart (a6 = that hart id)", ran && g->a6 == target,
          "ran %d a6 %lx want %lx", ran, g->a6, target);
    check("sse 17.5", "... interrupting its loop at whatever instruction (sepc in sec_loop)",
          g->sepc >= (unsigned long)sec_loop && g->sepc < (unsigned long)sec_loop_end, "sepc %lx", g->sepc);
    /* A local event injected on another hart runs there, in that hart's registration. */
    unsigned long first = __builtin_ctzl(started);
    struct ctx *o = &c_local[first];
    unsigned long oc = o->count;
    r = SSE(SSE_INJECT, EV_LOCAL_SOFTWARE, first, 0, 0, 0);
    ran = wait_count(o, oc + 1);
    check("sse 17.14", "inject LOCAL_SOFTWARE on another hart: it runs there", r.error == 0 && ran && o->a6 == first,
          "%s ran %d a6 %lx", err_name(r.error), ran, o->a6);
    check("sse 17.4", "the other hart's STATUS is its own: ours is ENABLED, not pending",
          (attr(EV_LOCAL_SOFTWARE, A_STATUS) & 7) == ST_ENABLED, "%lx", attr(EV_LOCAL_SOFTWARE, A_STATUS));
    sec_stop = 1;
    __asm__ volatile("fence rw, rw" ::: "memory");
    unsigned long stopped = 0;
    for (unsigned long h = 0; h < nharts; h++)
        for (unsigned long k = 0; k < WAIT / 100 && started >> h & 1; k++) { /* SBI calls */
            struct sbiret s = SBI1(EID_HSM, 2, h);
            if (s.error == 0 && s.value == 1) {
                stopped |= 1ul << h;
                break;
            }
        }
    check("sse 17.6", "every interrupted hart resumed its loop and stopped", stopped == started, "%lx", stopped);
}

int main(unsigned long hartid, unsigned long dtb) {
    (void)dtb;
    me = hartid;
    printf("sse: rv%d hart %lu\n", XLEN, hartid);
    if (!SBI1(EID_BASE, 3, EID_SSE).value) {
        check("sse 17", "SSE (not available)", 1, "-");
        return summary("sse");
    }
    check("sse 17", "probe_extension(SSE) = 1", 1, "-");
    test_rules();
    test_entry();
    test_priority();
    test_pmu();
    test_harts();
    return summary("sse");
}
