//! Control-flow classes and their ingress-port `itype` mappings.

use crate::Itype;

/// Control-flow class of an instruction, independent of its outcome (taken/not taken).
///
/// The jump classes follow E-Trace v2.0 `ingressPort.adoc` section `JumpClasses` exactly
/// ("link" = `x1` or `x5`):
///
/// | class | instructions |
/// |---|---|
/// | [`InferableCall`](CfClass::InferableCall) | `jal x1`, `jal x5`, `c.jal` |
/// | [`UninferableCall`](CfClass::UninferableCall) | `jalr x1, rs` (rs != x5), `jalr x5, rs` (rs != x1), `c.jalr rs1` (rs1 != x5) |
/// | [`CoroutineSwap`](CfClass::CoroutineSwap) | `jalr x1, x5`, `jalr x5, x1`, `c.jalr x5` |
/// | [`Return`](CfClass::Return) | `jalr rd, rs` (rs link, rd not link), `c.jr x1`, `c.jr x5` |
/// | [`InferableJump`](CfClass::InferableJump) | `jal x0`, `c.j` |
/// | [`UninferableJump`](CfClass::UninferableJump) | `jalr x0, rs` (rs not link), `c.jr rs1` (rs1 not link) |
/// | [`OtherInferableJump`](CfClass::OtherInferableJump) | `jal rd` (rd not x0/x1/x5) |
/// | [`OtherUninferableJump`](CfClass::OtherUninferableJump) | `jalr rd, rs` (rd not x0/x1/x5, rs not link) |
///
/// Inferable = target is a constant in the opcode (`jal`, `c.j`, `c.jal`); every `jalr`/`c.jr`/
/// `c.jalr` is uninferable (including `jalr rd, imm(x0)`: both itype tables list `jalr` as
/// uninferable whatever its operands, so rvtrace reports it with its address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CfClass {
    /// Not a control transfer (includes unknown, illegal and reserved encodings).
    #[default]
    None,
    /// Conditional branch (`beq`..`bgeu`, `c.beqz`, `c.bnez`).
    Branch,
    /// Call with a static target: `jal x1`, `jal x5`, `c.jal` (RV32 only).
    InferableCall,
    /// Call through a register: `jalr x1/x5, rs`, `c.jalr` (see the table above for the link rules).
    UninferableCall,
    /// Co-routine swap: `jalr x1, x5`, `jalr x5, x1`, `c.jalr x5`.
    CoroutineSwap,
    /// Return: `jalr rd, x1/x5` with rd not a link register, `c.jr x1`, `c.jr x5`.
    Return,
    /// Jump without linkage, static target: `jal x0`, `c.j`.
    InferableJump,
    /// Jump without linkage through a register: `jalr x0, rs`/`c.jr rs` with rs not x1/x5.
    UninferableJump,
    /// Other jump with linkage, static target: `jal rd` with rd not x0/x1/x5.
    OtherInferableJump,
    /// Other jump with linkage through a register: `jalr rd, rs`, rd not x0/x1/x5, rs not x1/x5.
    OtherUninferableJump,
    /// Trap return: `mret`, `sret`, `uret`, `mnret` (Smrnmi) and `dret` (debug). `uret`/`dret` are
    /// listed by E-Trace `decoder.adoc` `is_return_from_trap`; `mnret` returns to `mnepc`, an
    /// uninferable trap-return target like `mepc`, so it is reported the same way.
    TrapReturn,
    /// `ecall`, `ebreak`, `c.ebreak`: always trap, so retire with an exception (itype 1;
    /// N-Trace Table 2 row "ebreak, ecall, c.ebreak").
    EnvTrap,
    /// Zcmt `cm.jt` (table jump without linkage, index < 32).
    TableJump,
    /// Zcmt `cm.jalt` (table jump linking `x1`, index >= 32).
    TableCall,
    /// Zcmp `cm.popret` / `cm.popretz` (pop registers, then return through `x1`).
    PopRet,
}

impl CfClass {
    /// Every class, in declaration order.
    pub const ALL: [CfClass; 15] = [
        CfClass::None,
        CfClass::Branch,
        CfClass::InferableCall,
        CfClass::UninferableCall,
        CfClass::CoroutineSwap,
        CfClass::Return,
        CfClass::InferableJump,
        CfClass::UninferableJump,
        CfClass::OtherInferableJump,
        CfClass::OtherUninferableJump,
        CfClass::TrapReturn,
        CfClass::EnvTrap,
        CfClass::TableJump,
        CfClass::TableCall,
        CfClass::PopRet,
    ];

    /// E-Trace v2.0 `itype` (`ingressPort.adoc` table "Instruction Type (itype) encoding" and
    /// section `JumpClasses`) for an instruction of this class that retired.
    ///
    /// `taken` only matters for [`Branch`](CfClass::Branch). `itype_width` is `itype_width_p`:
    /// 3 selects the 3-bit codes, anything else (normally 4) the 4-bit codes.
    ///
    /// * 3-bit: uninferable jumps/calls/returns/swaps and `cm.popret*` -> 6; inferable jumps/calls
    ///   (including `cm.jt`/`cm.jalt`) -> 0.
    /// * 4-bit: jumps without linkage -> 10 (uninferable) / 11 (inferable); other jumps with
    ///   linkage -> 14 / 15; calls 8 / 9; swap 12; return 13; `cm.jt` -> 11, `cm.jalt` -> 9,
    ///   `cm.popret*` -> 13.
    ///
    /// E-Trace v2.0 does not mention Zcmt; `cm.jt`/`cm.jalt` are mapped as inferable jump/call as
    /// the ratified N-Trace ingress-port table does ("jump tables are assumed to be static and known
    /// to the decoder"). `cm.popret*` -> 13 is `ingressPort.adoc` (Data Trace, "a cm.popret
    /// instruction must use itype 13"). Trap returns -> 3, `ecall`/`ebreak`/`c.ebreak` -> 1.
    pub const fn etrace_itype(self, taken: bool, itype_width: u8) -> Itype {
        let four = itype_width != 3;
        match self {
            CfClass::None => Itype::None,
            CfClass::Branch => branch_itype(taken),
            CfClass::TrapReturn => Itype::TrapReturn,
            CfClass::EnvTrap => Itype::Exception,
            // 3-bit: 0 for inferable, 6 for uninferable (ingressPort.adoc itype table, code 6).
            _ if !four => {
                if self.is_uninferable() {
                    Itype::UninferableJump3
                } else {
                    Itype::None
                }
            }
            // 4-bit codes 8-15, ingressPort.adoc JumpClasses.
            CfClass::UninferableCall => Itype::UninferableCall,
            CfClass::InferableCall | CfClass::TableCall => Itype::InferableCall,
            CfClass::UninferableJump => Itype::UninferableJump,
            CfClass::InferableJump | CfClass::TableJump => Itype::InferableJump,
            CfClass::CoroutineSwap => Itype::CoroutineSwap,
            CfClass::Return | CfClass::PopRet => Itype::Return,
            CfClass::OtherUninferableJump => Itype::OtherUninferableJump,
            CfClass::OtherInferableJump => Itype::OtherInferableJump,
        }
    }

    /// N-Trace 1.0.0-rc7 `itype` exactly as Table 2 "Generating itype for different instructions"
    /// gives it. `taken` only matters for branches; `itype_width` 3 selects the 3-bit column,
    /// anything else the 4-bit one.
    ///
    /// Differences from [`etrace_itype`](CfClass::etrace_itype): rc7 never generates 10/11 (Table 4:
    /// "tail-call, NOT POSSIBLE"), so jumps without linkage (`jal x0`, `c.j`, `jalr x0, rs`, `c.jr rs`)
    /// are 15 / 14 like other jumps; `cm.jt` is 0 at both widths (Table 2 row "cm.jt"). Rows:
    ///
    /// * 4-bit: `jal` rd=link 9, else 15; `jalr` call 8, swap 12, return 13, else 14; `c.jal` 9;
    ///   `c.jalr` x5 12, else 8; `c.jr` link 13, else 14; `c.j` 15; `cm.jalt` 9; `cm.popret*` 13.
    /// * 3-bit: `jal`/`c.j`/`c.jal`/`cm.jalt` 0; `jalr` (and `c.jr`/`c.jalr`) 6; `cm.popret*` 6.
    /// * Both: branch 4/5; `ebreak`/`ecall`/`c.ebreak` 1; `mret`/`sret`/`uret` 3; `cm.jt` 0.
    ///
    /// The ratified N-Trace text replaced this table with one equal to
    /// [`etrace_itype`](CfClass::etrace_itype) (10/11 for jumps without linkage, `cm.jt` 11); use
    /// [`ntrace_ratified_itype`](CfClass::ntrace_ratified_itype) for it.
    pub const fn ntrace_itype(self, taken: bool, itype_width: u8) -> Itype {
        let four = itype_width != 3;
        match self {
            // N-Trace Table 2 row "cm.jt": 0 = No special type (both widths).
            CfClass::TableJump => Itype::None,
            // N-Trace Table 2, 4-bit: "jal rd, rd != link" and "c.j" -> 15.
            CfClass::InferableJump if four => Itype::OtherInferableJump,
            // N-Trace Table 2, 4-bit: "jalr rd!=link, rs1!=link" and "c.jr rs1!=link" -> 14.
            CfClass::UninferableJump if four => Itype::OtherUninferableJump,
            // Every other row agrees with the E-Trace mapping.
            _ => self.etrace_itype(taken, itype_width),
        }
    }

    /// N-Trace as ratified (`RISC-V-N-Trace.adoc`, table "Generating itype for different
    /// instructions"). It matches [`etrace_itype`](CfClass::etrace_itype) row for row: `jal x0`/`c.j`
    /// 11, `jalr x0, rs`/`c.jr rs` (rs not link) 10, `cm.jt` 11 (4-bit) / 0 (3-bit), `cm.jalt` 9 / 0.
    pub const fn ntrace_ratified_itype(self, taken: bool, itype_width: u8) -> Itype {
        self.etrace_itype(taken, itype_width)
    }

    /// True for classes whose target must be reported because it cannot be deduced from the
    /// binary: every `jalr`/`c.jr`/`c.jalr` class and `cm.popret*` (the classes reported as itype 6
    /// with a 3-bit `itype`). Trap returns are not included; see
    /// [`is_uninferable_discon`](CfClass::is_uninferable_discon).
    pub const fn is_uninferable(self) -> bool {
        matches!(
            self,
            CfClass::UninferableCall
                | CfClass::CoroutineSwap
                | CfClass::Return
                | CfClass::UninferableJump
                | CfClass::OtherUninferableJump
                | CfClass::PopRet
        )
    }

    /// True for unconditional jumps with a target the decoder can deduce: `jal`, `c.j`, `c.jal`,
    /// and the Zcmt table jumps (`cm.jt`/`cm.jalt`, whose table is assumed static; ratified N-Trace
    /// Zcmt note).
    pub const fn is_inferable(self) -> bool {
        matches!(
            self,
            CfClass::InferableCall
                | CfClass::InferableJump
                | CfClass::OtherInferableJump
                | CfClass::TableJump
                | CfClass::TableCall
        )
    }

    /// True for an uninferable PC discontinuity: an uninferable jump or a trap return (E-Trace
    /// `decoder.adoc` `is_uninferrable_discon`).
    pub const fn is_uninferable_discon(self) -> bool {
        self.is_uninferable() || matches!(self, CfClass::TrapReturn)
    }

    /// True for any unconditional jump (calls, returns, swaps, jumps, table jumps, `cm.popret*`);
    /// false for branches, trap returns and `EnvTrap`.
    pub const fn is_jump(self) -> bool {
        self.is_uninferable() || self.is_inferable()
    }

    /// True for a conditional branch.
    pub const fn is_branch(self) -> bool {
        matches!(self, CfClass::Branch)
    }

    /// True for calls (itype 8 or 9): `InferableCall`, `UninferableCall`, `TableCall`.
    /// A co-routine swap also pushes a return address but is not a call; see
    /// [`pushes_return`](CfClass::pushes_return).
    pub const fn is_call(self) -> bool {
        matches!(
            self,
            CfClass::InferableCall | CfClass::UninferableCall | CfClass::TableCall
        )
    }

    /// True for returns (itype 13): `Return` and `PopRet`. A co-routine swap also pops; see
    /// [`pops_return`](CfClass::pops_return).
    pub const fn is_return(self) -> bool {
        matches!(self, CfClass::Return | CfClass::PopRet)
    }

    /// True if the implicit-return stack is pushed (N-Trace Table 4 "Push": calls and co-routine
    /// swaps).
    pub const fn pushes_return(self) -> bool {
        self.is_call() || matches!(self, CfClass::CoroutineSwap)
    }

    /// True if the implicit-return stack is popped (N-Trace Table 4 "Pop": returns and co-routine
    /// swaps).
    pub const fn pops_return(self) -> bool {
        self.is_return() || matches!(self, CfClass::CoroutineSwap)
    }

    /// True if the instruction writes a link (return) address to a register: calls, swaps and
    /// other jumps with linkage.
    pub const fn has_linkage(self) -> bool {
        self.pushes_return()
            || matches!(
                self,
                CfClass::OtherInferableJump | CfClass::OtherUninferableJump
            )
    }
}

/// Branch outcome to itype 5 (taken) / 4 (not taken); `ingressPort.adoc` itype table.
const fn branch_itype(taken: bool) -> Itype {
    if taken {
        Itype::TakenBranch
    } else {
        Itype::NonTakenBranch
    }
}
