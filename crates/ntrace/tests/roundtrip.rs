//! decode(encode(run)) == the retired PC list, for every test program (traps, interrupts and
//! delegation included) in every encoder option combination, with ranges as the flow's rules say
//! (`RangeContract`: classes, branch outcomes); bits per instruction per configuration are printed (`cargo test -p rvtrace-ntrace --test integration roundtrip:: -- --nocapture`).

use rvtrace_flow::{FlowElement, FlowSink, PcWriter};
use rvtrace_ingress::Record;
use rvtrace_isa::Xlen;
use rvtrace_ntrace::decoder::decode;
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::insn::LinkRule;
use rvtrace_ntrace::options::{CallStack, EncoderConfig};
use rvtrace_testkit::flow::RangeContract;
use rvtrace_testkit::randprog::{random_program, seeds};
use rvtrace_testkit::{
    assert_pcs_eq, parse_pcs, run_elf_bytes, run_program, traceable_programs, ProgramRun,
};

use crate::common::configs;
use configs::{configs, decoder_config};

fn decode_pcs(
    what: &str,
    image: &rvtrace_image::Image,
    cfg: &EncoderConfig,
    bytes: &[u8],
) -> Vec<u64> {
    let mut w = PcWriter::new(image, Vec::new());
    let mut losses = Vec::new();
    let dcfg = decoder_config(cfg);
    let mut contract = RangeContract::new(image, dcfg.isa);
    // NexRv's link rules classify calls and returns their own way.
    contract.classes = dcfg.link == LinkRule::Spec;
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Loss { .. } = e {
            losses.push(e.clone());
        }
        w.element(e);
        contract.element(e);
    };
    decode(image, dcfg, bytes, &mut sink);
    assert!(losses.is_empty(), "{what}: {losses:?}");
    contract.assert_ok(what);
    parse_pcs(&w.finish().unwrap())
}

/// Whether every return goes back to the instruction after its call (an unbounded stack).
fn well_behaved(records: &[Record]) -> bool {
    let mut stack = Vec::new();
    let mut expect: Option<Option<u64>> = None;
    for r in records {
        if let Some(e) = expect.take() {
            if e.is_some_and(|a| a != r.iaddr) {
                return false;
            }
        }
        if r.iretire == 0 {
            continue;
        }
        let code = r.itype.code();
        if code == 12 || code == 13 {
            expect = Some(stack.pop());
        }
        if code == 8 || code == 9 || code == 12 {
            stack.push(r.next_iaddr());
        }
    }
    true
}

/// decode(encode(run)) == run for every configuration; returns the trace size of each.
fn round_trip(name: &str, run: &ProgramRun) -> Vec<u64> {
    let xlen = run.image.files()[0].xlen;
    let records: &[Record] = &run.records;
    let behaved = well_behaved(records);
    let mut bytes = Vec::new();
    for (cname, cfg) in configs(xlen) {
        if matches!(cfg.call_stack, CallStack::Counter { .. }) && !behaved {
            // N-Trace 9.2: the counting mode cannot trace a program whose returns do not
            // go back to their call (mixed.S jumps through a table with `c.jr t0`).
            println!("{name}: {cname} skipped (returns that do not match calls)");
            bytes.push(0);
            continue;
        }
        let (out, st) = encode(cfg, records);
        assert_eq!(st.bytes, out.len() as u64);
        let got = decode_pcs(&format!("{name} {cname}"), &run.image, &cfg, &out);
        assert_pcs_eq(&format!("{name} {cname}"), "decoded", &got, "run", &run.pcs);
        bytes.push(out.len() as u64);
    }
    bytes
}

#[test]
fn round_trip_every_program_every_configuration() {
    let programs = traceable_programs();
    assert!(programs.len() >= 20);
    let names: Vec<&str> = configs(Xlen::Rv64).iter().map(|c| c.0).collect();
    let mut bytes = vec![0u64; names.len()];
    let mut insns = 0u64;
    let outs = rvtrace_testkit::par::par_map(&programs, |elf| {
        let name = elf.file_stem().unwrap().to_str().unwrap();
        let run = run_program(elf, &format!("elf/{name}.elf"), 4);
        (run.pcs.len() as u64, round_trip(name, &run))
    });
    for (n, out) in outs {
        insns += n;
        for (k, n) in out.iter().enumerate() {
            bytes[k] += n;
        }
    }
    println!(
        "bits/instruction over {} programs, {insns} instructions:",
        programs.len()
    );
    for (k, n) in names.iter().enumerate() {
        println!("  {n:<24} {:.3}", bytes[k] as f64 * 8.0 / insns as f64);
    }
}

/// Random programs (`rvtrace_testkit::randprog`: calls and returns of every kind, recursion
/// deeper than any call stack, traps, timer interrupts, U-mode) round trip in every
/// configuration. `RVTRACE_RANDOM_SEEDS` runs more.
#[test]
fn round_trip_random_programs() {
    let seeds: Vec<u64> = seeds(60).collect();
    rvtrace_testkit::par::par_map(&seeds, |&seed| {
        let p = random_program(seed);
        let run = run_elf_bytes(&p.elf, 4);
        assert_eq!(run.stop, rvtrace_testkit::Stop::Exit(0), "seed {seed}");
        round_trip(&format!("random program {seed} ({:?})", p.shape), &run);
    });
}
