//! The plain run: the 3.1 procedure for a run of common groups in one [`Hart::run`] of the
//! reference, instead of one run per group.
//!
//! One run per instruction pays the run's setup at every instruction (the PMP fast path
//! recomputed, the timer, counters and interrupts looked at: about 900 of the 2,300 host
//! instructions a group cost; `docs/perf/tandem-checker-profile.md`). A *plain* group ([`plain_group`]) is an
//! instruction that writes at most integer registers and plain memory: no CSR, floating-point
//! register, privilege, `mtime` or trap, and an instruction of the kinds that touch nothing else
//! ([`plain_insn`]). The checker reads such groups ahead; when the reference's memory holds each
//! one's instruction at the pc the trace gives it (`Checker::plain_run_len`), the reference runs
//! them in one go with [`FastRun`] as its observer, which compares each instruction's events with
//! its group as it retires.
//!
//! The run gives the slow path's answers exactly:
//!
//! * the reference runs only the instructions checked in its memory: the run stops after any
//!   instruction that does not go on at the next group's pc, and after a store into that code;
//! * those instructions read and write no CSR, so holding interrupts off for the whole run
//!   (`mie` zero) is the slow path's rule for a group with an instruction (step.rs: an
//!   interrupt the trace does not show is held off);
//! * a plain match ([`FastRun::plain_match`]) is stricter than the comparison of 3.1 step 4
//!   (`compare.rs`): every register and memory access the group shows is the reference's, with
//!   the same value, and the other way round; integer registers, pc and privilege were equal
//!   before the run (checked), so all are equal after;
//! * an instruction that does not match plainly (a trap, a CSR or floating-point write, an
//!   access outside RAM, any difference) ends the run, and its group goes through the slow
//!   path's comparison, report and resynchronisation with the events recorded in the run
//!   (the reference is not stepped twice).
//!
//! Groups in the form rvtrace's producer writes them (begin group, pc, instruction, register,
//! effective address, request, response, end group) are found straight in the trace's bytes
//! ([`scan_plain`]) with their elements, without a [`Group`] each: reading into groups cost
//! about half the checker. Such a group is one [`plain_group`] admits once read, and
//! [`ByteGroups`] accepts a subset of what the groups' match accepts, so the answers stay the
//! same; any other unit ends the scan and is read as before.
//!
//! [`Hart::run`]: rvtrace_sim::Hart::run

use super::group::Group;
use super::shadow::{canonical_csr, sext, Shadow};
use super::step::StepObserver;
use crate::codec::{mask_bits, mem_op, op, reg, state, Layout};
use rvtrace_isa::Xlen;
use rvtrace_sim::bus::RAM_BASE;
use rvtrace_sim::{MemAccess, MemKind, Observer, Retired, TrapInfo};

/// Whether instruction `insn` of `len` bytes is of a kind that reads and writes only integer
/// registers, the pc and memory (unprivileged ISA 20191213, chapter 24 "RV32/64G Instruction
/// Set Listings", table 24.1 major opcodes, and chapter 16 "C" quadrants): LOAD, OP-IMM, AUIPC,
/// OP-IMM-32, STORE, OP, LUI, OP-32, BRANCH, JALR, JAL and their compressed forms. Not SYSTEM
/// (CSRs, `ecall`, `ebreak`, `xret`, `wfi`), MISC-MEM, AMO or any floating-point instruction
/// (FP loads and stores make `mstatus.FS` dirty); those take the slow path.
#[inline(always)]
pub(super) fn plain_insn(insn: u32, len: u8, xlen: Xlen) -> bool {
    // (Bit tests, not a jump per kind: this runs for every group of a trace.)
    if len == 4 {
        return insn & 3 == 3 && PLAIN_OPCODES >> ((insn >> 2) & 31) & 1 != 0;
    }
    let quadrant_funct3 = (insn & 3) * 8 + ((insn >> 13) & 7);
    let plain = match xlen {
        Xlen::Rv32 => PLAIN_RV32C,
        Xlen::Rv64 => PLAIN_RV64C,
    };
    plain >> quadrant_funct3 & 1 != 0 && insn & 0xffff != 0x9002
}

/// The set of `ops` as bits (bit `n`: `n` is in it).
const fn bit_set(ops: &[u32]) -> u32 {
    let (mut set, mut i) = (0, 0);
    while i < ops.len() {
        set |= 1 << ops[i];
        i += 1;
    }
    set
}

/// [`plain_insn`]'s major opcodes, bits 6:2: LOAD, OP-IMM, AUIPC, OP-IMM-32, STORE, OP, LUI,
/// OP-32, BRANCH, JALR, JAL.
const PLAIN_OPCODES: u32 = bit_set(&[0, 4, 5, 6, 8, 12, 13, 14, 24, 25, 27]);

/// [`plain_insn`]'s compressed instructions on RV32, by quadrant and funct3 (bit
/// `quadrant * 8 + funct3`): quadrant 0: c.addi4spn, c.lw, c.sw (not c.fld, c.flw, c.fsd,
/// c.fsw); quadrant 1: all (integer arithmetic, c.j, c.jal, branches); quadrant 2: c.slli,
/// c.lwsp, c.swsp, c.jr/c.mv/c.jalr/c.add (not c.ebreak, tested apart; not c.fldsp, c.flwsp,
/// c.fsdsp, c.fswsp).
const PLAIN_RV32C: u32 = bit_set(&[0, 2, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22]);

/// On RV64, funct3 3 and 7 of quadrants 0 and 2 are c.ld, c.sd, c.ldsp, c.sdsp besides.
const PLAIN_RV64C: u32 = PLAIN_RV32C | bit_set(&[3, 7, 19, 23]);

/// Whether group `g` is a plain group: an instruction group whose records are the pc, a plain
/// instruction ([`plain_insn`]), integer register updates (not `x0`) and loads and stores.
#[inline]
pub(super) fn plain_group(g: &Group, xlen: Xlen) -> bool {
    let Some((insn, len)) = g.insn else {
        return false;
    };
    g.grouped
        && !g.hart_reset
        && !g.state_init
        && (g.incr_pc != g.new_pc.is_some())
        && g.priv_.is_none()
        && g.mtime.is_none()
        && g.ambiguous.is_none()
        && !g.too_long
        && plain_insn(insn, len, xlen)
        && g.regs
            .iter()
            .all(|&(a, _)| reg::is_gpr(a) && a != reg::GPR0)
        && g.mems
            .iter()
            .all(|m| matches!(m.op, mem_op::LOAD | mem_op::STORE))
}

/// What a plain run expects of each instruction: the groups read ahead ([`Group`]s) or the
/// trace's bytes of the groups in the producer's own form ([`ByteGroups`]).
pub(super) trait Expect {
    /// Whether retired instruction `r`, with the events recorded for it, is group `k` exactly
    /// (every element equal, its pc and the pc after it the group's, both checked in the
    /// reference's memory); if so, the shadow takes the group's registers (3.1 step 1; what
    /// `Shadow::apply` would do: the group wrote the registers the reference wrote, with their
    /// values). The caller checked the absence of traps, serviced calls, device accesses, CSR
    /// and FP writes; `ev.gprs`: the integer registers written (bit `n`: register `n`), with
    /// their values in `gv`.
    fn take(
        &mut self,
        k: usize,
        r: &Retired,
        ev: &StepObserver,
        gv: &[u64; 32],
        sh: &mut Shadow,
    ) -> bool;
}

/// Plain groups read ahead, with their pcs (`pcs[k]`: group `k`'s; `pcs[k + 1]` the pc after
/// it; `Checker::plain_run_len`).
pub(super) struct GroupRun<'a> {
    pub(super) groups: &'a [Group],
    pub(super) pcs: &'a [u64],
}

impl Expect for GroupRun<'_> {
    #[inline]
    fn take(
        &mut self,
        k: usize,
        r: &Retired,
        ev: &StepObserver,
        gv: &[u64; 32],
        sh: &mut Shadow,
    ) -> bool {
        if r.pc != self.pcs[k] || r.next_pc != self.pcs[k + 1] {
            return false;
        }
        let g = &self.groups[k];
        let Some((insn, len)) = g.insn else {
            return false;
        };
        if r.insn != insn || r.len != len {
            return false;
        }
        let mut written = 0u32;
        for &(addr, upd) in &g.regs {
            let x = (addr - reg::GPR0) as usize & 31;
            written |= 1 << x;
            if sh.gpr_after(x, upd) != gv[x] {
                return false;
            }
        }
        if written != ev.gprs || !mem_match(g, &ev.mems) {
            return false;
        }
        while written != 0 {
            let x = written.trailing_zeros() as usize;
            sh.x[x] = gv[x];
            written &= written - 1;
        }
        true
    }
}

/// A plain group found in the trace's bytes ([`scan_plain`]), with the elements a plain run
/// compares.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ByteGroup {
    /// The end of its bytes, from the start of the bytes scanned.
    pub(super) end: usize,
    /// Its pc and the pc after it (XLEN bits).
    pub(super) pc: u64,
    next_pc: u64,
    /// The instruction (a 16-bit one in the low half) and its length.
    pub(super) insn: u32,
    pub(super) ilen: u8,
    /// The integer register written (0: none).
    rd: u8,
    /// The memory access ([`access_code`]; 0: none).
    mem: u8,
    /// The registers written as a set (bit `n`: register `n`; empty or `rd`).
    gprs: u32,
    /// The value of `rd` as the hart keeps it ([`sext`]; 0 for none).
    value: u64,
    /// The access's address and data (a load's from its response, a store's from its request).
    mem_addr: u64,
    mem_data: u64,
}

/// An access of `size` bytes (1, 2, 4 or 8), a store or not, as one number: twice the size,
/// plus 1 for a store (never 0).
#[inline(always)]
fn access_code(size: u8, store: bool) -> u32 {
    ((size as u32) << 1) | store as u32
}

/// The groups of a run, found in the trace's bytes ([`scan_plain`]).
pub(super) struct ByteGroups<'a>(pub(super) &'a [ByteGroup]);

impl Expect for ByteGroups<'_> {
    /// What the groups' match (`&[Group]`, [`mem_match`]) accepts, in its common case only
    /// (one access or none; an effective address is the access's, [`scan_plain`]); every other
    /// case is left to the slow path's comparison (not matching plainly is always safe: the
    /// step is made, the general procedure decides).
    #[inline(always)]
    fn take(
        &mut self,
        k: usize,
        r: &Retired,
        ev: &StepObserver,
        gv: &[u64; 32],
        sh: &mut Shadow,
    ) -> bool {
        let g = &self.0[k];
        let x = g.rd as usize & 31;
        // (`gv[0]` stays 0: `x0` is never written.)
        let same = r.pc == g.pc
            && r.next_pc == g.next_pc
            && r.insn == g.insn
            && r.len == g.ilen
            && ev.gprs == g.gprs
            && gv[x] == g.value
            && match &ev.mems[..] {
                [] => g.mem == 0,
                [m] => {
                    access_code(m.size, m.kind == MemKind::Store) == g.mem as u32
                        && m.addr == g.mem_addr
                        && m.value == g.mem_data
                }
                _ => false,
            };
        if same {
            // (`x0` included, with 0: the shadow's `x0` is 0, as the reference's.)
            sh.x[x] = g.value;
        }
        same
    }
}

/// Scan `b` (from a group's start) for plain groups in the form rvtrace's producer writes them,
/// into `out` (at most as many as it holds; the first one's instruction at `pc`); the number
/// found. Stops at
/// the first other unit, at a group whose instruction `code(pc, insn, len)` says the reference
/// does not hold at its pc, and where fewer than [`SCAN_WINDOW`] bytes are left. With the
/// number, the span of the instructions' bytes, `[lo, hi)`.
///
/// A group of this form is one [`plain_group`] admits once read: begin group; increment pc or
/// the pc; a plain instruction ([`plain_insn`]); perhaps an integer register other than `x0`;
/// perhaps a load or store request of 1, 2, 4 or 8 bytes with its response (size as requested,
/// success) and perhaps its effective address before it, the same as the request's (else the
/// groups' match decides); end group.
#[allow(clippy::too_many_arguments)]
pub(super) fn scan_plain(
    b: &[u8],
    l: &Layout,
    xlen: Xlen,
    pc: u64,
    out: &mut [ByteGroup],
    code: impl FnMut(u64, u32, u8) -> bool,
) -> (usize, (u64, u64)) {
    let s = Scan { b, xlen, pc };
    // The field widths as constants (chapter 3: XLEN and MLEN rounded up to bytes; MLEN 32,
    // 34 or 64); other layouts take the general reading.
    match (l.xbytes, l.mbytes) {
        (8, 8) => s.run::<8, 8>(out, code),
        (4, 4) => s.run::<4, 4>(out, code),
        (4, 5) => s.run::<4, 5>(out, code),
        (8, 5) => s.run::<8, 5>(out, code),
        (8, 4) => s.run::<8, 4>(out, code),
        (4, 8) => s.run::<4, 8>(out, code),
        _ => (0, (0, 0)),
    }
}

/// Bytes [`Scan::one`] looks at: more than the longest plain group (begin group 1, pc 10,
/// instruction 5, register 11, effective address 10, request 18, response 10, end group 1 =
/// 66), so that reading a group never runs past the window.
pub(super) const SCAN_WINDOW: usize = 96;

/// The first two bytes of a group with the increment of the pc, and with the pc given
/// (little-endian).
const INCR_PC_HEAD: u64 = (op::INCR_PC as u64) << 8 | op::BEGIN_GROUP as u64;
const PC_HEAD: u64 = (op::ADDL_STATE as u64) << 8 | op::BEGIN_GROUP as u64;

/// The low `n` bytes of `w` at `at`, little-endian (`at + 8 <= SCAN_WINDOW`: the window is
/// longer than any group by 30 bytes).
#[inline(always)]
fn le(w: &[u8; SCAN_WINDOW], at: usize, n: usize) -> u64 {
    let v = u64::from_le_bytes(w[at..at + 8].try_into().expect("8 bytes"));
    v & (u64::MAX >> (64 - 8 * n))
}

/// A scan of bytes `b` ([`scan_plain`]), the first group's instruction at `pc`.
struct Scan<'a> {
    b: &'a [u8],
    xlen: Xlen,
    pc: u64,
}

impl Scan<'_> {
    /// [`scan_plain`] with XLEN fields of `X` bytes and MLEN fields of `M`.
    #[inline(always)]
    fn run<const X: usize, const M: usize>(
        &self,
        out: &mut [ByteGroup],
        mut code: impl FnMut(u64, u32, u8) -> bool,
    ) -> (usize, (u64, u64)) {
        let xmask = mask_bits(u64::MAX, self.xlen.bits());
        let mut pc = self.pc;
        // The code's bytes, a run of consecutive instructions (`seg`, from there to `pc`) at
        // a time: `[lo, hi)` grows where one ends (a jump, or the pc wraps around).
        let (mut lo, mut hi, mut seg) = (u64::MAX, 0, pc);
        let (mut at, mut n) = (0, 0);
        for g in out.iter_mut() {
            let Some(w) = self.b.get(at..at + SCAN_WINDOW) else {
                break;
            };
            let Some((len, jump)) = self.one::<X, M>(w.try_into().expect("a window"), g) else {
                break;
            };
            if !code(pc, g.insn, g.ilen) {
                break;
            }
            at += len;
            (g.end, g.pc) = (at, pc);
            let inc = pc.wrapping_add(g.ilen as u64);
            pc = match jump {
                Some(p) => p,
                None => inc,
            } & xmask;
            if pc != inc {
                (lo, hi, seg) = (lo.min(seg), hi.max(inc), pc);
            }
            g.next_pc = pc;
            n += 1;
        }
        if seg != pc {
            (lo, hi) = (lo.min(seg), hi.max(pc));
        }
        (n, (lo, hi))
    }

    /// One plain group at the start of `w` into `g` (but `g.end`; [`scan_plain`]): its
    /// length in bytes and the pc after it when given in full.
    #[inline(always)]
    fn one<const X: usize, const M: usize>(
        &self,
        w: &[u8; SCAN_WINDOW],
        g: &mut ByteGroup,
    ) -> Option<(usize, Option<u64>)> {
        // Begin group, then the increment of the pc and the instruction's record (the common
        // head, one compare of three bytes), or the pc.
        let head = le(w, 0, 8);
        let (new_pc, mut k) = if head & 0xffff == INCR_PC_HEAD {
            (None, 2)
        } else if head & 0xffff == PC_HEAD && matches!(w[2], state::PC | state::PC_APPENDIX) {
            (Some(le(w, 3, X)), 3 + X)
        } else {
            return None;
        };
        let r = le(w, k, 8);
        let (insn, ilen) = match r as u8 {
            op::INSN32 => ((r >> 8) as u32, 4),
            // (A parcel with its low bits set is read as a 32-bit instruction: `codec`.)
            op::INSN16 if (r >> 8) & 3 != 3 => ((r >> 8) as u16 as u32, 2),
            _ => return None,
        };
        if !plain_insn(insn, ilen, self.xlen) {
            return None;
        }
        k += 1 + ilen as usize;
        let r = le(w, k, 8);
        let (mut rd, mut value) = (0, 0);
        if r as u8 == op::FULL_REG {
            // A register address other than `x0`'s (`reg::is_gpr`).
            let x = ((r >> 8) as u16).wrapping_sub(reg::GPR0);
            if x == 0 || x > 31 {
                return None;
            }
            rd = x as u8;
            value = sext(self.xlen, le(w, k + 3, X));
            k += 3 + X;
        }
        if w[k] == op::END_GROUP {
            // No memory access (most groups).
            (g.insn, g.ilen, g.rd, g.gprs, g.value) = (insn, ilen, rd, (1 << rd) & !1, value);
            (g.mem, g.mem_addr, g.mem_data) = (0, 0, 0);
            return Some((k + 1, new_pc));
        }
        let mut eaddr = None;
        if w[k] == op::ADDL_STATE && w[k + 1] == state::EADDR {
            eaddr = Some(le(w, k + 2, M));
            k += 2 + M;
            if w[k] != op::MEM_REQ {
                return None;
            }
        }
        let (mut mem, mut mem_addr, mut mem_data) = (0, 0, 0);
        if w[k] == op::MEM_REQ {
            mem_addr = le(w, k + 1, M);
            let op_size = w[k + 1 + M];
            let (mop, size) = (op_size & 0xf, op_size >> 4);
            if size > 3
                || !matches!(mop, mem_op::LOAD | mem_op::STORE)
                || eaddr.is_some_and(|a| a != mem_addr)
            {
                return None;
            }
            let n = 1usize << size;
            k += 2 + M;
            if mop == mem_op::STORE {
                mem_data = le(w, k, n);
                k += n;
            }
            // The response: this size, success (result 0); a load's data.
            if w[k] != op::MEM_RSP || w[k + 1] != size {
                return None;
            }
            k += 2;
            if mop == mem_op::LOAD {
                mem_data = le(w, k, n);
                k += n;
            }
            mem = access_code(n as u8, mop == mem_op::STORE) as u8;
        }
        if w[k] != op::END_GROUP {
            return None;
        }
        (g.insn, g.ilen, g.rd, g.gprs, g.value) = (insn, ilen, rd, (1 << rd) & !1, value);
        (g.mem, g.mem_addr, g.mem_data) = (mem, mem_addr, mem_data);
        Some((k + 1, new_pc))
    }
}

/// The observer of a plain run: each instruction's events against what `E` expects of it.
pub(super) struct FastRun<'a, E> {
    /// The plain groups of the run.
    pub(super) exp: E,
    pub(super) sh: &'a mut Shadow,
    /// The events of the instruction in progress (the slow path's, for a group that does
    /// not match plainly).
    pub(super) ev: &'a mut StepObserver,
    /// `[lo, hi)`: the bytes of the checked instructions.
    pub(super) code: (u64, u64),
    /// The reference's RAM size (from [`RAM_BASE`]).
    pub(super) ram_size: u64,
    /// Groups matched.
    pub(super) k: usize,
    /// Group `k` did not match plainly: the slow path's comparison decides.
    pub(super) undecided: bool,
    /// The run stops once `k` is this (the number of groups; 0 to stop after the instruction
    /// in progress).
    stop_at: usize,
    /// The instruction in progress did what no plain group shows: an access outside RAM (a
    /// device), a CSR or floating-point register write.
    odd: bool,
    /// Integer register values written by the instruction in progress.
    gv: [u64; 32],
}

impl<'a, E: Expect> FastRun<'a, E> {
    /// A run of `n` groups that `exp` expects.
    pub(super) fn new(
        exp: E,
        n: usize,
        sh: &'a mut Shadow,
        ev: &'a mut StepObserver,
        code: (u64, u64),
        ram_size: u64,
    ) -> Self {
        ev.clear();
        FastRun {
            exp,
            sh,
            ev,
            code,
            ram_size,
            k: 0,
            undecided: false,
            stop_at: n,
            odd: false,
            gv: [0; 32],
        }
    }

    /// The run ends after the instruction in progress.
    #[inline(always)]
    fn stop(&mut self) {
        self.stop_at = 0;
    }

    /// Whether the retired instruction `r` and its events are group `k` exactly, with every
    /// element equal (else the slow path's comparison decides); if so, the shadow takes it.
    #[inline(always)]
    fn plain_match(&mut self, r: &Retired) -> bool {
        r.trap.is_none()
            && r.serviced.is_none()
            && !self.odd
            && self.exp.take(self.k, r, self.ev, &self.gv, self.sh)
    }
}

/// The group's memory records are the reference's accesses `mems`, both ways, as `compare.rs`
/// matches them (a request with the access of its kind, address and size; store data with a
/// store; an effective address with an access).
#[inline(always)]
fn mem_match(g: &Group, mems: &[MemAccess]) -> bool {
    if g.mems.is_empty() && mems.is_empty() && g.eaddrs.is_empty() && g.store_data.is_empty() {
        return true;
    }
    // The common access: one load or store, its request (with its response) in the group
    // and perhaps its effective address.
    if let ([it], [m], [], true) = (&g.mems[..], mems, &g.store_data[..], g.eaddrs.len() <= 1) {
        let n = 1u8 << it.size;
        let same = m.addr == it.addr
            && m.size == n
            && g.eaddrs.iter().all(|&a| a == m.addr)
            && match it.rsp {
                Some(r) => r.size == it.size && r.result != 1,
                None => true,
            };
        let data = it.rsp.and_then(|r| r.data);
        return same
            && match (it.op, m.kind) {
                (mem_op::LOAD, MemKind::Load) => data.is_none_or(|d| d == m.value),
                (mem_op::STORE, MemKind::Store) => m.value == it.data.unwrap_or(0),
                _ => false,
            };
    }
    if mems.len() > 32 {
        return false;
    }
    let mut matched = 0u32;
    let mut find = |kind: MemKind, addr: u64, n: u8| -> Option<&MemAccess> {
        let k = mems.iter().enumerate().position(|(k, m)| {
            m.kind == kind && m.addr == addr && m.size == n && matched >> k & 1 == 0
        })?;
        matched |= 1 << k;
        Some(&mems[k])
    };
    for it in &g.mems {
        let n = 1u8 << it.size;
        let mut data = None;
        if let Some(rsp) = it.rsp {
            if rsp.size != it.size || rsp.result == 1 {
                return false;
            }
            data = rsp.data;
        }
        let ok =
            match it.op {
                mem_op::LOAD => find(MemKind::Load, it.addr, n)
                    .is_some_and(|m| data.is_none_or(|d| d == m.value)),
                mem_op::STORE => find(MemKind::Store, it.addr, n)
                    .is_some_and(|m| m.value == it.data.unwrap_or(0)),
                _ => false,
            };
        if !ok {
            return false;
        }
    }
    for &(size, v) in &g.store_data {
        let n = 1u8 << size;
        let hit = mems.iter().position(|m| {
            m.kind == MemKind::Store && m.size == n && m.value == mask_bits(v, 8 * n as u32)
        });
        match hit {
            Some(k) => matched |= 1 << k,
            None => return false,
        }
    }
    let stored = mems
        .iter()
        .enumerate()
        .all(|(k, m)| m.kind != MemKind::Store || matched >> k & 1 == 1);
    stored && g.eaddrs.iter().all(|&a| mems.iter().any(|m| m.addr == a))
}

impl<E: Expect> Observer for FastRun<'_, E> {
    #[inline]
    fn retire(&mut self, r: &Retired) {
        if self.plain_match(r) {
            self.k += 1;
            self.sh.pc = r.next_pc;
            // What a matched instruction left in `ev` (no retired event, trap, CSR or FP
            // write).
            self.ev.gprs = 0;
            self.ev.mems.clear();
        } else {
            self.ev.retired = Some(*r);
            self.undecided = true;
            self.stop();
        }
    }
    #[inline]
    fn trap(&mut self, t: &TrapInfo) {
        self.ev.trap = Some(*t);
        self.undecided = true;
        self.stop();
    }
    #[inline]
    fn gpr_write(&mut self, rd: u8, value: u64) {
        self.ev.gprs |= 1 << (rd & 31);
        self.gv[(rd & 31) as usize] = value;
    }
    #[inline]
    fn fpr_write(&mut self, rd: u8, _value: u64) {
        self.ev.fprs |= 1 << (rd & 31);
        self.odd = true;
    }
    #[inline]
    fn csr_write(&mut self, csr: u16, _value: u64) {
        self.ev.csrs.push(canonical_csr(csr));
        self.odd = true;
    }
    #[inline]
    fn mem_access(&mut self, acc: &MemAccess) {
        self.ev.mems.push(*acc);
        let n = acc.size as u64;
        let off = acc.addr.wrapping_sub(RAM_BASE);
        // (`Bus::ram_offset`'s rule.)
        if !(off < self.ram_size && n <= self.ram_size - off) {
            self.odd = true;
        }
        if acc.kind == MemKind::Store
            && acc.addr < self.code.1
            && acc.addr.wrapping_add(n) > self.code.0
        {
            // A store into the checked code: what follows is checked again.
            self.stop();
        }
    }
    #[inline(always)]
    fn stop_requested(&mut self) -> bool {
        self.k >= self.stop_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{encode_all, AddlState, Params, Record};

    /// Plain groups found in bytes the codec's reference encoder wrote (chapter 2's records),
    /// with their elements; the scan stops at the first group of another form and where the
    /// bytes left are fewer than a window.
    #[test]
    fn plain_groups_in_bytes() {
        let p = Params::RV64;
        let l = Layout::new(&p);
        // ld a1, 8(sp): pc given in full, a1, the effective address, the load of 8 bytes.
        let ld = [
            Record::BeginGroup,
            Record::State(AddlState::Pc(0x8000_0010)),
            Record::Insn32(0x00813583),
            Record::FullReg {
                addr: reg::gpr(11),
                value: 0x1122_3344_5566_7788,
            },
            Record::State(AddlState::Eaddr(0x8000_1008)),
            Record::MemReq {
                addr: 0x8000_1008,
                op: mem_op::LOAD,
                size: 3,
                data: None,
            },
            Record::MemRsp {
                size: 3,
                result: 0,
                data: Some(0x1122_3344_5566_7788),
            },
            Record::EndGroup,
        ];
        // c.sw a0, 0(s1)-like store of 4 bytes without a register; c.addi a0, 1.
        let sw = [
            Record::BeginGroup,
            Record::IncrPc,
            Record::Insn16(0xc088),
            Record::MemReq {
                addr: 0x8000_2000,
                op: mem_op::STORE,
                size: 2,
                data: Some(0xdead_beef),
            },
            Record::MemRsp {
                size: 2,
                result: 0,
                data: None,
            },
            Record::EndGroup,
        ];
        let addi = [
            Record::BeginGroup,
            Record::IncrPc,
            Record::Insn16(0x0505),
            Record::FullReg {
                addr: reg::gpr(10),
                value: 5,
            },
            Record::EndGroup,
        ];
        // A privilege change: not a plain group.
        let other = [
            Record::BeginGroup,
            Record::IncrPc,
            Record::Insn16(0x0505),
            Record::State(AddlState::Priv(1)),
            Record::EndGroup,
        ];
        let mut recs: Vec<Record> = [&ld[..], &sw, &addi, &other].concat();
        recs.extend(std::iter::repeat_n(Record::BeginGroup, SCAN_WINDOW));
        let b = encode_all(&recs, &p);
        let mut out = [ByteGroup::default(); 10];
        let all = |_, _, _| true;
        let (n, code) = scan_plain(&b, &l, Xlen::Rv64, 0x8000_0000, &mut out, all);
        assert_eq!(n, 3, "{out:?}");
        assert_eq!(code, (0x8000_0000, 0x8000_0014));
        let (g, h, i) = (&out[0], &out[1], &out[2]);
        // The pcs: the first, then given in full, then two increments.
        let pcs = out[..3]
            .iter()
            .map(|g| (g.pc, g.next_pc))
            .collect::<Vec<_>>();
        assert_eq!(
            pcs,
            [
                (0x8000_0000, 0x8000_0010),
                (0x8000_0010, 0x8000_0012),
                (0x8000_0012, 0x8000_0014)
            ]
        );
        assert_eq!(
            (g.end, g.insn, g.ilen),
            (encode_all(&ld, &p).len(), 0x00813583, 4)
        );
        let a1 = 0x1122_3344_5566_7788;
        assert_eq!((g.rd, g.gprs, g.value), (11, 1 << 11, a1));
        assert_eq!((g.mem, g.mem_addr, g.mem_data), (8 << 1, 0x8000_1008, a1));
        assert_eq!(h.end, g.end + encode_all(&sw, &p).len());
        assert_eq!(
            (h.insn, h.ilen, h.rd, h.gprs, h.value),
            (0xc088, 2, 0, 0, 0)
        );
        assert_eq!(
            (h.mem, h.mem_addr, h.mem_data),
            (4 << 1 | 1, 0x8000_2000, 0xdead_beef)
        );
        assert_eq!(i.end, h.end + encode_all(&addi, &p).len());
        assert_eq!((i.rd, i.value, i.mem), (10, 5, 0));
        // At most as many as `out` holds; up to where `code` says no; nothing where fewer
        // bytes than a window are left.
        let (n, code) = scan_plain(&b, &l, Xlen::Rv64, 0x8000_0000, &mut out[..2], all);
        assert_eq!((n, code), (2, (0x8000_0000, 0x8000_0012)));
        let not_third = |pc, _, _| pc != 0x8000_0012;
        let (n, _) = scan_plain(&b, &l, Xlen::Rv64, 0x8000_0000, &mut out, not_third);
        assert_eq!(n, 2);
        let short = encode_all(&ld, &p);
        let (n, _) = scan_plain(&short, &l, Xlen::Rv64, 0x8000_0000, &mut out, all);
        assert_eq!(n, 0);
        // An effective address other than the request's: left to the groups' match.
        let mut ld2 = ld.to_vec();
        ld2[4] = Record::State(AddlState::Eaddr(0x8000_1000));
        let mut recs = ld2;
        recs.extend(std::iter::repeat_n(Record::BeginGroup, SCAN_WINDOW));
        let b = encode_all(&recs, &p);
        let (n, _) = scan_plain(&b, &l, Xlen::Rv64, 0x8000_0000, &mut out, all);
        assert_eq!(n, 0);
        // RV32 (4-byte fields): a register's value as the hart keeps it, sign-extended from
        // XLEN bits; a store of 2 bytes; a jump's pc wraps at XLEN bits.
        let p32 = Params::RV32;
        let mut recs = vec![
            Record::BeginGroup,
            Record::State(AddlState::Pc(0x8000_0100)),
            Record::Insn16(0x0505),
            Record::FullReg {
                addr: reg::gpr(10),
                value: 0x8000_0001,
            },
            Record::MemReq {
                addr: 0x8000_2002,
                op: mem_op::STORE,
                size: 1,
                data: Some(0xbeef),
            },
            Record::MemRsp {
                size: 1,
                result: 0,
                data: None,
            },
            Record::EndGroup,
        ];
        recs.extend(std::iter::repeat_n(Record::BeginGroup, SCAN_WINDOW));
        let b = encode_all(&recs, &p32);
        let l32 = Layout::new(&p32);
        let (n, code) = scan_plain(&b, &l32, Xlen::Rv32, 0xffff_fffe, &mut out, all);
        let g = &out[0];
        assert_eq!((n, g.pc, g.next_pc), (1, 0xffff_fffe, 0x8000_0100));
        assert_eq!((g.rd, g.value), (10, 0xffff_ffff_8000_0001));
        assert_eq!(
            (g.mem, g.mem_addr, g.mem_data),
            (2 << 1 | 1, 0x8000_2002, 0xbeef)
        );
        assert_eq!(code, (0xffff_fffe, 0x1_0000_0000));
    }

    /// The kinds by major opcode and quadrant, against encodings from the ISA manual.
    #[test]
    fn plain_instructions() {
        let rv64 = Xlen::Rv64;
        // addi a0, a0, 1; ld a1, 8(sp); sd a1, 8(sp); jal ra, 0; beq a0, a1, 0; lui a0, 1.
        for i in [
            0x00150513, 0x00813583, 0x00b13423, 0x000000ef, 0x00b50063, 0x00001537,
        ] {
            assert!(plain_insn(i, 4, rv64), "{i:08x}");
        }
        // csrrw, ecall, ebreak, mret, fence, fence.i, amoadd.w, fld, fsd, fadd.d, fmadd.s.
        for i in [
            0x30551073, 0x00000073, 0x00100073, 0x30200073, 0x0ff0000f, 0x0000100f, 0x00b5252f,
            0x00853087, 0x00153427, 0x02b57553, 0x00000043,
        ] {
            assert!(!plain_insn(i, 4, rv64), "{i:08x}");
        }
        // c.addi, c.li, c.mv, c.add, c.ldsp, c.sdsp, c.lw, c.sw, c.j, c.beqz.
        for i in [
            0x0505, 0x4505, 0x852e, 0x952e, 0x6522, 0xe42a, 0x4188, 0xc188, 0xa001, 0xc101,
        ] {
            assert!(plain_insn(i, 2, rv64), "{i:04x}");
        }
        // c.ebreak, c.fld, c.fsd, c.fldsp, c.fsdsp.
        for i in [0x9002, 0x2188, 0xa188, 0x2522, 0xa42a] {
            assert!(!plain_insn(i, 2, rv64), "{i:04x}");
        }
        // On RV32, funct3 3 and 7 of quadrants 0 and 2 are c.flw, c.fsw, c.flwsp, c.fswsp.
        for i in [0x6188, 0xe188, 0x6522, 0xe42a] {
            assert!(!plain_insn(i, 2, Xlen::Rv32), "{i:04x}");
            assert!(plain_insn(i, 2, rv64), "{i:04x}");
        }
    }
}
