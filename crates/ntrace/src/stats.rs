//! What an N-Trace stream costs (`rvtrace stats --trace ntrace`): per TCODE the messages, their
//! MDO bits (6 of every 8 bits of a message byte, N-Trace 3.1; the other 2 are MSEO framing) and
//! their whole bytes; synchronisation messages (ProgTraceSync, DirectBranchSync,
//! IndirectBranchSync, IndirectBranchHistSync: 8.4) and the instructions and bytes between
//! them; idle bytes, Error messages (7.4) and framing errors. Instructions and losses come from
//! the decoder, fed one message at a time. With [`DecoderConfig::src`], only that hart's
//! messages count (SRC, N-Trace 6.2), and the bytes are theirs.

use crate::codec::{tcode, Deframer, Frame};
use crate::decoder::{Decoder, DecoderConfig};
use rvtrace_flow::stats::{StatsBuilder, TraceStats};
use rvtrace_flow::{FlowElement, TraceDecoder};
use rvtrace_image::Image;
use std::io::{self, Read};

/// Whether a TCODE is a synchronisation message (N-Trace 8.4 lists their SYNC codes).
pub const fn is_sync(t: u8) -> bool {
    matches!(
        t,
        tcode::PROG_TRACE_SYNC
            | tcode::DIRECT_BRANCH_SYNC
            | tcode::INDIRECT_BRANCH_SYNC
            | tcode::INDIRECT_BRANCH_HIST_SYNC
    )
}

/// The statistics of the N-Trace stream `data` of the program in `image`, decoded with `cfg`.
pub fn stats(image: &Image, cfg: DecoderConfig, data: &[u8]) -> TraceStats {
    match stats_read(image, cfg, data) {
        Ok(s) => s,
        Err(_) => unreachable!("reading a slice cannot fail"),
    }
}

/// [`stats`] of the stream read from `input` 64 KiB at a time (memory stays flat in its size;
/// the figures do not depend on how the reads cut it).
pub fn stats_read<R: Read>(image: &Image, cfg: DecoderConfig, input: R) -> io::Result<TraceStats> {
    stats_read_with(Decoder::new(image, cfg), cfg, input)
}

/// [`stats_read`] with `dec`, a decoder made with `cfg` (one of a program's address spaces:
/// [`Decoder::with_spaces`]).
pub fn stats_read_with<R: Read>(
    mut dec: Decoder<'_>,
    cfg: DecoderConfig,
    mut input: R,
) -> io::Result<TraceStats> {
    let mut b = StatsBuilder::new("ntrace", "messages");
    // Instructions decoded so far (the decoder's own count may lag: it is kept per packet).
    let decoded = std::cell::Cell::new(0u64);
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Range { count, .. } = e {
            decoded.set(decoded.get() + count);
        }
    };
    let mut frames = Deframer::new();
    let (mut errors, mut error_messages, mut len) = (0u64, 0u64, 0u64);
    // Messages of other SRCs than `cfg.src`, and the bytes of the messages counted.
    let (mut other_src, mut own) = (0u64, 0u64);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        // The decoder gets each message's bytes before the message is counted.
        let mut pushed = 0;
        for (i, &byte) in chunk.iter().enumerate() {
            match frames.push(byte) {
                Some(Frame::Message(m)) => {
                    TraceDecoder::push(&mut dec, &chunk[pushed..=i], &mut sink);
                    pushed = i + 1;
                    // One hart of several: the others' messages are not its cost.
                    if cfg.src.is_some_and(|k| k != m.src(cfg.codec.src_bits)) {
                        other_src += 1;
                        continue;
                    }
                    // Where the message is in the hart's own bytes (one hart of several: the
                    // others' messages between two syncs are not its sync spacing).
                    let at = if cfg.src.is_some() { own } else { m.offset };
                    own += m.len;
                    let t = m.tcode();
                    if t == tcode::ERROR {
                        error_messages += 1;
                    }
                    let sync = is_sync(t).then_some((at, decoded.get()));
                    let name = || match tcode::name(t) {
                        Some(n) => format!("TCODE {t:<2} {n}"),
                        None => format!("TCODE {t:<2} (vendor or reserved)"),
                    };
                    b.unit(u32::from(t), name, m.len, 6 * m.len, sync);
                }
                Some(Frame::Error(_)) => errors += 1,
                None => {}
            }
        }
        TraceDecoder::push(&mut dec, &chunk[pushed..], &mut sink);
        len += n as u64;
    }
    if frames.finish().is_some() {
        errors += 1;
    }
    let st = TraceDecoder::finish(&mut dec, &mut sink);
    b.extra("idle bytes", frames.idles());
    b.extra("Error messages", error_messages);
    b.extra("framing errors", errors);
    if cfg.src.is_some() {
        b.extra("other SRCs' messages", other_src);
    }
    // One hart of several (`cfg.src`): its cost is its own messages' bytes, not the stream's.
    let bytes = if cfg.src.is_some() { own } else { len };
    Ok(b.finish(bytes, st.instructions, st.losses))
}
