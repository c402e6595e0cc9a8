//! An N-Trace decoded to the addresses of the instructions it traces, one per line (what
//! `rvtrace decode ntrace TRACE --elf ELF --pcs FILE` writes).
//! `cargo run --release -p rvtrace-ntrace --example decode_pcs -- [TRACE ELF]`; without
//! arguments it runs `programs/elf/recurse-rv64gc.elf` on the hart model, encodes the run with
//! the encoder's defaults and decodes that.
use rvtrace_flow::{decode_all, for_each_pc, FlowElement};
use rvtrace_ntrace::decoder::Decoder;
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
/// trace does not carry (here a 3-bit SRC field, without which the trace does not decode).
#[test]
fn trace_and_sidecar_from_the_command_line() {
    use rvtrace_ntrace::insn::LinkRule;
    use rvtrace_ntrace::meta::{sidecar_path, Meta};
    use rvtrace_ntrace::options::EncoderConfig;
    let run = rvtrace_testkit::run_test_program(common::PROGRAM, 4);
    // What `rvtrace encode ntrace --src-bits 3 --src-id 5` encodes with.
    let mut cfg = EncoderConfig::new(rvtrace_isa::Xlen::Rv64);
    cfg.codec.src_bits = 3;
    cfg.src_id = 5;
    let dir = std::env::temp_dir().join(format!("rvtrace-ntrace-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.nex");
    std::fs::write(&trace, rvtrace_ntrace::encoder::encode(cfg, &run.records).0).unwrap();
    let elf = rvtrace_testkit::test_program(common::PROGRAM);
    let args = [trace.display().to_string(), elf.display().to_string()];
    // Without the sidecar the defaults do not fit the trace.
    assert_ne!(pcs(&common::input(&args, None).unwrap()).1, 0);
    let meta = Meta::from_encoder(&cfg, Some(LinkRule::Spec));
    std::fs::write(sidecar_path(&trace), meta.to_text()).unwrap();
    let got = pcs(&common::input(&args, None).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(got, (run.pcs, 0));
}
