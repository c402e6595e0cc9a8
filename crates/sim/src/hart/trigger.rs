//! The hart's debug-trigger checks (the trigger registers are `crate::trigger`).

use super::Hart;
use crate::arch::{cause, Exc};
use crate::observer::Observer;
use crate::trigger::*;

impl Hart {
    /// A load/store trigger check on the hart's slow data path: `Err` is the breakpoint
    /// exception the access raises instead of happening.
    #[inline]
    pub(crate) fn data_trigger(&self, addr: u64, size: u64, kind: Kind) -> Result<(), Exc> {
        if self.csr.trig.data_hit(addr, size, kind, self.priv_) {
            return Err(Exc {
                cause: cause::BREAKPOINT,
                tval: 0,
            });
        }
        Ok(())
    }

    /// An execute trigger fired on the instruction at `pc`: it does not execute; the hart
    /// takes the breakpoint exception.
    #[cold]
    pub(crate) fn exec_trigger_trap<O: Observer>(&mut self, obs: &mut O, pc: u64) {
        let trap = self.take_trap(cause::BREAKPOINT, 0, false, pc);
        obs.trap(&trap);
        self.note_fault(trap);
        if obs.stop_requested() {
            self.stop = Some(crate::Stop::Requested);
            self.recheck();
        }
    }
}
