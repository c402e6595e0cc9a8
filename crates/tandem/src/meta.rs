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

use crate::codec::{state, Params};
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
    pub fn parse(s: &str) -> Result<Elements, String> {
        let mut e = Elements::NONE;
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "none" {
                continue;
            }
            let Some((x, _)) = Elements::ALL.iter().find(|(_, n)| *n == name) else {
                let names: Vec<&str> = Elements::ALL.iter().map(|(_, n)| *n).collect();
                return Err(format!(
                    "unknown trace element {name:?} (known: {})",
                    names.join(", ")
                ));
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
    pub fn parse(text: &str, defaults: &Meta) -> Result<Meta, String> {
        let mut m = defaults.clone();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                return Err(format!("line {}: expected KEY = VALUE", n + 1));
            };
            let (k, v) = (k.trim(), v.trim());
            let num = || -> Result<u32, String> {
                v.parse::<u32>()
                    .map_err(|_| format!("line {}: {k}: not a number: {v:?}", n + 1))
            };
            match k {
                "protocol" => {}
                "xlen" => m.params.xlen = num()?,
                "flen" => m.params.flen = num()?,
                "mlen" => m.params.mlen = num()?,
                "pc_ident" => {
                    let id = num()?;
                    if id != state::PC as u32 && id != state::PC_APPENDIX as u32 {
                        return Err(format!("line {}: pc_ident must be 10 or 16", n + 1));
                    }
                    m.params.pc_ident = id as u8;
                }
                "absent" => m.absent = Elements::parse(v)?,
                "end" => {
                    m.run_end = Some(match v {
                        "exit" => RunEnd::Exit,
                        "stopped" => RunEnd::Stopped,
                        _ => {
                            return Err(format!(
                                "line {}: end must be exit or stopped, not {v:?}",
                                n + 1
                            ))
                        }
                    })
                }
                "groups" => {
                    m.groups = Some(
                        v.parse::<u64>()
                            .map_err(|_| format!("line {}: groups: not a number: {v:?}", n + 1))?,
                    )
                }
                _ => {}
            }
        }
        m.params.validate()?;
        Ok(m)
    }

    /// Write the sidecar of `trace`.
    pub fn write(&self, trace: &Path) -> Result<(), String> {
        let p = sidecar_path(trace);
        std::fs::write(&p, self.to_text()).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// Read the sidecar of `trace` if there is one.
    pub fn read(trace: &Path, defaults: &Meta) -> Result<Option<Meta>, String> {
        let p = sidecar_path(trace);
        match std::fs::read_to_string(&p) {
            Ok(t) => Meta::parse(&t, defaults)
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
}
