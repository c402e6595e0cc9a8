/* Entry of the S-mode SBI payloads: entered in S-mode with a0 = hart id, a1 = device tree
 * address (SBI 1.x boot convention, as OpenSBI and QEMU pass them). Sets gp, sp, clears .bss,
 * installs the trap entry in stvec (direct mode), calls main(hartid, dtb) and exits through
 * SRST with main's result (sbi_exit). */
#if __riscv_xlen == 64
#define REG_S sd
#define REG_L ld
#define SZ 8
#else
#define REG_S sw
#define REG_L lw
#define SZ 4
#endif

    .section .text.start, "ax"
    .globl _start
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, __stack_top
    mv s0, a0
    mv s1, a1
    la t0, __bss_start
    la t1, __bss_end
1:  bgeu t0, t1, 2f
    sb zero, 0(t0)
    addi t0, t0, 1
    j 1b
2:  la t0, trap_entry
    csrw stvec, t0
    mv a0, s0
    mv a1, s1
    call main
    call sbi_exit
3:  j 3b

/* Saves every register but sp and zero into a frame (struct trap_frame, x1..x31 with x2 as
 * a hole), calls trap_handler(frame), restores, sret. */
    .text
    .balign 4
    .globl trap_entry
trap_entry:
    addi sp, sp, -32*SZ
    .irp r, 1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    REG_S x\r, \r*SZ(sp)
    .endr
    mv a0, sp
    call trap_handler
    .irp r, 1,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    REG_L x\r, \r*SZ(sp)
    .endr
    addi sp, sp, 32*SZ
    sret
