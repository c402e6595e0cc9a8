//! The E-Trace options: one type that is the command line's arguments (with the `clap`
//! feature), the sidecar's content ([`crate::meta`]) and, with the address width and the trace's
//! first bytes, the decoder's and encoder's configuration ([`Options::config`]).
//!
//! E-Trace leaves the negotiation of the parameters to the implementation (`discovery.adoc`):
//! what a trace does not carry is given here, by the user or by the sidecar `encode` wrote.

use crate::codec::{looks_like_te_inst_raw, EncapConfig};
use crate::config::{
    check_framing, parse_ucf, ConfigError, ConfigInputs, Framing, Ini, Preset, TraceConfig,
};
use std::path::{Path, PathBuf};

/// The possible values of `--preset`, with their help.
#[cfg(feature = "clap")]
fn preset_values() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    clap::builder::PossibleValuesParser::new([
        PossibleValue::new("rvtrace").help("rvtrace's encoder (E-Trace v2.0 rules)"),
        PossibleValue::new("reference")
            .help("The reference flow's encoder_model.py, quirks included"),
    ])
}

/// The possible values of `--options-layout`, with their help.
#[cfg(feature = "clap")]
fn layout_values() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    clap::builder::PossibleValuesParser::new([
        PossibleValue::new("rvtrace").help(
            "rvtrace's and the reference flow's: encoder_mode 1 bit, ioptions 6 bits, doptions 4 bits",
        ),
        PossibleValue::new("pulp").help(
            "The PULP platform's rv_tracer: encoder_mode 1 bit, ioptions 7 bits (with a delta-address bit), no doptions",
        ),
    ])
}

/// The possible values of `--format`, with their help.
#[cfg(feature = "clap")]
fn format_values() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    clap::builder::PossibleValuesParser::new([
        PossibleValue::new("raw")
            .help("The reference flow's te_inst_raw (1-byte header, message type 2 in the flow bits)"),
        PossibleValue::new("encap").help(
            "RISC-V trace encapsulation (etrace-encap), see --src-bits, --timestamp-bytes, --type-bits",
        ),
        PossibleValue::new("esp32").help(
            "The ESP32-C6 trace unit's: a 3-byte header (length with the header, 16-bit index), no srcID, timestamp or type (as riscv-etrace reads it)",
        ),
        PossibleValue::new("smi").help(
            "E-Trace 1.x Siemens Messaging Infrastructure: te_inst_raw's header with a --src-bits index and 2-byte time tags",
        ),
    ])
}

/// What encoder and decoder of an E-Trace must agree on that the trace does not carry, as the
/// user gives it (`None`/`false`: not given) or a sidecar records it. The field docs are the
/// command line's help; the sidecar keys are the option names (`srcid-bits` for `--src-bits`,
/// the encapsulation spec's name, so that older sidecars still read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Options {
    /// Encoder behaviour and default parameters: rvtrace's, or the reference flow's
    /// (byte-identical te_inst_raw). Default: reference when reading a file recognised as
    /// te_inst_raw (no --format given), else rvtrace.
    #[cfg_attr(feature = "clap", arg(long, value_name = "PRESET", value_parser = preset_values()))]
    pub preset: Option<String>,
    /// How support packets lay out the run-time options (*ioptions*, implementation defined in
    /// `payload.adoc` format 3 subformat 3): rvtrace's (the reference flow's) or the PULP
    /// rv_tracer's. Default: rvtrace.
    #[cfg_attr(feature = "clap", arg(long, value_name = "LAYOUT", value_parser = layout_values()))]
    pub options_layout: Option<String>,
    /// Reference-flow static configuration file (.scf): the discovery parameters.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub scf: Option<PathBuf>,
    /// Reference-flow user configuration file (.ucf): the run-time options.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub ucf: Option<PathBuf>,
    /// Full address mode: absolute instead of differential addresses.
    #[cfg_attr(feature = "clap", arg(long))]
    pub full_address: bool,
    /// Implicit exception mode: omit the trap handler address.
    #[cfg_attr(feature = "clap", arg(long))]
    pub implicit_exception: bool,
    /// Treat sequentially inferable jumps as inferable.
    #[cfg_attr(feature = "clap", arg(long))]
    pub sijump: bool,
    /// Implicit return mode (a call counter unless --return-stack is given).
    #[cfg_attr(feature = "clap", arg(long))]
    pub implicit_return: bool,
    /// Implicit return with an N-entry return address stack (N a power of two).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub return_stack: Option<u32>,
    /// Branch prediction with an N-entry predictor (format 0 subformat 0).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub branch_prediction: Option<u32>,
    /// Jump target cache with N entries (format 0 subformat 1).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub jump_target_cache: Option<u32>,
    /// Report time in synchronisation packets.
    #[cfg_attr(feature = "clap", arg(long))]
    pub timestamps: bool,
    /// File framing (default: te_inst_raw with --preset reference, else encap; encap when an
    /// encapsulation width is given; when reading, te_inst_raw is also recognised by its header
    /// bytes).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FORMAT", value_parser = format_values()))]
    pub format: Option<String>,
    /// Encapsulation: timestamp bytes, present when a header's extend bit is set (default 0;
    /// implies --format encap; at most 8).
    #[cfg_attr(feature = "clap", arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u8).range(0..=8)))]
    pub timestamp_bytes: Option<u8>,
    /// Encapsulation: width of the payload type field (default 0; implies --format encap; at
    /// most 8).
    #[cfg_attr(feature = "clap", arg(long, value_name = "BITS", value_parser = clap::value_parser!(u8).range(0..=8)))]
    pub type_bits: Option<u8>,
    /// Encapsulation: the srcID field's width in bits, 0 to 16 (`encapsulation.adoc`; implies
    /// encapsulation). On the command line it is the protocols' common `--src-bits`.
    #[cfg_attr(feature = "clap", arg(skip))]
    pub srcid_bits: Option<u8>,
    /// The encapsulation's srcID: the encoder writes it into every packet, the decoder reads only
    /// the packets of it (`None`: 0 / every packet). The common `--src-id`; not in the sidecar.
    #[cfg_attr(feature = "clap", arg(skip))]
    pub srcid: Option<u16>,
    /// The address width (`iaddress_width_p`): 32 or 64 (a sidecar's record; commands take it
    /// from the program).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub xlen: Option<u8>,
    /// The ingress itype width, 3 or 4 (a sidecar's record; the encoder's `--itype-width`).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub itype_width: Option<u8>,
    /// The encoder's resynchronisation period in packets (`--sync-period`; not in the sidecar:
    /// the decoder does not need it).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub resync: Option<u64>,
}

/// The text of the configuration file `path`.
fn read_file(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|error| ConfigError::Io {
        path: path.to_path_buf(),
        error,
    })
}

impl Options {
    /// The encapsulation's constants these options give (unset widths are 0).
    fn encap(&self) -> EncapConfig {
        EncapConfig {
            srcid_bits: self.srcid_bits.unwrap_or(0),
            timestamp_bytes: self.timestamp_bytes.unwrap_or(0),
            type_bits: self.type_bits.unwrap_or(0),
            te_inst_type: 0,
            header: crate::codec::Header::Encap,
        }
    }

    /// Whether an encapsulation width was given.
    fn encap_given(&self) -> bool {
        self.srcid_bits.is_some() || self.timestamp_bytes.is_some() || self.type_bits.is_some()
    }

    /// The framing asked for is consistent: encapsulation widths imply `--format encap`, and
    /// with `--format raw` they are a contradiction (te_inst_raw has no srcID, timestamp or
    /// type).
    pub fn check_framing(&self) -> Result<(), ConfigError> {
        if self.format.as_deref() == Some("smi")
            && (self.timestamp_bytes.is_some() || self.type_bits.is_some())
        {
            return Err(ConfigError::SmiWidths);
        }
        if self.format.as_deref() == Some("esp32") && self.encap_given() {
            return Err(ConfigError::Esp32Widths);
        }
        check_framing(self.format.as_deref() == Some("raw"), self.encap_given())
    }

    /// These settings (given on a command line) completed by a sidecar's (`side`, called
    /// `side_name` in the warnings): a setting given wins, with a warning when it contradicts
    /// the sidecar; one not given is the sidecar's; a mode the sidecar turns on is on (warned
    /// when only the command line turns it on: the trace was encoded without it). The address
    /// and itype widths stay as given.
    pub fn completed_by(&self, side: &Options, side_name: &str) -> (Options, Vec<String>) {
        let mut a = self.clone();
        let mut w = Vec::new();
        fn pick<T: Clone + PartialEq + std::fmt::Display>(
            cli: &mut Option<T>,
            meta: &Option<T>,
            name: &str,
            side: &str,
            w: &mut Vec<String>,
        ) {
            match (cli.as_ref(), meta) {
                (Some(c), Some(m)) if c != m => {
                    w.push(format!(
                        "{name} {c} contradicts {side} ({name} {m}); using {c}"
                    ));
                }
                (None, Some(m)) => *cli = Some(m.clone()),
                _ => {}
            }
        }
        let shown = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        pick(&mut a.preset, &side.preset, "--preset", side_name, &mut w);
        pick(&mut a.format, &side.format, "--format", side_name, &mut w);
        pick(
            &mut a.options_layout,
            &side.options_layout,
            "--options-layout",
            side_name,
            &mut w,
        );
        pick(
            &mut a.srcid_bits,
            &side.srcid_bits,
            "--src-bits",
            side_name,
            &mut w,
        );
        pick(
            &mut a.timestamp_bytes,
            &side.timestamp_bytes,
            "--timestamp-bytes",
            side_name,
            &mut w,
        );
        pick(
            &mut a.type_bits,
            &side.type_bits,
            "--type-bits",
            side_name,
            &mut w,
        );
        pick(
            &mut a.return_stack,
            &side.return_stack,
            "--return-stack",
            side_name,
            &mut w,
        );
        pick(
            &mut a.branch_prediction,
            &side.branch_prediction,
            "--branch-prediction",
            side_name,
            &mut w,
        );
        pick(
            &mut a.jump_target_cache,
            &side.jump_target_cache,
            "--jump-target-cache",
            side_name,
            &mut w,
        );
        for (cli, meta, name) in [
            (&mut a.scf, &side.scf, "--scf"),
            (&mut a.ucf, &side.ucf, "--ucf"),
        ] {
            let mut c = shown(cli);
            pick(&mut c, &shown(meta), name, side_name, &mut w);
            if cli.is_none() {
                *cli = meta.clone();
            }
        }
        for (cli, meta, name) in [
            (&mut a.full_address, side.full_address, "--full-address"),
            (
                &mut a.implicit_exception,
                side.implicit_exception,
                "--implicit-exception",
            ),
            (&mut a.sijump, side.sijump, "--sijump"),
            (
                &mut a.implicit_return,
                side.implicit_return,
                "--implicit-return",
            ),
            (&mut a.timestamps, side.timestamps, "--timestamps"),
        ] {
            if *cli && !meta {
                w.push(format!(
                    "{name} contradicts {side_name} (the trace was encoded without it); using {name}"
                ));
            }
            *cli |= meta;
        }
        (a, w)
    }

    /// The configuration for address width `xlen_bits` (32 or 64; a `--scf` giving
    /// `iaddress_width_p` wins). `data`, the trace's first bytes when reading one, lets a
    /// `te_inst_raw` stream be recognised when no framing is given (the reference flow's preset
    /// is then the default, as its tools write te_inst_raw); the `.scf`/`.ucf` files are read
    /// here.
    pub fn config(&self, xlen_bits: u8, data: Option<&[u8]>) -> Result<TraceConfig, ConfigError> {
        self.check_framing()?;
        let read = |p: &Option<PathBuf>| p.as_deref().map(read_file).transpose();
        let mut detected_raw = false;
        let framing = match self.format.as_deref() {
            Some("raw") => Some(Framing::Raw),
            Some("esp32") => Some(Framing::Encap(EncapConfig::ESP32)),
            Some("smi") => Some(Framing::Encap(EncapConfig::smi(
                self.srcid_bits.unwrap_or(0),
            ))),
            Some(_) => Some(Framing::Encap(self.encap())),
            None if self.encap_given() => Some(Framing::Encap(self.encap())),
            None => match data {
                Some(d) if looks_like_te_inst_raw(d) => {
                    detected_raw = true;
                    Some(Framing::Raw)
                }
                Some(_) => Some(Framing::Encap(self.encap())),
                None => None,
            },
        };
        let inputs = ConfigInputs {
            preset: match self.preset.as_deref() {
                Some("reference") => Preset::Reference,
                Some(_) => Preset::Rvtrace,
                None if detected_raw => Preset::Reference,
                None => Preset::Rvtrace,
            },
            options_layout: match self.options_layout.as_deref() {
                Some(name) => crate::OptionsLayout::from_name(name)
                    .ok_or_else(|| ConfigError::OptionsLayout(name.into()))?,
                None => crate::OptionsLayout::Rvtrace,
            },
            xlen_bits: self.scf_width().unwrap_or(xlen_bits),
            scf: read(&self.scf)?,
            ucf: read(&self.ucf)?,
            full_address: self.full_address,
            implicit_exception: self.implicit_exception,
            sijump: self.sijump,
            implicit_return: self.implicit_return,
            return_stack: self.return_stack,
            branch_prediction: self.branch_prediction,
            jump_target_cache: self.jump_target_cache,
            resync: self.resync,
            timestamps: self.timestamps,
            itype_width: self.itype_width,
            framing,
        };
        TraceConfig::build(&inputs).and_then(|c| c.with_srcid(self.srcid))
    }

    /// The address width the `--scf` file gives, if any (so that it need not be repeated).
    pub fn scf_width(&self) -> Option<u8> {
        let text = std::fs::read_to_string(self.scf.as_ref()?).ok()?;
        let ini = Ini::parse(&text).ok()?;
        ini.get_any("iaddress_width_p")?.parse().ok()
    }

    /// The program files the `--ucf` file names (`object-files`, relative to its directory), as
    /// the reference flow's decoder configuration does; empty without `--ucf`.
    pub fn ucf_programs(&self) -> Result<Vec<PathBuf>, ConfigError> {
        let Some(ucf) = &self.ucf else {
            return Ok(Vec::new());
        };
        let u = parse_ucf(&read_file(ucf)?).map_err(|e| ConfigError::File {
            path: ucf.clone(),
            error: Box::new(e),
        })?;
        let dir = ucf.parent().unwrap_or(Path::new("."));
        Ok(u.object_files.iter().map(|f| dir.join(f)).collect())
    }

    /// The sidecar an encoder writes for these options and the configuration `cfg` it used:
    /// the framing and widths as used, the configuration files as absolute paths.
    pub fn for_sidecar(&self, cfg: &TraceConfig) -> Options {
        let abs = |p: &Option<PathBuf>| {
            p.as_ref()
                .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        };
        let (format, e) = match cfg.framing {
            Framing::Raw => ("raw", None),
            Framing::Encap(e) if e.header == crate::codec::Header::Smi => ("smi", Some(e)),
            Framing::Encap(e) if e.header == crate::codec::Header::Esp32 => ("esp32", None),
            Framing::Encap(e) => ("encap", Some(e)),
        };
        // SMI's timestamp width and type are fixed: only the index width is a setting.
        let encap_only = e.filter(|e| e.header == crate::codec::Header::Encap);
        Options {
            preset: Some(
                match cfg.preset {
                    Preset::Rvtrace => "rvtrace",
                    Preset::Reference => "reference",
                }
                .into(),
            ),
            format: Some(format.into()),
            options_layout: Some(cfg.params.options_layout.name().into()),
            srcid_bits: e.map(|e| e.srcid_bits),
            timestamp_bytes: encap_only.map(|e| e.timestamp_bytes),
            type_bits: encap_only.map(|e| e.type_bits),
            xlen: Some(cfg.params.iaddress_width_p),
            itype_width: self.itype_width,
            scf: abs(&self.scf),
            ucf: abs(&self.ucf),
            srcid: None,
            resync: None,
            ..self.clone()
        }
    }
}
