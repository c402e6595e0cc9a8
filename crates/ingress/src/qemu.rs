//! QEMU's execution log (`qemu-system-riscv64 ... -d exec,nochain,int -D LOG`, with one instruction
//! per translation block: `-singlestep` on QEMU 7.2, `-accel tcg,one-insn-per-tb=on` from 8.1) as
//! [`Step`]s. One hart.
//!
//! Lines:
//! * `Trace 0: HOST [CS_BASE/PC/FLAGS/CFLAGS] SYM`: the instruction at PC executed (one
//!   instruction per block). The low two bits of FLAGS are the privilege (QEMU `TB_FLAGS`
//!   `MEM_IDX`: 0 U, 1 S, 3 M). Whether it retired is known at the next line:
//! * `Stopped execution of TB chain before HOST [PC] SYM`: QEMU logged the block but left it
//!   before its first instruction (an interrupt request); it is logged again when it really runs.
//! * `riscv_cpu_do_interrupt: hart:0, async:A, cause:C, epc:E, tval:T, desc=D`: a trap.
//!   `async:0` is an exception of the last executed instruction (PC = E), which retired only for a
//!   breakpoint (C=3) or an `ecall` (C=8, 9, 11), or an instruction access/page fault (C=1, 12)
//!   or an execute trigger's breakpoint (C=3: QEMU checks its breakpoints before it translates
//!   the block) at E, which was never executed (the last executed instruction retired; a
//!   PMP-denied jump target); `async:1` is an interrupt taken before E.
//!
//! A breakpoint at the last executed instruction is an `ebreak`'s, which retires, or a load or
//! store trigger's (Sdtrig), which does not: the log does not say which. Given the program's
//! code ([`QemuLogReader::with_code`]) the reader looks at the instruction; without it every
//! such breakpoint retires.
//! * Blank lines are skipped; any other line is an error, so that a change of QEMU's log format
//!   cannot go unnoticed.
//!
//! Semihosting calls (`ebreak` between the marker instructions) are serviced by QEMU without an
//! `riscv_cpu_do_interrupt` line: they appear as three instructions that retired in sequence.
//! QEMU's reset stub (at 0x1000) runs before the ELF entry point: wrap the reader in
//! [`StartAt`](crate::pcs::StartAt) to drop it.

use std::collections::VecDeque;
use std::io::BufRead;

use crate::pcs::{retires_with_exception, Step, StepSource};
use crate::IngressError;

const FORMAT: &str = "QEMU log";

/// Reads a QEMU `-d exec,nochain,int` log (module doc).
pub struct QemuLogReader<R: BufRead> {
    inner: R,
    line: Vec<u8>,
    line_no: u64,
    /// The latest executed instruction (line, pc, privilege), not yet known to have retired.
    last: Option<(u64, u64, Option<u8>)>,
    /// Privilege of the block QEMU stopped before (an interrupt's `from` privilege).
    stopped: Option<(u64, Option<u8>)>,
    out: VecDeque<(u64, Step)>,
    done: bool,
    /// The instruction bits at an address, if known ([`QemuLogReader::with_code`]).
    code: Option<Box<dyn Fn(u64) -> Option<u32>>>,
}

/// Hex number after `key` in `line` (up to the next ',' or space), `0x` optional.
fn field_hex(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let end = rest.find([',', ' ']).unwrap_or(rest.len());
    crate::pcs::parse_pc(&rest[..end])
}

/// The fields inside the first `[...]`, split at '/'.
fn bracket(line: &str) -> Option<Vec<&str>> {
    let inner = &line[line.find('[')? + 1..];
    let inner = &inner[..inner.find(']')?];
    Some(inner.split('/').collect())
}

impl<R: BufRead> QemuLogReader<R> {
    /// A reader of `r`.
    pub fn new(r: R) -> Self {
        QemuLogReader {
            inner: r,
            line: Vec::new(),
            line_no: 0,
            last: None,
            stopped: None,
            out: VecDeque::new(),
            done: false,
            code: None,
        }
    }

    /// A reader of `r` that knows the program's instructions (`code(pc)`: the 16 or 32 bits at
    /// `pc`), so that a breakpoint on an instruction other than `ebreak`/`c.ebreak` (a debug
    /// trigger's, on a load or store) does not retire it.
    pub fn with_code(r: R, code: impl Fn(u64) -> Option<u32> + 'static) -> Self {
        QemuLogReader {
            code: Some(Box::new(code)),
            ..QemuLogReader::new(r)
        }
    }

    /// Whether the exception `cause` taken at `pc` (the instruction executed) retires it.
    fn retires(&self, cause: u64, pc: u64) -> bool {
        const EBREAK: u32 = 0x0010_0073;
        const C_EBREAK: u32 = 0x9002;
        match (cause, &self.code) {
            (3, Some(code)) => match code(pc) {
                Some(bits) if bits & 3 == 3 => bits == EBREAK,
                Some(bits) => bits & 0xffff == C_EBREAK,
                None => true,
            },
            _ => retires_with_exception(cause),
        }
    }

    fn retire_last(&mut self) {
        if let Some((line, pc, priv_)) = self.last.take() {
            self.out.push_back((line, Step::Retired { pc, priv_ }));
        }
    }

    /// Reads lines until at least one step is queued or the log ends.
    fn fill(&mut self) -> Result<(), IngressError> {
        while self.out.is_empty() && !self.done {
            self.line.clear();
            if self.inner.read_until(b'\n', &mut self.line)? == 0 {
                self.done = true;
                self.retire_last();
                break;
            }
            self.line_no += 1;
            let n = self.line_no;
            let text = String::from_utf8_lossy(&self.line);
            let line = text.trim_end();
            let bad = |why: &str| IngressError::parse(FORMAT, n, format!("{why}: {line:?}"));
            if line.starts_with("Trace ") {
                let f = bracket(line).ok_or_else(|| bad("no [CS_BASE/PC/FLAGS/CFLAGS]"))?;
                let pc = f.get(1).and_then(|p| crate::pcs::parse_pc(p));
                let pc = pc.ok_or_else(|| bad("no PC"))?;
                let priv_ = f
                    .get(2)
                    .and_then(|p| crate::pcs::parse_pc(p))
                    .map(|flags| (flags & 3) as u8)
                    .filter(|&p| p != 2);
                self.retire_last();
                self.stopped = None;
                self.last = Some((n, pc, priv_));
            } else if line.starts_with("Stopped execution of TB chain before ") {
                let f = bracket(line).ok_or_else(|| bad("no [PC]"))?;
                let pc = f.first().and_then(|p| crate::pcs::parse_pc(p));
                let pc = pc.ok_or_else(|| bad("no PC"))?;
                match self.last.take() {
                    Some((_, l, priv_)) if l == pc => self.stopped = Some((pc, priv_)),
                    _ => return Err(bad("not the block logged just before")),
                }
            } else if line.starts_with("riscv_cpu_do_interrupt: ") {
                let cause = field_hex(line, "cause:").ok_or_else(|| bad("no cause"))?;
                let epc = field_hex(line, "epc:").ok_or_else(|| bad("no epc"))?;
                let tval = field_hex(line, "tval:");
                // Raised before the instruction at `epc` was translated (the breakpoint of an
                // `ebreak`, or a load/store trigger's, is at the last executed instruction).
                let fetch_fault = matches!(cause, 1 | 12 | 3);
                if line.contains("async:0,")
                    && fetch_fault
                    && self.last.is_none_or(|(_, pc, _)| pc != epc)
                {
                    // An instruction access or page fault at `epc`, raised while QEMU
                    // translated the block there, or an execute trigger's breakpoint, raised
                    // before that, both at a block that is never logged: the last executed
                    // instruction (a jump, `xret`) retired; the privilege at `epc` is not
                    // in the log.
                    self.retire_last();
                    self.out.push_back((
                        n,
                        Step::Trap {
                            cause,
                            interrupt: false,
                            epc,
                            tval,
                            priv_: None,
                        },
                    ));
                } else if line.contains("async:0,") {
                    let Some((l, pc, priv_)) = self.last.take() else {
                        return Err(bad("an exception with no instruction executed before it"));
                    };
                    if pc != epc {
                        return Err(bad("epc is not the last executed PC"));
                    }
                    if self.retires(cause, pc) {
                        self.out.push_back((l, Step::Retired { pc, priv_ }));
                    }
                    self.out.push_back((
                        n,
                        Step::Trap {
                            cause,
                            interrupt: false,
                            epc,
                            tval,
                            priv_,
                        },
                    ));
                } else if line.contains("async:1,") {
                    // The interrupt is taken before `epc`; the last executed instruction retired.
                    let from = match (self.stopped.take(), &self.last) {
                        (Some((pc, p)), _) if pc == epc => p,
                        (_, Some((_, _, p))) => *p,
                        _ => None,
                    };
                    self.retire_last();
                    self.out.push_back((
                        n,
                        Step::Trap {
                            cause,
                            interrupt: true,
                            epc,
                            tval,
                            priv_: from,
                        },
                    ));
                } else {
                    return Err(bad("neither async:0 nor async:1"));
                }
            } else if !line.is_empty() {
                return Err(bad("not a line of QEMU's -d exec,nochain,int log"));
            }
        }
        Ok(())
    }
}

impl<R: BufRead> StepSource for QemuLogReader<R> {
    fn next_step(&mut self) -> Result<Option<(u64, Step)>, IngressError> {
        self.fill()?;
        Ok(self.out.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcs::StartAt;

    /// A hand-written log with every kind of line.
    const LOG: &str = "\
Trace 0: 0x7f00 [0000000000000000/0000000000001000/00209003/ff000201] \n\
Trace 0: 0x7f01 [0000000000000000/0000000080000000/00209003/ff000201] _start\n\
Trace 0: 0x7f02 [0000000000000000/0000000080000004/00209003/ff000201] _start\n\
riscv_cpu_do_interrupt: hart:0, async:0, cause:0000000000000002, epc:0x0000000080000004, tval:0x0000000000000000, desc=illegal_instruction\n\
Trace 0: 0x7f03 [0000000000000000/0000000080000100/00209003/ff000201] \n\
riscv_cpu_do_interrupt: hart:0, async:0, cause:000000000000000b, epc:0x0000000080000100, tval:0x0000000000000000, desc=machine_ecall\n\
Trace 0: 0x7f04 [0000000000000000/0000000080000200/00209000/ff000201] \n\
Trace 0: 0x7f05 [0000000000000000/0000000080000202/00209000/ff000201] \n\
Stopped execution of TB chain before 0x7f05 [0000000080000202] \n\
riscv_cpu_do_interrupt: hart:0, async:1, cause:0000000000000007, epc:0x0000000080000202, tval:0x0000000000000000, desc=m_timer\n\
Trace 0: 0x7f06 [0000000000000000/0000000080000300/00209003/ff000201] \n\
riscv_cpu_do_interrupt: hart:0, async:0, cause:0000000000000003, epc:0x0000000080000300, tval:0x0000000000000000, desc=breakpoint\n\
Trace 0: 0x7f07 [0000000000000000/0000000080000400/00209003/ff000201] \n\
riscv_cpu_do_interrupt: hart:0, async:0, cause:0000000000000001, epc:0x0000000080000500, tval:0x0000000000000000, desc=fault_fetch\n";

    #[test]
    fn every_kind_of_line() {
        let mut r = StartAt::new(QemuLogReader::new(LOG.as_bytes()), Some(0x8000_0000));
        let mut got = Vec::new();
        while let Some(s) = r.next_step().unwrap() {
            got.push(s);
        }
        let ret = |pc, p| Step::Retired { pc, priv_: Some(p) };
        let trap = |cause, interrupt, epc, p| Step::Trap {
            cause,
            interrupt,
            epc,
            tval: Some(0),
            priv_: Some(p),
        };
        assert_eq!(
            got,
            [
                (2, ret(0x8000_0000, 3)),
                (4, trap(2, false, 0x8000_0004, 3)),
                (5, ret(0x8000_0100, 3)),
                (6, trap(11, false, 0x8000_0100, 3)),
                (7, ret(0x8000_0200, 0)),
                (10, trap(7, true, 0x8000_0202, 0)),
                (11, ret(0x8000_0300, 3)),
                (12, trap(3, false, 0x8000_0300, 3)),
                (13, ret(0x8000_0400, 3)),
                (
                    14,
                    Step::Trap {
                        cause: 1,
                        interrupt: false,
                        epc: 0x8000_0500,
                        tval: Some(0),
                        priv_: None,
                    }
                ),
            ]
        );
    }

    /// Sdtrig: an execute trigger's breakpoint before a block that is never logged, and (with
    /// the code known) a load trigger's at a load, which does not retire, next to an `ebreak`'s.
    #[test]
    fn trigger_breakpoints() {
        const LOG: &str = "\
Trace 0: 0x7f00 [0000000000000000/0000000080000000/00209003/ff000201] \n\
riscv_cpu_do_interrupt: hart:0, async:0, cause:0000000000000003, epc:0x0000000080000100, tval:0x0000000000000000, desc=breakpoint\n\
Trace 0: 0x7f01 [0000000000000000/0000000080000200/00209003/ff000201] \n\
riscv_cpu_do_interrupt: hart:0, async:0, cause:0000000000000003, epc:0x0000000080000200, tval:0x0000000000000000, desc=breakpoint\n\
Trace 0: 0x7f02 [0000000000000000/0000000080000300/00209003/ff000201] \n\
riscv_cpu_do_interrupt: hart:0, async:0, cause:0000000000000003, epc:0x0000000080000300, tval:0x0000000000000000, desc=breakpoint\n\
Trace 0: 0x7f03 [0000000000000000/0000000080000400/00209003/ff000201] \n\
riscv_cpu_do_interrupt: hart:0, async:0, cause:0000000000000003, epc:0x0000000080000400, tval:0x0000000000000000, desc=breakpoint\n";
        // 0x200: lw a0, 0(a0); 0x300: ebreak; 0x400: c.ebreak.
        let code = |pc| match pc {
            0x8000_0200 => Some(0x0005_2503),
            0x8000_0300 => Some(0x0010_0073),
            0x8000_0400 => Some(0x9002),
            _ => None,
        };
        let retired = |r: &mut dyn StepSource| {
            let mut pcs = Vec::new();
            while let Some((_, s)) = r.next_step().unwrap() {
                if let Step::Retired { pc, .. } = s {
                    pcs.push(pc);
                }
            }
            pcs
        };
        let mut r = QemuLogReader::with_code(LOG.as_bytes(), code);
        assert_eq!(
            retired(&mut r),
            [0x8000_0000, 0x8000_0300, 0x8000_0400],
            "with the code"
        );
        let mut r = QemuLogReader::new(LOG.as_bytes());
        assert_eq!(
            retired(&mut r),
            [0x8000_0000, 0x8000_0200, 0x8000_0300, 0x8000_0400],
            "without"
        );
    }

    #[test]
    fn errors_name_the_line() {
        for (bad, line) in [
            ("Trace 0: 0x7f00 [0/1000/3/0]\nbogus\n", 2),
            (
                "Trace 0: 0x7f00 [0/1000/3/0]\nStopped execution of TB chain before 0x1 [2000]\n",
                2,
            ),
            (
                "riscv_cpu_do_interrupt: hart:0, async:0, cause:2, epc:0x10, tval:0x0, desc=x\n",
                1,
            ),
            ("Trace 0: 0x7f00 [0/zz/3/0]\n", 1),
        ] {
            let mut r = QemuLogReader::new(bad.as_bytes());
            let e = loop {
                match r.next_step() {
                    Ok(Some(_)) => continue,
                    Ok(None) => panic!("{bad:?} accepted"),
                    Err(e) => break e,
                }
            };
            assert_eq!(e.line(), Some(line), "{bad:?}: {e}");
        }
    }
}
