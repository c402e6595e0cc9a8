//! Address translation: the `satp` modes Bare, Sv32 (RV32), Sv39, Sv48 and Sv57 (RV64), the
//! page-table walk, and the TLB (privileged ISA, "Supervisor-Level ISA": "Supervisor Address
//! Translation and Protection (satp) Register", "Sv32: Page-Based 32-bit Virtual-Memory
//! Systems" with its "Virtual Address Translation Process", "Sv39", "Sv48", "Sv57",
//! "Supervisor Memory-Management Fence Instruction"; machine-level ISA, "Memory Privilege in
//! mstatus Register").
//!
//! Translation applies to fetches below M and to loads and stores whose effective privilege
//! (`mstatus.MPRV`/`MPP` in M) is below M, with `satp.MODE` not Bare. The hart's fast paths
//! (`Bus::open`) are closed while it applies, so every such access comes here through the cold
//! `*_checked` paths. Addresses seen by the observer, the LR reservation and the trace are
//! virtual (the `Retired` pc, `MemAccess::addr`); only the bus sees physical addresses.

use crate::hart::{cause, privilege, Exc, Hart};
use crate::pmp::Access;

/// Page-table entry bits (privileged ISA, "Sv32", figure "Sv32 page table entry").
#[allow(missing_docs)]
pub mod pte {
    pub const V: u64 = 1 << 0;
    pub const R: u64 = 1 << 1;
    pub const W: u64 = 1 << 2;
    pub const X: u64 = 1 << 3;
    pub const U: u64 = 1 << 4;
    pub const G: u64 = 1 << 5;
    pub const A: u64 = 1 << 6;
    pub const D: u64 = 1 << 7;
}

/// A paged virtual-memory scheme (the `satp.MODE` values other than Bare).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scheme {
    /// Page-table levels.
    levels: u32,
    /// Bytes per PTE (`PTESIZE`).
    pte_bytes: u64,
    /// VPN bits per level.
    vpn_bits: u32,
    /// Virtual-address bits (the upper bits must repeat the top one on RV64).
    va_bits: u32,
}

const SV32: Scheme = Scheme {
    levels: 2,
    pte_bytes: 4,
    vpn_bits: 10,
    va_bits: 32,
};
const SV39: Scheme = Scheme {
    levels: 3,
    pte_bytes: 8,
    vpn_bits: 9,
    va_bits: 39,
};
const SV48: Scheme = Scheme {
    levels: 4,
    va_bits: 48,
    ..SV39
};
const SV57: Scheme = Scheme {
    levels: 5,
    va_bits: 57,
    ..SV39
};

const PAGE_SHIFT: u32 = 12;
/// TLB entries (each of the instruction and the data TLB; direct-mapped by VPN).
pub const TLB_ENTRIES: usize = 64;

/// One cached translation of a 4 KiB virtual page (a superpage is cached page by page; the
/// entry keeps its level so that `sfence.vma` with an address drops the whole superpage).
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Virtual page number (`va >> 12`); `u64::MAX`: empty.
    vpn: u64,
    /// Physical page number of this 4 KiB page.
    ppn: u64,
    asid: u16,
    /// The leaf PTE's low bits (R W X U G A D); G also when a non-leaf PTE of the walk had it.
    bits: u8,
    /// Level of the leaf (0: 4 KiB page).
    level: u8,
    /// VPN bits per level of the scheme that made it (10 for Sv32, else 9).
    vpn_bits: u8,
}

const EMPTY: Entry = Entry {
    vpn: u64::MAX,
    ppn: 0,
    asid: 0,
    bits: 0,
    level: 0,
    vpn_bits: 9,
};

/// TLB lookups since the instrumented loop last took them ([`Mmu::take_events`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlbEvents {
    /// Instruction-TLB lookups (one per translated fetch parcel page).
    pub itlb_access: u32,
    /// Instruction-TLB misses (each a page-table walk).
    pub itlb_miss: u32,
    /// Data-TLB lookups for loads (and LR, the read of an AMO).
    pub dtlb_read: u32,
    /// Data-TLB load misses.
    pub dtlb_read_miss: u32,
    /// Data-TLB lookups for stores (and SC, the write of an AMO).
    pub dtlb_write: u32,
    /// Data-TLB store misses (a store to a cached page whose D bit is clear walks again and
    /// counts as a miss).
    pub dtlb_write_miss: u32,
}

/// The last page translated for each kind of access (fetch, load, store) whose accesses need
/// no PMP check (PMP allows the kind on all of RAM, as for the hart's untranslated fast path):
/// a hit there costs a compare (the cost of translation, crates/sim/README.md). Dropped at
/// every change of privilege, `mstatus`, `sstatus`, `satp` or PMP (`Hart::pmp_refresh`) and at
/// every `sfence.vma`, so it holds what the TLB holds.
#[derive(Clone, Copy, Debug)]
struct Memo {
    /// The virtual page's first address (1: none).
    va_page: u64,
    /// The physical page's first address (in RAM).
    pa_page: u64,
}

const NO_MEMO: Memo = Memo {
    va_page: 1,
    pa_page: 0,
};

/// The hart's translation state: the instruction and data TLBs.
#[derive(Clone, Debug)]
pub struct Mmu {
    itlb: Box<[Entry; TLB_ENTRIES]>,
    dtlb: Box<[Entry; TLB_ENTRIES]>,
    events: TlbEvents,
    /// Fetch, load, store.
    memo: [Memo; 3],
    /// Whether PMP lets each kind through on all of RAM unchecked (set by `pmp_refresh`).
    pub(crate) unchecked: [bool; 3],
}

impl Default for Mmu {
    fn default() -> Mmu {
        Mmu {
            itlb: Box::new([EMPTY; TLB_ENTRIES]),
            dtlb: Box::new([EMPTY; TLB_ENTRIES]),
            events: TlbEvents::default(),
            memo: [NO_MEMO; 3],
            unchecked: [false; 3],
        }
    }
}

fn kind(access: Access) -> usize {
    match access {
        Access::Exec => 0,
        Access::Read => 1,
        Access::Write => 2,
    }
}

impl Mmu {
    /// Forget the last translated pages.
    pub(crate) fn forget_pages(&mut self) {
        self.memo = [NO_MEMO; 3];
    }

    /// The physical address of an access of `size` bytes at `va` of kind `k` (0 fetch, 1 load,
    /// 2 store) when it lies in the last page translated for that kind (one TLB lookup, a
    /// hit); `None` otherwise.
    #[inline]
    pub(crate) fn recent(&mut self, va: u64, size: u64, k: usize) -> Option<u64> {
        let m = self.memo[k];
        let off = va.wrapping_sub(m.va_page);
        if off >= 0x1000 || off + size > 0x1000 {
            return None;
        }
        match k {
            0 => self.events.itlb_access += 1,
            1 => self.events.dtlb_read += 1,
            _ => self.events.dtlb_write += 1,
        }
        Some(m.pa_page + off)
    }

    /// The lookups counted since the last call, which clears them.
    pub fn take_events(&mut self) -> TlbEvents {
        std::mem::take(&mut self.events)
    }

    /// `sfence.vma` ("Supervisor Memory-Management Fence Instruction"): `va` = rs1's value
    /// (`None`: rs1 is x0, every address), `asid` = rs2's (`None`: rs2 is x0, every address
    /// space). The ASID forms keep global entries.
    pub fn fence(&mut self, va: Option<u64>, asid: Option<u16>) {
        for e in self.itlb.iter_mut().chain(self.dtlb.iter_mut()) {
            if e.vpn == u64::MAX {
                continue;
            }
            let global = e.bits as u64 & pte::G != 0;
            let asid_hit = match asid {
                None => true,
                Some(a) => !global && e.asid == a,
            };
            // Any address in the leaf's superpage names it.
            let va_hit = match va {
                None => true,
                Some(va) => {
                    let span = u32::from(e.level) * u32::from(e.vpn_bits);
                    ((va >> PAGE_SHIFT) ^ e.vpn) >> span == 0
                }
            };
            if asid_hit && va_hit {
                *e = EMPTY;
            }
        }
        self.forget_pages();
    }
}

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
        match access {
            Access::Exec => self.mmu.itlb[idx] = entry,
            _ => self.mmu.dtlb[idx] = entry,
        }
        self.remember(va, pa, access);
        Ok(pa)
    }

    /// Keep a translated page as the last one of its kind when its accesses need no PMP check
    /// and it lies in RAM (a store's page has D set: it was just walked or hit with D).
    fn remember(&mut self, va: u64, pa: u64, access: Access) {
        let k = kind(access);
        let pa_page = pa & !0xfff;
        if self.mmu.unchecked[k] && self.bus.ram_offset(pa_page, 0x1000).is_some() {
            self.mmu.memo[k] = Memo {
                va_page: va & !0xfff,
                pa_page,
            };
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
            // access fault of the original access's kind.
            if !self
                .csr
                .pmp
                .check(pte_addr, s.pte_bytes, Access::Read, privilege::S)
            {
                return Err(Fault::Access);
            }
            let pte = self
                .bus
                .fast_load(pte_addr, s.pte_bytes, self.bus.ram_size())
                .ok_or(Fault::Access)?;
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
