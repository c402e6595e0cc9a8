//! What goes wrong while decoding: [`DecodeError`], and the loss each error is.

use rvtrace_flow::walk::WalkError;
use rvtrace_flow::LossReason;

use crate::codec::CodecError;

/// What went wrong while following the program (the packet stream and the program disagree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The path reached an address outside the program's executable segments.
    Unmapped(u64),
    /// The path reached an invalid instruction.
    BadInstruction(u64),
    /// A branch was reached with no taken/not-taken information left.
    NoBranchInfo(u64),
    /// An uninferable jump was reached while the packet had no address (`decoder.adoc`:
    /// "unexpected uninferable discontinuity").
    UnexpectedDiscontinuity(u64),
    /// The packet's address was reached by an uninferable jump with branches left unprocessed.
    UnprocessedBranches(u64),
    /// A jump target cache index with no valid entry.
    EmptyCacheEntry(u64),
    /// An implicit exception whose handler address was never reported.
    UnknownHandler {
        /// Interrupt (true) or exception.
        interrupt: bool,
        /// *ecause*.
        ecause: u64,
    },
    /// Too many branches pending (more than 64).
    BranchOverflow,
    /// The path ran too long without consuming trace information (garbage input).
    Runaway(u64),
    /// A Zcmt table jump (its target needs the jump table).
    TableJump(u64),
    /// A packet that cannot occur in the decoder's state.
    Unexpected(&'static str),
    /// A packet that does not decode.
    Codec(CodecError),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Unmapped(a) => write!(f, "execution path left the program at {a:#x}"),
            DecodeError::BadInstruction(a) => write!(f, "invalid instruction at {a:#x}"),
            DecodeError::NoBranchInfo(a) => write!(f, "cannot resolve the branch at {a:#x}"),
            DecodeError::UnexpectedDiscontinuity(a) => {
                write!(f, "unexpected uninferable discontinuity at {a:#x}")
            }
            DecodeError::UnprocessedBranches(a) => {
                write!(f, "unprocessed branches on reaching {a:#x}")
            }
            DecodeError::EmptyCacheEntry(i) => write!(f, "jump target cache entry {i} is empty"),
            DecodeError::UnknownHandler { interrupt, ecause } => write!(
                f,
                "unknown trap handler for {} {ecause} (implicit exception)",
                if *interrupt { "interrupt" } else { "exception" }
            ),
            DecodeError::BranchOverflow => f.write_str("too many unprocessed branches"),
            DecodeError::Runaway(a) => write!(f, "execution path does not end (at {a:#x})"),
            DecodeError::TableJump(a) => write!(f, "table jump at {a:#x} is not supported"),
            DecodeError::Unexpected(m) => f.write_str(m),
            DecodeError::Codec(e) => write!(f, "malformed packet: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl From<WalkError> for DecodeError {
    fn from(e: WalkError) -> Self {
        match e {
            WalkError::Unmapped(a) => DecodeError::Unmapped(a),
            WalkError::BadInstruction(a) => DecodeError::BadInstruction(a),
        }
    }
}

impl DecodeError {
    /// The loss this error is: a packet that does not decode is malformed (a truncated one at
    /// the end of the data: the end is lost); the rest are disagreements between the trace and
    /// the program (or the decoder's settings).
    pub fn loss_reason(&self) -> LossReason {
        let text = self.to_string();
        match self {
            DecodeError::Codec(CodecError::Truncated { .. }) => LossReason::EndLost(text),
            DecodeError::Codec(_) => LossReason::Malformed(text),
            _ => LossReason::Mismatch(text),
        }
    }
}
