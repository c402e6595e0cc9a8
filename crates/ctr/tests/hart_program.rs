//! CTR on a hart, in both versions (v1.0 and the v0.1.4 draft, through the version's
//! [`Layout`]): a hand-encoded M-mode program enables recording in M-mode, makes a call, a
//! return, a taken and a not-taken branch, a jump and an `ecall` trap with its `mret`,
//! disables recording, and reads the entries back through `siselect`/`sireg*` (v1.0) or
//! `miselect`/`mireg*` (draft 3) into memory; U-mode transitions, access levels and freezes.

use rvtrace_ctr::{csr, ty, Ctr, Layout, Version, CCV, V};
use rvtrace_isa::Xlen;
use rvtrace_sim::csr::num;
use rvtrace_sim::{Config, Hart, Stop};
use rvtrace_testkit::asm::{
    addi, branch, csrr, csrrw, csrs, hart_with_code, jal, jalr, sd, EBREAK, ECALL, MRET, NOP,
};

const BASE: u64 = 0x8000_0000;
const OUT: u64 = BASE + 0x1000;

const RA: u32 = 1;
const T0: u32 = 5;
const T1: u32 = 6;
const T2: u32 = 7;
const A0: u32 = 10;
const S1: u32 = 9;

const HANDLER: usize = 96;
const READS: usize = 7;

const VERSIONS: [Version; 2] = [Version::V1_0, Version::Draft0_1_4];

/// The entry window a version's M-mode code reads through: `(select, reg, reg2, reg3)`.
fn window(l: &Layout) -> (u16, u16, u16, u16) {
    if l.machine_window {
        (csr::MISELECT, csr::MIREG, csr::MIREG2, csr::MIREG3)
    } else {
        (csr::SISELECT, csr::SIREG, csr::SIREG2, csr::SIREG3)
    }
}

/// Store logical entries 0..n (24 bytes each) at `S1` through the version's window.
fn read_entries(c: &mut Vec<u32>, l: &Layout, n: usize) {
    let (sel, r1, r2, r3) = window(l);
    for k in 0..n as i32 {
        c.extend([
            addi(T1, 0, 0x200 + k),
            csrrw(0, sel, T1),
            csrr(T2, r1),
            sd(T2, S1, 24 * k),
            csrr(T2, r2),
            sd(T2, S1, 24 * k + 8),
            csrr(T2, r3),
            sd(T2, S1, 24 * k + 16),
        ]);
    }
}

/// The program and the word index where it ends.
fn program(l: &Layout) -> (Vec<u32>, usize) {
    let mut c = vec![
        addi(T0, 0, l.m as i32), // 0
        csrrw(0, l.mctrctl, T0), // 1: record in M
        jal(RA, 16),             // 2: call -> 6
        branch(0, 0, 0, 8),      // 3: beq taken -> 5
        NOP,                     // 4
        jal(0, 12),              // 5: jump -> 8
        addi(A0, A0, 1),         // 6: callee
        jalr(0, RA, 0),          // 7: return -> 3
        branch(1, 0, 0, 8),      // 8: bne not taken (NTBREN = 0: not recorded)
        ECALL,                   // 9: exception M -> M
        csrrw(0, l.mctrctl, 0),  // 10: recording off
    ];
    // Read logical entries 0..READS into OUT (24 bytes each), then sctrstatus.
    read_entries(&mut c, l, READS);
    c.extend([csrr(T2, l.sctrstatus), sd(T2, S1, 24 * READS as i32)]);
    let end = c.len();
    assert!(end < HANDLER);
    c.resize(HANDLER, NOP);
    // Handler: skip the ecall.
    c.extend([
        csrr(T1, num::MEPC),
        addi(T1, T1, 4),
        csrrw(0, num::MEPC, T1),
        MRET,
    ]);
    (c, end)
}

fn hart(v: Version, code: &[u32]) -> Hart {
    let mut h = hart_with_code(Config::virt(Xlen::Rv64), code);
    assert!(h.pmp_allow_all()); // the S/U-mode parts need a PMP entry
    h.x[S1 as usize] = OUT;
    assert!(h.csr_write(num::MTVEC, BASE + 4 * HANDLER as u64));
    h.attach(Box::new(Ctr::new(v)));
    h
}

fn read64(h: &Hart, addr: u64) -> u64 {
    let mut b = [0u8; 8];
    assert!(h.bus.read_ram(addr, &mut b));
    u64::from_le_bytes(b)
}

#[test]
fn m_mode_calls_returns_branches_and_a_trap_read_back_through_sireg() {
    for v in VERSIONS {
        m_mode_program(v);
    }
}

fn m_mode_program(v: Version) {
    let l = v.layout();
    let (code, end) = program(l);
    let mut h = hart(v, &code);
    // 9 instructions to the ecall (words 4 and 9.. skipped or later), 4 in the handler, then
    // words 10..end.
    let n = 9 + 4 + (end - 10) as u64;
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
    assert_eq!(h.pc, BASE + 4 * end as u64);
    let a = |w: u64| BASE + 4 * w;
    let h_at = |w: usize| BASE + 4 * w as u64;
    // Youngest first: (source, target, type, CCV, CC). CC is in cycles = retirements here
    // (no timing model): the instructions retired since the previous record, the recorded
    // one included. The first record after the mctrctl write has CCV = 0 ("Cycle Counting").
    // The ecall's own cycle counts toward the record after its exception (see the README).
    // MISP (ctrtarget bit 0) from the hart's default predictor (`rvtrace_sim::uarch` module
    // docs): the cold direction predictor predicts not-taken, so the taken `beq` is
    // mispredicted; the return is predicted by the return-address stack; direct jumps and
    // calls are never mispredicts; trap returns are not predicted.
    let want = [
        (h_at(HANDLER + 3), a(10), ty::TRAP_RETURN, true, 5),
        (a(9), h_at(HANDLER), ty::EXCEPTION, true, 1),
        (a(5), a(8), ty::DIRECT_JUMP, true, 1),
        (a(3), a(5) | 1, ty::TAKEN_BRANCH, true, 1),
        (a(7), a(3), ty::RETURN, true, 2),
        (a(2), a(6), ty::DIRECT_CALL, false, 2),
    ];
    for (k, (src, tgt, t, ccv, cc)) in want.iter().enumerate() {
        let e = OUT + 24 * k as u64;
        let data = (*cc as u64) << 16 | if *ccv { CCV } else { 0 } | *t as u64;
        assert_eq!(
            (read64(&h, e), read64(&h, e + 8), read64(&h, e + 16)),
            (src | V, *tgt, data),
            "{v:?}: logical entry {k}"
        );
    }
    // Logical entry 6 was never written: 0.
    for off in [0, 8, 16] {
        assert_eq!(read64(&h, OUT + 24 * 6 + off), 0);
    }
    // WRPTR = 6 records, not frozen.
    assert_eq!(read64(&h, OUT + 24 * READS as u64), 6);

    // Without a predictor, MISP is not implemented: never set, read-only 0.
    let mut h = hart(v, &code);
    h.uarch = rvtrace_sim::uarch::Uarch::new(&{
        let mut u = rvtrace_sim::uarch::UarchConfig::default();
        u.set_bpred("off").unwrap();
        u
    });
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
    assert_eq!(read64(&h, OUT + 24 * 3 + 8), a(5));
    assert!(h.csr_write(csr::SISELECT, 0x200));
    assert!(h.csr_write(csr::SIREG2, 0x1235));
    assert_eq!(h.csr_read(csr::SIREG2), Some(0x1234));
}

#[test]
fn ctr_csrs_on_a_hart() {
    // v1.0: DEPTH in sctrdepth (7 reads back 4); draft: DEPTH 19:16 of the control register
    // (1111 = 256, draft 6), CLR reads 0.
    for (v, depth) in [(Version::V1_0, 0), (Version::Draft0_1_4, 0xf << 16)] {
        let l = v.layout();
        let mut h = hart(v, &[NOP]);
        assert!(h.csr_write(l.mctrctl, u64::MAX));
        assert_eq!(h.csr_read(l.mctrctl), Some(l.mctrctl_mask | depth));
        assert_eq!(h.csr_read(l.sctrctl), Some(l.sctrctl_mask | depth));
        if let Some(d) = l.sctrdepth {
            assert!(h.csr_write(d, 7));
            assert_eq!(h.csr_read(d), Some(4));
        }
        assert_eq!(h.extension_mut::<Ctr>().unwrap().depth(), 256);
        // With the hart's predictor (on by default) MISP is implemented, so writable.
        assert!(h.csr_write(csr::SISELECT, 0x200));
        assert!(h.csr_write(csr::SIREG2, 0x1235));
        assert_eq!(h.csr_read(csr::SIREG2), Some(0x1235));
        // The other version's control register does not exist here.
        let other = if v == Version::V1_0 { 0x381 } else { 0x34e };
        assert_eq!(h.csr_read(other), None);
    }
}

const UCODE: usize = 16;
const UHANDLER: usize = 32;
const UREADS: usize = 4;

/// M-mode enables CTR with `t0`, `mret`s to U-mode (word 16), which jumps and makes an
/// `ecall`; the M-mode handler stops recording and stores logical entries 0..4 to OUT.
fn u_program(l: &Layout) -> (Vec<u32>, usize) {
    let mut c = vec![
        csrrw(0, l.mctrctl, T0),   // 0
        csrrw(0, num::MEPC, T1),   // 1: mepc = U code
        csrrw(0, num::MSTATUS, 0), // 2: MPP = U
        MRET,                      // 3: M -> U
    ];
    c.resize(UCODE, NOP);
    c.extend([jal(0, 8), NOP, ECALL]); // 16: jump -> 18; 18: ecall U -> M
    c.resize(UHANDLER, NOP);
    c.push(csrrw(0, l.mctrctl, 0));
    read_entries(&mut c, l, UREADS);
    let end = c.len();
    (c, end)
}

/// Run the U-mode program with `mctrctl = ctl`; the entries (source, target, type) youngest
/// first, up to the first invalid one.
fn run_u(v: Version, ctl: u64) -> Vec<(u64, u64, u8)> {
    let (code, end) = u_program(v.layout());
    let mut h = hart(v, &code);
    h.x[T0 as usize] = ctl;
    h.x[T1 as usize] = BASE + 4 * UCODE as u64;
    assert!(h.csr_write(num::MTVEC, BASE + 4 * UHANDLER as u64));
    let n = 4 + 2 + (end - UHANDLER) as u64;
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
    assert_eq!(h.pc, BASE + 4 * end as u64);
    (0..UREADS as u64)
        .map(|k| {
            let e = OUT + 24 * k;
            (read64(&h, e), read64(&h, e + 8), read64(&h, e + 16))
        })
        .take_while(|(s, _, _)| s & V != 0)
        .map(|(s, t, d)| (s & !1, t, (d & 0xf) as u8))
        .collect()
}

// "Privilege Mode Transitions" (table "Trap and Trap Return Recording") and "External Traps"
// (table "External Trap Enable Requirements") on a hart, U-mode <-> M-mode.
// Draft 5.1 and 5.2.1: the same table; external traps need ETEN and the target's xTE only.
#[test]
fn u_mode_transitions_on_a_hart() {
    for v in VERSIONS {
        u_mode_transitions(v);
    }
}

fn u_mode_transitions(v: Version) {
    let l = v.layout();
    let run_u = |ctl: u64| run_u(v, ctl);
    let a = |w: usize| BASE + 4 * w as u64;
    let jump = (a(UCODE), a(UCODE + 2), ty::DIRECT_JUMP);
    let ecall = a(UCODE + 2);
    // U only: the mret from disabled M is not recorded, the external trap not by default.
    assert_eq!(run_u(l.u), vec![jump]);
    // External trap U -> M: v1.0 needs MTE and the intervening STE, the draft ETEN and MTE;
    // its target is 0.
    let external = vec![(ecall, 0, ty::EXCEPTION), jump];
    assert_eq!(run_u(l.u | l.mte), vec![jump]);
    match v {
        Version::V1_0 => assert_eq!(run_u(l.u | l.mte | l.ste), external),
        Version::Draft0_1_4 => {
            assert_eq!(run_u(l.u | l.mte | l.ste), vec![jump]);
            assert_eq!(run_u(l.u | l.eten | l.ste), vec![jump]);
            assert_eq!(run_u(l.u | l.eten | l.mte), external);
        }
    }
    // Both enabled: complete records.
    assert_eq!(
        run_u(l.u | l.m),
        vec![
            (ecall, a(UHANDLER), ty::EXCEPTION),
            jump,
            (a(3), a(UCODE), ty::TRAP_RETURN)
        ]
    );
    // M only: the mret to disabled U has target 0, the trap from disabled U source 0.
    assert_eq!(
        run_u(l.m),
        vec![(0, a(UHANDLER), ty::EXCEPTION), (a(3), 0, ty::TRAP_RETURN)]
    );
}

// S-level CTR CSRs are not accessible from U-mode (csr[9:8] = 1): reading sctrstatus there
// raises an illegal-instruction exception (cause 2).
#[test]
fn u_mode_cannot_read_sctrstatus() {
    for v in VERSIONS {
        let mut c = vec![csrrw(0, num::MEPC, T1), csrrw(0, num::MSTATUS, 0), MRET];
        c.resize(UCODE, NOP);
        c.push(csrr(T2, v.layout().sctrstatus));
        c.resize(UHANDLER + 1, NOP);
        let mut h = hart(v, &c);
        h.x[T1 as usize] = BASE + 4 * UCODE as u64;
        assert!(h.csr_write(num::MTVEC, BASE + 4 * UHANDLER as u64));
        assert_eq!(h.run(&mut (), 3), Stop::InsnLimit);
        assert_eq!(h.priv_, 0);
        assert_eq!(h.run(&mut (), 1), Stop::InsnLimit);
        assert_eq!(h.csr_read(num::MCAUSE), Some(2), "{v:?}");
    }
}

/// Handler of the freeze tests: store `sctrstatus`, then a jump that must not be recorded
/// (frozen), then the entries 0..4.
fn freeze_handler(c: &mut Vec<u32>, l: &Layout) -> usize {
    c.resize(HANDLER, NOP);
    c.extend([
        csrr(T2, l.sctrstatus),
        sd(T2, S1, 24 * UREADS as i32),
        jal(0, 4),
    ]);
    read_entries(c, l, UREADS);
    c.len()
}

/// (source, target without MISP, type) of the valid entries, youngest first, and `sctrstatus`.
fn stored(h: &Hart) -> (Vec<(u64, u64, u8)>, u64) {
    let e = (0..UREADS as u64)
        .map(|k| {
            let e = OUT + 24 * k;
            (read64(h, e), read64(h, e + 8), read64(h, e + 16))
        })
        .take_while(|(s, _, _)| s & V != 0)
        .map(|(s, t, d)| (s & !1, t & !1, (d & 0xf) as u8))
        .collect();
    (e, read64(h, OUT + 24 * UREADS as u64))
}

// "Freeze": a breakpoint exception with BPFRZ sets FROZEN and is not recorded; nothing is
// recorded while frozen (the handler's jump).
#[test]
fn breakpoint_freezes() {
    for v in VERSIONS {
        breakpoint_freeze(v);
    }
}

fn breakpoint_freeze(v: Version) {
    let l = v.layout();
    let a = |w: usize| BASE + 4 * w as u64;
    let mut c = vec![
        csrrw(0, l.mctrctl, T0), // 0
        jal(0, 4),               // 1: recorded
        EBREAK,                  // 2: ebreak -> HANDLER (freezes)
    ];
    let end = freeze_handler(&mut c, l);
    let mut h = hart(v, &c);
    h.x[T0 as usize] = l.m | l.bpfrz;
    let n = 3 + (end - HANDLER) as u64;
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
    assert_eq!(h.pc, a(end));
    assert_eq!(h.csr_read(num::MCAUSE), Some(3));
    let (entries, status) = stored(&h);
    assert_eq!(entries, vec![(a(1), a(2), ty::DIRECT_JUMP)]);
    assert_eq!(status, l.frozen | 1);

    // With no mode recording, the breakpoint still freezes.
    let mut h = hart(v, &c);
    h.x[T0 as usize] = l.bpfrz;
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
    assert_eq!(stored(&h), (vec![], l.frozen));
}

// "Freeze": an LCOFI (Sscofpmf counter overflow) trapping to M-mode with LCOFIFRZ sets FROZEN
// and is not recorded; the transfers before it stay.
#[test]
fn counter_overflow_interrupt_freezes() {
    for v in VERSIONS {
        counter_overflow_freeze(v);
    }
}

fn counter_overflow_freeze(v: Version) {
    use rvtrace_sim::counters::event;
    let l = v.layout();
    let a = |w: usize| BASE + 4 * w as u64;
    let mut c = vec![csrrw(0, l.mctrctl, T0)];
    c.extend([jal(0, 4); 11]); // word k jumps to k + 1
    let end = freeze_handler(&mut c, l);
    let mut h = hart(v, &c);
    h.x[T0 as usize] = l.m | l.lcofifrz;
    assert!(h.csr_write(num::MIE, 1 << 13));
    assert!(h.csr_write(num::MSTATUS, 1 << 3)); // MIE
    assert!(h.csr_write(num::MHPMCOUNTER3, (-4i64) as u64));
    assert!(h.csr_write(num::MHPMEVENT3, event::INSTRUCTIONS));
    // Step until the interrupt has entered the handler (it is taken inside a one-instruction
    // run, which then retires the handler's first instruction).
    for _ in 0..12 {
        assert_eq!(h.run(&mut (), 1), Stop::InsnLimit);
        if h.pc >= a(HANDLER) {
            break;
        }
    }
    assert_eq!(h.pc, a(HANDLER + 1));
    assert_eq!(h.csr_read(num::MCAUSE), Some(1 << 63 | 13));
    let epc = h.csr_read(num::MEPC).unwrap();
    assert!(
        epc > a(1) && epc < a(12),
        "interrupted inside the jumps: {epc:#x}"
    );
    assert_eq!(h.run(&mut (), (end - HANDLER - 1) as u64), Stop::InsnLimit);
    assert_eq!(h.pc, a(end));
    // Every jump before the interrupted pc, youngest first; no interrupt record.
    let done = ((epc - a(1)) / 4) as usize;
    let want: Vec<_> = (1..=done)
        .rev()
        .take(UREADS)
        .map(|k| (a(k), a(k + 1), ty::DIRECT_JUMP))
        .collect();
    let (entries, status) = stored(&h);
    assert_eq!(entries, want);
    assert_eq!(status, l.frozen | done as u64);
}

// The draft on an RV32 hart (draft 2.1, 2.4, 2.6, 3): `mctrcontrolh` sets NTBREN (bit 36,
// unreachable in v1.0 RV32), `mctrcontrol` M and DEPTH 0001 (32 entries); a not-taken and a
// taken branch are recorded and read back through `miselect`/`mireg*`; `csrs mctrcontrol`
// with CLR then zeroes them and `mctrstatus`, and CLR reads back 0.
#[test]
fn draft_rv32_upper_half_and_clr_on_a_hart() {
    use rvtrace_ctr::draft::{csr as dc, ctl as d};
    let a = |w: u64| BASE + 4 * w;
    let code = [
        csrrw(0, dc::MCTRCONTROLH, T0), // 0: NTBREN
        csrrw(0, dc::MCTRCONTROL, T1),  // 1: M, DEPTH 0001
        branch(1, 0, 0, 8),             // 2: bne x0, x0: not taken
        branch(0, 0, 0, 8),             // 3: beq x0, x0: taken -> 5
        NOP,                            // 4
        csrs(dc::MCTRCONTROL, T2),      // 5: CLR
        NOP,                            // 6
    ];
    let mut h = hart_with_code(Config::virt(Xlen::Rv32), &code);
    h.attach(Box::new(Ctr::new(Version::Draft0_1_4)));
    h.x[T0 as usize] = d::NTBREN >> 32;
    h.x[T1 as usize] = d::M | 1 << 16;
    h.x[T2 as usize] = d::CLR;
    assert_eq!(h.run(&mut (), 4), Stop::InsnLimit);
    assert_eq!(h.pc, a(5));
    assert_eq!(h.csr_read(dc::MCTRCONTROLH), Some(d::NTBREN >> 32));
    assert_eq!(h.csr_read(dc::MCTRCONTROL), Some(d::M | 1 << 16));
    assert_eq!(h.csr_read(dc::MCTRSTATUS), Some(2));
    let entry = |h: &mut Hart, x: u64| {
        assert!(h.csr_write(csr::MISELECT, 0x200 + x));
        // (The hart holds RV32 values sign-extended.)
        let r = |h: &mut Hart, c| h.csr_read(c).unwrap() & 0xffff_ffff;
        (
            r(h, csr::MIREG),
            r(h, csr::MIREG2) & !1,
            r(h, csr::MIREG3) & 0xf,
        )
    };
    assert_eq!(entry(&mut h, 0), (a(3) | V, a(5), ty::TAKEN_BRANCH as u64));
    assert_eq!(
        entry(&mut h, 1),
        (a(2) | V, a(3), ty::NOT_TAKEN_BRANCH as u64)
    );
    assert_eq!(h.run(&mut (), 1), Stop::InsnLimit);
    assert_eq!(h.csr_read(dc::MCTRCONTROL), Some(d::M | 1 << 16));
    assert_eq!(h.csr_read(dc::MCTRSTATUS), Some(0));
    assert_eq!(entry(&mut h, 31), (0, 0, 0));
    assert!((0..32).all(|x| entry(&mut h, x) == (0, 0, 0)));
    // The ...h CSRs are RV32-only (draft 2.6): not on an RV64 hart.
    let mut h = hart(Version::Draft0_1_4, &[NOP]);
    assert_eq!(h.csr_read(dc::MCTRCONTROLH), None);
    assert!(!h.csr_write(dc::SCTRCONTROLH, 0));
}
