//! Profiles for other tools: a flame graph SVG (the `inferno` crate, from the folded stacks),
//! `perf script` sample text ([`perf_script`]) and a Firefox Profiler profile (the `fxprof-processed-profile` crate, which writes the viewer's
//! "processed profile" JSON, `meta.preprocessedProfileVersion` 55; the viewer upgrades older
//! processed versions when it loads them).

use crate::profile::Profile;
use crate::symbols::{SourceFrame, Symbols, UNKNOWN};
use crate::timeline::{Sample, Timeline, TimelineFrame};
use fxprof_processed_profile as fx;
use std::collections::HashMap;
use std::fmt::Write as _;

/// What a sample weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Retired instructions.
    Instructions,
    /// The flow's time units.
    Time,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Instructions => "instructions",
            Unit::Time => "time units",
        }
    }
}

/// Why a profile could not be exported.
#[derive(Debug)]
#[non_exhaustive]
pub enum ExportError {
    /// The profile holds no instruction ([`flamegraph`] draws nothing from nothing).
    EmptyProfile,
    /// `inferno` failed to draw the flame graph.
    FlameGraph(std::io::Error),
    /// The Firefox Profiler JSON could not be written.
    Firefox(serde_json::Error),
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExportError::EmptyProfile => {
                f.write_str("the profile is empty: no instruction was traced")
            }
            ExportError::FlameGraph(e) => write!(f, "flame graph: {e}"),
            ExportError::Firefox(e) => write!(f, "Firefox profile: {e}"),
        }
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExportError::EmptyProfile => None,
            ExportError::FlameGraph(e) => Some(e),
            ExportError::Firefox(e) => Some(e),
        }
    }
}

/// A flame graph SVG of `profile` titled `title`.
pub fn flamegraph(profile: &Profile, unit: Unit, title: &str) -> Result<Vec<u8>, ExportError> {
    let folded = profile.folded(unit == Unit::Time);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = unit.name().to_string();
    let mut svg = Vec::new();
    if folded.is_empty() {
        return Err(ExportError::EmptyProfile);
    }
    inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut svg)
        .map_err(ExportError::FlameGraph)?;
    Ok(svg)
}

/// A Firefox Profiler profile of the run `timeline` (one thread; its samples in trace order,
/// each weighted by what it stands for in `unit`), as JSON. The product name is `product`.
///
/// The time axis is the trace's time when the flow has it, else the retired-instruction count,
/// one unit a nanosecond of the viewer's clock (the process's and thread's name say which).
/// Every frame has its function, address and inline depth, and where there is DWARF its source
/// file and line (as `addr2line -i -f` gives them, [`Symbols::frames_at`]; with inlined
/// functions folded away the function's line is the instruction's innermost one); a function
/// has the file it is in and its declaration's line.
///
/// `fxprof-processed-profile` 0.8.1 builds the profile (threads, samples, stacks, categories),
/// but it has no way to give a frame a line or inline depth or a function a file, and it merges
/// frames of one name: frames go in under labels of their own, and the frame and function
/// tables, which the crate writes with those columns empty, are written again from ours
/// (`frameTable.func/address/line/inlineDepth`, `funcTable`, `stringArray`). Addresses are the
/// program's own (no library: the frames are symbolicated).
pub fn firefox(
    timeline: &Timeline,
    syms: &Symbols,
    unit: Unit,
    product: &str,
) -> Result<String, ExportError> {
    let t = timeline;
    let at = |s: &Sample| {
        if t.has_time {
            s.time.unwrap_or(0)
        } else {
            s.index
        }
    };
    let (first, last) = (
        t.samples.first().map_or(0, at),
        t.samples.last().map_or(0, at),
    );
    let interval = if t.has_time {
        ((last - first) / t.samples.len().max(1) as u64).max(1)
    } else {
        t.period.max(1)
    };
    let mut p = fx::Profile::new(
        product,
        fx::ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        fx::SamplingInterval::from_nanos(interval),
    );
    let start = fx::Timestamp::from_nanos_since_reference(first);
    let axis = if t.has_time {
        "time unit of the trace"
    } else {
        "retired instruction"
    };
    // The viewer names the main thread's track by its process.
    let name = format!("{product}: {} (timeline: 1 ns = 1 {axis})", unit.name());
    let process = p.add_process(&name, 1, start);
    let thread = p.add_thread(process, 1, start, true);
    p.set_thread_name(thread, &name);
    p.set_thread_samples_weight_type(thread, fx::WeightType::Samples);
    let cat: fx::CategoryPairHandle = p.add_category("Code", fx::CategoryColor::Blue).into();
    // Our frames, each under a label of its own (the crate keeps one frame per label).
    let mut keys: Vec<TimelineFrame> = Vec::new();
    let mut index: HashMap<TimelineFrame, fx::FrameHandle> = HashMap::new();
    let mut stacks: Vec<fx::StackHandle> = Vec::with_capacity(t.stacks.len());
    for st in &t.stacks {
        let h = match index.get(&st.frame) {
            Some(&h) => h,
            None => {
                let label = p.intern_string(&keys.len().to_string());
                let h = p.intern_frame(
                    thread,
                    fx::FrameInfo {
                        frame: fx::Frame::Label(label),
                        category_pair: cat,
                        flags: fx::FrameFlags::empty(),
                    },
                );
                keys.push(st.frame);
                index.insert(st.frame, h);
                h
            }
        };
        let prefix = st.prefix.map(|k| stacks[k as usize]);
        stacks.push(p.intern_stack(thread, prefix, h));
    }
    let mut now = first;
    for s in &t.samples {
        let mut n = match unit {
            Unit::Instructions => s.weight.insns,
            Unit::Time => s.weight.time,
        };
        let Some(stack) = s.stack.map(|k| stacks[k as usize]) else {
            continue;
        };
        now = now.max(at(s));
        // Weights are i32: a heavier sample takes several at the same time.
        while n > 0 {
            let k = n.min(i32::MAX as u64);
            p.add_sample(
                thread,
                fx::Timestamp::from_nanos_since_reference(now),
                Some(stack),
                fx::CpuDelta::ZERO,
                k as i32,
            );
            n -= k;
        }
    }
    let mut v = serde_json::to_value(&p).map_err(ExportError::Firefox)?;
    source_tables(&mut v["threads"][0], t, syms, &keys);
    serde_json::to_string(&v).map_err(ExportError::Firefox)
}

/// Writes the frame and function tables of the Firefox profile's thread `th` from our frames
/// `keys` (frame `k` of the thread is `keys[k]`; see [`firefox`]).
fn source_tables(th: &mut serde_json::Value, t: &Timeline, syms: &Symbols, keys: &[TimelineFrame]) {
    use serde_json::{json, Value};
    let mut strings: Vec<String> = Vec::new();
    let mut string_ids: HashMap<String, usize> = HashMap::new();
    let mut string = |s: &str| -> usize {
        *string_ids.entry(s.to_string()).or_insert_with(|| {
            strings.push(s.to_string());
            strings.len() - 1
        })
    };
    let mut chains: HashMap<u64, Vec<SourceFrame>> = HashMap::new();
    // Functions by name: (name, file, declaration line).
    let mut funcs: Vec<(usize, Value, Value)> = Vec::new();
    let mut func_ids: HashMap<u32, usize> = HashMap::new();
    let (mut func, mut address, mut line, mut depth) = (vec![], vec![], vec![], vec![]);
    for &TimelineFrame {
        name,
        addr,
        inline_depth: d,
        innermost,
    } in keys
    {
        let chain = addr.map(|a| chains.entry(a).or_insert_with(|| syms.frames_at(a)));
        let chain: &[SourceFrame] = chain.map_or(&[], |c| c.as_slice());
        // addr2line's frames are innermost first, the function itself last.
        let own = chain.len().checked_sub(1 + d as usize);
        let pos = if innermost {
            chain.first()
        } else {
            own.and_then(|i| chain.get(i))
        };
        let pos = pos.and_then(|f| f.line.as_ref());
        let f = *func_ids.entry(name).or_insert_with(|| {
            funcs.push((string(&t.names[name as usize]), Value::Null, Value::Null));
            funcs.len() - 1
        });
        // The function's file and declaration line: from its first frame that has them.
        let own = own.and_then(|i| chain.get(i));
        if let Some(l) = own
            .and_then(|o| o.line.as_ref())
            .filter(|_| funcs[f].1.is_null())
        {
            funcs[f].1 = json!(string(&l.file));
        }
        if let Some(d) = own
            .and_then(|o| o.decl_line)
            .filter(|_| funcs[f].2.is_null())
        {
            funcs[f].2 = json!(d);
        }
        func.push(json!(f));
        address.push(addr.map_or(json!(-1), |a| json!(a)));
        line.push(pos.map_or(Value::Null, |l| json!(l.line)));
        depth.push(json!(d));
    }
    let nf = funcs.len();
    th["stringArray"] = json!(strings);
    th["funcTable"] = json!({
        "length": nf,
        "name": funcs.iter().map(|f| f.0).collect::<Vec<_>>(),
        "isJS": vec![false; nf],
        "relevantForJS": vec![false; nf],
        "resource": vec![-1; nf],
        "fileName": funcs.iter().map(|f| f.1.clone()).collect::<Vec<_>>(),
        "lineNumber": funcs.iter().map(|f| f.2.clone()).collect::<Vec<_>>(),
        "columnNumber": vec![Value::Null; nf],
    });
    let ft = &mut th["frameTable"];
    ft["func"] = json!(func);
    ft["address"] = json!(address);
    ft["line"] = json!(line);
    ft["inlineDepth"] = json!(depth);
}

/// `profile` as the text `perf script` prints for samples with call chains (`-F
/// comm,pid,tid,cpu,time,period,event,ip,sym,dso`), the input of inferno's `collapse-perf` and
/// `stackcollapse-perf.pl`: frames innermost first, each frame the function's entry address,
/// name and `dso`; `comm` names the process (spaces become `_`).
///
/// With `period` 0, one sample per call stack, its period the stack's weight: inferno's
/// collapser adds the periods (inferno 0.12 `collapse/perf.rs`), so its folded stacks are ours
/// exactly. `stackcollapse-perf.pl` (FlameGraph) counts every sample as 1 whatever its period;
/// for it give a `period` N: a stack of weight w is then written as ⌊w/N⌋ samples of period N
/// and one of period w mod N (when not 0), so the periods still add up to w and the sample count
/// is w/N rounded up, what sampling every N instructions gives on average.
///
/// ```text
/// prog 1/1 [000] 0.000000: 1234 instructions:
///         80000200 main (prog.elf)
///         80000000 _start (prog.elf)
/// ```
pub fn perf_script(
    profile: &Profile,
    syms: &Symbols,
    unit: Unit,
    period: u64,
    comm: &str,
    dso: &str,
) -> String {
    let mut entry: HashMap<&str, u64> = HashMap::new();
    for f in syms.functions() {
        entry.entry(f.name.as_str()).or_insert(f.start);
    }
    let (comm, dso) = (comm.replace(' ', "_"), dso.replace(' ', "_"));
    let event = match unit {
        Unit::Instructions => "instructions",
        Unit::Time => "time",
    };
    let mut s = String::new();
    for (stack, w) in &profile.stacks {
        let n = match unit {
            Unit::Instructions => w.insns,
            Unit::Time => w.time,
        };
        if n == 0 || stack.is_empty() {
            continue;
        }
        // An inlined function (not a symbol) has the address of the function it is in, as
        // perf gives inlined frames their physical frame's address.
        let mut frames = Vec::with_capacity(stack.len());
        let mut outer = None;
        for name in stack {
            let a = match entry.get(name.as_str()) {
                Some(&a) if name != UNKNOWN => Some(a),
                _ if name != UNKNOWN => outer,
                _ => None,
            };
            outer = a;
            frames.push((a, name));
        }
        let mut chain = String::new();
        for (a, name) in frames.iter().rev() {
            match a {
                Some(a) => {
                    let _ = writeln!(chain, "\t{a:16x} {name} ({dso})");
                }
                None => {
                    let _ = writeln!(chain, "\t{:16x} {UNKNOWN} ([unknown])", 0);
                }
            }
        }
        let mut left = n;
        while left > 0 {
            let p = if period == 0 { left } else { left.min(period) };
            let _ = writeln!(s, "{comm} 1/1 [000] 0.000000: {p} {event}:");
            s.push_str(&chain);
            s.push('\n');
            left -= p;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_profile_draws_no_flame_graph() {
        let e = flamegraph(&Profile::default(), Unit::Instructions, "t").unwrap_err();
        assert!(matches!(e, ExportError::EmptyProfile));
        assert_eq!(
            e.to_string(),
            "the profile is empty: no instruction was traced"
        );
    }
}
