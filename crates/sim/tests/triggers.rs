//! Debug triggers (Sdtrig, `trigger.rs`) where a test program on QEMU 7.2 cannot show the
//! model's behaviour: the cases where the model follows the Debug spec and QEMU 7.2 does not
//! (crates/sim/README.md, "Debug triggers"), and trap-loop detection with triggers.
//! `programs/src/triggers.c` covers the rest, PC for PC with QEMU.

use rvtrace_isa::Xlen;
use rvtrace_sim::bus::RAM_BASE;
use rvtrace_sim::csr::num;
use rvtrace_sim::trigger::field::{EXECUTE, LOAD, M, STORE};
use rvtrace_sim::{Config, Hart, Observer, Stop, TrapInfo, REPEAT_THRESHOLD};
use rvtrace_testkit::asm::{addi, csrr, csrrw, hart_with_code, i_type, r_type, s_type, MRET};

const TYPE2: u64 = 2 << 60;
const T0: u32 = 5;
const A0: u32 = 10;
const A1: u32 = 11;
const A2: u32 = 12;
/// Where the tests' data lives.
const DATA: u64 = RAM_BASE + 0x1000;

fn lw(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(imm.into(), rs1, 2, rd, 0x03)
}
fn lb(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(imm.into(), rs1, 0, rd, 0x03)
}
fn sw(rs2: u32, rs1: u32, imm: i32) -> u32 {
    s_type(imm.into(), rs2, rs1, 2)
}
fn amoadd_w(rd: u32, rs2: u32, rs1: u32) -> u32 {
    r_type(0, rs2, rs1, 2, rd, 0x2f)
}
fn lr_w(rd: u32, rs1: u32) -> u32 {
    r_type(0x08, 0, rs1, 2, rd, 0x2f)
}
fn lui(rd: u32, imm20: u32) -> u32 {
    imm20 << 12 | rd << 7 | 0x37
}

/// Stops at the first trap and keeps it.
#[derive(Default)]
struct FirstTrap(Option<TrapInfo>);

impl Observer for FirstTrap {
    fn trap(&mut self, ev: &TrapInfo) {
        self.0.get_or_insert(*ev);
    }
    fn stop_requested(&mut self) -> bool {
        self.0.is_some()
    }
}

/// An RV64 hart with `code` at RAM, `a2` = `addr`, and trigger 0 set to `tdata1` at `tdata2`;
/// runs to the first trap and returns its cause and epc offset (`None`: no trap).
fn first_trap(code: &[u32], addr: u64, tdata1: u64, tdata2: u64) -> Option<(u64, u64)> {
    let mut h = hart_with_code(Config::virt(Xlen::Rv64), code);
    h.x[A2 as usize] = addr;
    assert!(h.csr_write(num::TDATA2, tdata2));
    assert!(h.csr_write(num::TDATA1, tdata1));
    assert_eq!(h.csr_read(num::TDATA1), Some(tdata1), "kept as written");
    let mut obs = FirstTrap::default();
    let stop = h.run(&mut obs, code.len() as u64);
    let t = obs.0?;
    assert_eq!(stop, Stop::Requested);
    if t.cause == 3 {
        assert_eq!(t.tval, 0, "a breakpoint's tval is 0 (QEMU 7.2)");
    }
    Some((t.cause, t.epc - RAM_BASE))
}

/// "Trigger Module Registers": writing 0 to `tdata1` disables the trigger (the model reads
/// back the reset value, a type-2 trigger with nothing enabled; QEMU 7.2 ignores the write).
#[test]
fn writing_zero_disables() {
    let mut h = hart_with_code(Config::virt(Xlen::Rv64), &[lw(A0, A2, 0)]);
    h.x[A2 as usize] = DATA;
    h.csr_write(num::TDATA2, DATA);
    h.csr_write(num::TDATA1, TYPE2 | M | LOAD);
    h.csr_write(num::TDATA1, 0);
    assert_eq!(h.csr_read(num::TDATA1), Some(TYPE2));
    let mut obs = FirstTrap::default();
    assert_eq!(h.run(&mut obs, 1), Stop::InsnLimit);
    assert!(obs.0.is_none());
    // RV32: type in bits 31:28.
    let mut h = hart_with_code(Config::virt(Xlen::Rv32), &[]);
    h.csr_write(num::TDATA1, 0x2000_0000 | M | LOAD);
    assert_eq!(h.csr_read(num::TDATA1), Some(0x2000_0000 | M | LOAD));
    h.csr_write(num::TDATA1, 0);
    assert_eq!(h.csr_read(num::TDATA1), Some(0x2000_0000));
}

/// match = 0 compares `tdata2` with the address of each byte accessed; a size other than any
/// restricts the trigger to accesses of that size (mcontrol "size"). QEMU 7.2 watches a range
/// after `tdata2` instead.
#[test]
fn data_matches_the_accessed_bytes_and_the_size() {
    let bp = Some((3, 0));
    let lo = TYPE2 | M | LOAD;
    // Size any: a word that contains tdata2 (misaligned, from 2 bytes below) fires ...
    assert_eq!(first_trap(&[lw(A0, A2, 0)], DATA - 2, lo, DATA), bp);
    assert_eq!(first_trap(&[lw(A0, A2, 0)], DATA + 3 - 3, lo, DATA + 3), bp);
    // ... one that starts after it does not (QEMU: it does, up to XLEN/8 bytes after).
    assert_eq!(first_trap(&[lw(A0, A2, 0)], DATA + 1, lo, DATA), None);
    assert_eq!(first_trap(&[lw(A0, A2, 0)], DATA + 4, lo, DATA), None);
    assert_eq!(first_trap(&[lw(A0, A2, 0)], DATA - 4, lo, DATA), None);
    // Size 1 byte: an lb at tdata2 fires, an lw over it does not; size 4 bytes: the reverse.
    let size1 = lo | 1 << 16;
    assert_eq!(first_trap(&[lb(A0, A2, 0)], DATA, size1, DATA), bp);
    assert_eq!(first_trap(&[lw(A0, A2, 0)], DATA, size1, DATA), None);
    let size4 = lo | 3 << 16;
    assert_eq!(first_trap(&[lb(A0, A2, 0)], DATA, size4, DATA), None);
    assert_eq!(first_trap(&[lw(A0, A2, 0)], DATA, size4, DATA), bp);
    // Size 8 bytes (RV64 sizehi 1, sizelo 1) against a word.
    let size8 = lo | 1 << 21 | 1 << 16;
    assert_eq!(first_trap(&[lw(A0, A2, 0)], DATA, size8, DATA), None);
    // A store trigger on a store of a byte inside a watched word, then of the word.
    let st = TYPE2 | M | STORE;
    assert_eq!(first_trap(&[sw(A1, A2, 0)], DATA, st, DATA + 2), bp);
    assert_eq!(first_trap(&[sw(A1, A2, 0)], DATA + 4, st, DATA + 2), None);
}

/// "Priority": a load/store address breakpoint comes before a misaligned exception (QEMU 7.2
/// raises the misaligned one of an LR/AMO first).
#[test]
fn a_misaligned_atomic_breakpoint_comes_first() {
    let lo = TYPE2 | M | LOAD;
    let st = TYPE2 | M | STORE;
    for code in [amoadd_w(A0, A1, A2), lr_w(A0, A2)] {
        assert_eq!(first_trap(&[code], DATA + 2, lo, DATA + 2), Some((3, 0)));
        assert_eq!(first_trap(&[code], DATA + 2, lo, DATA + 64), Some((4, 0)));
    }
    assert_eq!(
        first_trap(&[amoadd_w(A0, A1, A2)], DATA + 2, st, DATA + 3),
        Some((3, 0))
    );
}

/// Before the fetch: an execute trigger on a pc outside memory is a breakpoint, not an
/// instruction access fault; and no instruction is counted as retired.
#[test]
fn execute_breakpoint_before_the_fetch() {
    let mut h = hart_with_code(Config::virt(Xlen::Rv64), &[]);
    h.pc = 0x100;
    h.csr_write(num::TDATA2, 0x100);
    h.csr_write(num::TDATA1, TYPE2 | M | EXECUTE);
    let mut obs = FirstTrap::default();
    assert_eq!(h.run(&mut obs, 10), Stop::Requested);
    let t = obs.0.unwrap();
    assert_eq!((t.cause, t.epc, t.tval), (3, 0x100, 0));
    assert_eq!(h.instret, 0);
}

/// A breakpoint before the trap handler's first instruction fires again at every entry: the
/// hart stops (QEMU spins) with rule 1 of trap-loop detection.
#[test]
fn a_breakpoint_on_the_handler_is_a_trap_loop() {
    // 0: csrw mtvec, t0 (t0 = handler at +0x10); ecall
    let mut h = hart_with_code(
        Config::virt(Xlen::Rv64),
        &[csrrw(0, num::MTVEC, T0), rvtrace_testkit::asm::ECALL],
    );
    let handler = RAM_BASE + 0x10;
    h.x[T0 as usize] = handler;
    h.csr_write(num::TDATA2, handler);
    h.csr_write(num::TDATA1, TYPE2 | M | EXECUTE);
    let Stop::Error(msg) = h.run(&mut (), 1_000_000) else {
        panic!("no trap loop found")
    };
    assert!(msg.contains("without retiring an instruction"), "{msg}");
    assert_eq!(h.trap_loop().unwrap().trap.cause, 3);
}

/// A handler that returns to the breakpoint's instruction (so it fires again) and counts in
/// trigger 1's `tdata2` until it disarms trigger 0: its only progress is in the trigger
/// registers, which trap-loop detection must see (rule 2 would otherwise stop it).
#[test]
fn progress_in_the_trigger_registers_is_progress() {
    const HITS: u64 = 3 * REPEAT_THRESHOLD as u64;
    let code = [
        // 0: the watched instruction, then the SiFive test finisher's pass.
        lui(T0, 0x100),
        lui(6, 5),
        addi(6, 6, 0x555),
        sw(6, T0, 0),
        rvtrace_testkit::asm::SPIN,
        rvtrace_testkit::asm::NOP,
        rvtrace_testkit::asm::NOP,
        rvtrace_testkit::asm::NOP,
        // 0x20: handler (tselect = 1 throughout): count down in tdata2; at 0 disarm trigger 0.
        csrrw(0, num::MSCRATCH, T0),
        csrr(T0, num::TDATA2),
        addi(T0, T0, -1),
        csrrw(0, num::TDATA2, T0),
        rvtrace_testkit::asm::branch(1, T0, 0, 12), // bnez t0, +12
        csrrw(0, num::TSELECT, 0),
        csrrw(0, num::TDATA1, 0),
        csrr(T0, num::MSCRATCH),
        MRET,
    ];
    let mut h = hart_with_code(Config::virt(Xlen::Rv64), &code);
    h.csr_write(num::MTVEC, RAM_BASE + 0x20);
    h.csr_write(num::TDATA2, RAM_BASE);
    h.csr_write(num::TDATA1, TYPE2 | M | EXECUTE);
    h.csr_write(num::TSELECT, 1);
    h.csr_write(num::TDATA2, HITS);
    assert_eq!(h.run(&mut (), 10_000_000), Stop::Exit(0));
    h.csr_write(num::TSELECT, 1);
    assert_eq!(h.csr_read(num::TDATA2), Some(0));
}

/// A trigger enabled in S only does not fire in M.
#[test]
fn an_s_mode_trigger_does_not_fire_in_m() {
    let mut h: Hart = hart_with_code(Config::virt(Xlen::Rv64), &[lw(A0, A2, 0)]);
    h.x[A2 as usize] = DATA;
    h.csr_write(num::TDATA2, DATA);
    h.csr_write(num::TDATA1, TYPE2 | rvtrace_sim::trigger::field::S | LOAD);
    let mut obs = FirstTrap::default();
    assert_eq!(h.run(&mut obs, 1), Stop::InsnLimit);
    assert!(obs.0.is_none(), "an S-mode trigger in M");
}
