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
//! `*_checked` paths, but for pre-decoded blocks, which run from pages recent translated
//! fetches found and load and store in pages recent loads and stores found (`Memo`,
//! `Mmu::in_blocks`). Addresses seen by the observer, the LR reservation and the trace are
//! virtual (the `Retired` pc, `MemAccess::addr`); only the bus sees physical addresses.

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
    pub(crate) levels: u32,
    /// Bytes per PTE (`PTESIZE`).
    pub(crate) pte_bytes: u64,
    /// VPN bits per level.
    pub(crate) vpn_bits: u32,
    /// Virtual-address bits (the upper bits must repeat the top one on RV64).
    pub(crate) va_bits: u32,
}

pub(crate) const SV32: Scheme = Scheme {
    levels: 2,
    pte_bytes: 4,
    vpn_bits: 10,
    va_bits: 32,
};
pub(crate) const SV39: Scheme = Scheme {
    levels: 3,
    pte_bytes: 8,
    vpn_bits: 9,
    va_bits: 39,
};
pub(crate) const SV48: Scheme = Scheme {
    levels: 4,
    va_bits: 48,
    ..SV39
};
pub(crate) const SV57: Scheme = Scheme {
    levels: 5,
    va_bits: 57,
    ..SV39
};

pub(crate) const PAGE_SHIFT: u32 = 12;
/// TLB entries (each of the instruction and the data TLB; direct-mapped by VPN): as many as a
/// kernel's working set of pages needs (docs/perf/linux-boot-profile.md, section 11: on the
/// Linux boot 64 entries missed on half of the lookups the recent pages did not answer).
pub const TLB_ENTRIES: usize = 512;

/// One cached translation of a 4 KiB virtual page (a superpage is cached page by page; the
/// entry keeps its level so that `sfence.vma` with an address drops the whole superpage).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    /// Virtual page number (`va >> 12`); `u64::MAX`: empty.
    pub(crate) vpn: u64,
    /// Physical page number of this 4 KiB page.
    pub(crate) ppn: u64,
    pub(crate) asid: u16,
    /// The leaf PTE's low bits (R W X U G A D); G also when a non-leaf PTE of the walk had it.
    pub(crate) bits: u8,
    /// Level of the leaf (0: 4 KiB page).
    pub(crate) level: u8,
    /// VPN bits per level of the scheme that made it (10 for Sv32, else 9).
    pub(crate) vpn_bits: u8,
}

pub(crate) const EMPTY: Entry = Entry {
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

/// Pages translated recently for each kind of access (fetch, load, store) whose accesses need
/// no PMP check (PMP allows the kind on all of RAM, as for the hart's untranslated fast path,
/// or on the whole page):
/// a hit there costs a compare (the cost of translation, crates/sim/README.md). Each kind keeps
/// [`MEMO_ENTRIES`] pages, direct-mapped by VPN. They are a subset of the TLB, so that what a
/// program sees (a stale translation after a page-table change without `sfence.vma`, the TLB
/// events) is what the TLB alone gives: an entry is made only from a TLB hit or fill for its
/// kind (the permission checked then), dropped when the TLB slot of its page is refilled, and
/// all are dropped at every change of privilege, of the `mstatus` bits translation depends on
/// ([`MEMO_MSTATUS`]), `satp` or PMP
/// (`Hart::pmp_refresh`) and at every `sfence.vma`, where the permission or the TLB change.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memo {
    /// The virtual page's first address (1: none).
    pub(crate) va_page: u64,
    /// The physical page's first address (in RAM).
    pub(crate) pa_page: u64,
}

pub(crate) const NO_MEMO: Memo = Memo {
    va_page: 1,
    pa_page: 0,
};

/// Pages remembered per kind of access (a power of two, a multiple of 64, at most
/// `TLB_ENTRIES`), indexed by the low bits of the TLB's index. Emptying them at a change of
/// privilege (a system call's trap and return) visits only the slots filled since the last
/// emptying (`Mmu::filled`), so their number costs nothing there.
pub(crate) const MEMO_ENTRIES: usize = 256;

/// The `mstatus` bits translations and their permissions depend on (privileged ISA, "Memory
/// Privilege in mstatus Register": MPRV, MPP, SUM, MXR): the recent pages stay across changes
/// of the others (a kernel sets and clears `sstatus.SIE` around every lock it takes).
pub(crate) const MEMO_MSTATUS: u64 = {
    use crate::csr::mstatus::{MPP, MPRV, MXR, SUM};
    MPRV | MPP | SUM | MXR
};

/// The memo slot of the page holding `va`.
#[inline(always)]
pub(crate) fn memo_slot(va: u64) -> usize {
    (va >> PAGE_SHIFT) as usize & (MEMO_ENTRIES - 1)
}

/// What the recent pages' translations and PMP answers depend on besides the TLB: the
/// privilege, `mstatus` (MPRV, MPP, SUM, MXR), `satp`, the PMP registers and the armed
/// triggers. The pages are kept while it stays the same (`Hart::pmp_refresh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemoKey {
    pub(crate) priv_: u8,
    /// `mstatus` & [`MEMO_MSTATUS`].
    pub(crate) mstatus: u64,
    pub(crate) satp: u64,
    pub(crate) pmp: ([u8; crate::pmp::ENTRIES], [u64; crate::pmp::ENTRIES]),
    pub(crate) armed: [u8; 3],
}

/// The hart's translation state: the instruction and data TLBs.
#[derive(Clone, Debug)]
pub struct Mmu {
    pub(crate) itlb: Box<[Entry; TLB_ENTRIES]>,
    pub(crate) dtlb: Box<[Entry; TLB_ENTRIES]>,
    pub(crate) events: TlbEvents,
    /// Fetch, load, store: each kind's recent pages by [`memo_slot`].
    pub(crate) memo: [[Memo; MEMO_ENTRIES]; 3],
    /// Bit `i` of each kind: `memo[kind][i]` was filled since the memos were last emptied.
    filled: [[u64; MEMO_ENTRIES / 64]; 3],
    /// Whether PMP lets each kind through on all of RAM unchecked (set by `pmp_refresh`).
    pub(crate) unchecked: [bool; 3],
    /// Bytes of RAM (from its base) whose page-table entries a walk reads with no PMP check:
    /// all of RAM while PMP allows S-mode reads on all of it, else none (set by `pmp_refresh`).
    pub(crate) pte_reads: u64,
    /// Whether pre-decoded blocks may use the recently translated pages of each kind (fetch: run
    /// from them; load, store: access them inline): the kind is translated and no trigger
    /// watches it (set by `pmp_refresh`; the pages themselves need no PMP check: `Memo`).
    pub(crate) in_blocks: [bool; 3],
    /// The state the recent pages were made under (`None`: none made yet).
    pub(crate) key: Option<MemoKey>,
    /// Instruction and data TLB: a bit ([`super_bit`]) for the superpage of each entry of a
    /// leaf above level 0 made since the TLB was last scanned, so that `sfence.vma` of an
    /// address outside them looks at one slot per TLB (a superset: entries that left keep
    /// their bit until a scan).
    pub(crate) supers: [u64; 2],
}

/// The bit of the superpage holding virtual page `vpn` for a leaf at `level` (> 0) of a
/// scheme with `vpn_bits` per level, in [`Mmu::supers`].
#[inline]
fn super_bit(vpn: u64, level: u8, vpn_bits: u8) -> u64 {
    let span = u32::from(level) * u32::from(vpn_bits);
    let key = (vpn >> span) << 4 | u64::from(level) << 1 | u64::from(vpn_bits == 10);
    1 << (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58)
}

impl Default for Mmu {
    fn default() -> Mmu {
        Mmu {
            itlb: Box::new([EMPTY; TLB_ENTRIES]),
            dtlb: Box::new([EMPTY; TLB_ENTRIES]),
            events: TlbEvents::default(),
            memo: [[NO_MEMO; MEMO_ENTRIES]; 3],
            filled: [[0; MEMO_ENTRIES / 64]; 3],
            unchecked: [false; 3],
            pte_reads: 0,
            in_blocks: [false; 3],
            key: None,
            supers: [0; 2],
        }
    }
}

pub(crate) fn kind(access: Access) -> usize {
    match access {
        Access::Exec => 0,
        Access::Read => 1,
        Access::Write => 2,
    }
}

impl Mmu {
    /// Forget the recently translated pages.
    pub(crate) fn forget_pages(&mut self) {
        for (memo, filled) in self.memo.iter_mut().zip(&mut self.filled) {
            for (w, bits) in filled.iter_mut().enumerate() {
                for i in crate::ones(std::mem::take(bits)) {
                    memo[w * 64 + i] = NO_MEMO;
                }
            }
        }
    }

    /// Remember that `va_page` of kind `k` translates to `pa_page` (`Hart::remember` decides
    /// whether it may).
    pub(crate) fn set_memo(&mut self, k: usize, va_page: u64, pa_page: u64) {
        let i = memo_slot(va_page);
        self.memo[k][i] = Memo { va_page, pa_page };
        self.filled[k][i / 64] |= 1 << (i % 64);
    }

    /// A TLB slot (of the instruction TLB for fetches, else the data TLB) that held `old` is
    /// refilled or emptied: its page leaves the memos of the kinds that TLB serves.
    pub(crate) fn refill(&mut self, old: &Entry, fetch: bool) {
        if old.vpn == u64::MAX {
            return;
        }
        let va_page = old.vpn << PAGE_SHIFT;
        let j = memo_slot(va_page);
        let kinds: &[usize] = if fetch { &[0] } else { &[1, 2] };
        for &k in kinds {
            if self.memo[k][j].va_page == va_page {
                self.memo[k][j] = NO_MEMO;
            }
        }
    }

    /// The memo entry that would hold `va` for kind `k`.
    #[inline(always)]
    pub(crate) fn memo_of(&self, va: u64, k: usize) -> Memo {
        self.memo[k][memo_slot(va)]
    }

    /// The RAM offset of an access of `size` bytes at `va` of kind `k` when it lies in a page
    /// recently translated for that kind, as [`Mmu::recent`] without counting the TLB event
    /// (a memo page is in RAM: `Hart::remember`).
    #[inline(always)]
    pub(crate) fn memo_offset(&self, va: u64, size: u64, k: usize) -> Option<usize> {
        let m = self.memo_of(va, k);
        let off = va.wrapping_sub(m.va_page);
        if off > 0x1000 - size {
            return None;
        }
        Some(
            m.pa_page
                .wrapping_sub(crate::bus::RAM_BASE)
                .wrapping_add(off) as usize,
        )
    }

    /// The physical address of an access of `size` bytes at `va` of kind `k` (0 fetch, 1 load,
    /// 2 store) when it lies in a page recently translated for that kind (one TLB lookup, a
    /// hit); `None` otherwise.
    #[inline]
    pub(crate) fn recent(&mut self, va: u64, size: u64, k: usize) -> Option<u64> {
        let m = self.memo_of(va, k);
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

    /// Put `entry` in slot `idx` of the instruction TLB (`fetch`) or the data TLB; the page of
    /// the entry it replaces leaves the memos.
    pub(crate) fn fill(&mut self, fetch: bool, idx: usize, entry: Entry) {
        if entry.level > 0 {
            self.supers[!fetch as usize] |= super_bit(entry.vpn, entry.level, entry.vpn_bits);
        }
        let tlb = if fetch {
            &mut self.itlb
        } else {
            &mut self.dtlb
        };
        let old = std::mem::replace(&mut tlb[idx], entry);
        self.refill(&old, fetch);
    }

    /// `sfence.vma` ("Supervisor Memory-Management Fence Instruction"): `va` = rs1's value
    /// (`None`: rs1 is x0, every address), `asid` = rs2's (`None`: rs2 is x0, every address
    /// space). The ASID forms keep global entries. The recent pages (`Memo`) of the entries it
    /// drops go with them; the others stay, as their entries do.
    pub fn fence(&mut self, va: Option<u64>, asid: Option<u16>) {
        if va.is_none() && asid.is_none() {
            *self.itlb = [EMPTY; TLB_ENTRIES];
            *self.dtlb = [EMPTY; TLB_ENTRIES];
            self.supers = [0; 2];
            self.forget_pages();
            return;
        }
        for t in 0..2 {
            // An address outside every superpage entry's can be in one slot only: that of its
            // 4 KiB page (Linux fences page by page).
            let slots = match va {
                Some(va) if !self.in_supers(t, va >> PAGE_SHIFT) => {
                    let i = (va >> PAGE_SHIFT) as usize % TLB_ENTRIES;
                    i..i + 1
                }
                _ => {
                    // A scan: the bits are made again from the entries that stay.
                    self.supers[t] = 0;
                    0..TLB_ENTRIES
                }
            };
            for n in slots {
                let fetch = t == 0;
                let e = if fetch {
                    &mut self.itlb[n]
                } else {
                    &mut self.dtlb[n]
                };
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
                    let old = std::mem::replace(e, EMPTY);
                    self.refill(&old, fetch);
                } else if e.level > 0 {
                    self.supers[t] |= super_bit(e.vpn, e.level, e.vpn_bits);
                }
            }
        }
    }

    /// Whether a superpage entry of TLB `t` (0 instruction, 1 data) may hold virtual page `vpn`.
    fn in_supers(&self, t: usize, vpn: u64) -> bool {
        // Levels 1..=4 (Sv57's top) of both VPN widths (Sv32's 10 bits, 9 for the others).
        let mut bits = 0;
        for level in 1..=4 {
            bits |= super_bit(vpn, level, 9) | super_bit(vpn, level, 10);
        }
        self.supers[t] & bits != 0
    }
}
