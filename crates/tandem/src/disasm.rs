//! A small RISC-V disassembler for reports and dumps: RV32/RV64 I, M, A, F, D, C, Zicsr,
//! Zifencei, Zba and Zbb, in the dialect of GNU objdump 2.40 (`riscv64-unknown-elf-objdump -d`):
//! the same mnemonics, aliases (`li`, `mv`, `ret`, `beqz`, `sext.w`, `csrr`, `frflags`, ...) and
//! operand spelling, with branch and jump targets as absolute hexadecimal addresses (objdump's
//! `<symbol>` annotations and `#` comments are left out). Compressed instructions print as the
//! instruction they expand to, as objdump prints them.

const XNAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

const FNAMES: [&str; 32] = [
    "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2",
    "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9",
    "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
];

/// ABI name of integer register `n`.
pub fn xname(n: u32) -> &'static str {
    XNAMES[(n & 31) as usize]
}

/// ABI name of floating-point register `n`.
pub fn fname(n: u32) -> &'static str {
    FNAMES[(n & 31) as usize]
}

/// The name of a CSR (privileged ISA, "CSR Listing"), if it has one.
pub fn csr_name(csr: u16) -> Option<String> {
    let s = match csr {
        0x001 => "fflags",
        0x002 => "frm",
        0x003 => "fcsr",
        0x100 => "sstatus",
        0x104 => "sie",
        0x105 => "stvec",
        0x106 => "scounteren",
        0x140 => "sscratch",
        0x141 => "sepc",
        0x142 => "scause",
        0x143 => "stval",
        0x144 => "sip",
        0x180 => "satp",
        0x300 => "mstatus",
        0x301 => "misa",
        0x302 => "medeleg",
        0x303 => "mideleg",
        0x304 => "mie",
        0x305 => "mtvec",
        0x306 => "mcounteren",
        0x320 => "mcountinhibit",
        0x340 => "mscratch",
        0x341 => "mepc",
        0x342 => "mcause",
        0x343 => "mtval",
        0x344 => "mip",
        0x7a0 => "tselect",
        0x7a1 => "tdata1",
        0x7a2 => "tdata2",
        0x7a3 => "tdata3",
        0x7a4 => "tinfo",
        0x7a5 => "tcontrol",
        0x7a8 => "mcontext",
        0x7b0 => "dcsr",
        0x7b1 => "dpc",
        0x7b2 => "dscratch0",
        0x7b3 => "dscratch1",
        0xb00 => "mcycle",
        0xb02 => "minstret",
        0xb80 => "mcycleh",
        0xb82 => "minstreth",
        0xc00 => "cycle",
        0xc01 => "time",
        0xc02 => "instret",
        0xc80 => "cycleh",
        0xc81 => "timeh",
        0xc82 => "instreth",
        0xf11 => "mvendorid",
        0xf12 => "marchid",
        0xf13 => "mimpid",
        0xf14 => "mhartid",
        0x323..=0x33f => return Some(format!("mhpmevent{}", csr - 0x320)),
        0x3a0..=0x3af => return Some(format!("pmpcfg{}", csr - 0x3a0)),
        0x3b0..=0x3ef => return Some(format!("pmpaddr{}", csr - 0x3b0)),
        0xb03..=0xb1f => return Some(format!("mhpmcounter{}", csr - 0xb00)),
        0xb83..=0xb9f => return Some(format!("mhpmcounter{}h", csr - 0xb80)),
        0xc03..=0xc1f => return Some(format!("hpmcounter{}", csr - 0xc00)),
        0xc83..=0xc9f => return Some(format!("hpmcounter{}h", csr - 0xc80)),
        _ => return None,
    };
    Some(s.to_string())
}

fn csr_str(csr: u32) -> String {
    csr_name(csr as u16).unwrap_or_else(|| format!("0x{csr:x}"))
}

#[inline]
fn bits(v: u32, hi: u32, lo: u32) -> u32 {
    (v >> lo) & ((1 << (hi - lo + 1)) - 1)
}

#[inline]
fn sext(v: u32, width: u32) -> i32 {
    ((v << (32 - width)) as i32) >> (32 - width)
}

const RM: [&str; 8] = ["rne", "rtz", "rdn", "rup", "rmm", "", "", "dyn"];

/// What a compressed instruction expands to.
enum Expanded {
    /// The equivalent 32-bit instruction.
    Insn(u32),
    /// Printed as is (hints and the like).
    Text(String),
    /// Not a valid instruction.
    Illegal,
}

// 32-bit encoders for the expansion of compressed instructions.
fn i_type(imm: i32, rs1: u32, f3: u32, rd: u32, opc: u32) -> u32 {
    ((imm as u32 & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | opc
}
fn s_type(imm: i32, rs2: u32, rs1: u32, f3: u32, opc: u32) -> u32 {
    let u = imm as u32;
    ((u >> 5 & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((u & 0x1f) << 7) | opc
}
fn r_type(f7: u32, rs2: u32, rs1: u32, f3: u32, rd: u32, opc: u32) -> u32 {
    (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | opc
}
fn b_type(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let u = imm as u32;
    ((u >> 12 & 1) << 31)
        | ((u >> 5 & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (f3 << 12)
        | ((u >> 1 & 0xf) << 8)
        | ((u >> 11 & 1) << 7)
        | 0x63
}
fn j_type(imm: i32, rd: u32) -> u32 {
    let u = imm as u32;
    ((u >> 20 & 1) << 31)
        | ((u >> 1 & 0x3ff) << 21)
        | ((u >> 11 & 1) << 20)
        | ((u >> 12 & 0xff) << 12)
        | (rd << 7)
        | 0x6f
}

/// Expand a compressed instruction (unprivileged ISA, chapter "C", tables of RVC opcodes).
fn expand(c: u32, rv64: bool) -> Expanded {
    use Expanded::*;
    let f3 = bits(c, 15, 13);
    let rd = bits(c, 11, 7);
    let rs2 = bits(c, 6, 2);
    let rdp = bits(c, 4, 2) + 8;
    let rs1p = bits(c, 9, 7) + 8;
    // Immediates.
    let ci = sext((bits(c, 12, 12) << 5) | bits(c, 6, 2), 6);
    let shamt = (bits(c, 12, 12) << 5) | bits(c, 6, 2);
    let uimm_w = (bits(c, 12, 10) << 3) | (bits(c, 6, 6) << 2) | (bits(c, 5, 5) << 6);
    let uimm_d = (bits(c, 12, 10) << 3) | (bits(c, 6, 5) << 6);
    let cj = sext(
        (bits(c, 12, 12) << 11)
            | (bits(c, 11, 11) << 4)
            | (bits(c, 10, 9) << 8)
            | (bits(c, 8, 8) << 10)
            | (bits(c, 7, 7) << 6)
            | (bits(c, 6, 6) << 7)
            | (bits(c, 5, 3) << 1)
            | (bits(c, 2, 2) << 5),
        12,
    );
    let cb = sext(
        (bits(c, 12, 12) << 8)
            | (bits(c, 11, 10) << 3)
            | (bits(c, 6, 5) << 6)
            | (bits(c, 4, 3) << 1)
            | (bits(c, 2, 2) << 5),
        9,
    );
    match (c & 3, f3) {
        (0, 0) => {
            let imm = (bits(c, 12, 11) << 4)
                | (bits(c, 10, 7) << 6)
                | (bits(c, 6, 6) << 2)
                | (bits(c, 5, 5) << 3);
            if imm == 0 {
                return if c == 0 {
                    Text("unimp".into())
                } else {
                    Illegal
                };
            }
            Insn(i_type(imm as i32, 2, 0, rdp, 0x13))
        }
        (0, 1) => Insn(i_type(uimm_d as i32, rs1p, 3, rdp, 0x07)),
        (0, 2) => Insn(i_type(uimm_w as i32, rs1p, 2, rdp, 0x03)),
        (0, 3) if rv64 => Insn(i_type(uimm_d as i32, rs1p, 3, rdp, 0x03)),
        (0, 3) => Insn(i_type(uimm_w as i32, rs1p, 2, rdp, 0x07)),
        (0, 5) => Insn(s_type(uimm_d as i32, rdp, rs1p, 3, 0x27)),
        (0, 6) => Insn(s_type(uimm_w as i32, rdp, rs1p, 2, 0x23)),
        (0, 7) if rv64 => Insn(s_type(uimm_d as i32, rdp, rs1p, 3, 0x23)),
        (0, 7) => Insn(s_type(uimm_w as i32, rdp, rs1p, 2, 0x27)),
        (1, 0) => {
            if rd == 0 {
                if ci == 0 {
                    Text("nop".into())
                } else {
                    Text(format!("c.nop {ci}"))
                }
            } else if ci == 0 {
                Text(format!("add {},{},0", xname(rd), xname(rd)))
            } else {
                Insn(i_type(ci, rd, 0, rd, 0x13))
            }
        }
        (1, 1) if rv64 => {
            if rd == 0 {
                return Illegal;
            }
            Insn(i_type(ci, rd, 0, rd, 0x1b))
        }
        (1, 1) => Insn(j_type(cj, 1)),
        (1, 2) if rd == 0 => Text(format!("c.li zero,{ci}")),
        (1, 2) => Insn(i_type(ci, 0, 0, rd, 0x13)),
        (1, 3) if rd == 2 => {
            let imm = sext(
                (bits(c, 12, 12) << 9)
                    | (bits(c, 6, 6) << 4)
                    | (bits(c, 5, 5) << 6)
                    | (bits(c, 4, 3) << 7)
                    | (bits(c, 2, 2) << 5),
                10,
            );
            if imm == 0 {
                return Illegal;
            }
            Insn(i_type(imm, 2, 0, 2, 0x13))
        }
        (1, 3) => {
            if ci == 0 {
                return Illegal;
            }
            if rd == 0 {
                return Text(format!("c.lui zero,0x{:x}", ci as u32 & 0xfffff));
            }
            Insn(((ci as u32 & 0xfffff) << 12) | (rd << 7) | 0x37)
        }
        (1, 4) => {
            let rdq = rs1p;
            match bits(c, 11, 10) {
                0 | 1 => {
                    let f6 = if bits(c, 11, 10) == 0 { 0 } else { 0x10 };
                    Insn((f6 << 26) | (shamt << 20) | (rdq << 15) | (5 << 12) | (rdq << 7) | 0x13)
                }
                2 => Insn(i_type(ci, rdq, 7, rdq, 0x13)),
                _ => {
                    let r2 = rdp;
                    match (bits(c, 12, 12), bits(c, 6, 5)) {
                        (0, 0) => Insn(r_type(0x20, r2, rdq, 0, rdq, 0x33)),
                        (0, 1) => Insn(r_type(0, r2, rdq, 4, rdq, 0x33)),
                        (0, 2) => Insn(r_type(0, r2, rdq, 6, rdq, 0x33)),
                        (0, 3) => Insn(r_type(0, r2, rdq, 7, rdq, 0x33)),
                        (1, 0) if rv64 => Insn(r_type(0x20, r2, rdq, 0, rdq, 0x3b)),
                        (1, 1) if rv64 => Insn(r_type(0, r2, rdq, 0, rdq, 0x3b)),
                        _ => Illegal,
                    }
                }
            }
        }
        (1, 5) => Insn(j_type(cj, 0)),
        (1, 6) => Insn(b_type(cb, 0, rs1p, 0)),
        (1, 7) => Insn(b_type(cb, 0, rs1p, 1)),
        (2, 0) => {
            if rd == 0 || shamt == 0 {
                return Text(format!("c.slli {},0x{:x}", xname(rd), shamt));
            }
            Insn((shamt << 20) | (rd << 15) | (1 << 12) | (rd << 7) | 0x13)
        }
        (2, 1) => {
            let imm = (bits(c, 12, 12) << 5) | (bits(c, 6, 5) << 3) | (bits(c, 4, 2) << 6);
            Insn(i_type(imm as i32, 2, 3, rd, 0x07))
        }
        (2, 2) => {
            if rd == 0 {
                return Illegal;
            }
            let imm = (bits(c, 12, 12) << 5) | (bits(c, 6, 4) << 2) | (bits(c, 3, 2) << 6);
            Insn(i_type(imm as i32, 2, 2, rd, 0x03))
        }
        (2, 3) => {
            let (imm, f3, opc) = if rv64 {
                (
                    (bits(c, 12, 12) << 5) | (bits(c, 6, 5) << 3) | (bits(c, 4, 2) << 6),
                    3,
                    0x03,
                )
            } else {
                (
                    (bits(c, 12, 12) << 5) | (bits(c, 6, 4) << 2) | (bits(c, 3, 2) << 6),
                    2,
                    0x07,
                )
            };
            if rv64 && rd == 0 {
                return Illegal;
            }
            Insn(i_type(imm as i32, 2, f3, rd, opc))
        }
        (2, 4) => match (bits(c, 12, 12), rd, rs2) {
            (0, 0, 0) => Illegal,
            (0, _, 0) => Insn(i_type(0, rd, 0, 0, 0x67)),
            (0, 0, _) => Text(format!("c.mv zero,{}", xname(rs2))),
            (1, 0, _) if rs2 != 0 => Text(format!("c.add zero,{}", xname(rs2))),
            // c.mv is `add rd, x0, rs2`; objdump prints it as `mv`, the alias of `addi rd, rs, 0`.
            (0, _, _) => Insn(i_type(0, rs2, 0, rd, 0x13)),
            (1, 0, 0) => Text("ebreak".into()),
            (1, _, 0) => Insn(i_type(0, rd, 0, 1, 0x67)),
            _ => Insn(r_type(0, rs2, rd, 0, rd, 0x33)),
        },
        (2, 5) => {
            let imm = (bits(c, 12, 10) << 3) | (bits(c, 9, 7) << 6);
            Insn(s_type(imm as i32, rs2, 2, 3, 0x27))
        }
        (2, 6) => {
            let imm = (bits(c, 12, 9) << 2) | (bits(c, 8, 7) << 6);
            Insn(s_type(imm as i32, rs2, 2, 2, 0x23))
        }
        (2, 7) => {
            let (imm, f3, opc) = if rv64 {
                ((bits(c, 12, 10) << 3) | (bits(c, 9, 7) << 6), 3, 0x23)
            } else {
                ((bits(c, 12, 9) << 2) | (bits(c, 8, 7) << 6), 2, 0x27)
            };
            Insn(s_type(imm as i32, rs2, 2, f3, opc))
        }
        _ => Illegal,
    }
}

/// Disassemble one instruction (`bits` holds a 16-bit instruction in its low half) at `pc` for
/// XLEN `xlen` (32 or 64).
pub fn disasm(bits: u32, pc: u64, xlen: u32) -> String {
    let rv64 = xlen == 64;
    if bits & 3 != 3 {
        let c = bits & 0xffff;
        return match expand(c, rv64) {
            Expanded::Insn(i) => disasm32(i, pc, rv64).unwrap_or_else(|| format!(".2byte 0x{c:x}")),
            Expanded::Text(t) => t,
            Expanded::Illegal => format!(".2byte 0x{c:x}"),
        };
    }
    disasm32(bits, pc, rv64).unwrap_or_else(|| format!(".4byte 0x{bits:x}"))
}

fn fence_set(v: u32) -> String {
    let mut s = String::new();
    for (bit, ch) in [(8, 'i'), (4, 'o'), (2, 'r'), (1, 'w')] {
        if v & bit != 0 {
            s.push(ch);
        }
    }
    if s.is_empty() {
        s.push('0');
    }
    s
}

fn disasm32(i: u32, pc: u64, rv64: bool) -> Option<String> {
    let opc = i & 0x7f;
    let rd = bits(i, 11, 7);
    let rs1 = bits(i, 19, 15);
    let rs2 = bits(i, 24, 20);
    let rs3 = bits(i, 31, 27);
    let f3 = bits(i, 14, 12);
    let f7 = bits(i, 31, 25);
    let imm_i = sext(bits(i, 31, 20), 12);
    let imm_s = sext((bits(i, 31, 25) << 5) | bits(i, 11, 7), 12);
    let (xd, x1, x2) = (xname(rd), xname(rs1), xname(rs2));
    let mask = if rv64 { u64::MAX } else { 0xffff_ffff };
    let target = |off: i32| format!("{:x}", pc.wrapping_add(off as i64 as u64) & mask);
    let shamt_max = if rv64 { 63 } else { 31 };
    Some(match opc {
        0x37 => format!("lui {xd},0x{:x}", i >> 12),
        0x17 => format!("auipc {xd},0x{:x}", i >> 12),
        0x6f => {
            let off = sext(
                (bits(i, 31, 31) << 20)
                    | (bits(i, 30, 21) << 1)
                    | (bits(i, 20, 20) << 11)
                    | (bits(i, 19, 12) << 12),
                21,
            );
            match rd {
                0 => format!("j {}", target(off)),
                1 => format!("jal {}", target(off)),
                _ => format!("jal {xd},{}", target(off)),
            }
        }
        0x67 if f3 == 0 => match (rd, imm_i) {
            (0, 0) if rs1 == 1 => "ret".into(),
            (0, 0) => format!("jr {x1}"),
            (0, _) => format!("jr {imm_i}({x1})"),
            (1, 0) => format!("jalr {x1}"),
            (1, _) => format!("jalr {imm_i}({x1})"),
            _ => format!("jalr {xd},{imm_i}({x1})"),
        },
        0x63 => {
            let off = sext(
                (bits(i, 31, 31) << 12)
                    | (bits(i, 30, 25) << 5)
                    | (bits(i, 11, 8) << 1)
                    | (bits(i, 7, 7) << 11),
                13,
            );
            let t = target(off);
            let name = match f3 {
                0 => "beq",
                1 => "bne",
                4 => "blt",
                5 => "bge",
                6 => "bltu",
                7 => "bgeu",
                _ => return None,
            };
            match (f3, rs1, rs2) {
                (0, _, 0) => format!("beqz {x1},{t}"),
                (1, _, 0) => format!("bnez {x1},{t}"),
                (4, _, 0) => format!("bltz {x1},{t}"),
                (5, _, 0) => format!("bgez {x1},{t}"),
                (4, 0, _) => format!("bgtz {x2},{t}"),
                (5, 0, _) => format!("blez {x2},{t}"),
                _ => format!("{name} {x1},{x2},{t}"),
            }
        }
        0x03 => {
            let name = match f3 {
                0 => "lb",
                1 => "lh",
                2 => "lw",
                3 if rv64 => "ld",
                4 => "lbu",
                5 => "lhu",
                6 if rv64 => "lwu",
                _ => return None,
            };
            format!("{name} {xd},{imm_i}({x1})")
        }
        0x23 => {
            let name = match f3 {
                0 => "sb",
                1 => "sh",
                2 => "sw",
                3 if rv64 => "sd",
                _ => return None,
            };
            format!("{name} {x2},{imm_s}({x1})")
        }
        0x07 | 0x27 => {
            let name = match (opc, f3) {
                (0x07, 2) => "flw",
                (0x07, 3) => "fld",
                (0x27, 2) => "fsw",
                (0x27, 3) => "fsd",
                _ => return None,
            };
            if opc == 0x07 {
                format!("{name} {},{imm_i}({x1})", fname(rd))
            } else {
                format!("{name} {},{imm_s}({x1})", fname(rs2))
            }
        }
        0x13 => {
            let sh = bits(i, 25, 20);
            match f3 {
                0 if rd == 0 && rs1 == 0 && imm_i == 0 => "nop".into(),
                0 if rs1 == 0 => format!("li {xd},{imm_i}"),
                0 if imm_i == 0 => format!("mv {xd},{x1}"),
                0 => format!("add {xd},{x1},{imm_i}"),
                2 => format!("slti {xd},{x1},{imm_i}"),
                3 if imm_i == 1 => format!("seqz {xd},{x1}"),
                3 => format!("sltiu {xd},{x1},{imm_i}"),
                4 if imm_i == -1 => format!("not {xd},{x1}"),
                4 => format!("xor {xd},{x1},{imm_i}"),
                6 => format!("or {xd},{x1},{imm_i}"),
                7 if imm_i == 255 => format!("zext.b {xd},{x1}"),
                7 => format!("and {xd},{x1},{imm_i}"),
                1 => match bits(i, 31, 26) {
                    0 if sh <= shamt_max => format!("sll {xd},{x1},0x{sh:x}"),
                    0x18 if bits(i, 25, 20) == 0 => format!("clz {xd},{x1}"),
                    0x18 if bits(i, 25, 20) == 1 => format!("ctz {xd},{x1}"),
                    0x18 if bits(i, 25, 20) == 2 => format!("cpop {xd},{x1}"),
                    0x18 if bits(i, 25, 20) == 4 => format!("sext.b {xd},{x1}"),
                    0x18 if bits(i, 25, 20) == 5 => format!("sext.h {xd},{x1}"),
                    _ => return None,
                },
                5 => match bits(i, 31, 26) {
                    0 if sh <= shamt_max => format!("srl {xd},{x1},0x{sh:x}"),
                    0x10 if sh <= shamt_max => format!("sra {xd},{x1},0x{sh:x}"),
                    0x18 if sh <= shamt_max => format!("ror {xd},{x1},0x{sh:x}"),
                    0x0a if bits(i, 25, 20) == 7 => format!("orc.b {xd},{x1}"),
                    0x1a if rv64 && bits(i, 25, 20) == 0x38 => format!("rev8 {xd},{x1}"),
                    0x1a if !rv64 && bits(i, 25, 20) == 0x18 => format!("rev8 {xd},{x1}"),
                    _ => return None,
                },
                _ => return None,
            }
        }
        0x1b if rv64 => {
            let sh = bits(i, 24, 20);
            match (f3, f7) {
                (0, _) if imm_i == 0 => format!("sext.w {xd},{x1}"),
                (0, _) => format!("addw {xd},{x1},{imm_i}"),
                (1, 0) => format!("sllw {xd},{x1},0x{sh:x}"),
                (5, 0) => format!("srlw {xd},{x1},0x{sh:x}"),
                (5, 0x20) => format!("sraw {xd},{x1},0x{sh:x}"),
                (5, 0x30) => format!("rorw {xd},{x1},0x{sh:x}"),
                (1, 0x30) => match rs2 {
                    0 => format!("clzw {xd},{x1}"),
                    1 => format!("ctzw {xd},{x1}"),
                    2 => format!("cpopw {xd},{x1}"),
                    _ => return None,
                },
                (1, 4) | (1, 5) => {
                    format!("slli.uw {xd},{x1},0x{:x}", bits(i, 25, 20))
                }
                _ => return None,
            }
        }
        0x33 => {
            let name = match (f7, f3) {
                (0, 0) => "add",
                (0x20, 0) if rs1 == 0 => return Some(format!("neg {xd},{x2}")),
                (0x20, 0) => "sub",
                (0, 1) => "sll",
                (0, 2) if rs2 == 0 => return Some(format!("sltz {xd},{x1}")),
                (0, 2) if rs1 == 0 => return Some(format!("sgtz {xd},{x2}")),
                (0, 2) => "slt",
                (0, 3) if rs1 == 0 => return Some(format!("snez {xd},{x2}")),
                (0, 3) => "sltu",
                (0, 4) => "xor",
                (0, 5) => "srl",
                (0x20, 5) => "sra",
                (0, 6) => "or",
                (0, 7) => "and",
                (1, 0) => "mul",
                (1, 1) => "mulh",
                (1, 2) => "mulhsu",
                (1, 3) => "mulhu",
                (1, 4) => "div",
                (1, 5) => "divu",
                (1, 6) => "rem",
                (1, 7) => "remu",
                (0x10, 2) => "sh1add",
                (0x10, 4) => "sh2add",
                (0x10, 6) => "sh3add",
                (0x20, 7) => "andn",
                (0x20, 6) => "orn",
                (0x20, 4) => "xnor",
                (5, 6) => "max",
                (5, 7) => "maxu",
                (5, 4) => "min",
                (5, 5) => "minu",
                (0x30, 1) => "rol",
                (0x30, 5) => "ror",
                (4, 4) if !rv64 && rs2 == 0 => return Some(format!("zext.h {xd},{x1}")),
                _ => return None,
            };
            format!("{name} {xd},{x1},{x2}")
        }
        0x3b if rv64 => {
            let name = match (f7, f3) {
                (0, 0) => "addw",
                (0x20, 0) if rs1 == 0 => return Some(format!("negw {xd},{x2}")),
                (0x20, 0) => "subw",
                (0, 1) => "sllw",
                (0, 5) => "srlw",
                (0x20, 5) => "sraw",
                (1, 0) => "mulw",
                (1, 4) => "divw",
                (1, 5) => "divuw",
                (1, 6) => "remw",
                (1, 7) => "remuw",
                (4, 0) if rs2 == 0 => return Some(format!("zext.w {xd},{x1}")),
                (4, 0) => "add.uw",
                (0x10, 2) => "sh1add.uw",
                (0x10, 4) => "sh2add.uw",
                (0x10, 6) => "sh3add.uw",
                (0x30, 1) => "rolw",
                (0x30, 5) => "rorw",
                (4, 4) if rs2 == 0 => return Some(format!("zext.h {xd},{x1}")),
                _ => return None,
            };
            format!("{name} {xd},{x1},{x2}")
        }
        0x0f => match f3 {
            0 => {
                let (fm, pred, succ) = (bits(i, 31, 28), bits(i, 27, 24), bits(i, 23, 20));
                if fm == 8 && pred == 3 && succ == 3 {
                    "fence.tso".into()
                } else if fm == 0 && pred == 1 && succ == 0 && rd == 0 && rs1 == 0 {
                    "pause".into()
                } else if pred == 15 && succ == 15 {
                    "fence".into()
                } else {
                    format!("fence {},{}", fence_set(pred), fence_set(succ))
                }
            }
            1 => "fence.i".into(),
            _ => return None,
        },
        0x2f => {
            let size = match f3 {
                2 => "w",
                3 if rv64 => "d",
                _ => return None,
            };
            let ord = match bits(i, 26, 25) {
                0 => "",
                1 => ".rl",
                2 => ".aq",
                _ => ".aqrl",
            };
            let f5 = bits(i, 31, 27);
            let name = match f5 {
                0x02 if rs2 == 0 => return Some(format!("lr.{size}{ord} {xd},({x1})")),
                0x03 => "sc",
                0x01 => "amoswap",
                0x00 => "amoadd",
                0x04 => "amoxor",
                0x0c => "amoand",
                0x08 => "amoor",
                0x10 => "amomin",
                0x14 => "amomax",
                0x18 => "amominu",
                0x1c => "amomaxu",
                _ => return None,
            };
            format!("{name}.{size}{ord} {xd},{x2},({x1})")
        }
        0x73 => {
            if f3 == 0 {
                return Some(match i {
                    0x0000_0073 => "ecall".into(),
                    0x0010_0073 => "ebreak".into(),
                    0x3020_0073 => "mret".into(),
                    0x1020_0073 => "sret".into(),
                    0x1050_0073 => "wfi".into(),
                    _ if f7 == 0x09 && rd == 0 => match (rs1, rs2) {
                        (0, 0) => "sfence.vma".into(),
                        (_, 0) => format!("sfence.vma {x1}"),
                        _ => format!("sfence.vma {x1},{x2}"),
                    },
                    _ => return None,
                });
            }
            let csr = bits(i, 31, 20);
            let name = csr_str(csr);
            let imm = rs1;
            if i == 0xc000_1073 {
                return Some("unimp".into());
            }
            // Floating-point CSR aliases (unprivileged ISA, "Zicsr" and the F chapter's
            // `frcsr`/`fscsr`, `frrm`/`fsrm`, `frflags`/`fsflags`).
            let fp = match csr {
                1 => Some("flags"),
                2 => Some("rm"),
                3 => Some("csr"),
                _ => None,
            };
            match f3 {
                1 if fp.is_some() => {
                    let n = fp.unwrap_or("");
                    if rd == 0 {
                        format!("fs{n} {x1}")
                    } else {
                        format!("fs{n} {xd},{x1}")
                    }
                }
                // There is no `fscsri`; objdump spells `fsrmi`/`fsflagsi` with their `rd` always.
                5 if csr == 1 || csr == 2 => {
                    format!("fs{}i {xd},{imm}", fp.unwrap_or(""))
                }
                2 if fp.is_some() && rs1 == 0 => format!("fr{} {xd}", fp.unwrap_or("")),
                2 if rs1 == 0 => match csr {
                    0xc00 => format!("rdcycle {xd}"),
                    0xc01 => format!("rdtime {xd}"),
                    0xc02 => format!("rdinstret {xd}"),
                    0xc80 if !rv64 => format!("rdcycleh {xd}"),
                    0xc81 if !rv64 => format!("rdtimeh {xd}"),
                    0xc82 if !rv64 => format!("rdinstreth {xd}"),
                    _ => format!("csrr {xd},{name}"),
                },
                1 if rd == 0 => format!("csrw {name},{x1}"),
                2 if rd == 0 => format!("csrs {name},{x1}"),
                3 if rd == 0 => format!("csrc {name},{x1}"),
                // objdump 2.40 names the immediate forms like the register forms.
                5 if rd == 0 => format!("csrw {name},{imm}"),
                6 if rd == 0 => format!("csrs {name},{imm}"),
                7 if rd == 0 => format!("csrc {name},{imm}"),
                1 => format!("csrrw {xd},{name},{x1}"),
                2 => format!("csrrs {xd},{name},{x1}"),
                3 => format!("csrrc {xd},{name},{x1}"),
                5 => format!("csrrw {xd},{name},{imm}"),
                6 => format!("csrrs {xd},{name},{imm}"),
                7 => format!("csrrc {xd},{name},{imm}"),
                _ => return None,
            }
        }
        0x43 | 0x47 | 0x4b | 0x4f => {
            let base = match opc {
                0x43 => "fmadd",
                0x47 => "fmsub",
                0x4b => "fnmsub",
                _ => "fnmadd",
            };
            let fmt = match bits(i, 26, 25) {
                0 => "s",
                1 => "d",
                _ => return None,
            };
            let rm = rm_suffix(f3)?;
            format!(
                "{base}.{fmt} {},{},{},{}{rm}",
                fname(rd),
                fname(rs1),
                fname(rs2),
                fname(rs3)
            )
        }
        0x53 => disasm_fp(i, rv64)?,
        _ => return None,
    })
}

fn rm_suffix(rm: u32) -> Option<String> {
    match rm {
        7 => Some(String::new()),
        5 | 6 => None,
        r => Some(format!(",{}", RM[r as usize])),
    }
}

fn disasm_fp(i: u32, rv64: bool) -> Option<String> {
    let rd = bits(i, 11, 7);
    let rs1 = bits(i, 19, 15);
    let rs2 = bits(i, 24, 20);
    let rm = bits(i, 14, 12);
    let f7 = bits(i, 31, 25);
    let fmt = match f7 & 3 {
        0 => "s",
        1 => "d",
        _ => return None,
    };
    let (fd, f1, f2) = (fname(rd), fname(rs1), fname(rs2));
    let (xd, x1) = (xname(rd), xname(rs1));
    Some(match f7 >> 2 {
        0..=3 => {
            let op = ["fadd", "fsub", "fmul", "fdiv"][(f7 >> 2) as usize];
            format!("{op}.{fmt} {fd},{f1},{f2}{}", rm_suffix(rm)?)
        }
        0x0b if rs2 == 0 => format!("fsqrt.{fmt} {fd},{f1}{}", rm_suffix(rm)?),
        0x04 => match rm {
            0 if rs1 == rs2 => format!("fmv.{fmt} {fd},{f1}"),
            1 if rs1 == rs2 => format!("fneg.{fmt} {fd},{f1}"),
            2 if rs1 == rs2 => format!("fabs.{fmt} {fd},{f1}"),
            0 => format!("fsgnj.{fmt} {fd},{f1},{f2}"),
            1 => format!("fsgnjn.{fmt} {fd},{f1},{f2}"),
            2 => format!("fsgnjx.{fmt} {fd},{f1},{f2}"),
            _ => return None,
        },
        0x05 => match rm {
            0 => format!("fmin.{fmt} {fd},{f1},{f2}"),
            1 => format!("fmax.{fmt} {fd},{f1},{f2}"),
            _ => return None,
        },
        0x08 => match (fmt, rs2) {
            ("s", 1) => format!("fcvt.s.d {fd},{f1}{}", rm_suffix(rm)?),
            ("d", 0) => format!("fcvt.d.s {fd},{f1}{}", rm_exact(rm)?),
            _ => return None,
        },
        0x14 => match rm {
            0 => format!("fle.{fmt} {xd},{f1},{f2}"),
            1 => format!("flt.{fmt} {xd},{f1},{f2}"),
            2 => format!("feq.{fmt} {xd},{f1},{f2}"),
            _ => return None,
        },
        0x18 => {
            let ity = match rs2 {
                0 => "w",
                1 => "wu",
                2 if rv64 => "l",
                3 if rv64 => "lu",
                _ => return None,
            };
            format!("fcvt.{ity}.{fmt} {xd},{f1}{}", rm_suffix(rm)?)
        }
        0x1a => {
            let ity = match rs2 {
                0 => "w",
                1 => "wu",
                2 if rv64 => "l",
                3 if rv64 => "lu",
                _ => return None,
            };
            // int -> double of a 32-bit integer is exact; objdump shows no rounding mode then.
            let rm = if fmt == "d" && rs2 < 2 {
                rm_exact(rm)?
            } else {
                rm_suffix(rm)?
            };
            format!("fcvt.{fmt}.{ity} {fd},{x1}{rm}")
        }
        0x1c if rs2 == 0 => match (rm, fmt) {
            (0, "s") => format!("fmv.x.w {xd},{f1}"),
            (0, "d") if rv64 => format!("fmv.x.d {xd},{f1}"),
            (1, _) => format!("fclass.{fmt} {xd},{f1}"),
            _ => return None,
        },
        0x1e if rs2 == 0 && rm == 0 => match fmt {
            "s" => format!("fmv.w.x {fd},{x1}"),
            _ if rv64 => format!("fmv.d.x {fd},{x1}"),
            _ => return None,
        },
        _ => return None,
    })
}

/// Rounding mode of an exact conversion: objdump omits it when it is 0 (rne).
fn rm_exact(rm: u32) -> Option<String> {
    if rm == 0 {
        Some(String::new())
    } else {
        rm_suffix(rm)
    }
}
