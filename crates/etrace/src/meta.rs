//! The E-Trace *sidecar*: what encoder and decoder must agree on that the trace does not carry.
//!
//! E-Trace leaves the negotiation of the parameters to the implementation (`discovery.adoc`),
//! and an `etrace-encap` stream does not say its own srcID, timestamp or type widths. The run-time
//! options (*ioptions*) are in the stream's support packets (`payload.adoc` `sec:format33`) and
//! the decoder takes them from there; their sizes (predictor entries, cache entries, return stack
//! or call counter) and everything else are not. `rvtrace encode etrace -o OUT` therefore writes
//! `OUT.meta` next to the trace, so that the trace stays exactly the protocol's bytes:
//!
//! ```text
//! # rvtrace E-Trace sidecar: the encoder's settings the trace does not carry
//! protocol = etrace
//! preset = rvtrace
//! format = encap
//! srcid-bits = 0
//! ...
//! ```
//!
//! Keys are named as the command-line options; a key not given keeps its default.

pub use crate::options::Options;
use std::path::{Path, PathBuf};

/// The protocol name the sidecar's first key gives.
pub const PROTOCOL: &str = "etrace";

/// The sidecar path for a trace: `TRACE.meta`.
pub fn sidecar_path(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".meta");
    PathBuf::from(s)
}

impl Options {
    /// These options completed by the sidecar of `trace`, when there is one: the options and
    /// the sidecar read (an unreadable sidecar is an error), and the warnings of
    /// [`completed_by`](Self::completed_by).
    pub fn with_sidecar(
        &self,
        trace: &Path,
    ) -> Result<(Options, Option<Options>, Vec<String>), String> {
        match Options::read(trace)? {
            Some(m) => {
                let side = sidecar_path(trace).display().to_string();
                let (o, w) = self.completed_by(&m, &side);
                Ok((o, Some(m), w))
            }
            None => Ok((self.clone(), None, Vec::new())),
        }
    }

    /// The sidecar text.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut t = String::from(
            "# rvtrace E-Trace sidecar: the encoder's settings the trace does not carry\n",
        );
        let _ = writeln!(t, "protocol = {PROTOCOL}");
        let mut kv = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                let _ = writeln!(t, "{k} = {v}");
            }
        };
        kv("preset", self.preset.clone());
        kv("format", self.format.clone());
        kv("srcid-bits", self.srcid_bits.map(|v| v.to_string()));
        kv(
            "timestamp-bytes",
            self.timestamp_bytes.map(|v| v.to_string()),
        );
        kv("type-bits", self.type_bits.map(|v| v.to_string()));
        kv("xlen", self.xlen.map(|v| v.to_string()));
        kv("itype-width", self.itype_width.map(|v| v.to_string()));
        kv("full-address", Some(self.full_address.to_string()));
        kv(
            "implicit-exception",
            Some(self.implicit_exception.to_string()),
        );
        kv("sijump", Some(self.sijump.to_string()));
        kv("implicit-return", Some(self.implicit_return.to_string()));
        kv("return-stack", self.return_stack.map(|v| v.to_string()));
        kv(
            "branch-prediction",
            self.branch_prediction.map(|v| v.to_string()),
        );
        kv(
            "jump-target-cache",
            self.jump_target_cache.map(|v| v.to_string()),
        );
        kv("timestamps", Some(self.timestamps.to_string()));
        kv("scf", self.scf.as_ref().map(|p| p.display().to_string()));
        kv("ucf", self.ucf.as_ref().map(|p| p.display().to_string()));
        t
    }

    /// Parse sidecar text (its first key must be `protocol = etrace`).
    pub fn parse(text: &str) -> Result<Options, String> {
        let mut m = Options::default();
        let mut first = true;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                return Err(format!("line {}: expected KEY = VALUE", n + 1));
            };
            let (k, v) = (k.trim(), v.trim());
            let at = |e: String| format!("line {}: {k}: {e}", n + 1);
            if first {
                if k != "protocol" || v != PROTOCOL {
                    return Err(format!(
                        "line {}: not an E-Trace sidecar (the first key must be protocol = {PROTOCOL})",
                        n + 1
                    ));
                }
                first = false;
                continue;
            }
            fn num<T: std::str::FromStr>(v: &str) -> Result<T, String> {
                v.parse().map_err(|_| format!("not a number: {v:?}"))
            }
            let flag = |v: &str| -> Result<bool, String> {
                match v {
                    "true" => Ok(true),
                    "false" => Ok(false),
                    _ => Err(format!("not true or false: {v:?}")),
                }
            };
            match k {
                "preset" => match v {
                    "rvtrace" | "reference" => m.preset = Some(v.into()),
                    _ => return Err(at(format!("unknown preset {v:?}"))),
                },
                "format" => match v {
                    "raw" | "encap" => m.format = Some(v.into()),
                    _ => return Err(at(format!("unknown format {v:?}"))),
                },
                "srcid-bits" => m.srcid_bits = Some(num(v).map_err(at)?),
                "timestamp-bytes" => m.timestamp_bytes = Some(num(v).map_err(at)?),
                "type-bits" => m.type_bits = Some(num(v).map_err(at)?),
                "xlen" => m.xlen = Some(num(v).map_err(at)?),
                "itype-width" => m.itype_width = Some(num(v).map_err(at)?),
                "full-address" => m.full_address = flag(v).map_err(at)?,
                "implicit-exception" => m.implicit_exception = flag(v).map_err(at)?,
                "sijump" => m.sijump = flag(v).map_err(at)?,
                "implicit-return" => m.implicit_return = flag(v).map_err(at)?,
                "return-stack" => m.return_stack = Some(num(v).map_err(at)?),
                "branch-prediction" => m.branch_prediction = Some(num(v).map_err(at)?),
                "jump-target-cache" => m.jump_target_cache = Some(num(v).map_err(at)?),
                "timestamps" => m.timestamps = flag(v).map_err(at)?,
                "scf" => m.scf = Some(v.into()),
                "ucf" => m.ucf = Some(v.into()),
                // Keys of later versions are ignored.
                _ => {}
            }
        }
        if first {
            return Err(format!(
                "empty (the first key must be protocol = {PROTOCOL})"
            ));
        }
        Ok(m)
    }

    /// Write the sidecar of `trace`.
    pub fn write(&self, trace: &Path) -> Result<(), String> {
        let p = sidecar_path(trace);
        std::fs::write(&p, self.to_text()).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// Read the sidecar of `trace` if there is one.
    pub fn read(trace: &Path) -> Result<Option<Options>, String> {
        let p = sidecar_path(trace);
        match std::fs::read_to_string(&p) {
            Ok(t) => Options::parse(&t)
                .map(Some)
                .map_err(|e| format!("{}: {e}", p.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_completed_by_sidecar() {
        let side = Options {
            preset: Some("reference".into()),
            srcid_bits: Some(2),
            return_stack: Some(8),
            implicit_return: true,
            scf: Some(PathBuf::from("/a.scf")),
            ..Options::default()
        };
        let cli = Options {
            srcid_bits: Some(3),
            sijump: true,
            ..Options::default()
        };
        let (a, w) = cli.completed_by(&side, "t.meta");
        assert_eq!(a.preset.as_deref(), Some("reference"));
        assert_eq!((a.srcid_bits, a.return_stack), (Some(3), Some(8)));
        assert!(a.implicit_return && a.sijump);
        assert_eq!(a.scf, side.scf);
        assert_eq!(
            w,
            [
                "--src-bits 3 contradicts t.meta (--src-bits 2); using 3",
                "--sijump contradicts t.meta (the trace was encoded without it); using --sijump"
            ]
        );
        assert_eq!(side.completed_by(&side, "t.meta"), (side.clone(), vec![]));
    }

    #[test]
    fn sidecar_round_trip() {
        let m = Options {
            preset: Some("rvtrace".into()),
            format: Some("encap".into()),
            srcid_bits: Some(4),
            timestamp_bytes: Some(2),
            type_bits: Some(1),
            xlen: Some(64),
            itype_width: Some(4),
            implicit_return: true,
            return_stack: Some(8),
            branch_prediction: Some(64),
            ..Options::default()
        };
        let t = m.to_text();
        assert!(t.contains("\nprotocol = etrace\n"), "{t}");
        assert!(t.contains("\nbranch-prediction = 64\n"), "{t}");
        assert_eq!(Options::parse(&t).unwrap(), m);
        assert!(Options::parse("protocol = ntrace\n").is_err());
        assert!(Options::parse("xlen = 64\n").is_err());
        assert!(Options::parse("").is_err());
        assert!(Options::parse("protocol = etrace\nfull-address = maybe\n").is_err());
        assert!(Options::parse("protocol = etrace\nsrcid-bits = x\n").is_err());
    }
}
