//! Decode an E-Trace stream and print its profile, with the library alone:
//! `cargo run -p rvtrace-analysis --example etrace_profile -- PROG.elf TRACE`
//! (a trace of `rvtrace encode etrace` with its default options).
use rvtrace_analysis::{Profiler, Symbols};
use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
use rvtrace_flow::decode_read;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, elf, trace] = &args[..] else {
        return Err("usage: etrace_profile PROG.elf TRACE".into());
    };
    let mut image = rvtrace_image::Image::new();
    let xlen = image.load_file(elf.as_ref())?.xlen;
    let isa = rvtrace_isa::IsaConfig::new(xlen);
    let syms = Symbols::load(elf.as_ref())?;
    let mut profiler = Profiler::new(&image, &syms, isa);
    let mut decoder = Decoder::new(&image, DecoderConfig::new(isa));
    let stats = decode_read(&mut decoder, std::fs::File::open(trace)?, &mut profiler)?;
    print!("{}", profiler.profile().report(10));
    println!(
        "{} instructions, {} losses",
        stats.instructions, stats.losses
    );
    Ok(())
}
