//! `run --counters`: a `perf stat`-like table of every event the hart model counts.

use rvtrace_sim::counters::{resolve, EVENTS};
use rvtrace_sim::Hart;

/// `n` with thousands separators (`1,234,567`).
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The table's lines: one per event, total and per privilege mode, with the rate per 1000
/// retired instructions (the counters' view: `ecall`/`ebreak` not counted).
pub fn table(hart: &Hart) -> Vec<String> {
    let c = &hart.counters;
    let at = hart.instret;
    let total = |idx: u64| -> [u64; 4] {
        let e = resolve(idx);
        let by: [u64; 3] = [0u8, 1, 3].map(|m| c.event_total(e, m, at));
        [by[0] + by[1] + by[2], by[0], by[1], by[2]]
    };
    let insns = total(rvtrace_sim::counters::event::INSTRUCTIONS)[0].max(1);
    let mut lines = vec![
        "performance counters of the hart model (SBI PMU event_idx; rate per 1000 instructions)"
            .to_string(),
        format!(
            "  {:>9}  {:<24} {:>15} {:>10} {:>15} {:>15} {:>15}",
            "event_idx", "event", "total", "/1000", "U-mode", "S-mode", "M-mode"
        ),
    ];
    // What the counts rest on: a part of the model that is off counts nothing, and without
    // timing a cycle is an instruction (issue 29: say so rather than show zeros as facts).
    let cfg = hart.uarch.config();
    let mut off = Vec::new();
    if cfg.l1i.is_none() && cfg.l1d.is_none() {
        off.push("no caches: the cache events count nothing (--cache l1d:32k:8:64 ...)");
    } else if cfg.l1i.is_none() || cfg.l1d.is_none() {
        off.push("one L1 cache only: the other one's events count nothing (--cache)");
    }
    if cfg.timing.is_none() {
        off.push("no timing: cycles = instructions (--timing on)");
    }
    if cfg.bpred.is_none() {
        off.push("no branch predictor: the mispredict events count nothing (--bpred)");
    }
    let header = lines.split_off(1);
    lines.push(format!("  model: {cfg}"));
    lines.extend(off.iter().map(|o| format!("  off: {o}")));
    lines.extend(header);
    for &(idx, name, _) in EVENTS {
        let [t, u, s, m] = total(idx);
        lines.push(format!(
            "    0x{:05x}  {:<24} {:>15} {:>10.2} {:>15} {:>15} {:>15}",
            idx,
            name,
            grouped(t),
            t as f64 * 1000.0 / insns as f64,
            grouped(u),
            grouped(s),
            grouped(m)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    #[test]
    fn grouping() {
        assert_eq!(super::grouped(0), "0");
        assert_eq!(super::grouped(999), "999");
        assert_eq!(super::grouped(1000), "1,000");
        assert_eq!(super::grouped(1234567), "1,234,567");
    }
}
