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

use std::path::{Path, PathBuf};

/// The protocol name the sidecar's first key gives.
pub const PROTOCOL: &str = "etrace";

/// The encoder settings a sidecar records (the command line's names and meanings).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// `--preset`: `rvtrace` or `reference`.
    pub preset: Option<String>,
    /// `--format`: `raw` or `encap`.
    pub format: Option<String>,
    /// `--srcid-bits`.
    pub srcid_bits: Option<u8>,
    /// `--timestamp-bytes`.
    pub timestamp_bytes: Option<u8>,
    /// `--type-bits`.
    pub type_bits: Option<u8>,
    /// The address width (`iaddress_width_p`): 32 or 64.
    pub xlen: Option<u8>,
    /// `--itype-width`.
    pub itype_width: Option<u8>,
    /// `--full-address`.
    pub full_address: bool,
    /// `--implicit-exception`.
    pub implicit_exception: bool,
    /// `--sijump`.
    pub sijump: bool,
    /// `--implicit-return`.
    pub implicit_return: bool,
    /// `--return-stack N`.
    pub return_stack: Option<u32>,
    /// `--branch-prediction N`.
    pub branch_prediction: Option<u32>,
    /// `--jump-target-cache N`.
    pub jump_target_cache: Option<u32>,
    /// `--timestamps`.
    pub timestamps: bool,
    /// `--scf FILE` (an absolute path).
    pub scf: Option<PathBuf>,
    /// `--ucf FILE` (an absolute path).
    pub ucf: Option<PathBuf>,
}

/// The sidecar path for a trace: `TRACE.meta`.
pub fn sidecar_path(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".meta");
    PathBuf::from(s)
}

impl Settings {
    /// These settings (given on a command line) completed by a sidecar's (`side`, called
    /// `side_name` in the warnings): a setting given wins, with a warning when it contradicts
    /// the sidecar; one not given is the sidecar's; a mode the sidecar turns on is on (warned
    /// when only the command line turns it on: the trace was encoded without it). The address
    /// and itype widths stay as given.
    pub fn completed_by(&self, side: &Settings, side_name: &str) -> (Settings, Vec<String>) {
        let mut a = self.clone();
        let mut w = Vec::new();
        fn pick<T: Clone + PartialEq + std::fmt::Display>(
            cli: &mut Option<T>,
            meta: &Option<T>,
            name: &str,
            side: &str,
            w: &mut Vec<String>,
        ) {
            match (cli.as_ref(), meta) {
                (Some(c), Some(m)) if c != m => {
                    w.push(format!(
                        "{name} {c} contradicts {side} ({name} {m}); using {c}"
                    ));
                }
                (None, Some(m)) => *cli = Some(m.clone()),
                _ => {}
            }
        }
        let shown = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        pick(&mut a.preset, &side.preset, "--preset", side_name, &mut w);
        pick(&mut a.format, &side.format, "--format", side_name, &mut w);
        pick(
            &mut a.srcid_bits,
            &side.srcid_bits,
            "--srcid-bits",
            side_name,
            &mut w,
        );
        pick(
            &mut a.timestamp_bytes,
            &side.timestamp_bytes,
            "--timestamp-bytes",
            side_name,
            &mut w,
        );
        pick(
            &mut a.type_bits,
            &side.type_bits,
            "--type-bits",
            side_name,
            &mut w,
        );
        pick(
            &mut a.return_stack,
            &side.return_stack,
            "--return-stack",
            side_name,
            &mut w,
        );
        pick(
            &mut a.branch_prediction,
            &side.branch_prediction,
            "--branch-prediction",
            side_name,
            &mut w,
        );
        pick(
            &mut a.jump_target_cache,
            &side.jump_target_cache,
            "--jump-target-cache",
            side_name,
            &mut w,
        );
        for (cli, meta, name) in [
            (&mut a.scf, &side.scf, "--scf"),
            (&mut a.ucf, &side.ucf, "--ucf"),
        ] {
            let mut c = shown(cli);
            pick(&mut c, &shown(meta), name, side_name, &mut w);
            if cli.is_none() {
                *cli = meta.clone();
            }
        }
        for (cli, meta, name) in [
            (&mut a.full_address, side.full_address, "--full-address"),
            (
                &mut a.implicit_exception,
                side.implicit_exception,
                "--implicit-exception",
            ),
            (&mut a.sijump, side.sijump, "--sijump"),
            (
                &mut a.implicit_return,
                side.implicit_return,
                "--implicit-return",
            ),
            (&mut a.timestamps, side.timestamps, "--timestamps"),
        ] {
            if *cli && !meta {
                w.push(format!(
                    "{name} contradicts {side_name} (the trace was encoded without it); using {name}"
                ));
            }
            *cli |= meta;
        }
        (a, w)
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
    pub fn parse(text: &str) -> Result<Settings, String> {
        let mut m = Settings::default();
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
    pub fn read(trace: &Path) -> Result<Option<Settings>, String> {
        let p = sidecar_path(trace);
        match std::fs::read_to_string(&p) {
            Ok(t) => Settings::parse(&t)
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
        let side = Settings {
            preset: Some("reference".into()),
            srcid_bits: Some(2),
            return_stack: Some(8),
            implicit_return: true,
            scf: Some(PathBuf::from("/a.scf")),
            ..Settings::default()
        };
        let cli = Settings {
            srcid_bits: Some(3),
            sijump: true,
            ..Settings::default()
        };
        let (a, w) = cli.completed_by(&side, "t.meta");
        assert_eq!(a.preset.as_deref(), Some("reference"));
        assert_eq!((a.srcid_bits, a.return_stack), (Some(3), Some(8)));
        assert!(a.implicit_return && a.sijump);
        assert_eq!(a.scf, side.scf);
        assert_eq!(
            w,
            [
                "--srcid-bits 3 contradicts t.meta (--srcid-bits 2); using 3",
                "--sijump contradicts t.meta (the trace was encoded without it); using --sijump"
            ]
        );
        assert_eq!(side.completed_by(&side, "t.meta"), (side.clone(), vec![]));
    }

    #[test]
    fn sidecar_round_trip() {
        let m = Settings {
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
            ..Settings::default()
        };
        let t = m.to_text();
        assert!(t.contains("\nprotocol = etrace\n"), "{t}");
        assert!(t.contains("\nbranch-prediction = 64\n"), "{t}");
        assert_eq!(Settings::parse(&t).unwrap(), m);
        assert!(Settings::parse("protocol = ntrace\n").is_err());
        assert!(Settings::parse("xlen = 64\n").is_err());
        assert!(Settings::parse("").is_err());
        assert!(Settings::parse("protocol = etrace\nfull-address = maybe\n").is_err());
        assert!(Settings::parse("protocol = etrace\nsrcid-bits = x\n").is_err());
    }
}
