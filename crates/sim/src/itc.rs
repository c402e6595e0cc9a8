//! SiFive's Instrumentation Trace Component (ITC) stimulus port, the part of a SiFive trace
//! encoder's register block that software writes for printf over trace (`rvtrace run --itc
//! ADDR`). The layout is that of SiFive's trace encoder (sifive/trace-decoder
//! `examples/itc_utils/itc_utils.c`, the register offsets of its trace-encoder block):
//!
//! | offset | register | here |
//! |---|---|---|
//! | 0x060 | itcTraceEnable: bit N lets stimulus register N write trace ("By default, all channels are disabled", `itc_utils/readme.md`) | read/write |
//! | 0x080 + 4N | itcStimulus\[N\], N = 0..31: a 32-bit store at +0, 16-bit at +2, 8-bit at +3 (`itc_utils.c`) | a store of an enabled channel is a write; a read returns 1 (room in the FIFO: software spins while it reads 0) |
//! | the rest of the 4 KiB block | the encoder's other controls | read as 0, writes ignored |
//!
//! Each write is kept as an [`ItcWrite`] with the instruction it follows (the IDTAG of SiFive's
//! DataAcquisition message is the store's byte offset inside the stimulus array, dqr
//! `ITCPrint::print`: channel = IDTAG / 4). A real ITC FIFO can fill; this one never does.

use rvtrace_ingress::itc::ItcWrite;

/// Size of the trace encoder's register block.
pub const ITC_SIZE: u64 = 0x1000;
/// itcTraceEnable.
const TRACE_ENABLE: u64 = 0x060;
/// itcStimulus[0]; 32 registers of 4 bytes follow.
const STIMULUS: u64 = 0x080;

/// The ITC stimulus port at `base`, and the writes so far.
#[derive(Clone, Debug, Default)]
pub struct Itc {
    /// Base address of the trace encoder's register block.
    pub base: u64,
    /// itcTraceEnable.
    pub enable: u32,
    /// The writes of enabled channels, in order.
    pub writes: Vec<ItcWrite>,
}

impl Itc {
    /// A port at `base` with every channel disabled.
    pub fn new(base: u64) -> Itc {
        Itc {
            base,
            ..Itc::default()
        }
    }

    /// Whether `addr` is in the register block.
    pub fn contains(&self, addr: u64) -> bool {
        addr.wrapping_sub(self.base) < ITC_SIZE
    }

    /// A load from the block.
    pub fn load(&self, addr: u64, size: u64) -> u64 {
        match addr - self.base {
            TRACE_ENABLE if size >= 4 => u64::from(self.enable),
            off if (STIMULUS..STIMULUS + 128).contains(&off) => 1,
            _ => 0,
        }
    }

    /// A store to the block; `retired` is the number of instructions retired before it.
    pub fn store(&mut self, addr: u64, size: u64, value: u64, retired: u64) {
        match addr - self.base {
            TRACE_ENABLE if size >= 4 => self.enable = value as u32,
            off if (STIMULUS..STIMULUS + 128).contains(&off) && size <= 4 => {
                let idtag = (off - STIMULUS) as u32;
                if self.enable >> (idtag / 4) & 1 != 0 {
                    let mask = u64::MAX >> (64 - 8 * size);
                    self.writes.push(ItcWrite {
                        retired: retired + 1,
                        idtag,
                        value: value & mask,
                    });
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stores of `itc_utils.c`: 32-bit at +0, 16-bit at +2, 8-bit at +3; a disabled
    /// channel writes nothing; a stimulus read says there is room.
    #[test]
    fn stimulus_layout() {
        let mut i = Itc::new(0x100_0000);
        i.store(0x100_0080, 4, 0x4948, 10);
        assert!(i.writes.is_empty());
        i.store(0x100_0060, 4, 0b1001, 11);
        assert_eq!(i.load(0x100_0060, 4), 0b1001);
        i.store(0x100_0080, 4, 0x1_6c6c_6548, 12);
        i.store(0x100_008e, 2, 0x1_0a21, 13);
        i.store(0x100_008f, 1, 0x121, 14);
        i.store(0x100_0084, 4, 1, 15); // channel 1: disabled
        assert_eq!(i.load(0x100_008c, 4), 1);
        assert_eq!(i.load(0x100_0000, 4), 0);
        let w: Vec<(u64, u32, u64)> = i
            .writes
            .iter()
            .map(|w| (w.retired, w.idtag, w.value))
            .collect();
        assert_eq!(w, [(13, 0, 0x6c6c_6548), (14, 14, 0x0a21), (15, 15, 0x21)]);
        assert!(i.contains(0x100_0fff) && !i.contains(0x100_1000) && !i.contains(0xff_ffff));
    }
}
