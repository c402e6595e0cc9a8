//! The encoder's side of the E-Trace decoder cases of `tests/cases` that hold `payload.adoc`'s
//! corner cases: the *updiscon* "looplabel" scenarios (`sec:updiscon`), *irdepth* in recursive
//! code (`sec:irxx`), an exception on the first traced instruction and at the target of an
//! uninferable jump (`sec:thaddr`), sequentially inferable jumps, implicit exception and implicit
//! return mode. Each test is an execution (the ingress records of a case's program) and checks
//! that rvtrace's encoder gives exactly the packets of the cases written for it (with each case's
//! options), that each case's PCs are the instructions the execution retires, and what the
//! packets must say. The harness (`cases.rs`) checks that the decoder rebuilds those PCs (and
//! flow) from those packets.

use crate::common::case as common;

use rvtrace_etrace::codec::te_inst::Support;
use rvtrace_etrace::codec::{AddrTail, QualStatus};
use rvtrace_etrace::encoder::Encoder;
use rvtrace_etrace::{Params, TeInst};
use rvtrace_ingress::{Itype, Record};
use rvtrace_testkit::case::CaseFile;
use std::path::Path;

/// Where every case's program starts.
const BASE: u64 = 0x8000_0000;

/// The address of the 32-bit instruction at word `i` of a case's program.
fn at(i: u64) -> u64 {
    BASE + 4 * i
}

/// A retired 32-bit instruction at word `i`.
fn ins(i: u64, itype: Itype) -> Record {
    Record {
        iaddr: at(i),
        iretire: 2,
        ilastsize: 1,
        itype,
        priv_: 3,
        ..Record::default()
    }
}

/// A trap that retired nothing, at word `i`.
fn trap(i: u64, interrupt: bool, cause: u64) -> Record {
    Record {
        iaddr: at(i),
        iretire: 0,
        ilastsize: 1,
        itype: if interrupt {
            Itype::Interrupt
        } else {
            Itype::Exception
        },
        cause,
        priv_: 3,
        ..Record::default()
    }
}

fn jr() -> Itype {
    Itype::UninferableJump
}

/// One case's packets, which the encoder gave.
struct Encoded {
    /// The case's name.
    name: String,
    /// The packets.
    packets: Vec<TeInst>,
    /// Their layout.
    params: Params,
}

impl Encoded {
    /// The address tails of the packets.
    fn tails(&self) -> Vec<AddrTail> {
        self.packets
            .iter()
            .filter_map(|p| p.tail().copied())
            .collect()
    }
}

/// Every case of `tests/cases/FILE` whose name begins with `name` (at least one): each case's
/// PCs must be what `recs` retire, and its packets what rvtrace's encoder gives for `recs` with
/// the case's options (a failure shows the encoder's as case lines).
fn encoded(file: &str, name: &str, recs: &[Record]) -> Vec<Encoded> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cases")
        .join(file);
    let f = CaseFile::load(&path).unwrap();
    let retired: Vec<u64> = recs
        .iter()
        .filter(|r| r.iretire > 0)
        .map(|r| r.iaddr)
        .collect();
    let mut out = Vec::new();
    for c in f.cases.iter().filter(|c| c.name.starts_with(name)) {
        let at = format!("{file}:{}: {}", c.line, c.name);
        assert_eq!(c.pcs.as_ref().map(|p| &p.1), Some(&retired), "{at}: PCs");
        let cfg = common::config(&f, c).unwrap();
        let (written, _) = common::trace(&f, c, &cfg).unwrap();
        let mut enc = Encoder::new(&cfg, Vec::new()).unwrap();
        for r in recs {
            enc.push(r).unwrap();
        }
        let packets = enc.finish().unwrap();
        if packets != written {
            let lines: Vec<String> = packets
                .iter()
                .map(|p| format!("te_inst {}", p.fields(&cfg.params)))
                .collect();
            panic!(
                "{at}: the encoder gives other packets:\n{}",
                lines.join("\n")
            );
        }
        out.push(Encoded {
            name: c.name.clone(),
            packets,
            params: cfg.params,
        });
    }
    assert!(!out.is_empty(), "no case `{name}` in {file}");
    out
}

/// The one of `cases` with options `opts` (the end of its name).
fn with<'a>(cases: &'a [Encoded], opts: &str) -> &'a Encoded {
    let end = format!("[{opts}]");
    cases
        .iter()
        .find(|e| e.name.ends_with(&end))
        .unwrap_or_else(|| panic!("no case with {end}"))
}

/// The packets that carry an address.
fn addr_packets(e: &Encoded) -> usize {
    e.tails().len()
}

// `looplabel.case`: opcode A at word 1, B (looplabel) at 2, C at 3, a JALR back to looplabel at
// 4, the handler H at 8.

#[test]
fn looplabel_case_1_second_iteration_reported_then_more_packets() {
    // looplabel is reported after each JALR with updiscon == notify.
    let recs = [
        ins(0, Itype::None),
        ins(1, Itype::None),
        ins(2, Itype::None),
        ins(3, Itype::None),
        ins(4, jr()),
        ins(2, Itype::None),
        ins(3, Itype::None),
        ins(4, jr()),
        ins(2, Itype::None),
        ins(3, Itype::None),
    ];
    for e in encoded("looplabel.case", "looplabel 1:", &recs) {
        let f2: Vec<_> = e
            .packets
            .iter()
            .filter_map(|p| match p {
                TeInst::Addr(t) => Some(*t),
                _ => None,
            })
            .collect();
        assert!(!f2.is_empty());
        assert!(f2.iter().all(|t| !t.updiscon_flag()));
    }
}

/// The first format 2 packet.
fn first_f2(e: &Encoded) -> AddrTail {
    e.packets
        .iter()
        .find_map(|p| match p {
            TeInst::Addr(t) => Some(*t),
            _ => None,
        })
        .unwrap()
}

#[test]
fn looplabel_case_2_exception_in_second_iteration() {
    // The exception at looplabel+4 in the second iteration: looplabel is reported with
    // updiscon != notify.
    let recs = [
        ins(0, Itype::None),
        ins(1, Itype::None),
        ins(2, Itype::None),
        ins(3, Itype::None),
        ins(4, jr()),
        ins(2, Itype::None),
        trap(3, false, 2),
        ins(8, Itype::None),
        ins(9, Itype::None),
    ];
    for e in encoded("looplabel.case", "looplabel 2:", &recs) {
        let t = first_f2(&e);
        assert!(t.updiscon_flag() && !t.notify_flag(&e.params));
    }
}

#[test]
fn looplabel_case_3_exception_in_first_iteration() {
    // The exception right after the first execution of looplabel: updiscon == notify.
    let recs = [
        ins(0, Itype::None),
        ins(1, Itype::None),
        ins(2, Itype::None),
        trap(3, false, 2),
        ins(8, Itype::None),
        ins(9, Itype::None),
    ];
    for e in encoded("looplabel.case", "looplabel 3:", &recs) {
        assert!(!first_f2(&e).updiscon_flag());
    }
}

/// The *qual_status* of the last packet (a support packet).
fn last_qual_status(e: &Encoded) -> Option<QualStatus> {
    match e.packets.last() {
        Some(TeInst::Support(Support { qual_status, .. })) => Some(*qual_status),
        _ => None,
    }
}

#[test]
fn trace_ends_at_looplabel_in_the_second_iteration() {
    // payload.adoc sec:qual-status: tracing stops right after the JALR's target: ended_ntr; in
    // the first iteration instead: ended_rep.
    let recs = [
        ins(0, Itype::None),
        ins(1, Itype::None),
        ins(2, Itype::None),
        ins(3, Itype::None),
        ins(4, jr()),
        ins(2, Itype::None),
    ];
    for e in encoded(
        "looplabel.case",
        "tracing ends at looplabel in the second",
        &recs,
    ) {
        assert_eq!(last_qual_status(&e), Some(QualStatus::EndedNtr));
    }
    for e in encoded(
        "looplabel.case",
        "tracing ends at looplabel in the first",
        &recs[..3],
    ) {
        assert_eq!(last_qual_status(&e), Some(QualStatus::EndedRep));
    }
}

#[test]
fn exception_on_the_first_traced_instruction() {
    // v2.0 sec:thaddr: format 3 subformat 1 with thaddr = 0 and address = EPC, then a format 3
    // subformat 0 with the handler.
    let recs = [trap(3, false, 2), ins(8, Itype::None), ins(9, Itype::None)];
    for e in encoded("looplabel.case", "an exception on the first traced", &recs) {
        let kinds: Vec<&str> = e.packets.iter().map(|p| p.kind()).collect();
        assert_eq!(&kinds[..3], ["F3S3", "F3S1", "F3S0"]);
        assert!(matches!(
            e.packets[1],
            TeInst::Trap { thaddr: false, address: Some(a), .. } if a << 1 == at(3)
        ));
    }
}

#[test]
fn exception_at_the_target_of_an_uninferable_jump() {
    // The JALR's target faults: subformat 1 with thaddr = 0 carries the EPC.
    let recs = [
        ins(0, Itype::None),
        ins(1, Itype::None),
        ins(2, Itype::None),
        ins(3, Itype::None),
        ins(4, jr()),
        trap(2, false, 2),
        ins(8, Itype::None),
    ];
    for e in encoded("looplabel.case", "an exception at the target", &recs) {
        assert!(e.packets.iter().any(
            |p| matches!(p, TeInst::Trap { thaddr: false, address: Some(a), .. } if a << 1 == at(2))
        ));
    }
}

#[test]
fn implicit_exception_omits_a_known_handler() {
    // Two interrupts with the same cause and handler: the first reports the handler (thaddr = 0
    // then a sync), the second omits it.
    let recs = [
        ins(0, Itype::None),
        ins(1, Itype::None),
        trap(2, true, 7),
        ins(8, Itype::None),
        ins(9, Itype::None),
        trap(9, true, 7),
        ins(8, Itype::None),
        ins(9, Itype::None),
    ];
    for e in encoded("looplabel.case", "implicit exception:", &recs) {
        let traps: Vec<_> = e
            .packets
            .iter()
            .filter_map(|p| match p {
                TeInst::Trap {
                    thaddr, address, ..
                } => Some((*thaddr, address.is_some())),
                _ => None,
            })
            .collect();
        assert_eq!(traps, [(false, true), (true, false)]);
    }
}

/// `recursion.case`: `f` (word 4) calls itself while a0 != 0, then returns through X (word 7)
/// at every level: depth 1 and 2 recurse, depth 3 takes the branch to X.
fn recursion() -> Vec<Record> {
    let mut recs = vec![ins(0, Itype::InferableCall)];
    for _ in 0..2 {
        recs.push(ins(4, Itype::NonTakenBranch));
        recs.push(ins(5, Itype::None));
        recs.push(ins(6, Itype::InferableCall));
    }
    recs.push(ins(4, Itype::TakenBranch));
    recs.push(ins(7, Itype::None));
    recs.push(ins(8, Itype::Return));
    recs.push(ins(7, Itype::None));
    recs
}

#[test]
fn irdepth_picks_the_right_level_of_recursion() {
    // An interrupt right after X at depth 2: the packet before the trap reports X with the
    // stack depth (sec:irxx), with a call counter and with a return stack.
    let mut recs = recursion();
    recs.extend([trap(8, true, 7), ins(9, Itype::None), ins(10, Itype::None)]);
    let cases = encoded("recursion.case", "irdepth:", &recs);
    assert_eq!(cases.len(), 2);
    for e in cases {
        let t = e.tails()[0];
        assert!(t.irreport_flag(), "irdepth reported");
        assert_eq!(t.irdepth, 2);
    }
}

#[test]
fn implicit_returns_unwind_recursion() {
    let mut recs = recursion();
    recs.extend([
        ins(8, Itype::Return),
        ins(7, Itype::None),
        ins(8, Itype::Return),
        ins(1, Itype::None),
        ins(2, Itype::None),
    ]);
    let cases = encoded("recursion.case", "the recursion unwinds", &recs);
    // Three returns reported without implicit return, none with it.
    assert_eq!(addr_packets(with(&cases, "default options")), 4);
    assert_eq!(addr_packets(with(&cases, "implicit-return")), 1);
}

#[test]
fn sequentially_inferable_jump() {
    // `sijump.case`: auipc t0, 0; jalr ra, 16(t0) (a call whose target the decoder can
    // compute); the callee (word 4) returns through ra.
    let mut call = ins(1, Itype::UninferableCall);
    call.sijump = true;
    let recs = [
        ins(0, Itype::None),
        call,
        ins(4, Itype::None),
        ins(5, Itype::Return),
        ins(2, Itype::None),
        ins(3, Itype::None),
    ];
    let cases = encoded("sijump.case", "the call through jalr", &recs);
    assert_eq!(
        addr_packets(with(&cases, "default options")),
        3,
        "call target, return target, end"
    );
    assert_eq!(
        addr_packets(with(&cases, "sijump")),
        2,
        "return target, end"
    );
}

#[test]
fn same_function_called_twice_then_a_trap() {
    // `called-twice.case`: f(); f(); with no branch anywhere, an interrupt right after X (word
    // 4) in the second call.
    let recs = [
        ins(0, Itype::InferableCall),
        ins(4, Itype::None),
        ins(5, Itype::Return),
        ins(1, Itype::InferableCall),
        ins(4, Itype::None),
        trap(5, true, 7),
        ins(6, Itype::None),
        ins(7, Itype::None),
    ];
    assert_eq!(encoded("called-twice.case", "an interrupt", &recs).len(), 2);
}

/// The implicit return option sets the regression cases below run with (each a case of its
/// file, named by its options).
const IR_SETS: usize = 4;

#[test]
fn branch_right_before_a_trap_after_a_return_and_a_call() {
    // `branch-before-trap.case`: f(); g(); where g's first instruction is a branch, taken, and
    // an interrupt comes before the branch target retires; then the same with the branch the
    // last traced instruction.
    let head = [
        ins(0, Itype::InferableCall),
        ins(3, Itype::None),
        ins(4, Itype::Return),
        ins(1, Itype::InferableCall),
        ins(5, Itype::TakenBranch),
    ];
    let mut recs = head.to_vec();
    recs.extend([trap(7, true, 7), ins(8, Itype::None), ins(9, Itype::None)]);
    let f = "branch-before-trap.case";
    assert_eq!(encoded(f, "an interrupt before", &recs).len(), IR_SETS);
    assert_eq!(encoded(f, "the branch the last", &head).len(), IR_SETS);
}

#[test]
fn depth_zero_is_reported() {
    // `depth-zero.case`: f() then a jump (tail call) into f at depth 0, and an interrupt right
    // after X: the packet before the trap reports depth 0.
    let recs = [
        ins(0, Itype::InferableCall),
        ins(3, Itype::None),
        ins(4, Itype::Return),
        ins(1, Itype::InferableJump),
        ins(3, Itype::None),
        trap(4, true, 7),
        ins(5, Itype::None),
        ins(6, Itype::None),
    ];
    let cases = encoded("depth-zero.case", "an interrupt", &recs);
    assert_eq!(cases.len(), IR_SETS);
    let e = with(&cases, "implicit-return");
    let t = e.tails()[0];
    assert!(t.notify_flag(&e.params) && t.irreport_flag() && t.irdepth == 0);
}

#[test]
fn looplabel_continuation_then_a_full_branch_map() {
    // `looplabel-continuation.case`: f is called, returns, and is called again through a
    // register; then 30 taken branches and one not taken: a format 1 with a full branch map
    // and no address.
    let mut recs = vec![
        ins(0, Itype::InferableCall),
        ins(5, Itype::None),
        ins(6, Itype::Return),
        ins(1, Itype::None),
        ins(2, Itype::UninferableCall),
        ins(5, Itype::None),
        ins(6, Itype::Return),
    ];
    recs.extend((0..30).map(|_| ins(3, Itype::TakenBranch)));
    recs.push(ins(3, Itype::NonTakenBranch));
    recs.push(ins(4, Itype::None));
    let cases = encoded("looplabel-continuation.case", "f's second entry", &recs);
    assert_eq!(cases.len(), IR_SETS);
    assert!(with(&cases, "implicit-return")
        .packets
        .iter()
        .any(|p| matches!(
            p,
            TeInst::Branch {
                branches: 0,
                tail: None,
                ..
            }
        )));
}

#[test]
fn resync_due_at_a_trap_that_retired_nothing() {
    // `resync-at-trap.case`: the resync period ends on the record of an exception that retired
    // nothing, with a call on the stack (the option sets, and resync periods 1 to 3).
    let recs = [
        ins(0, Itype::InferableCall),
        ins(2, Itype::None),
        ins(3, Itype::None),
        trap(4, false, 2),
        ins(5, Itype::None),
        ins(6, Itype::None),
    ];
    let cases = encoded("resync-at-trap.case", "a resync due", &recs);
    assert_eq!(cases.len(), IR_SETS + 3);
    for k in 1..4 {
        with(&cases, &format!("implicit-return sync-period={k}"));
    }
}

#[test]
fn return_failing_its_prediction_after_the_same_return_inferred() {
    // `return-mispredicted.case`: f(); f(); the second f returns elsewhere (X): the encoder
    // reports X with irreport and the depth of the failing return.
    let recs = [
        ins(0, Itype::InferableCall),
        ins(3, Itype::None),
        ins(4, Itype::Return),
        ins(1, Itype::InferableCall),
        ins(3, Itype::None),
        ins(4, Itype::Return),
        ins(5, Itype::None),
        ins(6, Itype::None),
    ];
    let cases = encoded("return-mispredicted.case", "a return failing", &recs);
    assert_eq!(cases.len(), IR_SETS);
    let e = with(&cases, "implicit-return return-stack=4");
    assert!(e
        .tails()
        .iter()
        .any(|t| !t.notify_flag(&e.params) && t.irreport_flag() && t.irdepth == 1));
}

#[test]
fn return_failing_its_prediction_with_nothing_unique_before_it() {
    // `return-mispredicted-loop.case`: a loop of inferable jumps around a call.
    let mut recs = vec![ins(0, Itype::InferableJump)];
    for _ in 0..2 {
        recs.extend([
            ins(2, Itype::None),
            ins(3, Itype::InferableJump),
            ins(1, Itype::InferableCall),
            ins(4, Itype::None),
            ins(5, Itype::Return),
        ]);
    }
    recs.extend([ins(6, Itype::None), ins(7, Itype::None)]);
    let cases = encoded("return-mispredicted-loop.case", "a return failing", &recs);
    assert_eq!(cases.len(), IR_SETS);
}

#[test]
fn resync_reaches_the_right_occurrence() {
    // `resync-occurrence.case`: a resync falls due while f runs for the second time, at depth 0
    // after a jump into it: the encoder reports the instruction before it first, and the
    // format 3 subformat 0 is f's entry.
    let recs = [
        ins(0, Itype::None),
        ins(1, jr()),
        ins(2, Itype::InferableCall),
        ins(5, Itype::None),
        ins(6, Itype::None),
        ins(7, Itype::Return),
        ins(3, Itype::InferableJump),
        ins(5, Itype::None),
        ins(6, Itype::None),
    ];
    let cases = encoded("resync-occurrence.case", "a resync", &recs);
    assert_eq!(cases.len(), IR_SETS + 1);
    assert!(with(&cases, "implicit-return sync-period=1")
        .packets
        .iter()
        .any(|p| matches!(p, TeInst::Start { address, .. } if address << 1 == at(5))));
}

#[test]
fn same_function_called_twice_while_counting_predicted_branches() {
    // `predicted-branches.case`: 32 branches predicted correctly (format 0 subformat 0 counts
    // them), then f(); f(); and an interrupt right after X in the second call: the packet that
    // first stops the decoder at the second call carries the branch count.
    let mut recs: Vec<Record> = (0..32).map(|i| ins(i, Itype::NonTakenBranch)).collect();
    recs.extend([
        ins(32, Itype::InferableCall),
        ins(36, Itype::None),
        ins(37, Itype::Return),
        ins(33, Itype::InferableCall),
        ins(36, Itype::None),
        trap(37, true, 7),
        ins(38, Itype::None),
        ins(39, Itype::None),
    ]);
    let cases = encoded("predicted-branches.case", "an interrupt", &recs);
    assert_eq!(cases.len(), IR_SETS + 1);
    assert!(with(&cases, "implicit-return branch-prediction=64")
        .packets
        .iter()
        .any(|p| matches!(
            p,
            TeInst::BranchCount {
                branch_fmt: 2,
                tail: Some(_),
                ..
            }
        )));
}
