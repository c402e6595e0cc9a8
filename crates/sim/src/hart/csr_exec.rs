//! Zicsr instructions: access checks (privileged ISA, "CSR Address Mapping Conventions"), reads
//! and writes of the CSR file, counters, and the CSRs of attached extensions ([`crate::extension`]).

use super::Hart;
use crate::arch::{privilege, Exc};
use crate::counters::Counters;
use crate::csr::{irq, menvcfg, mstatus, num, shared, stateen, DELEGABLE_EXCEPTIONS};
use crate::decode::{Insn, Op};
use crate::observer::Observer;
use rvtrace_isa::Xlen;

/// QEMU 7.2's `marchid`/`mimpid` value for the `virt` CPU: the QEMU version (7.2.x).
const QEMU_ARCHID: u64 = 0x0007_0200;

impl Hart {
    pub(crate) fn csr_insn<O: Observer, const RV64: bool>(
        &mut self,
        obs: &mut O,
        i: &Insn,
        bits: u32,
    ) -> Result<(), Exc> {
        let csr = (i.imm as u32 & 0xfff) as u16;
        let illegal = Exc::illegal(bits);
        // csr[9:8] is the lowest privilege that may access it; csr[11:10] == 3 is read-only.
        if (csr >> 8) as u8 & 3 > self.priv_ {
            return Err(illegal);
        }
        let src = match i.op {
            Op::Csrrw | Op::Csrrs | Op::Csrrc => self.x[i.rs1 as usize],
            _ => i.rs1 as u64,
        };
        let writes = match i.op {
            Op::Csrrw | Op::Csrrwi => true,
            _ => i.rs1 != 0,
        };
        if writes && csr >> 10 == 3 {
            return Err(illegal);
        }
        let old = self.csr_read(csr).ok_or(illegal)?;
        if writes {
            let new = match i.op {
                Op::Csrrw | Op::Csrrwi => src,
                Op::Csrrs | Op::Csrrsi => old | src,
                _ => old & !src,
            };
            let new = self.trunc(new);
            if !self.csr_write(csr, new) {
                return Err(illegal);
            }
            if let Some(v) = self.csr_read(csr) {
                obs.csr_write(csr, v);
            }
        }
        self.replay_effects(obs);
        self.wx::<O, RV64>(obs, i.rd, old);
        Ok(())
    }

    /// Whether a counter CSR (`cycle`, `time`, `instret`, `hpmcounterN`) may be read at the
    /// current privilege (`mcounteren`/`scounteren`).
    fn counter_allowed(&self, index: u16) -> bool {
        let bit = 1u64 << (index & 31);
        match self.priv_ {
            privilege::M => true,
            privilege::S => self.csr.mcounteren & bit != 0,
            _ => self.csr.mcounteren & bit != 0 && (!self.ext.s || self.csr.scounteren & bit != 0),
        }
    }

    /// Whether `stimecmp`/`stimecmph` exist and may be accessed now (Sstc): RV32 only for
    /// `stimecmph`; below M only with `mcounteren.TM` and `menvcfg.STCE` set (QEMU 7.2
    /// `sstc` predicate; U-mode never reaches an S-level CSR).
    fn sstc_allows(&self, csr: u16) -> bool {
        self.sstc
            && self.ext.s
            && (csr == num::STIMECMP || self.xlen == Xlen::Rv32)
            && (self.priv_ == privilege::M
                || (self.csr.mcounteren & 2 != 0 && self.csr.menvcfg & menvcfg::STCE != 0))
    }

    /// Read a CSR as software sees it (XLEN-wide, sign-extended for RV32). `None` = no such CSR
    /// or not accessible now.
    pub fn csr_read(&mut self, csr: u16) -> Option<u64> {
        let rv32 = self.xlen == Xlen::Rv32;
        if Counters::owns(csr) || csr == num::TIME || csr == num::TIMEH {
            // Time and counters come from outside the loop's state (trap-loop detection).
            self.bus.io_touched = true;
        }
        if let Some(v) = self.device_read(csr) {
            return v;
        }
        if Counters::owns(csr) {
            // User-level counters: `mcounteren`/`scounteren` (Zicntr/Zihpm).
            if (num::CYCLE..=num::HPMCOUNTER31H).contains(&csr) && !self.counter_allowed(csr & 0x1f)
            {
                return None;
            }
            let v = self
                .counters
                .read(csr, self.instret, self.priv_, self.csr.mcounteren)?;
            return Some(self.sext(v));
        }
        let c = &self.csr;
        let v = match csr {
            num::FFLAGS | num::FRM | num::FCSR if !self.ext.f || !c.fs_on() => return None,
            num::FFLAGS => c.fflags as u64,
            num::FRM => c.frm as u64,
            num::FCSR => shared::fcsr(c.fflags, c.frm),
            num::TIME | num::TIMEH => {
                if !self.counter_allowed(1) || (csr == num::TIMEH && !rv32) {
                    return None;
                }
                if csr == num::TIME {
                    self.mtime()
                } else {
                    self.mtime() >> 32
                }
            }
            num::SSTATUS if self.ext.s => {
                shared::sstatus_read(c.mstatus_read(self.xlen), self.xlen)
            }
            num::STIMECMP | num::STIMECMPH if self.sstc_allows(csr) => {
                if csr == num::STIMECMP {
                    c.stimecmp
                } else {
                    c.stimecmp >> 32
                }
            }
            num::SIE if self.ext.s => shared::sie_read(c.mie, c.mideleg),
            num::SIP if self.ext.s => shared::sip_read(self.mip(), c.mideleg),
            num::STVEC if self.ext.s => c.stvec,
            num::SCOUNTEREN if self.ext.s => c.scounteren,
            num::SENVCFG if self.ext.s => {
                if !self.stateen_allows(stateen::ENVCFG) {
                    return None;
                }
                c.senvcfg
            }
            num::SSCRATCH if self.ext.s => c.sscratch,
            num::SEPC if self.ext.s => c.sepc,
            num::SCAUSE if self.ext.s => c.scause,
            num::STVAL if self.ext.s => c.stval,
            num::SATP if self.ext.s => {
                if self.priv_ == privilege::S && c.mstatus & mstatus::TVM != 0 {
                    return None;
                }
                c.satp
            }
            num::MSTATUS => c.mstatus_read(self.xlen),
            // QEMU 7.2 keeps MPV and GVA writable here without H as on RV64 (`write_mstatush`).
            num::MSTATUSH if rv32 => (c.mstatus >> 32) & (mstatus::MPV | mstatus::GVA) >> 32,
            num::MISA => c.misa,
            num::MEDELEG if self.ext.s => c.medeleg,
            num::MIDELEG if self.ext.s => c.mideleg,
            num::MIE => c.mie,
            num::MIP => self.mip(),
            num::MTVEC => c.mtvec,
            num::MCOUNTEREN => c.mcounteren,
            num::MENVCFG => c.menvcfg,
            num::MENVCFGH if rv32 => c.menvcfg >> 32,
            num::MSTATEEN0..=num::MSTATEEN3 if self.smstateen => {
                c.mstateen[(csr - num::MSTATEEN0) as usize]
            }
            num::MSTATEEN0H..=num::MSTATEEN3H if self.smstateen && rv32 => {
                c.mstateen[(csr - num::MSTATEEN0H) as usize] >> 32
            }
            // No S-mode state the low 32 bits could guard is implemented: read-only 0, reachable
            // from S-mode only with SE0 of the matching `mstateenN`.
            num::SSTATEEN0..=num::SSTATEEN3 if self.smstateen && self.ext.s => {
                let n = (csr - num::SSTATEEN0) as usize;
                if self.priv_ != privilege::M && c.mstateen[n] & stateen::SE0 == 0 {
                    return None;
                }
                0
            }
            num::MSCRATCH => c.mscratch,
            num::MEPC => c.mepc,
            num::MCAUSE => c.mcause,
            num::MTVAL => c.mtval,
            num::PMPCFG0..=num::PMPCFG15 => {
                let n = (csr - num::PMPCFG0) as usize;
                // 16 entries, as QEMU's `virt` (7.2 and 10): pmpcfg4.. and pmpaddr16.. are
                // illegal there, and odd pmpcfg numbers on RV64.
                if (!rv32 && n % 2 == 1) || n * 4 >= crate::pmp::ENTRIES {
                    return None;
                }
                let per = if rv32 { 4 } else { 8 };
                (0..per).fold(0u64, |acc, k| {
                    acc | u64::from(c.pmp.cfg(n * 4 + k)) << (8 * k)
                })
            }
            num::PMPADDR0..=num::PMPADDR63 => {
                let e = (csr - num::PMPADDR0) as usize;
                if e >= crate::pmp::ENTRIES {
                    return None;
                }
                c.pmp.addr(e)
            }
            // Sdtrig as QEMU 7.2 (`trigger.rs`).
            num::TSELECT => c.trig.tselect,
            num::TDATA1 => c.trig.tdata1(),
            num::TDATA2 => c.trig.tdata2(),
            num::TDATA3 => 0,
            num::TINFO => crate::trigger::TINFO,
            num::MVENDORID => 0,
            num::MARCHID | num::MIMPID => QEMU_ARCHID,
            num::MHARTID => self.id as u64,
            num::MCONFIGPTR => 0,
            _ => return None,
        };
        Some(self.sext(v))
    }

    /// A CSR an attached extension claims, asked before the base CSR file (so an extension can
    /// take over a CSR the base file implements): `Some(read)` when claimed.
    fn device_read(&mut self, csr: u16) -> Option<Option<u64>> {
        if self.exts.list.is_empty() || !self.exts.list.iter().any(|e| e.claims_csr(csr)) {
            return None;
        }
        let (_, v) =
            self.each_extension(|e, ctx| e.claims_csr(csr).then(|| e.csr_read(ctx, csr)))?;
        Some(v.map(|v| self.sext(v)))
    }

    /// Write a CSR (value already XLEN-truncated). Returns false if the write is illegal.
    pub fn csr_write(&mut self, csr: u16, v: u64) -> bool {
        if let Some(ok) = self.device_write(csr, v) {
            return ok;
        }
        if Counters::owns(csr) {
            // Counter writes take effect after the instruction (`counters.rs`).
            self.recheck();
            return self.counters.write(csr, v);
        }
        let rv32 = self.xlen == Xlen::Rv32;
        let has_f = self.ext.f;
        // LCOFI (interrupt 13) exists with Sscofpmf only: its bits are read-only zero without.
        let no_lcofi = if self.counters.config().sscofpmf {
            0
        } else {
            irq::LCOFI
        };
        let c = &mut self.csr;
        match csr {
            num::FFLAGS => {
                c.fflags = shared::fflags_of(v);
                c.set_fs_dirty();
            }
            num::FRM => {
                c.frm = (v & 7) as u8;
                c.set_fs_dirty();
            }
            num::FCSR => {
                c.fflags = shared::fflags_of(v);
                c.frm = shared::frm_of(v);
                c.set_fs_dirty();
            }
            num::SSTATUS => {
                let new =
                    shared::mstatus_with_sstatus(c.mstatus, v, shared::sstatus_writable(self.xlen));
                c.mstatus_write(new, has_f, self.xlen);
                // SUM and MXR change what translated accesses may do (`mmu.rs`).
                self.pmp_refresh();
                self.recheck();
            }
            num::SIE => {
                c.mie = shared::mie_with_sie(c.mie, c.mideleg, v);
                self.recheck();
            }
            num::SIP => {
                c.mip_sw = shared::mip_with_sip(c.mip_sw, c.mideleg, v);
                self.recheck();
            }
            num::STVEC => {
                // QEMU 7.2 ignores writes of the reserved modes 2 and 3.
                if v & 3 < 2 {
                    c.stvec = v;
                }
            }
            num::SCOUNTEREN => c.scounteren = v & self.counters.present_mask(),
            num::SENVCFG => {
                if !self.stateen_allows(stateen::ENVCFG) {
                    return false;
                }
                self.csr.senvcfg = v & 0xf1;
            }
            num::STIMECMP | num::STIMECMPH => {
                // RV32 writes one half; each write re-arms the timer (`Hart::write_stimecmp`).
                let v = match (rv32, csr == num::STIMECMP) {
                    (false, _) => v,
                    (true, true) => (c.stimecmp & !0xffff_ffff) | (v & 0xffff_ffff),
                    (true, false) => (c.stimecmp & 0xffff_ffff) | (v << 32),
                };
                self.write_stimecmp(v);
            }
            num::SSCRATCH => c.sscratch = v,
            // QEMU 7.2 keeps bit 0 of xepc as written (the ISA says it reads as zero).
            num::SEPC => c.sepc = v,
            num::SCAUSE => c.scause = v,
            num::STVAL => c.stval = v,
            num::SATP => {
                if self.priv_ == privilege::S && c.mstatus & mstatus::TVM != 0 {
                    return false;
                }
                // WARL: a write with an unsupported MODE is ignored (QEMU 7.2 `write_satp`):
                // RV32 Bare/Sv32, RV64 Bare/Sv39/Sv48/Sv57.
                let ok = if rv32 {
                    true
                } else {
                    matches!(v >> 60, 0 | 8 | 9 | 10)
                };
                if ok {
                    c.satp = v;
                }
                // Translation on or off closes or opens the fast paths (`mmu.rs`). No TLB
                // flush: the spec asks software for `sfence.vma` ("Supervisor Address
                // Translation and Protection (satp) Register").
                self.pmp_refresh();
            }
            num::MSTATUS => {
                let v = if rv32 {
                    (c.mstatus & !0xffff_ffff) | v
                } else {
                    v
                };
                c.mstatus_write(v, has_f, self.xlen);
                // MPRV and MPP choose the privilege that loads and stores are checked at.
                self.pmp_refresh();
                self.recheck();
            }
            num::MSTATUSH => {
                let m = mstatus::MPV | mstatus::GVA;
                c.mstatus = (c.mstatus & !m) | ((v << 32) & m);
            }
            num::MISA => {}
            num::MEDELEG => c.medeleg = v & DELEGABLE_EXCEPTIONS,
            num::MIDELEG => {
                c.mideleg = v & irq::MIDELEG_WRITABLE & !no_lcofi;
                self.recheck();
            }
            num::MIE => {
                c.mie = v & irq::MIE_WRITABLE & !no_lcofi;
                self.recheck();
            }
            num::MIP => {
                // Sstc: while STCE is 1, `stimecmp` alone drives STIP.
                let stce = if self.stce() { irq::STI } else { 0 };
                let m = irq::MIP_WRITABLE & !no_lcofi & !stce;
                self.latch_stimer();
                let c = &mut self.csr;
                c.mip_sw = (c.mip_sw & !m) | (v & m);
                self.recheck();
            }
            num::MTVEC => {
                if v & 3 < 2 {
                    c.mtvec = v;
                }
            }
            num::MCOUNTEREN => c.mcounteren = v & self.counters.present_mask(),
            // FIOM, CBIE, CBCFE, CBZE, PBMTE as QEMU 7.2 (which leaves PBMTE writable without
            // Svpbmt), STCE with Sstc.
            num::MENVCFG | num::MENVCFGH => {
                let mask = 0x4000_0000_0000_00f1 | if self.sstc { menvcfg::STCE } else { 0 };
                let v = match (rv32, csr == num::MENVCFG) {
                    (false, _) => v,
                    (true, true) => (c.menvcfg & !0xffff_ffff) | (v & 0xffff_ffff),
                    (true, false) => (c.menvcfg & 0xffff_ffff) | (v << 32),
                };
                c.menvcfg = v & mask;
                self.recheck(); // STCE changes what drives STIP
            }
            num::MSTATEEN0..=num::MSTATEEN3 | num::MSTATEEN0H..=num::MSTATEEN3H
                if self.smstateen && (csr <= num::MSTATEEN3 || rv32) =>
            {
                let n = (csr & 3) as usize;
                let mask = self.stateen_mask(n);
                let c = &mut self.csr;
                let old = c.mstateen[n];
                let v = match (rv32, csr <= num::MSTATEEN3) {
                    (false, _) => v,
                    (true, true) => (old & !0xffff_ffff) | (v & 0xffff_ffff),
                    (true, false) => (old & 0xffff_ffff) | (v << 32),
                };
                c.mstateen[n] = (old & !mask) | (v & mask);
            }
            num::SSTATEEN0..=num::SSTATEEN3 if self.smstateen && self.ext.s => {
                let n = (csr - num::SSTATEEN0) as usize;
                if self.priv_ != privilege::M && self.csr.mstateen[n] & stateen::SE0 == 0 {
                    return false;
                }
            }
            num::MSCRATCH => c.mscratch = v,
            num::MEPC => c.mepc = v,
            num::MCAUSE => c.mcause = v,
            num::MTVAL => c.mtval = v,
            num::PMPCFG0..=num::PMPCFG15 => {
                let n = (csr - num::PMPCFG0) as usize;
                if (!rv32 && n % 2 == 1) || n * 4 >= crate::pmp::ENTRIES {
                    return false;
                }
                let per = if rv32 { 4 } else { 8 };
                for k in 0..per {
                    c.pmp.write_cfg(n * 4 + k, (v >> (8 * k)) as u8);
                }
                self.pmp_refresh();
            }
            num::PMPADDR0..=num::PMPADDR63 => {
                let e = (csr - num::PMPADDR0) as usize;
                if e >= crate::pmp::ENTRIES {
                    return false;
                }
                c.pmp.write_addr(e, v);
                self.pmp_refresh();
            }
            // Sdtrig as QEMU 7.2 (`trigger.rs`): `tdata3` and `tinfo` ignore writes.
            num::TSELECT => c.trig.write_tselect(v),
            num::TDATA1 => {
                c.trig.write_tdata1(v);
                // What the triggers watch decides which fast paths stay open.
                self.pmp_refresh();
            }
            num::TDATA2 => c.trig.write_tdata2(v),
            num::TDATA3 | num::TINFO => {}
            _ => {
                // Read-only machine information registers (0xf11..) never reach here: their
                // numbers have csr[11:10] == 3. Attached devices were asked first.
                return false;
            }
        }
        true
    }

    /// The writable bits of `mstateenN` (Smstateen): SE0 where S-mode exists, and in
    /// `mstateen0` ENVCFG and the bits attached extensions guard their state with.
    fn stateen_mask(&self, n: usize) -> u64 {
        if !self.ext.s {
            return 0;
        }
        if n != 0 {
            return stateen::SE0;
        }
        let ext = self.exts.list.iter().fold(0, |m, e| m | e.stateen_bits());
        stateen::SE0 | stateen::ENVCFG | ext
    }

    /// A write to a CSR an attached extension claims (before the base CSR file):
    /// `Some(accepted)`.
    fn device_write(&mut self, csr: u16, v: u64) -> Option<bool> {
        if self.exts.list.is_empty() || !self.exts.list.iter().any(|e| e.claims_csr(csr)) {
            return None;
        }
        let (_, ok) =
            self.each_extension(|e, ctx| e.claims_csr(csr).then(|| e.csr_write(ctx, csr, v)))?;
        self.exts.refresh();
        self.recheck();
        Some(ok)
    }
}

#[cfg(test)]
mod tests {
    use crate::csr::num;
    use crate::{Config, Hart};
    use rvtrace_isa::Xlen;

    /// 16 PMP entries as QEMU `virt` 7.2 and 10 (checked on both: `csrr` of pmpcfg4 and
    /// pmpaddr16 raise illegal instruction there, pmpcfg2 and pmpaddr15 do not).
    #[test]
    fn pmp_csrs_beyond_sixteen_entries_are_illegal() {
        let mut h = Hart::new(&Config::virt(Xlen::Rv64));
        assert!(h.csr_read(num::PMPADDR0 + 15).is_some());
        assert!(h.csr_read(num::PMPADDR0 + 16).is_none());
        assert!(!h.csr_write(num::PMPADDR0 + 16, 1));
        assert!(h.csr_read(num::PMPCFG0 + 2).is_some());
        assert!(h.csr_read(num::PMPCFG0 + 1).is_none(), "odd pmpcfg on RV64");
        assert!(h.csr_read(num::PMPCFG0 + 4).is_none());
        assert!(!h.csr_write(num::PMPCFG0 + 4, 0));
        let mut h = Hart::new(&Config::virt(Xlen::Rv32));
        assert!(h.csr_read(num::PMPCFG0 + 3).is_some());
        assert!(h.csr_read(num::PMPCFG0 + 4).is_none());
    }
}
