//! `rvtrace ingress convert`: ingress streams from other tools' logs and formats, into binary
//! ingress, PCSEQ, E-Trace CSV or text. The readers are in `rvtrace-ingress` (`pcs`, `qemu`,
//! `spike`, `pcseq`, `etrace_csv`, `text`, `binary`); records are derived from address logs by
//! `rvtrace_sim::import` (the hart model's recorder).

use crate::report::{self, CmdResult, Failure, Output};
use rvtrace_image::Image;
use rvtrace_ingress::etrace_csv::{CsvColumns, EtraceCsvReader, EtraceCsvWriter};
use rvtrace_ingress::pcs::{PcListReader, StartAt, StepSource};
use rvtrace_ingress::pcseq::{PcseqReader, PcseqWriter};
use rvtrace_ingress::qemu::QemuLogReader;
use rvtrace_ingress::spike::SpikeLogReader;
use rvtrace_ingress::text::{TextReader, TextWriter};
use rvtrace_ingress::{
    privilege, IngressError, IngressHeader, IngressReader, IngressWriter, Record, Xlen,
};
use rvtrace_isa::IsaConfig;
use rvtrace_sim::import::Importer;
use std::cell::RefCell;
use std::io;
use std::path::PathBuf;

const HELP: &str = "\
Input formats (--from):
  pcs     one retired instruction address per line, 0x + hex (`rvtrace run --pcs`, NexRv PCONLY)
  qemu    QEMU's log: qemu-system-riscv64 -M virt -bios none -kernel prog.elf -singlestep
          -d exec,nochain,int -D qemu.log  (QEMU >= 8.1: -accel tcg,one-insn-per-tb=on
          instead of -singlestep)
  spike   Spike's commit log: spike -l --log-commits prog.elf 2>spike.log
  pcseq   NexRv PCSEQ text (0xPC,<type><size>)
  csv     the E-Trace reference flow's encoder_input CSV
  text    rvtrace's text ingress (`rvtrace run --ingress-text`, `rvtrace ingress dump`); its
          header comment, when present, gives the XLEN, itype width and signals
  ingress rvtrace's binary ingress (`rvtrace run --ingress`)

pcs, qemu and spike list addresses, not records: each record is derived from the instruction at
the address (read from --elf) and the next address, by the hart model's rules (itype, sizes,
sijump, ecall/ebreak exceptions, the semihosting convention). What each log cannot carry:
  pcs    faults and interrupts (the handler just follows; no trap record can be derived, the
         discontinuity is a warning), privilege (--priv), ecall/ebreak trap values (0), time
  spike  without -l: as pcs; with -l, everything but time
  qemu   with `int` in -d: everything but time (privilege from the TB flags)
The last instruction's successor is unknown: a branch there counts as not taken. For qemu and
spike the simulator's reset code before the ELF entry point is dropped (--start).

With --elf, the records written are checked as `rvtrace ingress check` checks them (the
program, itype, flow, sizes, traps, privilege, context): a violation is a warning (at most
--max-warnings) and the exit status is 1; --no-check skips this. Not for --from pcs: a PC list
cannot show traps, and the discontinuities they leave are warned about as above. A QEMU log
does not give the privilege of an interrupt or fetch fault taken right after an xRET (the
record keeps the xRET's): the check reports the privilege change after it.

Exit status: 0 success; 1 records that break the ingress rules (the output is written); 125
unreadable or malformed input (the message gives the line), or a record the output format
cannot hold: then no output is left (an existing file is unchanged).";

/// `--from`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FromFormat {
    /// A retired-PC list (`run --pcs`).
    Pcs,
    /// Spike `-l --log-commits` log.
    Spike,
    /// QEMU `-d exec,nochain,int` log (one instruction per block).
    Qemu,
    /// NexRv PCSEQ.
    Pcseq,
    /// E-Trace reference flow `encoder_input` CSV.
    Csv,
    /// rvtrace text ingress.
    Text,
    /// rvtrace binary ingress.
    Ingress,
}

impl FromFormat {
    /// The name as given to `--from`.
    fn name(self) -> &'static str {
        match self {
            FromFormat::Pcs => "pcs",
            FromFormat::Spike => "spike",
            FromFormat::Qemu => "qemu",
            FromFormat::Pcseq => "pcseq",
            FromFormat::Csv => "csv",
            FromFormat::Text => "text",
            FromFormat::Ingress => "ingress",
        }
    }
}

/// `--to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ToFormat {
    /// rvtrace binary ingress.
    Ingress,
    /// NexRv PCSEQ (retired instructions only: trap records are left out).
    Pcseq,
    /// E-Trace reference flow `encoder_input` CSV.
    Csv,
    /// rvtrace text ingress.
    Text,
}

/// `--priv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PrivArg {
    U,
    S,
    M,
}

/// Arguments of `rvtrace ingress convert`.
#[derive(clap::Args)]
#[command(after_help = HELP)]
pub struct ConvertArgs {
    /// The input file (`-` for stdin).
    input: PathBuf,
    /// Format of the input.
    #[arg(long, value_enum)]
    from: FromFormat,
    /// The program's ELF file(s): needed for --from pcs|spike|qemu (the instructions), and for
    /// the XLEN of binary ingress output (or give --xlen).
    #[arg(long = "elf", value_name = "ELF")]
    elf: Vec<PathBuf>,
    /// The output file (`-` for stdout).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// Format of the output.
    #[arg(long, value_enum, default_value_t = ToFormat::Ingress)]
    to: ToFormat,
    /// Width of the derived `itype` (pcs, spike, qemu), and the header's for binary output
    /// [default: the input's (binary ingress, text with its header), else 4].
    #[arg(long, value_name = "3|4", value_parser = clap::value_parser!(u8).range(3..=4))]
    itype_width: Option<u8>,
    /// Privilege of instructions whose log does not say (pcs, pcseq; spike and qemu before
    /// their first privilege).
    #[arg(long = "priv", value_enum, default_value_t = PrivArg::M)]
    priv_: PrivArg,
    /// Drop the log's steps before the first instruction retired at ADDR (hex), or `none` to keep
    /// all. Default: the ELF entry point for spike and qemu, none for pcs.
    #[arg(long, value_name = "ADDR|none")]
    start: Option<String>,
    /// Show at most N warnings (discontinuities the log cannot explain).
    #[arg(long, default_value_t = report::DEFAULT_MAX_WARNINGS, value_name = "N")]
    max_warnings: u64,
    /// Do not check the records against the program and the ingress rules (done with --elf).
    #[arg(long)]
    no_check: bool,
    /// XLEN for binary ingress output when no ELF is given (32 or 64).
    #[arg(long, value_name = "32|64", value_parser = ["32", "64"])]
    xlen: Option<String>,
    /// Columns of a CSV input to skip (a simulator's `cycle`, say): their names, comma-separated
    /// or the option repeated. Any other unknown column is an error.
    #[arg(long = "csv-ignore", value_name = "COLUMN", value_delimiter = ',')]
    csv_ignore: Vec<String>,
}

/// Reads the next record of a record format.
type RecordSource = Box<dyn FnMut() -> Result<Option<Record>, IngressError>>;

/// The output writer.
enum Writer {
    Ingress(IngressWriter<Output>),
    Pcseq(PcseqWriter<Output>),
    Csv(EtraceCsvWriter<Output>),
    Text(TextWriter<Output>),
}

impl Writer {
    fn write(&mut self, r: &Record) -> io::Result<()> {
        match self {
            Writer::Ingress(w) => w.write(r),
            Writer::Pcseq(w) => w.write(r),
            Writer::Csv(w) => w.write(r),
            Writer::Text(w) => w.write(r),
        }
    }

    /// Finishes the file; returns the number of records PCSEQ left out.
    fn finish(self, name: &str) -> Result<u64, Failure> {
        let fail = |e: io::Error| Failure::io(format_args!("writing {name}"), e);
        let (out, skipped) = match self {
            Writer::Ingress(w) => (w.finish().map_err(fail)?, 0),
            Writer::Pcseq(w) => {
                let s = w.skipped();
                (w.finish().map_err(fail)?, s)
            }
            Writer::Csv(w) => (w.finish().map_err(fail)?, 0),
            Writer::Text(w) => (w.finish().map_err(fail)?, 0),
        };
        out.finish()?;
        Ok(skipped)
    }
}

fn load_image(paths: &[PathBuf]) -> Result<(Image, Option<(Xlen, u64)>), Failure> {
    let mut image = Image::new();
    let mut first = None;
    for p in paths {
        let info = image
            .load_file(p)
            .map_err(|e| Failure::Tool(format!("{}: {e}", p.display())))?;
        first.get_or_insert((info.xlen, info.entry));
    }
    Ok((image, first))
}

fn parse_start(s: &str) -> Result<Option<u64>, Failure> {
    if s == "none" {
        return Ok(None);
    }
    let h = s.strip_prefix("0x").unwrap_or(s);
    u64::from_str_radix(h, 16)
        .map(Some)
        .map_err(|_| Failure::Usage(format!("--start {s:?}: expected a hex address or none")))
}

/// `rvtrace ingress convert`.
pub fn convert(a: &ConvertArgs) -> CmdResult {
    let mut inputs = vec![a.input.as_path()];
    inputs.extend(a.elf.iter().map(|p| p.as_path()));
    report::distinct(&inputs, &[("--output", a.output.as_path())])?;
    let derived = matches!(
        a.from,
        FromFormat::Pcs | FromFormat::Spike | FromFormat::Qemu
    );
    if derived && a.elf.is_empty() {
        return Err(Failure::Usage(format!(
            "--from {} needs --elf: the records are derived from the program's instructions",
            a.from.name()
        )));
    }
    if !a.csv_ignore.is_empty() && a.from != FromFormat::Csv {
        return Err(Failure::Usage(format!(
            "--csv-ignore names columns of a CSV input, not of --from {}",
            a.from.name()
        )));
    }
    let (image, elf) = load_image(&a.elf)?;
    // Shared with the QEMU log reader, which looks at the instruction a breakpoint is at.
    let image = std::rc::Rc::new(image);
    let mut xlen = match (a.xlen.as_deref(), elf) {
        (Some("32"), _) => Some(Xlen::Rv32),
        (Some(_), _) => Some(Xlen::Rv64),
        (None, e) => e.map(|e| e.0),
    };
    let default_priv = match a.priv_ {
        PrivArg::U => privilege::U,
        PrivArg::S => privilege::S,
        PrivArg::M => privilege::M,
    };
    let start = match (&a.start, a.from) {
        (Some(s), _) => parse_start(s)?,
        (None, FromFormat::Spike | FromFormat::Qemu) => elf.map(|e| e.1),
        (None, _) => None,
    };
    let in_name = report::name(&a.input);
    let reader = report::open_input(&a.input)?;
    let in_err = |e: IngressError| match e {
        IngressError::Io(e) => Failure::io(&in_name, e),
        e => Failure::Tool(format!("{in_name}: {e}")),
    };

    // Records read one by one (formats that hold records), or steps (address logs).
    let mut records: Option<RecordSource> = None;
    let mut steps: Option<Box<dyn StepSource>> = None;
    let itype_width = a.itype_width.unwrap_or(4);
    let mut header = IngressHeader::new(xlen.unwrap_or(Xlen::Rv64), itype_width, "");
    let mut csv_columns = CsvColumns::default();
    match a.from {
        FromFormat::Pcs => steps = Some(Box::new(PcListReader::new(reader))),
        FromFormat::Spike => steps = Some(Box::new(SpikeLogReader::new(reader))),
        FromFormat::Qemu => {
            let code = std::rc::Rc::clone(&image);
            steps = Some(Box::new(QemuLogReader::with_code(reader, move |pc| {
                code.fetch(pc)
            })))
        }
        FromFormat::Pcseq => {
            let mut r = PcseqReader::new(reader).with_priv(default_priv);
            records = Some(Box::new(move || r.next_record()));
        }
        FromFormat::Csv => {
            let ignore: Vec<&str> = a.csv_ignore.iter().map(String::as_str).collect();
            let mut r = EtraceCsvReader::with_ignored(reader, &ignore).map_err(in_err)?;
            csv_columns = r.columns();
            header.has_context = csv_columns.context;
            header.has_time = csv_columns.time;
            header.has_sijump = csv_columns.sijump;
            records = Some(Box::new(move || r.next_record()));
        }
        FromFormat::Text => {
            let mut r = TextReader::new(reader);
            match r.header().map_err(in_err)? {
                // `rvtrace ingress dump`, `run --ingress-text`: the header says it.
                Some(h) => {
                    if let Some(x) = xlen.filter(|x| *x != h.xlen) {
                        return Err(Failure::Usage(format!(
                            "{in_name}: its header says xlen={}, but {} is RV{}",
                            h.xlen.bits(),
                            if a.xlen.is_some() {
                                "--xlen"
                            } else {
                                "the ELF"
                            },
                            x.bits()
                        )));
                    }
                    xlen = Some(h.xlen);
                    header = IngressHeader {
                        itype_width: a.itype_width.unwrap_or(h.itype_width),
                        ..h.clone()
                    };
                }
                // What `rvtrace run --ingress` declares: the hart model drives time and sijump.
                None => {
                    header.has_time = true;
                    header.has_sijump = true;
                }
            }
            records = Some(Box::new(move || r.next_record()));
        }
        FromFormat::Ingress => {
            let mut r = IngressReader::new(reader).map_err(in_err)?;
            header = r.header().clone();
            records = Some(Box::new(move || r.next_record()));
        }
    }
    if derived {
        header.has_sijump = true;
    }
    if a.from != FromFormat::Ingress {
        if a.to == ToFormat::Ingress && xlen.is_none() {
            return Err(Failure::Usage(
                "binary ingress output needs the XLEN: give --elf or --xlen".into(),
            ));
        }
        header.source = format!("rvtrace ingress convert --from {} {in_name}", a.from.name());
    }
    if a.to == ToFormat::Csv {
        csv_columns = CsvColumns {
            context: header.has_context || csv_columns.context,
            time: header.has_time && csv_columns.time,
            sijump: header.has_sijump && csv_columns.sijump,
        };
    }

    // All or nothing: a failure half way leaves no truncated file (a broken binary ingress
    // file would read as damaged trace).
    let out = Output::create_whole(&a.output)?;
    let out_name = out.name().to_string();
    let out_fail = |e: io::Error| Failure::io(format_args!("writing {out_name}"), e);
    let mut w = match a.to {
        ToFormat::Ingress => Writer::Ingress(IngressWriter::new(out, &header).map_err(out_fail)?),
        ToFormat::Pcseq => Writer::Pcseq(PcseqWriter::new(out)),
        ToFormat::Csv => Writer::Csv(EtraceCsvWriter::new(out, csv_columns).map_err(out_fail)?),
        ToFormat::Text => {
            let mut w = TextWriter::new(out);
            w.header(&header).map_err(out_fail)?;
            Writer::Text(w)
        }
    };

    // A PC list cannot carry traps: its gaps are the warnings above, not checked again.
    let check = !a.no_check && !a.elf.is_empty() && a.from != FromFormat::Pcs;
    let mut checking = check.then(|| {
        crate::check::Checking::new(
            &image,
            xlen.unwrap_or(Xlen::Rv64),
            header.itype_width,
            &in_name,
            a.max_warnings,
        )
    });
    let mut count = 0u64;
    if let Some(next) = records.as_mut() {
        while let Some(r) = next().map_err(in_err)? {
            w.write(&r).map_err(out_fail)?;
            if let Some(c) = checking.as_mut() {
                c.push(&r);
            }
            count += 1;
        }
    } else if let Some(src) = steps {
        let isa = IsaConfig::new(xlen.unwrap_or(Xlen::Rv64));
        let mut src = StartAt::new(src, start);
        let werr: RefCell<Option<io::Error>> = RefCell::new(None);
        let mut gaps = report::Warnings::new(&in_name, a.max_warnings);
        {
            let mut imp = Importer::new(&image, isa, itype_width, default_priv, |r: &Record| {
                let mut e = werr.borrow_mut();
                if e.is_none() {
                    *e = w.write(r).err();
                }
                if let Some(c) = checking.as_mut() {
                    c.push(r);
                }
            });
            while let Some((line, step)) = src.next_step().map_err(in_err)? {
                let gap = imp
                    .step(step)
                    .map_err(|e| Failure::Tool(format!("{in_name}: line {line}: {e}")))?;
                if let Some((pc, next)) = gap {
                    gaps.warn(format_args!(
                        "line {line}: {pc:#x} is followed by {next:#x}, where it cannot go: a trap \
                         (fault or interrupt) the log does not show; no record for it"
                    ));
                }
                if werr.borrow().is_some() {
                    break;
                }
            }
            imp.finish();
            count = imp.records();
        }
        gaps.finish();
        if let Some(e) = werr.into_inner() {
            return Err(out_fail(e));
        }
        if !src.started() {
            return Err(Failure::Tool(format!(
                "{in_name}: no instruction at the start address {:#x} (the ELF entry point; see --start)",
                start.unwrap_or(0)
            )));
        }
    }
    let skipped = w.finish(&out_name)?;
    if skipped > 0 {
        note!(
            "{out_name}: {skipped} of {count} records retire no instruction (traps) and are not in PCSEQ"
        );
    }
    Ok(report::status(checking.is_none_or(|c| c.finish())))
}
