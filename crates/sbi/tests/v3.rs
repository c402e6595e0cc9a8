//! The extensions new since SBI 2.0 on one hart, through real `ecall`s at S-mode: FWFT (SBI
//! v3.0 chapter 18) every feature, value, flag and error in the spec's order; SUSP (chapter
//! 13) the answers a single hart gets. The multi-hart SUSP (the suspend and its resume) is
//! `crates/cli/tests/sbi_v3.rs`, running `programs/sbi/sbi_v3.c` on 2 and 4 harts.

use crate::common;
use common::*;
use rvtrace_isa::Xlen;
use rvtrace_sbi::{eid, error, fwft_feature as f};

const LOCK: u64 = 1;

/// FWFT: MISALIGNED_EXC_DELEG reads 1 (delegated from the start), sets to 1, is DENIED for 0
/// (nothing emulates misaligned accesses), INVALID_PARAM for other values and reserved flag
/// bits; the hart lacks the other features (NOT_SUPPORTED); reserved and platform feature
/// types are DENIED; LOCK makes every later set DENIED_LOCKED and leaves the value; only the
/// low 32 bits of the register are the `uint32_t feature`.
#[test]
fn fwft() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        let set = |h: &mut rvtrace_sim::Hart, feat: u64, v: u64, flags: u64| {
            call(h, eid::FWFT, 0, &[feat, v, flags]).0
        };
        let m = f::MISALIGNED_EXC_DELEG as u64;
        assert_eq!(call(&mut h, eid::FWFT, 1, &[m]), (0, 1));
        assert_eq!(set(&mut h, m, 1, 0), 0, "the value it has");
        assert_eq!(set(&mut h, m, 0, 0), error::DENIED);
        assert_eq!(set(&mut h, m, 2, 0), error::INVALID_PARAM);
        assert_eq!(
            set(&mut h, m, 1, 2),
            error::INVALID_PARAM,
            "reserved flag bit 1"
        );
        let top = 1u64 << (xlen.bits() - 1);
        assert_eq!(
            set(&mut h, m, 1, top),
            error::INVALID_PARAM,
            "flag bit XLEN-1"
        );
        // Reserved flag bits come before the feature check.
        assert_eq!(set(&mut h, 6, 0, 2), error::INVALID_PARAM);
        for feat in [
            f::LANDING_PAD,
            f::SHADOW_STACK,
            f::DOUBLE_TRAP,
            f::PTE_AD_HW_UPDATING,
            f::POINTER_MASKING_PMLEN,
        ] {
            let feat = feat as u64;
            assert_eq!(
                call(&mut h, eid::FWFT, 1, &[feat]),
                (error::NOT_SUPPORTED, 0),
                "get {feat}"
            );
            assert_eq!(set(&mut h, feat, 0, 0), error::NOT_SUPPORTED, "set {feat}");
        }
        for feat in [
            6,
            0x3fff_ffff,
            0x4000_0000,
            0x8000_0000,
            0xc000_0000,
            0xffff_ffff,
        ] {
            assert_eq!(call(&mut h, eid::FWFT, 1, &[feat]).0, error::DENIED);
            assert_eq!(set(&mut h, feat, 0, 0), error::DENIED, "{feat:#x}");
        }
        if xlen == Xlen::Rv64 {
            // The upper register bits are not part of the uint32_t.
            assert_eq!(call(&mut h, eid::FWFT, 1, &[0xffff_ffff_0000_0000]), (0, 1));
        }
        assert_eq!(set(&mut h, m, 1, LOCK), 0);
        assert_eq!(set(&mut h, m, 1, 0), error::DENIED_LOCKED);
        assert_eq!(set(&mut h, m, 1, LOCK), error::DENIED_LOCKED);
        // Reserved flags are still checked first.
        assert_eq!(set(&mut h, m, 1, 2), error::INVALID_PARAM);
        assert_eq!(call(&mut h, eid::FWFT, 1, &[m]), (0, 1));
        assert_eq!(call(&mut h, eid::FWFT, 2, &[m]).0, error::NOT_SUPPORTED);
    }
}

/// SUSP on one hart: reserved (1..0x7FFFFFFF) and platform (0x80000000..) sleep types are
/// INVALID_PARAM, a resume_addr outside RAM INVALID_ADDRESS, nothing that could wake the hart
/// FAILED, an unknown FID NOT_SUPPORTED (each call returns); with the S timer armed and STIE
/// enabled, time jumps to the event and the hart resumes at resume_addr in S-mode with a0 =
/// hart id, a1 = opaque, satp 0 and sstatus.SIE 0 (table "SUSP System Resume Register State").
#[test]
fn susp_on_one_hart() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        for ty in [1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff] {
            assert_eq!(
                call(&mut h, eid::SUSP, 0, &[ty, CODE_AT, 0]).0,
                error::INVALID_PARAM,
                "{ty:#x}"
            );
        }
        assert_eq!(
            call(&mut h, eid::SUSP, 0, &[0, 0x10, 0]).0,
            error::INVALID_ADDRESS
        );
        assert_eq!(
            call(&mut h, eid::SUSP, 0, &[0, CODE_AT, 0]).0,
            error::FAILED
        );
        assert_eq!(
            call(&mut h, eid::SUSP, 1, &[0, CODE_AT, 0]).0,
            error::NOT_SUPPORTED
        );
        let deadline = h.mtime() + 5000;
        let time: Vec<u64> = match xlen {
            Xlen::Rv64 => vec![deadline],
            Xlen::Rv32 => vec![deadline & 0xffff_ffff, deadline >> 32],
        };
        assert_eq!(call(&mut h, eid::TIME, 0, &time).0, 0);
        h.csr.mie |= rvtrace_sim::csr::irq::STI;
        h.csr.mstatus |= rvtrace_sim::csr::mstatus::SIE;
        h.csr.satp = 0;
        let (a0, a1, stop) = call_stop(&mut h, eid::SUSP, 0, &[0, CODE_AT, 0x77]);
        assert_eq!(stop, rvtrace_sim::Stop::InsnLimit);
        assert_eq!((h.pc, a0, a1, h.priv_), (CODE_AT, 0, 0x77, 1));
        assert_eq!(h.csr.mstatus & rvtrace_sim::csr::mstatus::SIE, 0);
        assert!(h.mtime() >= deadline + rvtrace_sbi::TIMER_LATENCY);
        assert_ne!(
            h.mip() & rvtrace_sim::csr::irq::STI,
            0,
            "woken by the timer"
        );
    }
}

/// Shared-memory word `n` of DBTR entry `k` (XLEN/8-byte words, 4 per entry).
fn dbtr_word(h: &rvtrace_sim::Hart, xlen: Xlen, k: u64, n: u64) -> u64 {
    let w = xlen.bits() as u64 / 8;
    let mut b = [0u8; 8];
    assert!(h.read_memory(SHMEM + (4 * k + n) * w, &mut b[..w as usize]));
    u64::from_le_bytes(b)
}

fn dbtr_entry(h: &mut rvtrace_sim::Hart, xlen: Xlen, k: u64, words: [u64; 4]) {
    let w = xlen.bits() as u64 / 8;
    for (n, v) in words.into_iter().enumerate() {
        let at = SHMEM + (4 * k + n as u64) * w;
        assert!(h.bus.write_ram(at, &v.to_le_bytes()[..w as usize]));
    }
}

/// DBTR (chapter 19) over the hart's two Sdtrig triggers: num_triggers, set_shmem (flags,
/// alignment, address, disable), read (NO_SHMEM, BAD_RANGE as the chapter writes it), install
/// (an S-mode execute trigger, its trig_idx written back; dmode/m INVALID_PARAM, chain and
/// other types NOT_SUPPORTED, BAD_RANGE, FAILED when no trigger is free, the failing index in
/// the value), the trigger firing in S-mode as a breakpoint at its address, disable (no
/// breakpoint) and enable, update (type change INVALID_PARAM, an uninstalled index FAILED),
/// uninstall, and invalid sets.
#[test]
fn dbtr() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        let bits = xlen.bits();
        let ty = |t: u64| t << (bits - 4);
        const EXEC: u64 = 1 << 2;
        const S: u64 = 1 << 4;
        const U: u64 = 1 << 3;
        const M: u64 = 1 << 6;
        const CHAIN: u64 = 1 << 11;
        let exec_s = ty(2) | EXEC | S;
        let d = eid::DBTR;
        assert_eq!(call(&mut h, d, 0, &[0]), (0, 2), "trig_max");
        assert_eq!(call(&mut h, d, 0, &[exec_s]), (0, 2));
        assert_eq!(call(&mut h, d, 0, &[ty(6) | EXEC | S | U]), (0, 2));
        assert_eq!(call(&mut h, d, 0, &[ty(3) | 1]), (0, 0), "icount: none");
        assert_eq!(call(&mut h, d, 0, &[exec_s | CHAIN]), (0, 0));
        // Shared memory.
        assert_eq!(call(&mut h, d, 2, &[0, 1]).0, error::NO_SHMEM);
        assert_eq!(call(&mut h, d, 3, &[1]).0, error::NO_SHMEM);
        assert_eq!(call(&mut h, d, 1, &[SHMEM, 0, 1]).0, error::INVALID_PARAM);
        assert_eq!(
            call(&mut h, d, 1, &[SHMEM + 2, 0, 0]).0,
            error::INVALID_PARAM
        );
        assert_eq!(
            call(&mut h, d, 1, &[0x1000, 0, 0]).0,
            error::INVALID_ADDRESS
        );
        assert_eq!(call(&mut h, d, 1, &[SHMEM, 0, 0]), (0, 0));
        // Range: base >= trig_max or base + count >= trig_max.
        assert_eq!(call(&mut h, d, 2, &[2, 0]).0, error::BAD_RANGE);
        assert_eq!(call(&mut h, d, 2, &[0, 2]).0, error::BAD_RANGE);
        assert_eq!(call(&mut h, d, 3, &[2]).0, error::BAD_RANGE);
        // Invalid configurations: the failing index in the value, nothing installed.
        let t2 = CODE_AT + 8;
        for (t1, t3, want) in [
            (exec_s | M, 0, error::INVALID_PARAM),
            (exec_s | 1 << (bits - 5), 0, error::INVALID_PARAM),
            (exec_s | CHAIN, 0, error::NOT_SUPPORTED),
            (ty(3) | 1 << 10 | S, 0, error::NOT_SUPPORTED),
            (exec_s, 5, error::NOT_SUPPORTED),
        ] {
            dbtr_entry(&mut h, xlen, 0, [7, t1, t2, t3]);
            assert_eq!(call(&mut h, d, 3, &[1]), (want, 0), "{t1:#x}");
        }
        assert_eq!(call(&mut h, d, 2, &[0, 1]), (0, 0));
        assert_eq!(dbtr_word(&h, xlen, 0, 0), 0, "trigger 0 not mapped");
        // Install an S-mode execute trigger at CODE_AT + 8.
        dbtr_entry(&mut h, xlen, 0, [7, exec_s, t2, 0]);
        assert_eq!(call(&mut h, d, 3, &[1]), (0, 0));
        assert_eq!(dbtr_word(&h, xlen, 0, 0), 0, "trig_idx written back");
        assert_eq!(call(&mut h, d, 2, &[0, 1]), (0, 0));
        // trig_state: mapped, s, have_hw_trig, hw index 0.
        assert_eq!(dbtr_word(&h, xlen, 0, 0), 1 | 1 << 2 | 1 << 5);
        assert_eq!(dbtr_word(&h, xlen, 0, 1), exec_s);
        assert_eq!(dbtr_word(&h, xlen, 0, 2), t2);
        // It fires in S-mode before the instruction at t2: a breakpoint delegated to S.
        h.csr.scause = 0;
        exec_count(&mut h, 4);
        assert_eq!((h.csr.scause, h.csr.sepc), (3, t2));
        h.priv_ = 1;
        // Disabled: no breakpoint; read shows s cleared, trig_state keeps it.
        assert_eq!(call(&mut h, d, 7, &[0, 1]), (0, 0));
        h.csr.scause = 0;
        exec_count(&mut h, 4);
        assert_eq!(h.csr.scause, 0);
        assert_eq!(call(&mut h, d, 2, &[0, 1]), (0, 0));
        assert_eq!(dbtr_word(&h, xlen, 0, 1), exec_s & !S);
        assert_eq!(dbtr_word(&h, xlen, 0, 0) & 1 << 2, 1 << 2);
        assert_eq!(call(&mut h, d, 6, &[0, 1]), (0, 0));
        exec_count(&mut h, 4);
        assert_eq!((h.csr.scause, h.csr.sepc), (3, t2));
        h.priv_ = 1;
        // The second trigger; then none is free for a third (FAILED, index 0).
        dbtr_entry(&mut h, xlen, 0, [7, ty(2) | 1 | S, BUF, 0]);
        assert_eq!(call(&mut h, d, 3, &[1]), (0, 0));
        assert_eq!(dbtr_word(&h, xlen, 0, 0), 1);
        dbtr_entry(&mut h, xlen, 0, [7, exec_s, t2, 0]);
        assert_eq!(call(&mut h, d, 3, &[1]), (error::FAILED, 0));
        // Update: trigger 0 moves to CODE_AT + 12; a type change is INVALID_PARAM; an index
        // past trig_max INVALID_PARAM.
        dbtr_entry(&mut h, xlen, 0, [0, exec_s, CODE_AT + 12, 0]);
        assert_eq!(call(&mut h, d, 4, &[1]), (0, 0));
        h.csr.scause = 0;
        exec_count(&mut h, 5);
        assert_eq!((h.csr.scause, h.csr.sepc), (3, CODE_AT + 12));
        h.priv_ = 1;
        dbtr_entry(&mut h, xlen, 0, [0, ty(6) | EXEC | S, t2, 0]);
        assert_eq!(call(&mut h, d, 4, &[1]), (error::INVALID_PARAM, 0));
        dbtr_entry(&mut h, xlen, 0, [2, exec_s, t2, 0]);
        assert_eq!(call(&mut h, d, 4, &[1]), (error::INVALID_PARAM, 0));
        // Uninstall both; then they are free (update FAILED, enable INVALID_PARAM).
        assert_eq!(
            call(&mut h, d, 5, &[0, 0b111]).0,
            error::INVALID_PARAM,
            "index 2"
        );
        assert_eq!(call(&mut h, d, 5, &[0, 0b11]), (0, 0));
        h.csr.scause = 0;
        exec_count(&mut h, 5);
        assert_eq!(h.csr.scause, 0, "uninstalled: no breakpoint");
        dbtr_entry(&mut h, xlen, 0, [0, exec_s, t2, 0]);
        assert_eq!(call(&mut h, d, 4, &[1]), (error::FAILED, 0));
        assert_eq!(call(&mut h, d, 6, &[0, 1]).0, error::INVALID_PARAM);
        assert_eq!(call(&mut h, d, 6, &[u64::MAX, 2]).0, error::INVALID_PARAM);
        assert_eq!(call(&mut h, d, 6, &[0, 0]), (0, 0), "an empty set");
        // Disabling the shared memory.
        assert_eq!(call(&mut h, d, 1, &[u64::MAX, u64::MAX, 0]), (0, 0));
        assert_eq!(call(&mut h, d, 2, &[0, 1]).0, error::NO_SHMEM);
        assert_eq!(call(&mut h, d, 8, &[]).0, error::NOT_SUPPORTED);
    }
}

/// Run `n` nops at `CODE_AT` (a trap goes to the handler's nops).
fn exec_count(h: &mut rvtrace_sim::Hart, n: usize) {
    exec(h, &vec![NOP; n]);
}
