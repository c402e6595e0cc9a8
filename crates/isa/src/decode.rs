//! Classification of single instructions, static targets and sequentially inferable jumps.

use crate::{insn_len, CfClass, IsaConfig, Xlen};

/// What tracing needs to know about one instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InsnInfo {
    /// Length in bytes ([`insn_len`] of the low 16 bits; 0 for the reserved >= 192-bit prefix).
    pub len: u8,
    /// Control-flow class.
    pub class: CfClass,
    /// Static target as a signed offset from the instruction's own pc, for the classes whose target
    /// is a constant in the opcode: branches (the taken target, whatever the outcome), `jal`,
    /// `c.j`, `c.jal`, `c.beqz`, `c.bnez`. `None` otherwise (including `cm.jt`/`cm.jalt`, whose
    /// target is in the jump table; see [`table_jump_index`]).
    pub target: Option<i64>,
}

impl InsnInfo {
    /// The absolute static target for an instruction at `pc`, wrapped to the address width.
    pub const fn target_addr(&self, pc: u64, xlen: Xlen) -> Option<u64> {
        match self.target {
            Some(off) => Some(pc.wrapping_add(off as u64) & xlen.addr_mask()),
            None => None,
        }
    }

    const fn plain(len: u8) -> Self {
        InsnInfo {
            len,
            class: CfClass::None,
            target: None,
        }
    }

    const fn jump(len: u8, class: CfClass, target: Option<i64>) -> Self {
        InsnInfo { len, class, target }
    }
}

// ---------------------------------------------------------------------------------------------
// Fixed SYSTEM encodings (RISC-V Unprivileged ISA "Environment Call and Breakpoints"; Privileged
// ISA "Trap-Return Instructions"; Smrnmi `mnret`; Debug spec `dret`).

const ECALL: u32 = 0x0000_0073;
const EBREAK: u32 = 0x0010_0073;
const URET: u32 = 0x0020_0073;
const SRET: u32 = 0x1020_0073;
const MRET: u32 = 0x3020_0073;
const MNRET: u32 = 0x7020_0073;
const DRET: u32 = 0x7b20_0073;
/// `c.ebreak` (quadrant 2, funct4 = 1001, rs1 = rs2 = 0).
const C_EBREAK: u16 = 0x9002;

const OP_BRANCH: u32 = 0b110_0011;
const OP_JALR: u32 = 0b110_0111;
const OP_JAL: u32 = 0b110_1111;
const OP_SYSTEM: u32 = 0b111_0011;
const OP_LUI: u32 = 0b011_0111;
const OP_AUIPC: u32 = 0b001_0111;

/// Link registers `x1`/`x5` (E-Trace JumpClasses; N-Trace Table 2 note "link").
const fn is_link(r: u32) -> bool {
    r == 1 || r == 5
}

/// Sign-extend the low `bits` bits of `v`.
const fn sext(v: u32, bits: u32) -> i64 {
    let sh = 64 - bits;
    ((v as u64) << sh) as i64 >> sh
}

const fn bit(v: u32, i: u32) -> u32 {
    (v >> i) & 1
}

const fn field(v: u32, lo: u32, width: u32) -> u32 {
    (v >> lo) & ((1 << width) - 1)
}

/// B-type immediate (`beq` etc.): imm[12|10:5] = [31:25], imm[4:1|11] = [11:7].
const fn imm_b(b: u32) -> i64 {
    let v = (bit(b, 31) << 12) | (bit(b, 7) << 11) | (field(b, 25, 6) << 5) | (field(b, 8, 4) << 1);
    sext(v, 13)
}

/// J-type immediate (`jal`): imm[20|10:1|11|19:12] = [31:12].
const fn imm_j(b: u32) -> i64 {
    let v =
        (bit(b, 31) << 20) | (field(b, 12, 8) << 12) | (bit(b, 20) << 11) | (field(b, 21, 10) << 1);
    sext(v, 21)
}

/// I-type immediate (`jalr`): imm[11:0] = [31:20].
const fn imm_i(b: u32) -> i64 {
    sext(b >> 20, 12)
}

/// U-type immediate (`lui`/`auipc`): imm[31:12] = [31:12], sign-extended from bit 31.
const fn imm_u(b: u32) -> i64 {
    (b & 0xffff_f000) as i32 as i64
}

/// CJ-format immediate (`c.j`/`c.jal`): [12:2] = imm[11|4|9:8|10|6|7|3:1|5].
const fn imm_cj(b: u32) -> i64 {
    let v = (bit(b, 12) << 11)
        | (bit(b, 11) << 4)
        | (field(b, 9, 2) << 8)
        | (bit(b, 8) << 10)
        | (bit(b, 7) << 6)
        | (bit(b, 6) << 7)
        | (field(b, 3, 3) << 1)
        | (bit(b, 2) << 5);
    sext(v, 12)
}

/// CB-format branch immediate (`c.beqz`/`c.bnez`): [12:10] = imm[8|4:3], [6:2] = imm[7:6|2:1|5].
const fn imm_cb(b: u32) -> i64 {
    let v = (bit(b, 12) << 8)
        | (field(b, 10, 2) << 3)
        | (field(b, 5, 2) << 6)
        | (field(b, 3, 2) << 1)
        | (bit(b, 2) << 5);
    sext(v, 9)
}

/// `c.lui` immediate: nzimm[17] = [12], nzimm[16:12] = [6:2], sign-extended from bit 17.
const fn imm_clui(b: u32) -> i64 {
    let v = (bit(b, 12) << 17) | (field(b, 2, 5) << 12);
    sext(v, 18)
}

/// `jal rd` class by the link rules (E-Trace JumpClasses: calls `jal x1`/`jal x5`; jumps without
/// linkage `jal x0`; other jumps with linkage `jal rd`, rd not x0/x1/x5).
const fn jal_class(rd: u32) -> CfClass {
    if is_link(rd) {
        CfClass::InferableCall
    } else if rd == 0 {
        CfClass::InferableJump
    } else {
        CfClass::OtherInferableJump
    }
}

/// `jalr rd, rs1` class by the link rules (E-Trace JumpClasses; N-Trace Table 2 rows "jalr rd, rs1").
/// `c.jr rs1` is `jalr x0, rs1` and `c.jalr rs1` is `jalr x1, rs1`.
const fn jalr_class(rd: u32, rs1: u32) -> CfClass {
    match (is_link(rd), is_link(rs1)) {
        // Calls: jalr x1, rs (rs != x5); jalr x5, rs (rs != x1). Co-routine swap: jalr x1, x5 / x5, x1.
        (true, true) if rd != rs1 => CfClass::CoroutineSwap,
        (true, _) => CfClass::UninferableCall,
        // Returns: jalr rd, rs with rs link and rd not link.
        (false, true) => CfClass::Return,
        // Jumps without linkage: jalr x0, rs (rs not link).
        (false, false) if rd == 0 => CfClass::UninferableJump,
        // Other jumps with linkage: jalr rd, rs (rd not x0/x1/x5, rs not link).
        (false, false) => CfClass::OtherUninferableJump,
    }
}

/// Classify one instruction.
///
/// `bits` holds the instruction with its first parcel in the low 16 bits; for 16-bit instructions
/// the upper 16 bits are ignored. The length always comes from [`insn_len`]; instructions longer
/// than 32 bits, unknown, illegal and reserved encodings are [`CfClass::None`]. Never panics.
pub const fn classify(cfg: &IsaConfig, bits: u32) -> InsnInfo {
    let len = insn_len(bits as u16);
    match len {
        2 => classify16(cfg, bits & 0xffff),
        4 => classify32(bits),
        _ => InsnInfo::plain(len as u8),
    }
}

const fn classify32(b: u32) -> InsnInfo {
    let opcode = b & 0x7f;
    let rd = field(b, 7, 5);
    let funct3 = field(b, 12, 3);
    let rs1 = field(b, 15, 5);
    match opcode {
        // beq 000, bne 001, blt 100, bge 101, bltu 110, bgeu 111; 010/011 are reserved.
        OP_BRANCH if funct3 != 0b010 && funct3 != 0b011 => {
            InsnInfo::jump(4, CfClass::Branch, Some(imm_b(b)))
        }
        OP_JAL => InsnInfo::jump(4, jal_class(rd), Some(imm_j(b))),
        OP_JALR if funct3 == 0 => InsnInfo::jump(4, jalr_class(rd, rs1), None),
        OP_SYSTEM => match b {
            ECALL | EBREAK => InsnInfo::jump(4, CfClass::EnvTrap, None),
            MRET | SRET | URET | MNRET | DRET => InsnInfo::jump(4, CfClass::TrapReturn, None),
            _ => InsnInfo::plain(4),
        },
        _ => InsnInfo::plain(4),
    }
}

const fn classify16(cfg: &IsaConfig, b: u32) -> InsnInfo {
    let quadrant = b & 0b11;
    let funct3 = field(b, 13, 3);
    match (quadrant, funct3) {
        // Q1 001: c.jal on RV32 (jal x1, offset); c.addiw on RV64.
        (0b01, 0b001) => match cfg.xlen {
            Xlen::Rv32 => InsnInfo::jump(2, CfClass::InferableCall, Some(imm_cj(b))),
            Xlen::Rv64 => InsnInfo::plain(2),
        },
        // Q1 101: c.j (jal x0, offset).
        (0b01, 0b101) => InsnInfo::jump(2, CfClass::InferableJump, Some(imm_cj(b))),
        // Q1 110 / 111: c.beqz / c.bnez.
        (0b01, 0b110) | (0b01, 0b111) => InsnInfo::jump(2, CfClass::Branch, Some(imm_cb(b))),
        // Q2 100: c.jr / c.mv / c.ebreak / c.jalr / c.add.
        (0b10, 0b100) => {
            let rs1 = field(b, 7, 5);
            let rs2 = field(b, 2, 5);
            if b as u16 == C_EBREAK {
                InsnInfo::jump(2, CfClass::EnvTrap, None)
            } else if rs2 != 0 || rs1 == 0 {
                // c.mv / c.add (rs2 != 0), or reserved (c.jr with rs1 = 0).
                InsnInfo::plain(2)
            } else if bit(b, 12) == 0 {
                // c.jr rs1 = jalr x0, 0(rs1).
                InsnInfo::jump(2, jalr_class(0, rs1), None)
            } else {
                // c.jalr rs1 = jalr x1, 0(rs1).
                InsnInfo::jump(2, jalr_class(1, rs1), None)
            }
        }
        // Q2 101: c.fsdsp, or Zcmt cm.jt/cm.jalt and Zcmp cm.* when present (Zc specification).
        (0b10, 0b101) => classify_zc(cfg, b),
        _ => InsnInfo::plain(2),
    }
}

/// Quadrant 2, funct3 = 101 (the `c.fsdsp` space) with Zcmt/Zcmp.
const fn classify_zc(cfg: &IsaConfig, b: u32) -> InsnInfo {
    if let Some(index) = zcmt_index(cfg, b) {
        // Zcmt: index < 32 is cm.jt (no link), >= 32 is cm.jalt (links x1).
        let class = if index < 32 {
            CfClass::TableJump
        } else {
            CfClass::TableCall
        };
        return InsnInfo::jump(2, class, None);
    }
    if cfg.zcmp {
        // Zcmp push/pop: [12:8] = 11000 cm.push, 11010 cm.pop, 11100 cm.popretz, 11110 cm.popret;
        // rlist = [7:4], values 0-3 are reserved.
        let op = field(b, 8, 5);
        let rlist = field(b, 4, 4);
        if (op == 0b11100 || op == 0b11110) && rlist >= 4 {
            return InsnInfo::jump(2, CfClass::PopRet, None);
        }
    }
    InsnInfo::plain(2)
}

/// Zcmt `cm.jt`/`cm.jalt` index ([9:2]) if `b` is one: quadrant 2, funct3 = 101, [12:10] = 000.
const fn zcmt_index(cfg: &IsaConfig, b: u32) -> Option<u8> {
    if cfg.zcmt && b & 0b11 == 0b10 && field(b, 13, 3) == 0b101 && field(b, 10, 3) == 0 {
        Some(field(b, 2, 8) as u8)
    } else {
        None
    }
}

/// The Zcmt table index of `cm.jt` (0-31) or `cm.jalt` (32-255), or `None` if `bits` is not one
/// (or Zcmt is off). Low 16 bits only.
pub const fn table_jump_index(cfg: &IsaConfig, bits: u32) -> Option<u8> {
    if insn_len(bits as u16) != 2 {
        return None;
    }
    zcmt_index(cfg, bits & 0xffff)
}

/// Address of the Zcmt jump-table entry for `index`, given the `jvt` CSR value: `jvt.base` (`jvt`
/// with the 6-bit `mode` field cleared) + `index` * XLEN/8. The jump target is the XLEN-bit entry
/// read there, with bit 0 cleared.
pub const fn table_entry_addr(jvt: u64, index: u8, xlen: Xlen) -> u64 {
    let base = jvt & !0x3f;
    let entry = (xlen.bits() / 8) as u64;
    base.wrapping_add(index as u64 * entry) & xlen.addr_mask()
}

/// A constant load usable for sequential inference: `lui`, `auipc` or `c.lui`.
#[derive(Clone, Copy)]
enum ConstLoad {
    /// `lui`/`c.lui`: rd = value.
    Abs { rd: u32, value: i64 },
    /// `auipc`: rd = pc + offset.
    PcRel { rd: u32, offset: i64 },
}

impl ConstLoad {
    const fn rd(self) -> u32 {
        match self {
            ConstLoad::Abs { rd, .. } | ConstLoad::PcRel { rd, .. } => rd,
        }
    }
}

/// Decode `lui`/`auipc`/`c.lui` writing a register other than x0 (E-Trace JumpClasses).
const fn const_load(bits: u32) -> Option<ConstLoad> {
    match insn_len(bits as u16) {
        4 => {
            let rd = field(bits, 7, 5);
            if rd == 0 {
                return None;
            }
            match bits & 0x7f {
                OP_LUI => Some(ConstLoad::Abs {
                    rd,
                    value: imm_u(bits),
                }),
                OP_AUIPC => Some(ConstLoad::PcRel {
                    rd,
                    offset: imm_u(bits),
                }),
                _ => None,
            }
        }
        2 => {
            // c.lui: Q1 funct3 011, rd != x0/x2 (x2 is c.addi16sp), nzimm != 0 (else reserved).
            let rd = field(bits, 7, 5);
            if bits & 0b11 == 0b01 && field(bits, 13, 3) == 0b011 && rd != 0 && rd != 2 {
                let value = imm_clui(bits);
                if value != 0 {
                    return Some(ConstLoad::Abs { rd, value });
                }
            }
            None
        }
        _ => None,
    }
}

/// Decode an indirect jump: `jalr` (rs1 != x0), `c.jr`, `c.jalr`; returns (rs1, offset).
const fn indirect_jump(bits: u32) -> Option<(u32, i64)> {
    match insn_len(bits as u16) {
        4 => {
            let rs1 = field(bits, 15, 5);
            if bits & 0x7f == OP_JALR && field(bits, 12, 3) == 0 && rs1 != 0 {
                Some((rs1, imm_i(bits)))
            } else {
                None
            }
        }
        2 => {
            // Q2 100, rs2 = 0, rs1 != 0: c.jr ([12] = 0) or c.jalr ([12] = 1).
            let rs1 = field(bits, 7, 5);
            if bits & 0b11 == 0b10
                && field(bits, 13, 3) == 0b100
                && field(bits, 2, 5) == 0
                && rs1 != 0
            {
                Some((rs1, 0))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// E-Trace `JumpClasses` "sequentially inferable": true if `prev_bits` is a `lui`, `auipc` or
/// `c.lui` writing register r (r != x0) and `jump_bits` is a `jalr`, `c.jr` or `c.jalr` reading r as
/// rs1 (also E-Trace `decoder.adoc` `is_sequential_jump`). Whether the pair actually retired
/// consecutively is the caller's business. `cfg` is accepted for symmetry; these encodings do not
/// depend on it.
/// (Inlined, the load tested first: writers of trace ask it of every uninferable jump, and most
/// jumps follow something other than a constant load.)
#[inline]
pub const fn is_sequentially_inferable(cfg: &IsaConfig, prev_bits: u32, jump_bits: u32) -> bool {
    let _ = cfg;
    let Some(load) = const_load(prev_bits) else {
        return false;
    };
    match indirect_jump(jump_bits) {
        Some((rs1, _)) => load.rd() == rs1,
        None => false,
    }
}

/// The target of a sequentially inferable pair (see [`is_sequentially_inferable`]), given the pc of
/// the `lui`/`auipc`/`c.lui`: (`auipc` ? `prev_pc` : 0) + its immediate + the `jalr` offset, with
/// bit 0 cleared (JALR semantics) and wrapped to XLEN (E-Trace `decoder.adoc`
/// `sequential_jump_target`). `None` if the pair is not sequentially inferable.
pub const fn sequentially_inferred_target(
    cfg: &IsaConfig,
    prev_pc: u64,
    prev_bits: u32,
    jump_bits: u32,
) -> Option<u64> {
    let (load, rs1, off) = match (const_load(prev_bits), indirect_jump(jump_bits)) {
        (Some(load), Some((rs1, off))) => (load, rs1, off),
        _ => return None,
    };
    if load.rd() != rs1 {
        return None;
    }
    let base = match load {
        ConstLoad::Abs { value, .. } => value as u64,
        ConstLoad::PcRel { offset, .. } => prev_pc.wrapping_add(offset as u64),
    };
    Some(base.wrapping_add(off as u64) & !1 & cfg.xlen.addr_mask())
}
