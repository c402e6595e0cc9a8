//! `rvtrace run`, `rvtrace example` and `rvtrace ingress dump`.

use crate::isa_arg::{parse_isa, Isa};
use crate::progress::Progress;
use crate::report::{self, CmdResult, Failure, Output};
use crate::report::{EXIT_INSN_LIMIT, EXIT_INTERRUPTED, EXIT_MISMATCH, EXIT_TOOL_ERROR};
use crate::snapshot::{write_code_snapshot, Executed};
use rvtrace_image::Image;
use rvtrace_ingress::{IngressHeader, IngressWriter, Record, WriterSink};
use rvtrace_isa::{CfClass, IsaConfig, Xlen};
use rvtrace_sim::ingress::IngressRecorder;
use rvtrace_sim::{Hart, Observer, Retired, RetiredRun, Stop, TrapInfo};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// `--max-insns` when a run writes trace (`--pcs`, `--ingress`, `--ingress-text`, `--tandem`) and
/// none is given, so that a program that never exits cannot fill the disk: 100 M instructions are
/// about 120 MB of binary ingress, 1.1 GB of `--pcs`.
pub const DEFAULT_TRACE_MAX_INSNS: u64 = 100_000_000;

/// Instructions run between two looks at Ctrl-C (a few milliseconds; nothing per instruction).
const INTERRUPT_CHECK: u64 = 1 << 20;

/// Set by the SIGINT handler.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Arguments of `rvtrace run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The program: a RISC-V ELF32 or ELF64 file. Its path, as given, is also the semihosting
    /// command line (as QEMU's `-kernel PATH` makes it), so picolibc's `argv[0]` is this path.
    elf: PathBuf,
    /// Load a further ELF file into memory (repeatable). Execution starts at the first file's entry.
    #[arg(long = "load", value_name = "ELF")]
    extra: Vec<PathBuf>,
    /// Write every retired instruction address to FILE (`-`: stdout), one per line as 0x + hex
    /// (the NexRv PCONLY format). Faulting instructions are not listed; ecall/ebreak are.
    /// When a trace output goes to stdout, the program's own console output goes to stderr.
    #[arg(long, value_name = "FILE")]
    pcs: Option<PathBuf>,
    /// At the end, write the code the run executed as an ELF core file a decoder takes with
    /// `--image FILE`: the reset ROM, the loaded program and firmware ELF files' ranges and
    /// every RAM page the hart ran code from through its block cache, as memory holds them
    /// then (code patched at run time included), at their physical addresses, and again at the
    /// virtual addresses the page table in `satp` at the end maps them to for the supervisor
    /// (X set, U clear: a kernel's code, as kcore gives it); and every instruction retired in
    /// user mode as it retired, as code of user mode in the context the trace reports it in
    /// (with --context asid, the ASID: processes at the same addresses stay apart). Firmware,
    /// a kernel and its processes decode whole with it.
    #[arg(long, value_name = "FILE")]
    code_snapshot: Option<PathBuf>,
    /// Write the ingress stream (one record per retired instruction or trap) to FILE (`-`:
    /// stdout), in the binary format `rvtrace ingress dump` reads.
    #[arg(long, value_name = "FILE")]
    ingress: Option<PathBuf>,
    /// Write the ingress stream in its text form to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    ingress_text: Option<PathBuf>,
    /// Write one ingress record per block of instructions instead of one per instruction
    /// (with --ingress or --ingress-text): the E-Trace ingress port's multiple retirement, as a
    /// hart that retires a whole block per cycle reports it. A block is a contiguous run of
    /// instructions ending with the first that has a non-zero itype (branch, jump, call,
    /// return, ecall/ebreak) or does not fall through, before a trap, and before a change of
    /// privilege or context. iretire counts the block's half-words; ilastsize, itype, cause and
    /// sijump are those of its last instruction, and time is the time of its last instruction.
    /// The header says multi-retire. Fewer records, faster to write; the encoders read it, and
    /// the program (ELF) tells the instructions inside a block.
    #[arg(long)]
    ingress_blocks: bool,
    /// Drive the ingress `context` field (and `ctype`): `asid` = `satp.ASID` (bits 15:0; VMID
    /// bits 29:16 are 0), reported precisely (`ctype` 2) by the first instruction that retires
    /// after the `satp` write that changed it. Default: no context (`context` and `ctype` 0,
    /// and the ingress header says they are not driven).
    #[arg(long, value_enum, value_name = "SOURCE")]
    context: Option<ContextArg>,
    /// Width of the ingress `itype` field: 4 classifies calls, returns and jumps
    /// (needed for implicit-return modes); 3 is the basic E-Trace set.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(3..=4))]
    itype_width: u8,
    /// Stop after N retired instructions (exit status 124); 0: no limit. Default: no limit, but
    /// 100000000 when the run writes trace (--pcs, --ingress, --ingress-text, --tandem), so
    /// that a program that never exits cannot fill the disk; in --sbi and --bios modes
    /// without trace 10000000000, room for a Linux kernel to boot (Debian's takes 1.2 G
    /// to user space), so that a payload that hangs still ends.
    #[arg(long, value_name = "N")]
    max_insns: Option<u64>,
    /// Start the trace outputs (--pcs, --ingress, --ingress-text, --stats, --brstack) at WHEN:
    /// after N retired instructions (decimal; of all harts together with --harts), or when a
    /// hart first reaches an address (0xADDR) or a symbol (NAME or NAME+OFFSET, from the loaded
    /// ELF files and --symbols), whose instruction is the first traced. What runs before goes
    /// without the outputs (at full speed for a count), so a window late in a long run (a
    /// kernel's boot) is traced alone. --max-insns still counts from the start. Not with
    /// --tandem (its trace starts from the hart's first state).
    #[arg(long, value_name = "WHEN")]
    trace_from: Option<String>,
    /// End the run (and the trace outputs) when a hart reaches an address (0xADDR) or a symbol
    /// (NAME or NAME+OFFSET), before that instruction retires: exit status 0, with a note. (An
    /// instruction count is --max-insns.) The run checks every instruction's address then.
    #[arg(long, value_name = "WHERE")]
    trace_to: Option<String>,
    /// Symbols for --trace-from and --trace-to beside the loaded ELF files': a System.map or
    /// /proc/kallsyms text (`ADDR TYPE NAME` lines), FILE@OFFSET adding a KASLR offset (e.g. a
    /// flat kernel Image with its System.map). Repeatable.
    #[arg(long, value_name = "FILE[@OFFSET]")]
    symbols: Vec<String>,
    /// The hart's ISA, overriding what the ELF says, e.g. rv64gc, rv32imac, rv64imafdc_zba_zbb.
    /// Default: rv64gc or rv32gc by the ELF class, plus Zba, Zbb, Zbc and Zbs (QEMU's `virt` default CPU),
    /// Sscofpmf, Smcntrpmf and Sstc; a given string has these only when it names them
    /// (`_sscofpmf_smcntrpmf_sstc`).
    #[arg(long, value_name = "ISA")]
    isa: Option<String>,
    /// Semihosting command line (default: the ELF path exactly as given).
    #[arg(long, value_name = "TEXT")]
    cmdline: Option<String>,
    /// Print a summary on stderr at the end: how the program stopped, instructions, branches,
    /// traps, speed, and where the time went (instructions per function).
    #[arg(long)]
    stats: bool,
    /// Write a tandem-verification trace (Bluespec's draft trace protocol) to FILE: one group per
    /// retired instruction or trap with all its side effects, after state-initialization groups
    /// for the program load. Its parameters (XLEN, FLEN, MLEN) and the elements left out go to
    /// the sidecar FILE.meta. `rvtrace tandem check FILE --elf ELF` verifies it. With `-` the
    /// trace goes to stdout and the sidecar's contents to stderr (give them to `tandem check`
    /// as --xlen/--flen/--mlen/--absent).
    #[arg(long, value_name = "FILE")]
    tandem: Option<PathBuf>,
    /// Leave elements out of the tandem trace (a partial trace, protocol chapter 3.2), comma
    /// separated: pc, insn, gpr, fpr, csr, priv, mem, eaddr, init, mtime. FILE.meta lists them.
    #[arg(long, value_name = "LIST", requires = "tandem")]
    tandem_omit: Option<String>,
    /// MLEN of the tandem trace in bits (default: 64 on RV64, 32 on RV32).
    #[arg(long, value_name = "BITS", requires = "tandem")]
    tandem_mlen: Option<u32>,
    /// Programmable performance counters of the hart (`mhpmcounter3..3+K-1`; the rest read as
    /// zero), 0..29. Default 16, as QEMU's `virt`.
    #[arg(long, value_name = "K", default_value_t = rvtrace_sim::counters::DEFAULT_HPM_COUNTERS,
          value_parser = clap::value_parser!(u8).range(0..=29))]
    hpm_counters: u8,
    /// Print, at the end, a `perf stat`-like table on stderr of every event the hart model
    /// counts (count and rate per 1000 instructions), for the whole run and per privilege mode.
    /// Events are the SBI PMU ones a program can also select in `mhpmevent` (see the sim crate's
    /// README). Costs speed: every instruction is classified.
    #[arg(long)]
    counters: bool,
    /// Branch predictor of the micro-architecture model behind the BRANCH_MISSES and BPU events:
    /// `gshare:ENTRIES:HISTORY_BITS`, `bimodal:ENTRIES`, or `none` (static not-taken), each
    /// optionally followed by `,btb:ENTRIES` and `,ras:DEPTH`; `off` for no predictor.
    /// Default `gshare:4096:12,btb:512,ras:16`. Consulted only while a counter counts an event
    /// that needs it (or with --counters / --timing).
    #[arg(long, value_name = "SPEC")]
    bpred: Option<String>,
    /// An L1 cache of the model (repeatable): `l1d:SIZE:WAYS:LINE` or `l1i:SIZE:WAYS:LINE`
    /// (e.g. `l1d:32k:8:64`; LRU, write-allocate, write-back), `l1d:off`, `l1i:off`, `off`.
    /// Default: no caches (their miss events count nothing).
    #[arg(long = "cache", value_name = "SPEC")]
    caches: Vec<String>,
    /// The model's timing: `on` (mcycle = instructions + stall cycles: mispredict 8, redirect 1,
    /// L1I miss 20, L1D miss 20, mul 3, div 20), overrides such as
    /// `on,mispredict=10,l1d-miss=40`, or `off` (default: one cycle per instruction).
    #[arg(long, value_name = "SPEC")]
    timing: Option<String>,
    /// Give the machine SiFive's ITC stimulus port (a trace encoder's register block: stimulus
    /// registers at ADDR + 0x80 upward, itcTraceEnable at ADDR + 0x60; crates/sim/src/itc.rs)
    /// at ADDR (hex; 0x1000000 is free on QEMU's virt, which has no such device). The stores of
    /// enabled channels go to INGRESS.itc beside the --ingress file, which `encode ntrace
    /// --dialect sifive` turns into DataAcquisition messages.
    #[arg(long, value_name = "ADDR", value_parser = parse_hex_addr)]
    itc: Option<u64>,
    /// Let the program run shell commands on this machine through semihosting `SYS_SYSTEM`
    /// (as QEMU does). Without it such a call fails with EPERM and a warning.
    #[arg(long)]
    allow_host_commands: bool,
    /// Boot ELF as an S-mode payload under rvtrace's built-in SBI: loaded at its linked address
    /// (conventionally 0x80200000 on RV64, 0x80400000 on RV32), or, for a flat Linux kernel
    /// Image (recognized by its header), at 0x80200000 as behind OpenSBI; entered in S-mode at its entry
    /// with a0 = hart id 0 and a1 = the device tree (`rvtrace dtb`) where QEMU puts it. No
    /// semihosting. The run ends when the payload calls SBI SRST (shutdown); a trap into
    /// M-mode, or reaching --max-insns, is an error (exit status 125).
    #[arg(long, conflicts_with_all = ["bios", "extra", "tandem"])]
    sbi: bool,
    /// Boot the firmware FW (an ELF such as OpenSBI's fw_jump.elf or fw_dynamic.elf) in M-mode
    /// from the reset ROM exactly as QEMU `-bios FW -kernel ELF` does (a0 = hart id, a1 = the
    /// device tree, a2 = the fw_dynamic information, whose next_addr is ELF's entry), with ELF
    /// as its S-mode payload loaded at its linked address (a Linux Image: where QEMU's `-kernel`
    /// puts it, the first 2 MiB boundary after the firmware). No semihosting; the run ends when
    /// the firmware powers off (test finisher); reaching --max-insns is an error (exit status 125).
    #[arg(long, value_name = "FW", conflicts_with_all = ["extra", "tandem"])]
    bios: Option<PathBuf>,
    /// In --sbi and --bios modes, also service semihosting calls (bare-metal runs always do; the
    /// boot modes do not unless asked). --cmdline and --allow-host-commands apply to it.
    #[arg(long)]
    semihosting: bool,
    /// Model Control Transfer Records (Smctr/Ssctr) of this version: `1.0` (ratified, as QEMU 10
    /// and Linux) or `0.1.4` (the 2023 draft: `mctrcontrol` 0x381, DEPTH and CLR in it, WRAP,
    /// ETEN, no `sctrclr`). The hart then also has Smstateen (`mstateen0` gates S-mode access
    /// to CTR and to `siselect`/`sireg*`; reset 0, so M-mode code must open it; --sbi does)
    /// and, with 1.0, `sctrclr`. Without it the CTR CSRs do not exist (illegal instruction), as
    /// on QEMU's default CPU. See the ctr crate's README.
    #[arg(long, value_name = "VERSION")]
    ctr: Option<crate::boot::CtrVersion>,
    /// `/chosen/bootargs` of the device tree in --sbi and --bios modes (the kernel command line).
    #[arg(long, value_name = "TEXT")]
    bootargs: Option<String>,
    /// In --sbi and --bios modes, load FILE (an initramfs) where QEMU's `-initrd` puts it: above
    /// the payload's entry by half of RAM, at most 128 MiB; the device tree gives its bounds
    /// (`/chosen/linux,initrd-start`, `linux,initrd-end`).
    #[arg(long, value_name = "FILE")]
    initrd: Option<PathBuf>,
    /// RAM size in --sbi and --bios modes, as QEMU's `-m`: a number of MiB, or with a suffix
    /// K, M, G (binary units; 16M to 64G). The device tree, its address (the end of RAM, below
    /// 3 GiB) and the initrd's place follow it.
    #[arg(long, value_name = "SIZE", default_value = "128M", value_parser = parse_memory)]
    memory: u64,
    /// The seed of the 32 bytes of `/chosen/rng-seed` in --sbi and --bios modes (the kernel's
    /// first entropy): the same seed gives the same bytes, so a boot is reproducible.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// In --sbi and --bios modes, write the device tree the payload would get to FILE (`-`:
    /// stdout) and stop without running, as QEMU's `-machine dumpdtb=FILE` (`rvtrace dtb`
    /// writes the machine's without a payload).
    #[arg(long, value_name = "FILE")]
    dump_dtb: Option<PathBuf>,
    /// Harts of the machine in --sbi and --bios modes, 1 to 8 (QEMU's `-smp N`): they share
    /// memory and run in turn, a fixed number of instructions each (deterministic: the same
    /// run gives the same result). Under --bios every hart starts at the reset ROM; under
    /// --sbi hart 0 enters the payload and the others wait for SBI HSM hart_start. With more
    /// than one, each hart's --pcs, --ingress and --ingress-text go to their own file: put
    /// {hart} in the path (it becomes the hart's number); --max-insns counts all harts'
    /// instructions.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=rvtrace_sim::smp::MAX_HARTS as i64))]
    harts: u32,
    /// With --harts above 1: instructions each hart runs per turn (the harts take turns in
    /// order; the clock advances by N per round). Shorter turns interleave the harts more
    /// finely (another hart's store, IPI or released lock is seen sooner) and run slower.
    #[arg(long, value_name = "N", default_value_t = rvtrace_sim::machine::QUANTUM,
          value_parser = clap::value_parser!(u64).range(1..))]
    quantum: u64,
    #[command(flatten)]
    brstack: crate::brstack::BrstackRunArgs,
}

impl RunArgs {
    /// With one hart, `{hart}` in the per-hart output paths is that hart's number, 0 (with
    /// several, [`run_harts`] fills it in for each).
    pub fn one_hart_paths(&mut self) {
        if self.harts == 1 {
            for path in [&mut self.pcs, &mut self.ingress, &mut self.ingress_text]
                .into_iter()
                .flatten()
            {
                *path = crate::harts::path(path, 0);
            }
        }
    }

    /// The boot mode the options ask for.
    fn mode(&self) -> crate::boot::Mode<'_> {
        match (&self.bios, self.sbi) {
            (Some(fw), _) => crate::boot::Mode::Bios(fw),
            (None, true) => crate::boot::Mode::Sbi,
            (None, false) => crate::boot::Mode::Bare,
        }
    }
}

/// `--max-insns` in the boot modes when none is given: a payload that never shuts down stops
/// here with an error, while a Linux kernel has room to boot (Debian's kernel reaches user
/// space and powers off in about 1.2 G instructions; OpenSBI 1.5.1 boots in 300 000). A limit
/// rather than none: scripts and tests that boot something broken still end.
pub const DEFAULT_BOOT_MAX_INSNS: u64 = 10_000_000_000;

/// `--memory SIZE`: MiB, or a number with a suffix K, M or G (binary units, as QEMU's `-m`).
fn parse_memory(s: &str) -> Result<u64, String> {
    let (num, unit) = match s.trim().char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.trim().split_at(i),
        None => (s.trim(), "M"),
    };
    let shift = match unit
        .to_ascii_uppercase()
        .trim_end_matches('B')
        .trim_end_matches('I')
    {
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => {
            return Err(format!(
                "{s:?}: a size is a number of MiB or ends in K, M or G"
            ))
        }
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: a size is a number of MiB or ends in K, M or G"))?;
    let bytes = n
        .checked_mul(1 << shift)
        .filter(|b| (16 << 20..=64 << 30).contains(b))
        .ok_or_else(|| format!("{s:?}: RAM is 16M to 64G"))?;
    if bytes % (1 << 12) != 0 {
        return Err(format!("{s:?}: RAM is a whole number of 4 KiB pages"));
    }
    Ok(bytes)
}

/// Arguments of `rvtrace example`.
#[derive(clap::Args)]
pub struct ExampleArgs {
    /// Which bundled program to run (default: the first one). `--list` shows them.
    name: Option<String>,
    /// List the bundled programs.
    #[arg(long)]
    list: bool,
    /// Write the bundled programs' ELF files (NAME.elf) into DIR (created if need be), to try
    /// the other commands on.
    #[arg(long, value_name = "DIR", conflicts_with = "list")]
    write: Option<PathBuf>,
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

/// Bundled S-mode examples, run under the built-in SBI (`run --sbi`) with the
/// micro-architecture model's caches and timing on, so that every event means something.
const SBI_EXAMPLES: &[(&str, &str, &[u8])] = &[(
    "pmu-stat",
    "a perf-stat-like S-mode program: measures a workload through the SBI PMU extension (RV64GC, \
     built-in SBI, 32 KiB L1I/L1D, timing on)",
    include_bytes!("../../../programs/sbi/elf/pmu_stat-rv64gc.elf"),
)];

/// Writes `0x<hex>\n` per retired instruction, fast.
struct PcWriter {
    out: Output,
    buf: Vec<u8>,
    err: Option<std::io::Error>,
}

impl PcWriter {
    fn new(out: Output) -> PcWriter {
        PcWriter {
            out,
            buf: Vec::with_capacity(1 << 16),
            err: None,
        }
    }

    fn flush_buf(&mut self) {
        if self.err.is_none() {
            if let Err(e) = self.out.write_all(&self.buf) {
                self.err = Some(e);
            }
        }
        self.buf.clear();
    }

    fn finish(mut self) -> Result<(), Failure> {
        self.flush_buf();
        if let Some(e) = self.err.take() {
            return Err(self.out.fail(e));
        }
        self.out.finish()
    }

    #[inline(always)]
    fn push(&mut self, pc: u64) {
        rvtrace_flow::push_hex_line(&mut self.buf, pc);
        if self.buf.len() > (1 << 16) - 32 {
            self.flush_buf();
        }
    }
}

impl Observer for PcWriter {
    // Only the pcs, in order: a block's run gives them as well.
    const RETIRE_RUNS: bool = true;
    #[inline]
    fn retire(&mut self, ev: &Retired) {
        self.push(ev.pc);
    }
    #[inline]
    fn retire_run(&mut self, run: &impl RetiredRun) {
        let n = run.len();
        for s in run.steps(0, n - 1) {
            self.push(s.pc);
        }
        self.push(run.last_step().pc);
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
    serviced_calls: u64,
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
        if ev.serviced.is_some() {
            self.serviced_calls += 1;
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

impl Stats {
    /// The counts line of `--stats` and `example`.
    fn line(&self) -> String {
        format!(
            "branches {} taken / {} not taken; {} calls, {} returns; {} exceptions, {} interrupts; {} serviced calls (semihosting)",
            self.taken_branches,
            self.not_taken_branches,
            self.calls,
            self.returns,
            self.exceptions,
            self.interrupts,
            self.serviced_calls
        )
    }
}

/// Instructions retired per function ("where the time went"), for `run --stats` and `example`.
struct Profile {
    counts: std::collections::HashMap<u64, u64, PcHash>,
}

/// A cheap hasher for instruction addresses (the profile hashes one per retired instruction).
#[derive(Default, Clone, Copy)]
struct PcHash;

impl std::hash::BuildHasher for PcHash {
    type Hasher = PcHasher;
    fn build_hasher(&self) -> PcHasher {
        PcHasher(0)
    }
}

struct PcHasher(u64);

impl std::hash::Hasher for PcHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ v >> 29).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Observer for Profile {
    #[inline]
    fn retire(&mut self, ev: &Retired) {
        *self.counts.entry(ev.pc).or_default() += 1;
    }
}

/// `--stats`'s counts and profile together, taking the hart's pre-decoded blocks as runs: a
/// run of a block (named by [`rvtrace_sim::RetiredRun::block_id`]) is counted once per block
/// and length, with how often its last instruction went on elsewhere (the only step that
/// differs between such runs), and added up into the counts and profile later
/// ([`RunStats::flush`]). So `--stats` costs a hash-map update per block run rather than two
/// per instruction, and the hart keeps its fused block loop. (A direct-mapped table by block id
/// instead was slower: runs of one block cut at different lengths, by interrupt checks, evict
/// each other.)
///
/// The table is kept small ([`RUN_STATS_KEYS`]): an id is never used again once its block is
/// decoded anew, so a table that only grew held every block the run ever decoded (a Linux
/// boot: 512 MB, and its lookups missed the host's caches).
struct RunStats {
    stats: Stats,
    profile: Profile,
    /// Per block id and run length (`id << 6 | len`: runs with ids are shorter than 64).
    runs: std::collections::HashMap<u64, BlockRuns, PcHash>,
    /// The steps of the runs in `runs`, one after the other ([`BlockRuns::at`]).
    steps: Vec<rvtrace_sim::RunStep>,
}

/// Keys in [`RunStats::runs`] before it is added up and emptied (a Linux boot's kernel runs
/// about 20 k block runs often; callgrind and wall time chose the size).
const RUN_STATS_KEYS: usize = 1 << 15;

/// The runs of one block and length.
struct BlockRuns {
    /// Where its steps start in [`RunStats::steps`] (as many as the key's length; the last's
    /// `taken` is that of the first run).
    at: usize,
    /// How many runs.
    runs: u64,
    /// How many of them the last instruction went on elsewhere.
    last_taken: u64,
}

impl RunStats {
    fn new() -> RunStats {
        RunStats {
            stats: Stats::default(),
            profile: Profile::new(),
            runs: std::collections::HashMap::with_capacity_and_hasher(RUN_STATS_KEYS, PcHash),
            steps: Vec::new(),
        }
    }

    /// An instruction retired `n` times, going on as `s.taken` says.
    fn count_step(&mut self, s: &rvtrace_sim::RunStep, n: u64) {
        let st = &mut self.stats;
        st.retired += n;
        match s.class {
            CfClass::Branch if s.taken => st.taken_branches += n,
            CfClass::Branch => st.not_taken_branches += n,
            c if c.is_call() => st.calls += n,
            c if c.is_return() => st.returns += n,
            _ => {}
        }
        *self.profile.counts.entry(s.pc).or_default() += n;
    }

    /// Adds up the block runs into the counts and profile and empties the table (at the end:
    /// the counts and profile are then whole).
    #[cold]
    #[inline(never)]
    fn flush(&mut self) {
        let mut runs = std::mem::take(&mut self.runs);
        let steps = std::mem::take(&mut self.steps);
        for (key, b) in runs.drain() {
            let len = (key & 63) as usize;
            let Some((last, before)) = steps[b.at..b.at + len].split_last() else {
                continue;
            };
            for s in before {
                self.count_step(s, b.runs);
            }
            let taken = rvtrace_sim::RunStep {
                taken: true,
                ..*last
            };
            self.count_step(&taken, b.last_taken);
            let on = rvtrace_sim::RunStep {
                taken: false,
                ..*last
            };
            self.count_step(&on, b.runs - b.last_taken);
        }
        // (Both keep their capacity.)
        self.runs = runs;
        self.steps = steps;
        self.steps.clear();
    }

    /// The first run of a block and length (`key`), `last` its last step.
    #[inline(never)]
    fn new_key(
        &mut self,
        run: &impl rvtrace_sim::RetiredRun,
        key: u64,
        last: rvtrace_sim::RunStep,
    ) {
        if self.runs.len() >= RUN_STATS_KEYS {
            self.flush();
        }
        let at = self.steps.len();
        self.steps.extend(run.steps(0, run.len() - 1));
        self.steps.push(last);
        self.runs.insert(
            key,
            BlockRuns {
                at,
                runs: 1,
                last_taken: last.taken as u64,
            },
        );
    }
}

impl Observer for RunStats {
    const RETIRE_RUNS: bool = true;
    #[inline]
    fn retire(&mut self, ev: &Retired) {
        self.stats.retire(ev);
        self.profile.retire(ev);
    }
    #[inline]
    fn retire_run(&mut self, run: &impl rvtrace_sim::RetiredRun) {
        let n = run.len();
        let last = run.get(n - 1);
        match run.block_id() {
            Some(id) if last.trap.is_none() && last.serviced.is_none() => {
                let step = rvtrace_sim::RunStep::of(&last);
                let key = id << 6 | n as u64;
                match self.runs.get_mut(&key) {
                    Some(b) => {
                        b.runs += 1;
                        b.last_taken += step.taken as u64;
                    }
                    None => self.new_key(run, key, step),
                }
            }
            _ => {
                for i in 0..n - 1 {
                    self.count_step(&run.step(i), 1);
                }
                self.retire(&last);
            }
        }
    }
    fn trap(&mut self, ev: &TrapInfo) {
        self.stats.trap(ev);
    }
}

impl Profile {
    fn new() -> Profile {
        Profile {
            counts: std::collections::HashMap::with_hasher(PcHash),
        }
    }

    /// The `n` functions that retired the most instructions, with their counts.
    fn top(&self, image: &Image, n: usize) -> Vec<(String, u64)> {
        let mut per_fn: std::collections::HashMap<String, u64> = Default::default();
        for (&pc, &c) in &self.counts {
            // Code without symbols (a raw firmware image, the reset ROM) is one entry per file,
            // not one per address.
            let name = match image.symbol_at(pc) {
                Some((s, _)) => s.name.clone(),
                None => match image.segment_at(pc) {
                    Some(seg) => format!("[{}: no symbol]", image.files()[seg.file_index].path),
                    None => "[code without symbols]".to_string(),
                },
            };
            *per_fn.entry(name).or_default() += c;
        }
        let mut v: Vec<_> = per_fn.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }

    /// The profile as lines: a heading and one line per function.
    fn lines(&self, image: &Image, total: u64) -> Vec<String> {
        let mut v = vec!["where the time went (instructions per function):".to_string()];
        for (f, c) in self.top(image, 8) {
            v.push(format!(
                "  {:>10}  {:5.1}%  {}",
                c,
                100.0 * c as f64 / total.max(1) as f64,
                f
            ));
        }
        v
    }
}

/// Where ingress records go.
struct IngressSink {
    bin: Option<IngressWriter<Output>>,
    text: Option<rvtrace_ingress::text::TextWriter<Output>>,
    err: Option<std::io::Error>,
}

impl IngressSink {
    /// The sink of `--ingress` `bin` and `--ingress-text` `text` (either may be absent), their
    /// headers written.
    fn create(
        bin: Option<&Path>,
        text: Option<&Path>,
        header: &IngressHeader,
    ) -> Result<IngressSink, Failure> {
        let mut sink = IngressSink {
            bin: None,
            text: None,
            err: None,
        };
        if let Some(p) = bin {
            let out = Output::create(p)?;
            let name = out.name().to_string();
            sink.bin = Some(
                IngressWriter::new(out, header)
                    .map_err(|e| Failure::io(format_args!("writing {name}"), e))?,
            );
        }
        if let Some(p) = text {
            let out = Output::create(p)?;
            let name = out.name().to_string();
            let mut w = rvtrace_ingress::text::TextWriter::new(out);
            w.header(header)
                .map_err(|e| Failure::io(format_args!("writing {name}"), e))?;
            sink.text = Some(w);
        }
        Ok(sink)
    }

    /// Finish both files (the binary one gets its end block); every error goes to `keep`, a
    /// write error during the run named after the file it hit (`bin`, else `text`).
    fn finish(
        mut self,
        bin: Option<&Path>,
        text: Option<&Path>,
        keep: &mut impl FnMut(Result<(), Failure>),
    ) {
        let (bin, text) = (
            bin.map(report::name).unwrap_or_default(),
            text.map(report::name).unwrap_or_default(),
        );
        let ingress_err = self.err.take();
        if let Some(w) = self.bin {
            keep(match ingress_err {
                Some(e) => Err(Failure::io(format_args!("writing {bin}"), e)),
                None => w
                    .finish()
                    .map_err(|e| Failure::io(format_args!("writing {bin}"), e))
                    .and_then(|o| o.finish()),
            });
        } else if let Some(e) = ingress_err {
            keep(Err(Failure::io(format_args!("writing {text}"), e)));
        }
        if let Some(w) = self.text {
            keep(
                w.finish()
                    .map_err(|e| Failure::io(format_args!("writing {text}"), e))
                    .and_then(|o| o.finish()),
            );
        }
    }

    #[inline(always)]
    fn write(&mut self, r: &Record) {
        if self.err.is_some() {
            return;
        }
        if let Some(w) = &mut self.bin {
            if let Err(e) = w.write(r) {
                self.err = Some(e);
            }
        }
        if let Some(w) = &mut self.text {
            if let Err(e) = w.write(r) {
                self.err = Some(e);
            }
        }
    }
}

impl rvtrace_ingress::RecordSink for &mut IngressSink {
    #[inline(always)]
    fn record(&mut self, r: &Record) {
        self.write(r)
    }

    /// The common case: the binary writer encodes it without comparing.
    #[inline(always)]
    fn predicted(&mut self, r: &Record) {
        if self.err.is_some() {
            return;
        }
        if let Some(w) = &mut self.bin {
            if let Err(e) = w.write_predicted(r) {
                self.err = Some(e);
            }
        }
        if let Some(w) = &mut self.text {
            if let Err(e) = w.write(r) {
                self.err = Some(e);
            }
        }
    }
}

/// The ingress header of a run of harts of width `xlen`.
fn ingress_header(args: &RunArgs, xlen: Xlen) -> IngressHeader {
    let mut header = IngressHeader::new(
        xlen,
        args.itype_width,
        format!("rvtrace run {}", args.elf.display()),
    );
    // The hart model drives `time` (mtime) and `sijump`; `context` with --context.
    header.has_time = true;
    header.has_sijump = true;
    header.has_context = args.context.is_some();
    header.multi_retire = args.ingress_blocks;
    header
}

/// The ingress recorder of a run (`--context` from the hart's `satp`; `--ingress-blocks`).
fn recorder<S: rvtrace_ingress::RecordSink>(
    isa: IsaConfig,
    itype_width: u8,
    (context, blocks): (Option<ContextArg>, bool),
    satp: u64,
    sink: S,
) -> IngressRecorder<S> {
    let rec = IngressRecorder::new(isa, itype_width, sink).block_records(blocks);
    match context {
        Some(ContextArg::Asid) => rec.context_from_asid(satp),
        None => rec,
    }
}

/// `--context`: where the ingress `context` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ContextArg {
    /// `satp.ASID`.
    Asid,
}

/// Which observers a run has, when it has at most one of the common ones.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Only {
    Nothing,
    Ingress,
    Tandem,
    /// `--stats` alone: its block-run observer ([`RunStats`]).
    Stats,
    /// Observers that all take block runs (`--pcs`, `--stats`, the ingress stream, the code
    /// snapshot's), side by side: the hart runs blocks with fused operations for them.
    Runs,
    /// Any other combination (with the tandem trace or `--trace-to`, which see each
    /// instruction): the optional observers side by side.
    Mixed,
}

/// Optional observers compose with `Option`.
struct Maybe<O>(Option<O>);

impl<O: Observer> Observer for Maybe<O> {
    const RETIRE_RUNS: bool = O::RETIRE_RUNS;
    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        if let Some(o) = &mut self.0 {
            o.retire(ev)
        }
    }
    #[inline(always)]
    fn retire_run(&mut self, run: &impl RetiredRun) {
        if let Some(o) = &mut self.0 {
            o.retire_run(run)
        }
    }
    #[inline(always)]
    fn trap(&mut self, ev: &TrapInfo) {
        if let Some(o) = &mut self.0 {
            o.trap(ev)
        }
    }
    #[inline(always)]
    fn csr_write(&mut self, csr: u16, value: u64) {
        if let Some(o) = &mut self.0 {
            o.csr_write(csr, value)
        }
    }
    #[inline(always)]
    fn stop_requested(&mut self) -> bool {
        self.0.as_mut().is_some_and(|o| o.stop_requested())
    }
}

/// The files of a run as the hart's memory: placed by physical address, so `--load` programs
/// linked at the same virtual addresses (processes of their own address spaces) load together.
fn load_image(paths: &[&Path]) -> Result<Image, String> {
    let mut image = Image::new();
    for p in paths {
        image.load_file_physical(p).map_err(|e| e.to_string())?;
    }
    Ok(image)
}

fn make_hart(
    image: &Image,
    isa: Option<Isa>,
    hpm_counters: u8,
    uarch: rvtrace_sim::uarch::UarchConfig,
    cmdline: &str,
    ctr: Option<crate::boot::CtrVersion>,
) -> Result<Hart, String> {
    let xlen = image.files().first().map(|f| f.xlen).unwrap_or(Xlen::Rv64);
    let mut cfg = crate::boot::config(xlen, isa, hpm_counters);
    cfg.uarch = uarch;
    if let Some(v) = ctr {
        v.configure(&mut cfg);
    }
    let mut hart = Hart::new(&cfg);
    hart.load(image).map_err(|e| e.to_string())?;
    rvtrace_semihost::attach(&mut hart, image, cmdline);
    if let Some(v) = ctr {
        v.attach(&mut hart);
    }
    Ok(hart)
}

/// How a run ended, for people ("exit status 0", "the instruction limit").
fn stop_text(stop: &Stop, interrupted: bool) -> String {
    if interrupted {
        return "interrupted (Ctrl-C)".into();
    }
    match stop {
        Stop::Exit(c) => format!("exit status {c}"),
        Stop::InsnLimit => "the instruction limit (--max-insns)".into(),
        Stop::Error(m) => format!("an error: {m}"),
        Stop::Requested => "a stop request".into(),
    }
}

/// Runs the hart to its stop in slices of [`INTERRUPT_CHECK`] instructions, looking at Ctrl-C
/// between them (the hart's loop stays as fast as without it). `max` 0 is no limit. Returns the
/// stop and whether Ctrl-C ended the run.
fn run_interruptible<O: Observer>(
    hart: &mut Hart,
    obs: &mut O,
    max: u64,
    sampler: Option<&mut crate::brstack::Sampler>,
) -> (Stop, bool) {
    let first = hart.instret;
    let end = if max == 0 {
        u64::MAX
    } else {
        first.saturating_add(max)
    };
    // The program's console output goes to stdout: a bar on the same terminal would break its
    // lines, so progress is drawn only when stdout goes elsewhere.
    let progress = if std::io::stdout().is_terminal() {
        Progress::none()
    } else {
        Progress::count("run", "instructions", (max != 0).then_some(max))
    };
    let r = run_slices(hart, obs, end, &progress, first, sampler);
    progress.finish();
    r
}

fn run_slices<O: Observer>(
    hart: &mut Hart,
    obs: &mut O,
    end: u64,
    progress: &Progress,
    first: u64,
    mut sampler: Option<&mut crate::brstack::Sampler>,
) -> (Stop, bool) {
    // `--ctr-sample`: slices end at the sample points (and, sampling at overflows, the sampler
    // stops the hart right after each counter-overflow interrupt).
    loop {
        progress.set(hart.instret - first);
        let mut n = (end - hart.instret.min(end)).min(INTERRUPT_CHECK);
        if n == 0 {
            return (Stop::InsnLimit, false);
        }
        if let Some(s) = &sampler {
            n = n.min(s.budget(hart.instret));
        }
        let stop = hart.run(obs, n);
        if let Some(s) = &mut sampler {
            if s.after(hart, &stop) {
                continue;
            }
        }
        if stop != Stop::InsnLimit {
            return (stop, false);
        }
        if INTERRUPTED.load(Ordering::Relaxed) {
            return (Stop::Requested, true);
        }
    }
}

/// Catch Ctrl-C: the first one asks the run to stop and finish its files; a second one ends the
/// process at once.
fn catch_ctrl_c() {
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(EXIT_INTERRUPTED as i32);
        }
    });
}

/// The instruction limit of a run (0: none): `--max-insns` as given, else
/// [`DEFAULT_TRACE_MAX_INSNS`] when the run writes trace, else none.
fn effective_max_insns(given: Option<u64>, writes_trace: bool) -> u64 {
    match given {
        Some(n) => n,
        None if writes_trace => DEFAULT_TRACE_MAX_INSNS,
        None => 0,
    }
}

/// `rvtrace run`.
pub fn run(args: &RunArgs) -> CmdResult {
    let isa = args
        .isa
        .as_deref()
        .map(parse_isa)
        .transpose()
        .map_err(crate::report::Failure::Usage)?;
    let mode = args.mode();
    let booting = !matches!(mode, crate::boot::Mode::Bare);
    if args.bootargs.is_some() && !booting {
        return Err(Failure::Usage(
            "--bootargs needs --sbi or --bios (it goes into the device tree)".into(),
        ));
    }
    for (given, opt) in [
        (args.initrd.is_some(), "--initrd"),
        (
            args.memory != rvtrace_sim::bus::DEFAULT_RAM_SIZE,
            "--memory",
        ),
        (args.seed != 0, "--seed"),
        (args.dump_dtb.is_some(), "--dump-dtb"),
        (args.harts != 1, "--harts"),
    ] {
        if given && !booting {
            return Err(Failure::Usage(format!(
                "{opt} needs --sbi or --bios (it describes the machine a payload boots on)"
            )));
        }
    }
    if args.harts > 1 {
        check_harts(args)?;
    }
    if args.semihosting && !booting {
        return Err(Failure::Usage(
            "--semihosting is for --sbi and --bios (bare-metal runs always have it)".into(),
        ));
    }
    if booting && !args.semihosting {
        for (given, opt) in [
            (args.cmdline.is_some(), "--cmdline"),
            (args.allow_host_commands, "--allow-host-commands"),
        ] {
            if given {
                return Err(Failure::Usage(format!(
                    "{opt} needs --semihosting in --sbi and --bios modes"
                )));
            }
        }
    }
    let mut inputs: Vec<&Path> = vec![&args.elf];
    inputs.extend(args.extra.iter().map(|p| p.as_path()));
    inputs.extend(args.bios.as_deref());
    inputs.extend(args.initrd.as_deref());
    // Refuse an output that would overwrite an input (or another output) before anything is
    // created; the tandem sidecar counts as an output.
    let meta = args
        .tandem
        .as_ref()
        .filter(|p| !report::is_std(p))
        .map(|p| rvtrace_tandem::meta::sidecar_path(p));
    let mut outputs: Vec<(&str, &Path)> = Vec::new();
    for (opt, p) in [
        ("--pcs", &args.pcs),
        ("--ingress", &args.ingress),
        ("--ingress-text", &args.ingress_text),
        ("--tandem", &args.tandem),
        ("--tandem (its FILE.meta)", &meta),
        ("--dump-dtb", &args.dump_dtb),
    ] {
        if let Some(p) = p {
            outputs.push((opt, p.as_path()));
        }
    }
    outputs.extend(crate::brstack::run_outputs(&args.brstack));
    crate::brstack::check_run(&args.brstack)?;
    if args.context.is_some() && args.ingress.is_none() && args.ingress_text.is_none() {
        return Err(Failure::Usage(
            "--context drives the ingress context field: give --ingress or --ingress-text".into(),
        ));
    }
    if args.ingress_blocks && args.ingress.is_none() && args.ingress_text.is_none() {
        return Err(Failure::Usage(
            "--ingress-blocks says how the ingress stream is written: give --ingress or --ingress-text"
                .into(),
        ));
    }
    report::distinct(&inputs, &outputs)?;
    let to_stdout = outputs.iter().any(|(_, p)| report::is_std(p));
    let max_insns = match (booting, args.max_insns) {
        (true, None) if outputs.is_empty() => DEFAULT_BOOT_MAX_INSNS,
        _ => effective_max_insns(args.max_insns, !outputs.is_empty() || booting),
    };
    if let Some(RunPoint::Count(_)) = args.trace_to.as_deref().and_then(point_count) {
        return Err(Failure::Usage(
            "--trace-to names an address or a symbol; an instruction count is --max-insns".into(),
        ));
    }
    if !args.symbols.is_empty() && args.trace_from.is_none() && args.trace_to.is_none() {
        return Err(Failure::Usage(
            "--symbols names the points of --trace-from and --trace-to: give one".into(),
        ));
    }
    let from_count = args.trace_from.as_deref().and_then(point_count);
    let from_start = from_count == Some(RunPoint::Count(0));
    if args.trace_from.is_some() && !from_start && args.tandem.is_some() {
        return Err(Failure::Usage(
            "--trace-from with --tandem: the tandem trace starts from the hart's first state"
                .into(),
        ));
    }
    if let Some(RunPoint::Count(n)) = from_count.filter(|p| *p != RunPoint::Count(0)) {
        if max_insns != 0 && n >= max_insns {
            return Err(Failure::Usage(format!(
                "--trace-from {n} is not below the run's limit, --max-insns {max_insns}"
            )));
        }
    }

    let cmdline = args
        .cmdline
        .clone()
        .unwrap_or_else(|| args.elf.to_string_lossy().into_owned());
    let mut uarch = rvtrace_sim::uarch::UarchConfig::default();
    let usage = |opt: &str, e: rvtrace_sim::uarch::SpecError| Failure::Usage(format!("{opt}: {e}"));
    if let Some(b) = &args.bpred {
        uarch.set_bpred(b).map_err(|e| usage("--bpred", e))?;
    }
    for c in &args.caches {
        uarch.set_cache(c).map_err(|e| usage("--cache", e))?;
    }
    if let Some(t) = &args.timing {
        uarch.set_timing(t).map_err(|e| usage("--timing", e))?;
    }
    let (mut hart, image) = if booting {
        let mut cfg = crate::boot::config(Xlen::Rv64, isa, args.hpm_counters);
        cfg.uarch = uarch;
        cfg.ram_size = args.memory;
        let (machine, image) = crate::boot::make_machine(
            &mode,
            &args.elf,
            cfg,
            isa.is_some(),
            &crate::boot::BootOptions {
                bootargs: args.bootargs.as_deref(),
                initrd: args.initrd.as_deref(),
                seed: args.seed,
                dump_dtb: args.dump_dtb.as_deref(),
                harts: args.harts as usize,
            },
            args.semihosting.then_some(cmdline.as_str()),
            args.ctr,
        )?;
        if args.dump_dtb.is_some() {
            return Ok(ExitCode::SUCCESS);
        }
        if machine.len() > 1 {
            return run_harts(args, machine, &image, max_insns);
        }
        let hart = machine.into_harts().pop().expect("a machine has a hart");
        (hart, image)
    } else {
        let image = load_image(&inputs)?;
        let hart = make_hart(&image, isa, args.hpm_counters, uarch, &cmdline, args.ctr)?;
        (hart, image)
    };
    if args.dump_dtb.is_some() {
        return Ok(ExitCode::SUCCESS);
    }
    match mode {
        crate::boot::Mode::Sbi => hart.attach(Box::<crate::boot::MTrapGuard>::default()),
        crate::boot::Mode::Bios(_) => hart.attach(Box::<crate::boot::SrstWatch>::default()),
        crate::boot::Mode::Bare => {}
    }
    hart.counters.set_count_all(args.counters);
    if let Some(base) = args.itc {
        hart.bus.itc = Some(rvtrace_sim::itc::Itc::new(base));
    }
    rvtrace_semihost::allow_host_commands(&mut hart, args.allow_host_commands);
    if to_stdout {
        hart.program_output_to_stderr();
        if let Some(sbi) = hart.extension_mut::<rvtrace_sbi::Sbi>() {
            sbi.set_console(Box::new(std::io::stderr()));
        }
    }

    let mut sampler = crate::brstack::Sampler::new(&args.brstack, &mut hart, &image)?;
    let mut pcs = Maybe(match &args.pcs {
        Some(p) => Some(PcWriter::new(Output::create(p)?)),
        None => None,
    });
    let header = ingress_header(args, hart.xlen);
    let mut sink = IngressSink::create(
        args.ingress.as_deref(),
        args.ingress_text.as_deref(),
        &header,
    )?;
    let want_ingress = sink.bin.is_some() || sink.text.is_some();
    // --trace-from: what runs before it goes without the outputs.
    let window = Window::resolve(args, &image)?;
    let mut ended_before = window.skip_hart(&mut hart, max_insns);
    let mut to_watch = Maybe(window.to.map(PcWatch::new));
    let satp = hart.csr_read(rvtrace_sim::csr::num::SATP).unwrap_or(0);
    let by_asid = args.context == Some(ContextArg::Asid);
    let mut executed = Maybe(
        args.code_snapshot
            .as_ref()
            .map(|_| Executed::new(hart.xlen, by_asid, satp)),
    );
    let mut tandem = rvtrace_tandem::producer::MaybeProducer(match &args.tandem {
        Some(p) => {
            let absent = rvtrace_tandem::Elements::parse(args.tandem_omit.as_deref().unwrap_or(""))
                .map_err(|e| e.to_string())?;
            let mut params = rvtrace_tandem::producer::default_params(&hart);
            if let Some(m) = args.tandem_mlen {
                params.mlen = m;
            }
            params.validate().map_err(|e| e.to_string())?;
            let m = rvtrace_tandem::meta::Meta::new(params, absent);
            if report::is_std(p) {
                say!("rvtrace: note: --tandem -: no sidecar; its contents are:");
                for l in m.to_text().lines() {
                    say!("rvtrace: note:   {l}");
                }
            } else {
                m.write(p).map_err(|e| e.to_string())?;
            }
            Some(rvtrace_tandem::producer::Producer::new(
                &hart,
                &image,
                rvtrace_tandem::producer::ProducerOptions { params, absent },
                Output::create(p)?,
            ))
        }
        None => None,
    });
    let isa_cfg = IsaConfig::new(hart.xlen);
    let mut stats = RunStats::new();
    catch_ctrl_c();
    let start = Instant::now();
    let (stop, interrupted);
    {
        // The common runs (nothing, the binary ingress stream, the tandem trace) run with their
        // one observer, without the per-event checks of the optional ones.
        let plain = pcs.0.is_none() && !args.stats && to_watch.0.is_none();
        let alone = plain && executed.0.is_none();
        let only = match (alone, want_ingress, tandem.0.is_some()) {
            (true, false, false) => Only::Nothing,
            // The ingress stream, with the snapshot's observer or without.
            (_, true, false) if plain => Only::Ingress,
            (true, false, true) => Only::Tandem,
            _ if pcs.0.is_none()
                && args.stats
                && !want_ingress
                && tandem.0.is_none()
                && to_watch.0.is_none()
                && executed.0.is_none() =>
            {
                Only::Stats
            }
            _ if tandem.0.is_none() && to_watch.0.is_none() => Only::Runs,
            _ => Only::Mixed,
        };
        let sampler = sampler.as_mut();
        let (width, context) = (args.itype_width, (args.context, args.ingress_blocks));
        // The window after --trace-from: what is left of --max-insns.
        let max_insns = if max_insns == 0 {
            0
        } else {
            max_insns.saturating_sub(hart.instret)
        };
        (stop, interrupted) = match (only, &mut sink, &mut tandem.0) {
            _ if ended_before.is_some() => ended_before.take().unwrap_or((Stop::Requested, false)),
            (Only::Nothing, _, _) => run_interruptible(&mut hart, &mut (), max_insns, sampler),
            (
                Only::Ingress,
                IngressSink {
                    bin: Some(w),
                    text: None,
                    err,
                },
                _,
            ) => {
                let mut r = recorder(isa_cfg, width, context, satp, WriterSink { w, err });
                let ended = match &mut executed.0 {
                    Some(e) => run_interruptible(&mut hart, &mut (&mut r, e), max_insns, sampler),
                    None => run_interruptible(&mut hart, &mut r, max_insns, sampler),
                };
                r.finish();
                ended
            }
            (Only::Tandem, _, Some(t)) => run_interruptible(&mut hart, t, max_insns, sampler),
            (Only::Stats, _, _) => run_interruptible(&mut hart, &mut stats, max_insns, sampler),
            (Only::Runs, _, _) => {
                let mut recorder =
                    Maybe(want_ingress.then(|| recorder(isa_cfg, width, context, satp, &mut sink)));
                let mut obs = (
                    &mut pcs,
                    (
                        &mut recorder,
                        (Maybe(args.stats.then_some(&mut stats)), &mut executed),
                    ),
                );
                let ended = run_interruptible(&mut hart, &mut obs, max_insns, sampler);
                if let Some(r) = &mut recorder.0 {
                    r.finish();
                }
                ended
            }
            _ => {
                let mut recorder =
                    Maybe(want_ingress.then(|| recorder(isa_cfg, width, context, satp, &mut sink)));
                let mut obs = (
                    &mut pcs,
                    (
                        &mut recorder,
                        (
                            Maybe(args.stats.then_some(&mut stats)),
                            (&mut tandem, (&mut to_watch, &mut executed)),
                        ),
                    ),
                );
                let ended = run_interruptible(&mut hart, &mut obs, max_insns, sampler);
                if let Some(r) = &mut recorder.0 {
                    r.finish();
                }
                ended
            }
        };
    }
    let elapsed = start.elapsed();
    hart.flush_output();
    // Finish every output, also after Ctrl-C: the ingress file gets its end block.
    let mut first_err: Option<Failure> = None;
    let mut keep = |r: Result<(), Failure>| {
        if let Err(e) = r {
            first_err.get_or_insert(e);
        }
    };
    if let Some(w) = pcs.0 {
        keep(w.finish());
    }
    if let Some(s) = sampler {
        keep(s.finish().map(|_| ()));
    }
    if let Some(p) = &args.code_snapshot {
        keep(write_code_snapshot(
            p,
            &mut hart,
            &image,
            executed.0.as_ref(),
        ));
    }
    if let (Some(itc), Some(ing)) = (&hart.bus.itc, &args.ingress) {
        if !report::is_std(ing) {
            let path = rvtrace_ingress::itc::sidecar_path(ing);
            keep(
                std::fs::write(&path, rvtrace_ingress::itc::to_text(&itc.writes))
                    .map_err(|e| Failure::io(format_args!("writing {}", path.display()), e)),
            );
        }
    }
    sink.finish(
        args.ingress.as_deref(),
        args.ingress_text.as_deref(),
        &mut keep,
    );
    if let Some(t) = tandem.0 {
        let name = args.tandem.as_deref().map(report::name).unwrap_or_default();
        // The sidecar, completed with how the run ended and the number of groups: the checker
        // tells a trace cut short from it.
        let meta = t.sidecar(interrupted || !matches!(stop, Stop::Exit(_)));
        keep(
            t.finish()
                .map_err(|e| Failure::io(format_args!("writing {name}"), e))
                .and_then(|o| o.finish()),
        );
        match args.tandem.as_deref() {
            Some(p) if report::is_std(p) => {
                // The sidecar's last lines, after those noted at the start.
                let text = meta.to_text();
                for l in text
                    .lines()
                    .filter(|l| l.starts_with("end =") || l.starts_with("groups ="))
                {
                    say!("rvtrace: note:   {l}");
                }
            }
            Some(p) => keep(meta.write(p).map_err(|e| Failure::Tool(e.to_string()))),
            None => {}
        }
    }
    if args.stats {
        let secs = elapsed.as_secs_f64().max(1e-9);
        say!(
            "rvtrace: stopped by {} after {} instructions in {:.3} s ({:.1} MIPS)",
            stop_text(&stop, interrupted),
            hart.instret,
            secs,
            hart.instret as f64 / secs / 1e6
        );
        stats.flush();
        say!("rvtrace: {}", stats.stats.line());
        for l in stats.profile.lines(&image, hart.instret) {
            say!("rvtrace: {l}");
        }
    }
    if args.counters {
        for l in crate::perf::table(&hart) {
            say!("rvtrace: {l}");
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    if interrupted {
        say!(
            "rvtrace: interrupted after {} instructions; the output files are complete up to there",
            hart.instret
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if let Some(m) = hart
        .extension_mut::<crate::boot::MTrapGuard>()
        .and_then(|g| g.message())
    {
        return Err(Failure::Tool(m));
    }
    if let Some(w) = to_watch.0.filter(|w| w.hit && stop == Stop::Requested) {
        window.say_reached(w.at, hart.instret);
        return Ok(ExitCode::SUCCESS);
    }
    if booting && stop == Stop::InsnLimit {
        return Err(Failure::Tool(format!(
            "the payload did not shut down (SBI SRST, or the firmware's power-off) within {} instructions{}",
            hart.instret,
            if args.max_insns.is_none() { " (the default --max-insns of --sbi/--bios)" } else { " (--max-insns)" }
        )));
    }
    if stop == Stop::Exit(0)
        && hart
            .extension_mut::<crate::boot::SrstWatch>()
            .is_some_and(|w| w.reason == Some(1))
    {
        // The status --sbi gives for the same call.
        say!(
            "rvtrace: the payload's SBI SRST call gave the reason \"system failure\": exit status 1 (the firmware's power-off does not carry the reason)"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(exit_code(&hart, &stop, max_insns, args.max_insns.is_none()))
}

/// The options a run of several harts refuses (usage errors): each names what a machine of
/// several harts does not have yet, and every per-hart output needs `{hart}` in its path.
fn check_harts(args: &RunArgs) -> Result<(), Failure> {
    let n = args.harts;
    for (given, opt) in [
        (args.counters, "--counters"),
        (args.semihosting, "--semihosting"),
        (
            !crate::brstack::run_outputs(&args.brstack).is_empty(),
            "the branch-stack options (--brstack, --ctr-sample)",
        ),
    ] {
        if given {
            return Err(Failure::Usage(format!(
                "{opt} is for one hart (--harts 1) for now"
            )));
        }
    }
    for (opt, p) in [
        ("--pcs", &args.pcs),
        ("--ingress", &args.ingress),
        ("--ingress-text", &args.ingress_text),
    ] {
        if let Some(p) = p
            .as_ref()
            .filter(|p| !p.to_string_lossy().contains(crate::harts::PLACEHOLDER))
        {
            return Err(Failure::Usage(format!(
                "--harts {n} writes one {opt} file per hart: put {} in its path ({} has none)",
                crate::harts::PLACEHOLDER,
                p.display()
            )));
        }
    }
    Ok(())
}

/// One hart's observers in a run of several harts: its PC list and its ingress recorder.
type HartObserver<'s> = (
    (Maybe<PcWriter>, Maybe<IngressRecorder<&'s mut IngressSink>>),
    (Maybe<PcWatch>, Maybe<Executed>),
);

/// A point of a run that --trace-from and --trace-to name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunPoint {
    /// After this many retired instructions (of all harts together).
    Count(u64),
    /// When a hart is about to run the instruction at this address.
    At(u64),
}

/// WHEN as an instruction count, when it is one (decimal digits).
fn point_count(when: &str) -> Option<RunPoint> {
    (!when.is_empty() && when.bytes().all(|b| b.is_ascii_digit()))
        .then(|| when.parse().ok().map(RunPoint::Count))
        .flatten()
}

/// The symbols of the `--symbols` files (`FILE[@OFFSET]`: System.map or kallsyms text, the
/// offset added to every address).
fn load_symbol_files(specs: &[String]) -> Result<Vec<rvtrace_image::Symbol>, Failure> {
    let mut all = Vec::new();
    for spec in specs {
        let (path, bias) = match spec.rsplit_once('@') {
            Some((p, at)) => (
                p,
                report::hex(at).ok_or_else(|| {
                    Failure::Usage(format!("--symbols {spec}: the offset is not a hex number"))
                })?,
            ),
            None => (spec.as_str(), 0),
        };
        let text = std::fs::read(path).map_err(|e| Failure::io(path, e))?;
        let symbols = rvtrace_image::system::parse_kallsyms(&String::from_utf8_lossy(&text), bias)
            .map_err(|e| Failure::Usage(format!("--symbols {path}: {e}")))?;
        all.extend(symbols);
    }
    Ok(all)
}

/// Resolves `opt`'s WHEN: a count, `0xADDR`, or `NAME[+OFFSET]` from the loaded files' symbols
/// (`image`), then the `--symbols` files' (`extra`).
fn resolve_point(
    opt: &str,
    when: &str,
    image: &Image,
    extra: &[rvtrace_image::Symbol],
) -> Result<RunPoint, Failure> {
    if let Some(p) = point_count(when) {
        return Ok(p);
    }
    let bad = |why: String| Failure::Usage(format!("{opt} {when}: {why}"));
    if when.starts_with("0x") || when.starts_with("0X") {
        return report::hex(when)
            .map(RunPoint::At)
            .ok_or_else(|| bad("not a hex address".into()));
    }
    let (name, offset) = match when.split_once('+') {
        Some((name, off)) => {
            let off = match off.strip_prefix("0x").or_else(|| off.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16).ok(),
                None => off.parse().ok(),
            };
            (
                name,
                off.ok_or_else(|| bad("the offset is not a number".into()))?,
            )
        }
        None => (when, 0),
    };
    let addr = image
        .symbol_by_name(name)
        .or_else(|| extra.iter().find(|s| s.name == name))
        .map(|s| s.addr);
    if let Some(a) = addr {
        return Ok(RunPoint::At(a.wrapping_add(offset)));
    }
    Err(bad(format!(
        "no symbol {name} in the loaded files{}",
        if extra.is_empty() {
            " (a kernel's System.map can be given with --symbols)"
        } else {
            " or the --symbols files"
        }
    )))
}

/// Watches for a hart about to run the instruction at `at` (--trace-from and --trace-to at an
/// address): the run stops there, before it retires. Checked after every instruction and trap.
#[derive(Clone, Copy, Debug)]
struct PcWatch {
    at: u64,
    hit: bool,
}

impl PcWatch {
    fn new(at: u64) -> PcWatch {
        PcWatch { at, hit: false }
    }
}

impl Observer for PcWatch {
    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        self.hit |= ev.next_pc == self.at;
    }
    #[inline(always)]
    fn trap(&mut self, ev: &TrapInfo) {
        self.hit |= ev.handler == self.at;
    }
    #[inline(always)]
    fn stop_requested(&mut self) -> bool {
        self.hit
    }
}

/// --trace-from and --trace-to, resolved.
struct Window<'a> {
    from: Option<RunPoint>,
    from_text: &'a str,
    /// --trace-to's address.
    to: Option<u64>,
    to_text: &'a str,
}

impl<'a> Window<'a> {
    fn resolve(args: &'a RunArgs, image: &Image) -> Result<Window<'a>, Failure> {
        let extra = load_symbol_files(&args.symbols)?;
        let point = |opt, when: &Option<String>| {
            when.as_deref()
                .map(|w| resolve_point(opt, w, image, &extra))
                .transpose()
        };
        let to = match point("--trace-to", &args.trace_to)? {
            Some(RunPoint::At(a)) => Some(a),
            _ => None,
        };
        Ok(Window {
            from: point("--trace-from", &args.trace_from)?,
            from_text: args.trace_from.as_deref().unwrap_or(""),
            to,
            to_text: args.trace_to.as_deref().unwrap_or(""),
        })
    }

    /// Runs `hart` without outputs up to --trace-from; `Some` with how the run ended when it
    /// ended before (and says so).
    fn skip_hart(&self, hart: &mut Hart, max_insns: u64) -> Option<(Stop, bool)> {
        let ended = match self.from? {
            RunPoint::Count(0) => return None,
            RunPoint::Count(n) => run_interruptible(hart, &mut (), n, None),
            RunPoint::At(a) if hart.pc == a => return None,
            RunPoint::At(a) => {
                let mut w = PcWatch::new(a);
                let r = run_interruptible(hart, &mut w, max_insns, None);
                if w.hit && r.0 == Stop::Requested {
                    return None;
                }
                r
            }
        };
        self.ended_before(ended, hart.instret)
    }

    /// The same for a machine of several harts (the first to reach an address starts the
    /// window of all).
    fn skip_machine(
        &self,
        machine: &mut rvtrace_sim::machine::Machine,
        max_insns: u64,
    ) -> Option<(Stop, bool)> {
        let n = machine.len();
        let ended = match self.from? {
            RunPoint::Count(0) => return None,
            RunPoint::Count(k) => run_machine(machine, &mut vec![(); n], k),
            RunPoint::At(a) if (0..n).any(|h| machine.hart(h).pc == a) => return None,
            RunPoint::At(a) => {
                let mut w = vec![PcWatch::new(a); n];
                let end = if max_insns == 0 { u64::MAX } else { max_insns };
                let r = run_machine(machine, &mut w, end);
                if w.iter().any(|w| w.hit) && r.0 == Stop::Requested {
                    return None;
                }
                r
            }
        };
        self.ended_before(ended, machine.instret())
    }

    fn ended_before(&self, ended: (Stop, bool), instret: u64) -> Option<(Stop, bool)> {
        let (stop, interrupted) = &ended;
        if *stop == Stop::InsnLimit && !interrupted && matches!(self.from, Some(RunPoint::Count(_)))
        {
            return None;
        }
        warn!(
            "the run ended after {instret} instructions, before --trace-from {}: the trace outputs are empty",
            self.from_text
        );
        Some(ended)
    }

    /// --trace-to reached: the note.
    fn say_reached(&self, at: u64, instret: u64) {
        say!(
            "rvtrace: stopped at --trace-to {} ({at:#x}) after {instret} instructions",
            self.to_text
        );
    }
}

/// Runs the machine until it stops or `end` instructions (all harts together) have retired, in
/// slices of [`INTERRUPT_CHECK`] instructions, looking at Ctrl-C between them: the stop, and
/// whether Ctrl-C ended it.
fn run_machine<O: Observer>(
    machine: &mut rvtrace_sim::machine::Machine,
    obs: &mut [O],
    end: u64,
) -> (Stop, bool) {
    loop {
        let slice = (end - machine.instret().min(end)).min(INTERRUPT_CHECK);
        if slice == 0 {
            return (Stop::InsnLimit, false);
        }
        let stop = machine.run(obs, slice);
        if stop != Stop::InsnLimit {
            return (stop, false);
        }
        if INTERRUPTED.load(Ordering::Relaxed) {
            return (Stop::Requested, true);
        }
    }
}

/// `rvtrace run --harts N` (N > 1): the machine booted, each hart's retired stream to its own
/// `--pcs`/`--ingress`/`--ingress-text` file (`{hart}` in the paths).
fn run_harts(
    args: &RunArgs,
    mut machine: rvtrace_sim::machine::Machine,
    image: &Image,
    max_insns: u64,
) -> CmdResult {
    let n = machine.len();
    machine.set_quantum(args.quantum);
    let sbi = args.sbi;
    for h in 0..n {
        machine.with_hart(h, |hart| {
            if sbi {
                hart.attach(Box::<crate::boot::MTrapGuard>::default());
            } else {
                hart.attach(Box::<crate::boot::SrstWatch>::default());
            }
        });
    }
    let xlen = machine.hart(0).xlen;
    let header = ingress_header(args, xlen);
    let path =
        |p: &Option<PathBuf>, h: usize| p.as_deref().map(|p| crate::harts::path(p, h as u16));
    let mut sinks = Vec::new();
    let mut pcs = Vec::new();
    for h in 0..n {
        let bin = path(&args.ingress, h);
        let text = path(&args.ingress_text, h);
        let sink = IngressSink::create(bin.as_deref(), text.as_deref(), &header)?;
        sinks.push(sink);
        pcs.push(match path(&args.pcs, h) {
            Some(p) => Some(PcWriter::new(Output::create(&p)?)),
            None => None,
        });
    }
    let want_ingress = args.ingress.is_some() || args.ingress_text.is_some();
    let isa_cfg = IsaConfig::new(xlen);
    catch_ctrl_c();
    // --trace-from: what runs before it goes without the outputs (the machine goes on with
    // the same interleaving, however its runs are sliced).
    let window = Window::resolve(args, image)?;
    let ended_before = window.skip_machine(&mut machine, max_insns);
    let satp: Vec<u64> = (0..n)
        .map(|h| machine.with_hart(h, |hart| hart.csr_read(rvtrace_sim::csr::num::SATP)))
        .map(|v| v.unwrap_or(0))
        .collect();
    let mut obs: Vec<HartObserver> = sinks
        .iter_mut()
        .zip(pcs)
        .zip(satp)
        .map(|((sink, pcs), satp)| {
            let context = (args.context, args.ingress_blocks);
            let rec =
                want_ingress.then(|| recorder(isa_cfg, args.itype_width, context, satp, sink));
            let user = args
                .code_snapshot
                .as_ref()
                .map(|_| Executed::new(xlen, args.context == Some(ContextArg::Asid), satp));
            (
                (Maybe(pcs), Maybe(rec)),
                (Maybe(window.to.map(PcWatch::new)), Maybe(user)),
            )
        })
        .collect();
    let start = Instant::now();
    let end = if max_insns == 0 { u64::MAX } else { max_insns };
    let quiet = obs.iter().all(|((pcs, rec), (to, user))| {
        pcs.0.is_none() && rec.0.is_none() && to.0.is_none() && user.0.is_none()
    });
    let (stop, interrupted) = match ended_before {
        Some(ended) => ended,
        // No outputs: the harts' quiet loop (no observer calls per instruction).
        None if quiet => run_machine(&mut machine, &mut vec![(); n], end),
        None => run_machine(&mut machine, &mut obs, end),
    };
    let elapsed = start.elapsed();
    let mut first_err: Option<Failure> = None;
    let mut keep = |r: Result<(), Failure>| {
        if let Err(e) = r {
            first_err.get_or_insert(e);
        }
    };
    let reached = obs.iter().find_map(|(_, (to, _))| to.0.filter(|w| w.hit));
    let mut executed: Option<Executed> = None;
    for ((pcs, rec), (_, user)) in obs {
        if let Some(mut r) = rec.0 {
            r.finish();
        }
        if let Some(w) = pcs.0 {
            keep(w.finish());
        }
        match (&mut executed, user.0) {
            (Some(all), Some(u)) => all.merge(u),
            (all, u) => *all = all.take().or(u),
        }
    }
    for (h, sink) in sinks.into_iter().enumerate() {
        let bin = path(&args.ingress, h);
        let text = path(&args.ingress_text, h);
        sink.finish(bin.as_deref(), text.as_deref(), &mut keep);
    }
    if let Some(p) = &args.code_snapshot {
        keep(machine.with_hart(0, |hart| {
            write_code_snapshot(p, hart, image, executed.as_ref())
        }));
    }
    let mut guard = None;
    let mut srst_failure = false;
    for h in 0..n {
        machine.with_hart(h, |hart| {
            hart.flush_output();
            if let Some(m) = hart
                .extension_mut::<crate::boot::MTrapGuard>()
                .and_then(|g| g.message())
            {
                guard.get_or_insert(format!("hart {h}: {m}"));
            }
            srst_failure |= hart
                .extension_mut::<crate::boot::SrstWatch>()
                .is_some_and(|w| w.reason == Some(1));
        });
    }
    let total = machine.instret();
    if args.stats {
        let secs = elapsed.as_secs_f64().max(1e-9);
        say!(
            "rvtrace: stopped by {} after {} instructions in {:.3} s ({:.1} MIPS)",
            stop_text(&stop, interrupted),
            total,
            secs,
            total as f64 / secs / 1e6
        );
        let per: Vec<String> = (0..n)
            .map(|h| format!("hart {h} {}", machine.hart(h).instret))
            .collect();
        say!("rvtrace: instructions per hart: {}", per.join(", "));
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    if interrupted {
        say!(
            "rvtrace: interrupted after {total} instructions; the output files are complete up to there"
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if let Some(m) = guard {
        return Err(Failure::Tool(m));
    }
    if let Some(w) = reached.filter(|_| stop == Stop::Requested) {
        window.say_reached(w.at, total);
        return Ok(ExitCode::SUCCESS);
    }
    match stop {
        Stop::InsnLimit => Err(Failure::Tool(format!(
            "the payload did not shut down (SBI SRST, or the firmware's power-off) within {total} instructions{}",
            if args.max_insns.is_none() { " (the default --max-insns of --sbi/--bios)" } else { " (--max-insns)" }
        ))),
        Stop::Exit(0) if srst_failure => {
            say!(
                "rvtrace: the payload's SBI SRST call gave the reason \"system failure\": exit status 1 (the firmware's power-off does not carry the reason)"
            );
            Ok(ExitCode::from(1))
        }
        Stop::Exit(code) => Ok(ExitCode::from((code & 0xff) as u8)),
        Stop::Error(msg) => {
            say!("rvtrace: error: the program stopped: {msg}");
            Ok(ExitCode::from(EXIT_TOOL_ERROR))
        }
        Stop::Requested => Ok(ExitCode::from(EXIT_TOOL_ERROR)),
    }
}

fn exit_code(hart: &Hart, stop: &Stop, max_insns: u64, default_limit: bool) -> ExitCode {
    match stop {
        Stop::Exit(code) => ExitCode::from((*code & 0xff) as u8),
        Stop::InsnLimit => {
            if default_limit {
                say!(
                    "rvtrace: stopped after {} instructions: the default --max-insns {max_insns} for runs that write trace (--max-insns 0: no limit)",
                    hart.instret
                );
            } else {
                say!(
                    "rvtrace: stopped after {} instructions (--max-insns)",
                    hart.instret
                );
            }
            ExitCode::from(EXIT_INSN_LIMIT)
        }
        Stop::Error(msg) => {
            say!("rvtrace: error: the program stopped: {msg}");
            if let Some(t) = hart.trap_loop() {
                // The instruction that keeps trapping, for people.
                if t.trap.cause == rvtrace_sim::cause::ILLEGAL {
                    say!(
                        "rvtrace: note: the instruction at {:#x} is {:#x}: {}",
                        t.trap.epc,
                        t.trap.tval,
                        rvtrace_isa::disasm::Disasm::new(t.trap.tval as u32, t.trap.epc, hart.xlen)
                    );
                }
            }
            ExitCode::from(EXIT_TOOL_ERROR)
        }
        // No observer of `run` asks to stop.
        Stop::Requested => ExitCode::from(EXIT_TOOL_ERROR),
    }
}

/// Write a line to stdout for `example`; a closed stdout ends the command quietly.
macro_rules! out {
    ($o:expr, $($t:tt)*) => {
        writeln!($o, $($t)*).map_err(|e| $o.fail(e))?
    };
}

/// `rvtrace example`.
pub fn example(args: &ExampleArgs) -> CmdResult {
    let mut o = Output::stdout();
    if args.list {
        for (name, what, _) in EXAMPLES.iter().chain(SBI_EXAMPLES) {
            out!(o, "{name:16} {what}");
        }
        o.finish()?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(dir) = &args.write {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Tool(format!("{}: cannot create: {e}", dir.display())))?;
        let chosen: Vec<_> = EXAMPLES
            .iter()
            .chain(SBI_EXAMPLES)
            .filter(|(n, _, _)| args.name.as_deref().is_none_or(|want| want == *n))
            .collect();
        if chosen.is_empty() {
            return Err(Failure::Usage(format!(
                "no bundled example {:?}; `rvtrace example --list` shows them",
                args.name.as_deref().unwrap_or_default()
            )));
        }
        for (name, what, bytes) in chosen {
            let path = dir.join(format!("{name}.elf"));
            std::fs::write(&path, bytes)
                .map_err(|e| Failure::Tool(format!("{}: cannot write: {e}", path.display())))?;
            out!(o, "{}  {what}", path.display());
        }
        o.finish()?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(&(name, what, bytes)) = SBI_EXAMPLES
        .iter()
        .find(|(e, _, _)| args.name.as_deref() == Some(*e))
    {
        return sbi_example(o, name, what, bytes);
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
    let mut hart = make_hart(
        &image,
        None,
        rvtrace_sim::counters::DEFAULT_HPM_COUNTERS,
        Default::default(),
        name,
        None,
    )?;
    out!(o, "rvtrace: running the bundled example {name}: {what}");
    out!(o, "rvtrace: --- program output ---");
    o.flush().map_err(|e| o.fail(e))?;
    let mut stats = RunStats::new();
    let start = Instant::now();
    let stop = hart.run(&mut stats, 100_000_000);
    stats.flush();
    let elapsed = start.elapsed();
    hart.flush_output();
    out!(o, "rvtrace: --- end of program output ---");
    let secs = elapsed.as_secs_f64().max(1e-9);
    out!(
        o,
        "rvtrace: {} retired {} instructions in {:.1} ms ({:.1} MIPS) and stopped by {}",
        name,
        hart.instret,
        secs * 1e3,
        hart.instret as f64 / secs / 1e6,
        stop_text(&stop, false)
    );
    out!(o, "rvtrace: {}", stats.stats.line());
    for l in stats.profile.lines(&image, hart.instret) {
        out!(o, "rvtrace: {l}");
    }
    out!(
        o,
        "rvtrace: try `rvtrace run <your.elf> --pcs pcs.txt --ingress trace.ingress --stats`"
    );
    o.finish()?;
    Ok(exit_code(&hart, &stop, 100_000_000, false))
}

/// `rvtrace example NAME` for an S-mode example: booted as `run --sbi` does.
fn sbi_example(mut o: Output, name: &str, what: &str, bytes: &[u8]) -> CmdResult {
    use rvtrace_sim::boot::Boot;
    let mut image = Image::new();
    image.load_bytes(name, bytes).map_err(|e| e.to_string())?;
    let mut cfg = crate::boot::config(
        Xlen::Rv64,
        None,
        rvtrace_sim::counters::DEFAULT_HPM_COUNTERS,
    );
    let spec = |e: rvtrace_sim::uarch::SpecError| e.to_string();
    cfg.uarch.set_cache("l1i:32k:8:64").map_err(spec)?;
    cfg.uarch.set_cache("l1d:32k:8:64").map_err(spec)?;
    cfg.uarch.set_timing("on").map_err(spec)?;
    let fdt = rvtrace_sim::fdt::Machine::of(&cfg).to_fdt()?;
    let mut hart = Hart::new(&cfg);
    Boot {
        firmware: None,
        payload: &image,
        fdt: &fdt,
        initrd: None,
    }
    .apply(&mut hart)
    .map_err(|e| e.to_string())?;
    hart.attach(Box::new(rvtrace_sbi::Sbi::new(
        rvtrace_sbi::SbiConfig::stdio(),
    )));
    out!(o, "rvtrace: running the bundled example {name}: {what}");
    out!(o, "rvtrace: --- program output ---");
    o.flush().map_err(|e| o.fail(e))?;
    let stop = hart.run(&mut (), 100_000_000);
    hart.flush_output();
    out!(o, "rvtrace: --- end of program output ---");
    out!(
        o,
        "rvtrace: {name} retired {} instructions and stopped by {}",
        hart.instret,
        stop_text(&stop, false)
    );
    // Files an installed user has: the example written out, the firmware from OpenSBI.
    out!(
        o,
        "rvtrace: the same under OpenSBI: `rvtrace example {name} --write DIR`, then \
         `rvtrace run --bios fw_jump.bin DIR/{name}.elf` (fw_jump.bin: Debian's opensbi package, \
         /usr/lib/riscv64-linux-gnu/opensbi/generic/)"
    );
    o.finish()?;
    Ok(exit_code(&hart, &stop, 100_000_000, false))
}

/// `rvtrace ingress dump` (`-` reads stdin). A damaged or cut file: the records before the
/// damage are printed, then a warning, exit status 1 (trace lost, as the decoders report it).
/// `time` false: without time (`--no-time`, [`rvtrace_ingress::dump_with`]).
pub fn ingress_dump(path: &Path, time: bool) -> CmdResult {
    let input = report::open_input(path)?;
    let mut out = Output::stdout();
    let res = rvtrace_ingress::dump_with(input, &mut out, time);
    let flushed = out.finish();
    match res {
        Ok(_) => {
            flushed?;
            Ok(ExitCode::SUCCESS)
        }
        Err(rvtrace_ingress::IngressError::Io(e)) => Err(Failure::io("writing stdout", e)),
        Err(e) => {
            flushed?;
            damaged_input(&report::name(path), &e, None)
        }
    }
}

/// How `encode` reports a damaged input (`msg` names the file and the damage): the trace of the
/// `records` before it was written; a warning and exit status 1, as [`damaged_input`].
pub fn input_damaged(msg: &str, records: u64) -> ExitCode {
    warn!("{msg}; the trace of the {records} records before it was written");
    ExitCode::from(EXIT_MISMATCH)
}

/// How every reader of a binary ingress file reports damage found after the header: the records
/// before it were delivered (`records`, when known); exit status 1. An input that is not an
/// ingress file at all, or whose header is damaged, is a tool failure (125): nothing was read.
pub fn damaged_input(
    name: &str,
    e: &rvtrace_ingress::IngressError,
    records: Option<u64>,
) -> CmdResult {
    use rvtrace_ingress::IngressError as E;
    if matches!(e, E::NotIngressFile | E::UnsupportedVersion(_)) {
        return Err(Failure::Tool(format!("{name}: {e}")));
    }
    let before = match records {
        Some(n) => format!("the {n} records before it were read"),
        None => "the records before it were read".into(),
    };
    if e.is_missing_end_block() {
        warn!("{name}: {e}: its writer did not finish (interrupted?); {before}");
    } else {
        warn!("{name}: {e}; {before}");
    }
    Ok(ExitCode::from(EXIT_MISMATCH))
}

/// `--itc ADDR`.
fn parse_hex_addr(v: &str) -> Result<u64, String> {
    report::hex(v).ok_or_else(|| format!("{v:?}: not a hex address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_writes_trace_has_a_limit() {
        assert_eq!(effective_max_insns(None, true), DEFAULT_TRACE_MAX_INSNS);
        assert_eq!(effective_max_insns(None, false), 0);
        assert_eq!(effective_max_insns(Some(0), true), 0);
        assert_eq!(effective_max_insns(Some(5), false), 5);
    }
}
