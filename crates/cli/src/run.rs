//! `rvtrace run`, `rvtrace example` and `rvtrace ingress dump`.

use crate::isa_arg::parse_isa;
use crate::report::CmdResult;
use crate::report::{EXIT_INSN_LIMIT, EXIT_TOOL_ERROR};
use rvtrace_image::Image;
use rvtrace_ingress::{IngressHeader, IngressWriter, Record};
use rvtrace_isa::{CfClass, IsaConfig, Xlen};
use rvtrace_sim::decode::Extensions;
use rvtrace_sim::ingress::IngressRecorder;
use rvtrace_sim::{Config, Hart, Observer, Retired, Stop, TrapInfo};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `rvtrace run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The program: a RISC-V ELF32 or ELF64 file. Its path, as given, is also the semihosting
    /// command line (as QEMU's `-kernel PATH` makes it), so picolibc's argv[0] is this path.
    elf: PathBuf,
    /// Load a further ELF file into memory (repeatable). Execution starts at the first file's entry.
    #[arg(long = "load", value_name = "ELF")]
    extra: Vec<PathBuf>,
    /// Write every retired instruction address to FILE, one per line as 0x + hex
    /// (the NexRv PCONLY format). Faulting instructions are not listed; ecall/ebreak are.
    #[arg(long, value_name = "FILE")]
    pcs: Option<PathBuf>,
    /// Write the ingress stream (one record per retired instruction or trap) to FILE, in the
    /// binary format `rvtrace ingress dump` reads.
    #[arg(long, value_name = "FILE")]
    ingress: Option<PathBuf>,
    /// Write the ingress stream in its text form to FILE.
    #[arg(long, value_name = "FILE")]
    ingress_text: Option<PathBuf>,
    /// Width of the ingress `itype` field: 4 classifies calls, returns and jumps
    /// (needed for implicit-return modes); 3 is the basic E-Trace set.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(3..=4))]
    itype_width: u8,
    /// Stop after N retired instructions (exit status 124).
    #[arg(long, value_name = "N")]
    max_insns: Option<u64>,
    /// The hart's ISA, overriding what the ELF says, e.g. rv64gc, rv32imac, rv64imafdc_zba_zbb.
    /// Default: rv64gc or rv32gc by the ELF class, plus Zba and Zbb (QEMU's `virt` default CPU).
    #[arg(long, value_name = "ISA")]
    isa: Option<String>,
    /// Semihosting command line (default: the ELF path exactly as given).
    #[arg(long, value_name = "TEXT")]
    cmdline: Option<String>,
    /// Print a summary on stderr at the end: instructions, traps, speed.
    #[arg(long)]
    stats: bool,
    /// Write a tandem-verification trace (Bluespec's draft trace protocol) to FILE: one group per
    /// retired instruction or trap with all its side effects, after state-initialization groups
    /// for the program load. Its parameters (XLEN, FLEN, MLEN) and the elements left out go to
    /// the sidecar FILE.meta. `rvtrace tandem check FILE --elf ELF` verifies it.
    #[arg(long, value_name = "FILE")]
    tandem: Option<PathBuf>,
    /// Leave elements out of the tandem trace (a partial trace, protocol chapter 3.2), comma
    /// separated: pc, insn, gpr, fpr, csr, priv, mem, eaddr, init, mtime. FILE.meta lists them.
    #[arg(long, value_name = "LIST", requires = "tandem")]
    tandem_omit: Option<String>,
    /// MLEN of the tandem trace in bits (default: 64 on RV64, 32 on RV32).
    #[arg(long, value_name = "BITS", requires = "tandem")]
    tandem_mlen: Option<u32>,
    /// Let the program run shell commands on this machine through semihosting `SYS_SYSTEM`
    /// (as QEMU does). Without it such a call fails with EPERM and a warning.
    #[arg(long)]
    allow_host_commands: bool,
}

/// Arguments of `rvtrace example`.
#[derive(clap::Args)]
pub struct ExampleArgs {
    /// Which bundled program to run (default: the first one). `--list` shows them.
    name: Option<String>,
    /// List the bundled programs.
    #[arg(long)]
    list: bool,
}

/// Bundled example programs (built from `programs/src` by `programs/build.sh`); the first is the default.
const EXAMPLES: &[(&str, &str, &[u8])] = &[
    (
        "recurse-rv64gc",
        "recursion: Ackermann, Fibonacci, Hanoi, N-queens (RV64GC)",
        include_bytes!("../../../programs/elf/recurse-rv64gc.elf"),
    ),
    (
        "traps-rv64gc",
        "ecall from M, S and U; breakpoints; illegal instructions; vectored mtvec (RV64GC)",
        include_bytes!("../../../programs/elf/traps-rv64gc.elf"),
    ),
    (
        "timer-rv64gc",
        "CLINT timer and software interrupts, wfi, interrupts taken in U-mode (RV64GC)",
        include_bytes!("../../../programs/elf/timer-rv64gc.elf"),
    ),
    (
        "float-rv64gc",
        "F and D arithmetic, libm, fflags (RV64GC)",
        include_bytes!("../../../programs/elf/float-rv64gc.elf"),
    ),
    (
        "switch-rv32imac",
        "a bytecode interpreter whose switch is a jump table (RV32IMAC)",
        include_bytes!("../../../programs/elf/switch-rv32imac.elf"),
    ),
];

/// Writes `0x<hex>\n` per retired instruction, fast.
struct PcWriter {
    out: BufWriter<File>,
    buf: Vec<u8>,
    err: Option<std::io::Error>,
}

impl PcWriter {
    fn create(path: &Path) -> Result<PcWriter, String> {
        let f =
            File::create(path).map_err(|e| format!("{}: cannot create: {e}", path.display()))?;
        Ok(PcWriter {
            out: BufWriter::with_capacity(1 << 16, f),
            buf: Vec::with_capacity(1 << 16),
            err: None,
        })
    }

    fn flush_buf(&mut self) {
        if let Err(e) = self.out.write_all(&self.buf) {
            self.err.get_or_insert(e);
        }
        self.buf.clear();
    }

    fn finish(mut self) -> std::io::Result<()> {
        self.flush_buf();
        if let Some(e) = self.err {
            return Err(e);
        }
        self.out.flush()
    }
}

impl Observer for PcWriter {
    #[inline]
    fn retire(&mut self, ev: &Retired) {
        rvtrace_flow::push_hex_line(&mut self.buf, ev.pc);
        if self.buf.len() > (1 << 16) - 32 {
            self.flush_buf();
        }
    }
}

/// Counts for `--stats` and the example summary.
#[derive(Default)]
struct Stats {
    retired: u64,
    taken_branches: u64,
    not_taken_branches: u64,
    calls: u64,
    returns: u64,
    exceptions: u64,
    interrupts: u64,
    semihosting_calls: u64,
}

impl Observer for Stats {
    #[inline]
    fn retire(&mut self, ev: &Retired) {
        self.retired += 1;
        match ev.class {
            CfClass::Branch => {
                if ev.next_pc != ev.pc.wrapping_add(ev.len as u64) {
                    self.taken_branches += 1
                } else {
                    self.not_taken_branches += 1
                }
            }
            c if c.is_call() => self.calls += 1,
            c if c.is_return() => self.returns += 1,
            _ => {}
        }
        if ev.trap.is_some() {
            self.exceptions += 1;
        }
        if ev.semihosting {
            self.semihosting_calls += 1;
        }
    }
    fn trap(&mut self, ev: &TrapInfo) {
        if ev.interrupt {
            self.interrupts += 1;
        } else {
            self.exceptions += 1;
        }
    }
}

/// Where ingress records go.
struct IngressSink {
    bin: Option<IngressWriter<BufWriter<File>>>,
    text: Option<rvtrace_ingress::text::TextWriter<BufWriter<File>>>,
    err: Option<String>,
}

impl IngressSink {
    fn write(&mut self, r: &Record) {
        if let Some(w) = &mut self.bin {
            if let Err(e) = w.write(r) {
                self.err
                    .get_or_insert(format!("writing the ingress file: {e}"));
            }
        }
        if let Some(w) = &mut self.text {
            if let Err(e) = w.write(r) {
                self.err
                    .get_or_insert(format!("writing the ingress text file: {e}"));
            }
        }
    }
}

/// Optional observers compose with `Option`.
struct Maybe<O>(Option<O>);

impl<O: Observer> Observer for Maybe<O> {
    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        if let Some(o) = &mut self.0 {
            o.retire(ev)
        }
    }
    #[inline(always)]
    fn trap(&mut self, ev: &TrapInfo) {
        if let Some(o) = &mut self.0 {
            o.trap(ev)
        }
    }
}

fn load_image(paths: &[&Path]) -> Result<Image, String> {
    let mut image = Image::new();
    for p in paths {
        image.load_file(p).map_err(|e| e.to_string())?;
    }
    Ok(image)
}

fn make_hart(
    image: &Image,
    isa: Option<(Xlen, Extensions)>,
    cmdline: &str,
) -> Result<Hart, String> {
    let xlen = image.files().first().map(|f| f.xlen).unwrap_or(Xlen::Rv64);
    let mut cfg = Config::virt(xlen, cmdline);
    if let Some((x, ext)) = isa {
        cfg.xlen = x;
        cfg.ext = ext;
    }
    let mut hart = Hart::new(&cfg);
    hart.load(image).map_err(|e| e.to_string())?;
    Ok(hart)
}

/// `rvtrace run`.
pub fn run(args: &RunArgs) -> CmdResult {
    let isa = args.isa.as_deref().map(parse_isa).transpose()?;
    let mut paths: Vec<&Path> = vec![&args.elf];
    paths.extend(args.extra.iter().map(|p| p.as_path()));
    let image = load_image(&paths)?;
    let cmdline = args
        .cmdline
        .clone()
        .unwrap_or_else(|| args.elf.to_string_lossy().into_owned());
    let mut hart = make_hart(&image, isa, &cmdline)?;
    hart.allow_host_commands(args.allow_host_commands);

    let mut pcs = Maybe(match &args.pcs {
        Some(p) => Some(PcWriter::create(p)?),
        None => None,
    });
    let mut sink = IngressSink {
        bin: None,
        text: None,
        err: None,
    };
    if let Some(p) = &args.ingress {
        let f = File::create(p).map_err(|e| format!("{}: cannot create: {e}", p.display()))?;
        let mut header = IngressHeader::new(
            hart.xlen,
            args.itype_width,
            format!("rvtrace run {}", args.elf.display()),
        );
        // The hart model drives `time` (mtime) and `sijump`; it has no context signal.
        header.has_time = true;
        header.has_sijump = true;
        sink.bin = Some(
            IngressWriter::new(BufWriter::new(f), &header)
                .map_err(|e| format!("{}: {e}", p.display()))?,
        );
    }
    if let Some(p) = &args.ingress_text {
        let f = File::create(p).map_err(|e| format!("{}: cannot create: {e}", p.display()))?;
        sink.text = Some(rvtrace_ingress::text::TextWriter::new(BufWriter::new(f)));
    }
    let want_ingress = sink.bin.is_some() || sink.text.is_some();
    let mut tandem = rvtrace_tandem::producer::MaybeProducer(match &args.tandem {
        Some(p) => {
            let omit = rvtrace_tandem::Elements::parse(args.tandem_omit.as_deref().unwrap_or(""))?;
            Some(rvtrace_tandem::producer::create_file_producer(
                p,
                &hart,
                &image,
                omit,
                args.tandem_mlen,
            )?)
        }
        None => None,
    });
    let isa_cfg = IsaConfig {
        xlen: hart.xlen,
        zcmp: false,
        zcmt: false,
    };
    let mut stats = Stats::default();
    let start = Instant::now();
    let stop;
    {
        let mut recorder =
            Maybe(want_ingress.then(|| {
                IngressRecorder::new(isa_cfg, args.itype_width, |r: &Record| sink.write(r))
            }));
        let mut obs = (
            &mut pcs,
            (
                &mut recorder,
                (Maybe(args.stats.then_some(&mut stats)), &mut tandem),
            ),
        );
        stop = hart.run(&mut obs, args.max_insns.unwrap_or(u64::MAX));
        if let Some(r) = &mut recorder.0 {
            r.finish();
        }
    }
    let elapsed = start.elapsed();
    hart.flush_output();
    if let Some(w) = pcs.0 {
        w.finish().map_err(|e| {
            format!(
                "writing {}: {e}",
                args.pcs
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            )
        })?;
    }
    if let Some(e) = sink.err {
        return Err(e.into());
    }
    if let Some(t) = tandem.0 {
        t.finish().map_err(|e| {
            format!(
                "writing {}: {e}",
                args.tandem
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            )
        })?;
    }
    if let Some(w) = sink.bin {
        w.finish()
            .map_err(|e| format!("writing the ingress file: {e}"))?;
    }
    if let Some(w) = sink.text {
        w.finish()
            .map_err(|e| format!("writing the ingress text file: {e}"))?;
    }
    if args.stats {
        print_stats(&stats, hart.instret, elapsed, &stop);
    }
    Ok(exit_code(&stop, hart.instret))
}

fn exit_code(stop: &Stop, instret: u64) -> ExitCode {
    match stop {
        Stop::Exit(code) => ExitCode::from((*code & 0xff) as u8),
        Stop::InsnLimit => {
            say!("rvtrace: stopped after {instret} instructions (--max-insns)");
            ExitCode::from(EXIT_INSN_LIMIT)
        }
        Stop::Error(msg) => {
            say!("rvtrace: error: the program stopped: {msg}");
            ExitCode::from(EXIT_TOOL_ERROR)
        }
        // No observer of `run` asks to stop.
        Stop::Requested => ExitCode::from(EXIT_TOOL_ERROR),
    }
}

fn print_stats(s: &Stats, instret: u64, elapsed: std::time::Duration, stop: &Stop) {
    let secs = elapsed.as_secs_f64().max(1e-9);
    say!(
        "rvtrace: {stop:?} after {instret} instructions in {:.3} s ({:.1} MIPS)",
        secs,
        instret as f64 / secs / 1e6
    );
    say!(
        "rvtrace: branches {} taken / {} not taken, {} calls, {} returns, {} exceptions, {} interrupts, {} semihosting calls",
        s.taken_branches, s.not_taken_branches, s.calls, s.returns, s.exceptions, s.interrupts, s.semihosting_calls
    );
}

/// Instructions retired per function, for the example summary ("where the time went").
struct Profile<'a> {
    image: &'a Image,
    counts: std::collections::HashMap<u64, u64>,
}

impl Observer for Profile<'_> {
    #[inline]
    fn retire(&mut self, ev: &Retired) {
        *self.counts.entry(ev.pc).or_default() += 1;
    }
}

impl Profile<'_> {
    fn top(&self, n: usize) -> Vec<(String, u64)> {
        let mut per_fn: std::collections::HashMap<String, u64> = Default::default();
        for (&pc, &c) in &self.counts {
            let name = self
                .image
                .symbol_at(pc)
                .map(|(s, _)| s.name.clone())
                .unwrap_or_else(|| format!("{pc:#x}"));
            *per_fn.entry(name).or_default() += c;
        }
        let mut v: Vec<_> = per_fn.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

/// `rvtrace example`.
pub fn example(args: &ExampleArgs) -> CmdResult {
    if args.list {
        for (name, what, _) in EXAMPLES {
            println!("{name:16} {what}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (name, what, bytes) = match &args.name {
        None => *EXAMPLES
            .first()
            .ok_or("no bundled examples in this build")?,
        Some(n) => *EXAMPLES.iter().find(|(e, _, _)| e == n).ok_or_else(|| {
            format!("no bundled example {n:?}; `rvtrace example --list` shows them")
        })?,
    };
    let mut image = Image::new();
    image.load_bytes(name, bytes).map_err(|e| e.to_string())?;
    let mut hart = make_hart(&image, None, name)?;
    println!("rvtrace: running the bundled example {name}: {what}");
    println!("rvtrace: --- program output ---");
    let _ = std::io::stdout().flush();
    let mut stats = Stats::default();
    let mut profile = Profile {
        image: &image,
        counts: Default::default(),
    };
    let start = Instant::now();
    let stop = hart.run(&mut (&mut stats, &mut profile), 100_000_000);
    let elapsed = start.elapsed();
    hart.flush_output();
    println!("rvtrace: --- end of program output ---");
    let secs = elapsed.as_secs_f64().max(1e-9);
    println!(
        "rvtrace: {} retired {} instructions in {:.1} ms ({:.1} MIPS) and stopped: {}",
        name,
        hart.instret,
        secs * 1e3,
        hart.instret as f64 / secs / 1e6,
        match &stop {
            Stop::Exit(c) => format!("exit status {c}"),
            Stop::InsnLimit => "instruction limit".into(),
            Stop::Error(m) => m.clone(),
            Stop::Requested => "stopped on request".into(),
        }
    );
    println!(
        "rvtrace: branches {} taken / {} not taken; {} calls, {} returns; {} exceptions, {} interrupts; {} semihosting calls",
        stats.taken_branches, stats.not_taken_branches, stats.calls, stats.returns, stats.exceptions, stats.interrupts, stats.semihosting_calls
    );
    println!("rvtrace: where the time went (instructions per function):");
    for (f, c) in profile.top(8) {
        println!(
            "  {:>10}  {:5.1}%  {}",
            c,
            100.0 * c as f64 / hart.instret.max(1) as f64,
            f
        );
    }
    println!("rvtrace: try `rvtrace run <your.elf> --pcs pcs.txt --ingress trace.ingress --stats`");
    Ok(exit_code(&stop, hart.instret))
}

/// `rvtrace ingress dump`.
pub fn ingress_dump(path: &Path) -> CmdResult {
    let f = File::open(path).map_err(|e| format!("{}: cannot open: {e}", path.display()))?;
    let stdout = std::io::stdout();
    let out = BufWriter::new(stdout.lock());
    match rvtrace_ingress::dump(std::io::BufReader::new(f), out) {
        Ok(_) => Ok(ExitCode::SUCCESS),
        // A closed pipe (`| head`) is not an error worth reporting.
        Err(rvtrace_ingress::IngressError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(format!("{}: {e}", path.display()).into()),
    }
}
