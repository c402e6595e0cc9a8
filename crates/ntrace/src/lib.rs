//! N-Trace (Nexus-based trace, `../shared/specs/ntrace-spec-1.0.0rc7.txt`; the ratified text is in
//! `ntrace-ratified/`): codec, encoder, decoder.
//!
//! * [`codec`]: MSEO/MDO transport and messages (`no_std`, no allocation).
//! * [`decoder`]: trace + program image -> flow elements (N-Trace chapter 11).
//! * [`encoder`]: ingress records -> messages (N-Trace chapters 8-10), options in [`options`].
//! * [`dump`]: text dump of a message stream, field by field (N-Trace 3.5 Table 6).
//! * [`insn`]: instruction classes for the decoder, with a choice of link registers.
//! * [`meta`]: the sidecar `TRACE.meta` with the encoder settings a decoder needs; what a file
//!   given as N-Trace really is; which mismatched setting explains a lossy decode.
//!
//! See `crates/ntrace/README.md` for the encoder's choices, the `nexrv` preset and the differences
//! from the reference tool.
//!
//! A program and its trace (made by `rvtrace encode ntrace` with its defaults) to the PCs of
//! the instructions executed (`examples/decode_pcs.rs` reads the settings from the sidecar):
//!
//! ```
//! # let run = rvtrace_testkit::run_test_program("recurse-rv64gc", 4);
//! # let program = rvtrace_testkit::test_program("recurse-rv64gc");
//! # let trace = std::env::temp_dir().join(format!("rvtrace-ntrace-doc-{}.nex", std::process::id()));
//! # let defaults = rvtrace_ntrace::options::EncoderConfig::new(rvtrace_isa::Xlen::Rv64);
//! # std::fs::write(&trace, rvtrace_ntrace::encoder::encode(defaults, &run.records).0)?;
//! use rvtrace_flow::{decode_all, for_each_pc, FlowElement};
//! use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};
//!
//! let mut image = rvtrace_image::Image::new();
//! let isa = rvtrace_isa::IsaConfig::new(image.load_file(&program)?.xlen);
//! let mut decoder = Decoder::new(&image, DecoderConfig::new(isa));
//! let mut pcs = Vec::new();
//! decode_all(&mut decoder, &std::fs::read(&trace)?, &mut |e: &FlowElement| {
//!     if let FlowElement::Range { start, count, .. } = e {
//!         for_each_pc(&image, *start, *count, |pc| pcs.push(pc)).unwrap();
//!     }
//! });
//! # std::fs::remove_file(&trace)?;
//! # assert_eq!(pcs, run.pcs);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The messages of a few ingress records:
//!
//! ```
//! use rvtrace_ingress::{Itype, Record};
//! use rvtrace_ntrace::codec::{parse, Body, CodecConfig, Frame, Frames};
//! use rvtrace_ntrace::encoder::encode;
//! use rvtrace_ntrace::options::EncoderConfig;
//! use rvtrace_isa::Xlen;
//!
//! // N-Trace 8.3.2, first run: 0x100 c.add, 0x102 taken branch to 0x200, 0x200 c.add.
//! let rec = |iaddr, iretire, itype| Record { iaddr, iretire, ilastsize: (iretire == 2) as u8, itype, ..Record::default() };
//! let records = [rec(0x100, 1, Itype::None), rec(0x102, 2, Itype::TakenBranch), rec(0x200, 1, Itype::None)];
//! let (bytes, _) = encode(EncoderConfig::new(Xlen::Rv64), &records);
//! let msgs: Vec<Body> = Frames::new(&bytes)
//!     .filter_map(|f| match f { Frame::Message(m) => Some(parse(&m, &CodecConfig::default()).unwrap().body), _ => None })
//!     .collect();
//! // ProgTraceSync, then ProgTraceCorrelation with I-CNT=4 and HIST=0b1_1.
//! assert!(matches!(msgs[1], Body::ProgTraceCorrelation { icnt: 4, hist: Some(0b11), .. }));
//! ```
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod codec;
#[cfg(feature = "std")]
pub mod decoder;
#[cfg(feature = "std")]
pub mod dump;
#[cfg(feature = "std")]
pub mod encoder;
pub mod histpat;
#[cfg(feature = "std")]
pub mod insn;
#[cfg(feature = "std")]
pub mod meta;
#[cfg(feature = "std")]
pub mod options;
#[cfg(feature = "std")]
pub mod scan;
#[cfg(feature = "std")]
pub mod sifive;
#[cfg(feature = "std")]
pub mod stats;

/// Open a text file for reading, decompressing it when its name ends in `.gz` (NexRv PCSEQ files
/// of the conformance set are stored that way).
#[cfg(feature = "std")]
pub fn open_text(path: &std::path::Path) -> std::io::Result<Box<dyn std::io::BufRead>> {
    let f = std::io::BufReader::with_capacity(1 << 16, std::fs::File::open(path)?);
    Ok(if path.extension().is_some_and(|e| e == "gz") {
        Box::new(std::io::BufReader::new(flate2::bufread::GzDecoder::new(f)))
    } else {
        Box::new(f)
    })
}
