//! The checker: tandem verification of a trace against the hart model (chapter 3.1, "Tandem
//! Verification"), with partial traces (3.2).
//!
//! For each group of the trace:
//!
//! 1. the group's state changes are applied to a *shadow state* (3.1 step 1);
//! 2. non-deterministic state is in place in the reference hart (3.1 step 2): `mtime`, the
//!    counters and the software-writable bits of `mip` are copied from the shadow after each
//!    group, so they are there before the next instruction runs (a group's values are those
//!    after its instruction: copying them before it would let the instruction see its own
//!    future). An interrupt the trace shows is taken by the reference even when its own timer
//!    says otherwise, and one the trace does not show is held off; a load from a device (outside
//!    RAM) takes the traced value, and a semihosting call takes its results (`a0`, the memory it
//!    wrote) from the trace instead of doing host I/O again;
//! 3. the reference hart steps one instruction or trap (3.1 step 3);
//! 4. shadow and reference are compared (3.1 step 4) the efficient way 3.1 allows: all
//!    integer and floating-point registers, the pc and the privilege mode every time, and every
//!    CSR and memory location that either side changed, so an erroneous change is caught
//!    whichever side made it;
//! 5. a difference is reported, then the shadow state is copied to the reference (3.1 step 5).
//!
//! Elements a partial trace leaves out are neither compared nor copied (3.2).
//!
//! A difference that came from the trace alone (a value damaged on its way, the rest of the
//! trace consistent with the correct value) would otherwise be reported again at every later
//! instruction that reads the copied value. So when a later group does not match after such a
//! copy, the checker steps that instruction again from the reference's own values; if it then
//! matches, the trace went on from the correct value, and only the first group is reported.
//!
//! Reading does not depend on how our producer writes: the pc may come incremented or in full,
//! records may come in any order within a group, the end group may be left out before a begin
//! group (chapter 3: "end group is implied by a begin group"), and register writes may use the
//! incremental forms.
//!
//! What a trace must be to pass, beyond matching the reference group by group:
//!
//! * **Of this program.** The state initialization before the first instruction (the program
//!   load) is compared with what the reference loaded from the ELF: every store with the ELF's
//!   bytes at its address, every non-zero byte of the ELF with some store, and the registers it
//!   sets with the reference's reset state. The first difference (the lowest address) is
//!   reported, as a mismatch ([`ProgramCheck`]). A trace without initial memory (`init` or `mem`
//!   absent) leaves the reference with the ELF's, and the summary says so.
//! * **Whole.** The trace must end where the program ended: its exit is visible in the trace
//!   (a semihosting `SYS_EXIT`/`SYS_EXIT_EXTENDED` call, or a store to an exit device: HTIF
//!   `tohost`, the SiFive test finisher), unless the options say the run was stopped early
//!   ([`RunEnd::Stopped`], from the sidecar that `rvtrace run` writes). A trace that ends at a
//!   group boundary before that, inside a group (no end group: the end of the trace does not
//!   imply one), or inside a record is truncated ([`TraceEnd`]). The protocol has no end-of-trace
//!   record, so the program's own end is the only mark a foreign trace can carry; the sidecar's
//!   group count (`groups = N`) is checked too when it is given.
//! * **Unambiguous** (chapter 3: "Only unambiguous state changes are allowed"): within a group,
//!   the pc, the privilege mode, the instruction, `mtime` and each register are given at most
//!   once; an end group ends a group (not one outside any group).
//! * **Nothing more than happened.** A register the trace writes must be one the reference's
//!   instruction wrote (a write of the value the register already held is no state change, but
//!   it is not what the instruction did), and a register address must be a register (chapter 3:
//!   the Debug Specification's address space). A memory response has its request's size, and a
//!   failure where the reference's access succeeded is a mismatch.
//!
//! Semihosting results are non-deterministic input (host I/O): the checker takes them from the
//! trace. A partial trace (3.2) still needs them; `rvtrace run` writes them even when `gpr` or
//! `mem` is absent. A call whose results a partial trace lacks is counted and explained in the
//! summary ([`CheckSummary::unknown_results`]): mismatches after it may come from that.
//!
//! Resources stay bounded on any input: a group may hold at most [`MAX_GROUP_BYTES`] bytes,
//! [`MAX_GROUP_REGS`] register updates and [`MAX_GROUP_MEMS`] memory requests.
//!
//! The files, each using only those above it in this list (no import circle): `report` (what
//! a check found: [`Mismatch`], [`CheckSummary`], [`CheckError`]), `group` (the group reader),
//! `shadow` (the shadow state, steps 1 and 2), `step` (the reference's step, step 3),
//! `compare` (step 4), `resync` (step 5 and the second try), `init` (the program load), `fast`
//! (plain runs: common groups checked in one run of the reference, each instruction compared as
//! it retires, anything else handed to the general procedure) and `check` (the procedure over a
//! whole trace: [`Checker`]).

mod check;
mod compare;
mod fast;
mod group;
mod init;
mod report;
mod resync;
mod shadow;
mod step;

pub use self::check::{CheckOptions, Checker};
pub use self::group::{MAX_GROUP_BYTES, MAX_GROUP_MEMS, MAX_GROUP_REGS};
pub use self::report::{CheckError, CheckSummary, Diff, Mismatch, ProgramCheck, TraceEnd};
pub use self::shadow::canonical_csr;
pub use crate::meta::RunEnd;
