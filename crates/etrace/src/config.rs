//! The E-Trace reference flow's configuration files (`referenceFlow/tests/config_files`):
//! the static configuration (`.scf`: hardware parameters, section `[Required Attributes]` etc.)
//! and the user configuration (`.ucf`: run-time options, section `[codec]`).
//!
//! Both are INI files as Python's `configparser` reads them: `[section]` headings, `key=value` or
//! `key: value` lines, whole-line comments starting with `#` or `;`, keys case-insensitive.

use crate::codec::CodecError;
use crate::params::{IOptions, Params};
use std::fmt;
use std::path::PathBuf;

/// Why a configuration cannot be read or built (the messages name the offending line, key or
/// option).
#[derive(Debug)]
pub enum ConfigError {
    /// An INI line starting with `[` that is not a `[section]` heading.
    Heading {
        /// The line (counted from 1).
        line: usize,
        /// Its text.
        text: String,
    },
    /// An INI line that is neither a heading, a comment nor `key=value`.
    Syntax {
        /// The line (counted from 1).
        line: usize,
        /// Its text.
        text: String,
    },
    /// A value that should be an integer.
    NotInteger {
        /// The key.
        key: String,
        /// The value given.
        value: String,
    },
    /// A value that should be a boolean.
    NotBoolean {
        /// The key.
        key: String,
        /// The value given.
        value: String,
    },
    /// A value too large for its setting.
    TooLarge {
        /// The key.
        key: String,
        /// The value given.
        value: String,
    },
    /// Parameters the codec cannot represent.
    Params(CodecError),
    /// In the static configuration file (`.scf`).
    Scf(Box<ConfigError>),
    /// In the user configuration file (`.ucf`).
    Ucf(Box<ConfigError>),
    /// Encapsulation widths with `te_inst_raw` framing ([`check_framing`]).
    RawWithEncapWidths,
    /// `--timestamp-bytes` or `--type-bits` with `--format smi` (2-byte time tags, no type).
    SmiWidths,
    /// `--src-bits`, `--timestamp-bytes` or `--type-bits` with `--format esp32` (its header
    /// has none of them).
    Esp32Widths,
    /// An address width other than 32 or 64.
    AddressWidth(u8),
    /// A number of entries that is not a power of two from 2 to 65536.
    Entries {
        /// The option that gives it.
        option: &'static str,
        /// The number given.
        n: u32,
    },
    /// Branch prediction without predictor entries.
    NoPredictor,
    /// The jump target cache without entries.
    NoCacheEntries,
    /// A resynchronisation period of 0 packets.
    ZeroResync,
    /// An `--options-layout` other than `rvtrace` or `pulp`.
    OptionsLayout(String),
    /// A *srcID* that does not fit in the encapsulation's *srcID* field.
    SrcidTooWide {
        /// The *srcID*.
        srcid: u16,
        /// The field's width.
        bits: u32,
    },
    /// A file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// A file's text is wrong.
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        error: Box<ConfigError>,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Heading { line, text } => {
                write!(f, "line {line}: bad section heading {text:?}")
            }
            ConfigError::Syntax { line, text } => {
                write!(f, "line {line}: expected key=value, got {text:?}")
            }
            ConfigError::NotInteger { key, value } => write!(f, "{key}={value:?}: not an integer"),
            ConfigError::NotBoolean { key, value } => write!(f, "{key}={value:?}: not a boolean"),
            ConfigError::TooLarge { key, value } => write!(f, "{key}={value}: too large"),
            ConfigError::Params(e) => write!(f, "{e}"),
            ConfigError::Scf(e) => write!(f, "scf: {e}"),
            ConfigError::Ucf(e) => write!(f, "ucf: {e}"),
            ConfigError::RawWithEncapWidths => f.write_str("--srcid-bits, --timestamp-bytes and --type-bits apply to --format encap, not raw (te_inst_raw has a 1-byte header only)"),
            ConfigError::SmiWidths => f.write_str("--timestamp-bytes and --type-bits do not apply to --format smi (its time tags are 2 bytes, the flow bits say the type; --src-bits is the index width)"),
            ConfigError::Esp32Widths => f.write_str("--src-bits, --timestamp-bytes and --type-bits do not apply to --format esp32 (its 3-byte header has a length and an index only)"),
            ConfigError::AddressWidth(w) => write!(f, "address width {w} (must be 32 or 64)"),
            ConfigError::Entries { option, n } => write!(
                f,
                "{option} {n}: the number of entries must be a power of two from 2 to 65536"
            ),
            ConfigError::NoPredictor => {
                f.write_str("branch prediction needs a predictor (--branch-prediction N)")
            }
            ConfigError::NoCacheEntries => {
                f.write_str("the jump target cache needs entries (--jump-target-cache N)")
            }
            ConfigError::ZeroResync => {
                f.write_str("--resync 0: the period must be at least 1 packet")
            }
            ConfigError::OptionsLayout(name) => write!(
                f,
                "--options-layout {name:?}: the layouts are rvtrace and pulp"
            ),
            ConfigError::SrcidTooWide { srcid, bits } => write!(
                f,
                "srcID {srcid} does not fit in the encapsulation's srcID field ({bits} bits: --srcid-bits)"
            ),
            ConfigError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            ConfigError::File { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Params(e) => Some(e),
            ConfigError::Scf(e) | ConfigError::Ucf(e) | ConfigError::File { error: e, .. } => {
                Some(e.as_ref())
            }
            ConfigError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<CodecError> for ConfigError {
    fn from(e: CodecError) -> Self {
        ConfigError::Params(e)
    }
}

/// A parsed INI file: (section, key, value) in file order; keys lower-cased.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ini {
    entries: Vec<(String, String, String)>,
}

impl Ini {
    /// Parse INI text. Lines that are neither headings, comments nor `key=value` are an error.
    pub fn parse(text: &str) -> Result<Ini, ConfigError> {
        let mut section = String::new();
        let mut entries = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
                continue;
            }
            if let Some(rest) = l.strip_prefix('[') {
                let Some(name) = rest.strip_suffix(']') else {
                    return Err(ConfigError::Heading {
                        line: n + 1,
                        text: l.to_string(),
                    });
                };
                section = name.trim().to_string();
                continue;
            }
            let Some(i) = l.find(['=', ':']) else {
                return Err(ConfigError::Syntax {
                    line: n + 1,
                    text: l.to_string(),
                });
            };
            entries.push((
                section.clone(),
                l[..i].trim().to_ascii_lowercase(),
                l[i + 1..].trim().to_string(),
            ));
        }
        Ok(Ini { entries })
    }

    /// The last value of `key` in `section`.
    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(s, k, _)| s == section && k == key)
            .map(|(_, _, v)| v.as_str())
    }

    /// The last value of `key` in any section.
    pub fn get_any(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(_, k, _)| k == key)
            .map(|(_, _, v)| v.as_str())
    }
}

fn too_large(key: &str, v: &str) -> ConfigError {
    ConfigError::TooLarge {
        key: key.into(),
        value: v.into(),
    }
}

fn parse_int(key: &str, v: &str) -> Result<u64, ConfigError> {
    let r = if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        v.parse()
    };
    r.map_err(|_| ConfigError::NotInteger {
        key: key.into(),
        value: v.into(),
    })
}

fn parse_bool(key: &str, v: &str) -> Result<bool, ConfigError> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(ConfigError::NotBoolean {
            key: key.into(),
            value: v.into(),
        }),
    }
}

/// [`Params`] from a static configuration file. Keys it does not set keep the values of `base`
/// (normally [`Params::reference`]); the support-packet widths are not in the file and stay as in
/// `base`.
pub fn params_from_scf(text: &str, base: Params) -> Result<Params, ConfigError> {
    let ini = Ini::parse(text)?;
    let mut p = base;
    let small = |key: &str, dst: &mut u8| -> Result<(), ConfigError> {
        if let Some(v) = ini.get_any(key) {
            let n = parse_int(key, v)?;
            *dst = u8::try_from(n).map_err(|_| too_large(key, v))?;
        }
        Ok(())
    };
    small("arch_p", &mut p.arch_p)?;
    small("bpred_size_p", &mut p.bpred_size_p)?;
    small("cache_size_p", &mut p.cache_size_p)?;
    small("call_counter_size_p", &mut p.call_counter_size_p)?;
    small("context_width_p", &mut p.context_width_p)?;
    small("time_width_p", &mut p.time_width_p)?;
    small("ecause_width_p", &mut p.ecause_width_p)?;
    small("f0s_width_p", &mut p.f0s_width_p)?;
    small("iaddress_lsb_p", &mut p.iaddress_lsb_p)?;
    small("iaddress_width_p", &mut p.iaddress_width_p)?;
    small("privilege_width_p", &mut p.privilege_width_p)?;
    small("return_stack_size_p", &mut p.return_stack_size_p)?;
    small("itype_width_p", &mut p.itype_width_p)?;
    let flag = |key: &str, dst: &mut bool| -> Result<(), ConfigError> {
        if let Some(v) = ini.get_any(key) {
            *dst = parse_int(key, v)? != 0;
        }
        Ok(())
    };
    flag("nocontext_p", &mut p.nocontext_p)?;
    flag("notime_p", &mut p.notime_p)?;
    flag("sijump_p", &mut p.sijump_p)?;
    p.validate()?;
    Ok(p)
}

/// What a user configuration file sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ucf {
    /// `[codec]` run-time options: `implicit-return`, `implicit-except`, `full-address`,
    /// `jump-target-cache`, `branch-prediction`, `si-jump`.
    pub options: IOptions,
    /// `[codec] resync-max`: the reference encoder resynchronises after 2^(`resync-max` + 4)
    /// packets.
    pub resync_max: Option<u32>,
    /// `[flags] use-rv32-isa`.
    pub use_rv32_isa: bool,
    /// `[required] object-files` (space separated).
    pub object_files: Vec<String>,
    /// `[required] file-stem`.
    pub file_stem: Option<String>,
}

/// Parse a user configuration file.
pub fn parse_ucf(text: &str) -> Result<Ucf, ConfigError> {
    let ini = Ini::parse(text)?;
    let b = |key: &str| -> Result<bool, ConfigError> {
        match ini.get("codec", key) {
            Some(v) => parse_bool(key, v),
            None => Ok(false),
        }
    };
    let options = IOptions {
        implicit_return: b("implicit-return")?,
        implicit_exception: b("implicit-except")?,
        full_address: b("full-address")?,
        jump_target_cache: b("jump-target-cache")?,
        branch_prediction: b("branch-prediction")?,
        sijump: b("si-jump")?,
    };
    let resync_max = match ini.get("codec", "resync-max") {
        Some(v) => Some(
            u32::try_from(parse_int("resync-max", v)?).map_err(|_| too_large("resync-max", v))?,
        ),
        None => None,
    };
    let use_rv32_isa = match ini.get("flags", "use-rv32-isa") {
        Some(v) => parse_bool("use-rv32-isa", v)?,
        None => false,
    };
    let object_files = ini
        .get("required", "object-files")
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    Ok(Ucf {
        options,
        resync_max,
        use_rv32_isa,
        object_files,
        file_stem: ini.get("required", "file-stem").map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scf_and_ucf() {
        let scf = "# comment\n[Required Attributes]\narch_p=0\ncall_counter_size_p=9\niaddress_lsb_p=0\niaddress_width_p=32\nnotime_p=1\n[Other Recommended Attributes]\nitype_width_p=3\n";
        let p = params_from_scf(scf, Params::reference(64)).unwrap();
        assert_eq!(p.call_counter_size_p, 9);
        assert_eq!(p.iaddress_lsb_p, 0);
        assert_eq!(p.iaddress_width_p, 32);
        assert_eq!(p.itype_width_p, 3);
        assert_eq!(p.context_width_p, 32);
        let ucf = "[required]\nfile-stem=x.encoder\nobject-files=../a.elf b.elf\n;c\n[codec]\nresync-max=1\nfull-address=true\nimplicit-except = false\n[flags]\nuse-rv32-isa = true\n";
        let u = parse_ucf(ucf).unwrap();
        assert!(u.options.full_address && !u.options.implicit_exception);
        assert_eq!(u.resync_max, Some(1));
        assert!(u.use_rv32_isa);
        assert_eq!(u.object_files, ["../a.elf", "b.elf"]);
        assert_eq!(u.file_stem.as_deref(), Some("x.encoder"));
        assert!(Ini::parse("[x\n").is_err());
    }
}

/// Which encoder behaviour to follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Preset {
    /// rvtrace's encoder: E-Trace v2.0 rules (see the crate README).
    #[default]
    Rvtrace,
    /// The reference flow's `encoder_model.py` choices, quirks included, so that the same input
    /// gives byte-identical `te_inst_raw` (see the crate README).
    Reference,
}

impl Preset {
    /// The preset's discovery parameters for an address width of `xlen_bits` (32 or 64).
    pub const fn params(self, xlen_bits: u8) -> Params {
        match self {
            Preset::Reference => Params::reference(xlen_bits),
            Preset::Rvtrace => Params::rvtrace(xlen_bits),
        }
    }

    /// The preset's framing: the reference flow's tools write `te_inst_raw`, rvtrace the
    /// encapsulation without optional fields.
    pub const fn framing(self) -> Framing {
        match self {
            Preset::Reference => Framing::Raw,
            Preset::Rvtrace => Framing::Encap(crate::codec::EncapConfig::PLAIN),
        }
    }
}

pub use crate::codec::Framing;

/// Encapsulation widths (srcID, timestamp, type) apply to `etrace-encap` only: asking for
/// `te_inst_raw` (`raw`) with some of them (`encap_widths`) is a contradiction (te_inst_raw has a
/// 1-byte header only). Given without a framing, widths imply encapsulation.
pub fn check_framing(raw: bool, encap_widths: bool) -> Result<(), ConfigError> {
    if raw && encap_widths {
        return Err(ConfigError::RawWithEncapWidths);
    }
    Ok(())
}

/// Everything both ends of a trace must agree on, plus the encoder's choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceConfig {
    /// Packet layout.
    pub params: Params,
    /// Run-time options (the encoder sends them in support packets; the decoder starts with
    /// them and then follows support packets).
    pub options: IOptions,
    /// Resynchronisation period in `te_inst` packets (`None`: only when required).
    pub resync: Option<u64>,
    /// Encoder behaviour.
    pub preset: Preset,
    /// File framing.
    pub framing: Framing,
    /// The encapsulation's *srcID* (`e-trace-specifics.adoc`: the source, one hart of several;
    /// set with [`TraceConfig::with_srcid`]): the encoder writes it into every packet, the
    /// decoder reads only the packets of it. `None`: the encoder writes 0, the decoder reads
    /// every packet.
    pub srcid: Option<u16>,
}

/// What a reader of the trace's bytes is told ([`crate::codec::read_trace_items`]).
impl From<&TraceConfig> for crate::codec::StreamLayout {
    fn from(c: &TraceConfig) -> Self {
        crate::codec::StreamLayout {
            framing: c.framing,
            params: c.params,
            options: c.options,
            src: c.srcid,
        }
    }
}

/// The inputs [`TraceConfig::build`] combines, in order of precedence (later wins): the preset's
/// defaults for the address width, the `.scf`/`.ucf` files, the option flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigInputs {
    /// `--preset`.
    pub preset: Preset,
    /// Address width in bits (from the ELF or the ingress file): 32 or 64.
    pub xlen_bits: u8,
    /// Contents of a static configuration file.
    pub scf: Option<String>,
    /// Contents of a user configuration file.
    pub ucf: Option<String>,
    /// `--full-address`.
    pub full_address: bool,
    /// `--implicit-exception`.
    pub implicit_exception: bool,
    /// `--sijump`.
    pub sijump: bool,
    /// `--implicit-return`.
    pub implicit_return: bool,
    /// `--return-stack N` (entries, a power of two >= 2).
    pub return_stack: Option<u32>,
    /// `--branch-prediction N` (entries, a power of two >= 2).
    pub branch_prediction: Option<u32>,
    /// `--jump-target-cache N` (entries, a power of two >= 2).
    pub jump_target_cache: Option<u32>,
    /// `--resync N` (packets).
    pub resync: Option<u64>,
    /// `--timestamps`: *time* in synchronisation packets (`notime_p`=0, 64-bit `time_width_p`).
    pub timestamps: bool,
    /// `--itype-width 3|4`.
    pub itype_width: Option<u8>,
    /// `--format`: framing; `None` = the preset's (reference: `te_inst_raw`, else encap).
    pub framing: Option<Framing>,
    /// `--options-layout`: the support packets' *encoder_mode*/*ioptions*/*doptions* layout.
    pub options_layout: crate::OptionsLayout,
}

/// Width of the call counter rvtrace uses for `--implicit-return` without `--return-stack`
/// (`call_counter_size_p`; the reference flow's debug configuration uses 9 too).
pub const DEFAULT_CALL_COUNTER_SIZE: u8 = 9;

fn log2_entries(option: &'static str, n: u32) -> Result<u8, ConfigError> {
    if n < 2 || !n.is_power_of_two() || n > 1 << 16 {
        return Err(ConfigError::Entries { option, n });
    }
    Ok(n.trailing_zeros() as u8)
}

impl TraceConfig {
    /// Combine the inputs (see [`ConfigInputs`]).
    pub fn build(i: &ConfigInputs) -> Result<TraceConfig, ConfigError> {
        if i.xlen_bits != 32 && i.xlen_bits != 64 {
            return Err(ConfigError::AddressWidth(i.xlen_bits));
        }
        let mut params = i.preset.params(i.xlen_bits);
        if i.options_layout != crate::OptionsLayout::Rvtrace {
            params = params.with_options_layout(i.options_layout);
        }
        if let Some(scf) = &i.scf {
            params = params_from_scf(scf, params).map_err(|e| ConfigError::Scf(Box::new(e)))?;
        }
        let mut options = IOptions::default();
        let mut resync = None;
        if let Some(ucf) = &i.ucf {
            let u = parse_ucf(ucf).map_err(|e| ConfigError::Ucf(Box::new(e)))?;
            options = u.options;
            if let Some(r) = u.resync_max {
                if r > 40 {
                    let e = too_large("resync-max", &r.to_string());
                    return Err(ConfigError::Ucf(Box::new(e)));
                }
                resync = Some(1u64 << (r + 4));
            }
        }
        options.full_address |= i.full_address;
        options.implicit_exception |= i.implicit_exception;
        options.sijump |= i.sijump;
        options.implicit_return |= i.implicit_return || i.return_stack.is_some();
        if let Some(n) = i.return_stack {
            params.return_stack_size_p = log2_entries("--return-stack", n)?;
            params.call_counter_size_p = 0;
        } else if options.implicit_return
            && i.preset == Preset::Rvtrace
            && params.return_stack_size_p == 0
            && params.call_counter_size_p == 0
        {
            params.call_counter_size_p = DEFAULT_CALL_COUNTER_SIZE;
        }
        if let Some(n) = i.branch_prediction {
            params.bpred_size_p = log2_entries("--branch-prediction", n)?;
            options.branch_prediction = true;
        }
        if let Some(n) = i.jump_target_cache {
            params.cache_size_p = log2_entries("--jump-target-cache", n)?;
            options.jump_target_cache = true;
        }
        if options.branch_prediction && params.bpred_size_p == 0 {
            return Err(ConfigError::NoPredictor);
        }
        if options.jump_target_cache && params.cache_size_p == 0 {
            return Err(ConfigError::NoCacheEntries);
        }
        if options.branch_prediction && options.jump_target_cache && params.f0s_width_p == 0 {
            params.f0s_width_p = 1;
        }
        if i.sijump {
            params.sijump_p = true;
        }
        if i.timestamps {
            params.notime_p = false;
            params.time_width_p = 64;
        }
        if let Some(w) = i.itype_width {
            params.itype_width_p = w;
        }
        if let Some(r) = i.resync {
            if r == 0 {
                return Err(ConfigError::ZeroResync);
            }
            resync = Some(r);
        }
        params.validate()?;
        let framing = i.framing.unwrap_or(i.preset.framing());
        Ok(TraceConfig {
            params,
            options,
            resync,
            preset: i.preset,
            framing,
            srcid: None,
        })
    }

    /// This configuration with the *srcID* `srcid` ([`TraceConfig::srcid`]); an error if it
    /// does not fit in the framing's *srcID* width (`te_inst_raw` has none).
    pub fn with_srcid(mut self, srcid: Option<u16>) -> Result<TraceConfig, ConfigError> {
        if let Some(k) = srcid {
            let bits = match self.framing {
                Framing::Encap(e) => e.srcid_bits as u32,
                Framing::Raw => 0,
            };
            if bits < 16 && k as u64 >> bits != 0 {
                return Err(ConfigError::SrcidTooWide { srcid: k, bits });
            }
        }
        self.srcid = srcid;
        Ok(self)
    }
}
