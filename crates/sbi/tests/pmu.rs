//! The PMU extension, every function (SBI v3.0 "Performance Monitoring Unit Extension"), its
//! success paths and every error code its tables list, the flags, snapshots, overflow
//! (LCOFI delegated to S) and hostile counter sets, through real `ecall`s at S-mode.

use crate::common;
use common::*;
use rvtrace_isa::Xlen;
use rvtrace_sbi::{eid, error, FW_COUNTERS};
use rvtrace_sim::counters::hpmevent;
use rvtrace_sim::csr::{irq, mstatus, num};
use rvtrace_sim::Hart;

const PMU: u64 = eid::PMU;
const M1: u64 = u64::MAX;
/// 3 fixed + 16 programmable (the hart's default) + the firmware counters.
const HW: u64 = 19;
const TOTAL: u64 = HW + FW_COUNTERS as u64;
/// A mask naming every counter from base 0.
const ALL: u64 = (1 << TOTAL) - 1;
/// Every programmable counter (from base 0).
const HPM: u64 = ((1 << 16) - 1) << 3;
/// Every firmware counter (from base 0).
const FW: u64 = ((1 << FW_COUNTERS) - 1) << HW;

const CYCLES: u64 = 0x1;
const INSTRUCTIONS: u64 = 0x2;
const CACHE_REFERENCES: u64 = 0x3;
const BRANCHES: u64 = 0x5;
const FW_SET_TIMER: u64 = 0xf_0005;
const FW_IPI_SENT: u64 = 0xf_0006;
const FW_IPI_RECEIVED: u64 = 0xf_0007;

// Flags (tables "PMU Counter Config Match Flags", "... Start Flags", "... Stop Flags").
const SKIP_MATCH: u64 = 1;
const CLEAR_VALUE: u64 = 2;
const AUTO_START: u64 = 4;
const SET_INIT_VALUE: u64 = 1;
const INIT_SNAPSHOT: u64 = 2;
const RESET: u64 = 1;
const TAKE_SNAPSHOT: u64 = 2;

fn hart() -> Hart {
    sbi_hart(Xlen::Rv64, b"").0
}

fn config(h: &mut Hart, base: u64, mask: u64, flags: u64, ev: u64, data: u64) -> (i64, u64) {
    // RV32: event_data is the pair a4 (low), a5 (high).
    call(
        h,
        PMU,
        2,
        &[base, mask, flags, ev, data & 0xffff_ffff, data >> 32],
    )
}

/// `hpmcounterN`/`cycle`/`instret` as S-mode reads it.
fn s_counter(h: &mut Hart, idx: u64) -> u64 {
    s_read(h, num::CYCLE + idx as u16).expect("readable from S-mode")
}

/// FID 0 and FID 1 (sections "Get number of counters", "Get details of a counter"):
/// counter_info = CSR in [11:0], width-1 in [17:12], type (1 firmware) in bit XLEN-1.
#[test]
fn num_counters_and_get_info() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        assert_eq!(call(&mut h, PMU, 0, &[]), (0, TOTAL));
        for i in (0..HW).filter(|&i| i != 1) {
            assert_eq!(
                call(&mut h, PMU, 1, &[i]),
                (0, 63 << 12 | (0xc00 + i)),
                "counter {i}"
            );
        }
        // Counter 1 would be `time`, which is not a performance counter (OpenSBI 1.5.1's
        // sbi_pmu_ctr_get_info answers SBI_EINVAL for it too).
        assert_eq!(call(&mut h, PMU, 1, &[1]), (error::INVALID_PARAM, 0));
        let fw_type = 1u64 << (xlen.bits() - 1);
        for i in HW..TOTAL {
            let (e, v) = call(&mut h, PMU, 1, &[i]);
            assert_eq!((e, v & fw_type), (0, fw_type));
        }
        for bad in [TOTAL, TOTAL + 1, h.trunc(M1)] {
            assert_eq!(call(&mut h, PMU, 1, &[bad]).0, error::INVALID_PARAM);
        }
    }
}

/// FID 2 "Find and configure a matching counter": reserved flags and invalid counters are
/// INVALID_PARAM; an event no counter in the set can count is NOT_SUPPORTED; the index
/// returned is absolute. Cycles/instructions go on counters 0/2 or programmable ones, other
/// events on programmable ones, firmware events on firmware counters; `time` counts nothing.
#[test]
fn config_matching_errors_and_placement() {
    let mut h = hart();
    assert_eq!(
        config(&mut h, 0, ALL, 1 << 8, CYCLES, 0).0,
        error::INVALID_PARAM
    );
    assert_eq!(
        config(&mut h, 0, ALL, M1, CYCLES, 0).0,
        error::INVALID_PARAM
    );
    assert_eq!(
        config(&mut h, 0, 1 << TOTAL, 0, CYCLES, 0).0,
        error::INVALID_PARAM
    );
    assert_eq!(
        config(&mut h, TOTAL, 1, 0, CYCLES, 0).0,
        error::INVALID_PARAM
    );
    // Hostile bases: never wrapped around to small indices.
    assert_eq!(
        config(&mut h, M1, 0b11, 0, CYCLES, 0).0,
        error::INVALID_PARAM
    );
    assert_eq!(
        config(&mut h, M1 - 1, 0b100, 0, CYCLES, 0).0,
        error::INVALID_PARAM
    );
    assert_eq!(config(&mut h, M1, M1, 0, CYCLES, 0).0, error::INVALID_PARAM);
    // Events nobody counts: event_idx 0, a reserved type, bits above 19, non-zero event_data
    // where it is reserved, firmware events this SBI does not implement, raw with code != 0.
    for (ev, data) in [
        (0, 0),
        (0x4_0001, 0),
        (0x10_0001, 0),
        (CYCLES, 1),
        (0x1_0000, 5),
        (0xf_0016, 0), // 22: the first reserved firmware code
        (0xf_00ff, 0),
        (0xf_ffff, 0), // PLATFORM: this SBI has no platform firmware events
        (FW_SET_TIMER, 1),
        (0x2_0001, 0x2_0001),
        (0x2_0000, 1 << 48),
        (0x3_0000, 1 << 56),
        (0x2_0000, 0x2_0000),
        (0xb, 0),
    ] {
        assert_eq!(
            config(&mut h, 0, ALL, 0, ev, data).0,
            error::NOT_SUPPORTED,
            "{ev:#x} {data:#x}"
        );
    }
    // `time` (counter 1) can count nothing; a firmware event not on hardware counters and
    // the reverse; an empty set.
    assert_eq!(config(&mut h, 1, 1, 0, CYCLES, 0).0, error::NOT_SUPPORTED);
    assert_eq!(
        config(&mut h, 0, HPM | 0b111, 0, FW_SET_TIMER, 0).0,
        error::NOT_SUPPORTED
    );
    assert_eq!(config(&mut h, 0, FW, 0, CYCLES, 0).0, error::NOT_SUPPORTED);
    assert_eq!(
        config(&mut h, 0, 0b1, 0, INSTRUCTIONS, 0).0,
        error::NOT_SUPPORTED
    );
    assert_eq!(
        config(&mut h, 0, 0b100, 0, CYCLES, 0).0,
        error::NOT_SUPPORTED
    );
    assert_eq!(
        config(&mut h, 0, 0b111, 0, BRANCHES, 0).0,
        error::NOT_SUPPORTED
    );
    assert_eq!(config(&mut h, 5, 0, 0, CYCLES, 0).0, error::NOT_SUPPORTED);
    // Placement: the fixed counters first, then free programmable ones; absolute indices.
    assert_eq!(config(&mut h, 0, ALL, 0, CYCLES, 0), (0, 0));
    assert_eq!(config(&mut h, 0, ALL, 0, INSTRUCTIONS, 0), (0, 2));
    assert_eq!(config(&mut h, 0, ALL, 0, CYCLES, 0), (0, 3), "0 is taken");
    assert_eq!(config(&mut h, 0, ALL, 0, CACHE_REFERENCES, 0), (0, 4));
    assert_eq!(config(&mut h, 10, 0b11, 0, BRANCHES, 0), (0, 10));
    assert_eq!(config(&mut h, 0, ALL, 0, FW_SET_TIMER, 0), (0, HW));
    assert_eq!(config(&mut h, HW + 3, 1, 0, FW_IPI_SENT, 0), (0, HW + 3));
    // Raw events (types 2 and 3): event_data is the selector; a cache event the model knows
    // but never counts (DTLB) is still supported.
    assert_eq!(config(&mut h, 0, ALL, 0, 0x2_0000, 0x2_0001).1, 5);
    assert_eq!(config(&mut h, 0, ALL, 0, 0x3_0000, 0x2_000b).1, 6);
    assert_eq!(config(&mut h, 0, ALL, 0, 0x1_0019, 0).1, 7);
    // The programmable counter's mhpmevent holds the selector.
    assert_eq!(
        h.csr_read(num::MHPMEVENT3 + 2).unwrap() & hpmevent::SELECTOR,
        0x2_0001
    );
    assert_eq!(
        h.csr_read(num::MHPMEVENT3 + 1).unwrap() & hpmevent::SELECTOR,
        CACHE_REFERENCES
    );
    // All 16 programmable counters: 3, 4, 5, 6, 7 and 10 are taken; the rest fill up.
    let mut got = Vec::new();
    while let (0, i) = config(&mut h, 0, ALL, 0, BRANCHES, 0) {
        got.push(i);
    }
    assert_eq!(got, [8, 9, 11, 12, 13, 14, 15, 16, 17, 18]);
    assert_eq!(
        config(&mut h, 0, ALL, 0, BRANCHES, 0).0,
        error::NOT_SUPPORTED
    );
}

/// SKIP_MATCH "unconditionally select[s] the first counter from the set" (it must still be
/// able to count the event and not be started); CLEAR_VALUE zeroes it; AUTO_START starts it
/// without changing its value; the SET_xINH hints become the Sscofpmf xINH bits of mhpmevent
/// (Smcntrpmf's mcyclecfg for cycle).
#[test]
fn config_flags() {
    let mut h = hart();
    // Counter 3 configured (not started), then taken again with SKIP_MATCH.
    assert_eq!(config(&mut h, 3, 0b11, 0, BRANCHES, 0), (0, 3));
    assert_eq!(
        config(&mut h, 3, 0b11, 0, BRANCHES, 0),
        (0, 4),
        "3 is not free"
    );
    assert_eq!(config(&mut h, 3, 0b11, SKIP_MATCH, INSTRUCTIONS, 0), (0, 3));
    assert_eq!(
        h.csr_read(num::MHPMEVENT3).unwrap() & hpmevent::SELECTOR,
        INSTRUCTIONS
    );
    // SKIP_MATCH on a counter that cannot count the event: no fallback to the next.
    assert_eq!(
        config(&mut h, 1, 0b101, SKIP_MATCH, CYCLES, 0).0,
        error::NOT_SUPPORTED
    );
    // The xINH hints (bits 3..7 -> VUINH, VSINH, UINH, SINH, MINH); no H, so VUINH and VSINH
    // are ignored.
    let flags = [
        (1 << 3, 0),
        (1 << 4, 0),
        (1 << 5, hpmevent::UINH),
        (1 << 6, hpmevent::SINH),
        (1 << 7, hpmevent::MINH),
    ];
    for (k, &(flag, bit)) in flags.iter().enumerate() {
        let i = 5 + k as u64;
        assert_eq!(config(&mut h, i, 1, flag, INSTRUCTIONS, 0), (0, i));
        let ev = h.csr_read(num::MHPMEVENT3 + i as u16 - 3).unwrap();
        assert_eq!(ev & hpmevent::INH, bit, "flag {flag:#x}");
        assert_eq!(ev & hpmevent::OF, 0);
    }
    // On cycle: mcyclecfg's MINH|UINH.
    assert_eq!(config(&mut h, 0, 1, (1 << 7) | (1 << 5), CYCLES, 0), (0, 0));
    assert_eq!(
        h.csr_read(num::MCYCLECFG).unwrap(),
        hpmevent::MINH | hpmevent::UINH
    );
    // CLEAR_VALUE and AUTO_START.
    h.csr_write(num::MHPMCOUNTER3 + 8, 1234);
    assert_eq!(config(&mut h, 11, 1, CLEAR_VALUE, INSTRUCTIONS, 0), (0, 11));
    assert_eq!(s_counter(&mut h, 11), 0);
    h.csr_write(num::MHPMCOUNTER3 + 9, 1000);
    assert_eq!(config(&mut h, 12, 1, AUTO_START, INSTRUCTIONS, 0), (0, 12));
    assert_eq!(
        h.csr_read(num::MCOUNTINHIBIT).unwrap() >> 12 & 1,
        0,
        "started"
    );
    assert_eq!(
        h.csr_read(num::MCOUNTINHIBIT).unwrap() >> 11 & 1,
        1,
        "not started"
    );
    // AUTO_START keeps the value: 1000 plus the csrr that reads it (which retires after the
    // read, so 1000 exactly).
    assert_eq!(s_counter(&mut h, 12), 1000);
    // Started: counter_start says so; a SKIP_MATCH on it is refused.
    assert_eq!(
        call(&mut h, PMU, 3, &[12, 1, 0, 0]).0,
        error::ALREADY_STARTED
    );
    assert_eq!(
        config(&mut h, 12, 1, SKIP_MATCH, CYCLES, 0).0,
        error::NOT_SUPPORTED
    );
}

/// Counting through the SBI: cycles and instructions rise over a stretch of code exactly by
/// what it retires, as read from S-mode through `hpmcounterN` (mcounteren set by the SBI).
/// The SBI's `ecall` retires on this hart (serviced without a trap) but stands for the
/// exception and its handler: not an instruction for the counters, one cycle (the hart's rule).
#[test]
fn start_count_stop() {
    let mut h = hart();
    let (_, c) = config(&mut h, 0, HPM, CLEAR_VALUE, INSTRUCTIONS, 0);
    assert_eq!(c, 3);
    let (_, cy) = config(&mut h, 0, 1, 0, CYCLES, 0);
    assert_eq!(cy, 0);
    assert_eq!(call(&mut h, PMU, 3, &[0, 0b1001, SET_INIT_VALUE, 0]).0, 0);
    exec(&mut h, &[NOP; 50]);
    assert_eq!(call(&mut h, PMU, 4, &[0, 0b1001, 0]).0, 0);
    // Instructions: the 50 nops; cycles: also the stop's ecall.
    assert_eq!(s_counter(&mut h, 3), 50);
    assert_eq!(s_counter(&mut h, 0), 51);
    // Stopped: nothing more counts.
    exec(&mut h, &[NOP; 10]);
    assert_eq!(s_counter(&mut h, 3), 50);
    // Errors: start reserved flag bit, both init flags, an unconfigured counter, one that
    // is running; stop reserved bit, stopped counters.
    assert_eq!(call(&mut h, PMU, 3, &[3, 1, 4, 0]).0, error::INVALID_PARAM);
    assert_eq!(call(&mut h, PMU, 3, &[3, 1, 3, 0]).0, error::INVALID_PARAM);
    assert_eq!(
        call(&mut h, PMU, 3, &[3, 0b11, 0, 0]).0,
        error::INVALID_PARAM,
        "4 free"
    );
    assert_eq!(
        call(&mut h, PMU, 3, &[1, 1, 0, 0]).0,
        error::INVALID_PARAM,
        "time"
    );
    assert_eq!(
        call(&mut h, PMU, 3, &[TOTAL, 1, 0, 0]).0,
        error::INVALID_PARAM
    );
    assert_eq!(
        call(&mut h, PMU, 3, &[M1, M1, 0, 0]).0,
        error::INVALID_PARAM
    );
    assert_eq!(call(&mut h, PMU, 4, &[3, 1, 4]).0, error::INVALID_PARAM);
    assert_eq!(call(&mut h, PMU, 4, &[3, 1, 0]).0, error::ALREADY_STOPPED);
    assert_eq!(
        call(&mut h, PMU, 4, &[M1 - 2, 0b1111, 0]).0,
        error::INVALID_PARAM
    );
    assert_eq!(call(&mut h, PMU, 3, &[3, 1, 0, 0]).0, 0);
    assert_eq!(
        call(&mut h, PMU, 3, &[3, 1, 0, 0]).0,
        error::ALREADY_STARTED
    );
    // A set with one running and one stopped counter: nothing changes on the error.
    assert_eq!(
        call(&mut h, PMU, 3, &[0, 0b1001, 0, 0]).0,
        error::ALREADY_STARTED
    );
    assert_eq!(
        h.csr_read(num::MCOUNTINHIBIT).unwrap() & 1,
        1,
        "cycle still stopped"
    );
    // Without SET_INIT_VALUE counting resumes from the current value: seven nops retired
    // while it ran (the refused starts' and the stop's ecalls are not instructions).
    exec(&mut h, &[NOP; 7]);
    assert_eq!(call(&mut h, PMU, 4, &[3, 1, 0]).0, 0);
    assert_eq!(s_counter(&mut h, 3), 50 + 7);
    // RESET releases the mapping: start is INVALID_PARAM, config_matching may take it.
    assert_eq!(call(&mut h, PMU, 3, &[3, 1, 0, 0]).0, 0);
    assert_eq!(call(&mut h, PMU, 4, &[3, 1, RESET]).0, 0);
    assert_eq!(h.csr_read(num::MHPMEVENT3).unwrap(), 0);
    assert_eq!(call(&mut h, PMU, 3, &[3, 1, 0, 0]).0, error::INVALID_PARAM);
    assert_eq!(call(&mut h, PMU, 4, &[3, 1, 0]).0, error::INVALID_PARAM);
    assert_eq!(config(&mut h, 3, 1, 0, BRANCHES, 0), (0, 3));
    // SET_INIT_VALUE.
    assert_eq!(
        call(&mut h, PMU, 3, &[3, 1, SET_INIT_VALUE, 0xdead_0000]).0,
        0
    );
    assert_eq!(s_counter(&mut h, 3), 0xdead_0000, "no branches ran");
}

/// A RESET stop releases counters that are already stopped (ALREADY_STOPPED all the same), as
/// Linux's riscv-pmu-sbi needs: at boot it probes every event with config_matching and a RESET
/// stop of the counter it got, never started, and it removes an event with a stop, then a RESET
/// stop. With the mapping kept, 33 counters were gone after its probes and every later
/// perf_event_open found none (Debian's 6.12 kernel counted 0 under the built-in SBI).
#[test]
fn reset_releases_stopped_counters() {
    let mut h = hart();
    // The boot probe, 40 times over (more than there are counters): each finds a counter.
    for _ in 0..40 {
        let (e, c) = config(&mut h, 0, HPM, 0, BRANCHES, 0);
        assert_eq!(e, 0);
        assert_eq!(
            call(&mut h, PMU, 4, &[c, 1, RESET]).0,
            error::ALREADY_STOPPED
        );
    }
    // Without RESET a stopped counter's mapping stays.
    let (_, c) = config(&mut h, 0, HPM, 0, BRANCHES, 0);
    assert_eq!(call(&mut h, PMU, 4, &[c, 1, 0]).0, error::ALREADY_STOPPED);
    assert_eq!(call(&mut h, PMU, 3, &[c, 1, 0, 0]).0, 0, "still configured");
    // A set of one running and one stopped counter with RESET: both released, the running one
    // stopped first, and the error said.
    let (_, d) = config(&mut h, 0, HPM, 0, INSTRUCTIONS, 0);
    assert!(d > c);
    let mask = 1 | 1 << (d - c);
    assert_eq!(
        call(&mut h, PMU, 4, &[c, mask, RESET]).0,
        error::ALREADY_STOPPED
    );
    assert_eq!(
        h.csr_read(num::MCOUNTINHIBIT).unwrap() >> c & 1,
        1,
        "stopped"
    );
    assert_eq!(
        call(&mut h, PMU, 3, &[c, 1, 0, 0]).0,
        error::INVALID_PARAM,
        "free"
    );
    assert_eq!(
        call(&mut h, PMU, 3, &[d, 1, 0, 0]).0,
        error::INVALID_PARAM,
        "free"
    );
}

/// Every standard firmware event (table "PMU Firmware Events", codes 0..=21) goes on every
/// firmware counter, as KVM's selftest configures SBI_PMU_FW_ACCESS_LOAD on each one; a
/// counter counts what the SBI sees: ACCESS_LOAD (2) stays 0 (access faults are delegated to
/// S), SET_TIMER counts the calls. The reserved code 22 and PLATFORM are NOT_SUPPORTED.
#[test]
fn every_standard_firmware_event_on_every_firmware_counter() {
    let mut h = hart();
    for code in 0..=21u64 {
        for c in HW..TOTAL {
            assert_eq!(
                config(&mut h, c, 1, CLEAR_VALUE | AUTO_START, 0xf_0000 | code, 0),
                (0, c),
                "code {code} on counter {c}"
            );
        }
        assert_eq!(call(&mut h, eid::TIME, 0, &[M1, M1]).0, 0);
        let want = (code == 5) as u64;
        for c in HW..TOTAL {
            assert_eq!(
                call(&mut h, PMU, 5, &[c]),
                (0, want),
                "code {code} counter {c}"
            );
        }
        assert_eq!(call(&mut h, PMU, 4, &[HW, FW >> HW, RESET]).0, 0);
    }
    assert_eq!(
        config(&mut h, HW, FW >> HW, 0, 0xf_0016, 0).0,
        error::NOT_SUPPORTED
    );
    assert_eq!(
        config(&mut h, HW, FW >> HW, 0, 0xf_ffff, 0).0,
        error::NOT_SUPPORTED
    );
}

/// Counter 1 (`time`) is no counter: start, stop and the firmware reads of it are
/// INVALID_PARAM, and config_matching never picks it (SKIP_MATCH on it: NOT_SUPPORTED).
#[test]
fn counter_1_is_not_a_counter() {
    let mut h = hart();
    assert_eq!(call(&mut h, PMU, 3, &[1, 1, 0, 0]).0, error::INVALID_PARAM);
    assert_eq!(call(&mut h, PMU, 4, &[1, 1, 0]).0, error::INVALID_PARAM);
    assert_eq!(call(&mut h, PMU, 5, &[1]).0, error::INVALID_PARAM);
    assert_eq!(call(&mut h, PMU, 6, &[1]).0, error::INVALID_PARAM);
    for ev in [CYCLES, INSTRUCTIONS, FW_SET_TIMER] {
        assert_eq!(
            config(&mut h, 1, 1, SKIP_MATCH, ev, 0).0,
            error::NOT_SUPPORTED
        );
        assert_eq!(config(&mut h, 1, 1, 0, ev, 0).0, error::NOT_SUPPORTED);
    }
    // Sets from index 0 that include it choose another counter.
    assert_eq!(
        config(&mut h, 0, 0b10, 0, CYCLES, 0).0,
        error::NOT_SUPPORTED
    );
    assert_eq!(config(&mut h, 0, 0b11, 0, CYCLES, 0), (0, 0));
}

/// FIDs 5 and 6: firmware counters count the SBI's own work; reading a hardware counter or
/// an unconfigured one is INVALID_PARAM; fw_read_hi is 0 on RV64, the upper half on RV32.
#[test]
fn firmware_counters() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        assert_eq!(config(&mut h, HW, 1, AUTO_START, FW_SET_TIMER, 0), (0, HW));
        assert_eq!(config(&mut h, HW + 1, 1, 0, FW_IPI_SENT, 0), (0, HW + 1));
        assert_eq!(
            config(&mut h, HW + 2, 1, AUTO_START, FW_IPI_RECEIVED, 0),
            (0, HW + 2)
        );
        for _ in 0..3 {
            assert_eq!(call(&mut h, eid::TIME, 0, &[M1, M1]).0, 0);
        }
        assert_eq!(call(&mut h, eid::IPI, 0, &[1, 0]).0, 0);
        assert_eq!(
            call(&mut h, eid::IPI, 0, &[0, 0]).0,
            0,
            "no hart: nothing received"
        );
        assert_eq!(call(&mut h, PMU, 5, &[HW]), (0, 3));
        assert_eq!(
            call(&mut h, PMU, 5, &[HW + 1]),
            (0, 0),
            "configured, not started"
        );
        assert_eq!(call(&mut h, PMU, 5, &[HW + 2]), (0, 1));
        for bad in [0, 3, HW - 1, HW + 3, TOTAL, h.trunc(M1)] {
            assert_eq!(
                call(&mut h, PMU, 5, &[bad]).0,
                error::INVALID_PARAM,
                "{bad}"
            );
            assert_eq!(
                call(&mut h, PMU, 6, &[bad]).0,
                error::INVALID_PARAM,
                "{bad}"
            );
        }
        assert_eq!(call(&mut h, PMU, 6, &[HW]), (0, 0));
        // Start with an initial value above 32 bits: fw_read gives the low XLEN bits,
        // fw_read_hi the high 32 on RV32 (0 on RV64).
        let init = 0x1_2345_6789u64;
        let args: Vec<u64> = match xlen {
            Xlen::Rv64 => vec![HW + 1, 1, SET_INIT_VALUE, init],
            Xlen::Rv32 => vec![HW + 1, 1, SET_INIT_VALUE, init & 0xffff_ffff, init >> 32],
        };
        assert_eq!(call(&mut h, PMU, 3, &args).0, 0);
        assert_eq!(call(&mut h, eid::IPI, 0, &[1, 0]).0, 0);
        let (lo, hi) = (
            call(&mut h, PMU, 5, &[HW + 1]),
            call(&mut h, PMU, 6, &[HW + 1]),
        );
        match xlen {
            Xlen::Rv64 => assert_eq!((lo, hi), ((0, init + 1), (0, 0))),
            Xlen::Rv32 => assert_eq!((lo, hi), ((0, 0x2345_678a), (0, 1))),
        }
        // Stopped firmware counters keep their value; RESET makes them invalid for reads.
        assert_eq!(call(&mut h, PMU, 4, &[HW, 0b111, 0]).0, 0);
        assert_eq!(call(&mut h, eid::TIME, 0, &[M1, M1]).0, 0);
        assert_eq!(call(&mut h, PMU, 5, &[HW]), (0, 3));
        assert_eq!(call(&mut h, PMU, 4, &[HW, 1, 0]).0, error::ALREADY_STOPPED);
        assert_eq!(call(&mut h, PMU, 3, &[HW, 1, 0, 0]).0, 0);
        assert_eq!(call(&mut h, PMU, 4, &[HW, 1, RESET]).0, 0);
        assert_eq!(call(&mut h, PMU, 5, &[HW]).0, error::INVALID_PARAM);
    }
}

/// FID 7 "Set PMU snapshot shared memory": flags != 0 or an unaligned address is
/// INVALID_PARAM; memory that is not accessible INVALID_ADDRESS; all-ones disables it (then
/// INIT_SNAPSHOT/TAKE_SNAPSHOT are NO_SHMEM).
#[test]
fn snapshot_set_shmem() {
    let mut h = hart();
    let ram_end = BASE + h.bus.ram_size();
    assert_eq!(config(&mut h, 3, 1, 0, INSTRUCTIONS, 0), (0, 3));
    assert_eq!(
        call(&mut h, PMU, 3, &[3, 1, INIT_SNAPSHOT, 0]).0,
        error::NO_SHMEM
    );
    assert_eq!(call(&mut h, PMU, 3, &[3, 1, 0, 0]).0, 0);
    assert_eq!(
        call(&mut h, PMU, 4, &[3, 1, TAKE_SNAPSHOT]).0,
        error::NO_SHMEM
    );
    assert_eq!(call(&mut h, PMU, 7, &[SHMEM, 0, 1]).0, error::INVALID_PARAM);
    assert_eq!(
        call(&mut h, PMU, 7, &[SHMEM + 8, 0, 0]).0,
        error::INVALID_PARAM
    );
    assert_eq!(
        call(&mut h, PMU, 7, &[0x1000, 0, 0]).0,
        error::INVALID_ADDRESS
    );
    assert_eq!(
        call(&mut h, PMU, 7, &[SHMEM, 1, 0]).0,
        error::INVALID_ADDRESS
    );
    assert_eq!(
        call(&mut h, PMU, 7, &[ram_end, 0, 0]).0,
        error::INVALID_ADDRESS
    );
    assert_eq!(
        call(&mut h, PMU, 7, &[M1 & !0xfff, 0, 0]).0,
        error::INVALID_ADDRESS
    );
    assert_eq!(
        call(&mut h, PMU, 7, &[ram_end - 0x1000, 0, 0]).0,
        0,
        "last page"
    );
    assert_eq!(call(&mut h, PMU, 7, &[M1, M1, 0]).0, 0, "disabled");
    assert_eq!(
        call(&mut h, PMU, 4, &[3, 1, TAKE_SNAPSHOT]).0,
        error::NO_SHMEM
    );
    assert_eq!(
        call(&mut h, PMU, 7, &[M1, 0, 0]).0,
        error::INVALID_PARAM,
        "only lo all-ones"
    );
    assert_eq!(call(&mut h, PMU, 7, &[SHMEM, 0, 0]).0, 0);
    // Set does not touch the memory.
    assert_eq!(read_u64(&h, SHMEM), 0);
}

/// TAKE_SNAPSHOT: counter_values[i] (offset 8 + 8 i, relative to counter_idx_base) of the
/// stopped counters equal the counters; the other slots are not modified. INIT_SNAPSHOT
/// starts the given counters from those slots.
#[test]
fn snapshot_contents() {
    let mut h = hart();
    assert!(h.bus.write_ram(SHMEM, &[0xee; 4096]));
    assert_eq!(call(&mut h, PMU, 7, &[SHMEM, 0, 0]).0, 0);
    assert_eq!(config(&mut h, 0, 1, 0, CYCLES, 0), (0, 0));
    assert_eq!(config(&mut h, 2, 1, 0, INSTRUCTIONS, 0), (0, 2));
    assert_eq!(config(&mut h, 5, 1, CLEAR_VALUE, BRANCHES, 0), (0, 5));
    assert_eq!(config(&mut h, HW, 1, CLEAR_VALUE, FW_SET_TIMER, 0), (0, HW));
    let set = 1 | 1 << 2 | 1 << 5 | 1 << HW;
    assert_eq!(call(&mut h, PMU, 3, &[0, set, SET_INIT_VALUE, 0]).0, 0);
    exec(&mut h, &[NOP; 20]);
    assert_eq!(call(&mut h, eid::TIME, 0, &[M1]).0, 0);
    // Stop with base 2: the relative indices are 0 (instret), 3 (counter 5), HW-2 (fw).
    let rel = 1 | 1 << 3 | 1 << (HW - 2);
    assert_eq!(call(&mut h, PMU, 4, &[2, rel, TAKE_SNAPSHOT]).0, 0);
    let slot = |h: &Hart, k: u64| read_u64(h, SHMEM + 8 + 8 * k);
    assert_eq!(slot(&h, 0), h.csr_read(num::MINSTRET).unwrap());
    assert_eq!(
        slot(&h, 0),
        20,
        "20 nops (the set_timer and stop ecalls are not instructions for the counters)"
    );
    assert_eq!(slot(&h, 3), h.csr_read(num::MHPMCOUNTER3 + 2).unwrap());
    assert_eq!(slot(&h, 3), 0, "no branches");
    assert_eq!(slot(&h, HW - 2), 1, "one set_timer");
    assert_eq!(read_u64(&h, SHMEM), 0, "no overflow");
    for k in [1, 2, 4, HW - 3, HW - 1, 63] {
        assert_eq!(slot(&h, k), 0xeeee_eeee_eeee_eeee, "slot {k} untouched");
    }
    assert_eq!(
        read_u64(&h, SHMEM + 0x208),
        0xeeee_eeee_eeee_eeee,
        "reserved area"
    );
    // INIT_SNAPSHOT from base 2: instret from slot 0, counter 5 from slot 3.
    assert!(h.bus.write_ram(SHMEM + 8, &1000u64.to_le_bytes()));
    assert!(h.bus.write_ram(SHMEM + 8 + 24, &77u64.to_le_bytes()));
    assert_eq!(call(&mut h, PMU, 3, &[2, 0b1001, INIT_SNAPSHOT, 0]).0, 0);
    assert_eq!(s_counter(&mut h, 5), 77);
    assert_eq!(s_counter(&mut h, 2), 1001, "1000 + the first csrr");
}

/// An overflow of a counter configured through the SBI raises LCOFI, delegated to S
/// (mideleg bit 13), taken by the S handler at the instruction where the counter wraps; the
/// snapshot's overflow bitmap then marks it (Sscofpmf).
#[test]
fn overflow_raises_lcofi_in_s_mode() {
    let mut h = hart();
    assert_ne!(h.csr.mideleg & irq::LCOFI, 0);
    h.csr.mie |= irq::LCOFI;
    h.csr.mstatus |= mstatus::SIE;
    assert_eq!(call(&mut h, PMU, 7, &[SHMEM, 0, 0]).0, 0);
    assert_eq!(config(&mut h, 0, HPM, 0, INSTRUCTIONS, 0), (0, 3));
    assert_eq!(call(&mut h, PMU, 3, &[3, 1, SET_INIT_VALUE, M1 - 4]).0, 0);
    // Five instructions bring it to 2^64 (wrap): the interrupt is taken before the sixth.
    let nops: Vec<u8> = [NOP; 16].iter().flat_map(|w| w.to_le_bytes()).collect();
    assert!(h.bus.write_ram(CODE_AT, &nops));
    h.pc = CODE_AT;
    assert_eq!(h.run(&mut (), 5), rvtrace_sim::Stop::InsnLimit);
    assert_eq!(h.csr.scause, 0, "not yet taken");
    assert_eq!(h.run(&mut (), 1), rvtrace_sim::Stop::InsnLimit);
    assert_eq!(h.csr.scause, (1 << 63) | 13);
    assert_eq!(h.csr.sepc, CODE_AT + 20);
    assert_eq!(h.priv_, 1);
    assert_ne!(h.csr_read(num::MHPMEVENT3).unwrap() & hpmevent::OF, 0);
    assert_eq!(s_read(&mut h, num::SCOUNTOVF).unwrap() & 1 << 3, 1 << 3);
    // RESET with the snapshot: the bitmap still reports the overflow.
    assert_eq!(call(&mut h, PMU, 4, &[3, 1, TAKE_SNAPSHOT | RESET]).0, 0);
    assert_eq!(
        read_u64(&h, SHMEM),
        1,
        "bit 0 = counter 3 relative to base 3"
    );
    // Wrapped to 0 at the fifth nop, then the handler's nop and the csrr (the stop's ecall is
    // not an instruction for the counters).
    assert_eq!(read_u64(&h, SHMEM + 8), 2);
    // A restart clears OF so that the next wrap interrupts again.
    assert_eq!(config(&mut h, 3, 1, 0, INSTRUCTIONS, 0), (0, 3));
    assert_eq!(call(&mut h, PMU, 3, &[3, 1, SET_INIT_VALUE, M1]).0, 0);
    assert_eq!(h.csr_read(num::MHPMEVENT3).unwrap() & hpmevent::OF, 0);
}

/// FID 8 "Get PMU Event info": flags != 0, an unaligned address, or a reserved bit in any
/// event_idx word is INVALID_PARAM (and nothing is written); inaccessible memory
/// INVALID_ADDRESS; otherwise output bit 0 says whether the event is supported.
#[test]
fn event_get_info() {
    let mut h = hart();
    let entries: [(u32, u64, u32); 10] = [
        (CYCLES as u32, 0, 1),
        (0, 0, 0),
        (0x1_0019, 0, 1), // DTLB read miss: known (never counts here)
        (FW_SET_TIMER as u32, 0, 1),
        (0xf_0004, 0, 1), // ILLEGAL_INSN: configurable (counts 0 here, the trap goes to S)
        (0xf_0016, 0, 0), // 22: reserved
        (0x2_0000, 0x2_0001, 1),
        (0x2_0000, 0x7777, 0),
        (CYCLES as u32, 5, 1), // event_data ignored for type 0
        (0x5_0000, 0, 0),
    ];
    let write = |h: &mut Hart, list: &[(u32, u64, u32)]| {
        for (k, &(idx, data, _)) in list.iter().enumerate() {
            let mut e = [0u8; 16];
            e[0..4].copy_from_slice(&idx.to_le_bytes());
            e[4..8].copy_from_slice(&0xffff_ffffu32.to_le_bytes());
            e[8..16].copy_from_slice(&data.to_le_bytes());
            assert!(h.bus.write_ram(SHMEM + 16 * k as u64, &e));
        }
    };
    let output = |h: &Hart, k: usize| {
        let mut b = [0u8; 4];
        assert!(h.read_memory(SHMEM + 16 * k as u64 + 4, &mut b));
        u32::from_le_bytes(b)
    };
    write(&mut h, &entries);
    let n = entries.len() as u64;
    assert_eq!(
        call(&mut h, PMU, 8, &[SHMEM, 0, n, 1]).0,
        error::INVALID_PARAM
    );
    assert_eq!(
        call(&mut h, PMU, 8, &[SHMEM + 8, 0, n, 0]).0,
        error::INVALID_PARAM
    );
    assert_eq!(
        call(&mut h, PMU, 8, &[0x1000, 0, n, 0]).0,
        error::INVALID_ADDRESS
    );
    assert_eq!(
        call(&mut h, PMU, 8, &[SHMEM, 1, n, 0]).0,
        error::INVALID_ADDRESS
    );
    assert_eq!(
        call(&mut h, PMU, 8, &[SHMEM, 0, M1, 0]).0,
        error::INVALID_ADDRESS
    );
    assert_eq!(
        call(&mut h, PMU, 8, &[SHMEM, 0, M1 >> 4, 0]).0,
        error::INVALID_ADDRESS
    );
    assert_eq!(output(&h, 0), 0xffff_ffff, "nothing written on errors");
    assert_eq!(call(&mut h, PMU, 8, &[SHMEM, 0, n, 0]).0, 0);
    for (k, &(idx, data, want)) in entries.iter().enumerate() {
        assert_eq!(output(&h, k), want, "{idx:#x} {data:#x}");
    }
    // A reserved bit in the last entry's event_idx: INVALID_PARAM, no output written.
    let mut bad = entries;
    bad[8].0 = 0x10_0001;
    write(&mut h, &bad);
    assert_eq!(
        call(&mut h, PMU, 8, &[SHMEM, 0, n, 0]).0,
        error::INVALID_PARAM
    );
    assert_eq!(output(&h, 0), 0xffff_ffff);
    assert_eq!(call(&mut h, PMU, 8, &[SHMEM, 0, 0, 0]).0, 0, "no entries");
    assert_eq!(call(&mut h, PMU, 9, &[]).0, error::NOT_SUPPORTED);
}

/// RV32: 64-bit parameters come in register pairs (event_data in a4/a5, initial_value in
/// a3/a4); counters are still 64 bits wide (mhpmcounterNh).
#[test]
fn rv32_register_pairs() {
    let (mut h, _) = sbi_hart(Xlen::Rv32, b"");
    // Raw event with event_data 0x2_0001 passed as (lo, hi) = (0x2_0001, 0).
    assert_eq!(
        call(&mut h, PMU, 2, &[0, HPM, 0, 0x2_0000, 0x2_0001, 0]),
        (0, 3)
    );
    // A non-zero high half makes it a different (unknown) selector.
    assert_eq!(
        call(&mut h, PMU, 2, &[0, HPM, 0, 0x2_0000, 0x2_0001, 1]).0,
        error::NOT_SUPPORTED
    );
    assert_eq!(
        call(&mut h, PMU, 2, &[0, HPM, 0, INSTRUCTIONS, 0, 0]),
        (0, 4)
    );
    assert_eq!(
        call(&mut h, PMU, 3, &[4, 1, SET_INIT_VALUE, 0xffff_fffe, 0x7]).0,
        0
    );
    exec(&mut h, &[NOP; 3]);
    assert_eq!(call(&mut h, PMU, 4, &[4, 1, 0]).0, 0);
    // 0x7_ffff_fffe + three nops.
    assert_eq!(s_counter(&mut h, 4), 1);
    assert_eq!(
        s_read(&mut h, num::CYCLEH + 4).unwrap(),
        8,
        "carried into the high half"
    );
    // Flags on RV32 land in mhpmevent4h (bits 63..58 -> 31..26).
    assert_eq!(
        call(&mut h, PMU, 2, &[5, 1, 1 << 6, INSTRUCTIONS, 0, 0]),
        (0, 5)
    );
    assert_eq!(
        h.csr_read(num::MHPMEVENT3H + 2).unwrap() as u32,
        (hpmevent::SINH >> 32) as u32
    );
}

/// SSE's LOCAL_PMU_OVERFLOW (SBI v3.0 chapter 17, table "SSE Event ID Space": "Local PMU
/// overflow event (depends on overflow IRQ)"): while it is enabled the overflow is the event,
/// not LCOFI in S-mode. The handler is entered before the instruction after the one where the
/// counter wraps (where LCOFI would have been taken), with `sepc` = that instruction, `a6` =
/// hart id, `a7` = ENTRY_ARG, `scause` untouched and LCOFIP acknowledged; `complete` resumes
/// there. Disabled, LCOFI goes to S again with S-mode's `sie.LCOFIE` as it was.
#[test]
fn overflow_raises_the_sse_pmu_event() {
    const SSE: u64 = eid::SSE;
    let pmu_event = rvtrace_sbi::sse_event::LOCAL_PMU_OVERFLOW as u64;
    let entry = HANDLER + 0x300;
    let mut h = hart();
    h.csr.mie |= irq::LCOFI;
    h.csr.mstatus |= mstatus::SIE;
    assert_eq!(call(&mut h, SSE, 2, &[pmu_event, entry, 0x99]).0, 0);
    assert_eq!(call(&mut h, SSE, 4, &[pmu_event]).0, 0);
    assert_eq!(h.csr.mideleg & irq::LCOFI, 0, "the firmware takes LCOFI");
    assert_eq!(call(&mut h, SSE, 8, &[]).0, 0, "unmask");
    assert_eq!(config(&mut h, 0, HPM, 0, INSTRUCTIONS, 0), (0, 3));
    assert_eq!(call(&mut h, PMU, 3, &[3, 1, SET_INIT_VALUE, M1 - 4]).0, 0);
    let nops: Vec<u8> = [NOP; 16].iter().flat_map(|w| w.to_le_bytes()).collect();
    assert!(h.bus.write_ram(CODE_AT, &nops));
    h.pc = CODE_AT;
    h.x[16] = 0x16;
    h.x[17] = 0x17;
    assert_eq!(h.run(&mut (), 5), rvtrace_sim::Stop::InsnLimit);
    assert_eq!(h.pc, CODE_AT + 20, "not yet taken");
    // The next instruction retired is the handler's first.
    assert_eq!(h.run(&mut (), 1), rvtrace_sim::Stop::InsnLimit);
    assert_eq!(h.pc, entry + 4);
    assert_eq!(h.csr.sepc, CODE_AT + 20);
    assert_eq!(h.csr.scause, 0, "no S trap");
    assert_eq!((h.x[16], h.x[17]), (0, 0x99));
    assert_eq!(h.mip() & irq::LCOFI, 0, "acknowledged");
    assert_ne!(h.csr_read(num::MHPMEVENT3).unwrap() & hpmevent::OF, 0);
    // complete: back at the interrupted instruction with a6/a7 restored.
    let (_, _, stop) = call_stop(&mut h, SSE, 6, &[]);
    assert_eq!(stop, rvtrace_sim::Stop::InsnLimit);
    assert_eq!(h.pc, CODE_AT + 20);
    assert_eq!((h.x[16], h.x[17]), (0x16, 0x17));
    // Disabled: delegated to S again, sie.LCOFIE as S set it.
    assert_eq!(call(&mut h, SSE, 5, &[pmu_event]).0, 0);
    assert_ne!(h.csr.mideleg & irq::LCOFI, 0);
    assert_ne!(h.csr.mie & irq::LCOFI, 0);
}
