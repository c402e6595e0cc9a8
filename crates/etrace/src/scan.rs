//! The sync scan of a chunked decode (`rvtrace_flow::chunk`): where in an E-Trace byte stream a
//! decoder can start without history.
//!
//! A chunk starts at a format 3 subformat 0 packet (`payload.adoc` `sec:format30`: the full
//! *address*, *privilege*, *context*, *time* and the *branch* bit of the instruction there).
//! The decoder empties its return address stack there (`decoder.adoc` `process_te_inst`,
//! format 3; unless the reference flow's quirk keeps it), and resets the branch predictor and
//! jump target cache (`branchTrace.adoc`); what survives it is the run-time options of the last
//! support packet (format 3 subformat 3, which also change how later packets parse), the trap
//! handlers learnt in implicit exception mode, and whether losses came before. The scan keeps
//! the options; the chunk's stitch checks the rest (`rvtrace_flow::chunk`).
//!
//! Packet boundaries come from the framing (the `te_inst_raw` header byte or the encapsulation
//! header with the length), so the scan walks headers ([`FrameReader`], as the decoder's packet
//! reader does: the same boundaries, the same resynchronisation after a framing error) and
//! decodes the payload of format 3 packets only.

use crate::codec::encap::RAW_TE_INST;
use crate::codec::{read_items, EncapConfig, Frame, FrameReader, Framing, Item, TeInst};
use crate::decoder::{DecodeStats, Decoder, DecoderConfig};
use crate::params::IOptions;
use rvtrace_flow::chunk::{self, ChunkError, Cut};
use rvtrace_flow::{FlowElement, FlowSink};
use rvtrace_image::Image;

/// A format 3 subformat 0 packet the scan found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncPoint {
    /// Where it is in the stream.
    pub cut: Cut,
    /// The run-time options in force there (the last support packet's).
    pub options: IOptions,
    /// Its *address* (shifted by `iaddress_lsb_p`, not masked).
    pub address: u64,
}

/// Calls `f` with every format 3 subformat 0 packet of `bytes`, in order, until it returns
/// false.
fn scan(bytes: &[u8], o: &DecoderConfig, mut f: impl FnMut(SyncPoint) -> bool) {
    let (encap, raw) = o.framing.reader();
    let mut options = o.options;
    for (off, frame) in FrameReader::new(bytes, encap) {
        let Ok(Frame::Normal(n)) = frame else {
            continue;
        };
        if o.src.is_some_and(|k| k != n.srcid) {
            continue;
        }
        let te_inst = if raw {
            n.flow == RAW_TE_INST
        } else {
            n.ptype == encap.te_inst_type
        };
        let payload = n.payload();
        // Format 3 (`payload.adoc`: *format* is the first two bits).
        if !te_inst || payload.first().is_none_or(|b| b & 3 != 3) {
            continue;
        }
        match TeInst::decode(payload, &o.params, options) {
            Ok(TeInst::Support(s)) => {
                options = IOptions::from_field(s.ioptions, o.params.options_layout)
            }
            Ok(TeInst::Start { address, .. }) => {
                let len = frame_len(bytes, off, &encap);
                let p = SyncPoint {
                    cut: Cut {
                        offset: off as u64,
                        len,
                    },
                    options,
                    address: address << o.params.iaddress_lsb_p,
                };
                if !f(p) {
                    return;
                }
            }
            Ok(_) | Err(_) => {}
        }
    }
}

/// The length of the packet at `off` (read again: [`FrameReader`] gives offsets only).
fn frame_len(bytes: &[u8], off: usize, encap: &EncapConfig) -> u64 {
    crate::codec::read_frame(&bytes[off..], encap).map_or(0, |(_, n)| n as u64)
}

/// The run-time options a chunk's decoder starts with at `offset`: those in force at the sync
/// point of `points` there ([`cuts`]), else (the trace's start) `o`'s.
pub fn options_at(points: &[SyncPoint], offset: u64, o: &DecoderConfig) -> IOptions {
    match points.binary_search_by_key(&offset, |p| p.cut.offset) {
        Ok(k) => points[k].options,
        Err(_) => o.options,
    }
}

/// Every format 3 subformat 0 packet of `bytes`, in order, with the options in force there.
pub fn syncs(bytes: &[u8], o: &DecoderConfig) -> Vec<SyncPoint> {
    let mut v = Vec::new();
    scan(bytes, o, |p| {
        v.push(p);
        true
    });
    v
}

/// The *srcID*s (the encapsulation's source field, `e-trace-specifics.adoc`) of the normal
/// packets read from `input`, each once, in increasing order: the harts of a trace of several
/// (`rvtrace decode etrace --all-harts` decodes each on its own with [`DecoderConfig::src`]).
/// Empty when the stream has no *srcID* (`te_inst_raw`, or a width of 0) or no whole packet.
/// Reads a window at a time ([`read_items`]): memory stays flat in the trace's size.
pub fn sources<R: std::io::Read>(input: R, framing: &Framing) -> std::io::Result<Vec<u16>> {
    let Framing::Encap(encap) = framing else {
        return Ok(Vec::new());
    };
    if encap.srcid_bits == 0 {
        return Ok(Vec::new());
    }
    // A bit per possible srcID (16 bits at most): 8 KiB.
    let mut seen = vec![0u64; 1 << 10];
    // No packet type is u64::MAX: every packet comes as `Other` with its header, and no
    // payload is decoded (a payload the default options cannot parse still names its hart).
    let headers = EncapConfig {
        te_inst_type: u64::MAX,
        ..*encap
    };
    let (p, o) = (crate::Params::rvtrace(64), IOptions::default());
    read_items(input, headers, false, p, o, None, |_, item, _, _| {
        if let Item::Other(Frame::Normal(n)) = item {
            seen[n.srcid as usize / 64] |= 1 << (n.srcid % 64);
        }
        true
    })?;
    Ok((0..=u16::MAX)
        .filter(|&k| seen[k as usize / 64] >> (k % 64) & 1 != 0)
        .collect())
}

/// Cut points for chunks of about `chunk_bytes` bytes: the first format 3 subformat 0 packet at
/// or after each multiple of `chunk_bytes`, with the options in force there (one pass over the
/// headers).
pub fn cuts(bytes: &[u8], o: &DecoderConfig, chunk_bytes: u64) -> Vec<SyncPoint> {
    let step = chunk_bytes.max(1);
    let mut next = step;
    let mut v = Vec::new();
    scan(bytes, o, |p| {
        if p.cut.offset >= next && p.cut.len > 0 {
            next = (p.cut.end() / step + 1) * step;
            v.push(p);
        }
        true
    });
    v
}

/// Decode the whole trace `bytes` in chunks of about `chunk_bytes` bytes cut at format 3
/// subformat 0 packets ([`cuts`]), on `jobs` threads, giving the elements to `sink`: the
/// elements and counts of a decode from the start with [`Decoder::new`] (see
/// `rvtrace_flow::chunk`). Returns the counts (common and E-Trace's) and the number of chunks
/// decoded again because their start state was not what the packet says.
pub fn decode_parallel<S: FlowSink + ?Sized>(
    image: &Image,
    o: DecoderConfig,
    bytes: &[u8],
    chunk_bytes: u64,
    jobs: usize,
    sink: &mut S,
) -> Result<(rvtrace_flow::DecodeStats, DecodeStats, u64), ChunkError> {
    let write = |v: Vec<FlowElement>| {
        v.iter().for_each(|e| sink.element(e));
        !sink.stop_requested()
    };
    decode_parallel_to(image, o, bytes, chunk_bytes, jobs, Vec::new, write)
}

/// [`decode_parallel`] with each chunk's output made by the thread that decodes it
/// (`rvtrace_flow::chunk::decode_parallel_to`: `part()` makes one, `write` gets them in order).
pub fn decode_parallel_to<P: FlowSink + Send>(
    image: &Image,
    o: DecoderConfig,
    bytes: &[u8],
    chunk_bytes: u64,
    jobs: usize,
    part: impl Fn() -> P + Sync,
    write: impl FnMut(P) -> bool,
) -> Result<(rvtrace_flow::DecodeStats, DecodeStats, u64), ChunkError> {
    let points = cuts(bytes, &o, chunk_bytes);
    let cuts: Vec<Cut> = points.iter().map(|p| p.cut).collect();
    let code = Decoder::code(image, &o);
    let make = |offset: u64| {
        Decoder::at(
            image,
            o,
            code.clone(),
            offset,
            options_at(&points, offset, &o),
        )
    };
    let ((common, st), redone) = chunk::decode_parallel_to(bytes, &cuts, jobs, make, part, write)?;
    Ok((common, st, redone))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encap::MAX_PACKET;
    use crate::codec::{write_frame, FrameFields, Item, PacketReader};

    /// A stream of packets from the sources `srcs` (payload 0x55, srcID 5 bits), a null packet
    /// between them.
    fn stream(cfg: &EncapConfig, srcs: &[u16]) -> Vec<u8> {
        let mut v = Vec::new();
        for &srcid in srcs {
            let mut out = [0u8; MAX_PACKET];
            let f = FrameFields {
                srcid,
                ..Default::default()
            };
            let n = write_frame(&[0x55], &f, cfg, &mut out).unwrap();
            v.extend_from_slice(&out[..n]);
            v.push(0);
        }
        v
    }

    /// `sources` lists each srcID once, in order; none without a srcID field. The packet reader
    /// with `only_src` reads the others as not `te_inst`.
    #[test]
    fn sources_and_the_src_filter() {
        let cfg = EncapConfig {
            srcid_bits: 5,
            ..EncapConfig::PLAIN
        };
        let b = stream(&cfg, &[17, 3, 17, 31, 0, 3]);
        let srcs = |b: &[u8], f| sources(b, &f).unwrap();
        assert_eq!(srcs(&b, Framing::Encap(cfg)), [0, 3, 17, 31]);
        // Read a few bytes at a time: packets cut across reads are whole in the scan.
        let pieces = rvtrace_testkit::ChunkedReader {
            data: &b,
            seed: 7,
            max: 5,
        };
        assert_eq!(
            sources(pieces, &Framing::Encap(cfg)).unwrap(),
            [0, 3, 17, 31]
        );
        assert!(srcs(&b, Framing::Raw).is_empty());
        assert!(srcs(&[], Framing::Encap(cfg)).is_empty());
        let plain = stream(&EncapConfig::PLAIN, &[0, 0]);
        assert!(srcs(&plain, Framing::Encap(EncapConfig::PLAIN)).is_empty());
        let p = crate::Params::rvtrace(64);
        let o = crate::IOptions::default();
        let srcs = |src| {
            PacketReader::new(&b, cfg, false, p, o)
                .only_src(src)
                .filter(|(_, i)| !matches!(i, Item::Other(_)))
                .count()
        };
        assert_eq!(
            (srcs(None), srcs(Some(17)), srcs(Some(31)), srcs(Some(9))),
            (6, 2, 1, 0)
        );
    }
}
