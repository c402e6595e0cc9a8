//! SSE (SBI v3.0 chapter 17, "Supervisor Software Events Extension") on one hart, through
//! real `ecall`s at S-mode: the event ids, the state machine and every function's errors as
//! the chapter's tables list them, the attribute rules, and the entry into a handler and the
//! return from `complete` ("Software Event Injection", "Software Event Completion"),
//! priorities and masking. Several harts (a global event on its preferred hart) and the
//! trace: `crates/cli/tests/sbi_v3.rs` with `programs/sbi/sse.c`. The PMU overflow event:
//! `pmu::overflow_raises_the_sse_pmu_event`.

use crate::common;
use common::*;
use rvtrace_isa::Xlen;
use rvtrace_sbi::{eid, error, sse_attr as attr, sse_event as ev};
use rvtrace_sim::csr::mstatus;
use rvtrace_sim::Hart;

const SSE: u64 = eid::SSE;
const READ: u64 = 0;
const WRITE: u64 = 1;
const REGISTER: u64 = 2;
const UNREGISTER: u64 = 3;
const ENABLE: u64 = 4;
const DISABLE: u64 = 5;
const COMPLETE: u64 = 6;
const INJECT: u64 = 7;
const UNMASK: u64 = 8;
const MASK: u64 = 9;
/// STATUS bit 3: injection allowed (every event here).
const INJECTABLE: u64 = 8;
const PENDING: u64 = 4;
/// Handler entries: a page of nops each (the hart stops there; the test looks at its state).
const ENTRY_A: u64 = HANDLER + 0x100;
const ENTRY_B: u64 = HANDLER + 0x200;

const LOCAL: u64 = ev::LOCAL_SOFTWARE as u64;
const GLOBAL: u64 = ev::GLOBAL_SOFTWARE as u64;

fn width(h: &Hart) -> u64 {
    h.xlen.bits() as u64 / 8
}

/// Attribute `a` of `event` through `read_attrs` (into SHMEM).
fn attr_of(h: &mut Hart, event: u64, a: u32) -> u64 {
    let (e, _) = call(h, SSE, READ, &[event, a as u64, 1, SHMEM, 0]);
    assert_eq!(e, 0, "read attr {a} of {event:#x}");
    let v = read_u64(h, SHMEM);
    if h.xlen == Xlen::Rv32 {
        v & 0xffff_ffff
    } else {
        v
    }
}

/// Write attributes `a..` of `event` (values at SHMEM + 0x100): the error.
fn write_attrs(h: &mut Hart, event: u64, a: u32, vals: &[u64]) -> i64 {
    let w = width(h) as usize;
    let mut b = Vec::new();
    for v in vals {
        b.extend_from_slice(&v.to_le_bytes()[..w]);
    }
    assert!(h.bus.write_ram(SHMEM + 0x100, &b));
    call(
        h,
        SSE,
        WRITE,
        &[event, a as u64, vals.len() as u64, SHMEM + 0x100, 0],
    )
    .0
}

fn status(h: &mut Hart, event: u64) -> u64 {
    attr_of(h, event, attr::STATUS)
}

/// An SSE call whose `ecall` may go elsewhere than after itself (an entry or a resume): the
/// hart's pc after it, and `a0` (XLEN-truncated).
fn call_to(h: &mut Hart, fid: u64, args: &[u64]) -> (u64, u64) {
    let (a0, _, stop) = call_stop(h, SSE, fid, args);
    assert_eq!(stop, rvtrace_sim::Stop::InsnLimit);
    (h.pc, a0)
}

/// Event ids: the supported ones, the standard ones this machine lacks (NOT_SUPPORTED: no
/// RAS source, no Ssdbltrp), reserved and platform-specific ids (INVALID_PARAM), for every
/// function that takes an `event_id` (table "SSE Event ID Space" and each function's errors);
/// only the low 32 bits are the `uint32_t event_id`.
#[test]
fn event_ids() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        assert_eq!(call(&mut h, eid::BASE, 3, &[SSE]), (0, 1), "probe");
        for id in [0u64, 1, 0x8000, 0x0010_0000, 0x0010_8000] {
            assert_eq!(
                call(&mut h, SSE, REGISTER, &[id, ENTRY_A, 0]).0,
                error::NOT_SUPPORTED,
                "{id:#x}"
            );
            for fid in [UNREGISTER, ENABLE, DISABLE] {
                assert_eq!(call(&mut h, SSE, fid, &[id]).0, error::NOT_SUPPORTED);
            }
            assert_eq!(call(&mut h, SSE, INJECT, &[id, 0]).0, error::NOT_SUPPORTED);
            assert_eq!(
                call(&mut h, SSE, READ, &[id, 0, 1, SHMEM, 0]).0,
                error::NOT_SUPPORTED
            );
        }
        for id in [2u64, 0x4000, 0xc000, 0x0001_0001, 0xffff_0001, 0xffff_c000] {
            assert_eq!(
                call(&mut h, SSE, REGISTER, &[id, ENTRY_A, 0]).0,
                error::INVALID_PARAM,
                "{id:#x}"
            );
            assert_eq!(call(&mut h, SSE, ENABLE, &[id]).0, error::INVALID_PARAM);
            assert_eq!(
                call(&mut h, SSE, WRITE, &[id, 1, 1, SHMEM, 0]).0,
                error::INVALID_PARAM
            );
        }
        // The PMU overflow event is there (Sscofpmf), and injectable.
        let pmu = ev::LOCAL_PMU_OVERFLOW as u64;
        assert_eq!(status(&mut h, pmu), INJECTABLE);
        if xlen == Xlen::Rv64 {
            assert_eq!(
                call(&mut h, SSE, REGISTER, &[(1 << 32) | LOCAL, ENTRY_A, 0]).0,
                0,
                "upper bits are not the uint32_t"
            );
        }
        // Unknown FIDs.
        assert_eq!(call(&mut h, SSE, 10, &[]).0, error::NOT_SUPPORTED);
    }
}

/// The state machine ("Software Event States" and each function's table): register from
/// UNUSED only, enable from REGISTERED, disable from ENABLED, unregister from REGISTERED;
/// an odd entry pc is INVALID_PARAM; STATUS follows; `complete` with nothing running and the
/// mask functions' errors.
#[test]
fn state_machine() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        for id in [LOCAL, GLOBAL] {
            assert_eq!(status(&mut h, id), INJECTABLE, "UNUSED");
            assert_eq!(call(&mut h, SSE, ENABLE, &[id]).0, error::INVALID_STATE);
            assert_eq!(call(&mut h, SSE, DISABLE, &[id]).0, error::INVALID_STATE);
            assert_eq!(call(&mut h, SSE, UNREGISTER, &[id]).0, error::INVALID_STATE);
            assert_eq!(
                call(&mut h, SSE, REGISTER, &[id, ENTRY_A + 1, 0]).0,
                error::INVALID_PARAM,
                "2-byte alignment"
            );
            assert_eq!(call(&mut h, SSE, REGISTER, &[id, ENTRY_A + 2, 5]).0, 0);
            assert_eq!(status(&mut h, id), INJECTABLE | 1, "REGISTERED");
            assert_eq!(attr_of(&mut h, id, attr::ENTRY_PC), ENTRY_A + 2);
            assert_eq!(attr_of(&mut h, id, attr::ENTRY_ARG), 5);
            assert_eq!(
                call(&mut h, SSE, REGISTER, &[id, ENTRY_A, 0]).0,
                error::INVALID_STATE
            );
            assert_eq!(call(&mut h, SSE, DISABLE, &[id]).0, error::INVALID_STATE);
            assert_eq!(call(&mut h, SSE, ENABLE, &[id]).0, 0);
            assert_eq!(status(&mut h, id), INJECTABLE | 2, "ENABLED");
            assert_eq!(call(&mut h, SSE, ENABLE, &[id]).0, error::INVALID_STATE);
            assert_eq!(call(&mut h, SSE, UNREGISTER, &[id]).0, error::INVALID_STATE);
            assert_eq!(call(&mut h, SSE, DISABLE, &[id]).0, 0);
            assert_eq!(call(&mut h, SSE, UNREGISTER, &[id]).0, 0);
            assert_eq!(status(&mut h, id), INJECTABLE, "UNUSED again");
        }
        assert_eq!(call(&mut h, SSE, COMPLETE, &[]), (0, 0), "nothing running");
        assert_eq!(
            call(&mut h, SSE, MASK, &[]).0,
            error::ALREADY_STOPPED,
            "masked at first"
        );
        assert_eq!(call(&mut h, SSE, UNMASK, &[]).0, 0);
        assert_eq!(call(&mut h, SSE, UNMASK, &[]).0, error::ALREADY_STARTED);
        assert_eq!(call(&mut h, SSE, MASK, &[]).0, 0);
        // inject: a local event's hart_id must be a hart; a global event ignores it.
        assert_eq!(
            call(&mut h, SSE, INJECT, &[LOCAL, 1]).0,
            error::INVALID_PARAM
        );
        assert_eq!(call(&mut h, SSE, INJECT, &[GLOBAL, 7]).0, 0);
        assert_eq!(status(&mut h, GLOBAL), INJECTABLE | PENDING);
    }
}

/// `read_attrs`/`write_attrs` errors in the order of their tables, and the attribute rules of
/// table "SSE Event Attributes": read-only attributes DENIED, PRIORITY/CONFIG/PREFERRED_HART
/// only while UNUSED or REGISTERED (INVALID_STATE), illegal values INVALID_PARAM, the
/// interrupted state only while RUNNING; the first error in attribute id order wins and a
/// failed write changes nothing; PRIORITY keeps its low 32 bits.
#[test]
fn attributes() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        let w = width(&h);
        let read = |h: &mut Hart, base: u64, n: u64, at: u64| {
            call(h, SSE, READ, &[LOCAL, base, n, at, 0]).0
        };
        assert_eq!(
            read(&mut h, 0, 0, SHMEM),
            error::INVALID_PARAM,
            "attr_count 0"
        );
        assert_eq!(read(&mut h, 9, 2, SHMEM), error::BAD_RANGE, "attribute 10");
        assert_eq!(read(&mut h, 10, 1, SHMEM), error::BAD_RANGE);
        assert_eq!(
            read(&mut h, 0xffff_ffff, 1, SHMEM),
            error::BAD_RANGE,
            "no wrap"
        );
        assert_eq!(
            read(&mut h, 0, 1, SHMEM + 2),
            error::INVALID_ADDRESS,
            "alignment"
        );
        assert_eq!(
            read(&mut h, 0, 1, 0x1000),
            error::INVALID_ADDRESS,
            "not RAM"
        );
        if xlen == Xlen::Rv64 {
            assert_eq!(
                call(&mut h, SSE, READ, &[LOCAL, 0, 1, SHMEM, 1]).0,
                error::INVALID_ADDRESS,
                "at or above 2^64"
            );
        }
        // All ten at once, at offsets (XLEN/8) * i from base 0.
        assert_eq!(call(&mut h, SSE, REGISTER, &[LOCAL, ENTRY_A, 0x77]).0, 0);
        assert_eq!(read(&mut h, 0, 10, SHMEM), 0);
        let word = |h: &Hart, i: u64| {
            let v = read_u64(h, SHMEM + w * i);
            if w == 4 {
                v & 0xffff_ffff
            } else {
                v
            }
        };
        assert_eq!(word(&h, 0), INJECTABLE | 1);
        assert_eq!(word(&h, 3), 0, "a local event's preferred hart is its hart");
        assert_eq!(word(&h, 4), ENTRY_A);
        assert_eq!(word(&h, 5), 0x77);
        // From base 4: ENTRY_PC first.
        assert_eq!(read(&mut h, 4, 2, SHMEM), 0);
        assert_eq!((word(&h, 0), word(&h, 1)), (ENTRY_A, 0x77));

        let p = attr::PRIORITY;
        assert_eq!(
            write_attrs(&mut h, LOCAL, attr::STATUS, &[0]),
            error::DENIED
        );
        assert_eq!(
            write_attrs(&mut h, LOCAL, attr::ENTRY_PC, &[0]),
            error::DENIED
        );
        assert_eq!(
            write_attrs(&mut h, LOCAL, attr::ENTRY_ARG, &[0]),
            error::DENIED
        );
        assert_eq!(
            write_attrs(&mut h, LOCAL, attr::PREFERRED_HART, &[0]),
            error::DENIED,
            "RO for a local event"
        );
        assert_eq!(
            write_attrs(&mut h, GLOBAL, attr::PREFERRED_HART, &[1]),
            error::INVALID_PARAM,
            "no hart 1"
        );
        assert_eq!(write_attrs(&mut h, GLOBAL, attr::PREFERRED_HART, &[0]), 0);
        assert_eq!(
            write_attrs(&mut h, LOCAL, attr::CONFIG, &[2]),
            error::INVALID_PARAM
        );
        // The first error in id order: PRIORITY fine, CONFIG bad -> nothing written.
        assert_eq!(write_attrs(&mut h, LOCAL, p, &[9, 2]), error::INVALID_PARAM);
        assert_eq!(attr_of(&mut h, LOCAL, p), 0);
        // PRIORITY then ENTRY_PC (read-only) -> DENIED, nothing written.
        assert_eq!(
            write_attrs(&mut h, LOCAL, attr::CONFIG, &[1, 0, 0]),
            error::DENIED
        );
        assert_eq!(attr_of(&mut h, LOCAL, attr::CONFIG), 0);
        let big = if xlen == Xlen::Rv64 { (5 << 32) | 9 } else { 9 };
        assert_eq!(write_attrs(&mut h, LOCAL, p, &[big, 1]), 0);
        assert_eq!(attr_of(&mut h, LOCAL, p), 9, "the low 32 bits");
        assert_eq!(attr_of(&mut h, LOCAL, attr::CONFIG), 1);
        for a in attr::INTERRUPTED_SEPC..=attr::INTERRUPTED_A7 {
            assert_eq!(
                write_attrs(&mut h, LOCAL, a, &[0]),
                error::INVALID_STATE,
                "attribute {a} while not RUNNING"
            );
        }
        assert_eq!(call(&mut h, SSE, ENABLE, &[LOCAL]).0, 0);
        assert_eq!(write_attrs(&mut h, LOCAL, p, &[1]), error::INVALID_STATE);
        assert_eq!(
            write_attrs(&mut h, LOCAL, attr::CONFIG, &[0]),
            error::INVALID_STATE
        );
        assert_eq!(
            call(&mut h, SSE, WRITE, &[LOCAL, 1, 1, 0x1000, 0]).0,
            error::INVALID_ADDRESS
        );
    }
}

/// Set `sstatus` (SPP, SPIE, SIE) and `sepc` to known values, and `a6`/`a7` as the next call
/// leaves them (its FID and EID).
fn known_state(h: &mut Hart, spp: bool, spie: bool, sie: bool) {
    let mut st = h.csr.mstatus & !(mstatus::SPP | mstatus::SPIE | mstatus::SIE);
    for (on, bit) in [
        (spp, mstatus::SPP),
        (spie, mstatus::SPIE),
        (sie, mstatus::SIE),
    ] {
        if on {
            st |= bit;
        }
    }
    h.csr.mstatus = st;
    h.csr.sepc = 0xdead_0000;
}

/// A local software event injected on the calling hart is taken as the `inject` call returns
/// ("Software Event Injection"): `a0` = SUCCESS, `a6` = hart id, `a7` = ENTRY_ARG, `sepc` = the
/// instruction after the `ecall`, SPP = S, SPIE = SIE, SIE = 0, S-mode at ENTRY_PC; the
/// attributes hold the interrupted `sepc`, flags (SPP, SPIE), `a6`, `a7`. `complete` resumes
/// exactly there with all of it restored ("Software Event Completion"); the event is ENABLED
/// again, or REGISTERED when one-shot.
#[test]
fn inject_enters_the_handler_and_complete_resumes() {
    for xlen in [Xlen::Rv64, Xlen::Rv32] {
        let (mut h, _) = sbi_hart(xlen, b"");
        assert_eq!(call(&mut h, SSE, REGISTER, &[LOCAL, ENTRY_A, 0xa4a4]).0, 0);
        assert_eq!(call(&mut h, SSE, ENABLE, &[LOCAL]).0, 0);
        // Masked: pending, not taken.
        assert_eq!(call(&mut h, SSE, INJECT, &[LOCAL, 0]).0, 0);
        assert_eq!(status(&mut h, LOCAL), INJECTABLE | PENDING | 2);
        // Unmasking takes it at the unmask's return.
        known_state(&mut h, false, true, true);
        assert_eq!(call_to(&mut h, UNMASK, &[]), (ENTRY_A, 0));
        assert_eq!(h.priv_, 1);
        assert_eq!((h.trunc(h.x[16]), h.trunc(h.x[17])), (0, 0xa4a4));
        assert_eq!(h.trunc(h.csr.sepc), CALL_AT + 4);
        let st = h.csr.mstatus;
        assert_ne!(st & mstatus::SPP, 0, "interrupted in S");
        assert_ne!(st & mstatus::SPIE, 0, "SPIE = SIE (1)");
        assert_eq!(st & mstatus::SIE, 0);
        assert_eq!(
            status(&mut h, LOCAL),
            INJECTABLE | 3,
            "RUNNING, not pending"
        );
        assert_eq!(attr_of(&mut h, LOCAL, attr::INTERRUPTED_SEPC), 0xdead_0000);
        assert_eq!(
            attr_of(&mut h, LOCAL, attr::INTERRUPTED_FLAGS),
            2,
            "SPIE, SPP=U"
        );
        assert_eq!(attr_of(&mut h, LOCAL, attr::INTERRUPTED_A6), UNMASK);
        assert_eq!(attr_of(&mut h, LOCAL, attr::INTERRUPTED_A7), SSE);
        // While RUNNING: the interrupted state is writable, flags with reserved or absent-
        // extension bits are not.
        assert_eq!(
            write_attrs(&mut h, LOCAL, attr::INTERRUPTED_FLAGS, &[4]),
            error::INVALID_PARAM,
            "hstatus.SPV without H"
        );
        assert_eq!(write_attrs(&mut h, LOCAL, attr::INTERRUPTED_A6, &[0x66]), 0);
        assert_eq!(call(&mut h, SSE, DISABLE, &[LOCAL]).0, error::INVALID_STATE);
        // Completion: pc = sepc (CALL_AT + 4), privilege = SPP (S), SIE = SPIE, then SPIE,
        // SPP, a7, a6, sepc from the attributes.
        assert_eq!(
            call_to(&mut h, COMPLETE, &[0x1111]),
            (CALL_AT + 4, 0x1111),
            "a0 kept"
        );
        assert_eq!(h.priv_, 1);
        assert_eq!((h.trunc(h.x[16]), h.trunc(h.x[17])), (0x66, SSE));
        assert_eq!(h.trunc(h.csr.sepc), 0xdead_0000);
        let st = h.csr.mstatus;
        assert_ne!(st & mstatus::SIE, 0);
        assert_ne!(st & mstatus::SPIE, 0);
        assert_eq!(st & mstatus::SPP, 0);
        assert_eq!(status(&mut h, LOCAL), INJECTABLE | 2, "ENABLED again");
        // Inject on itself while unmasked: taken at the inject's return, a0 = SUCCESS.
        known_state(&mut h, true, false, false);
        assert_eq!(call_to(&mut h, INJECT, &[LOCAL, 0]), (ENTRY_A, 0));
        assert_eq!(attr_of(&mut h, LOCAL, attr::INTERRUPTED_FLAGS), 1, "SPP=S");
        assert_eq!(h.csr.mstatus & mstatus::SPIE, 0, "SIE was 0");
        // The handler returns somewhere else: INTERRUPTED_SEPC is where `complete` puts sepc,
        // the handler's sepc where it resumes.
        h.csr.sepc = CODE_AT;
        assert_eq!(call_to(&mut h, COMPLETE, &[]).0, CODE_AT);
        assert_eq!(h.trunc(h.csr.sepc), 0xdead_0000);
        // One-shot: REGISTERED after completing.
        assert_eq!(call(&mut h, SSE, DISABLE, &[LOCAL]).0, 0);
        assert_eq!(write_attrs(&mut h, LOCAL, attr::CONFIG, &[1]), 0);
        assert_eq!(call(&mut h, SSE, ENABLE, &[LOCAL]).0, 0);
        assert_eq!(call_to(&mut h, INJECT, &[LOCAL, 0]).0, ENTRY_A);
        assert_eq!(call_to(&mut h, COMPLETE, &[]).0, CALL_AT + 4);
        assert_eq!(
            status(&mut h, LOCAL),
            INJECTABLE | 1,
            "one-shot: REGISTERED"
        );
    }
}

/// An event is taken from U-mode too: SPP = U in `sstatus`, and `complete` goes back to U.
#[test]
fn taken_from_user_mode() {
    let (mut h, _) = sbi_hart(Xlen::Rv64, b"");
    assert_eq!(call(&mut h, SSE, REGISTER, &[GLOBAL, ENTRY_A, 1]).0, 0);
    assert_eq!(call(&mut h, SSE, ENABLE, &[GLOBAL]).0, 0);
    assert_eq!(call(&mut h, SSE, UNMASK, &[]).0, 0);
    // Mask again, make it pending, then unmask from... S (calls are S-mode); the U case
    // comes from `complete` returning to U with another event pending.
    known_state(&mut h, false, false, false);
    assert_eq!(call_to(&mut h, INJECT, &[GLOBAL, 0]).0, ENTRY_A);
    // The handler makes it resume in U (sstatus.SPP = 0) with the event injected again
    // (pending while RUNNING): `complete` resumes in U and the event is taken there at once.
    h.csr.mstatus &= !mstatus::SPP;
    h.csr.sepc = CODE_AT;
    assert_eq!(
        call_to(&mut h, INJECT, &[GLOBAL, 0]).0,
        CALL_AT + 4,
        "RUNNING: waits"
    );
    assert_eq!(
        call_to(&mut h, COMPLETE, &[]).0,
        ENTRY_A,
        "taken again at once"
    );
    assert_eq!(h.priv_, 1);
    assert_eq!(
        h.trunc(h.csr.sepc),
        CODE_AT,
        "interrupted at the resumed pc"
    );
    assert_eq!(h.csr.mstatus & mstatus::SPP, 0, "interrupted in U");
    // The counters follow: the completing `ecall` is S-mode's (and not an instruction for
    // them), what runs after it U-mode's.
    use rvtrace_sim::counters::Event;
    let count = |h: &Hart, m: u8| h.counters.event_total(Event::Instructions, m, h.instret);
    let (s0, u0) = (count(&h, 1), count(&h, 0));
    assert_eq!(call_to(&mut h, COMPLETE, &[]).0, CODE_AT);
    assert_eq!(h.priv_, 0, "back in U");
    assert!(h
        .bus
        .write_ram(CODE_AT, &rvtrace_testkit::asm::bytes(&[NOP; 3])));
    assert_eq!(h.run(&mut (), 3), rvtrace_sim::Stop::InsnLimit);
    assert_eq!((count(&h, 1) - s0, count(&h, 0) - u0), (0, 3));
}

/// Two pending events: the lower PRIORITY value first, equal priorities by lower id; a
/// higher-priority event preempts a running one at once, a lower one waits for `complete`
/// ("Software Event Priority", FID 7's text).
#[test]
fn priorities() {
    for (local_prio, global_prio, first) in [(5, 5, ENTRY_A), (5, 1, ENTRY_B)] {
        let (mut h, _) = sbi_hart(Xlen::Rv64, b"");
        assert_eq!(call(&mut h, SSE, REGISTER, &[LOCAL, ENTRY_A, 0xa]).0, 0);
        assert_eq!(call(&mut h, SSE, REGISTER, &[GLOBAL, ENTRY_B, 0xb]).0, 0);
        assert_eq!(write_attrs(&mut h, LOCAL, attr::PRIORITY, &[local_prio]), 0);
        assert_eq!(
            write_attrs(&mut h, GLOBAL, attr::PRIORITY, &[global_prio]),
            0
        );
        for id in [LOCAL, GLOBAL] {
            assert_eq!(call(&mut h, SSE, ENABLE, &[id]).0, 0);
            assert_eq!(call(&mut h, SSE, INJECT, &[id, 0]).0, 0, "masked: pending");
        }
        assert_eq!(call_to(&mut h, UNMASK, &[]).0, first);
        let second = if first == ENTRY_A { ENTRY_B } else { ENTRY_A };
        // The second is taken as soon as the first completes, interrupted where the first
        // resumed.
        assert_eq!(call_to(&mut h, COMPLETE, &[]).0, second);
        assert_eq!(h.trunc(h.csr.sepc), CALL_AT + 4);
        assert_eq!(call_to(&mut h, COMPLETE, &[]).0, CALL_AT + 4);
        // Preemption: the lower-priority one running, the higher injected: taken at once; the
        // other way round it waits.
        let (low, high, low_entry, high_entry) = if first == ENTRY_A {
            (GLOBAL, LOCAL, ENTRY_B, ENTRY_A)
        } else {
            (LOCAL, GLOBAL, ENTRY_A, ENTRY_B)
        };
        assert_eq!(call_to(&mut h, INJECT, &[low, 0]).0, low_entry);
        assert_eq!(
            call_to(&mut h, INJECT, &[high, 0]).0,
            high_entry,
            "preempts"
        );
        assert_eq!(status(&mut h, low) & 3, 3, "both RUNNING");
        // `complete` ends the higher one and resumes the lower one's handler.
        assert_eq!(call_to(&mut h, COMPLETE, &[]).0, CALL_AT + 4);
        assert_eq!(status(&mut h, high) & 3, 2);
        assert_eq!(status(&mut h, low) & 3, 3);
        assert_eq!(call_to(&mut h, COMPLETE, &[]).0, CALL_AT + 4);
        assert_eq!(call_to(&mut h, INJECT, &[high, 0]).0, high_entry);
        assert_eq!(call_to(&mut h, INJECT, &[low, 0]).0, CALL_AT + 4, "waits");
        assert_eq!(call_to(&mut h, COMPLETE, &[]).0, low_entry, "then taken");
        // Masking holds events back; a disabled event is not taken.
        assert_eq!(call_to(&mut h, COMPLETE, &[]).0, CALL_AT + 4);
        assert_eq!(call(&mut h, SSE, MASK, &[]).0, 0);
        assert_eq!(call_to(&mut h, INJECT, &[low, 0]).0, CALL_AT + 4, "masked");
        assert_eq!(call(&mut h, SSE, DISABLE, &[low]).0, 0);
        assert_eq!(call_to(&mut h, UNMASK, &[]).0, CALL_AT + 4, "disabled");
        assert_eq!(
            call_to(&mut h, ENABLE, &[low]).0,
            low_entry,
            "enabled: taken"
        );
    }
}
