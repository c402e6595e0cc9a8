//! The physical address space of QEMU's `virt` machine, as far as programs under test use it:
//! RAM at 0x8000_0000, the CLINT (ACLINT MSWI + MTIMER) at 0x0200_0000, the 16550 UART at
//! 0x1000_0000, the SiFive test finisher at 0x0010_0000, and an optional HTIF `tohost` word.
//!
//! `mtime` is deterministic: it advances by one tick per retired instruction (see [`Clint`]).

use std::io::Write;

/// Base of RAM on QEMU `virt`.
pub const RAM_BASE: u64 = 0x8000_0000;
/// QEMU `virt` default RAM size (128 MiB).
pub const DEFAULT_RAM_SIZE: u64 = 128 << 20;
/// CLINT base.
pub const CLINT_BASE: u64 = 0x0200_0000;
/// CLINT size.
pub const CLINT_SIZE: u64 = 0x1_0000;
/// `mtimecmp` (hart 0) offset inside the CLINT.
pub const MTIMECMP_OFF: u64 = 0x4000;
/// `mtime` offset inside the CLINT.
pub const MTIME_OFF: u64 = 0xbff8;
/// 16550 UART base.
pub const UART_BASE: u64 = 0x1000_0000;
/// SiFive test finisher base (`sifive_test`).
pub const FINISHER_BASE: u64 = 0x0010_0000;

/// Core-local interruptor state of hart 0.
#[derive(Clone, Debug)]
pub struct Clint {
    /// `msip` bit 0.
    pub msip: bool,
    /// `mtimecmp`. It resets to 0 as on QEMU 7.2, so MTIP is pending from the start.
    pub mtimecmp: u64,
    /// `mtime = instret + mtime_offset` (one tick per retired instruction).
    pub mtime_offset: u64,
}

/// Why the bus asks the hart to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusExit {
    /// A device requested exit with this status.
    Exit(i32),
}

/// RAM and memory-mapped devices.
pub struct Bus {
    ram: Vec<u8>,
    ram_size: u64,
    /// CLINT state.
    pub clint: Clint,
    /// HTIF `tohost` address, if the program has one (riscv-tests convention).
    pub tohost: Option<u64>,
    /// Set when a device asked to end the simulation.
    pub exit: Option<BusExit>,
    /// Set when a device write changed interrupt state (the hart must re-check interrupts).
    pub irq_dirty: bool,
    /// Where UART and HTIF console output goes.
    pub console: Box<dyn Write + Send>,
    /// Set by every device access (and by the hart for counter reads and semihosting): the
    /// hart looked outside itself since the trap-loop detector last cleared it.
    pub(crate) io_touched: bool,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus")
            .field("ram_size", &self.ram_size)
            .field("clint", &self.clint)
            .field("tohost", &self.tohost)
            .finish()
    }
}

impl Bus {
    /// A bus with `ram_size` bytes of zeroed RAM at [`RAM_BASE`].
    pub fn new(ram_size: u64) -> Bus {
        Bus {
            ram: vec![0; ram_size as usize],
            ram_size,
            clint: Clint {
                msip: false,
                mtimecmp: 0,
                mtime_offset: 0,
            },
            tohost: None,
            exit: None,
            irq_dirty: false,
            console: Box::new(std::io::stdout()),
            io_touched: false,
        }
    }

    /// A digest of all of RAM (trap-loop detection compares two of them; rare, never per
    /// instruction).
    pub(crate) fn ram_digest(&self) -> u64 {
        let mut h = 0x243f_6a88_85a3_08d3u64;
        for (i, c) in self.ram.chunks_exact(8).enumerate() {
            let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            if w != 0 {
                h = (h ^ w ^ (i as u64).rotate_left(32))
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    .rotate_left(29);
            }
        }
        h
    }

    /// RAM size in bytes.
    pub fn ram_size(&self) -> u64 {
        self.ram_size
    }

    /// Offset into RAM if `[addr, addr+len)` lies inside RAM.
    #[inline(always)]
    pub fn ram_offset(&self, addr: u64, len: u64) -> Option<usize> {
        let off = addr.wrapping_sub(RAM_BASE);
        if off < self.ram_size && len <= self.ram_size - off {
            Some(off as usize)
        } else {
            None
        }
    }

    /// Copy `data` into RAM at `addr` (program loading). False if it does not fit.
    pub fn write_ram(&mut self, addr: u64, data: &[u8]) -> bool {
        match self.ram_offset(addr, data.len() as u64) {
            Some(off) => {
                self.ram[off..off + data.len()].copy_from_slice(data);
                true
            }
            None => false,
        }
    }

    /// Read RAM bytes. False if any byte is outside RAM.
    pub fn read_ram(&self, addr: u64, buf: &mut [u8]) -> bool {
        match self.ram_offset(addr, buf.len() as u64) {
            Some(off) => {
                buf.copy_from_slice(&self.ram[off..off + buf.len()]);
                true
            }
            None => false,
        }
    }

    /// Fetch 32 bits of instruction memory (RAM only; QEMU executes from RAM and ROM, and the
    /// only ROM on `virt` is the reset stub the model replaces). Returns the low parcel alone if
    /// only 16 bits are mapped at the end of RAM.
    #[inline(always)]
    pub fn fetch(&self, addr: u64) -> Option<u32> {
        if let Some(off) = self.ram_offset(addr, 4) {
            let b = &self.ram[off..off + 4];
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        } else {
            let off = self.ram_offset(addr, 2)?;
            Some(u16::from_le_bytes([self.ram[off], self.ram[off + 1]]) as u32)
        }
    }

    /// Load `size` (1, 2, 4, 8) bytes, little-endian, zero-extended. `mtime` is the current time.
    /// `None` means an access fault.
    #[inline(always)]
    pub fn load(&mut self, addr: u64, size: u64, mtime: u64) -> Option<u64> {
        if let Some(off) = self.ram_offset(addr, size) {
            let r = &self.ram[off..];
            return Some(match size {
                1 => r[0] as u64,
                2 => u16::from_le_bytes([r[0], r[1]]) as u64,
                4 => u32::from_le_bytes([r[0], r[1], r[2], r[3]]) as u64,
                _ => u64::from_le_bytes([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]]),
            });
        }
        self.mmio_load(addr, size, mtime)
    }

    /// Store the low `size` bytes of `value`. `None` means an access fault.
    #[inline(always)]
    pub fn store(&mut self, addr: u64, size: u64, value: u64, mtime: u64) -> Option<()> {
        if let Some(off) = self.ram_offset(addr, size) {
            let bytes = value.to_le_bytes();
            self.ram[off..off + size as usize].copy_from_slice(&bytes[..size as usize]);
            if self.tohost.is_some_and(|t| addr <= t && t < addr + size) {
                self.htif_write();
            }
            return Some(());
        }
        self.mmio_store(addr, size, value, mtime)
    }

    /// A device load; a device access counts as looking outside (trap-loop detection), an
    /// access fault does not.
    fn mmio_load(&mut self, addr: u64, size: u64, mtime: u64) -> Option<u64> {
        let v = self.device_load(addr, size, mtime);
        self.io_touched |= v.is_some();
        v
    }

    fn device_load(&mut self, addr: u64, size: u64, mtime: u64) -> Option<u64> {
        if (CLINT_BASE..CLINT_BASE + CLINT_SIZE).contains(&addr) {
            let off = addr - CLINT_BASE;
            // 64-bit registers may be accessed as two 32-bit halves (RV32).
            let reg64 = |base: u64, v: u64| -> Option<u64> {
                match (off - base, size) {
                    (0, 8) => Some(v),
                    (0, 4) => Some(v & 0xffff_ffff),
                    (4, 4) => Some(v >> 32),
                    _ => None,
                }
            };
            return match off {
                0..=3 if size == 4 && off == 0 => Some(self.clint.msip as u64),
                MTIMECMP_OFF..=0x4007 => reg64(MTIMECMP_OFF, self.clint.mtimecmp),
                MTIME_OFF..=0xbfff => reg64(MTIME_OFF, mtime),
                _ => Some(0),
            };
        }
        if (UART_BASE..UART_BASE + 0x100).contains(&addr) && size == 1 {
            // 16550: LSR (offset 5) reports transmitter empty; everything else reads 0.
            return Some(if addr - UART_BASE == 5 { 0x60 } else { 0 });
        }
        if (FINISHER_BASE..FINISHER_BASE + 0x1000).contains(&addr) {
            return Some(0);
        }
        None
    }

    /// A device store (see [`Bus::mmio_load`]).
    fn mmio_store(&mut self, addr: u64, size: u64, value: u64, mtime: u64) -> Option<()> {
        let v = self.device_store(addr, size, value, mtime);
        self.io_touched |= v.is_some();
        v
    }

    fn device_store(&mut self, addr: u64, size: u64, value: u64, mtime: u64) -> Option<()> {
        if (CLINT_BASE..CLINT_BASE + CLINT_SIZE).contains(&addr) {
            let off = addr - CLINT_BASE;
            let merge = |old: u64, base: u64| -> Option<u64> {
                match (off - base, size) {
                    (0, 8) => Some(value),
                    (0, 4) => Some((old & !0xffff_ffff) | (value & 0xffff_ffff)),
                    (4, 4) => Some((old & 0xffff_ffff) | (value << 32)),
                    _ => None,
                }
            };
            match off {
                0 if size == 4 => self.clint.msip = value & 1 != 0,
                MTIMECMP_OFF..=0x4007 => {
                    if let Some(v) = merge(self.clint.mtimecmp, MTIMECMP_OFF) {
                        self.clint.mtimecmp = v;
                    }
                }
                MTIME_OFF..=0xbfff => {
                    if let Some(v) = merge(mtime, MTIME_OFF) {
                        self.clint.mtime_offset =
                            self.clint.mtime_offset.wrapping_add(v.wrapping_sub(mtime));
                    }
                }
                _ => {}
            }
            self.irq_dirty = true;
            return Some(());
        }
        if (UART_BASE..UART_BASE + 0x100).contains(&addr) && size == 1 {
            if addr == UART_BASE {
                let _ = self.console.write_all(&[value as u8]);
            }
            return Some(());
        }
        if (FINISHER_BASE..FINISHER_BASE + 0x1000).contains(&addr) {
            // sifive_test: 0x5555 pass, 0x3333 | code << 16 fail, 0x7777 reset.
            if addr == FINISHER_BASE && size >= 4 {
                match value & 0xffff {
                    0x5555 => self.exit = Some(BusExit::Exit(0)),
                    0x3333 => self.exit = Some(BusExit::Exit(((value >> 16) & 0xffff) as i32)),
                    0x7777 => self.exit = Some(BusExit::Exit(0)),
                    _ => {}
                }
            }
            return Some(());
        }
        None
    }

    /// HTIF: a non-zero write to `tohost`. Bit 0 set with device 0 = exit with `value >> 1`;
    /// device 1 command 1 = console putchar.
    fn htif_write(&mut self) {
        self.io_touched = true;
        let Some(t) = self.tohost else { return };
        let Some(off) = self.ram_offset(t, 8) else {
            return;
        };
        let v = u64::from_le_bytes(self.ram[off..off + 8].try_into().unwrap_or([0; 8]));
        if v == 0 {
            return;
        }
        let dev = v >> 56;
        let cmd = (v >> 48) & 0xff;
        if dev == 0 && v & 1 == 1 {
            self.exit = Some(BusExit::Exit(((v << 16 >> 16) >> 1) as i32));
        } else if dev == 1 && cmd == 1 {
            let _ = self.console.write_all(&[v as u8]);
            self.ram[off..off + 8].fill(0);
        }
    }
}
