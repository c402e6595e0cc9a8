//! `rvtrace tandem dump`: a trace for people, one group per instruction (as Bluespec's
//! Show_Trace_Data tool prints one), and where malformed bytes start.

use crate::codec::{mem_op, reg, AddlState, DecodeError, Params, Reader, Record};
use rvtrace_isa::disasm::{csr_name, disasm, fname, xname};
use std::io::{self, Write};

/// Name of a register address for people: `x3 (gp)`, `f7 (ft7)`, `mie`, `csr 0x7c0`.
pub fn reg_name(addr: u16) -> String {
    if reg::is_gpr(addr) {
        let n = (addr - reg::GPR0) as u32;
        format!("x{n} ({})", xname(n))
    } else if reg::is_fpr(addr) {
        let n = (addr - reg::FPR0) as u32;
        format!("f{n} ({})", fname(n))
    } else if reg::is_csr(addr) {
        match csr_name(addr) {
            Some(n) => n.to_string(),
            None => format!("csr 0x{addr:03x}"),
        }
    } else {
        format!("register 0x{addr:04x}")
    }
}

/// Name of a privilege level.
pub fn priv_name(p: u8) -> &'static str {
    match p {
        0 => "U",
        1 => "S",
        3 => "M",
        _ => "?",
    }
}

/// One record as a line of text (without the group structure). `xlen` sizes hex values.
pub fn record_text(r: &Record, p: &Params) -> String {
    let xw = p.xbytes() * 2;
    match *r {
        Record::BeginGroup => "begin group".into(),
        Record::EndGroup => "end group".into(),
        Record::IncrPc => "pc += instruction length".into(),
        Record::FullReg { addr, value } => {
            let w = p.reg_bytes(addr) * 2;
            format!("{} = 0x{value:0w$x}", reg_name(addr))
        }
        Record::IncrRegAdd { addr, offset } => format!("{} += {offset}", reg_name(addr)),
        Record::IncrRegOr { addr, mask } => format!("{} |= 0x{mask:02x}", reg_name(addr)),
        Record::State(s) => match s {
            AddlState::Priv(v) => format!("priv = {v} ({})", priv_name(v)),
            AddlState::Paddr(a) => format!("physical address = 0x{a:x}"),
            AddlState::Eaddr(a) => format!("effective address = 0x{a:x}"),
            AddlState::StoreData { size, value } => {
                format!(
                    "store data ({} bytes) = 0x{value:0w$x}",
                    1 << size,
                    w = 2 << size
                )
            }
            AddlState::Mtime(t) => format!("mtime = {t}"),
            AddlState::PcPaddr(a) => format!("pc physical address = 0x{a:x}"),
            AddlState::Pc(v) => format!("pc = 0x{v:0xw$x}"),
        },
        Record::MemReq {
            addr,
            op,
            size,
            data,
        } => {
            let mut s = format!(
                "memory request: {} {} bytes at 0x{addr:x}",
                mem_op::name(op),
                1 << size
            );
            if let Some(d) = data {
                s.push_str(&format!(" data 0x{d:0w$x}", w = 2 << size));
            }
            s
        }
        Record::MemRsp { size, result, data } => {
            let mut s = format!(
                "memory response: {} bytes, {}",
                1 << size,
                match result {
                    0 => "success".to_string(),
                    1 => "failure".to_string(),
                    r => format!("result {r}"),
                }
            );
            if let Some(d) = data {
                s.push_str(&format!(", data 0x{d:0w$x}", w = 2 << size));
            }
            s
        }
        Record::HartReset => "hart reset".into(),
        Record::StateInit => "state initialization".into(),
        Record::Insn16(i) => format!("instruction (16-bit) {i:04x}"),
        Record::Insn32(i) => format!("instruction (32-bit) {i:08x}"),
    }
}

/// What [`dump`] saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpSummary {
    /// Groups.
    pub groups: u64,
    /// Groups with an instruction.
    pub instructions: u64,
    /// Records.
    pub records: u64,
}

/// Why [`dump`] stopped early.
#[derive(Debug)]
pub enum DumpError {
    /// Writing failed.
    Io(io::Error),
    /// The trace is malformed from this record on (everything before it was printed).
    Malformed(DecodeError),
}

impl From<io::Error> for DumpError {
    fn from(e: io::Error) -> Self {
        DumpError::Io(e)
    }
}

struct Pending {
    lines: Vec<String>,
    insn: Option<(u32, u8)>,
    offset: u64,
    init: bool,
    incr: bool,
    new_pc: Option<u64>,
}

/// Print `bytes` for people: a header line per group (`group N` counting from 1, its byte
/// offset, and for an instruction its pc and disassembly), then one indented line per record.
/// Records outside any group are printed on their own. On malformed bytes everything before
/// them is printed, then the error is returned.
pub fn dump<W: Write>(bytes: &[u8], p: &Params, out: &mut W) -> Result<DumpSummary, DumpError> {
    writeln!(
        out,
        "# tandem trace: {} bytes, XLEN {}, FLEN {}, MLEN {}",
        bytes.len(),
        p.xlen,
        p.flen,
        p.mlen
    )?;
    let mut r = Reader::new(bytes, *p, 0);
    let mut sum = DumpSummary::default();
    let mut cur: Option<Pending> = None;
    // The pc as far as the trace tells it (for the header of incremental-pc groups).
    let mut pc: Option<u64> = None;
    let xmask = crate::codec::mask_bits(u64::MAX, p.xlen);

    let flush =
        |g: Pending, sum: &mut DumpSummary, out: &mut W, pc: &mut Option<u64>| -> io::Result<()> {
            sum.groups += 1;
            let mut head = format!("group {} @{}", sum.groups, g.offset);
            if g.init {
                head.push_str(": state initialization");
            }
            let before = *pc;
            if let Some(n) = g.new_pc {
                *pc = Some(n & xmask);
            } else if g.incr {
                *pc = match (before, g.insn) {
                    (Some(a), Some((_, l))) => Some(a.wrapping_add(l as u64) & xmask),
                    _ => None,
                };
            }
            match g.insn {
                Some((bits, _)) => {
                    sum.instructions += 1;
                    match before {
                        Some(a) => {
                            head.push_str(&format!(": pc 0x{a:x}: {}", disasm(bits, a, p.xlen)))
                        }
                        None => head.push_str(&format!(": {}", disasm(bits, 0, p.xlen))),
                    }
                }
                None if !g.init => head.push_str(": no instruction (an interrupt)"),
                None => {}
            }
            writeln!(out, "{head}")?;
            for l in &g.lines {
                writeln!(out, "    {l}")?;
            }
            Ok(())
        };

    while let Some(item) = r.next() {
        let (off, rec) = match item {
            Ok(x) => x,
            Err(e) => {
                if let Some(g) = cur.take() {
                    flush(g, &mut sum, out, &mut pc)?;
                }
                let rest = &bytes[e.offset as usize..];
                let show: Vec<String> = rest.iter().take(16).map(|b| format!("{b:02x}")).collect();
                writeln!(out, "error: {e}")?;
                writeln!(
                    out,
                    "error: bytes from offset {}: {}{}",
                    e.offset,
                    show.join(" "),
                    if rest.len() > 16 { " ..." } else { "" }
                )?;
                return Err(DumpError::Malformed(e));
            }
        };
        sum.records += 1;
        match rec {
            Record::BeginGroup => {
                // An end group is implied by a begin group (chapter 3).
                if let Some(g) = cur.take() {
                    flush(g, &mut sum, out, &mut pc)?;
                }
                cur = Some(Pending {
                    lines: Vec::new(),
                    insn: None,
                    offset: off,
                    init: false,
                    incr: false,
                    new_pc: None,
                });
                continue;
            }
            Record::EndGroup => {
                match cur.take() {
                    Some(g) => flush(g, &mut sum, out, &mut pc)?,
                    None => writeln!(out, "@{off}: end group outside any group")?,
                }
                continue;
            }
            _ => {}
        }
        let text = record_text(&rec, p);
        match &mut cur {
            Some(g) => {
                match rec {
                    Record::State(AddlState::Pc(v)) => g.new_pc = Some(v),
                    Record::IncrPc => g.incr = true,
                    Record::Insn16(i) => g.insn = Some((i as u32, 2)),
                    Record::Insn32(i) => g.insn = Some((i, 4)),
                    Record::StateInit => g.init = true,
                    _ => {}
                }
                g.lines.push(text)
            }
            None => {
                if let Record::State(AddlState::Pc(v)) = rec {
                    pc = Some(v & xmask);
                }
                writeln!(out, "@{off}: (outside any group) {text}")?
            }
        }
    }
    if let Some(g) = cur.take() {
        flush(g, &mut sum, out, &mut pc)?;
    }
    writeln!(
        out,
        "# {} groups, {} with an instruction, {} records",
        sum.groups, sum.instructions, sum.records
    )?;
    Ok(sum)
}
