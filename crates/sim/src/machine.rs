//! A machine of several harts on one shared bus (QEMU `virt` with `-smp N`), run in turn,
//! deterministically: the same input gives the same interleaving, so traces and tests are
//! reproducible.
//!
//! Each [`Hart`] owns a `bus` field; the machine keeps the one real [`Bus`] and moves it into
//! the hart whose turn it is (`std::mem::swap`) and back. What the bus held per hart before
//! there were several is recomputed when a hart takes it: the PMP fast path (`open`, by the
//! hart's `run`), `io_touched` (set: the other harts changed the world, so the trap-loop
//! detector sees no repeat across a turn) and `irq_dirty` (every `run` starts with the
//! interrupt check it asks for); `mtime_offset` is set from the machine's clock.
//!
//! Time: one clock for the machine (ACLINT `mtime`). Harts run in rounds, hart 0 first, each
//! for at most a quantum of instructions ([`QUANTUM`] unless [`Machine::set_quantum`] says
//! otherwise); at a round's start the clock reads `T`, and an instruction `k` instructions into
//! a hart's turn sees `T + k` (its `mtime_offset` is `T - instret` for the turn); a round
//! advances the clock by the quantum, whatever the
//! number of harts (a write of `mtime` moves it by the amount written). A run whose budget ends
//! inside a turn leaves the rest of the turn to the next run, so slicing a run changes nothing.
//! A hart in `wfi` (or an
//! SBI suspend) gives its turn away; it runs again at the start of a turn where an interrupt
//! `mie` enables is pending; when every hart waits, the clock jumps to the earliest timer
//! deadline that wakes one. With one hart the machine runs it directly, with no per-quantum
//! cost: `mtime = instret + mtime_offset`, and `wfi` moves the offset to the deadline.

use crate::arch::Stop;
use crate::bus::Bus;
use crate::hart::{Config, Decoded, Hart};
use crate::observer::Observer;
use crate::smp::{HsmState, MAX_HARTS};

/// Instructions a hart runs per turn by default when several harts share the machine: short
/// enough that an IPI or a lock released by another hart is seen within a round (4 ms of the
/// 10 MHz clock, one tick of a HZ=250 kernel), long enough that a turn's costs (moving the bus,
/// the hart's code, data and translations coming back into the host's caches) vanish. Debian's
/// kernel on 4 harts (whole boot to power-off, docs/perf/linux-boot-profile.md section 12):
/// 1,285 M instructions with 10,000-instruction turns, 1,196 M with 40,000 (less spinning while
/// other harts hold their turns), 1,163 M with 100,000; wall time per instruction over one
/// hart's 1.21x with 10,000, 0.99x-1.17x with 40,000 (callgrind's estimate: 1.10x); 1,000 took
/// 1.8x the time of 10,000.
pub const QUANTUM: u64 = 40_000;

/// The harts and the bus they share.
pub struct Machine {
    harts: Vec<Hart>,
    /// The bus while no hart holds it.
    bus: Bus,
    /// The decode cache and the blocks while no hart holds them: one set for all harts, which
    /// run the same kernel code (docs/perf/linux-boot-profile.md, section 9).
    decoded: Decoded,
    /// The clock (`mtime`) at the start of the current round.
    time: u64,
    /// The next hart to take a turn in the current round.
    turn: usize,
    /// Instructions that hart already ran in its turn when a run's budget ended inside it: the
    /// next run goes on with the rest of the turn, so how a caller slices a run changes nothing.
    turn_ran: u64,
    /// Some hart ran an instruction in the current round.
    busy: bool,
    /// Instructions per turn.
    quantum: u64,
}

impl Machine {
    /// A machine of `harts` harts (1..=[`MAX_HARTS`]; clamped) of configuration `cfg`, hart `h`
    /// with `mhartid` = `h`, every hart at reset.
    pub fn new(cfg: &Config, harts: usize) -> Machine {
        let n = harts.clamp(1, MAX_HARTS);
        let mut list: Vec<Hart> = (0..n)
            .map(|h| {
                let mut hart = Hart::new(cfg);
                hart.id = h;
                hart.x[10] = h as u64;
                hart.bus = Bus::new(0);
                hart
            })
            .collect();
        let mut bus = Bus::with_harts(cfg.ram_size, n);
        if n == 1 {
            // One hart holds the bus for good: it runs as a hart alone does.
            std::mem::swap(&mut list[0].bus, &mut bus);
        }
        Machine {
            harts: list,
            bus,
            decoded: Decoded::new(cfg),
            time: 0,
            turn: 0,
            turn_ran: 0,
            busy: false,
            quantum: QUANTUM,
        }
    }

    /// Instructions per turn (at least 1), instead of [`QUANTUM`]: shorter turns interleave the
    /// harts more finely (another hart's store is seen sooner) and cost more per instruction.
    /// For a machine that has not run yet: the interleaving and the clock follow from it.
    pub fn set_quantum(&mut self, quantum: u64) {
        self.quantum = quantum.max(1);
    }

    /// Harts in the machine.
    pub fn len(&self) -> usize {
        self.harts.len()
    }

    /// Whether the machine has no hart (never: at least one).
    pub fn is_empty(&self) -> bool {
        self.harts.is_empty()
    }

    /// Call `f` on hart `h` holding the bus (to load, boot, attach, read its state).
    pub fn with_hart<R>(&mut self, h: usize, f: impl FnOnce(&mut Hart) -> R) -> R {
        if self.harts.len() == 1 {
            return f(&mut self.harts[0]);
        }
        let ran = if h == self.turn { self.turn_ran } else { 0 };
        self.take_bus(h, ran);
        let r = f(&mut self.harts[h]);
        self.give_bus(h);
        r
    }

    /// Hart `h` (its `bus` is the shared one only inside [`Machine::with_hart`]).
    pub fn hart(&self, h: usize) -> &Hart {
        &self.harts[h]
    }

    /// The harts, the first holding the bus (for a machine of one hart: the hart alone).
    pub fn into_harts(mut self) -> Vec<Hart> {
        if self.harts.len() > 1 {
            std::mem::swap(&mut self.harts[0].bus, &mut self.bus);
            self.harts[0].swap_decoded(&mut self.decoded);
        }
        self.harts
    }

    /// Instructions retired by all harts.
    pub fn instret(&self) -> u64 {
        self.harts.iter().map(|h| h.instret).sum()
    }

    /// Hart `h` takes the bus, `ran` instructions into its turn (its clock reads the round's
    /// start plus those).
    fn take_bus(&mut self, h: usize, ran: u64) {
        let hart = &mut self.harts[h];
        std::mem::swap(&mut hart.bus, &mut self.bus);
        hart.swap_decoded(&mut self.decoded);
        hart.bus.harts.current = h;
        hart.bus.clint.mtime_offset = self.time.wrapping_sub(hart.instret.wrapping_sub(ran));
        hart.bus.io_touched = true;
    }

    fn give_bus(&mut self, h: usize) {
        std::mem::swap(&mut self.harts[h].bus, &mut self.bus);
        self.harts[h].swap_decoded(&mut self.decoded);
    }

    /// Run until the program stops or `max_insns` more instructions retire (all harts
    /// together), each hart's events to its own observer (`obs[h]`; one per hart).
    pub fn run<O: Observer>(&mut self, obs: &mut [O], max_insns: u64) -> Stop {
        assert_eq!(obs.len(), self.harts.len(), "one observer per hart");
        if self.harts.len() == 1 {
            return self.harts[0].run(&mut obs[0], max_insns);
        }
        let mut left = max_insns;
        loop {
            while self.turn < self.harts.len() {
                if left == 0 {
                    return Stop::InsnLimit;
                }
                let h = self.turn;
                let rest = self.quantum.saturating_sub(self.turn_ran).max(1);
                let n = left.min(rest);
                let (ran, stop) = self.take_turn(h, &mut obs[h], n, self.turn_ran);
                left -= ran;
                self.busy |= ran > 0;
                if let Some(stop) = stop {
                    self.turn_ran += ran;
                    return stop;
                }
                if ran == n && n < rest {
                    // The budget ended inside the turn: the next run goes on with it.
                    self.turn_ran += ran;
                    return Stop::InsnLimit;
                }
                self.turn_ran = 0;
                self.turn += 1;
            }
            self.turn = 0;
            if std::mem::take(&mut self.busy) {
                self.time = self.time.wrapping_add(self.quantum);
            } else if let Some(stop) = self.all_wait() {
                return stop;
            }
        }
    }

    /// Hart `h`'s turn of at most `n` instructions: instructions retired, and a stop that ends
    /// the machine's run.
    fn take_turn<O: Observer>(
        &mut self,
        h: usize,
        obs: &mut O,
        n: u64,
        done: u64,
    ) -> (u64, Option<Stop>) {
        // A hart that is neither started nor suspended runs only when a request (an HSM start)
        // comes: without one its turn is empty, and the bus (about 2 KB) need not move in and
        // out (most turns of a boot's first half, before Linux starts the other harts).
        if !matches!(
            self.bus.harts.state(h),
            Some(HsmState::Started | HsmState::Suspended)
        ) && !self.bus.harts.has_mail(h)
        {
            return (0, None);
        }
        self.take_bus(h, done);
        let time = self.time;
        let hart = &mut self.harts[h];
        hart.take_mail();
        let runs = match hart.bus.harts.state(h) {
            Some(HsmState::Started) if !hart.waiting => true,
            Some(HsmState::Started | HsmState::Suspended) if hart.wakes() => {
                hart.waiting = false;
                if let Some((at, opaque)) = hart.bus.harts.wake(h) {
                    hart.start_supervisor(at, opaque);
                }
                true
            }
            _ => false,
        };
        if !runs {
            self.give_bus(h);
            return (0, None);
        }
        let before = hart.instret;
        let offset = hart.bus.clint.mtime_offset;
        let stop = hart.run(obs, n);
        let ran = hart.instret - before;
        // A write of `mtime` moved the hart's offset: the machine's clock moves with it.
        let moved = hart.bus.clint.mtime_offset.wrapping_sub(offset);
        self.time = time.wrapping_add(moved);
        let parked = hart.waiting
            || matches!(
                hart.bus.harts.state(h),
                Some(HsmState::Stopped | HsmState::Suspended)
            );
        self.give_bus(h);
        match stop {
            Stop::InsnLimit => (ran, None),
            Stop::Requested if parked => (ran, None),
            stop => (ran, Some(stop)),
        }
    }

    /// No hart ran in a round: the clock jumps to the earliest deadline that wakes a waiting
    /// hart, or input for the UART is awaited; `Some` when nothing can ever wake a hart.
    fn all_wait(&mut self) -> Option<Stop> {
        let mut wake: Option<u64> = None;
        let mut waiting = false;
        for h in 0..self.harts.len() {
            if !self.harts[h].waiting {
                continue;
            }
            waiting = true;
            self.take_bus(h, 0);
            if let Some(d) = self.harts[h].wake_deadline() {
                wake = Some(wake.map_or(d, |w| w.min(d)));
            }
            self.give_bus(h);
        }
        if let Some(t) = wake {
            self.time = t;
            return None;
        }
        if waiting && self.bus.uart_wants_input() {
            self.bus.uart_poll_input();
            return None;
        }
        Some(Stop::Error(if waiting {
            "every hart waits for an interrupt (wfi or an SBI suspend) and nothing can raise one"
                .into()
        } else {
            "no hart runs (every hart is stopped)".into()
        }))
    }
}
