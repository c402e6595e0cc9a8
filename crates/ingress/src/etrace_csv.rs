//! The E-Trace reference flow's ingress CSV: `post-iss` output (`X.encoder_input`), the input of
//! `encoder_model.py` (riscv-non-isa/riscv-trace-spec `referenceFlow`).
//!
//! ```text
//! itype_0,cause,tval,priv,iaddr_0,context,ctype,iretire_0,ilastsize_0
//! 0,0,0,3,80000000,0,0,1,1
//! 1,3,0,3,80001914,0,0,1,1
//! ```
//!
//! Columns, in the order `post-iss` writes them (optional ones depend on the static config):
//!
//! | column | present | format | [`Record`] field |
//! |---|---|---|---|
//! | `itype_0` | always | decimal | `itype` (`ingressPort.adoc` table "Instruction Type (itype) encoding") |
//! | `cause` | always | **decimal** | `cause` |
//! | `tval` | always | hex, no `0x` | `tval` |
//! | `priv` | always | decimal | `priv_` |
//! | `iaddr_0` | always | hex, no `0x` | `iaddr` |
//! | `context` | `nocontext_p`=0 ([`CsvColumns::context`]) | decimal | `context` |
//! | `time` | `notime_p`=0 ([`CsvColumns::time`]) | decimal | `time` |
//! | `ctype` | with `context` | decimal | `ctype` |
//! | `sijump_0` | `sijump_p`=1 ([`CsvColumns::sijump`]) | 0/1 | `sijump` |
//! | `iretire_0` | always | decimal, **instructions** (0 or 1) | `iretire` = `iretire_0` × 2^`ilastsize` half-words |
//! | `ilastsize_0` | always | decimal | `ilastsize` |
//!
//! **`iretire` units.** The reference flow is single-retirement (`retires_p`=1): `iretire_0` is the
//! number of instructions retired, 0 or 1 (`ingressPort.adoc`, "Simplifications for
//! single-retirement", table "Instruction interface signals - single retirement per block"), as the
//! conformance files show (every row has `iretire_0`=1, with `ilastsize_0` 0 for 16-bit and 1 for
//! 32-bit instructions). A [`Record`] counts half-words, so a row with `iretire_0`=1 becomes
//! `iretire` = 2^`ilastsize` (1 or 2), and back. A record retiring more than one instruction cannot be
//! written ([`EtraceCsvWriter::write`] fails with `InvalidInput`). With `iretire_0`=0 (an exception
//! that retires nothing) `iaddr_0` is the faulting instruction's address and `ilastsize_0` its size;
//! both are kept.
//!
//! **Traps** (conformance README, "Trap convention"; post-iss `infer_itype`): a trap is `itype_0`=1
//! (exception) or 2 (interrupt) on the row of the instruction that trapped, with `cause`/`tval`;
//! `ecall`/`ebreak` retire (`iretire_0`=1), other exceptions do not (`iretire_0`=0). The next row is the
//! first instruction of the handler. No conversion is applied: rows and records correspond one to one.
//!
//! Multiple-retirement files (`itype_1`, `iaddr_1`, ... columns, `retires_p` > 1) are rejected.

use std::io::{self, BufRead, BufWriter, Write};

use crate::lines::{dec, dec_field, eol, hex, hex8, hex_until, strip_eol, ByteLines, HEX};
use crate::{IngressError, Itype, Record};

const FORMAT: &str = "E-Trace CSV";

/// Which optional columns an E-Trace CSV has (`post-iss` `define_post_iss_header`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsvColumns {
    /// `context` and `ctype` columns (`nocontext_p` = 0).
    pub context: bool,
    /// `time` column (`notime_p` = 0).
    pub time: bool,
    /// `sijump_0` column (`sijump_p` = 1).
    pub sijump: bool,
}

impl Default for CsvColumns {
    /// The referenceFlow template (`i_template.scf`: `nocontext_p=0`, `notime_p=1`, `sijump_p=0`), as in
    /// the conformance vectors.
    fn default() -> Self {
        CsvColumns {
            context: true,
            time: false,
            sijump: false,
        }
    }
}

/// Column identifiers, in post-iss order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    Itype,
    Cause,
    Tval,
    Priv,
    Iaddr,
    Context,
    Time,
    Ctype,
    Sijump,
    Iretire,
    Ilastsize,
    /// A column the caller named to be skipped ([`EtraceCsvReader::with_ignored`]).
    Ignored,
}

impl Col {
    fn name(self) -> &'static str {
        match self {
            Col::Itype => "itype_0",
            Col::Cause => "cause",
            Col::Tval => "tval",
            Col::Priv => "priv",
            Col::Iaddr => "iaddr_0",
            Col::Context => "context",
            Col::Time => "time",
            Col::Ctype => "ctype",
            Col::Sijump => "sijump_0",
            Col::Iretire => "iretire_0",
            Col::Ilastsize => "ilastsize_0",
            Col::Ignored => "(ignored)",
        }
    }

    const ALL: [Col; 11] = [
        Col::Itype,
        Col::Cause,
        Col::Tval,
        Col::Priv,
        Col::Iaddr,
        Col::Context,
        Col::Time,
        Col::Ctype,
        Col::Sijump,
        Col::Iretire,
        Col::Ilastsize,
    ];
}

impl CsvColumns {
    fn has(&self, c: Col) -> bool {
        match c {
            Col::Context | Col::Ctype => self.context,
            Col::Time => self.time,
            Col::Sijump => self.sijump,
            _ => true,
        }
    }

    fn cols(&self) -> Vec<Col> {
        Col::ALL.into_iter().filter(|&c| self.has(c)).collect()
    }

    /// The header line `post-iss` writes for these columns (without newline).
    pub fn header_line(&self) -> String {
        self.cols()
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Reads an E-Trace reference-flow CSV (see the [module doc](self)).
///
/// Rows are parsed from the input's buffer as bytes; a row the fast parser does not take (any
/// field that is not plain digits, an out-of-range value, a blank line) goes to the simple
/// `&str` parser, which decides.
pub struct EtraceCsvReader<R: BufRead> {
    lines: ByteLines<R>,
    columns: CsvColumns,
    /// Column of each field, by position in the file.
    order: Vec<Col>,
    line_no: u64,
    /// Use the fast parser (tests turn it off to compare).
    fast: bool,
    /// The parser of rows in `post-iss` order with these columns ([`standard_prefix`]), when
    /// the file has that order.
    standard: Option<RowParser>,
    /// An error [`read_batch`](Self::read_batch) found after records it returned: the next
    /// call's.
    pending: Option<IngressError>,
}

/// A parser of the row at the start of a buffer: the record written into its second argument,
/// the row's length returned (`None`: the row is left to the general parsers, and the record
/// may hold anything).
type RowParser = fn(&[u8], &mut Record) -> Option<usize>;

fn parse_dec(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_hex(s: &str) -> Option<u64> {
    let h = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

impl<R: BufRead> EtraceCsvReader<R> {
    /// Reads and checks the header line.
    pub fn new(r: R) -> Result<Self, IngressError> {
        Self::with_ignored(r, &[])
    }

    /// Reads and checks the header line; the columns named in `ignore` (a simulator's `cycle`,
    /// say) are skipped in every row, whatever they hold. Other unknown columns are an error,
    /// so a misspelt optional column is never dropped quietly.
    pub fn with_ignored(mut r: R, ignore: &[&str]) -> Result<Self, IngressError> {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Err(IngressError::parse(
                FORMAT,
                1,
                "empty file (no header line)",
            ));
        }
        let err = |m: String| IngressError::parse(FORMAT, 1, m);
        let mut order = Vec::new();
        for name in line.trim_end_matches(['\n', '\r']).split(',') {
            let name = name.trim();
            let col = Col::ALL.into_iter().find(|c| c.name() == name);
            match col {
                Some(c) if order.contains(&c) => {
                    return Err(err(format!("duplicate column {name:?}")))
                }
                Some(c) => order.push(c),
                None if ignore.contains(&name) => order.push(Col::Ignored),
                None if name.starts_with("itype_")
                    || name.starts_with("iaddr_")
                    || name.starts_with("iretire_")
                    || name.starts_with("ilastsize_")
                    || name.starts_with("sijump_") =>
                {
                    return Err(err(format!(
                        "column {name:?}: multiple-retirement files (retires_p > 1) are not supported"
                    )))
                }
                None => {
                    let known: Vec<&str> = Col::ALL.iter().map(|c| c.name()).collect();
                    return Err(err(format!(
                        "unknown column {name:?}: the columns are {}; name a column to skip it \
                         (rvtrace: --csv-ignore {name})",
                        known.join(", ")
                    )));
                }
            }
        }
        for c in [
            Col::Itype,
            Col::Cause,
            Col::Tval,
            Col::Priv,
            Col::Iaddr,
            Col::Iretire,
            Col::Ilastsize,
        ] {
            if !order.contains(&c) {
                return Err(err(format!("missing column {:?}", c.name())));
            }
        }
        if order.contains(&Col::Context) != order.contains(&Col::Ctype) {
            return Err(err(
                "columns context and ctype must both be present or both absent (post-iss nocontext_p)"
                    .into(),
            ));
        }
        let columns = CsvColumns {
            context: order.contains(&Col::Context),
            time: order.contains(&Col::Time),
            sijump: order.contains(&Col::Sijump),
        };
        let parser: RowParser = match (columns.context, columns.time, columns.sijump) {
            (true, false, false) => default_prefix,
            (true, true, false) => standard_prefix::<true, true, false>,
            (true, false, true) => standard_prefix::<true, false, true>,
            (true, true, true) => standard_prefix::<true, true, true>,
            (false, false, false) => standard_prefix::<false, false, false>,
            (false, true, false) => standard_prefix::<false, true, false>,
            (false, false, true) => standard_prefix::<false, false, true>,
            (false, true, true) => standard_prefix::<false, true, true>,
        };
        let standard = (order == columns.cols()).then_some(parser);
        Ok(EtraceCsvReader {
            lines: ByteLines::new(r),
            columns,
            order,
            line_no: 1,
            fast: true,
            standard,
            pending: None,
        })
    }

    /// The optional columns present.
    pub fn columns(&self) -> CsvColumns {
        self.columns
    }

    /// Up to `max` records appended to `out`, as many calls of [`next_record`](Self::next_record)
    /// give them (rows in the input's buffer parsed in one go): their number, 0 at the end of
    /// the file. An error found after some records were appended comes on the next call (the
    /// records before it are never lost), and reading goes on after it as with `next_record`.
    /// [`read_into`](Self::read_into) with `out` grown (4096 records at a time).
    pub fn read_batch(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, IngressError> {
        crate::lines::read_batch(self, out, max)
    }

    /// Fills `out` from its start with the next records, as many calls of
    /// [`next_record`](Self::next_record) give them (rows in the input's buffer parsed in
    /// place, into `out`): their number, 0 at the end of the file (or when `out` is empty). An
    /// error found after some records were written comes on the next call (the records before
    /// it are never lost), and reading goes on after it as with `next_record`. The slots past
    /// the number returned hold anything.
    pub fn read_into(&mut self, out: &mut [Record]) -> Result<usize, IngressError> {
        if out.is_empty() {
            return Ok(0);
        }
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        let mut got = 0;
        while got < out.len() {
            if let (true, Some(parse)) = (self.fast, self.standard) {
                // The default columns' parser called directly (inlined in the loop), the
                // others through the pointer.
                let n = if self.columns == CsvColumns::default() {
                    self.lines.parse_into(default_prefix, &mut out[got..])
                } else {
                    self.lines.parse_into(parse, &mut out[got..])
                };
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

    /// The next record, `Ok(None)` at the end of the file (blank lines are skipped).
    pub fn next_record(&mut self) -> Result<Option<Record>, IngressError> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        if let (true, Some(parse)) = (self.fast, self.standard) {
            // The default columns' parser called directly (inlined), the others through the
            // pointer.
            let default = self.columns == CsvColumns::default();
            let parse = |buf: &[u8]| {
                let mut rec = Record::default();
                let n = match default {
                    true => default_prefix(buf, &mut rec),
                    false => parse(buf, &mut rec),
                };
                n.map(|n| (rec, n))
            };
            if let Some(rec) = self.lines.try_parse(parse) {
                self.line_no += 1;
                return Ok(Some(rec));
            }
        }
        self.next_slow()
    }

    /// The next record where the row parser of [`read_into`](Self::read_into) and
    /// [`next_record`](Self::next_record) did not take the row (or did not run): the parser for another column order, then [`fast_row`] on
    /// the line and [`slow_row`], which decides.
    // Out of line: the batch loop keeps its registers.
    #[inline(never)]
    fn next_slow(&mut self) -> Result<Option<Record>, IngressError> {
        let (fast, order) = (self.fast, &self.order[..]);
        if fast && self.standard.is_none() {
            if let Some(rec) = self.lines.try_parse(|buf| fast_prefix(buf, order)) {
                self.line_no += 1;
                return Ok(Some(rec));
            }
        }
        loop {
            let line_no = self.line_no + 1;
            let got = self.lines.next_line(|line| match fast_row(line, order) {
                Some(r) if fast => Ok(Some(r)),
                _ => slow_row(line, order, line_no),
            })?;
            let Some(row) = got else {
                return Ok(None);
            };
            self.line_no = line_no;
            match row {
                Ok(None) => continue,
                r => return r,
            }
        }
    }
}

/// The simple reading of a line: `None` for a blank line, else [`parse_row`].
fn slow_row(line: &[u8], order: &[Col], line_no: u64) -> Result<Option<Record>, IngressError> {
    let l = std::str::from_utf8(line).map_err(|_| crate::lines::not_utf8())?;
    let l = l.trim_end_matches(['\n', '\r']);
    if l.trim().is_empty() {
        return Ok(None);
    }
    parse_row(l, order, line_no).map(Some)
}

/// A cursor over the row at the start of a buffer, for [`standard_prefix`].
struct Cursor<'a> {
    buf: &'a [u8],
    p: usize,
}

impl Cursor<'_> {
    /// A decimal field and its `,`: 1 to 19 digits (a single digit is the common case).
    #[inline(always)]
    fn dec(&mut self) -> Option<u64> {
        if let Some(&[d, b',']) = self.buf.get(self.p..self.p + 2) {
            if d.is_ascii_digit() {
                self.p += 2;
                return Some((d - b'0') as u64);
            }
        }
        let (v, n) = dec_field(self.buf.get(self.p..)?)?;
        self.p += n;
        self.comma()?;
        Some(v)
    }

    /// A decimal field of at most `max` (below 256) and its `,`.
    #[inline(always)]
    fn small(&mut self, max: u64) -> Option<u8> {
        self.dec().filter(|&v| v <= max).map(|v| v as u8)
    }

    /// A hex field (1 to 16 digits, an optional `0x`) and its `,` (a single digit is the
    /// common case: `tval`).
    #[inline(always)]
    fn hex(&mut self) -> Option<u64> {
        if let Some(&[d, b',']) = self.buf.get(self.p..self.p + 2) {
            if HEX[d as usize] < 16 {
                self.p += 2;
                return Some(HEX[d as usize] as u64);
            }
        }
        let (v, n) = hex_until(self.buf.get(self.p..)?, b',')?;
        self.p += n + 1;
        Some(v)
    }

    #[inline(always)]
    fn comma(&mut self) -> Option<()> {
        (*self.buf.get(self.p)? == b',').then(|| self.p += 1)
    }
}

/// The row at the start of `buf` (which must hold its line end) in `post-iss` order with the
/// optional columns `CONTEXT` (and ctype), `TIME`, `SIJUMP`, parsed field after field with no
/// look at the column order: the record (into `out`) and the row's length, as [`fast_prefix`]
/// gives them.
#[inline(always)]
fn standard_prefix<const CONTEXT: bool, const TIME: bool, const SIJUMP: bool>(
    buf: &[u8],
    out: &mut Record,
) -> Option<usize> {
    let mut c = Cursor { buf, p: 0 };
    let mut rec = Record {
        itype: Itype::from_code(c.small(15)?),
        cause: c.dec()?,
        tval: c.hex()?,
        priv_: c.small(255)?,
        iaddr: c.hex()?,
        ..Record::default()
    };
    if CONTEXT {
        rec.context = c.dec()?;
    }
    if TIME {
        rec.time = c.dec()?;
    }
    if CONTEXT {
        rec.ctype = c.small(255)?;
    }
    if SIJUMP {
        rec.sijump = c.small(1)? == 1;
    }
    let iretire = c.small(1)?;
    // The last field, then the line end.
    let rest = buf.get(c.p..)?;
    let (size, n) = match rest {
        [d @ b'0'..=b'9', b'\n' | b'\r', ..] => ((d - b'0') as u64, 1),
        _ => dec_field(rest)?,
    };
    rec.ilastsize = (size <= 30).then_some(size as u8)?;
    rec.iretire = (iretire as u32) << rec.ilastsize;
    let end = eol(&rest[n..])?;
    *out = rec;
    Some(c.p + n + end)
}

/// [`standard_prefix`] for the default columns ([`CsvColumns::default`]), with the common row
/// first: single-character fields but `iaddr_0`, eight hex digits (a 32-bit address), and a
/// `'\n'` (`0,0,0,3,80000000,0,0,1,1`), read eight bytes at a time.
#[inline(always)]
fn default_prefix(buf: &[u8], out: &mut Record) -> Option<usize> {
    // Not `Option::or_else`, which the compiler leaves out of line (a call per row).
    match short_default_row(buf, out) {
        Some(n) => Some(n),
        None => standard_prefix::<true, false, false>(buf, out),
    }
}

/// The common row of [`default_prefix`] (into `out`), `None` for any other (`out` untouched).
#[inline(always)]
fn short_default_row(buf: &[u8], out: &mut Record) -> Option<usize> {
    let row: &[u8; 25] = buf.first_chunk()?;
    let word = |i: usize| u64::from_le_bytes(row[i..i + 8].try_into().expect("8 bytes"));
    // `i,c,t,p,` then eight digits, then `,x,y,r,s\n`: the separators first.
    if word(0) & 0xff00_ff00_ff00_ff00 != 0x2c00_2c00_2c00_2c00
        || word(17) & 0xff00_ff00_ff00_ff00 != 0x0a00_2c00_2c00_2c00
        || row[16] != b','
    {
        return None;
    }
    let iaddr = hex8(row[8..16].try_into().expect("8 bytes"))?;
    let tval = HEX[row[4] as usize];
    if tval > 15 {
        return None;
    }
    // The one-character fields, one a 16-bit lane: `i`, `c`, `t` (checked above), `p`, and
    // `x`, `y`, `r`, `s`. Decimal digits all (`r` 0 or 1), all at once.
    const LANES: u64 = 0x00ff_00ff_00ff_00ff;
    const TOP: u64 = 0x8000_8000_8000_8000;
    const TVAL: u64 = 0x0000_8000_0000_0000;
    let (a, b) = (word(0) & LANES, word(17) & LANES);
    // The top bit of each lane: whether its byte is at least `c`.
    let at_least = |v: u64, c: u8| (v + (0x8000 - c as u64) * 0x0001_0001_0001_0001) & TOP;
    let digits = |v: u64| at_least(v, b'0') & !at_least(v, b'9' + 1);
    if digits(a) | TVAL != TOP || digits(b) != TOP || at_least(b, b'2') & TVAL != 0 {
        return None;
    }
    // No lane is below `0`: no borrow crosses lanes.
    let (a, b) = (a - 0x0030_0030_0030_0030, b - 0x0030_0030_0030_0030);
    let (itype, cause, priv_) = (a as u8, (a >> 16) as u8, (a >> 48) as u8);
    let (context, ctype, iretire, ilastsize) =
        (b as u8, (b >> 16) as u8, (b >> 32) as u8, (b >> 48) as u8);
    *out = Record {
        iaddr: iaddr as u64,
        iretire: (iretire as u32) << ilastsize,
        ilastsize,
        itype: Itype::from_code(itype),
        cause: cause as u64,
        tval: tval as u64,
        priv_,
        context: context as u64,
        ctype,
        ..Record::default()
    };
    Some(25)
}

/// [`fast_row`] on the row at the start of `buf` (which must hold its line end): the record and
/// the row's length.
#[inline(always)]
fn fast_prefix(buf: &[u8], order: &[Col]) -> Option<(Record, usize)> {
    let mut rec = Record::default();
    let mut iretire_insns = 0u32;
    let mut p = 0;
    let last = order.len().checked_sub(1)?;
    for (i, &c) in order.iter().enumerate() {
        let f = &buf[p..];
        let (v, n) = match c {
            Col::Ignored if i == last => (0, memchr::memchr2(b'\n', b'\r', f)?),
            // The separator checked below: a line end there is a short row.
            Col::Ignored => (0, memchr::memchr3(b',', b'\n', b'\r', f)?),
            Col::Tval | Col::Iaddr => hex_until(f, if i == last { b'\n' } else { b',' })
                .or_else(|| hex_until(f, b'\r'))?,
            _ => dec_field(f)?,
        };
        let small = |max: u64| (v <= max).then_some(v as u8);
        match c {
            Col::Itype => rec.itype = Itype::from_code(small(15)?),
            Col::Cause => rec.cause = v,
            Col::Tval => rec.tval = v,
            Col::Priv => rec.priv_ = small(255)?,
            Col::Iaddr => rec.iaddr = v,
            Col::Context => rec.context = v,
            Col::Time => rec.time = v,
            Col::Ctype => rec.ctype = small(255)?,
            Col::Sijump => rec.sijump = small(1)? == 1,
            Col::Iretire => iretire_insns = small(1)? as u32,
            Col::Ilastsize => rec.ilastsize = small(30)?,
            Col::Ignored => {}
        }
        p += n;
        if i == last {
            p += eol(&buf[p..])?;
        } else if buf.get(p) == Some(&b',') {
            p += 1;
        } else {
            return None;
        }
    }
    rec.iretire = iretire_insns << rec.ilastsize;
    Some((rec, p))
}

/// The record of a row of plain fields (decimal digits, hex digits with an optional `0x`),
/// every value in range, as [`parse_row`] gives it; `None` for anything else.
#[inline(always)]
fn fast_row(line: &[u8], order: &[Col]) -> Option<Record> {
    let mut l = strip_eol(line)?;
    let mut rec = Record::default();
    let mut iretire_insns = 0u32;
    let last = order.len().checked_sub(1)?;
    for (i, &c) in order.iter().enumerate() {
        let f = if i == last {
            std::mem::take(&mut l)
        } else {
            let comma = memchr::memchr(b',', l)?;
            let f = &l[..comma];
            l = &l[comma + 1..];
            f
        };
        let small = |max: u64| dec(f).filter(|&v| v <= max).map(|v| v as u8);
        match c {
            Col::Itype => rec.itype = Itype::from_code(small(15)?),
            Col::Cause => rec.cause = dec(f)?,
            Col::Tval => rec.tval = hex(f)?,
            Col::Priv => rec.priv_ = small(255)?,
            Col::Iaddr => rec.iaddr = hex(f)?,
            Col::Context => rec.context = dec(f)?,
            Col::Time => rec.time = dec(f)?,
            Col::Ctype => rec.ctype = small(255)?,
            Col::Sijump => rec.sijump = small(1)? == 1,
            Col::Iretire => iretire_insns = small(1)? as u32,
            Col::Ilastsize => rec.ilastsize = small(30)?,
            Col::Ignored => {}
        }
    }
    // A comma left in the last field made it fail above; nothing else can follow.
    rec.iretire = iretire_insns << rec.ilastsize;
    Some(rec)
}

fn parse_row(l: &str, order: &[Col], line_no: u64) -> Result<Record, IngressError> {
    let err = |m: String| IngressError::parse(FORMAT, line_no, m);
    let mut rec = Record::default();
    let mut iretire_insns = 0u64;
    let mut fields = l.split(',');
    for &c in order {
        let f = fields
            .next()
            .ok_or_else(|| err(format!("too few fields (expected {})", order.len())))?;
        let bad = || err(format!("invalid {} value {f:?}", c.name()));
        let small = |max: u64| -> Result<u8, IngressError> {
            match parse_dec(f) {
                Some(v) if v <= max => Ok(v as u8),
                _ => Err(bad()),
            }
        };
        match c {
            Col::Itype => rec.itype = Itype::from_code(small(15)?),
            Col::Cause => rec.cause = parse_dec(f).ok_or_else(bad)?,
            Col::Tval => rec.tval = parse_hex(f).ok_or_else(bad)?,
            Col::Priv => rec.priv_ = small(255)?,
            Col::Iaddr => rec.iaddr = parse_hex(f).ok_or_else(bad)?,
            Col::Context => rec.context = parse_dec(f).ok_or_else(bad)?,
            Col::Time => rec.time = parse_dec(f).ok_or_else(bad)?,
            Col::Ctype => rec.ctype = small(255)?,
            Col::Sijump => rec.sijump = small(1)? == 1,
            Col::Iretire => {
                iretire_insns = parse_dec(f).ok_or_else(bad)?;
                if iretire_insns > 1 {
                    return Err(err(format!(
                        "iretire_0={iretire_insns}: a single-retirement file retires 0 or 1 instruction per row"
                    )));
                }
            }
            Col::Ilastsize => rec.ilastsize = small(30)?,
            Col::Ignored => {}
        }
    }
    if fields.next().is_some() {
        return Err(err(format!("too many fields (expected {})", order.len())));
    }
    rec.iretire = (iretire_insns as u32) << rec.ilastsize;
    Ok(rec)
}

impl<R: BufRead> crate::lines::FillRecords for EtraceCsvReader<R> {
    fn fill(&mut self, out: &mut [Record]) -> Result<usize, IngressError> {
        self.read_into(out)
    }
    fn pending(&mut self) -> &mut Option<IngressError> {
        &mut self.pending
    }
}

impl<R: BufRead> Iterator for EtraceCsvReader<R> {
    type Item = Result<Record, IngressError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// Writes an E-Trace reference-flow CSV exactly as `post-iss` formats it (see the [module doc](self));
/// fields whose column is absent are dropped. Buffered; call [`finish`](Self::finish).
pub struct EtraceCsvWriter<W: Write> {
    inner: BufWriter<W>,
    columns: CsvColumns,
}

impl<W: Write> EtraceCsvWriter<W> {
    /// Writes the header line for `columns`.
    pub fn new(w: W, columns: CsvColumns) -> io::Result<Self> {
        let mut inner = BufWriter::with_capacity(64 << 10, w);
        writeln!(inner, "{}", columns.header_line())?;
        Ok(EtraceCsvWriter { inner, columns })
    }

    /// Writes one row. Fails with `InvalidInput` for a record that retires more than one instruction
    /// (`iretire` other than 0 or 2^`ilastsize`).
    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        let iretire = if r.iretire == 0 {
            0
        } else if r.is_single_instruction() {
            1
        } else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "record at {:#x} retires {} half-words with ilastsize {}: an E-Trace CSV row holds at most one instruction",
                    r.iaddr, r.iretire, r.ilastsize
                ),
            ));
        };
        let w = &mut self.inner;
        write!(
            w,
            "{},{},{:x},{},{:x},",
            r.itype.code(),
            r.cause,
            r.tval,
            r.priv_,
            r.iaddr
        )?;
        if self.columns.context {
            write!(w, "{},", r.context)?;
        }
        if self.columns.time {
            write!(w, "{},", r.time)?;
        }
        if self.columns.context {
            write!(w, "{},", r.ctype)?;
        }
        if self.columns.sijump {
            write!(w, "{},", r.sijump as u8)?;
        }
        writeln!(w, "{},{}", iretire, r.ilastsize)
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
    fn outcomes<R: BufRead>(mut r: EtraceCsvReader<R>) -> Vec<String> {
        crate::lines::next_outcomes(|| r.next_record())
    }

    /// [`outcomes`] read with `read_batch`, `max` records at a time.
    fn batch_outcomes<R: BufRead>(mut r: EtraceCsvReader<R>, max: usize) -> Vec<String> {
        crate::lines::batch_outcomes(|v, m| r.read_batch(v, m), max)
    }

    /// [`outcomes`] read with `read_into`, into `max` slots that hold a record with every
    /// field set before each call (a fast path that leaves a field as it was shows).
    fn into_outcomes<R: BufRead>(mut r: EtraceCsvReader<R>, max: usize) -> Vec<String> {
        crate::lines::fill_outcomes(&mut r, max)
    }

    #[test]
    fn fast_parser_equals_the_simple_one_on_random_rows() {
        use crate::lines::gen::{Rng, Text};
        const ENDS: &[&str] = &["\n", "\n", "\r\n", "\r\r\n", " \n", "\n\n"];
        for seed in 1..=30u64 {
            let mut g = Rng(seed);
            let mut columns = CsvColumns {
                context: g.below(2) == 0,
                time: g.below(2) == 0,
                sijump: g.below(2) == 0,
            };
            if seed % 3 == 0 {
                columns = CsvColumns::default();
            }
            // The post-iss order (the standard parser) mostly, another order (the general
            // one) now and then.
            let mut order = columns.cols();
            if g.below(3) == 0 {
                for i in (1..order.len()).rev() {
                    order.swap(i, g.index(i + 1));
                }
            }
            let names: Vec<&str> = order.iter().map(|c| c.name()).collect();
            let mut text = names.join(",").into_bytes();
            text.push(b'\n');
            // Rows of the common shape (one character a field but an eight-digit address)
            // half of the time.
            const HEXC: &[u8] = b"0123456789abcdefABCDEF0g";
            for _ in 0..500 {
                let short = g.below(2) == 0;
                let mut fields: Vec<String> = order
                    .iter()
                    .map(|c| match c {
                        Col::Iaddr if short => (0..8)
                            .map(|_| {
                                // A `g` now and then.
                                let n = HEXC.len() - (g.below(20) != 0) as usize;
                                HEXC[g.index(n)]
                            })
                            .map(char::from)
                            .collect(),
                        // The bytes next to the digits' ranges now and then.
                        Col::Tval if short => match g.below(8) {
                            0 => char::from(b"/:@G`g"[g.index(6)]).to_string(),
                            _ => char::from(HEXC[g.index(HEXC.len())]).to_string(),
                        },
                        Col::Iretire if short => g.below(3).to_string(),
                        _ if short => match g.below(8) {
                            0 => char::from(b"/:"[g.index(2)]).to_string(),
                            _ => g.below(10).to_string(),
                        },
                        Col::Tval | Col::Iaddr => {
                            let p = if g.below(5) == 0 { "0x" } else { "" };
                            format!("{p}{}", g.digits(true))
                        }
                        // In range mostly, at and past the limits now and then.
                        Col::Itype => g.edge(15).to_string(),
                        Col::Iretire | Col::Sijump => g.edge(1).to_string(),
                        Col::Ilastsize => g.edge(30).to_string(),
                        Col::Priv | Col::Ctype => g.edge(255).to_string(),
                        _ => g.digits(false),
                    })
                    .collect();
                match g.below(30) {
                    0 => fields.push("0".into()),
                    1 => {
                        fields.pop();
                    }
                    2 => fields.clear(),
                    _ => {}
                }
                text.extend(g.damage(&fields.join(",")));
                text.extend(g.pick(ENDS).as_bytes());
            }
            let mut slow = EtraceCsvReader::new(&text[..]).unwrap();
            assert_eq!(slow.standard.is_some(), order == columns.cols());
            slow.fast = false;
            let slow = outcomes(slow);
            // Small buffers (rows span fills) and large ones (rows parsed in the buffer).
            let mut fast = Vec::new();
            for cap in [9, 100, 1 << 16] {
                let r = EtraceCsvReader::new(std::io::BufReader::with_capacity(cap, &text[..]));
                fast = outcomes(r.unwrap());
                assert_eq!(fast, slow, "seed {seed} buffer {cap}");
                let max = [1, 3, 1000][seed as usize % 3];
                let r = EtraceCsvReader::new(std::io::BufReader::with_capacity(cap, &text[..]));
                let batch = batch_outcomes(r.unwrap(), max);
                assert_eq!(batch, slow, "seed {seed} buffer {cap} batches of {max}");
                let r = EtraceCsvReader::new(std::io::BufReader::with_capacity(cap, &text[..]));
                let into = into_outcomes(r.unwrap(), max);
                assert_eq!(into, slow, "seed {seed} buffer {cap} slices of {max}");
            }
            assert!(fast.iter().any(|o| o.starts_with("error")), "seed {seed}");
            assert!(
                fast.iter().filter(|o| !o.starts_with("error")).count() > 30,
                "seed {seed}"
            );
        }
    }

    /// `read_batch` over more records than one `read_into` slice holds, with damaged rows on
    /// both sides of a slice's end: the records and errors `next_record` gives.
    #[test]
    fn read_batch_over_many_slices() {
        let mut text = CsvColumns::default().header_line() + "\n";
        for i in 0..10_000u64 {
            match i {
                4094 | 4096 | 9000 => text.push_str("0,0,0,3,80000000,0,0,2,1\n"),
                _ => text.push_str(&format!(
                    "{},0,0,3,{:x},0,0,1,1\n",
                    i % 2,
                    0x8000_0000 + 4 * i
                )),
            }
        }
        let slow = outcomes(EtraceCsvReader::new(text.as_bytes()).unwrap());
        assert_eq!(slow.iter().filter(|o| o.starts_with("error")).count(), 3);
        for max in [4095, 4096, 4097, 1 << 20] {
            let batch = batch_outcomes(EtraceCsvReader::new(text.as_bytes()).unwrap(), max);
            assert_eq!(batch, slow, "batches of {max}");
        }
    }

    const SAMPLE: &str = "itype_0,cause,tval,priv,iaddr_0,context,ctype,iretire_0,ilastsize_0\n\
0,0,0,3,80000000,0,0,1,1\n\
0,0,0,3,80000014,0,0,1,0\n\
1,3,0,3,80001914,0,0,1,1\n\
1,2,ffffffff,3,80000020,0,0,0,1\n";

    #[test]
    fn reads_and_writes_back() {
        let r = EtraceCsvReader::new(SAMPLE.as_bytes()).unwrap();
        assert_eq!(r.columns(), CsvColumns::default());
        let recs: Vec<Record> = r.collect::<Result<_, _>>().unwrap();
        assert_eq!(recs.len(), 4);
        assert_eq!((recs[0].iretire, recs[0].ilastsize), (2, 1));
        assert_eq!((recs[1].iretire, recs[1].ilastsize), (1, 0));
        assert_eq!(recs[2].itype, Itype::Exception);
        assert_eq!(recs[2].cause, 3);
        assert_eq!((recs[3].iretire, recs[3].tval), (0, 0xffff_ffff));
        let mut w = EtraceCsvWriter::new(Vec::new(), CsvColumns::default()).unwrap();
        for r in &recs {
            w.write(r).unwrap();
        }
        assert_eq!(String::from_utf8(w.finish().unwrap()).unwrap(), SAMPLE);
    }

    #[test]
    fn all_columns() {
        let cols = CsvColumns {
            context: true,
            time: true,
            sijump: true,
        };
        assert_eq!(
            cols.header_line(),
            "itype_0,cause,tval,priv,iaddr_0,context,time,ctype,sijump_0,iretire_0,ilastsize_0"
        );
        let rec = Record {
            iaddr: 0x1000,
            iretire: 2,
            ilastsize: 1,
            itype: Itype::UninferableJump,
            priv_: 1,
            context: 77,
            ctype: 2,
            time: 123456,
            sijump: true,
            ..Record::default()
        };
        let mut w = EtraceCsvWriter::new(Vec::new(), cols).unwrap();
        w.write(&rec).unwrap();
        let text = String::from_utf8(w.finish().unwrap()).unwrap();
        assert!(
            text.ends_with("\n10,0,0,1,1000,77,123456,2,1,1,1\n"),
            "{text}"
        );
        let mut r = EtraceCsvReader::new(text.as_bytes()).unwrap();
        assert_eq!(r.columns(), cols);
        assert_eq!(r.next_record().unwrap(), Some(rec));
        assert_eq!(r.next_record().unwrap(), None);
    }

    #[test]
    fn named_columns_are_skipped() {
        // `cycle` first, in the middle and last; the rows as the same file without it reads them.
        let plain = "itype_0,cause,tval,priv,iaddr_0,iretire_0,ilastsize_0\n\
                     0,0,0,3,80000000,1,1\n2,8,0,3,80000002,1,1\n";
        let want = outcomes(EtraceCsvReader::new(plain.as_bytes()).unwrap());
        for text in [
            "cycle,itype_0,cause,tval,priv,iaddr_0,iretire_0,ilastsize_0\n\
              17,0,0,0,3,80000000,1,1\n18,2,8,0,3,80000002,1,1\n",
            "itype_0,cause,tval,priv,iaddr_0,cycle,iretire_0,ilastsize_0\n\
              0,0,0,3,80000000,x y,1,1\n2,8,0,3,80000002,,1,1\n",
            "itype_0,cause,tval,priv,iaddr_0,iretire_0,ilastsize_0,cycle,note\r\n\
              0,0,0,3,80000000,1,1,17,a\r\n2,8,0,3,80000002,1,1,18,\r\n",
        ] {
            for fast in [true, false] {
                let mut r =
                    EtraceCsvReader::with_ignored(text.as_bytes(), &["cycle", "note"]).unwrap();
                r.fast = fast;
                assert_eq!(outcomes(r), want, "{text}");
                let mut r =
                    EtraceCsvReader::with_ignored(text.as_bytes(), &["cycle", "note"]).unwrap();
                r.fast = fast;
                assert_eq!(batch_outcomes(r, 1), want, "{text}");
            }
            // The row still needs its fields: one missing is an error.
            let short = text
                .replacen(",1,1\n", ",1\n", 1)
                .replacen(",1,1,17", ",1,17", 1);
            let r = EtraceCsvReader::with_ignored(short.as_bytes(), &["cycle", "note"]).unwrap();
            assert!(
                outcomes(r).iter().any(|o| o.contains("few fields")),
                "{short}"
            );
        }
    }

    #[test]
    fn errors() {
        let multi = "itype_0,itype_1,cause,tval,priv,iaddr_0,iaddr_1,iretire_0,iretire_1,ilastsize_0,ilastsize_1\n";
        let e = EtraceCsvReader::new(multi.as_bytes()).err().unwrap();
        assert!(e.to_string().contains("multiple-retirement"), "{e}");
        // An extra column (a simulator's `cycle`) is named with the columns there are.
        let extra = "itype_0,cause,tval,priv,iaddr_0,iretire_0,ilastsize_0,cycle\n";
        let e = EtraceCsvReader::new(extra.as_bytes())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains(
                "unknown column \"cycle\": the columns are itype_0, cause, tval, priv, iaddr_0"
            ),
            "{e}"
        );
        assert!(e.contains("--csv-ignore cycle"), "{e}");
        let bad_rows = [
            "0,0,0,3,80000000,0,0,2,1",
            "0,0,0,3,8000000g,0,0,1,1",
            "0,0,0,3,80000000,0,0,1",
            "0,0,0,3,80000000,0,0,1,1,5",
            "16,0,0,3,80000000,0,0,1,1",
        ];
        for row in bad_rows {
            let text = format!(
                "{}\n0,0,0,3,0,0,0,1,1\n{row}\n",
                CsvColumns::default().header_line()
            );
            let mut r = EtraceCsvReader::new(text.as_bytes()).unwrap();
            r.next_record().unwrap();
            let e = r.next_record().unwrap_err();
            assert_eq!(e.line(), Some(3), "{row}: {e}");
        }
        let mut w = EtraceCsvWriter::new(Vec::new(), CsvColumns::default()).unwrap();
        let block = Record {
            iretire: 4,
            ilastsize: 1,
            ..Record::default()
        };
        assert_eq!(
            w.write(&block).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }
}
