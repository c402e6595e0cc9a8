//! The fast output writers (`PcWriter` text and binary, `FlowText`) against plain reference
//! formatters written here with `format!`, on the decoded flow of every test program and of
//! random programs: byte for byte the same text.

use rvtrace_flow::{
    addr_with_symbol, for_each_pc, FlowElement, FlowSink, FlowText, PcFormat, PcWriter, SyncReason,
    PCS_BIN_MAGIC,
};
use rvtrace_image::Image;
use rvtrace_ntrace::decoder::{decode, DecoderConfig};
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::options::EncoderConfig;
use rvtrace_testkit::randprog::{random_program, seeds};
use rvtrace_testkit::{run_elf_bytes, run_program, traceable_programs, ProgramRun};

/// The flow text of one element as `FlowText` wrote it before it formatted by hand (ranges and
/// syncs; other elements go through the same `write!` code as before).
fn reference_line(image: &Image, e: &FlowElement, out: &mut String) -> bool {
    let sym = |a| addr_with_symbol(image, a);
    match e {
        FlowElement::Range {
            start, last, count, ..
        } => out.push_str(&format!(
            "range {} .. {} ({count} instruction{})\n",
            sym(*start),
            sym(*last),
            if *count == 1 { "" } else { "s" }
        )),
        FlowElement::Sync { addr, reason } => {
            let why = match reason {
                SyncReason::Start => "start".to_string(),
                SyncReason::Periodic => "periodic".to_string(),
                SyncReason::Recovery => "recovery".to_string(),
                SyncReason::Other(c) => format!("reason {c}"),
            };
            out.push_str(&format!("sync {} {why}\n", sym(*addr)));
        }
        _ => return false,
    }
    true
}

/// Every output of the flow of `run` equals its reference.
fn check(what: &str, run: &ProgramRun) {
    let xlen = run.image.files()[0].xlen;
    let cfg = EncoderConfig::new(xlen);
    let (bytes, _) = encode(cfg, &run.records);
    let mut flow: Vec<FlowElement> = Vec::new();
    decode(
        &run.image,
        DecoderConfig::new(rvtrace_isa::IsaConfig::new(xlen)),
        &bytes,
        &mut flow,
    );
    let image = &run.image;

    // Flow text: every range and sync line as the reference writes it, the others unchanged.
    let mut text = FlowText::new(image, Vec::new());
    flow.iter().for_each(|e| text.element(e));
    let text = String::from_utf8(text.finish().unwrap()).unwrap();
    let mut lines = text.split_inclusive('\n');
    let mut ranges = 0;
    for e in &flow {
        let got = lines
            .next()
            .unwrap_or_else(|| panic!("{what}: text ends early"));
        let mut want = String::new();
        if reference_line(image, e, &mut want) {
            assert_eq!(got, want, "{what}: {e:?}");
            ranges += matches!(e, FlowElement::Range { .. }) as u64;
        }
    }
    assert_eq!(lines.next(), None, "{what}: one line per element");
    assert!(ranges > 0, "{what}: no ranges");

    // PC lists: `for_each_pc` with `format!`, and the binary list's u64s.
    let mut want_text = String::new();
    let mut want_bin = PCS_BIN_MAGIC.to_vec();
    for e in &flow {
        if let FlowElement::Range { start, count, .. } = *e {
            for_each_pc(image, start, count, |pc| {
                want_text.push_str(&format!("{pc:#x}\n"));
                want_bin.extend_from_slice(&pc.to_le_bytes());
            })
            .unwrap();
        }
    }
    for format in [PcFormat::Text, PcFormat::Bin] {
        let mut w = PcWriter::with_format(image, Vec::new(), format);
        flow.iter().for_each(|e| w.element(e));
        let got = w.finish().unwrap();
        let want = match format {
            PcFormat::Text => want_text.as_bytes(),
            PcFormat::Bin => &want_bin[..],
        };
        assert!(got == want, "{what}: PC list {format:?} differs");
    }
    assert_eq!(
        want_text.lines().count(),
        run.pcs.len(),
        "{what}: the flow covers the run"
    );
}

#[test]
fn outputs_equal_reference_on_programs() {
    for elf in traceable_programs() {
        let name = elf.file_name().unwrap().to_string_lossy().into_owned();
        check(&name, &run_program(&elf, &name, 4));
    }
}

#[test]
fn outputs_equal_reference_on_random_programs() {
    for seed in seeds(8) {
        let p = random_program(seed);
        check(&format!("random program {seed}"), &run_elf_bytes(&p.elf, 4));
    }
}
