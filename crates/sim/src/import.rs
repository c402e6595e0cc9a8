//! Ingress records from a retired-instruction log (a PC list, QEMU's or Spike's log, read as
//! [`Step`]s by `rvtrace_ingress::pcs`) and the program's ELF.
//!
//! The log's steps are turned into the hart's observer events ([`Retired`], [`TrapInfo`]) and
//! fed to the same [`IngressRecorder`] that `rvtrace run --ingress` uses, so every rule (the
//! `itype` of an instruction, `sijump`, traps, the semihosting convention) has one place:
//!
//! * the instruction at each PC comes from the ELF; its class and length from
//!   `rvtrace_isa::classify`; whether it was taken from the next PC;
//! * an `ecall`/`ebreak` retires with its exception: the log's trap line when there is one, else
//!   derived (cause 3 for `ebreak`, 8/9/11 for `ecall` by privilege, `tval` 0);
//! * an `ebreak` that is followed by the next instruction (no trap) was a serviced semihosting
//!   call, reported as the hart model reports one (itype 1, cause 3; the last call, the program's
//!   exit, is a plain row);
//! * a breakpoint (cause 3) at anything but an `ebreak` is a debug trigger's, whose instruction
//!   did not retire;
//! * a fault or an interrupt from the log is a record with `iretire` 0; one the log does not
//!   show (a PC list) cannot be derived, but the discontinuity it leaves (an instruction followed
//!   by an address it cannot go to) is reported by [`Importer::step`];
//! * `time` is 0: no log here carries the hart's `mtime` (a caller that knows time sets it with
//!   [`Importer::set_time`]).
//!
//! The last instruction's successor is not in the log: it is taken as not taken (a branch there
//! is reported as not taken).

use crate::arch::{cause, privilege};
use crate::ingress::IngressRecorder;
use crate::observer::Serviced;
use crate::observer::{Observer, Retired, TrapInfo};
use rvtrace_image::Image;
use rvtrace_ingress::pcs::{retires_with_exception, Step};
use rvtrace_ingress::RecordSink;
use rvtrace_isa::{classify, CfClass, IsaConfig};

/// `ebreak` (32-bit): the instruction of a semihosting call.
const EBREAK: u32 = 0x0010_0073;
/// `ecall`.
const ECALL: u32 = 0x0000_0073;

/// A step inconsistent with the program or the steps before it ([`Importer::step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportError {
    /// No instruction at this address in the program.
    NoInstruction {
        /// The address.
        pc: u64,
    },
    /// An instruction of neither 2 nor 4 bytes.
    Length {
        /// Its address.
        pc: u64,
        /// Its first bits.
        bits: u32,
        /// Its length in bytes.
        len: u8,
    },
    /// An exception with which an instruction retires (`ecall`, `ebreak`) at an address that is
    /// not the instruction retired just before.
    NotRetired {
        /// The cause.
        cause: u64,
        /// Its `epc`.
        epc: u64,
    },
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportError::NoInstruction { pc } => write!(f, "no instruction at {pc:#x} in the ELF"),
            ImportError::Length { pc, bits, len } => write!(
                f,
                "the instruction at {pc:#x} ({bits:#x}) has a length of {len} bytes"
            ),
            ImportError::NotRetired { cause, epc } => write!(
                f,
                "exception {cause} at {epc:#x}, which is not the instruction retired just before"
            ),
        }
    }
}

impl std::error::Error for ImportError {}

/// Turns [`Step`]s into ingress records (module doc), sent to a sink.
pub struct Importer<'a, F: RecordSink> {
    image: &'a Image,
    isa: IsaConfig,
    rec: IngressRecorder<F>,
    /// The last retired instruction, waiting for its successor.
    pending: Option<Retired>,
    /// Privilege of the last instruction (hart encoding).
    priv_: u8,
    /// `mtime` given to the next retired instructions ([`Importer::set_time`]).
    time: u64,
}

impl<'a, F: RecordSink> Importer<'a, F> {
    /// An importer for the program in `image`, producing `itype` codes of `itype_width` bits;
    /// `priv_` (0 U, 1 S, 3 M) is the privilege of instructions whose step does not say.
    pub fn new(image: &'a Image, isa: IsaConfig, itype_width: u8, priv_: u8, sink: F) -> Self {
        Importer {
            image,
            isa,
            rec: IngressRecorder::new(isa, itype_width, sink),
            pending: None,
            priv_,
            time: 0,
        }
    }

    /// The time of the instructions retired from now on (their records' `time`; 0 until set).
    /// For sources that know time at some points only (a decoded trace's time stamps).
    pub fn set_time(&mut self, time: u64) {
        self.time = time;
    }

    /// Records emitted so far.
    pub fn records(&self) -> u64 {
        self.rec.records
    }

    /// Takes one step; an error says what is inconsistent (the caller adds the line number).
    ///
    /// Returns `Some((pc, next))` when the previous instruction, at `pc`, was followed by `next`
    /// although it cannot go there (it is not a jump, or a branch or direct jump with another
    /// target): a trap (fault or interrupt) that the log does not show, so no record for it
    /// could be derived.
    pub fn step(&mut self, s: Step) -> Result<Option<(u64, u64)>, ImportError> {
        let mut gap = None;
        match s {
            Step::Retired { pc, priv_ } => {
                gap = self.flush(pc);
                let bits = self
                    .image
                    .fetch(pc)
                    .ok_or(ImportError::NoInstruction { pc })?;
                let info = classify(&self.isa, bits);
                if info.len != 2 && info.len != 4 {
                    return Err(ImportError::Length {
                        pc,
                        bits,
                        len: info.len,
                    });
                }
                if let Some(p) = priv_ {
                    self.priv_ = p;
                }
                self.pending = Some(Retired {
                    pc,
                    insn: if info.len == 2 { bits & 0xffff } else { bits },
                    len: info.len,
                    class: info.class,
                    next_pc: pc,
                    priv_: self.priv_,
                    trap: None,
                    serviced: None,
                    mtime: self.time,
                });
            }
            Step::Trap {
                cause,
                interrupt,
                epc,
                tval,
                priv_,
            } => {
                let from_priv = priv_.unwrap_or(self.priv_);
                let trap = TrapInfo {
                    cause,
                    tval: tval.unwrap_or(0),
                    interrupt,
                    epc,
                    from_priv,
                    to_priv: privilege::M,
                    handler: 0,
                    mstatus: 0,
                };
                // A breakpoint at anything but an `ebreak` is a debug trigger's (Sdtrig): its
                // instruction (a load or store, or one never fetched) does not retire.
                let ebreak_at_epc = matches!(&self.pending,
                    Some(p) if p.pc == epc && p.class == CfClass::EnvTrap);
                let trigger = cause == cause::BREAKPOINT && !ebreak_at_epc;
                if !interrupt && retires_with_exception(cause) && !trigger {
                    match &mut self.pending {
                        Some(p) if p.pc == epc && p.trap.is_none() => p.trap = Some(trap),
                        _ => return Err(ImportError::NotRetired { cause, epc }),
                    }
                } else {
                    gap = self.flush(epc);
                    self.rec.trap(&trap);
                }
            }
        }
        Ok(gap)
    }

    /// Emits the pending instruction, now that the next PC is known; returns an unexplained
    /// discontinuity ([`step`](Self::step)).
    fn flush(&mut self, next_pc: u64) -> Option<(u64, u64)> {
        let mut ev = self.pending.take()?;
        ev.next_pc = next_pc;
        let seq = ev.pc.wrapping_add(ev.len as u64);
        let info = classify(&self.isa, ev.insn);
        let target = info.target_addr(ev.pc, self.isa.xlen);
        let possible = match ev.class {
            CfClass::None => next_pc == seq,
            CfClass::Branch => next_pc == seq || Some(next_pc) == target,
            c if c.is_inferable() && target.is_some() => Some(next_pc) == target,
            _ => true,
        };
        if ev.class == CfClass::EnvTrap && ev.trap.is_none() {
            let sequential = next_pc == ev.pc.wrapping_add(ev.len as u64);
            if ev.insn == EBREAK && sequential {
                // The hart model reports a serviced semihosting call so (ingress.rs).
                ev.serviced = Some(Serviced {
                    by: Serviced::UNKNOWN,
                    cause: cause::BREAKPOINT as u8,
                });
            } else {
                // ecall/ebreak always trap: derive the exception the log does not show.
                let c = if ev.insn == ECALL {
                    match ev.priv_ {
                        privilege::U => cause::ECALL_U,
                        privilege::S => cause::ECALL_S,
                        _ => cause::ECALL_M,
                    }
                } else {
                    cause::BREAKPOINT
                };
                ev.trap = Some(TrapInfo {
                    cause: c,
                    tval: 0,
                    interrupt: false,
                    epc: ev.pc,
                    from_priv: ev.priv_,
                    to_priv: privilege::M,
                    handler: next_pc,
                    mstatus: 0,
                });
            }
        }
        self.rec.retire(&ev);
        (!possible).then_some((ev.pc, next_pc))
    }

    /// The end of the log: emits the last instruction (its successor taken as sequential).
    pub fn finish(&mut self) {
        if let Some(p) = &self.pending {
            let next = p.pc.wrapping_add(p.len as u64);
            self.flush(next);
        }
        self.rec.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvtrace_ingress::{Itype, Record};

    fn image(code: &[u32]) -> Image {
        let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
        let elf = rvtrace_testkit::minimal_elf(true, 0x1000, &bytes);
        let mut im = Image::new();
        im.load_bytes("t", &elf).unwrap();
        im
    }

    fn import(code: &[u32], steps: &[Step]) -> Vec<Record> {
        let im = image(code);
        let mut out = Vec::new();
        let mut imp = Importer::new(&im, IsaConfig::rv64(), 4, privilege::M, |r: &Record| {
            out.push(*r)
        });
        for s in steps {
            imp.step(*s).unwrap();
        }
        imp.finish();
        let _ = imp;
        out
    }

    fn ret(pc: u64) -> Step {
        Step::Retired { pc, priv_: None }
    }

    #[test]
    fn taken_branch_ecall_and_fault() {
        // 0x1000 beq x0,x0,+8; 0x1004 nop; 0x1008 ecall; 0x100c unimp (illegal)
        let code = [0x0000_0463, 0x0000_0013, 0x0000_0073, 0xc000_1073];
        let recs = import(
            &code,
            &[
                ret(0x1000),
                ret(0x1008),
                ret(0x1004),
                Step::Trap {
                    cause: 2,
                    interrupt: false,
                    epc: 0x100c,
                    tval: Some(0xc000_1073),
                    priv_: None,
                },
                ret(0x1004),
            ],
        );
        let it: Vec<_> = recs
            .iter()
            .map(|r| (r.iaddr, r.iretire, r.itype, r.cause))
            .collect();
        assert_eq!(
            it,
            [
                (0x1000, 2, Itype::TakenBranch, 0),
                // ecall without a trap line: derived, M-mode ecall.
                (0x1008, 2, Itype::Exception, 11),
                (0x1004, 2, Itype::None, 0),
                (0x100c, 0, Itype::Exception, 2),
                (0x1004, 2, Itype::None, 0),
            ]
        );
        assert_eq!(recs[3].tval, 0xc000_1073);
        assert!(recs.iter().all(|r| r.priv_ == 3 && r.time == 0));
    }

    #[test]
    fn unexplained_discontinuity() {
        // 0x1000 nop; 0x1004 beq x0,x0,+8 (to 0x100c); 0x1008 nop; 0x100c nop
        let im = image(&[0x13, 0x0000_0463, 0x13, 0x13]);
        let mut imp = Importer::new(&im, IsaConfig::rv64(), 4, 3, |_: &Record| {});
        assert_eq!(imp.step(ret(0x1000)).unwrap(), None);
        assert_eq!(imp.step(ret(0x1004)).unwrap(), None);
        assert_eq!(imp.step(ret(0x100c)).unwrap(), None);
        // A nop followed by a jump back: a trap the log does not show.
        assert_eq!(imp.step(ret(0x1004)).unwrap(), Some((0x100c, 0x1004)));
        // A branch to neither its target nor the next instruction.
        assert_eq!(imp.step(ret(0x1000)).unwrap(), Some((0x1004, 0x1000)));
        assert_eq!(imp.step(ret(0x1008)).unwrap(), Some((0x1000, 0x1008)));
    }

    #[test]
    fn errors() {
        let im = image(&[0x13]);
        let mut imp = Importer::new(&im, IsaConfig::rv64(), 4, 3, |_: &Record| {});
        assert_eq!(
            imp.step(ret(0x2000)),
            Err(ImportError::NoInstruction { pc: 0x2000 })
        );
        imp.step(ret(0x1000)).unwrap();
        let e = imp
            .step(Step::Trap {
                cause: 11,
                interrupt: false,
                epc: 0x1004,
                tval: None,
                priv_: None,
            })
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "exception 11 at 0x1004, which is not the instruction retired just before"
        );
    }
}
