//! Spike's commit log (`spike -l --log-commits prog.elf 2>LOG`) as [`Step`]s. One hart.
//!
//! Lines (all start with `core N:`):
//! * `core   0: 3 0x0000000080000000 (0x00000297) x5  0x0000000080000000`: a committed
//!   instruction: privilege (0 U, 1 S, 3 M), PC, instruction bits, then what it wrote.
//! * `core   0: exception trap_illegal_instruction, epc 0x0000000080000020`, optionally
//!   followed by `core   0:           tval 0x0000000000000000`: a trap (`-l` only). Spike names
//!   exceptions `trap_<name>` (or `trap #N`) and interrupts `interrupt #N`.
//! * `core   0: 0x0000000080000040 (0x0000050d) c.addi  a0, 3` (an executed instruction, `-l`)
//!   and `core   0: >>>>  fn` (a symbol): skipped.
//! * Blank lines are skipped; any other line is an error.
//!
//! Spike does not commit an instruction that traps, not even `ecall`/`ebreak`, which retire
//! (E-Trace `ingressPort.adoc`; N-Trace Table 2): for a breakpoint or `ecall` exception the
//! reader reports the instruction at `epc` as retired before the trap. **Without `-l`** the log
//! has no trap lines: faults and interrupts are then invisible and `ecall`/`ebreak` are missing,
//! like a plain PC list. The privilege of a trap is that of the last committed instruction (for
//! `ecall`, the one its cause names). Spike's boot ROM (at 0x1000) runs before the ELF entry point:
//! wrap the reader in [`StartAt`](crate::pcs::StartAt) to drop it.

use std::collections::VecDeque;
use std::io::BufRead;

use crate::pcs::{parse_pc, retires_with_exception, Step, StepSource};
use crate::IngressError;

const FORMAT: &str = "Spike log";

/// Exception names as Spike prints them (`trap_<name>`), with their `mcause` codes (Privileged
/// ISA, table "Machine cause register (mcause) values after trap").
const EXCEPTIONS: [(&str, u64); 20] = [
    ("instruction_address_misaligned", 0),
    ("instruction_access_fault", 1),
    ("illegal_instruction", 2),
    ("breakpoint", 3),
    ("load_address_misaligned", 4),
    ("load_access_fault", 5),
    ("store_address_misaligned", 6),
    ("store_access_fault", 7),
    ("user_ecall", 8),
    ("supervisor_ecall", 9),
    ("virtual_supervisor_ecall", 10),
    ("machine_ecall", 11),
    ("instruction_page_fault", 12),
    ("load_page_fault", 13),
    ("store_page_fault", 15),
    ("double_trap", 16),
    ("software_check_fault", 18),
    ("hardware_error_fault", 19),
    ("instruction_guest_page_fault", 20),
    ("load_guest_page_fault", 21),
];

/// Reads a Spike commit log (module doc).
pub struct SpikeLogReader<R: BufRead> {
    inner: R,
    line: Vec<u8>,
    line_no: u64,
    /// Privilege of the last committed instruction.
    priv_: Option<u8>,
    /// A trap line waiting for a possible `tval` line.
    trap: Option<(u64, Step)>,
    out: VecDeque<(u64, Step)>,
    done: bool,
}

impl<R: BufRead> SpikeLogReader<R> {
    /// A reader of `r`.
    pub fn new(r: R) -> Self {
        SpikeLogReader {
            inner: r,
            line: Vec::new(),
            line_no: 0,
            priv_: None,
            trap: None,
            out: VecDeque::new(),
            done: false,
        }
    }

    /// Parses one line into `self.trap` / `self.out`.
    fn line(&mut self) -> Result<(), IngressError> {
        let n = self.line_no;
        let text = String::from_utf8_lossy(&self.line);
        let line = text.trim();
        let bad = |why: &str| IngressError::parse(FORMAT, n, format!("{why}: {line:?}"));
        if line.is_empty() {
            return Ok(());
        }
        let rest = line
            .strip_prefix("core")
            .and_then(|r| r.split_once(':'))
            .map(|(_, r)| r.trim_start())
            .ok_or_else(|| bad("not a line of Spike's -l --log-commits log"))?;
        if !rest.starts_with("tval ") {
            // Any line but `tval` completes a trap line.
            self.out.extend(self.trap.take());
        }
        if let Some(t) = rest.strip_prefix("exception ") {
            let (name, epc) = t.split_once(", epc ").ok_or_else(|| bad("no epc"))?;
            let epc = parse_pc(epc.trim()).ok_or_else(|| bad("bad epc"))?;
            let (cause, interrupt) = if let Some(k) = name.strip_prefix("interrupt #") {
                (k.parse().map_err(|_| bad("bad interrupt number"))?, true)
            } else if let Some(k) = name.strip_prefix("trap #") {
                (k.parse().map_err(|_| bad("bad exception number"))?, false)
            } else {
                let e = name.strip_prefix("trap_").unwrap_or(name);
                let c = EXCEPTIONS.iter().find(|(m, _)| *m == e);
                (c.ok_or_else(|| bad("unknown exception name"))?.1, false)
            };
            let priv_ = match (interrupt, cause) {
                (false, 8) => Some(0),
                (false, 9) => Some(1),
                (false, 11) => Some(3),
                _ => self.priv_,
            };
            if !interrupt && retires_with_exception(cause) {
                // Spike does not commit ecall/ebreak; they retire (module doc).
                self.out.push_back((n, Step::Retired { pc: epc, priv_ }));
            }
            self.trap = Some((
                n,
                Step::Trap {
                    cause,
                    interrupt,
                    epc,
                    tval: None,
                    priv_,
                },
            ));
        } else if let Some(v) = rest.strip_prefix("tval ") {
            let v = parse_pc(v.trim()).ok_or_else(|| bad("bad tval"))?;
            match &mut self.trap {
                Some((_, Step::Trap { tval, .. })) if tval.is_none() => *tval = Some(v),
                _ => return Err(bad("tval without an exception line before it")),
            }
        } else if rest.starts_with(">>>>") || rest.starts_with("0x") {
            // A symbol, or an executed instruction (`-l`): the commit line follows if it retires.
        } else {
            let mut it = rest.split_ascii_whitespace();
            let p = it.next().and_then(|p| p.parse::<u8>().ok());
            let p = p.filter(|p| *p <= 3).ok_or_else(|| bad("no privilege"))?;
            let mut pc = it.next().ok_or_else(|| bad("no PC"))?;
            if pc == "V" {
                pc = it.next().ok_or_else(|| bad("no PC"))?;
            }
            let pc = parse_pc(pc).ok_or_else(|| bad("bad PC"))?;
            if !it.next().is_some_and(|i| i.starts_with("(0x")) {
                return Err(bad("no instruction bits"));
            }
            self.priv_ = Some(p);
            self.out
                .push_back((n, Step::Retired { pc, priv_: Some(p) }));
        }
        Ok(())
    }
}

impl<R: BufRead> StepSource for SpikeLogReader<R> {
    fn next_step(&mut self) -> Result<Option<(u64, Step)>, IngressError> {
        while self.out.is_empty() && !self.done {
            self.line.clear();
            if self.inner.read_until(b'\n', &mut self.line)? == 0 {
                self.done = true;
                self.out.extend(self.trap.take());
                break;
            }
            self.line_no += 1;
            self.line()?;
        }
        Ok(self.out.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcs::StartAt;

    const LOG: &str = "\
core   0: 3 0x0000000000001000 (0x00000297) x5  0x0000000000001000\n\
core   0: 0x0000000080000000 (0x00000297) auipc t0, 0x0\n\
core   0: 3 0x0000000080000000 (0x00000297) x5  0x0000000080000000\n\
core   0: >>>>  fn\n\
core   0: 3 0x0000000080000016 (0xfe941de3)\n\
core   0: 0x000000008000001a (0x00000073) ecall\n\
core   0: exception trap_machine_ecall, epc 0x000000008000001a\n\
core   0: >>>>  handler\n\
core   0: 3 0x0000000080000048 (0x341023f3) x7  0x000000008000001a\n\
core   0: 0x000000008000001e (0x00000000) c.unimp\n\
core   0: exception trap_illegal_instruction, epc 0x000000008000001e\n\
core   0:           tval 0x0000000000000000\n\
core   0: 0 0x0000000000010000 (0x4501) x10 0x0000000000000000\n\
core   0: exception interrupt #7, epc 0x0000000000010002\n\
core   0: exception trap_breakpoint, epc 0x0000000000010002\n\
core   0:           tval 0x0000000000010002\n";

    #[test]
    fn every_kind_of_line() {
        let mut r = StartAt::new(SpikeLogReader::new(LOG.as_bytes()), Some(0x8000_0000));
        let mut got = Vec::new();
        while let Some(s) = r.next_step().unwrap() {
            got.push(s);
        }
        let ret = |pc, p| Step::Retired { pc, priv_: Some(p) };
        let trap = |cause, interrupt, epc, tval, p| Step::Trap {
            cause,
            interrupt,
            epc,
            tval,
            priv_: Some(p),
        };
        assert_eq!(
            got,
            [
                (3, ret(0x8000_0000, 3)),
                (5, ret(0x8000_0016, 3)),
                (7, ret(0x8000_001a, 3)),
                (7, trap(11, false, 0x8000_001a, None, 3)),
                (9, ret(0x8000_0048, 3)),
                (11, trap(2, false, 0x8000_001e, Some(0), 3)),
                (13, ret(0x10000, 0)),
                (14, trap(7, true, 0x10002, None, 0)),
                (15, ret(0x10002, 0)),
                (15, trap(3, false, 0x10002, Some(0x10002), 0)),
            ]
        );
    }

    #[test]
    fn errors_name_the_line() {
        for (bad, line) in [
            ("core   0: 3 0x10 (0x1)\nhello\n", 2),
            ("core   0: 9 0x10 (0x1)\n", 1),
            ("core   0: 3 0x1g (0x1)\n", 1),
            ("core   0: exception trap_bogus, epc 0x10\n", 1),
            ("core   0:           tval 0x0\n", 1),
            ("core   0: exception trap_breakpoint\n", 1),
        ] {
            let mut r = SpikeLogReader::new(bad.as_bytes());
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
