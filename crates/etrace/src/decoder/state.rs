//! The decoder's state between packets (but for the walk, the framing and the counts), and a
//! chunk's normalized copy of it ([`ChunkState`]).

use rvtrace_isa::CfClass;

use crate::codec::CodecError;
use crate::params::{IOptions, Params};
use crate::predict::BPRED_INIT;

use super::branches::BranchQueue;

/// A trap whose handler is reported by a later packet (F3 SF1 with *thaddr* = 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PendingTrap {
    pub(super) ecause: u64,
    pub(super) interrupt: bool,
    pub(super) tval: Option<u64>,
    pub(super) epc: Option<u64>,
    /// The *address* of the thaddr = 0 packet (the EPC of a trap that follows immediately).
    pub(super) address: Option<u64>,
}

/// The decoder's state between packets, but for the walk (`Decoder::cur`), the framing and
/// the counts: [`ChunkState`] is a normalized copy of it (no field-by-field copy to keep in
/// step).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Progress {
    /// The run-time options in force (support packets change them).
    pub(super) options: IOptions,
    // decoder.adoc globals.
    /// decoder.adoc `branches`/`branch_map`, generalised to the outcomes of format 0
    /// subformat 0 (counts of correctly predicted branches, then maybe one mispredicted).
    pub(super) bq: BranchQueue,
    pub(super) stop_at_last_branch: bool,
    pub(super) inferred_address: bool,
    pub(super) start_of_trace: bool,
    pub(super) address: u64,
    pub(super) privilege: u64,
    pub(super) context: u64,
    pub(super) bpred: Vec<u8>,
    pub(super) jtc: Vec<Option<u64>>,
    pub(super) tvec: Vec<((bool, u64), u64)>,
    pub(super) pending_trap: Option<PendingTrap>,
    /// Offset of the first packet skipped while waiting for the first sync packet.
    pub(super) skipped_from: Option<u64>,
    /// Tracing ended (a support packet with *qual_status* ended, or [`Decoder::finish_at`]).
    pub(super) ended: bool,
    /// A support packet enabled tracing (`payload.adoc` `sec:format33`: one must be issued when
    /// trace is enabled, before the first sync packet), or the gap before this point was
    /// already reported as a loss.
    pub(super) enabled: bool,
    /// A loss was reported and the decoder waits for a sync packet: what is skipped until then
    /// belongs to that loss.
    pub(super) recovering: bool,
    /// A synchronisation packet was decoded.
    pub(super) synced_ever: bool,
    /// Errors not reported yet: offset of the first, the first, how many.
    pub(super) error_run: Option<(u64, CodecError, u64)>,
    /// The sink asked to stop ([`FlowSink::stop_requested`]).
    pub(super) stopped: bool,
    /// Chunked decode: whether losses came before and the handlers learnt before are guesses
    /// (unknown at a chunk's start until the stitch fills them in).
    pub(super) guessing: bool,
}

impl Progress {
    /// The state at the start of a trace laid out per `params`, with run-time `options`.
    pub(super) fn new(params: &Params, options: IOptions) -> Self {
        Progress {
            options,
            bq: BranchQueue::default(),
            stop_at_last_branch: false,
            inferred_address: false,
            start_of_trace: true,
            address: 0,
            privilege: 0,
            context: 0,
            bpred: vec![BPRED_INIT; 1usize << params.bpred_size_p],
            jtc: vec![None; 1usize << params.cache_size_p],
            tvec: Vec::new(),
            pending_trap: None,
            skipped_from: None,
            ended: false,
            enabled: false,
            recovering: false,
            synced_ever: false,
            error_run: None,
            stopped: false,
            guessing: false,
        }
    }
}

/// What an E-Trace decode depends on at a chunk boundary (`rvtrace_flow::chunk`): every field
/// of the decoder but its counts, its table and its per-packet counters.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkState {
    /// The stream's offset, bytes waiting and run-time options.
    pub(super) stream: (u64, usize, IOptions),
    /// The decoder's own state, normalized: the handlers learnt sorted (the branch queue
    /// compares its waiting outcomes only). Of it, a chunk's start guesses the handlers learnt
    /// (`tvec`) and whether they are guesses (`guessing`, the chunk's own only).
    pub(super) s: Progress,
    pub(super) pc: u64,
    /// `None`: guessed.
    pub(super) prev: Option<u64>,
    pub(super) range: Option<(u64, u64, CfClass, Option<bool>)>,
    pub(super) stack: rvtrace_flow::walk::ReturnStack,
    /// Losses came before (guessed at a chunk's start, with the handlers).
    pub(super) had_errors: bool,
}

impl ChunkState {
    /// The guessed parts of `before` added to this state's own (when it was guessing).
    pub(super) fn inherit(s: &mut Progress, had_errors: &mut bool, before: &ChunkState) {
        if s.guessing {
            *had_errors |= before.had_errors;
            for &(k, h) in &before.s.tvec {
                if !s.tvec.iter().any(|e| e.0 == k) {
                    s.tvec.push((k, h));
                }
            }
            s.guessing = before.s.guessing;
        }
    }
}
