//! Retired-instruction logs that list addresses, not ingress records: a plain PC list (this
//! module), QEMU's `-d exec,nochain,int` log ([`crate::qemu`]) and Spike's commit log
//! ([`crate::spike`]). Each reader yields [`Step`]s; `rvtrace_sim::import` turns them into
//! [`Record`](crate::Record)s with the program's ELF (the instruction at each PC and the next PC
//! give `itype`, `ilastsize`, `sijump`), by the same rules as the hart model's recorder.
//!
//! A **PC list** is one retired instruction address per line, `0x` + hex, as `rvtrace run --pcs`
//! and NexRv's PCONLY format write it (the `0x` is optional; blank lines and `#` comments are
//! skipped). What such a list cannot carry:
//! * faults: an instruction that faults does not retire and is not listed; its handler simply
//!   follows. The record for the trap (`iretire` 0, cause, tval) cannot be derived.
//! * interrupts: likewise invisible (the handler follows the interrupted instruction).
//! * `ecall`/`ebreak`: these retire, and their exception is derived (cause 3 for `ebreak`; 8, 9 or
//!   11 for `ecall` by the privilege); `tval` is taken as 0.
//! * privilege, context and time: not in the list (the privilege comes from an option).

use std::io::BufRead;

use crate::IngressError;

const FORMAT: &str = "PC list";

/// One event of a retired-instruction log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The instruction at `pc` retired (at privilege `priv_`, ingress encoding, when the log says).
    Retired {
        /// Address of the instruction.
        pc: u64,
        /// Privilege (0 U, 1 S, 3 M), if the log carries it.
        priv_: Option<u8>,
    },
    /// A trap was taken. For `ecall`/`ebreak` (cause 3, 8, 9, 11, not an interrupt) the
    /// instruction at `epc` retired with it and is the [`Step::Retired`] just before; for any
    /// other exception the instruction at `epc` did not retire; for an interrupt `epc` is the
    /// next instruction, not executed.
    Trap {
        /// Exception or interrupt code (without the interrupt bit).
        cause: u64,
        /// Interrupt (true) or exception.
        interrupt: bool,
        /// `mepc`/`sepc`.
        epc: u64,
        /// Trap value, if the log carries it.
        tval: Option<u64>,
        /// Privilege the trap was taken from, if the log says.
        priv_: Option<u8>,
    },
}

/// True for the exception causes whose instruction retires (`ebreak` 3, `ecall` 8, 9, 10 (from
/// VS-mode), 11): the ingress counts it in `iretire` (E-Trace's reference flow does; N-Trace 1.0
/// says these instructions do not retire, and its encoder leaves them out of I-CNT).
pub fn retires_with_exception(cause: u64) -> bool {
    matches!(cause, 3 | 8..=11)
}

/// A reader of [`Step`]s, each with the 1-based line number it came from.
pub trait StepSource {
    /// The next step, `Ok(None)` at the end of the log.
    fn next_step(&mut self) -> Result<Option<(u64, Step)>, IngressError>;
}

impl<S: StepSource + ?Sized> StepSource for Box<S> {
    fn next_step(&mut self) -> Result<Option<(u64, Step)>, IngressError> {
        (**self).next_step()
    }
}

/// Reads a PC list (module doc).
pub struct PcListReader<R: BufRead> {
    inner: R,
    line: String,
    line_no: u64,
}

impl<R: BufRead> PcListReader<R> {
    /// A reader of `r`.
    pub fn new(r: R) -> Self {
        PcListReader {
            inner: r,
            line: String::new(),
            line_no: 0,
        }
    }

    /// The next address and its line number, `Ok(None)` at the end.
    pub fn next_pc(&mut self) -> Result<Option<(u64, u64)>, IngressError> {
        loop {
            self.line.clear();
            if self.inner.read_line(&mut self.line)? == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let l = self.line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            return parse_pc(l)
                .map(|pc| Some((self.line_no, pc)))
                .ok_or_else(|| {
                    IngressError::parse(
                        FORMAT,
                        self.line_no,
                        format!("expected an address like 0x80000000, found {l:?}"),
                    )
                });
        }
    }
}

/// A hexadecimal address, `0x` optional.
pub(crate) fn parse_pc(s: &str) -> Option<u64> {
    let h = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if h.is_empty() || h.len() > 16 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

impl<R: BufRead> StepSource for PcListReader<R> {
    fn next_step(&mut self) -> Result<Option<(u64, Step)>, IngressError> {
        Ok(self
            .next_pc()?
            .map(|(line, pc)| (line, Step::Retired { pc, priv_: None })))
    }
}

/// Drops every step before the first [`Step::Retired`] at `start` (a simulator's reset code
/// before the ELF entry point: QEMU's reset stub and Spike's boot ROM at 0x1000).
pub struct StartAt<S> {
    inner: S,
    start: Option<u64>,
}

impl<S: StepSource> StartAt<S> {
    /// Steps of `inner` from the first instruction retired at `start` on (all of them for `None`).
    pub fn new(inner: S, start: Option<u64>) -> Self {
        StartAt { inner, start }
    }

    /// Whether the start address was seen (always true without one).
    pub fn started(&self) -> bool {
        self.start.is_none()
    }
}

impl<S: StepSource> StepSource for StartAt<S> {
    fn next_step(&mut self) -> Result<Option<(u64, Step)>, IngressError> {
        loop {
            let Some((line, step)) = self.inner.next_step()? else {
                return Ok(None);
            };
            match (self.start, step) {
                (None, _) => return Ok(Some((line, step))),
                (Some(s), Step::Retired { pc, .. }) if pc == s => {
                    self.start = None;
                    return Ok(Some((line, step)));
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pc_list() {
        let text = "0x80000000\n\n# c\n80000004\n0X10\n";
        let mut r = PcListReader::new(text.as_bytes());
        assert_eq!(r.next_pc().unwrap(), Some((1, 0x8000_0000)));
        assert_eq!(r.next_pc().unwrap(), Some((4, 0x8000_0004)));
        assert_eq!(r.next_pc().unwrap(), Some((5, 0x10)));
        assert_eq!(r.next_pc().unwrap(), None);
        for bad in ["0x", "0xg", "12345678901234567", "0x1 0x2"] {
            let text = format!("0x0\n{bad}\n");
            let mut r = PcListReader::new(text.as_bytes());
            r.next_pc().unwrap();
            let e = r.next_pc().unwrap_err();
            assert_eq!(e.line(), Some(2), "{bad}: {e}");
        }
    }

    #[test]
    fn start_at() {
        let text = "0x1000\n0x1004\n0x80000000\n0x1000\n";
        let mut s = StartAt::new(PcListReader::new(text.as_bytes()), Some(0x8000_0000));
        assert!(!s.started());
        let mut got = Vec::new();
        while let Some((line, Step::Retired { pc, .. })) = s.next_step().unwrap() {
            got.push((line, pc));
        }
        assert_eq!(got, [(3, 0x8000_0000), (4, 0x1000)]);
        assert!(s.started());
    }
}
