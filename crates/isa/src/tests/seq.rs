//! E-Trace `JumpClasses` "sequentially inferable" pairs.

use super::*;
use crate::{is_sequentially_inferable, sequentially_inferred_target};

#[test]
fn auipc_jalr_call() {
    // call far: auipc ra, 0x1; jalr ra, -4(ra)
    let (p, j) = (auipc(1, 0x1), jalr(1, 1, -4));
    assert_eq!(class(&RV64, j), CfClass::UninferableCall);
    assert!(is_sequentially_inferable(&RV64, p, j));
    assert_eq!(
        sequentially_inferred_target(&RV64, 0x8000_0000, p, j),
        Some(0x8000_0ffc)
    );
    // Negative auipc immediate.
    let p = auipc(6, 0xfffff);
    let j = jalr(0, 6, 0x10);
    assert_eq!(
        sequentially_inferred_target(&RV64, 0x8000_2000, p, j),
        Some(0x8000_1010)
    );
}

#[test]
fn lui_jalr() {
    let (p, j) = (lui(5, 0x12345), jalr(0, 5, 0x678));
    assert!(is_sequentially_inferable(&RV32, p, j));
    assert_eq!(
        sequentially_inferred_target(&RV32, 0, p, j),
        Some(0x1234_5678)
    );
    // lui immediates are sign-extended from bit 31 on RV64.
    let (p, j) = (lui(6, 0x80000), jalr(1, 6, 0x10));
    assert_eq!(
        sequentially_inferred_target(&RV64, 0x1000, p, j),
        Some(0xffff_ffff_8000_0010)
    );
    assert_eq!(
        sequentially_inferred_target(&RV32, 0x1000, p, j),
        Some(0x8000_0010)
    );
    // Negative jalr offset.
    let (p, j) = (lui(6, 0x1), jalr(1, 6, -0x800));
    assert_eq!(sequentially_inferred_target(&RV64, 0, p, j), Some(0x800));
}

#[test]
fn bit_zero_cleared() {
    let (p, j) = (lui(7, 0x1), jalr(0, 7, 3));
    assert_eq!(sequentially_inferred_target(&RV64, 0, p, j), Some(0x1002));
}

#[test]
fn c_lui_c_jr_c_jalr() {
    let p = c_lui(15, -1); // x15 = 0xffff..f000
    assert!(is_sequentially_inferable(&RV64, p, c_jr(15)));
    assert!(is_sequentially_inferable(&RV64, p, c_jalr(15)));
    assert_eq!(
        sequentially_inferred_target(&RV64, 0, p, c_jr(15)),
        Some(0xffff_ffff_ffff_f000)
    );
    assert_eq!(
        sequentially_inferred_target(&RV32, 0, p, c_jalr(15)),
        Some(0xffff_f000)
    );
    let p = c_lui(5, 31); // x5 = 0x1f000
    assert_eq!(
        sequentially_inferred_target(&RV32, 0, p, c_jr(5)),
        Some(0x1_f000)
    );
    assert_eq!(
        sequentially_inferred_target(&RV32, 0, p, jalr(0, 5, 0x24)),
        Some(0x1_f024)
    );
    // c.lui followed by a 32-bit jalr and auipc followed by a compressed jump.
    assert!(is_sequentially_inferable(&RV32, auipc(9, 2), c_jalr(9)));
    assert_eq!(
        sequentially_inferred_target(&RV32, 0xffff_f000, auipc(9, 2), c_jalr(9)),
        Some(0x1000)
    );
}

#[test]
fn not_sequentially_inferable() {
    let cfg = RV64;
    let none = |p: u32, j: u32| {
        assert!(!is_sequentially_inferable(&cfg, p, j), "{p:#x} {j:#x}");
        assert_eq!(sequentially_inferred_target(&cfg, 0x1000, p, j), None);
    };
    none(lui(5, 1), jalr(0, 6, 0)); // different register
    none(auipc(5, 1), c_jr(6));
    none(addi(5, 0, 1), jalr(0, 5, 0)); // not a constant load
    none(lui(0, 1), jalr(0, 0, 0)); // x0 destination / jalr from x0 is not read from a register
    none(lui(5, 1), jal(0, 8)); // not an indirect jump
    none(lui(5, 1), jalr_f3(0, 5, 1)); // reserved jalr funct3
    none(c_lui(2, 1), c_jr(2)); // rd = x2 is c.addi16sp
    none(c_lui(5, 0), c_jr(5)); // nzimm = 0 is reserved
    none(c_lui(0, 1), c_jr(1)); // HINT, writes nothing
    none(lui(5, 1), c_jr(0)); // reserved
    none(lui(5, 1), c_mv(5, 6));
    none(lui(1, 1), C_EBREAK);
    none(0x0000_001f, jalr(0, 5, 0)); // 48-bit prefix
}
