//! N-Trace decoder: any bytes, decoded against a small program with every decoder option (from
//! the first byte) and fed in two pieces (split where the second byte says), must never panic or
//! run away, and must count every loss it reports once (stats and flow agree).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rvtrace_flow::FlowElement;
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::decoder::{Decoder, DecoderConfig};
use rvtrace_ntrace::insn::LinkRule;
use std::sync::OnceLock;

/// A loop with a branch, a call, a return, an indirect jump, compressed instructions and zero
/// padding, as a minimal ELF64 at 0x80000000 (one RX segment) with a data segment after it.
fn image() -> &'static Image {
    static IMG: OnceLock<Image> = OnceLock::new();
    IMG.get_or_init(|| {
        let words: [u32; 10] = [
            0x0000_0297, // auipc t0, 0
            0x0015_0513, // addi a0, a0, 1
            0x00b5_0463, // beq a0, a1, +8
            0x0080_00ef, // jal ra, +8
            0xff5f_f06f, // jal x0, -12
            0x0000_8067, // jalr x0, 0(ra)
            0x0082_8067, // jalr x0, 8(t0)
            0x0505_0505, // c.addi a0, 1; c.addi a0, 1
            0x9282_8082, // c.jr ra (ret); c.jalr t0
            0x0000_0000, // zero padding
        ];
        let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let data = [0x13u8; 16];
        // PT_LOAD R+X code, then PT_LOAD R+W data.
        use rvtrace_testkit::{elf_with_segments, PF_R, PF_W, PF_X};
        let e = elf_with_segments(
            true,
            0x8000_0000,
            &[
                (PF_R | PF_X, 0x8000_0000, &code),
                (PF_R | PF_W, 0x8000_1000, &data),
            ],
        );
        let mut img = Image::new();
        img.load_bytes("fuzz.elf", &e).expect("valid ELF");
        img
    })
}

fuzz_target!(|data: &[u8]| {
    let [o, split, rest @ ..] = data else {
        return;
    };
    let img = image();
    let mut cfg = DecoderConfig::new(IsaConfig::rv64());
    cfg.codec.src_bits = [0, 1, 3, 12][usize::from(o & 3)];
    cfg.src = (o & 4 != 0).then_some(u16::from(o >> 5));
    cfg.extend_addr_msb = o & 8 != 0;
    cfg.all_jumps = o & 16 != 0;
    cfg.link = [LinkRule::Spec, LinkRule::X1Only, LinkRule::NexRv][usize::from(o >> 5) % 3];
    // A few bytes may legitimately stand for millions of instructions (a 2^24 I-CNT replayed
    // 2^20 times by RepeatBranch): smaller bounds keep each input fast; the code is the same.
    cfg.max_icnt = 1 << 12;
    cfg.max_repeat = 1 << 6;
    let mut losses = 0u64;
    let mut sink = |e: &FlowElement| losses += matches!(e, FlowElement::Loss { .. }) as u64;
    let mut d = Decoder::new(img, cfg);
    let at = usize::from(*split).min(rest.len());
    d.push(&rest[..at], &mut sink);
    d.push(&rest[at..], &mut sink);
    let st = d.finish(&mut sink);
    assert_eq!(st.errors, losses);
    assert_eq!(st.bytes, rest.len() as u64);
});
