//! 3.1 step 5: "copy the entire shadow state to the tandem verifier state" after a mismatch
//! (absent elements excepted, 3.2), keeping the reference's own values of what differed. A
//! difference that came from the trace alone (a value damaged on its way, the rest of the trace
//! consistent with the correct value) would otherwise be reported again at every later
//! instruction that reads the copied value; so a later group that does not match is stepped
//! again from the kept values ([`Snapshot`], [`Alts::apply`], [`Alts::adopt`]), and if it then
//! matches only the first group is reported.

use super::group::{Group, MemRsp};
use super::shadow::{csr_nondet, csr_to_reference, Shadow};
use super::step::{StepObserver, IMPLICIT_CSRS};
use crate::codec::{mask_bits, mem_op, reg};
use crate::meta::Elements;
use rvtrace_isa::Xlen;
use rvtrace_sim::bus::Clint;
use rvtrace_sim::csr::Csrs;
use rvtrace_sim::decode::{decode, Op};
use rvtrace_sim::Hart;

/// State of the reference that a step may change and a retry must undo.
pub(super) struct Snapshot {
    x: [u64; 32],
    f: [u64; 32],
    pc: u64,
    priv_: u8,
    csr: Csrs,
    instret: u64,
    clint: Clint,
    mem: Option<(u64, [u8; 8])>,
}

impl Snapshot {
    /// The reference `h` before its next instruction, with the one memory location that
    /// instruction may store to.
    pub(super) fn take(h: &Hart, xmask: u64) -> Snapshot {
        let mut mem = None;
        if let Some(raw) = h.bus.fetch(h.pc) {
            let i = decode(raw, h.xlen, &h.ext);
            use Op::*;
            let addr = match i.op {
                Sb | Sh | Sw | Sd | Fsw | Fsd => {
                    Some(h.x[i.rs1 as usize].wrapping_add(i.imm as i64 as u64) & xmask)
                }
                ScW | ScD | AmoSwapW | AmoAddW | AmoXorW | AmoAndW | AmoOrW | AmoMinW | AmoMaxW
                | AmoMinuW | AmoMaxuW | AmoSwapD | AmoAddD | AmoXorD | AmoAndD | AmoOrD
                | AmoMinD | AmoMaxD | AmoMinuD | AmoMaxuD => Some(h.x[i.rs1 as usize] & xmask),
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

    /// Put `h` back as it was.
    pub(super) fn restore(&self, h: &mut Hart) {
        h.x = self.x;
        h.f = self.f;
        h.pc = self.pc;
        h.priv_ = self.priv_;
        h.csr = self.csr.clone();
        h.instret = self.instret;
        h.bus.clint = self.clint.clone();
        if let Some((a, b)) = self.mem {
            let _ = h.bus.write_ram(a, &b);
        }
    }
}

/// A value the reference computed where the trace said otherwise and the shadow's was copied in
/// (3.1 step 5): kept in case the trace goes on from the reference's value.
#[derive(Clone, Copy, Debug)]
enum Alt {
    Gpr(u8, u64),
    Fpr(u8, u64),
    Csr(u16, u64),
    Pc(u64),
    Priv(u8),
    Mem(u64, u8, u64),
}

/// How long an unresolved alternative is kept (groups).
const ALT_LIFETIME: u64 = 100_000;

/// The reference's values the last resynchronisation replaced.
#[derive(Default)]
pub(super) struct Alts {
    list: Vec<Alt>,
    /// The group of that resynchronisation.
    since: u64,
}

impl Alts {
    /// No alternative is kept.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Drop every alternative.
    pub(super) fn clear(&mut self) {
        self.list.clear();
    }

    /// 3.1 step 5 after group `g` (number `group`): copy the shadow state to the reference
    /// `h` (absent elements excepted), keeping the reference's values that differed.
    pub(super) fn resync(
        &mut self,
        h: &mut Hart,
        sh: &mut Shadow,
        obs: &StepObserver,
        g: &Group,
        absent: Elements,
        group: u64,
    ) {
        self.list.clear();
        self.since = group;
        if !absent.has(Elements::GPR) {
            for r in 1..32 {
                if sh.x[r] != h.x[r] {
                    self.list.push(Alt::Gpr(r as u8, h.x[r]));
                }
            }
            sh.x[0] = 0;
            h.x = sh.x;
        }
        if !absent.has(Elements::FPR) {
            for r in 0..32 {
                if sh.f[r] != h.f[r] {
                    self.list.push(Alt::Fpr(r as u8, h.f[r]));
                }
            }
            h.f = sh.f;
        }
        if !absent.has(Elements::PC) && sh.pc != h.pc {
            self.list.push(Alt::Pc(h.pc));
            h.pc = sh.pc;
        }
        if !absent.has(Elements::PRIV) && sh.priv_ != h.priv_ {
            self.list.push(Alt::Priv(h.priv_));
            h.priv_ = sh.priv_;
        }
        if !absent.has(Elements::CSR) {
            // Every CSR either side changed in this step.
            let mut cs: Vec<u16> = sh.traced_csrs.clone();
            cs.extend(obs.csrs.iter().copied());
            cs.extend(IMPLICIT_CSRS);
            cs.sort_unstable();
            cs.dedup();
            for c in cs {
                if csr_nondet(c) {
                    continue;
                }
                let r = h.csr_read(c).unwrap_or(0) & sh.xmask;
                if r != sh.csr[c as usize] {
                    self.list.push(Alt::Csr(c, r));
                    sh.copy_csr_to(c, h);
                    // What the reference holds now (WARL) is what the shadow holds.
                    let now = h.csr_read(c).unwrap_or(0) & sh.xmask;
                    if now != sh.csr[c as usize] {
                        sh.csr_write(c, now);
                    }
                }
            }
        }
        if !absent.has(Elements::MEM) {
            for m in &g.mems {
                if let (Some(d), true) = (m.data, matches!(m.op, mem_op::STORE | mem_op::SC)) {
                    if matches!(m.rsp, Some(MemRsp { result: 1, .. })) {
                        continue;
                    }
                    let n = 1usize << m.size;
                    let mut old = [0u8; 8];
                    if h.bus.read_ram(m.addr, &mut old[..n]) {
                        let oldv = u64::from_le_bytes(old);
                        if oldv != mask_bits(d, 8 * n as u32) {
                            self.list.push(Alt::Mem(m.addr, n as u8, oldv));
                            let _ = h.bus.write_ram(m.addr, &d.to_le_bytes()[..n]);
                        }
                    }
                }
            }
        }
    }

    /// For a second try: the kept values back into the reference `h`.
    pub(super) fn apply(&self, h: &mut Hart, xlen: Xlen) {
        for &a in &self.list {
            match a {
                Alt::Gpr(r, v) => h.x[r as usize] = v,
                Alt::Fpr(r, v) => h.f[r as usize] = v,
                Alt::Pc(v) => h.pc = v,
                Alt::Priv(v) => h.priv_ = v,
                Alt::Mem(addr, n, v) => {
                    let _ = h.bus.write_ram(addr, &v.to_le_bytes()[..n as usize]);
                }
                Alt::Csr(c, v) => csr_to_reference(h, xlen, c, v),
            }
        }
    }

    /// For a second try from the reference's own values: the shadow takes them too where group
    /// `g` did not write them (an incremented pc counts from the reference's pc; `len`: the
    /// instruction's length).
    pub(super) fn adopt(&self, sh: &mut Shadow, g: &Group, len: u8) {
        let written = |addr: u16| g.regs.iter().any(|&(a, _)| a == addr);
        for &a in &self.list {
            match a {
                Alt::Gpr(r, v) if !written(reg::gpr(r)) => sh.x[r as usize] = v,
                Alt::Fpr(r, v) if !written(reg::fpr(r)) => sh.f[r as usize] = v,
                Alt::Csr(c, v) if !sh.traced_csrs.contains(&c) => sh.csr_write(c, v),
                Alt::Pc(v) if g.new_pc.is_none() && g.incr_pc => {
                    sh.pc = v.wrapping_add(len as u64) & sh.xmask
                }
                Alt::Priv(v) if g.priv_.is_none() => sh.priv_ = v,
                _ => {}
            }
        }
    }

    /// After a clean step of group `g` (number `group`): alternatives for elements both sides
    /// just wrote are settled (`traced_csrs`: the CSRs the group wrote); old ones are dropped.
    pub(super) fn resolve(&mut self, g: &Group, traced_csrs: &[u16], group: u64) {
        let written = |addr: u16| g.regs.iter().any(|&(a, _)| a == addr);
        self.list.retain(|a| match *a {
            Alt::Gpr(r, _) => !written(reg::gpr(r)),
            Alt::Fpr(r, _) => !written(reg::fpr(r)),
            Alt::Csr(c, _) => !traced_csrs.contains(&c),
            Alt::Pc(_) => false,
            Alt::Priv(_) => g.priv_.is_none(),
            Alt::Mem(a, _, _) => !g.mems.iter().any(|m| m.addr == a && m.op != mem_op::LOAD),
        });
        if group.saturating_sub(self.since) > ALT_LIFETIME {
            self.list.clear();
        }
    }
}
