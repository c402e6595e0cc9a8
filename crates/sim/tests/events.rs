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
        let mut hart = Hart::new(&Config::virt(info.xlen));
        hart.load(&image).unwrap();
        rvtrace_semihost::attach(&mut hart, &image, prog);
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
            (csr == num::MSCRATCH && ctx.hart().privilege() == 3).then_some(self.0)
        }
        fn csr_write(&mut self, ctx: &mut Ctx, csr: u16, value: u64) -> bool {
            if csr != num::MSCRATCH || ctx.hart().privilege() != 3 {
                return false;
            }
            self.0 = value;
            true
        }
    }
    let cfg = Config::virt(rvtrace_isa::Xlen::Rv64);
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

/// The extension seam end to end: an extension services an `ecall` (its register write reaches
/// the observer, the instruction retires without a trap and says who serviced it), raises an
/// interrupt that the hart takes before the next instruction, and sees retire and trap events.
#[test]
fn an_extension_services_ecalls_raises_interrupts_and_sees_events() {
    use rvtrace_sim::extension::{Ctx, EnvCall, Extension, Service};
    #[derive(Default)]
    struct Doorbell {
        retired: u64,
        traps: Vec<(u64, bool)>,
    }
    impl Extension for Doorbell {
        fn name(&self) -> &'static str {
            "doorbell"
        }
        fn environment_call(&mut self, ctx: &mut Ctx, call: &EnvCall) -> Option<Service> {
            if call.cause != rvtrace_sim::cause::ECALL_M || ctx.x(17) != 0x42 {
                return None;
            }
            ctx.set_x(10, 123);
            ctx.set_pending(1 << 1, true); // SSIP
            Some(Service::Done)
        }
        fn wants_events(&self) -> bool {
            true
        }
        fn retire(&mut self, _ctx: &mut Ctx, _ev: &Retired) {
            self.retired += 1;
        }
        fn trap(&mut self, _ctx: &mut Ctx, ev: &TrapInfo) {
            self.traps.push((ev.cause, ev.interrupt));
        }
    }
    #[derive(Default)]
    struct Seen {
        serviced: Vec<(u64, u8, u8)>,
        a0: Vec<u64>,
    }
    impl Observer for Seen {
        fn retire(&mut self, ev: &Retired) {
            if let Some(s) = ev.serviced {
                assert!(ev.trap.is_none());
                self.serviced.push((ev.pc, s.by, s.cause));
            }
        }
        fn gpr_write(&mut self, rd: u8, v: u64) {
            if rd == 10 {
                self.a0.push(v);
            }
        }
    }
    use rvtrace_testkit::asm::{addi, csrr, csrrw, csrs, hart_with_code, ECALL, NOP, SPIN};
    let code = [
        csrrw(0, 0x305, 6), // csrw mtvec, t1
        csrrw(0, 0x304, 7), // csrw mie, t2 (SSIE)
        csrs(0x300, 5),     // csrs mstatus, t0 (MIE)
        addi(17, 0, 0x42),  // li a7, 0x42
        ECALL,              // serviced
        NOP,                // not reached before the interrupt
        NOP,
        NOP,
        csrr(11, 0x342), // handler: csrr a1, mcause
        SPIN,            // j .
    ];
    let mut h = hart_with_code(Config::virt(rvtrace_isa::Xlen::Rv64), &code);
    h.x[5] = 8;
    h.x[6] = 0x8000_0020;
    h.x[7] = 2;
    h.attach(Box::new(Doorbell::default()));
    let mut seen = Seen::default();
    assert_eq!(h.run(&mut seen, 7), Stop::InsnLimit);
    assert_eq!(seen.serviced, vec![(0x8000_0010, 0, 11)]);
    assert_eq!(h.extension_name(0), Some("doorbell"));
    assert_eq!(seen.a0, vec![123]);
    assert_eq!(h.x[10], 123);
    assert_eq!(h.x[11], 1 << 63 | 1, "supervisor software interrupt taken");
    assert_eq!(h.csr.mepc, 0x8000_0014, "right after the serviced ecall");
    let d = h.extension_mut::<Doorbell>().unwrap();
    assert_eq!(d.traps, vec![(1, true)]);
    assert_eq!(d.retired, 7);
}

/// An extension standing for M-mode firmware: it takes LCOFI (13) when it is not delegated,
/// and the firmware IPI, each time moving the hart to `to` in S-mode.
struct Firmware {
    to: u64,
    taken: Vec<(u64, u64, u8)>,
}

impl rvtrace_sim::extension::Extension for Firmware {
    fn name(&self) -> &'static str {
        "firmware"
    }
    fn machine_interrupt(&mut self, ctx: &mut rvtrace_sim::extension::Ctx, cause: u64) -> bool {
        if cause != 13 {
            return false;
        }
        self.taken
            .push((cause, ctx.hart().pc(), ctx.hart().privilege()));
        ctx.set_pending(1 << 13, false);
        ctx.set_x(16, 0x16);
        ctx.hart_mut().resume_at(self.to, 1);
        true
    }
    fn firmware_ipi(&mut self, ctx: &mut rvtrace_sim::extension::Ctx) {
        self.taken
            .push((3, ctx.hart().pc(), ctx.hart().privilege()));
        ctx.hart_mut().resume_at(self.to, 1);
    }
}

#[derive(Default)]
struct Traps(Vec<TrapInfo>, Vec<(u64, u64)>);

impl Observer for Traps {
    fn trap(&mut self, ev: &TrapInfo) {
        self.0.push(*ev);
    }
    fn retire(&mut self, ev: &Retired) {
        self.1.push((ev.pc, ev.next_pc));
    }
}

/// `Extension::machine_interrupt` (the firmware-interrupt seam, SBI SSE's way in): an interrupt
/// that would trap into M-mode is offered to the extensions first, between instructions; one
/// that moves the hart shows as that interrupt with the new pc as its handler (no M-mode trap:
/// `mcause`, `mepc` untouched; its register writes reach the observer); one declined traps
/// into M as before. A firmware IPI (`smp::Mail::firmware_ipi`) reaches the other hart of a
/// machine before its next instruction and wakes it from `wfi`.
#[test]
fn firmware_interrupts_are_offered_before_an_m_mode_trap() {
    use rvtrace_sim::csr::{irq, mstatus};
    const NOP: u32 = 0x0000_0013;
    const WFI: u32 = 0x1050_0073;
    const J_SELF: u32 = 0x0000_006f; // j .
                                     // Nops from 0x8000_0000 to 0x8000_4000 (mtvec at 0x8000_3000), and a `j .` at 0x8000_2000.
    let nops: Vec<u8> = [NOP; 4096].iter().flat_map(|w| w.to_le_bytes()).collect();
    let setup = |hart: &mut Hart| {
        assert!(hart.bus.write_ram(0x8000_0000, &nops));
        assert!(hart.bus.write_ram(0x8000_2000, &J_SELF.to_le_bytes()));
        assert!(hart.pmp_allow_all());
        hart.pc = 0x8000_0000;
        hart.priv_ = 1;
        hart.csr.mtvec = 0x8000_3000;
        hart.csr.mstatus &= !mstatus::MIE;
    };
    let cfg = Config::virt(rvtrace_isa::Xlen::Rv64);
    let mut hart = Hart::new(&cfg);
    setup(&mut hart);
    hart.attach(Box::new(Firmware {
        to: 0x8000_1000,
        taken: Vec::new(),
    }));
    let mut obs = Traps::default();
    assert_eq!(hart.run(&mut obs, 3), Stop::InsnLimit);
    // LCOFI pending, enabled in mie, not delegated: an M-level interrupt in S-mode.
    hart.csr.mideleg &= !irq::LCOFI;
    hart.csr.mie |= irq::LCOFI;
    hart.csr.mip_sw |= irq::LCOFI;
    assert_eq!(hart.run(&mut obs, 2), Stop::InsnLimit);
    let fw = hart.extension_mut::<Firmware>().unwrap();
    assert_eq!(fw.taken, vec![(13, 0x8000_000c, 1)]);
    assert_eq!(obs.0.len(), 1);
    let t = obs.0[0];
    assert!(t.interrupt && t.cause == 13);
    assert_eq!(
        (t.epc, t.handler, t.from_priv, t.to_priv),
        (0x8000_000c, 0x8000_1000, 1, 1)
    );
    assert_eq!(
        obs.1[3..],
        [(0x8000_1000, 0x8000_1004), (0x8000_1004, 0x8000_1008)]
    );
    assert_eq!((hart.csr.mcause, hart.csr.mepc, hart.priv_), (0, 0, 1));
    assert_eq!(hart.x[16], 0x16);
    // Declined (an interrupt the firmware does not take): the M-mode trap as ever.
    hart.csr.mie |= irq::MSI;
    hart.bus.clint.msip[0] = true;
    assert_eq!(hart.run(&mut obs, 1), Stop::InsnLimit);
    assert_eq!(hart.csr.mcause, (1 << 63) | 3);
    assert_eq!(hart.csr.mepc, 0x8000_1008);

    // Two harts: hart 1 waits in wfi (an interrupt enabled in mie, none pending); hart 0's
    // mail wakes it, and the firmware handler runs before its next instruction.
    let mut m = rvtrace_sim::machine::Machine::new(&cfg, 2);
    // Turns of 1,000 instructions: hart 1's turn comes within the first 2,100.
    m.set_quantum(1000);
    for h in 0..2 {
        m.with_hart(h, |hart| {
            setup(hart);
            hart.csr.mie = irq::SSI;
            assert!(hart.bus.write_ram(0x8000_0800, &WFI.to_le_bytes()));
            hart.attach(Box::new(Firmware {
                to: 0x8000_1000,
                taken: Vec::new(),
            }));
        });
    }
    m.with_hart(0, |hart| hart.pc = 0x8000_2000);
    m.with_hart(1, |hart| hart.pc = 0x8000_0800);
    let mut obs = [Traps::default(), Traps::default()];
    assert_eq!(m.run(&mut obs, 2100), Stop::InsnLimit);
    assert_eq!(
        obs[1].1,
        vec![(0x8000_0800, 0x8000_0804)],
        "hart 1 waits after its wfi"
    );
    m.with_hart(0, |hart| {
        let mail = rvtrace_sim::smp::Mail {
            firmware_ipi: true,
            ..Default::default()
        };
        hart.bus.harts.post(1, mail);
    });
    assert_eq!(m.run(&mut obs, 3000), Stop::InsnLimit);
    let t = obs[1].0[0];
    assert!(t.interrupt && t.cause == rvtrace_sim::extension::FIRMWARE_IPI);
    assert_eq!((t.epc, t.handler), (0x8000_0804, 0x8000_1000));
    assert_eq!(obs[1].1[1], (0x8000_1000, 0x8000_1004));
    assert!(obs[0].0.is_empty(), "hart 0 had no firmware interrupt");
}
