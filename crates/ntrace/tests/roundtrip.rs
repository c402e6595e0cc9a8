//! decode(encode(run)) == the retired PC list, for every test program (traps, interrupts and
//! delegation included) in every encoder option combination, with ranges as the flow's rules say
//! (`RangeContract`: classes, branch outcomes); bits per instruction per configuration are printed (`cargo test -p rvtrace-ntrace --test integration roundtrip:: -- --nocapture`).

use rvtrace_flow::{FlowElement, FlowSink, PcWriter};
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::{CfClass, IsaConfig, Xlen};
use rvtrace_ntrace::decoder::decode;
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::insn::LinkRule;
use rvtrace_ntrace::options::{CallStack, EncoderConfig, Mode, Spec};
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

/// The class of the instruction at `pc`.
fn class_at(image: &rvtrace_image::Image, isa: &IsaConfig, pc: u64) -> CfClass {
    image
        .fetch(pc)
        .map_or(CfClass::None, |b| rvtrace_isa::classify(isa, b).class)
}

/// The encoder's test for a trap taken by `ecall`/`ebreak`/`c.ebreak` (`Record::ends_in_env_trap`:
/// an exception after retired instructions, cause 3 or 8-11), whose I-CNT leaves that
/// instruction out in N-Trace 1.0, is exactly "the block's last instruction is one of them and
/// it trapped" on the hart model's records.
fn check_env_traps(name: &str, image: &rvtrace_image::Image, records: &[Record]) {
    let isa = IsaConfig::new(image.files()[0].xlen);
    for (k, r) in records.iter().enumerate() {
        let env = r.itype == Itype::Exception
            && r.iretire > 0
            && class_at(image, &isa, r.last_iaddr()) == CfClass::EnvTrap;
        assert_eq!(r.ends_in_env_trap(), env, "{name}: record {k} {r:?}");
    }
}

/// decode(encode(run)) == run for every configuration; returns the trace size of each.
fn round_trip(name: &str, run: &ProgramRun) -> Vec<u64> {
    let xlen = run.image.files()[0].xlen;
    let records: &[Record] = &run.records;
    check_env_traps(name, &run.image, records);
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

/// B-TYPE 1 (exception or interrupt, `--btype-compat`) in N-Trace 1.0: a trap whose walk ends
/// right before an `ecall`/`ebreak` is that instruction's exception, or an interrupt taken just
/// before it; the decoder takes it for the exception and reports the instruction as executed.
/// So an interrupt right before an `ecall` adds that `ecall` once (it runs again after the
/// handler returns to it); nothing else differs from the run (sdeleg has such interrupts). With
/// B-TYPE 2/3 and with rc7 (the `ecall` in I-CNT) the round trip is exact (`roundtrip` configs).
#[test]
fn btype_compat_in_1_0() {
    let programs = traceable_programs();
    let extra = rvtrace_testkit::par::par_map(&programs, |elf| {
        let name = elf.file_stem().unwrap().to_str().unwrap();
        let run = run_program(elf, &format!("elf/{name}.elf"), 4);
        let xlen = run.image.files()[0].xlen;
        let isa = IsaConfig::new(xlen);
        // Interrupts taken right before an `ecall`/`ebreak`: where they were taken.
        let interrupted: Vec<u64> = run
            .records
            .iter()
            .filter(|r| r.itype == Itype::Interrupt)
            .map(|r| {
                if r.iretire == 0 {
                    r.iaddr
                } else {
                    r.next_iaddr()
                }
            })
            .filter(|&pc| class_at(&run.image, &isa, pc) == CfClass::EnvTrap)
            .collect();
        let cfg = EncoderConfig {
            mode: Mode::Btm,
            btype_compat: true,
            ..EncoderConfig::new(xlen)
        };
        assert_eq!(cfg.spec, Spec::V1_0);
        let (out, _) = encode(cfg, &run.records);
        let got = decode_pcs(name, &run.image, &cfg, &out);
        // The decoded list is the run's with some of `interrupted` inserted.
        let (mut i, mut j, mut added) = (0, 0, Vec::new());
        while i < got.len() {
            if got.get(i) == run.pcs.get(j) {
                j += 1;
            } else {
                assert!(
                    interrupted.contains(&got[i]),
                    "{name}: at {i}: {:#x}",
                    got[i]
                );
                added.push(got[i]);
            }
            i += 1;
        }
        assert_eq!(j, run.pcs.len(), "{name}");
        assert_eq!(added.len(), interrupted.len(), "{name}: {added:x?}");
        added.len()
    });
    assert!(extra.iter().sum::<usize>() > 0);
}
