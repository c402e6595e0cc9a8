//! The instrumented loop's work per retired instruction: the counters' tallies
//! ([`crate::counters::Tally`]), the micro-architecture model, and extension events. The plain
//! loop does none of it (`hart/mod.rs` `run_loop::<_, _, false>`).

use super::Hart;
use crate::counters::{Tally, TALLIES};
use crate::decode::{Insn, Op};
use crate::observer::{Observer, Retired};
use crate::probe::Accesses;
use crate::uarch::{BranchKind, LongOp};
use rvtrace_isa::CfClass;

const fn bit(t: Tally) -> u32 {
    1 << t as u32
}

/// The tallies an operation always adds when it retires (loads, stores, classes of
/// instruction); control-flow kinds come from the instruction's [`CfClass`].
#[inline(always)]
fn op_tallies(op: Op) -> u32 {
    use Op::*;
    let load = bit(Tally::Load);
    let store = bit(Tally::Store);
    let atomic = bit(Tally::Atomic);
    match op {
        Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu => load,
        Sb | Sh | Sw | Sd => store,
        Flw | Fld => load | bit(Tally::Fp),
        Fsw | Fsd => store | bit(Tally::Fp),
        LrW | LrD => load | atomic,
        ScW | ScD => store | atomic,
        AmoSwapW | AmoAddW | AmoXorW | AmoAndW | AmoOrW | AmoMinW | AmoMaxW | AmoMinuW
        | AmoMaxuW | AmoSwapD | AmoAddD | AmoXorD | AmoAndD | AmoOrD | AmoMinD | AmoMaxD
        | AmoMinuD | AmoMaxuD => load | store | atomic,
        Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci => bit(Tally::Csr),
        Mul | Mulh | Mulhsu | Mulhu | Div | Divu | Rem | Remu | Mulw | Divw | Divuw | Remw
        | Remuw => bit(Tally::MulDiv),
        Fence | FenceI | SfenceVma => bit(Tally::Fence),
        o if (Flw as u16..=FmvDX as u16).contains(&(o as u16)) => bit(Tally::Fp),
        _ => 0,
    }
}

#[inline(always)]
fn class_tallies(c: CfClass) -> u32 {
    let direct = bit(Tally::DirectJump);
    let indirect = bit(Tally::IndirectJump);
    let call = bit(Tally::Call);
    let ret = bit(Tally::Return);
    match c {
        CfClass::Branch => bit(Tally::Branch),
        CfClass::InferableCall => direct | call,
        CfClass::UninferableCall => indirect | call,
        CfClass::CoroutineSwap => indirect | call | ret,
        CfClass::Return => indirect | ret,
        CfClass::InferableJump | CfClass::OtherInferableJump => direct,
        CfClass::UninferableJump | CfClass::OtherUninferableJump => indirect,
        _ => 0,
    }
}

impl Hart {
    /// Tally a retired instruction in the privilege it executed at.
    #[inline(always)]
    pub(crate) fn account(&mut self, insn: &Insn, ev: &Retired, acc: &Accesses) {
        let m = ev.priv_ as usize & 3;
        let t: &mut [u64; TALLIES] = &mut self.counters.tallies[m];
        // `ecall`/`ebreak` that raised their exception are counted in take_trap.
        let mut k = if ev.trap.is_some() {
            0
        } else {
            op_tallies(insn.op) | class_tallies(ev.class)
        };
        if insn.len == 2 {
            k |= bit(Tally::Compressed);
        }
        let taken = ev.next_pc != ev.pc.wrapping_add(ev.len as u64);
        if ev.class == CfClass::Branch && taken {
            k |= bit(Tally::BranchTaken);
        }
        // The micro-architecture model (`uarch`): fetch, prediction, data accesses, latency.
        let u = &mut self.uarch;
        let f = u.fetch(ev.pc, ev.len);
        k |= (f.accessed as u32) << Tally::L1iAccess as u32
            | (f.missed as u32) << Tally::L1iMiss as u32;
        if ev.trap.is_none() {
            if let Some(kind) = BranchKind::from_class(ev.class) {
                let fall = ev.pc.wrapping_add(ev.len as u64);
                let miss = u.branch(ev.pc, kind, taken, ev.next_pc, fall);
                let predicted = u.config().bpred.is_some();
                k |= (predicted as u32) << Tally::BpuAccess as u32
                    | (miss as u32) << Tally::BpuMiss as u32
                    | ((miss && kind == BranchKind::Cond) as u32) << Tally::BranchMiss as u32;
            }
        }
        for &(addr, size, write) in acc.as_slice() {
            let a = u.data(addr, size, write);
            if a.missed {
                t[if write {
                    Tally::L1dWriteMiss
                } else {
                    Tally::L1dReadMiss
                } as usize] += 1;
            }
        }
        if k & bit(Tally::MulDiv) != 0 {
            u.long_op(match insn.op {
                Op::Mul | Op::Mulh | Op::Mulhsu | Op::Mulhu | Op::Mulw => LongOp::Mul,
                _ => LongOp::Div,
            });
        }
        // The TLB lookups of this instruction (`mmu.rs`; cleared before its fetch).
        let tlb = self.mmu.take_events();
        for (tally, n) in [
            (Tally::ItlbLoad, tlb.itlb_access),
            (Tally::ItlbLoadMiss, tlb.itlb_miss),
            (Tally::DtlbLoad, tlb.dtlb_read),
            (Tally::DtlbLoadMiss, tlb.dtlb_read_miss),
            (Tally::DtlbStore, tlb.dtlb_write),
            (Tally::DtlbStoreMiss, tlb.dtlb_write_miss),
        ] {
            t[tally as usize] += u64::from(n);
        }
        let u = &mut self.uarch;
        let stalls = u.take_stalls();
        t[Tally::StallFrontend as usize] += stalls.frontend;
        t[Tally::StallBackend as usize] += stalls.backend;
        while k != 0 {
            t[k.trailing_zeros() as usize] += 1;
            k &= k - 1;
        }
    }

    /// Give a retirement to the extensions that want events; report their writes.
    #[inline(never)]
    pub(crate) fn extensions_retire<O: Observer>(&mut self, obs: &mut O, ev: &Retired) {
        self.each_extension(|e, ctx| {
            if e.wants_events() {
                e.retire(ctx, ev);
            }
            None::<()>
        });
        self.replay_effects(obs);
    }
}
