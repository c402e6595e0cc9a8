//! The E-Trace codec (`no_std`, no allocation): `te_inst` payloads ([`te_inst`]), their bit
//! packing and sign-based compression ([`bits`]), and the encapsulation that frames them on a
//! byte stream ([`encap`], also covering the reference flow's `te_inst_raw` files).

pub mod bits;
pub mod encap;
pub mod te_inst;

use core::fmt;

pub use encap::{
    read_frame, write_frame, EncapConfig, Frame, FrameFields, Framing, Header, Normal,
};
pub use te_inst::{AddrTail, IrdepthFill, QualStatus, Support, SyncFields, TeInst};

/// Why a packet could not be encoded or decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodecError {
    /// A `te_inst` payload of zero bytes.
    EmptyPayload,
    /// The packet does not fit (more than 512 bits uncompressed, or more than 31 bytes in an
    /// encapsulation).
    PacketTooLong,
    /// A field value does not fit its width.
    FieldTooWide {
        /// The field.
        field: &'static str,
        /// The value.
        value: u64,
    },
    /// The payload has bits after its last field that are not sign extension of it.
    TrailingBits {
        /// Bits the fields use.
        used: u32,
        /// Payload length in bytes.
        len: usize,
    },
    /// The data ends inside a packet.
    Truncated {
        /// Bytes the packet needs.
        need: usize,
        /// Bytes there are.
        have: usize,
    },
    /// Unusable parameters.
    BadParams(&'static str),
    /// Fields that contradict each other or the parameters.
    Inconsistent(&'static str),
    /// A format 0 packet without *subformat* field (`f0s_width_p` = 0) when not exactly one of
    /// branch prediction and jump target cache is enabled (`payload.adoc` `sec:f0s`).
    AmbiguousFormat0,
    /// A format 0 *subformat* other than 0 and 1.
    ReservedSubformat(u64),
    /// A format 0 subformat 0 *branch_fmt* of 01.
    ReservedBranchFmt,
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::EmptyPayload => f.write_str("empty payload"),
            CodecError::PacketTooLong => f.write_str("packet too long"),
            CodecError::FieldTooWide { field, value } => {
                write!(f, "value {value:#x} does not fit field {field}")
            }
            CodecError::TrailingBits { used, len } => write!(
                f,
                "payload of {len} bytes has data after its fields ({used} bits)"
            ),
            CodecError::Truncated { need, have } => {
                write!(f, "truncated packet: needs {need} bytes, {have} left")
            }
            CodecError::BadParams(m) => write!(f, "bad parameters: {m}"),
            CodecError::Inconsistent(m) => write!(f, "inconsistent packet: {m}"),
            CodecError::AmbiguousFormat0 => f.write_str(
                "format 0 packet without subformat field needs exactly one of branch prediction and jump target cache enabled",
            ),
            CodecError::ReservedSubformat(v) => write!(f, "reserved format 0 subformat {v}"),
            CodecError::ReservedBranchFmt => f.write_str("reserved branch_fmt 01"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for CodecError {}

/// Encode `pkt` and encapsulate it: the bytes of one packet of a `te_inst_raw` file (with
/// [`EncapConfig::TE_INST_RAW`] and *flow* = [`encap::RAW_TE_INST`]) or of an encapsulated stream.
/// Returns the packet length written to `out`.
pub fn encode_frame(
    pkt: &TeInst,
    p: &crate::Params,
    o: crate::IOptions,
    fields: &FrameFields,
    cfg: &EncapConfig,
    out: &mut [u8; encap::MAX_PACKET],
) -> Result<usize, CodecError> {
    let mut payload = [0u8; bits::MAX_PAYLOAD];
    let n = pkt.encode(p, o, &mut payload)?;
    write_frame(&payload[..n], fields, cfg, out)
}

/// What a [`PacketReader`] found at one offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// A `te_inst` packet.
    Packet(TeInst),
    /// A packet that is not a `te_inst` (null packets, other message types or flows).
    Other(Frame),
    /// A framing error, or a `te_inst` payload that does not decode.
    Error(CodecError),
}

/// Iterates over the `te_inst` packets of a framed byte stream with their byte offsets, decoding
/// payloads with the options of the latest support packet (the layout of a trap packet and of
/// format 0 depends on them; `payload.adoc` `sec:format31`, `sec:f0s`).
#[derive(Clone, Debug)]
pub struct PacketReader<'a> {
    frames: FrameReader<'a>,
    params: crate::Params,
    options: crate::IOptions,
    raw: bool,
    te_inst_type: u64,
    /// Only packets of this *srcID* are `te_inst` ([`PacketReader::only_src`]).
    src: Option<u16>,
}

impl<'a> PacketReader<'a> {
    /// A reader of `data`. With `raw`, the framing is the reference flow's `te_inst_raw` and only
    /// *flow* = 2 packets are `te_inst`; otherwise packets whose *type* is `cfg.te_inst_type` are.
    /// `options` apply until the first support packet.
    pub fn new(
        data: &'a [u8],
        cfg: EncapConfig,
        raw: bool,
        params: crate::Params,
        options: crate::IOptions,
    ) -> Self {
        PacketReader {
            frames: FrameReader::new(data, cfg),
            params,
            options,
            raw,
            te_inst_type: cfg.te_inst_type,
            src: None,
        }
    }

    /// Read only the packets of the source `src` (the encapsulation's *srcID*,
    /// `e-trace-specifics.adoc`: one hart of a trace of several) as `te_inst`: the others are
    /// [`Item::Other`] (their support packets change no options). `None`: every source.
    pub const fn only_src(mut self, src: Option<u16>) -> Self {
        self.src = src;
        self
    }

    /// The options in force.
    pub const fn options(&self) -> crate::IOptions {
        self.options
    }
}

impl Iterator for PacketReader<'_> {
    type Item = (usize, Item);

    fn next(&mut self) -> Option<Self::Item> {
        let (off, f) = self.frames.next()?;
        let item = match f {
            Err(e) => Item::Error(e),
            Ok(Frame::Normal(n))
                if ((self.raw && n.flow == encap::RAW_TE_INST)
                    || (!self.raw && n.ptype == self.te_inst_type))
                    && self.src.is_none_or(|k| k == n.srcid) =>
            {
                match TeInst::decode(n.payload(), &self.params, self.options) {
                    Ok(p) => {
                        if let TeInst::Support(s) = p {
                            self.options =
                                crate::IOptions::from_field(s.ioptions, self.params.options_layout);
                        }
                        Item::Packet(p)
                    }
                    Err(e) => Item::Error(e),
                }
            }
            Ok(f) => Item::Other(f),
        };
        Some((off, item))
    }
}

/// Guess the framing of a stream: `te_inst_raw` if its first normal packet has *flow* = 2 (the
/// reference flow's message type for `te_inst`), else plain encapsulation.
pub fn looks_like_te_inst_raw(data: &[u8]) -> bool {
    data.iter()
        .find(|&&h| h & 0x1f != 0)
        .is_some_and(|&h| (h >> 5) & 3 == encap::RAW_TE_INST && h & 0x80 == 0)
}

/// Iterates over the encapsulated packets of a byte stream, with their byte offsets.
///
/// After a framing error (a header the configuration cannot have, or a packet running past the
/// end of the data) it yields the error and resumes one byte later; a truncated packet at the
/// end ends the iteration.
#[derive(Clone, Debug)]
pub struct FrameReader<'a> {
    data: &'a [u8],
    pos: usize,
    cfg: EncapConfig,
}

impl<'a> FrameReader<'a> {
    /// A reader of `data` framed per `cfg`.
    pub const fn new(data: &'a [u8], cfg: EncapConfig) -> Self {
        FrameReader { data, pos: 0, cfg }
    }

    /// Offset of the next packet.
    pub const fn offset(&self) -> usize {
        self.pos
    }
}

impl Iterator for FrameReader<'_> {
    type Item = (usize, Result<Frame, CodecError>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.data.len() {
            return None;
        }
        let at = self.pos;
        match read_frame(&self.data[at..], &self.cfg) {
            Ok((f, n)) => {
                self.pos += n;
                Some((at, Ok(f)))
            }
            Err(e @ CodecError::Truncated { .. }) => {
                self.pos = self.data.len();
                Some((at, Err(e)))
            }
            Err(e) => {
                self.pos += 1;
                Some((at, Err(e)))
            }
        }
    }
}

/// Bytes read at a time by [`read_items`].
#[cfg(feature = "std")]
const READ_WINDOW: usize = 1 << 16;

/// The items of the framed stream read from `input`, as a [`PacketReader`] over the whole
/// stream gives them (offsets from the stream's start; with the options in force after each
/// and the bytes from the item to the end of the window read, which hold a whole packet),
/// read a window at a time so that memory stays flat in the stream's size. A packet that may
/// run past the bytes read so far waits for more (as the decoder's `push` does). With `src`,
/// only that *srcID*'s packets are `te_inst` ([`PacketReader::only_src`]). `f` returns `false`
/// to stop. Returns the bytes read.
#[cfg(feature = "std")]
pub fn read_items<R: std::io::Read>(
    input: R,
    cfg: EncapConfig,
    raw: bool,
    params: crate::Params,
    options: crate::IOptions,
    src: Option<u16>,
    f: impl FnMut(u64, Item, crate::IOptions, &[u8]) -> bool,
) -> std::io::Result<u64> {
    read_items_in(READ_WINDOW, input, cfg, raw, params, (options, src), f)
}

/// What a reader of a trace's byte stream is told that the stream does not carry: its framing,
/// the packet layout, the run-time options at its start, and the *srcID* of the packets to read
/// (`None`: every packet). A trace's configuration (`config::TraceConfig`) converts into one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamLayout {
    /// How packets are framed.
    pub framing: Framing,
    /// Packet layout.
    pub params: crate::Params,
    /// Run-time options at the start (support packets replace them).
    pub options: crate::IOptions,
    /// Read only this source's packets as `te_inst` ([`PacketReader::only_src`]).
    pub src: Option<u16>,
}

/// [`read_items`] of a trace laid out per `layout` (a [`StreamLayout`], or a trace's
/// configuration: its framing, packet layout, starting options, and its *srcID* if it names one).
#[cfg(feature = "std")]
pub fn read_trace_items<R: std::io::Read>(
    input: R,
    layout: impl Into<StreamLayout>,
    f: impl FnMut(u64, Item, crate::IOptions, &[u8]) -> bool,
) -> std::io::Result<u64> {
    let l = layout.into();
    let (encap, raw) = l.framing.reader();
    read_items(input, encap, raw, l.params, l.options, l.src, f)
}

/// [`read_items`] with windows of `window` bytes (more than [`encap::MAX_PACKET`]).
#[cfg(feature = "std")]
fn read_items_in<R: std::io::Read>(
    window: usize,
    mut input: R,
    cfg: EncapConfig,
    raw: bool,
    params: crate::Params,
    (mut options, src): (crate::IOptions, Option<u16>),
    mut f: impl FnMut(u64, Item, crate::IOptions, &[u8]) -> bool,
) -> std::io::Result<u64> {
    let mut buf: Vec<u8> = Vec::with_capacity(2 * window + encap::MAX_PACKET);
    let mut chunk = vec![0u8; window];
    let mut base = 0u64;
    let mut eof = false;
    loop {
        while !eof && buf.len() < 2 * window {
            match input.read(&mut chunk) {
                Ok(0) => eof = true,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let mut rd = PacketReader::new(&buf, cfg, raw, params, options).only_src(src);
        let mut keep = buf.len();
        loop {
            let before = rd.options();
            let Some((off, item)) = rd.next() else { break };
            if !eof && off + encap::MAX_PACKET > buf.len() {
                keep = off;
                options = before;
                break;
            }
            options = rd.options();
            if !f(base + off as u64, item, options, &buf[off..]) {
                return Ok(base + buf.len() as u64);
            }
        }
        if eof {
            return Ok(base + buf.len() as u64);
        }
        buf.drain(..keep);
        base += keep as u64;
    }
}

#[cfg(test)]
mod read_items_tests {
    use super::*;
    use crate::config::{ConfigInputs, Framing, TraceConfig};
    use crate::encoder::{Encoder, FrameWriter};

    /// Windows far smaller than the trace: the items, their offsets and options are those of
    /// one reader over the whole trace (clean, damaged, cut), with reads of random sizes.
    #[test]
    fn windows_equal_whole() {
        let elf = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../programs/elf/traps-rv64gc.elf");
        let run = rvtrace_testkit::run_program(&elf, "traps", 4);
        let cfg = TraceConfig::build(&ConfigInputs {
            xlen_bits: 64,
            ..ConfigInputs::default()
        })
        .unwrap();
        let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
        for r in &run.records {
            enc.push(r).unwrap();
        }
        let trace = enc.finish().unwrap().into_inner();
        let Framing::Encap(encap) = cfg.framing else {
            panic!("rvtrace's preset writes encapsulation")
        };
        let mut variants = vec![trace.clone(), trace[..trace.len() / 2].to_vec()];
        for k in [5usize, 333] {
            let mut bad = trace.clone();
            let i = (k * 7919) % bad.len();
            bad[i] ^= 0xa5;
            variants.push(bad);
        }
        for data in &variants {
            let mut rd = PacketReader::new(data, encap, false, cfg.params, cfg.options);
            let mut want = Vec::new();
            while let Some((off, item)) = rd.next() {
                want.push((off as u64, item, rd.options()));
            }
            assert!(want.len() > 100, "the trace spans many windows");
            for window in [encap::MAX_PACKET + 1, 100, 1000] {
                let mut got = Vec::new();
                let n = read_items_in(
                    window,
                    rvtrace_testkit::ChunkedReader {
                        data,
                        seed: window as u64,
                        max: 97,
                    },
                    encap,
                    false,
                    cfg.params,
                    (cfg.options, None),
                    |off, item, o, _| {
                        got.push((off, item, o));
                        true
                    },
                )
                .unwrap();
                assert_eq!(n, data.len() as u64);
                assert_eq!(got, want, "window {window}");
            }
        }
    }

    /// A trace's configuration reads as its layout (framing, packet layout, options, srcID):
    /// of two sources, only its own packets are `te_inst`.
    #[test]
    fn a_config_reads_as_its_stream_layout() {
        let encap = EncapConfig {
            srcid_bits: 4,
            ..EncapConfig::PLAIN
        };
        let cfg = TraceConfig::build(&ConfigInputs {
            xlen_bits: 64,
            framing: Some(Framing::Encap(encap)),
            ..ConfigInputs::default()
        })
        .unwrap();
        let (a, b) = (
            cfg.with_srcid(Some(3)).unwrap(),
            cfg.with_srcid(Some(5)).unwrap(),
        );
        let l = StreamLayout::from(&a);
        let want = StreamLayout {
            framing: Framing::Encap(encap),
            params: a.params,
            options: a.options,
            src: Some(3),
        };
        assert_eq!(l, want);
        // Support packets only (tracing on, tracing off) from each source, one after the other.
        let trace = |c: &TraceConfig| {
            let enc = Encoder::new(c, FrameWriter::new(Vec::new(), c)).unwrap();
            enc.finish().unwrap().into_inner()
        };
        let data = [trace(&a), trace(&b)].concat();
        let packets = |layout: StreamLayout| {
            let mut n = 0;
            read_trace_items(&data[..], layout, |_, item, _, _| {
                n += matches!(item, Item::Packet(_)) as usize;
                true
            })
            .unwrap();
            n
        };
        assert_eq!(packets(l), 2);
        assert_eq!(packets(StreamLayout::from(&b)), 2);
        assert_eq!(packets(StreamLayout { src: None, ..l }), 4);
    }
}
