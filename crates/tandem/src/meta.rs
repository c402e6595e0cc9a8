//! What encoder and checker must agree on beyond the bytes: the parameters (chapter 3: "The
//! trace encoder and decoder must agree on all parameters ... Negotiation of these parameters
//! between the two is outside the scope of this protocol") and, for a partial trace, which
//! elements are absent (chapter 3: "The tandem verifier (not the trace decoder) must be aware of
//! elements that are absent from partial trace implementations"; 3.2 "Partial Trace").
//!
//! rvtrace keeps both in a small text *sidecar* next to the trace, `TRACE.meta`, so that the
//! trace itself stays exactly the protocol's bytes:
//!
//! ```text
//! # rvtrace tandem trace sidecar (tandem-trace-protocol-2018, chapter 3 and 3.2)
//! protocol = tandem-trace-protocol-2018-11-20
//! xlen = 64
//! flen = 64
//! mlen = 64
//! pc_ident = 10
//! absent = mem,eaddr
//! end = exit
//! groups = 81234
//! ```
//!
//! `absent` lists [`Elements`] names separated by commas (empty: a complete trace). `end` and
//! `groups` are written when the run is over: `end = exit` when the program ended, `end =
//! stopped` when the run was stopped before (`--max-insns`, an error), and `groups` counts the
//! trace's groups. The protocol has no end-of-trace record; with these the checker tells a trace
//! cut short from a finished one (a sidecar without them: the trace must end with the program's
//! exit).

use crate::codec::{state, Params, ParamsError};
use std::fmt;
use std::path::{Path, PathBuf};

/// Sets of trace elements (for partial traces, chapter 3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Elements(pub u32);

impl Elements {
    /// The pc (increment pc, or the pc additional state).
    pub const PC: Elements = Elements(1 << 0);
    /// The instruction (opcodes 16, 17).
    pub const INSN: Elements = Elements(1 << 1);
    /// Integer registers.
    pub const GPR: Elements = Elements(1 << 2);
    /// Floating-point registers.
    pub const FPR: Elements = Elements(1 << 3);
    /// CSRs (including fcsr and the trap CSRs).
    pub const CSR: Elements = Elements(1 << 4);
    /// The privilege mode.
    pub const PRIV: Elements = Elements(1 << 5);
    /// Memory requests and responses.
    pub const MEM: Elements = Elements(1 << 6);
    /// Effective addresses (additional state 3).
    pub const EADDR: Elements = Elements(1 << 7);
    /// State initialization groups (the program load).
    pub const INIT: Elements = Elements(1 << 8);
    /// mtime (additional state 8).
    pub const MTIME: Elements = Elements(1 << 9);
    /// No element.
    pub const NONE: Elements = Elements(0);

    /// Every element, with its name.
    pub const ALL: [(Elements, &'static str); 10] = [
        (Elements::PC, "pc"),
        (Elements::INSN, "insn"),
        (Elements::GPR, "gpr"),
        (Elements::FPR, "fpr"),
        (Elements::CSR, "csr"),
        (Elements::PRIV, "priv"),
        (Elements::MEM, "mem"),
        (Elements::EADDR, "eaddr"),
        (Elements::INIT, "init"),
        (Elements::MTIME, "mtime"),
    ];

    /// Whether all of `other` is in `self`.
    #[inline(always)]
    pub fn has(self, other: Elements) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    /// Union.
    pub fn with(self, other: Elements) -> Elements {
        Elements(self.0 | other.0)
    }

    /// Parse a comma-separated list of names (`""` or `"none"` is the empty set).
    pub fn parse(s: &str) -> Result<Elements, UnknownElement> {
        let mut e = Elements::NONE;
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "none" {
                continue;
            }
            let Some((x, _)) = Elements::ALL.iter().find(|(_, n)| *n == name) else {
                return Err(UnknownElement(name.to_string()));
            };
            e = e.with(*x);
        }
        Ok(e)
    }
}

impl fmt::Display for Elements {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Elements::ALL
            .iter()
            .filter(|(x, _)| self.has(*x))
            .map(|(_, n)| *n)
            .collect();
        f.write_str(&names.join(","))
    }
}

/// A name [`Elements::parse`] does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownElement(pub String);

impl fmt::Display for UnknownElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Elements::ALL.iter().map(|(_, n)| *n).collect();
        write!(
            f,
            "unknown trace element {:?} (known: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownElement {}

/// How the run that wrote a trace ended (the sidecar's `end`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunEnd {
    /// The program ended (or nothing is known): the trace must end with the program's exit.
    #[default]
    Exit,
    /// The run was stopped before the program ended (`--max-insns`, an error): the trace may end
    /// after any whole group.
    Stopped,
}

/// Why a sidecar could not be read or written.
#[derive(Debug)]
pub enum MetaError {
    /// A line that is not `KEY = VALUE` (line numbers count from 1).
    Syntax {
        /// The line.
        line: usize,
    },
    /// A value that should be a number.
    NotANumber {
        /// The line.
        line: usize,
        /// The key.
        key: String,
        /// The value given.
        value: String,
    },
    /// `pc_ident` neither 10 nor 16.
    PcIdent {
        /// The line.
        line: usize,
    },
    /// `end` neither `exit` nor `stopped`.
    End {
        /// The line.
        line: usize,
        /// The value given.
        value: String,
    },
    /// `absent` names an unknown element.
    Element(UnknownElement),
    /// The parameters are not ones the codec can represent.
    Params(ParamsError),
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
            MetaError::NotANumber { line, key, value } => {
                write!(f, "line {line}: {key}: not a number: {value:?}")
            }
            MetaError::PcIdent { line } => write!(f, "line {line}: pc_ident must be 10 or 16"),
            MetaError::End { line, value } => {
                write!(f, "line {line}: end must be exit or stopped, not {value:?}")
            }
            MetaError::Element(e) => write!(f, "{e}"),
            MetaError::Params(e) => write!(f, "{e}"),
            MetaError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            MetaError::File { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for MetaError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MetaError::Element(e) => Some(e),
            MetaError::Params(e) => Some(e),
            MetaError::Io { error, .. } => Some(error),
            MetaError::File { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

/// The sidecar's contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Codec parameters.
    pub params: Params,
    /// Elements the trace leaves out.
    pub absent: Elements,
    /// How the run ended (`end`), once it has.
    pub run_end: Option<RunEnd>,
    /// Groups in the trace (`groups`), once the run has ended.
    pub groups: Option<u64>,
}

/// The protocol version the sidecar names.
pub const PROTOCOL: &str = "tandem-trace-protocol-2018-11-20";

/// The sidecar path for a trace: `TRACE.meta`.
pub fn sidecar_path(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".meta");
    PathBuf::from(s)
}

impl Meta {
    /// The sidecar of a run not over yet.
    pub fn new(params: Params, absent: Elements) -> Meta {
        Meta {
            params,
            absent,
            run_end: None,
            groups: None,
        }
    }

    /// The sidecar text.
    pub fn to_text(&self) -> String {
        let mut t = format!(
            "# rvtrace tandem trace sidecar (tandem-trace-protocol-2018, chapter 3 and 3.2)\n\
             protocol = {PROTOCOL}\nxlen = {}\nflen = {}\nmlen = {}\npc_ident = {}\nabsent = {}\n",
            self.params.xlen, self.params.flen, self.params.mlen, self.params.pc_ident, self.absent
        );
        match self.run_end {
            Some(RunEnd::Exit) => t.push_str("end = exit\n"),
            Some(RunEnd::Stopped) => t.push_str("end = stopped\n"),
            None => {}
        }
        if let Some(g) = self.groups {
            t.push_str(&format!("groups = {g}\n"));
        }
        t
    }

    /// Parse sidecar text. Keys not given keep the values of `defaults`.
    pub fn parse(text: &str, defaults: &Meta) -> Result<Meta, MetaError> {
        let mut m = defaults.clone();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                return Err(MetaError::Syntax { line: n + 1 });
            };
            let (k, v) = (k.trim(), v.trim());
            let not_a_number = || MetaError::NotANumber {
                line: n + 1,
                key: k.to_string(),
                value: v.to_string(),
            };
            let num = || -> Result<u32, MetaError> { v.parse::<u32>().map_err(|_| not_a_number()) };
            match k {
                "protocol" => {}
                "xlen" => m.params.xlen = num()?,
                "flen" => m.params.flen = num()?,
                "mlen" => m.params.mlen = num()?,
                "pc_ident" => {
                    let id = num()?;
                    if id != state::PC as u32 && id != state::PC_APPENDIX as u32 {
                        return Err(MetaError::PcIdent { line: n + 1 });
                    }
                    m.params.pc_ident = id as u8;
                }
                "absent" => m.absent = Elements::parse(v).map_err(MetaError::Element)?,
                "end" => {
                    m.run_end = Some(match v {
                        "exit" => RunEnd::Exit,
                        "stopped" => RunEnd::Stopped,
                        _ => {
                            return Err(MetaError::End {
                                line: n + 1,
                                value: v.to_string(),
                            })
                        }
                    })
                }
                "groups" => m.groups = Some(v.parse::<u64>().map_err(|_| not_a_number())?),
                _ => {}
            }
        }
        m.params.validate().map_err(MetaError::Params)?;
        Ok(m)
    }

    /// Write the sidecar of `trace`.
    pub fn write(&self, trace: &Path) -> Result<(), MetaError> {
        let path = sidecar_path(trace);
        std::fs::write(&path, self.to_text()).map_err(|error| MetaError::Io { path, error })
    }

    /// Read the sidecar of `trace` if there is one.
    pub fn read(trace: &Path, defaults: &Meta) -> Result<Option<Meta>, MetaError> {
        let path = sidecar_path(trace);
        match std::fs::read_to_string(&path) {
            Ok(t) => Meta::parse(&t, defaults)
                .map(Some)
                .map_err(|e| MetaError::File {
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
    fn sidecar_round_trip() {
        let mut m = Meta::new(Params::RV32, Elements::MEM.with(Elements::FPR));
        let t = m.to_text();
        assert!(t.contains("absent = fpr,mem\n"), "{t}");
        assert!(!t.contains("end ="), "{t}");
        let d = Meta::new(Params::RV64, Elements::NONE);
        assert_eq!(Meta::parse(&t, &d).unwrap(), m);
        m.run_end = Some(RunEnd::Stopped);
        m.groups = Some(1234);
        let t = m.to_text();
        assert!(t.ends_with("end = stopped\ngroups = 1234\n"), "{t}");
        assert_eq!(Meta::parse(&t, &d).unwrap(), m);
        assert!(Meta::parse("absent = bogus", &d).is_err());
        assert!(Meta::parse("xlen = 48", &d).is_err());
        assert!(Meta::parse("end = later", &d).is_err());
        assert!(Meta::parse("groups = -1", &d).is_err());
    }

    #[test]
    fn error_texts() {
        let d = Meta::new(Params::RV64, Elements::NONE);
        let e = |t: &str| Meta::parse(t, &d).unwrap_err().to_string();
        assert_eq!(e("\nxlen 64"), "line 2: expected KEY = VALUE");
        assert_eq!(e("mlen = x"), "line 1: mlen: not a number: \"x\"");
        assert_eq!(e("groups = -1"), "line 1: groups: not a number: \"-1\"");
        assert_eq!(e("pc_ident = 12"), "line 1: pc_ident must be 10 or 16");
        assert_eq!(
            e("end = later"),
            "line 1: end must be exit or stopped, not \"later\""
        );
        assert_eq!(
            e("absent = mem,bogus"),
            "unknown trace element \"bogus\" (known: pc, insn, gpr, fpr, csr, priv, mem, \
             eaddr, init, mtime)"
        );
        assert_eq!(e("xlen = 48"), "XLEN must be 32 or 64, not 48");
        assert!(matches!(
            Meta::parse("flen = 16", &d),
            Err(MetaError::Params(ParamsError::Flen(16)))
        ));
        let dir = std::env::temp_dir().join(format!("rvtrace-meta-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.tt");
        std::fs::write(sidecar_path(&trace), "end = never\n").unwrap();
        let e = Meta::read(&trace, &d).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: line 1: end must be exit or stopped, not \"never\"",
                sidecar_path(&trace).display()
            )
        );
        assert!(std::error::Error::source(&e).is_some());
        let missing = dir.join("no/such/dir/t.tt");
        let e = d.write(&missing).unwrap_err();
        assert!(matches!(e, MetaError::Io { .. }), "{e:?}");
        assert!(e
            .to_string()
            .starts_with(&format!("{}: ", sidecar_path(&missing).display())));
        assert_eq!(Meta::read(&missing, &d).unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
