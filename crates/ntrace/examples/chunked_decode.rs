//! N-Trace decoded in chunks, each on its own (threads here; workers of a distributed job given
//! a byte range and its starting sync), then stitched into the flow of a decode from the start.
//! `cargo run --release -p rvtrace-ntrace --example chunked_decode -- TRACE ELF [CHUNK_BYTES]`
use rvtrace_flow::chunk::{cuts, decode_chunk, spans, ChunkDecoder, Stitch};
use rvtrace_flow::{FlowElement, FlowSink};
use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bytes = std::fs::read(&args[1]).expect("read the trace");
    let mut image = rvtrace_image::Image::new();
    let elf = image.load_file(args[2].as_ref()).expect("read the ELF");
    let chunk = args
        .get(3)
        .map_or(1 << 20, |n| n.parse().expect("CHUNK_BYTES"));
    let cfg = DecoderConfig::new(rvtrace_isa::IsaConfig::new(elf.xlen));
    // Cut at the first synchronization message after every CHUNK_BYTES bytes.
    let next_sync = |at| rvtrace_ntrace::scan::next_sync(&bytes, at, &cfg).map(|p| p.cut);
    let spans = spans(
        &cuts(bytes.len() as u64, chunk, next_sync),
        bytes.len() as u64,
    );
    let range = |(a, b): (u64, u64)| &bytes[a as usize..b as usize];
    // Each worker: a span's bytes and starting cut -> its flow and the states at both ends.
    let code = Decoder::code(&image, &cfg);
    let flows: Vec<_> = std::thread::scope(|s| {
        let run = |sp: rvtrace_flow::chunk::Span| {
            let dec = Decoder::at(&image, cfg, code.clone(), sp.from);
            decode_chunk(dec, range((sp.from, sp.to)), sp.from, sp.start, sp.last)
        };
        let workers: Vec<_> = spans.iter().map(|&sp| s.spawn(move || run(sp))).collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    });
    // Stitch in order: a chunk whose start state is not the previous chunk's end state is
    // decoded again with the previous chunk's decoder.
    let (mut stitch, mut insns) = (Stitch::new(), 0);
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Range { count, .. } = e {
            insns += count;
        }
    };
    for (flow, sp) in flows.into_iter().zip(&spans) {
        let redo = |d: &mut Decoder, s: &mut dyn FlowSink| {
            d.push(range(sp.body()), s);
            match sp.last {
                true => drop(d.finish(s)),
                false => d.drain(s),
            }
            true
        };
        // The chunk's head (or all of it, decoded again) went to the sink; its body follows.
        let body = stitch.push(flow, &mut sink, redo).expect("chunks in order");
        body.iter().flatten().for_each(|e| sink.element(e));
    }
    let (n, again, errors) = (spans.len(), stitch.redone, stitch.stats().1.errors);
    println!("{n} chunks ({again} decoded again): {insns} instructions, {errors} errors");
}
