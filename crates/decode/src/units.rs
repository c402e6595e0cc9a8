//! Decoding with the byte offset of every message (N-Trace) or packet (E-Trace) known: what a
//! tool that points at the trace byte behind an instruction needs (`rvtrace compare`).

use crate::{Config, Protocol, Trace};
use rvtrace_flow::{FlowSink, TraceDecoder};
use rvtrace_image::Image;
use std::io::Read;

/// A flow sink that is also told where each message or packet begins, before the elements it
/// produces, and how many instructions the decoder has counted after it. Ranges may span
/// several messages (they are emitted late, merged): the counts say which instructions each one
/// produced.
pub trait UnitSink: FlowSink {
    /// The message or packet at byte `offset` is decoded next (at the end of the trace: its
    /// length, for what the end reports).
    fn begin(&mut self, offset: u64);
    /// After it the decoder has counted `instructions` in all.
    fn end(&mut self, instructions: u64);
}

impl Trace {
    /// What the trace's units are called: "message" (N-Trace) or "packet" (E-Trace).
    pub fn unit_name(&self) -> &'static str {
        match self.protocol {
            Protocol::Ntrace => "message",
            Protocol::Etrace => "packet",
        }
    }

    /// Decode the trace read from `input` (from its start) into `sink` message by message or
    /// packet by packet ([`UnitSink`]); stops early when the sink asks. Memory stays flat in the
    /// trace's size.
    pub fn decode_units<R: Read, S: UnitSink>(
        &self,
        image: &Image,
        input: R,
        sink: &mut S,
    ) -> std::io::Result<()> {
        match &self.config {
            Config::Ntrace { cfg, .. } => ntrace_units(image, *cfg, input, sink),
            Config::Etrace { cfg, isa, .. } => etrace_units(image, cfg, *isa, input, sink),
        }
    }
}

/// N-Trace: each message's bytes pushed on their own (a message ends at a byte with MSEO = 11,
/// N-Trace 5), so that the decoder's count after it says what it produced.
fn ntrace_units<R: Read, S: UnitSink>(
    image: &Image,
    cfg: rvtrace_ntrace::decoder::DecoderConfig,
    mut input: R,
    h: &mut S,
) -> std::io::Result<()> {
    use rvtrace_ntrace::codec::mseo::IDLE;
    let mut dec = rvtrace_ntrace::decoder::Decoder::new(image, cfg);
    let mut buf = vec![0u8; 1 << 16];
    let mut pos = 0u64;
    let mut msg_start: Option<u64> = None;
    while !h.stop_requested() {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut from = 0;
        for (i, &b) in buf[..n].iter().enumerate() {
            let at = pos + i as u64;
            if msg_start.is_none() && b != IDLE {
                msg_start = Some(at);
            }
            if b & 3 == 3 {
                h.begin(msg_start.take().unwrap_or(at));
                dec.push(&buf[from..=i], h);
                h.end(dec.stats().instructions);
                from = i + 1;
                if h.stop_requested() {
                    return Ok(());
                }
            }
        }
        if from < n {
            h.begin(msg_start.unwrap_or(pos + from as u64));
            dec.push(&buf[from..n], h);
            h.end(dec.stats().instructions);
        }
        pos += n as u64;
    }
    h.begin(pos);
    TraceDecoder::finish(&mut dec, h);
    h.end(dec.stats().instructions);
    Ok(())
}

/// E-Trace: packet by packet, as the framing reads them.
fn etrace_units<R: Read, S: UnitSink>(
    image: &Image,
    cfg: &rvtrace_etrace::config::TraceConfig,
    isa: rvtrace_isa::IsaConfig,
    input: R,
    h: &mut S,
) -> std::io::Result<()> {
    use rvtrace_etrace::codec::{read_trace_items, Item};
    use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
    let mut dec = Decoder::new(image, DecoderConfig::from_config(cfg, isa));
    let len = read_trace_items(input, cfg, |off, item, _, _| {
        h.begin(off);
        match item {
            Item::Packet(p) => dec.packet(off, &p, h),
            Item::Error(e) => dec.error(off, &e, h),
            Item::Other(_) => {}
        }
        h.end(dec.stats().instructions);
        !h.stop_requested()
    })?;
    if h.stop_requested() {
        return Ok(());
    }
    h.begin(len);
    dec.finish_at(len, h);
    h.end(dec.stats().instructions);
    Ok(())
}
