//! The producer's fast path writes what its general path writes: every test program and random
//! programs (`RVTRACE_RANDOM_SEEDS` runs more; these also as partial traces), run
//! by [`Producer::new`] and [`Producer::general`], byte for byte; and each trace is what the
//! reference encoder (`codec::encode_record`) writes for its records.

use rvtrace_image::Image;
use rvtrace_sim::{Config, Hart, Stop};
use rvtrace_tandem::codec::{decode_all, encode_all};
use rvtrace_tandem::producer::{default_params, Producer, ProducerOptions};
use rvtrace_tandem::Elements;

/// The traces of `image` written by the fast and the general producer.
fn both(image: &Image, cmdline: &str, absent: Elements) -> (Vec<u8>, Vec<u8>, Stop) {
    let run = |fast: bool| {
        let xlen = image.files()[0].xlen;
        let mut hart = Hart::new(&Config::virt(xlen));
        hart.load(image).unwrap();
        rvtrace_testkit::quiet_semihost(&mut hart, image, cmdline);
        hart.bus.console = Box::new(std::io::sink());
        let opts = ProducerOptions {
            params: default_params(&hart),
            absent,
        };
        if fast {
            let mut p = Producer::new(&hart, image, opts, Vec::new());
            let stop = hart.run(&mut p, 20_000_000);
            (p.finish().unwrap(), stop)
        } else {
            let mut p = Producer::general(&hart, image, opts, Vec::new());
            let stop = hart.run(&mut p, 20_000_000);
            (p.finish().unwrap(), stop)
        }
    };
    let (fast, stop) = run(true);
    let (general, stop2) = run(false);
    assert_eq!(stop, stop2, "{cmdline}");
    (fast, general, stop)
}

fn assert_same(name: &str, image: &Image, cmdline: &str, absent: Elements) {
    let (fast, general, stop) = both(image, cmdline, absent);
    assert!(matches!(stop, Stop::Exit(_)), "{name}: {stop:?}");
    if let Some(k) = fast.iter().zip(&general).position(|(a, b)| a != b) {
        panic!("{name} ({absent:?}): traces differ first at byte {k}");
    }
    assert_eq!(fast.len(), general.len(), "{name} ({absent:?})");
    let xlen = image.files()[0].xlen;
    let params = default_params(&Hart::new(&Config::virt(xlen)));
    let recs = decode_all(&fast, &params).unwrap();
    assert!(
        encode_all(&recs, &params) == fast,
        "{name} ({absent:?}): not what the reference encoder writes"
    );
}

#[test]
fn fast_path_equals_general_path_on_every_test_program() {
    for elf in rvtrace_testkit::test_programs() {
        let mut image = Image::new();
        image.load_file(&elf).unwrap();
        let name = elf.file_name().unwrap().to_string_lossy().into_owned();
        assert_same(&name, &image, &name, Elements::NONE);
    }
}

#[test]
fn fast_path_equals_general_path_on_random_programs() {
    use rvtrace_testkit::randprog::{random_program, seeds};
    let partial = Elements::parse("pc,insn,mem").unwrap();
    for seed in seeds(60) {
        let p = random_program(seed);
        let mut image = Image::new();
        image.load_bytes("prog.elf", &p.elf).unwrap();
        let name = format!("random program {seed} ({:?})", p.shape);
        assert_same(&name, &image, "prog.elf", Elements::NONE);
        assert_same(&name, &image, "prog.elf", partial);
    }
}
