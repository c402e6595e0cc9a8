//! The boot modes of `rvtrace run` (`--sbi`, `--bios FW`) and `rvtrace dtb`: the CLI side of
//! `rvtrace_sim::boot` and `rvtrace_sim::fdt`.

use crate::isa_arg::{parse_isa, Isa};
use crate::report::{CmdResult, Failure, Output};
use rvtrace_image::Image;
use rvtrace_isa::Xlen;
use rvtrace_sim::boot::{initrd_address, Boot};
use rvtrace_sim::bus::RAM_BASE;
use rvtrace_sim::fdt::Machine as Description;
use rvtrace_sim::machine::Machine;
use rvtrace_sim::{privilege, Config, Hart, TrapInfo};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// How `rvtrace run` starts the hart.
pub enum Mode<'a> {
    /// Bare metal: the ELF in M-mode with semihosting (the default).
    Bare,
    /// The ELF is an S-mode payload; rvtrace's own SBI services its `ecall`s.
    Sbi,
    /// The ELF is an S-mode payload; a firmware ELF (OpenSBI) boots first in M-mode.
    Bios(&'a Path),
}

/// Which Control Transfer Records specification `run --ctr` models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CtrVersion {
    /// Smctr/Ssctr as ratified (v1.0), as QEMU 10 and Linux follow it.
    #[value(name = "1.0")]
    V1_0,
    /// The v0.1.4 draft of 2023-09-15 (other CSR numbers and fields, DEPTH and CLR in the
    /// control register, WRAP, ETEN), as silicon and RTL built to it.
    #[value(name = "0.1.4")]
    V0_1_4,
}

impl CtrVersion {
    /// The model's version.
    pub fn version(self) -> rvtrace_ctr::Version {
        match self {
            CtrVersion::V1_0 => rvtrace_ctr::Version::V1_0,
            CtrVersion::V0_1_4 => rvtrace_ctr::Version::Draft0_1_4,
        }
    }

    /// What the hart needs besides the extension: Smstateen (`mstateen0.CTR`, `.CSRIND`), as
    /// QEMU 10's `smctr=true,ssctr=true,smstateen=true,smcsrind=true,sscsrind=true` (the
    /// draft has its CTR bit in `mstateen0` too, at 55).
    pub fn configure(self, cfg: &mut Config) {
        cfg.smstateen = true;
    }

    /// The extensions the device tree lists for it.
    pub fn isa_names(self) -> &'static [&'static str] {
        &["smcsrind", "smctr", "sscsrind", "ssctr"]
    }

    /// Attach the CTR model to `hart`.
    pub fn attach(self, hart: &mut Hart) {
        hart.attach(Box::new(rvtrace_ctr::Ctr::new(self.version())));
    }
}

/// The hart configuration for `isa` (default: the QEMU `virt` CPU for `xlen`) and `hpm` counters,
/// without semihosting (every run mode starts from it).
pub fn config(xlen: Xlen, isa: Option<Isa>, hpm: u8) -> Config {
    let mut cfg = Config::virt(xlen);
    if let Some(isa) = isa {
        cfg.xlen = isa.xlen;
        cfg.ext = isa.ext;
        cfg.counters.sscofpmf = isa.sscofpmf;
        cfg.counters.smcntrpmf = isa.smcntrpmf;
        cfg.sstc = isa.sstc;
    }
    cfg.counters.hpm_counters = hpm;
    cfg
}

/// `--bios FW`: an ELF, or a raw binary (`*.bin`) loaded at the start
/// of RAM as QEMU loads `-bios FILE.bin`.
fn firmware(path: &Path) -> Result<rvtrace_sim::boot::Firmware, Failure> {
    let bytes = crate::report::read_input(path)?;
    let name = crate::report::name(path);
    if bytes.starts_with(b"\x7fELF") {
        let mut image = Image::new();
        image
            .load_bytes(&name, &bytes)
            .map_err(|e| Failure::Tool(format!("--bios {e}")))?;
        return Ok(rvtrace_sim::boot::Firmware::from_image(&image));
    }
    if path.extension().is_none_or(|e| e != "bin") {
        return Err(Failure::Tool(format!(
            "--bios {name}: not an ELF file (a raw firmware image must be named *.bin)"
        )));
    }
    if bytes.is_empty() {
        return Err(Failure::Tool(format!("--bios {name}: the file is empty")));
    }
    Ok(rvtrace_sim::boot::Firmware::raw(&name, bytes))
}

/// What the boot modes give the machine besides the firmware and the payload.
pub struct BootOptions<'a> {
    /// `/chosen/bootargs`.
    pub bootargs: Option<&'a str>,
    /// An initial RAM disk, loaded where QEMU's `-initrd` puts it.
    pub initrd: Option<&'a Path>,
    /// `/chosen/rng-seed` comes from this seed ([`rng_seed`]).
    pub seed: u64,
    /// Write the device tree blob here (QEMU's `-machine dumpdtb=FILE`).
    pub dump_dtb: Option<&'a Path>,
    /// Harts of the machine (1..=`rvtrace_sim::smp::MAX_HARTS`).
    pub harts: usize,
}

/// The 32 bytes of `/chosen/rng-seed` for `seed`: the project's generator (`rvtrace-rng`)
/// seeded with it, so a run gives the kernel the same entropy every time (QEMU gives 32 random
/// bytes).
pub fn rng_seed(seed: u64) -> [u8; 32] {
    let mut b = [0; 32];
    rvtrace_rng::Rng(seed).fill(&mut b);
    b
}

/// The payload: an ELF at its physical addresses, or a flat Linux kernel `Image` (recognized by
/// its header) where QEMU's `-kernel` puts one ([`rvtrace_sim::boot::kernel_address`]; after
/// the built-in SBI, where it would be after OpenSBI: 0x80200000 on RV64), padded with zeros
/// to the header's `image_size` so that nothing is placed over its `bss`.
fn payload(
    path: &Path,
    firmware: Option<&rvtrace_sim::boot::Firmware>,
    xlen: Xlen,
) -> Result<Image, Failure> {
    use rvtrace_sim::boot::{kernel_address, payload_address, LinuxImage};
    let mut bytes = crate::report::read_input(path)?;
    let name = crate::report::name(path);
    let mut image = Image::new();
    if let Some(header) = LinuxImage::parse(&bytes) {
        let at = match firmware {
            Some(fw) => {
                let end = fw.segments.iter().map(|(a, d)| a + d.len() as u64).max();
                kernel_address(xlen, end)
            }
            None => payload_address(xlen),
        };
        // `image_size` is never below the file's length (LinuxImage::parse).
        let size = header.image_size as usize;
        if header.image_size > rvtrace_image::MAX_LOAD_BYTES {
            return Err(Failure::Tool(format!(
                "payload {name}: its header's image_size {:#x} is over 1 GiB",
                header.image_size
            )));
        }
        bytes.resize(size, 0);
        image
            .load_raw(&name, &bytes, at, xlen)
            .map_err(|e| Failure::Tool(format!("payload {e}")))?;
    } else {
        image.load_bytes(&name, &bytes).map_err(|e| {
            Failure::Tool(format!(
                "payload {e} (nor a RISC-V Linux Image: no \"RSC\\x05\" at 0x38)"
            ))
        })?;
    }
    Ok(image)
}

/// A machine of `opts.harts` harts booted in `mode` (not [`Mode::Bare`]) with the payload `elf`
/// (an ELF or a Linux `Image`) as QEMU `virt -smp N` boots it: under a firmware every hart
/// starts at the reset ROM (the firmware picks its boot hart); under the built-in SBI hart 0
/// enters the payload and the others are STOPPED until `sbi_hart_start`. Also the image of
/// both files for symbols.
pub fn make_machine(
    mode: &Mode,
    elf: &Path,
    mut cfg: Config,
    isa_given: bool,
    opts: &BootOptions,
    semihosting: Option<&str>,
    ctr: Option<CtrVersion>,
) -> Result<(Machine, Image), Failure> {
    let firmware = match mode {
        Mode::Bios(fw) => Some(firmware(fw)?),
        _ => None,
    };
    // A Linux Image does not say its XLEN: --isa's, else the firmware's, else RV64.
    let default_xlen = if isa_given {
        cfg.xlen
    } else {
        firmware.as_ref().and_then(|f| f.xlen).unwrap_or(Xlen::Rv64)
    };
    let payload = payload(elf, firmware.as_ref(), default_xlen)?;
    let xlen = payload
        .files()
        .first()
        .map(|f| f.xlen)
        .unwrap_or(Xlen::Rv64);
    if !isa_given {
        cfg.xlen = xlen;
    } else if cfg.xlen != xlen {
        return Err(Failure::Usage(format!(
            "--isa is RV{} but the payload {} is RV{}",
            cfg.xlen.bits(),
            crate::report::name(elf),
            xlen.bits()
        )));
    }
    if let Some(v) = ctr {
        v.configure(&mut cfg);
    }
    let initrd = match opts.initrd {
        Some(p) => {
            let data = crate::report::read_input(p)?;
            let entry = payload.files().first().map_or(RAM_BASE, |f| f.entry);
            Some((initrd_address(entry, cfg.ram_size), data))
        }
        None => None,
    };
    let mut desc = Description::of(&cfg);
    desc.bootargs = opts.bootargs.map(str::to_string);
    desc.initrd = initrd.as_ref().map(|(at, d)| (*at, at + d.len() as u64));
    desc.rng_seed = Some(rng_seed(opts.seed));
    desc.harts = opts.harts;
    if let Some(v) = ctr {
        desc.more.extend(v.isa_names());
    }
    let fdt = desc.to_fdt()?;
    if let Some(p) = opts.dump_dtb {
        let mut out = Output::create(p)?;
        out.write_all(&fdt).map_err(|e| out.fail(e))?;
        out.finish()?;
    }
    let mut machine = Machine::new(&cfg, opts.harts);
    // Before the boot state: `enter_supervisor` opens `mstateen0` to what is attached.
    if let Some(v) = ctr {
        for h in 0..machine.len() {
            machine.with_hart(h, |hart| v.attach(hart));
        }
    }
    let boot = Boot {
        firmware: firmware.as_ref(),
        payload: &payload,
        fdt: &fdt,
        initrd: initrd.as_ref().map(|(at, d)| (*at, d.as_slice())),
    };
    let fdt_at = machine
        .with_hart(0, |hart| boot.apply(hart))
        .map_err(|e| Failure::Tool(e.to_string()))?;
    for h in 1..machine.len() {
        machine.with_hart(h, |hart| boot.apply_other(hart, fdt_at));
    }
    if let Some(cmdline) = semihosting {
        // The heap is laid out around what is loaded: the payload and the device tree.
        let mut loaded: Vec<(u64, u64)> = payload
            .segments()
            .iter()
            .map(|s| (s.paddr, s.paddr + s.data.len() as u64))
            .collect();
        loaded.push((fdt_at, fdt_at + fdt.len() as u64));
        machine.with_hart(0, |hart| {
            let sc = rvtrace_semihost::config(hart, cmdline, loaded);
            rvtrace_semihost::set(hart, rvtrace_semihost::Semihost::new(sc));
        });
    }
    // The UART receives what is piped in (a terminal is left alone: the model has no raw mode).
    // The built-in SBI's console shares the UART's receiver, as OpenSBI's console is the 16550,
    // so the supervisor's serial driver and SBI console reads see one input; with a terminal
    // the SBI reads it itself.
    use std::io::IsTerminal;
    let piped = !std::io::stdin().is_terminal();
    if piped {
        machine.with_hart(0, |hart| {
            hart.bus.uart_input = Some(Box::new(std::io::stdin()))
        });
    }
    if let Mode::Sbi = mode {
        for h in 0..machine.len() {
            let cfg = if piped {
                rvtrace_sbi::SbiConfig::stdout_and_uart()
            } else {
                rvtrace_sbi::SbiConfig::stdio()
            };
            machine.with_hart(h, |hart| hart.attach(Box::new(rvtrace_sbi::Sbi::new(cfg))));
        }
    }
    let mut symbols = Image::new();
    if let Some(fw) = match mode {
        Mode::Bios(fw) => Some(fw),
        _ => None,
    } {
        let _ = symbols.load_file(fw);
    }
    let _ = symbols.load_file(elf);
    Ok((machine, symbols))
}

/// Watches a `--sbi` run for a trap into M-mode: the built-in SBI services every `ecall` from S
/// before it traps, so such a trap means the payload did something no firmware handles here. An
/// extension of the hart (traps reach extensions on the hart's cold path, so the run pays
/// nothing per instruction); it stops the run at the first such trap.
#[derive(Default)]
pub struct MTrapGuard {
    /// The first trap into M-mode.
    pub hit: Option<TrapInfo>,
}

impl MTrapGuard {
    /// The one line that reports the trap.
    pub fn message(&self) -> Option<String> {
        let t = self.hit.as_ref()?;
        Some(format!(
            "unexpected trap into M-mode under --sbi: {} ({}{}) at pc {:#x}, tval {:#x}, from {}-mode",
            if t.interrupt { "interrupt" } else { rvtrace_sim::exception_name(t.cause) },
            if t.interrupt { "interrupt " } else { "cause " },
            t.cause,
            t.epc,
            t.tval,
            match t.from_priv {
                privilege::M => "M",
                privilege::S => "S",
                _ => "U",
            }
        ))
    }
}

impl rvtrace_sim::extension::Extension for MTrapGuard {
    fn name(&self) -> &'static str {
        "m-trap-guard"
    }
    fn trap(&mut self, ctx: &mut rvtrace_sim::extension::Ctx, t: &TrapInfo) {
        if self.hit.is_none() && t.to_priv == privilege::M {
            self.hit = Some(*t);
            ctx.request_stop();
        }
    }
}

/// Under `--bios`, the reason of the payload's last SBI SRST call (SBI v3.0 10.1: a0 = type,
/// a1 = reason; 1 = "system failure"). The firmware ends the run through the test finisher, and
/// OpenSBI's driver for it writes "pass" whatever the reason, so the run would end with status 0
/// where `--sbi` (which maps the reason) ends with 1 (issue 29: one status in both modes).
#[derive(Default)]
pub struct SrstWatch {
    /// The reason of the last SRST call, if the payload made one.
    pub reason: Option<u64>,
}

/// SRST's extension ID ("SRST").
const EID_SRST: u64 = 0x5352_5354;

impl rvtrace_sim::extension::Extension for SrstWatch {
    fn name(&self) -> &'static str {
        "srst-watch"
    }
    fn trap(&mut self, ctx: &mut rvtrace_sim::extension::Ctx, t: &TrapInfo) {
        // a7 = EID, a6 = FID (0: system_reset), a1 = reason.
        if !t.interrupt
            && t.cause == rvtrace_sim::cause::ECALL_S
            && ctx.x(17) == EID_SRST
            && ctx.x(16) == 0
        {
            self.reason = Some(ctx.x(11));
        }
    }
}

/// Arguments of `rvtrace dtb`.
#[derive(clap::Args)]
pub struct DtbArgs {
    /// Where to write the device tree blob (`-`: stdout).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// The hart's ISA (as `run --isa`). Default: rv64gc with Zba, Zbb, Zbc, Zbs, Sscofpmf, Smcntrpmf.
    #[arg(long, value_name = "ISA")]
    isa: Option<String>,
    /// Programmable performance counters (`mhpmcounter3..3+K-1`), 0..29.
    #[arg(long, value_name = "K", default_value_t = rvtrace_sim::counters::DEFAULT_HPM_COUNTERS,
          value_parser = clap::value_parser!(u8).range(0..=29))]
    hpm_counters: u8,
    /// `/chosen/bootargs`.
    #[arg(long, value_name = "TEXT")]
    bootargs: Option<String>,
}

/// `rvtrace dtb`.
pub fn dtb(args: &DtbArgs) -> CmdResult {
    let isa = args
        .isa
        .as_deref()
        .map(parse_isa)
        .transpose()
        .map_err(Failure::Usage)?;
    let cfg = config(Xlen::Rv64, isa, args.hpm_counters);
    let mut m = Description::of(&cfg);
    m.bootargs = args.bootargs.clone();
    let blob = m.to_fdt()?;
    let mut out = Output::create(&args.output)?;
    out.write_all(&blob).map_err(|e| out.fail(e))?;
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod guard_tests {
    use super::MTrapGuard;
    use rvtrace_sim::{cause, Hart, Stop};

    /// Under `--sbi` every trap is delegated to S but the SBI's own ecall, so only a call the SBI
    /// does not take reaches M: the guard records it and stops the run before the next
    /// instruction, with one line that says what happened.
    #[test]
    fn a_trap_into_m_stops_the_run_and_is_named() {
        let cfg = rvtrace_sim::Config::virt(rvtrace_isa::Xlen::Rv64);
        let mut hart = Hart::new(&cfg);
        rvtrace_sim::boot::enter_supervisor(&mut hart, 0x8020_0000, 0x87e0_0000);
        hart.attach(Box::<MTrapGuard>::default());
        let t = hart.take_trap(cause::ECALL_S, 0, false, 0x8020_0010);
        assert_eq!(t.to_priv, rvtrace_sim::privilege::M);
        assert_eq!(hart.run(&mut (), 100), Stop::Requested);
        let m = hart
            .extension_mut::<MTrapGuard>()
            .and_then(|g| g.message())
            .unwrap();
        assert_eq!(
            m,
            "unexpected trap into M-mode under --sbi: environment call from S-mode (cause 9) at pc 0x80200010, tval 0x0, from S-mode"
        );
    }
}
