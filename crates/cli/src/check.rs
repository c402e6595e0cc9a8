//! `rvtrace ingress check`: every record of an ingress file checked against the program and the
//! ingress port's rules ([`rvtrace_decode::check`]); `ingress convert` runs the same check on
//! what it imports ([`Checking`]).

use crate::report::{self, CmdResult, Failure, Output};
use rvtrace_decode::check::{IngressChecker, Violation};
use rvtrace_flow::addr_with_symbol;
use rvtrace_image::Image;
use rvtrace_ingress::{IngressReader, Record, Xlen};
use rvtrace_isa::IsaConfig;
use std::io::Write;
use std::path::PathBuf;

const HELP: &str = "\
The rules (E-Trace ingressPort.adoc \"Instruction Trace Interface\"; N-Trace \"Trace Ingress
Port\", the same port):
  instructions  iaddr even; iretire half-words ending on an instruction of the program;
                ilastsize the last one's size; in a block only the last a control transfer
  itype         one of the codes the itype tables (E-Trace JumpClasses, N-Trace \"Generating
                itype\") give the last instruction at the header's itype width, or 1/2 (a trap
                after it); ecall/ebreak itype 1 (but the last record: the exit call)
  flow          each record starts where the one before goes (next instruction, the target of a
                taken branch or inferable jump), unless that one ended in a trap, a trap return
                or an uninferable jump (or ctype 3, an asynchronous discontinuity)
  traps         cause a standard or custom mcause code; an ecall's the one of its privilege
                with tval 0; an ebreak's 3; an illegal instruction's tval 0 or its bits
  privilege     a defined code; changes only after a trap (up) or a trap return (down)
  context       ctype 0-3; a new context reported (ctype not 0) on its first record
Records with iretire 0 and itype 0 carry nothing and are skipped. Records whose instructions
are not in the program (code written at run time, or mapped where the ELF does not say) are not
checked; the summary counts them.

Output (stdout): each violation shown (at most --max) as its record index and text, the
instruction it is about with symbol and disassembly, and the rule; then a summary line.

Exit status: 0 no violation; 1 violations (or a damaged file: the records before the damage
were checked); 2 usage error; 125 the input is not an ingress file or cannot be read.";

/// Default of `--max`.
const DEFAULT_MAX: u64 = 10;

/// Arguments of `rvtrace ingress check`.
#[derive(clap::Args)]
#[command(after_help = HELP)]
pub struct CheckArgs {
    /// The binary ingress file (`-` for stdin).
    input: PathBuf,
    /// The program's ELF file(s).
    #[arg(long = "elf", value_name = "ELF", required_unless_present = "image")]
    elf: Vec<PathBuf>,
    #[command(flatten)]
    images: crate::trace_source::ImageArgs,
    /// Show the first N violations (all are counted).
    #[arg(long, default_value_t = DEFAULT_MAX, value_name = "N")]
    max: u64,
}

/// A violation for people: the record, the instruction it is about (symbol and disassembly),
/// the rule.
pub fn describe(v: &Violation, image: &Image, xlen: Xlen) -> String {
    let pc = v.insn_addr();
    let dis = image
        .fetch(pc)
        .map(|bits| rvtrace_isa::disasm::disasm(bits, pc, xlen.bits()).to_string())
        .unwrap_or_default();
    let insn = format!("{:<40} {dis}", addr_with_symbol(image, pc));
    format!(
        "record {}: {}\n    {}\n    {}",
        v.index,
        v.record,
        insn.trim_end(),
        v.kind
    )
}

/// The check run alongside another command (`ingress convert`): violations as warnings on
/// stderr, at most `max`.
pub struct Checking<'a> {
    checker: IngressChecker<'a>,
    image: &'a Image,
    xlen: Xlen,
    warnings: report::Warnings,
}

impl<'a> Checking<'a> {
    /// A check of the records of `name` (the input) against the program in `image`.
    pub fn new(image: &'a Image, xlen: Xlen, itype_width: u8, name: &str, max: u64) -> Self {
        Checking {
            checker: IngressChecker::new(image, IsaConfig::new(xlen), itype_width),
            image,
            xlen,
            warnings: report::Warnings::new(name, max),
        }
    }

    /// One record.
    pub fn push(&mut self, r: &Record) {
        let (image, xlen, w) = (self.image, self.xlen, &mut self.warnings);
        self.checker.push(r, |v| w.warn(describe(&v, image, xlen)));
    }

    /// The end of the records (says how many warnings were not shown): whether no record broke
    /// a rule.
    pub fn finish(mut self) -> bool {
        self.checker.finish();
        self.warnings.finish();
        self.checker.violations() == 0
    }
}

/// `rvtrace ingress check`.
pub fn check(a: &CheckArgs) -> CmdResult {
    let (image, elf_xlen) = crate::trace_source::load_program(&a.elf, &a.images)?;
    let name = report::name(&a.input);
    let mut r = IngressReader::new(report::open_input(&a.input)?).map_err(|e| match e {
        rvtrace_ingress::IngressError::Io(e) => Failure::io(&name, e),
        e => Failure::Tool(format!("{name}: {e}")),
    })?;
    let h = r.header().clone();
    if elf_xlen.is_some_and(|x| x != h.xlen) {
        warn!(
            "{name}: the header says RV{}, the ELF is RV{}",
            h.xlen.bits(),
            elf_xlen.map_or(0, |x| x.bits())
        );
    }
    let mut checker = IngressChecker::new(&image, IsaConfig::new(h.xlen), h.itype_width);
    let mut out = Output::stdout();
    let mut shown = 0u64;
    let mut werr = None;
    let mut batch = Vec::with_capacity(4096);
    let damage = loop {
        batch.clear();
        let got = r.read_batch(&mut batch, 4096);
        for rec in &batch {
            checker.push(rec, |v| {
                if shown < a.max && werr.is_none() {
                    shown += 1;
                    werr = writeln!(out, "{}", describe(&v, &image, h.xlen)).err();
                }
            });
        }
        match got {
            Ok(0) => break None,
            Ok(_) => {}
            Err(e) => break Some(e),
        }
    };
    checker.finish();
    if let Some(e) = werr {
        return Err(out.fail(e));
    }
    let n = checker.violations();
    let outside = match checker.outside() {
        0 => String::new(),
        k => format!(" ({k} outside the program, not checked)"),
    };
    let summary = if n == 0 {
        format!(
            "{name}: {} records{outside}, {} instructions: no violation",
            checker.records(),
            checker.instructions()
        )
    } else {
        format!(
            "{name}: {n} violations in {} records{outside} (the first {shown} shown)",
            checker.records()
        )
    };
    writeln!(out, "{summary}").map_err(|e| out.fail(e))?;
    out.finish()?;
    if let Some(e) = damage {
        return crate::run::damaged_input(&name, &e, Some(checker.records()));
    }
    Ok(report::status(n == 0))
}
