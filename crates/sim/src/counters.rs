//! Performance counters: Zicntr/Zihpm (`mcycle`, `minstret`, `mhpmcounter3..`, `mhpmevent3..`,
//! `mcountinhibit`), Sscofpmf (overflow: `OF`, the `xINH` mode filters, `scountovf`, LCOFI) and
//! Smcntrpmf (`mcyclecfg`/`minstretcfg` mode filters), with events named by SBI PMU `event_idx`
//! values (SBI v3.0, "Performance Monitoring Unit Extension", event types 0, 1 and 2).
//!
//! How counting is kept cheap: nothing is counted per instruction unless something needs it.
//! - Retirements per privilege mode come from the hart's `instret`, split at privilege changes
//!   (traps and `xRET`), so `mcycle`, `minstret` and the INSTRUCTIONS/CPU_CYCLES events cost
//!   nothing in the hart loop.
//! - Every other event is a per-mode tally ([`Tally`]) that the hart's instrumented loop updates
//!   while some counter counts it (or `--counters` asked for all of them). The hart switches
//!   loops when that changes.
//! - A counter is `value + (tally now - tally at the last fold)` over the modes it counts: read
//!   on demand, folded only when its configuration changes or when it could wrap. The hart asks
//!   [`Counters::horizon`] how many instructions may retire before a wrap is possible and runs
//!   its housekeeping then, so an overflow is seen at the instruction that causes it.
//!
//! Writes take effect after the writing instruction (privileged ISA, "CSR Field
//! Specifications" / Zicntr): the hart queues them and applies them in its housekeeping before
//! the next instruction, so an instruction that writes `minstret` does not count itself (write
//! X, the next instruction reads X), the `csrw` that clears an inhibit bit is not counted and the
//! one that sets it is.
//!
//! `ecall` and `ebreak` raise exceptions, so the counters do not count them as retired
//! (privileged ISA, `minstret`: instructions that raise exceptions "should not increment
//! minstret"), even though the trace specifications report them in the instruction stream. A
//! call the hart services itself (semihosting, SBI) stands for that exception and its handler,
//! so it is not counted either.

use crate::csr::num;
use rvtrace_isa::Xlen;

/// Programmable counters by default (`mhpmcounter3..18`, as QEMU's `virt`).
pub const DEFAULT_HPM_COUNTERS: u8 = 16;
/// Most programmable counters the architecture has (`mhpmcounter3..31`).
pub const MAX_HPM_COUNTERS: u8 = 29;

/// Counter configuration of the hart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterConfig {
    /// Programmable counters implemented (`mhpmcounter3 ..= 3 + n - 1`); the rest are
    /// read-only zero. At most [`MAX_HPM_COUNTERS`].
    pub hpm_counters: u8,
    /// Sscofpmf: overflow bit, mode filters, `scountovf`, LCOFI.
    pub sscofpmf: bool,
    /// Smcntrpmf: `mcyclecfg`/`minstretcfg` mode filters.
    pub smcntrpmf: bool,
}

impl Default for CounterConfig {
    fn default() -> Self {
        CounterConfig {
            hpm_counters: DEFAULT_HPM_COUNTERS,
            sscofpmf: true,
            smcntrpmf: true,
        }
    }
}

/// `mhpmevent` fields of Sscofpmf (RV64 layout; RV32 has them in `mhpmeventh` bits 31..26).
pub mod hpmevent {
    /// Overflow: set when the counter wraps; while set, a wrap raises no LCOFI.
    pub const OF: u64 = 1 << 63;
    /// Do not count in M-mode.
    pub const MINH: u64 = 1 << 62;
    /// Do not count in S-mode (HS).
    pub const SINH: u64 = 1 << 61;
    /// Do not count in U-mode.
    pub const UINH: u64 = 1 << 60;
    /// Do not count in VS-mode: read-only zero here (no H; Sscofpmf, Smcntrpmf).
    pub const VSINH: u64 = 1 << 59;
    /// Do not count in VU-mode: read-only zero here (no H).
    pub const VUINH: u64 = 1 << 58;
    /// The mode-filter bits the model has (also those of Smcntrpmf's `mcyclecfg`/
    /// `minstretcfg`): VSINH and VUINH exist only with the H extension.
    pub const INH: u64 = MINH | SINH | UINH;
    /// The event selector: the bits below the Sscofpmf fields.
    pub const SELECTOR: u64 = (1 << 58) - 1;
}

/// What the model tallies per privilege mode (beyond retirements, which come from `instret`).
/// The instrumented hart loop updates them; [`Counters::tally`] reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Tally {
    /// Retired loads (L1D read accesses): loads, FP loads, LR, and the read of an AMO.
    Load,
    /// Retired stores (L1D write accesses): stores, FP stores, every SC, and the write of an AMO.
    Store,
    /// Retired conditional branches.
    Branch,
    /// Retired conditional branches that were taken.
    BranchTaken,
    /// Conditional branches the predictor got wrong.
    BranchMiss,
    /// Predictions made (conditional branches and jumps the predictor was asked about).
    BpuAccess,
    /// Predictions that were wrong (direction or target).
    BpuMiss,
    /// L1 data-cache read misses.
    L1dReadMiss,
    /// L1 data-cache write misses.
    L1dWriteMiss,
    /// L1 instruction-cache accesses.
    L1iAccess,
    /// L1 instruction-cache misses.
    L1iMiss,
    /// Retired direct jumps (`jal`, `c.j`, `c.jal`; calls included).
    DirectJump,
    /// Retired indirect jumps (`jalr`, `c.jr`, `c.jalr`; calls and returns included).
    IndirectJump,
    /// Retired calls (jumps that link `x1`/`x5`, co-routine swaps included).
    Call,
    /// Retired returns (co-routine swaps included).
    Return,
    /// Retired compressed (16-bit) instructions.
    Compressed,
    /// Retired F/D instructions (loads and stores included).
    Fp,
    /// Retired A instructions (LR, SC, AMOs).
    Atomic,
    /// Retired Zicsr instructions.
    Csr,
    /// Retired M instructions (multiply, divide, remainder).
    MulDiv,
    /// Retired `fence`, `fence.i`, `sfence.vma`.
    Fence,
    /// `ecall`/`ebreak` that raised their exception or were serviced by the hart (semihosting,
    /// SBI) in its place: not retired for the counters.
    EnvCall,
    /// Exceptions taken (faults and `ecall`/`ebreak`).
    Exception,
    /// Interrupts taken.
    Interrupt,
    /// Stall cycles the timing model charged to the front end (fetch misses, mispredicts).
    StallFrontend,
    /// Stall cycles the timing model charged to the back end (data misses, long latencies).
    StallBackend,
    /// Data-TLB lookups of loads (translated loads, LR, AMO reads; one per page touched).
    DtlbLoad,
    /// Data-TLB load misses (page-table walks).
    DtlbLoadMiss,
    /// Data-TLB lookups of stores (translated stores, SC, AMO writes).
    DtlbStore,
    /// Data-TLB store misses (page-table walks, a first store to a clean page included).
    DtlbStoreMiss,
    /// Instruction-TLB lookups (translated fetches, one per page an instruction touches).
    ItlbLoad,
    /// Instruction-TLB misses (page-table walks).
    ItlbLoadMiss,
}

/// Number of [`Tally`] kinds.
pub const TALLIES: usize = Tally::ItlbLoadMiss as usize + 1;

/// The events an `mhpmevent` can select, resolved from its `event_idx`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Not an event the model knows: the counter does not count.
    None,
    /// A known event that never occurs in the model (prefetches, the LL cache, TLBs).
    Never,
    /// Cycles: retirements plus the timing model's stall cycles.
    Cycles,
    /// Retired instructions (without `ecall`/`ebreak`).
    Instructions,
    /// One tally.
    Tally(Tally),
    /// The sum of two tallies.
    Sum(Tally, Tally),
}

/// SBI PMU `event_idx` values the model counts (SBI v3.0 PMU chapter: type in bits 19..16, code
/// in 15..0). Every entry of the table in the crate README.
pub mod event {
    /// Type 0: CPU cycles.
    pub const CPU_CYCLES: u64 = 0x0001;
    /// Type 0: retired instructions.
    pub const INSTRUCTIONS: u64 = 0x0002;
    /// Type 0: cache references (L1D accesses).
    pub const CACHE_REFERENCES: u64 = 0x0003;
    /// Type 0: cache misses (L1D misses).
    pub const CACHE_MISSES: u64 = 0x0004;
    /// Type 0: retired conditional branches.
    pub const BRANCH_INSTRUCTIONS: u64 = 0x0005;
    /// Type 0: mispredicted conditional branches.
    pub const BRANCH_MISSES: u64 = 0x0006;
    /// Type 0: bus cycles (the model's bus runs at the core clock).
    pub const BUS_CYCLES: u64 = 0x0007;
    /// Type 0: front-end stall cycles.
    pub const STALLED_CYCLES_FRONTEND: u64 = 0x0008;
    /// Type 0: back-end stall cycles.
    pub const STALLED_CYCLES_BACKEND: u64 = 0x0009;
    /// Type 0: reference cycles (no frequency scaling in the model: cycles).
    pub const REF_CPU_CYCLES: u64 = 0x000a;
    /// Type 1 cache event: `0x10000 | cache_id << 3 | op << 1 | result`.
    pub const fn cache(cache_id: u64, op: u64, result: u64) -> u64 {
        0x1_0000 | cache_id << 3 | op << 1 | result
    }
    /// Cache ids of type-1 events.
    pub const L1D: u64 = 0;
    /// Level-1 instruction cache.
    pub const L1I: u64 = 1;
    /// Last-level cache (not modelled: never counts).
    pub const LL: u64 = 2;
    /// Data TLB (`mmu.rs`; read and write operations).
    pub const DTLB: u64 = 3;
    /// Instruction TLB (`mmu.rs`; read operations).
    pub const ITLB: u64 = 4;
    /// Branch predictor.
    pub const BPU: u64 = 5;
    /// NUMA node (never counts).
    pub const NODE: u64 = 6;
    /// Operation ids: read.
    pub const OP_READ: u64 = 0;
    /// Write.
    pub const OP_WRITE: u64 = 1;
    /// Prefetch.
    pub const OP_PREFETCH: u64 = 2;
    /// Result ids: access.
    pub const ACCESS: u64 = 0;
    /// Miss.
    pub const MISS: u64 = 1;
    /// Type 2 raw events of the model: `0x20000 | code` (codes in [`super::RAW_EVENTS`]).
    pub const RAW: u64 = 0x2_0000;
}

/// The model's raw events (type 2): code, tally, name.
pub const RAW_EVENTS: [(u64, Tally, &str); 15] = [
    (0x01, Tally::BranchTaken, "taken conditional branches"),
    (0x02, Tally::DirectJump, "direct jumps (jal, c.j, c.jal)"),
    (
        0x03,
        Tally::IndirectJump,
        "indirect jumps (jalr, c.jr, c.jalr)",
    ),
    (0x04, Tally::Call, "calls"),
    (0x05, Tally::Return, "returns"),
    (0x06, Tally::Exception, "exceptions taken"),
    (0x07, Tally::Interrupt, "interrupts taken"),
    (0x08, Tally::Compressed, "compressed instructions"),
    (0x09, Tally::Fp, "F/D instructions"),
    (0x0a, Tally::Atomic, "atomic instructions (LR/SC/AMO)"),
    (0x0b, Tally::Csr, "CSR instructions"),
    (0x0c, Tally::MulDiv, "multiply/divide instructions"),
    (0x0d, Tally::Fence, "fence, fence.i, sfence.vma"),
    (
        0x0e,
        Tally::EnvCall,
        "ecall/ebreak (raised their exception)",
    ),
    (0x0f, Tally::Load, "loads (as L1D read accesses)"),
];

/// Every event the model knows, for reports and documentation: `event_idx`, a `perf`-style
/// name, and what it counts. Events that [`resolve`] to [`Event::Never`] are left out.
pub const EVENTS: &[(u64, &str, &str)] = &[
    (
        event::CPU_CYCLES,
        "cycles",
        "cycles (retirements + timing-model stalls)",
    ),
    (
        event::INSTRUCTIONS,
        "instructions",
        "retired instructions (ecall/ebreak not counted)",
    ),
    (
        event::CACHE_REFERENCES,
        "cache-references",
        "L1D accesses (loads + stores)",
    ),
    (event::CACHE_MISSES, "cache-misses", "L1D misses"),
    (
        event::BRANCH_INSTRUCTIONS,
        "branches",
        "retired conditional branches",
    ),
    (
        event::BRANCH_MISSES,
        "branch-misses",
        "mispredicted conditional branches",
    ),
    (event::BUS_CYCLES, "bus-cycles", "bus cycles (= cycles)"),
    (
        event::STALLED_CYCLES_FRONTEND,
        "stalled-cycles-frontend",
        "front-end stall cycles",
    ),
    (
        event::STALLED_CYCLES_BACKEND,
        "stalled-cycles-backend",
        "back-end stall cycles",
    ),
    (
        event::REF_CPU_CYCLES,
        "ref-cycles",
        "reference cycles (= cycles)",
    ),
    (
        0x1_0000,
        "L1-dcache-loads",
        "L1D read accesses (retired loads, LR, AMO reads)",
    ),
    (0x1_0001, "L1-dcache-load-misses", "L1D read misses"),
    (
        0x1_0002,
        "L1-dcache-stores",
        "L1D write accesses (retired stores, SC, AMO writes)",
    ),
    (0x1_0003, "L1-dcache-store-misses", "L1D write misses"),
    (
        0x1_0008,
        "L1-icache-loads",
        "L1I accesses (fetches that leave the previous line)",
    ),
    (0x1_0009, "L1-icache-load-misses", "L1I misses"),
    (
        0x1_0018,
        "dTLB-loads",
        "data-TLB lookups of translated loads (LR, AMO reads)",
    ),
    (0x1_0019, "dTLB-load-misses", "data-TLB load misses (walks)"),
    (
        0x1_001a,
        "dTLB-stores",
        "data-TLB lookups of translated stores (SC, AMO writes)",
    ),
    (
        0x1_001b,
        "dTLB-store-misses",
        "data-TLB store misses (walks)",
    ),
    (
        0x1_0020,
        "iTLB-loads",
        "instruction-TLB lookups of translated fetches",
    ),
    (
        0x1_0021,
        "iTLB-load-misses",
        "instruction-TLB misses (walks)",
    ),
    (0x1_0028, "branch-loads", "branch predictor lookups"),
    (
        0x1_0029,
        "branch-load-misses",
        "branch predictor mispredictions",
    ),
    (0x2_0001, "raw:taken-branches", "taken conditional branches"),
    (
        0x2_0002,
        "raw:direct-jumps",
        "direct jumps (jal, c.j, c.jal)",
    ),
    (
        0x2_0003,
        "raw:indirect-jumps",
        "indirect jumps (jalr, c.jr, c.jalr)",
    ),
    (0x2_0004, "raw:calls", "calls"),
    (0x2_0005, "raw:returns", "returns"),
    (0x2_0006, "raw:exceptions", "exceptions taken"),
    (0x2_0007, "raw:interrupts", "interrupts taken"),
    (0x2_0008, "raw:compressed", "compressed instructions"),
    (0x2_0009, "raw:fp", "F/D instructions"),
    (0x2_000a, "raw:atomics", "atomic instructions (LR/SC/AMO)"),
    (0x2_000b, "raw:csr", "CSR instructions"),
    (0x2_000c, "raw:muldiv", "multiply/divide instructions"),
    (0x2_000d, "raw:fences", "fence, fence.i, sfence.vma"),
    (
        0x2_000e,
        "raw:env-calls",
        "ecall/ebreak, trapped or serviced (semihosting, SBI)",
    ),
    (0x2_000f, "raw:loads", "loads (= L1-dcache-loads)"),
];

/// The event an `mhpmevent` selector names.
pub fn resolve(selector: u64) -> Event {
    use event::*;
    match selector {
        CPU_CYCLES | BUS_CYCLES | REF_CPU_CYCLES => Event::Cycles,
        INSTRUCTIONS => Event::Instructions,
        CACHE_REFERENCES => Event::Sum(Tally::Load, Tally::Store),
        CACHE_MISSES => Event::Sum(Tally::L1dReadMiss, Tally::L1dWriteMiss),
        BRANCH_INSTRUCTIONS => Event::Tally(Tally::Branch),
        BRANCH_MISSES => Event::Tally(Tally::BranchMiss),
        STALLED_CYCLES_FRONTEND => Event::Tally(Tally::StallFrontend),
        STALLED_CYCLES_BACKEND => Event::Tally(Tally::StallBackend),
        s if s >> 16 == 1 && s & 0xffff < 7 << 3 => {
            let (cache, op, result) = ((s >> 3) & 0x1fff, (s >> 1) & 3, s & 1);
            let t = match (cache, op, result) {
                (_, 3, _) => return Event::None,
                (L1D, OP_READ, ACCESS) => Tally::Load,
                (L1D, OP_READ, MISS) => Tally::L1dReadMiss,
                (L1D, OP_WRITE, ACCESS) => Tally::Store,
                (L1D, OP_WRITE, MISS) => Tally::L1dWriteMiss,
                (L1I, OP_READ, ACCESS) => Tally::L1iAccess,
                (L1I, OP_READ, MISS) => Tally::L1iMiss,
                (BPU, OP_READ, ACCESS) => Tally::BpuAccess,
                (BPU, OP_READ, MISS) => Tally::BpuMiss,
                (DTLB, OP_READ, ACCESS) => Tally::DtlbLoad,
                (DTLB, OP_READ, MISS) => Tally::DtlbLoadMiss,
                (DTLB, OP_WRITE, ACCESS) => Tally::DtlbStore,
                (DTLB, OP_WRITE, MISS) => Tally::DtlbStoreMiss,
                (ITLB, OP_READ, ACCESS) => Tally::ItlbLoad,
                (ITLB, OP_READ, MISS) => Tally::ItlbLoadMiss,
                _ => return Event::Never,
            };
            Event::Tally(t)
        }
        s if s >> 16 == 2 => RAW_EVENTS
            .iter()
            .find(|e| e.0 == s & 0xffff)
            .map_or(Event::None, |e| Event::Tally(e.1)),
        _ => Event::None,
    }
}

/// Privilege modes as indices (0 U, 1 S, 3 M).
const MODES: [usize; 3] = [0, 1, 3];

/// Mode-filter bit of `mhpmevent`/`mxxxcfg` for a privilege.
fn inh_bit(mode: usize) -> u64 {
    match mode {
        0 => hpmevent::UINH,
        1 => hpmevent::SINH,
        _ => hpmevent::MINH,
    }
}

#[derive(Clone, Copy, Debug)]
struct Ctr {
    /// Value at the last fold.
    value: u64,
    /// The event's per-mode total at the last fold.
    snap: [u64; 4],
    /// `mhpmevent` (or `mcyclecfg`/`minstretcfg`) as stored.
    sel: u64,
    event: Event,
    /// Bit m set: counts in privilege m (mode filters and `mcountinhibit` applied).
    modes: u8,
}

impl Default for Ctr {
    fn default() -> Self {
        Ctr {
            value: 0,
            snap: [0; 4],
            sel: 0,
            event: Event::None,
            modes: 0,
        }
    }
}

/// A counter CSR write waiting for its instruction to complete.
#[derive(Clone, Copy, Debug)]
struct Pending {
    csr: u16,
    value: u64,
}

/// The counters of one hart.
#[derive(Clone, Debug)]
pub struct Counters {
    cfg: CounterConfig,
    xlen: Xlen,
    /// Privilege the hart is in, and `instret` when it entered it.
    mode: usize,
    mode_start: u64,
    /// Retirements (trace view, with `ecall`/`ebreak`) per mode before `mode_start`.
    retired: [u64; 4],
    /// Per-mode tallies.
    pub(crate) tallies: [[u64; TALLIES]; 4],
    /// Index 0 `mcycle`, 2 `minstret`, 3.. the programmable counters.
    ctr: [Ctr; 32],
    inhibit: u32,
    pending: Vec<Pending>,
    /// Count every tally, not only those a counter needs (`run --counters`).
    all_tallies: bool,
    /// Most increments one instruction can add to a cycle count (1 + the largest stall).
    max_cycles_per_insn: u64,
    /// The timing model charges stalls (cycles are not just retirements).
    timing: bool,
    /// Bit i set: programmable counter i (3..) counts in some mode. The per-turn checks
    /// ([`Counters::horizon`], [`Counters::check_overflow`]) visit only these.
    hpm_mask: u32,
    /// Some counting counter's event is a tally (the hart must run its instrumented loop).
    tallying: bool,
}

impl Counters {
    /// Counters at reset (all zero, nothing inhibited, events 0).
    pub fn new(cfg: CounterConfig, xlen: Xlen) -> Counters {
        let mut c = Counters {
            cfg: CounterConfig {
                hpm_counters: cfg.hpm_counters.min(MAX_HPM_COUNTERS),
                ..cfg
            },
            xlen,
            mode: 3,
            mode_start: 0,
            retired: [0; 4],
            tallies: [[0; TALLIES]; 4],
            ctr: [Ctr::default(); 32],
            inhibit: 0,
            pending: Vec::new(),
            all_tallies: false,
            max_cycles_per_insn: 1,
            timing: false,
            hpm_mask: 0,
            tallying: false,
        };
        c.ctr[0].event = Event::Cycles;
        c.ctr[2].event = Event::Instructions;
        for i in [0, 2] {
            c.ctr[i].modes = c.modes_of(i);
        }
        c.refresh_counting();
        c
    }

    /// Recompute `hpm_mask` and `tallying` from the counters' `modes` (after any change of
    /// them).
    fn refresh_counting(&mut self) {
        let counting = |c: &Ctr| c.modes != 0;
        self.hpm_mask = (3..3 + self.cfg.hpm_counters as usize)
            .filter(|&i| counting(&self.ctr[i]))
            .fold(0, |m, i| m | 1 << i);
        self.tallying = self
            .ctr
            .iter()
            .any(|c| counting(c) && matches!(c.event, Event::Tally(_) | Event::Sum(..)));
    }

    /// The programmable counters that count, as indices (none without Sscofpmf: only its
    /// overflow rules need the per-turn checks).
    fn hpm_counting(&self) -> impl Iterator<Item = usize> {
        crate::ones(if self.cfg.sscofpmf {
            u64::from(self.hpm_mask)
        } else {
            0
        })
    }

    /// The configuration.
    pub fn config(&self) -> CounterConfig {
        self.cfg
    }

    /// The implemented counters as a bit mask (CY, TM, IR, HPM3..): the writable bits of
    /// `mcounteren`/`scounteren` (WARL; QEMU 8.1 and later mask them the same way).
    pub fn present_mask(&self) -> u64 {
        0b111 | ((1u64 << self.cfg.hpm_counters) - 1) << 3
    }

    /// Count every tally (for a report of all events), not only those a counter needs.
    pub fn set_count_all(&mut self, on: bool) {
        self.all_tallies = on;
    }

    /// The timing model is on and one instruction takes at most `max_cycles` cycles: cycle
    /// counts then need the per-instruction stall tallies (and the overflow horizon of cycle
    /// counters shrinks). `None`: one cycle per instruction.
    pub fn set_timing(&mut self, max_cycles: Option<u64>) {
        self.timing = max_cycles.is_some();
        self.max_cycles_per_insn = max_cycles.unwrap_or(1).max(1);
    }

    /// Whether counter `i` (0..31) is implemented.
    fn implemented(&self, i: usize) -> bool {
        i == 0 || i == 2 || (3..3 + self.cfg.hpm_counters as usize).contains(&i)
    }

    fn modes_of(&self, i: usize) -> u8 {
        if self.inhibit >> i & 1 == 1 || matches!(self.ctr[i].event, Event::None | Event::Never) {
            return 0;
        }
        let filters = (i >= 3 && self.cfg.sscofpmf) || (i < 3 && self.cfg.smcntrpmf);
        MODES
            .iter()
            .filter(|&&m| !filters || self.ctr[i].sel & inh_bit(m) == 0)
            .fold(0, |acc, &m| acc | 1 << m)
    }

    /// Retirements in privilege `m` up to `instret` (trace view, `ecall`/`ebreak` included).
    fn retired_in(&self, m: usize, instret: u64) -> u64 {
        self.retired[m]
            + if m == self.mode {
                instret - self.mode_start
            } else {
                0
            }
    }

    /// The total of `event` in privilege `m` so far.
    fn total(&self, event: Event, m: usize, instret: u64) -> u64 {
        let t = &self.tallies[m];
        match event {
            Event::None | Event::Never => 0,
            Event::Cycles => {
                self.retired_in(m, instret)
                    + t[Tally::StallFrontend as usize]
                    + t[Tally::StallBackend as usize]
            }
            Event::Instructions => self
                .retired_in(m, instret)
                .saturating_sub(t[Tally::EnvCall as usize]),
            Event::Tally(a) => t[a as usize],
            Event::Sum(a, b) => t[a as usize] + t[b as usize],
        }
    }

    /// Count one `t` in privilege `m` (for events the hart sees outside its instrumented loop:
    /// traps, environment calls).
    #[inline]
    pub(crate) fn bump(&mut self, t: Tally, m: u8) {
        self.tallies[m as usize & 3][t as usize] += 1;
    }

    /// A tally in privilege `m` (0 U, 1 S, 3 M).
    pub fn tally(&self, t: Tally, m: u8) -> u64 {
        self.tallies[m as usize & 3][t as usize]
    }

    /// Total of an event in privilege `m` (for reports: cycles, instructions, tallies).
    pub fn event_total(&self, event: Event, m: u8, instret: u64) -> u64 {
        self.total(event, m as usize & 3, instret)
    }

    /// Current value of counter `i`.
    fn value(&self, i: usize, instret: u64) -> u64 {
        let c = &self.ctr[i];
        let mut v = c.value;
        for m in MODES {
            if c.modes >> m & 1 == 1 {
                v = v.wrapping_add(self.total(c.event, m, instret).wrapping_sub(c.snap[m]));
            }
        }
        v
    }

    /// Current value of counter `i` (0 `mcycle`, 2 `minstret`, 3.. programmable) with
    /// `instret` retirements so far.
    pub fn counter(&self, i: usize, instret: u64) -> u64 {
        if i < 32 && self.implemented(i) {
            self.value(i, instret)
        } else {
            0
        }
    }

    /// Set counter `i` now, without the write-after-the-instruction rule (for consumers that
    /// copy a counter from elsewhere, such as the tandem checker following a trace).
    pub fn set_counter(&mut self, i: usize, value: u64, instret: u64) {
        if i < 32 && self.implemented(i) {
            self.fold(i, instret);
            self.ctr[i].value = value;
        }
    }

    /// Bring counter `i` up to date; true if it wrapped since the last fold.
    fn fold(&mut self, i: usize, instret: u64) -> bool {
        let old = self.ctr[i].value;
        let new = self.value(i, instret);
        let delta = new.wrapping_sub(old);
        let event = self.ctr[i].event;
        let snap = MODES.map(|m| self.total(event, m, instret));
        let c = &mut self.ctr[i];
        c.value = new;
        for (k, m) in MODES.into_iter().enumerate() {
            c.snap[m] = snap[k];
        }
        // `value` only grows between folds and by less than 2^64: it wrapped if it went down.
        delta != 0 && new < old
    }

    /// The privilege changes to `new` with `instret` retirements counted so far (the
    /// instruction that changes it, `mret`/`sret` or a retiring `ecall`, counted in the old).
    pub fn set_mode(&mut self, new: u8, instret: u64) {
        let m = self.mode;
        self.retired[m] += instret.saturating_sub(self.mode_start);
        self.mode = new as usize & 3;
        self.mode_start = instret;
    }

    /// The privilege the counters attribute retirements to.
    pub fn mode(&self) -> u8 {
        self.mode as u8
    }

    /// Whether the hart must run its instrumented loop: some counting counter needs a tally.
    pub fn needs_tallies(&self) -> bool {
        self.all_tallies || self.tallying
    }

    /// Instructions that may retire before some counter could wrap (`u64::MAX`: none counts).
    pub fn horizon(&self, instret: u64) -> u64 {
        let mut h = u64::MAX;
        for i in self.hpm_counting() {
            let c = &self.ctr[i];
            let per = match c.event {
                Event::Cycles => self.max_cycles_per_insn,
                Event::Sum(..) => 2,
                Event::Tally(Tally::StallFrontend | Tally::StallBackend) => {
                    self.max_cycles_per_insn
                }
                // An instruction can touch two pages (a crossing access; an AMO's read and
                // write each look up).
                Event::Tally(
                    Tally::DtlbLoad
                    | Tally::DtlbLoadMiss
                    | Tally::DtlbStore
                    | Tally::DtlbStoreMiss
                    | Tally::ItlbLoad
                    | Tally::ItlbLoadMiss,
                ) => 2,
                _ => 1,
            };
            let left = self.value(i, instret).wrapping_neg();
            let left = if left == 0 { u64::MAX } else { left };
            h = h.min((left / per).max(1));
        }
        h
    }

    /// Fold every counter that may have wrapped; set `OF` on each that did. Returns whether an
    /// LCOFI should be raised (a wrap with `OF` clear).
    pub fn check_overflow(&mut self, instret: u64) -> bool {
        let mut irq = false;
        for i in self.hpm_counting() {
            if self.fold(i, instret) {
                if self.ctr[i].sel & hpmevent::OF == 0 {
                    irq = true;
                }
                self.ctr[i].sel |= hpmevent::OF;
            }
        }
        irq
    }

    /// Whether `csr` is one of the counter CSRs this module serves (`time` is the hart's).
    pub fn owns(csr: u16) -> bool {
        matches!(
            csr,
            num::MCOUNTINHIBIT
                | num::MCYCLECFG
                | num::MINSTRETCFG
                | num::MCYCLECFGH
                | num::MINSTRETCFGH
                | num::SCOUNTOVF
                | num::MHPMEVENT3..=num::MHPMEVENT31
                | num::MHPMEVENT3H..=num::MHPMEVENT31H
                | num::MCYCLE..=num::MHPMCOUNTER31
                | num::MCYCLEH..=num::MHPMCOUNTER31H
                | num::CYCLE..=num::HPMCOUNTER31
                | num::CYCLEH..=num::HPMCOUNTER31H
        ) && csr != num::TIME
            && csr != num::TIMEH
            && csr != num::MCYCLE + 1
            && csr != num::MCYCLEH + 1
    }

    /// Read a counter CSR (the hart has checked the privilege field of the number and the
    /// `mcounteren`/`scounteren` gates). `None`: the CSR does not exist in this configuration.
    /// A write queued by the current instruction reads back as it will be.
    pub fn read(&self, csr: u16, instret: u64, priv_: u8, mcounteren: u64) -> Option<u64> {
        let rv32 = self.xlen == Xlen::Rv32;
        let mut me = self.clone_if_pending(instret);
        let c = me.as_mut().map_or(self, |c| c);
        let v = match csr {
            num::MCOUNTINHIBIT => c.inhibit as u64,
            num::MCYCLECFG | num::MINSTRETCFG if self.cfg.smcntrpmf => {
                c.ctr[(csr - num::MCYCLECFG) as usize * 2].sel & lo_mask(rv32, hpmevent::INH)
            }
            num::MCYCLECFGH | num::MINSTRETCFGH if self.cfg.smcntrpmf && rv32 => {
                c.ctr[(csr - num::MCYCLECFGH) as usize * 2].sel >> 32
            }
            num::SCOUNTOVF if self.cfg.sscofpmf => {
                let mut v = 0u64;
                for i in 3..32 {
                    if c.ctr[i].sel & hpmevent::OF != 0 {
                        v |= 1 << i;
                    }
                }
                if priv_ < 3 {
                    v &= mcounteren;
                }
                v
            }
            num::MHPMEVENT3..=num::MHPMEVENT31 => {
                let sel = c.ctr[(csr - num::MHPMEVENT3 + 3) as usize].sel;
                if rv32 {
                    sel & 0xffff_ffff
                } else {
                    sel
                }
            }
            num::MHPMEVENT3H..=num::MHPMEVENT31H if rv32 && self.cfg.sscofpmf => {
                c.ctr[(csr - num::MHPMEVENT3H + 3) as usize].sel >> 32
            }
            num::MCYCLE..=num::MHPMCOUNTER31 | num::CYCLE..=num::HPMCOUNTER31 => {
                let i = (csr & 0x1f) as usize;
                if c.implemented(i) {
                    let v = c.value(i, instret);
                    if rv32 {
                        v & 0xffff_ffff
                    } else {
                        v
                    }
                } else {
                    0
                }
            }
            num::MCYCLEH..=num::MHPMCOUNTER31H | num::CYCLEH..=num::HPMCOUNTER31H if rv32 => {
                let i = (csr & 0x1f) as usize;
                if c.implemented(i) {
                    c.value(i, instret) >> 32
                } else {
                    0
                }
            }
            _ => return None,
        };
        Some(v)
    }

    /// A copy with the queued writes applied as they will be after the current instruction
    /// retires (`instret + 1`), or `None` when nothing is queued.
    fn clone_if_pending(&self, instret: u64) -> Option<Counters> {
        if self.pending.is_empty() {
            return None;
        }
        let mut c = self.clone();
        c.apply_pending(instret + 1);
        Some(c)
    }

    /// Queue a write of a counter CSR (it takes effect after the instruction). `false`: the
    /// CSR does not exist in this configuration or is read-only.
    pub fn write(&mut self, csr: u16, value: u64) -> bool {
        let rv32 = self.xlen == Xlen::Rv32;
        let ok = match csr {
            num::MCOUNTINHIBIT => true,
            num::MCYCLECFG | num::MINSTRETCFG => self.cfg.smcntrpmf,
            num::MCYCLECFGH | num::MINSTRETCFGH => self.cfg.smcntrpmf && rv32,
            num::MHPMEVENT3..=num::MHPMEVENT31 => true,
            num::MHPMEVENT3H..=num::MHPMEVENT31H => rv32 && self.cfg.sscofpmf,
            num::MCYCLE..=num::MHPMCOUNTER31 => csr != num::MCYCLE + 1,
            num::MCYCLEH..=num::MHPMCOUNTER31H => rv32 && csr != num::MCYCLEH + 1,
            _ => false,
        };
        if ok {
            self.pending.push(Pending { csr, value });
        }
        ok
    }

    /// Whether writes are queued (the hart applies them before the next instruction).
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Apply the queued writes, `instret` counting the writing instruction. Returns whether an
    /// LCOFI should be raised (a counter wrapped on the way).
    pub fn apply_pending(&mut self, instret: u64) -> bool {
        let pending = std::mem::take(&mut self.pending);
        let mut irq = false;
        let rv32 = self.xlen == Xlen::Rv32;
        for p in pending {
            let v = p.value;
            match p.csr {
                num::MCOUNTINHIBIT => {
                    irq |= self.fold_all(instret);
                    // WARL: TM (bit 1) and unimplemented counters read 0.
                    self.inhibit = (v & self.present_mask() & !0b10) as u32;
                }
                num::MCYCLECFG | num::MINSTRETCFG | num::MCYCLECFGH | num::MINSTRETCFGH => {
                    let i = ((p.csr & 0xf) - 1) as usize * 2;
                    irq |= self.fold_all(instret);
                    let new = if p.csr >= num::MCYCLECFGH {
                        (self.ctr[i].sel & 0xffff_ffff) | v << 32
                    } else if rv32 {
                        (self.ctr[i].sel & !0xffff_ffff) | (v & 0xffff_ffff)
                    } else {
                        v
                    };
                    self.ctr[i].sel = new & hpmevent::INH;
                }
                num::MHPMEVENT3..=num::MHPMEVENT31 | num::MHPMEVENT3H..=num::MHPMEVENT31H => {
                    let i = (p.csr & 0x1f) as usize;
                    if !self.implemented(i) {
                        continue;
                    }
                    irq |= self.fold_all(instret);
                    let old = self.ctr[i].sel;
                    let mut new = if p.csr >= num::MHPMEVENT3H {
                        (old & 0xffff_ffff) | v << 32
                    } else if rv32 {
                        (old & !0xffff_ffff) | (v & 0xffff_ffff)
                    } else {
                        v
                    };
                    if self.cfg.sscofpmf {
                        // Bits 57..56 are reserved with Sscofpmf.
                        new &= hpmevent::OF | hpmevent::INH | (hpmevent::SELECTOR >> 2);
                    } else if rv32 {
                        new &= 0xffff_ffff;
                    }
                    self.ctr[i].sel = new;
                    let event = resolve(new & hpmevent::SELECTOR);
                    self.ctr[i].event = event;
                    // Counting of the new event starts now.
                    for m in MODES {
                        self.ctr[i].snap[m] = self.total(event, m, instret);
                    }
                }
                num::MCYCLE..=num::MHPMCOUNTER31 | num::MCYCLEH..=num::MHPMCOUNTER31H => {
                    let i = (p.csr & 0x1f) as usize;
                    if !self.implemented(i) {
                        continue;
                    }
                    // A write to either half replaces the writing instruction's own increment
                    // (privileged ISA, Zicntr: the value written is what the next instruction
                    // reads; riscv-tests rv32mi instret_overflow: "writes to instreth are
                    // considered writes to instret"): the other half is the value from before
                    // that instruction, so a carry it made is gone too.
                    let old = self.value(i, instret.saturating_sub(1));
                    irq |= self.fold_all(instret);
                    self.ctr[i].value = if p.csr >= num::MCYCLEH {
                        (old & 0xffff_ffff) | v << 32
                    } else if rv32 {
                        (old & !0xffff_ffff) | (v & 0xffff_ffff)
                    } else {
                        v
                    };
                }
                _ => {}
            }
            for i in 0..32 {
                self.ctr[i].modes = if self.implemented(i) {
                    self.modes_of(i)
                } else {
                    0
                };
            }
            self.refresh_counting();
        }
        irq
    }

    /// Fold every counter (before a configuration change); `OF`/LCOFI for any that wrapped.
    fn fold_all(&mut self, instret: u64) -> bool {
        let mut irq = false;
        for i in 0..32 {
            let wrapped = self.fold(i, instret);
            if wrapped && i >= 3 && self.cfg.sscofpmf {
                irq |= self.ctr[i].sel & hpmevent::OF == 0;
                self.ctr[i].sel |= hpmevent::OF;
            }
        }
        irq
    }
}

/// The mode-filter mask as the low half of a register shows it (RV32: none; they are in `h`).
fn lo_mask(rv32: bool, m: u64) -> u64 {
    if rv32 {
        m & 0xffff_ffff
    } else {
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every listed event is one the model counts, with a distinct index and name; the SBI
    /// encodings are as the PMU chapter defines them (type << 16 | code; cache events
    /// cache_id << 3 | op << 1 | result).
    #[test]
    fn event_table() {
        for (i, &(idx, name, _)) in EVENTS.iter().enumerate() {
            assert!(
                !matches!(resolve(idx), Event::None | Event::Never),
                "{name} {idx:#x}"
            );
            assert!(EVENTS[..i].iter().all(|e| e.0 != idx && e.1 != name));
        }
        assert_eq!(
            event::cache(event::BPU, event::OP_READ, event::MISS),
            0x1_0029
        );
        assert_eq!(
            event::cache(event::L1I, event::OP_READ, event::ACCESS),
            0x1_0008
        );
        assert_eq!(
            resolve(event::cache(event::DTLB, event::OP_READ, event::MISS)),
            Event::Tally(Tally::DtlbLoadMiss)
        );
        assert_eq!(
            resolve(event::cache(event::ITLB, event::OP_WRITE, event::ACCESS)),
            Event::Never
        );
        assert_eq!(
            resolve(event::cache(event::L1D, event::OP_PREFETCH, event::ACCESS)),
            Event::Never
        );
        assert_eq!(
            resolve(event::cache(event::L1D, 3, 0)),
            Event::None,
            "op 3 is reserved"
        );
        assert_eq!(resolve(0x2_0000), Event::None);
        assert_eq!(resolve(0x3_0001), Event::None);
        assert_eq!(resolve(0), Event::None);
    }

    /// The crate README's event table is this table (one place for the list; the README says it).
    #[test]
    fn readme_lists_every_event() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
        let rows: Vec<&str> = readme.lines().filter(|l| l.starts_with("| `0x")).collect();
        assert_eq!(rows.len(), EVENTS.len());
        for (row, &(idx, name, what)) in rows.iter().zip(EVENTS) {
            let want = format!("| `{idx:#07x}` | `{name}` |");
            assert!(row.starts_with(&want) && row.contains(what), "{row}");
        }
    }
}
