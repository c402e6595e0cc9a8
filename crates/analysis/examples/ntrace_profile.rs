//! Decode an N-Trace stream and print its profile, with the library alone:
//! `cargo run -p rvtrace-analysis --example ntrace_profile -- PROG.elf TRACE`
//! (a trace of `rvtrace encode ntrace` with its default options).
use rvtrace_analysis::{Profiler, Symbols};
use rvtrace_flow::decode_read;
use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, elf, trace] = &args[..] else {
        return Err("usage: ntrace_profile PROG.elf TRACE".into());
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
