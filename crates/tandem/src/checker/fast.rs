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
//! [`Hart::run`]: rvtrace_sim::Hart::run

use super::group::Group;
use super::shadow::{canonical_csr, Shadow};
use super::step::StepObserver;
use crate::codec::{mask_bits, mem_op, reg};
use rvtrace_isa::Xlen;
use rvtrace_sim::bus::RAM_BASE;
use rvtrace_sim::{MemAccess, MemKind, Observer, Retired, TrapInfo};

/// Whether instruction `insn` of `len` bytes is of a kind that reads and writes only integer
/// registers, the pc and memory (unprivileged ISA 20191213, chapter 24 "RV32/64G Instruction
/// Set Listings", table 24.1 major opcodes, and chapter 16 "C" quadrants): LOAD, OP-IMM, AUIPC,
/// OP-IMM-32, STORE, OP, LUI, OP-32, BRANCH, JALR, JAL and their compressed forms. Not SYSTEM
/// (CSRs, `ecall`, `ebreak`, `xret`, `wfi`), MISC-MEM, AMO or any floating-point instruction
/// (FP loads and stores make `mstatus.FS` dirty); those take the slow path.
#[inline]
pub(super) fn plain_insn(insn: u32, len: u8, xlen: Xlen) -> bool {
    if len == 4 {
        return matches!(
            insn & 0x7f,
            0x03 | 0x13 | 0x17 | 0x1b | 0x23 | 0x33 | 0x37 | 0x3b | 0x63 | 0x67 | 0x6f
        );
    }
    let rv64 = xlen == Xlen::Rv64;
    let funct3 = (insn >> 13) & 7;
    match insn & 3 {
        // c.addi4spn, c.lw, c.sw; c.ld, c.sd on RV64 (c.flw, c.fsw on RV32). Not c.fld, c.fsd.
        0 => matches!(funct3, 0 | 2 | 6) || (rv64 && matches!(funct3, 3 | 7)),
        // Integer arithmetic, c.j, c.jal, branches.
        1 => true,
        // c.slli, c.lwsp, c.swsp, c.jr/c.mv/c.jalr/c.add (not c.ebreak); c.ldsp, c.sdsp on
        // RV64. Not c.fldsp, c.fsdsp.
        2 => {
            (matches!(funct3, 0 | 2 | 4 | 6) || (rv64 && matches!(funct3, 3 | 7)))
                && insn & 0xffff != 0x9002
        }
        _ => false,
    }
}

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

/// The observer of a plain run: each instruction's events against its group.
pub(super) struct FastRun<'a> {
    /// The plain groups of the run.
    pub(super) groups: &'a [Group],
    /// `pcs[k]`: the pc of group `k`'s instruction (checked in the reference's memory);
    /// `pcs[k + 1]` the pc after it.
    pub(super) pcs: &'a [u64],
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
    stop: bool,
    /// The instruction in progress accessed memory outside RAM (a device).
    device: bool,
    /// The instruction in progress stored into the checked code.
    code_written: bool,
    /// Integer register values written by the instruction in progress.
    gv: [u64; 32],
}

impl<'a> FastRun<'a> {
    pub(super) fn new(
        groups: &'a [Group],
        pcs: &'a [u64],
        sh: &'a mut Shadow,
        ev: &'a mut StepObserver,
        code: (u64, u64),
        ram_size: u64,
    ) -> Self {
        ev.clear();
        FastRun {
            groups,
            pcs,
            sh,
            ev,
            code,
            ram_size,
            k: 0,
            undecided: false,
            stop: groups.is_empty(),
            device: false,
            code_written: false,
            gv: [0; 32],
        }
    }

    /// Whether the retired instruction `r` and its events are group `k` exactly, with every
    /// element equal (else the slow path's comparison decides).
    #[inline]
    fn plain_match(&self, r: &Retired) -> bool {
        let k = self.k;
        let g = &self.groups[k];
        let ev = &*self.ev;
        let Some((insn, len)) = g.insn else {
            return false;
        };
        if r.insn != insn
            || r.len != len
            || r.pc != self.pcs[k]
            || r.next_pc != self.pcs[k + 1]
            || r.trap.is_some()
            || r.serviced.is_some()
            || self.device
            || !ev.csrs.is_empty()
            || ev.fprs != 0
        {
            return false;
        }
        let mut written = 0u32;
        for &(addr, upd) in &g.regs {
            let x = (addr - reg::GPR0) as usize & 31;
            written |= 1 << x;
            if self.sh.gpr_after(x, upd) != self.gv[x] {
                return false;
            }
        }
        written == ev.gprs && self.mem_match(g)
    }

    /// The group's memory records are the reference's accesses, both ways, as `compare.rs`
    /// matches them (a request with the access of its kind, address and size; store data with a
    /// store; an effective address with an access).
    #[inline(always)]
    fn mem_match(&self, g: &Group) -> bool {
        let mems = &self.ev.mems;
        if g.mems.is_empty() && mems.is_empty() && g.eaddrs.is_empty() && g.store_data.is_empty() {
            return true;
        }
        // The common access: one load or store, its request (with its response) in the group
        // and perhaps its effective address.
        if let ([it], [m], [], true) = (
            &g.mems[..],
            &mems[..],
            &g.store_data[..],
            g.eaddrs.len() <= 1,
        ) {
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
            let ok = match it.op {
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

    /// Group `k` matched: the shadow takes it (3.1 step 1; what `Shadow::apply` would do).
    #[inline]
    fn commit(&mut self) {
        let g = &self.groups[self.k];
        for &(addr, _) in &g.regs {
            let x = (addr - reg::GPR0) as usize & 31;
            self.sh.x[x] = self.gv[x];
        }
        self.sh.pc = self.pcs[self.k + 1];
        self.k += 1;
        // What a matched instruction left in `ev` (no retired event, trap, CSR or FP write).
        self.ev.gprs = 0;
        self.ev.mems.clear();
        self.device = false;
        if self.k == self.groups.len() || self.code_written {
            self.stop = true;
        }
    }
}

impl Observer for FastRun<'_> {
    #[inline]
    fn retire(&mut self, r: &Retired) {
        if self.plain_match(r) {
            self.commit();
        } else {
            self.ev.retired = Some(*r);
            self.undecided = true;
            self.stop = true;
        }
    }
    #[inline]
    fn trap(&mut self, t: &TrapInfo) {
        self.ev.trap = Some(*t);
        self.undecided = true;
        self.stop = true;
    }
    #[inline]
    fn gpr_write(&mut self, rd: u8, value: u64) {
        self.ev.gprs |= 1 << (rd & 31);
        self.gv[(rd & 31) as usize] = value;
    }
    #[inline]
    fn fpr_write(&mut self, rd: u8, _value: u64) {
        self.ev.fprs |= 1 << (rd & 31);
    }
    #[inline]
    fn csr_write(&mut self, csr: u16, _value: u64) {
        self.ev.csrs.push(canonical_csr(csr));
    }
    #[inline]
    fn mem_access(&mut self, acc: &MemAccess) {
        self.ev.mems.push(*acc);
        let n = acc.size as u64;
        let off = acc.addr.wrapping_sub(RAM_BASE);
        // (`Bus::ram_offset`'s rule.)
        if !(off < self.ram_size && n <= self.ram_size - off) {
            self.device = true;
        }
        if acc.kind == MemKind::Store
            && acc.addr < self.code.1
            && acc.addr.wrapping_add(n) > self.code.0
        {
            self.code_written = true;
        }
    }
    #[inline]
    fn stop_requested(&mut self) -> bool {
        self.stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
