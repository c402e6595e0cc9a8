//! E-Trace decoded in chunks, each on its own (threads here; workers of a distributed job given
//! a byte range and its starting sync), then stitched into the flow of a decode from the start.
//! `cargo run --release -p rvtrace-etrace --example chunked_decode -- [TRACE ELF [CHUNK_BYTES]]`;
//! without arguments it runs `programs/elf/recurse-rv64gc.elf` on the hart model, encodes the
//! run with a synchronisation packet every 64 packets and decodes that in chunks of 256 bytes.
use rvtrace_etrace::decoder::Decoder;
use rvtrace_etrace::scan::{cuts, options_at};
use rvtrace_flow::chunk::{decode_chunk, spans, ChunkDecoder, Stitch};
use rvtrace_flow::{FlowElement, FlowSink};

mod common;

/// What a chunked decode found.
#[derive(Debug, PartialEq, Eq)]
struct Summary {
    chunks: usize,
    redone: u64,
    instructions: u64,
    errors: u64,
}

/// Decode `input` in chunks of about `chunk` bytes.
fn chunked(input: &common::Input, chunk: u64) -> Summary {
    let (image, bytes, cfg) = (&input.image, &input.bytes, input.cfg);
    // Cut at the first synchronisation packet (format 3 subformat 0) after every `chunk`
    // bytes; a chunk's decoder starts with the run-time options in force there.
    let points = cuts(bytes, &cfg, chunk);
    let spans = spans(
        &points.iter().map(|p| p.cut).collect::<Vec<_>>(),
        bytes.len() as u64,
    );
    let range = |(a, b): (u64, u64)| &bytes[a as usize..b as usize];
    // Each worker: a span's bytes and starting cut -> its flow and the states at both ends.
    let code = Decoder::code(image, &cfg);
    let flows: Vec<_> = std::thread::scope(|s| {
        let run = |sp: rvtrace_flow::chunk::Span| {
            let dec = Decoder::at(
                image,
                cfg,
                code.clone(),
                sp.from,
                options_at(&points, sp.from, &cfg),
            );
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
    let (mut stitch, mut instructions) = (Stitch::new(), 0);
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Range { count, .. } = e {
            instructions += count;
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
    Summary {
        chunks: spans.len(),
        redone: stitch.redone,
        instructions,
        errors: stitch.stats().1.errors,
    }
}

fn main() -> common::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let input = common::input(&args[..args.len().min(2)], Some(64))?;
    let chunk = match args.get(2) {
        Some(n) => n.parse()?,
        None if args.is_empty() => 256,
        None => 1 << 20,
    };
    let s = chunked(&input, chunk);
    println!(
        "{} chunks ({} decoded again): {} instructions, {} errors",
        s.chunks, s.redone, s.instructions, s.errors
    );
    if let Some(run) = &input.pcs {
        println!("the program's run: {} instructions", run.len());
    }
    Ok(())
}

/// The default trace, cut in many chunks, decodes to every instruction the program executed.
#[test]
fn default_trace_in_chunks() {
    let input = common::input(&[], Some(64)).unwrap();
    let s = chunked(&input, 256);
    assert!(s.chunks > 10, "{s:?}");
    let run = input.pcs.as_ref().unwrap();
    assert_eq!((s.instructions, s.errors), (run.len() as u64, 0));
}
