//! What a trace costs (`rvtrace stats`), the same report for every protocol: instructions,
//! bytes, bits per instruction with and without the framing, the mix of messages or packets,
//! the spacing of synchronisation points, losses. Each protocol crate counts its own units
//! (`rvtrace_ntrace::stats`, `rvtrace_etrace::stats`) into a [`StatsBuilder`].

use std::collections::BTreeMap;
use std::fmt::Write;

/// One kind of message or packet (an N-Trace TCODE, an E-Trace format.subformat).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KindStats {
    /// Its name (`TCODE 28 IndirectBranchHist`, `3.1 trap`).
    pub name: String,
    /// How many.
    pub count: u64,
    /// Their bits without framing (N-Trace: MDO bits; E-Trace: payload bits).
    pub bits: u64,
    /// Their bits with framing (whole bytes).
    pub framed_bits: u64,
}

/// Minimum, total and maximum of a distance, and how many were measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spacing {
    /// Distances measured.
    pub count: u64,
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Sum (the mean is `sum / count`).
    pub sum: u64,
}

impl Spacing {
    fn add(&mut self, v: u64) {
        if self.count == 0 {
            self.min = v;
            self.max = v;
        }
        self.count += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v;
    }

    /// The mean, 0 when nothing was measured.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

/// The report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceStats {
    /// `ntrace` or `etrace`.
    pub protocol: String,
    /// What a unit is called (`messages`, `packets`).
    pub unit_name: String,
    /// Instructions the decoder reported.
    pub instructions: u64,
    /// Bytes of the trace (framing, idle and damaged bytes included).
    pub bytes: u64,
    /// Bits of the messages or packets without framing.
    pub payload_bits: u64,
    /// Messages or packets.
    pub units: u64,
    /// Per kind, in the protocol's order.
    pub kinds: Vec<KindStats>,
    /// Synchronisation messages or packets.
    pub syncs: u64,
    /// Instructions between consecutive synchronisation points.
    pub sync_instructions: Spacing,
    /// Bytes between consecutive synchronisation points (start to start).
    pub sync_bytes: Spacing,
    /// Losses the decoder reported.
    pub losses: u64,
    /// The protocol's own counts (idle bytes, Error messages, framing errors, ...).
    pub extra: Vec<(String, u64)>,
}

impl TraceStats {
    /// Bits per instruction, framing included (every byte of the trace).
    pub fn bits_per_instruction(&self) -> f64 {
        ratio(self.bytes * 8, self.instructions)
    }

    /// Bits per instruction without framing.
    pub fn payload_bits_per_instruction(&self) -> f64 {
        ratio(self.payload_bits, self.instructions)
    }

    /// The report for people.
    pub fn text(&self, payload_what: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "instructions      {}", self.instructions);
        let _ = writeln!(s, "bytes             {} (framing included)", self.bytes);
        let _ = writeln!(
            s,
            "payload bits      {} ({payload_what})",
            self.payload_bits
        );
        let _ = writeln!(
            s,
            "bits/instruction  {:.3} with framing, {:.3} without",
            self.bits_per_instruction(),
            self.payload_bits_per_instruction()
        );
        let _ = writeln!(s, "{:<17} {}", self.unit_name, self.units);
        let w = self.kinds.iter().map(|k| k.name.len()).max().unwrap_or(0);
        for k in &self.kinds {
            let _ = writeln!(
                s,
                "  {:<w$}  {:>9}  {:>11} bits  {:>11} with framing  {:>6.2}%",
                k.name,
                k.count,
                k.bits,
                k.framed_bits,
                100.0 * ratio(k.framed_bits, self.bytes * 8)
            );
        }
        let sp = |x: &Spacing| {
            if x.count == 0 {
                "-".to_string()
            } else {
                format!("min {} mean {:.1} max {}", x.min, x.mean(), x.max)
            }
        };
        let _ = writeln!(
            s,
            "sync spacing      {} synchronisation {}; instructions: {}; bytes: {}",
            self.syncs,
            self.unit_name,
            sp(&self.sync_instructions),
            sp(&self.sync_bytes)
        );
        let _ = writeln!(s, "losses            {}", self.losses);
        for (k, v) in &self.extra {
            let _ = writeln!(s, "{k:<17} {v}");
        }
        s
    }

    /// The report as JSON (one object; numbers and strings only).
    pub fn json(&self) -> String {
        let mut s = String::from("{");
        let _ = write!(
            s,
            "\"protocol\":{},\"instructions\":{},\"bytes\":{},\"payload_bits\":{},\"bits_per_instruction\":{},\"payload_bits_per_instruction\":{},\"{}\":{},\"kinds\":[",
            json_str(&self.protocol),
            self.instructions,
            self.bytes,
            self.payload_bits,
            json_f64(self.bits_per_instruction()),
            json_f64(self.payload_bits_per_instruction()),
            self.unit_name,
            self.units
        );
        for (k, x) in self.kinds.iter().enumerate() {
            let _ = write!(
                s,
                "{}{{\"name\":{},\"count\":{},\"bits\":{},\"framed_bits\":{}}}",
                if k > 0 { "," } else { "" },
                json_str(&x.name),
                x.count,
                x.bits,
                x.framed_bits
            );
        }
        let sp = |x: &Spacing| {
            format!(
                "{{\"count\":{},\"min\":{},\"mean\":{},\"max\":{}}}",
                x.count,
                x.min,
                json_f64(x.mean()),
                x.max
            )
        };
        let _ = write!(
            s,
            "],\"syncs\":{},\"sync_instructions\":{},\"sync_bytes\":{},\"losses\":{}",
            self.syncs,
            sp(&self.sync_instructions),
            sp(&self.sync_bytes),
            self.losses
        );
        for (k, v) in &self.extra {
            let _ = write!(s, ",{}:{v}", json_str(k));
        }
        s.push_str("}\n");
        s
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn json_f64(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

fn json_str(v: &str) -> String {
    let mut s = String::from("\"");
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// Collects the units of a trace, in stream order, into a [`TraceStats`].
#[derive(Debug, Default)]
pub struct StatsBuilder {
    stats: TraceStats,
    kinds: BTreeMap<u32, KindStats>,
    last_sync: Option<(u64, u64)>,
}

impl StatsBuilder {
    /// A builder for `protocol`, whose units are called `unit_name`.
    pub fn new(protocol: &str, unit_name: &str) -> Self {
        StatsBuilder {
            stats: TraceStats {
                protocol: protocol.into(),
                unit_name: unit_name.into(),
                ..TraceStats::default()
            },
            ..StatsBuilder::default()
        }
    }

    /// One message or packet of kind `key` (the order kinds are listed in) named `name`:
    /// `framed_bytes` with its framing, `bits` without; `sync`: a synchronisation point, at
    /// byte `offset` with `instructions` decoded up to it.
    pub fn unit(
        &mut self,
        key: u32,
        name: impl FnOnce() -> String,
        framed_bytes: u64,
        bits: u64,
        sync: Option<(u64, u64)>,
    ) {
        let k = self.kinds.entry(key).or_insert_with(|| KindStats {
            name: name(),
            ..KindStats::default()
        });
        k.count += 1;
        k.bits += bits;
        k.framed_bits += framed_bytes * 8;
        self.stats.units += 1;
        self.stats.payload_bits += bits;
        if let Some((offset, instructions)) = sync {
            self.stats.syncs += 1;
            if let Some((o, i)) = self.last_sync {
                self.stats.sync_bytes.add(offset - o);
                self.stats.sync_instructions.add(instructions - i);
            }
            self.last_sync = Some((offset, instructions));
        }
    }

    /// A count of the protocol's own (added to [`TraceStats::extra`] in this order).
    pub fn extra(&mut self, name: &str, v: u64) {
        self.stats.extra.push((name.into(), v));
    }

    /// The report for a trace of `bytes` from which the decoder reported `instructions` and
    /// `losses`.
    pub fn finish(mut self, bytes: u64, instructions: u64, losses: u64) -> TraceStats {
        self.stats.bytes = bytes;
        self.stats.instructions = instructions;
        self.stats.losses = losses;
        self.stats.kinds = self.kinds.into_values().collect();
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spacing_and_json() {
        let mut b = StatsBuilder::new("ntrace", "messages");
        b.unit(9, || "TCODE 9 ProgTraceSync".into(), 8, 48, Some((0, 0)));
        b.unit(4, || "TCODE 4 IndirectBranch".into(), 3, 18, None);
        b.unit(9, || "x".into(), 8, 48, Some((11, 10)));
        b.unit(9, || "x".into(), 8, 48, Some((19, 40)));
        b.extra("idles", 2);
        let s = b.finish(29, 40, 0);
        assert_eq!(s.kinds[0].name, "TCODE 4 IndirectBranch");
        assert_eq!((s.kinds[1].count, s.kinds[1].bits), (3, 144));
        assert_eq!(
            s.sync_instructions,
            Spacing {
                count: 2,
                min: 10,
                max: 30,
                sum: 40
            }
        );
        assert_eq!((s.sync_bytes.min, s.sync_bytes.max), (8, 11));
        assert_eq!(s.bits_per_instruction(), 29.0 * 8.0 / 40.0);
        let j = s.json();
        assert!(j.starts_with("{\"protocol\":\"ntrace\",\"instructions\":40,\"bytes\":29,"));
        assert!(j.ends_with(",\"losses\":0,\"idles\":2}\n"), "{j}");
        assert!(s.text("MDO").contains("messages          4\n"));
    }
}
