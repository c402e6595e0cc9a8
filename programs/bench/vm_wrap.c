/* The benchmark workload (workload.c, built with -Dmain=workload_main) run in S-mode, with
 * address translation (-DVM=1: Sv39 on RV64, Sv32 on RV32, RAM identity-mapped by one
 * 1 GiB / 4 MiB leaf) or without (-DVM=0: satp Bare). For measuring the cost of translation
 * (crates/sim/README.md, "Virtual memory"). */
#include <stdio.h>
#include "../src/rvtest.h"
#include "../src/vm.h"

int workload_main(void);

unsigned long m_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)vec;
    if (cause == CAUSE_ECALL_S && f->a7 == SYS_LEAVE) return 0;
    printf("unexpected trap: cause %lu at %lx\n", cause, epc);
    f->a0 = 3;
    return 0;
}

unsigned long s_trap(unsigned long cause, unsigned long epc, struct frame *f, long vec) {
    (void)cause; (void)f; (void)vec;
    return epc;
}

static pte_t root[VM_PTES] __attribute__((aligned(4096)));

static long run(long arg) { (void)arg; return workload_main(); }

int main(void) {
    CSR_WRITE(mtvec, m_trap_entry);
    pmp_open_all();
#if VM
#if __riscv_xlen == 64
    root[vm_vpn(0x80000000ul, 2)] = vm_leaf(0x80000000ul, PTE_V | PTE_RWX | PTE_A | PTE_D);
    CSR_WRITE(satp, vm_satp(VM_SV39, 0, root));
#else
    root[vm_vpn(0x80000000ul, 1)] = vm_leaf(0x80000000ul, PTE_V | PTE_RWX | PTE_A | PTE_D);
    CSR_WRITE(satp, vm_satp(VM_SV32, 0, root));
#endif
    vm_fence();
#endif
    return (int)m_enter(0, run, 1);
}
