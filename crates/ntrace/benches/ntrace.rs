//! N-Trace encoder and decoder speed in instructions per second, on the benchmark workload
//! (`programs/bench/workload.c`, run on the hart model), for several configurations. Does nothing
//! unless run with `--bench` (`cargo bench -p rvtrace-ntrace`). Prints figures and the
//! compression (bits per instruction); asserts that every decode is exact.

use rvtrace_flow::{FlowElement, FlowSink, FlowText, PcFormat, PcWriter};
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};
use rvtrace_ntrace::encoder::Encoder;
use rvtrace_ntrace::options::{CallStack, EncoderConfig, Mode, SyncUnit};
use rvtrace_testkit::bench::figure;
use std::path::Path;
use std::time::Instant;

/// Counts decoded instructions (the flow's ranges) and losses.
#[derive(Default)]
struct Count {
    insns: u64,
    losses: u64,
}

impl FlowSink for Count {
    fn element(&mut self, e: &FlowElement) {
        match e {
            FlowElement::Range { count, .. } => self.insns += count,
            FlowElement::Loss { .. } => self.losses += 1,
            _ => {}
        }
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/bench");
    for name in ["workload-rv64gc.elf", "workload-rv32imac.elf"] {
        let elf = dir.join(name);
        let run = rvtrace_testkit::run_program(&elf, &format!("bench/{name}"), 4);
        let xlen = run.image.files()[0].xlen;
        let n = run.pcs.len() as f64;
        println!("{name}: {} instructions", run.pcs.len());
        let base = EncoderConfig::new(xlen);
        let arch = name
            .trim_start_matches("workload-")
            .trim_end_matches(".elf");
        let configs = [
            ("htm", base),
            (
                "btm",
                EncoderConfig {
                    mode: Mode::Btm,
                    ..base
                },
            ),
            (
                "htm --repeat-history --call-stack 8",
                EncoderConfig {
                    repeat_history: true,
                    call_stack: CallStack::Full { depth: 8 },
                    ..base
                },
            ),
            (
                "htm --call-stack 8 --hist-patterns --repeat-branch",
                EncoderConfig {
                    repeat_history: true,
                    hist_patterns: true,
                    repeat_branch: true,
                    call_stack: CallStack::Full { depth: 8 },
                    ..base
                },
            ),
            (
                "htm --sync-period 64 --timestamps",
                EncoderConfig {
                    sync_period: Some((SyncUnit::Messages, 64)),
                    timestamps: true,
                    ..base
                },
            ),
        ];
        if arch == "rv64gc" {
            encode_pcseq(&run.records, base, arch);
        }
        for (label, cfg) in configs {
            let mut enc_s = f64::MAX;
            let mut out = Vec::new();
            for _ in 0..3 {
                out = Vec::with_capacity(1 << 22);
                let t = Instant::now();
                let mut enc = Encoder::new(cfg);
                for r in &run.records {
                    enc.push(r, &mut out);
                }
                enc.finish(&mut out);
                enc_s = enc_s.min(t.elapsed().as_secs_f64());
            }
            let bits = out.len() as f64 * 8.0 / n;
            let mut dcfg = DecoderConfig::new(IsaConfig::new(xlen));
            dcfg.codec = cfg.codec;
            let mut dec_s = f64::MAX;
            for _ in 0..5 {
                let t = Instant::now();
                let mut count = Count::default();
                let mut dec = Decoder::new(&run.image, dcfg);
                dec.push(&out, &mut count);
                dec.finish(&mut count);
                dec_s = dec_s.min(t.elapsed().as_secs_f64());
                assert_eq!(count.insns, run.pcs.len() as u64, "{name} {label}");
                assert_eq!(count.losses, 0, "{name} {label}");
            }
            println!(
                "  {label:38} {bits:.3} bits/instr  encode {:>7.1} M instr/s  decode {:>7.1} M instr/s",
                n / enc_s / 1e6,
                n / dec_s / 1e6
            );
            let key = key(label);
            figure(&format!("ntrace.{arch}.{key}.bits"), bits, "bits/insn");
            figure(
                &format!("ntrace.{arch}.{key}.encode"),
                n / enc_s / 1e6,
                "Minsn/s",
            );
            figure(
                &format!("ntrace.{arch}.{key}.decode"),
                n / dec_s / 1e6,
                "Minsn/s",
            );
            if label == "htm" {
                output_rows(&run.image, dcfg, &out, n, arch);
            }
            if label == "htm --sync-period 64 --timestamps" {
                parallel_rows(&run.image, dcfg, &out, n, arch);
            }
        }
    }
}

/// The decode with each output (to `io::sink()`, so the figure is the formatting's, not the
/// disk's), and each writer alone on the recorded flow: instructions per second, best of 5.
fn output_rows(image: &rvtrace_image::Image, cfg: DecoderConfig, trace: &[u8], n: f64, arch: &str) {
    let best = |f: &mut dyn FnMut()| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    };
    let decode = |sink: &mut dyn FlowSink| {
        let mut dec = Decoder::new(image, cfg);
        dec.push(trace, sink);
        dec.finish(sink);
    };
    let mut flow: Vec<FlowElement> = Vec::new();
    decode(&mut flow);
    let pcs = |format: PcFormat, sink: &mut dyn FnMut(&mut dyn FlowSink)| {
        let mut w = PcWriter::with_format(image, std::io::sink(), format);
        sink(&mut w);
        assert_eq!(w.count as f64, n);
        w.finish().unwrap();
    };
    let replay = |s: &mut dyn FlowSink| flow.iter().for_each(|e| s.element(e));
    let rows: [(&str, f64); 6] = [
        (
            "decode, PC list text",
            best(&mut || pcs(PcFormat::Text, &mut |s| decode(s))),
        ),
        (
            "decode, PC list binary",
            best(&mut || pcs(PcFormat::Bin, &mut |s| decode(s))),
        ),
        (
            "decode, flow text",
            best(&mut || {
                let mut w = FlowText::new(image, std::io::sink());
                decode(&mut w);
                w.finish().unwrap();
            }),
        ),
        (
            "PC list text alone (recorded flow)",
            best(&mut || pcs(PcFormat::Text, &mut |s| replay(s))),
        ),
        (
            "PC list binary alone",
            best(&mut || pcs(PcFormat::Bin, &mut |s| replay(s))),
        ),
        (
            "flow text alone",
            best(&mut || {
                let mut w = FlowText::new(image, std::io::sink());
                replay(&mut w);
                w.finish().unwrap();
            }),
        ),
    ];
    for (label, s) in rows {
        println!("    {label:36} {:>7.1} M instr/s", n / s / 1e6);
    }
    figure(
        &format!("ntrace.{arch}.decode_pcs"),
        n / rows[0].1 / 1e6,
        "Minsn/s",
    );
    figure(
        &format!("ntrace.{arch}.decode_pcs_bin"),
        n / rows[1].1 / 1e6,
        "Minsn/s",
    );
    figure(
        &format!("ntrace.{arch}.decode_flow_text"),
        n / rows[2].1 / 1e6,
        "Minsn/s",
    );
}

/// Parallel decode (`decode ntrace --jobs`, `rvtrace_flow::chunk`) of a trace with a sync every
/// 64 messages: wall time with 1 and 2 threads, best of 5, and the speed-up.
fn parallel_rows(
    image: &rvtrace_image::Image,
    cfg: DecoderConfig,
    trace: &[u8],
    n: f64,
    arch: &str,
) {
    let time = |jobs: usize| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                // Each chunk counts its own instructions (the parts), summed in order.
                let mut insns = 0;
                rvtrace_ntrace::scan::decode_parallel_to(
                    image,
                    cfg,
                    trace,
                    rvtrace_flow::chunk::chunk_bytes(),
                    jobs,
                    Count::default,
                    |c| {
                        insns += c.insns;
                        true
                    },
                )
                .unwrap();
                assert_eq!(insns as f64, n);
                t.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    };
    let (one, two) = (time(1), time(2));
    println!(
        "    parallel decode, 1 / 2 threads          {:>7.1} / {:>7.1} M instr/s ({:.2}x)",
        n / one / 1e6,
        n / two / 1e6,
        one / two
    );
    figure(&format!("ntrace.{arch}.parallel2"), one / two, "x");
}

/// A figure key from an option set's label: `htm --call-stack 8` -> `htm_call-stack_8`.
fn key(label: &str) -> String {
    label
        .replace("--", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("_")
}

/// End to end from text: the first 3 M records as NexRv PCSEQ in memory, read and encoded in
/// HTM into message bytes in memory (`rvtrace encode ntrace --input-format pcseq` without the
/// file system), in records per second, best of 5. The trace must equal the one encoded from
/// the records the PCSEQ holds.
fn encode_pcseq(records: &[rvtrace_ingress::Record], cfg: EncoderConfig, arch: &str) {
    use rvtrace_ingress::pcseq::{PcseqReader, PcseqWriter};
    let records = &records[..records.len().min(3_000_000)];
    let mut w = PcseqWriter::new(Vec::new());
    for r in records {
        w.write(r).unwrap();
    }
    let text = w.finish().unwrap();
    let read: Vec<_> = PcseqReader::new(&text[..]).map(|r| r.unwrap()).collect();
    let (direct, _) = rvtrace_ntrace::encoder::encode(cfg, &read);
    let (s, got) = rvtrace_testkit::bench::best_of(5, || {
        let mut out = Vec::with_capacity(1 << 22);
        // As `rvtrace encode ntrace` reads and encodes: in batches, parsed in place.
        let mut enc = Encoder::new(cfg);
        let mut rd = PcseqReader::new(&text[..]);
        let mut batch = vec![rvtrace_ingress::Record::default(); 4096];
        loop {
            let n = rd.read_into(&mut batch).unwrap();
            if n == 0 {
                break;
            }
            enc.push_all(&batch[..n], &mut out);
        }
        enc.finish(&mut out);
        out
    });
    assert!(
        got == direct,
        "the PCSEQ's trace differs from the records' trace"
    );
    let n = read.len() as f64;
    println!(
        "  encode from PCSEQ ({} records, {:.1} MB)     {:>7.1} M records/s",
        read.len(),
        text.len() as f64 / 1e6,
        n / s / 1e6
    );
    figure(
        &format!("ntrace.{arch}.encode_pcseq"),
        n / s / 1e6,
        "Mrec/s",
    );
}
