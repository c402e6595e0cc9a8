//! The hostile-input campaign (issue 9): real E-Trace streams of the test programs, in several
//! option sets, damaged in every class (bit flip, byte insert/delete, chunk removed, duplicated
//! or swapped, truncation, wrap as in a circular trace buffer) with a fixed seed set, plus
//! hostile files. Every damaged stream must decode without panic to either exactly the truth
//! (the PCs the hart retired) or a reported loss (counted in `DecodeStats::errors`, the count
//! behind the CLI's summary and exit status). A damaged stream whose output differs from the
//! truth while nothing was reported is *silent-wrong*.
//!
//! Some damage cannot be detected in principle: it turns the stream into another valid trace of
//! the same program (a flipped branch-map bit that gives another path through the program which
//! later packets agree with). Those are counted per class and the test asserts the counts it
//! measures with its fixed seeds, so that any change shows. `RVTRACE_CAMPAIGN_VERBOSE=1` prints
//! every silent-wrong case.

use rvtrace_etrace::code::Code;
use rvtrace_etrace::codec::PacketReader;
use rvtrace_etrace::config::{ConfigInputs, Preset, TraceConfig};
use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
use rvtrace_etrace::encoder::{Encoder, FrameWriter};
use rvtrace_flow::{decode_all, decode_read, FlowElement, FlowSink, PcWriter};
use rvtrace_isa::IsaConfig;
use rvtrace_testkit::{parse_pcs, run_test_program, ChunkedReader, ProgramRun, Rng};

/// The stream types of the campaign.
fn stream_types() -> Vec<(&'static str, ConfigInputs)> {
    let d = ConfigInputs::default();
    vec![
        ("default", d.clone()),
        (
            "implicit-return",
            ConfigInputs {
                implicit_return: true,
                ..d.clone()
            },
        ),
        (
            "branch-prediction",
            ConfigInputs {
                branch_prediction: Some(64),
                ..d.clone()
            },
        ),
        (
            "full-address",
            ConfigInputs {
                full_address: true,
                ..d.clone()
            },
        ),
        (
            "reference",
            ConfigInputs {
                preset: Preset::Reference,
                ..d.clone()
            },
        ),
    ]
}

const PROGRAMS: [&str; 3] = ["recurse-rv64gc", "switch-rv32imac", "csrs-rv32imac"];

/// Damage classes.
const CLASSES: [&str; 5] = ["bitflip", "insdel", "chunk", "truncation", "wrap"];
/// Trials per class, stream type and program.
const TRIALS: usize = 24;

struct Stream<'a> {
    run: &'a ProgramRun,
    code: Code,
    cfg: TraceConfig,
    bytes: Vec<u8>,
    /// Packet start offsets of the undamaged stream.
    packet_offsets: Vec<usize>,
}

fn make_stream<'a>(run: &'a ProgramRun, inputs: &ConfigInputs) -> Stream<'a> {
    let xlen = run.image.files()[0].xlen;
    let code = Code::new(&run.image, IsaConfig::new(xlen));
    let cfg = TraceConfig::build(&ConfigInputs {
        xlen_bits: xlen.bits() as u8,
        itype_width: Some(4),
        ..inputs.clone()
    })
    .unwrap();
    let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
    for r in &run.records {
        enc.push(r).unwrap();
    }
    let bytes = enc.finish().unwrap().into_inner();
    let (encap, raw) = cfg.framing.reader();
    let packet_offsets = PacketReader::new(&bytes, encap, raw, cfg.params, cfg.options)
        .map(|(o, _)| o)
        .collect();
    Stream {
        run,
        code,
        cfg,
        bytes,
        packet_offsets,
    }
}

/// The specification's decoder for the stream's framing and layout (no reference flow quirks,
/// whatever the preset).
fn plain(st: &Stream) -> DecoderConfig {
    DecoderConfig::with_layout(st.cfg.params, st.cfg.options, st.cfg.framing, st.code.isa)
}

/// What a decode gave.
struct Decoded {
    pcs: Vec<u64>,
    errors: u64,
    losses: u64,
}

fn decode(st: &Stream, data: &[u8]) -> Decoded {
    // The stream's framing, with the reference flow's quirks for its preset.
    let o = DecoderConfig::from_config(&st.cfg, st.code.isa);
    assert_eq!(
        o.keep_stack_across_syncs && o.reference_x5_jumps,
        st.cfg.preset == Preset::Reference
    );
    let mut dec = Decoder::with_code(&st.run.image, o, st.code.clone());
    let mut pcw = PcWriter::new(&st.run.image, Vec::new());
    let mut losses = 0;
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Loss { .. } = e {
            losses += 1;
        }
        pcw.element(e);
    };
    decode_all(&mut dec, data, &mut sink);
    Decoded {
        pcs: parse_pcs(&pcw.finish().unwrap()),
        errors: dec.stats().errors,
        losses,
    }
}

/// Damage `good` in `class`; returns the damaged bytes and a description.
fn damage(class: &str, st: &Stream, rng: &mut Rng) -> (Vec<u8>, String) {
    let good = &st.bytes;
    let mut bad = good.clone();
    let n = good.len();
    let desc;
    match class {
        "bitflip" => {
            let i = rng.index(n);
            let b = rng.index(8);
            bad[i] ^= 1 << b;
            desc = format!("bit {b} of byte {i:#x} flipped");
        }
        "insdel" => {
            let i = rng.index(n);
            if rng.coin() {
                let v = rng.next_u64() as u8;
                bad.insert(i, v);
                desc = format!("byte {v:#04x} inserted at {i:#x}");
            } else {
                bad.remove(i);
                desc = format!("byte {i:#x} deleted");
            }
        }
        "chunk" => {
            let len = 1 + rng.index(48.min(n / 2).max(1));
            let i = rng.index(n - len);
            match rng.index(3) {
                0 => {
                    bad.drain(i..i + len);
                    desc = format!("{len} bytes at {i:#x} removed");
                }
                1 => {
                    let c: Vec<u8> = good[i..i + len].to_vec();
                    bad.splice(i + len..i + len, c);
                    desc = format!("{len} bytes at {i:#x} duplicated");
                }
                _ => {
                    let j = rng.index(n - len);
                    let (a, b) = if i < j { (i, j) } else { (j, i) };
                    if a + len <= b {
                        let ca = good[a..a + len].to_vec();
                        let cb = good[b..b + len].to_vec();
                        bad[a..a + len].copy_from_slice(&cb);
                        bad[b..b + len].copy_from_slice(&ca);
                        desc = format!("{len} bytes at {a:#x} and {b:#x} swapped");
                    } else {
                        bad.drain(a..a + len);
                        desc = format!("{len} bytes at {a:#x} removed");
                    }
                }
            }
        }
        "truncation" => {
            // Half of the cuts exactly at a packet boundary.
            let at = if rng.coin() {
                st.packet_offsets[rng.index(st.packet_offsets.len())]
            } else {
                rng.index(n)
            };
            bad.truncate(at);
            desc = format!("cut at {at:#x} of {n:#x}");
        }
        "wrap" => {
            // A circular buffer: the bytes before `at` were overwritten (lost); optionally the
            // lost head's bytes follow at the end (the buffer read from its write pointer).
            let at = if rng.coin() {
                st.packet_offsets[1 + rng.index(st.packet_offsets.len() - 1)]
            } else {
                1 + rng.index(n - 1)
            };
            let head = good[..at].to_vec();
            bad.drain(..at);
            if rng.coin() {
                bad.extend_from_slice(&head);
                desc = format!("starts at {at:#x}, head appended");
            } else {
                desc = format!("starts at {at:#x}");
            }
        }
        _ => unreachable!(),
    }
    (bad, desc)
}

#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
struct Tally {
    exact: u32,
    reported: u32,
    /// Silent-wrong. Every packet of such a stream is well formed (a malformed one is a loss)
    /// and the decoded path agrees with every packet and with the program, so the decoder had
    /// nothing to notice: E-Trace has no sequence numbers or checksums, and a flipped
    /// branch-map bit, or a whole packet removed or repeated, can give another path through
    /// the program that later packets agree with.
    silent: u32,
}

/// Runs the campaign; returns per (stream type, class) tallies.
fn campaign() -> Vec<(&'static str, &'static str, Tally)> {
    let verbose = std::env::var_os("RVTRACE_CAMPAIGN_VERBOSE").is_some();
    let runs: Vec<(String, ProgramRun)> = PROGRAMS
        .iter()
        .map(|name| (name.to_string(), run_test_program(name, 4)))
        .collect();
    let mut out = Vec::new();
    for (ti, (stype, inputs)) in stream_types().into_iter().enumerate() {
        let streams: Vec<(String, Stream)> = runs
            .iter()
            .map(|(n, r)| (n.clone(), make_stream(r, &inputs)))
            .collect();
        for st in &streams {
            // The undamaged stream decodes exactly.
            let d = decode(&st.1, &st.1.bytes);
            assert_eq!(d.errors, 0, "{stype} {}: undamaged stream", st.0);
            assert!(d.pcs == st.1.run.pcs, "{stype} {}: undamaged stream", st.0);
        }
        for (ci, class) in CLASSES.iter().enumerate() {
            let mut t = Tally::default();
            for (pi, (pname, st)) in streams.iter().enumerate() {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((ti * 100 + ci * 10 + pi) as u64 + 1));
                for _ in 0..TRIALS {
                    let (bad, desc) = damage(class, st, &mut rng);
                    let d = decode(st, &bad);
                    // One count: every loss element is an error, and the other way round.
                    assert_eq!(d.errors, d.losses, "{stype} {pname} {desc}");
                    if d.errors > 0 {
                        t.reported += 1;
                    } else if d.pcs == st.run.pcs {
                        t.exact += 1;
                    } else {
                        t.silent += 1;
                        if verbose {
                            let first = d
                                .pcs
                                .iter()
                                .zip(&st.run.pcs)
                                .position(|(a, b)| a != b)
                                .unwrap_or(d.pcs.len().min(st.run.pcs.len()));
                            eprintln!(
                                "SILENT {stype} {class} {pname}: {desc}: {} pcs vs {}, first difference at {first}",
                                d.pcs.len(),
                                st.run.pcs.len()
                            );
                        }
                    }
                }
            }
            out.push((stype, *class, t));
        }
    }
    out
}

/// (stream type, class, exact, reported, silent-wrong) measured with the fixed seeds (re-measured
/// when `csrs-rv32imac`'s run changed: in issue 10, its counter probes moved to `pmu_access`; in
/// issue 14, the hart lost H, so it prints other `misa`/`mideleg`/`mie` values: 77 -> 78
/// silent-wrong of 1,800; in session 26 the damage is drawn by the shared generator,
/// `rvtrace_testkit::Rng`, so other streams are damaged: 78 -> 73, still none in truncation
/// and wrap). Before
/// issue 9 the decoder reported no truncation at a packet boundary and no stream that lost its
/// start (534 silent-wrong of these 1,800; now 0 in those classes). What remains is
/// silent-wrong because the damaged stream is a well-formed trace that agrees with the program
/// (see [`Tally::silent`]).
const EXPECTED: [(&str, &str, u32, u32, u32); 25] = [
    ("default", "bitflip", 7, 56, 9),
    ("default", "insdel", 0, 72, 0),
    ("default", "chunk", 0, 66, 6),
    ("default", "truncation", 0, 72, 0),
    ("default", "wrap", 0, 72, 0),
    ("implicit-return", "bitflip", 10, 60, 2),
    ("implicit-return", "insdel", 1, 71, 0),
    ("implicit-return", "chunk", 0, 67, 5),
    ("implicit-return", "truncation", 0, 72, 0),
    ("implicit-return", "wrap", 0, 72, 0),
    ("branch-prediction", "bitflip", 13, 55, 4),
    ("branch-prediction", "insdel", 1, 71, 0),
    ("branch-prediction", "chunk", 0, 66, 6),
    ("branch-prediction", "truncation", 0, 72, 0),
    ("branch-prediction", "wrap", 0, 72, 0),
    ("full-address", "bitflip", 8, 51, 13),
    ("full-address", "insdel", 0, 72, 0),
    ("full-address", "chunk", 0, 68, 4),
    ("full-address", "truncation", 0, 72, 0),
    ("full-address", "wrap", 0, 72, 0),
    ("reference", "bitflip", 8, 54, 10),
    ("reference", "insdel", 0, 65, 7),
    ("reference", "chunk", 1, 64, 7),
    ("reference", "truncation", 0, 72, 0),
    ("reference", "wrap", 0, 72, 0),
];

#[test]
fn damaged_streams_are_exact_or_reported() {
    let res = campaign();
    let mut silent_total = 0;
    for (stype, class, t) in &res {
        eprintln!(
            "{stype:<18} {class:<10} exact {:>3}  reported {:>3}  silent-wrong {:>3}",
            t.exact, t.reported, t.silent
        );
        silent_total += t.silent;
    }
    eprintln!("silent-wrong total: {silent_total}");
    for ((stype, class, t), e) in res.iter().zip(EXPECTED) {
        assert_eq!(
            (*stype, *class, t.exact, t.reported, t.silent),
            e,
            "campaign counts changed"
        );
        // A lost start or end is always reported.
        if matches!(*class, "truncation" | "wrap") {
            assert_eq!(t.silent, 0, "{stype} {class}");
        }
    }
}

/// Memory stays flat on garbage: 4 MB of hostile bytes (every byte a framing error) through
/// the decoder keep its buffers small, and the sink sees one loss per error (nothing is kept
/// by the decoder; the CLI prints them as they come, see `crates/cli/tests/etrace.rs`).
#[test]
fn memory_is_flat_on_hostile_bytes() {
    let run = run_test_program("recurse-rv64gc", 4);
    for (stype, inputs) in stream_types()
        .into_iter()
        .filter(|(t, _)| matches!(*t, "default" | "reference"))
    {
        let st = make_stream(&run, &inputs);
        let mut rng = Rng(3);
        for what in ["0xff", "random"] {
            let data: Vec<u8> = (0..4 << 20)
                .map(|_| {
                    if what == "0xff" {
                        0xff
                    } else {
                        rng.next_u64() as u8
                    }
                })
                .collect();
            let mut dec = Decoder::with_code(&st.run.image, plain(&st), st.code.clone());
            let mut losses = 0u64;
            let mut sink = |e: &FlowElement| {
                if let FlowElement::Loss { .. } = e {
                    losses += 1;
                }
            };
            decode_all(&mut dec, &data, &mut sink);
            assert!(dec.stats().errors > 0, "{stype} {what}");
            assert_eq!(dec.stats().errors, losses, "{stype} {what}");
            assert!(
                dec.heap_bytes() < 1 << 20,
                "{stype} {what}: {} bytes",
                dec.heap_bytes()
            );
        }
    }
}

/// Hostile files: every one is reported (none decodes to a trace quietly), none panics.
#[test]
fn hostile_files_are_reported() {
    let run = run_test_program("recurse-rv64gc", 4);
    for (stype, inputs) in stream_types() {
        let st = make_stream(&run, &inputs);
        let mut rng = Rng(7);
        let random: Vec<u8> = (0..4096).map(|_| rng.next_u64() as u8).collect();
        let mut header_garbage = st.bytes[..st.packet_offsets[3]].to_vec();
        header_garbage.extend((0..2048).map(|_| rng.next_u64() as u8));
        let files: Vec<(&str, Vec<u8>)> = vec![
            ("empty", vec![]),
            ("one byte", vec![0x42]),
            ("all 0x00", vec![0; 4096]),
            ("all 0xff", vec![0xff; 4096]),
            ("random", random),
            ("valid start then garbage", header_garbage),
            ("long run of 0x55", vec![0x55; 1 << 16]),
        ];
        for (what, data) in files {
            let d = decode(&st, &data);
            assert_eq!(d.errors, d.losses, "{stype} {what}");
            assert!(d.errors > 0, "{stype} {what}: not reported");
        }
    }
}

/// `decode_read` (the CLI's, memory flat in the input's size) gives exactly what `decode_all`
/// gives on the whole input: damaged streams, and hostile bytes spanning many of its windows.
#[test]
fn streaming_decode_equals_whole_input_decode() {
    let run = run_test_program("recurse-rv64gc", 4);
    for (stype, inputs) in stream_types() {
        let st = make_stream(&run, &inputs);
        let mut rng = Rng(11);
        let mut inputs: Vec<Vec<u8>> = vec![st.bytes.clone()];
        for class in CLASSES {
            inputs.push(damage(class, &st, &mut rng).0);
        }
        inputs.push((0..300_000).map(|_| rng.next_u64() as u8).collect());
        inputs.push(vec![0xff; 200_000]);
        for data in &inputs {
            let mut whole = Vec::new();
            let mut dec = Decoder::with_code(&st.run.image, plain(&st), st.code.clone());
            decode_all(&mut dec, data, &mut whole);
            let mut streamed = Vec::new();
            let mut dec2 = Decoder::with_code(&st.run.image, plain(&st), st.code.clone());
            let n = decode_read(
                &mut dec2,
                ChunkedReader {
                    data,
                    seed: 5,
                    max: 700,
                },
                &mut streamed,
            )
            .unwrap()
            .bytes;
            assert_eq!(n, data.len() as u64);
            assert!(whole == streamed, "{stype}: {} bytes", data.len());
            assert_eq!(dec.stats(), dec2.stats(), "{stype}");
        }
    }
}
