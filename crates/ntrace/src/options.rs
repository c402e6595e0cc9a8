//! Encoder options (N-Trace chapter 4 Table 7, the trTe* controls of the Trace Control Interface).

use crate::codec::{CodecConfig, Dialect};
use rvtrace_isa::Xlen;

/// Settings that contradict each other or that the input cannot serve (usage errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// An SRC that does not fit in the SRC field (N-Trace 6.2, trTeSrcBits).
    SrcTooWide {
        /// The SRC (trTeSrcID).
        id: u16,
        /// The field's width (trTeSrcBits).
        src_bits: u8,
    },
    /// Implicit return without 4-bit itype (N-Trace 9.2 follows calls and returns, which 3-bit
    /// itype merges with other jumps).
    CallStackNeedsCalls,
    /// Sequential jumps without the hart's `sijump` signal (N-Trace 9.1).
    SequentialJumpsNeedSijump,
    /// A link rule given to the encoder, which follows the spec's x1/x5.
    LinkRuleForEncoder,
    /// A return stack of addresses deeper than 32 entries (9.2; only the counter may be deeper).
    StackTooDeep {
        /// The depth asked for.
        depth: u32,
    },
    /// SiFive's dialect with a message SiFive's decoder does not read: ResourceFull RCODE 2
    /// (repeated history) or RepeatBranch (its `parseResourceFull` knows RCODE 0, 1, 8, 9 only,
    /// `processTraceMessage` rejects TCODE 30 as unsupported); the dialect sends repeated
    /// outcomes as RCODE 8/9 runs instead.
    SifiveRepeats,
    /// SiFive's dialect with an implicit-return mode other than simple counting (SiFive's
    /// encoders count calls, libnexus-rv `contrib/p550/README.md`: "hard-wired to Simple
    /// counting"), or with BTM (the return-stack optimization is an HTM mode: teInstruction 7,
    /// "Generate HTM and Sync with HTM optimization", dqr `doc/sifive_trace.md`; BTM is 3).
    SifiveStack,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::SrcTooWide { id, src_bits } => {
                write!(f, "--src-id {id} does not fit in --src-bits {src_bits}")
            }
            ConfigError::CallStackNeedsCalls => f.write_str("--call-stack needs 4-bit itype (calls and returns); record with `rvtrace run --itype-width 4`"),
            ConfigError::SequentialJumpsNeedSijump => f.write_str("--sequential-jumps needs the hart's sijump signal, which this input does not carry"),
            ConfigError::LinkRuleForEncoder => f.write_str(
                "--link-registers is an N-Trace decoder option (the encoder follows the spec's x1/x5)",
            ),
            ConfigError::StackTooDeep { depth } => write!(
                f,
                "--call-stack {depth}: a stack of return addresses has at most 32 entries (--call-counter counts deeper)"
            ),
            ConfigError::SifiveRepeats => f.write_str(
                "--dialect sifive: SiFive's decoder reads no ResourceFull RCODE 2 or RepeatBranch (--repeat-history, --hist-patterns, --repeat-branch); the dialect sends repeated branch outcomes as RCODE 8/9 runs",
            ),
            ConfigError::SifiveStack => f.write_str(
                "--dialect sifive: SiFive's implicit return is simple counting in HTM (--call-stack N counts calls); --call-stack-partial and --mode btm with it are not SiFive's",
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Which text of the N-Trace specification the encoder and decoder follow where the two differ
/// (crates/ntrace/README.md, "N-Trace 1.0 and 1.0.0-rc7"; the sidecar's `spec` key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Spec {
    /// N-Trace 1.0 as ratified: `ecall`/`ebreak`/`c.ebreak` do not retire (not in I-CNT), a
    /// periodic sync at an indirect jump is IndirectBranch(Hist)Sync, a full I-CNT is ResourceFull
    /// RCODE 0 (SYNC=4 in BTM only), every synchronizing message resets the encoder.
    #[default]
    #[cfg_attr(feature = "clap", value(name = "1.0"))]
    V1_0,
    /// N-Trace 1.0.0-rc7 (what NexRv follows): `ecall`/`ebreak` counted in I-CNT, SYNC=4 for a
    /// full I-CNT in HTM with HIST bits pending, SYNC 0/4/6 keep the encoder state.
    #[cfg_attr(feature = "clap", value(name = "rc7"))]
    Rc7,
}

impl Spec {
    /// The sidecar and command-line spelling.
    pub const fn name(self) -> &'static str {
        match self {
            Spec::V1_0 => "1.0",
            Spec::Rc7 => "rc7",
        }
    }

    /// The spec of a name ([`Spec::name`]).
    pub fn from_name(name: &str) -> Option<Spec> {
        [Spec::V1_0, Spec::Rc7]
            .into_iter()
            .find(|s| s.name() == name)
    }

    /// Whether a synchronizing message with this SYNC resets the encoder state (return stack,
    /// counters): every one in 1.0 (8.4: "All synchronizing messages MUST fully reset the encoder
    /// state"); in rc7 all but 0 (External Trace Trigger), 4 (Sequential Instruction Counter) and
    /// 6 (Trace Event) (rc7 8.5 Table 25, column "Encoder Reset").
    pub const fn sync_resets_encoder(self, sync: u8) -> bool {
        use crate::codec::sync::{EXTERNAL_TRIGGER, ICNT_OVERFLOW, TRACE_EVENT};
        match self {
            Spec::V1_0 => true,
            Spec::Rc7 => !matches!(sync, EXTERNAL_TRIGGER | ICNT_OVERFLOW | TRACE_EVENT),
        }
    }
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// trTeInstMode (N-Trace chapter 5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Branch Trace Messaging (trTeInstMode 3): DirectBranch per taken branch, IndirectBranch.
    Btm,
    /// History Trace Messaging (trTeInstMode 6): branch outcomes in HIST, IndirectBranchHist.
    #[default]
    Htm,
}

/// Implicit return (N-Trace 9.2, trTeInstImplicitReturnMode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CallStack {
    /// Returns are always reported (trTeInstEnImplicitReturn = 0).
    #[default]
    Off,
    /// Mode 1: a counter of nested calls (at most `max`); returns are implicit while it is not 0.
    Counter {
        /// Largest count.
        max: u32,
    },
    /// Mode 2: a stack of the low `bits` bits of return addresses, `depth` entries.
    Partial {
        /// Entries (at most 32).
        depth: u32,
        /// Address bits kept per entry.
        bits: u32,
    },
    /// Mode 3: a stack of full return addresses, `depth` entries (at most 32).
    Full {
        /// Entries.
        depth: u32,
    },
}

/// The default periodic synchronization: every 2^19 messages, the longest interval the control
/// interface can set (trTeInstSyncMax = 15: "Generate synchronization when count reaches
/// 2^(trTeInstSyncMax+4)", Trace Control Interface, trTeControl), in messages (trTeInstSyncMode
/// 1). A damaged byte then costs at most that many messages instead of the rest of the trace, for
/// a few hundredths of a percent of the trace (crates/ntrace/README.md, "Options and their cost").
pub const DEFAULT_SYNC_PERIOD: u64 = 1 << 19;

/// Unit of the periodic synchronization counter (trTeInstSyncMode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SyncUnit {
    /// 1: trace messages.
    #[default]
    Messages,
    /// 2: hart clock cycles (the ingress `time`).
    Cycles,
    /// 3: instruction 16-bit half-words.
    Halfwords,
}

/// A bounded output queue (N-Trace 7.4: messages that do not fit are lost, an Error message and
/// a SYNC=7 synchronization follow).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fifo {
    /// Capacity in bytes.
    pub bytes: u32,
    /// Bytes the trace port takes out of the queue per ingress record, in 1/256 byte units.
    pub drain_per_record_256: u32,
}

/// Which instructions are traced (trTeInstFilters, simplified): trace stops (ProgTraceCorrelation
/// EVCODE=4) at the first instruction outside the filter and restarts (ProgTraceSync SYNC=5) at
/// the next one inside (N-Trace 8.6 Corner Cases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceFilter {
    /// Privileges traced, one bit per ingress privilege code (bit 0 U, bit 1 S, bit 3 M, ...).
    pub privileges: u8,
    /// Only instructions with `lo <= address < hi`.
    pub range: Option<(u64, u64)>,
}

impl TraceFilter {
    /// Every privilege, every address.
    pub const ALL: TraceFilter = TraceFilter {
        privileges: 0xFF,
        range: None,
    };

    /// Whether an instruction at `addr` in privilege `priv_` is traced.
    pub fn passes(&self, addr: u64, priv_: u8) -> bool {
        self.privileges >> (priv_ & 7) & 1 != 0
            && self.range.is_none_or(|(lo, hi)| lo <= addr && addr < hi)
    }
}

/// What an encoder's input carries (an ingress file's header says it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputCaps {
    /// Width of the ingress itype: 4 tells calls and returns apart (ingress port, Table 2).
    pub itype_width: u8,
    /// The hart's `sijump` signal is present.
    pub sijump: bool,
    /// The records carry time.
    pub time: bool,
}

/// The SRC ID `id` must fit in the SRC field of `src_bits` bits (N-Trace 6.2, trTeSrcBits).
pub fn check_src(id: u16, src_bits: u8) -> Result<(), ConfigError> {
    if u32::from(id) >= 1u32 << src_bits {
        return Err(ConfigError::SrcTooWide { id, src_bits });
    }
    Ok(())
}

/// Everything the encoder can be told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EncoderConfig {
    /// BTM or HTM.
    pub mode: Mode,
    /// XLEN of the hart (address width, MSB extension).
    pub xlen: Xlen,
    /// I-CNT counter width in bits, including its overflow (most significant) bit (N-Trace 8.3,
    /// NTRACE_MAX_ICNT = 22); 2 to 24, or 0 for a counter that never overflows (NexRv's).
    pub icnt_bits: u8,
    /// HIST register width in bits, including the stop-bit (N-Trace 8.2.1, at most 32).
    pub hist_bits: u8,
    /// trTeInstEnRepeatedHistory (N-Trace 9.3): ResourceFull RCODE 2 with HREPEAT.
    pub repeat_history: bool,
    /// Repeated history of any period (N-Trace 9.3 leaves the detection to the encoder): HIST
    /// bits are sent as ResourceFull RCODE 2 with the shortest pattern (1 to `hist_bits` - 1
    /// branches) that repeats over the last one or two full HIST registers, counted for as long as
    /// the branches follow it. Implies `repeat_history` (trTeInstEnRepeatedHistory).
    pub hist_patterns: bool,
    /// RepeatBranch messages for identical consecutive branch messages (N-Trace 7.11).
    pub repeat_branch: bool,
    /// Implicit return (N-Trace 9.2).
    pub call_stack: CallStack,
    /// trTeInstEnSequentialJump (N-Trace 9.1; needs the ingress `sijump` flag).
    pub sequential_jumps: bool,
    /// trTeInstEnAllJumps: direct jumps are traced as taken branches.
    pub all_jumps: bool,
    /// trTeInstExtendAddrMSB (N-Trace 9.4).
    pub extend_addr_msb: bool,
    /// Periodic synchronization (trTeInstSyncMode/Max): every so many units, SYNC=2.
    pub sync_period: Option<(SyncUnit, u64)>,
    /// TSTAMP fields (trTsEnable; N-Trace 8.5).
    pub timestamps: bool,
    /// SRC width (trTeSrcBits).
    pub codec: CodecConfig,
    /// SRC of this hart (trTeSrcID).
    pub src_id: u16,
    /// trTeContext: Ownership messages (N-Trace 7.1).
    pub ownership: bool,
    /// Report traps with B-TYPE 1 instead of 2 (exception) / 3 (interrupt).
    pub btype_compat: bool,
    /// Bounded output queue.
    pub fifo: Option<Fifo>,
    /// Trace only some instructions.
    pub filter: Option<TraceFilter>,
    /// SYNC of the first message.
    pub start_sync: u8,
    /// The reference encoder's (NexRv) choices where the specification leaves room (see the
    /// crate README): ProgTraceCorrelation without HIST when HIST is empty, I-CNT overflow
    /// reported before the instruction that overflows, exceptions whose handler is the next
    /// instruction (semihosting `ebreak`) traced as plain instructions.
    pub nexrv: bool,
    /// Largest HREPEAT (NTRACE_MAX_HREPEAT: 18 bits).
    pub max_hrepeat: u64,
    /// Largest B-CNT (NTRACE_MAX_BCNT: 18 bits).
    pub max_bcnt: u64,
    /// The text of the specification followed where 1.0 and rc7 differ.
    pub spec: Spec,
    /// Width of the timestamp counter (SiFive's `tsSize`; 64: no wrap): TSTAMP values are
    /// taken modulo 2^`tstamp_bits`.
    pub tstamp_bits: u8,
}

impl EncoderConfig {
    /// The defaults for a hart of `xlen`: HTM, 22-bit I-CNT, 32-bit HIST, everything else off,
    /// first message ProgTraceSync with SYNC=3 (Exit from Debug Mode, N-Trace 8.6 Corner Cases).
    pub const fn new(xlen: Xlen) -> Self {
        EncoderConfig {
            mode: Mode::Htm,
            xlen,
            icnt_bits: 22,
            hist_bits: 32,
            repeat_history: false,
            hist_patterns: false,
            repeat_branch: false,
            call_stack: CallStack::Off,
            sequential_jumps: false,
            all_jumps: false,
            extend_addr_msb: false,
            sync_period: Some((SyncUnit::Messages, DEFAULT_SYNC_PERIOD)),
            timestamps: false,
            codec: CodecConfig::new(0),
            src_id: 0,
            ownership: false,
            btype_compat: false,
            fifo: None,
            filter: None,
            start_sync: crate::codec::sync::EXIT_DEBUG,
            nexrv: false,
            max_hrepeat: (1 << 18) - 1,
            max_bcnt: (1 << 18) - 1,
            spec: Spec::V1_0,
            tstamp_bits: 64,
        }
    }

    /// SiFive's dialect ([`Dialect::Sifive`]; crates/ntrace/README.md, "SiFive dialect"):
    /// ResourceFull RCODE 8/9 runs, XOR timestamps, simple-counting implicit return.
    pub const fn sifive(&self) -> bool {
        matches!(self.codec.dialect, Dialect::Sifive)
    }

    /// Settings that contradict each other (a usage error).
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_src(self.src_id, self.codec.src_bits)?;
        match self.call_stack {
            CallStack::Partial { depth, .. } | CallStack::Full { depth } if depth > 32 => {
                return Err(ConfigError::StackTooDeep { depth });
            }
            CallStack::Partial { .. } | CallStack::Full { .. } if self.sifive() => {
                return Err(ConfigError::SifiveStack);
            }
            CallStack::Counter { .. } if self.sifive() && self.mode == Mode::Btm => {
                return Err(ConfigError::SifiveStack);
            }
            _ => {}
        }
        if self.sifive() && (self.repeat_history || self.hist_patterns || self.repeat_branch) {
            return Err(ConfigError::SifiveRepeats);
        }
        Ok(())
    }

    /// Settings an input with `caps` cannot serve (an error), and the warnings for settings it
    /// serves poorly.
    pub fn check_input(&self, caps: InputCaps) -> Result<Vec<String>, ConfigError> {
        // N-Trace 9.2: the call stack follows calls and returns, which 3-bit itype merges with
        // other jumps.
        if self.call_stack != CallStack::Off && caps.itype_width != 4 {
            return Err(ConfigError::CallStackNeedsCalls);
        }
        // N-Trace 9.1: the encoder knows a sequential jump from the hart's sijump signal only.
        if self.sequential_jumps && !caps.sijump {
            return Err(ConfigError::SequentialJumpsNeedSijump);
        }
        let mut warnings = Vec::new();
        if self.timestamps && !caps.time {
            warnings.push("the input carries no time; every TSTAMP will be 0".into());
        }
        Ok(warnings)
    }

    /// `--preset nexrv`: the reference C encoder's choices (NexRv, riscv-non-isa/tg-nexus-trace
    /// `refcode/c/NexRvEnco.c`; see the crate README): the first message is ProgTraceSync with
    /// SYNC=1, HIST holds up to 31 branches (32 bits with the stop-bit), I-CNT has no limit (NexRv
    /// never reports an overflow), repeated HIST as RCODE 2 with NexRv's 28/30-branch patterns and
    /// no HREPEAT limit, NexRv's call-stack ring, the trace ends as NexRv ends it. `mode` and the
    /// repeat and call-stack options stay as given. NexRv follows rc7 ([`Spec::Rc7`]).
    pub const fn nexrv(mut self) -> Self {
        self.nexrv = true;
        self.spec = Spec::Rc7;
        self.start_sync = crate::codec::sync::EXIT_RESET;
        self.hist_bits = 32;
        self.icnt_bits = 0;
        self.max_hrepeat = u64::MAX;
        // NexRv's encoder synchronizes only where the trace starts and ends.
        self.sync_period = None;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1.0 8.4: every synchronizing message resets the encoder; rc7 8.5 Table 25: not SYNC 0
    /// (External Trace Trigger), 4 (Sequential Instruction Counter), 6 (Trace Event).
    #[test]
    fn sync_resets() {
        let rc7: Vec<u8> = (0..16)
            .filter(|&s| !Spec::Rc7.sync_resets_encoder(s))
            .collect();
        assert_eq!(rc7, [0, 4, 6]);
        assert!((0..16).all(|s| Spec::V1_0.sync_resets_encoder(s)));
        assert_eq!(Spec::from_name("rc7"), Some(Spec::Rc7));
        assert_eq!(Spec::from_name(&Spec::V1_0.to_string()), Some(Spec::V1_0));
        assert_eq!(EncoderConfig::new(Xlen::Rv32).nexrv().spec, Spec::Rc7);
    }

    #[test]
    fn validation() {
        let mut c = EncoderConfig::new(Xlen::Rv64);
        c.codec.src_bits = 2;
        c.src_id = 3;
        assert!(c.validate().is_ok());
        c.src_id = 4;
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "--src-id 4 does not fit in --src-bits 2"
        );
        let full = InputCaps {
            itype_width: 4,
            sijump: true,
            time: true,
        };
        let mut c = EncoderConfig::new(Xlen::Rv64);
        c.call_stack = CallStack::Full { depth: 8 };
        c.sequential_jumps = true;
        c.timestamps = true;
        assert_eq!(c.check_input(full), Ok(vec![]));
        let three = InputCaps {
            itype_width: 3,
            ..full
        };
        assert_eq!(c.check_input(three), Err(ConfigError::CallStackNeedsCalls));
        let no_sijump = InputCaps {
            sijump: false,
            ..full
        };
        assert_eq!(
            c.check_input(no_sijump),
            Err(ConfigError::SequentialJumpsNeedSijump)
        );
        let no_time = InputCaps {
            time: false,
            ..full
        };
        assert_eq!(c.check_input(no_time).unwrap().len(), 1);
    }
}
