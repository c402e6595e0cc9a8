//! Functions and source lines of a program, read from its ELF symbol table and DWARF line tables
//! with the `object` and `addr2line` (gimli) crates. The block table of `rvtrace-image` stays
//! what decoders walk; this is what people read.

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolKind};
use std::borrow::Cow;
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

/// The functions and line tables of one program.
pub struct Symbols {
    functions: Vec<Function>,
    dwarf: Option<addr2line::Context<Reader>>,
    first_load: Option<u64>,
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
        let dwarf = load_dwarf(&file)?;
        Ok(Symbols {
            functions,
            dwarf,
            first_load,
        })
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
            dwarf: None,
            first_load: None,
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
        self.dwarf.is_some()
    }

    /// The virtual address of the first `PT_LOAD` segment (what AutoFDO subtracts).
    pub fn first_load_vaddr(&self) -> Option<u64> {
        self.first_load
    }

    /// The source line of the instruction at `addr`.
    pub fn line_at(&self, addr: u64) -> Option<Line> {
        let loc = self.dwarf.as_ref()?.find_location(addr).ok()??;
        Some(Line {
            file: loc.file?.to_string(),
            line: loc.line?,
        })
    }

    /// The line table rows covering `[start, end)`: (address, length in bytes, line).
    pub fn lines_in(&self, start: u64, end: u64) -> Vec<(u64, u64, Line)> {
        let Some(ctx) = &self.dwarf else {
            return Vec::new();
        };
        let Ok(iter) = ctx.find_location_range(start, end) else {
            return Vec::new();
        };
        iter.filter_map(|(a, len, loc)| {
            Some((
                a,
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
}
