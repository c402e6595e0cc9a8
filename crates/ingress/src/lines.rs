//! Line splitting for the text readers without a `String` per line: lines are handed out as
//! byte slices of the reader's own buffer (copied only when a line spans two buffer fills), and
//! parsed from bytes. A line a fast parser does not accept goes to the simple `&str` parser,
//! which then decides (the same result and the same error as before).

use crate::{IngressError, Record};
use std::io::{self, BufRead};

/// Byte-line reader over a [`BufRead`].
pub(crate) struct ByteLines<R: BufRead> {
    inner: R,
    /// A line that spans buffer fills.
    carry: Vec<u8>,
}

/// The error `BufRead::read_line` gives for a line that is not UTF-8.
pub(crate) fn not_utf8() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "stream did not contain valid UTF-8",
    )
}

impl<R: BufRead> ByteLines<R> {
    pub(crate) fn new(inner: R) -> Self {
        ByteLines {
            inner,
            carry: Vec::new(),
        }
    }

    /// The fast path of a line reader: `f` gets the buffered input from the start of the next
    /// line and returns a value and the length of the line it parsed (its `'\n'` included), or
    /// `None` (then nothing is consumed: the caller reads the line with
    /// [`next_line`](Self::next_line)). `None` also when nothing is buffered.
    #[inline(always)]
    pub(crate) fn try_parse<T>(
        &mut self,
        f: impl FnOnce(&[u8]) -> Option<(T, usize)>,
    ) -> Option<T> {
        let buf = self.inner.fill_buf().ok()?;
        let (t, n) = f(buf)?;
        debug_assert!(n <= buf.len() && buf[n - 1] == b'\n');
        self.inner.consume(n);
        Some(t)
    }

    /// [`try_parse`](Self::try_parse) on line after line of the buffered input, each value
    /// written in place into the next slot of `out` (no record moved through the stack), until
    /// `f` returns `None` (a line it does not take, or the end of the buffer; the slot it was
    /// given may then hold anything) or `out` is full: the number of slots filled (0 when
    /// nothing is buffered or on a read error, which [`next_line`](Self::next_line) then
    /// reports).
    #[inline(always)]
    pub(crate) fn parse_into<T>(
        &mut self,
        mut f: impl FnMut(&[u8], &mut T) -> Option<usize>,
        out: &mut [T],
    ) -> usize {
        let Ok(buf) = self.inner.fill_buf() else {
            return 0;
        };
        let (mut p, mut k) = (0, 0);
        for slot in out.iter_mut() {
            let Some(n) = f(&buf[p..], slot) else {
                break;
            };
            debug_assert!(n <= buf.len() - p && buf[p + n - 1] == b'\n');
            p += n;
            k += 1;
        }
        self.inner.consume(p);
        k
    }

    /// Calls `f` with the next line, its `'\n'` included when there is one (as `read_line`
    /// gives it); `Ok(None)` at the end of the input.
    #[inline]
    pub(crate) fn next_line<T>(&mut self, f: impl FnOnce(&[u8]) -> T) -> io::Result<Option<T>> {
        let buf = loop {
            match self.inner.fill_buf() {
                Ok(b) => break b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        if let Some(i) = memchr::memchr(b'\n', buf) {
            let t = f(&buf[..=i]);
            self.inner.consume(i + 1);
            return Ok(Some(t));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        self.carry.clear();
        self.inner.read_until(b'\n', &mut self.carry)?;
        Ok(Some(f(&self.carry)))
    }
}

/// Value of each hex digit, 0xff for other bytes.
/// A text reader that fills a slice of records (its `read_into`) and holds an error for the
/// next call: what [`read_batch`] builds on.
pub(crate) trait FillRecords {
    /// Fills `out` from its start; returns how many records it wrote.
    fn fill(&mut self, out: &mut [Record]) -> Result<usize, IngressError>;
    /// The error `fill` returns first on its next call.
    fn pending(&mut self) -> &mut Option<IngressError>;
}

/// Up to `max` records of `r` appended to `out`, 4096 at a time: the text readers'
/// `read_batch`. An error after some records were appended is held for the next call, so that
/// the records before it are never lost.
pub(crate) fn read_batch(
    r: &mut impl FillRecords,
    out: &mut Vec<Record>,
    max: usize,
) -> Result<usize, IngressError> {
    let mut got = 0;
    while got < max {
        let (old, k) = (out.len(), (max - got).min(4096));
        out.resize(old + k, Record::default());
        let n = r.fill(&mut out[old..]);
        out.truncate(old + *n.as_ref().unwrap_or(&0));
        let n = match n {
            Ok(n) => n,
            Err(e) if got == 0 => return Err(e),
            Err(e) => {
                *r.pending() = Some(e);
                break;
            }
        };
        got += n;
        if n < k {
            break;
        }
    }
    Ok(got)
}

/// Every record and error `next` (a reader's `next_record`) gives, as text: the readers'
/// tests compare their fast and simple parsers with it.
#[cfg(test)]
pub(crate) fn next_outcomes(
    mut next: impl FnMut() -> Result<Option<Record>, IngressError>,
) -> Vec<String> {
    let mut v = Vec::new();
    for _ in 0..100_000 {
        match next() {
            Ok(Some(rec)) => v.push(format!("{rec:?}")),
            Ok(None) => break,
            Err(e) => v.push(format!("error: {e}")),
        }
    }
    v
}

/// [`next_outcomes`] of a reader's `read_batch` (`read`), `max` records at a time; checks
/// that each call appends what it says, and at most `max`.
#[cfg(test)]
pub(crate) fn batch_outcomes(
    mut read: impl FnMut(&mut Vec<Record>, usize) -> Result<usize, IngressError>,
    max: usize,
) -> Vec<String> {
    let mut v = Vec::new();
    let mut recs = Vec::new();
    for _ in 0..100_000 {
        recs.clear();
        match read(&mut recs, max) {
            Ok(0) => break,
            Ok(n) => {
                assert_eq!(n, recs.len());
                assert!(n <= max);
                v.extend(recs.iter().map(|rec| format!("{rec:?}")));
            }
            Err(e) => v.push(format!("error: {e}")),
        }
    }
    v
}

/// The records and errors `r` gives through [`FillRecords::fill`] into `max` slots that hold a
/// record with every field set before each call (a fast path that leaves a field as it was
/// shows), as text: the readers' tests compare it with their simple parser's.
#[cfg(test)]
pub(crate) fn fill_outcomes(r: &mut impl FillRecords, max: usize) -> Vec<String> {
    let junk = Record {
        iaddr: 0x1234_5678_9abc,
        iretire: 77,
        ilastsize: 9,
        itype: crate::Itype::CoroutineSwap,
        cause: 0xdead,
        tval: 0xbeef,
        priv_: 6,
        context: 0x77,
        ctype: 3,
        time: 0x5555,
        sijump: true,
    };
    let mut v = Vec::new();
    let mut slots = vec![junk; max];
    for _ in 0..100_000 {
        slots.fill(junk);
        match r.fill(&mut slots) {
            Ok(0) => break,
            Ok(n) => v.extend(slots[..n].iter().map(|rec| format!("{rec:?}"))),
            Err(e) => v.push(format!("error: {e}")),
        }
    }
    v
}

pub(crate) static HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => 0xff,
        };
        i += 1;
    }
    t
};

/// `s` without its `'\n'` and then one `'\r'`; `None` if other line-end bytes remain (the
/// fast parsers leave such lines to the simple ones).
#[inline(always)]
pub(crate) fn strip_eol(s: &[u8]) -> Option<&[u8]> {
    let s = s.strip_suffix(b"\n").unwrap_or(s);
    let s = s.strip_suffix(b"\r").unwrap_or(s);
    match s.last() {
        Some(b'\r' | b'\n') => None,
        _ => Some(s),
    }
}

/// The line end at the start of `s` (`\n` or `\r\n`): its length.
#[inline(always)]
pub(crate) fn eol(s: &[u8]) -> Option<usize> {
    match s {
        [b'\n', ..] => Some(1),
        [b'\r', b'\n', ..] => Some(2),
        _ => None,
    }
}

/// 1 to 16 hex digits (after an optional `0x`/`0X`) at the start of `s`, followed by `stop`:
/// the value and the length up to `stop` (excluded).
#[inline(always)]
pub(crate) fn hex_until(s: &[u8], stop: u8) -> Option<(u64, usize)> {
    let start = match s {
        [b'0', b'x' | b'X', ..] => 2,
        _ => 0,
    };
    // Eight digits then `stop` (a 32-bit address, the common field): eight at a time. `stop`
    // is no hex digit, so this is what the loop finds.
    if let Some(&[d @ .., end]) = s.get(start..start + 9).and_then(|w| w.first_chunk::<9>()) {
        if end == stop {
            if let Some(v) = hex8(d) {
                return Some((v as u64, start + 8));
            }
        }
    }
    let mut v = 0u64;
    let mut i = start;
    loop {
        let b = *s.get(i)?;
        let d = HEX[b as usize];
        if d == 0xff {
            break;
        }
        v = v << 4 | d as u64;
        i += 1;
    }
    let n = i - start;
    ((1..=16).contains(&n) && s.get(i) == Some(&stop)).then_some((v, i))
}

/// Eight hex digits (either case), the first the most significant: their value, or `None` if
/// a byte is no hex digit. All eight bytes at once (SWAR; no carry crosses a byte).
#[inline(always)]
pub(crate) fn hex8(d: [u8; 8]) -> Option<u32> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES << 7;
    let x = u64::from_le_bytes(d);
    // Bit 6 of each byte: a letter, if it is a digit at all.
    let alpha = (x >> 6) & ONES;
    // Each byte's value if it is a digit (letters: low nibble + 9): at most 24.
    let v = (x & (0x0f * ONES)) + alpha * 9;
    // A digit is the canonical spelling of its value, lower-cased where it is a letter; no
    // other byte is (bit 6 picks the case, bit 5 the digits' row, bit 7 is never set), but
    // for `G`-`O` and `g`-`o`, the values 16 to 24, which the second test turns away.
    let canon = v + 0x30 * ONES + ((v + 0x76 * ONES) & HIGH) / 0x80 * 39;
    let lower = x | alpha << 5;
    if (canon ^ lower) | ((v + 0x70 * ONES) & HIGH) != 0 {
        return None;
    }
    // The first digit in the top byte, then nibbles, bytes and half-words paired.
    let v = v.swap_bytes();
    let v = (v | v >> 4) & 0x00ff_00ff_00ff_00ff;
    let v = (v | v >> 8) & 0x0000_ffff_0000_ffff;
    Some((v | v >> 16) as u32)
}

/// 1 to 19 decimal digits at the start of `s` followed by `,` or a line end: the value and
/// the number of digits.
#[inline(always)]
pub(crate) fn dec_field(s: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    let mut i = 0;
    while let Some(&b) = s.get(i) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as u64);
        i += 1;
    }
    ((1..=19).contains(&i) && matches!(s.get(i), Some(b',' | b'\n' | b'\r'))).then_some((v, i))
}

/// 1 to 16 hex digits (after an optional `0x`/`0X`), the whole of `s`.
#[inline(always)]
pub(crate) fn hex(s: &[u8]) -> Option<u64> {
    let s = match s {
        [b'0', b'x' | b'X', rest @ ..] => rest,
        _ => s,
    };
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &b in s {
        let d = HEX[b as usize];
        if d == 0xff {
            return None;
        }
        v = v << 4 | d as u64;
    }
    Some(v)
}

/// 1 to 19 decimal digits (no overflow possible), the whole of `s`.
#[inline(always)]
pub(crate) fn dec(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    let mut v = 0u64;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u64;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `hex8` gives what the digit table gives, on bytes around every class boundary.
    #[test]
    fn hex8_equals_the_table() {
        const BYTES: &[u8] =
            b"0123456789abcdefABCDEF/:@G`gxX \x00\x7f\x80\xb0\xc6\xe1\xff\x10\x19\x1aOoPVvp\x3f";
        let mut g = gen::Rng(0x1234_5678_9abc_def1);
        for i in 0..200_000 {
            let d: [u8; 8] = std::array::from_fn(|_| match i % 4 {
                0 => *g.pick(BYTES),
                1 => g.next_u64() as u8,
                _ => BYTES[g.index(22)],
            });
            let table = d.iter().try_fold(0u32, |v, &b| {
                let h = HEX[b as usize];
                (h < 16).then_some(v << 4 | h as u32)
            });
            assert_eq!(hex8(d), table, "{d:?}");
        }
        // Every byte value in every place, the others digits.
        for i in 0..8 {
            for b in 0..=255u8 {
                let mut d = *b"12345678";
                d[i] = b;
                let h = HEX[b as usize];
                let want = (h < 16)
                    .then(|| 0x1234_5678 & !(0xf << (28 - 4 * i)) | (h as u32) << (28 - 4 * i));
                assert_eq!(hex8(d), want, "{d:?}");
            }
        }
    }
}

/// Random text for the tests that compare the fast parsers with the simple ones.
#[cfg(test)]
pub(crate) mod gen {
    pub(crate) use rvtrace_testkit::Rng;

    /// Text drawn from the generator.
    pub(crate) trait Text {
        /// A value for a field whose largest valid value is `max`: small values mostly, the
        /// ones around `max` (valid and not) now and then.
        fn edge(&mut self, max: u64) -> u64;
        /// `s` damaged now and then: a byte replaced, inserted or removed.
        fn damage(&mut self, s: &str) -> Vec<u8>;
        /// A number as text: decimal or hex digits of varied length (sometimes too long).
        fn digits(&mut self, hex: bool) -> String;
    }

    impl Text for Rng {
        fn edge(&mut self, max: u64) -> u64 {
            match self.below(12) {
                0 => max,
                1 => max + 1,
                2 => max - max.min(1),
                3 => max + 2 + self.below(300),
                _ => self.below(2),
            }
        }

        fn damage(&mut self, s: &str) -> Vec<u8> {
            let mut b = s.as_bytes().to_vec();
            const JUNK: &[u8] = b" \t\r,0xX9fFgG.-\xff\xc3";
            if self.below(3) == 0 {
                let n = 1 + self.below(2);
                for _ in 0..n {
                    let i = self.index(b.len() + 1);
                    let j = *self.pick(JUNK);
                    match self.below(3) {
                        0 if i < b.len() => b[i] = j,
                        1 if i < b.len() => {
                            b.remove(i);
                        }
                        _ => b.insert(i, j),
                    }
                }
            }
            b
        }

        fn digits(&mut self, hex: bool) -> String {
            let v = match self.below(4) {
                0 => self.below(3),
                1 => self.next_u64() >> self.below(64),
                2 => self.next_u64(),
                _ => self.below(20),
            };
            let mut s = if hex { format!("{v:x}") } else { v.to_string() };
            if self.below(10) == 0 {
                s.insert_str(0, "000");
            }
            if self.below(20) == 0 {
                s.push_str("99");
            }
            s
        }
    }
}
