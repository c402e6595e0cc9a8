//! Exact execution counts from flow: how often each straight-line run of instructions executed
//! and how often each taken control transfer went from where to where. Ranges are made
//! canonical (maximal: a range whose last instruction did not transfer control, followed by
//! another with nothing but time or context between them, is joined to it), so every source of
//! the same execution gives the same counts however its decoder cut the ranges.

use crate::system::{Place, System};
use rvtrace_flow::walk::transfers;
use rvtrace_flow::{insn_len_at, FlowElement, FlowSink, SyncReason};
use rvtrace_image::Image;
use std::collections::{BTreeMap, HashMap};

/// Execution counts of one or more flows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Times each maximal range (first instruction, last instruction) executed.
    pub ranges: HashMap<(u64, u64), u64>,
    /// Times each taken transfer (last instruction of a range, which transferred control ->
    /// first of the next) happened, when nothing (a trap, a loss, a sync) came between the two
    /// ranges.
    pub branches: HashMap<(u64, u64), u64>,
    /// Instructions in all ranges.
    pub instructions: u64,
    /// Trace losses seen.
    pub losses: u64,
}

impl Counts {
    /// Adds the counts of another flow of the same program.
    pub fn merge(&mut self, o: &Counts) {
        for (k, v) in &o.ranges {
            *self.ranges.entry(*k).or_default() += v;
        }
        for (k, v) in &o.branches {
            *self.branches.entry(*k).or_default() += v;
        }
        self.instructions += o.instructions;
        self.losses += o.losses;
    }

    /// Times each instruction executed (expanding ranges with the program image), by address.
    /// Ranges that run outside the image stop there.
    pub fn per_address(&self, image: &Image) -> BTreeMap<u64, u64> {
        let mut m = BTreeMap::new();
        for (&(start, last), &n) in &self.ranges {
            let mut pc = start;
            loop {
                *m.entry(pc).or_default() += n;
                if pc == last {
                    break;
                }
                match insn_len_at(image, pc) {
                    Some(l) if pc.wrapping_add(l) <= last => pc = pc.wrapping_add(l),
                    _ => break,
                }
            }
        }
        m
    }
}

/// Collects [`Counts`] from flow elements.
pub struct Counter<'a> {
    image: std::marker::PhantomData<&'a Image>,
    // The open range (start, last, count), whether its last instruction transferred control,
    // and whether it ended right before the next element (the next range continues it, or a
    // transfer can be recorded).
    open: Option<(u64, u64, u64)>,
    transferred: bool,
    linked: bool,
    counts: Counts,
}

impl<'a> Counter<'a> {
    /// A counter for the program in `image` (the flow carries what it needs of the program:
    /// the image is not read).
    pub fn new(_image: &'a Image) -> Self {
        Counter {
            image: std::marker::PhantomData,
            open: None,
            transferred: false,
            linked: false,
            counts: Counts::default(),
        }
    }

    fn close(&mut self) {
        if let Some((s, l, _)) = self.open.take() {
            *self.counts.ranges.entry((s, l)).or_default() += 1;
        }
    }

    /// The flow leaves for another address space: the open range closes, and nothing links
    /// it to where the flow comes back.
    pub fn cut(&mut self) {
        self.close();
        self.linked = false;
    }

    /// The counts (closing the open range).
    pub fn finish(mut self) -> Counts {
        self.close();
        self.counts
    }
}

impl FlowSink for Counter<'_> {
    fn element(&mut self, e: &FlowElement) {
        match *e {
            FlowElement::Range {
                start,
                last,
                count,
                class,
                taken,
            } => {
                self.counts.instructions += count;
                let transferred = transfers(class, taken == Some(true));
                if let Some((s, l, n)) = self.open {
                    if self.linked {
                        if !self.transferred {
                            self.open = Some((s, last, n + count));
                            self.transferred = transferred;
                            return;
                        }
                        *self.counts.branches.entry((l, start)).or_default() += 1;
                    }
                }
                self.close();
                self.open = Some((start, last, count));
                self.transferred = transferred;
                self.linked = true;
            }
            // None of these is a step of the flow.
            FlowElement::Time { .. }
            | FlowElement::Context { .. }
            | FlowElement::Event { .. }
            | FlowElement::Ignored { .. } => {}
            FlowElement::Loss { .. } => {
                self.counts.losses += 1;
                self.close();
                self.linked = false;
            }
            // A periodic sync only restates where execution goes on.
            FlowElement::Sync {
                reason: SyncReason::Periodic | SyncReason::Other(_),
                ..
            } => {}
            FlowElement::Sync { .. } | FlowElement::Trap { .. } | FlowElement::End { .. } => {
                self.close();
                self.linked = false;
            }
        }
    }
}

/// [`Counter`]s of a program of several address spaces ([`System`]): the counts of each space
/// apart (the same address is different code in two of them), the flow followed from space to
/// space as its `Context` elements say.
pub struct SpaceCounter<'a> {
    place: Place<'a>,
    counters: Vec<Counter<'a>>,
}

impl<'a> SpaceCounter<'a> {
    /// Counters for each space of `system`.
    pub fn new(system: &'a System) -> Self {
        SpaceCounter {
            place: Place::start(system),
            counters: (0..system.len())
                .map(|i| Counter::new(system.image(i)))
                .collect(),
        }
    }

    /// The counts of each space, by index ([`System::image`]).
    pub fn finish(self) -> Vec<Counts> {
        self.counters.into_iter().map(Counter::finish).collect()
    }
}

impl FlowSink for SpaceCounter<'_> {
    fn element(&mut self, e: &FlowElement) {
        if let FlowElement::Context { privilege, context } = *e {
            let from = self.place.index;
            if self.place.report(privilege, context) {
                self.counters[from].cut();
            }
        }
        self.counters[self.place.index].element(e);
    }
}
