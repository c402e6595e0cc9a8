//! `Encoder::lost` (trace lost upstream, `rvtrace transcode`): the decoder reports one loss
//! (the Error message, N-Trace 7.4) where it was, and every instruction before and after it.

use rvtrace_flow::LossReason;
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};
use rvtrace_ntrace::encoder::Encoder;
use rvtrace_ntrace::options::{EncoderConfig, Mode};
use rvtrace_testkit::flow::decode_pcs;
use rvtrace_testkit::{assert_pcs_eq, run_test_program};

#[test]
fn a_loss_is_one_error_message_and_nothing_else_is_lost() {
    let run = run_test_program("traps-rv64gc", 4);
    let isa = IsaConfig::rv64();
    for mode in [Mode::Htm, Mode::Btm] {
        // Cut at several places (after a jump, a trap, a branch, ...), twice in a row at one.
        for cut in [1, 1000, 33333, 57001, 80000] {
            let mut cfg = EncoderConfig::new(isa.xlen);
            cfg.mode = mode;
            cfg.ownership = true;
            let mut enc = Encoder::new(cfg);
            let mut bytes = Vec::new();
            for (k, r) in run.records.iter().enumerate() {
                if k == cut {
                    enc.lost(&mut bytes);
                    if cut == 1000 {
                        enc.lost(&mut bytes);
                    }
                }
                enc.push(r, &mut bytes);
            }
            enc.finish(&mut bytes);
            let mut dec = Decoder::new(&run.image, DecoderConfig::new(isa));
            let (got, losses) = decode_pcs(&mut dec, &run.image, &bytes);
            let what = format!("{mode:?} lost before record {cut}");
            assert_eq!(losses.len(), 1, "{what}: {losses:?}");
            assert!(matches!(losses[0], LossReason::Overflow(_)), "{what}");
            assert_pcs_eq(&what, "decoded", &got, "run", &run.pcs);
        }
    }
}
