//! Base, TIME, IPI, RFENCE, HSM, SRST, DBCN and the legacy console, each function's success
//! path and error codes, checked against the SBI v3.0 text (sections cited per test), through
//! real `ecall`s executed at S-mode by the hart.

use crate::common;
use common::*;
use rvtrace_isa::Xlen;
use rvtrace_sbi::{eid, error, IMPL_ID, TIMER_LATENCY};
use rvtrace_sim::csr::{irq, mstatus, num};
use rvtrace_sim::Stop;

const M1: u64 = u64::MAX;

/// SBI v3.0 "Base Extension": spec version 3.0 = 0x0300_0000 (minor bits 23..0, major
/// 30..24), impl id/version, probe (1 available / 0 not), machine ids from the hart's CSRs;
/// "Binary Encoding": an unsupported EID or FID returns SBI_ERR_NOT_SUPPORTED.
#[test]
fn base() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        assert_eq!(call(&mut h, eid::BASE, 0, &[]), (0, 0x0300_0000));
        assert_eq!(call(&mut h, eid::BASE, 1, &[]), (0, IMPL_ID));
        // Not one of the table's assigned implementation IDs (0..=11).
        const { assert!(IMPL_ID > 11) };
        assert_eq!(call(&mut h, eid::BASE, 2, &[]).0, 0);
        for e in [
            0x01,
            0x02,
            0x10,
            0x5449_4D45,
            0x73_5049,
            0x5246_4E43,
            0x48_534D,
            0x5352_5354,
            0x50_4D55,
            0x4442_434E,
            0x5355_5350,
            0x4657_4654,
            0x4442_5452,
            0x53_5345,
        ] {
            assert_eq!(call(&mut h, eid::BASE, 3, &[e]), (0, 1), "{e:#x}");
        }
        // Legacy set_timer, CPPC, an experimental and a vendor EID: not available.
        for e in [0x00, 0x03, 0x08, 0x4350_5043, 0x0800_0000, 0x0900_0000] {
            assert_eq!(call(&mut h, eid::BASE, 3, &[e]), (0, 0), "{e:#x}");
        }
        for (fid, csr) in [(4, num::MVENDORID), (5, num::MARCHID), (6, num::MIMPID)] {
            let want = h.csr_read(csr).unwrap();
            assert_eq!(call(&mut h, eid::BASE, fid, &[]), (0, h.trunc(want)));
        }
        assert_eq!(
            call(&mut h, eid::BASE, 5, &[]).1,
            0x0007_0200,
            "QEMU 7.2's marchid"
        );
        assert_eq!(call(&mut h, eid::BASE, 7, &[]).0, error::NOT_SUPPORTED);
        assert_eq!(call(&mut h, 0x4350_5043, 0, &[]).0, error::NOT_SUPPORTED);
        assert_eq!(call(&mut h, eid::HSM, 9, &[]).0, error::NOT_SUPPORTED);
        // Legacy EIDs write a0 only ("Nothing is returned in a1 register").
        let (a0, a1, _) = call_stop(&mut h, 0x08, 0, &[]);
        assert_eq!(a0 as u32 as i32, -2);
        assert_eq!(a1, 0x5a5a_5a5a);
    }
}

/// Only S-mode's ecalls are SBI calls: U's trap (delegated to S by `enter_supervisor`).
#[test]
fn u_mode_ecall_is_not_serviced() {
    let (mut h, _) = sbi_hart(Xlen::Rv64, b"");
    h.priv_ = 0;
    assert!(h.bus.write_ram(CALL_AT, &ECALL.to_le_bytes()));
    h.pc = CALL_AT;
    h.x[17] = eid::BASE;
    h.x[16] = 0;
    assert_eq!(h.run(&mut (), 1), Stop::InsnLimit);
    assert_eq!(h.csr.scause, 8);
    assert_eq!(h.pc, HANDLER);
    assert_eq!(h.x[10], 0, "a0 untouched");
}

/// SBI v3.0 "Timer Extension": set_timer programs the next event at absolute time
/// stime_value, "must clear the pending timer interrupt bit" for a future time, always
/// SBI_SUCCESS. The S timer interrupt is taken at the instruction where time reaches it plus
/// `TIMER_LATENCY` (the event comes after stime_value).
#[test]
fn set_timer() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        // A software-set STIP is cleared by a set_timer in the future.
        h.csr.mip_sw |= irq::STI;
        let now = h.mtime();
        let deadline = now + 10;
        let args: Vec<u64> = match xlen {
            Xlen::Rv64 => vec![deadline],
            Xlen::Rv32 => vec![deadline & 0xffff_ffff, deadline >> 32],
        };
        assert_eq!(call(&mut h, eid::TIME, 0, &args).0, 0);
        assert_eq!(h.mip() & irq::STI, 0);
        // The event comes TIMER_LATENCY ticks after stime_value ("after stime_value time").
        assert_eq!(h.csr.stimecmp, deadline + TIMER_LATENCY);
        // Enable STIE and SIE: the call retired at now+1; 9 more instructions reach the
        // deadline, TIMER_LATENCY more the event.
        h.csr.mie |= irq::STI;
        h.csr.mstatus |= mstatus::SIE;
        exec_count(&mut h, 8 + TIMER_LATENCY as usize);
        assert_eq!(h.csr.scause, 0, "one instruction before the event");
        exec_count(&mut h, 2);
        assert_eq!(h.csr.scause, (1 << (xlen.bits() - 1)) | 5);
        assert_eq!(h.csr.sepc, CODE_AT + 4);
        assert_eq!(h.csr_read(num::SIP).unwrap() & irq::STI, irq::STI);
        // (uint64_t)-1 clears it.
        h.priv_ = 1;
        let ones: Vec<u64> = match xlen {
            Xlen::Rv64 => vec![M1],
            Xlen::Rv32 => vec![0xffff_ffff, 0xffff_ffff],
        };
        assert_eq!(call(&mut h, eid::TIME, 0, &ones).0, 0);
        assert_eq!(h.mip() & irq::STI, 0);
        // A deadline in the past makes it pending at once.
        assert_eq!(call(&mut h, eid::TIME, 0, &[0, 0]).0, 0);
        assert_eq!(h.mip() & irq::STI, irq::STI);
        assert_eq!(call(&mut h, eid::TIME, 1, &[]).0, error::NOT_SUPPORTED);
    }
}

/// Run `n` nops at `CODE_AT` (interrupts may be taken).
fn exec_count(h: &mut rvtrace_sim::Hart, n: usize) {
    exec(h, &vec![NOP; n]);
}

/// SBI v3.0 "IPI Extension" and "Hart list parameter": the IPI is a supervisor software
/// interrupt; a hartid that is not hart 0 is SBI_ERR_INVALID_PARAM; base -1 means all harts;
/// the base need not be valid unless bit 0 is set.
#[test]
fn send_ipi() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        let ones = h.trunc(M1);
        assert_eq!(call(&mut h, eid::IPI, 0, &[0, 5]).0, 0, "empty mask");
        assert_eq!(h.mip() & irq::SSI, 0);
        for bad in [[2, 0], [1, 1], [3, 0], [1 << 2, ones - 1], [ones, 0]] {
            assert_eq!(
                call(&mut h, eid::IPI, 0, &bad).0,
                error::INVALID_PARAM,
                "{bad:x?}"
            );
            assert_eq!(h.mip() & irq::SSI, 0, "nothing sent on an error");
        }
        assert_eq!(call(&mut h, eid::IPI, 0, &[1, 0]).0, 0);
        assert_eq!(h.mip() & irq::SSI, irq::SSI);
        h.csr.mip_sw &= !irq::SSI;
        assert_eq!(
            call(&mut h, eid::IPI, 0, &[0, ones]).0,
            0,
            "base -1: all harts"
        );
        assert_eq!(h.mip() & irq::SSI, irq::SSI);
        assert_eq!(call(&mut h, eid::IPI, 1, &[1, 0]).0, error::NOT_SUPPORTED);
    }
}

/// SBI v3.0 "RFENCE Extension": valid masks succeed; invalid harts INVALID_PARAM; a range is
/// the whole space for (0, 0) or size 2^XLEN-1, otherwise it must be a valid range
/// (INVALID_ADDRESS); an ASID wider than satp.ASID is INVALID_PARAM; the HFENCE functions need
/// the hypervisor extension (NOT_SUPPORTED).
#[test]
fn rfence() {
    let (mut h, _) = sbi_hart(Xlen::Rv64, b"");
    assert_eq!(call(&mut h, eid::RFENCE, 0, &[1, 0]).0, 0);
    assert_eq!(call(&mut h, eid::RFENCE, 0, &[0, M1]).0, 0);
    assert_eq!(
        call(&mut h, eid::RFENCE, 0, &[2, 0]).0,
        error::INVALID_PARAM
    );
    for fid in [1, 2] {
        let ok = [
            [1, 0, 0, 0, 1],
            [1, 0, 0x1000, M1, 1],
            [1, 0, 0x8000_0000, 0x1000, 1],
        ];
        for a in ok {
            assert_eq!(call(&mut h, eid::RFENCE, fid, &a).0, 0, "{a:x?}");
        }
        assert_eq!(
            call(&mut h, eid::RFENCE, fid, &[1, 0, M1 - 15, 32, 1]).0,
            error::INVALID_ADDRESS
        );
        assert_eq!(
            call(&mut h, eid::RFENCE, fid, &[1, 1, 0, 0, 1]).0,
            error::INVALID_PARAM
        );
    }
    assert_eq!(
        call(&mut h, eid::RFENCE, 2, &[1, 0, 0, 0, 0x1_0000]).0,
        error::INVALID_PARAM
    );
    assert_eq!(call(&mut h, eid::RFENCE, 2, &[1, 0, 0, 0, 0xffff]).0, 0);
    for fid in 3..=6 {
        assert_eq!(
            call(&mut h, eid::RFENCE, fid, &[1, 0, 0, 0, 0]).0,
            error::NOT_SUPPORTED
        );
    }
    // RV32: satp.ASID has 9 bits.
    let (mut h, _) = sbi_hart(Xlen::Rv32, b"");
    assert_eq!(call(&mut h, eid::RFENCE, 2, &[1, 0, 0, 0, 0x1ff]).0, 0);
    assert_eq!(
        call(&mut h, eid::RFENCE, 2, &[1, 0, 0, 0, 0x200]).0,
        error::INVALID_PARAM
    );
    assert_eq!(
        call(&mut h, eid::RFENCE, 1, &[1, 0, 0xffff_fff0, 0x20]).0,
        error::INVALID_ADDRESS
    );
}

/// SBI v3.0 "Hart State Management Extension" for one hart: status STARTED (0); start of a
/// started hart ALREADY_AVAILABLE, of another INVALID_PARAM; suspend types: default retentive
/// returns after a wake-up, reserved / unimplemented platform types INVALID_PARAM, the default
/// non-retentive NOT_SUPPORTED here; stop of the only hart ends the run.
#[test]
fn hsm() {
    let (mut h, _) = sbi_hart(Xlen::Rv64, b"");
    assert_eq!(call(&mut h, eid::HSM, 2, &[0]), (0, 0));
    assert_eq!(call(&mut h, eid::HSM, 2, &[1]).0, error::INVALID_PARAM);
    assert_eq!(call(&mut h, eid::HSM, 2, &[M1]).0, error::INVALID_PARAM);
    assert_eq!(
        call(&mut h, eid::HSM, 0, &[0, CALL_AT, 0]).0,
        error::ALREADY_AVAILABLE
    );
    assert_eq!(
        call(&mut h, eid::HSM, 0, &[1, CALL_AT, 0]).0,
        error::INVALID_PARAM
    );
    for ty in [
        1,
        0x0fff_ffff,
        0x1000_0000,
        0x7fff_ffff,
        0x8000_0001,
        0x9000_0000,
    ] {
        assert_eq!(
            call(&mut h, eid::HSM, 3, &[ty, 0, 0]).0,
            error::INVALID_PARAM,
            "{ty:#x}"
        );
    }
    // Non-retentive on one hart: INVALID_ADDRESS outside RAM; FAILED when nothing could wake
    // the hart (mie = 0).
    assert_eq!(
        call(&mut h, eid::HSM, 3, &[0x8000_0000, 0x10, 0]).0,
        error::INVALID_ADDRESS
    );
    assert_eq!(
        call(&mut h, eid::HSM, 3, &[0x8000_0000, CALL_AT, 0]).0,
        error::FAILED
    );
    // Retentive suspend with nothing that could wake the hart: FAILED.
    assert_eq!(call(&mut h, eid::HSM, 3, &[0, 0, 0]).0, error::FAILED);
    // With the S timer armed and STIE enabled: sleeps until the deadline, then SUCCESS. The
    // upper register bits of the uint32_t suspend_type are not part of it.
    h.csr.mie |= irq::STI;
    let deadline = h.mtime() + 1000;
    assert_eq!(call(&mut h, eid::TIME, 0, &[deadline]).0, 0);
    assert_eq!(
        call(&mut h, eid::HSM, 3, &[0xffff_ffff_0000_0000, 0, 0]).0,
        0
    );
    assert!(h.mtime() >= deadline);
    assert_eq!(h.mip() & irq::STI, irq::STI);
    // Non-retentive with the timer armed: time jumps to the event and the hart resumes at
    // resume_addr with a0 = hart id, a1 = opaque, SIE clear (HSM "Hart Start Register State").
    let deadline = h.mtime() + 1000;
    assert_eq!(call(&mut h, eid::TIME, 0, &[deadline]).0, 0);
    h.csr.mstatus |= mstatus::SIE;
    let (a0, a1, stop) = call_stop(&mut h, eid::HSM, 3, &[0x8000_0000, CODE_AT, 0x1234]);
    assert_eq!(stop, Stop::InsnLimit);
    assert_eq!((h.pc, a0, a1), (CODE_AT, 0, 0x1234));
    assert_eq!(h.csr.mstatus & mstatus::SIE, 0);
    assert!(h.mtime() >= deadline + TIMER_LATENCY);
    h.csr.mie &= !irq::STI;
    // hart_stop: the run ends (exit status 0).
    let (_, _, stop) = call_stop(&mut h, eid::HSM, 1, &[]);
    assert_eq!(stop, Stop::Exit(0));
}

/// SBI v3.0 "System Reset Extension": shutdown, cold and warm reboot end the run; reason
/// "no reason" -> exit 0, "system failure" -> 1; reserved and unimplemented vendor types and
/// reasons are SBI_ERR_INVALID_PARAM (and the call returns).
#[test]
fn system_reset() {
    for (ty, reason, status) in [(0, 0, 0), (0, 1, 1), (1, 0, 0), (2, 1, 1)] {
        let (mut h, _) = sbi_hart(Xlen::Rv64, b"");
        let (_, _, stop) = call_stop(&mut h, eid::SRST, 0, &[ty, reason]);
        assert_eq!(stop, Stop::Exit(status), "type {ty} reason {reason}");
    }
    let (mut h, _) = sbi_hart(Xlen::Rv64, b"");
    for (ty, reason) in [
        (3, 0),
        (0xefff_ffff, 0),
        (0xf000_0000, 0),
        (0, 2),
        (0, 0xe000_0000),
        (0, 0xf000_0000),
    ] {
        assert_eq!(
            call(&mut h, eid::SRST, 0, &[ty, reason]).0,
            error::INVALID_PARAM,
            "{ty:#x} {reason:#x}"
        );
    }
    // uint32_t: a sign-extended 0xF0000000 is still the vendor type.
    assert_eq!(
        call(&mut h, eid::SRST, 0, &[0xffff_ffff_f000_0000, 0]).0,
        error::INVALID_PARAM
    );
    assert_eq!(call(&mut h, eid::SRST, 1, &[0, 0]).0, error::NOT_SUPPORTED);
    // Upper bits beyond the uint32_t are ignored: this is a shutdown.
    let (_, _, stop) = call_stop(&mut h, eid::SRST, 0, &[0x1_0000_0000, 0]);
    assert_eq!(stop, Stop::Exit(0));
}

/// SBI v3.0 "Debug Console Extension": write returns the bytes written, read the bytes read
/// (0 when none), write_byte 0; memory that is not accessible physical memory is
/// SBI_ERR_INVALID_PARAM. Legacy putchar returns 0, getchar the byte or -1.
#[test]
fn debug_console() {
    let (mut h, out) = sbi_hart(Xlen::Rv64, b"xyz");
    assert!(h.bus.write_ram(BUF, b"hello, world"));
    assert_eq!(call(&mut h, eid::DBCN, 0, &[5, BUF, 0]), (0, 5));
    assert_eq!(call(&mut h, eid::DBCN, 2, &[b'!' as u64 | 0x100]), (0, 0));
    assert_eq!(call(&mut h, eid::DBCN, 0, &[0, 0, 0]), (0, 0));
    let ram_end = BASE + h.bus.ram_size();
    for bad in [
        [5, 0x1000, 0],       // not RAM
        [5, BUF, 1],          // above 2^64
        [16, ram_end - 8, 0], // runs past the end of RAM
        [M1, BUF, 0],         // wraps
    ] {
        assert_eq!(
            call(&mut h, eid::DBCN, 0, &bad).0,
            error::INVALID_PARAM,
            "{bad:x?}"
        );
        assert_eq!(
            call(&mut h, eid::DBCN, 1, &bad).0,
            error::INVALID_PARAM,
            "{bad:x?}"
        );
    }
    // Legacy putchar: a0 = 0, a1 preserved.
    let (a0, a1, _) = call_stop(&mut h, eid::LEGACY_CONSOLE_PUTCHAR, 0, &[b'\n' as u64]);
    assert_eq!((a0, a1), (0, 0x5a5a_5a5a));
    assert_eq!(out.text(), "hello!\n");
    // Read: two of the three bytes, then a getchar, then end of input.
    assert_eq!(call(&mut h, eid::DBCN, 1, &[2, BUF + 0x100, 0]), (0, 2));
    let mut b = [0u8; 3];
    assert!(h.read_memory(BUF + 0x100, &mut b));
    assert_eq!(&b, b"xy\0");
    let (a0, _, _) = call_stop(&mut h, eid::LEGACY_CONSOLE_GETCHAR, 0, &[]);
    assert_eq!(a0, b'z' as u64);
    let (a0, _, _) = call_stop(&mut h, eid::LEGACY_CONSOLE_GETCHAR, 0, &[]);
    assert_eq!(a0, M1, "-1 at end of input");
    assert_eq!(call(&mut h, eid::DBCN, 1, &[4, BUF, 0]), (0, 0));
    assert_eq!(call(&mut h, eid::DBCN, 3, &[]).0, error::NOT_SUPPORTED);
    // The console can be redirected after attach.
    let other = Captured::default();
    h.extension_mut::<rvtrace_sbi::Sbi>()
        .unwrap()
        .set_console(Box::new(other.clone()));
    assert_eq!(call(&mut h, eid::DBCN, 2, &[b'#' as u64]), (0, 0));
    assert_eq!(other.text(), "#");
    assert_eq!(out.text(), "hello!\n");
}

/// A console that fails: DBCN answers SBI_ERR_FAILED ("I/O errors"), legacy putchar a negative
/// code.
#[test]
fn debug_console_io_error() {
    struct Broken;
    impl std::io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("broken"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let c = rvtrace_sim::Config::virt(Xlen::Rv64);
    let mut h = rvtrace_sim::Hart::new(&c);
    h.attach(Box::new(rvtrace_sbi::Sbi::new(rvtrace_sbi::SbiConfig {
        console: Box::new(Broken),
        input: rvtrace_sbi::ConsoleInput::Reader(Box::new(std::io::empty())),
    })));
    rvtrace_sbi::enter_supervisor(&mut h, CALL_AT, 0);
    assert_eq!(call(&mut h, eid::DBCN, 0, &[1, BUF, 0]).0, error::FAILED);
    assert_eq!(call(&mut h, eid::DBCN, 2, &[65]).0, error::FAILED);
    let (a0, _, _) = call_stop(&mut h, eid::LEGACY_CONSOLE_PUTCHAR, 0, &[65]);
    assert_eq!(a0 as i64, error::FAILED);
}

/// `enter_supervisor`: S-mode, a0 = hart id, a1 = the device tree; delegation and counter
/// access as documented (mcounteren = every implemented counter, scounteren = CY|TM|IR).
#[test]
fn entry_state() {
    let (mut h, _) = sbi_hart(Xlen::Rv64, b"");
    assert_eq!(h.priv_, 1);
    assert_eq!(h.x[10], 0);
    assert_eq!(h.x[11], 0x87e0_0000);
    assert_eq!(h.csr.mideleg & 0x2222, 0x2222);
    assert_eq!(
        h.csr.medeleg & (1 << 9),
        0,
        "ecall from S stays with the SBI"
    );
    assert_ne!(h.csr.medeleg & (1 << 2), 0, "illegal instructions go to S");
    assert_eq!(h.csr.mcounteren, h.counters.present_mask());
    assert_eq!(h.csr.scounteren, 0b111);
    assert!(s_read(&mut h, num::CYCLE).is_some());
    assert!(
        s_read(&mut h, num::CYCLE + 18).is_some(),
        "hpmcounter18 readable"
    );
    assert!(
        s_read(&mut h, num::CYCLE + 19).is_none(),
        "not implemented: traps"
    );
}
