//! Synthetic ELF files: error cases, multiple files, segment boundaries, symbol rules.

use crate::common;

use common::*;
use rvtrace_image::{Image, ImageError, SymbolKind, Xlen};

fn err(bytes: &[u8]) -> ImageError {
    let mut image = Image::new();
    let e = image.load_bytes("t.elf", bytes).unwrap_err();
    assert!(image.files().is_empty() && image.segments().is_empty());
    let msg = e.to_string();
    assert!(msg.starts_with("t.elf: "), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    assert_eq!(e.path(), "t.elf");
    e
}

fn simple(is64: bool) -> ElfBuilder {
    ElfBuilder::new(is64)
        .seg(Seg::new(0x8000_0000, pattern(0x40, 1)))
        .sym(Sym::new("main", 0x8000_0000, 0x40, STT_FUNC, STB_GLOBAL))
}

#[test]
fn minimal_elf32_and_elf64() {
    for is64 in [false, true] {
        let mut image = Image::new();
        let info = image.load_bytes("t.elf", &simple(is64).bytes()).unwrap();
        assert_eq!(info.xlen, if is64 { Xlen::Rv64 } else { Xlen::Rv32 });
        assert_eq!(info.entry, 0x8000_0000);
        assert_eq!(image.segments()[0].data, pattern(0x40, 1));
        assert_eq!(image.symbol_by_name("main").unwrap().size, 0x40);
    }
}

#[test]
fn not_found() {
    let mut image = Image::new();
    let e = image
        .load_file(std::path::Path::new("/nonexistent/dir/prog.elf"))
        .unwrap_err();
    assert!(matches!(e, ImageError::Io { .. }));
    assert_eq!(
        e.to_string(),
        "/nonexistent/dir/prog.elf: cannot read file: No such file or directory (os error 2)"
    );
    assert!(std::error::Error::source(&e).is_some());
    // A directory is unreadable as a file too.
    let e = image.load_file(std::path::Path::new("/")).unwrap_err();
    assert!(e.to_string().starts_with("/: cannot read file: "), "{e}");
}

#[test]
fn not_elf() {
    let e = err(b"MZ\x90\0 this is a PE file");
    assert!(matches!(e, ImageError::NotElf { .. }));
    assert_eq!(
        e.to_string(),
        "t.elf: not an ELF file (bad magic 4d 5a 90 00, expected 7f 45 4c 46)"
    );
    assert_eq!(
        err(b"").to_string(),
        "t.elf: not an ELF file (file is empty)"
    );
    assert!(matches!(err(b"\x7fEL"), ImageError::Truncated { .. }));
    assert!(matches!(err(b"#!"), ImageError::NotElf { .. }));
}

#[test]
fn not_riscv() {
    let mut b = simple(true);
    b.machine = 62;
    let e = err(&b.bytes());
    assert!(matches!(e, ImageError::NotRiscv { machine: 62, .. }));
    assert_eq!(
        e.to_string(),
        "t.elf: not a RISC-V ELF file (e_machine 62 = x86-64, expected 243 = RISC-V)"
    );
    b.machine = 9999;
    assert_eq!(
        err(&b.bytes()).to_string(),
        "t.elf: not a RISC-V ELF file (e_machine 9999, expected 243 = RISC-V)"
    );
}

#[test]
fn bad_class_and_endianness() {
    let mut bytes = simple(true).bytes();
    bytes[4] = 3;
    assert_eq!(
        err(&bytes).to_string(),
        "t.elf: unsupported ELF class 3 (expected 1 = ELF32 or 2 = ELF64)"
    );
    let mut bytes = simple(false).bytes();
    bytes[5] = 2;
    assert_eq!(
        err(&bytes).to_string(),
        "t.elf: unsupported ELF data encoding 2 (big-endian); only little-endian is supported"
    );
    bytes[5] = 0;
    assert!(err(&bytes).to_string().contains("encoding 0 (invalid)"));
}

#[test]
fn truncated() {
    for is64 in [false, true] {
        let built = simple(is64).build();
        let b = &built.bytes;
        let ehsize = if is64 { 64 } else { 52 };

        // Header.
        let e = err(&b[..ehsize - 1]);
        assert!(
            e.to_string().contains("truncated ELF file: ELF header"),
            "{e}"
        );

        // Program headers.
        let e = err(&b[..built.phoff + 10]);
        assert_eq!(
            e.to_string(),
            format!(
                "t.elf: truncated ELF file: program headers (offset {:#x}, {:#x} bytes) extends beyond end of file ({:#x} bytes)",
                ehsize,
                if is64 { 56 } else { 32 },
                built.phoff + 10
            )
        );

        // Segment data.
        let e = err(&b[..built.seg_offsets[0] + 0x20]);
        assert!(
            e.to_string()
                .contains("truncated ELF file: data of segment 0"),
            "{e}"
        );

        // Section headers (the file's tail).
        let e = err(&b[..b.len() - 1]);
        assert!(
            e.to_string()
                .contains("truncated ELF file: section headers"),
            "{e}"
        );

        // Symbol table beyond EOF: grow its sh_size.
        let mut bad = b.clone();
        let shentsize = if is64 { 64 } else { 40 };
        let size_field = built.shoff + shentsize + if is64 { 32 } else { 20 };
        bad[size_field..size_field + 4].copy_from_slice(&0x10_0000u32.to_le_bytes());
        let e = err(&bad);
        assert!(
            e.to_string().contains("truncated ELF file: symbol table"),
            "{e}"
        );
    }
}

#[test]
fn filesz_exceeds_memsz() {
    let mut b = ElfBuilder::new(true);
    b.segs.push(Seg {
        vaddr: 0x1000,
        paddr: 0x1000,
        data: pattern(0x20, 0),
        memsz: 0x10,
        flags: 6,
    });
    let e = err(&b.bytes());
    assert_eq!(
        e.to_string(),
        "t.elf: program header 0: p_filesz 0x20 is larger than p_memsz 0x10"
    );
}

#[test]
fn malformed() {
    // Absurd memsz.
    let mut b = ElfBuilder::new(true);
    b.segs.push(Seg {
        vaddr: 0x1000,
        paddr: 0x1000,
        data: vec![],
        memsz: 1 << 40,
        flags: 6,
    });
    assert!(matches!(err(&b.bytes()), ImageError::Malformed { .. }));
    // Wrap-around.
    b.segs[0].vaddr = u64::MAX - 0x10;
    b.segs[0].memsz = 0x100;
    let e = err(&b.bytes());
    assert!(e.to_string().contains("wraps around"), "{e}");
    // ELF32 beyond 4 GiB.
    let mut b = ElfBuilder::new(false);
    b.segs.push(Seg {
        vaddr: 0xffff_ff00,
        paddr: 0xffff_ff00,
        data: vec![],
        memsz: 0x200,
        flags: 6,
    });
    assert!(err(&b.bytes()).to_string().contains("wraps around"));
    // An ELF32 segment ending exactly at 4 GiB is fine.
    b.segs[0].memsz = 0x100;
    let mut image = Image::new();
    image.load_bytes("t.elf", &b.bytes()).unwrap();
    assert_eq!(image.read_u16(0xffff_fffe), Some(0));
    // Bad e_phentsize.
    let mut bytes = simple(true).bytes();
    bytes[54] = 8;
    assert_eq!(
        err(&bytes).to_string(),
        "t.elf: malformed ELF file: e_phentsize 8 is smaller than 56"
    );
}

#[test]
fn overlap_within_file() {
    let b = ElfBuilder::new(true)
        .seg(Seg::new(0x1000, pattern(0x100, 0)))
        .seg(Seg::new(0x10f0, pattern(0x100, 0)));
    assert_eq!(
        err(&b.bytes()).to_string(),
        "t.elf: segment vaddr 0x10f0..0x11f0 overlaps segment vaddr 0x1000..0x1100 in the same file"
    );
    // Same physical address, different virtual ones.
    let mut s2 = Seg::new(0x9000, pattern(0x10, 0));
    s2.paddr = 0x1008;
    let b = ElfBuilder::new(false)
        .seg(Seg::new(0x1000, pattern(0x10, 0)))
        .seg(s2);
    assert!(err(&b.bytes())
        .to_string()
        .contains("segment paddr 0x1008..0x1018 overlaps segment paddr 0x1000..0x1010"));
}

#[test]
fn overlap_between_files() {
    let mut image = Image::new();
    let a = ElfBuilder::new(true).seg(Seg::new(0x8000_0000, pattern(0x1000, 0)));
    image.load_bytes("fw.elf", &a.bytes()).unwrap();
    let b = ElfBuilder::new(true).seg(Seg::new(0x8000_0ff0, pattern(0x100, 0)));
    let e = image.load_bytes("app.elf", &b.bytes()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "app.elf: segment vaddr 0x80000ff0..0x800010f0 overlaps segment vaddr 0x80000000..0x80001000 loaded from fw.elf"
    );
    match e {
        ImageError::Overlap {
            range,
            other_range,
            other_path,
            ..
        } => {
            assert_eq!(range, 0x8000_0ff0..0x8000_10f0);
            assert_eq!(other_range, 0x8000_0000..0x8000_1000);
            assert_eq!(other_path, "fw.elf");
        }
        other => panic!("{other:?}"),
    }
    // The failed load changed nothing.
    assert_eq!(image.files().len(), 1);
    assert_eq!(image.segments().len(), 1);
    // Loading the same file twice overlaps too.
    assert!(image.load_bytes("fw.elf", &a.bytes()).is_err());
}

#[test]
fn multiple_files_interleaved() {
    // File A: segments at 0x1000 and 0x5000; file B at 0x3000 and 0x1100 (adjacent to A's first).
    let a = ElfBuilder::new(true)
        .seg(Seg::new(0x5000, pattern(0x10, 0x50)))
        .seg(Seg::new(0x1000, pattern(0x100, 0x10)))
        .sym(Sym::new("a_main", 0x1000, 0x100, STT_FUNC, STB_GLOBAL))
        .sym(Sym::new("common", 0x1010, 0, STT_NOTYPE, STB_GLOBAL))
        .sym(Sym::new("helper", 0x1020, 0x10, STT_FUNC, STB_LOCAL));
    let mut b = ElfBuilder::new(false)
        .seg(Seg::new(0x3000, pattern(0x20, 0x30)))
        .seg(Seg::new(0x1100, vec![0x13, 0x00, 0x00, 0x00, 0x01, 0x00]))
        .sym(Sym::new("b_main", 0x3000, 0x20, STT_FUNC, STB_GLOBAL))
        .sym(Sym::new("common", 0x3010, 0, STT_NOTYPE, STB_GLOBAL))
        .sym(Sym::new("helper", 0x3004, 4, STT_FUNC, STB_GLOBAL));
    b.entry = 0x3000;
    b.flags = 0;

    let mut image = Image::new();
    image.load_bytes("a.elf", &a.bytes()).unwrap();
    let info = image.load_bytes("b.elf", &b.bytes()).unwrap();
    assert_eq!(info.entry, 0x3000);
    assert_eq!(info.xlen, Xlen::Rv32);
    assert!(!info.has_rvc());

    let files = image.files();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0].segments, 0..2);
    assert_eq!(files[1].segments, 2..4);
    let addrs = |r: std::ops::Range<usize>| -> Vec<u64> {
        image.segments()[r].iter().map(|s| s.vaddr).collect()
    };
    assert_eq!(addrs(files[0].segments.clone()), [0x1000, 0x5000]);
    assert_eq!(addrs(files[1].segments.clone()), [0x1100, 0x3000]);
    for (i, f) in files.iter().enumerate() {
        assert!(image.segments()[f.segments.clone()]
            .iter()
            .all(|s| s.file_index == i));
    }

    // Reads by address across all files, including across the A/B boundary at 0x1100.
    assert_eq!(image.read_u16(0x5000), Some(0x5150));
    assert_eq!(image.read_u16(0x3002), Some(0x3332));
    assert_eq!(image.read_u16(0x10fe), Some(0x0f0e));
    let mut buf = [0u8; 4];
    assert!(image.read(0x10fe, &mut buf));
    assert_eq!(buf, [0x0e, 0x0f, 0x13, 0x00]);
    assert_eq!(image.fetch(0x1100), Some(0x13));
    assert_eq!(image.fetch(0x1104), Some(0x1)); // 16-bit parcel in the last 2 bytes
    assert_eq!(image.fetch(0x1106), None);
    assert_eq!(image.fetch(0x2000), None);
    assert_eq!(image.segment_at(0x3000).unwrap().file_index, 1);

    // Symbols merged and sorted; name conflicts resolved (global > local, then earlier file).
    let syms = image.symbols();
    assert!(syms.windows(2).all(|w| w[0].addr <= w[1].addr));
    assert_eq!(image.symbol_by_name("a_main").unwrap().addr, 0x1000);
    assert_eq!(image.symbol_by_name("b_main").unwrap().addr, 0x3000);
    assert_eq!(image.symbol_by_name("common").unwrap().addr, 0x1010);
    assert_eq!(image.symbol_by_name("helper").unwrap().addr, 0x3004);
    assert_eq!(syms.iter().filter(|s| s.name == "helper").count(), 2);
    let at = |x: u64| image.symbol_at(x).map(|(s, o)| (s.name.clone(), o));
    assert_eq!(at(0x1024), Some(("helper".into(), 4)));
    assert_eq!(at(0x1014), Some(("a_main".into(), 0x14)));
    assert_eq!(at(0x3005), Some(("helper".into(), 1)));
    assert_eq!(at(0x3018), Some(("b_main".into(), 0x18)));
    // 0x1100 is in B's segment; the preceding symbols are in A's: not used.
    assert_eq!(at(0x1102), None);
    // 0x5008: no symbol in that segment.
    assert_eq!(at(0x5008), None);
}

#[test]
fn fetch_across_segments() {
    // A 32-bit instruction whose upper parcel is in the next (adjacent) segment.
    let b = ElfBuilder::new(true)
        .seg(Seg::new(0x1000, vec![0x01, 0x00, 0x97, 0x01]))
        .seg(Seg::new(0x1004, vec![0x20, 0x00, 0x41, 0x11]));
    let mut image = Image::new();
    image.load_bytes("t.elf", &b.bytes()).unwrap();
    assert_eq!(image.fetch(0x1000), Some(0x0001));
    assert_eq!(image.fetch(0x1002), Some(0x0020_0197));
    assert_eq!(image.fetch(0x1004), Some(0x0020));
    assert_eq!(image.fetch(0x1006), Some(0x1141));
    assert_eq!(image.read_u16(0x1003), Some(0x2001));
    // Alternate between segments to exercise the last-hit cache.
    for _ in 0..3 {
        assert_eq!(image.read_u16(0x1006), Some(0x1141));
        assert_eq!(image.read_u16(0x1000), Some(0x0001));
        assert_eq!(image.read_u16(0x0ffe), None);
        assert_eq!(image.read_u16(0x1008), None);
    }
    // 32-bit instruction at the very end with the upper parcel unmapped.
    let b = ElfBuilder::new(true).seg(Seg::new(0x1000, vec![0x13, 0x00]));
    let mut image = Image::new();
    image.load_bytes("t.elf", &b.bytes()).unwrap();
    assert_eq!(image.fetch(0x1000), None);
    assert_eq!(image.read_u16(0x1000), Some(0x13));
    // Empty image.
    let image = Image::new();
    assert_eq!(image.fetch(0), None);
    assert!(image.symbol_at(0).is_none());
    assert!(image.symbol_by_name("x").is_none());
}

#[test]
fn bss_zero_fill_and_paddr() {
    let mut b = ElfBuilder::new(false);
    b.segs.push(Seg {
        vaddr: 0x8020_0000,
        paddr: 0x8000_4000,
        data: pattern(0x10, 0xa0),
        memsz: 0x30,
        flags: 6,
    });
    b.segs.push(Seg {
        vaddr: 0x9000_0000,
        paddr: 0x9000_0000,
        data: vec![],
        memsz: 0, // empty segments are dropped
        flags: 6,
    });
    let mut image = Image::new();
    image.load_bytes("t.elf", &b.bytes()).unwrap();
    assert_eq!(image.segments().len(), 1);
    let s = &image.segments()[0];
    assert_eq!((s.vaddr, s.paddr, s.flags), (0x8020_0000, 0x8000_4000, 6));
    assert_eq!(s.data.len(), 0x30);
    assert_eq!(s.data[..0x10], pattern(0x10, 0xa0)[..]);
    assert!(s.data[0x10..].iter().all(|&b| b == 0));
    // Reads use vaddr; the paddr range is not mapped for reads.
    assert_eq!(image.read_u16(0x8020_0000), Some(0xa1a0));
    assert_eq!(image.read_u16(0x8020_002e), Some(0));
    assert_eq!(image.read_u16(0x8000_4000), None);
}

#[test]
fn symbol_filtering_and_dedupe() {
    let mut sect = Sym::new(".text", 0x1000, 0, STT_SECTION, STB_LOCAL);
    sect.name = String::new();
    let mut undef = Sym::new("puts", 0, 0, STT_FUNC, STB_GLOBAL);
    undef.shndx = 0;
    let mut abs = Sym::new("__ram_size", 0x1000, 0, STT_NOTYPE, STB_GLOBAL);
    abs.shndx = 0xfff1;
    let b = ElfBuilder::new(true)
        .seg(Seg::new(0x1000, pattern(0x100, 0)))
        .sym(sect)
        .sym(Sym::new("file.c", 0, 0, STT_FILE, STB_LOCAL))
        .sym(Sym::new("$x", 0x1000, 0, STT_NOTYPE, STB_LOCAL))
        .sym(Sym::new(
            "$xrv64i2p1_c2p0",
            0x1010,
            0,
            STT_NOTYPE,
            STB_LOCAL,
        ))
        .sym(Sym::new(".L3", 0x1010, 0, STT_NOTYPE, STB_LOCAL))
        .sym(undef)
        .sym(abs)
        .sym(Sym::new("start", 0x1000, 0, STT_NOTYPE, STB_GLOBAL))
        .sym(Sym::new("f", 0x1000, 0x20, STT_FUNC, STB_GLOBAL))
        .sym(Sym::new("f", 0x1000, 0x20, STT_FUNC, STB_LOCAL)) // duplicate
        .sym(Sym::new("g", 0x1040, 0, STT_NOTYPE, STB_LOCAL))
        .sym(Sym::new("g", 0x1040, 0x10, STT_FUNC, STB_LOCAL)) // same name+addr, better kind
        .sym(Sym::new("buf", 0x1080, 0x40, STT_OBJECT, STB_GLOBAL));
    let mut image = Image::new();
    image.load_bytes("t.elf", &b.bytes()).unwrap();
    let got: Vec<_> = image
        .symbols()
        .iter()
        .map(|s| (s.name.as_str(), s.addr, s.size, s.kind))
        .collect();
    assert_eq!(
        got,
        [
            ("f", 0x1000, 0x20, SymbolKind::Func),
            ("start", 0x1000, 0, SymbolKind::Other),
            ("__ram_size", 0x1000, 0, SymbolKind::Other),
            ("g", 0x1040, 0x10, SymbolKind::Func),
            ("buf", 0x1080, 0x40, SymbolKind::Object),
        ]
    );
    let at = |x: u64| image.symbol_at(x).map(|(s, o)| (s.name.as_str(), o));
    assert_eq!(at(0x1000), Some(("f", 0)));
    assert_eq!(at(0x1030), Some(("f", 0x30))); // past f's end, nothing closer
    assert_eq!(at(0x1045), Some(("g", 5)));
    assert_eq!(at(0x1050), Some(("g", 0x10)));
    assert_eq!(at(0x10bf), Some(("buf", 0x3f)));
    assert_eq!(at(0x10ff), Some(("buf", 0x7f)));
    assert_eq!(at(0xfff), None);
}

#[test]
fn extended_phnum() {
    // e_phnum = PN_XNUM: the real count is in section 0's sh_info.
    let built = simple(true).build();
    let mut b = built.bytes.clone();
    b[56..58].copy_from_slice(&0xffffu16.to_le_bytes());
    b[built.shoff + 44..built.shoff + 48].copy_from_slice(&1u32.to_le_bytes());
    let mut image = Image::new();
    image.load_bytes("t.elf", &b).unwrap();
    assert_eq!(image.segments().len(), 1);
    // Stripped file: no section headers at all.
    let mut b = built.bytes.clone();
    b[40..48].fill(0);
    b[60..62].fill(0);
    let mut image = Image::new();
    image.load_bytes("t.elf", &b).unwrap();
    assert!(image.symbols().is_empty());
    assert_eq!(image.fetch(0x8000_0000), Some(0x0201));
}

#[test]
fn image_is_send_sync_clone() {
    fn assert_send_sync<T: Send + Sync + Clone + Default>() {}
    assert_send_sync::<Image>();
    let mut image = Image::new();
    image.load_bytes("t.elf", &simple(true).bytes()).unwrap();
    let copy = image.clone();
    assert_eq!(copy.read_u16(0x8000_0000), Some(0x0201));
    assert_eq!(copy.files(), image.files());
}
