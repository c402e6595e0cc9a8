//! The supervisor timer deadline (`Hart::set_stimecmp`, the storage of Sstc's `stimecmp`):
//! STIP is pending while `mtime >= stimecmp` (Sstc, "Supervisor Timer Register"), and a
//! delegated, enabled STI is taken in S-mode at the instruction boundary where time reaches it.

use rvtrace_isa::Xlen;
use rvtrace_sim::csr::{irq, menvcfg, mstatus, num};
use rvtrace_sim::{Config, Hart, Stop};
use rvtrace_testkit::asm::{hart_with_code, NOP, WFI};

const BASE: u64 = 0x8000_0000;

fn s_mode_hart(code: &[u32], handler: u64) -> Hart {
    let mut h = hart_with_code(Config::virt(Xlen::Rv64), code);
    h.bus.clint.mtimecmp[0] = u64::MAX; // no machine timer
    h.csr.mideleg = irq::STI;
    h.csr.mie = irq::STI;
    h.csr.mstatus |= mstatus::SIE;
    h.csr.stvec = handler;
    h.priv_ = 1;
    assert!(h.pmp_allow_all()); // S-mode needs a PMP entry
    h
}

#[test]
fn sti_is_taken_in_s_mode_when_time_reaches_the_deadline() {
    let code = [NOP; 512];
    let mut h = s_mode_hart(&code, BASE + 0x400);
    let now = h.mtime();
    h.set_stimecmp(now + 7);
    assert_eq!(h.mip() & irq::STI, 0, "not pending before the deadline");
    assert_eq!(h.run(&mut (), 7), Stop::InsnLimit);
    // Seven instructions retired: mtime == deadline, STIP pending, not yet taken.
    assert_ne!(h.mip() & irq::STI, 0);
    assert_eq!(h.priv_, 1);
    assert_eq!(h.pc, BASE + 28);
    assert_eq!(h.run(&mut (), 1), Stop::InsnLimit);
    // The interrupt was taken before the eighth instruction, in S (delegated).
    assert_eq!(h.csr.scause, (1 << 63) | 5);
    assert_eq!(h.csr.sepc, BASE + 28);
    assert_eq!(h.priv_, 1);
    assert_eq!(h.csr.mcause, 0, "not taken in M");
    // sip shows it while pending; a new deadline in the future clears it.
    assert_ne!(h.csr_read(num::SIP).unwrap() & irq::STI, 0);
    h.set_stimecmp(u64::MAX);
    assert_eq!(h.mip() & irq::STI, 0);
}

#[test]
fn sti_not_taken_while_masked_or_undelegated_and_wfi_sleeps_until_it() {
    // Masked by sie.STIE: pending, not taken.
    let mut h = s_mode_hart(&[NOP; 512], BASE + 0x400);
    h.csr.mie = 0;
    h.set_stimecmp(3);
    assert_eq!(h.run(&mut (), 10), Stop::InsnLimit);
    assert_ne!(h.mip() & irq::STI, 0);
    assert_eq!(h.csr.scause, 0);
    assert_eq!(h.pc, BASE + 40);

    // wfi jumps time to the S deadline when STIE is enabled, then the interrupt is taken.
    let mut code = [NOP; 512];
    code[1] = WFI;
    let mut h = s_mode_hart(&code, BASE + 0x400);
    h.set_stimecmp(1000);
    assert_eq!(h.run(&mut (), 3), Stop::InsnLimit);
    assert_eq!(h.csr.scause, (1 << 63) | 5);
    assert_eq!(h.csr.sepc, BASE + 8, "after the wfi");
    // wfi jumped time to 1000 and retired (1001); one handler instruction ran (1002).
    assert_eq!(h.mtime(), 1002);
}

fn m_mode_hart(cfg: Config) -> Hart {
    let mut h = hart_with_code(cfg, &[NOP; 64]);
    h.bus.clint.mtimecmp[0] = u64::MAX;
    h
}

fn stip(h: &Hart) -> bool {
    h.mip() & irq::STI != 0
}

#[test]
fn stce_selects_what_drives_stip() {
    // Sstc: "When STCE in menvcfg is zero ... STIP in mip and sip reverts to its defined behavior
    // as if this extension is not implemented": a CSR write of a due stimecmp does not make it
    // pending (QEMU 7.2 does; programs/src/sstc.c leaves this case out).
    let mut h = m_mode_hart(Config::virt(Xlen::Rv64));
    assert!(h.csr_write(num::STIMECMP, 0));
    assert!(!stip(&h));
    // ... and STIP is software's bit.
    assert!(h.csr_write(num::MIP, irq::STI));
    assert!(stip(&h));
    assert!(h.csr_write(num::MIP, 0));
    assert!(!stip(&h));
    // STCE=1: the comparison alone, read-only in mip.
    assert!(h.csr_write(num::MENVCFG, menvcfg::STCE));
    assert!(stip(&h), "the written stimecmp (0) is due");
    assert!(h.csr_write(num::MIP, 0));
    assert!(stip(&h), "mip.STIP is read-only with STCE");
    assert!(h.csr_write(num::STIMECMP, u64::MAX));
    assert!(h.csr_write(num::MIP, irq::STI));
    assert!(!stip(&h));
    // The firmware's set_timer is then a stimecmp write.
    h.set_stimecmp(0);
    assert_eq!(h.csr_read(num::STIMECMP), Some(0));
    assert!(stip(&h));
}

#[test]
fn firmware_timer_without_stce_fires_once_and_software_can_clear_it() {
    let mut h = m_mode_hart(Config::virt(Xlen::Rv64));
    let now = h.mtime();
    h.set_stimecmp(now + 3);
    assert!(!stip(&h));
    assert_eq!(h.run(&mut (), 3), Stop::InsnLimit);
    assert!(stip(&h), "fired at the deadline");
    // M-mode software clears the fired timer's bit (as a firmware handler would).
    assert!(h.csr_write(num::MIP, 0));
    assert!(!stip(&h));
    assert_eq!(h.run(&mut (), 3), Stop::InsnLimit);
    assert!(!stip(&h), "one-shot: it does not fire again");
    // A CSR write takes the deadline back from the firmware: with STCE 0 it drives nothing.
    h.set_stimecmp(0);
    assert!(stip(&h));
    assert!(h.csr_write(num::STIMECMP, 0));
    assert!(!stip(&h));
}

#[test]
fn without_sstc_the_csr_and_stce_do_not_exist() {
    let mut cfg = Config::virt(Xlen::Rv32);
    cfg.sstc = false;
    let mut h = m_mode_hart(cfg);
    assert_eq!(h.csr_read(num::STIMECMP), None);
    assert_eq!(h.csr_read(num::STIMECMPH), None);
    assert!(h.csr_write(num::MENVCFGH, 0xffff_ffff));
    assert_eq!(
        h.csr_read(num::MENVCFGH),
        Some(0x4000_0000),
        "STCE read-only 0, PBMTE kept"
    );
    // The firmware timer still works (an SBI without Sstc).
    h.set_stimecmp(0);
    assert!(stip(&h));
}

#[test]
fn rv32_halves() {
    let mut h = m_mode_hart(Config::virt(Xlen::Rv32));
    assert!(h.csr_write(num::STIMECMP, 0x89ab_cdef));
    assert!(h.csr_write(num::STIMECMPH, 0x0123_4567));
    assert_eq!(h.csr.stimecmp, 0x0123_4567_89ab_cdef);
    assert_eq!(h.csr_read(num::STIMECMPH), Some(0x0123_4567));
    assert_eq!(
        h.csr_read(num::STIMECMP),
        Some(0xffff_ffff_89ab_cdef),
        "sign-extended as XLEN"
    );
}
