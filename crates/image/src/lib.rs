//! Program image: the loadable contents and symbols of one or more RISC-V ELF files.
//!
//! [`Image`] loads ELF32/ELF64 little-endian RISC-V executables (several may be loaded into the
//! same image, e.g. firmware plus payload), keeps their `PT_LOAD` segments and `.symtab` symbols,
//! and answers reads by virtual address. It serves two clients:
//!
//! * the hart model, which initialises RAM from [`Image::segments`] the way QEMU's `-kernel`
//!   does: each segment is placed at its **physical** address [`Segment::paddr`], and
//!   [`Segment::data`] is already `p_memsz` long, zero-filled past `p_filesz`;
//! * trace decoders, which read instructions by **virtual** address with [`Image::fetch`] /
//!   [`Image::read_u16`], millions of times per second. Those lookups remember the last segment
//!   hit, so consecutive fetches from the same segment cost one range compare; otherwise a binary
//!   search over the segments sorted by address is done.
//!
//! [`code::Code`] classifies the executable segments once for the decoders (block table).
//!
//! The ELF reader is self-contained and never panics, whatever the input.
//!
//! ```no_run
//! # fn main() -> Result<(), rvtrace_image::ImageError> {
//! let mut image = rvtrace_image::Image::new();
//! let entry = image.load_file(std::path::Path::new("prog.elf"))?.entry;
//! let insn = image.fetch(entry);
//! let main = image.symbol_by_name("main").map(|s| s.addr);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod code;
mod elf;
mod error;
pub mod space;
pub mod system;
pub mod write;

pub use error::ImageError;
pub use rvtrace_isa::Xlen;

/// The contents of the section named `name` (such as `.comment`) of the ELF file `bytes`, if it
/// has one; `None` also for a file whose section headers do not read.
pub fn elf_section<'a>(bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
    elf::section(bytes, name)
}

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Upper bound on the sum of `p_memsz` of the loadable segments of one file (1 GiB).
///
/// Segment data is held in memory, so larger (usually corrupt) files are rejected with
/// [`ImageError::Malformed`] instead of exhausting memory.
pub const MAX_LOAD_BYTES: u64 = 1 << 30;

/// Segment permission flag `PF_X` (executable).
pub const PF_X: u32 = 1;
/// Segment permission flag `PF_W` (writable).
pub const PF_W: u32 = 2;
/// Segment permission flag `PF_R` (readable).
pub const PF_R: u32 = 4;

/// `e_flags` bit: the file uses compressed (RVC) instructions.
pub const EF_RISCV_RVC: u32 = 0x1;
/// `e_flags` mask of the floating-point ABI field (see [`FloatAbi`]).
pub const EF_RISCV_FLOAT_ABI: u32 = 0x6;
/// `e_flags` bit: the file uses the RV32E/RV64E ABI.
pub const EF_RISCV_RVE: u32 = 0x8;

/// One loaded `PT_LOAD` segment (segments with `p_memsz == 0` are not kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Virtual address (`p_vaddr`): where the program sees it, and what [`Image::read`] uses.
    pub vaddr: u64,
    /// Physical / load address (`p_paddr`): where a loader (QEMU `-kernel`) places the bytes.
    pub paddr: u64,
    /// Contents; `len() == p_memsz`, bytes past `p_filesz` are zero.
    pub data: Vec<u8>,
    /// `p_flags`: [`PF_X`] | [`PF_W`] | [`PF_R`].
    pub flags: u32,
    /// Index into [`Image::files`] of the file this segment came from.
    pub file_index: usize,
}

impl Segment {
    /// Virtual address range, end exclusive.
    pub fn vaddr_range(&self) -> Range<u64> {
        self.vaddr..self.vaddr + self.data.len() as u64
    }

    /// Physical address range, end exclusive.
    pub fn paddr_range(&self) -> Range<u64> {
        self.paddr..self.paddr + self.data.len() as u64
    }

    /// Whether the segment is executable ([`PF_X`]).
    pub fn is_executable(&self) -> bool {
        self.flags & PF_X != 0
    }
}

/// Kind of a [`Symbol`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    /// `STT_FUNC` (or `STT_GNU_IFUNC`).
    Func,
    /// `STT_OBJECT` (or `STT_COMMON`).
    Object,
    /// `STT_NOTYPE`: labels, linker-script symbols.
    Other,
}

/// A named symbol from a `.symtab` (or, for a file without one, `.dynsym`).
///
/// Section and file symbols, undefined symbols, TLS symbols, RISC-V mapping symbols
/// (`$x`, `$d`, `$x<isa>`) and assembler temporaries (`.L...`) are not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Symbol name.
    pub name: String,
    /// Value (`st_value`): the address, or a constant for absolute (`SHN_ABS`) symbols.
    pub addr: u64,
    /// Size in bytes (`st_size`), 0 if unknown.
    pub size: u64,
    /// Kind.
    pub kind: SymbolKind,
}

/// Floating-point calling convention from `e_flags` bits 1-2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FloatAbi {
    /// Soft-float: FP arguments in integer registers.
    Soft,
    /// Single-precision hard-float.
    Single,
    /// Double-precision hard-float.
    Double,
    /// Quad-precision hard-float.
    Quad,
}

/// What was learned about one loaded ELF file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfInfo {
    /// Path as given to [`Image::load_file`], or the name given to [`Image::load_bytes`].
    pub path: String,
    /// Entry point (`e_entry`).
    pub entry: u64,
    /// XLEN from the ELF class (ELF32 = RV32, ELF64 = RV64).
    pub xlen: Xlen,
    /// `e_flags`: [`EF_RISCV_RVC`], float ABI ([`EF_RISCV_FLOAT_ABI`]), [`EF_RISCV_RVE`].
    pub flags: u32,
    /// This file's segments: indices into [`Image::segments`] (sorted by `vaddr` within the
    /// range). Stays valid when more files are loaded.
    pub segments: Range<usize>,
}

impl ElfInfo {
    /// Whether `e_flags` has [`EF_RISCV_RVC`].
    pub fn has_rvc(&self) -> bool {
        self.flags & EF_RISCV_RVC != 0
    }

    /// Whether `e_flags` has [`EF_RISCV_RVE`].
    pub fn is_rve(&self) -> bool {
        self.flags & EF_RISCV_RVE != 0
    }

    /// Floating-point ABI from `e_flags`.
    pub fn float_abi(&self) -> FloatAbi {
        match (self.flags & EF_RISCV_FLOAT_ABI) >> 1 {
            0 => FloatAbi::Soft,
            1 => FloatAbi::Single,
            2 => FloatAbi::Double,
            _ => FloatAbi::Quad,
        }
    }
}

/// A segment's virtual range, in the lookup index sorted by `start`.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: u64,
    len: u64,
    seg: usize,
}

/// Private per-symbol facts used for ordering and lookup (parallel to `Image::symbols`).
#[derive(Debug, Clone, Copy)]
struct SymMeta {
    abs: bool,
    global: bool,
    file: usize,
}

fn kind_rank(k: SymbolKind) -> u8 {
    match k {
        SymbolKind::Func => 0,
        SymbolKind::Object => 1,
        SymbolKind::Other => 2,
    }
}

/// One file of an image as named on a command line (`--image FILE[@ADDR][,priv=P][,ctx=N]`):
/// an ELF file, moved by `at` as a load bias when given ([`Image::load_bytes_at`]), or a raw
/// binary placed at `at` ([`Image::load_raw`]; it needs the address). Which one the file is, its
/// first bytes say ([`ImageSpec::is_elf`]). `scope` says in which address spaces the file's
/// code is ([`space`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSpec {
    /// The file.
    pub path: std::path::PathBuf,
    /// The load bias of an ELF file, the address of a raw one.
    pub at: Option<u64>,
    /// The privilege and context the file's code runs in (none: every space).
    pub scope: space::Scope,
    /// What the file is.
    pub kind: SpecKind,
}

/// What an [`ImageSpec`]'s file is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SpecKind {
    /// An ELF file, an ELF core file or a raw binary (its first bytes say which).
    #[default]
    Code,
    /// A process's `/proc/PID/maps` (`maps:FILE`): the files it lists, each at the load bias it
    /// was mapped with ([`system::parse_maps`]).
    Maps,
    /// A directory of memory pages (`pages:DIR`: one raw file per page, named by its address
    /// as `kmem.0x<ADDR>`, SiFive's decoder's `kmempath`): each page at its address
    /// ([`system::page_files`]).
    Pages,
    /// A kernel's symbols (`kallsyms:FILE[@OFFSET]`: `/proc/kallsyms` or a `System.map`,
    /// moved by OFFSET, the KASLR offset, for a `System.map`): names, no code
    /// ([`system::parse_kallsyms`]).
    Kallsyms,
}

impl std::str::FromStr for ImageSpec {
    type Err = String;

    /// `FILE`, `FILE@ADDR`, `maps:FILE`, `pages:DIR` or `kallsyms:FILE[@OFFSET]`, each followed by any of `,priv=m|s|u` and
    /// `,ctx=N`; ADDR and N hex with `0x` or decimal. A file whose name has an `@` not followed
    /// by a number is taken whole, and so is a `,` not followed by one of the two qualifiers.
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, mut rest) = if let Some(r) = s.strip_prefix("maps:") {
            (SpecKind::Maps, r)
        } else if let Some(r) = s.strip_prefix("kallsyms:") {
            (SpecKind::Kallsyms, r)
        } else if let Some(r) = s.strip_prefix("pages:") {
            (SpecKind::Pages, r)
        } else {
            (SpecKind::Code, s)
        };
        let mut scope = space::Scope::default();
        while let Some((head, q)) = rest.rsplit_once(',') {
            let Some((key, value)) = q.split_once('=') else {
                break;
            };
            match key {
                "priv" => {
                    if scope.privilege.is_some() {
                        return Err(format!("{s}: priv= is given twice"));
                    }
                    scope.privilege = Some(value.parse().map_err(|e| format!("{s}: {e}"))?);
                }
                "ctx" => {
                    if scope.context.is_some() {
                        return Err(format!("{s}: ctx= is given twice"));
                    }
                    scope.context = Some(parse_number(value).ok_or_else(|| {
                        format!("{s}: ctx={value:?} is not a number (hex with 0x, or decimal)")
                    })?);
                }
                _ => break,
            }
            rest = head;
        }
        if rest.is_empty() {
            return Err(format!("{s}: empty image file name"));
        }
        if matches!(kind, SpecKind::Maps | SpecKind::Pages) {
            return Ok(ImageSpec {
                path: rest.into(),
                at: None,
                scope,
                kind,
            });
        }
        let (path, at) = match rest.rsplit_once('@') {
            Some((path, addr)) if !path.is_empty() && parse_number(addr).is_some() => {
                (path, parse_number(addr))
            }
            Some((path, addr))
                if !path.is_empty() && addr.starts_with(|c: char| c.is_ascii_digit()) =>
            {
                return Err(format!(
                    "{s}: {addr:?} is not an address (hex with 0x, or decimal)"
                ));
            }
            _ => (rest, None),
        };
        Ok(ImageSpec {
            path: path.into(),
            at,
            scope,
            kind,
        })
    }
}

/// A number as command lines write addresses: hex with `0x`, or decimal; `_` separators.
fn parse_number(t: &str) -> Option<u64> {
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16).ok(),
        None => t.replace('_', "").parse().ok(),
    }
}

impl ImageSpec {
    /// Whether the file is an ELF file (its first four bytes are the ELF magic).
    pub fn is_elf(bytes: &[u8]) -> bool {
        bytes.starts_with(b"\x7fELF")
    }
}

/// Loaded segments and symbols of one or more ELF files, with fast reads by virtual address.
///
/// `Image` is `Send + Sync`; the last-hit cache is a relaxed atomic, so sharing one image between
/// decoder threads is fine (each thread just may miss the cache more often).
#[derive(Debug, Default)]
pub struct Image {
    files: Vec<ElfInfo>,
    /// Grouped by file in load order, sorted by `vaddr` within a file.
    segments: Vec<Segment>,
    /// All segments sorted by `vaddr` (non-overlapping, but in an image for a hart's memory:
    /// [`Image::load_file_physical`]).
    index: Vec<Span>,
    /// Index into `index` of the last segment hit.
    last: AtomicUsize,
    /// Sorted by address, then preference (Func, Object, Other; non-absolute; global).
    symbols: Vec<Symbol>,
    sym_meta: Vec<SymMeta>,
    /// `max_end[i]`: greatest end address of a sized, non-absolute symbol among `symbols[..=i]`.
    max_end: Vec<u64>,
    /// Indices into `symbols`, sorted by name and then by preference for [`Image::symbol_by_name`].
    by_name: Vec<usize>,
}

impl Clone for Image {
    fn clone(&self) -> Self {
        Image {
            files: self.files.clone(),
            segments: self.segments.clone(),
            index: self.index.clone(),
            last: AtomicUsize::new(self.last.load(Ordering::Relaxed)),
            symbols: self.symbols.clone(),
            sym_meta: self.sym_meta.clone(),
            max_end: self.max_end.clone(),
            by_name: self.by_name.clone(),
        }
    }
}

impl Image {
    /// An empty image.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads and loads the ELF file at `path`. See [`Image::load_bytes`].
    pub fn load_file(&mut self, path: &Path) -> Result<&ElfInfo, ImageError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|error| ImageError::Io {
            path: name.clone(),
            error,
        })?;
        self.load_bytes(&name, &bytes)
    }

    /// Loads an ELF file held in memory; `name` identifies it in errors and [`ElfInfo::path`].
    ///
    /// Adds the file's non-empty `PT_LOAD` segments and its symbols to the image. Fails, leaving
    /// the image unchanged, if the file is malformed or if any of its segments overlaps (by
    /// virtual or by physical address) another segment of the same file or of a file already
    /// loaded.
    pub fn load_bytes(&mut self, name: &str, bytes: &[u8]) -> Result<&ElfInfo, ImageError> {
        self.load_bytes_at(name, bytes, 0)
    }

    /// [`Image::load_bytes`] with every address of the file moved by `bias` (wrapping): its
    /// segments (virtual and physical), entry point and symbols (absolute ones stay), as a
    /// loader places a position-independent program or shared library (`ET_DYN`, linked at 0)
    /// at a load bias, or an executable at another address than it was linked for.
    pub fn load_bytes_at(
        &mut self,
        name: &str,
        bytes: &[u8],
        bias: u64,
    ) -> Result<&ElfInfo, ImageError> {
        let mut parsed = elf::parse(name, bytes)?;
        if bias != 0 {
            for seg in &mut parsed.segments {
                seg.vaddr = seg.vaddr.wrapping_add(bias);
                seg.paddr = seg.paddr.wrapping_add(bias);
                if seg.vaddr.checked_add(seg.data.len() as u64).is_none() {
                    return Err(ImageError::Malformed {
                        path: name.to_string(),
                        detail: format!(
                            "a segment moved by the bias {bias:#x} wraps past the end of the \
                             address space"
                        ),
                    });
                }
            }
            parsed.entry = parsed.entry.wrapping_add(bias);
            for sym in parsed.symbols.iter_mut().filter(|s| !s.abs) {
                sym.addr = sym.addr.wrapping_add(bias);
            }
        }
        self.add(name, parsed)
    }

    /// Adds symbols without code (a kernel's `kallsyms`): listed in [`Image::files`] as `name`
    /// with no segments, entry 0 and flags 0; `xlen` is the program's.
    pub fn load_symbols(
        &mut self,
        name: &str,
        symbols: Vec<Symbol>,
        xlen: Xlen,
    ) -> Result<&ElfInfo, ImageError> {
        let parsed = elf::Parsed {
            entry: 0,
            xlen,
            flags: 0,
            segments: Vec::new(),
            symbols: symbols
                .into_iter()
                .map(|s| elf::RawSymbol {
                    name: s.name,
                    addr: s.addr,
                    size: s.size,
                    kind: s.kind,
                    abs: false,
                    global: true,
                })
                .collect(),
        };
        self.add(name, parsed)
    }

    /// Loads a raw binary (firmware `.bin`, a memory dump): `bytes` at address `addr`, virtual
    /// and physical, readable and executable, with no symbols; `xlen` is the hart's (a raw file
    /// does not say). It is listed in [`Image::files`] with `addr` as its entry point and flags
    /// 0. Fails, leaving the image unchanged, if it is empty, wraps past the end of the address
    /// space or overlaps a segment already loaded.
    pub fn load_raw(
        &mut self,
        name: &str,
        bytes: &[u8],
        addr: u64,
        xlen: Xlen,
    ) -> Result<&ElfInfo, ImageError> {
        let malformed = |detail: &str| ImageError::Malformed {
            path: name.to_string(),
            detail: detail.to_string(),
        };
        if bytes.is_empty() {
            return Err(malformed("the file is empty"));
        }
        if bytes.len() as u64 > MAX_LOAD_BYTES {
            return Err(malformed("larger than 1 GiB"));
        }
        if addr.checked_add(bytes.len() as u64).is_none() {
            return Err(malformed(
                "placed at that address it wraps past the end of the address space",
            ));
        }
        let parsed = elf::Parsed {
            entry: addr,
            xlen,
            flags: 0,
            segments: vec![Segment {
                vaddr: addr,
                paddr: addr,
                data: bytes.to_vec(),
                flags: PF_R | PF_X,
                file_index: 0,
            }],
            symbols: Vec::new(),
        };
        self.add(name, parsed)
    }

    /// Adds every file of `other` (segments, symbols, file list) as if it had been loaded here,
    /// checking overlaps by virtual address only: the image of an address space ([`space`]),
    /// whose files need not fit together in physical memory. Fails, leaving the image
    /// unchanged, if a segment overlaps one already here.
    pub fn add_image(&mut self, other: &Image) -> Result<(), ImageError> {
        let mut added = Image::clone(self);
        for (i, f) in other.files.iter().enumerate() {
            let symbols = other
                .symbols
                .iter()
                .zip(&other.sym_meta)
                .filter(|(_, m)| m.file == i)
                .map(|(s, m)| elf::RawSymbol {
                    name: s.name.clone(),
                    addr: s.addr,
                    size: s.size,
                    kind: s.kind,
                    abs: m.abs,
                    global: m.global,
                })
                .collect();
            let parsed = elf::Parsed {
                entry: f.entry,
                xlen: f.xlen,
                flags: f.flags,
                segments: other.segments[f.segments.clone()].to_vec(),
                symbols,
            };
            added.add_checked(&f.path, parsed, &["vaddr"])?;
        }
        *self = added;
        Ok(())
    }

    /// Reads and loads the ELF file at `path` for a loader: as [`Image::load_file`], but its
    /// segments are checked against the others by physical address only, so programs linked
    /// at the same virtual addresses (processes of their own address spaces, loaded into
    /// different pages) load together. Reads by virtual address are then ambiguous where they
    /// overlap: such an image is for a hart's memory, not for a trace decoder.
    pub fn load_file_physical(&mut self, path: &Path) -> Result<&ElfInfo, ImageError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|error| ImageError::Io {
            path: name.clone(),
            error,
        })?;
        let parsed = elf::parse(&name, &bytes)?;
        self.add_checked(&name, parsed, &["paddr"])
    }

    /// Adds a parsed file (see [`Image::load_bytes`]).
    fn add(&mut self, name: &str, parsed: elf::Parsed) -> Result<&ElfInfo, ImageError> {
        self.add_checked(name, parsed, &["vaddr", "paddr"])
    }

    /// [`Image::add`], checking overlaps in the address spaces `check` names.
    fn add_checked(
        &mut self,
        name: &str,
        parsed: elf::Parsed,
        check: &[&str],
    ) -> Result<&ElfInfo, ImageError> {
        for new in &parsed.segments {
            for old in &self.segments {
                for (space, a, b) in [
                    ("vaddr", new.vaddr_range(), old.vaddr_range()),
                    ("paddr", new.paddr_range(), old.paddr_range()),
                ] {
                    if !check.contains(&space) {
                        continue;
                    }
                    if a.start < b.end && b.start < a.end {
                        let other_path = self
                            .files
                            .get(old.file_index)
                            .map_or_else(String::new, |f| f.path.clone());
                        return Err(ImageError::Overlap {
                            path: name.to_string(),
                            space,
                            range: a,
                            other_path,
                            other_range: b,
                        });
                    }
                }
            }
        }

        let file_index = self.files.len();
        let first = self.segments.len();
        self.segments
            .extend(parsed.segments.into_iter().map(|mut s| {
                s.file_index = file_index;
                s
            }));
        self.files.push(ElfInfo {
            path: name.to_string(),
            entry: parsed.entry,
            xlen: parsed.xlen,
            flags: parsed.flags,
            segments: first..self.segments.len(),
        });
        self.rebuild_index();
        self.merge_symbols(file_index, parsed.symbols);
        Ok(&self.files[file_index])
    }

    fn rebuild_index(&mut self) {
        self.index = self
            .segments
            .iter()
            .enumerate()
            .map(|(seg, s)| Span {
                start: s.vaddr,
                len: s.data.len() as u64,
                seg,
            })
            .collect();
        self.index.sort_by_key(|s| s.start);
        self.last.store(0, Ordering::Relaxed);
    }

    fn merge_symbols(&mut self, file: usize, new: Vec<elf::RawSymbol>) {
        let mut all: Vec<(Symbol, SymMeta)> = std::mem::take(&mut self.symbols)
            .into_iter()
            .zip(std::mem::take(&mut self.sym_meta))
            .collect();
        all.extend(new.into_iter().map(|r| {
            (
                Symbol {
                    name: r.name,
                    addr: r.addr,
                    size: r.size,
                    kind: r.kind,
                },
                SymMeta {
                    abs: r.abs,
                    global: r.global,
                    file,
                },
            )
        }));
        let pref = |(s, m): &(Symbol, SymMeta)| (kind_rank(s.kind), m.abs, !m.global, m.file);

        // Dedupe: one entry per (name, address), the preferred one, with the largest size seen.
        all.sort_by(|a, b| {
            (a.0.addr, &a.0.name)
                .cmp(&(b.0.addr, &b.0.name))
                .then_with(|| pref(a).cmp(&pref(b)))
        });
        all.dedup_by(|later, kept| {
            let same = later.0.addr == kept.0.addr && later.0.name == kept.0.name;
            if same {
                kept.0.size = kept.0.size.max(later.0.size);
            }
            same
        });
        all.sort_by(|a, b| {
            (a.0.addr, pref(a))
                .cmp(&(b.0.addr, pref(b)))
                .then_with(|| a.0.name.cmp(&b.0.name))
        });

        let (symbols, meta): (Vec<_>, Vec<_>) = all.into_iter().unzip();
        self.symbols = symbols;
        self.sym_meta = meta;

        let mut max = 0u64;
        self.max_end = self
            .symbols
            .iter()
            .zip(&self.sym_meta)
            .map(|(s, m)| {
                if !m.abs && s.size > 0 {
                    max = max.max(s.addr.saturating_add(s.size));
                }
                max
            })
            .collect();

        let mut by_name: Vec<usize> = (0..self.symbols.len()).collect();
        let key = |i: usize| {
            let (s, m) = (&self.symbols[i], &self.sym_meta[i]);
            (&s.name, !m.global, m.abs, kind_rank(s.kind), m.file, s.addr)
        };
        by_name.sort_by(|&a, &b| key(a).cmp(&key(b)));
        self.by_name = by_name;
    }

    /// The loaded files, in load order.
    pub fn files(&self) -> &[ElfInfo] {
        &self.files
    }

    /// All loaded segments: grouped by file in load order (see [`ElfInfo::segments`]), sorted by
    /// `vaddr` within each file. No two segments overlap, by virtual or by physical address
    /// (by physical address only after [`Image::load_file_physical`]).
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// All symbols of all files, sorted by address (ties: Func, Object, Other; non-absolute
    /// before absolute; global before local; earlier file first).
    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }

    /// The symbol called `name`. If several files (or local symbols) share the name, prefers a
    /// global one, then a non-absolute one, then Func/Object over Other, then the earliest file.
    pub fn symbol_by_name(&self, name: &str) -> Option<&Symbol> {
        let i = self
            .by_name
            .partition_point(|&i| self.symbols[i].name.as_str() < name);
        let s = &self.symbols[*self.by_name.get(i)?];
        (s.name == name).then_some(s)
    }

    /// Symbolises `addr`: returns a symbol and `addr - symbol.addr`.
    ///
    /// The innermost sized symbol containing `addr` (`addr` in `addr..addr + size`) wins;
    /// otherwise the nearest symbol at or below `addr` — restricted to the same segment when
    /// `addr` is mapped. Absolute (`SHN_ABS`) symbols are constants and never returned here.
    pub fn symbol_at(&self, addr: u64) -> Option<(&Symbol, u64)> {
        let p = self.symbols.partition_point(|s| s.addr <= addr);
        let mut found: Option<usize> = None;
        for i in (0..p).rev() {
            let s = &self.symbols[i];
            match found {
                Some(j) if s.addr != self.symbols[j].addr => break,
                None if self.max_end[i] <= addr => break,
                _ => {}
            }
            if !self.sym_meta[i].abs && s.size > 0 && addr - s.addr < s.size {
                found = Some(i);
            }
        }
        if found.is_none() {
            let floor = self.segment_at(addr).map_or(0, |s| s.vaddr);
            for i in (0..p).rev() {
                let s = &self.symbols[i];
                if s.addr < floor {
                    break;
                }
                if let Some(j) = found {
                    if s.addr != self.symbols[j].addr {
                        break;
                    }
                }
                if !self.sym_meta[i].abs {
                    found = Some(i);
                }
            }
        }
        found.map(|i| {
            let s = &self.symbols[i];
            (s, addr - s.addr)
        })
    }

    /// The segment containing virtual address `vaddr`.
    pub fn segment_at(&self, vaddr: u64) -> Option<&Segment> {
        let span = self.span(vaddr)?;
        self.segments.get(span.seg)
    }

    /// The index entry containing `vaddr`, updating the last-hit cache.
    #[inline]
    fn span(&self, vaddr: u64) -> Option<&Span> {
        let last = self.last.load(Ordering::Relaxed);
        if let Some(sp) = self.index.get(last) {
            if vaddr.wrapping_sub(sp.start) < sp.len {
                return Some(sp);
            }
        }
        self.span_slow(vaddr)
    }

    #[cold]
    #[inline(never)]
    fn span_slow(&self, vaddr: u64) -> Option<&Span> {
        let i = self
            .index
            .partition_point(|s| s.start <= vaddr)
            .checked_sub(1)?;
        let sp = &self.index[i];
        if vaddr - sp.start < sp.len {
            self.last.store(i, Ordering::Relaxed);
            Some(sp)
        } else {
            None
        }
    }

    /// The mapped bytes from `vaddr` to the end of its segment (never empty).
    #[inline]
    fn tail(&self, vaddr: u64) -> Option<&[u8]> {
        let sp = self.span(vaddr)?;
        let off = usize::try_from(vaddr - sp.start).ok()?;
        self.segments.get(sp.seg)?.data.get(off..)
    }

    /// Copies `buf.len()` bytes starting at virtual address `vaddr` into `buf`; the range may
    /// span adjacent segments (of any files). Returns `false` if any byte is unmapped, in which
    /// case `buf`'s contents are unspecified.
    pub fn read(&self, vaddr: u64, buf: &mut [u8]) -> bool {
        let mut addr = vaddr;
        let mut rest = buf;
        while !rest.is_empty() {
            let Some(src) = self.tail(addr) else {
                return false;
            };
            let n = src.len().min(rest.len());
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(n);
            head.copy_from_slice(&src[..n]);
            rest = tail;
            match addr.checked_add(n as u64) {
                Some(a) => addr = a,
                None => return rest.is_empty(),
            }
        }
        true
    }

    /// The little-endian halfword at virtual address `vaddr` (no alignment needed).
    #[inline]
    pub fn read_u16(&self, vaddr: u64) -> Option<u16> {
        if let Some(h) = self.tail(vaddr).and_then(|t| t.first_chunk::<2>()) {
            return Some(u16::from_le_bytes(*h));
        }
        let mut b = [0u8; 2];
        self.read(vaddr, &mut b).then(|| u16::from_le_bytes(b))
    }

    /// The instruction at virtual address `vaddr`: a 16-bit parcel (zero-extended) if its bits
    /// `[1:0]` are not `0b11`, else the 32-bit instruction (both parcels must be mapped; they
    /// may lie in adjacent segments). `None` if unmapped.
    ///
    /// Instructions longer than 32 bits are not recognised: their first 32 bits are returned.
    #[inline]
    pub fn fetch(&self, vaddr: u64) -> Option<u32> {
        if let Some(w) = self.tail(vaddr).and_then(|t| t.first_chunk::<4>()) {
            let w = u32::from_le_bytes(*w);
            return Some(if w & 3 == 3 { w } else { w & 0xffff });
        }
        self.fetch_slow(vaddr)
    }

    #[cold]
    fn fetch_slow(&self, vaddr: u64) -> Option<u32> {
        let lo = u32::from(self.read_u16(vaddr)?);
        if lo & 3 != 3 {
            return Some(lo);
        }
        let hi = u32::from(self.read_u16(vaddr.checked_add(2)?)?);
        Some(lo | hi << 16)
    }
}
