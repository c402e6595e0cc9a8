/* Code for programs/src/triggers.c: functions whose instructions execute triggers watch.
 * A trigger's breakpoint skips the instruction it fires on (the M handler returns past it), so
 * each function's result says which instructions ran. */
    .section .text.trig_code, "ax"
    .balign 4096
    .globl trig_code
trig_code:
    .option push
    .option norvc
/* trig_fn(a) = a + 1 + 2 + 4: trig_fn + 0, + 4, + 8 each add one term. */
    .globl trig_fn
trig_fn:
    addi a0, a0, 1
    addi a0, a0, 2
    addi a0, a0, 4
    ret
/* trig_c(a) = a + 1 + 2 + 4: a 2-byte instruction at + 0, 4-byte ones at + 2 and + 6. */
    .globl trig_c
trig_c:
    .option rvc
    c.addi a0, 1
    .option norvc
    addi a0, a0, 2
    addi a0, a0, 4
    ret
/* The second page (trig_code + 0x1000): trig_nx(a) = a + 1 + 2, for a page without X. */
    .org trig_code + 0x1000
    .globl trig_nx
trig_nx:
    addi a0, a0, 1
    addi a0, a0, 2
    ret
    .option pop
    .org trig_code + 0x2000
