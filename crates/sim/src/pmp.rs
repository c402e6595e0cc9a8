//! Physical Memory Protection (privileged ISA, "Physical Memory Protection"): the 16 entries
//! of QEMU 7.2's `virt` hart, their CSR write rules and the access check. One place for the
//! rules: the hart's loads, stores, AMOs and fetches call [`Pmp::check`], and so will a page
//! table walker (its PTE reads are checked as S-mode loads).
//!
//! Where QEMU 7.2 and the spec leave room, the registers behave as QEMU 7.2's (probed with
//! `programs/src/pmp.c`): granularity G = 0 (NA4 exists, `pmpaddr` reads back what was
//! written whatever A is), all `pmpaddr` bits are kept (on RV64 also bits 63:54, which the
//! spec makes read-only zero), all `pmpcfg` bits are kept (also the reserved bits 6:5) and
//! R = 0, W = 1 (reserved) is kept and means write-only.

/// Number of PMP entries (QEMU `virt` 7.2 and 10).
pub const ENTRIES: usize = 16;

/// `pmpcfg` fields (privileged ISA, "PMP Configuration Registers").
pub mod cfg {
    /// Read permission.
    pub const R: u8 = 0x01;
    /// Write permission.
    pub const W: u8 = 0x02;
    /// Execute permission.
    pub const X: u8 = 0x04;
    /// Address-matching mode field.
    pub const A: u8 = 0x18;
    /// A = OFF: null region.
    pub const OFF: u8 = 0x00;
    /// A = TOR: top of range, from the previous entry's address.
    pub const TOR: u8 = 0x08;
    /// A = NA4: naturally aligned four-byte region.
    pub const NA4: u8 = 0x10;
    /// A = NAPOT: naturally aligned power-of-two region, 8 bytes or more.
    pub const NAPOT: u8 = 0x18;
    /// Lock: the entry applies to M-mode too and its registers ignore writes.
    pub const L: u8 = 0x80;
}

/// The kind of an access, as the permission bit that allows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A load (and the read of an AMO, LR).
    Read,
    /// A store (and the write of an AMO, SC).
    Write,
    /// An instruction fetch.
    Exec,
}

impl Access {
    /// The `pmpcfg` bit that allows this access.
    pub fn bit(self) -> u8 {
        match self {
            Access::Read => cfg::R,
            Access::Write => cfg::W,
            Access::Exec => cfg::X,
        }
    }
}

/// An active entry as an inclusive byte range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Rule {
    lo: u64,
    hi: u64,
    cfg: u8,
}

/// The PMP registers and the address ranges they decode to.
#[derive(Clone, Debug)]
pub struct Pmp {
    cfg: [u8; ENTRIES],
    addr: [u64; ENTRIES],
    /// The entries whose A is not OFF and whose range is not empty, in priority order.
    rules: [Rule; ENTRIES],
    n_rules: usize,
    /// `pmpaddr` width: XLEN (QEMU 7.2 keeps every bit).
    addr_mask: u64,
}

impl Pmp {
    /// The registers as written (`pmpcfg` bytes, `pmpaddr`): equal registers check alike.
    pub(crate) fn registers(&self) -> ([u8; ENTRIES], [u64; ENTRIES]) {
        (self.cfg, self.addr)
    }

    /// All entries OFF, addresses zero (reset). `rv32`: `pmpaddr` registers are 32 bits.
    pub fn new(rv32: bool) -> Pmp {
        Pmp {
            cfg: [0; ENTRIES],
            addr: [0; ENTRIES],
            rules: [Rule::default(); ENTRIES],
            n_rules: 0,
            addr_mask: if rv32 { 0xffff_ffff } else { u64::MAX },
        }
    }

    /// `pmpNcfg` of entry `i` (0 beyond the implemented entries).
    pub fn cfg(&self, i: usize) -> u8 {
        self.cfg.get(i).copied().unwrap_or(0)
    }

    /// `pmpaddrN` of entry `i` (0 beyond the implemented entries).
    pub fn addr(&self, i: usize) -> u64 {
        self.addr.get(i).copied().unwrap_or(0)
    }

    /// Whether entry `i` is locked.
    fn locked(&self, i: usize) -> bool {
        self.cfg(i) & cfg::L != 0
    }

    /// Write `pmpNcfg` of entry `i`; ignored while the entry is locked ("Locking and Privilege
    /// Mode": writes to a locked `pmpcfg` are ignored until reset). Every bit is kept, as
    /// QEMU 7.2 does (the reserved bits 6:5 and the reserved R = 0, W = 1 included).
    pub fn write_cfg(&mut self, i: usize, v: u8) {
        if i < ENTRIES && !self.locked(i) {
            self.cfg[i] = v;
            self.decode();
        }
    }

    /// Write `pmpaddrN` of entry `i`; ignored while the entry is locked, and while entry
    /// `i + 1` is locked with A = TOR (it uses this register as its bottom).
    pub fn write_addr(&mut self, i: usize, v: u64) {
        if i >= ENTRIES || self.locked(i) {
            return;
        }
        if self.locked(i + 1) && self.cfg(i + 1) & cfg::A == cfg::TOR {
            return;
        }
        self.addr[i] = v & self.addr_mask;
        self.decode();
    }

    /// The byte range entry `i` matches, inclusive; `None` when it matches nothing ("Address
    /// Matching"). `pmpaddr` holds address bits XLEN+1..2 (RV32: 33..2; RV64: as stored), so
    /// ranges are computed wide and clipped to 64 bits.
    fn range(&self, i: usize) -> Option<(u64, u64)> {
        let a = u128::from(self.addr[i]);
        let (lo, hi) = match self.cfg[i] & cfg::A {
            cfg::TOR => {
                // From pmpaddr[i-1] (0 for entry 0) up to but not including pmpaddr[i]; empty
                // when the bottom is not below the top.
                let bottom = if i == 0 {
                    0
                } else {
                    u128::from(self.addr[i - 1])
                };
                if bottom >= a {
                    return None;
                }
                (bottom << 2, (a << 2) - 1)
            }
            cfg::NA4 => (a << 2, (a << 2) + 3),
            cfg::NAPOT => {
                // The trailing ones of pmpaddr give the size: y...y0 is 8 bytes, y...y01 16.
                let x = (a << 2) | 3;
                (x & (x + 1), x | (x + 1))
            }
            _ => return None,
        };
        let lo = u64::try_from(lo).ok()?;
        Some((lo, u64::try_from(hi).unwrap_or(u64::MAX)))
    }

    fn decode(&mut self) {
        self.n_rules = 0;
        for i in 0..ENTRIES {
            if let Some((lo, hi)) = self.range(i) {
                self.rules[self.n_rules] = Rule {
                    lo,
                    hi,
                    cfg: self.cfg[i],
                };
                self.n_rules += 1;
            }
        }
    }

    /// Whether an access of `size` bytes at `addr` of kind `access` at privilege `priv_`
    /// (0 U, 1 S, 3 M; the effective privilege for loads and stores) is allowed ("Priority and
    /// Matching Logic"): the lowest-numbered entry that matches any byte decides; it must
    /// match every byte (else the access fails whatever the bits); its R/W/X decide for S and
    /// U, and for M only when it is locked. With no match, M succeeds and S/U fail (entries
    /// are implemented). An access that wraps past the top of the address space fails.
    pub fn check(&self, addr: u64, size: u64, access: Access, priv_: u8) -> bool {
        let Some(last) = addr.checked_add(size.max(1) - 1) else {
            return false;
        };
        for r in &self.rules[..self.n_rules] {
            if addr > r.hi || last < r.lo {
                continue;
            }
            if addr < r.lo || last > r.hi {
                return false;
            }
            return Self::allows(r.cfg, access, priv_);
        }
        priv_ == crate::arch::privilege::M
    }

    /// What a matching entry with configuration `c` decides ("Locking and Privilege Mode").
    #[inline]
    fn allows(c: u8, access: Access, priv_: u8) -> bool {
        (priv_ == crate::arch::privilege::M && c & cfg::L == 0) || c & access.bit() != 0
    }

    /// The decision for every access of kind `access` at `priv_` that lies inside
    /// `[lo, hi]` (inclusive), if it is the same for all of them: the first entry that
    /// overlaps the range contains it whole, or no entry overlaps it. `None` when accesses
    /// there must be checked one by one. The hart's fast path: while RAM is uniformly allowed
    /// its accesses skip [`Pmp::check`].
    pub fn uniform(&self, lo: u64, hi: u64, access: Access, priv_: u8) -> Option<bool> {
        for r in &self.rules[..self.n_rules] {
            if lo > r.hi || hi < r.lo {
                continue;
            }
            if lo < r.lo || hi > r.hi {
                return None;
            }
            return Some(Self::allows(r.cfg, access, priv_));
        }
        Some(priv_ == crate::arch::privilege::M)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::privilege::{M, S, U};
    use Access::*;

    fn napot(base: u64, size: u64) -> u64 {
        (base >> 2) | ((size >> 3) - 1)
    }

    /// "Address Matching": NA4, NAPOT sizes from pmpaddr's trailing ones, TOR from the
    /// previous entry (entry 0 from 0), and a TOR whose bottom is not below its top matches
    /// nothing.
    #[test]
    fn address_matching() {
        let mut p = Pmp::new(false);
        p.write_addr(0, 0x1000 >> 2);
        p.write_cfg(0, cfg::TOR | cfg::R);
        assert_eq!(p.range(0), Some((0, 0xfff)));
        p.write_addr(1, 0x2004 >> 2);
        p.write_cfg(1, cfg::NA4 | cfg::R);
        assert_eq!(p.range(1), Some((0x2004, 0x2007)));
        p.write_addr(2, napot(0x8000_0000, 8));
        p.write_cfg(2, cfg::NAPOT);
        assert_eq!(p.range(2), Some((0x8000_0000, 0x8000_0007)));
        p.write_addr(2, napot(0x8000_0000, 1 << 20));
        assert_eq!(p.range(2), Some((0x8000_0000, 0x800f_ffff)));
        p.write_addr(2, u64::MAX);
        assert_eq!(p.range(2), Some((0, u64::MAX)));
        // TOR with pmpaddr[i-1] >= pmpaddr[i]: empty.
        p.write_addr(3, 0x10);
        p.write_addr(4, 0x10);
        p.write_cfg(4, cfg::TOR | cfg::R);
        assert_eq!(p.range(4), None);
        // RV32: pmpaddr holds bits 33..2, so all ones covers more than the 32-bit space.
        let mut p = Pmp::new(true);
        p.write_addr(0, u64::MAX);
        assert_eq!(p.addr(0), 0xffff_ffff);
        p.write_cfg(0, cfg::NAPOT);
        assert_eq!(p.range(0), Some((0, 0x7_ffff_ffff)));
    }

    /// "Priority and Matching Logic": the lowest-numbered match decides, partial matches fail
    /// (for M too), no match: M yes, S/U no.
    #[test]
    fn priority_partial_and_default() {
        let mut p = Pmp::new(false);
        assert!(p.check(0x8000_0000, 4, Read, M));
        assert!(!p.check(0x8000_0000, 4, Read, S));
        assert!(!p.check(0x8000_0000, 4, Exec, U));
        // Entry 0: NA4 at 0x1004 read-only; entry 1: NAPOT 0x1000..0x1fff RW.
        p.write_addr(0, 0x1004 >> 2);
        p.write_cfg(0, cfg::NA4 | cfg::R);
        p.write_addr(1, napot(0x1000, 0x1000));
        p.write_cfg(1, cfg::NAPOT | cfg::R | cfg::W);
        assert!(p.check(0x1000, 4, Write, S));
        assert!(!p.check(0x1004, 4, Write, S)); // entry 0 wins
        assert!(p.check(0x1004, 4, Read, U));
        // An 8-byte access over entry 0's edge matches it partly: fails, in M as well.
        assert!(!p.check(0x1000, 8, Read, S));
        assert!(!p.check(0x1000, 8, Read, M));
        // A misaligned access with entry 0 strictly inside it (no end byte in it).
        assert!(!p.check(0x1002, 8, Read, S));
        // Across the end of entry 1 into nothing: partial.
        assert!(!p.check(0x1ffc, 8, Read, S));
        assert!(p.check(0x1ff8, 8, Read, S));
        // Unlocked entries do not apply to M.
        assert!(p.check(0x1004, 4, Write, M));
        assert!(p.check(0x1000, 4, Exec, M));
        // Wrapping past the top fails.
        assert!(!p.check(u64::MAX - 2, 8, Read, M));
    }

    /// "Locking and Privilege Mode": L applies the entry to M and freezes pmpcfg/pmpaddr, and
    /// pmpaddr[i-1] of a locked TOR entry.
    #[test]
    fn lock() {
        let mut p = Pmp::new(false);
        p.write_addr(0, 0x100);
        p.write_addr(1, 0x200);
        p.write_cfg(1, cfg::L | cfg::TOR | cfg::R);
        assert!(p.check(0x400, 4, Read, M));
        assert!(!p.check(0x400, 4, Write, M));
        assert!(p.check(0x800, 4, Write, M)); // no match
        p.write_cfg(1, cfg::TOR | cfg::R | cfg::W);
        assert_eq!(p.cfg(1), cfg::L | cfg::TOR | cfg::R);
        p.write_addr(1, 0x300);
        assert_eq!(p.addr(1), 0x200);
        p.write_addr(0, 0x50); // bottom of a locked TOR
        assert_eq!(p.addr(0), 0x100);
        // Entry 0 itself is not locked: its cfg still changes.
        p.write_cfg(0, cfg::NA4 | cfg::X);
        assert_eq!(p.cfg(0), cfg::NA4 | cfg::X);
        // A locked NAPOT neighbour does not protect pmpaddr[i-1].
        let mut p = Pmp::new(false);
        p.write_cfg(1, cfg::L | cfg::NAPOT);
        p.write_addr(0, 7);
        assert_eq!(p.addr(0), 7);
    }

    /// The fast path's question: a range decided by one entry, by none, or not uniformly.
    #[test]
    fn uniform_ranges() {
        let mut p = Pmp::new(false);
        let ram = (0x8000_0000, 0x87ff_ffff);
        assert_eq!(p.uniform(ram.0, ram.1, Read, M), Some(true));
        assert_eq!(p.uniform(ram.0, ram.1, Read, S), Some(false));
        p.write_addr(0, (1 << 54) - 1);
        p.write_cfg(0, cfg::NAPOT | cfg::R | cfg::X);
        assert_eq!(p.uniform(ram.0, ram.1, Read, U), Some(true));
        assert_eq!(p.uniform(ram.0, ram.1, Write, U), Some(false));
        assert_eq!(p.uniform(ram.0, ram.1, Write, M), Some(true));
        // A region inside RAM ahead of it: no longer uniform.
        p.write_cfg(0, 0);
        p.write_addr(1, (1 << 54) - 1);
        p.write_cfg(1, cfg::NAPOT | cfg::R | cfg::W | cfg::X);
        p.write_addr(0, napot(0x8000_0000, 0x8_0000));
        p.write_cfg(0, cfg::NAPOT);
        assert_eq!(p.uniform(ram.0, ram.1, Read, S), None);
        // An entry outside RAM does not matter.
        p.write_addr(0, napot(0x1000_0000, 0x1000));
        assert_eq!(p.uniform(ram.0, ram.1, Read, S), Some(true));
    }
}
