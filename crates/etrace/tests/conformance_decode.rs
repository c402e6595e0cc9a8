//! rvtrace's decoder rebuilds the retired-PC list (`X.pcs.txt`) of every reference-flow trace in
//! the conformance vectors (`etrace/<prog>/<cfg>/X.te_inst_raw`).

use rvtrace_etrace::code::Code;
use rvtrace_etrace::config::{params_from_scf, Framing};
use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
use rvtrace_etrace::{IOptions, Params};
use rvtrace_flow::{decode_all, FlowElement, PcWriter};
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use rvtrace_testkit::{assert_pcs_eq, conformance_dir, parse_pcs, read_vector, PROGRAMS};

const CONFIGS: [&str; 3] = ["itype3_basic", "itype4_basic", "itype4_debug"];

#[test]
fn reference_traces_decode_to_the_retired_pcs() {
    let Some(dir) = conformance_dir() else {
        return;
    };
    for (prog, count) in PROGRAMS {
        let bits = if prog.contains("rv64") { 64 } else { 32 };
        let mut image = Image::new();
        let elf = dir.join(format!("etrace/{prog}/{prog}.elf"));
        let xlen = image.load_file(&elf).unwrap().xlen;
        let code = Code::new(&image, IsaConfig::new(xlen));
        let want = parse_pcs(&read_vector(&dir, &format!("etrace/{prog}/{prog}.pcs.txt")));
        assert_eq!(want.len(), count);
        for cfg in CONFIGS {
            let base = format!("etrace/{prog}/{cfg}");
            let scf = read_vector(&dir, &format!("{base}/hardware_{bits}.scf"));
            let p =
                params_from_scf(std::str::from_utf8(&scf).unwrap(), Params::reference(64)).unwrap();
            let raw = read_vector(&dir, &format!("{base}/{prog}.te_inst_raw"));
            let o = DecoderConfig::with_layout(p, IOptions::default(), Framing::Raw, code.isa);
            let mut dec = Decoder::with_code(&image, o, code.clone());
            let mut elements = Vec::new();
            let mut w = PcWriter::new(&image, Vec::new());
            let mut sink = |e: &FlowElement| {
                if !matches!(e, FlowElement::Range { .. }) {
                    elements.push(e.clone());
                }
                rvtrace_flow::FlowSink::element(&mut w, e);
            };
            decode_all(&mut dec, &raw, &mut sink);
            let got = parse_pcs(&w.finish().unwrap());
            let errors: Vec<_> = elements
                .iter()
                .filter(|e| matches!(e, FlowElement::Loss { .. }))
                .collect();
            assert!(errors.is_empty(), "{base}: {errors:?}");
            assert_pcs_eq(&base, "decoded", &got, "X.pcs.txt", &want);
        }
    }
}
