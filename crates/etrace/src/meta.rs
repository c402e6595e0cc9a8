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
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a sidecar could not be read or written (line numbers count from 1).
#[derive(Debug)]
pub enum MetaError {
    /// A line that is not `KEY = VALUE`.
    Syntax {
        /// The line.
        line: usize,
    },
    /// The first key is not `protocol = etrace`.
    NotEtrace {
        /// The line.
        line: usize,
    },
    /// No key at all.
    Empty,
    /// A value that should be a number.
    NotANumber {
        /// The line.
        line: usize,
        /// The key.
        key: String,
        /// The value given.
        value: String,
    },
    /// A value that should be `true` or `false`.
    NotABool {
        /// The line.
        line: usize,
        /// The key.
        key: String,
        /// The value given.
        value: String,
    },
    /// A `preset` other than `rvtrace` or `reference`.
    UnknownPreset {
        /// The line.
        line: usize,
        /// The value given.
        value: String,
    },
    /// An `options-layout` other than `rvtrace` or `pulp`.
    UnknownOptionsLayout {
        /// The line.
        line: usize,
        /// The value given.
        value: String,
    },
    /// A `format` other than `raw` or `encap`.
    UnknownFormat {
        /// The line.
        line: usize,
        /// The value given.
        value: String,
    },
    /// The sidecar file could not be read or written.
    Io {
        /// The sidecar.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The sidecar file's text is wrong.
    File {
        /// The sidecar.
        path: PathBuf,
        /// What is wrong.
        error: Box<MetaError>,
    },
}

impl fmt::Display for MetaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaError::Syntax { line } => write!(f, "line {line}: expected KEY = VALUE"),
            MetaError::NotEtrace { line } => write!(
                f,
                "line {line}: not an E-Trace sidecar (the first key must be protocol = {PROTOCOL})"
            ),
            MetaError::Empty => write!(f, "empty (the first key must be protocol = {PROTOCOL})"),
            MetaError::NotANumber { line, key, value } => {
                write!(f, "line {line}: {key}: not a number: {value:?}")
            }
            MetaError::NotABool { line, key, value } => {
                write!(f, "line {line}: {key}: not true or false: {value:?}")
            }
            MetaError::UnknownPreset { line, value } => {
                write!(f, "line {line}: preset: unknown preset {value:?}")
            }
            MetaError::UnknownOptionsLayout { line, value } => {
                write!(f, "line {line}: options-layout: unknown layout {value:?}")
            }
            MetaError::UnknownFormat { line, value } => {
                write!(f, "line {line}: format: unknown format {value:?}")
            }
            MetaError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            MetaError::File { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for MetaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MetaError::Io { error, .. } => Some(error),
            MetaError::File { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

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
    ) -> Result<(Options, Option<Options>, Vec<String>), MetaError> {
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
        kv("options-layout", self.options_layout.clone());
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
    pub fn parse(text: &str) -> Result<Options, MetaError> {
        let mut m = Options::default();
        let mut first = true;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                return Err(MetaError::Syntax { line: n + 1 });
            };
            let (k, v) = (k.trim(), v.trim());
            if first {
                if k != "protocol" || v != PROTOCOL {
                    return Err(MetaError::NotEtrace { line: n + 1 });
                }
                first = false;
                continue;
            }
            fn number<T: std::str::FromStr>(line: usize, k: &str, v: &str) -> Result<T, MetaError> {
                v.parse().map_err(|_| MetaError::NotANumber {
                    line,
                    key: k.into(),
                    value: v.into(),
                })
            }
            let flag = |v: &str| -> Result<bool, MetaError> {
                match v {
                    "true" => Ok(true),
                    "false" => Ok(false),
                    _ => Err(MetaError::NotABool {
                        line: n + 1,
                        key: k.into(),
                        value: v.into(),
                    }),
                }
            };
            let value = v.to_string();
            match k {
                "preset" => match v {
                    "rvtrace" | "reference" => m.preset = Some(value),
                    _ => return Err(MetaError::UnknownPreset { line: n + 1, value }),
                },
                "options-layout" => match crate::OptionsLayout::from_name(v) {
                    Some(_) => m.options_layout = Some(value),
                    None => return Err(MetaError::UnknownOptionsLayout { line: n + 1, value }),
                },
                "format" => match v {
                    "raw" | "encap" | "smi" | "esp32" => m.format = Some(value),
                    _ => return Err(MetaError::UnknownFormat { line: n + 1, value }),
                },
                "srcid-bits" => m.srcid_bits = Some(number(n + 1, k, v)?),
                "timestamp-bytes" => m.timestamp_bytes = Some(number(n + 1, k, v)?),
                "type-bits" => m.type_bits = Some(number(n + 1, k, v)?),
                "xlen" => m.xlen = Some(number(n + 1, k, v)?),
                "itype-width" => m.itype_width = Some(number(n + 1, k, v)?),
                "full-address" => m.full_address = flag(v)?,
                "implicit-exception" => m.implicit_exception = flag(v)?,
                "sijump" => m.sijump = flag(v)?,
                "implicit-return" => m.implicit_return = flag(v)?,
                "return-stack" => m.return_stack = Some(number(n + 1, k, v)?),
                "branch-prediction" => m.branch_prediction = Some(number(n + 1, k, v)?),
                "jump-target-cache" => m.jump_target_cache = Some(number(n + 1, k, v)?),
                "timestamps" => m.timestamps = flag(v)?,
                "scf" => m.scf = Some(v.into()),
                "ucf" => m.ucf = Some(v.into()),
                // Keys of later versions are ignored.
                _ => {}
            }
        }
        if first {
            return Err(MetaError::Empty);
        }
        Ok(m)
    }

    /// Write the sidecar of `trace`.
    pub fn write(&self, trace: &Path) -> Result<(), MetaError> {
        let path = sidecar_path(trace);
        std::fs::write(&path, self.to_text()).map_err(|error| MetaError::Io { path, error })
    }

    /// Read the sidecar of `trace` if there is one.
    pub fn read(trace: &Path) -> Result<Option<Options>, MetaError> {
        let path = sidecar_path(trace);
        match std::fs::read_to_string(&path) {
            Ok(t) => Options::parse(&t).map(Some).map_err(|e| MetaError::File {
                path,
                error: Box::new(e),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(MetaError::Io { path, error }),
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
