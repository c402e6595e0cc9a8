//! Trap loops that retire instructions (issue 9 item 9): the hart stops with the trap explained
//! instead of spinning until the instruction limit, and the rule never fires on a program that
//! makes progress (the test programs, random programs, a loop whose progress lives in RAM).

use rvtrace_image::Image;
use rvtrace_isa::Xlen;
use rvtrace_sim::decode::Extensions;
use rvtrace_sim::{Config, Hart, Stop, REPEAT_THRESHOLD};
use std::path::Path;

const RV32I: Extensions = Extensions {
    m: false,
    a: false,
    f: false,
    d: false,
    c: false,
    zba: false,
    zbb: false,
    zbs: false,
    zbc: false,
    s: true,
    u: true,
};

fn hart(image: &Image, ext: Option<Extensions>) -> Hart {
    let xlen = image.files()[0].xlen;
    let mut cfg = Config::virt(xlen);
    if let Some(e) = ext {
        cfg.ext = e;
    }
    let mut h = Hart::new(&cfg);
    h.load(image).unwrap();
    rvtrace_testkit::quiet_semihost(&mut h, image, "prog.elf");
    h
}

fn words_elf(words: &[u32]) -> Image {
    let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let elf = rvtrace_testkit::minimal_elf(false, 0x8000_0000, &code);
    let mut image = Image::new();
    image.load_bytes("prog.elf", &elf).unwrap();
    image
}

/// Runs to the stop; the stop and the instructions retired.
fn run(h: &mut Hart, limit: u64) -> Stop {
    h.run(&mut (), limit)
}

#[test]
fn rv32i_on_compressed_code_stops_with_the_reason() {
    let elf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf/recurse-rv32imac.elf");
    let mut image = Image::new();
    image.load_file(&elf).unwrap();
    let mut h = hart(&image, Some(RV32I));
    let stop = run(&mut h, 100_000_000);
    let Stop::Error(msg) = stop else {
        panic!("{stop:?}")
    };
    assert!(
        msg.starts_with("stuck in a trap loop: illegal instruction at pc 0x"),
        "{msg}"
    );
    assert!(msg.contains("lacks C"), "{msg}");
    let r = h.trap_loop().expect("a trap-loop report");
    assert_eq!(r.trap.cause, 2);
    assert_eq!(
        r.trap.tval & 3,
        2,
        "a compressed instruction: {:#x}",
        r.trap.tval
    );
    assert_eq!(r.repeats, 2 * REPEAT_THRESHOLD as u64);
    // Stopped long before the limit: each repetition is a few instructions.
    assert!(h.instret < 100 * REPEAT_THRESHOLD as u64, "{}", h.instret);
}

/// `mul` on a hart without M, with a handler that returns to it (`mret` at once).
#[test]
fn a_missing_extension_is_named() {
    // _start: auipc t0,0; addi t0,t0,20; csrw mtvec,t0; mul a0,a1,a2; j .; handler: mret
    let image = words_elf(&[
        0x00000297, 0x01428293, 0x30529073, 0x02c58533, 0x0000006f, 0x30200073,
    ]);
    let mut h = hart(&image, Some(RV32I));
    let Stop::Error(msg) = run(&mut h, 10_000_000) else {
        panic!()
    };
    assert!(msg.contains("at pc 0x8000000c (tval 0x2c58533)"), "{msg}");
    assert!(msg.contains("needs M"), "{msg}");
    // With M the same program is an ordinary endless loop of nothing: the limit stops it.
    let mut h = hart(&image, None);
    let stop = run(&mut h, 100_000);
    assert_eq!(stop, Stop::InsnLimit);
}

/// A handler whose stack pointer is bad: its first store faults, so it re-enters itself with
/// only `sp` (and `tval`) changing.
#[test]
fn a_handler_with_a_bad_stack_stops() {
    // _start: auipc t0,0; addi t0,t0,16; csrw mtvec,t0; ecall
    // handler: addi sp,sp,-64; sw ra,0(sp); mret          (sp starts at 0: unmapped)
    let image = words_elf(&[
        0x00000297, 0x01028293, 0x30529073, 0x00000073, 0xfc010113, 0x00112023, 0x30200073,
    ]);
    let mut h = hart(&image, None);
    let Stop::Error(msg) = run(&mut h, 100_000_000) else {
        panic!()
    };
    assert!(
        msg.contains("store/AMO access fault at pc 0x80000014"),
        "{msg}"
    );
    assert!(msg.contains("bad stack pointer"), "{msg}");
    assert!(h.instret < 10 * REPEAT_THRESHOLD as u64);
}

/// The same `ecall`, with the same registers each time, taken 5000 times: the handler counts in
/// RAM and lets the program go on at 5000. Progress in RAM only, so the rule must not fire.
#[test]
fn progress_in_ram_is_progress() {
    // See the assembly in the comments; the handler keeps t0/t2 in RAM and t1 in mscratch.
    let image = words_elf(&[
        0x00000297, // auipc t0,0
        0x02428293, // addi t0,t0,36   (handler)
        0x30529073, // csrw mtvec,t0
        0x00000073, // loop: ecall
        0x001002b7, // lui t0,0x100     (the SiFive test finisher)
        0x00005337, // lui t1,5
        0x55530313, // addi t1,t1,0x555 (0x5555: pass)
        0x0062a023, // sw t1,0(t0)
        0x0000006f, // j .
        0x34031373, // handler: csrrw t1,mscratch,t1
        0x80001337, // lui t1,0x80001
        0x00532223, // sw t0,4(t1)
        0x00732423, // sw t2,8(t1)
        0x00032283, // lw t0,0(t1)
        0x00128293, // addi t0,t0,1
        0x00532023, // sw t0,0(t1)
        0x000013b7, // lui t2,1
        0x38838393, // addi t2,t2,904   (5000)
        0x0072c863, // blt t0,t2,back
        0x341022f3, // csrr t0,mepc
        0x00428293, // addi t0,t0,4
        0x34129073, // csrw mepc,t0
        0x00432283, // back: lw t0,4(t1)
        0x00832383, // lw t2,8(t1)
        0x34031373, // csrrw t1,mscratch,t1
        0x30200073, // mret
    ]);
    let mut h = hart(&image, None);
    let stop = run(&mut h, 10_000_000);
    assert_eq!(stop, Stop::Exit(0), "{:?}", h.trap_loop());
    let mut count = [0u8; 4];
    assert!(h.read_memory(0x8000_1000, &mut count));
    assert_eq!(u32::from_le_bytes(count), 5000);
}

/// Every test program (timer and trap programs included) and random programs with traps and
/// timer interrupts run to their exit: the rule never fires on them.
#[test]
fn never_fires_on_real_programs() {
    for elf in rvtrace_testkit::test_programs() {
        let mut image = Image::new();
        image.load_file(&elf).unwrap();
        let mut h = hart(&image, None);
        let stop = run(&mut h, 200_000_000);
        assert!(
            matches!(stop, Stop::Exit(_)) && h.trap_loop().is_none(),
            "{}: {stop:?}",
            elf.display()
        );
    }
    for seed in rvtrace_testkit::randprog::seeds(40) {
        let p = rvtrace_testkit::randprog::random_program(seed);
        let mut image = Image::new();
        image.load_bytes("prog.elf", &p.elf).unwrap();
        let mut h = hart(&image, None);
        let stop = run(&mut h, 50_000_000);
        assert_eq!(stop, Stop::Exit(0), "seed {seed}: {:?}", h.trap_loop());
    }
}

/// RV64 start-up code traps before it sets `mtvec`: rule 1 (the handler is not in memory).
#[test]
fn rv64_without_c_stops_at_once() {
    let elf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf/recurse-rv64gc.elf");
    let mut image = Image::new();
    image.load_file(&elf).unwrap();
    assert_eq!(image.files()[0].xlen, Xlen::Rv64);
    let mut h = hart(&image, Some(RV32I));
    let stop = run(&mut h, 100_000_000);
    assert!(
        matches!(&stop, Stop::Error(m) if m.contains("illegal instruction") && m.contains("not in memory")),
        "{stop:?}"
    );
    assert!(h.instret < 100);
}
