//! ITC stimulus writes beside an ingress file: `INGRESS.itc` (`rvtrace run --itc ADDR --ingress
//! INGRESS` writes it, `rvtrace encode ntrace --dialect sifive INGRESS` reads it).
//!
//! SiFive's Instrumentation Trace Component (ITC) turns a store to one of its 32 stimulus
//! registers into a trace message (DataAcquisition, N-Trace TCODE 7 in SiFive's dialect). A
//! store is no instruction-trace signal, so it is not an ingress record: the writes are kept in
//! this text file, each with the instruction it follows, and the records and the ingress format
//! stay as they are (old files read as before; an ingress file without a `.itc` beside it has no
//! writes).
//!
//! ```text
//! # rvtrace ITC stimulus writes: RETIRED IDTAG VALUE
//! 1834 0x0 0x6c6c6548
//! 1841 0x3 0xa
//! ```
//!
//! One write per line, in the order the hart made them: `RETIRED` (decimal) is the number of
//! instructions retired up to and including the store (the store is the RETIRED-th instruction of
//! the run, counting from 1: the message goes after it), `IDTAG` the store's byte offset inside the
//! stimulus array (channel = IDTAG / 4; a 32-bit store at +0, a 16-bit one at +2, an 8-bit one at
//! +3), `VALUE` the value stored (hex). `#` starts a comment; blank lines are skipped.

use std::path::{Path, PathBuf};

/// One store to an ITC stimulus register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItcWrite {
    /// Instructions retired up to and including the store.
    pub retired: u64,
    /// Byte offset of the store inside the stimulus array.
    pub idtag: u32,
    /// The value stored.
    pub value: u64,
}

/// The ITC sidecar of an ingress file: `INGRESS.itc`.
pub fn sidecar_path(ingress: &Path) -> PathBuf {
    let mut s = ingress.as_os_str().to_owned();
    s.push(".itc");
    PathBuf::from(s)
}

/// The sidecar text of `writes`.
pub fn to_text(writes: &[ItcWrite]) -> String {
    let mut s = String::from("# rvtrace ITC stimulus writes: RETIRED IDTAG VALUE\n");
    for w in writes {
        s += &format!("{} {:#x} {:#x}\n", w.retired, w.idtag, w.value);
    }
    s
}

/// Parse sidecar text; an error names the line.
pub fn parse(text: &str) -> Result<Vec<ItcWrite>, String> {
    let hex = |v: &str| {
        let t = v.strip_prefix("0x").unwrap_or(v);
        u64::from_str_radix(t, 16).ok()
    };
    let mut out: Vec<ItcWrite> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let w = match f[..] {
            [r, t, v] => (|| {
                Some(ItcWrite {
                    retired: r.parse().ok()?,
                    idtag: u32::try_from(hex(t)?).ok()?,
                    value: hex(v)?,
                })
            })(),
            _ => None,
        };
        let w = w.ok_or_else(|| format!("line {}: expected RETIRED IDTAG VALUE", n + 1))?;
        if out.last().is_some_and(|p| p.retired > w.retired) {
            return Err(format!("line {}: RETIRED goes backwards", n + 1));
        }
        out.push(w);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip() {
        let w = [
            ItcWrite {
                retired: 7,
                idtag: 0,
                value: 0x6c6c_6548,
            },
            ItcWrite {
                retired: 9,
                idtag: 3,
                value: 10,
            },
        ];
        let t = to_text(&w);
        assert_eq!(parse(&t).unwrap(), w);
        assert_eq!(
            parse("9 0x0 0x1\n7 0x0 0x1").unwrap_err(),
            "line 2: RETIRED goes backwards"
        );
        assert_eq!(
            parse("x 0 1").unwrap_err(),
            "line 1: expected RETIRED IDTAG VALUE"
        );
        assert_eq!(
            sidecar_path(Path::new("a/t.ing")),
            PathBuf::from("a/t.ing.itc")
        );
    }
}
