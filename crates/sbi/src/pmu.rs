//! The PMU extension (SBI v3.0 "Performance Monitoring Unit Extension", EID 0x504D55): every
//! function, on the hart's counters (`rvtrace_sim::counters`) and this SBI's firmware counters.
//!
//! Logical counters: 0 `cycle`, 1 `time`, 2 `instret`, 3.. the hart's `mhpmcounter3..`
//! (`hpm_counters` of them), then [`FW_COUNTERS`] firmware counters. Each counter is free or
//! configured for one event (`config_matching` configures, `stop` with RESET frees), and
//! stopped or started. Index 1 (`time`) is not a counter: it keeps its place in the
//! numbering, `counter_get_info`, start, stop and the firmware reads answer INVALID_PARAM for
//! it, and `config_matching` never picks it (no event can go on it).
//!
//! Programming a hardware counter is what M-mode firmware does: `mhpmevent` = the event
//! selector (the zero-extended `event_idx`, or the raw `event_data`) with the Sscofpmf mode
//! filters from the config flags, `mcountinhibit` to start/stop, `mhpmcounter` for values;
//! `cycle`/`instret` filters go to Smcntrpmf's `mcyclecfg`/`minstretcfg`. The writes take
//! effect after the `ecall` (the hart's rule for counter writes), which the counters do not
//! count as retired: S-mode sees a counter start and stop exactly at the call.

use crate::{err, error, in_ram, ok, Args, Sbi, SbiRet};
use rvtrace_isa::Xlen;
use rvtrace_sim::counters::{event, hpmevent, resolve, Event};
use rvtrace_sim::csr::num;
use rvtrace_sim::extension::{Ctx, HartAccess};

/// Firmware counters (as many as OpenSBI provides).
pub const FW_COUNTERS: usize = 16;

/// Firmware event codes (SBI v3.0 PMU 11.5, table "PMU Firmware Events"). Every standard
/// event (0..=21) can be configured on a firmware counter, as OpenSBI and Linux's KVM allow;
/// a counter counts what this SBI sees. It sees SET_TIMER, the IPIs and the remote fences,
/// which it does itself. The misaligned, access and illegal-instruction events (0..=4) count
/// the traps firmware emulates: here those traps are delegated to S-mode (`medeleg`), so they
/// never reach the SBI and the counters stay 0. The HFENCE events (14..=21) stay 0 too: the
/// hart has no hypervisor extension, and the HFENCE functions are NOT_SUPPORTED.
pub mod fw {
    /// SBI_PMU_FW_MISALIGNED_LOAD.
    pub const MISALIGNED_LOAD: u16 = 0;
    /// SBI_PMU_FW_SET_TIMER.
    pub const SET_TIMER: u16 = 5;
    /// SBI_PMU_FW_IPI_SENT.
    pub const IPI_SENT: u16 = 6;
    /// SBI_PMU_FW_IPI_RECEIVED.
    pub const IPI_RECEIVED: u16 = 7;
    /// SBI_PMU_FW_FENCE_I_SENT.
    pub const FENCE_I_SENT: u16 = 8;
    /// SBI_PMU_FW_FENCE_I_RECEIVED.
    pub const FENCE_I_RECEIVED: u16 = 9;
    /// SBI_PMU_FW_SFENCE_VMA_SENT.
    pub const SFENCE_VMA_SENT: u16 = 10;
    /// SBI_PMU_FW_SFENCE_VMA_RECEIVED.
    pub const SFENCE_VMA_RECEIVED: u16 = 11;
    /// SBI_PMU_FW_SFENCE_VMA_ASID_SENT.
    pub const SFENCE_VMA_ASID_SENT: u16 = 12;
    /// SBI_PMU_FW_SFENCE_VMA_ASID_RECEIVED.
    pub const SFENCE_VMA_ASID_RECEIVED: u16 = 13;
    /// SBI_PMU_FW_HFENCE_VVMA_ASID_RECEIVED, the last standard code.
    pub const HFENCE_VVMA_ASID_RECEIVED: u16 = 21;
}

/// The firmware event codes a firmware counter can be configured for (type 15:
/// `event_idx = 0xf0000 | code`): every standard one. PLATFORM (65535) is not among them: this
/// SBI has no platform-specific firmware events. Those this SBI counts: [`FW_COUNTED`].
pub const FW_EVENTS: std::ops::RangeInclusive<u16> =
    fw::MISALIGNED_LOAD..=fw::HFENCE_VVMA_ASID_RECEIVED;

/// The firmware events this SBI can see, hence the ones whose counters can be non-zero.
pub const FW_COUNTED: [u16; 9] = [5, 6, 7, 8, 9, 10, 11, 12, 13];

/// Config-matching flags (table "PMU Counter Config Match Flags").
mod cfg {
    pub const SKIP_MATCH: u64 = 1 << 0;
    pub const CLEAR_VALUE: u64 = 1 << 1;
    pub const AUTO_START: u64 = 1 << 2;
    // SET_VUINH (bit 3) and SET_VSINH (bit 4): ignored, the hart has no H.
    pub const SET_UINH: u64 = 1 << 5;
    pub const SET_SINH: u64 = 1 << 6;
    pub const SET_MINH: u64 = 1 << 7;
    pub const ALL: u64 = (1 << 8) - 1;
}
/// Start flags (table "PMU Counter Start Flags").
const START_SET_INIT_VALUE: u64 = 1 << 0;
const START_INIT_SNAPSHOT: u64 = 1 << 1;
/// Stop flags (table "PMU Counter Stop Flags").
const STOP_RESET: u64 = 1 << 0;
const STOP_TAKE_SNAPSHOT: u64 = 1 << 1;

/// An event a counter can be configured for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    /// A hardware event: the `mhpmevent` selector, and the fixed counter (0 or 2) that can
    /// also count it (CPU_CYCLES, INSTRUCTIONS).
    Hw { sel: u64, fixed: Option<usize> },
    /// A firmware event code.
    Fw(u16),
}

#[derive(Clone, Copy, Debug, Default)]
struct Counter {
    /// The configured event (`None`: free).
    event: Option<Ev>,
    started: bool,
    /// Firmware counters' value.
    value: u64,
}

/// PMU state of the hart.
#[derive(Debug, Default)]
pub(crate) struct Pmu {
    /// Indexed by logical counter; sized on first use from the hart's configuration.
    ctrs: Vec<Counter>,
    hw: usize,
    /// Snapshot shared memory (physical address).
    shmem: Option<u64>,
}

impl Pmu {
    fn init(&mut self, hpm: u8) {
        if self.ctrs.is_empty() {
            self.hw = 3 + hpm as usize;
            self.ctrs = vec![Counter::default(); self.hw + FW_COUNTERS];
        }
    }

    /// Count a firmware event on every started counter configured for it.
    pub(crate) fn fw_event(&mut self, code: u16) {
        for c in self.ctrs.iter_mut() {
            if c.started && c.event == Some(Ev::Fw(code)) {
                c.value = c.value.wrapping_add(1);
            }
        }
    }

    /// The counters a `counter_idx_base`/`counter_idx_mask` pair names, as (bit, index), or
    /// `None` when one of them does not exist (an index past the last counter or past
    /// 2^XLEN: never used to index anything).
    fn set(&self, base: u64, mask: u64) -> Option<Vec<(u32, usize)>> {
        let mut v = Vec::new();
        for bit in 0..64u32 {
            if mask >> bit & 1 == 0 {
                continue;
            }
            let idx = base
                .checked_add(bit as u64)
                .filter(|&i| i < self.ctrs.len() as u64)?;
            v.push((bit, idx as usize));
        }
        Some(v)
    }

    fn can_monitor(&self, idx: usize, ev: Ev) -> bool {
        match ev {
            Ev::Hw { fixed, .. } => idx >= 3 && idx < self.hw || fixed == Some(idx),
            Ev::Fw(_) => idx >= self.hw,
        }
    }
}

/// The event an `(event_idx, event_data)` pair names, if this SBI supports it on some counter
/// (SBI v3.0 PMU "Event: ..." sections).
fn decode_event(event_idx: u64, event_data: u64) -> Option<Ev> {
    if event_idx >> 20 != 0 {
        return None;
    }
    let (ty, code) = (event_idx >> 16, event_idx & 0xffff);
    let known = |sel: u64| !matches!(resolve(sel), Event::None);
    match ty {
        // General and cache events: event_data unused, non-zero reserved; the selector is the
        // zero-extended event_idx.
        0 | 1 if event_data == 0 && known(event_idx) => Some(Ev::Hw {
            sel: event_idx,
            fixed: match event_idx {
                event::CPU_CYCLES => Some(0),
                event::INSTRUCTIONS => Some(2),
                _ => None,
            },
        }),
        // Raw events: code 0, event_data the selector (48 bits for type 2, 56 for type 3).
        2 | 3 => {
            let bits = if ty == 2 { 48 } else { 56 };
            (code == 0 && event_data >> bits == 0 && known(event_data)).then_some(Ev::Hw {
                sel: event_data,
                fixed: None,
            })
        }
        // Firmware events: event_data unused (non-zero reserved) except for PLATFORM.
        15 if event_data == 0 && FW_EVENTS.contains(&(code as u16)) => Some(Ev::Fw(code as u16)),
        _ => None,
    }
}

impl Sbi {
    pub(crate) fn pmu_call(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> SbiRet {
        let cfg = ctx.hart().counters().config();
        self.pmu.init(cfg.hpm_counters);
        let a = &args.a;
        match fid {
            // num_counters: always succeeds.
            0 => ok(self.pmu.ctrs.len() as u64),
            1 => self.counter_get_info(a[0], args),
            2 => self.config_matching(ctx, args),
            3 => self.counter_start(ctx, args),
            4 => self.counter_stop(ctx, args),
            5 | 6 => match usize::try_from(a[0]) {
                // counter_fw_read(_hi): only firmware counters configured for an event.
                Ok(i)
                    if i >= self.pmu.hw
                        && i < self.pmu.ctrs.len()
                        && self.pmu.ctrs[i].event.is_some() =>
                {
                    let v = self.pmu.ctrs[i].value;
                    match (fid, args.xlen) {
                        (5, Xlen::Rv32) => ok(v & 0xffff_ffff),
                        (5, Xlen::Rv64) => ok(v),
                        // "always returns zero in sbiret.value for RV64".
                        (_, Xlen::Rv64) => ok(0),
                        (_, Xlen::Rv32) => ok(v >> 32),
                    }
                }
                _ => err(error::INVALID_PARAM),
            },
            7 => self.snapshot_set_shmem(ctx, args),
            8 => self.event_get_info(ctx, args),
            _ => err(error::NOT_SUPPORTED),
        }
    }

    /// counter_get_info: `csr[11:0]`, `width[17:12]` (bits - 1), type at bit XLEN-1.
    fn counter_get_info(&self, idx: u64, args: &Args) -> SbiRet {
        let Some(i) = usize::try_from(idx)
            .ok()
            .filter(|&i| i < self.pmu.ctrs.len())
        else {
            return err(error::INVALID_PARAM);
        };
        // Counter 1 is the `time` CSR: not a performance counter (no event counts on it;
        // OpenSBI answers SBI_EINVAL for it too), so it is an invalid counter (11.7).
        if i == 1 {
            return err(error::INVALID_PARAM);
        }
        let width = 63u64 << 12; // every counter of the model is 64 bits
        if i < self.pmu.hw {
            ok(width | (num::CYCLE as u64 + i as u64))
        } else {
            ok(width | 1 << (args.xlen.bits() - 1))
        }
    }

    /// counter_config_matching(base, mask, config_flags, event_idx, uint64_t event_data).
    fn config_matching(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let (base, mask, flags, event_idx) = (args.a[0], args.a[1], args.a[2], args.a[3]);
        let event_data = args.u64_at(4);
        if flags & !cfg::ALL != 0 {
            return err(error::INVALID_PARAM);
        }
        let Some(set) = self.pmu.set(base, mask) else {
            return err(error::INVALID_PARAM);
        };
        let Some(ev) = decode_event(event_idx, event_data) else {
            return err(error::NOT_SUPPORTED);
        };
        let pick = if flags & cfg::SKIP_MATCH != 0 {
            // "unconditionally select the first counter from the set": it must still be able
            // to count the event and not be running.
            set.first()
                .map(|&(_, i)| i)
                .filter(|&i| self.pmu.can_monitor(i, ev) && !self.pmu.ctrs[i].started)
        } else {
            // A free counter (not configured, hence not started); the fixed counter first.
            set.iter().map(|&(_, i)| i).find(|&i| {
                self.pmu.can_monitor(i, ev)
                    && self.pmu.ctrs[i].event.is_none()
                    && !self.pmu.ctrs[i].started
            })
        };
        let Some(i) = pick else {
            return err(error::NOT_SUPPORTED);
        };
        let start = flags & cfg::AUTO_START != 0;
        let c = &mut self.pmu.ctrs[i];
        c.event = Some(ev);
        c.started = start;
        match ev {
            Ev::Fw(_) => {
                if flags & cfg::CLEAR_VALUE != 0 {
                    c.value = 0;
                }
            }
            Ev::Hw { sel, .. } => {
                let h = ctx.hart_mut();
                let counters = h.counters().config();
                // The mode-filter hints (config_flags[7:3]) as xINH bits: Sscofpmf's in
                // mhpmevent, Smcntrpmf's in mcyclecfg/minstretcfg; ignored without them (the
                // spec lets an implementation ignore the hints), and SET_VUINH/SET_VSINH always:
                // the hart has no H, so no VS/VU mode to filter (`hpmevent::VSINH`).
                let mut inh = 0;
                for (flag, bit) in [
                    (cfg::SET_UINH, hpmevent::UINH),
                    (cfg::SET_SINH, hpmevent::SINH),
                    (cfg::SET_MINH, hpmevent::MINH),
                ] {
                    if flags & flag != 0 {
                        inh |= bit;
                    }
                }
                set_inhibit(h, i, true);
                if i >= 3 {
                    // OF clear, so that an overflow raises LCOFI.
                    let v = sel | if counters.sscofpmf { inh } else { 0 };
                    write64(
                        h,
                        num::MHPMEVENT3 + (i as u16 - 3),
                        num::MHPMEVENT3H + (i as u16 - 3),
                        v,
                        counters.sscofpmf,
                    );
                } else if counters.smcntrpmf {
                    let (lo, hi) = if i == 0 {
                        (num::MCYCLECFG, num::MCYCLECFGH)
                    } else {
                        (num::MINSTRETCFG, num::MINSTRETCFGH)
                    };
                    write64(h, lo, hi, inh, true);
                }
                if flags & cfg::CLEAR_VALUE != 0 {
                    write_counter(h, i, 0);
                }
                if start {
                    set_inhibit(h, i, false);
                }
            }
        }
        ok(i as u64)
    }

    /// Validate a counter set for start/stop: every counter exists, is configured (not
    /// `time`, which counts no event).
    fn configured_set(&self, base: u64, mask: u64) -> Option<Vec<(u32, usize)>> {
        let set = self.pmu.set(base, mask)?;
        set.iter()
            .all(|&(_, i)| self.pmu.ctrs[i].event.is_some())
            .then_some(set)
    }

    /// counter_start(base, mask, start_flags, uint64_t initial_value). All checks come first:
    /// on an error nothing changes.
    fn counter_start(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let (base, mask, flags) = (args.a[0], args.a[1], args.a[2]);
        let initial = args.u64_at(3);
        // Reserved bits; SET_INIT_VALUE and INIT_SNAPSHOT are mutually exclusive.
        if flags & !(START_SET_INIT_VALUE | START_INIT_SNAPSHOT) != 0
            || flags == START_SET_INIT_VALUE | START_INIT_SNAPSHOT
        {
            return err(error::INVALID_PARAM);
        }
        let Some(set) = self.configured_set(base, mask) else {
            return err(error::INVALID_PARAM);
        };
        let snapshot = if flags & START_INIT_SNAPSHOT != 0 {
            let Some(shmem) = self.pmu.shmem else {
                return err(error::NO_SHMEM);
            };
            Some(shmem)
        } else {
            None
        };
        if set.iter().any(|&(_, i)| self.pmu.ctrs[i].started) {
            return err(error::ALREADY_STARTED);
        }
        for &(bit, i) in &set {
            let value = match snapshot {
                Some(shmem) => {
                    // counter_values[bit] (read-only access during start).
                    let mut b = [0u8; 8];
                    if !ctx.read_memory(shmem + 8 + 8 * bit as u64, &mut b) {
                        return err(error::FAILED);
                    }
                    Some(u64::from_le_bytes(b))
                }
                None if flags & START_SET_INIT_VALUE != 0 => Some(initial),
                None => None,
            };
            self.pmu.ctrs[i].started = true;
            if i >= self.pmu.hw {
                if let Some(v) = value {
                    self.pmu.ctrs[i].value = v;
                }
                continue;
            }
            let h = ctx.hart_mut();
            if let Some(v) = value {
                write_counter(h, i, v);
            }
            let counters = h.counters().config();
            if i >= 3 && counters.sscofpmf {
                // Clear OF so that the next overflow raises LCOFI (Sscofpmf).
                let (lo, hi) = (
                    num::MHPMEVENT3 + (i as u16 - 3),
                    num::MHPMEVENT3H + (i as u16 - 3),
                );
                let v = read64(h, lo, hi, true) & !hpmevent::OF;
                write64(h, lo, hi, v, true);
            }
            set_inhibit(h, i, false);
        }
        ok(0)
    }

    /// counter_stop(base, mask, stop_flags). All checks come first; a set with a counter
    /// already stopped is an error that changes nothing, except that RESET still releases
    /// every counter of the set (stopping those that run) before ALREADY_STOPPED is returned.
    /// The spec does not say what RESET does to a stopped counter; Linux's driver releases the
    /// counters it probes at boot, and every counter when an event goes, with a RESET stop of
    /// a stopped counter, and OpenSBI and KVM's SBI release them (without it every perf event
    /// keeps its counter and the driver soon finds none).
    fn counter_stop(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let (base, mask, flags) = (args.a[0], args.a[1], args.a[2]);
        if flags & !(STOP_RESET | STOP_TAKE_SNAPSHOT) != 0 {
            return err(error::INVALID_PARAM);
        }
        let Some(set) = self.configured_set(base, mask) else {
            return err(error::INVALID_PARAM);
        };
        let snapshot = if flags & STOP_TAKE_SNAPSHOT != 0 {
            let Some(shmem) = self.pmu.shmem else {
                return err(error::NO_SHMEM);
            };
            Some(shmem)
        } else {
            None
        };
        let stopped = set.iter().any(|&(_, i)| !self.pmu.ctrs[i].started);
        if stopped && flags & STOP_RESET == 0 {
            return err(error::ALREADY_STOPPED);
        }
        let sscofpmf = ctx.hart().counters().config().sscofpmf;
        // The overflow bitmap is taken before RESET clears any mhpmevent.
        let bitmap = {
            let mut bitmap = 0u64;
            if sscofpmf && snapshot.is_some() {
                for bit in 0..args.xlen.bits() as u64 {
                    let Some(i) = base
                        .checked_add(bit)
                        .filter(|&i| i >= 3 && i < self.pmu.hw as u64)
                    else {
                        continue;
                    };
                    let k = i as u16 - 3;
                    let ev = read64(
                        ctx.hart_mut(),
                        num::MHPMEVENT3 + k,
                        num::MHPMEVENT3H + k,
                        true,
                    );
                    if ev & hpmevent::OF != 0 {
                        bitmap |= 1 << bit;
                    }
                }
            }
            bitmap
        };
        let mut values = Vec::with_capacity(set.len());
        for &(bit, i) in &set {
            if std::mem::take(&mut self.pmu.ctrs[i].started) {
                let value = if i >= self.pmu.hw {
                    self.pmu.ctrs[i].value
                } else {
                    let h = ctx.hart_mut();
                    set_inhibit(h, i, true);
                    read_counter(h, i)
                };
                values.push((bit, value));
            }
            if flags & STOP_RESET != 0 {
                self.pmu.ctrs[i].event = None;
                let h = ctx.hart_mut();
                let counters = h.counters().config();
                if (3..self.pmu.hw).contains(&i) {
                    write64(
                        h,
                        num::MHPMEVENT3 + (i as u16 - 3),
                        num::MHPMEVENT3H + (i as u16 - 3),
                        0,
                        counters.sscofpmf,
                    );
                } else if i < 3 && counters.smcntrpmf {
                    let (lo, hi) = if i == 0 {
                        (num::MCYCLECFG, num::MCYCLECFGH)
                    } else {
                        (num::MINSTRETCFG, num::MINSTRETCFGH)
                    };
                    write64(h, lo, hi, 0, true);
                }
            }
        }
        if let Some(shmem) = snapshot {
            // Snapshot layout: counter_overflow_bitmap at 0 = every overflown counter relative
            // to counter_idx_base (hardware counters with Sscofpmf's OF set; zero without
            // Sscofpmf), counter_values[bit] at 8 + 8 * bit for each stopped counter; the
            // other values and the reserved area are not written.
            for &(bit, value) in &values {
                if !ctx.write_memory(shmem + 8 + 8 * bit as u64, &value.to_le_bytes()) {
                    return err(error::FAILED);
                }
            }
            if !ctx.write_memory(shmem, &bitmap.to_le_bytes()) {
                return err(error::FAILED);
            }
        }
        if stopped {
            return err(error::ALREADY_STOPPED);
        }
        ok(0)
    }

    /// snapshot_set_shmem(lo, hi, flags): a 4096-byte, page-aligned area of RAM; all-ones in
    /// both disables it. The memory is not touched here.
    fn snapshot_set_shmem(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let (lo, hi, flags) = (args.a[0], args.a[1], args.a[2]);
        if flags != 0 {
            return err(error::INVALID_PARAM);
        }
        if lo == args.all_ones() && hi == args.all_ones() {
            self.pmu.shmem = None;
            return ok(0);
        }
        if lo & 0xfff != 0 {
            return err(error::INVALID_PARAM);
        }
        match args.phys_at(0).filter(|&a| in_ram(ctx, a, 4096)) {
            Some(a) => {
                self.pmu.shmem = Some(a);
                ok(0)
            }
            None => err(error::INVALID_ADDRESS),
        }
    }

    /// event_get_info(lo, hi, num_entries, flags): 16-byte entries (event_idx u32, output
    /// u32, event_data u64). Every entry is checked before any output is written.
    fn event_get_info(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let (lo, n, flags) = (args.a[0], args.a[2], args.a[3]);
        if flags != 0 || lo & 0xf != 0 {
            return err(error::INVALID_PARAM);
        }
        if n == 0 {
            return ok(0);
        }
        let Some(addr) = args
            .phys_at(0)
            .filter(|&a| n.checked_mul(16).is_some_and(|len| in_ram(ctx, a, len)))
        else {
            return err(error::INVALID_ADDRESS);
        };
        let entry = |ctx: &Ctx, k: u64| {
            let mut e = [0u8; 16];
            ctx.read_memory(addr + 16 * k, &mut e);
            let idx = u32::from_le_bytes(e[0..4].try_into().unwrap());
            let data = u64::from_le_bytes(e[8..16].try_into().unwrap());
            (idx, data)
        };
        if (0..n).any(|k| entry(ctx, k).0 >> 20 != 0) {
            return err(error::INVALID_PARAM);
        }
        for k in 0..n {
            let (idx, data) = entry(ctx, k);
            // event_data matters only for types 2, 3 and 15 ("Valid when event_idx.type is
            // either 0x2, 0x3 or 0xf").
            let data = if matches!(idx >> 16, 2 | 3 | 15) {
                data
            } else {
                0
            };
            let supported = decode_event(idx as u64, data)
                .is_some_and(|ev| (0..self.pmu.ctrs.len()).any(|i| self.pmu.can_monitor(i, ev)));
            if !ctx.write_memory(addr + 16 * k + 4, &(supported as u32).to_le_bytes()) {
                return err(error::FAILED);
            }
        }
        ok(0)
    }
}

/// Set or clear counter `i`'s `mcountinhibit` bit (read-modify-write: the hart's read returns
/// the value as queued writes will leave it).
fn set_inhibit(h: &mut dyn HartAccess, i: usize, on: bool) {
    let v = h.csr_read(num::MCOUNTINHIBIT).unwrap_or(0);
    let v = h.trunc(v);
    let v = if on { v | 1 << i } else { v & !(1 << i) };
    h.csr_write(num::MCOUNTINHIBIT, v);
}

/// Write a 64-bit register that RV32 splits into a low CSR and a high one (`hi_exists`: the
/// high half is implemented).
fn write64(h: &mut dyn HartAccess, lo: u16, hi: u16, v: u64, hi_exists: bool) {
    match h.xlen() {
        Xlen::Rv64 => {
            h.csr_write(lo, v);
        }
        Xlen::Rv32 => {
            h.csr_write(lo, v & 0xffff_ffff);
            if hi_exists {
                h.csr_write(hi, v >> 32);
            }
        }
    }
}

fn read64(h: &mut dyn HartAccess, lo: u16, hi: u16, hi_exists: bool) -> u64 {
    let l = h.csr_read(lo).unwrap_or(0);
    let l = h.trunc(l);
    match h.xlen() {
        Xlen::Rv64 => l,
        Xlen::Rv32 if hi_exists => {
            let hv = h.csr_read(hi).unwrap_or(0);
            l | h.trunc(hv) << 32
        }
        Xlen::Rv32 => l,
    }
}

/// Hardware counter `i` (0 `mcycle`, 2 `minstret`, 3.. `mhpmcounterN`).
fn write_counter(h: &mut dyn HartAccess, i: usize, v: u64) {
    let i = i as u16;
    write64(h, num::MCYCLE + i, num::MCYCLEH + i, v, true);
}

fn read_counter(h: &mut dyn HartAccess, i: usize) -> u64 {
    let i = i as u16;
    read64(h, num::MCYCLE + i, num::MCYCLEH + i, true)
}
