//! Transcoding (what `rvtrace transcode` composes: decoder -> `FlowIngress` -> the other
//! protocol's encoder) over every test program: E->N, N->E and E->N->E decode to the run's PCs,
//! and give the bytes `encode` makes from the original ingress wherever the input protocol
//! carries everything the output's encoder reads. A loss in the input is kept in the output.

use rvtrace_decode::transcode::{AdaptStats, EtraceOut, FlowIngress, NtraceOut};
use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::decoder::{Decoder as EDecoder, DecoderConfig as EConfig};
use rvtrace_etrace::encoder::{Encoder as EEncoder, FrameWriter};
use rvtrace_flow::{decode_all, FlowElement, FlowSink, LossReason, PcWriter};
use rvtrace_image::Image;
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::decoder::{Decoder as NDecoder, DecoderConfig as NConfig};
use rvtrace_ntrace::encoder::Encoder as NEncoder;
use rvtrace_ntrace::options::EncoderConfig;
use rvtrace_testkit::{assert_pcs_eq, parse_pcs, run_program, traceable_programs};

fn isa(image: &Image) -> IsaConfig {
    IsaConfig::new(image.files()[0].xlen)
}

fn ncfg(image: &Image, ownership: bool) -> EncoderConfig {
    let mut c = EncoderConfig::new(isa(image).xlen);
    c.ownership = ownership;
    c
}

fn ecfg(image: &Image) -> TraceConfig {
    TraceConfig::build(&ConfigInputs {
        xlen_bits: isa(image).xlen.bits() as u8,
        itype_width: Some(4),
        ..ConfigInputs::default()
    })
    .unwrap()
}

fn n_encode(cfg: EncoderConfig, records: &[Record]) -> Vec<u8> {
    rvtrace_ntrace::encoder::encode(cfg, records).0
}

fn e_encode(cfg: &TraceConfig, records: &[Record]) -> Vec<u8> {
    let mut enc = EEncoder::new(cfg, FrameWriter::new(Vec::new(), cfg)).unwrap();
    for r in records {
        enc.push(r).unwrap();
    }
    enc.finish().unwrap().into_inner()
}

/// Decodes `bytes` (N-Trace when `ntrace`) into `sink`.
fn decode<S: FlowSink>(image: &Image, ntrace: bool, bytes: &[u8], sink: &mut S) {
    if ntrace {
        let mut d = NDecoder::new(image, NConfig::new(isa(image)));
        decode_all(&mut d, bytes, sink);
    } else {
        let opts = EConfig::from_config(&ecfg(image), isa(image));
        let mut d = EDecoder::new(image, opts);
        decode_all(&mut d, bytes, sink);
    }
}

/// E-Trace (default options) -> N-Trace with `cfg`; the adapter's paths refused.
fn e_to_n_refused(image: &Image, bytes: &[u8], cfg: EncoderConfig) -> (Vec<u8>, AdaptStats) {
    let sink = NtraceOut {
        enc: NEncoder::new(cfg),
        bytes: Vec::new(),
    };
    let mut a = FlowIngress::new(image, isa(image), 4, sink);
    decode(image, false, bytes, &mut a);
    let (mut s, st) = a.finish();
    s.enc.finish(&mut s.bytes);
    (s.bytes, st)
}

fn e_to_n(image: &Image, bytes: &[u8], cfg: EncoderConfig) -> Vec<u8> {
    let (b, st) = e_to_n_refused(image, bytes, cfg);
    assert_eq!(st.refused, 0);
    b
}

/// N-Trace -> E-Trace (default options); the adapter's paths refused.
fn n_to_e_refused(image: &Image, bytes: &[u8]) -> (Vec<u8>, AdaptStats) {
    let cfg = ecfg(image);
    let sink = EtraceOut {
        enc: EEncoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap(),
        post_iss: None,
        error: None,
    };
    let mut a = FlowIngress::new(image, isa(image), 4, sink);
    decode(image, true, bytes, &mut a);
    let (s, st) = a.finish();
    assert_eq!(s.error, None);
    (s.enc.finish().unwrap().into_inner(), st)
}

fn n_to_e(image: &Image, bytes: &[u8]) -> Vec<u8> {
    let (b, st) = n_to_e_refused(image, bytes);
    assert_eq!(st.refused, 0);
    b
}

/// The decoded PCs and losses.
fn pcs(image: &Image, ntrace: bool, bytes: &[u8]) -> (Vec<u64>, Vec<LossReason>) {
    let mut w = PcWriter::new(image, Vec::new());
    let mut losses = Vec::new();
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Loss { reason, .. } = e {
            losses.push(reason.clone());
        }
        w.element(e);
    };
    decode(image, ntrace, bytes, &mut sink);
    (parse_pcs(&w.finish().unwrap()), losses)
}

/// Whether N-Trace with Ownership messages carries every record field the E-Trace encoder
/// reads: it does not carry trap causes and values (N-Trace 7.3: B-TYPE says exception or
/// interrupt only), which the adapter derives for `ecall`/`ebreak` only; so a program with a
/// fault or an interrupt (a record that retires nothing) or a non-zero `tval` differs there.
fn ntrace_carries_all(records: &[Record]) -> bool {
    records.iter().all(|r| r.retires() && r.tval == 0)
}

/// Whether E-Trace carries the privilege of every record: not that of a trap taken at a trap
/// return's target before anything retired there (its trap packet reports the handler's
/// privilege: `payload.adoc`, "Format 3 thaddr, address and privilege fields"), which N-Trace's
/// Ownership messages report.
fn etrace_carries_privilege(records: &[Record]) -> bool {
    records
        .windows(2)
        .all(|w| !(w[0].itype == Itype::TrapReturn && !w[1].retires() && w[0].priv_ != w[1].priv_))
}

#[test]
fn test_programs_transcode() {
    let identical = rvtrace_testkit::par::par_map(&traceable_programs(), |elf| {
        let name = elf.file_name().unwrap().to_str().unwrap().to_string();
        let run = run_program(elf, &format!("elf/{name}"), 4);
        let im = &run.image;
        let n_direct = n_encode(ncfg(im, false), &run.records);
        let n_own = n_encode(ncfg(im, true), &run.records);
        let e_direct = e_encode(&ecfg(im), &run.records);

        // E -> N: N-Trace reads no field E-Trace lacks: always the bytes of `encode ntrace`.
        let e2n = e_to_n(im, &e_direct, ncfg(im, false));
        let (got, losses) = pcs(im, true, &e2n);
        assert!(losses.is_empty(), "{name} E->N: {losses:?}");
        assert_pcs_eq(&name, "E->N decoded", &got, "run", &run.pcs);
        assert!(e2n == n_direct, "{name}: E->N differs from encode ntrace");
        let e2n_own = e_to_n(im, &e_direct, ncfg(im, true));
        if etrace_carries_privilege(&run.records) {
            assert!(e2n_own == n_own, "{name}: E->N --ownership differs");
        }

        // N -> E and E -> N -> E: the PCs always; the bytes where N-Trace carries all.
        let n2e = n_to_e(im, &n_own);
        let (got, losses) = pcs(im, false, &n2e);
        assert!(losses.is_empty(), "{name} N->E: {losses:?}");
        assert_pcs_eq(&name, "N->E decoded", &got, "run", &run.pcs);
        let e2n2e = n_to_e(im, &e2n_own);
        let (got, _) = pcs(im, false, &e2n2e);
        assert_pcs_eq(&name, "E->N->E decoded", &got, "run", &run.pcs);
        let carries_all = ntrace_carries_all(&run.records);
        if carries_all {
            assert!(n2e == e_direct, "{name}: N->E differs from encode etrace");
            assert!(e2n2e == e_direct, "{name}: E->N->E differs");
        }
        carries_all
    });
    let programs = identical.len();
    let e_identical = identical.iter().filter(|&&i| i).count();
    eprintln!("{programs} programs; N->E byte-identical to encode etrace: {e_identical}");
    assert!(
        programs >= 38 && e_identical >= 20,
        "{programs} {e_identical}"
    );
}

/// `bytes` with 24 bytes from `at` overwritten (a damaged trace).
fn damage(bytes: &[u8], at: usize) -> Vec<u8> {
    let mut b = bytes.to_vec();
    for x in &mut b[at..at + 24] {
        *x = 0xa5;
    }
    b
}

/// Losses in `flow` counted as the adapter passes them on: one for several with no
/// instruction between them.
fn loss_groups(losses_and_ranges: &[bool]) -> u64 {
    let (mut n, mut since) = (0, true);
    for &is_loss in losses_and_ranges {
        if is_loss && std::mem::take(&mut since) {
            n += 1;
        } else if !is_loss {
            since = true;
        }
    }
    n
}

/// The input's losses (true) and ranges (false), in order.
fn losses_and_ranges(image: &Image, ntrace: bool, bytes: &[u8]) -> Vec<bool> {
    let mut v = Vec::new();
    let mut sink = |e: &FlowElement| match e {
        FlowElement::Loss { .. } => v.push(true),
        FlowElement::Range { .. } => v.push(false),
        _ => {}
    };
    decode(image, ntrace, bytes, &mut sink);
    v
}

/// A loss in the input is a loss in the output, at the same place: the output decodes to the
/// input's PCs, with a loss (the output's way of saying it: N-Trace Error, E-Trace trace_lost,
/// both `Overflow`) for each of the input's (several with no instruction between them are
/// one). Where the damaged input decodes to a path no record can follow (through what is no
/// instruction), the output loses that path and says so too.
#[test]
fn losses_are_kept() {
    let run = run_program(
        &rvtrace_testkit::test_program("recurse-rv64gc"),
        "elf/recurse-rv64gc.elf",
        4,
    );
    let im = &run.image;
    let e = e_encode(&ecfg(im), &run.records);
    let n = n_encode(ncfg(im, false), &run.records);
    let (mut clean, mut refused_seen) = (0, 0);
    for k in 1..8 {
        for input_ntrace in [false, true] {
            let what = format!(
                "damage at {k}/8 of the {}",
                if input_ntrace { "N-Trace" } else { "E-Trace" }
            );
            let bad = if input_ntrace {
                damage(&n, n.len() * k / 8)
            } else {
                damage(&e, e.len() * k / 8)
            };
            let (in_pcs, in_losses) = pcs(im, input_ntrace, &bad);
            assert!(!in_losses.is_empty(), "{what}");
            let (out, st) = if input_ntrace {
                n_to_e_refused(im, &bad)
            } else {
                e_to_n_refused(im, &bad, ncfg(im, false))
            };
            let (out_pcs, out_losses) = pcs(im, !input_ntrace, &out);
            assert_eq!(out_losses.len() as u64, st.losses, "{what}: {out_losses:?}");
            assert!(
                out_losses
                    .iter()
                    .all(|l| matches!(l, LossReason::Overflow(_))),
                "{what}: {out_losses:?}"
            );
            if st.refused == 0 {
                let groups = loss_groups(&losses_and_ranges(im, input_ntrace, &bad));
                assert_eq!(st.losses, groups, "{what}");
                assert_pcs_eq(&what, "output decoded", &out_pcs, "input decoded", &in_pcs);
                clean += 1;
            } else {
                refused_seen += 1;
                eprintln!("{what}: refused {st:?}");
            }
        }
    }
    eprintln!("damaged inputs: {clean} kept every PC, {refused_seen} had a path refused");
    assert!(clean >= 10, "{clean}");
}

/// Random programs (every call/return kind, traps, timer interrupts, U mode): E->N gives the
/// bytes of `encode ntrace`; N->E decodes to the run's PCs.
#[test]
fn random_programs_transcode() {
    use rvtrace_testkit::randprog::{random_program, seeds};
    for seed in seeds(6) {
        let p = random_program(seed);
        let run = rvtrace_testkit::run_elf_bytes(&p.elf, 4);
        let im = &run.image;
        let what = format!("seed {seed}");
        let e_direct = e_encode(&ecfg(im), &run.records);
        let e2n = e_to_n(im, &e_direct, ncfg(im, false));
        assert!(
            e2n == n_encode(ncfg(im, false), &run.records),
            "{what}: E->N"
        );
        let n2e = n_to_e(im, &n_encode(ncfg(im, true), &run.records));
        let (got, losses) = pcs(im, false, &n2e);
        assert!(losses.is_empty(), "{what}: {losses:?}");
        assert_pcs_eq(&what, "N->E decoded", &got, "run", &run.pcs);
    }
}

/// Time stamps: E-Trace reports time in its synchronisation packets only; transcoded to N-Trace
/// with time stamps, every message carries the time of the last E-Trace time stamp before it
/// (a step function of the hart's time, never running backwards).
#[test]
fn time_stamps_are_kept() {
    let run = run_program(
        &rvtrace_testkit::test_program("recurse-rv64gc"),
        "elf/recurse-rv64gc.elf",
        4,
    );
    let im = &run.image;
    let ecfg_t = TraceConfig::build(&ConfigInputs {
        xlen_bits: isa(im).xlen.bits() as u8,
        itype_width: Some(4),
        timestamps: true,
        resync: Some(64),
        ..ConfigInputs::default()
    })
    .unwrap();
    let e = e_encode(&ecfg_t, &run.records);
    let times = |ntrace: bool, bytes: &[u8], cfg: &TraceConfig| {
        let mut t = Vec::new();
        let mut sink = |x: &FlowElement| {
            if let FlowElement::Time { time } = x {
                t.push(*time);
            }
        };
        if ntrace {
            let mut d = NDecoder::new(im, NConfig::new(isa(im)));
            decode_all(&mut d, bytes, &mut sink);
        } else {
            let mut d = EDecoder::new(im, EConfig::from_config(cfg, isa(im)));
            decode_all(&mut d, bytes, &mut sink);
        }
        t
    };
    let e_times = times(false, &e, &ecfg_t);
    assert!(e_times.len() > 10);
    let mut ncfg_t = ncfg(im, false);
    ncfg_t.timestamps = true;
    let sink = NtraceOut {
        enc: NEncoder::new(ncfg_t),
        bytes: Vec::new(),
    };
    let mut a = FlowIngress::new(im, isa(im), 4, sink);
    let mut d = EDecoder::new(im, EConfig::from_config(&ecfg_t, isa(im)));
    decode_all(&mut d, &e, &mut a);
    let (mut s, _) = a.finish();
    s.enc.finish(&mut s.bytes);
    let n_times = times(true, &s.bytes, &ecfg_t);
    assert!(n_times.len() > e_times.len());
    assert!(n_times.windows(2).all(|w| w[0] <= w[1]));
    assert!(
        n_times.iter().all(|t| *t == 0 || e_times.contains(t)),
        "{n_times:?}"
    );
    assert_eq!(n_times.last(), e_times.last());
}
