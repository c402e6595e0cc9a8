//! Tests for the FPU: hand-picked RISC-V edge cases plus a randomized
//! comparison against Berkeley SoftFloat 3 (RISCV specialization) through
//! `softfloat-sys`.

use super::flags::{DZ, NV, NX, OF, UF};
use super::*;
use softfloat_sys as sf;

const RMS: [Rm; 5] = [Rm::Rne, Rm::Rtz, Rm::Rdn, Rm::Rup, Rm::Rmm];

// ---------------------------------------------------------------------------
// Hand-picked edge cases
// ---------------------------------------------------------------------------

fn fl_of<T>(f: impl FnOnce(&mut u8) -> T) -> (T, u8) {
    let mut fl = 0;
    let r = f(&mut fl);
    (r, fl)
}

const S_QNAN: u32 = 0x7fc0_0000;
const S_QNAN_PAYLOAD: u32 = 0xffc1_2345;
const S_SNAN: u32 = 0x7f80_0001;
const S_INF: u32 = 0x7f80_0000;
const S_NINF: u32 = 0xff80_0000;
const S_ONE: u32 = 0x3f80_0000;
const S_MAX: u32 = 0x7f7f_ffff;
const S_NZERO: u32 = 0x8000_0000;
const D_SNAN: u64 = 0x7ff0_0000_0000_0001;
const D_QNAN_PAYLOAD: u64 = 0xfff8_dead_beef_0001;
const D_ONE: u64 = 0x3ff0_0000_0000_0000;
const D_NZERO: u64 = 1 << 63;

#[test]
fn rm_from_bits() {
    assert_eq!(Rm::from_bits(0), Some(Rm::Rne));
    assert_eq!(Rm::from_bits(4), Some(Rm::Rmm));
    assert_eq!(Rm::from_bits(5), None);
    assert_eq!(Rm::from_bits(6), None);
    assert_eq!(Rm::from_bits(7), None);
}

#[test]
fn canonical_nans() {
    let rne = Rm::Rne;
    assert_eq!(fl_of(|f| f32_div(0, 0, rne, f)), (F32_DEFAULT_NAN, NV));
    assert_eq!(
        fl_of(|f| f32_sub(S_INF, S_INF, rne, f)),
        (F32_DEFAULT_NAN, NV)
    );
    assert_eq!(fl_of(|f| f32_mul(S_INF, 0, rne, f)), (F32_DEFAULT_NAN, NV));
    assert_eq!(
        fl_of(|f| f32_sqrt(0xbf80_0000, rne, f)),
        (F32_DEFAULT_NAN, NV)
    );
    assert_eq!(
        fl_of(|f| f32_add(S_QNAN_PAYLOAD, S_ONE, rne, f)),
        (F32_DEFAULT_NAN, 0)
    );
    assert_eq!(
        fl_of(|f| f32_add(S_SNAN, S_ONE, rne, f)),
        (F32_DEFAULT_NAN, NV)
    );
    assert_eq!(
        fl_of(|f| f64_add(D_QNAN_PAYLOAD, D_ONE, rne, f)),
        (F64_DEFAULT_NAN, 0)
    );
    assert_eq!(
        fl_of(|f| f64_mul(D_SNAN, D_ONE, rne, f)),
        (F64_DEFAULT_NAN, NV)
    );
    assert_eq!(fl_of(|f| f32_to_f64(S_SNAN, f)), (F64_DEFAULT_NAN, NV));
    assert_eq!(
        fl_of(|f| f32_to_f64(S_QNAN_PAYLOAD, f)),
        (F64_DEFAULT_NAN, 0)
    );
    assert_eq!(fl_of(|f| f64_to_f32(D_SNAN, rne, f)), (F32_DEFAULT_NAN, NV));
    assert_eq!(
        fl_of(|f| f64_to_f32(D_QNAN_PAYLOAD, rne, f)),
        (F32_DEFAULT_NAN, 0)
    );
}

#[test]
fn fma_special_cases() {
    let rne = Rm::Rne;
    // inf * 0 + qNaN raises NV (RISC-V requirement).
    assert_eq!(
        fl_of(|f| f32_fma(S_INF, 0, S_QNAN, false, false, rne, f)),
        (F32_DEFAULT_NAN, NV)
    );
    assert_eq!(
        fl_of(|f| f64_fma(
            0,
            0x7ff0_0000_0000_0000,
            F64_DEFAULT_NAN,
            true,
            true,
            rne,
            f
        )),
        (F64_DEFAULT_NAN, NV)
    );
    // qNaN addend with an ordinary product: no flag.
    assert_eq!(
        fl_of(|f| f32_fma(S_ONE, S_ONE, S_QNAN_PAYLOAD, false, false, rne, f)),
        (F32_DEFAULT_NAN, 0)
    );
    // fnmadd: -(+0 * 1) - (+0) = -0; -(+0 * 1) - (-0) = +0.
    for rm in [Rm::Rne, Rm::Rtz, Rm::Rup, Rm::Rmm] {
        assert_eq!(
            fl_of(|f| f32_fma(0, S_ONE, 0, true, true, rm, f)),
            (S_NZERO, 0)
        );
        assert_eq!(
            fl_of(|f| f32_fma(0, S_ONE, S_NZERO, true, true, rm, f)),
            (0, 0)
        );
        assert_eq!(
            fl_of(|f| f64_fma(0, D_ONE, D_NZERO, true, true, rm, f)),
            (0, 0)
        );
    }
    assert_eq!(
        fl_of(|f| f32_fma(0, S_ONE, S_NZERO, true, true, Rm::Rdn, f)),
        (S_NZERO, 0)
    );
    // fmsub: 1*1 - 1 = +0 (RNE), -0 (RDN).
    assert_eq!(
        fl_of(|f| f32_fma(S_ONE, S_ONE, S_ONE, false, true, rne, f)),
        (0, 0)
    );
    assert_eq!(
        fl_of(|f| f64_fma(D_ONE, D_ONE, D_ONE, false, true, Rm::Rdn, f)),
        (D_NZERO, 0)
    );
    // inf*x + -inf is invalid.
    assert_eq!(
        fl_of(|f| f32_fma(S_INF, S_ONE, S_INF, false, true, rne, f)),
        (F32_DEFAULT_NAN, NV)
    );
}

#[test]
fn zero_signs_and_exact_cancellation() {
    assert_eq!(fl_of(|f| f32_add(S_NZERO, 0, Rm::Rne, f)), (0, 0));
    assert_eq!(fl_of(|f| f32_add(S_NZERO, 0, Rm::Rdn, f)), (S_NZERO, 0));
    assert_eq!(fl_of(|f| f32_sub(S_ONE, S_ONE, Rm::Rdn, f)), (S_NZERO, 0));
    assert_eq!(fl_of(|f| f64_sub(D_ONE, D_ONE, Rm::Rup, f)), (0, 0));
    assert_eq!(fl_of(|f| f32_sqrt(S_NZERO, Rm::Rne, f)), (S_NZERO, 0));
    assert_eq!(fl_of(|f| f64_sqrt(D_NZERO, Rm::Rdn, f)), (D_NZERO, 0));
    assert_eq!(fl_of(|f| f32_div(S_ONE, 0, Rm::Rne, f)), (S_INF, DZ));
    assert_eq!(fl_of(|f| f32_div(S_ONE, S_NZERO, Rm::Rne, f)), (S_NINF, DZ));
}

#[test]
fn overflow_by_rounding_mode() {
    let two = 0x4000_0000;
    let cases = [
        (Rm::Rne, S_INF, S_NINF),
        (Rm::Rtz, S_MAX, S_MAX | S_NZERO),
        (Rm::Rdn, S_MAX, S_NINF),
        (Rm::Rup, S_INF, S_MAX | S_NZERO),
        (Rm::Rmm, S_INF, S_NINF),
    ];
    for (rm, pos, neg) in cases {
        assert_eq!(
            fl_of(|f| f32_mul(S_MAX, two, rm, f)),
            (pos, OF | NX),
            "{rm:?}"
        );
        assert_eq!(
            fl_of(|f| f32_mul(S_MAX | S_NZERO, two, rm, f)),
            (neg, OF | NX),
            "{rm:?}"
        );
    }
}

#[test]
fn tininess_after_rounding() {
    // 2^-126 * (1 - 3*2^-26): tiny after rounding (24-bit rounding with
    // unbounded exponent gives 2^-126 - 2^-150), but the subnormal rounding
    // reaches 2^-126: UF|NX with a normal result.
    let m = 1.0f64 - 3.0 * 2f64.powi(-26);
    let x = (m * 2f64.powi(-126)).to_bits();
    assert_eq!(fl_of(|f| f64_to_f32(x, Rm::Rne, f)), (0x0080_0000, UF | NX));
    // 2^-126 * (1 - 2^-25): rounds (ties to even) to 2^-126 even with
    // unbounded exponent, so it is not tiny: NX only.
    let x = ((1.0f64 - 2f64.powi(-25)) * 2f64.powi(-126)).to_bits();
    assert_eq!(fl_of(|f| f64_to_f32(x, Rm::Rne, f)), (0x0080_0000, NX));
    // Same value rounding to odd neighbour in RTZ: subnormal max, UF|NX.
    assert_eq!(fl_of(|f| f64_to_f32(x, Rm::Rtz, f)), (0x007f_ffff, UF | NX));
    // RUP: 2^-126, not tiny (unbounded rounding up also gives 2^-126).
    assert_eq!(fl_of(|f| f64_to_f32(x, Rm::Rup, f)), (0x0080_0000, NX));
    // Exact subnormal results raise nothing.
    assert_eq!(
        fl_of(|f| f32_mul(0x0080_0000, 0x3f00_0000, Rm::Rne, f)),
        (0x0040_0000, 0)
    );
    // Inexact subnormal result: UF|NX.
    assert_eq!(
        fl_of(|f| f32_mul(0x0000_0001, 0x3f00_0000, Rm::Rne, f)),
        (0, UF | NX)
    );
    assert_eq!(
        fl_of(|f| f32_mul(0x0000_0001, 0x3f00_0000, Rm::Rup, f)),
        (1, UF | NX)
    );
}

#[test]
fn min_max() {
    let mut fl = 0;
    assert_eq!(f32_min(S_QNAN, S_ONE, &mut fl), S_ONE);
    assert_eq!(f32_max(S_ONE, S_QNAN_PAYLOAD, &mut fl), S_ONE);
    assert_eq!(fl, 0);
    assert_eq!(fl_of(|f| f32_min(S_SNAN, S_ONE, f)), (S_ONE, NV));
    assert_eq!(fl_of(|f| f32_max(S_ONE, S_SNAN, f)), (S_ONE, NV));
    assert_eq!(fl_of(|f| f32_min(S_SNAN, S_QNAN, f)), (F32_DEFAULT_NAN, NV));
    assert_eq!(
        fl_of(|f| f32_max(S_QNAN_PAYLOAD, S_QNAN_PAYLOAD, f)),
        (F32_DEFAULT_NAN, 0)
    );
    assert_eq!(fl_of(|f| f32_min(0, S_NZERO, f)), (S_NZERO, 0));
    assert_eq!(fl_of(|f| f32_min(S_NZERO, 0, f)), (S_NZERO, 0));
    assert_eq!(fl_of(|f| f32_max(0, S_NZERO, f)), (0, 0));
    assert_eq!(fl_of(|f| f32_max(S_NZERO, 0, f)), (0, 0));
    assert_eq!(fl_of(|f| f64_min(D_NZERO, 0, f)), (D_NZERO, 0));
    assert_eq!(fl_of(|f| f64_max(D_NZERO, 0, f)), (0, 0));
    assert_eq!(fl_of(|f| f64_max(D_SNAN, D_ONE, f)), (D_ONE, NV));
    assert_eq!(fl_of(|f| f64_min(D_SNAN, D_SNAN, f)), (F64_DEFAULT_NAN, NV));
    assert_eq!(fl_of(|f| f32_min(S_NINF, S_MAX, f)), (S_NINF, 0));
    assert_eq!(fl_of(|f| f32_max(S_NINF, S_MAX, f)), (S_MAX, 0));
}

#[test]
fn compares() {
    let mut fl = 0;
    assert!(!f32_eq(S_QNAN, S_QNAN, &mut fl));
    assert!(f32_eq(0, S_NZERO, &mut fl));
    assert!(f32_le(S_NZERO, 0, &mut fl));
    assert!(!f32_lt(S_NZERO, 0, &mut fl));
    assert_eq!(fl, 0);
    assert_eq!(fl_of(|f| f32_eq(S_SNAN, S_ONE, f)), (false, NV));
    assert_eq!(fl_of(|f| f32_lt(S_QNAN, S_ONE, f)), (false, NV));
    assert_eq!(fl_of(|f| f32_le(S_ONE, S_QNAN, f)), (false, NV));
    assert_eq!(fl_of(|f| f64_eq(F64_DEFAULT_NAN, D_ONE, f)), (false, 0));
    assert_eq!(fl_of(|f| f64_lt(F64_DEFAULT_NAN, D_ONE, f)), (false, NV));
    assert_eq!(fl_of(|f| f64_lt(D_NZERO | D_ONE, D_ONE, f)), (true, 0));
}

#[test]
fn classify_all_classes() {
    let s = [
        (S_NINF, 0),
        (0xbf80_0000, 1),
        (0x8000_0001, 2),
        (S_NZERO, 3),
        (0, 4),
        (0x007f_ffff, 5),
        (S_ONE, 6),
        (S_INF, 7),
        (S_SNAN, 8),
        (0xff80_0001, 8),
        (S_QNAN, 9),
        (S_QNAN_PAYLOAD, 9),
    ];
    for (x, bit) in s {
        assert_eq!(f32_classify(x), 1 << bit, "{x:#x}");
    }
    let d = [
        (0xfff0_0000_0000_0000, 0),
        (D_NZERO | D_ONE, 1),
        (D_NZERO | 1, 2),
        (D_NZERO, 3),
        (0, 4),
        (1, 5),
        (D_ONE, 6),
        (0x7ff0_0000_0000_0000, 7),
        (D_SNAN, 8),
        (F64_DEFAULT_NAN, 9),
    ];
    for (x, bit) in d {
        assert_eq!(f64_classify(x), 1 << bit, "{x:#x}");
    }
}

#[test]
fn float_to_int_saturation() {
    let rne = Rm::Rne;
    for nan in [S_QNAN, S_SNAN, S_QNAN_PAYLOAD] {
        assert_eq!(fl_of(|f| f32_to_i32(nan, rne, f)), (i32::MAX, NV));
        assert_eq!(fl_of(|f| f32_to_u32(nan, rne, f)), (u32::MAX, NV));
        assert_eq!(fl_of(|f| f32_to_i64(nan, rne, f)), (i64::MAX, NV));
        assert_eq!(fl_of(|f| f32_to_u64(nan, rne, f)), (u64::MAX, NV));
    }
    assert_eq!(
        fl_of(|f| f64_to_i32(F64_DEFAULT_NAN, rne, f)),
        (i32::MAX, NV)
    );
    assert_eq!(
        fl_of(|f| f64_to_u64(D_QNAN_PAYLOAD, rne, f)),
        (u64::MAX, NV)
    );
    assert_eq!(fl_of(|f| f32_to_i32(S_INF, rne, f)), (i32::MAX, NV));
    assert_eq!(fl_of(|f| f32_to_i32(S_NINF, rne, f)), (i32::MIN, NV));
    assert_eq!(fl_of(|f| f32_to_u32(S_NINF, rne, f)), (0, NV));
    assert_eq!(fl_of(|f| f32_to_u64(S_INF, rne, f)), (u64::MAX, NV));
    // -0.3 RTZ -> 0 with only NX; -1.0 -> 0 with NV; -0.7 RNE rounds to -1.
    let m03 = (-0.3f32).to_bits();
    let m07 = (-0.7f32).to_bits();
    assert_eq!(fl_of(|f| f32_to_u32(m03, Rm::Rtz, f)), (0, NX));
    assert_eq!(fl_of(|f| f32_to_u32(m03, Rm::Rne, f)), (0, NX));
    assert_eq!(fl_of(|f| f32_to_u32(m03, Rm::Rdn, f)), (0, NV));
    assert_eq!(fl_of(|f| f32_to_u32(0xbf80_0000, Rm::Rtz, f)), (0, NV));
    assert_eq!(fl_of(|f| f32_to_u32(m07, Rm::Rne, f)), (0, NV));
    assert_eq!(fl_of(|f| f32_to_u64(m07, Rm::Rtz, f)), (0, NX));
    assert_eq!(fl_of(|f| f32_to_u32(S_NZERO, rne, f)), (0, 0));
    // Range boundaries.
    let two31 = 0x4f00_0000;
    assert_eq!(fl_of(|f| f32_to_i32(two31, rne, f)), (i32::MAX, NV));
    assert_eq!(
        fl_of(|f| f32_to_i32(two31 | S_NZERO, rne, f)),
        (i32::MIN, 0)
    );
    assert_eq!(fl_of(|f| f32_to_u32(two31, rne, f)), (0x8000_0000, 0));
    assert_eq!(fl_of(|f| f32_to_i64(0xdf00_0000, rne, f)), (i64::MIN, 0));
    assert_eq!(fl_of(|f| f32_to_u64(0x5f80_0000, rne, f)), (u64::MAX, NV));
    let x = 4294967295.5f64.to_bits();
    assert_eq!(fl_of(|f| f64_to_u32(x, Rm::Rne, f)), (u32::MAX, NV));
    assert_eq!(fl_of(|f| f64_to_u32(x, Rm::Rtz, f)), (u32::MAX, NX));
    let x = (-2147483648.5f64).to_bits();
    assert_eq!(fl_of(|f| f64_to_i32(x, Rm::Rne, f)), (i32::MIN, NX));
    assert_eq!(fl_of(|f| f64_to_i32(x, Rm::Rmm, f)), (i32::MIN, NV));
    assert_eq!(fl_of(|f| f64_to_i32(2.5f64.to_bits(), Rm::Rne, f)), (2, NX));
    assert_eq!(fl_of(|f| f64_to_i32(2.5f64.to_bits(), Rm::Rmm, f)), (3, NX));
    assert_eq!(
        fl_of(|f| f64_to_i32((-2.5f64).to_bits(), Rm::Rdn, f)),
        (-3, NX)
    );
    assert_eq!(
        fl_of(|f| f64_to_i32((-2.5f64).to_bits(), Rm::Rup, f)),
        (-2, NX)
    );
}

#[test]
fn int_to_float() {
    assert_eq!(
        fl_of(|f| i32_to_f32(16_777_217, Rm::Rne, f)),
        (0x4b80_0000, NX)
    );
    assert_eq!(
        fl_of(|f| i32_to_f32(16_777_217, Rm::Rup, f)),
        (0x4b80_0001, NX)
    );
    assert_eq!(
        fl_of(|f| u64_to_f64(u64::MAX, Rm::Rtz, f)),
        (0x43ef_ffff_ffff_ffff, NX)
    );
    assert_eq!(
        fl_of(|f| u64_to_f64(u64::MAX, Rm::Rne, f)),
        (0x43f0_0000_0000_0000, NX)
    );
    assert_eq!(
        fl_of(|f| i64_to_f64(i64::MIN, Rm::Rne, f)),
        (0xc3e0_0000_0000_0000, 0)
    );
    assert_eq!(
        fl_of(|f| i32_to_f64(-1, Rm::Rne, f)),
        ((-1.0f64).to_bits(), 0)
    );
    assert_eq!(fl_of(|f| u32_to_f32(0, Rm::Rdn, f)), (0, 0));
}

#[test]
fn thread_safety_smoke() {
    // Different rounding modes on different threads must not interfere.
    let hs: Vec<_> = RMS
        .iter()
        .map(|&rm| {
            std::thread::spawn(move || {
                let mut acc = 0u32;
                for i in 0..20_000u32 {
                    let mut fl = 0;
                    acc ^= f32_div(S_ONE.wrapping_add(i), 0x4040_0000, rm, &mut fl);
                }
                acc
            })
        })
        .collect();
    let got: Vec<u32> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    for (rm, g) in RMS.iter().zip(got) {
        let mut acc = 0u32;
        for i in 0..20_000u32 {
            let mut fl = 0;
            acc ^= f32_div(S_ONE.wrapping_add(i), 0x4040_0000, *rm, &mut fl);
        }
        assert_eq!(acc, g);
    }
}

// ---------------------------------------------------------------------------
// Randomized comparison against Berkeley SoftFloat (RISCV specialization)
// ---------------------------------------------------------------------------

use rvtrace_testkit::Rng;

/// A random fraction field biased to patterns that produce ties, carries and
/// exact results.
fn gen_frac(r: &mut Rng, f: Fmt) -> u64 {
    let mask = f.frac_mask();
    match r.below(10) {
        0 => 0,
        1 => mask,
        2 => 1 << r.below(f.frac as u64),
        3 => mask - r.below(4),
        4 => r.below(4),
        5 | 6 => {
            // Short significand: few significant bits.
            let keep = r.below(f.frac as u64 + 1);
            (r.next_u64() & mask) >> (f.frac as u64 - keep) << (f.frac as u64 - keep)
        }
        7 => (r.next_u64() & mask) | (mask >> r.below(f.frac as u64)),
        _ => r.next_u64() & mask,
    }
}

/// A random operand biased to edge cases.
fn gen_float(r: &mut Rng, f: Fmt) -> u64 {
    let emax = f.exp_all_ones();
    let bias = f.bias() as u64;
    let sign = (r.coin() as u64) << f.sign_shift();
    let exp = match r.below(16) {
        0 | 1 => 0,
        2 => emax,
        3 => emax - 1 - r.below(4),
        4 => 1 + r.below(4),
        5..=7 => bias - 8 + r.below(16),
        8 => bias + r.below(72),
        9 => bias - r.below(bias),
        _ => r.below(emax + 1),
    };
    sign | (exp << f.frac) | gen_frac(r, f)
}

/// A second operand: independent, or related to `a` to provoke cancellation,
/// ties and near-equal comparisons.
fn gen_related(r: &mut Rng, f: Fmt, a: u64) -> u64 {
    let width_mask = (f.sign_mask() << 1).wrapping_sub(1);
    width_mask
        & match r.below(8) {
            0 => a ^ f.sign_mask(),
            1 => {
                // Same magnitude range, small bit-distance.
                let d = r.below(8);
                if r.coin() {
                    a.wrapping_add(d)
                } else {
                    a.wrapping_sub(d)
                }
            }
            2 => {
                // Nearby exponent, fresh fraction.
                let e = f.exp_field(a) as i64 + r.below(60) as i64 - 30;
                let e = e.clamp(0, f.exp_all_ones() as i64) as u64;
                ((r.coin() as u64) << f.sign_shift()) | (e << f.frac) | gen_frac(r, f)
            }
            _ => gen_float(r, f),
        }
}

/// A random integer biased to conversion boundaries.
fn gen_int(r: &mut Rng) -> u64 {
    match r.below(6) {
        0 => {
            let b = r.below(64);
            (1u64 << b).wrapping_add(r.below(9)).wrapping_sub(4)
        }
        1 => {
            // Random length with tie patterns below bit k.
            let len = 1 + r.below(64);
            let k = r.below(len);
            let v = r.next_u64() >> (64 - len);
            let v = v >> k << k;
            if k > 0 {
                v | (1 << (k - 1))
            } else {
                v
            }
        }
        2 => r.next_u64() >> r.below(64),
        3 => r.next_u64().wrapping_neg() >> r.below(64),
        4 => (r.next_u64() >> r.below(64)).wrapping_neg(),
        _ => r.next_u64(),
    }
}

fn sf_begin(rm: Rm) {
    unsafe {
        sf::softfloat_roundingMode_write_helper(rm as u8);
        sf::softfloat_exceptionFlags_write_helper(0);
    }
}

fn sf_flags() -> u8 {
    unsafe { sf::softfloat_exceptionFlags_read_helper() }
}

fn s32(v: u32) -> sf::float32_t {
    sf::float32_t { v }
}

fn s64(v: u64) -> sf::float64_t {
    sf::float64_t { v }
}

/// Number of random operand sets per operation (each checked in all five
/// rounding modes). Override with `RVTRACE_FPU_CASES`.
fn cases(default: usize) -> usize {
    std::env::var("RVTRACE_FPU_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

const DEFAULT_CASES: usize = 500_000;

/// Random seed for stream `k`, varied by `RVTRACE_FPU_SEED` (default 0).
fn seed(k: u64) -> u64 {
    let base: u64 = std::env::var("RVTRACE_FPU_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    k ^ base.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

#[track_caller]
fn same<T: PartialEq + std::fmt::LowerHex>(
    op: &str,
    args: &[u64],
    rm: Rm,
    got: (T, u8),
    want: (T, u8),
) {
    if got != want {
        let a: Vec<String> = args.iter().map(|x| format!("{x:#x}")).collect();
        panic!(
            "{op}({}) {rm:?}: got {:#x} flags {:#04x}, softfloat {:#x} flags {:#04x}",
            a.join(", "),
            got.0,
            got.1,
            want.0,
            want.1
        );
    }
}

type SfBin32 = unsafe extern "C" fn(sf::float32_t, sf::float32_t) -> sf::float32_t;
type SfBin64 = unsafe extern "C" fn(sf::float64_t, sf::float64_t) -> sf::float64_t;

fn bin32(
    name: &str,
    n: usize,
    seed_k: u64,
    mine: fn(u32, u32, Rm, &mut u8) -> u32,
    oracle: SfBin32,
) {
    let mut r = Rng(seed(seed_k));
    for _ in 0..n {
        let a = gen_float(&mut r, F32);
        let b = gen_related(&mut r, F32, a);
        let (a, b) = (a as u32, b as u32);
        for rm in RMS {
            let got = fl_of(|f| mine(a, b, rm, f));
            sf_begin(rm);
            let want = unsafe { oracle(s32(a), s32(b)).v };
            same(name, &[a as u64, b as u64], rm, got, (want, sf_flags()));
        }
    }
}

fn bin64(
    name: &str,
    n: usize,
    seed_k: u64,
    mine: fn(u64, u64, Rm, &mut u8) -> u64,
    oracle: SfBin64,
) {
    let mut r = Rng(seed(seed_k));
    for _ in 0..n {
        let a = gen_float(&mut r, F64);
        let b = gen_related(&mut r, F64, a);
        for rm in RMS {
            let got = fl_of(|f| mine(a, b, rm, f));
            sf_begin(rm);
            let want = unsafe { oracle(s64(a), s64(b)).v };
            same(name, &[a, b], rm, got, (want, sf_flags()));
        }
    }
}

fn run_arith(n: usize) {
    bin32("f32_add", n, 1, f32_add, sf::f32_add);
    bin32("f32_sub", n, 2, f32_sub, sf::f32_sub);
    bin32("f32_mul", n, 3, f32_mul, sf::f32_mul);
    bin32("f32_div", n, 4, f32_div, sf::f32_div);
    bin64("f64_add", n, 5, f64_add, sf::f64_add);
    bin64("f64_sub", n, 6, f64_sub, sf::f64_sub);
    bin64("f64_mul", n, 7, f64_mul, sf::f64_mul);
    bin64("f64_div", n, 8, f64_div, sf::f64_div);
}

fn run_sqrt(n: usize) {
    let mut r = Rng(seed(11));
    for i in 0..n {
        let a = gen_float(&mut r, F32) as u32;
        // Half of the cases on positive operands (the interesting ones).
        let a = if i % 2 == 0 { a & 0x7fff_ffff } else { a };
        let d = gen_float(&mut r, F64);
        let d = if i % 2 == 0 { d & !(1 << 63) } else { d };
        for rm in RMS {
            let got = fl_of(|f| f32_sqrt(a, rm, f));
            sf_begin(rm);
            let want = unsafe { sf::f32_sqrt(s32(a)).v };
            same("f32_sqrt", &[a as u64], rm, got, (want, sf_flags()));
            let got = fl_of(|f| f64_sqrt(d, rm, f));
            sf_begin(rm);
            let want = unsafe { sf::f64_sqrt(s64(d)).v };
            same("f64_sqrt", &[d], rm, got, (want, sf_flags()));
        }
    }
}

/// Negates the product/addend the way RISC-V fmsub/fnmsub/fnmadd do, via
/// operand sign flips for the oracle (which only has a*b+c).
fn run_fma(n: usize) {
    let mut r = Rng(seed(21));
    for _ in 0..n {
        let (negp, negc) = (r.coin(), r.coin());
        // binary32
        let a = gen_float(&mut r, F32) as u32;
        let b = gen_related(&mut r, F32, a as u64) as u32;
        let c = match r.below(4) {
            0 => {
                // Near-cancellation with the rounded product.
                // c chosen so that (±a*b) ± c nearly cancels.
                let mut fl = 0;
                let p = f32_mul(a, b, Rm::Rne, &mut fl) ^ (((negp == negc) as u32) << 31);
                p.wrapping_add(r.below(5) as u32).wrapping_sub(2)
            }
            _ => gen_related(&mut r, F32, a as u64) as u32,
        };
        let oa = a ^ ((negp as u32) << 31);
        let oc = c ^ ((negc as u32) << 31);
        for rm in RMS {
            let got = fl_of(|f| f32_fma(a, b, c, negp, negc, rm, f));
            sf_begin(rm);
            let want = unsafe { sf::f32_mulAdd(s32(oa), s32(b), s32(oc)).v };
            let args = [a as u64, b as u64, c as u64, negp as u64, negc as u64];
            same("f32_fma", &args, rm, got, (want, sf_flags()));
        }
        // binary64
        let a = gen_float(&mut r, F64);
        let b = gen_related(&mut r, F64, a);
        let c = match r.below(4) {
            0 => {
                let mut fl = 0;
                let p = f64_mul(a, b, Rm::Rne, &mut fl);
                let p = p ^ (((negp == negc) as u64) << 63);
                p.wrapping_add(r.below(5)).wrapping_sub(2)
            }
            _ => gen_related(&mut r, F64, a),
        };
        let oa = a ^ ((negp as u64) << 63);
        let oc = c ^ ((negc as u64) << 63);
        for rm in RMS {
            let got = fl_of(|f| f64_fma(a, b, c, negp, negc, rm, f));
            sf_begin(rm);
            let want = unsafe { sf::f64_mulAdd(s64(oa), s64(b), s64(oc)).v };
            same(
                "f64_fma",
                &[a, b, c, negp as u64, negc as u64],
                rm,
                got,
                (want, sf_flags()),
            );
        }
    }
}

fn run_compare(n: usize) {
    let mut r = Rng(seed(31));
    let cmp = |name: &str, args: &[u64], got: (bool, u8), want: bool| {
        same(
            name,
            args,
            Rm::Rne,
            (got.0 as u8, got.1),
            (want as u8, sf_flags()),
        );
    };
    for _ in 0..n * 5 {
        let a = gen_float(&mut r, F32) as u32;
        let b = gen_related(&mut r, F32, a as u64) as u32;
        let args = [a as u64, b as u64];
        sf_begin(Rm::Rne);
        let w = unsafe { sf::f32_eq(s32(a), s32(b)) };
        cmp("f32_eq", &args, fl_of(|f| f32_eq(a, b, f)), w);
        sf_begin(Rm::Rne);
        let w = unsafe { sf::f32_lt(s32(a), s32(b)) };
        cmp("f32_lt", &args, fl_of(|f| f32_lt(a, b, f)), w);
        sf_begin(Rm::Rne);
        let w = unsafe { sf::f32_le(s32(a), s32(b)) };
        cmp("f32_le", &args, fl_of(|f| f32_le(a, b, f)), w);

        let a = gen_float(&mut r, F64);
        let b = gen_related(&mut r, F64, a);
        let args = [a, b];
        sf_begin(Rm::Rne);
        let w = unsafe { sf::f64_eq(s64(a), s64(b)) };
        cmp("f64_eq", &args, fl_of(|f| f64_eq(a, b, f)), w);
        sf_begin(Rm::Rne);
        let w = unsafe { sf::f64_lt(s64(a), s64(b)) };
        cmp("f64_lt", &args, fl_of(|f| f64_lt(a, b, f)), w);
        sf_begin(Rm::Rne);
        let w = unsafe { sf::f64_le(s64(a), s64(b)) };
        cmp("f64_le", &args, fl_of(|f| f64_le(a, b, f)), w);
    }
}

fn run_convert(n: usize) {
    let mut r = Rng(seed(41));
    for _ in 0..n {
        let a = gen_float(&mut r, F32) as u32;
        let d = gen_float(&mut r, F64);
        let i = gen_int(&mut r);
        for rm in RMS {
            let m = rm as u8;
            macro_rules! chk {
                ($name:literal, $args:expr, $got:expr, $want:expr) => {{
                    let got = fl_of($got);
                    sf_begin(rm);
                    let want = unsafe { $want };
                    same($name, $args, rm, got, (want, sf_flags()));
                }};
            }
            let aa = [a as u64];
            chk!(
                "f32_to_i32",
                &aa,
                |f| f32_to_i32(a, rm, f) as u32,
                sf::f32_to_i32(s32(a), m, true) as u32
            );
            chk!(
                "f32_to_u32",
                &aa,
                |f| f32_to_u32(a, rm, f),
                sf::f32_to_ui32(s32(a), m, true) as u32
            );
            chk!(
                "f32_to_i64",
                &aa,
                |f| f32_to_i64(a, rm, f) as u64,
                sf::f32_to_i64(s32(a), m, true) as u64
            );
            chk!(
                "f32_to_u64",
                &aa,
                |f| f32_to_u64(a, rm, f),
                sf::f32_to_ui64(s32(a), m, true)
            );
            let da = [d];
            chk!(
                "f64_to_i32",
                &da,
                |f| f64_to_i32(d, rm, f) as u32,
                sf::f64_to_i32(s64(d), m, true) as u32
            );
            chk!(
                "f64_to_u32",
                &da,
                |f| f64_to_u32(d, rm, f),
                sf::f64_to_ui32(s64(d), m, true) as u32
            );
            chk!(
                "f64_to_i64",
                &da,
                |f| f64_to_i64(d, rm, f) as u64,
                sf::f64_to_i64(s64(d), m, true) as u64
            );
            chk!(
                "f64_to_u64",
                &da,
                |f| f64_to_u64(d, rm, f),
                sf::f64_to_ui64(s64(d), m, true)
            );
            chk!(
                "f64_to_f32",
                &da,
                |f| f64_to_f32(d, rm, f),
                sf::f64_to_f32(s64(d)).v
            );
            chk!(
                "f32_to_f64",
                &aa,
                |f| f32_to_f64(a, f),
                sf::f32_to_f64(s32(a)).v
            );
            let ia = [i];
            let (i32v, i64v) = (i as i32, i as i64);
            chk!(
                "i32_to_f32",
                &ia,
                |f| i32_to_f32(i32v, rm, f),
                sf::i32_to_f32(i32v).v
            );
            chk!(
                "u32_to_f32",
                &ia,
                |f| u32_to_f32(i as u32, rm, f),
                sf::ui32_to_f32(i as u32).v
            );
            chk!(
                "i64_to_f32",
                &ia,
                |f| i64_to_f32(i64v, rm, f),
                sf::i64_to_f32(i64v).v
            );
            chk!(
                "u64_to_f32",
                &ia,
                |f| u64_to_f32(i, rm, f),
                sf::ui64_to_f32(i).v
            );
            chk!(
                "i32_to_f64",
                &ia,
                |f| i32_to_f64(i32v, rm, f),
                sf::i32_to_f64(i32v).v
            );
            chk!(
                "u32_to_f64",
                &ia,
                |f| u32_to_f64(i as u32, rm, f),
                sf::ui32_to_f64(i as u32).v
            );
            chk!(
                "i64_to_f64",
                &ia,
                |f| i64_to_f64(i64v, rm, f),
                sf::i64_to_f64(i64v).v
            );
            chk!(
                "u64_to_f64",
                &ia,
                |f| u64_to_f64(i, rm, f),
                sf::ui64_to_f64(i).v
            );
        }
    }
}

/// minimumNumber/maximumNumber and fclass have no SoftFloat counterpart;
/// check them against a straightforward model built on host comparisons.
fn run_minmax_classify(n: usize) {
    fn model(a: u64, b: u64, f: Fmt, max: bool) -> (u64, u8) {
        let fl = if f.is_snan(a) || f.is_snan(b) { NV } else { 0 };
        let val = |x: u64| {
            if f.frac == 23 {
                f32::from_bits(x as u32) as f64
            } else {
                f64::from_bits(x)
            }
        };
        let (x, y) = (val(a), val(b));
        let r = match (x.is_nan(), y.is_nan()) {
            (true, true) => f.default_nan(),
            (true, false) => b,
            (false, true) => a,
            _ if x == y => {
                // Equal: pick by sign (matters only for zeros).
                let a_neg = f.sign(a);
                if a_neg != max {
                    a
                } else {
                    b
                }
            }
            _ if (x < y) != max => a,
            _ => b,
        };
        (r, fl)
    }
    fn class_model(x: f64, neg: bool, quiet: bool) -> u32 {
        use std::num::FpCategory::*;
        let bit = match (x.classify(), neg) {
            (Infinite, true) => 0,
            (Normal, true) => 1,
            (Subnormal, true) => 2,
            (Zero, true) => 3,
            (Zero, false) => 4,
            (Subnormal, false) => 5,
            (Normal, false) => 6,
            (Infinite, false) => 7,
            (Nan, _) => 8 + quiet as u32,
        };
        1 << bit
    }
    let mut r = Rng(seed(51));
    for _ in 0..n * 5 {
        let a = gen_float(&mut r, F32);
        let b = gen_related(&mut r, F32, a);
        let (a32, b32) = (a as u32, b as u32);
        same(
            "f32_min",
            &[a, b],
            Rm::Rne,
            fl_of(|f| f32_min(a32, b32, f) as u64),
            model(a, b, F32, false),
        );
        same(
            "f32_max",
            &[a, b],
            Rm::Rne,
            fl_of(|f| f32_max(a32, b32, f) as u64),
            model(a, b, F32, true),
        );
        let x = f32::from_bits(a32);
        let want = match x.classify() {
            std::num::FpCategory::Nan => class_model(f64::NAN, false, a32 & 0x40_0000 != 0),
            _ => class_model(x as f64, x.is_sign_negative(), false),
        };
        // f32 subnormals are normal in f64; classify them in f32 instead.
        let want = if x.is_subnormal() {
            if x.is_sign_negative() {
                1 << 2
            } else {
                1 << 5
            }
        } else {
            want
        };
        assert_eq!(f32_classify(a32), want, "f32_classify({a32:#x})");

        let a = gen_float(&mut r, F64);
        let b = gen_related(&mut r, F64, a);
        same(
            "f64_min",
            &[a, b],
            Rm::Rne,
            fl_of(|f| f64_min(a, b, f)),
            model(a, b, F64, false),
        );
        same(
            "f64_max",
            &[a, b],
            Rm::Rne,
            fl_of(|f| f64_max(a, b, f)),
            model(a, b, F64, true),
        );
        let x = f64::from_bits(a);
        let want = class_model(x, x.is_sign_negative(), a & (1 << 51) != 0);
        assert_eq!(f64_classify(a), want, "f64_classify({a:#x})");
    }
}

#[test]
fn oracle_arith() {
    run_arith(cases(DEFAULT_CASES));
}

#[test]
fn oracle_sqrt() {
    run_sqrt(cases(DEFAULT_CASES));
}

#[test]
fn oracle_fma() {
    run_fma(cases(DEFAULT_CASES));
}

#[test]
fn oracle_compare() {
    run_compare(cases(DEFAULT_CASES));
}

#[test]
fn oracle_convert() {
    run_convert(cases(DEFAULT_CASES));
}

#[test]
fn model_minmax_classify() {
    run_minmax_classify(cases(DEFAULT_CASES));
}

/// The long run: `cargo test -p rvtrace-sim --release fpu -- --ignored`
/// (scale with `RVTRACE_FPU_CASES`, default 2,000,000 operand sets per op).
#[test]
#[ignore]
fn oracle_big() {
    let n = cases(2_000_000);
    std::thread::scope(|s| {
        s.spawn(|| run_arith(n));
        s.spawn(|| run_sqrt(n));
        s.spawn(|| run_fma(n));
        s.spawn(|| run_compare(n));
        s.spawn(|| run_convert(n));
        s.spawn(|| run_minmax_classify(n));
    });
}
