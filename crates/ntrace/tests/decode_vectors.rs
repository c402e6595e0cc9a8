//! Every NexRv-made stream of the conformance set decodes to exactly the retired PC list.

use rvtrace_flow::{FlowElement, PcWriter};
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::decoder::{decode, DecoderConfig};
use rvtrace_ntrace::insn::LinkRule;
use rvtrace_testkit::{assert_pcs_eq, conformance_dir, parse_pcs, read_vector, PROGRAMS};
use std::path::Path;

fn decode_pcs(dir: &Path, prog: &str, bin: &str, link: LinkRule) -> Vec<u64> {
    let mut image = Image::new();
    let xlen = image
        .load_file(&dir.join(format!("ntrace/{prog}/{prog}.elf")))
        .unwrap()
        .xlen;
    let mut cfg = DecoderConfig::new(IsaConfig::new(xlen));
    cfg.link = link;
    let data = read_vector(dir, bin);
    let mut elements: Vec<FlowElement> = Vec::new();
    let st = decode(&image, cfg, &data, &mut elements);
    let problems: Vec<_> = elements
        .iter()
        .filter(|e| matches!(e, FlowElement::Loss { .. }))
        .collect();
    assert!(problems.is_empty(), "{bin}: {problems:?}");
    assert_eq!(st.errors, 0, "{bin}");
    let mut w = PcWriter::new(&image, Vec::new());
    for e in &elements {
        rvtrace_flow::FlowSink::element(&mut w, e);
    }
    parse_pcs(&w.finish().unwrap())
}

#[test]
fn nexrv_streams_decode_to_the_pc_lists() {
    let Some(dir) = conformance_dir() else { return };
    for (prog, n) in PROGRAMS {
        let want = parse_pcs(&read_vector(&dir, &format!("ntrace/{prog}/{prog}.pcs.txt")));
        assert_eq!(want.len(), n);
        for cfg in ["btm", "htm", "htm-rpt2"] {
            let bin = format!("ntrace/{prog}/{prog}-{cfg}.bin");
            let got = decode_pcs(&dir, prog, &bin, LinkRule::Spec);
            assert_pcs_eq(&bin, "decoded", &got, "expected", &want);
        }
    }
}

/// The call-stack streams of `variant-jalt0-as-jump/` were encoded by NexRv from an objdump in
/// which `jal t0` had become `j` (and `jr t0` is a plain indirect jump for NexRv): they decode with
/// x1 as the only link register, and also with the specification's x1/x5 rule, since our decoder
/// pops the entry `jal t0` pushed at the `jr t0`, which the stream reports explicitly. The same
/// holds for the `unverified/` streams (NexRv's own classification, `jal t0` a call), which
/// NexRv's decoder cannot decode: the returns NexRv's 8-entry ring predicts are the ones our
/// decoder's stack of the real nesting predicts.
#[test]
fn nexrv_callstack_variant_streams_decode() {
    let Some(dir) = conformance_dir() else { return };
    for (prog, _) in PROGRAMS {
        let want = parse_pcs(&read_vector(&dir, &format!("ntrace/{prog}/{prog}.pcs.txt")));
        for (sub, cfg) in ["variant-jalt0-as-jump", "unverified"]
            .into_iter()
            .flat_map(|s| [(s, "htm-cs8"), (s, "htm-cs8-rpt2")])
        {
            let bin = format!("ntrace/{prog}/{sub}/{prog}-{cfg}.bin");
            for link in [LinkRule::Spec, LinkRule::X1Only] {
                let got = decode_pcs(&dir, prog, &bin, link);
                assert_pcs_eq(
                    &format!("{bin} {link:?}"),
                    "decoded",
                    &got,
                    "expected",
                    &want,
                );
            }
        }
    }
}
