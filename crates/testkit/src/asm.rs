//! Hand encoding of RV32I/RV64I instructions for tests that write small programs into a hart's
//! RAM (unprivileged ISA, "Base Instruction Formats"; privileged ISA for `mret`/`wfi`). One copy
//! of each format, shared by the random-program generator ([`crate::randprog`]) and the tests.

/// R-type.
pub fn r_type(f7: u32, rs2: u32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
/// I-type (`imm` in -2048..2048).
pub fn i_type(imm: i64, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    debug_assert!((-2048..2048).contains(&imm));
    (((imm as u32) & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
/// S-type (stores).
pub fn s_type(imm: i64, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let i = imm as u32;
    ((i >> 5 & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((i & 0x1f) << 7) | 0x23
}
/// B-type (conditional branches; `off` even, in -4096..4096).
pub fn b_type(off: i64, rs2: u32, rs1: u32, f3: u32) -> u32 {
    debug_assert!((-4096..4096).contains(&off) && off % 2 == 0);
    let i = off as u32;
    ((i >> 12 & 1) << 31)
        | ((i >> 5 & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (f3 << 12)
        | ((i >> 1 & 0xf) << 8)
        | ((i >> 11 & 1) << 7)
        | 0x63
}
/// J-type (`jal`; `off` even, within ±1 MiB).
pub fn j_type(off: i64, rd: u32) -> u32 {
    debug_assert!((-(1 << 20)..(1 << 20)).contains(&off) && off % 2 == 0);
    let i = off as u32;
    ((i >> 20 & 1) << 31)
        | ((i >> 1 & 0x3ff) << 21)
        | ((i >> 11 & 1) << 20)
        | ((i >> 12 & 0xff) << 12)
        | (rd << 7)
        | 0x6f
}

/// `addi rd, rs1, imm`.
pub fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(imm.into(), rs1, 0, rd, 0x13)
}
/// `csrrw rd, csr, rs1` (`csrw csr, rs1` with rd = 0).
pub fn csrrw(rd: u32, csr: u16, rs1: u32) -> u32 {
    i_type(csr_imm(csr), rs1, 1, rd, 0x73)
}
/// `csrr rd, csr` (`csrrs rd, csr, x0`).
pub fn csrr(rd: u32, csr: u16) -> u32 {
    i_type(csr_imm(csr), 0, 2, rd, 0x73)
}
/// `csrs csr, rs1` (`csrrs x0, csr, rs1`).
pub fn csrs(csr: u16, rs1: u32) -> u32 {
    i_type(csr_imm(csr), rs1, 2, 0, 0x73)
}
/// `ld rd, imm(rs1)`.
pub fn ld(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(imm.into(), rs1, 3, rd, 0x03)
}
/// `sd rs2, imm(rs1)`.
pub fn sd(rs2: u32, rs1: u32, imm: i32) -> u32 {
    s_type(imm.into(), rs2, rs1, 3)
}
/// `jal rd, off`.
pub fn jal(rd: u32, off: i32) -> u32 {
    j_type(off.into(), rd)
}
/// `jalr rd, imm(rs1)`.
pub fn jalr(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(imm.into(), rs1, 0, rd, 0x67)
}
/// A conditional branch with funct3 `f3` (0 beq, 1 bne, 4 blt, ...): `b<cc> rs1, rs2, off`.
pub fn branch(f3: u32, rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(off.into(), rs2, rs1, f3)
}

/// The 12-bit CSR number as the I-type immediate field holds it (sign-extended, so that
/// [`i_type`]'s range holds for CSRs 0x800..0xfff too).
fn csr_imm(csr: u16) -> i64 {
    (((csr as i64) & 0xfff) << 52) >> 52
}

/// `nop` (`addi x0, x0, 0`).
pub const NOP: u32 = 0x13;
/// `ecall`.
pub const ECALL: u32 = 0x73;
/// `ebreak`.
pub const EBREAK: u32 = 0x0010_0073;
/// `mret`.
pub const MRET: u32 = 0x3020_0073;
/// `wfi`.
pub const WFI: u32 = 0x1050_0073;
/// `j .` (`jal x0, 0`).
pub const SPIN: u32 = 0x0000_006f;

/// The little-endian bytes of a program of 32-bit words.
pub fn bytes(code: &[u32]) -> Vec<u8> {
    code.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A hart of configuration `cfg` without semihosting (hand-written programs make no
/// semihosting calls), `code` at the start of RAM and `pc` there.
pub fn hart_with_code(cfg: rvtrace_sim::Config, code: &[u32]) -> rvtrace_sim::Hart {
    let mut h = rvtrace_sim::Hart::new(&cfg);
    let base = rvtrace_sim::bus::RAM_BASE;
    assert!(
        h.bus.write_ram(base, &bytes(code)),
        "the program fits in RAM"
    );
    h.pc = base;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodings checked against GNU as (riscv64-unknown-elf-as 2.40, `objdump -d`).
    #[test]
    fn against_the_assembler() {
        assert_eq!(addi(10, 10, 1), 0x0015_0513); // addi a0,a0,1
        assert_eq!(csrrw(0, 0x305, 6), 0x3053_1073); // csrw mtvec,t1
        assert_eq!(csrr(11, 0x342), 0x3420_25f3); // csrr a1,mcause
        assert_eq!(csrr(15, 0xc02), 0xc020_27f3); // rdinstret a5
        assert_eq!(csrs(0x300, 5), 0x3002_a073); // csrs mstatus,t0
        assert_eq!(ld(10, 2, 8), 0x0081_3503); // ld a0,8(sp)
        assert_eq!(sd(10, 2, 8), 0x00a1_3423); // sd a0,8(sp)
        assert_eq!(jal(1, 16), 0x0100_00ef); // jal ra,.+16
        assert_eq!(jalr(0, 1, 0), 0x0000_8067); // ret
        assert_eq!(branch(0, 0, 0, 8), 0x0000_0463); // beqz zero,.+8
        assert_eq!(jal(0, -4), 0xffdf_f06f); // j .-4
    }
}
