//! State initialization (chapter 3): the program load against the ELF, the groups that set state.

#[allow(unused_imports)]
use super::{check::*, compare::*, group::*, report::*, resync::*, shadow::*, step::*};
#[allow(unused_imports)]
use crate::codec::{
    decode_record, mask_bits, mem_op, reg, AddlState, DecodeError, ErrorKind, Params, Record,
};
#[allow(unused_imports)]
use crate::dump::{priv_name, reg_name};
#[allow(unused_imports)]
use crate::meta::Elements;
#[allow(unused_imports)]
use crate::producer::canonical_csr;
#[allow(unused_imports)]
use rvtrace_image::Image;
#[allow(unused_imports)]
use rvtrace_isa::disasm::disasm;
#[allow(unused_imports)]
use rvtrace_isa::Xlen;
#[allow(unused_imports)]
use rvtrace_sim::bus::Clint;
#[allow(unused_imports)]
use rvtrace_sim::csr::{irq, mstatus, num, Csrs};
#[allow(unused_imports)]
use rvtrace_sim::decode::{decode, Op};
#[allow(unused_imports)]
use rvtrace_sim::{Hart, MemAccess, MemKind, Observer, Retired, Stop, TrapInfo};
#[allow(unused_imports)]
use std::fmt;
#[allow(unused_imports)]
use std::io::Read;

// ---------------------------------------------------------------------------------------------
// The program: the ELF's loadable contents, to compare the trace's initial memory with.

/// A loaded segment: physical base, the ELF's bytes, and which bytes the trace's initial memory
/// wrote (one bit each).
pub(super) struct Segment {
    pub(super) base: u64,
    pub(super) data: Vec<u8>,
    pub(super) covered: Vec<u64>,
}

#[derive(Default)]
pub(super) struct Program {
    pub(super) segs: Vec<Segment>,
    /// Bytes the trace's initial memory wrote.
    pub(super) bytes: u64,
    /// The lowest differing address so far: address, ELF's value, trace's value, group, offset.
    pub(super) first: Option<(u64, String, String, u64, u64)>,
    pub(super) count: u64,
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

    pub(super) fn differ(
        &mut self,
        addr: u64,
        elf: String,
        traced: String,
        group: u64,
        offset: u64,
    ) {
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
    pub(super) fn uncovered(&mut self, group: u64, offset: u64) {
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
}

impl Checker {
    /// The program load is over: the trace's initial memory against the ELF's.
    pub(super) fn finish_program(&mut self, report: &mut dyn FnMut(&Mismatch)) {
        let p = &mut self.program;
        let expected =
            !self.opts.absent.has(Elements::INIT) && !self.opts.absent.has(Elements::MEM);
        if p.bytes == 0 && !expected {
            self.summary.program = ProgramCheck::NotInTrace;
            return;
        }
        p.uncovered(self.summary.groups, self.summary.bytes);
        let Some((addr, elf, traced, group, offset)) = p.first.clone() else {
            self.summary.program = ProgramCheck::Same { bytes: p.bytes };
            return;
        };
        let count = p.count;
        self.summary.program = ProgramCheck::Differs {
            addr,
            elf: elf.clone(),
            traced: traced.clone(),
            count,
        };
        self.summary.mismatches += 1;
        report(&Mismatch {
            group,
            offset,
            pc: self.hart.pc,
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
        });
    }

    /// A state initialization group, a hart reset, or updates outside any group: applied to
    /// the shadow and to the reference alike (chapter 3: "changes to program state outside of
    /// the processor that must be copied to the shadow state but cannot be modeled"). Before
    /// the first instruction (the program load), what they set is compared with what the
    /// reference loaded: registers with its reset state, memory with the ELF.
    pub(super) fn apply_init(&mut self, g: &Group, report: &mut dyn FnMut(&Mismatch)) {
        self.trace_diffs.clear();
        self.apply_shadow(g, 0);
        let mut diffs = std::mem::take(&mut self.trace_diffs);
        diffs.extend(Self::ambiguity(g));
        if !self.running {
            self.compare_init(g, &mut diffs);
        }
        if !self.absent(Elements::GPR) {
            self.x[0] = 0;
            self.hart.x = self.x;
        }
        if !self.absent(Elements::FPR) {
            self.hart.f = self.f;
        }
        if !self.absent(Elements::PC) {
            self.hart.pc = self.pc;
        }
        if !self.absent(Elements::PRIV) {
            self.hart.priv_ = self.priv_;
        }
        if !self.absent(Elements::CSR) {
            let cs = std::mem::take(&mut self.traced_csrs);
            for &c in &cs {
                self.copy_csr_to_ref(c);
            }
            self.traced_csrs = cs;
        }
        for m in &g.mems {
            if m.op != mem_op::STORE {
                // State initialization writes memory (chapter 3); nothing else is meant there.
                diffs.push(Diff {
                    element: format!("memory request at 0x{:x}", m.addr),
                    expected: "a store (state initialization)".into(),
                    traced: mem_op::name(m.op).into(),
                });
                continue;
            }
            if let Some(d) = m.data {
                let n = 1usize << m.size;
                let in_ram = self.hart.bus.ram_offset(m.addr, n as u64).is_some();
                if !self.running {
                    let (grp, off) = (self.summary.groups, g.offset);
                    self.program.store(m.addr, n, d, in_ram, grp, off);
                } else if !in_ram {
                    diffs.push(Diff {
                        element: format!("memory at 0x{:x} ({n} bytes)", m.addr),
                        expected: "the hart's memory".into(),
                        traced: "a store outside it".into(),
                    });
                }
                let _ = self.hart.bus.write_ram(m.addr, &d.to_le_bytes()[..n]);
            }
        }
        self.copy_nondet(g);
        if !diffs.is_empty() {
            self.summary.mismatches += 1;
            report(&Mismatch {
                group: self.summary.groups,
                offset: g.offset,
                pc: self.hart.pc,
                insn: None,
                disasm: if g.grouped {
                    "state initialization".into()
                } else {
                    "updates outside any group".into()
                },
                diffs,
            });
        }
    }

    /// The registers a group of the program load sets, against the reference's reset state
    /// (the shadow has the group applied, the reference not yet).
    pub(super) fn compare_init(&mut self, g: &Group, diffs: &mut Vec<Diff>) {
        let xb = self.xlen.bits();
        let hex = |v: u64, bits: u32| format!("0x{:0w$x}", v, w = (bits as usize).div_ceil(4));
        let reset = " (the reset state)";
        if g.new_pc.is_some() && self.pc != self.hart.pc {
            diffs.push(Diff {
                element: "pc".into(),
                expected: format!("{} (the ELF's entry)", hex(self.hart.pc, xb)),
                traced: hex(self.pc, xb),
            });
        }
        if g.priv_.is_some() && self.priv_ != self.hart.priv_ {
            diffs.push(Diff {
                element: "privilege mode".into(),
                expected: format!("{}{reset}", self.hart.priv_),
                traced: format!("{}", self.priv_),
            });
        }
        let flen = self.opts.params.flen;
        for &(addr, _) in &g.regs {
            let (r, s, bits) = if reg::is_gpr(addr) {
                let k = (addr - reg::GPR0) as usize;
                (self.hart.x[k] & self.xmask, self.x[k] & self.xmask, xb)
            } else if reg::is_fpr(addr) {
                let k = (addr - reg::FPR0) as usize;
                let m = |v| mask_bits(v, flen.max(1));
                (m(self.hart.f[k]), m(self.f[k]), flen)
            } else if reg::is_csr(addr) && !csr_nondet(addr) {
                let c = canonical_csr(addr);
                let r = self.hart.csr_read(c).unwrap_or(0) & self.xmask;
                (r, self.csr[c as usize], xb)
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
}
