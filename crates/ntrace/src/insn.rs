//! What the decoder needs to know about one instruction (N-Trace 11: size, type, static target),
//! with a choice of which registers are link registers.

use rvtrace_image::code::Code;
use rvtrace_image::Image;
use rvtrace_isa::{classify, insn_len, CfClass, InsnInfo, IsaConfig};

/// Which registers count as link registers when classifying jumps as calls and returns (N-Trace
/// Table 2 rows `jal`/`jalr`/`c.jalr`/`c.jr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LinkRule {
    /// `x1` and `x5` (N-Trace Table 2 note "link means register x1 or x5", the RISC-V
    /// unprivileged ISA return-address stack hints).
    #[default]
    Spec,
    /// Only `x1`: `jal t0` is a plain jump and `jr t0` a plain indirect jump. This is how the
    /// conformance set's `variant-jalt0-as-jump` streams were made (NexRv reading an objdump in
    /// which `jal t0` was rewritten to `j`).
    X1Only,
    /// NexRv's own objdump classification (`NexRvConv.c`): every `jal`/`jalr` that writes a register
    /// is a call (so `jal t0` pushes), and only `ret` (`jalr x0, 0(x1)`, `c.jr x1`) is a return
    /// (so `jr t0` does not pop).
    NexRv,
}

/// One decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    /// The instruction bits (first parcel in the low half).
    pub bits: u32,
    /// Length in bytes (2 or 4; longer lengths as [`insn_len`] gives them).
    pub len: u8,
    /// Control-flow class under the chosen [`LinkRule`].
    pub class: CfClass,
    /// Static target (branches: the taken target; `jal`, `c.j`, `c.jal`), absolute.
    pub target: Option<u64>,
}

impl Insn {
    /// I-CNT units (16-bit half-instructions, N-Trace 8.3).
    pub const fn halfwords(&self) -> u64 {
        (self.len as u64).div_ceil(2)
    }
}

/// Length in bytes of the instruction whose first parcel is in the low half of `bits` (0 for
/// the reserved >= 192-bit prefix).
pub const fn len_of(bits: u32) -> u64 {
    insn_len(bits as u16) as u64
}

/// Classifies instructions of an image.
#[derive(Clone, Copy, Debug)]
pub struct Classifier {
    /// ISA options (XLEN, Zcmp, Zcmt).
    pub isa: IsaConfig,
    /// Link registers.
    pub link: LinkRule,
}

const fn field(v: u32, lo: u32, width: u32) -> u32 {
    (v >> lo) & ((1 << width) - 1)
}

impl Classifier {
    /// The instruction at `pc`, `None` if it is not in the image or has no valid length.
    #[inline]
    pub fn at(&self, image: &Image, pc: u64) -> Option<Insn> {
        let bits = image.fetch(pc)?;
        let len = insn_len(bits as u16);
        if len == 0 || len > 4 || is_zero_parcel(bits) {
            return None;
        }
        let info = classify(&self.isa, bits);
        let class = match self.link {
            LinkRule::Spec => info.class,
            rule => relink(rule, bits, info.class),
        };
        Some(Insn {
            bits,
            len: info.len,
            class,
            target: info.target_addr(pc, self.isa.xlen),
        })
    }
}

impl Classifier {
    /// [`Classifier::at`] for the bits alone (the target stays an offset): length 0 for what
    /// [`Classifier::at`] rejects (longer than 32 bits, or the illegal all-zeros parcel).
    pub fn info(&self, bits: u32) -> InsnInfo {
        let mut info = classify(&self.isa, bits);
        if info.len > 4 || is_zero_parcel(bits) {
            info.len = 0;
        }
        if self.link != LinkRule::Spec {
            info.class = relink(self.link, bits, info.class);
        }
        info
    }

    /// The decoder's block table of `image` (executable segments), classified as
    /// [`Classifier::at`] does.
    pub fn code(&self, image: &Image) -> Code {
        let cls = *self;
        Code::with_classifier(image, self.isa, move |bits| cls.info(bits))
    }
}

/// The all-zeros parcel is an illegal instruction in every RISC-V ISA (unprivileged ISA,
/// "Base Instruction-Length Encoding": a 16-bit parcel of zeros is reserved as illegal). A trace
/// walk that meets one has left the code (zero padding, data): it never retires.
#[inline]
const fn is_zero_parcel(bits: u32) -> bool {
    bits & 0xFFFF == 0
}

/// `(rd, rs1, imm == 0)` of `jal`/`jalr`/`c.j`/`c.jal`/`c.jr`/`c.jalr` (given that `class` says it
/// is one of them).
fn regs(bits: u32) -> (u32, u32, bool) {
    if bits & 3 == 3 {
        // jal: rd [11:7]; jalr: rd [11:7], rs1 [19:15], imm [31:20].
        let rd = field(bits, 7, 5);
        if bits & 0x7f == 0b110_1111 {
            (rd, 0, true)
        } else {
            (rd, field(bits, 15, 5), field(bits, 20, 12) == 0)
        }
    } else {
        let b = bits & 0xffff;
        match (b & 3, field(b, 13, 3)) {
            // c.jal (RV32): jal x1.
            (0b01, 0b001) => (1, 0, true),
            // c.j: jal x0.
            (0b01, 0b101) => (0, 0, true),
            // c.jr / c.jalr rs1.
            _ => (field(b, 12, 1), field(b, 7, 5), true),
        }
    }
}

fn relink(rule: LinkRule, bits: u32, class: CfClass) -> CfClass {
    let jal_like = matches!(
        class,
        CfClass::InferableCall | CfClass::InferableJump | CfClass::OtherInferableJump
    );
    let jalr_like = matches!(
        class,
        CfClass::UninferableCall
            | CfClass::CoroutineSwap
            | CfClass::Return
            | CfClass::UninferableJump
            | CfClass::OtherUninferableJump
    );
    if !jal_like && !jalr_like {
        return class;
    }
    let (rd, rs1, imm0) = regs(bits);
    match rule {
        LinkRule::Spec => class,
        LinkRule::X1Only => {
            let link = |r: u32| r == 1;
            if jal_like {
                match rd {
                    0 => CfClass::InferableJump,
                    r if link(r) => CfClass::InferableCall,
                    _ => CfClass::OtherInferableJump,
                }
            } else {
                // N-Trace Table 2 jalr rows with link = {x1}.
                match (link(rd), link(rs1)) {
                    (true, _) => CfClass::UninferableCall,
                    (false, true) => CfClass::Return,
                    (false, false) if rd == 0 => CfClass::UninferableJump,
                    _ => CfClass::OtherUninferableJump,
                }
            }
        }
        LinkRule::NexRv => {
            if jal_like {
                if rd == 0 {
                    CfClass::InferableJump
                } else {
                    CfClass::InferableCall
                }
            } else if rd != 0 {
                CfClass::UninferableCall
            } else if rs1 == 1 && imm0 {
                CfClass::Return
            } else {
                CfClass::UninferableJump
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(rule: LinkRule, bits: u32) -> CfClass {
        let info = classify(&IsaConfig::rv64(), bits);
        match rule {
            LinkRule::Spec => info.class,
            r => relink(r, bits, info.class),
        }
    }

    // Encodings (RISC-V unprivileged ISA): jal t0, X = 0x..2ef (rd=5); jr t0 = 0x00028067;
    // ret = 0x00008067; jalr t0 (= jalr ra, 0(t0)) = 0x000280e7; c.jr t0 = 0x8282; c.jalr t0 = 0x9282.
    const JAL_T0: u32 = 0x008002ef;
    const JAL_RA: u32 = 0x008000ef;
    const JR_T0: u32 = 0x00028067;
    const RET: u32 = 0x00008067;
    const JALR_RA_T0: u32 = 0x000280e7;
    const C_JR_T0: u32 = 0x8282;
    const C_JALR_T0: u32 = 0x9282;

    #[test]
    fn link_rules() {
        use CfClass::*;
        let rows = [
            (JAL_T0, [InferableCall, OtherInferableJump, InferableCall]),
            (JAL_RA, [InferableCall, InferableCall, InferableCall]),
            (JR_T0, [Return, UninferableJump, UninferableJump]),
            (RET, [Return, Return, Return]),
            (
                JALR_RA_T0,
                [CoroutineSwap, UninferableCall, UninferableCall],
            ),
            (C_JR_T0, [Return, UninferableJump, UninferableJump]),
            (C_JALR_T0, [CoroutineSwap, UninferableCall, UninferableCall]),
        ];
        for (bits, want) in rows {
            for (k, rule) in [LinkRule::Spec, LinkRule::X1Only, LinkRule::NexRv]
                .into_iter()
                .enumerate()
            {
                assert_eq!(class(rule, bits), want[k], "{bits:#x} {rule:?}");
            }
        }
    }
}
