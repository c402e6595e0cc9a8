//! The sync scan of a chunked decode (`rvtrace_flow::chunk`): where in an N-Trace byte stream
//! a decoder can start without history.
//!
//! Messages end at a byte with MSEO = 11 (N-Trace 3.1), so a message starts at a byte with
//! MSEO = 00 right after one with MSEO = 11 (an idle 0xFF between messages has MSEO = 11 too):
//! the scan finds a message start from any byte, then cuts messages as the decoder does
//! ([`Deframer`]) until a synchronization message (ProgTraceSync, DirectBranchSync,
//! IndirectBranchSync, IndirectBranchHistSync: SYNC and F-ADDR, N-Trace 7.5-7.7, 7.10) of the
//! decoded SRC whose SYNC resets the encoder state (the implicit-return stack, HIST and the
//! repeat-branch state start empty after it: every SYNC in 1.0 8.4; in rc7 all but 0, 4 and 6,
//! rc7 8.5 Table 25 column "Encoder Reset", [`crate::options::Spec::sync_resets_encoder`]).
//! After such a message the decoder's state is what the message says (its F-ADDR, TSTAMP) and
//! nothing before it; an rc7 SYNC that resets nothing keeps them, so the scan passes it by. The
//! chunk's stitch checks the state anyway (a damaged stream is caught there).

use crate::codec::mseo::{MSEO_DATA, MSEO_END_MESSAGE};
use crate::codec::{parse, Body, Deframer, Frame};
use crate::decoder::{full_addr, DecoderConfig};
use crate::decoder::{DecodeStats, Decoder};
use rvtrace_flow::chunk::{self, ChunkError, Cut};
use rvtrace_flow::{FlowElement, FlowSink};
use rvtrace_image::Image;

/// A synchronization message the scan found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncPoint {
    /// Where it is in the stream.
    pub cut: Cut,
    /// Its F-ADDR (the address of the next instruction).
    pub addr: u64,
    /// Its SYNC code (N-Trace 8.4 "SYNC Field Values").
    pub sync: u8,
}

/// The first message start at or after `from`: a byte with MSEO = 00 after one with MSEO = 11.
fn message_start(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    if i > 0 && i < bytes.len() && bytes[i - 1] & 3 != MSEO_END_MESSAGE {
        // Inside a message (or at a field's end): go past its last byte.
        i += bytes[i..].iter().position(|b| b & 3 == MSEO_END_MESSAGE)? + 1;
    }
    // Idles and stray bytes with MSEO = 11 between messages.
    i += bytes.get(i..)?.iter().position(|b| b & 3 == MSEO_DATA)?;
    (i == 0 || bytes[i - 1] & 3 == MSEO_END_MESSAGE).then_some(i)
}

/// The first synchronization message starting at or after byte `from` at which a decoder can
/// start without history (see the module documentation), or `None` if there is none.
pub fn next_sync(bytes: &[u8], from: u64, cfg: &DecoderConfig) -> Option<SyncPoint> {
    let start = message_start(bytes, usize::try_from(from).ok()?)?;
    let mut d = Deframer::at(start as u64);
    bytes[start..].iter().find_map(|&b| match d.push(b)? {
        Frame::Message(raw) => sync_point(&raw, cfg).filter(|p| cfg.sync_resets_encoder(p.sync)),
        Frame::Error(_) => None,
    })
}

fn sync_point(raw: &crate::codec::RawMessage, cfg: &DecoderConfig) -> Option<SyncPoint> {
    let src_bits = cfg.codec.src_bits.min(12) as u32;
    if let (Some(want), true) = (cfg.src, src_bits > 0) {
        let src = raw.segment(0).map_or(0, |s| s.field(6, src_bits)) as u16;
        if src != want {
            return None;
        }
    }
    let m = parse(raw, &cfg.codec).ok()?;
    let (code, faddr) = match m.body {
        Body::ProgTraceSync { sync, faddr, .. }
        | Body::DirectBranchSync { sync, faddr, .. }
        | Body::IndirectBranchSync { sync, faddr, .. }
        | Body::IndirectBranchHistSync { sync, faddr, .. } => (sync, faddr),
        _ => return None,
    };
    Some(SyncPoint {
        cut: Cut {
            offset: raw.offset,
            len: raw.len,
        },
        addr: full_addr(cfg, &faddr),
        sync: code,
    })
}

/// Every synchronization message of the decoded SRC, in order (those with a SYNC that resets
/// nothing too): where a decode from the start reports [`rvtrace_flow::FlowElement::Sync`]
/// when the stream is whole.
pub fn syncs(bytes: &[u8], cfg: &DecoderConfig) -> Vec<SyncPoint> {
    let mut v = Vec::new();
    let mut d = Deframer::new();
    d.push_slice(bytes, |frame| {
        if let Some(p) = frame.ok().and_then(|raw| sync_point(raw, cfg)) {
            v.push(p);
        }
    });
    v
}

/// Decode the whole trace `bytes` in chunks of about `chunk_bytes` bytes cut at
/// synchronization messages ([`next_sync`]), on `jobs` threads, giving the elements to `sink`:
/// the elements and counts of [`crate::decoder::decode`] (see `rvtrace_flow::chunk`). Returns
/// the counts and the number of chunks decoded again because their start state was not what
/// the synchronization message says.
pub fn decode_parallel<S: FlowSink + ?Sized>(
    image: &Image,
    cfg: DecoderConfig,
    bytes: &[u8],
    chunk_bytes: u64,
    jobs: usize,
    sink: &mut S,
) -> Result<(DecodeStats, u64), ChunkError> {
    let write = |v: Vec<FlowElement>| {
        v.iter().for_each(|e| sink.element(e));
        !sink.stop_requested()
    };
    decode_parallel_to(image, cfg, bytes, chunk_bytes, jobs, Vec::new, write)
}

/// [`decode_parallel`] with each chunk's output made by the thread that decodes it
/// (`rvtrace_flow::chunk::decode_parallel_to`: `part()` makes one, `write` gets them in order).
pub fn decode_parallel_to<P: FlowSink + Send>(
    image: &Image,
    cfg: DecoderConfig,
    bytes: &[u8],
    chunk_bytes: u64,
    jobs: usize,
    part: impl Fn() -> P + Sync,
    write: impl FnMut(P) -> bool,
) -> Result<(DecodeStats, u64), ChunkError> {
    let cuts = chunk::cuts(bytes.len() as u64, chunk_bytes, |from| {
        next_sync(bytes, from, &cfg).map(|p| p.cut)
    });
    let code = Decoder::code(image, &cfg);
    let make = |offset| Decoder::at(image, cfg, code.clone(), offset);
    let ((_, st), redone) = chunk::decode_parallel_to(bytes, &cuts, jobs, make, part, write)?;
    Ok((st, redone))
}

/// The SRC fields (trTeSrcID, N-Trace 6.2: the `src_bits` bits after TCODE in every message)
/// of the messages read from `input`, each once, in increasing order: the harts of a trace of
/// several (`rvtrace decode ntrace --all-harts` decodes each on its own with
/// [`DecoderConfig::src`]). Empty when `src_bits` is 0 (no SRC field) or no message is whole.
/// Reads 64 KiB at a time: memory stays flat in the trace's size.
pub fn sources<R: std::io::Read>(mut input: R, src_bits: u8) -> std::io::Result<Vec<u16>> {
    let mut seen = [false; 1 << 12];
    if src_bits > 0 {
        let mut deframer = Deframer::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            deframer.push_slice(&buf[..n], |frame| {
                if let Ok(raw) = frame {
                    seen[raw.src(src_bits) as usize] = true;
                }
            });
        }
    }
    Ok((0..1u16 << 12).filter(|&k| seen[k as usize]).collect())
}
