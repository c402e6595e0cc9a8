//! An E-Trace decoded to the addresses of the instructions it traces, one per line (what
//! `rvtrace decode etrace TRACE --elf ELF --pcs FILE` writes).
//! `cargo run --release -p rvtrace-etrace --example decode_pcs -- [TRACE ELF]`; without
//! arguments it runs `programs/elf/recurse-rv64gc.elf` on the hart model, encodes the run with
//! the encoder's defaults and decodes that.
use rvtrace_etrace::decoder::Decoder;
use rvtrace_flow::{decode_all, for_each_pc, FlowElement};
use std::io::Write;

mod common;

/// The PCs the trace gives, and the decode's count of losses.
fn pcs(input: &common::Input) -> (Vec<u64>, u64) {
    let mut decoder = Decoder::new(&input.image, input.cfg);
    let mut pcs = Vec::new();
    let stats = decode_all(&mut decoder, &input.bytes, &mut |e: &FlowElement| {
        if let FlowElement::Range { start, count, .. } = e {
            for_each_pc(&input.image, *start, *count, |pc| pcs.push(pc)).expect("in the program");
        }
    });
    (pcs, stats.losses)
}

fn main() -> common::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let input = common::input(&args, None)?;
    let (pcs, losses) = pcs(&input);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for pc in &pcs {
        writeln!(out, "{pc:#x}")?;
    }
    eprintln!("{} instructions, {losses} losses", pcs.len());
    if let Some(run) = &input.pcs {
        eprintln!("the same PCs as the program's run: {}", pcs == *run);
    }
    Ok(())
}

/// The default trace decodes to the PCs the program executed.
#[test]
fn default_trace_gives_the_run() {
    let input = common::input(&[], None).unwrap();
    assert_eq!(pcs(&input), (input.pcs.clone().unwrap(), 0));
}

/// A trace and its sidecar named on the command line: the sidecar gives the settings the
/// trace does not carry (here a return address stack and a 4-bit srcID field, without which
/// the trace does not decode).
#[test]
fn trace_and_sidecar_from_the_command_line() {
    use rvtrace_etrace::options::Options;
    let run = rvtrace_testkit::run_test_program(common::PROGRAM, 4);
    let options = Options {
        return_stack: Some(8),
        srcid_bits: Some(4),
        ..Options::default()
    };
    // What `rvtrace encode etrace --return-stack 8 --src-bits 4` encodes with.
    let cfg = options.config(64, None).unwrap();
    let dir = std::env::temp_dir().join(format!("rvtrace-etrace-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.te");
    let bytes = rvtrace_etrace::encoder::encode(&cfg, &run.records).unwrap();
    std::fs::write(&trace, bytes).unwrap();
    let elf = rvtrace_testkit::test_program(common::PROGRAM);
    let args = [trace.display().to_string(), elf.display().to_string()];
    // Without the sidecar the defaults do not fit the trace.
    assert_ne!(pcs(&common::input(&args, None).unwrap()).1, 0);
    options.for_sidecar(&cfg).write(&trace).unwrap();
    let got = pcs(&common::input(&args, None).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(got, (run.pcs, 0));
}
