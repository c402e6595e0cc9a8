//! The decoder options of commands that read a trace of either protocol (`compare`, `profile`,
//! `coverage`, `autofdo`): one argument group, resolved against each trace's sidecar in one place.

use crate::report::Failure;
use rvtrace_etrace::config::TraceConfig;
use rvtrace_image::Image;
use rvtrace_isa::Xlen;
use rvtrace_ntrace::decoder::DecoderConfig;
use std::path::{Path, PathBuf};

/// Decoder options (for decoded inputs): the decoders' own, completed by each trace's sidecar.
#[derive(clap::Args, Clone, Debug)]
pub struct TraceDecodeOpts {
    /// Do not read the traces' sidecars (TRACE.meta, written by `encode`).
    #[arg(long)]
    no_meta: bool,
    #[command(flatten, next_help_heading = "N-Trace decoder options")]
    ntrace: crate::ntrace::DecodeOpts,
    #[command(flatten, next_help_heading = "E-Trace decoder options")]
    etrace: crate::etrace::TraceArgs,
}

impl TraceDecodeOpts {
    /// The N-Trace decoder settings for the trace at `path`: the options, then its sidecar;
    /// without a link-register rule from either, the spec's (x1, x5).
    pub fn ntrace_config(&self, path: &Path, xlen: Xlen) -> Result<DecoderConfig, Failure> {
        let (mut cfg, _, link) =
            crate::ntrace::decoder_config(path, self.no_meta, &self.ntrace, xlen)?;
        cfg.link = link.unwrap_or(rvtrace_ntrace::insn::LinkRule::Spec);
        Ok(cfg)
    }

    /// [`ntrace_config`](Self::ntrace_config) with the trace's sidecar, if there is one.
    pub fn ntrace_config_meta(
        &self,
        path: &Path,
        xlen: Xlen,
    ) -> Result<(DecoderConfig, Option<rvtrace_ntrace::meta::Meta>), Failure> {
        let (mut cfg, m, link) =
            crate::ntrace::decoder_config(path, self.no_meta, &self.ntrace, xlen)?;
        cfg.link = link.unwrap_or(rvtrace_ntrace::insn::LinkRule::Spec);
        Ok((cfg, m))
    }

    /// The N-Trace options as given (for a command that encodes N-Trace: `transcode`).
    pub fn ntrace_opts(&self) -> &crate::ntrace::DecodeOpts {
        &self.ntrace
    }

    /// The E-Trace options as given (for a command that encodes E-Trace: `transcode`).
    pub fn etrace_args(&self) -> &crate::etrace::TraceArgs {
        &self.etrace
    }

    /// The E-Trace decoder configuration for the trace `data` read from `path`: the options,
    /// then its sidecar, with the framing checked.
    pub fn etrace_config(
        &self,
        path: &Path,
        data: &[u8],
        xlen: Xlen,
    ) -> Result<TraceConfig, Failure> {
        let (targs, _) = self.etrace.with_sidecar(path, self.no_meta)?;
        targs.check_framing()?;
        targs.config(xlen.bits() as u8, Some(data), &Default::default())
    }
}

/// The program's ELF files (`--elf`, repeatable) as one image, and the address width of the first
/// (`None` when none is given).
pub fn load_program(paths: &[PathBuf]) -> Result<(Image, Option<Xlen>), Failure> {
    let mut image = Image::new();
    let mut xlen = None;
    for p in paths {
        let info = image
            .load_file(p)
            .map_err(|e| Failure::Tool(format!("{}: {e}", p.display())))?;
        xlen.get_or_insert(info.xlen);
    }
    Ok((image, xlen))
}
