//! What kind of file this is, for a command given the wrong one (`dump ntrace prog.elf`): one
//! sniffer for every command, so each says the same thing about the same file.

use crate::report::Failure;
use std::path::Path;

/// The kind of file a command reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// N-Trace messages (MSEO/MDO bytes).
    Ntrace,
    /// E-Trace packets (encapsulated or te_inst_raw).
    Etrace,
}

impl Expected {
    fn name(self) -> &'static str {
        match self {
            Expected::Ntrace => "an N-Trace trace",
            Expected::Etrace => "an E-Trace trace",
        }
    }
}

/// Refuse `data` (the first bytes of `name`) when it is recognisably not of the `expected` kind,
/// saying what it is.
pub fn check(name: &Path, data: &[u8], expected: Expected) -> Result<(), Failure> {
    match sniff(data, expected) {
        Some(k) => Err(Failure::Tool(format!(
            "{}: this is {k}, not {}",
            crate::report::name(name),
            expected.name()
        ))),
        None => Ok(()),
    }
}

/// What `data` is, if it is recognisably something other than `expected`.
pub fn sniff(data: &[u8], expected: Expected) -> Option<String> {
    let head = &data[..data.len().min(4096)];
    if head.starts_with(b"\x7fELF") {
        return Some("an ELF file (give it with --elf; the trace is the other file)".into());
    }
    if head.starts_with(&rvtrace_ingress::binary::MAGIC) {
        return Some(
            "a binary ingress file (`rvtrace run --ingress`): encode it first with `rvtrace encode ntrace|etrace`"
                .into(),
        );
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return Some("a gzip-compressed file (uncompress it first)".into());
    }
    if head.starts_with(b"itype") {
        return Some(
            "the reference flow's encoder_input CSV (an ingress stream: `rvtrace encode etrace` takes it)"
                .into(),
        );
    }
    if head.starts_with(b"# rvtrace") || head.starts_with(b"protocol = ") {
        return Some("an rvtrace sidecar (.meta), not the trace".into());
    }
    match expected {
        // A tandem verification trace starts with a BEGIN_GROUP byte (1) and its groups end with
        // END_GROUP (2); as N-Trace its first byte (MSEO=01) cannot start a message (3.1 Table 5).
        // (An E-Trace header may be 1, so this is asked of N-Trace input only.)
        Expected::Ntrace if head.first() == Some(&1) && head.contains(&2) => {
            return Some(
                "a tandem verification trace (starts with BEGIN_GROUP): use `rvtrace tandem`"
                    .into(),
            )
        }
        Expected::Etrace if looks_like_ntrace(head) => {
            return Some(
                "an N-Trace (Nexus MSEO/MDO) byte stream, it seems (see `rvtrace dump ntrace`)"
                    .into(),
            )
        }
        _ => {}
    }
    // Text: trace bytes soon include one outside printable ASCII (an idle 0xFF, the bits of an
    // address or count), so 16 bytes or more of nothing but text are not a trace.
    let text = head.len() >= 16
        && head
            .iter()
            .all(|&b| matches!(b, b'\n' | b'\r' | b'\t' | 0x20..=0x7e));
    if text {
        let first = String::from_utf8_lossy(&head[..head.len().min(40)]);
        let first = first.lines().next().unwrap_or("");
        return Some(format!("a text file (it starts with {first:?})"));
    }
    None
}

/// Whether `head` reads as N-Trace messages (N-Trace 3.1, MSEO sequences): no byte with the
/// reserved MSEO\[1:0\] = 10, at least 4 message ends (MSEO = 11, not idle 0xFF) and every
/// message start (the byte after an end, idle bytes aside) with MSEO = 00. E-Trace headers and
/// payloads use every low-bit pattern, so a stream of this size passes only by chance.
fn looks_like_ntrace(head: &[u8]) -> bool {
    if head.len() < 32 || head.iter().any(|&b| b & 3 == 2) {
        return false;
    }
    let mut ends = 0;
    let mut after_end = true;
    for &b in head {
        if b == 0xff {
            after_end = true;
            continue;
        }
        if after_end && b & 3 != 0 {
            return false;
        }
        after_end = b & 3 == 3;
        ends += after_end as u32;
    }
    ends >= 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let kind = |d: &[u8], e| sniff(d, e).unwrap_or_default();
        for e in [Expected::Ntrace, Expected::Etrace] {
            assert!(kind(b"\x7fELF\x02\x01\x01", e).starts_with("an ELF file"));
            assert!(kind(b"RVTRINGR\x01\x00", e).starts_with("a binary ingress file"));
            assert!(kind(&[0x1f, 0x8b, 8, 0], e).starts_with("a gzip"));
            assert!(kind(b"0x80000000,J4\n0x80000004,4\n", e).starts_with("a text file"));
            assert!(kind(b"protocol = ntrace\n", e).starts_with("an rvtrace sidecar"));
            assert_eq!(sniff(&[], e), None);
        }
        assert!(kind(&[1, 3, 0, 0x80, 2], Expected::Ntrace).starts_with("a tandem"));
        // N-Trace bytes (N-Trace 3.5 Table 6) are not refused as N-Trace. (Real N-Trace streams
        // given to the E-Trace commands: crates/cli/tests/etrace.rs.)
        let msg = [0xFFu8, 0x70, 0xD0, 0x1D, 0x1D, 0xF8, 0xFF, 0xFF];
        assert_eq!(sniff(&msg, Expected::Ntrace), None);
    }
}
