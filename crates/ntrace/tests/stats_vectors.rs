//! `rvtrace_ntrace::stats` of every verified NexRv stream of the conformance set equals NexRv's
//! own figures (`X-stats.txt`: the decoder's `Stat:` line per configuration, bytes, messages,
//! Error messages, instructions, bits/instr; the dump's line for the HTM stream, with idles).

use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::decoder::DecoderConfig;
use rvtrace_ntrace::stats::stats;
use rvtrace_testkit::{conformance_dir, read_vector, PROGRAMS};

/// The numbers of a `[cfg] Stat: ...` line, in order.
fn numbers(line: &str) -> Vec<f64> {
    line.split([',', ' '])
        .filter_map(|w| w.parse::<f64>().ok())
        .collect()
}

fn extra(s: &rvtrace_flow::stats::TraceStats, k: &str) -> u64 {
    s.extra.iter().find(|(n, _)| n == k).unwrap().1
}

#[test]
fn nexrv_figures() {
    let Some(dir) = conformance_dir() else { return };
    let mut checked = 0;
    for (prog, _) in PROGRAMS {
        let mut image = Image::new();
        let xlen = image
            .load_file(&dir.join(format!("ntrace/{prog}/{prog}.elf")))
            .unwrap()
            .xlen;
        let isa = IsaConfig::new(xlen);
        let text = String::from_utf8(read_vector(
            &dir,
            &format!("ntrace/{prog}/{prog}-stats.txt"),
        ))
        .unwrap();
        for cfg in ["btm", "htm", "htm-rpt2"] {
            let data = read_vector(&dir, &format!("ntrace/{prog}/{prog}-{cfg}.bin"));
            let s = stats(&image, DecoderConfig::new(isa), &data);
            // The decoder's line: "[cfg] Stat: B bytes, M messages, E error messages, X
            // bytes/message, I instr, R bits/instr".
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("[{cfg}] Stat:")) && l.contains("error messages"))
                .unwrap();
            let n = numbers(line);
            let what = format!("{prog} {cfg}: {line}");
            assert_eq!(s.bytes as f64, n[0], "{what}");
            assert_eq!(s.units as f64, n[1], "{what}");
            assert_eq!(extra(&s, "Error messages") as f64, n[2], "{what}");
            assert_eq!(
                format!("{:.2}", s.bytes as f64 / s.units as f64),
                format!("{:.2}", n[3]),
                "{what}"
            );
            assert_eq!(s.instructions as f64, n[4], "{what}");
            assert_eq!(
                format!("{:.3}", s.bits_per_instruction()),
                format!("{:.3}", n[5]),
                "{what}"
            );
            assert_eq!(s.losses, 0, "{what}");
            // Every message is one kind; MDO is 6 of 8 bits.
            assert_eq!(s.kinds.iter().map(|k| k.count).sum::<u64>(), s.units);
            assert_eq!(
                s.payload_bits * 8,
                s.kinds.iter().map(|k| k.framed_bits).sum::<u64>() * 6
            );
            assert!(s.syncs >= 1, "{what}");
            if cfg == "htm" {
                // "[htm-dump] Stat: B bytes, I idles, M messages, E error messages, X bytes/message"
                let line = text
                    .lines()
                    .find(|l| l.starts_with("[htm-dump] Stat:"))
                    .unwrap();
                let n = numbers(line);
                assert_eq!(
                    (
                        s.bytes as f64,
                        extra(&s, "idle bytes") as f64,
                        s.units as f64
                    ),
                    (n[0], n[1], n[2]),
                    "{prog}: {line}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 18);
}
