//! Bit packing of `te_inst` payloads: fields LSB first, "sign based compression" and sign
//! extension to a byte boundary (`payload.adoc`, introduction of "Instruction Trace Encoder Output
//! Packets").

use super::CodecError;

/// Most bits an uncompressed packet may have.
pub const MAX_BITS: u32 = 512;
const WORDS: usize = (MAX_BITS / 64) as usize;

/// Most bytes a compressed payload may have.
pub const MAX_PAYLOAD: usize = (MAX_BITS / 8) as usize;

/// Mask of the low `width` bits (`width` up to 64).
#[inline]
pub const fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Builds a packet one field at a time, in transmission order.
#[derive(Clone, Debug)]
pub struct BitWriter {
    words: [u64; WORDS],
    len: u32,
}

impl Default for BitWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl BitWriter {
    /// An empty packet.
    pub const fn new() -> Self {
        BitWriter {
            words: [0; WORDS],
            len: 0,
        }
    }

    /// Number of bits written.
    pub const fn len(&self) -> u32 {
        self.len
    }

    /// True if nothing was written.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append the low `width` bits of `value` (`width` up to 64). Fails if `value` does not fit
    /// in `width` bits unsigned, or the packet would exceed [`MAX_BITS`].
    #[inline]
    pub fn put(&mut self, field: &'static str, value: u64, width: u32) -> Result<(), CodecError> {
        if width < 64 && value >> width != 0 {
            return Err(CodecError::FieldTooWide { field, value });
        }
        if self.len + width > MAX_BITS {
            return Err(CodecError::PacketTooLong);
        }
        if width == 0 {
            return Ok(());
        }
        let w = (self.len / 64) as usize;
        let sh = self.len % 64;
        self.words[w] |= value << sh;
        if sh != 0 && sh + width > 64 {
            self.words[w + 1] |= value >> (64 - sh);
        }
        self.len += width;
        Ok(())
    }

    /// Append one bit.
    #[inline]
    pub fn put_bit(&mut self, field: &'static str, bit: bool) -> Result<(), CodecError> {
        self.put(field, bit as u64, 1)
    }

    /// Bit `i` of the packet (0 beyond the end).
    #[inline]
    pub const fn bit(&self, i: u32) -> bool {
        if i >= self.len {
            return false;
        }
        (self.words[(i / 64) as usize] >> (i % 64)) & 1 != 0
    }

    /// Sign-based compression (`payload.adoc`): drop the identical bits at the most significant
    /// end of the packet, keeping one, then sign-extend to a whole number of bytes. Writes the
    /// payload into `out` and returns its length in bytes (at least 1 for a non-empty packet).
    pub fn compress(&self, out: &mut [u8; MAX_PAYLOAD]) -> usize {
        if self.len == 0 {
            return 0;
        }
        let msb = self.bit(self.len - 1);
        // Highest bit that differs from the MSB; everything above it except one bit goes.
        let mut keep = 1;
        let mut i = self.len - 1;
        while i > 0 {
            i -= 1;
            if self.bit(i) != msb {
                keep = i + 2;
                break;
            }
        }
        let nbytes = keep.div_ceil(8) as usize;
        for (b, o) in out.iter_mut().enumerate().take(nbytes) {
            let lo = b as u32 * 8;
            let mut v = 0u8;
            for k in 0..8 {
                let bit = if lo + k < keep { self.bit(lo + k) } else { msb };
                v |= (bit as u8) << k;
            }
            *o = v;
        }
        nbytes
    }

    /// The packet without compression, sign-extended to whole bytes (for statistics: the
    /// uncompressed size is `len().div_ceil(8)` bytes).
    pub fn uncompressed_bytes(&self) -> usize {
        self.len.div_ceil(8) as usize
    }
}

/// Reads the fields of a received payload; reads past the end return copies of the payload's
/// most significant bit (`payload.adoc`: "sign-extending from the most significant received bit").
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    data: &'a [u8],
    pos: u32,
    sign: u8,
}

impl<'a> BitReader<'a> {
    /// A reader of `data` (must not be empty: a `te_inst` payload has at least one byte).
    pub fn new(data: &'a [u8]) -> Result<Self, CodecError> {
        let Some(&last) = data.last() else {
            return Err(CodecError::EmptyPayload);
        };
        if data.len() > MAX_PAYLOAD {
            return Err(CodecError::PacketTooLong);
        }
        Ok(BitReader {
            data,
            pos: 0,
            sign: if last & 0x80 != 0 { 0xff } else { 0 },
        })
    }

    /// Bits consumed so far.
    pub const fn pos(&self) -> u32 {
        self.pos
    }

    #[inline]
    fn byte(&self, i: usize) -> u8 {
        match self.data.get(i) {
            Some(&b) => b,
            None => self.sign,
        }
    }

    /// The next `width` bits (up to 64) as an unsigned value.
    #[inline]
    pub fn get(&mut self, width: u32) -> u64 {
        if width == 0 {
            return 0;
        }
        let first = (self.pos / 8) as usize;
        let sh = self.pos % 8;
        let mut window: u128 = 0;
        let need = (sh + width).div_ceil(8) as usize;
        for k in 0..need {
            window |= (self.byte(first + k) as u128) << (8 * k);
        }
        self.pos += width;
        ((window >> sh) as u64) & mask(width)
    }

    /// The next bit.
    #[inline]
    pub fn get_bit(&mut self) -> bool {
        self.get(1) != 0
    }

    /// Check that the bits after the last field are only sign extension of it (every bit equal
    /// to the last bit read): anything else means the payload is longer than its fields.
    pub fn finish(&self) -> Result<(), CodecError> {
        let total = self.data.len() as u32 * 8;
        if self.pos >= total || self.pos == 0 {
            return Ok(());
        }
        let last = {
            let i = self.pos - 1;
            (self.data[(i / 8) as usize] >> (i % 8)) & 1
        };
        for i in self.pos..total {
            if (self.data[(i / 8) as usize] >> (i % 8)) & 1 != last {
                return Err(CodecError::TrailingBits {
                    used: self.pos,
                    len: self.data.len(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_round_trip() {
        let mut w = BitWriter::new();
        let fields: [(u64, u32); 7] = [
            (3, 2),
            (1, 2),
            (0, 1),
            (0x1234_5678_9abc_def0, 64),
            (5, 3),
            (u64::MAX, 64),
            (0x2a, 7),
        ];
        for (v, n) in fields {
            w.put("f", v, n).unwrap();
        }
        let mut out = [0; MAX_PAYLOAD];
        let n = w.compress(&mut out);
        let mut r = BitReader::new(&out[..n]).unwrap();
        for (v, n) in fields {
            assert_eq!(r.get(n), v);
        }
        r.finish().unwrap();
    }

    #[test]
    fn compression_keeps_one_sign_bit() {
        // 0b0111 followed by zeros: keeps 4 bits ("0111" needs a 0 above the ones) -> 1 byte.
        let mut w = BitWriter::new();
        w.put("a", 0b111, 3).unwrap();
        w.put("b", 0, 40).unwrap();
        let mut out = [0; MAX_PAYLOAD];
        assert_eq!(w.compress(&mut out), 1);
        assert_eq!(out[0], 0b0000_0111);
        // All ones: one byte of ones.
        let mut w = BitWriter::new();
        w.put("a", u64::MAX, 64).unwrap();
        assert_eq!(w.compress(&mut out), 1);
        assert_eq!(out[0], 0xff);
        // Bit 7 set and zeros above: needs a second byte for the sign.
        let mut w = BitWriter::new();
        w.put("a", 0x80, 8).unwrap();
        w.put("b", 0, 20).unwrap();
        assert_eq!(w.compress(&mut out), 2);
        assert_eq!(&out[..2], &[0x80, 0x00]);
        // Uncompressible top bit is padded with itself.
        let mut w = BitWriter::new();
        w.put("a", 0b10, 2).unwrap();
        assert_eq!(w.compress(&mut out), 1);
        assert_eq!(out[0], 0xfe);
    }

    #[test]
    fn reads_past_end_sign_extend() {
        let mut r = BitReader::new(&[0x80]).unwrap();
        assert_eq!(r.get(7), 0);
        assert_eq!(r.get(16), 0xffff);
        let mut r = BitReader::new(&[0x7f]).unwrap();
        assert_eq!(r.get(4), 0xf);
        assert_eq!(r.get(64), 0x7);
    }

    #[test]
    fn field_too_wide() {
        let mut w = BitWriter::new();
        assert!(w.put("x", 4, 2).is_err());
        assert!(BitReader::new(&[]).is_err());
    }

    #[test]
    fn trailing_bits_detected() {
        let mut r = BitReader::new(&[0x01, 0x80]).unwrap();
        r.get(1);
        assert!(r.finish().is_err());
        let mut r = BitReader::new(&[0x01, 0x00]).unwrap();
        r.get(2);
        assert!(r.finish().is_ok());
    }
}
