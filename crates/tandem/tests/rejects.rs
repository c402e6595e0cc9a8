//! Damaged traces the checker used to pass (issue 9), one regression test each: every one of
//! them must be reported, at the group where the damage is.

use crate::common;

use common::{check_image, produce, program, Run};
use rvtrace_tandem::checker::{CheckError, CheckSummary, Mismatch, ProgramCheck, TraceEnd};
use rvtrace_tandem::codec::{decode_all, encode_all, reg, AddlState, ErrorKind, Record};
use rvtrace_tandem::Elements;

fn records(run: &Run) -> Vec<Record> {
    decode_all(&run.trace, &run.params).unwrap()
}

/// Index of the k-th record (counting from the first instruction) that `pick` accepts.
fn nth(recs: &[Record], k: usize, pick: impl Fn(&[Record], usize) -> bool) -> usize {
    let first = recs
        .iter()
        .position(|r| matches!(r, Record::Insn16(_) | Record::Insn32(_)))
        .unwrap();
    (first..recs.len())
        .filter(|&i| pick(recs, i))
        .nth(k)
        .expect("no such record")
}

/// The group number (from 1) of record `i`.
fn group_of(recs: &[Record], i: usize) -> u64 {
    recs[..=i]
        .iter()
        .filter(|r| **r == Record::BeginGroup)
        .count() as u64
}

fn check(run: &Run, recs: &[Record]) -> Result<(CheckSummary, Vec<Mismatch>), CheckError> {
    check_image(
        &run.image,
        &encode_all(recs, &run.params),
        run.params,
        run.absent,
    )
}

/// The trace is reported at exactly `group`, with a difference whose element contains `element`
/// and whose expected text contains `expected`.
fn reported_at(run: &Run, recs: &[Record], group: u64, element: &str, expected: &str) {
    let (s, ms) = check(run, recs).unwrap();
    assert!(!s.passed(), "{s}");
    let m = ms
        .first()
        .unwrap_or_else(|| panic!("no mismatch reported: {s}"));
    assert_eq!(m.group, group, "{m}");
    assert!(
        m.diffs
            .iter()
            .any(|d| d.element.contains(element) && d.expected.contains(expected)),
        "{m}"
    );
}

fn is_gpr_write(r: &Record) -> bool {
    matches!(r, Record::FullReg { addr, .. } if reg::is_gpr(*addr) && *addr != reg::gpr(0))
}

#[test]
fn unknown_register_addresses() {
    let run = produce(&program("recurse-rv32imac"), Elements::NONE);
    let recs = records(&run);
    let i = nth(&recs, 300, |r, i| is_gpr_write(&r[i]));
    let g = group_of(&recs, i);
    // Above the Debug Specification's space (0x1040 and up).
    let mut t = recs.clone();
    if let Record::FullReg { addr, .. } = &mut t[i] {
        *addr += 0x100;
    }
    reported_at(&run, &t, g, "register 0x11", "no such register");
    // A CSR the instruction does not write (here: with the value it holds, 0).
    let mut t = recs.clone();
    t[i] = Record::FullReg {
        addr: 0x016,
        value: 0,
    };
    reported_at(&run, &t, g, "csr 0x016", "not written by this instruction");
}

#[test]
fn a_register_the_instruction_does_not_write() {
    let run = produce(&program("setjmp-rv64gc"), Elements::NONE);
    let mut recs = records(&run);
    // x0 is written by no instruction; writing it with 0 changes no state, but claims a write.
    let i = nth(&recs, 500, |r, i| is_gpr_write(&r[i]));
    let g = group_of(&recs, i);
    recs.insert(
        i,
        Record::FullReg {
            addr: reg::gpr(3),
            value: 0,
        },
    );
    // gp holds the global pointer, not 0: a plain difference.
    reported_at(&run, &recs, g, "x3 (gp)", "0x");
    // The value gp holds (its last write before): no state change, still reported.
    let gp = recs[..i]
        .iter()
        .rev()
        .find_map(|r| match r {
            Record::FullReg { addr, value } if *addr == reg::gpr(3) => Some(*value),
            _ => None,
        })
        .unwrap();
    recs[i] = Record::FullReg {
        addr: reg::gpr(3),
        value: gp,
    };
    reported_at(&run, &recs, g, "x3 (gp)", "not written by this instruction");
}

#[test]
fn memory_response_size_and_result() {
    let run = produce(&program("mixed-rv64gc"), Elements::NONE);
    let recs = records(&run);
    // The response of a store: another size.
    let i = nth(&recs, 200, |r, i| {
        matches!(r[i], Record::MemRsp { data: None, .. })
    });
    let g = group_of(&recs, i);
    let mut t = recs.clone();
    if let Record::MemRsp { size, .. } = &mut t[i] {
        *size ^= 1;
    }
    reported_at(&run, &t, g, "response size", "the request's");
    // The response of a load: failure.
    let i = nth(&recs, 200, |r, i| {
        matches!(r[i], Record::MemRsp { data: Some(_), .. })
            && matches!(r[i - 1], Record::MemReq { op: 0, .. })
    });
    let g = group_of(&recs, i);
    let mut t = recs.clone();
    if let Record::MemRsp { result, .. } = &mut t[i] {
        *result = 1;
    }
    reported_at(&run, &t, g, "memory load", "success");
    // A result code the protocol does not have.
    let mut bytes = encode_all(&recs[..i], &run.params);
    let at = bytes.len();
    bytes.extend(encode_all(&recs[i..], &run.params));
    bytes[at + 1] |= 0x20;
    match check_image(&run.image, &bytes, run.params, run.absent) {
        Err(CheckError::Malformed(e)) => {
            assert_eq!(e.offset, at as u64);
            assert_eq!(e.kind, ErrorKind::BadMemResult(2));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn privilege_mode_beyond_two_bits() {
    let run = produce(&program("traps-rv32imac"), Elements::NONE);
    let recs = records(&run);
    let i = nth(&recs, 3, |r, i| {
        matches!(r[i], Record::State(AddlState::Priv(_)))
    });
    let mut bytes = encode_all(&recs[..i], &run.params);
    let at = bytes.len();
    bytes.extend(encode_all(&recs[i..], &run.params));
    bytes[at + 2] |= 0x40;
    match check_image(&run.image, &bytes, run.params, run.absent) {
        Err(CheckError::Malformed(e)) => {
            assert_eq!(e.offset, at as u64);
            assert!(matches!(e.kind, ErrorKind::BadPriv(_)), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_element_given_twice_is_ambiguous() {
    let run = produce(&program("setjmp-rv32imac"), Elements::NONE);
    let recs = records(&run);
    // An end group flipped into an increment pc (opcode 2 -> 3) where the pc was incremented.
    let i = nth(&recs, 400, |r, i| {
        r[i] == Record::EndGroup && r[..i].iter().rev().take(8).any(|x| *x == Record::IncrPc)
    });
    let g = group_of(&recs, i);
    let mut t = recs.clone();
    t[i] = Record::IncrPc;
    reported_at(&run, &t, g, "pc", "at most once");
    // A register written twice with different values: the order is not given (chapter 3).
    let i = nth(&recs, 400, |r, i| is_gpr_write(&r[i]));
    let g = group_of(&recs, i);
    let mut t = recs.clone();
    if let Record::FullReg { addr, value } = recs[i] {
        t.insert(
            i,
            Record::FullReg {
                addr,
                value: value ^ 1,
            },
        );
    }
    reported_at(&run, &t, g, "x", "at most once");
}

#[test]
fn an_end_group_outside_any_group() {
    let run = produce(&program("setjmp-rv32imac"), Elements::NONE);
    let mut recs = records(&run);
    let i = nth(&recs, 100, |r, i| r[i] == Record::EndGroup);
    recs.insert(i + 1, Record::EndGroup);
    let at = encode_all(&recs[..=i], &run.params).len() as u64;
    match check(&run, &recs) {
        Err(CheckError::Protocol(off, m)) => {
            assert_eq!(off, at);
            assert!(m.contains("end group outside any group"), "{m}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn truncation_at_a_group_boundary_and_inside_a_group() {
    let run = produce(&program("setjmp-rv32imac"), Elements::NONE);
    let recs = records(&run);
    let i = nth(&recs, 1000, |r, i| r[i] == Record::BeginGroup);
    let (s, ms) = check(&run, &recs[..i]).unwrap();
    assert!(ms.is_empty());
    assert!(matches!(s.end, TraceEnd::Unfinished { .. }), "{s}");
    assert!(s.to_string().contains("TRUNCATED"), "{s}");
    assert!(!s.passed());
    // Inside the group: after its instruction, before its register write and end group.
    let j = i + recs[i..].iter().position(is_gpr_write).unwrap();
    let (s, ms) = check(&run, &recs[..j]).unwrap();
    assert!(ms.is_empty(), "not an interrupt: {}", ms[0]);
    assert!(
        matches!(
            s.end,
            TraceEnd::Truncated {
                in_record: false,
                ..
            }
        ),
        "{s}"
    );
    assert!(!s.passed());
    // The whole trace ends with the program's exit.
    let (s, _) = check(&run, &recs).unwrap();
    assert!(matches!(s.end, TraceEnd::Exit(_)), "{s}");
    assert!(s.passed());
}

#[test]
fn groups_after_the_exit() {
    let run = produce(&program("setjmp-rv32imac"), Elements::NONE);
    let mut recs = records(&run);
    let n = recs.iter().filter(|r| **r == Record::BeginGroup).count() as u64;
    // The last instruction group again.
    let last = recs.iter().rposition(|r| *r == Record::BeginGroup).unwrap();
    let again = recs[last..].to_vec();
    recs.extend(again);
    let (s, ms) = check(&run, &recs).unwrap();
    assert!(!s.passed(), "{s}");
    assert_eq!(ms[0].group, n + 1, "{}", ms[0]);
    assert!(
        ms[0].diffs[0].expected.contains("program exited in group"),
        "{}",
        ms[0]
    );
}

#[test]
fn a_semihosting_result_left_out_of_a_complete_trace() {
    let run = produce(&program("stdio-rv32imac"), Elements::NONE);
    let mut recs = records(&run);
    let i = nth(&recs, 5, |r, i| {
        matches!(r[i], Record::FullReg { addr: 0x100a, .. })
            && r[..i]
                .iter()
                .rev()
                .take(4)
                .any(|x| *x == Record::Insn32(0x0010_0073))
    });
    let g = group_of(&recs, i);
    recs.remove(i);
    reported_at(&run, &recs, g, "x10 (a0)", "the call's result");
}

#[test]
fn the_program_load_is_compared() {
    let run = produce(&program("setjmp-rv64gc"), Elements::NONE);
    let recs = records(&run);
    // A store of the program load moved outside the hart's memory.
    let i = recs
        .iter()
        .position(|r| matches!(r, Record::MemReq { .. }))
        .unwrap();
    let mut t = recs.clone();
    let Record::MemReq { addr, .. } = &mut t[i] else {
        unreachable!()
    };
    let orig = *addr;
    *addr ^= 1 << 36;
    let (s, ms) = check(&run, &t).unwrap();
    assert!(!s.passed());
    match &s.program {
        ProgramCheck::Differs { addr, elf, .. } => {
            // The store's own bytes are missing at its address; the first by address is that.
            assert_eq!(*addr, orig, "{s}");
            assert!(elf.starts_with("bytes "), "{s}");
        }
        p => panic!("{p:?}"),
    }
    assert_eq!(ms[0].diffs[0].element, format!("memory at 0x{orig:x}"));
    // The entry pc of the program load.
    let i = recs
        .iter()
        .position(|r| matches!(r, Record::State(AddlState::Pc(_))))
        .unwrap();
    let mut t = recs.clone();
    t[i] = Record::State(AddlState::Pc(0x8000_0100));
    reported_at(&run, &t, 1, "pc", "the ELF's entry");
    // And everything else is the ELF's.
    let (s, _) = check(&run, &recs).unwrap();
    assert!(
        matches!(s.program, ProgramCheck::Same { bytes } if bytes > 1000),
        "{s}"
    );
    // A trace without its program load (say the sidecar was lost): nothing to compare, and
    // the summary says so.
    let run = produce(&program("setjmp-rv64gc"), Elements::parse("init").unwrap());
    let (s, ms) = check(&run, &records(&run)).unwrap();
    assert!(ms.is_empty() && s.passed(), "{s}");
    assert_eq!(s.program, ProgramCheck::NotInTrace);
    assert!(
        s.to_string()
            .contains("the trace initializes no memory: the reference runs the ELF's"),
        "{s}"
    );
}

#[test]
fn fixed_semihosting_results_and_program_load_operations() {
    let run = produce(&program("setjmp-rv32imac"), Elements::NONE);
    let recs = records(&run);
    // WRITEC and WRITE0 return 0xdeadbeef: another value is no host input but a damaged one.
    let i = nth(&recs, 0, |r, i| {
        matches!(
            r[i],
            Record::FullReg {
                addr: 0x100a,
                value: 0xdead_beef
            }
        ) && r[..i].contains(&Record::Insn32(0x0010_0073))
            && r[i - 1] == Record::Insn32(0x0010_0073)
    });
    let g = group_of(&recs, i);
    let mut t = recs.clone();
    t[i] = Record::FullReg {
        addr: 0x100a,
        value: 0xdead_beee,
    };
    reported_at(&run, &t, g, "x10 (a0)", "0xdeadbeef");
    // The program load writes memory with stores, not with a store conditional.
    let i = recs
        .iter()
        .position(|r| matches!(r, Record::MemReq { .. }))
        .unwrap();
    let g = group_of(&recs, i);
    let mut t = recs.clone();
    if let Record::MemReq { op, .. } = &mut t[i] {
        *op = 3;
    }
    reported_at(&run, &t, g, "memory request", "a store");
}
