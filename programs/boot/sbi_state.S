/* sbi_state: checks, in S-mode, the state `rvtrace run --sbi` enters a payload in (the state
 * OpenSBI leaves), without calling the SBI: a0 = hart id 0; a1 = a device tree (magic
 * 0xd00dfeed big-endian), 2 MiB aligned as QEMU places it; the counters readable from S
 * (mcounteren open); the FPU on (sstatus.FS != Off); SSI/STI/SEI delegated (sie keeps them);
 * ebreak delegated (medeleg bit 3: the S handler sees scause 3). It ends through the SiFive
 * test finisher (PMP is open): 0x5555 = exit 0, or 0x3333 | n << 16 = exit n, n the failed check.
 * Any trap into M-mode ends an --sbi run with an error. */
#if __riscv_xlen == 64
#define LOADW lwu
#else
#define LOADW lw
#endif
    .section .text.start, "ax"
    .option norvc
    .globl _start
_start:
    li s2, 1                        /* check 1: a0 = 0 */
    bnez a0, fail
    li s2, 2                        /* check 2: the device tree magic at a1 */
    LOADW t0, 0(a1)
    li t1, 0xedfe0dd0
#if __riscv_xlen == 64
    slli t1, t1, 32
    srli t1, t1, 32
#endif
    bne t0, t1, fail
    li s2, 3                        /* check 3: a1 is 2 MiB aligned */
    li t0, 0x1fffff
    and t0, a1, t0
    bnez t0, fail
    li s2, 4                        /* check 4: counters readable in S (a trap goes to M) */
    rdcycle t0
    rdtime t0
    rdinstret t0
    csrr t0, hpmcounter3
    li s2, 5                        /* check 5: sstatus.FS != Off */
    csrr t0, sstatus
    li t1, 0x6000
    and t0, t0, t1
    beqz t0, fail
    li s2, 6                        /* check 6: SSI, STI, SEI delegated: sie keeps them */
    li t1, 0x222
    csrw sie, t1
    csrr t0, sie
    and t0, t0, t1
    bne t0, t1, fail
    csrw sie, zero
    li s2, 7                        /* check 7: ebreak is delegated to S */
    la t0, handler
    csrw stvec, t0
    li s3, 0
    ebreak
    li t0, 3
    bne s3, t0, fail
    li t0, 0x5555                   /* all passed */
    j finish
fail:
    slli t0, s2, 16
    li t1, 0x3333
    or t0, t0, t1
finish:
    li t1, 0x100000
    sw t0, 0(t1)
1:  j 1b

    .balign 4
handler:
    csrr s3, scause
    csrr t0, sepc
    addi t0, t0, 4                  /* ebreak is 4 bytes (.option norvc) */
    csrw sepc, t0
    sret
