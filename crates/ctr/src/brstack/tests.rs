//! The perf text, field by field against hand-checked lines (each rule's source is in the module
//! documentation), and [`FlowCtr`] against the hart's own CTR on real programs.

use super::*;
use crate::{ctl, CCV};

fn entry(from: u64, to: u64, t: u8, cc: u16, ccv: bool, misp: bool) -> Entry {
    Entry {
        source: from | crate::V,
        target: to | misp as u64,
        data: (cc as u64) << 16 | if ccv { CCV } else { 0 } | t as u64,
    }
}

/// `ctr_perf_map[]` of the RISC-V CTR driver (series v3), type by type; names from
/// `branch_type_name()`, PERF_BR_UNKNOWN printed empty by `get_branch_type()`.
#[test]
fn ctr_types_map_to_the_drivers_perf_types() {
    let want = [
        (0, ""),
        (ty::EXCEPTION, "SYSCALL"),
        (ty::INTERRUPT, "IRQ"),
        (ty::TRAP_RETURN, "ERET"),
        (ty::NOT_TAKEN_BRANCH, "COND"),
        (ty::TAKEN_BRANCH, "COND"),
        (6, ""),
        (7, ""),
        (ty::INDIRECT_CALL, "IND_CALL"),
        (ty::DIRECT_CALL, "CALL"),
        (ty::INDIRECT_JUMP, "IND"),
        (ty::DIRECT_JUMP, "UNCOND"),
        (ty::CORSWAP, ""),
        (ty::RETURN, "RET"),
        (ty::OTHER_INDIRECT_JUMP, "IND"),
        (ty::OTHER_DIRECT_JUMP, "UNCOND"),
    ];
    for (t, name) in want {
        assert_eq!(perf::name(perf_type(t)), name, "CTR type {t}");
    }
    // The uapi numbers behind the names (PERF_BR_SYSCALL 7, PERF_BR_ERET 11, PERF_BR_IRQ 12).
    assert_eq!(
        (perf::SYSCALL, perf::ERET, perf::IRQ),
        (7, 11, 12),
        "include/uapi/linux/perf_event.h"
    );
}

/// `print_bstack_flags()`: `/%s/%c/%c/%d/%s/%s ` with the event P (MISP=0), no transaction, no
/// abort, the cycles, the type and `-` for the unknown speculation outcome.
#[test]
fn a_brstack_entry() {
    let e = PerfEntry::from_ctr(
        &entry(0x8000_0010, 0x8000_0100, ty::TAKEN_BRANCH, 10, true, false),
        Fields::ALL,
    );
    let mut s = String::new();
    write_brstack_entry(&mut s, &e);
    assert_eq!(s, " 0x80000010/0x80000100/P/-/-/10/COND/- ");
}

/// MISP=1 is `M` (driver: mispred = MISP, predicted = !MISP); without flags (`-j no_flags`)
/// neither is set and perf prints `-`; without cycles (`no_cycles`) 0.
#[test]
fn flags_and_their_absence() {
    let e = entry(0x1000, 0x2000, ty::DIRECT_CALL, 7, true, true);
    let line = |f| {
        let mut s = String::new();
        write_brstack_entry(&mut s, &PerfEntry::from_ctr(&e, f));
        s
    };
    assert_eq!(line(Fields::ALL), " 0x1000/0x2000/M/-/-/7/CALL/- ");
    assert_eq!(line(Fields::NONE), " 0x1000/0x2000/-/-/-/0/CALL/- ");
    // The target's MISP bit is not part of the address.
    assert_eq!(PerfEntry::from_ctr(&e, Fields::ALL).to, 0x2000);
}

/// "Cycle Counting": CC is valid only with CCV=1; CCE>0 means (4096 + CCM) << (CCE - 1);
/// perf's field has 16 bits, so larger counts saturate.
#[test]
fn cycle_counts() {
    let cyc =
        |cc, ccv| PerfEntry::from_ctr(&entry(4, 8, ty::RETURN, cc, ccv, false), Fields::ALL).cycles;
    assert_eq!(cyc(10, false), 0);
    assert_eq!(cyc(10, true), 10);
    assert_eq!(cyc(0x1005, true), 4101);
    assert_eq!(cyc(0x4fff, true), 65528, "(4096 + 4095) << 3 fits");
    assert_eq!(cyc(0x5000, true), 65535, "4096 << 4 = 65536 saturates");
}

/// `sample__fprintf_sym()` prints the ip as `%16` hex after the space of `process_event()`;
/// an empty branch stack prints nothing more; entries follow, each with its own leading space.
#[test]
fn sample_lines() {
    assert_eq!(sample_line(0x8000_0010, &[], None), "         80000010\n");
    let es = [
        PerfEntry::from_ctr(
            &entry(0x8000_0020, 0x8000_0040, ty::RETURN, 3, true, false),
            Fields::ALL,
        ),
        PerfEntry::from_ctr(
            &entry(0x8000_0000, 0x8000_0100, ty::EXCEPTION, 0, false, false),
            Fields::ALL,
        ),
    ];
    assert_eq!(
        sample_line(0x8000_0044, &es, None),
        "         80000044 0x80000020/0x80000040/P/-/-/3/RET/-  0x80000000/0x80000100/P/-/-/0/SYSCALL/- \n"
    );
}

/// `brstacksym`: `name+0xOFF` (offset 0 printed too), `[unknown]` without a symbol, no space
/// before the first entry's symbol; co-routine swaps have no perf type (empty).
#[test]
fn brstacksym_lines() {
    let syms = |a: u64| match a {
        0x100..=0x1ff => Some(("main", a - 0x100)),
        0x200..=0x2ff => Some(("f", a - 0x200)),
        _ => None,
    };
    let es = [
        PerfEntry::from_ctr(
            &entry(0x110, 0x200, ty::DIRECT_CALL, 0, false, false),
            Fields::NONE,
        ),
        PerfEntry::from_ctr(
            &entry(0x204, 0x900, ty::CORSWAP, 0, false, false),
            Fields::NONE,
        ),
    ];
    assert_eq!(
        sample_line(0x200, &es, Some(&syms)),
        "              200main+0x10/f+0x0/-/-/-/0/CALL/- f+0x4/[unknown]/-/-/-/0//- \n"
    );
}

/// FlowCtr against the hart's CTR: a program runs with CTR attached and sampled every `n`
/// instructions (ip = the hart's next pc, entries youngest first); the same run, turned into
/// flow elements as a decoder reports them (ranges, traps after the range of a retiring
/// `ecall`/`ebreak`, privileges as Context), gives the same samples. Cycle counts and MISP are
/// not compared (a flow has neither).
mod against_the_hart {
    use super::*;
    use rvtrace_sim::{Config, Hart, Observer, Stop};

    /// Flow elements from the hart's events; a privilege change shows as Context before the
    /// first range at the new privilege (after an xRET) or right after the trap.
    struct ToFlow {
        elements: Vec<FlowElement>,
        priv_: u8,
    }

    impl ToFlow {
        fn trap(&mut self, t: &TrapInfo) {
            // A fault right after an xRET: no instruction retired at the new privilege.
            self.context(t.from_priv);
            self.elements.push(FlowElement::Trap {
                cause: Some(t.cause),
                interrupt: t.interrupt,
                tval: None,
                epc: Some(t.epc),
                handler: Some(t.handler),
            });
            self.context(t.to_priv);
        }

        fn context(&mut self, p: u8) {
            if p != self.priv_ {
                self.priv_ = p;
                self.elements.push(FlowElement::Context {
                    privilege: Some(p),
                    context: None,
                });
            }
        }
    }

    impl Observer for ToFlow {
        fn retire(&mut self, ev: &Retired) {
            self.context(ev.priv_);
            let taken = ev.next_pc != ev.pc.wrapping_add(ev.len as u64);
            self.elements.push(FlowElement::Range {
                start: ev.pc,
                last: ev.pc,
                count: 1,
                class: ev.class,
                taken: (ev.class == CfClass::Branch).then_some(taken),
            });
            if let Some(t) = &ev.trap {
                self.trap(t);
            }
        }
        fn trap(&mut self, t: &TrapInfo) {
            ToFlow::trap(self, t);
        }
    }

    fn key(s: &Sample) -> (u64, Vec<(u64, u64, u8)>) {
        (
            s.ip,
            s.entries
                .iter()
                .map(|e| (e.source_pc(), e.target_pc(), e.ty()))
                .collect(),
        )
    }

    fn check(name: &str, n: u64, mctrctl: u64) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../programs/elf")
            .join(format!("{name}.elf"));
        let mut image = Image::new();
        image.load_file(&path).unwrap();
        check_image(name, &image, n, mctrctl, 3);
    }

    /// `min_samples`: the run must give more samples than that.
    fn check_image(name: &str, image: &Image, n: u64, mctrctl: u64, min_samples: usize) -> usize {
        let xlen = image.files()[0].xlen;
        let mut hart = Hart::new(&Config::virt(xlen));
        hart.load(image).unwrap();
        rvtrace_testkit::quiet_semihost(&mut hart, image, "x");
        hart.attach(Box::new(Ctr::new(crate::Version::V1_0)));
        assert!(hart.csr_write(crate::csr::MCTRCTL, mctrctl));
        let isa = IsaConfig::new(xlen);
        let mut flow = FlowCtr::new(image, isa, mctrctl, SampleAt::Every(n));
        flow.element(&FlowElement::Context {
            privilege: Some(hart.priv_),
            context: None,
        });
        let mut obs = ToFlow {
            elements: Vec::new(),
            priv_: hart.priv_,
        };
        let (mut want, mut got) = (Vec::new(), Vec::new());
        loop {
            let stop = hart.run(&mut obs, n);
            for e in obs.elements.drain(..) {
                flow.element(&e);
                while let Some(s) = flow.next_sample() {
                    got.push(key(&s));
                }
            }
            if stop != Stop::InsnLimit {
                break;
            }
            let pc = hart.pc;
            let entries = hart.extension_mut::<Ctr>().unwrap().entries();
            want.push(key(&Sample { ip: pc, entries }));
            assert!(want.len() < 100_000, "{name}: runaway");
        }
        // The last sample waits for the next instruction's address, which the flow gives
        // only if the program went on.
        assert!(
            want.len() > min_samples,
            "{name}: only {} samples",
            want.len()
        );
        assert!(
            got.len() + 1 >= want.len(),
            "{name}: {} of {} samples",
            got.len(),
            want.len()
        );
        for (k, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!(w, g, "{name}: sample {k} (every {n} instructions)");
        }
        assert_eq!(flow.unknown_privilege, 0);
        if min_samples > 0 {
            assert!(
                want.iter().any(|s| !s.1.is_empty()),
                "{name}: nothing recorded"
            );
        }
        want.iter().map(|s| s.1.len()).sum()
    }

    /// Random programs (`rvtrace_testkit::randprog`: calls, returns, swaps, millicode, traps
    /// that retire and that do not, timer interrupts, U-mode), RV64 ones: conditional branches
    /// are inhibited (TKBRINH, no NTBREN) because randprog makes branches whose offset equals
    /// their length, which a trace cannot tell taken from not taken; RV32 cannot write TKBRINH
    /// (`mctrctl` bits 63:32, note in "CSR Listing").
    #[test]
    fn random_programs() {
        use ctl::*;
        let mut recorded = 0;
        for seed in rvtrace_testkit::randprog::seeds(24) {
            let p = rvtrace_testkit::randprog::random_program(seed);
            if !p.shape.rv64 {
                continue;
            }
            let mut image = Image::new();
            image.load_bytes("prog.elf", &p.elf).unwrap();
            let n = 7 + seed % 29;
            recorded += check_image(&format!("seed {seed}"), &image, n, U | S | M | TKBRINH, 0);
            check_image(
                &format!("seed {seed}"),
                &image,
                n,
                U | TKBRINH | STE | MTE,
                0,
            );
        }
        assert!(recorded > 100, "{recorded} entries over all samples");
    }

    #[test]
    fn every_mode_every_type() {
        use ctl::*;
        check("traps-rv64gc", 97, U | S | M | NTBREN);
        check("recurse-rv64gc", 1009, U | S | M);
        check("timer-rv64gc", 61, U | S | M | NTBREN);
    }

    /// Some modes disabled: the privilege of every transfer matters (trap sources and xRET
    /// targets recorded as 0, external traps with STE/MTE).
    #[test]
    fn some_modes() {
        use ctl::*;
        check("traps-rv64gc", 13, U | STE | MTE);
        check("traps-rv64gc", 31, M | S);
        check("timer-rv32imac", 29, U | M);
    }
}

/// The privilege after an xRET, reported before the next range (the flow's contract, which both
/// decoders keep), decides the records: `mret` from M (enabled) to U (disabled) has target 0;
/// the `ecall` from U to M
/// that follows has source 0 ("Trap and Trap Return Recording"). Addresses of
/// `programs/elf/traps-rv64gc.elf` (`riscv64-unknown-elf-objdump -d`: `mret` at 0x800008d0,
/// `user_part` 0x8000049c `li`, `li`, `ecall` at 0x800004a0; M handler 0x80000600).
#[test]
fn the_privilege_after_an_xret_decides_its_record() {
    let mut image = Image::new();
    image
        .load_bytes(
            "traps",
            include_bytes!("../../../../programs/elf/traps-rv64gc.elf"),
        )
        .unwrap();
    let isa = IsaConfig::new(rvtrace_isa::Xlen::Rv64);
    let ctx = |p| FlowElement::Context {
        privilege: Some(p),
        context: None,
    };
    let range = |start, last, count| FlowElement::Range {
        start,
        last,
        count,
        class: CfClass::None,
        taken: None,
    };
    let run = || {
        let mut f = FlowCtr::new(&image, isa, ctl::M, SampleAt::Every(1 << 40));
        let mut els = vec![ctx(3), range(0x8000_08d0, 0x8000_08d0, 1)];
        els.extend([ctx(0), range(0x8000_049c, 0x8000_049c, 1)]);
        els.extend([
            range(0x8000_049e, 0x8000_04a0, 2),
            FlowElement::Trap {
                cause: Some(8),
                interrupt: false,
                tval: None,
                epc: Some(0x8000_04a0),
                handler: Some(0x8000_0600),
            },
            ctx(3),
            range(0x8000_0600, 0x8000_0600, 1),
        ]);
        for e in &els {
            f.element(e);
        }
        f.ctr
            .entries()
            .iter()
            .map(|e| (e.source_pc(), e.target_pc(), e.ty()))
            .collect::<Vec<_>>()
    };
    let want = vec![
        (0, 0x8000_0600, ty::EXCEPTION),
        (0x8000_08d0, 0, ty::TRAP_RETURN),
    ];
    assert_eq!(run(), want);
}
