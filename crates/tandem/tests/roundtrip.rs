//! Producer -> checker over the test programs (RV64 and RV32), traces written the way another
//! implementation might write them, fault injection, partial traces and malformed traces.

use rvtrace_image::Image;
use rvtrace_sim::{Config, Hart};
use rvtrace_tandem::checker::{
    CheckError, CheckOptions, CheckSummary, Checker, Mismatch, ProgramCheck, TraceEnd,
};
use rvtrace_tandem::codec::{
    decode_all, encode_all, reg, AddlState, ErrorKind, Params, Reader, Record,
};
use rvtrace_tandem::Elements;
use std::path::Path;

use crate::common;
use common::{produce, produce_image, program, Run};

fn check(
    elf: &Path,
    trace: &[u8],
    params: Params,
    absent: Elements,
) -> Result<(CheckSummary, Vec<Mismatch>), CheckError> {
    let mut image = Image::new();
    image.load_file(elf).unwrap();
    check_image(&image, trace, params, absent)
}

/// Check `trace` against the program in `image`.
fn check_image(
    image: &Image,
    trace: &[u8],
    params: Params,
    absent: Elements,
) -> Result<(CheckSummary, Vec<Mismatch>), CheckError> {
    let xlen = image.files()[0].xlen;
    let cfg = Config::virt(xlen);
    let mut hart = Hart::new(&cfg);
    hart.load(image).unwrap();
    let mut c = Checker::new(hart, image, CheckOptions::new(params, absent));
    let mut ms = Vec::new();
    let s = c.check(trace, &mut |m| ms.push(m.clone()))?;
    Ok((s, ms))
}

fn assert_clean(name: &str, s: &CheckSummary, ms: &[Mismatch]) {
    assert!(
        ms.is_empty() && s.passed(),
        "{name}: {s}\nfirst mismatch:\n{}",
        ms.first().map(|m| m.to_string()).unwrap_or_default()
    );
    assert!(matches!(s.end, TraceEnd::Exit(_)), "{name}: {s}");
}

/// Random programs (`rvtrace_testkit::randprog`: traps, timer interrupts, U-mode, every kind of
/// call and return) check clean. `RVTRACE_RANDOM_SEEDS` runs more.
#[test]
fn random_programs_round_trip() {
    use rvtrace_testkit::randprog::{random_program, seeds};
    for seed in seeds(60) {
        let p = random_program(seed);
        let mut image = Image::new();
        image.load_bytes("prog.elf", &p.elf).unwrap();
        let name = format!("random program {seed} ({:?})", p.shape);
        let run = produce_image(image.clone(), "prog.elf", Elements::NONE);
        let (s, ms) = check_image(&image, &run.trace, run.params, Elements::NONE).unwrap();
        assert_clean(&name, &s, &ms);
        assert_eq!(
            s.checked, run.events,
            "{name}: every instruction and trap checked"
        );
    }
}

#[test]
fn every_test_program_round_trips() {
    let progs = rvtrace_testkit::test_programs();
    assert!(progs.iter().any(|p| p.to_string_lossy().contains("rv32")));
    assert!(progs.iter().any(|p| p.to_string_lossy().contains("rv64")));
    for elf in progs {
        let name = elf.file_stem().unwrap().to_string_lossy().into_owned();
        let run = produce(&elf, Elements::NONE);
        let (s, ms) = check(&elf, &run.trace, run.params, Elements::NONE).unwrap();
        assert_clean(&name, &s, &ms);
        assert_eq!(
            s.checked, run.events,
            "{name}: every instruction and trap checked"
        );
        assert!(s.checked > 10_000, "{name}: {}", s.checked);
    }
}

/// Records of a trace grouped: (group number from 1, offset of each record, record).
fn records(trace: &[u8], p: &Params) -> Vec<(u64, u64, Record)> {
    let mut r = Reader::new(trace, *p, 0);
    let mut g = 0;
    let mut v = Vec::new();
    while let Some(x) = r.next() {
        let (off, rec) = x.unwrap();
        if rec == Record::BeginGroup {
            g += 1;
        }
        v.push((g, off, rec));
    }
    v
}

/// Change the value bytes of the record at `off` (its payload starts at `off + skip`).
fn corrupt(trace: &mut [u8], off: u64, skip: usize) {
    trace[off as usize + skip] ^= 0x10;
}

fn expect_only_group(elf: &Path, run: &Run, trace: &[u8], group: u64, element: &str) {
    let (s, ms) = check(elf, trace, run.params, Elements::NONE).unwrap();
    assert_eq!(
        ms.iter().map(|m| m.group).collect::<Vec<_>>(),
        vec![group],
        "mismatches:\n{}",
        ms.iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(s.mismatches, 1);
    assert!(
        ms[0].diffs.iter().any(|d| d.element.contains(element)),
        "{}",
        ms[0]
    );
}

/// The k-th record (after the state initialization) that `pick` accepts.
fn find(recs: &[(u64, u64, Record)], k: usize, pick: impl Fn(&Record) -> bool) -> (u64, u64) {
    let first = recs
        .iter()
        .position(|(_, _, r)| matches!(r, Record::Insn16(_) | Record::Insn32(_)))
        .unwrap();
    let hits: Vec<_> = recs[first..].iter().filter(|(_, _, r)| pick(r)).collect();
    let (g, off, _) = hits[k.min(hits.len() - 1)];
    (*g, *off)
}

#[test]
fn fault_injection_reports_exactly_that_group() {
    for name in ["recurse-rv64gc", "traps-rv32imac", "stdio-rv64gc"] {
        let elf = program(name);
        let run = produce(&elf, Elements::NONE);
        let recs = records(&run.trace, &run.params);

        // One integer register value.
        let (g, off) = find(
            &recs,
            5000,
            |r| matches!(r, Record::FullReg { addr, .. } if reg::is_gpr(*addr)),
        );
        let mut t = run.trace.clone();
        corrupt(&mut t, off, 3);
        expect_only_group(&elf, &run, &t, g, "x");

        // One memory value (the data of a store).
        let (g, off) = find(&recs, 3000, |r| {
            matches!(
                r,
                Record::MemReq {
                    op: 1,
                    size: 2 | 3,
                    ..
                }
            )
        });
        let mut t = run.trace.clone();
        corrupt(&mut t, off, 1 + run.params.mbytes() + 1);
        expect_only_group(&elf, &run, &t, g, "memory");

        // One pc (the target of a jump or branch).
        let (g, off) = find(&recs, 2000, |r| {
            matches!(r, Record::State(AddlState::Pc(_)))
        });
        let mut t = run.trace.clone();
        corrupt(&mut t, off, 2);
        expect_only_group(&elf, &run, &t, g, "pc");
    }
}

#[test]
fn fault_injection_trap_csr() {
    for name in ["traps-rv64gc", "traps-rv32imac"] {
        let elf = program(name);
        let run = produce(&elf, Elements::NONE);
        let recs = records(&run.trace, &run.params);
        let (g, off) = find(&recs, 3, |r| {
            matches!(r, Record::FullReg { addr: 0x341, .. })
        });
        let mut t = run.trace.clone();
        corrupt(&mut t, off, 3);
        expect_only_group(&elf, &run, &t, g, "mepc");
        let (g, off) = find(&recs, 2, |r| {
            matches!(r, Record::FullReg { addr: 0x342, .. })
        });
        let mut t = run.trace.clone();
        corrupt(&mut t, off, 3);
        expect_only_group(&elf, &run, &t, g, "mcause");
    }
}

/// Re-encode a trace group by group with `f` rewriting each group's records.
fn rewrite(trace: &[u8], p: &Params, mut f: impl FnMut(Vec<Record>) -> Vec<Record>) -> Vec<u8> {
    let recs = decode_all(trace, p).unwrap();
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for r in recs {
        cur.push(r);
        if r == Record::EndGroup {
            out.extend(f(std::mem::take(&mut cur)));
        }
    }
    out.extend(cur);
    encode_all(&out, p)
}

#[test]
fn other_writers_habits_are_read() {
    for name in ["float-rv64gc", "sdeleg-rv32imac", "timer-rv64gc"] {
        let elf = program(name);
        let run = produce(&elf, Elements::NONE);
        let p = run.params;
        let xmask = if p.xlen == 32 { 0xffff_ffff } else { u64::MAX };

        // The full pc every time instead of increments.
        let mut pc = 0u64;
        let full = rewrite(&run.trace, &p, |g| {
            let len = g.iter().find_map(|r| match r {
                Record::Insn16(_) => Some(2),
                Record::Insn32(_) => Some(4),
                _ => None,
            });
            g.into_iter()
                .map(|r| match r {
                    Record::State(AddlState::Pc(v)) => {
                        pc = v;
                        r
                    }
                    Record::IncrPc => {
                        pc = (pc + len.unwrap()) & xmask;
                        Record::State(AddlState::Pc(pc))
                    }
                    r => r,
                })
                .collect()
        });
        let (s, ms) = check(&elf, &full, p, Elements::NONE).unwrap();
        assert_clean(&format!("{name} (full pc)"), &s, &ms);

        // Records in another order within each group (a memory response stays right after its
        // request), and no end groups (a begin group implies one) but the last.
        let mut shuffled = rewrite(&run.trace, &p, |g| {
            let inner = &g[1..g.len() - 1];
            let mut units: Vec<Vec<Record>> = Vec::new();
            for r in inner {
                match r {
                    Record::MemRsp { .. } => units.last_mut().unwrap().push(*r),
                    _ => units.push(vec![*r]),
                }
            }
            units.reverse();
            let mut v = vec![Record::BeginGroup];
            v.extend(units.into_iter().flatten());
            v
        });
        // Without the last end group the trace is cut inside its last group.
        let (s, _) = check(&elf, &shuffled, p, Elements::NONE).unwrap();
        assert!(
            matches!(
                s.end,
                TraceEnd::Truncated {
                    in_record: false,
                    ..
                }
            ),
            "{name}: {s}"
        );
        assert!(!s.passed());
        shuffled.push(rvtrace_tandem::codec::op::END_GROUP);
        let (s, ms) = check(&elf, &shuffled, p, Elements::NONE).unwrap();
        assert_clean(&format!("{name} (reordered, no end groups)"), &s, &ms);
        assert_eq!(s.checked, run.events);
    }
}

#[test]
fn partial_traces() {
    // Without gpr or mem: semihosting calls write a0 and memory (the command line, file reads)
    // that the reference cannot reproduce; the producer writes them anyway (3.2: "If the trace
    // excludes state elements that are necessary to reflect non-deterministic behavior, then
    // false positive tandem verification mismatches will result").
    let cases = [
        ("stdio-rv64gc", "gpr"),
        ("heap-rv32imac", "mem,eaddr"),
        ("recurse-rv64gc", "eaddr,mtime"),
        ("traps-rv32imac", "csr,priv"),
        ("float-rv64gc", "fpr,csr"),
        ("stdio-rv32imac", "init,insn"),
        ("timer-rv64gc", "mtime,eaddr,init"),
    ];
    for (name, omit) in cases {
        let elf = program(name);
        let absent = Elements::parse(omit).unwrap();
        let run = produce(&elf, absent);
        let full = produce(&elf, Elements::NONE);
        assert!(run.trace.len() < full.trace.len(), "{name} without {omit}");
        // Nothing of what is absent is in the trace (but a semihosting call's results).
        let mut semihosting = false;
        for r in decode_all(&run.trace, &run.params).unwrap() {
            match r {
                Record::BeginGroup => semihosting = false,
                Record::Insn32(0x0010_0073) => semihosting = true,
                _ => {}
            }
            let bad = match r {
                Record::MemReq { .. } | Record::MemRsp { .. } => {
                    absent.has(Elements::MEM) && !semihosting
                }
                Record::State(AddlState::Eaddr(_)) => absent.has(Elements::EADDR),
                Record::FullReg { addr, .. } | Record::IncrRegOr { addr, .. } => {
                    (reg::is_csr(addr) && absent.has(Elements::CSR))
                        || (reg::is_fpr(addr) && absent.has(Elements::FPR))
                        || (reg::is_gpr(addr) && absent.has(Elements::GPR) && !semihosting)
                }
                Record::State(AddlState::Priv(_)) => absent.has(Elements::PRIV),
                Record::Insn16(_) | Record::Insn32(_) => absent.has(Elements::INSN),
                Record::StateInit => absent.has(Elements::INIT),
                Record::State(AddlState::Mtime(_)) => absent.has(Elements::MTIME),
                _ => false,
            };
            assert!(!bad, "{name} without {omit}: {r:?}");
        }
        let (s, ms) = check(&elf, &run.trace, run.params, absent).unwrap();
        assert_clean(&format!("{name} without {omit}"), &s, &ms);
        // Told nothing is absent, the checker finds the trace wanting.
        if omit.contains("csr") {
            let (s, _) = check(&elf, &run.trace, run.params, Elements::NONE).unwrap();
            assert!(s.mismatches > 0, "{name} without {omit}");
        }
    }
    // Without the pc (and so without the program's path through it, only its effects).
    let elf = program("loops-rv32imac");
    let absent = Elements::parse("pc,priv").unwrap();
    let run = produce(&elf, absent);
    let (s, ms) = check(&elf, &run.trace, run.params, absent).unwrap();
    assert_clean("loops-rv32imac without pc,priv", &s, &ms);
}

#[test]
fn malformed_traces_end_with_a_clear_error() {
    let elf = program("recurse-rv32imac");
    let run = produce(&elf, Elements::NONE);
    let recs = records(&run.trace, &run.params);
    // Truncated inside a full-register record.
    let (_, off) = find(&recs, 100, |r| matches!(r, Record::FullReg { .. }));
    let t = &run.trace[..off as usize + 4];
    let (s, _) = check(&elf, t, run.params, Elements::NONE).unwrap();
    assert!(
        matches!(
            s.end,
            TraceEnd::Truncated {
                in_record: true,
                ..
            }
        ),
        "{s}"
    );
    assert_eq!(s.bytes, off + 4);
    assert!(!s.passed());
    assert!(s.to_string().contains("TRUNCATED"), "{s}");
    assert!(s.to_string().contains("in the middle of a record"), "{s}");
    assert!(
        matches!(s.program, ProgramCheck::Same { bytes } if bytes > 1000),
        "{s}"
    );
    // An unknown opcode.
    let (_, off) = find(&recs, 200, |r| matches!(r, Record::IncrPc));
    let mut t = run.trace.clone();
    t[off as usize] = 0x0c;
    match check(&elf, &t, run.params, Elements::NONE) {
        Err(CheckError::Malformed(e)) => {
            assert_eq!(e.offset, off);
            assert_eq!(e.kind, ErrorKind::UnknownOpcode(0x0c));
            assert!(e.to_string().contains("unknown opcode 12"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn create_file_producer_errors_keep_their_text() {
    use rvtrace_tandem::producer::{create_file_producer, CreateError};
    let mut image = Image::new();
    image.load_file(&program("fnptr-rv64gc")).unwrap();
    let hart = common::reference(&image);
    let dir = std::env::temp_dir().join(format!("rvtrace-create-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("t.tt");
    let e = create_file_producer(&t, &hart, &image, Elements::NONE, Some(99))
        .err()
        .unwrap();
    assert_eq!(e.to_string(), "MLEN must be 1..64, not 99");
    let missing = dir.join("no/t.tt");
    let e = create_file_producer(&missing, &hart, &image, Elements::NONE, None)
        .err()
        .unwrap();
    assert!(matches!(e, CreateError::Create { .. }), "{e:?}");
    let want = format!("{}: cannot create: ", missing.display());
    assert!(e.to_string().starts_with(&want), "{e}");
    // The sidecar's place taken by a directory.
    std::fs::create_dir_all(dir.join("t.tt.meta")).unwrap();
    let e = create_file_producer(&t, &hart, &image, Elements::NONE, None)
        .err()
        .unwrap();
    assert!(matches!(e, CreateError::Sidecar(_)), "{e:?}");
    std::fs::remove_dir(dir.join("t.tt.meta")).unwrap();
    assert!(create_file_producer(&t, &hart, &image, Elements::NONE, None).is_ok());
    assert!(dir.join("t.tt.meta").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}
