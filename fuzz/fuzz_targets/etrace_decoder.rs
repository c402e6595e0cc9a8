//! E-Trace decoder: any bytes, decoded against a small program with every option, must never
//! panic or run away (the decoder's limits bound the work per packet), and every loss it
//! reports is counted as an error (the count behind the CLI's summary and exit status).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rvtrace_etrace::codec::EncapConfig;
use rvtrace_etrace::config::Framing;
use rvtrace_etrace::decoder::{Decoder, DecoderConfig, Limits};
use rvtrace_etrace::{IOptions, Params};
use rvtrace_flow::{decode_all, FlowElement};
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;

/// A loop with a branch, a call, a return and an indirect jump, as a minimal ELF64 at
/// 0x80000000 (one RWX segment).
fn image() -> Image {
    let words: [u32; 8] = [
        0x0000_0297, // auipc t0, 0
        0x0015_0513, // addi a0, a0, 1
        0x00b5_0463, // beq a0, a1, +8
        0x0080_00ef, // jal ra, +8
        0xff5f_f06f, // jal x0, -12
        0x0000_8067, // jalr x0, 0(ra)
        0x0082_8067, // jalr x0, 8(t0)
        0x0000_0013, // nop
    ];
    let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let e = rvtrace_testkit::minimal_elf(true, 0x8000_0000, &code);
    let mut img = Image::new();
    img.load_bytes("fuzz.elf", &e).expect("valid ELF");
    img
}

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let img = image();
    let mut p = Params::rvtrace(64);
    p.return_stack_size_p = 2;
    p.cache_size_p = 2;
    p.bpred_size_p = 2;
    p.f0s_width_p = 1;
    let o = IOptions::from_field(data[0] as u64, rvtrace_etrace::OptionsLayout::Rvtrace);
    let framing = match data[0] & 0x80 != 0 {
        true => Framing::Raw,
        false => Framing::Encap(EncapConfig::PLAIN),
    };
    let opts = DecoderConfig {
        limits: Limits {
            max_jumps_per_packet: 1 << 12,
            max_insns_per_packet: 1 << 16,
        },
        ..DecoderConfig::with_layout(p, o, framing, IsaConfig::rv64())
    };
    let mut dec = Decoder::new(&img, opts);
    let mut losses = 0u64;
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Loss { .. } = e {
            losses += 1;
        }
    };
    decode_all(&mut dec, &data[1..], &mut sink);
    assert_eq!(dec.stats().errors, losses, "one count for losses and errors");
    // A stream that decodes without error ended properly (a support packet ending tracing).
    assert!(dec.stats().errors > 0 || dec.stats().packets > 0);
});
