//! Repeated-history pattern detection for the encoder (N-Trace 9.3: "Exact way to detect these
//! patterns is not specified as it does not change encoding of messages"; "it is allowed to
//! generate any sequence of Resource Full messages as long as the logically concatenated sequence
//! of (repeated or not ...) HIST bits (excluding MSB stop-bit\[s\]) is the same").
//!
//! The encoder looks at a window of the last one or two full HIST registers and asks for the
//! branch pattern that repeats over the longest stretch at the window's end; the stretch becomes
//! one ResourceFull RCODE 2 (pattern, HREPEAT) that keeps counting while the branches follow the
//! pattern. `no_std`, no allocation: this is what a hardware encoder could compare.

/// A pattern found at the end of a window of branch bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// Oldest bits of the window before the repeating stretch (sent as they are).
    pub prefix: u32,
    /// Pattern length in branches.
    pub period: u32,
    /// The pattern, oldest branch in its most significant bit (`period` bits, no stop-bit).
    pub pattern: u64,
    /// Whole repetitions of the pattern in the stretch (at least 2).
    pub count: u64,
    /// Bits of the stretch after them (a prefix of the next repetition).
    pub partial: u32,
}

/// The pattern of at most `max_period` branches that repeats over the longest stretch at the end
/// of the `n` branch bits of `bits` (the oldest in bit `n - 1`, the newest in bit 0), among
/// stretches of at least two repetitions and at least `min_len` bits. Ties go to the shorter
/// pattern (cheaper to send). `n` is at most 64.
pub fn find(bits: u64, n: u32, max_period: u32, min_len: u32) -> Option<Found> {
    let n = n.min(64);
    let mask = |k: u32| if k >= 64 { u64::MAX } else { (1u64 << k) - 1 };
    let bits = bits & mask(n);
    let mut best: Option<(u32, u32)> = None; // (stretch length, period)
    for p in 1..=max_period.min(n / 2) {
        // Bit k of x is set where the branch k steps back differs from the one p further back;
        // the stretch is p-periodic up to the first difference.
        let x = (bits ^ (bits >> p)) & mask(n - p);
        let len = (x.trailing_zeros().min(n - p)) + p;
        if len >= 2 * p && len >= min_len && best.is_none_or(|(l, _)| len > l) {
            best = Some((len, p));
        }
    }
    let (len, p) = best?;
    Some(Found {
        prefix: n - len,
        period: p,
        pattern: (bits >> (len - p)) & mask(p),
        count: u64::from(len / p),
        partial: len % p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `s` as branch bits, oldest first ('1' taken).
    fn bits(s: &str) -> (u64, u32) {
        let v = s.bytes().fold(0u64, |a, c| (a << 1) | u64::from(c == b'1'));
        (v, s.len() as u32)
    }

    fn expand(f: &Found) -> String {
        let pat: String = (0..f.period)
            .map(|i| {
                if f.pattern >> (f.period - 1 - i) & 1 != 0 {
                    '1'
                } else {
                    '0'
                }
            })
            .collect();
        let mut s = pat.repeat(f.count as usize);
        s.push_str(&pat[..f.partial as usize]);
        s
    }

    #[test]
    fn finds_the_shortest_pattern_of_the_longest_stretch() {
        // 9.3's example: "01" repeated; the shortest pattern wins over "0101".
        let (v, n) = bits(&"01".repeat(15));
        let f = find(v, n, 31, 8).unwrap();
        assert_eq!(
            (f.prefix, f.period, f.pattern, f.count, f.partial),
            (0, 2, 0b01, 15, 0)
        );
        // A loop of 5 branches after 7 others: the stretch starts after them, 2 bits of a
        // repetition are left.
        let s = format!("1101100{}00", "00101".repeat(6));
        let (v, n) = bits(&s);
        let f = find(v, n, 31, 8).unwrap();
        assert_eq!((f.prefix, f.period, f.count, f.partial), (7, 5, 6, 2));
        assert_eq!(expand(&f), s[7..]);
        // Two identical 31-bit registers.
        let r = "1011001110001011110000011111010";
        let (v, n) = bits(&format!("{r}{r}"));
        let f = find(v, n, 31, 31).unwrap();
        assert_eq!((f.prefix, f.period, f.count, f.partial), (0, 31, 2, 0));
        assert_eq!(expand(&f), format!("{r}{r}"));
    }

    #[test]
    fn every_result_rebuilds_the_window_end() {
        // Random windows with a planted pattern: what is found is a true description.
        let mut rng = rvtrace_testkit::Rng(0x1234_5678_9abc_def1);
        for _ in 0..2000 {
            let x = rng.next_u64();
            let p = (x % 31 + 1) as u32;
            let head = ((x >> 8) % 20) as u32;
            let pat: String = (0..p)
                .map(|i| if x >> (20 + i) & 1 != 0 { '1' } else { '0' })
                .collect();
            let junk: String = (0..head)
                .map(|i| if x >> (40 + i) & 1 != 0 { '1' } else { '0' })
                .collect();
            let mut s = junk + &pat.repeat(64);
            s.truncate(62);
            let (v, n) = bits(&s);
            let found = find(v, n, 31, 16);
            if let Some(f) = found {
                assert!(f.count >= 2 && f.period <= 31);
                assert_eq!(expand(&f), s[f.prefix as usize..], "{s}");
                assert!(62 - f.prefix >= 16);
            }
            if 62 - head >= 2 * p {
                // The planted stretch is found, or a longer one.
                assert!(found.is_some_and(|f| f.prefix <= head), "{s}");
            }
        }
    }

    #[test]
    fn nothing_without_two_repetitions() {
        let (v, n) = bits("1011001110001011110000011111010");
        assert_eq!(find(v, n, 31, 8), None);
        assert_eq!(find(0, 0, 31, 0), None);
        // All zeros: period 1 over the whole window.
        let f = find(0, 62, 31, 31).unwrap();
        assert_eq!((f.prefix, f.period, f.count), (0, 1, 62));
    }
}
