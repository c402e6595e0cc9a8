//! The rest of QEMU `virt`'s devices that software meets with no driver of the model's: the
//! goldfish RTC (`google,goldfish-rtc`, Linux's `rtc-goldfish`) and the PCIe host (ECAM with
//! QEMU's host bridge at 00:00.0, and the PIO and MMIO windows with no device behind them).
//! Every value here is QEMU's, as `programs/src/virt_io.c` reads it from QEMU 7.2 and 10
//! (`programs/expected/virt_io-*.out`); the memory map is `virt`'s (`hw/riscv/virt.c`).

use rvtrace_isa::Xlen;

/// The goldfish RTC's registers.
pub const RTC_BASE: u64 = 0x10_1000;
/// Size of the RTC's register window.
pub const RTC_SIZE: u64 = 0x1000;
/// The RTC's PLIC source.
pub const RTC_IRQ: usize = 11;
/// PCIe configuration space (ECAM: bus << 20 | device << 15 | function << 12 | offset).
pub const ECAM_BASE: u64 = 0x3000_0000;
/// Size of the ECAM window (buses 0-255).
pub const ECAM_SIZE: u64 = 0x1000_0000;
/// The PCIe I/O-port window.
pub const PIO_BASE: u64 = 0x0300_0000;
/// Size of the I/O-port window.
pub const PIO_SIZE: u64 = 0x1_0000;
/// The 32-bit PCIe memory window.
pub const MMIO_BASE: u64 = 0x4000_0000;
/// Size of the 32-bit memory window.
pub const MMIO_SIZE: u64 = 0x4000_0000;

/// The high PCIe memory window, base and size, as QEMU places it: RV32 at 12 GiB, 4 GiB;
/// RV64 16 GiB at the first multiple of its size at or above the end of RAM.
pub fn high_mmio(xlen: Xlen, ram_size: u64) -> (u64, u64) {
    match xlen {
        Xlen::Rv32 => (0x3_0000_0000, 0x1_0000_0000),
        Xlen::Rv64 => {
            let size = 0x4_0000_0000u64;
            (
                (crate::bus::RAM_BASE + ram_size).next_multiple_of(size),
                size,
            )
        }
    }
}

/// Nanoseconds per `mtime` tick (the device tree's `timebase-frequency`).
const NS_PER_TICK: u64 = 1_000_000_000 / crate::fdt::TIMEBASE_FREQUENCY as u64;

/// QEMU's goldfish RTC (`hw/rtc/goldfish_rtc.c`): nanoseconds since the Unix epoch, and one
/// alarm that raises its interrupt. The model's clock is `mtime`: the RTC reads `base_ns` plus
/// `mtime` in nanoseconds, so the same run reads the same times (QEMU's follows the host's
/// clock).
#[derive(Clone, Debug, Default)]
pub struct GoldfishRtc {
    /// The time at `mtime` 0, in nanoseconds since the Unix epoch (moved by writes of TIME).
    pub base_ns: u64,
    alarm_next: u64,
    alarm_running: bool,
    irq_enabled: bool,
    irq_pending: bool,
    /// TIME_HIGH as the last read of TIME_LOW latched it.
    time_high: u32,
}

impl GoldfishRtc {
    /// The time at `mtime`.
    pub fn now(&self, mtime: u64) -> u64 {
        self.base_ns.wrapping_add(mtime.wrapping_mul(NS_PER_TICK))
    }

    /// A 32-bit read of register `off` (the device takes only 32-bit accesses).
    pub fn read(&mut self, off: u64, mtime: u64) -> u32 {
        match off {
            0x00 => {
                let t = self.now(mtime);
                self.time_high = (t >> 32) as u32;
                t as u32
            }
            0x04 => self.time_high,
            0x08 => self.alarm_next as u32,
            0x0c => (self.alarm_next >> 32) as u32,
            0x10 => self.irq_enabled as u32,
            0x18 => self.alarm_running as u32,
            _ => 0,
        }
    }

    /// A 32-bit write of register `off`.
    pub fn write(&mut self, off: u64, value: u32, mtime: u64) {
        let deposit = |v: u64, lo: bool| {
            if lo {
                v & !0xffff_ffff | value as u64
            } else {
                v & 0xffff_ffff | (value as u64) << 32
            }
        };
        match off {
            0x00 | 0x04 => {
                let t = deposit(self.now(mtime), off == 0);
                self.base_ns = t.wrapping_sub(mtime.wrapping_mul(NS_PER_TICK));
            }
            0x08 => {
                // Writing ALARM_LOW arms the alarm; one already due fires at once.
                self.alarm_next = deposit(self.alarm_next, true);
                self.alarm_running = true;
                self.fire(mtime);
            }
            0x0c => self.alarm_next = deposit(self.alarm_next, false),
            0x10 => self.irq_enabled = value & 1 != 0,
            0x14 => self.alarm_running = false,
            0x1c => self.irq_pending = false,
            _ => {}
        }
    }

    /// The alarm fires if it is due at `mtime`: true when it did.
    pub fn fire(&mut self, mtime: u64) -> bool {
        if self.alarm_running && self.now(mtime) >= self.alarm_next {
            self.alarm_running = false;
            self.irq_pending = true;
            return true;
        }
        false
    }

    /// The `mtime` at which the running alarm fires.
    pub fn deadline(&self) -> Option<u64> {
        self.alarm_running.then(|| {
            let ns = self.alarm_next.saturating_sub(self.base_ns);
            ns.div_ceil(NS_PER_TICK)
        })
    }

    /// The interrupt line to the PLIC.
    pub fn line(&self) -> bool {
        self.irq_pending && self.irq_enabled
    }
}

/// QEMU's PCIe host (`gpex`) with no device: its host bridge at 00:00.0 (Red Hat's
/// 1b36:0008, class 06 00 00, subsystem 1af4:1100, no BAR, no capability) answers
/// configuration accesses; every other function, and configuration space past the bridge's
/// 256 bytes, reads all-ones and ignores writes, as do the PIO and MMIO windows.
#[derive(Clone, Debug)]
pub struct PcieHost {
    config: [u8; 256],
    /// The high memory window ([`high_mmio`]).
    high: (u64, u64),
}

impl PcieHost {
    /// The host of a machine of `xlen` with `ram_size` bytes of RAM.
    pub fn new(xlen: Xlen, ram_size: u64) -> PcieHost {
        let mut config = [0u8; 256];
        config[0x00..0x04].copy_from_slice(&0x0008_1b36u32.to_le_bytes());
        config[0x08..0x0c].copy_from_slice(&0x0600_0000u32.to_le_bytes());
        config[0x2c..0x30].copy_from_slice(&0x1100_1af4u32.to_le_bytes());
        PcieHost {
            config,
            high: high_mmio(xlen, ram_size),
        }
    }
}

/// The bits of the host bridge's configuration header that keep what is written (QEMU's
/// `pci_init_wmask`): command (I/O, memory, bus master, SERR, INTx disable), cache line size,
/// interrupt line, and the device-specific bytes 0x40-0xff.
fn config_wmask(off: usize) -> u8 {
    match off {
        0x04 => 0x07,
        0x05 => 0x05,
        0x0c | 0x3c => 0xff,
        0x40..=0xff => 0xff,
        _ => 0,
    }
}

impl PcieHost {
    /// Whether `addr` falls in one of the host's windows (ECAM, PIO, MMIO, high MMIO).
    pub fn contains(&self, addr: u64) -> bool {
        [
            (ECAM_BASE, ECAM_SIZE),
            (PIO_BASE, PIO_SIZE),
            (MMIO_BASE, MMIO_SIZE),
            self.high,
        ]
        .iter()
        .any(|&(base, size)| (base..base + size).contains(&addr))
    }

    /// The bridge's configuration byte range for an ECAM access, if it is one.
    fn bridge_bytes(addr: u64, size: u64) -> Option<std::ops::Range<usize>> {
        let off = addr.checked_sub(ECAM_BASE)?;
        // Bus 0, device 0, function 0, within the 256 bytes of a conventional header.
        (off + size <= 0x100).then_some(off as usize..(off + size) as usize)
    }

    /// A read of `size` bytes (1, 2, 4 or 8) at `addr` in the host's windows.
    pub fn read(&self, addr: u64, size: u64) -> u64 {
        match Self::bridge_bytes(addr, size) {
            Some(r) => {
                let mut b = [0u8; 8];
                b[..r.len()].copy_from_slice(&self.config[r]);
                u64::from_le_bytes(b)
            }
            None if size == 8 => u64::MAX,
            None => (1u64 << (8 * size)) - 1,
        }
    }

    /// A write of `size` bytes at `addr`: only the bridge's writable bits change.
    pub fn write(&mut self, addr: u64, size: u64, value: u64) {
        if let Some(r) = Self::bridge_bytes(addr, size) {
            for (i, off) in r.enumerate() {
                let m = config_wmask(off);
                let v = (value >> (8 * i)) as u8;
                self.config[off] = self.config[off] & !m | v & m;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtc_time_latch_and_alarm() {
        let mut rtc = GoldfishRtc {
            base_ns: 0x1_0000_0000,
            ..Default::default()
        };
        // TIME_LOW latches TIME_HIGH: a read of HIGH later gives the same instant's.
        assert_eq!(rtc.read(0x00, 10), 1000);
        assert_eq!(rtc.read(0x04, 1 << 40), 1);
        // An alarm 1 µs ahead fires 10 ticks later; the line needs IRQ_ENABLED.
        rtc.write(0x0c, 1, 0);
        rtc.write(0x08, 2000, 10);
        assert_eq!(rtc.read(0x18, 10), 1);
        assert_eq!(rtc.deadline(), Some(20));
        assert!(!rtc.fire(19));
        assert!(rtc.fire(20));
        assert_eq!(rtc.read(0x18, 20), 0);
        assert!(!rtc.line());
        rtc.write(0x10, 1, 20);
        assert!(rtc.line());
        rtc.write(0x1c, 0, 20);
        assert!(!rtc.line());
        // An alarm already due fires when armed; CLEAR_ALARM stops a running one.
        rtc.write(0x08, 0, 30);
        assert!(rtc.line() && rtc.deadline().is_none());
        rtc.write(0x1c, 0, 30);
        rtc.write(0x0c, 2, 30);
        rtc.write(0x08, 0, 30);
        assert!(rtc.deadline().is_some());
        rtc.write(0x14, 0, 30);
        assert!(rtc.deadline().is_none() && !rtc.line());
        // Writing TIME sets the clock from then on.
        rtc.write(0x04, 5, 100);
        rtc.write(0x00, 0, 100);
        assert_eq!(rtc.now(100), 5 << 32);
        assert_eq!(rtc.now(101), (5 << 32) + 100);
    }

    #[test]
    fn host_bridge_config_space() {
        let mut p = PcieHost::new(Xlen::Rv64, 128 << 20);
        assert_eq!(p.read(ECAM_BASE, 4), 0x0008_1b36);
        assert_eq!(p.read(ECAM_BASE + 0x2c, 4), 0x1100_1af4);
        assert_eq!(p.read(ECAM_BASE + 0x100, 4), 0xffff_ffff);
        assert_eq!(p.read(ECAM_BASE + (1 << 15), 1), 0xff);
        p.write(ECAM_BASE + 4, 4, 0xffff_ffff);
        assert_eq!(p.read(ECAM_BASE + 4, 4), 0x507);
        p.write(ECAM_BASE, 4, 0x1234_5678);
        assert_eq!(p.read(ECAM_BASE, 4), 0x0008_1b36);
        p.write(ECAM_BASE + 0x0c, 2, 0xabcd);
        assert_eq!(p.read(ECAM_BASE + 0x0c, 4), 0xcd);
        // OpenSBI 1.1's read out of range (issue 32) falls in the high window.
        assert_eq!(p.read(0x4_8003_524c, 4), 0xffff_ffff);
        assert!(p.contains(0x4_8003_524c) && !p.contains(0x8000_0000));
        assert_eq!(
            high_mmio(Xlen::Rv64, 16 << 30),
            (0x8_0000_0000, 0x4_0000_0000)
        );
        assert_eq!(
            high_mmio(Xlen::Rv32, 128 << 20),
            (0x3_0000_0000, 0x1_0000_0000)
        );
    }
}
