//! Lengths, static targets, configuration-dependent encodings, SYSTEM instructions.

use super::*;
use crate::{ilastsize, insn_len, table_entry_addr, table_jump_index, InsnInfo, Xlen};

// ---- Lengths

#[test]
fn len_all_encodings() {
    // 16-bit: [1:0] != 11.
    for p in [0x0000u16, 0x0001, 0x0002, 0xfffc, 0xfffd, 0xfffe, 0x8082] {
        assert_eq!(insn_len(p), 2, "{p:#x}");
    }
    // 32-bit: [1:0] = 11, [4:2] != 111.
    for p in [0x0003u16, 0x0013, 0x0073, 0x006f, 0x0067, 0xfffb, 0x0017] {
        assert_eq!(insn_len(p), 4, "{p:#x}");
    }
    // 48-bit: [5:0] = 011111 ([6] is don't-care).
    assert_eq!(insn_len(0x001f), 6);
    assert_eq!(insn_len(0x005f), 6);
    assert_eq!(insn_len(0xffdf), 6);
    // 64-bit: [6:0] = 0111111.
    assert_eq!(insn_len(0x003f), 8);
    assert_eq!(insn_len(0xffbf), 8);
    // (80 + 16*nnn)-bit: [6:0] = 1111111, [14:12] = nnn != 111.
    for nnn in 0..7u16 {
        assert_eq!(insn_len(0x007f | (nnn << 12)), 10 + 2 * nnn as usize);
        assert_eq!(insn_len(0x807f | (nnn << 12)), 10 + 2 * nnn as usize);
    }
    // Reserved >= 192-bit: 0.
    assert_eq!(insn_len(0x707f), 0);
    assert_eq!(insn_len(0xffff), 0);
}

/// `insn_len` against a differently written reference: the number of trailing one bits.
#[test]
fn len_exhaustive_reference() {
    for p in 0..=u16::MAX {
        let ones = p.trailing_ones();
        let want = match ones {
            0 | 1 => 2,
            2..=4 => 4,
            5 => 6,
            6 => 8,
            _ => match (p >> 12) & 7 {
                7 => 0,
                n => 10 + 2 * n as usize,
            },
        };
        assert_eq!(insn_len(p), want, "{p:#06x}");
    }
}

#[test]
fn classify_len_for_long_encodings() {
    for cfg in CONFIGS {
        assert_eq!(
            classify(&cfg, 0x0000_001f),
            InsnInfo {
                len: 6,
                ..InsnInfo::default()
            }
        );
        assert_eq!(
            classify(&cfg, 0x1234_003f),
            InsnInfo {
                len: 8,
                ..InsnInfo::default()
            }
        );
        assert_eq!(classify(&cfg, 0x0000_607f).len, 22);
        assert_eq!(classify(&cfg, 0x0000_707f).len, 0);
        // A 32-bit word whose low parcel says 16-bit: only the low 16 bits count.
        assert_eq!(classify(&cfg, 0xdead_0000 | c_j(8)).len, 2);
        assert_eq!(classify(&cfg, 0xdead_0000 | c_j(8)).target, Some(8));
    }
}

#[test]
fn ilastsize_values() {
    assert_eq!(ilastsize(2), Some(0));
    assert_eq!(ilastsize(4), Some(1));
    assert_eq!(ilastsize(8), Some(2));
    assert_eq!(ilastsize(16), Some(3));
    assert_eq!(ilastsize(6), None);
    assert_eq!(ilastsize(10), None);
    assert_eq!(ilastsize(0), None);
    assert_eq!(ilastsize(3), None);
}

// ---- 32-bit targets

#[test]
fn jal_targets() {
    // Every immediate bit alone, then the extremes (J-type range +-1 MiB).
    for k in 1..=19 {
        let off = 1i32 << k;
        assert_eq!(
            classify(&RV64, jal(0, off)).target,
            Some(off as i64),
            "bit {k}"
        );
    }
    assert_eq!(classify(&RV64, jal(0, -0x10_0000)).target, Some(-0x10_0000));
    assert_eq!(classify(&RV64, jal(0, 0x0f_fffe)).target, Some(0x0f_fffe));
    assert_eq!(classify(&RV64, jal(1, -2)).target, Some(-2));
    assert_eq!(classify(&RV64, jal(1, 0)).target, Some(0));
    assert_eq!(classify(&RV64, 0xffdf_f06f).target, Some(-4)); // j .-4
    assert_eq!(classify(&RV32, 0x0040_00ef).target, Some(4)); // jal ra, .+4
    assert_eq!(classify(&RV64, 0x8000_006f).target, Some(-0x10_0000)); // imm[20] alone
    assert_eq!(classify(&RV64, 0x0010_006f).target, Some(0x800)); // imm[11] alone
    assert_eq!(classify(&RV64, 0x0000_106f).target, Some(0x1000)); // imm[12] alone
}

#[test]
fn branch_targets() {
    for f3 in BRANCH_F3 {
        for k in 1..=11 {
            let off = 1i32 << k;
            let info = classify(&RV32, branch(f3, 1, 2, off));
            assert_eq!(
                info,
                InsnInfo {
                    len: 4,
                    class: CfClass::Branch,
                    target: Some(off as i64)
                }
            );
        }
        assert_eq!(
            classify(&RV32, branch(f3, 31, 31, -4096)).target,
            Some(-4096)
        );
        assert_eq!(classify(&RV32, branch(f3, 0, 0, 4094)).target, Some(4094));
        assert_eq!(classify(&RV32, branch(f3, 0, 0, -2)).target, Some(-2));
    }
    assert_eq!(classify(&RV64, 0xfe00_0ee3).target, Some(-4)); // beqz zero, .-4
    assert_eq!(classify(&RV64, 0x0000_00e3).target, Some(0x800)); // imm[11] is bit 7
    assert_eq!(classify(&RV64, 0x8000_0063).target, Some(-4096)); // imm[12] is bit 31
}

#[test]
fn reserved_32bit_not_control_transfers() {
    for cfg in CONFIGS {
        // Branch funct3 010 and 011 are reserved.
        assert_eq!(class(&cfg, branch(0b010, 1, 2, 8)), CfClass::None);
        assert_eq!(class(&cfg, branch(0b011, 1, 2, 8)), CfClass::None);
        // jalr needs funct3 = 000.
        for f3 in 1..8 {
            assert_eq!(class(&cfg, jalr_f3(1, 1, f3)), CfClass::None);
        }
    }
}

#[test]
fn jalr_has_no_static_target() {
    for rd in [0, 1, 5, 7] {
        for rs1 in [0, 1, 5, 7] {
            let info = classify(&RV64, jalr(rd, rs1, 100));
            assert_eq!(info.len, 4);
            assert_eq!(info.target, None);
            // jalr rd, imm(x0) is still uninferable (both itype tables list jalr as uninferable).
            assert!(info.class.is_uninferable());
        }
    }
}

// ---- 16-bit targets

#[test]
fn c_j_targets() {
    // Hand-computed encodings for single immediate bits (CJ scramble).
    let known: [(u32, i64); 12] = [
        (0xa001, 0),
        (0xa009, 2),      // imm[1] -> bit 3
        (0xa011, 4),      // imm[2] -> bit 4
        (0xa021, 8),      // imm[3] -> bit 5
        (0xa801, 0x10),   // imm[4] -> bit 11
        (0xa005, 0x20),   // imm[5] -> bit 2
        (0xa081, 0x40),   // imm[6] -> bit 7
        (0xa041, 0x80),   // imm[7] -> bit 6
        (0xa201, 0x100),  // imm[8] -> bit 9
        (0xa401, 0x200),  // imm[9] -> bit 10
        (0xa101, 0x400),  // imm[10] -> bit 8
        (0xb001, -0x800), // imm[11] -> bit 12 (sign)
    ];
    for (b, off) in known {
        assert_eq!(
            classify(&RV64, b),
            InsnInfo {
                len: 2,
                class: CfClass::InferableJump,
                target: Some(off)
            },
            "{b:#x}"
        );
        assert_eq!(c_j(off as i32), b);
    }
    assert_eq!(classify(&RV64, 0xbffd).target, Some(-2));
    assert_eq!(classify(&RV64, c_j(2046)).target, Some(2046)); // max
    assert_eq!(classify(&RV64, c_j(-2048)).target, Some(-2048)); // min
    assert_eq!(classify(&RV64, c_j(-0x556)).target, Some(-0x556));
    assert_eq!(classify(&RV64, c_j(0x2aa)).target, Some(0x2aa));
}

#[test]
fn c_jal_targets() {
    assert_eq!(
        classify(&RV32, 0x2ffd),
        InsnInfo {
            len: 2,
            class: CfClass::InferableCall,
            target: Some(2046)
        }
    );
    for k in 1..=10 {
        assert_eq!(classify(&RV32, c_jal(1 << k)).target, Some(1 << k));
        assert_eq!(classify(&RV32, c_jal(-(1 << k))).target, Some(-(1 << k)));
    }
    assert_eq!(classify(&RV32, c_jal(-2048)).target, Some(-2048));
}

#[test]
fn c_branch_targets() {
    // Hand-computed c.beqz x8, off for single immediate bits (CB scramble).
    let known: [(u32, i64); 9] = [
        (0xc001, 0),
        (0xc009, 2),      // imm[1] -> bit 3
        (0xc011, 4),      // imm[2] -> bit 4
        (0xc401, 8),      // imm[3] -> bit 10
        (0xc801, 0x10),   // imm[4] -> bit 11
        (0xc005, 0x20),   // imm[5] -> bit 2
        (0xc021, 0x40),   // imm[6] -> bit 5
        (0xc041, 0x80),   // imm[7] -> bit 6
        (0xd001, -0x100), // imm[8] -> bit 12 (sign)
    ];
    for (b, off) in known {
        assert_eq!(
            classify(&RV32, b),
            InsnInfo {
                len: 2,
                class: CfClass::Branch,
                target: Some(off)
            },
            "{b:#x}"
        );
        assert_eq!(c_beqz(0, off as i32), b);
        // c.bnez differs only in funct3.
        assert_eq!(classify(&RV32, b | 0x2000).target, Some(off));
    }
    for rs1p in 0..8 {
        assert_eq!(classify(&RV64, c_beqz(rs1p, 254)).target, Some(254)); // max
        assert_eq!(classify(&RV64, c_bnez(rs1p, -256)).target, Some(-256)); // min
        assert_eq!(classify(&RV64, c_bnez(rs1p, -2)).target, Some(-2));
        assert_eq!(classify(&RV64, c_beqz(rs1p, 0xaa)).target, Some(0xaa));
    }
}

#[test]
fn target_addr_wraps() {
    let info = classify(&RV32, c_j(-4));
    assert_eq!(info.target_addr(0x1000, Xlen::Rv32), Some(0xffc));
    assert_eq!(info.target_addr(0x2, Xlen::Rv32), Some(0xffff_fffe));
    assert_eq!(
        info.target_addr(0x2, Xlen::Rv64),
        Some(0xffff_ffff_ffff_fffe)
    );
    let fwd = classify(&RV64, jal(0, 0x100));
    assert_eq!(fwd.target_addr(0xffff_ff80, Xlen::Rv32), Some(0x80));
    assert_eq!(
        classify(&RV64, c_jr(6)).target_addr(0x1000, Xlen::Rv64),
        None
    );
}

// ---- Configuration-dependent encodings

#[test]
fn c_jal_rv32_vs_c_addiw_rv64() {
    for off in [0, 2, -2, 2046, -2048, 0x154] {
        let b = c_jal(off);
        assert_eq!(classify(&RV32, b).class, CfClass::InferableCall);
        assert_eq!(
            classify(&RV64, b),
            InsnInfo {
                len: 2,
                class: CfClass::None,
                target: None
            }
        );
    }
    let addiw = c_addiw(10, -1);
    assert_eq!(class(&RV64, addiw), CfClass::None);
    assert_eq!(class(&RV32, addiw), CfClass::InferableCall); // same bits are c.jal on RV32
}

#[test]
fn zcmt_on_off() {
    for index in 0..256 {
        let b = cm_jt(index);
        let want = if index < 32 {
            CfClass::TableJump
        } else {
            CfClass::TableCall
        };
        for cfg in [
            RV32_ZC,
            RV64_ZC,
            IsaConfig::rv32().with_zcmt(true),
            IsaConfig::rv64().with_zcmt(true),
        ] {
            assert_eq!(
                classify(&cfg, b),
                InsnInfo {
                    len: 2,
                    class: want,
                    target: None
                }
            );
            assert_eq!(table_jump_index(&cfg, b), Some(index as u8));
        }
        // Without Zcmt these are c.fsdsp (FP store) encodings.
        for cfg in [RV32, RV64, IsaConfig::rv64().with_zcmp(true)] {
            assert_eq!(class(&cfg, b), CfClass::None);
            assert_eq!(table_jump_index(&cfg, b), None);
        }
    }
    assert_eq!(cm_jt(0), c_fsdsp(0, 0));
    assert_eq!(table_jump_index(&RV32_ZC, cm_popret(4, 0)), None);
    assert_eq!(table_jump_index(&RV32_ZC, jal(0, 0)), None);
}

#[test]
fn zcmp_on_off() {
    for rlist in 0..16 {
        for spimm in 0..4 {
            for b in [cm_popret(rlist, spimm), cm_popretz(rlist, spimm)] {
                // rlist 0-3 are reserved.
                let want = if rlist >= 4 {
                    CfClass::PopRet
                } else {
                    CfClass::None
                };
                for cfg in [RV32_ZC, RV64_ZC, IsaConfig::rv32().with_zcmp(true)] {
                    assert_eq!(
                        classify(&cfg, b),
                        InsnInfo {
                            len: 2,
                            class: want,
                            target: None
                        }
                    );
                }
                // Without Zcmp: c.fsdsp.
                for cfg in [RV32, RV64, IsaConfig::rv64().with_zcmt(true)] {
                    assert_eq!(class(&cfg, b), CfClass::None);
                }
            }
            // cm.push / cm.pop are not control transfers.
            assert_eq!(class(&RV64_ZC, cm_push(rlist, spimm)), CfClass::None);
            assert_eq!(class(&RV64_ZC, cm_pop(rlist, spimm)), CfClass::None);
        }
    }
    assert_eq!(class(&RV64_ZC, cm_mvsa01(1, 0)), CfClass::None);
    // Other c.fsdsp-space bits with both on are not control transfers either.
    assert_eq!(class(&RV64_ZC, c_fsdsp(3, 0x1f8)), CfClass::None);
}

#[test]
fn table_entry_addresses() {
    // jvt.mode (low 6 bits) is ignored; entries are XLEN/8 bytes.
    assert_eq!(table_entry_addr(0x8000_0000, 0, Xlen::Rv32), 0x8000_0000);
    assert_eq!(table_entry_addr(0x8000_0001, 3, Xlen::Rv32), 0x8000_000c);
    assert_eq!(
        table_entry_addr(0x8000_0040, 255, Xlen::Rv64),
        0x8000_0040 + 255 * 8
    );
    assert_eq!(table_entry_addr(0xffff_ffc0, 1, Xlen::Rv32), 0xffff_ffc4);
}

// ---- Compressed jump-register space

#[test]
fn c_jr_jalr_rs1_zero_and_ebreak() {
    for cfg in CONFIGS {
        // c.jr with rs1 = 0 is reserved.
        assert_eq!(
            classify(&cfg, c_jr(0)),
            InsnInfo {
                len: 2,
                class: CfClass::None,
                target: None
            }
        );
        // c.jalr with rs1 = 0 is c.ebreak.
        assert_eq!(c_jalr(0), C_EBREAK);
        assert_eq!(class(&cfg, C_EBREAK), CfClass::EnvTrap);
        // c.mv / c.add (rs2 != 0) are not jumps, including the rd = 0 HINTs.
        for r in 1..32 {
            assert_eq!(class(&cfg, c_mv(r, r)), CfClass::None);
            assert_eq!(class(&cfg, c_add(r, r)), CfClass::None);
            assert_eq!(class(&cfg, c_mv(0, r)), CfClass::None);
            assert_eq!(class(&cfg, c_add(0, r)), CfClass::None);
        }
    }
}

// ---- SYSTEM

#[test]
fn system_instructions() {
    for cfg in CONFIGS {
        for b in [MRET, SRET, URET, MNRET, DRET] {
            assert_eq!(
                classify(&cfg, b),
                InsnInfo {
                    len: 4,
                    class: CfClass::TrapReturn,
                    target: None
                }
            );
        }
        for b in [ECALL, EBREAK] {
            assert_eq!(
                classify(&cfg, b),
                InsnInfo {
                    len: 4,
                    class: CfClass::EnvTrap,
                    target: None
                }
            );
        }
        // Near misses are not trap returns / env traps.
        for b in [
            WFI,
            MRET | (1 << 7),
            SRET | (1 << 15),
            ECALL | (1 << 12),
            0x1200_0073, /* sfence.vma */
        ] {
            assert_eq!(class(&cfg, b), CfClass::None, "{b:#x}");
        }
    }
}
