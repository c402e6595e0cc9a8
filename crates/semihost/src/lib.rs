//! RISC-V semihosting, answering every call the way QEMU 7.2's `virt`
//! machine does: an extension of the hart model ([`rvtrace_sim::extension`]),
//! attached by whoever builds the machine, like the SBI.
//!
//! ```no_run
//! let mut image = rvtrace_image::Image::new();
//! let info = image.load_file("prog.elf".as_ref()).unwrap();
//! let mut hart = rvtrace_sim::Hart::new(&rvtrace_sim::Config::virt(info.xlen));
//! hart.load(&image).unwrap();
//! rvtrace_semihost::attach(&mut hart, &image, "prog.elf"); // QEMU: -kernel prog.elf
//! assert_eq!(hart.run(&mut (), u64::MAX), rvtrace_sim::Stop::Exit(0));
//! ```
//!
//! The reference is `qemu-system-riscv64` / `qemu-system-riscv32` 7.2 run as
//! `-M virt -bios none -semihosting-config enable=on,target=native -kernel PATH`.
//! QEMU 7.2 handles RISC-V semihosting with its Arm-compatible ("Angel")
//! semihosting code. This crate is a clean reimplementation of the observable
//! behaviour (checked against the installed QEMU 7.2 with a guest program that
//! prints the result and `SYS_ERRNO` after each call); no QEMU code is used.
//! The goal is that a picolibc program built with
//! `--oslib=semihost --crt0=semihost` follows the same path, instruction for
//! instruction, under our hart model and under QEMU.
//!
//! # What the hart must do around a call
//!
//! * The trigger is the uncompressed three-instruction sequence
//!   `slli x0,x0,0x1f` (`0x01f01013`), `ebreak` (`0x00100073`),
//!   `srai x0,x0,7` (`0x40705013`). QEMU checks the words at `ebreak-4` and
//!   `ebreak+4` only if both addresses lie in the same 4 KiB page; otherwise, or
//!   if either word differs (a `c.ebreak` never qualifies), the `ebreak` is an
//!   ordinary breakpoint exception.
//! * Semihosting applies in M and S mode only. QEMU 7.2 enables it for U mode
//!   only with `-semihosting-config userspace=on`, so with the reference
//!   command line an `ebreak` in U mode is an ordinary breakpoint exception even
//!   when it is part of the sequence.
//! * The `slli` before the `ebreak` executes as a normal no-op. At the `ebreak`
//!   the hart calls [`Semihost::call`] with `a0` and `a1` (truncated to XLEN).
//!   It then writes the returned value to `a0` and sets `pc = ebreak + 4`.
//!   No trap is taken and no CSR changes. The `srai` then executes as a normal
//!   no-op. [`Outcome::Exit`] ends the run instead: call [`Semihost::flush`],
//!   then use the status as the process exit status.
//! * On RV32 the returned value is zero-extended to 64 bits. The hart keeps the
//!   low 32 bits.
//! * Guest addresses given to [`GuestMemory`] are the addresses the program
//!   used. QEMU translates them with the current privilege mode's address
//!   translation, so under S-mode paging they are virtual addresses.
//!
//! # Guest-memory faults
//!
//! QEMU 7.2 reads guest memory strictly: if any byte of a parameter block, file
//! name or source buffer cannot be read, the call fails. In most calls that
//! means `a0 = -1` and `SYS_ERRNO` = `EFAULT` (14). `SYS_WRITE`/`SYS_READ`
//! return their full length, and `SYS_WRITEC`/`SYS_WRITE0` still return
//! `0xdeadbeef`. The emulator keeps running either way. Writes to guest memory
//! are never checked in QEMU 7.2: its debug write path skips bytes that are not
//! RAM and reports success. This module does the same. If
//! [`GuestMemory::write_bytes`] refuses a range, each byte is tried on its own
//! and the failures are ignored. For example, `SYS_HEAPINFO` or
//! `SYS_GET_CMDLINE` pointed at non-RAM still returns 0.
//!
//! # Results and errno
//!
//! `SYS_ERRNO` returns the host errno (Linux numbering) of the last call that
//! reported one. Successful calls never clear it. `SYS_WRITE` and `SYS_READ`
//! never set it: a bad handle or I/O error just returns the full length, which
//! means nothing was transferred. `SYS_ISTTY` on a non-terminal returns 0 and
//! sets `ENOTTY`. On a bad handle it returns -1 with `EBADF`. `SYS_SEEK`
//! returns 0, not the new offset.
//!
//! # Handles
//!
//! Guest handles start at 1. Each open takes the lowest free number (0 is never
//! used). `":tt"` opened for reading (modes 0-3) is the console input, for
//! writing (modes 4-7) is stdout, and for appending (modes 8-11) is stderr.
//! `":tt"` is matched by name whatever the length argument says, and the same
//! stream may be opened several times. Closing a `":tt"` handle frees the
//! number but never closes the stream. `":semihosting-features"` can be opened
//! only in modes 0/1 (`r`/`rb`); other modes give -1 with `EACCES`. It is
//! a read-only 5-byte file `"SHFB"`, `0x03`: feature byte 0 has
//! `SH_EXT_EXIT_EXTENDED` (bit 0) and `SH_EXT_STDOUT_STDERR` (bit 1).
//! `SYS_FLEN` on it returns 5. `SYS_SEEK` accepts offsets 0 to 5, and others
//! give `EINVAL`. Writing to it fails. Any other name opens a host file
//! (`target=native`). Relative names are relative to the current directory.
//! The name length in the parameter block must point at the name's NUL
//! (`EINVAL` otherwise). Modes map to `r`, `r+`, `w`, `w+`, `a`, `a+` (each
//! also in a binary form). The file is created with permissions 0644. As in
//! QEMU 7.2, the append modes do *not* use `O_APPEND`: `a` is write-only and
//! `a+` is read-write, both with create and without truncation. Mode 12 or
//! above gives `EINVAL`.
//!
//! # Where our choices differ from QEMU on purpose
//!
//! Output placement does not affect the instruction stream. `SYS_WRITEC`,
//! `SYS_WRITE0` and `":tt"` write handles go to our stdout. QEMU sends the
//! first two to its stderr when no semihosting chardev is configured.
//! `":tt"` append handles go to our stderr, and `":tt"` read handles read our
//! stdin.
//!
//! Some of QEMU's results depend on what its own fds 0/1/2 are. Here a
//! `":tt"` handle behaves like a pipe or terminal:
//!
//! * `SYS_FLEN` returns 0.
//! * `SYS_SEEK` fails with `ESPIPE`.
//! * `SYS_ISTTY` returns 1 only if our own stream is a terminal. That is
//!   checked by [`Semihost::new`] and set by [`Semihost::set_terminals`].
//! * Reading a write handle, or writing the read handle, fails.
//!
//! `SYS_READC` in QEMU 7.2 without a semihosting chardev blocks forever. Here
//! it reads one byte from our stdin and returns -1 at end of input. QEMU also
//! stores the character at `sp - 1` and returns it by reading it back from
//! there. [`Semihost::call_with_sp`] reproduces that; [`Semihost::call`]
//! does not know `sp` and skips it.
//!
//! Clocks are deterministic. They are derived from the retired-instruction
//! count at a nominal [`NOMINAL_HZ`] = 100 MHz, so one instruction is 10 ns:
//!
//! * `SYS_CLOCK` is `instret / 1_000_000` centiseconds. QEMU uses the CPU time
//!   of its own process.
//! * `SYS_ELAPSED` is `instret * 10` ticks, with `SYS_TICKFREQ` = 10⁹ as in
//!   QEMU.
//! * `SYS_TIME` is `epoch + instret / 100_000_000`. The epoch defaults to
//!   [`DEFAULT_EPOCH`] and can be changed with [`Semihost::set_epoch`].
//!
//! Unknown operation numbers, such as 0x0b, 0x14 and 0x17, make QEMU 7.2 print
//! "Unsupported SemiHosting SWI" and abort. Here they return -1 and set
//! `ENOSYS`. A warning goes to our stderr once for each operation number.
//!
//! `SYS_TMPNAM` gives `"/tmp/qemu-<pid hex><id as 2 hex digits>"` as in QEMU,
//! using our process id, so it is not deterministic. `SYS_SYSTEM` runs the
//! command with `/bin/sh -c`, like `system(3)`, and returns the raw wait status
//! (for example `exit 3` gives `0x300`).
//!
//! # Operation details (QEMU 7.2 facts)
//!
//! The operation number is `a0 & 0xffff_ffff`. The parameter block holds XLEN
//! words: 4 bytes each on RV32, 8 on RV64.
//!
//! | op | name | behaviour |
//! |----|------|-----------|
//! | 0x01 | OPEN | `{name, mode, len}`. Returns a handle, or -1 with errno. |
//! | 0x02 | CLOSE | `{handle}`. Returns 0, or -1 with `EBADF`. |
//! | 0x03 | WRITEC | `a1` points at the byte. Returns `0xdeadbeef`. |
//! | 0x04 | WRITE0 | `a1` points at a NUL-terminated string. Returns `0xdeadbeef`. |
//! | 0x05 | WRITE | `{handle, buf, len}`. Returns the number of bytes *not* written. |
//! | 0x06 | READ | `{handle, buf, len}`. Returns the number of bytes *not* read (`len` at EOF). |
//! | 0x07 | READC | Returns the byte. |
//! | 0x08 | ISERROR | `{value}`. Returns 1 if the value is negative as a signed XLEN integer. |
//! | 0x09 | ISTTY | `{handle}`. Returns 1, 0 (`ENOTTY`), or -1 (`EBADF`). |
//! | 0x0a | SEEK | `{handle, pos}`. `pos` is XLEN-unsigned, so on RV32 `0xffffffff` is a valid offset. Returns 0, or -1 with errno. |
//! | 0x0c | FLEN | `{handle}`. Returns the length, or -1 with errno. |
//! | 0x0d | TMPNAM | `{buf, id, len}`. Returns 0, or -1 (no errno) if the name plus NUL does not fit. |
//! | 0x0e | REMOVE | `{name, len}`. Returns 0, or -1 with errno. |
//! | 0x0f | RENAME | `{old, oldlen, new, newlen}`. Returns 0, or -1 with errno. |
//! | 0x10 | CLOCK | Centiseconds. |
//! | 0x11 | TIME | Seconds since the Unix epoch. |
//! | 0x12 | SYSTEM | `{cmd, len}`. Returns the wait status. |
//! | 0x13 | ERRNO | Last errno. |
//! | 0x15 | GET_CMDLINE | `{buf, size}`. Needs `size > strlen(cmdline)`, otherwise -1 with `E2BIG` and nothing written. On success, stores the string and NUL, sets word 1 to `strlen`, leaves word 0 unchanged and returns 0. |
//! | 0x16 | HEAPINFO | `{ptr}`. Stores `{heap_base, heap_limit, stack_base = heap_limit, stack_limit = heap_base}` at `ptr` and returns 0. See [`SemihostConfig::heap_info`]. |
//! | 0x18 | EXIT | RV64: `{reason, subcode}`. RV32: `a1` is the reason itself. `ADP_Stopped_ApplicationExit` (0x20026) gives status 0 on RV32 and `subcode` on RV64. Any other reason gives 1. |
//! | 0x19 | SYNCCACHE | Returns 0. |
//! | 0x20 | EXIT_EXTENDED | Always `{reason, subcode}`, as EXIT on RV64. |
//! | 0x30 | ELAPSED | `a1` points at the tick count. RV64: one 64-bit word. RV32: low word, then high word. Returns 0. |
//! | 0x31 | TICKFREQ | 1 000 000 000. |
//!
//! For EXIT and EXIT_EXTENDED, the status is `subcode` truncated to 32 bits. A
//! process exit status keeps its low 8 bits, as QEMU's does. If the parameter
//! block cannot be read, the call returns -1 with `EFAULT` and the program keeps
//! running.
//!
//! # What picolibc (1.8, `--oslib=semihost --crt0=semihost`) calls
//!
//! All calls go through one `sys_semihost` function, which holds the
//! three-instruction sequence followed by `ret`.
//!
//! 1. Start-up (`crt0-semihost`) calls `GET_CMDLINE` (0x15) with
//!    `{static 1024-byte buffer, 1024}`. On a 0 result, it compares word 0 of
//!    the block with its buffer. They are equal, because QEMU never changes
//!    word 0, so it does not call `strcpy`. It splits the line at spaces into
//!    `argv[1..]`, and `argv[0]` is the literal `"program-name"`. The length of
//!    the command line therefore changes the instruction stream: it must be the
//!    `-kernel` path exactly as given.
//! 2. `stdin`/`stdout`/`stderr` do not use handles. Each output character is a
//!    `WRITEC` (0x03), with `a1` pointing at a stack byte. The result is ignored
//!    and the byte is read back. Each input character is a `READC` (0x07) with
//!    `a1 = 0`, and the result is zero-extended from 8 bits.
//! 3. `exit(n)`, or returning from `main`, runs the fini array and then
//!    `_exit`. That probes `":semihosting-features"` once:
//!    * `OPEN(":semihosting-features", 0, 21)` returns 1.
//!    * `FLEN(1)` returns 5.
//!    * Because the length is more than 3, `READ(1, sp+8, 4)` returns 0 and the
//!      bytes are compared with `"SHFB"`.
//!    * `READ(1, feature_bytes, 1)` returns 0, since the length minus 4 is
//!      greater than 0.
//!    * `CLOSE(1)` returns 0.
//!
//!    Bit 0 is set, so `_exit` then calls `EXIT_EXTENDED` (0x20) with
//!    `{0x20026, n}`. Without the bit it would call `EXIT` (0x18) with reason
//!    0x20026 when `n == 0` and 0x20023 otherwise.
//! 4. POSIX-style calls map as follows:
//!    * `open` calls `OPEN`. `O_RDONLY` gives mode 0. `O_WRONLY` gives 4 with
//!      `O_TRUNC`, otherwise 8. `O_RDWR` gives 6 with `O_TRUNC`, otherwise 10.
//!      On -1 it calls `ERRNO`.
//!    * `read`/`write` call `READ`/`WRITE` and return `len - result`.
//!    * `lseek` calls `SEEK`, with `FLEN` first for `SEEK_END` and `ERRNO` on
//!      failure.
//!    * `fstat` calls `FLEN`. `isatty` also calls `FLEN` and reports a
//!      terminal when the length is 0 or less; it never uses `ISTTY`.
//!    * `close` calls `CLOSE`, and `unlink` calls `REMOVE` (with `ERRNO` on
//!      failure).
//!    * `gettimeofday` calls `ELAPSED`, plus `TIME` and `TICKFREQ` the first
//!      time. `times` and `clock` call `ELAPSED`. `sysconf` calls `TICKFREQ`.
//!      `getentropy` calls `TIME`.
//!
//! `HEAPINFO` is not used by picolibc. Its heap comes from linker symbols.

#![warn(missing_docs)]

use std::fs::{File, OpenOptions};
use std::io::{self, IsTerminal, Read, Seek, SeekFrom, Write};
use std::process::{Command, Stdio};

use rvtrace_image::Image;
use rvtrace_isa::Xlen;
use rvtrace_sim::bus::RAM_BASE;
use rvtrace_sim::Hart;

/// `SYS_OPEN`: open a file or a special name (`":tt"`, `":semihosting-features"`).
pub const SYS_OPEN: u32 = 0x01;
/// `SYS_CLOSE`: close a handle.
pub const SYS_CLOSE: u32 = 0x02;
/// `SYS_WRITEC`: write the byte `a1` points at to the console.
pub const SYS_WRITEC: u32 = 0x03;
/// `SYS_WRITE0`: write the NUL-terminated string at `a1` to the console.
pub const SYS_WRITE0: u32 = 0x04;
/// `SYS_WRITE`: write a buffer to a handle.
pub const SYS_WRITE: u32 = 0x05;
/// `SYS_READ`: read from a handle into a buffer.
pub const SYS_READ: u32 = 0x06;
/// `SYS_READC`: read one byte from the console.
pub const SYS_READC: u32 = 0x07;
/// `SYS_ISERROR`: is a value an error (negative) code?
pub const SYS_ISERROR: u32 = 0x08;
/// `SYS_ISTTY`: is a handle a terminal?
pub const SYS_ISTTY: u32 = 0x09;
/// `SYS_SEEK`: set a handle's absolute file position.
pub const SYS_SEEK: u32 = 0x0a;
/// `SYS_FLEN`: length of the file behind a handle.
pub const SYS_FLEN: u32 = 0x0c;
/// `SYS_TMPNAM`: build a temporary file name.
pub const SYS_TMPNAM: u32 = 0x0d;
/// `SYS_REMOVE`: delete a host file.
pub const SYS_REMOVE: u32 = 0x0e;
/// `SYS_RENAME`: rename a host file.
pub const SYS_RENAME: u32 = 0x0f;
/// `SYS_CLOCK`: centiseconds since start.
pub const SYS_CLOCK: u32 = 0x10;
/// `SYS_TIME`: seconds since the Unix epoch.
pub const SYS_TIME: u32 = 0x11;
/// `SYS_SYSTEM`: run a host shell command.
pub const SYS_SYSTEM: u32 = 0x12;
/// `SYS_ERRNO`: errno of the last failing call.
pub const SYS_ERRNO: u32 = 0x13;
/// `SYS_GET_CMDLINE`: the command line.
pub const SYS_GET_CMDLINE: u32 = 0x15;
/// `SYS_HEAPINFO`: heap and stack placement.
pub const SYS_HEAPINFO: u32 = 0x16;
/// `SYS_EXIT`: end the program (`ADP_Stopped_*` reason).
pub const SYS_EXIT: u32 = 0x18;
/// `SYS_SYNCCACHE`: cache maintenance (a no-op returning 0).
pub const SYS_SYNCCACHE: u32 = 0x19;
/// `SYS_EXIT_EXTENDED`: end the program with reason and subcode.
pub const SYS_EXIT_EXTENDED: u32 = 0x20;
/// `SYS_ELAPSED`: 64-bit tick count since start.
pub const SYS_ELAPSED: u32 = 0x30;
/// `SYS_TICKFREQ`: ticks per second of `SYS_ELAPSED`.
pub const SYS_TICKFREQ: u32 = 0x31;

/// `ADP_Stopped_ApplicationExit`, the exit reason meaning normal termination.
pub const ADP_STOPPED_APPLICATION_EXIT: u64 = 0x20026;

/// Nominal hart clock used to turn retired instructions into time: 100 MHz,
/// so one instruction is 10 ns.
pub const NOMINAL_HZ: u64 = 100_000_000;

/// Default `SYS_TIME` epoch: 2023-01-01T00:00:00Z (seconds since 1970), fixed
/// so that runs are reproducible.
pub const DEFAULT_EPOCH: u64 = 1_672_531_200;

/// `SYS_TICKFREQ` result (QEMU: nanoseconds).
pub const TICK_HZ: u64 = 1_000_000_000;

/// RAM base of QEMU's `virt` machine.
pub const QEMU_VIRT_RAM_BASE: u64 = 0x8000_0000;

/// Default RAM size of QEMU's `virt` machine (128 MiB).
pub const QEMU_VIRT_RAM_SIZE: u64 = 128 << 20;

/// Size of the device-tree ROM blob QEMU 7.2's `virt` machine registers.
///
/// `info roms` shows `fdt` with size 0x100000. QEMU 7.2 registers the tree's
/// unpacked buffer size, which is 1 MiB, not the packed size. The exact value
/// matters little. The blob's address is the end of RAM minus the size,
/// aligned down to 2 MiB, so any size up to 2 MiB puts it at `0x87e00000` with
/// default RAM. The size changes `SYS_HEAPINFO` only when the largest free gap
/// in RAM lies above the blob. That happens only for programs that fill almost
/// all of RAM.
pub const QEMU_VIRT_FDT_SIZE: u64 = rvtrace_sim::FDT_SIZE;

const PAGE_SIZE: u64 = 4096;
const INT32_MAX: u64 = i32::MAX as u64;
const CHUNK: usize = 1 << 20;

const FEATURES_NAME: &[u8] = b":semihosting-features";
/// `"SHFB"` magic then feature byte 0: `SH_EXT_EXIT_EXTENDED | SH_EXT_STDOUT_STDERR`.
const FEATURES_DATA: [u8; 5] = [0x53, 0x48, 0x46, 0x42, 0x03];

const EPERM: u32 = 1;
const ENOENT: u32 = 2;
const EIO: u32 = 5;
const E2BIG: u32 = 7;
const EBADF: u32 = 9;
const EACCES: u32 = 13;
const EFAULT: u32 = 14;
const EINVAL: u32 = 22;
const ENOTTY: u32 = 25;
const ESPIPE: u32 = 29;
const ENAMETOOLONG: u32 = 36;
const ENOSYS: u32 = 38;

/// Result value `0xdeadbeef` for calls without a defined result (WRITEC, WRITE0).
pub const DEADBEEF: u64 = 0xdead_beef;

/// Guest memory access for semihosting parameter blocks and buffers.
pub trait GuestMemory {
    /// Read guest bytes; false if any byte is not readable RAM.
    fn read_bytes(&mut self, addr: u64, buf: &mut [u8]) -> bool;
    /// Write guest bytes; false if any byte is not writable RAM.
    fn write_bytes(&mut self, addr: u64, data: &[u8]) -> bool;
}

/// What the semihosting layer needs to know about the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SemihostConfig {
    /// The program path as given on our command line (QEMU's `-kernel` path).
    /// `SYS_GET_CMDLINE` returns exactly this.
    pub cmdline: String,
    /// Register width of the hart. It selects the parameter-block word size and
    /// the `SYS_EXIT` convention.
    pub xlen: Xlen,
    /// Base of guest RAM (`virt`: [`QEMU_VIRT_RAM_BASE`]).
    pub ram_base: u64,
    /// Size of guest RAM (`virt` default: [`QEMU_VIRT_RAM_SIZE`]).
    pub ram_size: u64,
    /// `[start, end)` of every ROM blob QEMU registers. For the ELF these are
    /// the `PT_LOAD` segments at their physical address `p_paddr`, `memsz`
    /// long, so the `.bss` part counts. QEMU skips segments with `memsz == 0`,
    /// and so does this module. The device tree is also a blob, at
    /// `0x87e00000` with size [`QEMU_VIRT_FDT_SIZE`] for default RAM.
    /// [`SemihostConfig::qemu_virt`] builds the list.
    pub loaded: Vec<(u64, u64)>,
}

impl SemihostConfig {
    /// Configuration for QEMU's `virt` machine with default RAM (128 MiB at
    /// `0x8000_0000`). `segments` are the ELF `PT_LOAD` segments as
    /// `[p_paddr, p_paddr + p_memsz)`. The device-tree blob is added.
    pub fn qemu_virt(
        cmdline: impl Into<String>,
        xlen: Xlen,
        segments: impl IntoIterator<Item = (u64, u64)>,
    ) -> Self {
        let fdt = qemu_virt_fdt_addr(QEMU_VIRT_RAM_BASE, QEMU_VIRT_RAM_SIZE, QEMU_VIRT_FDT_SIZE);
        let mut loaded: Vec<(u64, u64)> = segments.into_iter().collect();
        loaded.push((fdt, fdt + QEMU_VIRT_FDT_SIZE));
        SemihostConfig {
            cmdline: cmdline.into(),
            xlen,
            ram_base: QEMU_VIRT_RAM_BASE,
            ram_size: QEMU_VIRT_RAM_SIZE,
            loaded,
        }
    }

    /// The four `SYS_HEAPINFO` words: heap base, heap limit, stack base and
    /// stack limit.
    ///
    /// QEMU 7.2 takes the largest free gap between the ROM blobs ([`Self::loaded`])
    /// inside RAM. The heap is the whole gap, the stack base is its end and the
    /// stack limit is its start. Blobs that end at or below the RAM base, or
    /// start at or above the RAM end, are ignored. With no RAM all four words
    /// are 0.
    pub fn heap_info(&self) -> [u64; 4] {
        if self.ram_base == 0 && self.ram_size == 0 {
            return [0; 4];
        }
        let (base, size) = largest_gap(self.ram_base, self.ram_size, &self.loaded);
        let limit = base.wrapping_add(size);
        [base, limit, limit, base]
    }
}

/// Where QEMU 7.2 puts the device tree: end of RAM (capped at 3 GiB when RAM
/// starts below 3 GiB) minus `fdt_size`, aligned down to 2 MiB.
pub fn qemu_virt_fdt_addr(ram_base: u64, ram_size: u64, fdt_size: u64) -> u64 {
    const GIB3: u64 = 3072 << 20;
    let end = ram_base.wrapping_add(ram_size);
    let top = if ram_base < GIB3 { end.min(GIB3) } else { end };
    top.wrapping_sub(fdt_size) & !((2u64 << 20) - 1)
}

/// QEMU's largest-gap search over ROM blobs within `[base, base + size)`.
/// It reproduces QEMU's arithmetic, including wrap-around.
fn largest_gap(base: u64, size: u64, blobs: &[(u64, u64)]) -> (u64, u64) {
    let end = base.wrapping_add(size);
    // (address, +1 for a start / -1 for an end)
    let mut secs: Vec<(u64, i32)> = Vec::new();
    for &(start, stop) in blobs {
        let romsize = stop.wrapping_sub(start);
        if romsize == 0 {
            continue; // QEMU never registers empty blobs
        }
        let rom_end = start.wrapping_add(romsize);
        if rom_end <= base || start >= end {
            continue;
        }
        secs.push((start, 1));
        if rom_end < end {
            secs.push((rom_end, -1));
        }
    }
    secs.push((end, 1)); // sentinel
    secs.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut gap_base, mut gap_size) = (0u64, 0u64);
    let mut gapstart = base;
    let mut count = 0i32;
    for &(addr, se) in &secs {
        if count == 0 && count + se == 1 {
            let gap = addr.wrapping_sub(gapstart);
            if gap > gap_size {
                gap_base = gapstart;
                gap_size = gap;
            }
        } else if count == 1 && count + se == 0 {
            gapstart = addr;
        }
        count += se;
    }
    (gap_base, gap_size)
}

/// What the hart does after a semihosting call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Continue at `ebreak + 4` with this value in `a0`. On RV32 it is
    /// zero-extended from 32 bits.
    Return(u64),
    /// The program exited. The value is the process exit status. Only its low
    /// 8 bits reach a parent process, as with QEMU's `exit()`.
    Exit(i32),
}

/// Which console stream a `":tt"` handle refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stream {
    In = 0,
    Out = 1,
    Err = 2,
}

enum Handle {
    /// `":tt"`.
    Console(Stream),
    /// `":semihosting-features"` with its read position.
    Features { pos: u64 },
    /// A host file.
    File(File),
}

/// Marker for a failed read of guest memory: the call fails with `EFAULT`.
struct Fault;

/// The semihosting state of one run: open handles, errno and console streams.
pub struct Semihost {
    cfg: SemihostConfig,
    heap: [u64; 4],
    stdin: Box<dyn Read + Send>,
    stdout: Box<dyn Write + Send>,
    stderr: Box<dyn Write + Send>,
    real_stdio: bool,
    terminals: [bool; 3],
    handles: Vec<Option<Handle>>,
    errno: u32,
    epoch: u64,
    warned: Vec<u32>,
    allow_host_commands: bool,
}

impl Semihost {
    /// Semihosting on the process's real stdin/stdout/stderr. For `SYS_ISTTY`
    /// on `":tt"` handles, each stream counts as a terminal if it is one.
    pub fn new(cfg: SemihostConfig) -> Self {
        let terminals = [
            io::stdin().is_terminal(),
            io::stdout().is_terminal(),
            io::stderr().is_terminal(),
        ];
        let mut s = Self::with_io(
            cfg,
            Box::new(io::stdin()),
            Box::new(io::stdout()),
            Box::new(io::stderr()),
        );
        s.real_stdio = true;
        s.terminals = terminals;
        s
    }

    /// Semihosting on the given console streams. None of them counts as a
    /// terminal until [`Semihost::set_terminals`] says so.
    pub fn with_io(
        cfg: SemihostConfig,
        stdin: Box<dyn Read + Send>,
        stdout: Box<dyn Write + Send>,
        stderr: Box<dyn Write + Send>,
    ) -> Self {
        let heap = cfg.heap_info();
        Semihost {
            cfg,
            heap,
            stdin,
            stdout,
            stderr,
            real_stdio: false,
            terminals: [false; 3],
            handles: Vec::new(),
            errno: 0,
            epoch: DEFAULT_EPOCH,
            warned: Vec::new(),
            allow_host_commands: false,
        }
    }

    /// Let `SYS_SYSTEM` run host shell commands, as QEMU does. Off by default: a program under
    /// trace should not run commands on the host unless the user says so. When off, the call
    /// returns -1 with errno `EPERM` and a warning is printed once.
    pub fn set_allow_host_commands(&mut self, allow: bool) {
        self.allow_host_commands = allow;
    }

    /// Send what the program writes to its stdout to `w` instead (for example our stderr, when
    /// our stdout carries trace), with `is_terminal` for `SYS_ISTTY`.
    pub fn set_stdout(&mut self, w: Box<dyn Write + Send>, is_terminal: bool) {
        self.stdout = w;
        self.terminals[1] = is_terminal;
    }

    /// Say which of our stdin, stdout and stderr are terminals, for
    /// `SYS_ISTTY` on `":tt"` handles. QEMU answers with `isatty()` on its
    /// own fds 0/1/2.
    pub fn set_terminals(&mut self, stdin: bool, stdout: bool, stderr: bool) {
        self.terminals = [stdin, stdout, stderr];
    }

    /// Set the `SYS_TIME` epoch, in seconds since 1970, that the
    /// instruction-count clock starts from. The default is [`DEFAULT_EPOCH`].
    pub fn set_epoch(&mut self, secs: u64) {
        self.epoch = secs;
    }

    /// The configuration this instance was built with.
    pub fn config(&self) -> &SemihostConfig {
        &self.cfg
    }

    /// Perform one semihosting call.
    ///
    /// `op` is `a0` and `param` is `a1`, already truncated to XLEN. `instret`
    /// is the number of retired instructions so far and drives the clocks. The
    /// hart writes the result to `a0` and continues at `ebreak + 4`, or stops on
    /// [`Outcome::Exit`].
    pub fn call(
        &mut self,
        op: u64,
        param: u64,
        mem: &mut dyn GuestMemory,
        instret: u64,
    ) -> Outcome {
        self.call_inner(op, param, None, mem, instret)
    }

    /// Like [`Semihost::call`], but also given the stack pointer (`x2`).
    /// `SYS_READC` then stores the character at `sp - 1` and returns it by
    /// reading it back from there, as QEMU 7.2 does. That store is visible to
    /// the guest.
    pub fn call_with_sp(
        &mut self,
        op: u64,
        param: u64,
        sp: u64,
        mem: &mut dyn GuestMemory,
        instret: u64,
    ) -> Outcome {
        self.call_inner(op, param, Some(sp), mem, instret)
    }

    /// Flush our stdout and stderr. Call this when the run ends.
    pub fn flush(&mut self) {
        let _ = self.stdout.flush();
        let _ = self.stderr.flush();
    }

    fn call_inner(
        &mut self,
        op: u64,
        param: u64,
        sp: Option<u64>,
        mem: &mut dyn GuestMemory,
        instret: u64,
    ) -> Outcome {
        let nr = (op & 0xffff_ffff) as u32;
        let args = param & self.mask();
        let out = match self.dispatch(nr, args, sp, mem, instret) {
            Ok(out) => out,
            Err(Fault) => Outcome::Return(self.fail(EFAULT)),
        };
        match out {
            Outcome::Return(v) => Outcome::Return(v & self.mask()),
            Outcome::Exit(status) => {
                self.flush();
                Outcome::Exit(status)
            }
        }
    }

    fn dispatch(
        &mut self,
        nr: u32,
        args: u64,
        sp: Option<u64>,
        mem: &mut dyn GuestMemory,
        instret: u64,
    ) -> Result<Outcome, Fault> {
        let ret = match nr {
            SYS_OPEN => self.sys_open(args, mem)?,
            SYS_CLOSE => {
                let fd = self.arg(mem, args, 0)?;
                match self.handle_index(fd) {
                    Some(i) => {
                        // Dropping a host file closes it; console handles only
                        // release their number.
                        self.handles[i] = None;
                        0
                    }
                    None => self.fail(EBADF),
                }
            }
            SYS_WRITEC => {
                let mut b = [0u8; 1];
                if mem.read_bytes(args, &mut b) {
                    let _ = self.stdout.write_all(&b);
                }
                DEADBEEF
            }
            SYS_WRITE0 => {
                if let Some(len) = self.strlen(mem, args) {
                    if let Some(data) = self.read_mem(mem, args, len) {
                        let _ = self.stdout.write_all(&data);
                    }
                }
                DEADBEEF
            }
            SYS_WRITE => {
                let fd = self.arg(mem, args, 0)?;
                let buf = self.arg(mem, args, 1)?;
                let len = self.arg(mem, args, 2)?;
                let done = self.write_handle(fd, buf, len.min(INT32_MAX), mem);
                len.wrapping_sub(done.unwrap_or(0))
            }
            SYS_READ => {
                let fd = self.arg(mem, args, 0)?;
                let buf = self.arg(mem, args, 1)?;
                let len = self.arg(mem, args, 2)?;
                let done = self.read_handle(fd, buf, len.min(INT32_MAX), mem);
                len.wrapping_sub(done.unwrap_or(0))
            }
            SYS_READC => self.sys_readc(sp, mem),
            SYS_ISERROR => {
                let v = self.arg(mem, args, 0)?;
                let negative = match self.cfg.xlen {
                    Xlen::Rv32 => (v as u32 as i32) < 0,
                    Xlen::Rv64 => (v as i64) < 0,
                };
                u64::from(negative)
            }
            SYS_ISTTY => {
                let fd = self.arg(mem, args, 0)?;
                self.sys_istty(fd)
            }
            SYS_SEEK => {
                let fd = self.arg(mem, args, 0)?;
                let pos = self.arg(mem, args, 1)?;
                self.sys_seek(fd, pos as i64)
            }
            SYS_FLEN => {
                let fd = self.arg(mem, args, 0)?;
                self.sys_flen(fd)
            }
            SYS_TMPNAM => {
                let buf = self.arg(mem, args, 0)?;
                let id = self.arg(mem, args, 1)?;
                let len = self.arg(mem, args, 2)?;
                let mut name =
                    format!("/tmp/qemu-{:x}{:02x}", std::process::id(), id & 0xff).into_bytes();
                name.push(0);
                if name.len() as u64 > len {
                    u64::MAX // no errno, like QEMU
                } else {
                    self.write_mem(mem, buf, &name);
                    0
                }
            }
            SYS_REMOVE => {
                let name = self.arg(mem, args, 0)?;
                let len = self.arg(mem, args, 1)?;
                match self.lock_string(mem, name, len.wrapping_add(1)) {
                    Err(e) => self.fail(e),
                    Ok(path) => match std::fs::remove_file(host_path(&path)) {
                        Ok(()) => 0,
                        Err(e) => self.fail(errno_of(&e)),
                    },
                }
            }
            SYS_RENAME => {
                let old = self.arg(mem, args, 0)?;
                let old_len = self.arg(mem, args, 1)?;
                let new = self.arg(mem, args, 2)?;
                let new_len = self.arg(mem, args, 3)?;
                let old = self.lock_string(mem, old, old_len.wrapping_add(1));
                let paths = match old {
                    Ok(o) => self
                        .lock_string(mem, new, new_len.wrapping_add(1))
                        .map(|n| (o, n)),
                    Err(e) => Err(e),
                };
                match paths {
                    Err(e) => self.fail(e),
                    Ok((o, n)) => match std::fs::rename(host_path(&o), host_path(&n)) {
                        Ok(()) => 0,
                        Err(e) => self.fail(errno_of(&e)),
                    },
                }
            }
            SYS_CLOCK => instret / (NOMINAL_HZ / 100),
            SYS_TIME => self.epoch.wrapping_add(instret / NOMINAL_HZ),
            SYS_SYSTEM => {
                let cmd = self.arg(mem, args, 0)?;
                let len = self.arg(mem, args, 1)?;
                match self.lock_string(mem, cmd, len.wrapping_add(1)) {
                    Err(e) => self.fail(e),
                    Ok(cmd) => self.sys_system(&cmd),
                }
            }
            SYS_ERRNO => u64::from(self.errno),
            SYS_GET_CMDLINE => {
                let buf = self.arg(mem, args, 0)?;
                let size = self.arg(mem, args, 1)?;
                let mut line = self.cfg.cmdline.clone().into_bytes();
                if line.len() as u64 + 1 > size {
                    self.fail(E2BIG)
                } else {
                    self.set_arg(mem, args, 1, line.len() as u64);
                    line.push(0);
                    self.write_mem(mem, buf, &line);
                    0
                }
            }
            SYS_HEAPINFO => {
                let ptr = self.arg(mem, args, 0)?;
                for (i, v) in self.heap.into_iter().enumerate() {
                    self.set_arg(mem, ptr, i as u64, v);
                }
                0
            }
            SYS_EXIT | SYS_EXIT_EXTENDED => {
                let status = if nr == SYS_EXIT_EXTENDED || self.cfg.xlen == Xlen::Rv64 {
                    let reason = self.arg(mem, args, 0)?;
                    let subcode = self.arg(mem, args, 1)?;
                    if reason == ADP_STOPPED_APPLICATION_EXIT {
                        subcode as u32 as i32
                    } else {
                        1
                    }
                } else {
                    i32::from(args != ADP_STOPPED_APPLICATION_EXIT)
                };
                return Ok(Outcome::Exit(status));
            }
            SYS_SYNCCACHE => 0,
            SYS_ELAPSED => {
                let ticks = instret.wrapping_mul(TICK_HZ / NOMINAL_HZ);
                match self.cfg.xlen {
                    Xlen::Rv64 => self.set_arg(mem, args, 0, ticks),
                    Xlen::Rv32 => {
                        self.set_arg(mem, args, 0, ticks & 0xffff_ffff);
                        self.set_arg(mem, args, 1, ticks >> 32);
                    }
                }
                0
            }
            SYS_TICKFREQ => TICK_HZ,
            _ => {
                if !self.warned.contains(&nr) {
                    self.warned.push(nr);
                    let _ = writeln!(
                        self.stderr,
                        "rvtrace: warning: unsupported semihosting operation {nr:#04x} \
                         (QEMU 7.2 would abort); returning -1"
                    );
                    let _ = self.stderr.flush();
                }
                self.fail(ENOSYS)
            }
        };
        Ok(Outcome::Return(ret))
    }

    // ----- operations ---------------------------------------------------

    fn sys_open(&mut self, args: u64, mem: &mut dyn GuestMemory) -> Result<u64, Fault> {
        let name_ptr = self.arg(mem, args, 0)?;
        let mode = self.arg(mem, args, 1)?;
        let len = self.arg(mem, args, 2)?;
        let name_len = self.strlen(mem, name_ptr).ok_or(Fault)?;
        let name = self.read_mem(mem, name_ptr, name_len).ok_or(Fault)?;
        if mode >= 12 {
            return Ok(self.fail(EINVAL));
        }
        if name == b":tt" {
            let stream = match mode {
                0..=3 => Stream::In,
                4..=7 => Stream::Out,
                _ => Stream::Err,
            };
            return Ok(self.alloc(Handle::Console(stream)));
        }
        if name == FEATURES_NAME {
            if mode > 1 {
                return Ok(self.fail(EACCES));
            }
            return Ok(self.alloc(Handle::Features { pos: 0 }));
        }
        let path = match self.lock_string(mem, name_ptr, len.wrapping_add(1)) {
            Ok(p) => p,
            Err(e) => return Ok(self.fail(e)),
        };
        // (read, write, create, truncate); append modes deliberately lack
        // O_APPEND, as in QEMU 7.2.
        let (read, write, create, truncate) = match mode {
            0 | 1 => (true, false, false, false),
            2 | 3 => (true, true, false, false),
            4 | 5 => (false, true, true, true),
            6 | 7 => (true, true, true, true),
            8 | 9 => (false, true, true, false),
            _ => (true, true, true, false),
        };
        let mut opts = OpenOptions::new();
        opts.read(read)
            .write(write)
            .create(create)
            .truncate(truncate);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o644);
        }
        Ok(match opts.open(host_path(&path)) {
            Ok(f) => self.alloc(Handle::File(f)),
            Err(e) => self.fail(errno_of(&e)),
        })
    }

    /// Transfer for `SYS_WRITE`; `None` when the host write fails.
    fn write_handle(
        &mut self,
        fd: u64,
        buf: u64,
        len: u64,
        mem: &mut dyn GuestMemory,
    ) -> Option<u64> {
        let i = self.handle_index(fd)?;
        let kind = match self.handles[i].as_ref()? {
            Handle::Console(Stream::In) | Handle::Features { .. } => return None,
            Handle::Console(Stream::Out) => 1,
            Handle::Console(Stream::Err) => 2,
            Handle::File(_) => 0,
        };
        let data = if len == 0 {
            Vec::new()
        } else {
            self.read_mem(mem, buf, len)?
        };
        match kind {
            1 => self.stdout.write_all(&data).ok().map(|()| len),
            2 => self.stderr.write_all(&data).ok().map(|()| len),
            _ => match self.handles[i].as_mut()? {
                Handle::File(f) => f.write(&data).ok().map(|n| n as u64),
                _ => None,
            },
        }
    }

    /// Transfer for `SYS_READ`; `None` when the host read fails.
    fn read_handle(
        &mut self,
        fd: u64,
        buf: u64,
        len: u64,
        mem: &mut dyn GuestMemory,
    ) -> Option<u64> {
        let i = self.handle_index(fd)?;
        match self.handles[i].as_mut()? {
            Handle::Console(Stream::In) => {
                let mut data = vec![0u8; (len as usize).min(CHUNK)];
                let n = read_retry(&mut self.stdin, &mut data).ok()?;
                self.write_mem(mem, buf, &data[..n]);
                Some(n as u64)
            }
            Handle::Console(_) => None,
            Handle::Features { pos } => {
                let n = len.min(FEATURES_DATA.len() as u64 - *pos);
                let start = *pos as usize;
                *pos += n;
                self.write_mem(mem, buf, &FEATURES_DATA[start..start + n as usize]);
                Some(n)
            }
            Handle::File(_) => {
                // One host read() of `len` bytes, done in bounded chunks: stop
                // at the first short chunk, as a single read would.
                let mut total = 0u64;
                while total < len {
                    let want = ((len - total) as usize).min(CHUNK);
                    let mut data = vec![0u8; want];
                    let res = match self.handles[i].as_mut() {
                        Some(Handle::File(f)) => read_retry(f, &mut data),
                        _ => return None,
                    };
                    let n = match res {
                        Ok(n) => n,
                        Err(_) if total == 0 => return None,
                        Err(_) => break,
                    };
                    self.write_mem(mem, buf.wrapping_add(total), &data[..n]);
                    total += n as u64;
                    if n < want {
                        break;
                    }
                }
                Some(total)
            }
        }
    }

    fn sys_readc(&mut self, sp: Option<u64>, mem: &mut dyn GuestMemory) -> u64 {
        let mut b = [0u8; 1];
        match read_retry(&mut self.stdin, &mut b) {
            Ok(1) => {}
            _ => return u64::MAX, // end of input (QEMU would block forever)
        }
        let Some(sp) = sp else {
            return u64::from(b[0]);
        };
        let addr = sp.wrapping_sub(1) & self.mask();
        self.write_mem(mem, addr, &b);
        let mut back = [0u8; 1];
        if mem.read_bytes(addr, &mut back) {
            u64::from(back[0])
        } else {
            self.fail(EFAULT)
        }
    }

    fn sys_istty(&mut self, fd: u64) -> u64 {
        let Some(i) = self.handle_index(fd) else {
            return self.fail(EBADF);
        };
        let tty = match &self.handles[i] {
            Some(Handle::Console(s)) => self.terminals[*s as usize],
            Some(Handle::File(f)) => f.is_terminal(),
            _ => false,
        };
        if tty {
            1
        } else {
            self.errno = ENOTTY;
            0
        }
    }

    fn sys_seek(&mut self, fd: u64, pos: i64) -> u64 {
        let Some(i) = self.handle_index(fd) else {
            return self.fail(EBADF);
        };
        let res = match self.handles[i].as_mut() {
            Some(Handle::Console(_)) => Err(ESPIPE),
            Some(Handle::Features { pos: p }) => {
                if (0..=FEATURES_DATA.len() as i64).contains(&pos) {
                    *p = pos as u64;
                    Ok(())
                } else {
                    Err(EINVAL)
                }
            }
            Some(Handle::File(f)) => {
                if pos < 0 {
                    Err(EINVAL)
                } else {
                    f.seek(SeekFrom::Start(pos as u64))
                        .map(|_| ())
                        .map_err(|e| errno_of(&e))
                }
            }
            None => Err(EBADF),
        };
        match res {
            Ok(()) => 0,
            Err(e) => self.fail(e),
        }
    }

    fn sys_flen(&mut self, fd: u64) -> u64 {
        let Some(i) = self.handle_index(fd) else {
            return self.fail(EBADF);
        };
        let res = match &self.handles[i] {
            Some(Handle::Console(_)) => Ok(0),
            Some(Handle::Features { .. }) => Ok(FEATURES_DATA.len() as u64),
            Some(Handle::File(f)) => f.metadata().map(|m| m.len()).map_err(|e| errno_of(&e)),
            None => Err(EBADF),
        };
        match res {
            Ok(n) => n,
            Err(e) => self.fail(e),
        }
    }

    fn sys_system(&mut self, cmd: &[u8]) -> u64 {
        if !self.allow_host_commands {
            if !self.warned.contains(&SYS_SYSTEM) {
                self.warned.push(SYS_SYSTEM);
                // Never a panic when our stderr is closed (`eprintln!` would).
                let _ = writeln!(
                    self.stderr,
                    "rvtrace: warning: the program asked to run a host command (semihosting \
                     SYS_SYSTEM); refused (rvtrace run --allow-host-commands permits it)"
                );
                let _ = self.stderr.flush();
            }
            return self.fail(EPERM);
        }
        self.flush();
        let mut c = Command::new("/bin/sh");
        c.arg("-c").arg(host_path(cmd));
        let status = if self.real_stdio {
            c.status()
        } else {
            c.stdin(Stdio::null()).output().map(|out| {
                let _ = self.stdout.write_all(&out.stdout);
                let _ = self.stderr.write_all(&out.stderr);
                out.status
            })
        };
        match status {
            Ok(st) => wait_status(st),
            Err(e) => self.fail(errno_of(&e)),
        }
    }

    // ----- helpers --------------------------------------------------------

    fn mask(&self) -> u64 {
        match self.cfg.xlen {
            Xlen::Rv32 => 0xffff_ffff,
            Xlen::Rv64 => u64::MAX,
        }
    }

    fn word(&self) -> u64 {
        match self.cfg.xlen {
            Xlen::Rv32 => 4,
            Xlen::Rv64 => 8,
        }
    }

    /// Record `err` as the semihosting errno and return -1.
    fn fail(&mut self, err: u32) -> u64 {
        self.errno = err;
        u64::MAX
    }

    /// Read parameter-block word `n`.
    fn arg(&self, mem: &mut dyn GuestMemory, block: u64, n: u64) -> Result<u64, Fault> {
        let w = self.word();
        let addr = block.wrapping_add(n * w) & self.mask();
        let mut b = [0u8; 8];
        if mem.read_bytes(addr, &mut b[..w as usize]) {
            Ok(u64::from_le_bytes(b))
        } else {
            Err(Fault)
        }
    }

    /// Write parameter-block word `n` (failures ignored, like QEMU).
    fn set_arg(&self, mem: &mut dyn GuestMemory, block: u64, n: u64, val: u64) {
        let w = self.word();
        let addr = block.wrapping_add(n * w) & self.mask();
        self.write_mem(mem, addr, &val.to_le_bytes()[..w as usize]);
    }

    /// Write guest memory the way QEMU's debug access does. Bytes that are not
    /// writable RAM are dropped silently.
    fn write_mem(&self, mem: &mut dyn GuestMemory, addr: u64, data: &[u8]) {
        if data.is_empty() || mem.write_bytes(addr, data) {
            return;
        }
        for (i, b) in data.iter().enumerate() {
            let a = addr.wrapping_add(i as u64) & self.mask();
            let _ = mem.write_bytes(a, std::slice::from_ref(b));
        }
    }

    /// Read `len` guest bytes; `None` if any byte is unreadable.
    fn read_mem(&self, mem: &mut dyn GuestMemory, addr: u64, len: u64) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut done = 0u64;
        while done < len {
            let n = ((len - done) as usize).min(CHUNK);
            let start = out.len();
            out.resize(start + n, 0);
            let a = addr.wrapping_add(done) & self.mask();
            if !mem.read_bytes(a, &mut out[start..]) {
                return None;
            }
            done += n as u64;
        }
        Some(out)
    }

    /// Length of the NUL-terminated guest string at `addr`, scanning a page at
    /// a time as QEMU does. `None` if an unreadable byte comes before the NUL.
    fn strlen(&self, mem: &mut dyn GuestMemory, addr: u64) -> Option<u64> {
        let mut len = 0u64;
        let mut page = [0u8; PAGE_SIZE as usize];
        loop {
            let a = addr.wrapping_add(len) & self.mask();
            let left = (PAGE_SIZE - (a & (PAGE_SIZE - 1))) as usize;
            let chunk = &mut page[..left];
            if mem.read_bytes(a, chunk) {
                if let Some(p) = chunk.iter().position(|&c| c == 0) {
                    return Some(len + p as u64);
                }
            } else {
                for k in 0..left as u64 {
                    let mut c = [0u8; 1];
                    if !mem.read_bytes(a.wrapping_add(k) & self.mask(), &mut c) {
                        return None;
                    }
                    if c[0] == 0 {
                        return Some(len + k);
                    }
                }
            }
            len += left as u64;
            if len > INT32_MAX {
                return None;
            }
        }
    }

    /// QEMU's name validation for host calls, with `tlen` = length
    /// argument + 1. Returns the bytes before the first NUL, or an errno.
    fn lock_string(&self, mem: &mut dyn GuestMemory, ptr: u64, tlen: u64) -> Result<Vec<u8>, u32> {
        let tlen = tlen & self.mask();
        let len = if tlen == 0 {
            let slen = self.strlen(mem, ptr).ok_or(EFAULT)?;
            if slen >= INT32_MAX {
                return Err(ENAMETOOLONG);
            }
            slen + 1
        } else {
            if tlen > INT32_MAX {
                return Err(ENAMETOOLONG);
            }
            let mut last = [0u8; 1];
            let at = ptr.wrapping_add(tlen - 1) & self.mask();
            if !mem.read_bytes(at, &mut last) {
                return Err(EFAULT);
            }
            if last[0] != 0 {
                return Err(EINVAL);
            }
            tlen
        };
        let mut bytes = self.read_mem(mem, ptr, len).ok_or(EFAULT)?;
        if let Some(p) = bytes.iter().position(|&c| c == 0) {
            bytes.truncate(p);
        }
        Ok(bytes)
    }

    /// Guest handle → table index; `None` for negative, unused or unknown
    /// handles. As in QEMU, the handle is taken as a C `int`.
    fn handle_index(&self, fd: u64) -> Option<usize> {
        let fd = fd as u32 as i32;
        let i = usize::try_from(fd).ok()?;
        match self.handles.get(i) {
            Some(Some(_)) => Some(i),
            _ => None,
        }
    }

    /// Give `h` the lowest free handle number (from 1) and return it.
    fn alloc(&mut self, h: Handle) -> u64 {
        if self.handles.is_empty() {
            self.handles.push(None); // handle 0 is never used
        }
        let i = match self.handles.iter().skip(1).position(Option::is_none) {
            Some(p) => p + 1,
            None => {
                self.handles.push(None);
                self.handles.len() - 1
            }
        };
        self.handles[i] = Some(h);
        i as u64
    }
}

/// One `read()`, retried on `EINTR`.
fn read_retry<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            res => return res,
        }
    }
}

/// Host errno of an I/O error (Linux numbering on Linux hosts).
fn errno_of(e: &io::Error) -> u32 {
    if let Some(n) = e.raw_os_error() {
        return n as u32;
    }
    match e.kind() {
        io::ErrorKind::NotFound => ENOENT,
        io::ErrorKind::PermissionDenied => EPERM,
        _ => EIO,
    }
}

#[cfg(unix)]
fn host_path(bytes: &[u8]) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(bytes).into()
}

#[cfg(not(unix))]
fn host_path(bytes: &[u8]) -> std::path::PathBuf {
    String::from_utf8_lossy(bytes).into_owned().into()
}

/// `system()`'s result: the raw wait status.
#[cfg(unix)]
fn wait_status(st: std::process::ExitStatus) -> u64 {
    use std::os::unix::process::ExitStatusExt;
    st.into_raw() as u32 as u64
}

#[cfg(not(unix))]
fn wait_status(st: std::process::ExitStatus) -> u64 {
    ((st.code().unwrap_or(1) as u32 & 0xff) << 8) as u64
}

/// Guest memory as an extension sees it: writes reach the run's observer as stores.
impl GuestMemory for rvtrace_sim::extension::Ctx<'_> {
    fn read_bytes(&mut self, addr: u64, buf: &mut [u8]) -> bool {
        self.read_memory(addr, buf)
    }
    fn write_bytes(&mut self, addr: u64, data: &[u8]) -> bool {
        self.write_memory(addr, data)
    }
}

/// Semihosting is the hart's first environment-call service: it takes the `ebreak` of a
/// semihosting sequence ([`rvtrace_sim::Hart::semihosting_sequence_at`]) and leaves every other
/// `ebreak` and every `ecall` to trap.
impl rvtrace_sim::extension::Extension for Semihost {
    fn name(&self) -> &'static str {
        "semihosting"
    }

    fn environment_call(
        &mut self,
        ctx: &mut rvtrace_sim::extension::Ctx,
        call: &rvtrace_sim::extension::EnvCall,
    ) -> Option<rvtrace_sim::extension::Service> {
        if call.cause != rvtrace_sim::cause::BREAKPOINT
            || !ctx.hart().semihosting_sequence_at(call.pc)
        {
            return None;
        }
        let (op, param) = (ctx.x(10), ctx.x(11));
        let instret = ctx.hart().instret();
        ctx.touched_io();
        Some(match self.call(op, param, ctx, instret) {
            Outcome::Return(v) => {
                ctx.set_x(10, v);
                rvtrace_sim::extension::Service::Done
            }
            Outcome::Exit(code) => rvtrace_sim::extension::Service::Exit(code),
        })
    }

    fn flush(&mut self) {
        Semihost::flush(self);
    }

    fn redirect_output(&mut self, out: Box<dyn Write + Send>, tty: bool) {
        self.set_stdout(out, tty);
    }
}

/// The semihosting configuration for `hart` (its XLEN and RAM) with command line `cmdline` and
/// the address ranges already `loaded` (they shape the heap `SYS_HEAPINFO` reports, as under
/// QEMU).
pub fn config(hart: &Hart, cmdline: &str, loaded: Vec<(u64, u64)>) -> SemihostConfig {
    SemihostConfig {
        cmdline: cmdline.to_string(),
        xlen: hart.xlen,
        ram_base: RAM_BASE,
        ram_size: hart.bus.ram_size(),
        loaded,
    }
}

/// What QEMU `virt` has loaded for a program run with `-kernel`: the non-empty segments of every
/// file of `image` and the device tree below the end of RAM ([`rvtrace_sim::fdt_address`]).
pub fn loaded_ranges(image: &Image, ram_size: u64) -> Vec<(u64, u64)> {
    let mut loaded: Vec<(u64, u64)> = image
        .segments()
        .iter()
        .filter(|s| !s.data.is_empty())
        .map(|s| (s.paddr, s.paddr + s.data.len() as u64))
        .collect();
    let fdt = rvtrace_sim::fdt_address(ram_size, rvtrace_sim::FDT_SIZE);
    loaded.push((fdt, fdt + rvtrace_sim::FDT_SIZE));
    loaded
}

/// Give `hart` semihosting for the program of `image` with command line `cmdline` (QEMU: the
/// `-kernel` path as given), its console on this process's stdin, stdout and stderr: the
/// machine QEMU `virt -semihosting-config enable=on` runs.
pub fn attach(hart: &mut Hart, image: &Image, cmdline: &str) {
    let loaded = loaded_ranges(image, hart.bus.ram_size());
    set(hart, Semihost::new(config(hart, cmdline, loaded)));
}

/// Put `sh` on `hart`: in place of the semihosting it has, otherwise first in attach order (it
/// then services its `ebreak`s before any other extension is asked).
pub fn set(hart: &mut Hart, sh: Semihost) {
    if let Some(old) = hart.extension_mut::<Semihost>() {
        *old = sh;
    } else {
        hart.attach_at(0, Box::new(sh));
    }
}

/// Let semihosting `SYS_SYSTEM` run host shell commands (see
/// [`Semihost::set_allow_host_commands`]); nothing without semihosting.
pub fn allow_host_commands(hart: &mut Hart, allow: bool) {
    if let Some(sh) = hart.extension_mut::<Semihost>() {
        sh.set_allow_host_commands(allow);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};

    const RAM: u64 = 0x8000_0000;
    const BLK: u64 = 0x8000_1000;
    const BUF: u64 = 0x8000_2000;
    const STR: u64 = 0x8000_3000;
    const STR2: u64 = 0x8000_3800;
    const BAD: u64 = 0x9000_0000;

    /// 64 KiB of RAM at `RAM`; everything else faults.
    struct Mem {
        ram: Vec<u8>,
    }

    impl Mem {
        fn new() -> Self {
            Mem {
                ram: vec![0; 0x1_0000],
            }
        }
        fn range(&self, addr: u64, len: usize) -> Option<std::ops::Range<usize>> {
            let off = addr.checked_sub(RAM)? as usize;
            let end = off.checked_add(len)?;
            (end <= self.ram.len()).then_some(off..end)
        }
        fn put(&mut self, addr: u64, data: &[u8]) {
            let r = self.range(addr, data.len()).unwrap();
            self.ram[r].copy_from_slice(data);
        }
        fn get(&self, addr: u64, len: usize) -> Vec<u8> {
            self.ram[self.range(addr, len).unwrap()].to_vec()
        }
        fn put_str(&mut self, addr: u64, s: &str) {
            let mut v = s.as_bytes().to_vec();
            v.push(0);
            self.put(addr, &v);
        }
        fn put_words(&mut self, xlen: Xlen, addr: u64, words: &[u64]) {
            for (i, w) in words.iter().enumerate() {
                match xlen {
                    Xlen::Rv32 => self.put(addr + 4 * i as u64, &(*w as u32).to_le_bytes()),
                    Xlen::Rv64 => self.put(addr + 8 * i as u64, &w.to_le_bytes()),
                }
            }
        }
        fn words(&self, xlen: Xlen, addr: u64, n: usize) -> Vec<u64> {
            (0..n)
                .map(|i| match xlen {
                    Xlen::Rv32 => {
                        let b = self.get(addr + 4 * i as u64, 4);
                        u64::from(u32::from_le_bytes(b.try_into().unwrap()))
                    }
                    Xlen::Rv64 => {
                        let b = self.get(addr + 8 * i as u64, 8);
                        u64::from_le_bytes(b.try_into().unwrap())
                    }
                })
                .collect()
        }
    }

    impl GuestMemory for Mem {
        fn read_bytes(&mut self, addr: u64, buf: &mut [u8]) -> bool {
            match self.range(addr, buf.len()) {
                Some(r) => {
                    buf.copy_from_slice(&self.ram[r]);
                    true
                }
                None => false,
            }
        }
        fn write_bytes(&mut self, addr: u64, data: &[u8]) -> bool {
            match self.range(addr, data.len()) {
                Some(r) => {
                    self.ram[r].copy_from_slice(data);
                    true
                }
                None => false,
            }
        }
    }

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Sink {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    struct Rig {
        sh: Semihost,
        mem: Mem,
        xlen: Xlen,
        out: Sink,
        err: Sink,
    }

    impl Rig {
        fn new(xlen: Xlen) -> Self {
            Self::with_stdin(xlen, b"")
        }
        fn with_stdin(xlen: Xlen, input: &'static [u8]) -> Self {
            let cfg = SemihostConfig::qemu_virt(
                "prog.elf",
                xlen,
                [
                    (0x8000_0000, 0x8000_3828),
                    (0x8000_3828, 0x8000_3848),
                    (0x8020_0020, 0x8020_0f28),
                ],
            );
            let (out, err) = (Sink::default(), Sink::default());
            let sh = Semihost::with_io(
                cfg,
                Box::new(input),
                Box::new(out.clone()),
                Box::new(err.clone()),
            );
            Rig {
                sh,
                mem: Mem::new(),
                xlen,
                out,
                err,
            }
        }
        fn minus1(&self) -> u64 {
            match self.xlen {
                Xlen::Rv32 => 0xffff_ffff,
                Xlen::Rv64 => u64::MAX,
            }
        }
        fn raw(&mut self, op: u32, param: u64) -> Outcome {
            self.sh.call(u64::from(op), param, &mut self.mem, 0)
        }
        fn ret(&mut self, op: u32, param: u64) -> u64 {
            match self.raw(op, param) {
                Outcome::Return(v) => v,
                other => panic!("unexpected {other:?}"),
            }
        }
        /// Call `op` with a parameter block holding `words`.
        fn blk(&mut self, op: u32, words: &[u64]) -> u64 {
            self.mem.put_words(self.xlen, BLK, words);
            self.ret(op, BLK)
        }
        fn errno(&mut self) -> u64 {
            self.ret(SYS_ERRNO, 0)
        }
        fn open(&mut self, name: &str, mode: u64) -> u64 {
            self.mem.put_str(STR, name);
            self.blk(SYS_OPEN, &[STR, mode, name.len() as u64])
        }
    }

    const BOTH: [Xlen; 2] = [Xlen::Rv32, Xlen::Rv64];

    fn temp_path(tag: &str) -> std::path::PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        std::env::temp_dir().join(format!("rvtrace-semi-{}-{tag}-{n}", std::process::id()))
    }

    #[test]
    fn features_file_sequence() {
        for xlen in BOTH {
            let mut r = Rig::new(xlen);
            let m1 = r.minus1();
            assert_eq!(r.errno(), 0);
            assert_eq!(r.open(":semihosting-features", 4), m1);
            assert_eq!(r.errno(), u64::from(EACCES));
            let h = r.open(":semihosting-features", 0);
            assert_eq!(h, 1);
            assert_eq!(r.blk(SYS_FLEN, &[h]), 5);
            r.mem.put(BUF, &[0xee; 8]);
            assert_eq!(r.blk(SYS_READ, &[h, BUF, 5]), 0);
            assert_eq!(r.mem.get(BUF, 6), b"SHFB\x03\xee");
            assert_eq!(r.blk(SYS_READ, &[h, BUF, 5]), 5);
            assert_eq!(r.blk(SYS_SEEK, &[h, 2]), 0);
            assert_eq!(r.blk(SYS_READ, &[h, BUF, 10]), 7);
            assert_eq!(r.blk(SYS_SEEK, &[h, 5]), 0);
            assert_eq!(r.blk(SYS_SEEK, &[h, 6]), m1);
            assert_eq!(r.errno(), u64::from(EINVAL));
            assert_eq!(r.blk(SYS_ISTTY, &[h]), 0);
            assert_eq!(r.errno(), u64::from(ENOTTY));
            // WRITE fails with the full length and leaves errno alone.
            assert_eq!(r.blk(SYS_WRITE, &[h, BUF, 3]), 3);
            assert_eq!(r.errno(), u64::from(ENOTTY));
            assert_eq!(r.blk(SYS_CLOSE, &[h]), 0);
            assert_eq!(r.blk(SYS_CLOSE, &[h]), m1);
            assert_eq!(r.errno(), u64::from(EBADF));
            // "rb" works too.
            assert_eq!(r.open(":semihosting-features", 1), 1);
        }
    }

    /// The exact sequence picolibc's `_exit` performs.
    #[test]
    fn picolibc_exit_sequence() {
        for xlen in BOTH {
            let mut r = Rig::new(xlen);
            r.mem.put_str(STR, ":semihosting-features");
            let h = r.blk(SYS_OPEN, &[STR, 0, 21]);
            assert_eq!(h, 1);
            assert_eq!(r.blk(SYS_FLEN, &[h]), 5);
            assert_eq!(r.blk(SYS_READ, &[h, BUF + 8, 4]), 0);
            assert_eq!(r.mem.get(BUF + 8, 4), b"SHFB");
            assert_eq!(r.blk(SYS_READ, &[h, BUF + 16, 1]), 0);
            assert_eq!(r.mem.get(BUF + 16, 1), [0x03]);
            assert_eq!(r.blk(SYS_CLOSE, &[h]), 0);
            r.mem
                .put_words(xlen, BLK, &[ADP_STOPPED_APPLICATION_EXIT, 42]);
            assert_eq!(r.raw(SYS_EXIT_EXTENDED, BLK), Outcome::Exit(42));
        }
    }

    #[test]
    fn handle_numbering() {
        let mut r = Rig::new(Xlen::Rv64);
        assert_eq!(r.open(":tt", 0), 1);
        assert_eq!(r.open(":tt", 4), 2);
        assert_eq!(r.open(":tt", 8), 3);
        assert_eq!(r.blk(SYS_CLOSE, &[2]), 0);
        assert_eq!(r.open(":semihosting-features", 0), 2);
        assert_eq!(r.open(":tt", 4), 4);
        assert_eq!(r.blk(SYS_CLOSE, &[0]), u64::MAX);
        assert_eq!(r.errno(), u64::from(EBADF));
        // Handles are C ints: the upper half of a 64-bit value is ignored.
        assert_eq!(r.blk(SYS_FLEN, &[0x1_0000_0002]), 5);
        assert_eq!(r.blk(SYS_FLEN, &[u64::MAX]), u64::MAX);
    }

    #[test]
    fn tt_streams() {
        for xlen in BOTH {
            let mut r = Rig::with_stdin(xlen, b"abcdef");
            let m1 = r.minus1();
            let (hr, hw, ha) = (r.open(":tt", 0), r.open(":tt", 5), r.open(":tt", 11));
            assert_eq!((hr, hw, ha), (1, 2, 3));
            assert_eq!(r.open(":tt", 12), m1);
            assert_eq!(r.errno(), u64::from(EINVAL));
            // ":tt" is matched by name whatever the length says.
            r.mem.put_str(STR, ":tt");
            assert_eq!(r.blk(SYS_OPEN, &[STR, 0, 99]), 4);

            r.mem.put(BUF, b"to-stdout\n");
            assert_eq!(r.blk(SYS_WRITE, &[hw, BUF, 10]), 0);
            r.mem.put(BUF, b"to-stderr\n");
            assert_eq!(r.blk(SYS_WRITE, &[ha, BUF, 10]), 0);
            assert_eq!(r.blk(SYS_WRITE, &[hw, BUF, 0]), 0);
            assert_eq!(r.out.text(), "to-stdout\n");
            assert_eq!(r.err.text(), "to-stderr\n");

            assert_eq!(r.blk(SYS_READ, &[hr, BUF, 4]), 0);
            assert_eq!(r.mem.get(BUF, 4), b"abcd");
            assert_eq!(r.blk(SYS_READ, &[hr, BUF, 4]), 2);
            assert_eq!(r.mem.get(BUF, 2), b"ef");
            assert_eq!(r.blk(SYS_READ, &[hr, BUF, 4]), 4); // EOF
            assert_eq!(r.blk(SYS_WRITE, &[hr, BUF, 3]), 3);
            assert_eq!(r.blk(SYS_READ, &[hw, BUF, 3]), 3);

            for h in [hr, hw, ha] {
                assert_eq!(r.blk(SYS_ISTTY, &[h]), 0);
                assert_eq!(r.errno(), u64::from(ENOTTY));
                assert_eq!(r.blk(SYS_FLEN, &[h]), 0);
                assert_eq!(r.blk(SYS_SEEK, &[h, 0]), m1);
                assert_eq!(r.errno(), u64::from(ESPIPE));
            }
            r.sh.set_terminals(false, true, false);
            assert_eq!(r.blk(SYS_ISTTY, &[hw]), 1);
            assert_eq!(r.blk(SYS_ISTTY, &[9]), m1);
            assert_eq!(r.errno(), u64::from(EBADF));
            for h in [hr, hw, ha] {
                assert_eq!(r.blk(SYS_CLOSE, &[h]), 0);
            }
        }
    }

    #[test]
    fn writec_write0() {
        for xlen in BOTH {
            let mut r = Rig::new(xlen);
            r.mem.put(BUF, b"C");
            assert_eq!(r.ret(SYS_WRITEC, BUF), 0xdead_beef);
            r.mem.put_str(STR, "W0\n");
            assert_eq!(r.ret(SYS_WRITE0, STR), 0xdead_beef);
            assert_eq!(r.ret(SYS_WRITEC, BAD), 0xdead_beef);
            assert_eq!(r.ret(SYS_WRITE0, BAD), 0xdead_beef);
            assert_eq!(r.out.text(), "CW0\n");
            assert_eq!(r.errno(), 0);
            // A string running off the end of RAM faults: nothing is written.
            let end = RAM + r.mem.ram.len() as u64;
            r.mem.put(end - 3, b"xyz");
            assert_eq!(r.ret(SYS_WRITE0, end - 3), 0xdead_beef);
            assert_eq!(r.out.text(), "CW0\n");
        }
    }

    #[test]
    fn bad_handles() {
        for xlen in BOTH {
            let mut r = Rig::new(xlen);
            let m1 = r.minus1();
            assert_eq!(r.blk(SYS_WRITE, &[77, BUF, 3]), 3);
            assert_eq!(r.blk(SYS_READ, &[77, BUF, 3]), 3);
            assert_eq!(r.errno(), 0);
            assert_eq!(r.blk(SYS_FLEN, &[77]), m1);
            assert_eq!(r.blk(SYS_SEEK, &[77, 0]), m1);
            assert_eq!(r.blk(SYS_CLOSE, &[77]), m1);
            assert_eq!(r.errno(), u64::from(EBADF));
        }
    }

    #[test]
    fn iserror() {
        let mut r = Rig::new(Xlen::Rv32);
        assert_eq!(r.blk(SYS_ISERROR, &[0xffff_ffff]), 1);
        assert_eq!(r.blk(SYS_ISERROR, &[0x8000_0000]), 1);
        assert_eq!(r.blk(SYS_ISERROR, &[0]), 0);
        let mut r = Rig::new(Xlen::Rv64);
        assert_eq!(r.blk(SYS_ISERROR, &[u64::MAX]), 1);
        assert_eq!(r.blk(SYS_ISERROR, &[0x8000_0000]), 0);
        assert_eq!(r.blk(SYS_ISERROR, &[5]), 0);
    }

    #[test]
    fn host_files() {
        for xlen in BOTH {
            let mut r = Rig::new(xlen);
            let m1 = r.minus1();
            let path = temp_path("f");
            let p = path.to_str().unwrap().to_owned();
            let pl = p.len() as u64;

            let f = r.open(&p, 4); // "w"
            assert_eq!(f, 1);
            r.mem.put(BUF, b"0123456789");
            assert_eq!(r.blk(SYS_WRITE, &[f, BUF, 10]), 0);
            assert_eq!(r.blk(SYS_FLEN, &[f]), 10);
            assert_eq!(r.blk(SYS_ISTTY, &[f]), 0);
            assert_eq!(r.errno(), u64::from(ENOTTY));
            assert_eq!(r.blk(SYS_READ, &[f, BUF, 3]), 3); // write-only
            assert_eq!(r.blk(SYS_CLOSE, &[f]), 0);

            // "a" is write + create without O_APPEND: a seek moves the write.
            let f = r.open(&p, 8);
            assert_eq!(r.blk(SYS_SEEK, &[f, 2]), 0);
            r.mem.put(BUF, b"AB");
            assert_eq!(r.blk(SYS_WRITE, &[f, BUF, 2]), 0);
            assert_eq!(r.blk(SYS_CLOSE, &[f]), 0);
            assert_eq!(std::fs::read(&path).unwrap(), b"01AB456789");

            let f = r.open(&p, 0);
            assert_eq!(r.blk(SYS_SEEK, &[f, 3]), 0);
            r.mem.put(BUF, &[0; 32]);
            assert_eq!(r.blk(SYS_READ, &[f, BUF, 20]), 13);
            assert_eq!(r.mem.get(BUF, 8), b"B456789\0");
            assert_eq!(r.blk(SYS_SEEK, &[f, 100]), 0);
            assert_eq!(r.blk(SYS_READ, &[f, BUF, 20]), 20);
            r.mem.put(BUF, b"zz");
            assert_eq!(r.blk(SYS_WRITE, &[f, BUF, 2]), 2); // read-only
                                                           // SEEK's offset is XLEN-unsigned: -1 is 4 GiB - 1 on RV32.
            let (expect, err) = match xlen {
                Xlen::Rv32 => (0, 0),
                Xlen::Rv64 => (m1, u64::from(EINVAL)),
            };
            r.sh.errno = 0;
            assert_eq!(r.blk(SYS_SEEK, &[f, m1]), expect);
            assert_eq!(r.errno(), err);
            assert_eq!(r.blk(SYS_CLOSE, &[f]), 0);

            // "r+" keeps the contents; "w+" truncates.
            let f = r.open(&p, 2);
            assert_eq!(r.blk(SYS_FLEN, &[f]), 10);
            assert_eq!(r.blk(SYS_CLOSE, &[f]), 0);
            let f = r.open(&p, 6);
            assert_eq!(r.blk(SYS_FLEN, &[f]), 0);
            assert_eq!(r.blk(SYS_CLOSE, &[f]), 0);

            // The length must point at the NUL.
            r.mem.put_str(STR, &p);
            assert_eq!(r.blk(SYS_OPEN, &[STR, 0, pl - 1]), m1);
            assert_eq!(r.errno(), u64::from(EINVAL));
            assert_eq!(r.blk(SYS_OPEN, &[STR, 14, pl]), m1);
            assert_eq!(r.errno(), u64::from(EINVAL));

            // Rename and remove.
            let p2 = format!("{p}.2");
            r.mem.put_str(STR2, &p2);
            assert_eq!(r.blk(SYS_RENAME, &[STR, pl, STR2, p2.len() as u64]), 0);
            assert!(!path.exists());
            assert_eq!(r.blk(SYS_RENAME, &[STR, pl, STR2, p2.len() as u64]), m1);
            assert_eq!(r.errno(), u64::from(ENOENT));
            assert_eq!(r.blk(SYS_REMOVE, &[STR2, p2.len() as u64]), 0);
            assert_eq!(r.blk(SYS_REMOVE, &[STR2, p2.len() as u64]), m1);
            assert_eq!(r.errno(), u64::from(ENOENT));
            assert_eq!(r.open(&p, 0), m1);
            assert_eq!(r.errno(), u64::from(ENOENT));
        }
    }

    #[test]
    fn get_cmdline() {
        for xlen in BOTH {
            let mut r = Rig::new(xlen);
            let m1 = r.minus1();
            // "prog.elf" needs 9 bytes.
            assert_eq!(r.blk(SYS_GET_CMDLINE, &[BUF, 8]), m1);
            assert_eq!(r.errno(), u64::from(E2BIG));
            assert_eq!(r.mem.words(xlen, BLK, 2), [BUF, 8]);
            assert_eq!(r.mem.get(BUF, 1), [0]);
            assert_eq!(r.blk(SYS_GET_CMDLINE, &[BUF, 9]), 0);
            assert_eq!(r.mem.get(BUF, 9), b"prog.elf\0");
            assert_eq!(r.mem.words(xlen, BLK, 2), [BUF, 8]);
            // picolibc's request.
            assert_eq!(r.blk(SYS_GET_CMDLINE, &[BUF, 1024]), 0);
            assert_eq!(r.mem.words(xlen, BLK, 2), [BUF, 8]);
            // Writes to non-RAM are dropped silently.
            assert_eq!(r.blk(SYS_GET_CMDLINE, &[BAD, 1024]), 0);
        }
    }

    #[test]
    fn heapinfo() {
        for xlen in BOTH {
            let mut r = Rig::new(xlen);
            assert_eq!(r.blk(SYS_HEAPINFO, &[BUF]), 0);
            // Same values QEMU 7.2 reports for this layout.
            assert_eq!(
                r.mem.words(xlen, BUF, 4),
                [0x8020_0f28, 0x87e0_0000, 0x87e0_0000, 0x8020_0f28]
            );
            assert_eq!(r.blk(SYS_HEAPINFO, &[BAD]), 0);
            assert_eq!(r.ret(SYS_HEAPINFO, BAD), r.minus1());
            assert_eq!(r.errno(), u64::from(EFAULT));
        }
    }

    #[test]
    fn heap_layouts() {
        let cfg = SemihostConfig::qemu_virt("x", Xlen::Rv64, []);
        assert_eq!(cfg.loaded, [(0x87e0_0000, 0x87f0_0000)]);
        assert_eq!(cfg.heap_info(), [RAM, 0x87e0_0000, 0x87e0_0000, RAM]);
        // A program filling RAM up to the fdt: the 1 MiB above it wins.
        let cfg = SemihostConfig::qemu_virt("x", Xlen::Rv64, [(RAM, 0x87d8_0000)]);
        assert_eq!(cfg.heap_info()[..2], [0x87f0_0000, 0x8800_0000]);
        // The 32-bit RV32 image layout from QEMU.
        let cfg = SemihostConfig::qemu_virt(
            "x",
            Xlen::Rv32,
            [
                (RAM, 0x8000_41a0),
                (0x8000_41a0, 0x8000_41b8),
                (0x8020_0018, 0x8020_0e20),
            ],
        );
        assert_eq!(cfg.heap_info()[..2], [0x8020_0e20, 0x87e0_0000]);
        // Overlapping blobs and blobs outside RAM.
        let cfg = SemihostConfig {
            cmdline: String::new(),
            xlen: Xlen::Rv64,
            ram_base: 0x1000,
            ram_size: 0x1000,
            loaded: vec![
                (0, 0x10),
                (0x1100, 0x1300),
                (0x1200, 0x1400),
                (0x1800, 0x1f00),
                (0x5000, 0x6000),
            ],
        };
        assert_eq!(cfg.heap_info()[..2], [0x1400, 0x1800]);
        let none = SemihostConfig {
            ram_base: 0,
            ram_size: 0,
            ..cfg
        };
        assert_eq!(none.heap_info(), [0; 4]);
        assert_eq!(
            qemu_virt_fdt_addr(RAM, 128 << 20, QEMU_VIRT_FDT_SIZE),
            0x87e0_0000
        );
        assert_eq!(
            qemu_virt_fdt_addr(RAM, 4 << 30, QEMU_VIRT_FDT_SIZE),
            0xbfe0_0000
        );
    }

    #[test]
    fn exit_rv64() {
        let mut r = Rig::new(Xlen::Rv64);
        r.mem.put_words(Xlen::Rv64, BLK, &[0x20026, 7]);
        assert_eq!(r.raw(SYS_EXIT, BLK), Outcome::Exit(7));
        r.mem.put_words(Xlen::Rv64, BLK, &[0x20026, 0x1_0000_0003]);
        assert_eq!(r.raw(SYS_EXIT, BLK), Outcome::Exit(3));
        r.mem.put_words(Xlen::Rv64, BLK, &[0x20026, u64::MAX]);
        assert_eq!(r.raw(SYS_EXIT, BLK), Outcome::Exit(-1));
        r.mem.put_words(Xlen::Rv64, BLK, &[0x20023, 0]);
        assert_eq!(r.raw(SYS_EXIT, BLK), Outcome::Exit(1));
        r.mem.put_words(Xlen::Rv64, BLK, &[0x20026, 9]);
        assert_eq!(r.raw(SYS_EXIT_EXTENDED, BLK), Outcome::Exit(9));
        r.mem.put_words(Xlen::Rv64, BLK, &[0x20024, 9]);
        assert_eq!(r.raw(SYS_EXIT_EXTENDED, BLK), Outcome::Exit(1));
        // An unreadable block does not exit.
        assert_eq!(r.raw(SYS_EXIT, BAD), Outcome::Return(u64::MAX));
        assert_eq!(r.errno(), u64::from(EFAULT));
    }

    #[test]
    fn exit_rv32() {
        let mut r = Rig::new(Xlen::Rv32);
        assert_eq!(r.raw(SYS_EXIT, 0x20026), Outcome::Exit(0));
        assert_eq!(r.raw(SYS_EXIT, 0x20023), Outcome::Exit(1));
        r.mem.put_words(Xlen::Rv32, BLK, &[0x20026, 7]);
        assert_eq!(r.raw(SYS_EXIT, BLK), Outcome::Exit(1)); // a pointer is not the reason
        r.mem.put_words(Xlen::Rv32, BLK, &[0x20026, 9]);
        assert_eq!(r.raw(SYS_EXIT_EXTENDED, BLK), Outcome::Exit(9));
        r.mem.put_words(Xlen::Rv32, BLK, &[0x20023, 9]);
        assert_eq!(r.raw(SYS_EXIT_EXTENDED, BLK), Outcome::Exit(1));
        assert_eq!(r.raw(SYS_EXIT_EXTENDED, BAD), Outcome::Return(0xffff_ffff));
    }

    #[test]
    fn clocks() {
        for xlen in BOTH {
            let mut r = Rig::new(xlen);
            let instret = 250_000_000; // 2.5 s at 100 MHz
            let call = |r: &mut Rig, op, param| match r.sh.call(op, param, &mut r.mem, instret) {
                Outcome::Return(v) => v,
                o => panic!("{o:?}"),
            };
            assert_eq!(call(&mut r, u64::from(SYS_CLOCK), 0), 250);
            assert_eq!(call(&mut r, u64::from(SYS_TIME), 0), DEFAULT_EPOCH + 2);
            assert_eq!(call(&mut r, u64::from(SYS_TICKFREQ), 0), 1_000_000_000);
            r.mem.put(BUF, &[0x55; 16]);
            assert_eq!(call(&mut r, u64::from(SYS_ELAPSED), BUF), 0);
            let ns = 2_500_000_000u64;
            match xlen {
                Xlen::Rv64 => {
                    assert_eq!(r.mem.words(xlen, BUF, 1), [ns]);
                    assert_eq!(r.mem.get(BUF + 8, 1), [0x55]);
                }
                Xlen::Rv32 => {
                    assert_eq!(r.mem.words(xlen, BUF, 2), [ns & 0xffff_ffff, ns >> 32]);
                    assert_eq!(r.mem.get(BUF + 8, 1), [0x55]);
                }
            }
            assert_eq!(call(&mut r, u64::from(SYS_ELAPSED), BAD), 0);
            r.sh.set_epoch(1000);
            assert_eq!(call(&mut r, u64::from(SYS_TIME), 0), 1002);
        }
    }

    #[test]
    fn faults_in_parameter_blocks() {
        for xlen in BOTH {
            let mut r = Rig::new(xlen);
            let m1 = r.minus1();
            for op in [
                SYS_OPEN,
                SYS_CLOSE,
                SYS_WRITE,
                SYS_READ,
                SYS_ISERROR,
                SYS_ISTTY,
                SYS_SEEK,
                SYS_FLEN,
                SYS_REMOVE,
                SYS_RENAME,
                SYS_GET_CMDLINE,
                SYS_HEAPINFO,
                SYS_TMPNAM,
                SYS_SYSTEM,
            ] {
                r.sh.errno = 0;
                assert_eq!(r.ret(op, BAD), m1, "op {op:#x}");
                assert_eq!(r.errno(), u64::from(EFAULT), "op {op:#x}");
            }
            // Unreadable file name.
            assert_eq!(r.blk(SYS_OPEN, &[BAD, 0, 3]), m1);
            assert_eq!(r.errno(), u64::from(EFAULT));
            // Unreadable source buffer: WRITE reports nothing written, errno kept.
            let h = r.open(":tt", 4);
            r.sh.errno = 0;
            assert_eq!(r.blk(SYS_WRITE, &[h, BAD, 3]), 3);
            assert_eq!(r.errno(), 0);
        }
    }

    #[test]
    fn unknown_operations() {
        let mut r = Rig::new(Xlen::Rv32);
        assert_eq!(r.ret(0x55, 0), 0xffff_ffff);
        assert_eq!(r.errno(), u64::from(ENOSYS));
        assert_eq!(r.ret(0x55, 0), 0xffff_ffff);
        assert_eq!(r.ret(0x14, 0), 0xffff_ffff);
        let warnings = r.err.text();
        assert_eq!(warnings.matches("0x55").count(), 1);
        assert_eq!(warnings.matches("0x14").count(), 1);
        // SYNCCACHE is supported on RISC-V.
        assert_eq!(r.ret(SYS_SYNCCACHE, 0), 0);
        // Only the low 32 bits of a0 select the operation.
        let mut r = Rig::new(Xlen::Rv64);
        assert_eq!(
            r.sh.call(0x1_0000_0031, 0, &mut r.mem, 0),
            Outcome::Return(TICK_HZ)
        );
    }

    #[test]
    fn tmpnam() {
        for xlen in BOTH {
            let mut r = Rig::new(xlen);
            assert_eq!(r.blk(SYS_TMPNAM, &[BUF, 0x142, 256]), 0);
            let want = format!("/tmp/qemu-{:x}42\0", std::process::id());
            assert_eq!(r.mem.get(BUF, want.len()), want.as_bytes());
            r.sh.errno = 0;
            assert_eq!(r.blk(SYS_TMPNAM, &[BUF, 1, 5]), r.minus1());
            assert_eq!(r.errno(), 0);
        }
    }

    #[cfg(unix)]
    #[test]
    fn system() {
        let mut r = Rig::new(Xlen::Rv64);
        r.mem.put_str(STR, "true");
        // Refused unless allowed.
        assert_eq!(r.blk(SYS_SYSTEM, &[STR, 4]), r.minus1());
        assert_eq!(r.errno(), EPERM as u64);
        r.sh.set_allow_host_commands(true);
        r.mem.put_str(STR, "echo hi; exit 3");
        assert_eq!(r.blk(SYS_SYSTEM, &[STR, 15]), 0x300);
        assert_eq!(r.out.text(), "hi\n");
        r.mem.put_str(STR, "true");
        assert_eq!(r.blk(SYS_SYSTEM, &[STR, 4]), 0);
    }

    #[test]
    fn readc() {
        let mut r = Rig::with_stdin(Xlen::Rv64, b"xy");
        assert_eq!(r.ret(SYS_READC, 0), u64::from(b'x'));
        let sp = BUF + 0x100;
        assert_eq!(
            r.sh.call_with_sp(u64::from(SYS_READC), 0, sp, &mut r.mem, 0),
            Outcome::Return(u64::from(b'y'))
        );
        assert_eq!(r.mem.get(sp - 1, 1), b"y");
        assert_eq!(r.ret(SYS_READC, 0), u64::MAX); // end of input
        let mut r = Rig::with_stdin(Xlen::Rv32, b"z");
        assert_eq!(
            r.sh.call_with_sp(u64::from(SYS_READC), 0, BAD, &mut r.mem, 0),
            Outcome::Return(0xffff_ffff)
        );
        assert_eq!(r.errno(), u64::from(EFAULT));
    }

    /// Writes that run off the end of RAM keep the RAM part, as QEMU's debug
    /// writes do.
    #[test]
    fn partial_writes() {
        let mut r = Rig::new(Xlen::Rv64);
        let end = RAM + r.mem.ram.len() as u64;
        let h = r.open(":semihosting-features", 0);
        assert_eq!(r.blk(SYS_READ, &[h, end - 2, 5]), 0);
        assert_eq!(r.mem.get(end - 2, 2), b"SH");
    }
}
