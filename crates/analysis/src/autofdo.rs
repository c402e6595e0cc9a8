//! The AutoFDO text sample format, as `create_llvm_prof --profiler=text` reads it (autofdo
//! 0.19 `sample_reader.cc`, `TextSampleReaderWriter`): three sections, each a decimal count of
//! lines followed by the lines, hexadecimal addresses and decimal counts:
//!
//! ```text
//! 2                 ranges: first-last instruction of a straight-line run, times it ran
//! 1a4-1c0:10
//! 200-210:3
//! 1                 addresses: instruction, times it ran
//! 1a4:10
//! 1                 branches: taken transfer from -> to, times taken
//! 1c0->200:3
//! ```
//!
//! Addresses are relative to the first `PT_LOAD` segment's virtual address: AutoFDO adds
//! `SymbolMap::base_addr()` (`ElfReader::VaddrOfFirstLoadSegment`) to every address it reads
//! (`profile.cc`, `AggregatePerFunctionProfile`). With its default `--use_lbr`, AutoFDO counts
//! instructions from the ranges and uses branches for call targets; the address section is what
//! it reads without LBR. Counts here are exact: every instruction of the trace.

use crate::counts::Counts;
use rvtrace_image::Image;
use std::fmt::Write as _;

/// The text profile for `counts`, addresses relative to `base` (the first `PT_LOAD`'s vaddr).
/// Addresses below `base` cannot be written and are left out; their number is returned.
pub fn text(counts: &Counts, image: &Image, base: u64) -> (String, u64) {
    let mut dropped = 0u64;
    let mut ranges: Vec<_> = counts
        .ranges
        .iter()
        .filter(|(&(s, _), _)| {
            s >= base || {
                dropped += 1;
                false
            }
        })
        .map(|(&(s, l), &n)| (s - base, l - base, n))
        .collect();
    ranges.sort_unstable();
    let addrs: Vec<_> = counts
        .per_address(image)
        .into_iter()
        .filter(|&(a, _)| a >= base)
        .map(|(a, n)| (a - base, n))
        .collect();
    let mut branches: Vec<_> = counts
        .branches
        .iter()
        .filter(|(&(f, t), _)| {
            f >= base && t >= base || {
                dropped += 1;
                false
            }
        })
        .map(|(&(f, t), &n)| (f - base, t - base, n))
        .collect();
    branches.sort_unstable();
    let mut s = String::new();
    let _ = writeln!(s, "{}", ranges.len());
    for (a, b, n) in ranges {
        let _ = writeln!(s, "{a:x}-{b:x}:{n}");
    }
    let _ = writeln!(s, "{}", addrs.len());
    for (a, n) in addrs {
        let _ = writeln!(s, "{a:x}:{n}");
    }
    let _ = writeln!(s, "{}", branches.len());
    for (a, b, n) in branches {
        let _ = writeln!(s, "{a:x}->{b:x}:{n}");
    }
    (s, dropped)
}
