//! Hand-written cases for the corner cases `payload.adoc` describes: the *updiscon* "looplabel"
//! scenarios (`sec:updiscon`), *irdepth* in recursive code (`sec:irxx`), an exception on the first
//! traced instruction and at the target of an uninferable jump (`sec:thaddr`), sequentially
//! inferable jumps (`sec:si-jump`) and implicit exception mode. Each builds a tiny program, the
//! ingress records its execution gives, encodes them with rvtrace's encoder and checks both the
//! packets and that the decoder rebuilds exactly the retired instructions.

use rvtrace_etrace::code::Code;
use rvtrace_etrace::codec::te_inst::Support;
use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::decoder::Decoder;
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
    let code = Code::new(img, IsaConfig::rv64());
    let mut dec = Decoder::new(&code, img, cfg.params, cfg.options);
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
    // occurs twice at the same depth since the last packet. rvtrace's encoder first reports the
    // second call (see the README), so the decoder stops at the right X.
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
