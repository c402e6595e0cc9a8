/* Code for programs/src/pmp.c: two 4 KiB pages whose functions are fetched under PMP rules.
 * Assembled without compressed instructions except where a parcel boundary is wanted. */
    .section .text.pmp_code, "ax"
    .balign 4096
    .globl pmp_code
pmp_code:
    .option push
    .option norvc
/* pmp_code + 0: returns 0x5a. */
    .globl pmp_fn
pmp_fn:
    li a0, 0x5a
    ret

/* pmp_code + 0x800: returns 0x77 (8 bytes: the locked NAPOT-8 test covers it exactly). */
    .org pmp_code + 0x800
    .globl pmp_fn_locked
pmp_fn_locked:
    li a0, 0x77
    ret

/* pmp_code + 0xffe: a 4-byte instruction whose second parcel is in the next page. */
    .org pmp_code + 0xffc
    .2byte 0x0001               /* c.nop, never executed: keeps the next one at 0xffe */
    .globl pmp_fn_cross
pmp_fn_cross:
    li a0, 0x36                 /* pmp_code + 0xffe .. 0x1001 */
    ret                         /* pmp_code + 0x1002 */
    .option pop
    .org pmp_code + 0x2000
