//! Branch stacks for profilers (`perf script -F ip,brstack` text): CTR samples of a `run`
//! (`--ctr-sample`, `--brstack`) and the same synthesised from a decoded trace (`decode
//! ntrace|etrace --brstack --brstack-every`). The text and the recording rules are
//! `rvtrace_ctr::brstack`'s; this module parses the options and drives them.

use crate::report::{Failure, Output};
use rvtrace_ctr::brstack::{self, Fields, FlowCtr, PerfEntry, SampleAt};
use rvtrace_ctr::{csr, ctl, Ctr};
use rvtrace_flow::{FlowElement, FlowSink};
use rvtrace_image::Image;
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_sim::extension::{Ctx, Extension};
use rvtrace_sim::{Hart, Stop, TrapInfo};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `mctrctl` when `--ctr-config` is not given and samples are taken every N instructions: U, S
/// and M enabled, no type inhibited (perf's `-j any`), not-taken branches not recorded (the
/// Linux driver never sets NTBREN).
pub const DEFAULT_MCTRCTL: u64 = ctl::U | ctl::S | ctl::M;
/// `mctrctl` when `--ctr-config` is not given and samples are taken on counter overflows:
/// [`DEFAULT_MCTRCTL`] and LCOFIFRZ, as the Linux CTR driver programs it.
pub const DEFAULT_MCTRCTL_OVERFLOW: u64 = DEFAULT_MCTRCTL | ctl::LCOFIFRZ;

const SAMPLE_HELP: &str =
    "N (every N retired instructions) or `overflow` (at each local counter overflow interrupt)";

/// `rvtrace run`'s branch-stack options.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct BrstackRunArgs {
    /// Take a CTR sample every N retired instructions (after instruction k*N retired, with the
    /// trap an `ecall`/`ebreak` raises; ip = the next instruction's pc), or `overflow`: at each
    /// local counter overflow interrupt (LCOFI) the hart takes (the program, or its firmware
    /// under --sbi/--bios, programs a Sscofpmf counter to overflow; ip = the interrupted pc;
    /// with LCOFIFRZ the CTR is frozen there and the LCOFI not recorded; after the sample FROZEN
    /// is cleared, as the Linux perf driver's overflow handler does). Needs --ctr 1.0 and
    /// --brstack.
    #[arg(long, value_name = "N|overflow")]
    ctr_sample: Option<String>,
    /// Write the CTR samples to FILE (`-`: stdout) as `perf script -F ip,brstack` prints them:
    /// per sample a line ` IP 0xFROM/0xTO/P|M/-/-/CYCLES/TYPE/- ...`, entries youngest first
    /// (logical entry 0 first), types as the Linux RISC-V CTR driver maps them (exception
    /// SYSCALL, interrupt IRQ, xRET ERET, branches COND, indirect call IND_CALL, direct call
    /// CALL, indirect jumps IND, direct jumps UNCOND, return RET, co-routine swap empty);
    /// CYCLES is the decoded `ctrdata.CC` when CCV=1 (saturating at 65535), else 0. Like the
    /// other trace outputs it sets the default --max-insns.
    #[arg(long, value_name = "FILE")]
    brstack: Option<PathBuf>,
    /// Name addresses with the ELF's symbols (`perf script -F ip,brstacksym`: `sym+0xoff`,
    /// `[unknown]` outside every symbol).
    #[arg(long)]
    brstack_sym: bool,
    /// Leave the predicted/mispredicted flag out (`-`), as `perf record -j ...,no_flags`.
    #[arg(long)]
    brstack_no_flags: bool,
    /// Leave cycle counts out (0), as `perf record -j ...,no_cycles`.
    #[arg(long)]
    brstack_no_cycles: bool,
    /// `mctrctl` at reset, in hex (the program may still change it). Default with --ctr-sample:
    /// 0x7 (U, S and M recorded, every type, no not-taken branches, as perf's `-j any`); with
    /// `--ctr-sample overflow` 0x1007 (and LCOFIFRZ, which the Linux driver always sets).
    #[arg(long, value_name = "HEX")]
    ctr_config: Option<String>,
    /// `sctrdepth` at reset, in entries: 16, 32, 64, 128 or 256 [default: 16, the reset value].
    #[arg(long, value_name = "ENTRIES")]
    ctr_depth: Option<u32>,
}

/// `decode ntrace|etrace`'s branch-stack options.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct BrstackDecodeArgs {
    /// Write what a CTR would have held (Smctr v1.0 rules, `mctrctl` from --ctr-config) as
    /// `perf script -F ip,brstack` samples to FILE (`-`: stdout), at the points --brstack-every
    /// gives; the same text as `rvtrace run --ctr-sample N --brstack FILE
    /// --brstack-no-flags --brstack-no-cycles` (a trace has no branch predictor or cycle
    /// counts: every entry shows `-` and 0). A trace loss ends the samples (the instruction
    /// count after it is unknown).
    #[arg(long, value_name = "FILE")]
    brstack: Option<PathBuf>,
    /// Sample every N retired instructions, or `overflow`: at each interrupt 13 (LCOFI) the
    /// trace reports (as `run --ctr-sample`).
    #[arg(long, value_name = "N|overflow")]
    brstack_every: Option<String>,
    /// Name addresses with the ELF's symbols (`brstacksym`).
    #[arg(long)]
    brstack_sym: bool,
    /// `mctrctl` of the virtual CTR, in hex (default as for `run --ctr-sample`: 0x7, or 0x1007
    /// with `overflow`).
    #[arg(long, value_name = "HEX")]
    ctr_config: Option<String>,
    /// Depth of the virtual CTR in entries: 16, 32, 64, 128 or 256 [default: 16].
    #[arg(long, value_name = "ENTRIES")]
    ctr_depth: Option<u32>,
}

impl BrstackDecodeArgs {
    /// These options with `--brstack`'s path mapped by `f` (one file per hart).
    pub fn map_path(&self, f: impl Fn(&Path) -> PathBuf) -> Self {
        BrstackDecodeArgs {
            brstack: self.brstack.as_deref().map(f),
            ..self.clone()
        }
    }
}

fn usage(m: String) -> Failure {
    Failure::Usage(m)
}

fn parse_at(opt: &str, v: &str) -> Result<SampleAt, Failure> {
    if v == "overflow" {
        return Ok(SampleAt::Overflow);
    }
    match v.parse::<u64>() {
        Ok(0) => Err(usage(format!(
            "{opt} 0: samples need at least one instruction between them"
        ))),
        Ok(n) => Ok(SampleAt::Every(n)),
        Err(_) => Err(usage(format!("{opt} {v:?}: expected {SAMPLE_HELP}"))),
    }
}

/// `--ctr-config`: an `mctrctl` value with implemented fields only (a bit the model does not
/// implement would be dropped by the WARL write: refused instead).
fn parse_config(v: Option<&str>, at: SampleAt, xlen: Xlen) -> Result<u64, Failure> {
    let Some(v) = v else {
        return Ok(match at {
            SampleAt::Every(_) => DEFAULT_MCTRCTL,
            SampleAt::Overflow => DEFAULT_MCTRCTL_OVERFLOW,
        });
    };
    let t = v.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let c = u64::from_str_radix(t, 16).map_err(|_| {
        usage(format!(
            "--ctr-config {v:?}: expected an mctrctl value in hex"
        ))
    })?;
    let bad = c & !ctl::MCTRCTL_MASK;
    if bad != 0 {
        return Err(usage(format!(
            "--ctr-config {v}: bits {bad:#x} are not mctrctl fields the model implements (mask {:#x})",
            ctl::MCTRCTL_MASK
        )));
    }
    if xlen == Xlen::Rv32 && c >> 32 != 0 {
        return Err(usage(format!(
            "--ctr-config {v}: RV32 cannot write mctrctl bits 63:32 (CTR v1.0, \"CSR Listing\")"
        )));
    }
    Ok(c)
}

/// `--ctr-depth` as the `sctrdepth` code.
fn parse_depth(d: Option<u32>) -> Result<u64, Failure> {
    match d {
        None | Some(16) => Ok(0),
        Some(32) => Ok(1),
        Some(64) => Ok(2),
        Some(128) => Ok(3),
        Some(256) => Ok(4),
        Some(n) => Err(usage(format!(
            "--ctr-depth {n}: CTR depths are 16, 32, 64, 128 or 256 entries"
        ))),
    }
}

/// Write a CTR CSR at reset through the hart (which then knows whether CTR wants its events).
fn reset_write(hart: &mut Hart, c: u16, v: u64) -> Result<(), Failure> {
    if hart.csr_write(c, v) {
        Ok(())
    } else {
        Err(Failure::Tool(format!(
            "the hart refused the write of {v:#x} to CTR CSR {c:#x} at reset"
        )))
    }
}

/// Write a CTR status CSR as the perf driver would, whatever the hart's current privilege and
/// `mstateen0` (the sampler stands outside the program). Not for `mctrctl`: the hart would not
/// learn whether CTR wants its events.
fn ctr_write(hart: &mut Hart, c: u16, v: u64) {
    let (xlen, cycles) = (hart.xlen, rvtrace_ctr::hart_cycles(hart));
    if let Some(ctr) = hart.extension_mut::<Ctr>() {
        ctr.write(c, v, xlen, cycles);
    }
}

/// One sample line for `entries`, with the ELF's symbols when asked.
fn line<'i>(image: &'i Image, sym: bool, ip: u64, entries: &[PerfEntry]) -> String {
    let f = |a: u64| brstack::image_symbol(image, a);
    let f: &dyn Fn(u64) -> Option<(&'i str, u64)> = &f;
    brstack::sample_line(ip, entries, sym.then_some(f))
}

/// The checks of `run`'s options that need no hart: a usage error for a bad combination.
pub fn check_run(a: &BrstackRunArgs) -> Result<(), Failure> {
    match (&a.brstack, &a.ctr_sample) {
        (Some(_), None) => {
            return Err(usage(format!(
                "--brstack needs --ctr-sample ({SAMPLE_HELP})"
            )))
        }
        (None, Some(_)) => {
            return Err(usage(
                "--ctr-sample needs --brstack FILE (where the samples go)".into(),
            ))
        }
        _ => {}
    }
    if a.brstack.is_none() {
        for (given, opt) in [
            (a.brstack_sym, "--brstack-sym"),
            (a.brstack_no_flags, "--brstack-no-flags"),
            (a.brstack_no_cycles, "--brstack-no-cycles"),
        ] {
            if given {
                return Err(usage(format!("{opt} needs --brstack FILE")));
            }
        }
    }
    if let Some(s) = &a.ctr_sample {
        parse_at("--ctr-sample", s)?;
    }
    parse_depth(a.ctr_depth)?;
    Ok(())
}

/// The outputs `run` creates for these options (for `report::distinct`).
pub fn run_outputs(a: &BrstackRunArgs) -> Vec<(&'static str, &Path)> {
    a.brstack
        .iter()
        .map(|p| ("--brstack", p.as_path()))
        .collect()
}

/// Takes CTR samples of a running hart.
pub struct Sampler<'i> {
    at: SampleAt,
    /// `instret` at the next sample (every-N mode).
    next: u64,
    fields: Fields,
    image: &'i Image,
    sym: bool,
    out: Output,
    err: Option<std::io::Error>,
    /// Samples written.
    pub samples: u64,
}

/// In `overflow` mode: stops the hart right after it takes a counter-overflow interrupt. An
/// extension, because traps reach extensions on the hart's cold path: the run pays nothing per
/// instruction (an observer would be polled after every one).
#[derive(Default)]
struct LcofiStop {
    epc: Option<u64>,
}

impl Extension for LcofiStop {
    fn name(&self) -> &'static str {
        "brstack-overflow-sampler"
    }
    fn trap(&mut self, ctx: &mut Ctx, t: &TrapInfo) {
        if t.interrupt && t.cause == rvtrace_sim::csr::irq::LCOFI.trailing_zeros() as u64 {
            self.epc = Some(t.epc);
            ctx.request_stop();
        }
    }
}

impl<'i> Sampler<'i> {
    /// Configure the hart's CTR (`--ctr-config`, `--ctr-depth`) and open the output; `None`
    /// without `--brstack`. Usage errors for a hart without CTR.
    pub fn new(
        a: &BrstackRunArgs,
        hart: &mut Hart,
        image: &'i Image,
    ) -> Result<Option<Sampler<'i>>, Failure> {
        check_run(a)?;
        // Sampling follows v1.0 (CSR numbers, `mctrctl` fields, the driver's mapping).
        let has_ctr = hart
            .extension_mut::<Ctr>()
            .is_some_and(|c| c.version() == rvtrace_ctr::Version::V1_0);
        if !has_ctr {
            for (given, opt) in [
                (a.brstack.is_some(), "--brstack"),
                (a.ctr_config.is_some(), "--ctr-config"),
                (a.ctr_depth.is_some(), "--ctr-depth"),
            ] {
                if given {
                    return Err(usage(format!(
                        "{opt} needs --ctr 1.0 (the hart has no CTR, or the v0.1.4 draft's)"
                    )));
                }
            }
            return Ok(None);
        }
        let at = match &a.ctr_sample {
            Some(s) => parse_at("--ctr-sample", s)?,
            None => SampleAt::Every(1),
        };
        if a.ctr_config.is_some() || a.brstack.is_some() {
            let c = parse_config(a.ctr_config.as_deref(), at, hart.xlen)?;
            reset_write(hart, csr::MCTRCTL, c)?;
        }
        if a.ctr_depth.is_some() {
            reset_write(hart, csr::SCTRDEPTH, parse_depth(a.ctr_depth)?)?;
        }
        let Some(p) = &a.brstack else {
            return Ok(None);
        };
        let next = match at {
            SampleAt::Every(n) => hart.instret.saturating_add(n),
            SampleAt::Overflow => {
                // After the CTR, so that its freeze has happened when the hart stops.
                hart.attach(Box::<LcofiStop>::default());
                u64::MAX
            }
        };
        Ok(Some(Sampler {
            at,
            next,
            fields: Fields {
                flags: !a.brstack_no_flags,
                cycles: !a.brstack_no_cycles,
            },
            image,
            sym: a.brstack_sym,
            out: Output::create(p)?,
            err: None,
            samples: 0,
        }))
    }

    /// Instructions the hart may run before the next sample (at least 1).
    pub fn budget(&self, instret: u64) -> u64 {
        self.next.saturating_sub(instret).max(1)
    }

    fn write(&mut self, hart: &mut Hart, ip: u64) {
        let fields = self.fields;
        let Some(ctr) = hart.extension_mut::<Ctr>() else {
            return;
        };
        let entries: Vec<PerfEntry> = ctr
            .entries()
            .iter()
            .map(|e| PerfEntry::from_ctr(e, fields))
            .collect();
        let frozen = ctr.frozen();
        let wrptr = ctr.wrptr();
        let text = line(self.image, self.sym, ip, &entries);
        if self.err.is_none() {
            if let Err(e) = self.out.write_all(text.as_bytes()) {
                self.err = Some(e);
            }
        }
        self.samples += 1;
        if self.at == SampleAt::Overflow && frozen {
            // As the perf driver's overflow handler: read the entries, then clear FROZEN.
            ctr_write(hart, csr::SCTRSTATUS, wrptr);
        }
    }

    /// After `hart.run` stopped with `stop`: take the sample that is due. `true` when the stop
    /// was only for the sample (the run goes on).
    pub fn after(&mut self, hart: &mut Hart, stop: &Stop) -> bool {
        let overflow = hart.extension_mut::<LcofiStop>().and_then(|w| w.epc.take());
        if let Some(epc) = overflow {
            self.write(hart, epc);
            return *stop == Stop::Requested;
        }
        if *stop == Stop::InsnLimit && hart.instret >= self.next {
            if let SampleAt::Every(n) = self.at {
                let pc = hart.pc;
                self.write(hart, pc);
                self.next = hart.instret.saturating_add(n);
            }
        }
        false
    }

    /// Flush the output.
    pub fn finish(mut self) -> Result<u64, Failure> {
        if let Some(e) = self.err.take() {
            return Err(self.out.fail(e));
        }
        self.out.finish()?;
        Ok(self.samples)
    }
}

/// The decoders' branch-stack output: a [`FlowCtr`] and its text.
pub struct FlowOut<'i> {
    ctr: FlowCtr<'i>,
    at: SampleAt,
    image: &'i Image,
    sym: bool,
    out: Output,
    err: Option<std::io::Error>,
}

/// The outputs a decoder creates for these options (for `report::distinct`).
pub fn decode_outputs(a: &BrstackDecodeArgs) -> Vec<(&'static str, &Path)> {
    a.brstack
        .iter()
        .map(|p| ("--brstack", p.as_path()))
        .collect()
}

/// Usage checks of the decoders' options (before anything is created).
pub fn check_decode(a: &BrstackDecodeArgs) -> Result<(), Failure> {
    match (&a.brstack, &a.brstack_every) {
        (Some(_), None) => {
            return Err(usage(format!(
                "--brstack needs --brstack-every ({SAMPLE_HELP})"
            )))
        }
        (None, Some(_)) => return Err(usage("--brstack-every needs --brstack FILE".into())),
        _ => {}
    }
    if a.brstack.is_none() {
        for (given, opt) in [
            (a.brstack_sym, "--brstack-sym"),
            (a.ctr_config.is_some(), "--ctr-config"),
            (a.ctr_depth.is_some(), "--ctr-depth"),
        ] {
            if given {
                return Err(usage(format!("{opt} needs --brstack FILE")));
            }
        }
    }
    if let Some(s) = &a.brstack_every {
        parse_at("--brstack-every", s)?;
    }
    parse_depth(a.ctr_depth)?;
    Ok(())
}

impl<'i> FlowOut<'i> {
    /// `None` without `--brstack`.
    pub fn new(
        a: &BrstackDecodeArgs,
        image: &'i Image,
        xlen: Xlen,
    ) -> Result<Option<FlowOut<'i>>, Failure> {
        check_decode(a)?;
        let (Some(p), Some(every)) = (&a.brstack, &a.brstack_every) else {
            return Ok(None);
        };
        let at = parse_at("--brstack-every", every)?;
        let config = parse_config(a.ctr_config.as_deref(), at, xlen)?;
        let isa = IsaConfig::new(xlen);
        let mut ctr = FlowCtr::new(image, isa, config, at);
        ctr.ctr
            .write(csr::SCTRDEPTH, parse_depth(a.ctr_depth)?, xlen, [0; 4]);
        Ok(Some(FlowOut {
            ctr,
            at,
            image,
            sym: a.brstack_sym,
            out: Output::create(p)?,
            err: None,
        }))
    }

    /// Flush; warn about what the samples could not know.
    pub fn finish(mut self) -> Result<(), Failure> {
        if let Some(e) = self.err.take() {
            return Err(self.out.fail(e));
        }
        let name = self.out.name().to_string();
        self.out.finish()?;
        let c = &self.ctr;
        if c.unknown_privilege > 0 {
            warn!(
                "{name}: the trace gave no privilege for {} transfers (taken as M); with --ctr-config not enabling all of U, S and M the branch stacks may be wrong",
                c.unknown_privilege
            );
        }
        if c.unmapped > 0 {
            warn!(
                "{name}: {} executed instructions are outside the ELF files (not classified: no records for them)",
                c.unmapped
            );
        }
        let freezes = c.ctr.mctrctl() & (ctl::LCOFIFRZ | ctl::BPFRZ) != 0;
        if c.traps_without_cause > 0 && (freezes || self.at == SampleAt::Overflow) {
            warn!(
                "{name}: the trace gives no cause for {} traps (N-Trace reports none), so counter-overflow interrupts and breakpoints are not recognised (overflow samples, LCOFIFRZ/BPFRZ freezes)",
                c.traps_without_cause
            );
        }
        if c.lost {
            warn!("{name}: trace was lost: no samples after the first loss");
        }
        if c.gap {
            warn!("{name}: the trace stopped and started again (filtered?): the instructions in between are unknown, no samples after the first stop");
        }
        Ok(())
    }
}

impl FlowSink for FlowOut<'_> {
    fn element(&mut self, e: &FlowElement) {
        self.ctr.element(e);
        while let Some(s) = self.ctr.next_sample() {
            let entries: Vec<PerfEntry> = s
                .entries
                .iter()
                .map(|e| PerfEntry::from_ctr(e, Fields::NONE))
                .collect();
            let text = line(self.image, self.sym, s.ip, &entries);
            if self.err.is_none() {
                if let Err(e) = self.out.write_all(text.as_bytes()) {
                    self.err = Some(e);
                }
            }
        }
    }
}
