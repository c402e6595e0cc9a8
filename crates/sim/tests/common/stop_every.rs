//! Cutting a run at many points (the ingress tests'): an observer wrapper that asks for a stop
//! after every `every`-th event, and a run in slices or with such stops.

use rvtrace_sim::observer::{Observer, Retired, RetiredRun, TrapInfo};
use rvtrace_sim::{Hart, Stop};

/// The most instructions a cut run goes to.
pub const LIMIT: u64 = 20_000_000;

/// How a run is cut.
#[derive(Clone, Copy, Debug)]
pub enum Cut {
    /// In slices of this many instructions (`hart.run`'s limit).
    Slices(u64),
    /// A stop request after every `n`-th run or instruction.
    Requests(u64),
}

/// Runs `obs` to the program's end (at most [`LIMIT`] instructions) as `cut` says; asserts the
/// run was cut at least once.
pub fn run_cut<O: Observer>(hart: &mut Hart, obs: O, cut: Cut) {
    let (slice, every) = match cut {
        Cut::Slices(n) => (n, u64::MAX),
        Cut::Requests(n) => (LIMIT, n),
    };
    let mut obs = StopEvery {
        inner: obs,
        every,
        seen: 0,
    };
    let mut stops = 0u64;
    loop {
        let left = LIMIT - hart.instret.min(LIMIT);
        match hart.run(&mut obs, slice.min(left)) {
            Stop::InsnLimit if left > slice => stops += 1,
            Stop::Requested => stops += 1,
            _ => break,
        }
    }
    assert!(stops > 0, "{cut:?}: the run was not cut");
}

/// Asks for a stop after every `every`-th event it sees (runs taken as runs).
pub struct StopEvery<O> {
    /// The observer the events go on to.
    pub inner: O,
    /// Stop after every this many events.
    pub every: u64,
    /// Events seen so far.
    pub seen: u64,
}

impl<O: Observer> Observer for StopEvery<O> {
    const RETIRE_RUNS: bool = O::RETIRE_RUNS;
    fn retire(&mut self, ev: &Retired) {
        self.seen += 1;
        self.inner.retire(ev);
    }
    fn retire_run(&mut self, run: &impl RetiredRun) {
        self.seen += 1;
        self.inner.retire_run(run);
    }
    fn trap(&mut self, ev: &TrapInfo) {
        self.inner.trap(ev);
    }
    fn csr_write(&mut self, csr: u16, value: u64) {
        self.inner.csr_write(csr, value);
    }
    fn stop_requested(&mut self) -> bool {
        self.seen.is_multiple_of(self.every)
    }
}
