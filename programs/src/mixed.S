/* Hand-written code that mixes compressed and uncompressed encodings: .option norvc regions,
 * 32-bit instructions at addresses that are 2 mod 4, compressed branches/jumps/calls into
 * 32-bit code and back, indirect jumps through a table, and the XLEN-specific compressed
 * forms (c.addiw/c.ld/c.sd/c.fld/c.fsd on RV64, c.jal on RV32). Driven by mixed.c. */
#if __riscv_xlen == 64
#define REG_L ld
#define REG_S sd
#define LOG_RB 3
#define PTR .dword
#else
#define REG_L lw
#define REG_S sw
#define LOG_RB 2
#define PTR .word
#endif

    .text
/* long mix_sum(long n): sum over i = n..1 of (3*i ^ 1) */
    .globl mix_sum
    .balign 4
mix_sum:
    c.li a1, 0                  /* 2 bytes: the loop head is at 2 mod 4 */
1:  .option push
    .option norvc
    beq a0, zero, 2f            /* 32-bit at 2 mod 4 */
    slli a2, a0, 1
    .option pop
    c.add a2, a0
    xori a2, a2, 1              /* no compressed form */
    c.add a1, a2
    c.addi a0, -1
    c.j 1b
2:  c.mv a0, a1
    c.jr ra

/* long mix_dispatch(long k, long x): jump through a table to handlers of mixed encodings */
    .globl mix_dispatch
    .balign 4
mix_dispatch:
    .option push
    .option norvc
    lla t0, mix_targets
    slli a0, a0, LOG_RB
    add t0, t0, a0
    REG_L t0, 0(t0)
    .option pop
    c.jr t0

h0: c.addi a1, 5                /* compressed target */
    c.mv a0, a1
    c.jr ra

    c.nop
h1: .option push                /* 32-bit target at 2 mod 4 */
    .option norvc
    addi a1, a1, 100
    add a0, a1, a1
    jalr zero, 0(ra)
    .option pop

h2: c.mv t1, ra                 /* c.jalr to a compressed helper */
    lla t2, helper_c
    c.jalr t2
    c.mv ra, t1
    c.jr ra

h3: .option push                /* 32-bit jal to a 32-bit helper, then a compressed one */
    .option norvc
    addi sp, sp, -16
    REG_S ra, 8(sp)
    jal ra, helper_w
    .option pop
#if __riscv_xlen == 32
    c.jal helper_c              /* RV32 only */
#else
    call helper_c
#endif
    REG_L ra, 8(sp)
    addi sp, sp, 16
    ret

h4: c.beqz a1, 3f               /* compressed conditional branches */
    c.li a0, 1
    c.bnez a1, 4f
3:  c.li a0, -1
    c.jr ra
4:  c.addi a0, 6
    .option push
    .option norvc
    bne a1, zero, 5f            /* 32-bit branch over compressed code */
    .option pop
    c.li a0, -2
5:  c.jr ra

/* compressed helper: a0 = 2*a1 + 1 (starts 2 mod 4 after the padding below) */
    c.nop
helper_c:
    c.mv a0, a1
    c.add a0, a1
    c.addi a0, 1
    c.jr ra

/* 32-bit helper: a1 = a1 * 7 */
    .option push
    .option norvc
helper_w:
    slli a2, a1, 3
    sub a1, a2, a1
    jalr zero, 0(ra)
    .option pop

    .section .rodata
    .balign 8
mix_targets:
    PTR h0, h1, h2, h3, h4

    .text
#if __riscv_xlen == 64
/* long mix_rv64(long *p): RV64-only compressed forms; p[0..1] longs, p[2] a double slot */
    .globl mix_rv64
    .balign 4
mix_rv64:
    c.ld a1, 0(a0)
    c.ld a2, 8(a0)
    c.addw a1, a2               /* 32-bit add, sign-extended */
    c.addiw a1, 1
    c.subw a2, a1
    c.sd a2, 8(a0)
    c.addi16sp sp, -32
    c.sdsp a1, 8(sp)
    c.ldsp a3, 8(sp)
    c.fld fa0, 16(a0)
    fadd.d fa0, fa0, fa0
    c.fsd fa0, 16(a0)
    c.fsdsp fa0, 16(sp)
    c.fldsp fa1, 16(sp)
    fcvt.l.d a4, fa1, rtz
    c.addi16sp sp, 32
    c.add a3, a4
    c.mv a0, a3
    c.jr ra
#else
/* long mix_rv32(long *p): RV32 compressed loads/stores and c.srai/c.andi */
    .globl mix_rv32
    .balign 4
mix_rv32:
    c.lw a1, 0(a0)
    c.lw a2, 4(a0)
    c.srai a1, 2
    c.andi a2, 0x1f
    c.sw a2, 4(a0)
    c.addi sp, -16
    c.swsp a1, 8(sp)
    c.lwsp a3, 8(sp)
    c.addi sp, 16
    c.or a3, a2
    c.mv a0, a3
    c.jr ra
#endif
