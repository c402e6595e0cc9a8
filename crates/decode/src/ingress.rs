//! Where flow comes from when it is not a decoded trace: an ingress file (the hart's retired
//! instructions, `rvtrace run --ingress`), as a decoder of a lossless trace would report it.
//! Traces of either protocol come from their decoders ([`crate::Trace::decoder`]).

use rvtrace_flow::walk::Ranges;
use rvtrace_flow::{insn_len_at, FlowElement, FlowSink, SyncReason};
use rvtrace_image::Image;
use rvtrace_ingress::{IngressError, IngressReader, Itype, Record};
use rvtrace_isa::{classify, CfClass, IsaConfig};
use std::io::Read;

/// Counts from turning a source into flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Instructions delivered in ranges.
    pub instructions: u64,
    /// [`FlowElement::Loss`] elements delivered.
    pub losses: u64,
}

impl From<rvtrace_flow::DecodeStats> for SourceStats {
    /// A decoder's counts as a source's (a decoded trace as the source).
    fn from(st: rvtrace_flow::DecodeStats) -> SourceStats {
        SourceStats {
            instructions: st.instructions,
            losses: st.losses,
        }
    }
}

/// Turns ingress records into flow elements, as a decoder of a lossless trace would report
/// them: a `Sync` first, one `Range` per run of sequential records (ranges end as the flow's
/// rules say, [`FlowElement::Range`]: the class of each range's last instruction is
/// [`rvtrace_isa::classify`]'s, a branch's outcome the record's `itype`),
/// `Trap` with its handler (the next record's address), `Context` when the privilege changes and
/// `Time` (the first instruction's time) before each range when the file carries time.
pub struct IngressFlow<'a> {
    image: &'a Image,
    isa: IsaConfig,
    time: bool,
    started: bool,
    ranges: Ranges,
    open_time: u64,
    trap: Option<FlowElement>,
    privilege: Option<u8>,
    records: u64,
    /// Counts so far.
    pub stats: SourceStats,
}

impl<'a> IngressFlow<'a> {
    /// An adapter for records of a program in `image` (needed to count the instructions of a
    /// record that retires several, and to classify the last instruction of each range) of a
    /// hart with `isa`; `time`: the file carries time (`FLAG_TIME`).
    pub fn new(image: &'a Image, isa: IsaConfig, time: bool) -> Self {
        IngressFlow {
            image,
            isa,
            time,
            started: false,
            ranges: Ranges::new(),
            open_time: 0,
            trap: None,
            privilege: None,
            records: 0,
            stats: SourceStats::default(),
        }
    }

    fn flush<S: FlowSink + ?Sized>(&mut self, sink: &mut S) {
        if let Some((_, _, count)) = self.ranges.open() {
            if self.time {
                sink.element(&FlowElement::Time {
                    time: self.open_time,
                });
            }
            self.ranges.flush(sink);
            self.stats.instructions += count;
        }
    }

    /// One record. Returns an error for a record of several instructions that the image does
    /// not cover.
    pub fn push<S: FlowSink + ?Sized>(
        &mut self,
        r: &Record,
        sink: &mut S,
    ) -> Result<(), RecordError> {
        self.records += 1;
        if !self.started {
            self.started = true;
            sink.element(&FlowElement::Sync {
                addr: r.iaddr,
                reason: SyncReason::Start,
            });
        }
        if let Some(mut t) = self.trap.take() {
            if let FlowElement::Trap { handler, .. } = &mut t {
                *handler = Some(r.iaddr);
            }
            sink.element(&t);
        }
        if self.privilege != Some(r.priv_) {
            self.flush(sink);
            self.privilege = Some(r.priv_);
            sink.element(&FlowElement::Context {
                privilege: Some(r.priv_),
                context: None,
            });
        }
        let record = self.records - 1;
        if r.retires() && r.last_size_bytes().is_none() {
            return Err(RecordError::LastSize {
                record,
                ilastsize: r.ilastsize,
            });
        }
        if r.retires() && r.iaddr & 1 != 0 {
            return Err(RecordError::OddAddress {
                record,
                iaddr: r.iaddr,
            });
        }
        if r.retires() {
            let count = if r.is_single_instruction() {
                1
            } else {
                let mut n = 0u64;
                let mut pc = r.iaddr;
                let end = r.next_iaddr();
                while pc != end {
                    n += 1;
                    pc = pc.wrapping_add(
                        insn_len_at(self.image, pc)
                            .ok_or(RecordError::NotInProgram { record, pc })?,
                    );
                    if n > r.iretire as u64 {
                        return Err(RecordError::Iretire {
                            record,
                            iretire: r.iretire,
                        });
                    }
                }
                n
            };
            let last = r.last_iaddr();
            let class = self
                .image
                .fetch(last)
                .map_or(CfClass::None, |bits| classify(&self.isa, bits).class);
            if !self.ranges.continues(r.iaddr) {
                self.flush(sink);
                // A block record's time is its last instruction's, one step per instruction
                // before it (`rvtrace run --ingress-blocks`, rvtrace_sim::ingress "Block
                // records"): the range's is its first instruction's.
                self.open_time = r.time.wrapping_sub(count - 1);
            }
            self.ranges
                .add(r.iaddr, last, count, r.next_iaddr(), class, sink);
            if class == CfClass::Branch {
                self.ranges.resolve(r.itype == Itype::TakenBranch);
            }
        }
        if r.is_trap() {
            self.flush(sink);
            let interrupt = r.itype == Itype::Interrupt;
            // ingressPort.adoc: an exception by a retired instruction (ecall) is that
            // instruction; a fault with iretire 0 is at iaddr; an interrupt is taken before the
            // next instruction.
            let epc = match (interrupt, r.retires()) {
                (false, true) => r.last_iaddr(),
                (true, true) => r.next_iaddr(),
                (_, false) => r.iaddr,
            };
            self.trap = Some(FlowElement::Trap {
                cause: Some(r.cause),
                interrupt,
                tval: (!interrupt).then_some(r.tval),
                epc: Some(epc),
                handler: None,
            });
        }
        Ok(())
    }

    /// The end of the records.
    pub fn finish<S: FlowSink + ?Sized>(&mut self, sink: &mut S) {
        self.flush(sink);
        if let Some(t) = self.trap.take() {
            sink.element(&t);
        }
        sink.element(&FlowElement::End {
            offset: self.records,
        });
    }
}

/// A record that is not an execution of the program (counted from 0 in `record`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// `ilastsize` is not an instruction size (ingressPort.adoc: 2 or 4 bytes).
    LastSize {
        /// The record's index.
        record: u64,
        /// Its `ilastsize` field.
        ilastsize: u8,
    },
    /// A retiring record at an odd address.
    OddAddress {
        /// The record's index.
        record: u64,
        /// Its `iaddr`.
        iaddr: u64,
    },
    /// A record of several instructions runs outside the program.
    NotInProgram {
        /// The record's index.
        record: u64,
        /// The first address with no instruction.
        pc: u64,
    },
    /// A record of several instructions whose `iretire` half-words do not end on an instruction.
    Iretire {
        /// The record's index.
        record: u64,
        /// Its `iretire`.
        iretire: u32,
    },
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            RecordError::LastSize { record, ilastsize } => {
                write!(
                    f,
                    "record {record}: ilastsize {ilastsize} is not an instruction size"
                )
            }
            RecordError::OddAddress { record, iaddr } => {
                write!(
                    f,
                    "record {record}: iaddr {iaddr:#x} is odd (no instruction is)"
                )
            }
            RecordError::NotInProgram { record, pc } => {
                write!(
                    f,
                    "record {record}: instructions at {pc:#x} are not in the program"
                )
            }
            RecordError::Iretire { record, iretire } => {
                write!(
                    f,
                    "record {record}: iretire {iretire} does not end on an instruction"
                )
            }
        }
    }
}

impl std::error::Error for RecordError {}

/// Why an ingress file could not be read to its end.
#[derive(Debug)]
pub enum SourceError {
    /// The file is damaged, cut or not an ingress file.
    Ingress(IngressError),
    /// A record does not fit the program (a record of several instructions outside it).
    Record(RecordError),
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::Ingress(e) => e.fmt(f),
            SourceError::Record(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SourceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SourceError::Ingress(e) => Some(e),
            SourceError::Record(e) => Some(e),
        }
    }
}

/// Reads a whole binary ingress file into flow. A damaged file delivers the flow of the
/// records before the damage, then the error.
pub fn ingress<R: Read, S: FlowSink + ?Sized>(
    input: R,
    image: &Image,
    isa: IsaConfig,
    sink: &mut S,
) -> Result<SourceStats, SourceError> {
    let mut r = IngressReader::new(input).map_err(SourceError::Ingress)?;
    let time = r.header().flags() & rvtrace_ingress::binary::FLAG_TIME != 0;
    let mut a = IngressFlow::new(image, isa, time);
    let mut batch = Vec::with_capacity(4096);
    loop {
        batch.clear();
        let got = r.read_batch(&mut batch, 4096);
        for rec in &batch {
            if let Err(e) = a.push(rec, sink) {
                a.finish(sink);
                return Err(SourceError::Record(e));
            }
        }
        match got {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                a.finish(sink);
                return Err(SourceError::Ingress(e));
            }
        }
    }
    a.finish(sink);
    Ok(a.stats)
}
