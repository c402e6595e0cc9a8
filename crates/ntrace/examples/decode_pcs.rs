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
