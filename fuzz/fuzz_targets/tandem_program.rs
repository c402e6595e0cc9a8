//! The small program the tandem fuzz targets check traces against (shared by `tandem_checker`
//! and the tool that made its seed corpus): a loop with a store, a load and a branch, then a
//! semihosting `SYS_EXIT`, as a minimal ELF64 at 0x80000000 (one RWX segment).

use rvtrace_image::Image;

/// The ELF's bytes.
pub fn elf() -> Vec<u8> {
    let words: [u32; 11] = [
        0x0000_0297, // auipc t0, 0
        0x00a0_0513, // li a0, 10
        0xfff5_0513, // loop: addi a0, a0, -1
        0x04a2_b023, // sd a0, 64(t0)
        0x0402_b603, // ld a2, 64(t0)
        0xfe05_1ae3, // bnez a0, loop
        0x0302_8593, // addi a1, t0, 48 (the exit block)
        0x0180_0513, // li a0, 0x18 (SYS_EXIT)
        0x01f0_1013, // slli x0, x0, 0x1f
        0x0010_0073, // ebreak
        0x4070_5013, // srai x0, x0, 7
    ];
    let mut code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    code.resize(48, 0);
    // The exit block {ADP_Stopped_ApplicationExit, 0}, then the loop's memory word.
    code.extend_from_slice(&0x20026u64.to_le_bytes());
    code.extend_from_slice(&0u64.to_le_bytes());
    code.extend_from_slice(&0u64.to_le_bytes());
    let mut e = Vec::new();
    e.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    e.extend_from_slice(&2u16.to_le_bytes());
    e.extend_from_slice(&243u16.to_le_bytes());
    e.extend_from_slice(&1u32.to_le_bytes());
    e.extend_from_slice(&0x8000_0000u64.to_le_bytes());
    e.extend_from_slice(&64u64.to_le_bytes());
    e.extend_from_slice(&0u64.to_le_bytes());
    e.extend_from_slice(&5u32.to_le_bytes()); // e_flags: RVC, double-float ABI
    for v in [64u16, 56, 1, 0, 0, 0] {
        e.extend_from_slice(&v.to_le_bytes());
    }
    e.extend_from_slice(&1u32.to_le_bytes());
    e.extend_from_slice(&7u32.to_le_bytes());
    let len = code.len() as u64;
    for v in [120u64, 0x8000_0000, 0x8000_0000, len, len, 4] {
        e.extend_from_slice(&v.to_le_bytes());
    }
    e.extend_from_slice(&code);
    e
}

/// The program as an image.
pub fn image() -> Image {
    let mut img = Image::new();
    img.load_bytes("tandem.elf", &elf()).expect("valid ELF");
    img
}
