//! The program load (chapter 3: state initialization, "primarily intended for use during
//! program loading"): the trace's initial memory against the ELF's loadable contents, and the
//! registers the load sets against the reference's reset state.

use super::group::Group;
use super::report::{Diff, Mismatch, ProgramCheck};
use super::shadow::{canonical_csr, csr_nondet, Shadow};
use crate::codec::{mask_bits, reg};
use crate::dump::reg_name;
use rvtrace_image::Image;
use rvtrace_sim::Hart;

/// A loaded segment: physical base, the ELF's bytes, and which bytes the trace's initial memory
/// wrote (one bit each).
struct Segment {
    base: u64,
    data: Vec<u8>,
    covered: Vec<u64>,
}

#[derive(Default)]
pub(super) struct Program {
    segs: Vec<Segment>,
    /// Bytes the trace's initial memory wrote.
    bytes: u64,
    /// The lowest differing address so far: address, ELF's value, trace's value, group, offset.
    first: Option<(u64, String, String, u64, u64)>,
    count: u64,
}

impl Program {
    pub(super) fn new(image: &Image) -> Program {
        let segs = image
            .segments()
            .iter()
            .filter(|s| !s.data.is_empty())
            .map(|s| Segment {
                base: s.paddr,
                data: s.data.clone(),
                covered: vec![0; s.data.len().div_ceil(64)],
            })
            .collect();
        Program {
            segs,
            ..Program::default()
        }
    }

    fn differ(&mut self, addr: u64, elf: String, traced: String, group: u64, offset: u64) {
        self.count += 1;
        if self.first.as_ref().is_none_or(|f| addr < f.0) {
            self.first = Some((addr, elf, traced, group, offset));
        }
    }

    /// A store of the trace's initial memory: `n` bytes of `data` at `addr`; `in_ram` when the
    /// address is the hart's memory.
    pub(super) fn store(
        &mut self,
        addr: u64,
        n: usize,
        data: u64,
        in_ram: bool,
        group: u64,
        offset: u64,
    ) {
        self.bytes += n as u64;
        let traced = format!("0x{:0w$x}", mask_bits(data, 8 * n as u32), w = 2 * n);
        if !in_ram {
            self.differ(
                addr,
                "no memory there".into(),
                format!("a store of {traced}"),
                group,
                offset,
            );
            return;
        }
        let mut elf = [0u8; 8];
        for (k, e) in elf.iter_mut().enumerate().take(n) {
            let a = addr.wrapping_add(k as u64);
            if let Some(s) = self
                .segs
                .iter_mut()
                .find(|s| a >= s.base && a - s.base < s.data.len() as u64)
            {
                let i = (a - s.base) as usize;
                *e = s.data[i];
                s.covered[i / 64] |= 1 << (i % 64);
            }
        }
        let ev = u64::from_le_bytes(elf);
        if ev != mask_bits(data, 8 * n as u32) {
            self.differ(
                addr,
                format!("0x{ev:0w$x}", w = 2 * n),
                traced,
                group,
                offset,
            );
        }
    }

    /// Runs of the ELF's non-zero bytes that the trace's initial memory did not write (zero
    /// bytes need no store: RAM starts zeroed).
    fn uncovered(&mut self, group: u64, offset: u64) {
        let mut found = Vec::new();
        for s in &self.segs {
            let missing = |k: usize| s.data[k] != 0 && s.covered[k / 64] & (1 << (k % 64)) == 0;
            let mut k = 0;
            while k < s.data.len() {
                if !missing(k) {
                    k += 1;
                    continue;
                }
                let start = k;
                while k < s.data.len() && missing(k) {
                    k += 1;
                }
                let shown: Vec<String> = s.data[start..k.min(start + 8)]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                found.push((s.base + start as u64, shown.join(" ")));
            }
        }
        for (a, bytes) in found {
            self.differ(
                a,
                format!("bytes {bytes}"),
                "nothing (not in its initial memory)".into(),
                group,
                offset,
            );
        }
    }

    /// The program load is over: whether the trace's initial memory is the ELF's (`expected`:
    /// the trace should carry it, `init` and `mem` not absent; `group`, `offset`: where the
    /// load ended), and the mismatch to report when it is not (`pc`: the reference's).
    pub(super) fn verdict(
        &mut self,
        expected: bool,
        group: u64,
        offset: u64,
        pc: u64,
    ) -> (ProgramCheck, Option<Mismatch>) {
        if self.bytes == 0 && !expected {
            return (ProgramCheck::NotInTrace, None);
        }
        self.uncovered(group, offset);
        let Some((addr, elf, traced, group, offset)) = self.first.clone() else {
            return (ProgramCheck::Same { bytes: self.bytes }, None);
        };
        let count = self.count;
        let check = ProgramCheck::Differs {
            addr,
            elf: elf.clone(),
            traced: traced.clone(),
            count,
        };
        let m = Mismatch {
            group,
            offset,
            pc,
            insn: None,
            disasm: format!(
                "state initialization: the trace's initial memory is not the ELF's \
                 ({count} differing place{}; the first, by address, below)",
                if count == 1 { "" } else { "s" }
            ),
            diffs: vec![Diff {
                element: format!("memory at 0x{addr:x}"),
                expected: format!("{elf} (the ELF)"),
                traced,
            }],
        };
        (check, Some(m))
    }
}

/// The registers a group of the program load sets, against the reference's reset state
/// (the shadow `sh` has the group applied, the reference `h` not yet).
pub(super) fn compare_init(sh: &Shadow, h: &mut Hart, g: &Group, diffs: &mut Vec<Diff>) {
    let xb = sh.xlen.bits();
    let hex = |v: u64, bits: u32| format!("0x{:0w$x}", v, w = (bits as usize).div_ceil(4));
    let reset = " (the reset state)";
    if g.new_pc.is_some() && sh.pc != h.pc {
        diffs.push(Diff {
            element: "pc".into(),
            expected: format!("{} (the ELF's entry)", hex(h.pc, xb)),
            traced: hex(sh.pc, xb),
        });
    }
    if g.priv_.is_some() && sh.priv_ != h.priv_ {
        diffs.push(Diff {
            element: "privilege mode".into(),
            expected: format!("{}{reset}", h.priv_),
            traced: format!("{}", sh.priv_),
        });
    }
    let flen = sh.flen;
    for &(addr, _) in &g.regs {
        let (r, s, bits) = if reg::is_gpr(addr) {
            let k = (addr - reg::GPR0) as usize;
            (h.x[k] & sh.xmask, sh.x[k] & sh.xmask, xb)
        } else if reg::is_fpr(addr) {
            let k = (addr - reg::FPR0) as usize;
            let m = |v| mask_bits(v, flen.max(1));
            (m(h.f[k]), m(sh.f[k]), flen)
        } else if reg::is_csr(addr) && !csr_nondet(addr) {
            let c = canonical_csr(addr);
            let r = h.csr_read(c).unwrap_or(0) & sh.xmask;
            (r, sh.csr[c as usize], xb)
        } else {
            continue;
        };
        if r != s {
            diffs.push(Diff {
                element: reg_name(addr),
                expected: format!("{}{reset}", hex(r, bits)),
                traced: hex(s, bits),
            });
        }
    }
}
