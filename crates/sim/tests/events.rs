//! The events carry the state they change: a trap's `mstatus` after entry ([`TrapInfo::mstatus`])
//! and a trap return's `mstatus` and privilege ([`Observer::trap_return`]) equal what the hart
//! holds right after them, on test programs that trap into M and S mode and return with `mret`
//! and `sret`. And CSR devices are asked before the base CSR file.

use rvtrace_image::Image;
use rvtrace_sim::{Config, Hart, Observer, Retired, Stop, TrapInfo};
use std::path::Path;

/// Stops after every trap and every trap return, with what the event said.
#[derive(Default)]
struct Watch {
    said: Option<(u64, u8)>,
    stop: bool,
}

impl Observer for Watch {
    fn trap(&mut self, t: &TrapInfo) {
        self.said = Some((t.mstatus, t.to_priv));
        self.stop = true;
    }
    fn retire(&mut self, ev: &Retired) {
        if let Some(t) = &ev.trap {
            self.said = Some((t.mstatus, t.to_priv));
            self.stop = true;
        }
    }
    fn trap_return(&mut self, mstatus: u64, to_priv: u8) {
        self.said = Some((mstatus, to_priv));
        self.stop = true;
    }
    fn stop_requested(&mut self) -> bool {
        std::mem::take(&mut self.stop)
    }
}

#[test]
fn trap_and_trap_return_events_carry_mstatus_and_privilege() {
    for prog in [
        "sdeleg-rv64gc",
        "sdeleg-rv32imac",
        "traps-rv64gc",
        "timer-rv32imac",
    ] {
        let elf = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../programs/elf")
            .join(format!("{prog}.elf"));
        let mut image = Image::new();
        let info = image.load_file(&elf).unwrap();
        let mut hart = Hart::new(&Config::virt(info.xlen, prog));
        hart.load(&image).unwrap();
        let mut w = Watch::default();
        let (mut traps, mut returns_to_s_or_u) = (0, 0);
        loop {
            match hart.run(&mut w, 10_000_000) {
                Stop::Requested => {
                    let (ms, p) = w.said.take().expect("a stop follows an event");
                    assert_eq!(ms, hart.csr.mstatus, "{prog}: mstatus at pc {:#x}", hart.pc);
                    assert_eq!(p, hart.priv_, "{prog}: privilege at pc {:#x}", hart.pc);
                    traps += 1;
                    returns_to_s_or_u += u32::from(p < 3);
                }
                Stop::Exit(0) => break,
                other => panic!("{prog}: {other:?}"),
            }
        }
        assert!(
            traps > 10 && returns_to_s_or_u > 0,
            "{prog}: {traps} events"
        );
    }
}

/// An extension is asked before the base CSR file: it can take over a CSR the base file
/// implements (`mscratch` here), a refused access is an illegal instruction, and CSRs it does not
/// claim stay the base file's.
#[test]
fn extensions_are_asked_before_the_base_csr_file() {
    use rvtrace_sim::csr::num;
    use rvtrace_sim::extension::{Ctx, Extension};
    struct Scratch(u64);
    impl Extension for Scratch {
        fn name(&self) -> &'static str {
            "scratch"
        }
        fn claims_csr(&self, csr: u16) -> bool {
            csr == num::MSCRATCH || csr == 0x7c0
        }
        fn csr_read(&mut self, ctx: &mut Ctx, csr: u16) -> Option<u64> {
            (csr == num::MSCRATCH && ctx.hart().priv_ == 3).then_some(self.0)
        }
        fn csr_write(&mut self, ctx: &mut Ctx, csr: u16, value: u64) -> bool {
            if csr != num::MSCRATCH || ctx.hart().priv_ != 3 {
                return false;
            }
            self.0 = value;
            true
        }
    }
    let mut cfg = Config::virt(rvtrace_isa::Xlen::Rv64, "dev");
    cfg.semihosting_cmdline = None;
    let mut hart = Hart::new(&cfg);
    assert!(hart.csr_write(num::MSCRATCH, 3));
    assert_eq!(hart.csr_read(num::MSCRATCH), Some(3), "the base file's");
    hart.attach(Box::new(Scratch(7)));
    assert_eq!(hart.csr_read(num::MSCRATCH), Some(7));
    assert!(hart.csr_write(num::MSCRATCH, 42));
    assert_eq!(hart.csr_read(num::MSCRATCH), Some(42));
    assert_eq!(
        hart.csr.mscratch, 3,
        "the base file's register is untouched"
    );
    assert_eq!(hart.extension_mut::<Scratch>().map(|s| s.0), Some(42));
    // Claimed but refused (a custom CSR the extension does not serve): illegal.
    assert_eq!(hart.csr_read(0x7c0), None);
    assert!(!hart.csr_write(0x7c0, 1));
    // Not claimed: the base file's.
    assert!(hart.csr_write(num::MEPC, 5));
    assert_eq!(hart.csr_read(num::MEPC), Some(5));
}
