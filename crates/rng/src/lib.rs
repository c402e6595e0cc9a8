//! The one random generator of rvtrace's tests: SplitMix64 (Steele, Lea and Flood, "Fast
//! splittable pseudorandom number generators", OOPSLA 2014; the constants of Vigna's reference
//! `splitmix64.c`).
//!
//! Why this one: a seed always gives the same sequence on every machine and Rust version, so a
//! failing case is reproduced from its seed; it has no dependency (`no_std`, no `rand`), so the
//! lowest crates (`rvtrace-isa`, `rvtrace-image`) use it in their tests without building the
//! workspace's test kit; every seed works, 0 included (xorshift's state must not be 0), and
//! neighbouring seeds (`base + i`) give unrelated sequences. It is not for cryptography, and
//! [`Rng::below`] keeps the small modulo bias of `%` (below 2^-40 for the bounds tests use).
//!
//! `rvtrace-testkit` re-exports it (`rvtrace_testkit::Rng`).
#![warn(missing_docs)]
#![no_std]

/// A SplitMix64 generator; the value is the state (`Rng(seed)` starts a sequence).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The next 32 random bits (the high half of [`Rng::next_u64`]).
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi` (`lo` <= `hi`, not the whole `u64` range).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// An index uniform in `0..n` (`n` > 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// True with probability 1/`n` (`n` > 0).
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// True or false, each with probability 1/2 (the lowest bit of a draw).
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 != 0
    }

    /// A uniformly chosen element of `items` (not empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// Fills `buf` with random bytes (eight per draw, little-endian).
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn splitmix64_reference_values() {
        // The first outputs of Vigna's splitmix64.c from state 0.
        let mut r = Rng(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
        assert_eq!(r.0, 3u64.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    }

    #[test]
    fn bounded_draws_stay_in_bounds_and_reach_both_ends() {
        let mut r = Rng(7);
        let (mut lo_seen, mut hi_seen) = (false, false);
        for _ in 0..1000 {
            let v = r.range(3, 9);
            assert!((3..=9).contains(&v));
            lo_seen |= v == 3;
            hi_seen |= v == 9;
            assert!(r.below(5) < 5);
            assert!(r.index(4) < 4);
            assert!([1, 2, 3].contains(r.pick(&[1, 2, 3])));
        }
        assert!(lo_seen && hi_seen);
        assert!(!Rng(1).chance(0));
        assert!(Rng(1).chance(100));
        assert!(Rng(1).one_in(1));
        let ones = (0..1000).filter(|_| r.one_in(10)).count();
        assert!((50..150).contains(&ones), "{ones}");
        let heads = (0..1000).filter(|_| r.coin()).count();
        assert!((400..600).contains(&heads), "{heads}");
    }

    #[test]
    fn fill_uses_the_draws_in_order() {
        let mut buf = [0u8; 11];
        Rng(5).fill(&mut buf);
        let mut r = Rng(5);
        let a = r.next_u64().to_le_bytes();
        let b = r.next_u64().to_le_bytes();
        assert_eq!(buf[..8], a);
        assert_eq!(buf[8..], b[..3]);
    }

    #[test]
    fn next_u32_is_the_high_half() {
        assert_eq!(Rng(9).next_u32() as u64, Rng(9).next_u64() >> 32);
    }
}
