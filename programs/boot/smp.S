/* smp: several harts under an SBI (rvtrace run --sbi|--bios FW --harts N, QEMU -smp N -bios FW
 * -kernel). Entered in S-mode on one hart (a0 = its id; OpenSBI's boot hart, or hart 0 under
 * rvtrace's SBI) while the others are STOPPED (SBI v3.0 HSM). The boot hart counts the harts
 * (hart_get_status answers INVALID_PARAM past the last), starts every stopped one at
 * `secondary` (hart_start). Every hart then adds 1 to a counter K times under an LR/SC spin
 * lock (a plain load and store inside it) and K times with amoadd.w, prints a line under the
 * lock, and counts itself done. The boot hart waits for all, sends an IPI to the others (sPI
 * send_ipi), each of which waits for it in wfi with sie.SSIE set, prints, and answers with an
 * IPI back and then stops (hart_stop). The boot hart waits for every answer (in wfi), checks
 * both counters against N * K, prints the result and shuts down (SRST).
 * Every line is printed whole under the lock (legacy console putchar, EID 0x01), so the lines
 * of different harts never mix; their order depends on the interleaving.
 * Linked at 0x80200000 (RV64) / 0x80400000 (RV32), where fw_jump jumps. */
#if __riscv_xlen == 64
#define REG_S sd
#define REG_L ld
#define SZ 8
#else
#define REG_S sw
#define REG_L lw
#define SZ 4
#endif
#define K 1000
#define EID_HSM 0x48534d
#define EID_IPI 0x735049
#define SIP_SSIP 2

    .section .text.start, "ax"
    .globl _start
_start:
    mv s0, a0                   /* the boot hart's id */
    call set_stack
    la t0, boot_hart
    sw s0, 0(t0)
    /* Count the harts: hart_get_status(h) for h = 0.. until it fails. */
    li s1, 0
1:  li a7, EID_HSM
    li a6, 2
    mv a0, s1
    ecall
    bnez a0, 2f
    addi s1, s1, 1
    j 1b
2:  la t0, nharts
    sw s1, 0(t0)
    /* Start every stopped hart (state 1) at `secondary`. */
    li s2, 0
3:  beq s2, s1, 4f
    li a7, EID_HSM
    li a6, 2
    mv a0, s2
    ecall
    li t0, 1
    bne a1, t0, 5f
    li a7, EID_HSM
    li a6, 0                    /* hart_start(hartid, start_addr, opaque) */
    mv a0, s2
    la a1, secondary
    li a2, 0
    ecall
    bnez a0, fail
5:  addi s2, s2, 1
    j 3b
4:  call work
    /* Wait until every hart is done counting. */
    la t0, done
6:  lw t1, 0(t0)
    blt t1, s1, 6b
    /* IPI every other hart: mask all ones, base -1 names every hart; then clear our own. */
    li t0, SIP_SSIP
    csrs sie, t0
    li s3, 1
    bgt s1, s3, 7f
    j 9f
7:  la t0, boot_hart
    lw s4, 0(t0)
    li s2, 0
8:  beq s2, s1, 10f
    beq s2, s4, 11f
    li a7, EID_IPI
    li a6, 0                    /* send_ipi(hart_mask, hart_mask_base) */
    li a0, 1
    mv a1, s2
    ecall
    bnez a0, fail
11: addi s2, s2, 1
    j 8b
    /* Wait for the N - 1 answers: clear SSIP, look, wfi (an IPI after the look wakes it). */
10: addi s3, s1, -1
12: li t0, SIP_SSIP
    csrc sip, t0
    la t0, acked
    lw t1, 0(t0)
    bge t1, s3, 9f
    wfi
    j 12b
9:  /* Check: both counters are N * K. */
    li t0, K
    mul t2, t0, s1
    la t0, lock_count
    lw t1, 0(t0)
    bne t1, t2, fail
    la t0, amo_count
    lw t1, 0(t0)
    bne t1, t2, fail
    call lock
    la a0, msg_ok1
    call puts
    mv a0, s1
    call putdec
    la a0, msg_ok2
    call puts
    la t0, lock_count
    lw a0, 0(t0)
    call putdec
    la a0, msg_ok3
    call puts
    la t0, amo_count
    lw a0, 0(t0)
    call putdec
    li a0, '\n'
    call putc
    call unlock
    li a0, 0                    /* SRST reason: none */
    j shutdown
fail:
    la a0, msg_fail
    call puts
    li a0, 1                    /* SRST reason: system failure */
shutdown:
    mv a1, a0
    li a7, 0x53525354
    li a6, 0
    li a0, 0
    ecall
13: j 13b

/* A started hart: a0 = its id, a1 = opaque. */
secondary:
    mv s0, a0
    call set_stack
    call work
    /* Wait for the boot hart's IPI. */
    li t0, SIP_SSIP
    csrs sie, t0
14: csrr t0, sip
    andi t0, t0, SIP_SSIP
    bnez t0, 15f
    wfi
    j 14b
15: li t0, SIP_SSIP
    csrc sip, t0
    call lock
    la a0, msg_hart
    call puts
    mv a0, s0
    call putdec
    la a0, msg_ipi
    call puts
    call unlock
    /* Answer: count the answer, IPI the boot hart, stop. */
    la t0, acked
    li t1, 1
    amoadd.w zero, t1, (t0)
    la t0, boot_hart
    lw a1, 0(t0)
    li a7, EID_IPI
    li a6, 0
    li a0, 1
    ecall
    li a7, EID_HSM
    li a6, 1                    /* hart_stop() */
    ecall
    j fail

/* sp = the stack of hart s0 (4 KiB each, from stacks_top down). */
set_stack:
    la sp, stacks_top
    slli t0, s0, 12
    sub sp, sp, t0
    ret

/* The work of every hart (s0 = its id): K increments under the lock, K with amoadd.w, then a
 * line, then done += 1. */
work:
    addi sp, sp, -16
    REG_S ra, 0(sp)
    li s5, K
16: call lock
    la t0, lock_count
    lw t1, 0(t0)
    addi t1, t1, 1
    sw t1, 0(t0)
    call unlock
    la t0, amo_count
    li t1, 1
    amoadd.w zero, t1, (t0)
    addi s5, s5, -1
    bnez s5, 16b
    call lock
    la a0, msg_hart
    call puts
    mv a0, s0
    call putdec
    la a0, msg_counted
    call puts
    call unlock
    la t0, done
    li t1, 1
    amoadd.w.aqrl zero, t1, (t0)
    REG_L ra, 0(sp)
    addi sp, sp, 16
    ret

/* The LR/SC spin lock (unprivileged ISA, "Load-Reserved/Store-Conditional Instructions"). */
lock:
    la t3, the_lock
    li t4, 1
17: lr.w.aq t5, (t3)
    bnez t5, 17b
    sc.w t5, t4, (t3)
    bnez t5, 17b
    ret
unlock:
    la t3, the_lock
    amoswap.w.rl zero, zero, (t3)
    ret

/* putc(a0): legacy console putchar (EID 0x01); keeps a1..a6. */
putc:
    li a7, 1
    ecall
    ret

/* puts(a0): every byte up to the NUL. */
puts:
    addi sp, sp, -16
    REG_S ra, 0(sp)
    REG_S s6, SZ(sp)
    mv s6, a0
18: lbu a0, 0(s6)
    beqz a0, 19f
    call putc
    addi s6, s6, 1
    j 18b
19: REG_L ra, 0(sp)
    REG_L s6, SZ(sp)
    addi sp, sp, 16
    ret

/* putdec(a0): an unsigned 32-bit number in decimal. */
putdec:
    addi sp, sp, -32
    REG_S ra, 0(sp)
    REG_S s6, SZ(sp)
    addi s6, sp, 31
    sb zero, 0(s6)
    slli a0, a0, __riscv_xlen - 32
    srli a0, a0, __riscv_xlen - 32
    li t0, 10
20: remu t1, a0, t0
    divu a0, a0, t0
    addi t1, t1, '0'
    addi s6, s6, -1
    sb t1, 0(s6)
    bnez a0, 20b
    mv a0, s6
    call puts
    REG_L ra, 0(sp)
    REG_L s6, SZ(sp)
    addi sp, sp, 32
    ret

    .section .rodata
msg_hart:    .asciz "smp: hart "
msg_counted: .asciz " counted\n"
msg_ipi:     .asciz " got the IPI\n"
msg_ok1:     .asciz "smp: "
msg_ok2:     .asciz " harts, lock counter "
msg_ok3:     .asciz ", amo counter "
msg_fail:    .asciz "smp: FAIL\n"

    .section .data
    .balign 8
the_lock:   .word 0
lock_count: .word 0
    .balign 64
amo_count:  .word 0
done:       .word 0
acked:      .word 0
nharts:     .word 0
boot_hart:  .word 0

    .section .bss
    .balign 16
    .space 4096 * 8
stacks_top:
