//! Following the execution path (`decoder.adoc` `follow_execution_path`, `next_pc`), with the
//! branch outcomes and the return address stack.

use rvtrace_flow::FlowSink;
use rvtrace_isa::CfClass;

use crate::code::Ent;
use crate::predict::{bpred_next, table_index};

use super::branches::BSeg;
use super::error::DecodeError;
use super::Decoder;

/// The fields of the packet being followed that the stop conditions look at.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Ctx {
    /// A format 3 packet.
    pub(super) sync: bool,
    pub(super) notify: bool,
    pub(super) updiscon: bool,
    pub(super) irreport: bool,
    pub(super) irdepth: u64,
    pub(super) privilege: u64,
}

impl<'a> Decoder<'a> {
    // ---------------------------------------------------------------------------------------
    // Branch information.

    pub(super) fn add_map_bits(&mut self, bits: u64, n: u32) -> Result<(), DecodeError> {
        self.s.bq.push_map(bits, n)
    }

    pub(super) fn add_predicted(&mut self, n: u64, fail: bool) -> Result<(), DecodeError> {
        self.s.bq.push_pred(n)?;
        if fail {
            self.s.bq.push_fail()?;
        }
        Ok(())
    }

    #[inline]
    pub(super) fn pending(&self) -> u64 {
        self.s.bq.total
    }

    #[inline]
    pub(super) fn unprocessed(&self, at_branch: bool) -> bool {
        self.pending() != at_branch as u64
    }

    /// The outcome of the oldest branch in the queue, for the branch at `self.cur.pc`, without
    /// taking it.
    pub(super) fn peek_branch(&self) -> Option<bool> {
        let predicted = self.s.bpred[self.predictor_index(self.cur.pc)] & 2 != 0;
        match *self.s.bq.front()? {
            BSeg::Map { bits, .. } => Some(bits & 1 == 0),
            BSeg::Pred(_) => Some(predicted),
            BSeg::Fail => Some(!predicted),
        }
    }

    /// The predictor entry for the branch at `pc` (entry 0, never updated, without branch
    /// prediction).
    #[inline]
    pub(super) fn predictor_index(&self, pc: u64) -> usize {
        if self.s.options.branch_prediction && self.params.bpred_size_p > 0 {
            table_index(pc, self.params.bpred_size_p)
        } else {
            0
        }
    }

    /// `decoder.adoc` `is_taken_branch` for the branch at `pc`, with the predictor. Inlined
    /// into the walk's two callers: a call per branch cost about as much as the rest of the
    /// branch's step.
    #[inline(always)]
    pub(super) fn take_branch(&mut self, pc: u64) -> Result<bool, DecodeError> {
        let bp = self.s.options.branch_prediction && self.params.bpred_size_p > 0;
        let idx = if bp {
            table_index(pc, self.params.bpred_size_p)
        } else {
            0
        };
        let predicted = self.s.bpred[idx] & 2 != 0;
        let Some(taken) = self.s.bq.take(predicted) else {
            return Err(DecodeError::NoBranchInfo(pc));
        };
        if bp {
            self.s.bpred[idx] = bpred_next(self.s.bpred[idx], taken);
        }
        Ok(taken)
    }

    // ---------------------------------------------------------------------------------------
    // Return address stack.

    pub(super) fn push_return(&mut self, link: u64) {
        if self.s.options.implicit_return {
            self.cur.stack.push(link);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Following the execution path.

    /// `decoder.adoc` `follow_execution_path` to `address`.
    pub(super) fn follow<S: FlowSink + ?Sized>(
        &mut self,
        address: u64,
        k: &Ctx,
        s: &mut S,
    ) -> Result<(), DecodeError> {
        let previous_address = self.cur.pc;
        loop {
            let inferred = self.s.inferred_address;
            let to = if inferred { previous_address } else { address };
            match self.follow_blocks(to, k, inferred, s)? {
                Some(true) => return Ok(()),
                Some(false) => continue,
                None => {}
            }
            if inferred {
                let (stop_here, _) = self.step(previous_address, k, true, s)?;
                if stop_here {
                    self.s.inferred_address = false;
                }
            } else {
                let (stop, _) = self.step(address, k, false, s)?;
                if stop {
                    return Ok(());
                }
            }
            if self.stats.instructions - self.insns_at_packet > self.limits.max_insns_per_packet {
                return Err(DecodeError::Runaway(self.cur.pc));
            }
        }
    }

    /// The common steps of [`follow`](Decoder::follow), each as [`step`](Decoder::step) takes it
    /// (with `inferred`) but with each entry looked up once: runs (that do not hold `address`,
    /// unless `inferred`), conditional branches and jumps with a static target (not to
    /// themselves), with `check_stop` (not when `inferred`) only where it can stop (at
    /// `address`, or at the last branch with `stop_at_last_branch`) and the runaway check after
    /// each step. `Some(stop)`: it took steps, the last of which stopped (`true`) or not;
    /// `None`: it took none, the next step is `step`'s.
    #[inline]
    pub(super) fn follow_blocks<S: FlowSink + ?Sized>(
        &mut self,
        address: u64,
        k: &Ctx,
        inferred: bool,
        s: &mut S,
    ) -> Result<Option<bool>, DecodeError> {
        let mut e = match self.cur.code().ent(self.cur.pc) {
            Some(e) if e.len > 0 => *e,
            _ => return Ok(None),
        };
        let mut walked = None;
        loop {
            let pc = self.cur.pc;
            if let Some(run) = self.cur.run(pc, &e) {
                let x = self.cur.end_of(&run);
                if !inferred && self.r_ok_mid(pc, x, address) {
                    return Ok(walked);
                }
                let ex = match self.cur.arrival(x) {
                    Some(ex) if ex.len > 0 => *ex,
                    _ => return Ok(walked),
                };
                let first = pc.wrapping_add(e.len as u64);
                self.arrive(first, run.count, x, &ex, run.last(), s);
                e = ex;
            } else {
                // decoder.adoc next_pc, its cases without a stop.
                let seq = pc.wrapping_add(e.len as u64) & self.cur.mask();
                let next = match e.class {
                    CfClass::Branch => {
                        let taken = self.take_branch(pc)?;
                        self.cur.ranges.resolve(taken);
                        match taken {
                            true => self.cur.target(pc, &e).unwrap_or(seq),
                            false => seq,
                        }
                    }
                    CfClass::InferableCall
                    | CfClass::InferableJump
                    | CfClass::OtherInferableJump => {
                        let t = self.cur.target(pc, &e).unwrap_or(seq);
                        if t == pc {
                            return Ok(walked);
                        }
                        self.jumps += 1;
                        if self.jumps > self.limits.max_jumps_per_packet {
                            return Err(DecodeError::Runaway(pc));
                        }
                        if e.class.is_call() {
                            self.push_return(seq);
                        }
                        t
                    }
                    _ => return Ok(walked),
                };
                let en = *self.cur.arrival_entry(next)?;
                self.arrive(next, 1, next, &en, pc, s);
                e = en;
            }
            let at = self.cur.pc;
            let stop = if inferred {
                false
            } else if at == address
                || (self.s.stop_at_last_branch && e.class == CfClass::Branch && self.pending() == 1)
            {
                self.check_stop(address, k, false)?
            } else {
                false
            };
            if stop {
                return Ok(Some(true));
            }
            walked = Some(false);
            if self.stats.instructions - self.insns_at_packet > self.limits.max_insns_per_packet {
                return Err(DecodeError::Runaway(self.cur.pc));
            }
        }
    }

    /// One step of the path from `self.cur.pc`: either a run of sequential instructions or one
    /// control transfer. With `inferred` (following to the previous address), returns
    /// `(stop_here, _)` from `next_pc`; otherwise returns `(true, _)` when a stop condition of
    /// `follow_execution_path` holds.
    pub(super) fn step<S: FlowSink + ?Sized>(
        &mut self,
        address: u64,
        k: &Ctx,
        inferred: bool,
        s: &mut S,
    ) -> Result<(bool, ()), DecodeError> {
        let pc = self.cur.pc;
        let e = *self.cur.entry(pc)?;
        if let Some(run) = self.cur.run(pc, &e) {
            let first = pc.wrapping_add(e.len as u64);
            // Sequential instructions after pc up to the run's end X.
            let x = self.cur.end_of(&run);
            if !inferred && self.r_ok_mid(pc, x, address) {
                // The reported address lies inside this run: maybe stop there.
                if let Some((prev, n)) = self.cur.code().path_to(pc, address) {
                    let ea = *self.cur.arrival_entry(address)?;
                    if self.stop_ok(address, address, &ea, k, false) {
                        self.arrive(first, n, address, &ea, prev, s);
                        return Ok((self.check_stop(address, k, false)?, ()));
                    }
                }
            }
            let ex = *self.cur.arrival_entry(x)?;
            self.arrive(first, run.count, x, &ex, run.last(), s);
            if inferred {
                return Ok((false, ()));
            }
            return Ok((self.check_stop(address, k, false)?, ()));
        }
        // A control transfer at pc: decoder.adoc next_pc.
        let (next, stop_here) = self.next_pc(pc, &e, address, k, inferred)?;
        let en = *self.cur.arrival_entry(next)?;
        self.arrive(next, 1, next, &en, pc, s);
        if inferred {
            return Ok((stop_here, ()));
        }
        Ok((self.check_stop(address, k, stop_here)?, ()))
    }

    /// Whether `address` is strictly inside the run (pc, x).
    #[inline]
    pub(super) fn r_ok_mid(&self, pc: u64, x: u64, address: u64) -> bool {
        address > pc && address < x
    }

    /// Would the stop conditions hold at `at` (for a position inside a run, where the branch
    /// check cannot apply)?
    pub(super) fn stop_ok(
        &self,
        at: u64,
        address: u64,
        e: &Ent,
        k: &Ctx,
        _stop_here: bool,
    ) -> bool {
        if at != address {
            return false;
        }
        let unprocessed = self.unprocessed(e.class == CfClass::Branch);
        if !k.sync {
            !self.s.stop_at_last_branch && !unprocessed && self.stops_at_address(k)
        } else {
            !unprocessed && k.privilege == self.s.privilege
        }
    }

    /// The stop conditions of `follow_execution_path` at `self.cur.pc` (just reported).
    #[inline]
    pub(super) fn check_stop(
        &mut self,
        address: u64,
        k: &Ctx,
        stop_here: bool,
    ) -> Result<bool, DecodeError> {
        let pc = self.cur.pc;
        let e = *self.cur.code().ent(pc).ok_or(DecodeError::Unmapped(pc))?;
        let at_branch = e.class == CfClass::Branch;
        if self.s.stop_at_last_branch && at_branch && self.pending() == 1 {
            // Reached the final branch: stop before it (its outcome is known but whether the
            // next instruction retires is not).
            self.s.stop_at_last_branch = false;
            return Ok(true);
        }
        if stop_here {
            if self.unprocessed(at_branch) {
                return Err(DecodeError::UnprocessedBranches(pc));
            }
            return Ok(true);
        }
        if pc != address {
            return Ok(false);
        }
        let unprocessed = self.unprocessed(at_branch);
        if !k.sync {
            if self.s.stop_at_last_branch || unprocessed || !self.stops_at_address(k) {
                return Ok(false);
            }
            // decoder.adoc also requires that the previous instruction is not an uninferable
            // discontinuity; a taken one has already stopped (stop_here), so here it can only
            // have been inferred (implicit return, sequentially inferable jump), which rvtrace's
            // encoder reports like any other instruction. Without notify, the stop is
            // tentative (sec:updiscon: the reported instruction may occur again after an
            // uninferable discontinuity).
            if !k.notify {
                self.s.inferred_address = true;
            }
            Ok(true)
        } else {
            let last_xret = self
                .cur
                .ent_before(self.last_pc())
                .is_some_and(|l| l.class == CfClass::TrapReturn);
            Ok(!unprocessed && (k.privilege == self.s.privilege || last_xret))
        }
    }

    /// Whether a format 0/1/2 packet lets the decoder stop on reaching its address with every
    /// branch processed (not as the target of an uninferable discontinuity). rvtrace (see the
    /// crate README): with *notify*, yes, at the depth *irdepth* when *irreport* is set; without
    /// *notify*, tentatively (`sec:updiscon` cases 1 and 3) unless *updiscon* says the address
    /// follows an uninferable discontinuity and a format 3 is next (case 2), or *irreport* says
    /// it follows a return that failed its prediction (`sec:irxx`: the decoder stops at that
    /// return).
    pub(super) fn stops_at_address(&self, k: &Ctx) -> bool {
        if k.notify {
            !k.irreport || k.irdepth == self.cur.stack.len() as u64
        } else {
            !k.updiscon && !k.irreport
        }
    }

    /// `decoder.adoc` `next_pc` for the control transfer at `pc`: the next pc and `stop_here`.
    pub(super) fn next_pc(
        &mut self,
        pc: u64,
        e: &Ent,
        address: u64,
        k: &Ctx,
        inferred: bool,
    ) -> Result<(u64, bool), DecodeError> {
        let class = e.class;
        let seq = pc.wrapping_add(e.len as u64) & self.cur.mask();
        let mut stop_here = false;
        let next = match class {
            CfClass::Branch => {
                let taken = self.take_branch(pc)?;
                self.cur.ranges.resolve(taken);
                match taken {
                    true => self.cur.target(pc, e).unwrap_or(seq),
                    false => seq,
                }
            }
            CfClass::TableJump | CfClass::TableCall => return Err(DecodeError::TableJump(pc)),
            c if c.is_inferable() => {
                self.jumps += 1;
                if self.jumps > self.limits.max_jumps_per_packet {
                    return Err(DecodeError::Runaway(pc));
                }
                let t = self.cur.target(pc, e).unwrap_or(seq);
                if t == pc {
                    // A jump to itself never ends: stop (as the reference decoder model does).
                    stop_here = true;
                }
                t
            }
            c if c.is_uninferable_discon() => {
                let depth = self.cur.stack.len() as u64;
                let sij = if self.s.options.sijump && c.is_uninferable() {
                    self.sequential_target(pc)
                } else {
                    None
                };
                if let Some(t) = sij {
                    self.jumps += 1;
                    t
                } else if self.s.options.implicit_return
                    && c.is_return()
                    && depth > 0
                    && !self.reported_x5_jump(pc, e)
                    && (inferred || !self.failed_return(k, address, depth))
                {
                    self.jumps += 1;
                    if self.jumps > self.limits.max_jumps_per_packet {
                        return Err(DecodeError::Runaway(pc));
                    }
                    self.cur.stack.pop().unwrap_or(seq)
                } else {
                    // decoder.adoc raises this error also while following the previous
                    // packet's path to the second occurrence of its address (inferred_address),
                    // where stop_at_last_branch is already the new packet's: that discontinuity
                    // is the previous packet's.
                    if self.s.stop_at_last_branch && !inferred {
                        return Err(DecodeError::UnexpectedDiscontinuity(pc));
                    }
                    if self.s.options.implicit_return && c.is_return() && depth > 0 {
                        if !self.reported_x5_jump(pc, e) {
                            // A return that failed the prediction consumes its stack entry
                            // (rvtrace's encoder does the same).
                            self.cur.stack.pop();
                        } else if self.cur.stack.top() == Some(address) {
                            // A reported `c.jr x5` that does return (millicode `jr t0`).
                            self.cur.stack.pop();
                        }
                    }
                    stop_here = true;
                    address
                }
            }
            _ => seq,
        };
        if class.is_call() {
            self.push_return(seq);
        }
        Ok((next, stop_here))
    }

    /// Whether the return now at the top of the path (stack depth `depth`) is the one the
    /// packet reports as having failed its prediction: *irreport* without *notify*, *irdepth* =
    /// `depth`, a predicted target other than the reported address, and no branch left before
    /// the reported address (rvtrace's encoder makes the first such return the failed one; see
    /// the crate README).
    pub(super) fn failed_return(&self, k: &Ctx, address: u64, depth: u64) -> bool {
        if !k.irreport || k.notify || k.irdepth != depth {
            return false;
        }
        if self.cur.stack.top() == Some(address) {
            return false;
        }
        let at_branch = self
            .cur
            .code()
            .ent(address)
            .is_some_and(|e| e.class == CfClass::Branch);
        !self.unprocessed(at_branch)
    }

    /// True for `c.jr x5` with `reference_x5_jumps` set: the reference encoder reports its
    /// target, so it is not an implicit return ([`super::DecoderConfig::reference_x5_jumps`]).
    pub(super) fn reported_x5_jump(&self, pc: u64, e: &Ent) -> bool {
        // c.jr x5 = 0x8282 (RVC quadrant 2, funct4 1000, rs1 = x5, rs2 = 0).
        self.reference_x5_jumps && e.len == 2 && self.cur.image().fetch(pc) == Some(0x8282)
    }

    /// The target of a sequentially inferable jump at `pc` (`decoder.adoc`
    /// `is_sequential_jump` / `sequential_jump_target`), if it is one.
    pub(super) fn sequential_target(&self, pc: u64) -> Option<u64> {
        self.cur.sequential_target(pc)
    }
}
