//! The front door for every trace reader (OpenCSD's decode tree, in Rust): it knows the
//! protocols, so that nothing after it has to.
//!
//! * [`kind`]: what a file is (one sniffer for every command), and a trace's protocol by its
//!   bytes.
//! * [`DecodeOptions`]: one options type per protocol (N-Trace [`rvtrace_ntrace::meta::Given`],
//!   E-Trace [`rvtrace_etrace::options::Options`]) that is at once the command line's arguments
//!   (the `clap` feature), the sidecar's content and, resolved, the decoder's configuration;
//!   the source field (SRC, srcID) is common to both.
//! * [`resolve`]: a trace's protocol (the options, else its sidecar, else its bytes) and its
//!   configuration (the options completed by the sidecar), with the warnings to show.
//! * [`Decoder`]: either protocol's decoder behind the one [`TraceDecoder`] shape.
//! * [`check`]: ingress records checked against the program and the ingress port's rules.
//! * [`ingress`]: the hart's ingress records (`rvtrace run --ingress`) read as a trace: flow
//!   elements from records, as a decoder gives them from packets.
//! * [`transcode`]: the reverse, flow elements back to ingress records, to re-encode a decoded
//!   trace with either protocol's encoder (`rvtrace transcode`).
//!
//! A trace to the instructions it executed, whatever its protocol:
//!
//! ```no_run
//! use rvtrace_decode::{resolve, DecodeOptions};
//! use rvtrace_flow::{decode_all, FlowElement};
//! let mut image = rvtrace_image::Image::new();
//! let xlen = image.load_file("prog.elf".as_ref())?.xlen;
//! let bytes = std::fs::read("t.trace")?;
//! let trace = resolve(Some("t.trace".as_ref()), &bytes, true, &DecodeOptions::default(), xlen)?;
//! let mut decoder = trace.decoder(&image);
//! decode_all(&mut decoder, &bytes, &mut |e: &FlowElement| {
//!     if let FlowElement::Range { start, count, .. } = e {
//!         println!("{count} instructions from {start:#x}");
//!     }
//! });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod check;
pub mod ingress;
pub mod kind;
mod options;
pub mod transcode;
mod units;

pub use options::{DecodeOptions, SrcOptions};
pub use units::UnitSink;

use rvtrace_etrace::config::{Framing, TraceConfig};
use rvtrace_flow::{DecodeStats, FlowSink, LossReason, TraceDecoder};
use rvtrace_image::Image;
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_ntrace::decoder::DecoderConfig;
use rvtrace_ntrace::insn::LinkRule;
use std::path::{Path, PathBuf};

/// A trace protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Protocol {
    /// N-Trace messages (MSEO/MDO bytes).
    Ntrace,
    /// E-Trace te_inst packets (encapsulated or te_inst_raw).
    Etrace,
}

impl Protocol {
    /// The protocol's name on the command line and in sidecars: `ntrace`, `etrace`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Ntrace => "ntrace",
            Protocol::Etrace => "etrace",
        }
    }

    /// "an N-Trace trace", "an E-Trace trace".
    pub fn a_trace(self) -> &'static str {
        match self {
            Protocol::Ntrace => "an N-Trace trace",
            Protocol::Etrace => "an E-Trace trace",
        }
    }

    /// The spec's name of the field that tells harts apart: `SRC` (N-Trace 6.2), `srcID`
    /// (E-Trace encapsulation).
    pub fn src_label(self) -> &'static str {
        match self {
            Protocol::Ntrace => "SRC",
            Protocol::Etrace => "srcID",
        }
    }

    /// A protocol by its name.
    pub fn from_name(name: &str) -> Option<Protocol> {
        match name {
            "ntrace" => Some(Protocol::Ntrace),
            "etrace" => Some(Protocol::Etrace),
            _ => None,
        }
    }
}

/// Why a trace cannot be decoded as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The options contradict each other or the trace (a usage error).
    Usage(String),
    /// The file is recognisably something else than a trace of the protocol it is read as.
    WrongKind {
        /// The file's name.
        name: String,
        /// What it is, and what to do with it.
        what: String,
        /// What it was read as.
        expected: Protocol,
    },
    /// Neither the options, the sidecar nor the bytes tell the trace's protocol.
    UnknownProtocol {
        /// The file's name.
        name: String,
    },
    /// A file the options or the sidecar name cannot be read or does not parse.
    File(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Usage(m) | Error::File(m) => f.write_str(m),
            Error::WrongKind {
                name,
                what,
                expected,
            } => write!(f, "{name}: this is {what}, not {}", expected.a_trace()),
            Error::UnknownProtocol { name } => write!(
                f,
                "{name}: cannot tell the trace's protocol (no sidecar {name}.meta, and its bytes are neither N-Trace messages nor te_inst_raw): give --protocol ntrace|etrace"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// A trace's decoder configuration, per protocol.
#[derive(Clone, Debug)]
pub enum Config {
    /// N-Trace: the decoder's configuration; `link` is `None` when the link-register rule is
    /// to be found by trying ([`Trace::find_link`]; until then the decoder uses the spec's).
    Ntrace {
        /// The configuration (its `link` the spec's until the rule is known).
        cfg: DecoderConfig,
        /// The link-register rule, `None`: auto.
        link: Option<LinkRule>,
        /// The sidecar read, if any.
        meta: Option<rvtrace_ntrace::meta::Meta>,
    },
    /// E-Trace: the configuration both ends agree on, and the traced hart's ISA.
    Etrace {
        /// The configuration.
        cfg: TraceConfig,
        /// The hart's ISA (address width).
        isa: IsaConfig,
        /// The sidecar read, if any.
        meta: Option<rvtrace_etrace::options::Options>,
    },
}

/// A trace resolved for decoding: its protocol, its configuration, and what to tell the user.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The protocol.
    pub protocol: Protocol,
    /// The configuration.
    pub config: Config,
    /// Warnings to show (options contradicting the sidecar, a sidecar that does not parse).
    pub warnings: Vec<String>,
}

/// The sidecar path of a trace: `TRACE.meta`.
pub fn sidecar_path(trace: &Path) -> PathBuf {
    rvtrace_ntrace::meta::sidecar_path(trace)
}

/// The address width the sidecar of `trace` (a trace of protocol `p`) records, if it exists and
/// records one.
pub fn sidecar_xlen(trace: &Path, p: Protocol) -> Option<Xlen> {
    let text = std::fs::read_to_string(sidecar_path(trace)).ok()?;
    match p {
        Protocol::Ntrace => rvtrace_ntrace::meta::Meta::parse(&text).ok()?.xlen,
        Protocol::Etrace => match rvtrace_etrace::options::Options::parse(&text).ok()?.xlen? {
            32 => Some(Xlen::Rv32),
            64 => Some(Xlen::Rv64),
            _ => None,
        },
    }
}

/// The protocol a sidecar names (its `protocol = ...` line), if it exists and names one.
fn sidecar_protocol(trace: &Path) -> Option<Protocol> {
    let text = std::fs::read_to_string(sidecar_path(trace)).ok()?;
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .and_then(|l| l.split_once('='))
        .filter(|(k, _)| k.trim() == "protocol")
        .and_then(|(_, v)| Protocol::from_name(v.trim()))
}

/// The trace's protocol: the options', else its sidecar's, else its bytes' ([`kind`]); and the
/// trace refused when its bytes are recognisably something else.
pub fn protocol(
    trace: Option<&Path>,
    head: &[u8],
    whole: bool,
    opts: &DecodeOptions,
) -> Result<Protocol, Error> {
    let name = || trace.map_or("stdin".to_string(), |p| p.display().to_string());
    let p = opts
        .protocol
        .or_else(|| trace.filter(|_| !opts.no_meta).and_then(sidecar_protocol))
        .or_else(|| kind::protocol_of(head, whole));
    let Some(p) = p else {
        if let Some(what) = kind::not_a_trace(head) {
            return Err(Error::WrongKind {
                name: name(),
                what,
                expected: Protocol::Etrace,
            });
        }
        return Err(Error::UnknownProtocol { name: name() });
    };
    if let Some(what) = kind::wrong_kind(head, p) {
        return Err(Error::WrongKind {
            name: name(),
            what,
            expected: p,
        });
    }
    Ok(p)
}

/// Resolve a trace for decoding: its protocol ([`protocol`]) and its configuration: the options
/// of `opts`, then (unless `opts.no_meta`, or `trace` is `None` for standard input) its sidecar,
/// then the defaults, for a hart of address width `xlen`. `head` is the trace's first bytes (64
/// KiB is plenty; `whole`: all of it): they tell the protocol when nothing else does, and an
/// E-Trace's framing.
pub fn resolve(
    trace: Option<&Path>,
    head: &[u8],
    whole: bool,
    opts: &DecodeOptions,
    xlen: Xlen,
) -> Result<Trace, Error> {
    let p = protocol(trace, head, whole, opts)?;
    resolve_as(p, trace, head, opts, xlen)
}

/// [`resolve`] for a trace known to be of protocol `p`.
pub fn resolve_as(
    p: Protocol,
    trace: Option<&Path>,
    head: &[u8],
    opts: &DecodeOptions,
    xlen: Xlen,
) -> Result<Trace, Error> {
    let side = trace.filter(|_| !opts.no_meta);
    let mut warnings = Vec::new();
    let config = match p {
        Protocol::Ntrace => {
            let meta = side.and_then(|t| read_ntrace_sidecar(t, &mut warnings));
            let mut given = opts.ntrace_given();
            if let Some(s) = opts.sifive_settings()? {
                rvtrace_ntrace::sifive::fill(&mut given, &s.given);
                warnings.extend(s.warnings);
                if let Some(a) = s.archsize.filter(|&a| a != xlen.bits()) {
                    warnings.push(format!(
                        "the SiFive settings say archsize = {a}, the ELF is RV{}; decoding as RV{}",
                        xlen.bits(),
                        xlen.bits()
                    ));
                }
            }
            if let Some(b) = given.src_bits.filter(|&b| b > 12) {
                return Err(Error::Usage(format!(
                    "--src-bits {b}: N-Trace's SRC field is at most 12 bits (trTeSrcBits)"
                )));
            }
            let (r, w) = rvtrace_ntrace::meta::decoder_config(&given, meta.as_ref(), xlen);
            let name = trace.map_or("stdin".to_string(), |t| t.display().to_string());
            warnings.extend(w.into_iter().map(|w| format!("{name}: {w}")));
            let (mut cfg, link) = r.map_err(|e| Error::Usage(e.to_string()))?;
            cfg.link = link.unwrap_or(LinkRule::Spec);
            Config::Ntrace { cfg, link, meta }
        }
        Protocol::Etrace => {
            let given = opts.etrace_given();
            given
                .check_framing()
                .map_err(|e| Error::Usage(e.to_string()))?;
            let (o, meta, w) = match side {
                Some(t) => given
                    .with_sidecar(t)
                    .map_err(|e| Error::File(e.to_string()))?,
                None => (given, None, Vec::new()),
            };
            warnings.extend(w);
            if let (Some(w), Some(t)) = (meta.as_ref().and_then(|m| m.xlen), trace) {
                if w != xlen.bits() as u8 && o.scf_width().is_none() {
                    warnings.push(format!(
                        "{}: the trace was encoded with {w}-bit addresses, the ELF is {}-bit",
                        t.display(),
                        xlen.bits()
                    ));
                }
            }
            let cfg = o
                .config(xlen.bits() as u8, Some(head))
                .map_err(|e| Error::Usage(e.to_string()))?;
            Config::Etrace {
                cfg,
                isa: IsaConfig::new(xlen),
                meta,
            }
        }
    };
    Ok(Trace {
        protocol: p,
        config,
        warnings,
    })
}

/// The N-Trace sidecar of `trace`, if there is one; one that does not parse is a warning, and
/// left out.
fn read_ntrace_sidecar(
    trace: &Path,
    warnings: &mut Vec<String>,
) -> Option<rvtrace_ntrace::meta::Meta> {
    let path = sidecar_path(trace);
    let text = std::fs::read_to_string(&path).ok()?;
    match rvtrace_ntrace::meta::Meta::parse(&text) {
        Ok(m) => Some(m),
        Err(e) => {
            warnings.push(format!("{}: {e}; not used", path.display()));
            None
        }
    }
}

impl Trace {
    /// The traced hart's ISA (its address width is the program's).
    pub fn isa(&self) -> IsaConfig {
        match &self.config {
            Config::Ntrace { cfg, .. } => cfg.isa,
            Config::Etrace { isa, .. } => *isa,
        }
    }

    /// The width of the source field (SRC, srcID) the trace is read with; 0: none.
    pub fn src_bits(&self) -> u8 {
        match &self.config {
            Config::Ntrace { cfg, .. } => cfg.codec.src_bits,
            Config::Etrace { cfg, .. } => match cfg.framing {
                Framing::Encap(e) => e.srcid_bits,
                Framing::Raw => 0,
            },
        }
    }

    /// The harts (sources) of the trace read from `input`, in increasing order (empty without a
    /// source field).
    pub fn sources<R: std::io::Read>(&self, input: R) -> std::io::Result<Vec<u16>> {
        match &self.config {
            Config::Ntrace { cfg, .. } => rvtrace_ntrace::scan::sources(input, cfg.codec.src_bits),
            Config::Etrace { cfg, .. } => rvtrace_etrace::scan::sources(input, &cfg.framing),
        }
    }

    /// For N-Trace with the link-register rule to be found (auto): try the rules on the trace
    /// (`open` gives it from its start each time) and keep the first that decodes it without
    /// loss, else the one with the fewest losses; returns the rule chosen when there was a
    /// search. Nothing to do otherwise.
    pub fn find_link<R: std::io::Read>(
        &mut self,
        image: &Image,
        open: impl FnMut() -> std::io::Result<R>,
    ) -> std::io::Result<Option<LinkRule>> {
        match &mut self.config {
            Config::Ntrace {
                cfg,
                link: link @ None,
                ..
            } => {
                let (found, _) = rvtrace_ntrace::decoder::find_link_rule(image, *cfg, open)?;
                cfg.link = found;
                *link = Some(found);
                Ok(Some(found))
            }
            _ => Ok(None),
        }
    }

    /// Whether the link-register rule is still to be found ([`Trace::find_link`]).
    pub fn link_unknown(&self) -> bool {
        matches!(self.config, Config::Ntrace { link: None, .. })
    }

    /// A decoder of the trace for the program in `image` (every source, or the one the options
    /// name).
    pub fn decoder<'a>(&self, image: &'a Image) -> Decoder<'a> {
        match &self.config {
            Config::Ntrace { cfg, .. } => {
                Decoder::Ntrace(rvtrace_ntrace::decoder::Decoder::new(image, *cfg))
            }
            Config::Etrace { cfg, isa, .. } => {
                Decoder::Etrace(rvtrace_etrace::decoder::Decoder::new(
                    image,
                    rvtrace_etrace::decoder::DecoderConfig::from_config(cfg, *isa),
                ))
            }
        }
    }

    /// The address spaces of a program made of scoped files (`rvtrace_image::space`), with the
    /// block tables this trace's decoder walks.
    pub fn spaces(
        &self,
        files: Vec<(rvtrace_image::space::Scope, Image)>,
    ) -> Result<rvtrace_image::space::Spaces, rvtrace_image::ImageError> {
        match &self.config {
            Config::Ntrace { cfg, .. } => {
                let cfg = *cfg;
                rvtrace_image::space::Spaces::new(files, move |im| {
                    rvtrace_ntrace::decoder::Decoder::code(im, &cfg)
                })
            }
            Config::Etrace { isa, .. } => {
                let isa = *isa;
                rvtrace_image::space::Spaces::new(files, move |im| {
                    rvtrace_etrace::code::Code::new(im, isa)
                })
            }
        }
    }

    /// [`Trace::decoder`] for a program of several address spaces ([`Trace::spaces`]): the
    /// decoder walks the space of the privilege and context the trace reports. `src`: the
    /// source (hart) to decode, else the one the options name.
    pub fn decoder_in<'a>(
        &self,
        spaces: &'a rvtrace_image::space::Spaces,
        src: Option<u16>,
    ) -> Decoder<'a> {
        match &self.config {
            Config::Ntrace { cfg, .. } => {
                let cfg = DecoderConfig {
                    src: src.or(cfg.src),
                    ..*cfg
                };
                Decoder::Ntrace(rvtrace_ntrace::decoder::Decoder::with_spaces(spaces, cfg))
            }
            Config::Etrace { cfg, isa, .. } => {
                let o = rvtrace_etrace::decoder::DecoderConfig::from_config(cfg, *isa);
                let o = rvtrace_etrace::decoder::DecoderConfig {
                    src: src.or(o.src),
                    ..o
                };
                Decoder::Etrace(rvtrace_etrace::decoder::Decoder::with_spaces(spaces, o))
            }
        }
    }

    /// Decoders of one hart each: [`Harts::decoder`] gives the decoder of source `src` (the
    /// others' messages or packets skipped), sharing one block table of `image`.
    pub fn harts<'a>(&self, image: &'a Image) -> Harts<'a> {
        match &self.config {
            Config::Ntrace { cfg, .. } => Harts::Ntrace {
                image,
                cfg: *cfg,
                code: rvtrace_ntrace::decoder::Decoder::code(image, cfg),
            },
            Config::Etrace { cfg, isa, .. } => {
                let o = rvtrace_etrace::decoder::DecoderConfig::from_config(cfg, *isa);
                Harts::Etrace {
                    image,
                    code: rvtrace_etrace::code::Code::new(image, o.isa),
                    o,
                }
            }
        }
    }

    /// Decode `bytes` (the whole trace) on `jobs` threads, cut into chunks of about
    /// `chunk_bytes` at synchronisation points ([`rvtrace_flow::chunk`]): each chunk's elements
    /// into a `part()`, given to `write` in order (`write` returns false to stop).
    pub fn decode_parallel_to<P: FlowSink + Send>(
        &self,
        image: &Image,
        bytes: &[u8],
        chunk_bytes: u64,
        jobs: usize,
        part: impl Fn() -> P + Sync,
        write: impl FnMut(P) -> bool,
    ) -> Result<DecodeStats, rvtrace_flow::chunk::ChunkError> {
        match &self.config {
            Config::Ntrace { cfg, .. } => rvtrace_ntrace::scan::decode_parallel_to(
                image,
                *cfg,
                bytes,
                chunk_bytes,
                jobs,
                part,
                write,
            )
            .map(|(st, _)| st.into()),
            Config::Etrace { cfg, isa, .. } => rvtrace_etrace::scan::decode_parallel_to(
                image,
                rvtrace_etrace::decoder::DecoderConfig::from_config(cfg, *isa),
                bytes,
                chunk_bytes,
                jobs,
                part,
                write,
            )
            .map(|(st, _, _)| st),
        }
    }

    /// Whether the trace carries time: N-Trace timestamps (the sidecar says the encoder wrote
    /// them), E-Trace *time* in synchronisation packets (`notime_p` = 0).
    pub fn has_time(&self) -> bool {
        match &self.config {
            Config::Ntrace { meta, .. } => meta
                .as_ref()
                .is_some_and(|m| m.info.iter().any(|(k, v)| k == "timestamps" && v == "true")),
            Config::Etrace { cfg, .. } => !cfg.params.notime_p,
        }
    }

    /// What the trace costs ([`rvtrace_flow::stats`]): decoded from `input` (the whole trace)
    /// with the program in `image`, every message or packet counted.
    pub fn stats_read<R: std::io::Read>(
        &self,
        image: &Image,
        input: R,
    ) -> std::io::Result<rvtrace_flow::stats::TraceStats> {
        match &self.config {
            Config::Ntrace { cfg, .. } => rvtrace_ntrace::stats::stats_read(image, *cfg, input),
            Config::Etrace { cfg, isa, .. } => {
                rvtrace_etrace::stats::stats_read(image, *isa, cfg, input)
            }
        }
    }

    /// [`Trace::stats_read`] for a program of several address spaces ([`Trace::spaces`]).
    pub fn stats_read_in<R: std::io::Read>(
        &self,
        spaces: &rvtrace_image::space::Spaces,
        input: R,
    ) -> std::io::Result<rvtrace_flow::stats::TraceStats> {
        match (self.decoder_in(spaces, None), &self.config) {
            (Decoder::Ntrace(d), Config::Ntrace { cfg, .. }) => {
                rvtrace_ntrace::stats::stats_read_with(d, *cfg, input)
            }
            (Decoder::Etrace(d), Config::Etrace { cfg, .. }) => {
                rvtrace_etrace::stats::stats_read_with(d, cfg, input)
            }
            _ => unreachable!("decoder_in makes the decoder of the trace's protocol"),
        }
    }

    /// What [`Trace::stats_read`]'s figures without framing count, and what is framing.
    pub fn payload_words(&self) -> &'static str {
        match self.protocol {
            Protocol::Ntrace => "MDO bits: 6 of every 8; MSEO bits and idle bytes are framing",
            Protocol::Etrace => "te_inst payloads; packet headers are framing",
        }
    }

    /// The warnings the start of the trace (`head`) gives about the options: an E-Trace
    /// support packet whose run-time options (`payload.adoc` sec:format33; the decoder follows
    /// them) differ from those the options or the sidecar gave, or that asks for a predictor or
    /// cache whose size is unknown. `name` names the trace.
    pub fn support_warnings(&self, name: &str, head: &[u8]) -> Vec<String> {
        use rvtrace_etrace::codec::{Item, PacketReader};
        use rvtrace_etrace::dump::option_names;
        let Config::Etrace { cfg, .. } = &self.config else {
            return Vec::new();
        };
        let mut w = Vec::new();
        let (encap, raw) = cfg.framing.reader();
        if let Some(sp) = PacketReader::new(head, encap, raw, cfg.params, cfg.options)
            .only_src(cfg.srcid)
            .take(16)
            .find_map(|(_, i)| match i {
                Item::Packet(rvtrace_etrace::TeInst::Support(sp)) => Some(sp),
                _ => None,
            })
        {
            let so = rvtrace_etrace::IOptions::from_field(sp.ioptions, cfg.params.options_layout);
            if so != cfg.options {
                w.push(format!(
                    "{name}: the trace's support packet gives the options {} (the command line or sidecar: {}); using the trace's",
                    option_names(so),
                    option_names(cfg.options)
                ));
            }
            if so.branch_prediction && cfg.params.bpred_size_p == 0 {
                w.push(format!("{name}: the trace uses branch prediction but the predictor size is unknown: give --branch-prediction N"));
            }
            if so.jump_target_cache && cfg.params.cache_size_p == 0 {
                w.push(format!("{name}: the trace uses a jump target cache but its size is unknown: give --jump-target-cache N"));
            }
        }
        w
    }

    /// The first synchronisation in `head` at an address where neither `image` nor any file of
    /// `spaces` (a program of several address spaces) has code: its byte offset and the address.
    fn missing_code(
        &self,
        image: &Image,
        spaces: Option<&rvtrace_image::space::Spaces>,
        head: &[u8],
    ) -> Option<(u64, u64)> {
        let points: Vec<(u64, u64)> = match &self.config {
            Config::Ntrace { cfg, .. } => rvtrace_ntrace::scan::syncs(head, cfg)
                .iter()
                .map(|p| (p.cut.offset, p.addr))
                .collect(),
            Config::Etrace { cfg, isa, .. } => {
                let o = rvtrace_etrace::decoder::DecoderConfig::from_config(cfg, *isa);
                rvtrace_etrace::scan::syncs(head, &o)
                    .iter()
                    .map(|p| (p.cut.offset, p.address))
                    .collect()
            }
        };
        let has_code = |a: u64| {
            image.read_u16(a).is_some()
                || spaces.is_some_and(|s| s.files().iter().any(|(_, f)| f.read_u16(a).is_some()))
        };
        points.into_iter().find(|&(_, a)| !has_code(a))
    }

    /// After a decode of `trace` (`None`: stdin; its first bytes `head`) that lost trace, a hint at
    /// the setting the trace does not carry that may be wrong (the decoder cannot tell a damaged
    /// trace from a wrong option): `first` is the first loss, `overflow` whether an encoder's
    /// queue overflowed (N-Trace 7.4: those messages were never written, nothing is wrong with
    /// the settings). `None` when there is nothing to suggest. `spaces`: the program's address
    /// spaces when its files are scoped (code in any of them is code).
    pub fn loss_hint(
        &self,
        image: &Image,
        spaces: Option<&rvtrace_image::space::Spaces>,
        trace: Option<&Path>,
        head: &[u8],
        first: &LossReason,
        overflow: bool,
    ) -> Option<Hint> {
        let name = trace.map_or("stdin".into(), |t| t.display().to_string());
        // The trace goes where no file gave code: that is the cause, not the settings.
        if let (LossReason::Mismatch(_), Some((offset, addr))) =
            (first, self.missing_code(image, spaces, head))
        {
            return Some(Hint::Warning(format!(
                "{name}: the trace synchronizes at {addr:#x} (byte {offset:#x}), where no --elf or --image file has code: give that code (--image FILE@ADDR for a raw binary or a memory dump; `rvtrace run --code-snapshot` writes a run's)"
            )));
        }
        match &self.config {
            Config::Ntrace { cfg, meta, .. } => {
                if overflow {
                    let n = meta.as_ref()?.fifo_bytes?;
                    return Some(Hint::Note(format!(
                        "{name}: the encoder's output queue (--fifo-bytes {n}, from the sidecar) overflowed: those messages were never written"
                    )));
                }
                if let Some(hint) = rvtrace_ntrace::meta::diagnose(image, *cfg, head) {
                    return Some(Hint::Warning(format!("{name}: {hint}")));
                }
                Some(Hint::Note(format!(
                    "{name}: no sidecar ({name}.meta): if the encoder used --src-bits/--src-id, --extend-addr-msb or --all-jumps, give the same options"
                )))
                .filter(|_| meta.is_none() && trace.is_some())
            }
            Config::Etrace { cfg, meta, isa } => {
                // A lost start or end is no sign of mismatched settings.
                if matches!(
                    first,
                    LossReason::StartLost(_) | LossReason::EndLost(_) | LossReason::Overflow(_)
                ) {
                    return None;
                }
                if let Some(hint) = etrace_framing(image, cfg, *isa, head) {
                    return Some(Hint::Warning(format!("{name}: {hint}")));
                }
                // Packets that do not parse: the framing; a path that does not fit: the walk's
                // settings.
                let cause = if matches!(first, LossReason::Malformed(_)) {
                    match cfg.framing {
                        Framing::Raw => "--format (te_inst_raw was assumed)",
                        Framing::Encap(_) => "--format and the encapsulation widths --src-bits, --timestamp-bytes, --type-bits, or --timestamps",
                    }
                } else {
                    "--branch-prediction, --jump-target-cache, --implicit-return/--return-stack or --preset (their sizes are not in the trace)"
                };
                Some(Hint::Note(if meta.is_some() {
                    format!("the trace's sidecar settings were used: the trace itself is damaged, or the sidecar belongs to another trace (likely settings: {cause})")
                } else {
                    format!("no sidecar (TRACE.meta) was found: if the trace was encoded with other settings, the likely cause is {cause}")
                }))
            }
        }
    }
}

/// Losses an E-Trace decode of `head` (the start of a trace) with `cfg` reports before its end
/// (the head may end inside a packet), and whether it decoded any instruction (a framing under
/// which no packet is `te_inst` loses nothing before the end either).
fn etrace_losses(image: &Image, cfg: &TraceConfig, isa: IsaConfig, head: &[u8]) -> (u64, bool) {
    let o = rvtrace_etrace::decoder::DecoderConfig::from_config(cfg, isa);
    let mut dec = rvtrace_etrace::decoder::Decoder::new(image, o);
    let (mut n, mut ranges) = (0, false);
    rvtrace_flow::decode_all(
        &mut dec,
        head,
        &mut |e: &rvtrace_flow::FlowElement| match e {
            rvtrace_flow::FlowElement::Loss { reason, .. } => {
                n += !matches!(reason, LossReason::EndLost(_)) as u64;
            }
            rvtrace_flow::FlowElement::Range { .. } => ranges = true,
            _ => {}
        },
    );
    (n, ranges)
}

/// The framing an E-Trace stream does not carry (etrace-encap's srcID, timestamp and type
/// widths, or te_inst_raw), tried one setting at a time on `head` when `cfg`'s loses trace
/// there: the first that decodes it without loss, named as its option.
fn etrace_framing(image: &Image, cfg: &TraceConfig, isa: IsaConfig, head: &[u8]) -> Option<String> {
    use rvtrace_etrace::codec::EncapConfig;
    if etrace_losses(image, cfg, isa, head).0 == 0 {
        return None;
    }
    let mut tries: Vec<(String, Framing)> = Vec::new();
    match cfg.framing {
        Framing::Raw => tries.push(("--format encap".into(), Framing::Encap(EncapConfig::PLAIN))),
        Framing::Encap(e) => {
            tries.push(("--format raw".into(), Framing::Raw));
            for b in (0..=16).filter(|&b| b != e.srcid_bits) {
                let f = EncapConfig { srcid_bits: b, ..e };
                tries.push((format!("--src-bits {b}"), Framing::Encap(f)));
            }
            for t in (0..=8).filter(|&t| t != e.timestamp_bytes) {
                let f = EncapConfig {
                    timestamp_bytes: t,
                    ..e
                };
                tries.push((format!("--timestamp-bytes {t}"), Framing::Encap(f)));
            }
            for y in (0..=8).filter(|&y| y != e.type_bits) {
                let f = EncapConfig { type_bits: y, ..e };
                tries.push((format!("--type-bits {y}"), Framing::Encap(f)));
            }
        }
    }
    tries.into_iter().find_map(|(opt, framing)| {
        let c = TraceConfig { framing, ..*cfg };
        (etrace_losses(image, &c, isa, head) == (0, true)).then(|| {
            format!("the trace decodes without loss with {opt}: it was probably encoded with it (the framing is not in the trace)")
        })
    })
}

/// A hint after a decode that lost trace ([`Trace::loss_hint`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hint {
    /// A likely cause found by trying: a warning.
    Warning(String),
    /// A possible cause: a note.
    Note(String),
}

/// The program files an E-Trace's options name (the `object-files` of its `--ucf`, given or
/// the sidecar's), for a decode given no `--elf`; empty for N-Trace or without `--ucf`.
pub fn ucf_programs(trace: Option<&Path>, opts: &DecodeOptions) -> Result<Vec<PathBuf>, Error> {
    let given = opts.etrace_given();
    let o = match trace.filter(|_| !opts.no_meta) {
        Some(t) => {
            given
                .with_sidecar(t)
                .map_err(|e| Error::File(e.to_string()))?
                .0
        }
        None => given,
    };
    o.ucf_programs().map_err(|e| Error::File(e.to_string()))
}

/// The decoders of the harts of one trace ([`Trace::harts`]).
pub enum Harts<'a> {
    /// N-Trace: one configuration, one block table.
    Ntrace {
        /// The program.
        image: &'a Image,
        /// The configuration (every SRC).
        cfg: DecoderConfig,
        /// The block table, shared.
        code: rvtrace_image::code::Code,
    },
    /// E-Trace: one configuration, one block table.
    Etrace {
        /// The program.
        image: &'a Image,
        /// The decoder's options (every srcID).
        o: rvtrace_etrace::decoder::DecoderConfig,
        /// The block table, shared.
        code: rvtrace_etrace::code::Code,
    },
}

impl<'a> Harts<'a> {
    /// The decoder of source `src`.
    pub fn decoder(&self, src: u16) -> Decoder<'a> {
        match self {
            Harts::Ntrace { image, cfg, code } => {
                Decoder::Ntrace(rvtrace_ntrace::decoder::Decoder::with_code(
                    image,
                    DecoderConfig {
                        src: Some(src),
                        ..*cfg
                    },
                    code.clone(),
                ))
            }
            Harts::Etrace { image, o, code } => {
                Decoder::Etrace(rvtrace_etrace::decoder::Decoder::with_code(
                    image,
                    rvtrace_etrace::decoder::DecoderConfig {
                        src: Some(src),
                        ..*o
                    },
                    code.clone(),
                ))
            }
        }
    }
}

/// Either protocol's decoder, behind the one decoder shape.
pub enum Decoder<'a> {
    /// An N-Trace decoder.
    Ntrace(rvtrace_ntrace::decoder::Decoder<'a>),
    /// An E-Trace decoder.
    Etrace(rvtrace_etrace::decoder::Decoder<'a>),
}

/// The protocol's own counts of a [`Decoder`].
#[derive(Clone, Copy, Debug)]
pub enum ProtocolStats {
    /// N-Trace's.
    Ntrace(rvtrace_ntrace::decoder::DecodeStats),
    /// E-Trace's.
    Etrace(rvtrace_etrace::decoder::DecodeStats),
}

impl TraceDecoder for Decoder<'_> {
    type ProtocolStats = ProtocolStats;

    fn push<S: FlowSink + ?Sized>(&mut self, bytes: &[u8], sink: &mut S) {
        match self {
            Decoder::Ntrace(d) => TraceDecoder::push(d, bytes, sink),
            Decoder::Etrace(d) => TraceDecoder::push(d, bytes, sink),
        }
    }

    fn finish<S: FlowSink + ?Sized>(&mut self, sink: &mut S) -> DecodeStats {
        match self {
            Decoder::Ntrace(d) => TraceDecoder::finish(d, sink),
            Decoder::Etrace(d) => TraceDecoder::finish(d, sink),
        }
    }

    fn stats(&self) -> DecodeStats {
        match self {
            Decoder::Ntrace(d) => TraceDecoder::stats(d),
            Decoder::Etrace(d) => TraceDecoder::stats(d),
        }
    }

    fn protocol_stats(&self) -> ProtocolStats {
        match self {
            Decoder::Ntrace(d) => ProtocolStats::Ntrace(d.protocol_stats()),
            Decoder::Etrace(d) => ProtocolStats::Etrace(d.protocol_stats()),
        }
    }
}
