//! The flattened device tree of the machine the hart model implements, laid out as QEMU's `virt`
//! describes itself (QEMU 10 `hw/riscv/virt.c` output, checked with `dtc -I dtb -O dts`), minus
//! the devices the model does not have (virtio, flash, fw-cfg).
//!
//! Bindings: Linux `Documentation/devicetree/bindings/riscv/cpus.yaml` and `extensions.yaml`
//! (`riscv,isa`, `riscv,isa-base`, `riscv,isa-extensions`, `mmu-type`),
//! `timer/sifive,clint.yaml`, `serial/8250.yaml`, `power/reset/syscon-poweroff.yaml`,
//! `rtc/trivial-rtc.yaml` (goldfish), `pci/host-generic-pci.yaml`, and
//! OpenSBI `docs/pmu_support.md` for the `riscv,pmu` node.

use crate::bus::{CLINT_BASE, CLINT_SIZE, FINISHER_BASE, RAM_BASE, UART_BASE};
use crate::counters::{CounterConfig, EVENTS};
use crate::decode::Extensions;
use crate::plic::{PLIC_BASE, PLIC_SIZE, SOURCES, UART_IRQ};
use crate::virt_io::{
    ECAM_BASE, ECAM_SIZE, MMIO_BASE, MMIO_SIZE, PIO_BASE, PIO_SIZE, RTC_BASE, RTC_IRQ, RTC_SIZE,
};
use rvtrace_isa::Xlen;
use vm_fdt::{FdtWriter, FdtWriterResult};

/// The device tree could not be written (the writer refused a node or property).
#[derive(Debug)]
pub struct FdtError(pub vm_fdt::Error);

impl std::fmt::Display for FdtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "device tree: {}", self.0)
    }
}

impl std::error::Error for FdtError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// The address QEMU `virt` places the device tree at, for a RAM size (QEMU 7.2 `riscv_load_fdt`:
/// 2 MiB aligned below the end of RAM or 3 GiB, whichever is lower).
pub fn fdt_address(ram_size: u64, fdt_size: u64) -> u64 {
    let end = (RAM_BASE + ram_size).min(3 << 30);
    (end - fdt_size) & !((2 << 20) - 1)
}

/// Size of QEMU 7.2 `virt`'s generated device tree with one hart (used only for the
/// semihosting heap layout, as QEMU registers the blob).
pub const FDT_SIZE: u64 = 0x10_0000;

/// `timebase-frequency` of QEMU `virt` (10 MHz). The model's `mtime` ticks once per retired
/// instruction, so the frequency is nominal.
pub const TIMEBASE_FREQUENCY: u32 = 10_000_000;
/// `clock-frequency` of QEMU's 16550 (`3686400`, the classic 1.8432 MHz x 2 crystal).
pub const UART_CLOCK_FREQUENCY: u32 = 3_686_400;

/// What the device tree describes.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Base integer width.
    pub xlen: Xlen,
    /// Extensions the hart implements.
    pub ext: Extensions,
    /// Counter configuration (Zihpm counter count, Sscofpmf, Smcntrpmf).
    pub counters: CounterConfig,
    /// RAM size in bytes (at [`RAM_BASE`]).
    pub ram_size: u64,
    /// `/chosen/bootargs`, if any.
    pub bootargs: Option<String>,
    /// `/chosen/linux,initrd-start` and `-end` (end exclusive), if an initrd is loaded.
    pub initrd: Option<(u64, u64)>,
    /// `/chosen/rng-seed`: 32 bytes of entropy for the kernel's random pool (QEMU `virt` gives
    /// 32 random bytes), if any.
    pub rng_seed: Option<[u8; 32]>,
    /// Smstateen ([`crate::Config::smstateen`]).
    pub smstateen: bool,
    /// Sstc ([`crate::Config::sstc`]).
    pub sstc: bool,
    /// Further extensions of attached hart extensions (such as `smctr`), listed with the others.
    pub more: Vec<&'static str>,
    /// Harts (1..=[`crate::smp::MAX_HARTS`]): `cpu@0` .. `cpu@N-1`, each with its interrupt
    /// controller, named by the PLIC's contexts and the CLINT's interrupts.
    pub harts: usize,
}

impl Machine {
    /// The machine a hart configuration describes.
    pub fn of(cfg: &crate::Config) -> Machine {
        Machine {
            xlen: cfg.xlen,
            ext: cfg.ext,
            counters: cfg.counters,
            ram_size: cfg.ram_size,
            bootargs: None,
            initrd: None,
            rng_seed: None,
            smstateen: cfg.smstateen,
            sstc: cfg.sstc && cfg.ext.s,
            more: Vec::new(),
            harts: 1,
        }
    }

    /// The extension names of `riscv,isa-extensions`, in the canonical order of the ISA
    /// manual's naming chapter (single letters, then Z* by category, then S*), as QEMU lists
    /// them (QEMU with `h=false`, as the model has no H).
    pub fn isa_extensions(&self) -> Vec<&'static str> {
        let e = &self.ext;
        let mut v = vec!["i"];
        for (on, name) in [(e.m, "m"), (e.a, "a"), (e.f, "f"), (e.d, "d"), (e.c, "c")] {
            if on {
                v.push(name);
            }
        }
        // Zicntr and Zihpm: the counters are always there (Zihpm with 0 programmable counters
        // still has the read-only-zero CSRs). Zihintpause: `pause` is a FENCE encoding, which
        // the hart executes (as QEMU 7.2 lists it).
        v.extend(["zicntr", "zicsr", "zifencei", "zihintpause", "zihpm"]);
        if e.zba {
            v.push("zba");
        }
        if e.zbb {
            v.push("zbb");
        }
        if e.zbc {
            v.push("zbc");
        }
        if e.zbs {
            v.push("zbs");
        }
        // S* extensions in alphabetical order (ISA manual, "ISA Extension Naming Conventions").
        let mut s: Vec<&'static str> = self.more.clone();
        for (on, name) in [
            (self.counters.smcntrpmf, "smcntrpmf"),
            (self.counters.sscofpmf, "sscofpmf"),
            (self.smstateen, "smstateen"),
            (self.sstc, "sstc"),
        ] {
            if on {
                s.push(name);
            }
        }
        s.sort_unstable();
        s.dedup();
        v.extend(s);
        v
    }

    /// `riscv,isa`: the base, single-letter extensions, then `_`-separated multi-letter ones.
    pub fn isa_string(&self) -> String {
        let base = match self.xlen {
            Xlen::Rv32 => "rv32",
            Xlen::Rv64 => "rv64",
        };
        let ext = self.isa_extensions();
        let mut s = base.to_string();
        for e in ext.iter().filter(|e| e.len() == 1) {
            s.push_str(e);
        }
        for e in ext.iter().filter(|e| e.len() > 1) {
            s.push('_');
            s.push_str(e);
        }
        s
    }

    /// Bitmap of the programmable counters (`mhpmcounter3 ..= 3 + K - 1`).
    fn hpm_mask(&self) -> u32 {
        let k = u32::from(self.counters.hpm_counters.min(29));
        (((1u64 << k) - 1) << 3) as u32
    }

    /// `riscv,event-to-mhpmevent` rows: `<event_idx, selector_hi, selector_lo>` for every
    /// hardware and cache event the model counts (not raw ones, per the binding). The model's
    /// `mhpmevent` selector is the SBI `event_idx` itself (`counters::resolve`).
    pub fn event_to_mhpmevent(&self) -> Vec<[u32; 3]> {
        EVENTS
            .iter()
            .filter(|(idx, _, _)| idx >> 16 < 2)
            .map(|&(idx, _, _)| [idx as u32, (idx >> 32) as u32, idx as u32])
            .collect()
    }

    /// `riscv,event-to-mhpmcounters` rows: `<first_idx, last_idx, counter_bitmap>`, one per
    /// event. Cycles may also use `mcycle` (bit 0), instructions `minstret` (bit 2).
    pub fn event_to_mhpmcounters(&self) -> Vec<[u32; 3]> {
        let hpm = self.hpm_mask();
        EVENTS
            .iter()
            .filter(|(idx, _, _)| idx >> 16 < 2)
            .filter_map(|&(idx, _, _)| {
                let fixed = match idx {
                    crate::counters::event::CPU_CYCLES => 1 << 0,
                    crate::counters::event::INSTRUCTIONS => 1 << 2,
                    _ => 0,
                };
                let map = hpm | fixed;
                (map != 0).then_some([idx as u32, idx as u32, map])
            })
            .collect()
    }

    /// `riscv,raw-event-to-mhpmcounters` rows: `<match_hi, match_lo, mask_hi, mask_lo,
    /// counter_bitmap>`. Each raw event of the model is one unique selector (`0x2_0000 |
    /// code`, what SBI `event_data` carries for type-2 events), so the mask is all ones.
    pub fn raw_event_to_mhpmcounters(&self) -> Vec<[u32; 5]> {
        let hpm = self.hpm_mask();
        if hpm == 0 {
            return Vec::new();
        }
        EVENTS
            .iter()
            .filter(|(idx, _, _)| idx >> 16 == 2)
            .map(|&(idx, _, _)| {
                [
                    (idx >> 32) as u32,
                    idx as u32,
                    0xffff_ffff,
                    0xffff_ffff,
                    hpm,
                ]
            })
            .collect()
    }

    /// The flattened device tree blob.
    pub fn to_fdt(&self) -> Result<Vec<u8>, FdtError> {
        self.write().map_err(FdtError)
    }

    fn write(&self) -> FdtWriterResult<Vec<u8>> {
        // Phandles as QEMU's `virt` allocates them: the harts' from the last hart down (its
        // cpu node, then its interrupt controller), then the PLIC, then the test finisher.
        let n = self.harts.clamp(1, crate::smp::MAX_HARTS) as u32;
        let cpu_phandle = |h: u32| 2 * (n - 1 - h) + 1;
        let intc_phandle = |h: u32| 2 * (n - 1 - h) + 2;
        let plic_phandle = 2 * n + 1;
        let test_phandle = 2 * n + 2;
        let reg = |base: u64, size: u64| [base, size];
        let mut w = FdtWriter::new()?;
        let root = w.begin_node("")?;
        w.property_u32("#address-cells", 2)?;
        w.property_u32("#size-cells", 2)?;
        w.property_string("compatible", "riscv-virtio")?;
        w.property_string("model", "riscv-virtio,qemu")?;

        // syscon-poweroff/-reboot over the test finisher, as QEMU has them.
        for (name, value) in [("poweroff", 0x5555u32), ("reboot", 0x7777)] {
            let n = w.begin_node(name)?;
            w.property_u32("value", value)?;
            w.property_u32("offset", 0)?;
            w.property_u32("regmap", test_phandle)?;
            w.property_string("compatible", &format!("syscon-{name}"))?;
            w.end_node(n)?;
        }

        let mem = w.begin_node(&format!("memory@{RAM_BASE:x}"))?;
        w.property_string("device_type", "memory")?;
        w.property_array_u64("reg", &reg(RAM_BASE, self.ram_size))?;
        w.end_node(mem)?;

        let cpus = w.begin_node("cpus")?;
        w.property_u32("#address-cells", 1)?;
        w.property_u32("#size-cells", 0)?;
        w.property_u32("timebase-frequency", TIMEBASE_FREQUENCY)?;
        for h in 0..n {
            let cpu = w.begin_node(&format!("cpu@{h}"))?;
            w.property_phandle(cpu_phandle(h))?;
            w.property_string("device_type", "cpu")?;
            w.property_u32("reg", h)?;
            w.property_string("status", "okay")?;
            w.property_string("compatible", "riscv")?;
            w.property_string_list(
                "riscv,isa-extensions",
                self.isa_extensions()
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            )?;
            w.property_string(
                "riscv,isa-base",
                match self.xlen {
                    Xlen::Rv32 => "rv32i",
                    Xlen::Rv64 => "rv64i",
                },
            )?;
            w.property_string("riscv,isa", &self.isa_string())?;
            // The largest scheme `satp` accepts (`mmu.rs`), which Linux probes and uses: Sv57
            // on RV64 (as QEMU 10's `virt`; QEMU 7.2 says sv48 although its hart takes Sv57
            // too), Sv32 on RV32.
            w.property_string(
                "mmu-type",
                match self.xlen {
                    Xlen::Rv32 => "riscv,sv32",
                    Xlen::Rv64 => "riscv,sv57",
                },
            )?;
            let intc = w.begin_node("interrupt-controller")?;
            w.property_u32("#interrupt-cells", 1)?;
            w.property_null("interrupt-controller")?;
            w.property_string("compatible", "riscv,cpu-intc")?;
            w.property_phandle(intc_phandle(h))?;
            w.end_node(intc)?;
            w.end_node(cpu)?;
        }
        let map = w.begin_node("cpu-map")?;
        let cluster = w.begin_node("cluster0")?;
        for h in 0..n {
            let core = w.begin_node(&format!("core{h}"))?;
            w.property_u32("cpu", cpu_phandle(h))?;
            w.end_node(core)?;
        }
        w.end_node(cluster)?;
        w.end_node(map)?;
        w.end_node(cpus)?;

        let pmu = w.begin_node("pmu")?;
        let ctr = self.event_to_mhpmcounters();
        let raw = self.raw_event_to_mhpmcounters();
        if !ctr.is_empty() {
            w.property_array_u32(
                "riscv,event-to-mhpmevent",
                &self.event_to_mhpmevent().concat(),
            )?;
            w.property_array_u32("riscv,event-to-mhpmcounters", &ctr.concat())?;
        }
        if !raw.is_empty() {
            w.property_array_u32("riscv,raw-event-to-mhpmcounters", &raw.concat())?;
        }
        w.property_string("compatible", "riscv,pmu")?;
        w.end_node(pmu)?;

        let serial = format!("/soc/serial@{UART_BASE:x}");
        let aliases = w.begin_node("aliases")?;
        w.property_string("serial0", &serial)?;
        w.end_node(aliases)?;

        // In the order of QEMU 7.2's blob (libfdt puts a property added later first): the
        // initrd's addresses, rng-seed, bootargs, stdout-path. QEMU 7.2 writes the initrd
        // addresses as one cell each (`qemu_fdt_setprop_cell`), which Linux reads by the
        // property's length; two cells when the end lies above 4 GiB (QEMU 7.2 would truncate).
        let chosen = w.begin_node("chosen")?;
        if let Some((start, end)) = self.initrd {
            if let (Ok(s), Ok(e)) = (u32::try_from(start), u32::try_from(end)) {
                w.property_u32("linux,initrd-end", e)?;
                w.property_u32("linux,initrd-start", s)?;
            } else {
                w.property_u64("linux,initrd-end", end)?;
                w.property_u64("linux,initrd-start", start)?;
            }
        }
        if let Some(seed) = &self.rng_seed {
            w.property("rng-seed", seed)?;
        }
        if let Some(b) = &self.bootargs {
            w.property_string("bootargs", b)?;
        }
        w.property_string("stdout-path", &serial)?;
        w.end_node(chosen)?;

        let soc = w.begin_node("soc")?;
        w.property_u32("#address-cells", 2)?;
        w.property_u32("#size-cells", 2)?;
        w.property_string("compatible", "simple-bus")?;
        w.property_null("ranges")?;

        let uart = w.begin_node(&format!("serial@{UART_BASE:x}"))?;
        w.property_u32("interrupts", UART_IRQ as u32)?;
        w.property_u32("interrupt-parent", plic_phandle)?;
        w.property_u32("clock-frequency", UART_CLOCK_FREQUENCY)?;
        w.property_array_u64("reg", &reg(UART_BASE, 0x100))?;
        w.property_string("compatible", "ns16550a")?;
        w.end_node(uart)?;

        let rtc = w.begin_node(&format!("rtc@{RTC_BASE:x}"))?;
        w.property_u32("interrupts", RTC_IRQ as u32)?;
        w.property_u32("interrupt-parent", plic_phandle)?;
        w.property_array_u64("reg", &reg(RTC_BASE, RTC_SIZE))?;
        w.property_string("compatible", "google,goldfish-rtc")?;
        w.end_node(rtc)?;

        // The PCIe host (`pci-host-ecam-generic`), as QEMU describes it: INTA-INTD of slot s
        // on PLIC sources 32 + (s + pin) mod 4 (the standard swizzle), the PIO, 32-bit and
        // 64-bit memory windows in `ranges` (PCI address cells: space code, then 64 bits).
        let pci = w.begin_node(&format!("pci@{ECAM_BASE:x}"))?;
        w.property_array_u32("interrupt-map-mask", &[0x1800, 0, 0, 7])?;
        let map: Vec<u32> = (0..4u32)
            .flat_map(|slot| {
                (0..4u32).flat_map(move |pin| {
                    [
                        slot << 11,
                        0,
                        0,
                        pin + 1,
                        plic_phandle,
                        0x20 + (slot + pin) % 4,
                    ]
                })
            })
            .collect();
        w.property_array_u32("interrupt-map", &map)?;
        let (high, high_size) = crate::virt_io::high_mmio(self.xlen, self.ram_size);
        let cells = |v: u64| [(v >> 32) as u32, v as u32];
        let ranges: Vec<u32> = [
            [0x100_0000, 0, 0],
            [0x200_0000, cells(MMIO_BASE)[0], cells(MMIO_BASE)[1]],
            [0x300_0000, cells(high)[0], cells(high)[1]],
        ]
        .iter()
        .zip([
            (PIO_BASE, PIO_SIZE),
            (MMIO_BASE, MMIO_SIZE),
            (high, high_size),
        ])
        .flat_map(|(pci, (cpu, size))| {
            let mut r = pci.to_vec();
            r.extend(cells(cpu));
            r.extend(cells(size));
            r
        })
        .collect();
        w.property_array_u32("ranges", &ranges)?;
        w.property_array_u64("reg", &reg(ECAM_BASE, ECAM_SIZE))?;
        w.property_null("dma-coherent")?;
        w.property_array_u32("bus-range", &[0, 0xff])?;
        w.property_u32("linux,pci-domain", 0)?;
        w.property_string("device_type", "pci")?;
        w.property_string("compatible", "pci-host-ecam-generic")?;
        w.property_u32("#size-cells", 2)?;
        w.property_u32("#interrupt-cells", 1)?;
        w.property_u32("#address-cells", 3)?;
        w.end_node(pci)?;

        let test = w.begin_node(&format!("test@{FINISHER_BASE:x}"))?;
        w.property_phandle(test_phandle)?;
        w.property_array_u64("reg", &reg(FINISHER_BASE, 0x1000))?;
        w.property_string_list(
            "compatible",
            vec![
                "sifive,test1".into(),
                "sifive,test0".into(),
                "syscon".into(),
            ],
        )?;
        w.end_node(test)?;

        // Per hart, context 2h drives its M external interrupt 11, context 2h + 1 its S
        // external interrupt 9.
        let per_hart = |a: u32, b: u32| -> Vec<u32> {
            (0..n)
                .flat_map(|h| [intc_phandle(h), a, intc_phandle(h), b])
                .collect()
        };
        let plic = w.begin_node(&format!("plic@{PLIC_BASE:x}"))?;
        w.property_phandle(plic_phandle)?;
        w.property_u32("riscv,ndev", SOURCES as u32)?;
        w.property_array_u64("reg", &reg(PLIC_BASE, PLIC_SIZE))?;
        w.property_array_u32("interrupts-extended", &per_hart(11, 9))?;
        w.property_null("interrupt-controller")?;
        w.property_string_list(
            "compatible",
            vec!["sifive,plic-1.0.0".into(), "riscv,plic0".into()],
        )?;
        w.property_u32("#address-cells", 0)?;
        w.property_u32("#interrupt-cells", 1)?;
        w.end_node(plic)?;

        // Per hart, MSIP is M software interrupt 3, MTIMECMP M timer interrupt 7.
        let clint = w.begin_node(&format!("clint@{CLINT_BASE:x}"))?;
        w.property_array_u32("interrupts-extended", &per_hart(3, 7))?;
        w.property_array_u64("reg", &reg(CLINT_BASE, CLINT_SIZE))?;
        w.property_string_list(
            "compatible",
            vec!["sifive,clint0".into(), "riscv,clint0".into()],
        )?;
        w.end_node(clint)?;
        w.end_node(soc)?;

        w.end_node(root)?;
        w.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        Machine::of(&crate::Config::virt(Xlen::Rv64))
    }

    #[test]
    fn isa_string_follows_the_extensions() {
        let m = machine();
        assert_eq!(
            m.isa_string(),
            "rv64imafdc_zicntr_zicsr_zifencei_zihintpause_zihpm_zba_zbb_zbc_zbs_smcntrpmf_sscofpmf_sstc"
        );
        let mut m = machine();
        m.xlen = Xlen::Rv32;
        m.ext.f = false;
        m.ext.d = false;
        m.ext.zba = false;
        m.ext.zbb = false;
        m.ext.zbc = false;
        m.ext.zbs = false;
        m.counters.sscofpmf = false;
        m.counters.smcntrpmf = false;
        m.sstc = false;
        assert_eq!(
            m.isa_string(),
            "rv32imac_zicntr_zicsr_zifencei_zihintpause_zihpm"
        );
        // S* in alphabetical order (ISA manual, "ISA Extension Naming Conventions"), the CTR
        // names (`run --ctr`) among them. (QEMU 10 puts smctr/ssctr after its other S*.)
        let mut m = machine();
        m.smstateen = true;
        m.more = vec!["ssctr", "smctr", "smcsrind", "sscsrind"];
        assert!(m.isa_string().ends_with(
            "_zba_zbb_zbc_zbs_smcntrpmf_smcsrind_smctr_smstateen_sscofpmf_sscsrind_ssctr_sstc"
        ));
    }

    #[test]
    fn pmu_rows_name_the_implemented_counters() {
        let mut m = machine();
        m.counters.hpm_counters = 4;
        let ctr = m.event_to_mhpmcounters();
        // cycles: mcycle + mhpmcounter3..6; instructions: minstret + the same.
        assert!(ctr.contains(&[1, 1, 0b111_1001]));
        assert!(ctr.contains(&[2, 2, 0b111_1100]));
        assert!(ctr.iter().all(|r| r[2] & 0b111_1000 == 0b111_1000));
        let raw = m.raw_event_to_mhpmcounters();
        assert!(raw.contains(&[0, 0x2_0001, 0xffff_ffff, 0xffff_ffff, 0b111_1000]));
        // No programmable counter: only the fixed ones, no raw events.
        m.counters.hpm_counters = 0;
        assert_eq!(m.event_to_mhpmcounters(), vec![[1, 1, 1], [2, 2, 4]]);
        assert!(m.raw_event_to_mhpmcounters().is_empty());
    }

    #[test]
    fn blob_has_a_valid_header() {
        let b = machine().to_fdt().unwrap();
        assert_eq!(&b[..4], &[0xd0, 0x0d, 0xfe, 0xed]);
        let total = u32::from_be_bytes(b[4..8].try_into().unwrap());
        assert_eq!(total as usize, b.len());
    }
}
