//! NexRv `PCSEQ` text (riscv-non-isa/tg-nexus-trace `refcode/c`, written by `NexRv -conv -pcinfo ...
//! -pconly ... -pcseq ...`, read by `NexRv -enco`): one retired instruction per line,
//!
//! ```text
//! 0x80000032,J4
//! 0x80000038,C4
//! 0x800003E6,B2
//! 0x800003D8,L4
//! ```
//!
//! that is `0x<PC>,<type><size>` with the PC in upper-case hex and `size` the instruction size in
//! bytes (2 or 4). Types, as NexRv classifies instructions from `objdump -d` text (`NexRvConv.c`), and
//! the [`Record`] `itype` each maps to (`ingressPort.adoc` table "Instruction Type (itype) encoding";
//! N-Trace uses the same codes, N-Trace chapter 2):
//!
//! | type | NexRv meaning | `itype` |
//! |---|---|---|
//! | `L` | linear (anything else, incl. `ebreak`, `sret`) | 0 |
//! | `B` | branch, taken (the next PC is not sequential) | 5 taken branch |
//! | `BN` | branch, not taken (the next PC is sequential) | 4 non-taken branch |
//! | `J` | direct jump (`j`, `jal x0`) | 11 inferable jump |
//! | `JI` | indirect jump (`jr`) | 10 uninferable jump |
//! | `C` | direct call (`jal`) | 9 inferable call |
//! | `CI` | indirect call (`jalr`, and `ecall`) | 8 uninferable call |
//! | `R` | return (`ret`, `mret`) | 13 return |
//!
//! Each line becomes a one-instruction record: `iretire` = size/2 half-words, `ilastsize` = 0 for 2
//! bytes and 1 for 4 bytes. PCSEQ carries no privilege; records get [`PcseqReader::with_priv`]'s
//! value, machine mode by default (the NexRv examples and the conformance programs are bare-metal
//! M-mode). Blank lines and lines starting with `.` are skipped; a line starting with `.e` ends the
//! sequence (as in `NexRv -enco`).
//!
//! When the trace ends on a branch NexRv writes its last line without the size (the size is only
//! written once the next PC shows whether the branch was taken); such a line is an error here.
//!
//! Writing ([`PcseqWriter`]) maps `itype` back with the table above, plus the codes NexRv has no type
//! for: 1/2 (trap after a retired instruction: `CI` for `ecall` causes 8-11, which NexRv classifies as
//! an indirect call, else `L`), 3 trap return → `R` (NexRv's `mret`), 6 (3-bit uninferable jump) →
//! `JI`, 12 co-routine swap and 14 other uninferable jump (`jalr` with a link register) → `CI`, 15
//! other inferable jump (`jal` with a link register) → `C`. Records that retire no instruction are
//! skipped (a PCSEQ lists retired instructions only; NexRv has no traps); records of several
//! instructions or of another size than 2 or 4 bytes, and `itype` 7 (reserved), are an
//! `InvalidInput` error.

use std::io::{self, BufRead, BufWriter, Write};

use crate::lines::{eol, hex, hex8, hex_until, strip_eol, ByteLines};
use crate::{privilege, IngressError, Itype, Record};

const FORMAT: &str = "PCSEQ";

/// Reads NexRv PCSEQ text (see the [module doc](self)).
///
/// Lines are parsed from the input's buffer as bytes; a line the fast parser does not take
/// (anything but `0x<hex>,<type><size>` exactly) goes to [`parse_line`], which decides.
pub struct PcseqReader<R: BufRead> {
    lines: ByteLines<R>,
    line_no: u64,
    priv_: u8,
    done: bool,
    /// Use the fast parser (tests turn it off to compare).
    fast: bool,
    /// An error [`read_batch`](Self::read_batch) found after records it returned: the next
    /// call's.
    pending: Option<IngressError>,
}

impl<R: BufRead> PcseqReader<R> {
    /// A reader of `r`; records get privilege M.
    pub fn new(r: R) -> Self {
        PcseqReader {
            lines: ByteLines::new(r),
            line_no: 0,
            priv_: privilege::M,
            done: false,
            fast: true,
            pending: None,
        }
    }

    /// Sets the privilege given to every record (PCSEQ has none).
    pub fn with_priv(mut self, priv_: u8) -> Self {
        self.priv_ = priv_;
        self
    }

    /// Up to `max` records appended to `out`, as many calls of [`next_record`](Self::next_record)
    /// give them (lines in the input's buffer parsed in one go): their number, 0 at the end of
    /// the input. An error found after some records were appended comes on the next call (the
    /// records before it are never lost), and reading goes on after it as with `next_record`.
    /// [`read_into`](Self::read_into) with `out` grown (4096 records at a time).
    pub fn read_batch(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, IngressError> {
        crate::lines::read_batch(self, out, max)
    }

    /// Fills `out` from its start with the next records, as many calls of
    /// [`next_record`](Self::next_record) give them (lines in the input's buffer parsed in
    /// place, into `out`): their number, 0 at the end of the input (or when `out` is empty).
    /// An error found after some records were written comes on the next call (the records
    /// before it are never lost), and reading goes on after it as with `next_record`. The
    /// slots past the number returned hold anything.
    pub fn read_into(&mut self, out: &mut [Record]) -> Result<usize, IngressError> {
        if out.is_empty() {
            return Ok(0);
        }
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        let mut got = 0;
        while got < out.len() {
            if self.fast && !self.done {
                let priv_ = self.priv_;
                let parse = |buf: &[u8], rec: &mut Record| line_prefix(buf, priv_, rec);
                let n = self.lines.parse_into(parse, &mut out[got..]);
                self.line_no += n as u64;
                got += n;
                if got == out.len() {
                    break;
                }
            }
            match self.next_slow() {
                Ok(Some(r)) => {
                    out[got] = r;
                    got += 1;
                }
                Ok(None) => break,
                Err(e) if got == 0 => return Err(e),
                Err(e) => {
                    self.pending = Some(e);
                    break;
                }
            }
        }
        Ok(got)
    }

    /// The next record, `Ok(None)` at the end of the input or at a `.e` line.
    pub fn next_record(&mut self) -> Result<Option<Record>, IngressError> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        if self.fast && !self.done {
            let priv_ = self.priv_;
            let parse = |buf: &[u8]| {
                let mut rec = Record::default();
                line_prefix(buf, priv_, &mut rec).map(|n| (rec, n))
            };
            if let Some(rec) = self.lines.try_parse(parse) {
                self.line_no += 1;
                return Ok(Some(rec));
            }
        }
        self.next_slow()
    }

    /// The next record where the line parser of [`read_into`](Self::read_into) and
    /// [`next_record`](Self::next_record) did not take the line (or did not run): [`fast_line`] on the line, and [`slow_line`], which decides.
    // Out of line: the batch loop keeps its registers.
    #[inline(never)]
    fn next_slow(&mut self) -> Result<Option<Record>, IngressError> {
        let fast = self.fast;
        while !self.done {
            let line_no = self.line_no + 1;
            let got = self.lines.next_line(|line| match fast_line(line) {
                Some(r) if fast => Line::Record(r),
                _ => slow_line(line, line_no),
            })?;
            let Some(line) = got else {
                self.done = true;
                break;
            };
            self.line_no = line_no;
            match line {
                Line::Record(mut rec) => {
                    rec.priv_ = self.priv_;
                    return Ok(Some(rec));
                }
                Line::Skip => {}
                Line::End => self.done = true,
                Line::Error(e) => return Err(e),
            }
        }
        Ok(None)
    }
}

/// What one line of PCSEQ holds.
enum Line {
    Record(Record),
    Skip,
    End,
    Error(IngressError),
}

/// The simple reading of a line (blank, `.` directive, `.e` end, or a record by [`parse_line`]).
fn slow_line(line: &[u8], line_no: u64) -> Line {
    let Ok(l) = std::str::from_utf8(line) else {
        return Line::Error(crate::lines::not_utf8().into());
    };
    let l = l.trim();
    if l.is_empty() {
        Line::Skip
    } else if l.starts_with(".e") {
        Line::End
    } else if l.starts_with('.') {
        Line::Skip
    } else {
        match parse_line(l, line_no) {
            Ok(r) => Line::Record(r),
            Err(e) => Line::Error(e),
        }
    }
}

/// The line at the start of `buf` (which must hold its line end) by [`short_line`] or else
/// [`fast_prefix`]: the record (with privilege `priv_`) into `out` and the line's length.
#[inline(always)]
fn line_prefix(buf: &[u8], priv_: u8, out: &mut Record) -> Option<usize> {
    // Not `Option::or_else`, which the compiler may leave out of line.
    if let Some(n) = short_line(buf, priv_, out) {
        return Some(n);
    }
    let (r, n) = fast_prefix(buf)?;
    *out = Record { priv_, ..r };
    Some(n)
}

/// The common line, `0x`, eight hex digits (a 32-bit address), `,`, the type, the size and
/// `'\n'` (`0x80000032,J4`), at the start of `buf` with at least 16 bytes: the record (with
/// privilege `priv_`) into `out` and the line's length, as [`fast_prefix`] gives them; `None`
/// for any other (`out` untouched). The fields at fixed places, the address eight digits at
/// once.
#[inline(always)]
fn short_line(buf: &[u8], priv_: u8, out: &mut Record) -> Option<usize> {
    let l: &[u8; 16] = buf.first_chunk()?;
    // `0x` or `0X` (the only bytes that are `x` with bit 5 set), and the comma.
    if l[0] != b'0' || l[1] | 0x20 != b'x' || l[10] != b',' {
        return None;
    }
    let iaddr = hex8(l[2..10].try_into().expect("8 bytes"))?;
    // A one-letter type is followed by its size, a two-letter one by its second letter.
    let (itype, n) = match (l[11], l[12]) {
        (t, b'2' | b'4') => (ONE_LETTER[t as usize], 12),
        (b'B', b'N') => (Itype::NonTakenBranch as u8, 13),
        (b'J', b'I') => (Itype::UninferableJump as u8, 13),
        (b'C', b'I') => (Itype::UninferableCall as u8, 13),
        _ => return None,
    };
    let ilastsize = match l[n] {
        b'2' => 0,
        b'4' => 1,
        _ => return None,
    };
    if itype > 15 || l[n + 1] != b'\n' {
        return None;
    }
    *out = Record {
        iaddr: iaddr as u64,
        iretire: 1 << ilastsize,
        ilastsize,
        itype: Itype::from_code(itype),
        priv_,
        ..Record::default()
    };
    Some(n + 2)
}

/// The `itype` code of each one-letter type, 0xff for other bytes.
static ONE_LETTER: [u8; 256] = {
    let mut t = [0xffu8; 256];
    t[b'L' as usize] = Itype::None as u8;
    t[b'B' as usize] = Itype::TakenBranch as u8;
    t[b'J' as usize] = Itype::InferableJump as u8;
    t[b'C' as usize] = Itype::InferableCall as u8;
    t[b'R' as usize] = Itype::Return as u8;
    t
};

/// [`fast_line`] on the line at the start of `buf` (which must hold its line end): the record
/// and the line's length.
#[inline(always)]
fn fast_prefix(buf: &[u8]) -> Option<(Record, usize)> {
    let (iaddr, comma) = hex_until(buf, b',')?;
    let rest = &buf[comma + 1..];
    let (itype, n) = match rest {
        [b'L', ..] => (Itype::None, 1),
        [b'B', b'N', ..] => (Itype::NonTakenBranch, 2),
        [b'B', ..] => (Itype::TakenBranch, 1),
        [b'J', b'I', ..] => (Itype::UninferableJump, 2),
        [b'J', ..] => (Itype::InferableJump, 1),
        [b'C', b'I', ..] => (Itype::UninferableCall, 2),
        [b'C', ..] => (Itype::InferableCall, 1),
        [b'R', ..] => (Itype::Return, 1),
        _ => return None,
    };
    let ilastsize = match rest.get(n)? {
        b'2' => 0,
        b'4' => 1,
        _ => return None,
    };
    let len = comma + 1 + n + 1;
    let end = eol(&buf[len..])?;
    Some((
        Record {
            iaddr,
            iretire: 1 << ilastsize,
            ilastsize,
            itype,
            ..Record::default()
        },
        len + end,
    ))
}

/// The record of a line that is exactly `[0x]<1-16 hex digits>,<type><2|4>` (line end
/// included), as [`parse_line`] gives it; `None` for anything else.
#[inline(always)]
fn fast_line(line: &[u8]) -> Option<Record> {
    let l = strip_eol(line)?;
    let comma = memchr::memchr(b',', l)?;
    let iaddr = hex(&l[..comma])?;
    let (itype, size) = match &l[comma + 1..] {
        [b'L', s] => (Itype::None, *s),
        [b'B', s] => (Itype::TakenBranch, *s),
        [b'B', b'N', s] => (Itype::NonTakenBranch, *s),
        [b'J', s] => (Itype::InferableJump, *s),
        [b'J', b'I', s] => (Itype::UninferableJump, *s),
        [b'C', s] => (Itype::InferableCall, *s),
        [b'C', b'I', s] => (Itype::UninferableCall, *s),
        [b'R', s] => (Itype::Return, *s),
        _ => return None,
    };
    let ilastsize = match size {
        b'2' => 0,
        b'4' => 1,
        _ => return None,
    };
    Some(Record {
        iaddr,
        iretire: 1 << ilastsize,
        ilastsize,
        itype,
        ..Record::default()
    })
}

impl<R: BufRead> crate::lines::FillRecords for PcseqReader<R> {
    fn fill(&mut self, out: &mut [Record]) -> Result<usize, IngressError> {
        self.read_into(out)
    }
    fn pending(&mut self) -> &mut Option<IngressError> {
        &mut self.pending
    }
}

impl<R: BufRead> Iterator for PcseqReader<R> {
    type Item = Result<Record, IngressError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// Parses one PCSEQ line (no comment) into a record with privilege U (0); `line_no` is for errors.
pub fn parse_line(l: &str, line_no: u64) -> Result<Record, IngressError> {
    let err = |m: String| IngressError::parse(FORMAT, line_no, m);
    let (pc, kind) = l
        .split_once(',')
        .ok_or_else(|| err(format!("expected 0x<PC>,<type><size>, found {l:?}")))?;
    let hex = pc
        .strip_prefix("0x")
        .or_else(|| pc.strip_prefix("0X"))
        .unwrap_or(pc);
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(err(format!("invalid PC {pc:?}")));
    }
    let iaddr = u64::from_str_radix(hex, 16).map_err(|_| err(format!("invalid PC {pc:?}")))?;
    let split = kind
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(kind.len());
    let (ty, size) = kind.split_at(split);
    let itype = match ty {
        "L" => Itype::None,
        "B" => Itype::TakenBranch,
        "BN" => Itype::NonTakenBranch,
        "J" => Itype::InferableJump,
        "JI" => Itype::UninferableJump,
        "C" => Itype::InferableCall,
        "CI" => Itype::UninferableCall,
        "R" => Itype::Return,
        _ => return Err(err(format!("unknown instruction type {ty:?}"))),
    };
    let ilastsize = match size {
        "2" => 0,
        "4" => 1,
        "" if ty == "B" => {
            return Err(err(
                "branch without size: NexRv leaves the last line unterminated when the trace ends on a branch"
                    .into(),
            ))
        }
        _ => return Err(err(format!("invalid instruction size {size:?} (expected 2 or 4)"))),
    };
    Ok(Record {
        iaddr,
        iretire: 1 << ilastsize,
        ilastsize,
        itype,
        ..Record::default()
    })
}

/// The PCSEQ type for a record (module doc); `None` for `itype` 7.
fn type_name(r: &Record) -> Option<&'static str> {
    Some(match r.itype {
        Itype::None => "L",
        Itype::TakenBranch => "B",
        Itype::NonTakenBranch => "BN",
        Itype::InferableJump => "J",
        Itype::UninferableJump | Itype::UninferableJump3 => "JI",
        Itype::InferableCall | Itype::OtherInferableJump => "C",
        Itype::UninferableCall | Itype::CoroutineSwap | Itype::OtherUninferableJump => "CI",
        Itype::Return | Itype::TrapReturn => "R",
        Itype::Exception | Itype::Interrupt => {
            if (8..=11).contains(&r.cause) {
                "CI"
            } else {
                "L"
            }
        }
        Itype::Reserved7 => return None,
    })
}

/// Writes NexRv PCSEQ text (see the [module doc](self)). Buffered; call [`finish`](Self::finish).
pub struct PcseqWriter<W: Write> {
    inner: BufWriter<W>,
    skipped: u64,
}

impl<W: Write> PcseqWriter<W> {
    /// A writer to `w`.
    pub fn new(w: W) -> Self {
        PcseqWriter {
            inner: BufWriter::with_capacity(64 << 10, w),
            skipped: 0,
        }
    }

    /// Writes the line for one record; a record with no retired instruction is skipped (counted in
    /// [`skipped`](Self::skipped)).
    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        if r.iretire == 0 {
            self.skipped += 1;
            return Ok(());
        }
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        let size = match (r.iretire, r.ilastsize) {
            (1, 0) => 2,
            (2, 1) => 4,
            _ => {
                return Err(invalid(format!(
                    "record at {:#x} (iretire {} half-words, ilastsize {}) is not one 16- or 32-bit instruction",
                    r.iaddr, r.iretire, r.ilastsize
                )))
            }
        };
        let ty = type_name(r)
            .ok_or_else(|| invalid(format!("record at {:#x} has reserved itype 7", r.iaddr)))?;
        writeln!(self.inner, "0x{:X},{ty}{size}", r.iaddr)
    }

    /// Records skipped because they retire no instruction.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Flushes and returns the inner writer.
    pub fn finish(self) -> io::Result<W> {
        self.inner.into_inner().map_err(|e| e.into_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record and error of a reader, as text.
    fn outcomes<R: BufRead>(mut r: PcseqReader<R>) -> Vec<String> {
        crate::lines::next_outcomes(|| r.next_record())
    }

    /// [`outcomes`] read with `read_batch`, `max` records at a time.
    fn batch_outcomes<R: BufRead>(mut r: PcseqReader<R>, max: usize) -> Vec<String> {
        crate::lines::batch_outcomes(|v, m| r.read_batch(v, m), max)
    }

    /// [`outcomes`] read with `read_into`, into `max` slots that hold a record with every
    /// field set before each call (a fast path that leaves a field as it was shows).
    fn into_outcomes<R: BufRead>(mut r: PcseqReader<R>, max: usize) -> Vec<String> {
        crate::lines::fill_outcomes(&mut r, max)
    }

    #[test]
    fn fast_parser_equals_the_simple_one_on_random_lines() {
        use crate::lines::gen::{Rng, Text};
        const TYPES: &[&str] = &["L", "B", "BN", "J", "JI", "C", "CI", "R", "X", "", "l"];
        const SIZES: &[&str] = &["2", "4", "", "3", "44"];
        const PREFIX: &[&str] = &["0x", "0x", "0X", "", "0x0x"];
        const ENDS: &[&str] = &["\n", "\n", "\r\n", "\r\r\n", " \n", "\n\n"];
        for seed in 1..=20u64 {
            let mut g = Rng(seed);
            let mut text = Vec::new();
            let mut records = 0;
            for i in 0..500 {
                let line = match g.below(40) {
                    0 => ".x directive".to_string(),
                    1 => String::new(),
                    2 => "   ".to_string(),
                    // The end late in the text (records and errors before it).
                    3 if seed % 4 == 0 && i > 400 => ".e".to_string(),
                    // The common shape (eight digits, a type, a size) half of the time.
                    4..=20 => {
                        records += 1;
                        const HEXC: &[u8] = b"0123456789ABCDEFabcdef0G";
                        let digits: String = (0..8)
                            .map(|_| {
                                // Lower case and a `G` now and then.
                                let n = [16, 16, 16, 22, HEXC.len()][g.index(5)];
                                char::from(HEXC[g.index(n)])
                            })
                            .collect();
                        let prefix = ["0x", "0x", "0x", "0X", "0x0"][g.index(5)];
                        let size = ["2", "4", "4", "3"][g.index(4)];
                        format!("{prefix}{digits},{}{size}", *g.pick(TYPES))
                    }
                    _ => {
                        records += 1;
                        format!(
                            "{}{},{}{}",
                            *g.pick(PREFIX),
                            g.digits(true).to_uppercase(),
                            *g.pick(TYPES),
                            *g.pick(SIZES)
                        )
                    }
                };
                text.extend(g.damage(&line));
                text.extend(g.pick(ENDS).as_bytes());
            }
            if g.below(2) == 0 {
                text.extend(b"0x80000000,L4"); // no line end
            }
            let mut slow = PcseqReader::new(&text[..]);
            slow.fast = false;
            let slow = outcomes(slow);
            // Small buffers (lines span fills) and large ones (lines parsed in the buffer).
            let mut fast = Vec::new();
            for cap in [7, 64, 1 << 16] {
                let r = PcseqReader::new(std::io::BufReader::with_capacity(cap, &text[..]));
                fast = outcomes(r);
                assert_eq!(fast, slow, "seed {seed} buffer {cap}");
                let max = [1, 3, 1000][seed as usize % 3];
                let r = PcseqReader::new(std::io::BufReader::with_capacity(cap, &text[..]));
                let batch = batch_outcomes(r, max);
                assert_eq!(batch, slow, "seed {seed} buffer {cap} batches of {max}");
                let r = PcseqReader::new(std::io::BufReader::with_capacity(cap, &text[..]));
                let into = into_outcomes(r, max);
                assert_eq!(into, slow, "seed {seed} buffer {cap} slices of {max}");
            }
            assert!(records > 0 && !fast.is_empty());
            assert!(fast.iter().any(|o| o.starts_with("error")), "seed {seed}");
            assert!(fast.iter().any(|o| !o.starts_with("error")), "seed {seed}");
        }
    }

    /// `read_batch` over more records than one `read_into` slice holds, with damaged lines
    /// on both sides of a slice's end: the records and errors `next_record` gives.
    #[test]
    fn read_batch_over_many_slices() {
        let mut text = String::new();
        for i in 0..10_000u64 {
            match i {
                4095 | 4097 | 9000 => text.push_str("0x10,L3\n"),
                _ => text.push_str(&format!(
                    "0x{:X},{}\n",
                    0x8000_0000 + 2 * i,
                    ["L4", "BN2"][i as usize % 2]
                )),
            }
        }
        let slow = outcomes(PcseqReader::new(text.as_bytes()));
        assert_eq!(slow.iter().filter(|o| o.starts_with("error")).count(), 3);
        for max in [4095, 4096, 4097, 1 << 20] {
            let batch = batch_outcomes(PcseqReader::new(text.as_bytes()), max);
            assert_eq!(batch, slow, "batches of {max}");
        }
    }

    const SAMPLE: &str = "0x80000032,J4\n0x80000038,C4\n0x800003A8,JI2\n0x800003D6,BN2\n\
0x800003E6,B2\n0x800003D8,L4\n0x8000195E,CI2\n0x8000191C,R4\n";

    #[test]
    fn round_trip_sample() {
        let recs: Vec<Record> = PcseqReader::new(SAMPLE.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(recs.len(), 8);
        assert_eq!(recs[0].itype, Itype::InferableJump);
        assert_eq!(recs[2].itype, Itype::UninferableJump);
        assert_eq!((recs[2].iretire, recs[2].ilastsize), (1, 0));
        assert_eq!(recs[3].itype, Itype::NonTakenBranch);
        assert_eq!(recs[4].itype, Itype::TakenBranch);
        assert!(recs.iter().all(|r| r.priv_ == privilege::M));
        let mut w = PcseqWriter::new(Vec::new());
        for r in &recs {
            w.write(r).unwrap();
        }
        assert_eq!(String::from_utf8(w.finish().unwrap()).unwrap(), SAMPLE);
    }

    #[test]
    fn comments_end_marker_and_errors() {
        let text = ".comment\n\n0x10,L4\n.e\n0x20,L4\n";
        let recs: Vec<Record> = PcseqReader::new(text.as_bytes())
            .with_priv(privilege::U)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].priv_, privilege::U);
        for bad in [
            "0x10,B",
            "0x10,X4",
            "0x10,L3",
            "0x1g,L4",
            "0x10",
            "0x10,L4,0x20",
        ] {
            let e = PcseqReader::new(format!("0x0,L2\n{bad}\n").as_bytes())
                .nth(1)
                .unwrap()
                .unwrap_err();
            assert_eq!(e.line(), Some(2), "{bad}: {e}");
        }
        let mut w = PcseqWriter::new(Vec::new());
        let trap = Record {
            iaddr: 0x40,
            itype: Itype::Exception,
            cause: 2,
            ..Record::default()
        };
        w.write(&trap).unwrap();
        assert_eq!(w.skipped(), 1);
        let ecall = Record {
            iretire: 2,
            ilastsize: 1,
            cause: 11,
            ..trap
        };
        w.write(&ecall).unwrap();
        let block = Record {
            iretire: 3,
            ..ecall
        };
        assert!(w.write(&block).is_err());
        assert_eq!(
            String::from_utf8(w.finish().unwrap()).unwrap(),
            "0x40,CI4\n"
        );
    }
}
