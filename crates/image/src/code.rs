//! What a trace decoder knows about the program: for every half-word of the executable
//! segments, the instruction that would start there (length, control-flow class, static target)
//! and the distance to the next control transfer along the sequential path, so that a decoder
//! moves one basic block at a time instead of one instruction at a time. The E-Trace and N-Trace
//! decoders share it.

use crate::Image;
use rvtrace_isa::{classify, CfClass, InsnInfo, IsaConfig};

/// One half-word's entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ent {
    /// Control-flow class of the instruction starting here.
    pub class: CfClass,
    /// Its length in bytes (0: not a valid instruction, or it runs off the segment).
    pub len: u8,
    /// Static target offset (branches: taken target; `jal`/`c.j`/`c.jal`), else 0.
    pub target: i32,
    /// Sequential instructions from here (this one included) before the run's end instruction
    /// X, which is the first control transfer or invalid instruction on the sequential path
    /// (0 if this instruction is X).
    pub run: u32,
    /// Bytes from here to X.
    pub run_bytes: u32,
    /// Bytes from here to the last instruction before X (meaningful when `run` > 0).
    pub run_last: u32,
}

impl Ent {
    /// True if this instruction ends a run (a control transfer, or invalid).
    #[inline]
    pub fn ends_run(&self) -> bool {
        self.run == 0
    }
}

/// Whether a class breaks sequential execution for the decoder (`decoder.adoc` `next_pc`:
/// branches, jumps and trap returns).
fn is_transfer(c: CfClass) -> bool {
    !matches!(c, CfClass::None | CfClass::EnvTrap)
}

struct Seg {
    base: u64,
    end: u64,
    ents: Vec<Ent>,
}

/// How a table classifies the bits at a half-word (see [`Code::with_classifier`]).
type Classify = dyn Fn(u32) -> InsnInfo + Send + Sync;

/// The block table of a program image. Immutable once built (`Sync`): decoders on several
/// threads can share one, and a clone shares the table.
#[derive(Clone)]
pub struct Code {
    segs: std::sync::Arc<[Seg]>,
    /// The classifier the table was built with, for instructions it has no entry for.
    classify: std::sync::Arc<Classify>,
    /// ISA configuration used for classification.
    pub isa: IsaConfig,
}

impl Code {
    /// Build the table for the executable segments of `image`, classifying with
    /// [`rvtrace_isa::classify`].
    pub fn new(image: &Image, isa: IsaConfig) -> Code {
        Code::with_classifier(image, isa, move |bits| classify(&isa, bits))
    }

    /// Build the table with a decoder's own view of instructions: `classify` gets the bits at
    /// each half-word (first parcel in the low half) and may change the class (link register
    /// rules) or reject an instruction with length 0. It must not turn a control transfer into a
    /// plain instruction or change lengths otherwise, so that runs stay what the program does.
    /// The table keeps it for [`Code::classify`].
    pub fn with_classifier(
        image: &Image,
        isa: IsaConfig,
        classify: impl Fn(u32) -> InsnInfo + Send + Sync + 'static,
    ) -> Code {
        let mut segs: Vec<Seg> = image
            .segments()
            .iter()
            .filter(|s| s.is_executable() && s.data.len() >= 2)
            .map(|s| build_seg(s.vaddr, &s.data, &classify))
            .collect();
        segs.sort_by_key(|s| s.base);
        Code {
            segs: segs.into(),
            classify: std::sync::Arc::new(classify),
            isa,
        }
    }

    /// The instruction whose bits are `bits` (first parcel in the low half), as the table
    /// classifies them (length 0: rejected): for an instruction the table has no entry for (one
    /// that crosses the end of its segment).
    pub fn classify(&self, bits: u32) -> InsnInfo {
        (self.classify)(bits)
    }

    /// The entry for the instruction at `pc`, or `None` if `pc` is odd or outside the code.
    /// (Programs have one or a few executable segments: a scan is as fast as a cached hint.)
    #[inline]
    pub fn ent(&self, pc: u64) -> Option<&Ent> {
        if pc & 1 != 0 {
            return None;
        }
        let s = self.segs.iter().find(|s| pc >= s.base && pc < s.end)?;
        s.ents.get(((pc - s.base) / 2) as usize)
    }

    /// The table of the segment holding `pc`: its base address and its entries (entry `i` for
    /// the half-word at `base + 2 * i`), for a walk that looks up many entries in one segment.
    #[inline]
    pub fn segment(&self, pc: u64) -> Option<(u64, &[Ent])> {
        let s = self.segs.iter().find(|s| pc >= s.base && pc < s.end)?;
        Some((s.base, &s.ents))
    }

    /// The sequential path from the instruction at `from` to `addr` (a cursor over the table):
    /// the instruction right before `addr` on it, and how many instructions there are from
    /// `from` (included) to `addr` (excluded); `None` if `addr` is no instruction boundary after
    /// `from` on that path (or the path meets an invalid instruction first).
    pub fn path_to(&self, from: u64, addr: u64) -> Option<(u64, u64)> {
        let (mut pc, mut n) = (from, 0u64);
        loop {
            let e = self.ent(pc)?;
            if e.len == 0 {
                return None;
            }
            let next = pc.checked_add(e.len as u64)?;
            n += 1;
            if next == addr {
                return Some((pc, n));
            }
            if next > addr {
                return None;
            }
            pc = next;
        }
    }

    /// True if `addr` is an instruction boundary on the sequential path from `from` (where an
    /// instruction starts) before that run's end, or the end itself.
    pub fn on_path(&self, from: u64, addr: u64) -> bool {
        let mut pc = from;
        while pc < addr {
            match self.ent(pc) {
                Some(e) if e.len > 0 => pc += e.len as u64,
                _ => return false,
            }
        }
        pc == addr
    }
}

fn build_seg(base: u64, data: &[u8], classify: &impl Fn(u32) -> InsnInfo) -> Seg {
    let n = data.len() / 2;
    let mut ents = vec![Ent::default(); n];
    let half = |i: usize| u16::from_le_bytes([data[2 * i], data[2 * i + 1]]) as u32;
    // Backwards, so that the entry after each instruction is known.
    for i in (0..n).rev() {
        let lo = half(i);
        let bits = if i + 1 < n {
            lo | half(i + 1) << 16
        } else {
            lo
        };
        let info = classify(bits);
        let len = info.len as usize;
        let fits = len >= 2 && i + len / 2 <= n && (len == 2 || i + 1 < n);
        let mut e = Ent {
            class: info.class,
            len: if fits { info.len } else { 0 },
            target: info.target.unwrap_or(0) as i32,
            ..Ent::default()
        };
        if fits && !is_transfer(info.class) {
            let j = i + len / 2;
            if j < n {
                let nx = ents[j];
                e.run = nx.run + 1;
                e.run_bytes = nx.run_bytes + len as u32;
                e.run_last = if nx.run == 0 {
                    0
                } else {
                    nx.run_last + len as u32
                };
            } else {
                // Runs off the segment end: X is the (missing) instruction after it.
                e.run = 1;
                e.run_bytes = len as u32;
                e.run_last = 0;
            }
        }
        ents[i] = e;
    }
    Seg {
        base,
        end: base + 2 * n as u64,
        ents,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decoders on several threads share one table.
    #[test]
    fn code_is_shareable() {
        fn sync_send<T: Sync + Send>() {}
        sync_send::<Code>();
    }

    #[test]
    fn runs() {
        // addi; c.nop; beq; c.nop
        let code: Vec<u8> = [
            0x13u8, 0x05, 0x15, 0x00, // addi a0,a0,1
            0x01, 0x00, // c.nop
            0x63, 0x04, 0xb5, 0x00, // beq a0,a1,+8
            0x01, 0x00, // c.nop
        ]
        .to_vec();
        let isa = IsaConfig::rv64();
        let s = build_seg(0x1000, &code, &|bits| classify(&isa, bits));
        assert_eq!(s.ents[0].run, 2);
        assert_eq!(s.ents[0].run_bytes, 6);
        assert_eq!(s.ents[0].run_last, 4);
        assert_eq!(s.ents[2].run, 1);
        assert_eq!(s.ents[2].run_last, 0);
        assert_eq!(s.ents[3].class, CfClass::Branch);
        assert_eq!(s.ents[3].target, 8);
        assert!(s.ents[3].ends_run());
        assert_eq!(s.ents[5].run, 1);
        let code = Code {
            segs: vec![s].into(),
            classify: std::sync::Arc::new(move |bits| classify(&isa, bits)),
            isa,
        };
        // From the addi: the c.nop, then the beq, then past it.
        assert_eq!(code.path_to(0x1000, 0x1004), Some((0x1000, 1)));
        assert_eq!(code.path_to(0x1000, 0x1006), Some((0x1004, 2)));
        assert_eq!(code.path_to(0x1000, 0x100a), Some((0x1006, 3)));
        // Inside the addi, before `from`, or off the code.
        assert_eq!(code.path_to(0x1000, 0x1002), None);
        assert_eq!(code.path_to(0x1004, 0x1000), None);
        assert_eq!(code.path_to(0x1000, 0x2000), None);
        assert_eq!(code.path_to(0x1001, 0x1004), None);
    }
}
