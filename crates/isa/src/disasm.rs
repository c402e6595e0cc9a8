//! The disassembler: an [`Insn`] from [`crate::insn::decode`], with its raw bits and pc, printed
//! in the dialect of GNU objdump 2.40 (`riscv64-unknown-elf-objdump -d`): the same mnemonics,
//! aliases (`li`, `mv`, `ret`, `beqz`, `sext.w`, `csrr`, `frflags`, ...) and operand spelling,
//! branch and jump targets as absolute hexadecimal addresses (objdump's `<symbol>` annotations
//! and `#` comments are left out). Compressed instructions print as the instruction they expand
//! to, as objdump prints them; the raw bits are consulted only where objdump's spelling depends on
//! more than the operation (compressed HINTs, `fence` sets, `unimp`).
//!
//! No allocation: [`Disasm`] implements [`core::fmt::Display`].

use core::fmt;

use crate::csr_names::CSR_NAMES;
use crate::insn::{decode, Extensions, Insn, Op};
use crate::Xlen;

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

/// ABI name of integer register `n` (only the low 5 bits are used).
pub fn xname(n: u32) -> &'static str {
    XNAMES[(n & 31) as usize]
}

/// ABI name of floating-point register `n` (only the low 5 bits are used).
pub fn fname(n: u32) -> &'static str {
    FNAMES[(n & 31) as usize]
}

/// The name of CSR `csr` as objdump 2.40 prints it, if it has one (`crate::csr_names`, recorded
/// from objdump by `scripts/gen-csr-names.py`).
pub fn csr_name(csr: u16) -> Option<&'static str> {
    CSR_NAMES
        .binary_search_by_key(&csr, |&(n, _)| n)
        .ok()
        .map(|i| CSR_NAMES[i].1)
}

/// A CSR operand: its name, or its number in hexadecimal.
struct Csr(u32);

impl fmt::Display for Csr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match csr_name(self.0 as u16) {
            Some(n) => f.write_str(n),
            None => write!(f, "0x{:x}", self.0),
        }
    }
}

/// Rounding-mode names (unprivileged ISA, F chapter, "Rounding mode encoding"); 5 and 6 are
/// reserved, and objdump prints them as `unknown`.
const RM: [&str; 8] = [
    "rne", "rtz", "rdn", "rup", "rmm", "unknown", "unknown", "dyn",
];

/// A rounding-mode operand: `,rtz` etc., nothing for `dyn` (objdump's default).
struct Rm(u8);

impl fmt::Display for Rm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 7 {
            return Ok(());
        }
        write!(f, ",{}", RM[(self.0 & 7) as usize])
    }
}

/// A `fence` predecessor/successor set (`iorw`; objdump prints the empty set as `unknown`).
struct FenceSet(u32);

impl fmt::Display for FenceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 & 15 == 0 {
            return f.write_str("unknown");
        }
        for (bit, ch) in [(8, "i"), (4, "o"), (2, "r"), (1, "w")] {
            if self.0 & bit != 0 {
                f.write_str(ch)?;
            }
        }
        Ok(())
    }
}

/// [`Disasm::new`] for an XLEN given in bits (32: RV32, anything else RV64), for callers that keep
/// XLEN as a number.
pub fn disasm(bits: u32, pc: u64, xlen_bits: u32) -> Disasm {
    let xlen = if xlen_bits == 32 {
        Xlen::Rv32
    } else {
        Xlen::Rv64
    };
    Disasm::new(bits, pc, xlen)
}

/// One instruction to print: `format!("{}", Disasm::new(bits, pc, xlen))`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Disasm {
    /// The decoded instruction ([`crate::insn::decode`] of `bits`).
    pub insn: Insn,
    /// The raw instruction bits (a 16-bit instruction in the low half).
    pub bits: u32,
    /// The instruction's address (branch and jump targets are printed as absolute addresses).
    pub pc: u64,
    /// Base register width.
    pub xlen: Xlen,
}

impl Disasm {
    /// Decode `bits` (every extension the decoder knows, [`Extensions::ALL`]) for printing.
    pub fn new(bits: u32, pc: u64, xlen: Xlen) -> Disasm {
        let bits = if bits & 3 != 3 { bits & 0xffff } else { bits };
        Disasm {
            insn: decode(bits, xlen, &Extensions::ALL),
            bits,
            pc,
            xlen,
        }
    }

    /// Print an instruction already decoded (`insn` must be the decode of `bits`).
    pub fn with_insn(insn: Insn, bits: u32, pc: u64, xlen: Xlen) -> Disasm {
        Disasm {
            insn,
            bits,
            pc,
            xlen,
        }
    }

    /// Not printable as an instruction: objdump shows `.2byte`/`.4byte` for it.
    fn raw(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.insn.len == 2 {
            write!(f, ".2byte 0x{:x}", self.bits & 0xffff)
        } else {
            write!(f, ".4byte 0x{:x}", self.bits)
        }
    }

    fn target(&self) -> u64 {
        self.pc.wrapping_add(self.insn.imm as i64 as u64) & self.xlen.addr_mask()
    }

    /// The compressed encodings objdump prints other than as their expansion (HINTs, `c.mv`,
    /// `unimp`); `None` for the others. Unprivileged ISA, "C" chapter, RVC HINT table.
    fn compressed_special(&self, f: &mut fmt::Formatter<'_>) -> Option<fmt::Result> {
        let c = self.bits & 0xffff;
        let f3 = c >> 13;
        let rd = (c >> 7) & 31;
        let rs2 = (c >> 2) & 31;
        let b12 = (c >> 12) & 1;
        let ci = (((b12 << 5) | rs2) << 26) as i32 >> 26;
        let shamt = (b12 << 5) | rs2;
        let rs1p = ((c >> 7) & 7) + 8;
        let x = xname;
        Some(match (c & 3, f3) {
            _ if c == 0 => f.write_str("unimp"),
            (1, 0) if rd == 0 && ci == 0 => f.write_str("nop"),
            (1, 0) if rd == 0 => write!(f, "c.nop {ci}"),
            (1, 0) if ci == 0 => write!(f, "add {},{},0", x(rd), x(rd)),
            (1, 2) if rd == 0 => write!(f, "c.li zero,{ci}"),
            // c.addi16sp with a zero immediate is reserved; objdump prints it.
            (1, 3) if rd == 2 && self.insn.op == Op::Illegal && c & 0x107c == 0 => {
                f.write_str("add sp,sp,0")
            }
            (1, 3) if rd == 0 && ci != 0 => {
                write!(f, "c.lui zero,0x{:x}", ci as u32 & 0xfffff)
            }
            (1, 4) if (c >> 10) & 3 == 0 && shamt == 0 => write!(f, "c.srli64 {}", x(rs1p)),
            (1, 4) if (c >> 10) & 3 == 1 && shamt == 0 => write!(f, "c.srai64 {}", x(rs1p)),
            (2, 0) if self.insn.op == Op::Slli && shamt == 0 => write!(f, "c.slli64 {}", x(rd)),
            (2, 0) if self.insn.op == Op::Slli && rd == 0 => {
                write!(f, "c.slli {},0x{shamt:x}", x(rd))
            }
            (2, 4) if b12 == 0 && rd == 0 && rs2 != 0 => write!(f, "c.mv zero,{}", x(rs2)),
            (2, 4) if b12 == 1 && rd == 0 && rs2 != 0 => write!(f, "c.add zero,{}", x(rs2)),
            // c.mv is `add rd, x0, rs2`; objdump prints it as `mv`.
            (2, 4) if b12 == 0 && rs2 != 0 => write!(f, "mv {},{}", x(rd), x(rs2)),
            _ => return None,
        })
    }
}

impl fmt::Display for Disasm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // objdump 2.40 does not check a shift amount against XLEN: on RV32 it prints the reserved
        // shifts by 32..63 (`slli`/`srli`/`srai`/`rori`, and their compressed forms) and Zbs's
        // `bclri`/`bexti`/`binvi`/`bseti` by 32..63 as RV64 would.
        if self.insn.op == Op::Illegal && self.xlen == Xlen::Rv32 {
            let wide = decode(self.bits, Xlen::Rv64, &Extensions::ALL);
            if matches!(
                wide.op,
                Op::Slli
                    | Op::Srli
                    | Op::Srai
                    | Op::Rori
                    | Op::Bclri
                    | Op::Bexti
                    | Op::Binvi
                    | Op::Bseti
            ) {
                return Disasm {
                    insn: wide,
                    ..*self
                }
                .format(f);
            }
        }
        self.format(f)
    }
}

impl Disasm {
    fn format(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Op::*;
        let i = &self.insn;
        if i.len == 2 {
            if let Some(r) = self.compressed_special(f) {
                return r;
            }
        }
        if i.op == Illegal {
            return self.raw(f);
        }
        let b = self.bits;
        let (rd, rs1, rs2, rs3) = (i.rd as u32, i.rs1 as u32, i.rs2 as u32, i.rs3 as u32);
        let (xd, x1, x2) = (xname(rd), xname(rs1), xname(rs2));
        let (fd, f1, f2, f3) = (fname(rd), fname(rs1), fname(rs2), fname(rs3));
        let imm = i.imm;
        let rm = Rm(i.rm);
        match i.op {
            Illegal => self.raw(f),
            Lui => write!(f, "lui {xd},0x{:x}", (imm as u32) >> 12),
            Auipc => write!(f, "auipc {xd},0x{:x}", (imm as u32) >> 12),
            Jal => match rd {
                0 => write!(f, "j {:x}", self.target()),
                1 => write!(f, "jal {:x}", self.target()),
                _ => write!(f, "jal {xd},{:x}", self.target()),
            },
            Jalr => match (rd, imm) {
                (0, 0) if rs1 == 1 => f.write_str("ret"),
                (0, 0) => write!(f, "jr {x1}"),
                (0, _) => write!(f, "jr {imm}({x1})"),
                (1, 0) => write!(f, "jalr {x1}"),
                (1, _) => write!(f, "jalr {imm}({x1})"),
                (_, 0) => write!(f, "jalr {xd},{x1}"),
                _ => write!(f, "jalr {xd},{imm}({x1})"),
            },
            Beq | Bne | Blt | Bge | Bltu | Bgeu => {
                let t = self.target();
                match (i.op, rs1, rs2) {
                    (Beq, _, 0) => write!(f, "beqz {x1},{t:x}"),
                    (Bne, _, 0) => write!(f, "bnez {x1},{t:x}"),
                    (Blt, _, 0) => write!(f, "bltz {x1},{t:x}"),
                    (Bge, 0, _) => write!(f, "blez {x2},{t:x}"),
                    (Bge, _, 0) => write!(f, "bgez {x1},{t:x}"),
                    (Blt, 0, _) => write!(f, "bgtz {x2},{t:x}"),
                    _ => write!(f, "{} {x1},{x2},{t:x}", mnemonic(i.op)),
                }
            }
            Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu => {
                write!(f, "{} {xd},{imm}({x1})", mnemonic(i.op))
            }
            Sb | Sh | Sw | Sd => write!(f, "{} {x2},{imm}({x1})", mnemonic(i.op)),
            Flw | Fld => write!(f, "{} {fd},{imm}({x1})", mnemonic(i.op)),
            Fsw | Fsd => write!(f, "{} {f2},{imm}({x1})", mnemonic(i.op)),
            // objdump 2.40 prints the immediate forms with the register form's name.
            Addi => match (rd, rs1, imm) {
                (0, 0, 0) => f.write_str("nop"),
                (_, 0, _) => write!(f, "li {xd},{imm}"),
                (_, _, 0) => write!(f, "mv {xd},{x1}"),
                _ => write!(f, "add {xd},{x1},{imm}"),
            },
            Slti => write!(f, "slti {xd},{x1},{imm}"),
            Sltiu if imm == 1 => write!(f, "seqz {xd},{x1}"),
            Sltiu => write!(f, "sltiu {xd},{x1},{imm}"),
            Xori if imm == -1 => write!(f, "not {xd},{x1}"),
            Xori => write!(f, "xor {xd},{x1},{imm}"),
            Ori => write!(f, "or {xd},{x1},{imm}"),
            Andi if imm == 255 => write!(f, "zext.b {xd},{x1}"),
            Andi => write!(f, "and {xd},{x1},{imm}"),
            Slli => write!(f, "sll {xd},{x1},0x{imm:x}"),
            Srli => write!(f, "srl {xd},{x1},0x{imm:x}"),
            Srai => write!(f, "sra {xd},{x1},0x{imm:x}"),
            Rori => write!(f, "ror {xd},{x1},0x{imm:x}"),
            Bclri => write!(f, "bclr {xd},{x1},0x{imm:x}"),
            Bexti => write!(f, "bext {xd},{x1},0x{imm:x}"),
            Binvi => write!(f, "binv {xd},{x1},0x{imm:x}"),
            Bseti => write!(f, "bset {xd},{x1},0x{imm:x}"),
            Addiw if imm == 0 => write!(f, "sext.w {xd},{x1}"),
            Addiw => write!(f, "addw {xd},{x1},{imm}"),
            Slliw => write!(f, "sllw {xd},{x1},0x{imm:x}"),
            Srliw => write!(f, "srlw {xd},{x1},0x{imm:x}"),
            Sraiw => write!(f, "sraw {xd},{x1},0x{imm:x}"),
            Roriw => write!(f, "rorw {xd},{x1},0x{imm:x}"),
            SlliUw => write!(f, "slli.uw {xd},{x1},0x{imm:x}"),
            Clz | Ctz | Cpop | Clzw | Ctzw | Cpopw | SextB | SextH | ZextH | OrcB | Rev8 => {
                write!(f, "{} {xd},{x1}", mnemonic(i.op))
            }
            Sub if rs1 == 0 => write!(f, "neg {xd},{x2}"),
            Subw if rs1 == 0 => write!(f, "negw {xd},{x2}"),
            Slt if rs2 == 0 => write!(f, "sltz {xd},{x1}"),
            Slt if rs1 == 0 => write!(f, "sgtz {xd},{x2}"),
            Sltu if rs1 == 0 => write!(f, "snez {xd},{x2}"),
            AddUw if rs2 == 0 => write!(f, "zext.w {xd},{x1}"),
            Add | Sub | Sll | Slt | Sltu | Xor | Srl | Sra | Or | And | Addw | Subw | Sllw
            | Srlw | Sraw | Mul | Mulh | Mulhsu | Mulhu | Div | Divu | Rem | Remu | Mulw | Divw
            | Divuw | Remw | Remuw | Sh1add | Sh2add | Sh3add | AddUw | Sh1addUw | Sh2addUw
            | Sh3addUw | Andn | Orn | Xnor | Max | Maxu | Min | Minu | Rol | Ror | Rolw | Rorw
            | Bclr | Bext | Binv | Bset | Clmul | Clmulh | Clmulr => {
                write!(f, "{} {xd},{x1},{x2}", mnemonic(i.op))
            }
            // objdump knows `fence` with rd, rs1 and fm zero, and `fence.tso` exactly; it shows
            // the other encodings the hart executes as a fence (their fields are reserved) raw.
            Fence if b == 0x8330_000f => f.write_str("fence.tso"),
            Fence if b & 0xf00f_8f80 != 0 => self.raw(f),
            Fence => {
                let (pred, succ) = ((b >> 24) & 15, (b >> 20) & 15);
                if pred == 15 && succ == 15 {
                    f.write_str("fence")
                } else {
                    write!(f, "fence {},{}", FenceSet(pred), FenceSet(succ))
                }
            }
            FenceI if b != 0x0000_100f => self.raw(f),
            FenceI => f.write_str("fence.i"),
            Ecall | Ebreak | Mret | Sret | Wfi => f.write_str(mnemonic(i.op)),
            SfenceVma => match (rs1, rs2) {
                (0, 0) => f.write_str("sfence.vma"),
                (_, 0) => write!(f, "sfence.vma {x1}"),
                _ => write!(f, "sfence.vma {x1},{x2}"),
            },
            Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci => self.csr(f),
            LrW | LrD => write!(f, "{}{} {xd},({x1})", mnemonic(i.op), Aqrl(i.rm)),
            ScW | AmoSwapW | AmoAddW | AmoXorW | AmoAndW | AmoOrW | AmoMinW | AmoMaxW
            | AmoMinuW | AmoMaxuW | ScD | AmoSwapD | AmoAddD | AmoXorD | AmoAndD | AmoOrD
            | AmoMinD | AmoMaxD | AmoMinuD | AmoMaxuD => {
                write!(f, "{}{} {xd},{x2},({x1})", mnemonic(i.op), Aqrl(i.rm))
            }
            FmaddS | FmsubS | FnmsubS | FnmaddS | FmaddD | FmsubD | FnmsubD | FnmaddD => {
                write!(f, "{} {fd},{f1},{f2},{f3}{}", mnemonic(i.op), rm)
            }
            FaddS | FsubS | FmulS | FdivS | FaddD | FsubD | FmulD | FdivD => {
                write!(f, "{} {fd},{f1},{f2}{}", mnemonic(i.op), rm)
            }
            FsqrtS | FsqrtD | FcvtSD => write!(f, "{} {fd},{f1}{}", mnemonic(i.op), rm),
            // Exact conversions: objdump 2.40 knows them only with rm = 0 and prints no rm.
            FcvtDS | FcvtDW | FcvtDWu if i.rm != 0 => self.raw(f),
            FcvtDS => write!(f, "{} {fd},{f1}", mnemonic(i.op)),
            FsgnjS | FsgnjD if rs1 == rs2 => write!(f, "fmv.{} {fd},{f1}", fmt_of(i.op)),
            FsgnjnS | FsgnjnD if rs1 == rs2 => write!(f, "fneg.{} {fd},{f1}", fmt_of(i.op)),
            FsgnjxS | FsgnjxD if rs1 == rs2 => write!(f, "fabs.{} {fd},{f1}", fmt_of(i.op)),
            FsgnjS | FsgnjnS | FsgnjxS | FminS | FmaxS | FsgnjD | FsgnjnD | FsgnjxD | FminD
            | FmaxD => write!(f, "{} {fd},{f1},{f2}", mnemonic(i.op)),
            FeqS | FltS | FleS | FeqD | FltD | FleD => {
                write!(f, "{} {xd},{f1},{f2}", mnemonic(i.op))
            }
            FcvtWS | FcvtWuS | FcvtLS | FcvtLuS | FcvtWD | FcvtWuD | FcvtLD | FcvtLuD => {
                write!(f, "{} {xd},{f1}{}", mnemonic(i.op), rm)
            }
            FmvXW | FmvXD | FclassS | FclassD => write!(f, "{} {xd},{f1}", mnemonic(i.op)),
            FcvtDW | FcvtDWu => write!(f, "{} {fd},{x1}", mnemonic(i.op)),
            FcvtSW | FcvtSWu | FcvtSL | FcvtSLu | FcvtDL | FcvtDLu => {
                write!(f, "{} {fd},{x1}{}", mnemonic(i.op), rm)
            }
            FmvWX | FmvDX => write!(f, "{} {fd},{x1}", mnemonic(i.op)),
        }
    }
}

/// AMO ordering suffix from the aq/rl bits ([`Insn::rm`] of an atomic).
struct Aqrl(u8);

impl fmt::Display for Aqrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 & 3 {
            0 => "",
            1 => ".rl",
            2 => ".aq",
            _ => ".aqrl",
        })
    }
}

impl Disasm {
    /// Zicsr instructions with objdump's aliases (`csrr`, `csrw`, `frflags`, `rdtime`, ...).
    fn csr(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Op::*;
        let i = &self.insn;
        if self.bits == 0xc000_1073 {
            // `csrrw zero, cycle, zero`: the canonical `unimp`.
            return f.write_str("unimp");
        }
        let (rd, rs1) = (i.rd as u32, i.rs1 as u32);
        let (xd, x1) = (xname(rd), xname(rs1));
        let csr = (i.imm as u32) & 0xfff;
        let name = Csr(csr);
        let uimm = rs1;
        let rv64 = self.xlen == Xlen::Rv64;
        // Floating-point CSR aliases (F chapter: `frcsr`/`fscsr`, `frrm`/`fsrm`,
        // `frflags`/`fsflags`).
        let fp = match csr {
            1 => Some("flags"),
            2 => Some("rm"),
            3 => Some("csr"),
            _ => None,
        };
        match (i.op, fp) {
            (Csrrw, Some(n)) if rd == 0 => write!(f, "fs{n} {x1}"),
            (Csrrw, Some(n)) => write!(f, "fs{n} {xd},{x1}"),
            // There is no `fscsri`; objdump spells `fsrmi`/`fsflagsi` with their `rd` always.
            (Csrrwi, Some(n)) if csr != 3 => write!(f, "fs{n}i {xd},{uimm}"),
            (Csrrs, Some(n)) if rs1 == 0 => write!(f, "fr{n} {xd}"),
            (Csrrs, _) if rs1 == 0 => match csr {
                0xc00 => write!(f, "rdcycle {xd}"),
                0xc01 => write!(f, "rdtime {xd}"),
                0xc02 => write!(f, "rdinstret {xd}"),
                0xc80 if !rv64 => write!(f, "rdcycleh {xd}"),
                0xc81 if !rv64 => write!(f, "rdtimeh {xd}"),
                0xc82 if !rv64 => write!(f, "rdinstreth {xd}"),
                _ => write!(f, "csrr {xd},{name}"),
            },
            (Csrrw, _) if rd == 0 => write!(f, "csrw {name},{x1}"),
            (Csrrs, _) if rd == 0 => write!(f, "csrs {name},{x1}"),
            (Csrrc, _) if rd == 0 => write!(f, "csrc {name},{x1}"),
            // objdump 2.40 names the immediate forms like the register forms.
            (Csrrwi, _) if rd == 0 => write!(f, "csrw {name},{uimm}"),
            (Csrrsi, _) if rd == 0 => write!(f, "csrs {name},{uimm}"),
            (Csrrci, _) if rd == 0 => write!(f, "csrc {name},{uimm}"),
            (Csrrw, _) => write!(f, "csrrw {xd},{name},{x1}"),
            (Csrrs, _) => write!(f, "csrrs {xd},{name},{x1}"),
            (Csrrc, _) => write!(f, "csrrc {xd},{name},{x1}"),
            (Csrrwi, _) => write!(f, "csrrw {xd},{name},{uimm}"),
            (Csrrsi, _) => write!(f, "csrrs {xd},{name},{uimm}"),
            _ => write!(f, "csrrc {xd},{name},{uimm}"),
        }
    }
}

/// `s` or `d`: the format of a floating-point operation.
fn fmt_of(op: Op) -> &'static str {
    let m = mnemonic(op);
    if m.ends_with(".d") {
        "d"
    } else {
        "s"
    }
}

/// The canonical mnemonic of an operation (what `objdump -M no-aliases` prints).
pub fn mnemonic(op: Op) -> &'static str {
    use Op::*;
    match op {
        Illegal => "illegal",
        Lui => "lui",
        Auipc => "auipc",
        Jal => "jal",
        Jalr => "jalr",
        Beq => "beq",
        Bne => "bne",
        Blt => "blt",
        Bge => "bge",
        Bltu => "bltu",
        Bgeu => "bgeu",
        Lb => "lb",
        Lh => "lh",
        Lw => "lw",
        Ld => "ld",
        Lbu => "lbu",
        Lhu => "lhu",
        Lwu => "lwu",
        Sb => "sb",
        Sh => "sh",
        Sw => "sw",
        Sd => "sd",
        Addi => "addi",
        Slti => "slti",
        Sltiu => "sltiu",
        Xori => "xori",
        Ori => "ori",
        Andi => "andi",
        Slli => "slli",
        Srli => "srli",
        Srai => "srai",
        Add => "add",
        Sub => "sub",
        Sll => "sll",
        Slt => "slt",
        Sltu => "sltu",
        Xor => "xor",
        Srl => "srl",
        Sra => "sra",
        Or => "or",
        And => "and",
        Addiw => "addiw",
        Slliw => "slliw",
        Srliw => "srliw",
        Sraiw => "sraiw",
        Addw => "addw",
        Subw => "subw",
        Sllw => "sllw",
        Srlw => "srlw",
        Sraw => "sraw",
        Fence => "fence",
        FenceI => "fence.i",
        Ecall => "ecall",
        Ebreak => "ebreak",
        Mret => "mret",
        Sret => "sret",
        Wfi => "wfi",
        SfenceVma => "sfence.vma",
        Csrrw => "csrrw",
        Csrrs => "csrrs",
        Csrrc => "csrrc",
        Csrrwi => "csrrwi",
        Csrrsi => "csrrsi",
        Csrrci => "csrrci",
        Mul => "mul",
        Mulh => "mulh",
        Mulhsu => "mulhsu",
        Mulhu => "mulhu",
        Div => "div",
        Divu => "divu",
        Rem => "rem",
        Remu => "remu",
        Mulw => "mulw",
        Divw => "divw",
        Divuw => "divuw",
        Remw => "remw",
        Remuw => "remuw",
        LrW => "lr.w",
        ScW => "sc.w",
        AmoSwapW => "amoswap.w",
        AmoAddW => "amoadd.w",
        AmoXorW => "amoxor.w",
        AmoAndW => "amoand.w",
        AmoOrW => "amoor.w",
        AmoMinW => "amomin.w",
        AmoMaxW => "amomax.w",
        AmoMinuW => "amominu.w",
        AmoMaxuW => "amomaxu.w",
        LrD => "lr.d",
        ScD => "sc.d",
        AmoSwapD => "amoswap.d",
        AmoAddD => "amoadd.d",
        AmoXorD => "amoxor.d",
        AmoAndD => "amoand.d",
        AmoOrD => "amoor.d",
        AmoMinD => "amomin.d",
        AmoMaxD => "amomax.d",
        AmoMinuD => "amominu.d",
        AmoMaxuD => "amomaxu.d",
        Flw => "flw",
        Fsw => "fsw",
        Fld => "fld",
        Fsd => "fsd",
        FmaddS => "fmadd.s",
        FmsubS => "fmsub.s",
        FnmsubS => "fnmsub.s",
        FnmaddS => "fnmadd.s",
        FaddS => "fadd.s",
        FsubS => "fsub.s",
        FmulS => "fmul.s",
        FdivS => "fdiv.s",
        FsqrtS => "fsqrt.s",
        FsgnjS => "fsgnj.s",
        FsgnjnS => "fsgnjn.s",
        FsgnjxS => "fsgnjx.s",
        FminS => "fmin.s",
        FmaxS => "fmax.s",
        FcvtWS => "fcvt.w.s",
        FcvtWuS => "fcvt.wu.s",
        FcvtLS => "fcvt.l.s",
        FcvtLuS => "fcvt.lu.s",
        FmvXW => "fmv.x.w",
        FclassS => "fclass.s",
        FeqS => "feq.s",
        FltS => "flt.s",
        FleS => "fle.s",
        FcvtSW => "fcvt.s.w",
        FcvtSWu => "fcvt.s.wu",
        FcvtSL => "fcvt.s.l",
        FcvtSLu => "fcvt.s.lu",
        FmvWX => "fmv.w.x",
        FmaddD => "fmadd.d",
        FmsubD => "fmsub.d",
        FnmsubD => "fnmsub.d",
        FnmaddD => "fnmadd.d",
        FaddD => "fadd.d",
        FsubD => "fsub.d",
        FmulD => "fmul.d",
        FdivD => "fdiv.d",
        FsqrtD => "fsqrt.d",
        FsgnjD => "fsgnj.d",
        FsgnjnD => "fsgnjn.d",
        FsgnjxD => "fsgnjx.d",
        FminD => "fmin.d",
        FmaxD => "fmax.d",
        FcvtSD => "fcvt.s.d",
        FcvtDS => "fcvt.d.s",
        FeqD => "feq.d",
        FltD => "flt.d",
        FleD => "fle.d",
        FclassD => "fclass.d",
        FcvtWD => "fcvt.w.d",
        FcvtWuD => "fcvt.wu.d",
        FcvtLD => "fcvt.l.d",
        FcvtLuD => "fcvt.lu.d",
        FmvXD => "fmv.x.d",
        FcvtDW => "fcvt.d.w",
        FcvtDWu => "fcvt.d.wu",
        FcvtDL => "fcvt.d.l",
        FcvtDLu => "fcvt.d.lu",
        FmvDX => "fmv.d.x",
        Sh1add => "sh1add",
        Sh2add => "sh2add",
        Sh3add => "sh3add",
        AddUw => "add.uw",
        Sh1addUw => "sh1add.uw",
        Sh2addUw => "sh2add.uw",
        Sh3addUw => "sh3add.uw",
        SlliUw => "slli.uw",
        Andn => "andn",
        Orn => "orn",
        Xnor => "xnor",
        Clz => "clz",
        Ctz => "ctz",
        Cpop => "cpop",
        Clzw => "clzw",
        Ctzw => "ctzw",
        Cpopw => "cpopw",
        Max => "max",
        Maxu => "maxu",
        Min => "min",
        Minu => "minu",
        SextB => "sext.b",
        SextH => "sext.h",
        ZextH => "zext.h",
        Rol => "rol",
        Ror => "ror",
        Rori => "rori",
        Rolw => "rolw",
        Rorw => "rorw",
        Roriw => "roriw",
        OrcB => "orc.b",
        Rev8 => "rev8",
        Bclr => "bclr",
        Bclri => "bclri",
        Bext => "bext",
        Bexti => "bexti",
        Binv => "binv",
        Binvi => "binvi",
        Bset => "bset",
        Bseti => "bseti",
        Clmul => "clmul",
        Clmulh => "clmulh",
        Clmulr => "clmulr",
    }
}
