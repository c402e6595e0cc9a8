//! The rules per packet format (`decoder.adoc` `process_te_inst`, `process_support`).

use rvtrace_flow::{FlowElement, FlowSink, LossReason, SyncReason};
use rvtrace_isa::CfClass;

use crate::codec::te_inst::{QualStatus, SyncFields};
use crate::codec::TeInst;
use crate::params::IOptions;
use crate::predict::{table_index, BPRED_INIT};

use super::error::DecodeError;
use super::state::PendingTrap;
use super::walk::Ctx;
use super::Decoder;

impl<'a> Decoder<'a> {
    // ---------------------------------------------------------------------------------------
    // Packets.

    /// Process one `te_inst` packet found at byte `offset`.
    pub fn packet<S: FlowSink + ?Sized>(&mut self, offset: u64, pkt: &TeInst, s: &mut S) {
        self.flush_errors(offset, s);
        self.stats.packets += 1;
        self.jumps = 0;
        self.insns_at_packet = self.stats.instructions;
        if let Err(e) = self.process(offset, pkt, s) {
            self.lose(offset, e.loss_reason(), s);
        }
    }

    pub(super) fn process<S: FlowSink + ?Sized>(
        &mut self,
        offset: u64,
        pkt: &TeInst,
        s: &mut S,
    ) -> Result<(), DecodeError> {
        let p = self.params;
        match *pkt {
            TeInst::Support(sp) => {
                self.s.options = IOptions::from_field(sp.ioptions, p.options_layout);
                if sp.ienable {
                    self.s.enabled = true;
                }
                match sp.qual_status {
                    QualStatus::NoChange => {}
                    QualStatus::TraceLost => {
                        self.loss(
                            offset,
                            None,
                            LossReason::Overflow("the encoder lost packets (trace_lost)".into()),
                            s,
                        );
                        self.reset_sync();
                    }
                    QualStatus::EndedRep | QualStatus::EndedNtr => {
                        if self.s.start_of_trace {
                            self.start_lost(offset, s);
                        }
                        if sp.qual_status == QualStatus::EndedNtr
                            && self.s.inferred_address
                            && !self.s.start_of_trace
                        {
                            // decoder.adoc process_support: the final instruction is the next
                            // occurrence of the reported address.
                            let prev = self.cur.pc;
                            self.s.inferred_address = false;
                            loop {
                                if self.step(prev, &Ctx::default(), true, s)?.0 {
                                    break;
                                }
                            }
                        }
                        if let Some(t) = self.s.pending_trap.take() {
                            self.emit_trap(&t, None, s);
                        }
                        self.emit(FlowElement::End { offset }, s);
                        self.s.ended = true;
                        // Qualification ended with the encoder still enabled (a filter): the
                        // next synchronisation packet restarts trace, no support packet needed
                        // (`payload.adoc` `sec:format33`: one before the first sync "when trace
                        // is enabled").
                        self.s.enabled = sp.ienable;
                        self.reset_sync();
                    }
                }
                Ok(())
            }
            TeInst::Context {
                privilege,
                time,
                context,
            } => {
                if self.s.start_of_trace {
                    self.skip(offset);
                    return Ok(());
                }
                if !p.notime_p {
                    self.emit(FlowElement::Time { time }, s);
                }
                if privilege != self.s.privilege || (!p.nocontext_p && context != self.s.context) {
                    self.s.privilege = privilege;
                    self.s.context = context;
                    self.emit_context(s);
                    self.enter(privilege, context);
                }
                Ok(())
            }
            TeInst::Trap {
                sync,
                ecause,
                interrupt,
                thaddr,
                address,
                tval,
            } => {
                let addr = address.map(|a| (a << p.iaddress_lsb_p) & self.cur.mask());
                let epc = if self.s.start_of_trace || self.s.pending_trap.is_some() {
                    // Exception on the first traced instruction (v2.0 `sec:thaddr`: address =
                    // EPC), or a trap immediately after another one (address = this trap's EPC
                    // is the previous handler).
                    let epc = match self.s.pending_trap {
                        Some(t) => t.address,
                        None if !thaddr => addr,
                        None => None,
                    };
                    if let Some(t) = self.s.pending_trap.take() {
                        self.emit_trap(&t, None, s);
                    }
                    epc
                } else {
                    let epc = self.exception_address(thaddr, addr);
                    self.check_trap(epc, interrupt, ecause)?;
                    epc
                };
                let t = PendingTrap {
                    ecause,
                    interrupt,
                    tval,
                    epc,
                    address: addr,
                };
                if !thaddr {
                    self.s.pending_trap = Some(t);
                    return Ok(());
                }
                let handler = self.handler(addr, interrupt, ecause)?;
                self.emit_trap(&t, Some(handler), s);
                self.sync(offset, handler, &sync, true, s)
            }
            TeInst::Start { sync, address } => {
                let addr = (address << p.iaddress_lsb_p) & self.cur.mask();
                if let Some(t) = self.s.pending_trap.take() {
                    // v2.0: the handler of a trap reported with thaddr = 0 (also the draft's
                    // SF1 form, handled above).
                    self.learn_handler(&t, addr);
                    self.emit_trap(&t, Some(addr), s);
                    return self.sync(offset, addr, &sync, true, s);
                }
                self.sync(offset, addr, &sync, false, s)
            }
            _ => {
                if self.s.start_of_trace {
                    self.skip(offset);
                    return Ok(());
                }
                if self.s.pending_trap.is_some() {
                    return Err(DecodeError::Unexpected(
                        "a trap handler was expected (format 3 after thaddr = 0)",
                    ));
                }
                self.differential(pkt, s)
            }
        }
    }

    pub(super) fn context_element(&self) -> FlowElement {
        let context = if self.params.nocontext_p {
            None
        } else {
            Some(self.s.context)
        };
        FlowElement::Context {
            privilege: Some(self.s.privilege as u8),
            context,
        }
    }

    pub(super) fn emit_context<S: FlowSink + ?Sized>(&mut self, s: &mut S) {
        let e = self.context_element();
        self.emit(e, s);
    }

    /// The Context element for a change the packet naming `addr` reports, `addr` having just
    /// been reported: that instruction already runs in the new context (after an xRET, the
    /// packet names its target), and the flow says "from here on", so the element goes before
    /// it, splitting the open range there.
    pub(super) fn emit_context_before_last<S: FlowSink + ?Sized>(&mut self, addr: u64, s: &mut S) {
        match self.cur.ranges.open() {
            Some((_, last, n)) if last == addr => {
                if n > 1 {
                    // `last_pc` is the instruction before `addr` on the path (`follow`).
                    let class = self
                        .cur
                        .ent_before(self.last_pc())
                        .map_or(CfClass::None, |e| e.class);
                    self.cur.ranges.split_before_last(self.last_pc(), class, s);
                }
                s.element(&self.context_element());
            }
            _ => self.emit_context(s),
        }
    }

    /// Format 3 subformats 0 and 1 (`decoder.adoc` `process_te_inst`, format 3 branch).
    pub(super) fn sync<S: FlowSink + ?Sized>(
        &mut self,
        offset: u64,
        addr: u64,
        f: &SyncFields,
        trap: bool,
        s: &mut S,
    ) -> Result<(), DecodeError> {
        let p = self.params;
        self.s.inferred_address = false;
        self.s.address = addr;
        let fresh = trap || self.s.start_of_trace;
        if fresh {
            self.s.bq.clear();
            self.s.stop_at_last_branch = false;
        }
        let e = if fresh {
            self.enter(f.privilege, f.context);
            *self.cur.entry(addr)?
        } else {
            self.enter_at(addr, f.privilege, f.context)?
        };
        if e.class == CfClass::Branch {
            self.add_map_bits(f.branch as u64, 1)?;
        }
        if !fresh {
            let k = Ctx {
                sync: true,
                privilege: f.privilege,
                ..Ctx::default()
            };
            self.follow(addr, &k, s)?;
            self.cur.settle_switch();
            if self.s.privilege != f.privilege || (!p.nocontext_p && f.context != self.s.context) {
                self.s.privilege = f.privilege;
                self.s.context = f.context;
                self.emit_context_before_last(addr, s);
            }
        } else {
            if self.s.start_of_trace {
                let reason = if self.stats.errors > 0 || self.errors_before {
                    SyncReason::Recovery
                } else {
                    self.guess_read |= self.s.guessing;
                    SyncReason::Start
                };
                self.start_lost(offset, s);
                self.s.recovering = false;
                self.s.synced_ever = true;
                self.emit(FlowElement::Sync { addr, reason }, s);
            }
            if self.s.start_of_trace
                || self.s.privilege != f.privilege
                || (!p.nocontext_p && f.context != self.s.context)
            {
                self.s.privilege = f.privilege;
                self.s.context = f.context;
                self.emit_context(s);
            }
            self.flush(s);
            self.cur.pc = addr;
            self.arrive(addr, 1, addr, &e, addr, s);
        }
        if !p.notime_p {
            self.emit(FlowElement::Time { time: f.time }, s);
        }
        self.s.start_of_trace = false;
        self.s.ended = false;
        if !self.keep_stack_across_syncs {
            self.cur.stack.clear();
        }
        // Synchronisation resets the predictor and the jump target cache (branchTrace.adoc).
        self.s.bpred.iter_mut().for_each(|b| *b = BPRED_INIT);
        self.s.jtc.iter_mut().for_each(|c| *c = None);
        Ok(())
    }

    /// Formats 0, 1 and 2.
    pub(super) fn differential<S: FlowSink + ?Sized>(
        &mut self,
        pkt: &TeInst,
        s: &mut S,
    ) -> Result<(), DecodeError> {
        let p = self.params;
        let lsb = p.iaddress_lsb_p as u32;
        let mut k = Ctx::default();
        let apply_tail = |d: &mut Self, t: &crate::codec::AddrTail, k: &mut Ctx| {
            d.s.stop_at_last_branch = false;
            if d.s.options.full_address {
                d.s.address = (t.address << lsb) & d.cur.mask();
            } else {
                let delta = (t.signed_address(&p) as u64) << lsb;
                d.s.address = d.s.address.wrapping_add(delta) & d.cur.mask();
            }
            k.notify = t.notify_flag(&p);
            k.updiscon = t.updiscon_flag();
            k.irreport = t.irreport_flag();
            k.irdepth = t.irdepth;
        };
        match *pkt {
            TeInst::Addr(ref t) => apply_tail(self, t, &mut k),
            TeInst::Branch {
                branches,
                branch_map,
                ref tail,
            } => {
                if let Some(t) = tail {
                    apply_tail(self, t, &mut k);
                }
                self.s.stop_at_last_branch = branches == 0;
                let n = if branches == 0 { 31 } else { branches as u32 };
                self.add_map_bits(branch_map as u64, n)?;
            }
            TeInst::BranchCount {
                branch_count,
                branch_fmt,
                ref tail,
            } => {
                if let Some(t) = tail {
                    apply_tail(self, t, &mut k);
                } else {
                    self.s.stop_at_last_branch = true;
                }
                self.add_predicted(branch_count as u64 + 31, branch_fmt != 2)?;
            }
            TeInst::JumpTargetIndex {
                index,
                branches,
                branch_map,
                irreport,
                irdepth,
            } => {
                let a = self
                    .s
                    .jtc
                    .get(index as usize)
                    .copied()
                    .flatten()
                    .ok_or(DecodeError::EmptyCacheEntry(index))?;
                self.s.stop_at_last_branch = false;
                self.s.address = a;
                let w = crate::codec::te_inst::branch_map_width_f0s1(branches);
                let msb = if branches == 0 {
                    (branches >> 4) & 1 != 0
                } else {
                    (branch_map >> (w - 1)) & 1 != 0
                };
                k.irreport = irreport != msb;
                k.irdepth = irdepth;
                if branches > 0 {
                    self.add_map_bits(branch_map as u64, branches as u32)?;
                }
            }
            _ => return Err(DecodeError::Unexpected("not a differential packet")),
        }
        if pkt.tail().is_some() && self.s.options.jump_target_cache && !self.s.jtc.is_empty() {
            // rvtrace's jump target cache holds every address a format 0/1/2 packet reports
            // (see the crate README); the encoder does the same.
            let i = table_index(self.s.address, self.params.cache_size_p);
            self.s.jtc[i] = Some(self.s.address);
        }
        let a = self.s.address;
        // The reported address must be an instruction of the program: otherwise the packet (or
        // the address it is relative to) is damaged, and following the path to an address it
        // can never reach would only report instructions that did not execute.
        match self.cur.code().ent(a) {
            Some(e) if e.len > 0 => {}
            Some(_) => return Err(DecodeError::BadInstruction(a)),
            None => return Err(DecodeError::Unmapped(a)),
        }
        self.follow(a, &k, s)
    }
}
