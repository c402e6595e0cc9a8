//! The hart model against the conformance vectors made with QEMU 7.2 and the E-Trace reference
//! flow (`shared/conformance`, README "Where the instruction trace comes from"):
//! the retired-PC list must equal QEMU's exactly, and the ingress records must equal the reference
//! flow's `encoder_input` (post-iss) field by field for 3- and 4-bit `itype`.

use rvtrace_image::Image;
use rvtrace_ingress::etrace_csv::EtraceCsvReader;
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::IsaConfig;
use rvtrace_sim::ingress::IngressRecorder;
use rvtrace_sim::{Config, Hart, PcList, Stop};
use rvtrace_testkit::{
    assert_pcs_eq, conformance_cmdline, conformance_dir, parse_pcs, read_vector, PROGRAMS,
};

fn hart_for(dir: &std::path::Path, prog: &str) -> Hart {
    let mut image = Image::new();
    let elf = dir.join(format!("ntrace/{prog}/{prog}.elf"));
    let xlen = image.load_file(&elf).unwrap().xlen;
    let mut hart = Hart::new(&Config::virt(xlen));
    hart.load(&image).unwrap();
    rvtrace_semihost::attach(&mut hart, &image, &conformance_cmdline(prog));
    hart
}

#[test]
fn retired_pcs_equal_qemu() {
    let Some(dir) = conformance_dir() else { return };
    for (prog, n) in PROGRAMS {
        let mut hart = hart_for(&dir, prog);
        let mut pcs = PcList::default();
        assert_eq!(hart.run(&mut pcs, 10_000_000), Stop::Exit(0), "{prog}");
        let expected = parse_pcs(&read_vector(&dir, &format!("ntrace/{prog}/{prog}.pcs.txt")));
        assert_eq!(expected.len(), n);
        assert_pcs_eq(prog, "rvtrace", &pcs.0, "QEMU", &expected);
    }
}

#[test]
fn ingress_equals_reference_encoder_input() {
    let Some(dir) = conformance_dir() else { return };
    for (prog, _) in PROGRAMS {
        for (cfg, width) in [("itype3_basic", 3u8), ("itype4_basic", 4)] {
            let mut hart = hart_for(&dir, prog);
            let isa = IsaConfig::new(hart.xlen);
            let mut got: Vec<Record> = Vec::new();
            {
                let mut rec = IngressRecorder::new(isa, width, |r: &Record| got.push(*r));
                assert_eq!(hart.run(&mut rec, 10_000_000), Stop::Exit(0));
                rec.finish();
            }
            let csv = read_vector(&dir, &format!("etrace/{prog}/{cfg}/{prog}.encoder_input"));
            let expected: Vec<Record> = EtraceCsvReader::new(&csv[..])
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(expected.len(), got.len(), "{prog} {cfg}: record count");
            let mut cjal = 0;
            for (k, (e, g)) in expected.iter().zip(&got).enumerate() {
                // post-iss reports neither time nor sijump.
                let mut g = Record {
                    time: 0,
                    sijump: false,
                    ..*g
                };
                // Known post-iss deviation: it reports RV32 `c.jal` (16-bit, a call to x1) as
                // itype 0, where both N-Trace Table 2 and E-Trace JumpClasses say "inferable call" (9).
                if width == 4
                    && g.itype == Itype::InferableCall
                    && g.iretire == 1
                    && e.itype == Itype::None
                {
                    g.itype = Itype::None;
                    cjal += 1;
                }
                assert_eq!(*e, g, "{prog} {cfg}: record {k} (line {})", k + 2);
            }
            if prog.contains("rv64") {
                assert_eq!(cjal, 0, "c.jal does not exist on RV64");
            }
        }
    }
}
