//! The hart running pre-decoded blocks (the cache itself is `crate::block`; crates/sim/README.md,
//! "Blocks").

use super::Hart;
use crate::alu;
use crate::arch::{Exc, Stop};
use crate::block::*;
use crate::bus::RAM_BASE;
use crate::decode::{decode, Insn};
use crate::observer::{Observer, Retired, RetiredRun, RunStep};
use rvtrace_isa::classify;

impl Hart {
    /// Use pre-decoded blocks in the plain loop (on by default), or step every instruction
    /// through the fetch and the decode cache. The two are equivalent in every observable
    /// effect (crates/sim/tests/blocks.rs); off is for that comparison. (The setting is the
    /// blocks' own: the harts of a machine share theirs, `Hart::swap_decoded`.)
    pub fn set_blocks(&mut self, on: bool) {
        self.blocks.on = on;
    }

    /// [`Hart::run_block`] for an [`Observer::QUIET`] observer, which is as good as `()`: the
    /// only run that meets fused operations, compiled here once per XLEN (a generic run would
    /// compile the whole fused dispatch again in every crate and for every observer).
    #[inline(always)]
    pub(crate) fn run_quiet<const RV64: bool>(&mut self, pc: u64) -> Ran {
        if RV64 {
            self.run_quiet64(pc)
        } else {
            self.run_quiet32(pc)
        }
    }

    #[inline(never)]
    fn run_quiet64(&mut self, pc: u64) -> Ran {
        self.run_block::<(), true>(&mut (), pc)
    }

    #[inline(never)]
    fn run_quiet32(&mut self, pc: u64) -> Ran {
        self.run_block::<(), false>(&mut (), pc)
    }

    /// Run the block at `pc` (in RAM, fetches on the PMP fast path, `instret < next_check`),
    /// and the blocks after it while nothing is due between two instructions.
    ///
    /// `instret` is charged per block: a block runs whole or not at all (when fewer
    /// instructions are left before `next_check` than it holds, the single-step loop runs),
    /// and `instret` is written before each instruction that can look at it or end the block
    /// early (memory accesses off the RAM fast path, `Other`), so that the bus, `execute` and
    /// a fault see it exact, as in the single-step loop.
    #[inline(always)]
    pub(crate) fn run_block<O: Observer, const RV64: bool>(
        &mut self,
        obs: &mut O,
        mut pc: u64,
    ) -> Ran {
        // Fused operations for a quiet observer and one that takes runs (`RETIRE_RUNS`): they
        // give every event the single operations give, in order, but compile the fused
        // dispatch into the run; other observers run the single operations only, so that
        // the many observers of the CLI and the tests do not each compile it (build time).
        let fused = O::QUIET || O::RETIRE_RUNS;
        let first = self.instret;
        let priv_ = self.priv_;
        // Instructions that may retire before `next_check` (> `instret` here), and those left:
        // `instret` is `first + left0 - left` between blocks, written when the chain ends.
        // (At most `CHAIN_MAX`: `Blocks::epoch_hi`.)
        let left0 = (self.next_check - first).min(CHAIN_MAX);
        let mut left = left0;
        // The pool is not touched while blocks run (writes change generations only), but for
        // the links below.
        let mut pool = std::mem::take(&mut self.blocks.pool);
        // The virtual and physical page of the last block's code: a block in the same page
        // needs no look at the fetch memo (which no instruction of a block changes: only
        // translated fetches, `sfence.vma` and `pmp_refresh` do, none inside a chain).
        let (mut code_va, mut code_pa) = (1u64, 0u64);
        // Links: an exit to a fixed pc in its own page (`links`) names the block there (its
        // pool start and count), so the next block starts with no head lookup. This is what the
        // same-page path below does anyway (same page: same physical page, no fetch-memo
        // look), less the head's compare: its decoding is current while no write made a page's
        // blocks stale (`Bus::code_epoch` as when linked, checked at each link taken: a page
        // walk's A/D update can write code without ending the block) and the pool was not
        // emptied (a new filling writes every entry afresh, unlinked).
        let epoch = self.bus.code_epoch;
        if epoch >> 32 != self.blocks.epoch_hi {
            self.blocks.epoch_hi = epoch >> 32;
            Blocks::unlink(&mut pool, epoch);
        }
        // The last exit that may be linked (its pool index; `NONE`: none).
        const NONE: usize = usize::MAX;
        let mut exit = NONE;
        // The block at `pc` (pool start, count; count 0: none, the instruction must run alone
        // or in the single-step loop), linked from `exit` if that is set and it is in the same
        // page.
        macro_rules! lookup {
            () => {{
                // Where the block's code is: untranslated in RAM on the fast path, or in the
                // page a recent translated fetch found (else the single-step loop translates it).
                let pa = if pc & !0xfff == code_va {
                    Some(code_pa | pc & 0xfff)
                } else {
                    exit = NONE;
                    let pa = self.block_fetch(pc);
                    if let Some(pa) = pa {
                        (code_va, code_pa) = (pc & !0xfff, pa & !0xfff);
                    }
                    pa
                };
                match pa {
                    None => (0, 0),
                    Some(pa) => {
                        let idx = head_index(pc);
                        let mut h = self.blocks.heads[idx];
                        if h.pc != pc || h.pa != pa || h.epoch != self.bus.code_epoch {
                            self.blocks.pool = pool;
                            h = self.find_block(pc, pa, idx);
                            pool = std::mem::take(&mut self.blocks.pool);
                            // (It may have emptied the pool.)
                            exit = NONE;
                        }
                        if exit != NONE {
                            let x = &mut pool[exit];
                            let gen = self.bus.code_epoch as u32;
                            (x.link_gen, x.link) = (gen, h.start << 8 | h.n);
                        }
                        (h.start as usize, h.n)
                    }
                }
            }};
        }
        let (mut start, mut n): (usize, u32) = lookup!();
        let out = 'chain: loop {
            // `instret` at the start of the block.
            macro_rules! base {
                () => {
                    first + (left0 - left)
                };
            }
            // A block runs whole or not at all (near `next_check` the single-step loop runs),
            // so that it needs no count of its instructions; `n` = 0: the instruction runs
            // alone (one compare for both).
            if (n as u64).wrapping_sub(1) >= left {
                break if left == left0 { Ran::No } else { Ran::Yes };
            }
            // (The pool has POOL entries once a block was decoded.)
            let Ok(blk) = <&[Entry; POOL]>::try_from(pool.as_slice()) else {
                break if left == left0 { Ran::No } else { Ran::Yes };
            };
            let mut i = start;
            macro_rules! wrap {
                ($a:expr) => {
                    if RV64 {
                        $a
                    } else {
                        $a & 0xffff_ffff
                    }
                };
            }
            // The block's first `n` instructions as a run, the last going on at
            // `next` (`mtime` as at the block start but for the last: a write to `mtime` ends
            // a block).
            let mtime0 = base!().wrapping_add(self.bus.clint.mtime_offset);
            let id = self.blocks.serial * POOL as u64 + start as u64;
            macro_rules! run {
                ($n:expr, $next:expr) => {
                    BlockRun::<RV64> {
                        blk: &blk[start..start + $n],
                        id,
                        page: pc & !0xfff,
                        priv_,
                        mtime0,
                        last_next: $next,
                        last_mtime: (base!() + $n as u64).wrapping_add(self.bus.clint.mtime_offset),
                    }
                };
            }
            // Instructions retired in this block.
            let (next, count) = 'blk: loop {
                // A control transfer or `End` ends the block before the index wraps.
                let mut e = &blk[i & (POOL - 1)];
                i += 1;
                // `instret` once this instruction retires.
                macro_rules! done {
                    () => {
                        base!() + e.idx as u64 + 1
                    };
                }
                macro_rules! at {
                    () => {
                        (pc & !0xfff) + e.off as u64
                    };
                }
                macro_rules! retire {
                    ($next:expr) => {{
                        let next_pc = $next;
                        // `RETIRE_RUNS` observers: once per block, below.
                        if !O::RETIRE_RUNS {
                            obs.retire(&Retired {
                                pc: at!(),
                                insn: e.bits,
                                len: e.len,
                                class: e.class,
                                next_pc,
                                priv_,
                                trap: None,
                                serviced: None,
                                mtime: done!().wrapping_add(self.bus.clint.mtime_offset),
                            });
                            if obs.stop_requested() {
                                left -= e.idx as u64 + 1;
                                pc = next_pc;
                                break 'chain Ran::Stop(Stop::Requested);
                            }
                        }
                    }};
                }
                // `'ctl` ends with the pc the block goes on at (a control transfer, or the
                // end after a re-check); the other instructions go on to the next.
                let t: u64 = 'ctl: {
                    macro_rules! x {
                        ($r:expr) => {
                            self.x[$r as usize]
                        };
                    }
                    macro_rules! w {
                        ($v:expr) => {{
                            let v: u64 = $v;
                            let v = if RV64 { v } else { v as i32 as i64 as u64 };
                            self.x[e.rd as usize] = v;
                            obs.gpr_write(e.rd as u8, v);
                        }};
                    }
                    macro_rules! ea {
                        () => {{
                            let a = x!(e.rs1).wrapping_add(e.imm);
                            if RV64 {
                                a
                            } else {
                                a & 0xffff_ffff
                            }
                        }};
                    }
                    macro_rules! fault {
                        ($exc:expr) => {{
                            let (exc, at) = ($exc, at!());
                            self.instret = done!() - 1;
                            // The instructions before the fault, as a run.
                            if O::RETIRE_RUNS && e.idx > 0 {
                                obs.retire_run(&run!(e.idx as usize, at));
                            }
                            self.blocks.pool = pool;
                            return self.block_fault(obs, at, exc, first);
                        }};
                    }
                    // After an instruction that went through the bus or `execute`, which may
                    // have asked for a re-check (`Hart::recheck`): the block ends after it.
                    // (Nothing else changes `next_check` between two instructions, and it is
                    // not 0 when the block starts.)
                    macro_rules! check {
                        () => {
                            if self.next_check == 0 {
                                break 'ctl at!() + e.len as u64;
                            }
                        };
                    }
                    macro_rules! load {
                        ($size:expr, $ext:expr) => {{
                            let a = ea!();
                            // The RAM fast path changes nothing the loop looks at. (While
                            // loads are translated the untranslated path is closed: one test
                            // chooses.)
                            let v = if self.mmu.in_blocks[1] {
                                self.memo_load(a, $size)
                            } else {
                                self.bus.fast_load(a, $size, self.bus.open.load)
                            };
                            if let Some(v) = v {
                                Self::loaded(obs, a, $size, v);
                                w!($ext(v));
                            } else {
                                self.instret = done!() - 1;
                                match self.block_load_slow(obs, a, $size) {
                                    Ok(v) => w!($ext(v)),
                                    Err(exc) => fault!(exc),
                                }
                                check!();
                            }
                        }};
                    }
                    macro_rules! store {
                        ($size:expr) => {{
                            let a = ea!();
                            let v = x!(e.rs2);
                            let done = if self.mmu.in_blocks[2] {
                                self.memo_store(a, $size, v)
                            } else {
                                self.bus.fast_store(a, $size, v, self.bus.open.store)
                            };
                            if done {
                                // Only a re-check asked for here can end the block.
                                let again = self.after_store();
                                Self::stored(obs, a, $size, v);
                                if again {
                                    break 'ctl at!() + e.len as u64;
                                }
                            } else {
                                self.instret = done!() - 1;
                                if let Err(exc) = self.block_store_slow(obs, a, $size, v) {
                                    fault!(exc);
                                }
                                check!();
                            }
                        }};
                    }
                    macro_rules! branch {
                        ($cond:expr) => {{
                            let (a, b) = (x!(e.rs1), x!(e.rs2));
                            if $cond(a, b) {
                                break 'ctl e.imm;
                            }
                        }};
                    }
                    macro_rules! jalr {
                        () => {{
                            match self.jump_target::<RV64>(x!(e.rs1).wrapping_add(e.imm) & !1) {
                                Ok(t) => t,
                                Err(exc) => fault!(exc),
                            }
                        }};
                    }
                    // Each operation's body, for the dispatch below (alone and in fused pairs).
                    macro_rules! op {
                        (End) => {{
                            break 'blk (e.imm, e.idx as usize);
                        }};
                        (Nop) => {{}};
                        (Li) => {{
                            w!(e.imm)
                        }};
                        (Addi) => {{
                            w!(alu::add(x!(e.rs1), e.imm))
                        }};
                        (Slti) => {{
                            w!(alu::slt(x!(e.rs1), e.imm))
                        }};
                        (Sltiu) => {{
                            w!(alu::sltu(x!(e.rs1), e.imm))
                        }};
                        (Xori) => {{
                            w!(x!(e.rs1) ^ e.imm)
                        }};
                        (Ori) => {{
                            w!(x!(e.rs1) | e.imm)
                        }};
                        (Andi) => {{
                            w!(x!(e.rs1) & e.imm)
                        }};
                        (Slli) => {{
                            w!(alu::sll::<RV64>(x!(e.rs1), e.imm))
                        }};
                        (Srli) => {{
                            w!(alu::srl::<RV64>(x!(e.rs1), e.imm))
                        }};
                        (Srai) => {{
                            w!(alu::sra::<RV64>(x!(e.rs1), e.imm))
                        }};
                        (Add) => {{
                            w!(alu::add(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Sub) => {{
                            w!(alu::sub(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Sll) => {{
                            w!(alu::sll::<RV64>(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Slt) => {{
                            w!(alu::slt(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Sltu) => {{
                            w!(alu::sltu(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Xor) => {{
                            w!(x!(e.rs1) ^ x!(e.rs2))
                        }};
                        (Srl) => {{
                            w!(alu::srl::<RV64>(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Sra) => {{
                            w!(alu::sra::<RV64>(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Or) => {{
                            w!(x!(e.rs1) | x!(e.rs2))
                        }};
                        (And) => {{
                            w!(x!(e.rs1) & x!(e.rs2))
                        }};
                        (Addiw) => {{
                            w!(alu::addw(x!(e.rs1), e.imm))
                        }};
                        (Slliw) => {{
                            w!(alu::sllw(x!(e.rs1), e.imm))
                        }};
                        (Srliw) => {{
                            w!(alu::srlw(x!(e.rs1), e.imm))
                        }};
                        (Sraiw) => {{
                            w!(alu::sraw(x!(e.rs1), e.imm))
                        }};
                        (Addw) => {{
                            w!(alu::addw(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Subw) => {{
                            w!(alu::subw(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Sllw) => {{
                            w!(alu::sllw(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Srlw) => {{
                            w!(alu::srlw(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Sraw) => {{
                            w!(alu::sraw(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Mul) => {{
                            w!(alu::mul(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Mulw) => {{
                            w!(alu::mulw(x!(e.rs1), x!(e.rs2)))
                        }};
                        (Lb) => {{
                            load!(1, |v: u64| v as i8 as i64 as u64)
                        }};
                        (Lh) => {{
                            load!(2, |v: u64| v as i16 as i64 as u64)
                        }};
                        (Lw) => {{
                            load!(4, |v: u64| v as i32 as i64 as u64)
                        }};
                        (Ld) => {{
                            load!(8, |v: u64| v)
                        }};
                        (Lbu) => {{
                            load!(1, |v: u64| v)
                        }};
                        (Lhu) => {{
                            load!(2, |v: u64| v)
                        }};
                        (Lwu) => {{
                            load!(4, |v: u64| v)
                        }};
                        (Sb) => {{
                            store!(1)
                        }};
                        (Sh) => {{
                            store!(2)
                        }};
                        (Sw) => {{
                            store!(4)
                        }};
                        (Sd) => {{
                            store!(8)
                        }};
                        // Sign-extended RV32 values keep their unsigned order.
                        (Beq) => {{
                            branch!(|a, b| a == b)
                        }};
                        (Bne) => {{
                            branch!(|a, b| a != b)
                        }};
                        (Blt) => {{
                            branch!(|a, b| (a as i64) < (b as i64))
                        }};
                        (Bge) => {{
                            branch!(|a, b| (a as i64) >= (b as i64))
                        }};
                        (Bltu) => {{
                            branch!(|a, b| a < b)
                        }};
                        (Bgeu) => {{
                            branch!(|a, b| a >= b)
                        }};
                        (J) => {{
                            break 'ctl e.imm;
                        }};
                        (Jg) => {{}};
                        (Jalg) => {{
                            w!(at!() + e.len as u64)
                        }};
                        (Jal) => {{
                            w!(at!() + e.len as u64);
                            break 'ctl e.imm;
                        }};
                        (Jr) => {{
                            break 'ctl jalr!();
                        }};
                        (Jalr) => {{
                            let t = jalr!();
                            w!(at!() + e.len as u64);
                            break 'ctl t;
                        }};
                        (Other) => {{
                            self.instret = done!() - 1;
                            let insn = self.blocks.insns[e.imm as usize];
                            match self.execute_other::<O, RV64>(obs, &insn, e.bits, at!()) {
                                Ok(t) if t == at!() + e.len as u64 => check!(),
                                Ok(t) => break 'ctl t,
                                Err(exc) => fault!(exc),
                            }
                        }};
                    }
                    // Retire the first of a fused pair (it goes on in the block) and go on to
                    // the second's entry.
                    macro_rules! step {
                        () => {{
                            retire!(wrap!((pc & !0xfff) + e.next as u64));
                            i += 1;
                            e = &blk[(i - 1) & (POOL - 1)];
                        }};
                    }
                    // A fused sequence: each operation and, if it goes on, the next.
                    macro_rules! chain {
                        ($a:ident) => {
                            op!($a)
                        };
                        ($a:ident $($r:ident)+) => {{
                            op!($a);
                            step!();
                            chain!($($r)+)
                        }};
                    }
                    macro_rules! dispatch {
                        ($($p:ident = $($k:ident)+),* $(,)?) => {
                            match if fused { e.fused } else { e.k } {
                                K::End => op!(End),
                                K::Nop => op!(Nop),
                                K::Li => op!(Li),
                                K::Addi => op!(Addi),
                                K::Slti => op!(Slti),
                                K::Sltiu => op!(Sltiu),
                                K::Xori => op!(Xori),
                                K::Ori => op!(Ori),
                                K::Andi => op!(Andi),
                                K::Slli => op!(Slli),
                                K::Srli => op!(Srli),
                                K::Srai => op!(Srai),
                                K::Add => op!(Add),
                                K::Sub => op!(Sub),
                                K::Sll => op!(Sll),
                                K::Slt => op!(Slt),
                                K::Sltu => op!(Sltu),
                                K::Xor => op!(Xor),
                                K::Srl => op!(Srl),
                                K::Sra => op!(Sra),
                                K::Or => op!(Or),
                                K::And => op!(And),
                                K::Addiw => op!(Addiw),
                                K::Slliw => op!(Slliw),
                                K::Srliw => op!(Srliw),
                                K::Sraiw => op!(Sraiw),
                                K::Addw => op!(Addw),
                                K::Subw => op!(Subw),
                                K::Sllw => op!(Sllw),
                                K::Srlw => op!(Srlw),
                                K::Sraw => op!(Sraw),
                                K::Mul => op!(Mul),
                                K::Mulw => op!(Mulw),
                                K::Lb => op!(Lb),
                                K::Lh => op!(Lh),
                                K::Lw => op!(Lw),
                                K::Ld => op!(Ld),
                                K::Lbu => op!(Lbu),
                                K::Lhu => op!(Lhu),
                                K::Lwu => op!(Lwu),
                                K::Sb => op!(Sb),
                                K::Sh => op!(Sh),
                                K::Sw => op!(Sw),
                                K::Sd => op!(Sd),
                                K::Beq => op!(Beq),
                                K::Bne => op!(Bne),
                                K::Blt => op!(Blt),
                                K::Bge => op!(Bge),
                                K::Bltu => op!(Bltu),
                                K::Bgeu => op!(Bgeu),
                                K::J => op!(J),
                                K::Jg => op!(Jg),
                                K::Jalg => op!(Jalg),
                                K::Jal => op!(Jal),
                                K::Jr => op!(Jr),
                                K::Jalr => op!(Jalr),
                                K::Other => op!(Other),
                                // (`if fused`: the other observers' run does not compile
                                // the fused code; it never meets a fused operation.)
                                $(K::$p => if fused { chain!($($k)+) } else { unreachable!() },)*
                            }
                        };
                    }
                    fused_ops!(dispatch);
                    retire!(wrap!((pc & !0xfff) + e.next as u64));
                    continue 'blk;
                };
                retire!(t);
                break (t, e.idx as usize + 1);
            };
            // `RETIRE_RUNS` observers: the block's instructions at once.
            if O::RETIRE_RUNS {
                obs.retire_run(&run!(count, next));
                if obs.stop_requested() {
                    left -= count as u64;
                    pc = next;
                    break 'chain Ran::Stop(Stop::Requested);
                }
            }
            left -= count as u64;
            pc = next;
            if left == 0 || self.next_check == 0 {
                break Ran::Yes;
            }
            // The entry the block left from.
            let xi = (i - 1) & (POOL - 1);
            let x = &blk[xi];
            if x.link_gen == self.bus.code_epoch as u32 {
                (start, n) = ((x.link >> 8) as usize, x.link & 0xff);
                continue;
            }
            exit = if links(x.k) { xi } else { NONE };
            (start, n) = lookup!();
        };
        self.instret = first + (left0 - left);
        self.blocks.pool = pool;
        self.pc = pc;
        if self.instret != first {
            self.trap_loop.last_handler = None;
            self.trap_loop.traps_without_retire = 0;
        }
        out
    }

    /// The instruction at `at` of a block raised `exc` (`instret` counts the instructions
    /// before it).
    #[cold]
    #[inline(never)]
    fn block_fault<O: Observer>(&mut self, obs: &mut O, at: u64, exc: Exc, first: u64) -> Ran {
        self.pc = at;
        if self.instret != first {
            self.trap_loop.last_handler = None;
            self.trap_loop.traps_without_retire = 0;
        }
        match self.instruction_fault(obs, at, exc) {
            Some(stop) => Ran::Stop(stop),
            None => Ran::Yes,
        }
    }

    /// A block's load off the RAM fast path (`instret` is written).
    #[cold]
    #[inline(never)]
    fn block_load_slow<O: Observer>(&mut self, obs: &mut O, a: u64, size: u64) -> Result<u64, Exc> {
        self.mem_load(obs, a, size)
    }

    /// A block's store off the RAM fast path (`instret` is written).
    #[cold]
    #[inline(never)]
    fn block_store_slow<O: Observer>(
        &mut self,
        obs: &mut O,
        a: u64,
        size: u64,
        v: u64,
    ) -> Result<(), Exc> {
        self.mem_store(obs, a, size, v)
    }

    /// [`Hart::execute`] out of line: the block loop stays small.
    #[inline(never)]
    fn execute_other<O: Observer, const RV64: bool>(
        &mut self,
        obs: &mut O,
        i: &Insn,
        bits: u32,
        pc: u64,
    ) -> Result<u64, Exc> {
        self.execute::<O, RV64>(obs, i, bits, pc)
    }

    /// The physical address of the code at `pc` if blocks may run from it: `pc` itself while
    /// untranslated fetches from RAM take the fast path, or its address in a page a recent
    /// translated fetch found when translated fetches from RAM need no PMP or trigger check
    /// (the pages are forgotten at every change that could change their translation: `Memo`).
    #[inline(always)]
    pub(crate) fn block_fetch(&self, pc: u64) -> Option<u64> {
        if pc.wrapping_sub(RAM_BASE) < self.bus.open.fetch {
            return Some(pc);
        }
        let m = self.mmu.memo_of(pc, 0);
        let off = pc.wrapping_sub(m.va_page);
        (self.mmu.in_blocks[0] && off < 0x1000).then(|| m.pa_page + off)
    }

    /// A translated load of `size` bytes at `va` in a page a recent load found (call while
    /// blocks may use them, `Mmu::in_blocks`): what `mem_load` does there (no trigger, no PMP
    /// check). The TLB event is not counted: the plain loop's events are never read (the
    /// instrumented loop steps and takes them per instruction).
    #[inline(always)]
    fn memo_load(&mut self, va: u64, size: u64) -> Option<u64> {
        let off = self.mmu.memo_offset(va, size, 1)?;
        self.bus.ram_load(off, size)
    }

    /// A translated store, as [`Hart::memo_load`]; false if not done.
    #[inline(always)]
    fn memo_store(&mut self, va: u64, size: u64, v: u64) -> bool {
        match self.mmu.memo_offset(va, size, 2) {
            Some(off) => self.bus.ram_store_page(off, size, v),
            None => false,
        }
    }

    /// The block at `pc` when head `idx` is not known current: its page's generation says
    /// whether it still is, else the victims may hold it ([`Blocks::recall`]), else it is
    /// decoded afresh.
    #[cold]
    #[inline(never)]
    fn find_block(&mut self, pc: u64, pa: u64, idx: usize) -> Head {
        let gen = self.bus.code_gen(pa);
        let h = &self.blocks.heads[idx];
        if (h.pc == pc && h.pa == pa && h.gen == gen) || self.blocks.recall(idx, pc, pa, gen) {
            let h = &mut self.blocks.heads[idx];
            h.epoch = self.bus.code_epoch;
            return *h;
        }
        self.build_block(pc, pa, idx)
    }

    /// Decode the block at `pc` (physical address `pa`, in RAM) into head `idx`.
    fn build_block(&mut self, pc: u64, pa: u64, idx: usize) -> Head {
        if self.blocks.pool.len() != POOL {
            self.blocks.pool.resize(POOL, Entry::default());
        }
        // Room for the block and its `End`.
        if self.blocks.used + MAX_INSNS + 1 > POOL {
            self.blocks.used = 0;
            self.blocks.serial = next_pool_serial();
            self.blocks.insns.clear();
            self.blocks.forget();
        }
        let start = self.blocks.used;
        let rv64 = self.xlen == rvtrace_isa::Xlen::Rv64;
        // (`Blocks::unlink`.)
        let unlinked = (self.bus.code_epoch as u32).wrapping_sub(1);
        let mut a = pc;
        while self.blocks.used - start < MAX_INSNS {
            // Four bytes of RAM (a 16-bit instruction in the last parcel of RAM steps).
            // (A block lies in one page: `a`'s physical address has `pa`'s page.)
            let Some(raw) = self
                .bus
                .fast_fetch(pa & !0xfff | a & 0xfff, self.bus.ram_size())
            else {
                break;
            };
            let insn = decode(raw, self.xlen, &self.ext);
            // An instruction crossing into the next page steps (its second parcel is another
            // page's code).
            if runs_alone(insn.op) || (a & 0xfff) + insn.len as u64 > 0x1000 {
                break;
            }
            let mask = if insn.len == 2 { 0xffff } else { 0xffff_ffff };
            let (mut k, mut imm) = kind(&insn, a, self.ext.c, rv64);
            let off = a & 0xfff;
            let fall = off + insn.len as u64;
            // A `jal` to the same page goes on at its target; so does a backward branch to
            // the same page (mostly a loop's, mostly taken): it becomes the opposite branch
            // leaving to the fall-through.
            let next = match k {
                K::Jg | K::Jalg => imm & 0xfff,
                K::Beq | K::Bne | K::Blt | K::Bge | K::Bltu | K::Bgeu
                    if imm < a && (imm ^ a) >> 12 == 0 =>
                {
                    let t = imm & 0xfff;
                    (k, imm) = (opposite(k), self.trunc(a.wrapping_add(insn.len as u64)));
                    t
                }
                K::Other => {
                    imm = self.blocks.insns.len() as u64;
                    self.blocks.insns.push(insn);
                    fall
                }
                _ => fall,
            };
            self.blocks.pool[self.blocks.used] = Entry {
                k,
                fused: k,
                idx: (self.blocks.used - start) as u8,
                class: classify(&self.isa, raw).class,
                off: off as u16,
                next: next as u16,
                bits: raw & mask,
                rd: R::of(insn.rd),
                rs1: R::of(insn.rs1),
                rs2: R::of(insn.rs2),
                len: insn.len,
                imm,
                link_gen: unlinked,
                ..Entry::default()
            };
            self.blocks.used += 1;
            a = self.trunc((a & !0xfff).wrapping_add(next));
            // (A `jal` to the same page goes on decoding at its target.)
            if (ends_block(insn.op) && !matches!(k, K::Jg | K::Jalg)) || next == 0x1000 {
                break;
            }
        }
        let n = self.blocks.used - start;
        // Fused sequences, left to right (the pool holds a block's instructions in the order it
        // runs them when none leaves).
        let mut ks = [K::Other; MAX_INSNS];
        for (k, e) in ks
            .iter_mut()
            .zip(&self.blocks.pool[start..self.blocks.used])
        {
            *k = e.k;
        }
        let ks = &ks[..n];
        let mut j = 0;
        while j < ks.len() {
            match fuse(&ks[j..]) {
                Some((k, len)) => {
                    self.blocks.pool[start + j].fused = k;
                    j += len;
                }
                None => j += 1,
            }
        }
        if n > 0 {
            // Where the block goes on when its last instruction does not leave.
            self.blocks.pool[self.blocks.used] = Entry {
                k: K::End,
                fused: K::End,
                idx: n as u8,
                imm: a,
                link_gen: unlinked,
                ..Entry::default()
            };
            self.blocks.used += 1;
        }
        let gen = self.bus.mark_code(pa);
        let h = Head {
            pc,
            pa,
            gen,
            epoch: self.bus.code_epoch,
            start: start as u32,
            n: n as u32,
        };
        self.blocks.place(idx, h);
        h
    }

    /// An instruction at `pc` raised `exc` and does not retire: the trap, then the trap-loop
    /// rules and the observer's stop request.
    #[cold]
    pub(crate) fn instruction_fault<O: Observer>(
        &mut self,
        obs: &mut O,
        pc: u64,
        exc: Exc,
    ) -> Option<Stop> {
        let trap = self.take_trap(exc.cause, exc.tval, false, pc);
        obs.trap(&trap);
        self.note_fault(trap);
        obs.stop_requested().then_some(Stop::Requested)
    }
}

/// Instructions of a block that retired, as an [`Observer::retire_run`] sees them.
struct BlockRun<'a, const RV64: bool> {
    blk: &'a [Entry],
    /// The block's decoding ([`RetiredRun::block_id`]: pool serial and start).
    id: u64,
    /// The block's page.
    page: u64,
    priv_: u8,
    /// `mtime` before the first instruction retired.
    mtime0: u64,
    /// The pc after the last instruction and its `mtime`.
    last_next: u64,
    last_mtime: u64,
}

impl<const RV64: bool> RetiredRun for BlockRun<'_, RV64> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.blk.len()
    }

    #[inline(always)]
    fn get(&self, i: usize) -> Retired {
        let e = &self.blk[i];
        let last = i + 1 == self.blk.len();
        let next = self.page + e.next as u64;
        Retired {
            pc: self.page + e.off as u64,
            insn: e.bits,
            len: e.len,
            class: e.class,
            next_pc: match (last, RV64) {
                (true, _) => self.last_next,
                (false, true) => next,
                (false, false) => next & 0xffff_ffff,
            },
            priv_: self.priv_,
            trap: None,
            serviced: None,
            mtime: if last {
                self.last_mtime
            } else {
                self.mtime0.wrapping_add(i as u64 + 1)
            },
        }
    }

    /// From the entry alone: an instruction before the last goes on at its entry's `next`,
    /// in the page (only a block's last instruction goes on in the next page).
    #[inline(always)]
    fn step(&self, i: usize) -> RunStep {
        let e = &self.blk[i];
        RunStep {
            pc: self.page + e.off as u64,
            len: e.len,
            class: e.class,
            taken: e.next != e.off + e.len as u16,
        }
    }

    #[inline(always)]
    fn mtime(&self, i: usize) -> u64 {
        if i + 1 == self.blk.len() {
            self.last_mtime
        } else {
            self.mtime0.wrapping_add(i as u64 + 1)
        }
    }

    #[inline(always)]
    fn insn(&self, i: usize) -> u32 {
        self.blk[i].bits
    }

    #[inline(always)]
    fn priv_(&self) -> u8 {
        self.priv_
    }

    /// From the last entry and where the run went on.
    #[inline(always)]
    fn last_step(&self) -> RunStep {
        let e = &self.blk[self.blk.len() - 1];
        let pc = self.page + e.off as u64;
        RunStep {
            pc,
            len: e.len,
            class: e.class,
            taken: self.last_next != pc.wrapping_add(e.len as u64),
        }
    }

    /// The pool's entries from the block's start: the same while the block's decoding is.
    #[inline(always)]
    fn block_id(&self) -> Option<u64> {
        Some(self.id)
    }

    #[inline(always)]
    fn steps(&self, from: usize, to: usize) -> impl Iterator<Item = RunStep> + '_ {
        let page = self.page;
        self.blk[from..to].iter().map(move |e| RunStep {
            pc: page + e.off as u64,
            len: e.len,
            class: e.class,
            taken: e.next != e.off + e.len as u16,
        })
    }
}
