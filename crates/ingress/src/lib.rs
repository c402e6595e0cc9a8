//! The ingress stream: one [`Record`] per retired instruction (or block) as the E-Trace ingress port
//! (`etrace-v2.0/ingressPort.adoc`, "Instruction Trace Interface") defines it, plus file formats.
//!
//! N-Trace uses the same ingress port (N-Trace chapter 2).

pub use rvtrace_isa::Itype;

/// Privilege level encoding of the ingress port (`ingressPort.adoc`, table "Privilege level (priv) encoding").
pub mod privilege {
    /// User mode.
    pub const U: u8 = 0;
    /// Supervisor (or hypervisor-extended supervisor) mode.
    pub const S: u8 = 1;
    /// Machine mode.
    pub const M: u8 = 3;
    /// Debug mode.
    pub const D: u8 = 4;
    /// Virtual user mode.
    pub const VU: u8 = 5;
    /// Virtual supervisor mode.
    pub const VS: u8 = 6;
}

/// One ingress-port cycle: a block of instructions retired together (the hart model retires one
/// instruction per record), or a trap with no instruction retired.
///
/// Field names follow `ingressPort.adoc` tables "Instruction interface signals".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Address of the first instruction retired in this block; for `itype` 1 with `iretire` 0, the
    /// address of the instruction that incurred the exception; for `itype` 2 with `iretire` 0, the
    /// address the interrupt was taken at (the interrupted `epc`).
    pub iaddr: u64,
    /// Number of half-words represented by the instructions retired in this block (0 = none retired).
    pub iretire: u32,
    /// Size of the last retired instruction is 2^`ilastsize` half-words.
    pub ilastsize: u8,
    /// Termination type of the block.
    pub itype: Itype,
    /// Exception or interrupt cause (`mcause`/`scause` without the interrupt bit); valid for `itype` 1 and 2.
    pub cause: u64,
    /// Trap value (`mtval`/`stval`); valid for `itype` 1.
    pub tval: u64,
    /// Privilege of the instructions retired in this block ([`privilege`]).
    pub priv_: u8,
    /// Context (for example ASID, or a software thread id).
    pub context: u64,
    /// Reporting behaviour for `context` (0 unreported, 1 imprecise, 2 precise, 3 asynchronous).
    pub ctype: u8,
    /// Time from the hart (the hart model reports `mtime`).
    pub time: u64,
    /// The block ends with an uninferable jump that is sequentially inferable (`ingressPort.adoc`, JumpClasses).
    pub sijump: bool,
}

impl Record {
    /// Address of the last instruction retired in this block (meaningless when `iretire` is 0).
    pub fn last_iaddr(&self) -> u64 {
        self.iaddr
            .wrapping_add(2 * self.iretire as u64)
            .wrapping_sub(2u64 << self.ilastsize)
    }

    /// Address of the instruction after the last one retired in this block.
    pub fn next_iaddr(&self) -> u64 {
        self.iaddr.wrapping_add(2 * self.iretire as u64)
    }
}
