//! Bytes to packets: the framing and the bytes waiting for a whole packet.

use rvtrace_flow::FlowSink;

use crate::codec::encap::MAX_PACKET;
use crate::codec::{EncapConfig, Item, PacketReader};
use crate::params::IOptions;

use super::Decoder;

/// Bytes waiting to be split into packets ([`TraceDecoder::push`]).
#[derive(Clone, Debug)]
pub(super) struct Stream {
    pub(super) encap: EncapConfig,
    pub(super) raw: bool,
    /// Only this *srcID*'s packets ([`DecoderOptions::src`]).
    pub(super) src: Option<u16>,
    /// Bytes from `base` on not yet given to the decoder (at most one window).
    pub(super) buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    pub(super) base: u64,
    /// The packet reader's run-time options at `base` (support packets change them).
    pub(super) options: IOptions,
}

/// Bytes gathered before packets are read out of them (a packet that may run past the bytes
/// given so far waits for more).
pub(super) const WINDOW: usize = 1 << 16;

impl Decoder<'_> {
    /// Give the decoder the packets in `data` (the stream from offset `base` on), stopping at
    /// the first one that may run past its end unless `eof`; returns the bytes consumed.
    pub(super) fn feed<S: FlowSink + ?Sized>(
        &mut self,
        st: &mut Stream,
        data: &[u8],
        eof: bool,
        sink: &mut S,
    ) -> usize {
        let mut rd =
            PacketReader::new(data, st.encap, st.raw, self.params, st.options).only_src(st.src);
        let mut keep = data.len();
        while !self.s.stopped {
            let before = rd.options();
            let Some((off, item)) = rd.next() else { break };
            // A packet that may run past the bytes so far waits for more (its options too).
            if !eof && off + MAX_PACKET > data.len() {
                keep = off;
                st.options = before;
                break;
            }
            let at = st.base + off as u64;
            match item {
                Item::Packet(p) => self.packet(at, &p, sink),
                Item::Error(e) => self.error(at, &e, sink),
                Item::Other(_) => {}
            }
            st.options = rd.options();
            self.s.stopped = sink.stop_requested();
        }
        st.base += keep as u64;
        keep
    }

    /// The stream state; a decoder made the old way ([`Decoder::new`]) reads plain
    /// encapsulation.
    pub(super) fn take_stream(&mut self) -> Stream {
        self.stream.take().unwrap_or(Stream {
            encap: EncapConfig::PLAIN,
            raw: false,
            src: None,
            buf: Vec::new(),
            base: 0,
            options: self.s.options,
        })
    }
}
