//! Unsigned LEB128 and zigzag, as the binary format uses them (see the [`crate::binary`] module doc).

/// Appends `v` as unsigned LEB128 (7 bits per byte, least significant group first, bit 7 = more follows).
#[cfg(test)]
pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    let mut b = [0u8; 10];
    let n = put_u64_at(&mut b, 0, v);
    out.extend_from_slice(&b[..n]);
}

/// Writes `v` as unsigned LEB128 into `buf` at `p` (room for 10 bytes); returns the position
/// after it.
#[inline(always)]
pub(crate) fn put_u64_at(buf: &mut [u8], mut p: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        buf[p] = v as u8 | 0x80;
        p += 1;
        v >>= 7;
    }
    buf[p] = v as u8;
    p + 1
}

/// Reads an unsigned LEB128 value at `*pos`. `None` if the data ends inside it, it is longer than
/// 10 bytes, or it does not fit 64 bits. `*pos` is only advanced on success.
#[inline]
pub(crate) fn get_u64(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let first = *buf.get(*pos)?;
    if first < 0x80 {
        *pos += 1;
        return Some(first as u64);
    }
    let mut v = (first & 0x7f) as u64;
    let mut shift = 7;
    let mut p = *pos + 1;
    loop {
        let b = *buf.get(p)?;
        p += 1;
        if shift == 63 {
            // 10th byte: only bit 0 is left of a u64, and it must be the last byte.
            if b > 1 {
                return None;
            }
            v |= (b as u64) << 63;
            break;
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    *pos = p;
    Some(v)
}

/// Zigzag-maps a signed value to unsigned (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...).
#[inline]
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_round_trip_and_limits() {
        for v in [
            0u64,
            1,
            0x7f,
            0x80,
            0x3fff,
            0x4000,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_u64(&mut b, v);
            let mut pos = 0;
            assert_eq!(get_u64(&b, &mut pos), Some(v));
            assert_eq!(pos, b.len());
            // Every truncation fails without moving pos.
            for cut in 0..b.len() {
                let mut pos = 0;
                assert_eq!(get_u64(&b[..cut], &mut pos), None);
                assert_eq!(pos, 0);
            }
        }
        let mut b = Vec::new();
        put_u64(&mut b, u64::MAX);
        assert_eq!(b.len(), 10);
        // Overflowing 10th byte and 11-byte encodings are rejected.
        let mut bad = b.clone();
        bad[9] = 2;
        assert_eq!(get_u64(&bad, &mut 0), None);
        let mut long = vec![0x80u8; 10];
        long.push(0);
        assert_eq!(get_u64(&long, &mut 0), None);
    }

    #[test]
    fn zigzag_round_trip() {
        for v in [0i64, -1, 1, -2, 2, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }
}
