//! PMP enforcement on the hart (privileged ISA, "Physical Memory Protection") for what
//! `programs/src/pmp.c` cannot show against QEMU 7.2: the cases where QEMU differs from the
//! spec (a 32-bit instruction whose second parcel is denied in the same page, an access that
//! covers a region without an end byte in it), and that the hart's fast path follows every
//! change of privilege, `mstatus` and PMP registers, whoever makes it.

use rvtrace_isa::Xlen;
use rvtrace_sim::csr::{mstatus, num};
use rvtrace_sim::pmp::cfg;
use rvtrace_sim::{Config, Hart, Stop};
use rvtrace_testkit::asm::{csrrw, hart_with_code, i_type, ld, r_type, NOP, SPIN};

const BASE: u64 = 0x8000_0000;
const HANDLER: u64 = BASE + 4 * 60;
const DATA: u64 = BASE + 0x2000;
const M: u8 = 3;
const S: u8 = 1;
const U: u8 = 0;

/// `lw a0, 0(a1)`.
const LW: u32 = 0x0005_a503;
/// `sw a2, 0(a1)`.
const SW: u32 = 0x00c5_a023;
/// `amoadd.w a0, a2, (a1)`.
const AMOADD: u32 = 0x00c5_a52f;

/// `code` at RAM base, a spinning M-mode handler at `HANDLER`, a1 = `DATA`.
fn hart(code: &[u32]) -> Hart {
    let mut c = code.to_vec();
    c.resize(60, NOP);
    c.push(SPIN);
    let mut h = hart_with_code(Config::virt(Xlen::Rv64), &c);
    assert!(h.csr_write(num::MTVEC, HANDLER));
    h.x[11] = DATA;
    h
}

/// Run `n` instructions from RAM base at privilege `p`: the (cause, tval) of the trap taken,
/// if any (the handler spins).
fn run_at(h: &mut Hart, p: u8, n: u64) -> Option<(u64, u64)> {
    h.priv_ = p;
    h.pc = BASE;
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
    (h.pc == HANDLER).then_some((h.csr.mcause, h.csr.mtval))
}

fn napot(base: u64, size: u64) -> u64 {
    (base >> 2) | ((size >> 3) - 1)
}

fn set(h: &mut Hart, i: u16, addr: u64, c: u8) {
    assert!(h.csr_write(num::PMPADDR0 + i, addr));
    let mut v = h.csr_read(num::PMPCFG0).unwrap();
    v = (v & !(0xff << (8 * i))) | u64::from(c) << (8 * i);
    assert!(h.csr_write(num::PMPCFG0, v));
}

/// No entry matches: S and U cannot fetch, M can; a privilege set from outside between runs
/// is what the next run checks at.
#[test]
fn privilege_set_from_outside_is_checked() {
    let mut h = hart(&[LW]);
    assert_eq!(run_at(&mut h, S, 1), Some((1, BASE)));
    assert_eq!(run_at(&mut h, U, 1), Some((1, BASE)));
    assert_eq!(run_at(&mut h, M, 1), None);
    assert!(h.pmp_allow_all());
    assert_eq!(run_at(&mut h, U, 1), None);
    assert_eq!(run_at(&mut h, S, 1), None);
}

/// A PMP write takes effect at the next access, from outside and from the program itself;
/// a locked entry applies to M.
#[test]
fn pmp_writes_take_effect_at_the_next_access() {
    let rx = cfg::NAPOT | cfg::R | cfg::X;
    let mut h = hart(&[SW, csrrw(0, num::PMPCFG0, 5), SW]);
    h.x[5] = u64::from(cfg::L | rx);
    assert!(h.pmp_allow_all());
    assert_eq!(run_at(&mut h, S, 1), None);
    set(&mut h, 0, u64::MAX, rx);
    assert_eq!(run_at(&mut h, S, 1), Some((7, DATA)));
    // In M: the first store passes (unlocked), the csrw locks entry 0, the second faults.
    assert_eq!(run_at(&mut h, M, 3), Some((7, DATA)));
    assert_eq!(h.csr.mepc, BASE + 8);
    assert!(!h.pmp_allow_all(), "entry 0 is locked");
}

/// MPRV: M-mode loads and stores are checked at MPP's privilege, fetches are not.
#[test]
fn mprv_checks_loads_and_stores_at_mpp() {
    let mut h = hart(&[LW, SW]);
    set(&mut h, 0, u64::MAX, cfg::NAPOT | cfg::R); // no X, no W below M
    let mpp = |p: u64| mstatus::MPRV | p << 11;
    assert!(h.csr_write(num::MSTATUS, mpp(1)));
    assert_eq!(run_at(&mut h, M, 2), Some((7, DATA)));
    assert_eq!(h.csr.mepc, BASE + 4, "the load passed");
    assert!(h.csr_write(num::MSTATUS, mpp(0)));
    assert_eq!(run_at(&mut h, M, 2), Some((7, DATA)));
    assert!(h.csr_write(num::MSTATUS, mpp(3)));
    assert_eq!(run_at(&mut h, M, 2), None);
    assert!(h.csr_write(num::MSTATUS, 0));
    assert_eq!(run_at(&mut h, M, 2), None);
}

/// A 32-bit instruction is fetched as two parcels, each checked: the second denied in the
/// same page faults with tval = pc + 2 (QEMU 7.2 checks only the first parcel there).
#[test]
fn second_parcel_of_a_fetch_is_checked_in_the_same_page() {
    let mut h = hart(&[]);
    // c.nop at +0xfc, addi a0, a0, 1 at +0xfe..+0x101.
    let addi = i_type(1, 10, 0, 10, 0x13);
    let mut bytes = vec![0x01, 0x00];
    bytes.extend_from_slice(&addi.to_le_bytes());
    assert!(h.bus.write_ram(BASE + 0xfc, &bytes));
    set(&mut h, 0, napot(BASE, 0x100), cfg::NAPOT | cfg::X);
    set(&mut h, 1, napot(BASE, 0x1000), cfg::NAPOT | cfg::R);
    h.priv_ = S;
    h.pc = BASE + 0xfe;
    assert_eq!(h.run(&mut (), 1), Stop::InsnLimit);
    assert_eq!(
        (h.csr.mcause, h.csr.mtval, h.csr.mepc),
        (1, BASE + 0x100, BASE + 0xfe)
    );
    // Both parcels executable: it runs.
    set(&mut h, 1, napot(BASE, 0x1000), cfg::NAPOT | cfg::X);
    h.priv_ = S;
    h.pc = BASE + 0xfe;
    h.x[10] = 41;
    assert_eq!(h.run(&mut (), 1), Stop::InsnLimit);
    assert_eq!((h.pc, h.x[10]), (BASE + 0x102, 42));
}

/// An access that matches an entry in part fails, also when no end byte is in the entry (a
/// misaligned 8-byte load around a NA4 region; QEMU 7.2 looks at the two ends only), and in
/// M-mode too.
#[test]
fn partial_match_without_an_end_byte_inside() {
    let mut h = hart(&[ld(10, 11, 2)]);
    set(&mut h, 0, (DATA + 4) >> 2, cfg::NA4 | cfg::R);
    set(&mut h, 1, u64::MAX, cfg::NAPOT | cfg::R | cfg::W | cfg::X);
    assert_eq!(run_at(&mut h, S, 1), Some((5, DATA + 2)));
    assert_eq!(run_at(&mut h, M, 1), Some((5, DATA + 2)));
    let mut h = hart(&[ld(10, 11, 8)]);
    set(&mut h, 0, (DATA + 4) >> 2, cfg::NA4 | cfg::R);
    set(&mut h, 1, u64::MAX, cfg::NAPOT | cfg::R | cfg::W | cfg::X);
    assert_eq!(run_at(&mut h, S, 1), None);
}

/// AMOs (and SC) need R, then W: as QEMU 7.2, a missing R is a load access fault.
#[test]
fn amo_needs_read_then_write() {
    for (c, want) in [
        (0, Some((5, DATA))),
        (cfg::W, Some((5, DATA))),
        (cfg::R, Some((7, DATA))),
        (cfg::R | cfg::W, None),
    ] {
        let mut h = hart(&[AMOADD]);
        set(&mut h, 0, napot(DATA, 0x1000), cfg::NAPOT | c);
        set(&mut h, 1, u64::MAX, cfg::NAPOT | cfg::R | cfg::W | cfg::X);
        assert_eq!(run_at(&mut h, U, 1), want, "pmpcfg R/W = {c:#x}");
    }
    // LR needs R only, a store W only.
    let lr = r_type(0b00010 << 2, 0, 11, 2, 10, 0x2f); // lr.w a0, (a1)
    let mut h = hart(&[lr, SW]);
    set(&mut h, 0, napot(DATA, 0x1000), cfg::NAPOT | cfg::R);
    set(&mut h, 1, u64::MAX, cfg::NAPOT | cfg::R | cfg::W | cfg::X);
    assert_eq!(run_at(&mut h, S, 2), Some((7, DATA)));
    assert_eq!(h.csr.mepc, BASE + 4);
}
