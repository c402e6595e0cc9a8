//! Attaching semihosting to a hart: the one-line helper the machine builders use.

use rvtrace_image::Image;
use rvtrace_semihost::{attach, loaded_ranges, set, Semihost};
use rvtrace_sim::extension::Extension;
use rvtrace_sim::{Config, Hart, Stop};

/// An extension that does nothing, to see where semihosting lands in the attach order.
struct Other;

impl Extension for Other {
    fn name(&self) -> &'static str {
        "other"
    }
}

fn loaded(elf: &[u8]) -> (Hart, Image) {
    let mut image = Image::new();
    image.load_bytes("prog.elf", elf).unwrap();
    let mut hart = Hart::new(&Config::virt(image.files()[0].xlen));
    hart.load(&image).unwrap();
    (hart, image)
}

/// The ranges are the image's non-empty segments and the device tree below the end of RAM,
/// as QEMU `virt` registers them for `-kernel`.
#[test]
fn loaded_ranges_are_the_segments_and_the_device_tree() {
    let code = [0x13u8, 0, 0, 0, 0x13, 0, 0, 0];
    let elf = rvtrace_testkit::minimal_elf(true, 0x8000_0000, &code);
    let mut image = Image::new();
    image.load_bytes("prog.elf", &elf).unwrap();
    let ram = 128 << 20;
    let fdt = rvtrace_sim::fdt_address(ram, rvtrace_sim::FDT_SIZE);
    assert_eq!(fdt, 0x87e0_0000);
    assert_eq!(
        loaded_ranges(&image, ram),
        vec![
            (0x8000_0000, 0x8000_0008),
            (fdt, fdt + rvtrace_sim::FDT_SIZE)
        ]
    );
}

/// Semihosting goes first in the attach order, and attaching again replaces it.
#[test]
fn attach_puts_semihosting_first_once() {
    let elf = rvtrace_testkit::minimal_elf(true, 0x8000_0000, &[0x13, 0, 0, 0]);
    let (mut hart, image) = loaded(&elf);
    hart.attach(Box::new(Other));
    attach(&mut hart, &image, "prog.elf");
    assert_eq!(hart.extension_name(0), Some("semihosting"));
    assert_eq!(hart.extension_name(1), Some("other"));
    let cfg = rvtrace_semihost::config(&hart, "again", vec![]);
    set(&mut hart, Semihost::new(cfg));
    assert_eq!(hart.extension_name(1), Some("other"));
    assert_eq!(hart.extension_name(2), None);
}

/// A hart without semihosting takes the sequence's `ebreak` as a breakpoint; with it, the
/// program's `SYS_EXIT` ends the run with its status.
#[test]
fn the_exit_call_needs_semihosting_attached() {
    // RV32 (the reason in a1, no parameter block): li a0, 0x18 (SYS_EXIT); li a1, 0x20026
    // (ADP_Stopped_ApplicationExit); the sequence.
    let words: [u32; 6] = [
        0x0180_0513, // addi a0, x0, 0x18
        0x0002_05b7, // lui a1, 0x20
        0x0265_8593, // addi a1, a1, 0x26
        0x01f0_1013, // slli x0, x0, 0x1f
        0x0010_0073, // ebreak
        0x4070_5013, // srai x0, x0, 7
    ];
    let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let elf = rvtrace_testkit::minimal_elf(false, 0x8000_0000, &code);
    let (mut bare, _) = loaded(&elf);
    assert_eq!(bare.run(&mut (), 5), Stop::InsnLimit);
    assert_eq!(bare.csr_read(rvtrace_sim::csr::num::MCAUSE), Some(3));
    let (mut hart, image) = loaded(&elf);
    attach(&mut hart, &image, "prog.elf");
    assert_eq!(hart.run(&mut (), 100), Stop::Exit(0));
}
