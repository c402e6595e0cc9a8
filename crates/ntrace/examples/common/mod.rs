//! The examples' inputs: a trace and its program from the command line, or by default the run
//! of a program of `programs/` on the hart model, encoded with the encoder's defaults (what
//! `rvtrace run` then `rvtrace encode ntrace` make).

use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::decoder::DecoderConfig;
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::insn::LinkRule;
use rvtrace_ntrace::meta::{decoder_config, sidecar_path, Given, Meta};
use rvtrace_ntrace::options::{EncoderConfig, SyncUnit};

/// What the examples return.
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The program the examples trace when given no trace.
pub const PROGRAM: &str = "recurse-rv64gc";

/// A trace to decode: the program, the trace's bytes and the decoder's configuration.
pub struct Input {
    /// The program.
    pub image: Image,
    /// The trace.
    pub bytes: Vec<u8>,
    /// The settings the trace was encoded with.
    pub cfg: DecoderConfig,
    /// The PCs the program executed, when the example ran it.
    pub pcs: Option<Vec<u64>>,
}

/// The trace `TRACE` of the program `ELF` (`args`: `TRACE ELF`; the sidecar `TRACE.meta`, when
/// there is one, gives the settings the trace does not carry), or with no `args` the run of
/// [`PROGRAM`] encoded with a synchronization every `sync_messages` messages (where a chunked
/// decode may cut; `None`: the defaults').
pub fn input(args: &[String], sync_messages: Option<u64>) -> Result<Input> {
    let mut image = Image::new();
    let (trace, elf) = match args {
        [trace, elf] => (trace, elf),
        [] => return Ok(default_input(sync_messages)),
        _ => return Err("expected the arguments TRACE ELF".into()),
    };
    let xlen = image.load_file(elf.as_ref())?.xlen;
    let meta = match std::fs::read_to_string(sidecar_path(trace.as_ref())) {
        Ok(text) => Some(Meta::parse(&text)?),
        Err(_) => None,
    };
    let (cfg, warnings) = decoder_config(&Given::default(), meta.as_ref(), xlen);
    warnings.iter().for_each(|w| eprintln!("{trace}: {w}"));
    let (mut cfg, link) = cfg?;
    cfg.link = link.unwrap_or(LinkRule::Spec);
    Ok(Input {
        image,
        bytes: std::fs::read(trace)?,
        cfg,
        pcs: None,
    })
}

/// The run of [`PROGRAM`] encoded with the encoder's defaults and a synchronization every
/// `sync_messages` messages.
fn default_input(sync_messages: Option<u64>) -> Input {
    let run = rvtrace_testkit::run_test_program(PROGRAM, 4);
    let mut enc = EncoderConfig::new(run.image.files()[0].xlen);
    enc.sync_period = sync_messages.map(|n| (SyncUnit::Messages, n));
    Input {
        cfg: DecoderConfig::new(IsaConfig::new(enc.xlen)),
        bytes: encode(enc, &run.records).0,
        image: run.image,
        pcs: Some(run.pcs),
    }
}
