//! 3.1 step 5 and the second try from the reference's own values.

#[allow(unused_imports)]
use super::{check::*, compare::*, group::*, init::*, report::*, shadow::*, step::*};
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

/// State of the reference that a step may change and a retry must undo.
pub(super) struct Snapshot {
    pub(super) x: [u64; 32],
    pub(super) f: [u64; 32],
    pub(super) pc: u64,
    pub(super) priv_: u8,
    pub(super) csr: Csrs,
    pub(super) instret: u64,
    pub(super) clint: Clint,
    pub(super) mem: Option<(u64, [u8; 8])>,
}

/// A value the reference computed where the trace said otherwise and the shadow's was copied in
/// (3.1 step 5): kept in case the trace goes on from the reference's value.
#[derive(Clone, Copy, Debug)]
pub(super) enum Alt {
    Gpr(u8, u64),
    Fpr(u8, u64),
    Csr(u16, u64),
    Pc(u64),
    Priv(u8),
    Mem(u64, u8, u64),
}

/// How long an unresolved alternative is kept (groups).
pub(super) const ALT_LIFETIME: u64 = 100_000;

impl Checker {
    pub(super) fn snapshot(&self) -> Snapshot {
        let h = &self.hart;
        // The one memory location the instruction may store to.
        let mut mem = None;
        if let Some(raw) = h.bus.fetch(h.pc) {
            let i = decode(raw, h.xlen, &h.ext);
            use Op::*;
            let addr = match i.op {
                Sb | Sh | Sw | Sd | Fsw | Fsd => {
                    Some(h.x[i.rs1 as usize].wrapping_add(i.imm as i64 as u64) & self.xmask)
                }
                ScW | ScD | AmoSwapW | AmoAddW | AmoXorW | AmoAndW | AmoOrW | AmoMinW | AmoMaxW
                | AmoMinuW | AmoMaxuW | AmoSwapD | AmoAddD | AmoXorD | AmoAndD | AmoOrD
                | AmoMinD | AmoMaxD | AmoMinuD | AmoMaxuD => Some(h.x[i.rs1 as usize] & self.xmask),
                _ => None,
            };
            if let Some(a) = addr {
                let mut b = [0u8; 8];
                if h.bus.read_ram(a, &mut b) {
                    mem = Some((a, b));
                }
            }
        }
        Snapshot {
            x: h.x,
            f: h.f,
            pc: h.pc,
            priv_: h.priv_,
            csr: h.csr.clone(),
            instret: h.instret,
            clint: h.bus.clint.clone(),
            mem,
        }
    }

    pub(super) fn restore(&mut self, s: &Snapshot) {
        let h = &mut self.hart;
        h.x = s.x;
        h.f = s.f;
        h.pc = s.pc;
        h.priv_ = s.priv_;
        h.csr = s.csr.clone();
        h.instret = s.instret;
        h.bus.clint = s.clint.clone();
        if let Some((a, b)) = s.mem {
            let _ = h.bus.write_ram(a, &b);
        }
    }

    pub(super) fn apply_alts(&mut self) {
        for a in self.alts.clone() {
            let h = &mut self.hart;
            match a {
                Alt::Gpr(r, v) => h.x[r as usize] = v,
                Alt::Fpr(r, v) => h.f[r as usize] = v,
                Alt::Pc(v) => h.pc = v,
                Alt::Priv(v) => h.priv_ = v,
                Alt::Mem(addr, n, v) => {
                    let _ = h.bus.write_ram(addr, &v.to_le_bytes()[..n as usize]);
                }
                Alt::Csr(c, v) => {
                    let keep = self.csr[c as usize];
                    self.csr[c as usize] = v;
                    self.copy_csr_to_ref(c);
                    self.csr[c as usize] = keep;
                }
            }
        }
    }

    /// 3.1 step 5: copy the shadow state to the reference (absent elements excepted), keeping
    /// the reference's own values of what differed in case the trace goes on from them.
    pub(super) fn resync(&mut self, g: &Group) {
        self.alts.clear();
        self.alt_since = self.summary.groups;
        let h = &mut self.hart;
        if !self.opts.absent.has(Elements::GPR) {
            for r in 1..32 {
                if self.x[r] != h.x[r] {
                    self.alts.push(Alt::Gpr(r as u8, h.x[r]));
                }
            }
            self.x[0] = 0;
            h.x = self.x;
        }
        if !self.opts.absent.has(Elements::FPR) {
            for r in 0..32 {
                if self.f[r] != h.f[r] {
                    self.alts.push(Alt::Fpr(r as u8, h.f[r]));
                }
            }
            h.f = self.f;
        }
        if !self.opts.absent.has(Elements::PC) && self.pc != h.pc {
            self.alts.push(Alt::Pc(h.pc));
            h.pc = self.pc;
        }
        if !self.opts.absent.has(Elements::PRIV) && self.priv_ != h.priv_ {
            self.alts.push(Alt::Priv(h.priv_));
            h.priv_ = self.priv_;
        }
        if !self.opts.absent.has(Elements::CSR) {
            // Every CSR either side changed in this step.
            let mut cs: Vec<u16> = self.traced_csrs.clone();
            cs.extend(self.obs.csrs.iter().copied());
            cs.extend([
                num::MSTATUS,
                num::FCSR,
                num::MEPC,
                num::MCAUSE,
                num::MTVAL,
                num::SEPC,
                num::SCAUSE,
                num::STVAL,
                num::MIE,
            ]);
            cs.sort_unstable();
            cs.dedup();
            for c in cs {
                if csr_nondet(c) {
                    continue;
                }
                let r = self.hart.csr_read(c).unwrap_or(0) & self.xmask;
                if r != self.csr[c as usize] {
                    self.alts.push(Alt::Csr(c, r));
                    self.copy_csr_to_ref(c);
                    // What the reference holds now (WARL) is what the shadow holds.
                    let now = self.hart.csr_read(c).unwrap_or(0) & self.xmask;
                    if now != self.csr[c as usize] {
                        self.shadow_csr_write(c, now);
                    }
                }
            }
        }
        if !self.opts.absent.has(Elements::MEM) {
            for m in &g.mems {
                if let (Some(d), true) = (m.data, matches!(m.op, mem_op::STORE | mem_op::SC)) {
                    if matches!(m.rsp, Some(MemRsp { result: 1, .. })) {
                        continue;
                    }
                    let n = 1usize << m.size;
                    let mut old = [0u8; 8];
                    if self.hart.bus.read_ram(m.addr, &mut old[..n]) {
                        let oldv = u64::from_le_bytes(old);
                        if oldv != mask_bits(d, 8 * n as u32) {
                            self.alts.push(Alt::Mem(m.addr, n as u8, oldv));
                            let _ = self.hart.bus.write_ram(m.addr, &d.to_le_bytes()[..n]);
                        }
                    }
                }
            }
        }
    }

    /// For a second try from the reference's own values: the shadow takes them too where this
    /// group did not write them (an incremented pc counts from the reference's pc).
    pub(super) fn adopt_alts(&mut self, g: &Group, len: u8) {
        let written = |addr: u16| g.regs.iter().any(|&(a, _)| a == addr);
        for a in self.alts.clone() {
            match a {
                Alt::Gpr(r, v) if !written(reg::gpr(r)) => self.x[r as usize] = v,
                Alt::Fpr(r, v) if !written(reg::fpr(r)) => self.f[r as usize] = v,
                Alt::Csr(c, v) if !self.traced_csrs.contains(&c) => self.shadow_csr_write(c, v),
                Alt::Pc(v) if g.new_pc.is_none() && g.incr_pc => {
                    self.pc = v.wrapping_add(len as u64) & self.xmask
                }
                Alt::Priv(v) if g.priv_.is_none() => self.priv_ = v,
                _ => {}
            }
        }
    }

    /// After a clean step: alternatives for elements both sides just wrote are settled; old
    /// ones are dropped.
    pub(super) fn resolve_alts(&mut self, g: &Group) {
        let written = |addr: u16| g.regs.iter().any(|&(a, _)| a == addr);
        let tc = &self.traced_csrs;
        self.alts.retain(|a| match *a {
            Alt::Gpr(r, _) => !written(reg::gpr(r)),
            Alt::Fpr(r, _) => !written(reg::fpr(r)),
            Alt::Csr(c, _) => !tc.contains(&c),
            Alt::Pc(_) => false,
            Alt::Priv(_) => g.priv_.is_none(),
            Alt::Mem(a, _, _) => !g.mems.iter().any(|m| m.addr == a && m.op != mem_op::LOAD),
        });
        if self.summary.groups.saturating_sub(self.alt_since) > ALT_LIFETIME {
            self.alts.clear();
        }
    }
}
