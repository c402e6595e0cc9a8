//! The rvtrace binary ingress format, version 1: a compact, fast, checked file of [`Record`]s.
//!
//! This documentation is the format specification; an implementation in another language needs
//! nothing else. All multi-byte integers are little-endian. "varint" is unsigned LEB128 (7 bits per
//! byte, least significant group first, bit 7 set on every byte but the last; at most 10 bytes, and
//! the value must fit 64 bits). "zigzag" maps a signed 64-bit value `v` to `(v << 1) ^ (v >> 63)`
//! (0, -1, 1, -2 ... become 0, 1, 2, 3 ...) before it is written as a varint. All address and time
//! arithmetic wraps modulo 2^64. CRC-32 is the zlib/gzip one (CRC-32/ISO-HDLC: reflected polynomial
//! `0xEDB88320`, initial value and final XOR `0xFFFFFFFF`).
//!
//! The record fields are those of the E-Trace ingress port (`etrace-v2.0/ingressPort.adoc`, tables
//! "Instruction interface signals"); `iretire` counts half-words (table "Instruction interface
//! signals - multiple retirement per block"), also for single-instruction records.
//!
//! # File layout
//!
//! ```text
//! file   = header block* end-block          (a file with no records is header + end-block)
//! ```
//!
//! ## Header
//!
//! | offset | size | field | meaning |
//! |---:|---:|---|---|
//! | 0 | 8 | magic | `RVTRINGR` (`52 56 54 52 49 4E 47 52`) |
//! | 8 | 2 | version | format version, u16; this is version **1** |
//! | 10 | 2 | flags | u16, see below |
//! | 12 | 1 | xlen | 32 or 64 |
//! | 13 | 1 | itype_width | 3 or 4: the `itype_width_p` the source uses (`ingressPort.adoc`, table "Instruction Type (itype) encoding") |
//! | 14 | 2 | source_len | u16, length `n` of `source` in bytes |
//! | 16 | n | source | free-form UTF-8 description of the producer (program, simulator, options) |
//! | 16+n | 4 | header_crc | u32, CRC-32 of bytes 0 .. 16+n |
//!
//! Flags (which optional ingress signals the source drives; informational for encoders, which need
//! to know e.g. whether `sijump` is connected, `ingressPort.adoc` on `sijump`):
//!
//! | bit | name | meaning |
//! |---:|---|---|
//! | 0 | CONTEXT | `context` and `ctype` are driven |
//! | 1 | TIME | `time` is driven |
//! | 2 | SIJUMP | `sijump` is driven |
//! | 3 | MULTI_RETIRE | a record may retire more than one instruction (`retires_p` > 1); when clear every record retires 0 or 1 instruction |
//! | 4-15 | | reserved, 0; a version-1 reader rejects a file with any of them set |
//!
//! A reader checks the magic first ("not an rvtrace ingress file"), then the version ("unsupported
//! ingress format version N"), then the header CRC.
//!
//! ## Blocks
//!
//! Records are stored in blocks. Each block can be decoded on its own (the prediction state below is
//! reset at the start of every block), and is protected by a CRC.
//!
//! | offset | size | field | meaning |
//! |---:|---:|---|---|
//! | 0 | 4 | payload_len | u32, `L`, 1 ..= 16 MiB (16777216) |
//! | 4 | 4 | record_count | u32, `N` records in the payload; 0 marks the end block |
//! | 8 | 4 | crc | u32, CRC-32 of block bytes 0..8 (payload_len, record_count) followed by the payload |
//! | 12 | L | payload | `N` records, exactly filling `L` bytes (`N` <= `L`) |
//!
//! The **end block** has `record_count` 0, `payload_len` 8 and as payload the total number of records
//! in the file (u64). Nothing follows it. A file without an end block is truncated. This writer
//! starts a new block once the payload reaches 64 KiB.
//!
//! ## Records
//!
//! Decoding state, reset at the start of each block: `prev` = the all-zero record (every field 0,
//! `itype` 0, `sijump` 0) and `time_step` = 0. Predictions for the next record:
//!
//! * `iaddr` = `prev.iaddr + 2 * prev.iretire` (the address after the previous block);
//! * `priv` = `prev.priv`, `context` = `prev.context`;
//! * `time` = `prev.time + time_step` (the previous time step repeats);
//! * `cause` = `tval` = `ctype` = 0, `sijump` = 0.
//!
//! After each record: `time_step` = `record.time - prev.time`, then `prev` = `record`.
//!
//! A record is a tag byte, an optional extension byte, then the flagged fields in this order:
//!
//! ```text
//! tag   bit 3:0  itype (the ingress itype code 0..15)
//!       bit 5:4  size class:
//!                  0: iretire = 2, ilastsize = 1  (one 32-bit instruction)
//!                  1: iretire = 1, ilastsize = 0  (one 16-bit instruction)
//!                  2: explicit: iretire (varint, must fit u32) and ilastsize (1 byte) follow
//!                  3: iretire and ilastsize equal those of prev
//!       bit 6    ADDR: iaddr differs from the prediction; zigzag(iaddr - predicted iaddr) follows
//!       bit 7    EXT: an extension byte follows the tag
//! ext   bit 0    CAUSE: cause follows (varint)
//!       bit 1    TVAL: tval follows (varint)
//!       bit 2    PRIV: priv follows (1 byte)
//!       bit 3    CONTEXT: context follows (varint)
//!       bit 4    CTYPE: ctype follows (1 byte)
//!       bit 5    TIME: zigzag(time - predicted time) follows
//!       bit 6    SIJUMP: sijump = 1 (no data)
//!       bit 7    reserved, 0
//! then:  [iretire varint, ilastsize byte]  if size class 2
//!        [iaddr delta]                      if ADDR
//!        [cause] [tval] [priv] [context] [ctype] [time delta]   each if its ext bit is set
//! ```
//!
//! So a sequential instruction in the same privilege/context with the usual time step, including a
//! non-taken branch, is one byte; a taken branch or jump adds its address delta (1-3 bytes for
//! typical code). A writer may choose any valid encoding (for example class 2 for a 32-bit
//! instruction, or an EXT byte of 0); this writer picks the shortest as listed (class 0/1, else 3,
//! else 2; ADDR and EXT only when needed).
//!
//! Every byte is covered by a CRC and the end block carries the record count, so truncation and
//! corruption are reported ([`IngressError`], with the byte offset), never silently accepted.
//!
//! # Damaged files
//!
//! A reader delivers the records of every verified block before the damage, then the error: a
//! block is decoded only after its CRC matched, so what comes out is what the writer wrote. A file
//! whose writer was stopped before it finished (Ctrl-C, a full disk) ends after its last complete
//! block, or inside a block; all records of its complete blocks are read, then a
//! [`IngressError::Truncated`] error ([`IngressError::is_missing_end_block`] when the cut is exactly
//! at a block boundary). A block header that claims a large payload costs only the bytes the file
//! really holds.

use std::io::{self, Read, Write};

use crate::crc32::{crc32, Crc32};
use crate::error::HeaderError;
use crate::varint::{get_u64, put_u64_at, unzigzag, zigzag};
use crate::{IngressError, Itype, Near, Record, RunHead, Xlen};

/// The 8 magic bytes at the start of every binary ingress file.
pub const MAGIC: [u8; 8] = *b"RVTRINGR";
pub use crate::error::FORMAT_VERSION;
/// Header flag bit 0: `context` and `ctype` are driven.
pub const FLAG_CONTEXT: u16 = 1 << 0;
/// Header flag bit 1: `time` is driven.
pub const FLAG_TIME: u16 = 1 << 1;
/// Header flag bit 2: `sijump` is driven.
pub const FLAG_SIJUMP: u16 = 1 << 2;
/// Header flag bit 3: records may retire more than one instruction (`retires_p` > 1).
pub const FLAG_MULTI_RETIRE: u16 = 1 << 3;
const KNOWN_FLAGS: u16 = FLAG_CONTEXT | FLAG_TIME | FLAG_SIJUMP | FLAG_MULTI_RETIRE;

/// Largest block payload a reader accepts.
pub const MAX_BLOCK_PAYLOAD: u32 = 16 << 20;
/// Payload size at which the writer closes a block.
const BLOCK_TARGET: usize = 64 << 10;
const BLOCK_HEADER: usize = 12;
/// Most bytes of a record of a predicted run ([`Near`]): the tag, the extension byte of
/// `sijump` and a 10-byte address delta.
const NEAR_MAX: usize = 12;
/// Most bytes of a block record ([`IngressWriter::write_block`]): tag, extension, `iretire`
/// (5) and `ilastsize`, address delta (10), time delta (10).
const BLOCK_RECORD_MAX: usize = 28;
/// Room after a block's target in [`BlockBuf`]: a record starts below the target (the block
/// closes once it reaches it) and takes at most 60 bytes ([`encode_record`]: tag, extension,
/// `iretire`, `ilastsize`, `priv`, `ctype` and five 10-byte varints); the fixed-size copies of
/// the run paths take at most 8 + [`RUN_BYTES`] and [`BLOCK_RECORD_MAX`] +
/// [`BLOCK_RUN_BYTES`] bytes from a start that leaves room for what they keep.
const BLOCK_SLACK: usize = 128;
const _: () = assert!(60 <= BLOCK_SLACK && 8 + RUN_BYTES <= BLOCK_SLACK);
const _: () = assert!(BLOCK_RECORD_MAX + BLOCK_RUN_BYTES <= BLOCK_SLACK);

/// The block being written: its header's room and the records, `len` bytes of `buf`, which
/// is always its target plus [`BLOCK_SLACK`] long. So a record's bytes are stores and
/// fixed-size copies into it, with no call (growing a `Vec` took an out-of-line call and a
/// `memcpy` per copy: 9 % of a run writing ingress, callgrind).
struct BlockBuf {
    buf: Vec<u8>,
    len: usize,
}

impl BlockBuf {
    /// An empty block (its header's room) for a payload `target`.
    fn new(target: usize) -> BlockBuf {
        BlockBuf {
            buf: vec![0; BLOCK_HEADER + target + BLOCK_SLACK],
            len: BLOCK_HEADER,
        }
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn push(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// `v` as unsigned LEB128.
    #[inline(always)]
    fn put_u64(&mut self, v: u64) {
        self.len = put_u64_at(&mut self.buf, self.len, v);
    }

    /// The first `len` of `bytes` (all `N` copied: a copy of fixed size).
    #[inline(always)]
    fn put<const N: usize>(&mut self, bytes: &[u8; N], len: usize) {
        debug_assert!(len <= N);
        self.buf[self.len..self.len + N].copy_from_slice(bytes);
        self.len += len;
    }

    /// The room from the end of what is written (at least [`BLOCK_SLACK`] bytes).
    #[inline(always)]
    fn room(&mut self) -> &mut [u8] {
        &mut self.buf[self.len..]
    }

    /// The bytes written.
    #[cfg(test)]
    fn written(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

// Tag and extension bits (see the module doc).
const TAG_SIZE_SHIFT: u32 = 4;
const TAG_ADDR: u8 = 0x40;
const TAG_EXT: u8 = 0x80;
const EXT_CAUSE: u8 = 0x01;
const EXT_TVAL: u8 = 0x02;
const EXT_PRIV: u8 = 0x04;
const EXT_CONTEXT: u8 = 0x08;
const EXT_CTYPE: u8 = 0x10;
const EXT_TIME: u8 = 0x20;
const EXT_SIJUMP: u8 = 0x40;
const EXT_RESERVED: u8 = 0x80;
const SIZE_32: u8 = 0;
const SIZE_16: u8 = 1;
const SIZE_EXPLICIT: u8 = 2;
const SIZE_SAME: u8 = 3;

/// The header of a binary ingress file: stream parameters (see the [module doc](self), "Header").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngressHeader {
    /// Base integer register width of the hart (`iaddress_width_p` is XLEN).
    pub xlen: Xlen,
    /// `itype_width_p` the source uses: 3 or 4 (`ingressPort.adoc`, table "Instruction Type (itype) encoding").
    pub itype_width: u8,
    /// The source drives `context` and `ctype` (flag CONTEXT).
    pub has_context: bool,
    /// The source drives `time` (flag TIME).
    pub has_time: bool,
    /// The source drives `sijump` (flag SIJUMP).
    pub has_sijump: bool,
    /// Records may retire more than one instruction (flag MULTI_RETIRE, `retires_p` > 1).
    pub multi_retire: bool,
    /// Free-form description of the producer (UTF-8, at most 65535 bytes).
    pub source: String,
}

impl IngressHeader {
    /// A header with no optional signals driven (all flags clear).
    pub fn new(xlen: Xlen, itype_width: u8, source: impl Into<String>) -> Self {
        IngressHeader {
            xlen,
            itype_width,
            has_context: false,
            has_time: false,
            has_sijump: false,
            multi_retire: false,
            source: source.into(),
        }
    }

    /// The header flags word.
    pub fn flags(&self) -> u16 {
        (if self.has_context { FLAG_CONTEXT } else { 0 })
            | (if self.has_time { FLAG_TIME } else { 0 })
            | (if self.has_sijump { FLAG_SIJUMP } else { 0 })
            | (if self.multi_retire {
                FLAG_MULTI_RETIRE
            } else {
                0
            })
    }

    /// Checks the parameters a writer can store.
    pub fn validate(&self) -> Result<(), HeaderError> {
        if self.itype_width != 3 && self.itype_width != 4 {
            return Err(HeaderError::ItypeWidth(self.itype_width));
        }
        if self.source.len() > u16::MAX as usize {
            return Err(HeaderError::SourceTooLong(self.source.len()));
        }
        Ok(())
    }

    /// The encoded header bytes (including the header CRC); the header must be valid.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(20 + self.source.len());
        b.extend_from_slice(&MAGIC);
        b.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        b.extend_from_slice(&self.flags().to_le_bytes());
        b.push(self.xlen.bits() as u8);
        b.push(self.itype_width);
        b.extend_from_slice(&(self.source.len() as u16).to_le_bytes());
        b.extend_from_slice(self.source.as_bytes());
        let crc = crc32(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Reads and checks a header; returns it and its length in bytes.
    fn read_from<R: Read>(r: &mut R) -> Result<(Self, u64), IngressError> {
        let mut fixed = [0u8; 16];
        let n = read_full(r, &mut fixed)?;
        let m = n.min(8);
        if fixed[..m] != MAGIC[..m] {
            return Err(IngressError::NotIngressFile);
        }
        if n < 10 {
            return Err(IngressError::Truncated {
                offset: n as u64,
                what: "file header",
            });
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != FORMAT_VERSION {
            return Err(IngressError::UnsupportedVersion(version));
        }
        if n < 16 {
            return Err(IngressError::Truncated {
                offset: n as u64,
                what: "file header",
            });
        }
        let source_len = u16::from_le_bytes([fixed[14], fixed[15]]) as usize;
        let mut rest = vec![0u8; source_len + 4];
        let n = read_full(r, &mut rest)?;
        if n < rest.len() {
            return Err(IngressError::Truncated {
                offset: 16 + n as u64,
                what: "file header",
            });
        }
        let mut crc = Crc32::new();
        crc.update(&fixed);
        crc.update(&rest[..source_len]);
        let stored = u32::from_le_bytes(rest[source_len..].try_into().expect("4 bytes"));
        if crc.finish() != stored {
            return Err(IngressError::corrupt(
                16 + source_len as u64,
                "header checksum mismatch",
            ));
        }
        let flags = u16::from_le_bytes([fixed[10], fixed[11]]);
        if flags & !KNOWN_FLAGS != 0 {
            return Err(IngressError::corrupt(
                10,
                format!("unknown header flags {:#06x}", flags & !KNOWN_FLAGS),
            ));
        }
        let xlen = match fixed[12] {
            32 => Xlen::Rv32,
            64 => Xlen::Rv64,
            x => return Err(IngressError::corrupt(12, format!("invalid XLEN {x}"))),
        };
        let itype_width = fixed[13];
        if itype_width != 3 && itype_width != 4 {
            return Err(IngressError::corrupt(
                13,
                format!("invalid itype width {itype_width}"),
            ));
        }
        rest.truncate(source_len);
        let source = String::from_utf8(rest).map_err(|e| {
            IngressError::corrupt(
                16 + e.utf8_error().valid_up_to() as u64,
                "source description is not UTF-8",
            )
        })?;
        let header = IngressHeader {
            xlen,
            itype_width,
            has_context: flags & FLAG_CONTEXT != 0,
            has_time: flags & FLAG_TIME != 0,
            has_sijump: flags & FLAG_SIJUMP != 0,
            multi_retire: flags & FLAG_MULTI_RETIRE != 0,
            source,
        };
        Ok((header, 20 + source_len as u64))
    }
}

/// Reads until `buf` is full or the input ends; returns the number of bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Appends up to `len` bytes of `r` to `buf`, growing it only as data arrives; returns the number
/// of bytes read (less than `len` only at the end of the input).
fn read_up_to<R: Read>(r: &mut R, buf: &mut Vec<u8>, len: usize) -> io::Result<usize> {
    const STEP: usize = 1 << 16;
    let start = buf.len();
    while buf.len() - start < len {
        let want = (len - (buf.len() - start)).min(STEP);
        let old = buf.len();
        buf.resize(old + want, 0);
        let n = read_full(r, &mut buf[old..])?;
        buf.truncate(old + n);
        if n < want {
            break;
        }
    }
    Ok(buf.len() - start)
}

/// Prediction state shared by the encoder and decoder (module doc, "Records"). Only the fields
/// that predict something are read from `prev` (`iaddr`, `iretire`, `ilastsize`, `priv_`,
/// `context`, `time`): [`IngressWriter::write_predicted`] updates only those.
#[derive(Clone, Copy, Default)]
struct State {
    prev: Record,
    time_step: u64,
}

impl State {
    #[inline(always)]
    fn advance(&mut self, rec: Record) {
        self.time_step = rec.time.wrapping_sub(self.prev.time);
        self.prev = rec;
    }

    /// Whether `r` is the record this state predicts for one instruction: at the predicted
    /// address and time, same privilege and context, no trap fields, no context report, no
    /// `sijump`, a single 16- or 32-bit instruction (the one-byte encoding).
    #[inline(always)]
    fn predicts(&self, r: &Record) -> bool {
        r.iaddr == self.prev.next_iaddr() && self.predicts_but_address(r)
    }

    /// [`State::predicts`] but for the address: the encoding is the tag byte and, when the
    /// address is not the predicted one, its delta.
    #[inline(always)]
    fn predicts_but_address(&self, r: &Record) -> bool {
        let prev = &self.prev;
        let one = (r.iretire == 2 && r.ilastsize == 1) || (r.iretire == 1 && r.ilastsize == 0);
        one && r.time == prev.time.wrapping_add(self.time_step)
            && (r.cause | r.tval | r.ctype as u64) == 0
            && r.priv_ == prev.priv_
            && r.context == prev.context
            && !r.sijump
    }
}

/// Appends the encoding of `r` (module doc, "Records").
#[inline]
fn encode_record(out: &mut BlockBuf, st: &mut State, r: &Record) {
    // Fast path, the common case: one instruction at the predicted address with predicted
    // time, no trap fields and nothing changed, i.e. a tag byte with no address, no extension.
    if st.predicts(r) {
        encode_predicted(out, st, r);
        return;
    }
    let prev = &st.prev;
    let class = if r.iretire == 2 && r.ilastsize == 1 {
        SIZE_32
    } else if r.iretire == 1 && r.ilastsize == 0 {
        SIZE_16
    } else if r.iretire == prev.iretire && r.ilastsize == prev.ilastsize {
        SIZE_SAME
    } else {
        SIZE_EXPLICIT
    };
    let mut tag = r.itype.code() & 0x0f | class << TAG_SIZE_SHIFT;
    let pred_iaddr = prev.next_iaddr();
    if r.iaddr != pred_iaddr {
        tag |= TAG_ADDR;
    }
    let pred_time = prev.time.wrapping_add(st.time_step);
    let mut ext = 0u8;
    if r.cause != 0 {
        ext |= EXT_CAUSE;
    }
    if r.tval != 0 {
        ext |= EXT_TVAL;
    }
    if r.priv_ != prev.priv_ {
        ext |= EXT_PRIV;
    }
    if r.context != prev.context {
        ext |= EXT_CONTEXT;
    }
    if r.ctype != 0 {
        ext |= EXT_CTYPE;
    }
    if r.time != pred_time {
        ext |= EXT_TIME;
    }
    if r.sijump {
        ext |= EXT_SIJUMP;
    }
    if ext != 0 {
        tag |= TAG_EXT;
    }
    out.push(tag);
    if ext != 0 {
        out.push(ext);
    }
    if class == SIZE_EXPLICIT {
        out.put_u64(r.iretire as u64);
        out.push(r.ilastsize);
    }
    if tag & TAG_ADDR != 0 {
        out.put_u64(zigzag(r.iaddr.wrapping_sub(pred_iaddr) as i64));
    }
    if ext != 0 {
        if ext & EXT_CAUSE != 0 {
            out.put_u64(r.cause);
        }
        if ext & EXT_TVAL != 0 {
            out.put_u64(r.tval);
        }
        if ext & EXT_PRIV != 0 {
            out.push(r.priv_);
        }
        if ext & EXT_CONTEXT != 0 {
            out.put_u64(r.context);
        }
        if ext & EXT_CTYPE != 0 {
            out.push(r.ctype);
        }
        if ext & EXT_TIME != 0 {
            out.put_u64(zigzag(r.time.wrapping_sub(pred_time) as i64));
        }
    }
    st.advance(*r);
}

/// Appends the one-byte encoding of `r`, which `st` predicts ([`State::predicts`]), and advances
/// the prediction fields of `st` (the time step stays).
#[inline(always)]
fn encode_predicted(out: &mut BlockBuf, st: &mut State, r: &Record) {
    let class = if r.iretire == 2 { SIZE_32 } else { SIZE_16 };
    out.push(r.itype.code() & 0x0f | class << TAG_SIZE_SHIFT);
    advance_predicted(st, r);
}

/// Appends the encoding of `r`, which `st` predicts but for its address
/// ([`State::predicts_but_address`]): the tag byte, and the address delta if the address is not
/// the predicted one (what [`encode_record`] writes for it). Advances `st` as
/// [`encode_predicted`].
#[inline(always)]
fn encode_near(out: &mut BlockBuf, st: &mut State, r: &Record) {
    let class = if r.iretire == 2 { SIZE_32 } else { SIZE_16 };
    let tag = r.itype.code() & 0x0f | class << TAG_SIZE_SHIFT;
    let pred_iaddr = st.prev.next_iaddr();
    if r.iaddr == pred_iaddr {
        out.push(tag);
    } else {
        out.push(tag | TAG_ADDR);
        out.put_u64(zigzag(r.iaddr.wrapping_sub(pred_iaddr) as i64));
    }
    advance_predicted(st, r);
}

/// The prediction fields of `st` after `r` (the time step stays: `r` has the predicted time).
#[inline(always)]
fn advance_predicted(st: &mut State, r: &Record) {
    let prev = &mut st.prev;
    prev.iaddr = r.iaddr;
    prev.iretire = r.iretire;
    prev.ilastsize = r.ilastsize;
    prev.time = r.time;
}

/// Encodes the predicted records `nears` ([`IngressWriter::write_predicted_run`]) into `buf`
/// (room for [`NEAR_MAX`] bytes each), the first predicted at `pred_iaddr`; returns the bytes written,
/// the address after the last record and whether it is a 32-bit instruction. (Its own function
/// with the buffer an argument: the stores into it cannot alias what the records are read
/// from, which stays in registers.)
#[inline(always)]
fn encode_nears(
    buf: &mut [u8],
    mut pred_iaddr: u64,
    nears: impl Iterator<Item = Near>,
) -> (usize, u64, bool) {
    let mut p = 0;
    let mut size32 = false;
    for r in nears {
        let class = if r.size32 { SIZE_32 } else { SIZE_16 };
        let tag = r.itype.code() & 0x0f | class << TAG_SIZE_SHIFT;
        // As `encode_record`: the tag, the extension byte (`sijump` alone), the address delta.
        let ext = if r.sijump { TAG_EXT } else { 0 };
        if r.sijump {
            buf[p + 1] = EXT_SIJUMP;
        }
        if r.iaddr == pred_iaddr {
            buf[p] = tag | ext;
            p += 1 + r.sijump as usize;
        } else {
            buf[p] = tag | ext | TAG_ADDR;
            let delta = zigzag(r.iaddr.wrapping_sub(pred_iaddr) as i64);
            p = put_u64_at(buf, p + 1 + r.sijump as usize, delta);
        }
        size32 = r.size32;
        pred_iaddr = r.iaddr.wrapping_add(2 + 2 * size32 as u64);
    }
    (p, pred_iaddr, size32)
}

/// Appends the encoding of the block record `rec` ([`IngressWriter::write_block`]: like the
/// previous record but for address, size, `itype` and time) and advances `st`: the bytes
/// [`encode_record`] writes for it.
#[inline(always)]
fn encode_block(out: &mut BlockBuf, st: &mut State, rec: &Record) {
    let prev = &mut st.prev;
    debug_assert!(
        rec.priv_ == prev.priv_
            && rec.context == prev.context
            && (rec.cause | rec.tval | rec.ctype as u64) == 0
            && !rec.sijump,
        "not a block record like the previous one: {rec}"
    );
    let class = if rec.iretire == 2 && rec.ilastsize == 1 {
        SIZE_32
    } else if rec.iretire == 1 && rec.ilastsize == 0 {
        SIZE_16
    } else if rec.iretire == prev.iretire && rec.ilastsize == prev.ilastsize {
        SIZE_SAME
    } else {
        SIZE_EXPLICIT
    };
    let pred_iaddr = prev.next_iaddr();
    let pred_time = prev.time.wrapping_add(st.time_step);
    // tag, ext, iretire (5), ilastsize, address delta (10), time delta (10).
    let mut buf = [0u8; BLOCK_RECORD_MAX];
    let mut tag = rec.itype.code() & 0x0f | class << TAG_SIZE_SHIFT;
    let mut p = 1;
    if rec.time != pred_time {
        tag |= TAG_EXT;
        buf[1] = EXT_TIME;
        p = 2;
    }
    if class == SIZE_EXPLICIT {
        p = put_u64_at(&mut buf, p, rec.iretire as u64);
        buf[p] = rec.ilastsize;
        p += 1;
    }
    if rec.iaddr != pred_iaddr {
        tag |= TAG_ADDR;
        p = put_u64_at(
            &mut buf,
            p,
            zigzag(rec.iaddr.wrapping_sub(pred_iaddr) as i64),
        );
    }
    if rec.time != pred_time {
        p = put_u64_at(&mut buf, p, zigzag(rec.time.wrapping_sub(pred_time) as i64));
    }
    buf[0] = tag;
    // All of `buf` (a copy of fixed size, no call), counted to the record.
    out.put(&buf, p);
    st.time_step = rec.time.wrapping_sub(prev.time);
    prev.iaddr = rec.iaddr;
    prev.iretire = rec.iretire;
    prev.ilastsize = rec.ilastsize;
    prev.time = rec.time;
}

/// `v` (< 2^56) as unsigned LEB128 in the little-endian bytes of a word, and their number.
#[inline(always)]
fn varint_word(mut v: u64) -> (u64, usize) {
    let mut w = 0;
    let mut k = 0;
    while v >= 0x80 {
        w |= (v & 0x7f | 0x80) << (8 * k);
        v >>= 7;
        k += 1;
    }
    (w | v << (8 * k), k + 1)
}

const ERR_END: &str = "record runs past the end of its block";
const ERR_VARINT: &str = "invalid varint (longer than 10 bytes or over 64 bits)";

#[inline(always)]
fn varint(buf: &[u8], p: &mut usize) -> Result<u64, &'static str> {
    match get_u64(buf, p) {
        Some(v) => Ok(v),
        None if buf.len().saturating_sub(*p) < 10
            && buf[(*p).min(buf.len())..].iter().all(|&b| b >= 0x80) =>
        {
            Err(ERR_END)
        }
        None => Err(ERR_VARINT),
    }
}

#[inline(always)]
fn byte(buf: &[u8], p: &mut usize) -> Result<u8, &'static str> {
    let b = *buf.get(*p).ok_or(ERR_END)?;
    *p += 1;
    Ok(b)
}

/// Decodes the record at `*pos`; on success advances `*pos` and the state.
#[inline(always)]
fn decode_record(buf: &[u8], pos: &mut usize, st: &mut State) -> Result<Record, &'static str> {
    let mut p = *pos;
    let tag = byte(buf, &mut p)?;
    let prev = &st.prev;
    let ext = if tag & TAG_EXT != 0 {
        let e = byte(buf, &mut p)?;
        if e & EXT_RESERVED != 0 {
            return Err("reserved extension bit 7 is set");
        }
        e
    } else {
        0
    };
    let (iretire, ilastsize) = match (tag >> TAG_SIZE_SHIFT) & 3 {
        SIZE_32 => (2, 1),
        SIZE_16 => (1, 0),
        SIZE_SAME => (prev.iretire, prev.ilastsize),
        _ => {
            let n = varint(buf, &mut p)?;
            let n = u32::try_from(n).map_err(|_| "iretire does not fit 32 bits")?;
            (n, byte(buf, &mut p)?)
        }
    };
    let mut iaddr = prev.next_iaddr();
    if tag & TAG_ADDR != 0 {
        iaddr = iaddr.wrapping_add(unzigzag(varint(buf, &mut p)?) as u64);
    }
    let mut rec = Record {
        iaddr,
        iretire,
        ilastsize,
        itype: Itype::from_code(tag & 0x0f),
        cause: 0,
        tval: 0,
        priv_: prev.priv_,
        context: prev.context,
        ctype: 0,
        time: prev.time.wrapping_add(st.time_step),
        sijump: false,
    };
    if ext != 0 {
        if ext & EXT_CAUSE != 0 {
            rec.cause = varint(buf, &mut p)?;
        }
        if ext & EXT_TVAL != 0 {
            rec.tval = varint(buf, &mut p)?;
        }
        if ext & EXT_PRIV != 0 {
            rec.priv_ = byte(buf, &mut p)?;
        }
        if ext & EXT_CONTEXT != 0 {
            rec.context = varint(buf, &mut p)?;
        }
        if ext & EXT_CTYPE != 0 {
            rec.ctype = byte(buf, &mut p)?;
        }
        if ext & EXT_TIME != 0 {
            rec.time = rec.time.wrapping_add(unzigzag(varint(buf, &mut p)?) as u64);
        }
        rec.sijump = ext & EXT_SIJUMP != 0;
    }
    *pos = p;
    st.advance(rec);
    Ok(rec)
}

/// Writes a binary ingress file (format in the [module doc](self)).
///
/// Records are encoded into an in-memory block (64 KiB) that is written with one `write_all` when full,
/// so no buffering is needed around `w`. Call [`finish`](Self::finish) at the end: it writes the last
/// block and the end block; a writer dropped without `finish` leaves a file that readers report as
/// truncated.
pub struct IngressWriter<W: Write> {
    inner: W,
    block: BlockBuf,
    /// Payload size at which a block is closed.
    target: usize,
    count: u32,
    state: State,
    total: u64,
    /// The bytes of keyed runs' records after their first
    /// ([`write_predicted_run_keyed`](Self::write_predicted_run_keyed)), direct-mapped by key
    /// ([`run_slot`]; an empty slot holds a key of another slot, [`empty_slots`]).
    runs: Box<[RunBytes; RUN_SLOTS]>,
    /// The bytes of keyed block runs' records after their first
    /// ([`write_blocks_keyed`](Self::write_blocks_keyed)), direct-mapped by key as `runs`.
    block_runs: Box<[BlockRunBytes; RUN_SLOTS]>,
}

/// Slots of the keyed-run cache (64 bytes each).
const RUN_SLOTS: usize = 1024;
/// Most bytes of a cached run (a slot is 64 bytes).
const RUN_BYTES: usize = 43;

/// One slot of the keyed-run cache: a run's records, the encoding of those after its first.
#[derive(Clone, Copy)]
struct RunBytes {
    key: u64,
    /// The first record's address.
    first: u64,
    /// The last record's address minus the first's.
    last: i16,
    /// The first record's tag without `TAG_ADDR`.
    tag: u8,
    /// The last record is a 32-bit instruction.
    size32: bool,
    /// Bytes in `bytes`.
    len: u8,
    bytes: [u8; RUN_BYTES],
}

impl RunBytes {
    /// An empty slot holding `key`.
    fn empty(key: u64) -> RunBytes {
        RunBytes {
            key,
            first: 0,
            last: 0,
            tag: 0,
            size32: false,
            len: 0,
            bytes: [0; RUN_BYTES],
        }
    }
}

/// A keyed cache with every slot empty (`empty(key)`): slot `s` holds a key whose slot is not
/// `s` (0, or 1 in the slot of 0), which no lookup in `s` finds (a hit needs no separate
/// check).
fn empty_slots<T>(empty: impl Fn(u64) -> T) -> Box<[T; RUN_SLOTS]> {
    let slots: Vec<T> = (0..RUN_SLOTS)
        .map(|s| empty((s == run_slot(0)) as u64))
        .collect();
    slots
        .into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| unreachable!())
}

/// Most bytes of a cached block run (a slot is 128 bytes).
const BLOCK_RUN_BYTES: usize = 69;

/// One slot of the keyed block-run cache: the encoding of a run's block records after its
/// first, the prediction state it was encoded from (after the first record) and the one it
/// leaves (after the last).
#[derive(Clone, Copy)]
struct BlockRunBytes {
    key: u64,
    /// The address after the first record.
    next0: u64,
    /// The first record's time step.
    step0: u64,
    /// The last record's address.
    last_iaddr: u64,
    /// The last record's time minus the first's.
    last_dt: u64,
    /// The last record's time step.
    last_step: u64,
    /// The first record's size.
    iretire0: u32,
    /// The last record's size.
    last_iretire: u32,
    ilast0: u8,
    last_ilast: u8,
    /// Records in the run.
    m: u8,
    /// Bytes in `bytes`.
    len: u8,
    bytes: [u8; BLOCK_RUN_BYTES],
}

impl BlockRunBytes {
    /// An empty slot holding `key`.
    fn empty(key: u64) -> BlockRunBytes {
        BlockRunBytes {
            key,
            next0: 0,
            step0: 0,
            last_iaddr: 0,
            last_dt: 0,
            last_step: 0,
            iretire0: 0,
            last_iretire: 0,
            ilast0: 0,
            last_ilast: 0,
            m: 0,
            len: 0,
            bytes: [0; BLOCK_RUN_BYTES],
        }
    }
}

/// The slot of `key`.
#[inline(always)]
fn run_slot(key: u64) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - RUN_SLOTS.trailing_zeros())) as usize
}

impl<W: Write> IngressWriter<W> {
    /// Writes the header to `w` (an `InvalidInput` error if [`IngressHeader::validate`] fails).
    pub fn new(mut w: W, header: &IngressHeader) -> io::Result<Self> {
        header
            .validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        w.write_all(&header.to_bytes())?;
        Ok(IngressWriter {
            inner: w,
            block: BlockBuf::new(BLOCK_TARGET),
            target: BLOCK_TARGET,
            count: 0,
            state: State::default(),
            total: 0,
            runs: empty_slots(RunBytes::empty),
            block_runs: empty_slots(BlockRunBytes::empty),
        })
    }

    /// Close blocks once their payload reaches `bytes` (default 64 KiB; at least 1, at most
    /// 16 MiB minus the largest record; clamped). Smaller blocks lose less of a damaged file and
    /// compress less; tests use them to cross many block starts.
    pub fn block_target(mut self, bytes: usize) -> Self {
        self.target = bytes.clamp(1, MAX_BLOCK_PAYLOAD as usize - 64);
        // (Records written stay: a block past a smaller target closes after the next one.)
        let size = (BLOCK_HEADER + self.target).max(self.block.len) + BLOCK_SLACK;
        self.block.buf.resize(size, 0);
        self
    }

    /// Appends one record. (Inlined into the recorder's per-instruction path: without it the
    /// call costs ~6% of a run that writes ingress, measured with callgrind.)
    #[inline(always)]
    pub fn write(&mut self, rec: &Record) -> io::Result<()> {
        encode_record(&mut self.block, &mut self.state, rec);
        self.count += 1;
        self.total += 1;
        if self.block.len() >= BLOCK_HEADER + self.target {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Appends one record that the caller knows to be one the format predicts from the
    /// previous record written, but for its address: one 16- or 32-bit instruction at the
    /// previous time plus the previous time step, same `priv` and `context`, `cause`, `tval`,
    /// `ctype` 0, no `sijump`; any `itype`, any address (the [module doc](self): a tag byte,
    /// and the address delta when the address is not the one after the previous record). The
    /// same bytes as [`write`](Self::write), for less work: a producer that tracks the
    /// prediction itself (`rvtrace_sim::ingress::IngressRecorder`) skips the comparisons. A
    /// record that is not predicted so is a caller bug (checked in debug builds). The block's
    /// prediction state is reset at the start of every block, so the first two records of a
    /// block (the second one's time step is measured from the first) take the general path.
    #[inline(always)]
    pub fn write_predicted(&mut self, rec: &Record) -> io::Result<()> {
        if self.count < 2 {
            return self.write_first(*rec);
        }
        debug_assert!(
            self.state.predicts_but_address(rec),
            "not a predicted record: {rec}"
        );
        encode_near(&mut self.block, &mut self.state, rec);
        self.count += 1;
        self.total += 1;
        if self.block.len() >= BLOCK_HEADER + self.target {
            return self.flush_block();
        }
        Ok(())
    }

    /// Appends the `n` records of a predicted run ([`crate::RecordSink::predicted_run`]):
    /// `nears` yields them (exactly `n`), record `k` with the `priv` and `context` of `head`
    /// and the time `head.time + k * head.time_step`. The same bytes as
    /// [`write`](Self::write) of each (module doc: a tag byte, and the address delta when an
    /// address is not the one after the previous record), for less work: the prediction is
    /// checked once for the run, and where no block can close inside the run the records are
    /// encoded straight into the block in one loop. Records the format does not predict so
    /// (another `priv`, `context` or time than the previous record's) take the general path.
    #[inline]
    pub fn write_predicted_run(
        &mut self,
        head: &RunHead,
        n: usize,
        nears: impl Iterator<Item = Near>,
    ) -> io::Result<()> {
        if !self.run_fits(head, n) {
            return self.write_run_slow(head, nears);
        }
        let prev = &self.state.prev;
        if n == 0 {
            return Ok(());
        }
        // (`run_fits`: room for the longest encoding of every record.)
        let (len, next, size32) = encode_nears(self.block.room(), prev.next_iaddr(), nears);
        self.block.len += len;
        let iaddr = next.wrapping_sub(2 * (1 + size32 as u64));
        self.ran(head, n, iaddr, size32);
        Ok(())
    }

    /// Whether `n` records of a run with `head` are predicted from the previous record and no
    /// block closes inside them: the fast run paths' condition ([`Self::run_fits_bytes`] of
    /// the most bytes they take).
    #[inline(always)]
    fn run_fits(&self, head: &RunHead, n: usize) -> bool {
        self.run_fits_bytes(head, n * NEAR_MAX)
    }

    /// Whether records of a run with `head` are predicted from the previous record (its time
    /// step on, its `priv` and `context`) and, if they take at most `bytes`, no block closes
    /// inside them (a block closes after the record that takes its payload to the target).
    #[inline(always)]
    fn run_fits_bytes(&self, head: &RunHead, bytes: usize) -> bool {
        let prev = &self.state.prev;
        self.count >= 2
            && head.time == prev.time.wrapping_add(self.state.time_step)
            && head.time_step == self.state.time_step
            && head.priv_ == prev.priv_
            && head.context == prev.context
            && self.block.len() + bytes < BLOCK_HEADER + self.target
    }

    /// After the fast run paths wrote `n` records of `head`: the previous record is the last,
    /// at `iaddr`, of 4 bytes if `size32`.
    #[inline(always)]
    fn ran(&mut self, head: &RunHead, n: usize, iaddr: u64, size32: bool) {
        let prev = &mut self.state.prev;
        prev.iretire = 1 + size32 as u32;
        prev.ilastsize = size32 as u8;
        prev.iaddr = iaddr;
        prev.time = head
            .time
            .wrapping_add((n as u64 - 1).wrapping_mul(head.time_step));
        self.count += n as u32;
        self.total += n as u64;
    }

    /// [`write_predicted_run`](Self::write_predicted_run) of `n` (at least 2) records named
    /// by `key` ([`crate::RecordSink::predicted_run_keyed`]: every run with this key has these
    /// `n` records, but for their time), `ends` the first and the last. The same bytes as
    /// [`write`](Self::write) of each: the encoding of the records after the first depends on
    /// nothing but them (each one's address is predicted from the one before it, and the run
    /// is checked predicted as a whole), so once the run was encoded its bytes after the first
    /// record are kept, with what the first and the last are, and the next time
    /// ([`write_predicted_run_again`](Self::write_predicted_run_again)) copied after the
    /// first record's encoding without looking at `nears`. A key used for other records is a
    /// caller bug that writes wrong bytes.
    #[inline]
    pub fn write_predicted_run_keyed(
        &mut self,
        head: &RunHead,
        n: usize,
        key: u64,
        ends: (Near, Near),
        nears: impl Iterator<Item = Near>,
    ) -> io::Result<()> {
        if n < 2 || !self.run_fits(head, n) {
            return self.write_predicted_run(head, n, nears);
        }
        if self.write_predicted_run_again(head, n, key)? {
            return Ok(());
        }
        self.write_keyed_new(head, n, key, ends, nears);
        Ok(())
    }

    /// Writes the `n` records of a run given before to
    /// [`write_predicted_run_keyed`](Self::write_predicted_run_keyed) with `key` and kept,
    /// with `head` (their time, `priv` and `context`) and returns true; else (not kept, or the
    /// run not predicted as a whole, or the first record far from the previous one) writes
    /// nothing and returns false ([`crate::RecordSink::predicted_run_again`]). `n` is that
    /// run's (a key names runs of one length).
    #[inline(always)]
    pub fn write_predicted_run_again(
        &mut self,
        head: &RunHead,
        n: usize,
        key: u64,
    ) -> io::Result<bool> {
        let c = &self.runs[run_slot(key)];
        // (At most what the records take: fewer runs near a block's end are refused than
        // with `run_fits`.)
        if c.key != key || !self.run_fits_bytes(head, 8 + c.len as usize) {
            return Ok(false);
        }
        debug_assert!(n >= 2);
        // The first record: its tag, and its address delta when it is not where the previous
        // record predicts it, as little-endian bytes of a word (a delta of up to 7 bytes).
        let pred = self.state.prev.next_iaddr();
        let (word, len0) = if c.first == pred {
            (c.tag as u64, 1)
        } else {
            let delta = zigzag(c.first.wrapping_sub(pred) as i64);
            if delta >> 49 != 0 {
                return Ok(false);
            }
            let (v, len) = varint_word(delta);
            ((c.tag | TAG_ADDR) as u64 | v << 8, 1 + len)
        };
        // Both whole (copies of fixed size, no call), each counted to what it holds.
        self.block.put(&word.to_le_bytes(), len0);
        self.block.put(&c.bytes, c.len as usize);
        debug_assert!(self.block.len() - BLOCK_HEADER < self.target);
        let last = c.first.wrapping_add(c.last as i64 as u64);
        let size32 = c.size32;
        self.ran(head, n, last, size32);
        Ok(true)
    }

    /// [`write_predicted_run_keyed`](Self::write_predicted_run_keyed) of a key not kept: the
    /// records encoded, and kept in the key's slot when they fit.
    #[inline(never)]
    fn write_keyed_new(
        &mut self,
        head: &RunHead,
        n: usize,
        key: u64,
        ends: (Near, Near),
        nears: impl Iterator<Item = Near>,
    ) {
        let (first, last) = ends;
        let mut buf = [0u8; NEAR_MAX];
        let pred = self.state.prev.next_iaddr();
        let (len0, _, _) = encode_nears(&mut buf, pred, std::iter::once(first));
        self.block.put(&buf, len0);
        let rest = self.block.len();
        // (`run_fits`: room for the longest encoding of every record.)
        let (len, _, _) = encode_nears(
            self.block.room(),
            first.iaddr.wrapping_add(2 + 2 * first.size32 as u64),
            nears.skip(1),
        );
        self.block.len += len;
        // (A block may go on backwards: through a loop's branch.)
        let last_off = last.iaddr.wrapping_sub(first.iaddr) as i64;
        // (The again path writes the first record's tag and address alone.)
        if len <= RUN_BYTES && last_off as i16 as i64 == last_off && !first.sijump {
            let c = &mut self.runs[run_slot(key)];
            c.key = key;
            c.first = first.iaddr;
            c.tag = buf[0] & !TAG_ADDR;
            c.last = last_off as i16;
            c.size32 = last.size32;
            c.len = len as u8;
            c.bytes[..len].copy_from_slice(&self.block.buf[rest..rest + len]);
        }
        debug_assert!(self.block.len() - BLOCK_HEADER < self.target);
        self.ran(head, n, last.iaddr, last.size32);
    }

    /// Appends a record that differs from the previous record written only in `iaddr`,
    /// `iretire`, `ilastsize`, `itype` and `time` (same `priv` and `context`; `cause`, `tval`,
    /// `ctype` 0; no `sijump`): a block record of `rvtrace run --ingress-blocks`. The same
    /// bytes as [`write`](Self::write), for less work: the tag, the time delta when the time
    /// step changes, the size when it is not one instruction nor the previous record's, the
    /// address delta after a jump. A record that is not such is a caller bug (checked in debug
    /// builds).
    #[inline]
    pub fn write_block(&mut self, rec: &Record) -> io::Result<()> {
        if self.count < 2 {
            return self.write_first(*rec);
        }
        encode_block(&mut self.block, &mut self.state, rec);
        self.count += 1;
        self.total += 1;
        if self.block.len() >= BLOCK_HEADER + self.target {
            return self.flush_block();
        }
        Ok(())
    }

    /// The block records `recs` ([`write_block`](Self::write_block) of each), named by `key`
    /// ([`crate::RecordSink::blocks_keyed`]: every run given with this key has these records
    /// after the first, but for their time, which is the same distance from the first's). The
    /// same bytes as [`write`](Self::write) of each: the encoding of the records after the
    /// first depends on nothing but them and what the first leaves in the prediction state
    /// (the address after it, its size, its time step), so, with that state, those bytes are
    /// kept and the next time ([`write_blocks_again`](Self::write_blocks_again)) copied after
    /// the first record's encoding. A key used for other records is a caller bug that writes
    /// wrong bytes.
    #[inline(never)]
    pub fn write_blocks_keyed(&mut self, key: u64, recs: &[Record]) -> io::Result<()> {
        let m = recs.len();
        // Where a block may close inside the records: one by one (the first error returned
        // after all were given, as a sink that keeps the first error does).
        if m < 2 || self.block.len() + m * BLOCK_RECORD_MAX >= BLOCK_HEADER + self.target {
            let mut first = Ok(());
            for r in recs {
                if let Err(e) = self.write_block(r) {
                    first = first.and(Err(e));
                }
            }
            return first;
        }
        // No block closes below (`write_block` closes one only at the target).
        self.write_block(&recs[0])?;
        let st = &self.state;
        let (next0, iretire0, ilast0, step0) = (
            st.prev.next_iaddr(),
            st.prev.iretire,
            st.prev.ilastsize,
            st.time_step,
        );
        let rest = self.block.len();
        for r in &recs[1..] {
            self.write_block(r)?;
        }
        let len = self.block.len() - rest;
        if len <= BLOCK_RUN_BYTES {
            let st = &self.state;
            let c = &mut self.block_runs[run_slot(key)];
            *c = BlockRunBytes {
                key,
                next0,
                step0,
                iretire0,
                ilast0,
                m: m as u8,
                last_iaddr: st.prev.iaddr,
                last_dt: st.prev.time.wrapping_sub(recs[0].time),
                last_step: st.time_step,
                last_iretire: st.prev.iretire,
                last_ilast: st.prev.ilastsize,
                len: len as u8,
                bytes: c.bytes,
            };
            c.bytes[..len].copy_from_slice(&self.block.buf[rest..rest + len]);
        }
        debug_assert!(self.block.len() - BLOCK_HEADER < self.target);
        Ok(())
    }

    /// Writes the `m` block records of a run given before to
    /// [`write_blocks_keyed`](Self::write_blocks_keyed) with `key` and kept, the first of them
    /// `first` (its time, and its address and size when it goes on from a block before the
    /// run: the others' bytes were kept for the same address after it, size and time step),
    /// and returns true; else (not kept, or `first` other than the kept run's first in these,
    /// or not a block record like the previous one, or a block would close inside the
    /// records) writes nothing and returns false ([`crate::RecordSink::blocks_again`]).
    #[inline(always)]
    pub fn write_blocks_again(&mut self, first: &Record, m: usize, key: u64) -> io::Result<bool> {
        let c = &self.block_runs[run_slot(key)];
        let prev = &self.state.prev;
        if c.key != key
            || c.m as usize != m
            || self.count < 2
            || first.next_iaddr() != c.next0
            || first.iretire != c.iretire0
            || first.ilastsize != c.ilast0
            || first.time.wrapping_sub(prev.time) != c.step0
            || first.priv_ != prev.priv_
            || first.context != prev.context
            || self.block.len() + BLOCK_RECORD_MAX + c.len as usize >= BLOCK_HEADER + self.target
        {
            return Ok(false);
        }
        debug_assert!(
            (first.cause | first.tval | first.ctype as u64) == 0 && !first.sijump,
            "not a block record: {first}"
        );
        encode_block(&mut self.block, &mut self.state, first);
        // The kept bytes whole (a copy of fixed size, no call), counted to what they hold.
        self.block.put(&c.bytes, c.len as usize);
        let st = &mut self.state;
        st.prev.iaddr = c.last_iaddr;
        st.prev.iretire = c.last_iretire;
        st.prev.ilastsize = c.last_ilast;
        st.prev.time = first.time.wrapping_add(c.last_dt);
        st.time_step = c.last_step;
        self.count += m as u32;
        self.total += m as u64;
        debug_assert!(self.block.len() - BLOCK_HEADER < self.target);
        Ok(true)
    }

    /// [`write_predicted_run`](Self::write_predicted_run) one record at a time (at a block's
    /// start or end, or for records the state does not predict); the first error is returned
    /// after all records were given to the writer, as a sink that keeps the first error does.
    #[cold]
    #[inline(never)]
    fn write_run_slow(
        &mut self,
        head: &RunHead,
        nears: impl Iterator<Item = Near>,
    ) -> io::Result<()> {
        let mut first = Ok(());
        for (k, near) in nears.enumerate() {
            if let Err(e) = self.write(&near.record(head, k)) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// [`write`](Self::write) for the first records of a block, out of the predicted path (the
    /// record by value: the caller then needs no copy of it in memory).
    #[cold]
    #[inline(never)]
    fn write_first(&mut self, rec: Record) -> io::Result<()> {
        self.write(&rec)
    }

    /// Appends records.
    pub fn write_batch(&mut self, recs: &[Record]) -> io::Result<()> {
        recs.iter().try_for_each(|r| self.write(r))
    }

    /// Number of records written so far.
    pub fn records_written(&self) -> u64 {
        self.total
    }

    #[cold]
    #[inline(never)]
    fn flush_block(&mut self) -> io::Result<()> {
        let end = self.block.len;
        let block = &mut self.block.buf;
        let len = (end - BLOCK_HEADER) as u32;
        block[0..4].copy_from_slice(&len.to_le_bytes());
        block[4..8].copy_from_slice(&self.count.to_le_bytes());
        let mut crc = Crc32::new();
        crc.update(&block[0..8]);
        crc.update(&block[BLOCK_HEADER..end]);
        block[8..12].copy_from_slice(&crc.finish().to_le_bytes());
        self.inner.write_all(&block[..end])?;
        self.block.len = BLOCK_HEADER;
        self.count = 0;
        self.state = State::default();
        Ok(())
    }

    /// Writes the last block and the end block, flushes, and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        if self.count > 0 {
            self.flush_block()?;
        }
        let mut end = [0u8; BLOCK_HEADER + 8];
        end[0..4].copy_from_slice(&8u32.to_le_bytes());
        end[12..20].copy_from_slice(&self.total.to_le_bytes());
        let mut crc = Crc32::new();
        crc.update(&end[0..8]);
        crc.update(&end[12..20]);
        end[8..12].copy_from_slice(&crc.finish().to_le_bytes());
        self.inner.write_all(&end)?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

/// Reads a binary ingress file (format in the [module doc](self)).
///
/// Reads whole blocks with large reads, so no buffering is needed around `r`. Use
/// [`next_record`](Self::next_record), the [`Iterator`] impl, or the faster
/// [`read_batch`](Self::read_batch). After an error the reader stays failed.
pub struct IngressReader<R: Read> {
    inner: R,
    header: IngressHeader,
    buf: Vec<u8>,
    pos: usize,
    left: u32,
    payload_offset: u64,
    next_offset: u64,
    state: State,
    records: u64,
    done: bool,
    failed: bool,
    /// An error found by [`read_batch`](Self::read_batch) after it had records to return: it
    /// returns them first and this error on the next call.
    pending: Option<IngressError>,
}

impl<R: Read> IngressReader<R> {
    /// Reads and checks the header.
    pub fn new(mut r: R) -> Result<Self, IngressError> {
        let (header, len) = IngressHeader::read_from(&mut r)?;
        Ok(IngressReader {
            inner: r,
            header,
            buf: Vec::new(),
            pos: 0,
            left: 0,
            payload_offset: len,
            next_offset: len,
            state: State::default(),
            records: 0,
            done: false,
            failed: false,
            pending: None,
        })
    }

    /// The file header.
    pub fn header(&self) -> &IngressHeader {
        &self.header
    }

    /// Number of records returned so far.
    pub fn records_read(&self) -> u64 {
        self.records
    }

    /// The inner reader.
    pub fn into_inner(self) -> R {
        self.inner
    }

    fn fail(&mut self, e: IngressError) -> IngressError {
        self.failed = true;
        e
    }

    /// Loads the next block (or the end block). Only called when `left == 0` and not done.
    fn load_block(&mut self) -> Result<(), IngressError> {
        if self.failed {
            return Err(IngressError::corrupt(
                self.next_offset,
                "reader stopped after an earlier error",
            ));
        }
        match self.load_block_inner() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn load_block_inner(&mut self) -> Result<(), IngressError> {
        let off = self.next_offset;
        if self.pos != self.buf.len() {
            return Err(IngressError::corrupt(
                self.payload_offset + self.pos as u64,
                "block payload has bytes after its last record",
            ));
        }
        let mut hdr = [0u8; BLOCK_HEADER];
        let n = read_full(&mut self.inner, &mut hdr)?;
        if n < BLOCK_HEADER {
            return Err(IngressError::Truncated {
                offset: off + n as u64,
                what: if n == 0 {
                    crate::error::NO_END_BLOCK
                } else {
                    "block header"
                },
            });
        }
        let len = u32::from_le_bytes(hdr[0..4].try_into().expect("4 bytes"));
        let count = u32::from_le_bytes(hdr[4..8].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(hdr[8..12].try_into().expect("4 bytes"));
        if len == 0 || len > MAX_BLOCK_PAYLOAD {
            return Err(IngressError::corrupt(
                off,
                format!("block payload length {len} out of range"),
            ));
        }
        if count > len {
            return Err(IngressError::corrupt(
                off + 4,
                format!("block claims {count} records in {len} bytes"),
            ));
        }
        if count == 0 && len != 8 {
            return Err(IngressError::corrupt(
                off,
                format!("end block payload length {len}, expected 8"),
            ));
        }
        // Read what is there rather than allocate what the header claims: a damaged length
        // costs only the bytes the file really has (at most MAX_BLOCK_PAYLOAD).
        self.buf.clear();
        let n = read_up_to(&mut self.inner, &mut self.buf, len as usize)?;
        if n < len as usize {
            return Err(IngressError::Truncated {
                offset: off + (BLOCK_HEADER + n) as u64,
                what: "block payload",
            });
        }
        let mut c = Crc32::new();
        c.update(&hdr[0..8]);
        c.update(&self.buf);
        if c.finish() != crc {
            return Err(IngressError::corrupt(off, "block checksum mismatch"));
        }
        self.payload_offset = off + BLOCK_HEADER as u64;
        self.next_offset = self.payload_offset + len as u64;
        self.pos = 0;
        if count == 0 {
            let total = u64::from_le_bytes(self.buf[..8].try_into().expect("8 bytes"));
            self.pos = 8;
            if total != self.records {
                return Err(IngressError::corrupt(
                    off,
                    format!(
                        "end block counts {total} records, the file holds {}",
                        self.records
                    ),
                ));
            }
            let mut extra = [0u8; 1];
            if read_full(&mut self.inner, &mut extra)? != 0 {
                return Err(IngressError::corrupt(
                    self.next_offset,
                    "data after the end block",
                ));
            }
            self.done = true;
        } else {
            self.left = count;
            self.state = State::default();
        }
        Ok(())
    }

    fn decode_error(&mut self, msg: &'static str) -> IngressError {
        let e = IngressError::corrupt(self.payload_offset + self.pos as u64, msg);
        self.fail(e)
    }

    /// The next record, `Ok(None)` at the end of the file.
    #[inline]
    pub fn next_record(&mut self) -> Result<Option<Record>, IngressError> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        while self.left == 0 {
            if self.done {
                return Ok(None);
            }
            self.load_block()?;
        }
        match decode_record(&self.buf, &mut self.pos, &mut self.state) {
            Ok(r) => {
                self.left -= 1;
                self.records += 1;
                Ok(Some(r))
            }
            Err(msg) => Err(self.decode_error(msg)),
        }
    }

    /// Appends up to `max` records to `out`; returns how many were appended (0 only at the end of the
    /// file or when `max` is 0). This is the fast path: it decodes whole runs of a block in a tight loop.
    ///
    /// Damage never costs the records before it: when an error is found after some records were
    /// appended in this call, they are returned (`Ok(n)`) and the error comes on the next call. Every
    /// record returned comes from a block whose CRC was verified.
    pub fn read_batch(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, IngressError> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        let mut got = 0;
        while got < max {
            if self.left == 0 {
                if self.done {
                    break;
                }
                if let Err(e) = self.load_block() {
                    return self.defer(got, e);
                }
                continue;
            }
            let n = (self.left as usize).min(max - got);
            out.reserve(n);
            let buf = &self.buf[..];
            let mut pos = self.pos;
            let mut st = self.state;
            let mut done = 0;
            let mut err = None;
            while done < n {
                match decode_record(buf, &mut pos, &mut st) {
                    Ok(r) => {
                        out.push(r);
                        done += 1;
                    }
                    Err(msg) => {
                        err = Some(msg);
                        break;
                    }
                }
            }
            self.pos = pos;
            self.state = st;
            self.left -= done as u32;
            self.records += done as u64;
            got += done;
            if let Some(msg) = err {
                let e = self.decode_error(msg);
                return self.defer(got, e);
            }
        }
        Ok(got)
    }

    /// `Ok(got)` with `e` kept for the next call when `got` records are waiting, else `Err(e)`.
    fn defer(&mut self, got: usize, e: IngressError) -> Result<usize, IngressError> {
        if got == 0 {
            Err(e)
        } else {
            self.pending = Some(e);
            Ok(got)
        }
    }

    /// Reads all remaining records; on damage, the error alone (see
    /// [`read_to_end_partial`](Self::read_to_end_partial) to keep the records before it).
    pub fn read_to_end(&mut self) -> Result<Vec<Record>, IngressError> {
        match self.read_to_end_partial() {
            (v, None) => Ok(v),
            (_, Some(e)) => Err(e),
        }
    }

    /// Reads all remaining records: every record before any damage, and the error that ended the
    /// reading (`None` when the file is whole). A file cut at a block boundary (its writer was
    /// interrupted before [`IngressWriter::finish`]) gives all its records and an error for which
    /// [`IngressError::is_missing_end_block`] is true.
    pub fn read_to_end_partial(&mut self) -> (Vec<Record>, Option<IngressError>) {
        let mut v = Vec::new();
        loop {
            match self.read_batch(&mut v, 1 << 16) {
                Ok(0) => return (v, None),
                Ok(_) => {}
                Err(e) => return (v, Some(e)),
            }
        }
    }
}

impl<R: Read> Iterator for IngressReader<R> {
    type Item = Result<Record, IngressError>;

    /// Yields records, then `None`; after an error, the error once and then `None`.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed && self.pending.is_none() {
            return None;
        }
        self.next_record().transpose()
    }
}

/// Writes `records` as a complete binary file into a new vector.
pub fn to_vec(header: &IngressHeader, records: &[Record]) -> io::Result<Vec<u8>> {
    let mut w = IngressWriter::new(Vec::new(), header)?;
    w.write_batch(records)?;
    w.finish()
}

/// Reads a complete binary file from memory: its header and all records.
pub fn from_slice(data: &[u8]) -> Result<(IngressHeader, Vec<Record>), IngressError> {
    let mut r = IngressReader::new(data)?;
    let recs = r.read_to_end()?;
    Ok((r.header, recs))
}

/// A [`crate::RecordSink`] that gives every record to an [`IngressWriter`] with no check of an
/// earlier error per record: the first write error is kept in `err`, for the caller to report
/// when the run ends (`rvtrace run --ingress`).
pub struct WriterSink<'a, W: Write> {
    /// The writer.
    pub w: &'a mut IngressWriter<W>,
    /// The first write error, if any.
    pub err: &'a mut Option<io::Error>,
}

impl<W: Write> crate::RecordSink for WriterSink<'_, W> {
    #[inline(always)]
    fn record(&mut self, r: &Record) {
        if let Err(e) = self.w.write(r) {
            self.err.get_or_insert(e);
        }
    }

    #[inline(always)]
    fn predicted(&mut self, r: &Record) {
        if let Err(e) = self.w.write_predicted(r) {
            self.err.get_or_insert(e);
        }
    }

    #[inline(always)]
    fn block(&mut self, r: &Record) {
        if let Err(e) = self.w.write_block(r) {
            self.err.get_or_insert(e);
        }
    }

    /// A run's block records, kept by key.
    #[inline(always)]
    fn blocks_keyed(&mut self, key: u64, recs: &[Record]) {
        if let Err(e) = self.w.write_blocks_keyed(key, recs) {
            self.err.get_or_insert(e);
        }
    }

    /// A run's block records, copied when kept.
    #[inline(always)]
    fn blocks_again(&mut self, first: &Record, m: usize, key: u64) -> bool {
        match self.w.write_blocks_again(first, m, key) {
            Ok(done) => done,
            Err(e) => {
                self.err.get_or_insert(e);
                true
            }
        }
    }

    /// A block's predicted records in one go.
    #[inline(always)]
    fn predicted_run(&mut self, head: &RunHead, n: usize, nears: impl Iterator<Item = Near>) {
        if let Err(e) = self.w.write_predicted_run(head, n, nears) {
            self.err.get_or_insert(e);
        }
    }

    /// A block's predicted records in one go, copied when kept.
    #[inline(always)]
    fn predicted_run_again(&mut self, head: &RunHead, n: usize, key: u64) -> bool {
        match self.w.write_predicted_run_again(head, n, key) {
            Ok(done) => done,
            Err(e) => {
                self.err.get_or_insert(e);
                true
            }
        }
    }

    /// A block's predicted records in one go, kept by key.
    #[inline(always)]
    fn predicted_run_keyed(
        &mut self,
        head: &RunHead,
        n: usize,
        key: u64,
        ends: (Near, Near),
        nears: impl Iterator<Item = Near>,
    ) {
        if let Err(e) = self.w.write_predicted_run_keyed(head, n, key, ends, nears) {
            self.err.get_or_insert(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr() -> IngressHeader {
        IngressHeader::new(Xlen::Rv64, 4, "unit test")
    }

    #[test]
    fn a_header_a_writer_cannot_store_is_refused() {
        let bad = IngressHeader::new(Xlen::Rv64, 5, "unit test");
        assert_eq!(bad.validate(), Err(HeaderError::ItypeWidth(5)));
        let e = IngressWriter::new(Vec::new(), &bad).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(e.to_string(), "itype width must be 3 or 4, not 5");
        let long = IngressHeader::new(Xlen::Rv64, 3, "x".repeat(65536));
        assert_eq!(
            long.validate().unwrap_err().to_string(),
            "source description is 65536 bytes, at most 65535 allowed"
        );
        assert_eq!(hdr().validate(), Ok(()));
    }

    fn insn(iaddr: u64, size: u32) -> Record {
        Record {
            iaddr,
            iretire: size / 2,
            ilastsize: (size == 4) as u8,
            priv_: crate::privilege::M,
            ..Record::default()
        }
    }

    /// `write_predicted_run` writes the bytes `write` writes for each record: runs of every
    /// length (past the local buffer's chunk), sequential and jumping addresses (deltas of
    /// every varint length, both signs), both sizes, runs whose head the state does not predict,
    /// records between runs that change the time step, blocks closing at and inside runs.
    #[test]
    fn predicted_runs_write_the_same_bytes_as_records() {
        let mut rng = rvtrace_testkit::Rng(0x9e37_79b9_7f4a_7c15);
        let mut rnd = move |m: u64| rng.below(m);
        for target in [1, 61, 300, 1 << 16] {
            let h = hdr();
            let mut fast = IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target);
            let mut slow = IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target);
            let mut all = Vec::new();
            let (mut pc, mut time, mut step) = (0x8000_0000u64, 100u64, 1u64);
            let mut priv_ = crate::privilege::M;
            for _ in 0..400 {
                if rnd(4) == 0 {
                    // A record of the general path: new time step, sometimes a new privilege.
                    step = rnd(3);
                    time += step;
                    if rnd(3) == 0 {
                        priv_ ^= 1;
                    }
                    let r = Record {
                        time,
                        priv_,
                        ..insn(pc, 4)
                    };
                    fast.write(&r).unwrap();
                    slow.write(&r).unwrap();
                    all.push(r);
                    pc += 4;
                }
                let n = rnd(80) as usize;
                let mut nears: Vec<Near> = (0..n)
                    .map(|_| {
                        let size32 = rnd(2) == 0;
                        let iaddr = match rnd(8) {
                            0 => pc.wrapping_add(rnd(1 << 20) * 2).wrapping_sub(1 << 20),
                            1 => rnd(u64::MAX) & !1,
                            _ => pc,
                        };
                        pc = iaddr + 2 + 2 * size32 as u64;
                        Near {
                            iaddr,
                            itype: if rnd(4) == 0 {
                                Itype::from_code(rnd(16) as u8)
                            } else {
                                Itype::None
                            },
                            size32,
                            sijump: false,
                        }
                    })
                    .collect();
                // The last record sometimes with `sijump` (the only one of a run that may).
                if let Some(last) = nears.last_mut() {
                    last.sijump = rnd(3) == 0;
                }
                // Mostly the predicted head; sometimes one the state does not predict.
                let head = RunHead {
                    priv_: if rnd(10) == 0 { priv_ ^ 2 } else { priv_ },
                    context: 0,
                    time: time + step + (rnd(10) == 0) as u64,
                    time_step: step,
                };
                fast.write_predicted_run(&head, n, nears.iter().copied())
                    .unwrap();
                for (k, near) in nears.iter().enumerate() {
                    let r = near.record(&head, k);
                    slow.write(&r).unwrap();
                    all.push(r);
                }
                if n > 0 {
                    let last = all.last().unwrap();
                    (time, priv_) = (last.time, last.priv_);
                }
            }
            assert_eq!(fast.records_written(), all.len() as u64);
            let (fast, slow) = (fast.finish().unwrap(), slow.finish().unwrap());
            assert!(fast == slow, "block target {target}: bytes differ");
            assert_eq!(from_slice(&fast).unwrap().1, all);
        }
    }

    /// `write_predicted_run_keyed`, and `write_predicted_run_again` before it as the hart's
    /// recorder calls them, write the bytes `write` writes for each record: runs of 300 fixed
    /// blocks (each key one block and one length: many more keys than cache slots, so slots
    /// are taken over), cut at every length, coming from anywhere (the first record's address
    /// delta varies, also beyond what a kept run's copy writes), blocks whose records after the
    /// first take more bytes than a slot holds or whose last is far from their first, heads
    /// the state does not predict, blocks closing near runs.
    #[test]
    fn keyed_runs_write_the_same_bytes_as_records() {
        let mut rng = rvtrace_testkit::Rng(0x1234_5678_9abc_def1);
        let mut rnd = move |m: u64| rng.below(m);
        let mut blocks: Vec<Vec<Near>> = (0..300)
            .map(|b| {
                let mut pc = 0x8000_0000u64 + b * 0x1000;
                let far = b % 10 == 0;
                (0..2 + rnd(31))
                    .map(|_| {
                        let size32 = rnd(2) == 0;
                        let iaddr = match rnd(6) {
                            0 if far => rnd(u64::MAX) & !1,
                            0 => pc.wrapping_add(rnd(64) * 2).wrapping_sub(64),
                            _ => pc,
                        };
                        pc = iaddr + 2 + 2 * size32 as u64;
                        Near {
                            iaddr,
                            itype: if rnd(4) == 0 {
                                Itype::from_code(rnd(16) as u8)
                            } else {
                                Itype::None
                            },
                            size32,
                            sijump: false,
                        }
                    })
                    .collect()
            })
            .collect();
        // Some blocks' last record with `sijump` (in the runs of the whole block only).
        for b in &mut blocks {
            if let Some(last) = b.last_mut() {
                last.sijump = rnd(4) == 0;
            }
        }
        for target in [61, 300, 1 << 16] {
            let h = hdr();
            let mut fast = IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target);
            let mut slow = IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target);
            let mut all = Vec::new();
            let (mut time, mut step) = (100u64, 1u64);
            let priv_ = crate::privilege::M;
            let mut again = 0;
            for _ in 0..20_000 {
                if rnd(50) == 0 {
                    // A record of the general path, a new time step.
                    step = rnd(3);
                    time += step;
                    let iaddr = if rnd(4) == 0 {
                        rnd(u64::MAX) & !1
                    } else {
                        rnd(1 << 40) * 2
                    };
                    let r = Record {
                        time,
                        priv_,
                        ..insn(iaddr, 4)
                    };
                    fast.write(&r).unwrap();
                    slow.write(&r).unwrap();
                    all.push(r);
                }
                // Mostly whole blocks of the first few, as a program runs its hot blocks.
                let b = if rnd(2) == 0 { rnd(20) } else { rnd(300) } as usize;
                let blk = &blocks[b];
                let n = if rnd(3) == 0 {
                    2 + rnd(blk.len() as u64 - 1) as usize
                } else {
                    blk.len()
                };
                let nears = &blk[..n];
                let head = RunHead {
                    priv_,
                    context: 0,
                    time: time + step + (rnd(20) == 0) as u64,
                    time_step: step,
                };
                let key = (b as u64) << 6 | n as u64;
                if rnd(8) != 0 && fast.write_predicted_run_again(&head, n, key).unwrap() {
                    again += 1;
                } else {
                    fast.write_predicted_run_keyed(
                        &head,
                        n,
                        key,
                        (nears[0], nears[n - 1]),
                        nears.iter().copied(),
                    )
                    .unwrap();
                }
                for (k, near) in nears.iter().enumerate() {
                    let r = near.record(&head, k);
                    slow.write(&r).unwrap();
                    all.push(r);
                }
                time = all.last().unwrap().time;
            }
            assert_eq!(fast.records_written(), all.len() as u64);
            let (fast, slow) = (fast.finish().unwrap(), slow.finish().unwrap());
            assert!(fast == slow, "block target {target}: bytes differ");
            assert_eq!(from_slice(&fast).unwrap().1, all);
            assert!(again > 500, "block target {target}: {again} runs copied");
        }
    }

    /// No key finds an empty slot of the keyed-run cache (a slot holds a key of another).
    #[test]
    fn empty_run_slots_hold_no_key_of_theirs() {
        let slots = empty_slots(RunBytes::empty);
        for (s, c) in slots.iter().enumerate() {
            assert_ne!(run_slot(c.key), s);
        }
    }

    /// `varint_word` gives the bytes `put_u64_at` writes, for every length it takes.
    #[test]
    fn varint_word_is_leb128() {
        for bits in 0..56 {
            let top = 1u64 << bits;
            for v in [top, top - 1, top | 0x5a5a_5a5a_5a5a_5a5a & (top - 1)] {
                let mut buf = [0u8; 10];
                let n = put_u64_at(&mut buf, 0, v);
                let (w, k) = varint_word(v);
                assert_eq!(&w.to_le_bytes()[..k], &buf[..n], "{v:#x}");
                if k < 8 {
                    assert_eq!(w >> (8 * k), 0, "{v:#x}");
                }
            }
        }
    }

    /// `write_block` writes the bytes `write` writes: block records of every size class, time
    /// steps that repeat and change, jumps, across block starts.
    #[test]
    fn block_records_write_the_same_bytes_as_records() {
        let mut rng = rvtrace_testkit::Rng(0x2545_f491_4f6c_dd1d);
        let mut rnd = move |m: u64| rng.below(m);
        for target in [1, 50, 1 << 16] {
            let h = hdr();
            let mut fast = IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target);
            let mut slow = IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target);
            let mut all = Vec::new();
            let (mut pc, mut time) = (0x8000_0000u64, 0u64);
            for _ in 0..2000 {
                let iretire = [1, 2, 5, 6, 300, 1 << 20][rnd(6) as usize] as u32;
                let ilastsize = if iretire == 1 { 0 } else { rnd(2) as u8 };
                if rnd(3) == 0 {
                    pc = pc.wrapping_add(rnd(1 << 22)).wrapping_sub(1 << 21) & !1;
                }
                time += [1, 3, 4, 1000][rnd(4) as usize];
                let r = Record {
                    iaddr: pc,
                    iretire,
                    ilastsize,
                    itype: Itype::from_code(rnd(16) as u8),
                    priv_: crate::privilege::M,
                    time,
                    ..Record::default()
                };
                fast.write_block(&r).unwrap();
                slow.write(&r).unwrap();
                all.push(r);
                pc = r.next_iaddr();
            }
            let (fast, slow) = (fast.finish().unwrap(), slow.finish().unwrap());
            assert!(fast == slow, "block target {target}: bytes differ");
            assert_eq!(from_slice(&fast).unwrap().1, all);
        }
    }

    /// `write_blocks_keyed`, and `write_blocks_again` before it as the hart's recorder calls
    /// them, write the bytes `write` writes for each record: runs of 300 fixed sequences of
    /// block records (each key one sequence: more keys than cache slots, so slots are taken
    /// over), their first record sometimes going on from a block before it (another address
    /// and size, the same address after it) or with another size of its last instruction, coming at other time steps, after records of the
    /// general path, sizes that repeat (the size class of the second record depends on the
    /// first's), runs whose records take more bytes than a slot holds, across block starts.
    #[test]
    fn keyed_block_runs_write_the_same_bytes_as_records() {
        let mut rng = rvtrace_testkit::Rng(0x5eed_b10c_4a11_7e57);
        let mut rnd = move |m: u64| rng.below(m);
        // (records, times after the first's).
        let runs: Vec<(Vec<Record>, Vec<u64>)> = (0..300)
            .map(|b| {
                let mut pc = 0x8000_0000u64 + b * 0x1000;
                let m = 2 + rnd(if b % 10 == 0 { 40 } else { 8 }) as usize;
                let mut dt = 0;
                let mut recs = Vec::new();
                let mut times = Vec::new();
                for _ in 0..m {
                    let iretire = [2, 3, 5, 1, 2, 40][rnd(6) as usize];
                    if rnd(3) == 0 {
                        pc = pc.wrapping_add(rnd(256) * 2).wrapping_sub(256);
                    }
                    recs.push(Record {
                        iaddr: pc,
                        iretire,
                        ilastsize: if iretire == 1 { 0 } else { rnd(2) as u8 },
                        itype: Itype::from_code(1 + rnd(15) as u8),
                        priv_: crate::privilege::M,
                        ..Record::default()
                    });
                    times.push(dt);
                    dt += 1 + rnd(4);
                    pc = recs.last().unwrap().next_iaddr();
                }
                (recs, times)
            })
            .collect();
        for target in [61, 300, 1 << 16] {
            let h = hdr();
            let mut fast = IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target);
            let mut slow = IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target);
            let mut all = Vec::new();
            let mut time = 100u64;
            let mut again = 0;
            for _ in 0..20_000 {
                if rnd(30) == 0 {
                    // A record of the general path (a trap: no instruction retired).
                    let r = Record {
                        iaddr: rnd(1 << 40) * 2,
                        iretire: 0,
                        itype: Itype::Exception,
                        cause: 2,
                        time,
                        priv_: crate::privilege::M,
                        ..Record::default()
                    };
                    fast.write(&r).unwrap();
                    slow.write(&r).unwrap();
                    all.push(r);
                }
                // Mostly the first few, as a program runs its hot blocks.
                let b = if rnd(2) == 0 { rnd(20) } else { rnd(300) } as usize;
                let (recs, times) = &runs[b];
                let t0 = time + [1, 1, 1, 2, 7][rnd(5) as usize];
                let mut recs: Vec<Record> = recs
                    .iter()
                    .zip(times)
                    .map(|(r, dt)| Record {
                        time: t0 + dt,
                        ..*r
                    })
                    .collect();
                if rnd(4) == 0 {
                    // The first record goes on from a block before the run.
                    let k = 1 + rnd(6) as u32;
                    recs[0].iaddr = recs[0].iaddr.wrapping_sub(2 * k as u64);
                    recs[0].iretire += k;
                }
                if rnd(6) == 0 && recs[0].iretire > 1 {
                    // Another size of its last instruction.
                    recs[0].ilastsize ^= 1;
                }
                let key = b as u64 + 8;
                if rnd(8) != 0 && fast.write_blocks_again(&recs[0], recs.len(), key).unwrap() {
                    again += 1;
                } else {
                    fast.write_blocks_keyed(key, &recs).unwrap();
                }
                for r in &recs {
                    slow.write(r).unwrap();
                }
                time = recs.last().unwrap().time;
                all.extend(recs);
            }
            assert_eq!(fast.records_written(), all.len() as u64);
            let (fast, slow) = (fast.finish().unwrap(), slow.finish().unwrap());
            assert!(fast == slow, "block target {target}: bytes differ");
            assert_eq!(from_slice(&fast).unwrap().1, all);
            if target > 61 {
                assert!(again > 2000, "block target {target}: {again} runs copied");
            }
        }
    }

    /// No key finds an empty slot of the keyed block-run cache.
    #[test]
    fn empty_block_run_slots_hold_no_key_of_theirs() {
        let slots = empty_slots(BlockRunBytes::empty);
        for (s, c) in slots.iter().enumerate() {
            assert_ne!(run_slot(c.key), s);
        }
    }

    #[test]
    fn sequential_instruction_is_one_byte() {
        let mut st = State::default();
        let mut out = BlockBuf::new(64);
        encode_record(&mut out, &mut st, &insn(0x8000_0000, 4));
        let first = out.len();
        encode_record(&mut out, &mut st, &insn(0x8000_0004, 2));
        encode_record(&mut out, &mut st, &insn(0x8000_0006, 4));
        assert_eq!(out.len() - first, 2);
        // Non-taken branch: still one byte.
        let mut br = insn(0x8000_000a, 4);
        br.itype = Itype::NonTakenBranch;
        encode_record(&mut out, &mut st, &br);
        assert_eq!(out.len() - first, 3);
        assert_eq!(out.written()[out.len() - 1], 4);
    }

    #[test]
    fn exact_bytes_of_a_small_file() {
        let recs = [insn(0x8000_0000, 4), insn(0x8000_0004, 2)];
        let bytes = to_vec(&IngressHeader::new(Xlen::Rv32, 3, "x"), &recs).unwrap();
        let mut expect = Vec::new();
        expect.extend_from_slice(b"RVTRINGR");
        expect.extend_from_slice(&[1, 0, 0, 0, 32, 3, 1, 0, b'x']);
        let c = crc32(&expect);
        expect.extend_from_slice(&c.to_le_bytes());
        // Record 1: tag EXT|ADDR|class 0|itype 0 = 0xC0, ext PRIV = 0x04,
        // delta zigzag(0x80000000) = 0x100000000 -> 80 80 80 80 10, priv 3.
        // Record 2: tag class 1 = 0x10.
        let payload = [0xC0, 0x04, 0x80, 0x80, 0x80, 0x80, 0x10, 0x03, 0x10];
        let mut blk = Vec::new();
        blk.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        blk.extend_from_slice(&2u32.to_le_bytes());
        let mut c = Crc32::new();
        c.update(&blk);
        c.update(&payload);
        blk.extend_from_slice(&c.finish().to_le_bytes());
        blk.extend_from_slice(&payload);
        expect.extend_from_slice(&blk);
        let mut end = Vec::new();
        end.extend_from_slice(&8u32.to_le_bytes());
        end.extend_from_slice(&0u32.to_le_bytes());
        let mut c = Crc32::new();
        c.update(&end);
        c.update(&2u64.to_le_bytes());
        end.extend_from_slice(&c.finish().to_le_bytes());
        end.extend_from_slice(&2u64.to_le_bytes());
        expect.extend_from_slice(&end);
        assert_eq!(bytes, expect);
        let (h, back) = from_slice(&bytes).unwrap();
        assert_eq!(h.xlen, Xlen::Rv32);
        assert_eq!(h.itype_width, 3);
        assert_eq!(h.source, "x");
        assert_eq!(back, recs);
    }

    #[test]
    fn header_errors() {
        assert!(matches!(
            IngressReader::new(&b"hello world, this is text"[..]),
            Err(IngressError::NotIngressFile)
        ));
        let mut b = to_vec(&hdr(), &[]).unwrap();
        b[8] = 7;
        let e = IngressReader::new(&b[..]).err().unwrap();
        assert_eq!(
            e.to_string(),
            "unsupported ingress format version 7 (this build reads 1)"
        );
        assert!(matches!(
            IngressReader::new(&b"RVTR"[..]),
            Err(IngressError::Truncated { offset: 4, .. })
        ));
        let mut bad = hdr();
        bad.itype_width = 5;
        assert!(IngressWriter::new(Vec::new(), &bad).is_err());
    }

    #[test]
    fn empty_file_and_flags_round_trip() {
        let mut h = hdr();
        h.has_time = true;
        h.has_sijump = true;
        let b = to_vec(&h, &[]).unwrap();
        let (h2, recs) = from_slice(&b).unwrap();
        assert_eq!(h2, h);
        assert!(recs.is_empty());
    }

    #[test]
    fn non_canonical_encodings_are_accepted() {
        // Class 2 for a 32-bit instruction, an empty EXT byte, ADDR with delta 0.
        let mut st = State::default();
        let buf = [0x80 | 0x40 | 0x20, 0x00, 0x02, 0x01, 0x00];
        let r = decode_record(&buf, &mut 0, &mut st).unwrap();
        assert_eq!((r.iaddr, r.iretire, r.ilastsize), (0, 2, 1));
        // Reserved EXT bit.
        assert!(decode_record(&[0x80, 0x80], &mut 0, &mut State::default()).is_err());
        // iretire over 32 bits.
        assert!(decode_record(
            &[0x20, 0x80, 0x80, 0x80, 0x80, 0x10, 0],
            &mut 0,
            &mut State::default()
        )
        .is_err());
    }
}
