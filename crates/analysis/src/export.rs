//! Profiles for other tools: a flame graph SVG (the `inferno` crate, from the folded stacks),
//! `perf script` sample text ([`perf_script`]) and a Firefox Profiler profile (the `fxprof-processed-profile` crate, which writes the viewer's
//! "processed profile" JSON, `meta.preprocessedProfileVersion` 55; the viewer upgrades older
//! processed versions when it loads them).

use crate::profile::Profile;
use crate::symbols::{Symbols, UNKNOWN};
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

/// A Firefox Profiler profile of `profile` (one thread; one sample per call stack, weighted by
/// `unit`), as JSON. The product name is `product`.
pub fn firefox(profile: &Profile, unit: Unit, product: &str) -> Result<String, ExportError> {
    let mut p = fx::Profile::new(
        product,
        fx::ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        fx::SamplingInterval::from_nanos(1000),
    );
    let start = fx::Timestamp::from_millis_since_reference(0.0);
    let process = p.add_process(product, 1, start);
    let thread = p.add_thread(process, 1, start, true);
    p.set_thread_name(thread, unit.name());
    p.set_thread_samples_weight_type(thread, fx::WeightType::Samples);
    let cat: fx::CategoryPairHandle = p.add_category("Code", fx::CategoryColor::Blue).into();
    let mut t = 0u64;
    for (stack, w) in &profile.stacks {
        let mut n = match unit {
            Unit::Instructions => w.insns,
            Unit::Time => w.time,
        };
        if n == 0 || stack.is_empty() {
            continue;
        }
        let frames: Vec<fx::FrameInfo> = stack
            .iter()
            .map(|name| fx::FrameInfo {
                frame: fx::Frame::Label(p.intern_string(name)),
                category_pair: cat,
                flags: fx::FrameFlags::empty(),
            })
            .collect();
        let sh = p.intern_stack_frames(thread, frames.into_iter());
        // Weights are i32: a heavier stack takes several samples.
        while n > 0 {
            let k = n.min(i32::MAX as u64);
            p.add_sample(
                thread,
                fx::Timestamp::from_nanos_since_reference(t * 1000),
                sh,
                fx::CpuDelta::ZERO,
                k as i32,
            );
            t += 1;
            n -= k;
        }
    }
    serde_json::to_string(&p).map_err(ExportError::Firefox)
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
