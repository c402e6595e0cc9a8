//! The run sampled in trace order ([`Profiler::with_timeline`](crate::Profiler::with_timeline)):
//! what a timeline view (the Firefox profile's, [`export::firefox`](crate::export::firefox))
//! shows, where the aggregated [`Profile`](crate::Profile) has only totals per call stack.
//!
//! A sample is taken every `period` instructions (instruction 0, `period`, `2 period`, ...) and
//! stands for the instructions from it to the next: its weight. The period starts at 1; when
//! there would be more than [`MAX_SAMPLES`] samples, every other one goes (its instructions
//! go to the one before) and the period doubles, so a run of any length keeps between half and
//! all of [`MAX_SAMPLES`] samples, evenly spread. The weights add up to the profile's totals:
//! instructions exactly, and time too, each sample's time being the time the profile attributes
//! from it to the next (the time between two `Time` elements spread evenly over the
//! instructions between them, as [`Profile`](crate::Profile) spreads it; none across a loss).

use crate::profile::Weight;
use std::collections::HashMap;

/// [`Sampler::frame`] id of no frame (below the outermost).
pub(crate) const NO_FRAMES: u32 = u32::MAX - 1;
/// A shadow-stack frame's frames below, not yet asked for.
pub(crate) const UNSET: u32 = u32::MAX;

/// Most samples a [`Timeline`] keeps.
pub const MAX_SAMPLES: usize = 100_000;

/// The run sampled in trace order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// Instructions from one sample to the next (the last period: it doubled as the run went
    /// on).
    pub period: u64,
    /// Whether the flow had time (`Time` elements): [`Sample::time`] is the trace's time.
    pub has_time: bool,
    /// The function names the stacks' frames name.
    pub names: Vec<String>,
    /// The call stacks of the samples as a table (as the Firefox profile's): a stack is its
    /// innermost frame and the stack it was called from, which comes before it in the table.
    pub stacks: Vec<TimelineStack>,
    /// The samples, in trace order.
    pub samples: Vec<Sample>,
}

/// One stack of a [`Timeline`]: a frame and the stack below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimelineStack {
    /// The stack it was called from (an index into [`Timeline::stacks`]), `None` for the
    /// outermost frame.
    pub prefix: Option<u32>,
    /// Its innermost frame.
    pub frame: TimelineFrame,
}

/// One frame of a [`Timeline`] stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimelineFrame {
    /// The function: an index into [`Timeline::names`].
    pub name: u32,
    /// Where it was: the sampled instruction (innermost frame), the call or trapped instruction
    /// (the frames it called from); a function and the functions inlined into it share it.
    /// `None` when the shadow stack did not see the frame entered (the trace started in it).
    pub addr: Option<u64>,
    /// 0 for a function, k for the k-th function inlined into it (DWARF inline frames).
    pub inline_depth: u32,
    /// Whether it is the innermost of the frames at its address (no function is inlined into
    /// it there): its position is the instruction's.
    pub innermost: bool,
}

/// One sample of a [`Timeline`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Instructions before the sampled one.
    pub index: u64,
    /// The trace's time at it (interpolated between the `Time` elements around it; before the
    /// first, or after a loss, the nearest time known), when the flow has time.
    pub time: Option<u64>,
    /// What it stands for: the instructions (and time) from it to the next sample.
    pub weight: Weight,
    /// Its call stack: an index into [`Timeline::stacks`] (`None`: no frame).
    pub stack: Option<u32>,
}

/// A sample while the run goes on.
pub(crate) struct Raw {
    /// Its instruction's number among the instructions attributed.
    pub(crate) at: u64,
    /// The call-tree node it was at.
    pub(crate) node: u32,
    /// The sampled instruction.
    pub(crate) pc: u64,
    /// The frames below (a [`Sampler::frames`] entry, or [`NO_FRAMES`]).
    pub(crate) below: u32,
    /// Trace time at it.
    time: u64,
    /// Time attributed before it.
    cum: u64,
}

/// Takes the samples of a [`Timeline`] as the profiler attributes instructions and time.
pub(crate) struct Sampler {
    period: u64,
    /// Instructions attributed so far.
    done: u64,
    /// The instruction the next sample is due at.
    next: u64,
    pub(crate) raw: Vec<Raw>,
    /// The frames below sampled stacks, each (the frames below it, call-tree node, address):
    /// a stack is kept once however often it is sampled.
    pub(crate) frames: Vec<(u32, u32, Option<u64>)>,
    frame_ids: HashMap<(u32, u32, Option<u64>), u32>,
    /// The last `Time` element while time runs (instruction number, time); `None` before the
    /// first and after a loss.
    mark: Option<(u64, u64)>,
    /// The last trace time seen.
    last_time: Option<u64>,
    /// Time attributed so far (the profile's total time).
    cum: u64,
    /// Samples from this instruction number on wait for the next `Time` element.
    resolved_to: u64,
}

impl Sampler {
    pub(crate) fn new() -> Self {
        Sampler {
            period: 1,
            done: 0,
            next: 0,
            raw: Vec::new(),
            frames: Vec::new(),
            frame_ids: HashMap::new(),
            mark: None,
            last_time: None,
            cum: 0,
            resolved_to: 0,
        }
    }

    /// Which of the next `n` instructions (counted from 0) a sample is due at.
    pub(crate) fn due(&self, n: u64) -> Option<u64> {
        (self.next < self.done + n).then(|| self.next - self.done)
    }

    /// The id of a frame at call-tree node `node` and address `addr` above the frames `below`.
    pub(crate) fn frame(&mut self, below: u32, node: u32, addr: Option<u64>) -> u32 {
        let n = self.frames.len() as u32;
        *self
            .frame_ids
            .entry((below, node, addr))
            .or_insert_with(|| {
                self.frames.push((below, node, addr));
                n
            })
    }

    /// Takes the sample due: instruction `pc` at `node`, above the frames `below`.
    pub(crate) fn take(&mut self, node: u32, pc: u64, below: u32) {
        self.raw.push(Raw {
            at: self.next,
            node,
            pc,
            below,
            time: 0,
            cum: 0,
        });
        self.next += self.period;
        if self.raw.len() > MAX_SAMPLES {
            let p = self.period * 2;
            self.raw.retain(|r| r.at % p == 0);
            self.period = p;
            self.next = self.next.div_ceil(p) * p;
        }
    }

    /// `n` more instructions were attributed.
    pub(crate) fn advance(&mut self, n: u64) {
        self.done += n;
    }

    /// The samples since the last `Time` element (or loss): their time and time before them,
    /// now that time `t` (or `None`: a loss, the end) follows.
    fn resolve(&mut self, t: Option<u64>) {
        let n = self.mark.map_or(0, |(m, _)| self.done - m);
        for r in self.raw.iter_mut().rev() {
            if r.at < self.resolved_to {
                break;
            }
            (r.time, r.cum) = match (self.mark, t) {
                (Some((m, t0)), Some(t)) if n > 0 => {
                    let part = |d: u64| (d as u128 * (r.at - m) as u128 / n as u128) as u64;
                    let d = t.saturating_sub(t0);
                    (t0 + part(d), self.cum + part(d))
                }
                _ => (self.last_time.or(t).unwrap_or(0), self.cum),
            };
        }
        self.resolved_to = self.done;
    }

    /// A `Time` element.
    pub(crate) fn time(&mut self, t: u64) {
        self.resolve(Some(t));
        if let Some((m, t0)) = self.mark {
            if self.done > m {
                self.cum += t.saturating_sub(t0);
            }
        }
        self.mark = Some((self.done, t));
        self.last_time = Some(t);
    }

    /// A loss or the end: time does not run across it.
    pub(crate) fn end_time(&mut self) {
        self.resolve(None);
        self.mark = None;
    }

    /// The samples, in order: (raw sample, its time if `has_time`, its weight).
    pub(crate) fn samples(&self) -> impl Iterator<Item = (&Raw, Weight)> + '_ {
        // A sample still waiting for time (no `End` yet) has the last time known.
        let cum = |r: &Raw| {
            if r.at < self.resolved_to {
                r.cum
            } else {
                self.cum
            }
        };
        self.raw.iter().enumerate().map(move |(k, r)| {
            let (at, c) = match self.raw.get(k + 1) {
                Some(next) => (next.at, cum(next)),
                None => (self.done, self.cum),
            };
            let w = Weight {
                insns: at - r.at,
                time: c - cum(r),
            };
            (r, w)
        })
    }

    /// A sample's trace time.
    pub(crate) fn time_of(&self, r: &Raw) -> u64 {
        if r.at < self.resolved_to {
            r.time
        } else {
            self.last_time.unwrap_or(0)
        }
    }

    /// The period now.
    pub(crate) fn period(&self) -> u64 {
        self.period
    }
}
