//! `Encoder::lost` (trace lost upstream, `rvtrace transcode`): the decoder reports one loss (the
//! support packet with qual_status trace_lost) where it was, and every instruction before and
//! after it.

use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
use rvtrace_etrace::encoder::{Encoder, FrameWriter};
use rvtrace_flow::LossReason;
use rvtrace_isa::IsaConfig;
use rvtrace_testkit::flow::decode_pcs;
use rvtrace_testkit::{assert_pcs_eq, run_test_program};

#[test]
fn a_loss_is_one_trace_lost_packet_and_nothing_else_is_lost() {
    let run = run_test_program("traps-rv64gc", 4);
    let isa = IsaConfig::rv64();
    for implicit_return in [false, true] {
        let cfg = TraceConfig::build(&ConfigInputs {
            xlen_bits: 64,
            itype_width: Some(4),
            implicit_return,
            ..ConfigInputs::default()
        })
        .unwrap();
        for cut in [1, 1000, 33333, 57001, 80000] {
            let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
            for (k, r) in run.records.iter().enumerate() {
                if k == cut {
                    enc.lost().unwrap();
                }
                enc.push(r).unwrap();
            }
            let bytes = enc.finish().unwrap().into_inner();
            let mut dec = Decoder::new(&run.image, DecoderConfig::from_config(&cfg, isa));
            let (got, losses) = decode_pcs(&mut dec, &run.image, &bytes);
            let what = format!("implicit return {implicit_return}, lost before record {cut}");
            assert_eq!(losses.len(), 1, "{what}: {losses:?}");
            assert!(matches!(losses[0], LossReason::Overflow(_)), "{what}");
            assert_pcs_eq(&what, "decoded", &got, "run", &run.pcs);
        }
    }
}
