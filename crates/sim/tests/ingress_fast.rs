//! The ingress recorder's fast path (predicted records handed to
//! `IngressWriter::write_predicted`) writes the same bytes as the general path (every record built
//! in full and encoded by `IngressWriter::write`), on every test program, for both `itype` widths,
//! with and without `--context asid` (one combination per program, in turn). Both recorders
//! watch the same run.

use rvtrace_image::Image;
use rvtrace_ingress::binary::to_vec;
use rvtrace_ingress::{IngressHeader, IngressWriter, Record, RecordSink};
use rvtrace_isa::IsaConfig;
use rvtrace_sim::ingress::IngressRecorder;
use rvtrace_sim::{Config, Hart};

/// The binary writer as `rvtrace run --ingress` drives it.
struct Fast(IngressWriter<Vec<u8>>);

impl RecordSink for &mut Fast {
    fn record(&mut self, r: &Record) {
        self.0.write(r).unwrap();
    }
    fn predicted(&mut self, r: &Record) {
        self.0.write_predicted(r).unwrap();
    }
}

fn header(image: &Image, width: u8, context: bool) -> IngressHeader {
    let mut h = IngressHeader::new(image.files()[0].xlen, width, "test");
    h.has_time = true;
    h.has_sijump = true;
    h.has_context = context;
    h
}

/// Runs `image` with the fast and the general recorder side by side; asserts the bytes are the
/// same and returns the number of records.
fn compare(name: &str, image: &Image, cmdline: &str, width: u8, context: bool) -> u64 {
    let xlen = image.files()[0].xlen;
    let isa = IsaConfig::new(xlen);
    let mut hart = Hart::new(&Config::virt(xlen, cmdline));
    hart.load(image).unwrap();
    rvtrace_testkit::quiet_semihost(&mut hart, image, cmdline);
    let satp = hart.csr_read(rvtrace_sim::csr::num::SATP).unwrap_or(0);
    let h = header(image, width, context);
    // Small blocks: many block starts, where the prediction state is reset.
    let mut fast = Fast(IngressWriter::new(Vec::new(), &h).unwrap().block_target(61));
    let mut general = Vec::new();
    {
        let mut a = IngressRecorder::new(isa, width, &mut fast);
        let mut b = IngressRecorder::general(isa, width, |r: &Record| general.push(*r));
        if context {
            a = a.context_from_asid(satp);
            b = b.context_from_asid(satp);
        }
        hart.run(&mut (&mut a, &mut b), 20_000_000);
        a.finish();
        b.finish();
        assert_eq!(a.records, b.records, "{name}");
    }
    let got = fast.0.finish().unwrap();
    let mut w = IngressWriter::new(Vec::new(), &h).unwrap().block_target(61);
    w.write_batch(&general).unwrap();
    let want = w.finish().unwrap();
    // The general path's records, written as `rvtrace run --ingress` always did.
    assert_eq!(
        rvtrace_ingress::binary::from_slice(&want).unwrap().1,
        general
    );
    assert_eq!(
        rvtrace_ingress::binary::from_slice(&to_vec(&h, &general).unwrap())
            .unwrap()
            .1,
        general
    );
    assert!(
        got == want,
        "{name} width {width} context {context}: bytes differ"
    );
    general.len() as u64
}

// Alternate the options between programs (the suite stays fast).
const CONFIGS: [(u8, bool); 4] = [(4, false), (3, true), (4, true), (3, false)];

#[test]
fn fast_path_writes_the_same_bytes_as_the_general_path() {
    let mut fast_records = 0u64;
    for (i, elf) in rvtrace_testkit::test_programs().into_iter().enumerate() {
        let name = elf.file_name().unwrap().to_string_lossy().to_string();
        let mut image = Image::new();
        image.load_file(&elf).unwrap();
        let (width, context) = CONFIGS[i % 4];
        let n = compare(&name, &image, &name, width, context);
        assert!(n > 100, "{name}: {n} records");
        fast_records += n;
    }
    assert!(fast_records > 100_000, "{fast_records}");
}

/// Random programs (`rvtrace_testkit::randprog`: traps, timer interrupts, U-mode, every kind of
/// call and return; `RVTRACE_RANDOM_SEEDS` runs more).
#[test]
fn fast_path_writes_the_same_bytes_on_random_programs() {
    use rvtrace_testkit::randprog::{random_program, seeds};
    for seed in seeds(60) {
        let p = random_program(seed);
        let mut image = Image::new();
        image.load_bytes("prog.elf", &p.elf).unwrap();
        let (width, context) = CONFIGS[seed as usize % 4];
        let name = format!("random program {seed} ({:?})", p.shape);
        compare(&name, &image, "prog.elf", width, context);
    }
}
