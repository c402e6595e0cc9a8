//! CTR v1.0 on a hart: a hand-encoded M-mode program enables recording in M-mode, makes a
//! call, a return, a taken and a not-taken branch, a jump and an `ecall` trap with its `mret`,
//! disables recording, and reads the entries back through `siselect`/`sireg*` into memory.

use rvtrace_ctr::{csr, ctl, ty, Ctr, CCV, V};
use rvtrace_isa::Xlen;
use rvtrace_sim::csr::num;
use rvtrace_sim::{Config, Hart, Stop};
use rvtrace_testkit::asm::{
    addi, branch, csrr, csrrw, hart_with_code, jal, jalr, sd, EBREAK, ECALL, MRET, NOP,
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

/// The program and the word index where it ends.
fn program() -> (Vec<u32>, usize) {
    let mut c = vec![
        addi(T0, 0, ctl::M as i32), // 0
        csrrw(0, csr::MCTRCTL, T0), // 1: record in M
        jal(RA, 16),                // 2: call -> 6
        branch(0, 0, 0, 8),         // 3: beq taken -> 5
        NOP,                        // 4
        jal(0, 12),                 // 5: jump -> 8
        addi(A0, A0, 1),            // 6: callee
        jalr(0, RA, 0),             // 7: return -> 3
        branch(1, 0, 0, 8),         // 8: bne not taken (NTBREN = 0: not recorded)
        ECALL,                      // 9: exception M -> M
        csrrw(0, csr::MCTRCTL, 0),  // 10: recording off
    ];
    // Read logical entries 0..READS into OUT (24 bytes each), then sctrstatus.
    for k in 0..READS as i32 {
        c.extend([
            addi(T1, 0, 0x200 + k),
            csrrw(0, csr::SISELECT, T1),
            csrr(T2, csr::SIREG),
            sd(T2, S1, 24 * k),
            csrr(T2, csr::SIREG2),
            sd(T2, S1, 24 * k + 8),
            csrr(T2, csr::SIREG3),
            sd(T2, S1, 24 * k + 16),
        ]);
    }
    c.extend([csrr(T2, csr::SCTRSTATUS), sd(T2, S1, 24 * READS as i32)]);
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

fn hart(code: &[u32]) -> Hart {
    let mut h = hart_with_code(Config::virt(Xlen::Rv64, "ctr"), code);
    h.x[S1 as usize] = OUT;
    assert!(h.csr_write(num::MTVEC, BASE + 4 * HANDLER as u64));
    h.attach(Box::new(Ctr::default()));
    h
}

fn read64(h: &Hart, addr: u64) -> u64 {
    let mut b = [0u8; 8];
    assert!(h.bus.read_ram(addr, &mut b));
    u64::from_le_bytes(b)
}

#[test]
fn m_mode_calls_returns_branches_and_a_trap_read_back_through_sireg() {
    let (code, end) = program();
    let mut h = hart(&code);
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
            "logical entry {k}"
        );
    }
    // Logical entry 6 was never written: 0.
    for off in [0, 8, 16] {
        assert_eq!(read64(&h, OUT + 24 * 6 + off), 0);
    }
    // WRPTR = 6 records, not frozen.
    assert_eq!(read64(&h, OUT + 24 * READS as u64), 6);

    // Without a predictor, MISP is not implemented: never set, read-only 0.
    let mut h = hart(&code);
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
fn ctr_csrs_are_s_level_and_mctrctl_m_level() {
    let mut h = hart(&[NOP]);
    assert!(h.csr_write(csr::MCTRCTL, u64::MAX));
    assert_eq!(h.csr_read(csr::MCTRCTL), Some(ctl::MCTRCTL_MASK));
    assert_eq!(h.csr_read(csr::SCTRCTL), Some(ctl::SCTRCTL_MASK));
    assert!(h.csr_write(csr::SCTRDEPTH, 7));
    assert_eq!(h.csr_read(csr::SCTRDEPTH), Some(4));
    // With the hart's predictor (on by default) MISP is implemented, so writable.
    assert!(h.csr_write(csr::SISELECT, 0x200));
    assert!(h.csr_write(csr::SIREG2, 0x1235));
    assert_eq!(h.csr_read(csr::SIREG2), Some(0x1235));
    assert!(h.extension_mut::<Ctr>().is_some());
}

const UCODE: usize = 16;
const UHANDLER: usize = 32;
const UREADS: usize = 4;

/// M-mode enables CTR with `t0`, `mret`s to U-mode (word 16), which jumps and makes an
/// `ecall`; the M-mode handler stops recording and stores logical entries 0..4 to OUT.
fn u_program() -> (Vec<u32>, usize) {
    let mut c = vec![
        csrrw(0, csr::MCTRCTL, T0), // 0
        csrrw(0, num::MEPC, T1),    // 1: mepc = U code
        csrrw(0, num::MSTATUS, 0),  // 2: MPP = U
        MRET,                       // 3: M -> U
    ];
    c.resize(UCODE, NOP);
    c.extend([jal(0, 8), NOP, ECALL]); // 16: jump -> 18; 18: ecall U -> M
    c.resize(UHANDLER, NOP);
    c.push(csrrw(0, csr::MCTRCTL, 0));
    for k in 0..UREADS as i32 {
        c.extend([
            addi(T1, 0, 0x200 + k),
            csrrw(0, csr::SISELECT, T1),
            csrr(T2, csr::SIREG),
            sd(T2, S1, 24 * k),
            csrr(T2, csr::SIREG2),
            sd(T2, S1, 24 * k + 8),
            csrr(T2, csr::SIREG3),
            sd(T2, S1, 24 * k + 16),
        ]);
    }
    let end = c.len();
    (c, end)
}

/// Run the U-mode program with `mctrctl = ctl`; the entries (source, target, type) youngest
/// first, up to the first invalid one.
fn run_u(ctl: u64) -> Vec<(u64, u64, u8)> {
    let (code, end) = u_program();
    let mut h = hart(&code);
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
#[test]
fn u_mode_transitions_on_a_hart() {
    let a = |w: usize| BASE + 4 * w as u64;
    let jump = (a(UCODE), a(UCODE + 2), ty::DIRECT_JUMP);
    let ecall = a(UCODE + 2);
    // U only: the mret from disabled M is not recorded, the external trap not by default.
    assert_eq!(run_u(ctl::U), vec![jump]);
    // External trap U -> M needs MTE and the intervening STE; its target is 0.
    assert_eq!(run_u(ctl::U | ctl::MTE), vec![jump]);
    assert_eq!(
        run_u(ctl::U | ctl::MTE | ctl::STE),
        vec![(ecall, 0, ty::EXCEPTION), jump]
    );
    // Both enabled: complete records.
    assert_eq!(
        run_u(ctl::U | ctl::M),
        vec![
            (ecall, a(UHANDLER), ty::EXCEPTION),
            jump,
            (a(3), a(UCODE), ty::TRAP_RETURN)
        ]
    );
    // M only: the mret to disabled U has target 0, the trap from disabled U source 0.
    assert_eq!(
        run_u(ctl::M),
        vec![(0, a(UHANDLER), ty::EXCEPTION), (a(3), 0, ty::TRAP_RETURN)]
    );
}

// S-level CTR CSRs are not accessible from U-mode (csr[9:8] = 1): reading sctrstatus there
// raises an illegal-instruction exception (cause 2).
#[test]
fn u_mode_cannot_read_sctrstatus() {
    let mut c = vec![csrrw(0, num::MEPC, T1), csrrw(0, num::MSTATUS, 0), MRET];
    c.resize(UCODE, NOP);
    c.push(csrr(T2, csr::SCTRSTATUS));
    c.resize(UHANDLER + 1, NOP);
    let mut h = hart(&c);
    h.x[T1 as usize] = BASE + 4 * UCODE as u64;
    assert!(h.csr_write(num::MTVEC, BASE + 4 * UHANDLER as u64));
    assert_eq!(h.run(&mut (), 3), Stop::InsnLimit);
    assert_eq!(h.priv_, 0);
    assert_eq!(h.run(&mut (), 1), Stop::InsnLimit);
    assert_eq!(h.csr_read(num::MCAUSE), Some(2));
}

/// Handler of the freeze tests: store `sctrstatus`, then a jump that must not be recorded
/// (frozen), then the entries 0..4.
fn freeze_handler(c: &mut Vec<u32>) -> usize {
    c.resize(HANDLER, NOP);
    c.extend([
        csrr(T2, csr::SCTRSTATUS),
        sd(T2, S1, 24 * UREADS as i32),
        jal(0, 4),
    ]);
    for k in 0..UREADS as i32 {
        c.extend([
            addi(T1, 0, 0x200 + k),
            csrrw(0, csr::SISELECT, T1),
            csrr(T2, csr::SIREG),
            sd(T2, S1, 24 * k),
            csrr(T2, csr::SIREG2),
            sd(T2, S1, 24 * k + 8),
            csrr(T2, csr::SIREG3),
            sd(T2, S1, 24 * k + 16),
        ]);
    }
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
    let a = |w: usize| BASE + 4 * w as u64;
    let mut c = vec![
        csrrw(0, csr::MCTRCTL, T0), // 0
        jal(0, 4),                  // 1: recorded
        EBREAK,                     // 2: ebreak -> HANDLER (freezes)
    ];
    let end = freeze_handler(&mut c);
    let mut h = hart(&c);
    h.x[T0 as usize] = ctl::M | ctl::BPFRZ;
    let n = 3 + (end - HANDLER) as u64;
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
    assert_eq!(h.pc, a(end));
    assert_eq!(h.csr_read(num::MCAUSE), Some(3));
    let (entries, status) = stored(&h);
    assert_eq!(entries, vec![(a(1), a(2), ty::DIRECT_JUMP)]);
    assert_eq!(status, rvtrace_ctr::FROZEN | 1);

    // With no mode recording, the breakpoint still freezes.
    let mut h = hart(&c);
    h.x[T0 as usize] = ctl::BPFRZ;
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
    assert_eq!(stored(&h), (vec![], rvtrace_ctr::FROZEN));
}

// "Freeze": an LCOFI (Sscofpmf counter overflow) trapping to M-mode with LCOFIFRZ sets FROZEN
// and is not recorded; the transfers before it stay.
#[test]
fn counter_overflow_interrupt_freezes() {
    use rvtrace_sim::counters::event;
    let a = |w: usize| BASE + 4 * w as u64;
    let mut c = vec![csrrw(0, csr::MCTRCTL, T0)];
    c.extend([jal(0, 4); 11]); // word k jumps to k + 1
    let end = freeze_handler(&mut c);
    let mut h = hart(&c);
    h.x[T0 as usize] = ctl::M | ctl::LCOFIFRZ;
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
    assert_eq!(status, rvtrace_ctr::FROZEN | done as u64);
}
