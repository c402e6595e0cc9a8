//! Sample profiles for feedback-directed optimisation: the AutoFDO text sample format
//! ([`text`], for autofdo's `create_llvm_prof`), and LLVM's text sample profile ([`llvm`], for
//! `llvm-profdata` and `clang -fprofile-sample-use` directly, from the DWARF of any program).
//!
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
use crate::symbols::{clone_origin, SourceFrame, Symbols};
use rvtrace_image::Image;
use rvtrace_isa::{classify, CfClass, IsaConfig};
use std::collections::{BTreeMap, HashMap};
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

/// Samples of one function, or of one inlined copy of it, in LLVM's sample profile.
#[derive(Default)]
struct FnSamples {
    /// Times its first instruction ran (for an out-of-line function).
    head: u64,
    /// (Line offset, discriminator) -> times the line's block ran, and the functions called
    /// from it (name -> calls).
    body: BTreeMap<(u32, u32), (u64, BTreeMap<String, u64>)>,
    /// Inlined calls: (line offset of the call, callee) -> the callee's samples there.
    inlined: BTreeMap<(u32, String), FnSamples>,
}

impl FnSamples {
    /// Its total: its lines' counts and those of the calls inlined into it.
    fn total(&self) -> u64 {
        self.body.values().map(|b| b.0).sum::<u64>()
            + self.inlined.values().map(FnSamples::total).sum::<u64>()
    }

    fn write(&self, s: &mut String, depth: usize) {
        let pad = " ".repeat(depth);
        for (&(off, d), (n, calls)) in &self.body {
            let _ = match d {
                0 => write!(s, "{pad}{off}: {n}"),
                d => write!(s, "{pad}{off}.{d}: {n}"),
            };
            for (callee, c) in calls {
                let _ = write!(s, " {callee}:{c}");
            }
            s.push('\n');
        }
        for ((off, callee), f) in &self.inlined {
            let _ = writeln!(s, "{pad}{off}: {callee}:{}", f.total());
            f.write(s, depth + 1);
        }
    }
}

/// The line offset of `f`'s position in it: its line minus the function's declaration line
/// (what LLVM's `FunctionSamples::getOffset` computes from a `DILocation`).
fn offset(f: &SourceFrame) -> Option<u32> {
    f.line.as_ref()?.line.checked_sub(f.decl_line?)
}

/// LLVM's text sample profile (`SampleProfileReaderText`, the format `llvm-profdata merge
/// --sample` reads and `clang -fprofile-sample-use` takes once merged, or as it is): for each
/// function that ran, `name:total:head`, then one line per source line (and block of it) that
/// ran, `offset[.discriminator]: count [callee:calls ...]`, the offset counted from the
/// function's declaration line, and each call inlined into it as `offset: callee:total` with
/// the callee's lines below it, one space deeper (the DWARF inline frames,
/// [`Symbols::frames_at`]).
///
/// Counts are exact: a line's count is the most any of its instructions ran (what AutoFDO
/// computes from LBR ranges, `SymbolMap::MAX`), a function's total the sum of its lines' and
/// inlined calls', its head the times its first instruction ran; a call instruction's line
/// names the functions it went to and how often (the taken transfers to a function's entry).
/// Functions are named as the DWARF names them (a GCC clone by its origin: its copies are
/// one function); those without DWARF lines are left out.
///
/// The discriminator is the line table's, as it is ([`Symbols::discriminators`]; 0 is not
/// written): the blocks of one line (a loop's test and body, GCC's and clang's plain numbers)
/// count apart. Clang's `-fdebug-info-for-profiling` packs a base discriminator, a duplication
/// factor and a copy id into the value (LLVM `DILocation::encodeDiscriminator`); that value is
/// written undecoded and counts are not scaled by the duplication factor. An inlined call
/// site's discriminator (`DW_AT_GNU_discriminator` of the inline DIE) is not read: call sites
/// carry line offsets only.
pub fn llvm(counts: &Counts, image: &Image, syms: &Symbols, isa: IsaConfig) -> String {
    let exec = counts.per_address(image);
    let mut calls: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    for (&(from, to), &n) in &counts.branches {
        calls.entry(from).or_default().push((to, n));
    }
    let mut funcs: BTreeMap<String, FnSamples> = BTreeMap::new();
    let mut discs = syms.discriminators();
    for (&pc, &n) in &exec {
        let frames = syms.frames_at(pc);
        let Some(outer) = frames.last() else { continue };
        let Some(body) = frames.first().and_then(offset) else {
            continue;
        };
        let f = syms.function_at(pc);
        let mut fs = funcs
            .entry(clone_origin(&outer.raw_name).to_string())
            .or_default();
        if f.is_some_and(|f| f.start == pc) {
            fs.head += n;
        }
        // Down the inline chain: each frame's call of the next one in.
        let mut ok = true;
        for k in (1..frames.len()).rev() {
            let Some(off) = offset(&frames[k]) else {
                ok = false;
                break;
            };
            fs = fs
                .inlined
                .entry((off, frames[k - 1].raw_name.clone()))
                .or_default();
        }
        if !ok {
            continue;
        }
        let e = fs.body.entry((body, discs.at(pc))).or_default();
        e.0 = e.0.max(n);
        let call = image
            .fetch(pc)
            .map(|bits| classify(&isa, bits).class)
            .is_some_and(|c| {
                matches!(
                    c,
                    CfClass::InferableCall | CfClass::UninferableCall | CfClass::TableCall
                )
            });
        for &(to, c) in calls.get(&pc).filter(|_| call).into_iter().flatten() {
            if let Some(callee) = syms.function_at(to).filter(|g| g.start == to) {
                *e.1.entry(clone_origin(&callee.name).to_string())
                    .or_default() += c;
            }
        }
    }
    let mut s = String::new();
    for (name, f) in &funcs {
        let _ = writeln!(s, "{name}:{}:{}", f.total(), f.head);
        f.write(&mut s, 1);
    }
    s
}
