/* sbi_hello: the smallest S-mode payload for the boot modes (rvtrace run --sbi / --bios,
 * QEMU -bios FW -kernel). Entered in S-mode with a0 = hart id, a1 = the device tree.
 * Prints through the legacy SBI console putchar (SBI v3.0 chapter 5, EID 0x01): a greeting,
 * the hart id, whether a1 points at a flattened device tree (magic 0xd00dfeed, big-endian),
 * then echoes the first input line read with the legacy getchar (EID 0x02; -1 = nothing),
 * then shuts down through SRST (chapter 10: EID 0x53525354, FID 0, type 0 shutdown, reason 0).
 * Linked at 0x80200000 (RV64) / 0x80400000 (RV32), where fw_jump jumps. */
#if __riscv_xlen == 64
#define LOADW lwu
#define REG_S sd
#define REG_L ld
#else
#define LOADW lw
#define REG_S sw
#define REG_L lw
#endif
    .section .text.start, "ax"
    .globl _start
_start:
    la sp, stack_top
    mv s0, a0               /* hart id */
    mv s1, a1               /* device tree */
    la a0, hello
    call puts
    addi a0, s0, '0'        /* a one-digit hart id */
    call putc
    li a0, '\n'
    call putc
    /* The device tree header: magic 0xd00dfeed stored big-endian. */
    LOADW t0, 0(s1)
    li t1, 0xedfe0dd0
#if __riscv_xlen == 64
    slli t1, t1, 32
    srli t1, t1, 32
#endif
    la a0, dtb_bad
    bne t0, t1, 1f
    la a0, dtb_ok
1:  call puts
    la a0, input
    call puts
5:  li a7, 2                /* legacy getchar: a0 = the byte, or -1 */
    ecall
    bltz a0, 6f
    li t0, '\n'
    beq a0, t0, 6f
    call putc
    j 5b
6:  li a0, '\n'
    call putc
    /* SRST: system_reset(SHUTDOWN, NO_REASON). */
    li a7, 0x53525354
    li a6, 0
    li a0, 0
    li a1, 0
    ecall
    /* Not reached when SRST works: legacy shutdown (EID 0x08), then spin. */
    li a7, 8
    ecall
2:  j 2b

/* putc(a0): legacy console putchar (EID 0x01). */
putc:
    li a7, 1
    ecall
    ret

/* puts(a0): every byte up to the NUL. */
puts:
    addi sp, sp, -16
    REG_S ra, 0(sp)
    REG_S s2, 8(sp)
    mv s2, a0
3:  lbu a0, 0(s2)
    beqz a0, 4f
    call putc
    addi s2, s2, 1
    j 3b
4:  REG_L ra, 0(sp)
    REG_L s2, 8(sp)
    addi sp, sp, 16
    ret

    .section .rodata
hello:   .asciz "sbi_hello: S-mode payload running on hart "
dtb_ok:  .asciz "sbi_hello: a1 points at a device tree\n"
dtb_bad: .asciz "sbi_hello: a1 does not point at a device tree\n"
input:   .asciz "sbi_hello: input: "

    .section .bss
    .balign 16
    .space 4096
stack_top:
