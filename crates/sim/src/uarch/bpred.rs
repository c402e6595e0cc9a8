//! The branch predictor: direction counters (bimodal/gshare), a BTB and a return-address stack.

use super::{parse_num, BranchKind, SpecError};
use std::fmt;
use std::str::FromStr;

/// Largest direction table (entries).
const MAX_DIR_ENTRIES: u64 = 1 << 24;
/// Largest BTB (entries).
const MAX_BTB_ENTRIES: u64 = 1 << 20;
/// Deepest RAS.
const MAX_RAS_DEPTH: u64 = 1 << 16;

/// The direction predictor for conditional branches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirConfig {
    /// `none`: always predicts not-taken (every taken branch is mispredicted).
    NotTaken,
    /// `bimodal:<entries>`: 2-bit counters indexed by `pc >> 1`.
    Bimodal {
        /// Counters (a power of two).
        entries: u32,
    },
    /// `gshare:<entries>:<history bits>`: 2-bit counters indexed by `(pc >> 1) xor history`.
    Gshare {
        /// Counters (a power of two).
        entries: u32,
        /// Global history length, at most log2(entries).
        history: u8,
    },
}

/// A branch predictor configuration: a direction predictor, optionally a BTB and a RAS.
///
/// Syntax (`FromStr`): comma-separated parts, exactly one direction part (`none`,
/// `bimodal:<entries>`, `gshare:<entries>:<history bits>`) and at most one each of `btb:<entries>`
/// and `ras:<depth>`; a part left out is absent (`bimodal:2048` has no BTB and no RAS). Entries
/// are powers of two; the history is at most log2(entries) bits. The default is
/// `gshare:4096:12,btb:512,ras:16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpredConfig {
    dir: DirConfig,
    btb: Option<u32>,
    ras: Option<u32>,
}

impl Default for BpredConfig {
    fn default() -> Self {
        BpredConfig {
            dir: DirConfig::Gshare {
                entries: 4096,
                history: 12,
            },
            btb: Some(512),
            ras: Some(16),
        }
    }
}

impl BpredConfig {
    /// A checked configuration: table sizes powers of two (direction table up to 2^24 entries,
    /// BTB up to 2^20), history at most log2(entries), RAS depth 1..=65536.
    pub fn new(dir: DirConfig, btb: Option<u32>, ras: Option<u32>) -> Result<Self, SpecError> {
        match dir {
            DirConfig::NotTaken => {}
            DirConfig::Bimodal { entries } => {
                pow2(entries.into(), "bimodal entries", MAX_DIR_ENTRIES)?
            }
            DirConfig::Gshare { entries, history } => {
                pow2(entries.into(), "gshare entries", MAX_DIR_ENTRIES)?;
                let bits = entries.trailing_zeros();
                if u32::from(history) > bits {
                    return Err(SpecError::Value(format!(
                        "gshare history of {history} bits is longer than the {bits}-bit index of \
                         {entries} entries (expected at most {bits})"
                    )));
                }
            }
        }
        if let Some(n) = btb {
            pow2(n.into(), "btb entries", MAX_BTB_ENTRIES)?;
        }
        if let Some(n) = ras {
            if n == 0 || u64::from(n) > MAX_RAS_DEPTH {
                return Err(SpecError::Value(format!(
                    "ras depth {n} is out of range (expected 1..={MAX_RAS_DEPTH})"
                )));
            }
        }
        Ok(BpredConfig { dir, btb, ras })
    }

    /// The direction predictor.
    pub fn dir(&self) -> DirConfig {
        self.dir
    }

    /// BTB entries, if there is a BTB.
    pub fn btb(&self) -> Option<u32> {
        self.btb
    }

    /// RAS depth, if there is a RAS.
    pub fn ras(&self) -> Option<u32> {
        self.ras
    }
}

fn pow2(n: u64, what: &str, max: u64) -> Result<(), SpecError> {
    if n.is_power_of_two() && n <= max {
        Ok(())
    } else {
        Err(SpecError::Value(format!(
            "{what} {n}: expected a power of two from 1 to {max}"
        )))
    }
}

const SYNTAX: &str = "expected comma-separated parts: one of none, bimodal:<entries>, \
                      gshare:<entries>:<history bits>; optionally btb:<entries>, ras:<depth> \
                      (e.g. gshare:4096:12,btb:512,ras:16), or off";

impl FromStr for BpredConfig {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, SpecError> {
        let s = s.trim();
        if s == "off" {
            return Err(SpecError::Syntax(format!(
                "'off' means no predictor at all, which a BpredConfig cannot hold; {SYNTAX}"
            )));
        }
        let mut dir = None;
        let mut btb = None;
        let mut ras = None;
        for part in s.split(',') {
            let fields: Vec<&str> = part.trim().split(':').collect();
            let field = |i: usize, what: &str| parse_num(fields[i], what, u32::MAX.into());
            let (name, seen) = match fields[..] {
                ["none"] => ("direction", dir.replace(DirConfig::NotTaken).is_some()),
                ["bimodal", _] => {
                    let entries = field(1, "bimodal entries")? as u32;
                    (
                        "direction",
                        dir.replace(DirConfig::Bimodal { entries }).is_some(),
                    )
                }
                ["gshare", _, _] => {
                    let entries = field(1, "gshare entries")? as u32;
                    let history = parse_num(fields[2], "gshare history bits", 24)? as u8;
                    let d = DirConfig::Gshare { entries, history };
                    ("direction", dir.replace(d).is_some())
                }
                ["btb", _] => (
                    "btb",
                    btb.replace(field(1, "btb entries")? as u32).is_some(),
                ),
                ["ras", _] => ("ras", ras.replace(field(1, "ras depth")? as u32).is_some()),
                _ => {
                    return Err(SpecError::Syntax(format!(
                        "bad predictor part '{}': {SYNTAX}",
                        part.trim()
                    )))
                }
            };
            if seen {
                return Err(SpecError::Syntax(format!(
                    "'{s}' has two {name} parts: {SYNTAX}"
                )));
            }
        }
        let dir =
            dir.ok_or_else(|| SpecError::Syntax(format!("'{s}' has no direction part: {SYNTAX}")))?;
        BpredConfig::new(dir, btb, ras)
    }
}

/// The option syntax, e.g. `gshare:4096:12,btb:512,ras:16`.
impl fmt::Display for BpredConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.dir {
            DirConfig::NotTaken => write!(f, "none")?,
            DirConfig::Bimodal { entries } => write!(f, "bimodal:{entries}")?,
            DirConfig::Gshare { entries, history } => write!(f, "gshare:{entries}:{history}")?,
        }
        if let Some(n) = self.btb {
            write!(f, ",btb:{n}")?;
        }
        if let Some(n) = self.ras {
            write!(f, ",ras:{n}")?;
        }
        Ok(())
    }
}

/// What the predictor made of one control transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Direction and target were right, in time.
    Correct,
    /// Right, but the target of a direct transfer came from decode (BTB miss).
    Redirect,
    /// Wrong direction, or wrong/no target for an indirect transfer.
    Mispredict,
}

/// Counter value of a cold entry: weakly not-taken.
const COUNTER_INIT: u8 = 1;
/// Tag of an empty BTB entry (instruction addresses are even).
const BTB_EMPTY: u64 = u64::MAX;

/// Predictor state: flat arrays indexed by masks.
#[derive(Clone, Debug)]
pub(super) struct Bpred {
    /// 2-bit counters; empty for [`DirConfig::NotTaken`].
    counters: Vec<u8>,
    dir_mask: u64,
    history: u64,
    /// Zero for bimodal.
    hist_mask: u64,
    /// BTB entries, `[tag (full pc), target]`; empty without a BTB.
    btb: Vec<[u64; 2]>,
    btb_mask: u64,
    /// Circular RAS (empty without one): pushing onto a full stack overwrites the oldest entry.
    ras: Vec<u64>,
    /// Slot of the next push.
    ras_top: usize,
    /// Valid entries.
    ras_count: usize,
}

impl Bpred {
    pub(super) fn new(c: &BpredConfig) -> Bpred {
        let (entries, hist) = match c.dir {
            DirConfig::NotTaken => (0, 0),
            DirConfig::Bimodal { entries } => (entries as usize, 0),
            DirConfig::Gshare { entries, history } => (entries as usize, history),
        };
        let btb = c.btb.unwrap_or(0) as usize;
        Bpred {
            counters: vec![COUNTER_INIT; entries],
            dir_mask: (entries as u64).wrapping_sub(1),
            history: 0,
            hist_mask: (1u64 << hist) - 1,
            btb: vec![[BTB_EMPTY, 0]; btb],
            btb_mask: (btb as u64).wrapping_sub(1),
            ras: vec![0; c.ras.unwrap_or(0) as usize],
            ras_top: 0,
            ras_count: 0,
        }
    }

    pub(super) fn reset(&mut self) {
        self.counters.fill(COUNTER_INIT);
        self.history = 0;
        self.btb.fill([BTB_EMPTY, 0]);
        self.ras_top = 0;
        self.ras_count = 0;
    }

    #[inline]
    pub(super) fn branch(
        &mut self,
        pc: u64,
        kind: BranchKind,
        taken: bool,
        target: u64,
        fallthrough: u64,
    ) -> Outcome {
        match kind {
            BranchKind::Cond => {
                let predicted = self.direction(pc, taken);
                // A taken branch is installed in the BTB whatever was predicted.
                let btb_hit = taken && self.btb_hit_update(pc, target);
                if predicted != taken {
                    Outcome::Mispredict
                } else if taken && !btb_hit {
                    Outcome::Redirect
                } else {
                    Outcome::Correct
                }
            }
            BranchKind::DirectJump => self.direct(pc, target),
            BranchKind::DirectCall => {
                self.push(fallthrough);
                self.direct(pc, target)
            }
            BranchKind::IndirectJump => self.indirect(pc, target),
            BranchKind::IndirectCall => {
                self.push(fallthrough);
                self.indirect(pc, target)
            }
            BranchKind::Return => self.ret(pc, target),
            BranchKind::CoroutineSwap => {
                // Pop then push (unprivileged ISA, RAS hints: rd and rs1 both links, different).
                let o = self.ret(pc, target);
                self.push(fallthrough);
                o
            }
        }
    }

    /// Predicts the direction of a conditional branch, then trains the counter and the history.
    #[inline]
    fn direction(&mut self, pc: u64, taken: bool) -> bool {
        let i = (((pc >> 1) ^ self.history) & self.dir_mask) as usize;
        let Some(c) = self.counters.get_mut(i) else {
            return false; // `none`: static not-taken
        };
        let predicted = *c >= 2;
        *c = if taken {
            (*c + 1).min(3)
        } else {
            c.saturating_sub(1)
        };
        self.history = ((self.history << 1) | taken as u64) & self.hist_mask;
        predicted
    }

    /// Looks `pc` up in the BTB and installs `target`: true if it held `target` already.
    #[inline]
    fn btb_hit_update(&mut self, pc: u64, target: u64) -> bool {
        let Some(e) = self.btb.get_mut(((pc >> 1) & self.btb_mask) as usize) else {
            return false; // no BTB
        };
        let hit = *e == [pc, target];
        *e = [pc, target];
        hit
    }

    /// A taken transfer whose target decode computes.
    #[inline]
    fn direct(&mut self, pc: u64, target: u64) -> Outcome {
        if self.btb_hit_update(pc, target) {
            Outcome::Correct
        } else {
            Outcome::Redirect
        }
    }

    /// A transfer whose target only the BTB can predict.
    #[inline]
    fn indirect(&mut self, pc: u64, target: u64) -> Outcome {
        if self.btb_hit_update(pc, target) {
            Outcome::Correct
        } else {
            Outcome::Mispredict
        }
    }

    /// A return: predicted by the RAS top, or by the BTB when there is no RAS.
    #[inline]
    fn ret(&mut self, pc: u64, target: u64) -> Outcome {
        if self.ras.is_empty() {
            return self.indirect(pc, target);
        }
        if self.ras_count == 0 {
            return Outcome::Mispredict;
        }
        self.ras_top = if self.ras_top == 0 {
            self.ras.len() - 1
        } else {
            self.ras_top - 1
        };
        self.ras_count -= 1;
        if self.ras[self.ras_top] == target {
            Outcome::Correct
        } else {
            Outcome::Mispredict
        }
    }

    #[inline]
    fn push(&mut self, ret: u64) {
        let Some(slot) = self.ras.get_mut(self.ras_top) else {
            return; // no RAS
        };
        *slot = ret;
        self.ras_top += 1;
        if self.ras_top == self.ras.len() {
            self.ras_top = 0;
        }
        if self.ras_count < self.ras.len() {
            self.ras_count += 1;
        }
    }
}
