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

use crate::bus::RAM_BASE;
use crate::decode::{decode, Insn, Op};
use crate::hart::{Exc, Hart, Stop};
use crate::observer::{Observer, Retired};
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
    /// First instruction in the pool.
    start: u32,
    /// Instructions (0: the first instruction must run alone).
    n: u32,
}

/// One decoded instruction of a block.
#[derive(Clone, Copy, Default)]
struct Entry {
    insn: Insn,
    /// The instruction's bits (16-bit instructions in the low half).
    bits: u32,
    class: CfClass,
}

/// The block cache.
pub(crate) struct Blocks {
    /// Whether the plain loop uses blocks ([`Hart::set_blocks`]).
    pub(crate) on: bool,
    heads: Vec<Head>,
    pool: Vec<Entry>,
}

impl Default for Blocks {
    fn default() -> Blocks {
        Blocks {
            on: true,
            heads: vec![
                Head {
                    pc: 1,
                    gen: 0,
                    start: 0,
                    n: 0
                };
                1 << HEAD_BITS
            ],
            pool: Vec::with_capacity(POOL),
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

/// Control transfers: the last instruction of a block.
fn ends_block(op: Op) -> bool {
    use Op::*;
    matches!(op, Jal | Jalr | Beq | Bne | Blt | Bge | Bltu | Bgeu)
}

impl Hart {
    /// Use pre-decoded blocks in the plain loop (on by default), or step every instruction
    /// through the fetch and the decode cache. The two are equivalent in every observable
    /// effect (crates/sim/tests/blocks.rs); off is for that comparison.
    pub fn set_blocks(&mut self, on: bool) {
        self.blocks.on = on;
    }

    /// Run the block at `pc` (in RAM, fetches on the PMP fast path, `instret < next_check`),
    /// and the blocks after it while nothing is due between two instructions.
    #[inline(always)]
    pub(crate) fn run_block<O: Observer, const RV64: bool>(
        &mut self,
        obs: &mut O,
        mut pc: u64,
    ) -> Ran {
        let first = self.instret;
        let priv_ = self.priv_;
        // The pool is not touched while blocks run (writes change generations only).
        let mut pool = std::mem::take(&mut self.blocks.pool);
        let out = 'chain: loop {
            let gen = self.bus.code_gen(pc);
            let idx = ((pc >> 1) as usize) & ((1 << HEAD_BITS) - 1);
            let h = self.blocks.heads[idx];
            let (start, n) = if h.pc == pc && h.gen == gen {
                (h.start as usize, h.n as usize)
            } else {
                self.blocks.pool = pool;
                let r = self.build_block(pc, idx);
                pool = std::mem::take(&mut self.blocks.pool);
                r
            };
            if n == 0 {
                break if self.instret == first {
                    Ran::No
                } else {
                    Ran::Yes
                };
            }
            for e in &pool[start..start + n] {
                match self.execute_in_block::<O, RV64>(obs, &e.insn, e.bits, pc) {
                    Ok(next) => {
                        self.instret += 1;
                        obs.retire(&Retired {
                            pc,
                            insn: e.bits,
                            len: e.insn.len,
                            class: e.class,
                            next_pc: next,
                            priv_,
                            trap: None,
                            serviced: None,
                            mtime: self.instret.wrapping_add(self.bus.clint.mtime_offset),
                        });
                        pc = next;
                        if obs.stop_requested() {
                            break 'chain Ran::Stop(Stop::Requested);
                        }
                        if self.instret >= self.next_check {
                            break 'chain Ran::Yes;
                        }
                    }
                    Err(exc) => {
                        self.blocks.pool = pool;
                        self.pc = pc;
                        if self.instret != first {
                            self.trap_loop.last_handler = None;
                            self.trap_loop.traps_without_retire = 0;
                        }
                        return match self.instruction_fault(obs, pc, exc) {
                            Some(stop) => Ran::Stop(stop),
                            None => Ran::Yes,
                        };
                    }
                }
            }
            if pc.wrapping_sub(RAM_BASE) >= self.bus.open.fetch {
                break Ran::Yes;
            }
        };
        self.blocks.pool = pool;
        self.pc = pc;
        if self.instret != first {
            self.trap_loop.last_handler = None;
            self.trap_loop.traps_without_retire = 0;
        }
        out
    }

    /// Decode the block at `pc` into head `idx`; returns its pool range.
    #[cold]
    #[inline(never)]
    fn build_block(&mut self, pc: u64, idx: usize) -> (usize, usize) {
        if self.blocks.pool.len() + MAX_INSNS > POOL {
            self.blocks.pool.clear();
            for h in self.blocks.heads.iter_mut() {
                h.pc = 1;
            }
        }
        let start = self.blocks.pool.len();
        let mut a = pc;
        while self.blocks.pool.len() - start < MAX_INSNS {
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
            self.blocks.pool.push(Entry {
                insn,
                bits: raw & mask,
                class: classify(&self.isa, raw).class,
            });
            a = self.trunc(a.wrapping_add(insn.len as u64));
            if ends_block(insn.op) || a & 0xfff == 0 {
                break;
            }
        }
        let n = self.blocks.pool.len() - start;
        let gen = self.bus.mark_code(pc);
        self.blocks.heads[idx] = Head {
            pc,
            gen,
            start: start as u32,
            n: n as u32,
        };
        (start, n)
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
