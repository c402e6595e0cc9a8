//! The names every part of the hart shares, from the privileged specification: privilege levels,
//! exception causes, the exception an instruction raises, and why a run stops. They sit below the
//! hart so that its parts (PMP, MMU, triggers, ...) use them without importing the hart.

/// Privilege levels (privileged ISA encoding).
pub mod privilege {
    /// User.
    pub const U: u8 = 0;
    /// Supervisor.
    pub const S: u8 = 1;
    /// Machine.
    pub const M: u8 = 3;
}

/// Exception codes (privileged ISA, table "mcause values after trap").
#[allow(missing_docs)]
pub mod cause {
    pub const INSN_MISALIGNED: u64 = 0;
    pub const INSN_ACCESS: u64 = 1;
    pub const ILLEGAL: u64 = 2;
    pub const BREAKPOINT: u64 = 3;
    pub const LOAD_MISALIGNED: u64 = 4;
    pub const LOAD_ACCESS: u64 = 5;
    pub const STORE_MISALIGNED: u64 = 6;
    pub const STORE_ACCESS: u64 = 7;
    pub const ECALL_U: u64 = 8;
    pub const ECALL_S: u64 = 9;
    pub const ECALL_M: u64 = 11;
    pub const INSN_PAGE: u64 = 12;
    pub const LOAD_PAGE: u64 = 13;
    pub const STORE_PAGE: u64 = 15;
}

/// A human-readable name for an exception code.
pub fn exception_name(code: u64) -> &'static str {
    match code {
        0 => "instruction address misaligned",
        1 => "instruction access fault",
        2 => "illegal instruction",
        3 => "breakpoint",
        4 => "load address misaligned",
        5 => "load access fault",
        6 => "store/AMO address misaligned",
        7 => "store/AMO access fault",
        8 => "environment call from U-mode",
        9 => "environment call from S-mode",
        11 => "environment call from M-mode",
        12 => "instruction page fault",
        13 => "load page fault",
        15 => "store/AMO page fault",
        _ => "exception",
    }
}

/// A synchronous exception raised by an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exc {
    pub cause: u64,
    pub tval: u64,
}

impl Exc {
    pub(crate) fn illegal(bits: u32) -> Exc {
        Exc {
            cause: cause::ILLEGAL,
            tval: bits as u64,
        }
    }
}

/// Why [`crate::Hart::run`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The program exited (semihosting, HTIF or the test finisher) with this status.
    Exit(i32),
    /// The instruction limit was reached.
    InsnLimit,
    /// The hart cannot continue (for example it ran into unmapped memory); the message says why.
    Error(String),
    /// The observer asked to stop ([`crate::Observer::stop_requested`]).
    Requested,
}

/// An error while setting up the hart.
#[derive(Debug)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}
