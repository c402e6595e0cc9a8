//! What every trace decoder does while it walks the program, whatever its protocol: moving a
//! [`Cursor`] over the program's block table ([`Code`]) one straight-line run or one instruction
//! at a time, building [`FlowElement::Range`]s by the flow's rules ([`Ranges`]), keeping a stack
//! of return addresses for implicit returns ([`ReturnStack`]), and inferring the target of a
//! sequentially inferable jump ([`sequential_target`]). Where the protocols' rules differ, the
//! difference is an option named after its specification section.
//!
//! The decoders keep only their protocol's semantics: N-Trace the I-CNT budget and the HIST
//! bits (N-Trace 11.1), E-Trace the stop conditions of `follow_execution_path`, the branch map
//! and *irreport*/*irdepth* (`decoder.adoc`). When the return stack is pushed and popped is
//! theirs too, because the rules share nothing beyond push and pop:
//! * N-Trace 9.2: every call and co-routine swap pushes and every return or swap pops (Table 4),
//!   whatever the encoder's stack depth, and the popped address is the target unless the jump
//!   is sequentially inferable; a return that ends a message pops too (its target is in the
//!   message), which keeps the stacks aligned when the encoder's is shallower;
//! * E-Trace `branchTrace.adoc` implicit return: only with the *implicit_return* option; calls
//!   push, and a return pops only when the stack is not empty and the packet does not say that
//!   this return failed its prediction (*irreport* at depth *irdepth*, or the packet's address
//!   reached by it), which the walk cannot know without the packet.

use crate::{FlowElement, FlowSink};
use rvtrace_image::code::{Code, Ent};
use rvtrace_image::Image;
use rvtrace_isa::{sequentially_inferred_target, CfClass, IsaConfig};
use std::collections::VecDeque;

/// The return addresses of the calls walked and not returned from, for implicit returns
/// (E-Trace `branchTrace.adoc` implicit return, N-Trace 9.2): a call pushes the address after
/// it, a return pops. Bounded: when full, a push drops the oldest entry (memory stays bounded
/// whatever the input; the encoder's own stack is no deeper).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReturnStack {
    v: VecDeque<u64>,
    max: usize,
}

impl ReturnStack {
    /// An empty stack of at most `max` entries (0: pushes do nothing).
    pub fn new(max: usize) -> Self {
        ReturnStack {
            v: VecDeque::new(),
            max,
        }
    }

    /// A call: `ret` is the address after it.
    #[inline]
    pub fn push(&mut self, ret: u64) {
        if self.max == 0 {
            return;
        }
        if self.v.len() >= self.max {
            self.v.pop_front();
        }
        self.v.push_back(ret);
    }

    /// A return: the newest entry.
    #[inline]
    pub fn pop(&mut self) -> Option<u64> {
        self.v.pop_back()
    }

    /// The newest entry, left on the stack.
    #[inline]
    pub fn top(&self) -> Option<u64> {
        self.v.back().copied()
    }

    /// Entries on the stack.
    #[inline]
    pub fn len(&self) -> usize {
        self.v.len()
    }

    /// Whether the stack is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    /// Forget every entry (a synchronisation, a loss).
    pub fn clear(&mut self) {
        self.v.clear();
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.v.capacity() * std::mem::size_of::<u64>()
    }
}

/// Which instruction before an indirect jump can make it sequentially inferable (its register
/// loaded by a `lui`/`auipc`/`c.lui`): the protocols say it differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequentialJumps {
    /// E-Trace `decoder.adoc` `is_sequential_jump`: the instruction executed right before the
    /// jump, wherever it is.
    ExecutedBefore,
    /// N-Trace 9.1: the instruction executed right before the jump, when it is also right
    /// before it in memory.
    RightBefore,
}

/// The target of the indirect jump at `pc` if the instruction executed before it, at `prev`
/// (`prev_len` bytes long), loads its register (`rvtrace_isa::sequentially_inferred_target`),
/// with `rule` saying which instruction may; `None` otherwise.
#[inline]
pub fn sequential_target(
    image: &Image,
    isa: &IsaConfig,
    rule: SequentialJumps,
    (prev, prev_len): (u64, u64),
    pc: u64,
) -> Option<u64> {
    let before = match rule {
        SequentialJumps::ExecutedBefore => prev != pc,
        SequentialJumps::RightBefore => prev.wrapping_add(prev_len) & isa.xlen.addr_mask() == pc,
    };
    if !before {
        return None;
    }
    let pbits = image.fetch(prev)?;
    let bits = image.fetch(pc)?;
    sequentially_inferred_target(isa, prev, pbits, bits)
}

/// Why a [`Cursor`] cannot go on: the walk left the program. Each decoder maps it to its own
/// error type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkError {
    /// The address is not in an executable segment of the program (or is odd).
    Unmapped(u64),
    /// No valid instruction starts at the address (invalid bits, the all-zeros parcel for a
    /// table that rejects it, or an instruction that runs off the code).
    BadInstruction(u64),
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WalkError::Unmapped(a) => {
                write!(
                    f,
                    "{a:#x} is not in an executable segment of the program image"
                )
            }
            WalkError::BadInstruction(a) => write!(f, "{a:#x} is not a valid instruction"),
        }
    }
}

impl std::error::Error for WalkError {}

/// Why the table has no valid entry at `pc` (`in_table`: it has one, invalid).
#[cold]
fn entry_error(pc: u64, in_table: bool) -> WalkError {
    if in_table {
        WalkError::BadInstruction(pc)
    } else {
        WalkError::Unmapped(pc)
    }
}

/// A straight-line run of the block table ([`Ent::run`]): instructions executed in sequence from
/// `start`, none of them a control transfer, up to the run's end (the next transfer or invalid
/// instruction, not in the run: [`Cursor::end_of`]). What is not always needed is computed on
/// demand (a walk often looks at a run and then takes one instruction of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Its first instruction.
    pub start: u64,
    /// Instructions in it (at least one).
    pub count: u64,
    /// Its length in bytes.
    bytes: u32,
    /// Bytes from `start` to its last instruction.
    last_off: u32,
}

impl Run {
    /// Its length in 16-bit units (N-Trace I-CNT units, 8.4).
    #[inline]
    pub const fn halfwords(&self) -> u64 {
        self.bytes as u64 / 2
    }

    /// Its length in bytes.
    #[inline]
    pub const fn bytes(&self) -> u64 {
        self.bytes as u64
    }

    /// Its last instruction.
    #[inline]
    pub const fn last(&self) -> u64 {
        self.start + self.last_off as u64
    }

    /// The length of its last instruction in bytes.
    #[inline]
    pub const fn last_len(&self) -> u64 {
        (self.bytes - self.last_off) as u64
    }
}

/// One instruction as a walk sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    /// Its address.
    pub pc: u64,
    /// Its length in bytes.
    pub len: u8,
    /// Its control-flow class (the table's classifier).
    pub class: CfClass,
    /// Its static target (masked), for the classes that have one: a conditional branch (taken),
    /// `jal`/`c.j`/`c.jal`. Zcmt table jumps are inferable but have none here (the jump table
    /// is in memory).
    pub target: Option<u64>,
    /// The next instruction in memory (masked).
    pub seq: u64,
}

impl Insn {
    /// Its length in 16-bit units (N-Trace I-CNT units, 8.4).
    #[inline]
    pub const fn halfwords(&self) -> u64 {
        (self.len as u64).div_ceil(2)
    }
}

/// Classes whose static target the block table holds.
#[inline]
const fn has_static_target(class: CfClass) -> bool {
    matches!(
        class,
        CfClass::Branch
            | CfClass::InferableCall
            | CfClass::InferableJump
            | CfClass::OtherInferableJump
    )
}

/// A decoder's rules for [`Cursor::walk_blocks`]: it asks before each step whether the step
/// may be taken (a `false` or `None` stops the walk before it, for the decoder's own step to
/// take it), and after each transfer whether to go on.
pub trait BlockRules {
    /// A straight-line run of `count` instructions, `halfwords` 16-bit units long.
    fn run(&mut self, count: u64, halfwords: u64) -> bool;
    /// A conditional branch, `halfwords` long: its outcome (taken).
    fn branch(&mut self, halfwords: u64) -> Option<bool>;
    /// A jump with a static target (`InferableCall`, `InferableJump`, `OtherInferableJump`),
    /// `halfwords` long.
    fn jump(&mut self, class: CfClass, halfwords: u64) -> bool;
    /// After a transfer was walked.
    fn after(&mut self) -> After;
}

/// What [`BlockRules::after`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Walk on.
    Go,
    /// Stop here.
    Stop,
    /// Stop here: the walk's last instruction.
    Last,
}

/// What [`Cursor::walk_blocks`] walked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Walked {
    /// Instructions walked.
    pub instructions: u64,
    /// The last instruction walked and where execution went after it (`None`: nothing walked).
    pub last: Option<(u64, u64)>,
    /// It stopped at [`After::Last`].
    pub ended: bool,
}

/// `Cursor::prev` when the instruction before is unknown: odd, so no instruction's address.
const NO_PREV: u64 = 1;
/// `Cursor::prev` in a chunk's guessed start state ([`Cursor::guess_prev`]): some instruction
/// the chunk cannot know (the previous chunk walked it). Odd, so no instruction's address.
const GUESSED_PREV: u64 = 3;

/// A decoder's position in the program: the block table it walks, the address mask, where it is
/// (`pc`), the instruction walked before (for sequentially inferable jumps), the open range and
/// the return stack.
///
/// Where `pc` is depends on the protocol: for N-Trace, the next instruction to retire (the walk
/// [`advance`](Cursor::advance)s over runs and instructions from it); for E-Trace, the last
/// instruction reported (`decoder.adoc` `pc`: the walk [`arrive`](Cursor::arrive)s at the next
/// one, reporting what lies between).
pub struct Cursor<'a> {
    code: Code,
    image: &'a Image,
    mask: u64,
    rule: SequentialJumps,
    /// Where the walk is (see the type's documentation).
    pub pc: u64,
    /// The last instruction walked before `pc` ([`NO_PREV`]: unknown). Its length is looked up
    /// when needed (rarely: an uninferable jump), so that each step stores one word.
    prev: u64,
    /// The open instruction range: the walk adds to it, the decoder flushes it.
    pub ranges: Ranges,
    /// Return addresses for implicit returns (the decoder decides when to push and pop: see
    /// the module documentation).
    pub stack: ReturnStack,
    /// The walk asked for the instruction before while it was a guess ([`Cursor::guess_prev`]).
    guess_read: std::cell::Cell<bool>,
    /// A change of address space that takes effect when the walk arrives at `switch_at`
    /// ([`Cursor::switch_on_arrival`]; [`NO_PREV`]: none).
    switch_at: u64,
    pending: Option<(Code, &'a Image)>,
    /// Where the last switch on arrival took effect, and the table it left ([`Cursor::ent_before`]).
    switched_at: u64,
    left: Option<Code>,
}

impl<'a> Cursor<'a> {
    /// A cursor over `code` (the table of `image`), addresses masked with `mask`, sequential
    /// jumps inferred by `rule`, a return stack of at most `stack_max` entries.
    pub fn new(
        code: Code,
        image: &'a Image,
        mask: u64,
        rule: SequentialJumps,
        stack_max: usize,
    ) -> Self {
        Cursor {
            code,
            image,
            mask,
            rule,
            pc: 0,
            prev: NO_PREV,
            ranges: Ranges::new(),
            stack: ReturnStack::new(stack_max),
            guess_read: std::cell::Cell::new(false),
            switch_at: NO_PREV,
            pending: None,
            switched_at: NO_PREV,
            left: None,
        }
    }

    /// Walk the code of another address space from here on (`rvtrace_image::space`): its
    /// table `code` and its `image`. A switch on arrival still pending is dropped.
    pub fn set_space(&mut self, code: Code, image: &'a Image) {
        self.code = code;
        self.image = image;
        self.switch_at = NO_PREV;
        self.pending = None;
    }

    /// Walk the code of another address space from the instruction at `at` on, when the walk
    /// arrives there ([`Cursor::arrival`]): the first instruction in a new privilege or context
    /// that the trace reports with the instructions before it (E-Trace's format 3 after an
    /// `xRET`), which the walk reaches through the old space's code.
    pub fn switch_on_arrival(&mut self, at: u64, code: Code, image: &'a Image) {
        self.switch_at = at;
        self.pending = Some((code, image));
    }

    /// The entry of the instruction the walk arrives at, `pc` (the space switches first if a
    /// switch waits for `pc`), or `None` as [`Code::ent`].
    #[inline]
    pub fn arrival(&mut self, pc: u64) -> Option<&Ent> {
        if pc == self.switch_at {
            self.take_switch();
        }
        self.code.ent(pc)
    }

    /// [`entry`](Cursor::entry) of the instruction the walk arrives at (see
    /// [`arrival`](Cursor::arrival)).
    #[inline]
    pub fn arrival_entry(&mut self, pc: u64) -> Result<&Ent, WalkError> {
        if pc == self.switch_at {
            self.take_switch();
        }
        self.entry(pc)
    }

    /// Take a switch on arrival still waiting (the walk ended where it was to happen without
    /// looking the instruction up).
    pub fn settle_switch(&mut self) {
        if self.pending.is_some() {
            self.take_switch();
        }
    }

    #[cold]
    fn take_switch(&mut self) {
        if let Some((code, image)) = self.pending.take() {
            self.left = Some(std::mem::replace(&mut self.code, code));
            self.image = image;
            self.switched_at = self.switch_at;
        }
        self.switch_at = NO_PREV;
    }

    /// The table's entry at `pc` for an instruction walked before the current one: in the
    /// space the walk left if it switched on arriving at the current instruction.
    pub fn ent_before(&self, pc: u64) -> Option<&Ent> {
        match &self.left {
            Some(left) if self.switched_at == self.pc => left.ent(pc),
            _ => self.code.ent(pc),
        }
    }

    /// The block table.
    #[inline]
    pub fn code(&self) -> &Code {
        &self.code
    }

    /// The program image.
    #[inline]
    pub fn image(&self) -> &'a Image {
        self.image
    }

    /// The address mask.
    #[inline]
    pub fn mask(&self) -> u64 {
        self.mask
    }

    /// The table's entry for a valid instruction at `pc` (the table alone: see
    /// [`insn`](Cursor::insn) for instructions it has no entry for).
    #[inline]
    pub fn entry(&self, pc: u64) -> Result<&Ent, WalkError> {
        match self.code.ent(pc) {
            Some(e) if e.len > 0 => Ok(e),
            e => Err(entry_error(pc, e.is_some())),
        }
    }

    /// The run from `pc`, whose entry is `e`; `None` if the instruction at `pc` ends a run.
    #[inline]
    pub fn run(&self, pc: u64, e: &Ent) -> Option<Run> {
        if e.run > 0 {
            Some(Run {
                start: pc,
                count: u64::from(e.run),
                bytes: e.run_bytes,
                last_off: e.run_last,
            })
        } else {
            None
        }
    }

    /// The address after the run `r`: its end (masked).
    #[inline]
    pub fn end_of(&self, r: &Run) -> u64 {
        r.start.wrapping_add(r.bytes()) & self.mask
    }

    /// The static target of the instruction at `pc`, whose entry is `e` (see
    /// [`Insn::target`]): the one place for the static-target rule.
    #[inline]
    pub fn target(&self, pc: u64, e: &Ent) -> Option<u64> {
        has_static_target(e.class).then(|| pc.wrapping_add(e.target as i64 as u64) & self.mask)
    }

    /// The next instruction in memory after the one at `pc`, whose entry is `e` (masked).
    #[inline]
    pub fn seq(&self, pc: u64, e: &Ent) -> u64 {
        pc.wrapping_add(u64::from(e.len)) & self.mask
    }

    /// The instruction at `pc`, whose entry is `e`.
    #[inline]
    pub fn insn_of(&self, pc: u64, e: &Ent) -> Insn {
        Insn {
            pc,
            len: e.len,
            class: e.class,
            target: self.target(pc, e),
            seq: self.seq(pc, e),
        }
    }

    /// The instruction at `pc`: from the table, or, where it has no entry (an instruction that
    /// crosses the end of its segment into the next), from the image's bits, classified as the
    /// table classifies.
    pub fn insn(&self, pc: u64) -> Result<Insn, WalkError> {
        Ok(self.insn_of(pc, &self.decode(pc)?))
    }

    /// The entry of the instruction at `pc` ([`insn`](Cursor::insn)), as the table has it or
    /// would have it (without a run where the table has no entry).
    #[inline]
    pub fn decode(&self, pc: u64) -> Result<Ent, WalkError> {
        match self.code.ent(pc) {
            Some(e) if e.len > 0 => Ok(*e),
            _ => self.decode_outside(pc),
        }
    }

    /// [`decode`](Cursor::decode) where the table has no valid entry.
    #[cold]
    #[inline(never)]
    pub fn decode_outside(&self, pc: u64) -> Result<Ent, WalkError> {
        if pc & 1 != 0 || !self.image.segment_at(pc).is_some_and(|s| s.is_executable()) {
            return Err(WalkError::Unmapped(pc));
        }
        let bits = self.image.fetch(pc).ok_or(WalkError::BadInstruction(pc))?;
        let info = self.code.classify(bits);
        if info.len == 0 {
            return Err(WalkError::BadInstruction(pc));
        }
        Ok(Ent {
            class: info.class,
            len: info.len,
            target: info.target.unwrap_or(0) as i32,
            ..Ent::default()
        })
    }

    /// Walk from `pc` a block at a time (a straight-line run and the transfer that ends it, one
    /// lookup of the segment's table each) as `rules` decide: conditional branches and jumps
    /// with a static target, their instructions going to the open range; calls push their
    /// return address. Stops before anything else (an instruction the table has no valid entry
    /// for in `pc`'s segment, any other transfer), or where `rules` say, for the decoder's own
    /// step to go on. The walk's common case, kept free of the general step's tests.
    #[inline]
    pub fn walk_blocks<B: BlockRules, S: FlowSink + ?Sized>(
        &mut self,
        rules: &mut B,
        sink: &mut S,
    ) -> Walked {
        let mut w = Walked::default();
        let mut pc = self.pc;
        let Some((base, ents)) = self.code.segment(pc) else {
            return w;
        };
        let mask = self.mask;
        let at = |pc: u64| {
            ents.get((pc.wrapping_sub(base) / 2) as usize)
                .filter(|e| e.len > 0 && pc & 1 == 0)
        };
        while let Some(mut e) = at(pc) {
            let start = pc;
            let mut count = 0;
            if e.run > 0 {
                if !rules.run(u64::from(e.run), u64::from(e.run_bytes / 2)) {
                    break;
                }
                count = u64::from(e.run);
                let last = pc + u64::from(e.run_last);
                pc = pc.wrapping_add(u64::from(e.run_bytes)) & mask;
                self.prev = last;
                w.instructions += count;
                w.last = Some((last, pc));
                match at(pc) {
                    Some(x) => e = x,
                    None => {
                        self.ranges.add(start, last, count, pc, CfClass::None, sink);
                        break;
                    }
                }
            }
            let class = e.class;
            let hw = u64::from(e.len).div_ceil(2);
            let taken = match class {
                CfClass::Branch => rules.branch(hw),
                CfClass::InferableCall | CfClass::InferableJump | CfClass::OtherInferableJump => {
                    rules.jump(class, hw).then_some(false)
                }
                _ => None,
            };
            let seq = pc.wrapping_add(u64::from(e.len)) & mask;
            let Some(taken) = taken else {
                if count > 0 {
                    self.ranges
                        .add(start, self.prev, count, pc, CfClass::None, sink);
                }
                break;
            };
            if class.pushes_return() {
                self.stack.push(seq);
            }
            let next = if class == CfClass::Branch && !taken {
                seq
            } else {
                pc.wrapping_add(e.target as i64 as u64) & mask
            };
            self.ranges
                .add_block(start, count + 1, pc, seq, class, taken, sink);
            self.prev = pc;
            w.instructions += 1;
            w.last = Some((pc, next));
            pc = next;
            match rules.after() {
                After::Go => {}
                After::Stop => break,
                After::Last => {
                    w.ended = true;
                    break;
                }
            }
        }
        self.pc = pc;
        w
    }

    /// Walk the run from `pc` (which is `r.start`): its instructions go to the open range, the
    /// walk goes on at its end, which is returned.
    #[inline]
    pub fn advance_run<S: FlowSink + ?Sized>(&mut self, r: &Run, sink: &mut S) -> u64 {
        let (last, end) = (r.last(), self.end_of(r));
        self.ranges
            .add(r.start, last, r.count, end, CfClass::None, sink);
        self.prev = last;
        self.pc = end;
        end
    }

    /// Walk the instruction at `pc`, of class `class`, whose next instruction in memory is at
    /// `seq`, a branch `taken` or not (false for other classes): it goes to the open range, the
    /// walk goes on at `next`.
    #[inline]
    pub fn advance<S: FlowSink + ?Sized>(
        &mut self,
        class: CfClass,
        seq: u64,
        taken: bool,
        next: u64,
        sink: &mut S,
    ) {
        let pc = self.pc;
        self.ranges.add_one(pc, seq, class, taken, sink);
        self.prev = pc;
        self.pc = next;
    }

    /// Report `count` instructions executed in sequence from `first` to `at`, whose entry is
    /// `e`, and stand at `at`; `prev` is the instruction before `at`.
    #[inline]
    pub fn arrive<S: FlowSink + ?Sized>(
        &mut self,
        first: u64,
        count: u64,
        at: u64,
        e: &Ent,
        prev: u64,
        sink: &mut S,
    ) {
        let next = at.wrapping_add(u64::from(e.len));
        self.ranges.add(first, at, count, next, e.class, sink);
        self.prev = prev;
        self.pc = at;
    }

    /// The instruction walked before `pc`, if known.
    #[inline]
    pub fn prev(&self) -> Option<u64> {
        if self.prev == GUESSED_PREV {
            self.guess_read.set(true);
        }
        (self.prev != NO_PREV && self.prev != GUESSED_PREV).then_some(self.prev)
    }

    /// A chunk decoder's start (`crate::chunk`): the instruction before `pc` is one that the
    /// previous chunk walked, unknown here. Reading it ([`prev`](Cursor::prev)) marks the chunk's
    /// decode as depending on its guess ([`guess_read`](Cursor::guess_read)).
    pub fn guess_prev(&mut self) {
        self.prev = GUESSED_PREV;
    }

    /// The raw instruction-before word, for comparing chunk states: `None` while it is a guess
    /// ([`guess_prev`](Cursor::guess_prev)), which matches any.
    pub fn prev_state(&self) -> Option<u64> {
        (self.prev != GUESSED_PREV).then_some(self.prev)
    }

    /// Whether the walk read a part of its state that was guessed at a chunk's start (the
    /// instruction before, the open range's start or length): then the chunk's decode may differ
    /// from a decode from the trace's start, and must be done again from the real state.
    pub fn guess_read(&self) -> bool {
        self.guess_read.get() || self.ranges.guess_read.get()
    }

    /// Set where the walk is, with the instruction before it (`None`: unknown, after a trap or a
    /// synchronisation).
    #[inline]
    pub fn jump_to(&mut self, pc: u64, prev: Option<u64>) {
        self.pc = pc;
        self.prev = prev.unwrap_or(NO_PREV);
    }

    /// Forget the instruction walked before (a trap, a loss): no jump after it is
    /// sequentially inferable.
    #[inline]
    pub fn forget_prev(&mut self) {
        self.prev = NO_PREV;
    }

    /// The target of the indirect jump at `pc` if the instruction walked before it loads its
    /// register ([`sequential_target`] with the cursor's rule), masked.
    pub fn sequential_target(&self, pc: u64) -> Option<u64> {
        let prev = self.prev()?;
        let len = match self.rule {
            SequentialJumps::RightBefore => u64::from(self.insn(prev).ok()?.len),
            SequentialJumps::ExecutedBefore => 0,
        };
        sequential_target(self.image, &self.code.isa, self.rule, (prev, len), pc)
            .map(|t| t & self.mask)
    }
}

/// Whether an instruction of class `class` transferred control (see [`FlowElement::Range`]):
/// every jump and trap return; a conditional branch when `taken`.
#[inline]
pub const fn transfers(class: CfClass, taken: bool) -> bool {
    match class {
        CfClass::None | CfClass::EnvTrap => false,
        CfClass::Branch => taken,
        _ => true,
    }
}

/// The open instruction range of a decoder: instructions are added as the walk reports them,
/// joined into one range while each follows the previous one in memory without a transfer, and
/// given to the sink as a [`FlowElement::Range`] when the next instruction does not continue
/// it, or by [`Ranges::flush`] before any other element.
///
/// The last instruction's class comes with it; for a conditional branch its outcome may come
/// later ([`Ranges::resolve`]: the E-Trace decoder learns it one step after it reports the
/// branch), or never (the flush before a loss).
///
/// Instruction addresses are even (RISC-V instructions are 16-bit aligned); the decoders add no
/// other.
#[derive(Clone, Debug)]
pub struct Ranges {
    start: u64,
    last: u64,
    /// Instructions in the open range (0: none open).
    count: u64,
    /// The address after `last` when the range may go on there (its last instruction did not
    /// transfer control, as far as is known); [`NOT_JOINABLE`] otherwise. One compare decides
    /// whether an instruction continues the range (the walk's every step asks).
    next: u64,
    /// The class of `last`.
    class: CfClass,
    /// For a branch at `last`, its outcome if known (meaningless for other classes: the
    /// flush gives `None` for them, so that adding an instruction stores without a test).
    taken: Option<bool>,
    /// The open range goes on from the previous chunk of a chunked decode
    /// ([`Ranges::continue_open`]): its real start and length are the previous chunk's.
    continued: bool,
    /// `start` or `count` were read while `continued`.
    guess_read: std::cell::Cell<bool>,
}

/// `Ranges::next` when the open range cannot go on: odd, so no instruction's address.
const NOT_JOINABLE: u64 = u64::MAX;

/// Classes after which execution may go on to the next instruction in memory (a branch until
/// its outcome says otherwise), as a bit set of `CfClass` discriminants.
const GOES_ON: u32 =
    1 << CfClass::None as u32 | 1 << CfClass::EnvTrap as u32 | 1 << CfClass::Branch as u32;

impl Default for Ranges {
    fn default() -> Self {
        Ranges::new()
    }
}

impl Ranges {
    /// No range open.
    pub const fn new() -> Self {
        Ranges {
            start: 0,
            last: 0,
            count: 0,
            next: NOT_JOINABLE,
            class: CfClass::None,
            taken: None,
            continued: false,
            guess_read: std::cell::Cell::new(false),
        }
    }

    /// A chunk decoder's start (`crate::chunk`): the open range (if any) began in the previous
    /// chunk, so its start and length here are only the part in this chunk. The first flush
    /// gives that part (the stitch joins it to the previous chunk's); reading the start or the
    /// length before ([`open`](Ranges::open), [`split_before_last`](Ranges::split_before_last))
    /// marks the decode as depending on the guess.
    pub fn continue_open(&mut self) {
        self.continued = self.count > 0;
    }

    /// Whether the open range still goes on from the previous chunk ([`Ranges::continue_open`]).
    pub fn continuing(&self) -> bool {
        self.continued
    }

    /// What of the open range a chunk boundary compares: its last instruction, whether and
    /// where it may go on, its class and outcome (not its start and length: see
    /// [`Ranges::continue_open`]). `None`: no range open.
    pub fn boundary(&self) -> Option<(u64, u64, CfClass, Option<bool>)> {
        (self.count > 0).then_some((self.last, self.next, self.class, self.taken))
    }

    /// The open range's start and length, as this decoder knows them (a part only while
    /// [`continuing`](Ranges::continuing)).
    pub fn extent(&self) -> Option<(u64, u64)> {
        (self.count > 0).then_some((self.start, self.count))
    }

    /// Add `count` instructions executed in sequence, from `start` to `last` (whose class is
    /// `class`, whose next instruction in memory is at `next`): joined to the open range if they
    /// continue it, else the open range is given to `sink` and they open a new one. A branch at
    /// `last` is open until [`resolve`](Ranges::resolve)d, any other transfer until the next
    /// instruction is added (it does not continue the range, whatever its address).
    #[inline]
    pub fn add<S: FlowSink + ?Sized>(
        &mut self,
        start: u64,
        last: u64,
        count: u64,
        next: u64,
        class: CfClass,
        sink: &mut S,
    ) {
        debug_assert!(start & 1 == 0);
        if self.next == start {
            self.count += count;
        } else {
            self.restart(start, count, sink);
        }
        self.last = last;
        self.next = if GOES_ON >> class as u32 & 1 != 0 {
            next
        } else {
            NOT_JOINABLE
        };
        self.class = class;
        self.taken = None;
    }

    /// Add one instruction whose outcome is known: at `pc`, of class `class`, its next
    /// instruction in memory at `next`; `taken`: a branch was taken (false for every other
    /// class).
    #[inline]
    pub fn add_one<S: FlowSink + ?Sized>(
        &mut self,
        pc: u64,
        next: u64,
        class: CfClass,
        taken: bool,
        sink: &mut S,
    ) {
        debug_assert!(pc & 1 == 0 && (!taken || class == CfClass::Branch));
        if self.next == pc {
            self.count += 1;
        } else {
            self.restart(pc, 1, sink);
        }
        self.last = pc;
        self.next = if (GOES_ON >> class as u32 & 1 != 0) & !taken {
            next
        } else {
            NOT_JOINABLE
        };
        self.class = class;
        self.taken = Some(taken);
    }

    /// Add a block: `count` instructions executed in sequence from `start`, the last at `pc` of
    /// class `class` (a transfer, whose next instruction in memory is at `next`; `taken`: a
    /// branch was taken): [`add`](Ranges::add) of the run before `pc` then
    /// [`add_one`](Ranges::add_one) of `pc`, in one step.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn add_block<S: FlowSink + ?Sized>(
        &mut self,
        start: u64,
        count: u64,
        pc: u64,
        next: u64,
        class: CfClass,
        taken: bool,
        sink: &mut S,
    ) {
        debug_assert!(start & 1 == 0 && (!taken || class == CfClass::Branch));
        if self.next == start {
            self.count += count;
        } else {
            self.restart(start, count, sink);
        }
        self.last = pc;
        self.next = if (GOES_ON >> class as u32 & 1 != 0) & !taken {
            next
        } else {
            NOT_JOINABLE
        };
        self.class = class;
        self.taken = Some(taken);
    }

    /// Give the open range to `sink` and open one of `count` instructions at `start`.
    #[inline]
    fn restart<S: FlowSink + ?Sized>(&mut self, start: u64, count: u64, sink: &mut S) {
        self.flush(sink);
        self.start = start;
        self.count = count;
    }

    /// The outcome as the flow gives it: for a branch only.
    #[inline]
    fn taken(&self) -> Option<bool> {
        if self.class == CfClass::Branch {
            self.taken
        } else {
            None
        }
    }

    /// The outcome of the branch that is the open range's last instruction (nothing if none is
    /// open: it was given to the sink with its outcome already).
    #[inline]
    pub fn resolve(&mut self, taken: bool) {
        if self.count > 0 && self.class == CfClass::Branch && self.taken.is_none() {
            self.taken = Some(taken);
            if taken {
                self.next = NOT_JOINABLE;
            }
        }
    }

    /// A branch that ends the open range and whose outcome is not known yet (the caller may
    /// [`resolve`](Ranges::resolve) it before flushing).
    #[inline]
    pub fn unresolved_branch(&self) -> Option<u64> {
        (self.count > 0 && self.class == CfClass::Branch && self.taken.is_none())
            .then_some(self.last)
    }

    /// Correct the class of the open range's last instruction (a walk that learns it only at
    /// its end); `taken` as in [`add_one`](Ranges::add_one). A range that ended at a transfer
    /// stays ended.
    #[inline]
    pub fn set_last_class(&mut self, class: CfClass, taken: bool) {
        if self.count > 0 && self.class != class {
            self.class = class;
            self.taken = Some(taken);
            if transfers(class, taken) {
                self.next = NOT_JOINABLE;
            }
        }
    }

    /// Whether an instruction at `pc` would continue the open range.
    #[inline]
    pub fn continues(&self, pc: u64) -> bool {
        self.next == pc
    }

    /// The open range: (first, last, count).
    #[inline]
    pub fn open(&self) -> Option<(u64, u64, u64)> {
        if self.continued {
            self.guess_read.set(true);
        }
        (self.count > 0).then_some((self.start, self.last, self.count))
    }

    /// End the open range before its last instruction, which stays open alone: the first part
    /// (whose last instruction is at `before`, of class `class`, not a transfer: it went on to
    /// the instruction after it) goes to `sink`; returns false (and does nothing) if the open
    /// range has a single instruction or none.
    pub fn split_before_last<S: FlowSink + ?Sized>(
        &mut self,
        before: u64,
        class: CfClass,
        sink: &mut S,
    ) -> bool {
        if self.continued {
            self.guess_read.set(true);
        }
        if self.count < 2 {
            return false;
        }
        sink.element(&FlowElement::Range {
            start: self.start,
            last: before,
            count: self.count - 1,
            class,
            taken: (class == CfClass::Branch).then_some(false),
        });
        self.start = self.last;
        self.count = 1;
        true
    }

    /// Give the open range to `sink` (before any other element).
    #[inline]
    pub fn flush<S: FlowSink + ?Sized>(&mut self, sink: &mut S) {
        if self.count > 0 {
            sink.range(self.start, self.last, self.count, self.class, self.taken());
            self.count = 0;
            self.next = NOT_JOINABLE;
            self.continued = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(
        start: u64,
        last: u64,
        count: u64,
        class: CfClass,
        taken: Option<bool>,
    ) -> FlowElement {
        FlowElement::Range {
            start,
            last,
            count,
            class,
            taken,
        }
    }

    /// Sequential instructions and not-taken branches join; a taken branch ends the range even
    /// when its target is the next instruction; a jump ends it whatever comes next.
    #[test]
    fn ranges_end_at_transfers() {
        let mut v = Vec::new();
        let mut r = Ranges::new();
        r.add(0x100, 0x108, 3, 0x10c, CfClass::None, &mut v);
        r.add_one(0x10c, 0x110, CfClass::Branch, false, &mut v);
        r.add_one(0x110, 0x114, CfClass::Branch, true, &mut v);
        r.add_one(0x114, 0x118, CfClass::InferableJump, false, &mut v);
        r.add(0x118, 0x118, 1, 0x11c, CfClass::Branch, &mut v);
        assert_eq!(r.unresolved_branch(), Some(0x118));
        r.resolve(false);
        r.add(0x11c, 0x11c, 1, 0x120, CfClass::None, &mut v);
        r.flush(&mut v);
        r.flush(&mut v);
        assert_eq!(
            v,
            [
                range(0x100, 0x110, 5, CfClass::Branch, Some(true)),
                range(0x114, 0x114, 1, CfClass::InferableJump, None),
                range(0x118, 0x11c, 2, CfClass::None, None),
            ]
        );
    }

    /// A branch whose outcome is not resolved goes out with `None`; one resolved after a flush
    /// changes nothing.
    #[test]
    fn unresolved_branch() {
        let mut v = Vec::new();
        let mut r = Ranges::new();
        r.add(0x100, 0x104, 2, 0x108, CfClass::Branch, &mut v);
        r.flush(&mut v);
        r.resolve(true);
        r.add(0x108, 0x108, 1, 0x10c, CfClass::None, &mut v);
        r.set_last_class(CfClass::EnvTrap, false);
        r.flush(&mut v);
        assert_eq!(
            v,
            [
                range(0x100, 0x104, 2, CfClass::Branch, None),
                range(0x108, 0x108, 1, CfClass::EnvTrap, None),
            ]
        );
    }

    #[test]
    fn return_stack_drops_the_oldest() {
        let mut r = ReturnStack::new(2);
        for a in [1, 2, 3] {
            r.push(a);
        }
        assert_eq!((r.len(), r.top()), (2, Some(3)));
        assert_eq!([r.pop(), r.pop(), r.pop()], [Some(3), Some(2), None]);
        let mut none = ReturnStack::new(0);
        none.push(1);
        assert!(none.is_empty());
    }

    /// 0x1000 `auipc t0, 0` (0x00000297), 0x1004 `jr 16(t0)` (`jalr x0, 16(t0)`: 0x01028067),
    /// encodings as `riscv64-unknown-elf-as` gives them: the target is 0x1010.
    #[test]
    fn sequential_jumps() {
        let code: Vec<u8> = [0x0000_0297u32, 0x0102_8067]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let mut image = Image::new();
        let elf = rvtrace_testkit::minimal_elf(true, 0x1000, &code);
        image.load_bytes("t", &elf).unwrap();
        let isa = IsaConfig::rv64();
        let t = |rule, prev| sequential_target(&image, &isa, rule, prev, 0x1004);
        assert_eq!(t(SequentialJumps::RightBefore, (0x1000, 4)), Some(0x1010));
        assert_eq!(
            t(SequentialJumps::ExecutedBefore, (0x1000, 4)),
            Some(0x1010)
        );
        // Executed before but not right before in memory (its length says so here).
        assert_eq!(t(SequentialJumps::RightBefore, (0x1000, 2)), None);
        assert_eq!(
            t(SequentialJumps::ExecutedBefore, (0x1000, 2)),
            Some(0x1010)
        );
        assert_eq!(t(SequentialJumps::ExecutedBefore, (0x1004, 4)), None);
    }

    /// An image of `parts`: (address, little-endian 16-bit parcels), each an executable
    /// segment of its own.
    fn image_of(parts: &[(u64, &[u16])]) -> Image {
        let mut image = Image::new();
        for (i, (addr, parcels)) in parts.iter().enumerate() {
            let bytes: Vec<u8> = parcels.iter().flat_map(|p| p.to_le_bytes()).collect();
            let elf = rvtrace_testkit::minimal_elf(true, *addr, &bytes);
            image.load_bytes(&format!("p{i}"), &elf).unwrap();
        }
        image
    }

    /// 0x1000 `addi a0,a0,1` (0x00150513), 0x1004 `c.nop` (0x0001), 0x1006 `beq a0,a1,+8`
    /// (0x00b50463), 0x100a `c.nop`, encodings as `riscv64-unknown-elf-as` gives them.
    #[test]
    fn cursor_walks_runs_and_instructions() {
        let image = image_of(&[(0x1000, &[0x0513, 0x0015, 0x0001, 0x0463, 0x00b5, 0x0001])]);
        let isa = IsaConfig::rv64();
        let mask = isa.xlen.addr_mask();
        let mut cur = Cursor::new(
            Code::new(&image, isa),
            &image,
            mask,
            SequentialJumps::RightBefore,
            4,
        );
        let e = *cur.entry(0x1000).unwrap();
        let r = cur.run(0x1000, &e).unwrap();
        assert_eq!((r.count, r.last(), r.last_len()), (2, 0x1004, 2));
        assert_eq!((r.halfwords(), cur.end_of(&r)), (3, 0x1006));
        let b = *cur.entry(0x1006).unwrap();
        assert_eq!(cur.run(0x1006, &b), None);
        let i = cur.insn(0x1006).unwrap();
        assert_eq!(
            (i.class, i.len, i.target, i.seq),
            (CfClass::Branch, 4, Some(0x100e), 0x100a)
        );
        assert_eq!(i.halfwords(), 2);
        // Odd, off the code.
        assert_eq!(cur.entry(0x1001).err(), Some(WalkError::Unmapped(0x1001)));
        assert_eq!(cur.insn(0x1001).err(), Some(WalkError::Unmapped(0x1001)));
        assert_eq!(cur.insn(0x2000).err(), Some(WalkError::Unmapped(0x2000)));

        let mut v = Vec::new();
        cur.jump_to(0x1000, None);
        assert_eq!(cur.advance_run(&r, &mut v), 0x1006);
        assert_eq!((cur.pc, cur.prev()), (0x1006, Some(0x1004)));
        cur.advance(CfClass::Branch, i.seq, true, 0x100e, &mut v);
        assert_eq!((cur.pc, cur.prev()), (0x100e, Some(0x1006)));
        cur.forget_prev();
        assert_eq!(cur.prev(), None);
        // Arriving (E-Trace's position): the c.nop after the branch, reported with it.
        let n = *cur.entry(0x100a).unwrap();
        cur.arrive(0x100a, 1, 0x100a, &n, 0x1006, &mut v);
        assert_eq!((cur.pc, cur.prev()), (0x100a, Some(0x1006)));
        cur.ranges.flush(&mut v);
        assert_eq!(
            v,
            [
                range(0x1000, 0x1006, 3, CfClass::Branch, Some(true)),
                range(0x100a, 0x100a, 1, CfClass::None, None),
            ]
        );
    }

    /// Rules that take every branch as `taken` and stop after `stop_after` transfers.
    struct Taken {
        taken: bool,
        stop_after: u32,
        halfwords: u64,
    }

    impl BlockRules for Taken {
        fn run(&mut self, _count: u64, halfwords: u64) -> bool {
            self.halfwords += halfwords;
            true
        }
        fn branch(&mut self, halfwords: u64) -> Option<bool> {
            self.halfwords += halfwords;
            Some(self.taken)
        }
        fn jump(&mut self, _class: CfClass, halfwords: u64) -> bool {
            self.halfwords += halfwords;
            true
        }
        fn after(&mut self) -> After {
            self.stop_after -= 1;
            if self.stop_after == 0 {
                After::Last
            } else {
                After::Go
            }
        }
    }

    /// A block walk gives the ranges and position that the cursor's run and instruction steps
    /// give, on the program of `cursor_walks_runs_and_instructions`: the branch taken (its
    /// target 0x100e is off the code) or not, the walk ended after it; not taken and walking on,
    /// the `c.nop` at 0x100a (a run of one: the last half-word) and the walk stops at 0x100c,
    /// where the table has no entry.
    #[test]
    fn walk_blocks_is_runs_and_instructions() {
        let image = image_of(&[(0x1000, &[0x0513, 0x0015, 0x0001, 0x0463, 0x00b5, 0x0001])]);
        let isa = IsaConfig::rv64();
        let cursor = || {
            let mut c = Cursor::new(
                Code::new(&image, isa),
                &image,
                isa.xlen.addr_mask(),
                SequentialJumps::RightBefore,
                4,
            );
            c.jump_to(0x1000, None);
            c
        };
        for (taken, stop_after) in [(true, 1), (false, 1), (false, 2)] {
            let mut cur = cursor();
            let mut v = Vec::new();
            let mut rules = Taken {
                taken,
                stop_after,
                halfwords: 0,
            };
            let w = cur.walk_blocks(&mut rules, &mut v);
            // The same walk with the cursor's steps.
            let mut by = cursor();
            let mut u = Vec::new();
            let r = by.run(0x1000, by.entry(0x1000).unwrap()).unwrap();
            by.advance_run(&r, &mut u);
            let next = if taken { 0x100e } else { 0x100a };
            by.advance(CfClass::Branch, 0x100a, taken, next, &mut u);
            let mut want = Walked {
                instructions: 3,
                last: Some((0x1006, next)),
                ended: true,
            };
            if stop_after == 2 {
                let r = by.run(0x100a, by.entry(0x100a).unwrap()).unwrap();
                by.advance_run(&r, &mut u);
                want = Walked {
                    instructions: 4,
                    last: Some((0x100a, 0x100c)),
                    ended: false,
                };
            }
            assert_eq!(w, want);
            // addi + c.nop: 3 half-words, the branch 2, the second c.nop 1.
            assert_eq!(rules.halfwords, 2 + w.instructions);
            cur.ranges.flush(&mut v);
            by.ranges.flush(&mut u);
            assert_eq!((&v, cur.pc, cur.prev()), (&u, by.pc, by.prev()));
            let want = match stop_after {
                1 => range(0x1000, 0x1006, 3, CfClass::Branch, Some(taken)),
                _ => range(0x1000, 0x100a, 4, CfClass::None, None),
            };
            assert_eq!(v, [want]);
        }
    }

    /// An instruction that crosses the end of its segment into the next has no entry in the
    /// table; the cursor decodes it from the image: `c.nop` at 0x1000, then `addi a0,a0,1`
    /// (0x00150513) at 0x1002 in two segments.
    #[test]
    fn cursor_decodes_across_segments() {
        let image = image_of(&[(0x1000, &[0x0001, 0x0513]), (0x1004, &[0x0015, 0x0001])]);
        let isa = IsaConfig::rv64();
        let cur = Cursor::new(
            Code::new(&image, isa),
            &image,
            isa.xlen.addr_mask(),
            SequentialJumps::RightBefore,
            4,
        );
        assert_eq!(
            cur.entry(0x1002).err(),
            Some(WalkError::BadInstruction(0x1002))
        );
        let i = cur.insn(0x1002).unwrap();
        assert_eq!(
            (i.class, i.len, i.target, i.seq),
            (CfClass::None, 4, None, 0x1006)
        );
        assert_eq!(cur.insn(0x1006).unwrap().len, 2);
    }

    /// The cursor's sequential jumps: `auipc t0, 0` then `jr 16(t0)` (see `sequential_jumps`),
    /// walked in order; none once the instruction before is forgotten.
    #[test]
    fn cursor_sequential_jump() {
        let image = image_of(&[(0x1000, &[0x0297, 0x0000, 0x8067, 0x0102])]);
        let isa = IsaConfig::rv64();
        let mut cur = Cursor::new(
            Code::new(&image, isa),
            &image,
            isa.xlen.addr_mask(),
            SequentialJumps::RightBefore,
            4,
        );
        let mut v = Vec::new();
        cur.jump_to(0x1000, None);
        cur.advance(CfClass::None, 0x1004, false, 0x1004, &mut v);
        assert_eq!(cur.sequential_target(0x1004), Some(0x1010));
        cur.forget_prev();
        assert_eq!(cur.sequential_target(0x1004), None);
    }

    #[test]
    fn split() {
        let mut v = Vec::new();
        let mut r = Ranges::new();
        r.add(0x100, 0x100, 1, 0x104, CfClass::None, &mut v);
        assert!(!r.split_before_last(0xfc, CfClass::None, &mut v));
        r.add(0x104, 0x108, 2, 0x10c, CfClass::TrapReturn, &mut v);
        assert!(r.split_before_last(0x104, CfClass::Branch, &mut v));
        r.flush(&mut v);
        assert_eq!(
            v,
            [
                range(0x100, 0x104, 2, CfClass::Branch, Some(false)),
                range(0x108, 0x108, 1, CfClass::TrapReturn, None),
            ]
        );
    }
}
