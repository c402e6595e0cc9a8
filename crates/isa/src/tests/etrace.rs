//! One test per bullet of E-Trace v2.0 `ingressPort.adoc` section `JumpClasses`, plus the itype
//! table ("Instruction Type (itype) encoding") for every class at both widths.

use super::*;
use crate::CfClass as C;
use crate::Itype as I;

/// Class, 4-bit and 3-bit E-Trace itype of `b` must be as given.
fn check(cfg: &IsaConfig, b: u32, want: C, it4: I, it3: I) {
    assert_eq!(class(cfg, b), want, "{b:#010x}");
    assert_eq!(et(cfg, b, false, 4), it4, "{b:#010x}");
    assert_eq!(et(cfg, b, true, 4), it4, "{b:#010x}");
    assert_eq!(et(cfg, b, false, 3), it3, "{b:#010x}");
}

// ---- Calls

#[test]
fn call_jal_x1() {
    check(
        &RV64,
        jal(1, 0x800),
        C::InferableCall,
        I::InferableCall,
        I::None,
    );
}

#[test]
fn call_jal_x5() {
    check(
        &RV32,
        jal(5, -0x800),
        C::InferableCall,
        I::InferableCall,
        I::None,
    );
}

#[test]
fn call_jalr_x1_rs_not_x5() {
    for rs in (0..32).filter(|r| *r != 5) {
        check(
            &RV64,
            jalr(1, rs, 0),
            C::UninferableCall,
            I::UninferableCall,
            I::UninferableJump3,
        );
    }
}

#[test]
fn call_jalr_x5_rs_not_x1() {
    for rs in (0..32).filter(|r| *r != 1) {
        check(
            &RV64,
            jalr(5, rs, 4),
            C::UninferableCall,
            I::UninferableCall,
            I::UninferableJump3,
        );
    }
}

#[test]
fn call_c_jalr_rs1_not_x5() {
    for rs1 in (1..32).filter(|r| *r != 5) {
        check(
            &RV32,
            c_jalr(rs1),
            C::UninferableCall,
            I::UninferableCall,
            I::UninferableJump3,
        );
    }
}

#[test]
fn call_c_jal() {
    check(
        &RV32,
        c_jal(-2048),
        C::InferableCall,
        I::InferableCall,
        I::None,
    );
}

// ---- Other jumps without linkage

#[test]
fn nolink_jal_x0() {
    check(
        &RV64,
        jal(0, 4),
        C::InferableJump,
        I::InferableJump,
        I::None,
    );
}

#[test]
fn nolink_c_j() {
    check(
        &RV64,
        c_j(2046),
        C::InferableJump,
        I::InferableJump,
        I::None,
    );
    check(
        &RV32,
        c_j(-2048),
        C::InferableJump,
        I::InferableJump,
        I::None,
    );
}

#[test]
fn nolink_jalr_x0_rs_not_link() {
    for rs in (0..32).filter(|r| !link(*r)) {
        check(
            &RV64,
            jalr(0, rs, -8),
            C::UninferableJump,
            I::UninferableJump,
            I::UninferableJump3,
        );
    }
}

#[test]
fn nolink_c_jr_rs1_not_link() {
    for rs1 in (1..32).filter(|r| !link(*r)) {
        check(
            &RV64,
            c_jr(rs1),
            C::UninferableJump,
            I::UninferableJump,
            I::UninferableJump3,
        );
    }
}

// ---- Returns

#[test]
fn return_jalr_rs_link_rd_not_link() {
    for rd in (0..32).filter(|r| !link(*r)) {
        for rs in [1, 5] {
            check(
                &RV64,
                jalr(rd, rs, 0),
                C::Return,
                I::Return,
                I::UninferableJump3,
            );
        }
    }
}

#[test]
fn return_c_jr_link() {
    check(&RV64, c_jr(1), C::Return, I::Return, I::UninferableJump3);
    check(&RV64, c_jr(5), C::Return, I::Return, I::UninferableJump3);
}

// ---- Co-routine swap

#[test]
fn swap_jalr_x1_x5() {
    check(
        &RV64,
        jalr(1, 5, 0),
        C::CoroutineSwap,
        I::CoroutineSwap,
        I::UninferableJump3,
    );
}

#[test]
fn swap_jalr_x5_x1() {
    check(
        &RV32,
        jalr(5, 1, 0),
        C::CoroutineSwap,
        I::CoroutineSwap,
        I::UninferableJump3,
    );
}

#[test]
fn swap_c_jalr_x5() {
    check(
        &RV32,
        c_jalr(5),
        C::CoroutineSwap,
        I::CoroutineSwap,
        I::UninferableJump3,
    );
}

// ---- Other jumps with linkage

#[test]
fn linkage_jal_rd_other() {
    for rd in (2..32).filter(|r| *r != 5) {
        check(
            &RV64,
            jal(rd, 0x1000),
            C::OtherInferableJump,
            I::OtherInferableJump,
            I::None,
        );
    }
}

#[test]
fn linkage_jalr_rd_other_rs_not_link() {
    for rd in (2..32).filter(|r| *r != 5) {
        for rs in (0..32).filter(|r| !link(*r)) {
            check(
                &RV64,
                jalr(rd, rs, 0),
                C::OtherUninferableJump,
                I::OtherUninferableJump,
                I::UninferableJump3,
            );
        }
    }
}

/// The JumpClasses bullets partition every `jal rd` and `jalr rd, rs`: exactly one bullet applies.
#[test]
fn bullets_partition_jal_and_jalr() {
    for rd in 0..32u32 {
        let jal_bullets = [
            (link(rd), C::InferableCall),
            (rd == 0, C::InferableJump),
            (rd != 0 && !link(rd), C::OtherInferableJump),
        ];
        let hits: usize = jal_bullets.iter().filter(|(p, _)| *p).count();
        assert_eq!(hits, 1);
        let want = jal_bullets.iter().find(|(p, _)| *p).unwrap().1;
        assert_eq!(class(&RV64, jal(rd, 2)), want);

        for rs in 0..32u32 {
            let bullets = [
                (rd == 1 && rs != 5, C::UninferableCall),
                (rd == 5 && rs != 1, C::UninferableCall),
                (rd == 0 && !link(rs), C::UninferableJump),
                (link(rs) && !link(rd), C::Return),
                ((rd, rs) == (1, 5) || (rd, rs) == (5, 1), C::CoroutineSwap),
                (!link(rs) && rd != 0 && !link(rd), C::OtherUninferableJump),
            ];
            let hits: usize = bullets.iter().filter(|(p, _)| *p).count();
            assert_eq!(hits, 1, "jalr x{rd}, x{rs}");
            let want = bullets.iter().find(|(p, _)| *p).unwrap().1;
            assert_eq!(class(&RV64, jalr(rd, rs, 0)), want, "jalr x{rd}, x{rs}");
        }
    }
}

/// Same for `c.jr`/`c.jalr` (rs1 != 0).
#[test]
fn bullets_partition_compressed() {
    for rs1 in 1..32u32 {
        let jr = if link(rs1) {
            C::Return
        } else {
            C::UninferableJump
        };
        assert_eq!(class(&RV32, c_jr(rs1)), jr);
        let jalr = if rs1 == 5 {
            C::CoroutineSwap
        } else {
            C::UninferableCall
        };
        assert_eq!(class(&RV32, c_jalr(rs1)), jalr);
    }
}

/// Every class against the itype table, both widths and outcomes.
#[test]
fn itype_table_per_class() {
    let rows: [(C, I, I, I); 15] = [
        // class, 4-bit (not taken), 4-bit taken, 3-bit (not taken)
        (C::None, I::None, I::None, I::None),
        (
            C::Branch,
            I::NonTakenBranch,
            I::TakenBranch,
            I::NonTakenBranch,
        ),
        (
            C::InferableCall,
            I::InferableCall,
            I::InferableCall,
            I::None,
        ),
        (
            C::UninferableCall,
            I::UninferableCall,
            I::UninferableCall,
            I::UninferableJump3,
        ),
        (
            C::CoroutineSwap,
            I::CoroutineSwap,
            I::CoroutineSwap,
            I::UninferableJump3,
        ),
        (C::Return, I::Return, I::Return, I::UninferableJump3),
        (
            C::InferableJump,
            I::InferableJump,
            I::InferableJump,
            I::None,
        ),
        (
            C::UninferableJump,
            I::UninferableJump,
            I::UninferableJump,
            I::UninferableJump3,
        ),
        (
            C::OtherInferableJump,
            I::OtherInferableJump,
            I::OtherInferableJump,
            I::None,
        ),
        (
            C::OtherUninferableJump,
            I::OtherUninferableJump,
            I::OtherUninferableJump,
            I::UninferableJump3,
        ),
        (C::TrapReturn, I::TrapReturn, I::TrapReturn, I::TrapReturn),
        (C::EnvTrap, I::Exception, I::Exception, I::Exception),
        (C::TableJump, I::InferableJump, I::InferableJump, I::None),
        (C::TableCall, I::InferableCall, I::InferableCall, I::None),
        (C::PopRet, I::Return, I::Return, I::UninferableJump3),
    ];
    for (i, (c, nt4, t4, nt3)) in rows.iter().enumerate() {
        assert_eq!(*c, C::ALL[i]);
        assert_eq!(c.etrace_itype(false, 4), *nt4, "{c:?}");
        assert_eq!(c.etrace_itype(true, 4), *t4, "{c:?}");
        assert_eq!(c.etrace_itype(false, 3), *nt3, "{c:?}");
        let t3 = if *c == C::Branch {
            I::TakenBranch
        } else {
            *nt3
        };
        assert_eq!(c.etrace_itype(true, 3), t3, "{c:?}");
        // Helper predicates agree with the 3-bit mapping.
        assert_eq!(c.is_uninferable(), *nt3 == I::UninferableJump3, "{c:?}");
        // Codes 6 and 7 never appear with a 4-bit port.
        assert!(!matches!(*nt4, I::UninferableJump3 | I::Reserved7));
    }
}

#[test]
fn class_helpers() {
    for c in C::ALL {
        // Calls push, returns pop, a swap does both (N-Trace Table 4).
        assert_eq!(
            c.pushes_return(),
            matches!(
                c.etrace_itype(false, 4),
                I::UninferableCall | I::InferableCall | I::CoroutineSwap
            )
        );
        assert_eq!(
            c.pops_return(),
            matches!(c.etrace_itype(false, 4), I::Return | I::CoroutineSwap)
        );
        assert_eq!(
            c.is_call(),
            matches!(
                c.etrace_itype(false, 4),
                I::UninferableCall | I::InferableCall
            )
        );
        assert_eq!(c.is_return(), c.etrace_itype(false, 4) == I::Return);
        assert!(!(c.is_inferable() && c.is_uninferable()));
        assert_eq!(c.is_jump(), c.is_inferable() || c.is_uninferable());
        assert_eq!(
            c.is_uninferable_discon(),
            c.is_uninferable() || c == C::TrapReturn
        );
        assert_eq!(c.is_branch(), c == C::Branch);
    }
    assert!(C::OtherInferableJump.has_linkage());
    assert!(C::OtherUninferableJump.has_linkage());
    assert!(C::CoroutineSwap.has_linkage());
    assert!(!C::InferableJump.has_linkage());
    assert!(!C::Return.has_linkage());
    assert!(!C::PopRet.has_linkage());
    assert_eq!(C::default(), C::None);
}

#[test]
fn itype_codes() {
    for code in 0..16u8 {
        assert_eq!(Itype::from_code(code).code(), code);
        assert_eq!(Itype::from_code(code).is_4bit_only(), code >= 8);
    }
}
