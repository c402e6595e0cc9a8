//! Loading the real conformance ELFs; expectations come from GNU readelf/objdump
//! (see `tests/data/README.md`).

use rvtrace_image::{FloatAbi, Image, SymbolKind, Xlen, PF_R, PF_W, PF_X};
use std::path::Path;

const RV64: &[u8] = include_bytes!("data/crc-rv64gc.elf");
const RV32: &[u8] = include_bytes!("data/crc-rv32imac.elf");
const RV64_INSNS: &str = include_str!("data/crc-rv64gc.insns.txt");
const RV32_INSNS: &str = include_str!("data/crc-rv32imac.insns.txt");

fn load(name: &str, bytes: &[u8]) -> Image {
    let mut image = Image::new();
    image.load_bytes(name, bytes).expect("load");
    image
}

fn le_u64(image: &Image, addr: u64) -> u64 {
    let mut b = [0u8; 8];
    assert!(image.read(addr, &mut b));
    u64::from_le_bytes(b)
}

#[test]
fn rv64_header_and_segments() {
    let image = load("crc-rv64gc.elf", RV64);
    let info = &image.files()[0];
    assert_eq!(info.path, "crc-rv64gc.elf");
    assert_eq!(info.entry, 0x8000_0000);
    assert_eq!(info.xlen, Xlen::Rv64);
    assert_eq!(info.flags, 0x5);
    assert!(info.has_rvc());
    assert!(!info.is_rve());
    assert_eq!(info.float_abi(), FloatAbi::Double);
    assert_eq!(info.segments, 0..3);

    // readelf -l: three PT_LOADs (RISCV_ATTRIBUTES and TLS are not loadable), sorted by vaddr.
    let segs = image.segments();
    let summary: Vec<_> = segs
        .iter()
        .map(|s| (s.vaddr, s.paddr, s.data.len() as u64, s.flags, s.file_index))
        .collect();
    assert_eq!(
        summary,
        [
            (0x8000_0000, 0x8000_0000, 0x20f0, PF_R | PF_X, 0),
            (0x8020_0000, 0x8000_20f0, 0x20, PF_R | PF_W, 0), // .data: LMA != VMA
            (0x8020_0020, 0x8020_0020, 0x1a08, PF_R | PF_W, 0), // .bss + .stack: filesz 0
        ]
    );
    // Contents: text from file offset 0x1000, .data from 0x4000, bss all zero.
    assert_eq!(segs[0].data[..], RV64[0x1000..0x1000 + 0x20f0]);
    assert_eq!(segs[1].data[..], RV64[0x4000..0x4020]);
    assert!(segs[2].data.iter().all(|&b| b == 0));
    assert!(segs[0].is_executable() && !segs[1].is_executable());
    assert_eq!(segs[1].vaddr_range(), 0x8020_0000..0x8020_0020);
    assert_eq!(segs[1].paddr_range(), 0x8000_20f0..0x8000_2110);
}

#[test]
fn rv32_header_and_segments() {
    let image = load("crc-rv32imac.elf", RV32);
    let info = &image.files()[0];
    assert_eq!(info.entry, 0x8000_0000);
    assert_eq!(info.xlen, Xlen::Rv32);
    assert_eq!(info.flags, 0x1);
    assert!(info.has_rvc());
    assert_eq!(info.float_abi(), FloatAbi::Soft);
    let summary: Vec<_> = image
        .segments()
        .iter()
        .map(|s| (s.vaddr, s.paddr, s.data.len() as u64, s.flags))
        .collect();
    assert_eq!(
        summary,
        [
            (0x8000_0000, 0x8000_0000, 0x2b88, PF_R | PF_X),
            (0x8020_0000, 0x8000_2b88, 0x18, PF_R | PF_W),
            (0x8020_0018, 0x8020_0018, 0x1908, PF_R | PF_W),
        ]
    );
    assert_eq!(image.segments()[0].data[..], RV32[0x1000..0x1000 + 0x2b88]);
}

#[test]
fn symbols_from_readelf() {
    let image = load("crc-rv64gc.elf", RV64);
    let check = |name: &str, addr: u64, size: u64, kind: SymbolKind| {
        let s = image
            .symbol_by_name(name)
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!((s.addr, s.size, s.kind), (addr, size, kind), "{name}");
    };
    check("_start", 0x8000_0000, 54, SymbolKind::Func);
    check("main", 0x8000_0210, 336, SymbolKind::Func);
    check("memset", 0x8000_03ea, 16, SymbolKind::Func);
    check("names", 0x8000_1a18, 256, SymbolKind::Object); // local
    check("stdout", 0x8000_20e0, 8, SymbolKind::Object);
    check("__global_pointer$", 0x8020_0820, 0, SymbolKind::Other);
    check("sys_semihost", 0x8000_1910, 0, SymbolKind::Other);
    check("__ram_size", 0x20_0000, 0, SymbolKind::Other); // SHN_ABS: kept for name lookup
    assert!(image.symbol_by_name("nonexistent").is_none());
    assert!(image.symbol_by_name("").is_none());
    // Section, file and mapping symbols are dropped.
    assert!(image.symbol_by_name(".text").is_none());
    assert!(image.symbol_by_name("$x").is_none());
    assert!(image.symbols().iter().all(|s| !s.name.starts_with('$')));
    assert!(image.symbol_by_name("crc32.c").is_none() && image.symbol_by_name("crt0.c").is_none());
    // Sorted by address; no (name, addr) duplicates.
    let syms = image.symbols();
    assert!(syms.windows(2).all(|w| w[0].addr <= w[1].addr));
    let mut keys: Vec<_> = syms.iter().map(|s| (&s.name, s.addr)).collect();
    keys.sort();
    let n = keys.len();
    keys.dedup();
    assert_eq!(keys.len(), n);

    let rv32 = load("crc-rv32imac.elf", RV32);
    let s = rv32.symbol_by_name("main").unwrap();
    assert_eq!((s.addr, s.size), (0x8000_01e0, 290));
    assert_eq!(rv32.symbol_by_name("_start").unwrap().size, 36);
    assert_eq!(rv32.symbol_by_name("_trap").unwrap().addr, 0x8000_0168);
}

#[test]
fn symbol_at_real() {
    let image = load("crc-rv64gc.elf", RV64);
    let at = |a: u64| image.symbol_at(a).map(|(s, off)| (s.name.as_str(), off));
    // _start and the absolute __flash share 0x80000000: the function wins.
    assert_eq!(at(0x8000_0000), Some(("_start", 0)));
    assert_eq!(at(0x8000_0210 + 335), Some(("main", 335)));
    assert_eq!(at(0x8000_0210 + 336), Some(("__riscv_save_12", 0)));
    // Nested: __riscv_save_12 (0x80000360, 66 bytes) contains __riscv_save_10/11 (0x80000368).
    assert_eq!(at(0x8000_0362), Some(("__riscv_save_12", 2)));
    assert_eq!(at(0x8000_036a), Some(("__riscv_save_10", 2)));
    // No sized symbol contains it: nearest preceding (NOTYPE assembly label).
    assert_eq!(at(0x8000_1914), Some(("sys_semihost", 4)));
    // Object.
    assert_eq!(at(0x8000_1a18 + 10), Some(("names", 10)));
    // Before any symbol of the segment / unmapped low memory (absolute symbols ignored).
    assert_eq!(at(0x10), None);
}

/// Parses a `tests/data/*.insns.txt` (objdump) listing into (address, word) pairs.
fn insns(listing: &str) -> Vec<(u64, u32)> {
    listing
        .lines()
        .map(|l| {
            let (a, w) = l.split_once(' ').unwrap();
            (
                u64::from_str_radix(a, 16).unwrap(),
                u32::from_str_radix(w, 16).unwrap(),
            )
        })
        .collect()
}

#[test]
fn fetch_matches_objdump() {
    for (name, bytes, listing, expect_len) in [
        ("crc-rv64gc.elf", RV64, RV64_INSNS, 2210),
        ("crc-rv32imac.elf", RV32, RV32_INSNS, 3193),
    ] {
        let image = load(name, bytes);
        let list = insns(listing);
        assert_eq!(list.len(), expect_len);
        for &(addr, word) in &list {
            assert_eq!(image.fetch(addr), Some(word), "{name} at {addr:#x}");
        }
    }
    // A few spot checks straight from `objdump -d`.
    let image = load("crc-rv64gc.elf", RV64);
    assert_eq!(image.fetch(0x8000_0000), Some(0x0040_0117)); // auipc sp,0x400
    assert_eq!(image.fetch(0x8000_000c), Some(0x8181_8193)); // addi gp,gp,-2024
    assert_eq!(image.fetch(0x8000_0014), Some(0x6309)); // c.lui t1,0x2
    assert_eq!(image.fetch(0x8000_0210), Some(0x1141)); // c.addi sp,-16
    assert_eq!(image.fetch(0x8000_021a), Some(0x41c6_55b7)); // lui a1,0x41c65
    assert_eq!(image.read_u16(0x8000_021a), Some(0x55b7));
    assert_eq!(image.read_u16(0x8000_021c), Some(0x41c6));
    let rv32 = load("crc-rv32imac.elf", RV32);
    assert_eq!(rv32.fetch(0x8000_01e0), Some(0x8020_1e37)); // lui t3,0x80201
    assert_eq!(rv32.fetch(0x8000_01e4), Some(0x6805)); // c.lui a6,0x1
    assert_eq!(rv32.fetch(0x8000_01e6), Some(0x1141));
    assert_eq!(rv32.fetch(0x8000_01e8), Some(0x91ce_0313));
}

#[test]
fn data_reads() {
    // objdump: stdout (0x800020e0) holds 0x80200000 (&__stdio); rv32 at 0x80002b80.
    let image = load("crc-rv64gc.elf", RV64);
    assert_eq!(le_u64(&image, 0x8000_20e0), 0x8020_0000);
    let rv32 = load("crc-rv32imac.elf", RV32);
    let mut b = [0u8; 4];
    assert!(rv32.read(0x8000_2b80, &mut b));
    assert_eq!(u32::from_le_bytes(b), 0x8020_0000);
    // .data is read at its virtual address (not its load address).
    let mut d = [0u8; 0x20];
    assert!(image.read(0x8020_0000, &mut d));
    assert_eq!(d[..], RV64[0x4000..0x4020]);
    // A read across the .data / .bss boundary (adjacent segments).
    let mut d = [0xffu8; 0x30];
    assert!(image.read(0x8020_0000, &mut d));
    assert_eq!(d[..0x20], RV64[0x4000..0x4020]);
    assert!(d[0x20..].iter().all(|&b| b == 0));
    // Unmapped: gap after text, below everything, past bss end, straddling the text end.
    let mut one = [0u8; 1];
    assert!(!image.read(0x8000_20f0, &mut one));
    assert!(!image.read(0, &mut one));
    assert!(!image.read(0x8020_0020 + 0x1a08, &mut one));
    let mut two = [0u8; 2];
    assert!(!image.read(0x8000_20ef, &mut two));
    assert!(image.read(0x8000_20ee, &mut two));
    assert!(image.read(0x1234, &mut []));
    assert_eq!(image.fetch(0x8000_20f0), None);
    assert_eq!(image.read_u16(0x8000_20ef), None);
    assert_eq!(image.fetch(u64::MAX), None);
}

/// Fetches every halfword of the text segment and checks it against the raw file bytes,
/// with the RISC-V length rule computed independently here.
#[test]
fn fetch_every_halfword_of_text() {
    for (name, bytes) in [("crc-rv64gc.elf", RV64), ("crc-rv32imac.elf", RV32)] {
        let image = load(name, bytes);
        let text = image.segments()[0].clone();
        assert!(text.is_executable());
        let file_text = &bytes[0x1000..0x1000 + text.data.len()];
        let mut n32 = 0;
        for off in (0..file_text.len()).step_by(2) {
            let addr = text.vaddr + off as u64;
            let lo = u16::from_le_bytes([file_text[off], file_text[off + 1]]);
            let expect = if lo & 3 != 3 {
                Some(u32::from(lo))
            } else if off + 4 <= file_text.len() {
                n32 += 1;
                Some(u32::from_le_bytes(
                    file_text[off..off + 4].try_into().unwrap(),
                ))
            } else {
                None // upper parcel would be unmapped
            };
            assert_eq!(image.fetch(addr), expect, "{name} {addr:#x}");
            assert_eq!(image.read_u16(addr), Some(lo), "{name} {addr:#x}");
            assert_eq!(image.segment_at(addr), Some(&text));
        }
        assert!(n32 > 100);
    }
}

#[test]
fn load_file_from_disk() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/crc-rv64gc.elf");
    let mut image = Image::new();
    let info = image.load_file(&path).unwrap();
    assert_eq!(info.path, path.display().to_string());
    assert_eq!(info.entry, 0x8000_0000);
    assert_eq!(image.segments(), load("x", RV64).segments());
}

/// A load bias moves segments, entry and symbols (not absolute ones); reads follow; the moved
/// copy sits beside the original without overlap.
#[test]
fn load_bias_moves_everything() {
    let plain = load("crc", RV64);
    let bias = 0x10_0000_0000u64;
    let mut image = Image::new();
    image.load_bytes("plain", RV64).unwrap();
    let info = image.load_bytes_at("moved", RV64, bias).unwrap().clone();
    assert_eq!(info.entry, 0x8000_0000 + bias);
    let moved: Vec<_> = image.segments()[info.segments.clone()].to_vec();
    assert_eq!(moved.len(), plain.segments().len());
    for (m, p) in moved.iter().zip(plain.segments()) {
        assert_eq!((m.vaddr, m.paddr), (p.vaddr + bias, p.paddr + bias));
        assert_eq!(m.data, p.data);
    }
    let main = plain.symbol_by_name("main").unwrap().addr;
    let (sym, off) = image.symbol_at(main + bias).unwrap();
    assert_eq!((sym.name.as_str(), off), ("main", 0));
    assert_eq!(image.fetch(main + bias), plain.fetch(main));
    // The same file without a bias overlaps the first copy.
    let e = image.load_bytes("again", RV64).unwrap_err().to_string();
    assert!(e.contains("overlaps"), "{e}");
    // A bias is added wrapping (a negative bias is a large one), but a segment that then runs
    // past the end of the address space is refused.
    let down = image
        .load_bytes_at("down", RV64, 0u64.wrapping_sub(0x1000_0000))
        .unwrap();
    assert_eq!(down.entry, 0x7000_0000);
    let e = image
        .load_bytes_at("wrap", RV64, u64::MAX - 0x8000_000f)
        .unwrap_err()
        .to_string();
    assert!(e.contains("wraps"), "{e}");
}

/// A raw binary: its bytes at the address, readable and fetchable, listed as a file; refused
/// when empty or overlapping. `ImageSpec`: `FILE[@ADDR]`, ELF or raw by the magic.
#[test]
fn raw_binary_and_image_spec() {
    use rvtrace_image::ImageSpec;
    let mut image = Image::new();
    image.load_bytes("crc", RV64).unwrap();
    // The text of the ELF, as a raw dump, placed elsewhere.
    let text = image.segments()[0].data.clone();
    let at = 0x2000_0000u64;
    let info = image.load_raw("dump.bin", &text, at, Xlen::Rv64).unwrap();
    assert_eq!((info.entry, info.xlen), (at, Xlen::Rv64));
    assert_eq!(image.fetch(at), image.fetch(0x8000_0000));
    assert!(image.segment_at(at).unwrap().is_executable());
    assert!(image.load_raw("empty", &[], 0x1000, Xlen::Rv64).is_err());
    let e = image
        .load_raw("over", &[0; 4], at + 2, Xlen::Rv64)
        .unwrap_err()
        .to_string();
    assert!(e.contains("overlaps"), "{e}");

    let spec = |s: &str| s.parse::<ImageSpec>();
    assert_eq!(
        spec("a.elf").unwrap(),
        ImageSpec {
            path: "a.elf".into(),
            at: None,
            scope: Default::default(),
            kind: Default::default()
        }
    );
    assert_eq!(
        spec("fw.bin@0x8000_0000").unwrap(),
        ImageSpec {
            path: "fw.bin".into(),
            at: Some(0x8000_0000),
            scope: Default::default(),
            kind: Default::default()
        }
    );
    assert_eq!(spec("x@4096").unwrap().at, Some(4096));
    assert_eq!(spec("me@host.elf").unwrap().path, Path::new("me@host.elf"));
    assert!(spec("fw.bin@0x8zz").is_err());
    assert!(spec("").is_err());
    assert!(ImageSpec::is_elf(RV64) && !ImageSpec::is_elf(&text));
}
