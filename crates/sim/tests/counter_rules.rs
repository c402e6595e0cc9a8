//! The counter rules instruction by instruction (privileged ISA Zicntr/Zihpm, Sscofpmf,
//! Smcntrpmf), on small hand-encoded M-mode programs: write-after-the-instruction semantics,
//! `ecall` not counted, inhibit, mode filters, events, overflow (OF, `scountovf`, LCOFIP), the
//! implemented range, and the RV32 halves with their carry.

use rvtrace_isa::Xlen;
use rvtrace_sim::counters::{event, hpmevent, CounterConfig};
use rvtrace_sim::csr::num;
use rvtrace_sim::{Config, Hart, Stop};
use rvtrace_testkit::asm::{addi, csrr, csrrw, hart_with_code, ld, sd, ECALL, MRET, NOP};

const BASE: u64 = 0x8000_0000;

const T0: u32 = 5;
const T1: u32 = 6;
const A0: u32 = 10;
const A1: u32 = 11;
const A2: u32 = 12;
const SP: u32 = 2;

/// A hart with `code` at RAM start, `mtvec` at `handler` words into it; registers preset.
fn hart(xlen: Xlen, cfg: CounterConfig, code: &[u32]) -> Hart {
    let mut c = Config::virt(xlen);
    c.counters = cfg;
    let mut h = hart_with_code(c, code);
    h.x[SP as usize] = h.sext(BASE + 0x10_0000);
    h
}

/// Run exactly `n` instructions.
fn step(h: &mut Hart, n: u64) {
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
}

#[test]
fn minstret_write_reads_back_and_the_writer_does_not_count_itself() {
    let code = [
        csrrw(0, num::MINSTRET, T0), // minstret = 100
        csrr(A0, num::MINSTRET),     // reads 100
        NOP,
        csrr(A1, num::MINSTRET), // 100 + csrr + nop = 102
    ];
    let mut h = hart(Xlen::Rv64, CounterConfig::default(), &code);
    h.x[T0 as usize] = 100;
    step(&mut h, 4);
    assert_eq!(h.x[A0 as usize], 100);
    assert_eq!(h.x[A1 as usize], 102);
}

#[test]
fn ecall_is_not_counted_as_retired() {
    // 0: set mtvec; 1..: ecall; handler skips it.
    let handler = 8u64;
    let code = [
        csrrw(0, num::MTVEC, T1),
        csrrw(0, num::MINSTRET, 0), // minstret = 0 (after this instruction)
        ECALL,                      // not counted
        csrr(A0, num::MINSTRET),    // csrrw? no: counted so far: nothing before ecall but...
        NOP,
        NOP,
        NOP,
        NOP,
        // handler (word 8): mepc += 4; mret
        csrr(T0, num::MEPC),
        addi(T0, T0, 4),
        csrrw(0, num::MEPC, T0),
        MRET,
    ];
    let mut h = hart(Xlen::Rv64, CounterConfig::default(), &code);
    h.x[T1 as usize] = BASE + 4 * handler;
    step(&mut h, 8); // mtvec, minstret, ecall, 4 handler insns, csrr
                     // Counted after the write: the four handler instructions (ecall is not).
    assert_eq!(h.x[A0 as usize], 4);
    // The trace view counts the ecall.
    assert_eq!(h.instret, 8);
}

#[test]
fn inhibit_stops_and_the_setting_write_counts_itself() {
    let code = [
        csrrw(0, num::MINSTRET, 0),       // 0
        NOP,                              // 1
        csrrw(0, num::MCOUNTINHIBIT, T0), // 2: counted, then inhibited
        NOP,
        NOP,
        csrr(A0, num::MINSTRET),         // 3
        csrrw(0, num::MCOUNTINHIBIT, 0), // clearing write: not counted
        NOP,
        csrr(A1, num::MINSTRET), // 4
        csrr(A2, num::MCOUNTINHIBIT),
    ];
    let mut h = hart(Xlen::Rv64, CounterConfig::default(), &code);
    h.x[T0 as usize] = u64::MAX;
    step(&mut h, code.len() as u64);
    assert_eq!(h.x[A0 as usize], 2);
    assert_eq!(h.x[A1 as usize], 3);
    // CY, IR and the 16 programmable counters are writable; TM and the rest read 0.
    assert_eq!(h.x[A2 as usize], 0);
    let mut h = hart(
        Xlen::Rv64,
        CounterConfig::default(),
        &[
            csrrw(0, num::MCOUNTINHIBIT, T0),
            csrr(A0, num::MCOUNTINHIBIT),
        ],
    );
    h.x[T0 as usize] = u64::MAX;
    step(&mut h, 2);
    assert_eq!(h.x[A0 as usize], 0x7_fffd);
}

#[test]
fn hpm_counters_count_their_events() {
    let code = [
        csrrw(0, num::MHPMEVENT3, T0),     // INSTRUCTIONS
        csrrw(0, num::MHPMEVENT3 + 1, T1), // L1D read access = loads
        csrrw(0, num::MHPMEVENT3 + 2, A2), // L1D write access = stores
        ld(A0, SP, 0),
        sd(A0, SP, 8),
        ld(A1, SP, 8),
        NOP,
        csrr(A0, num::MHPMCOUNTER3),
        csrr(A1, num::MHPMCOUNTER3 + 1),
        csrr(A2, num::MHPMCOUNTER3 + 2),
    ];
    let mut h = hart(Xlen::Rv64, CounterConfig::default(), &code);
    h.x[T0 as usize] = event::INSTRUCTIONS;
    h.x[T1 as usize] = event::cache(event::L1D, event::OP_READ, event::ACCESS);
    h.x[A2 as usize] = event::cache(event::L1D, event::OP_WRITE, event::ACCESS);
    step(&mut h, code.len() as u64);
    // Counting starts after each mhpmevent write: mhpmevent4, mhpmevent5, 3 memory ops, nop.
    assert_eq!(h.x[A0 as usize], 6);
    assert_eq!(h.x[A1 as usize], 2);
    assert_eq!(h.x[A2 as usize], 1);
}

#[test]
fn overflow_sets_of_scountovf_and_lcofip_once() {
    let code = [
        csrrw(0, num::MHPMCOUNTER3, T0), // preset -3
        csrrw(0, num::MHPMEVENT3, T1),   // INSTRUCTIONS: counting starts after this
        NOP,
        NOP,
        NOP, // wraps here
        csrr(A0, num::MHPMEVENT3),
        csrr(A1, num::SCOUNTOVF),
        csrr(A2, num::MIP),
    ];
    let mut h = hart(Xlen::Rv64, CounterConfig::default(), &code);
    h.x[T0 as usize] = (-3i64) as u64;
    h.x[T1 as usize] = event::INSTRUCTIONS;
    step(&mut h, 4);
    assert_eq!(h.csr.mip_sw & (1 << 13), 0, "not yet wrapped");
    step(&mut h, 1);
    assert_ne!(
        h.csr.mip_sw & (1 << 13),
        0,
        "LCOFIP right after the wrapping instruction"
    );
    step(&mut h, 3);
    assert_eq!(h.x[A0 as usize], hpmevent::OF | event::INSTRUCTIONS);
    assert_eq!(h.x[A1 as usize], 1 << 3);
    assert_ne!(h.x[A2 as usize] & (1 << 13), 0);
}

#[test]
fn a_second_wrap_with_of_set_raises_nothing() {
    let code = [
        csrrw(0, num::MHPMCOUNTER3, T0),
        csrrw(0, num::MHPMEVENT3, T1), // OF already set
        NOP,
        NOP,
        NOP,
        csrr(A0, num::MHPMCOUNTER3),
    ];
    let mut h = hart(Xlen::Rv64, CounterConfig::default(), &code);
    h.x[T0 as usize] = (-2i64) as u64;
    h.x[T1 as usize] = hpmevent::OF | event::INSTRUCTIONS;
    step(&mut h, code.len() as u64);
    assert_eq!(h.csr.mip_sw & (1 << 13), 0);
    assert_eq!(h.x[A0 as usize], 1, "wrapped past zero");
}

#[test]
fn mode_filter_minh_stops_counting_in_m() {
    let code = [
        csrrw(0, num::MHPMEVENT3, T1),
        NOP,
        NOP,
        csrr(A0, num::MHPMCOUNTER3),
        csrrw(0, num::MINSTRETCFG, T0), // MINH on minstret (Smcntrpmf)
        csrrw(0, num::MINSTRET, 0),
        NOP,
        csrr(A1, num::MINSTRET),
    ];
    let mut h = hart(Xlen::Rv64, CounterConfig::default(), &code);
    h.x[T1 as usize] = hpmevent::MINH | event::INSTRUCTIONS;
    h.x[T0 as usize] = hpmevent::MINH;
    step(&mut h, code.len() as u64);
    assert_eq!(h.x[A0 as usize], 0);
    assert_eq!(h.x[A1 as usize], 0);
}

#[test]
fn unimplemented_counters_are_read_only_zero_and_extensions_can_be_off() {
    let code = [
        csrrw(0, num::MHPMCOUNTER3 + 16, T0), // mhpmcounter19: beyond 16
        csrr(A0, num::MHPMCOUNTER3 + 16),
        csrrw(0, num::MHPMEVENT3 + 16, T0),
        csrr(A1, num::MHPMEVENT3 + 16),
    ];
    let mut h = hart(Xlen::Rv64, CounterConfig::default(), &code);
    h.x[T0 as usize] = 77;
    step(&mut h, 4);
    assert_eq!((h.x[A0 as usize], h.x[A1 as usize]), (0, 0));
    // Without Sscofpmf/Smcntrpmf: scountovf and minstretcfg do not exist.
    let cfg = CounterConfig {
        hpm_counters: 4,
        sscofpmf: false,
        smcntrpmf: false,
    };
    let mut h = hart(Xlen::Rv64, cfg, &[]);
    assert_eq!(h.csr_read(num::SCOUNTOVF), None);
    assert_eq!(h.csr_read(num::MINSTRETCFG), None);
    // Without Sscofpmf there is no LCOFI: bit 13 of mie/mip/mideleg is read-only zero.
    for csr in [num::MIE, num::MIP, num::MIDELEG] {
        assert!(h.csr_write(csr, 1 << 13));
        assert_eq!(h.csr_read(csr).unwrap() & (1 << 13), 0, "{csr:#x}");
    }
    assert_eq!(h.csr_read(num::MHPMCOUNTER3 + 3), Some(0));
}

#[test]
fn rv32_halves_carry() {
    let code = [
        csrrw(0, num::MCOUNTINHIBIT, T1), // inhibit IR
        csrrw(0, num::MINSTRET, T0),      // low = 0xffff_fffe
        csrrw(0, num::MINSTRETH, A2),     // high = 5
        csrrw(0, num::MCOUNTINHIBIT, 0),  // count again (this one not counted)
        NOP,
        NOP, // low wraps: 0xffff_fffe + 2
        csrr(A0, num::MINSTRETH),
        csrr(A1, num::MINSTRET),
    ];
    let mut h = hart(Xlen::Rv32, CounterConfig::default(), &code);
    h.x[T1 as usize] = 4;
    h.x[T0 as usize] = h.sext(0xffff_fffe);
    h.x[A2 as usize] = 5;
    step(&mut h, code.len() as u64);
    assert_eq!(h.x[A0 as usize], 6, "carry into minstreth");
    assert_eq!(h.x[A1 as usize], 1, "csrr of minstreth counted too");
}

/// A write to either half replaces the writing instruction's own increment, carry included
/// (riscv-tests rv32mi `instret_overflow`: "writes to instreth are considered writes to
/// instret"): low = all ones, high = all ones, one `nop` wraps the whole counter to 0.
#[test]
fn rv32_half_writes_suppress_the_writers_increment() {
    let code = [
        csrrw(0, num::MINSTRET, T0),  // low = 0xffff_ffff
        csrrw(0, num::MINSTRETH, T0), // high = 0xffff_ffff, low not carried out by this one
        NOP,                          // 0xffff_ffff_ffff_ffff + 1 = 0
        csrr(A0, num::MINSTRET),
        csrr(A1, num::MINSTRETH),
        csrrw(0, num::MINSTRET, A2), // low = 7: the carry of this instruction is gone too
        csrr(A2, num::MINSTRETH),
    ];
    let mut h = hart(Xlen::Rv32, CounterConfig::default(), &code);
    h.x[T0 as usize] = h.sext(0xffff_ffff);
    step(&mut h, 5);
    assert_eq!(h.x[A0 as usize], 0, "minstret after the wrap");
    assert_eq!(h.x[A1 as usize], 0, "minstreth after the wrap");
    // low is 1 now (the csrr of minstreth); set it to 0xffff_ffff again and write the low half
    // to 7 from there: the writer's increment would carry into the high half.
    h.x[A2 as usize] = 7;
    assert!(h.csr_write(num::MINSTRET, 0xffff_ffff));
    step(&mut h, 2);
    assert_eq!(h.x[A2 as usize], 0, "no carry from the writing instruction");
}
