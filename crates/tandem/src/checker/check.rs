//! The procedure of 3.1 around the layers: the checker, its options, the loop over groups.

#[allow(unused_imports)]
use super::{compare::*, group::*, init::*, report::*, resync::*, shadow::*, step::*};
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

/// Checker options.
#[derive(Clone, Copy, Debug)]
pub struct CheckOptions {
    /// Codec parameters of the trace.
    pub params: Params,
    /// Elements the trace leaves out (3.2).
    pub absent: Elements,
    /// How the run that wrote the trace ended.
    pub run_end: RunEnd,
    /// The number of groups the producer wrote, when known (the sidecar's `groups`).
    pub groups: Option<u64>,
}

impl CheckOptions {
    /// Options for a trace of a run that ended with the program's exit, group count unknown.
    pub fn new(params: Params, absent: Elements) -> CheckOptions {
        CheckOptions {
            params,
            absent,
            run_end: RunEnd::Exit,
            groups: None,
        }
    }
}

/// How the run that wrote a trace ended (the sidecar's `end`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunEnd {
    /// The program ended (or nothing is known): the trace must end with the program's exit.
    #[default]
    Exit,
    /// The run was stopped before the program ended (`--max-insns`, an error): the trace may end
    /// after any whole group.
    Stopped,
}

/// The tandem verifier: a reference hart, a shadow state and the 3.1 procedure.
pub struct Checker {
    pub(super) hart: Hart,
    pub(super) opts: CheckOptions,
    pub(super) xlen: Xlen,
    pub(super) xmask: u64,
    // Shadow state.
    pub(super) x: [u64; 32],
    pub(super) f: [u64; 32],
    pub(super) pc: u64,
    pub(super) priv_: u8,
    pub(super) csr: Vec<u64>,
    // Per-group scratch.
    pub(super) obs: StepObserver,
    pub(super) traced_csrs: Vec<u16>,
    pub(super) diffs: Vec<Diff>,
    /// Differences the trace shows by itself (not by comparison): reported with the group's.
    pub(super) trace_diffs: Vec<Diff>,
    pub(super) matched: Vec<bool>,
    pub(super) alts: Vec<Alt>,
    pub(super) alt_since: u64,
    pub(super) summary: CheckSummary,
    pub(super) stopped: bool,
    /// An instruction group was read (the program load is over).
    pub(super) running: bool,
    /// The group with the program's exit.
    pub(super) exited: Option<u64>,
    pub(super) program: Program,
}

impl Checker {
    /// A checker with `hart` as the reference: the program of `image` loaded, semihosting off
    /// (its calls are taken from the trace), not run yet. The trace's initial memory is compared
    /// with `image`'s loadable contents.
    pub fn new(mut hart: Hart, image: &Image, opts: CheckOptions) -> Checker {
        hart.bus.console = Box::new(std::io::sink());
        let xlen = hart.xlen;
        let mut csr = vec![0u64; NCSR];
        let xmask = mask_bits(u64::MAX, xlen.bits());
        for (c, v) in csr.iter_mut().enumerate() {
            *v = hart.csr_read(c as u16).unwrap_or(0) & xmask;
        }
        Checker {
            x: hart.x,
            f: hart.f,
            pc: hart.pc,
            priv_: hart.priv_,
            hart,
            opts,
            xlen,
            xmask,
            csr,
            obs: StepObserver::default(),
            traced_csrs: Vec::new(),
            diffs: Vec::new(),
            trace_diffs: Vec::new(),
            matched: Vec::new(),
            alts: Vec::new(),
            alt_since: 0,
            summary: CheckSummary::default(),
            stopped: false,
            running: false,
            exited: None,
            program: Program::new(image),
        }
    }

    /// The reference hart.
    pub fn hart(&self) -> &Hart {
        &self.hart
    }

    /// What was checked so far: after [`Checker::check`] failed, the partial summary up to the
    /// malformed bytes ([`CheckSummary::bytes`]).
    pub fn summary(&self) -> &CheckSummary {
        &self.summary
    }

    #[inline(always)]
    pub(super) fn sext(&self, v: u64) -> u64 {
        match self.xlen {
            Xlen::Rv32 => v as i32 as i64 as u64,
            Xlen::Rv64 => v,
        }
    }

    #[inline(always)]
    pub(super) fn absent(&self, e: Elements) -> bool {
        self.opts.absent.has(e)
    }

    /// Check the trace read from `src`, calling `report` for each mismatch. On an error, the
    /// partial summary is [`Checker::summary`].
    pub fn check<R: Read>(
        &mut self,
        src: R,
        report: &mut dyn FnMut(&Mismatch),
    ) -> Result<CheckSummary, CheckError> {
        let mut rd = GroupReader::new(src, self.opts.params);
        let r = self.check_groups(&mut rd, report);
        self.summary.bytes = match &r {
            Ok(()) | Err(CheckError::Io(_)) => rd.read_bytes(),
            Err(CheckError::Malformed(e)) => e.offset,
            Err(CheckError::Protocol(off, _)) => *off,
        };
        r?;
        Ok(self.summary.clone())
    }

    pub(super) fn check_groups<R: Read>(
        &mut self,
        rd: &mut GroupReader<R>,
        report: &mut dyn FnMut(&Mismatch),
    ) -> Result<(), CheckError> {
        let mut g = Group::default();
        loop {
            match rd.next(&mut g)? {
                Next::End => {
                    self.finish_trace(report);
                    return Ok(());
                }
                Next::Truncated { in_record } => {
                    if !self.running {
                        self.finish_program(report);
                    }
                    self.summary.end = TraceEnd::Truncated {
                        group_offset: g.offset,
                        in_record,
                    };
                    return Ok(());
                }
                Next::Unit => {}
            }
            if g.grouped {
                self.summary.groups += 1;
            }
            if g.hart_reset || g.state_init || !g.grouped {
                if g.insn.is_some() || g.incr_pc {
                    return Err(CheckError::Protocol(
                        g.offset,
                        if g.grouped {
                            "an instruction in a state initialization or hart reset group \
                             (chapter 3 forbids it)"
                                .into()
                        } else {
                            "an instruction outside any group".into()
                        },
                    ));
                }
                self.apply_init(&g, report);
                if g.grouped {
                    self.summary.init += 1;
                } else {
                    self.summary.outside += 1;
                }
                continue;
            }
            if !self.running {
                self.finish_program(report);
                self.running = true;
            }
            if self.stopped {
                continue;
            }
            if let Some(e) = self.exited {
                // Nothing runs after the program's exit.
                self.stop_reference(
                    &g,
                    self.hart.pc,
                    format!("the program exited in group {e}"),
                    report,
                );
                continue;
            }
            self.step_group(&g, report);
        }
    }

    /// The end of the trace after a whole group: it must be the program's end.
    pub(super) fn finish_trace(&mut self, report: &mut dyn FnMut(&Mismatch)) {
        if !self.running {
            self.finish_program(report);
        }
        let s = &mut self.summary;
        s.end = if s.reference_stopped.is_some() {
            TraceEnd::ReferenceStopped
        } else if let Some(g) = self.exited {
            TraceEnd::Exit(g)
        } else if self.opts.run_end == RunEnd::Stopped {
            TraceEnd::Stopped
        } else {
            TraceEnd::Unfinished { pc: self.hart.pc }
        };
        if let Some(n) = self.opts.groups {
            if n != s.groups && matches!(s.end, TraceEnd::Exit(_) | TraceEnd::Stopped) {
                s.end = TraceEnd::GroupCount { expected: n };
            }
        }
    }

    pub(super) fn step_group(&mut self, g: &Group, report: &mut dyn FnMut(&Mismatch)) {
        self.summary.checked += 1;
        let pre_pc = self.hart.pc;
        let pre = self.pre_state();
        // The length of the instruction for an increment: the traced instruction's, else the
        // one the reference executes.
        let len = match g.insn {
            Some((_, l)) => l,
            None => {
                let raw = self.hart.bus.fetch(pre_pc).unwrap_or(3);
                if raw & 3 == 3 {
                    4
                } else {
                    2
                }
            }
        };
        self.trace_diffs.clear();
        self.apply_shadow(g, len);
        let semihosting = self.is_semihosting_call(g);
        let exit_call = semihosting && self.semihosting_results(g, pre_pc);
        let with_alts = !self.alts.is_empty();
        let snap = with_alts.then(|| self.snapshot());
        if let Err(m) = self.run_reference(g, semihosting) {
            self.stop_reference(g, pre_pc, m, report);
            return;
        }
        if exit_call || self.hart.bus.exit.is_some() {
            self.exited = Some(self.summary.groups);
        }
        self.compare(g, pre_pc, &pre);
        if let (Some(snap), false) = (&snap, self.diffs.is_empty()) {
            // Try the instruction again from the reference's own values (see the module notes).
            let first = std::mem::take(&mut self.diffs);
            self.restore(snap);
            self.apply_alts();
            let retry_pre = self.pre_state();
            let shadow = (self.x, self.f, self.pc, self.priv_, self.csr.clone());
            self.adopt_alts(g, len);
            if self.run_reference(g, self.is_semihosting_call(g)).is_ok() {
                self.compare(g, pre_pc, &retry_pre);
            }
            if self.diffs.is_empty() {
                // The trace went on from the reference's values: the shadow keeps them where
                // this group did not write them, and nothing is reported here.
                self.alts.clear();
                self.copy_nondet(g);
                return;
            }
            (self.x, self.f, self.pc, self.priv_) = (shadow.0, shadow.1, shadow.2, shadow.3);
            self.csr = shadow.4;
            self.restore(snap);
            let _ = self.run_reference(g, semihosting);
            self.diffs = first;
            self.alts.clear();
        }
        if self.diffs.is_empty() {
            if with_alts {
                self.resolve_alts(g);
            }
        } else {
            self.summary.mismatches += 1;
            let insn =
                self.obs
                    .retired
                    .map(|r| r.insn)
                    .or(g.insn.map(|(i, _)| i))
                    .or_else(|| {
                        // A fault: the instruction at the pc (an interrupt has none).
                        match self.obs.trap {
                            Some(t) if !t.interrupt => self.hart.bus.fetch(pre_pc).map(|r| {
                                if r & 3 == 3 {
                                    r
                                } else {
                                    r & 0xffff
                                }
                            }),
                            _ => None,
                        }
                    });
            let text = match insn {
                Some(i) => disasm(i, pre_pc, self.xlen.bits()).to_string(),
                None => "interrupt".into(),
            };
            let m = Mismatch {
                group: self.summary.groups,
                offset: g.offset,
                pc: pre_pc,
                insn,
                disasm: text,
                diffs: std::mem::take(&mut self.diffs),
            };
            report(&m);
            self.resync(g);
        }
        self.copy_nondet(g);
    }

    pub(super) fn stop_reference(
        &mut self,
        g: &Group,
        pre_pc: u64,
        msg: String,
        report: &mut dyn FnMut(&Mismatch),
    ) {
        self.summary.mismatches += 1;
        self.summary.reference_stopped = Some(msg.clone());
        self.stopped = true;
        let insn = g.insn.map(|(i, _)| i);
        report(&Mismatch {
            group: self.summary.groups,
            offset: g.offset,
            pc: pre_pc,
            insn,
            disasm: insn
                .map(|i| disasm(i, pre_pc, self.xlen.bits()).to_string())
                .unwrap_or_else(|| "interrupt".into()),
            diffs: vec![Diff {
                element: "execution".into(),
                expected: format!("the reference stopped ({msg})"),
                traced: "the trace goes on".into(),
            }],
        });
    }
}
