//! A chunk of a chunked decode (`rvtrace_flow::chunk`): the decoder that starts inside the
//! trace and what it depends on at a chunk boundary.

use rvtrace_flow::FlowSink;
use rvtrace_image::Image;

use crate::code::Code;
use crate::params::IOptions;

use super::config::DecoderConfig;
use super::state::{ChunkState, Progress};
use super::{DecodeStats, Decoder};

impl<'a> Decoder<'a> {
    /// A decoder whose input starts at byte `offset` of the trace, at a packet's start, with
    /// the run-time options `options` in force there (a chunk of a chunked decode,
    /// `rvtrace_flow::chunk`; [`crate::scan`] finds both): offsets in its elements and counts
    /// are the trace's. Tracing is taken as enabled (the support packet that enabled it came
    /// before).
    pub fn at(
        image: &'a Image,
        o: DecoderConfig,
        code: Code,
        offset: u64,
        options: IOptions,
    ) -> Self {
        let mut d = Decoder::with_code(image, DecoderConfig { options, ..o }, code);
        d.stream.base = offset;
        d.bytes = offset;
        d.s.enabled = true;
        d
    }
}

impl rvtrace_flow::chunk::ChunkDecoder for Decoder<'_> {
    type State = ChunkState;

    fn drain<S: FlowSink + ?Sized>(&mut self, sink: &mut S) {
        let mut st = self.take_stream();
        let (params, mut stopped) = (self.params, self.s.stopped);
        // The chunk ends at a packet's end: every packet in the bytes is whole.
        self.bytes = st.drain(params, &mut stopped, &mut |at, it| self.item(at, it, sink));
        self.stream = st;
    }

    fn begin_guess(&mut self) {
        // The sync packet says the address, privilege and context; the instruction before it
        // and the start of the range it ends are the previous chunk's.
        self.cur.guess_prev();
        self.cur.ranges.continue_open();
        self.s.guessing = true;
    }

    fn guess_read(&self) -> bool {
        self.guess_read || self.cur.guess_read()
    }

    fn state(&self) -> ChunkState {
        let mut s = self.s.clone();
        s.tvec.sort_unstable();
        ChunkState {
            stream: (self.stream.base, self.stream.waiting(), self.stream.options),
            s,
            pc: self.cur.pc,
            prev: self.cur.prev_state(),
            range: self.cur.ranges.boundary(),
            stack: self.cur.stack.clone(),
            had_errors: self.stats.errors > 0 || self.errors_before,
        }
    }

    fn matches(actual: &ChunkState, guess: &ChunkState) -> bool {
        let prev = guess.prev.is_none() || actual.prev == guess.prev;
        let known = guess.s.guessing
            || (actual.had_errors, &actual.s.tvec) == (guess.had_errors, &guess.s.tvec);
        // The rest: all but the guessed parts.
        let rest = |c: &ChunkState| ChunkState {
            prev: None,
            had_errors: false,
            s: Progress {
                tvec: Vec::new(),
                guessing: false,
                ..c.s.clone()
            },
            ..c.clone()
        };
        prev && known && rest(actual) == rest(guess)
    }

    fn inherit(&mut self, before: &ChunkState) {
        ChunkState::inherit(&mut self.s, &mut self.errors_before, before);
    }

    fn complete(state: &mut ChunkState, before: &ChunkState) {
        ChunkState::inherit(&mut state.s, &mut state.had_errors, before);
        state.s.tvec.sort_unstable();
    }

    fn open_range(&self) -> (Option<(u64, u64)>, bool) {
        (self.cur.ranges.extent(), self.cur.ranges.continuing())
    }

    fn add_counts(base: &DecodeStats, end: &DecodeStats, start: &DecodeStats) -> DecodeStats {
        DecodeStats {
            packets: base.packets + end.packets - start.packets,
            instructions: base.instructions + end.instructions - start.instructions,
            errors: base.errors + end.errors - start.errors,
        }
    }
}
