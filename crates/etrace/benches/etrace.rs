//! E-Trace encoder and decoder speed in instructions per second, on the benchmark workload
//! (`programs/bench/workload.c`, run on the hart model), for several option sets. Does nothing
//! unless run with `--bench` (`cargo bench -p rvtrace-etrace`). Prints figures, and the
//! compression (payload bits per instruction); asserts that every decode is exact.

use rvtrace_etrace::code::Code;
use rvtrace_etrace::codec::EncapConfig;
use rvtrace_etrace::config::{ConfigInputs, Framing, TraceConfig};
use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
use rvtrace_etrace::encoder::{Encoder, FrameWriter};
use rvtrace_flow::PcWriter;
use rvtrace_flow::{decode_all, FlowElement};
use rvtrace_isa::IsaConfig;
use rvtrace_testkit::bench::figure;
use std::path::Path;
use std::time::Instant;

#[path = "../tests/common/option_sets.rs"]
mod option_sets;

/// A figure key from an option set's label: `--implicit-return --return-stack 16` ->
/// `implicit-return_return-stack_16`.
fn key(label: &str) -> String {
    label
        .replace("--", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("_")
}

/// The option sets whose figures are tracked (labels from the round trip's list).
const BENCH_SETS: [&str; 4] = [
    "default",
    "--implicit-return --return-stack 8",
    "--branch-prediction 64",
    "--jump-target-cache 16",
];

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/bench");
    for name in ["workload-rv64gc.elf", "workload-rv32imac.elf"] {
        let elf = dir.join(name);
        let run = rvtrace_testkit::run_program(&elf, &format!("bench/{name}"), 4);
        let xlen = run.image.files()[0].xlen;
        let isa = IsaConfig::new(xlen);
        let t = Instant::now();
        let code = Code::new(&run.image, isa);
        let table_ms = t.elapsed().as_secs_f64() * 1e3;
        let n = run.pcs.len() as f64;
        println!(
            "{name}: {} instructions, block table {table_ms:.1} ms",
            run.pcs.len()
        );
        let arch = name
            .trim_start_matches("workload-")
            .trim_end_matches(".elf");
        // The round trip's option sets (tests/common/option_sets.rs), the ones tracked here.
        let sets = option_sets::option_sets()
            .into_iter()
            .filter(|(label, _)| BENCH_SETS.contains(label))
            .map(|(label, inputs)| {
                let inputs = ConfigInputs {
                    xlen_bits: xlen.bits() as u8,
                    ..inputs
                };
                (label, inputs)
            });
        if arch == "rv64gc" {
            encode_csv(&run.records, xlen, arch);
        }
        for (label, inputs) in sets {
            let cfg = TraceConfig::build(&inputs).unwrap();
            let mut enc_s = f64::MAX;
            let mut w = None;
            for _ in 0..3 {
                let t = Instant::now();
                let mut enc =
                    Encoder::new(&cfg, FrameWriter::new(Vec::with_capacity(1 << 20), &cfg))
                        .unwrap();
                for r in &run.records {
                    enc.push(r).unwrap();
                }
                w = Some(enc.finish().unwrap());
                enc_s = enc_s.min(t.elapsed().as_secs_f64());
            }
            let w = w.unwrap();
            let bits = w.payload_bytes as f64 * 8.0 / run.records.len() as f64;
            let bytes = w.into_inner();
            // The block table is built once (above), as a chunked decode shares it.
            let o = DecoderConfig::with_layout(
                cfg.params,
                cfg.options,
                Framing::Encap(EncapConfig::PLAIN),
                isa,
            );
            let mut best = f64::MAX;
            for _ in 0..5 {
                let t = Instant::now();
                let mut dec = Decoder::with_code(&run.image, o, code.clone());
                let mut count = 0u64;
                let mut sink = |e: &FlowElement| {
                    if let FlowElement::Range { count: c, .. } = e {
                        count += c;
                    }
                };
                decode_all(&mut dec, &bytes, &mut sink);
                best = best.min(t.elapsed().as_secs_f64());
                assert_eq!(count, run.pcs.len() as u64, "{name} {label}");
                assert_eq!(dec.stats().errors, 0);
            }
            println!(
                "  {label:38} {bits:.3} bits/instr  encode {:>7.1} M instr/s  decode {:>7.1} M instr/s",
                n / enc_s / 1e6,
                n / best / 1e6
            );
            let key = key(label);
            figure(&format!("etrace.{arch}.{key}.bits"), bits, "bits/insn");
            figure(
                &format!("etrace.{arch}.{key}.encode"),
                n / enc_s / 1e6,
                "Minsn/s",
            );
            figure(
                &format!("etrace.{arch}.{key}.decode"),
                n / best / 1e6,
                "Minsn/s",
            );
            if label == "default" {
                // The decode with the PC list as `rvtrace decode etrace --pcs` writes it (to
                // `io::sink()`: the formatting's cost, not the disk's).
                let mut best = f64::MAX;
                for _ in 0..5 {
                    let t = Instant::now();
                    let mut dec = Decoder::with_code(&run.image, o, code.clone());
                    let mut w = PcWriter::new(&run.image, std::io::sink());
                    decode_all(&mut dec, &bytes, &mut w);
                    assert_eq!(w.count, run.pcs.len() as u64, "{name} {label}");
                    w.finish().unwrap();
                    best = best.min(t.elapsed().as_secs_f64());
                }
                println!("    decode, PC list text {:>7.1} M instr/s", n / best / 1e6);
                figure(
                    &format!("etrace.{arch}.decode_pcs"),
                    n / best / 1e6,
                    "Minsn/s",
                );
            }
        }
    }
}

/// End to end from text: the first 3 M records as an E-Trace `encoder_input` CSV in memory, read
/// and encoded with the default options into trace bytes in memory (`rvtrace encode etrace
/// FILE.csv` without the file system), in records per second, best of 5. The trace must equal
/// the one encoded from the records themselves.
fn encode_csv(records: &[rvtrace_ingress::Record], xlen: rvtrace_isa::Xlen, arch: &str) {
    use rvtrace_ingress::etrace_csv::{CsvColumns, EtraceCsvReader, EtraceCsvWriter};
    let records = &records[..records.len().min(3_000_000)];
    let mut w = EtraceCsvWriter::new(Vec::new(), CsvColumns::default()).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    let csv = w.finish().unwrap();
    let inputs = option_sets::option_sets()
        .into_iter()
        .find(|(label, _)| *label == "default")
        .unwrap()
        .1;
    let cfg = TraceConfig::build(&ConfigInputs {
        xlen_bits: xlen.bits() as u8,
        ..inputs
    })
    .unwrap();
    let mut direct = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
    for r in records {
        direct.push(r).unwrap();
    }
    let direct = direct.finish().unwrap().into_inner();
    let (s, got) = rvtrace_testkit::bench::best_of(5, || {
        // As `rvtrace encode etrace` reads and encodes: in batches, parsed in place.
        let mut rd = EtraceCsvReader::new(&csv[..]).unwrap();
        let mut enc =
            Encoder::new(&cfg, FrameWriter::new(Vec::with_capacity(1 << 20), &cfg)).unwrap();
        let mut batch = vec![rvtrace_ingress::Record::default(); 4096];
        loop {
            let n = rd.read_into(&mut batch).unwrap();
            if n == 0 {
                break;
            }
            enc.push_all(&batch[..n]).unwrap();
        }
        enc.finish().unwrap().into_inner()
    });
    assert!(
        got == direct,
        "the CSV's trace differs from the records' trace"
    );
    let n = records.len() as f64;
    println!(
        "  encode from CSV ({} records, {:.1} MB)        {:>7.1} M records/s",
        records.len(),
        csv.len() as f64 / 1e6,
        n / s / 1e6
    );
    figure(&format!("etrace.{arch}.encode_csv"), n / s / 1e6, "Mrec/s");
}
