//! Parallel decode (`rvtrace_ntrace::scan::decode_parallel`, `rvtrace_flow::chunk`) gives what a
//! decode from the start gives, element for element, with the same counts: on every test
//! program in every option set of the round trip, with chunks cut at every synchronization
//! message, on one thread and on two, and on traces with a damaged byte. The sync scan finds the
//! synchronization messages the decoder reports.

use rvtrace_flow::FlowElement;
use rvtrace_isa::Xlen;
use rvtrace_ntrace::decoder::{decode, DecodeStats, DecoderConfig};
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::options::{EncoderConfig, SyncUnit};
use rvtrace_ntrace::scan::{decode_parallel, syncs};
use rvtrace_testkit::{run_program, traceable_programs};

use crate::common::configs;
use configs::{configs, decoder_config};

fn sequential(
    image: &rvtrace_image::Image,
    cfg: DecoderConfig,
    bytes: &[u8],
) -> (Vec<FlowElement>, DecodeStats) {
    let mut v = Vec::new();
    let st = decode(image, cfg, bytes, &mut v);
    (v, st)
}

/// Parallel == sequential (decoded once) with chunks of `chunk` bytes on `jobs` threads, for
/// each `(chunk, jobs)` of `runs`; returns the chunks decoded again (by the last run) and the
/// sequential decode's errors.
fn check(
    what: &str,
    image: &rvtrace_image::Image,
    cfg: DecoderConfig,
    bytes: &[u8],
    runs: &[(u64, usize)],
) -> (u64, u64) {
    let (want, want_st) = sequential(image, cfg, bytes);
    let mut redone = 0;
    for &(chunk, jobs) in runs {
        let mut got = Vec::new();
        let (st, r) =
            decode_parallel(image, cfg, bytes, chunk, jobs, &mut got).expect("chunks in order");
        redone = r;
        if let Some(k) = (0..want.len().max(got.len())).find(|&k| want.get(k) != got.get(k)) {
            panic!(
                "{what} (jobs {jobs}, chunks of {chunk} bytes): element {k} differs:\n  sequential {:?}\n  parallel   {:?}",
                want.get(k),
                got.get(k)
            );
        }
        assert_eq!(st, want_st, "{what} (jobs {jobs}): counts");
    }
    (redone, want_st.errors)
}

/// With syncs: every 64 messages (plus the ones the encoder sends anyway).
fn with_sync(mut cfg: EncoderConfig) -> EncoderConfig {
    // A configuration's own period stays; the default one (2^19 messages) is too rare here.
    if cfg
        .sync_period
        .is_none_or(|(_, n)| n == rvtrace_ntrace::options::DEFAULT_SYNC_PERIOD)
    {
        cfg.sync_period = Some((SyncUnit::Messages, 64));
    }
    cfg
}

#[test]
fn parallel_equals_sequential_every_program_every_configuration() {
    let counts = rvtrace_testkit::par::par_map(&traceable_programs(), |elf| {
        let name = elf.file_stem().unwrap().to_str().unwrap();
        let run = run_program(elf, &format!("elf/{name}.elf"), 4);
        let xlen = run.image.files()[0].xlen;
        let (mut syncs_seen, mut chunks_redone) = (0, 0);
        for (cname, cfg) in configs(xlen) {
            let cfg = with_sync(cfg);
            let (bytes, _) = encode(cfg, &run.records);
            let dcfg = decoder_config(&cfg);
            let what = format!("{name} {cname}");
            syncs_seen += syncs(&bytes, &dcfg).len();
            // Chunks of about 256 bytes (a cut every few synchronization messages), last; with
            // htm, a cut at every synchronization message too.
            let runs: &[(u64, usize)] = match cname {
                "htm" => &[(1, 1), (1, 2), (256, 2)],
                _ => &[(256, 2)],
            };
            chunks_redone += check(&what, &run.image, dcfg, &bytes, runs).0;
        }
        (syncs_seen, chunks_redone)
    });
    let syncs_seen: usize = counts.iter().map(|c| c.0).sum();
    let chunks_redone: u64 = counts.iter().map(|c| c.1).sum();
    println!("{syncs_seen} synchronization messages, {chunks_redone} chunks decoded again");
    assert!(syncs_seen > 10000, "the tests cut the traces");
}

/// The scan finds exactly the synchronization messages whose Sync elements the decoder reports.
#[test]
fn scan_finds_the_decoders_syncs() {
    for elf in traceable_programs().iter().take(8) {
        let name = elf.file_stem().unwrap().to_str().unwrap();
        let run = run_program(elf, &format!("elf/{name}.elf"), 4);
        let xlen = run.image.files()[0].xlen;
        for (cname, cfg) in configs(xlen) {
            let cfg = with_sync(cfg);
            let (bytes, _) = encode(cfg, &run.records);
            let dcfg = decoder_config(&cfg);
            let (flow, _) = sequential(&run.image, dcfg, &bytes);
            let want: Vec<u64> = flow
                .iter()
                .filter_map(|e| match e {
                    FlowElement::Sync { addr, .. } => Some(*addr),
                    _ => None,
                })
                .collect();
            let got: Vec<u64> = syncs(&bytes, &dcfg).iter().map(|p| p.addr).collect();
            assert_eq!(got, want, "{name} {cname}");
        }
    }
}

/// A damaged byte anywhere in the middle: the losses, recoveries and counts are the same.
#[test]
fn parallel_equals_sequential_on_damaged_traces() {
    let mut losses = 0;
    for elf in traceable_programs().iter().take(10) {
        let name = elf.file_stem().unwrap().to_str().unwrap();
        let run = run_program(elf, &format!("elf/{name}.elf"), 4);
        let (_, cfg) = configs(Xlen::Rv64)
            .into_iter()
            .find(|c| c.0 == "htm+cs8")
            .unwrap();
        let cfg = with_sync(EncoderConfig {
            xlen: run.image.files()[0].xlen,
            ..cfg
        });
        let (bytes, _) = encode(cfg, &run.records);
        let dcfg = decoder_config(&cfg);
        for k in 1..8 {
            let mut b = bytes.clone();
            let at = b.len() * k / 8;
            for (x, v) in [(0x55u8, "xor 0x55"), (0xff, "xor 0xff"), (0x03, "mseo")] {
                b[at] ^= x;
                let what = format!("{name}: byte {at} {v}");
                losses += check(&what, &run.image, dcfg, &b, &[(1, 2), (64, 1)]).1;
                b[at] ^= x;
            }
        }
        // Cut short in the middle of a chunk.
        let cut = &bytes[..bytes.len() * 2 / 3];
        check(
            &format!("{name}: cut"),
            &run.image,
            dcfg,
            cut,
            &[(1, 1), (1, 2)],
        );
    }
    assert!(losses > 50, "the damage is seen: {losses} losses");
}

/// Chunks cut at every message, not only at synchronization messages: most guesses are wrong
/// (the decoder is not synchronized after a branch message alone) and those chunks are decoded
/// again; the flow is still the one a decode from the start gives.
#[test]
fn wrong_guesses_are_decoded_again() {
    use rvtrace_flow::chunk::{self, Cut};
    use rvtrace_ntrace::codec::{Frame, Frames};
    use rvtrace_ntrace::decoder::Decoder;
    let mut redone = 0;
    for elf in traceable_programs().iter().take(6) {
        let name = elf.file_stem().unwrap().to_str().unwrap();
        let run = run_program(elf, &format!("elf/{name}.elf"), 4);
        let xlen = run.image.files()[0].xlen;
        for (cname, cfg) in configs(xlen)
            .into_iter()
            .filter(|c| c.0 == "htm+cs8+rpt" || c.0 == "htm+sync+ts")
        {
            let (bytes, _) = encode(cfg, &run.records);
            let dcfg = decoder_config(&cfg);
            let cuts: Vec<Cut> = Frames::new(&bytes)
                .filter_map(|f| match f {
                    Frame::Message(m) => Some(Cut {
                        offset: m.offset,
                        len: m.len,
                    }),
                    Frame::Error(_) => None,
                })
                .skip(1)
                .collect();
            let (want, want_st) = sequential(&run.image, dcfg, &bytes);
            let code = Decoder::code(&run.image, &dcfg);
            let make = |o| Decoder::at(&run.image, dcfg, code.clone(), o);
            let mut got = Vec::new();
            let ((_, st), r) =
                chunk::decode_parallel(&bytes, &cuts, 2, make, &mut got).expect("chunks in order");
            assert_eq!(got, want, "{name} {cname}");
            assert_eq!(st, want_st, "{name} {cname}");
            redone += r;
        }
    }
    assert!(redone > 100, "{redone} chunks decoded again");
}
