//! Line, function and branch coverage from exact execution counts and DWARF line tables,
//! written as an lcov tracefile (the format of `geninfo(1)`: `TN`, `SF`, `FN`, `FNDA`, `FNF`,
//! `FNH`, `BRDA`, `BRF`, `BRH`, `DA`, `LF`, `LH`, `end_of_record`).
//!
//! * A line is found when the line table maps an instruction of a function to it; its count
//!   is the largest count of its instructions (a line is hit when any of them retired).
//! * A function (with a line) is hit when its first instruction retired; `FNDA` is that count.
//!   Functions are named as people wrote them: demangled, a GCC clone by its origin
//!   (`quick_sort.constprop.0` is `quick_sort`, [`crate::symbols::display_name`]).
//! * A function inlined somewhere (DWARF `DW_TAG_inlined_subroutine`, the frames
//!   `addr2line -i` lists) is a function of its own file too. Its code has no entry instruction
//!   (the compiler mixes it with its caller's), so each inlined copy counts as often as the
//!   most-executed of its instructions (as a line does).
//! * A function's line (`FN`) is its declaration's (`DW_AT_decl_line`), else its first line
//!   with code.
//! * The copies of one function (clones, inlined copies, the out-of-line one) are one record:
//!   its first line, the sum of their counts.
//! * A conditional branch (`rvtrace_isa` class `Branch`) gives two lcov branches on its line:
//!   taken (branch 0: the flow went from it to its target) and not taken (branch 1: the next
//!   instruction in the same range); `-` when the branch never executed.

use crate::counts::Counts;
use crate::symbols::{display_name, Line, SourceFrame, Symbols};
use rvtrace_flow::insn_len_at;
use rvtrace_image::Image;
use rvtrace_isa::{classify, CfClass, IsaConfig};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// Totals of a coverage report (what `lcov --summary` prints).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Lines found.
    pub lines_found: u64,
    /// Lines hit.
    pub lines_hit: u64,
    /// Functions found.
    pub functions_found: u64,
    /// Functions hit.
    pub functions_hit: u64,
    /// Branch directions found (two per conditional branch).
    pub branches_found: u64,
    /// Branch directions taken at least once.
    pub branches_hit: u64,
}

#[derive(Default)]
struct FileCov {
    /// name -> (first line, count)
    functions: BTreeMap<String, (u32, u64)>,
    lines: BTreeMap<u32, u64>,
    // line -> branches in address order: (executed, taken, not taken)
    branches: BTreeMap<u32, Vec<(u64, u64, u64)>>,
}

/// Adds a copy of function `name` starting at `at`, run `n` times: one record per name and
/// file, at the first line of its copies, their counts added.
fn add_function(files: &mut BTreeMap<String, FileCov>, at: &Line, name: &str, n: u64) {
    let fc = files.entry(at.file.clone()).or_default();
    match fc.functions.get_mut(name) {
        Some(e) => {
            e.0 = e.0.min(at.line);
            e.1 += n;
        }
        None => {
            fc.functions.insert(name.to_string(), (at.line, n));
        }
    }
}

/// Coverage of one program.
pub struct Coverage {
    files: BTreeMap<String, FileCov>,
}

impl Coverage {
    /// Coverage of the program (`image`, `syms` with line tables) from `counts`.
    pub fn new(counts: &Counts, image: &Image, syms: &Symbols, isa: IsaConfig) -> Coverage {
        let exec = counts.per_address(image);
        let mut ends: HashMap<u64, u64> = HashMap::new();
        for (&(_, last), &n) in &counts.ranges {
            *ends.entry(last).or_default() += n;
        }
        let mut files: BTreeMap<String, FileCov> = BTreeMap::new();
        for f in syms.functions() {
            let rows = syms.lines_in(f.start, f.end);
            let Some(entry) = syms
                .line_at(f.start)
                .or_else(|| rows.first().map(|r| r.2.clone()))
            else {
                continue;
            };
            let hits = exec.get(&f.start).copied().unwrap_or(0);
            // At its declaration's line when the DWARF has it (the line of its name).
            let decl = syms.frames_at(f.start).last().and_then(|fr| fr.decl_line);
            let at = Line {
                line: decl.filter(|&d| d <= entry.line).unwrap_or(entry.line),
                ..entry
            };
            add_function(&mut files, &at, &display_name(&f.name), hits);
            // Inlined copies: (function, where it was inlined) -> (first line, count).
            let mut inlined: BTreeMap<(String, Vec<SourceFrame>), (Line, u64)> = BTreeMap::new();
            // Walk the instructions of each line-table row.
            for (addr, len, line) in rows {
                let fc = files.entry(line.file.clone()).or_default();
                let mut pc = addr.max(f.start);
                let end = addr.saturating_add(len).min(f.end);
                let mut any = false;
                let mut best = 0u64;
                while pc < end {
                    let n = exec.get(&pc).copied().unwrap_or(0);
                    any = true;
                    best = best.max(n);
                    let frames = syms.frames_at(pc);
                    for (k, fr) in frames
                        .iter()
                        .enumerate()
                        .take(frames.len().saturating_sub(1))
                    {
                        let Some(l) = &fr.line else { continue };
                        let key = (fr.function.clone(), frames[k + 1..].to_vec());
                        let e = inlined.entry(key).or_insert((l.clone(), 0));
                        let first = fr.decl_line.filter(|&d| d <= l.line).unwrap_or(l.line);
                        if l.file == e.0.file && first < e.0.line {
                            e.0.line = first;
                        }
                        e.1 = e.1.max(n);
                    }
                    let Some(l) = insn_len_at(image, pc) else {
                        break;
                    };
                    if let Some(bits) = image.fetch(pc) {
                        let info = classify(&isa, bits);
                        if info.class == CfClass::Branch {
                            if let Some(t) = info.target_addr(pc, isa.xlen) {
                                let taken = counts.branches.get(&(pc, t)).copied().unwrap_or(0);
                                let not_taken =
                                    n.saturating_sub(ends.get(&pc).copied().unwrap_or(0));
                                fc.branches
                                    .entry(line.line)
                                    .or_default()
                                    .push((n, taken, not_taken));
                            }
                        }
                    }
                    pc = pc.saturating_add(l);
                }
                if any {
                    let e = fc.lines.entry(line.line).or_default();
                    *e = (*e).max(best);
                }
            }
            for ((name, _), (line, n)) in inlined {
                add_function(&mut files, &line, &name, n);
            }
        }
        Coverage { files }
    }

    /// Adds the coverage of the same program's code run in another address space ([`System`]:
    /// a file every space holds, such as a kernel, is covered in each): counts add, line by
    /// line, function by function and branch by branch (a line's branches are the same
    /// instructions when their number agrees; else both lists are kept).
    ///
    /// [`System`]: crate::System
    pub fn merge(&mut self, other: Coverage) {
        for (name, fc) in other.files {
            let into = self.files.entry(name).or_default();
            for (f, (line, n)) in fc.functions {
                let e = into.functions.entry(f).or_insert((line, 0));
                e.0 = e.0.min(line);
                e.1 += n;
            }
            for (line, n) in fc.lines {
                *into.lines.entry(line).or_default() += n;
            }
            for (line, bs) in fc.branches {
                let e = into.branches.entry(line).or_default();
                if e.len() == bs.len() {
                    for (a, b) in e.iter_mut().zip(bs) {
                        *a = (a.0 + b.0, a.1 + b.1, a.2 + b.2);
                    }
                } else if e.is_empty() {
                    *e = bs;
                } else {
                    e.extend(bs);
                }
            }
        }
    }

    /// The source files, as the line tables name them.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// Renames or leaves out source files: `f` gives each file's new name, or `None` to leave it
    /// out of the tracefile and the totals. Files that come to the same name are merged (a
    /// line's count is the larger, as for the instructions of one line). Returns the totals of
    /// what was left out.
    pub fn map_files(&mut self, mut f: impl FnMut(&str) -> Option<String>) -> Summary {
        let mut kept: BTreeMap<String, FileCov> = BTreeMap::new();
        let mut left = Coverage {
            files: BTreeMap::new(),
        };
        for (name, fc) in std::mem::take(&mut self.files) {
            let Some(new) = f(&name) else {
                left.files.insert(name, fc);
                continue;
            };
            let into = kept.entry(new).or_default();
            into.functions.extend(fc.functions);
            for (line, n) in fc.lines {
                let e = into.lines.entry(line).or_default();
                *e = (*e).max(n);
            }
            for (line, bs) in fc.branches {
                into.branches.entry(line).or_default().extend(bs);
            }
        }
        self.files = kept;
        left.summary()
    }

    /// The totals.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for fc in self.files.values() {
            s.functions_found += fc.functions.len() as u64;
            s.functions_hit += fc.functions.values().filter(|f| f.1 > 0).count() as u64;
            s.lines_found += fc.lines.len() as u64;
            s.lines_hit += fc.lines.values().filter(|&&n| n > 0).count() as u64;
            for b in fc.branches.values().flatten() {
                s.branches_found += 2;
                s.branches_hit += (b.1 > 0) as u64 + (b.2 > 0) as u64;
            }
        }
        s
    }

    /// The lcov tracefile, test name `test_name` (`TN:`).
    pub fn lcov(&self, test_name: &str) -> String {
        let mut s = String::new();
        for (file, fc) in &self.files {
            if fc.lines.is_empty() && fc.functions.is_empty() {
                continue;
            }
            let _ = writeln!(s, "TN:{test_name}\nSF:{file}");
            for (name, (line, _)) in &fc.functions {
                let _ = writeln!(s, "FN:{line},{name}");
            }
            for (name, (_, n)) in &fc.functions {
                let _ = writeln!(s, "FNDA:{n},{name}");
            }
            let _ = writeln!(s, "FNF:{}", fc.functions.len());
            let hit = fc.functions.values().filter(|f| f.1 > 0).count();
            let _ = writeln!(s, "FNH:{hit}");
            let (mut found, mut hit) = (0, 0);
            for (line, bs) in &fc.branches {
                for (block, &(exec, taken, not)) in bs.iter().enumerate() {
                    for (k, n) in [taken, not].into_iter().enumerate() {
                        found += 1;
                        hit += (n > 0) as u64;
                        if exec == 0 {
                            let _ = writeln!(s, "BRDA:{line},{block},{k},-");
                        } else {
                            let _ = writeln!(s, "BRDA:{line},{block},{k},{n}");
                        }
                    }
                }
            }
            let _ = writeln!(s, "BRF:{found}\nBRH:{hit}");
            for (line, n) in &fc.lines {
                let _ = writeln!(s, "DA:{line},{n}");
            }
            let _ = writeln!(s, "LF:{}", fc.lines.len());
            let _ = writeln!(s, "LH:{}", fc.lines.values().filter(|&&n| n > 0).count());
            let _ = writeln!(s, "end_of_record");
        }
        s
    }
}
