//! The one error type of the ingress readers.

use std::fmt;
use std::io;

/// The binary format version this build writes and reads (here, below the reader and the
/// writer, because [`IngressError::UnsupportedVersion`] names it too).
pub const FORMAT_VERSION: u16 = 1;

/// Error from reading an ingress file (binary, text, E-Trace CSV or PCSEQ).
///
/// Binary-format errors carry the byte offset where the problem was found; text-format errors carry
/// the 1-based line number. Readers never panic on malformed input.
#[derive(Debug)]
#[non_exhaustive]
pub enum IngressError {
    /// The underlying reader or writer failed.
    Io(io::Error),
    /// The file does not start with the binary format's magic bytes (`RVTRINGR`).
    NotIngressFile,
    /// The binary file has a format version this build cannot read.
    UnsupportedVersion(u16),
    /// The binary file ends before `what` is complete.
    Truncated {
        /// Byte offset of the end of the data (where more bytes were expected).
        offset: u64,
        /// What was being read.
        what: &'static str,
    },
    /// The binary file holds an invalid value or fails a check.
    Corrupt {
        /// Byte offset of the offending structure (block header, record, field).
        offset: u64,
        /// What is wrong.
        msg: String,
    },
    /// A line of a text format (text form, E-Trace CSV, PCSEQ) cannot be parsed.
    Parse {
        /// Which format (`"ingress text"`, `"E-Trace CSV"`, `"PCSEQ"`).
        format: &'static str,
        /// 1-based line number (0 when parsing a lone line with no known position).
        line: u64,
        /// What is wrong.
        msg: String,
    },
}

/// The `what` of [`IngressError::Truncated`] for a binary file that ends at a block boundary
/// without its end block.
pub(crate) const NO_END_BLOCK: &str = "record stream (no end block)";

impl IngressError {
    /// A binary file that ends cleanly after a complete block but has no end block: its writer was
    /// stopped before it finished (killed, or the disk filled). Every record of the file was read
    /// before this error; only the writer's confirmation that nothing follows is missing.
    pub fn is_missing_end_block(&self) -> bool {
        matches!(self, IngressError::Truncated { what, .. } if *what == NO_END_BLOCK)
    }

    /// The byte offset of a binary-format error.
    pub fn offset(&self) -> Option<u64> {
        match self {
            IngressError::Truncated { offset, .. } | IngressError::Corrupt { offset, .. } => {
                Some(*offset)
            }
            _ => None,
        }
    }

    /// The line number of a text-format error.
    pub fn line(&self) -> Option<u64> {
        match self {
            IngressError::Parse { line, .. } => Some(*line),
            _ => None,
        }
    }

    pub(crate) fn corrupt(offset: u64, msg: impl Into<String>) -> Self {
        IngressError::Corrupt {
            offset,
            msg: msg.into(),
        }
    }

    pub(crate) fn parse(format: &'static str, line: u64, msg: impl Into<String>) -> Self {
        IngressError::Parse {
            format,
            line,
            msg: msg.into(),
        }
    }
}

impl fmt::Display for IngressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IngressError::Io(e) => write!(f, "I/O error: {e}"),
            IngressError::NotIngressFile => f.write_str("not an rvtrace ingress file"),
            IngressError::UnsupportedVersion(v) => write!(
                f,
                "unsupported ingress format version {v} (this build reads {})",
                FORMAT_VERSION
            ),
            IngressError::Truncated { offset, what } => write!(
                f,
                "truncated ingress file: {what} cut off at byte offset {offset}"
            ),
            IngressError::Corrupt { offset, msg } => {
                write!(f, "corrupt ingress file at byte offset {offset}: {msg}")
            }
            IngressError::Parse { format, line, msg } => {
                if *line == 0 {
                    write!(f, "{format}: {msg}")
                } else {
                    write!(f, "{format} line {line}: {msg}")
                }
            }
        }
    }
}

impl std::error::Error for IngressError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            IngressError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for IngressError {
    fn from(e: io::Error) -> Self {
        IngressError::Io(e)
    }
}

/// Why an [`crate::IngressHeader`] cannot be written ([`crate::IngressHeader::validate`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderError {
    /// The itype width is neither 3 nor 4 (`ingressPort.adoc`, "itype").
    ItypeWidth(u8),
    /// The source description has this many bytes; its length field holds at most 65535.
    SourceTooLong(usize),
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::ItypeWidth(w) => write!(f, "itype width must be 3 or 4, not {w}"),
            HeaderError::SourceTooLong(n) => write!(
                f,
                "source description is {n} bytes, at most {} allowed",
                u16::MAX
            ),
        }
    }
}

impl std::error::Error for HeaderError {}

/// Why a block record cannot be split into the program's instructions
/// ([`crate::Record::split_block`]): the record is not of this program, or is malformed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockError {
    /// The record at `iaddr` has an `ilastsize` that is no instruction size.
    LastSize {
        /// The block's first address.
        iaddr: u64,
        /// Its `ilastsize`.
        ilastsize: u8,
    },
    /// The record at `iaddr` retires fewer half-words (`iretire`) than its last instruction has.
    Retire {
        /// The block's first address.
        iaddr: u64,
        /// Its `iretire`.
        iretire: u32,
    },
    /// The program has no instruction at this address inside the block.
    NoInstruction(u64),
    /// The program's instructions from `iaddr` do not end where the block's last one begins
    /// (`bytes` is the block's length).
    NotAtLast {
        /// The block's first address.
        iaddr: u64,
        /// The block's length in bytes (`2 * iretire`).
        bytes: u64,
    },
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            BlockError::LastSize { iaddr, ilastsize } => {
                write!(
                    f,
                    "{iaddr:#x}: ilastsize {ilastsize} is not an instruction size"
                )
            }
            BlockError::Retire { iaddr, iretire } => write!(
                f,
                "{iaddr:#x}: iretire {iretire} is less than the last instruction"
            ),
            BlockError::NoInstruction(at) => write!(f, "{at:#x}: no instruction in the program"),
            BlockError::NotAtLast { iaddr, bytes } => write!(
                f,
                "{iaddr:#x} +{bytes}: the program's instructions do not end at the block's last one"
            ),
        }
    }
}

impl std::error::Error for BlockError {}
