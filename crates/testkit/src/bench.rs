//! Benchmark figures in one machine-readable form. Every bench prints its human-readable lines
//! and, for each figure the project tracks, one line `figure KEY VALUE UNIT` through [`figure`];
//! `scripts/bench.py` collects those lines, compares them with the last recorded figures
//! (`bench/figures.tsv`) and prints the table the README shows.

use std::time::Instant;

/// Print one tracked figure: `KEY` names it (`area.what`, no spaces), `UNIT` says what `VALUE`
/// counts (`Minsn/s`, `bits/insn`, `x`, ...).
pub fn figure(key: &str, value: f64, unit: &str) {
    assert!(
        !key.contains(char::is_whitespace) && !unit.contains(char::is_whitespace),
        "figure key and unit are single words: {key:?} {unit:?}"
    );
    println!("figure {key} {value:.4} {unit}");
}

/// The shortest of `runs` timings of `f` in seconds, with the last run's result: on a shared
/// machine the fastest run is the one least disturbed by other work.
pub fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(r);
    }
    (best, last.expect("at least one run"))
}
