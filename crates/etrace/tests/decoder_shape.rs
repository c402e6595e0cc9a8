//! The E-Trace decoder as a `rvtrace_flow::TraceDecoder`: made from its options and the image
//! alone, it gives the same elements however the byte stream is cut, and its counts agree with
//! the run that was traced.

use rvtrace_etrace::config::{ConfigInputs, Framing, Preset, TraceConfig};
use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
use rvtrace_etrace::encoder::{post_iss_itype, Encoder, FrameWriter};
use rvtrace_flow::{decode_all, FlowElement, TraceDecoder};
use rvtrace_image::Image;
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::IsaConfig;
use rvtrace_testkit::flow::{check_stopped, pcs_of, Stopper};
use rvtrace_testkit::{assert_pcs_eq, minimal_elf, run_test_program};

fn encode(cfg: &TraceConfig, image: &Image, records: &[Record]) -> Vec<u8> {
    let mut enc = Encoder::new(cfg, FrameWriter::new(Vec::new(), cfg)).unwrap();
    for r in records {
        if cfg.preset == Preset::Reference {
            enc.push(&post_iss_itype(image, r)).unwrap();
        } else {
            enc.push(r).unwrap();
        }
    }
    enc.finish().unwrap().into_inner()
}

#[test]
fn pushed_in_pieces_equals_whole_and_the_run() {
    let run = run_test_program("recurse-rv64gc", 4);
    for inputs in [
        ConfigInputs::default(),
        ConfigInputs {
            implicit_return: true,
            return_stack: Some(8),
            ..ConfigInputs::default()
        },
        // The reference flow's te_inst_raw, decoded with its quirks (a preset, not fields).
        ConfigInputs {
            preset: Preset::Reference,
            implicit_return: true,
            ..ConfigInputs::default()
        },
    ] {
        let cfg = TraceConfig::build(&ConfigInputs {
            xlen_bits: 64,
            itype_width: Some(4),
            ..inputs
        })
        .unwrap();
        let bytes = encode(&cfg, &run.image, &run.records);
        let opts = DecoderConfig::from_config(&cfg, IsaConfig::rv64());
        assert_eq!(
            opts.keep_stack_across_syncs && opts.reference_x5_jumps,
            cfg.preset == Preset::Reference
        );
        assert_eq!(cfg.framing == Framing::Raw, cfg.preset == Preset::Reference);

        let mut whole = Vec::new();
        let mut dec = Decoder::new(&run.image, opts);
        let st = decode_all(&mut dec, &bytes, &mut whole);
        assert_eq!(st.bytes, bytes.len() as u64);
        assert_eq!(st.losses, 0, "{:?}", cfg.preset);
        assert_eq!(st.instructions, run.pcs.len() as u64);
        assert_eq!(st.messages, dec.protocol_stats().packets);
        assert!(st.messages > 0);
        // The encoder ends with a support packet saying that tracing ended: the End is there.
        assert!(
            matches!(whole.last(), Some(FlowElement::End { offset }) if *offset < bytes.len() as u64)
        );
        let got = pcs_of(&run.image, &whole);
        assert_pcs_eq("whole", "decoded", &got, "run", &run.pcs);

        // A sink that has what it needs stops the decode, pushed whole or read in pieces.
        for after in [1, 50] {
            let mut stop = Stopper::new(after);
            let st = decode_all(&mut Decoder::new(&run.image, opts), &bytes, &mut stop);
            check_stopped(&whole, &stop);
            assert!(st.instructions < run.pcs.len() as u64);
            let mut stop = Stopper::new(after);
            rvtrace_flow::decode_read(&mut Decoder::new(&run.image, opts), &bytes[..], &mut stop)
                .unwrap();
            check_stopped(&whole, &stop);
        }
        // Pieces of 1 byte up to more than a window: the same elements, the same counts.
        for piece in [1usize, 7, 300, 70_000] {
            let mut cut = Vec::new();
            let mut dec = Decoder::new(&run.image, opts);
            for c in bytes.chunks(piece) {
                dec.push(c, &mut cut);
            }
            assert_eq!(
                TraceDecoder::finish(&mut dec, &mut cut),
                st,
                "pieces of {piece}"
            );
            assert_eq!(cut, whole, "pieces of {piece}");
        }
    }
}

/// `post-iss` calls `c.jr x5` (0x8282: c.jr, funct4 1000, rs1 = 5) an other uninferable jump, and
/// `c.jr x1` (0x8082, `ret`) a return; other records pass unchanged.
#[test]
fn post_iss_reclassifies_c_jr_x5_only() {
    let mut image = Image::new();
    let code = [0x82, 0x82, 0x82, 0x80, 0x82, 0x82];
    image
        .load_bytes("t", &minimal_elf(true, 0x1000, &code))
        .unwrap();
    let rec = |iaddr, itype| Record {
        iaddr,
        iretire: 1,
        ilastsize: 0,
        itype,
        ..Record::default()
    };
    let t = |r: Record| post_iss_itype(&image, &r).itype;
    assert_eq!(t(rec(0x1000, Itype::Return)), Itype::OtherUninferableJump);
    assert_eq!(t(rec(0x1002, Itype::Return)), Itype::Return);
    assert_eq!(t(rec(0x1004, Itype::None)), Itype::None);
    assert_eq!(
        t(Record {
            iretire: 0,
            ..rec(0x1000, Itype::Return)
        }),
        Itype::Return
    );
}

/// `dump` resolves differential addresses from the last absolute one: every address it shows
/// is one the program executed (a wrong base would land elsewhere), and it shows one for every
/// packet with an address.
#[test]
fn dump_resolves_addresses_the_program_executed() {
    let run = run_test_program("recurse-rv64gc", 4);
    let cfg = TraceConfig::build(&ConfigInputs {
        xlen_bits: 64,
        itype_width: Some(4),
        ..ConfigInputs::default()
    })
    .unwrap();
    assert!(!cfg.options.full_address);
    let bytes = encode(&cfg, &run.image, &run.records);
    let mut text = Vec::new();
    let st = rvtrace_etrace::dump::dump(&bytes, &cfg, &Default::default(), &mut text).unwrap();
    assert_eq!(st.errors, 0);
    let text = String::from_utf8(text).unwrap();
    let executed: std::collections::HashSet<u64> = run.pcs.iter().copied().collect();
    let mut differential = 0;
    for line in text.lines() {
        let kind = line.split_whitespace().nth(1).unwrap();
        assert!(!line.contains("-> ?"), "{line}");
        if let Some((_, a)) = line.split_once("-> 0x") {
            let a = u64::from_str_radix(a.trim(), 16).unwrap();
            assert!(executed.contains(&a), "{line}");
            differential += (kind == "F1" || kind == "F2") as u64;
        }
    }
    assert_eq!(st.packets, text.lines().count() as u64);
    assert!(differential > 10, "{text}");
}

/// A privilege change comes before the first instruction that runs at the new privilege (the
/// flow's "from here on"): every decoded instruction's privilege, as the Context elements
/// before it say, is the one the hart retired it in (the ingress records'), across the xRETs
/// and traps of a program that runs in M, S and U.
#[test]
fn context_applies_from_the_instruction_after_it() {
    let run = run_test_program("sdeleg-rv64gc", 4);
    // Each record's instructions (iretire counts half-words), with the privilege they ran in.
    let mut privs: Vec<u8> = Vec::new();
    for r in run.records.iter().filter(|r| r.iretire > 0) {
        let mut pc = r.iaddr;
        loop {
            privs.push(r.priv_);
            if pc >= r.last_iaddr() {
                break;
            }
            pc += rvtrace_flow::insn_len_at(&run.image, pc).unwrap();
        }
    }
    assert_eq!(privs.len(), run.pcs.len());
    assert!(
        privs.contains(&1) && privs.contains(&3),
        "{:?}",
        privs.iter().collect::<std::collections::BTreeSet<_>>()
    );
    let cfg = TraceConfig::build(&ConfigInputs {
        xlen_bits: 64,
        itype_width: Some(4),
        ..ConfigInputs::default()
    })
    .unwrap();
    let bytes = encode(&cfg, &run.image, &run.records);
    let mut elements = Vec::new();
    let mut dec = Decoder::new(
        &run.image,
        DecoderConfig::from_config(&cfg, IsaConfig::rv64()),
    );
    let st = decode_all(&mut dec, &bytes, &mut elements);
    assert_eq!(st.losses, 0);
    let (mut now, mut k, mut changes) = (None, 0usize, 0);
    for e in &elements {
        match e {
            FlowElement::Context { privilege, .. } => {
                changes += (now.is_some() && now != *privilege) as u32;
                now = *privilege;
            }
            FlowElement::Range { start, count, .. } => {
                assert_eq!(run.pcs[k], *start);
                for (j, p) in privs.iter().enumerate().skip(k).take(*count as usize) {
                    assert_eq!(Some(*p), now, "instruction {j} at {:#x}", run.pcs[j]);
                }
                k += *count as usize;
            }
            _ => {}
        }
    }
    assert_eq!(k, run.pcs.len());
    assert!(changes > 2, "{changes}");
}

/// A trap's `epc` in the flow is the hart's or absent, never a guess: after an uninferable jump
/// with `thaddr` = 1 the packet's `address` is the handler, and where the jump went is not in it
/// (payload.adoc "Format 3 thaddr, address and privilege fields"; the reference decoder's
/// `exception_address` would give the handler there).
#[test]
fn trap_epc_is_the_harts_or_absent() {
    let mut absent = 0;
    let mut checked = 0;
    for name in [
        "timer-rv64gc",
        "sdeleg-rv64gc",
        "traps-rv32imac",
        "pmu_overflow-rv64gc",
    ] {
        let run = run_test_program(name, 4);
        // The hart's trap records in order: (interrupt, epc). A trap record retires nothing
        // (its iaddr is the epc) unless an ecall/ebreak retired with it (its last instruction).
        let harts: Vec<(bool, u64)> = run
            .records
            .iter()
            .filter(|r| r.is_trap())
            .map(|r| {
                let epc = if r.retires() { r.last_iaddr() } else { r.iaddr };
                (r.itype == Itype::Interrupt, epc)
            })
            .collect();
        let cfg = TraceConfig::build(&ConfigInputs {
            xlen_bits: run.image.files()[0].xlen.bits() as u8,
            itype_width: Some(4),
            ..ConfigInputs::default()
        })
        .unwrap();
        let bytes = encode(&cfg, &run.image, &run.records);
        let mut elements = Vec::new();
        let mut dec = Decoder::new(
            &run.image,
            DecoderConfig::from_config(&cfg, IsaConfig::new(run.image.files()[0].xlen)),
        );
        assert_eq!(decode_all(&mut dec, &bytes, &mut elements).losses, 0);
        let traps: Vec<(bool, Option<u64>)> = elements
            .iter()
            .filter_map(|e| match e {
                FlowElement::Trap { interrupt, epc, .. } => Some((*interrupt, *epc)),
                _ => None,
            })
            .collect();
        assert_eq!(traps.len(), harts.len(), "{name}: one Trap per trap");
        for (k, ((int, epc), (hint, hepc))) in traps.iter().zip(&harts).enumerate() {
            assert_eq!(int, hint, "{name}: trap {k}");
            match epc {
                Some(e) => {
                    assert_eq!(e, hepc, "{name}: trap {k} epc");
                    checked += 1;
                }
                None => absent += 1,
            }
        }
    }
    assert!(checked > 50, "{checked} epcs checked");
    eprintln!("{checked} epcs equal the hart's, {absent} not in the trace");
}
