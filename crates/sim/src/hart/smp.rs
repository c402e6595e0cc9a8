//! The hart as one of several (`machine.rs`): its id, waiting for an interrupt while other
//! harts run, LR reservations other harts' stores break, and the requests other harts leave
//! for it (`smp.rs`).

use super::Hart;
use crate::arch::{privilege, Stop};
use crate::csr::{irq, mstatus};
use crate::pmp::Access;

impl Hart {
    /// `mhartid`.
    pub fn hart_id(&self) -> usize {
        self.id
    }

    /// `wfi` or a suspend with no interrupt pending, in a machine of several harts: the hart
    /// ends its turn and waits; the machine runs it again once an interrupt `mie` enables is
    /// pending (`Machine::run`). False when nothing can wake it (`mie` is 0).
    pub(crate) fn wait_for_other_harts(&mut self) -> bool {
        if self.csr.mie == 0 {
            return false;
        }
        self.waiting = true;
        self.stop = Some(Stop::Requested);
        // Before the next instruction: a non-retentive suspend must not run on past its call.
        self.recheck();
        true
    }

    /// SBI HSM `hart_suspend` in a machine of several harts: the hart is SUSPENDED and waits
    /// as in `wfi`; a non-retentive suspend (`resume`: the address and opaque value) resumes
    /// there when it wakes, a retentive one after the call. False when nothing can wake it.
    pub fn suspend(&mut self, resume: Option<(u64, u64)>) -> bool {
        if !self.wait_for_other_harts() {
            return false;
        }
        self.bus.harts.suspend(self.id, resume);
        true
    }

    /// Whether a waiting hart wakes: an interrupt `mie` enables is pending (privileged ISA,
    /// "Wait for Interrupt", whatever the global enables).
    pub(crate) fn wakes(&mut self) -> bool {
        self.latch_stimer();
        self.mip() & self.csr.mie != 0 || self.firmware_ipi
    }

    /// An LR of the virtual address `va` (its access already done): the machine records the
    /// reservation of its physical granule, which other harts' stores break.
    pub(crate) fn reserve(&mut self, va: u64) {
        if let Some(pa) = self.data_address(va) {
            self.bus.reserve(self.id, pa);
        }
    }

    /// Whether no other hart wrote the granule this hart reserved at `va` since its LR (an SC's
    /// condition besides the hart's own reservation); the reservation is given up.
    pub(crate) fn reservation_held(&mut self, va: u64) -> bool {
        if self.bus.harts.count() == 1 {
            return true;
        }
        // No translation (and its A-bit update) unless the hart still holds a reservation.
        let Some(granule) = self.bus.harts.take_reservation(self.id) else {
            return false;
        };
        self.data_address(va)
            .is_some_and(|pa| crate::smp::granule(pa) == granule)
    }

    /// The physical address of a data access at `va` that just succeeded.
    fn data_address(&mut self, va: u64) -> Option<u64> {
        if self.translating().1 {
            self.translate_data(va, 1, Access::Read)
                .ok()
                .map(|p| p[0].1)
        } else {
            Some(va)
        }
    }

    /// Drop every decoded instruction (the decode cache and the blocks): for a shared set
    /// decoded for another XLEN or other extensions (`Hart::swap_decoded`).
    pub(crate) fn flush_decode_caches(&mut self) {
        for s in self.icache.iter_mut() {
            s.pc = 1;
        }
        self.blocks.forget();
    }

    /// Deliver what other harts (or this hart's own SBI call) asked of this hart: SSIP, fences,
    /// a start (HSM `hart_start` or the resume of a non-retentive suspend).
    pub(crate) fn take_mail(&mut self) {
        let Some(m) = self.bus.harts.take_mail(self.id) else {
            return;
        };
        if m.ssip {
            self.csr.mip_sw |= irq::SSI;
        }
        if m.sfence_vma {
            self.sfence_vma(None, None);
        }
        // A remote `fence.i` (`m.fence_i`) has nothing to flush, as a local one: the decode
        // caches follow every write to code through the bus, whichever hart made it. (Flushing
        // the set the harts share at each hart's request threw away the whole kernel's decoding
        // up to once per hart for each `flush_icache_all` of the boot's code patching.)
        if m.firmware_ipi {
            self.firmware_ipi = true;
        }
        if let Some((at, opaque)) = m.start {
            self.start_supervisor(at, opaque);
            self.restarted = true;
            self.bus
                .harts
                .set_state(self.id, crate::smp::HsmState::Started);
        }
        self.recheck();
    }

    /// Enter S-mode at `at` as SBI v3.0 HSM "Hart Start Register State" says (`satp` 0,
    /// `sstatus.SIE` 0, `a0` = hart id, `a1` = `opaque`); the rest of the machine state is
    /// what the firmware left (`boot::enter_supervisor` set it up for every hart).
    pub(crate) fn start_supervisor(&mut self, at: u64, opaque: u64) {
        self.csr.satp = 0;
        self.csr.mstatus &= !mstatus::SIE;
        self.priv_ = privilege::S;
        self.pc = self.trunc(at);
        self.x[10] = self.id as u64;
        self.x[11] = self.sext(opaque);
        self.waiting = false;
        self.reservation = None;
        self.pmp_refresh();
        self.counters.set_mode(self.priv_, self.instret);
        self.recheck();
    }
}
