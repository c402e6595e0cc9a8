//! The hart: architectural state, the run loop with its decode cache, traps and interrupts.

mod block;
mod csr_exec;
mod exec;
mod exec_fp;
mod instrument;
mod mappings;
pub use mappings::Mapping;
mod mmu;
mod smp;
mod traploop;
mod trigger;

use crate::arch::{cause, privilege, Exc, LoadError, Stop};
use crate::bus::{Bus, BusExit, DEFAULT_RAM_SIZE, RAM_BASE};
use crate::counters::{CounterConfig, Counters, Tally};
use crate::csr::{irq, mstatus, Csrs};
use crate::decode::{decode, Extensions, Insn, Op};
use crate::extension::{Ctx, Effect, EnvCall, Extension, HartAccess, Instruction, Service};
use crate::fdt::{fdt_address, FDT_SIZE};
use crate::observer::Serviced;
use crate::observer::{Observer, Retired, TrapInfo};
use crate::uarch::{Uarch, UarchConfig};
use rvtrace_image::Image;
use rvtrace_isa::{classify, CfClass, IsaConfig, Xlen};
use std::io::Write;

/// Hart configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Base integer width.
    pub xlen: Xlen,
    /// Implemented extensions.
    pub ext: Extensions,
    /// RAM size in bytes (QEMU `virt` default 128 MiB).
    pub ram_size: u64,
    /// Performance counters (Zihpm, Sscofpmf, Smcntrpmf).
    pub counters: CounterConfig,
    /// The micro-architecture model behind the counters' events (`uarch`).
    pub uarch: UarchConfig,
    /// Smstateen: `mstateen0..3`/`sstateen0..3` exist and gate S-mode access to `senvcfg` and to
    /// the state of attached extensions that declare a bit ([`Extension::stateen_bits`]).
    /// QEMU 7.2's default CPU has no Smstateen; CTR (`run --ctr`) turns it on, as QEMU 10's
    /// `smstateen=true`.
    pub smstateen: bool,
    /// Sstc: the `stimecmp` CSR (`stimecmph` on RV32), enabled below M by `menvcfg.STCE`.
    /// QEMU 7.2's default CPU has it.
    pub sstc: bool,
}

impl Config {
    /// The QEMU `virt` machine for `xlen` (semihosting, as every environment-call service, is
    /// an extension its builder attaches: crate `rvtrace-semihost`).
    pub fn virt(xlen: Xlen) -> Config {
        Config {
            xlen,
            ext: Extensions::ALL,
            ram_size: DEFAULT_RAM_SIZE,
            counters: CounterConfig::default(),
            uarch: UarchConfig::default(),
            smstateen: false,
            sstc: true,
        }
    }
}

const ICACHE_BITS: u32 = 15;

#[derive(Clone, Copy, Default)]
struct Slot {
    pc: u64,
    raw: u32,
    mask: u32,
    insn: Insn,
    class: CfClass,
}

/// Decoded code: the decode cache and the pre-decoded blocks (`block.rs`). What they hold
/// follows from the code in memory (checked as it is used: a slot against the fetched bits, a
/// block against its page's code generation in the bus) and from the XLEN and extensions it was
/// decoded for, so one set serves every hart of a machine that run the same code (the harts of
/// a [`crate::machine::Machine`] share one, moved into the running hart with the bus: one set
/// in the host's caches instead of one per hart).
pub(crate) struct Decoded {
    icache: Vec<Slot>,
    blocks: crate::block::Blocks,
    /// What the decoding depends on besides the code.
    xlen: Xlen,
    ext: Extensions,
}

impl Decoded {
    /// An empty set for harts of `cfg`.
    pub(crate) fn new(cfg: &Config) -> Decoded {
        Decoded {
            icache: empty_icache(),
            blocks: Default::default(),
            xlen: cfg.xlen,
            ext: cfg.ext,
        }
    }
}

/// An empty decode cache: no instruction lives at pc 1.
fn empty_icache() -> Vec<Slot> {
    vec![
        Slot {
            pc: 1,
            ..Slot::default()
        };
        1 << ICACHE_BITS
    ]
}

/// A RISC-V hart on QEMU's `virt` machine.
pub struct Hart {
    /// Base integer width.
    pub xlen: Xlen,
    /// Implemented extensions.
    pub ext: Extensions,
    /// Integer registers. RV32 values are kept sign-extended to 64 bits.
    pub x: [u64; 32],
    /// Floating-point registers (FLEN = 64; single values NaN-boxed).
    pub f: [u64; 32],
    /// Program counter.
    pub pc: u64,
    /// Current privilege (0 U, 1 S, 3 M).
    pub priv_: u8,
    /// CSR state.
    pub csr: Csrs,
    /// Memory and devices.
    pub bus: Bus,
    /// Instructions retired so far (the trace view: `ecall`/`ebreak` included).
    pub instret: u64,
    /// Performance counters (`counters.rs`).
    pub counters: Counters,
    /// The micro-architecture model (`uarch`), consulted by the instrumented loop only: it
    /// starts cold when that loop first runs.
    pub uarch: Uarch,
    /// Run the instrumented loop (tallies for the counters, extension events).
    hooks: bool,
    /// Attached extensions (`extension.rs`), semihosting first when it is on.
    pub(crate) exts: crate::extension::Extensions,
    /// LR reservation: address and the value loaded (QEMU compares the value at SC).
    pub(crate) reservation: Option<(u64, u64)>,
    icache: Vec<Slot>,
    /// Pre-decoded blocks (`block.rs`).
    pub(crate) blocks: crate::block::Blocks,
    pub(crate) isa: IsaConfig,
    /// Run housekeeping (interrupts, timer, limits, stop requests) before the next instruction
    /// once `instret` reaches this.
    pub(crate) next_check: u64,
    pub(crate) stop: Option<Stop>,
    /// Trap-loop detection (`traploop.rs`).
    pub(crate) trap_loop: crate::traploop::TrapLoop,
    /// Smstateen is implemented ([`Config::smstateen`]).
    pub(crate) smstateen: bool,
    /// Sstc is implemented ([`Config::sstc`]).
    pub(crate) sstc: bool,
    /// Address translation's TLBs (`mmu.rs`).
    pub(crate) mmu: crate::mmu::Mmu,
    /// `mhartid`.
    pub(crate) id: usize,
    /// In a machine of several harts: the hart waits for an interrupt (`wfi`, an SBI suspend)
    /// and gives its turn away (`hart/smp.rs`).
    pub(crate) waiting: bool,
    /// An SBI call started this hart anew (a resume it asked for itself, `smp.rs`
    /// `take_mail`): the call's instruction continues there, not after itself.
    pub(crate) restarted: bool,
    /// The firmware asked for its interrupt handler before the next instruction
    /// ([`HartAccess::firmware_ipi`]).
    pub(crate) firmware_ipi: bool,
}

impl std::fmt::Debug for Hart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hart")
            .field("xlen", &self.xlen)
            .field("pc", &format_args!("{:#x}", self.pc))
            .field("priv", &self.priv_)
            .field("instret", &self.instret)
            .finish()
    }
}

impl Hart {
    /// A hart in the state QEMU's `virt` reset stub leaves it in when it jumps to `entry`
    /// (`a0` = hart id 0, `a1` = device tree address, `a2` = address of the `fw_dynamic` info,
    /// `t0` = entry; everything else zero; M-mode).
    pub fn new(cfg: &Config) -> Hart {
        let ext = cfg.ext;
        let mut misa_ext = 1 << 8; // I
        for (on, letter) in [
            (ext.a, b'A'),
            (ext.c, b'C'),
            (ext.d, b'D'),
            (ext.f, b'F'),
            (ext.m, b'M'),
            (ext.s, b'S'),
            (ext.u, b'U'),
        ] {
            if on {
                misa_ext |= 1 << (letter - b'A');
            }
        }
        let mut bus = Bus::new(cfg.ram_size);
        bus.pcie = crate::virt_io::PcieHost::new(cfg.xlen, cfg.ram_size);
        let mut hart = Hart {
            xlen: cfg.xlen,
            ext,
            x: [0; 32],
            f: [0; 32],
            pc: RAM_BASE,
            priv_: privilege::M,
            csr: Csrs::new(cfg.xlen, misa_ext),
            bus,
            instret: 0,
            counters: Counters::new(cfg.counters, cfg.xlen),
            uarch: Uarch::new(&cfg.uarch),
            hooks: false,
            exts: Default::default(),
            reservation: None,
            icache: empty_icache(),
            blocks: Default::default(),
            isa: IsaConfig::new(cfg.xlen),
            next_check: 0,
            stop: None,
            trap_loop: Default::default(),
            smstateen: cfg.smstateen,
            sstc: cfg.sstc,
            mmu: Default::default(),
            id: 0,
            waiting: false,
            restarted: false,
            firmware_ipi: false,
        };
        if let Some(t) = &cfg.uarch.timing {
            // The most one instruction can take: an AMO missing twice, a mispredict, a fetch
            // miss, a divide.
            let worst = 1
                + u64::from(t.mispredict + t.redirect + t.l1i_miss)
                + 2 * u64::from(t.l1d_miss)
                + u64::from(t.mul.max(t.div));
            hart.counters.set_timing(Some(worst));
        }
        hart.x[10] = 0;
        hart.x[11] = hart.sext(fdt_address(cfg.ram_size, FDT_SIZE));
        hart.x[12] = 0x1028;
        hart
    }

    /// Exchange the hart's decoded code with `d`'s: a machine's shared set comes to the running
    /// hart and goes back (`machine.rs`), the hart's own set standing in meanwhile. `d`'s XLEN
    /// and extensions stay with the shared set: one decoded for others is emptied on the way in.
    pub(crate) fn swap_decoded(&mut self, d: &mut Decoded) {
        std::mem::swap(&mut self.icache, &mut d.icache);
        std::mem::swap(&mut self.blocks, &mut d.blocks);
        if (d.xlen, d.ext) != (self.xlen, self.ext) {
            (d.xlen, d.ext) = (self.xlen, self.ext);
            self.flush_decode_caches();
        }
    }

    /// Load every file of `image` into RAM at the segments' physical addresses, set `pc` (and
    /// `t0`) to the entry of the first file, and find an HTIF `tohost` symbol.
    pub fn load(&mut self, image: &Image) -> Result<(), LoadError> {
        for seg in image.segments() {
            if seg.data.is_empty() {
                continue;
            }
            if !self.bus.write_ram(seg.paddr, &seg.data) {
                let file = image
                    .files()
                    .get(seg.file_index)
                    .map(|f| f.path.as_str())
                    .unwrap_or("?");
                // picolibc's default link puts code at 0x10000000 and data at 0x20000000;
                // its linker script takes the memory map from four symbols.
                return Err(LoadError(format!(
                    "{file}: segment at {:#x}..{:#x} is outside RAM ({:#x}..{:#x}); link the \
                     program for RAM at {:#x}, with picolibc: -Wl,--defsym=__flash={:#x} \
                     -Wl,--defsym=__flash_size=0x200000 -Wl,--defsym=__ram={:#x} \
                     -Wl,--defsym=__ram_size=0x200000 (README, \"Your own program\")",
                    seg.paddr,
                    seg.paddr + seg.data.len() as u64,
                    RAM_BASE,
                    RAM_BASE + self.bus.ram_size(),
                    RAM_BASE,
                    RAM_BASE,
                    RAM_BASE + 0x20_0000
                )));
            }
        }
        let entry = image.files().first().map(|f| f.entry).unwrap_or(RAM_BASE);
        self.pc = self.trunc(entry);
        self.x[5] = self.sext(entry);
        self.bus.tohost = image.symbol_by_name("tohost").map(|s| s.addr);
        Ok(())
    }

    /// Attach an extension ([`crate::extension`]). Extensions are asked in attach order.
    pub fn attach(&mut self, ext: Box<dyn Extension>) {
        let n = self.exts.list.len();
        self.attach_at(n, ext);
    }

    /// Attach an extension at position `index` of the attach order (at the end when `index` is
    /// past it): a service that must see its calls before the others (semihosting goes first).
    pub fn attach_at(&mut self, index: usize, ext: Box<dyn Extension>) {
        let at = index.min(self.exts.list.len());
        self.exts.list.insert(at, ext);
        self.exts.refresh();
        self.recheck();
    }

    /// The name of the extension at `index` in attach order ([`Serviced::by`]).
    pub fn extension_name(&self, index: u8) -> Option<&'static str> {
        self.exts.list.get(index as usize).map(|e| e.name())
    }

    /// The first attached extension of type `T`.
    pub fn extension_mut<T: Extension>(&mut self) -> Option<&mut T> {
        self.exts
            .list
            .iter_mut()
            .find_map(|e| e.downcast_mut::<T>())
    }

    /// Call `f` on each extension in order until one returns `Some`; the extensions act on the
    /// hart through a [`Ctx`]. Their register/memory writes wait in `exts.effects` for
    /// [`Hart::replay_effects`].
    pub(crate) fn each_extension<R>(
        &mut self,
        mut f: impl FnMut(&mut dyn Extension, &mut Ctx) -> Option<R>,
    ) -> Option<(usize, R)> {
        if self.exts.list.is_empty() {
            return None;
        }
        let mut list = std::mem::take(&mut self.exts.list);
        let mut effects = std::mem::take(&mut self.exts.effects);
        let mut out = None;
        for (i, e) in list.iter_mut().enumerate() {
            let mut ctx = Ctx {
                hart: self,
                effects: &mut effects,
            };
            if let Some(r) = f(e.as_mut(), &mut ctx) {
                out = Some((i, r));
                break;
            }
        }
        // Anything attached from inside a call joins the list after the existing ones.
        list.append(&mut self.exts.list);
        self.exts.list = list;
        self.exts.effects = effects;
        out
    }

    /// Report the register and memory writes extensions made to the observer.
    #[inline]
    pub(crate) fn replay_effects<O: Observer>(&mut self, obs: &mut O) {
        if self.exts.effects.is_empty() {
            return;
        }
        for e in self.exts.effects.drain(..) {
            match e {
                Effect::Gpr(rd, v) => obs.gpr_write(rd, v),
                Effect::Store(acc) => obs.mem_access(&acc),
            }
        }
    }

    /// Retire the `ecall`/`ebreak` (`len` bytes) at `pc` as a call serviced outside the hart,
    /// its results already applied by the caller: the same bookkeeping as for a call an
    /// extension services (the pc moves past it, it retires, and the counters count it as the
    /// exception it stands for, not as an instruction). For consumers that follow a trace (the
    /// tandem checker replays semihosting calls from it). Returns the next pc.
    pub fn retire_serviced_call(&mut self, len: u8) -> u64 {
        self.counters.bump(Tally::EnvCall, self.priv_);
        self.pc = self.trunc(self.pc.wrapping_add(len as u64));
        self.instret += 1;
        self.pc
    }

    /// Offer an `ecall`/`ebreak` to the extensions before it traps.
    #[cold]
    fn offer_env_call<O: Observer>(&mut self, obs: &mut O, call: &EnvCall) -> Option<Serviced> {
        self.restarted = false;
        let (by, service) = self.each_extension(|e, ctx| e.environment_call(ctx, call))?;
        self.replay_effects(obs);
        // What the call asked of this hart itself (an IPI or a fence to a mask that names it).
        self.take_mail();
        if let Service::Exit(code) = service {
            self.flush_output();
            self.stop = Some(Stop::Exit(code));
            self.recheck();
        }
        Some(Serviced {
            by: by as u8,
            cause: call.cause as u8,
        })
    }

    /// Whether the current privilege may access state guarded by `mstateen0` bit(s) `bit`
    /// (Smstateen: always in M-mode, and always without Smstateen).
    pub fn stateen_allows(&self, bit: u64) -> bool {
        !self.smstateen || self.priv_ == privilege::M || self.csr.mstateen[0] & bit == bit
    }

    /// Whether Smstateen is implemented ([`Config::smstateen`]).
    pub fn has_smstateen(&self) -> bool {
        self.smstateen
    }

    /// Whether Sstc is implemented ([`Config::sstc`]).
    pub fn has_sstc(&self) -> bool {
        self.sstc
    }

    /// Offer an undefined instruction to the extensions before it raises illegal-instruction;
    /// true if one executed it.
    #[cold]
    fn offer_instruction<O: Observer>(&mut self, obs: &mut O, pc: u64, insn: u32, len: u8) -> bool {
        let call = Instruction {
            pc,
            insn,
            len,
            priv_: self.priv_,
        };
        let done = self
            .each_extension(|e, ctx| e.instruction(ctx, &call).then_some(()))
            .is_some();
        self.replay_effects(obs);
        done
    }

    /// Current `mtime` (one tick per retired instruction plus what software wrote).
    #[inline(always)]
    pub fn mtime(&self) -> u64 {
        self.instret.wrapping_add(self.bus.clint.mtime_offset)
    }

    /// Value of `mip` including the CLINT's timer and software interrupt lines and the
    /// supervisor timer ([`Hart::set_stimecmp`]).
    pub fn mip(&self) -> u64 {
        let mut mip = self.csr.mip_sw;
        let mtime = self.mtime();
        if mtime >= self.bus.clint.mtimecmp[self.id] {
            mip |= irq::MTI;
        }
        // Sstc: with STCE, STIP is the comparison alone (read-only in `mip`); without, STIP is
        // software's bit, or-ed with the firmware's timer.
        if self.stce() {
            mip &= !irq::STI;
        }
        if self.stimer_drives_stip() && mtime >= self.csr.stimecmp {
            mip |= irq::STI;
        }
        if self.bus.clint.msip[self.id] {
            mip |= irq::MSI;
        }
        // The hart's PLIC contexts, M and S; SEIP reads as software's bit or-ed with it.
        if self.bus.plic.eip(2 * self.id) {
            mip |= irq::MEI;
        }
        if self.bus.plic.eip(2 * self.id + 1) {
            mip |= irq::SEI;
        }
        mip
    }

    /// Set the supervisor timer deadline as firmware does for an SBI `set_timer` (OpenSBI
    /// `sbi_timer_smode_event_start`): with Sstc enabled (`menvcfg.STCE`) it writes `stimecmp`;
    /// otherwise it clears STIP and arms its own timer, which makes STIP pending from the
    /// instruction boundary where `mtime >= deadline` on (`u64::MAX` never fires). Interrupts
    /// are re-checked before the next instruction.
    pub fn set_stimecmp(&mut self, deadline: u64) {
        self.write_stimecmp(deadline);
        if !self.stce() {
            self.csr.firmware_timer = true;
            self.csr.mip_sw &= !irq::STI;
        }
    }

    /// A write of the `stimecmp` CSR (Sstc): the timer compares from now on; with STCE 0 the
    /// comparison does not drive STIP ("reverts to its defined behavior as if this extension
    /// is not implemented"; QEMU 7.2 drives it regardless).
    pub(crate) fn write_stimecmp(&mut self, v: u64) {
        self.csr.stimecmp = v;
        self.csr.stimer_armed = true;
        self.csr.firmware_timer = false;
        self.recheck();
    }

    /// Sstc is implemented and enabled below M (`menvcfg.STCE`).
    #[inline]
    pub(crate) fn stce(&self) -> bool {
        self.sstc && self.csr.menvcfg & crate::csr::menvcfg::STCE != 0
    }

    /// Whether the `stimecmp` comparison drives STIP now.
    #[inline]
    pub(crate) fn stimer_drives_stip(&self) -> bool {
        self.csr.stimer_armed && (self.stce() || self.csr.firmware_timer)
    }

    /// The firmware's timer that has fired becomes a plain pending bit, as a firmware's timer
    /// handler sets it: software that then writes `mip.STIP` (allowed while STCE is 0) changes
    /// it, and it stays until then or the next deadline.
    pub(crate) fn latch_stimer(&mut self) {
        if !self.stce() && self.stimer_drives_stip() && self.mtime() >= self.csr.stimecmp {
            self.csr.mip_sw |= irq::STI;
            self.csr.stimer_armed = false;
        }
    }

    /// The earliest timer deadline (`mtimecmp`, `stimecmp`, the RTC's alarm) still in the
    /// future, if any.
    pub(crate) fn next_timer(&self) -> Option<u64> {
        let mtime = self.mtime();
        let stimer = if self.stimer_drives_stip() {
            self.csr.stimecmp
        } else {
            u64::MAX
        };
        let rtc = self.bus.rtc.deadline().unwrap_or(u64::MAX);
        [self.bus.clint.mtimecmp[self.id], stimer, rtc]
            .into_iter()
            .filter(|&d| d > mtime)
            .min()
    }

    /// Truncate an address/value to XLEN (zero-extending).
    #[inline(always)]
    pub fn trunc(&self, v: u64) -> u64 {
        match self.xlen {
            Xlen::Rv32 => v & 0xffff_ffff,
            Xlen::Rv64 => v,
        }
    }

    /// Sign-extend a value from XLEN to 64 bits (the register convention).
    #[inline(always)]
    pub fn sext(&self, v: u64) -> u64 {
        match self.xlen {
            Xlen::Rv32 => v as i32 as i64 as u64,
            Xlen::Rv64 => v,
        }
    }

    /// Ask for interrupts and stop conditions to be re-evaluated before the next instruction.
    #[inline(always)]
    pub(crate) fn recheck(&mut self) {
        self.next_check = 0;
    }

    /// Run until the program exits, `max_insns` more instructions retire, or an error stops it.
    pub fn run<O: Observer>(&mut self, obs: &mut O, max_insns: u64) -> Stop {
        match self.xlen {
            Xlen::Rv64 => self.run_xlen::<O, true>(obs, max_insns),
            Xlen::Rv32 => self.run_xlen::<O, false>(obs, max_insns),
        }
    }

    fn run_xlen<O: Observer, const RV64: bool>(&mut self, obs: &mut O, max_insns: u64) -> Stop {
        let limit = self.instret.saturating_add(max_insns);
        self.next_check = 0;
        // The privilege or `mstatus` may have been set from outside since the last run.
        self.pmp_refresh();
        loop {
            // Two loops: the plain one costs nothing for counters or extensions; the
            // instrumented one tallies events and calls extensions. Housekeeping switches.
            let stop = if self.hooks {
                self.run_loop::<O, RV64, true>(obs, limit)
            } else {
                self.run_loop::<O, RV64, false>(obs, limit)
            };
            if let Some(stop) = stop {
                return stop;
            }
        }
    }

    /// Run until a stop (`Some`) or until the loop kind must change (`None`).
    fn run_loop<O: Observer, const RV64: bool, const HOOKS: bool>(
        &mut self,
        obs: &mut O,
        limit: u64,
    ) -> Option<Stop> {
        loop {
            if self.instret >= self.next_check {
                if let Some(stop) = self.housekeeping(obs, limit) {
                    return Some(stop);
                }
                if self.hooks != HOOKS {
                    return None;
                }
                continue;
            }
            let pc = self.pc;
            if HOOKS {
                // TLB lookups are the retiring instruction's from its fetch on.
                self.mmu.take_events();
            } else if self.blocks.on && self.block_fetch(pc).is_some() {
                let ran = if O::QUIET {
                    self.run_quiet::<RV64>(pc)
                } else {
                    self.run_block::<O, RV64>(obs, pc)
                };
                match ran {
                    crate::block::Ran::Yes => continue,
                    crate::block::Ran::Stop(stop) => return Some(stop),
                    crate::block::Ran::No => {}
                }
            }
            let raw = match self.bus.fast_fetch(pc, self.bus.open.fetch) {
                Some(raw) => raw,
                // Sdtrig: an instruction address breakpoint comes before the fetch.
                None if self.csr.trig.exec_hit(pc, self.priv_) => {
                    self.exec_trigger_trap(obs, pc);
                    continue;
                }
                None => match self.fetch_checked(pc) {
                    Ok(raw) => raw,
                    Err(exc) => {
                        self.fetch_fault(obs, pc, exc);
                        continue;
                    }
                },
            };
            let idx = ((pc >> 1) as usize) & ((1 << ICACHE_BITS) - 1);
            let slot = &self.icache[idx];
            let (insn, class) = if slot.pc == pc && raw & slot.mask == slot.raw {
                (slot.insn, slot.class)
            } else {
                // `raw` holds a whole instruction: the fast path reads 4 bytes of RAM, and
                // `fetch_checked` checks the second parcel of a 32-bit one.
                let insn = decode(raw, self.xlen, &self.ext);
                let info = classify(&self.isa, raw);
                let mask = if insn.len == 2 { 0xffff } else { 0xffff_ffff };
                self.icache[idx] = Slot {
                    pc,
                    raw: raw & mask,
                    mask,
                    insn,
                    class: info.class,
                };
                (insn, info.class)
            };
            let bits = if insn.len == 2 { raw & 0xffff } else { raw };
            let prev_priv = self.priv_;
            let mut serviced = None;
            let mut accesses = crate::probe::Accesses::EMPTY;
            let result = if HOOKS {
                let mut probe = crate::probe::Probe {
                    obs: &mut *obs,
                    acc: &mut accesses,
                };
                self.execute::<_, RV64>(&mut probe, &insn, bits, pc)
            } else {
                self.execute::<O, RV64>(obs, &insn, bits, pc)
            };
            let (next, trap) = match result {
                Ok(next) => (next, None),
                // ecall/ebreak retire with an exception (E-Trace itype 1, N-Trace Table 2).
                // (A trigger's breakpoint on a load or store does not retire the instruction.)
                Err(exc)
                    if matches!(
                        exc.cause,
                        cause::BREAKPOINT | cause::ECALL_U | cause::ECALL_S | cause::ECALL_M
                    ) && matches!(insn.op, Op::Ecall | Op::Ebreak) =>
                {
                    let call = EnvCall {
                        pc,
                        insn: bits,
                        cause: exc.cause,
                        priv_: self.priv_,
                    };
                    // Not retired for the counters, whether it traps or is serviced in place
                    // of the exception (the firmware's work is invisible); counted before the
                    // service so that counters it reads already see it so.
                    self.counters.bump(Tally::EnvCall, self.priv_);
                    if let Some(s) = self.offer_env_call(obs, &call) {
                        serviced = Some(s);
                        if std::mem::take(&mut self.restarted) {
                            // A resume the call asked for (SBI SUSP, non-retentive suspend).
                            (self.pc, None)
                        } else {
                            (self.trunc(pc.wrapping_add(insn.len as u64)), None)
                        }
                    } else {
                        let trap = self.take_trap_retiring(exc.cause, exc.tval, false, pc, true);
                        (trap.handler, Some(trap))
                    }
                }
                // An encoding the base ISA does not define: an extension may implement it.
                Err(_)
                    if insn.op == Op::Illegal
                        && !self.exts.list.is_empty()
                        && self.offer_instruction(obs, pc, bits, insn.len) =>
                {
                    (self.trunc(pc.wrapping_add(insn.len as u64)), None)
                }
                // Any other exception: the instruction does not retire.
                Err(exc) => {
                    if let Some(stop) = self.instruction_fault(obs, pc, exc) {
                        return Some(stop);
                    }
                    continue;
                }
            };
            self.pc = next;
            self.instret += 1;
            self.trap_loop.last_handler = None;
            self.trap_loop.traps_without_retire = 0;
            let ev = Retired {
                pc,
                insn: bits,
                len: insn.len,
                class,
                next_pc: next,
                priv_: prev_priv,
                trap,
                serviced,
                mtime: self.instret.wrapping_add(self.bus.clint.mtime_offset),
            };
            obs.retire(&ev);
            if HOOKS {
                self.account(&insn, &ev, &accesses);
                if self.exts.events {
                    self.extensions_retire(obs, &ev);
                }
            }
            if obs.stop_requested() {
                return Some(Stop::Requested);
            }
        }
    }

    /// A fetch outside the PMP fast path: the 16-bit parcel at `pc` (RAM, ROM, or the last two
    /// bytes of RAM), translated when fetches are (`mmu.rs`), PMP-checked, and for a 32-bit
    /// instruction the parcel at `pc + 2` too. The privileged ISA allows a fetch to be done in
    /// parcels; each parcel is one PMP access (a fault in the second has `tval` = `pc + 2`, as
    /// QEMU 7.2 reports it when the instruction crosses a page; within a page QEMU 7.2 does not
    /// check the second parcel: see crates/sim/README.md, "PMP").
    #[cold]
    #[inline(never)]
    fn fetch_checked(&mut self, pc: u64) -> Result<u32, Exc> {
        if let Some(pa) = self.mmu.recent(pc, 4, 0) {
            if let Some(raw) = self.bus.fast_fetch(pa, self.bus.ram_size()) {
                return Ok(raw);
            }
        }
        let translate = self.translating().0;
        let pa = if translate {
            self.translate_fetch(pc)?
        } else {
            pc
        };
        let lo = self.fetch_parcel(pc, pa)?;
        if lo & 3 != 3 {
            return Ok(lo);
        }
        let hi_va = self.trunc(pc.wrapping_add(2));
        // The second parcel is translated on its own when it starts a page.
        let hi_pa = if translate && hi_va & 0xfff == 0 {
            self.translate_fetch(hi_va)?
        } else {
            pa.wrapping_add(2)
        };
        let hi = self.fetch_parcel(hi_va, hi_pa)?;
        Ok(lo & 0xffff | hi << 16)
    }

    /// The 16-bit parcel at virtual address `va`, physical `pa`: PMP-checked, fetched.
    fn fetch_parcel(&mut self, va: u64, pa: u64) -> Result<u32, Exc> {
        use crate::pmp::Access;
        let fault = Exc {
            cause: cause::INSN_ACCESS,
            tval: va,
        };
        if !self.csr.pmp.check(pa, 2, Access::Exec, self.priv_) {
            return Err(fault);
        }
        self.bus.fetch16(pa).map(u32::from).ok_or(fault)
    }

    /// The privilege loads and stores are checked at: `mstatus.MPP` in M-mode with
    /// `mstatus.MPRV` set (privileged ISA, "Memory Privilege in mstatus Register"; fetches
    /// use the current privilege).
    #[inline]
    pub(crate) fn data_priv(&self) -> u8 {
        if self.priv_ == privilege::M && self.csr.mstatus & mstatus::MPRV != 0 {
            ((self.csr.mstatus & mstatus::MPP) >> 11) as u8
        } else {
            self.priv_
        }
    }

    /// Let S and U access everything: PMP entry 0 NAPOT over the whole address space with R, W
    /// and X (the test programs' `pmp_open_all`, OpenSBI's last entry). A hart starts with no
    /// PMP entry, so S and U can access nothing (privileged ISA, "Physical Memory
    /// Protection"); for tests and tools that run code below M without firmware. False if
    /// entry 0 is locked.
    pub fn pmp_allow_all(&mut self) -> bool {
        use crate::pmp::cfg;
        self.csr.pmp.write_addr(0, u64::MAX);
        self.csr
            .pmp
            .write_cfg(0, cfg::NAPOT | cfg::R | cfg::W | cfg::X);
        self.pmp_refresh();
        self.csr.pmp.cfg(0) & cfg::L == 0
    }

    /// Recompute the PMP fast path after a change of the PMP registers, `mstatus` (MPRV, MPP)
    /// or the privilege: each kind of access skips the PMP check while PMP allows it on all of
    /// RAM at the privilege it is checked at (one entry covers RAM, or none does in M-mode);
    /// otherwise every access of the kind is checked. A kind a debug trigger watches at the
    /// current privilege is checked too (`trigger.rs`).
    pub(crate) fn pmp_refresh(&mut self) {
        use crate::pmp::Access;
        let size = self.bus.ram_size();
        let (lo, hi) = (RAM_BASE, RAM_BASE + size.max(1) - 1);
        let pmp = &self.csr.pmp;
        let open = |access, p| {
            if pmp.uniform(lo, hi, access, p) == Some(true) {
                size
            } else {
                0
            }
        };
        let d = self.data_priv();
        let mut o = crate::bus::OpenRam {
            load: open(Access::Read, d),
            store: open(Access::Write, d),
            fetch: open(Access::Exec, self.priv_),
        };
        // Translated accesses take the checked paths (`mmu.rs`), where the recent pages of each
        // kind need no PMP check: PMP allows the kind on all of RAM, or on each such page.
        self.mmu.unchecked = [o.fetch != 0, o.load != 0, o.store != 0];
        // A walk's PTE reads are S-mode loads whatever the privilege (`Hart::walk`).
        self.mmu.pte_reads = open(Access::Read, crate::arch::privilege::S);
        // The recent pages stay while what they were made under stays (with several harts
        // every turn starts here: forgetting them at each would cost a translation per page
        // per turn).
        let key = crate::mmu::MemoKey {
            priv_: self.priv_,
            mstatus: self.csr.mstatus & crate::mmu::MEMO_MSTATUS,
            satp: self.csr.satp,
            pmp: self.csr.pmp.registers(),
            armed: self.csr.trig.armed,
        };
        if self.mmu.key != Some(key) {
            self.mmu.forget_pages();
            self.mmu.key = Some(key);
        }
        self.csr.trig.restrict(self.priv_, &mut o);
        let mut watched = crate::bus::OpenRam {
            load: 1,
            store: 1,
            fetch: 1,
        };
        self.csr.trig.restrict(self.priv_, &mut watched);
        let (fetch, data) = self.translating();
        // Blocks use the recently translated pages of the kinds no trigger watches.
        self.mmu.in_blocks = [
            fetch && watched.fetch != 0,
            data && watched.load != 0,
            data && watched.store != 0,
        ];
        if fetch {
            o.fetch = 0;
        }
        if data {
            o.load = 0;
            o.store = 0;
        }
        self.bus.open = o;
    }

    #[cold]
    fn fetch_fault<O: Observer>(&mut self, obs: &mut O, pc: u64, exc: Exc) {
        if self.trap_loop.last_handler == Some(pc) {
            let msg = self.runaway_message(pc);
            self.stop = Some(Stop::Error(msg));
            self.recheck();
            return;
        }
        let trap = self.take_trap(exc.cause, exc.tval, false, pc);
        obs.trap(&trap);
        self.note_fault(trap);
        if obs.stop_requested() {
            self.stop = Some(Stop::Requested);
            self.recheck();
        }
    }

    /// Timer, interrupts, limits and stop requests; runs when `instret` reaches `next_check`.
    #[cold]
    fn housekeeping<O: Observer>(&mut self, obs: &mut O, limit: u64) -> Option<Stop> {
        if let Some(stop) = self.stop.take() {
            return Some(stop);
        }
        if let Some(BusExit::Exit(code)) = self.bus.exit.take() {
            return Some(Stop::Exit(code));
        }
        self.bus.irq_dirty = false;
        if self.bus.rtc.fire(self.mtime()) {
            self.bus.rtc_irq();
        }
        self.counter_housekeeping();
        if self.instret >= limit {
            self.next_check = 0;
            return Some(Stop::InsnLimit);
        }
        if std::mem::take(&mut self.firmware_ipi) {
            self.firmware_handler(obs, crate::extension::FIRMWARE_IPI, |e, ctx| {
                e.firmware_ipi(ctx);
                None
            });
            if obs.stop_requested() {
                return Some(Stop::Requested);
            }
        }
        if let Some(c) = self.pending_interrupt() {
            // An interrupt into M-mode goes to the firmware the extensions stand for first;
            // one it handled but left pending is taken into M below.
            let to_m = self.priv_ == privilege::M || self.csr.mideleg >> c & 1 == 0;
            if to_m
                && !self.exts.list.is_empty()
                && self.firmware_handler(obs, c, |e, ctx| e.machine_interrupt(ctx, c).then_some(()))
                && self.pending_interrupt() != Some(c)
            {
                self.next_check = 0;
                if obs.stop_requested() {
                    return Some(Stop::Requested);
                }
                return None;
            }
        }
        if let Some(c) = self.pending_interrupt() {
            let epc = self.pc;
            let trap = self.take_trap(c, 0, true, epc);
            obs.trap(&trap);
            self.note_fault(trap);
            self.next_check = 0;
            if obs.stop_requested() {
                return Some(Stop::Requested);
            }
            return None;
        }
        // Nothing to do now: sleep until the timer fires or the limit is reached. Everything
        // else that can change interrupt state calls `recheck`.
        let mut next = limit;
        if let Some(deadline) = self.next_timer() {
            next = next.min(self.instret.saturating_add(deadline - self.mtime()));
        }
        next = next.min(
            self.instret
                .saturating_add(self.counters.horizon(self.instret)),
        );
        self.next_check = next;
        None
    }

    /// Run the firmware's handler `f` for interrupt `cause` on each extension until one
    /// handles it ([`Extension::machine_interrupt`], [`Extension::firmware_ipi`]); true if one
    /// did. When the handler moved the hart, the observer sees the interrupt with the new pc
    /// as its handler: the firmware's trap and `mret` collapsed, as a serviced `ecall` stands
    /// for the firmware's exception path.
    #[cold]
    fn firmware_handler<O: Observer>(
        &mut self,
        obs: &mut O,
        cause: u64,
        f: impl FnMut(&mut dyn Extension, &mut Ctx) -> Option<()>,
    ) -> bool {
        let (epc, from) = (self.pc, self.priv_);
        let handled = self.each_extension(f).is_some();
        self.restarted = false;
        self.replay_effects(obs);
        // What the handler asked of this hart itself.
        self.take_mail();
        if self.pc != epc || self.priv_ != from {
            let trap = TrapInfo {
                cause,
                tval: 0,
                interrupt: true,
                epc,
                from_priv: from,
                to_priv: self.priv_,
                handler: self.pc,
                mstatus: self.csr.mstatus,
            };
            obs.trap(&trap);
        }
        self.recheck();
        handled
    }

    /// Counter work between instructions: follow the privilege, apply queued counter writes,
    /// detect overflows (Sscofpmf: LCOFI), and choose the loop.
    fn counter_housekeeping(&mut self) {
        if self.counters.mode() != self.priv_ {
            // Changed behind the hart's back (a consumer that drives the hart's state).
            self.counters.set_mode(self.priv_, self.instret);
            self.pmp_refresh();
        }
        let c = &mut self.counters;
        let mut lcofi = c.has_pending() && c.apply_pending(self.instret);
        lcofi |= c.check_overflow(self.instret);
        if lcofi {
            self.csr.mip_sw |= irq::LCOFI;
        }
        self.hooks = self.counters.needs_tallies() || self.exts.events;
    }

    /// The highest-priority interrupt that is pending, enabled and takeable now
    /// (privileged ISA, "Machine Interrupt Registers": priority MEI, MSI, MTI, SEI, SSI, STI).
    pub fn pending_interrupt(&self) -> Option<u64> {
        let pending = self.mip() & self.csr.mie;
        if pending == 0 {
            return None;
        }
        let m_on = self.priv_ < privilege::M || self.csr.mstatus & mstatus::MIE != 0;
        let s_on = self.priv_ < privilege::S
            || (self.priv_ == privilege::S && self.csr.mstatus & mstatus::SIE != 0);
        let m_ints = if m_on { pending & !self.csr.mideleg } else { 0 };
        let s_ints = if s_on { pending & self.csr.mideleg } else { 0 };
        let ints = if m_ints != 0 { m_ints } else { s_ints };
        irq::PRIORITY.into_iter().find(|&c| ints & (1 << c) != 0)
    }

    /// Enter a trap (privileged ISA, "Trap delegation registers" and `mstatus` stack rules):
    /// `xepc`, `xcause`, `xtval`, `mstatus`, the privilege and the pc as the hart does it. Public
    /// for consumers that drive a hart (the tandem checker injects the interrupts a trace reports).
    pub fn take_trap(&mut self, code: u64, tval: u64, interrupt: bool, epc: u64) -> TrapInfo {
        self.take_trap_retiring(code, tval, interrupt, epc, false)
    }

    /// [`Hart::take_trap`]; `retiring` for the exception of an `ecall`/`ebreak`, which retires
    /// (in the mode it executed in) without counting as retired for the counters.
    pub(crate) fn take_trap_retiring(
        &mut self,
        code: u64,
        tval: u64,
        interrupt: bool,
        epc: u64,
        retiring: bool,
    ) -> TrapInfo {
        let from = self.priv_;
        self.counters.bump(
            if interrupt {
                Tally::Interrupt
            } else {
                Tally::Exception
            },
            from,
        );
        let deleg = if interrupt {
            self.csr.mideleg
        } else {
            self.csr.medeleg
        };
        let to_s = from <= privilege::S && self.ext.s && (deleg >> code) & 1 == 1;
        let int_bit = if interrupt {
            1u64 << (self.xlen.bits() - 1)
        } else {
            0
        };
        let tvec;
        if to_s {
            self.csr.sepc = epc;
            self.csr.scause = code | int_bit;
            self.csr.stval = tval;
            self.priv_ = privilege::S;
            tvec = self.csr.stvec;
        } else {
            self.csr.mepc = epc;
            self.csr.mcause = code | int_bit;
            self.csr.mtval = tval;
            self.priv_ = privilege::M;
            tvec = self.csr.mtvec;
        }
        self.csr.mstatus = mstatus::after_trap(self.csr.mstatus, from, self.priv_);
        self.pmp_refresh();
        self.counters
            .set_mode(self.priv_, self.instret + retiring as u64);
        let base = tvec & !3;
        let handler = if interrupt && tvec & 3 == 1 {
            base + 4 * code
        } else {
            base
        };
        let handler = self.trunc(handler);
        self.pc = handler;
        self.recheck();
        let trap = TrapInfo {
            cause: code,
            tval,
            interrupt,
            epc,
            from_priv: from,
            to_priv: self.priv_,
            handler,
            mstatus: self.csr.mstatus,
        };
        self.note_trap(&trap);
        // Every extension sees traps (a cold path: no instrumented loop needed for them).
        if !self.exts.list.is_empty() {
            self.each_extension(|e, ctx| {
                e.trap(ctx, &trap);
                None::<()>
            });
        }
        trap
    }

    /// Send the program's console output (semihosting stdout, UART, HTIF) to our stderr, so that
    /// our stdout can carry something else (`rvtrace run --pcs -`).
    pub fn program_output_to_stderr(&mut self) {
        use std::io::IsTerminal;
        let tty = std::io::stderr().is_terminal();
        for e in self.exts.list.iter_mut() {
            e.redirect_output(Box::new(std::io::stderr()), tty);
        }
        self.bus.console = Box::new(std::io::stderr());
    }

    /// Flush the program's buffered console output (extensions such as semihosting, and UART).
    pub fn flush_output(&mut self) {
        for e in self.exts.list.iter_mut() {
            e.flush();
        }
        let _ = self.bus.console.flush();
    }

    /// Read a value from RAM for the outside world (tests, tools). `None` if outside RAM.
    pub fn read_memory(&self, addr: u64, buf: &mut [u8]) -> bool {
        self.bus.read_ram(addr, buf)
    }
}

/// The hart as its extensions see it ([`crate::extension::Ctx`]).
impl HartAccess for Hart {
    fn xlen(&self) -> Xlen {
        self.xlen
    }
    fn isa_extensions(&self) -> &Extensions {
        &self.ext
    }
    fn x(&self) -> &[u64; 32] {
        &self.x
    }
    fn privilege(&self) -> u8 {
        self.priv_
    }
    fn instret(&self) -> u64 {
        self.instret
    }
    fn counters(&self) -> &Counters {
        &self.counters
    }
    fn uarch(&self) -> &Uarch {
        &self.uarch
    }
    fn trunc(&self, v: u64) -> u64 {
        Hart::trunc(self, v)
    }
    fn csr_read(&mut self, csr: u16) -> Option<u64> {
        Hart::csr_read(self, csr)
    }
    fn csr_write(&mut self, csr: u16, v: u64) -> bool {
        Hart::csr_write(self, csr, v)
    }
    fn set_stimecmp(&mut self, deadline: u64) {
        Hart::set_stimecmp(self, deadline)
    }
    fn idle_until_interrupt(&mut self) -> bool {
        Hart::idle_until_interrupt(self)
    }
    fn stateen_allows(&self, bit: u64) -> bool {
        Hart::stateen_allows(self, bit)
    }
    fn semihosting_sequence_at(&self, pc: u64) -> bool {
        Hart::semihosting_sequence_at(self, pc)
    }
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> bool {
        self.bus.read_ram(addr, buf)
    }
    fn write_memory_unreported(&mut self, addr: u64, data: &[u8]) -> bool {
        self.bus.write_ram(addr, data)
    }
    fn set_x_unreported(&mut self, r: u8, v: u64) -> u64 {
        let v = self.sext(v);
        self.x[r as usize & 31] = v;
        v
    }
    fn set_pending(&mut self, mask: u64, on: bool) {
        if on {
            self.csr.mip_sw |= mask;
        } else {
            self.csr.mip_sw &= !mask;
        }
        self.recheck();
    }
    fn request_stop(&mut self) {
        self.stop = Some(Stop::Requested);
        self.recheck();
    }
    fn touched_io(&mut self) {
        self.bus.io_touched = true;
    }
    fn uart_read(&mut self, buf: &mut [u8]) -> Option<usize> {
        self.bus.io_touched = true;
        self.bus.uart_read(buf)
    }
    fn hart_id(&self) -> usize {
        self.id
    }
    fn suspend(&mut self, resume: Option<(u64, u64)>) -> bool {
        Hart::suspend(self, resume)
    }
    fn shared(&mut self) -> &mut crate::smp::Shared {
        &mut self.bus.harts
    }
    fn pc(&self) -> u64 {
        self.pc
    }
    fn resume_at(&mut self, pc: u64, priv_: u8) {
        self.pc = self.trunc(pc);
        self.priv_ = priv_.min(privilege::S);
        self.restarted = true;
        self.pmp_refresh();
        // The counters follow the privilege at the housekeeping before the next instruction
        // (`counter_housekeeping`), after an `ecall` that goes on here has retired in its own.
        self.recheck();
    }
    fn firmware_ipi(&mut self) {
        self.firmware_ipi = true;
        self.recheck();
    }
}
