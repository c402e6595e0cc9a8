//! Hostile arguments: random SBI calls with edge-case arguments never panic, always answer with
//! a standard error code (SBI v3.0 "Binary Encoding", table "Standard SBI Errors"), and leave
//! only `a0`/`a1` changed.

use crate::common;
use common::*;
use rvtrace_isa::Xlen;
use rvtrace_sbi::eid;
use rvtrace_sim::Stop;
use rvtrace_testkit::Rng;

#[test]
fn random_calls_never_panic_and_answer_standard_errors() {
    let edges = [
        0,
        1,
        2,
        3,
        0xf,
        0x10,
        18,
        19,
        34,
        35,
        63,
        64,
        0xfff,
        0x1000,
        0xf_0005,
        0x2_0000,
        0x1_0000,
        0xffff_0000,
        0xffff_8000,
        0x8000_0000,
        0xffff_ffff,
        SHMEM,
        BUF,
        1 << 31,
        1 << 63,
        u64::MAX,
        u64::MAX - 1,
        u64::MAX << 12,
    ];
    let eids = [
        0x00,
        eid::LEGACY_CONSOLE_PUTCHAR,
        eid::LEGACY_CONSOLE_GETCHAR,
        0x0f,
        eid::BASE,
        eid::TIME,
        eid::IPI,
        eid::RFENCE,
        eid::HSM,
        eid::SRST,
        eid::PMU,
        eid::DBCN,
        eid::SUSP,
        eid::FWFT,
        eid::DBTR,
        eid::SSE,
        0x1234_5678,
        u64::MAX,
    ];
    for (xlen, seed) in [
        (Xlen::Rv64, 0x9e37_79b9_7f4a_7c15u64),
        (Xlen::Rv32, 0x2545_f491),
    ] {
        let mut rng = Rng(seed);
        let (mut h, _) = sbi_hart(xlen, b"some input");
        let mut calls = 0;
        while calls < 3000 {
            let e = *rng.pick(&eids);
            // Mostly valid FIDs, sometimes hostile ones.
            let mut fid = if rng.next_u64().is_multiple_of(8) {
                *rng.pick(&edges)
            } else {
                rng.next_u64() % 10
            };
            if e == eid::SSE && fid == 8 {
                // SSE stays masked (hart_mask instead of hart_unmask): an event taken would
                // enter its handler, which is no answer to check here (`sse.rs` checks it).
                fid = 9;
            }
            let args: Vec<u64> = (0..6)
                .map(|_| {
                    if rng.next_u64().is_multiple_of(3) {
                        rng.next_u64()
                    } else {
                        *rng.pick(&edges)
                    }
                })
                .collect();
            // Nothing may take the hart out of S-mode or trap.
            h.csr.mie = 0;
            let keep: Vec<u64> = (1..32).map(|r| h.x[r]).collect();
            let (a0, _, stop) = call_stop(&mut h, e, fid, &args);
            calls += 1;
            if e == eid::DBTR {
                // A trigger installed from hostile memory may watch the code of the next
                // call (its breakpoint would be the hart's, not the SBI's): clear the hart's
                // triggers; the SBI's own bookkeeping stays as hostile as it got.
                h.csr.trig = rvtrace_sim::trigger::Triggers::new(xlen);
            }
            match stop {
                Stop::InsnLimit => {}
                Stop::Exit(_) => {
                    // SRST or hart_stop ended the run: start over.
                    assert!(e == eid::SRST || e == eid::HSM, "{e:#x}/{fid}");
                    h = sbi_hart(xlen, b"").0;
                    continue;
                }
                other => panic!("{e:#x}/{fid} {args:x?}: {other:?}"),
            }
            assert_eq!(h.priv_, 1);
            assert_eq!(h.pc, CALL_AT + 4, "no trap");
            let err = match xlen {
                Xlen::Rv64 => a0 as i64,
                Xlen::Rv32 => a0 as u32 as i32 as i64,
            };
            let legacy_value = e <= 0x0f;
            assert!(
                legacy_value || (-14..=0).contains(&err),
                "{e:#x}/{fid} {args:x?}: a0 = {err}"
            );
            for r in 1..32 {
                let want = match r {
                    10 => continue,
                    11 if !legacy_value => continue,
                    11..=15 => h.sext(args[r - 10]),
                    16 => h.sext(fid),
                    17 => h.sext(e),
                    _ => keep[r - 1],
                };
                assert_eq!(h.x[r], want, "x{r} changed by {e:#x}/{fid} {args:x?}");
            }
        }
    }
}
