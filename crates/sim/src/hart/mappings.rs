//! The supervisor's executable pages as the current page table maps them, for a snapshot of
//! the code a decoder needs at the addresses it ran (`rvtrace run --code-snapshot`): a kernel
//! runs at virtual addresses, and its code is in RAM at others.

use super::Hart;
use crate::mmu::{pte, PAGE_SHIFT};

/// One leaf of the page table: `len` bytes at virtual address `va` are RAM at `pa`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// The first virtual address.
    pub va: u64,
    /// The physical address it maps to.
    pub pa: u64,
    /// Bytes (the page or superpage size).
    pub len: u64,
}

/// Most leaves listed: a table that maps more (a huge linear map of small pages) is cut there.
const MAX_MAPPINGS: usize = 1 << 20;

impl Hart {
    /// The leaves of the page table `satp` points to that are executable by the supervisor
    /// (X set, U clear), in virtual-address order; empty when `satp` is Bare. PTEs are valid
    /// by the walk's rules ("Virtual Address Translation Process" steps 3, 4 and 6: V set, no W
    /// without R, no reserved bits, aligned superpages; a non-leaf with D, A or U is skipped);
    /// tables outside RAM are skipped. Virtual addresses are sign-extended from the scheme's
    /// top bit, as the hart fetches them.
    pub fn supervisor_code_mappings(&self) -> Vec<Mapping> {
        let Some(s) = self.vm_scheme() else {
            return Vec::new();
        };
        let rv32 = s.vpn_bits == 10;
        let ppn_mask = (1u64 << if rv32 { 22 } else { 44 }) - 1;
        let root = (self.csr.satp & ppn_mask) << PAGE_SHIFT;
        let mut out = Vec::new();
        // (table address, level, virtual address bits above this level)
        let mut stack = vec![(root, s.levels - 1, 0u64)];
        while let Some((table, level, base)) = stack.pop() {
            for i in 0..1u64 << s.vpn_bits {
                let Some(e) =
                    self.bus
                        .fast_load(table + i * s.pte_bytes, s.pte_bytes, self.bus.ram_size())
                else {
                    break;
                };
                if e & pte::V == 0
                    || (e & pte::R == 0 && e & pte::W != 0)
                    || (!rv32 && e >> 54 != 0)
                {
                    continue;
                }
                let shift = PAGE_SHIFT + level * s.vpn_bits;
                let va = base | i << shift;
                let ppn = (e >> 10) & ppn_mask;
                if e & (pte::R | pte::X) == 0 {
                    if level > 0 && e & (pte::D | pte::A | pte::U) == 0 {
                        stack.push((ppn << PAGE_SHIFT, level - 1, va));
                    }
                    continue;
                }
                let low = level * s.vpn_bits;
                if e & pte::X == 0 || e & pte::U != 0 || ppn & ((1u64 << low) - 1) != 0 {
                    continue;
                }
                let va = if rv32 {
                    va
                } else {
                    ((va << (64 - s.va_bits)) as i64 >> (64 - s.va_bits)) as u64
                };
                out.push(Mapping {
                    va,
                    pa: ppn << PAGE_SHIFT,
                    len: 1 << shift,
                });
                if out.len() >= MAX_MAPPINGS {
                    return out;
                }
            }
        }
        out.sort_unstable_by_key(|m| m.va);
        out
    }
}
