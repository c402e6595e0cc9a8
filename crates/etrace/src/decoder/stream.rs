//! Bytes to packets: the framing, and the bytes that wait until a packet in them is whole.
//! Below the decoder: each packet read goes to a callback (the decoder's), which says whether to
//! stop.

use crate::codec::encap::MAX_PACKET;
use crate::codec::Framing;
use crate::codec::{EncapConfig, Item, PacketReader};
use crate::params::{IOptions, Params};

/// Bytes waiting to be split into packets ([`rvtrace_flow::TraceDecoder::push`]).
#[derive(Clone, Debug)]
pub(super) struct Stream {
    encap: EncapConfig,
    raw: bool,
    /// Only this *srcID*'s packets ([`super::DecoderConfig::src`]).
    src: Option<u16>,
    /// Bytes from `base` on not yet given to the decoder (at most one window).
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    pub(super) base: u64,
    /// The packet reader's run-time options at `base` (support packets change them).
    pub(super) options: IOptions,
}

/// Bytes gathered before packets are read out of them (a packet that may run past the bytes
/// given so far waits for more).
const WINDOW: usize = 1 << 16;

impl Stream {
    /// A stream framed as `framing`, read from its start with the run-time `options`, of the
    /// source `src` only (`None`: every packet).
    pub(super) fn new(framing: Framing, options: IOptions, src: Option<u16>) -> Self {
        let (encap, raw) = framing.reader();
        Stream {
            encap,
            raw,
            src,
            buf: Vec::new(),
            base: 0,
            options,
        }
    }

    /// This stream, its bytes moved out (`self` keeps none).
    pub(super) fn take(&mut self) -> Stream {
        Stream {
            buf: std::mem::take(&mut self.buf),
            ..*self
        }
    }

    /// The stream offset of the end of the bytes given so far.
    pub(super) fn end(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// Bytes waiting.
    pub(super) fn waiting(&self) -> usize {
        self.buf.len()
    }

    /// Give `item` the packets laid out per `params` in `data` (the stream from offset `base`
    /// on) with their offsets, stopping at the first one that may run past its end unless
    /// `eof`, or once `stopped` (`item` returns whether to stop); returns the bytes consumed
    /// (all of them once stopped).
    fn feed(
        &mut self,
        data: &[u8],
        eof: bool,
        params: Params,
        stopped: &mut bool,
        item: &mut impl FnMut(u64, Item) -> bool,
    ) -> usize {
        let mut rd =
            PacketReader::new(data, self.encap, self.raw, params, self.options).only_src(self.src);
        let mut keep = data.len();
        while !*stopped {
            let before = rd.options();
            let Some((off, it)) = rd.next() else { break };
            // A packet that may run past the bytes so far waits for more (its options too).
            if !eof && off + MAX_PACKET > data.len() {
                keep = off;
                self.options = before;
                break;
            }
            *stopped = item(self.base + off as u64, it);
            self.options = rd.options();
        }
        self.base += keep as u64;
        keep
    }

    /// Take `data`, the stream's next bytes: the packets that are whole go to `item` (as
    /// [`Stream::feed`] gives them), the rest waits.
    pub(super) fn push(
        &mut self,
        mut data: &[u8],
        params: Params,
        stopped: &mut bool,
        item: &mut impl FnMut(u64, Item) -> bool,
    ) {
        while !data.is_empty() && !*stopped {
            if self.buf.is_empty() && data.len() >= WINDOW {
                // Packets straight from the caller's bytes; only the tail is kept.
                let n = self.feed(data, false, params, stopped, item);
                data = &data[n..];
                if n > 0 && data.len() >= WINDOW {
                    continue;
                }
            }
            // Gather a window; a packet started in the kept bytes ends within MAX_PACKET.
            let take = data.len().min(WINDOW.max(2 * MAX_PACKET));
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() < WINDOW {
                break;
            }
            let buf = std::mem::take(&mut self.buf);
            let n = self.feed(&buf, false, params, stopped, item);
            self.buf = buf;
            self.buf.drain(..n);
        }
    }

    /// The end of the stream (or of a chunk, which ends at a packet's end): every packet
    /// waiting goes to `item`. Returns the stream offset of the end.
    pub(super) fn drain(
        &mut self,
        params: Params,
        stopped: &mut bool,
        item: &mut impl FnMut(u64, Item) -> bool,
    ) -> u64 {
        let buf = std::mem::take(&mut self.buf);
        self.feed(&buf, true, params, stopped, item);
        self.base
    }
}
