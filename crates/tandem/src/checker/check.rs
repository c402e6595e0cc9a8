//! The procedure of 3.1 over a whole trace: the checker, its options, and the loop that reads
//! each group ([`group`](super::group)), applies it to the shadow state
//! ([`shadow`](super::shadow)), steps the reference ([`step`](super::step)), compares
//! ([`compare`](super::compare)), reports ([`report`](super::report)) and resynchronises
//! ([`resync`](super::resync)); the program load is checked on the way ([`init`](super::init)).

use super::compare::Compare;
use super::fast::{plain_group, scan_plain, ByteGroup, ByteGroups, Expect, FastRun, GroupRun};
use super::group::{Group, GroupReader, Next};
use super::init::{compare_init, Program};
use super::report::{CheckError, CheckSummary, Diff, Mismatch, TraceEnd};
use super::resync::{Alts, Snapshot};
use super::shadow::Shadow;
use super::step::{implicit_csrs, is_semihosting_call, semihosting_results};
use super::step::{CallResults, StepObserver, Stopped};
use crate::codec::{mask_bits, mem_op, Layout, Params};
use crate::meta::{Elements, RunEnd};
use rvtrace_image::Image;
use rvtrace_isa::disasm::disasm;
use rvtrace_isa::Xlen;
use rvtrace_sim::bus::Bus;
use rvtrace_sim::csr::mstatus;
use rvtrace_sim::{Hart, Stop};
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

/// The tandem verifier: a reference hart, a shadow state and the 3.1 procedure.
pub struct Checker {
    hart: Hart,
    opts: CheckOptions,
    shadow: Shadow,
    // Per-group scratch.
    obs: StepObserver,
    diffs: Vec<Diff>,
    /// Differences the trace shows by itself (not by comparison): reported with the group's.
    trace_diffs: Vec<Diff>,
    matched: Vec<bool>,
    alts: Alts,
    summary: CheckSummary,
    stopped: bool,
    /// An instruction group was read (the program load is over).
    running: bool,
    /// The group with the program's exit.
    exited: Option<u64>,
    program: Program,
    /// The pcs of a plain run of groups read ahead (`GroupRun::pcs`) and the bytes of a plain
    /// run's instructions.
    pcs: Vec<u64>,
    code: (u64, u64),
    /// Plain runs on (`fast.rs`).
    plain_runs: bool,
    /// Plain runs from the trace's bytes on (`fast.rs`, [`ByteGroups`]).
    byte_runs: bool,
    /// The plain groups found ahead in the bytes ([`BYTE_BATCH`]), and the trace's field
    /// widths.
    bytes_ahead: Vec<ByteGroup>,
    layout: Layout,
    /// The group of a byte run that the slow path decides, read again.
    one: Group,
}

/// Plain groups read ahead at most (`fast.rs`). Few enough that they are still in the first-level
/// data cache when their run compares them (callgrind's cache simulation, 400 k groups: 4.5 M
/// D1 misses with 256, 0.6 M with 32, for 35 host instructions more per group).
const BATCH: usize = 32;

/// Plain groups found ahead in the trace's bytes at most (a run's setup is shared by up to this
/// many groups; a group found takes 64 bytes of memory, its bytes stay in the reader's buffer).
const BYTE_BATCH: usize = 256;

/// Whether the reference's memory holds instruction `insn` of `len` bytes at `pc` (what it
/// fetches there untranslated).
#[inline(always)]
fn code_at(bus: &Bus, pc: u64, insn: u32, len: u8) -> bool {
    match bus.fetch(pc) {
        Some(raw) if len == 2 => raw & 0xffff == insn,
        Some(raw) => raw == insn,
        None => false,
    }
}

/// How a plain run ended ([`plain_step`]).
struct PlainEnd {
    /// Groups matched.
    k: usize,
    /// Group `k` did not match plainly.
    undecided: bool,
    stop: Stop,
    /// The [`implicit_csrs`] before the run.
    pre: [u64; 9],
}

/// Run the reference `hart` over `n` plain groups that `exp` expects (their instructions' bytes
/// in `code`), comparing each as it retires (`fast.rs`).
fn plain_step<E: Expect>(
    hart: &mut Hart,
    shadow: &mut Shadow,
    obs: &mut StepObserver,
    code: (u64, u64),
    exp: E,
    n: usize,
) -> PlainEnd {
    let pre = implicit_csrs(hart);
    // Every group has an instruction: an interrupt the trace does not show is held off
    // (as `StepObserver::step` holds it), and plain instructions do not read `mie`.
    let mie = hart.csr.mie;
    hart.csr.mie = 0;
    shadow.traced_csrs.clear();
    let ram_size = hart.bus.ram_size();
    let mut run = FastRun::new(exp, n, shadow, obs, code, ram_size);
    let stop = hart.run(&mut run, u64::MAX);
    let (k, undecided) = (run.k, run.undecided);
    hart.csr.mie = mie;
    PlainEnd {
        k,
        undecided,
        stop,
        pre,
    }
}

/// A step of the reference made in a plain run, for the slow path's comparison.
struct Stepped {
    /// The pc and the [`implicit_csrs`] before it.
    pre_pc: u64,
    pre: [u64; 9],
    /// How it ended.
    result: Result<(), Stopped>,
}

impl Checker {
    /// A checker with `hart` as the reference: the program of `image` loaded, semihosting off
    /// (its calls are taken from the trace), not run yet. The trace's initial memory is compared
    /// with `image`'s loadable contents.
    pub fn new(mut hart: Hart, image: &Image, opts: CheckOptions) -> Checker {
        hart.bus.console = Box::new(std::io::sink());
        Checker {
            shadow: Shadow::new(&mut hart, opts.params.flen),
            hart,
            opts,
            obs: StepObserver::default(),
            diffs: Vec::new(),
            trace_diffs: Vec::new(),
            matched: Vec::new(),
            alts: Alts::default(),
            summary: CheckSummary::default(),
            stopped: false,
            running: false,
            exited: None,
            program: Program::new(image),
            pcs: Vec::new(),
            code: (0, 0),
            plain_runs: true,
            byte_runs: true,
            bytes_ahead: vec![ByteGroup::default(); BYTE_BATCH],
            layout: Layout::new(&opts.params),
            one: Group::default(),
        }
    }

    /// Whether runs of common groups (an integer or memory instruction each, in the
    /// reference's memory where the trace says) are checked in one run of the reference, each
    /// instruction compared as it retires; on by default. Off, every group takes the general
    /// procedure: the answers are the same (`tests/campaign.rs` holds the two together), only
    /// slower.
    pub fn set_plain_runs(&mut self, on: bool) {
        self.plain_runs = on;
    }

    /// Whether plain runs (with [`Checker::set_plain_runs`] on) take groups in the form
    /// rvtrace's producer writes them straight from the trace's bytes, without reading them
    /// into groups; on by default. Off, they are read into groups first: the answers are the
    /// same (`tests/campaign.rs`), only slower.
    pub fn set_byte_runs(&mut self, on: bool) {
        self.byte_runs = on;
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
    fn absent(&self, e: Elements) -> bool {
        self.opts.absent.has(e)
    }

    /// Check the trace read from `src`, calling `report` for each mismatch. On an error, the
    /// partial summary is [`Checker::summary`].
    // (One call per trace; never inlined, so that profiles show the checker's cost as one
    // call: docs/perf/tandem-checker-profile.md.)
    #[inline(never)]
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

    fn check_groups<R: Read>(
        &mut self,
        rd: &mut GroupReader<R>,
        report: &mut dyn FnMut(&Mismatch),
    ) -> Result<(), CheckError> {
        // Plain groups read ahead (`fast.rs`), checked when the batch is full or before any
        // other unit; `batch[n]` is the unit being read.
        let mut batch: Vec<Group> = Vec::new();
        let mut n = 0;
        let xlen = self.shadow.xlen;
        loop {
            if n == 0 && self.running && self.byte_runs {
                self.run_bytes(rd, report)?;
            }
            if n == batch.len() {
                batch.push(Group::default());
            }
            let next = match rd.next(&mut batch[n]) {
                Ok(next) => next,
                Err(e) => {
                    // What came before the malformed bytes is checked (the partial summary).
                    self.run_groups(&batch[..n], report);
                    return Err(e);
                }
            };
            if matches!(next, Next::Unit) && self.running && plain_group(&batch[n], xlen) {
                n += 1;
                if n == BATCH {
                    self.run_groups(&batch[..n], report);
                    n = 0;
                }
                continue;
            }
            self.run_groups(&batch[..n], report);
            let g = &batch[n];
            n = 0;
            match next {
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
            if g.hart_reset || g.state_init || !g.grouped {
                if g.grouped {
                    self.summary.groups += 1;
                }
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
                self.apply_init(g, report);
                if g.grouped {
                    self.summary.init += 1;
                } else {
                    self.summary.outside += 1;
                }
                continue;
            }
            self.insn_group(g, None, report);
        }
    }

    /// Plain groups read ahead, in order: runs of them in one step of the reference where the
    /// plain run may be used (`fast.rs`), the others one by one.
    fn run_groups(&mut self, groups: &[Group], report: &mut dyn FnMut(&Mismatch)) {
        let mut i = 0;
        while i < groups.len() {
            let n = self.plain_run_len(&groups[i..]);
            let done = if n > 0 {
                self.run_plain(&groups[i..i + n], report)
            } else {
                0
            };
            if done == 0 {
                self.insn_group(&groups[i], None, report);
                i += 1;
            } else {
                i += done;
            }
        }
    }

    /// Plain groups straight from the trace's bytes, as long as they come in the form the
    /// producer writes (`fast.rs`, [`scan_plain`]): each run's groups are taken from the reader
    /// without reading them into [`Group`]s; a group that does not match plainly is read again
    /// and goes through the slow path with the step made. Returns at the first other unit (or
    /// a plain group the reference may not run), which the caller reads.
    fn run_bytes<R: Read>(
        &mut self,
        rd: &mut GroupReader<R>,
        report: &mut dyn FnMut(&Mismatch),
    ) -> Result<(), CheckError> {
        let xlen = self.shadow.xlen;
        loop {
            if !self.plain_ready() {
                return Ok(());
            }
            let bus = &self.hart.bus;
            // Instructions found at their pcs in this scan (by pc, direct-mapped): a loop's
            // are looked up in memory once. The memory does not change during the scan, and
            // a plain instruction's bits give its length. (Empty: `u32::MAX`, never plain.)
            let mut found = [(0u64, u32::MAX); 64];
            let (n, code) = scan_plain(
                rd.ahead(),
                &self.layout,
                xlen,
                self.hart.pc,
                &mut self.bytes_ahead,
                #[inline(always)]
                |pc, insn, len| {
                    let seen = &mut found[(pc >> 1) as usize % 64];
                    if *seen == (pc, insn) {
                        return true;
                    }
                    let at = code_at(bus, pc, insn, len);
                    if at {
                        *seen = (pc, insn);
                    }
                    at
                },
            );
            if n == 0 {
                return Ok(());
            }
            self.code = code;
            let end = plain_step(
                &mut self.hart,
                &mut self.shadow,
                &mut self.obs,
                self.code,
                ByteGroups(&self.bytes_ahead[..n]),
                n,
            );
            let k = end.k;
            rd.skip(match k {
                0 => 0,
                k => self.bytes_ahead[k - 1].end,
            });
            // (Group `k`'s pc, where the run did not match it.)
            let pc_k = self.bytes_ahead.get(k).map_or(0, |g| g.pc);
            if let Some(stepped) = self.plain_end(end, n, pc_k) {
                // Group `k`, read as the slow path reads it (a plain group: `scan_plain`).
                let mut g = std::mem::take(&mut self.one);
                let read = rd.next(&mut g);
                if let Err(e) = read {
                    self.one = g;
                    return Err(e);
                }
                self.insn_group(&g, Some(stepped), report);
                self.one = g;
            }
        }
    }

    /// Whether the reference may take a plain run from where it is: the shadow and the
    /// reference agree on everything a plain run compares, and the instructions the trace gives
    /// are what it fetches (else the slow path decides, and resynchronises).
    fn plain_ready(&self) -> bool {
        let h = &self.hart;
        let sh = &self.shadow;
        if !self.plain_runs
            || self.stopped
            || self.exited.is_some()
            || !self.alts.is_empty()
            || h.bus.exit.is_some()
        {
            return false;
        }
        // The code read below is what the reference fetches only without address translation
        // (privileged ISA 20211203, 4.1.11 "Supervisor Address Translation and Protection
        // (satp) Register": Bare; M-mode fetches are never translated, MPRV aside).
        let satp_mode = match h.xlen {
            Xlen::Rv32 => h.csr.satp >> 31,
            Xlen::Rv64 => h.csr.satp >> 60,
        };
        if satp_mode != 0 && (h.priv_ != 3 || h.csr.mstatus & mstatus::MPRV != 0) {
            return false;
        }
        let flen = sh.flen;
        let fprs_agree = sh.f == h.f
            || self.opts.absent.has(Elements::FPR)
            || flen == 0
            || (0..32).all(|r| mask_bits(sh.f[r], flen) == mask_bits(h.f[r], flen));
        sh.pc == h.pc && sh.priv_ == h.priv_ && sh.x == h.x && fprs_agree
    }

    /// How many of the plain groups `items` (instruction, its length, the pc after it when
    /// given in full) have their instructions in the reference's memory at the pcs the trace
    /// gives them, from where the reference is (into `self.pcs`, their bytes into `self.code`).
    fn check_code(&mut self, items: impl Iterator<Item = (u32, u8, Option<u64>)>) -> usize {
        let h = &self.hart;
        self.pcs.clear();
        let mut pc = h.pc;
        self.pcs.push(pc);
        let (mut lo, mut hi) = (u64::MAX, 0);
        for (insn, len, new_pc) in items {
            if !code_at(&h.bus, pc, insn, len) {
                break;
            }
            lo = lo.min(pc);
            hi = hi.max(pc + len as u64);
            pc = match new_pc {
                Some(p) => p,
                None => pc.wrapping_add(len as u64),
            } & self.shadow.xmask;
            self.pcs.push(pc);
        }
        self.code = (lo, hi);
        self.pcs.len() - 1
    }

    /// How many of `groups` (plain ones) the reference may run as one plain run from where it
    /// is ([`Checker::plain_ready`], [`Checker::check_code`]).
    fn plain_run_len(&mut self, groups: &[Group]) -> usize {
        if !self.plain_ready() {
            return 0;
        }
        self.check_code(groups.iter().map_while(|g| {
            let (insn, len) = g.insn?;
            Some((insn, len, g.new_pc))
        }))
    }

    /// Check plain `groups` (their pcs in `self.pcs`) in one run of the reference; the number
    /// of groups done (0: none, the reference did not move).
    fn run_plain(&mut self, groups: &[Group], report: &mut dyn FnMut(&Mismatch)) -> usize {
        let end = plain_step(
            &mut self.hart,
            &mut self.shadow,
            &mut self.obs,
            self.code,
            GroupRun {
                groups,
                pcs: &self.pcs,
            },
            groups.len(),
        );
        let k = end.k;
        if let Some(stepped) = self.plain_end(end, groups.len(), self.pcs[k]) {
            self.insn_group(&groups[k], Some(stepped), report);
            return k + 1;
        }
        k
    }

    /// The end of a plain run of `n` groups: the groups it matched are counted, and where group
    /// `k` did not match plainly, or the reference stopped in it, the step that was made, for
    /// the slow path's comparison (`pc_k`: group `k`'s pc).
    fn plain_end(&mut self, end: PlainEnd, n: usize, pc_k: u64) -> Option<Stepped> {
        let k = end.k;
        self.summary.groups += k as u64;
        self.summary.checked += k as u64;
        (k < n && (end.undecided || end.stop != Stop::Requested)).then_some(Stepped {
            pre_pc: pc_k,
            pre: end.pre,
            result: match end.stop {
                Stop::Requested => Ok(()),
                stop => Err(Stopped(stop)),
            },
        })
    }

    /// An instruction, trap or interrupt group (after the program load); `stepped`: the
    /// reference made its step already (a plain run).
    fn insn_group(
        &mut self,
        g: &Group,
        stepped: Option<Stepped>,
        report: &mut dyn FnMut(&Mismatch),
    ) {
        self.summary.groups += 1;
        if !self.running {
            self.finish_program(report);
            self.running = true;
        }
        if self.stopped {
            return;
        }
        if let Some(e) = self.exited {
            // Nothing runs after the program's exit.
            self.stop_reference(
                g,
                self.hart.pc,
                format!("the program exited in group {e}"),
                report,
            );
            return;
        }
        self.step_group(g, stepped, report);
    }

    /// The end of the trace after a whole group: it must be the program's end.
    fn finish_trace(&mut self, report: &mut dyn FnMut(&Mismatch)) {
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

    /// The program load is over: the trace's initial memory against the ELF's.
    fn finish_program(&mut self, report: &mut dyn FnMut(&Mismatch)) {
        let expected = !self.absent(Elements::INIT) && !self.absent(Elements::MEM);
        let (check, mismatch) = self.program.verdict(
            expected,
            self.summary.groups,
            self.summary.bytes,
            self.hart.pc,
        );
        self.summary.program = check;
        if let Some(m) = mismatch {
            self.summary.mismatches += 1;
            report(&m);
        }
    }

    /// A state initialization group, a hart reset, or updates outside any group: applied to
    /// the shadow and to the reference alike (chapter 3: "changes to program state outside of
    /// the processor that must be copied to the shadow state but cannot be modeled"). Before
    /// the first instruction (the program load), what they set is compared with what the
    /// reference loaded: registers with its reset state, memory with the ELF.
    fn apply_init(&mut self, g: &Group, report: &mut dyn FnMut(&Mismatch)) {
        let mut diffs = Vec::new();
        self.shadow.apply(g, 0, &mut diffs);
        diffs.extend(g.ambiguity());
        if !self.running {
            compare_init(&self.shadow, &mut self.hart, g, &mut diffs);
        }
        let sh = &mut self.shadow;
        let h = &mut self.hart;
        if !self.opts.absent.has(Elements::GPR) {
            sh.x[0] = 0;
            h.x = sh.x;
        }
        if !self.opts.absent.has(Elements::FPR) {
            h.f = sh.f;
        }
        if !self.opts.absent.has(Elements::PC) {
            h.pc = sh.pc;
        }
        if !self.opts.absent.has(Elements::PRIV) {
            h.priv_ = sh.priv_;
        }
        if !self.opts.absent.has(Elements::CSR) {
            for &c in &sh.traced_csrs {
                sh.copy_csr_to(c, h);
            }
        }
        for m in &g.mems {
            if m.op != mem_op::STORE {
                // State initialization writes memory (chapter 3); nothing else is meant there.
                diffs.push(Diff {
                    element: format!("memory request at 0x{:x}", m.addr),
                    expected: "a store (state initialization)".into(),
                    traced: mem_op::name(m.op).into(),
                });
                continue;
            }
            if let Some(d) = m.data {
                let n = 1usize << m.size;
                let in_ram = self.hart.bus.ram_offset(m.addr, n as u64).is_some();
                if !self.running {
                    let (grp, off) = (self.summary.groups, g.offset);
                    self.program.store(m.addr, n, d, in_ram, grp, off);
                } else if !in_ram {
                    diffs.push(Diff {
                        element: format!("memory at 0x{:x} ({n} bytes)", m.addr),
                        expected: "the hart's memory".into(),
                        traced: "a store outside it".into(),
                    });
                }
                let _ = self.hart.bus.write_ram(m.addr, &d.to_le_bytes()[..n]);
            }
        }
        self.shadow
            .copy_nondet_to(g, &mut self.hart, self.opts.absent);
        if !diffs.is_empty() {
            self.summary.mismatches += 1;
            report(&Mismatch {
                group: self.summary.groups,
                offset: g.offset,
                pc: self.hart.pc,
                insn: None,
                disasm: if g.grouped {
                    "state initialization".into()
                } else {
                    "updates outside any group".into()
                },
                diffs,
            });
        }
    }

    /// Compare shadow and reference after the step (3.1 step 4) into `self.diffs`.
    #[inline]
    fn compare(&mut self, g: &Group, pre_pc: u64, pre: &[u64; 9]) {
        Compare {
            hart: &mut self.hart,
            sh: &self.shadow,
            obs: &self.obs,
            trace_diffs: &self.trace_diffs,
            absent: self.opts.absent,
            out: &mut self.diffs,
            matched: &mut self.matched,
        }
        .run(g, pre_pc, pre);
    }

    /// One instruction, trap or interrupt group: 3.1 steps 1 to 5. With `stepped`, the
    /// reference made step 3 already (in a plain run, with its events in `self.obs`).
    fn step_group(
        &mut self,
        g: &Group,
        stepped: Option<Stepped>,
        report: &mut dyn FnMut(&Mismatch),
    ) {
        self.summary.checked += 1;
        let (pre_pc, pre) = match &stepped {
            Some(s) => (s.pre_pc, s.pre),
            None => (self.hart.pc, implicit_csrs(&self.hart)),
        };
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
        self.shadow.apply(g, len, &mut self.trace_diffs);
        let (absent, xmask) = (self.opts.absent, self.shadow.xmask);
        let semihosting = is_semihosting_call(&self.hart, g, absent, xmask);
        let exit_call = semihosting
            && match semihosting_results(&self.hart, &self.shadow, g, absent, &mut self.trace_diffs)
            {
                CallResults::Exit => true,
                CallResults::Known => false,
                CallResults::Unknown => {
                    self.summary.unknown_results += 1;
                    if self.summary.first_unknown.is_none() {
                        self.summary.first_unknown = Some((self.summary.groups, pre_pc));
                    }
                    false
                }
            };
        let with_alts = !self.alts.is_empty();
        let snap = with_alts.then(|| Snapshot::take(&self.hart, xmask));
        let result = match stepped {
            Some(s) => s.result,
            None => self.obs.step(&mut self.hart, &self.shadow, g, semihosting),
        };
        if let Err(m) = result {
            self.stop_reference(g, pre_pc, m.to_string(), report);
            return;
        }
        if exit_call || self.hart.bus.exit.is_some() {
            self.exited = Some(self.summary.groups);
        }
        self.compare(g, pre_pc, &pre);
        if let (Some(snap), false) = (&snap, self.diffs.is_empty()) {
            // Try the instruction again from the reference's own values (see `resync`).
            let first = std::mem::take(&mut self.diffs);
            snap.restore(&mut self.hart);
            self.alts.apply(&mut self.hart, self.shadow.xlen);
            let retry_pre = implicit_csrs(&self.hart);
            let sh = &self.shadow;
            let saved = (sh.x, sh.f, sh.pc, sh.priv_, sh.csr.clone());
            self.alts.adopt(&mut self.shadow, g, len);
            let again = is_semihosting_call(&self.hart, g, absent, xmask);
            if self
                .obs
                .step(&mut self.hart, &self.shadow, g, again)
                .is_ok()
            {
                self.compare(g, pre_pc, &retry_pre);
            }
            if self.diffs.is_empty() {
                // The trace went on from the reference's values: the shadow keeps them where
                // this group did not write them, and nothing is reported here.
                self.alts.clear();
                self.shadow.copy_nondet_to(g, &mut self.hart, absent);
                return;
            }
            let sh = &mut self.shadow;
            (sh.x, sh.f, sh.pc, sh.priv_) = (saved.0, saved.1, saved.2, saved.3);
            sh.csr = saved.4;
            snap.restore(&mut self.hart);
            let _ = self.obs.step(&mut self.hart, &self.shadow, g, semihosting);
            self.diffs = first;
            self.alts.clear();
        }
        if self.diffs.is_empty() {
            if with_alts {
                let groups = self.summary.groups;
                self.alts.resolve(g, &self.shadow.traced_csrs, groups);
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
                Some(i) => disasm(i, pre_pc, self.shadow.xlen.bits()).to_string(),
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
            let groups = self.summary.groups;
            self.alts.resync(
                &mut self.hart,
                &mut self.shadow,
                &self.obs,
                g,
                absent,
                groups,
            );
        }
        self.shadow.copy_nondet_to(g, &mut self.hart, absent);
    }

    /// The reference stopped (`msg`) while the trace goes on: reported once, nothing more is
    /// stepped.
    fn stop_reference(
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
                .map(|i| disasm(i, pre_pc, self.shadow.xlen.bits()).to_string())
                .unwrap_or_else(|| "interrupt".into()),
            diffs: vec![Diff {
                element: "execution".into(),
                expected: format!("the reference stopped ({msg})"),
                traced: "the trace goes on".into(),
            }],
        });
    }
}
