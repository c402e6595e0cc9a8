//! Hand-written cases for the corner cases `payload.adoc` describes: the *updiscon* "looplabel"
//! scenarios (`sec:updiscon`), *irdepth* in recursive code (`sec:irxx`), an exception on the first
//! traced instruction and at the target of an uninferable jump (`sec:thaddr`), sequentially
//! inferable jumps (`sec:si-jump`) and implicit exception mode. Each builds a tiny program, the
//! ingress records its execution gives, encodes them with rvtrace's encoder and checks both the
//! packets and that the decoder rebuilds exactly the retired instructions.

use rvtrace_etrace::codec::te_inst::Support;
use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::decoder::{Decoder, DecoderOptions};
use rvtrace_etrace::encoder::Encoder;
use rvtrace_etrace::TeInst;
use rvtrace_flow::{FlowElement, FlowSink, PcWriter};
use rvtrace_image::Image;
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::IsaConfig;
use rvtrace_testkit::{minimal_elf, parse_pcs};

const BASE: u64 = 0x8000_0000;

// RV32I/RV64I encodings (Unprivileged ISA, "RV32I Base Integer Instruction Set").
fn i_type(op: u32, rd: u32, f3: u32, rs1: u32, imm: i32) -> u32 {
    ((imm as u32 & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x13, rd, 0, rs1, imm)
}
fn nop() -> u32 {
    addi(0, 0, 0)
}
fn jalr(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x67, rd, 0, rs1, imm)
}
fn jal(rd: u32, off: i32) -> u32 {
    let o = off as u32;
    (((o >> 20) & 1) << 31)
        | (((o >> 1) & 0x3ff) << 21)
        | (((o >> 11) & 1) << 20)
        | (((o >> 12) & 0xff) << 12)
        | (rd << 7)
        | 0x6f
}
fn beq(rs1: u32, rs2: u32, off: i32) -> u32 {
    let o = off as u32;
    (((o >> 12) & 1) << 31)
        | (((o >> 5) & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (((o >> 1) & 0xf) << 8)
        | (((o >> 11) & 1) << 7)
        | 0x63
}
fn auipc(rd: u32, imm20: u32) -> u32 {
    (imm20 << 12) | (rd << 7) | 0x17
}

/// A program of 32-bit instructions at `BASE` (word index = (addr - BASE) / 4).
fn image(words: &[u32]) -> Image {
    let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut img = Image::new();
    img.load_bytes("t.elf", &minimal_elf(true, BASE, &code))
        .unwrap();
    img
}

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

struct Out {
    packets: Vec<TeInst>,
    pcs: Vec<u64>,
    elements: Vec<FlowElement>,
}

fn run(img: &Image, recs: &[Record], inputs: ConfigInputs) -> Out {
    let inputs = ConfigInputs {
        xlen_bits: 64,
        ..inputs
    };
    let cfg = TraceConfig::build(&inputs).unwrap();
    let mut enc = Encoder::new(&cfg, Vec::new()).unwrap();
    for r in recs {
        enc.push(r).unwrap();
    }
    let packets = enc.finish().unwrap();
    // Packets are given one at a time (no framing), to the specification's decoder.
    let o = DecoderOptions::new(cfg.params, cfg.options, cfg.framing, IsaConfig::rv64());
    let mut dec = Decoder::with_options(img, o);
    let mut w = PcWriter::new(img, Vec::new());
    let mut elements = Vec::new();
    let mut sink = |e: &FlowElement| {
        if !matches!(e, FlowElement::Range { .. }) {
            elements.push(e.clone());
        }
        w.element(e);
    };
    for (k, p) in packets.iter().enumerate() {
        dec.packet(k as u64, p, &mut sink);
    }
    dec.finish(packets.len() as u64, &mut sink);
    let pcs = parse_pcs(&w.finish().unwrap());
    assert_eq!(dec.stats.errors, 0, "{elements:?}");
    Out {
        packets,
        pcs,
        elements,
    }
}

fn retired(recs: &[Record]) -> Vec<u64> {
    recs.iter()
        .filter(|r| r.iretire > 0)
        .map(|r| r.iaddr)
        .collect()
}

/// `payload.adoc` `sec:updiscon`: opcode A at looplabel-4, B at looplabel, C at looplabel+4,
/// a JALR back to looplabel; the handler H.
///
///     0: auipc t0, 0        (t0 = BASE)
///     1: A: nop
///     2: B: nop            <- looplabel
///     3: C: nop
///     4: jalr x0, 8(t0)     -> looplabel
///     5..7: nop
///     8: H: nop (handler)
fn loop_program() -> Image {
    image(&[
        auipc(5, 0),
        nop(),
        nop(),
        nop(),
        jalr(0, 5, 8),
        nop(),
        nop(),
        nop(),
        nop(),
        nop(),
    ])
}

fn jr() -> Itype {
    Itype::UninferableJump
}

#[test]
fn looplabel_case_1_second_iteration_reported_then_more_packets() {
    // Two loop iterations then a third partial one: looplabel is reported after each JALR with
    // updiscon == notify, and the following packet is a format 1/2.
    let img = loop_program();
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
    let o = run(&img, &recs, ConfigInputs::default());
    assert_eq!(o.pcs, retired(&recs));
    let f2: Vec<_> = o
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

#[test]
fn looplabel_case_2_exception_in_second_iteration() {
    // The exception at looplabel+4 in the second iteration: looplabel is reported with
    // updiscon != notify and the next packet is a format 3; the decoder must go round the loop.
    let img = loop_program();
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
    let o = run(&img, &recs, ConfigInputs::default());
    assert_eq!(o.pcs, retired(&recs));
    let p = &TraceConfig::build(&ConfigInputs {
        xlen_bits: 64,
        ..ConfigInputs::default()
    })
    .unwrap()
    .params;
    let t = o
        .packets
        .iter()
        .find_map(|p| match p {
            TeInst::Addr(t) => Some(*t),
            _ => None,
        })
        .unwrap();
    assert!(t.updiscon_flag() && !t.notify_flag(p));
    assert!(o.elements.iter().any(|e| matches!(
        e,
        FlowElement::Trap { cause: Some(2), epc: Some(a), handler: Some(h), .. } if *a == at(3) && *h == at(8)
    )));
}

#[test]
fn looplabel_case_3_exception_in_first_iteration() {
    // The exception right after the first execution of looplabel: reported with
    // updiscon == notify, next packet a format 3; the decoder stops at the first looplabel.
    let img = loop_program();
    let recs = [
        ins(0, Itype::None),
        ins(1, Itype::None),
        ins(2, Itype::None),
        trap(3, false, 2),
        ins(8, Itype::None),
        ins(9, Itype::None),
    ];
    let o = run(&img, &recs, ConfigInputs::default());
    assert_eq!(o.pcs, retired(&recs));
    let t = o
        .packets
        .iter()
        .find_map(|p| match p {
            TeInst::Addr(t) => Some(*t),
            _ => None,
        })
        .unwrap();
    assert!(!t.updiscon_flag());
}

#[test]
fn trace_ends_at_looplabel_in_the_second_iteration() {
    // payload.adoc sec:qual-status: tracing stops right after the JALR's target: ended_ntr.
    let img = loop_program();
    let recs = [
        ins(0, Itype::None),
        ins(1, Itype::None),
        ins(2, Itype::None),
        ins(3, Itype::None),
        ins(4, jr()),
        ins(2, Itype::None),
    ];
    let o = run(&img, &recs, ConfigInputs::default());
    assert_eq!(o.pcs, retired(&recs));
    assert!(matches!(
        o.packets.last(),
        Some(TeInst::Support(Support {
            qual_status: rvtrace_etrace::codec::QualStatus::EndedNtr,
            ..
        }))
    ));
    // In the first iteration instead: ended_rep.
    let o = run(&img, &recs[..3], ConfigInputs::default());
    assert_eq!(o.pcs, retired(&recs[..3]));
    assert!(matches!(
        o.packets.last(),
        Some(TeInst::Support(Support {
            qual_status: rvtrace_etrace::codec::QualStatus::EndedRep,
            ..
        }))
    ));
}

#[test]
fn exception_on_the_first_traced_instruction() {
    // v2.0 sec:thaddr: format 3 subformat 1 with thaddr = 0 and address = EPC, then a format 3
    // subformat 0 with the handler.
    let img = loop_program();
    let recs = [trap(3, false, 2), ins(8, Itype::None), ins(9, Itype::None)];
    let o = run(&img, &recs, ConfigInputs::default());
    assert_eq!(o.pcs, retired(&recs));
    let kinds: Vec<&str> = o.packets.iter().map(|p| p.kind()).collect();
    assert_eq!(&kinds[..3], ["F3S3", "F3S1", "F3S0"]);
    assert!(matches!(
        o.packets[1],
        TeInst::Trap { thaddr: false, address: Some(a), .. } if a << 1 == at(3)
    ));
    assert!(o.elements.iter().any(|e| matches!(
        e,
        FlowElement::Trap { epc: Some(a), handler: Some(h), .. } if *a == at(3) && *h == at(8)
    )));
}

#[test]
fn exception_at_the_target_of_an_uninferable_jump() {
    // The JALR's target faults: subformat 1 with thaddr = 0 carries the EPC, then subformat 0
    // the handler (v2.0; the reference flow's fragment "Illegal Opcode test").
    let img = loop_program();
    let recs = [
        ins(0, Itype::None),
        ins(1, Itype::None),
        ins(2, Itype::None),
        ins(3, Itype::None),
        ins(4, jr()),
        trap(2, false, 2),
        ins(8, Itype::None),
    ];
    let o = run(&img, &recs, ConfigInputs::default());
    assert_eq!(o.pcs, retired(&recs));
    assert!(o.packets.iter().any(
        |p| matches!(p, TeInst::Trap { thaddr: false, address: Some(a), .. } if a << 1 == at(2))
    ));
    assert!(o.elements.iter().any(|e| matches!(
        e,
        FlowElement::Trap { epc: Some(a), handler: Some(h), .. } if *a == at(2) && *h == at(8)
    )));
}

#[test]
fn implicit_exception_omits_a_known_handler() {
    // Two interrupts with the same cause and handler: the first reports the handler (thaddr = 0
    // then a sync), the second omits it.
    let img = loop_program();
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
    let o = run(
        &img,
        &recs,
        ConfigInputs {
            implicit_exception: true,
            ..ConfigInputs::default()
        },
    );
    assert_eq!(o.pcs, retired(&recs));
    let traps: Vec<_> = o
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

/// Recursion: `f` calls itself while a0 != 0, then returns through X at every level.
///
///     0: jal ra, f          (main)
///     1: nop
///     2: nop
///     3: nop
///     4: f: beq a0, x0, X
///     5: addi a0, a0, -1
///     6: jal ra, f
///     7: X: nop
///     8: jalr x0, 0(ra)     (ret)
///     9: H: nop
fn recursion() -> (Image, Vec<Record>) {
    let img = image(&[
        jal(1, 16),
        nop(),
        nop(),
        nop(),
        beq(10, 0, 12),
        addi(10, 10, -1),
        jal(1, -8),
        nop(),
        jalr(0, 1, 0),
        nop(),
        nop(),
    ]);
    let mut recs = vec![ins(0, Itype::InferableCall)];
    // Depth 1 and 2: branch not taken, recurse.
    for _ in 0..2 {
        recs.push(ins(4, Itype::NonTakenBranch));
        recs.push(ins(5, Itype::None));
        recs.push(ins(6, Itype::InferableCall));
    }
    // Depth 3: branch taken to X, then unwind.
    recs.push(ins(4, Itype::TakenBranch));
    recs.push(ins(7, Itype::None));
    recs.push(ins(8, Itype::Return));
    recs.push(ins(7, Itype::None));
    (img, recs)
}

#[test]
fn irdepth_picks_the_right_level_of_recursion() {
    // An interrupt right after X at depth 2 (X at depth 3 came first, with only a return in
    // between): the packet before the trap reports X with the stack depth (sec:irxx), and the
    // decoder stops at the second X, not the first.
    let (img, mut recs) = recursion();
    recs.push(trap(8, true, 7));
    recs.push(ins(9, Itype::None));
    recs.push(ins(10, Itype::None));
    for inputs in [
        ConfigInputs {
            implicit_return: true,
            ..ConfigInputs::default()
        },
        ConfigInputs {
            implicit_return: true,
            return_stack: Some(4),
            ..ConfigInputs::default()
        },
    ] {
        let o = run(&img, &recs, inputs);
        assert_eq!(o.pcs, retired(&recs));
        let t = o
            .packets
            .iter()
            .find_map(|p| p.tail().copied())
            .expect("an address packet");
        assert!(t.irreport_flag(), "irdepth reported");
        assert_eq!(t.irdepth, 2);
    }
}

#[test]
fn implicit_returns_unwind_recursion() {
    let (img, mut recs) = recursion();
    recs.push(ins(8, Itype::Return));
    recs.push(ins(7, Itype::None));
    recs.push(ins(8, Itype::Return));
    recs.push(ins(1, Itype::None));
    recs.push(ins(2, Itype::None));
    let plain = run(&img, &recs, ConfigInputs::default());
    assert_eq!(plain.pcs, retired(&recs));
    let ir = run(
        &img,
        &recs,
        ConfigInputs {
            implicit_return: true,
            ..ConfigInputs::default()
        },
    );
    assert_eq!(ir.pcs, retired(&recs));
    // Three returns reported without implicit return, none with it.
    let addr_packets = |o: &Out| o.packets.iter().filter(|p| p.tail().is_some()).count();
    assert_eq!(addr_packets(&plain), 4);
    assert_eq!(addr_packets(&ir), 1);
}

#[test]
fn sequentially_inferable_jump() {
    // auipc t0, 0; jalr ra, 16(t0) (a call whose target the decoder can compute); the callee
    // returns through ra.
    //     0: auipc t0, 0
    //     1: jalr ra, 16(t0)  -> 4
    //     2: nop
    //     3: nop
    //     4: nop
    //     5: jalr x0, 0(ra)   -> 2
    let img = image(&[
        auipc(5, 0),
        jalr(1, 5, 16),
        nop(),
        nop(),
        nop(),
        jalr(0, 1, 0),
    ]);
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
    let plain = run(&img, &recs, ConfigInputs::default());
    let sij = run(
        &img,
        &recs,
        ConfigInputs {
            sijump: true,
            ..ConfigInputs::default()
        },
    );
    assert_eq!(plain.pcs, retired(&recs));
    assert_eq!(sij.pcs, retired(&recs));
    let addr_packets = |o: &Out| o.packets.iter().filter(|p| p.tail().is_some()).count();
    assert_eq!(addr_packets(&plain), 3, "call target, return target, end");
    assert_eq!(addr_packets(&sij), 2, "return target, end");
}

#[test]
fn same_function_called_twice_then_a_trap() {
    // f(); f(); with no branch anywhere, an interrupt right after X in the second call: X
    // occurs twice at the same depth since the last packet. rvtrace's encoder first stops the
    // decoder after the first X (at the second call, see the README), so that it stops at the
    // right X.
    //     0: jal ra, f
    //     1: jal ra, f
    //     2: nop
    //     3: nop
    //     4: f: nop (X)
    //     5: jalr x0, 0(ra)
    //     6: H: nop
    //     7: nop
    let img = image(&[
        jal(1, 16),
        jal(1, 12),
        nop(),
        nop(),
        nop(),
        jalr(0, 1, 0),
        nop(),
        nop(),
    ]);
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
    for inputs in [
        ConfigInputs {
            implicit_return: true,
            ..ConfigInputs::default()
        },
        ConfigInputs {
            implicit_return: true,
            return_stack: Some(4),
            jump_target_cache: Some(4),
            ..ConfigInputs::default()
        },
    ] {
        let o = run(&img, &recs, inputs);
        assert_eq!(o.pcs, retired(&recs));
    }
}

/// The implicit return option sets the regression tests below run with.
fn ir_sets() -> Vec<ConfigInputs> {
    let ir = ConfigInputs {
        implicit_return: true,
        ..ConfigInputs::default()
    };
    vec![
        ir.clone(),
        ConfigInputs {
            return_stack: Some(4),
            ..ir.clone()
        },
        ConfigInputs {
            branch_prediction: Some(64),
            jump_target_cache: Some(16),
            ..ir.clone()
        },
        ConfigInputs {
            return_stack: Some(2),
            resync: Some(2),
            ..ir
        },
    ]
}

fn ir_round_trips(img: &Image, recs: &[Record]) {
    for inputs in ir_sets() {
        let o = run(img, recs, inputs.clone());
        assert_eq!(o.pcs, retired(recs), "{inputs:?}");
    }
}

fn f_packets(o: &Out) -> Vec<rvtrace_etrace::codec::AddrTail> {
    o.packets.iter().filter_map(|p| p.tail().copied()).collect()
}

fn ir_params() -> rvtrace_etrace::params::Params {
    TraceConfig::build(&ConfigInputs {
        xlen_bits: 64,
        implicit_return: true,
        ..ConfigInputs::default()
    })
    .unwrap()
    .params
}

#[test]
fn branch_right_before_a_trap_after_a_return_and_a_call() {
    // f(); g(); where g's first instruction is a branch, taken, and an interrupt comes before
    // the branch target retires. The branch is the last instruction before the trap; nothing
    // before it may be reported with it (the encoder once reported the call to g, made after
    // an inferred return, with the branch counted: "cannot resolve the branch").
    //     0: jal ra, f
    //     1: jal ra, g
    //     2: nop
    //     3: f: nop
    //     4: jalr x0, 0(ra)
    //     5: g: beq a0, x0, 7
    //     6: nop
    //     7: nop
    //     8: H: nop
    //     9: nop
    let img = image(&[
        jal(1, 12),
        jal(1, 16),
        nop(),
        nop(),
        jalr(0, 1, 0),
        beq(10, 0, 8),
        nop(),
        nop(),
        nop(),
        nop(),
    ]);
    let head = [
        ins(0, Itype::InferableCall),
        ins(3, Itype::None),
        ins(4, Itype::Return),
        ins(1, Itype::InferableCall),
        ins(5, Itype::TakenBranch),
    ];
    let mut recs = head.to_vec();
    recs.extend([trap(7, true, 7), ins(8, Itype::None), ins(9, Itype::None)]);
    ir_round_trips(&img, &recs);
    // The same with the branch the last traced instruction.
    ir_round_trips(&img, &head);
}

#[test]
fn depth_zero_is_reported() {
    // f() then a jump (tail call) into f at depth 0, and an interrupt right after X: X ran at
    // depth 1 first, so the packet before the trap reports depth 0 (the spec's "if it is
    // non-zero" assumes the decoder cannot have passed the address deeper).
    //     0: jal ra, f
    //     1: jal x0, f
    //     2: nop
    //     3: f: nop (X)
    //     4: jalr x0, 0(ra)
    //     5: H: nop
    //     6: nop
    let img = image(&[
        jal(1, 12),
        jal(0, 8),
        nop(),
        nop(),
        jalr(0, 1, 0),
        nop(),
        nop(),
    ]);
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
    ir_round_trips(&img, &recs);
    let o = run(
        &img,
        &recs,
        ConfigInputs {
            implicit_return: true,
            ..ConfigInputs::default()
        },
    );
    let t = f_packets(&o)[0];
    assert!(t.notify_flag(&ir_params()) && t.irreport_flag() && t.irdepth == 0);
}

#[test]
fn looplabel_continuation_then_a_full_branch_map() {
    // f is called, returns, and is called again through a register: the packet reporting f's
    // entry (the call's target) lets the decoder stop tentatively at f's first entry
    // (sec:updiscon case 1). The next packet is a format 1 with a full branch map and no
    // address; continuing to the second entry, the decoder must not take the call through the
    // register for an "unexpected uninferable discontinuity" of the new packet.
    //     0: jal ra, f
    //     1: auipc t1, 0
    //     2: jalr ra, 16(t1)    -> f
    //     3: beq a0, a0, 3      (31 times: 30 taken, then not taken)
    //     4: nop
    //     5: f: nop
    //     6: jalr x0, 0(ra)
    let img = image(&[
        jal(1, 20),
        auipc(6, 0),
        jalr(1, 6, 16),
        beq(10, 10, 0),
        nop(),
        nop(),
        jalr(0, 1, 0),
    ]);
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
    ir_round_trips(&img, &recs);
    let o = run(
        &img,
        &recs,
        ConfigInputs {
            implicit_return: true,
            ..ConfigInputs::default()
        },
    );
    assert!(o.packets.iter().any(|p| matches!(
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
    // The resync period ends on the record of an exception that retired nothing, with a call
    // on the stack: that record is not an instruction and is never reported as one (the
    // encoder once reported it to bring the decoder to the right depth).
    //     0: jal ra, f
    //     1: nop
    //     2: f: nop
    //     3: nop
    //     4: (illegal instruction)
    //     5: H: nop
    //     6: nop
    let img = image(&[jal(1, 8), nop(), nop(), nop(), 0, nop(), nop()]);
    let recs = [
        ins(0, Itype::InferableCall),
        ins(2, Itype::None),
        ins(3, Itype::None),
        trap(4, false, 2),
        ins(5, Itype::None),
        ins(6, Itype::None),
    ];
    ir_round_trips(&img, &recs);
    for resync in 1..4 {
        let o = run(
            &img,
            &recs,
            ConfigInputs {
                implicit_return: true,
                resync: Some(resync),
                ..ConfigInputs::default()
            },
        );
        assert_eq!(o.pcs, retired(&recs), "--resync {resync}");
    }
}

#[test]
fn return_failing_its_prediction_after_the_same_return_inferred() {
    // f(); f(); the second f returns elsewhere (X). The same return instruction ran before at
    // the same depth and was inferred, so a packet stopping the decoder at the failing return
    // would stop at the first one: the encoder stops it at the second call instead, then
    // reports X with irreport and the depth of the failing return.
    //     0: jal ra, f
    //     1: jal ra, f
    //     2: nop
    //     3: f: nop
    //     4: jalr x0, 0(ra)
    //     5: X: nop
    //     6: nop
    let img = image(&[
        jal(1, 12),
        jal(1, 8),
        nop(),
        nop(),
        jalr(0, 1, 0),
        nop(),
        nop(),
    ]);
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
    ir_round_trips(&img, &recs);
    let o = run(
        &img,
        &recs,
        ConfigInputs {
            implicit_return: true,
            return_stack: Some(4),
            ..ConfigInputs::default()
        },
    );
    let p = ir_params();
    let f = f_packets(&o);
    assert!(f
        .iter()
        .any(|t| !t.notify_flag(&p) && t.irreport_flag() && t.irdepth == 1));
}

#[test]
fn return_failing_its_prediction_with_nothing_unique_before_it() {
    // A loop of inferable jumps around a call: every position between the inferred return and
    // the one that fails its prediction ran before at the same depth. The encoder then stops
    // the decoder at each occurrence in turn (the first return, then the second).
    //     0: jal x0, 2
    //     1: jal ra, f
    //     2: nop
    //     3: jal x0, 1
    //     4: f: nop
    //     5: jalr x0, 0(ra)
    //     6: X: nop
    //     7: nop
    let img = image(&[
        jal(0, 8),
        jal(1, 12),
        nop(),
        jal(0, -8),
        nop(),
        jalr(0, 1, 0),
        nop(),
        nop(),
    ]);
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
    ir_round_trips(&img, &recs);
}

#[test]
fn resync_reaches_the_right_occurrence() {
    // A resync falls due while f runs for the second time, at depth 0 after a jump into it (it
    // ran at depth 1 before): the format 3 must not be taken for the first entry. The encoder
    // reports the instruction before it first.
    //     0: auipc t1, 0
    //     1: jalr x0, 8(t1)     -> 2
    //     2: jal ra, f
    //     3: jal x0, f
    //     4: nop
    //     5: f: nop
    //     6: nop
    //     7: jalr x0, 0(ra)
    let img = image(&[
        auipc(6, 0),
        jalr(0, 6, 8),
        jal(1, 12),
        jal(0, 8),
        nop(),
        nop(),
        nop(),
        jalr(0, 1, 0),
    ]);
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
    ir_round_trips(&img, &recs);
    let o = run(
        &img,
        &recs,
        ConfigInputs {
            implicit_return: true,
            resync: Some(1),
            ..ConfigInputs::default()
        },
    );
    assert_eq!(o.pcs, retired(&recs));
    assert!(o
        .packets
        .iter()
        .any(|p| matches!(p, TeInst::Start { address, .. } if address << 1 == at(5))));
}

#[test]
fn same_function_called_twice_while_counting_predicted_branches() {
    // 32 branches predicted correctly (format 0 subformat 0 counts them), then f(); f(); and
    // an interrupt right after X in the second call: the packet that first stops the decoder
    // at the second call carries the branch count.
    //     0..31: beq a0, a1, +8  (not taken)
    //     32: jal ra, f
    //     33: jal ra, f
    //     34: nop
    //     35: nop
    //     36: f: nop (X)
    //     37: jalr x0, 0(ra)
    //     38: H: nop
    //     39: nop
    let mut words: Vec<u32> = (0..32).map(|_| beq(10, 11, 8)).collect();
    words.extend([
        jal(1, 16),
        jal(1, 12),
        nop(),
        nop(),
        nop(),
        jalr(0, 1, 0),
        nop(),
        nop(),
    ]);
    let img = image(&words);
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
    ir_round_trips(&img, &recs);
    let o = run(
        &img,
        &recs,
        ConfigInputs {
            implicit_return: true,
            branch_prediction: Some(64),
            ..ConfigInputs::default()
        },
    );
    assert!(o.packets.iter().any(|p| matches!(
        p,
        TeInst::BranchCount {
            branch_fmt: 2,
            tail: Some(_),
            ..
        }
    )));
}
