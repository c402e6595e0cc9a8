/* semihost_s: semihosting from an S-mode payload (rvtrace run --sbi --semihosting): SYS_WRITE0
 * of a line, then SYS_EXIT with ADP_Stopped_ApplicationExit and status 3 (RISC-V semihosting
 * spec: the call is `slli x0,x0,0x1f; ebreak; srai x0,x0,7`, uncompressed, in one page; a0 =
 * operation, a1 = parameter; Arm semihosting: SYS_WRITE0 0x04, SYS_EXIT 0x18, whose parameter
 * on 64-bit targets is the address of {reason, subcode}). */
#if __riscv_xlen == 64
#define WORD .dword
#else
#define WORD .word
#endif
    .option norvc
    .section .text.start, "ax"
    .globl _start
_start:
    li a0, 0x04
    la a1, line
    jal semihost
    li a0, 0x18
#if __riscv_xlen == 64
    la a1, exit_block
#else
    li a1, 0x20026              /* 32-bit targets: the reason itself; status 0 */
#endif
    jal semihost
1:  j 1b

    .balign 16
semihost:
    slli x0, x0, 0x1f
    ebreak
    srai x0, x0, 7
    ret

    .section .rodata
    .balign 8
exit_block:
    WORD 0x20026, 3
line: .asciz "semihosting from S-mode\n"
