//! Errors returned while loading an ELF file into an [`Image`](crate::Image).

use std::fmt;

/// Why an ELF file could not be loaded.
///
/// Every variant carries the file's path (or the name given to
/// [`Image::load_bytes`](crate::Image::load_bytes)); [`Display`](fmt::Display) renders one line
/// that starts with it. A failed load leaves the [`Image`](crate::Image) unchanged.
#[derive(Debug)]
#[non_exhaustive]
pub enum ImageError {
    /// The file could not be opened or read.
    Io {
        /// File path.
        path: String,
        /// The operating-system error.
        error: std::io::Error,
    },
    /// The file does not start with the ELF magic `\x7fELF`.
    NotElf {
        /// File path.
        path: String,
        /// The first (up to four) bytes of the file.
        found: Vec<u8>,
    },
    /// The ELF file is not for RISC-V (`e_machine` is not 243, `EM_RISCV`).
    NotRiscv {
        /// File path.
        path: String,
        /// The `e_machine` value found.
        machine: u16,
    },
    /// `EI_CLASS` is neither 1 (ELF32) nor 2 (ELF64).
    UnsupportedClass {
        /// File path.
        path: String,
        /// The `EI_CLASS` byte found.
        class: u8,
    },
    /// `EI_DATA` is not 1 (little-endian); big-endian (2) and invalid encodings are rejected.
    UnsupportedEncoding {
        /// File path.
        path: String,
        /// The `EI_DATA` byte found.
        data: u8,
    },
    /// A structure extends beyond the end of the file.
    Truncated {
        /// File path.
        path: String,
        /// What was cut off, e.g. `"ELF header"`, `"program headers"`, `"section headers"`,
        /// `"data of segment 2"`, `"symbol table"`, `"string table"`.
        what: String,
        /// Byte offset in the file where the structure starts.
        offset: u64,
        /// Size in bytes of the structure (saturated at `u64::MAX` if it overflows).
        size: u64,
        /// Actual length of the file.
        file_len: u64,
    },
    /// A loadable segment's `p_filesz` exceeds its `p_memsz`.
    FileszExceedsMemsz {
        /// File path.
        path: String,
        /// Index of the program header.
        phdr: usize,
        /// `p_filesz`.
        filesz: u64,
        /// `p_memsz`.
        memsz: u64,
    },
    /// A loadable segment overlaps another one, in the same file or in a file loaded earlier.
    Overlap {
        /// File path of the segment being loaded.
        path: String,
        /// Address space in which the overlap occurs: `"vaddr"` or `"paddr"`.
        space: &'static str,
        /// Address range (end exclusive) of the segment being loaded.
        range: std::ops::Range<u64>,
        /// File path of the other segment (equal to `path` for an overlap within one file).
        other_path: String,
        /// Address range (end exclusive) of the other segment.
        other_range: std::ops::Range<u64>,
    },
    /// Some other structural problem (bad header entry size, address range wrap-around,
    /// implausibly large segment, bad section link...).
    Malformed {
        /// File path.
        path: String,
        /// One-line description.
        detail: String,
    },
}

impl ImageError {
    /// The path (or name) of the file the error is about.
    pub fn path(&self) -> &str {
        match self {
            ImageError::Io { path, .. }
            | ImageError::NotElf { path, .. }
            | ImageError::NotRiscv { path, .. }
            | ImageError::UnsupportedClass { path, .. }
            | ImageError::UnsupportedEncoding { path, .. }
            | ImageError::Truncated { path, .. }
            | ImageError::FileszExceedsMemsz { path, .. }
            | ImageError::Overlap { path, .. }
            | ImageError::Malformed { path, .. } => path,
        }
    }
}

fn machine_name(m: u16) -> Option<&'static str> {
    Some(match m {
        0 => "none",
        3 => "x86",
        8 => "MIPS",
        20 => "PowerPC",
        21 => "PowerPC64",
        40 => "ARM",
        62 => "x86-64",
        183 => "AArch64",
        258 => "LoongArch",
        _ => return None,
    })
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Io { path, error } => write!(f, "{path}: cannot read file: {error}"),
            ImageError::NotElf { path, found } => {
                if found.is_empty() {
                    write!(f, "{path}: not an ELF file (file is empty)")
                } else {
                    write!(f, "{path}: not an ELF file (bad magic")?;
                    for b in found {
                        write!(f, " {b:02x}")?;
                    }
                    write!(f, ", expected 7f 45 4c 46)")
                }
            }
            ImageError::NotRiscv { path, machine } => {
                write!(f, "{path}: not a RISC-V ELF file (e_machine {machine}")?;
                if let Some(name) = machine_name(*machine) {
                    write!(f, " = {name}")?;
                }
                write!(f, ", expected 243 = RISC-V)")
            }
            ImageError::UnsupportedClass { path, class } => write!(
                f,
                "{path}: unsupported ELF class {class} (expected 1 = ELF32 or 2 = ELF64)"
            ),
            ImageError::UnsupportedEncoding { path, data } => {
                let what = if *data == 2 { "big-endian" } else { "invalid" };
                write!(
                    f,
                    "{path}: unsupported ELF data encoding {data} ({what}); only little-endian is supported"
                )
            }
            ImageError::Truncated {
                path,
                what,
                offset,
                size,
                file_len,
            } => write!(
                f,
                "{path}: truncated ELF file: {what} (offset {offset:#x}, {size:#x} bytes) extends beyond end of file ({file_len:#x} bytes)"
            ),
            ImageError::FileszExceedsMemsz {
                path,
                phdr,
                filesz,
                memsz,
            } => write!(
                f,
                "{path}: program header {phdr}: p_filesz {filesz:#x} is larger than p_memsz {memsz:#x}"
            ),
            ImageError::Overlap {
                path,
                space,
                range,
                other_path,
                other_range,
            } => {
                write!(
                    f,
                    "{path}: segment {space} {:#x}..{:#x} overlaps segment {space} {:#x}..{:#x} ",
                    range.start, range.end, other_range.start, other_range.end
                )?;
                if other_path == path {
                    write!(f, "in the same file")
                } else {
                    write!(f, "loaded from {other_path}")
                }
            }
            ImageError::Malformed { path, detail } => {
                write!(f, "{path}: malformed ELF file: {detail}")
            }
        }
    }
}

impl std::error::Error for ImageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ImageError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}
