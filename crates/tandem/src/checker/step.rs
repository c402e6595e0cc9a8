//! One step of the reference (3.1 step 3): its events, interrupts, semihosting calls.

#[allow(unused_imports)]
use super::{check::*, compare::*, group::*, init::*, report::*, resync::*, shadow::*};
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
// The reference's events during one step.

#[derive(Default)]
pub(super) struct StepObserver {
    pub(super) retired: Option<Retired>,
    pub(super) trap: Option<TrapInfo>,
    pub(super) csrs: Vec<u16>,
    pub(super) mems: Vec<MemAccess>,
    /// Integer and floating-point registers written (bit n: register n).
    pub(super) gprs: u32,
    pub(super) fprs: u32,
    pub(super) done: bool,
}

impl StepObserver {
    pub(super) fn clear(&mut self) {
        self.retired = None;
        self.trap = None;
        self.csrs.clear();
        self.mems.clear();
        self.gprs = 0;
        self.fprs = 0;
        self.done = false;
    }
}

impl Observer for StepObserver {
    #[inline]
    fn retire(&mut self, ev: &Retired) {
        self.retired = Some(*ev);
        self.done = true;
    }
    #[inline]
    fn trap(&mut self, ev: &TrapInfo) {
        self.trap = Some(*ev);
        self.done = true;
    }
    #[inline]
    fn gpr_write(&mut self, rd: u8, _value: u64) {
        self.gprs |= 1 << (rd & 31);
    }
    #[inline]
    fn fpr_write(&mut self, rd: u8, _value: u64) {
        self.fprs |= 1 << (rd & 31);
    }
    #[inline]
    fn csr_write(&mut self, csr: u16, _value: u64) {
        self.csrs.push(canonical_csr(csr));
    }
    #[inline]
    fn mem_access(&mut self, acc: &MemAccess) {
        self.mems.push(*acc);
    }
    #[inline]
    fn stop_requested(&mut self) -> bool {
        self.done
    }
}

impl Checker {
    #[inline]
    pub(super) fn is_semihosting_call(&self, g: &Group) -> bool {
        // The traced instruction, or with instructions absent the one the reference is at.
        match g.insn {
            Some((0x0010_0073, 4)) => {}
            None if self.absent(Elements::INSN) => {}
            _ => return false,
        }
        if g.new_pc
            .is_some_and(|p| p != self.hart.pc.wrapping_add(4) & self.xmask)
        {
            return false;
        }
        // A trap instead of a sequential retire is an ordinary breakpoint.
        if g.regs
            .iter()
            .any(|&(a, _)| a == num::MCAUSE || a == num::SCAUSE)
        {
            return false;
        }
        self.hart.semihosting_sequence_at(self.hart.pc)
    }

    /// A semihosting call's results (the reference takes them from the trace): whether the
    /// trace has them, or why the checker cannot know them. True for the program's exit.
    pub(super) fn semihosting_results(&mut self, g: &Group, pc: u64) -> bool {
        use rvtrace_sim::semihost as sh;
        let op = (self.hart.x[10] & 0xffff_ffff) as u32;
        let a0 = g.regs.iter().any(|&(a, _)| a == reg::gpr(10));
        if matches!(op, sh::SYS_EXIT | sh::SYS_EXIT_EXTENDED) && !a0 {
            return true;
        }
        let writes_mem = matches!(
            op,
            sh::SYS_READ
                | sh::SYS_TMPNAM
                | sh::SYS_GET_CMDLINE
                | sh::SYS_HEAPINFO
                | sh::SYS_ELAPSED
        );
        let unknown_mem = writes_mem && g.mems.is_empty() && self.absent(Elements::MEM);
        if !a0 && !self.absent(Elements::GPR) {
            self.trace_diffs.push(Diff {
                element: reg_name(reg::gpr(10)),
                expected: "the call's result (every semihosting call but the exit returns one)"
                    .into(),
                traced: "no write".into(),
            });
        }
        // WRITEC and WRITE0 return a fixed value (QEMU 7.2, as the model): no host input.
        if a0 && matches!(op, sh::SYS_WRITEC | sh::SYS_WRITE0) {
            let want = sh::DEADBEEF & self.xmask;
            if self.x[10] & self.xmask != want {
                self.trace_diffs.push(Diff {
                    element: reg_name(reg::gpr(10)),
                    expected: format!("0x{want:x} (what WRITEC and WRITE0 return)"),
                    traced: format!("0x{:x}", self.x[10] & self.xmask),
                });
            }
        }
        if (!a0 && self.absent(Elements::GPR)) || unknown_mem {
            self.summary.unknown_results += 1;
            if self.summary.first_unknown.is_none() {
                self.summary.first_unknown = Some((self.summary.groups, pc));
            }
        }
        false
    }

    /// The cause of the interrupt a group shows (a write of `mcause`/`scause` with the
    /// interrupt bit, and no instruction).
    pub(super) fn traced_interrupt(&self, g: &Group) -> Option<u64> {
        if g.insn.is_some() {
            return None;
        }
        let top = self.xlen.bits() - 1;
        g.regs.iter().find_map(|&(a, u)| match (a, u) {
            (num::MCAUSE | num::SCAUSE, RegUpd::Full(v)) if (v >> top) & 1 == 1 => {
                Some(mask_bits(v, top))
            }
            _ => None,
        })
    }

    /// Take interrupt `code` in the reference, as the hart takes one (trap entry with `mideleg`).
    pub(super) fn force_interrupt(&mut self, code: u64) {
        let epc = self.hart.pc;
        self.obs.trap = Some(self.hart.take_trap(code, 0, true, epc));
    }

    /// Run the reference for one instruction or trap as the group asks. Returns the pc the
    /// instruction ran at, or `None` when the reference stopped.
    pub(super) fn run_reference(&mut self, g: &Group, semihosting: bool) -> Result<(), String> {
        self.obs.clear();
        if let Some(code) = self.traced_interrupt(g) {
            if self.hart.pending_interrupt().is_none() {
                self.force_interrupt(code);
                return Ok(());
            }
        } else if semihosting {
            // Host I/O is not repeated: the call retires, its results come from the trace (also
            // from a partial trace without gpr or mem: they are non-deterministic input, 3.1
            // step 2, and `rvtrace run` writes them).
            let h = &mut self.hart;
            let pc = h.pc;
            h.retire_serviced_call(4);
            for &(addr, _) in &g.regs {
                if reg::is_gpr(addr) {
                    let r = (addr - reg::GPR0) as usize;
                    if r != 0 {
                        h.x[r] = self.x[r];
                        self.obs.gprs |= 1 << r;
                    }
                }
            }
            for m in &g.mems {
                if let (Some(d), true) = (m.data, mem_op::request_has_data(m.op)) {
                    let n = 1usize << m.size;
                    let _ = h.bus.write_ram(m.addr, &d.to_le_bytes()[..n]);
                    self.obs.mems.push(MemAccess {
                        addr: m.addr,
                        size: n as u8,
                        value: d,
                        kind: MemKind::Store,
                    });
                }
            }
            self.obs.retired = Some(Retired {
                pc,
                insn: 0x0010_0073,
                len: 4,
                class: rvtrace_isa::CfClass::None,
                next_pc: h.pc,
                priv_: h.priv_,
                trap: None,
                serviced: Some(rvtrace_sim::extension::Serviced {
                    by: rvtrace_sim::extension::Serviced::UNKNOWN,
                    cause: rvtrace_sim::cause::BREAKPOINT as u8,
                }),
                mtime: h.mtime(),
            });
            return Ok(());
        }
        // Hold off an interrupt the trace does not show.
        let hold = g.insn.is_some() && self.hart.pending_interrupt().is_some();
        let saved_mie = self.hart.csr.mie;
        if hold {
            self.hart.csr.mie = 0;
        }
        let stop = self.hart.run(&mut self.obs, u64::MAX);
        if hold && !self.obs.csrs.contains(&num::MIE) {
            self.hart.csr.mie = saved_mie;
        }
        match stop {
            Stop::Requested => Ok(()),
            Stop::Exit(c) => Err(format!("the program exited with status {c}")),
            Stop::InsnLimit => Err("instruction limit".into()),
            Stop::Error(m) => Err(m),
        }
    }
}
