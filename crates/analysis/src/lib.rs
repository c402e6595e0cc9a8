//! What people look at after a trace: profiles (flat, call graph, folded stacks, flame graph,
//! Firefox Profiler), line/function/branch coverage (lcov) and AutoFDO sample profiles, from
//! the flow elements ([`rvtrace_flow::FlowElement`]) of any source: the hart's ingress records,
//! an N-Trace or an E-Trace decode (the sources are `rvtrace-decode`'s; this crate knows only
//! flow elements).
//!
//! * [`Symbols`]: functions and DWARF lines of the program (`object`, `addr2line`).
//! * [`Profiler`] → [`Profile`]: instructions (and time) per call stack from a shadow call stack
//!   that follows calls, returns, tail calls, `longjmp` and traps; [`Profile::merge`],
//!   [`Profile::flat`], [`Profile::folded`], [`export::flamegraph`].
//! * [`Profiler::with_timeline`] → [`Timeline`]: the run sampled in trace order, each frame with
//!   its address; [`export::firefox`] (frames with source file and line).
//! * [`Counter`] → [`Counts`]: exact counts of straight-line ranges and taken transfers; from them
//!   [`Coverage`] (lcov) and [`autofdo::text`].
//! * [`TextTrace`]: every retired instruction with its symbol and disassembly; [`CallTrace`]:
//!   calls and returns indented by depth, from the [`Profiler`]'s own shadow stack.
//! * [`System`]: a program of several address spaces (firmware, kernel, processes); every sink
//!   made `in_system` names each instruction with the symbols of the space the flow is in.
//!
//! ```no_run
//! use rvtrace_analysis::{Profiler, Symbols};
//! let mut image = rvtrace_image::Image::new();
//! let xlen = image.load_file("prog.elf".as_ref())?.xlen;
//! let syms = Symbols::load("prog.elf".as_ref())?;
//! let isa = rvtrace_isa::IsaConfig::new(xlen);
//! let mut p = Profiler::new(&image, &syms, isa);
//! rvtrace_decode::ingress::ingress(std::fs::File::open("t.ingress")?, &image, isa, &mut p)?;
//! print!("{}", p.profile().report(10));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod autofdo;
pub mod counts;
pub mod coverage;
pub mod export;
pub mod profile;
pub mod symbols;
pub mod system;
pub mod text;
pub mod timeline;

pub use counts::{Counter, Counts, SpaceCounter};
pub use coverage::{Coverage, Summary};
pub use profile::{Profile, Profiler, StackEvent, StackOp};
pub use symbols::Symbols;
pub use system::{Place, System};
pub use text::{CallTrace, TextTrace};
pub use timeline::Timeline;
