//! Parallel decode (`rvtrace_etrace::scan::decode_parallel`, `rvtrace_flow::chunk`) gives what a
//! decode from the start gives, element for element, with the same counts: on every test
//! program in every option set of the round trip (with a resynchronisation every 64 packets
//! where the set has none), with chunks cut at every format 3 packet, on one thread and on two,
//! and on traces with a damaged byte. The sync scan finds the format 3 subformat 0 packets the
//! decoder's packet reader reads.

use rvtrace_etrace::codec::{Item, PacketReader, TeInst};
use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::decoder::{DecodeStats, Decoder, DecoderConfig};
use rvtrace_etrace::encoder::{Encoder, FrameWriter};
use rvtrace_etrace::scan::{decode_parallel, syncs};
use rvtrace_flow::{FlowElement, TraceDecoder};
use rvtrace_isa::IsaConfig;
use rvtrace_testkit::{run_program, traceable_programs, ProgramRun};

use crate::common::option_sets;
use option_sets::option_sets;

/// The trace of `run` with `inputs` (a resync every 64 packets unless the set says), and the
/// decoder's options.
fn encode(run: &ProgramRun, inputs: &ConfigInputs) -> (Vec<u8>, DecoderConfig) {
    let xlen = run.image.files()[0].xlen;
    let inputs = ConfigInputs {
        xlen_bits: xlen.bits() as u8,
        resync: inputs.resync.or(Some(64)),
        ..inputs.clone()
    };
    let cfg = TraceConfig::build(&inputs).unwrap();
    let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
    for r in &run.records {
        enc.push(r).unwrap();
    }
    let bytes = enc.finish().unwrap().into_inner();
    (
        bytes,
        DecoderConfig::from_config(&cfg, IsaConfig::new(xlen)),
    )
}

fn sequential(
    run: &ProgramRun,
    o: DecoderConfig,
    bytes: &[u8],
) -> (Vec<FlowElement>, rvtrace_flow::DecodeStats, DecodeStats) {
    let mut d = Decoder::new(&run.image, o);
    let mut v = Vec::new();
    let st = rvtrace_flow::decode_all(&mut d, bytes, &mut v);
    (v, st, d.protocol_stats())
}

/// Parallel == sequential (decoded once) with chunks of `chunk` bytes on `jobs` threads, for
/// each `(chunk, jobs)` of `runs`; returns the chunks decoded again and the sequential decode's
/// losses.
fn check(
    what: &str,
    run: &ProgramRun,
    o: DecoderConfig,
    bytes: &[u8],
    runs: &[(u64, usize)],
) -> (u64, u64) {
    let (want, want_st, want_pst) = sequential(run, o, bytes);
    let mut redone = 0;
    for &(chunk, jobs) in runs {
        let mut got = Vec::new();
        let (st, pst, r) =
            decode_parallel(&run.image, o, bytes, chunk, jobs, &mut got).expect("chunks in order");
        redone += r;
        if let Some(k) = (0..want.len().max(got.len())).find(|&k| want.get(k) != got.get(k)) {
            panic!(
                "{what} (jobs {jobs}, chunks of {chunk} bytes): element {k} differs:\n  sequential {:?}\n  parallel   {:?}",
                want.get(k),
                got.get(k)
            );
        }
        assert_eq!(
            (st, pst),
            (want_st, want_pst),
            "{what} (jobs {jobs}): counts"
        );
    }
    (redone, want_st.losses)
}

#[test]
fn parallel_equals_sequential_every_program_every_option_set() {
    let counts = rvtrace_testkit::par::par_map(&traceable_programs(), |elf| {
        let name = elf.file_stem().unwrap().to_str().unwrap();
        let run = run_program(elf, &format!("elf/{name}.elf"), 4);
        let (mut redone, mut cuts) = (0, 0);
        for (label, inputs) in option_sets() {
            let (bytes, o) = encode(&run, &inputs);
            let what = format!("{name} {label}");
            cuts += syncs(&bytes, &o).len();
            // With the default options, a cut at every format 3 subformat 0 packet too.
            let runs: &[(u64, usize)] = match label {
                "default" => &[(256, 2), (1, 1), (1, 2)],
                _ => &[(256, 2)],
            };
            redone += check(&what, &run, o, &bytes, runs).0;
        }
        (redone, cuts)
    });
    let redone: u64 = counts.iter().map(|c| c.0).sum();
    let cuts: usize = counts.iter().map(|c| c.1).sum();
    println!("{cuts} format 3 subformat 0 packets, {redone} chunks decoded again");
    assert!(cuts > 10000, "the tests cut the traces");
}

/// The scan finds exactly the format 3 subformat 0 packets that the packet reader reads (which
/// decodes every packet), with the same offsets.
#[test]
fn scan_finds_the_readers_sync_packets() {
    let mut n = 0;
    for elf in traceable_programs().iter().take(8) {
        let name = elf.file_stem().unwrap().to_str().unwrap();
        let run = run_program(elf, &format!("elf/{name}.elf"), 4);
        for (label, inputs) in option_sets() {
            let (bytes, o) = encode(&run, &inputs);
            let (encap, raw) = o.framing.reader();
            let want: Vec<u64> = PacketReader::new(&bytes, encap, raw, o.params, o.options)
                .filter_map(|(off, item)| match item {
                    Item::Packet(TeInst::Start { .. }) => Some(off as u64),
                    _ => None,
                })
                .collect();
            let got: Vec<u64> = syncs(&bytes, &o).iter().map(|p| p.cut.offset).collect();
            assert_eq!(got, want, "{name} {label}");
            n += got.len();
        }
    }
    assert!(n > 1000, "{n} sync packets");
}

/// A damaged byte anywhere in the middle: the losses, recoveries and counts are the same.
#[test]
fn parallel_equals_sequential_on_damaged_traces() {
    let mut losses = 0;
    let sets = option_sets();
    for elf in traceable_programs().iter().take(10) {
        let name = elf.file_stem().unwrap().to_str().unwrap();
        let run = run_program(elf, &format!("elf/{name}.elf"), 4);
        for (label, inputs) in sets.iter().filter(|s| {
            s.0 == "--implicit-return --return-stack 8" || s.0 == "--implicit-exception"
        }) {
            let (bytes, o) = encode(&run, inputs);
            for k in 1..8 {
                let mut b = bytes.clone();
                let at = b.len() * k / 8;
                for x in [0x55u8, 0xff, 0x01] {
                    b[at] ^= x;
                    let what = format!("{name} {label}: byte {at} xor {x:#x}");
                    losses += check(&what, &run, o, &b, &[(1, 2), (64, 1)]).1;
                    b[at] ^= x;
                }
            }
            let cut = &bytes[..bytes.len() * 2 / 3];
            check(
                &format!("{name} {label}: cut"),
                &run,
                o,
                cut,
                &[(1, 1), (1, 2)],
            );
        }
    }
    assert!(losses > 50, "the damage is seen: {losses} losses");
}
