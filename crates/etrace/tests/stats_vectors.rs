//! `rvtrace_etrace::stats` of every `te_inst_raw` vector of the conformance set equals the
//! reference flow's figures (`X.stats.txt`: instructions, packets, raw_bytes, payload_bytes,
//! bits_per_instr, as `run_regression.sh` counts them).

use rvtrace_etrace::config::{ConfigInputs, Framing, Preset, TraceConfig};
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use rvtrace_testkit::{conformance_dir, read_vector, PROGRAMS};

/// `key=value` fields of the stats line.
fn field(line: &str, key: &str) -> String {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        .to_string()
}

#[test]
fn reference_flow_figures() {
    let Some(dir) = conformance_dir() else { return };
    let mut checked = 0;
    for (prog, _) in PROGRAMS {
        let mut image = Image::new();
        let xlen = image
            .load_file(&dir.join(format!("etrace/{prog}/{prog}.elf")))
            .unwrap()
            .xlen;
        let isa = IsaConfig::new(xlen);
        for cfg in ["itype3_basic", "itype4_basic", "itype4_debug"] {
            let base = format!("etrace/{prog}/{cfg}");
            let w = xlen.bits();
            let scf =
                String::from_utf8(read_vector(&dir, &format!("{base}/hardware_{w}.scf"))).unwrap();
            let ucf = String::from_utf8(read_vector(&dir, &format!("{base}/{prog}.encoder.ucf")))
                .unwrap();
            let tc = TraceConfig::build(&ConfigInputs {
                preset: Preset::Reference,
                xlen_bits: w as u8,
                scf: Some(scf),
                ucf: Some(ucf),
                framing: Some(Framing::Raw),
                ..ConfigInputs::default()
            })
            .unwrap();
            let data = read_vector(&dir, &format!("{base}/{prog}.te_inst_raw"));
            let s = rvtrace_etrace::stats::stats(&image, isa, &tc, &data);
            let line =
                String::from_utf8(read_vector(&dir, &format!("{base}/{prog}.stats.txt"))).unwrap();
            let what = format!("{base}: {line}");
            let num = |k: &str| field(&line, k).parse::<u64>().unwrap();
            assert_eq!(s.instructions, num("instructions"), "{what}");
            assert_eq!(s.units, num("packets"), "{what}");
            assert_eq!(s.bytes, num("raw_bytes"), "{what}");
            assert_eq!(s.payload_bits, 8 * num("payload_bytes"), "{what}");
            assert_eq!(
                format!("{:.3}", s.payload_bits_per_instruction()),
                field(&line, "bits_per_instr"),
                "{what}"
            );
            assert_eq!(s.losses, 0, "{what}");
            assert_eq!(s.kinds.iter().map(|k| k.count).sum::<u64>(), s.units);
            // te_inst_raw: one header byte per packet is the framing.
            assert_eq!(
                s.kinds.iter().map(|k| k.framed_bits).sum::<u64>(),
                s.payload_bits + 8 * s.units
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 18);
}
