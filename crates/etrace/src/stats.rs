//! What an E-Trace stream costs (`rvtrace stats --trace etrace`): per format.subformat the
//! `te_inst` packets, their payload bits (whole payload bytes: payloads are sign-extended to a
//! byte boundary, `payload.adoc`) and their bytes with the framing (`te_inst_raw` header, or the
//! encapsulation header, srcID, timestamp and type: `etrace-encap`); synchronisation packets
//! (format 3 subformats 0-2: start, trap, context; `payload.adoc` `sec:format3`) and the
//! instructions and bytes between them; null packets, other packets and framing errors
//! (including payloads that do not decode).
//! Instructions and losses come from the decoder, fed one packet at a time. The reference
//! flow's figures (`run_regression.sh`: packets, raw bytes, payload bytes = raw bytes less one
//! header byte per packet, bits/instr = payload bits per instruction) are these.

use crate::codec::{read_trace_items, Frame, FrameReader, Item, TeInst};
use crate::config::TraceConfig;
use crate::decoder::{Decoder, DecoderConfig};
use rvtrace_flow::stats::{StatsBuilder, TraceStats};
use rvtrace_flow::FlowElement;
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;

/// The statistics of the E-Trace stream `data` of the program in `image`, read and decoded with
/// `cfg`.
pub fn stats(image: &Image, isa: IsaConfig, cfg: &TraceConfig, data: &[u8]) -> TraceStats {
    match stats_read(image, isa, cfg, data) {
        Ok(s) => s,
        Err(_) => unreachable!("reading a slice cannot fail"),
    }
}

/// [`stats`] of the stream read from `input` a window at a time (memory stays flat in its size;
/// the figures do not depend on how the reads cut it).
pub fn stats_read<R: std::io::Read>(
    image: &Image,
    isa: IsaConfig,
    cfg: &TraceConfig,
    input: R,
) -> std::io::Result<TraceStats> {
    stats_read_with(
        Decoder::new(image, DecoderConfig::from_config(cfg, isa)),
        cfg,
        input,
    )
}

/// [`stats_read`] with `dec`, a decoder made with `cfg`'s options (one of a program's address
/// spaces: [`Decoder::with_spaces`]).
pub fn stats_read_with<R: std::io::Read>(
    mut dec: Decoder<'_>,
    cfg: &TraceConfig,
    input: R,
) -> std::io::Result<TraceStats> {
    let (encap_cfg, _) = cfg.framing.reader();
    let mut b = StatsBuilder::new("etrace", "packets");
    // Instructions decoded so far.
    let decoded = std::cell::Cell::new(0u64);
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Range { count, .. } = e {
            decoded.set(decoded.get() + count);
        }
    };
    let (mut nulls, mut others, mut errors) = (0u64, 0u64, 0u64);
    // The bytes of the te_inst packets read (framing included).
    let mut own = 0u64;
    // The packet reader says which frames are te_inst packets and decodes them (following
    // support packets' options); the frame reader, on the packet's bytes, gives its sizes.
    let len = read_trace_items(input, cfg, |at, item, _, bytes| {
        match item {
            Item::Packet(p) => {
                // One packet at a time, so that the count at each packet is known (the
                // stream interface gathers a window first).
                dec.packet(at, &p, &mut sink);
                let mut frames = FrameReader::new(bytes, encap_cfg);
                let payload = match frames.next() {
                    Some((_, Ok(Frame::Normal(n)))) => n.payload().len() as u64,
                    _ => 0,
                };
                let (f, sf) = (p.format(), p.subformat());
                let key = u32::from(f) * 8 + sf.map_or(0, u32::from);
                let name = || format!("{} {}", p.kind(), kind_name(&p));
                // Where the packet is in the hart's own bytes (one hart of several: the
                // others' packets between two syncs are not its sync spacing).
                let pos = if cfg.srcid.is_some() { own } else { at };
                let sync = (f == 3 && sf != Some(3)).then_some((pos, decoded.get()));
                own += frames.offset() as u64;
                b.unit(key, name, frames.offset() as u64, 8 * payload, sync);
            }
            Item::Error(e) => {
                dec.error(at, &e, &mut sink);
                errors += 1;
            }
            Item::Other(Frame::Null { .. }) => nulls += 1,
            Item::Other(_) => others += 1,
        }
        true
    })?;
    dec.finish_at(len, &mut sink);
    b.extra("null packets", nulls);
    b.extra("other packets", others);
    b.extra("framing errors", errors);
    // One hart of several (`cfg.srcid`): its cost is its own packets' bytes, not the stream's.
    let bytes = if cfg.srcid.is_some() { own } else { len };
    Ok(b.finish(bytes, decoded.get(), dec.stats().errors))
}

/// What a packet is (`payload.adoc` format and subformat names).
fn kind_name(p: &TeInst) -> &'static str {
    match p {
        TeInst::BranchCount { .. } => "branch count",
        TeInst::JumpTargetIndex { .. } => "jump target index",
        TeInst::Branch { .. } => "branch, differential address",
        TeInst::Addr(_) => "address only",
        TeInst::Start { .. } => "synchronisation: start",
        TeInst::Trap { .. } => "synchronisation: trap",
        TeInst::Context { .. } => "synchronisation: context",
        TeInst::Support(_) => "support",
    }
}
