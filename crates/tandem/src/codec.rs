//! The byte format of the tandem-verification trace (`tandem-trace-protocol-2018.txt`,
//! chapter 2 "Trace Format" and chapter 3 "Notes").
//!
//! A trace is a sequence of *records*, each an opcode byte and a payload whose length the opcode
//! (and, for some opcodes, the parameters XLEN, FLEN and MLEN) determines. Multi-byte fields are
//! little-endian; fields narrower than a byte share one byte, the first field in the least
//! significant bits (chapter 3).
//!
//! Two places where the specification's appendix C disagrees with its chapter 2 table are read
//! both ways, and written the table's way:
//!
//! * the additional-state identifier of the pc is 10 in the table (0x0a) but is spelled `10`
//!   (0x10) in tables C.2, C.7 and C.8. The decoder takes both; the encoder writes
//!   [`Params::pc_ident`], 10 unless asked otherwise.
//! * table C.5 writes opcode `10` (16-bit instruction) before the 32-bit instruction `lw tp,
//!   8(t0)`. A 16-bit instruction never has its two low bits set (those are the 32-bit
//!   encodings), so a 16-bit instruction record whose parcel has them set is read as the
//!   32-bit instruction it is, and [`Record::Insn32`] is written with opcode 17.

use std::fmt;

/// Opcodes (chapter 2, first table).
#[allow(missing_docs)]
pub mod op {
    pub const BEGIN_GROUP: u8 = 1;
    pub const END_GROUP: u8 = 2;
    pub const INCR_PC: u8 = 3;
    pub const FULL_REG: u8 = 4;
    pub const INCR_REG_ADD: u8 = 5;
    pub const INCR_REG_OR: u8 = 6;
    pub const ADDL_STATE: u8 = 7;
    pub const MEM_REQ: u8 = 8;
    pub const MEM_RSP: u8 = 9;
    pub const HART_RESET: u8 = 10;
    pub const STATE_INIT: u8 = 11;
    pub const INSN16: u8 = 16;
    pub const INSN32: u8 = 17;
}

/// Additional-state identifiers (chapter 2, "Identifier" table).
#[allow(missing_docs)]
pub mod state {
    pub const PRIV: u8 = 1;
    pub const PADDR: u8 = 2;
    pub const EADDR: u8 = 3;
    pub const DATA8: u8 = 4;
    pub const DATA16: u8 = 5;
    pub const DATA32: u8 = 6;
    pub const DATA64: u8 = 7;
    pub const MTIME: u8 = 8;
    pub const PC_PADDR: u8 = 9;
    /// The pc, as chapter 2's table numbers it.
    pub const PC: u8 = 10;
    /// The pc as appendix C's tables C.2, C.7 and C.8 spell it (`10` read as hexadecimal).
    pub const PC_APPENDIX: u8 = 0x10;
}

/// Memory request operations (chapter 2, "Memory Request Opcode").
#[allow(missing_docs)]
pub mod mem_op {
    pub const LOAD: u8 = 0;
    pub const STORE: u8 = 1;
    pub const LR: u8 = 2;
    pub const SC: u8 = 3;
    pub const AMO_SWAP: u8 = 4;
    pub const AMO_ADD: u8 = 5;
    pub const AMO_XOR: u8 = 6;
    pub const AMO_AND: u8 = 7;
    pub const AMO_OR: u8 = 8;
    pub const AMO_MIN: u8 = 9;
    pub const AMO_MAX: u8 = 10;
    pub const AMO_MINU: u8 = 11;
    pub const AMO_MAXU: u8 = 12;
    pub const IFETCH: u8 = 13;

    /// The operation of an A-extension instruction (opcode AMO = 0x2f) by its funct5
    /// (instruction bits 31:27): LR, SC or one of the AMOs; unknown funct5 values (the
    /// instruction is illegal) read as AMOMAXU.
    pub fn from_amo_funct5(funct5: u32) -> u8 {
        match funct5 {
            0x02 => LR,
            0x03 => SC,
            0x01 => AMO_SWAP,
            0x00 => AMO_ADD,
            0x04 => AMO_XOR,
            0x0c => AMO_AND,
            0x08 => AMO_OR,
            0x10 => AMO_MIN,
            0x14 => AMO_MAX,
            0x18 => AMO_MINU,
            _ => AMO_MAXU,
        }
    }

    /// Name of an operation, as a person reads it.
    pub fn name(op: u8) -> &'static str {
        match op {
            LOAD => "load",
            STORE => "store",
            LR => "lr",
            SC => "sc",
            AMO_SWAP => "amoswap",
            AMO_ADD => "amoadd",
            AMO_XOR => "amoxor",
            AMO_AND => "amoand",
            AMO_OR => "amoor",
            AMO_MIN => "amomin",
            AMO_MAX => "amomax",
            AMO_MINU => "amominu",
            AMO_MAXU => "amomaxu",
            IFETCH => "ifetch",
            _ => "?",
        }
    }

    /// The request carries data (chapter 2: "0 for load, depends on size for store and amo").
    pub fn request_has_data(op: u8) -> bool {
        matches!(op, STORE | SC | AMO_SWAP..=AMO_MAXU)
    }

    /// The response carries data (chapter 2: "0 for store, depends on size for load and amo").
    pub fn response_has_data(op: u8) -> bool {
        matches!(op, LOAD | LR | AMO_SWAP..=AMO_MAXU | IFETCH)
    }
}

/// Register address space (chapter 3: "as specified in the RISC-V Debug Specification": CSRs at
/// 0x0000-0x0fff, GPRs at 0x1000-0x101f, FPRs at 0x1020-0x103f).
#[allow(missing_docs)]
pub mod reg {
    pub const GPR0: u16 = 0x1000;
    pub const FPR0: u16 = 0x1020;
    pub const FCSR: u16 = 0x003;

    /// Address of integer register `n`.
    pub const fn gpr(n: u8) -> u16 {
        GPR0 + n as u16
    }
    /// Address of floating-point register `n`.
    pub const fn fpr(n: u8) -> u16 {
        FPR0 + n as u16
    }
    /// The register is a floating-point register (its full form carries FLEN bits).
    pub const fn is_fpr(addr: u16) -> bool {
        addr >= FPR0 && addr < FPR0 + 32
    }
    /// The register is an integer register.
    pub const fn is_gpr(addr: u16) -> bool {
        addr >= GPR0 && addr < GPR0 + 32
    }
    /// The register is a CSR.
    pub const fn is_csr(addr: u16) -> bool {
        addr < 0x1000
    }
}

/// The parameters encoder and decoder must agree on (chapter 3: "The trace encoder and decoder
/// must agree on all parameters that impact trace data ... Negotiation of these parameters
/// between the two is outside the scope of this protocol").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// XLEN: 32 or 64.
    pub xlen: u32,
    /// FLEN: 32 or 64 (0 when there are no floating-point registers).
    pub flen: u32,
    /// MLEN in bits (32, 34 or 64; fields are rounded up to whole bytes).
    pub mlen: u32,
    /// Identifier written for the pc additional state: [`state::PC`] (chapter 2) or
    /// [`state::PC_APPENDIX`] (appendix C's spelling). Both are always read.
    pub pc_ident: u8,
}

impl Params {
    /// RV64 with D: XLEN = FLEN = MLEN = 64 (appendix C's hart).
    pub const RV64: Params = Params {
        xlen: 64,
        flen: 64,
        mlen: 64,
        pc_ident: state::PC,
    };

    /// RV32 with D and without Sv32: XLEN = 32, FLEN = 64, MLEN = 32.
    pub const RV32: Params = Params {
        xlen: 32,
        flen: 64,
        mlen: 32,
        pc_ident: state::PC,
    };

    /// Bytes of an XLEN field.
    #[inline(always)]
    pub fn xbytes(&self) -> usize {
        (self.xlen as usize).div_ceil(8)
    }
    /// Bytes of an FLEN field.
    #[inline(always)]
    pub fn fbytes(&self) -> usize {
        (self.flen as usize).div_ceil(8)
    }
    /// Bytes of an MLEN field (chapter 3: "MLEN width payload fields are rounded up to a
    /// multiple of 8 bits").
    #[inline(always)]
    pub fn mbytes(&self) -> usize {
        (self.mlen as usize).div_ceil(8)
    }
    /// Bytes of the data of a full-register record for `addr`.
    #[inline(always)]
    pub fn reg_bytes(&self, addr: u16) -> usize {
        if reg::is_fpr(addr) {
            self.fbytes()
        } else {
            self.xbytes()
        }
    }
    /// Check the parameters are ones the codec can represent.
    pub fn validate(&self) -> Result<(), ParamsError> {
        if self.xlen != 32 && self.xlen != 64 {
            return Err(ParamsError::Xlen(self.xlen));
        }
        if !matches!(self.flen, 0 | 32 | 64) {
            return Err(ParamsError::Flen(self.flen));
        }
        if self.mlen == 0 || self.mlen > 64 {
            return Err(ParamsError::Mlen(self.mlen));
        }
        Ok(())
    }
}

/// Parameters the codec cannot represent ([`Params::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamsError {
    /// XLEN is neither 32 nor 64.
    Xlen(u32),
    /// FLEN is not 0, 32 or 64.
    Flen(u32),
    /// MLEN is not 1..64.
    Mlen(u32),
}

impl fmt::Display for ParamsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamsError::Xlen(x) => write!(f, "XLEN must be 32 or 64, not {x}"),
            ParamsError::Flen(x) => write!(f, "FLEN must be 0, 32 or 64, not {x}"),
            ParamsError::Mlen(x) => write!(f, "MLEN must be 1..64, not {x}"),
        }
    }
}

impl std::error::Error for ParamsError {}

/// Additional state (opcode 7), by identifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddlState {
    /// 1: privilege mode (PRIVLEN = 2 bits, zero-extended to 8).
    Priv(u8),
    /// 2: physical address (MLEN).
    Paddr(u64),
    /// 3: effective address (MLEN).
    Eaddr(u64),
    /// 4-7: memory store data, `size` = log2 of the bytes (0..=3).
    StoreData {
        /// log2 of the size in bytes.
        size: u8,
        /// The data.
        value: u64,
    },
    /// 8: mtime (64 bits).
    Mtime(u64),
    /// 9: physical address of the pc (MLEN).
    PcPaddr(u64),
    /// 10: the program counter (XLEN).
    Pc(u64),
}

/// One record of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// 1: begin group (atomic state update).
    BeginGroup,
    /// 2: end group.
    EndGroup,
    /// 3: increment the pc by the length of the group's instruction.
    IncrPc,
    /// 4: full register: 16-bit address, XLEN or FLEN data.
    FullReg {
        /// Register address ([`reg`]).
        addr: u16,
        /// New value (XLEN or FLEN bits).
        value: u64,
    },
    /// 5: incremental register: 16-bit address, 8-bit signed offset added.
    IncrRegAdd {
        /// Register address.
        addr: u16,
        /// Signed offset.
        offset: i8,
    },
    /// 6: incremental register: 16-bit address, 8-bit mask ORed in.
    IncrRegOr {
        /// Register address.
        addr: u16,
        /// Bits to set.
        mask: u8,
    },
    /// 7: additional state.
    State(AddlState),
    /// 8: memory request.
    MemReq {
        /// Address (MLEN).
        addr: u64,
        /// Operation ([`mem_op`]).
        op: u8,
        /// log2 of the size in bytes (0..=3).
        size: u8,
        /// Data for stores, SC and AMOs.
        data: Option<u64>,
    },
    /// 9: memory response.
    MemRsp {
        /// log2 of the size in bytes (0..=3).
        size: u8,
        /// 0 success, 1 failure.
        result: u8,
        /// Data for loads, LR and AMOs.
        data: Option<u64>,
    },
    /// 10: hart reset.
    HartReset,
    /// 11: state initialization.
    StateInit,
    /// 16: a 16-bit instruction.
    Insn16(u16),
    /// 17: a 32-bit instruction.
    Insn32(u32),
}

/// Why bytes could not be read as a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The bytes end inside a record: `need` bytes make the record, `have` are there.
    Truncated {
        /// The record's opcode.
        opcode: u8,
        /// Bytes the record needs.
        need: usize,
        /// Bytes left.
        have: usize,
    },
    /// No such opcode.
    UnknownOpcode(u8),
    /// No such additional-state identifier.
    UnknownState(u8),
    /// No such memory request operation.
    UnknownMemOp(u8),
    /// A memory request or response size other than 0..=3.
    BadMemSize(u8),
    /// A memory response result other than 0 (success) or 1 (failure) (chapter 2, "Memory
    /// Request Result").
    BadMemResult(u8),
    /// A privilege mode above 3 (chapter 3: PRIVLEN is 2, zero extended to 8 bits).
    BadPriv(u8),
    /// A memory response that does not immediately follow a memory request (chapter 3: "If
    /// present, a memory response field must immediately follow the corresponding memory
    /// request").
    OrphanResponse,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ErrorKind::Truncated { opcode, need, have } => write!(
                f,
                "truncated record: opcode {opcode} needs {need} bytes, only {have} left"
            ),
            ErrorKind::UnknownOpcode(o) => write!(f, "unknown opcode {o} (0x{o:02x})"),
            ErrorKind::UnknownState(s) => {
                write!(f, "unknown additional-state identifier {s} (0x{s:02x})")
            }
            ErrorKind::UnknownMemOp(o) => write!(f, "unknown memory request operation {o}"),
            ErrorKind::BadMemSize(s) => write!(f, "memory size code {s} is not 0..3"),
            ErrorKind::BadMemResult(r) => {
                write!(
                    f,
                    "memory response result {r} is neither 0 (success) nor 1 (failure)"
                )
            }
            ErrorKind::BadPriv(p) => write!(f, "privilege mode {p} does not fit in 2 bits"),
            ErrorKind::OrphanResponse => {
                f.write_str("memory response that does not follow a memory request")
            }
        }
    }
}

/// A malformed trace: what is wrong and the offset of the first byte of the bad record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset in the trace where the malformed record starts.
    pub offset: u64,
    /// What is wrong.
    pub kind: ErrorKind,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed trace at byte offset {} (0x{:x}): {}",
            self.offset, self.offset, self.kind
        )
    }
}

impl std::error::Error for DecodeError {}

#[inline(always)]
fn le(b: &[u8]) -> u64 {
    // The common widths (XLEN and MLEN fields) in one load.
    if let Ok(a) = <[u8; 8]>::try_from(b) {
        return u64::from_le_bytes(a);
    }
    if let Ok(a) = <[u8; 4]>::try_from(b) {
        return u32::from_le_bytes(a) as u64;
    }
    let mut v = 0u64;
    for (i, &x) in b.iter().enumerate().take(8) {
        v |= (x as u64) << (8 * i);
    }
    v
}

#[inline(always)]
fn put_le(out: &mut Vec<u8>, v: u64, n: usize) {
    out.extend_from_slice(&v.to_le_bytes()[..n.min(8)]);
    for _ in 8..n {
        out.push(0);
    }
}

/// Keep the low `bits` bits.
#[inline(always)]
pub fn mask_bits(v: u64, bits: u32) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

/// Read one record from the start of `b`. `prev_req_op` is the operation of the memory request
/// that immediately precedes (a response's length depends on it). Returns the record and its
/// length in bytes.
#[inline]
pub fn decode_record(
    b: &[u8],
    p: &Params,
    prev_req_op: Option<u8>,
) -> Result<(Record, usize), ErrorKind> {
    struct Pair;
    impl RecordSink for Pair {
        type Out = (Record, usize);
        #[inline(always)]
        fn record(&mut self, r: Record, n: usize) -> (Record, usize) {
            (r, n)
        }
    }
    decode_record_with(b, p, prev_req_op, &mut Pair)
}

/// Where [`decode_record_with`] hands a record.
pub trait RecordSink {
    /// What taking a record gives.
    type Out;
    /// Take record `r` of `n` bytes (inlined always, for one dispatch per record).
    fn record(&mut self, r: Record, n: usize) -> Self::Out;
}

/// [`decode_record`], handing the record and its length to `sink` and returning what it
/// returns. Inlined, each kind of record reaches `sink` as a constant: a reader that matches on
/// the record in `sink` dispatches once per record, not twice.
#[inline(always)]
pub fn decode_record_with<S: RecordSink>(
    b: &[u8],
    p: &Params,
    prev_req_op: Option<u8>,
    sink: &mut S,
) -> Result<S::Out, ErrorKind> {
    let Some(&opcode) = b.first() else {
        return Err(ErrorKind::Truncated {
            opcode: 0,
            need: 1,
            have: 0,
        });
    };
    let need = |n: usize| -> Result<(), ErrorKind> {
        if b.len() < n {
            Err(ErrorKind::Truncated {
                opcode,
                need: n,
                have: b.len(),
            })
        } else {
            Ok(())
        }
    };
    Ok(match opcode {
        op::BEGIN_GROUP => sink.record(Record::BeginGroup, 1),
        op::END_GROUP => sink.record(Record::EndGroup, 1),
        op::INCR_PC => sink.record(Record::IncrPc, 1),
        op::HART_RESET => sink.record(Record::HartReset, 1),
        op::STATE_INIT => sink.record(Record::StateInit, 1),
        op::FULL_REG => {
            need(3)?;
            let addr = u16::from_le_bytes([b[1], b[2]]);
            let n = 3 + p.reg_bytes(addr);
            need(n)?;
            sink.record(
                Record::FullReg {
                    addr,
                    value: le(&b[3..n]),
                },
                n,
            )
        }
        op::INCR_REG_ADD => {
            need(4)?;
            sink.record(
                Record::IncrRegAdd {
                    addr: u16::from_le_bytes([b[1], b[2]]),
                    offset: b[3] as i8,
                },
                4,
            )
        }
        op::INCR_REG_OR => {
            need(4)?;
            sink.record(
                Record::IncrRegOr {
                    addr: u16::from_le_bytes([b[1], b[2]]),
                    mask: b[3],
                },
                4,
            )
        }
        op::ADDL_STATE => {
            need(2)?;
            let id = b[1];
            let n = 2 + match id {
                state::PRIV => 1,
                state::PADDR | state::EADDR | state::PC_PADDR => p.mbytes(),
                state::DATA8 => 1,
                state::DATA16 => 2,
                state::DATA32 => 4,
                state::DATA64 | state::MTIME => 8,
                state::PC | state::PC_APPENDIX => p.xbytes(),
                _ => return Err(ErrorKind::UnknownState(id)),
            };
            need(n)?;
            let v = le(&b[2..n]);
            let s = match id {
                state::PRIV if b[2] > 3 => return Err(ErrorKind::BadPriv(b[2])),
                state::PRIV => AddlState::Priv(b[2]),
                state::PADDR => AddlState::Paddr(v),
                state::EADDR => AddlState::Eaddr(v),
                state::DATA8..=state::DATA64 => AddlState::StoreData {
                    size: id - state::DATA8,
                    value: v,
                },
                state::MTIME => AddlState::Mtime(v),
                state::PC_PADDR => AddlState::PcPaddr(v),
                _ => AddlState::Pc(v),
            };
            sink.record(Record::State(s), n)
        }
        op::MEM_REQ => {
            let m = p.mbytes();
            need(2 + m)?;
            let addr = le(&b[1..1 + m]);
            let packed = b[1 + m];
            // Sub-byte fields from the least significant bit: op (4 bits), then size (4 bits).
            let (mop, size) = (packed & 0xf, packed >> 4);
            if mop > mem_op::IFETCH {
                return Err(ErrorKind::UnknownMemOp(mop));
            }
            if size > 3 {
                return Err(ErrorKind::BadMemSize(size));
            }
            let mut n = 2 + m;
            let data = if mem_op::request_has_data(mop) {
                let d = 1usize << size;
                need(n + d)?;
                let v = le(&b[n..n + d]);
                n += d;
                Some(v)
            } else {
                None
            };
            sink.record(
                Record::MemReq {
                    addr,
                    op: mop,
                    size,
                    data,
                },
                n,
            )
        }
        op::MEM_RSP => {
            let Some(req) = prev_req_op else {
                return Err(ErrorKind::OrphanResponse);
            };
            need(2)?;
            // size (4 bits), then result (4 bits).
            let (size, result) = (b[1] & 0xf, b[1] >> 4);
            if size > 3 {
                return Err(ErrorKind::BadMemSize(size));
            }
            if result > 1 {
                return Err(ErrorKind::BadMemResult(result));
            }
            let mut n = 2;
            let data = if mem_op::response_has_data(req) {
                let d = 1usize << size;
                need(n + d)?;
                let v = le(&b[n..n + d]);
                n += d;
                Some(v)
            } else {
                None
            };
            sink.record(Record::MemRsp { size, result, data }, n)
        }
        op::INSN16 => {
            need(3)?;
            let lo = u16::from_le_bytes([b[1], b[2]]);
            if lo & 3 == 3 && b.len() >= 5 {
                // Appendix C.5's spelling of a 32-bit instruction (see the module notes).
                sink.record(
                    Record::Insn32(u32::from_le_bytes([b[1], b[2], b[3], b[4]])),
                    5,
                )
            } else {
                sink.record(Record::Insn16(lo), 3)
            }
        }
        op::INSN32 => {
            need(5)?;
            sink.record(
                Record::Insn32(u32::from_le_bytes([b[1], b[2], b[3], b[4]])),
                5,
            )
        }
        o => return Err(ErrorKind::UnknownOpcode(o)),
    })
}

/// Append the bytes of `r` to `out`.
pub fn encode_record(r: &Record, p: &Params, out: &mut Vec<u8>) {
    match *r {
        Record::BeginGroup => out.push(op::BEGIN_GROUP),
        Record::EndGroup => out.push(op::END_GROUP),
        Record::IncrPc => out.push(op::INCR_PC),
        Record::HartReset => out.push(op::HART_RESET),
        Record::StateInit => out.push(op::STATE_INIT),
        Record::FullReg { addr, value } => {
            out.push(op::FULL_REG);
            out.extend_from_slice(&addr.to_le_bytes());
            put_le(out, value, p.reg_bytes(addr));
        }
        Record::IncrRegAdd { addr, offset } => {
            out.push(op::INCR_REG_ADD);
            out.extend_from_slice(&addr.to_le_bytes());
            out.push(offset as u8);
        }
        Record::IncrRegOr { addr, mask } => {
            out.push(op::INCR_REG_OR);
            out.extend_from_slice(&addr.to_le_bytes());
            out.push(mask);
        }
        Record::State(s) => {
            out.push(op::ADDL_STATE);
            match s {
                AddlState::Priv(v) => {
                    out.push(state::PRIV);
                    out.push(v);
                }
                AddlState::Paddr(a) => {
                    out.push(state::PADDR);
                    put_le(out, a, p.mbytes());
                }
                AddlState::Eaddr(a) => {
                    out.push(state::EADDR);
                    put_le(out, a, p.mbytes());
                }
                AddlState::StoreData { size, value } => {
                    out.push(state::DATA8 + size.min(3));
                    put_le(out, value, 1 << size.min(3));
                }
                AddlState::Mtime(t) => {
                    out.push(state::MTIME);
                    put_le(out, t, 8);
                }
                AddlState::PcPaddr(a) => {
                    out.push(state::PC_PADDR);
                    put_le(out, a, p.mbytes());
                }
                AddlState::Pc(pc) => {
                    out.push(p.pc_ident);
                    put_le(out, pc, p.xbytes());
                }
            }
        }
        Record::MemReq {
            addr,
            op: mop,
            size,
            data,
        } => {
            out.push(op::MEM_REQ);
            put_le(out, addr, p.mbytes());
            out.push((mop & 0xf) | (size << 4));
            if mem_op::request_has_data(mop) {
                put_le(out, data.unwrap_or(0), 1 << size.min(3));
            }
        }
        Record::MemRsp { size, result, data } => {
            out.push(op::MEM_RSP);
            out.push((size & 0xf) | (result << 4));
            if let Some(d) = data {
                put_le(out, d, 1 << size.min(3));
            }
        }
        Record::Insn16(i) => {
            out.push(op::INSN16);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Record::Insn32(i) => {
            out.push(op::INSN32);
            out.extend_from_slice(&i.to_le_bytes());
        }
    }
}

/// Field widths in bytes, computed once from [`Params`] (chapter 3: XLEN, FLEN and MLEN fields
/// are rounded up to whole bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of an XLEN field.
    pub xbytes: usize,
    /// Bytes of an FLEN field.
    pub fbytes: usize,
    /// Bytes of an MLEN field.
    pub mbytes: usize,
    /// Identifier written for the pc ([`Params::pc_ident`]).
    pub pc_ident: u8,
}

impl Layout {
    /// The layout of valid parameters ([`Params::validate`]: no field wider than 8 bytes).
    pub fn new(p: &Params) -> Layout {
        Layout {
            xbytes: p.xbytes().min(8),
            fbytes: p.fbytes().min(8),
            mbytes: p.mbytes().min(8),
            pc_ident: p.pc_ident,
        }
    }
}

/// An output buffer that records are encoded straight into, the producer's fast encoder: the
/// same bytes as [`encode_record`] (the reference; tests compare the two), with no capacity
/// check per byte. A field of `n` bytes is stored as 8 bytes and the position advanced by `n`
/// (the bytes past it are overwritten by what follows), so [`OutBuf::put`] needs at least
/// [`OutBuf::SLACK`] bytes beyond the position: the owner drains the buffer once
/// [`OutBuf::full`] says so, at the latest after every [`OutBuf::SLACK`] bytes of records.
pub struct OutBuf {
    bytes: Vec<u8>,
    pos: usize,
    cap: usize,
}

impl OutBuf {
    /// Bytes kept free beyond the capacity: enough for any group of at most 8 records of up to
    /// 24 bytes each (the largest record, a memory request with MLEN and data, is 18).
    pub const SLACK: usize = 256;

    /// A buffer that reports [`OutBuf::full`] once `cap` bytes are in it.
    pub fn new(cap: usize) -> OutBuf {
        OutBuf {
            bytes: vec![0; cap + Self::SLACK],
            pos: 0,
            cap,
        }
    }

    /// The bytes encoded since the last [`OutBuf::clear`].
    pub fn filled(&self) -> &[u8] {
        &self.bytes[..self.pos]
    }

    /// Forget the bytes encoded.
    pub fn clear(&mut self) {
        self.pos = 0;
    }

    /// The capacity is reached: drain the buffer before encoding more than
    /// [`OutBuf::SLACK`] bytes.
    #[inline(always)]
    pub fn full(&self) -> bool {
        self.pos >= self.cap
    }

    /// Append the bytes of `r` (as [`encode_record`] does).
    #[inline(always)]
    pub fn put(&mut self, r: &Record, l: &Layout) {
        let mut g = self.group();
        g.put(r, l);
        g.done();
    }

    /// A writer for up to [`OutBuf::SLACK`] bytes of records at the position (one group of
    /// the producer's fast path); [`Group::done`] keeps them.
    #[inline(always)]
    pub fn group(&mut self) -> Group<'_> {
        let (dst, _) = self.bytes[self.pos..]
            .split_first_chunk_mut::<{ Self::SLACK }>()
            .expect("OutBuf keeps SLACK bytes beyond its capacity");
        Group {
            dst,
            k: 0,
            pos: &mut self.pos,
        }
    }
}

/// Records being encoded into an [`OutBuf`] ([`OutBuf::group`]): the cursor is a local, so the
/// bytes written do not make the compiler reload it.
pub struct Group<'a> {
    dst: &'a mut [u8; OutBuf::SLACK],
    k: usize,
    pos: &'a mut usize,
}

impl Group<'_> {
    /// Keep the bytes written.
    #[inline(always)]
    pub fn done(self) {
        *self.pos += self.k;
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.dst[self.k] = b;
        self.k += 1;
    }

    /// The low `n` (at most 8) bytes of `v`, little-endian.
    #[inline(always)]
    fn le(&mut self, v: u64, n: usize) {
        self.dst[self.k..self.k + 8].copy_from_slice(&v.to_le_bytes());
        self.k += n;
    }

    /// Opcode and two bytes (a register address, a state identifier and a byte, ...).
    #[inline(always)]
    fn op_u16(&mut self, op: u8, v: u16) {
        self.le(op as u64 | (v as u64) << 8, 3);
    }

    /// Append the bytes of `r` (as [`encode_record`] does). A group holds at most
    /// [`OutBuf::SLACK`] bytes: 8 records of any kind.
    #[inline(always)]
    pub fn put(&mut self, r: &Record, l: &Layout) {
        match *r {
            Record::BeginGroup => self.byte(op::BEGIN_GROUP),
            Record::EndGroup => self.byte(op::END_GROUP),
            Record::IncrPc => self.byte(op::INCR_PC),
            Record::HartReset => self.byte(op::HART_RESET),
            Record::StateInit => self.byte(op::STATE_INIT),
            Record::FullReg { addr, value } => {
                self.op_u16(op::FULL_REG, addr);
                self.le(
                    value,
                    if reg::is_fpr(addr) {
                        l.fbytes
                    } else {
                        l.xbytes
                    },
                );
            }
            Record::IncrRegAdd { addr, offset } => {
                self.op_u16(op::INCR_REG_ADD, addr);
                self.byte(offset as u8);
            }
            Record::IncrRegOr { addr, mask } => {
                self.op_u16(op::INCR_REG_OR, addr);
                self.byte(mask);
            }
            Record::State(s) => {
                let (id, v, n) = match s {
                    AddlState::Priv(v) => (state::PRIV, v as u64, 1),
                    AddlState::Paddr(a) => (state::PADDR, a, l.mbytes),
                    AddlState::Eaddr(a) => (state::EADDR, a, l.mbytes),
                    AddlState::StoreData { size, value } => {
                        (state::DATA8 + size.min(3), value, 1 << size.min(3))
                    }
                    AddlState::Mtime(t) => (state::MTIME, t, 8),
                    AddlState::PcPaddr(a) => (state::PC_PADDR, a, l.mbytes),
                    AddlState::Pc(pc) => (l.pc_ident, pc, l.xbytes),
                };
                self.le(op::ADDL_STATE as u64 | (id as u64) << 8, 2);
                self.le(v, n);
            }
            Record::MemReq {
                addr,
                op: mop,
                size,
                data,
            } => {
                self.byte(op::MEM_REQ);
                self.le(addr, l.mbytes);
                self.byte((mop & 0xf) | (size << 4));
                if mem_op::request_has_data(mop) {
                    self.le(data.unwrap_or(0), 1 << size.min(3));
                }
            }
            Record::MemRsp { size, result, data } => {
                self.le(
                    op::MEM_RSP as u64 | (((size & 0xf) | (result << 4)) as u64) << 8,
                    2,
                );
                if let Some(d) = data {
                    self.le(d, 1 << size.min(3));
                }
            }
            Record::Insn16(i) => self.op_u16(op::INSN16, i),
            Record::Insn32(i) => self.le(op::INSN32 as u64 | (i as u64) << 8, 5),
        }
    }
}

/// Reads records one after another from a byte slice, tracking the memory request a response
/// belongs to and the byte offset.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
    params: Params,
    prev_req: Option<u8>,
}

impl<'a> Reader<'a> {
    /// Read `bytes`, which start at byte offset `base` of the trace.
    pub fn new(bytes: &'a [u8], params: Params, base: u64) -> Reader<'a> {
        Reader {
            bytes,
            pos: 0,
            base,
            params,
            prev_req: None,
        }
    }

    /// Offset in the trace of the next record.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    /// The next record and its offset; `None` at the end.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Result<(u64, Record), DecodeError>> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let off = self.offset();
        match decode_record(&self.bytes[self.pos..], &self.params, self.prev_req) {
            Ok((r, n)) => {
                self.pos += n;
                self.prev_req = match r {
                    Record::MemReq { op, .. } => Some(op),
                    _ => None,
                };
                Some(Ok((off, r)))
            }
            Err(kind) => Some(Err(DecodeError { offset: off, kind })),
        }
    }
}

/// Encode a sequence of records.
pub fn encode_all(records: &[Record], p: &Params) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        encode_record(r, p, &mut out);
    }
    out
}

/// Decode a whole trace into records (stopping at the first malformed one).
pub fn decode_all(bytes: &[u8], p: &Params) -> Result<Vec<Record>, DecodeError> {
    let mut r = Reader::new(bytes, *p, 0);
    let mut v = Vec::new();
    while let Some(x) = r.next() {
        v.push(x?.1);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_error_texts() {
        let e = |p: Params| p.validate().unwrap_err().to_string();
        let rv64 = Params::RV64;
        assert_eq!(
            e(Params { xlen: 48, ..rv64 }),
            "XLEN must be 32 or 64, not 48"
        );
        assert_eq!(
            e(Params { flen: 16, ..rv64 }),
            "FLEN must be 0, 32 or 64, not 16"
        );
        assert_eq!(e(Params { mlen: 0, ..rv64 }), "MLEN must be 1..64, not 0");
        assert_eq!(
            Params { mlen: 65, ..rv64 }.validate(),
            Err(ParamsError::Mlen(65))
        );
        assert_eq!(rv64.validate(), Ok(()));
    }

    /// Every kind of record with values that fill (and overflow) their fields, under every
    /// parameter set: the fast encoder writes what the reference encoder writes, byte for byte,
    /// also across the buffer's drains.
    #[test]
    fn outbuf_equals_encode_record() {
        let values = [
            0u64,
            1,
            0x7f,
            0x80,
            0xffff,
            0x1234_5678,
            0xdead_beef_cafe_f00d,
            u64::MAX,
        ];
        let mut recs = vec![
            Record::BeginGroup,
            Record::EndGroup,
            Record::IncrPc,
            Record::HartReset,
            Record::StateInit,
        ];
        for (k, &v) in values.iter().enumerate() {
            let a = v as u16;
            for addr in [
                a,
                reg::gpr(k as u8),
                reg::fpr(k as u8 * 3),
                reg::FCSR,
                0x300,
            ] {
                recs.push(Record::FullReg { addr, value: v });
                recs.push(Record::IncrRegAdd {
                    addr,
                    offset: v as i8,
                });
                recs.push(Record::IncrRegOr {
                    addr,
                    mask: v as u8,
                });
            }
            for size in 0..=4u8 {
                recs.push(Record::State(AddlState::StoreData { size, value: v }));
                for mop in 0..=15u8 {
                    for data in [None, Some(v.rotate_left(7))] {
                        recs.push(Record::MemReq {
                            addr: v,
                            op: mop,
                            size,
                            data,
                        });
                        recs.push(Record::MemRsp {
                            size,
                            result: mop,
                            data,
                        });
                    }
                }
            }
            for s in [
                AddlState::Priv(v as u8),
                AddlState::Paddr(v),
                AddlState::Eaddr(v),
                AddlState::Mtime(v),
                AddlState::PcPaddr(v),
                AddlState::Pc(v),
            ] {
                recs.push(Record::State(s));
            }
            recs.push(Record::Insn16(v as u16));
            recs.push(Record::Insn32(v as u32));
        }
        for xlen in [32, 64] {
            for flen in [0, 32, 64] {
                for mlen in [1, 8, 32, 34, 56, 64] {
                    for pc_ident in [state::PC, state::PC_APPENDIX] {
                        let p = Params {
                            xlen,
                            flen,
                            mlen,
                            pc_ident,
                        };
                        let want = encode_all(&recs, &p);
                        let l = Layout::new(&p);
                        let mut b = OutBuf::new(64);
                        let mut got = Vec::new();
                        for r in &recs {
                            b.put(r, &l);
                            if b.full() {
                                got.extend_from_slice(b.filled());
                                b.clear();
                            }
                        }
                        got.extend_from_slice(b.filled());
                        assert!(got == want, "{p:?}");
                    }
                }
            }
        }
    }
}
