//! Address translation on the hart (privileged ISA, "Supervisor-Level ISA") for what
//! `programs/src/vm.c` cannot show against QEMU 7.2: the TLB itself (an entry kept until the
//! `sfence.vma` that names it, each form of the fence, global entries, a `satp` write that does
//! not flush), its PMU events, an A/D update that PMP denies (QEMU 7.2 does not check it), and
//! the decoded-instruction cache under a remapped code page.

use rvtrace_isa::Xlen;
use rvtrace_sim::csr::num;
use rvtrace_sim::mmu::pte;
use rvtrace_sim::pmp::cfg;
use rvtrace_sim::{Config, Hart, Stop};
use rvtrace_testkit::asm::{addi, hart_with_code, jalr, ld, r_type, NOP, SPIN};

const BASE: u64 = 0x8000_0000;
const HANDLER: u64 = BASE + 4 * 60;
/// Page-table pages: root, level 1, level 0.
const ROOT: u64 = BASE + 0x10_0000;
const L1: u64 = ROOT + 0x1000;
const L0: u64 = ROOT + 0x2000;
/// Physical data pages.
const P1: u64 = BASE + 0x20_0000;
const P2: u64 = P1 + 0x1000;
/// Test virtual page (under L0).
const TV: u64 = 0x4000_0000;
const S: u8 = 1;
const RWAD: u64 = pte::V | pte::R | pte::W | pte::A | pte::D;

/// `sfence.vma rs1, rs2`.
fn sfence(rs1: u32, rs2: u32) -> u32 {
    r_type(0x09, rs2, rs1, 0, 0, 0x73)
}

fn leaf(pa: u64, flags: u64) -> u64 {
    (pa >> 12) << 10 | flags
}

fn put(h: &mut Hart, addr: u64, v: u64) {
    assert!(h.bus.write_ram(addr, &v.to_le_bytes()));
}

/// Sv39 with ASID 1: RAM identity-mapped by a gigapage (so the code runs), TV → P1 through L1
/// and L0; P1 holds 1, P2 holds 2; PMP open; `code` at RAM base, a spinning M handler.
fn hart(code: &[u32]) -> Hart {
    let mut c = code.to_vec();
    c.resize(60, NOP);
    c.push(SPIN);
    let mut h = hart_with_code(Config::virt(Xlen::Rv64), &c);
    assert!(h.csr_write(num::MTVEC, HANDLER));
    assert!(h.pmp_allow_all());
    put(&mut h, ROOT + 2 * 8, leaf(BASE, RWAD | pte::X));
    put(&mut h, ROOT + 8, leaf(L1, pte::V)); // VPN2 = 1
    put(&mut h, L1, leaf(L0, pte::V));
    put(&mut h, L0, leaf(P1, RWAD));
    put(&mut h, P1, 1);
    put(&mut h, P2, 2);
    assert!(h.csr_write(num::SATP, 8 << 60 | 1 << 44 | ROOT >> 12));
    h.x[11] = TV;
    h
}

/// Run `n` instructions from `pc` in S; the trap (cause, tval) if the handler was reached.
fn run_s(h: &mut Hart, pc: u64, n: u64) -> Option<(u64, u64)> {
    h.priv_ = S;
    h.pc = pc;
    assert_eq!(h.run(&mut (), n), Stop::InsnLimit);
    (h.pc == HANDLER).then_some((h.csr.mcause, h.csr.mtval))
}

/// Load TV (the `ld` at BASE + 4) after running the fence at BASE (or not).
fn load(h: &mut Hart, fence_first: bool) -> u64 {
    let (pc, n) = if fence_first {
        (BASE, 2)
    } else {
        (BASE + 4, 1)
    };
    assert_eq!(run_s(h, pc, n), None);
    h.x[10]
}

/// "Supervisor Memory-Management Fence Instruction": a translation stays cached until a fence
/// names it (by address: any address in the page; by ASID: the current one), and a `satp`
/// write does not flush it.
#[test]
fn tlb_entry_lives_until_a_fence_names_it() {
    for (rs1, rs2, a2, a3, flushes) in [
        (0, 0, 0, 0, true),             // everything
        (12, 0, TV + 8, 0, true),       // this page, any ASID
        (12, 0, TV + 0x1000, 0, false), // another page
        (0, 13, 0, 1, true),            // this ASID
        (0, 13, 0, 2, false),           // another ASID
        (12, 13, TV, 1, true),          // this page in this ASID
        (12, 13, TV, 2, false),         // this page in another ASID
    ] {
        let what = format!("sfence.vma x{rs1}={a2:#x}, x{rs2}={a3}");
        let mut h = hart(&[sfence(rs1, rs2), ld(10, 11, 0)]);
        assert_eq!(load(&mut h, false), 1);
        put(&mut h, L0, leaf(P2, RWAD));
        assert_eq!(load(&mut h, false), 1, "{what}: cached before the fence");
        let satp = h.csr_read(num::SATP).unwrap();
        assert!(h.csr_write(num::SATP, satp));
        assert_eq!(
            load(&mut h, false),
            1,
            "{what}: a satp write does not flush"
        );
        h.x[12] = a2;
        h.x[13] = a3;
        let want = if flushes { 2 } else { 1 };
        assert_eq!(load(&mut h, true), want, "{what}");
    }
}

/// Global mappings (G in the leaf or in a non-leaf PTE above it) survive the ASID forms of the
/// fence and match in every address space.
#[test]
fn global_entries_survive_asid_fences() {
    for global_in_pointer in [false, true] {
        // BASE: sfence.vma x0, a3; ld; sfence.vma; ld.
        let ldt = ld(10, 11, 0);
        let mut h = hart(&[sfence(0, 13), ldt, sfence(0, 0), ldt]);
        let leaf_g = if global_in_pointer {
            put(&mut h, L1, leaf(L0, pte::V | pte::G));
            RWAD
        } else {
            RWAD | pte::G
        };
        put(&mut h, L0, leaf(P1, leaf_g));
        assert_eq!(run_s(&mut h, BASE + 4, 1), None);
        assert_eq!(h.x[10], 1);
        put(&mut h, L0, leaf(P2, leaf_g));
        // Another address space: the global entry still matches.
        assert!(h.csr_write(num::SATP, 8 << 60 | 7 << 44 | ROOT >> 12));
        assert_eq!(run_s(&mut h, BASE + 4, 1), None);
        assert_eq!(h.x[10], 1, "global entry seen from ASID 7");
        h.x[13] = 7;
        assert_eq!(run_s(&mut h, BASE, 2), None);
        assert_eq!(h.x[10], 1, "kept by sfence.vma x0, asid");
        assert_eq!(run_s(&mut h, BASE + 8, 2), None);
        assert_eq!(h.x[10], 2, "dropped by sfence.vma x0, x0");
    }
}

/// The DTLB/ITLB events (SBI PMU type 1, cache ids 3 and 4) count lookups and walks of
/// translated accesses, in the instrumented loop.
#[test]
fn tlb_events_count_lookups_and_misses() {
    // Four loads of TV, then one store to it (the first store to a clean page walks).
    let code = [
        ld(10, 11, 0),
        ld(10, 11, 8),
        ld(10, 11, 16),
        ld(10, 11, 24),
        rvtrace_testkit::asm::sd(10, 11, 0),
    ];
    let mut h = hart(&code);
    put(&mut h, L0, leaf(P1, pte::V | pte::R | pte::W | pte::A));
    let events = [0x1_0018, 0x1_0019, 0x1_001a, 0x1_001b, 0x1_0020, 0x1_0021];
    for (i, e) in events.iter().enumerate() {
        assert!(h.csr_write(num::MHPMEVENT3 + i as u16, *e));
        assert!(h.csr_write(num::MHPMCOUNTER3 + i as u16, 0));
    }
    assert!(h.csr_write(num::MCOUNTINHIBIT, 0));
    assert_eq!(run_s(&mut h, BASE, 5), None);
    h.priv_ = 3;
    let got: Vec<u64> = (0..6)
        .map(|i| h.csr_read(num::MHPMCOUNTER3 + i).unwrap())
        .collect();
    // dTLB loads 4 (1 walk), stores 1 (1 walk: D was clear), iTLB 5 lookups, 1 walk.
    assert_eq!(got, [4, 1, 1, 1, 5, 1]);
    let mut d = [0u8; 8];
    assert!(h.read_memory(L0, &mut d));
    assert_eq!(u64::from_le_bytes(d) & pte::D, pte::D, "the store set D");
}

/// An A/D update is a write of the PTE, checked by PMP ("If the store to pte violates a PMA
/// or PMP check, raise an access-fault exception corresponding to the original access
/// type"): the page table readable but not writable for S, a load of a page with A clear is a
/// load access fault, and a store to a clean page a store access fault. (QEMU 7.2 does not
/// check the update.)
#[test]
fn ad_update_denied_by_pmp_is_an_access_fault() {
    let mut h = hart(&[ld(10, 11, 0), rvtrace_testkit::asm::sd(10, 11, 0)]);
    put(&mut h, L0, leaf(P1, pte::V | pte::R | pte::W));
    // Entry 0: the page-table pages read-only; entry 1: everything.
    assert!(h.csr_write(num::PMPADDR0, (ROOT >> 2) | ((0x4000 >> 3) - 1)));
    assert!(h.csr_write(num::PMPADDR0 + 1, u64::MAX));
    let c = u64::from(cfg::NAPOT | cfg::R) | u64::from(cfg::NAPOT | cfg::R | cfg::W | cfg::X) << 8;
    assert!(h.csr_write(num::PMPCFG0, c));
    assert_eq!(run_s(&mut h, BASE, 1), Some((5, TV)));
    put(&mut h, L0, leaf(P1, pte::V | pte::R | pte::W | pte::A));
    assert_eq!(run_s(&mut h, BASE, 2), Some((7, TV)));
    assert_eq!(h.csr.mepc, BASE + 4, "the load passed");
}

/// The decoded-instruction cache is keyed by the virtual pc and checked against the fetched
/// bits: the same virtual page remapped to other code runs the other code.
#[test]
fn remapped_code_page_runs_the_new_code() {
    // BASE: sfence.vma; jalr x0, 0(a4). Code pages: addi a0, a0, 1 (P1) / 2 (P2); jalr x0, 0(a5).
    let mut h = hart(&[sfence(0, 0), jalr(0, 14, 0)]);
    for (pa, k) in [(P1, 1), (P2, 2)] {
        let code = [addi(10, 10, k), jalr(0, 15, 0)];
        assert!(h.bus.write_ram(pa, &rvtrace_testkit::asm::bytes(&code)));
    }
    put(&mut h, L0, leaf(P1, RWAD | pte::X));
    h.x[14] = TV;
    h.x[15] = BASE + 8;
    h.x[10] = 0;
    assert_eq!(run_s(&mut h, BASE, 4), None);
    assert_eq!((h.x[10], h.pc), (1, BASE + 8));
    put(&mut h, L0, leaf(P2, RWAD | pte::X));
    assert_eq!(run_s(&mut h, BASE, 4), None);
    assert_eq!((h.x[10], h.pc), (3, BASE + 8));
}
