//! The rvtrace hart model: a RISC-V hart (RV32/RV64 IMAFDC, Zicsr, Zifencei, Zba, Zbb, Zbs, Zbc; M, S and U
//! modes; traps, interrupts, CLINT timer, HTIF) on QEMU's `virt` machine. Semihosting and the SBI
//! are extensions the builder of a machine attaches (crates `rvtrace-semihost`, `rvtrace-sbi`).
//!
//! It produces the retired-instruction streams that drive the trace encoders, so "retired" follows
//! the trace specifications: a faulting instruction does not retire; `ecall`/`ebreak` retire with
//! an exception. Observers ([`Observer`]) see every retirement, trap, register, CSR and memory
//! effect; extensions ([`extension::Extension`]) add CSRs, events, interrupts and
//! environment-call services without touching the execution loop.
//!
//! ```no_run
//! use rvtrace_sim::{Config, Hart, PcList, Stop};
//! let mut image = rvtrace_image::Image::new();
//! let info = image.load_file("prog.elf".as_ref()).unwrap();
//! let mut hart = Hart::new(&Config::virt(info.xlen));
//! hart.load(&image).unwrap();
//! // A program that exits through semihosting needs it attached:
//! // rvtrace_semihost::attach(&mut hart, &image, "prog.elf");
//! let mut pcs = PcList::default();
//! assert_eq!(hart.run(&mut pcs, u64::MAX), Stop::Exit(0));
//! ```

#![warn(missing_docs)]

mod alu;
mod arch;
mod block;
pub mod boot;
pub mod bus;
mod clmul;
pub mod counters;
pub mod csr;
pub mod decode;
pub mod extension;
pub mod fdt;
pub mod fpu;
mod hart;
pub mod import;
pub mod ingress;
pub mod itc;
pub mod machine;
pub mod mmu;
pub mod observer;
pub mod plic;
pub mod pmp;
mod probe;
pub mod smp;
mod traploop;
pub mod trigger;
pub mod uarch;
pub mod virt_io;

pub use alu::AmoOp;
pub use arch::{cause, exception_name, privilege, LoadError, Stop};
pub use fdt::{fdt_address, FDT_SIZE};
pub use hart::{Config, Hart, Mapping};
pub use observer::{MemAccess, MemKind, Observer, PcList, Retired, RetiredRun, RunStep, TrapInfo};
pub use traploop::{TrapLoopReport, NO_RETIRE_LIMIT, REPEAT_THRESHOLD};

/// The indices of the bits set in `mask`, lowest first (the walks over the masks of counting
/// counters, filled memo slots and pending interrupt sources).
pub(crate) fn ones(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            i
        })
    })
}
