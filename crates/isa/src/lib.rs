//! Instruction knowledge for tracing: instruction length, control-transfer class
//! (the ingress-port `itype`, 3- and 4-bit) and static branch/jump targets.
//!
//! This is the one place in rvtrace that knows RISC-V encodings: the instruction decoder the hart
//! executes ([`insn`]), the disassembler on top of it ([`disasm`]), and the tracing classifier
//! ([`classify`]; checked against [`insn`] by the tests, see the README for why it stays).
//!
//! * [`insn_len`]: instruction length from the first 16-bit parcel (base ISA length encoding).
//! * [`classify`]: the control-flow class ([`CfClass`]) and static target of one instruction.
//! * [`CfClass::etrace_itype`] / [`CfClass::ntrace_itype`]: the ingress-port `itype` a hart reports for
//!   it, per E-Trace v2.0 (`ingressPort.adoc`) or N-Trace 1.0.0-rc7 Table 2.
//! * [`is_sequentially_inferable`] / [`sequentially_inferred_target`]: E-Trace `JumpClasses`
//!   "sequentially inferable" `lui`/`auipc`/`c.lui` + indirect jump pairs.
#![no_std]
#![warn(missing_docs)]

mod class;
mod csr_names;
mod decode;
pub mod disasm;
pub mod insn;
mod len;

#[cfg(test)]
mod tests;

pub use class::CfClass;
pub use decode::{
    classify, is_sequentially_inferable, sequentially_inferred_target, table_entry_addr,
    table_jump_index, InsnInfo,
};
pub use len::{ilastsize, insn_len};

/// Which ISA extensions change how instructions are classified.
///
/// Only the options that change the control-flow class of an encoding are modelled. Zcmp and Zcmt
/// reuse the `c.fsdsp` encoding space (quadrant 2, `funct3` = 101; Zc specification, which makes
/// both incompatible with Zcd); with both `false` those encodings are the FP store `c.fsdsp` (not a
/// control transfer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IsaConfig {
    /// Base integer register width. Selects `c.jal` (RV32) vs `c.addiw` (RV64) and the address width
    /// used by [`sequentially_inferred_target`].
    pub xlen: Xlen,
    /// Zcmp present: `cm.push`/`cm.pop`/`cm.popret`/`cm.popretz`/`cm.mvsa01`/`cm.mva01s`.
    pub zcmp: bool,
    /// Zcmt present: `cm.jt`/`cm.jalt` table jumps.
    pub zcmt: bool,
}

impl IsaConfig {
    /// `xlen` without Zcmp/Zcmt (what the hart model executes).
    pub const fn new(xlen: Xlen) -> Self {
        IsaConfig {
            xlen,
            zcmp: false,
            zcmt: false,
        }
    }

    /// RV64 without Zcmp/Zcmt.
    pub const fn rv64() -> Self {
        IsaConfig {
            xlen: Xlen::Rv64,
            zcmp: false,
            zcmt: false,
        }
    }

    /// RV32 without Zcmp/Zcmt.
    pub const fn rv32() -> Self {
        IsaConfig {
            xlen: Xlen::Rv32,
            zcmp: false,
            zcmt: false,
        }
    }

    /// This configuration with Zcmp enabled or disabled.
    pub const fn with_zcmp(self, zcmp: bool) -> Self {
        IsaConfig { zcmp, ..self }
    }

    /// This configuration with Zcmt enabled or disabled.
    pub const fn with_zcmt(self, zcmt: bool) -> Self {
        IsaConfig { zcmt, ..self }
    }
}

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

    /// Mask of the valid address bits (`0xffff_ffff` for RV32, all ones for RV64).
    pub const fn addr_mask(self) -> u64 {
        match self {
            Xlen::Rv32 => 0xffff_ffff,
            Xlen::Rv64 => u64::MAX,
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

    /// The `itype` for a trap taken after the last retired instruction: 2 (interrupt) or 1
    /// (exception). N-Trace Table 2 rows "Interrupted instruction" / "Exception in instruction";
    /// these are events, not instruction classes, so [`classify`] never produces them (except
    /// [`CfClass::EnvTrap`], which always traps).
    pub const fn trap(interrupt: bool) -> Itype {
        if interrupt {
            Itype::Interrupt
        } else {
            Itype::Exception
        }
    }

    /// True for codes that exist only with a 4-bit `itype` (8-15).
    pub const fn is_4bit_only(self) -> bool {
        self.code() >= 8
    }
}
