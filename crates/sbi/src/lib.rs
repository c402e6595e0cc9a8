//! A built-in SBI implementation (RISC-V Supervisor Binary Interface v3.0) for the hart model.
//!
//! [`Sbi`] is a [`rvtrace_sim::extension::Extension`]: it services every `ecall` from S-mode
//! (`EnvCall.cause == 9`) the way a hypervisor services its guest's SBI calls, so an S-mode
//! payload runs on the hart without machine-mode firmware. Calling convention: SBI v3.0
//! "Binary Encoding" (EID in `a7`, FID in `a6`, arguments `a0..a5`, `a0` = error, `a1` =
//! value; legacy extensions return in `a0` only). Extensions: Base, TIME, IPI, RFENCE, HSM,
//! SRST, PMU (every function, `pmu.rs`), DBCN, SUSP, FWFT (`fwft.rs`), DBTR (`dbtr.rs`), SSE
//! (`sse.rs`), and the legacy console putchar/getchar. The
//! crate README lists every function, its answers, and each choice made where the
//! specification leaves one.
//!
//! One [`Sbi`] is attached to each hart of the machine; harts reach each other through the
//! machine's shared state (`rvtrace_sim::smp`): IPIs, remote fences and HSM requests take
//! effect on the target hart before its next instruction.
#![warn(missing_docs)]

use rvtrace_isa::Xlen;
use rvtrace_sim::csr::num;
use rvtrace_sim::extension::{Ctx, EnvCall, Extension, Service};
use rvtrace_sim::smp::{HsmState, Mail};
use std::io::{Read, Write};

mod dbtr;
mod fwft;
mod pmu;
mod sse;

pub use fwft::feature as fwft_feature;
pub use pmu::{FW_COUNTED, FW_COUNTERS, FW_EVENTS};
pub use sse::{attr as sse_attr, event as sse_event, state as sse_state};

/// SBI error codes (SBI v3.0 "Binary Encoding", table "Standard SBI Errors").
pub mod error {
    /// Completed successfully.
    pub const SUCCESS: i64 = 0;
    /// Failed.
    pub const FAILED: i64 = -1;
    /// Not supported.
    pub const NOT_SUPPORTED: i64 = -2;
    /// Invalid parameter(s).
    pub const INVALID_PARAM: i64 = -3;
    /// Denied or not allowed.
    pub const DENIED: i64 = -4;
    /// Invalid address(s).
    pub const INVALID_ADDRESS: i64 = -5;
    /// Already available.
    pub const ALREADY_AVAILABLE: i64 = -6;
    /// Already started.
    pub const ALREADY_STARTED: i64 = -7;
    /// Already stopped.
    pub const ALREADY_STOPPED: i64 = -8;
    /// Shared memory not available.
    pub const NO_SHMEM: i64 = -9;
    /// Invalid state.
    pub const INVALID_STATE: i64 = -10;
    /// Bad (or invalid) range.
    pub const BAD_RANGE: i64 = -11;
    /// Denied or not allowed due to lock status.
    pub const DENIED_LOCKED: i64 = -14;
}

/// Extension IDs this implementation knows (SBI v3.0, each extension's chapter title).
pub mod eid {
    /// Legacy Set Timer (not implemented: probe answers 0).
    pub const LEGACY_SET_TIMER: u64 = 0x00;
    /// Legacy Console Putchar.
    pub const LEGACY_CONSOLE_PUTCHAR: u64 = 0x01;
    /// Legacy Console Getchar.
    pub const LEGACY_CONSOLE_GETCHAR: u64 = 0x02;
    /// Base.
    pub const BASE: u64 = 0x10;
    /// Timer, "TIME".
    pub const TIME: u64 = 0x5449_4D45;
    /// IPI, "sPI".
    pub const IPI: u64 = 0x73_5049;
    /// Remote fence, "RFNC".
    pub const RFENCE: u64 = 0x5246_4E43;
    /// Hart state management, "HSM".
    pub const HSM: u64 = 0x48_534D;
    /// System reset, "SRST".
    pub const SRST: u64 = 0x5352_5354;
    /// Performance monitoring unit, "PMU".
    pub const PMU: u64 = 0x50_4D55;
    /// Debug console, "DBCN".
    pub const DBCN: u64 = 0x4442_434E;
    /// System suspend, "SUSP".
    pub const SUSP: u64 = 0x5355_5350;
    /// Firmware features, "FWFT".
    pub const FWFT: u64 = 0x4657_4654;
    /// Debug triggers, "DBTR".
    pub const DBTR: u64 = 0x4442_5452;
    /// Supervisor software events, "SSE".
    pub const SSE: u64 = 0x53_5345;
}

/// The extensions [`Sbi`] implements: `sbi_probe_extension` answers 1 for these, 0 otherwise.
pub const EXTENSIONS: [u64; 14] = [
    eid::LEGACY_CONSOLE_PUTCHAR,
    eid::LEGACY_CONSOLE_GETCHAR,
    eid::BASE,
    eid::TIME,
    eid::IPI,
    eid::RFENCE,
    eid::HSM,
    eid::SRST,
    eid::PMU,
    eid::DBCN,
    eid::SUSP,
    eid::FWFT,
    eid::DBTR,
    eid::SSE,
];

/// `sbi_get_spec_version`: SBI 3.0 (Base extension: minor in bits 23..0, major in 30..24).
pub const SPEC_VERSION: u64 = 3 << 24;

/// `sbi_get_impl_id`: 0x5256_5452 ("RVTR"). The SBI v3.0 Base chapter's table "SBI
/// Implementation IDs" assigns 0..=11 (BBL .. bhyve); this value is far outside it.
pub const IMPL_ID: u64 = 0x5256_5452;

/// `sbi_get_impl_version`: the crate version as `major << 16 | minor` (OpenSBI's layout).
pub const IMPL_VERSION: u64 = 1;

/// The first hart (the one that enters the payload).
pub const HART_ID: u64 = 0;

/// HSM hart state STARTED (SBI v3.0 HSM, table "HSM Hart States").
pub const HSM_STARTED: u64 = 0;

/// Ticks from `set_timer`'s `stime_value` to the timer event (10 µs at the device tree's
/// 10 MHz `timebase-frequency`), standing for the firmware's timer path (an M-mode interrupt
/// whose handler makes STIP pending); a chosen figure, not a measured one. Without it the
/// event would come at the instruction boundary where `time` reaches `stime_value`: as `time`
/// ticks once per retired instruction, that is right after the instruction that read
/// `stime_value - 1`, so a program that reads `time` and then looks whether the interrupt came
/// (kvm-unit-tests' riscv/sbi "timer delay honored") finds it before the deadline. On hardware
/// a tick is many instructions and that race is rare; here it decided the measure every time.
pub const TIMER_LATENCY: u64 = 100;

/// `hart_suspend`'s default retentive and non-retentive types (SBI v3.0 HSM, table "HSM Hart
/// Suspend Types").
const SUSPEND_RETENTIVE: u32 = 0x0000_0000;
const SUSPEND_NON_RETENTIVE: u32 = 0x8000_0000;

/// `sbi_system_suspend`'s SUSPEND_TO_RAM (SBI v3.0 SUSP, table "SUSP System Sleep Types").
const SUSPEND_TO_RAM: u32 = 0;

/// Largest ASID `sbi_remote_sfence_vma_asid` accepts: `satp.ASID` is 16 bits on RV64 and 9 on
/// RV32 (privileged ISA, "Supervisor Address Translation and Protection Register").
fn max_asid(xlen: Xlen) -> u64 {
    match xlen {
        Xlen::Rv64 => 0xffff,
        Xlen::Rv32 => 0x1ff,
    }
}

/// Where console bytes go and come from.
pub struct SbiConfig {
    /// DBCN writes and legacy putchar.
    pub console: Box<dyn Write + Send>,
    /// DBCN reads and legacy getchar. A read returns what one `read` call gives (at least one
    /// byte unless at end of input, where DBCN reads return 0 bytes and getchar -1).
    pub input: ConsoleInput,
}

/// Where the SBI console's reads come from.
pub enum ConsoleInput {
    /// A reader of the SBI's own.
    Reader(Box<dyn Read + Send>),
    /// The machine's UART, shared with the supervisor's serial driver as OpenSBI's console is
    /// the 16550: what the driver has not taken, the SBI reads ([`rvtrace_sim::bus::Bus::uart_read`]).
    Uart,
}

impl SbiConfig {
    /// The console on our stdout, input from our stdin.
    pub fn stdio() -> SbiConfig {
        SbiConfig {
            console: Box::new(std::io::stdout()),
            input: ConsoleInput::Reader(Box::new(std::io::stdin())),
        }
    }

    /// The console on our stdout, input from the machine's UART (which the caller gives an
    /// input: `Bus::uart_input`).
    pub fn stdout_and_uart() -> SbiConfig {
        SbiConfig {
            console: Box::new(std::io::stdout()),
            input: ConsoleInput::Uart,
        }
    }

    /// Output discarded, input empty (for tests and runs that do not use the console).
    pub fn null() -> SbiConfig {
        SbiConfig {
            console: Box::new(std::io::sink()),
            input: ConsoleInput::Reader(Box::new(std::io::empty())),
        }
    }
}

/// The built-in SBI implementation; attach it with [`rvtrace_sim::Hart::attach`].
pub struct Sbi {
    cfg: SbiConfig,
    pub(crate) pmu: pmu::Pmu,
    fwft: fwft::Fwft,
    dbtr: dbtr::Dbtr,
    sse: sse::Sse,
}

/// An SBI function's result: `(error, value)` (`struct sbiret`).
pub(crate) type SbiRet = (i64, u64);

fn ok(v: u64) -> SbiRet {
    (error::SUCCESS, v)
}

fn err(e: i64) -> SbiRet {
    (e, 0)
}

/// The arguments of a call, XLEN-truncated.
pub(crate) struct Args {
    pub a: [u64; 6],
    pub xlen: Xlen,
}

impl Args {
    /// A 64-bit parameter at argument `i` (RV32: the pair `a[i]` low, `a[i+1]` high; SBI v3.0
    /// "Binary Encoding": 2×XLEN parameters in a register pair, low half first).
    pub fn u64_at(&self, i: usize) -> u64 {
        match self.xlen {
            Xlen::Rv64 => self.a[i],
            Xlen::Rv32 => self.a[i] | self.a.get(i + 1).copied().unwrap_or(0) << 32,
        }
    }

    /// A physical address passed as `lo`, `hi` at arguments `i`, `i+1`; `None` when it is not
    /// below 2^64 (RV64 with `hi != 0`): no such address is accessible.
    pub fn phys_at(&self, i: usize) -> Option<u64> {
        let (lo, hi) = (self.a[i], self.a[i + 1]);
        match self.xlen {
            Xlen::Rv64 => (hi == 0).then_some(lo),
            Xlen::Rv32 => Some(lo | hi << 32),
        }
    }

    /// A `uint32_t` parameter (the ABI sign-extends it into the register).
    pub fn u32_at(&self, i: usize) -> u32 {
        self.a[i] as u32
    }

    /// All-ones at XLEN (the `-1` of `unsigned long` parameters).
    pub fn all_ones(&self) -> u64 {
        match self.xlen {
            Xlen::Rv64 => u64::MAX,
            Xlen::Rv32 => 0xffff_ffff,
        }
    }
}

/// Whether `[addr, addr + len)` lies in guest RAM (`len > 0`; RAM is one contiguous range,
/// so its two ends decide).
pub(crate) fn in_ram(ctx: &Ctx, addr: u64, len: u64) -> bool {
    let Some(last) = len.checked_sub(1).and_then(|l| addr.checked_add(l)) else {
        return false;
    };
    let mut b = [0u8; 1];
    ctx.read_memory(addr, &mut b) && ctx.read_memory(last, &mut b)
}

/// The harts a `hart_mask`/`hart_mask_base` pair names (SBI v3.0 "Hart list parameter") in a
/// machine of `harts` harts, as a bit set of hart ids; `None`: some named hart id does not
/// exist (SBI_ERR_INVALID_PARAM). `base == -1` names every hart.
fn hart_mask(args: &Args, mask: u64, base: u64, harts: usize) -> Option<u64> {
    let all = (1u64 << harts) - 1;
    if base == args.all_ones() {
        return Some(all);
    }
    let mut set = 0;
    for bit in 0..64u64 {
        if mask >> bit & 1 == 0 {
            continue;
        }
        // hartid = base + bit, not wrapped: an id past 2^XLEN is no hart.
        match base.checked_add(bit) {
            Some(h) if h < harts as u64 => set |= 1 << h,
            _ => return None,
        }
    }
    Some(set)
}

/// The harts of a bit set.
fn each(set: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |h| set >> h & 1 != 0)
}

impl Sbi {
    /// An SBI implementation with the given console.
    pub fn new(cfg: SbiConfig) -> Sbi {
        Sbi {
            cfg,
            pmu: pmu::Pmu::default(),
            fwft: fwft::Fwft::default(),
            dbtr: dbtr::Dbtr::default(),
            sse: sse::Sse::default(),
        }
    }

    /// Send console output somewhere else from now on (for example to stderr when our stdout
    /// carries a trace); reach the attached SBI with `hart.extension_mut::<Sbi>()`.
    pub fn set_console(&mut self, console: Box<dyn Write + Send>) {
        self.flush_console();
        self.cfg.console = console;
    }

    /// Service one SBI call made from S-mode: EID `a7`, FID `a6`, arguments `a0..a5`. Sets
    /// `a0`/`a1` through `ctx` and returns what the hart should do next (what
    /// [`Extension::environment_call`] does for an `ecall` from S-mode).
    pub fn call(&mut self, ctx: &mut Ctx) -> Service {
        let xlen = ctx.hart().xlen();
        let args = Args {
            a: [
                ctx.x(10),
                ctx.x(11),
                ctx.x(12),
                ctx.x(13),
                ctx.x(14),
                ctx.x(15),
            ],
            xlen,
        };
        let (eid, fid) = (ctx.x(17), ctx.x(16));
        ctx.touched_io();
        // Legacy extensions (SBI v3.0 "Legacy Extensions"): the FID is ignored and only `a0`
        // is written.
        if eid <= 0x0f {
            let v = match eid {
                eid::LEGACY_CONSOLE_PUTCHAR => {
                    let ok = self.put(&[args.a[0] as u8]);
                    if ok {
                        0
                    } else {
                        error::FAILED as u64
                    }
                }
                eid::LEGACY_CONSOLE_GETCHAR => {
                    let mut b = [0u8; 1];
                    match self.get(ctx, &mut b) {
                        Some(1) => b[0] as u64,
                        _ => u64::MAX,
                    }
                }
                _ => error::NOT_SUPPORTED as u64,
            };
            ctx.set_x(10, v);
            return Service::Done;
        }
        if eid == eid::SSE {
            let ret = self.sse.call(ctx, fid, &args);
            let next = ret.map(|(e, v)| {
                ctx.set_x(10, e as u64);
                ctx.set_x(11, v);
                ctx.hart().pc().wrapping_add(4)
            });
            self.sse.after_call(ctx, next);
            return Service::Done;
        }
        let (ret, service) = match eid {
            eid::BASE => (self.base(ctx, fid, &args), Service::Done),
            eid::TIME => (self.time(ctx, fid, &args), Service::Done),
            eid::IPI => (self.ipi(ctx, fid, &args), Service::Done),
            eid::RFENCE => (self.rfence(ctx, fid, &args), Service::Done),
            eid::HSM => self.hsm(ctx, fid, &args),
            eid::SRST => self.srst(fid, &args),
            eid::PMU => (self.pmu_call(ctx, fid, &args), Service::Done),
            eid::DBCN => (self.dbcn(ctx, fid, &args), Service::Done),
            eid::SUSP => (self.susp(ctx, fid, &args), Service::Done),
            eid::DBTR => (self.dbtr.call(ctx, fid, &args), Service::Done),
            eid::FWFT => (
                match fid {
                    0 => self.fwft.set(&args),
                    1 => self.fwft.get(&args),
                    _ => err(error::NOT_SUPPORTED),
                },
                Service::Done,
            ),
            _ => (err(error::NOT_SUPPORTED), Service::Done),
        };
        if service == Service::Done {
            ctx.set_x(10, ret.0 as u64);
            ctx.set_x(11, ret.1);
        }
        service
    }

    /// Base extension (SBI v3.0 "Base Extension", EID 0x10).
    fn base(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> SbiRet {
        match fid {
            0 => ok(SPEC_VERSION),
            1 => ok(IMPL_ID),
            2 => ok(IMPL_VERSION),
            // probe_extension(long extension_id): 1 available, 0 not.
            3 => ok(EXTENSIONS.contains(&args.a[0]) as u64),
            // mvendorid/marchid/mimpid: the hart's own values.
            4..=6 => {
                let csr = [num::MVENDORID, num::MARCHID, num::MIMPID][fid as usize - 4];
                let v = ctx.hart_mut().csr_read(csr).unwrap_or(0);
                ok(ctx.hart().trunc(v))
            }
            _ => err(error::NOT_SUPPORTED),
        }
    }

    /// TIME (SBI v3.0 "Timer Extension"): `sbi_set_timer(uint64_t stime_value)` arms the
    /// hart's supervisor timer deadline and clears a pending STIP; always succeeds.
    fn time(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> SbiRet {
        if fid != 0 {
            return err(error::NOT_SUPPORTED);
        }
        let deadline = args.u64_at(0);
        // "Programs the clock for next event after stime_value time": the event comes
        // TIMER_LATENCY ticks after it ((uint64_t)-1 still disarms).
        let event = match deadline {
            u64::MAX => u64::MAX,
            d => d.saturating_add(TIMER_LATENCY),
        };
        // "must clear the pending timer interrupt bit when stime_value is set to some time in
        // the future": STIP follows the event (`Hart::set_stimecmp`, as OpenSBI: `stimecmp`
        // with Sstc, else its own timer with STIP cleared).
        ctx.hart_mut().set_stimecmp(event);
        self.pmu.fw_event(pmu::fw::SET_TIMER);
        ok(0)
    }

    /// IPI (SBI v3.0 "IPI Extension"): `sbi_send_ipi(hart_mask, hart_mask_base)` makes SSIP
    /// pending on every hart the mask names. IPI_RECEIVED is counted when the caller is among
    /// them (each hart's firmware counters are its own SBI's; the receivers' are not reached).
    fn ipi(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> SbiRet {
        if fid != 0 {
            return err(error::NOT_SUPPORTED);
        }
        let harts = ctx.hart_mut().shared().count();
        let Some(set) = hart_mask(args, args.a[0], args.a[1], harts) else {
            return err(error::INVALID_PARAM);
        };
        let me = ctx.hart().hart_id();
        for h in each(set) {
            self.pmu.fw_event(pmu::fw::IPI_SENT);
            let mail = Mail {
                ssip: true,
                ..Mail::default()
            };
            ctx.hart_mut().shared().post(h, mail);
            if h == me {
                self.pmu.fw_event(pmu::fw::IPI_RECEIVED);
            }
        }
        ok(0)
    }

    /// RFENCE (SBI v3.0 "RFENCE Extension"): each hart the mask names gets the `fence.i`
    /// (`remote_fence_i`: the decode caches follow every write to code) or flushes its whole TLB (`remote_sfence_vma[_asid]`: more than the
    /// range asked, which the spec allows) before its next instruction. The answers and the
    /// firmware events are the spec's (RECEIVED counted as for IPIs).
    fn rfence(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> SbiRet {
        // FIDs 3..=6 are the HFENCE functions: the model has no hypervisor extension.
        if fid > 2 {
            return err(error::NOT_SUPPORTED);
        }
        let harts = ctx.hart_mut().shared().count();
        let Some(set) = hart_mask(args, args.a[0], args.a[1], harts) else {
            return err(error::INVALID_PARAM);
        };
        if fid >= 1 {
            // "The remote fence operation applies to the entire address space if either
            // start_addr and size are both 0, or size is equal to 2^XLEN-1"; otherwise the
            // range must not run past the end of the address space.
            let (start, size) = (args.a[2], args.a[3]);
            let whole = (start == 0 && size == 0) || size == args.all_ones();
            if !whole && start as u128 + size as u128 > args.all_ones() as u128 + 1 {
                return err(error::INVALID_ADDRESS);
            }
            if fid == 2 && args.a[4] > max_asid(args.xlen) {
                return err(error::INVALID_PARAM);
            }
        }
        let (sent, received) = match fid {
            0 => (pmu::fw::FENCE_I_SENT, pmu::fw::FENCE_I_RECEIVED),
            1 => (pmu::fw::SFENCE_VMA_SENT, pmu::fw::SFENCE_VMA_RECEIVED),
            _ => (
                pmu::fw::SFENCE_VMA_ASID_SENT,
                pmu::fw::SFENCE_VMA_ASID_RECEIVED,
            ),
        };
        let me = ctx.hart().hart_id();
        for h in each(set) {
            self.pmu.fw_event(sent);
            let mail = Mail {
                fence_i: fid == 0,
                sfence_vma: fid != 0,
                ..Mail::default()
            };
            ctx.hart_mut().shared().post(h, mail);
            if h == me {
                self.pmu.fw_event(received);
            }
        }
        ok(0)
    }

    /// HSM (SBI v3.0 "Hart State Management Extension"): start, stop, status and suspend of the
    /// machine's harts (`rvtrace_sim::smp::HsmState`).
    fn hsm(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> (SbiRet, Service) {
        let me = ctx.hart().hart_id();
        let shared = ctx.hart_mut().shared();
        let target = usize::try_from(args.a[0]).ok();
        let ret = match fid {
            // hart_start(hartid, start_addr, opaque).
            0 => match target.and_then(|h| Some((h, shared.state(h)?))) {
                None => err(error::INVALID_PARAM),
                Some((_, s)) if s != HsmState::Stopped => err(error::ALREADY_AVAILABLE),
                Some((h, _)) => {
                    if !in_ram(ctx, args.a[1], 2) {
                        return (err(error::INVALID_ADDRESS), Service::Done);
                    }
                    let shared = ctx.hart_mut().shared();
                    shared.set_state(h, HsmState::StartPending);
                    let start = Some((args.a[1], args.a[2]));
                    shared.post(
                        h,
                        Mail {
                            start,
                            ..Mail::default()
                        },
                    );
                    ok(0)
                }
            },
            // hart_stop(): the hart stops until another starts it; when no other hart runs,
            // nothing is left to run and the run ends (exit 0, as nothing reported a failure).
            1 => {
                let others = (0..shared.count())
                    .filter(|&h| h != me)
                    .any(|h| shared.state(h) != Some(HsmState::Stopped));
                if !others {
                    return (ok(0), Service::Exit(0));
                }
                shared.set_state(me, HsmState::Stopped);
                ctx.request_stop();
                ok(0)
            }
            // hart_get_status(hartid).
            2 => match target.and_then(|h| shared.state(h)) {
                Some(s) => ok(s as u64),
                None => err(error::INVALID_PARAM),
            },
            3 => self.hart_suspend(ctx, args),
            _ => err(error::NOT_SUPPORTED),
        };
        (ret, Service::Done)
    }

    /// `hart_suspend(uint32_t suspend_type, resume_addr, opaque)`: the default retentive
    /// suspend idles as `wfi` does and returns when an interrupt enabled in `sie` is pending
    /// (with one hart time jumps to the next armed timer; with several the others run
    /// meanwhile). The default non-retentive suspend resumes at `resume_addr` as `hart_start`
    /// starts a hart (`sleep_and_resume`); platform-specific types are unimplemented
    /// (INVALID_PARAM).
    fn hart_suspend(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let several = ctx.hart_mut().shared().count() > 1;
        // Upper register bits beyond the uint32_t are not part of the value.
        match args.u32_at(0) {
            SUSPEND_RETENTIVE => {}
            SUSPEND_NON_RETENTIVE => {
                if !in_ram(ctx, args.a[1], 2) {
                    return err(error::INVALID_ADDRESS);
                }
                return self.sleep_and_resume(ctx, args.a[1], args.a[2]);
            }
            // Reserved (0x1..0x0FFFFFFF, 0x80000001..0x8FFFFFFF) or platform-specific and
            // unimplemented.
            _ => return err(error::INVALID_PARAM),
        }
        let waits = if several {
            ctx.hart_mut().suspend(None)
        } else {
            ctx.hart_mut().idle_until_interrupt()
        };
        if waits {
            ok(0)
        } else {
            // Nothing enabled could ever resume the hart.
            err(error::FAILED)
        }
    }

    /// SUSP (SBI v3.0 chapter 13 "System Suspend Extension"): `sbi_system_suspend(uint32_t
    /// sleep_type, resume_addr, opaque)`. SUSPEND_TO_RAM needs every other hart STOPPED
    /// (DENIED otherwise) and a `resume_addr` in RAM (INVALID_ADDRESS); reserved and
    /// platform-specific types (none implemented) are INVALID_PARAM. The checks come in
    /// OpenSBI 1.5.1's order: type, other harts, address. The hart then sleeps until an
    /// interrupt `sie` enables is pending (the wake-up source is the platform's to choose; it is
    /// `wfi`'s rule), time passing meanwhile, and resumes at `resume_addr` in S-mode with
    /// `satp` 0, `sstatus.SIE` 0, `a0` = its hart id and `a1` = `opaque` (table "SUSP System
    /// Resume Register State"); the call does not return. FAILED when no enabled interrupt
    /// could ever wake it.
    fn susp(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> SbiRet {
        if fid != 0 {
            return err(error::NOT_SUPPORTED);
        }
        // Only the low 32 bits are the uint32_t.
        if args.u32_at(0) != SUSPEND_TO_RAM {
            return err(error::INVALID_PARAM);
        }
        let me = ctx.hart().hart_id();
        let shared = ctx.hart_mut().shared();
        let harts = shared.count();
        if (0..harts).any(|h| h != me && shared.state(h) != Some(HsmState::Stopped)) {
            return err(error::DENIED);
        }
        let (at, opaque) = (args.a[1], args.a[2]);
        if !in_ram(ctx, at, 2) {
            return err(error::INVALID_ADDRESS);
        }
        self.sleep_and_resume(ctx, at, opaque)
    }

    /// Sleep until an interrupt `sie` enables is pending, then resume at `at` in S-mode as a
    /// started hart (`satp` 0, `sstatus.SIE` 0, `a0` = hart id, `a1` = `opaque`): the resume of
    /// SUSP and of the non-retentive `hart_suspend`. With several harts the hart is SUSPENDED
    /// and the others run meanwhile (`Hart::suspend`); alone, time jumps to the next armed
    /// timer (`Hart::idle_until_interrupt`) and the call continues at `at`. FAILED when no
    /// enabled interrupt could ever wake it.
    fn sleep_and_resume(&mut self, ctx: &mut Ctx, at: u64, opaque: u64) -> SbiRet {
        let h = ctx.hart_mut();
        if h.shared().count() > 1 {
            return if h.suspend(Some((at, opaque))) {
                ok(0)
            } else {
                err(error::FAILED)
            };
        }
        if !h.idle_until_interrupt() {
            return err(error::FAILED);
        }
        let me = h.hart_id();
        let start = Some((at, opaque));
        h.shared().post(
            me,
            Mail {
                start,
                ..Mail::default()
            },
        );
        ok(0)
    }

    /// SRST (SBI v3.0 "System Reset Extension"): shutdown, cold and warm reboot end the run,
    /// with exit status 0 for reason "no reason" and 1 for "system failure".
    fn srst(&mut self, fid: u64, args: &Args) -> (SbiRet, Service) {
        if fid != 0 {
            return (err(error::NOT_SUPPORTED), Service::Done);
        }
        let (ty, reason) = (args.u32_at(0), args.u32_at(1));
        // Types 3..=0xEFFFFFFF are reserved, 0xF0000000.. vendor-specific (none implemented);
        // reasons 2.. are reserved or implementation/vendor-specific (none implemented).
        let status = match reason {
            0 => 0,
            1 => 1,
            _ => return (err(error::INVALID_PARAM), Service::Done),
        };
        if ty > 2 {
            return (err(error::INVALID_PARAM), Service::Done);
        }
        self.flush_console();
        (ok(0), Service::Exit(status))
    }

    /// DBCN (SBI v3.0 "Debug Console Extension").
    fn dbcn(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> SbiRet {
        match fid {
            0 | 1 => {
                let n = args.a[0];
                if n == 0 {
                    return ok(0);
                }
                // The memory must be accessible physical memory ("Shared memory physical
                // address range parameter"); DBCN answers INVALID_PARAM when it is not.
                let Some(addr) = args.phys_at(1).filter(|&a| in_ram(ctx, a, n)) else {
                    return err(error::INVALID_PARAM);
                };
                if fid == 0 {
                    let mut written = 0u64;
                    let mut buf = vec![0u8; n.min(4096) as usize];
                    while written < n {
                        let len = (n - written).min(buf.len() as u64) as usize;
                        if !ctx.read_memory(addr + written, &mut buf[..len])
                            || !self.put(&buf[..len])
                        {
                            return err(error::FAILED);
                        }
                        written += len as u64;
                    }
                    ok(written)
                } else {
                    // Non-blocking in the spec: one read call, at most one page.
                    let mut buf = vec![0u8; n.min(4096) as usize];
                    match self.get(ctx, &mut buf) {
                        None => err(error::FAILED),
                        Some(got) => {
                            if got > 0 && !ctx.write_memory(addr, &buf[..got]) {
                                return err(error::FAILED);
                            }
                            ok(got as u64)
                        }
                    }
                }
            }
            2 => {
                if self.put(&[args.a[0] as u8]) {
                    ok(0)
                } else {
                    err(error::FAILED)
                }
            }
            _ => err(error::NOT_SUPPORTED),
        }
    }

    /// Write console bytes (flushed, so that they interleave with the UART's); false on an
    /// I/O error.
    fn put(&mut self, bytes: &[u8]) -> bool {
        self.cfg.console.write_all(bytes).is_ok() && self.cfg.console.flush().is_ok()
    }

    /// One read from the console input: bytes read (0 at end of input), `None` on an error.
    fn get(&mut self, ctx: &mut Ctx, buf: &mut [u8]) -> Option<usize> {
        let input = match &mut self.cfg.input {
            ConsoleInput::Reader(r) => r,
            ConsoleInput::Uart => return ctx.hart_mut().uart_read(buf),
        };
        loop {
            match input.read(buf) {
                Ok(n) => return Some(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            }
        }
    }

    fn flush_console(&mut self) {
        let _ = self.cfg.console.flush();
    }
}

impl Extension for Sbi {
    fn name(&self) -> &'static str {
        "sbi"
    }

    fn environment_call(&mut self, ctx: &mut Ctx, call: &EnvCall) -> Option<Service> {
        // Only S-mode's ecalls are SBI calls; U's and M's are the hart's traps.
        (call.cause == rvtrace_sim::cause::ECALL_S).then(|| self.call(ctx))
    }

    fn machine_interrupt(&mut self, ctx: &mut Ctx, cause: u64) -> bool {
        self.sse.machine_interrupt(ctx, cause)
    }

    fn firmware_ipi(&mut self, ctx: &mut Ctx) {
        self.sse.firmware_ipi(ctx);
    }

    fn flush(&mut self) {
        self.flush_console();
    }
}

/// The state the hart enters a payload in under this SBI: [`rvtrace_sim::boot::enter_supervisor`].
pub use rvtrace_sim::boot::enter_supervisor;
