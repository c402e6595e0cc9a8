/* The tiny kernel's S-mode entry points: the trap entry (stvec) and run_user, which switches to
 * a process's address space and enters it in U-mode. */
#if __riscv_xlen == 64
#define REG_S sd
#define REG_L ld
#define RB 8
#else
#define REG_S sw
#define REG_L lw
#define RB 4
#endif
/* Trap frame: x1..x31 at their register number (slot 0 unused), sepc in slot 32. */
#define FRAME (34 * RB)
#define SSTATUS_SPP 0x100

/* Every trap into S comes from U (the kernel itself takes none): sscratch holds the kernel
 * stack pointer while a process runs. Saves the process's registers, calls
 * k_trap(frame); a zero result resumes the process at frame->sepc, a non-zero one ends it
 * (run_user returns). */
    .text
    .balign 4
    .globl k_trap_entry
k_trap_entry:
    csrrw sp, sscratch, sp
    addi sp, sp, -FRAME
    REG_S x1, 1*RB(sp)
    .irp r, 3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    REG_S x\r, \r*RB(sp)
    .endr
    csrr t0, sscratch
    REG_S t0, 2*RB(sp)
    csrr t0, sepc
    REG_S t0, 32*RB(sp)
    mv a0, sp
    call k_trap
    bnez a0, k_user_done
    REG_L t0, 32*RB(sp)
    csrw sepc, t0
    addi t0, sp, FRAME
    csrw sscratch, t0
    REG_L x1, 1*RB(sp)
    .irp r, 3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    REG_L x\r, \r*RB(sp)
    .endr
    REG_L sp, 2*RB(sp)
    sret

/* void run_user(unsigned long entry, unsigned long sp, unsigned long satp): enter a process.
 * The csrw satp switches the address space (and the ASID: the next instruction runs in the
 * new context); the kernel is mapped with G=1 in every address space, so its code goes on. */
    .globl run_user
run_user:
    addi sp, sp, -14*RB
    REG_S ra, 0*RB(sp)
    .irp r, 0,1,2,3,4,5,6,7,8,9,10,11
    REG_S s\r, (\r+1)*RB(sp)
    .endr
    la t0, k_saved_sp
    REG_S sp, 0(t0)
    csrw sscratch, sp
    csrw sepc, a0
    li t0, SSTATUS_SPP
    csrc sstatus, t0
    csrw satp, a2
    sfence.vma
    mv sp, a1
    /* The process starts with zeroed registers (no kernel values leak into U). */
    li ra, 0
    li a0, 0
    li a1, 0
    li a2, 0
    li t0, 0
    .irp r, 0,1,2,3,4,5,6,7,8,9,10,11
    li s\r, 0
    .endr
    sret

/* k_trap returned non-zero: the process is finished; return from run_user. */
k_user_done:
    la t0, k_saved_sp
    REG_L sp, 0(t0)
    REG_L ra, 0*RB(sp)
    .irp r, 0,1,2,3,4,5,6,7,8,9,10,11
    REG_L s\r, (\r+1)*RB(sp)
    .endr
    addi sp, sp, 14*RB
    ret

    .bss
    .balign RB
k_saved_sp:
    .space RB
