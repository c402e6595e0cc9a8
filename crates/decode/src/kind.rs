//! What kind of file this is: one sniffer for every command, so that each says the same thing
//! about the same file, and the protocol of a trace when its sidecar does not say it.

use crate::Protocol;

/// Whether `head` (the first bytes of a file) is a binary ingress file (its magic).
pub fn is_ingress(head: &[u8]) -> bool {
    head.starts_with(&rvtrace_ingress::binary::MAGIC)
}

/// What `data` (the first bytes of a file) is, if it is recognisably not a trace of the
/// `expected` protocol: a sentence naming it and what to do with it.
pub fn wrong_kind(data: &[u8], expected: Protocol) -> Option<String> {
    let head = &data[..data.len().min(4096)];
    if let Some(k) = other_kind(head) {
        return Some(k);
    }
    match expected {
        // A tandem verification trace starts with a BEGIN_GROUP byte (1) and its groups end with
        // END_GROUP (2); as N-Trace its first byte (MSEO=01) cannot start a message (3.1 Table 5).
        Protocol::Ntrace if looks_like_tandem(head) => Some(
            "a tandem verification trace (starts with BEGIN_GROUP): use `rvtrace tandem`".into(),
        ),
        Protocol::Ntrace if looks_like_te_inst_raw(head) => {
            Some("an E-Trace te_inst_raw stream, it seems (see `rvtrace dump etrace`)".into())
        }
        Protocol::Etrace if looks_like_ntrace(head, false) => Some(
            "an N-Trace (Nexus MSEO/MDO) byte stream, it seems (see `rvtrace dump ntrace`)".into(),
        ),
        _ => None,
    }
}

/// What `head` (the first bytes of a file) is when it is recognisably no N-Trace or E-Trace
/// (by its magic bytes, as text, or as a tandem verification trace).
pub fn not_a_trace(head: &[u8]) -> Option<String> {
    let head = &head[..head.len().min(4096)];
    other_kind(head).or_else(|| {
        looks_like_tandem(head).then(|| {
            "a tandem verification trace (starts with BEGIN_GROUP): use `rvtrace tandem`".into()
        })
    })
}

/// What `head` is when it is recognisably no trace at all (by its magic bytes, or text).
fn other_kind(head: &[u8]) -> Option<String> {
    if head.starts_with(b"\x7fELF") {
        return Some(
            "an ELF file (give it with --elf; the trace is the other file: record one with \
             `rvtrace run PROG.elf --ingress t.ingress`, or encode that with `rvtrace encode`)"
                .into(),
        );
    }
    if is_ingress(head) {
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
    text_kind(head)
}

/// Whether `head` (the first bytes of a file) is text: trace bytes soon include one outside
/// printable ASCII (an idle 0xFF, the bits of an address or count), so 16 bytes or more of
/// nothing but text are not a trace.
pub fn is_text(head: &[u8]) -> bool {
    head.len() >= 16
        && head
            .iter()
            .all(|&b| matches!(b, b'\n' | b'\r' | b'\t' | 0x20..=0x7e))
}

/// "a text file (it starts with ...)" when `head` is text ([`is_text`]).
fn text_kind(head: &[u8]) -> Option<String> {
    if is_text(head) {
        let first = String::from_utf8_lossy(&head[..head.len().min(40)]);
        let first = first.lines().next().unwrap_or("");
        return Some(format!("a text file (it starts with {first:?})"));
    }
    None
}

/// The protocol of a trace whose first bytes are `head` (`whole`: `head` is the whole file), as
/// far as its bytes tell: N-Trace when they read as MSEO/MDO messages, E-Trace when they read as
/// the reference flow's `te_inst_raw`. An encapsulated E-Trace stream has no such mark (its
/// sidecar or `--protocol` tells): `None`, as for anything else.
pub fn protocol_of(head: &[u8], whole: bool) -> Option<Protocol> {
    let head = &head[..head.len().min(1 << 16)];
    if other_kind(head).is_some() || looks_like_tandem(head) {
        return None;
    }
    if looks_like_ntrace(head, whole) {
        Some(Protocol::Ntrace)
    } else if looks_like_te_inst_raw(head) {
        Some(Protocol::Etrace)
    } else {
        None
    }
}

/// Whether `head` starts as a tandem verification trace (Bluespec's draft, chapter 2): a
/// BEGIN_GROUP opcode (1), then another record's opcode (INCR_PC 3 to STATE_INIT 11, INSN16 16,
/// INSN32 17), and an END_GROUP (2) in it. (An E-Trace header of 1, a 1-byte packet, is
/// followed by any payload byte.)
fn looks_like_tandem(head: &[u8]) -> bool {
    matches!(head, [1, 3..=11 | 16 | 17, ..]) && head.contains(&2)
}

/// Whether `head` reads as the reference flow's `te_inst_raw`: every header's message type is
/// `te_inst` (2 in the flow bits) and the lengths chain the packets to the end of `head` (the
/// last one may be cut). Null bytes between packets are idle.
fn looks_like_te_inst_raw(head: &[u8]) -> bool {
    if !rvtrace_etrace::codec::looks_like_te_inst_raw(head) {
        return false;
    }
    let (mut at, mut packets) = (0, 0);
    while at < head.len() {
        let h = head[at];
        let len = (h & 0x1f) as usize;
        if len == 0 {
            at += 1;
            continue;
        }
        if (h >> 5) & 3 != 2 || h & 0x80 != 0 {
            return false;
        }
        at += 1 + len;
        packets += 1;
    }
    packets >= 2
}

/// Whether `head` reads as N-Trace messages (N-Trace 3.1, MSEO sequences): no byte with the
/// reserved MSEO\[1:0\] = 10, every message start (the byte after an end, idle bytes aside)
/// with MSEO = 00, and at least 4 message ends (MSEO = 11, not idle 0xFF) in 32 bytes or more;
/// for a `whole` file shorter than that, at least one end and nothing after the last. E-Trace
/// headers and payloads use every low-bit pattern, so a stream of this size passes only by
/// chance.
fn looks_like_ntrace(head: &[u8], whole: bool) -> bool {
    if head.iter().any(|&b| b & 3 == 2) {
        return false;
    }
    let (mut ends, mut in_msg) = (0u32, false);
    for &b in head {
        if !in_msg {
            // Between messages: idle bytes, or the first byte of one (MSEO = 00).
            if b == 0xff {
                continue;
            }
            if b & 3 != 0 {
                return false;
            }
            in_msg = true;
        }
        // MSEO = 11 ends the message (its last byte may be 0xFF).
        if b & 3 == 3 {
            in_msg = false;
            ends += 1;
        }
    }
    if head.len() >= 32 {
        ends >= 4
    } else {
        whole && ends >= 1 && !in_msg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let kind = |d: &[u8], e| wrong_kind(d, e).unwrap_or_default();
        for e in [Protocol::Ntrace, Protocol::Etrace] {
            assert!(kind(b"\x7fELF\x02\x01\x01", e).starts_with("an ELF file"));
            assert!(kind(b"RVTRINGR\x01\x00", e).starts_with("a binary ingress file"));
            assert!(kind(&[0x1f, 0x8b, 8, 0], e).starts_with("a gzip"));
            assert!(kind(b"0x80000000,J4\n0x80000004,4\n", e).starts_with("a text file"));
            assert!(kind(b"protocol = ntrace\n", e).starts_with("an rvtrace sidecar"));
            assert_eq!(wrong_kind(&[], e), None);
        }
        assert!(kind(&[1, 3, 0, 0x80, 2], Protocol::Ntrace).starts_with("a tandem"));
        // An E-Trace stream whose first packet has 1 payload byte is not one.
        assert!(!kind(&[1, 0x60, 2, 0x80, 2], Protocol::Ntrace).starts_with("a tandem"));
        // N-Trace bytes (N-Trace 3.5 Table 6) are not refused as N-Trace.
        let msg = [0xFFu8, 0x70, 0xD0, 0x1D, 0x1D, 0xF8, 0xFF, 0xFF];
        assert_eq!(wrong_kind(&msg, Protocol::Ntrace), None);
    }

    #[test]
    fn protocols() {
        // N-Trace 3.5 Table 6: one message, a whole file.
        let msg = [0xFFu8, 0x70, 0xD0, 0x1D, 0x1D, 0xF8, 0xFF, 0xFF];
        assert_eq!(protocol_of(&msg, true), Some(Protocol::Ntrace));
        // ... the start of a longer file: too little to tell.
        assert_eq!(protocol_of(&msg, false), None);
        // te_inst_raw: headers 0x40 | length, the lengths chaining the packets.
        let raw = [0x43u8, 1, 2, 3, 0x41, 9, 0x42, 7, 7];
        assert_eq!(protocol_of(&raw, true), Some(Protocol::Etrace));
        // A header of another message type breaks the chain.
        let not = [0x43u8, 1, 2, 3, 0x21, 9, 0x42, 7, 7];
        assert_eq!(protocol_of(&not, true), None);
        assert_eq!(protocol_of(b"\x7fELF\x02\x01\x01", true), None);
        assert_eq!(protocol_of(&[1, 3, 0, 0x80, 2], true), None);
    }
}
