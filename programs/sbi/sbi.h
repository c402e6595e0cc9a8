/* A tiny S-mode runtime for the SBI payloads: SBI calls, console, printf, checks, traps.
 * Section numbers ("ext-pmu 11.8", "base 4.4") are those of the SBI v3.0 specification
 * (chapter 3 binary encoding, 4 Base, 5 Legacy, 6 TIME, 7 IPI, 8 RFENCE, 9 HSM, 10 SRST,
 * 11 PMU, 12 DBCN). */
#ifndef SBI_H
#define SBI_H
#include <stdint.h>

#define XLEN (__riscv_xlen)

/* Binary encoding 3: a7 = EID, a6 = FID, a0..a5 arguments; a0 = error, a1 = value. */
struct sbiret {
    long error;
    unsigned long value;
};
struct sbiret sbi_call(unsigned long eid, unsigned long fid, unsigned long a0, unsigned long a1,
                       unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5);
#define SBI0(e, f) sbi_call(e, f, 0, 0, 0, 0, 0, 0)
#define SBI1(e, f, a) sbi_call(e, f, a, 0, 0, 0, 0, 0)
#define SBI2(e, f, a, b) sbi_call(e, f, a, b, 0, 0, 0, 0)
#define SBI3(e, f, a, b, c) sbi_call(e, f, a, b, c, 0, 0, 0)
#define SBI4(e, f, a, b, c, d) sbi_call(e, f, a, b, c, d, 0, 0)
#define SBI5(e, f, a, b, c, d, g) sbi_call(e, f, a, b, c, d, g, 0)

/* Standard SBI errors (binary encoding 3, table "Standard SBI Errors"). */
#define SBI_SUCCESS 0
#define SBI_ERR_FAILED -1
#define SBI_ERR_NOT_SUPPORTED -2
#define SBI_ERR_INVALID_PARAM -3
#define SBI_ERR_DENIED -4
#define SBI_ERR_INVALID_ADDRESS -5
#define SBI_ERR_ALREADY_AVAILABLE -6
#define SBI_ERR_ALREADY_STARTED -7
#define SBI_ERR_ALREADY_STOPPED -8
#define SBI_ERR_NO_SHMEM -9

/* Extension IDs. */
#define EID_BASE 0x10
#define EID_LEGACY_PUTCHAR 0x01
#define EID_TIME 0x54494D45
#define EID_IPI 0x735049
#define EID_RFENCE 0x52464E43
#define EID_HSM 0x48534D
#define EID_SRST 0x53525354
#define EID_PMU 0x504D55
#define EID_DBCN 0x4442434E

/* PMU function IDs (ext-pmu 11.15) and flags (11.8, 11.9, 11.10). */
#define PMU_NUM_COUNTERS 0
#define PMU_COUNTER_GET_INFO 1
#define PMU_COUNTER_CONFIG_MATCHING 2
#define PMU_COUNTER_START 3
#define PMU_COUNTER_STOP 4
#define PMU_COUNTER_FW_READ 5
#define PMU_COUNTER_FW_READ_HI 6
#define PMU_SNAPSHOT_SET_SHMEM 7
#define PMU_EVENT_GET_INFO 8
#define CFG_SKIP_MATCH (1ul << 0)
#define CFG_CLEAR_VALUE (1ul << 1)
#define CFG_AUTO_START (1ul << 2)
#define CFG_SET_VUINH (1ul << 3)
#define CFG_SET_VSINH (1ul << 4)
#define CFG_SET_UINH (1ul << 5)
#define CFG_SET_SINH (1ul << 6)
#define CFG_SET_MINH (1ul << 7)
#define START_SET_INIT_VALUE (1ul << 0)
#define START_INIT_SNAPSHOT (1ul << 1)
#define STOP_RESET (1ul << 0)
#define STOP_TAKE_SNAPSHOT (1ul << 1)
/* event_idx = type[19:16] | code[15:0] (ext-pmu 11). */
#define EV_HW(code) (0x00000ul | (code))
#define EV_CACHE(cache, op, result) (0x10000ul | ((cache) << 3) | ((op) << 1) | (result))
#define EV_FW(code) (0xf0000ul | (code))
#define HW_CPU_CYCLES 1
#define HW_INSTRUCTIONS 2
#define HW_CACHE_REFERENCES 3
#define HW_CACHE_MISSES 4
#define HW_BRANCH_INSTRUCTIONS 5
#define HW_BRANCH_MISSES 6
#define FW_ILLEGAL_INSN 4
#define FW_SET_TIMER 5
#define FW_IPI_SENT 6
#define FW_IPI_RECEIVED 7

/* PMU calls. 64-bit arguments (event_data, initial_value) take two registers on RV32
 * (binary encoding 3: low half in the lower-numbered register). */
struct sbiret pmu_config_matching(unsigned long base, unsigned long mask, unsigned long flags,
                                  unsigned long event_idx, uint64_t event_data);
struct sbiret pmu_start(unsigned long base, unsigned long mask, unsigned long flags,
                        uint64_t initial_value);
struct sbiret pmu_stop(unsigned long base, unsigned long mask, unsigned long flags);

/* Console: DBCN write (12.1), or legacy putchar (5.2) when DBCN is absent. */
void putstr(const char *s);
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* SRST shutdown (10.1) with reason 0 (no reason) if status == 0, else 1 (system failure). */
void sbi_exit(int status) __attribute__((noreturn));
/* Hex/decimal text of a 64-bit number (own buffer, valid until the next call of the same). */

/* Checks: one line each, "ok SECTION WHAT" or "FAIL SECTION WHAT: got ...". */
extern int n_ok, n_fail;
void check(const char *sect, const char *what, int cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The call answered error `want` (any value). */
void check_err(const char *sect, const char *what, struct sbiret r, long want);
/* The call answered SBI_SUCCESS with value `want`. */
void check_ok_val(const char *sect, const char *what, struct sbiret r, unsigned long want);
/* "NAME: N ok, M FAIL"; returns the exit status (0 if no FAIL). */
int summary(const char *name);
const char *err_name(long e);

/* Traps: interrupts counted per cause (scause without the interrupt bit, < 16); the handler
 * clears what it takes (STI: set_timer(-1); SSI: sip.SSIP; LCOFI: sip.LCOFIP and records
 * scountovf). Any exception is a FAIL line and a system-failure exit. */
extern volatile unsigned long irq_count[16];
extern volatile unsigned long lcofi_scountovf;
struct trap_frame {
    unsigned long x[32];
};
void trap_handler(struct trap_frame *f);

#define CSR_READ(csr) ({ unsigned long v_; __asm__ volatile("csrr %0, " #csr : "=r"(v_)); v_; })
#define CSR_WRITE(csr, v) __asm__ volatile("csrw " #csr ", %0" :: "r"((unsigned long)(v)) : "memory")
#define CSR_SET(csr, v) __asm__ volatile("csrs " #csr ", %0" :: "r"((unsigned long)(v)) : "memory")
#define CSR_CLEAR(csr, v) __asm__ volatile("csrc " #csr ", %0" :: "r"((unsigned long)(v)) : "memory")
#define SSTATUS_SIE (1ul << 1)
#define IRQ_SSI 1
#define IRQ_STI 5
#define IRQ_LCOFI 13

/* The 64-bit value of the counter CSR `csr` (0xC00..0xC1F, cycle..hpmcounter31), read from
 * S-mode; on RV32 high/low/high until the high half is stable. */
uint64_t read_counter_csr(unsigned csr);
uint64_t rdtime(void);
/* n iterations of a 2-instruction loop (addi, bnez): 2n+1 instructions. */
void spin(unsigned long n);
#endif
