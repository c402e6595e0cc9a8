//! The shadow state (3.1: "a shadow state in the tandem verifier. The verifier would apply all
//! state changes, supplied by the trace decoder, to a copy of the entire architectural ...
//! state"): the registers, pc and privilege mode as the trace says they are (3.1 step 1), and
//! copying from it to the reference: the non-deterministic state before each instruction (step
//! 2) and the CSRs a resynchronisation copies (step 5).

use super::group::{Group, RegUpd};
use super::report::Diff;
use crate::codec::{mask_bits, reg};
use crate::dump::reg_name;
use crate::meta::Elements;
use rvtrace_isa::Xlen;
use rvtrace_sim::csr::{irq, num};
use rvtrace_sim::Hart;

/// The register a CSR write shows up as in the comparison: `sstatus` is a view of `mstatus`,
/// `sie` of `mie`, `fflags` and `frm` of `fcsr` (privileged ISA; unprivileged ISA "fcsr");
/// the shadow state keeps their shared bits together.
pub fn canonical_csr(csr: u16) -> u16 {
    match csr {
        num::SSTATUS => num::MSTATUS,
        num::SIE => num::MIE,
        num::FFLAGS | num::FRM => num::FCSR,
        c => c,
    }
}

/// CSR address space (12 bits).
const NCSR: usize = 4096;

/// The CSRs whose values are non-deterministic: copied, never compared.
pub(super) fn csr_nondet(c: u16) -> bool {
    matches!(c, 0x144 | 0x344 | 0xb00..=0xb1f | 0xb80..=0xb9f | 0xc00..=0xc1f | 0xc80..=0xc9f)
}

/// The state the trace says the hart has.
pub(super) struct Shadow {
    pub(super) x: [u64; 32],
    pub(super) f: [u64; 32],
    pub(super) pc: u64,
    pub(super) priv_: u8,
    /// Every CSR by address, XLEN bits.
    pub(super) csr: Vec<u64>,
    pub(super) xlen: Xlen,
    /// XLEN ones.
    pub(super) xmask: u64,
    /// FLEN (the trace's parameter).
    pub(super) flen: u32,
    /// The CSRs the last group applied wrote (canonical numbers, [`canonical_csr`]).
    pub(super) traced_csrs: Vec<u16>,
}

/// The low XLEN bits of `v`, sign-extended as the hart keeps integer registers.
#[inline(always)]
pub(super) fn sext(xlen: Xlen, v: u64) -> u64 {
    match xlen {
        Xlen::Rv32 => v as i32 as i64 as u64,
        Xlen::Rv64 => v,
    }
}

impl Shadow {
    /// The shadow of `hart`'s state (before the trace's first group).
    pub(super) fn new(hart: &mut Hart, flen: u32) -> Shadow {
        let xlen = hart.xlen;
        let xmask = mask_bits(u64::MAX, xlen.bits());
        let mut csr = vec![0u64; NCSR];
        for (c, v) in csr.iter_mut().enumerate() {
            *v = hart.csr_read(c as u16).unwrap_or(0) & xmask;
        }
        Shadow {
            x: hart.x,
            f: hart.f,
            pc: hart.pc,
            priv_: hart.priv_,
            csr,
            xlen,
            xmask,
            flen,
            traced_csrs: Vec::new(),
        }
    }

    /// `v` sign-extended from XLEN bits.
    #[inline(always)]
    pub(super) fn sext(&self, v: u64) -> u64 {
        sext(self.xlen, v)
    }

    /// Integer register `r` after the traced update `upd`: XLEN bits, sign-extended as the
    /// hart keeps them.
    #[inline(always)]
    pub(super) fn gpr_after(&self, r: usize, upd: RegUpd) -> u64 {
        let old = self.x[r];
        let v = match upd {
            RegUpd::Full(v) => v,
            RegUpd::Add(o) => old.wrapping_add(o as i64 as u64),
            RegUpd::Or(m) => old | m as u64,
        };
        self.sext(v & self.xmask)
    }

    /// A traced write of CSR `c` with `v`, and of the registers that share its bits.
    ///
    /// The trace gives each register's value, not the write that made it, so only the sharing
    /// of bits is repeated here, not the hart's write rules (WARL fields, side effects such as
    /// `mstatus.FS` becoming dirty, which the trace carries as an `mstatus` write of its own).
    /// The rules are the CSR file's (`rvtrace_sim::csr::shared::write_file`, the ones the hart
    /// itself writes with; the test `shared_bits_as_the_hart_has_them` below holds the two
    /// sides together):
    ///
    /// * `fflags`, `frm` and `fcsr` (unprivileged ISA 20191213, 11.2 "Floating-Point Control
    ///   and Status Register"): `fcsr` is `frm` (bits 7:5) and `fflags` (bits 4:0); a write of
    ///   any one changes the other two.
    /// * `sstatus` and `mstatus` (privileged ISA 20211203, 4.1.1 "Supervisor Status Register
    ///   (sstatus)": "a restricted view of mstatus"): a write of `sstatus` changes the bits of
    ///   `mstatus` that `sstatus` shows, SD included (RV32 has no UXL). The hart masks further
    ///   (UBE, XS and SD are read-only there); the trace's value is what the register holds,
    ///   so the shadow takes all it shows.
    /// * `sie` and `mie` (privileged ISA 20211203, 4.1.3 "Supervisor Interrupt Registers (sip
    ///   and sie)"): a write of `sie` changes the bits of `mie` that `mideleg` delegates among
    ///   the supervisor-level ones.
    ///
    /// The views themselves (`sstatus`, `sie`) are kept only as last written (a later write
    /// of `mstatus` or `mie` does not update them): the checker compares and copies the
    /// registers they are views of ([`canonical_csr`]). An incremental update of a view
    /// (increment or OR register records) starts from that last written value.
    pub(super) fn csr_write(&mut self, c: u16, v: u64) {
        let c = (c as usize & (NCSR - 1)) as u16;
        rvtrace_sim::csr::shared::write_file(&mut self.csr, c, v & self.xmask, self.xlen);
    }

    /// Apply the group's register, pc and privilege updates (3.1 step 1); `insn_len` is the
    /// length of its instruction (for an incremented pc). What the group shows wrong by itself
    /// (a register that does not exist) goes to `diffs`.
    pub(super) fn apply(&mut self, g: &Group, insn_len: u8, diffs: &mut Vec<Diff>) {
        self.traced_csrs.clear();
        for &(addr, upd) in &g.regs {
            if reg::is_gpr(addr) {
                let r = (addr - reg::GPR0) as usize;
                self.x[r] = self.gpr_after(r, upd);
            } else if reg::is_fpr(addr) {
                let r = (addr - reg::FPR0) as usize;
                let old = self.f[r];
                let v = match upd {
                    RegUpd::Full(v) => v,
                    RegUpd::Add(o) => old.wrapping_add(o as i64 as u64),
                    RegUpd::Or(m) => old | m as u64,
                };
                self.f[r] = mask_bits(v, self.flen.max(1));
            } else if reg::is_csr(addr) {
                let old = self.csr[addr as usize];
                let v = match upd {
                    RegUpd::Full(v) => v,
                    RegUpd::Add(o) => old.wrapping_add(o as i64 as u64),
                    RegUpd::Or(m) => old | m as u64,
                };
                self.csr_write(addr, v);
                self.traced_csrs.push(canonical_csr(addr));
            } else {
                diffs.push(bad_register(addr, upd));
            }
        }
        if let Some(pc) = g.new_pc {
            self.pc = pc & self.xmask;
        } else if g.incr_pc {
            self.pc = self.pc.wrapping_add(insn_len as u64) & self.xmask;
        }
        if let Some(pv) = g.priv_ {
            self.priv_ = pv & 3;
        }
    }

    /// Copy CSR `c` (a canonical number) from the shadow to the reference.
    pub(super) fn copy_csr_to(&self, c: u16, h: &mut Hart) {
        csr_to_reference(h, self.xlen, c, self.csr[c as usize]);
    }

    /// Non-deterministic state from the shadow into the reference (3.1 step 2), for the next
    /// instruction: `mtime`, the software-writable bits of `mip`/`sip`, the counters.
    pub(super) fn copy_nondet_to(&self, g: &Group, h: &mut Hart, absent: Elements) {
        if let Some(t) = g.mtime {
            if !absent.has(Elements::MTIME) {
                let now = h.mtime();
                let c = &mut h.bus.clint;
                c.mtime_offset = c.mtime_offset.wrapping_add(t.wrapping_sub(now));
            }
        }
        if absent.has(Elements::CSR) {
            return;
        }
        for &(addr, _) in &g.regs {
            if !reg::is_csr(addr) || !csr_nondet(addr) {
                continue;
            }
            let v = self.csr[addr as usize];
            let rv32 = self.xlen == Xlen::Rv32;
            let instret = h.instret;
            match addr {
                0x344 => h.csr.mip_sw = v & irq::MIP_WRITABLE,
                0x144 => {
                    let m = h.csr.mideleg & irq::SSI;
                    h.csr.mip_sw = (h.csr.mip_sw & !m) | (v & m);
                }
                0xb00 | 0xc00 | 0xb02 | 0xc02 | 0xb80 | 0xc80 | 0xb82 | 0xc82 => {
                    let i = (addr & 0x1f) as usize;
                    let cur = h.counters.counter(i, instret);
                    let new = if addr & 0x80 != 0 {
                        (cur & 0xffff_ffff) | (v << 32)
                    } else if rv32 {
                        (cur & !0xffff_ffff) | (v & 0xffff_ffff)
                    } else {
                        v
                    };
                    h.counters.set_counter(i, new, instret);
                }
                _ => {}
            }
        }
    }
}

/// Put value `v` of CSR `c` (a canonical number) into the reference: the registers the trace
/// shows as they are (trap CSRs, `mie`, `mstatus` but its SD bit, `fcsr`) directly, the others
/// by the hart's write (its WARL rules); non-deterministic ones not at all.
pub(super) fn csr_to_reference(h: &mut Hart, xlen: Xlen, c: u16, v: u64) {
    match c {
        num::MSTATUS => {
            h.csr.mstatus = match xlen {
                Xlen::Rv32 => (h.csr.mstatus & !0xffff_ffff) | (v & 0x7fff_ffff),
                Xlen::Rv64 => v & !(1 << 63),
            }
        }
        num::FCSR => {
            h.csr.fflags = (v & 0x1f) as u8;
            h.csr.frm = ((v >> 5) & 7) as u8;
        }
        num::MEPC => h.csr.mepc = v,
        num::MCAUSE => h.csr.mcause = v,
        num::MTVAL => h.csr.mtval = v,
        num::SEPC => h.csr.sepc = v,
        num::SCAUSE => h.csr.scause = v,
        num::STVAL => h.csr.stval = v,
        num::MIE => h.csr.mie = v,
        _ if csr_nondet(c) => {}
        _ => {
            let _ = h.csr_write(c, v);
        }
    }
}

/// A register address outside the Debug Specification's space (chapter 3).
#[cold]
fn bad_register(addr: u16, upd: RegUpd) -> Diff {
    Diff {
        element: reg_name(addr),
        expected: "no such register (CSRs are 0x000-0xfff, GPRs 0x1000-0x101f, FPRs \
                   0x1020-0x103f: Debug Specification, chapter 3)"
            .into(),
        traced: match upd {
            RegUpd::Full(v) => format!("written with 0x{v:x}"),
            RegUpd::Add(o) => format!("incremented by {o}"),
            RegUpd::Or(m) => format!("ORed with 0x{m:02x}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvtrace_sim::csr::mstatus;
    use rvtrace_sim::Config;

    /// The registers that share bits with CSR `c` (its group), `c` first.
    fn group_of(c: u16) -> &'static [u16] {
        match c {
            num::FFLAGS | num::FRM | num::FCSR => &[num::FFLAGS, num::FRM, num::FCSR],
            num::SSTATUS => &[num::SSTATUS, num::MSTATUS],
            num::SIE => &[num::SIE, num::MIE],
            num::MSTATUS => &[num::MSTATUS],
            num::MIE => &[num::MIE],
            _ => &[num::MIDELEG],
        }
    }

    /// The hart is the independent side: it makes each write, the shadow is given the value the
    /// hart then holds (what a trace carries), and every register that shares bits with the
    /// written one must read the same on both sides. Writes of `mstatus`, `mie` and `mideleg`
    /// in between move the bits the views show.
    #[test]
    fn shared_bits_as_the_hart_has_them() {
        const WRITTEN: [u16; 8] = [
            num::FFLAGS,
            num::FRM,
            num::FCSR,
            num::SSTATUS,
            num::SIE,
            num::MSTATUS,
            num::MIE,
            num::MIDELEG,
        ];
        for xlen in [Xlen::Rv32, Xlen::Rv64] {
            let mut h = Hart::new(&Config::virt(xlen));
            let mut sh = Shadow::new(&mut h, 64);
            let mut seed = 0x9e37_79b9_7f4a_7c15u64;
            let mut rnd = || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            let mut checked = [0u32; 8];
            for i in 0..4000 {
                let k = if i < 8 { i } else { rnd() as usize % 8 };
                let c = WRITTEN[k];
                let mut v = rnd();
                if matches!(c, num::MSTATUS | num::SSTATUS) {
                    // Keep the FP unit on: fflags, frm and fcsr read nothing without it.
                    v |= mstatus::FS;
                }
                assert!(h.csr_write(c, v), "{xlen:?}: write of 0x{c:x}");
                let traced = h.csr_read(c).unwrap() & sh.xmask;
                sh.csr_write(c, traced);
                for &r in group_of(c) {
                    let want = h.csr_read(r).unwrap() & sh.xmask;
                    assert_eq!(
                        sh.csr[r as usize], want,
                        "{xlen:?}: 0x{r:x} after a write of 0x{traced:x} to 0x{c:x} (step {i})"
                    );
                }
                checked[k] += 1;
            }
            assert!(checked.iter().all(|&n| n > 100), "{checked:?}");
        }
    }

    /// A write of a view leaves the bits it does not show alone (a rule the hart has too).
    #[test]
    fn a_view_keeps_the_bits_it_does_not_show() {
        let mut h = Hart::new(&Config::virt(Xlen::Rv64));
        let mut sh = Shadow::new(&mut h, 64);
        sh.csr_write(num::MSTATUS, mstatus::MIE | mstatus::SIE);
        sh.csr_write(num::SSTATUS, 0);
        assert_eq!(sh.csr[num::MSTATUS as usize], mstatus::MIE);
        sh.csr_write(num::MIDELEG, irq::SSI);
        sh.csr_write(num::MIE, irq::MIP_WRITABLE | irq::S_VIEW);
        sh.csr_write(num::SIE, 0);
        assert_eq!(
            sh.csr[num::MIE as usize],
            (irq::MIP_WRITABLE | irq::S_VIEW) & !irq::SSI
        );
        sh.csr_write(num::FCSR, 0xff);
        sh.csr_write(num::FRM, 0);
        assert_eq!(sh.csr[num::FCSR as usize], 0x1f);
        assert_eq!(sh.csr[num::FFLAGS as usize], 0x1f);
    }
}
