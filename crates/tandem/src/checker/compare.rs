//! 3.1 step 4: "Compare the complete shadow state and tandem verifier state", the efficient
//! way 3.1 allows ("collecting state changes in both the shadow state and the tandem verifier
//! state, and comparing these changes"): all integer and floating-point registers, the pc and
//! the privilege mode every time, and every CSR and memory location that either side changed.

use super::group::{Group, MemRsp};
use super::report::{insn_hex, Diff};
use super::shadow::{csr_nondet, Shadow};
use super::step::{implicit_csrs, StepObserver, IMPLICIT_CSRS};
use crate::codec::{mask_bits, mem_op, reg};
use crate::dump::{priv_name, reg_name};
use crate::meta::Elements;
use rvtrace_isa::disasm::disasm;
use rvtrace_sim::csr::num;
use rvtrace_sim::{Hart, MemAccess, MemKind};

/// The two sides after one step, and where the differences go.
pub(super) struct Compare<'a> {
    /// The reference (a device load's register takes the traced value: 3.1 step 2).
    pub(super) hart: &'a mut Hart,
    pub(super) sh: &'a Shadow,
    /// The reference's events in the step.
    pub(super) obs: &'a StepObserver,
    /// What the group shows wrong by itself, reported with the comparison's differences.
    pub(super) trace_diffs: &'a [Diff],
    pub(super) absent: Elements,
    /// The differences.
    pub(super) out: &'a mut Vec<Diff>,
    /// Scratch: which reference memory accesses the trace accounts for.
    pub(super) matched: &'a mut Vec<bool>,
}

impl Compare<'_> {
    /// Compare shadow and reference after the step of group `g` at `pre_pc` (`pre`: the
    /// reference's [`implicit_csrs`] before it) into `out`.
    pub(super) fn run(&mut self, g: &Group, pre_pc: u64, pre: &[u64; 9]) {
        self.out.clear();
        let hex = |v: u64, bits: u32| format!("0x{:0w$x}", v, w = (bits as usize).div_ceil(4));
        let xb = self.sh.xlen.bits();
        // The instruction.
        if !self.absent.has(Elements::INSN) {
            let ref_insn = match (self.obs.retired, self.obs.trap) {
                (Some(r), _) => Some(r.insn),
                (None, Some(t)) if !t.interrupt && t.cause != 1 => self
                    .hart
                    .bus
                    .fetch(pre_pc)
                    .map(|r| if r & 3 == 3 { r } else { r & 0xffff }),
                _ => None,
            };
            let traced = g.insn.map(|(i, _)| i);
            // A group without an instruction is an interrupt or a fetch fault.
            let ref_is_int = self.obs.trap.is_some_and(|t| t.interrupt || t.cause == 1);
            if traced != ref_insn && !(traced.is_none() && ref_is_int) {
                let show = |i: Option<u32>| match i {
                    Some(i) => format!("{} ({})", insn_hex(i), disasm(i, pre_pc, xb)),
                    None => "none (an interrupt)".into(),
                };
                self.out.push(Diff {
                    element: "instruction".into(),
                    expected: show(ref_insn),
                    traced: show(traced),
                });
            }
        }
        if !self.absent.has(Elements::PC) && self.sh.pc != self.hart.pc {
            self.out.push(Diff {
                element: "pc".into(),
                expected: hex(self.hart.pc, xb),
                traced: hex(self.sh.pc, xb),
            });
        }
        if !self.absent.has(Elements::PRIV) && self.sh.priv_ != self.hart.priv_ {
            self.out.push(Diff {
                element: "privilege mode".into(),
                expected: format!("{} ({})", self.hart.priv_, priv_name(self.hart.priv_)),
                traced: format!("{} ({})", self.sh.priv_, priv_name(self.sh.priv_)),
            });
        }
        if !self.absent.has(Elements::GPR) && self.sh.x != self.hart.x {
            for r in 0..32 {
                if self.sh.x[r] != self.hart.x[r] {
                    self.out.push(Diff {
                        element: reg_name(reg::gpr(r as u8)),
                        expected: hex(self.hart.x[r] & self.sh.xmask, xb),
                        traced: hex(self.sh.x[r] & self.sh.xmask, xb),
                    });
                }
            }
        }
        let flen = self.sh.flen;
        if !self.absent.has(Elements::FPR) && flen > 0 && self.sh.f != self.hart.f {
            for r in 0..32 {
                let (a, b) = (
                    mask_bits(self.sh.f[r], flen),
                    mask_bits(self.hart.f[r], flen),
                );
                if a != b {
                    self.out.push(Diff {
                        element: reg_name(reg::fpr(r as u8)),
                        expected: hex(b, flen),
                        traced: hex(a, flen),
                    });
                }
            }
        }
        self.unwritten_regs(g);
        if !self.absent.has(Elements::CSR) {
            self.compare_csrs(pre);
        }
        if !self.absent.has(Elements::MEM) || !self.absent.has(Elements::EADDR) {
            self.compare_mem(g);
        }
        if !self.trace_diffs.is_empty() {
            self.out.extend(self.trace_diffs.iter().cloned());
        }
        if g.ambiguous.is_some() {
            self.out.extend(g.ambiguity());
        }
    }

    /// Integer and floating-point registers the trace writes and the reference's instruction
    /// does not (with the value they held, or a difference is reported already).
    fn unwritten_regs(&mut self, g: &Group) {
        let flen = self.sh.flen.max(1);
        for &(addr, _) in &g.regs {
            let same = if reg::is_gpr(addr) && !self.absent.has(Elements::GPR) {
                let r = (addr - reg::GPR0) as usize;
                r != 0 && self.obs.gprs & (1 << r) == 0 && self.sh.x[r] == self.hart.x[r]
            } else if reg::is_fpr(addr) && !self.absent.has(Elements::FPR) {
                let r = (addr - reg::FPR0) as usize;
                self.obs.fprs & (1 << r) == 0
                    && mask_bits(self.sh.f[r], flen) == mask_bits(self.hart.f[r], flen)
            } else {
                false
            };
            if same {
                self.out.push(Diff {
                    element: reg_name(addr),
                    expected: "not written by this instruction".into(),
                    traced: "written (with the value it held)".into(),
                });
            }
        }
    }

    fn compare_csrs(&mut self, pre: &[u64; 9]) {
        let post = implicit_csrs(self.hart);
        if self.sh.traced_csrs.is_empty() && self.obs.csrs.is_empty() && *pre == post {
            // Most instructions: no CSR on either side.
            return;
        }
        // The CSRs the reference's step wrote: with a hook, by a change, or by trap entry and
        // return (which write their CSRs whatever the values).
        let trap = self.obs.trap.or(self.obs.retired.and_then(|r| r.trap));
        let xret = self
            .obs
            .retired
            .is_some_and(|r| r.insn == 0x3020_0073 || r.insn == 0x1020_0073);
        let obs_csrs = &self.obs.csrs;
        let written = |c: u16| {
            obs_csrs.contains(&c)
                || IMPLICIT_CSRS
                    .iter()
                    .position(|&x| x == c)
                    .is_some_and(|k| pre[k] != post[k])
                || (xret && c == num::MSTATUS)
                || trap.is_some_and(|t| {
                    c == num::MSTATUS
                        || if t.to_priv == 1 {
                            matches!(c, num::SEPC | num::SCAUSE | num::STVAL)
                        } else {
                            matches!(c, num::MEPC | num::MCAUSE | num::MTVAL)
                        }
                })
        };
        let xb = self.sh.xlen.bits();
        let hex = |v: u64| format!("0x{:0w$x}", v, w = xb as usize / 4);
        let mut diffs = Vec::new();
        // Every CSR the trace writes.
        for &c in &self.sh.traced_csrs {
            if csr_nondet(c) {
                continue;
            }
            let r = self.hart.csr_read(c).unwrap_or(0) & self.sh.xmask;
            let s = self.sh.csr[c as usize];
            if r != s {
                diffs.push(Diff {
                    element: reg_name(c),
                    expected: hex(r),
                    traced: hex(s),
                });
            } else if !written(c) {
                diffs.push(Diff {
                    element: reg_name(c),
                    expected: "not written by this instruction".into(),
                    traced: format!("written (with the value it held, {})", hex(s)),
                });
            }
        }
        // Every CSR the reference changed or wrote and the trace does not.
        let mut others: [u16; 16] = [0; 16];
        let mut n = 0;
        let implicit = IMPLICIT_CSRS
            .iter()
            .enumerate()
            .filter(|&(k, _)| pre[k] != post[k])
            .map(|(_, &c)| c);
        for c in implicit.chain(self.obs.csrs.iter().copied()) {
            if self.sh.traced_csrs.contains(&c) || others[..n].contains(&c) || csr_nondet(c) {
                continue;
            }
            if n == others.len() {
                // More than an instruction writes: compare the rest one by one.
                let r = self.hart.csr_read(c).unwrap_or(0) & self.sh.xmask;
                if r != self.sh.csr[c as usize] {
                    diffs.push(Diff {
                        element: reg_name(c),
                        expected: hex(r),
                        traced: format!("{} (not in the trace)", hex(self.sh.csr[c as usize])),
                    });
                }
                continue;
            }
            others[n] = c;
            n += 1;
        }
        for &c in &others[..n] {
            let r = self.hart.csr_read(c).unwrap_or(0) & self.sh.xmask;
            let s = self.sh.csr[c as usize];
            if r != s {
                diffs.push(Diff {
                    element: reg_name(c),
                    expected: hex(r),
                    traced: format!("{} (not in the trace)", hex(s)),
                });
            }
        }
        self.out.extend(diffs);
    }

    fn compare_mem(&mut self, g: &Group) {
        if g.mems.is_empty()
            && self.obs.mems.is_empty()
            && g.eaddrs.is_empty()
            && g.store_data.is_empty()
        {
            return;
        }
        let check_mem = !self.absent.has(Elements::MEM);
        let ram = |h: &Hart, a: u64, n: u64| h.bus.ram_offset(a, n).is_some();
        // matched[k]: reference access k is accounted for.
        let mut matched = std::mem::take(self.matched);
        matched.clear();
        matched.resize(self.obs.mems.len(), false);
        let mut nondet_load = false;
        let mems = &self.obs.mems;
        let mut diffs = Vec::new();
        let find = |kind: MemKind, addr: u64, n: u8, matched: &mut [bool]| -> Option<MemAccess> {
            for (k, m) in mems.iter().enumerate() {
                if m.kind == kind && m.addr == addr && m.size == n && !matched[k] {
                    matched[k] = true;
                    return Some(*m);
                }
            }
            None
        };
        // The atomic memory operation of the reference's instruction, if it is one (A
        // extension: opcode AMO, funct5); any other instruction makes plain loads and stores.
        let atomic = self
            .obs
            .retired
            .and_then(|r| (r.insn & 0x7f == 0x2f).then(|| mem_op::from_amo_funct5(r.insn >> 27)));
        if check_mem {
            for it in &g.mems {
                let n = 1u8 << it.size;
                // A load or store may stand for part of an atomic (chapter 3: "AMOs may be
                // implemented as read-modify-write"), an atomic request only for its own kind.
                if (mem_op::LR..=mem_op::AMO_MAXU).contains(&it.op) && atomic != Some(it.op) {
                    diffs.push(Diff {
                        element: format!("memory request at 0x{:x}: operation", it.addr),
                        expected: match atomic {
                            Some(a) => mem_op::name(a).into(),
                            None => "load or store (not an atomic instruction)".into(),
                        },
                        traced: mem_op::name(it.op).into(),
                    });
                }
                let what = || {
                    format!(
                        "memory {} of {} bytes at 0x{:x}",
                        mem_op::name(it.op),
                        n,
                        it.addr
                    )
                };
                if let Some(r) = it.rsp {
                    if r.size != it.size {
                        diffs.push(Diff {
                            element: format!("{}: response size", what()),
                            expected: format!("{n} bytes (the request's)"),
                            traced: format!("{} bytes", 1u8 << r.size),
                        });
                    }
                }
                let rsp_data = it.rsp.and_then(|r| r.data);
                let failed = matches!(it.rsp, Some(MemRsp { result: 1, .. }));
                let is_load = matches!(it.op, mem_op::LOAD | mem_op::LR);
                match it.op {
                    mem_op::IFETCH => {}
                    _ if failed => {
                        // A failed request changed nothing; the reference's access succeeded.
                        let kind = if is_load {
                            MemKind::Load
                        } else {
                            MemKind::Store
                        };
                        if find(kind, it.addr, n, &mut matched).is_some() {
                            diffs.push(Diff {
                                element: what(),
                                expected: if it.op == mem_op::SC {
                                    "store made (sc succeeded)".into()
                                } else {
                                    "success".into()
                                },
                                traced: if it.op == mem_op::SC {
                                    "sc failed".into()
                                } else {
                                    "failure".into()
                                },
                            });
                        }
                    }
                    mem_op::LOAD | mem_op::LR => {
                        match find(MemKind::Load, it.addr, n, &mut matched) {
                            None => diffs.push(Diff {
                                element: what(),
                                expected: "no such access".into(),
                                traced: "made".into(),
                            }),
                            Some(m) => {
                                if let Some(d) = rsp_data {
                                    if d != m.value {
                                        if ram(self.hart, it.addr, n as u64) {
                                            diffs.push(Diff {
                                                element: format!("{}: data read", what()),
                                                expected: format!("0x{:x}", m.value),
                                                traced: format!("0x{d:x}"),
                                            });
                                        } else {
                                            // A device read: non-deterministic (3.1).
                                            nondet_load = true;
                                        }
                                    }
                                }
                            }
                        }
                    }
                    mem_op::STORE | mem_op::SC => {
                        let d = it.data.unwrap_or(0);
                        match find(MemKind::Store, it.addr, n, &mut matched) {
                            None => diffs.push(Diff {
                                element: what(),
                                expected: "no such store".into(),
                                traced: format!("data 0x{d:x}"),
                            }),
                            Some(m) if m.value != d => diffs.push(Diff {
                                element: format!("memory at 0x{:x} ({} bytes)", it.addr, n),
                                expected: format!("0x{:0w$x}", m.value, w = 2 * n as usize),
                                traced: format!("0x{:0w$x}", d, w = 2 * n as usize),
                            }),
                            Some(_) => {}
                        }
                    }
                    op => {
                        // AMO: the reference loaded the old value and stored the new one.
                        let l = find(MemKind::Load, it.addr, n, &mut matched);
                        let s = find(MemKind::Store, it.addr, n, &mut matched);
                        match (l, s) {
                            (Some(l), Some(s)) => {
                                if let (Some(old), Some(opnd)) = (rsp_data, it.data) {
                                    let new = amo(op, old, opnd, n);
                                    if old != l.value || new != s.value {
                                        diffs.push(Diff {
                                            element: format!("{}: old, new value", what()),
                                            expected: format!("0x{:x}, 0x{:x}", l.value, s.value),
                                            traced: format!("0x{old:x}, 0x{new:x}"),
                                        });
                                    }
                                }
                            }
                            _ => diffs.push(Diff {
                                element: what(),
                                expected: "no such access".into(),
                                traced: "made".into(),
                            }),
                        }
                    }
                }
            }
            // Store data as additional state: some store of that size and data.
            for &(size, v) in &g.store_data {
                let n = 1u8 << size;
                let hit = mems.iter().enumerate().find(|(_, m)| {
                    m.kind == MemKind::Store && m.size == n && m.value == mask_bits(v, 8 * n as u32)
                });
                match hit {
                    Some((k, _)) => matched[k] = true,
                    None => diffs.push(Diff {
                        element: format!("memory store data ({n} bytes)"),
                        expected: "no such store".into(),
                        traced: format!("0x{v:x}"),
                    }),
                }
            }
            // Every store of the reference must be in the trace.
            for (k, m) in mems.iter().enumerate() {
                if m.kind == MemKind::Store && !matched[k] {
                    diffs.push(Diff {
                        element: format!("memory at 0x{:x} ({} bytes)", m.addr, m.size),
                        expected: format!("store of 0x{:x}", m.value),
                        traced: "no store (not in the trace)".into(),
                    });
                }
            }
        }
        *self.matched = matched;
        if !self.absent.has(Elements::EADDR) {
            for &a in &g.eaddrs {
                if !mems.iter().any(|m| m.addr == a) {
                    let expected = match mems.first() {
                        Some(m) => format!("0x{:x}", m.addr),
                        None => "no memory access".into(),
                    };
                    diffs.push(Diff {
                        element: "effective address".into(),
                        expected,
                        traced: format!("0x{a:x}"),
                    });
                }
            }
        }
        if nondet_load {
            // The loaded register takes the traced value, without a report (3.1 step 2).
            let mut names = Vec::new();
            for &(addr, _) in &g.regs {
                if reg::is_gpr(addr) {
                    let r = (addr - reg::GPR0) as usize;
                    self.hart.x[r] = self.sh.x[r];
                    names.push(reg_name(addr));
                } else if reg::is_fpr(addr) {
                    let r = (addr - reg::FPR0) as usize;
                    self.hart.f[r] = self.sh.f[r];
                    names.push(reg_name(addr));
                }
            }
            self.hart.x[0] = 0;
            self.out.retain(|d| !names.contains(&d.element));
        }
        self.out.extend(diffs);
    }
}

/// The value an AMO stores, `n` bytes wide, by the hart's rule.
fn amo(op: u8, old: u64, src: u64, n: u8) -> u64 {
    use rvtrace_sim::AmoOp;
    let op = match op {
        mem_op::AMO_SWAP => AmoOp::Swap,
        mem_op::AMO_ADD => AmoOp::Add,
        mem_op::AMO_XOR => AmoOp::Xor,
        mem_op::AMO_AND => AmoOp::And,
        mem_op::AMO_OR => AmoOp::Or,
        mem_op::AMO_MIN => AmoOp::Min,
        mem_op::AMO_MAX => AmoOp::Max,
        mem_op::AMO_MINU => AmoOp::Minu,
        _ => AmoOp::Maxu,
    };
    op.apply(old, src, n)
}
