//! The PC list of every instruction of the program, formatted once: a range of the flow is then
//! one copy out of it ([`PcTable::range`]), whatever its length.
//!
//! For each executable segment, the addresses the linear sweep from its start finds (each
//! instruction's length read from its first byte, as [`crate::PcWriter`] reads it: RISC-V
//! Unprivileged "Expanded Instruction-Length Encoding") are laid out one after the other, in
//! the writer's format ([`PcFormat`]): 8 bytes each, or each `0x<hex>\n` line. A range that
//! starts on the sweep follows it (the instruction after each one is where its length says), so
//! its output is the slice from its first entry to its last. A range the table cannot give
//! (starting inside another instruction, crossing an instruction of unknown length or the end
//! of the segment, in a segment that is not executable, or in an image whose segments overlap)
//! goes through the writer's instruction-by-instruction walk: the result is the same.
//!
//! A segment is swept the first time a range falls in it; the table is shared (`Sync`) by the
//! writers of a parallel decode's chunks.

use crate::{insn_len_at, put_hex_line, PcFormat, PC_LINE_MAX};
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
    /// (its first byte; [`insn_len_at`] for the longer encodings).
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
            let len = match data[off] {
                b if b & 3 != 3 => Some(2),
                b if b & 0x1c != 0x1c => Some(4),
                _ => insn_len_at(self.image, pc).map(|l| l as usize),
            };
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
