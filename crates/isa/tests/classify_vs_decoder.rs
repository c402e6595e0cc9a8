//! One decoder plus one classifier: wherever the instruction decoder ([`rvtrace_isa::insn`], the
//! hart's) accepts an encoding, the tracing classifier ([`rvtrace_isa::classify`]) gives it the
//! control-flow class that follows from the decoded operation and its `rd`/`rs1` (E-Trace
//! `ingressPort.adoc` JumpClasses), and the static target the decoder's immediate gives. Every
//! 16-bit encoding and 400,000 random 32-bit ones, for RV32 and RV64 (without Zcmp/Zcmt, which the
//! hart does not implement).

use rvtrace_isa::insn::{decode, Extensions, Insn, Op};
use rvtrace_isa::{classify, CfClass, IsaConfig, Xlen};

fn link(r: u8) -> bool {
    r == 1 || r == 5
}

/// The class a decoded instruction has by the JumpClasses table.
fn class_of(i: &Insn) -> CfClass {
    use Op::*;
    match i.op {
        Beq | Bne | Blt | Bge | Bltu | Bgeu => CfClass::Branch,
        Jal => match i.rd {
            0 => CfClass::InferableJump,
            r if link(r) => CfClass::InferableCall,
            _ => CfClass::OtherInferableJump,
        },
        Jalr => match (link(i.rd), link(i.rs1)) {
            (true, true) if i.rd != i.rs1 => CfClass::CoroutineSwap,
            (true, _) => CfClass::UninferableCall,
            (false, true) => CfClass::Return,
            (false, false) if i.rd == 0 => CfClass::UninferableJump,
            (false, false) => CfClass::OtherUninferableJump,
        },
        Mret | Sret => CfClass::TrapReturn,
        Ecall | Ebreak => CfClass::EnvTrap,
        _ => CfClass::None,
    }
}

fn check(bits: u32, xlen: Xlen, cfg: &IsaConfig, n: &mut usize) {
    let insn = decode(bits, xlen, &Extensions::ALL);
    if insn.op == Op::Illegal {
        return;
    }
    *n += 1;
    let info = classify(cfg, bits);
    assert_eq!(info.len, insn.len, "{bits:08x} {xlen:?}: length");
    let want = class_of(&insn);
    assert_eq!(info.class, want, "{bits:08x} {xlen:?}: {insn:?}");
    let target = matches!(want, CfClass::Branch) || insn.op == Op::Jal;
    let want_target = target.then_some(insn.imm as i64);
    assert_eq!(info.target, want_target, "{bits:08x} {xlen:?}: target");
}

#[test]
fn classifier_agrees_with_decoder() {
    for (xlen, cfg) in [
        (Xlen::Rv64, IsaConfig::rv64()),
        (Xlen::Rv32, IsaConfig::rv32()),
    ] {
        let mut n = 0;
        for bits in (0..=0xffffu32).filter(|b| b & 3 != 3) {
            check(bits, xlen, &cfg, &mut n);
        }
        let mut rng = rvtrace_rng::Rng(0x0123_4567_89ab_cdef);
        for k in 0..400_000u32 {
            let s = rng.next_u64();
            let mut bits = (s >> 16) as u32 | 3;
            // Half of them under the control-transfer and SYSTEM opcodes, with link registers.
            if k % 2 == 0 {
                let op = [0x63, 0x67, 0x6f, 0x73][(s % 4) as usize];
                let r = |sh: u64| [0u32, 1, 5, 2, 10][((s >> sh) % 5) as usize];
                bits = (bits & !0x7f & !(0x1f << 7) & !(0x1f << 15))
                    | op
                    | (r(40) << 7)
                    | (r(48) << 15);
                if k % 4 == 0 {
                    bits &= !(7 << 12);
                }
            }
            check(bits, xlen, &cfg, &mut n);
        }
        assert!(n > 200_000, "{xlen:?}: {n} encodings both see");
    }
}
