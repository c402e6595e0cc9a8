//! IEEE 754 binary32/binary64 arithmetic with RISC-V F/D-extension semantics.
//!
//! Every function works on raw bit patterns and accumulates the RISC-V
//! `fflags` exception bits into `fl` (by OR). Behaviour follows the RISC-V
//! unprivileged spec (ISA 20191213) as implemented by QEMU 7.2:
//!
//! * every NaN-producing operation returns the canonical NaN
//!   ([`F32_DEFAULT_NAN`] / [`F64_DEFAULT_NAN`]); payloads never propagate;
//! * tininess is detected after rounding, and underflow is flagged only
//!   when the tiny result is also inexact;
//! * `fmin`/`fmax` are IEEE 754-2019 `minimumNumber`/`maximumNumber`;
//! * float-to-integer conversions saturate and raise NV (NaN converts to
//!   the largest positive integer);
//! * `feq` is quiet, `flt`/`fle` are signaling.
//!
//! Implementation: an exact software path (integer significands in `u128`
//! with round/sticky information, a single generic rounding routine) handles
//! every rounding mode and every special case. Round-to-nearest-even, the
//! common case, first tries a fast path that uses host IEEE arithmetic for the
//! result and error-free transformations (TwoSum, FMA residuals, exact
//! products in wider precision) to derive the inexact flag; whenever the fast
//! path cannot prove its flags (tiny/huge results, special operands) it
//! defers to the software path. All functions are pure, so they are safe to
//! call from any number of threads.

/// Rounding mode (static rm field values; the executor resolves DYN=7 from
/// `frm` and rejects the reserved encodings 5 and 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rm {
    /// Round to nearest, ties to even.
    Rne = 0,
    /// Round towards zero.
    Rtz = 1,
    /// Round down (towards negative infinity).
    Rdn = 2,
    /// Round up (towards positive infinity).
    Rup = 3,
    /// Round to nearest, ties to max magnitude.
    Rmm = 4,
}

impl Rm {
    /// Decodes a 3-bit rounding-mode field; `None` for 5, 6 and 7 (DYN).
    pub fn from_bits(b: u32) -> Option<Rm> {
        match b {
            0 => Some(Rm::Rne),
            1 => Some(Rm::Rtz),
            2 => Some(Rm::Rdn),
            3 => Some(Rm::Rup),
            4 => Some(Rm::Rmm),
            _ => None,
        }
    }
}

/// Accrued exception flag bits, as laid out in the `fflags` CSR.
pub mod flags {
    /// Inexact.
    pub const NX: u8 = 1;
    /// Underflow.
    pub const UF: u8 = 2;
    /// Overflow.
    pub const OF: u8 = 4;
    /// Divide by zero.
    pub const DZ: u8 = 8;
    /// Invalid operation.
    pub const NV: u8 = 16;
}

use flags::{DZ, NV, NX, OF, UF};

/// The canonical single-precision NaN.
pub const F32_DEFAULT_NAN: u32 = 0x7fc0_0000;
/// The canonical double-precision NaN.
pub const F64_DEFAULT_NAN: u64 = 0x7ff8_0000_0000_0000;

/// Whether host floating-point arithmetic is trusted to be IEEE 754 exact
/// (round-to-nearest-even, subnormals honoured) for the fast paths.
const FAST: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

// ---------------------------------------------------------------------------
// Format description and bit-level helpers
// ---------------------------------------------------------------------------

/// A binary interchange format; bit patterns are carried in the low bits of a
/// `u64`.
#[derive(Clone, Copy)]
struct Fmt {
    /// Number of stored fraction bits (precision minus one).
    frac: u32,
    /// Number of exponent bits.
    ebits: u32,
}

const F32: Fmt = Fmt { frac: 23, ebits: 8 };
const F64: Fmt = Fmt {
    frac: 52,
    ebits: 11,
};

impl Fmt {
    #[inline(always)]
    const fn sign_shift(self) -> u32 {
        self.frac + self.ebits
    }
    #[inline(always)]
    const fn sign_mask(self) -> u64 {
        1 << self.sign_shift()
    }
    #[inline(always)]
    const fn exp_all_ones(self) -> u64 {
        (1 << self.ebits) - 1
    }
    #[inline(always)]
    const fn bias(self) -> i32 {
        (1 << (self.ebits - 1)) - 1
    }
    #[inline(always)]
    const fn frac_mask(self) -> u64 {
        (1 << self.frac) - 1
    }
    #[inline(always)]
    const fn quiet_bit(self) -> u64 {
        1 << (self.frac - 1)
    }
    #[inline(always)]
    const fn sign(self, a: u64) -> bool {
        (a >> self.sign_shift()) & 1 != 0
    }
    #[inline(always)]
    const fn exp_field(self, a: u64) -> u64 {
        (a >> self.frac) & self.exp_all_ones()
    }
    #[inline(always)]
    const fn abs(self, a: u64) -> u64 {
        a & (self.sign_mask() - 1)
    }
    #[inline(always)]
    const fn is_nan(self, a: u64) -> bool {
        self.abs(a) > self.exp_all_ones() << self.frac
    }
    #[inline(always)]
    const fn is_snan(self, a: u64) -> bool {
        self.is_nan(a) && a & self.quiet_bit() == 0
    }
    #[inline(always)]
    const fn is_inf(self, a: u64) -> bool {
        self.abs(a) == self.exp_all_ones() << self.frac
    }
    #[inline(always)]
    const fn is_zero(self, a: u64) -> bool {
        self.abs(a) == 0
    }
    #[inline(always)]
    const fn default_nan(self) -> u64 {
        (self.exp_all_ones() << self.frac) | self.quiet_bit()
    }
    #[inline(always)]
    const fn inf(self, sign: bool) -> u64 {
        ((sign as u64) << self.sign_shift()) | (self.exp_all_ones() << self.frac)
    }
    #[inline(always)]
    const fn zero(self, sign: bool) -> u64 {
        (sign as u64) << self.sign_shift()
    }
    #[inline(always)]
    const fn max_finite(self, sign: bool) -> u64 {
        self.inf(sign) - 1
    }
    /// Splits a finite nonzero value into `(m, e)` with value `m * 2^e` and
    /// the most significant bit of `m` at position `frac` (subnormals are
    /// normalised).
    #[inline(always)]
    fn unpack(self, a: u64) -> (u64, i32) {
        let ef = self.exp_field(a);
        let f = a & self.frac_mask();
        if ef == 0 {
            let sh = f.leading_zeros() - (63 - self.frac);
            (f << sh, 1 - self.bias() - self.frac as i32 - sh as i32)
        } else {
            (
                f | (1 << self.frac),
                ef as i32 - self.bias() - self.frac as i32,
            )
        }
    }
}

// ---------------------------------------------------------------------------
// Exact software path
// ---------------------------------------------------------------------------

/// Where the discarded part of a value lies relative to half a unit in the
/// last kept place.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rest {
    Exact,
    Below,
    Half,
    Above,
}

/// `sig >> sh` (for `sh > 0`) together with the classification of the bits
/// shifted out.
#[inline]
fn shift_right_round(sig: u128, sh: u32) -> (u128, Rest) {
    debug_assert!(sh > 0 && sig != 0);
    if sh > 128 {
        return (0, Rest::Below);
    }
    let (m, rem, half) = if sh == 128 {
        (0, sig, 1u128 << 127)
    } else {
        (sig >> sh, sig & ((1u128 << sh) - 1), 1u128 << (sh - 1))
    };
    let rest = if rem == 0 {
        Rest::Exact
    } else if rem < half {
        Rest::Below
    } else if rem == half {
        Rest::Half
    } else {
        Rest::Above
    };
    (m, rest)
}

/// Whether the truncated magnitude must be incremented.
#[inline]
fn round_up(rm: Rm, sign: bool, odd: bool, rest: Rest) -> bool {
    if rest == Rest::Exact {
        return false;
    }
    match rm {
        Rm::Rne => rest == Rest::Above || (rest == Rest::Half && odd),
        Rm::Rmm => rest != Rest::Below,
        Rm::Rtz => false,
        Rm::Rdn => sign,
        Rm::Rup => !sign,
    }
}

/// Result of an overflowing operation for the given sign and rounding mode.
#[inline]
fn overflow_result(f: Fmt, sign: bool, rm: Rm) -> u64 {
    let to_inf = match rm {
        Rm::Rne | Rm::Rmm => true,
        Rm::Rtz => false,
        Rm::Rdn => sign,
        Rm::Rup => !sign,
    };
    if to_inf {
        f.inf(sign)
    } else {
        f.max_finite(sign)
    }
}

/// Rounds the exact nonzero value `(-1)^sign * sig * 2^exp` to format `f`,
/// raising NX/UF/OF as appropriate (tininess detected after rounding).
fn round_pack(f: Fmt, sign: bool, exp: i32, sig: u128, rm: Rm, fl: &mut u8) -> u64 {
    debug_assert!(sig != 0);
    let p = f.frac as i32 + 1;
    let bias = f.bias();
    let emin = 1 - bias;
    // The value lies in [2^top, 2^(top+1)).
    let top = 127 - sig.leading_zeros() as i32 + exp;
    // Quantum (exponent of the last kept bit) with unbounded exponent range.
    let q_unbounded = top - (p - 1);
    let mut q = q_unbounded.max(emin - (p - 1));
    let sh = q - exp;
    let (m, rest) = if sh <= 0 {
        (sig << (-sh) as u32, Rest::Exact)
    } else {
        shift_right_round(sig, sh as u32)
    };
    let mut m = m as u64 + round_up(rm, sign, m & 1 != 0, rest) as u64;
    if m >> p != 0 {
        m >>= 1;
        q += 1;
    }
    let sbit = (sign as u64) << f.sign_shift();
    let inexact = rest != Rest::Exact;
    if inexact {
        *fl |= NX;
    }
    if m >> (p - 1) == 0 {
        // Subnormal or zero result: tiny whatever the rounding did.
        if inexact {
            *fl |= UF;
        }
        return sbit | m;
    }
    let e = q + p - 1;
    if e > bias {
        *fl |= OF | NX;
        return overflow_result(f, sign, rm);
    }
    if top < emin && inexact {
        // Rounded up into the normal range: tiny after rounding unless
        // rounding to p bits with unbounded exponent also reaches 2^emin.
        let tiny = top < emin - 1 || {
            let sh2 = q_unbounded - exp;
            if sh2 <= 0 {
                true
            } else {
                let (m2, r2) = shift_right_round(sig, sh2 as u32);
                let m2 = m2 + round_up(rm, sign, m2 & 1 != 0, r2) as u128;
                m2 >> p == 0
            }
        };
        if tiny {
            *fl |= UF;
        }
    }
    sbit | (((e + bias) as u64) << f.frac) | (m & f.frac_mask())
}

/// Shift right by `d`, OR-ing every shifted-out bit into bit 0.
#[inline]
fn jam_shift(x: u128, d: u32) -> u128 {
    if d == 0 {
        x
    } else if d >= 128 {
        (x != 0) as u128
    } else {
        (x >> d) | ((x << (128 - d)) != 0) as u128
    }
}

/// Rounds `(-1)^sa * ma * 2^ea + (-1)^sb * mb * 2^eb` (both nonzero, each
/// significand below 2^126) to format `f`.
fn sum_round(
    f: Fmt,
    (sa, ea, ma): (bool, i32, u128),
    (sb, eb, mb): (bool, i32, u128),
    rm: Rm,
    fl: &mut u8,
) -> u64 {
    debug_assert!(ma != 0 && mb != 0);
    // Normalise both to have their most significant bit at position 125.
    let na = ma.leading_zeros() - 2;
    let nb = mb.leading_zeros() - 2;
    let (a, ea) = (ma << na, ea - na as i32);
    let (b, eb) = (mb << nb, eb - nb as i32);
    let ((sbig, ebig, big), (ssmall, esmall, small)) = if ea >= eb {
        ((sa, ea, a), (sb, eb, b))
    } else {
        ((sb, eb, b), (sa, ea, a))
    };
    // If the shift loses bits, the smaller operand is below a quarter of the
    // larger, so the sticky bit sits far below the rounding position.
    let small = jam_shift(small, (ebig - esmall) as u32);
    if sbig == ssmall {
        round_pack(f, sbig, ebig, big + small, rm, fl)
    } else if big > small {
        round_pack(f, sbig, ebig, big - small, rm, fl)
    } else if big < small {
        round_pack(f, ssmall, ebig, small - big, rm, fl)
    } else {
        f.zero(rm == Rm::Rdn)
    }
}

/// Raises NV if either operand is a signaling NaN and returns the canonical
/// NaN.
#[inline]
fn nan2(f: Fmt, a: u64, b: u64, fl: &mut u8) -> u64 {
    if f.is_snan(a) || f.is_snan(b) {
        *fl |= NV;
    }
    f.default_nan()
}

/// `a + b` in any rounding mode.
fn add_soft(f: Fmt, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    if f.is_nan(a) || f.is_nan(b) {
        return nan2(f, a, b, fl);
    }
    let (sa, sb) = (f.sign(a), f.sign(b));
    if f.is_inf(a) {
        if f.is_inf(b) && sa != sb {
            *fl |= NV;
            return f.default_nan();
        }
        return a;
    }
    if f.is_inf(b) {
        return b;
    }
    if f.is_zero(a) {
        if f.is_zero(b) {
            return f.zero(if sa == sb { sa } else { rm == Rm::Rdn });
        }
        return b;
    }
    if f.is_zero(b) {
        return a;
    }
    let (ma, ea) = f.unpack(a);
    let (mb, eb) = f.unpack(b);
    sum_round(f, (sa, ea, ma as u128), (sb, eb, mb as u128), rm, fl)
}

/// `a * b` in any rounding mode.
fn mul_soft(f: Fmt, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    if f.is_nan(a) || f.is_nan(b) {
        return nan2(f, a, b, fl);
    }
    let sign = f.sign(a) ^ f.sign(b);
    if f.is_inf(a) || f.is_inf(b) {
        if f.is_zero(a) || f.is_zero(b) {
            *fl |= NV;
            return f.default_nan();
        }
        return f.inf(sign);
    }
    if f.is_zero(a) || f.is_zero(b) {
        return f.zero(sign);
    }
    let (ma, ea) = f.unpack(a);
    let (mb, eb) = f.unpack(b);
    round_pack(f, sign, ea + eb, ma as u128 * mb as u128, rm, fl)
}

/// `a / b` in any rounding mode.
fn div_soft(f: Fmt, a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    if f.is_nan(a) || f.is_nan(b) {
        return nan2(f, a, b, fl);
    }
    let sign = f.sign(a) ^ f.sign(b);
    if f.is_inf(a) {
        if f.is_inf(b) {
            *fl |= NV;
            return f.default_nan();
        }
        return f.inf(sign);
    }
    if f.is_inf(b) {
        return f.zero(sign);
    }
    if f.is_zero(b) {
        if f.is_zero(a) {
            *fl |= NV;
            return f.default_nan();
        }
        *fl |= DZ;
        return f.inf(sign);
    }
    if f.is_zero(a) {
        return f.zero(sign);
    }
    let (ma, ea) = f.unpack(a);
    let (mb, eb) = f.unpack(b);
    // ma/mb is in (1/2, 2), so the quotient has at least p+2 bits.
    let sh = f.frac + 3;
    let n = (ma as u128) << sh;
    let q = n / mb as u128;
    let r = n % mb as u128;
    round_pack(
        f,
        sign,
        ea - eb - sh as i32 - 1,
        (q << 1) | (r != 0) as u128,
        rm,
        fl,
    )
}

/// `sqrt(a)` in any rounding mode.
fn sqrt_soft(f: Fmt, a: u64, rm: Rm, fl: &mut u8) -> u64 {
    if f.is_nan(a) {
        return nan2(f, a, a, fl);
    }
    if f.is_zero(a) {
        return a;
    }
    if f.sign(a) {
        *fl |= NV;
        return f.default_nan();
    }
    if f.is_inf(a) {
        return a;
    }
    let (m, e) = f.unpack(a);
    let (m, e) = if e & 1 != 0 { (m << 1, e - 1) } else { (m, e) };
    // Even shift giving a root of at least p+2 bits.
    let k2 = (f.frac + 6) & !1;
    let n = (m as u128) << k2;
    let s = n.isqrt();
    let rem = n - s * s;
    round_pack(
        f,
        false,
        (e - k2 as i32) / 2 - 1,
        (s << 1) | (rem != 0) as u128,
        rm,
        fl,
    )
}

/// `(±a*b) ± c` with a single rounding, in any rounding mode.
#[allow(clippy::too_many_arguments)]
fn fma_soft(f: Fmt, a: u64, b: u64, c: u64, negp: bool, negc: bool, rm: Rm, fl: &mut u8) -> u64 {
    let infzero = (f.is_inf(a) && f.is_zero(b)) || (f.is_zero(a) && f.is_inf(b));
    if f.is_nan(a) || f.is_nan(b) || f.is_nan(c) {
        if f.is_snan(a) || f.is_snan(b) || f.is_snan(c) || infzero {
            *fl |= NV;
        }
        return f.default_nan();
    }
    if infzero {
        *fl |= NV;
        return f.default_nan();
    }
    let sp = f.sign(a) ^ f.sign(b) ^ negp;
    let sc = f.sign(c) ^ negc;
    if f.is_inf(a) || f.is_inf(b) {
        if f.is_inf(c) && sc != sp {
            *fl |= NV;
            return f.default_nan();
        }
        return f.inf(sp);
    }
    if f.is_inf(c) {
        return f.inf(sc);
    }
    if f.is_zero(a) || f.is_zero(b) {
        if f.is_zero(c) {
            return f.zero(if sp == sc { sp } else { rm == Rm::Rdn });
        }
        return c ^ ((negc as u64) << f.sign_shift());
    }
    let (ma, ea) = f.unpack(a);
    let (mb, eb) = f.unpack(b);
    let prod = ma as u128 * mb as u128;
    if f.is_zero(c) {
        return round_pack(f, sp, ea + eb, prod, rm, fl);
    }
    let (mc, ec) = f.unpack(c);
    sum_round(f, (sp, ea + eb, prod), (sc, ec, mc as u128), rm, fl)
}

/// Converts to a `bits`-wide integer (signed or unsigned), saturating with NV.
/// Returns the two's-complement pattern (truncate to the target width).
#[inline]
fn to_int(f: Fmt, a: u64, rm: Rm, fl: &mut u8, bits: u32, signed: bool) -> u64 {
    // Largest magnitude for a positive result.
    let hi = if signed {
        (1u64 << (bits - 1)) - 1
    } else {
        u64::MAX >> (64 - bits)
    };
    let sign = f.sign(a);
    let ef = f.exp_field(a);
    let saturated = |neg: bool| {
        if !neg {
            hi
        } else if signed {
            (hi + 1).wrapping_neg()
        } else {
            0
        }
    };
    if ef == f.exp_all_ones() {
        // Infinity or NaN (NaN converts to the largest positive value).
        *fl |= NV;
        return saturated(sign && a & f.frac_mask() == 0);
    }
    if f.is_zero(a) {
        return 0;
    }
    let (m, e) = f.unpack(a);
    if e >= 0 && e as u32 + f.frac >= 64 {
        // At least 2^64: out of range for every target.
        *fl |= NV;
        return saturated(sign);
    }
    let (mag, rest) = if e >= 0 {
        (m << e, Rest::Exact)
    } else if e <= -64 {
        (0, Rest::Below) // m < 2^53 < half of 2^64
    } else {
        let sh = (-e) as u32;
        let half = 1u64 << (sh - 1);
        let rem = m & ((half << 1) - 1);
        let rest = if rem == 0 {
            Rest::Exact
        } else if rem < half {
            Rest::Below
        } else if rem == half {
            Rest::Half
        } else {
            Rest::Above
        };
        (m >> sh, rest)
    };
    // mag < 2^64 - 1 here, so the increment cannot wrap.
    let mag = mag + round_up(rm, sign, mag & 1 != 0, rest) as u64;
    let limit = if !sign {
        hi
    } else if signed {
        hi + 1
    } else {
        0
    };
    if mag > limit {
        *fl |= NV;
        return saturated(sign);
    }
    if rest != Rest::Exact {
        *fl |= NX;
    }
    if sign {
        mag.wrapping_neg()
    } else {
        mag
    }
}

/// Converts the integer `(-1)^sign * mag` to format `f`.
#[inline]
fn from_int(f: Fmt, sign: bool, mag: u64, rm: Rm, fl: &mut u8) -> u64 {
    if mag == 0 {
        return 0;
    }
    round_pack(f, sign, 0, mag as u128, rm, fl)
}

/// Signaling (`flt`) or quiet-free less-than on non-NaN operands.
#[inline]
fn lt_raw(f: Fmt, a: u64, b: u64) -> bool {
    let (sa, sb) = (f.sign(a), f.sign(b));
    if sa != sb {
        sa && !f.is_zero(a | b)
    } else if sa {
        a > b
    } else {
        a < b
    }
}

fn eq_gen(f: Fmt, a: u64, b: u64, fl: &mut u8) -> bool {
    if f.is_nan(a) || f.is_nan(b) {
        if f.is_snan(a) || f.is_snan(b) {
            *fl |= NV;
        }
        return false;
    }
    a == b || f.is_zero(a | b)
}

fn lt_gen(f: Fmt, a: u64, b: u64, fl: &mut u8) -> bool {
    if f.is_nan(a) || f.is_nan(b) {
        *fl |= NV;
        return false;
    }
    lt_raw(f, a, b)
}

fn le_gen(f: Fmt, a: u64, b: u64, fl: &mut u8) -> bool {
    if f.is_nan(a) || f.is_nan(b) {
        *fl |= NV;
        return false;
    }
    a == b || f.is_zero(a | b) || lt_raw(f, a, b)
}

/// IEEE 754-2019 minimumNumber / maximumNumber.
fn minmax(f: Fmt, a: u64, b: u64, fl: &mut u8, max: bool) -> u64 {
    let (an, bn) = (f.is_nan(a), f.is_nan(b));
    if an || bn {
        if f.is_snan(a) || f.is_snan(b) {
            *fl |= NV;
        }
        return match (an, bn) {
            (true, true) => f.default_nan(),
            (true, false) => b,
            _ => a,
        };
    }
    if lt_raw(f, a, b) {
        if max {
            b
        } else {
            a
        }
    } else if lt_raw(f, b, a) {
        if max {
            a
        } else {
            b
        }
    } else if max {
        // Equal: identical, or zeros of different signs (+0 > -0).
        a & b
    } else {
        a | b
    }
}

fn classify(f: Fmt, a: u64) -> u32 {
    let sign = f.sign(a);
    let ef = f.exp_field(a);
    let frac = a & f.frac_mask();
    let bit = if ef == f.exp_all_ones() {
        if frac == 0 {
            if sign {
                0
            } else {
                7
            }
        } else if frac & f.quiet_bit() != 0 {
            9
        } else {
            8
        }
    } else if ef == 0 {
        match (frac == 0, sign) {
            (true, true) => 3,
            (true, false) => 4,
            (false, true) => 2,
            (false, false) => 5,
        }
    } else if sign {
        1
    } else {
        6
    };
    1 << bit
}

// ---------------------------------------------------------------------------
// Fast paths (host IEEE arithmetic, round to nearest even)
// ---------------------------------------------------------------------------
//
// Each fast path computes the round-to-nearest-even result `r` on the host
// and the sign of the exact error `exact - r` with an error-free
// transformation. Fast paths only accept results that are finite and not
// tiny (or exact), so the directed modes follow from `r` by at most one ulp
// (see `finish`). Anything else returns `None` and takes the software path.
// Ties-to-away is always left to the software path.

/// Sign of `x` as -1, 0 or 1.
#[inline(always)]
fn sgn(x: f64) -> i32 {
    (x > 0.0) as i32 - (x < 0.0) as i32
}

/// Turns the round-to-nearest-even result `r` (finite, not tiny) into the
/// result for `rm` (not RMM), given the sign of `exact - r`.
#[inline(always)]
fn finish(f: Fmt, r: u64, err: i32, rm: Rm, fl: &mut u8) -> u64 {
    if err == 0 {
        return r;
    }
    *fl |= NX;
    let neg = f.sign(r);
    let (up, down) = match rm {
        Rm::Rne | Rm::Rmm => return r,
        Rm::Rtz => (err > 0 && neg, err < 0 && !neg),
        Rm::Rdn => (false, err < 0),
        Rm::Rup => (err > 0, false),
    };
    if !(up || down) {
        return r;
    }
    // Moving up in value grows the magnitude of a positive number.
    let bits = if up != neg { r + 1 } else { r - 1 };
    if f.is_inf(bits) {
        *fl |= OF;
    }
    bits
}

/// `a + b` when both operands are finite with magnitude below 2^127: the sum
/// cannot overflow and TwoSum gives the exact rounding error. (A sum in the
/// subnormal range is always exact, so tininess never matters.)
#[inline(always)]
fn fast_add32(a: u32, b: u32, rm: Rm, fl: &mut u8) -> Option<u32> {
    if (a >> 23) & 0xff >= 0xfe || (b >> 23) & 0xff >= 0xfe {
        return None;
    }
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    let r = x + y;
    if r == 0.0 && rm == Rm::Rdn {
        return None; // exact zero sum: sign depends on the mode
    }
    let bb = r - x;
    let err = (x - (r - bb)) + (y - bb);
    Some(finish(F32, r.to_bits() as u64, sgn(err as f64), rm, fl) as u32)
}

/// As [`fast_add32`], for binary64 (magnitudes below 2^1023).
#[inline(always)]
fn fast_add64(a: u64, b: u64, rm: Rm, fl: &mut u8) -> Option<u64> {
    if (a >> 52) & 0x7ff >= 0x7fe || (b >> 52) & 0x7ff >= 0x7fe {
        return None;
    }
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    let r = x + y;
    if r == 0.0 && rm == Rm::Rdn {
        return None;
    }
    let bb = r - x;
    let err = (x - (r - bb)) + (y - bb);
    Some(finish(F64, r.to_bits(), sgn(err), rm, fl))
}

/// Whether a binary32 result is finite and strictly above the smallest
/// normal in magnitude (so it is certainly not tiny after rounding).
#[inline(always)]
fn safe32(r: f32) -> bool {
    let m = r.abs();
    m > f32::MIN_POSITIVE && m <= f32::MAX
}

/// 2^-900: below this the binary64 fast paths defer to the software path so
/// that residuals computed with FMA can never underflow.
const TINY64: f64 = f64::from_bits(((1023 - 900) as u64) << 52);

#[inline(always)]
fn fast_mul32(a: u32, b: u32, rm: Rm, fl: &mut u8) -> Option<u32> {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    let r = x * y;
    // Exact in binary64 (48-bit product, exponent well in range).
    let p = x as f64 * y as f64;
    if safe32(r) {
        let err = sgn(p - r as f64);
        return Some(finish(F32, r.to_bits() as u64, err, rm, fl) as u32);
    }
    if p == 0.0 {
        // A zero operand times a finite one: exact signed zero.
        return Some(r.to_bits());
    }
    None
}

#[inline(always)]
fn fast_mul64(a: u64, b: u64, rm: Rm, fl: &mut u8) -> Option<u64> {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    let r = x * y;
    let m = r.abs();
    if (TINY64..=f64::MAX).contains(&m) {
        // The product error is exactly representable here.
        let err = sgn(x.mul_add(y, -r));
        return Some(finish(F64, r.to_bits(), err, rm, fl));
    }
    if r == 0.0 && (F64.is_zero(a) || F64.is_zero(b)) {
        // 0 * finite (0 * inf gives NaN, so r == 0 excludes it).
        return Some(r.to_bits());
    }
    None
}

#[inline(always)]
fn fast_div32(a: u32, b: u32, rm: Rm, fl: &mut u8) -> Option<u32> {
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    let r = x / y;
    if safe32(r) {
        // r*y is exact in binary64; sign(x/y - r) = sign(x - r*y) * sign(y).
        let err = sgn(x as f64 - r as f64 * y as f64) * sgn(y as f64);
        return Some(finish(F32, r.to_bits() as u64, err, rm, fl) as u32);
    }
    if r == 0.0 && x == 0.0 {
        return Some(r.to_bits());
    }
    None
}

#[inline(always)]
fn fast_div64(a: u64, b: u64, rm: Rm, fl: &mut u8) -> Option<u64> {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    let r = x / y;
    let m = r.abs();
    if m > f64::MIN_POSITIVE && m <= f64::MAX && x.abs() >= TINY64 {
        // The remainder x - r*y is exactly representable (no underflow).
        let err = sgn((-r).mul_add(y, x)) * sgn(y);
        return Some(finish(F64, r.to_bits(), err, rm, fl));
    }
    if r == 0.0 && x == 0.0 {
        return Some(r.to_bits());
    }
    None
}

#[inline(always)]
fn fast_sqrt32(a: u32, rm: Rm, fl: &mut u8) -> Option<u32> {
    let x = f32::from_bits(a);
    if x > 0.0 && x <= f32::MAX {
        let r = x.sqrt();
        let r64 = r as f64;
        let err = sgn(x as f64 - r64 * r64);
        return Some(finish(F32, r.to_bits() as u64, err, rm, fl) as u32);
    }
    None
}

#[inline(always)]
fn fast_sqrt64(a: u64, rm: Rm, fl: &mut u8) -> Option<u64> {
    let x = f64::from_bits(a);
    if (TINY64..=f64::MAX).contains(&x) {
        let r = x.sqrt();
        let err = sgn((-r).mul_add(r, x));
        return Some(finish(F64, r.to_bits(), err, rm, fl));
    }
    None
}

/// binary32 FMA through binary64: the product is exact, the sum is rounded
/// to odd in binary64 (TwoSum tells whether it was exact), and the final
/// rounding to binary32 is then correct (53 >= 24 + 2).
#[inline(always)]
fn fast_fma32(a: u32, b: u32, c: u32, negp: bool, negc: bool, rm: Rm, fl: &mut u8) -> Option<u32> {
    if (a >> 23) & 0xff == 0xff || (b >> 23) & 0xff == 0xff || (c >> 23) & 0xff == 0xff {
        return None;
    }
    let mut p = f32::from_bits(a) as f64 * f32::from_bits(b) as f64;
    if negp {
        p = -p;
    }
    let mut z = f32::from_bits(c) as f64;
    if negc {
        z = -z;
    }
    let s = p + z;
    let bb = s - p;
    let err = (p - (s - bb)) + (z - bb);
    let odd = if err == 0.0 {
        if s == 0.0 {
            // Exact zero: its sign depends on the rounding mode.
            return (rm == Rm::Rne).then_some((s as f32).to_bits());
        }
        s
    } else {
        let sb = s.to_bits();
        f64::from_bits(if sb & 1 != 0 {
            sb
        } else if (err > 0.0) == (s > 0.0) {
            sb + 1
        } else {
            sb - 1
        })
    };
    let r = odd as f32;
    if !safe32(r) {
        return None;
    }
    // s - r is exact (Sterbenz), so this has the sign of exact - r.
    let e = sgn((s - r as f64) + err);
    Some(finish(F32, r.to_bits() as u64, e, rm, fl) as u32)
}

/// Whether a binary64 operand is zero, or finite with unbiased exponent in
/// `[-lim, lim]`.
#[inline(always)]
fn in_range64(a: u64, lim: u64) -> bool {
    let e = (a >> 52) & 0x7ff;
    e.wrapping_sub(1023 - lim) <= 2 * lim || a << 1 == 0
}

/// binary64 FMA on the host with the exact error from Boldo & Muller's
/// ErrFma. With a and b each zero or in [2^-400, 2^401) in magnitude, and c
/// zero or in [2^-900, 2^901), every intermediate is a multiple of 2^-952 and below
/// 2^803, so nothing underflows or overflows, and the result can never be
/// tiny (it is zero or at least 2^-952 in magnitude).
#[inline(always)]
fn fast_fma64(a: u64, b: u64, c: u64, negp: bool, negc: bool, rm: Rm, fl: &mut u8) -> Option<u64> {
    if !(in_range64(a, 400) && in_range64(b, 400) && in_range64(c, 900)) {
        return None;
    }
    let x = f64::from_bits(a ^ ((negp as u64) << 63));
    let y = f64::from_bits(b);
    let z = f64::from_bits(c ^ ((negc as u64) << 63));
    let r1 = x.mul_add(y, z);
    if r1 == 0.0 && rm != Rm::Rne {
        return None; // exact zero: its sign depends on the rounding mode
    }
    // (u1, u2) = TwoProd(x, y)
    let u1 = x * y;
    let u2 = x.mul_add(y, -u1);
    // (a1, a2) = TwoSum(z, u2)
    let a1 = z + u2;
    let t = a1 - z;
    let a2 = (z - (a1 - t)) + (u2 - t);
    // (b1, b2) = TwoSum(u1, a1)
    let b1 = u1 + a1;
    let t = b1 - u1;
    let b2 = (u1 - (b1 - t)) + (a1 - t);
    let g = (b1 - r1) + b2;
    // (r2, r3) = Fast2Sum(g, a2); x*y + z = r1 + r2 + r3 exactly and
    // r2 = RN(r2 + r3) carries the sign of the error.
    let r2 = g + a2;
    let r3 = a2 - (r2 - g);
    let err = if r2 != 0.0 { sgn(r2) } else { sgn(r3) };
    Some(finish(F64, r1.to_bits(), err, rm, fl))
}

/// Whether the host fast paths may be tried for this rounding mode.
#[inline(always)]
fn fast(rm: Rm) -> bool {
    FAST && rm != Rm::Rmm
}

// ---------------------------------------------------------------------------
// Public API: binary32
// ---------------------------------------------------------------------------

/// `fadd.s`: `a + b`.
pub fn f32_add(a: u32, b: u32, rm: Rm, fl: &mut u8) -> u32 {
    if fast(rm) {
        if let Some(r) = fast_add32(a, b, rm, fl) {
            return r;
        }
    }
    add_soft(F32, a as u64, b as u64, rm, fl) as u32
}

/// `fsub.s`: `a - b`.
pub fn f32_sub(a: u32, b: u32, rm: Rm, fl: &mut u8) -> u32 {
    f32_add(a, b ^ 0x8000_0000, rm, fl)
}

/// `fmul.s`: `a * b`.
pub fn f32_mul(a: u32, b: u32, rm: Rm, fl: &mut u8) -> u32 {
    if fast(rm) {
        if let Some(r) = fast_mul32(a, b, rm, fl) {
            return r;
        }
    }
    mul_soft(F32, a as u64, b as u64, rm, fl) as u32
}

/// `fdiv.s`: `a / b`.
pub fn f32_div(a: u32, b: u32, rm: Rm, fl: &mut u8) -> u32 {
    if fast(rm) {
        if let Some(r) = fast_div32(a, b, rm, fl) {
            return r;
        }
    }
    div_soft(F32, a as u64, b as u64, rm, fl) as u32
}

/// `fsqrt.s`: square root of `a`.
pub fn f32_sqrt(a: u32, rm: Rm, fl: &mut u8) -> u32 {
    if fast(rm) {
        if let Some(r) = fast_sqrt32(a, rm, fl) {
            return r;
        }
    }
    sqrt_soft(F32, a as u64, rm, fl) as u32
}

/// (±a*b) ± c with a single rounding: fmadd = (false,false),
/// fmsub = (false,true), fnmsub = (true,false), fnmadd = (true,true).
///
/// `inf * 0` raises NV even when `c` is a quiet NaN.
pub fn f32_fma(
    a: u32,
    b: u32,
    c: u32,
    neg_product: bool,
    neg_addend: bool,
    rm: Rm,
    fl: &mut u8,
) -> u32 {
    if fast(rm) {
        if let Some(r) = fast_fma32(a, b, c, neg_product, neg_addend, rm, fl) {
            return r;
        }
    }
    fma_soft(
        F32,
        a as u64,
        b as u64,
        c as u64,
        neg_product,
        neg_addend,
        rm,
        fl,
    ) as u32
}

/// `fmin.s`: IEEE 754-2019 minimumNumber (-0 < +0; NV on any sNaN input).
pub fn f32_min(a: u32, b: u32, fl: &mut u8) -> u32 {
    minmax(F32, a as u64, b as u64, fl, false) as u32
}

/// `fmax.s`: IEEE 754-2019 maximumNumber (-0 < +0; NV on any sNaN input).
pub fn f32_max(a: u32, b: u32, fl: &mut u8) -> u32 {
    minmax(F32, a as u64, b as u64, fl, true) as u32
}

/// `feq.s`: quiet equality (NV only for signaling NaN inputs).
pub fn f32_eq(a: u32, b: u32, fl: &mut u8) -> bool {
    eq_gen(F32, a as u64, b as u64, fl)
}

/// `flt.s`: signaling less-than (NV for any NaN input).
pub fn f32_lt(a: u32, b: u32, fl: &mut u8) -> bool {
    lt_gen(F32, a as u64, b as u64, fl)
}

/// `fle.s`: signaling less-or-equal (NV for any NaN input).
pub fn f32_le(a: u32, b: u32, fl: &mut u8) -> bool {
    le_gen(F32, a as u64, b as u64, fl)
}

/// `fclass.s`: the 10-bit class mask (bit 0 = -inf ... bit 9 = quiet NaN).
pub fn f32_classify(a: u32) -> u32 {
    classify(F32, a as u64)
}

/// `fcvt.w.s`: to a signed 32-bit integer, saturating.
pub fn f32_to_i32(a: u32, rm: Rm, fl: &mut u8) -> i32 {
    to_int(F32, a as u64, rm, fl, 32, true) as i32
}

/// `fcvt.wu.s`: to an unsigned 32-bit integer, saturating (result not
/// sign-extended).
pub fn f32_to_u32(a: u32, rm: Rm, fl: &mut u8) -> u32 {
    to_int(F32, a as u64, rm, fl, 32, false) as u32
}

/// `fcvt.l.s`: to a signed 64-bit integer, saturating.
pub fn f32_to_i64(a: u32, rm: Rm, fl: &mut u8) -> i64 {
    to_int(F32, a as u64, rm, fl, 64, true) as i64
}

/// `fcvt.lu.s`: to an unsigned 64-bit integer, saturating.
pub fn f32_to_u64(a: u32, rm: Rm, fl: &mut u8) -> u64 {
    to_int(F32, a as u64, rm, fl, 64, false)
}

/// `fcvt.s.w`: from a signed 32-bit integer.
pub fn i32_to_f32(x: i32, rm: Rm, fl: &mut u8) -> u32 {
    if fast(rm) {
        let r = x as f32;
        let err = (x as i64).cmp(&(r as i64)) as i32;
        return finish(F32, r.to_bits() as u64, err, rm, fl) as u32;
    }
    from_int(F32, x < 0, x.unsigned_abs() as u64, rm, fl) as u32
}

/// `fcvt.s.wu`: from an unsigned 32-bit integer.
pub fn u32_to_f32(x: u32, rm: Rm, fl: &mut u8) -> u32 {
    if fast(rm) {
        let r = x as f32;
        let err = (x as u64).cmp(&(r as u64)) as i32;
        return finish(F32, r.to_bits() as u64, err, rm, fl) as u32;
    }
    from_int(F32, false, x as u64, rm, fl) as u32
}

/// `fcvt.s.l`: from a signed 64-bit integer.
pub fn i64_to_f32(x: i64, rm: Rm, fl: &mut u8) -> u32 {
    if fast(rm) {
        let r = x as f32;
        let err = (x as i128).cmp(&(r as i128)) as i32;
        return finish(F32, r.to_bits() as u64, err, rm, fl) as u32;
    }
    from_int(F32, x < 0, x.unsigned_abs(), rm, fl) as u32
}

/// `fcvt.s.lu`: from an unsigned 64-bit integer.
pub fn u64_to_f32(x: u64, rm: Rm, fl: &mut u8) -> u32 {
    if fast(rm) {
        let r = x as f32;
        let err = (x as u128).cmp(&(r as u128)) as i32;
        return finish(F32, r.to_bits() as u64, err, rm, fl) as u32;
    }
    from_int(F32, false, x, rm, fl) as u32
}

/// `fcvt.d.s`: exact widening (NaN becomes the canonical NaN; NV for sNaN).
pub fn f32_to_f64(a: u32, fl: &mut u8) -> u64 {
    if F32.is_nan(a as u64) {
        nan2(F32, a as u64, a as u64, fl);
        return F64_DEFAULT_NAN;
    }
    if FAST {
        return (f32::from_bits(a) as f64).to_bits();
    }
    let sign = F32.sign(a as u64);
    if F32.is_inf(a as u64) {
        return F64.inf(sign);
    }
    if F32.is_zero(a as u64) {
        return F64.zero(sign);
    }
    let (m, e) = F32.unpack(a as u64);
    round_pack(F64, sign, e, m as u128, Rm::Rne, fl)
}

/// `fcvt.s.d`: narrowing with rounding.
pub fn f64_to_f32(a: u64, rm: Rm, fl: &mut u8) -> u32 {
    if F64.is_nan(a) {
        nan2(F64, a, a, fl);
        return F32_DEFAULT_NAN;
    }
    let sign = F64.sign(a);
    if F64.is_inf(a) {
        return F32.inf(sign) as u32;
    }
    if F64.is_zero(a) {
        return F32.zero(sign) as u32;
    }
    if fast(rm) {
        let x = f64::from_bits(a);
        let r = x as f32;
        if safe32(r) {
            return finish(F32, r.to_bits() as u64, sgn(x - r as f64), rm, fl) as u32;
        }
    }
    let (m, e) = F64.unpack(a);
    round_pack(F32, sign, e, m as u128, rm, fl) as u32
}

// ---------------------------------------------------------------------------
// Public API: binary64
// ---------------------------------------------------------------------------

/// `fadd.d`: `a + b`.
pub fn f64_add(a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    if fast(rm) {
        if let Some(r) = fast_add64(a, b, rm, fl) {
            return r;
        }
    }
    add_soft(F64, a, b, rm, fl)
}

/// `fsub.d`: `a - b`.
pub fn f64_sub(a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    f64_add(a, b ^ (1 << 63), rm, fl)
}

/// `fmul.d`: `a * b`.
pub fn f64_mul(a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    if fast(rm) {
        if let Some(r) = fast_mul64(a, b, rm, fl) {
            return r;
        }
    }
    mul_soft(F64, a, b, rm, fl)
}

/// `fdiv.d`: `a / b`.
pub fn f64_div(a: u64, b: u64, rm: Rm, fl: &mut u8) -> u64 {
    if fast(rm) {
        if let Some(r) = fast_div64(a, b, rm, fl) {
            return r;
        }
    }
    div_soft(F64, a, b, rm, fl)
}

/// `fsqrt.d`: square root of `a`.
pub fn f64_sqrt(a: u64, rm: Rm, fl: &mut u8) -> u64 {
    if fast(rm) {
        if let Some(r) = fast_sqrt64(a, rm, fl) {
            return r;
        }
    }
    sqrt_soft(F64, a, rm, fl)
}

/// (±a*b) ± c with a single rounding: fmadd = (false,false),
/// fmsub = (false,true), fnmsub = (true,false), fnmadd = (true,true).
///
/// `inf * 0` raises NV even when `c` is a quiet NaN.
pub fn f64_fma(
    a: u64,
    b: u64,
    c: u64,
    neg_product: bool,
    neg_addend: bool,
    rm: Rm,
    fl: &mut u8,
) -> u64 {
    if fast(rm) {
        if let Some(r) = fast_fma64(a, b, c, neg_product, neg_addend, rm, fl) {
            return r;
        }
    }
    fma_soft(F64, a, b, c, neg_product, neg_addend, rm, fl)
}

/// `fmin.d`: IEEE 754-2019 minimumNumber (-0 < +0; NV on any sNaN input).
pub fn f64_min(a: u64, b: u64, fl: &mut u8) -> u64 {
    minmax(F64, a, b, fl, false)
}

/// `fmax.d`: IEEE 754-2019 maximumNumber (-0 < +0; NV on any sNaN input).
pub fn f64_max(a: u64, b: u64, fl: &mut u8) -> u64 {
    minmax(F64, a, b, fl, true)
}

/// `feq.d`: quiet equality (NV only for signaling NaN inputs).
pub fn f64_eq(a: u64, b: u64, fl: &mut u8) -> bool {
    eq_gen(F64, a, b, fl)
}

/// `flt.d`: signaling less-than (NV for any NaN input).
pub fn f64_lt(a: u64, b: u64, fl: &mut u8) -> bool {
    lt_gen(F64, a, b, fl)
}

/// `fle.d`: signaling less-or-equal (NV for any NaN input).
pub fn f64_le(a: u64, b: u64, fl: &mut u8) -> bool {
    le_gen(F64, a, b, fl)
}

/// `fclass.d`: the 10-bit class mask (bit 0 = -inf ... bit 9 = quiet NaN).
pub fn f64_classify(a: u64) -> u32 {
    classify(F64, a)
}

/// `fcvt.w.d`: to a signed 32-bit integer, saturating.
pub fn f64_to_i32(a: u64, rm: Rm, fl: &mut u8) -> i32 {
    to_int(F64, a, rm, fl, 32, true) as i32
}

/// `fcvt.wu.d`: to an unsigned 32-bit integer, saturating (result not
/// sign-extended).
pub fn f64_to_u32(a: u64, rm: Rm, fl: &mut u8) -> u32 {
    to_int(F64, a, rm, fl, 32, false) as u32
}

/// `fcvt.l.d`: to a signed 64-bit integer, saturating.
pub fn f64_to_i64(a: u64, rm: Rm, fl: &mut u8) -> i64 {
    to_int(F64, a, rm, fl, 64, true) as i64
}

/// `fcvt.lu.d`: to an unsigned 64-bit integer, saturating.
pub fn f64_to_u64(a: u64, rm: Rm, fl: &mut u8) -> u64 {
    to_int(F64, a, rm, fl, 64, false)
}

/// `fcvt.d.w`: from a signed 32-bit integer (always exact).
pub fn i32_to_f64(x: i32, _rm: Rm, _fl: &mut u8) -> u64 {
    (x as f64).to_bits()
}

/// `fcvt.d.wu`: from an unsigned 32-bit integer (always exact).
pub fn u32_to_f64(x: u32, _rm: Rm, _fl: &mut u8) -> u64 {
    (x as f64).to_bits()
}

/// `fcvt.d.l`: from a signed 64-bit integer.
pub fn i64_to_f64(x: i64, rm: Rm, fl: &mut u8) -> u64 {
    if fast(rm) {
        let r = x as f64;
        let err = (x as i128).cmp(&(r as i128)) as i32;
        return finish(F64, r.to_bits(), err, rm, fl);
    }
    from_int(F64, x < 0, x.unsigned_abs(), rm, fl)
}

/// `fcvt.d.lu`: from an unsigned 64-bit integer.
pub fn u64_to_f64(x: u64, rm: Rm, fl: &mut u8) -> u64 {
    if fast(rm) {
        let r = x as f64;
        let err = (x as u128).cmp(&(r as u128)) as i32;
        return finish(F64, r.to_bits(), err, rm, fl);
    }
    from_int(F64, false, x, rm, fl)
}

#[cfg(test)]
#[path = "fpu/tests.rs"]
mod tests;
