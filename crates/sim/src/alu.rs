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
