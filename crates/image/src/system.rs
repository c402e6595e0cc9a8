//! The files of a running system, as the tools that capture one describe them (issue 31):
//! which file was mapped where (`/proc/PID/maps`, an ELF core file's `NT_FILE` note), the
//! memory a core file holds, and the load bias that puts an ELF file where it was mapped.
//! Read with the `object` crate.

use crate::write;
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};

/// One file mapping of a process: bytes from `offset` of the file `path` at `start..end`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// Offset in the file of the byte at `start`.
    pub offset: u64,
    /// Whether the mapping is executable (`/proc/PID/maps` `x`; every `NT_FILE` entry is taken
    /// as possibly executable: the note does not say).
    pub exec: bool,
    /// The file, as the system named it.
    pub path: String,
}

/// The pseudo-path of the vdso's mapping in `/proc/PID/maps`.
pub const VDSO: &str = "[vdso]";

/// The mappings of a `/proc/PID/maps` text (proc(5): `start-end perms offset dev inode path`,
/// hexadecimal numbers). Lines without a path, or whose path is a pseudo-file other than
/// `[vdso]` (`[stack]`, `[heap]`, ...) or a deleted file, are left out; a line that does not
/// parse is an error naming its number.
pub fn parse_maps(text: &str) -> Result<Vec<Mapping>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        let bad = || format!("line {}: not a /proc/PID/maps line: {line:?}", i + 1);
        let mut f = line.splitn(6, ' ');
        let (range, perms, offset) = (f.next(), f.next(), f.next());
        let (_dev, _inode) = (f.next(), f.next());
        let path = f.next().map(str::trim_start).unwrap_or("");
        let (Some(range), Some(perms), Some(offset)) = (range, perms, offset) else {
            return Err(bad());
        };
        let (s, e) = range.split_once('-').ok_or_else(bad)?;
        let hex = |t: &str| u64::from_str_radix(t, 16).map_err(|_| bad());
        let (start, end, offset) = (hex(s)?, hex(e)?, hex(offset)?);
        if end < start || perms.len() != 4 {
            return Err(bad());
        }
        if path.is_empty()
            || (path.starts_with('[') && path != VDSO)
            || path.ends_with(" (deleted)")
        {
            continue;
        }
        out.push(Mapping {
            start,
            end,
            offset,
            exec: perms.as_bytes()[2] == b'x',
            path: path.to_string(),
        });
    }
    Ok(out)
}

/// The code symbols of a kernel symbol list (`/proc/kallsyms`, `System.map`: `ADDRESS TYPE
/// NAME [MODULE]` per line, hexadecimal), each moved by `offset` (the KASLR offset a
/// `System.map` lacks; 0 for the running kernel's kallsyms). Text symbols (types `T`, `t`, `W`,
/// `w`) are kept, as functions; each ends where the next symbol of any type begins (the lists
/// have no sizes). No symbols, or all at address 0 (kallsyms read without the privilege to see
/// addresses), is an error, and so is a line that does not parse.
pub fn parse_kallsyms(text: &str, offset: u64) -> Result<Vec<crate::Symbol>, String> {
    let mut all: Vec<(u64, bool, &str)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut f = line.split_whitespace();
        let (Some(a), Some(t), Some(name)) = (f.next(), f.next(), f.next()) else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(format!("line {}: not a kallsyms line: {line:?}", i + 1));
        };
        let addr = u64::from_str_radix(a, 16)
            .map_err(|_| format!("line {}: not a kallsyms line: {line:?}", i + 1))?;
        all.push((addr, matches!(t, "T" | "t" | "W" | "w"), name));
    }
    if all.is_empty() {
        return Err("no symbols".into());
    }
    if all.iter().all(|s| s.0 == 0) {
        return Err(
            "every address is 0 (read /proc/kallsyms as root, or with kptr_restrict=0)".into(),
        );
    }
    all.sort_by_key(|s| s.0);
    let mut out = Vec::new();
    for (k, &(addr, text, name)) in all.iter().enumerate() {
        if !text {
            continue;
        }
        let next = all[k + 1..].iter().map(|s| s.0).find(|&a| a > addr);
        out.push(crate::Symbol {
            name: name.to_string(),
            addr: addr.wrapping_add(offset),
            size: next.map_or(0, |n| n - addr),
            kind: crate::SymbolKind::Func,
        });
    }
    Ok(out)
}

/// The pages of a memory-page directory (SiFive's decoder's `kmempath`: one file per page,
/// named `kmem.0x<ADDR>`): each file whose name ends in `0x` and a hexadecimal address, with
/// that address, sorted by address.
pub fn page_files(dir: &std::path::Path) -> std::io::Result<Vec<(u64, std::path::PathBuf)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let path = e?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let addr = name
            .as_deref()
            .and_then(|n| n.rsplit_once("0x"))
            .and_then(|(_, hex)| u64::from_str_radix(hex, 16).ok());
        if let Some(addr) = addr {
            out.push((addr, path));
        }
    }
    out.sort();
    Ok(out)
}

/// What an ELF core file (`ET_CORE`: a process core dump, gdb's `gcore`, the kernel's
/// `/proc/kcore`) holds: memory, and the files its process had mapped.
#[derive(Clone, Debug, Default)]
pub struct Core {
    /// The executable memory of its `PT_LOAD` segments, as (virtual address, bytes) runs of
    /// 4 KiB pages that are not all zero (a zero page holds no code; a machine's whole RAM
    /// shrinks to what was loaded). A segment is executable by its `PF_X`, or when no segment
    /// of the file has flags (QEMU's `dump-guest-memory` writes none). Segments the dump left
    /// out (`p_filesz` 0: Linux does not dump file-backed text by default) are not memory
    /// here; their code comes from the mapped files.
    pub memory: Vec<Memory>,
    /// The `NT_FILE` note's mappings (Linux `fill_files_note`).
    pub files: Vec<Mapping>,
}

/// A run of a core file's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Memory {
    /// Its virtual address.
    pub addr: u64,
    /// Its bytes.
    pub data: Vec<u8>,
    /// The address spaces it is code of: from an rvtrace snapshot's scope note
    /// ([`crate::write`]), else everywhere.
    pub scope: crate::space::Scope,
}

/// Whether `bytes` is an ELF core file (`e_type` `ET_CORE`).
pub fn is_core(bytes: &[u8]) -> bool {
    // e_type: the 16 bits after e_ident (little-endian RISC-V files).
    bytes.starts_with(b"\x7fELF") && bytes.get(16..18) == Some(&elf::ET_CORE.to_le_bytes())
}

/// Reads an ELF core file.
pub fn read_core(bytes: &[u8]) -> Result<Core, String> {
    match bytes.get(4) {
        Some(1) => core_of::<elf::FileHeader32<object::Endianness>>(bytes),
        Some(2) => core_of::<elf::FileHeader64<object::Endianness>>(bytes),
        _ => Err("not an ELF file of class 32 or 64".into()),
    }
    .map_err(|e| format!("core file: {e}"))
}

fn core_of<H: FileHeader<Endian = object::Endianness>>(bytes: &[u8]) -> Result<Core, String> {
    let h = H::parse(bytes).map_err(|e| e.to_string())?;
    let endian = h.endian().map_err(|e| e.to_string())?;
    let word = if h.is_class_64() { 8 } else { 4 };
    let mut core = Core::default();
    let headers = h
        .program_headers(endian, bytes)
        .map_err(|e| e.to_string())?;
    let loads = || {
        headers
            .iter()
            .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
    };
    let flagless = loads().all(|ph| ph.p_flags(endian) == 0);
    // The scope note first: it names the PT_LOAD segments by their order.
    let mut scopes: Option<Vec<crate::space::Scope>> = None;
    for ph in headers {
        if ph.p_type(endian) != elf::PT_NOTE {
            continue;
        }
        let Some(mut notes) = ph.notes(endian, bytes).map_err(|e| e.to_string())? else {
            continue;
        };
        while let Some(n) = notes.next().map_err(|e| e.to_string())? {
            if n.name() == b"CORE" && n.n_type(endian) == elf::NT_FILE {
                core.files.extend(nt_file(n.desc(), word, endian)?);
            } else if n.name() == write::NOTE_NAME && n.n_type(endian) == write::NT_RVTRACE_SCOPES {
                let bad =
                    || "the rvtrace scope note does not list every PT_LOAD segment".to_string();
                let entries = n.desc().chunks(write::SCOPE_ENTRY);
                if entries.len() != loads().count() {
                    return Err(bad());
                }
                let s: Option<Vec<_>> = entries.map(write::read_scope_entry).collect();
                scopes = Some(s.ok_or("the rvtrace scope note has a malformed entry")?);
            }
        }
    }
    for (i, ph) in loads().enumerate() {
        let filesz: u64 = ph.p_filesz(endian).into();
        if filesz == 0 || !(flagless || ph.p_flags(endian) & elf::PF_X != 0) {
            continue;
        }
        let data = ph
            .data(endian, bytes)
            .map_err(|_| "a PT_LOAD segment runs past the end of the file".to_string())?;
        let scope = scopes.as_ref().map_or_else(Default::default, |s| s[i]);
        core.memory.extend(
            nonzero_runs(ph.p_vaddr(endian).into(), data)
                .into_iter()
                .map(|(addr, data)| Memory { addr, data, scope }),
        );
    }
    Ok(core)
}

/// The runs of `data` (at `addr`) made of 4 KiB pages (aligned to `addr`) not all zero.
fn nonzero_runs(addr: u64, data: &[u8]) -> Vec<(u64, Vec<u8>)> {
    const PAGE: usize = 4096;
    let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut open: Option<usize> = None; // start offset of the run being built
    for (i, page) in data.chunks(PAGE).enumerate() {
        let zero = page.iter().all(|&b| b == 0);
        match (zero, open) {
            (false, None) => open = Some(i * PAGE),
            (true, Some(start)) => {
                out.push((addr + start as u64, data[start..i * PAGE].to_vec()));
                open = None;
            }
            _ => {}
        }
    }
    if let Some(start) = open {
        out.push((addr + start as u64, data[start..].to_vec()));
    }
    out
}

/// The `NT_FILE` note's description (Linux `fill_files_note`): count, page size, then per file
/// start, end and file offset in pages (words of the file's class), then the NUL-terminated
/// names.
fn nt_file(desc: &[u8], word: usize, endian: object::Endianness) -> Result<Vec<Mapping>, String> {
    let bad = || "NT_FILE note is truncated".to_string();
    let at = |i: usize| -> Result<u64, String> {
        let b = desc.get(i * word..(i + 1) * word).ok_or_else(bad)?;
        Ok(match (word, endian) {
            (4, object::Endianness::Little) => u64::from(u32::from_le_bytes(b.try_into().unwrap())),
            (4, object::Endianness::Big) => u64::from(u32::from_be_bytes(b.try_into().unwrap())),
            (_, object::Endianness::Little) => u64::from_le_bytes(b.try_into().unwrap()),
            (_, object::Endianness::Big) => u64::from_be_bytes(b.try_into().unwrap()),
        })
    };
    let count = usize::try_from(at(0)?).map_err(|_| bad())?;
    let page = at(1)?;
    if count > desc.len() / (3 * word) {
        return Err(bad());
    }
    let mut names = desc
        .get((2 + 3 * count) * word..)
        .ok_or_else(bad)?
        .split(|&b| b == 0);
    let mut out = Vec::with_capacity(count);
    for k in 0..count {
        let (start, end, pgoff) = (at(2 + 3 * k)?, at(3 + 3 * k)?, at(4 + 3 * k)?);
        let name = names.next().ok_or_else(bad)?;
        out.push(Mapping {
            start,
            end,
            offset: pgoff.checked_mul(page).ok_or_else(bad)?,
            exec: true,
            path: String::from_utf8_lossy(name).into_owned(),
        });
    }
    Ok(out)
}

/// The load bias that puts the ELF file `bytes` where `m` maps it: the `PT_LOAD` segment whose
/// file offset lies in the mapping's page, mapped at the mapping's start (the kernel maps
/// segments page by page: `start` is the segment's page, `offset` its page in the file). `None`
/// if no segment of the file starts in that page, or the file does not parse. `page` is the
/// system's page size.
pub fn bias_for(bytes: &[u8], m: &Mapping, page: u64) -> Option<u64> {
    let loads = match bytes.get(4) {
        Some(1) => loads_of::<elf::FileHeader32<object::Endianness>>(bytes),
        Some(2) => loads_of::<elf::FileHeader64<object::Endianness>>(bytes),
        _ => None,
    }?;
    let down = |x: u64| x & !(page - 1);
    loads
        .iter()
        .find(|&&(off, _)| down(off) == m.offset)
        .map(|&(_, vaddr)| m.start.wrapping_sub(down(vaddr)))
}

/// The (`p_offset`, `p_vaddr`) of every `PT_LOAD` segment.
fn loads_of<H: FileHeader<Endian = object::Endianness>>(bytes: &[u8]) -> Option<Vec<(u64, u64)>> {
    let h = H::parse(bytes).ok()?;
    let endian = h.endian().ok()?;
    Some(
        h.program_headers(endian, bytes)
            .ok()?
            .iter()
            .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
            .map(|ph| (ph.p_offset(endian).into(), ph.p_vaddr(endian).into()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let text = "\
00010000-00011000 r-xp 00000000 fe:01 1234                       /usr/bin/prog
00011000-00012000 rw-p 00001000 fe:01 1234                       /usr/bin/prog
3ff7e00000-3ff7f20000 r-xp 00000000 fe:01 99 /lib/riscv64-linux-gnu/libc.so.6
3ff7fd4000-3ff7fd6000 r-xp 00000000 00:00 0                          [vdso]
3ff7fd6000-3ff7fd8000 rw-p 00000000 00:00 0
3ffffde000-3ffffff000 rw-p 00000000 00:00 0                          [stack]
";
        let m = parse_maps(text).unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!((m[3].start, m[3].path.as_str()), (0x3ff7fd4000, VDSO));
        assert_eq!(
            m[0],
            Mapping {
                start: 0x10000,
                end: 0x11000,
                offset: 0,
                exec: true,
                path: "/usr/bin/prog".into()
            }
        );
        assert!(!m[1].exec);
        assert_eq!(m[1].offset, 0x1000);
        assert_eq!(m[2].start, 0x3ff7e00000);
        let e = parse_maps("0001-zz r-xp 0 0 0 /x\n").unwrap_err();
        assert!(e.starts_with("line 1:"), "{e}");
    }

    #[test]
    fn kallsyms_lines() {
        let text = "\
ffffffff80002000 T _stext
ffffffff80002000 t __efistub__start
ffffffff80002010 T do_one
ffffffff80003000 D some_data
ffffffff80002100 t helper	[mod]
";
        let s = parse_kallsyms(text, 0x10_0000).unwrap();
        let v: Vec<(&str, u64, u64)> = s
            .iter()
            .map(|s| (s.name.as_str(), s.addr, s.size))
            .collect();
        assert_eq!(
            v,
            [
                ("_stext", 0xffffffff80102000, 0x10),
                ("__efistub__start", 0xffffffff80102000, 0x10),
                ("do_one", 0xffffffff80102010, 0xf0),
                ("helper", 0xffffffff80102100, 0xf00),
            ]
        );
        assert!(parse_kallsyms("0000000000000000 T a\n0000000000000000 T b\n", 0).is_err());
        assert!(parse_kallsyms("zz T a\n", 0)
            .unwrap_err()
            .starts_with("line 1"));
        assert!(parse_kallsyms("\n", 0).is_err());
    }

    #[test]
    fn zero_pages_are_left_out() {
        let mut d = vec![0u8; 5 * 4096 + 10];
        d[4096 + 7] = 1; // page 1
        d[3 * 4096] = 2; // page 3
        d[5 * 4096 + 9] = 3; // the short last page
        let r = nonzero_runs(0x8000_0000, &d);
        let spans: Vec<(u64, usize)> = r.iter().map(|(a, b)| (*a, b.len())).collect();
        assert_eq!(
            spans,
            [(0x8000_1000, 4096), (0x8000_3000, 4096), (0x8000_5000, 10)]
        );
        assert_eq!(r[0].1[7], 1);
    }

    #[test]
    fn nt_file_note() {
        // Two files, page size 4096: (0x10000, 0x11000, 0) prog; (0x20000, 0x22000, 2) lib.
        let mut d = Vec::new();
        for w in [2u64, 4096, 0x10000, 0x11000, 0, 0x20000, 0x22000, 2] {
            d.extend_from_slice(&w.to_le_bytes());
        }
        d.extend_from_slice(b"/bin/prog\0/lib/x.so\0");
        let m = nt_file(&d, 8, object::Endianness::Little).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[1].start, m[1].offset, m[1].path.as_str()),
            (0x20000, 0x2000, "/lib/x.so")
        );
        assert!(nt_file(&d[..40], 8, object::Endianness::Little).is_err());
    }
}
