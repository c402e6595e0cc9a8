//! The hart's extension seam: one interface for what lives inside the hart but outside its base
//! ISA — CSRs of an extension (CTR, a vendor's registers), per-instruction and trap events,
//! interrupts an extension raises, and environment calls it services (semihosting, an SBI
//! implementation).
//!
//! An [`Extension`] is owned by the hart ([`crate::Hart::attach`]) and asked in this order:
//! - **CSR access**: before the base CSR file, so an extension can add CSRs or take over ones the
//!   base file implements. The privilege check of the CSR number (`csr[9:8]`) and the read-only
//!   check (`csr[11:10] == 3`) are the hart's (privileged ISA, "CSR Address Mapping
//!   Conventions"); a refusal by the extension is an illegal-instruction exception.
//! - **Environment calls**: when `ecall` or `ebreak` is about to raise its exception, each
//!   extension may service it instead; the instruction then retires without a trap, with
//!   [`Retired::serviced`] saying by whom.
//! - **Instructions**: an encoding the base ISA does not define is offered to each extension
//!   before it raises an illegal-instruction exception; an extension that executes it (CTR's
//!   `sctrclr`) makes it retire like any instruction.
//! - **Events**: every extension sees every trap (a cold path); extensions whose
//!   [`Extension::wants_events`] is true also see every retirement (the hart then runs its
//!   instrumented loop; with none, the loop is the same code as without the seam: zero cost).
//!
//! Extensions act on the hart through [`Ctx`], which reports register and memory writes to the
//! run's [`crate::Observer`] like an instruction's, so traces stay complete.

use crate::counters::Counters;
use crate::decode::Extensions as IsaExtensions;
pub use crate::observer::Serviced;
use crate::observer::{MemAccess, MemKind, Retired, TrapInfo};
use crate::uarch::Uarch;
use rvtrace_isa::Xlen;
use std::any::Any;

/// An environment call the hart is about to turn into an exception.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnvCall {
    /// Address of the `ecall`/`ebreak`.
    pub pc: u64,
    /// Its instruction bits (`c.ebreak` in the low half).
    pub insn: u32,
    /// The exception it would raise: 3 breakpoint, 8/9/11 environment call from U/S/M.
    pub cause: u64,
    /// Privilege it executes at.
    pub priv_: u8,
}

/// An instruction the base ISA does not define, about to raise an illegal-instruction exception.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// Its address.
    pub pc: u64,
    /// Its bits (a compressed instruction in the low half).
    pub insn: u32,
    /// Its length in bytes (2 or 4).
    pub len: u8,
    /// Privilege it executes at.
    pub priv_: u8,
}

/// What an extension did with an [`EnvCall`] it accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// Serviced: execution continues after the instruction.
    Done,
    /// The program asked to end with this exit status (the run stops after the instruction).
    Exit(i32),
}

/// A piece of the hart that is not its base ISA. Every method has a default that does nothing.
pub trait Extension: Any + Send {
    /// A short name for messages ("semihosting", "sbi", "ctr").
    fn name(&self) -> &'static str;
    /// Whether this extension implements `csr`.
    fn claims_csr(&self, _csr: u16) -> bool {
        false
    }
    /// Read a claimed CSR at the hart's privilege (`ctx.hart().privilege()`). `None` raises an
    /// illegal-instruction exception.
    fn csr_read(&mut self, _ctx: &mut Ctx, _csr: u16) -> Option<u64> {
        None
    }
    /// Write a claimed CSR (value truncated to XLEN). `false` raises an illegal-instruction
    /// exception.
    fn csr_write(&mut self, _ctx: &mut Ctx, _csr: u16, _value: u64) -> bool {
        false
    }
    /// The `mstateen0` bits that guard this extension's S-mode state (Smstateen): writable in
    /// `mstateen0` when the hart has Smstateen. The extension checks them itself with
    /// [`crate::Hart::stateen_allows`].
    fn stateen_bits(&self) -> u64 {
        0
    }
    /// Offered an `ecall`/`ebreak` before it traps. `Some` services it (no trap is taken).
    fn environment_call(&mut self, _ctx: &mut Ctx, _call: &EnvCall) -> Option<Service> {
        None
    }
    /// Offered an [`Instruction`] the base ISA does not define, before it raises an
    /// illegal-instruction exception. `true`: the extension executed it (its effects through
    /// `ctx`), and it retires; the next instruction is the sequential one.
    fn instruction(&mut self, _ctx: &mut Ctx, _insn: &Instruction) -> bool {
        false
    }
    /// Whether [`Extension::retire`] should be called (the hart then runs its instrumented loop).
    /// Asked when the extension is attached and whenever the hart re-evaluates its loop (after
    /// a CSR write). Traps reach every extension regardless.
    fn wants_events(&self) -> bool {
        false
    }
    /// An interrupt the hart is about to take into M-mode (`cause`, its code), offered first,
    /// as to firmware running in M-mode (an SBI's interrupt handler). `true`: handled, no trap
    /// into M is taken, and the extension cleared what raised it (an interrupt still pending
    /// after it is taken into M as ever). It may have moved the hart
    /// ([`HartAccess::resume_at`]), which the trace then shows as this interrupt with the new
    /// pc as its handler (the firmware's trap and `mret` collapsed into one).
    fn machine_interrupt(&mut self, _ctx: &mut Ctx, _cause: u64) -> bool {
        false
    }
    /// A firmware IPI arrived ([`HartAccess::firmware_ipi`], [`crate::smp::Mail::firmware_ipi`]):
    /// asked of every extension before the hart's next instruction. A move of the hart shows in
    /// the trace as an interrupt [`FIRMWARE_IPI`] whose handler is the new pc.
    fn firmware_ipi(&mut self, _ctx: &mut Ctx) {}
    /// An instruction retired (after the hart's observer saw it).
    fn retire(&mut self, _ctx: &mut Ctx, _ev: &Retired) {}
    /// A trap was taken (fault, interrupt, or the exception of an `ecall`/`ebreak`). Called for
    /// every extension, whatever [`Extension::wants_events`] says.
    fn trap(&mut self, _ctx: &mut Ctx, _ev: &TrapInfo) {}
    /// The run ends: flush buffered output.
    fn flush(&mut self) {}
    /// Send the program's console output through this extension (semihosting's stdout) to
    /// `out` instead (`tty`: it is a terminal); [`crate::Hart::program_output_to_stderr`].
    fn redirect_output(&mut self, _out: Box<dyn std::io::Write + Send>, _tty: bool) {}
}

/// The interrupt code the trace shows for a firmware IPI ([`Extension::firmware_ipi`]) that
/// moved the hart: machine software interrupt (MSI, 3), the interrupt a firmware sends another
/// hart's firmware.
pub const FIRMWARE_IPI: u64 = 3;

/// A register or memory write made by an extension, replayed to the observer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Effect {
    Gpr(u8, u64),
    Store(MemAccess),
}

/// The hart as an extension sees it: its state to read, the CSR file and the services
/// firmware would use, and the raw writes behind [`Ctx`]'s reported ones. The hart implements
/// it; the seam names no hart type, so it sits below the hart.
pub trait HartAccess {
    /// Base integer width.
    fn xlen(&self) -> Xlen;
    /// Implemented extensions of the ISA.
    fn isa_extensions(&self) -> &IsaExtensions;
    /// Integer registers (RV32 values sign-extended to 64 bits).
    fn x(&self) -> &[u64; 32];
    /// Current privilege (0 U, 1 S, 3 M).
    fn privilege(&self) -> u8;
    /// Instructions retired so far.
    fn instret(&self) -> u64;
    /// Performance counters.
    fn counters(&self) -> &Counters;
    /// The micro-architecture model.
    fn uarch(&self) -> &Uarch;
    /// Truncate to XLEN (zero-extending).
    fn trunc(&self, v: u64) -> u64;
    /// Read a CSR as M-mode software would (every CSR the hart or an extension implements).
    fn csr_read(&mut self, csr: u16) -> Option<u64>;
    /// Write a CSR as M-mode software would; false if the hart has no such CSR.
    fn csr_write(&mut self, csr: u16, v: u64) -> bool;
    /// Set the supervisor timer deadline as firmware does for an SBI `set_timer`.
    fn set_stimecmp(&mut self, deadline: u64);
    /// Wait for an interrupt as firmware does (`wfi` with time passing); false if none can
    /// arrive.
    fn idle_until_interrupt(&mut self) -> bool;
    /// Whether the current privilege may access state guarded by `mstateen0` bit(s) `bit`.
    fn stateen_allows(&self, bit: u64) -> bool;
    /// Whether the instructions around `pc` are the semihosting sequence (`slli`, `ebreak`,
    /// `srai`).
    fn semihosting_sequence_at(&self, pc: u64) -> bool;
    /// Read guest RAM; false if any byte is outside RAM.
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> bool;
    /// Write guest RAM without reporting it ([`Ctx::write_memory`] reports); false (and nothing
    /// written) if any byte is outside RAM.
    fn write_memory_unreported(&mut self, addr: u64, data: &[u8]) -> bool;
    /// Write integer register `r` (1..=31) with `v` sign-extended from XLEN without reporting
    /// it ([`Ctx::set_x`] reports); returns the value stored.
    fn set_x_unreported(&mut self, r: u8, v: u64) -> u64;
    /// Set or clear software-writable pending bits of `mip` ([`Ctx::set_pending`]).
    fn set_pending(&mut self, mask: u64, on: bool);
    /// End the run before the next instruction ([`Ctx::request_stop`]).
    fn request_stop(&mut self);
    /// Mark the step as touching the outside world ([`Ctx::touched_io`]).
    fn touched_io(&mut self);
    /// Console input as firmware whose console is the machine's UART reads it: bytes waiting in
    /// the receiver first, else one read of the UART's input ([`crate::bus::Bus::uart_read`]).
    fn uart_read(&mut self, buf: &mut [u8]) -> Option<usize>;
    /// `mhartid`.
    fn hart_id(&self) -> usize;
    /// SBI HSM `hart_suspend` in a machine of several harts (the hart waits while the others
    /// run; `resume`: a non-retentive suspend's address and opaque value); false when nothing
    /// can wake the hart.
    fn suspend(&mut self, resume: Option<(u64, u64)>) -> bool;
    /// What the machine's harts share (HSM states, requests for other harts); requests this
    /// hart leaves for itself take effect when the extension's call returns.
    fn shared(&mut self) -> &mut crate::smp::Shared;
    /// The address of the next instruction; inside [`Extension::environment_call`], the
    /// `ecall`'s own address.
    fn pc(&self) -> u64;
    /// Go on at `pc` in privilege `priv_` (0 U, 1 S): inside [`Extension::environment_call`]
    /// the `ecall` retires with `pc` as its next pc (as a resume the call asked for), inside
    /// [`Extension::machine_interrupt`] the interrupt's handler is `pc`. Only below M.
    fn resume_at(&mut self, pc: u64, priv_: u8);
    /// Ask for [`Extension::firmware_ipi`] before the next instruction (the firmware's IPI to
    /// itself); a waiting hart wakes for it.
    fn firmware_ipi(&mut self);
}

/// An extension's access to the hart while it is being called.
pub struct Ctx<'a> {
    pub(crate) hart: &'a mut dyn HartAccess,
    pub(crate) effects: &'a mut Vec<Effect>,
}

impl Ctx<'_> {
    /// The hart (read access to its registers, counters and memory).
    pub fn hart(&self) -> &dyn HartAccess {
        self.hart
    }

    /// The hart for changes the observer need not see (CSR storage of the extension's own
    /// device, counters). Register and memory writes should go through [`Ctx::set_x`] and
    /// [`Ctx::write_memory`] so that traces see them.
    pub fn hart_mut(&mut self) -> &mut dyn HartAccess {
        self.hart
    }

    /// Integer register `r`, XLEN-truncated.
    pub fn x(&self, r: u8) -> u64 {
        self.hart.trunc(self.hart.x()[r as usize & 31])
    }

    /// Write integer register `r` (ignored for `x0`), reported to the observer.
    pub fn set_x(&mut self, r: u8, v: u64) {
        if r != 0 && r < 32 {
            let v = self.hart.set_x_unreported(r, v);
            self.effects.push(Effect::Gpr(r, v));
        }
    }

    /// Read guest RAM; false if any byte is outside RAM.
    pub fn read_memory(&self, addr: u64, buf: &mut [u8]) -> bool {
        self.hart.read_memory(addr, buf)
    }

    /// Write guest RAM, reported to the observer as stores of at most 8 bytes; false (and
    /// nothing written) if any byte is outside RAM.
    pub fn write_memory(&mut self, addr: u64, data: &[u8]) -> bool {
        if !self.hart.write_memory_unreported(addr, data) {
            return false;
        }
        for (k, chunk) in data.chunks(8).enumerate() {
            let mut v = [0u8; 8];
            v[..chunk.len()].copy_from_slice(chunk);
            self.effects.push(Effect::Store(MemAccess {
                addr: addr + 8 * k as u64,
                size: chunk.len() as u8,
                value: u64::from_le_bytes(v),
                kind: MemKind::Store,
            }));
        }
        true
    }

    /// Set (`on`) or clear pending bits of `mip` that software can also write (such as LCOFIP,
    /// privileged ISA "Machine Interrupt Registers"); the hart re-evaluates interrupts before
    /// the next instruction.
    pub fn set_pending(&mut self, mask: u64, on: bool) {
        self.hart.set_pending(mask, on);
    }

    /// End the run before the next instruction ([`crate::Hart::run`] returns
    /// [`crate::Stop::Requested`]); the extension keeps why, for its user.
    pub fn request_stop(&mut self) {
        self.hart.request_stop();
    }

    /// Mark the step as touching the outside world (a device, the host): trap-loop detection
    /// then does not take a repeated state for a loop.
    pub fn touched_io(&mut self) {
        self.hart.touched_io();
    }
}

/// The extensions attached to a hart, in attach order.
#[derive(Default)]
pub(crate) struct Extensions {
    pub(crate) list: Vec<Box<dyn Extension>>,
    /// Some extension wants retire/trap events.
    pub(crate) events: bool,
    pub(crate) effects: Vec<Effect>,
}

impl Extensions {
    pub(crate) fn refresh(&mut self) {
        self.events = self.list.iter().any(|e| e.wants_events());
    }
}

/// Downcast helpers.
impl dyn Extension {
    /// This extension as `T`, if it is one.
    pub fn downcast_mut<T: Extension>(&mut self) -> Option<&mut T> {
        (self as &mut dyn Any).downcast_mut::<T>()
    }
}
