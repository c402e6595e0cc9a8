//! One test per row of N-Trace 1.0.0-rc7 Table 2 "Generating itype for different instructions",
//! 3-bit and 4-bit columns, plus the ratified N-Trace table.

use super::*;
use crate::Itype::*;

/// Rows that apply to both widths.
const WIDTHS: [u8; 2] = [3, 4];

#[test]
fn row_interrupted_instruction() {
    // "Interrupted instruction | Any instruction | 2 = Interrupt"
    assert_eq!(Itype::trap(true), Interrupt);
    assert_eq!(Itype::trap(true).code(), 2);
}

#[test]
fn row_exception_in_instruction() {
    // "Exception in instruction | Any instruction | 1 = Exception"
    assert_eq!(Itype::trap(false), Exception);
    assert_eq!(Itype::trap(false).code(), 1);
}

#[test]
fn row_conditional_branch() {
    // "Conditional branch | Non-taken | 4", "Taken | 5"
    for cfg in CONFIGS {
        for w in WIDTHS {
            let mut insns = [0u32; 8];
            for (i, f3) in BRANCH_F3.iter().enumerate() {
                insns[i] = branch(*f3, 3, 4, 16);
            }
            insns[6] = c_beqz(1, -8);
            insns[7] = c_bnez(7, 8);
            for b in insns {
                assert_eq!(nt(&cfg, b, false, w), NonTakenBranch, "{b:#x} w{w}");
                assert_eq!(nt(&cfg, b, true, w), TakenBranch, "{b:#x} w{w}");
            }
        }
    }
}

#[test]
fn row_ebreak_ecall_c_ebreak() {
    // "ebreak, ecall, c.ebreak | ecall is reported after retirement | 1 = Exception"
    for cfg in CONFIGS {
        for w in WIDTHS {
            for b in [EBREAK, ECALL, C_EBREAK] {
                assert_eq!(class(&cfg, b), CfClass::EnvTrap);
                assert_eq!(nt(&cfg, b, false, w), Exception);
                assert_eq!(nt(&cfg, b, true, w), Exception);
            }
        }
    }
}

#[test]
fn row_mret_sret_uret() {
    // "mret, sret, uret | | 3 = Exception or interrupt return"
    for cfg in CONFIGS {
        for w in WIDTHS {
            for b in [MRET, SRET, URET] {
                assert_eq!(nt(&cfg, b, false, w), TrapReturn, "{b:#x}");
            }
        }
    }
}

#[test]
fn row_cm_jt() {
    // "cm.jt | Defined by Zcmt extension | 0 = No special type" (both widths)
    for cfg in [RV32_ZC, RV64_ZC] {
        for w in WIDTHS {
            for index in 0..32 {
                assert_eq!(class(&cfg, cm_jt(index)), CfClass::TableJump);
                assert_eq!(nt(&cfg, cm_jt(index), false, w), None);
            }
        }
    }
}

#[test]
fn row_non_jump() {
    // "non-jump | | 0 = No special type"
    for cfg in CONFIGS {
        for w in WIDTHS {
            for b in [
                addi(0, 0, 0),
                addi(1, 1, -1),
                lui(5, 0x80000),
                auipc(1, 0x1),
                WFI,
                c_mv(10, 11),
                c_add(1, 2),
                0x0001, // c.nop
                cm_push(4, 0),
                cm_pop(15, 3),
            ] {
                assert_eq!(class(&cfg, b), CfClass::None, "{b:#x}");
                assert_eq!(nt(&cfg, b, true, w), None, "{b:#x}");
                assert_eq!(nt(&cfg, b, false, w), None, "{b:#x}");
            }
        }
    }
}

// ---- 4-bit rows ("Values of itype (4-bit) needed for Implicit Return Optimization")

#[test]
fn row4_jal_rd_link() {
    // "jal rd | rd = link | 9 = Inferable call"
    for rd in [1, 5] {
        assert_eq!(nt(&RV64, jal(rd, 0x100), false, 4), InferableCall);
    }
}

#[test]
fn row4_jal_rd_not_link() {
    // "jal rd | rd != link | 15 = Other inferable jump" (includes rd = x0)
    for rd in (0..32).filter(|r| !link(*r)) {
        assert_eq!(
            nt(&RV64, jal(rd, -0x100), false, 4),
            OtherInferableJump,
            "x{rd}"
        );
    }
}

#[test]
fn row4_jalr_rd_link_rs1_not_link() {
    // "jalr rd, rs1 | rd = link and rs1 != link | 8 = Uninferable call"
    for rd in [1, 5] {
        for rs1 in (0..32).filter(|r| !link(*r)) {
            assert_eq!(nt(&RV64, jalr(rd, rs1, 8), false, 4), UninferableCall);
        }
    }
}

#[test]
fn row4_jalr_coroutine_swap() {
    // "rd = link and rs1 = link and rd != rs1 | 12 = Coroutine swap"
    assert_eq!(nt(&RV64, jalr(1, 5, 0), false, 4), CoroutineSwap);
    assert_eq!(nt(&RV64, jalr(5, 1, 0), false, 4), CoroutineSwap);
}

#[test]
fn row4_jalr_rd_eq_rs1_link() {
    // "rd = link and rs1 = link and rd = rs1 | 8 = Uninferable call"
    assert_eq!(nt(&RV64, jalr(1, 1, 0), false, 4), UninferableCall);
    assert_eq!(nt(&RV64, jalr(5, 5, 0), false, 4), UninferableCall);
}

#[test]
fn row4_jalr_return() {
    // "rd != link and rs1 = link | 13 = Return"
    for rd in (0..32).filter(|r| !link(*r)) {
        for rs1 in [1, 5] {
            assert_eq!(
                nt(&RV64, jalr(rd, rs1, 0), false, 4),
                Return,
                "x{rd}, x{rs1}"
            );
        }
    }
}

#[test]
fn row4_jalr_other() {
    // "rd != link and rs1 != link | 14 = Other uninferable jump" (includes rd = x0, rs1 = x0)
    for rd in (0..32).filter(|r| !link(*r)) {
        for rs1 in (0..32).filter(|r| !link(*r)) {
            assert_eq!(nt(&RV64, jalr(rd, rs1, -4), false, 4), OtherUninferableJump);
        }
    }
}

#[test]
fn row4_jalr_all_operands() {
    // Whole "jalr rd, rs1" block: the 5 rows, checked for every operand pair.
    for rd in 0..32 {
        for rs1 in 0..32 {
            let want = match (link(rd), link(rs1)) {
                (true, false) => UninferableCall,
                (true, true) if rd != rs1 => CoroutineSwap,
                (true, true) => UninferableCall,
                (false, true) => Return,
                (false, false) => OtherUninferableJump,
            };
            for cfg in CONFIGS {
                assert_eq!(
                    nt(&cfg, jalr(rd, rs1, 0x7ff), false, 4),
                    want,
                    "x{rd}, x{rs1}"
                );
            }
        }
    }
}

#[test]
fn row4_c_jal() {
    // "c.jal | Implicit x1 | 9 = Inferable call" (RV32 only)
    assert_eq!(nt(&RV32, c_jal(0x20), false, 4), InferableCall);
}

#[test]
fn row4_c_jalr_x5() {
    // "c.jalr rs1 | rs1 = x5 | 12 = Coroutine swap"
    assert_eq!(nt(&RV64, c_jalr(5), false, 4), CoroutineSwap);
}

#[test]
fn row4_c_jalr_not_x5() {
    // "c.jalr rs1 | rs1 != x5 | 8 = Uninferable call" (including x1)
    for rs1 in (1..32).filter(|r| *r != 5) {
        assert_eq!(nt(&RV64, c_jalr(rs1), false, 4), UninferableCall, "x{rs1}");
    }
}

#[test]
fn row4_c_jr_link() {
    // "c.jr rs1 | rs1 = link | 13 = Return"
    for rs1 in [1, 5] {
        assert_eq!(nt(&RV32, c_jr(rs1), false, 4), Return);
    }
}

#[test]
fn row4_c_jr_not_link() {
    // "c.jr rs1 | rs1 != link | 14 = Other uninferable jump"
    for rs1 in (1..32).filter(|r| !link(*r)) {
        assert_eq!(nt(&RV32, c_jr(rs1), false, 4), OtherUninferableJump);
    }
}

#[test]
fn row4_c_j() {
    // "c.j | No registers, only offset | 15 = Other inferable jump"
    assert_eq!(nt(&RV64, c_j(-64), false, 4), OtherInferableJump);
}

#[test]
fn row4_cm_jalt() {
    // "cm.jalt | Defined by Zcmt extension | 9 = Inferable call"
    for index in 32..256 {
        assert_eq!(nt(&RV32_ZC, cm_jt(index), false, 4), InferableCall);
    }
}

#[test]
fn row4_cm_popret() {
    // "cm.popret* | Defined by zcmp extension | 13 = Return"
    for rlist in 4..16 {
        for spimm in 0..4 {
            assert_eq!(nt(&RV64_ZC, cm_popret(rlist, spimm), false, 4), Return);
            assert_eq!(nt(&RV64_ZC, cm_popretz(rlist, spimm), false, 4), Return);
        }
    }
}

#[test]
fn four_bit_never_emits_6_10_11() {
    // N-Trace: "itype=6 should not be generated" with a 4-bit port; Table 4: 10/11 "NOT POSSIBLE".
    for c in CfClass::ALL {
        for taken in [false, true] {
            let it = c.ntrace_itype(taken, 4);
            assert!(!matches!(
                it,
                UninferableJump3 | Reserved7 | UninferableJump | InferableJump
            ));
        }
    }
}

// ---- 3-bit rows ("Values of itype (3-bit) without Implicit Return Optimization")

#[test]
fn row3_jal() {
    // "jal rd | | 0 = No special type"
    for rd in 0..32 {
        assert_eq!(nt(&RV64, jal(rd, 0x7fe), false, 3), None, "x{rd}");
    }
}

#[test]
fn row3_jalr() {
    // "jalr | | 6 = Uninferable jump" (every operand combination; c.jr/c.jalr expand to jalr)
    for rd in 0..32 {
        for rs1 in 0..32 {
            assert_eq!(nt(&RV64, jalr(rd, rs1, 0), false, 3), UninferableJump3);
        }
    }
    for rs1 in 1..32 {
        assert_eq!(nt(&RV64, c_jr(rs1), false, 3), UninferableJump3);
        assert_eq!(nt(&RV64, c_jalr(rs1), false, 3), UninferableJump3);
    }
}

#[test]
fn row3_c_j_c_jal() {
    // "c.j or c.jal | | 0 = No special type"
    assert_eq!(nt(&RV64, c_j(100), false, 3), None);
    assert_eq!(nt(&RV32, c_j(100), false, 3), None);
    assert_eq!(nt(&RV32, c_jal(100), false, 3), None);
}

#[test]
fn row3_cm_jalt() {
    // "cm.jalt | Defined by Zcmt extension | 0 = No special type"
    for index in 32..256 {
        assert_eq!(nt(&RV64_ZC, cm_jt(index), false, 3), None);
    }
}

#[test]
fn row3_cm_popret() {
    // "cm.popret* | Defined by Zcmp extension | 6 = Uninferable jump"
    assert_eq!(nt(&RV32_ZC, cm_popret(4, 0), false, 3), UninferableJump3);
    assert_eq!(nt(&RV32_ZC, cm_popretz(15, 3), false, 3), UninferableJump3);
}

#[test]
fn three_bit_only_codes_0_to_6() {
    for c in CfClass::ALL {
        for taken in [false, true] {
            assert!(c.ntrace_itype(taken, 3).code() <= 6);
            assert!(c.etrace_itype(taken, 3).code() <= 6);
        }
    }
}

// ---- Ratified N-Trace table (RISC-V-N-Trace.adoc "Generating itype for different instructions")

#[test]
fn ratified_table() {
    let r = |cfg: &IsaConfig, b: u32, w: u8| class(cfg, b).ntrace_ratified_itype(false, w);
    // 3-bit column.
    assert_eq!(r(&RV64, jal(1, 8), 3), None);
    assert_eq!(r(&RV64, jalr(0, 6, 0), 3), UninferableJump3);
    assert_eq!(r(&RV32, c_jal(8), 3), None);
    assert_eq!(r(&RV32_ZC, cm_jt(3), 3), None);
    assert_eq!(r(&RV32_ZC, cm_jt(40), 3), None);
    assert_eq!(r(&RV32_ZC, cm_popret(4, 0), 3), UninferableJump3);
    // 4-bit column.
    assert_eq!(r(&RV64, jal(1, 8), 4), InferableCall);
    assert_eq!(r(&RV64, jal(0, 8), 4), InferableJump);
    assert_eq!(r(&RV64, jal(3, 8), 4), OtherInferableJump);
    assert_eq!(r(&RV64, jalr(1, 6, 0), 4), UninferableCall);
    assert_eq!(r(&RV64, jalr(5, 5, 0), 4), UninferableCall);
    assert_eq!(r(&RV64, jalr(1, 5, 0), 4), CoroutineSwap);
    assert_eq!(r(&RV64, jalr(0, 1, 0), 4), Return);
    assert_eq!(r(&RV64, jalr(0, 6, 0), 4), UninferableJump);
    assert_eq!(r(&RV64, jalr(7, 6, 0), 4), OtherUninferableJump);
    assert_eq!(r(&RV32, c_jal(8), 4), InferableCall);
    assert_eq!(r(&RV32, c_jalr(5), 4), CoroutineSwap);
    assert_eq!(r(&RV32, c_jalr(6), 4), UninferableCall);
    assert_eq!(r(&RV32, c_jr(5), 4), Return);
    assert_eq!(r(&RV32, c_jr(6), 4), UninferableJump);
    assert_eq!(r(&RV32, c_j(6), 4), InferableJump);
    assert_eq!(r(&RV32_ZC, cm_jt(3), 4), InferableJump);
    assert_eq!(r(&RV32_ZC, cm_jt(40), 4), InferableCall);
    assert_eq!(r(&RV32_ZC, cm_popretz(4, 0), 4), Return);
    assert_eq!(r(&RV32, MRET, 4), TrapReturn);
    assert_eq!(r(&RV32, SRET, 4), TrapReturn);
}

#[test]
fn rc7_and_etrace_differ_only_on_jumps_without_linkage_and_cm_jt() {
    for c in CfClass::ALL {
        for w in WIDTHS {
            for taken in [false, true] {
                let (n, e) = (c.ntrace_itype(taken, w), c.etrace_itype(taken, w));
                let expected_diff = w == 4
                    && matches!(
                        c,
                        CfClass::InferableJump | CfClass::UninferableJump | CfClass::TableJump
                    );
                assert_eq!(n != e, expected_diff, "{c:?} w{w}");
            }
        }
    }
}
