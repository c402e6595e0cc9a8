//! A micro-architecture model behind the performance-counter events: a branch predictor, L1
//! instruction and data caches and a timing model. It sees only what the hart reports (retired
//! control transfers, fetches, data accesses, long-latency operations) and keeps no data, only
//! predictor state and cache tags; it never changes what the program does.
//!
//! **Branch predictor** ([`BpredConfig`], default `gshare:4096:12,btb:512,ras:16`). A direction
//! predictor of 2-bit saturating counters, initialised to 1 (weakly not-taken): `bimodal:N`
//! indexes them with `pc >> 1`, `gshare:N:H` with `(pc >> 1) xor` the last `H` conditional-branch
//! outcomes; `none` always predicts not-taken. A branch target buffer (`btb:N`, direct-mapped,
//! full-PC tags) holds the target of every taken branch and jump except those the return-address
//! stack predicts. The return-address stack (`ras:N`) follows the RISC-V link-register hints
//! (unprivileged ISA, `jalr` "Return-address stack prediction hints"): calls push `pc + len`,
//! returns pop, co-routine swaps pop then push. Everything is updated at retirement, in program
//! order (there is no wrong-path speculation). A retired control transfer is **mispredicted**
//! when a conditional branch went the other way than predicted, or when the target of an indirect
//! jump, indirect call, return or swap was not the one predicted (RAS top, or BTB entry; no
//! entry = mispredicted). The target of a direct jump or call and of a taken conditional branch is
//! known at decode: a BTB miss on them is a **decode redirect** (a short bubble), not a
//! mispredict. Without a RAS, returns and swaps are predicted by the BTB like indirect jumps.
//! `--bpred off` turns the whole predictor off ([`Uarch::branch`] then reports nothing).
//!
//! **Caches** ([`CacheConfig`], `l1i:32k:8:64` = name:size:ways:line; off by default).
//! Set-associative with true LRU replacement, write-allocate and write-back (a write miss
//! allocates the line; a dirty victim counts a write-back); only tags are kept. An instruction
//! **access** happens when a fetch leaves the line of the previous fetch (sequential fetch within a
//! line is one access); a data access is every load and every store (an AMO is one of each). An
//! access that straddles two lines touches both and counts as one access, missed if either line
//! missed.
//!
//! **Timing** ([`TimingConfig`], off by default): one cycle per retired instruction plus
//! penalties, `cycles = instructions + frontend stalls + backend stalls`. Frontend stalls: each
//! mispredict (default 8 cycles), decode redirect (1) and missed L1I access (20); backend stalls:
//! each missed L1D access (20), multiply (3) and divide (20).
//!
//! ```
//! use rvtrace_sim::uarch::{BranchKind, Uarch, UarchConfig};
//! let mut cfg = UarchConfig::default(); // the predictor only
//! cfg.set_cache("l1d:32k:8:64")?; // option syntax; errors are usage messages
//! cfg.set_timing("on,mispredict=10")?;
//! let mut u = Uarch::new(&cfg);
//! // For each retired instruction, what it did:
//! assert!(!u.fetch(0x8000_0000, 4).accessed); // no L1I
//! let (pc, target) = (0x8000_0000, 0x7fff_fff0);
//! assert!(u.branch(pc, BranchKind::Cond, true, target, pc + 4)); // cold: predicted not-taken
//! assert!(u.data(0x8000_1000, 8, false).missed);
//! let stalls = u.take_stalls(); // then add 1 + stalls.total() to the cycle count
//! assert_eq!((stalls.frontend, stalls.backend), (10, 20));
//! # Ok::<(), rvtrace_sim::uarch::SpecError>(())
//! ```

mod bpred;
mod cache;
mod timing;

pub use bpred::{BpredConfig, DirConfig};
pub use cache::{CacheConfig, CacheKind};
pub use timing::TimingConfig;

use bpred::{Bpred, Outcome};
use cache::Cache;
use rvtrace_isa::CfClass;
use std::fmt;

/// Why a `--bpred`, `--cache` or `--timing` specification was refused; the message names the
/// part and the rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecError {
    /// The text does not follow the option's syntax, or names a part or key the model lacks.
    Syntax(String),
    /// A number or size is not one, or breaks a rule of its part (range, power of two, ...).
    Value(String),
}

impl SpecError {
    /// The message for people.
    pub fn message(&self) -> &str {
        match self {
            SpecError::Syntax(m) | SpecError::Value(m) => m,
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for SpecError {}

/// Which parts of the model exist, and their sizes. The default has the branch predictor on
/// ([`BpredConfig::default`]) and the caches and timing off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UarchConfig {
    /// The branch predictor (`None`: off).
    pub bpred: Option<BpredConfig>,
    /// The L1 instruction cache (`None`: off).
    pub l1i: Option<CacheConfig>,
    /// The L1 data cache (`None`: off).
    pub l1d: Option<CacheConfig>,
    /// The timing model (`None`: off; `mcycle` then counts one cycle per instruction).
    pub timing: Option<TimingConfig>,
}

impl Default for UarchConfig {
    fn default() -> Self {
        UarchConfig {
            bpred: Some(BpredConfig::default()),
            l1i: None,
            l1d: None,
            timing: None,
        }
    }
}

impl UarchConfig {
    /// Applies a `--bpred` option: `off`, or a [`BpredConfig`] spec.
    pub fn set_bpred(&mut self, spec: &str) -> Result<(), SpecError> {
        self.bpred = if spec.trim() == "off" {
            None
        } else {
            Some(spec.parse()?)
        };
        Ok(())
    }

    /// Applies a `--cache` option: a [`CacheConfig`] spec (`l1d:32k:8:64`), `l1i:off` /
    /// `l1d:off`, or `off` (both).
    pub fn set_cache(&mut self, spec: &str) -> Result<(), SpecError> {
        let spec = spec.trim();
        if spec == "off" {
            (self.l1i, self.l1d) = (None, None);
            return Ok(());
        }
        let (kind, on) = match spec {
            "l1i:off" => (CacheKind::L1i, None),
            "l1d:off" => (CacheKind::L1d, None),
            _ => {
                let c: CacheConfig = spec.parse()?;
                (c.kind(), Some(c))
            }
        };
        match kind {
            CacheKind::L1i => self.l1i = on,
            CacheKind::L1d => self.l1d = on,
        }
        Ok(())
    }

    /// Applies a `--timing` option: `off`, or a [`TimingConfig`] spec (`on`, overrides).
    pub fn set_timing(&mut self, spec: &str) -> Result<(), SpecError> {
        self.timing = if spec.trim() == "off" {
            None
        } else {
            Some(spec.parse()?)
        };
        Ok(())
    }

    /// True when every part is off: the hart need not call the model at all.
    pub fn is_off(&self) -> bool {
        self.bpred.is_none() && self.l1i.is_none() && self.l1d.is_none() && self.timing.is_none()
    }
}

/// `bpred=...; l1i=...; l1d=...; timing=...`, each part in its option syntax (or `off`).
impl fmt::Display for UarchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn part<T: fmt::Display>(p: &Option<T>) -> String {
            p.as_ref()
                .map_or_else(|| "off".to_string(), |p| p.to_string())
        }
        write!(
            f,
            "bpred={}; l1i={}; l1d={}; timing={}",
            part(&self.bpred),
            part(&self.l1i),
            part(&self.l1d),
            part(&self.timing)
        )
    }
}

/// The kind of a retired control transfer, as the predictor sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BranchKind {
    /// Conditional branch (target pc-relative, known at decode).
    Cond,
    /// Jump without return-address push, target in the opcode (`jal x0`, `c.j`, `jal rd` with rd
    /// not a link register).
    DirectJump,
    /// Call with the target in the opcode (`jal x1/x5`, `c.jal`): pushes the RAS.
    DirectCall,
    /// Jump through a register, no push (`jalr`/`c.jr` not involving a link register, `cm.jt`).
    IndirectJump,
    /// Call through a register (`jalr x1/x5, rs`, `c.jalr`, `cm.jalt`): pushes the RAS.
    IndirectCall,
    /// Return (`jalr rd, x1/x5` with rd not a link, `c.jr x1/x5`, `cm.popret*`): pops the RAS.
    Return,
    /// Co-routine swap (`jalr x1, x5`, `jalr x5, x1`, `c.jalr x5`): pops, then pushes.
    CoroutineSwap,
}

impl BranchKind {
    /// The kind of a control-flow class; `None` for classes the predictor does not see
    /// (non-transfers, `ecall`/`ebreak`, trap returns: those flush the pipeline whatever is
    /// predicted). The Zcmt table jumps read their target from memory, so they are indirect.
    pub fn from_class(c: CfClass) -> Option<BranchKind> {
        Some(match c {
            CfClass::Branch => BranchKind::Cond,
            CfClass::InferableJump | CfClass::OtherInferableJump => BranchKind::DirectJump,
            CfClass::InferableCall => BranchKind::DirectCall,
            CfClass::UninferableJump | CfClass::OtherUninferableJump | CfClass::TableJump => {
                BranchKind::IndirectJump
            }
            CfClass::UninferableCall | CfClass::TableCall => BranchKind::IndirectCall,
            CfClass::Return | CfClass::PopRet => BranchKind::Return,
            CfClass::CoroutineSwap => BranchKind::CoroutineSwap,
            CfClass::None | CfClass::TrapReturn | CfClass::EnvTrap => return None,
        })
    }
}

/// The result of one fetch or data access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Access {
    /// The cache was accessed (false when the cache is off, and for a fetch within the line of
    /// the previous fetch).
    pub accessed: bool,
    /// The access missed (in either line, for an access straddling two lines).
    pub missed: bool,
}

impl Access {
    /// No access.
    pub const NONE: Access = Access {
        accessed: false,
        missed: false,
    };
    /// An access that hit.
    pub const HIT: Access = Access {
        accessed: true,
        missed: false,
    };
    /// An access that missed.
    pub const MISS: Access = Access {
        accessed: true,
        missed: true,
    };
}

/// A long-latency operation the timing model charges for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LongOp {
    /// Integer multiply (`mul*`).
    Mul,
    /// Integer divide or remainder (`div*`, `rem*`).
    Div,
}

/// Stall cycles charged by the timing model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Stalls {
    /// Mispredicts, decode redirects, L1I misses (`STALLED_CYCLES_FRONTEND`).
    pub frontend: u64,
    /// L1D misses, multiplies, divides (`STALLED_CYCLES_BACKEND`).
    pub backend: u64,
}

impl Stalls {
    /// Frontend plus backend.
    pub fn total(&self) -> u64 {
        self.frontend + self.backend
    }
}

/// Totals since creation or [`Uarch::reset`], for reports and tests (the hart's counters count
/// the per-call results themselves, by privilege mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UarchStats {
    /// Conditional branches seen by [`Uarch::branch`].
    pub cond_branches: u64,
    /// Of which mispredicted.
    pub cond_mispredicts: u64,
    /// Other control transfers seen by [`Uarch::branch`].
    pub jumps: u64,
    /// Of which mispredicted (wrong or no target).
    pub jump_mispredicts: u64,
    /// Decode redirects (BTB miss on a direct target; not mispredicts).
    pub redirects: u64,
    /// L1I accesses.
    pub l1i_accesses: u64,
    /// L1I missed accesses.
    pub l1i_misses: u64,
    /// L1D read accesses.
    pub l1d_reads: u64,
    /// L1D missed read accesses.
    pub l1d_read_misses: u64,
    /// L1D write accesses.
    pub l1d_writes: u64,
    /// L1D missed write accesses.
    pub l1d_write_misses: u64,
    /// Dirty L1D lines evicted.
    pub l1d_writebacks: u64,
    /// Stall cycles charged (zero when timing is off).
    pub stalls: Stalls,
}

/// Penalties in effect: the timing config, or all zeros when timing is off (so the hot paths add
/// without testing).
#[derive(Clone, Copy, Debug, Default)]
struct Penalties {
    mispredict: u64,
    redirect: u64,
    l1i_miss: u64,
    l1d_miss: u64,
    mul: u64,
    div: u64,
}

/// The model's state. Built once from a [`UarchConfig`]; no call allocates.
#[derive(Clone, Debug)]
pub struct Uarch {
    config: UarchConfig,
    bpred: Option<Bpred>,
    l1i: Option<Cache>,
    l1d: Option<Cache>,
    pen: Penalties,
    /// Line number of the previous fetch (`u64::MAX`: none yet).
    last_fetch_line: u64,
    pending: Stalls,
    stats: UarchStats,
}

impl Uarch {
    /// A cold model (empty caches, predictor counters weakly not-taken).
    pub fn new(config: &UarchConfig) -> Uarch {
        let pen = config
            .timing
            .as_ref()
            .map_or(Penalties::default(), |t| Penalties {
                mispredict: t.mispredict.into(),
                redirect: t.redirect.into(),
                l1i_miss: t.l1i_miss.into(),
                l1d_miss: t.l1d_miss.into(),
                mul: t.mul.into(),
                div: t.div.into(),
            });
        Uarch {
            config: config.clone(),
            bpred: config.bpred.as_ref().map(Bpred::new),
            l1i: config.l1i.as_ref().map(Cache::new),
            l1d: config.l1d.as_ref().map(Cache::new),
            pen,
            last_fetch_line: u64::MAX,
            pending: Stalls::default(),
            stats: UarchStats::default(),
        }
    }

    /// The configuration the model was built from.
    pub fn config(&self) -> &UarchConfig {
        &self.config
    }

    /// A retired control transfer at `pc`: `taken` matters for [`BranchKind::Cond`] only;
    /// `target` is the next pc actually executed; `fallthrough` is `pc + len` (what calls push).
    /// Returns whether it was mispredicted (see the module docs: direction for conditional
    /// branches, target for indirect transfers; a BTB miss on a direct target is a decode
    /// redirect, not a mispredict), and trains the predictor. Always false when the predictor
    /// is off.
    #[inline]
    pub fn branch(
        &mut self,
        pc: u64,
        kind: BranchKind,
        taken: bool,
        target: u64,
        fallthrough: u64,
    ) -> bool {
        let Some(bp) = &mut self.bpred else {
            return false;
        };
        let outcome = bp.branch(pc, kind, taken, target, fallthrough);
        let miss = outcome == Outcome::Mispredict;
        // Branch-free: the outcome is data-dependent, so a test would often mispredict on the host.
        let cond = kind == BranchKind::Cond;
        self.stats.cond_branches += cond as u64;
        self.stats.cond_mispredicts += (cond & miss) as u64;
        self.stats.jumps += !cond as u64;
        self.stats.jump_mispredicts += (!cond & miss) as u64;
        let redirect = outcome == Outcome::Redirect;
        self.stats.redirects += redirect as u64;
        self.pending.frontend +=
            self.pen.mispredict * miss as u64 + self.pen.redirect * redirect as u64;
        miss
    }

    /// An instruction fetch of `len` bytes at `pc`. The L1I is accessed only when the fetch
    /// leaves the line of the previous fetch; an instruction straddling two lines touches the
    /// second one too (one access, missed if either missed). [`Access::NONE`] when there is no
    /// L1I.
    #[inline]
    pub fn fetch(&mut self, pc: u64, len: u8) -> Access {
        let Some(c) = &mut self.l1i else {
            return Access::NONE;
        };
        let first = c.line_of(pc);
        let last = c.line_of(pc.wrapping_add(u64::from(len.max(1)) - 1));
        if first == self.last_fetch_line && last == first {
            return Access::NONE;
        }
        let mut missed = false;
        if first != self.last_fetch_line {
            missed |= c.access(first, false).miss;
        }
        if last != first {
            missed |= c.access(last, false).miss;
        }
        self.last_fetch_line = last;
        self.stats.l1i_accesses += 1;
        self.stats.l1i_misses += missed as u64;
        self.pending.frontend += self.pen.l1i_miss * missed as u64;
        Access {
            accessed: true,
            missed,
        }
    }

    /// A data access of `size` bytes at `addr` (a load, or a store when `write`; an AMO is one
    /// of each: two calls). An access straddling two lines touches both: one access, missed if
    /// either line missed. [`Access::NONE`] when there is no L1D. Only the first and last byte's
    /// lines are touched: accesses are at most 8 bytes and lines at least 8.
    #[inline]
    pub fn data(&mut self, addr: u64, size: u8, write: bool) -> Access {
        let Some(c) = &mut self.l1d else {
            return Access::NONE;
        };
        let first = c.line_of(addr);
        let last = c.line_of(addr.wrapping_add(u64::from(size.max(1)) - 1));
        let a = c.access(first, write);
        let mut missed = a.miss;
        let mut writebacks = a.writeback as u64;
        if last != first {
            let b = c.access(last, write);
            missed |= b.miss;
            writebacks += b.writeback as u64;
        }
        self.stats.l1d_writebacks += writebacks;
        self.stats.l1d_writes += write as u64;
        self.stats.l1d_write_misses += (write & missed) as u64;
        self.stats.l1d_reads += !write as u64;
        self.stats.l1d_read_misses += (!write & missed) as u64;
        self.pending.backend += self.pen.l1d_miss * missed as u64;
        Access {
            accessed: true,
            missed,
        }
    }

    /// A retired long-latency operation: charges its backend stall (nothing when timing is off).
    #[inline]
    pub fn long_op(&mut self, op: LongOp) {
        self.pending.backend += match op {
            LongOp::Mul => self.pen.mul,
            LongOp::Div => self.pen.div,
        };
    }

    /// The timing model's penalties, `None` when timing is off.
    pub fn timing(&self) -> Option<&TimingConfig> {
        self.config.timing.as_ref()
    }

    /// The stall cycles charged since the previous call, and clears them: the hart calls this
    /// once per retired instruction (when timing is on) and adds `1 + total` to the cycle count
    /// of the current privilege mode.
    #[inline]
    pub fn take_stalls(&mut self) -> Stalls {
        let s = self.pending;
        self.stats.stalls.frontend += s.frontend;
        self.stats.stalls.backend += s.backend;
        self.pending = Stalls::default();
        s
    }

    /// Totals since creation or the last [`reset`](Uarch::reset) (stalls: those already taken by
    /// [`take_stalls`](Uarch::take_stalls)).
    pub fn stats(&self) -> &UarchStats {
        &self.stats
    }

    /// Back to the state of [`Uarch::new`]: cold caches and predictor, no stalls, zero totals.
    pub fn reset(&mut self) {
        if let Some(b) = &mut self.bpred {
            b.reset();
        }
        if let Some(c) = &mut self.l1i {
            c.reset();
        }
        if let Some(c) = &mut self.l1d {
            c.reset();
        }
        self.last_fetch_line = u64::MAX;
        self.pending = Stalls::default();
        self.stats = UarchStats::default();
    }
}

/// Parses a byte size: plain bytes, or with a `k`/`K` (KiB) or `m`/`M` (MiB) suffix.
fn parse_size(s: &str, what: &str) -> Result<u64, SpecError> {
    let (digits, unit) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1u64 << 10),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 1 << 20),
        _ => (s, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| {
            SpecError::Value(format!(
                "{what} '{s}' is not a size (expected bytes, or a number with k or m: 32k, 1m)"
            ))
        })
}

/// Parses a plain number no larger than `max`.
fn parse_num(s: &str, what: &str, max: u64) -> Result<u64, SpecError> {
    match s.parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        Ok(_) => Err(SpecError::Value(format!(
            "{what} '{s}' is too large (at most {max})"
        ))),
        Err(_) => Err(SpecError::Value(format!("{what} '{s}' is not a number"))),
    }
}

/// `32k`, `1m` or plain bytes: the shortest exact form.
fn fmt_size(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}m", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{}k", n >> 10)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests;
