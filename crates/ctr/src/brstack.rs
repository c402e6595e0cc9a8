//! Branch stacks for profilers: the text of Linux `perf script -F ip,brstack` (and
//! `brstacksym`) from CTR entries, and [`FlowCtr`], a CTR that records from a decoded trace flow
//! (what a CTR would have held), so that sampled branch stacks and full trace can be compared.
//!
//! Where each rule comes from (facts of Linux's behaviour, no code of it):
//! - the line: `tools/perf/builtin-script.c` `process_event()`: with the `ip` field, a space and
//!   `sample__fprintf_sym()` (`tools/perf/util/evsel_fprintf.c`: the ip as `%16` hex, no `0x`,
//!   without a callchain); then the branch stack; then a newline;
//! - one `brstack` entry: `perf_sample__fprintf_brstack()`: ` 0x%x` from, `/0x%x` to, then
//!   `print_bstack_flags()`: `/%s/%c/%c/%d/%s/%s ` = event (`-` without flags, else `P`
//!   predicted or `M` mispredicted), in_tx (`X` or `-`), abort (`A` or `-`), cycles (the 16-bit
//!   `perf_branch_entry.cycles`), branch type (`tools/perf/util/branch.c` `get_branch_type()`:
//!   empty for PERF_BR_UNKNOWN, else `branch_type_name()`), speculation (`-` when unknown);
//! - one `brstacksym` entry: `perf_sample__fprintf_brstacksym()`: no leading space,
//!   `symbol__fprintf_symname_offs()` (`tools/perf/util/symbol_fprintf.c`: `name+0x%x`, or
//!   `[unknown]`) for from and to joined by `/`, then the same flags;
//! - the entries and their flags: the RISC-V CTR perf driver (`drivers/perf/riscv_ctr.c`, Rajnesh
//!   Kanwal's series "riscv: pmu: Add driver for Control Transfer Records Ext.", v3, May 2025; not
//!   in mainline when this was written): logical entries 0.. (youngest first) while
//!   `ctrsource.V`, from = `ctrsource` without V, to = `ctrtarget` without MISP, `mispred` =
//!   MISP and `predicted` = !MISP, in_tx/abort 0, type through [`perf_type`].
//!
//! One deliberate difference from that driver: it reports the cycle count only when
//! `ctrdata.CCV` is **0** (and 0 cycles when CCV=1), the reverse of the CTR specification ("The
//! CC value is only valid when the Cycle Count Valid (CCV) bit is set", "Cycle Counting"). rvtrace
//! follows the specification: CCV=1 gives the decoded CC, CCV=0 gives 0. The count saturates at
//! 65535 (perf's field has 16 bits; the driver's assignment would wrap).

use crate::{decode_cc, ty, Ctr, Entry};
use rvtrace_flow::{insn_len_at, FlowElement, FlowSink};
use rvtrace_image::Image;
use rvtrace_isa::{classify, CfClass, IsaConfig};
use rvtrace_sim::{Retired, TrapInfo};
use std::collections::VecDeque;
use std::fmt::Write as _;

/// Linux perf branch types (`include/uapi/linux/perf_event.h`, `enum perf_branch_sample_type`'s
/// companion `PERF_BR_*`), the ones [`perf_type`] gives.
pub mod perf {
    /// PERF_BR_UNKNOWN.
    pub const UNKNOWN: u8 = 0;
    /// PERF_BR_COND: conditional branch.
    pub const COND: u8 = 1;
    /// PERF_BR_UNCOND: unconditional direct jump.
    pub const UNCOND: u8 = 2;
    /// PERF_BR_IND: indirect jump.
    pub const IND: u8 = 3;
    /// PERF_BR_CALL: direct call.
    pub const CALL: u8 = 4;
    /// PERF_BR_IND_CALL: indirect call.
    pub const IND_CALL: u8 = 5;
    /// PERF_BR_RET: function return.
    pub const RET: u8 = 6;
    /// PERF_BR_SYSCALL: syscall (the CTR driver's choice for every exception).
    pub const SYSCALL: u8 = 7;
    /// PERF_BR_ERET: exception return.
    pub const ERET: u8 = 11;
    /// PERF_BR_IRQ: interrupt.
    pub const IRQ: u8 = 12;

    /// The name `perf script` prints for a branch type (`branch_type_name()` in
    /// `tools/perf/util/branch.c`; `get_branch_type()` prints nothing for PERF_BR_UNKNOWN).
    pub fn name(t: u8) -> &'static str {
        const NAMES: [&str; 15] = [
            "N/A",
            "COND",
            "UNCOND",
            "IND",
            "CALL",
            "IND_CALL",
            "RET",
            "SYSCALL",
            "SYSRET",
            "COND_CALL",
            "COND_RET",
            "ERET",
            "IRQ",
            "SERROR",
            "NO_TX",
        ];
        match t {
            UNKNOWN => "",
            t => NAMES.get(t as usize).copied().unwrap_or(""),
        }
    }
}

/// The perf branch type of a CTR transfer type (`ctrdata.TYPE`), as the RISC-V CTR perf driver
/// maps them (`ctr_perf_map[]` in `drivers/perf/riscv_ctr.c`, series v3): exception SYSCALL,
/// interrupt IRQ, trap return ERET, taken and not-taken branches COND, indirect call IND_CALL,
/// direct call CALL, indirect jumps (with or without linkage) IND, direct jumps (with or without
/// linkage) UNCOND, return RET; co-routine swaps, reserved types and 0 UNKNOWN.
pub fn perf_type(ctr_type: u8) -> u8 {
    match ctr_type {
        ty::EXCEPTION => perf::SYSCALL,
        ty::INTERRUPT => perf::IRQ,
        ty::TRAP_RETURN => perf::ERET,
        ty::NOT_TAKEN_BRANCH | ty::TAKEN_BRANCH => perf::COND,
        ty::INDIRECT_CALL => perf::IND_CALL,
        ty::DIRECT_CALL => perf::CALL,
        ty::INDIRECT_JUMP | ty::OTHER_INDIRECT_JUMP => perf::IND,
        ty::DIRECT_JUMP | ty::OTHER_DIRECT_JUMP => perf::UNCOND,
        ty::RETURN => perf::RET,
        _ => perf::UNKNOWN,
    }
}

/// Which per-entry data a sample carries, as `perf record -j` chooses it: `no_flags` leaves the
/// predicted/mispredicted event out (`-`), `no_cycles` the cycle count (0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    /// MISP as the `P`/`M` event.
    pub flags: bool,
    /// The cycle count.
    pub cycles: bool,
}

impl Fields {
    /// Everything CTR records.
    pub const ALL: Fields = Fields {
        flags: true,
        cycles: true,
    };
    /// Neither flags nor cycles (what a decoded trace can tell: it has no predictor or timing).
    pub const NONE: Fields = Fields {
        flags: false,
        cycles: false,
    };
}

/// One branch-stack entry as perf holds it (`struct perf_branch_entry`, the fields CTR fills).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfEntry {
    /// Source address.
    pub from: u64,
    /// Target address.
    pub to: u64,
    /// `Some(true)`: mispredicted (`M`); `Some(false)`: predicted (`P`); `None`: no flags (`-`).
    pub mispred: Option<bool>,
    /// Cycles since the previous entry (0: not known).
    pub cycles: u16,
    /// perf branch type ([`perf`]).
    pub ty: u8,
}

impl PerfEntry {
    /// The perf entry of a valid CTR entry, with the data `fields` selects (see the module
    /// documentation for the cycle count and CCV).
    pub fn from_ctr(e: &Entry, fields: Fields) -> PerfEntry {
        let misp = e.target & 1 != 0;
        PerfEntry {
            from: e.source_pc(),
            to: e.target_pc(),
            mispred: fields.flags.then_some(misp),
            cycles: if fields.cycles && e.ccv() {
                decode_cc(e.cc()).min(u16::MAX as u64) as u16
            } else {
                0
            },
            ty: perf_type(e.ty()),
        }
    }
}

/// The flags of an entry: `/EVENT/IN_TX/ABORT/CYCLES/TYPE/SPEC ` (`print_bstack_flags()`; CTR
/// has no transactions and no speculation information, so those are always `-`).
pub fn write_flags(out: &mut String, e: &PerfEntry) {
    let ev = match e.mispred {
        None => "-",
        Some(true) => "M",
        Some(false) => "P",
    };
    let _ = write!(out, "/{ev}/-/-/{}/{}/- ", e.cycles, perf::name(e.ty));
}

/// A `brstack` entry: ` 0xFROM/0xTO` and the flags (`perf_sample__fprintf_brstack()`).
pub fn write_brstack_entry(out: &mut String, e: &PerfEntry) {
    let _ = write!(out, " {:#x}/{:#x}", e.from, e.to);
    write_flags(out, e);
}

/// `name+0xOFF`, or `[unknown]` without a symbol (`symbol__fprintf_symname_offs()`).
pub fn write_symname_offs(out: &mut String, sym: Option<(&str, u64)>) {
    match sym {
        Some((name, off)) => {
            let _ = write!(out, "{name}+{off:#x}");
        }
        None => out.push_str("[unknown]"),
    }
}

/// A `brstacksym` entry: `FROMSYM/TOSYM` and the flags, no leading space
/// (`perf_sample__fprintf_brstacksym()`); `sym` names an address.
pub fn write_brstacksym_entry<'s>(
    out: &mut String,
    e: &PerfEntry,
    sym: &dyn Fn(u64) -> Option<(&'s str, u64)>,
) {
    write_symname_offs(out, sym(e.from));
    out.push('/');
    write_symname_offs(out, sym(e.to));
    write_flags(out, e);
}

/// The `ip` field: a space and the address as `%16` hex without `0x` (`process_event()`,
/// `sample__fprintf_sym()`).
pub fn write_ip(out: &mut String, ip: u64) {
    let _ = write!(out, " {ip:16x}");
}

/// One sample line of `perf script -F ip,brstack` (or `ip,brstacksym` when `sym` is given),
/// newline included. `entries` youngest first.
pub fn sample_line<'s>(
    ip: u64,
    entries: &[PerfEntry],
    sym: Option<&dyn Fn(u64) -> Option<(&'s str, u64)>>,
) -> String {
    let mut s = String::with_capacity(24 + entries.len() * 48);
    write_ip(&mut s, ip);
    for e in entries {
        match sym {
            Some(f) => write_brstacksym_entry(&mut s, e, f),
            None => write_brstack_entry(&mut s, e),
        }
    }
    s.push('\n');
    s
}

/// The symbol of `addr` in `image` with the offset into it, for [`sample_line`].
pub fn image_symbol(image: &Image, addr: u64) -> Option<(&str, u64)> {
    image.symbol_at(addr).map(|(s, off)| (s.name.as_str(), off))
}

/// A CTR sample: the address of the next instruction and the valid entries, youngest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The pc of the next instruction to execute (perf's sample ip).
    pub ip: u64,
    /// `Ctr::entries()` at that point.
    pub entries: Vec<Entry>,
}

/// When [`FlowCtr`] samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleAt {
    /// After every N retired instructions (N > 0): instruction k*N retired (with the trap it
    /// raised, for `ecall`/`ebreak`), before anything that follows (an interrupt taken there).
    Every(u64),
    /// At each local counter overflow interrupt (LCOFI, interrupt 13) the flow shows: after the
    /// trap (recorded, or a freeze with LCOFIFRZ), ip = its `epc`; then FROZEN is cleared, as
    /// the perf driver's overflow handler does.
    Overflow,
}

/// Interrupt code of a local counter overflow interrupt (Sscofpmf).
const IRQ_LCOFI: u64 = 13;

/// A retired instruction whose successor is not known yet (the last one of a range).
#[derive(Clone, Copy, Debug)]
struct PendInsn {
    pc: u64,
    bits: u32,
    len: u8,
    class: CfClass,
    priv_: u8,
    /// For a branch: whether it was taken, when the flow says so (the last instruction of a
    /// range); otherwise taken means that the next address is not the next in memory.
    taken: Option<bool>,
}

#[derive(Clone, Copy, Debug)]
enum Pend {
    /// An instruction and, once known, the address after it.
    Insn(PendInsn, Option<u64>),
    Trap {
        cause: u64,
        interrupt: bool,
        epc: Option<u64>,
        handler: Option<u64>,
        from_priv: u8,
    },
    /// A sample; `None`: its ip is the next address the flow gives.
    Sample(Option<u64>),
}

/// A CTR fed from a decoded trace flow instead of a hart: every range's instructions are
/// classified from the program image (`rvtrace_isa::classify`) and given to [`Ctr`]'s own
/// recording rules ([`Ctr::on_retire`], [`Ctr::on_trap`]), so the same `mctrctl` filter applies.
/// Privileges come from [`FlowElement::Context`]; when none was seen and the configuration does
/// not enable all of U, S and M, M is assumed and [`FlowCtr::unknown_privilege`] counts it.
///
/// An `ecall`/`ebreak` whose trap's handler is the next instruction is taken for a call
/// serviced in place (semihosting, the built-in SBI), which the hart's CTR does not record: the
/// trace convention for those (`rvtrace_sim::ingress`).
///
/// What a trace cannot tell: MISP (no predictor: 0) and cycle counts (CCV=0 on the first record,
/// CC=0). Whether a branch was taken comes from the flow (inside a range every branch went on
/// to the next instruction; the range's `taken` says it for its last one, even when the branch's
/// offset equals its length). A trace loss ends sampling ([`FlowCtr::lost`]):
/// the instruction count is not known after it; so does a restart after the trace stopped
/// ([`FlowCtr::gap`]: a filtered trace).
pub struct FlowCtr<'a> {
    image: &'a Image,
    isa: IsaConfig,
    /// The CTR state.
    pub ctr: Ctr,
    at: SampleAt,
    priv_: Option<u8>,
    retired: u64,
    queue: VecDeque<Pend>,
    samples: VecDeque<Sample>,
    /// Transfers recorded under an assumed privilege (see the type's documentation).
    pub unknown_privilege: u64,
    /// Instructions the image did not cover (not classified).
    pub unmapped: u64,
    /// Traps whose cause the trace did not give (N-Trace reports none): taken as exceptions
    /// with cause 0, so neither LCOFI (freeze, overflow samples) nor breakpoint (BPFRZ).
    pub traps_without_cause: u64,
    /// A loss was seen: no samples after it.
    pub lost: bool,
    /// Trace stopped (an End) and started again (filtered trace): the instructions in between
    /// were not traced, so no samples after it either.
    pub gap: bool,
    ended: bool,
}

impl<'a> FlowCtr<'a> {
    /// A v1.0 CTR with `mctrctl` = `mctrctl` (depth 16 unless changed through
    /// [`FlowCtr::ctr`]).
    pub fn new(image: &'a Image, isa: IsaConfig, mctrctl: u64, at: SampleAt) -> FlowCtr<'a> {
        let mut ctr = Ctr::new(crate::Version::V1_0);
        ctr.write(crate::csr::MCTRCTL, mctrctl, isa.xlen, [0; 4]);
        FlowCtr {
            image,
            isa,
            ctr,
            at,
            priv_: None,
            retired: 0,
            queue: VecDeque::new(),
            samples: VecDeque::new(),
            unknown_privilege: 0,
            unmapped: 0,
            traps_without_cause: 0,
            lost: false,
            gap: false,
            ended: false,
        }
    }

    /// Instructions retired so far.
    pub fn retired(&self) -> u64 {
        self.retired
    }

    /// The next sample taken, if any (call after each element: memory stays flat).
    pub fn next_sample(&mut self) -> Option<Sample> {
        self.samples.pop_front()
    }

    fn needs_privilege(&self) -> bool {
        use crate::ctl::{M, S, U};
        self.ctr.mctrctl() & (U | S | M) != U | S | M
    }

    fn privilege(&mut self) -> u8 {
        match self.priv_ {
            Some(p) => p,
            None => {
                if self.needs_privilege() {
                    self.unknown_privilege += 1;
                }
                3
            }
        }
    }

    fn retire(&mut self, i: &PendInsn, next_pc: u64) {
        if matches!(i.class, CfClass::None | CfClass::EnvTrap) {
            return;
        }
        let ev = Retired {
            pc: i.pc,
            insn: i.bits,
            len: i.len,
            class: i.class,
            next_pc,
            priv_: i.priv_,
            trap: None,
            serviced: None,
            mtime: 0,
        };
        let taken = i
            .taken
            .unwrap_or(next_pc != i.pc.wrapping_add(i.len as u64));
        // The flow gives a privilege change before the first instruction that runs there.
        let new_priv = self.privilege();
        self.ctr.on_retire(&ev, new_priv, taken, false);
    }

    fn take_sample(&mut self, ip: u64) {
        if self.lost || self.gap {
            return;
        }
        self.samples.push_back(Sample {
            ip,
            entries: self.ctr.entries(),
        });
        if self.at == SampleAt::Overflow && self.ctr.frozen() {
            // The perf driver's overflow handler clears FROZEN after reading the entries.
            let status = self.ctr.wrptr();
            self.ctr
                .write(crate::csr::SCTRSTATUS, status, self.isa.xlen, [0; 4]);
        }
    }

    /// Everything queued, now that the next instruction's address `next` is known.
    fn resolve(&mut self, next: u64) {
        while let Some(p) = self.queue.pop_front() {
            match p {
                Pend::Insn(i, to) => self.retire(&i, to.unwrap_or(next)),
                Pend::Trap {
                    cause,
                    interrupt,
                    epc,
                    handler,
                    from_priv,
                } => {
                    let to_priv = self.privilege();
                    let handler = handler.unwrap_or(next);
                    self.ctr.on_trap(&TrapInfo {
                        cause,
                        tval: 0,
                        interrupt,
                        epc: epc.unwrap_or(0),
                        from_priv,
                        to_priv,
                        handler,
                        mstatus: 0,
                    });
                }
                Pend::Sample(ip) => self.take_sample(ip.unwrap_or(next)),
            }
        }
    }

    fn range(&mut self, start: u64, count: u64, taken: Option<bool>) {
        let mut pc = start;
        for k in 0..count {
            let Some(len) = insn_len_at(self.image, pc) else {
                // Not in the image: the rest of the range cannot be walked.
                self.unmapped += count - k;
                self.retired += count - k;
                return;
            };
            let bits = self.image.fetch(pc).unwrap_or(0);
            let class = classify(&self.isa, bits).class;
            let priv_ = self.privilege();
            let last = k + 1 == count;
            let i = PendInsn {
                pc,
                bits,
                len: len as u8,
                class,
                priv_,
                taken: if last { taken } else { Some(false) },
            };
            self.retired += 1;
            let due =
                matches!(self.at, SampleAt::Every(n) if n > 0 && self.retired.is_multiple_of(n));
            if k + 1 < count {
                let next = pc.wrapping_add(len);
                self.retire(&i, next);
                if due {
                    self.take_sample(next);
                }
                pc = next;
            } else {
                self.queue.push_back(Pend::Insn(i, None));
                if due {
                    self.queue.push_back(Pend::Sample(None));
                }
            }
        }
    }

    fn trap(
        &mut self,
        cause: Option<u64>,
        interrupt: bool,
        epc: Option<u64>,
        handler: Option<u64>,
    ) {
        // An exception raised by the retired instruction just before (`ecall`, `ebreak`) comes
        // before a sample due at that instruction; any other trap (an interrupt, or a fault of
        // the next instruction, which did not retire) follows it, and its epc is the address the
        // queue waits for.
        let own_insn = self.queue.iter().find_map(|p| match p {
            Pend::Insn(i, _) if i.class == CfClass::EnvTrap && epc.is_none_or(|e| e == i.pc) => {
                Some(*i)
            }
            _ => None,
        });
        let own = !interrupt && own_insn.is_some();
        // An environment call serviced in place (semihosting, an SBI built into the hart) is
        // no trap and a CTR records nothing; traces show it as an exception whose handler is
        // the next instruction (the convention of the E-Trace reference flow that rvtrace's
        // ingress follows: `rvtrace_sim::ingress`).
        if own && own_insn.is_some_and(|i| handler == Some(i.pc.wrapping_add(i.len as u64))) {
            return;
        }
        self.traps_without_cause += cause.is_none() as u64;
        let t = Pend::Trap {
            cause: cause.unwrap_or(0),
            interrupt,
            epc,
            handler,
            from_priv: self.privilege(),
        };
        if own {
            let at = self
                .queue
                .iter()
                .position(|p| matches!(p, Pend::Sample(None)))
                .unwrap_or(self.queue.len());
            self.queue.insert(at, t);
        } else {
            if let Some(e) = epc {
                self.resolve(e);
            }
            self.queue.push_back(t);
        }
        if self.at == SampleAt::Overflow && interrupt && cause == Some(IRQ_LCOFI) {
            self.queue.push_back(Pend::Sample(epc));
        }
    }
}

impl FlowSink for FlowCtr<'_> {
    fn element(&mut self, e: &FlowElement) {
        if self.ended && matches!(e, FlowElement::Sync { .. } | FlowElement::Range { .. }) {
            self.gap = true;
        }
        match *e {
            FlowElement::Sync { addr, .. } => self.resolve(addr),
            FlowElement::Range {
                start,
                count,
                taken,
                ..
            } => {
                self.resolve(start);
                self.range(start, count, taken);
            }
            FlowElement::Trap {
                cause,
                interrupt,
                epc,
                handler,
                ..
            } => self.trap(cause, interrupt, epc, handler),
            FlowElement::Context { privilege, .. } => {
                if let Some(p) = privilege {
                    self.priv_ = Some(p);
                }
            }
            FlowElement::Time { .. } | FlowElement::Ignored { .. } | FlowElement::Event { .. } => {}
            FlowElement::Loss { .. } => {
                self.queue.clear();
                self.lost = true;
            }
            // The end of trace: nothing follows, so what waits for a successor is dropped (the
            // hart side takes no sample once the program has stopped either).
            FlowElement::End { .. } => {
                self.queue.clear();
                self.ended = true;
            }
        }
    }
}

#[cfg(test)]
mod tests;
