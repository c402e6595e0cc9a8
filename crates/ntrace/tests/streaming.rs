//! The streaming readers give what the whole-slice ones give, however the input is cut:
//! `stats::stats_read` fed by a reader that returns random small pieces equals `stats::stats`
//! on the whole trace, for a clean trace, damaged ones (bytes changed) and cut ones.

use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::decoder::DecoderConfig;
use rvtrace_ntrace::encoder::Encoder;
use rvtrace_ntrace::options::EncoderConfig;
use std::path::Path;

use rvtrace_testkit::ChunkedReader as Chunked;

#[test]
fn stats_read_in_pieces_equals_whole() {
    let elf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf/traps-rv64gc.elf");
    let run = rvtrace_testkit::run_program(&elf, "traps", 4);
    let xlen = run.image.files()[0].xlen;
    let mut enc = Encoder::new(EncoderConfig::new(xlen));
    let mut trace = Vec::new();
    for r in &run.records {
        enc.push(r, &mut trace);
    }
    enc.finish(&mut trace);
    let cfg = DecoderConfig::new(IsaConfig::new(xlen));
    let mut variants = vec![trace.clone(), trace[..trace.len() * 2 / 3].to_vec()];
    for k in [3usize, 17, 101] {
        let mut bad = trace.clone();
        let i = (k * 7919) % bad.len();
        bad[i] ^= 0x5a;
        variants.push(bad);
    }
    for (v, data) in variants.iter().enumerate() {
        let whole = rvtrace_ntrace::stats::stats(&run.image, cfg, data);
        assert_eq!(whole.bytes, data.len() as u64);
        for (seed, max) in [(1u64, 1u64), (2, 7), (3, 64), (4, 5000)] {
            let r = Chunked { data, seed, max };
            let got = rvtrace_ntrace::stats::stats_read(&run.image, cfg, r).unwrap();
            assert_eq!(got.json(), whole.json(), "variant {v}, pieces up to {max}");
        }
        if v == 0 {
            assert_eq!(whole.instructions, run.pcs.len() as u64);
            assert_eq!(whole.losses, 0);
        }
    }
}
