/* Recording regions for the ctr_* programs (ctr.h). Every region writes mctrctl = a0 as its
 * first instruction and mctrctl = 0 before it returns, so exactly its own transfers can be
 * recorded. Assembled without compressed instructions except where a compressed form is the
 * point (.option rvc around it). Transfer types ("Transfer Type Filtering", table "Control
 * Transfer Type Definitions") in the comments: 1 exception, 2 interrupt, 3 trap return,
 * 4 not-taken branch, 5 taken branch, 8 indirect call, 9 direct call, 10 indirect jump,
 * 11 direct jump, 12 co-routine swap, 13 return, 14 other indirect jump (with linkage),
 * 15 other direct jump (with linkage). */
#if __riscv_xlen == 64
#define REG_S sd
#define REG_L ld
#define RB 8
#else
#define REG_S sw
#define REG_L lw
#define RB 4
#endif
#define MCTRCTL 0x34e
#define MCOUNTINHIBIT 0x320
#define CLINT_MSIP 0x2000000
#define MIP_LCOFIP 0x2000

    .text
    .option norvc
    .option norelax             /* fixed offsets: .balign 4 holds for the trap entries */
    .balign 4
    .globl ctr_text
ctr_text:

/* PROLOGUE/EPILOGUE: keep ra and s1 (s1 is the link register of the "other" jumps). */
.macro PROLOGUE
    addi sp, sp, -4*RB
    REG_S ra, 0(sp)
    REG_S s1, RB(sp)
.endm
.macro EPILOGUE
    REG_L ra, 0(sp)
    REG_L s1, RB(sp)
    addi sp, sp, 4*RB
    ret
.endm

/* Leaf targets. */
f_ret:                          /* return through x1 */
    jalr x0, 0(ra)              /* 13 */
f_cret:
    .option push
    .option rvc
    c.jr ra                     /* 13, compressed */
    .balign 4                   /* c.nop padding, if any */
    .option pop
f_t0:                           /* return through x5 */
    jalr x0, 0(t0)              /* 13 */
f_ct0:
    .option push
    .option rvc
    c.jr t0                     /* 13, compressed, through x5 */
    .balign 4                   /* c.nop padding, if any */
    .option pop
f_s1ret:
    jalr s1, 0(ra)              /* 13: rs1 = x1, rd = x9 (not a link register) */
co_a:
    jalr t0, 0(ra)              /* 12: rd = x5, rs1 = x1 */

/* Calls and returns. */
    .globl r_calls
r_calls:
    PROLOGUE
    csrw MCTRCTL, a0
    jal ra, f_ret               /* 9, 13 */
    la t1, f_cret
    jalr ra, 0(t1)              /* 8, 13 (c.jr ra) */
    .option push
    .option rvc
    c.jalr t1                   /* 8 (c.jalr, rs1 != x5), 13 */
#if __riscv_xlen == 32
    c.jal f_ret                 /* 9 (c.jal, RV32 only), 13 */
#endif
    .balign 4                   /* c.nop padding, if any */
    .option pop
    jal t0, f_t0                /* 9 (jal x5), 13 (through x5) */
    la t1, f_ct0
    jalr t0, 0(t1)              /* 8 (jalr x5, rs1 != x1), 13 (c.jr t0) */
    la ra, f_ret
    jalr ra, 0(ra)              /* 8 (jalr x1, x1), 13 */
    la t0, f_t0
    jalr t0, 0(t0)              /* 8 (jalr x5, x5), 13 */
    jal ra, f_s1ret             /* 9, 13 (jalr x9, x1) */
    csrw MCTRCTL, zero
    EPILOGUE

/* Jumps and co-routine swaps. */
    .globl r_jumps
r_jumps:
    PROLOGUE
    csrw MCTRCTL, a0
    jal x0, 1f                  /* 11 */
1:
    .option push
    .option rvc
    c.j 2f                      /* 11, compressed */
    .balign 4                   /* c.nop padding, if any */
    .option pop
2:  la t1, 3f
    jalr x0, 0(t1)              /* 10 */
3:  la t1, 4f
    .option push
    .option rvc
    c.jr t1                     /* 10, compressed */
    .balign 4                   /* c.nop padding, if any */
    .option pop
4:  jal s1, 5f                  /* 15 */
5:  la t1, 6f
    jalr s1, 0(t1)              /* 14 */
6:  la t0, co_a
    jalr ra, 0(t0)              /* 12 (jalr x1, x5), 12 back (jalr x5, x1) */
    la t0, co_a
    .option push
    .option rvc
    c.jalr t0                   /* 12 (c.jalr x5), 12 back */
    .balign 4                   /* c.nop padding, if any */
    .option pop
    csrw MCTRCTL, zero
    EPILOGUE

/* Conditional branches, taken and not taken (4 only with NTBREN). */
    .globl r_branches
r_branches:
    PROLOGUE
    csrw MCTRCTL, a0
    li t0, 1
    li a1, 0
    beq t0, t0, 1f              /* 5 */
1:  bne t0, t0, 9f              /* 4 */
    blt zero, t0, 2f            /* 5 */
    nop
2:  bgeu zero, t0, 9f           /* 4 */
    .option push
    .option rvc
    c.beqz a1, 3f               /* 5, compressed */
3:  c.bnez a1, 9f               /* 4, compressed */
    .balign 4                   /* c.nop padding, if any */
    .option pop
    beq zero, zero, .+4         /* 5: taken, offset = length (target = next pc) */
    bne zero, zero, .+4         /* 4: not taken, offset = length */
9:  csrw MCTRCTL, zero
    EPILOGUE

/* Traps in M-mode (ctr_mhandler skips each; its mret is a trap return). */
    .globl r_traps
r_traps:
    PROLOGUE
    csrw MCTRCTL, a0
    ecall                       /* 1, 3 */
    ebreak                      /* 1, 3 (4-byte ebreak: no semihosting sequence around it) */
    csrw cycle, zero            /* 1 (illegal: read-only CSR), 3 */
    csrw MCTRCTL, zero
    EPILOGUE

/* One transfer of each type, with ctr_mhandler as mtvec, mie.MSIE set and mstatus.MIE clear. */
    .globl r_mix
r_mix:
    PROLOGUE
    csrw MCTRCTL, a0
    ecall                       /* 1, handler: bltz not taken (4), 3 */
    li t0, CLINT_MSIP
    li t1, 1
    sw t1, 0(t0)                /* MSI pending */
    csrsi mstatus, 8            /* 2 right after this, handler: bltz taken (5), 3 */
    csrci mstatus, 8
    beq zero, zero, 1f          /* 5 */
1:  bne zero, zero, 9f          /* 4 */
    jal ra, f_ret               /* 9, 13 */
    la t1, f_ret
    jalr ra, 0(t1)              /* 8, 13 */
    jal x0, 2f                  /* 11 */
2:  la t1, 3f
    jalr x0, 0(t1)              /* 10 */
3:  la t0, co_a
    jalr ra, 0(t0)              /* 12, 12 */
    jal s1, 4f                  /* 15 */
4:  la t1, 9f
    jalr s1, 0(t1)              /* 14 */
9:  csrw MCTRCTL, zero
    EPILOGUE

/* a1 - 1 taken branches (the last bnez falls through). */
    .globl r_loop
r_loop:
    csrw MCTRCTL, a0
1:  addi a1, a1, -1
    bnez a1, 1b                 /* 5 */
    csrw MCTRCTL, zero
    ret

/* RAS emulation ("RAS (Return Address Stack) Emulation Mode"): ras_g pushes A, pushes B (in
 * ras_f: a taken branch, an ecall and its mret, a jump: all ignored), pops B, pops A; ras_h
 * pushes H, pushes and pops a call, pushes an indirect call I that co_a's co-routine swap
 * replaces. Ends with WRPTR 2: logical 0 the swap, 1 H. */
    .globl r_ras
r_ras:
    PROLOGUE
    csrw MCTRCTL, a0
    jal ra, ras_g               /* push A */
    jal ra, ras_h               /* push H; ras_h ends recording */
    EPILOGUE
ras_f:
    beq zero, zero, 1f
1:  ecall
    jal x0, 2f
2:  jalr x0, 0(ra)              /* pop */
ras_g:
    mv t2, ra
    jal ra, ras_f               /* push B */
    mv ra, t2
    jalr x0, 0(ra)              /* pop */
ras_h:
    mv t2, ra
    jal ra, ras_f               /* push, pop */
    la t1, co_a
    jalr ra, 0(t1)              /* push I (indirect call) */
    csrw MCTRCTL, zero          /* co_a swapped back to here */
    mv ra, t2
    ret

/* Breakpoint: a call and return, an ebreak (BPFRZ: freezes, not recorded; its mret neither),
 * a call and return. */
    .globl r_ebreak
r_ebreak:
    PROLOGUE
    csrw MCTRCTL, a0
    jal ra, f_ret
    ebreak
    jal ra, f_ret
    csrw MCTRCTL, zero
    EPILOGUE

/* Local counter overflow: counter 3 (INSTRUCTIONS, preset 2^XLEN-10 by the caller, mie.LCOFIE
 * set, mstatus.MIE clear) wraps in the nops; LCOFI is taken right after the csrsi. */
    .globl r_lcofi
r_lcofi:
    PROLOGUE
    csrw MCTRCTL, a0
    csrw MCOUNTINHIBIT, zero
    .rept 12
    nop
    .endr
    li t0, -1
    csrw MCOUNTINHIBIT, t0
    jal ra, f_ret               /* 9, 13 */
    csrsi mstatus, 8            /* LCOFI: LCOFIFRZ freezes; else 2, bltz taken (5), 3 */
    csrci mstatus, 8
    jal ra, f_ret
    csrw MCTRCTL, zero
    EPILOGUE

/* M-mode trap handler of the M-mode regions: exceptions skip 4 bytes; interrupts clear the
 * CLINT msip and mip.LCOFIP. Clobbers t6. */
    .balign 4
    .globl ctr_mhandler
ctr_mhandler:
    csrr t6, mcause
    bltz t6, 1f
    csrr t6, mepc
    addi t6, t6, 4
    csrw mepc, t6
    mret
1:  li t6, CLINT_MSIP
    sw zero, 0(t6)
    li t6, MIP_LCOFIP
    csrc mip, t6
    mret

/* void ctr_enter(ctl, fn, mode): mret into fn in U (0) or S (1) with mctrctl = ctl written
 * just before; fn returns to ctr_lower_ret, whose M-mode CSR read traps to M (illegal in U and
 * S); ctr_mleave (mtvec) writes mctrctl = 0 first, then returns from ctr_enter. */
    .globl ctr_enter
ctr_enter:
    addi sp, sp, -16*RB
    REG_S ra, 0*RB(sp)
    REG_S s0, 1*RB(sp)
    REG_S s1, 2*RB(sp)
    REG_S s2, 3*RB(sp)
    REG_S s3, 4*RB(sp)
    REG_S s4, 5*RB(sp)
    REG_S s5, 6*RB(sp)
    REG_S s6, 7*RB(sp)
    REG_S s7, 8*RB(sp)
    REG_S s8, 9*RB(sp)
    REG_S s9, 10*RB(sp)
    REG_S s10, 11*RB(sp)
    REG_S s11, 12*RB(sp)
    la t0, ctr_saved_sp
    REG_S sp, 0(t0)
    csrw mepc, a1
    li t0, 0x1800
    csrc mstatus, t0
    slli a2, a2, 11
    csrs mstatus, a2
    la ra, ctr_lower_ret
    csrw MCTRCTL, a0
    mret                        /* 3 */
ctr_lower_ret:
    csrr zero, mscratch         /* 1: illegal below M, to M */
1:  j 1b

    .balign 4
    .globl ctr_mleave
ctr_mleave:
    csrw MCTRCTL, zero
    la t0, ctr_saved_sp
    REG_L sp, 0(t0)
    REG_L ra, 0*RB(sp)
    REG_L s0, 1*RB(sp)
    REG_L s1, 2*RB(sp)
    REG_L s2, 3*RB(sp)
    REG_L s3, 4*RB(sp)
    REG_L s4, 5*RB(sp)
    REG_L s5, 6*RB(sp)
    REG_L s6, 7*RB(sp)
    REG_L s7, 8*RB(sp)
    REG_L s8, 9*RB(sp)
    REG_L s9, 10*RB(sp)
    REG_L s10, 11*RB(sp)
    REG_L s11, 12*RB(sp)
    addi sp, sp, 16*RB
    ret

/* S-mode handler: exceptions (ecalls delegated from U) skip 4 bytes; interrupts (a delegated
 * LCOFI) clear sip.LCOFIP. sret (3). */
    .balign 4
    .globl ctr_shandler
ctr_shandler:
    csrr t0, scause
    bltz t0, 1f                 /* 5 for an interrupt (4 with NTBREN otherwise) */
    csrr t0, sepc
    addi t0, t0, 4
    csrw sepc, t0
    sret
1:  li t0, MIP_LCOFIP
    csrc sip, t0
    sret

/* Lower-mode bodies for ctr_enter (ra = ctr_lower_ret on entry). */
    .globl u_body, s_body
u_body:                         /* U- or S-mode: a call, its return, a taken branch, a return */
s_body:
    mv t2, ra
    jal ra, f_ret               /* 9, 13 */
    beq zero, zero, 1f          /* 5 */
1:  mv ra, t2
    jalr x0, 0(ra)              /* 13, to ctr_lower_ret */

    .globl u_ecall, s_ecall
u_ecall:                        /* ecall (to S when medeleg delegates it, else to M), return */
s_ecall:
    ecall
    jalr x0, 0(ra)              /* 13 */

    .globl u_msi
u_msi:                          /* U-mode: a call, then a store to the CLINT msip: an MSI to M
                                 * right after it (M interrupts are always enabled in U) */
    mv t2, ra
    jal ra, f_ret               /* 9, 13 */
    li t0, CLINT_MSIP
    li t1, 1
    sw t1, 0(t0)                /* 2 (interrupt U->M) */
1:  j 1b

    .globl s_lcofi, s_lcofi_poll
s_lcofi:                        /* S-mode, a delegated LCOFI pending: a call, SIE set (the LCOFI
                                 * traps to S right after: LCOFIFRZ freezes), a call, return */
    mv t2, ra
    jal ra, f_ret               /* 9, 13 */
    csrsi sstatus, 2            /* LCOFI: frozen, or 2, bltz taken (5), sret (3) */
    csrci sstatus, 2
    jal ra, f_ret               /* 9, 13 unless frozen */
    mv ra, t2
    jalr x0, 0(ra)              /* 13 unless frozen */
s_lcofi_poll:                   /* S-mode: the pending LCOFI seen in sip and cleared there, never
                                 * trapped: no freeze */
    mv t2, ra
    csrr t0, sip
    li t1, MIP_LCOFIP
    and t0, t0, t1
    beqz t0, 1f                 /* not taken: LCOFIP is pending */
    csrc sip, t1
1:  jal ra, f_ret               /* 9, 13 */
    mv ra, t2
    jalr x0, 0(ra)              /* 13 */

    .globl s_sret_u
s_sret_u:                       /* S-mode: sret into u_body */
    la t0, u_body
    csrw sepc, t0
    li t0, 0x100
    csrc sstatus, t0
    sret                        /* 3 */

    .globl ctr_text_end
ctr_text_end:

    .bss
    .balign RB
ctr_saved_sp:
    .space RB
