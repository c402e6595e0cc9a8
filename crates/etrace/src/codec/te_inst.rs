//! `te_inst` packet payloads: every format and subformat of `payload.adoc` ("Instruction Trace
//! Encoder Output Packets"), field by field in transmission order, with widths from [`Params`].
//!
//! A [`TeInst`] holds the fields exactly as transmitted (raw bits), so that packets compare with
//! the reference flow's CSV and so that encoding a decoded packet gives the same bytes. The
//! meaning of the bits that are encoded relative to their predecessor (*notify*, *updiscon*,
//! *irreport*, *irdepth*) is given by [`AddrTail::notify_flag`] and friends.

use core::fmt;

use super::bits::{mask, BitReader, BitWriter, MAX_PAYLOAD};
use super::CodecError;
use crate::params::{IOptions, Params};

/// Packet *format* (2 bits; `payload.adoc`).
pub mod format {
    /// 00 (opt-ext): formats for optional efficiency extensions.
    pub const OPT_EXT: u8 = 0;
    /// 01 (diff-delta): branch information and maybe an address.
    pub const DIFF_DELTA: u8 = 1;
    /// 10 (addr-only): address, no branch information.
    pub const ADDR_ONLY: u8 = 2;
    /// 11 (sync): synchronisation.
    pub const SYNC: u8 = 3;
}

/// *qual_status* of a support packet (`payload.adoc` `sec:format33`, `sec:qual-status`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QualStatus {
    /// 00 (no_change): no change to filter qualification.
    #[default]
    NoChange = 0,
    /// 01 (ended_rep): qualification ended; the preceding `te_inst` was sent explicitly to report
    /// the final qualified instruction.
    EndedRep = 1,
    /// 10 (trace_lost): one or more instruction trace packets were lost.
    TraceLost = 2,
    /// 11 (ended_ntr): qualification ended; the preceding `te_inst` would have been sent anyway
    /// (updiscon).
    EndedNtr = 3,
}

impl QualStatus {
    /// The status for a 2-bit code.
    pub const fn from_code(code: u8) -> QualStatus {
        match code & 3 {
            0 => QualStatus::NoChange,
            1 => QualStatus::EndedRep,
            2 => QualStatus::TraceLost,
            _ => QualStatus::EndedNtr,
        }
    }

    /// The spec's name.
    pub const fn name(self) -> &'static str {
        match self {
            QualStatus::NoChange => "no_change",
            QualStatus::EndedRep => "ended_rep",
            QualStatus::TraceLost => "trace_lost",
            QualStatus::EndedNtr => "ended_ntr",
        }
    }
}

/// The fields that end format 0 subformat 0 (with address), format 1 (with address) and format
/// 2 packets: *address*, *notify*, *updiscon*, *irreport*, *irdepth* (raw bits as transmitted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AddrTail {
    /// *address*: differential (or, in full address mode, absolute) instruction address, shifted
    /// right by `iaddress_lsb_p`, as an unsigned `iaddress_width_p - iaddress_lsb_p` bit field.
    pub address: u64,
    /// *notify* bit as transmitted.
    pub notify: bool,
    /// *updiscon* bit as transmitted.
    pub updiscon: bool,
    /// *irreport* bit as transmitted.
    pub irreport: bool,
    /// *irdepth* field as transmitted (`Params::irdepth_width` bits).
    pub irdepth: u64,
}

impl AddrTail {
    /// MSB of the *address* field.
    pub const fn address_msb(&self, p: &Params) -> bool {
        (self.address >> (p.address_width() - 1)) & 1 != 0
    }

    /// *notify* differs from the MSB of *address*: the packet reports an instruction because of a
    /// notification (`payload.adoc` `sec:notify`).
    pub const fn notify_flag(&self, p: &Params) -> bool {
        self.notify != self.address_msb(p)
    }

    /// *updiscon* differs from *notify*: the reported instruction follows an uninferable
    /// discontinuity and is immediately followed by a format 3 (`payload.adoc` `sec:updiscon`).
    pub const fn updiscon_flag(&self) -> bool {
        self.updiscon != self.notify
    }

    /// *irreport* differs from *updiscon*: *irdepth* is valid (`payload.adoc` `sec:irxx`).
    pub const fn irreport_flag(&self) -> bool {
        self.irreport != self.updiscon
    }

    /// The *address* field as a signed (differential) value, in units of 2^`iaddress_lsb_p`
    /// bytes.
    pub const fn signed_address(&self, p: &Params) -> i64 {
        let w = p.address_width();
        if w >= 64 {
            self.address as i64
        } else {
            ((self.address << (64 - w)) as i64) >> (64 - w)
        }
    }

    /// The raw bits for a tail whose *address* field is `address`, from the meanings: each of
    /// *notify*, *updiscon*, *irreport* is transmitted as its flag XOR the preceding bit
    /// (`payload.adoc` `sec:updiscon`, `sec:irxx`). When `irreport` is false, *irdepth* is
    /// `irdepth_fill`: all copies of *updiscon* per the spec (see [`IrdepthFill`]).
    pub fn from_flags(
        p: &Params,
        address: u64,
        notify: bool,
        updiscon: bool,
        irreport: bool,
        irdepth: u64,
        fill: IrdepthFill,
    ) -> AddrTail {
        let msb = (address >> (p.address_width() - 1)) & 1 != 0;
        let notify_raw = notify ^ msb;
        let updiscon_raw = updiscon ^ notify_raw;
        let irreport_raw = irreport ^ updiscon_raw;
        let w = p.irdepth_width();
        let irdepth = if irreport {
            irdepth & mask(w)
        } else {
            match fill {
                IrdepthFill::Updiscon if updiscon_raw => mask(w),
                IrdepthFill::Updiscon => 0,
                IrdepthFill::Ones => mask(w),
            }
        };
        AddrTail {
            address,
            notify: notify_raw,
            updiscon: updiscon_raw,
            irreport: irreport_raw,
            irdepth,
        }
    }
}

/// What *irdepth* holds when *irreport* equals *updiscon* (no depth reported).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IrdepthFill {
    /// Every bit equals *updiscon* (`payload.adoc` format 1/2 tables), so it compresses away.
    Updiscon,
    /// Every bit is 1 (the reference flow's `encoder_model.py` does this whatever *updiscon* is).
    Ones,
}

/// The fields shared by format 3 subformats 0 and 1: *branch*, *privilege*, *time*, *context*.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SyncFields {
    /// *branch*: 0 if *address* points to a taken branch, 1 otherwise.
    pub branch: bool,
    /// *privilege* of the reported instruction.
    pub privilege: u64,
    /// *time* (0 when `notime_p`).
    pub time: u64,
    /// *context* (0 when `nocontext_p`).
    pub context: u64,
}

/// Format 3 subformat 3 (support) fields (`payload.adoc` `sec:format33`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Support {
    /// *ienable*: the instruction trace encoder is enabled.
    pub ienable: bool,
    /// *encoder_mode* (0 = branch trace).
    pub encoder_mode: u64,
    /// *qual_status*.
    pub qual_status: QualStatus,
    /// *ioptions* (see [`IOptions`]).
    pub ioptions: u64,
    /// *denable*: data trace enabled.
    pub denable: bool,
    /// *dloss*: data trace packets lost.
    pub dloss: bool,
    /// *doptions*.
    pub doptions: u64,
}

/// One `te_inst` payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TeInst {
    /// Format 0 subformat 0: count of correctly predicted branches, with or without an address
    /// (`payload.adoc`, "Packet format 0, subformat 0").
    BranchCount {
        /// *branch_count*: correctly predicted branches minus 31.
        branch_count: u32,
        /// *branch_fmt*: 0 (no-addr), 2 (addr), 3 (addr-fail).
        branch_fmt: u8,
        /// Present when *branch_fmt* is 2 or 3.
        tail: Option<AddrTail>,
    },
    /// Format 0 subformat 1: jump target cache index, with or without a branch map
    /// (`payload.adoc`, "Packet format 0, subformat 1").
    JumpTargetIndex {
        /// *index* (`cache_size_p` bits).
        index: u64,
        /// *branches* (0 = no *branch_map*).
        branches: u8,
        /// *branch_map* (width from *branches*, see [`branch_map_width`]).
        branch_map: u32,
        /// *irreport* as transmitted.
        irreport: bool,
        /// *irdepth* as transmitted.
        irdepth: u64,
    },
    /// Format 1: branch map, with an address (*branches* 1-31) or without (*branches* 0, full
    /// 31-bit map) (`payload.adoc` `sec:format1`).
    Branch {
        /// *branches*: number of valid bits in *branch_map*, 0 = 31 and no address.
        branches: u8,
        /// *branch_map*: bit 0 is the oldest branch; 0 = taken, 1 = not taken.
        branch_map: u32,
        /// Present when *branches* is not 0.
        tail: Option<AddrTail>,
    },
    /// Format 2: address only (`payload.adoc` `sec:format2`).
    Addr(AddrTail),
    /// Format 3 subformat 0: synchronisation (`sec:format30`).
    Start {
        /// *branch*, *privilege*, *time*, *context*.
        sync: SyncFields,
        /// *address*: full address shifted right by `iaddress_lsb_p`.
        address: u64,
    },
    /// Format 3 subformat 1: trap (`sec:format31`).
    Trap {
        /// *branch*, *privilege*, *time*, *context*.
        sync: SyncFields,
        /// *ecause*.
        ecause: u64,
        /// *interrupt*.
        interrupt: bool,
        /// *thaddr*: *address* is the trap handler (1) or the EPC / undefined (0).
        thaddr: bool,
        /// *address* (full, shifted right by `iaddress_lsb_p`); `None` when implicit exception
        /// mode omits it (*thaddr*=1).
        address: Option<u64>,
        /// *tval*; `None` for interrupts.
        tval: Option<u64>,
    },
    /// Format 3 subformat 2: context (`sec:format32`).
    Context {
        /// *privilege* of the new context.
        privilege: u64,
        /// *time*.
        time: u64,
        /// *context*.
        context: u64,
    },
    /// Format 3 subformat 3: support (`sec:format33`).
    Support(Support),
}

/// Width of *branch_map* for a *branches* value in format 1 and format 0 subformat 1 (the
/// tapered sizes 1, 3, 7, 15, 31; `payload.adoc` `sec:format1`). *branches* = 0 means 31 bits in
/// format 1 (use [`branch_map_width_f0s1`] for format 0 subformat 1).
pub const fn branch_map_width(branches: u8) -> u32 {
    match branches {
        0 => 31,
        1 => 1,
        2..=3 => 3,
        4..=7 => 7,
        8..=15 => 15,
        _ => 31,
    }
}

/// Width of *branch_map* in format 0 subformat 1: none when *branches* is 0.
pub const fn branch_map_width_f0s1(branches: u8) -> u32 {
    if branches == 0 {
        0
    } else {
        branch_map_width(branches)
    }
}

/// The format 0 subformat for a packet without a *subformat* field (`f0s_width_p` = 0): inferred
/// from which optional format is enabled (`payload.adoc` `sec:f0s`).
fn implied_f0s(o: IOptions) -> Result<u8, CodecError> {
    match (o.branch_prediction, o.jump_target_cache) {
        (true, false) => Ok(0),
        (false, true) => Ok(1),
        _ => Err(CodecError::AmbiguousFormat0),
    }
}

impl TeInst {
    /// The *format* field.
    pub const fn format(&self) -> u8 {
        match self {
            TeInst::BranchCount { .. } | TeInst::JumpTargetIndex { .. } => format::OPT_EXT,
            TeInst::Branch { .. } => format::DIFF_DELTA,
            TeInst::Addr(_) => format::ADDR_ONLY,
            _ => format::SYNC,
        }
    }

    /// The *subformat* field (formats 0 and 3).
    pub const fn subformat(&self) -> Option<u8> {
        match self {
            TeInst::BranchCount { .. } => Some(0),
            TeInst::JumpTargetIndex { .. } => Some(1),
            TeInst::Start { .. } => Some(0),
            TeInst::Trap { .. } => Some(1),
            TeInst::Context { .. } => Some(2),
            TeInst::Support(_) => Some(3),
            _ => None,
        }
    }

    /// The address tail (*address*, *notify*, *updiscon*, *irreport*, *irdepth*) of formats 0-2.
    pub const fn tail(&self) -> Option<&AddrTail> {
        match self {
            TeInst::BranchCount { tail, .. } | TeInst::Branch { tail, .. } => tail.as_ref(),
            TeInst::Addr(t) => Some(t),
            _ => None,
        }
    }

    /// A short name: `F0S0` .. `F3S3`, `F1`, `F2`.
    pub const fn kind(&self) -> &'static str {
        match self {
            TeInst::BranchCount { .. } => "F0S0",
            TeInst::JumpTargetIndex { .. } => "F0S1",
            TeInst::Branch { .. } => "F1",
            TeInst::Addr(_) => "F2",
            TeInst::Start { .. } => "F3S0",
            TeInst::Trap { .. } => "F3S1",
            TeInst::Context { .. } => "F3S2",
            TeInst::Support(_) => "F3S3",
        }
    }

    /// Pack the fields (uncompressed), checking that each fits its width and that the fields
    /// present agree with the packet kind (for example, format 1 has an address exactly when
    /// *branches* is not 0).
    pub fn to_bits(&self, p: &Params, o: IOptions) -> Result<BitWriter, CodecError> {
        p.validate()?;
        let mut w = BitWriter::new();
        w.put("format", self.format() as u64, 2)?;
        let aw = p.address_width();
        let put_tail = |w: &mut BitWriter, t: &AddrTail| -> Result<(), CodecError> {
            w.put("address", t.address, aw)?;
            w.put_bit("notify", t.notify)?;
            w.put_bit("updiscon", t.updiscon)?;
            w.put_bit("irreport", t.irreport)?;
            w.put("irdepth", t.irdepth, p.irdepth_width())
        };
        let put_sync = |w: &mut BitWriter, s: &SyncFields| -> Result<(), CodecError> {
            w.put_bit("branch", s.branch)?;
            w.put("privilege", s.privilege, p.privilege_width_p as u32)?;
            w.put("time", s.time, p.time_width())?;
            w.put("context", s.context, p.context_width())
        };
        let put_f0s = |w: &mut BitWriter, sf: u8| -> Result<(), CodecError> {
            if p.f0s_width_p == 0 {
                if implied_f0s(o)? != sf {
                    return Err(CodecError::Inconsistent(
                        "format 0 subformat differs from the one the options imply",
                    ));
                }
                Ok(())
            } else {
                w.put("subformat", sf as u64, p.f0s_width_p as u32)
            }
        };
        match self {
            TeInst::BranchCount {
                branch_count,
                branch_fmt,
                tail,
            } => {
                put_f0s(&mut w, 0)?;
                w.put("branch_count", *branch_count as u64, 32)?;
                w.put("branch_fmt", *branch_fmt as u64, 2)?;
                match (branch_fmt, tail) {
                    (0, None) => {}
                    (2 | 3, Some(t)) => put_tail(&mut w, t)?,
                    _ => {
                        return Err(CodecError::Inconsistent(
                            "branch_fmt 0 has no address, 2 and 3 have one, 1 is reserved",
                        ))
                    }
                }
            }
            TeInst::JumpTargetIndex {
                index,
                branches,
                branch_map,
                irreport,
                irdepth,
            } => {
                put_f0s(&mut w, 1)?;
                w.put("index", *index, p.cache_size_p as u32)?;
                w.put("branches", *branches as u64, 5)?;
                w.put(
                    "branch_map",
                    *branch_map as u64,
                    branch_map_width_f0s1(*branches),
                )?;
                w.put_bit("irreport", *irreport)?;
                w.put("irdepth", *irdepth, p.irdepth_width())?;
            }
            TeInst::Branch {
                branches,
                branch_map,
                tail,
            } => {
                w.put("branches", *branches as u64, 5)?;
                w.put(
                    "branch_map",
                    *branch_map as u64,
                    branch_map_width(*branches),
                )?;
                match (*branches, tail) {
                    (0, None) => {}
                    (1..=31, Some(t)) => put_tail(&mut w, t)?,
                    _ => {
                        return Err(CodecError::Inconsistent(
                            "format 1 has an address exactly when branches is not 0",
                        ))
                    }
                }
            }
            TeInst::Addr(t) => put_tail(&mut w, t)?,
            TeInst::Start { sync, address } => {
                w.put("subformat", 0, 2)?;
                put_sync(&mut w, sync)?;
                w.put("address", *address, aw)?;
            }
            TeInst::Trap {
                sync,
                ecause,
                interrupt,
                thaddr,
                address,
                tval,
            } => {
                w.put("subformat", 1, 2)?;
                put_sync(&mut w, sync)?;
                w.put("ecause", *ecause, p.ecause_width_p as u32)?;
                w.put_bit("interrupt", *interrupt)?;
                w.put_bit("thaddr", *thaddr)?;
                let omit = o.implicit_exception && *thaddr;
                match (omit, address) {
                    (true, None) => {}
                    (false, Some(a)) => w.put("address", *a, aw)?,
                    _ => {
                        return Err(CodecError::Inconsistent(
                            "a trap packet omits its address exactly when implicit exception mode is on and thaddr is 1",
                        ))
                    }
                }
                match (interrupt, tval) {
                    (true, None) => {}
                    (false, Some(t)) => w.put("tval", *t, p.iaddress_width_p as u32)?,
                    _ => {
                        return Err(CodecError::Inconsistent(
                            "a trap packet has tval exactly when it reports an exception",
                        ))
                    }
                }
            }
            TeInst::Context {
                privilege,
                time,
                context,
            } => {
                w.put("subformat", 2, 2)?;
                w.put("privilege", *privilege, p.privilege_width_p as u32)?;
                w.put("time", *time, p.time_width())?;
                w.put("context", *context, p.context_width())?;
            }
            TeInst::Support(s) => {
                w.put("subformat", 3, 2)?;
                w.put_bit("ienable", s.ienable)?;
                w.put("encoder_mode", s.encoder_mode, p.encoder_mode_width as u32)?;
                w.put("qual_status", s.qual_status as u64, 2)?;
                w.put("ioptions", s.ioptions, p.ioptions_width as u32)?;
                w.put_bit("denable", s.denable)?;
                w.put_bit("dloss", s.dloss)?;
                w.put("doptions", s.doptions, p.doptions_width as u32)?;
            }
        }
        Ok(w)
    }

    /// Encode the payload: pack, apply sign-based compression, sign-extend to whole bytes.
    /// Returns the payload length in bytes.
    pub fn encode(
        &self,
        p: &Params,
        o: IOptions,
        out: &mut [u8; MAX_PAYLOAD],
    ) -> Result<usize, CodecError> {
        Ok(self.to_bits(p, o)?.compress(out))
    }

    /// Decode one payload (without its encapsulation header). `o` is needed for the two layout
    /// choices that depend on run-time options: the implied format 0 subformat and the trap
    /// address omitted in implicit exception mode.
    pub fn decode(payload: &[u8], p: &Params, o: IOptions) -> Result<TeInst, CodecError> {
        p.validate()?;
        let mut r = BitReader::new(payload)?;
        let aw = p.address_width();
        let get_tail = |r: &mut BitReader| AddrTail {
            address: r.get(aw),
            notify: r.get_bit(),
            updiscon: r.get_bit(),
            irreport: r.get_bit(),
            irdepth: r.get(p.irdepth_width()),
        };
        let get_sync = |r: &mut BitReader| SyncFields {
            branch: r.get_bit(),
            privilege: r.get(p.privilege_width_p as u32),
            time: r.get(p.time_width()),
            context: r.get(p.context_width()),
        };
        let pkt = match r.get(2) as u8 {
            format::OPT_EXT => {
                let sf = if p.f0s_width_p == 0 {
                    implied_f0s(o)?
                } else {
                    let v = r.get(p.f0s_width_p as u32);
                    if v > 1 {
                        return Err(CodecError::ReservedSubformat(v));
                    }
                    v as u8
                };
                if sf == 0 {
                    let branch_count = r.get(32) as u32;
                    let branch_fmt = r.get(2) as u8;
                    let tail = match branch_fmt {
                        0 => None,
                        2 | 3 => Some(get_tail(&mut r)),
                        _ => return Err(CodecError::ReservedBranchFmt),
                    };
                    TeInst::BranchCount {
                        branch_count,
                        branch_fmt,
                        tail,
                    }
                } else {
                    let index = r.get(p.cache_size_p as u32);
                    let branches = r.get(5) as u8;
                    let branch_map = r.get(branch_map_width_f0s1(branches)) as u32;
                    TeInst::JumpTargetIndex {
                        index,
                        branches,
                        branch_map,
                        irreport: r.get_bit(),
                        irdepth: r.get(p.irdepth_width()),
                    }
                }
            }
            format::DIFF_DELTA => {
                let branches = r.get(5) as u8;
                let branch_map = r.get(branch_map_width(branches)) as u32;
                let tail = if branches == 0 {
                    None
                } else {
                    Some(get_tail(&mut r))
                };
                TeInst::Branch {
                    branches,
                    branch_map,
                    tail,
                }
            }
            format::ADDR_ONLY => TeInst::Addr(get_tail(&mut r)),
            _ => match r.get(2) {
                0 => {
                    let sync = get_sync(&mut r);
                    TeInst::Start {
                        sync,
                        address: r.get(aw),
                    }
                }
                1 => {
                    let sync = get_sync(&mut r);
                    let ecause = r.get(p.ecause_width_p as u32);
                    let interrupt = r.get_bit();
                    let thaddr = r.get_bit();
                    let address = if o.implicit_exception && thaddr {
                        None
                    } else {
                        Some(r.get(aw))
                    };
                    let tval = if interrupt {
                        None
                    } else {
                        Some(r.get(p.iaddress_width_p as u32))
                    };
                    TeInst::Trap {
                        sync,
                        ecause,
                        interrupt,
                        thaddr,
                        address,
                        tval,
                    }
                }
                2 => TeInst::Context {
                    privilege: r.get(p.privilege_width_p as u32),
                    time: r.get(p.time_width()),
                    context: r.get(p.context_width()),
                },
                _ => {
                    let s = Support {
                        ienable: r.get_bit(),
                        encoder_mode: r.get(p.encoder_mode_width as u32),
                        qual_status: QualStatus::from_code(r.get(2) as u8),
                        ioptions: r.get(p.ioptions_width as u32),
                        denable: r.get_bit(),
                        dloss: r.get_bit(),
                        doptions: r.get(p.doptions_width as u32),
                    };
                    p.options_layout
                        .check(s.ioptions)
                        .map_err(CodecError::Inconsistent)?;
                    TeInst::Support(s)
                }
            },
        };
        r.finish()?;
        Ok(pkt)
    }

    /// The packet as a row of the reference flow's `te_inst` CSV (`referenceFlow` `csv_headers.te_inst`,
    /// header [`CSV_HEADER`]): raw field values, `_` for absent fields; *address* and *tval* in hex,
    /// everything else in decimal.
    pub fn csv<'a>(&'a self, p: &'a Params) -> Csv<'a> {
        Csv { pkt: self, p }
    }

    /// The packet field by field, in transmission order (`name=value`, separated by spaces), for
    /// people.
    pub fn fields<'a>(&'a self, p: &'a Params) -> Fields<'a> {
        Fields { pkt: self, p }
    }
}

/// Header line of the reference flow's `te_inst` CSV.
pub const CSV_HEADER: &str = "format,subformat,address,branch,branches,branch_map,branch_count,branch_fmt,context,ecause,ienable,encoder_mode,interrupt,irreport,irdepth,notify,ioptions,privilege,qual_status,time,thaddr,tval,updiscon,denable,dloss,doptions";

/// See [`TeInst::csv`].
pub struct Csv<'a> {
    pkt: &'a TeInst,
    p: &'a Params,
}

#[derive(Clone, Copy)]
enum V {
    None,
    Dec(u64),
    Hex(u64),
}

impl fmt::Display for V {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            V::None => f.write_str("_"),
            V::Dec(v) => write!(f, "{v}"),
            V::Hex(v) => write!(f, "{v:x}"),
        }
    }
}

impl fmt::Display for Csv<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.p;
        // Columns of CSV_HEADER, in order.
        let mut c = [V::None; 26];
        const FORMAT: usize = 0;
        const SUBFORMAT: usize = 1;
        const ADDRESS: usize = 2;
        const BRANCH: usize = 3;
        const BRANCHES: usize = 4;
        const BRANCH_MAP: usize = 5;
        const BRANCH_COUNT: usize = 6;
        const BRANCH_FMT: usize = 7;
        const CONTEXT: usize = 8;
        const ECAUSE: usize = 9;
        const IENABLE: usize = 10;
        const ENCODER_MODE: usize = 11;
        const INTERRUPT: usize = 12;
        const IRREPORT: usize = 13;
        const IRDEPTH: usize = 14;
        const NOTIFY: usize = 15;
        const IOPTIONS: usize = 16;
        const PRIVILEGE: usize = 17;
        const QUAL_STATUS: usize = 18;
        const TIME: usize = 19;
        const THADDR: usize = 20;
        const TVAL: usize = 21;
        const UPDISCON: usize = 22;
        let pkt = self.pkt;
        c[FORMAT] = V::Dec(pkt.format() as u64);
        if let Some(sf) = pkt.subformat() {
            c[SUBFORMAT] = V::Dec(sf as u64);
        }
        let irdepth = |v: u64| {
            if p.irdepth_width() == 0 {
                V::None
            } else {
                V::Dec(v)
            }
        };
        let tail = |c: &mut [V; 26], t: &AddrTail| {
            c[ADDRESS] = V::Hex(t.address);
            c[NOTIFY] = V::Dec(t.notify as u64);
            c[UPDISCON] = V::Dec(t.updiscon as u64);
            c[IRREPORT] = V::Dec(t.irreport as u64);
            c[IRDEPTH] = irdepth(t.irdepth);
        };
        let opt = |present: bool, v: u64| if present { V::Dec(v) } else { V::None };
        let sync = |c: &mut [V; 26], s: &SyncFields| {
            c[BRANCH] = V::Dec(s.branch as u64);
            c[PRIVILEGE] = V::Dec(s.privilege);
            c[TIME] = opt(!p.notime_p, s.time);
            c[CONTEXT] = opt(!p.nocontext_p, s.context);
        };
        match pkt {
            TeInst::BranchCount {
                branch_count,
                branch_fmt,
                tail: t,
            } => {
                c[BRANCH_COUNT] = V::Dec(*branch_count as u64);
                c[BRANCH_FMT] = V::Dec(*branch_fmt as u64);
                if let Some(t) = t {
                    tail(&mut c, t);
                }
            }
            TeInst::JumpTargetIndex {
                branches,
                branch_map,
                irreport,
                irdepth: d,
                ..
            } => {
                c[BRANCHES] = V::Dec(*branches as u64);
                if *branches != 0 {
                    c[BRANCH_MAP] = V::Dec(*branch_map as u64);
                }
                c[IRREPORT] = V::Dec(*irreport as u64);
                c[IRDEPTH] = irdepth(*d);
            }
            TeInst::Branch {
                branches,
                branch_map,
                tail: t,
            } => {
                c[BRANCHES] = V::Dec(*branches as u64);
                c[BRANCH_MAP] = V::Dec(*branch_map as u64);
                if let Some(t) = t {
                    tail(&mut c, t);
                }
            }
            TeInst::Addr(t) => tail(&mut c, t),
            TeInst::Start { sync: s, address } => {
                sync(&mut c, s);
                c[ADDRESS] = V::Hex(*address);
            }
            TeInst::Trap {
                sync: s,
                ecause,
                interrupt,
                thaddr,
                address,
                tval,
            } => {
                sync(&mut c, s);
                c[ECAUSE] = V::Dec(*ecause);
                c[INTERRUPT] = V::Dec(*interrupt as u64);
                c[THADDR] = V::Dec(*thaddr as u64);
                if let Some(a) = address {
                    c[ADDRESS] = V::Hex(*a);
                }
                if let Some(t) = tval {
                    c[TVAL] = V::Hex(*t);
                }
            }
            TeInst::Context {
                privilege,
                time,
                context,
            } => {
                c[PRIVILEGE] = V::Dec(*privilege);
                c[TIME] = opt(!p.notime_p, *time);
                c[CONTEXT] = opt(!p.nocontext_p, *context);
            }
            TeInst::Support(s) => {
                // The reference encoder fills denable/dloss/doptions only in the raw bytes, so its
                // CSV leaves them blank.
                c[IENABLE] = V::Dec(s.ienable as u64);
                c[ENCODER_MODE] = V::Dec(s.encoder_mode);
                c[QUAL_STATUS] = V::Dec(s.qual_status as u64);
                c[IOPTIONS] = V::Dec(s.ioptions);
            }
        }
        for (i, v) in c.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{v}")?;
        }
        Ok(())
    }
}

/// See [`TeInst::fields`].
pub struct Fields<'a> {
    pkt: &'a TeInst,
    p: &'a Params,
}

impl fmt::Display for Fields<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.p;
        let tail = |f: &mut fmt::Formatter<'_>, t: &AddrTail| -> fmt::Result {
            write!(
                f,
                " address={:#x} notify={} updiscon={} irreport={}",
                t.address, t.notify as u8, t.updiscon as u8, t.irreport as u8
            )?;
            if p.irdepth_width() > 0 {
                write!(f, " irdepth={}", t.irdepth)?;
            }
            Ok(())
        };
        let sync = |f: &mut fmt::Formatter<'_>, s: &SyncFields| -> fmt::Result {
            write!(f, " branch={} privilege={}", s.branch as u8, s.privilege)?;
            if !p.notime_p {
                write!(f, " time={}", s.time)?;
            }
            if !p.nocontext_p {
                write!(f, " context={}", s.context)?;
            }
            Ok(())
        };
        let map = |f: &mut fmt::Formatter<'_>, branches: u8, m: u32, w: u32| -> fmt::Result {
            write!(f, " branches={branches}")?;
            if w > 0 {
                write!(f, " branch_map={m:#0width$b}", width = w as usize + 2)?;
            }
            Ok(())
        };
        write!(f, "format={}", self.pkt.format())?;
        if let Some(sf) = self.pkt.subformat() {
            write!(f, " subformat={sf}")?;
        }
        match self.pkt {
            TeInst::BranchCount {
                branch_count,
                branch_fmt,
                tail: t,
            } => {
                write!(f, " branch_count={branch_count} branch_fmt={branch_fmt}")?;
                if let Some(t) = t {
                    tail(f, t)?;
                }
            }
            TeInst::JumpTargetIndex {
                index,
                branches,
                branch_map,
                irreport,
                irdepth,
            } => {
                write!(f, " index={index}")?;
                map(f, *branches, *branch_map, branch_map_width_f0s1(*branches))?;
                write!(f, " irreport={}", *irreport as u8)?;
                if p.irdepth_width() > 0 {
                    write!(f, " irdepth={irdepth}")?;
                }
            }
            TeInst::Branch {
                branches,
                branch_map,
                tail: t,
            } => {
                map(f, *branches, *branch_map, branch_map_width(*branches))?;
                if let Some(t) = t {
                    tail(f, t)?;
                }
            }
            TeInst::Addr(t) => tail(f, t)?,
            TeInst::Start { sync: s, address } => {
                sync(f, s)?;
                write!(f, " address={address:#x}")?;
            }
            TeInst::Trap {
                sync: s,
                ecause,
                interrupt,
                thaddr,
                address,
                tval,
            } => {
                sync(f, s)?;
                write!(
                    f,
                    " ecause={ecause} interrupt={} thaddr={}",
                    *interrupt as u8, *thaddr as u8
                )?;
                if let Some(a) = address {
                    write!(f, " address={a:#x}")?;
                }
                if let Some(t) = tval {
                    write!(f, " tval={t:#x}")?;
                }
            }
            TeInst::Context {
                privilege,
                time,
                context,
            } => {
                write!(f, " privilege={privilege}")?;
                if !p.notime_p {
                    write!(f, " time={time}")?;
                }
                if !p.nocontext_p {
                    write!(f, " context={context}")?;
                }
            }
            TeInst::Support(s) => {
                write!(
                    f,
                    " ienable={} encoder_mode={} qual_status={} ioptions={:#x} denable={} dloss={} doptions={:#x}",
                    s.ienable as u8,
                    s.encoder_mode,
                    s.qual_status.name(),
                    s.ioptions,
                    s.denable as u8,
                    s.dloss as u8,
                    s.doptions
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configuration of the packets in `fragmentCodeAndTransport.adoc`: 64-bit addresses
    /// with `iaddress_lsb_p`=0, 32-bit context, 2-bit privilege, 5-bit ecause, no time, full
    /// address mode (the support packet of "Startup xrle" has options=4).
    fn fragment_params() -> (Params, IOptions) {
        let p = Params {
            iaddress_lsb_p: 0,
            ..Params::reference(64)
        };
        let o = IOptions {
            full_address: true,
            ..IOptions::default()
        };
        (p, o)
    }

    fn enc(pkt: &TeInst, p: &Params, o: IOptions) -> Vec<u8> {
        let mut out = [0; MAX_PAYLOAD];
        let n = pkt.encode(p, o, &mut out).unwrap();
        out[..n].to_vec()
    }

    fn check(pkt: TeInst, bytes: &[u8]) {
        let (p, o) = fragment_params();
        assert_eq!(enc(&pkt, &p, o), bytes, "{}", pkt.fields(&p));
        assert_eq!(TeInst::decode(bytes, &p, o).unwrap(), pkt);
    }

    fn tail(address: u64) -> AddrTail {
        AddrTail {
            address,
            ..AddrTail::default()
        }
    }

    #[test]
    fn illegal_opcode_fragment() {
        // Line 53: format=1, address=80000104, branches=1, branch_map=0, irreport=0, notify=0,
        // updiscon=0 -> Payload[05 04 01 00 80 00].
        check(
            TeInst::Branch {
                branches: 1,
                branch_map: 0,
                tail: Some(tail(0x8000_0104)),
            },
            &[0x05, 0x04, 0x01, 0x00, 0x80, 0x00],
        );
        // Line 56: format=2, address=8000010c, irreport=0, notify=0, updiscon=0
        // -> Payload[32 04 00 00 02].
        check(
            TeInst::Addr(tail(0x8000_010c)),
            &[0x32, 0x04, 0x00, 0x00, 0x02],
        );
        // Line 58: format=3, subformat=TRAP, address=80000222, branch=1, context=0, ecause=2,
        // interrupt=0, privilege=3, thaddr=0, tval=0 -> Payload[77 00 00 00 00 81 88 00 00 20].
        check(
            TeInst::Trap {
                sync: SyncFields {
                    branch: true,
                    privilege: 3,
                    time: 0,
                    context: 0,
                },
                ecause: 2,
                interrupt: false,
                thaddr: false,
                address: Some(0x8000_0222),
                tval: Some(0),
            },
            &[0x77, 0x00, 0x00, 0x00, 0x00, 0x81, 0x88, 0x00, 0x00, 0x20],
        );
        // Line 59 (START, address=800001b0) lists Payload[73 00 00 00 00 6c 00 00 10], which
        // does not match its own fields under the layout every other example of the chapter
        // follows (address bit 31 would be payload bit 70, byte 8 = 0x40; byte 5 = 0xd8), so it
        // is not used as a vector.
    }

    #[test]
    fn timer_long_loop_fragment() {
        // Line 61: format=1, address=800001a2, branches=15, branch_map=21845, irreport=0,
        // notify=0, updiscon=0 -> Payload[bd aa aa 68 00 00 20].
        check(
            TeInst::Branch {
                branches: 15,
                branch_map: 21845,
                tail: Some(tail(0x8000_01a2)),
            },
            &[0xbd, 0xaa, 0xaa, 0x68, 0x00, 0x00, 0x20],
        );
        // Line 64: format=3, subformat=TRAP, address=800001b0, branch=1, context=0, ecause=7,
        // interrupt=1, privilege=3, thaddr=1 -> Payload[77 00 00 00 80 33 6c 00 00 20].
        check(
            TeInst::Trap {
                sync: SyncFields {
                    branch: true,
                    privilege: 3,
                    time: 0,
                    context: 0,
                },
                ecause: 7,
                interrupt: true,
                thaddr: true,
                address: Some(0x8000_01b0),
                tval: None,
            },
            &[0x77, 0x00, 0x00, 0x00, 0x80, 0x33, 0x6c, 0x00, 0x00, 0x20],
        );
    }

    #[test]
    fn startup_xrle_fragment() {
        // Line 42: format=3, subformat=SUPPORT, enable=1, encoder_mode=0, options=4,
        // qual_status=0 -> Payload[1f 04].
        check(
            TeInst::Support(Support {
                ienable: true,
                ioptions: 4,
                ..Support::default()
            }),
            &[0x1f, 0x04],
        );
        // Line 45: format=3, subformat=START, address=20010522, branch=1, context=0,
        // privilege=3 -> Payload[73 00 00 00 00 91 82 00 10].
        check(
            TeInst::Start {
                sync: SyncFields {
                    branch: true,
                    privilege: 3,
                    time: 0,
                    context: 0,
                },
                address: 0x2001_0522,
            },
            &[0x73, 0x00, 0x00, 0x00, 0x00, 0x91, 0x82, 0x00, 0x10],
        );
    }

    #[test]
    fn branch_map_sizes() {
        let sizes: Vec<u32> = (0..32).map(branch_map_width).collect();
        assert_eq!(sizes[0], 31);
        assert_eq!(sizes[1], 1);
        assert_eq!(&sizes[2..4], &[3, 3]);
        assert!(sizes[4..8].iter().all(|&s| s == 7));
        assert!(sizes[8..16].iter().all(|&s| s == 15));
        assert!(sizes[16..32].iter().all(|&s| s == 31));
        assert_eq!(branch_map_width_f0s1(0), 0);
        // payload.adoc: "if branches = 12, branch_map is 15 bits long".
        assert_eq!(branch_map_width(12), 15);
    }

    /// Every format and subformat, with and without their optional parts, under parameters that
    /// give every field a width, round-trips through encode/decode.
    #[test]
    fn every_format_round_trips() {
        let p = Params {
            cache_size_p: 4,
            bpred_size_p: 6,
            f0s_width_p: 1,
            return_stack_size_p: 3,
            notime_p: false,
            time_width_p: 40,
            ..Params::reference(64)
        };
        let o = IOptions::default();
        let t = AddrTail {
            address: 0x7fff_ffff_ffff_fff0,
            notify: true,
            updiscon: false,
            irreport: true,
            irdepth: 5,
        };
        let s = SyncFields {
            branch: false,
            privilege: 1,
            time: 0x12_3456_789a,
            context: 0xdead_beef,
        };
        let pkts = [
            TeInst::BranchCount {
                branch_count: 0x1234,
                branch_fmt: 0,
                tail: None,
            },
            TeInst::BranchCount {
                branch_count: 0xffff_ffff,
                branch_fmt: 3,
                tail: Some(t),
            },
            TeInst::JumpTargetIndex {
                index: 9,
                branches: 0,
                branch_map: 0,
                irreport: true,
                irdepth: 3,
            },
            TeInst::JumpTargetIndex {
                index: 15,
                branches: 5,
                branch_map: 0b10110,
                irreport: false,
                irdepth: 0,
            },
            TeInst::Branch {
                branches: 0,
                branch_map: 0x7fff_fffe,
                tail: None,
            },
            TeInst::Branch {
                branches: 31,
                branch_map: 0x5555_5555,
                tail: Some(t),
            },
            TeInst::Addr(t),
            TeInst::Start {
                sync: s,
                address: 1,
            },
            TeInst::Trap {
                sync: s,
                ecause: 31,
                interrupt: false,
                thaddr: false,
                address: Some(0x4000_0000),
                tval: Some(u64::MAX),
            },
            TeInst::Trap {
                sync: s,
                ecause: 11,
                interrupt: true,
                thaddr: true,
                address: Some(0x4000_0000),
                tval: None,
            },
            TeInst::Context {
                privilege: 3,
                time: 77,
                context: 1,
            },
            TeInst::Support(Support {
                ienable: true,
                encoder_mode: 1,
                qual_status: QualStatus::EndedNtr,
                ioptions: 0x3f,
                denable: true,
                dloss: true,
                doptions: 0xf,
            }),
        ];
        for pkt in pkts {
            let b = enc(&pkt, &p, o);
            assert_eq!(
                TeInst::decode(&b, &p, o).unwrap(),
                pkt,
                "{}",
                pkt.fields(&p)
            );
        }
        // Implicit exception: no address when thaddr = 1.
        let ie = IOptions {
            implicit_exception: true,
            ..o
        };
        let trap = TeInst::Trap {
            sync: s,
            ecause: 2,
            interrupt: false,
            thaddr: true,
            address: None,
            tval: Some(0x1234),
        };
        let b = enc(&trap, &p, ie);
        assert_eq!(TeInst::decode(&b, &p, ie).unwrap(), trap);
        assert!(trap.encode(&p, o, &mut [0; MAX_PAYLOAD]).is_err());
        // f0s_width_p = 0: the subformat comes from the options.
        let p0 = Params {
            f0s_width_p: 0,
            ..p
        };
        let bp = IOptions {
            branch_prediction: true,
            ..o
        };
        let jtc = IOptions {
            jump_target_cache: true,
            ..o
        };
        let bc = pkts[1];
        let b = enc(&bc, &p0, bp);
        assert_eq!(TeInst::decode(&b, &p0, bp).unwrap(), bc);
        assert!(bc.encode(&p0, jtc, &mut [0; MAX_PAYLOAD]).is_err());
        assert_eq!(
            TeInst::decode(&b, &p0, o),
            Err(CodecError::AmbiguousFormat0)
        );
        let ji = pkts[3];
        let b = enc(&ji, &p0, jtc);
        assert_eq!(TeInst::decode(&b, &p0, jtc).unwrap(), ji);
    }

    #[test]
    fn status_bits_follow_their_predecessor() {
        // payload.adoc sec:updiscon / sec:irxx: with no flag set, notify/updiscon/irreport copy
        // the address MSB and compress away.
        let p = Params::reference(64);
        for address in [0x1e, 0x7fff_ffff_ffff_fe3e] {
            let t =
                AddrTail::from_flags(&p, address, false, false, false, 0, IrdepthFill::Updiscon);
            assert!(!t.notify_flag(&p) && !t.updiscon_flag() && !t.irreport_flag());
            let b = enc(&TeInst::Addr(t), &p, IOptions::default());
            // format (2) + address bits up to its sign: 1 byte for 0x1e, 1 byte for -0x1c2.
            assert!(b.len() <= 2, "{b:02x?}");
        }
        let t = AddrTail::from_flags(&p, 0x1e, false, true, false, 0, IrdepthFill::Updiscon);
        assert!(t.updiscon_flag() && !t.notify_flag(&p) && !t.irreport_flag());
        let q = Params {
            return_stack_size_p: 2,
            ..p
        };
        let t = AddrTail::from_flags(&q, 0x1e, false, false, true, 3, IrdepthFill::Updiscon);
        assert!(t.irreport_flag());
        assert_eq!(t.irdepth, 3);
        let t = AddrTail::from_flags(&q, 0x1e, false, true, false, 3, IrdepthFill::Updiscon);
        assert_eq!(t.irdepth, 7, "irdepth copies updiscon when not reported");
        let t = AddrTail::from_flags(&q, 0x1e, false, false, false, 3, IrdepthFill::Ones);
        assert_eq!(t.irdepth, 7);
    }

    #[test]
    fn malformed_payloads_are_errors() {
        let p = Params::reference(64);
        let o = IOptions::default();
        assert_eq!(TeInst::decode(&[], &p, o), Err(CodecError::EmptyPayload));
        // Format 0 without prediction or cache enabled.
        assert_eq!(
            TeInst::decode(&[0x00], &p, o),
            Err(CodecError::AmbiguousFormat0)
        );
        // A support packet (20 bits of fields) followed by junk.
        assert!(matches!(
            TeInst::decode(&[0x1f, 0x00, 0x00, 0x55], &p, o),
            Err(CodecError::TrailingBits { .. })
        ));
        // Every single byte and every two-byte value decodes or fails without panicking.
        for a in 0..=255u8 {
            let _ = TeInst::decode(&[a], &p, o);
            for b in 0..=255u8 {
                let _ = TeInst::decode(&[a, b], &p, o);
            }
        }
    }
}
