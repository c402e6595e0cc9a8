//! What the instrumented loop notes of an instruction while it executes: its data accesses, for
//! the micro-architecture model (`hart/instrument.rs` tallies them).

use crate::observer::{MemAccess, MemKind, Observer, Retired, TrapInfo};

/// Data accesses of one instruction (an AMO makes two; more are not possible).
#[derive(Clone, Copy)]
pub(crate) struct Accesses {
    pub(crate) n: u8,
    pub(crate) a: [(u64, u8, bool); 4],
}

impl Accesses {
    pub(crate) const EMPTY: Accesses = Accesses {
        n: 0,
        a: [(0, 0, false); 4],
    };

    /// `(address, size, is_write)` of each access.
    pub(crate) fn as_slice(&self) -> &[(u64, u8, bool)] {
        &self.a[..self.n as usize]
    }
}

/// An observer that passes everything on and notes data accesses for the model.
pub(crate) struct Probe<'a, O: Observer> {
    pub(crate) obs: &'a mut O,
    pub(crate) acc: &'a mut Accesses,
}

impl<O: Observer> Observer for Probe<'_, O> {
    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        self.obs.retire(ev)
    }
    #[inline(always)]
    fn trap(&mut self, ev: &TrapInfo) {
        self.obs.trap(ev)
    }
    #[inline(always)]
    fn gpr_write(&mut self, rd: u8, value: u64) {
        self.obs.gpr_write(rd, value)
    }
    #[inline(always)]
    fn fpr_write(&mut self, rd: u8, value: u64) {
        self.obs.fpr_write(rd, value)
    }
    #[inline(always)]
    fn csr_write(&mut self, csr: u16, value: u64) {
        self.obs.csr_write(csr, value)
    }
    #[inline(always)]
    fn mem_access(&mut self, acc: &MemAccess) {
        let n = self.acc.n as usize;
        if n < self.acc.a.len() {
            self.acc.a[n] = (acc.addr, acc.size, acc.kind == MemKind::Store);
            self.acc.n += 1;
        }
        self.obs.mem_access(acc)
    }
    #[inline(always)]
    fn trap_return(&mut self, mstatus: u64, to_priv: u8) {
        self.obs.trap_return(mstatus, to_priv)
    }
    #[inline(always)]
    fn stop_requested(&mut self) -> bool {
        self.obs.stop_requested()
    }
}
