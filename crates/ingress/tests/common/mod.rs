//! Helpers shared by the integration tests: conformance-vector access and a tiny deterministic PRNG.
#![allow(dead_code)]

use rvtrace_ingress::{Itype, Record};

/// The conformance vectors, or `None` (tests then skip; see `rvtrace_testkit::conformance_dir`).
pub fn have_vectors() -> bool {
    rvtrace_testkit::conformance_dir().is_some()
}

/// The (decompressed) bytes of a vector file.
pub fn read_vector(rel: &str) -> Vec<u8> {
    let dir = rvtrace_testkit::conformance_dir().expect("conformance vectors");
    rvtrace_testkit::read_vector(&dir, rel)
}

/// E-Trace configurations with an `encoder_input` each.
pub const ETRACE_CONFIGS: [&str; 3] = ["itype3_basic", "itype4_basic", "itype4_debug"];

/// Relative path of an E-Trace `encoder_input` (without `.gz`).
pub fn encoder_input(prog: &str, cfg: &str) -> String {
    format!("etrace/{prog}/{cfg}/{prog}.encoder_input")
}

/// Relative path of a NexRv PCSEQ (without `.gz`).
pub fn pcseq(prog: &str) -> String {
    format!("ntrace/{prog}/{prog}-PCSEQ.txt")
}

pub use rvtrace_testkit::Rng;

/// A value with a random number of significant bits (exercises every varint length).
fn wide(rng: &mut Rng) -> u64 {
    let bits = rng.below(65);
    if bits == 0 {
        0
    } else {
        rng.next_u64() >> (64 - bits)
    }
}

/// A random record with every field random (anything a `Record` can hold).
pub fn random_record(rng: &mut Rng) -> Record {
    Record {
        iaddr: wide(rng),
        iretire: wide(rng) as u32,
        ilastsize: rng.next_u64() as u8,
        itype: Itype::from_code(rng.next_u64() as u8),
        cause: wide(rng),
        tval: wide(rng),
        priv_: rng.next_u64() as u8,
        context: wide(rng),
        ctype: rng.next_u64() as u8,
        time: wide(rng),
        sijump: rng.one_in(2),
    }
}

/// A realistic stream: mostly sequential 16/32-bit instructions, branches and jumps, occasional traps,
/// privilege/context changes and a time that ticks irregularly; with some fully random records mixed in.
pub fn realistic_stream(rng: &mut Rng, n: usize) -> Vec<Record> {
    let mut out = Vec::with_capacity(n);
    let mut pc = 0x8000_0000u64;
    let mut priv_ = 3u8;
    let mut context = 0u64;
    let mut time = 1000u64;
    for _ in 0..n {
        if rng.one_in(1000) {
            out.push(random_record(rng));
            continue;
        }
        let size = if rng.one_in(2) { 2 } else { 4 };
        let mut r = Record {
            iaddr: pc,
            iretire: size / 2,
            ilastsize: (size == 4) as u8,
            priv_,
            context,
            time,
            ..Record::default()
        };
        pc += size as u64;
        match rng.below(20) {
            0 => {
                r.itype = Itype::TakenBranch;
                pc = pc.wrapping_add((rng.below(512) as i64 - 256) as u64 & !1);
            }
            1 => r.itype = Itype::NonTakenBranch,
            2 => {
                r.itype = Itype::from_code(8 + rng.below(8) as u8);
                pc = 0x8000_0000 + (rng.below(1 << 20) & !1);
            }
            3 if rng.one_in(50) => {
                r.itype = Itype::Exception;
                r.cause = rng.below(16);
                r.tval = if rng.one_in(2) { rng.next_u64() } else { 0 };
                if rng.one_in(2) {
                    r.iretire = 0;
                }
                pc = 0x8000_0100;
            }
            4 if rng.one_in(50) => {
                priv_ = [0, 1, 3][rng.below(3) as usize];
                context = rng.below(4);
                r.ctype = rng.below(4) as u8;
            }
            5 if rng.one_in(20) => r.sijump = true,
            _ => {}
        }
        if rng.one_in(7) {
            time += rng.below(3);
        }
        out.push(r);
    }
    out
}
