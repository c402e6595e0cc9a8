//! With `--preset reference`, rvtrace's encoder turns the reference flow's `encoder_input` into
//! exactly its `te_inst_raw` (conformance vectors `etrace/<prog>/<cfg>/`).

use rvtrace_etrace::config::{ConfigInputs, Preset, TraceConfig};
use rvtrace_etrace::encoder::{Encoder, FrameWriter};
use rvtrace_ingress::etrace_csv::EtraceCsvReader;
use rvtrace_testkit::{conformance_dir, read_vector, PROGRAMS};

const CONFIGS: [&str; 3] = ["itype3_basic", "itype4_basic", "itype4_debug"];

#[test]
fn reference_preset_reproduces_te_inst_raw() {
    let Some(dir) = conformance_dir() else {
        return;
    };
    for (prog, _) in PROGRAMS {
        let bits = if prog.contains("rv64") { 64 } else { 32 };
        for cfg in CONFIGS {
            let base = format!("etrace/{prog}/{cfg}");
            let text =
                |rel: &str| String::from_utf8(read_vector(&dir, &format!("{base}/{rel}"))).unwrap();
            let inputs = ConfigInputs {
                preset: Preset::Reference,
                xlen_bits: bits,
                scf: Some(text(&format!("hardware_{bits}.scf"))),
                ucf: Some(text(&format!("{prog}.encoder.ucf"))),
                ..ConfigInputs::default()
            };
            let tc = TraceConfig::build(&inputs).unwrap();
            let input = read_vector(&dir, &format!("{base}/{prog}.encoder_input"));
            let rd = EtraceCsvReader::new(&input[..]).unwrap();
            let mut enc = Encoder::new(&tc, FrameWriter::new(Vec::new(), &tc)).unwrap();
            for r in rd {
                enc.push(&r.unwrap()).unwrap();
            }
            let out = enc.finish().unwrap().into_inner();
            let want = read_vector(&dir, &format!("{base}/{prog}.te_inst_raw"));
            if out != want {
                let i = out
                    .iter()
                    .zip(&want)
                    .position(|(a, b)| a != b)
                    .unwrap_or(out.len().min(want.len()));
                panic!(
                    "{base}: te_inst_raw differs at byte {i} (ours {} bytes, reference {})\n ours {:02x?}\n want {:02x?}",
                    out.len(),
                    want.len(),
                    &out[i.saturating_sub(8)..(i + 16).min(out.len())],
                    &want[i.saturating_sub(8)..(i + 16).min(want.len())]
                );
            }
        }
    }
}

/// rvtrace's own ingress for the conformance programs (the hart model, `rvtrace run
/// --ingress`) gives the same `te_inst_raw` too: it equals the reference `encoder_input` except
/// for RV32 `c.jal` (itype 9 here, 0 from post-iss), which the reference algorithm treats the same.
#[test]
fn reference_preset_from_our_ingress() {
    let Some(dir) = conformance_dir() else {
        return;
    };
    for (prog, _) in PROGRAMS {
        let bits = if prog.contains("rv64") { 64 } else { 32 };
        let elf = dir.join(format!("etrace/{prog}/{prog}.elf"));
        for width in [3u8, 4] {
            let run = rvtrace_testkit::run_program(
                &elf,
                &rvtrace_testkit::conformance_cmdline(prog),
                width,
            );
            let cfgs: &[&str] = if width == 3 {
                &["itype3_basic"]
            } else {
                &["itype4_basic", "itype4_debug"]
            };
            for cfg in cfgs {
                let base = format!("etrace/{prog}/{cfg}");
                let text = |rel: &str| {
                    String::from_utf8(read_vector(&dir, &format!("{base}/{rel}"))).unwrap()
                };
                let inputs = ConfigInputs {
                    preset: Preset::Reference,
                    xlen_bits: bits,
                    scf: Some(text(&format!("hardware_{bits}.scf"))),
                    ucf: Some(text(&format!("{prog}.encoder.ucf"))),
                    ..ConfigInputs::default()
                };
                let tc = TraceConfig::build(&inputs).unwrap();
                let mut enc = Encoder::new(&tc, FrameWriter::new(Vec::new(), &tc)).unwrap();
                for r in &run.records {
                    enc.push(r).unwrap();
                }
                let out = enc.finish().unwrap().into_inner();
                let want = read_vector(&dir, &format!("{base}/{prog}.te_inst_raw"));
                assert!(out == want, "{base}: te_inst_raw from our ingress differs");
            }
        }
    }
}
