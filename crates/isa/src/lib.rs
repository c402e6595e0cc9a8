//! Instruction knowledge for tracing: instruction length, control-transfer class
//! (the ingress-port `itype`, 3- and 4-bit) and static branch/jump targets.
//!
//! This is the one place in rvtrace that knows RISC-V encodings for tracing.
#![no_std]

/// Base integer register width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Xlen {
    /// RV32.
    Rv32,
    /// RV64.
    Rv64,
}

impl Xlen {
    /// Width in bits (32 or 64).
    pub const fn bits(self) -> u32 {
        match self {
            Xlen::Rv32 => 32,
            Xlen::Rv64 => 64,
        }
    }
}

/// Ingress-port instruction type, E-Trace v2.0 `ingressPort.adoc` table "Instruction Type (itype) encoding".
///
/// Codes 8-15 exist only when `itype_width_p` is 4. N-Trace Table 2/4 uses the same numbers but calls
/// 10/11 "tail-calls"; E-Trace v2.0 uses 10/11 for jumps without linkage and 14/15 for other jumps with
/// linkage (see [`CfClass`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Itype {
    /// 0: none of the other named codes.
    #[default]
    None = 0,
    /// 1: an exception that traps occurred following the last retired instruction.
    Exception = 1,
    /// 2: an interrupt that traps occurred following the last retired instruction.
    Interrupt = 2,
    /// 3: exception or interrupt return (`mret`, `sret`, ...).
    TrapReturn = 3,
    /// 4: non-taken branch.
    NonTakenBranch = 4,
    /// 5: taken branch.
    TakenBranch = 5,
    /// 6: uninferable jump (3-bit `itype` only).
    UninferableJump3 = 6,
    /// 7: reserved.
    Reserved7 = 7,
    /// 8: uninferable call.
    UninferableCall = 8,
    /// 9: inferable call.
    InferableCall = 9,
    /// 10: uninferable jump (E-Trace v2.0; N-Trace: uninferable tail-call).
    UninferableJump = 10,
    /// 11: inferable jump (E-Trace v2.0; N-Trace: inferable tail-call).
    InferableJump = 11,
    /// 12: co-routine swap.
    CoroutineSwap = 12,
    /// 13: return.
    Return = 13,
    /// 14: other uninferable jump.
    OtherUninferableJump = 14,
    /// 15: other inferable jump.
    OtherInferableJump = 15,
}

impl Itype {
    /// The `itype` for a raw code (only the low 4 bits are used).
    pub const fn from_code(code: u8) -> Itype {
        match code & 15 {
            0 => Itype::None,
            1 => Itype::Exception,
            2 => Itype::Interrupt,
            3 => Itype::TrapReturn,
            4 => Itype::NonTakenBranch,
            5 => Itype::TakenBranch,
            6 => Itype::UninferableJump3,
            7 => Itype::Reserved7,
            8 => Itype::UninferableCall,
            9 => Itype::InferableCall,
            10 => Itype::UninferableJump,
            11 => Itype::InferableJump,
            12 => Itype::CoroutineSwap,
            13 => Itype::Return,
            14 => Itype::OtherUninferableJump,
            _ => Itype::OtherInferableJump,
        }
    }

    /// The numeric code.
    pub const fn code(self) -> u8 {
        self as u8
    }
}
