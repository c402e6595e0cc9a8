//! The options of every command that decodes a trace: one vocabulary for both protocols.

use crate::Protocol;

/// The source field that tells harts apart in a trace of several: N-Trace's SRC (6.2,
/// trTeSrcBits/trTeSrcID), the E-Trace encapsulation's *srcID* (`encapsulation.adoc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct SrcOptions {
    /// Width of the source field that tells harts apart, 0 for none: N-Trace SRC (trTeSrcBits,
    /// at most 12), E-Trace encapsulation srcID (at most 16) [default: the sidecar's, else 0].
    #[cfg_attr(feature = "clap", arg(long = "src-bits", alias = "srcid-bits", value_name = "N",
          value_parser = clap::value_parser!(u8).range(0..=16)))]
    pub bits: Option<u8>,
    /// The source (hart) to read: only its messages or packets are decoded (N-Trace trTeSrcID,
    /// E-Trace srcID) [default: the sidecar's, else every one].
    #[cfg_attr(
        feature = "clap",
        arg(long = "src-id", alias = "srcid", value_name = "K")
    )]
    pub id: Option<u16>,
}

/// How to decode a trace: the protocol (sniffed when not given), whether to read its sidecar,
/// and the options of each protocol that the trace does not carry. Each option not given is the
/// sidecar's (`TRACE.meta`, written by `encode`), else the protocol's default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct DecodeOptions {
    /// The trace's protocol [default: its sidecar's, else recognised from its bytes].
    #[cfg_attr(
        feature = "clap",
        arg(long, alias = "trace", value_enum, value_name = "PROTOCOL")
    )]
    pub protocol: Option<Protocol>,
    /// Do not read the trace's sidecar (TRACE.meta, written by `encode`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_meta: bool,
    /// The source field (both protocols).
    #[cfg_attr(feature = "clap", command(flatten))]
    pub src: SrcOptions,
    /// N-Trace's own options.
    #[cfg_attr(
        feature = "clap",
        command(flatten, next_help_heading = "N-Trace decoder options")
    )]
    pub ntrace: rvtrace_ntrace::meta::Given,
    /// A settings file of SiFive's trace decoder (`dqr -sf FILE`): srcbits, addrbits, archsize,
    /// tsSize, freq/timebasefreq, teinstruction, elf or image (FILE:LO-HI, a raw binary: the
    /// program when `decode` has no --elf or --image, relative to the file), rtd and the ITC
    /// print keys are read (the dialect is SiFive's);
    /// options given on the command line win; other keys are warned about.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "FILE", help_heading = "N-Trace decoder options")
    )]
    pub sifive_settings: Option<std::path::PathBuf>,
    /// E-Trace's own options.
    #[cfg_attr(
        feature = "clap",
        command(flatten, next_help_heading = "E-Trace decoder options")
    )]
    pub etrace: rvtrace_etrace::options::Options,
}

impl DecodeOptions {
    /// Options for a trace of `protocol` with everything else at its default.
    pub fn new(protocol: Protocol) -> Self {
        DecodeOptions {
            protocol: Some(protocol),
            ..DecodeOptions::default()
        }
    }

    /// The N-Trace options with the common ones filled in.
    pub fn ntrace_given(&self) -> rvtrace_ntrace::meta::Given {
        rvtrace_ntrace::meta::Given {
            src_bits: self.src.bits,
            src_id: self.src.id,
            ..self.ntrace
        }
    }

    /// The SiFive settings file (`--sifive-settings`), parsed; `None` when not given.
    pub fn sifive_settings(
        &self,
    ) -> Result<Option<rvtrace_ntrace::sifive::Settings>, crate::Error> {
        let Some(path) = &self.sifive_settings else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| crate::Error::File(format!("{}: {e}", path.display())))?;
        let mut s = rvtrace_ntrace::sifive::Settings::parse(&text);
        for w in &mut s.warnings {
            *w = format!("{}: {w}", path.display());
        }
        Ok(Some(s))
    }

    /// The E-Trace options with the common ones filled in.
    pub fn etrace_given(&self) -> rvtrace_etrace::options::Options {
        rvtrace_etrace::options::Options {
            srcid_bits: self.src.bits,
            srcid: self.src.id,
            ..self.etrace.clone()
        }
    }
}
