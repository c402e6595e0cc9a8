//! Losses, the wait for a synchronisation packet after one, and the end of the trace.

use rvtrace_flow::{FlowElement, FlowSink, LossReason};

use crate::codec::CodecError;

use super::error::DecodeError;
use super::Decoder;

impl<'a> Decoder<'a> {
    /// Report a packet that could not be decoded (or was lost) at `offset`; decoding resumes at
    /// the next synchronisation packet. Errors with no packet between them are one loss
    /// (reported when the next packet or the end comes), so that a run of garbage is one error
    /// that says how many bytes it spans, not one per byte.
    pub fn error<S: FlowSink + ?Sized>(&mut self, offset: u64, e: &CodecError, _s: &mut S) {
        match &mut self.s.error_run {
            Some(r) => r.2 += 1,
            None => self.s.error_run = Some((offset, *e, 1)),
        }
    }

    /// Report the pending run of errors, which ends at `offset`.
    pub(super) fn flush_errors<S: FlowSink + ?Sized>(&mut self, offset: u64, s: &mut S) {
        if let Some((at, e, n)) = self.s.error_run.take() {
            let mut reason = DecodeError::Codec(e).loss_reason();
            if n > 1 {
                reason = reason.map_text(|t| {
                    format!(
                        "{t} (and {} more errors: {} bytes skipped)",
                        n - 1,
                        offset - at
                    )
                });
            }
            self.loss(at, Some(offset - at), reason, s);
            self.reset_sync();
            self.s.ended = false;
        }
    }

    pub(super) fn lose<S: FlowSink + ?Sized>(
        &mut self,
        offset: u64,
        reason: LossReason,
        s: &mut S,
    ) {
        self.loss(offset, None, reason, s);
        self.reset_sync();
        self.s.ended = false;
    }

    /// Report one loss: a [`FlowElement::Loss`] and one error in [`DecodeStats::errors`]. The
    /// only place that emits a loss, so that the count of losses (warnings) and the error count
    /// (summary, exit status) never disagree.
    pub(super) fn loss<S: FlowSink + ?Sized>(
        &mut self,
        offset: u64,
        skipped: Option<u64>,
        reason: LossReason,
        s: &mut S,
    ) {
        self.stats.errors += 1;
        self.skipped_bytes += skipped.unwrap_or(0);
        self.s.recovering = true;
        self.s.enabled = true;
        // A branch not resolved yet stays so: the packets that would tell are lost or damaged.
        self.cur.ranges.flush(s);
        self.emit(
            FlowElement::Loss {
                offset,
                skipped,
                reason,
            },
            s,
        );
    }

    pub(super) fn reset_sync(&mut self) {
        self.s.start_of_trace = true;
        self.s.inferred_address = false;
        self.s.stop_at_last_branch = false;
        self.s.bq.clear();
        self.s.pending_trap = None;
        self.cur.stack.clear();
    }

    /// End of the trace data at `offset`.
    ///
    /// A trace that does not end with a support packet saying that tracing ended
    /// (`payload.adoc` `sec:format33`: one "must be issued when tracing ceases for any reason")
    /// lost its end (a truncated file, a circular buffer read past its write pointer): that is
    /// a loss. So is a trace with no synchronisation packet at all.
    pub fn finish_at<S: FlowSink + ?Sized>(&mut self, offset: u64, s: &mut S) {
        self.bytes = self.bytes.max(offset);
        self.flush_errors(offset, s);
        if let Some(t) = self.s.pending_trap.take() {
            self.emit_trap(&t, None, s);
        }
        if !self.s.ended && !self.s.start_of_trace {
            self.loss(
                offset,
                None,
                LossReason::EndLost("the trace ends without a support packet saying that tracing ended: its end is lost (truncated?)".into()),
                s,
            );
        } else if !self.s.synced_ever && !self.s.ended && self.stats.errors == 0 {
            let reason = match self.s.skipped_from {
                Some(_) => "no synchronisation packet: nothing could be decoded",
                None => "no te_inst packet in the trace",
            };
            let skipped = self.s.skipped_from.map(|f| offset - f);
            let reason = LossReason::NoTrace(reason.into());
            self.loss(self.s.skipped_from.unwrap_or(0), skipped, reason, s);
        }
        if !self.s.ended {
            self.emit(FlowElement::End { offset }, s);
            self.s.ended = true;
        }
        self.flush(s);
    }

    /// At the first synchronisation (or end) packet at `offset`: a loss if packets were skipped
    /// before it, or if no support packet enabled tracing (`payload.adoc` `sec:format33`), unless
    /// the gap belongs to a loss already reported.
    pub(super) fn start_lost<S: FlowSink + ?Sized>(&mut self, offset: u64, s: &mut S) {
        if let Some(from) = self.s.skipped_from.take() {
            self.loss(
                from,
                Some(offset - from),
                LossReason::StartLost(
                    "packets before the first synchronisation packet: the start of the trace is lost"
                        .into(),
                ),
                s,
            );
        } else if !self.s.enabled {
            self.loss(
                offset,
                None,
                LossReason::StartLost("no support packet before the first synchronisation packet: the start of the trace is lost"
                    .into()),
                s,
            );
        }
    }

    /// A packet at `offset` skipped while waiting for a synchronisation packet: part of the
    /// loss already reported, or (at the start of the trace) of one reported at the sync.
    pub(super) fn skip(&mut self, offset: u64) {
        if !self.s.recovering {
            self.s.skipped_from.get_or_insert(offset);
        }
    }
}
