//! The ingress stream: one [`Record`] per retired instruction (or block) as the E-Trace ingress port
//! (`etrace-v2.0/ingressPort.adoc`, "Instruction Trace Interface") defines it, plus file formats.
//!
//! N-Trace uses the same ingress port (N-Trace chapter 2).
//!
//! File formats:
//! * [`binary`]: the compact native format (`RVTRINGR`, versioned header, about one byte per sequential
//!   instruction, CRC-protected blocks). [`IngressWriter`] / [`IngressReader`].
//! * [`text`]: one readable, parseable line per record ([`text::TextWriter`], [`text::parse_line`]) and
//!   [`dump`], which prints a binary file as text (`rvtrace ingress dump FILE`).
//! * [`etrace_csv`]: the E-Trace reference flow's `encoder_input` CSV (post-iss output).
//! * [`pcseq`]: NexRv's `PCSEQ` text (`0xPC,<type><size>`).
//! * Logs that list retired addresses, read as [`pcs::Step`]s (the records are derived with the
//!   program by `rvtrace_sim::import`): [`pcs`] (a PC list), [`qemu`] (`-d exec,nochain,int`),
//!   [`spike`] (`-l --log-commits`).
//! * [`itc`]: the stores to SiFive's ITC stimulus port beside an ingress file (`INGRESS.itc`): not
//!   instruction-trace signals, so not records; the binary format is unchanged.
//!
//! `iretire` is always in half-words in a [`Record`] (`ingressPort.adoc`, table "Instruction interface
//! signals - multiple retirement per block"); formats that count instructions (the single-retirement
//! interface, `ingressPort.adoc` "Simplifications for single-retirement") are converted on the way in and out.
//!
//! ```
//! use rvtrace_ingress::{privilege, IngressHeader, IngressReader, IngressWriter, Itype, Record, Xlen};
//!
//! let header = IngressHeader::new(Xlen::Rv64, 4, "example");
//! let mut w = IngressWriter::new(Vec::new(), &header)?;
//! let insn = Record { iaddr: 0x8000_0000, iretire: 2, ilastsize: 1, priv_: privilege::M, ..Record::default() };
//! w.write(&insn)?;
//! w.write(&Record { iaddr: 0x8000_0004, itype: Itype::TakenBranch, ..insn })?;
//! let bytes = w.finish()?;
//!
//! let mut r = IngressReader::new(&bytes[..])?;
//! assert_eq!(r.header().source, "example");
//! assert_eq!(r.next_record()?, Some(insn));
//! assert_eq!(r.next_record()?.unwrap().to_string(), "0x80000004 +4 itype=5 priv=M");
//! assert_eq!(r.next_record()?, None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod binary;
mod crc32;
mod error;
pub mod etrace_csv;
pub mod itc;
mod lines;
pub mod pcs;
pub mod pcseq;
pub mod qemu;
pub mod spike;
pub mod text;
mod varint;

pub use binary::{IngressHeader, IngressReader, IngressWriter, WriterSink};
pub use error::{BlockError, HeaderError, IngressError};
pub use rvtrace_isa::{Itype, Xlen};
pub use text::{dump, dump_with, DumpSummary};

/// Privilege level encoding of the ingress port (`ingressPort.adoc`, table "Privilege level (priv) encoding").
pub mod privilege {
    /// User mode.
    pub const U: u8 = 0;
    /// Supervisor (or hypervisor-extended supervisor) mode.
    pub const S: u8 = 1;
    /// Machine mode.
    pub const M: u8 = 3;
    /// Debug mode.
    pub const D: u8 = 4;
    /// Virtual user mode.
    pub const VU: u8 = 5;
    /// Virtual supervisor mode.
    pub const VS: u8 = 6;

    /// Short name of a privilege code (`U`, `S`, `M`, `D`, `VU`, `VS`), `None` for reserved codes (2, 7, ...).
    pub const fn name(priv_: u8) -> Option<&'static str> {
        match priv_ {
            U => Some("U"),
            S => Some("S"),
            M => Some("M"),
            D => Some("D"),
            VU => Some("VU"),
            VS => Some("VS"),
            _ => None,
        }
    }

    /// The privilege code for a short name as [`name`] returns it (case-insensitive).
    pub fn from_name(name: &str) -> Option<u8> {
        [U, S, M, D, VU, VS]
            .into_iter()
            .find(|&p| self::name(p).is_some_and(|n| n.eq_ignore_ascii_case(name)))
    }
}

/// One ingress-port cycle: a block of instructions retired together (the hart model retires one
/// instruction per record), or a trap with no instruction retired.
///
/// Field names follow `ingressPort.adoc` tables "Instruction interface signals".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Address of the first instruction retired in this block; for `itype` 1 with `iretire` 0, the
    /// address of the instruction that incurred the exception; for `itype` 2 with `iretire` 0, the
    /// address the interrupt was taken at (the interrupted `epc`).
    pub iaddr: u64,
    /// Number of half-words represented by the instructions retired in this block (0 = none retired).
    pub iretire: u32,
    /// Size of the last retired instruction is 2^`ilastsize` half-words.
    pub ilastsize: u8,
    /// Termination type of the block.
    pub itype: Itype,
    /// Exception or interrupt cause (`mcause`/`scause` without the interrupt bit); valid for `itype` 1 and 2.
    pub cause: u64,
    /// Trap value (`mtval`/`stval`); valid for `itype` 1.
    pub tval: u64,
    /// Privilege of the instructions retired in this block ([`privilege`]).
    pub priv_: u8,
    /// Context (for example ASID, or a software thread id).
    pub context: u64,
    /// Reporting behaviour for `context` (0 unreported, 1 imprecise, 2 precise, 3 asynchronous).
    pub ctype: u8,
    /// Time from the hart (the hart model reports `mtime`).
    pub time: u64,
    /// The block ends with an uninferable jump that is sequentially inferable (`ingressPort.adoc`, JumpClasses).
    pub sijump: bool,
}

impl Record {
    /// Address of the last instruction retired in this block (meaningless when `iretire` is 0).
    pub fn last_iaddr(&self) -> u64 {
        self.iaddr
            .wrapping_add(2 * self.iretire as u64)
            .wrapping_sub(2u64 << self.ilastsize)
    }

    /// Address of the instruction after the last one retired in this block.
    pub fn next_iaddr(&self) -> u64 {
        self.iaddr.wrapping_add(2 * self.iretire as u64)
    }

    /// Whether this block ends in a trap (`itype` 1 exception or 2 interrupt, `ingressPort.adoc` table
    /// "Instruction Type (itype) encoding").
    pub fn is_trap(&self) -> bool {
        matches!(self.itype, Itype::Exception | Itype::Interrupt)
    }

    /// Whether this block ends with the `ecall`/`ebreak`/`c.ebreak` whose exception it reports
    /// (`itype` 1 after retired instructions, with a cause only those raise,
    /// [`pcs::retires_with_exception`]): its last instruction, counted in `iretire`.
    pub fn ends_in_env_trap(&self) -> bool {
        self.itype == Itype::Exception
            && self.iretire > 0
            && pcs::retires_with_exception(self.cause)
    }

    /// Whether at least one instruction retired in this block (`iretire` != 0).
    pub fn retires(&self) -> bool {
        self.iretire != 0
    }

    /// Size in bytes of the last retired instruction (2^`ilastsize` half-words), `None` when `ilastsize`
    /// is too large to mean anything (> 30).
    pub fn last_size_bytes(&self) -> Option<u32> {
        (self.ilastsize <= 30).then(|| 2u32 << self.ilastsize)
    }

    /// Whether this record is exactly one retired instruction (`iretire` == 2^`ilastsize`), which is what
    /// single-retirement formats (E-Trace CSV, NexRv PCSEQ) can represent.
    pub fn is_single_instruction(&self) -> bool {
        self.ilastsize <= 30 && self.iretire == 1u32 << self.ilastsize
    }

    /// The instructions of a block record, as records of one instruction each: what a hart
    /// that retires one instruction at a time reports for them (`ingressPort.adoc`,
    /// "Simplifications for single-retirement"). `len_at(addr)` is the length in bytes (2 or
    /// 4) of the program's instruction at `addr`; `f` gets each record in order. Returns the
    /// number of instructions. A record that retires nothing or one instruction is given as it
    /// is.
    ///
    /// The instructions before the last have `itype` 0 and no trap fields, `ctype` is the
    /// first's only, and the last has the block's `ilastsize`, `itype`, `cause`, `tval` and
    /// `sijump`. `time` is the block's for its last instruction and one step less for each
    /// instruction before it (the hart model's block records: `rvtrace_sim::ingress`, "Block
    /// records"). An error when the program's instructions do not end exactly at the block's
    /// last instruction (not the program of the trace), or an address is not in it.
    pub fn split_block(
        &self,
        mut len_at: impl FnMut(u64) -> Option<u32>,
        mut f: impl FnMut(Record),
    ) -> Result<u64, BlockError> {
        if !self.retires() || self.is_single_instruction() {
            f(*self);
            return Ok(self.retires() as u64);
        }
        let last = self.last_size_bytes().ok_or(BlockError::LastSize {
            iaddr: self.iaddr,
            ilastsize: self.ilastsize,
        })? as u64;
        let bytes = 2 * self.iretire as u64;
        let end = bytes.checked_sub(last).ok_or(BlockError::Retire {
            iaddr: self.iaddr,
            iretire: self.iretire,
        })?;
        // The offsets of the instructions before the last, checked once, then given.
        let mut before = 0u64;
        let mut off = 0u64;
        while off < end {
            let at = self.iaddr.wrapping_add(off);
            let len = len_at(at).ok_or(BlockError::NoInstruction(at))?;
            off += len as u64;
            before += 1;
        }
        if off != end {
            return Err(BlockError::NotAtLast {
                iaddr: self.iaddr,
                bytes,
            });
        }
        let mut off = 0u64;
        for k in 0..before {
            let at = self.iaddr.wrapping_add(off);
            let len = len_at(at).unwrap_or(4);
            off += len as u64;
            f(Record {
                iaddr: at,
                iretire: len / 2,
                ilastsize: (len == 4) as u8,
                itype: Itype::None,
                cause: 0,
                tval: 0,
                ctype: if k == 0 { self.ctype } else { 0 },
                time: self.time.wrapping_sub(before - k),
                sijump: false,
                ..*self
            });
        }
        f(Record {
            iaddr: self.last_iaddr(),
            iretire: (last / 2) as u32,
            ctype: if before == 0 { self.ctype } else { 0 },
            ..*self
        });
        Ok(before + 1)
    }
}

/// Where a producer of records (the hart's ingress recorder) sends them.
///
/// Closures `FnMut(&Record)` are sinks. A sink that encodes the [`binary`] format implements
/// [`predicted`](Self::predicted) with [`IngressWriter::write_predicted`].
pub trait RecordSink {
    /// One record.
    fn record(&mut self, r: &Record);

    /// One record that the [`binary`] format predicts from the previous record given to this
    /// sink but for its address ([`IngressWriter::write_predicted`] says which: a single
    /// instruction that continues the previous record's time step, privilege and context, with
    /// no trap fields).
    /// `r` is the complete record; the default is [`record`](Self::record).
    #[inline(always)]
    fn predicted(&mut self, r: &Record) {
        self.record(r)
    }

    /// One record that differs from the previous record given to this sink only in `iaddr`,
    /// `iretire`, `ilastsize`, `itype` and `time` (a block record: same `priv` and `context`,
    /// no trap fields, `ctype` 0, no `sijump`). A binary writer encodes it with
    /// [`IngressWriter::write_block`]; the default is [`record`](Self::record).
    #[inline(always)]
    fn block(&mut self, r: &Record) {
        self.record(r)
    }

    /// The block records `recs` (each one like [`block`](Self::block)) of a run named by
    /// `key`: every run given with the same `key` has the same records after the first, the
    /// same first but for its address, size and time when it goes on from a block before the
    /// run, and the same times relative to the first's (the producer's promise, e.g. the
    /// instructions of one pre-decoded block). A binary writer keeps what it wrote of those
    /// records, for [`blocks_again`](Self::blocks_again)
    /// ([`IngressWriter::write_blocks_keyed`]); the default gives each to
    /// [`block`](Self::block).
    #[inline(always)]
    fn blocks_keyed(&mut self, key: u64, recs: &[Record]) {
        let _ = key;
        for r in recs {
            self.block(r);
        }
    }

    /// The `m` block records of a run given before to [`blocks_keyed`](Self::blocks_keyed)
    /// with `key`, the first of them `first` (the others follow from the key), if the sink
    /// kept what it needs of them: then it writes them and returns true; else it writes
    /// nothing and returns false, and the producer gives the records to
    /// [`blocks_keyed`](Self::blocks_keyed). A binary writer copies what it wrote for that
    /// run ([`IngressWriter::write_blocks_again`]); the default keeps nothing (false).
    #[inline(always)]
    fn blocks_again(&mut self, first: &Record, m: usize, key: u64) -> bool {
        let _ = (first, m, key);
        false
    }

    /// `n` records, each one [`predicted`](Self::predicted) but for its address (and the
    /// last one's [`Near::sijump`]): `nears` yields them (exactly `n`), record `k` one
    /// instruction with the privilege and context of `head` and the time `head.time + k *
    /// head.time_step`. The default gives them to [`predicted`](Self::predicted) one by one (a
    /// record with `sijump` to [`record`](Self::record)); a binary writer encodes them in one
    /// go ([`IngressWriter::write_predicted_run`]).
    #[inline(always)]
    fn predicted_run(&mut self, head: &RunHead, _n: usize, nears: impl Iterator<Item = Near>) {
        for (k, near) in nears.enumerate() {
            if near.sijump {
                self.record(&near.record(head, k));
            } else {
                self.predicted(&near.record(head, k));
            }
        }
    }

    /// [`predicted_run`](Self::predicted_run) of `n` (at least 2) records named by `key`:
    /// every run given with the same `key` has the same `n` and the same records but for their
    /// time (the producer's promise, e.g. the instructions of one pre-decoded block). `ends`
    /// is the first and the last record (those `nears` yields first and last). A binary writer
    /// keeps what it wrote of those records, for
    /// [`predicted_run_again`](Self::predicted_run_again)
    /// ([`IngressWriter::write_predicted_run_keyed`]); the default is
    /// [`predicted_run`](Self::predicted_run).
    #[inline(always)]
    fn predicted_run_keyed(
        &mut self,
        head: &RunHead,
        n: usize,
        key: u64,
        ends: (Near, Near),
        nears: impl Iterator<Item = Near>,
    ) {
        let _ = (key, ends);
        self.predicted_run(head, n, nears)
    }

    /// The `n` records of a run given before to
    /// [`predicted_run_keyed`](Self::predicted_run_keyed) with `key` (the same records, with
    /// `head`'s `priv`, `context` and times), if the sink kept what it needs of them: then it
    /// writes them and returns true; else it writes nothing and returns false, and the
    /// producer gives the run to [`predicted_run_keyed`](Self::predicted_run_keyed). A binary
    /// writer copies what it wrote for that run
    /// ([`IngressWriter::write_predicted_run_again`]); the default keeps nothing (false).
    #[inline(always)]
    fn predicted_run_again(&mut self, head: &RunHead, n: usize, key: u64) -> bool {
        let _ = (head, n, key);
        false
    }
}

/// What the records of a predicted run ([`RecordSink::predicted_run`]) have in common.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunHead {
    /// `priv` of every record (that of the record before the run).
    pub priv_: u8,
    /// `context` of every record (that of the record before the run).
    pub context: u64,
    /// `time` of the first record.
    pub time: u64,
    /// The time step from one record to the next (that of the records before the run).
    pub time_step: u64,
}

/// One record of a predicted run ([`RecordSink::predicted_run`]): a single retired instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Near {
    /// `iaddr`.
    pub iaddr: u64,
    /// `itype`.
    pub itype: Itype,
    /// A 32-bit instruction (`iretire` 2, `ilastsize` 1), else a 16-bit one (1, 0).
    pub size32: bool,
    /// `sijump`: an uninferable jump whose target the instruction before it gave (E-Trace
    /// `JumpClasses`, "sequentially inferable"). Only the last record of a run may have it:
    /// the one record of a run the [`binary`] format does not predict but for its address
    /// (its tag then carries an extension byte of that bit alone).
    pub sijump: bool,
}

impl Near {
    /// The full record, the `k`-th of a run with `head`.
    #[inline(always)]
    pub fn record(&self, head: &RunHead, k: usize) -> Record {
        Record {
            iaddr: self.iaddr,
            iretire: 1 + self.size32 as u32,
            ilastsize: self.size32 as u8,
            itype: self.itype,
            priv_: head.priv_,
            context: head.context,
            time: head
                .time
                .wrapping_add((k as u64).wrapping_mul(head.time_step)),
            sijump: self.sijump,
            ..Record::default()
        }
    }
}

impl<F: FnMut(&Record)> RecordSink for F {
    #[inline(always)]
    fn record(&mut self, r: &Record) {
        self(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block of a 32-bit, a 16-bit and a 32-bit instruction ending in a taken branch, first
    /// in a new context: the records of one instruction each that a single-retirement hart
    /// reports (`ingressPort.adoc`), times one step apart up to the block's.
    #[test]
    fn split_block_gives_the_instructions() {
        let block = Record {
            iaddr: 0x1000,
            iretire: 5,
            ilastsize: 1,
            itype: Itype::TakenBranch,
            priv_: privilege::S,
            context: 7,
            ctype: 2,
            time: 100,
            ..Record::default()
        };
        let len = |pc: u64| match pc {
            0x1000 | 0x1006 => Some(4),
            0x1004 => Some(2),
            _ => None,
        };
        let mut out = Vec::new();
        assert_eq!(block.split_block(len, |r| out.push(r)), Ok(3));
        let one = |iaddr, iretire, itype, ctype, time| Record {
            iaddr,
            iretire,
            ilastsize: (iretire == 2) as u8,
            itype,
            priv_: privilege::S,
            context: 7,
            ctype,
            time,
            ..Record::default()
        };
        assert_eq!(
            out,
            [
                one(0x1000, 2, Itype::None, 2, 98),
                one(0x1004, 1, Itype::None, 0, 99),
                one(0x1006, 2, Itype::TakenBranch, 0, 100),
            ]
        );
        // Not the program of the trace: the lengths run past the last instruction's start, or
        // an address is not in it; nothing is given.
        let mut n = 0;
        let wrong = |_| Some(4);
        let text = |e: BlockError| e.to_string();
        assert_eq!(
            block.split_block(wrong, |_| n += 1).map_err(text),
            Err("0x1000 +10: the program's instructions do not end at the block's last one".into())
        );
        assert_eq!(
            block.split_block(|_| None, |_| n += 1).map_err(text),
            Err("0x1000: no instruction in the program".into())
        );
        let short = Record {
            iretire: 1,
            ..block
        };
        assert_eq!(
            short.split_block(len, |_| n += 1).map_err(text),
            Err("0x1000: iretire 1 is less than the last instruction".into())
        );
        let odd = Record {
            ilastsize: 31,
            ..block
        };
        assert_eq!(
            odd.split_block(len, |_| n += 1),
            Err(BlockError::LastSize {
                iaddr: 0x1000,
                ilastsize: 31
            })
        );
        assert_eq!(n, 0);
        // One instruction, or a trap that retired nothing: the record itself.
        for r in [
            Record {
                iretire: 2,
                ..block
            },
            Record {
                iretire: 0,
                itype: Itype::Interrupt,
                ..block
            },
        ] {
            let mut out = Vec::new();
            assert_eq!(
                r.split_block(|_| None, |x| out.push(x)),
                Ok(r.retires() as u64)
            );
            assert_eq!(out, [r]);
        }
    }
}
