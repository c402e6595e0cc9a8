/* riscv-tests style program without semihosting: prints "ok\n" through the HTIF console
 * (device 1, command 1) and ends by writing (EXIT_CODE << 1) | 1 to `tohost`.
 * QEMU's virt machine has no HTIF, so this runs only on the hart model (crates/cli/tests/cli.rs). */
    .section .text.init, "ax"
    .globl _start
_start:
    la      t0, tohost
    la      t2, msg
1:  lbu     t3, 0(t2)
    beqz    t3, 2f
    li      t1, 0x0101000000000000    /* device 1, command 1: putchar */
    or      t1, t1, t3
    sd      t1, 0(t0)
3:  ld      t4, 0(t0)                 /* the host clears tohost when done */
    bnez    t4, 3b
    addi    t2, t2, 1
    j       1b
2:  li      t1, (EXIT_CODE << 1) | 1
    sd      t1, 0(t0)
4:  j       4b

    .section .rodata
msg: .asciz "ok\n"

    .section .tohost, "aw", @progbits
    .balign 64
    .globl tohost
tohost: .dword 0
    .balign 64
    .globl fromhost
fromhost: .dword 0
