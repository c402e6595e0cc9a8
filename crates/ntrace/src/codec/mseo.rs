//! The MSEO/MDO byte transport (N-Trace 3.1-3.4): one byte = `MDO[5:0]` (bits 7:2) + `MSEO[1:0]`
//! (bits 1:0).
//!
//! * MSEO=00: message data (the first byte of a message, fixed-length fields, the first bytes of a
//!   variable-length field).
//! * MSEO=01: the last byte of a variable-length field (N-Trace 3.1).
//! * MSEO=11: the last byte of a message (it also ends its last field); after the end of a
//!   message, bytes with MSEO=11 and MDO=111111 (0xFF) are idle, any number of them (3.4).
//! * MSEO=10: reserved (3.1); reported as [`FrameError::ReservedMseo`].
//!
//! [`Deframer`] cuts a byte stream into [`RawMessage`]s, one byte at a time, without allocation.
//! A raw message is a list of [`Segment`]s: each segment is the MDO bits (LSB first) up to and
//! including a byte with MSEO=01 or 11, so a segment is the fixed-length fields in front of a
//! variable-length field plus that field (the first segment holds TCODE, SRC and the other fixed
//! fields), or one variable-length field alone. Which fixed fields the first segment holds
//! depends on the TCODE; [`super::message`] does that part.
//!
//! Any length of message and any corruption is survived (N-Trace 3: "every conforming decoder
//! must survive any size of message ... trace with all 0-s may be considered as a very long
//! variable-length field"): a segment keeps its first [`SEGMENT_BITS`] bits and counts the rest
//! (noting whether any of them was 1), a message keeps its first [`MAX_SEGMENTS`] segments and
//! counts the rest.

/// MSEO value of message data (N-Trace 3.1, Table 5 "Message transmission").
pub const MSEO_DATA: u8 = 0b00;
/// MSEO value of the last byte of a variable-length field (N-Trace 3.1).
pub const MSEO_END_FIELD: u8 = 0b01;
/// MSEO value reserved for future extensions (N-Trace 3.1).
pub const MSEO_RESERVED: u8 = 0b10;
/// MSEO value of the last byte of a message, and of idle bytes (N-Trace 3.1).
pub const MSEO_END_MESSAGE: u8 = 0b11;
/// The idle byte: MSEO=11, MDO=111111 (N-Trace 3.1, 3.3).
pub const IDLE: u8 = 0xFF;
/// Number of MDO bits per byte (N-Trace 3: 6-bit MDO).
pub const MDO_BITS: u32 = 6;

/// MDO bits kept per segment. Enough for the longest first segment of a valid message
/// (TCODE 6 + SRC 12 + SYNC 4 + B-TYPE 2 + a 64-bit field, padded to 90 bits) and for a 64-bit
/// variable-length field padded to 66 bits.
pub const SEGMENT_BITS: u32 = 128;
/// Segments kept per message. Valid messages have at most 4 (IndirectBranchHistSync: first segment
/// with I-CNT, F-ADDR, HIST, TSTAMP).
pub const MAX_SEGMENTS: usize = 8;

/// The MDO bits of one segment (fixed-length fields and the variable-length field they precede,
/// or a variable-length field alone), LSB first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    bits: u128,
    nbits: u64,
    lost_ones: bool,
}

impl Segment {
    /// A segment holding `nbits` bits of `bits` (for tests and for building messages by hand).
    pub const fn new(bits: u128, nbits: u32) -> Self {
        let nbits = if nbits > SEGMENT_BITS {
            SEGMENT_BITS
        } else {
            nbits
        };
        let mask = if nbits >= 128 {
            u128::MAX
        } else {
            (1u128 << nbits) - 1
        };
        Segment {
            bits: bits & mask,
            nbits: nbits as u64,
            lost_ones: false,
        }
    }

    /// Number of MDO bits in the segment (6 per byte; can exceed [`SEGMENT_BITS`]).
    pub const fn len_bits(&self) -> u64 {
        self.nbits
    }

    /// True if bits beyond [`SEGMENT_BITS`] were received and at least one of them was 1: the
    /// value cannot be represented.
    pub const fn overflowed(&self) -> bool {
        self.lost_ones
    }

    /// The first [`SEGMENT_BITS`] bits.
    pub const fn bits(&self) -> u128 {
        self.bits
    }

    /// `width` (at most 64) bits starting at bit `lo`; bits beyond the segment read as 0.
    pub const fn field(&self, lo: u32, width: u32) -> u64 {
        if lo >= 128 || width == 0 {
            return 0;
        }
        let v = self.bits >> lo;
        let mask = if width >= 64 {
            u64::MAX as u128
        } else {
            (1u128 << width) - 1
        };
        (v & mask) as u64
    }

    /// The bits from `lo` to the end of the segment as a value, or `None` if it needs more than
    /// `max_bits` bits (a 1 at or above bit `lo + max_bits`, including lost bits).
    pub const fn rest(&self, lo: u32, max_bits: u32) -> Option<u64> {
        if self.lost_ones {
            return None;
        }
        if lo >= 128 {
            return Some(0);
        }
        let v = self.bits >> lo;
        let max_bits = if max_bits > 64 { 64 } else { max_bits };
        if max_bits < 128 && (v >> max_bits) != 0 {
            return None;
        }
        Some(v as u64)
    }

    fn push_mdo(&mut self, mdo: u8) {
        let mdo = (mdo & 0x3F) as u128;
        if self.nbits + MDO_BITS as u64 <= SEGMENT_BITS as u64 {
            self.bits |= mdo << self.nbits;
        } else if self.nbits < SEGMENT_BITS as u64 {
            let keep = SEGMENT_BITS as u64 - self.nbits;
            self.bits |= mdo << self.nbits;
            if (mdo >> keep) != 0 {
                self.lost_ones = true;
            }
        } else if mdo != 0 {
            self.lost_ones = true;
        }
        self.nbits += MDO_BITS as u64;
    }
}

/// One message as cut by MSEO: its segments, where it starts and how long it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawMessage {
    /// Byte offset of the first byte of the message in the stream.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    segs: [Segment; MAX_SEGMENTS],
    nsegs: u64,
}

impl Default for RawMessage {
    fn default() -> Self {
        RawMessage {
            offset: 0,
            len: 0,
            segs: [Segment::default(); MAX_SEGMENTS],
            nsegs: 0,
        }
    }
}

impl RawMessage {
    /// A message made of `segs` (at most [`MAX_SEGMENTS`] are kept), at offset 0.
    pub fn from_segments(segs: &[Segment]) -> Self {
        let mut m = RawMessage::default();
        for (k, s) in segs.iter().take(MAX_SEGMENTS).enumerate() {
            m.segs[k] = *s;
            m.len += s.len_bits().div_ceil(MDO_BITS as u64);
        }
        m.nsegs = segs.len() as u64;
        m
    }

    /// Number of segments (can exceed [`MAX_SEGMENTS`]; only the first ones are kept).
    pub const fn num_segments(&self) -> u64 {
        self.nsegs
    }

    /// The kept segments.
    pub fn segments(&self) -> &[Segment] {
        let n = if self.nsegs > MAX_SEGMENTS as u64 {
            MAX_SEGMENTS
        } else {
            self.nsegs as usize
        };
        &self.segs[..n]
    }

    /// Segment `k`, if kept.
    pub fn segment(&self, k: usize) -> Option<&Segment> {
        self.segments().get(k)
    }

    /// The TCODE (first 6 MDO bits; N-Trace 3.2: "Very first field is ALWAYS fixed-length TCODE").
    pub fn tcode(&self) -> u8 {
        self.segs[0].field(0, 6) as u8
    }

    /// The SRC field (trTeSrcID, N-Trace 6.2: the `src_bits` bits right after TCODE, at most 12),
    /// 0 when `src_bits` is 0.
    pub fn src(&self, src_bits: u8) -> u16 {
        match src_bits.min(12) {
            0 => 0,
            bits => self.segs[0].field(6, bits as u32) as u16,
        }
    }
}

/// A problem found while cutting the byte stream into messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// A byte with the reserved MSEO=10 (N-Trace 3.1). The message it was in (if any) is dropped
    /// and bytes are skipped up to the next byte with MSEO=11.
    ReservedMseo {
        /// Offset of the byte.
        offset: u64,
        /// Offset of the dropped message's first byte, if the byte was inside a message.
        message: Option<u64>,
    },
    /// A byte other than idle (0xFF) or a message start (MSEO=00) between messages (Table 5 allows
    /// only 11 -> 00 and 11 -> 11 there). Bytes are skipped up to the next byte with MSEO=11.
    BadStart {
        /// Offset of the byte.
        offset: u64,
        /// The byte.
        byte: u8,
    },
    /// The stream ended inside a message.
    Truncated {
        /// Offset of the message's first byte.
        offset: u64,
        /// Bytes of it received.
        len: u64,
    },
}

impl FrameError {
    /// Byte offset the problem is reported at.
    pub const fn offset(&self) -> u64 {
        match *self {
            FrameError::ReservedMseo { offset, .. }
            | FrameError::BadStart { offset, .. }
            | FrameError::Truncated { offset, .. } => offset,
        }
    }
}

impl core::fmt::Display for FrameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            FrameError::ReservedMseo {
                offset,
                message: Some(m),
            } => write!(
                f,
                "reserved MSEO=10 at byte {offset:#x} inside the message at byte {m:#x}; message dropped"
            ),
            FrameError::ReservedMseo {
                offset,
                message: None,
            } => write!(f, "reserved MSEO=10 at byte {offset:#x} between messages"),
            FrameError::BadStart { offset, byte } => write!(
                f,
                "byte 0x{byte:02X} at byte {offset:#x} is neither idle nor a message start (MSEO={:02b})",
                byte & 3
            ),
            FrameError::Truncated { offset, len } => write!(
                f,
                "trace ends inside the message at byte {offset:#x} ({len} bytes received)"
            ),
        }
    }
}

/// What [`Deframer::push`] produced.
// A message is returned by value: the codec allocates nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete message (its last byte had MSEO=11).
    Message(RawMessage),
    /// A transport problem.
    Error(FrameError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Between messages (after MSEO=11, or at the start).
    Idle,
    /// Inside a message.
    Message,
    /// After an error: waiting for a byte with MSEO=11.
    Skip,
}

/// Cuts a byte stream into messages (see the [module doc](self)). Feed it every byte with
/// [`push`](Deframer::push) and call [`finish`](Deframer::finish) at the end.
#[derive(Clone, Debug)]
pub struct Deframer {
    state: State,
    offset: u64,
    msg: RawMessage,
    cur: Segment,
    idles: u64,
}

impl Default for Deframer {
    fn default() -> Self {
        Self::new()
    }
}

impl Deframer {
    /// A deframer at stream offset 0, between messages.
    pub const fn new() -> Self {
        Deframer {
            state: State::Idle,
            offset: 0,
            msg: RawMessage {
                offset: 0,
                len: 0,
                segs: [Segment {
                    bits: 0,
                    nbits: 0,
                    lost_ones: false,
                }; MAX_SEGMENTS],
                nsegs: 0,
            },
            cur: Segment {
                bits: 0,
                nbits: 0,
                lost_ones: false,
            },
            idles: 0,
        }
    }

    /// A deframer at stream offset `offset`, between messages (a chunk of a trace that starts
    /// with a message: `rvtrace_flow::chunk`).
    pub const fn at(offset: u64) -> Self {
        let mut d = Deframer::new();
        d.offset = offset;
        d
    }

    /// What the next bytes' framing depends on: between messages (0), inside one (1), skipping
    /// after an error (2), and the offset of the next byte. Two deframers with the same
    /// boundary and not inside a message cut the same bytes the same way.
    pub const fn boundary(&self) -> (u8, u64) {
        (self.state as u8, self.offset)
    }

    /// Offset of the next byte.
    pub const fn offset(&self) -> u64 {
        self.offset
    }

    /// Idle bytes seen so far.
    pub const fn idles(&self) -> u64 {
        self.idles
    }

    /// True when inside a message (the bytes so far do not end one).
    pub const fn in_message(&self) -> bool {
        matches!(self.state, State::Message)
    }

    fn start(&mut self) {
        // Segments past `nsegs` are always zero: only those the last message filled are
        // cleared (clearing all of them cost as much as deframing a short message).
        let used = (self.msg.nsegs as usize).min(MAX_SEGMENTS);
        self.msg.segs[..used].fill(Segment::default());
        self.msg.offset = self.offset;
        self.msg.len = 0;
        self.msg.nsegs = 0;
        self.state = State::Message;
    }

    fn end_segment(&mut self, cur: &mut Segment) {
        if (self.msg.nsegs as usize) < MAX_SEGMENTS {
            self.msg.segs[self.msg.nsegs as usize] = *cur;
        }
        self.msg.nsegs += 1;
        *cur = Segment::default();
    }

    /// Take one byte. Returns a message when this byte ends one, or an error.
    #[inline]
    pub fn push(&mut self, byte: u8) -> Option<Frame> {
        let mut cur = self.cur;
        let r = self.step(&mut cur, byte);
        self.cur = cur;
        Some(match r? {
            Ok(()) => Frame::Message(self.msg),
            Err(e) => Frame::Error(e),
        })
    }

    /// Take bytes, calling `f` with each message (lent, not copied) or error they end, as
    /// [`push`](Deframer::push) byte by byte would return them. Faster: the segment being
    /// assembled stays in registers.
    pub fn push_slice(&mut self, data: &[u8], mut f: impl FnMut(Result<&RawMessage, FrameError>)) {
        let mut cur = self.cur;
        for &byte in data {
            match self.step(&mut cur, byte) {
                None => {}
                Some(Ok(())) => f(Ok(&self.msg)),
                Some(Err(e)) => f(Err(e)),
            }
        }
        self.cur = cur;
    }

    /// One byte of [`push`](Deframer::push), with the current segment in `cur`: `Ok` when the
    /// message in `self.msg` is complete.
    #[inline(always)]
    fn step(&mut self, cur: &mut Segment, byte: u8) -> Option<Result<(), FrameError>> {
        let mseo = byte & 3;
        let out = match self.state {
            State::Idle => {
                if byte == IDLE {
                    self.idles += 1;
                    None
                } else if mseo == MSEO_DATA {
                    self.start();
                    self.msg.len = 1;
                    *cur = Segment::default();
                    cur.push_mdo(byte >> 2);
                    None
                } else if mseo == MSEO_RESERVED {
                    self.state = State::Skip;
                    Some(Err(FrameError::ReservedMseo {
                        offset: self.offset,
                        message: None,
                    }))
                } else {
                    // MSEO=01, or MSEO=11 that is not idle: no message starts here (Table 5).
                    self.state = if mseo == MSEO_END_MESSAGE {
                        State::Idle
                    } else {
                        State::Skip
                    };
                    Some(Err(FrameError::BadStart {
                        offset: self.offset,
                        byte,
                    }))
                }
            }
            State::Message => {
                self.msg.len += 1;
                match mseo {
                    MSEO_DATA => {
                        cur.push_mdo(byte >> 2);
                        None
                    }
                    MSEO_END_FIELD => {
                        cur.push_mdo(byte >> 2);
                        self.end_segment(cur);
                        None
                    }
                    MSEO_END_MESSAGE => {
                        cur.push_mdo(byte >> 2);
                        self.end_segment(cur);
                        self.state = State::Idle;
                        Some(Ok(()))
                    }
                    _ => {
                        self.state = State::Skip;
                        Some(Err(FrameError::ReservedMseo {
                            offset: self.offset,
                            message: Some(self.msg.offset),
                        }))
                    }
                }
            }
            State::Skip => {
                if mseo == MSEO_END_MESSAGE {
                    self.state = State::Idle;
                }
                None
            }
        };
        self.offset += 1;
        out
    }

    /// End of the stream: reports a message that was not finished.
    pub fn finish(&mut self) -> Option<FrameError> {
        let st = core::mem::replace(&mut self.state, State::Idle);
        match st {
            State::Message => Some(FrameError::Truncated {
                offset: self.msg.offset,
                len: self.msg.len,
            }),
            _ => None,
        }
    }
}

/// Iterates the frames of a byte slice (messages and transport errors, then a truncation error
/// if the slice ends inside a message).
pub struct Frames<'a> {
    data: &'a [u8],
    pos: usize,
    deframer: Deframer,
    done: bool,
}

impl<'a> Frames<'a> {
    /// Frames of `data`, offsets counted from 0.
    pub fn new(data: &'a [u8]) -> Self {
        Frames {
            data,
            pos: 0,
            deframer: Deframer::new(),
            done: false,
        }
    }

    /// Idle bytes seen so far.
    pub fn idles(&self) -> u64 {
        self.deframer.idles()
    }
}

impl Iterator for Frames<'_> {
    type Item = Frame;

    fn next(&mut self) -> Option<Frame> {
        while let Some(&b) = self.data.get(self.pos) {
            self.pos += 1;
            if let Some(f) = self.deframer.push(b) {
                return Some(f);
            }
        }
        if self.done {
            return None;
        }
        self.done = true;
        self.deframer.finish().map(Frame::Error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(data: &[u8]) -> ([RawMessage; 4], usize, [Option<FrameError>; 4]) {
        let mut msgs = [RawMessage::default(); 4];
        let mut errs = [None; 4];
        let (mut n, mut e) = (0, 0);
        for f in Frames::new(data) {
            match f {
                Frame::Message(m) => {
                    if n < 4 {
                        msgs[n] = m;
                    }
                    n += 1;
                }
                Frame::Error(x) => {
                    if e < 4 {
                        errs[e] = Some(x);
                    }
                    e += 1;
                }
            }
        }
        (msgs, n, errs)
    }

    /// N-Trace 3.5 Table 6: idle, then an IndirectBranchHist message, then idle.
    #[test]
    fn table6_segments() {
        let data = [0xFF, 0x70, 0xD0, 0x1D, 0x1D, 0xF8, 0xFF, 0xFF];
        let (m, n, errs) = frames(&data);
        assert_eq!(n, 1);
        assert_eq!(errs[0], None);
        let m = m[0];
        assert_eq!((m.offset, m.len), (1, 6));
        assert_eq!(m.num_segments(), 3);
        assert_eq!(m.tcode(), 28);
        // Segment 0: TCODE(6) B-TYPE(2) I-CNT: 18 bits.
        assert_eq!(m.segment(0).unwrap().len_bits(), 18);
        assert_eq!(m.segment(0).unwrap().field(6, 2), 0);
        assert_eq!(m.segment(0).unwrap().rest(8, 64), Some(0x7D));
        assert_eq!(m.segment(1).unwrap().rest(0, 64), Some(0x7));
        assert_eq!(m.segment(2).unwrap().rest(0, 64), Some(0xFFE));
    }

    #[test]
    fn idles_between_messages_and_back_to_back() {
        // Two one-field messages (TCODE 3 + I-CNT) back to back, then idles, then another.
        let msg = [0x0C, 0x07];
        let mut data = [0u8; 10];
        data[..2].copy_from_slice(&msg);
        data[2..4].copy_from_slice(&msg);
        data[4..8].fill(0xFF);
        data[8..].copy_from_slice(&msg);
        let (m, n, errs) = frames(&data);
        assert_eq!(n, 3);
        assert!(errs[0].is_none());
        assert_eq!([m[0].offset, m[1].offset, m[2].offset], [0, 2, 8]);
        assert_eq!(m[2].num_segments(), 1);
        assert_eq!(m[2].segment(0).unwrap().rest(6, 64), Some(1));
    }

    #[test]
    fn reserved_mseo_is_reported_and_skipped() {
        // Start of a message, a reserved byte, garbage, end of message byte, then a good message.
        let data = [0x0C, 0x06, 0x00, 0x03, 0x0C, 0x07];
        let (m, n, errs) = frames(&data);
        assert_eq!(
            errs[0],
            Some(FrameError::ReservedMseo {
                offset: 1,
                message: Some(0)
            })
        );
        assert_eq!(errs[1], None);
        assert_eq!(n, 1);
        assert_eq!(m[0].offset, 4);
    }

    #[test]
    fn bad_start_is_reported() {
        let data = [0x05, 0x00, 0x03, 0x0C, 0x07, 0x7F, 0x0C, 0x07];
        let (m, n, errs) = frames(&data);
        assert_eq!(
            errs[0],
            Some(FrameError::BadStart {
                offset: 0,
                byte: 0x05
            })
        );
        assert_eq!(
            errs[1],
            Some(FrameError::BadStart {
                offset: 5,
                byte: 0x7F
            })
        );
        assert_eq!(n, 2);
        assert_eq!((m[0].offset, m[1].offset), (3, 6));
    }

    #[test]
    fn all_zero_stream_is_one_long_field() {
        let data = [0u8; 10_000];
        let mut d = Deframer::new();
        for &b in &data {
            assert_eq!(d.push(b), None);
        }
        assert!(d.in_message());
        assert_eq!(
            d.finish(),
            Some(FrameError::Truncated {
                offset: 0,
                len: 10_000
            })
        );
        // Followed by an end byte: one message with one huge, all-zero segment.
        let mut d = Deframer::new();
        for &b in &data {
            d.push(b);
        }
        let Some(Frame::Message(m)) = d.push(0x03) else {
            panic!()
        };
        assert_eq!(m.num_segments(), 1);
        assert_eq!(m.segment(0).unwrap().len_bits(), 6 * 10_001);
        assert!(!m.segment(0).unwrap().overflowed());
        assert_eq!(m.segment(0).unwrap().rest(6, 64), Some(0));
    }

    #[test]
    fn long_field_with_ones_overflows() {
        let mut d = Deframer::new();
        d.push(0x0C);
        for _ in 0..30 {
            d.push(0xFC);
        }
        let Some(Frame::Message(m)) = d.push(0x07) else {
            panic!()
        };
        assert!(m.segment(0).unwrap().overflowed());
        assert_eq!(m.segment(0).unwrap().rest(6, 64), None);
    }

    #[test]
    fn many_segments_are_counted() {
        let mut d = Deframer::new();
        d.push(0x0C);
        for _ in 0..20 {
            d.push(0x05);
        }
        let Some(Frame::Message(m)) = d.push(0x07) else {
            panic!()
        };
        assert_eq!(m.num_segments(), 21);
        assert_eq!(m.segments().len(), MAX_SEGMENTS);
    }

    /// `push_slice` in chunks of any size gives what `push` gives byte by byte.
    #[test]
    fn push_slice_equals_push() {
        let mut rng = rvtrace_testkit::Rng(0x1234_5678);
        let data: [u8; 20_000] = core::array::from_fn(|i| {
            let x = rng.next_u32();
            // Mostly well-formed traffic: long fields, field and message ends, a few errors.
            match (x >> 24) % 16 {
                0 => 0xFF,
                1 => (x >> 8) as u8 | 3,
                2..=4 => (x >> 8) as u8 & !2 | 1,
                5 if i % 7 == 0 => 0x02,
                _ => (x >> 8) as u8 & !3,
            }
        });
        for chunk in [1, 3, 64, 20_000] {
            // The reference deframer takes bytes one at a time, as far as the next frame.
            let (mut r, mut rpos, mut n) = (Deframer::new(), 0, 0);
            let mut d = Deframer::new();
            for part in data.chunks(chunk) {
                d.push_slice(part, |f| {
                    let f = match f {
                        Ok(m) => Frame::Message(*m),
                        Err(e) => Frame::Error(e),
                    };
                    let want = loop {
                        rpos += 1;
                        if let Some(w) = r.push(data[rpos - 1]) {
                            break w;
                        }
                    };
                    assert_eq!(f, want);
                    n += 1;
                });
            }
            assert!(data[rpos..].iter().all(|&b| r.push(b).is_none()));
            assert!(n > 500, "{n} frames");
        }
    }

    /// Each message lent by the deframer is the one a fresh deframer cuts from its bytes alone
    /// (nothing of the message before it is left, not even in the segments past its last).
    #[test]
    fn messages_keep_nothing_of_the_previous_one() {
        let mut rng = rvtrace_testkit::Rng(0x9e37_79b9);
        let data: [u8; 20_000] = core::array::from_fn(|_| {
            let x = rng.next_u32();
            // Messages of 1 to 10 fields (more than MAX_SEGMENTS), some cut by errors.
            match (x >> 24) % 16 {
                0..=1 => (x >> 8) as u8 | 3,
                2..=5 => (x >> 8) as u8 & !2 | 1,
                6 if x.is_multiple_of(5) => 0x02,
                _ => (x >> 8) as u8 & !3,
            }
        });
        let mut d = Deframer::new();
        let (mut n, mut multi) = (0, 0);
        d.push_slice(&data, |f| {
            let Ok(m) = f else { return };
            let start = m.offset as usize;
            let mut fresh = Deframer::at(m.offset);
            let again = data[start..start + m.len as usize]
                .iter()
                .find_map(|&b| fresh.push(b));
            assert_eq!(again, Some(Frame::Message(*m)));
            let kept = m.segments().len();
            assert!(m.segs[kept..].iter().all(|s| *s == Segment::default()));
            n += 1;
            multi += usize::from(kept > 1);
        });
        assert!(
            n > 300 && multi > 100,
            "{n} messages, {multi} of several fields"
        );
    }
}
