//! Functions and source lines of a program, read from its ELF symbol table and DWARF line tables
//! with the `object` and `addr2line` (gimli) crates. The block table of `rvtrace-image` stays
//! what decoders walk; this is what people read.

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolKind};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// A function: a name and its address range `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Symbol name.
    pub name: String,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// A source position.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Line {
    /// Source file path as the line table names it (directory joined).
    pub file: String,
    /// 1-based line number.
    pub line: u32,
}

/// One frame of the inline chain at an address ([`Symbols::frames_at`]), as `addr2line -i -f`
/// prints it: a function and the source position in it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceFrame {
    /// The function's name in the DWARF (demangled; a clone's name is its origin's).
    pub function: String,
    /// The same name as the DWARF has it (a linkage name is not demangled): what compilers
    /// match profiles by.
    pub raw_name: String,
    /// The line of the function's declaration (`DW_AT_decl_line`, from the frame's DIE or its
    /// abstract origin): the line LLVM's sample profiles count line offsets from.
    pub decl_line: Option<u32>,
    /// Where in it: the instruction's position (innermost frame), or the position of the call
    /// inlined into it (the frames around).
    pub line: Option<Line>,
}

/// The functions and line tables of a program: of one ELF file, or of several files merged
/// ([`Symbols::merge`]), each file's DWARF at the load bias it was moved by ([`Symbols::moved`]).
pub struct Symbols {
    functions: Vec<Function>,
    dwarf: Vec<Dwarf>,
    first_load: Option<u64>,
}

/// The DWARF of one file: its line tables give linked addresses; the code is `bias` bytes
/// from there. `ranges`: the linked address ranges of its loadable segments, which tell the
/// files of merged symbols apart.
#[derive(Clone)]
struct Dwarf {
    /// Shared by the symbols merged from these (addr2line's context is not `Sync`: symbols
    /// are per thread).
    ctx: std::rc::Rc<addr2line::Context<Reader>>,
    bias: u64,
    ranges: Vec<(u64, u64)>,
}

/// Name of the pseudo-function for addresses outside every known function.
pub const UNKNOWN: &str = "[unknown]";

impl Symbols {
    /// Reads the ELF file at `path`.
    pub fn load(path: &Path) -> Result<Symbols, SymbolsError> {
        let file = |e| SymbolsError::File(path.to_path_buf(), Box::new(e));
        let data = std::fs::read(path).map_err(|e| file(SymbolsError::Read(e)))?;
        Symbols::from_elf(&data).map_err(file)
    }

    /// Reads an ELF image. Functions are the symbol table's sized `FUNC` symbols; a gap in
    /// executable sections that begins at an unsized symbol (a label of hand-written assembly)
    /// is a function up to the next symbol. Line tables are read when the file has DWARF.
    pub fn from_elf(data: &[u8]) -> Result<Symbols, SymbolsError> {
        let file = object::File::parse(data).map_err(SymbolsError::NotElf)?;
        let first_load = file.segments().map(|s| s.address()).next();
        let mut sized: Vec<(u64, u64, String, bool)> = Vec::new();
        let mut labels: Vec<(u64, String)> = Vec::new();
        let mut text: Vec<(u64, u64)> = Vec::new();
        for s in file.sections() {
            if s.kind() == SectionKind::Text {
                text.push((s.address(), s.address().saturating_add(s.size())));
            }
        }
        for sym in file.symbols() {
            let Ok(name) = sym.name() else { continue };
            // RISC-V mapping symbols ($x, $d) and assembler-local labels are not functions.
            if name.is_empty()
                || name.starts_with('$')
                || name.starts_with(".L")
                || sym.is_undefined()
            {
                continue;
            }
            let a = sym.address();
            let in_text = text.iter().any(|&(lo, hi)| a >= lo && a < hi);
            if sym.kind() == SymbolKind::Text && sym.size() > 0 {
                sized.push((
                    a,
                    a.saturating_add(sym.size()),
                    name.to_string(),
                    sym.is_global(),
                ));
            } else if in_text && matches!(sym.kind(), SymbolKind::Text | SymbolKind::Unknown) {
                labels.push((a, name.to_string()));
            }
        }
        // Aliases (one address, several names): the global one, then the first by name.
        sized.sort_by(|a, b| a.0.cmp(&b.0).then(b.3.cmp(&a.3)).then(a.2.cmp(&b.2)));
        let mut functions: Vec<Function> = Vec::new();
        for (start, end, name, _) in sized {
            if functions.last().is_some_and(|f| start < f.end) {
                continue; // an alias or a symbol inside the previous function
            }
            functions.push(Function { name, start, end });
        }
        labels.sort();
        labels.dedup_by_key(|l| l.0);
        let mut extra = Vec::new();
        for (k, (a, name)) in labels.iter().enumerate() {
            let covered = match functions.partition_point(|f| f.start <= *a) {
                0 => false,
                i => *a < functions[i - 1].end,
            };
            if covered {
                continue;
            }
            let next_fn = functions
                .get(functions.partition_point(|f| f.start <= *a))
                .map(|f| f.start);
            let next_label = labels.get(k + 1).map(|l| l.0);
            let sect_end = text
                .iter()
                .find(|&&(lo, hi)| *a >= lo && *a < hi)
                .map(|s| s.1);
            let end = [next_fn, next_label, sect_end].into_iter().flatten().min();
            if let Some(end) = end.filter(|&e| e > *a) {
                extra.push(Function {
                    name: name.clone(),
                    start: *a,
                    end,
                });
            }
        }
        functions.extend(extra);
        functions.sort_by_key(|f| f.start);
        let ranges = file
            .segments()
            .map(|s| (s.address(), s.address().saturating_add(s.size())))
            .collect();
        let dwarf = load_dwarf(&file)?
            .map(|ctx| Dwarf {
                ctx: std::rc::Rc::new(ctx),
                bias: 0,
                ranges,
            })
            .into_iter()
            .collect();
        Ok(Symbols {
            functions,
            dwarf,
            first_load,
        })
    }

    /// [`Symbols::from_elf`] of the ELF file at `path` (its bytes `data`), with the line tables
    /// of its debug file when it has none itself (a stripped program, its DWARF kept apart:
    /// [`debug_file`]); the functions are the debug file's when the file has no symbols.
    pub fn from_elf_or_debug(
        data: &[u8],
        path: &Path,
        debug_dirs: &[PathBuf],
    ) -> Result<Symbols, SymbolsError> {
        let mut s = Symbols::from_elf(data)?;
        if s.has_lines() {
            return Ok(s);
        }
        let Some(found) = debug_file(data, path, debug_dirs) else {
            return Ok(s);
        };
        let bytes = std::fs::read(&found)
            .map_err(|e| SymbolsError::File(found.clone(), Box::new(SymbolsError::Read(e))))?;
        let d = Symbols::from_elf(&bytes)
            .map_err(|e| SymbolsError::File(found.clone(), Box::new(e)))?;
        s.dwarf = d.dwarf;
        if s.functions.is_empty() {
            s.functions = d.functions;
        }
        Ok(s)
    }

    /// Symbols from a list of functions (a stripped program whose function boundaries are known
    /// otherwise); no line tables. Functions are sorted; one that overlaps the previous is
    /// dropped.
    pub fn from_functions(mut list: Vec<Function>) -> Symbols {
        list.sort_by_key(|f| f.start);
        let mut functions: Vec<Function> = Vec::with_capacity(list.len());
        for f in list {
            if f.end > f.start && functions.last().is_none_or(|p| f.start >= p.end) {
                functions.push(f);
            }
        }
        Symbols {
            functions,
            dwarf: Vec::new(),
            first_load: None,
        }
    }

    /// The symbols of several files in one address space: every function (one that overlaps
    /// a function of an earlier file is dropped) and every file's line tables, each used for
    /// the addresses of its own segments. The first load address is the first file's.
    pub fn merge(all: impl IntoIterator<Item = Symbols>) -> Symbols {
        let mut functions = Vec::new();
        let mut dwarf = Vec::new();
        let mut first_load = None;
        for (k, s) in all.into_iter().enumerate() {
            if k == 0 {
                first_load = s.first_load;
            }
            functions.extend(s.functions);
            dwarf.extend(s.dwarf);
        }
        Symbols {
            dwarf,
            first_load,
            ..Symbols::from_functions(functions)
        }
    }

    /// A copy (the line tables shared).
    pub fn share(&self) -> Symbols {
        Symbols {
            functions: self.functions.clone(),
            dwarf: self.dwarf.clone(),
            first_load: self.first_load,
        }
    }

    /// The line tables for `addr`, and `addr` as they give it (linked): the only file's
    /// for a program of one file loaded where it was linked, else the file whose segments
    /// hold it.
    #[inline]
    fn dwarf_at(&self, addr: u64) -> Option<(&addr2line::Context<Reader>, u64, u64)> {
        match self.dwarf.as_slice() {
            [] => None,
            [d] if d.bias == 0 => Some((&d.ctx, addr, 0)),
            all => all.iter().find_map(|d| {
                let a = addr.wrapping_sub(d.bias);
                d.ranges
                    .iter()
                    .any(|&(lo, hi)| lo <= a && a < hi)
                    .then_some((&*d.ctx, a, d.bias))
            }),
        }
    }

    /// These symbols with the functions of `more` added (other files' code, without line
    /// tables); one that overlaps a function already known is dropped.
    pub fn with_functions(mut self, more: Vec<Function>) -> Symbols {
        if more.is_empty() {
            return self;
        }
        let mut all = std::mem::take(&mut self.functions);
        all.extend(more);
        self.functions = Symbols::from_functions(all).functions;
        self
    }

    /// These symbols for the program loaded `bias` bytes from where it was linked (wrapping:
    /// a negative bias is a large one): the functions moved, the line tables looked up `bias`
    /// bytes lower (they give linked addresses).
    pub fn moved(self, bias: u64) -> Symbols {
        if bias == 0 {
            return self;
        }
        let moved = self.functions.into_iter().map(|f| Function {
            start: f.start.wrapping_add(bias),
            end: f.end.wrapping_add(bias),
            ..f
        });
        let dwarf = self
            .dwarf
            .into_iter()
            .map(|d| Dwarf {
                bias: d.bias.wrapping_add(bias),
                ..d
            })
            .collect();
        Symbols {
            dwarf,
            first_load: self.first_load.map(|a| a.wrapping_add(bias)),
            ..Symbols::from_functions(moved.collect())
        }
    }

    /// Every function, by address.
    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    /// Index (into [`Symbols::functions`]) of the function containing `addr`.
    pub fn function_index(&self, addr: u64) -> Option<usize> {
        let i = self.functions.partition_point(|f| f.start <= addr);
        (i > 0 && addr < self.functions[i - 1].end).then(|| i - 1)
    }

    /// The function containing `addr`.
    pub fn function_at(&self, addr: u64) -> Option<&Function> {
        self.function_index(addr).map(|i| &self.functions[i])
    }

    /// Name of the function containing `addr`, or [`UNKNOWN`].
    pub fn name_at(&self, addr: u64) -> &str {
        self.function_at(addr).map_or(UNKNOWN, |f| f.name.as_str())
    }

    /// Whether the file has DWARF line tables.
    pub fn has_lines(&self) -> bool {
        !self.dwarf.is_empty()
    }

    /// The virtual address of the first `PT_LOAD` segment (what AutoFDO subtracts).
    pub fn first_load_vaddr(&self) -> Option<u64> {
        self.first_load
    }

    /// The source line of the instruction at `addr`.
    pub fn line_at(&self, addr: u64) -> Option<Line> {
        let (ctx, addr, _) = self.dwarf_at(addr)?;
        let loc = ctx.find_location(addr).ok()??;
        Some(Line {
            file: loc.file?.to_string(),
            line: loc.line?,
        })
    }

    /// The functions at `addr`, innermost first, as `addr2line -i -f` names them (DWARF
    /// `DW_TAG_inlined_subroutine`s, then the function that holds the code): the innermost
    /// frame has the instruction's line, each other frame the line of the call that was inlined.
    /// A single frame where nothing is inlined; empty without DWARF for `addr`.
    pub fn frames_at(&self, addr: u64) -> Vec<SourceFrame> {
        let Some((ctx, addr, _)) = self.dwarf_at(addr) else {
            return Vec::new();
        };
        let Ok(mut iter) = ctx.find_frames(addr).skip_all_loads() else {
            return Vec::new();
        };
        let unit = ctx.find_dwarf_and_unit(addr).skip_all_loads();
        let mut v = Vec::new();
        while let Ok(Some(f)) = iter.next() {
            let raw_name = f
                .function
                .as_ref()
                .and_then(|n| n.raw_name().ok())
                .map_or_else(|| UNKNOWN.to_string(), |n| n.into_owned());
            let function = display_name(&raw_name).into_owned();
            let decl_line = unit.zip(f.dw_die_offset).and_then(|(u, o)| decl_line(u, o));
            let line = f.location.and_then(|l| {
                Some(Line {
                    file: l.file?.to_string(),
                    line: l.line.filter(|&n| n > 0)?,
                })
            });
            v.push(SourceFrame {
                function,
                raw_name,
                decl_line,
                line,
            });
        }
        v
    }

    /// The line table's discriminators, looked up address by address ([`Discriminators::at`]).
    pub fn discriminators(&self) -> Discriminators<'_> {
        Discriminators {
            syms: self,
            units: HashMap::new(),
        }
    }

    /// The line table rows covering `[start, end)`: (address, length in bytes, line).
    pub fn lines_in(&self, start: u64, end: u64) -> Vec<(u64, u64, Line)> {
        let Some((ctx, linked, bias)) = self.dwarf_at(start) else {
            return Vec::new();
        };
        let Ok(iter) = ctx.find_location_range(linked, end.wrapping_sub(bias)) else {
            return Vec::new();
        };
        iter.filter_map(|(a, len, loc)| {
            Some((
                a.wrapping_add(bias),
                len,
                Line {
                    file: loc.file?.to_string(),
                    line: loc.line?,
                },
            ))
        })
        .filter(|(_, _, l)| l.line > 0)
        .collect()
    }
}

/// The line table's discriminators (DWARF 5 6.2.2: the block of a source line an instruction
/// belongs to, when a line has several), read with gimli (`addr2line` does not give them): each
/// compilation unit's line program is run once, when an address of it is first asked for, and
/// kept ([`Symbols::discriminators`]).
pub struct Discriminators<'a> {
    syms: &'a Symbols,
    /// A unit's line sequences (by its file's line tables and the unit's offset in
    /// `.debug_info`): `[start, end)` and its rows (address, discriminator), by linked address.
    units: HashMap<(usize, usize), Vec<LineSequence>>,
}

impl Discriminators<'_> {
    /// The discriminator of the row that holds `addr` (0: none, or no DWARF for `addr`). Of
    /// several rows at one address the last counts, as `addr2line` takes its line from it.
    pub fn at(&mut self, addr: u64) -> u32 {
        let Some((ctx, addr, _)) = self.syms.dwarf_at(addr) else {
            return 0;
        };
        let Some(unit) = ctx.find_dwarf_and_unit(addr).skip_all_loads() else {
            return 0;
        };
        let key = (
            ctx as *const _ as usize,
            match unit.unit.header.offset() {
                gimli::UnitSectionOffset::DebugInfoOffset(o) => o.0,
                gimli::UnitSectionOffset::DebugTypesOffset(o) => o.0,
            },
        );
        let seqs = self
            .units
            .entry(key)
            .or_insert_with(|| line_discriminators(unit).unwrap_or_default());
        seqs.iter()
            .find(|s| s.0 <= addr && addr < s.1)
            .and_then(|s| {
                let i = s.2.partition_point(|r| r.0 <= addr);
                i.checked_sub(1).map(|i| s.2[i].1)
            })
            .unwrap_or(0)
    }
}

/// A sequence of a line program: `[start, end)` and its (address, discriminator) rows.
type LineSequence = (u64, u64, Vec<(u64, u32)>);

/// The sequences of a unit's line program.
fn line_discriminators(unit: gimli::UnitRef<Reader>) -> Option<Vec<LineSequence>> {
    let mut rows = unit.unit.line_program.clone()?.rows();
    let mut seqs = Vec::new();
    let mut cur: Vec<(u64, u32)> = Vec::new();
    while let Some((_, row)) = rows.next_row().ok()? {
        if row.end_sequence() {
            if let Some(&(start, _)) = cur.first() {
                seqs.push((start, row.address(), std::mem::take(&mut cur)));
            }
            continue;
        }
        let d = u32::try_from(row.discriminator()).unwrap_or(0);
        match cur.last_mut() {
            Some(last) if last.0 == row.address() => last.1 = d,
            _ => cur.push((row.address(), d)),
        }
    }
    Some(seqs)
}

/// `DW_AT_decl_line` of the DIE at `offset`, or of what it stands for: an inlined or
/// out-of-line instance names its function by `DW_AT_abstract_origin`, a definition its
/// declaration by `DW_AT_specification` (references within the unit; a few hops at most).
fn decl_line(unit: gimli::UnitRef<Reader>, mut offset: gimli::UnitOffset<usize>) -> Option<u32> {
    for _ in 0..4 {
        let e = unit.entry(offset).ok()?;
        if let Some(l) = e.attr_value(gimli::DW_AT_decl_line).ok()? {
            return l.udata_value().and_then(|n| u32::try_from(n).ok());
        }
        let next = e
            .attr_value(gimli::DW_AT_abstract_origin)
            .ok()?
            .or(e.attr_value(gimli::DW_AT_specification).ok()?)?;
        match next {
            gimli::AttributeValue::UnitRef(o) => offset = o,
            _ => return None,
        }
    }
    None
}

/// GCC's clone suffixes: `f.constprop.0`, `f.isra.0`, `f.part.0`, `f.cold`, and their
/// combinations are clones (specialised, split or moved copies) of `f`.
const CLONE_SUFFIXES: [&str; 7] = [
    "constprop",
    "isra",
    "part",
    "cold",
    "clone",
    "lto_priv",
    "localalias",
];

/// `name` without a GCC clone suffix (`quick_sort.constprop.0` -> `quick_sort`): the name of
/// the function it is a copy of. A name whose dotted tail is not made of clone suffixes and
/// their numbers is returned whole.
pub fn clone_origin(name: &str) -> &str {
    let Some((head, tail)) = name.split_once('.') else {
        return name;
    };
    let clone = !head.is_empty()
        && tail.split('.').any(|p| CLONE_SUFFIXES.contains(&p))
        && tail.split('.').all(|p| {
            CLONE_SUFFIXES.contains(&p) || !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())
        });
    if clone {
        head
    } else {
        name
    }
}

/// A function name for people: the clone's origin ([`clone_origin`]), demangled (C++ and Rust,
/// as `c++filt` and `addr2line -C` do; other names stay as they are).
pub fn display_name(name: &str) -> Cow<'_, str> {
    let name = clone_origin(name);
    // Only mangled names: a demangler reads a plain C name such as `f` as a type (`float`).
    if name.starts_with("_Z") || name.starts_with("_R") {
        addr2line::demangle_auto(Cow::Borrowed(name), None)
    } else {
        Cow::Borrowed(name)
    }
}

fn load_dwarf(file: &object::File) -> Result<Option<addr2line::Context<Reader>>, SymbolsError> {
    if file.section_by_name(".debug_line").is_none() {
        return Ok(None);
    }
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<Reader, SymbolsError> {
        let data: Cow<[u8]> = match file.section_by_name(id.name()) {
            Some(s) => s
                .uncompressed_data()
                .map_err(|e| SymbolsError::Section(id.name(), e))?,
            None => Cow::Borrowed(&[]),
        };
        Ok(gimli::EndianArcSlice::new(Arc::from(&*data), endian))
    };
    let dwarf = gimli::Dwarf::load(load)?;
    addr2line::Context::from_dwarf(dwarf)
        .map(Some)
        .map_err(SymbolsError::Dwarf)
}

/// The debug file of the ELF file at `path` (its bytes `data`), where gdb looks for it: by
/// its build ID (`NT_GNU_BUILD_ID`) in each of `debug_dirs` at `.build-id/xx/rest.debug`
/// (the ID's first byte, then the rest, in hex), whose own build ID must be the same; by the
/// name its `.gnu_debuglink` section gives, beside the file, in its `.debug` directory and
/// in each of `debug_dirs`, whose CRC-32 must be the section's. `None`: not found.
pub fn debug_file(data: &[u8], path: &Path, debug_dirs: &[PathBuf]) -> Option<PathBuf> {
    let file = object::File::parse(data).ok()?;
    if let Some(id) = file.build_id().ok().flatten().filter(|id| id.len() > 1) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        for dir in debug_dirs {
            let p = dir
                .join(".build-id")
                .join(&hex[..2])
                .join(format!("{}.debug", &hex[2..]));
            let same = std::fs::read(&p).ok().is_some_and(|b| {
                object::File::parse(&*b)
                    .ok()
                    .and_then(|f| f.build_id().ok().flatten().map(|o| o == id))
                    == Some(true)
            });
            if same {
                return Some(p);
            }
        }
    }
    let (name, crc) = file.gnu_debuglink().ok().flatten()?;
    let name = Path::new(std::str::from_utf8(name).ok()?);
    let here = path.parent().unwrap_or(Path::new("."));
    let mut candidates = vec![here.join(name), here.join(".debug").join(name)];
    candidates.extend(debug_dirs.iter().map(|d| d.join(name)));
    candidates
        .into_iter()
        .find(|p| std::fs::read(p).is_ok_and(|b| crc32fast::hash(&b) == crc) && p.as_path() != path)
}

/// Why [`Symbols::load`] or [`Symbols::from_elf`] could not read a program.
#[derive(Debug)]
#[non_exhaustive]
pub enum SymbolsError {
    /// The file could not be read.
    Read(std::io::Error),
    /// The data are not an ELF file the `object` crate reads.
    NotElf(object::Error),
    /// This DWARF section could not be read (e.g. not decompressed).
    Section(&'static str, object::Error),
    /// The DWARF data are malformed.
    Dwarf(gimli::Error),
    /// The error of the file at this path ([`Symbols::load`]).
    File(PathBuf, Box<SymbolsError>),
}

impl fmt::Display for SymbolsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SymbolsError::Read(e) => e.fmt(f),
            SymbolsError::NotElf(e) => write!(f, "not a readable ELF file: {e}"),
            SymbolsError::Section(name, e) => write!(f, "{name}: {e}"),
            SymbolsError::Dwarf(e) => write!(f, "DWARF: {e}"),
            SymbolsError::File(path, e) => write!(f, "{}: {e}", path.display()),
        }
    }
}

impl std::error::Error for SymbolsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SymbolsError::Read(e) => Some(e),
            SymbolsError::NotElf(e) | SymbolsError::Section(_, e) => Some(e),
            SymbolsError::Dwarf(e) => Some(e),
            SymbolsError::File(_, e) => Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_what_is_wrong() {
        let e = Symbols::from_elf(b"not an ELF").err().unwrap();
        assert!(matches!(e, SymbolsError::NotElf(_)));
        assert!(
            e.to_string().starts_with("not a readable ELF file: "),
            "{e}"
        );
        let path = Path::new("/nonexistent/prog.elf");
        let e = Symbols::load(path).err().unwrap();
        let io = std::fs::read(path).unwrap_err();
        assert_eq!(e.to_string(), format!("/nonexistent/prog.elf: {io}"));
        assert!(matches!(&e, SymbolsError::File(p, inner)
            if p == path && matches!(**inner, SymbolsError::Read(_))));
    }

    /// GCC's clone names (gcc/cgraphclones.cc `clone_function_name`: NAME.SUFFIX.NUMBER, the
    /// suffixes of its callers) name their origin; other dotted names are left alone; C++
    /// names are demangled as `c++filt` prints them.
    #[test]
    fn clone_suffixes_and_demangling() {
        for (raw, want) in [
            ("quick_sort.constprop.0", "quick_sort"),
            ("f.isra.0", "f"),
            ("f", "f"),
            ("d", "d"),
            ("f.part.3", "f"),
            ("f.cold", "f"),
            ("f.constprop.0.isra.0", "f"),
            ("f.part.0.cold", "f"),
            ("main", "main"),
            ("f.1234", "f.1234"),
            ("f.constprop.x", "f.constprop.x"),
            (".cold", ".cold"),
            ("_Z4sortPii", "sort(int*, int)"),
            ("_Z4sortPii.constprop.0", "sort(int*, int)"),
        ] {
            assert_eq!(display_name(raw), want, "{raw}");
        }
    }
}
