//! Booting the hart the way QEMU's `virt` machine does: a firmware (`-bios`, entered in M-mode
//! from the reset ROM with the `fw_dynamic` information), or an S-mode payload under an SBI the
//! host provides (`rvtrace run --sbi`), with the device tree ([`crate::fdt`]) in RAM.
//!
//! Facts from QEMU 10 `hw/riscv/boot.c` (`riscv_setup_rom_reset_vec`, `riscv_compute_fdt_addr`)
//! and OpenSBI's `include/sbi/fw_dynamic.h` / `docs/firmware/fw_dynamic.md`.

use crate::arch::{cause, privilege, LoadError};
use crate::bus::{RAM_BASE, ROM_BASE};
use crate::csr::{irq, mstatus, num};
use crate::fdt::fdt_address;
use crate::hart::Hart;
use rvtrace_image::Image;
use rvtrace_isa::Xlen;

/// `fw_dynamic_info.magic` ("OSBI" little-endian).
pub const FW_DYNAMIC_MAGIC: u64 = 0x4942_534f;
/// `fw_dynamic_info.version` QEMU passes.
pub const FW_DYNAMIC_VERSION: u64 = 2;
/// `fw_dynamic_info.next_mode` for S-mode.
pub const NEXT_MODE_S: u64 = 1;
/// Offset of the `fw_dynamic` information inside the reset ROM (`a2` = `0x1028`).
pub const FW_DYNAMIC_OFFSET: u64 = 0x28;

/// Where a payload conventionally lives: QEMU loads `-kernel` there after OpenSBI, and
/// OpenSBI's generic `fw_jump` jumps there (`FW_JUMP_ADDR`).
pub fn payload_address(xlen: Xlen) -> u64 {
    match xlen {
        Xlen::Rv64 => 0x8020_0000,
        Xlen::Rv32 => 0x8040_0000,
    }
}

/// The header of a flat RISC-V Linux kernel image (`Image`; the kernel's
/// `Documentation/arch/riscv/boot-image-header.rst`): 64 bytes, little-endian, `code0`/`code1`,
/// `text_offset` at 8, `image_size` at 16, `flags` at 24, `version` at 32, and the magic
/// "RSC\x05" at 0x38 (the older "RISCV\0\0\0" at 0x30 is deprecated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinuxImage {
    /// Offset of the image from a 2 MiB aligned start of RAM (0x200000 on RV64, 0x400000 on
    /// RV32 kernels).
    pub text_offset: u64,
    /// Bytes of memory the kernel occupies from its load address (its `bss` included), at
    /// least the file's size.
    pub image_size: u64,
    /// `flags` (bit 0: endianness, 0 = little).
    pub flags: u64,
    /// `version` (major in bits 31:16, minor in 15:0).
    pub version: u32,
}

impl LinuxImage {
    /// Offset of the magic "RSC\x05" in the header.
    pub const MAGIC_OFFSET: usize = 0x38;
    /// The magic.
    pub const MAGIC: [u8; 4] = *b"RSC\x05";

    /// The header of `bytes` if they start with one (the magic at 0x38).
    pub fn parse(bytes: &[u8]) -> Option<LinuxImage> {
        let m = Self::MAGIC_OFFSET;
        if bytes.get(m..m + 4)? != Self::MAGIC {
            return None;
        }
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap_or([0; 8]));
        Some(LinuxImage {
            text_offset: u64_at(8),
            image_size: u64_at(16).max(bytes.len() as u64),
            flags: u64_at(24),
            version: u32::from_le_bytes(bytes[32..36].try_into().unwrap_or([0; 4])),
        })
    }
}

/// Where QEMU `virt` loads a raw kernel (`-kernel Image`, QEMU 7.2 `riscv_calc_kernel_start_addr`):
/// the first address after the firmware aligned to 2 MiB on RV64 or 4 MiB on RV32 (the kernel's
/// large-page size: it maps itself with such pages), the start of RAM without a firmware. QEMU
/// ignores the header's `text_offset`; OpenSBI's `fw_jump` jumps to the same address
/// ([`payload_address`]) after its own image.
pub fn kernel_address(xlen: Xlen, firmware_end: Option<u64>) -> u64 {
    let align: u64 = match xlen {
        Xlen::Rv64 => 2 << 20,
        Xlen::Rv32 => 4 << 20,
    };
    firmware_end.unwrap_or(RAM_BASE).next_multiple_of(align)
}

/// Where QEMU `virt` loads `-initrd` (QEMU 7.2 `riscv_load_initrd`): above the kernel's entry by
/// half of RAM, at most 128 MiB, so that the kernel does not overwrite it while it unpacks and
/// it stays in low memory.
pub fn initrd_address(kernel_entry: u64, ram_size: u64) -> u64 {
    kernel_entry + (ram_size / 2).min(128 << 20)
}

/// The reset ROM QEMU writes for `virt`: six instructions that load `a0` = `mhartid`, `a1` =
/// the device tree address, `a2` = the address of the `fw_dynamic` information and jump to
/// `start`; the two addresses as 64-bit words; then `fw_dynamic_info` (magic, version,
/// next_addr, next_mode, options, boot_hart), each field XLEN wide.
pub fn reset_rom(xlen: Xlen, start: u64, fdt: u64, next_addr: u64) -> Vec<u8> {
    let rv64 = xlen == Xlen::Rv64;
    let words: [u32; 6] = [
        0x0000_0297,                                  // auipc t0, 0
        0x0282_8613,                                  // addi  a2, t0, 0x28
        0xf140_2573,                                  // csrr  a0, mhartid
        if rv64 { 0x0202_b583 } else { 0x0202_a583 }, // ld/lw a1, 32(t0)
        if rv64 { 0x0182_b283 } else { 0x0182_a283 }, // ld/lw t0, 24(t0)
        0x0002_8067,                                  // jr    t0
    ];
    let mut rom: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    rom.extend(start.to_le_bytes());
    rom.extend(fdt.to_le_bytes());
    debug_assert_eq!(rom.len() as u64, FW_DYNAMIC_OFFSET);
    for field in [
        FW_DYNAMIC_MAGIC,
        FW_DYNAMIC_VERSION,
        next_addr,
        NEXT_MODE_S,
        0, // options
        0, // boot_hart
    ] {
        if rv64 {
            rom.extend(field.to_le_bytes());
        } else {
            rom.extend((field as u32).to_le_bytes());
        }
    }
    rom
}

/// The instruction the unexpected-M-trap address holds: `j .` (a run watching for traps into
/// M stops on the trap itself; without a watcher the hart spins there visibly).
const SPIN: u32 = 0x0000_006f;

/// Where `mtvec` points in `--sbi` mode: a spin loop in the ROM. The host SBI services every
/// `ecall` from S before it traps, so any trap that reaches M is unexpected.
pub const UNEXPECTED_M_TRAP: u64 = ROM_BASE;

/// A firmware to boot: an ELF's loadable segments, or a raw binary QEMU-style at RAM base.
#[derive(Clone, Debug)]
pub struct Firmware {
    /// Its file name (for messages).
    pub name: String,
    /// Where the reset ROM jumps.
    pub entry: u64,
    /// Its XLEN when known (ELF class).
    pub xlen: Option<Xlen>,
    /// Loadable bytes and their physical addresses.
    pub segments: Vec<(u64, Vec<u8>)>,
}

impl Firmware {
    /// An ELF firmware (the first file of `image`).
    pub fn from_image(image: &Image) -> Firmware {
        let file = image.files().first();
        Firmware {
            name: file.map(|f| f.path.clone()).unwrap_or_default(),
            entry: file.map(|f| f.entry).unwrap_or(RAM_BASE),
            xlen: file.map(|f| f.xlen),
            segments: image
                .segments()
                .iter()
                .filter(|s| !s.data.is_empty())
                .map(|s| (s.paddr, s.data.clone()))
                .collect(),
        }
    }

    /// A raw binary (OpenSBI's `fw_*.bin`), loaded and entered at the start of RAM as QEMU's
    /// `-bios FILE.bin` does.
    pub fn raw(name: &str, bytes: Vec<u8>) -> Firmware {
        Firmware {
            name: name.to_string(),
            entry: RAM_BASE,
            xlen: None,
            segments: vec![(RAM_BASE, bytes)],
        }
    }
}

/// What to boot.
pub struct Boot<'a> {
    /// The firmware (`-bios`), or `None` for an SBI the host provides.
    pub firmware: Option<&'a Firmware>,
    /// The S-mode payload.
    pub payload: &'a Image,
    /// The device tree blob.
    pub fdt: &'a [u8],
    /// An initial RAM disk and its address (the device tree names it in `/chosen`).
    pub initrd: Option<(u64, &'a [u8])>,
}

/// The address ranges an image's loadable segments occupy, with its file name.
fn ranges(image: &Image) -> Vec<(u64, u64, String)> {
    image
        .segments()
        .iter()
        .filter(|s| !s.data.is_empty())
        .map(|s| {
            let name = image
                .files()
                .get(s.file_index)
                .map(|f| f.path.clone())
                .unwrap_or_default();
            (s.paddr, s.paddr + s.data.len() as u64, name)
        })
        .collect()
}

impl Boot<'_> {
    /// Load everything and leave the hart where QEMU's reset leaves it (`firmware`: at the
    /// reset ROM in M-mode) or where a firmware leaves it for its payload (no firmware: in
    /// S-mode at the payload's entry as [`enter_supervisor`] leaves it). Returns the device tree
    /// address.
    ///
    /// Refused: a payload or firmware outside RAM, a payload that overlaps the firmware or the
    /// device tree, a firmware whose XLEN differs from the payload's.
    pub fn apply(&self, hart: &mut Hart) -> Result<u64, LoadError> {
        let ram_end = RAM_BASE + hart.bus.ram_size();
        let fdt = fdt_address(hart.bus.ram_size(), self.fdt.len() as u64);
        let mut payload = ranges(self.payload);
        if let Some((at, data)) = self.initrd {
            let end = at + data.len() as u64;
            if let Some((lo, hi, name)) = payload.iter().find(|(lo, hi, _)| *lo < end && at < *hi) {
                return Err(LoadError(format!(
                    "{name}: segment at {lo:#x}..{hi:#x} overlaps the initrd at {at:#x}..{end:#x}"
                )));
            }
            // Checked below as the payload is: inside RAM, clear of the device tree and firmware.
            payload.push((at, end, "the initrd".into()));
        }
        let payload_file = self.payload.files().first();
        let entry = payload_file.map(|f| f.entry).unwrap_or(RAM_BASE);
        for (lo, hi, name) in &payload {
            if *lo < RAM_BASE || *hi > ram_end {
                return Err(LoadError(format!(
                    "{name}: segment at {lo:#x}..{hi:#x} is outside RAM ({RAM_BASE:#x}..{ram_end:#x})"
                )));
            }
            if *lo < fdt + self.fdt.len() as u64 && fdt < *hi {
                return Err(LoadError(format!(
                    "{name}: segment at {lo:#x}..{hi:#x} overlaps the device tree at {fdt:#x}..{:#x}",
                    fdt + self.fdt.len() as u64
                )));
            }
        }
        if let Some(fw) = self.firmware {
            let fname = &fw.name;
            if let (Some(x), Some(p)) = (fw.xlen, payload_file) {
                if x != p.xlen {
                    return Err(LoadError(format!(
                        "{fname} is RV{} but the payload {} is RV{}",
                        x.bits(),
                        p.path,
                        p.xlen.bits()
                    )));
                }
            }
            for (flo, data) in &fw.segments {
                let (flo, fhi) = (*flo, flo + data.len() as u64);
                if flo < RAM_BASE || fhi > ram_end {
                    let hint = if flo == 0 {
                        " (a position-independent firmware linked at 0, such as OpenSBI 1.5's fw_*.elf, does not load on QEMU either: give its .bin)"
                    } else {
                        ""
                    };
                    return Err(LoadError(format!(
                        "{fname}: firmware segment at {flo:#x}..{fhi:#x} is outside RAM ({RAM_BASE:#x}..{ram_end:#x}){hint}"
                    )));
                }
                if let Some((lo, hi, name)) =
                    payload.iter().find(|(lo, hi, _)| *lo < fhi && flo < *hi)
                {
                    return Err(LoadError(format!(
                        "{name}: segment at {lo:#x}..{hi:#x} overlaps the firmware {fname} at {flo:#x}..{fhi:#x}"
                    )));
                }
            }
        }
        hart.load(self.payload)?;
        if let Some((at, data)) = self.initrd {
            hart.bus.write_ram(at, data);
        }
        if let Some(fw) = self.firmware {
            for (at, data) in &fw.segments {
                hart.bus.write_ram(*at, data);
            }
        }
        if !hart.bus.write_ram(fdt, self.fdt) {
            return Err(LoadError(format!(
                "the device tree ({} bytes) does not fit in RAM",
                self.fdt.len()
            )));
        }
        hart.x = [0; 32];
        match self.firmware {
            Some(fw) => {
                hart.bus
                    .set_rom(&reset_rom(hart.xlen, fw.entry, fdt, entry));
                hart.pc = ROM_BASE;
                hart.priv_ = privilege::M;
            }
            None => {
                hart.bus.set_rom(&SPIN.to_le_bytes());
                enter_supervisor(hart, entry, fdt);
            }
        }
        Ok(fdt)
    }
}

impl Boot<'_> {
    /// A hart other than the first of a machine the first was booted on by [`Boot::apply`]
    /// (memory is shared: loaded once), with the device tree at `fdt`: under a firmware at the
    /// reset ROM in M-mode (the ROM loads `a0` = `mhartid`; the firmware parks the harts it
    /// does not boot on), under an SBI the host provides in the state the SBI leaves every hart
    /// in ([`enter_supervisor`]), STOPPED until `sbi_hart_start` (SBI v3.0 HSM).
    pub fn apply_other(&self, hart: &mut Hart, fdt: u64) {
        hart.x = [0; 32];
        match self.firmware {
            Some(_) => {
                hart.pc = ROM_BASE;
                hart.priv_ = privilege::M;
            }
            None => {
                let entry = self.payload.files().first().map_or(RAM_BASE, |f| f.entry);
                enter_supervisor(hart, entry, fdt);
                hart.x[10] = hart.hart_id() as u64;
                let id = hart.hart_id();
                hart.bus.harts.set_state(id, crate::smp::HsmState::Stopped);
            }
        }
    }
}

/// Put the hart where an M-mode SBI leaves it when it enters an S-mode payload, for an SBI
/// serviced by the hart itself (`rvtrace_sbi`: no M-mode code runs, so what OpenSBI would
/// emulate or redirect to S is delegated instead):
/// - `medeleg`: every delegable exception but `ecall` from S (the SBI's); OpenSBI delegates
///   fewer (`delegate_traps`) and redirects the rest to S when it cannot emulate them, which S
///   sees the same way;
/// - `mideleg`: SSI, STI, SEI, and LCOFI with Sscofpmf;
/// - `mcounteren` = every implemented counter, `scounteren` = CY|TM|IR, the programmable
///   counters inhibited until started through the SBI PMU extension (OpenSBI's values);
/// - PMP entry 0 grants S/U every address (NAPOT, RWX; OpenSBI's last-resort entry);
/// - `menvcfg.STCE` with Sstc (S-mode sets its timer through `stimecmp`);
/// - `mtvec` = [`UNEXPECTED_M_TRAP`]; `mstatus.FS` dirty when F is present (OpenSBI's
///   `mstatus_init`); `satp` 0, `sstatus.SIE` 0;
/// - privilege S, `pc` = `entry`, `a0` = hart id 0, `a1` = `fdt` (SBI v3.0, HSM "Hart Start
///   Register State").
pub fn enter_supervisor(hart: &mut Hart, entry: u64, fdt: u64) {
    let mut mideleg = irq::S_MODE;
    if hart.counters.config().sscofpmf {
        mideleg |= irq::LCOFI;
    }
    let present = hart.counters.present_mask();
    // PMP entry 0: NAPOT over the whole address space (privileged ISA, "Physical Memory
    // Protection").
    let napot_all = match hart.xlen {
        Xlen::Rv64 => (1u64 << 54) - 1,
        Xlen::Rv32 => 0xffff_ffff,
    };
    let mut ok = true;
    for (csr, v) in [
        (
            num::MEDELEG,
            crate::csr::DELEGABLE_EXCEPTIONS & !(1 << cause::ECALL_S),
        ),
        (num::MIDELEG, mideleg),
        (num::MCOUNTEREN, present),
        (num::SCOUNTEREN, 0b111),
        (num::MCOUNTINHIBIT, present & !0b111),
        (num::MTVEC, UNEXPECTED_M_TRAP),
        (num::PMPADDR0, napot_all),
        (num::PMPCFG0, 0x1f),
        (num::SATP, 0),
    ] {
        ok &= hart.csr_write(csr, hart.trunc(v));
    }
    if hart.has_smstateen() {
        // Give S-mode every state the hart guards (the write keeps the implemented bits).
        for n in 0..4 {
            ok &= hart.csr_write(num::MSTATEEN0 + n, hart.trunc(u64::MAX));
            if hart.xlen == Xlen::Rv32 {
                ok &= hart.csr_write(num::MSTATEEN0H + n, 0xffff_ffff);
            }
        }
    }
    if hart.has_sstc() {
        // Sstc: S-mode owns `stimecmp` (OpenSBI's `mstatus_init` sets STCE; it leaves
        // `stimecmp` unwritten).
        ok &= match hart.xlen {
            Xlen::Rv64 => hart.csr_write(num::MENVCFG, crate::csr::menvcfg::STCE),
            Xlen::Rv32 => hart.csr_write(num::MENVCFGH, crate::csr::menvcfg::STCE >> 32),
        };
    }
    debug_assert!(ok, "every CSR of the firmware state exists");
    if hart.ext.f {
        hart.csr.mstatus |= mstatus::FS;
    }
    hart.csr.mstatus &= !mstatus::SIE;
    hart.priv_ = privilege::S;
    hart.pc = hart.trunc(entry);
    hart.x[10] = 0;
    hart.x[11] = hart.sext(fdt);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_rom_layout_matches_qemu() {
        let rom = reset_rom(Xlen::Rv64, 0x8000_0000, 0x87e0_0000, 0x8020_0000);
        assert_eq!(rom.len(), 0x28 + 6 * 8);
        assert_eq!(&rom[0x18..0x20], &0x8000_0000u64.to_le_bytes());
        assert_eq!(&rom[0x20..0x28], &0x87e0_0000u64.to_le_bytes());
        assert_eq!(&rom[0x28..0x30], &FW_DYNAMIC_MAGIC.to_le_bytes());
        assert_eq!(&rom[0x38..0x40], &0x8020_0000u64.to_le_bytes());
        let rv32 = reset_rom(Xlen::Rv32, 0x8000_0000, 0x87e0_0000, 0x8040_0000);
        assert_eq!(rv32.len(), 0x28 + 6 * 4);
        assert_eq!(&rv32[0x30..0x34], &0x8040_0000u32.to_le_bytes());
    }
}
