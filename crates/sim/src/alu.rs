//! The integer computational rules (unprivileged ISA: RV32I/RV64I "Integer Computational
//! Instructions", M "Multiplication Operations"), one copy for both [`crate::Hart::execute`] and
//! the pre-decoded blocks (block.rs). `b` is `rs2` or the immediate: a register-immediate
//! instruction follows the rule of its register-register twin (shift amounts from the immediate
//! are already below XLEN). Results are raw 64-bit values; the caller's register write
//! sign-extends them on RV32.

/// The shift amount mask of XLEN-wide shifts.
#[inline(always)]
fn shamt<const RV64: bool>(b: u64) -> u64 {
    b & if RV64 { 63 } else { 31 }
}

/// Sign-extends the low 32 bits (the *W operations' results).
#[inline(always)]
fn sext32(v: u32) -> u64 {
    v as i32 as i64 as u64
}

/// `add`, `addi`.
#[inline(always)]
pub fn add(a: u64, b: u64) -> u64 {
    a.wrapping_add(b)
}
/// `sub`.
#[inline(always)]
pub fn sub(a: u64, b: u64) -> u64 {
    a.wrapping_sub(b)
}
/// `slt`, `slti`.
#[inline(always)]
pub fn slt(a: u64, b: u64) -> u64 {
    ((a as i64) < (b as i64)) as u64
}
/// `sltu`, `sltiu` (sign-extended RV32 values keep their unsigned order).
#[inline(always)]
pub fn sltu(a: u64, b: u64) -> u64 {
    (a < b) as u64
}
/// `sll`, `slli`.
#[inline(always)]
pub fn sll<const RV64: bool>(a: u64, b: u64) -> u64 {
    a << shamt::<RV64>(b)
}
/// `srl`, `srli` (on RV32 of the low 32 bits).
#[inline(always)]
pub fn srl<const RV64: bool>(a: u64, b: u64) -> u64 {
    if RV64 {
        a >> (b & 63)
    } else {
        ((a as u32) >> (b & 31)) as u64
    }
}
/// `sra`, `srai` (RV32 values are held sign-extended).
#[inline(always)]
pub fn sra<const RV64: bool>(a: u64, b: u64) -> u64 {
    ((a as i64) >> shamt::<RV64>(b)) as u64
}
/// `addw`, `addiw`.
#[inline(always)]
pub fn addw(a: u64, b: u64) -> u64 {
    sext32((a as u32).wrapping_add(b as u32))
}
/// `subw`.
#[inline(always)]
pub fn subw(a: u64, b: u64) -> u64 {
    sext32((a as u32).wrapping_sub(b as u32))
}
/// `sllw`, `slliw`.
#[inline(always)]
pub fn sllw(a: u64, b: u64) -> u64 {
    sext32((a as u32) << (b & 31))
}
/// `srlw`, `srliw`.
#[inline(always)]
pub fn srlw(a: u64, b: u64) -> u64 {
    sext32((a as u32) >> (b & 31))
}
/// `sraw`, `sraiw`.
#[inline(always)]
pub fn sraw(a: u64, b: u64) -> u64 {
    ((a as u32 as i32) >> (b & 31)) as i64 as u64
}
/// `mul` (the low XLEN bits).
#[inline(always)]
pub fn mul(a: u64, b: u64) -> u64 {
    a.wrapping_mul(b)
}
/// `mulw`.
#[inline(always)]
pub fn mulw(a: u64, b: u64) -> u64 {
    sext32((a as u32).wrapping_mul(b as u32))
}

/// The operation of an atomic memory operation (unprivileged ISA, "Atomic Memory Operations").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmoOp {
    /// `amoswap`.
    Swap,
    /// `amoadd`.
    Add,
    /// `amoxor`.
    Xor,
    /// `amoand`.
    And,
    /// `amoor`.
    Or,
    /// `amomin` (signed).
    Min,
    /// `amomax` (signed).
    Max,
    /// `amominu`.
    Minu,
    /// `amomaxu`.
    Maxu,
}

impl AmoOp {
    /// The value an AMO stores: `old` (the memory's) combined with `src` (rs2), both taken as
    /// `bytes` wide (4 or 8); the result is `bytes` wide, zero-extended.
    pub fn apply(self, old: u64, src: u64, bytes: u8) -> u64 {
        let bits = 8 * u32::from(bytes);
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        let sx = |v: u64| ((v << (64 - bits)) as i64) >> (64 - bits);
        let (o, s) = (old & mask, src & mask);
        let r = match self {
            AmoOp::Swap => s,
            AmoOp::Add => o.wrapping_add(s),
            AmoOp::Xor => o ^ s,
            AmoOp::And => o & s,
            AmoOp::Or => o | s,
            AmoOp::Min => {
                if sx(o) <= sx(s) {
                    o
                } else {
                    s
                }
            }
            AmoOp::Max => {
                if sx(o) >= sx(s) {
                    o
                } else {
                    s
                }
            }
            AmoOp::Minu => o.min(s),
            AmoOp::Maxu => o.max(s),
        };
        r & mask
    }
}

#[cfg(test)]
mod tests {
    use super::AmoOp;

    /// Values from the definitions (unprivileged ISA, "Atomic Memory Operations"): word
    /// operations see 32-bit operands (signed for min/max), results are as wide as the access.
    #[test]
    fn amo_results() {
        let m1w = 0xffff_ffffu64; // -1 as a word
        assert_eq!(AmoOp::Min.apply(m1w, 1, 4), m1w);
        assert_eq!(AmoOp::Minu.apply(m1w, 1, 4), 1);
        assert_eq!(AmoOp::Max.apply(m1w, 1, 4), 1);
        assert_eq!(AmoOp::Maxu.apply(m1w, 1, 4), m1w);
        assert_eq!(AmoOp::Add.apply(m1w, 1, 4), 0);
        // Upper bits of a word operand are not part of it.
        assert_eq!(AmoOp::Add.apply(0x1_0000_0001, 0x2_0000_0002, 4), 3);
        assert_eq!(AmoOp::Swap.apply(5, 0x1_0000_0007, 4), 7);
        let min64 = 1u64 << 63;
        assert_eq!(AmoOp::Max.apply(min64, 0, 8), 0);
        assert_eq!(AmoOp::Maxu.apply(min64, 0, 8), min64);
        assert_eq!(AmoOp::Min.apply(min64, 0, 8), min64);
        assert_eq!(AmoOp::Xor.apply(0b1100, 0b1010, 8), 0b0110);
        assert_eq!(AmoOp::And.apply(0b1100, 0b1010, 8), 0b1000);
        assert_eq!(AmoOp::Or.apply(0b1100, 0b1010, 8), 0b1110);
        assert_eq!(AmoOp::Add.apply(u64::MAX, 2, 8), 1);
    }
}
