//! The N-Trace byte format, usable without `std` and without allocation: the MSEO/MDO transport
//! ([`mseo`], N-Trace chapter 3) and the messages ([`message`], N-Trace chapters 6-7).
//!
//! ```
//! use rvtrace_ntrace::codec::{parse, Body, CodecConfig, Frame, Frames};
//!
//! // N-Trace 3.5 Table 6: idle, one IndirectBranchHist message, idle.
//! let bytes = [0xFF, 0x70, 0xD0, 0x1D, 0x1D, 0xF8, 0xFF, 0xFF];
//! let cfg = CodecConfig::default();
//! let mut frames = Frames::new(&bytes);
//! let Some(Frame::Message(raw)) = frames.next() else { panic!() };
//! let msg = parse(&raw, &cfg).unwrap();
//! let Body::IndirectBranchHist { icnt, uaddr, hist, .. } = msg.body else { panic!() };
//! assert_eq!((icnt, uaddr.field, hist), (0x7D, 0x7, 0xFFE));
//! assert_eq!(msg.encode(&cfg).as_slice(), &bytes[1..7]);
//! ```

pub mod message;
pub mod mseo;

pub use message::{
    btype, evcode, layout, parse, rcode, sync, tcode, Addr, Body, CodecConfig, Dialect, FieldSpan,
    Layout, Message, MessageBytes, MessageError, MessageErrorKind, MessageWriter, Process,
};
pub use mseo::{Deframer, Frame, FrameError, Frames, RawMessage, Segment};
