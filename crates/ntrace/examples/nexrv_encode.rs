//! Developer tool: encode a NexRv PCSEQ with the `nexrv` preset (`cargo run --example
//! nexrv_encode -- PCSEQ OUT [btm|htm] [rpt] [cs=N] [rv32]`).

use rvtrace_ingress::pcseq::PcseqReader;
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::options::{CallStack, EncoderConfig, Mode};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read(&args[1]).unwrap();
    let recs: Vec<_> = PcseqReader::new(&text[..])
        .collect::<Result<_, _>>()
        .unwrap();
    let xlen = if args.iter().any(|a| a == "rv32") {
        rvtrace_isa::Xlen::Rv32
    } else {
        rvtrace_isa::Xlen::Rv64
    };
    let mut cfg = EncoderConfig::new(xlen).nexrv();
    for a in &args[3..] {
        match a.as_str() {
            "btm" => cfg.mode = Mode::Btm,
            "htm" => cfg.mode = Mode::Htm,
            "rpt" => cfg.repeat_history = true,
            s if s.starts_with("cs=") => {
                cfg.call_stack = CallStack::Full {
                    depth: s[3..].parse().unwrap(),
                }
            }
            _ => {}
        }
    }
    let (out, st) = encode(cfg, &recs);
    std::fs::write(&args[2], out).unwrap();
    eprintln!("{st:?}");
}
