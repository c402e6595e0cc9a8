//! The hart's address translation: the page-table walk and the translated access paths (the TLB
//! and the schemes are `crate::mmu`).

use super::Hart;
use crate::arch::{cause, privilege, Exc};
use crate::mmu::*;
use crate::pmp::Access;

/// Why a translation failed: a page fault or an access fault (a PTE access PMP denies or
/// nothing answers), each of the original access's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Page,
    Access,
}

/// The last PTE of a successful walk.
struct Leaf {
    /// The physical address.
    pa: u64,
    pte: u64,
    pte_addr: u64,
    pte_bytes: u64,
    /// G if any PTE of the walk had it (a global non-leaf makes the mappings below global).
    global: u64,
    level: u32,
}

fn fault_exc(f: Fault, access: Access, va: u64) -> Exc {
    let cause = match (f, access) {
        (Fault::Page, Access::Exec) => cause::INSN_PAGE,
        (Fault::Page, Access::Read) => cause::LOAD_PAGE,
        (Fault::Page, Access::Write) => cause::STORE_PAGE,
        (Fault::Access, Access::Exec) => cause::INSN_ACCESS,
        (Fault::Access, Access::Read) => cause::LOAD_ACCESS,
        (Fault::Access, Access::Write) => cause::STORE_ACCESS,
    };
    Exc { cause, tval: va }
}

impl Hart {
    /// The paged scheme `satp` selects, `None` for Bare.
    #[inline]
    pub(crate) fn vm_scheme(&self) -> Option<Scheme> {
        let satp = self.csr.satp;
        if self.xlen == rvtrace_isa::Xlen::Rv32 {
            (satp >> 31 & 1 == 1).then_some(SV32)
        } else {
            match satp >> 60 {
                8 => Some(SV39),
                9 => Some(SV48),
                10 => Some(SV57),
                _ => None,
            }
        }
    }

    /// Whether fetches (`priv_` below M) and data accesses (effective privilege below M) are
    /// translated now.
    #[inline]
    pub(crate) fn translating(&self) -> (bool, bool) {
        if self.vm_scheme().is_none() {
            return (false, false);
        }
        (self.priv_ != privilege::M, self.data_priv() != privilege::M)
    }

    /// The current `satp.ASID`.
    fn asid(&self) -> u16 {
        crate::csr::satp_asid(self.xlen, self.csr.satp) as u16
    }

    /// `sfence.vma`: `va` is rs1's value and `asid` rs2's, `None` where the register is x0;
    /// the TLB entries it names are dropped.
    pub(crate) fn sfence_vma(&mut self, va: Option<u64>, asid: Option<u64>) {
        let mask = if self.xlen == rvtrace_isa::Xlen::Rv32 {
            0x1ff
        } else {
            0xffff
        };
        self.mmu
            .fence(va.map(|v| self.trunc(v)), asid.map(|a| (a & mask) as u16));
    }

    /// The physical pieces of a data access (`Read`: loads, LR, the read of an AMO; `Write`:
    /// stores, SC, AMOs) of `size` bytes at virtual address `va`, translated at the effective
    /// privilege: one piece `(va, pa, size)` (the second has length 0), or two when the access
    /// crosses into the next page
    /// (each page translated; a fault in the second has `tval` = the second page's first
    /// byte, the part of the access that faulted, as QEMU 7.2 reports it). Call only while data
    /// accesses are translated.
    pub(crate) fn translate_data(
        &mut self,
        va: u64,
        size: u64,
        access: Access,
    ) -> Result<[(u64, u64, u64); 2], Exc> {
        let p = self.data_priv();
        let pa = self.translate(va, access, p)?;
        let first = (0x1000 - (va & 0xfff)).min(size);
        if first == size {
            return Ok([(va, pa, size), (0, 0, 0)]);
        }
        let va2 = self.trunc(va.wrapping_add(first));
        let pa2 = self.translate(va2, access, p)?;
        Ok([(va, pa, first), (va2, pa2, size - first)])
    }

    /// Translate the instruction-fetch parcel at `va` at the current privilege.
    pub(crate) fn translate_fetch(&mut self, va: u64) -> Result<u64, Exc> {
        let p = self.priv_;
        self.translate(va, Access::Exec, p)
    }

    /// The translation of `va` for `access` at privilege `p` (below M): the TLB, else the walk.
    fn translate(&mut self, va: u64, access: Access, p: u8) -> Result<u64, Exc> {
        let Some(s) = self.vm_scheme() else {
            return Ok(va);
        };
        let asid = self.asid();
        let vpn = va >> PAGE_SHIFT;
        let idx = vpn as usize % TLB_ENTRIES;
        let e = match access {
            Access::Exec => self.mmu.itlb[idx],
            _ => self.mmu.dtlb[idx],
        };
        let hit = e.vpn == vpn
            && (e.asid == asid || e.bits as u64 & pte::G != 0)
            // A store to a page whose D bit is clear walks again to set it.
            && !(access == Access::Write && e.bits as u64 & pte::D == 0);
        let ev = &mut self.mmu.events;
        match access {
            Access::Exec => {
                ev.itlb_access += 1;
                ev.itlb_miss += !hit as u32;
            }
            Access::Read => {
                ev.dtlb_read += 1;
                ev.dtlb_read_miss += !hit as u32;
            }
            Access::Write => {
                ev.dtlb_write += 1;
                ev.dtlb_write_miss += !hit as u32;
            }
        }
        if hit {
            if !self.permits(e.bits as u64, access, p) {
                return Err(fault_exc(Fault::Page, access, va));
            }
            let pa = e.ppn << PAGE_SHIFT | (va & 0xfff);
            self.remember(va, pa, access);
            return Ok(pa);
        }
        let fault = |f| fault_exc(f, access, va);
        let leaf = self.walk(s, va, access, p).map_err(fault)?;
        let bits = self.update_ad(&leaf, access).map_err(fault)?;
        let pa = leaf.pa;
        let entry = Entry {
            vpn,
            ppn: pa >> PAGE_SHIFT,
            asid,
            bits: (bits & 0xff | leaf.global) as u8,
            level: leaf.level as u8,
            vpn_bits: s.vpn_bits as u8,
        };
        self.mmu.fill(access == Access::Exec, idx, entry);
        self.remember(va, pa, access);
        Ok(pa)
    }

    /// Keep a translated page among the recent ones of its kind (`Memo`) when it lies in RAM
    /// and its accesses need no PMP check: PMP allows the kind on all of RAM, or on this whole
    /// page (the first PMP entry that matches any byte of the page matches all of it and
    /// allows the access, so it is the entry that decides every access inside the page:
    /// privileged ISA, "Priority and Matching Logic"; OpenSBI's regions). A store's page has D
    /// set: it was just walked or hit with D.
    fn remember(&mut self, va: u64, pa: u64, access: Access) {
        let k = kind(access);
        let pa_page = pa & !0xfff;
        if self.bus.ram_offset(pa_page, 0x1000).is_none() {
            return;
        }
        let p = if access == Access::Exec {
            self.priv_
        } else {
            self.data_priv()
        };
        if self.mmu.unchecked[k]
            || self.csr.pmp.uniform(pa_page, pa_page + 0xfff, access, p) == Some(true)
        {
            self.mmu.set_memo(k, va & !0xfff, pa_page);
        }
    }

    /// Whether a leaf PTE with `bits` allows `access` at privilege `p` ("Virtual Address
    /// Translation Process" step 5; "Memory Privilege in mstatus Register": SUM lets S load
    /// and store, never fetch, on U pages; MXR lets loads read executable pages).
    fn permits(&self, bits: u64, access: Access, p: u8) -> bool {
        use crate::csr::mstatus::{MXR, SUM};
        let ms = self.csr.mstatus;
        let user_page = bits & pte::U != 0;
        let mode_ok = match p {
            privilege::U => user_page,
            _ => !user_page || (access != Access::Exec && ms & SUM != 0),
        };
        mode_ok
            && match access {
                Access::Exec => bits & pte::X != 0,
                Access::Read => bits & pte::R != 0 || (ms & MXR != 0 && bits & pte::X != 0),
                Access::Write => bits & pte::W != 0,
            }
    }

    /// The page-table walk ("Virtual Address Translation Process") up to the A/D step: the
    /// leaf, or the fault. PTEs are read from RAM only (a PTE address elsewhere is an access
    /// fault).
    fn walk(&self, s: Scheme, va: u64, access: Access, p: u8) -> Result<Leaf, Fault> {
        // Sv39/Sv48/Sv57: bits 63..va_bits must all equal bit va_bits - 1, else a page fault.
        if self.xlen == rvtrace_isa::Xlen::Rv64 {
            let top = (va as i64) >> (s.va_bits - 1);
            if top != 0 && top != -1 {
                return Err(Fault::Page);
            }
        }
        let rv32 = s.vpn_bits == 10;
        let ppn_bits = if rv32 { 22 } else { 44 };
        let ppn_mask = (1u64 << ppn_bits) - 1;
        let vpn_mask = (1u64 << s.vpn_bits) - 1;
        // Step 1: a = satp.PPN × PAGESIZE, i = LEVELS − 1.
        let mut a = (self.csr.satp & ppn_mask) << PAGE_SHIFT;
        let mut global = 0;
        for i in (0..s.levels).rev() {
            let vpn_i = (va >> (PAGE_SHIFT + i * s.vpn_bits)) & vpn_mask;
            let pte_addr = a + vpn_i * s.pte_bytes;
            // Step 2: the PTE access is checked by PMP as an S-mode load; a violation is an
            // access fault of the original access's kind. While PMP allows S-mode reads on
            // all of RAM (`Mmu::pte_reads`, recomputed at every PMP change) that one decision
            // stands for every PTE in RAM; others are checked one by one.
            let read = |limit| match s.pte_bytes {
                8 => self.bus.fast_load(pte_addr, 8, limit),
                _ => self.bus.fast_load(pte_addr, 4, limit),
            };
            let pte = match read(self.mmu.pte_reads) {
                Some(pte) => pte,
                None => {
                    if !self
                        .csr
                        .pmp
                        .check(pte_addr, s.pte_bytes, Access::Read, privilege::S)
                    {
                        return Err(Fault::Access);
                    }
                    read(self.bus.ram_size()).ok_or(Fault::Access)?
                }
            };
            // Step 3: invalid, reserved R/W/X (W without R), or reserved bits set: on RV64
            // bits 63..54 (N of Svnapot, PBMT of Svpbmt and the reserved field: this hart has
            // neither extension, as QEMU 7.2's default CPU).
            if pte & pte::V == 0
                || (pte & pte::R == 0 && pte & pte::W != 0)
                || (!rv32 && pte >> 54 != 0)
            {
                return Err(Fault::Page);
            }
            global |= pte & pte::G;
            let ppn = (pte >> 10) & ppn_mask;
            if pte & (pte::R | pte::X) == 0 {
                // Step 4: a pointer to the next level (none below level 0). D, A and U are
                // reserved in non-leaf PTEs ("For non-leaf PTEs, the D, A, and U bits are
                // reserved for future standard use").
                if i == 0 || pte & (pte::D | pte::A | pte::U) != 0 {
                    return Err(Fault::Page);
                }
                a = ppn << PAGE_SHIFT;
                continue;
            }
            // Step 5: permissions.
            if !self.permits(pte, access, p) {
                return Err(Fault::Page);
            }
            // Step 6: a misaligned superpage.
            let low = i * s.vpn_bits;
            if ppn & ((1u64 << low) - 1) != 0 {
                return Err(Fault::Page);
            }
            // Step 8: the physical address; a superpage takes the low VPNs from the address.
            let span = PAGE_SHIFT + low;
            return Ok(Leaf {
                pa: ((ppn >> low) << span) | (va & ((1u64 << span) - 1)),
                pte,
                pte_addr,
                pte_bytes: s.pte_bytes,
                global,
                level: i,
            });
        }
        Err(Fault::Page)
    }

    /// Step 7 of the walk, A and D. As QEMU 7.2 (probed with programs/src/vm.c): the hart sets
    /// A, and D for a store, itself (what Svadu specifies) instead of raising a page fault. The
    /// write is PMP-checked at S ("If the store to pte violates a PMA or PMP check, raise an
    /// access-fault exception corresponding to the original access type"); QEMU 7.2 does not
    /// check it. The leaf's bits as updated.
    fn update_ad(&mut self, leaf: &Leaf, access: Access) -> Result<u64, Fault> {
        let want = pte::A | if access == Access::Write { pte::D } else { 0 };
        if leaf.pte & want == want {
            return Ok(leaf.pte);
        }
        let pte = leaf.pte | want;
        let ok = self
            .csr
            .pmp
            .check(leaf.pte_addr, leaf.pte_bytes, Access::Write, privilege::S)
            && self
                .bus
                .fast_store(leaf.pte_addr, leaf.pte_bytes, pte, self.bus.ram_size());
        ok.then_some(pte).ok_or(Fault::Access)
    }

    /// The physical address of the fetch at `va` as the current privilege would see it, for a
    /// look that changes nothing (no fault, no A/D update, no TLB change): `va` itself when
    /// fetches are not translated, `None` when the fetch would fault.
    pub(crate) fn peek_fetch_address(&self, va: u64) -> Option<u64> {
        if !self.translating().0 {
            return Some(va);
        }
        let s = self.vm_scheme()?;
        let leaf = self.walk(s, va, Access::Exec, self.priv_).ok()?;
        Some(leaf.pa)
    }
}
