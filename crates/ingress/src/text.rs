//! The readable text form of ingress records: one line per [`Record`], stable and parseable back.
//!
//! ```text
//! 0x80000010 +4 priv=M
//! 0x80000014 +2 itype=5 priv=M
//! 0x80001914 +4 itype=1 cause=3 tval=0x0 priv=M
//! 0x80000200 +0/4 itype=2 cause=7 priv=S context=0x2a ctype=2 time=1234 sijump
//! ```
//!
//! Fields, separated by single spaces, in this order:
//!
//! | field | shown | meaning |
//! |---|---|---|
//! | `0x<hex>` | always | `iaddr` (lower-case hex) |
//! | `+<bytes>[/<lastbytes>]` | always | bytes retired = 2 × `iretire`; `/lastbytes` = 2^(`ilastsize`+1), shown only when `ilastsize` is not the default (0 when `iretire` is 1, else 1). `+4` is one 32-bit instruction, `+2` one 16-bit instruction, `+0/4` a trap with no instruction retired whose `ilastsize` is 1 |
//! | `itype=<n>` | `itype` != 0 | decimal code, `ingressPort.adoc` table "Instruction Type (itype) encoding" |
//! | `cause=<n>` | `itype` 1 or 2, or `cause` != 0 | decimal |
//! | `tval=0x<hex>` | `itype` 1, or `tval` != 0 | |
//! | `priv=<p>` | always | `U`, `S`, `M`, `D`, `VU`, `VS`, or the decimal code for reserved values (table "Privilege level (priv) encoding") |
//! | `context=0x<hex>` | `context` != 0 | |
//! | `ctype=<n>` | `ctype` != 0 | decimal (table "Context type ctype values") |
//! | `time=<n>` | `time` != 0 | decimal |
//! | `sijump` | `sijump` set | |
//!
//! The parser ([`parse_line`]) also accepts the optional fields in any order, decimal or `0x` hex for
//! every number, and ignores blank lines and lines starting with `#` ([`dump`] writes its header and
//! summary as such comments). The header comment (`# rvtrace ingress v1: xlen=64 itype_width=4
//! signals=time,sijump`, [`TextWriter::header`]) is read back by [`TextReader::header`].

use std::fmt;
use std::io::{self, BufRead, BufWriter, Read, Write};
use std::str::FromStr;

use crate::binary::{IngressHeader, IngressReader};
use crate::{privilege, IngressError, Itype, Record, Xlen};

const FORMAT: &str = "ingress text";

fn default_ilastsize(iretire: u32) -> u8 {
    if iretire == 1 {
        0
    } else {
        1
    }
}

impl fmt::Display for Record {
    /// The text form of the record (see [`crate::text`]), without a newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x} +{}", self.iaddr, 2 * self.iretire as u64)?;
        if self.ilastsize != default_ilastsize(self.iretire) {
            match self.last_size_bytes() {
                Some(b) => write!(f, "/{b}")?,
                // Not a size in bytes any more: write the raw exponent, which parses back.
                None => write!(f, "/2^{}", self.ilastsize as u32 + 1)?,
            }
        }
        let code = self.itype.code();
        if code != 0 {
            write!(f, " itype={code}")?;
        }
        if self.is_trap() || self.cause != 0 {
            write!(f, " cause={}", self.cause)?;
        }
        if self.itype == Itype::Exception || self.tval != 0 {
            write!(f, " tval={:#x}", self.tval)?;
        }
        match privilege::name(self.priv_) {
            Some(n) => write!(f, " priv={n}")?,
            None => write!(f, " priv={}", self.priv_)?,
        }
        if self.context != 0 {
            write!(f, " context={:#x}", self.context)?;
        }
        if self.ctype != 0 {
            write!(f, " ctype={}", self.ctype)?;
        }
        if self.time != 0 {
            write!(f, " time={}", self.time)?;
        }
        if self.sijump {
            f.write_str(" sijump")?;
        }
        Ok(())
    }
}

impl FromStr for Record {
    type Err = IngressError;

    /// Parses one line of the text form (no comment or blank line).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_line(s, 0)?.ok_or_else(|| IngressError::parse(FORMAT, 0, "empty line"))
    }
}

fn parse_num(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if h.is_empty() || h.starts_with('+') {
            return None;
        }
        u64::from_str_radix(h, 16).ok()
    } else {
        if s.starts_with('+') {
            return None;
        }
        s.parse().ok()
    }
}

/// Parses one line of the text form. Returns `Ok(None)` for a blank line or a `#` comment line;
/// `line_no` (1-based, 0 if unknown) is used in errors.
pub fn parse_line(line: &str, line_no: u64) -> Result<Option<Record>, IngressError> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let err = |msg: String| IngressError::parse(FORMAT, line_no, msg);
    let mut it = line.split_ascii_whitespace();
    let addr = it.next().unwrap_or_default();
    if !(addr.starts_with("0x") || addr.starts_with("0X")) {
        return Err(err(format!(
            "expected an address like 0x80000000, found {addr:?}"
        )));
    }
    let mut rec = Record {
        iaddr: parse_num(addr).ok_or_else(|| err(format!("invalid address {addr:?}")))?,
        ..Record::default()
    };
    let size = it
        .next()
        .ok_or_else(|| err("missing size field (+<bytes>)".into()))?;
    let bad_size = || {
        err(format!(
            "invalid size field {size:?} (expected +<bytes>[/<lastbytes>])"
        ))
    };
    let size_body = size.strip_prefix('+').ok_or_else(bad_size)?;
    let (bytes, last) = match size_body.split_once('/') {
        Some((b, l)) => (b, Some(l)),
        None => (size_body, None),
    };
    let bytes = parse_num(bytes).ok_or_else(bad_size)?;
    if bytes % 2 != 0 || bytes / 2 > u32::MAX as u64 {
        return Err(err(format!(
            "size {bytes} is not an even number of bytes fitting 32-bit iretire"
        )));
    }
    rec.iretire = (bytes / 2) as u32;
    rec.ilastsize = match last {
        None => default_ilastsize(rec.iretire),
        Some(l) => {
            if let Some(e) = l.strip_prefix("2^") {
                let e = parse_num(e).ok_or_else(bad_size)?;
                if !(1..=256).contains(&e) {
                    return Err(bad_size());
                }
                (e - 1) as u8
            } else {
                let l = parse_num(l).ok_or_else(bad_size)?;
                if l < 2 || !l.is_power_of_two() {
                    return Err(err(format!(
                        "last instruction size {l} is not a power of two >= 2"
                    )));
                }
                (l.trailing_zeros() - 1) as u8
            }
        }
    };
    let mut seen_priv = false;
    for field in it {
        if field == "sijump" {
            rec.sijump = true;
            continue;
        }
        let (key, val) = field
            .split_once('=')
            .ok_or_else(|| err(format!("unexpected field {field:?}")))?;
        let num = || parse_num(val).ok_or_else(|| err(format!("invalid number {val:?} for {key}")));
        let small = |max: u64| -> Result<u64, IngressError> {
            let v = num()?;
            if v > max {
                return Err(err(format!("{key}={v} is out of range (max {max})")));
            }
            Ok(v)
        };
        match key {
            "itype" => rec.itype = Itype::from_code(small(15)? as u8),
            "cause" => rec.cause = num()?,
            "tval" => rec.tval = num()?,
            "priv" => {
                rec.priv_ = match privilege::from_name(val) {
                    Some(p) => p,
                    None => small(255)? as u8,
                };
                seen_priv = true;
            }
            "context" => rec.context = num()?,
            "ctype" => rec.ctype = small(255)? as u8,
            "time" => rec.time = num()?,
            _ => return Err(err(format!("unknown field {key:?}"))),
        }
    }
    if !seen_priv {
        return Err(err("missing priv= field".into()));
    }
    Ok(Some(rec))
}

/// Writes records in the text form, one per line (buffered; call [`finish`](Self::finish)).
pub struct TextWriter<W: Write> {
    inner: BufWriter<W>,
}

impl<W: Write> TextWriter<W> {
    /// A writer to `w`.
    pub fn new(w: W) -> Self {
        TextWriter {
            inner: BufWriter::with_capacity(64 << 10, w),
        }
    }

    /// Writes one record line.
    pub fn write(&mut self, rec: &Record) -> io::Result<()> {
        writeln!(self.inner, "{rec}")
    }

    /// Writes the header as `#` comment lines, the way [`dump`] starts: the signals and widths
    /// (which [`TextReader::header`] reads back), the source, and the fields' legend.
    pub fn header(&mut self, h: &IngressHeader) -> io::Result<()> {
        let mut flags = Vec::new();
        for (on, name) in [
            (h.has_context, "context"),
            (h.has_time, "time"),
            (h.has_sijump, "sijump"),
            (h.multi_retire, "multi-retire"),
        ] {
            if on {
                flags.push(name);
            }
        }
        let flags = if flags.is_empty() {
            "none".to_string()
        } else {
            flags.join(",")
        };
        self.comment(&format!(
            "{HEADER_PREFIX}{}: xlen={} itype_width={} signals={}",
            crate::binary::FORMAT_VERSION,
            h.xlen.bits(),
            h.itype_width,
            flags
        ))?;
        self.comment(&format!("source: {}", h.source))?;
        self.comment(
            "iaddr +bytes[/lastbytes] [itype=] [cause=] [tval=] priv= [context=] [ctype=] [time=] [sijump]",
        )
    }

    /// Writes a `# ` comment line (`text` may hold several lines).
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        for l in text.split('\n') {
            writeln!(self.inner, "# {l}")?;
        }
        Ok(())
    }

    /// Flushes and returns the inner writer.
    pub fn finish(self) -> io::Result<W> {
        self.inner.into_inner().map_err(|e| e.into_error())
    }
}

/// Reads records from the text form, skipping blank and `#` comment lines.
pub struct TextReader<R: BufRead> {
    inner: R,
    line: String,
    line_no: u64,
    /// The header comment read before the first record ([`TextReader::header`]).
    header: Option<IngressHeader>,
    /// The first record, read while looking for the header.
    first: Option<Record>,
    /// The lines before the first record have been read.
    looked: bool,
}

impl<R: BufRead> TextReader<R> {
    /// A reader of `r`.
    pub fn new(r: R) -> Self {
        TextReader {
            inner: r,
            line: String::new(),
            line_no: 0,
            header: None,
            first: None,
            looked: false,
        }
    }

    /// The header that [`TextWriter::header`] (and so [`dump`], `rvtrace run --ingress-text`)
    /// writes: a comment line `# rvtrace ingress v1: xlen=64 itype_width=4 signals=time,sijump`
    /// before the first record, with the `# source: ...` line after it. `None` when the text has
    /// none (the text form does not require it). An error for a header line that does not
    /// parse. Reads up to the first record, which [`TextReader::next_record`] still returns.
    pub fn header(&mut self) -> Result<Option<&IngressHeader>, IngressError> {
        if !self.looked {
            self.looked = true;
            while self.read_line()? {
                let line = self.line.trim();
                if let Some(c) = line.strip_prefix('#') {
                    let c = c.trim();
                    if let Some(rest) = c.strip_prefix(HEADER_PREFIX) {
                        let h = parse_header(rest)
                            .map_err(|m| IngressError::parse(FORMAT, self.line_no, m))?;
                        self.header = Some(h);
                    } else if let (Some(h), Some(src)) =
                        (self.header.as_mut(), c.strip_prefix("source: "))
                    {
                        h.source = src.to_string();
                    }
                    continue;
                }
                if let Some(r) = parse_line(&self.line, self.line_no)? {
                    self.first = Some(r);
                    break;
                }
            }
        }
        Ok(self.header.as_ref())
    }

    /// Reads the next line into `self.line`; false at the end of the input.
    fn read_line(&mut self) -> Result<bool, IngressError> {
        self.line.clear();
        if self.inner.read_line(&mut self.line)? == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        Ok(true)
    }

    /// The next record, `Ok(None)` at the end of the input.
    pub fn next_record(&mut self) -> Result<Option<Record>, IngressError> {
        if let Some(r) = self.first.take() {
            return Ok(Some(r));
        }
        self.looked = true;
        while self.read_line()? {
            if let Some(r) = parse_line(&self.line, self.line_no)? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }
}

/// How the header comment starts, before the format version.
const HEADER_PREFIX: &str = "rvtrace ingress v";

/// Parses the header comment after [`HEADER_PREFIX`]: `1: xlen=64 itype_width=4 signals=...`.
fn parse_header(rest: &str) -> Result<IngressHeader, String> {
    let (version, fields) = rest
        .split_once(':')
        .ok_or_else(|| format!("header: expected `{HEADER_PREFIX}N: xlen=...`"))?;
    if version.trim() != crate::binary::FORMAT_VERSION.to_string() {
        return Err(format!(
            "header: format version {version}, this reader knows {}",
            crate::binary::FORMAT_VERSION
        ));
    }
    let mut h = IngressHeader::new(Xlen::Rv64, 4, "");
    let (mut xlen, mut width, mut signals) = (false, false, false);
    for f in fields.split_ascii_whitespace() {
        let (key, value) = f
            .split_once('=')
            .ok_or_else(|| format!("header: expected key=value, found {f:?}"))?;
        match key {
            "xlen" => {
                h.xlen = match value {
                    "32" => Xlen::Rv32,
                    "64" => Xlen::Rv64,
                    _ => return Err(format!("header: xlen={value}: expected 32 or 64")),
                };
                xlen = true;
            }
            "itype_width" => {
                h.itype_width = match value {
                    "3" => 3,
                    "4" => 4,
                    _ => return Err(format!("header: itype_width={value}: expected 3 or 4")),
                };
                width = true;
            }
            "signals" => {
                for s in value.split(',') {
                    match s {
                        "none" => {}
                        "context" => h.has_context = true,
                        "time" => h.has_time = true,
                        "sijump" => h.has_sijump = true,
                        "multi-retire" => h.multi_retire = true,
                        _ => return Err(format!("header: unknown signal {s:?}")),
                    }
                }
                signals = true;
            }
            _ => return Err(format!("header: unknown field {key:?}")),
        }
    }
    if !(xlen && width && signals) {
        return Err("header: expected xlen=, itype_width= and signals=".into());
    }
    Ok(h)
}

impl<R: BufRead> Iterator for TextReader<R> {
    type Item = Result<Record, IngressError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// Counts from [`dump`] (or any record stream, via [`DumpSummary::add`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpSummary {
    /// Records (ingress-port cycles).
    pub records: u64,
    /// Records that retire at least one instruction (`iretire` != 0): the number of instructions
    /// when every record is one instruction, as from the hart model.
    pub instructions: u64,
    /// Half-words retired (sum of `iretire`).
    pub halfwords: u64,
    /// Records ending in a trap (`itype` 1 or 2).
    pub traps: u64,
    /// Records that retire more than one instruction (block records, `rvtrace run
    /// --ingress-blocks`): then `instructions` counts records, not instructions, and the
    /// summary line says `retiring=` (and `blocks=`) instead of `instructions=`.
    pub blocks: u64,
}

impl DumpSummary {
    /// Counts one record.
    pub fn add(&mut self, r: &Record) {
        self.records += 1;
        self.instructions += r.retires() as u64;
        self.halfwords += r.iretire as u64;
        self.traps += r.is_trap() as u64;
        self.blocks += (r.retires() && !r.is_single_instruction()) as u64;
    }
}

impl fmt::Display for DumpSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.blocks != 0 {
            // The number of instructions in a block needs the program.
            return write!(
                f,
                "records={} retiring={} blocks={} halfwords={} traps={}",
                self.records, self.instructions, self.blocks, self.halfwords, self.traps
            );
        }
        write!(
            f,
            "records={} instructions={} halfwords={} traps={}",
            self.records, self.instructions, self.halfwords, self.traps
        )
    }
}

/// Prints a binary ingress file as text (`rvtrace ingress dump FILE`): the header as `#` comment lines,
/// every record in the text form, then a `#` summary line. Returns the summary.
///
/// The output parses back with [`TextReader`] (the comments are skipped).
pub fn dump<R: Read, W: Write>(reader: R, out: W) -> Result<DumpSummary, IngressError> {
    dump_with(reader, out, true)
}

/// [`dump`], with `time` false leaving time out (no `time=` field, no `time` signal in the
/// header line): the records of a file with time and of one without (an E-Trace CSV without a
/// time column, say) then print alike (`rvtrace ingress dump --no-time`).
pub fn dump_with<R: Read, W: Write>(
    reader: R,
    out: W,
    time: bool,
) -> Result<DumpSummary, IngressError> {
    let mut r = IngressReader::new(reader)?;
    let mut w = TextWriter::new(out);
    let mut h = r.header().clone();
    h.has_time &= time;
    w.header(&h)?;
    let mut sum = DumpSummary::default();
    let mut batch = Vec::with_capacity(4096);
    loop {
        batch.clear();
        if r.read_batch(&mut batch, 4096)? == 0 {
            break;
        }
        for rec in &batch {
            sum.add(rec);
            if time {
                w.write(rec)?;
            } else {
                w.write(&Record { time: 0, ..*rec })?;
            }
        }
    }
    w.comment(&sum.to_string())?;
    w.finish()?;
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header the writer puts first is read back; the records after it are all there.
    #[test]
    fn header_round_trip() {
        let mut h = IngressHeader::new(Xlen::Rv32, 3, "a test");
        h.has_context = true;
        h.multi_retire = true;
        let rec = Record {
            iaddr: 0x8000_0000,
            iretire: 2,
            ilastsize: 1,
            priv_: privilege::M,
            ..Record::default()
        };
        let mut w = TextWriter::new(Vec::new());
        w.header(&h).unwrap();
        w.write(&rec).unwrap();
        let text = w.finish().unwrap();
        let mut r = TextReader::new(&text[..]);
        assert_eq!(r.header().unwrap(), Some(&h));
        assert_eq!(r.next_record().unwrap(), Some(rec));
        assert_eq!(r.next_record().unwrap(), None);
        // No header: none, and the records are read as before.
        let mut r = TextReader::new(&b"0x80000000 +4 priv=M\n"[..]);
        assert_eq!(r.header().unwrap(), None);
        assert!(r.next_record().unwrap().is_some());
        // A header line that does not parse is an error naming its line.
        for bad in [
            "# rvtrace ingress v1: xlen=48 itype_width=4 signals=none",
            "# rvtrace ingress v1: xlen=64 itype_width=4 signals=time,colour",
            "# rvtrace ingress v1: xlen=64 signals=none",
            "# rvtrace ingress v9: xlen=64 itype_width=4 signals=none",
        ] {
            let text = format!("\n{bad}\n0x80000000 +4 priv=M\n");
            let e = TextReader::new(text.as_bytes()).header().unwrap_err();
            assert!(e.to_string().contains("line 2"), "{bad}: {e}");
        }
    }

    /// Block records: the summary does not call records instructions.
    #[test]
    fn summary_of_block_records() {
        let one = Record {
            iretire: 2,
            ilastsize: 1,
            ..Record::default()
        };
        let mut s = DumpSummary::default();
        s.add(&one);
        assert_eq!(
            s.to_string(),
            "records=1 instructions=1 halfwords=2 traps=0"
        );
        s.add(&Record { iretire: 5, ..one });
        assert_eq!(
            s.to_string(),
            "records=2 retiring=2 blocks=1 halfwords=7 traps=0"
        );
    }

    #[test]
    fn examples() {
        let r = Record {
            iaddr: 0x8000_0010,
            iretire: 2,
            ilastsize: 1,
            priv_: privilege::M,
            ..Record::default()
        };
        assert_eq!(r.to_string(), "0x80000010 +4 priv=M");
        let t = Record {
            iaddr: 0x8000_1914,
            itype: Itype::Exception,
            cause: 3,
            ..r
        };
        assert_eq!(
            t.to_string(),
            "0x80001914 +4 itype=1 cause=3 tval=0x0 priv=M"
        );
        let i = Record {
            iaddr: 0x200,
            iretire: 0,
            ilastsize: 0,
            itype: Itype::Interrupt,
            cause: 7,
            priv_: privilege::S,
            context: 42,
            ctype: 2,
            time: 1234,
            sijump: true,
            ..Record::default()
        };
        assert_eq!(
            i.to_string(),
            "0x200 +0/2 itype=2 cause=7 priv=S context=0x2a ctype=2 time=1234 sijump"
        );
        for rec in [r, t, i] {
            assert_eq!(rec.to_string().parse::<Record>().unwrap(), rec);
        }
        let odd = Record {
            ilastsize: 200,
            priv_: 7,
            ..r
        };
        assert_eq!(odd.to_string().parse::<Record>().unwrap(), odd);
    }

    #[test]
    fn parse_errors_have_line_numbers() {
        assert_eq!(parse_line("  # comment", 3).unwrap(), None);
        assert_eq!(parse_line("", 3).unwrap(), None);
        let e = parse_line("0x10 +3 priv=M", 7).unwrap_err();
        assert_eq!(e.line(), Some(7));
        assert!(e.to_string().starts_with("ingress text line 7:"), "{e}");
        for bad in [
            "80000000 +4 priv=M",
            "0x10 4 priv=M",
            "0x10 +4",
            "0x10 +4 priv=M itype=16",
            "0x10 +4 priv=M bogus=1",
            "0x10 +4/3 priv=M",
            "0x10 +4 priv=M ctype=256",
            "0xg +4 priv=M",
        ] {
            assert!(parse_line(bad, 1).is_err(), "{bad}");
        }
        assert_eq!(
            parse_line("0X10 +0x4 time=0x10 priv=3", 1)
                .unwrap()
                .unwrap(),
            Record {
                iaddr: 0x10,
                iretire: 2,
                ilastsize: 1,
                priv_: 3,
                time: 16,
                ..Record::default()
            }
        );
    }
}
