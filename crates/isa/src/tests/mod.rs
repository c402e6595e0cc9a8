//! Unit tests. Encodings are built from fields by the small encoders below (written from the ISA
//! manual's encoding tables, independently of the decoder), and a few are checked against known
//! assembler output.

mod decode;
mod etrace;
mod exhaustive;
mod ntrace;
mod seq;

use crate::{classify, CfClass, IsaConfig, Itype};

// ------------------------------------------------------------------------------------------
// 32-bit encoders (RISC-V Unprivileged ISA, "Base Instruction Formats").

/// `jal rd, off` (J-type: [31]=imm[20], [30:21]=imm[10:1], [20]=imm[11], [19:12]=imm[19:12]).
pub fn jal(rd: u32, off: i32) -> u32 {
    let o = off as u32;
    (((o >> 20) & 1) << 31)
        | (((o >> 1) & 0x3ff) << 21)
        | (((o >> 11) & 1) << 20)
        | (((o >> 12) & 0xff) << 12)
        | (rd << 7)
        | 0x6f
}

/// `jalr rd, imm(rs1)` (I-type, funct3 = 000).
pub fn jalr(rd: u32, rs1: u32, imm: i32) -> u32 {
    (((imm as u32) & 0xfff) << 20) | (rs1 << 15) | (rd << 7) | 0x67
}

/// `jalr` with a non-zero funct3 (reserved).
pub fn jalr_f3(rd: u32, rs1: u32, f3: u32) -> u32 {
    jalr(rd, rs1, 0) | (f3 << 12)
}

/// Conditional branch (B-type: [31]=imm[12], [30:25]=imm[10:5], [11:8]=imm[4:1], [7]=imm[11]).
pub fn branch(f3: u32, rs1: u32, rs2: u32, off: i32) -> u32 {
    let o = off as u32;
    (((o >> 12) & 1) << 31)
        | (((o >> 5) & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (f3 << 12)
        | (((o >> 1) & 0xf) << 8)
        | (((o >> 11) & 1) << 7)
        | 0x63
}

/// `lui rd, imm20`.
pub fn lui(rd: u32, imm20: u32) -> u32 {
    ((imm20 & 0xfffff) << 12) | (rd << 7) | 0x37
}

/// `auipc rd, imm20`.
pub fn auipc(rd: u32, imm20: u32) -> u32 {
    ((imm20 & 0xfffff) << 12) | (rd << 7) | 0x17
}

/// `addi rd, rs1, imm`.
pub fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    (((imm as u32) & 0xfff) << 20) | (rs1 << 15) | (rd << 7) | 0x13
}

/// Branch funct3 values: beq, bne, blt, bge, bltu, bgeu.
pub const BRANCH_F3: [u32; 6] = [0b000, 0b001, 0b100, 0b101, 0b110, 0b111];

pub const ECALL: u32 = 0x0000_0073;
pub const EBREAK: u32 = 0x0010_0073;
pub const URET: u32 = 0x0020_0073;
pub const SRET: u32 = 0x1020_0073;
pub const MRET: u32 = 0x3020_0073;
pub const MNRET: u32 = 0x7020_0073;
pub const DRET: u32 = 0x7b20_0073;
pub const WFI: u32 = 0x1050_0073;

// ------------------------------------------------------------------------------------------
// 16-bit encoders (RISC-V Unprivileged ISA, "C" extension instruction listings; Zc spec).

/// CJ-format offset bits: [12]=imm[11], [11]=imm[4], [10:9]=imm[9:8], [8]=imm[10], [7]=imm[6],
/// [6]=imm[7], [5:3]=imm[3:1], [2]=imm[5].
fn cj(off: i32) -> u32 {
    let o = off as u32;
    (((o >> 11) & 1) << 12)
        | (((o >> 4) & 1) << 11)
        | (((o >> 8) & 3) << 9)
        | (((o >> 10) & 1) << 8)
        | (((o >> 6) & 1) << 7)
        | (((o >> 7) & 1) << 6)
        | (((o >> 1) & 7) << 3)
        | (((o >> 5) & 1) << 2)
}

/// CB-format branch offset bits: [12]=imm[8], [11:10]=imm[4:3], [6:5]=imm[7:6], [4:3]=imm[2:1],
/// [2]=imm[5].
fn cb(off: i32) -> u32 {
    let o = off as u32;
    (((o >> 8) & 1) << 12)
        | (((o >> 3) & 3) << 10)
        | (((o >> 6) & 3) << 5)
        | (((o >> 1) & 3) << 3)
        | (((o >> 5) & 1) << 2)
}

/// `c.j off` (Q1, funct3 101).
pub fn c_j(off: i32) -> u32 {
    (0b101 << 13) | cj(off) | 0b01
}

/// `c.jal off` (Q1, funct3 001; RV32 only).
pub fn c_jal(off: i32) -> u32 {
    (0b001 << 13) | cj(off) | 0b01
}

/// `c.beqz rs1', off` (Q1, funct3 110); `rs1p` is the 3-bit register (x8 + rs1p).
pub fn c_beqz(rs1p: u32, off: i32) -> u32 {
    (0b110 << 13) | cb(off) | (rs1p << 7) | 0b01
}

/// `c.bnez rs1', off` (Q1, funct3 111).
pub fn c_bnez(rs1p: u32, off: i32) -> u32 {
    (0b111 << 13) | cb(off) | (rs1p << 7) | 0b01
}

/// `c.jr rs1` (Q2, funct4 1000, rs2 = 0).
pub fn c_jr(rs1: u32) -> u32 {
    (0b1000 << 12) | (rs1 << 7) | 0b10
}

/// `c.jalr rs1` (Q2, funct4 1001, rs2 = 0).
pub fn c_jalr(rs1: u32) -> u32 {
    (0b1001 << 12) | (rs1 << 7) | 0b10
}

/// `c.mv rd, rs2` (Q2, funct4 1000).
pub fn c_mv(rd: u32, rs2: u32) -> u32 {
    (0b1000 << 12) | (rd << 7) | (rs2 << 2) | 0b10
}

/// `c.add rd, rs2` (Q2, funct4 1001).
pub fn c_add(rd: u32, rs2: u32) -> u32 {
    (0b1001 << 12) | (rd << 7) | (rs2 << 2) | 0b10
}

/// `c.ebreak`.
pub const C_EBREAK: u32 = 0x9002;

/// `c.lui rd, nzimm` with `imm6` = nzimm[17:12] as a signed 6-bit value ([12]=nzimm[17],
/// [6:2]=nzimm[16:12]).
pub fn c_lui(rd: u32, imm6: i32) -> u32 {
    let i = imm6 as u32;
    (0b011 << 13) | (((i >> 5) & 1) << 12) | (rd << 7) | ((i & 0x1f) << 2) | 0b01
}

/// `c.addiw rd, imm` (RV64; same space as RV32 `c.jal`).
pub fn c_addiw(rd: u32, imm6: i32) -> u32 {
    let i = imm6 as u32;
    (0b001 << 13) | (((i >> 5) & 1) << 12) | (rd << 7) | ((i & 0x1f) << 2) | 0b01
}

/// `c.fsdsp rs2, uimm(sp)` (Q2, funct3 101): [12:10]=uimm[5:3], [9:7]=uimm[8:6].
pub fn c_fsdsp(rs2: u32, uimm: u32) -> u32 {
    (0b101 << 13) | (((uimm >> 3) & 7) << 10) | (((uimm >> 6) & 7) << 7) | (rs2 << 2) | 0b10
}

/// Zcmt `cm.jt index` / `cm.jalt index`: Q2, funct3 101, [12:10] = 000, [9:2] = index.
pub fn cm_jt(index: u32) -> u32 {
    (0b101 << 13) | ((index & 0xff) << 2) | 0b10
}

/// Zcmp push/pop group: Q2, funct3 101, [12:8] = `op5`, [7:4] = rlist, [3:2] = spimm.
fn cm_pp(op5: u32, rlist: u32, spimm: u32) -> u32 {
    (0b101 << 13) | (op5 << 8) | (rlist << 4) | (spimm << 2) | 0b10
}

/// `cm.push {rlist}, -stack_adj`.
pub fn cm_push(rlist: u32, spimm: u32) -> u32 {
    cm_pp(0b11000, rlist, spimm)
}

/// `cm.pop {rlist}, stack_adj`.
pub fn cm_pop(rlist: u32, spimm: u32) -> u32 {
    cm_pp(0b11010, rlist, spimm)
}

/// `cm.popretz {rlist}, stack_adj`.
pub fn cm_popretz(rlist: u32, spimm: u32) -> u32 {
    cm_pp(0b11100, rlist, spimm)
}

/// `cm.popret {rlist}, stack_adj`.
pub fn cm_popret(rlist: u32, spimm: u32) -> u32 {
    cm_pp(0b11110, rlist, spimm)
}

/// `cm.mvsa01 r1s', r2s'`: Q2, funct3 101, [12:10] = 011, [6:5] = 01.
pub fn cm_mvsa01(r1s: u32, r2s: u32) -> u32 {
    (0b101 << 13) | (0b011 << 10) | (r1s << 7) | (0b01 << 5) | (r2s << 2) | 0b10
}

// ------------------------------------------------------------------------------------------
// Shorthands.

pub const RV32: IsaConfig = IsaConfig::rv32();
pub const RV64: IsaConfig = IsaConfig::rv64();
/// RV32 with Zcmp and Zcmt (they may coexist; neither with Zcd).
pub const RV32_ZC: IsaConfig = IsaConfig::rv32().with_zcmp(true).with_zcmt(true);
/// RV64 with Zcmp and Zcmt.
pub const RV64_ZC: IsaConfig = IsaConfig::rv64().with_zcmp(true).with_zcmt(true);
/// Every configuration the tests sweep.
pub const CONFIGS: [IsaConfig; 8] = [
    RV32,
    RV64,
    RV32_ZC,
    RV64_ZC,
    IsaConfig::rv32().with_zcmp(true),
    IsaConfig::rv32().with_zcmt(true),
    IsaConfig::rv64().with_zcmp(true),
    IsaConfig::rv64().with_zcmt(true),
];

/// Class of `bits` under `cfg`.
pub fn class(cfg: &IsaConfig, bits: u32) -> CfClass {
    classify(cfg, bits).class
}

/// N-Trace rc7 itype of `bits`.
pub fn nt(cfg: &IsaConfig, bits: u32, taken: bool, width: u8) -> Itype {
    class(cfg, bits).ntrace_itype(taken, width)
}

/// E-Trace v2.0 itype of `bits`.
pub fn et(cfg: &IsaConfig, bits: u32, taken: bool, width: u8) -> Itype {
    class(cfg, bits).etrace_itype(taken, width)
}

/// x1 or x5.
pub fn link(r: u32) -> bool {
    r == 1 || r == 5
}

/// Known assembler encodings, to pin the encoders above to reality.
#[test]
fn encoders_match_known_encodings() {
    assert_eq!(jal(0, 0), 0x0000_006f); // j .
    assert_eq!(jal(1, 0), 0x0000_00ef); // jal ra, .
    assert_eq!(jal(0, -4), 0xffdf_f06f); // j .-4
    assert_eq!(jalr(0, 1, 0), 0x0000_8067); // ret
    assert_eq!(jalr(1, 1, 0), 0x0000_80e7); // jalr ra
    assert_eq!(branch(0, 0, 0, -4), 0xfe00_0ee3); // beqz zero, .-4
    assert_eq!(lui(10, 0x12345), 0x1234_5537); // lui a0, 0x12345
    assert_eq!(auipc(1, 0), 0x0000_0097); // auipc ra, 0
    assert_eq!(addi(0, 0, 0), 0x0000_0013); // nop
    assert_eq!(c_j(0), 0xa001);
    assert_eq!(c_j(-2), 0xbffd);
    assert_eq!(c_jal(2046), 0x2ffd); // c.jal 2046 (llvm compress-cjal.s)
    assert_eq!(c_beqz(2, 0), 0xc101); // c.beqz a0, .
    assert_eq!(c_bnez(2, 0), 0xe101); // c.bnez a0, .
    assert_eq!(c_jr(1), 0x8082); // c.jr ra (ret)
    assert_eq!(c_jalr(1), 0x9082); // c.jalr ra
    assert_eq!(c_mv(10, 11), 0x852e); // c.mv a0, a1
    assert_eq!(cm_jt(0), 0xa002); // cm.jt 0
    assert_eq!(cm_jt(1), 0xa006); // cm.jt 1
    assert_eq!(cm_jt(32), 0xa082); // cm.jalt 32
    assert_eq!(cm_popret(4, 0), 0xbe42); // cm.popret {ra}, 16
    assert_eq!(cm_popret(4, 1), 0xbe46); // cm.popret {ra}, 32
    assert_eq!(cm_popret(5, 3), 0xbe5e); // cm.popret {ra, s0}, 64
    assert_eq!(cm_mvsa01(1, 0), 0xaca2); // cm.mvsa01 s1, s0
}
