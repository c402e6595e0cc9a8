use super::*;
use std::collections::VecDeque;

fn model(bpred: &str) -> Uarch {
    let mut c = UarchConfig::default();
    c.set_bpred(bpred).unwrap();
    Uarch::new(&c)
}

fn caches(specs: &[&str]) -> Uarch {
    let mut c = UarchConfig::default();
    for s in specs {
        c.set_cache(s).unwrap();
    }
    Uarch::new(&c)
}

/// One conditional branch at `pc`, backwards to `pc - 16` when taken.
fn cond(u: &mut Uarch, pc: u64, taken: bool) -> bool {
    let target = if taken { pc - 16 } else { pc + 4 };
    u.branch(pc, BranchKind::Cond, taken, target, pc + 4)
}

#[test]
fn loop_branch_bimodal_mispredicts_on_entry_and_exit() {
    // Counter starts at 1 (weakly not-taken): the first taken run mispredicts once (1 -> 2), the
    // exit mispredicts (3 -> 2); later runs start from 2, so only the exit mispredicts.
    let mut u = model("bimodal:1024");
    let mut per_run = Vec::new();
    for _ in 0..3 {
        let mut n = 0;
        for i in 0..100 {
            n += cond(&mut u, 0x8000_0100, i < 99) as u32;
        }
        per_run.push(n);
    }
    assert_eq!(per_run, [2, 1, 1]);
    let s = u.stats();
    assert_eq!((s.cond_branches, s.cond_mispredicts), (300, 4));
    assert_eq!(s.jumps, 0);
}

#[test]
fn gshare_learns_alternation_that_bimodal_cannot() {
    let run = |spec: &str| {
        let mut u = model(spec);
        (0..1000)
            .filter(|&i| cond(&mut u, 0x1000, i % 2 == 0))
            .count()
    };
    // Bimodal: the counter swings 1 <-> 2, always on the wrong side.
    assert_eq!(run("bimodal:16"), 1000);
    // One history bit: a counter per previous outcome; only the very first branch misses.
    assert_eq!(run("gshare:16:1"), 1);
    // Four bits: histories 0, 1, 2 are cold once each (the T ones miss), then 5/10 alternate.
    assert_eq!(run("gshare:16:4"), 3);
    // Zero history bits is bimodal.
    assert_eq!(run("gshare:16:0"), 1000);
}

#[test]
fn static_not_taken_misses_every_taken_branch() {
    let mut u = model("none");
    let misses: Vec<bool> = [true, false, true, true, false]
        .iter()
        .map(|&t| cond(&mut u, 0x2000, t))
        .collect();
    assert_eq!(misses, [true, false, true, true, false]);
}

#[test]
fn predictor_off_reports_nothing() {
    let mut u = model("off");
    assert!(!cond(&mut u, 0x2000, true));
    assert!(!u.branch(0x10, BranchKind::Return, true, 0x99, 0x14));
    assert_eq!(*u.stats(), UarchStats::default());
}

/// Calls nested `depth` deep (call i at 0x1000 * (i + 1), 4 bytes, into the next), then returns
/// from the innermost out; returns which returns were mispredicted.
fn nest(u: &mut Uarch, depth: u64) -> Vec<bool> {
    for i in 0..depth {
        let pc = 0x1000 * (i + 1);
        assert!(!u.branch(pc, BranchKind::DirectCall, true, pc + 0x1000, pc + 4));
    }
    (0..depth)
        .rev()
        .map(|i| {
            let ret_pc = 0x1000 * (i + 2) + 0x800;
            u.branch(
                ret_pc,
                BranchKind::Return,
                true,
                0x1000 * (i + 1) + 4,
                ret_pc + 2,
            )
        })
        .collect()
}

#[test]
fn ras_predicts_nesting_up_to_its_depth() {
    let mut u = model("bimodal:16,ras:4");
    assert_eq!(nest(&mut u, 4), [false; 4]);
    // Six deep: the two oldest return addresses were overwritten, the stack is empty for them.
    assert_eq!(nest(&mut u, 6), [false, false, false, false, true, true]);
    // A return with nothing pushed.
    assert!(u.branch(0x40, BranchKind::Return, true, 0x44, 0x42));
    let s = u.stats();
    assert_eq!((s.jumps, s.jump_mispredicts), (10 + 10 + 1, 3));
    // Calls never mispredict; without a BTB each one is a decode redirect.
    assert_eq!(s.redirects, 10);
}

#[test]
fn ras_wrong_address_and_coroutine_swap() {
    let mut u = model("bimodal:16,ras:8");
    // A return somewhere else than the call site (longjmp-like) mispredicts and pops.
    u.branch(0x100, BranchKind::IndirectCall, true, 0x800, 0x104);
    assert!(u.branch(0x900, BranchKind::Return, true, 0x5000, 0x904));
    assert!(u.branch(0x904, BranchKind::Return, true, 0x104, 0x908));
    // Swap: pops the caller's address (predicting it), pushes its own fallthrough.
    u.branch(0x100, BranchKind::DirectCall, true, 0x800, 0x104);
    assert!(!u.branch(0x810, BranchKind::CoroutineSwap, true, 0x104, 0x812));
    assert!(!u.branch(0x200, BranchKind::Return, true, 0x812, 0x202));
    // Empty again.
    assert!(u.branch(0x200, BranchKind::Return, true, 0x812, 0x202));
}

#[test]
fn btb_predicts_indirect_targets_and_returns_without_ras() {
    let mut u = model("bimodal:16,btb:64");
    let j = |u: &mut Uarch, target| u.branch(0x300, BranchKind::IndirectJump, true, target, 0x304);
    assert!(j(&mut u, 0x1000), "cold BTB");
    assert!(!j(&mut u, 0x1000));
    assert!(j(&mut u, 0x2000), "target changed");
    assert!(!j(&mut u, 0x2000));
    // 0x300 + 64 * 2 maps to the same (direct-mapped) entry and evicts it.
    assert!(u.branch(0x380, BranchKind::IndirectJump, true, 0x2000, 0x384));
    assert!(j(&mut u, 0x2000));
    // Without a RAS, a return is predicted from its last target.
    let r = |u: &mut Uarch| u.branch(0x500, BranchKind::Return, true, 0x104, 0x502);
    assert!(r(&mut u));
    assert!(!r(&mut u));
    // Without a BTB, every indirect transfer mispredicts.
    let mut u = model("bimodal:16,ras:4");
    assert!(j(&mut u, 0x1000));
    assert!(j(&mut u, 0x1000));
}

#[test]
fn direct_targets_redirect_but_never_mispredict() {
    let mut u = model("bimodal:16,btb:64");
    let jump = |u: &mut Uarch| u.branch(0x400, BranchKind::DirectJump, true, 0x480, 0x404);
    assert!(!jump(&mut u));
    assert_eq!(u.stats().redirects, 1);
    assert!(!jump(&mut u));
    assert_eq!(u.stats().redirects, 1, "the BTB holds it now");
    // A taken conditional branch: a mispredict installs its target, so the next correctly
    // predicted one needs no redirect.
    assert!(cond(&mut u, 0x600, true)); // counter 1 -> 2
    assert!(!cond(&mut u, 0x600, true));
    assert_eq!(u.stats().redirects, 1);
    assert_eq!(u.stats().jump_mispredicts + u.stats().cond_mispredicts, 1);
}

#[test]
fn default_predictor_is_gshare_with_btb_and_ras() {
    let c = UarchConfig::default();
    assert_eq!(
        c.to_string(),
        "bpred=gshare:4096:12,btb:512,ras:16; l1i=off; l1d=off; timing=off"
    );
    assert!(!c.is_off());
    let mut off = c.clone();
    off.set_bpred("off").unwrap();
    assert!(off.is_off());
}

#[test]
fn direct_mapped_conflict_thrashes_two_way_does_not() {
    let misses = |spec: &str| {
        let mut u = caches(&[spec]);
        (0..20)
            .filter(|i| {
                u.data(if i % 2 == 0 { 0x8000_0000 } else { 0x8000_0400 }, 8, false)
                    .missed
            })
            .count()
    };
    // 1 KiB apart: the same set in both geometries.
    assert_eq!(misses("l1d:1k:1:64"), 20);
    assert_eq!(misses("l1d:1k:2:64"), 2);
}

#[test]
fn lru_evicts_the_least_recently_used_way() {
    // 2-way, 8 sets: A, B, C all in set 0.
    let mut u = caches(&["l1d:1k:2:64"]);
    let (a, b, c) = (0, 1024, 2048);
    let seq = [a, b, a, c, a, b, c, a];
    let missed: Vec<bool> = seq.iter().map(|&x| u.data(x, 4, false).missed).collect();
    // a, b miss; a hits; c evicts b; a hits; b evicts c; c evicts a; a evicts b.
    assert_eq!(missed, [true, true, false, true, false, true, true, true]);
}

/// A reference LRU cache: per set, a queue of line numbers, most recent at the front.
struct RefCache {
    sets: Vec<VecDeque<u64>>,
    ways: usize,
    line: u64,
}

impl RefCache {
    fn access(&mut self, addr: u64) -> bool {
        let line = addr / self.line;
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(line % n) as usize];
        let hit = match set.iter().position(|&l| l == line) {
            Some(p) => {
                set.remove(p);
                true
            }
            None => {
                if set.len() == self.ways {
                    set.pop_back();
                }
                false
            }
        };
        set.push_front(line);
        hit
    }
}

#[test]
fn cache_matches_a_reference_lru_on_random_accesses() {
    let mut rng = rvtrace_testkit::Rng(0x9e37_79b9_7f4a_7c15);
    for (size, ways, line) in [
        (1024u64, 1u32, 64u32),
        (2048, 4, 32),
        (4096, 8, 64),
        (512, 64, 8),
    ] {
        let cfg = CacheConfig::new(CacheKind::L1d, size, ways, line).unwrap();
        let mut u = Uarch::new(&UarchConfig {
            l1d: Some(cfg),
            ..UarchConfig::default()
        });
        let mut r = RefCache {
            sets: vec![VecDeque::new(); cfg.sets() as usize],
            ways: ways as usize,
            line: line.into(),
        };
        let mut misses = 0;
        for _ in 0..20_000 {
            let x = rng.next_u64();
            // Aligned 8-byte accesses over 4x the capacity, so both hits and misses happen.
            let addr = (x % (4 * size)) & !7;
            let got = u.data(addr, 8, x & 1 == 0);
            assert_eq!(got.missed, !r.access(addr), "{cfg} at {addr:#x}");
            misses += got.missed as u64;
        }
        let s = u.stats();
        assert_eq!(s.l1d_reads + s.l1d_writes, 20_000);
        assert_eq!(s.l1d_read_misses + s.l1d_write_misses, misses);
        assert!(misses > 1000 && misses < 19_000, "{cfg}: {misses}");
    }
}

#[test]
fn strides_beyond_capacity_always_miss() {
    let mut u = caches(&["l1d:4k:4:64"]);
    // A stride of the cache size: every access in set 0, 1000 distinct lines.
    assert!((0..1000).all(|i| u.data(i * 4096, 8, false).missed));
    // Sweeping 8 KiB line by line twice through a 4 KiB LRU cache: nothing survives.
    let mut u = caches(&["l1d:4k:4:64"]);
    assert!((0..256).all(|i| u.data((i % 128) * 64, 4, true).missed));
    // Sweeping 4 KiB twice: the second pass hits.
    let mut u = caches(&["l1d:4k:4:64"]);
    let missed: Vec<bool> = (0..128)
        .map(|i| u.data((i % 64) * 64, 4, false).missed)
        .collect();
    assert!(missed[..64].iter().all(|&m| m) && missed[64..].iter().all(|&m| !m));
}

#[test]
fn line_crossing_access_touches_two_lines_and_counts_once() {
    let mut u = caches(&["l1d:1k:1:64"]);
    assert_eq!(u.data(60, 8, false), Access::MISS);
    assert_eq!(u.stats().l1d_reads, 1);
    assert_eq!(u.data(62, 4, false), Access::HIT);
    assert_eq!(u.data(64, 8, false), Access::HIT);
    // Evict line 1 only (1088 = 64 + 1024); the straddling access misses again.
    assert_eq!(u.data(1088, 8, false), Access::MISS);
    assert_eq!(u.data(0, 8, false), Access::HIT);
    assert_eq!(u.data(60, 8, true), Access::MISS);
    let s = u.stats();
    assert_eq!(
        (
            s.l1d_reads,
            s.l1d_read_misses,
            s.l1d_writes,
            s.l1d_write_misses
        ),
        (5, 2, 1, 1)
    );
    // Last byte of the address space: no overflow.
    assert_eq!(u.data(u64::MAX, 8, false), Access::MISS);
}

#[test]
fn write_back_counts_dirty_evictions() {
    let mut u = caches(&["l1d:1k:1:64"]);
    u.data(0, 8, true); // write miss allocates, dirty
    u.data(1024, 8, false); // evicts the dirty line
    u.data(0, 8, false); // evicts a clean line
    u.data(8, 8, true); // hit, dirty again
    u.data(1024, 8, false);
    assert_eq!(u.stats().l1d_writebacks, 2);
    assert_eq!(u.stats().l1d_write_misses, 1);
}

#[test]
fn fetch_accesses_once_per_line_entered() {
    let mut u = caches(&["l1i:1k:2:64"]);
    let acc: Vec<Access> = (0..16).map(|i| u.fetch(0x8000_0000 + 4 * i, 4)).collect();
    assert_eq!(acc[0], Access::MISS);
    assert!(acc[1..].iter().all(|&a| a == Access::NONE));
    // A backward jump within the line is no access; entering the next line is.
    assert_eq!(u.fetch(0x8000_0010, 2), Access::NONE);
    assert_eq!(u.fetch(0x8000_0040, 4), Access::MISS);
    assert_eq!(u.fetch(0x8000_0000, 4), Access::HIT);
    // A 4-byte instruction straddling into line 1, from line 0: touches line 1 only, a hit.
    assert_eq!(u.fetch(0x8000_003e, 4), Access::HIT);
    assert_eq!(u.fetch(0x8000_0042, 2), Access::NONE);
    // Straddling from a new line 2 into a new line 3: one access, missed.
    assert_eq!(u.fetch(0x8000_00be, 4), Access::MISS);
    let s = u.stats();
    assert_eq!((s.l1i_accesses, s.l1i_misses), (5, 3));
    // Data accesses do not go to the L1I, and with no L1D they are no access.
    assert_eq!(u.data(0x8000_0000, 4, false), Access::NONE);
}

#[test]
fn no_cache_no_access() {
    let mut u = Uarch::new(&UarchConfig::default());
    assert_eq!(u.fetch(0x1000, 4), Access::NONE);
    assert_eq!(u.data(0x1000, 4, true), Access::NONE);
    assert_eq!(u.stats().l1i_accesses + u.stats().l1d_writes, 0);
}

#[test]
fn timing_charges_frontend_and_backend_stalls() {
    let mut c = UarchConfig::default();
    c.set_bpred("bimodal:16,btb:16").unwrap();
    c.set_cache("l1i:1k:1:64").unwrap();
    c.set_cache("l1d:1k:1:64").unwrap();
    c.set_timing("on,l1d-miss=30").unwrap();
    let mut u = Uarch::new(&c);
    assert_eq!(u.timing().unwrap().l1d_miss, 30);
    assert!(cond(&mut u, 0x100, true)); // mispredict: 8
    assert!(!u.branch(0x104, BranchKind::DirectJump, true, 0x200, 0x108)); // redirect: 1
    assert!(u.fetch(0x200, 4).missed); // 20
    assert_eq!(
        u.take_stalls(),
        Stalls {
            frontend: 29,
            backend: 0
        }
    );
    assert_eq!(u.take_stalls(), Stalls::default());
    assert!(u.data(0x9000, 4, false).missed); // 30
    assert!(!u.data(0x9000, 4, true).missed);
    u.long_op(LongOp::Mul); // 3
    u.long_op(LongOp::Div); // 20
    assert_eq!(
        u.take_stalls(),
        Stalls {
            frontend: 0,
            backend: 53
        }
    );
    assert_eq!(u.stats().stalls.total(), 82);

    // The same events with timing off cost nothing.
    c.timing = None;
    let mut u = Uarch::new(&c);
    assert!(u.timing().is_none());
    cond(&mut u, 0x100, true);
    u.fetch(0x200, 4);
    u.data(0x9000, 4, false);
    u.long_op(LongOp::Div);
    assert_eq!(u.take_stalls(), Stalls::default());
}

#[test]
fn reset_makes_the_model_cold_again() {
    let mut c = UarchConfig::default();
    c.set_cache("l1i:1k:2:64").unwrap();
    c.set_cache("l1d:1k:2:64").unwrap();
    c.set_timing("on").unwrap();
    let mut u = Uarch::new(&c);
    let run = |u: &mut Uarch| {
        let mut out = Vec::new();
        for i in 0..200u64 {
            let pc = 0x1000 + (i % 7) * 0x40;
            out.push(u.fetch(pc, 4).missed);
            out.push(cond(u, pc + 4, i % 3 != 0));
            out.push(nest(u, 3).iter().any(|&m| m));
            out.push(u.data(i * 40, 8, i % 2 == 0).missed);
        }
        u.take_stalls();
        (out, *u.stats())
    };
    let first = run(&mut u);
    assert_ne!(run(&mut u).0, first.0, "a warm model behaves differently");
    u.reset();
    assert_eq!(*u.stats(), UarchStats::default());
    assert_eq!(run(&mut u), first);
}

#[test]
fn branch_kinds_from_classes() {
    use rvtrace_isa::CfClass as C;
    let expect = |c| match c {
        C::Branch => Some(BranchKind::Cond),
        C::InferableJump | C::OtherInferableJump => Some(BranchKind::DirectJump),
        C::InferableCall => Some(BranchKind::DirectCall),
        C::UninferableJump | C::OtherUninferableJump | C::TableJump => {
            Some(BranchKind::IndirectJump)
        }
        C::UninferableCall | C::TableCall => Some(BranchKind::IndirectCall),
        C::Return | C::PopRet => Some(BranchKind::Return),
        C::CoroutineSwap => Some(BranchKind::CoroutineSwap),
        C::None | C::TrapReturn | C::EnvTrap => None,
    };
    for c in CfClass::ALL {
        assert_eq!(BranchKind::from_class(c), expect(c), "{c:?}");
        // Pushes: exactly the classes whose rd is a link register (unprivileged ISA RAS hints).
        let pushes = matches!(
            BranchKind::from_class(c),
            Some(BranchKind::DirectCall | BranchKind::IndirectCall | BranchKind::CoroutineSwap)
        );
        let links = matches!(
            c,
            C::InferableCall | C::UninferableCall | C::CoroutineSwap | C::TableCall
        );
        assert_eq!(pushes, links, "{c:?}");
    }
}

#[test]
fn cache_parse_and_validation_errors() {
    let err = |s: &str| s.parse::<CacheConfig>().unwrap_err();
    for (spec, says) in [
        ("l1d:32k:8", "expected <l1i|l1d>:<size>:<ways>:<line>"),
        ("l1d:32k:8:64:1", "expected <l1i|l1d>"),
        ("", "expected <l1i|l1d>"),
        ("l2:32k:8:64", "unknown cache 'l2'"),
        ("l1d:32x:8:64", "l1d size '32x' is not a size"),
        ("l1d::8:64", "l1d size '' is not a size"),
        ("l1d:99999999999999999m:1:64", "is not a size"),
        ("l1d:-1:8:64", "is not a size"),
        ("l1d:3k:8:64", "l1d size 3072: expected a power of two"),
        ("l1d:32k:x:64", "l1d ways 'x' is not a number"),
        (
            "l1d:32k:3:64",
            "l1d ways 3: expected a power of two from 1 to 64",
        ),
        ("l1d:32k:0:64", "l1d ways 0"),
        ("l1d:32k:128:64", "l1d ways '128' is too large (at most 64)"),
        (
            "l1i:32k:8:4",
            "l1i line size 4: expected a power of two from 8",
        ),
        ("l1i:32k:8:48", "l1i line size 48"),
        ("l1i:32k:8:8192", "l1i line size '8192' is too large"),
        (
            "l1d:256:8:64",
            "l1d size 256: expected at least ways * line = 512 bytes",
        ),
        ("l1d:1024m:1:64", "at most 1048576 lines"),
    ] {
        let e = err(spec).to_string();
        assert!(e.contains(says), "'{spec}': {e}");
    }
    let c: CacheConfig = " l1d:32k:8:64 ".parse().unwrap();
    assert_eq!(
        (c.kind(), c.size(), c.ways(), c.line(), c.sets()),
        (CacheKind::L1d, 32768, 8, 64, 64)
    );
    assert_eq!(
        "l1i:1m:4:32".parse::<CacheConfig>().unwrap().size(),
        1 << 20
    );
    assert_eq!("l1i:512:64:8".parse::<CacheConfig>().unwrap().sets(), 1);
    assert!(CacheConfig::new(CacheKind::L1i, 0, 1, 8).is_err());
    // UarchConfig routes by name; off removes.
    let mut u = UarchConfig::default();
    u.set_cache("l1i:16k:4:32").unwrap();
    assert_eq!(u.l1i.unwrap().to_string(), "l1i:16k:4:32");
    assert!(u.l1d.is_none());
    u.set_cache("l1i:off").unwrap();
    assert!(u.l1i.is_none());
    u.set_cache("l1i:16k:4:32").unwrap();
    u.set_cache("l1d:16k:4:32").unwrap();
    u.set_cache("off").unwrap();
    assert!(u.l1i.is_none() && u.l1d.is_none());
    assert!(u.set_cache("l3:off").is_err());
}

#[test]
fn bpred_parse_and_validation_errors() {
    let err = |s: &str| s.parse::<BpredConfig>().unwrap_err();
    for (spec, says) in [
        ("gshare:4096", "bad predictor part 'gshare:4096'"),
        (
            "gshare:4096:13",
            "gshare history of 13 bits is longer than the 12-bit index",
        ),
        (
            "gshare:4096:99",
            "gshare history bits '99' is too large (at most 24)",
        ),
        ("gshare:x:4", "gshare entries 'x' is not a number"),
        (
            "bimodal:1000",
            "bimodal entries 1000: expected a power of two",
        ),
        ("bimodal:0", "bimodal entries 0"),
        (
            "bimodal:33554432",
            "bimodal entries 33554432: expected a power of two from 1 to 16777216",
        ),
        ("bimodal", "bad predictor part 'bimodal'"),
        ("btb:512", "has no direction part"),
        ("", "bad predictor part ''"),
        ("bimodal:16,,ras:4", "bad predictor part ''"),
        ("bimodal:16,gshare:16:4", "has two direction parts"),
        ("none,btb:16,btb:32", "has two btb parts"),
        ("none,ras:4,ras:4", "has two ras parts"),
        ("none,btb:100", "btb entries 100: expected a power of two"),
        ("none,ras:0", "ras depth 0 is out of range"),
        ("none,ras:70000", "ras depth 70000 is out of range"),
        ("none,ras:-1", "ras depth '-1' is not a number"),
        ("tage:4096", "bad predictor part 'tage:4096'"),
        ("off", "'off' means no predictor"),
    ] {
        let e = err(spec).to_string();
        assert!(e.contains(says), "'{spec}': {e}");
    }
    let b: BpredConfig = "ras:8, bimodal:2048".parse().unwrap();
    assert_eq!(
        (b.dir(), b.btb(), b.ras()),
        (DirConfig::Bimodal { entries: 2048 }, None, Some(8))
    );
    let mut u = UarchConfig::default();
    assert!(u.set_bpred("gshare:4096").is_err());
    assert!(u.bpred.is_some(), "a failed option changes nothing");
}

#[test]
fn timing_parse_errors() {
    let err = |s: &str| s.parse::<TimingConfig>().unwrap_err();
    for (spec, says) in [
        ("fast", "bad timing part 'fast'"),
        ("", "bad timing part ''"),
        ("mul", "bad timing part 'mul'"),
        ("mul=", "timing mul '' is not a number"),
        ("mul=x", "timing mul 'x' is not a number"),
        ("mul=-3", "timing mul '-3' is not a number"),
        ("on,tlb-miss=3", "unknown timing key 'tlb-miss'"),
        ("div=2000000", "timing div '2000000' is too large"),
    ] {
        let e = err(spec).to_string();
        assert!(e.contains(says), "'{spec}': {e}");
    }
    let t: TimingConfig = "on, mul=5 ,div=33".parse().unwrap();
    assert_eq!((t.mul, t.div, t.mispredict), (5, 33, 8));
    let mut u = UarchConfig::default();
    u.set_timing("on").unwrap();
    assert_eq!(u.timing, Some(TimingConfig::default()));
    u.set_timing("off").unwrap();
    assert_eq!(u.timing, None);
}

#[test]
fn display_round_trips_through_parse() {
    for s in [
        "gshare:4096:12,btb:512,ras:16",
        "bimodal:2048",
        "none,ras:3",
        "none,btb:1",
    ] {
        assert_eq!(s.parse::<BpredConfig>().unwrap().to_string(), s);
    }
    assert_eq!(
        BpredConfig::default().to_string(),
        "gshare:4096:12,btb:512,ras:16"
    );
    for s in [
        "l1d:32k:8:64",
        "l1i:1m:2:128",
        "l1d:512:1:8",
        "l1i:64k:64:16",
    ] {
        assert_eq!(s.parse::<CacheConfig>().unwrap().to_string(), s);
    }
    let t = TimingConfig {
        mispredict: 1,
        redirect: 2,
        l1i_miss: 3,
        l1d_miss: 4,
        mul: 5,
        div: 6,
    };
    assert_eq!(t.to_string().parse::<TimingConfig>().unwrap(), t);
}

/// Refusals are typed: a syntax error (unknown part or key) is told from a bad value, and the
/// message is the one the command line prints.
#[test]
fn spec_errors_are_typed() {
    let mut u = UarchConfig::default();
    assert!(matches!(
        u.set_cache("l2:32k:8:64"),
        Err(SpecError::Syntax(_))
    ));
    assert!(matches!(
        u.set_cache("l1d:3k:8:64"),
        Err(SpecError::Value(_))
    ));
    assert!(matches!(u.set_bpred("tage:1"), Err(SpecError::Syntax(_))));
    assert!(matches!(
        u.set_bpred("bimodal:1000"),
        Err(SpecError::Value(_))
    ));
    assert!(matches!(
        u.set_timing("tlb-miss=3"),
        Err(SpecError::Syntax(_))
    ));
    assert!(matches!(u.set_timing("div=x"), Err(SpecError::Value(_))));
    let e = CacheConfig::new(CacheKind::L1d, 3 << 10, 8, 64).unwrap_err();
    assert_eq!(e.to_string(), e.message());
    assert!(e
        .message()
        .starts_with("l1d size 3072: expected a power of two"));
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().contains("power of two"));
}
