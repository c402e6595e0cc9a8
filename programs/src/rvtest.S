/* Trap entries (direct and vectored) for M and S mode, and the helpers that run a C
 * function in a lower privilege mode. Used by the privileged test programs. */
#if __riscv_xlen == 64
#define REG_S sd
#define REG_L ld
#define RB 8
#else
#define REG_S sw
#define REG_L lw
#define RB 4
#endif
#define FRAME (16 * RB)
#define SYS_LEAVE 0x4c

/* TRAP_ENTRY x: x = m or s. Stubs save t0 and put the vector slot (or -1) in t0. */
.macro TRAP_ENTRY x
    .text
    .balign 4
    .globl \x\()_trap_entry
\x\()_trap_entry:
    addi sp, sp, -FRAME
    REG_S t0, 1*RB(sp)
    li t0, -1
\x\()_common:
    REG_S ra, 0*RB(sp)
    REG_S t1, 2*RB(sp)
    REG_S t2, 3*RB(sp)
    REG_S a0, 4*RB(sp)
    REG_S a1, 5*RB(sp)
    REG_S a2, 6*RB(sp)
    REG_S a3, 7*RB(sp)
    REG_S a4, 8*RB(sp)
    REG_S a5, 9*RB(sp)
    REG_S a6, 10*RB(sp)
    REG_S a7, 11*RB(sp)
    REG_S t3, 12*RB(sp)
    REG_S t4, 13*RB(sp)
    REG_S t5, 14*RB(sp)
    REG_S t6, 15*RB(sp)
    csrr a0, \x\()cause
    csrr a1, \x\()epc
    mv a2, sp
    mv a3, t0
    call \x\()_trap
    beqz a0, \x\()_leave
    csrw \x\()epc, a0
    REG_L ra, 0*RB(sp)
    REG_L t0, 1*RB(sp)
    REG_L t1, 2*RB(sp)
    REG_L t2, 3*RB(sp)
    REG_L a0, 4*RB(sp)
    REG_L a1, 5*RB(sp)
    REG_L a2, 6*RB(sp)
    REG_L a3, 7*RB(sp)
    REG_L a4, 8*RB(sp)
    REG_L a5, 9*RB(sp)
    REG_L a6, 10*RB(sp)
    REG_L a7, 11*RB(sp)
    REG_L t3, 12*RB(sp)
    REG_L t4, 13*RB(sp)
    REG_L t5, 14*RB(sp)
    REG_L t6, 15*RB(sp)
    addi sp, sp, FRAME
    \x\()ret

/* The lower mode called SYS_LEAVE: return from \x\()_enter with its a0, staying in this mode. */
\x\()_leave:
    REG_L a0, 4*RB(sp)
    la t0, \x\()_saved_sp
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
    addi sp, sp, FRAME
    ret

/* Vector table for xtvec MODE=1: slot k jumps to a stub that enters the common path with t0=k.
 * The slots must be 4 bytes each, so the table is assembled without compressed instructions. */
    .balign 64
    .globl \x\()_vector_table
\x\()_vector_table:
    .option push
    .option norvc
    .irp k, 0,1,2,3,4,5,6,7,8,9,10,11
    j \x\()_vec\k
    .endr
    .option pop
    .irp k, 0,1,2,3,4,5,6,7,8,9,10,11
\x\()_vec\k:
    addi sp, sp, -FRAME
    REG_S t0, 1*RB(sp)
    li t0, \k
    j \x\()_common
    .endr

    .bss
    .balign RB
\x\()_saved_sp:
    .space RB
.endm

    TRAP_ENTRY m
    TRAP_ENTRY s

/* long m_enter(long arg, lower_fn fn, unsigned long mode): mret into fn(arg) in U (0) or S (1). */
    .text
    .globl m_enter
m_enter:
    addi sp, sp, -FRAME
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
    la t0, m_saved_sp
    REG_S sp, 0(t0)
    csrw mepc, a1
    li t0, 0x1800
    csrc mstatus, t0
    slli a2, a2, 11
    csrs mstatus, a2
    la ra, lower_return
    mret

/* long s_enter(long arg, lower_fn fn): sret into fn(arg) in U-mode. */
    .globl s_enter
s_enter:
    addi sp, sp, -FRAME
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
    la t0, s_saved_sp
    REG_S sp, 0(t0)
    csrw sepc, a1
    li t0, 0x100
    csrc sstatus, t0
    la ra, lower_return
    sret

/* The lower-mode function returns here and asks its caller's mode to take it back. */
lower_return:
    li a7, SYS_LEAVE
    ecall
1:  j 1b
