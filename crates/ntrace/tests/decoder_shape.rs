//! The N-Trace decoder as a `rvtrace_flow::TraceDecoder`: the same elements however the byte
//! stream is cut, and the common counts are the protocol's.

use rvtrace_flow::{decode_all, FlowElement, PcWriter, TraceDecoder};
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::insn::LinkRule;
use rvtrace_ntrace::options::EncoderConfig;
use rvtrace_testkit::flow::{check_stopped, pcs_of, Stopper};
use rvtrace_testkit::{assert_pcs_eq, parse_pcs, run_test_program};

/// Decodes through the trait only, as a library user with either protocol would.
fn decode_pieces<D: TraceDecoder>(
    dec: &mut D,
    bytes: &[u8],
    piece: usize,
) -> (Vec<FlowElement>, rvtrace_flow::DecodeStats) {
    let mut v = Vec::new();
    for c in bytes.chunks(piece) {
        dec.push(c, &mut v);
    }
    let st = dec.finish(&mut v);
    (v, st)
}

#[test]
fn pushed_in_pieces_equals_whole_and_the_run() {
    let run = run_test_program("recurse-rv64gc", 4);
    let (bytes, _) = encode(EncoderConfig::new(Xlen::Rv64), &run.records);
    let cfg = DecoderConfig::new(IsaConfig::rv64());
    let mut whole = Vec::new();
    let mut dec = Decoder::new(&run.image, cfg);
    let st = decode_all(&mut dec, &bytes, &mut whole);
    let p = dec.protocol_stats();
    assert_eq!(st.bytes, bytes.len() as u64);
    assert_eq!(st.instructions, run.pcs.len() as u64);
    assert_eq!(
        (st.messages, st.losses, st.skipped_bytes),
        (p.messages, p.errors, p.skipped_bytes)
    );
    assert_eq!(st.losses, 0);
    let got = pcs_of(&run.image, &whole);
    assert_pcs_eq("whole", "decoded", &got, "run", &run.pcs);
    // A sink that has what it needs stops the decode, pushed whole or read in pieces.
    for after in [1, 50] {
        let mut stop = Stopper::new(after);
        let st = decode_all(&mut Decoder::new(&run.image, cfg), &bytes, &mut stop);
        check_stopped(&whole, &stop);
        assert!(st.instructions < run.pcs.len() as u64);
        let mut stop = Stopper::new(after);
        rvtrace_flow::decode_read(&mut Decoder::new(&run.image, cfg), &bytes[..], &mut stop)
            .unwrap();
        check_stopped(&whole, &stop);
    }
    for piece in [1usize, 5, 4096] {
        let (cut, st2) = decode_pieces(&mut Decoder::new(&run.image, cfg), &bytes, piece);
        assert_eq!(cut, whole, "pieces of {piece}");
        assert_eq!(st2, st, "pieces of {piece}");
    }
    assert_eq!(cfg.nexrv().link, LinkRule::NexRv);
}

/// `--link-registers auto` (`find_link_rule`): a stream made with the specification's rule is
/// decoded with it at the first try; one made with NexRv's rule is decoded with a rule that
/// gives the run's PCs without a loss (the specification's: rvtrace's decoder keeps its stack
/// aligned on explicit returns, so it needs no other rule for these); a stream no rule decodes
/// gives the first rule of the fewest losses.
#[test]
fn link_rule_found_by_trying() {
    use rvtrace_ntrace::decoder::find_link_rule;
    for name in ["mixed-rv64gc", "setjmp-rv32imac", "recurse-rv32imac"] {
        let run = run_test_program(name, 4);
        let xlen = run.image.files()[0].xlen;
        let isa = IsaConfig::new(xlen);
        let cfg = DecoderConfig::new(isa);
        let base = EncoderConfig::new(xlen);
        let (spec, _) = encode(base, &run.records);
        let found = find_link_rule(&run.image, cfg, || Ok(&spec[..])).unwrap();
        assert_eq!(found, (LinkRule::Spec, 0), "{name}");
        let (nexrv, _) = encode(base.nexrv(), &run.records);
        let (link, losses) = find_link_rule(&run.image, cfg, || Ok(&nexrv[..])).unwrap();
        assert_eq!(losses, 0, "{name}");
        let mut w = PcWriter::new(&run.image, Vec::new());
        let mut dec = Decoder::new(&run.image, DecoderConfig { link, ..cfg });
        decode_all(&mut dec, &nexrv, &mut w);
        let got = parse_pcs(&w.finish().unwrap());
        assert_pcs_eq(name, "decoded", &got, "run", &run.pcs);
        // Cut in the middle of a message: every rule loses the end.
        let cut = &spec[..spec.len() / 2];
        let (link, losses) = find_link_rule(&run.image, cfg, || Ok(cut)).unwrap();
        assert_eq!(link, LinkRule::Spec, "{name}");
        assert!(losses > 0, "{name}");
        // A read error is the caller's.
        let err = find_link_rule(&run.image, cfg, || -> std::io::Result<&[u8]> {
            Err(std::io::Error::other("x"))
        });
        assert!(err.is_err());
    }
}
