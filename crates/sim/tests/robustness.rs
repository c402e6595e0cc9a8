//! The hart never panics, whatever it executes: random instruction words (biased towards valid
//! opcodes), random CSR numbers and values, traps into random code. The test profile keeps
//! overflow checks on, so an arithmetic overflow would panic here too.

use rvtrace_isa::Xlen;
use rvtrace_sim::bus::RAM_BASE;
use rvtrace_sim::{Config, Hart, Stop};
use rvtrace_testkit::Rng;

/// A random instruction: mostly a valid major opcode with random fields, sometimes anything.
fn random_insn(r: &mut Rng) -> u32 {
    const OPCODES: [u32; 20] = [
        0x03, 0x07, 0x0f, 0x13, 0x17, 0x1b, 0x23, 0x27, 0x2f, 0x33, 0x37, 0x3b, 0x43, 0x47, 0x4b,
        0x4f, 0x53, 0x63, 0x67, 0x73,
    ];
    let x = r.next_u64() as u32;
    match r.next_u64() % 8 {
        0 => x,
        1 => x & 0xffff, // a compressed parcel (or two)
        _ => (x & !0x7f) | OPCODES[(r.next_u64() % OPCODES.len() as u64) as usize],
    }
}

#[test]
fn random_programs_never_panic() {
    // RVTRACE_FUZZ_SEEDS=N runs a longer campaign.
    let seeds: u64 = std::env::var("RVTRACE_FUZZ_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let mut total = 0;
    for (seed, xlen) in (0..seeds).map(|s| (s, if s % 2 == 0 { Xlen::Rv64 } else { Xlen::Rv32 })) {
        let mut r = Rng(seed);
        // No semihosting: random code must not open, remove or run anything on the host.
        let mut cfg = Config::virt(xlen);
        // Every third seed counts every event through the whole micro-architecture model,
        // with counters preset near their wrap on random events.
        let instrumented = seed % 3 == 0;
        if instrumented {
            cfg.uarch.set_cache("l1i:1k:2:16").unwrap();
            cfg.uarch.set_cache("l1d:1k:1:8").unwrap();
            cfg.uarch.set_timing("on").unwrap();
        }
        let mut hart = Hart::new(&cfg);
        if instrumented {
            hart.counters.set_count_all(true);
            use rvtrace_sim::counters::EVENTS;
            use rvtrace_sim::csr::num;
            for k in 0..8u16 {
                let ev = EVENTS[(r.next_u64() % EVENTS.len() as u64) as usize].0;
                assert!(hart.csr_write(num::MHPMEVENT3 + k, ev | (r.next_u64() & (0x1f << 58))));
                assert!(hart.csr_write(num::MHPMCOUNTER3 + k, (r.next_u64() % 64).wrapping_neg()));
            }
        }
        // 16 KiB of random code at the start of RAM; traps go into it as well.
        let code: Vec<u8> = (0..4096)
            .flat_map(|_| random_insn(&mut r).to_le_bytes())
            .collect();
        assert!(hart.bus.write_ram(RAM_BASE, &code));
        hart.pc = RAM_BASE;
        hart.csr.mtvec = RAM_BASE + 0x100;
        hart.csr.stvec = RAM_BASE + 0x200;
        for k in 1..32 {
            hart.x[k] = if r.next_u64().is_multiple_of(2) {
                RAM_BASE + (r.next_u64() % 0x4000)
            } else {
                r.next_u64()
            };
        }
        let mut stops = 0;
        while hart.instret < 50_000 && stops < 2000 {
            match hart.run(&mut (), 2_000) {
                Stop::InsnLimit => {}
                // Exits (semihosting, finisher) and errors (runaway, wfi): restart somewhere else.
                Stop::Exit(_) | Stop::Error(_) | Stop::Requested => {
                    stops += 1;
                    hart.pc = (RAM_BASE + (r.next_u64() % 0x4000)) & !1;
                }
            }
        }
        total += hart.instret;
    }
    // Random code traps a lot; it must still have executed a fair amount.
    assert!(total > seeds * 10_000, "only {total} instructions retired");
}

/// A handler whose first instruction is illegal traps forever without retiring anything; the
/// hart stops and says where the loop started.
#[test]
fn trap_loop_is_reported() {
    let cfg = Config::virt(Xlen::Rv64);
    let mut hart = Hart::new(&cfg);
    // 0x80000000: ecall; 0x80000004: 0 (illegal) = the handler.
    assert!(hart.bus.write_ram(RAM_BASE, &[0x73, 0, 0, 0, 0, 0, 0, 0]));
    hart.pc = RAM_BASE;
    hart.csr.mtvec = RAM_BASE + 4;
    match hart.run(&mut (), 1_000_000) {
        Stop::Error(m) => {
            assert!(m.contains("stuck in a trap loop"), "{m}");
            assert!(
                m.contains("the first was illegal instruction at pc 0x80000004"),
                "{m}"
            );
        }
        other => panic!("expected a trap-loop error, got {other:?}"),
    }
    assert_eq!(hart.instret, 1, "only the ecall retired");
}

/// An observer can stop the hart after every event: one retired instruction or one trap.
#[test]
fn stepping_with_stop_requested() {
    struct StepOne(u32);
    impl rvtrace_sim::Observer for StepOne {
        fn retire(&mut self, _: &rvtrace_sim::Retired) {
            self.0 += 1;
        }
        fn trap(&mut self, _: &rvtrace_sim::TrapInfo) {
            self.0 += 1;
        }
        fn stop_requested(&mut self) -> bool {
            true
        }
    }
    let cfg = Config::virt(Xlen::Rv64);
    let mut hart = Hart::new(&cfg);
    // addi a0, a0, 1; 0 (illegal; handler = the addi again via mtvec).
    assert!(hart
        .bus
        .write_ram(RAM_BASE, &[0x13, 0x05, 0x15, 0x00, 0, 0, 0, 0]));
    hart.pc = RAM_BASE;
    hart.csr.mtvec = RAM_BASE;
    let mut obs = StepOne(0);
    let mut events = Vec::new();
    for _ in 0..4 {
        assert_eq!(hart.run(&mut obs, u64::MAX), Stop::Requested);
        events.push((obs.0, hart.instret, hart.pc));
    }
    // retire addi, fault on the illegal word, retire addi (handler), fault again.
    assert_eq!(
        events,
        vec![
            (1, 1, RAM_BASE + 4),
            (2, 1, RAM_BASE),
            (3, 2, RAM_BASE + 4),
            (4, 2, RAM_BASE)
        ]
    );
    assert_eq!(hart.x[10], 2);
}
