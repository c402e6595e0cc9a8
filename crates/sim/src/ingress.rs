//! Turns hart events into ingress-port records ([`rvtrace_ingress::Record`]), one per retired
//! instruction, plus one with `iretire = 0` for each fault or interrupt
//! (`etrace-v2.0/ingressPort.adoc`: "if itype is 1 or 2 ... the number of instructions retired may
//! be zero").
//!
//! Environment calls serviced by the hart (semihosting, SBI: [`crate::extension`]) follow the
//! convention of the E-Trace reference flow vectors (`conformance/README.md`, "Trap
//! convention"): the `ebreak`/`ecall` of a serviced call is reported as a retired instruction
//! with an exception (`itype` 1, the cause it would have raised, tval 0) whose handler is the
//! next instruction, except for a final call that never returns (`SYS_EXIT`), which stays a
//! plain row.

use crate::hart::privilege;
use crate::observer::{Observer, Retired, TrapInfo};
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::{is_sequentially_inferable, IsaConfig};

/// An [`Observer`] that emits ingress records to a sink. A serviced call's record is held
/// back until the next event, so that [`IngressRecorder::finish`] can turn a final call (the
/// program's exit) into a plain row; every other record goes out at once.
pub struct IngressRecorder<F: FnMut(&Record)> {
    sink: F,
    itype_width: u8,
    isa: IsaConfig,
    pending: Option<(Record, bool)>,
    prev_bits: Option<u32>,
    /// `mtime` of the last retired instruction: a trap retires nothing, so time has not moved.
    last_time: u64,
    /// Records emitted so far.
    pub records: u64,
}

impl<F: FnMut(&Record)> IngressRecorder<F> {
    /// A recorder producing `itype` codes of `itype_width` bits (3 or 4) for an `isa`.
    pub fn new(isa: IsaConfig, itype_width: u8, sink: F) -> Self {
        IngressRecorder {
            sink,
            itype_width,
            isa,
            pending: None,
            prev_bits: None,
            last_time: 0,
            records: 0,
        }
    }

    #[inline]
    fn push(&mut self, rec: Record, serviced: bool) {
        if let Some((r, _)) = self.pending.take() {
            (self.sink)(&r);
            self.records += 1;
        }
        if serviced {
            self.pending = Some((rec, true));
        } else {
            (self.sink)(&rec);
            self.records += 1;
        }
    }

    /// Emit the last record. A trailing serviced call (the program's exit) is a plain row.
    pub fn finish(&mut self) {
        if let Some((mut r, serviced)) = self.pending.take() {
            if serviced {
                r.itype = Itype::None;
                r.cause = 0;
            }
            (self.sink)(&r);
            self.records += 1;
        }
    }
}

/// Privilege as the ingress port encodes it (U 0, S 1, M 3).
fn ingress_priv(p: u8) -> u8 {
    match p {
        privilege::U => rvtrace_ingress::privilege::U,
        privilege::S => rvtrace_ingress::privilege::S,
        _ => rvtrace_ingress::privilege::M,
    }
}

impl<F: FnMut(&Record)> Observer for IngressRecorder<F> {
    #[inline]
    fn retire(&mut self, ev: &Retired) {
        let taken = ev.next_pc != ev.pc.wrapping_add(ev.len as u64);
        let mut rec = Record {
            iaddr: ev.pc,
            iretire: ev.len as u32 / 2,
            ilastsize: if ev.len == 4 { 1 } else { 0 },
            itype: ev.class.etrace_itype(taken, self.itype_width),
            priv_: ingress_priv(ev.priv_),
            time: ev.mtime,
            ..Record::default()
        };
        if let Some(t) = ev.trap {
            rec.itype = Itype::Exception;
            rec.cause = t.cause;
            rec.tval = t.tval;
        } else if let Some(s) = ev.serviced {
            rec.itype = Itype::Exception;
            rec.cause = s.cause as u64;
        }
        if ev.class.is_uninferable() {
            if let Some(prev) = self.prev_bits {
                rec.sijump = is_sequentially_inferable(&self.isa, prev, ev.insn);
            }
        }
        self.prev_bits = Some(ev.insn);
        self.last_time = ev.mtime;
        self.push(rec, ev.serviced.is_some());
    }

    fn trap(&mut self, ev: &TrapInfo) {
        self.prev_bits = None;
        let rec = Record {
            iaddr: ev.epc,
            iretire: 0,
            ilastsize: 0,
            itype: if ev.interrupt {
                Itype::Interrupt
            } else {
                Itype::Exception
            },
            cause: ev.cause,
            tval: ev.tval,
            priv_: ingress_priv(ev.from_priv),
            time: self.last_time,
            ..Record::default()
        };
        self.push(rec, false);
    }
}
