//! The front door: a trace's protocol and settings found the same way for every caller (the
//! options, the sidecar, the bytes), and the one decoder type giving the run's instructions for
//! both protocols.

use rvtrace_decode::{resolve, Config, DecodeOptions, Error, Protocol, SrcOptions};
use rvtrace_etrace::config::{ConfigInputs, Framing, Preset, TraceConfig};
use rvtrace_etrace::encoder::{Encoder, FrameWriter};
use rvtrace_etrace::options::Options;
use rvtrace_flow::{decode_all, PcWriter};
use rvtrace_testkit::{parse_pcs, run_test_program, ProgramRun};
use std::path::{Path, PathBuf};

/// A fresh directory for this test's files.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rvtrace-decode-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run() -> ProgramRun {
    run_test_program("fnptr-rv64gc", 4)
}

/// The PCs the resolved trace at `path` decodes to.
fn decoded(run: &ProgramRun, path: &Path, opts: &DecodeOptions) -> (Protocol, Vec<u64>) {
    let bytes = std::fs::read(path).unwrap();
    let xlen = run.image.files()[0].xlen;
    let trace = resolve(Some(path), &bytes, true, opts, xlen).unwrap();
    let mut pcs = PcWriter::new(&run.image, Vec::new());
    let st = decode_all(&mut trace.decoder(&run.image), &bytes, &mut pcs);
    assert_eq!(st.losses, 0, "{}", path.display());
    (trace.protocol, parse_pcs(&pcs.finish().unwrap()))
}

fn etrace_bytes(run: &ProgramRun, cfg: &TraceConfig) -> Vec<u8> {
    let mut enc = Encoder::new(cfg, FrameWriter::new(Vec::new(), cfg)).unwrap();
    enc.push_all(&run.records).unwrap();
    enc.finish().unwrap().into_inner()
}

#[test]
fn ntrace_is_recognised_by_its_bytes() {
    let run = run();
    let d = dir("ntrace");
    let cfg = rvtrace_ntrace::options::EncoderConfig::new(run.image.files()[0].xlen);
    let (bytes, _) = rvtrace_ntrace::encoder::encode(cfg, &run.records);
    let t = d.join("t.nex");
    std::fs::write(&t, bytes).unwrap();
    let (p, pcs) = decoded(&run, &t, &DecodeOptions::default());
    assert_eq!(p, Protocol::Ntrace);
    assert_eq!(pcs, run.pcs);
}

#[test]
fn etrace_encapsulated_is_recognised_by_its_sidecar() {
    let run = run();
    let d = dir("encap");
    // Options the trace does not carry: a srcID field and implicit return with a stack.
    let o = Options {
        srcid_bits: Some(2),
        srcid: Some(1),
        implicit_return: true,
        return_stack: Some(8),
        ..Options::default()
    };
    let cfg = o.config(64, None).unwrap();
    let t = d.join("t.te");
    std::fs::write(&t, etrace_bytes(&run, &cfg)).unwrap();
    // Without the sidecar nothing tells the protocol: an encapsulated stream has no mark.
    let bytes = std::fs::read(&t).unwrap();
    let xlen = run.image.files()[0].xlen;
    let e = resolve(Some(&t), &bytes, true, &DecodeOptions::default(), xlen).unwrap_err();
    assert!(matches!(e, Error::UnknownProtocol { .. }), "{e}");
    assert!(e.to_string().contains("--protocol ntrace|etrace"), "{e}");
    o.for_sidecar(&cfg).write(&t).unwrap();
    let (p, pcs) = decoded(&run, &t, &DecodeOptions::default());
    assert_eq!(p, Protocol::Etrace);
    assert_eq!(pcs, run.pcs);
    // The common options are E-Trace's srcID: another source has no packets.
    let other = DecodeOptions {
        src: SrcOptions {
            bits: None,
            id: Some(2),
        },
        ..DecodeOptions::default()
    };
    let trace = resolve(Some(&t), &bytes, true, &other, xlen).unwrap();
    let Config::Etrace { cfg, .. } = &trace.config else {
        panic!("not E-Trace")
    };
    assert_eq!((cfg.srcid, trace.src_bits()), (Some(2), 2));
    let st = decode_all(&mut trace.decoder(&run.image), &bytes, &mut |_: &_| {});
    assert_eq!(st.instructions, 0);
    // A contradicting option wins, with a warning that names the sidecar.
    let contra = DecodeOptions {
        src: SrcOptions {
            bits: Some(3),
            id: None,
        },
        ..DecodeOptions::default()
    };
    let trace = resolve(Some(&t), &bytes, true, &contra, xlen).unwrap();
    assert_eq!(trace.src_bits(), 3);
    assert!(
        trace.warnings[0].starts_with("--src-bits 3 contradicts")
            && trace.warnings[0].contains("t.te.meta"),
        "{:?}",
        trace.warnings
    );
}

/// A te_inst_raw stream without a sidecar: the library and the command line make the same
/// choice (both resolve here), and a stream of the reference preset decodes.
#[test]
fn te_inst_raw_is_recognised_by_its_bytes() {
    let run = run();
    let d = dir("raw");
    let cfg = TraceConfig::build(&ConfigInputs {
        preset: Preset::Reference,
        xlen_bits: 64,
        framing: Some(Framing::Raw),
        ..ConfigInputs::default()
    })
    .unwrap();
    let t = d.join("t.raw");
    std::fs::write(&t, etrace_bytes(&run, &cfg)).unwrap();
    let (p, pcs) = decoded(&run, &t, &DecodeOptions::default());
    assert_eq!(p, Protocol::Etrace);
    assert_eq!(pcs, run.pcs);
    let bytes = std::fs::read(&t).unwrap();
    let trace = resolve(
        Some(&t),
        &bytes,
        true,
        &DecodeOptions::default(),
        run.image.files()[0].xlen,
    )
    .unwrap();
    let Config::Etrace { cfg, .. } = &trace.config else {
        panic!("not E-Trace")
    };
    assert_eq!((cfg.framing, cfg.preset), (Framing::Raw, Preset::Reference));
}

/// Files that are not traces are named, whatever the protocol asked for.
#[test]
fn wrong_kinds_are_named() {
    let run = run();
    let elf = rvtrace_testkit::test_program("fnptr-rv64gc");
    let bytes = std::fs::read(&elf).unwrap();
    let xlen = run.image.files()[0].xlen;
    for opts in [
        DecodeOptions::default(),
        DecodeOptions::new(Protocol::Ntrace),
        DecodeOptions::new(Protocol::Etrace),
    ] {
        let e = resolve(None, &bytes, true, &opts, xlen).unwrap_err();
        assert!(
            matches!(&e, Error::WrongKind { what, .. } if what.starts_with("an ELF file")),
            "{e}"
        );
    }
    // An N-Trace stream read as E-Trace, and the other way round.
    let cfg = rvtrace_ntrace::options::EncoderConfig::new(xlen);
    let (nbytes, _) = rvtrace_ntrace::encoder::encode(cfg, &run.records);
    let e = resolve(
        None,
        &nbytes,
        true,
        &DecodeOptions::new(Protocol::Etrace),
        xlen,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("an N-Trace (Nexus MSEO/MDO) byte stream"),
        "{e}"
    );
    let raw = TraceConfig::build(&ConfigInputs {
        preset: Preset::Reference,
        xlen_bits: 64,
        ..ConfigInputs::default()
    })
    .unwrap();
    let ebytes = etrace_bytes(&run, &raw);
    let e = resolve(
        None,
        &ebytes,
        true,
        &DecodeOptions::new(Protocol::Ntrace),
        xlen,
    )
    .unwrap_err();
    assert!(e.to_string().contains("te_inst_raw"), "{e}");
}

/// An encapsulated E-Trace decoded without its sidecar: the hint names the framing option the
/// stream does not carry (here the srcID width), found by trying.
#[test]
fn a_missing_framing_is_named() {
    let run = run();
    let o = Options {
        srcid_bits: Some(2),
        srcid: Some(1),
        ..Options::default()
    };
    let cfg = o.config(64, None).unwrap();
    let bytes = etrace_bytes(&run, &cfg);
    let xlen = run.image.files()[0].xlen;
    let trace = resolve(
        None,
        &bytes,
        true,
        &DecodeOptions::new(Protocol::Etrace),
        xlen,
    )
    .unwrap();
    let mut first = None;
    let st = decode_all(
        &mut trace.decoder(&run.image),
        &bytes,
        &mut |e: &rvtrace_flow::FlowElement| {
            if let rvtrace_flow::FlowElement::Loss { reason, .. } = e {
                first.get_or_insert(reason.clone());
            }
        },
    );
    assert!(st.losses > 0);
    let head = &bytes[..bytes.len().min(1 << 16)];
    let hint = trace.loss_hint(&run.image, None, None, head, &first.unwrap(), false);
    match hint {
        Some(rvtrace_decode::Hint::Warning(w)) => assert!(w.contains("--src-bits 2"), "{w}"),
        h => panic!("{h:?}"),
    }
}
