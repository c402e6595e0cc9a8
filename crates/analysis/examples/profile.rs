//! Decode a stream and print its profile:
//! `cargo run -p rvtrace-analysis --example profile -- PROG.elf ingress|ntrace|etrace FILE`
//! (N-Trace and E-Trace with the encoders' default options).
use rvtrace_analysis::{Profiler, Symbols};
use rvtrace_decode::ingress as source;
use std::fs::File;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, elf, kind, file] = &args[..] else {
        return Err("usage: profile PROG.elf ingress|ntrace|etrace FILE".into());
    };
    let mut image = rvtrace_image::Image::new();
    let xlen = image.load_file(elf.as_ref())?.xlen;
    let syms = Symbols::load(elf.as_ref())?;
    let isa = rvtrace_isa::IsaConfig::new(xlen);
    let mut profiler = Profiler::new(&image, &syms, isa);
    let input = File::open(file)?;
    let stats = match kind.as_str() {
        "ingress" => source::ingress(input, &image, isa, &mut profiler)?,
        "ntrace" => {
            let cfg = rvtrace_ntrace::decoder::DecoderConfig::new(isa);
            let mut dec = rvtrace_ntrace::decoder::Decoder::new(&image, cfg);
            rvtrace_flow::decode_read(&mut dec, input, &mut profiler)?.into()
        }
        "etrace" => {
            let cfg = rvtrace_etrace::decoder::DecoderConfig::new(isa);
            let mut dec = rvtrace_etrace::decoder::Decoder::new(&image, cfg);
            rvtrace_flow::decode_read(&mut dec, input, &mut profiler)?.into()
        }
        _ => return Err(format!("{kind}: not ingress, ntrace or etrace").into()),
    };
    print!("{}", profiler.profile().report(10));
    println!(
        "{} instructions, {} losses",
        stats.instructions, stats.losses
    );
    Ok(())
}
