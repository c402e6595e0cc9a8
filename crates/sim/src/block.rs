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

use crate::arch::Stop;
use crate::decode::{Insn, Op};
use rvtrace_isa::CfClass;

/// Most instructions in one block.
pub(crate) const MAX_INSNS: usize = 32;
/// Block heads (a direct-mapped table indexed by the pc: [`head_index`]).
pub(crate) const HEAD_BITS: u32 = 16;

/// The head slot of the block at `pc`: the pc's parcel index with the bits above folded in, so
/// that blocks at the same offset of different pages (a kernel's code spans many) do not all
/// share one slot.
#[inline(always)]
pub(crate) fn head_index(pc: u64) -> usize {
    ((pc >> 1) ^ (pc >> (HEAD_BITS + 1))) as usize & ((1 << HEAD_BITS) - 1)
}
/// Victim heads: a head a newer block displaced from its slot of the direct-mapped table is kept
/// here (sets of [`VICTIM_WAYS`], the least recent out), so that two blocks whose pcs share a
/// slot are found again instead of decoded afresh, and the pool fills with new code only.
pub(crate) const VICTIM_BITS: u32 = 16;
/// Heads per set of the victims.
pub(crate) const VICTIM_WAYS: usize = 4;

/// The first slot of the victims' set of the block at `pc`: a hash of other bits than
/// [`head_index`]'s, so that the pcs that share a head slot spread over the sets.
#[inline]
fn victim_set(pc: u64) -> usize {
    let set_bits = VICTIM_BITS - VICTIM_WAYS.trailing_zeros();
    ((pc >> 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - set_bits)) as usize * VICTIM_WAYS
}

/// Decoded instructions held before the pool is emptied and blocks are decoded afresh.
pub(crate) const POOL: usize = 1 << 18;

#[derive(Clone, Copy)]
pub(crate) struct Head {
    /// Start pc (1: none).
    pub(crate) pc: u64,
    /// Its physical address when decoded (`pc` itself when fetches are not translated): a
    /// block is kept per virtual and physical start, as a mapping can change.
    pub(crate) pa: u64,
    /// The code generation of the page when decoded (`Bus::code_gen`).
    pub(crate) gen: u64,
    /// The `Bus::code_epoch` under which `gen` was last found current.
    pub(crate) epoch: u64,
    /// First instruction in the pool.
    pub(crate) start: u32,
    /// Instructions (0: the first instruction must run alone).
    pub(crate) n: u32,
}

impl Head {
    /// No block.
    const NONE: Head = Head {
        pc: 1,
        pa: 1,
        gen: 0,
        epoch: 0,
        start: 0,
        n: 0,
    };
}

/// A table of `N` heads, none naming a block, built on the heap (the table is larger
/// than a test thread's stack).
fn head_table<const N: usize>() -> Box<[Head; N]> {
    vec![Head::NONE; N]
        .into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| unreachable!("N heads"))
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
        pub(crate) enum K {
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
        pub(crate) fn fuse(ks: &[K]) -> Option<(K, usize)> {
            match ks {
                $([$(K::$k),+, ..] => Some((K::$p, [$(stringify!($k)),+].len())),)*
                _ => None,
            }
        }
    };
}

fused_ops!(define_k);
pub(crate) use fused_ops;

/// An integer register number: indexing the register file with it needs no bounds check (the
/// compiler knows it is below 32).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
#[repr(u8)]
#[rustfmt::skip]
pub(crate) enum R {
    #[default]
    X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15,
    X16, X17, X18, X19, X20, X21, X22, X23, X24, X25, X26, X27, X28, X29, X30, X31,
}

impl R {
    /// Register `r` (its low 5 bits).
    pub(crate) fn of(r: u8) -> R {
        use R::*;
        #[rustfmt::skip]
        const ALL: [R; 32] = [
            X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15,
            X16, X17, X18, X19, X20, X21, X22, X23, X24, X25, X26, X27, X28, X29, X30, X31,
        ];
        ALL[(r & 31) as usize]
    }
}

/// One decoded instruction of a block (32 bytes).
#[derive(Clone, Copy, Default)]
pub(crate) struct Entry {
    pub(crate) k: K,
    /// What the run with a quiet observer ([`Observer::QUIET`]) or one that takes runs
    /// ([`Observer::RETIRE_RUNS`]) does here: the fused operation that starts here, or `k`.
    /// Other observers run `k`, so the fused dispatch is not compiled into their runs.
    pub(crate) fused: K,
    pub(crate) class: CfClass,
    /// Position in the block.
    pub(crate) idx: u8,
    /// Registers (as decoded; `Other` reads its full decoding instead).
    pub(crate) rd: R,
    pub(crate) rs1: R,
    pub(crate) rs2: R,
    /// Length in bytes.
    pub(crate) len: u8,
    /// Offset of the instruction in its page (a block lies in one page).
    pub(crate) off: u16,
    /// Offset in the page of the pc the block goes on at after this instruction when it does
    /// not leave (0x1000: the next page).
    pub(crate) next: u16,
    /// The instruction's bits (16-bit instructions in the low half).
    pub(crate) bits: u32,
    /// The immediate, sign-extended; a branch's or `jal`'s target; `Li`'s value; for `Other`
    /// the index of its full decoding in `Blocks::insns`.
    pub(crate) imm: u64,
    /// The link of an exit to a fixed target in the same page ([`links`]) is valid while this
    /// is the low half of `Bus::code_epoch` (made so when linked; one less when decoded or
    /// unlinked: [`Blocks::epoch_hi`]).
    pub(crate) link_gen: u32,
    /// The linked block: its first entry in the pool (`Head::start`) above 8 bits of its
    /// instruction count (`Head::n`).
    pub(crate) link: u32,
}

// A pool index and a block's count fit `Entry::link`.
const _: () = assert!(POOL <= 1 << 24 && MAX_INSNS < 1 << 8);

/// Whether an entry of operation `k` leaves its block, when it does, for one fixed pc (its
/// `imm`): `End`, a branch taken, `jal`. Such an exit can be linked to the block there.
#[inline(always)]
pub(crate) fn links(k: K) -> bool {
    matches!(
        k,
        K::End | K::J | K::Jal | K::Beq | K::Bne | K::Blt | K::Bge | K::Bltu | K::Bgeu
    )
}

/// The block operation for `i` at `pc` (`next` = the pc after it, XLEN-wrapped).
pub(crate) fn kind(i: &Insn, pc: u64, c: bool, rv64: bool) -> (K, u64) {
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
    pub(crate) heads: Box<[Head; 1 << HEAD_BITS]>,
    /// Heads displaced from `heads` ([`VICTIM_BITS`]).
    victims: Box<[Head; 1 << VICTIM_BITS]>,
    /// [`POOL`] entries once the first block is decoded.
    pub(crate) pool: Vec<Entry>,
    /// Entries of the pool in use.
    pub(crate) used: usize,
    /// The full decodings of the pool's `Other` entries.
    pub(crate) insns: Vec<Insn>,
    /// This filling of the pool, unique in the process ([`next_pool_serial`]): entries are
    /// written once per filling, so a block's pool start and this serial name its decoding
    /// ([`crate::RetiredRun::block_id`]).
    pub(crate) serial: u64,
    /// The high half of `Bus::code_epoch` when the block loop last started a chain. Links hold
    /// the low half; when the high half moves, every entry is unlinked ([`Blocks::unlink`]),
    /// so that a link can match only the epoch it was made under. (A chain runs at most
    /// [`CHAIN_MAX`] instructions, far fewer than 2^32 code writes, so the high half cannot
    /// move twice unseen.)
    pub(crate) epoch_hi: u64,
}

/// Most instructions one chain of blocks runs (see [`Blocks::epoch_hi`]).
pub(crate) const CHAIN_MAX: u64 = 1 << 28;

impl Blocks {
    /// Forget every block (the pool is emptied, or the decodings are for another hart).
    pub(crate) fn forget(&mut self) {
        for h in self.heads.iter_mut().chain(self.victims.iter_mut()) {
            h.pc = 1;
        }
    }

    /// Whether the head of the block at `pc` (physical `pa`) decoded under code generation
    /// `gen` was among the victims, a newer block having displaced it from head slot `idx`: it
    /// goes back there (the newer to the victims).
    pub(crate) fn recall(&mut self, idx: usize, pc: u64, pa: u64, gen: u64) -> bool {
        let s = victim_set(pc);
        let set = &mut self.victims[s..s + VICTIM_WAYS];
        let Some(w) = set
            .iter()
            .position(|v| v.pc == pc && v.pa == pa && v.gen == gen)
        else {
            return false;
        };
        let h = set[w];
        set.copy_within(w + 1.., w);
        set[VICTIM_WAYS - 1] = Head::NONE;
        self.place(idx, h);
        true
    }

    /// Head `h` into slot `idx`; the head there (if any, and not an older decoding of the same
    /// block, which can never be current again) to the front of its victims' set.
    pub(crate) fn place(&mut self, idx: usize, h: Head) {
        let old = std::mem::replace(&mut self.heads[idx], h);
        if old.pc != 1 && (old.pc, old.pa) != (h.pc, h.pa) {
            let s = victim_set(old.pc);
            let set = &mut self.victims[s..s + VICTIM_WAYS];
            set.copy_within(..VICTIM_WAYS - 1, 1);
            set[0] = old;
        }
    }

    /// Unlink every entry of `pool` (the pool as the block loop holds it) for `epoch`. An
    /// unlinked entry names no block (count 0), as a newly decoded one: should its generation
    /// come round again, taking it only ends the chain (the single-step loop goes on).
    pub(crate) fn unlink(pool: &mut [Entry], epoch: u64) {
        for e in pool.iter_mut() {
            (e.link_gen, e.link) = ((epoch as u32).wrapping_sub(1), 0);
        }
    }
}

/// A serial for a new filling of a pool (of any hart): block ids ([`crate::RetiredRun::block_id`])
/// are never reused in the process, even by a recorder given the runs of several harts.
pub(crate) fn next_pool_serial() -> u64 {
    static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Default for Blocks {
    fn default() -> Blocks {
        Blocks {
            on: true,
            heads: head_table(),
            victims: head_table(),
            pool: Vec::new(),
            used: 0,
            insns: Vec::new(),
            serial: next_pool_serial(),
            epoch_hi: 0,
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
pub(crate) fn runs_alone(op: Op) -> bool {
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
pub(crate) fn opposite(k: K) -> K {
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
pub(crate) fn ends_block(op: Op) -> bool {
    use Op::*;
    matches!(op, Jal | Jalr)
}
