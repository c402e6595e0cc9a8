//! Framed N-Trace bytes to message bodies and back, for tests that build or check streams by
//! hand. (Each test file uses what it needs of it.)
#![allow(dead_code)]

use rvtrace_ntrace::codec::{parse, Body, CodecConfig, Frame, Frames, Message};

/// The message bodies of a framed stream, its fields `codec`'s widths; panics at a framing or
/// parse error (the tests' streams are well formed).
pub fn bodies(bytes: &[u8], codec: &CodecConfig) -> Vec<Body> {
    Frames::new(bytes)
        .map(|f| match f {
            Frame::Message(raw) => parse(&raw, codec).unwrap().body,
            Frame::Error(e) => panic!("{e}"),
        })
        .collect()
}

/// The framed bytes of `bodies`, with the default field widths.
pub fn bytes_of(bodies: &[Body]) -> Vec<u8> {
    bodies
        .iter()
        .flat_map(|b| Message::new(*b).encode(&CodecConfig::default()).to_vec())
        .collect()
}
