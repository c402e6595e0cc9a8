//! `--preset nexrv` reproduces NexRv's bytes from the same PCSEQ input.

use rvtrace_ingress::pcseq::PcseqReader;
use rvtrace_ingress::Record;
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::options::{EncoderConfig, Mode};
use rvtrace_testkit::{conformance_dir, read_vector, PROGRAMS};

fn records(text: &[u8]) -> Vec<Record> {
    PcseqReader::new(text).collect::<Result<_, _>>().unwrap()
}

fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))
}

#[test]
fn nexrv_preset_reproduces_nexrv_bytes() {
    let Some(dir) = conformance_dir() else { return };
    let mut failures = Vec::new();
    for (prog, _) in PROGRAMS {
        let xlen = if prog.contains("rv32") {
            rvtrace_isa::Xlen::Rv32
        } else {
            rvtrace_isa::Xlen::Rv64
        };
        let recs = records(&read_vector(
            &dir,
            &format!("ntrace/{prog}/{prog}-PCSEQ.txt"),
        ));
        for (name, mode, rpt) in [
            ("btm", Mode::Btm, false),
            ("htm", Mode::Htm, false),
            ("htm-rpt2", Mode::Htm, true),
        ] {
            let mut cfg = EncoderConfig::new(xlen).nexrv();
            cfg.mode = mode;
            cfg.repeat_history = rpt;
            let (got, _) = encode(cfg, &recs);
            let want = read_vector(&dir, &format!("ntrace/{prog}/{prog}-{name}.bin"));
            if let Some(i) = first_diff(&got, &want) {
                failures.push(format!(
                    "{prog}-{name}: {} bytes, NexRv {}; first difference at byte {i}",
                    got.len(),
                    want.len()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// NexRv's call-stack streams (`-cs 8`, with and without `-rpt 2`) from the same PCSEQ, all six
/// programs: those of `unverified/` (NexRv's own classification: `jal t0` pushes, `jr t0` does
/// not pop, so its 8-entry ring wraps around) and those of `variant-jalt0-as-jump/` (parser
/// recursing deeper than 8 calls).
#[test]
fn nexrv_preset_reproduces_nexrv_callstack_bytes() {
    let Some(dir) = conformance_dir() else { return };
    let mut failures = Vec::new();
    let mut n = 0;
    for (prog, _) in PROGRAMS {
        let xlen = if prog.contains("rv32") {
            rvtrace_isa::Xlen::Rv32
        } else {
            rvtrace_isa::Xlen::Rv64
        };
        let v = format!("ntrace/{prog}/variant-jalt0-as-jump");
        for (pcseq, bins) in [
            (
                format!("ntrace/{prog}/{prog}-PCSEQ.txt"),
                format!("ntrace/{prog}/unverified"),
            ),
            (format!("{v}/{prog}-PCSEQ.txt"), v.clone()),
        ] {
            let recs = records(&read_vector(&dir, &pcseq));
            for (name, rpt) in [("htm-cs8", false), ("htm-cs8-rpt2", true)] {
                let mut cfg = EncoderConfig::new(xlen).nexrv();
                cfg.repeat_history = rpt;
                cfg.call_stack = rvtrace_ntrace::options::CallStack::Full { depth: 8 };
                let (got, _) = encode(cfg, &recs);
                let want = read_vector(&dir, &format!("{bins}/{prog}-{name}.bin"));
                n += 1;
                if let Some(i) = first_diff(&got, &want) {
                    failures.push(format!(
                        "{bins}/{prog}-{name}: {} bytes, NexRv {}; first difference at byte {i}",
                        got.len(),
                        want.len()
                    ));
                }
            }
        }
    }
    assert_eq!(n, 24);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same bytes from the hart model's ingress stream of the conformance programs (run with the
/// command line QEMU had), not only from NexRv's PCSEQ: the preset treats the semihosting
/// `ebreak` (an exception whose handler is the next instruction) as NexRv does.
#[test]
fn nexrv_preset_from_our_ingress() {
    let Some(dir) = conformance_dir() else { return };
    let mut failures = Vec::new();
    for (prog, n) in PROGRAMS {
        let elf = dir.join(format!("ntrace/{prog}/{prog}.elf"));
        let run =
            rvtrace_testkit::run_program(&elf, &rvtrace_testkit::conformance_cmdline(prog), 4);
        assert_eq!(run.pcs.len(), n, "{prog}");
        let xlen = run.image.files()[0].xlen;
        for (name, mode, rpt) in [
            ("btm", Mode::Btm, false),
            ("htm", Mode::Htm, false),
            ("htm-rpt2", Mode::Htm, true),
        ] {
            let mut cfg = EncoderConfig::new(xlen).nexrv();
            cfg.mode = mode;
            cfg.repeat_history = rpt;
            let (got, _) = encode(cfg, &run.records);
            let want = read_vector(&dir, &format!("ntrace/{prog}/{prog}-{name}.bin"));
            if let Some(i) = first_diff(&got, &want) {
                failures.push(format!(
                    "{prog}-{name}: {} bytes, NexRv {}; first difference at byte {i}",
                    got.len(),
                    want.len()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
