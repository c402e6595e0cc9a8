//! An observer wrapper that asks for a stop after every `every`-th event (the ingress tests'
//! way to cut a run at every point).

use rvtrace_sim::observer::{Observer, Retired, RetiredRun, TrapInfo};

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
