//! The instruction decoder: 32-bit and compressed encodings into one [`Insn`] form. It is the
//! hart model's decoder (`rvtrace_sim::decode` re-exports it) and the one the disassembler
//! ([`crate::disasm`]) formats; [`crate::classify`] is the tracing classifier, checked against it.
//!
//! Compressed instructions are expanded into the operation of their 32-bit equivalent (RISC-V
//! unprivileged ISA, chapter "C" Standard Extension), so the executor knows a single set of operations.
//! Reserved encodings decode to [`Op::Illegal`]; HINT encodings decode to their (no-op) base form.

use crate::Xlen;

/// Which optional extensions the decoder accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extensions {
    /// M: multiply/divide.
    pub m: bool,
    /// A: atomics.
    pub a: bool,
    /// F: single-precision floating point.
    pub f: bool,
    /// D: double-precision floating point.
    pub d: bool,
    /// C: compressed instructions.
    pub c: bool,
    /// Zba: address generation.
    pub zba: bool,
    /// Zbb: basic bit manipulation.
    pub zbb: bool,
    /// Zbs: single-bit instructions.
    pub zbs: bool,
    /// Zbc: carry-less multiplication.
    pub zbc: bool,
    /// S: supervisor mode.
    pub s: bool,
    /// U: user mode.
    pub u: bool,
}

impl Extensions {
    /// Everything the hart model implements (the QEMU `virt` default CPU's relevant subset).
    pub const ALL: Extensions = Extensions {
        m: true,
        a: true,
        f: true,
        d: true,
        c: true,
        zba: true,
        zbb: true,
        zbs: true,
        zbc: true,
        s: true,
        u: true,
    };
}

/// Decoded operations. Compressed instructions map onto these too.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Op {
    #[default]
    Illegal,
    Lui,
    Auipc,
    Jal,
    Jalr,
    Beq,
    Bne,
    Blt,
    Bge,
    Bltu,
    Bgeu,
    Lb,
    Lh,
    Lw,
    Ld,
    Lbu,
    Lhu,
    Lwu,
    Sb,
    Sh,
    Sw,
    Sd,
    Addi,
    Slti,
    Sltiu,
    Xori,
    Ori,
    Andi,
    Slli,
    Srli,
    Srai,
    Add,
    Sub,
    Sll,
    Slt,
    Sltu,
    Xor,
    Srl,
    Sra,
    Or,
    And,
    Addiw,
    Slliw,
    Srliw,
    Sraiw,
    Addw,
    Subw,
    Sllw,
    Srlw,
    Sraw,
    Fence,
    FenceI,
    Ecall,
    Ebreak,
    Mret,
    Sret,
    Wfi,
    SfenceVma,
    Csrrw,
    Csrrs,
    Csrrc,
    Csrrwi,
    Csrrsi,
    Csrrci,
    Mul,
    Mulh,
    Mulhsu,
    Mulhu,
    Div,
    Divu,
    Rem,
    Remu,
    Mulw,
    Divw,
    Divuw,
    Remw,
    Remuw,
    LrW,
    ScW,
    AmoSwapW,
    AmoAddW,
    AmoXorW,
    AmoAndW,
    AmoOrW,
    AmoMinW,
    AmoMaxW,
    AmoMinuW,
    AmoMaxuW,
    LrD,
    ScD,
    AmoSwapD,
    AmoAddD,
    AmoXorD,
    AmoAndD,
    AmoOrD,
    AmoMinD,
    AmoMaxD,
    AmoMinuD,
    AmoMaxuD,
    Flw,
    Fsw,
    Fld,
    Fsd,
    FmaddS,
    FmsubS,
    FnmsubS,
    FnmaddS,
    FaddS,
    FsubS,
    FmulS,
    FdivS,
    FsqrtS,
    FsgnjS,
    FsgnjnS,
    FsgnjxS,
    FminS,
    FmaxS,
    FcvtWS,
    FcvtWuS,
    FcvtLS,
    FcvtLuS,
    FmvXW,
    FclassS,
    FeqS,
    FltS,
    FleS,
    FcvtSW,
    FcvtSWu,
    FcvtSL,
    FcvtSLu,
    FmvWX,
    FmaddD,
    FmsubD,
    FnmsubD,
    FnmaddD,
    FaddD,
    FsubD,
    FmulD,
    FdivD,
    FsqrtD,
    FsgnjD,
    FsgnjnD,
    FsgnjxD,
    FminD,
    FmaxD,
    FcvtSD,
    FcvtDS,
    FeqD,
    FltD,
    FleD,
    FclassD,
    FcvtWD,
    FcvtWuD,
    FcvtLD,
    FcvtLuD,
    FmvXD,
    FcvtDW,
    FcvtDWu,
    FcvtDL,
    FcvtDLu,
    FmvDX,
    // Zba
    Sh1add,
    Sh2add,
    Sh3add,
    AddUw,
    Sh1addUw,
    Sh2addUw,
    Sh3addUw,
    SlliUw,
    // Zbb
    Andn,
    Orn,
    Xnor,
    Clz,
    Ctz,
    Cpop,
    Clzw,
    Ctzw,
    Cpopw,
    Max,
    Maxu,
    Min,
    Minu,
    SextB,
    SextH,
    ZextH,
    Rol,
    Ror,
    Rori,
    Rolw,
    Rorw,
    Roriw,
    OrcB,
    Rev8,
    // Zbs
    Bclr,
    Bclri,
    Bext,
    Bexti,
    Binv,
    Binvi,
    Bset,
    Bseti,
    // Zbc
    Clmul,
    Clmulh,
    Clmulr,
}

/// A decoded instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Insn {
    /// Operation.
    pub op: Op,
    /// Destination register (integer or FP by operation).
    pub rd: u8,
    /// First source register.
    pub rs1: u8,
    /// Second source register.
    pub rs2: u8,
    /// Third source register (fused multiply-add).
    pub rs3: u8,
    /// Rounding mode field (FP) or aq/rl bits (atomics).
    pub rm: u8,
    /// Length in bytes (2 or 4).
    pub len: u8,
    /// Immediate (sign-extended), shift amount, or CSR number.
    pub imm: i32,
}

#[inline]
fn bits(x: u32, hi: u32, lo: u32) -> u32 {
    (x >> lo) & ((1u32 << (hi - lo + 1)) - 1)
}

#[inline]
fn sext(x: u32, width: u32) -> i32 {
    let s = 32 - width;
    ((x << s) as i32) >> s
}

fn r(op: Op, rd: u32, rs1: u32, rs2: u32) -> Insn {
    Insn {
        op,
        rd: rd as u8,
        rs1: rs1 as u8,
        rs2: rs2 as u8,
        len: 4,
        ..Insn::default()
    }
}

fn i(op: Op, rd: u32, rs1: u32, imm: i32) -> Insn {
    Insn {
        op,
        rd: rd as u8,
        rs1: rs1 as u8,
        imm,
        len: 4,
        ..Insn::default()
    }
}

const ILLEGAL32: Insn = Insn {
    op: Op::Illegal,
    rd: 0,
    rs1: 0,
    rs2: 0,
    rs3: 0,
    rm: 0,
    len: 4,
    imm: 0,
};

/// Decode an instruction. `bits` holds the instruction (for a 16-bit instruction only the low
/// half matters). Instructions longer than 32 bits decode as illegal with their length.
///
/// Deliberately not `#[inline]`: the hart decodes into its cache off the hot path, and inlining
/// it into the hart's run loop cost 0.7% of host instructions (callgrind, `run
/// programs/bench/workload-rv64gc.elf --max-insns 3000000`); as it is, the move from the sim crate
/// costs nothing (461.48 M against 461.36 M).
pub fn decode(bits: u32, xlen: Xlen, ext: &Extensions) -> Insn {
    if bits & 3 != 3 {
        let mut insn = if ext.c {
            decode_compressed(bits as u16, xlen, ext)
        } else {
            Insn::default()
        };
        insn.len = 2;
        insn
    } else {
        decode32(bits, xlen, ext)
    }
}

fn decode32(x: u32, xlen: Xlen, ext: &Extensions) -> Insn {
    let rv64 = xlen == Xlen::Rv64;
    let opcode = x & 0x7f;
    let rd = bits(x, 11, 7);
    let f3 = bits(x, 14, 12);
    let rs1 = bits(x, 19, 15);
    let rs2 = bits(x, 24, 20);
    let f7 = bits(x, 31, 25);
    let imm_i = (x as i32) >> 20;
    let imm_s = (((x as i32) >> 25) << 5) | rd as i32;
    let imm_b = sext(
        (bits(x, 31, 31) << 12)
            | (bits(x, 7, 7) << 11)
            | (bits(x, 30, 25) << 5)
            | (bits(x, 11, 8) << 1),
        13,
    );
    let imm_u = (x & 0xffff_f000) as i32;
    let imm_j = sext(
        (bits(x, 31, 31) << 20)
            | (bits(x, 19, 12) << 12)
            | (bits(x, 20, 20) << 11)
            | (bits(x, 30, 21) << 1),
        21,
    );
    let shamt_max = if rv64 { 63 } else { 31 };
    let illegal = ILLEGAL32;
    use Op::*;
    match opcode {
        0x37 => i(Lui, rd, 0, imm_u),
        0x17 => i(Auipc, rd, 0, imm_u),
        0x6f => i(Jal, rd, 0, imm_j),
        0x67 if f3 == 0 => i(Jalr, rd, rs1, imm_i),
        0x63 => {
            let op = match f3 {
                0 => Beq,
                1 => Bne,
                4 => Blt,
                5 => Bge,
                6 => Bltu,
                7 => Bgeu,
                _ => return illegal,
            };
            Insn {
                op,
                rs1: rs1 as u8,
                rs2: rs2 as u8,
                imm: imm_b,
                len: 4,
                ..Insn::default()
            }
        }
        0x03 => {
            let op = match f3 {
                0 => Lb,
                1 => Lh,
                2 => Lw,
                3 if rv64 => Ld,
                4 => Lbu,
                5 => Lhu,
                6 if rv64 => Lwu,
                _ => return illegal,
            };
            i(op, rd, rs1, imm_i)
        }
        0x23 => {
            let op = match f3 {
                0 => Sb,
                1 => Sh,
                2 => Sw,
                3 if rv64 => Sd,
                _ => return illegal,
            };
            Insn {
                op,
                rs1: rs1 as u8,
                rs2: rs2 as u8,
                imm: imm_s,
                len: 4,
                ..Insn::default()
            }
        }
        0x13 => {
            let shamt = bits(x, 25, 20);
            let f6 = bits(x, 31, 26);
            match f3 {
                0 => i(Addi, rd, rs1, imm_i),
                2 => i(Slti, rd, rs1, imm_i),
                3 => i(Sltiu, rd, rs1, imm_i),
                4 => i(Xori, rd, rs1, imm_i),
                6 => i(Ori, rd, rs1, imm_i),
                7 => i(Andi, rd, rs1, imm_i),
                1 => {
                    if shamt > shamt_max {
                        return illegal;
                    }
                    match f6 {
                        0 => i(Slli, rd, rs1, shamt as i32),
                        // Bit-manipulation 1.0.0, Zbs: the immediate forms take shamt (RV32:
                        // shamt[5] = 1 is reserved, refused above).
                        0x12 if ext.zbs => i(Bclri, rd, rs1, shamt as i32),
                        0x1a if ext.zbs => i(Binvi, rd, rs1, shamt as i32),
                        0x0a if ext.zbs => i(Bseti, rd, rs1, shamt as i32),
                        0x18 if ext.zbb && f7 == 0x30 => match rs2 {
                            0 => i(Clz, rd, rs1, 0),
                            1 => i(Ctz, rd, rs1, 0),
                            2 => i(Cpop, rd, rs1, 0),
                            4 => i(SextB, rd, rs1, 0),
                            5 => i(SextH, rd, rs1, 0),
                            _ => illegal,
                        },
                        _ => illegal,
                    }
                }
                _ => {
                    // f3 == 5
                    if shamt > shamt_max {
                        return illegal;
                    }
                    match f6 {
                        0 => i(Srli, rd, rs1, shamt as i32),
                        0x10 => i(Srai, rd, rs1, shamt as i32),
                        0x18 if ext.zbb => i(Rori, rd, rs1, shamt as i32),
                        0x12 if ext.zbs => i(Bexti, rd, rs1, shamt as i32),
                        _ if ext.zbb && bits(x, 31, 20) == 0x287 => i(OrcB, rd, rs1, 0),
                        _ if ext.zbb && !rv64 && bits(x, 31, 20) == 0x698 => i(Rev8, rd, rs1, 0),
                        _ if ext.zbb && rv64 && bits(x, 31, 20) == 0x6b8 => i(Rev8, rd, rs1, 0),
                        _ => illegal,
                    }
                }
            }
        }
        0x33 => {
            let op = match (f7, f3) {
                (0, 0) => Add,
                (0x20, 0) => Sub,
                (0, 1) => Sll,
                (0, 2) => Slt,
                (0, 3) => Sltu,
                (0, 4) => Xor,
                (0, 5) => Srl,
                (0x20, 5) => Sra,
                (0, 6) => Or,
                (0, 7) => And,
                (1, 0) if ext.m => Mul,
                (1, 1) if ext.m => Mulh,
                (1, 2) if ext.m => Mulhsu,
                (1, 3) if ext.m => Mulhu,
                (1, 4) if ext.m => Div,
                (1, 5) if ext.m => Divu,
                (1, 6) if ext.m => Rem,
                (1, 7) if ext.m => Remu,
                (0x10, 2) if ext.zba => Sh1add,
                (0x10, 4) if ext.zba => Sh2add,
                (0x10, 6) if ext.zba => Sh3add,
                (0x20, 7) if ext.zbb => Andn,
                (0x20, 6) if ext.zbb => Orn,
                (0x20, 4) if ext.zbb => Xnor,
                (0x05, 6) if ext.zbb => Max,
                (0x05, 7) if ext.zbb => Maxu,
                (0x05, 4) if ext.zbb => Min,
                (0x05, 5) if ext.zbb => Minu,
                (0x30, 1) if ext.zbb => Rol,
                (0x30, 5) if ext.zbb => Ror,
                (0x04, 4) if ext.zbb && !rv64 && rs2 == 0 => ZextH,
                // Bit-manipulation 1.0.0, Zbs and Zbc.
                (0x24, 1) if ext.zbs => Bclr,
                (0x24, 5) if ext.zbs => Bext,
                (0x34, 1) if ext.zbs => Binv,
                (0x14, 1) if ext.zbs => Bset,
                (0x05, 1) if ext.zbc => Clmul,
                (0x05, 3) if ext.zbc => Clmulh,
                (0x05, 2) if ext.zbc => Clmulr,
                _ => return illegal,
            };
            r(op, rd, rs1, rs2)
        }
        0x1b if rv64 => match f3 {
            0 => i(Addiw, rd, rs1, imm_i),
            1 => match f7 {
                0 => i(Slliw, rd, rs1, rs2 as i32),
                0x30 if ext.zbb => match rs2 {
                    0 => i(Clzw, rd, rs1, 0),
                    1 => i(Ctzw, rd, rs1, 0),
                    2 => i(Cpopw, rd, rs1, 0),
                    _ => illegal,
                },
                _ if ext.zba && bits(x, 31, 26) == 0x02 => {
                    i(SlliUw, rd, rs1, bits(x, 25, 20) as i32)
                }
                _ => illegal,
            },
            5 => match f7 {
                0 => i(Srliw, rd, rs1, rs2 as i32),
                0x20 => i(Sraiw, rd, rs1, rs2 as i32),
                0x30 if ext.zbb => i(Roriw, rd, rs1, rs2 as i32),
                _ => illegal,
            },
            _ => illegal,
        },
        0x3b if rv64 => {
            let op = match (f7, f3) {
                (0, 0) => Addw,
                (0x20, 0) => Subw,
                (0, 1) => Sllw,
                (0, 5) => Srlw,
                (0x20, 5) => Sraw,
                (1, 0) if ext.m => Mulw,
                (1, 4) if ext.m => Divw,
                (1, 5) if ext.m => Divuw,
                (1, 6) if ext.m => Remw,
                (1, 7) if ext.m => Remuw,
                (0x04, 0) if ext.zba => AddUw,
                (0x10, 2) if ext.zba => Sh1addUw,
                (0x10, 4) if ext.zba => Sh2addUw,
                (0x10, 6) if ext.zba => Sh3addUw,
                (0x04, 4) if ext.zbb && rs2 == 0 => ZextH,
                (0x30, 1) if ext.zbb => Rolw,
                (0x30, 5) if ext.zbb => Rorw,
                _ => return illegal,
            };
            r(op, rd, rs1, rs2)
        }
        0x0f => match f3 {
            0 => i(Fence, rd, rs1, imm_i),
            1 => i(FenceI, rd, rs1, imm_i),
            _ => illegal,
        },
        0x73 => {
            let csr = bits(x, 31, 20) as i32;
            match f3 {
                0 => {
                    if rd != 0 {
                        return illegal;
                    }
                    match x {
                        0x0000_0073 => i(Ecall, 0, 0, 0),
                        0x0010_0073 => i(Ebreak, 0, 0, 0),
                        0x3020_0073 if true => i(Mret, 0, 0, 0),
                        0x1020_0073 if ext.s => i(Sret, 0, 0, 0),
                        0x1050_0073 => i(Wfi, 0, 0, 0),
                        _ if f7 == 0x09 && ext.s => r(SfenceVma, 0, rs1, rs2),
                        _ => illegal,
                    }
                }
                1 => i(Csrrw, rd, rs1, csr),
                2 => i(Csrrs, rd, rs1, csr),
                3 => i(Csrrc, rd, rs1, csr),
                5 => i(Csrrwi, rd, rs1, csr),
                6 => i(Csrrsi, rd, rs1, csr),
                7 => i(Csrrci, rd, rs1, csr),
                _ => illegal,
            }
        }
        0x2f if ext.a => {
            let f5 = bits(x, 31, 27);
            let aqrl = bits(x, 26, 25) as u8;
            let w = match f3 {
                2 => true,
                3 if rv64 => false,
                _ => return illegal,
            };
            let op = match (f5, w) {
                (0x02, true) if rs2 == 0 => LrW,
                (0x03, true) => ScW,
                (0x01, true) => AmoSwapW,
                (0x00, true) => AmoAddW,
                (0x04, true) => AmoXorW,
                (0x0c, true) => AmoAndW,
                (0x08, true) => AmoOrW,
                (0x10, true) => AmoMinW,
                (0x14, true) => AmoMaxW,
                (0x18, true) => AmoMinuW,
                (0x1c, true) => AmoMaxuW,
                (0x02, false) if rs2 == 0 => LrD,
                (0x03, false) => ScD,
                (0x01, false) => AmoSwapD,
                (0x00, false) => AmoAddD,
                (0x04, false) => AmoXorD,
                (0x0c, false) => AmoAndD,
                (0x08, false) => AmoOrD,
                (0x10, false) => AmoMinD,
                (0x14, false) => AmoMaxD,
                (0x18, false) => AmoMinuD,
                (0x1c, false) => AmoMaxuD,
                _ => return illegal,
            };
            Insn {
                rm: aqrl,
                ..r(op, rd, rs1, rs2)
            }
        }
        0x07 => match f3 {
            2 if ext.f => i(Flw, rd, rs1, imm_i),
            3 if ext.d => i(Fld, rd, rs1, imm_i),
            _ => illegal,
        },
        0x27 => {
            let op = match f3 {
                2 if ext.f => Fsw,
                3 if ext.d => Fsd,
                _ => return illegal,
            };
            Insn {
                op,
                rs1: rs1 as u8,
                rs2: rs2 as u8,
                imm: imm_s,
                len: 4,
                ..Insn::default()
            }
        }
        0x43 | 0x47 | 0x4b | 0x4f => {
            let fmt = bits(x, 26, 25);
            let single = match fmt {
                0 if ext.f => true,
                1 if ext.d => false,
                _ => return illegal,
            };
            let op = match (opcode, single) {
                (0x43, true) => FmaddS,
                (0x47, true) => FmsubS,
                (0x4b, true) => FnmsubS,
                (0x4f, true) => FnmaddS,
                (0x43, false) => FmaddD,
                (0x47, false) => FmsubD,
                (0x4b, false) => FnmsubD,
                _ => FnmaddD,
            };
            Insn {
                op,
                rd: rd as u8,
                rs1: rs1 as u8,
                rs2: rs2 as u8,
                rs3: bits(x, 31, 27) as u8,
                rm: f3 as u8,
                len: 4,
                imm: 0,
            }
        }
        0x53 => decode_fp(x, rd, f3, rs1, rs2, f7, rv64, ext),
        _ => illegal,
    }
}

#[allow(clippy::too_many_arguments)]
fn decode_fp(
    x: u32,
    rd: u32,
    f3: u32,
    rs1: u32,
    rs2: u32,
    f7: u32,
    rv64: bool,
    ext: &Extensions,
) -> Insn {
    use Op::*;
    let _ = x;
    let single = f7 & 1 == 0;
    // fmt field bits 26:25: 0 = S, 1 = D; 2 (H) and 3 (Q) are not implemented.
    if f7 & 3 > 1 || (single && !ext.f) || (!single && !ext.d) {
        return ILLEGAL32;
    }
    let s = |a: Op, b: Op| if single { a } else { b };
    let op = match f7 >> 2 {
        0x00 => s(FaddS, FaddD),
        0x01 => s(FsubS, FsubD),
        0x02 => s(FmulS, FmulD),
        0x03 => s(FdivS, FdivD),
        0x0b if rs2 == 0 => s(FsqrtS, FsqrtD),
        0x04 => match f3 {
            0 => s(FsgnjS, FsgnjD),
            1 => s(FsgnjnS, FsgnjnD),
            2 => s(FsgnjxS, FsgnjxD),
            _ => return ILLEGAL32,
        },
        0x05 => match f3 {
            0 => s(FminS, FminD),
            1 => s(FmaxS, FmaxD),
            _ => return ILLEGAL32,
        },
        0x08 => match (single, rs2) {
            (true, 1) => FcvtSD,
            (false, 0) => FcvtDS,
            _ => return ILLEGAL32,
        },
        0x14 => match f3 {
            0 => s(FleS, FleD),
            1 => s(FltS, FltD),
            2 => s(FeqS, FeqD),
            _ => return ILLEGAL32,
        },
        0x18 => match rs2 {
            0 => s(FcvtWS, FcvtWD),
            1 => s(FcvtWuS, FcvtWuD),
            2 if rv64 => s(FcvtLS, FcvtLD),
            3 if rv64 => s(FcvtLuS, FcvtLuD),
            _ => return ILLEGAL32,
        },
        0x1a => match rs2 {
            0 => s(FcvtSW, FcvtDW),
            1 => s(FcvtSWu, FcvtDWu),
            2 if rv64 => s(FcvtSL, FcvtDL),
            3 if rv64 => s(FcvtSLu, FcvtDLu),
            _ => return ILLEGAL32,
        },
        0x1c if rs2 == 0 => match f3 {
            0 if single || rv64 => s(FmvXW, FmvXD),
            1 => s(FclassS, FclassD),
            _ => return ILLEGAL32,
        },
        0x1e if rs2 == 0 && f3 == 0 && (single || rv64) => s(FmvWX, FmvDX),
        _ => return ILLEGAL32,
    };
    Insn {
        op,
        rd: rd as u8,
        rs1: rs1 as u8,
        rs2: rs2 as u8,
        rs3: 0,
        rm: f3 as u8,
        len: 4,
        imm: 0,
    }
}

/// Expand a compressed instruction (RVC, unprivileged ISA "C" chapter, tables of RVC opcode map).
fn decode_compressed(x: u16, xlen: Xlen, ext: &Extensions) -> Insn {
    use Op::*;
    let x = x as u32;
    let rv64 = xlen == Xlen::Rv64;
    let op = x & 3;
    let f3 = bits(x, 15, 13);
    let rd = bits(x, 11, 7);
    let rs2 = bits(x, 6, 2);
    let rdp = bits(x, 4, 2) + 8; // rd'/rs2'
    let rs1p = bits(x, 9, 7) + 8; // rs1'/rd'
    let illegal = Insn::default();
    let c = |op: Op, rd: u32, rs1: u32, rs2: u32, imm: i32| Insn {
        op,
        rd: rd as u8,
        rs1: rs1 as u8,
        rs2: rs2 as u8,
        imm,
        len: 2,
        ..Insn::default()
    };
    // Offsets of loads/stores scaled by 4 (word) and 8 (double).
    let uimm_w = (bits(x, 12, 10) << 3) | (bits(x, 6, 6) << 2) | (bits(x, 5, 5) << 6);
    let uimm_d = (bits(x, 12, 10) << 3) | (bits(x, 6, 5) << 6);
    match (op, f3) {
        (0, 0) => {
            // c.addi4spn
            let nzuimm = (bits(x, 12, 11) << 4)
                | (bits(x, 10, 7) << 6)
                | (bits(x, 6, 6) << 2)
                | (bits(x, 5, 5) << 3);
            if nzuimm == 0 {
                return illegal;
            }
            c(Addi, rdp, 2, 0, nzuimm as i32)
        }
        (0, 1) if ext.d => c(Fld, rdp, rs1p, 0, uimm_d as i32),
        (0, 2) => c(Lw, rdp, rs1p, 0, uimm_w as i32),
        (0, 3) if rv64 => c(Ld, rdp, rs1p, 0, uimm_d as i32),
        (0, 3) if ext.f => c(Flw, rdp, rs1p, 0, uimm_w as i32),
        (0, 5) if ext.d => c(Fsd, 0, rs1p, rdp, uimm_d as i32),
        (0, 6) => c(Sw, 0, rs1p, rdp, uimm_w as i32),
        (0, 7) if rv64 => c(Sd, 0, rs1p, rdp, uimm_d as i32),
        (0, 7) if ext.f => c(Fsw, 0, rs1p, rdp, uimm_w as i32),
        (1, 0) => {
            // c.addi / c.nop (HINTs when rd=0 or imm=0)
            let imm = sext((bits(x, 12, 12) << 5) | bits(x, 6, 2), 6);
            c(Addi, rd, rd, 0, imm)
        }
        (1, 1) => {
            if rv64 {
                // c.addiw
                if rd == 0 {
                    return illegal;
                }
                let imm = sext((bits(x, 12, 12) << 5) | bits(x, 6, 2), 6);
                c(Addiw, rd, rd, 0, imm)
            } else {
                // c.jal
                c(Jal, 1, 0, 0, cj_offset(x))
            }
        }
        (1, 2) => {
            // c.li
            let imm = sext((bits(x, 12, 12) << 5) | bits(x, 6, 2), 6);
            c(Addi, rd, 0, 0, imm)
        }
        (1, 3) => {
            if rd == 2 {
                // c.addi16sp
                let imm = sext(
                    (bits(x, 12, 12) << 9)
                        | (bits(x, 6, 6) << 4)
                        | (bits(x, 5, 5) << 6)
                        | (bits(x, 4, 3) << 7)
                        | (bits(x, 2, 2) << 5),
                    10,
                );
                if imm == 0 {
                    return illegal;
                }
                c(Addi, 2, 2, 0, imm)
            } else {
                // c.lui
                let imm = sext((bits(x, 12, 12) << 17) | (bits(x, 6, 2) << 12), 18);
                if imm == 0 {
                    return illegal;
                }
                c(Lui, rd, 0, 0, imm)
            }
        }
        (1, 4) => {
            let shamt = (bits(x, 12, 12) << 5) | bits(x, 6, 2);
            match bits(x, 11, 10) {
                0 | 1 => {
                    if !rv64 && shamt >= 32 {
                        return illegal;
                    }
                    let op = if bits(x, 11, 10) == 0 { Srli } else { Srai };
                    c(op, rs1p, rs1p, 0, shamt as i32)
                }
                2 => {
                    let imm = sext((bits(x, 12, 12) << 5) | bits(x, 6, 2), 6);
                    c(Andi, rs1p, rs1p, 0, imm)
                }
                _ => {
                    let op = match (bits(x, 12, 12), bits(x, 6, 5)) {
                        (0, 0) => Sub,
                        (0, 1) => Xor,
                        (0, 2) => Or,
                        (0, 3) => And,
                        (1, 0) if rv64 => Subw,
                        (1, 1) if rv64 => Addw,
                        _ => return illegal,
                    };
                    c(op, rs1p, rs1p, rdp, 0)
                }
            }
        }
        (1, 5) => c(Jal, 0, 0, 0, cj_offset(x)),
        (1, 6) | (1, 7) => {
            let imm = sext(
                (bits(x, 12, 12) << 8)
                    | (bits(x, 6, 5) << 6)
                    | (bits(x, 2, 2) << 5)
                    | (bits(x, 11, 10) << 3)
                    | (bits(x, 4, 3) << 1),
                9,
            );
            let op = if f3 == 6 { Beq } else { Bne };
            c(op, 0, rs1p, 0, imm)
        }
        (2, 0) => {
            let shamt = (bits(x, 12, 12) << 5) | bits(x, 6, 2);
            if !rv64 && shamt >= 32 {
                return illegal;
            }
            c(Slli, rd, rd, 0, shamt as i32)
        }
        (2, 1) if ext.d => {
            let off = (bits(x, 12, 12) << 5) | (bits(x, 6, 5) << 3) | (bits(x, 4, 2) << 6);
            c(Fld, rd, 2, 0, off as i32)
        }
        (2, 2) => {
            if rd == 0 {
                return illegal;
            }
            let off = (bits(x, 12, 12) << 5) | (bits(x, 6, 4) << 2) | (bits(x, 3, 2) << 6);
            c(Lw, rd, 2, 0, off as i32)
        }
        (2, 3) if rv64 => {
            if rd == 0 {
                return illegal;
            }
            let off = (bits(x, 12, 12) << 5) | (bits(x, 6, 5) << 3) | (bits(x, 4, 2) << 6);
            c(Ld, rd, 2, 0, off as i32)
        }
        (2, 3) if ext.f => {
            let off = (bits(x, 12, 12) << 5) | (bits(x, 6, 4) << 2) | (bits(x, 3, 2) << 6);
            c(Flw, rd, 2, 0, off as i32)
        }
        (2, 4) => {
            let b12 = bits(x, 12, 12);
            match (b12, rd, rs2) {
                (0, 0, 0) => illegal,
                (0, _, 0) => c(Jalr, 0, rd, 0, 0),  // c.jr
                (0, _, _) => c(Add, rd, 0, rs2, 0), // c.mv
                (1, 0, 0) => c(Ebreak, 0, 0, 0, 0),
                (1, _, 0) => c(Jalr, 1, rd, 0, 0), // c.jalr
                _ => c(Add, rd, rd, rs2, 0),       // c.add
            }
        }
        (2, 5) if ext.d => {
            let off = (bits(x, 12, 10) << 3) | (bits(x, 9, 7) << 6);
            c(Fsd, 0, 2, rs2, off as i32)
        }
        (2, 6) => {
            let off = (bits(x, 12, 9) << 2) | (bits(x, 8, 7) << 6);
            c(Sw, 0, 2, rs2, off as i32)
        }
        (2, 7) if rv64 => {
            let off = (bits(x, 12, 10) << 3) | (bits(x, 9, 7) << 6);
            c(Sd, 0, 2, rs2, off as i32)
        }
        (2, 7) if ext.f => {
            let off = (bits(x, 12, 9) << 2) | (bits(x, 8, 7) << 6);
            c(Fsw, 0, 2, rs2, off as i32)
        }
        _ => illegal,
    }
}

fn cj_offset(x: u32) -> i32 {
    sext(
        (bits(x, 12, 12) << 11)
            | (bits(x, 11, 11) << 4)
            | (bits(x, 10, 9) << 8)
            | (bits(x, 8, 8) << 10)
            | (bits(x, 7, 7) << 6)
            | (bits(x, 6, 6) << 7)
            | (bits(x, 5, 3) << 1)
            | (bits(x, 2, 2) << 5),
        12,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d64(x: u32) -> Insn {
        decode(x, Xlen::Rv64, &Extensions::ALL)
    }

    // Encodings below were checked with riscv64-unknown-elf-as and objdump (binutils 2.40).
    #[test]
    fn base_encodings() {
        // addi a0, a0, -1
        let x = d64(0xfff50513);
        assert_eq!((x.op, x.rd, x.rs1, x.imm), (Op::Addi, 10, 10, -1));
        // jal ra, -8
        let x = d64(0xff9ff0ef);
        assert_eq!((x.op, x.rd, x.imm), (Op::Jal, 1, -8));
        // beq a0, a1, +16: 00b50863
        let x = d64(0x00b50863);
        assert_eq!((x.op, x.rs1, x.rs2, x.imm), (Op::Beq, 10, 11, 16));
        // sd ra, 8(sp): 00113423
        let x = d64(0x00113423);
        assert_eq!((x.op, x.rs1, x.rs2, x.imm), (Op::Sd, 2, 1, 8));
        // csrr a0, mhartid: f1402573
        let x = d64(0xf1402573);
        assert_eq!((x.op, x.rd, x.imm), (Op::Csrrs, 10, 0xf14));
        assert_eq!(d64(0x00000000).op, Op::Illegal);
        assert_eq!(d64(0xffffffff).op, Op::Illegal);
    }

    /// Zbs and Zbc, encodings from binutils 2.40 (`as -march=rv64gc_zbs_zbc`): RV32 reserves
    /// shamt[5] = 1 of the immediate forms; without the extension each is illegal.
    #[test]
    fn zbs_zbc_encodings() {
        let none = Extensions {
            zbs: false,
            zbc: false,
            ..Extensions::ALL
        };
        for (bits, op, imm) in [
            (0x48c5_9533, Op::Bclr, 0),   // bclr a0,a1,a2
            (0x4bf5_9513, Op::Bclri, 63), // bclr a0,a1,0x3f
            (0x48c5_d533, Op::Bext, 0),
            (0x4855_d513, Op::Bexti, 5),
            (0x68c5_9533, Op::Binv, 0),
            (0x6805_9513, Op::Binvi, 0),
            (0x28c5_9533, Op::Bset, 0),
            (0x29f5_9513, Op::Bseti, 31),
            (0x0ac5_9533, Op::Clmul, 0),
            (0x0ac5_b533, Op::Clmulh, 0),
            (0x0ac5_a533, Op::Clmulr, 0),
        ] {
            let x = d64(bits);
            assert_eq!((x.op, x.rd, x.rs1, x.imm), (op, 10, 11, imm), "{bits:08x}");
            let rv32 = decode(bits, Xlen::Rv32, &Extensions::ALL).op;
            assert_eq!(rv32 == op, imm < 32, "{bits:08x} on RV32");
            assert_eq!(decode(bits, Xlen::Rv64, &none).op, Op::Illegal);
        }
    }

    #[test]
    fn compressed_encodings() {
        // c.addi4spn a0, sp, 16 = 0x0808
        let x = d64(0x0808);
        assert_eq!((x.op, x.rd, x.rs1, x.imm, x.len), (Op::Addi, 10, 2, 16, 2));
        // c.ldsp ra, 8(sp) = 0x60a2
        let x = d64(0x60a2);
        assert_eq!((x.op, x.rd, x.rs1, x.imm), (Op::Ld, 1, 2, 8));
        // c.sdsp ra, 8(sp) = 0xe406
        let x = d64(0xe406);
        assert_eq!((x.op, x.rs1, x.rs2, x.imm), (Op::Sd, 2, 1, 8));
        // ret = c.jr ra = 0x8082
        let x = d64(0x8082);
        assert_eq!((x.op, x.rd, x.rs1), (Op::Jalr, 0, 1));
        // c.ebreak = 0x9002
        assert_eq!(d64(0x9002).op, Op::Ebreak);
        // c.j -2 = 0xbffd
        let x = d64(0xbffd);
        assert_eq!((x.op, x.rd, x.imm), (Op::Jal, 0, -2));
        // c.beqz a0, +8 = 0xc501
        let x = d64(0xc501);
        assert_eq!((x.op, x.rs1, x.rs2, x.imm), (Op::Beq, 10, 0, 8));
        // c.addiw a0, 1 = 0x2505 on RV64; the same bits are c.jal on RV32 (c.jal .+2 = 0x2009).
        let x = d64(0x2505);
        assert_eq!((x.op, x.rd, x.imm), (Op::Addiw, 10, 1));
        let x = decode(0x2009, Xlen::Rv32, &Extensions::ALL);
        assert_eq!((x.op, x.rd, x.imm), (Op::Jal, 1, 2));
        // c.addiw with rd = 0 is reserved.
        assert_eq!(d64(0x2005).op, Op::Illegal);
        // c.unimp (0x0000) is illegal
        assert_eq!(d64(0x0000).op, Op::Illegal);
    }

    #[test]
    fn never_panics_on_any_parcel() {
        for x in 0..=0xffffu32 {
            let _ = decode(x, Xlen::Rv32, &Extensions::ALL);
            let _ = decode(x, Xlen::Rv64, &Extensions::ALL);
        }
        let mut rng = rvtrace_rng::Rng(0x1234_5678);
        for _ in 0..200_000 {
            let s = rng.next_u32();
            let _ = decode(s | 3, Xlen::Rv64, &Extensions::ALL);
            let _ = decode(s | 3, Xlen::Rv32, &Extensions::ALL);
        }
    }
}
