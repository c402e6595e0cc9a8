//! Minimal, panic-free little-endian ELF32/ELF64 reader: just what the image needs
//! (header, `PT_LOAD` program headers, `.symtab` + linked string table).

use crate::{ImageError, Segment, SymbolKind, MAX_LOAD_BYTES};
use rvtrace_isa::Xlen;

const EM_RISCV: u16 = 243;
const PT_LOAD: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const SHN_UNDEF: u16 = 0;
const SHN_LORESERVE: u16 = 0xff00;
const SHN_ABS: u16 = 0xfff1;
const SHN_XINDEX: u16 = 0xffff;
const PN_XNUM: u16 = 0xffff;

/// A symbol as read from the file, before merging into the image.
#[derive(Debug, Clone)]
pub(crate) struct RawSymbol {
    pub name: String,
    pub addr: u64,
    pub size: u64,
    pub kind: SymbolKind,
    /// `st_shndx == SHN_ABS`: a constant rather than a location.
    pub abs: bool,
    /// `STB_GLOBAL` or `STB_WEAK`.
    pub global: bool,
}

/// Everything [`parse`] extracts from one file.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub entry: u64,
    pub xlen: Xlen,
    pub flags: u32,
    /// Loadable segments with `p_memsz > 0`, sorted by `vaddr`; `file_index` is 0.
    pub segments: Vec<Segment>,
    pub symbols: Vec<RawSymbol>,
}

/// Bounds-checked little-endian field reader over the whole file.
struct Reader<'a> {
    b: &'a [u8],
    is64: bool,
}

impl Reader<'_> {
    fn u8(&self, off: u64) -> Option<u8> {
        self.b.get(usize::try_from(off).ok()?).copied()
    }
    fn bytes<const N: usize>(&self, off: u64) -> Option<[u8; N]> {
        let start = usize::try_from(off).ok()?;
        let end = start.checked_add(N)?;
        self.b.get(start..end)?.first_chunk::<N>().copied()
    }
    fn u16(&self, off: u64) -> Option<u16> {
        self.bytes::<2>(off).map(u16::from_le_bytes)
    }
    fn u32(&self, off: u64) -> Option<u32> {
        self.bytes::<4>(off).map(u32::from_le_bytes)
    }
    fn u64(&self, off: u64) -> Option<u64> {
        self.bytes::<8>(off).map(u64::from_le_bytes)
    }
    /// An address/offset/size field: 4 bytes in ELF32, 8 in ELF64.
    fn word(&self, off: u64) -> Option<u64> {
        if self.is64 {
            self.u64(off)
        } else {
            self.u32(off).map(u64::from)
        }
    }
    /// The byte range `off..off+size` of the file, if it lies entirely inside it.
    fn slice(&self, off: u64, size: u64) -> Option<&[u8]> {
        let start = usize::try_from(off).ok()?;
        let len = usize::try_from(size).ok()?;
        self.b.get(start..start.checked_add(len)?)
    }
}

/// One section header, only the fields we use.
#[derive(Clone, Copy)]
struct Shdr {
    sh_type: u32,
    offset: u64,
    size: u64,
    link: u32,
    entsize: u64,
}

struct Ctx<'a> {
    path: &'a str,
    r: Reader<'a>,
}

impl Ctx<'_> {
    fn file_len(&self) -> u64 {
        self.r.b.len() as u64
    }

    fn truncated(&self, what: impl Into<String>, offset: u64, size: u64) -> ImageError {
        ImageError::Truncated {
            path: self.path.to_string(),
            what: what.into(),
            offset,
            size,
            file_len: self.file_len(),
        }
    }

    fn malformed(&self, detail: impl Into<String>) -> ImageError {
        ImageError::Malformed {
            path: self.path.to_string(),
            detail: detail.into(),
        }
    }

    /// Checks that a table of `num` entries of `entsize` bytes at `off` fits in the file.
    fn table(&self, what: &str, off: u64, num: u64, entsize: u64) -> Result<(), ImageError> {
        let size = num.saturating_mul(entsize);
        match off.checked_add(size) {
            Some(end) if end <= self.file_len() => Ok(()),
            _ => Err(self.truncated(what, off, size)),
        }
    }
}

/// Parses `bytes` (named `path` in errors) as a little-endian RISC-V ELF file.
pub(crate) fn parse(path: &str, bytes: &[u8]) -> Result<Parsed, ImageError> {
    // --- e_ident ---
    const MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
    let n = bytes.len().min(4);
    if bytes[..n] != MAGIC[..n] || bytes.is_empty() {
        return Err(ImageError::NotElf {
            path: path.to_string(),
            found: bytes[..n].to_vec(),
        });
    }
    let mut cx = Ctx {
        path,
        r: Reader {
            b: bytes,
            is64: false,
        },
    };
    let class =
        cx.r.u8(4)
            .ok_or_else(|| cx.truncated("ELF header", 0, 52))?;
    let is64 = match class {
        1 => false,
        2 => true,
        _ => {
            return Err(ImageError::UnsupportedClass {
                path: path.to_string(),
                class,
            })
        }
    };
    cx.r.is64 = is64;
    let ehsize: u64 = if is64 { 64 } else { 52 };
    let data =
        cx.r.u8(5)
            .ok_or_else(|| cx.truncated("ELF header", 0, ehsize))?;
    if data != 1 {
        return Err(ImageError::UnsupportedEncoding {
            path: path.to_string(),
            data,
        });
    }
    if cx.file_len() < ehsize {
        return Err(cx.truncated("ELF header", 0, ehsize));
    }
    let r = &cx.r;
    let hdr = |o32: u64, o64: u64| if is64 { o64 } else { o32 };
    // The header is complete, so these reads cannot fail; `unwrap_or(0)` keeps them panic-free.
    let machine = r.u16(18).unwrap_or(0);
    if machine != EM_RISCV {
        return Err(ImageError::NotRiscv {
            path: path.to_string(),
            machine,
        });
    }
    let entry = r.word(24).unwrap_or(0);
    let phoff = r.word(hdr(28, 32)).unwrap_or(0);
    let shoff = r.word(hdr(32, 40)).unwrap_or(0);
    let flags = r.u32(hdr(36, 48)).unwrap_or(0);
    let phentsize = u64::from(r.u16(hdr(42, 54)).unwrap_or(0));
    let mut phnum = u64::from(r.u16(hdr(44, 56)).unwrap_or(0));
    let shentsize = u64::from(r.u16(hdr(46, 58)).unwrap_or(0));
    let mut shnum = u64::from(r.u16(hdr(48, 60)).unwrap_or(0));
    let phdr_size: u64 = if is64 { 56 } else { 32 };
    let shdr_size: u64 = if is64 { 64 } else { 40 };

    // --- section header 0: extended numbering (PN_XNUM / e_shnum == 0) ---
    let has_sections = shoff != 0;
    if has_sections && (shnum == 0 || phnum == u64::from(PN_XNUM)) {
        if shentsize < shdr_size {
            return Err(cx.malformed(format!(
                "e_shentsize {shentsize} is smaller than {shdr_size}"
            )));
        }
        cx.table("section headers", shoff, 1, shentsize)?;
        if shnum == 0 {
            shnum = cx.r.word(shoff + hdr(20, 32)).unwrap_or(0);
        }
        if phnum == u64::from(PN_XNUM) {
            phnum = u64::from(cx.r.u32(shoff + hdr(28, 44)).unwrap_or(0));
        }
    }
    if !has_sections {
        shnum = 0;
    }

    // --- program headers ---
    let mut segments = Vec::new();
    if phnum > 0 {
        if phentsize < phdr_size {
            return Err(cx.malformed(format!(
                "e_phentsize {phentsize} is smaller than {phdr_size}"
            )));
        }
        cx.table("program headers", phoff, phnum, phentsize)?;
        let mut total: u64 = 0;
        let mut loads = Vec::new();
        for i in 0..phnum {
            let base = phoff + i * phentsize; // in bounds: checked by `table`
            let r = &cx.r;
            let p_type = r.u32(base).unwrap_or(0);
            if p_type != PT_LOAD {
                continue;
            }
            let idx = i as usize;
            let (p_flags, offset, vaddr, paddr, filesz, memsz) = if is64 {
                (
                    r.u32(base + 4),
                    r.u64(base + 8),
                    r.u64(base + 16),
                    r.u64(base + 24),
                    r.u64(base + 32),
                    r.u64(base + 40),
                )
            } else {
                (
                    r.u32(base + 24),
                    r.word(base + 4),
                    r.word(base + 8),
                    r.word(base + 12),
                    r.word(base + 16),
                    r.word(base + 20),
                )
            };
            let (p_flags, offset, vaddr, paddr, filesz, memsz) = (
                p_flags.unwrap_or(0),
                offset.unwrap_or(0),
                vaddr.unwrap_or(0),
                paddr.unwrap_or(0),
                filesz.unwrap_or(0),
                memsz.unwrap_or(0),
            );
            if filesz > memsz {
                return Err(ImageError::FileszExceedsMemsz {
                    path: path.to_string(),
                    phdr: idx,
                    filesz,
                    memsz,
                });
            }
            if memsz == 0 {
                continue;
            }
            // End addresses must be representable (ELF64) / within 4 GiB (ELF32).
            let limit: u128 = if is64 { u128::from(u64::MAX) } else { 1 << 32 };
            for (name, addr) in [("p_vaddr", vaddr), ("p_paddr", paddr)] {
                if u128::from(addr) + u128::from(memsz) > limit {
                    return Err(cx.malformed(format!(
                        "program header {idx}: {name} {addr:#x} + p_memsz {memsz:#x} wraps around the address space"
                    )));
                }
            }
            total = total.saturating_add(memsz);
            if total > MAX_LOAD_BYTES {
                return Err(cx.malformed(format!(
                    "program header {idx}: loadable segments total more than {MAX_LOAD_BYTES:#x} bytes (p_memsz {memsz:#x})"
                )));
            }
            if cx.r.slice(offset, filesz).is_none() {
                return Err(cx.truncated(format!("data of segment {idx}"), offset, filesz));
            }
            loads.push((idx, p_flags, offset, vaddr, paddr, filesz, memsz));
        }
        // Reject overlaps before allocating anything.
        for (a, la) in loads.iter().enumerate() {
            for lb in &loads[..a] {
                for (space, sa, sb) in [("vaddr", la.3, lb.3), ("paddr", la.4, lb.4)] {
                    if sa < sb + lb.6 && sb < sa + la.6 {
                        return Err(ImageError::Overlap {
                            path: path.to_string(),
                            space,
                            range: sa..sa + la.6,
                            other_path: path.to_string(),
                            other_range: sb..sb + lb.6,
                        });
                    }
                }
            }
        }
        for (_, p_flags, offset, vaddr, paddr, filesz, memsz) in loads {
            let src = cx.r.slice(offset, filesz).unwrap_or(&[]);
            // `memsz` is bounded by MAX_LOAD_BYTES, so the allocation is sane.
            let mut data = vec![0u8; memsz as usize];
            data[..src.len()].copy_from_slice(src);
            segments.push(Segment {
                vaddr,
                paddr,
                data,
                flags: p_flags,
                file_index: 0,
            });
        }
        segments.sort_by_key(|s| s.vaddr);
    }

    // --- section headers and symbols ---
    let mut symbols = Vec::new();
    if shnum > 0 {
        if shentsize < shdr_size {
            return Err(cx.malformed(format!(
                "e_shentsize {shentsize} is smaller than {shdr_size}"
            )));
        }
        cx.table("section headers", shoff, shnum, shentsize)?;
        let r = &cx.r;
        let shdr = |i: u64| -> Shdr {
            let base = shoff + i * shentsize;
            Shdr {
                sh_type: r.u32(base + 4).unwrap_or(0),
                offset: r.word(base + hdr(16, 24)).unwrap_or(0),
                size: r.word(base + hdr(20, 32)).unwrap_or(0),
                link: r.u32(base + hdr(24, 40)).unwrap_or(0),
                entsize: r.word(base + hdr(36, 56)).unwrap_or(0),
            }
        };
        let tables: Vec<Shdr> = (0..shnum)
            .map(shdr)
            .filter(|s| s.sh_type == SHT_SYMTAB)
            .collect();
        // Fall back to the dynamic symbol table of a stripped file.
        let tables = if tables.is_empty() {
            (0..shnum)
                .map(shdr)
                .filter(|s| s.sh_type == SHT_DYNSYM)
                .collect()
        } else {
            tables
        };
        for symtab in tables {
            if u64::from(symtab.link) >= shnum {
                return Err(cx.malformed(format!(
                    "symbol table's sh_link {} is not a valid section index (e_shnum {shnum})",
                    symtab.link
                )));
            }
            let strtab = shdr(u64::from(symtab.link));
            read_symbols(&cx, symtab, strtab, &mut symbols)?;
        }
    }

    Ok(Parsed {
        entry,
        xlen: if is64 { Xlen::Rv64 } else { Xlen::Rv32 },
        flags,
        segments,
        symbols,
    })
}

fn read_symbols(
    cx: &Ctx<'_>,
    symtab: Shdr,
    strtab: Shdr,
    out: &mut Vec<RawSymbol>,
) -> Result<(), ImageError> {
    let r = &cx.r;
    let is64 = r.is64;
    let sym_size: u64 = if is64 { 24 } else { 16 };
    let entsize = if symtab.entsize == 0 {
        sym_size
    } else {
        symtab.entsize
    };
    if entsize < sym_size {
        return Err(cx.malformed(format!(
            "symbol table sh_entsize {entsize} is smaller than {sym_size}"
        )));
    }
    let syms = r
        .slice(symtab.offset, symtab.size)
        .ok_or_else(|| cx.truncated("symbol table", symtab.offset, symtab.size))?;
    let strs = r
        .slice(strtab.offset, strtab.size)
        .ok_or_else(|| cx.truncated("string table", strtab.offset, strtab.size))?;
    let syms = Reader { b: syms, is64 };
    let count = symtab.size / entsize;
    // Entry 0 is the reserved null symbol.
    for i in 1..count {
        let base = i * entsize;
        let (name_off, info, shndx, value, size) = if is64 {
            (
                syms.u32(base),
                syms.u8(base + 4),
                syms.u16(base + 6),
                syms.u64(base + 8),
                syms.u64(base + 16),
            )
        } else {
            (
                syms.u32(base),
                syms.u8(base + 12),
                syms.u16(base + 14),
                syms.word(base + 4),
                syms.word(base + 8),
            )
        };
        let (Some(name_off), Some(info), Some(shndx), Some(addr), Some(size)) =
            (name_off, info, shndx, value, size)
        else {
            break;
        };
        let kind = match info & 0xf {
            0 => SymbolKind::Other,     // STT_NOTYPE
            1 => SymbolKind::Object,    // STT_OBJECT
            2 | 10 => SymbolKind::Func, // STT_FUNC, STT_GNU_IFUNC
            5 => SymbolKind::Object,    // STT_COMMON
            _ => continue,              // STT_SECTION, STT_FILE, STT_TLS, ...
        };
        // Undefined and (in executables meaningless) special-section symbols carry no address.
        if shndx == SHN_UNDEF || (shndx >= SHN_LORESERVE && shndx != SHN_ABS && shndx != SHN_XINDEX)
        {
            continue;
        }
        let Some(name) = cstr(strs, name_off) else {
            continue;
        };
        if name.is_empty() || is_mapping_or_local_label(name) {
            continue;
        }
        let bind = info >> 4;
        out.push(RawSymbol {
            name: String::from_utf8_lossy(name).into_owned(),
            addr,
            size,
            kind,
            abs: shndx == SHN_ABS,
            global: bind == 1 || bind == 2,
        });
    }
    Ok(())
}

/// The NUL-terminated string at `off` in `strs` (without the NUL), if terminated in bounds.
fn cstr(strs: &[u8], off: u32) -> Option<&[u8]> {
    let rest = strs.get(usize::try_from(off).ok()?..)?;
    let len = rest.iter().position(|&b| b == 0)?;
    Some(&rest[..len])
}

/// RISC-V mapping symbols (`$x`, `$d`, `$x<isa-string>`) and assembler temporaries (`.L...`).
fn is_mapping_or_local_label(name: &[u8]) -> bool {
    name.starts_with(b"$x") || name.starts_with(b"$d") || name.starts_with(b".L")
}

/// The contents of the section named `name` in the little-endian ELF file `bytes`, if it has
/// one (the file is not checked otherwise: [`parse`] does that).
pub(crate) fn section<'a>(bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let r = Reader {
        b: bytes,
        is64: *bytes.get(4)? == 2,
    };
    let hdr = |o32: u64, o64: u64| if r.is64 { o64 } else { o32 };
    let shoff = r.word(hdr(32, 40))?;
    let shentsize = u64::from(r.u16(hdr(46, 58))?);
    let shnum = u64::from(r.u16(hdr(48, 60))?);
    let shstrndx = u64::from(r.u16(hdr(50, 62))?);
    // (sh_name, sh_offset, sh_size) of section `i`.
    let sh = |i: u64| -> Option<(u32, u64, u64)> {
        let base = shoff.checked_add(i.checked_mul(shentsize)?)?;
        Some((
            r.u32(base)?,
            r.word(base + hdr(16, 24))?,
            r.word(base + hdr(20, 32))?,
        ))
    };
    let (_, str_off, str_size) = sh(shstrndx)?;
    let names = r.slice(str_off, str_size)?;
    (0..shnum).find_map(|i| {
        let (n, off, size) = sh(i)?;
        if cstr(names, n)? == name.as_bytes() {
            let start = usize::try_from(off).ok()?;
            bytes.get(start..start.checked_add(usize::try_from(size).ok()?)?)
        } else {
            None
        }
    })
}
