//! What the harts of one machine share besides memory and devices: their SBI HSM states, the
//! requests one hart leaves for another (an IPI, a remote fence, a start), and the LR
//! reservations a store by another hart breaks. It lives in the bus (`Bus::harts`),
//! which the running hart holds; `machine.rs` delivers a hart's requests when its turn comes.

/// The most harts a machine has (QEMU `virt` takes more; the ACLINT and PLIC layouts here are
/// QEMU's for up to this many).
pub const MAX_HARTS: usize = 8;

/// A hart's state in the SBI HSM extension (SBI v3.0, table "HSM Hart States"; the values are
/// the spec's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HsmState {
    /// Running.
    Started = 0,
    /// Not running; `hart_start` starts it.
    Stopped = 1,
    /// Started by another hart, not yet running.
    StartPending = 2,
    /// Suspended by `hart_suspend`, waiting for an interrupt.
    Suspended = 4,
}

/// Requests left for a hart by other harts (or by its own SBI call), delivered before it next
/// runs an instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mail {
    /// Make SSIP pending (an SBI IPI).
    pub ssip: bool,
    /// Flush the hart's TLB (SBI RFENCE `remote_sfence_vma[_asid]`; the whole TLB: flushing
    /// more than asked is allowed).
    pub sfence_vma: bool,
    /// A `fence.i` (SBI RFENCE `remote_fence_i`): nothing to do, as for a local one (the decode
    /// caches follow every write to code), but the request is delivered as the others.
    pub fence_i: bool,
    /// Start in S-mode at this address with `a1` = the opaque value (HSM `hart_start`, or the
    /// resume of a non-retentive `hart_suspend`).
    pub start: Option<(u64, u64)>,
    /// A firmware IPI: the hart's extensions get [`crate::extension::Extension::firmware_ipi`]
    /// before its next instruction (an SBI's requests to another hart's SBI, such as an SSE
    /// event to deliver there).
    pub firmware_ipi: bool,
}

/// The shared per-hart state of a machine of [`Shared::count`] harts.
#[derive(Debug)]
pub struct Shared {
    count: usize,
    /// The hart that holds the bus (its stores break the others' reservations).
    pub(crate) current: usize,
    state: [HsmState; MAX_HARTS],
    mail: [Mail; MAX_HARTS],
    /// Each hart's LR reservation: the 8-byte granule's physical address.
    reserved: [Option<u64>; MAX_HARTS],
    /// Where a hart in a non-retentive `hart_suspend` resumes, with its opaque value.
    resume: [Option<(u64, u64)>; MAX_HARTS],
    /// State the firmware (the harts' SBIs) keeps for the whole machine ([`Shared::firmware`]).
    firmware: FirmwareState,
}

/// The firmware's machine-wide state: any type, made on first use.
#[derive(Default)]
struct FirmwareState(Option<Box<dyn std::any::Any + Send>>);

impl std::fmt::Debug for FirmwareState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "FirmwareState(..)"
        } else {
            "FirmwareState(None)"
        })
    }
}

/// Bytes of the reservation set an LR makes: the naturally aligned doubleword that holds the
/// address (the unprivileged ISA leaves the size to the implementation; it covers both LR
/// widths).
const GRANULE: u64 = 8;

/// The reservation granule that holds `pa`.
pub(crate) fn granule(pa: u64) -> u64 {
    pa & !(GRANULE - 1)
}

impl Shared {
    /// `count` harts (1..=[`MAX_HARTS`]), all STARTED.
    pub fn new(count: usize) -> Shared {
        Shared {
            count: count.clamp(1, MAX_HARTS),
            current: 0,
            state: [HsmState::Started; MAX_HARTS],
            mail: [Mail::default(); MAX_HARTS],
            reserved: [None; MAX_HARTS],
            resume: [None; MAX_HARTS],
            firmware: FirmwareState::default(),
        }
    }

    /// The firmware's state for the whole machine (what every hart's SBI sees alike, such as
    /// SSE's global events), of type `T`, made with `T::default()` on first use (also when a
    /// state of another type was there: one firmware per machine).
    pub fn firmware<T: Default + Send + 'static>(&mut self) -> &mut T {
        if !self.firmware.0.as_ref().is_some_and(|b| b.is::<T>()) {
            self.firmware.0 = Some(Box::new(T::default()));
        }
        self.firmware
            .0
            .as_mut()
            .and_then(|b| b.downcast_mut::<T>())
            .expect("made above")
    }

    /// Harts in the machine.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Hart `h`'s HSM state (`None`: no such hart).
    pub fn state(&self, h: usize) -> Option<HsmState> {
        (h < self.count).then(|| self.state[h])
    }

    /// Set hart `h`'s HSM state.
    pub fn set_state(&mut self, h: usize, s: HsmState) {
        if h < self.count {
            self.state[h] = s;
        }
    }

    /// Leave requests for hart `h` (or-ed with those waiting).
    pub fn post(&mut self, h: usize, m: Mail) {
        if let Some(w) = self.mail.get_mut(h) {
            w.ssip |= m.ssip;
            w.sfence_vma |= m.sfence_vma;
            w.fence_i |= m.fence_i;
            w.start = m.start.or(w.start);
            w.firmware_ipi |= m.firmware_ipi;
        }
    }

    /// Whether requests wait for hart `h`.
    pub(crate) fn has_mail(&self, h: usize) -> bool {
        self.mail.get(h).is_some_and(|m| *m != Mail::default())
    }

    /// Take hart `h`'s requests.
    pub(crate) fn take_mail(&mut self, h: usize) -> Option<Mail> {
        let m = std::mem::take(self.mail.get_mut(h)?);
        (m != Mail::default()).then_some(m)
    }

    /// Hart `h` suspends; a non-retentive suspend (`resume`) starts it at the address with the
    /// opaque value in `a1` when it wakes.
    pub(crate) fn suspend(&mut self, h: usize, resume: Option<(u64, u64)>) {
        self.state[h] = HsmState::Suspended;
        self.resume[h] = resume;
    }

    /// Hart `h` wakes from a suspend: STARTED again, and where a non-retentive one resumes.
    pub(crate) fn wake(&mut self, h: usize) -> Option<(u64, u64)> {
        if self.state[h] == HsmState::Suspended {
            self.state[h] = HsmState::Started;
        }
        self.resume[h].take()
    }

    /// Hart `h` reserves the granule of `pa`.
    pub(crate) fn reserve(&mut self, h: usize, pa: u64) {
        self.reserved[h] = Some(granule(pa));
    }

    /// Hart `h`'s reservation (its granule), given up (an SC).
    pub(crate) fn take_reservation(&mut self, h: usize) -> Option<u64> {
        self.reserved[h].take()
    }

    /// The bytes `lo..hi` of the 4 KiB page at `page` were written by the hart holding the
    /// bus: every other hart's reservation of a granule among them is broken. True if some
    /// reservation remains in the page.
    pub(crate) fn break_reservations(&mut self, lo: u64, hi: u64, page: u64) -> bool {
        let current = self.current;
        let mut left = false;
        for (h, r) in self.reserved.iter_mut().enumerate() {
            if let Some(g) = *r {
                if h != current && g < hi && lo < g + GRANULE {
                    *r = None;
                } else if g & !0xfff == page {
                    left = true;
                }
            }
        }
        left
    }
}
