//! The hart model's event counters against an independent count: `programs/src/pmu_events.c`
//! programs mhpmcounter3..13 (INSTRUCTIONS, BRANCH_INSTRUCTIONS, L1D read access, L1D write
//! access, BRANCH_MISSES, L1D read miss, CPU_CYCLES, and the raw events compressed, atomics,
//! calls, returns), runs a region between its only
//! `csrw mcountinhibit, zero` and the next `csrw mcountinhibit, REG`, and prints the counts.
//! This test finds that region in the retired-PC list and classifies every instruction in it
//! from its bits with its own decoder (opcode fields of the unprivileged spec; nothing of the
//! sim's classification is used), then compares: instructions, conditional branches, loads,
//! stores, compressed instructions, atomics, calls and returns exactly; misses within
//! (0, accesses].
//!
//! Counting rules (issue 10, privileged spec Zicntr/Zihpm): the csrw that clears the inhibit
//! bits is not counted (a CSR write takes effect after the writing instruction), the one that
//! sets them is. A load is an L1D read access, a store an L1D write access; LR is a load, SC a
//! store (failed or not), an AMO one of each; FP loads and stores count like integer ones.

use rvtrace_testkit::{run_program_with, test_program};
use std::collections::HashMap;

/// What one instruction counts for.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Class {
    branch: bool,
    load: bool,
    store: bool,
    atomic: bool,
    call: bool,
    ret: bool,
}

/// x1 (ra) and x5 (t0): the link registers of the unprivileged spec's return-address-stack
/// hints (JALR, table "Return-address stack prediction hints").
fn link(r: u32) -> bool {
    r == 1 || r == 5
}

/// Call / return by those hints: a jump writing a link register is a call; a JALR reading one
/// and writing none is a return. A JALR from one link register into the other (co-routine
/// swap) is both; the region has none, so it is refused rather than guessed.
fn call_ret(rd: u32, rs1: Option<u32>) -> (bool, bool) {
    match rs1 {
        None => (link(rd), false),
        Some(rs1) => {
            assert!(
                !(link(rd) && link(rs1) && rd != rs1),
                "co-routine swap jalr x{rd}, x{rs1}: not classified"
            );
            (link(rd), link(rs1) && !link(rd))
        }
    }
}

/// Classifies the instruction `bits` (low 16 bits only for a compressed one) of an RV64 (`rv64`)
/// or RV32 hart with I, M, A, F, D, C. Panics on an encoding it does not know the class of, rather than
/// guessing. Unprivileged spec: RV32I/RV64I (LOAD 0000011, STORE 0100011, BRANCH 1100011),
/// F/D (LOAD-FP 0000111, STORE-FP 0100111), A (AMO 0101111: LR funct5 00010, SC 00011), and
/// the C extension's quadrant tables.
fn classify(bits: u32, rv64: bool) -> Class {
    let mut c = Class::default();
    if bits & 3 == 3 {
        let (rd, rs1) = ((bits >> 7) & 31, (bits >> 15) & 31);
        match bits & 0x7f {
            0b000_0011 | 0b000_0111 => c.load = true,
            0b010_0011 | 0b010_0111 => c.store = true,
            0b110_0011 => c.branch = true,
            0b110_1111 => (c.call, c.ret) = call_ret(rd, None), // JAL
            0b110_0111 => (c.call, c.ret) = call_ret(rd, Some(rs1)), // JALR
            0b010_1111 => match bits >> 27 {
                0b00010 => c.load = true,  // LR
                0b00011 => c.store = true, // SC
                _ => {
                    c.load = true; // AMO: read, then write
                    c.store = true;
                }
            },
            _ => {}
        }
        c.atomic = bits & 0x7f == 0b010_1111;
        return c;
    }
    let funct3 = (bits >> 13) & 7;
    let r1 = (bits >> 7) & 31; // rd/rs1 field of the CR format
    let rs2 = (bits >> 2) & 31;
    match (bits & 3, funct3) {
        // C0: C.FLD, C.LW, C.FLW (RV32) / C.LD (RV64); C.FSD, C.SW, C.FSW (RV32) / C.SD (RV64)
        (0, 0b001..=0b011) => c.load = true,
        (0, 0b101..=0b111) => c.store = true,
        (0, 0b100) => panic!("{bits:#06x}: Zcb/reserved C0 encoding, not classified"),
        // C1: C.JAL (RV32 only; the same slot is C.ADDIW on RV64) writes x1; C.BEQZ, C.BNEZ
        (1, 0b001) if !rv64 => c.call = true,
        (1, 0b110 | 0b111) => c.branch = true,
        // C2 100: C.JR (bit 12 = 0, rs2 = 0) and C.JALR (bit 12 = 1, rs2 = 0, writes x1)
        (2, 0b100) if rs2 == 0 && r1 != 0 => {
            let rd = if bits >> 12 & 1 == 1 { 1 } else { 0 };
            (c.call, c.ret) = call_ret(rd, Some(r1));
        }
        // C2: C.FLDSP, C.LWSP, C.FLWSP (RV32) / C.LDSP (RV64); C.FSDSP, C.SWSP, C.FSWSP / C.SDSP
        (2, 0b001..=0b011) => c.load = true,
        (2, 0b101..=0b111) => c.store = true,
        _ => {}
    }
    // (The funct3 011/111 slots are C.FLW/C.FSW on RV32 and C.LD/C.SD on RV64: loads and
    // stores either way.)
    c
}

/// `csrrw x0, mcountinhibit, x0` (`csrw mcountinhibit, zero`): the start marker.
const START: u32 = 0x3200_1073;

/// `csrrw x0, mcountinhibit, rs1` with rs1 != x0: the end marker.
fn is_end(bits: u32) -> bool {
    bits & 0xfff0_7fff == 0x3200_1073 && (bits >> 15) & 31 != 0
}

/// The counts the program printed: `hpmN event E NAME count HEX` and `minstret HEX`.
fn printed(console: &str) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for line in console.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (name, hex) = match f.as_slice() {
            [hpm, "event", _, name, "count", hex] if hpm.starts_with("hpm") => (*name, *hex),
            ["minstret", hex] => ("minstret", *hex),
            _ => continue,
        };
        let v = u64::from_str_radix(hex, 16).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        assert!(
            m.insert(name.to_string(), v).is_none(),
            "{name} printed twice"
        );
    }
    m
}

fn check(name: &str) {
    // The default predictor, and a small L1D so that the region's loads can miss.
    let r = run_program_with(&test_program(name), &format!("elf/{name}.elf"), 4, |c| {
        c.uarch.set_cache("l1d:4k:2:64").unwrap()
    });
    let console = String::from_utf8_lossy(&r.console).into_owned();
    assert_eq!(
        r.stop,
        rvtrace_testkit::Stop::Exit(0),
        "{name}: output:\n{console}"
    );
    let rv64 = r.image.files()[0].xlen == rvtrace_isa::Xlen::Rv64;
    let fetch = |pc: u64| {
        let lo = r
            .image
            .read_u16(pc)
            .unwrap_or_else(|| panic!("{pc:#x}: not in the image")) as u32;
        if lo & 3 != 3 {
            lo
        } else {
            r.image
                .fetch(pc)
                .unwrap_or_else(|| panic!("{pc:#x}: not in the image"))
        }
    };
    let starts: Vec<usize> = (0..r.pcs.len())
        .filter(|&i| fetch(r.pcs[i]) == START)
        .collect();
    assert_eq!(starts.len(), 1, "{name}: want one start marker retired");
    let start = starts[0];
    let end = (start + 1..r.pcs.len())
        .find(|&i| is_end(fetch(r.pcs[i])))
        .unwrap_or_else(|| panic!("{name}: no end marker after the start"));

    let (mut insns, mut branches, mut loads, mut stores) = (0u64, 0u64, 0u64, 0u64);
    let (mut compressed, mut atomics, mut calls, mut returns) = (0u64, 0u64, 0u64, 0u64);
    for &pc in &r.pcs[start + 1..=end] {
        let bits = fetch(pc);
        // ecall, ebreak, c.ebreak would be exceptions (not counted, but in the PC list).
        assert!(
            bits != 0x73 && bits != 0x0010_0073 && bits != 0x9002,
            "{name}: {pc:#x}: trap instruction in the region"
        );
        let c = classify(bits, rv64);
        insns += 1;
        branches += c.branch as u64;
        loads += c.load as u64;
        stores += c.store as u64;
        compressed += (bits & 3 != 3) as u64;
        atomics += c.atomic as u64;
        calls += c.call as u64;
        returns += c.ret as u64;
    }
    // The region is meant to exercise every class (else this test would prove little).
    assert!(
        branches > 100 && loads > 100 && stores > 100,
        "{name}: region too small"
    );

    let p = printed(&console);
    let get = |k: &str| {
        *p.get(k)
            .unwrap_or_else(|| panic!("{name}: {k} not printed:\n{console}"))
    };
    let what = format!("{name}: region of {insns} instructions; output:\n{console}");
    assert_eq!(get("INSTRUCTIONS"), insns, "{what}");
    assert_eq!(get("minstret"), insns, "{what}");
    assert_eq!(get("BRANCH_INSTRUCTIONS"), branches, "{what}");
    assert_eq!(get("L1D_READ_ACCESS"), loads, "{what}");
    assert_eq!(get("L1D_WRITE_ACCESS"), stores, "{what}");
    assert_eq!(get("RAW_COMPRESSED"), compressed, "{what}");
    assert_eq!(get("RAW_ATOMICS"), atomics, "{what}");
    assert_eq!(get("RAW_CALLS"), calls, "{what}");
    assert_eq!(get("RAW_RETURNS"), returns, "{what}");
    let misp = get("BRANCH_MISSES");
    assert!(misp > 0 && misp <= branches, "BRANCH_MISSES {misp}: {what}");
    let miss = get("L1D_READ_MISS");
    assert!(
        miss > 0 && miss <= loads,
        "L1D_READ_MISS {miss} not in (0, {loads}] (is the L1D cache on?): {what}"
    );
    // Every instruction takes at least one cycle in the timing model.
    assert!(get("CPU_CYCLES") >= insns, "{what}");
}

#[test]
fn events_rv64gc() {
    check("pmu_events-rv64gc");
}

#[test]
fn events_rv32imac() {
    check("pmu_events-rv32imac");
}

/// The classifier on known encodings (objdump of the test programs; unprivileged spec tables).
/// Flags: b branch, l load, s store, a atomic, c call, r return.
#[test]
fn classifier() {
    let k = |flags: &str| Class {
        branch: flags.contains('b'),
        load: flags.contains('l'),
        store: flags.contains('s'),
        atomic: flags.contains('a'),
        call: flags.contains('c'),
        ret: flags.contains('r'),
    };
    for (bits, rv64, want) in [
        (0x00a0_5963, true, "b"),   // blez a0, ...
        (0xfef5_1ce3, true, "b"),   // bne a0, a5, ...
        (0x0000_6722, true, "l"),   // c.ldsp a4, 8(sp)
        (0x0000_e43a, true, "s"),   // c.sdsp a4, 8(sp)
        (0x0000_c789, true, "b"),   // c.beqz a5, ...
        (0x0000_4398, false, "l"),  // c.lw a4, 0(a5)
        (0x0000_c398, false, "s"),  // c.sw a4, 0(a5)
        (0x0000_2007, true, "l"),   // flw f0, 0(x0)
        (0x0000_3027, true, "s"),   // fsd f0, 0(x0)
        (0x1005_272f, true, "la"),  // lr.w a4, (a0)
        (0x18e5_272f, true, "sa"),  // sc.w a4, a4, (a0)
        (0x00b5_27af, true, "lsa"), // amoadd.w a5, a1, (a0)
        (0x08b5_27af, true, "lsa"), // amoswap.w a5, a1, (a0)
        (0x0000_006f, true, ""),    // jal x0, 0
        (0x0000_00ef, true, "c"),   // jal ra, 0
        (0x0000_02ef, true, "c"),   // jal t0, 0
        (0x0000_80e7, true, "c"),   // jalr ra, 0(ra)
        (0x0000_8067, true, "r"),   // jalr x0, 0(ra) (ret)
        (0x0000_8082, true, "r"),   // c.jr ra (ret)
        (0x0000_8782, true, ""),    // c.jr a5
        (0x0000_9782, true, "c"),   // c.jalr a5
        (0x0000_2005, false, "c"),  // c.jal (RV32)
        (0x0000_2005, true, ""),    // RV64: the same bits are in the C.ADDIW slot
        (0x3200_1073, true, ""),    // csrw mcountinhibit, zero
    ] {
        assert_eq!(classify(bits, rv64), k(want), "{bits:#010x}");
    }
    assert!(is_end(0x3204_9073)); // csrw mcountinhibit, s1
    assert!(!is_end(START));
    assert!(!is_end(0x3234_9073)); // csrw mhpmevent3, s1
}

/// A co-routine swap (`jalr x1, 0(x5)`) is refused, not guessed.
#[test]
#[should_panic(expected = "co-routine swap")]
fn classifier_refuses_coroutine_swap() {
    classify(0x0002_80e7, true);
}
