//! Profiles from flow: instructions (and time, where the flow has it) per call stack, built with
//! a shadow call stack that follows calls, returns, tail calls, `longjmp` and traps; the flat
//! profile, call graph and folded stacks derived from it.
//!
//! How each instruction range is entered decides what happens to the stack; the class of the
//! previous range's last instruction (the range's `class`: E-Trace `ingressPort.adoc` jump
//! classes) tells how:
//!
//! | previous last instruction | stack |
//! |---|---|
//! | call (`jal`/`jalr` linking x1/x5, `c.jal`, `c.jalr`, `cm.jalt`) | push the callee |
//! | return (`jalr` through x1/x5, `cm.popret`) | pop to the frame whose return address is the target; else to the innermost frame of the target's function (`longjmp`); else replace the top |
//! | trap return (`mret`, `sret`, ...) | pop to the innermost trap frame, and below it |
//! | any other jump or taken branch to another function | the entry of a function: a tail call (replace the top); elsewhere: unwind to a frame of that function if there is one, else replace the top |
//! | sequential (the range goes on, or falls through into the next function) | nothing (falling into another function replaces the top) |
//!
//! A `Trap` element first makes the transition to its `epc` (a trap taken before the next
//! instruction retired: inferred from the program and the stack when the flow lacks it, else
//! replayed at the trap return), then pushes a trap frame for the handler (none for a trap
//! serviced in place, such as semihosting). Inside a range no instruction moves the stack: a
//! call, return or trap return always ends one, even when its target is the next instruction
//! (the flow's rule). A `Loss` or `End` empties the stack (the next `Sync` starts a new one). `crates/analysis/README.md` explains why each rule is there.

use crate::symbols::{Symbols, UNKNOWN};
use crate::system::{Place, System};
use crate::timeline::{Sampler, Timeline, TimelineFrame, TimelineStack, NO_FRAMES, UNSET};
use rvtrace_flow::{insn_len_at, EventKind, FlowElement, FlowSink, SyncReason};
use rvtrace_image::Image;
use rvtrace_isa::{classify, CfClass, IsaConfig};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

/// Most frames the shadow stack holds; a call beyond it replaces the top frame instead (and is
/// counted in [`Profile::truncated`]), so that code that never returns cannot grow it forever.
pub const MAX_DEPTH: usize = 4096;

/// Instructions and time of one call stack (self, not including callees).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Weight {
    /// Instructions retired.
    pub insns: u64,
    /// Time units (the flow's `Time` elements), when the flow has time.
    pub time: u64,
}

impl Weight {
    fn add(&mut self, o: Weight) {
        self.insns += o.insns;
        self.time += o.time;
    }
}

/// How one function reached another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Calls {
    /// Calls (a call instruction).
    pub calls: u64,
    /// Tail calls (a jump to the entry of another function).
    pub tail_calls: u64,
    /// Traps taken in the caller whose handler is the callee.
    pub traps: u64,
}

impl Calls {
    fn add(&mut self, o: Calls) {
        self.calls += o.calls;
        self.tail_calls += o.tail_calls;
        self.traps += o.traps;
    }
}

/// A profile: self weight per call stack (outermost function first), call-graph edges, totals.
/// Function names key everything, so profiles of the same program merge by addition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Self weight per call stack.
    pub stacks: BTreeMap<Vec<String>, Weight>,
    /// Call-graph edges: (caller, callee).
    pub calls: BTreeMap<(String, String), Calls>,
    /// Whether the flow had time (`Time` elements).
    pub has_time: bool,
    /// Trace losses seen.
    pub losses: u64,
    /// Calls that did not push a frame because the stack was [`MAX_DEPTH`] deep.
    pub truncated: u64,
    /// PC samples the trace carries ([`rvtrace_flow::EventKind::PcSample`], SiFive's In-Circuit
    /// Trace), per function: a sampled profile beside the flow's exact one.
    pub samples: BTreeMap<String, u64>,
}

/// One row of the flat profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlatRow {
    /// Function name.
    pub name: String,
    /// Weight in the function itself.
    pub self_: Weight,
    /// Weight in the function and everything it called (each stack counted once however often
    /// the function is on it).
    pub inclusive: Weight,
    /// Times it was called (calls and tail calls, not traps).
    pub calls: u64,
}

impl Profile {
    /// Adds `other` (a profile of the same program) to this one: the profile of both flows.
    pub fn merge(&mut self, other: &Profile) {
        for (k, w) in &other.stacks {
            self.stacks.entry(k.clone()).or_default().add(*w);
        }
        for (k, c) in &other.calls {
            self.calls.entry(k.clone()).or_default().add(*c);
        }
        self.has_time |= other.has_time;
        self.losses += other.losses;
        self.truncated += other.truncated;
        for (k, n) in &other.samples {
            *self.samples.entry(k.clone()).or_default() += n;
        }
    }

    /// This profile under a frame of its own, outermost (a process's name, as `perf script`
    /// folds a sample's command first): every stack begins with `root`.
    pub fn rooted(&self, root: &str) -> Profile {
        let mut p = self.clone();
        p.stacks = std::mem::take(&mut p.stacks)
            .into_iter()
            .map(|(mut stack, w)| {
                stack.insert(0, root.to_string());
                (stack, w)
            })
            .collect();
        p
    }

    /// Total weight.
    pub fn total(&self) -> Weight {
        let mut t = Weight::default();
        for w in self.stacks.values() {
            t.add(*w);
        }
        t
    }

    /// The flat profile, by self instructions (most first), then name.
    pub fn flat(&self) -> Vec<FlatRow> {
        let mut rows: BTreeMap<&str, FlatRow> = BTreeMap::new();
        for (stack, w) in &self.stacks {
            if let Some(leaf) = stack.last() {
                rows.entry(leaf).or_default().self_.add(*w);
            }
            let mut seen: Vec<&str> = Vec::with_capacity(stack.len());
            for f in stack {
                if !seen.contains(&f.as_str()) {
                    seen.push(f);
                    rows.entry(f).or_default().inclusive.add(*w);
                }
            }
        }
        for ((_, callee), c) in &self.calls {
            rows.entry(callee).or_default().calls += c.calls + c.tail_calls;
        }
        let mut v: Vec<FlatRow> = rows
            .into_iter()
            .map(|(name, r)| FlatRow {
                name: name.to_string(),
                ..r
            })
            .collect();
        v.sort_by(|a, b| {
            b.self_
                .insns
                .cmp(&a.self_.insns)
                .then(b.inclusive.insns.cmp(&a.inclusive.insns))
                .then(a.name.cmp(&b.name))
        });
        v
    }

    /// Folded stacks (`outer;inner;leaf count`, one line per stack, Brendan Gregg's
    /// `stackcollapse` format that `flamegraph.pl` and inferno read), weighted by instructions
    /// or by time. Stacks of weight 0 are left out.
    pub fn folded(&self, by_time: bool) -> String {
        let mut s = String::new();
        for (stack, w) in &self.stacks {
            let n = if by_time { w.time } else { w.insns };
            if n == 0 || stack.is_empty() {
                continue;
            }
            let _ = writeln!(s, "{} {n}", stack.join(";"));
        }
        s
    }

    /// The flat profile and the call graph as text for people.
    pub fn report(&self, top: usize) -> String {
        let total = self.total();
        let pct = |n: u64, t: u64| 100.0 * n as f64 / t.max(1) as f64;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "flat profile: {} instructions{}",
            total.insns,
            if self.has_time {
                format!(", {} time units", total.time)
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            s,
            "{:>12} {:>6} {:>12} {:>6} {:>10}{}  function",
            "self",
            "%",
            "inclusive",
            "%",
            "calls",
            if self.has_time {
                format!(" {:>12} {:>12}", "self time", "incl. time")
            } else {
                String::new()
            }
        );
        for r in self.flat().iter().take(top) {
            let _ = writeln!(
                s,
                "{:>12} {:>5.1}% {:>12} {:>5.1}% {:>10}{}  {}",
                r.self_.insns,
                pct(r.self_.insns, total.insns),
                r.inclusive.insns,
                pct(r.inclusive.insns, total.insns),
                r.calls,
                if self.has_time {
                    format!(" {:>12} {:>12}", r.self_.time, r.inclusive.time)
                } else {
                    String::new()
                },
                r.name
            );
        }
        let _ = writeln!(
            s,
            "\ncall graph (caller -> callee: calls, tail calls, traps):"
        );
        let mut edges: Vec<_> = self.calls.iter().collect();
        edges.sort_by(|a, b| {
            let n = |c: &Calls| c.calls + c.tail_calls + c.traps;
            n(b.1).cmp(&n(a.1)).then(a.0.cmp(b.0))
        });
        for ((from, to), c) in edges.iter().take(top.saturating_mul(4)) {
            let _ = writeln!(
                s,
                "{:>12} {:>6} {:>6}  {from} -> {to}",
                c.calls, c.tail_calls, c.traps
            );
        }
        if self.losses > 0 {
            let _ = writeln!(
                s,
                "\n{} trace losses: stacks restart after each",
                self.losses
            );
        }
        if self.truncated > 0 {
            let _ = writeln!(
                s,
                "{} calls beyond {MAX_DEPTH} frames replaced the top frame",
                self.truncated
            );
        }
        if !self.samples.is_empty() {
            let n: u64 = self.samples.values().sum();
            let _ = writeln!(s, "\nPC samples in the trace: {n}");
            let mut rows: Vec<_> = self.samples.iter().collect();
            rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            for (f, c) in rows.iter().take(top) {
                let _ = writeln!(s, "{c:>12} {:>5.1}%  {f}", pct(**c, n));
            }
        }
        s
    }
}

/// What the shadow stack did ([`StackEvent`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StackOp {
    /// A call pushed the callee (counted in [`Calls::calls`] when there was a caller).
    Call,
    /// A jump to another function's entry replaced the top frame ([`Calls::tail_calls`]).
    TailCall,
    /// A trap pushed its handler ([`Calls::traps`] when there was a caller).
    Trap,
    /// A frame was popped: a return, a `longjmp` past it, or an unwind into a frame below.
    Return,
    /// A trap return popped the trap's frame.
    TrapReturn,
}

/// One move of the shadow stack, for a call trace ([`Profiler::with_stack_events`]): the very
/// transitions the profile's call graph counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackEvent {
    /// What happened.
    pub op: StackOp,
    /// How many instructions had retired when it happened (the transfer is the last of them;
    /// the target runs next).
    pub index: u64,
    /// The function left (`None` when the stack was empty), an id of the profiler's
    /// ([`Profiler::function_name`]).
    pub from: Option<u32>,
    /// The function entered: the callee, or the function returned to (`None`: none below).
    pub to: Option<u32>,
    /// Depth of the frame concerned: the pushed frame for a call, tail call or trap, the popped
    /// one for a return (1 = outermost).
    pub depth: usize,
}

/// A node of the call tree: a function called from its parent's path, at a position in it
/// with these inlined functions around ([`Inlines`]; 0 when none or not asked for).
struct Node {
    parent: u32,
    func: u32,
    inl: u32,
    w: Weight,
}

/// A range's instructions by chain of inlined functions: (chain, instructions), in order.
type Pieces = Arc<[(u32, u64)]>;

/// The inlined functions around each instruction (DWARF inline information,
/// [`Symbols::frames_at`]), as chains of names interned once.
#[derive(Default)]
struct Inlines {
    /// Names of inlined functions; name `k` is function name id `INLINE_IDS + k`.
    names: Vec<String>,
    name_ids: HashMap<String, u32>,
    /// Chains of inlined functions (name ids, outermost first); chain 0 is empty.
    chains: Vec<Vec<u32>>,
    chain_ids: HashMap<Vec<u32>, u32>,
    /// The chain of each address seen (by space).
    at: HashMap<(usize, u64), u32>,
    /// The chains of each range seen (space, `start`, `count`): (chain, instructions) in order.
    ranges: HashMap<(usize, u64, u64), Pieces>,
}

/// The first name id of an inlined function ([`Inlines::names`]); the ids below are
/// functions' ([`Profiler::function_name`]).
const INLINE_IDS: u32 = 1 << 31;

/// A function as the profiler knows it: of one space (its own unknown function for addresses
/// in none), so that functions of two processes at the same addresses stay apart.
#[derive(Clone, Copy)]
struct Func<'a> {
    start: u64,
    end: u64,
    name: &'a str,
    /// The space's index ([`System::image`]).
    space: u32,
    /// The space's pseudo-function for addresses in no function.
    unknown: bool,
}

#[derive(Clone, Copy)]
struct Frame {
    node: u32,
    /// The return address a `ret` to the caller goes to.
    ret: Option<u64>,
    /// Where the frame below was when this one was entered (the call instruction, the trap's
    /// `epc`): that frame's address in a timeline's stacks.
    site: Option<u64>,
    /// For a timeline: the frames below this one ([`Sampler::frame`]), once a sample asked.
    below: u32,
    /// Pushed by a trap.
    trap: bool,
    /// For a trap frame: the last instruction before the trap (and its class), when the trap's `epc` was not
    /// known (so the transition it made was not applied): replayed at the trap return.
    resume: Option<Resume>,
}

/// The last instruction before a trap and its class (the transition a trap cut short).
type Resume = (u64, CfClass);

const ROOT: u32 = 0;

/// Builds a [`Profile`] from flow elements ([`FlowSink`]).
pub struct Profiler<'a> {
    /// The space the flow is in: its code and symbols.
    place: Place<'a>,
    /// Every function met, by id.
    funcs: Vec<Func<'a>>,
    /// Whether any space's symbols have line tables.
    lines: bool,
    /// Per space: the id of each of its symbols' functions (their number: the unknown one),
    /// `u32::MAX` until met.
    ids: Vec<Vec<u32>>,
    isa: IsaConfig,
    nodes: Vec<Node>,
    children: HashMap<(u32, u32, u32), u32>,
    stack: Vec<Frame>,
    prev_last: Option<u64>,
    /// The class of the instruction at `prev_last`.
    prev_class: CfClass,
    /// For a branch at `prev_last`: whether it was taken, if the flow says.
    prev_taken: Option<bool>,
    /// A trap was taken (at this `epc`, if known; the last instruction before it if the `epc`
    /// was not known): the next range is its handler.
    pending_trap: Option<(Option<u64>, Option<Resume>)>,
    /// Call-graph edges: (caller, callee), the caller a name id ([`Profiler::name`]: the
    /// innermost inlined function at the call when inlines are shown).
    edges: HashMap<(u32, u32), Calls>,
    /// Inlined functions as frames ([`Profiler::with_inlines`]).
    inlines: Option<Inlines>,
    // Time: instructions per node since the last Time element.
    last_time: Option<u64>,
    since: Vec<(u32, u64)>,
    has_time: bool,
    losses: u64,
    truncated: u64,
    /// Stack moves not yet taken by [`Profiler::drain_stack_events`], when asked for.
    events: Option<Vec<StackEvent>>,
    /// Instructions seen so far.
    retired: u64,
    /// Instructions retired before the transfer being applied now.
    at: u64,
    /// The run sampled for a timeline ([`Profiler::with_timeline`]).
    sampler: Option<Sampler>,
    /// PC samples per function id.
    samples: HashMap<u32, u64>,
}

impl<'a> Profiler<'a> {
    /// A profiler for the program in `image` with symbols `syms`.
    pub fn new(image: &'a Image, syms: &'a Symbols, isa: IsaConfig) -> Self {
        Self::at(Place::one(image, syms), syms.has_lines(), isa)
    }

    /// A profiler for a program of several address spaces ([`System`]): each instruction is
    /// named with the symbols of the space the flow is in, and functions of different spaces
    /// are different functions ([`Profiler::profiles_by_space`] splits the profile by space).
    pub fn in_system(system: &'a System, isa: IsaConfig) -> Self {
        let lines = (0..system.len()).any(|i| system.syms(i).has_lines());
        Self::at(Place::start(system), lines, isa)
    }

    fn at(place: Place<'a>, lines: bool, isa: IsaConfig) -> Self {
        Profiler {
            place,
            funcs: Vec::new(),
            lines,
            ids: Vec::new(),
            isa,
            nodes: vec![Node {
                parent: ROOT,
                func: u32::MAX,
                inl: 0,
                w: Weight::default(),
            }],
            inlines: None,
            children: HashMap::new(),
            stack: Vec::new(),
            prev_last: None,
            prev_class: CfClass::None,
            prev_taken: None,
            pending_trap: None,
            edges: HashMap::new(),
            last_time: None,
            since: Vec::new(),
            has_time: false,
            losses: 0,
            truncated: 0,
            events: None,
            retired: 0,
            at: 0,
            sampler: None,
            samples: HashMap::new(),
        }
    }

    /// Also sample the run in trace order, for a timeline ([`Profiler::timeline`]; the
    /// [`timeline`](crate::timeline) module says how).
    pub fn with_timeline(mut self) -> Self {
        self.sampler = Some(Sampler::new());
        self
    }

    /// Samples due among the `n` instructions at `node` that begin `offset` instructions after
    /// `start`.
    fn sample(&mut self, node: u32, n: u64, start: u64, offset: u64) {
        while let Some(j) = self.sampler.as_ref().and_then(|s| s.due(n)) {
            let mut pc = start;
            for _ in 0..offset + j {
                match insn_len_at(self.place.image, pc) {
                    Some(l) => pc = pc.wrapping_add(l),
                    None => break,
                }
            }
            let below = self.frames_below();
            if let Some(s) = self.sampler.as_mut() {
                s.take(node, pc, below);
            }
        }
        if let Some(s) = self.sampler.as_mut() {
            s.advance(n);
        }
    }

    /// The [`Sampler::frame`] id of the frames below the top one. Frames keep theirs (those
    /// below a frame do not change while it lives), so only the frames pushed since the last
    /// sample are looked up.
    fn frames_below(&mut self) -> u32 {
        let Some(sampler) = self.sampler.as_mut() else {
            return NO_FRAMES;
        };
        let from = self
            .stack
            .iter()
            .rposition(|f| f.below != UNSET)
            .map_or(0, |k| k + 1);
        for k in from..self.stack.len() {
            // A frame's address is where the frame above it was entered from.
            self.stack[k].below = match k.checked_sub(1) {
                None => NO_FRAMES,
                Some(b) => {
                    let f = self.stack[b];
                    sampler.frame(f.below, f.node, self.stack[k].site)
                }
            };
        }
        self.stack.last().map_or(NO_FRAMES, |f| f.below)
    }

    /// The run sampled in trace order, if asked for ([`Profiler::with_timeline`]): the stacks
    /// named as in [`Profile::stacks`], each frame with its address.
    pub fn timeline(&self) -> Option<Timeline> {
        let sampler = self.sampler.as_ref()?;
        let mut t = Timeline {
            period: sampler.period(),
            has_time: self.has_time,
            ..Timeline::default()
        };
        let mut names: HashMap<u32, u32> = HashMap::new();
        let mut stacks: HashMap<TimelineStack, u32> = HashMap::new();
        // Stack of a frame at `node` and `addr` above `prefix`: the function, then the
        // functions inlined into it there.
        let mut push = |t: &mut Timeline, mut prefix: Option<u32>, node: u32, addr| {
            let node = &self.nodes[node as usize];
            let chain = self.inlines.as_ref().map(|x| &x.chains[node.inl as usize]);
            let ids: Vec<u32> = std::iter::once(node.func)
                .chain(chain.into_iter().flatten().copied())
                .collect();
            for (depth, &id) in ids.iter().enumerate() {
                let n = names.len() as u32;
                let name = *names.entry(id).or_insert_with(|| {
                    t.names.push(self.name(id).to_string());
                    n
                });
                let st = TimelineStack {
                    prefix,
                    frame: TimelineFrame {
                        name,
                        addr,
                        inline_depth: depth as u32,
                        innermost: depth + 1 == ids.len(),
                    },
                };
                let n = stacks.len() as u32;
                prefix = Some(*stacks.entry(st).or_insert_with(|| {
                    t.stacks.push(st);
                    n
                }));
            }
            prefix
        };
        // The sampler's frames come after the frames below them.
        let mut below: Vec<Option<u32>> = Vec::with_capacity(sampler.frames.len());
        for &(b, node, addr) in &sampler.frames {
            let prefix = if b == NO_FRAMES {
                None
            } else {
                below[b as usize]
            };
            below.push(push(&mut t, prefix, node, addr));
        }
        for (r, weight) in sampler.samples() {
            let prefix = if r.below == NO_FRAMES {
                None
            } else {
                below[r.below as usize]
            };
            let stack = (r.node != ROOT).then(|| push(&mut t, prefix, r.node, Some(r.pc)));
            t.samples.push(crate::timeline::Sample {
                index: r.at,
                time: self.has_time.then(|| sampler.time_of(r)),
                weight,
                stack: stack.flatten(),
            });
        }
        Some(t)
    }

    /// Inlined functions as frames (as `perf report --inline` shows them): below each function
    /// the functions inlined at the instruction (for the functions that called others: at the
    /// call), from the DWARF inline information. Without DWARF nothing changes.
    pub fn with_inlines(mut self) -> Self {
        if self.lines {
            self.inlines = Some(Inlines {
                chains: vec![Vec::new()],
                ..Inlines::default()
            });
        }
        self
    }

    /// The chains of inlined functions over the `count` instructions from `start`: (chain,
    /// instructions), in order.
    fn inline_pieces(&mut self, start: u64, count: u64) -> Pieces {
        let (image, syms, space) = (self.place.image, self.place.syms, self.place.index);
        let base = INLINE_IDS;
        let Some(inl) = self.inlines.as_mut() else {
            return Arc::new([(0, count)]);
        };
        if let Some(v) = inl.ranges.get(&(space, start, count)) {
            return Arc::clone(v);
        }
        let mut v: Vec<(u32, u64)> = Vec::new();
        let mut pc = start;
        for k in 0..count {
            let chain = match inl.at.get(&(space, pc)) {
                Some(&c) => c,
                None => {
                    // addr2line's frames are innermost first and end with the function itself.
                    let frames = syms.frames_at(pc);
                    let names: Vec<u32> = frames
                        .iter()
                        .rev()
                        .skip(1)
                        .map(|f| {
                            let n = inl.names.len() as u32;
                            *inl.name_ids.entry(f.function.clone()).or_insert_with(|| {
                                inl.names.push(f.function.clone());
                                base + n
                            })
                        })
                        .collect();
                    let n = inl.chains.len() as u32;
                    let c = *inl.chain_ids.entry(names.clone()).or_insert_with(|| {
                        inl.chains.push(names);
                        n
                    });
                    inl.at.insert((space, pc), c);
                    c
                }
            };
            match v.last_mut() {
                Some((c, n)) if *c == chain => *n += 1,
                _ => v.push((chain, 1)),
            }
            match insn_len_at(image, pc) {
                Some(l) => pc = pc.wrapping_add(l),
                None => {
                    // Not in the image: the rest goes with the last chain.
                    if let Some(last) = v.last_mut() {
                        last.1 += count - k - 1;
                    }
                    break;
                }
            }
        }
        let v: Pieces = v.into();
        inl.ranges.insert((space, start, count), Arc::clone(&v));
        v
    }

    /// The name id of the frame a call from node `node` comes from: the innermost inlined
    /// function there, else its function.
    fn caller_name(&self, node: u32) -> u32 {
        let n = &self.nodes[node as usize];
        self.inlines
            .as_ref()
            .and_then(|i| i.chains.get(n.inl as usize)?.last().copied())
            .unwrap_or(n.func)
    }

    /// The name of a name id: a function's ([`Profiler::function_name`]) or an inlined
    /// function's.
    fn name(&self, id: u32) -> &str {
        match id.checked_sub(INLINE_IDS) {
            None => self.function_name(id),
            Some(k) => self
                .inlines
                .as_ref()
                .and_then(|i| i.names.get(k as usize))
                .map_or(UNKNOWN, |s| s.as_str()),
        }
    }

    /// Also record every move of the shadow stack ([`StackEvent`]), to be taken with
    /// [`drain_stack_events`](Profiler::drain_stack_events) after each element.
    pub fn with_stack_events(mut self) -> Self {
        self.events = Some(Vec::new());
        self
    }

    /// Moves the stack events recorded since the last call to the end of `out`.
    pub fn drain_stack_events(&mut self, out: &mut Vec<StackEvent>) {
        if let Some(ev) = self.events.as_mut() {
            out.append(ev);
        }
    }

    /// The program this profiler reads instructions from (the code of the space the flow is
    /// in).
    pub fn image(&self) -> &'a Image {
        self.place.image
    }

    /// The space the flow is in ([`System::image`]; 0 for a program of one space).
    pub fn space(&self) -> usize {
        self.place.index
    }

    /// The name of function `f` of a [`StackEvent`].
    pub fn function_name(&self, f: u32) -> &'a str {
        self.funcs.get(f as usize).map_or(UNKNOWN, |x| x.name)
    }

    /// The space of function `f` of a [`StackEvent`] ([`System::image`]).
    pub fn function_space(&self, f: u32) -> usize {
        self.funcs.get(f as usize).map_or(0, |x| x.space as usize)
    }

    /// The id of the function of the space the flow is in at index `local` of its symbols'
    /// functions (their number: the space's unknown function), given the first time it is met.
    #[cold]
    fn intern(&mut self, local: usize) -> u32 {
        let space = self.place.index;
        let functions = self.place.syms.functions();
        if self.ids.len() <= space {
            self.ids.resize(space + 1, Vec::new());
        }
        let ids = &mut self.ids[space];
        if ids.len() <= local {
            ids.resize(functions.len() + 1, u32::MAX);
        }
        if ids[local] == u32::MAX {
            ids[local] = self.funcs.len() as u32;
            self.funcs.push(match functions.get(local) {
                Some(f) => Func {
                    start: f.start,
                    end: f.end,
                    name: f.name.as_str(),
                    space: space as u32,
                    unknown: false,
                },
                None => Func {
                    start: 0,
                    end: 0,
                    name: UNKNOWN,
                    space: space as u32,
                    unknown: true,
                },
            });
        }
        ids[local]
    }

    fn event(&mut self, op: StackOp, from: Option<u32>, to: Option<u32>, depth: usize) {
        let index = self.at;
        if let Some(ev) = self.events.as_mut() {
            ev.push(StackEvent {
                op,
                index,
                from,
                to,
                depth,
            });
        }
    }

    /// Pops the frames above `len`, recording each as a return (the frame at `trap`, if any,
    /// as a trap return).
    fn pop_to(&mut self, len: usize, trap: Option<usize>) {
        if self.events.is_some() {
            for d in (len..self.stack.len()).rev() {
                let from = self.nodes[self.stack[d].node as usize].func;
                let to = d
                    .checked_sub(1)
                    .map(|b| self.nodes[self.stack[b].node as usize].func);
                let op = if trap == Some(d) {
                    StackOp::TrapReturn
                } else {
                    StackOp::Return
                };
                self.event(op, Some(from), to, d + 1);
            }
        }
        self.stack.truncate(len);
    }

    fn func_of(&mut self, addr: u64) -> u32 {
        // Most ranges start in the function on top of the stack (a loop, a jump in it): no
        // search then.
        if let Some(f) = self.top_func() {
            if let Some(fun) = self.funcs.get(f as usize) {
                if fun.start <= addr && addr < fun.end && fun.space as usize == self.place.index {
                    return f;
                }
            }
        }
        let syms = self.place.syms;
        let local = syms.function_index(addr).unwrap_or(syms.functions().len());
        match self.ids.get(self.place.index).and_then(|v| v.get(local)) {
            Some(&id) if id != u32::MAX => id,
            _ => self.intern(local),
        }
    }

    fn child(&mut self, parent: u32, func: u32) -> u32 {
        self.child_at(parent, func, 0)
    }

    fn child_at(&mut self, parent: u32, func: u32, inl: u32) -> u32 {
        let n = self.nodes.len() as u32;
        *self.children.entry((parent, func, inl)).or_insert_with(|| {
            self.nodes.push(Node {
                parent,
                func,
                inl,
                w: Weight::default(),
            });
            n
        })
    }

    fn top_func(&self) -> Option<u32> {
        self.stack.last().map(|f| self.nodes[f.node as usize].func)
    }

    fn push(&mut self, func: u32, ret: Option<u64>, site: Option<u64>, trap: bool) {
        self.push_frame(func, ret, site, trap, None);
    }

    fn push_frame(
        &mut self,
        func: u32,
        ret: Option<u64>,
        site: Option<u64>,
        trap: bool,
        resume: Option<Resume>,
    ) {
        let parent = self.stack.last().map_or(ROOT, |f| f.node);
        let caller = self.top_func();
        if let Some(top) = self.stack.last() {
            let e = self
                .edges
                .entry((self.caller_name(top.node), func))
                .or_default();
            if trap {
                e.traps += 1;
            } else {
                e.calls += 1;
            }
        }
        let op = if trap { StackOp::Trap } else { StackOp::Call };
        let depth = (self.stack.len() + 1).min(MAX_DEPTH);
        self.event(op, caller, Some(func), depth);
        if self.stack.len() >= MAX_DEPTH {
            self.truncated += 1;
            self.replace(func);
            return;
        }
        let node = self.child(parent, func);
        self.stack.push(Frame {
            node,
            ret,
            site,
            below: UNSET,
            trap,
            resume,
        });
    }

    /// The top frame now runs `func` (a tail call, a fall-through, an unknown return).
    fn replace(&mut self, func: u32) {
        match self.stack.pop() {
            Some(top) => {
                let parent = self.nodes[top.node as usize].parent;
                let node = self.child(parent, func);
                self.stack.push(Frame { node, ..top });
            }
            None => self.push(func, None, None, false),
        }
    }

    /// After popping to some frame: make sure the top runs `func`.
    fn settle(&mut self, func: u32) {
        if self.top_func() != Some(func) {
            self.replace(func);
        }
    }

    fn ret(&mut self, target: u64, func: u32) {
        if let Some(i) = self.stack.iter().rposition(|f| f.ret == Some(target)) {
            self.pop_to(i, None);
        } else if let Some(i) = self
            .stack
            .iter()
            .rposition(|f| self.nodes[f.node as usize].func == func)
        {
            // longjmp: back into a frame deeper in the stack.
            self.pop_to(i + 1, None);
        } else if self.stack.len() > 1 {
            self.pop_to(self.stack.len() - 1, None);
        }
        self.settle(func);
    }

    fn trap_ret(&mut self, target: u64, func: u32) {
        if let Some(i) = self.stack.iter().rposition(|f| f.trap) {
            let resume = self.stack[i].resume;
            self.pop_to(i, Some(i));
            if let Some((pl, class)) = resume.filter(|_| !self.stack.is_empty()) {
                // Where the interrupted flow was going: the transition the trap cut short.
                self.transition(pl, class, target, func);
                return;
            }
        }
        self.settle(func);
    }

    fn jump(&mut self, target: u64, func: u32) {
        if self.top_func() == Some(func) {
            return;
        }
        let syms = self.place.syms;
        let entry = syms
            .function_index(target)
            .map(|i| syms.functions()[i].start)
            == Some(target);
        if entry {
            let caller = self.top_func();
            if let Some(top) = self.stack.last() {
                let from = self.caller_name(top.node);
                self.edges.entry((from, func)).or_default().tail_calls += 1;
            }
            self.event(
                StackOp::TailCall,
                caller,
                Some(func),
                self.stack.len().max(1),
            );
            self.replace(func);
        } else if let Some(i) = self
            .stack
            .iter()
            .rposition(|f| self.nodes[f.node as usize].func == func)
        {
            self.pop_to(i + 1, None);
        } else {
            self.replace(func);
        }
    }

    /// How the range starting at `start` was entered.
    fn enter(&mut self, start: u64) {
        let func = self.func_of(start);
        if let Some((epc, resume)) = self.pending_trap.take() {
            // A trap serviced where it was taken (semihosting, an SBI the model implements)
            // goes on at or after its epc: no handler ran.
            let in_place = epc.is_some_and(|e| {
                start == e
                    || Some(start) == insn_len_at(self.place.image, e).map(|l| e.wrapping_add(l))
            });
            if !in_place || self.stack.is_empty() {
                let site = epc.or(resume.map(|r| r.0));
                self.push_frame(func, None, site, true, resume);
                return;
            }
            self.settle(func);
            return;
        }
        if self.stack.is_empty() {
            self.push(func, None, None, false);
            return;
        }
        let Some(pl) = self.prev_last else {
            self.settle(func);
            return;
        };
        self.transition(pl, self.prev_class, start, func);
    }

    /// Where execution goes after the instruction at `pl` when that follows from the program and
    /// the shadow stack: the next instruction (no transfer, or a branch not known to be taken),
    /// a static target (a jump, a taken branch: it may lead into another function), or a return
    /// to the top frame's return address.
    fn next_after(&self, pl: u64) -> Option<u64> {
        let fall = pl.wrapping_add(insn_len_at(self.place.image, pl)?);
        match self.prev_class {
            CfClass::None => Some(fall),
            CfClass::Branch if self.prev_taken != Some(true) => Some(fall),
            CfClass::Return | CfClass::PopRet => self.stack.last()?.ret,
            // The static target, if the jump has one.
            _ => classify(&self.isa, self.place.image.fetch(pl)?).target_addr(pl, self.isa.xlen),
        }
    }

    /// From the instruction at `pl`, of class `class`, to `start` (in `func`): what the stack
    /// does.
    fn transition(&mut self, pl: u64, class: CfClass, start: u64, func: u32) {
        let len = insn_len_at(self.place.image, pl).unwrap_or(4);
        let fall = pl.wrapping_add(len);
        match class {
            CfClass::InferableCall | CfClass::UninferableCall | CfClass::TableCall => {
                self.push(func, Some(fall), Some(pl), false)
            }
            CfClass::Return | CfClass::PopRet => self.ret(start, func),
            CfClass::TrapReturn => self.trap_ret(start, func),
            _ if start == fall => self.settle(func),
            _ => self.jump(start, func),
        }
    }

    /// `n` instructions at `node`, the first of them `offset` instructions after `start`.
    fn attribute(&mut self, node: u32, n: u64, start: u64, offset: u64) {
        if self.sampler.is_some() {
            self.sample(node, n, start, offset);
        }
        self.nodes[node as usize].w.insns += n;
        if self.last_time.is_some() {
            match self.since.last_mut() {
                Some((k, c)) if *k == node => *c += n,
                _ => self.since.push((node, n)),
            }
        }
    }

    fn range(&mut self, start: u64, last: u64, count: u64, class: CfClass, taken: Option<bool>) {
        self.at = self.retired;
        self.enter(start);
        self.segment(start, last, count);
        self.prev_last = Some(last);
        self.prev_class = class;
        self.prev_taken = taken;
        self.retired += count;
    }

    /// `count` instructions from `start` to `last`, attributed to the stack's top, whose
    /// function follows a fall-through into the next function.
    fn segment(&mut self, start: u64, last: u64, count: u64) {
        if count == 0 {
            return;
        }
        let Some(top) = self.stack.last().copied() else {
            return;
        };
        let f = self.nodes[top.node as usize].func as usize;
        let here = self.place.index as u32;
        let fun = self.funcs.get(f).filter(|fun| fun.space == here);
        let inside = fun.is_some_and(|fun| !fun.unknown && start >= fun.start && last < fun.end);
        if inside
            || fun.is_some_and(|fun| fun.unknown) && self.place.syms.function_index(last).is_none()
        {
            if self.inlines.is_none() {
                self.attribute(top.node, count, start, 0);
                return;
            }
            // The top frame moves through the inlined functions of its range.
            let parent = self.nodes[top.node as usize].parent;
            let f = f as u32;
            let mut offset = 0;
            for &(inl, n) in self.inline_pieces(start, count).iter() {
                let node = self.child_at(parent, f, inl);
                if let Some(t) = self.stack.last_mut() {
                    t.node = node;
                }
                self.attribute(node, n, start, offset);
                offset += n;
            }
        } else {
            // The range crosses a function boundary: walk it.
            let mut pc = start;
            for k in 0..count {
                let func = self.func_of(pc);
                self.settle(func);
                let mut node = self.stack.last().map_or(ROOT, |t| t.node);
                if self.inlines.is_some() && node != ROOT {
                    let inl = self.inline_pieces(pc, 1)[0].0;
                    let parent = self.nodes[node as usize].parent;
                    node = self.child_at(parent, func, inl);
                    if let Some(t) = self.stack.last_mut() {
                        t.node = node;
                    }
                }
                self.attribute(node, 1, pc, 0);
                if k + 1 < count {
                    match insn_len_at(self.place.image, pc) {
                        Some(n) => pc = pc.wrapping_add(n),
                        None => {
                            // Not in the image: the rest goes where we are.
                            self.attribute(node, count - k - 1, pc, 0);
                            break;
                        }
                    }
                }
            }
        }
    }

    fn time(&mut self, t: u64) {
        self.has_time = true;
        if let Some(prev) = self.last_time {
            let delta = t.saturating_sub(prev);
            let n: u64 = self.since.iter().map(|(_, c)| c).sum();
            if n > 0 {
                // Shared in proportion to instructions; the remainder goes to the last.
                let mut given = 0u64;
                for (k, (node, c)) in self.since.iter().enumerate() {
                    let share = if k + 1 == self.since.len() {
                        delta - given
                    } else {
                        (delta as u128 * *c as u128 / n as u128) as u64
                    };
                    given += share;
                    self.nodes[*node as usize].w.time += share;
                }
            }
        }
        self.since.clear();
        self.last_time = Some(t);
        if let Some(s) = self.sampler.as_mut() {
            s.time(t);
        }
    }

    /// Time does not run across a loss or the end of trace: what ran since the last `Time`
    /// element has no known duration.
    fn end_time(&mut self) {
        self.last_time = None;
        self.since.clear();
        if let Some(s) = self.sampler.as_mut() {
            s.end_time();
        }
    }

    /// Depth of the shadow stack now (frames).
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// The profile so far.
    pub fn profile(&self) -> Profile {
        self.profiles(|_| 0).remove(&0).unwrap_or_else(|| Profile {
            has_time: self.has_time,
            losses: self.losses,
            truncated: self.truncated,
            ..Profile::default()
        })
    }

    /// The profile so far split by address space ([`System`]): each stack goes to the space of
    /// its innermost function (the code that ran), each call-graph edge and PC sample to the
    /// space of the function called or sampled. Every space that ran code has a profile; the
    /// losses and truncated calls are counted in each.
    pub fn profiles_by_space(&self) -> BTreeMap<usize, Profile> {
        self.profiles(|f| self.function_space(f))
    }

    /// The profile split by `key` of a function id.
    fn profiles(&self, key: impl Fn(u32) -> usize) -> BTreeMap<usize, Profile> {
        let mut out: BTreeMap<usize, Profile> = BTreeMap::new();
        let empty = Profile {
            has_time: self.has_time,
            losses: self.losses,
            truncated: self.truncated,
            ..Profile::default()
        };
        fn of<'p>(out: &'p mut BTreeMap<usize, Profile>, k: usize, e: &Profile) -> &'p mut Profile {
            out.entry(k).or_insert_with(|| e.clone())
        }
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if n.w == Weight::default() {
                continue;
            }
            // Innermost first, then reversed: each function after its caller's inlined
            // functions, before its own.
            let mut path = Vec::new();
            let mut k = i as u32;
            while k != ROOT {
                let node = &self.nodes[k as usize];
                if let Some(chain) = self.inlines.as_ref().map(|i| &i.chains[node.inl as usize]) {
                    path.extend(chain.iter().rev().map(|&id| self.name(id).to_string()));
                }
                path.push(self.name(node.func).to_string());
                k = node.parent;
            }
            path.reverse();
            of(&mut out, key(n.func), &empty)
                .stacks
                .entry(path)
                .or_default()
                .add(n.w);
        }
        for (&(a, b), c) in &self.edges {
            let names = (self.name(a).to_string(), self.name(b).to_string());
            of(&mut out, key(b), &empty)
                .calls
                .entry(names)
                .or_default()
                .add(*c);
        }
        for (&f, &n) in &self.samples {
            *of(&mut out, key(f), &empty)
                .samples
                .entry(self.name(f).to_string())
                .or_default() += n;
        }
        out
    }
}

impl FlowSink for Profiler<'_> {
    fn element(&mut self, e: &FlowElement) {
        match *e {
            FlowElement::Range {
                start,
                last,
                count,
                class,
                taken,
            } => self.range(start, last, count, class, taken),
            FlowElement::Sync { reason, .. } => {
                if matches!(reason, SyncReason::Start | SyncReason::Recovery)
                    && self.prev_last.is_none()
                {
                    self.stack.clear();
                }
            }
            FlowElement::Trap { epc, .. } => {
                // A trap taken before the next instruction retired (an interrupt, a fault at a
                // call's target): execution had moved to `epc` first, so make that transition
                // (a call pushes its callee even if the callee has not run yet).
                let epc = epc.or_else(|| self.prev_last.and_then(|pl| self.next_after(pl)));
                let mut resume = None;
                let known = self.prev_last.is_some() || self.pending_trap.is_some();
                self.at = self.retired;
                if known && !self.stack.is_empty() && self.prev_last != epc {
                    match epc {
                        Some(e) => self.enter(e),
                        None => resume = self.prev_last.map(|pl| (pl, self.prev_class)),
                    }
                }
                self.pending_trap = Some((epc, resume));
                self.prev_last = None;
            }
            FlowElement::Time { time } => self.time(time),
            FlowElement::Loss { .. } => {
                self.losses += 1;
                self.stack.clear();
                self.prev_last = None;
                self.pending_trap = None;
                self.end_time();
            }
            FlowElement::End { .. } => {
                self.prev_last = None;
                self.pending_trap = None;
                self.stack.clear();
                self.end_time();
            }
            FlowElement::Event {
                kind: EventKind::PcSample,
                addr: Some(pc),
                ..
            } => {
                let f = self.func_of(pc);
                *self.samples.entry(f).or_default() += 1;
            }
            FlowElement::Context { privilege, context } => {
                self.place.report(privilege, context);
            }
            FlowElement::Ignored { .. } | FlowElement::Event { .. } => {}
        }
    }
}
