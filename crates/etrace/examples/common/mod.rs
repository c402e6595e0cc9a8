//! The examples' inputs: a trace and its program from the command line, or by default the run
//! of a program of `programs/` on the hart model, encoded with the encoder's defaults (what
//! `rvtrace run` then `rvtrace encode etrace` make).

use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::decoder::DecoderConfig;
use rvtrace_etrace::encoder::encode;
use rvtrace_etrace::options::Options;
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;

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
/// [`PROGRAM`] encoded with a synchronisation packet every `resync` packets (where a chunked
/// decode may cut; `None`: the defaults').
pub fn input(args: &[String], resync: Option<u64>) -> Result<Input> {
    let mut image = Image::new();
    let (trace, elf) = match args {
        [trace, elf] => (trace, elf),
        [] => return default_input(resync),
        _ => return Err("expected the arguments TRACE ELF".into()),
    };
    let xlen = image.load_file(elf.as_ref())?.xlen;
    let bytes = std::fs::read(trace)?;
    let (options, _, warnings) = Options::default().with_sidecar(trace.as_ref())?;
    warnings.iter().for_each(|w| eprintln!("{w}"));
    // The trace's first bytes tell te_inst_raw from the encapsulation when nothing else does.
    let cfg = options.config(xlen.bits() as u8, Some(&bytes))?;
    Ok(Input {
        image,
        cfg: DecoderConfig::from_config(&cfg, IsaConfig::new(xlen)),
        bytes,
        pcs: None,
    })
}

/// The run of [`PROGRAM`] encoded with the encoder's defaults and a synchronisation packet
/// every `resync` packets.
fn default_input(resync: Option<u64>) -> Result<Input> {
    let run = rvtrace_testkit::run_test_program(PROGRAM, 4);
    let xlen = run.image.files()[0].xlen;
    let inputs = ConfigInputs {
        xlen_bits: xlen.bits() as u8,
        resync,
        ..ConfigInputs::default()
    };
    Ok(Input {
        cfg: DecoderConfig::new(IsaConfig::new(xlen)),
        bytes: encode(&TraceConfig::build(&inputs)?, &run.records)?,
        image: run.image,
        pcs: Some(run.pcs),
    })
}
