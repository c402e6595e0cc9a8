//! The shadow state (3.1 step 1) and copying from it to the reference (3.1 steps 2 and 5).

#[allow(unused_imports)]
use super::{check::*, compare::*, group::*, init::*, report::*, resync::*, step::*};
#[allow(unused_imports)]
use crate::codec::{
    decode_record, mask_bits, mem_op, reg, AddlState, DecodeError, ErrorKind, Params, Record,
};
#[allow(unused_imports)]
use crate::dump::{priv_name, reg_name};
#[allow(unused_imports)]
use crate::meta::Elements;
#[allow(unused_imports)]
use crate::producer::canonical_csr;
#[allow(unused_imports)]
use rvtrace_image::Image;
#[allow(unused_imports)]
use rvtrace_isa::disasm::disasm;
#[allow(unused_imports)]
use rvtrace_isa::Xlen;
#[allow(unused_imports)]
use rvtrace_sim::bus::Clint;
#[allow(unused_imports)]
use rvtrace_sim::csr::{irq, mstatus, num, Csrs};
#[allow(unused_imports)]
use rvtrace_sim::decode::{decode, Op};
#[allow(unused_imports)]
use rvtrace_sim::{Hart, MemAccess, MemKind, Observer, Retired, Stop, TrapInfo};
#[allow(unused_imports)]
use std::fmt;
#[allow(unused_imports)]
use std::io::Read;

// ---------------------------------------------------------------------------------------------
// Shadow state.

pub(super) const NCSR: usize = 4096;

/// The CSRs whose values are non-deterministic: copied, never compared.
pub(super) fn csr_nondet(c: u16) -> bool {
    matches!(c, 0x144 | 0x344 | 0xb00..=0xb1f | 0xb80..=0xb9f | 0xc00..=0xc1f | 0xc80..=0xc9f)
}

impl Checker {
    pub(super) fn shadow_csr_write(&mut self, c: u16, v: u64) {
        let v = v & self.xmask;
        let c = c as usize & (NCSR - 1);
        match c as u16 {
            num::FCSR => {
                self.csr[num::FCSR as usize] = v & 0xff;
                self.csr[num::FFLAGS as usize] = v & 0x1f;
                self.csr[num::FRM as usize] = (v >> 5) & 7;
            }
            num::FFLAGS => {
                self.csr[num::FFLAGS as usize] = v & 0x1f;
                let f = &mut self.csr[num::FCSR as usize];
                *f = (*f & !0x1f) | (v & 0x1f);
            }
            num::FRM => {
                self.csr[num::FRM as usize] = v & 7;
                let f = &mut self.csr[num::FCSR as usize];
                *f = (*f & !0xe0) | ((v & 7) << 5);
            }
            num::SSTATUS => {
                let m = self.sstatus_mask();
                let ms = &mut self.csr[num::MSTATUS as usize];
                *ms = (*ms & !m) | (v & m);
                self.csr[c] = v;
            }
            num::SIE => {
                let m = self.csr[num::MIDELEG as usize] & irq::S_VIEW;
                let mie = &mut self.csr[num::MIE as usize];
                *mie = (*mie & !m) | (v & m);
                self.csr[c] = v;
            }
            _ => self.csr[c] = v,
        }
    }

    /// The bits of `mstatus` that `sstatus` shows (the hart's view), with SD.
    pub(super) fn sstatus_mask(&self) -> u64 {
        match self.xlen {
            Xlen::Rv32 => (mstatus::SSTATUS_BITS & !mstatus::UXL) | 1 << 31,
            Xlen::Rv64 => mstatus::SSTATUS_BITS | 1 << 63,
        }
    }

    /// Apply the group's register, pc and privilege updates to the shadow.
    pub(super) fn apply_shadow(&mut self, g: &Group, insn_len: u8) {
        self.traced_csrs.clear();
        let p = self.opts.params;
        for &(addr, upd) in &g.regs {
            if reg::is_gpr(addr) {
                let r = (addr - reg::GPR0) as usize;
                let old = self.x[r];
                let v = match upd {
                    RegUpd::Full(v) => v,
                    RegUpd::Add(o) => old.wrapping_add(o as i64 as u64),
                    RegUpd::Or(m) => old | m as u64,
                };
                self.x[r] = self.sext(v & self.xmask);
            } else if reg::is_fpr(addr) {
                let r = (addr - reg::FPR0) as usize;
                let old = self.f[r];
                let v = match upd {
                    RegUpd::Full(v) => v,
                    RegUpd::Add(o) => old.wrapping_add(o as i64 as u64),
                    RegUpd::Or(m) => old | m as u64,
                };
                self.f[r] = mask_bits(v, p.flen.max(1));
            } else if reg::is_csr(addr) {
                let old = self.csr[addr as usize];
                let v = match upd {
                    RegUpd::Full(v) => v,
                    RegUpd::Add(o) => old.wrapping_add(o as i64 as u64),
                    RegUpd::Or(m) => old | m as u64,
                };
                self.shadow_csr_write(addr, v);
                self.traced_csrs.push(canonical_csr(addr));
            } else {
                self.bad_register(addr, upd);
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

    /// A register address outside the Debug Specification's space (chapter 3).
    #[cold]
    pub(super) fn bad_register(&mut self, addr: u16, upd: RegUpd) {
        self.trace_diffs.push(Diff {
            element: reg_name(addr),
            expected: "no such register (CSRs are 0x000-0xfff, GPRs 0x1000-0x101f, FPRs \
                       0x1020-0x103f: Debug Specification, chapter 3)"
                .into(),
            traced: match upd {
                RegUpd::Full(v) => format!("written with 0x{v:x}"),
                RegUpd::Add(o) => format!("incremented by {o}"),
                RegUpd::Or(m) => format!("ORed with 0x{m:02x}"),
            },
        });
    }

    /// The difference a group shows by itself when it gives an element twice.
    pub(super) fn ambiguity(g: &Group) -> Option<Diff> {
        g.ambiguous.as_ref().map(|a| Diff {
            element: a.clone(),
            expected: "given at most once in a group (chapter 3: only unambiguous state \
                       changes are allowed)"
                .into(),
            traced: "given twice".into(),
        })
    }

    pub(super) fn copy_csr_to_ref(&mut self, c: u16) {
        let v = self.csr[c as usize];
        let h = &mut self.hart;
        match c {
            num::MSTATUS => {
                h.csr.mstatus = match self.xlen {
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

    /// Non-deterministic state from the shadow into the reference (3.1 step 2), for the next
    /// instruction.
    pub(super) fn copy_nondet(&mut self, g: &Group) {
        if let Some(t) = g.mtime {
            if !self.absent(Elements::MTIME) {
                let now = self.hart.mtime();
                let c = &mut self.hart.bus.clint;
                c.mtime_offset = c.mtime_offset.wrapping_add(t.wrapping_sub(now));
            }
        }
        if self.absent(Elements::CSR) {
            return;
        }
        for &(addr, _) in &g.regs {
            if !reg::is_csr(addr) || !csr_nondet(addr) {
                continue;
            }
            let v = self.csr[addr as usize];
            let h = &mut self.hart;
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
