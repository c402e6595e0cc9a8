//! Flow elements back to ingress records: the reverse of [`crate::ingress::IngressFlow`]. A
//! decoded trace (N-Trace or E-Trace) becomes the records the hart would have given its
//! encoder (one per retired instruction, one with `iretire` 0 per fault or interrupt), so that
//! another protocol's encoder can take them (`rvtrace transcode`).
//!
//! Every rule of how a hart reports an instruction has one place, the one `rvtrace run
//! --ingress` and `rvtrace ingress convert` use: the flow's instruction addresses become
//! [`Step`]s of `rvtrace_sim::import::Importer`, which classifies each instruction
//! (`rvtrace_isa::classify`), takes taken/not taken from where the next instruction is, gives
//! the `itype` (E-Trace `ingressPort.adoc` table "Instruction Type (itype) encoding" and
//! `JumpClasses`, 3- or 4-bit, as the hart model), `sijump`, and the semihosting convention.
//!
//! What the flow does not carry, and what is assumed then (counted in [`AdaptStats`]):
//!
//! * **Trap cause and value.** N-Trace reports a trap's kind only (B-TYPE 2 exception, 3
//!   interrupt; N-Trace 7.3 Table 13), not `mcause`/`mtval`. The `ecall`/`ebreak` that retire
//!   with their exception get the cause their instruction and privilege imply (3; 8, 9, 11) and
//!   `tval` 0, as the importer derives it; any other trap gets cause 0 and `tval` 0
//!   ([`AdaptStats::assumed_causes`]). E-Trace carries *ecause* and *tval*
//!   (`payload.adoc` format 3 subformat 1).
//! * **Privilege.** N-Trace reports it only in Ownership messages (`encode ntrace
//!   --ownership`, 7.1); without a [`FlowElement::Context`] the privilege is M, where the hart
//!   starts ([`AdaptStats::assumed_privilege`]). E-Trace carries it in every synchronisation
//!   packet.
//! * **Time.** Decoders give time only where a message or packet carries a time stamp; every
//!   instruction after a [`FlowElement::Time`] gets that time (0 before the first), so the
//!   records' `time` is a step function of the hart's `mtime`.
//! * **Context** values (`context`, `ctype`) are left 0: the hart model reports none.
//! * **The successor of the last instruction** before a loss or the end of the trace is not
//!   known: it is taken as sequential (a branch there is not taken), as the importer does.
//! * **A trap whose address the flow does not know** (no `epc`): the trap is taken at the
//!   instruction after the last one, as if it were not a jump ([`AdaptStats::assumed_epcs`]).
//!
//! A [`FlowElement::Loss`] becomes [`IngressSink::lost`] between the records (and so does a
//! path no record can follow, [`AdaptStats::refused`]): the ingress port
//! has no way to say it, the encoders do (N-Trace Error message, 7.4; E-Trace support packet
//! with *qual_status* `trace_lost`, `payload.adoc` `sec:format33`).

use rvtrace_flow::{for_each_pc, FlowElement, FlowSink, LossReason};
use rvtrace_image::Image;
use rvtrace_ingress::pcs::{retires_with_exception, Step};
use rvtrace_ingress::{privilege, Record};
use rvtrace_isa::{classify, CfClass, IsaConfig};
use rvtrace_sim::import::Importer;
use std::cell::RefCell;
use std::rc::Rc;

/// Receives what [`FlowIngress`] makes of the flow, in order.
pub trait IngressSink {
    /// One ingress record.
    fn record(&mut self, r: &Record);
    /// Trace was lost here: the records before and after are not contiguous.
    fn lost(&mut self, reason: &LossReason);
}

/// Collects records (tests, small traces); losses are counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Records {
    /// The records, in order.
    pub records: Vec<Record>,
    /// Losses, each with the number of records before it.
    pub losses: Vec<(usize, LossReason)>,
}

impl IngressSink for Records {
    fn record(&mut self, r: &Record) {
        self.records.push(*r);
    }
    fn lost(&mut self, reason: &LossReason) {
        self.losses.push((self.records.len(), reason.clone()));
    }
}

/// Encodes the records as N-Trace (`rvtrace transcode --to ntrace`): the bytes collect in
/// [`NtraceOut::bytes`] (take them as they come); a loss is [`rvtrace_ntrace::encoder::Encoder::lost`].
pub struct NtraceOut {
    /// The encoder.
    pub enc: rvtrace_ntrace::encoder::Encoder,
    /// Message bytes not yet taken.
    pub bytes: Vec<u8>,
}

impl IngressSink for NtraceOut {
    fn record(&mut self, r: &Record) {
        self.enc.push(r, &mut self.bytes);
    }
    fn lost(&mut self, _: &LossReason) {
        self.enc.lost(&mut self.bytes);
    }
}

/// Encodes the records as E-Trace (`rvtrace transcode --to etrace`) into the encoder's packet
/// sink; a loss is [`rvtrace_etrace::encoder::Encoder::lost`]. With `--preset reference` the
/// records are classified as the reference flow's `post-iss` does
/// ([`rvtrace_etrace::encoder::post_iss_itype`]), as `rvtrace encode etrace --elf` does.
pub struct EtraceOut<'a, P: rvtrace_etrace::encoder::PacketSink> {
    /// The encoder.
    pub enc: rvtrace_etrace::encoder::Encoder<P>,
    /// The program, for the reference preset's classification.
    pub post_iss: Option<&'a Image>,
    /// The first error of the encoder or its sink (nothing more is encoded after it).
    pub error: Option<String>,
}

impl<P: rvtrace_etrace::encoder::PacketSink> IngressSink for EtraceOut<'_, P> {
    fn record(&mut self, r: &Record) {
        if self.error.is_some() {
            return;
        }
        let res = match self.post_iss {
            Some(image) => self
                .enc
                .push(&rvtrace_etrace::encoder::post_iss_itype(image, r)),
            None => self.enc.push(r),
        };
        if let Err(e) = res {
            self.error = Some(e.to_string());
        }
    }
    fn lost(&mut self, _: &LossReason) {
        if self.error.is_none() {
            if let Err(e) = self.enc.lost() {
                self.error = Some(e.to_string());
            }
        }
    }
}

/// What the adapter made and what it had to assume (module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdaptStats {
    /// Records made.
    pub records: u64,
    /// Instructions in the flow's ranges.
    pub instructions: u64,
    /// Traps that got cause 0 because the flow has none (N-Trace faults and interrupts).
    pub assumed_causes: u64,
    /// Traps whose address (`epc`) the flow does not give.
    pub assumed_epcs: u64,
    /// Instructions retired before any privilege was known (given M).
    pub assumed_privilege: u64,
    /// Losses passed on: the flow's and [`AdaptStats::refused`], one for several with no
    /// instruction between them.
    pub losses: u64,
    /// Places where the flow says something no record can (an instruction that is not one, a
    /// range outside the program: a decoder walking a damaged trace): passed on as losses
    /// ([`LossReason::Mismatch`]), the path dropped until the flow starts again.
    pub refused: u64,
    /// Places where an instruction is followed by an address it cannot go to with no trap in
    /// the flow between (the records say what the flow says; an encoder reports it as a jump).
    pub gaps: u64,
}

type Collect<'a> = Box<dyn FnMut(&Record) + 'a>;

/// Turns flow elements into ingress records for a sink (module doc). It is a [`FlowSink`]: a
/// decoder can feed it directly.
pub struct FlowIngress<'a, S: IngressSink> {
    image: &'a Image,
    isa: IsaConfig,
    itype_width: u8,
    importer: Option<Importer<'a, Collect<'a>>>,
    buf: Rc<RefCell<Vec<Record>>>,
    time: u64,
    privilege: Option<u8>,
    /// The last retired instruction since the last trap, loss or end: its address.
    last: Option<u64>,
    sink: S,
    /// The flow's path was refused ([`Self::refuse`]) and has not started again.
    refused: bool,
    /// A record was made since the last loss passed on (or none was passed on yet).
    records_since_loss: bool,
    /// Counts so far.
    pub stats: AdaptStats,
}

impl<'a, S: IngressSink> FlowIngress<'a, S> {
    /// An adapter for the program in `image`, making `itype` codes of `itype_width` bits (3 or
    /// 4, as `rvtrace run --itype-width`) for `isa`.
    pub fn new(image: &'a Image, isa: IsaConfig, itype_width: u8, sink: S) -> Self {
        FlowIngress {
            image,
            isa,
            itype_width,
            importer: None,
            buf: Rc::new(RefCell::new(Vec::new())),
            time: 0,
            privilege: None,
            last: None,
            sink,
            refused: false,
            records_since_loss: true,
            stats: AdaptStats::default(),
        }
    }

    /// The sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The sink, mutably (to write out what it holds).
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// Ends the records (as at [`FlowElement::End`]) and returns the sink and the counts.
    pub fn finish(mut self) -> (S, AdaptStats) {
        self.close();
        (self.sink, self.stats)
    }

    fn importer(&mut self) -> &mut Importer<'a, Collect<'a>> {
        if self.importer.is_none() {
            let buf = Rc::clone(&self.buf);
            let collect: Collect<'a> = Box::new(move |r: &Record| buf.borrow_mut().push(*r));
            let mut imp = Importer::new(
                self.image,
                self.isa,
                self.itype_width,
                self.privilege.unwrap_or(privilege::M),
                collect,
            );
            imp.set_time(self.time);
            self.importer = Some(imp);
        }
        self.importer.as_mut().expect("just made")
    }

    fn drain(&mut self) {
        let mut buf = self.buf.borrow_mut();
        for r in buf.drain(..) {
            self.records_since_loss = true;
            self.stats.records += 1;
            self.sink.record(&r);
        }
    }

    /// One step; false when the importer refused it (then the path is lost: [`Self::refuse`]).
    fn step(&mut self, s: Step) -> bool {
        let res = self.importer().step(s);
        self.drain();
        match res {
            Ok(None) => true,
            Ok(Some(_)) => {
                self.stats.gaps += 1;
                true
            }
            Err(e) => {
                self.refuse(e.to_string());
                false
            }
        }
    }

    /// The flow says something no record can say (an instruction of the program that is not
    /// one, as a decoder walking a damaged trace can report): the records stop before it, as
    /// at a loss, until the flow starts again somewhere (the next range after a trap, loss or
    /// synchronisation).
    fn refuse(&mut self, why: String) {
        self.close();
        self.stats.refused += 1;
        self.refused = true;
        self.lose(&LossReason::Mismatch(why));
    }

    /// Passes a loss on, once for losses with no record between them (one gap in the records).
    fn lose(&mut self, reason: &LossReason) {
        if std::mem::take(&mut self.records_since_loss) {
            self.stats.losses += 1;
            self.sink.lost(reason);
        }
    }

    /// Emits the last instruction (successor sequential) and forgets the path.
    fn close(&mut self) {
        if let Some(mut imp) = self.importer.take() {
            imp.finish();
        }
        self.drain();
        self.last = None;
    }

    fn range(&mut self, start: u64, count: u64) {
        let priv_ = match self.privilege {
            Some(p) => p,
            None => {
                self.stats.assumed_privilege += count;
                privilege::M
            }
        };
        self.stats.instructions += count;
        if self.refused {
            return;
        }
        let mut pcs = Vec::new();
        if let Err(pc) = for_each_pc(self.image, start, count, |pc| pcs.push(pc)) {
            self.refuse(format!(
                "the range from {start:#x} runs into {pc:#x}, which is not an instruction of the program"
            ));
            return;
        }
        for pc in pcs {
            if !self.step(Step::Retired {
                pc,
                priv_: Some(priv_),
            }) {
                return;
            }
            self.last = Some(pc);
        }
    }

    fn trap(
        &mut self,
        cause: Option<u64>,
        interrupt: bool,
        tval: Option<u64>,
        epc: Option<u64>,
        handler: Option<u64>,
    ) {
        if std::mem::take(&mut self.refused) {
            // The path was lost before this trap: it starts again at its handler.
            return;
        }
        if self.last.is_none()
            && (epc.is_none() || (!interrupt && cause.is_some_and(retires_with_exception)))
        {
            // The first thing after a loss or the start of the trace (a trap packet is a
            // synchronisation point): the instruction that trapped is not in the flow, so there
            // is no record to make; the records start at the handler.
            return;
        }
        let last_class = self.last.map(|pc| {
            self.image
                .fetch(pc)
                .map_or(CfClass::None, |w| classify(&self.isa, w).class)
        });
        let retired_env = !interrupt
            && last_class == Some(CfClass::EnvTrap)
            && (epc.is_none() || epc == self.last);
        if retired_env {
            // ecall/ebreak retired with the exception (ingressPort.adoc: itype 1 on the
            // instruction's own cycle). Without a cause the importer derives it.
            if let Some(c) = cause.filter(|&c| retires_with_exception(c)) {
                let epc = self.last.expect("retired_env has a last instruction");
                self.step(Step::Trap {
                    cause: c,
                    interrupt: false,
                    epc,
                    tval,
                    priv_: None,
                });
            }
        } else {
            let epc = match epc {
                Some(e) => e,
                None => {
                    self.stats.assumed_epcs += 1;
                    match self.last {
                        Some(pc) => {
                            pc.wrapping_add(rvtrace_flow::insn_len_at(self.image, pc).unwrap_or(4))
                        }
                        None => handler.unwrap_or(0),
                    }
                }
            };
            let cause = match cause {
                Some(c) => c,
                None => {
                    self.stats.assumed_causes += 1;
                    0
                }
            };
            // The privilege the trap was taken from: the one from here on (a Context just
            // before the trap, after a trap return, says it).
            let priv_ = Some(self.privilege.unwrap_or(privilege::M));
            self.step(Step::Trap {
                cause,
                interrupt,
                epc,
                tval,
                priv_,
            });
        }
        self.last = None;
    }

    /// One flow element.
    pub fn push(&mut self, e: &FlowElement) {
        match e {
            FlowElement::Sync { .. } => self.refused = false,
            FlowElement::Range { start, count, .. } => self.range(*start, *count),
            FlowElement::Trap {
                cause,
                interrupt,
                tval,
                epc,
                handler,
            } => self.trap(*cause, *interrupt, *tval, *epc, *handler),
            FlowElement::Context { privilege, .. } => {
                if let Some(p) = privilege {
                    self.privilege = Some(*p);
                }
            }
            FlowElement::Time { time } => {
                self.time = *time;
                if let Some(imp) = self.importer.as_mut() {
                    imp.set_time(*time);
                }
            }
            FlowElement::Loss { reason, .. } => {
                self.refused = false;
                self.close();
                self.lose(reason);
            }
            FlowElement::End { .. } => {
                self.refused = false;
                self.close();
            }
            // Not part of the execution the records describe.
            FlowElement::Ignored { .. } | FlowElement::Event { .. } => {}
        }
    }
}

impl<S: IngressSink> FlowSink for FlowIngress<'_, S> {
    fn element(&mut self, e: &FlowElement) {
        self.push(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingress::IngressFlow;
    use rvtrace_ingress::Itype;

    fn image(code: &[u32]) -> Image {
        let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
        let elf = rvtrace_testkit::minimal_elf(true, 0x1000, &bytes);
        let mut im = Image::new();
        im.load_bytes("t", &elf).unwrap();
        im
    }

    fn rec(iaddr: u64, iretire: u32, itype: Itype, cause: u64) -> Record {
        Record {
            iaddr,
            iretire,
            ilastsize: 1,
            itype,
            cause,
            priv_: privilege::M,
            ..Record::default()
        }
    }

    /// A taken branch, an ecall and an interrupt, through flow without causes (as N-Trace
    /// gives it): itypes from the instructions, the ecall's cause derived (M-mode ecall: 11),
    /// the interrupt's assumed (0); a loss passed on once.
    #[test]
    fn branch_ecall_interrupt_without_causes() {
        // 0x1000 beq x0,x0,+8; 0x1004 nop; 0x1008 ecall; 0x100c unimp
        let im = image(&[0x0000_0463, 0x0000_0013, 0x0000_0073, 0xc000_1073]);
        let original = [
            rec(0x1000, 2, Itype::TakenBranch, 0),
            rec(0x1008, 2, Itype::Exception, 11),
            rec(0x1004, 2, Itype::None, 0),
            // The hart's trap record retires nothing (ilastsize 0, ingress.rs).
            Record {
                ilastsize: 0,
                ..rec(0x1008, 0, Itype::Interrupt, 7)
            },
        ];
        let mut flow: Vec<FlowElement> = Vec::new();
        let mut f = IngressFlow::new(&im, IsaConfig::rv64(), false);
        for r in &original {
            f.push(r, &mut flow).unwrap();
        }
        f.finish(&mut flow);
        for e in &mut flow {
            if let FlowElement::Trap { cause, tval, .. } = e {
                *cause = None;
                *tval = None;
            }
        }
        // Two losses with nothing between them before the end: one gap in the records.
        let end = flow.pop().unwrap();
        for _ in 0..2 {
            flow.push(FlowElement::Loss {
                offset: 9,
                skipped: None,
                reason: LossReason::Overflow("lost".into()),
            });
        }
        flow.push(end);
        let mut a = FlowIngress::new(&im, IsaConfig::rv64(), 4, Records::default());
        for e in &flow {
            a.push(e);
        }
        let (r, st) = a.finish();
        let mut want = original;
        want[3].cause = 0;
        assert_eq!(r.records, want);
        assert_eq!(r.losses, [(4, LossReason::Overflow("lost".into()))]);
        assert_eq!(
            (
                st.assumed_causes,
                st.assumed_privilege,
                st.records,
                st.losses
            ),
            (1, 0, 4, 1)
        );
    }
}
