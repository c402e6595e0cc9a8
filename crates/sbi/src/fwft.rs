//! FWFT, the firmware features extension (SBI v3.0 chapter 18 "Firmware Features Extension",
//! EID 0x46574654): per-hart set/get of the features a machine without H has, and the LOCK
//! flag. Each hart's [`crate::Sbi`] keeps its own values (every feature here is local).
//!
//! What the hart model can do decides each feature (table "FWFT Feature Attribute Values"):
//! - MISALIGNED_EXC_DELEG: `medeleg` delegates the misaligned exceptions to S from the start
//!   (`boot::enter_supervisor`; the reset value is implementation-defined), because nothing in
//!   M-mode would emulate them. So the value is 1; setting 1 succeeds, setting 0 is DENIED
//!   (the spec's "denied by the SBI implementation": there is no emulation to fall back on).
//! - LANDING_PAD, SHADOW_STACK: the hart has neither Zicfilp nor Zicfiss: NOT_SUPPORTED.
//! - DOUBLE_TRAP: no Ssdbltrp: NOT_SUPPORTED.
//! - PTE_AD_HW_UPDATING: the hart always sets A/D itself (as QEMU 7.2; `hart/mmu.rs`) and has
//!   no Svadu `menvcfg.ADUE` to turn it off or on: NOT_SUPPORTED.
//! - POINTER_MASKING_PMLEN: no Ssnpm: NOT_SUPPORTED.

use crate::{err, error, ok, Args, SbiRet};

/// Feature types (table "FWFT Feature Types").
pub mod feature {
    /// MISALIGNED_EXC_DELEG.
    pub const MISALIGNED_EXC_DELEG: u32 = 0;
    /// LANDING_PAD.
    pub const LANDING_PAD: u32 = 1;
    /// SHADOW_STACK.
    pub const SHADOW_STACK: u32 = 2;
    /// DOUBLE_TRAP.
    pub const DOUBLE_TRAP: u32 = 3;
    /// PTE_AD_HW_UPDATING.
    pub const PTE_AD_HW_UPDATING: u32 = 4;
    /// POINTER_MASKING_PMLEN.
    pub const POINTER_MASKING_PMLEN: u32 = 5;
}

/// The set flag LOCK (table "FWFT Firmware Features Set Flags"); bits XLEN-1..1 are reserved.
const LOCK: u64 = 1;

/// This hart's FWFT state: the value and lock of MISALIGNED_EXC_DELEG, the one feature it has.
#[derive(Debug)]
pub(crate) struct Fwft {
    misaligned_deleg: u64,
    misaligned_locked: bool,
}

impl Default for Fwft {
    fn default() -> Fwft {
        Fwft {
            misaligned_deleg: 1,
            misaligned_locked: false,
        }
    }
}

/// How a feature type is answered: implemented, defined but not supported by this hart, or
/// reserved / platform-specific and unimplemented (DENIED in both functions' error tables).
enum Kind {
    Misaligned,
    Unsupported,
    Reserved,
}

fn kind(f: u32) -> Kind {
    match f {
        feature::MISALIGNED_EXC_DELEG => Kind::Misaligned,
        feature::LANDING_PAD..=feature::POINTER_MASKING_PMLEN => Kind::Unsupported,
        _ => Kind::Reserved,
    }
}

impl Fwft {
    /// FID 0 `sbi_fwft_set(uint32_t feature, unsigned long value, unsigned long flags)`.
    /// Checks in order: reserved flag bits (INVALID_PARAM), the feature (DENIED for reserved
    /// and platform types, NOT_SUPPORTED for ones this hart lacks), the lock (DENIED_LOCKED),
    /// the value (INVALID_PARAM outside the feature's values, DENIED for 0). A failed call
    /// changes nothing; setting the value it already has succeeds (and may lock it).
    pub(crate) fn set(&mut self, args: &Args) -> SbiRet {
        let (f, value, flags) = (args.u32_at(0), args.a[1], args.a[2]);
        if flags & !LOCK != 0 {
            return err(error::INVALID_PARAM);
        }
        match kind(f) {
            Kind::Reserved => err(error::DENIED),
            Kind::Unsupported => err(error::NOT_SUPPORTED),
            Kind::Misaligned => {
                if self.misaligned_locked {
                    return err(error::DENIED_LOCKED);
                }
                match value {
                    1 => {
                        self.misaligned_deleg = 1;
                        self.misaligned_locked = flags & LOCK != 0;
                        ok(0)
                    }
                    0 => err(error::DENIED),
                    _ => err(error::INVALID_PARAM),
                }
            }
        }
    }

    /// FID 1 `sbi_fwft_get(uint32_t feature)`: the value; DENIED for reserved and platform
    /// types, NOT_SUPPORTED for ones this hart lacks (value 0 on failure).
    pub(crate) fn get(&self, args: &Args) -> SbiRet {
        match kind(args.u32_at(0)) {
            Kind::Misaligned => ok(self.misaligned_deleg),
            Kind::Unsupported => err(error::NOT_SUPPORTED),
            Kind::Reserved => err(error::DENIED),
        }
    }
}
