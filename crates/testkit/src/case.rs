//! Hand-written decoder cases as data: a small text format (`*.case`) holding a program snippet,
//! a trace written as its messages or packets (`NAME field=value ...`) and the flow a decoder
//! must give, in the spirit of libipt's `.ptt` files. This module reads the format, builds the
//! program, runs every case of a directory and checks what a decoder gave; the protocol's own
//! harness turns the trace lines into bytes with its codec and decodes them (N-Trace:
//! `crates/ntrace/tests/cases.rs`, E-Trace: `crates/etrace/tests/cases.rs`). The format:
//! `crates/ntrace/tests/cases/README.md`.
//!
//! Every error names the file and line (`cases/x.case:12: ...`).

use rvtrace_flow::{
    decode_all, for_each_pc, DecodeStats, FlowElement, FlowSink, FlowText, TraceDecoder,
};
use rvtrace_image::Image;
use rvtrace_isa::{disasm::Disasm, insn_len, Xlen};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// A parse or check failure at a line of a case file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseError {
    /// The file, as given to [`CaseFile::parse`].
    pub file: String,
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.msg)
    }
}

impl std::error::Error for CaseError {}

/// One instruction of the program: `ADDR: HEX  ASSEMBLY`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramLine {
    /// Line in the file.
    pub line: usize,
    /// Address.
    pub addr: u64,
    /// Encoding (a 16-bit instruction in the low half).
    pub bits: u32,
    /// Length in bytes (2 or 4, from the encoding).
    pub len: u8,
    /// The assembly as written (checked against the disassembly of `bits`).
    pub text: String,
}

/// An `option name=value` line: a decoder or codec setting the protocol's harness reads (the
/// value as written: a number, or a word such as `raw`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionLine {
    /// Line in the file.
    pub line: usize,
    /// The option's name.
    pub name: String,
    /// Its value as written.
    pub value: String,
}

impl OptionLine {
    /// The value as a number ([`number`]); an error naming the line if it is none.
    pub fn number(&self, file: &CaseFile) -> Result<u64, CaseError> {
        number(&self.value).ok_or_else(|| {
            file.error(
                self.line,
                format!("option {}={}: not a number", self.name, self.value),
            )
        })
    }
}

/// One line of a trace: a message or packet with its fields, or raw bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceLine {
    /// `NAME field=value ...`: a message (N-Trace) or packet (E-Trace), encoded by the protocol's
    /// harness.
    Record {
        /// Line in the file.
        line: usize,
        /// The message or packet name (`IndirectBranch`, `te_inst`).
        name: String,
        /// The fields in the order written, each value as written (see [`Fields`]).
        fields: Vec<(String, String)>,
    },
    /// `bytes ff 00 ff*100`: bytes as they are (`*N` repeats one).
    Bytes {
        /// Line in the file.
        line: usize,
        /// The bytes.
        bytes: Vec<u8>,
    },
}

/// One loss a case expects: `loss KIND TEXT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossLine {
    /// Line in the file.
    pub line: usize,
    /// The `LossReason` variant (`Malformed`, `Mismatch`, `NoTrace`, ...).
    pub kind: String,
    /// Text the reason's message contains.
    pub text: String,
}

/// One case: a trace and what decoding it must give.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Case {
    /// Line of its `case` line.
    pub line: usize,
    /// Its name (the rest of the `case` line).
    pub name: String,
    /// Its own `option` lines (written after its `case` line), applied after the file's.
    pub options: Vec<OptionLine>,
    /// The trace, in order.
    pub trace: Vec<TraceLine>,
    /// `pcs`: the executed PCs, in order (the line of the first `pcs` line).
    pub pcs: Option<(usize, Vec<u64>)>,
    /// `flow`: the flow elements' text, one per line as `rvtrace decode --flow` prints them.
    pub flow: Vec<(usize, String)>,
    /// `loss`: every loss of the decode, in order (may be left out with `flow`, which shows
    /// them; without `flow`, no `loss` line means no loss).
    pub losses: Vec<LossLine>,
    /// `instructions N` or `instructions A..B` (inclusive): how many instructions the flow holds.
    pub instructions: Option<(usize, u64, u64)>,
}

/// A case file: its header, its program and its cases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseFile {
    /// The name errors give for the file.
    pub file: String,
    /// `protocol ntrace|etrace`.
    pub protocol: String,
    /// `xlen 32|64` (64 when not given).
    pub xlen: Xlen,
    /// The `option name=value` lines before the first case: decoder or codec settings the
    /// protocol's harness reads, for every case (see [`CaseFile::options_of`]).
    pub options: Vec<OptionLine>,
    /// The program, in the order written.
    pub program: Vec<ProgramLine>,
    /// The cases, in the order written.
    pub cases: Vec<Case>,
}

/// A number as cases write them: decimal, `0x` hexadecimal or `0b` binary, `_` between digits.
pub fn number(s: &str) -> Option<u64> {
    let s = s.replace('_', "");
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x") {
        (h, 16)
    } else if let Some(b) = s.strip_prefix("0b") {
        (b, 2)
    } else {
        (s.as_str(), 10)
    };
    u64::from_str_radix(digits, radix).ok()
}

impl CaseFile {
    /// Reads a case file's text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<CaseFile, CaseError> {
        let mut f = CaseFile {
            file: file.to_string(),
            protocol: String::new(),
            xlen: Xlen::Rv64,
            options: Vec::new(),
            program: Vec::new(),
            cases: Vec::new(),
        };
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |msg: String| CaseError {
                file: file.to_string(),
                line,
                msg,
            };
            // `#` starts a comment, except in `flow` lines (the flow text has none).
            let l = raw.trim();
            let l = if l.starts_with("flow ") || l == "flow" {
                l
            } else {
                l.split('#').next().unwrap_or("").trim()
            };
            if l.is_empty() {
                continue;
            }
            let (word, rest) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            let rest = rest.trim();
            if let Some(a) = word.strip_suffix(':') {
                if !f.cases.is_empty() {
                    return Err(err("the program comes before the first case".into()));
                }
                f.program.push(program_line(line, a, rest).map_err(err)?);
                continue;
            }
            match word {
                "protocol" => f.protocol = rest.to_string(),
                "xlen" => {
                    f.xlen = match rest {
                        "32" => Xlen::Rv32,
                        "64" => Xlen::Rv64,
                        _ => return Err(err(format!("xlen {rest}: 32 or 64"))),
                    }
                }
                "option" => {
                    let (name, value) = field(rest).map_err(err)?;
                    let o = OptionLine { line, name, value };
                    // Before the first case: the file's; after a `case` line: that case's.
                    match f.cases.last_mut() {
                        Some(c) => c.options.push(o),
                        None => f.options.push(o),
                    }
                }
                "case" => f.cases.push(Case {
                    line,
                    name: rest.to_string(),
                    ..Case::default()
                }),
                "bytes" => {
                    let bytes = byte_list(rest).map_err(err)?;
                    last_case(&mut f, line, word)?
                        .trace
                        .push(TraceLine::Bytes { line, bytes });
                }
                "pcs" => {
                    let mut v = Vec::new();
                    let mut times = 1;
                    for w in rest.split_whitespace() {
                        if let Some(n) = w.strip_prefix('*') {
                            times = number(n).ok_or_else(|| err(format!("pcs: {w}: *N")))?;
                            continue;
                        }
                        v.push(number(w).ok_or_else(|| err(format!("pcs: {w} is no number")))?);
                    }
                    let v = v.repeat(times as usize);
                    let c = last_case(&mut f, line, word)?;
                    match &mut c.pcs {
                        Some((_, pcs)) => pcs.extend(v),
                        None => c.pcs = Some((line, v)),
                    }
                }
                "flow" => {
                    let text = rest.to_string();
                    last_case(&mut f, line, word)?.flow.push((line, text));
                }
                "loss" => {
                    let (kind, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                    if kind.is_empty() {
                        return Err(err("loss: a kind (Malformed, Mismatch, ...) first".into()));
                    }
                    last_case(&mut f, line, word)?.losses.push(LossLine {
                        line,
                        kind: kind.to_string(),
                        text: text.trim().to_string(),
                    });
                }
                "instructions" => {
                    let (a, b) = rest.split_once("..").unwrap_or((rest, rest));
                    let (Some(a), Some(b)) = (number(a.trim()), number(b.trim())) else {
                        return Err(err(format!("instructions {rest}: N or A..B")));
                    };
                    last_case(&mut f, line, word)?.instructions = Some((line, a, b));
                }
                name => {
                    let mut fields = Vec::new();
                    for w in rest.split_whitespace() {
                        fields.push(field(w).map_err(err)?);
                    }
                    last_case(&mut f, line, word)?
                        .trace
                        .push(TraceLine::Record {
                            line,
                            name: name.to_string(),
                            fields,
                        });
                }
            }
        }
        let whole = |msg: &str| CaseError {
            file: file.to_string(),
            line: 0,
            msg: msg.to_string(),
        };
        if f.protocol.is_empty() {
            return Err(whole("no `protocol` line"));
        }
        if f.program.is_empty() {
            return Err(whole("no program (`ADDR: HEX ASSEMBLY` lines)"));
        }
        if f.cases.is_empty() {
            return Err(whole("no `case` line"));
        }
        for c in &f.cases {
            if c.pcs.is_none()
                && c.flow.is_empty()
                && c.instructions.is_none()
                && c.losses.is_empty()
            {
                return Err(CaseError {
                    file: file.to_string(),
                    line: c.line,
                    msg: "the case expects nothing (`pcs`, `flow`, `loss` or `instructions`)"
                        .into(),
                });
            }
        }
        Ok(f)
    }

    /// Reads the case file at `path`; errors name it by its file name.
    pub fn load(path: &Path) -> Result<CaseFile, CaseError> {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let text = std::fs::read_to_string(path).map_err(|e| CaseError {
            file: name.to_string(),
            line: 0,
            msg: e.to_string(),
        })?;
        CaseFile::parse(&name, &text)
    }

    /// The options of `case`: the file's, then the case's own (a later one wins where a
    /// harness reads one name once).
    pub fn options_of<'a>(&'a self, case: &'a Case) -> impl Iterator<Item = &'a OptionLine> {
        self.options.iter().chain(&case.options)
    }

    /// The flow `dec` gives for the trace `bytes` of `case` (a protocol's harness made both);
    /// an error if the decoder's counts are not the flow's ([`CaseFile::check_counts`]).
    pub fn decode<D: TraceDecoder>(
        &self,
        case: &Case,
        dec: &mut D,
        bytes: &[u8],
    ) -> Result<Vec<FlowElement>, CaseError> {
        let mut elements = Vec::new();
        let st = decode_all(dec, bytes, &mut elements);
        self.check_counts(case, &st, &elements)?;
        Ok(elements)
    }

    /// The decoder's counts (`st`) must be the flow's (`elements`): its losses, the bytes they
    /// skipped and its instructions; an error at `case`'s line otherwise.
    pub fn check_counts(
        &self,
        case: &Case,
        st: &DecodeStats,
        elements: &[FlowElement],
    ) -> Result<(), CaseError> {
        let (mut losses, mut skipped, mut instructions, mut ignored) = (0, 0, 0, 0);
        for e in elements {
            match e {
                FlowElement::Loss { skipped: s, .. } => {
                    losses += 1;
                    skipped += s.unwrap_or(0);
                }
                FlowElement::Range { count, .. } => instructions += count,
                FlowElement::Ignored { .. } => ignored += 1,
                _ => {}
            }
        }
        let flow = (losses, skipped, instructions, ignored);
        if (st.losses, st.skipped_bytes, st.instructions, st.ignored) != flow {
            return Err(self.error(
                case.line,
                format!(
                    "the stats count {} losses, {} bytes skipped, {} instructions, {} ignored; the flow {losses}, {skipped}, {instructions}, {ignored}",
                    st.losses, st.skipped_bytes, st.instructions, st.ignored
                ),
            ));
        }
        Ok(())
    }

    /// An error at `line` of this file.
    pub fn error(&self, line: usize, msg: impl Into<String>) -> CaseError {
        CaseError {
            file: self.file.clone(),
            line,
            msg: msg.into(),
        }
    }

    /// The program as an image: one segment from the lowest address to the end of the highest
    /// instruction, zero between the instructions. Each instruction's assembly must be what
    /// rvtrace's disassembler prints for its encoding (objdump's text), so that the program reads
    /// as what it is.
    pub fn image(&self) -> Result<Image, CaseError> {
        let lo = self.program.iter().map(|p| p.addr).min().unwrap_or(0);
        let hi = self
            .program
            .iter()
            .map(|p| p.addr + p.len as u64)
            .max()
            .unwrap_or(0);
        let mut bytes = vec![0u8; (hi - lo) as usize];
        for p in &self.program {
            let printed = Disasm::new(p.bits, p.addr, self.xlen).to_string();
            if squash(&printed) != squash(&p.text) {
                return Err(self.error(
                    p.line,
                    format!("{:#x} is `{printed}`, not `{}`", p.bits, p.text),
                ));
            }
            let o = (p.addr - lo) as usize;
            bytes[o..o + p.len as usize].copy_from_slice(&p.bits.to_le_bytes()[..p.len as usize]);
        }
        let mut image = Image::new();
        image
            .load_bytes(
                &self.file,
                &crate::minimal_elf(self.xlen == Xlen::Rv64, lo, &bytes),
            )
            .map_err(|e| self.error(0, format!("the program: {e}")))?;
        Ok(image)
    }

    /// Checks the flow `elements` a decoder gave for `case` against the case's expectations;
    /// the error names the line of the first expectation not met and shows what was decoded.
    pub fn check(
        &self,
        case: &Case,
        image: &Image,
        elements: &[FlowElement],
    ) -> Result<(), CaseError> {
        // The decoded flow, shown with a failure (its first lines).
        let shown = || {
            let flow = flow_text(image, &elements[..elements.len().min(SHOWN + 1)]);
            let more = if flow.len() > SHOWN { "\n    ..." } else { "" };
            let flow = &flow[..flow.len().min(SHOWN)];
            format!("\n  decoded flow:\n    {}{more}", flow.join("\n    "))
        };
        let flow = if case.flow.is_empty() {
            Vec::new()
        } else {
            flow_text(image, elements)
        };
        if let Some((line, want)) = &case.pcs {
            let mut got = Vec::new();
            for e in elements {
                if let FlowElement::Range { start, count, .. } = e {
                    for_each_pc(image, *start, *count, |pc| got.push(pc))
                        .map_err(|e| self.error(*line, format!("the flow's PCs: {e}")))?;
                }
            }
            if &got != want {
                let k = got.iter().zip(want).take_while(|(a, b)| a == b).count();
                let hex = |v: Option<&u64>| v.map_or("nothing".into(), |pc| format!("{pc:#x}"));
                return Err(self.error(
                    *line,
                    format!(
                        "PC {k}: expected {}, decoded {} ({} PCs expected, {} decoded){}",
                        hex(want.get(k)),
                        hex(got.get(k)),
                        want.len(),
                        got.len(),
                        shown()
                    ),
                ));
            }
        }
        for (k, (line, want)) in case.flow.iter().enumerate() {
            match flow.get(k) {
                Some(got) if squash(got) == squash(want) => {}
                got => {
                    return Err(self.error(
                        *line,
                        format!(
                            "flow line {}: expected `{want}`, decoded `{}`{}",
                            k + 1,
                            got.map_or("nothing", |s| s.as_str()),
                            shown()
                        ),
                    ))
                }
            }
        }
        if !case.flow.is_empty() && flow.len() > case.flow.len() {
            return Err(self.error(
                case.flow.last().map_or(case.line, |l| l.0),
                format!("the flow goes on: `{}`{}", flow[case.flow.len()], shown()),
            ));
        }
        let losses: Vec<(String, String)> = elements
            .iter()
            .filter_map(|e| match e {
                FlowElement::Loss { reason, .. } => {
                    let kind = format!("{reason:?}");
                    let kind = kind.split(['(', ' ', '{']).next().unwrap_or("").to_string();
                    Some((kind, reason.to_string()))
                }
                _ => None,
            })
            .collect();
        if case.flow.is_empty() || !case.losses.is_empty() {
            for (k, want) in case.losses.iter().enumerate() {
                match losses.get(k) {
                    Some((kind, text)) if *kind == want.kind && text.contains(&want.text) => {}
                    got => {
                        return Err(self.error(
                            want.line,
                            format!(
                                "loss {}: expected {} `{}`, decoded {}{}",
                                k + 1,
                                want.kind,
                                want.text,
                                got.map_or("none".into(), |(k, t)| format!("{k} `{t}`")),
                                shown()
                            ),
                        ))
                    }
                }
            }
            if let Some((kind, text)) = losses.get(case.losses.len()) {
                let line = case.losses.last().map_or(case.line, |l| l.line);
                return Err(self.error(
                    line,
                    format!("a loss not expected: {kind} `{text}`{}", shown()),
                ));
            }
        }
        if let Some((line, a, b)) = case.instructions {
            let n: u64 = elements
                .iter()
                .map(|e| match e {
                    FlowElement::Range { count, .. } => *count,
                    _ => 0,
                })
                .sum();
            if n < a || n > b {
                return Err(
                    self.error(line, format!("{n} instructions decoded, expected {a}..{b}"))
                );
            }
        }
        Ok(())
    }
}

/// The most flow lines a failure shows.
const SHOWN: usize = 40;

/// The case a line belongs to: the last one begun.
fn last_case<'f>(f: &'f mut CaseFile, line: usize, word: &str) -> Result<&'f mut Case, CaseError> {
    let file = f.file.clone();
    f.cases.last_mut().ok_or_else(|| CaseError {
        file,
        line,
        msg: format!("`{word}` before the first `case` line"),
    })
}

/// Whitespace runs as one space, the ends trimmed.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `ADDR: HEX ASSEMBLY` (the address without its colon).
fn program_line(line: usize, addr: &str, rest: &str) -> Result<ProgramLine, String> {
    let addr = number(addr).ok_or_else(|| format!("{addr}: not an address"))?;
    let (hex, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let bits = u32::from_str_radix(hex, 16)
        .map_err(|_| format!("{hex}: not an instruction's hexadecimal encoding"))?;
    let len = insn_len(bits as u16);
    if (len == 2) != (hex.len() == 4) || !(hex.len() == 4 || hex.len() == 8) {
        return Err(format!(
            "{hex}: a {len}-byte instruction is written with {} hexadecimal digits",
            2 * len
        ));
    }
    if text.trim().is_empty() {
        return Err(format!("{hex}: its assembly is missing"));
    }
    Ok(ProgramLine {
        line,
        addr,
        bits,
        len: len as u8,
        text: text.trim().to_string(),
    })
}

/// `name=value` (the value as written).
fn field(w: &str) -> Result<(String, String), String> {
    match w.split_once('=') {
        Some((k, v)) if !k.is_empty() && !v.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{w}: not name=value")),
    }
}

/// `ff 00 ff*100`.
fn byte_list(rest: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for w in rest.split_whitespace() {
        let (b, n) = w.split_once('*').unwrap_or((w, "1"));
        let b = u8::from_str_radix(b, 16).map_err(|_| format!("{w}: not a hexadecimal byte"))?;
        let n = number(n).ok_or_else(|| format!("{w}: {n} is no count"))?;
        out.extend(std::iter::repeat_n(b, n as usize));
    }
    Ok(out)
}

/// The flow's text as `rvtrace decode --flow --list-ignored` prints it, one string per line.
pub fn flow_text(image: &Image, elements: &[FlowElement]) -> Vec<String> {
    let mut t = FlowText::new(image, Vec::new()).with_ignored(true);
    for e in elements {
        t.element(e);
    }
    let out = t.finish().unwrap_or_default();
    String::from_utf8_lossy(&out)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The fields of a trace record, for a protocol's encoder: a field not written is 0. A value is
/// a number ([`number`]) or, for a field the protocol names its values of, one of those names
/// (E-Trace's `qual_status=ended_rep`, as `rvtrace dump` prints it).
pub struct Fields<'a> {
    file: &'a CaseFile,
    line: usize,
    fields: Vec<(String, u64)>,
}

impl<'a> Fields<'a> {
    /// The fields `fields` of record `name` written at `line` of `file`; an error when one is not
    /// in `known` or its value is neither a number nor, for a field of `named` (field, the names
    /// of its values 0, 1, ...), one of its names.
    pub fn new(
        file: &'a CaseFile,
        line: usize,
        name: &str,
        fields: &[(String, String)],
        known: &[&str],
        named: &[(&str, &[&str])],
    ) -> Result<Self, CaseError> {
        let mut values = Vec::new();
        for (k, v) in fields {
            if !known.contains(&k.as_str()) {
                return Err(file.error(
                    line,
                    format!("{name} has no field {k} (it has {})", known.join(", ")),
                ));
            }
            let names = named.iter().find(|(f, _)| f == k).map_or(&[][..], |n| n.1);
            let value = number(v)
                .or_else(|| names.iter().position(|n| n == v).map(|i| i as u64))
                .ok_or_else(|| {
                    let or = if names.is_empty() {
                        String::new()
                    } else {
                        format!(" or one of {}", names.join(", "))
                    };
                    file.error(line, format!("{k}={v}: not a number{or}"))
                })?;
            values.push((k.clone(), value));
        }
        Ok(Fields {
            file,
            line,
            fields: values,
        })
    }

    /// The value of field `name` if written.
    pub fn opt(&self, name: &str) -> Option<u64> {
        self.fields
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|f| f.1)
    }

    /// The value of field `name`, 0 if not written.
    pub fn get(&self, name: &str) -> u64 {
        self.opt(name).unwrap_or(0)
    }

    /// The value of field `name` (0 if not written), an error if it does not fit in `bits` bits.
    pub fn bits(&self, name: &str, bits: u32) -> Result<u64, CaseError> {
        let v = self.get(name);
        if bits < 64 && v >> bits != 0 {
            return Err(self.file.error(
                self.line,
                format!("{name}={v:#x} does not fit in {bits} bits"),
            ));
        }
        Ok(v)
    }
}

/// What a protocol's harness gives for one case: the flow elements, or an error (an unknown
/// message, a count that disagrees).
pub type Decode = fn(&CaseFile, &Case, &Image) -> Result<Vec<FlowElement>, CaseError>;

/// Runs every `*.case` file of `dir` written for `protocol` through `decode` and checks each
/// case; returns the number of cases run and the failures (each naming its file and line). Each
/// decode runs in a thread that is given `timeout`, so that a decoder that never ends fails its
/// case instead of hanging the run.
pub fn run_dir(
    dir: &Path,
    protocol: &str,
    decode: Decode,
    timeout: Duration,
) -> (usize, Vec<CaseError>) {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "case"))
                .collect()
        })
        .unwrap_or_default();
    paths.sort();
    let mut run = 0;
    let mut failures = Vec::new();
    if paths.is_empty() {
        failures.push(CaseError {
            file: dir.display().to_string(),
            line: 0,
            msg: "no *.case file".into(),
        });
    }
    for path in paths {
        let file = match CaseFile::load(&path) {
            Ok(f) => f,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        if file.protocol != protocol {
            continue;
        }
        // The program once per file (each case builds its own image in its thread).
        if let Err(e) = file.image() {
            failures.push(e);
            continue;
        }
        for k in 0..file.cases.len() {
            run += 1;
            let f = file.clone();
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                let c = &f.cases[k];
                let r = f
                    .image()
                    .and_then(|image| f.check(c, &image, &decode(&f, c, &image)?));
                let _ = tx.send(r);
            });
            let c = &file.cases[k];
            match rx.recv_timeout(timeout) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push(e),
                Err(mpsc::RecvTimeoutError::Timeout) => failures
                    .push(file.error(c.line, format!("the decode did not end in {timeout:?}"))),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    failures.push(file.error(c.line, "the decode panicked"))
                }
            }
        }
    }
    (run, failures)
}

/// A protocol's test of its cases: every case of `dir` written for `protocol` through `decode`
/// ([`run_dir`], each decode given 120 s: a guard against a walk that never ends, not a
/// measurement); panics listing every failure, or when there is no case. Returns the number of
/// cases run.
pub fn run_all(dir: &Path, protocol: &str, decode: Decode) -> usize {
    let (n, failures) = run_dir(dir, protocol, decode, Duration::from_secs(120));
    let text: Vec<String> = failures.iter().map(|e| e.to_string()).collect();
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed:\n{}",
        failures.len(),
        text.join("\n")
    );
    assert!(n > 0, "no {protocol} case in {}", dir.display());
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# a comment
protocol ntrace
0x100: 952e      add a0,a0,a1
0x102: 0000006f  j 102     # a jump to itself

case one
Sync icnt=0 faddr=0x80 hist=0b101
bytes ff*3 00
pcs 0x100
pcs 0x102 0x100 *2
loss Mismatch no branch
instructions 1..3
";

    #[test]
    fn a_case_file_reads_as_written() {
        let f = CaseFile::parse("t.case", TEXT).unwrap();
        assert_eq!(f.protocol, "ntrace");
        assert_eq!(f.program.len(), 2);
        assert_eq!((f.program[0].len, f.program[1].bits), (2, 0x6f));
        let c = &f.cases[0];
        assert_eq!((c.line, c.name.as_str()), (6, "one"));
        assert_eq!(
            c.trace,
            [
                TraceLine::Record {
                    line: 7,
                    name: "Sync".into(),
                    fields: vec![
                        ("icnt".into(), "0".into()),
                        ("faddr".into(), "0x80".into()),
                        ("hist".into(), "0b101".into())
                    ],
                },
                TraceLine::Bytes {
                    line: 8,
                    bytes: vec![0xff, 0xff, 0xff, 0]
                },
            ]
        );
        assert_eq!(c.pcs, Some((9, vec![0x100, 0x102, 0x100, 0x102, 0x100])));
        assert_eq!(c.losses[0].kind, "Mismatch");
        assert_eq!(c.instructions, Some((12, 1, 3)));
        let image = f.image().unwrap();
        assert_eq!(image.fetch(0x102), Some(0x6f));
    }

    #[test]
    fn errors_name_the_line() {
        let bad = |text: &str| CaseFile::parse("t.case", text).unwrap_err().to_string();
        assert_eq!(
            bad("protocol x\n0x100: 952e add a0,a0,a1\ncase c\nSync icnt\npcs 0"),
            "t.case:4: icnt: not name=value"
        );
        assert_eq!(
            bad("protocol x\n0x100: 0000006f j 0x100\ncase c\n"),
            "t.case:3: the case expects nothing (`pcs`, `flow`, `loss` or `instructions`)"
        );
        assert_eq!(
            bad("protocol x\n0x100: 952e add a0,a0,a1\npcs 0x100\n"),
            "t.case:3: `pcs` before the first `case` line"
        );
        assert_eq!(
            bad("protocol x\n0x100: 6f j 0x100\ncase c\npcs 0"),
            "t.case:2: 6f: a 4-byte instruction is written with 8 hexadecimal digits"
        );
        let f = CaseFile::parse(
            "t.case",
            "protocol x\n0x100: 952e sub a0,a0,a1\ncase c\npcs 0",
        )
        .unwrap();
        assert_eq!(
            f.image().unwrap_err().to_string(),
            "t.case:2: 0x952e is `add a0,a0,a1`, not `sub a0,a0,a1`"
        );
    }

    #[test]
    fn options_of_the_file_then_the_case_and_named_values() {
        let text = "protocol x\noption a=1\n0x100: 952e add a0,a0,a1\ncase c\noption b=raw\nR q=two\npcs 0x100\n";
        let f = CaseFile::parse("t.case", text).unwrap();
        let c = &f.cases[0];
        let o: Vec<_> = f
            .options_of(c)
            .map(|o| (o.name.as_str(), o.value.as_str()))
            .collect();
        assert_eq!(o, [("a", "1"), ("b", "raw")]);
        assert_eq!(f.options[0].number(&f), Ok(1));
        assert_eq!(
            c.options[0].number(&f).unwrap_err().to_string(),
            "t.case:5: option b=raw: not a number"
        );
        let TraceLine::Record { line, name, fields } = &c.trace[0] else {
            panic!("{:?}", c.trace)
        };
        let names: &[(&str, &[&str])] = &[("q", &["zero", "one", "two"])];
        let x = Fields::new(&f, *line, name, fields, &["q"], names).unwrap();
        assert_eq!(x.get("q"), 2);
        assert_eq!(
            Fields::new(&f, *line, name, fields, &["q"], &[])
                .err()
                .unwrap()
                .to_string(),
            "t.case:6: q=two: not a number"
        );
    }

    #[test]
    fn a_wrong_expectation_names_its_line() {
        let f = CaseFile::parse("t.case", TEXT).unwrap();
        let image = f.image().unwrap();
        let c = &f.cases[0];
        let range = FlowElement::Range {
            start: 0x100,
            last: 0x100,
            count: 1,
            class: rvtrace_isa::CfClass::None,
            taken: None,
        };
        // The PCs differ at the second.
        let e = f.check(c, &image, &[range]).unwrap_err();
        assert_eq!(e.line, 9, "{e}");
        assert!(
            e.msg.starts_with("PC 1: expected 0x102, decoded nothing"),
            "{e}"
        );
    }
}
