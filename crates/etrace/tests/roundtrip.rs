//! `decode(encode(run))` equals the retired-PC list of every test program, for every option set
//! (rvtrace preset). Prints the compression of each option set (bits of payload per instruction).

use rvtrace_etrace::code::Code;
use rvtrace_etrace::codec::EncapConfig;
use rvtrace_etrace::config::{ConfigInputs, Framing, TraceConfig};
use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
use rvtrace_etrace::encoder::{Encoder, FrameWriter};
use rvtrace_flow::{decode_all, FlowElement, FlowSink, PcWriter};
use rvtrace_isa::IsaConfig;
use rvtrace_testkit::flow::RangeContract;
use rvtrace_testkit::randprog::{random_program, seeds};
use rvtrace_testkit::{
    assert_pcs_eq, parse_pcs, run_elf_bytes, run_program, run_test_program, traceable_programs,
    ProgramRun, Stop,
};

use crate::common::option_sets;
use option_sets::option_sets;

fn round_trip(width: u8, sets: &[(&'static str, ConfigInputs)]) -> Vec<(u64, u64)> {
    let per_program = rvtrace_testkit::par::par_map(&traceable_programs(), |elf| {
        let mut totals = vec![(0u64, 0u64); sets.len()];
        let name = elf.file_name().unwrap().to_str().unwrap().to_string();
        let run = run_program(elf, &format!("elf/{name}"), width);
        check_run(&name, &run, width, sets, &mut totals);
        totals
    });
    let mut totals = vec![(0u64, 0u64); sets.len()];
    for t in per_program {
        for (sum, (bits, insns)) in totals.iter_mut().zip(t) {
            sum.0 += bits;
            sum.1 += insns;
        }
    }
    totals
}

/// `decode(encode(run))` == `run.pcs` for every option set; adds (payload bits, records) to
/// `totals`.
fn check_run(
    name: &str,
    run: &ProgramRun,
    width: u8,
    sets: &[(&'static str, ConfigInputs)],
    totals: &mut [(u64, u64)],
) {
    let xlen = run.image.files()[0].xlen;
    let code = Code::new(&run.image, IsaConfig::new(xlen));
    for (k, (label, inputs)) in sets.iter().enumerate() {
        let inputs = ConfigInputs {
            xlen_bits: xlen.bits() as u8,
            itype_width: Some(width),
            ..inputs.clone()
        };
        let cfg = TraceConfig::build(&inputs).unwrap();
        let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
        for r in &run.records {
            enc.push(r).unwrap();
        }
        let w = enc.finish().unwrap();
        totals[k].0 += w.payload_bytes * 8;
        totals[k].1 += run.records.len() as u64;
        let bytes = w.into_inner();
        let o = DecoderConfig::with_layout(
            cfg.params,
            cfg.options,
            Framing::Encap(EncapConfig::PLAIN),
            code.isa,
        );
        let mut dec = Decoder::with_code(&run.image, o, code.clone());
        let mut pcw = PcWriter::new(&run.image, Vec::new());
        let mut losses = Vec::new();
        let mut contract = RangeContract::new(&run.image, code.isa);
        let mut sink = |e: &FlowElement| {
            if let FlowElement::Loss { .. } = e {
                losses.push(e.clone());
            }
            pcw.element(e);
            contract.element(e);
        };
        decode_all(&mut dec, &bytes, &mut sink);
        let got = parse_pcs(&pcw.finish().unwrap());
        let what = format!("{name} itype{width} {label}");
        assert!(losses.is_empty(), "{what}: {losses:?}");
        contract.assert_ok(&what);
        assert_pcs_eq(&what, "decoded", &got, "run", &run.pcs);
    }
}

fn report(width: u8, sets: &[(&'static str, ConfigInputs)], totals: &[(u64, u64)]) {
    for ((label, _), (bits, insns)) in sets.iter().zip(totals) {
        eprintln!(
            "itype{width} {label:<66} {:.3} bits/instr",
            *bits as f64 / *insns as f64
        );
    }
}

#[test]
fn every_option_set_round_trips_itype4() {
    let sets = option_sets();
    let totals = round_trip(4, &sets);
    report(4, &sets, &totals);
}

#[test]
fn option_sets_round_trip_itype3() {
    // 3-bit itype cannot tell calls and returns apart: no implicit return.
    let sets: Vec<_> = option_sets()
        .into_iter()
        .filter(|(_, i)| !i.implicit_return)
        .collect();
    let totals = round_trip(3, &sets);
    report(3, &sets, &totals);
}

/// The reference encoder's implicit return mode (`--preset reference` with
/// `implicit-return=true`) never reports returns; rvtrace's decoder follows such traces with its
/// return stack kept across synchronisation packets, for programs whose returns go back to their
/// call sites.
#[test]
fn reference_preset_implicit_return_traces_decode() {
    use rvtrace_etrace::config::Preset;
    for name in [
        "recurse-rv64gc",
        "fnptr-rv32imac",
        "loops-rv64gc",
        "heap-rv64gc",
        "stdio-rv32imac",
    ] {
        let run = run_test_program(name, 4);
        let xlen = run.image.files()[0].xlen;
        let code = Code::new(&run.image, IsaConfig::new(xlen));
        let cfg = TraceConfig::build(&ConfigInputs {
            preset: Preset::Reference,
            xlen_bits: xlen.bits() as u8,
            ucf: Some("[codec]\nimplicit-return=true\nresync-max=0\n".into()),
            ..ConfigInputs::default()
        })
        .unwrap();
        let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
        for r in &run.records {
            enc.push(r).unwrap();
        }
        let bytes = enc.finish().unwrap().into_inner();
        let o = DecoderConfig {
            keep_stack_across_syncs: true,
            ..DecoderConfig::with_layout(cfg.params, cfg.options, Framing::Raw, code.isa)
        };
        let mut dec = Decoder::with_code(&run.image, o, code.clone());
        let mut pcw = PcWriter::new(&run.image, Vec::new());
        decode_all(&mut dec, &bytes, &mut pcw);
        assert_eq!(dec.stats().errors, 0, "{name}");
        let got = parse_pcs(&pcw.finish().unwrap());
        assert_pcs_eq(name, "decoded", &got, "run", &run.pcs);
    }
}

/// Random programs (`rvtrace_testkit::randprog`: calls and returns of every kind, recursion
/// deeper than any return stack, traps, timer interrupts, U-mode) round trip with every option
/// set, itype 4 and 3. `RVTRACE_RANDOM_SEEDS` runs more.
#[test]
fn random_programs_round_trip() {
    let sets = option_sets();
    let sets3: Vec<_> = sets
        .iter()
        .filter(|(_, i)| !i.implicit_return)
        .cloned()
        .collect();
    let seeds: Vec<u64> = seeds(60).collect();
    rvtrace_testkit::par::par_map(&seeds, |&seed| {
        let mut totals = vec![(0u64, 0u64); sets.len()];
        let mut totals3 = vec![(0u64, 0u64); sets3.len()];
        let p = random_program(seed);
        let name = format!("random program {seed} ({:?})", p.shape);
        let run = run_elf_bytes(&p.elf, 4);
        assert_eq!(run.stop, Stop::Exit(0), "{name}");
        check_run(&name, &run, 4, &sets, &mut totals);
        let run = run_elf_bytes(&p.elf, 3);
        check_run(&name, &run, 3, &sets3, &mut totals3);
    });
}
