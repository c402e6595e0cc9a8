//! Packet encapsulation (`etrace-encap/encapsulation.adoc`, "Unformatted Trace & Diagnostic Data
//! Packet Encapsulation for RISC-V" 1.0, and its E-Trace chapter `e-trace-specifics.adoc`).
//!
//! A normal packet is, in transmission order (multi-bit fields LSB first):
//!
//! | group | bits |
//! |---|---|
//! | *header*: *length* (5), *flow* (2), *extend* (1) | 8 |
//! | *srcID* | S (0-16) |
//! | *timestamp* (when *extend* = 1) | T × 8 |
//! | *payload*: *type* (Y bits), then *trace_payload* | *length* × 8 - S % 8 |
//!
//! Packet length = 1 + S/8 + T × *extend* + *length* bytes. A header with *length* 0 is a null
//! packet: *extend* 0 = `null.idle`, 1 = `null.alignment`.
//!
//! The reference flow's `te_inst_raw` files use the same header byte with no *srcID*, no
//! timestamp and no *type*, and put its message type in *flow* (2 = `te_inst`, 3 = data trace;
//! `referenceFlow` `raw_write.py`, `generic.py` `msg_type_t`): that is [`EncapConfig::TE_INST_RAW`].
//!
//! That header is the Siemens Messaging Infrastructure's of E-Trace 1.x
//! (`etrace-packet-formats.tex`, "Example encapsulated packet format"): the header byte (5-bit
//! payload *length*, 2-bit *flow*, a bit saying a 16-bit timestamp follows), the *index* of the
//! source ("the number of bits is system dependent"; here padded to whole bytes), the optional
//! 2-byte timestamp, the payload; *length* counts the payload only. [`EncapConfig::smi`]
//! reads and writes it with `srcid_bits` as the index width; `te_inst_raw` is its case with no
//! index and no timestamps. (E-Trace 2.0's "Siemens transport" example,
//! `fragmentCodeAndTransport.adoc`, is etrace-encap instead.) The FZI `riscv-etrace` crate (`packet::smi`) puts the timestamp
//! before the index: the two agree unless a stream has both.
//!
//! The trace unit of Espressif's ESP32-C6 frames each payload with a 3-byte header of its own
//! ([`EncapConfig::ESP32`]): a byte whose low 5 bits are the packet's *length* in bytes, header
//! included, and whose top 3 bits are 0, then a 16-bit *index*, little-endian; *length* 0 is a
//! null packet of 3 bytes. That is how the FZI `riscv-etrace` crate reads it (`packet::esp32`,
//! "experimental"; the ESP32-C6 Technical Reference Manual, which defines it, is not in our
//! specs). The payload is the spec's `te_inst`. What the hardware counts in *index* is not known
//! here: rvtrace reads it into [`Normal::index`] and writes the packet's number (modulo 2^16).

use super::bits::mask;
use super::CodecError;

/// Most bytes an encapsulated *payload* (type + trace payload + the *srcID* bits beyond whole
/// bytes) may have: *length* is 5 bits.
pub const MAX_LENGTH: usize = 31;

/// Most bytes one encapsulated packet can take: header, 2 bytes of *srcID*, 8 of timestamp,
/// 31 of payload.
pub const MAX_PACKET: usize = 1 + 2 + 8 + MAX_LENGTH;

/// The reference flow's `te_inst_raw` message type for `te_inst` packets (in *flow*).
pub const RAW_TE_INST: u8 = 2;
/// The reference flow's `te_inst_raw` message type for data trace packets (in *flow*).
pub const RAW_TE_DATA: u8 = 3;

/// The discoverable constants of an encapsulated stream (`encapsulation.adoc`, "Packet Length";
/// `e-trace-specifics.adoc`: *trTeSrcBits*, *trTsWidth*, the *type* width).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EncapConfig {
    /// Width of *srcID* in bits (0-16).
    pub srcid_bits: u8,
    /// T: bytes of *timestamp* when *header.extend* is 1 (0-8).
    pub timestamp_bytes: u8,
    /// Y: width of the payload *type* field (0 when the source sends only instruction trace).
    pub type_bits: u8,
    /// The *type* value of instruction trace packets (E-Trace: 0 when Y is 1).
    pub te_inst_type: u64,
    /// The packets' header (see the module documentation).
    pub header: Header,
}

/// Which header a framed stream's packets have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Header {
    /// `etrace-encap`'s (and `te_inst_raw`'s, which has no srcID, timestamp or type).
    #[default]
    Encap,
    /// The E-Trace 1.x Siemens Messaging Infrastructure (SMI) header: `srcid_bits` is the index
    /// width, a timestamp is 2 bytes, there is no *type* (the *flow* says it).
    Smi,
    /// The ESP32-C6 trace unit's: length (header included), reserved bits, a 16-bit index; no
    /// srcID, timestamp, type or flow.
    Esp32,
}

/// Bytes of the ESP32-C6 header: the length byte and the 16-bit index.
const ESP32_HEADER: usize = 3;

impl Default for EncapConfig {
    fn default() -> Self {
        EncapConfig::PLAIN
    }
}

/// How packets are framed in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Framing {
    /// The reference flow's `te_inst_raw`: a 1-byte header (length, message type in *flow*), no
    /// srcID, no timestamp; only *flow* = 2 packets are `te_inst`.
    Raw,
    /// `etrace-encap` with these constants; every normal packet whose *type* is the
    /// instruction-trace type is a `te_inst`. With [`EncapConfig::smi`], the E-Trace 1.x SMI
    /// header: the *flow* = 2 packets are; with [`EncapConfig::ESP32`], every normal packet.
    Encap(EncapConfig),
}

impl Framing {
    /// What a reader of the framing is given ([`super::PacketReader::new`]): the
    /// encapsulation's constants (for `te_inst_raw`, [`EncapConfig::TE_INST_RAW`])
    /// and whether the stream is `te_inst_raw`.
    pub fn reader(self) -> (EncapConfig, bool) {
        match self {
            Framing::Raw => (EncapConfig::TE_INST_RAW, true),
            // SMI says te_inst in the flow bits, as te_inst_raw.
            Framing::Encap(e) => (e, e.header == Header::Smi),
        }
    }
}

impl EncapConfig {
    /// No *srcID*, no timestamp, no *type*: a single instruction-trace source
    /// (`e-trace-specifics.adoc`: "If only instruction trace is supported, the minimum width is 0").
    pub const PLAIN: EncapConfig = EncapConfig {
        srcid_bits: 0,
        timestamp_bytes: 0,
        type_bits: 0,
        te_inst_type: 0,
        header: Header::Encap,
    };

    /// The reference flow's `te_inst_raw` layout (see the module documentation).
    pub const TE_INST_RAW: EncapConfig = EncapConfig::PLAIN;

    /// The E-Trace 1.x Siemens layout with an `index_bits`-bit source index (see the module
    /// documentation).
    pub const fn smi(index_bits: u8) -> EncapConfig {
        EncapConfig {
            srcid_bits: index_bits,
            timestamp_bytes: 2,
            type_bits: 0,
            te_inst_type: 0,
            header: Header::Smi,
        }
    }

    /// The ESP32-C6 trace unit's header (see the module documentation).
    pub const ESP32: EncapConfig = EncapConfig {
        srcid_bits: 0,
        timestamp_bytes: 0,
        type_bits: 0,
        te_inst_type: 0,
        header: Header::Esp32,
    };

    /// Check the widths.
    pub const fn validate(&self) -> Result<(), CodecError> {
        match self.header {
            Header::Smi if self.timestamp_bytes != 2 || self.type_bits != 0 => {
                return Err(CodecError::BadParams(
                    "SMI framing: a 2-byte timestamp and no type field",
                ));
            }
            Header::Esp32
                if self.srcid_bits != 0 || self.timestamp_bytes != 0 || self.type_bits != 0 =>
            {
                return Err(CodecError::BadParams(
                    "ESP32-C6 framing: no srcID, timestamp or type field",
                ));
            }
            _ => {}
        }
        if self.srcid_bits > 16 || self.timestamp_bytes > 8 || self.type_bits > 8 {
            return Err(CodecError::BadParams(
                "encapsulation: srcID up to 16 bits, timestamp up to 8 bytes, type up to 8 bits",
            ));
        }
        Ok(())
    }

    /// S: whole bytes of *srcID* (of the Siemens index: the bytes it takes, padded).
    const fn srcid_bytes(&self) -> usize {
        if let Header::Smi = self.header {
            (self.srcid_bits as usize).div_ceil(8)
        } else {
            self.srcid_bits as usize / 8
        }
    }

    /// Bits of *srcID* inside the *length* bytes (none for the Siemens index, which is padded).
    const fn srcid_in_length(&self) -> usize {
        if let Header::Smi = self.header {
            0
        } else {
            self.srcid_bits as usize % 8
        }
    }
}

/// One encapsulated packet, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A null packet (*length* 0): `null.idle` or `null.alignment`.
    Null {
        /// *extend*: 1 = `null.alignment`.
        alignment: bool,
        /// *flow*.
        flow: u8,
    },
    /// A normal packet.
    Normal(Normal),
}

/// A normal encapsulated packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Normal {
    /// *header.flow* (in `te_inst_raw` files: the message type).
    pub flow: u8,
    /// *srcID* (0 when absent).
    pub srcid: u16,
    /// *timestamp*, when *header.extend* is 1.
    pub timestamp: Option<u64>,
    /// Payload *type* (0 when Y is 0).
    pub ptype: u64,
    /// The ESP32-C6 header's *index* (0 in other framings).
    pub index: u16,
    bytes: [u8; MAX_LENGTH],
    len: u8,
}

impl Normal {
    /// The trace payload (the E-Trace `te_inst` bytes): the payload bits after *type*, in whole
    /// bytes (E-Trace payloads are sign-extended to a byte boundary, `payload.adoc`).
    pub fn payload(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// Little-endian bit reader over a byte slice (no sign extension: encapsulation fields are
/// never compressed).
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    /// The next `width` bits (at most 64), LSB first: a byte's worth (or what is left of the
    /// byte) at a time, not bit by bit (packets are read in whole bytes at whole-byte positions
    /// unless SRCID or the type field has an odd width).
    #[inline]
    fn get(&mut self, width: u32) -> u64 {
        let mut v = 0u64;
        let mut k = 0u32;
        while k < width {
            let i = self.pos + k as usize;
            let shift = (i % 8) as u32;
            let take = (8 - shift).min(width - k);
            let b = (u64::from(self.data[i / 8]) >> shift) & ((1u64 << take) - 1);
            v |= b << k;
            k += take;
        }
        self.pos += width as usize;
        v
    }

    /// The next `out.len()` bytes' worth of bits: copied when at a byte boundary (SRCID and
    /// type fields of whole bytes together, the default).
    #[inline]
    fn bytes(&mut self, out: &mut [u8]) {
        if self.pos.is_multiple_of(8) {
            let at = self.pos / 8;
            out.copy_from_slice(&self.data[at..at + out.len()]);
            self.pos += 8 * out.len();
        } else {
            for o in out.iter_mut() {
                *o = self.get(8) as u8;
            }
        }
    }
}

/// Read one packet from the start of `data`. Returns the packet and its length in bytes, or
/// [`CodecError::Truncated`] if `data` ends inside it.
pub fn read_frame(data: &[u8], cfg: &EncapConfig) -> Result<(Frame, usize), CodecError> {
    cfg.validate()?;
    let Some(&h) = data.first() else {
        return Err(CodecError::Truncated { need: 1, have: 0 });
    };
    if cfg.header == Header::Esp32 {
        return read_esp32(data);
    }
    let length = (h & 0x1f) as usize;
    let flow = (h >> 5) & 3;
    let extend = h & 0x80 != 0;
    if length == 0 {
        return Ok((
            Frame::Null {
                alignment: extend,
                flow,
            },
            1,
        ));
    }
    if extend && cfg.timestamp_bytes == 0 {
        return Err(CodecError::Inconsistent(
            "header.extend is 1 but the stream has no timestamps",
        ));
    }
    let ts = if extend {
        cfg.timestamp_bytes as usize
    } else {
        0
    };
    let total = 1 + cfg.srcid_bytes() + ts + length;
    if data.len() < total {
        return Err(CodecError::Truncated {
            need: total,
            have: data.len(),
        });
    }
    let mut b = Bits {
        data: &data[1..total],
        pos: 0,
    };
    let srcid = b.get(cfg.srcid_bits as u32) as u16;
    if cfg.header == Header::Smi {
        b.pos = 8 * cfg.srcid_bytes();
    }
    let timestamp = if extend {
        Some(b.get(8 * ts as u32))
    } else {
        None
    };
    let payload_bits = 8 * length - cfg.srcid_in_length();
    let Some(trace_bits) = payload_bits.checked_sub(cfg.type_bits as usize) else {
        return Err(CodecError::Inconsistent(
            "packet too short for its type field",
        ));
    };
    let ptype = b.get(cfg.type_bits as u32);
    let n = trace_bits / 8;
    let mut bytes = [0u8; MAX_LENGTH];
    b.bytes(&mut bytes[..n]);
    Ok((
        Frame::Normal(Normal {
            flow,
            srcid,
            timestamp,
            ptype,
            index: 0,
            bytes,
            len: n as u8,
        }),
        total,
    ))
}

/// Read one ESP32-C6 packet (see the module documentation) from the start of `data`.
fn read_esp32(data: &[u8]) -> Result<(Frame, usize), CodecError> {
    if data.len() < ESP32_HEADER {
        return Err(CodecError::Truncated {
            need: ESP32_HEADER,
            have: data.len(),
        });
    }
    let (h, index) = (data[0], u16::from_le_bytes([data[1], data[2]]));
    if h >> 5 != 0 {
        return Err(CodecError::Inconsistent(
            "ESP32-C6 header: the 3 bits after the length must be 0",
        ));
    }
    let total = (h & 0x1f) as usize;
    if total == 0 {
        let null = Frame::Null {
            alignment: false,
            flow: 0,
        };
        return Ok((null, ESP32_HEADER));
    }
    if total <= ESP32_HEADER {
        return Err(CodecError::Inconsistent(
            "ESP32-C6 header: a length of 1 to 3 bytes leaves no payload",
        ));
    }
    if data.len() < total {
        return Err(CodecError::Truncated {
            need: total,
            have: data.len(),
        });
    }
    let n = total - ESP32_HEADER;
    let mut bytes = [0u8; MAX_LENGTH];
    bytes[..n].copy_from_slice(&data[ESP32_HEADER..total]);
    let normal = Normal {
        flow: 0,
        srcid: 0,
        timestamp: None,
        ptype: 0,
        index,
        bytes,
        len: n as u8,
    };
    Ok((Frame::Normal(normal), total))
}

/// Little-endian bit writer into a fixed buffer.
struct Put<'a> {
    out: &'a mut [u8; MAX_PACKET],
    pos: usize,
}

impl Put<'_> {
    fn put(&mut self, v: u64, width: u32) {
        for k in 0..width as usize {
            let i = self.pos + k;
            if (v >> k) & 1 != 0 {
                self.out[i / 8] |= 1 << (i % 8);
            }
        }
        self.pos += width as usize;
    }
}

/// What to put around one trace payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameFields {
    /// *header.flow*.
    pub flow: u8,
    /// *srcID*.
    pub srcid: u16,
    /// *timestamp*: sets *header.extend*.
    pub timestamp: Option<u64>,
    /// Payload *type*.
    pub ptype: u64,
    /// The ESP32-C6 header's *index* (other framings have none).
    pub index: u16,
}

/// Encapsulate `payload` (a trace payload of whole bytes). Padding bits in the last byte are 0.
/// Returns the packet length written to `out`.
pub fn write_frame(
    payload: &[u8],
    f: &FrameFields,
    cfg: &EncapConfig,
    out: &mut [u8; MAX_PACKET],
) -> Result<usize, CodecError> {
    cfg.validate()?;
    if payload.is_empty() {
        return Err(CodecError::EmptyPayload);
    }
    if cfg.header == Header::Esp32 {
        let total = ESP32_HEADER + payload.len();
        if total > MAX_LENGTH {
            return Err(CodecError::PacketTooLong);
        }
        *out = [0; MAX_PACKET];
        out[0] = total as u8;
        out[1..3].copy_from_slice(&f.index.to_le_bytes());
        out[ESP32_HEADER..total].copy_from_slice(payload);
        return Ok(total);
    }
    if f.flow > 3
        || (cfg.srcid_bits < 16 && f.srcid as u64 > mask(cfg.srcid_bits as u32))
        || f.ptype > mask(cfg.type_bits as u32)
    {
        return Err(CodecError::Inconsistent(
            "flow, srcID or type does not fit its field",
        ));
    }
    if f.timestamp.is_some() && cfg.timestamp_bytes == 0 {
        return Err(CodecError::Inconsistent(
            "a timestamp needs timestamp_bytes > 0",
        ));
    }
    let bits = payload.len() * 8 + cfg.type_bits as usize + cfg.srcid_in_length();
    let length = bits.div_ceil(8);
    if length > MAX_LENGTH {
        return Err(CodecError::PacketTooLong);
    }
    *out = [0; MAX_PACKET];
    out[0] = length as u8 | (f.flow << 5) | if f.timestamp.is_some() { 0x80 } else { 0 };
    let mut w = Put { out, pos: 8 };
    w.put(f.srcid as u64, cfg.srcid_bits as u32);
    if cfg.header == Header::Smi {
        w.pos = 8 + 8 * cfg.srcid_bytes();
    }
    if let Some(t) = f.timestamp {
        let tb = 8 * cfg.timestamp_bytes as u32;
        w.put(t & mask(tb), tb);
    }
    w.put(f.ptype, cfg.type_bits as u32);
    for &b in payload {
        w.put(b as u64, 8);
    }
    let ts = if f.timestamp.is_some() {
        cfg.timestamp_bytes as usize
    } else {
        0
    };
    Ok(1 + cfg.srcid_bytes() + ts + length)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit `i` of `data` (LSB first), the reference for [`Bits`].
    fn bit(data: &[u8], i: usize) -> u64 {
        u64::from((data[i / 8] >> (i % 8)) & 1)
    }

    /// `Bits::get` and `Bits::bytes` (a byte or a copy at a time) read what a bit-by-bit read
    /// does, at every position and width.
    #[test]
    fn bits_equal_bit_by_bit() {
        let mut data = vec![0u8; 48];
        rvtrace_testkit::Rng(1).fill(&mut data);
        let reference = |pos: usize, width: usize| -> u64 {
            (0..width).fold(0, |v, k| v | bit(&data, pos + k) << k)
        };
        for pos in 0..64 {
            for width in 0..=64 {
                let mut b = Bits { data: &data, pos };
                assert_eq!(b.get(width as u32), reference(pos, width), "{pos} {width}");
                assert_eq!(b.pos, pos + width);
            }
            for n in 0..=MAX_LENGTH.min((data.len() * 8 - pos) / 8) {
                let mut b = Bits { data: &data, pos };
                let mut out = [0u8; MAX_LENGTH];
                b.bytes(&mut out[..n]);
                let want: Vec<u8> = (0..n).map(|k| reference(pos + 8 * k, 8) as u8).collect();
                assert_eq!(&out[..n], &want[..], "{pos} {n}");
                assert_eq!(b.pos, pos + 8 * n);
            }
        }
    }

    // fragmentCodeAndTransport.adoc, "Siemens transport": 6-bit srcID, 2-bit type '10' for
    // instruction trace, no timestamp.
    const SIEMENS: EncapConfig = EncapConfig {
        srcid_bits: 6,
        timestamp_bytes: 0,
        type_bits: 2,
        te_inst_type: 2,
        header: Header::Encap,
    };

    fn frame(payload: &[u8], srcid: u16, cfg: &EncapConfig, ptype: u64) -> Vec<u8> {
        let mut out = [0; MAX_PACKET];
        let f = FrameFields {
            srcid,
            ptype,
            ..FrameFields::default()
        };
        let n = write_frame(payload, &f, cfg, &mut out).unwrap();
        out[..n].to_vec()
    }

    #[test]
    fn siemens_transport_examples() {
        // Illegal opcode test: [0x06][0x81][0x32 0x04 0x00 0x00 0x02].
        let p = [0x32, 0x04, 0x00, 0x00, 0x02];
        let f = frame(&p, 1, &SIEMENS, 2);
        assert_eq!(f, [0x06, 0x81, 0x32, 0x04, 0x00, 0x00, 0x02]);
        // Timer long loop: [0x8][0x8A][0xBD 0xAA 0xAA 0x68 0x00 0x00 0x20].
        let p = [0xBD, 0xAA, 0xAA, 0x68, 0x00, 0x00, 0x20];
        let f = frame(&p, 0xA, &SIEMENS, 2);
        assert_eq!(f, [0x08, 0x8A, 0xBD, 0xAA, 0xAA, 0x68, 0x00, 0x00, 0x20]);
        // Startup xrle: [0xA][0x85][0x73 0x00 0x00 0x00 0x00 0x91 0x82 0x00 0x10].
        let p = [0x73, 0x00, 0x00, 0x00, 0x00, 0x91, 0x82, 0x00, 0x10];
        let f = frame(&p, 5, &SIEMENS, 2);
        assert_eq!(
            f,
            [0x0A, 0x85, 0x73, 0x00, 0x00, 0x00, 0x00, 0x91, 0x82, 0x00, 0x10]
        );
        // And back.
        let (fr, n) = read_frame(&f, &SIEMENS).unwrap();
        assert_eq!(n, f.len());
        let Frame::Normal(nf) = fr else { panic!() };
        assert_eq!((nf.srcid, nf.ptype, nf.flow), (5, 2, 0));
        assert_eq!(nf.payload(), &p);
    }

    /// The E-Trace 1.x SMI header (`etrace-packet-formats.tex`): header byte, index padded to
    /// bytes, the 2-byte timestamp when the top bit says so, the payload; *length* counts the
    /// payload only.
    #[test]
    fn smi_layout() {
        let cfg = EncapConfig::smi(6);
        let p = [0x32, 0x04, 0x00, 0x00, 0x02];
        let mut out = [0; MAX_PACKET];
        let f = FrameFields {
            flow: RAW_TE_INST,
            srcid: 5,
            timestamp: Some(0xBEEF),
            ptype: 0,
            index: 0,
        };
        let n = write_frame(&p, &f, &cfg, &mut out).unwrap();
        assert_eq!(
            out[..n],
            [0xC5, 0x05, 0xEF, 0xBE, 0x32, 0x04, 0x00, 0x00, 0x02]
        );
        let (fr, m) = read_frame(&out[..n], &cfg).unwrap();
        assert_eq!(m, n);
        let Frame::Normal(nf) = fr else { panic!() };
        assert_eq!((nf.flow, nf.srcid, nf.timestamp), (2, 5, Some(0xBEEF)));
        assert_eq!(nf.payload(), &p);
        // Without the timestamp; no index: the te_inst_raw bytes.
        let f = FrameFields {
            timestamp: None,
            srcid: 0,
            ..f
        };
        let n = write_frame(&p, &f, &EncapConfig::smi(0), &mut out).unwrap();
        assert_eq!(out[..n], [0x45, 0x32, 0x04, 0x00, 0x00, 0x02]);
        let raw = write_frame(&p, &f, &EncapConfig::TE_INST_RAW, &mut [0; MAX_PACKET]).unwrap();
        assert_eq!(raw, n);
        assert!(EncapConfig {
            type_bits: 2,
            ..cfg
        }
        .validate()
        .is_err());
    }

    #[test]
    fn atb_transport_examples() {
        // ATB: header byte on ATDATA, srcID on ATID (0 bits here), no type field.
        // [ATID=1] [ATBYTES=3] [ATDATA=0x00043205] [ATBYTES=1] [ATDATA=0x00000200]:
        // bytes 05 32 04 00 | 00 02.
        let f = frame(&[0x32, 0x04, 0x00, 0x00, 0x02], 0, &EncapConfig::PLAIN, 0);
        assert_eq!(f, [0x05, 0x32, 0x04, 0x00, 0x00, 0x02]);
        // [ATDATA=0xAAAABD07] [ATDATA=0x20000068]: 07 BD AA AA | 68 00 00 20.
        let f = frame(
            &[0xBD, 0xAA, 0xAA, 0x68, 0x00, 0x00, 0x20],
            0,
            &EncapConfig::PLAIN,
            0,
        );
        assert_eq!(f, [0x07, 0xBD, 0xAA, 0xAA, 0x68, 0x00, 0x00, 0x20]);
        // [ATDATA=0x00007309] [ATDATA=0x82910000] [ATDATA=0x00001000].
        let f = frame(
            &[0x73, 0x00, 0x00, 0x00, 0x00, 0x91, 0x82, 0x00, 0x10],
            0,
            &EncapConfig::PLAIN,
            0,
        );
        assert_eq!(
            f,
            [0x09, 0x73, 0x00, 0x00, 0x00, 0x00, 0x91, 0x82, 0x00, 0x10]
        );
    }

    #[test]
    fn null_packets_and_timestamps() {
        let cfg = EncapConfig {
            srcid_bits: 12,
            timestamp_bytes: 3,
            type_bits: 1,
            te_inst_type: 0,
            header: Header::Encap,
        };
        assert_eq!(
            read_frame(&[0x00], &cfg).unwrap(),
            (
                Frame::Null {
                    alignment: false,
                    flow: 0
                },
                1
            )
        );
        assert_eq!(
            read_frame(&[0x80], &cfg).unwrap().0,
            Frame::Null {
                alignment: true,
                flow: 0
            }
        );
        let mut out = [0; MAX_PACKET];
        let f = FrameFields {
            flow: 1,
            srcid: 0xabc,
            timestamp: Some(0x123456),
            ptype: 1,
            index: 0,
        };
        let n = write_frame(&[0x11, 0x22], &f, &cfg, &mut out).unwrap();
        // length = ceil((16 + 1 + 12 % 8) / 8) = 3; total = 1 + 1 + 3 + 3.
        assert_eq!(n, 8);
        assert_eq!(out[0], 0x80 | (1 << 5) | 3);
        let (fr, m) = read_frame(&out[..n], &cfg).unwrap();
        assert_eq!(m, n);
        let Frame::Normal(nf) = fr else { panic!() };
        assert_eq!(nf.srcid, 0xabc);
        assert_eq!(nf.timestamp, Some(0x123456));
        assert_eq!(nf.ptype, 1);
        assert_eq!(nf.payload(), &[0x11, 0x22]);
        assert!(matches!(
            read_frame(&out[..n - 1], &cfg),
            Err(CodecError::Truncated { .. })
        ));
    }

    /// The ESP32-C6 header as `riscv-etrace` reads it: the length counts the 3-byte header, the
    /// index is little-endian, a zero length is a 3-byte null packet, the reserved bits are 0.
    #[test]
    fn esp32_layout() {
        let cfg = EncapConfig::ESP32;
        let p = [0x32, 0x04, 0x00, 0x00, 0x02];
        let mut out = [0; MAX_PACKET];
        let f = FrameFields {
            index: 0x1234,
            ..FrameFields::default()
        };
        let n = write_frame(&p, &f, &cfg, &mut out).unwrap();
        assert_eq!(out[..n], [0x08, 0x34, 0x12, 0x32, 0x04, 0x00, 0x00, 0x02]);
        let (fr, m) = read_frame(&out[..n], &cfg).unwrap();
        assert_eq!(m, n);
        let Frame::Normal(nf) = fr else { panic!() };
        assert_eq!((nf.index, nf.srcid, nf.flow), (0x1234, 0, 0));
        assert_eq!(nf.payload(), &p);
        let null = Frame::Null {
            alignment: false,
            flow: 0,
        };
        assert_eq!(read_frame(&[0, 7, 0], &cfg).unwrap(), (null, 3));
        for bad in [[0x28, 0, 0, 0], [0x02, 0, 0, 0], [0x03, 0, 0, 0]] {
            assert!(matches!(
                read_frame(&bad, &cfg),
                Err(CodecError::Inconsistent(_))
            ));
        }
        assert!(matches!(
            read_frame(&out[..n - 1], &cfg),
            Err(CodecError::Truncated { .. })
        ));
        assert!(matches!(
            write_frame(&[0; 29], &f, &cfg, &mut out),
            Err(CodecError::PacketTooLong)
        ));
        assert!(EncapConfig {
            srcid_bits: 2,
            ..cfg
        }
        .validate()
        .is_err());
    }
}
