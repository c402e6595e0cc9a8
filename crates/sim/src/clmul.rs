//! Carry-less multiplication for Zbc (RISC-V Bit-Manipulation ISA-extensions 1.0.0, "Zbc:
//! Carry-less multiplication"): `clmul`, `clmulh` and `clmulr` are the low XLEN bits, the high XLEN
//! bits and bits 2*XLEN-2..XLEN-1 of the 2*XLEN-bit carry-less product of `rs1` and `rs2`.

/// The 128-bit carry-less product of `a` and `b`: the XOR of `a << i` over the set bits `i` of `b`.
/// Off the hart's hot path (Zbc is rare); the loop visits only the set bits of `b`.
#[inline(never)]
pub(crate) fn clmul_wide(a: u64, b: u64) -> u128 {
    let (a, mut b) = (a as u128, b);
    let mut p = 0u128;
    while b != 0 {
        p ^= a << b.trailing_zeros();
        b &= b - 1;
    }
    p
}

/// `clmul`, `clmulh` or `clmulr` (`op` 0, 1, 2) of `rs1` and `rs2` at XLEN 64, or at XLEN 32 on
/// the low 32 bits of each operand (the result's upper bits are for the register write to narrow).
#[inline(never)]
pub(crate) fn clmul(op: u8, rs1: u64, rs2: u64, rv64: bool) -> u64 {
    let xlen = if rv64 { 64 } else { 32 };
    let (a, b) = if rv64 {
        (rs1, rs2)
    } else {
        (rs1 & 0xffff_ffff, rs2 & 0xffff_ffff)
    };
    let p = clmul_wide(a, b);
    (match op {
        0 => p,
        1 => p >> xlen,
        _ => p >> (xlen - 1),
    }) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's definitions bit by bit (its Sail `foreach` bounds are inclusive),
    /// independent of `clmul_wide`:
    /// clmul: for i in 0..=XLEN-1, if rs2[i]: out ^= rs1 << i;
    /// clmulh: for i in 1..=XLEN, if rs2[i]: out ^= rs1 >> (XLEN - i) (rs2[XLEN] is 0);
    /// clmulr: for i in 0..=XLEN-1, if rs2[i]: out ^= rs1 >> (XLEN - i - 1).
    fn reference(op: u8, rs1: u64, rs2: u64, xlen: u32) -> u64 {
        let mask = if xlen == 64 { u64::MAX } else { 0xffff_ffff };
        let (a, b) = (rs1 & mask, rs2 & mask);
        let mut out = 0u64;
        for i in 0..xlen {
            if (b >> i) & 1 == 0 {
                continue;
            }
            match op {
                0 => out ^= a << i,
                1 if i >= 1 => out ^= a >> (xlen - i),
                2 => out ^= a >> (xlen - i - 1),
                _ => {}
            }
        }
        out & mask
    }

    fn check(rs1: u64, rs2: u64) {
        for op in 0..3 {
            assert_eq!(
                clmul(op, rs1, rs2, true),
                reference(op, rs1, rs2, 64),
                "rv64 op {op} {rs1:#x} {rs2:#x}"
            );
            assert_eq!(
                clmul(op, rs1, rs2, false) & 0xffff_ffff,
                reference(op, rs1, rs2, 32),
                "rv32 op {op} {rs1:#x} {rs2:#x}"
            );
        }
    }

    #[test]
    fn edge_operands_match_the_bitwise_definition() {
        let edges = [
            0,
            1,
            2,
            3,
            0x8000_0000,
            0xffff_ffff,
            0x8000_0000_0000_0000,
            0x8000_0000_0000_0001,
            u64::MAX,
            0x5555_5555_5555_5555,
            0xaaaa_aaaa_aaaa_aaaa,
            0x1234_5678_9abc_def0,
        ];
        for a in edges {
            for b in edges {
                check(a, b);
            }
        }
    }

    #[test]
    fn random_operands_match_the_bitwise_definition() {
        let mut rng = rvtrace_testkit::Rng(0x243f_6a88_85a3_08d3);
        for _ in 0..20_000 {
            check(rng.next_u64(), rng.next_u64());
        }
    }

    /// Known values: x * x over GF(2) spreads the bits (squaring is linear), the all-ones
    /// products, and the clmulr/clmulh relation of the specification (clmulr = clmulh << 1 | the
    /// top bit of clmul).
    #[test]
    fn identities() {
        assert_eq!(clmul(0, 0xff, 0xff, true), 0x5555);
        assert_eq!(clmul(0, u64::MAX, u64::MAX, true), 0x5555_5555_5555_5555);
        assert_eq!(clmul(1, u64::MAX, u64::MAX, true), 0x5555_5555_5555_5555);
        assert_eq!(
            clmul(0, 0xffff_ffff, 0xffff_ffff, false) & 0xffff_ffff,
            0x5555_5555
        );
        assert_eq!(clmul(1, 0xffff_ffff, 0xffff_ffff, false), 0x5555_5555);
        assert_eq!(clmul(1, 1 << 63, 1 << 63, true), 1 << 62);
        assert_eq!(clmul(2, 1 << 63, 1, true), 1);
        for (a, b) in [
            (0x1234_5678_9abc_def0u64, 0xfedc_ba98_7654_3210u64),
            (u64::MAX, 3),
        ] {
            let (l, h, r) = (
                clmul(0, a, b, true),
                clmul(1, a, b, true),
                clmul(2, a, b, true),
            );
            assert_eq!(r, (h << 1) | (l >> 63));
        }
    }
}
