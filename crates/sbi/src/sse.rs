//! SSE, supervisor software events (SBI v3.0 chapter 17 "Supervisor Software Events
//! Extension", EID 0x535345), for a machine without H.
//!
//! Events ("Software Event Identification", table "SSE Event ID Space"):
//! - LOCAL_PMU_OVERFLOW (0x00010000), when the hart has Sscofpmf (the table: "depends on
//!   overflow IRQ"): while it is enabled the SBI takes the overflow interrupt (LCOFI) itself,
//!   in place of S-mode (`mideleg.LCOFI` cleared, `mie.LCOFIE` set, as a firmware does), and
//!   each LCOFI makes the event pending (LCOFIP acknowledged: cleared by the firmware).
//! - LOCAL_SOFTWARE (0xffff0000) and GLOBAL_SOFTWARE (0xffff8000): raised by `inject` only.
//! - The other standard events (the RAS events 0x0, 0x8000, 0x00100000, 0x00108000 and the
//!   double trap event 0x1) are NOT_SUPPORTED: the model has no RAS error source and no
//!   Ssdbltrp ("not reserved and valid, but the platform does not support it due to one or
//!   more missing dependencies"). Every other id (reserved or platform-specific: this
//!   platform defines none) is invalid: INVALID_PARAM.
//!
//! Every event may be injected (STATUS bit 3). A local event's state is each hart's own (in
//! its [`crate::Sbi`]); a global event's state is the machine's
//! ([`rvtrace_sim::smp::Shared::firmware`]), with the ids a hart injects into another hart's
//! local events queued there for it.
//!
//! Delivery ("Software Event Injection"): an event is taken on a hart that is unmasked and
//! below M, when it is pending and ENABLED (a global one on its PREFERRED_HART: the SBI never
//! moves it elsewhere) and comes before every event RUNNING on the hart (lower PRIORITY, then
//! lower id, "Software Event Priority"). It is checked at the end of each SSE call on the
//! calling hart (the `ecall` then retires with the handler as its next pc, as a firmware that
//! injects on its way back from the call) and in the firmware's interrupt handler
//! ([`rvtrace_sim::extension::Extension::machine_interrupt`]) for LCOFI, and when another
//! hart's SBI sends this one a firmware IPI (`Extension::firmware_ipi`): the trace shows an
//! interrupt (13, or 3 for the IPI) whose handler is the entry. Both
//! points are fixed instruction boundaries of the deterministic run.

use crate::{err, error, in_ram, ok, Args, SbiRet};
use rvtrace_sim::csr::{irq, mstatus, num};
use rvtrace_sim::extension::Ctx;
use rvtrace_sim::smp::{Mail, MAX_HARTS};

/// Event ids (table "SSE Event ID Space").
pub mod event {
    /// Local High Priority RAS event (NOT_SUPPORTED here).
    pub const LOCAL_HIGH_PRIO_RAS: u32 = 0x0000_0000;
    /// Local double trap event (NOT_SUPPORTED: no Ssdbltrp).
    pub const LOCAL_DOUBLE_TRAP: u32 = 0x0000_0001;
    /// Global High Priority RAS event (NOT_SUPPORTED here).
    pub const GLOBAL_HIGH_PRIO_RAS: u32 = 0x0000_8000;
    /// Local PMU overflow event.
    pub const LOCAL_PMU_OVERFLOW: u32 = 0x0001_0000;
    /// Local Low Priority RAS event (NOT_SUPPORTED here).
    pub const LOCAL_LOW_PRIO_RAS: u32 = 0x0010_0000;
    /// Global Low Priority RAS event (NOT_SUPPORTED here).
    pub const GLOBAL_LOW_PRIO_RAS: u32 = 0x0010_8000;
    /// Software injected local event.
    pub const LOCAL_SOFTWARE: u32 = 0xffff_0000;
    /// Software injected global event.
    pub const GLOBAL_SOFTWARE: u32 = 0xffff_8000;
}

/// Attribute ids (table "SSE Event Attributes").
pub mod attr {
    /// STATUS (RO): state in bits 1:0, pending bit 2, injectable bit 3.
    pub const STATUS: u32 = 0;
    /// PRIORITY (RW while UNUSED or REGISTERED).
    pub const PRIORITY: u32 = 1;
    /// CONFIG (RW while UNUSED or REGISTERED): bit 0 one-shot.
    pub const CONFIG: u32 = 2;
    /// PREFERRED_HART (RW for global events while UNUSED or REGISTERED, RO for local ones).
    pub const PREFERRED_HART: u32 = 3;
    /// ENTRY_PC (RO).
    pub const ENTRY_PC: u32 = 4;
    /// ENTRY_ARG (RO).
    pub const ENTRY_ARG: u32 = 5;
    /// INTERRUPTED_SEPC (RW while RUNNING).
    pub const INTERRUPTED_SEPC: u32 = 6;
    /// INTERRUPTED_FLAGS (RW while RUNNING).
    pub const INTERRUPTED_FLAGS: u32 = 7;
    /// INTERRUPTED_A6 (RW while RUNNING).
    pub const INTERRUPTED_A6: u32 = 8;
    /// INTERRUPTED_A7 (RW while RUNNING).
    pub const INTERRUPTED_A7: u32 = 9;
    /// The last attribute id; greater ids are reserved.
    pub const LAST: u32 = INTERRUPTED_A7;
}

/// Event states (chapter 17 "Software Event States"; STATUS bits 1:0).
pub mod state {
    /// Not used by supervisor software.
    pub const UNUSED: u8 = 0;
    /// A handler is registered.
    pub const REGISTERED: u8 = 1;
    /// Ready to be taken.
    pub const ENABLED: u8 = 2;
    /// Its handler runs.
    pub const RUNNING: u8 = 3;
}

/// CONFIG bit 0: disable the event when it completes (one-shot).
const ONESHOT: u64 = 1;
/// INTERRUPTED_FLAGS bits: `sstatus.SPP` (0) and `sstatus.SPIE` (1). Bits 2..5 (`hstatus.SPV`,
/// `hstatus.SPVP`, SPELP, SDT) are zero without H, Zicfilp and Ssdbltrp, so a value with them
/// is not a legal one here; bits 6.. are reserved.
const FLAG_SPP: u64 = 1;
const FLAG_SPIE: u64 = 2;

/// The local events this SBI has, in slot order.
const LOCAL: [u32; 2] = [event::LOCAL_PMU_OVERFLOW, event::LOCAL_SOFTWARE];
/// The global events this SBI has.
const GLOBAL: [u32; 1] = [event::GLOBAL_SOFTWARE];

/// One event's attributes and state.
#[derive(Clone, Copy, Debug, Default)]
struct Event {
    state: u8,
    pending: bool,
    priority: u32,
    config: u64,
    /// PREFERRED_HART of a global event (a local event's is its hart).
    preferred: u64,
    entry_pc: u64,
    entry_arg: u64,
    sepc: u64,
    flags: u64,
    a6: u64,
    a7: u64,
}

/// The machine's SSE state: global events, and local event ids other harts injected for each
/// hart (bit `i`: slot `i` of [`LOCAL`]), taken by that hart's firmware IPI.
#[derive(Debug, Default)]
struct Machine {
    global: [Event; GLOBAL.len()],
    queued: [u8; MAX_HARTS],
}

/// Where an event lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Local(usize),
    Global(usize),
}

impl Slot {
    fn id(self) -> u32 {
        match self {
            Slot::Local(i) => LOCAL[i],
            Slot::Global(i) => GLOBAL[i],
        }
    }
}

/// This hart's SSE state: its local events and whether events are masked on it (they are at
/// first: "The software events are masked initially on all harts").
#[derive(Debug)]
pub(crate) struct Sse {
    local: [Event; LOCAL.len()],
    masked: bool,
    /// `mie.LCOFIE` as S-mode had it when the firmware took LCOFI over (restored after).
    s_lcofie: bool,
}

impl Default for Sse {
    fn default() -> Sse {
        Sse {
            local: [Event::default(); LOCAL.len()],
            masked: true,
            s_lcofie: false,
        }
    }
}

/// Whether `id` is a standard event the table defines.
fn standard(id: u32) -> bool {
    matches!(
        id,
        event::LOCAL_HIGH_PRIO_RAS
            | event::LOCAL_DOUBLE_TRAP
            | event::GLOBAL_HIGH_PRIO_RAS
            | event::LOCAL_PMU_OVERFLOW
            | event::LOCAL_LOW_PRIO_RAS
            | event::GLOBAL_LOW_PRIO_RAS
            | event::LOCAL_SOFTWARE
            | event::GLOBAL_SOFTWARE
    )
}

/// The event `id` names on this hart: NOT_SUPPORTED for a standard event this machine lacks,
/// INVALID_PARAM for any other id it does not have (reserved or platform-specific).
fn lookup(ctx: &Ctx, id: u32) -> Result<Slot, i64> {
    let sscofpmf = ctx.hart().counters().config().sscofpmf;
    if let Some(i) = LOCAL.iter().position(|&e| e == id) {
        if id != event::LOCAL_PMU_OVERFLOW || sscofpmf {
            return Ok(Slot::Local(i));
        }
    } else if let Some(i) = GLOBAL.iter().position(|&e| e == id) {
        return Ok(Slot::Global(i));
    }
    Err(if standard(id) {
        error::NOT_SUPPORTED
    } else {
        error::INVALID_PARAM
    })
}

/// Priority order: lower PRIORITY first, then lower id ("Software Event Priority").
fn key(e: &Event, s: Slot) -> (u32, u32) {
    (e.priority, s.id())
}

impl Sse {
    fn get(&self, ctx: &mut Ctx, s: Slot) -> Event {
        match s {
            Slot::Local(i) => self.local[i],
            Slot::Global(i) => ctx.hart_mut().shared().firmware::<Machine>().global[i],
        }
    }

    fn put(&mut self, ctx: &mut Ctx, s: Slot, e: Event) {
        match s {
            Slot::Local(i) => self.local[i] = e,
            Slot::Global(i) => ctx.hart_mut().shared().firmware::<Machine>().global[i] = e,
        }
    }

    /// Service SSE function `fid`. `None`: the call resumed an interrupted state (`complete`),
    /// whose `a0`/`a1` are not the call's to write.
    pub fn call(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> Option<SbiRet> {
        let id = args.u32_at(0);
        Some(match fid {
            0 => self.read_attrs(ctx, args),
            1 => self.write_attrs(ctx, args),
            2 => self.register(ctx, id, args.a[1], args.a[2]),
            3 => self.transition(ctx, id, state::REGISTERED, state::UNUSED),
            4 => self.transition(ctx, id, state::REGISTERED, state::ENABLED),
            5 => self.transition(ctx, id, state::ENABLED, state::REGISTERED),
            6 => return self.complete(ctx),
            7 => self.inject(ctx, id, args.a[1]),
            // hart_unmask / hart_mask (FIDs 8, 9).
            8 if self.masked => {
                self.masked = false;
                ok(0)
            }
            8 => err(error::ALREADY_STARTED),
            9 if !self.masked => {
                self.masked = true;
                ok(0)
            }
            9 => err(error::ALREADY_STOPPED),
            _ => err(error::NOT_SUPPORTED),
        })
    }

    /// The checks `read_attrs` and `write_attrs` share, in the order of their tables: the
    /// event, `attr_count` 0, a reserved attribute id in the range, then the memory (XLEN/8
    /// aligned, `(XLEN/8) * attr_count` bytes of RAM). Returns the event, first attribute id,
    /// count and address.
    fn attr_range(ctx: &Ctx, args: &Args) -> Result<(Slot, u32, u32, u64), i64> {
        let s = lookup(ctx, args.u32_at(0))?;
        let (base, count) = (args.u32_at(1), args.u32_at(2));
        if count == 0 {
            return Err(error::INVALID_PARAM);
        }
        if base as u64 + count as u64 - 1 > attr::LAST as u64 {
            return Err(error::BAD_RANGE);
        }
        let w = args.xlen.bits() as u64 / 8;
        match args.phys_at(3) {
            Some(a) if a % w == 0 && in_ram(ctx, a, w * count as u64) => Ok((s, base, count, a)),
            _ => Err(error::INVALID_ADDRESS),
        }
    }

    /// `read_attrs(event_id, base_attr_id, attr_count, output_phys_lo, output_phys_hi)`.
    /// Attribute `base_attr_id + i` goes at offset `(XLEN/8) * i`: the function's text says
    /// `(XLEN/8) * (base_attr_id + i)`, which would run past the `(XLEN/8) * attr_count` bytes
    /// it gives the memory for any `base_attr_id` > 0; OpenSBI and Linux use `i`.
    fn read_attrs(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let (s, base, count, addr) = match Self::attr_range(ctx, args) {
            Ok(r) => r,
            Err(e) => return err(e),
        };
        let e = self.get(ctx, s);
        let me = ctx.hart().hart_id() as u64;
        let w = args.xlen.bits() as usize / 8;
        let mut out = Vec::with_capacity(w * count as usize);
        for id in base..base + count {
            let v = match id {
                attr::STATUS => {
                    // Every event may be injected: bit 3.
                    e.state as u64 | (e.pending as u64) << 2 | 1 << 3
                }
                attr::PRIORITY => e.priority as u64,
                attr::CONFIG => e.config,
                attr::PREFERRED_HART => match s {
                    Slot::Local(_) => me,
                    Slot::Global(_) => e.preferred,
                },
                attr::ENTRY_PC => e.entry_pc,
                attr::ENTRY_ARG => e.entry_arg,
                attr::INTERRUPTED_SEPC => e.sepc,
                attr::INTERRUPTED_FLAGS => e.flags,
                attr::INTERRUPTED_A6 => e.a6,
                _ => e.a7,
            };
            out.extend_from_slice(&v.to_le_bytes()[..w]);
        }
        if ctx.write_memory(addr, &out) {
            ok(0)
        } else {
            err(error::FAILED)
        }
    }

    /// `write_attrs(event_id, base_attr_id, attr_count, input_phys_lo, input_phys_hi)`: every
    /// attribute checked in id order first (the first error is returned, nothing written): a
    /// read-only one DENIED, a state rule INVALID_STATE, an illegal value INVALID_PARAM.
    fn write_attrs(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let (s, base, count, addr) = match Self::attr_range(ctx, args) {
            Ok(r) => r,
            Err(e) => return err(e),
        };
        let w = args.xlen.bits() as usize / 8;
        let mut buf = vec![0u8; w * count as usize];
        if !ctx.read_memory(addr, &mut buf) {
            return err(error::FAILED);
        }
        let harts = ctx.hart_mut().shared().count() as u64;
        let mut e = self.get(ctx, s);
        let idle = e.state <= state::REGISTERED;
        let running = e.state == state::RUNNING;
        let global = matches!(s, Slot::Global(_));
        for (k, id) in (base..base + count).enumerate() {
            let mut b = [0u8; 8];
            b[..w].copy_from_slice(&buf[w * k..w * (k + 1)]);
            let v = u64::from_le_bytes(b);
            let check = match id {
                attr::STATUS | attr::ENTRY_PC | attr::ENTRY_ARG => Err(error::DENIED),
                attr::PREFERRED_HART if !global => Err(error::DENIED),
                attr::PRIORITY | attr::CONFIG | attr::PREFERRED_HART if !idle => {
                    Err(error::INVALID_STATE)
                }
                // "only lower 32-bits of the value are used".
                attr::PRIORITY => Ok(()),
                attr::CONFIG if v & !ONESHOT != 0 => Err(error::INVALID_PARAM),
                // "must always be valid hart ID".
                attr::PREFERRED_HART if v >= harts => Err(error::INVALID_PARAM),
                attr::CONFIG | attr::PREFERRED_HART => Ok(()),
                // The interrupted state: RUNNING only (a global event runs on its preferred
                // hart, so "only the hart executing the event handler" is that one).
                _ if !running || (global && e.preferred != ctx.hart().hart_id() as u64) => {
                    Err(error::INVALID_STATE)
                }
                attr::INTERRUPTED_FLAGS if v & !(FLAG_SPP | FLAG_SPIE) != 0 => {
                    Err(error::INVALID_PARAM)
                }
                _ => Ok(()),
            };
            if let Err(code) = check {
                return err(code);
            }
            match id {
                attr::PRIORITY => e.priority = v as u32,
                attr::CONFIG => e.config = v,
                attr::PREFERRED_HART => e.preferred = v,
                attr::INTERRUPTED_SEPC => e.sepc = v,
                attr::INTERRUPTED_FLAGS => e.flags = v,
                attr::INTERRUPTED_A6 => e.a6 = v,
                _ => e.a7 = v,
            }
        }
        self.put(ctx, s, e);
        ok(0)
    }

    /// `register(event_id, handler_entry_pc, handler_entry_arg)`: UNUSED -> REGISTERED.
    fn register(&mut self, ctx: &mut Ctx, id: u32, pc: u64, arg: u64) -> SbiRet {
        let s = match lookup(ctx, id) {
            Ok(s) => s,
            Err(e) => return err(e),
        };
        if pc & 1 != 0 {
            return err(error::INVALID_PARAM);
        }
        let mut e = self.get(ctx, s);
        if e.state != state::UNUSED {
            return err(error::INVALID_STATE);
        }
        e.state = state::REGISTERED;
        e.entry_pc = pc;
        e.entry_arg = arg;
        self.put(ctx, s, e);
        ok(0)
    }

    /// `unregister`, `enable`, `disable`: the event must be in state `from` (INVALID_STATE
    /// otherwise) and moves to `to`.
    fn transition(&mut self, ctx: &mut Ctx, id: u32, from: u8, to: u8) -> SbiRet {
        let s = match lookup(ctx, id) {
            Ok(s) => s,
            Err(e) => return err(e),
        };
        let mut e = self.get(ctx, s);
        if e.state != from {
            return err(error::INVALID_STATE);
        }
        e.state = to;
        self.put(ctx, s, e);
        if id == event::LOCAL_PMU_OVERFLOW {
            self.route_lcofi(ctx, to == state::ENABLED);
        }
        // A global event enabled with its injection pending goes to its hart.
        if to == state::ENABLED && e.pending {
            if let Slot::Global(_) = s {
                notify(ctx, e.preferred as usize);
            }
        }
        ok(0)
    }

    /// `complete()`: the highest-priority event RUNNING on this hart goes back to ENABLED
    /// (REGISTERED when one-shot) and the interrupted state is resumed ("Software Event
    /// Completion"); with none, SUCCESS and nothing else.
    fn complete(&mut self, ctx: &mut Ctx) -> Option<SbiRet> {
        let Some(s) = self.running(ctx) else {
            return Some(ok(0));
        };
        let mut e = self.get(ctx, s);
        e.state = if e.config & ONESHOT != 0 {
            state::REGISTERED
        } else {
            state::ENABLED
        };
        self.put(ctx, s, e);
        if s.id() == event::LOCAL_PMU_OVERFLOW && e.state == state::REGISTERED {
            self.route_lcofi(ctx, false);
        }
        let h = ctx.hart_mut();
        let old = h.csr_read(num::MSTATUS).unwrap_or(0);
        let sepc = h.csr_read(num::SEPC).unwrap_or(0);
        // "Set privilege mode = sstatus.SPP"; then SIE = SPIE, SPIE and SPP from the flags.
        let priv_ = (old & mstatus::SPP != 0) as u8;
        let mut st = old & !(mstatus::SIE | mstatus::SPIE | mstatus::SPP);
        if old & mstatus::SPIE != 0 {
            st |= mstatus::SIE;
        }
        if e.flags & FLAG_SPIE != 0 {
            st |= mstatus::SPIE;
        }
        if e.flags & FLAG_SPP != 0 {
            st |= mstatus::SPP;
        }
        h.csr_write(num::MSTATUS, st);
        h.csr_write(num::SEPC, e.sepc);
        h.resume_at(sepc, priv_);
        ctx.set_x(17, e.a7);
        ctx.set_x(16, e.a6);
        None
    }

    /// The highest-priority event RUNNING on this hart.
    fn running(&self, ctx: &mut Ctx) -> Option<Slot> {
        self.on_this_hart(ctx)
            .into_iter()
            .filter(|(_, e)| e.state == state::RUNNING)
            .min_by_key(|(s, e)| key(e, *s))
            .map(|(s, _)| s)
    }

    /// The events that are taken on this hart: its local ones, and the global ones it is the
    /// preferred hart of.
    fn on_this_hart(&self, ctx: &mut Ctx) -> Vec<(Slot, Event)> {
        let me = ctx.hart().hart_id() as u64;
        let mut v: Vec<(Slot, Event)> = (0..LOCAL.len())
            .map(|i| (Slot::Local(i), self.local[i]))
            .collect();
        let m = ctx.hart_mut().shared().firmware::<Machine>();
        for (i, e) in m.global.iter().enumerate() {
            if e.preferred == me {
                v.push((Slot::Global(i), *e));
            }
        }
        v
    }

    /// `inject(event_id, hart_id)`: the event becomes pending on `hart_id` (a local event) or
    /// on its preferred hart (a global one, `hart_id` ignored); another hart's firmware gets
    /// an IPI for it. INVALID_PARAM for a local event's `hart_id` that is no hart.
    fn inject(&mut self, ctx: &mut Ctx, id: u32, hart: u64) -> SbiRet {
        let s = match lookup(ctx, id) {
            Ok(s) => s,
            Err(e) => return err(e),
        };
        let me = ctx.hart().hart_id();
        let harts = ctx.hart_mut().shared().count();
        match s {
            Slot::Local(i) => {
                if hart >= harts as u64 {
                    return err(error::INVALID_PARAM);
                }
                if hart as usize == me {
                    self.local[i].pending = true;
                } else {
                    ctx.hart_mut().shared().firmware::<Machine>().queued[hart as usize] |= 1 << i;
                    notify(ctx, hart as usize);
                }
            }
            Slot::Global(i) => {
                let m = ctx.hart_mut().shared().firmware::<Machine>();
                m.global[i].pending = true;
                let to = m.global[i].preferred as usize;
                if to != me {
                    notify(ctx, to);
                }
            }
        }
        ok(0)
    }

    /// The firmware's interrupt handler: LCOFI while LOCAL_PMU_OVERFLOW is enabled (or
    /// running) makes it pending (acknowledged: LCOFIP cleared), and a ready event is taken at
    /// the interrupted instruction. False for any other interrupt.
    pub fn machine_interrupt(&mut self, ctx: &mut Ctx, cause: u64) -> bool {
        let pmu = LOCAL
            .iter()
            .position(|&e| e == event::LOCAL_PMU_OVERFLOW)
            .unwrap_or(0);
        if cause != irq_code(irq::LCOFI)
            || lookup(ctx, event::LOCAL_PMU_OVERFLOW).is_err()
            || self.local[pmu].state < state::ENABLED
        {
            return false;
        }
        ctx.set_pending(irq::LCOFI, false);
        self.local[pmu].pending = true;
        let (pc, priv_) = (ctx.hart().pc(), ctx.hart().privilege());
        self.deliver(ctx, pc, priv_);
        true
    }

    /// A firmware IPI from another hart's SBI: the local events it injected for this hart
    /// become pending, and a ready event (those, or a global one) is taken at the interrupted
    /// instruction.
    pub fn firmware_ipi(&mut self, ctx: &mut Ctx) {
        let me = ctx.hart().hart_id();
        let q = std::mem::take(&mut ctx.hart_mut().shared().firmware::<Machine>().queued[me]);
        for (i, e) in self.local.iter_mut().enumerate() {
            e.pending |= q >> i & 1 != 0;
        }
        let (pc, priv_) = (ctx.hart().pc(), ctx.hart().privilege());
        self.deliver(ctx, pc, priv_);
    }

    /// After an SSE call on this hart (its `a0`/`a1` written): an event it made ready is taken
    /// with the call's return as the interrupted state, at `next` (the `ecall`'s next pc), or
    /// where `complete` resumed (`next` = `None`).
    pub fn after_call(&mut self, ctx: &mut Ctx, next: Option<u64>) {
        let pc = next.unwrap_or(ctx.hart().pc());
        let priv_ = ctx.hart().privilege();
        self.deliver(ctx, pc, priv_);
    }

    /// Take the first ready event at the interrupted `pc` in privilege `priv_` ("Software
    /// Event Injection"): save the interrupted state into its attributes, `a6` = hart id, `a7`
    /// = ENTRY_ARG, `sepc` = `pc`, `sstatus.SPP` = `priv_`, SPIE = SIE, SIE = 0, S-mode at
    /// ENTRY_PC. True if one was taken.
    fn deliver(&mut self, ctx: &mut Ctx, pc: u64, priv_: u8) -> bool {
        if self.masked || priv_ > rvtrace_sim::privilege::S {
            return false;
        }
        let events = self.on_this_hart(ctx);
        let ready = events
            .iter()
            .filter(|(_, e)| e.pending && e.state == state::ENABLED)
            .min_by_key(|(s, e)| key(e, *s));
        let Some(&(s, mut e)) = ready else {
            return false;
        };
        let first_running = events
            .iter()
            .filter(|(_, e)| e.state == state::RUNNING)
            .map(|(s, e)| key(e, *s))
            .min();
        if first_running.is_some_and(|r| r <= key(&e, s)) {
            return false;
        }
        let me = ctx.hart().hart_id() as u64;
        let h = ctx.hart_mut();
        let st = h.csr_read(num::MSTATUS).unwrap_or(0);
        e.flags = 0;
        if st & mstatus::SPP != 0 {
            e.flags |= FLAG_SPP;
        }
        if st & mstatus::SPIE != 0 {
            e.flags |= FLAG_SPIE;
        }
        e.sepc = h.csr_read(num::SEPC).unwrap_or(0);
        e.a6 = ctx.x(16);
        e.a7 = ctx.x(17);
        e.pending = false;
        e.state = state::RUNNING;
        self.put(ctx, s, e);
        ctx.set_x(16, me);
        ctx.set_x(17, e.entry_arg);
        let h = ctx.hart_mut();
        let old = st;
        let mut st = old & !(mstatus::SPP | mstatus::SPIE | mstatus::SIE);
        if priv_ == rvtrace_sim::privilege::S {
            st |= mstatus::SPP;
        }
        if old & mstatus::SIE != 0 {
            st |= mstatus::SPIE;
        }
        h.csr_write(num::MSTATUS, st);
        h.csr_write(num::SEPC, pc);
        h.resume_at(e.entry_pc, rvtrace_sim::privilege::S);
        true
    }
    /// Whether the firmware takes LCOFI itself (LOCAL_PMU_OVERFLOW enabled): `mideleg.LCOFI`
    /// clear and `mie.LCOFIE` set, LCOFIP cleared (OpenSBI 1.5.1's `pmu_sse_enable` does the
    /// same); otherwise delegated to S-mode again as `enter_supervisor` set it, with S-mode's
    /// `sie.LCOFIE` as it was.
    fn route_lcofi(&mut self, ctx: &mut Ctx, firmware: bool) {
        let h = ctx.hart_mut();
        let deleg = h.csr_read(num::MIDELEG).unwrap_or(0);
        let mie = h.csr_read(num::MIE).unwrap_or(0);
        let delegated = deleg & irq::LCOFI != 0;
        // Already routed that way.
        if firmware != delegated {
            return;
        }
        if firmware {
            self.s_lcofie = mie & irq::LCOFI != 0;
            h.csr_write(num::MIDELEG, deleg & !irq::LCOFI);
            h.csr_write(num::MIE, mie | irq::LCOFI);
        } else {
            let s = if self.s_lcofie { irq::LCOFI } else { 0 };
            h.csr_write(num::MIE, mie & !irq::LCOFI | s);
            h.csr_write(num::MIDELEG, deleg | irq::LCOFI);
        }
        ctx.set_pending(irq::LCOFI, false);
    }
}

/// The interrupt code of a single `mip` bit.
fn irq_code(bit: u64) -> u64 {
    bit.trailing_zeros() as u64
}

/// A firmware IPI to hart `h` (its firmware then looks for events to take).
fn notify(ctx: &mut Ctx, h: usize) {
    ctx.hart_mut().shared().post(
        h,
        Mail {
            firmware_ipi: true,
            ..Mail::default()
        },
    );
}
