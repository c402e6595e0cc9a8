//! Never panic on any input: truncated prefixes (every length) and random corruption.

use crate::common;

use common::*;
use rvtrace_image::Image;
use rvtrace_rng::Rng;

const RV64: &[u8] = include_bytes!("data/crc-rv64gc.elf");
const RV32: &[u8] = include_bytes!("data/crc-rv32imac.elf");

/// Runs every query on a successfully loaded image (must not panic either).
fn exercise(image: &Image, rng: &mut Rng) {
    let mut probes = vec![0, 1, u64::MAX, u64::MAX - 1, 0x8000_0000];
    for s in image.segments() {
        let r = s.vaddr_range();
        probes.extend([r.start, r.end, r.end.wrapping_sub(1), r.end.wrapping_sub(2)]);
        probes.push(r.start.wrapping_add(rng.next_u64() % (r.end - r.start)));
    }
    for s in image.symbols().iter().take(50) {
        probes.extend([s.addr, s.addr.wrapping_add(s.size)]);
        assert!(image.symbol_by_name(&s.name).is_some());
    }
    for &a in &probes {
        let _ = image.fetch(a);
        let _ = image.read_u16(a);
        let _ = image.symbol_at(a);
        let _ = image.segment_at(a);
        let mut buf = [0u8; 13];
        let _ = image.read(a, &mut buf);
    }
    for f in image.files() {
        let _ = &image.segments()[f.segments.clone()];
    }
}

#[test]
fn every_truncated_prefix() {
    let synthetic64 = ElfBuilder::new(true)
        .seg(Seg::new(0x1000, pattern(0x30, 0)))
        .sym(Sym::new("f", 0x1000, 4, STT_FUNC, STB_GLOBAL))
        .bytes();
    let synthetic32 = ElfBuilder::new(false)
        .seg(Seg::new(0x1000, pattern(0x30, 0)))
        .sym(Sym::new("f", 0x1000, 4, STT_FUNC, STB_GLOBAL))
        .bytes();
    for full in [RV64, RV32, &synthetic64[..], &synthetic32[..]] {
        for len in 0..full.len() {
            let mut image = Image::new();
            let r = image.load_bytes("prefix.elf", &full[..len]);
            // Section headers are at the end of all these files, so every proper prefix fails.
            let e = r.expect_err("proper prefix must not load");
            assert!(e.to_string().starts_with("prefix.elf: "));
            assert!(image.files().is_empty());
        }
        let mut image = Image::new();
        image.load_bytes("full.elf", full).unwrap();
    }
}

#[test]
fn random_corruption() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let synthetic = ElfBuilder::new(false)
        .seg(Seg::new(0x1000, pattern(0x30, 0)))
        .seg(Seg::new(0x2000, pattern(0x10, 0)))
        .sym(Sym::new("f", 0x1000, 4, STT_FUNC, STB_GLOBAL))
        .sym(Sym::new("g", 0x2000, 0, STT_NOTYPE, STB_LOCAL))
        .bytes();
    let mut loaded = 0;
    let mut failed = 0;
    let mut kinds = std::collections::HashSet::new();
    for base in [RV64, RV32, &synthetic[..]] {
        let shoff = if base[4] == 2 {
            u64::from_le_bytes(base[40..48].try_into().unwrap()) as usize
        } else {
            u32::from_le_bytes(base[32..36].try_into().unwrap()) as usize
        };
        let header_end = 0x200.min(base.len());
        for _ in 0..4000 {
            let mut bytes = base.to_vec();
            for _ in 0..1 + rng.index(4) {
                // Mostly hit the structures the parser reads.
                let pos = match rng.index(4) {
                    0 | 1 => rng.index(header_end),
                    2 => shoff + rng.index(bytes.len() - shoff),
                    _ => rng.index(bytes.len()),
                };
                bytes[pos] = match rng.index(4) {
                    0 => 0,
                    1 => 0xff,
                    2 => bytes[pos] ^ (1 << rng.index(8)),
                    _ => rng.next_u64() as u8,
                };
            }
            let mut image = Image::new();
            match image.load_bytes("flip.elf", &bytes) {
                Ok(_) => {
                    loaded += 1;
                    exercise(&image, &mut rng);
                    // A second file on top: usually overlaps, must not panic either way.
                    let _ = image.load_bytes("again.elf", &bytes);
                    exercise(&image, &mut rng);
                }
                Err(e) => {
                    failed += 1;
                    kinds.insert(std::mem::discriminant(&e));
                    let msg = e.to_string();
                    assert!(
                        msg.starts_with("flip.elf: ") && !msg.contains('\n'),
                        "{msg}"
                    );
                }
            }
        }
    }
    // Both outcomes must have been exercised substantially.
    assert!(
        loaded > 1000 && failed > 1000,
        "loaded {loaded}, failed {failed}"
    );
    // ... and the corruption reached many different checks.
    eprintln!(
        "loaded {loaded}, failed {failed}, {} error kinds",
        kinds.len()
    );
    assert!(kinds.len() >= 7, "{} error kinds", kinds.len());
}

#[test]
fn random_garbage_after_magic() {
    let mut rng = Rng(42);
    for _ in 0..20_000 {
        let len = rng.index(600);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        if len >= 20 {
            bytes[..4].copy_from_slice(b"\x7fELF");
            bytes[4] = 1 + rng.index(2) as u8;
            bytes[5] = 1;
            bytes[18..20].copy_from_slice(&243u16.to_le_bytes());
        }
        let mut image = Image::new();
        if image.load_bytes("garbage.elf", &bytes).is_ok() {
            exercise(&image, &mut rng);
        }
    }
}
