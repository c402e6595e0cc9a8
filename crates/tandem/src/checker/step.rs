//! One step of the reference (3.1 step 3: "Attempt to execute a single instruction in the
//! tandem verifier"): the events the hart reports during it, an interrupt the trace shows taken
//! and one it does not show held off, and a semihosting call retired with its results from the
//! trace instead of host I/O (non-deterministic input, 3.1 step 2).

use super::group::{Group, RegUpd};
use super::report::Diff;
use super::shadow::{canonical_csr, Shadow};
use crate::codec::{mask_bits, mem_op, reg};
use crate::dump::reg_name;
use crate::meta::Elements;
use rvtrace_sim::csr::num;
use rvtrace_sim::{Hart, MemAccess, MemKind, Observer, Retired, Stop, TrapInfo};

/// Why the reference stopped during a step ([`StepObserver::step`]): how its run ended.
pub(super) struct Stopped(pub(super) Stop);

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Stop::Exit(c) => write!(f, "the program exited with status {c}"),
            Stop::InsnLimit => f.write_str("instruction limit"),
            Stop::Error(m) => f.write_str(m),
            Stop::Requested => f.write_str("stopped"),
        }
    }
}

/// The reference's events during one step.
#[derive(Default)]
pub(super) struct StepObserver {
    pub(super) retired: Option<Retired>,
    pub(super) trap: Option<TrapInfo>,
    /// CSRs written with a hook (canonical numbers).
    pub(super) csrs: Vec<u16>,
    pub(super) mems: Vec<MemAccess>,
    /// Integer and floating-point registers written (bit n: register n).
    pub(super) gprs: u32,
    pub(super) fprs: u32,
    done: bool,
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

    /// Run the reference `h` for one instruction or trap as the group asks (`semihosting`: the
    /// group is a semihosting call, [`is_semihosting_call`]), recording its events. `Err` when
    /// the reference stopped (why).
    pub(super) fn step(
        &mut self,
        h: &mut Hart,
        sh: &Shadow,
        g: &Group,
        semihosting: bool,
    ) -> Result<(), Stopped> {
        self.clear();
        if let Some(code) = traced_interrupt(g, sh) {
            if h.pending_interrupt().is_none() {
                // Taken as the hart takes one (trap entry with `mideleg`).
                let epc = h.pc;
                self.trap = Some(h.take_trap(code, 0, true, epc));
                return Ok(());
            }
        } else if semihosting {
            // Host I/O is not repeated: the call retires, its results come from the trace (also
            // from a partial trace without gpr or mem: they are non-deterministic input, 3.1
            // step 2, and `rvtrace run` writes them).
            let pc = h.pc;
            h.retire_serviced_call(4);
            for &(addr, _) in &g.regs {
                if reg::is_gpr(addr) {
                    let r = (addr - reg::GPR0) as usize;
                    if r != 0 {
                        h.x[r] = sh.x[r];
                        self.gprs |= 1 << r;
                    }
                }
            }
            for m in &g.mems {
                if let (Some(d), true) = (m.data, mem_op::request_has_data(m.op)) {
                    let n = 1usize << m.size;
                    let _ = h.bus.write_ram(m.addr, &d.to_le_bytes()[..n]);
                    self.mems.push(MemAccess {
                        addr: m.addr,
                        size: n as u8,
                        value: d,
                        kind: MemKind::Store,
                    });
                }
            }
            self.retired = Some(Retired {
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
        let hold = g.insn.is_some() && h.pending_interrupt().is_some();
        let saved_mie = h.csr.mie;
        if hold {
            h.csr.mie = 0;
        }
        let stop = h.run(self, u64::MAX);
        if hold && !self.csrs.contains(&num::MIE) {
            h.csr.mie = saved_mie;
        }
        match stop {
            Stop::Requested => Ok(()),
            stop => Err(Stopped(stop)),
        }
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

/// The CSRs trap entry, `mret`/`sret` and FP instructions change without a hook, in the order
/// of [`implicit_csrs`].
pub(super) const IMPLICIT_CSRS: [u16; 9] = [
    num::MSTATUS,
    num::FCSR,
    num::MEPC,
    num::MCAUSE,
    num::MTVAL,
    num::SEPC,
    num::SCAUSE,
    num::STVAL,
    num::MIE,
];

/// The values of [`IMPLICIT_CSRS`] in `h`.
pub(super) fn implicit_csrs(h: &Hart) -> [u64; 9] {
    let c = &h.csr;
    [
        c.mstatus,
        ((c.frm as u64) << 5) | c.fflags as u64,
        c.mepc,
        c.mcause,
        c.mtval,
        c.sepc,
        c.scause,
        c.stval,
        c.mie,
    ]
}

/// Whether the group is a semihosting call of the reference `h` (the call sequence at its pc):
/// the traced instruction an `ebreak` (or, with instructions absent, the one the reference is
/// at) that retires to the next one.
#[inline]
pub(super) fn is_semihosting_call(h: &Hart, g: &Group, absent: Elements, xmask: u64) -> bool {
    match g.insn {
        Some((0x0010_0073, 4)) => {}
        None if absent.has(Elements::INSN) => {}
        _ => return false,
    }
    if g.new_pc.is_some_and(|p| p != h.pc.wrapping_add(4) & xmask) {
        return false;
    }
    // A trap instead of a sequential retire is an ordinary breakpoint.
    if g.regs
        .iter()
        .any(|&(a, _)| a == num::MCAUSE || a == num::SCAUSE)
    {
        return false;
    }
    h.semihosting_sequence_at(h.pc)
}

/// What the trace carries of a semihosting call's results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CallResults {
    /// The call is the program's exit (no results).
    Exit,
    /// The trace has them (or shows they are missing: a difference was reported).
    Known,
    /// A partial trace lacks them: the checker cannot know what the host returned.
    Unknown,
}

/// A semihosting call's results (the reference takes them from the trace): whether the trace
/// has them; what it shows wrong goes to `diffs`.
pub(super) fn semihosting_results(
    h: &Hart,
    sh: &Shadow,
    g: &Group,
    absent: Elements,
    diffs: &mut Vec<Diff>,
) -> CallResults {
    use rvtrace_semihost as sh_;
    let op = (h.x[10] & 0xffff_ffff) as u32;
    let a0 = g.regs.iter().any(|&(a, _)| a == reg::gpr(10));
    if matches!(op, sh_::SYS_EXIT | sh_::SYS_EXIT_EXTENDED) && !a0 {
        return CallResults::Exit;
    }
    let writes_mem = matches!(
        op,
        sh_::SYS_READ
            | sh_::SYS_TMPNAM
            | sh_::SYS_GET_CMDLINE
            | sh_::SYS_HEAPINFO
            | sh_::SYS_ELAPSED
    );
    let unknown_mem = writes_mem && g.mems.is_empty() && absent.has(Elements::MEM);
    if !a0 && !absent.has(Elements::GPR) {
        diffs.push(Diff {
            element: reg_name(reg::gpr(10)),
            expected: "the call's result (every semihosting call but the exit returns one)".into(),
            traced: "no write".into(),
        });
    }
    // WRITEC and WRITE0 return a fixed value (QEMU 7.2, as the model): no host input.
    if a0 && matches!(op, sh_::SYS_WRITEC | sh_::SYS_WRITE0) {
        let want = sh_::DEADBEEF & sh.xmask;
        if sh.x[10] & sh.xmask != want {
            diffs.push(Diff {
                element: reg_name(reg::gpr(10)),
                expected: format!("0x{want:x} (what WRITEC and WRITE0 return)"),
                traced: format!("0x{:x}", sh.x[10] & sh.xmask),
            });
        }
    }
    if (!a0 && absent.has(Elements::GPR)) || unknown_mem {
        CallResults::Unknown
    } else {
        CallResults::Known
    }
}

/// The cause of the interrupt a group shows (a write of `mcause`/`scause` with the interrupt
/// bit, and no instruction).
fn traced_interrupt(g: &Group, sh: &Shadow) -> Option<u64> {
    if g.insn.is_some() {
        return None;
    }
    let top = sh.xlen.bits() - 1;
    g.regs.iter().find_map(|&(a, u)| match (a, u) {
        (num::MCAUSE | num::SCAUSE, RegUpd::Full(v)) if (v >> top) & 1 == 1 => {
            Some(mask_bits(v, top))
        }
        _ => None,
    })
}
