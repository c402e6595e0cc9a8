//! Helpers shared by the tandem tests: run a program with the producer, check a trace.
#![allow(dead_code)]

use rvtrace_image::Image;
use rvtrace_sim::{Config, Hart, Stop};
use rvtrace_tandem::checker::{CheckError, CheckOptions, CheckSummary, Checker, Mismatch};
use rvtrace_tandem::codec::{decode_all, Params, Record};
use rvtrace_tandem::producer::{default_params, Producer, ProducerOptions};
use rvtrace_tandem::Elements;
use std::path::{Path, PathBuf};

/// The test program `programs/elf/NAME.elf`.
pub fn program(name: &str) -> PathBuf {
    rvtrace_testkit::test_program(name)
}

/// A program's trace.
pub struct Run {
    pub image: Image,
    pub trace: Vec<u8>,
    pub params: Params,
    pub absent: Elements,
    /// Retired instructions plus traps taken (the groups after the state initialization).
    pub events: u64,
}

/// Run the program in `elf` with the producer (semihosting output discarded). The command line
/// is the file name alone: traces do not depend on where the tree is.
pub fn produce(elf: &Path, absent: Elements) -> Run {
    let mut image = Image::new();
    image.load_file(elf).unwrap();
    let cmdline = elf.file_name().unwrap().to_string_lossy().into_owned();
    produce_image(image, &cmdline, absent)
}

/// Run the program in `image` with the producer, semihosting command line `cmdline`.
pub fn produce_image(image: Image, cmdline: &str, absent: Elements) -> Run {
    let xlen = image.files()[0].xlen;
    let mut hart = Hart::new(&Config::virt(xlen));
    hart.load(&image).unwrap();
    rvtrace_testkit::quiet_semihost(&mut hart, &image, cmdline);
    hart.bus.console = Box::new(std::io::sink());
    let params = default_params(&hart);
    let mut p = Producer::new(
        &hart,
        &image,
        ProducerOptions { params, absent },
        Vec::new(),
    );
    let stop = hart.run(&mut p, 20_000_000);
    assert!(matches!(stop, Stop::Exit(_)), "{cmdline}: {stop:?}");
    let groups = p.groups();
    let trace = p.finish().unwrap();
    let init = decode_all(&trace, &params)
        .unwrap()
        .iter()
        .filter(|r| **r == Record::StateInit)
        .count() as u64;
    Run {
        image,
        trace,
        params,
        absent,
        events: groups - init,
    }
}

/// A reference hart with the program of `image` loaded, semihosting off (as `tandem check`).
pub fn reference(image: &Image) -> Hart {
    let xlen = image.files()[0].xlen;
    let cfg = Config::virt(xlen);
    let mut hart = Hart::new(&cfg);
    hart.load(image).unwrap();
    hart
}

/// Check `trace` against the program in `image`.
pub fn check_image(
    image: &Image,
    trace: &[u8],
    params: Params,
    absent: Elements,
) -> Result<(CheckSummary, Vec<Mismatch>), CheckError> {
    let mut c = Checker::new(reference(image), image, CheckOptions::new(params, absent));
    let mut ms = Vec::new();
    let s = c.check(trace, &mut |m| {
        if ms.len() < 20 {
            ms.push(m.clone())
        }
    })?;
    Ok((s, ms))
}
