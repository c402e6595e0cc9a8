//! A machine of several harts (`rvtrace_sim::machine`): LR/SC reservations broken by another
//! hart's store, AMO or SC to the granule and by nothing else (the unprivileged ISA,
//! "Load-Reserved/Store-Conditional Instructions": an SC must fail after another hart wrote the
//! reservation set, even with the value unchanged); `mhartid`; ACLINT MSWI and MTIMER per hart
//! (QEMU `virt`'s layout); the shared clock; runs that repeat exactly.

use rvtrace_isa::Xlen;
use rvtrace_sim::machine::{Machine, QUANTUM};
use rvtrace_sim::{Config, Hart, PcList, Stop};

const LR_W_T0_A0: u32 = 0x1005_22af; // lr.w t0, (a0)
const SC_W_T1_T2_A0: u32 = 0x1875_232f; // sc.w t1, t2, (a0)
const SW_T2_0_A0: u32 = 0x0075_2023; // sw t2, 0(a0)
const SW_T2_8_A0: u32 = 0x0075_2423; // sw t2, 8(a0)
const AMOADD_W_ZERO_T2_A0: u32 = 0x0075_202f; // amoadd.w zero, t2, (a0)
const CSRR_T0_MHARTID: u32 = 0xf140_22f3; // csrr t0, mhartid
const SW_T2_0_A1: u32 = 0x0075_a023; // sw t2, 0(a1)
const WORD: u64 = 0x8010_0000;

/// A machine of `n` harts with `code[h]` at 0x8000_0000 + 0x1000 * h for hart `h`, `a0` =
/// [`WORD`] (holding 5), `t2` = 5 (a store of the value already there), M-mode.
fn machine(n: usize, code: &[&[u32]]) -> Machine {
    let mut m = Machine::new(&Config::virt(Xlen::Rv64), n);
    for (h, c) in code.iter().enumerate() {
        m.with_hart(h, |hart| {
            let at = 0x8000_0000 + 0x1000 * h as u64;
            let bytes: Vec<u8> = c.iter().flat_map(|w| w.to_le_bytes()).collect();
            assert!(hart.bus.write_ram(at, &bytes));
            assert!(hart.bus.write_ram(WORD, &5u32.to_le_bytes()));
            hart.pc = at;
            hart.x[10] = WORD;
            hart.x[7] = 5;
            hart.x[6] = 99;
        });
    }
    m
}

/// Run `n` instructions of hart `h` alone.
fn step(m: &mut Machine, h: usize, n: u64) {
    assert_eq!(m.with_hart(h, |hart| hart.run(&mut (), n)), Stop::InsnLimit);
}

/// `sc.w`'s result (t1: 0 success, 1 failure) after hart 0's LR, hart 1's `other`, hart 0's SC.
fn sc_after(other: u32) -> u64 {
    let mut m = machine(2, &[&[LR_W_T0_A0, SC_W_T1_T2_A0], &[other]]);
    step(&mut m, 0, 1);
    step(&mut m, 1, 1);
    step(&mut m, 0, 1);
    m.hart(0).x[6]
}

#[test]
fn another_harts_store_amo_or_sc_breaks_the_reservation() {
    // The same value stored again: QEMU 7.2's value compare alone would let the SC succeed.
    assert_eq!(sc_after(SW_T2_0_A0), 1, "store to the reserved word");
    assert_eq!(sc_after(AMOADD_W_ZERO_T2_A0), 1, "AMO to the reserved word");
    assert_eq!(
        sc_after(SW_T2_8_A0),
        0,
        "a store to another granule leaves it"
    );
    assert_eq!(sc_after(CSRR_T0_MHARTID), 0, "no store: the SC succeeds");
    // Another hart's LR and SC: its SC's store breaks hart 0's reservation.
    let mut m = machine(
        2,
        &[&[LR_W_T0_A0, SC_W_T1_T2_A0], &[LR_W_T0_A0, SC_W_T1_T2_A0]],
    );
    step(&mut m, 0, 1);
    step(&mut m, 1, 2);
    assert_eq!(m.hart(1).x[6], 0, "hart 1's SC succeeds");
    step(&mut m, 0, 1);
    assert_eq!(m.hart(0).x[6], 1, "hart 0's reservation was broken by it");
    // The hart's own store to the granule between its LR and SC does not break it (as QEMU).
    let mut m = machine(2, &[&[LR_W_T0_A0, SW_T2_0_A0, SC_W_T1_T2_A0], &[]]);
    step(&mut m, 0, 3);
    assert_eq!(m.hart(0).x[6], 0);
}

#[test]
fn mhartid_and_per_hart_aclint_registers() {
    // Hart 1 writes hart 0's msip (0x0200_0000) and its own mtimecmp (0x0200_4008).
    let mut m = machine(2, &[&[CSRR_T0_MHARTID], &[CSRR_T0_MHARTID, SW_T2_0_A1]]);
    m.with_hart(1, |h| h.x[11] = 0x0200_0000);
    step(&mut m, 0, 1);
    step(&mut m, 1, 2);
    assert_eq!((m.hart(0).x[5], m.hart(1).x[5]), (0, 1));
    m.with_hart(0, |h: &mut Hart| {
        assert!(h.bus.clint.msip[0] && !h.bus.clint.msip[1]);
        assert_eq!(h.mip() & 8, 8, "hart 0's MSIP");
        assert_eq!(h.bus.load(0x0200_0000, 4, 0), Some(1));
        assert_eq!(h.bus.load(0x0200_0004, 4, 0), Some(0));
        assert!(h.bus.store(0x0200_4008, 8, 77, 0).is_some());
        assert_eq!(h.bus.clint.mtimecmp[1], 77);
        // Past the machine's harts: reads 0, as QEMU's ACLINT for absent harts.
        assert_eq!(h.bus.load(0x0200_0008, 4, 0), Some(0));
    });
    m.with_hart(1, |h: &mut Hart| {
        assert_eq!(h.mip() & 8, 0, "hart 1's MSIP clear")
    });
}

/// Each hart spins reading `mtime` into t0..: `loop: ld t0, 0(a2); j loop` with a2 = mtime.
#[test]
fn harts_share_one_clock_and_runs_repeat_exactly() {
    const LD_T0_0_A2: u32 = 0x0006_3283; // ld t0, 0(a2)
    const J_BACK: u32 = 0xffdf_f06f; // j -4
    let run = || {
        let code: &[u32] = &[LD_T0_0_A2, J_BACK];
        let mut m = machine(3, &[code; 3]);
        for h in 0..3 {
            m.with_hart(h, |hart| hart.x[12] = 0x0200_bff8);
        }
        let mut obs = vec![PcList::default(), PcList::default(), PcList::default()];
        // Two rounds of the three harts, then 10 instructions of hart 0, in two calls.
        assert_eq!(m.run(&mut obs, 4 * QUANTUM), Stop::InsnLimit);
        assert_eq!(m.run(&mut obs, 2 * QUANTUM + 10), Stop::InsnLimit);
        let times: Vec<u64> = (0..3).map(|h| m.hart(h).x[5]).collect();
        let insns: Vec<u64> = (0..3).map(|h| m.hart(h).instret).collect();
        (
            times,
            insns,
            obs.iter().map(|o| o.0.len()).collect::<Vec<_>>(),
        )
    };
    let (times, insns, pcs) = run();
    assert_eq!(run(), (times.clone(), insns.clone(), pcs.clone()));
    let q = QUANTUM;
    assert_eq!(insns, vec![2 * q + 10, 2 * q, 2 * q]);
    assert_eq!(
        pcs,
        vec![(2 * q + 10) as usize, 2 * q as usize, 2 * q as usize]
    );
    // The third round starts at T = 2 * QUANTUM: hart 0's last load (8 instructions into its
    // turn) saw T + 8; harts 1 and 2 last loaded QUANTUM - 2 instructions into their turn of
    // the round before, which started at T - QUANTUM.
    let t = 2 * q;
    assert_eq!(times, vec![t + 8, t - 2, t - 2]);
}

/// How a caller slices a run changes nothing: the same harts run in one call and in calls of
/// 777 instructions (ending inside turns, which go on in the next call) retire the same PCs
/// and read the same clock.
#[test]
fn a_run_in_slices_is_the_run_in_one() {
    const LD_T0_0_A2: u32 = 0x0006_3283; // ld t0, 0(a2)
    const ADDI_A3_A3_1: u32 = 0x0016_8693; // addi a3, a3, 1
    const J_BACK8: u32 = 0xff9f_f06f; // j -8
    let run = |slice: u64| {
        let code: &[u32] = &[LD_T0_0_A2, ADDI_A3_A3_1, J_BACK8];
        let mut m = machine(3, &[code; 3]);
        for h in 0..3 {
            m.with_hart(h, |hart| hart.x[12] = 0x0200_bff8);
        }
        let mut obs = vec![PcList::default(), PcList::default(), PcList::default()];
        let total = 10 * QUANTUM + 123;
        let mut done = 0;
        while done < total {
            let n = slice.min(total - done);
            assert_eq!(m.run(&mut obs, n), Stop::InsnLimit);
            done += n;
        }
        let regs: Vec<(u64, u64)> = (0..3).map(|h| (m.hart(h).x[5], m.hart(h).x[13])).collect();
        (regs, obs.into_iter().map(|o| o.0).collect::<Vec<_>>())
    };
    let whole = run(u64::MAX);
    assert_eq!(
        whole.1.iter().map(Vec::len).sum::<usize>(),
        10 * QUANTUM as usize + 123
    );
    assert!(run(777) == whole, "777-instruction slices");
    assert!(run(1) == whole, "1-instruction slices");
}

/// A store by one hart to code another hart has run (and decoded: the harts share their
/// decode cache and blocks) is what that hart runs after its next `fence.i` (unprivileged ISA,
/// "Zifencei": a `fence.i` makes the stores visible to the hart before it visible to its
/// instruction fetches). Hart 0 loops `L: addi t1, t1, 1; fence.i; j L`; hart 1 writes
/// `addi t1, t1, 100` over `L` while hart 0 stands at its `fence.i`.
#[test]
fn another_harts_store_to_code_runs_after_fence_i() {
    const ADDI_T1_T1_1: u32 = 0x0013_0313; // addi t1, t1, 1
    const ADDI_T1_T1_100: u32 = 0x0643_0313; // addi t1, t1, 100
    const FENCE_I: u32 = 0x0000_100f; // fence.i
    const J_BACK8: u32 = 0xff9f_f06f; // j -8
    for blocks in [true, false] {
        let mut m = machine(2, &[&[ADDI_T1_T1_1, FENCE_I, J_BACK8], &[SW_T2_0_A1]]);
        m.with_hart(0, |hart| {
            hart.set_blocks(blocks);
            hart.x[6] = 0;
        });
        m.with_hart(1, |hart| {
            hart.x[11] = 0x8000_0000;
            hart.x[7] = ADDI_T1_T1_100 as u64;
        });
        // Twice round the loop: `L` decoded (and run from a block when blocks are on).
        step(&mut m, 0, 4);
        assert_eq!((m.hart(0).x[6], m.hart(0).pc), (2, 0x8000_0004));
        step(&mut m, 1, 1);
        step(&mut m, 0, 3);
        assert_eq!(m.hart(0).x[6], 102, "blocks {blocks}");
        // Hart 1 runs the new code too (it was decoded by hart 0).
        m.with_hart(1, |hart| {
            hart.pc = 0x8000_0000;
            hart.x[6] = 0;
        });
        step(&mut m, 1, 4);
        assert_eq!(m.hart(1).x[6], 200, "blocks {blocks}");
    }
}
