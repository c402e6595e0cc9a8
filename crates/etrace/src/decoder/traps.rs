//! Traps: their elements, the handlers learnt (implicit exception mode) and the EPC of a trap
//! reported now.

use rvtrace_flow::{FlowElement, FlowSink};
use rvtrace_isa::CfClass;

use super::error::DecodeError;
use super::state::PendingTrap;
use super::Decoder;

impl<'a> Decoder<'a> {
    pub(super) fn emit_trap<S: FlowSink + ?Sized>(
        &mut self,
        t: &PendingTrap,
        handler: Option<u64>,
        s: &mut S,
    ) {
        self.emit(
            FlowElement::Trap {
                cause: Some(t.ecause),
                interrupt: t.interrupt,
                tval: t.tval,
                epc: t.epc,
                handler,
            },
            s,
        );
    }

    pub(super) fn learn_handler(&mut self, t: &PendingTrap, handler: u64) {
        let key = (t.interrupt, t.ecause);
        match self.s.tvec.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = handler,
            None => self.s.tvec.push((key, handler)),
        }
    }

    /// The handler of a trap packet: its address, or in implicit exception mode the handler
    /// last reported for the same cause (rvtrace's encoder omits the address only then; see the
    /// crate README).
    pub(super) fn handler(
        &mut self,
        addr: Option<u64>,
        interrupt: bool,
        ecause: u64,
    ) -> Result<u64, DecodeError> {
        match addr {
            Some(a) => {
                let key = (interrupt, ecause);
                match self.s.tvec.iter_mut().find(|(k, _)| *k == key) {
                    Some(e) => e.1 = a,
                    None => self.s.tvec.push((key, a)),
                }
                Ok(a)
            }
            None => {
                let found = self
                    .s
                    .tvec
                    .iter()
                    .find(|(k, _)| *k == (interrupt, ecause))
                    .map(|e| e.1);
                // A handler learnt before a chunk's start is not in its table.
                self.guess_read |= found.is_none() && self.s.guessing;
                found.ok_or(DecodeError::UnknownHandler { interrupt, ecause })
            }
        }
    }

    /// An exception whose cause contradicts the instruction at its EPC (the privileged spec's
    /// `mcause` table): an environment call (causes 8-11) is raised by an `ecall`, and an
    /// `ecall` raises nothing else but a fetch fault or a breakpoint. A damaged packet, or a
    /// path that went astray.
    pub(super) fn check_trap(
        &self,
        epc: Option<u64>,
        interrupt: bool,
        ecause: u64,
    ) -> Result<(), DecodeError> {
        const ECALL: u64 = 0x0000_0073;
        let Some(epc) = epc else { return Ok(()) };
        if interrupt {
            return Ok(());
        }
        let is_ecall = self.cur.image().fetch(epc).map(|w| w as u64) == Some(ECALL);
        let env_call = (8..=11).contains(&ecause);
        // Instruction address misaligned/access fault/page fault, breakpoint, guest page fault.
        let fetch_or_debug = matches!(ecause, 0 | 1 | 3 | 12 | 20);
        if env_call && !is_ecall {
            return Err(DecodeError::Unexpected(
                "an environment call trap where the path has no ecall",
            ));
        }
        if is_ecall && !env_call && !fetch_or_debug {
            return Err(DecodeError::Unexpected(
                "an ecall trapped with a cause other than an environment call",
            ));
        }
        Ok(())
    }

    /// `decoder.adoc` `exception_address`, without moving the decoder: the EPC of a trap
    /// reported now.
    pub(super) fn exception_address(&self, thaddr: bool, addr: Option<u64>) -> Option<u64> {
        let pc = self.cur.pc;
        let i = self.cur.insn_of(pc, self.cur.code().ent(pc)?);
        if i.class.is_uninferable_discon() && !thaddr {
            return addr;
        }
        if i.class == CfClass::EnvTrap {
            return Some(pc);
        }
        match i.class {
            CfClass::None => Some(i.seq),
            CfClass::Branch => match self.peek_branch()? {
                true => i.target,
                false => Some(i.seq),
            },
            // Zcmt table jumps: the target is in the jump table, not known here.
            c if c.is_inferable() => i.target,
            // An uninferable transfer with `thaddr` = 1: `address` is the handler, and where
            // the transfer went (the epc) is not in the packet.
            _ if thaddr => None,
            _ => addr,
        }
    }
}
