//! What an N-Trace stream costs (`rvtrace stats --trace ntrace`): per TCODE the messages, their
//! MDO bits (6 of every 8 bits of a message byte, N-Trace 3.1; the other 2 are MSEO framing) and
//! their whole bytes; synchronisation messages (ProgTraceSync, DirectBranchSync,
//! IndirectBranchSync, IndirectBranchHistSync: Table 25) and the instructions and bytes between
//! them; idle bytes, Error messages (7.4) and framing errors. Instructions and losses come from
//! the decoder, fed one message at a time.

use crate::codec::{tcode, Frame, Frames};
use crate::decoder::{Decoder, DecoderConfig};
use rvtrace_flow::stats::{StatsBuilder, TraceStats};
use rvtrace_flow::{FlowElement, TraceDecoder};
use rvtrace_image::Image;

/// Whether a TCODE is a synchronisation message (N-Trace Table 25 lists their SYNC codes).
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
    let mut dec = Decoder::new(image, cfg);
    let mut b = StatsBuilder::new("ntrace", "messages");
    // Instructions decoded so far (the decoder's own count may lag: it is kept per packet).
    let decoded = std::cell::Cell::new(0u64);
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Range { count, .. } = e {
            decoded.set(decoded.get() + count);
        }
    };
    let mut frames = Frames::new(data);
    let (mut pushed, mut errors, mut error_messages) = (0usize, 0u64, 0u64);
    for f in frames.by_ref() {
        match f {
            Frame::Message(m) => {
                let end = (m.offset + m.len) as usize;
                TraceDecoder::push(&mut dec, &data[pushed..end], &mut sink);
                pushed = end;
                let t = m.tcode();
                if t == tcode::ERROR {
                    error_messages += 1;
                }
                let sync = is_sync(t).then_some((m.offset, decoded.get()));
                let name = || match tcode::name(t) {
                    Some(n) => format!("TCODE {t:<2} {n}"),
                    None => format!("TCODE {t:<2} (vendor or reserved)"),
                };
                b.unit(u32::from(t), name, m.len, 6 * m.len, sync);
            }
            Frame::Error(_) => errors += 1,
        }
    }
    TraceDecoder::push(&mut dec, &data[pushed..], &mut sink);
    let st = TraceDecoder::finish(&mut dec, &mut sink);
    b.extra("idle bytes", frames.idles());
    b.extra("Error messages", error_messages);
    b.extra("framing errors", errors);
    b.finish(data.len() as u64, st.instructions, st.losses)
}
