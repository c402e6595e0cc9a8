/* Page-table helpers for the test programs (privileged ISA, "Supervisor-Level ISA": Sv32 on
 * RV32, Sv39/Sv48/Sv57 on RV64). Build a tree with vm_map() from a pool of page-table pages,
 * point satp at its root with vm_satp(), fence with vm_fence*(). Header-only. */
#ifndef VM_H
#define VM_H
#include <stdint.h>

#define PTE_V (1ul << 0)
#define PTE_R (1ul << 1)
#define PTE_W (1ul << 2)
#define PTE_X (1ul << 3)
#define PTE_U (1ul << 4)
#define PTE_G (1ul << 5)
#define PTE_A (1ul << 6)
#define PTE_D (1ul << 7)
#define PTE_RWX (PTE_R | PTE_W | PTE_X)
#define VM_PAGE 4096ul

#define MSTATUS_MPRV (1ul << 17)
#define MSTATUS_SUM (1ul << 18)
#define MSTATUS_MXR (1ul << 19)

#define CAUSE_FETCH_ACCESS 1
#define CAUSE_LOAD_ACCESS 5
#define CAUSE_STORE_ACCESS 7
#define CAUSE_FETCH_PAGE 12
#define CAUSE_LOAD_PAGE 13
#define CAUSE_STORE_PAGE 15

#if __riscv_xlen == 64
typedef uint64_t pte_t;
#define VM_VPN_BITS 9
#define VM_PTES 512
#define VM_SV39 8
#define VM_SV48 9
#define VM_SV57 10
#define SATP_MODE(m) ((unsigned long)(m) << 60)
#define SATP_ASID(a) ((unsigned long)(a) << 44)
#else
typedef uint32_t pte_t;
#define VM_VPN_BITS 10
#define VM_PTES 1024
#define VM_SV32 1
#define SATP_MODE(m) ((unsigned long)(m) << 31)
#define SATP_ASID(a) ((unsigned long)(a) << 22)
#endif

/* Page-table levels of a satp MODE. */
static inline int vm_levels(unsigned mode) {
#if __riscv_xlen == 64
    return mode == VM_SV57 ? 5 : mode == VM_SV48 ? 4 : 3;
#else
    (void)mode;
    return 2;
#endif
}

/* Bytes mapped by a leaf at `level` (0: 4 KiB; 1: 2 MiB, or 4 MiB on Sv32; 2: 1 GiB; ...). */
static inline unsigned long vm_level_size(int level) {
    return VM_PAGE << (level * VM_VPN_BITS);
}

/* VPN[level] of a virtual address. */
static inline unsigned vm_vpn(unsigned long va, int level) {
    return (va >> (12 + level * VM_VPN_BITS)) & (VM_PTES - 1);
}

static inline pte_t vm_leaf(unsigned long pa, unsigned long flags) {
    return (pte_t)(((pa >> 12) << 10) | flags);
}

static inline pte_t vm_pointer(const void *table) {
    return (pte_t)((((unsigned long)table >> 12) << 10) | PTE_V);
}

static inline unsigned long vm_satp(unsigned mode, unsigned asid, const void *root) {
    return SATP_MODE(mode) | SATP_ASID(asid) | ((unsigned long)root >> 12);
}

static inline void vm_fence(void) { __asm__ volatile("sfence.vma" ::: "memory"); }
static inline void vm_fence_va(unsigned long va) {
    __asm__ volatile("sfence.vma %0" :: "r"(va) : "memory");
}
static inline void vm_fence_asid(unsigned long asid) {
    __asm__ volatile("sfence.vma zero, %0" :: "r"(asid) : "memory");
}

/* Page-table pages for vm_slot/vm_map: `count` 4 KiB-aligned pages, `used` handed out. */
struct vm_pool {
    pte_t (*pages)[VM_PTES];
    unsigned used, count;
};

/* A zeroed page from the pool, or 0 when it is empty. */
static inline pte_t *vm_alloc(struct vm_pool *pool) {
    if (pool->used == pool->count) return 0;
    pte_t *t = pool->pages[pool->used++];
    for (int k = 0; k < VM_PTES; k++) t[k] = 0;
    return t;
}

/* The PTE for `va` at `level` in the tree at `root` (`levels` levels), making the tables on
 * the way from the pool; 0 if the pool is empty or a leaf is in the way. */
static inline pte_t *vm_slot(struct vm_pool *pool, pte_t *root, int levels, unsigned long va,
                             int level) {
    pte_t *t = root;
    for (int i = levels - 1; i > level; i--) {
        pte_t *e = &t[vm_vpn(va, i)];
        if (!(*e & PTE_V)) {
            pte_t *n = vm_alloc(pool);
            if (!n) return 0;
            *e = vm_pointer(n);
        } else if (*e & (PTE_R | PTE_X)) {
            return 0;
        }
        t = (pte_t *)(unsigned long)((*e >> 10) << 12);
    }
    return &t[vm_vpn(va, level)];
}

/* Map the `level` page at `va` to `pa` with `flags` (PTE_V added); 0 on success. */
static inline int vm_map(struct vm_pool *pool, pte_t *root, int levels, unsigned long va,
                         unsigned long pa, int level, unsigned long flags) {
    pte_t *e = vm_slot(pool, root, levels, va, level);
    if (!e) return -1;
    *e = vm_leaf(pa, flags | PTE_V);
    return 0;
}

#endif
