//! Pre-decoded blocks: the plain loop's fast path (crates/sim/README.md, "Blocks").
//!
//! From a pc in RAM the hart decodes straight-line code up to and including a control transfer
//! (branch, `jal`, `jalr`), stopping before an instruction that must run alone (CSR and system
//! instructions, `fence.i`, `ecall`/`ebreak`, encodings the base ISA does not define), before a
//! page end and at [`MAX_INSNS`]. A block then runs without a fetch, a PMP fetch check or a
//! decode-cache compare per instruction; everything else is as in the single-step loop, and
//! the block stops wherever that loop would look at the hart between two instructions
//! (`instret` reaching `next_check`: interrupts, timers, `--max-insns`, a write to code).
//!
//! Blocks are used only where they are exactly equivalent: in the plain loop (the instrumented
//! one steps), while fetches take the PMP fast path (not translated, no execute trigger armed:
//! `Bus::open`), from RAM. Every write to RAM (stores, AMOs, SC, page-table A/D updates,
//! loading, extensions' writes such as semihosting `SYS_READ`) goes through the bus, which
//! bumps the code generation of a page blocks were decoded from (`Bus::code_written`); a block
//! is valid only while its page's generation is the one it was decoded under, and the write
//! also ends the running block (QEMU 7.2 likewise ends a translation block that writes its own
//! page, so the very next instruction executes the new bits).

use crate::alu;
use crate::bus::RAM_BASE;
use crate::decode::{decode, Insn, Op};
use crate::hart::{Exc, Hart, Stop};
use crate::observer::{Observer, Retired, RetiredRun, RunStep};
use rvtrace_isa::{classify, CfClass};

/// Most instructions in one block.
pub(crate) const MAX_INSNS: usize = 32;
/// Block heads (a direct-mapped table indexed by the pc).
const HEAD_BITS: u32 = 12;
/// Decoded instructions held before the pool is emptied and blocks are decoded afresh.
const POOL: usize = 1 << 16;

#[derive(Clone, Copy)]
struct Head {
    /// Start pc (1: none).
    pc: u64,
    /// The code generation of the page when decoded (`Bus::code_gen`).
    gen: u64,
    /// The `Bus::code_epoch` under which `gen` was last found current.
    epoch: u64,
    /// First instruction in the pool.
    start: u32,
    /// Instructions (0: the first instruction must run alone).
    n: u32,
}

/// The fused sequences (issue 15): `Name = First Second ...` is an entry running `First` and,
/// when it goes on to the next instruction, `Second` (the next entry) and so on, with no
/// dispatch between them. Each still retires as its own instruction (the later entries stay in
/// the pool and keep their positions, so `instret`, faults and stop requests see each as in the
/// single-step loop). All but the last are operations that can go on in the block; none is
/// `Other`. Chosen from the pairs and triples compiled code runs most (the benchmark workload,
/// CoreMark); triples first (the longest match wins).
macro_rules! fused_ops {
    ($m:ident) => {
        $m! {
            MulwAddwBne = Mulw Addw Bne, SdAddBne = Sd Add Bne, LdBeqLd = Ld Beq Ld,
            AddAddBltu = Add Add Bltu, AddiwSlliAdd = Addiw Slli Add, SbAddiAddi = Sb Addi Addi,
            SwSwBlt = Sw Sw Blt, AddiXorBne = Addi Xor Bne, AddiSlliAdd = Addi Slli Add,
            SlliSlliSrli = Slli Slli Srli, SrliAddAdd = Srli Add Add, LhLhAddiw = Lh Lh Addiw,
            AddLdSd = Add Ld Sd, BgeLwBltu = Bge Lw Bltu, AddiwSlliwJ = Addiw Slliw J,
            AddiwSlliwJg = Addiw Slliw Jg, LwAddJr = Lw Add Jr, BeqAddiJ = Beq Addi J,
            BeqAddiJg = Beq Addi Jg, AddiwAndiAddi = Addiw Andi Addi,
            SlliAdd = Slli Add, LwAdd = Lw Add, AddLw = Add Lw, AddiBne = Addi Bne, AddiAddi = Addi Addi,
            AddiwSlli = Addiw Slli, AddAdd = Add Add, AddSw = Add Sw, AddBltu = Add Bltu,
            AddSlliw = Add Slliw, SlliwBeq = Slliw Beq, SwSw = Sw Sw, BeqLw = Beq Lw, SwBlt = Sw Blt,
            BgeLw = Bge Lw, LwBltu = Lw Bltu, SbAddi = Sb Addi, BltuSlli = Bltu Slli,
            XorAddiw = Xor Addiw, AddiwAddiw = Addiw Addiw, AddiAdd = Addi Add, AddiwBne = Addiw Bne,
            AddwBne = Addw Bne, AndiSubw = Andi Subw, SubwSrliw = Subw Srliw, SrliwAnd = Srliw And,
            AndXor = And Xor, AddiwSlliw = Addiw Slliw, LwLw = Lw Lw, SlliSrli = Slli Srli,
            SrliAdd = Srli Add, AddiBeq = Addi Beq, AddiwAddw = Addiw Addw, AndiAndi = Andi Andi,
            AddLd = Add Ld, SdAdd = Sd Add, AddBne = Add Bne, AddLh = Add Lh, LhLh = Lh Lh,
            LdSd = Ld Sd, BeqAddi = Beq Addi, MulwAddw = Mulw Addw, LhAddiw = Lh Addiw,
            BeqLd = Beq Ld, SlliSlli = Slli Slli, SrliSrli = Srli Srli, AddwMulw = Addw Mulw,
            LdBeq = Ld Beq, AndiAddi = Andi Addi, SrliAndi = Srli Andi, AddiwSrli = Addiw Srli,
            SrliBeq = Srli Beq, XorSrli = Xor Srli, AndiXor = Andi Xor, AddiwAndi = Addiw Andi,
            LdLd = Ld Ld, SdSd = Sd Sd, LdAddi = Ld Addi, AddiSd = Addi Sd, AddiwSw = Addiw Sw,
            AddiBltu = Addi Bltu, LhBne = Lh Bne, LbuBne = Lbu Bne, SwBne = Sw Bne,
            MulwSraiw = Mulw Sraiw, SraiwSraiw = Sraiw Sraiw, AddiwSraiw = Addiw Sraiw,
            AddiAddiw = Addi Addiw, LdLh = Ld Lh, LdLbu = Ld Lbu, AddiwLd = Addiw Ld,
            LbuAddiw = Lbu Addiw, SlliSlt = Slli Slt,
            AddiSlli = Addi Slli, AddSlli = Add Slli, SlliBeq = Slli Beq, SlliAddi = Slli Addi,
            AddiXor = Addi Xor, XorBne = Xor Bne, AndiSub = Andi Sub, SubSrli = Sub Srli,
            SrliAnd = Srli And, AndAddi = And Addi, LbuAddi = Lbu Addi, SwAddi = Sw Addi,
            AddAddi = Add Addi, LbuBltu = Lbu Bltu, AddiJ = Addi J, AddiJg = Addi Jg,
            SlliwJ = Slliw J, SlliwJg = Slliw Jg, LwJr = Lw Jr, AddJr = Add Jr, LdJr = Ld Jr,
            SwJ = Sw J, SwJg = Sw Jg,
        }
    };
}

macro_rules! define_k {
    ($($p:ident = $($k:ident)+),* $(,)?) => {
        /// A block instruction's operation, resolved when the block is decoded, so that running it
        /// needs no look at the full [`Insn`]: the common operations with their operands in the
        /// [`Entry`] (an ALU operation writing `x0` is `Nop`, so the others write without a test of
        /// `rd`; `lui`/`auipc` load a constant; a branch's or `jal`'s target is computed and checked for
        /// alignment once), everything else `Other` (through [`Hart::execute`]).
        #[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
        #[repr(u8)]
        enum K {
            #[default]
            Other,
            Nop,
            Li,
            Addi,
            Slti,
            Sltiu,
            Xori,
            Ori,
            Andi,
            Slli,
            Srli,
            Srai,
            Add,
            Sub,
            Sll,
            Slt,
            Sltu,
            Xor,
            Srl,
            Sra,
            Or,
            And,
            Addiw,
            Slliw,
            Srliw,
            Sraiw,
            Addw,
            Subw,
            Sllw,
            Srlw,
            Sraw,
            Mul,
            Mulw,
            Lb,
            Lh,
            Lw,
            Ld,
            Lbu,
            Lhu,
            Lwu,
            Sb,
            Sh,
            Sw,
            Sd,
            Beq,
            Bne,
            Blt,
            Bge,
            Bltu,
            Bgeu,
            /// `jal x0`.
            J,
            /// `jal rd` (rd not x0).
            Jal,
            /// `jal x0` to the same page: the block goes on at the target.
            Jg,
            /// `jal rd` (rd not x0) to the same page: the block goes on at the target.
            Jalg,
            /// `jalr x0`.
            Jr,
            /// `jalr rd` (rd not x0).
            Jalr,
            /// Not an instruction: the end of a block that leaves without a control transfer, the
            /// pc it goes on at in `imm` (every block ends with a control transfer or this, so the
            /// block loop needs no count).
            End,
            $(
                #[doc = concat!("Fused:", $(" `", stringify!($k), "`",)+ ".")]
                $p,
            )*
        }

        /// The fused operation for the operations `ks` start with, if there is one, and how
        /// many it runs (the longest: triples come before pairs in `fused_ops!`).
        fn fuse(ks: &[K]) -> Option<(K, usize)> {
            match ks {
                $([$(K::$k),+, ..] => Some((K::$p, [$(stringify!($k)),+].len())),)*
                _ => None,
            }
        }
    };
}

fused_ops!(define_k);

/// An integer register number: indexing the register file with it needs no bounds check (the
/// compiler knows it is below 32).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
#[repr(u8)]
#[rustfmt::skip]
enum R {
    #[default]
    X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15,
    X16, X17, X18, X19, X20, X21, X22, X23, X24, X25, X26, X27, X28, X29, X30, X31,
}

impl R {
    /// Register `r` (its low 5 bits).
    fn of(r: u8) -> R {
        use R::*;
        #[rustfmt::skip]
        const ALL: [R; 32] = [
            X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15,
            X16, X17, X18, X19, X20, X21, X22, X23, X24, X25, X26, X27, X28, X29, X30, X31,
        ];
        ALL[(r & 31) as usize]
    }
}

/// One decoded instruction of a block (24 bytes).
#[derive(Clone, Copy, Default)]
struct Entry {
    k: K,
    /// What the run with a quiet observer ([`Observer::QUIET`]) or one that takes runs
    /// ([`Observer::RETIRE_RUNS`]) does here: the fused operation that starts here, or `k`.
    /// Other observers run `k`, so the fused dispatch is not compiled into their runs.
    fused: K,
    class: CfClass,
    /// Position in the block.
    idx: u8,
    /// Registers (as decoded; `Other` reads its full decoding instead).
    rd: R,
    rs1: R,
    rs2: R,
    /// Length in bytes.
    len: u8,
    /// Offset of the instruction in its page (a block lies in one page).
    off: u16,
    /// Offset in the page of the pc the block goes on at after this instruction when it does
    /// not leave (0x1000: the next page).
    next: u16,
    /// The instruction's bits (16-bit instructions in the low half).
    bits: u32,
    /// The immediate, sign-extended; a branch's or `jal`'s target; `Li`'s value; for `Other`
    /// the index of its full decoding in `Blocks::insns`.
    imm: u64,
}

/// The block operation for `i` at `pc` (`next` = the pc after it, XLEN-wrapped).
fn kind(i: &Insn, pc: u64, c: bool, rv64: bool) -> (K, u64) {
    let imm = i.imm as i64 as u64;
    let wrap = |a: u64| if rv64 { a } else { a & 0xffff_ffff };
    // Without C a target that is not 4-byte aligned faults at the jump (`Hart::jump_target`):
    // left to `execute`.
    let target = wrap(pc.wrapping_add(imm));
    let aligned = c || target & 2 == 0;
    let alu = |k: K| if i.rd == 0 { K::Nop } else { k };
    let load = |k: K| if i.rd == 0 { K::Other } else { k };
    let branch = |k: K| if aligned { (k, target) } else { (K::Other, 0) };
    match i.op {
        Op::Lui => (alu(K::Li), imm),
        Op::Auipc => (alu(K::Li), pc.wrapping_add(imm)),
        Op::Addi => (alu(K::Addi), imm),
        Op::Slti => (alu(K::Slti), imm),
        Op::Sltiu => (alu(K::Sltiu), imm),
        Op::Xori => (alu(K::Xori), imm),
        Op::Ori => (alu(K::Ori), imm),
        Op::Andi => (alu(K::Andi), imm),
        Op::Slli => (alu(K::Slli), imm),
        Op::Srli => (alu(K::Srli), imm),
        Op::Srai => (alu(K::Srai), imm),
        Op::Add => (alu(K::Add), 0),
        Op::Sub => (alu(K::Sub), 0),
        Op::Sll => (alu(K::Sll), 0),
        Op::Slt => (alu(K::Slt), 0),
        Op::Sltu => (alu(K::Sltu), 0),
        Op::Xor => (alu(K::Xor), 0),
        Op::Srl => (alu(K::Srl), 0),
        Op::Sra => (alu(K::Sra), 0),
        Op::Or => (alu(K::Or), 0),
        Op::And => (alu(K::And), 0),
        Op::Addiw => (alu(K::Addiw), imm),
        Op::Slliw => (alu(K::Slliw), imm),
        Op::Srliw => (alu(K::Srliw), imm),
        Op::Sraiw => (alu(K::Sraiw), imm),
        Op::Addw => (alu(K::Addw), 0),
        Op::Subw => (alu(K::Subw), 0),
        Op::Sllw => (alu(K::Sllw), 0),
        Op::Srlw => (alu(K::Srlw), 0),
        Op::Sraw => (alu(K::Sraw), 0),
        Op::Mul => (alu(K::Mul), 0),
        Op::Mulw => (alu(K::Mulw), 0),
        Op::Lb => (load(K::Lb), imm),
        Op::Lh => (load(K::Lh), imm),
        Op::Lw => (load(K::Lw), imm),
        Op::Ld => (load(K::Ld), imm),
        Op::Lbu => (load(K::Lbu), imm),
        Op::Lhu => (load(K::Lhu), imm),
        Op::Lwu => (load(K::Lwu), imm),
        Op::Sb => (K::Sb, imm),
        Op::Sh => (K::Sh, imm),
        Op::Sw => (K::Sw, imm),
        Op::Sd => (K::Sd, imm),
        Op::Beq => branch(K::Beq),
        Op::Bne => branch(K::Bne),
        Op::Blt => branch(K::Blt),
        Op::Bge => branch(K::Bge),
        Op::Bltu => branch(K::Bltu),
        Op::Bgeu => branch(K::Bgeu),
        Op::Jal => match (branch(K::J).0, i.rd == 0, (target ^ pc) >> 12 == 0) {
            (K::Other, _, _) => (K::Other, 0),
            (_, true, same) => (if same { K::Jg } else { K::J }, target),
            (_, false, same) => (if same { K::Jalg } else { K::Jal }, target),
        },
        Op::Jalr => (if i.rd == 0 { K::Jr } else { K::Jalr }, imm),
        _ => (K::Other, 0),
    }
}

/// The block cache.
pub(crate) struct Blocks {
    /// Whether the plain loop uses blocks ([`Hart::set_blocks`]).
    pub(crate) on: bool,
    heads: Box<[Head; 1 << HEAD_BITS]>,
    /// [`POOL`] entries once the first block is decoded.
    pool: Vec<Entry>,
    /// Entries of the pool in use.
    used: usize,
    /// The full decodings of the pool's `Other` entries.
    insns: Vec<Insn>,
    /// This filling of the pool, unique in the process ([`next_pool_serial`]): entries are
    /// written once per filling, so a block's pool start and this serial name its decoding
    /// ([`RetiredRun::block_id`]).
    serial: u64,
}

/// A serial for a new filling of a pool (of any hart): block ids ([`RetiredRun::block_id`])
/// are never reused in the process, even by a recorder given the runs of several harts.
fn next_pool_serial() -> u64 {
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Default for Blocks {
    fn default() -> Blocks {
        Blocks {
            on: true,
            heads: Box::new(
                [Head {
                    pc: 1,
                    gen: 0,
                    epoch: 0,
                    start: 0,
                    n: 0,
                }; 1 << HEAD_BITS],
            ),
            pool: Vec::new(),
            used: 0,
            insns: Vec::new(),
            serial: next_pool_serial(),
        }
    }
}

/// What [`Hart::run_block`] did.
pub(crate) enum Ran {
    /// Nothing: the instruction at the pc must run alone (single step).
    No,
    /// One or more instructions retired (or the first faulted); the loop goes on.
    Yes,
    /// The run stops.
    Stop(Stop),
}

/// Instructions that run alone: they read or change state the block does not follow (CSRs,
/// privilege, translation, the instruction stream) or are offered to extensions.
fn runs_alone(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        Illegal
            | FenceI
            | Ecall
            | Ebreak
            | Mret
            | Sret
            | Wfi
            | SfenceVma
            | Csrrw
            | Csrrs
            | Csrrc
            | Csrrwi
            | Csrrsi
            | Csrrci
    )
}

/// The branch taken when `k` is not.
fn opposite(k: K) -> K {
    match k {
        K::Beq => K::Bne,
        K::Bne => K::Beq,
        K::Blt => K::Bge,
        K::Bge => K::Blt,
        K::Bltu => K::Bgeu,
        _ => K::Bltu,
    }
}

/// Control transfers: the last instruction of a block.
fn ends_block(op: Op) -> bool {
    use Op::*;
    matches!(op, Jal | Jalr)
}

impl Hart {
    /// Use pre-decoded blocks in the plain loop (on by default), or step every instruction
    /// through the fetch and the decode cache. The two are equivalent in every observable
    /// effect (crates/sim/tests/blocks.rs); off is for that comparison.
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
        let left0 = self.next_check - first;
        let mut left = left0;
        // The pool is not touched while blocks run (writes change generations only).
        let mut pool = std::mem::take(&mut self.blocks.pool);
        let out = 'chain: loop {
            let idx = ((pc >> 1) as usize) & ((1 << HEAD_BITS) - 1);
            let mut h = self.blocks.heads[idx];
            if h.pc != pc || h.epoch != self.bus.code_epoch {
                self.blocks.pool = pool;
                h = self.find_block(pc, idx);
                pool = std::mem::take(&mut self.blocks.pool);
            }
            // `instret` at the start of the block.
            macro_rules! base {
                () => {
                    first + (left0 - left)
                };
            }
            // A block runs whole or not at all (near `next_check` the single-step loop runs),
            // so that it needs no count of its instructions; `n` = 0: the instruction runs
            // alone (one compare for both).
            if (h.n as u64).wrapping_sub(1) >= left {
                break if left == left0 { Ran::No } else { Ran::Yes };
            }
            // (The pool has POOL entries once a block was decoded.)
            let Ok(blk) = <&[Entry; POOL]>::try_from(pool.as_slice()) else {
                break if left == left0 { Ran::No } else { Ran::Yes };
            };
            let mut i = h.start as usize;
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
            let id = self.blocks.serial * POOL as u64 + h.start as u64;
            macro_rules! run {
                ($n:expr, $next:expr) => {
                    BlockRun::<RV64> {
                        blk: &blk[h.start as usize..h.start as usize + $n],
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
                            // The RAM fast path changes nothing the loop looks at.
                            if let Some(v) = self.bus.fast_load(a, $size, self.bus.open.load) {
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
                            if self.bus.fast_store(a, $size, v, self.bus.open.store) {
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
            if left == 0 || self.next_check == 0 || pc.wrapping_sub(RAM_BASE) >= self.bus.open.fetch
            {
                break Ran::Yes;
            }
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

    /// The block at `pc` when head `idx` is not known current: its page's generation says
    /// whether it still is, else it is decoded afresh.
    #[cold]
    #[inline(never)]
    fn find_block(&mut self, pc: u64, idx: usize) -> Head {
        let h = &mut self.blocks.heads[idx];
        if h.pc == pc && h.gen == self.bus.code_gen(pc) {
            h.epoch = self.bus.code_epoch;
            return *h;
        }
        self.build_block(pc, idx)
    }

    /// Decode the block at `pc` into head `idx`.
    fn build_block(&mut self, pc: u64, idx: usize) -> Head {
        if self.blocks.pool.len() != POOL {
            self.blocks.pool.resize(POOL, Entry::default());
        }
        // Room for the block and its `End`.
        if self.blocks.used + MAX_INSNS + 1 > POOL {
            self.blocks.used = 0;
            self.blocks.serial = next_pool_serial();
            self.blocks.insns.clear();
            for h in self.blocks.heads.iter_mut() {
                h.pc = 1;
            }
        }
        let start = self.blocks.used;
        let rv64 = self.xlen == rvtrace_isa::Xlen::Rv64;
        let mut a = pc;
        while self.blocks.used - start < MAX_INSNS {
            // Four bytes of RAM (a 16-bit instruction in the last parcel of RAM steps).
            let Some(raw) = self.bus.fast_fetch(a, self.bus.open.fetch) else {
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
        let ks: Vec<K> = self.blocks.pool[start..self.blocks.used]
            .iter()
            .map(|e| e.k)
            .collect();
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
                ..Entry::default()
            };
            self.blocks.used += 1;
        }
        let gen = self.bus.mark_code(pc);
        let h = Head {
            pc,
            gen,
            epoch: self.bus.code_epoch,
            start: start as u32,
            n: n as u32,
        };
        self.blocks.heads[idx] = h;
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
