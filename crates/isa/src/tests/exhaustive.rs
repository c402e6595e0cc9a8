//! Exhaustive 16-bit sweep and a pseudo-random sample of 32-bit words: no panics, consistent lengths,
//! exact per-class counts, and every classified control transfer re-encodes to itself.

use super::*;
use crate::{insn_len, is_sequentially_inferable, sequentially_inferred_target, Xlen};

/// Count of 16-bit instructions (parcels with [1:0] != 11) per class for `cfg`, indexed like `CfClass::ALL`.
fn counts16(cfg: &IsaConfig) -> [u32; 15] {
    let mut n = [0u32; 15];
    for p in 0..=u16::MAX {
        let info = classify(cfg, p as u32);
        assert_eq!(info.len as usize, insn_len(p));
        if info.len == 2 {
            let i = CfClass::ALL.iter().position(|c| *c == info.class).unwrap();
            n[i] += 1;
        }
        if info.len != 2 {
            // A 32-bit word with zero upper half may be a control transfer (e.g. 0x0063 is
            // `beq x0, x0, .`); it is counted but checked by the 32-bit tests.
            if info.len != 4 {
                assert_eq!(info.class, CfClass::None);
            }
            continue;
        }
        // The same parcel with other upper bits classifies the same.
        assert_eq!(classify(cfg, p as u32 | 0xa5a5_0000), info);
        // Re-encode from the decoded fields and compare.
        let rs1 = (p as u32 >> 7) & 31;
        let rs1p = (p as u32 >> 7) & 7;
        let f3 = p >> 13;
        match info.class {
            CfClass::None => assert_eq!(info.target, None),
            CfClass::Branch => {
                let off = info.target.unwrap() as i32;
                let re = if f3 == 0b110 {
                    c_beqz(rs1p, off)
                } else {
                    c_bnez(rs1p, off)
                };
                assert_eq!(re, p as u32);
                assert!((-256..=254).contains(&off) && off % 2 == 0);
            }
            CfClass::InferableJump => assert_eq!(c_j(info.target.unwrap() as i32), p as u32),
            CfClass::InferableCall => {
                assert_eq!(cfg.xlen, Xlen::Rv32);
                assert_eq!(c_jal(info.target.unwrap() as i32), p as u32);
            }
            CfClass::Return | CfClass::UninferableJump => assert_eq!(c_jr(rs1), p as u32),
            CfClass::UninferableCall | CfClass::CoroutineSwap => {
                assert_eq!(c_jalr(rs1), p as u32)
            }
            CfClass::EnvTrap => assert_eq!(p as u32, C_EBREAK),
            CfClass::TableJump | CfClass::TableCall => {
                assert_eq!(cm_jt((p as u32 >> 2) & 0xff), p as u32)
            }
            CfClass::PopRet => {
                let (rlist, spimm) = ((p as u32 >> 4) & 15, (p as u32 >> 2) & 3);
                assert!(
                    p as u32 == cm_popret(rlist, spimm) || p as u32 == cm_popretz(rlist, spimm)
                );
            }
            c => panic!("unexpected 16-bit class {c:?} for {p:#06x}"),
        }
        if info.target.is_some() {
            assert!(matches!(
                info.class,
                CfClass::Branch | CfClass::InferableJump | CfClass::InferableCall
            ));
        }
    }
    n
}

#[test]
fn all_16bit_parcels() {
    for cfg in CONFIGS {
        let n = counts16(&cfg);
        let get = |c: CfClass| n[CfClass::ALL.iter().position(|x| *x == c).unwrap()];
        assert_eq!(get(CfClass::Branch), 4096, "c.beqz + c.bnez");
        assert_eq!(get(CfClass::InferableJump), 2048, "c.j");
        let cjal = if cfg.xlen == Xlen::Rv32 { 2048 } else { 0 };
        assert_eq!(get(CfClass::InferableCall), cjal, "c.jal");
        assert_eq!(get(CfClass::Return), 2, "c.jr x1/x5");
        assert_eq!(get(CfClass::UninferableJump), 29, "c.jr other");
        assert_eq!(get(CfClass::UninferableCall), 30, "c.jalr not x5");
        assert_eq!(get(CfClass::CoroutineSwap), 1, "c.jalr x5");
        assert_eq!(get(CfClass::EnvTrap), 1, "c.ebreak");
        assert_eq!(get(CfClass::TableJump), if cfg.zcmt { 32 } else { 0 });
        assert_eq!(get(CfClass::TableCall), if cfg.zcmt { 224 } else { 0 });
        assert_eq!(get(CfClass::PopRet), if cfg.zcmp { 2 * 12 * 4 } else { 0 });
        for c in [
            CfClass::OtherInferableJump,
            CfClass::OtherUninferableJump,
            CfClass::TrapReturn,
        ] {
            assert_eq!(get(c), 0, "{c:?}");
        }
        // Parcels with [1:0] != 11.
        assert_eq!(n.iter().sum::<u32>(), 3 * 16384);
    }
}

#[test]
fn sample_32bit_words() {
    let mut rng = rvtrace_rng::Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..400_000 {
        let r = rng.next_u64();
        let mut words = [r as u32, (r >> 32) as u32];
        // Force every fourth pair into the interesting opcodes.
        let ops = [0x63, 0x67, 0x6f, 0x73, 0x37, 0x17];
        words[1] = (words[1] & !0x7f) | ops[(r % 6) as usize];
        for w in words {
            for cfg in CONFIGS {
                let info = classify(&cfg, w);
                assert_eq!(info.len as usize, insn_len(w as u16));
                if info.len != 2 && info.len != 4 {
                    assert_eq!(info.class, CfClass::None);
                }
                if info.len == 4 && info.class != CfClass::None {
                    assert!(matches!(w & 0x7f, 0x63 | 0x67 | 0x6f | 0x73), "{w:#x}");
                    match w & 0x7f {
                        0x6f => assert_eq!(jal((w >> 7) & 31, info.target.unwrap() as i32), w),
                        0x63 => {
                            let (f3, rs1, rs2) = ((w >> 12) & 7, (w >> 15) & 31, (w >> 20) & 31);
                            assert_eq!(branch(f3, rs1, rs2, info.target.unwrap() as i32), w);
                        }
                        0x67 => {
                            let imm = (w as i32) >> 20;
                            assert_eq!(jalr((w >> 7) & 31, (w >> 15) & 31, imm), w);
                        }
                        _ => assert!(matches!(info.class, CfClass::EnvTrap | CfClass::TrapReturn)),
                    }
                }
                for c in [info.class] {
                    for width in [3, 4, 0, 255] {
                        let _ = c.etrace_itype(true, width);
                        let _ = c.ntrace_itype(false, width);
                    }
                }
                let _ = is_sequentially_inferable(&cfg, words[0], words[1]);
                let _ = sequentially_inferred_target(&cfg, r, words[0], words[1]);
                let _ = sequentially_inferred_target(&cfg, u64::MAX, w, w);
            }
        }
    }
}
