//! The reference flow's `te_inst_raw` files (conformance vectors, `etrace/<prog>/<cfg>/X.te_inst_raw`)
//! parse to exactly the packets of its deserialiser's CSV (`X.te_inst`), and re-encoding every
//! packet gives the file back byte for byte.

use rvtrace_etrace::codec::encap::{MAX_PACKET, RAW_TE_INST};
use rvtrace_etrace::codec::te_inst::CSV_HEADER;
use rvtrace_etrace::codec::{encode_frame, EncapConfig, Frame, FrameFields, FrameReader};
use rvtrace_etrace::config::params_from_scf;
use rvtrace_etrace::{IOptions, Params, TeInst};
use rvtrace_testkit::{conformance_dir, read_vector, PROGRAMS};

const CONFIGS: [&str; 3] = ["itype3_basic", "itype4_basic", "itype4_debug"];

#[test]
fn te_inst_raw_matches_deserialiser_csv() {
    let Some(dir) = conformance_dir() else {
        return;
    };
    let mut checked = 0;
    for (prog, _) in PROGRAMS {
        let bits = if prog.contains("rv64") { 64 } else { 32 };
        for cfg in CONFIGS {
            let base = format!("etrace/{prog}/{cfg}");
            let scf = read_vector(&dir, &format!("{base}/hardware_{bits}.scf"));
            let p =
                params_from_scf(std::str::from_utf8(&scf).unwrap(), Params::reference(64)).unwrap();
            let raw = read_vector(&dir, &format!("{base}/{prog}.te_inst_raw"));
            let csv = read_vector(&dir, &format!("{base}/{prog}.te_inst"));
            let csv = String::from_utf8(csv).unwrap();
            let mut lines = csv.lines();
            assert_eq!(lines.next(), Some(CSV_HEADER));
            let mut o = IOptions::default();
            let mut rebuilt = Vec::with_capacity(raw.len());
            for (n, (off, f)) in FrameReader::new(&raw, EncapConfig::TE_INST_RAW).enumerate() {
                let Frame::Normal(fr) = f.unwrap_or_else(|e| panic!("{base}: {off}: {e}")) else {
                    panic!("{base}: {off}: null packet");
                };
                assert_eq!(fr.flow, RAW_TE_INST, "{base}: {off}");
                let pkt = TeInst::decode(fr.payload(), &p, o)
                    .unwrap_or_else(|e| panic!("{base}: offset {off}: {e}"));
                if let TeInst::Support(s) = pkt {
                    o = IOptions::from_field(s.ioptions, p.options_layout);
                }
                let want = lines
                    .next()
                    .unwrap_or_else(|| panic!("{base}: extra packet"));
                assert_eq!(pkt.csv(&p).to_string(), want, "{base}: packet {n} at {off}");
                let mut out = [0; MAX_PACKET];
                let fields = FrameFields {
                    flow: RAW_TE_INST,
                    ..FrameFields::default()
                };
                let len = encode_frame(&pkt, &p, o, &fields, &EncapConfig::TE_INST_RAW, &mut out)
                    .unwrap();
                rebuilt.extend_from_slice(&out[..len]);
            }
            assert_eq!(lines.next(), None, "{base}: missing packets");
            assert!(rebuilt == raw, "{base}: re-encoded bytes differ");
            checked += 1;
        }
    }
    assert_eq!(checked, 18);
}
