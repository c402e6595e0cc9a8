//! What encoder and decoder must agree on beyond the bytes. N-Trace has no message that carries
//! the encoder's configuration: the SRC width (trTeSrcBits, 6.2), the MSB extension of addresses
//! (trTeInstExtendAddrMSB, 9.4) and all-jumps (trTeInstEnAllJumps, chapter 2) change how the
//! bytes read, and "the decoder must be configured the same way" (chapter 4). rvtrace writes them
//! into a small text *sidecar* next to the trace, `TRACE.meta`, so that the trace stays exactly
//! the protocol's bytes:
//!
//! ```text
//! # rvtrace N-Trace sidecar: the encoder's settings a decoder needs (N-Trace chapter 4)
//! protocol = ntrace
//! xlen = 64
//! src-bits = 3
//! src-id = 5
//! extend-addr-msb = false
//! all-jumps = false
//! spec = 1.0
//! link-registers = spec
//! # the encoder's other settings (for people; the decoder does not need them)
//! mode = htm
//! fifo-bytes = 64
//! ```
//!
//! Keys are the command-line option names. Besides the sidecar, [`diagnose`] finds which of the
//! options above explains a decode that loses trace.

use crate::codec::message::MAX_SRC_BITS;
use crate::codec::{parse, CodecConfig, Frame, Frames};
use crate::decoder::{decode, DecoderConfig};
use crate::insn::LinkRule;
use crate::options::{CallStack, ConfigError, EncoderConfig, Mode, Spec, SyncUnit};
use rvtrace_flow::{FlowElement, LossReason};
use rvtrace_image::Image;
use rvtrace_isa::Xlen;
use std::path::{Path, PathBuf};

/// The `protocol` value of an N-Trace sidecar.
pub const PROTOCOL: &str = "ntrace";

/// Why a sidecar's text does not parse (line numbers count from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaError {
    /// A line that is not `KEY = VALUE`.
    Syntax {
        /// The line.
        line: usize,
    },
    /// The first key is not `protocol`.
    FirstKey {
        /// The line.
        line: usize,
        /// The key found.
        key: String,
    },
    /// The sidecar of another kind of trace.
    OtherProtocol {
        /// The line.
        line: usize,
        /// The protocol it names.
        value: String,
    },
    /// A value its key does not take.
    Value {
        /// The line.
        line: usize,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        problem: ValueProblem,
    },
    /// No key at all.
    NoProtocol,
    /// `src-id` does not fit in `src-bits`.
    SrcIdTooWide {
        /// `src-id`.
        id: u16,
        /// `src-bits`.
        src_bits: u8,
    },
}

/// What is wrong with a sidecar value ([`MetaError::Value`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueProblem {
    /// Not a number.
    NotANumber,
    /// Not `true` or `false`.
    NotABool,
    /// An `xlen` other than 32 or 64.
    NotXlen,
    /// Larger than this.
    AtMost(u64),
    /// Larger than its field.
    TooLarge,
    /// A `link-registers` rule that does not exist.
    UnknownRule,
    /// A `spec` other than `1.0` or `rc7`.
    UnknownSpec,
    /// A dialect other than `standard` or `sifive`.
    UnknownDialect,
}

impl std::fmt::Display for ValueProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueProblem::NotANumber => f.write_str("not a number"),
            ValueProblem::NotABool => f.write_str("expected true or false"),
            ValueProblem::NotXlen => f.write_str("expected 32 or 64"),
            ValueProblem::AtMost(n) => write!(f, "at most {n}"),
            ValueProblem::TooLarge => f.write_str("too large"),
            ValueProblem::UnknownRule => f.write_str("unknown rule"),
            ValueProblem::UnknownSpec => f.write_str("expected 1.0 or rc7"),
            ValueProblem::UnknownDialect => f.write_str("expected standard or sifive"),
        }
    }
}

impl std::fmt::Display for MetaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetaError::Syntax { line } => write!(f, "line {line}: expected KEY = VALUE"),
            MetaError::FirstKey { line, key } => {
                write!(f, "line {line}: the first key must be protocol, not {key}")
            }
            MetaError::OtherProtocol { line, value } => write!(
                f,
                "line {line}: protocol = {value}: the sidecar of another kind of trace, not N-Trace"
            ),
            MetaError::Value {
                line,
                key,
                value,
                problem,
            } => write!(f, "line {line}: {key} = {value}: {problem}"),
            MetaError::NoProtocol => f.write_str("no protocol key"),
            MetaError::SrcIdTooWide { id, src_bits } => {
                write!(f, "src-id = {id} does not fit in src-bits = {src_bits}")
            }
        }
    }
}

impl std::error::Error for MetaError {}

/// The sidecar's contents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// XLEN of the traced hart.
    pub xlen: Option<Xlen>,
    /// `src-bits`: width of SRC (trTeSrcBits).
    pub src_bits: u8,
    /// `src-id`: this hart's SRC (trTeSrcID), when `src_bits` > 0.
    pub src_id: Option<u16>,
    /// `extend-addr-msb` (trTeInstExtendAddrMSB).
    pub extend_addr_msb: bool,
    /// `all-jumps` (trTeInstEnAllJumps).
    pub all_jumps: bool,
    /// `spec`: the text of N-Trace the encoder followed. `None`: a sidecar without the key,
    /// written before rvtrace knew 1.0, so its trace follows rc7 ([`Meta::spec_or_rc7`]).
    pub spec: Option<Spec>,
    /// `link-registers`: the rule the encoder classified calls and returns with (`None`: not
    /// known, the decoder finds it).
    pub link: Option<LinkRule>,
    /// `fifo-bytes`: the encoder's output queue, whose overflow loses messages (Error, 7.4).
    pub fifo_bytes: Option<u32>,
    /// `icnt-bits`: the encoder's I-CNT counter width (0: it never overflows), which bounds
    /// every I-CNT field (8.3).
    pub icnt_bits: Option<u8>,
    /// `dialect`: the message set (`None`, no key: standard N-Trace).
    pub dialect: Option<crate::codec::Dialect>,
    /// The encoder's other settings, `key = value`, for people (written after the others).
    pub info: Vec<(String, String)>,
}

/// The sidecar path for a trace: `TRACE.meta`.
pub fn sidecar_path(trace: &Path) -> PathBuf {
    let mut s = trace.as_os_str().to_owned();
    s.push(".meta");
    PathBuf::from(s)
}

impl Meta {
    /// The text of N-Trace the trace follows: the `spec` key, rc7 when there is none (sidecars
    /// from before the key describe rc7-rule streams).
    pub fn spec_or_rc7(&self) -> Spec {
        self.spec.unwrap_or(Spec::Rc7)
    }

    /// The largest I-CNT field the encoder can send (`None`: not known, or no limit).
    pub fn max_icnt(&self) -> Option<u64> {
        match self.icnt_bits {
            Some(b @ 1..=63) => Some((1 << b) - 1),
            _ => None,
        }
    }
}

/// The command-line name of a link rule.
pub fn link_name(l: LinkRule) -> &'static str {
    match l {
        LinkRule::Spec => "spec",
        LinkRule::X1Only => "x1",
        LinkRule::NexRv => "nexrv",
    }
}

fn parse_bool(v: &str) -> Result<bool, ValueProblem> {
    match v {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ValueProblem::NotABool),
    }
}

impl Meta {
    /// The sidecar of an encoder configuration; `link` is the rule the input's calls and returns
    /// follow (the hart's own classes follow N-Trace Table 2: [`LinkRule::Spec`]).
    pub fn from_encoder(cfg: &EncoderConfig, link: Option<LinkRule>) -> Meta {
        let mut info = vec![(
            "mode".to_string(),
            match cfg.mode {
                Mode::Btm => "btm",
                Mode::Htm => "htm",
            }
            .to_string(),
        )];
        let mut add = |k: &str, v: String| info.push((k.to_string(), v));
        if cfg.nexrv {
            add("preset", "nexrv".into());
        }
        add("hist-bits", cfg.hist_bits.to_string());
        add("repeat-history", cfg.repeat_history.to_string());
        if cfg.hist_patterns {
            add("hist-patterns", "true".into());
        }
        add("repeat-branch", cfg.repeat_branch.to_string());
        match cfg.call_stack {
            CallStack::Off => {}
            CallStack::Counter { max } => {
                add("call-stack", max.to_string());
                add("call-counter", "true".into());
            }
            CallStack::Partial { depth, bits } => {
                add("call-stack", depth.to_string());
                add("call-stack-partial", bits.to_string());
            }
            CallStack::Full { depth } => add("call-stack", depth.to_string()),
        }
        add("sequential-jumps", cfg.sequential_jumps.to_string());
        if let Some((unit, n)) = cfg.sync_period {
            add("sync-period", n.to_string());
            let unit = match unit {
                SyncUnit::Messages => "messages",
                SyncUnit::Cycles => "cycles",
                SyncUnit::Halfwords => "halfwords",
            };
            add("sync-mode", unit.into());
        }
        add("timestamps", cfg.timestamps.to_string());
        add("ownership", cfg.ownership.to_string());
        add("btype-compat", cfg.btype_compat.to_string());
        if cfg.tstamp_bits < 64 {
            add("tstamp-bits", cfg.tstamp_bits.to_string());
        }
        if let Some(f) = cfg.fifo {
            add(
                "fifo-drain",
                format!("{}", f.drain_per_record_256 as f64 / 256.0),
            );
        }
        Meta {
            xlen: Some(cfg.xlen),
            src_bits: cfg.codec.src_bits,
            src_id: (cfg.codec.src_bits > 0).then_some(cfg.src_id),
            extend_addr_msb: cfg.extend_addr_msb,
            all_jumps: cfg.all_jumps,
            spec: Some(cfg.spec),
            link,
            fifo_bytes: cfg.fifo.map(|f| f.bytes),
            icnt_bits: Some(cfg.icnt_bits),
            dialect: cfg.sifive().then_some(cfg.codec.dialect),
            info,
        }
    }

    /// The sidecar text.
    pub fn to_text(&self) -> String {
        let mut s = String::from(
            "# rvtrace N-Trace sidecar: the encoder's settings a decoder needs (N-Trace chapter 4)\n",
        );
        s += &format!("protocol = {PROTOCOL}\n");
        if let Some(x) = self.xlen {
            s += &format!("xlen = {}\n", x.bits());
        }
        s += &format!("src-bits = {}\n", self.src_bits);
        if let Some(id) = self.src_id {
            s += &format!("src-id = {id}\n");
        }
        s += &format!("extend-addr-msb = {}\n", self.extend_addr_msb);
        s += &format!("all-jumps = {}\n", self.all_jumps);
        if let Some(spec) = self.spec {
            s += &format!("spec = {spec}\n");
        }
        if let Some(l) = self.link {
            s += &format!("link-registers = {}\n", link_name(l));
        }
        if let Some(b) = self.icnt_bits {
            s += &format!("icnt-bits = {b}\n");
        }
        if let Some(f) = self.fifo_bytes {
            s += &format!("fifo-bytes = {f}\n");
        }
        if let Some(d) = self.dialect {
            s += &format!("dialect = {d}\n");
        }
        if !self.info.is_empty() {
            s += "# the encoder's other settings (for people; the decoder does not need them)\n";
            for (k, v) in &self.info {
                s += &format!("{k} = {v}\n");
            }
        }
        s
    }

    /// Parse sidecar text: `key = value` lines, `#` comments; the first key must be
    /// `protocol = ntrace`. Keys a decoder does not use are kept in [`Meta::info`].
    pub fn parse(text: &str) -> Result<Meta, MetaError> {
        let mut m = Meta::default();
        let mut protocol = None;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                return Err(MetaError::Syntax { line: n + 1 });
            };
            let (k, v) = (k.trim(), v.trim());
            if protocol.is_none() {
                if k != "protocol" {
                    let key = k.to_string();
                    return Err(MetaError::FirstKey { line: n + 1, key });
                }
                if v != PROTOCOL {
                    let value = v.to_string();
                    return Err(MetaError::OtherProtocol { line: n + 1, value });
                }
                protocol = Some(());
                continue;
            }
            m.set(k, v).map_err(|problem| MetaError::Value {
                line: n + 1,
                key: k.to_string(),
                value: v.to_string(),
                problem,
            })?;
        }
        if protocol.is_none() {
            return Err(MetaError::NoProtocol);
        }
        if let Some(id) = m.src_id {
            if m.src_bits == 0 || u32::from(id) >= 1 << m.src_bits {
                let src_bits = m.src_bits;
                return Err(MetaError::SrcIdTooWide { id, src_bits });
            }
        }
        Ok(m)
    }

    /// Set key `k` to the value `v` (after the `protocol` key).
    fn set(&mut self, k: &str, v: &str) -> Result<(), ValueProblem> {
        let num = || v.parse::<u64>().map_err(|_| ValueProblem::NotANumber);
        match k {
            "xlen" => {
                self.xlen = Some(match v {
                    "32" => Xlen::Rv32,
                    "64" => Xlen::Rv64,
                    _ => return Err(ValueProblem::NotXlen),
                })
            }
            "src-bits" => {
                let b = num()?;
                if b > u64::from(MAX_SRC_BITS) {
                    return Err(ValueProblem::AtMost(MAX_SRC_BITS.into()));
                }
                self.src_bits = b as u8;
            }
            "src-id" => {
                self.src_id = Some(u16::try_from(num()?).map_err(|_| ValueProblem::TooLarge)?)
            }
            "extend-addr-msb" => self.extend_addr_msb = parse_bool(v)?,
            "all-jumps" => self.all_jumps = parse_bool(v)?,
            "spec" => self.spec = Some(Spec::from_name(v).ok_or(ValueProblem::UnknownSpec)?),
            "link-registers" => {
                self.link = match v {
                    "spec" => Some(LinkRule::Spec),
                    "x1" => Some(LinkRule::X1Only),
                    "nexrv" => Some(LinkRule::NexRv),
                    "auto" => None,
                    _ => return Err(ValueProblem::UnknownRule),
                }
            }
            "icnt-bits" => {
                let b = num()?;
                if b > 64 {
                    return Err(ValueProblem::AtMost(64));
                }
                self.icnt_bits = Some(b as u8);
            }
            "dialect" => {
                self.dialect =
                    Some(crate::codec::Dialect::from_name(v).ok_or(ValueProblem::UnknownDialect)?)
            }
            "fifo-bytes" => {
                self.fifo_bytes = Some(u32::try_from(num()?).map_err(|_| ValueProblem::TooLarge)?)
            }
            _ => self.info.push((k.to_string(), v.to_string())),
        }
        Ok(())
    }
}

/// Which registers are link registers for calls and returns, as the user asks (`--link-registers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LinkChoice {
    /// `spec`; if the trace does not decode without loss that way, `x1` or `nexrv` when one of
    /// them does (a note on stderr says which was used).
    Auto,
    /// x1 and x5 (N-Trace Table 2).
    Spec,
    /// x1 only: `jal t0` is a plain jump, `jr t0` a plain indirect jump (how the conformance
    /// `variant-jalt0-as-jump` call-stack streams were made).
    X1,
    /// NexRv's objdump classification: every `jal`/`jalr` writing a register is a call, only
    /// `ret` is a return.
    Nexrv,
}

impl LinkChoice {
    /// The rule, `None` for [`LinkChoice::Auto`] (found by trying, [`crate::decoder::find_link_rule`]).
    pub fn rule(self) -> Option<LinkRule> {
        match self {
            LinkChoice::Auto => None,
            LinkChoice::Spec => Some(LinkRule::Spec),
            LinkChoice::X1 => Some(LinkRule::X1Only),
            LinkChoice::Nexrv => Some(LinkRule::NexRv),
        }
    }
}

/// The N-Trace decoder's options as the user gives them (`None`: not given; each one not given is
/// taken from the trace's sidecar when there is one, [`decoder_config`]). The field docs are the
/// command line's help (`clap` feature); SRC width and SRC are the protocols' common
/// `--src-bits`/`--src-id`, given by the decode layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Given {
    /// trTeSrcBits (common `--src-bits`).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub src_bits: Option<u8>,
    /// The SRC to decode (common `--src-id`).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub src_id: Option<u16>,
    /// trTeInstExtendAddrMSB: F-ADDR/U-ADDR with the MSB extension (N-Trace 9.4) [default: the
    /// sidecar's, else false].
    #[cfg_attr(feature = "clap", arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true"))]
    pub extend_addr_msb: Option<bool>,
    /// trTeInstEnAllJumps: direct jumps are traced as taken branches [default: the sidecar's,
    /// else false].
    #[cfg_attr(feature = "clap", arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true"))]
    pub all_jumps: Option<bool>,
    /// The N-Trace text the encoder followed: 1.0 (ratified) or rc7 (NexRv's). They differ in
    /// whether a trap's ecall/ebreak is in I-CNT and which SYNC codes reset the state [default:
    /// the sidecar's (rc7 when it has no spec key), else 1.0].
    #[cfg_attr(feature = "clap", arg(long, value_enum, value_name = "SPEC"))]
    pub spec: Option<Spec>,
    /// Link registers for calls and returns [default: the sidecar's, else auto].
    #[cfg_attr(
        feature = "clap",
        arg(long = "link-registers", value_enum, value_name = "RULE")
    )]
    pub link: Option<LinkChoice>,
    /// The message set: standard N-Trace, or SiFive's pre-1.0 dialect (RCODE 8/9 branch runs,
    /// In-Circuit Trace, DataAcquisition, XOR timestamps, simple-counting implicit return, any
    /// Ownership PROCESS) [default: the sidecar's, else standard].
    #[cfg_attr(feature = "clap", arg(long, value_enum, value_name = "DIALECT"))]
    pub dialect: Option<crate::codec::Dialect>,
    /// A known SiFive part: sets the SRC, timestamp and address widths, the return stack depth
    /// and the dialect (each option given explicitly wins).
    #[cfg_attr(feature = "clap", arg(long, value_enum, value_name = "PART"))]
    pub hw: Option<crate::sifive::Hw>,
    /// Address width of the encoder: addresses are sign-extended from this bit (SiFive's
    /// `addrbits`) [default: XLEN].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N",
          value_parser = clap::value_parser!(u8).range(2..=64)))]
    pub addr_bits: Option<u8>,
    /// Width of the encoder's timestamp counter, for its wrap (SiFive's `tsSize`) [default: 64].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N",
          value_parser = clap::value_parser!(u8).range(1..=64)))]
    pub tstamp_bits: Option<u8>,
    /// Depth of the encoder's return stack for implicit returns (9.2): the decoder's own drops
    /// its oldest entry beyond it [default: 65536].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub stack_depth: Option<u32>,
}

impl Given {
    /// These options as an N-Trace encoder's shared settings (a command that encodes N-Trace
    /// from a decoded trace, `rvtrace transcode`): SRC, MSB extension, all-jumps; a link rule is
    /// refused (the encoder follows the spec's x1/x5).
    pub fn apply_to_encoder(&self, cfg: &mut EncoderConfig) -> Result<(), ConfigError> {
        if self.link.is_some() {
            return Err(ConfigError::LinkRuleForEncoder);
        }
        cfg.codec.src_bits = self.src_bits.unwrap_or(cfg.codec.src_bits);
        cfg.src_id = self.src_id.unwrap_or(cfg.src_id);
        cfg.extend_addr_msb = self.extend_addr_msb.unwrap_or(cfg.extend_addr_msb);
        cfg.all_jumps = self.all_jumps.unwrap_or(cfg.all_jumps);
        cfg.spec = self.spec.unwrap_or(cfg.spec);
        Ok(())
    }
}

/// One setting: the given one if any (with a warning in `warnings` when the sidecar says
/// otherwise; `opt` names it), else the sidecar's, else `default`.
pub fn setting<T: PartialEq + std::fmt::Display>(
    opt: &str,
    given: Option<T>,
    sidecar: Option<T>,
    default: T,
    warnings: &mut Vec<String>,
) -> T {
    match (given, sidecar) {
        (Some(g), Some(m)) => {
            if g != m {
                warnings.push(format!(
                    "--{opt} {g} contradicts the sidecar ({opt} = {m}); using {g}"
                ));
            }
            g
        }
        (Some(g), None) => g,
        (None, Some(m)) => m,
        (None, None) => default,
    }
}

/// The decoder configuration for a trace of a hart with `xlen`: each setting as `given`, else
/// the sidecar's (`m`), else the default; with the link rule (`None`: to be found by trying).
/// The warnings (contradictions with the sidecar) come with it, and before a refusal (a usage
/// error: an SRC that does not fit its field).
#[allow(clippy::type_complexity)]
pub fn decoder_config(
    given: &Given,
    m: Option<&Meta>,
    xlen: Xlen,
) -> (
    Result<(DecoderConfig, Option<LinkRule>), ConfigError>,
    Vec<String>,
) {
    let mut w = Vec::new();
    if let Some(mx) = m.and_then(|m| m.xlen) {
        if mx != xlen {
            w.push(format!(
                "the sidecar says xlen = {}, the ELF is RV{}; decoding as RV{}",
                mx.bits(),
                xlen.bits(),
                xlen.bits()
            ));
        }
    }
    // A part's settings, where no option gives them.
    let mut given = *given;
    if let Some(hw) = given.hw {
        crate::sifive::fill(&mut given, &hw.given());
    }
    let given = &given;
    let mut cfg = DecoderConfig::new(rvtrace_isa::IsaConfig::new(xlen));
    cfg.codec.dialect = setting(
        "dialect",
        given.dialect,
        m.and_then(|m| m.dialect),
        crate::codec::Dialect::Standard,
        &mut w,
    );
    cfg.addr_bits = given.addr_bits;
    cfg.tstamp_bits = given.tstamp_bits;
    if let Some(d) = given.stack_depth {
        cfg.stack_depth = d as usize;
    }
    cfg.codec.src_bits = setting("src-bits", given.src_bits, m.map(|m| m.src_bits), 0, &mut w);
    let src_id = match (given.src_id, m.and_then(|m| m.src_id)) {
        (Some(g), Some(s)) => Some(setting("src-id", Some(g), Some(s), 0, &mut w)),
        (g, s) => g.or(s),
    };
    cfg.src = src_id.filter(|_| cfg.codec.src_bits > 0);
    if let Err(e) = cfg.validate() {
        return (Err(e), w);
    }
    cfg.extend_addr_msb = setting(
        "extend-addr-msb",
        given.extend_addr_msb,
        m.map(|m| m.extend_addr_msb),
        false,
        &mut w,
    );
    cfg.all_jumps = setting(
        "all-jumps",
        given.all_jumps,
        m.map(|m| m.all_jumps),
        false,
        &mut w,
    );
    cfg.spec = setting(
        "spec",
        given.spec,
        m.map(Meta::spec_or_rc7),
        Spec::V1_0,
        &mut w,
    );
    if let Some(max) = m.and_then(Meta::max_icnt) {
        cfg.max_icnt = max;
    }
    let side_link = m.and_then(|m| m.link);
    let given_link = given.link.map(LinkChoice::rule);
    if let (Some(Some(g)), Some(s)) = (given_link, side_link) {
        if g != s {
            w.push(format!(
                "--link-registers {} contradicts the sidecar (link-registers = {}); using {}",
                link_name(g),
                link_name(s),
                link_name(g)
            ));
        }
    }
    (Ok((cfg, given_link.unwrap_or(side_link))), w)
}

/// Decoding of `data` lost trace: is one of the settings a decoder must share with the encoder
/// (SRC width, MSB extension, all-jumps, the N-Trace text) the likely cause? Tries the others on
/// the first 64 KB and names the one that decodes without the losses; also says when the
/// messages do not parse with the SRC width assumed but do with another (SRC field garbage).
pub fn diagnose(image: &Image, cfg: DecoderConfig, data: &[u8]) -> Option<String> {
    let data = &data[..data.len().min(1 << 16)];
    // Losses apart from a cut end (the end of a prefix is not the trace's end, and may cut a
    // message).
    let losses = |c: DecoderConfig| {
        let mut n = 0u64;
        let mut sink = |e: &FlowElement| {
            if let FlowElement::Loss { reason, .. } = e {
                n += !matches!(reason, LossReason::EndLost(_)) as u64;
            }
        };
        decode(image, c, data, &mut sink);
        n
    };
    let now = losses(cfg);
    if now == 0 {
        return None;
    }
    let bad_messages = |src_bits: u8| {
        let c = CodecConfig::new(src_bits);
        Frames::new(data)
            .filter(|f| match f {
                Frame::Message(m) => parse(m, &c).is_err(),
                Frame::Error(_) => true,
            })
            .count()
    };
    let mut tries: Vec<(String, DecoderConfig)> = Vec::new();
    for b in 0..=MAX_SRC_BITS {
        if b != cfg.codec.src_bits {
            let c = DecoderConfig {
                codec: CodecConfig::new(b),
                src: None,
                ..cfg
            };
            tries.push((format!("--src-bits {b}"), c));
        }
    }
    let flag = |name: &str, on: bool| format!("--{name}{}", if on { "" } else { "=false" });
    tries.push((
        flag("extend-addr-msb", !cfg.extend_addr_msb),
        DecoderConfig {
            extend_addr_msb: !cfg.extend_addr_msb,
            ..cfg
        },
    ));
    tries.push((
        flag("all-jumps", !cfg.all_jumps),
        DecoderConfig {
            all_jumps: !cfg.all_jumps,
            ..cfg
        },
    ));
    // An rc7 stream read by the 1.0 decoder loses its call stack at SYNC 0/4/6.
    let other = match cfg.spec {
        Spec::V1_0 => Spec::Rc7,
        Spec::Rc7 => Spec::V1_0,
    };
    tries.push((
        format!("--spec {other}"),
        DecoderConfig { spec: other, ..cfg },
    ));
    let bad_now = bad_messages(cfg.codec.src_bits);
    for (opt, c) in tries {
        if losses(c) == 0 {
            let why = if c.codec.src_bits != cfg.codec.src_bits && bad_now > 0 {
                format!(
                    "{bad_now} messages do not parse with --src-bits {}, ",
                    cfg.codec.src_bits
                )
            } else {
                String::new()
            };
            return Some(format!(
                "{why}the trace decodes without loss with {opt}: the encoder's setting is the likely cause"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Fifo;

    /// Given settings win over the sidecar's, with a warning when they differ; the sidecar's
    /// fill in what is not given; an SRC that does not fit is refused after the warnings.
    #[test]
    fn decoder_settings_from_options_and_sidecar() {
        let mut cfg = EncoderConfig::new(Xlen::Rv32);
        cfg.codec.src_bits = 3;
        cfg.src_id = 5;
        cfg.all_jumps = true;
        let m = Meta::from_encoder(&cfg, Some(LinkRule::Spec));
        let (r, w) = decoder_config(&Given::default(), Some(&m), Xlen::Rv32);
        let (d, link) = r.unwrap();
        assert!(w.is_empty());
        assert_eq!((d.codec.src_bits, d.src, d.all_jumps), (3, Some(5), true));
        assert_eq!(link, Some(LinkRule::Spec));
        let given = Given {
            src_bits: Some(4),
            link: Some(LinkChoice::Auto),
            ..Given::default()
        };
        let (r, w) = decoder_config(&given, Some(&m), Xlen::Rv64);
        let (d, link) = r.unwrap();
        assert_eq!((d.codec.src_bits, d.src, link), (4, Some(5), None));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("xlen = 32") && w[1].starts_with("--src-bits 4 contradicts"));
        let given = Given {
            src_bits: Some(2),
            ..Given::default()
        };
        let (r, w) = decoder_config(&given, Some(&m), Xlen::Rv32);
        assert_eq!(
            r.unwrap_err().to_string(),
            "--src-id 5 does not fit in --src-bits 2"
        );
        assert_eq!(w.len(), 1);
    }

    /// The `spec` setting: the sidecar's; rc7 for a sidecar without the key (written before
    /// rvtrace knew 1.0); 1.0 without a sidecar; `--preset nexrv` writes rc7.
    #[test]
    fn spec_from_sidecar() {
        let spec_of = |given: Option<Spec>, m: Option<&Meta>| {
            let given = Given {
                spec: given,
                ..Given::default()
            };
            let (r, w) = decoder_config(&given, m, Xlen::Rv64);
            (r.unwrap().0.spec, w.len())
        };
        let cfg = EncoderConfig::new(Xlen::Rv64);
        let new = Meta::from_encoder(&cfg, Some(LinkRule::Spec));
        assert_eq!(spec_of(None, Some(&new)), (Spec::V1_0, 0));
        let nexrv = Meta::from_encoder(&cfg.nexrv(), Some(LinkRule::Spec));
        assert!(nexrv.to_text().lines().any(|l| l == "spec = rc7"));
        assert_eq!(spec_of(None, Some(&nexrv)), (Spec::Rc7, 0));
        let old = Meta::parse("protocol = ntrace\nxlen = 64\n").unwrap();
        assert_eq!(spec_of(None, Some(&old)), (Spec::Rc7, 0));
        assert_eq!(spec_of(Some(Spec::V1_0), Some(&old)), (Spec::V1_0, 1));
        assert_eq!(spec_of(None, None), (Spec::V1_0, 0));
        let bad = Meta::parse("protocol = ntrace\nspec = 1.1\n").unwrap_err();
        assert_eq!(bad.to_string(), "line 2: spec = 1.1: expected 1.0 or rc7");
    }

    /// The `dialect` setting: absent = standard; the sidecar's key; a given option wins (with a
    /// warning); `--hw` sets it and the part's widths where no option does.
    #[test]
    fn dialect_from_sidecar_and_hw() {
        use crate::codec::Dialect;
        let of = |given: Given, m: Option<&Meta>| {
            let (r, w) = decoder_config(&given, m, Xlen::Rv64);
            (r.unwrap().0, w.len())
        };
        let none = Meta::parse("protocol = ntrace\n").unwrap();
        assert_eq!(none.dialect, None);
        assert!(!none.to_text().contains("dialect"));
        assert_eq!(
            of(Given::default(), Some(&none)).0.codec.dialect,
            Dialect::Standard
        );
        let sifive = Meta::parse("protocol = ntrace\ndialect = sifive\n").unwrap();
        assert!(sifive.to_text().lines().any(|l| l == "dialect = sifive"));
        assert_eq!(
            of(Given::default(), Some(&sifive)).0.codec.dialect,
            Dialect::Sifive
        );
        let standard = Given {
            dialect: Some(Dialect::Standard),
            ..Given::default()
        };
        let (c, w) = of(standard, Some(&sifive));
        assert_eq!((c.codec.dialect, w), (Dialect::Standard, 1));
        let bad = Meta::parse("protocol = ntrace\ndialect = arm\n").unwrap_err();
        assert_eq!(
            bad.to_string(),
            "line 2: dialect = arm: expected standard or sifive"
        );
        let p550 = Given {
            hw: Some(crate::sifive::Hw::P550x4),
            src_bits: Some(0),
            ..Given::default()
        };
        let (c, _) = of(p550, None);
        assert_eq!(c.codec.dialect, Dialect::Sifive);
        assert_eq!(c.codec.src_bits, 0, "the option wins over the part");
        assert_eq!(
            (c.addr_bits, c.tstamp_bits, c.stack_depth),
            (Some(48), Some(40), 1023)
        );
    }

    #[test]
    fn sidecar_round_trip() {
        let mut cfg = EncoderConfig::new(Xlen::Rv32);
        cfg.codec.src_bits = 3;
        cfg.src_id = 5;
        cfg.extend_addr_msb = true;
        cfg.mode = Mode::Btm;
        cfg.fifo = Some(Fifo {
            bytes: 64,
            drain_per_record_256: 64,
        });
        cfg.call_stack = CallStack::Partial { depth: 4, bits: 16 };
        let m = Meta::from_encoder(&cfg, Some(LinkRule::Spec));
        let text = m.to_text();
        assert!(text.starts_with("# "));
        let first_key = text.lines().find(|l| !l.starts_with('#')).unwrap();
        assert_eq!(first_key, "protocol = ntrace");
        for line in [
            "xlen = 32",
            "src-bits = 3",
            "src-id = 5",
            "extend-addr-msb = true",
            "all-jumps = false",
            "spec = 1.0",
            "link-registers = spec",
            "fifo-bytes = 64",
            "icnt-bits = 22",
            "fifo-drain = 0.25",
            "mode = btm",
            "call-stack = 4",
            "call-stack-partial = 16",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}:\n{text}");
        }
        assert_eq!(Meta::parse(&text).unwrap(), m);
    }

    #[test]
    fn sidecar_errors() {
        let bad = |t: &str| Meta::parse(t).unwrap_err().to_string();
        assert!(bad("").contains("no protocol"));
        assert!(bad("src-bits = 3\n").contains("the first key must be protocol"));
        assert!(bad("protocol = tandem-trace-protocol-2018-11-20\n").contains("not N-Trace"));
        assert!(bad("protocol = ntrace\nsrc-bits = 13\n").contains("at most 12"));
        assert!(bad("protocol = ntrace\nsrc-bits = x\n").contains("not a number"));
        assert!(bad("protocol = ntrace\nall-jumps = yes\n").contains("true or false"));
        assert!(bad("protocol = ntrace\nsrc-bits = 2\nsrc-id = 4\n").contains("does not fit"));
        assert!(bad("protocol = ntrace\nnonsense\n").contains("line 2"));
        // Unknown keys are kept for people, not refused (a newer encoder may add some).
        let m = Meta::parse("# c\n\nprotocol = ntrace\nfuture-key = 1\n").unwrap();
        assert_eq!(m.info, [("future-key".to_string(), "1".to_string())]);
    }
}
