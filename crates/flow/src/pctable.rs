//! The PC list of every instruction of the program, formatted once: a range of the flow is then
//! one copy out of it ([`PcTable::range`]), whatever its length.
//!
//! For each executable segment, the addresses the linear sweep from its start finds (each
//! instruction's length found as [`crate::PcWriter`]'s walk finds it) are laid out one after the other, in
//! the writer's format ([`PcFormat`]): 8 bytes each, or each `0x<hex>\n` line. A range that
//! starts on the sweep follows it (the instruction after each one is where its length says), so
//! its output is the slice from its first entry to its last. A range the table cannot give
//! (starting inside another instruction, crossing an instruction of unknown length or the end
//! of the segment, in a segment that is not executable, or in an image whose segments overlap)
//! goes through the writer's instruction-by-instruction walk: the result is the same.
//!
//! A segment is swept the first time a range falls in it; the table is shared (`Sync`) by the
//! writers of a parallel decode's chunks.

use crate::{insn_len_at, put_hex_line, short_len, PcFormat, PC_LINE_MAX};
use rvtrace_image::Image;
use std::sync::OnceLock;

/// An entry index that is no entry: a half-word the sweep did not start an instruction at.
const NONE: u32 = u32::MAX;

/// Segments larger than this get no table (the text's offsets are u32).
const MAX_SEGMENT: usize = 1 << 28;

/// Every instruction address of the image's executable segments, formatted (see the [module
/// documentation](self)).
pub struct PcTable<'a> {
    image: &'a Image,
    format: PcFormat,
    segs: Vec<Seg>,
}

/// One executable segment: where it is, and its sweep once made.
struct Seg {
    /// Index in [`Image::segments`].
    index: usize,
    base: u64,
    len: u64,
    sweep: OnceLock<Sweep>,
}

/// The sweep of one segment.
struct Sweep {
    /// Entry of each half-word of the segment ([`NONE`] if no instruction starts there).
    entry: Vec<u32>,
    /// For each entry, the last entry that follows it without a break: the instruction after
    /// each entry up to it is the next entry.
    last: Vec<u32>,
    /// The formatted entries, one after the other.
    bytes: Vec<u8>,
    /// Text: where each entry's line starts in `bytes` (one more at the end). Empty for the
    /// binary format (8 bytes each).
    start: Vec<u32>,
}

impl<'a> PcTable<'a> {
    /// A table of `image`'s instructions in `format` (nothing is swept yet).
    pub fn new(image: &'a Image, format: PcFormat) -> Self {
        let segments = image.segments();
        let mut spans: Vec<_> = segments.iter().map(|s| s.vaddr_range()).collect();
        spans.sort_by_key(|r| r.start);
        // Where segments overlap, which one an address reads is the image's business: the
        // writer's walk asks it for every length, and the table stays empty.
        let overlap = spans.windows(2).any(|w| w[1].start < w[0].end);
        let segs = match overlap {
            true => Vec::new(),
            false => segments
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_executable() && !s.data.is_empty())
                .filter(|(_, s)| s.data.len() <= MAX_SEGMENT)
                .map(|(index, s)| Seg {
                    index,
                    base: s.vaddr,
                    len: s.data.len() as u64,
                    sweep: OnceLock::new(),
                })
                .collect(),
        };
        PcTable {
            image,
            format,
            segs,
        }
    }

    /// The image the table is made from.
    pub fn image(&self) -> &'a Image {
        self.image
    }

    /// The format of the table's entries.
    pub fn format(&self) -> PcFormat {
        self.format
    }

    /// The formatted addresses of the `count` instructions executed in sequence from `start`,
    /// as the writer's walk gives them, or `None` if the table cannot give them.
    #[inline(always)]
    pub fn range(&self, start: u64, count: u64) -> Option<&[u8]> {
        let seg = self
            .segs
            .iter()
            .find(|s| start.wrapping_sub(s.base) < s.len)?;
        let sweep = match seg.sweep.get() {
            Some(s) => s,
            None => self.first_sweep(seg),
        };
        let off = start - seg.base;
        if off & 1 != 0 || count == 0 {
            return None;
        }
        let k = *sweep.entry.get((off / 2) as usize)?;
        if k == NONE || count - 1 > u64::from(sweep.last[k as usize] - k) {
            return None;
        }
        let (k, end) = (k as usize, k as usize + count as usize);
        Some(match self.format {
            PcFormat::Bin => &sweep.bytes[8 * k..8 * end],
            PcFormat::Text => &sweep.bytes[sweep.start[k] as usize..sweep.start[end] as usize],
        })
    }

    /// The sweep of `seg`, made now (by one thread: the others wait for it).
    #[cold]
    #[inline(never)]
    fn first_sweep<'s>(&self, seg: &'s Seg) -> &'s Sweep {
        seg.sweep.get_or_init(|| self.sweep(seg.index))
    }

    /// The sweep of segment `index`: each instruction's length as the writer's walk finds it
    /// ([`short_len`], else [`insn_len_at`]).
    fn sweep(&self, index: usize) -> Sweep {
        let s = &self.image.segments()[index];
        let (base, data) = (s.vaddr, &s.data[..]);
        let mut entry = vec![NONE; data.len().div_ceil(2)];
        // Whether each entry's next instruction is the next entry.
        let mut linked: Vec<bool> = Vec::with_capacity(data.len() / 3);
        let mut bytes = Vec::with_capacity(match self.format {
            PcFormat::Bin => data.len() * 3,
            PcFormat::Text => data.len() * 4,
        });
        let mut start = Vec::new();
        let mut line = [0u8; PC_LINE_MAX];
        let mut off = 0usize;
        while off < data.len() {
            let pc = base + off as u64;
            entry[off / 2] = linked.len() as u32;
            match self.format {
                PcFormat::Bin => bytes.extend_from_slice(&pc.to_le_bytes()),
                PcFormat::Text => {
                    start.push(bytes.len() as u32);
                    let n = put_hex_line(&mut line, pc);
                    bytes.extend_from_slice(&line[..n]);
                }
            }
            let len = short_len(data, off)
                .or_else(|| insn_len_at(self.image, pc))
                .map(|l| l as usize);
            match len {
                Some(l) => {
                    linked.push(off + l < data.len());
                    off += l;
                }
                // The walk stops at an instruction of unknown length: so does the entry, and
                // the sweep goes on at the next half-word.
                None => {
                    linked.push(false);
                    off += 2;
                }
            }
        }
        start.push(bytes.len() as u32);
        let mut last = vec![0u32; linked.len()];
        for k in (0..linked.len()).rev() {
            last[k] = match linked[k] {
                true => last[k + 1],
                false => k as u32,
            };
        }
        if self.format == PcFormat::Bin {
            start = Vec::new();
        }
        Sweep {
            entry,
            last,
            bytes,
            start,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{for_each_pc, FlowElement, FlowSink, PcFormat, PcTable, PcWriter, PCS_BIN_MAGIC};
    use rvtrace_image::Image;
    use rvtrace_testkit::{elf_with_segments, Rng, PF_R, PF_W, PF_X};
    use std::sync::Arc;

    /// Code of every length encoding: 16, 32, 48, 64 and 80+ bits, and the reserved one
    /// (unknown length), `n` bytes (odd `n`: the segment ends in half a parcel).
    fn code(x: &mut Rng, n: usize) -> Vec<u8> {
        let mut b = Vec::new();
        while b.len() < n {
            let (parcel, len): (u16, usize) = match x.next_u64() % 40 {
                0 => (0x1f, 6),
                1 => (0x3f, 8),
                2 => (0x7f | 0x2000, 12),
                3 => (0x7f | 0x7000, 2),
                k if k < 20 => (0x01, 2),
                _ => (0x13, 4),
            };
            b.extend_from_slice(&parcel.to_le_bytes());
            for _ in 2..len {
                b.push(x.next_u64() as u8);
            }
        }
        b.truncate(n);
        b
    }

    /// Every range of random images (starts anywhere, even inside instructions; ranges into
    /// unknown lengths, past a segment's end, into the next segment, into data) written through the table and through the walk give the same bytes or both fail; and both equal `for_each_pc`.
    #[test]
    fn table_equals_walk() {
        for seed in 1..=12u64 {
            let mut x = Rng(seed);
            let base = 0x8000_0000u64;
            let odd = (x.next_u64() % 2) as usize;
            let a = code(&mut x, 3000 + odd);
            let b = code(&mut x, 1000 + odd);
            let c = code(&mut x, 400);
            let b_at = base + ((a.len() as u64 + 1) & !1);
            let c_at = match seed % 3 {
                // Right after b: ranges run from one segment into the next.
                0 => b_at + b.len() as u64,
                _ => b_at + 0x1000,
            };
            let c_flags = match seed % 2 {
                0 => PF_R | PF_W,
                _ => PF_R | PF_X,
            };
            let elf = elf_with_segments(
                true,
                base,
                &[
                    (PF_R | PF_X, base, &a),
                    (PF_R | PF_X, b_at, &b),
                    (c_flags, c_at, &c),
                ],
            );
            let mut image = Image::new();
            image.load_bytes("random", &elf).unwrap();
            for format in [PcFormat::Text, PcFormat::Bin] {
                let table = Arc::new(PcTable::new(&image, format));
                let mut good = 0;
                for _ in 0..1500 {
                    let start = match x.next_u64() % 4 {
                        0 => c_at + x.next_u64() % 400,
                        1 => b_at + x.next_u64() % 1000,
                        _ => base + x.next_u64() % 3000,
                    };
                    let count = match x.next_u64() % 10 {
                        0 => 0,
                        1 => 1 + x.next_u64() % 2000,
                        _ => 1 + x.next_u64() % 12,
                    };
                    let e = FlowElement::Range {
                        start,
                        last: 0,
                        count,
                        class: crate::CfClass::None,
                        taken: None,
                    };
                    let mut fast = PcWriter::with_table(Arc::clone(&table), Vec::new());
                    fast.element(&e);
                    // The same range given by its fields (`FlowSink::range`, what decoders
                    // call) writes the same.
                    let mut by_fields = PcWriter::with_table(Arc::clone(&table), Vec::new());
                    FlowSink::range(&mut by_fields, start, 0, count, crate::CfClass::None, None);
                    // A table of no segment: every range walked.
                    let none = PcTable {
                        image: &image,
                        format,
                        segs: Vec::new(),
                    };
                    let mut slow = PcWriter::with_table(Arc::new(none), Vec::new());
                    slow.element(&e);
                    let mut want = Vec::new();
                    let ok = for_each_pc(&image, start, count, |pc| want.push(pc)).is_ok();
                    let fast = fast.finish();
                    match (&fast, by_fields.finish()) {
                        (Ok(f), Ok(r)) => assert!(*f == r, "seed {seed} {start:#x}+{count}"),
                        (Err(_), Err(_)) => {}
                        (f, r) => panic!("seed {seed} {start:#x}+{count}: {f:?} vs {r:?}"),
                    }
                    match (fast, slow.finish()) {
                        (Ok(f), Ok(s)) => {
                            assert!(
                                ok,
                                "seed {seed} {start:#x}+{count} {want:x?} {}",
                                String::from_utf8_lossy(&f)
                            );
                            assert!(f == s, "seed {seed} {format:?} {start:#x}+{count}");
                            let text: Vec<u8> = match format {
                                PcFormat::Text => {
                                    { want.iter().flat_map(|p| format!("{p:#x}\n").into_bytes()) }
                                        .collect()
                                }
                                PcFormat::Bin => PCS_BIN_MAGIC
                                    .into_iter()
                                    .chain(want.iter().flat_map(|p| p.to_le_bytes()))
                                    .collect(),
                            };
                            assert!(f == text, "seed {seed} {format:?} {start:#x}+{count}");
                            good += 1;
                        }
                        (Err(_), Err(_)) => assert!(!ok, "seed {seed} {start:#x}+{count}"),
                        (f, s) => panic!("seed {seed} {start:#x}+{count}: {f:?} vs {s:?}"),
                    }
                }
                assert!(good > 300, "seed {seed}: {good} ranges written");
            }
        }
    }

    /// Many ranges through one writer: the buffer written out at its limit, ranges longer than
    /// it written straight out, in order.
    #[test]
    fn long_output() {
        let mut x = Rng(5);
        let base = 0x1000u64;
        // 16- and 32-bit instructions only: every range from the start is in the table.
        let a: Vec<u8> = (0..40_000)
            .flat_map(|_| match x.next_u64() % 2 {
                0 => vec![0x01, 0x00],
                _ => vec![0x13, 0x00, 0x00, 0x00],
            })
            .collect();
        let elf = elf_with_segments(false, base, &[(PF_R | PF_X, base, &a)]);
        let mut image = Image::new();
        image.load_bytes("long", &elf).unwrap();
        for format in [PcFormat::Text, PcFormat::Bin] {
            let mut w = PcWriter::with_format(&image, Vec::new(), format);
            let mut want = Vec::new();
            for _ in 0..200 {
                let count = match x.next_u64() % 8 {
                    0 => 1 + x.next_u64() % 30_000,
                    _ => 1 + x.next_u64() % 300,
                };
                w.element(&FlowElement::Range {
                    start: base,
                    last: 0,
                    count,
                    class: crate::CfClass::None,
                    taken: None,
                });
                for_each_pc(&image, base, count, |pc| want.push(pc)).unwrap();
            }
            assert_eq!(w.count, want.len() as u64);
            let got = w.finish().unwrap();
            let text: Vec<u8> = match format {
                PcFormat::Text => want
                    .iter()
                    .flat_map(|p| format!("{p:#x}\n").into_bytes())
                    .collect(),
                PcFormat::Bin => PCS_BIN_MAGIC
                    .into_iter()
                    .chain(want.iter().flat_map(|p| p.to_le_bytes()))
                    .collect(),
            };
            assert!(got == text, "{format:?}");
        }
    }
}
