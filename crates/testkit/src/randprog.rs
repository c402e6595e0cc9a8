//! Random RISC-V test programs for trace round trips: machine code generated directly (no cross
//! compiler), packed into a minimal ELF, that always terminates (sifive_test finisher, exit 0).
//!
//! A program is a start-up block, an M-mode trap handler and a set of functions whose call graph
//! is acyclic apart from self-recursion, so every run is bounded; the generator keeps an upper
//! bound of each function's instruction count and spends a per-program budget. Everything a trace
//! encoder must handle shows up in random mixes: taken and not-taken branches decided by a
//! pseudo-random generator in the program (`s11`), loops (backward `c.bnez`/`bne`), calls linking
//! `x1` or `x5` (`jal`, `c.jal`, `auipc`+`jalr` pairs, `jalr`/`c.jalr` through a register,
//! `jalr x1, x1`, `jalr x5, x5`), returns (`ret`, `c.jr ra`, `jr t0`, and `jalr t0, ra`, a
//! co-routine swap), co-routine swaps `jalr ra, t0`/`c.jalr t0`, tail calls (`j`, `jr`), recursion
//! up to 40 deep (deeper than any call stack an encoder keeps), synchronous traps that retire
//! (`ecall`, `ebreak`, `c.ebreak`) and that do not (illegal instructions), timer interrupts at
//! arbitrary instructions, and optionally the program running in U-mode.
//!
//! Register use: `s11` generator state, `s10` its multiplier, `s0` branch conditions, `s1`-`s3`
//! loop counters (saved by every function that loops), `a0` recursion depth, `t0`/`t1` link and
//! jump-target registers, `t5`/`t6` the trap handler's (restored before `mret`), and `t3`, `t4`,
//! `a1`-`a5` arithmetic. `mscratch` holds the handler's save area.

use crate::asm::{b_type, i_type, j_type, r_type, s_type};
use crate::{minimal_elf, Rng};

/// Where the code is loaded (QEMU `virt` RAM).
pub const BASE: u64 = 0x8000_0000;

/// The trap handler's save area (above the stack).
const SAVE_AREA: u64 = BASE + 0x10_0100;

/// `a7` value of the final `ecall`, on which the trap handler ends the program.
const EXIT_MARK: i64 = 0x5ee;

/// Options of one generated program (all chosen from the seed).
#[derive(Clone, Debug)]
pub struct ProgramShape {
    /// RV64 (else RV32).
    pub rv64: bool,
    /// Compressed instructions are used.
    pub compressed: bool,
    /// Timer interrupt period in `mtime` ticks (= instructions), if interrupts are on.
    pub timer_period: Option<u32>,
    /// The functions run in U-mode (else M-mode).
    pub user_mode: bool,
}

/// A generated program.
pub struct RandomProgram {
    /// The ELF file (one RWX segment at [`BASE`]).
    pub elf: Vec<u8>,
    /// What was chosen.
    pub shape: ProgramShape,
    /// Upper bound of the instructions the functions retire (start-up and traps not counted).
    pub max_insns: u64,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Saves `ra` and `s1`-`s3`, returns through `ra`.
    Normal,
    /// Called with `jal t0`, returns through `t0`, calls nothing.
    Millicode,
    /// `a0` = depth: calls itself `a0` times.
    Recursive,
}

struct Func {
    kind: Kind,
    addr: u64,
    /// Upper bound of retired instructions of one call (for recursion: per level).
    cost: u64,
}

// Registers.
const RA: u32 = 1;
const SP: u32 = 2;
const T0: u32 = 5;
const T1: u32 = 6;
const S0: u32 = 8;
const A0: u32 = 10;
const A7: u32 = 17;
const S10: u32 = 26;
const S11: u32 = 27;
const T5: u32 = 30;
const T6: u32 = 31;
/// Registers arithmetic may clobber.
const SCRATCH: [u32; 7] = [28, 29, 11, 12, 13, 14, 15];
/// Loop counter by nesting depth.
const LOOP_REG: [u32; 3] = [9, 18, 19];

// CSRs.
const MSTATUS: u32 = 0x300;
const MIE: u32 = 0x304;
const MTVEC: u32 = 0x305;
const MSCRATCH: u32 = 0x340;
const MEPC: u32 = 0x341;
const MCAUSE: u32 = 0x342;
const PMPCFG0: u32 = 0x3a0;
const PMPADDR0: u32 = 0x3b0;
const CYCLE: u32 = 0xc00;

/// `c.j` (funct3 101) / `c.jal` (001) offset layout.
fn cj_type(f3: u16, off: i64) -> u16 {
    let i = off as u16;
    (f3 << 13)
        | ((i >> 11 & 1) << 12)
        | ((i >> 4 & 1) << 11)
        | ((i >> 8 & 3) << 9)
        | ((i >> 10 & 1) << 8)
        | ((i >> 6 & 1) << 7)
        | ((i >> 7 & 1) << 6)
        | ((i >> 1 & 7) << 3)
        | ((i >> 5 & 1) << 2)
        | 1
}
/// `c.beqz` (funct3 110) / `c.bnez` (111) with `rs1'` in x8-x15.
fn cb_type(f3: u16, rs1: u32, off: i64) -> u16 {
    let i = off as u16;
    (f3 << 13)
        | ((i >> 8 & 1) << 12)
        | ((i >> 3 & 3) << 10)
        | (((rs1 - 8) as u16) << 7)
        | ((i >> 6 & 3) << 5)
        | ((i >> 1 & 3) << 3)
        | ((i >> 5 & 1) << 2)
        | 1
}

/// Machine code being assembled, with forward-branch fix-ups.
struct Asm {
    code: Vec<u8>,
    rv64: bool,
    rvc: bool,
}

/// A forward branch or jump to patch once its target is known.
struct Fixup {
    at: usize,
    insn: u32,
    jal: bool,
}

impl Asm {
    fn pc(&self) -> u64 {
        BASE + self.code.len() as u64
    }
    fn w(&mut self, insn: u32) {
        self.code.extend_from_slice(&insn.to_le_bytes());
    }
    fn h(&mut self, insn: u16) {
        debug_assert!(self.rvc);
        self.code.extend_from_slice(&insn.to_le_bytes());
    }
    fn addi(&mut self, rd: u32, rs1: u32, imm: i64) {
        self.w(i_type(imm, rs1, 0, rd, 0x13));
    }
    /// `rd` = pc-relative address `target` (`auipc` + `addi`).
    fn la(&mut self, rd: u32, target: u64) {
        let off = target.wrapping_sub(self.pc()) as i64;
        let lo = (off << 52) >> 52;
        let hi = (off - lo) >> 12;
        self.w(((hi as u32) << 12) | (rd << 7) | 0x17);
        self.addi(rd, rd, lo);
    }
    /// `rd` = small positive constant (< 2^31), `lui` + `addi`.
    fn li(&mut self, rd: u32, v: i64) {
        debug_assert!((0..1 << 31).contains(&v));
        if v < 2048 {
            self.addi(rd, 0, v);
            return;
        }
        let lo = (v << 52) >> 52;
        let hi = (v - lo) >> 12;
        self.w(((hi as u32) << 12) | (rd << 7) | 0x37);
        if lo != 0 {
            self.addi(rd, rd, lo);
        }
    }
    fn csrrw(&mut self, rd: u32, csr: u32, rs1: u32) {
        self.w((csr << 20) | (rs1 << 15) | (1 << 12) | (rd << 7) | 0x73);
    }
    fn csrrs(&mut self, rd: u32, csr: u32, rs1: u32) {
        self.w((csr << 20) | (rs1 << 15) | (2 << 12) | (rd << 7) | 0x73);
    }
    fn csrrc(&mut self, rd: u32, csr: u32, rs1: u32) {
        self.w((csr << 20) | (rs1 << 15) | (3 << 12) | (rd << 7) | 0x73);
    }
    /// XLEN-wide store / load.
    fn sx(&mut self, rs2: u32, rs1: u32, off: i64) {
        self.w(s_type(off, rs2, rs1, if self.rv64 { 3 } else { 2 }));
    }
    fn lx(&mut self, rd: u32, rs1: u32, off: i64) {
        self.w(i_type(off, rs1, if self.rv64 { 3 } else { 2 }, rd, 0x03));
    }
    fn jalr(&mut self, rd: u32, rs1: u32, off: i64) {
        self.w(i_type(off, rs1, 0, rd, 0x67));
    }
    /// `jal rd, target` to a known address.
    fn jal_to(&mut self, rd: u32, target: u64) {
        let off = target.wrapping_sub(self.pc()) as i64;
        self.w(j_type(off, rd));
    }
    /// A forward conditional branch (`f3`: beq 0, bne 1, blt 4, bge 5, bltu 6, bgeu 7).
    fn branch_fwd(&mut self, f3: u32, rs1: u32, rs2: u32) -> Fixup {
        let f = Fixup {
            at: self.code.len(),
            insn: b_type(0, rs2, rs1, f3),
            jal: false,
        };
        self.w(0);
        f
    }
    /// A forward `jal rd`.
    fn jal_fwd(&mut self, rd: u32) -> Fixup {
        let f = Fixup {
            at: self.code.len(),
            insn: j_type(0, rd),
            jal: true,
        };
        self.w(0);
        f
    }
    /// Point a forward branch or jump at the current position.
    fn bind(&mut self, f: Fixup) {
        let off = (self.code.len() - f.at) as i64;
        assert!(f.jal || off < 4096, "forward branch out of range");
        let insn = if f.jal {
            j_type(off, (f.insn >> 7) & 31)
        } else {
            b_type(
                off,
                (f.insn >> 20) & 31,
                (f.insn >> 15) & 31,
                (f.insn >> 12) & 7,
            )
        };
        self.code[f.at..f.at + 4].copy_from_slice(&insn.to_le_bytes());
    }
    /// Pad with `c.nop`/`nop` to a 4-byte boundary.
    fn align4(&mut self) {
        if !self.code.len().is_multiple_of(4) {
            self.h(0x0001);
        }
    }
}

/// The program generator.
struct Gen {
    rng: Rng,
    a: Asm,
    funcs: Vec<Func>,
}

impl Gen {
    /// Use a compressed form this time?
    fn c(&mut self) -> bool {
        self.a.rvc && self.rng.chance(50)
    }

    /// One arithmetic instruction on the scratch registers.
    fn alu(&mut self) {
        let rd = SCRATCH[self.rng.range(0, 6) as usize];
        let rs = SCRATCH[self.rng.range(0, 6) as usize];
        let imm = self.rng.range(0, 63) as i64 - 32;
        if self.c() {
            let h = match self.rng.range(0, 3) {
                // c.addi (nonzero imm), c.li, c.mv, c.add
                0 => {
                    let imm = if imm == 0 { 1 } else { imm } as u16;
                    ((imm >> 5 & 1) << 12) | ((rd as u16) << 7) | ((imm & 31) << 2) | 1
                }
                1 => {
                    let imm = imm as u16;
                    (2 << 13) | ((imm >> 5 & 1) << 12) | ((rd as u16) << 7) | ((imm & 31) << 2) | 1
                }
                2 => 0x8002 | ((rd as u16) << 7) | ((rs as u16) << 2),
                _ => 0x9002 | ((rd as u16) << 7) | ((rs as u16) << 2),
            };
            self.a.h(h);
        } else {
            let insn = match self.rng.range(0, 5) {
                0 => i_type(imm, rs, 0, rd, 0x13),                      // addi
                1 => r_type(0, rs, rd, 4, rd, 0x33),                    // xor
                2 => r_type(0x20, rs, rd, 0, rd, 0x33),                 // sub
                3 => i_type(imm & 15, rs, 1, rd, 0x13),                 // slli
                4 => r_type(1, rs, rd, 0, rd, 0x33),                    // mul
                _ => ((imm as u32 & 0xfffff) << 12) | (rd << 7) | 0x37, // lui
            };
            self.a.w(insn);
        }
    }

    /// Advance the program's generator: `s11 = s11 * s10 + k`.
    fn lcg(&mut self) {
        self.a.w(r_type(1, S10, S11, 0, S11, 0x33));
        let k = self.rng.range(1, 1000) as i64;
        self.a.addi(S11, S11, k);
    }

    /// `s0` = some bits of the generator state (0 with probability 1/2, 1/4 or 1/8).
    fn cond(&mut self) {
        let shift = self.rng.range(8, 24) as i64;
        let mask = [1i64, 3, 7][self.rng.range(0, 2) as usize];
        self.a.w(i_type(shift, S11, 5, S0, 0x13)); // srli s0, s11, shift
        self.a.w(i_type(mask, S0, 7, S0, 0x13)); // andi s0, s0, mask
    }

    /// A block of statements for a function of kind `kind` (index `me`), spending at most
    /// `budget` instructions; returns the upper bound spent.
    fn block(&mut self, me: usize, kind: Kind, budget: u64, depth: usize, ifs: usize) -> u64 {
        let mut spent = 0;
        let n = self.rng.range(1, 6);
        for _ in 0..n {
            if spent + 4 > budget {
                break;
            }
            spent += self.statement(me, kind, budget - spent, depth, ifs);
        }
        spent
    }

    /// One statement; returns its upper bound of retired instructions.
    fn statement(&mut self, me: usize, kind: Kind, budget: u64, depth: usize, ifs: usize) -> u64 {
        let callees: Vec<usize> = (me + 1..self.funcs.len()).collect();
        let pick = self.rng.range(0, 99);
        match pick {
            // Straight-line arithmetic.
            0..=24 => {
                let k = self.rng.range(1, 8).min(budget);
                for _ in 0..k {
                    self.alu();
                }
                k
            }
            // if / if-else on the generator.
            25..=44 if ifs < 2 => {
                self.lcg();
                self.cond();
                let f3 = if self.rng.chance(50) { 0 } else { 1 };
                let skip = self.a.branch_fwd(f3, S0, 0);
                let inner = budget.saturating_sub(8) / 2;
                let then_cost = self.block(me, kind, inner, depth, ifs + 1);
                if self.rng.chance(50) {
                    let over = self.a.jal_fwd(0);
                    self.a.bind(skip);
                    let else_cost = self.block(me, kind, inner, depth, ifs + 1);
                    self.a.bind(over);
                    5 + then_cost.max(else_cost) + 1
                } else {
                    self.a.bind(skip);
                    5 + then_cost
                }
            }
            // A loop (not in millicode, which saves no loop counter).
            45..=59 if kind != Kind::Millicode && depth < LOOP_REG.len() => {
                let reg = LOOP_REG[depth];
                let trips = if self.rng.chance(20) {
                    self.rng.range(20, 300)
                } else {
                    self.rng.range(1, 6)
                };
                let body_budget = budget.saturating_sub(4) / trips;
                if body_budget < 3 {
                    return 0;
                }
                self.a.li(reg, trips as i64);
                let top = self.a.pc();
                let body = self.block(me, kind, body_budget - 2, depth + 1, ifs);
                self.a.addi(reg, reg, -1);
                let off = top.wrapping_sub(self.a.pc()) as i64;
                if reg == 9 && self.c() && off >= -256 {
                    self.a.h(cb_type(7, reg, off)); // c.bnez s1
                } else {
                    self.a.w(b_type(off, 0, reg, 1)); // bne reg, x0
                }
                2 + trips * (body + 2)
            }
            // Calls.
            60..=84 if kind != Kind::Millicode && !callees.is_empty() => {
                let j = callees[self.rng.range(0, callees.len() as u64 - 1) as usize];
                self.call(j, budget)
            }
            // Synchronous traps.
            85..=89 => {
                match self.rng.range(0, 3) {
                    0 => self.a.w(0x73),                 // ecall
                    1 => self.a.w(0x10_0073),            // ebreak
                    2 if self.a.rvc => self.a.h(0x9002), // c.ebreak
                    _ => self.a.csrrw(0, CYCLE, 0),      // illegal: write to a read-only CSR
                }
                1
            }
            _ => {
                self.alu();
                1
            }
        }
    }

    /// A call to function `j` in one of the ways its kind allows; returns its cost bound (0 and
    /// no code if it does not fit `budget`).
    fn call(&mut self, j: usize, budget: u64) -> u64 {
        let (kind, addr, cost) = (self.funcs[j].kind, self.funcs[j].addr, self.funcs[j].cost);
        match kind {
            Kind::Normal => {
                if cost + 4 > budget {
                    return 0;
                }
                match self.rng.range(0, 7) {
                    0 => self.a.jal_to(RA, addr),
                    1 if self.a.rvc && !self.a.rv64 && {
                        let off = addr.wrapping_sub(self.a.pc()) as i64;
                        off >= -2048
                    } =>
                    {
                        let off = addr.wrapping_sub(self.a.pc()) as i64;
                        self.a.h(cj_type(1, off)); // c.jal
                    }
                    2 => {
                        // call: auipc ra + jalr ra (a sequentially inferable pair)
                        let off = addr.wrapping_sub(self.a.pc()) as i64;
                        let lo = (off << 52) >> 52;
                        self.a
                            .w(((((off - lo) >> 12) as u32) << 12) | (RA << 7) | 0x17);
                        self.a.jalr(RA, RA, lo);
                    }
                    3 => {
                        self.a.la(T1, addr);
                        if self.c() {
                            self.a.h(0x9002 | ((T1 as u16) << 7)); // c.jalr t1
                        } else {
                            self.a.jalr(RA, T1, 0);
                        }
                    }
                    4 => {
                        // jalr ra, 0(ra): rd = rs1 = link, a call
                        self.a.la(RA, addr);
                        self.a.jalr(RA, RA, 0);
                    }
                    5 => {
                        // co-routine swap: rd = x1, rs1 = x5
                        self.a.la(T0, addr);
                        if self.c() {
                            self.a.h(0x9002 | ((T0 as u16) << 7)); // c.jalr t0
                        } else {
                            self.a.jalr(RA, T0, 0);
                        }
                    }
                    _ => self.a.jal_to(RA, addr),
                }
                cost + 3
            }
            Kind::Millicode => {
                if cost + 4 > budget {
                    return 0;
                }
                match self.rng.range(0, 3) {
                    0 => {
                        self.a.la(T1, addr);
                        self.a.jalr(T0, T1, 0);
                    }
                    1 => {
                        // jalr t0, 0(t0): rd = rs1 = x5, a call
                        self.a.la(T0, addr);
                        self.a.jalr(T0, T0, 0);
                    }
                    _ => self.a.jal_to(T0, addr),
                }
                cost + 3
            }
            Kind::Recursive => {
                let max_depth = (budget.saturating_sub(4) / cost.max(1)).min(40);
                if max_depth < 1 {
                    return 0;
                }
                let d = self.rng.range(1, max_depth);
                self.a.li(A0, d as i64);
                self.a.jal_to(RA, addr);
                cost * (d + 1) + 3
            }
        }
    }

    /// Emit function `me` of kind `kind` with budget `budget`; records its address and cost.
    fn function(&mut self, me: usize, budget: u64) {
        let kind = self.funcs[me].kind;
        let addr = self.a.pc();
        self.funcs[me].addr = addr;
        let xb = if self.a.rv64 { 8 } else { 4 };
        let frame = 4 * xb;
        let cost = match kind {
            Kind::Millicode => {
                let body = self.block(me, kind, budget.saturating_sub(1), 0, 0);
                if self.c() {
                    self.a.h(0x8002 | ((T0 as u16) << 7)); // c.jr t0
                } else {
                    self.a.jalr(0, T0, 0); // jr t0
                }
                body + 1
            }
            Kind::Normal | Kind::Recursive => {
                let base = if kind == Kind::Recursive {
                    Some(self.a.branch_fwd(0, A0, 0)) // beqz a0, base
                } else {
                    None
                };
                self.a.addi(SP, SP, -frame);
                for (k, r) in [RA, LOOP_REG[0], LOOP_REG[1], LOOP_REG[2]]
                    .iter()
                    .enumerate()
                {
                    self.a.sx(*r, SP, k as i64 * xb);
                }
                let mut cost = 11;
                if kind == Kind::Recursive {
                    self.a.addi(A0, A0, -1);
                    cost += self.block(me, kind, budget / 2, 0, 0);
                    self.a.jal_to(RA, addr);
                    cost += 2;
                }
                cost += self.block(me, kind, budget.saturating_sub(cost), 0, 0);
                for (k, r) in [RA, LOOP_REG[0], LOOP_REG[1], LOOP_REG[2]]
                    .iter()
                    .enumerate()
                {
                    self.a.lx(*r, SP, k as i64 * xb);
                }
                self.a.addi(SP, SP, frame);
                // Tail call or return.
                let tail: Vec<usize> = (me + 1..self.funcs.len())
                    .filter(|&j| {
                        self.funcs[j].kind == Kind::Normal
                            && self.funcs[j].cost + cost + 2 <= budget
                    })
                    .collect();
                if kind == Kind::Normal && !tail.is_empty() && self.rng.chance(25) {
                    let j = tail[self.rng.range(0, tail.len() as u64 - 1) as usize];
                    let target = self.funcs[j].addr;
                    if self.rng.chance(50) {
                        let off = target.wrapping_sub(self.a.pc()) as i64;
                        if self.c() && off >= -2048 {
                            self.a.h(cj_type(5, off)); // c.j
                        } else {
                            self.a.jal_to(0, target); // j
                        }
                    } else {
                        self.a.la(T1, target);
                        if self.c() {
                            self.a.h(0x8002 | ((T1 as u16) << 7)); // c.jr t1
                        } else {
                            self.a.jalr(0, T1, 0); // jr t1
                        }
                    }
                    cost += 3 + self.funcs[j].cost;
                } else {
                    match self.rng.range(0, 9) {
                        0..=3 if self.a.rvc => self.a.h(0x8002 | ((RA as u16) << 7)), // c.jr ra
                        4 => self.a.jalr(T0, RA, 0), // jalr t0, ra: co-routine swap
                        _ => self.a.jalr(0, RA, 0),  // ret
                    }
                    cost += 1;
                }
                if let Some(b) = base {
                    self.a.bind(b);
                    cost += 2 + self.block(me, Kind::Millicode, 6, 0, 0);
                    self.a.jalr(0, RA, 0);
                }
                cost
            }
        };
        self.funcs[me].cost = cost;
    }

    /// The trap handler: skips the trapping instruction of a synchronous trap (the `ecall` with
    /// `a7` = [`EXIT_MARK`] ends the program), re-arms the timer on an interrupt.
    fn handler(&mut self, period: u32) -> u64 {
        self.a.align4();
        let addr = self.a.pc();
        self.a.csrrw(T6, MSCRATCH, T6); // t6 = save area, mscratch = t6
        self.a.sx(T5, T6, 0);
        self.a.csrrs(T5, MCAUSE, 0);
        let irq = self.a.branch_fwd(4, T5, 0); // blt t5, x0: interrupt
        self.a.addi(T5, 0, EXIT_MARK);
        let not_exit = self.a.branch_fwd(1, A7, T5);
        self.a.li(T6, 0x10_0000); // sifive_test
        self.a.li(T5, 0x5555);
        self.a.w(s_type(0, T5, T6, 2)); // sw: pass
        let stop = self.a.pc();
        self.a.jal_to(0, stop);
        self.a.bind(not_exit);
        self.a.csrrs(T6, MEPC, 0);
        self.a.w(i_type(0, T6, 5, T5, 0x03)); // lhu t5, 0(t6)
        self.a.w(i_type(3, T5, 7, T5, 0x13)); // andi t5, t5, 3
        self.a.addi(T5, T5, -3);
        let four = self.a.branch_fwd(0, T5, 0);
        self.a.addi(T6, T6, 2);
        let done = self.a.jal_fwd(0);
        self.a.bind(four);
        self.a.addi(T6, T6, 4);
        self.a.bind(done);
        self.a.csrrw(0, MEPC, T6);
        let restore = self.a.jal_fwd(0);
        self.a.bind(irq);
        self.a.li(T6, 0x200_c000);
        self.a.lx(T5, T6, -8); // mtime (its low word on RV32)
        self.a.addi(T5, T5, i64::from(period));
        self.a.li(T6, 0x200_4000); // mtimecmp
        self.a.sx(T5, T6, 0);
        if !self.a.rv64 {
            self.a.w(s_type(4, 0, T6, 2)); // high word 0
        }
        self.a.bind(restore);
        self.a.la(T6, SAVE_AREA);
        self.a.lx(T5, T6, 0);
        self.a.csrrw(T6, MSCRATCH, T6); // t6 restored, mscratch = save area
        self.a.w(0x3020_0073); // mret
        addr
    }
}

/// The seeds random-program tests use: `RVTRACE_RANDOM_SEEDS` = `N` (seeds 0..N) or `A..B`,
/// else `0..default`. A failing seed can be written out with
/// `cargo run -p rvtrace-testkit --example randprog -- SEED OUT.elf`.
pub fn seeds(default: u64) -> std::ops::Range<u64> {
    let Ok(v) = std::env::var("RVTRACE_RANDOM_SEEDS") else {
        return 0..default;
    };
    let parse = |s: &str| -> u64 {
        s.trim()
            .parse()
            .unwrap_or_else(|_| panic!("RVTRACE_RANDOM_SEEDS={v}: expected N or A..B"))
    };
    match v.split_once("..") {
        Some((a, b)) => parse(a)..parse(b),
        None => 0..parse(&v),
    }
}

/// Generate the program for `seed`.
pub fn random_program(seed: u64) -> RandomProgram {
    let mut rng = Rng(seed);
    let shape = ProgramShape {
        rv64: rng.chance(50),
        compressed: rng.chance(75),
        timer_period: if rng.chance(40) {
            Some(rng.range(25, 600) as u32)
        } else {
            None
        },
        user_mode: rng.chance(30),
    };
    let budget = rng.range(2_000, 60_000);
    let nfuncs = rng.range(3, 14) as usize;
    let mut funcs = Vec::new();
    for k in 0..nfuncs {
        let kind = if k == 0 {
            Kind::Normal
        } else {
            match rng.range(0, 9) {
                0 | 1 => Kind::Millicode,
                2 => Kind::Recursive,
                _ => Kind::Normal,
            }
        };
        funcs.push(Func {
            kind,
            addr: 0,
            cost: 0,
        });
    }
    let mut g = Gen {
        rng,
        a: Asm {
            code: Vec::new(),
            rv64: shape.rv64,
            rvc: shape.compressed,
        },
        funcs,
    };
    let to_start = g.a.jal_fwd(0);
    let handler = g.handler(shape.timer_period.unwrap_or(1000));
    // Functions, callees first, each with a growing share of the budget.
    for me in (0..nfuncs).rev() {
        let share = if me == 0 {
            budget
        } else {
            budget / g.rng.range(2, 20)
        };
        g.function(me, share);
    }
    let max_insns = g.funcs[0].cost;
    // Start-up.
    g.a.bind(to_start);
    g.a.la(SP, BASE + 0x10_0000);
    g.a.la(T0, SAVE_AREA);
    g.a.csrrw(0, MSCRATCH, T0);
    g.a.la(T0, handler);
    g.a.csrrw(0, MTVEC, T0);
    g.a.li(S10, 1_103_515_245);
    g.a.li(S11, (seed & 0x7fff_ffff) as i64);
    if let Some(period) = shape.timer_period {
        g.a.li(T6, 0x200_4000);
        g.a.li(T5, i64::from(period));
        g.a.sx(T5, T6, 0);
        g.a.addi(T5, 0, 0x80);
        g.a.csrrs(0, MIE, T5); // MTIE
        if !shape.user_mode {
            g.a.addi(T5, 0, 0x8);
            g.a.csrrs(0, MSTATUS, T5); // MIE
        }
    }
    let main = g.funcs[0].addr;
    if shape.user_mode {
        g.a.addi(T5, 0, -1);
        g.a.csrrw(0, PMPADDR0, T5);
        g.a.addi(T5, 0, 0x1f); // NAPOT, RWX
        g.a.csrrw(0, PMPCFG0, T5);
        g.a.li(T5, 0x1800);
        g.a.csrrc(0, MSTATUS, T5); // MPP = U
        let after = g.a.pc() + 16; // la (8), csrw (4), mret (4)
        g.a.la(T5, after);
        g.a.csrrw(0, MEPC, T5);
        g.a.w(0x3020_0073); // mret
        debug_assert_eq!(g.a.pc(), after);
    }
    g.a.jal_to(RA, main);
    g.a.addi(A7, 0, EXIT_MARK);
    g.a.w(0x73); // ecall: the handler ends the program
    let elf = minimal_elf(shape.rv64, BASE, &g.a.code);
    RandomProgram {
        elf,
        shape,
        max_insns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvtrace_sim::Stop;

    #[test]
    fn programs_terminate_within_their_bound() {
        for seed in 0..200 {
            let p = random_program(seed);
            let run = crate::run_elf_bytes(&p.elf, 4);
            assert_eq!(run.stop, Stop::Exit(0), "seed {seed}: {:?}", p.shape);
            assert!(
                (run.pcs.len() as u64) < p.max_insns * 3 + 1_000,
                "seed {seed}: {} instructions, bound {}",
                run.pcs.len(),
                p.max_insns
            );
        }
    }
}
