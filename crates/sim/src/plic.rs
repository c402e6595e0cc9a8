//! The platform-level interrupt controller of QEMU's `virt` machine (`sifive,plic-1.0.0` at
//! 0x0c00_0000; QEMU 7.2 `hw/intc/sifive_plic.c` with `virt`'s layout): 96 sources (0 is "no
//! interrupt"), priorities 0..=7, and two contexts per hart as QEMU's `virt` numbers them
//! (`"MS"` per hart): context `2 * hart` for M-mode (MEIP) and `2 * hart + 1` for S-mode (SEIP).
//!
//! Register map (The RISC-V PLIC Specification 1.0.0, "Memory Map"): priority of source N at
//! `4 * N`; pending bits at 0x1000; enable bits of context C at `0x2000 + 0x80 * C`; threshold of
//! context C at `0x20_0000 + 0x1000 * C`, claim/complete at 4 past it. Registers are 32 bits
//! wide; other access sizes fault, as QEMU's (its region takes 4-byte accesses only). The rest
//! of the region reads 0 and ignores writes.
//!
//! Sources are level-triggered through the specification's gateway: a source whose line is high
//! becomes pending unless it is claimed; a claim clears its pending bit; its completion lets the
//! line, if still high, make it pending again. A context's interrupt line is high while a
//! pending, enabled source has a priority above its threshold (the highest such, lowest number
//! among equals, is what a claim returns).

/// Base of the PLIC.
pub const PLIC_BASE: u64 = 0x0c00_0000;
/// Size of the region QEMU's device tree gives it.
pub const PLIC_SIZE: u64 = 0x60_0000;
/// Sources, "no interrupt" (0) included (QEMU 7.2 `VIRT_IRQCHIP_NUM_SOURCES`; `riscv,ndev`).
pub const SOURCES: usize = 96;
/// Largest priority (3 priority bits).
pub const MAX_PRIORITY: u32 = 7;
/// Contexts of the largest machine: M-mode and S-mode of each of [`crate::smp::MAX_HARTS`]
/// harts.
pub const CONTEXTS: usize = 2 * crate::smp::MAX_HARTS;
/// The 16550 UART's source on `virt`.
pub const UART_IRQ: usize = 10;

const WORDS: usize = SOURCES.div_ceil(32);
const PENDING: u64 = 0x1000;
const ENABLE: u64 = 0x2000;
const ENABLE_STRIDE: u64 = 0x80;
const CONTEXT: u64 = 0x20_0000;
const CONTEXT_STRIDE: u64 = 0x1000;

/// The PLIC's state.
#[derive(Clone, Debug)]
pub struct Plic {
    priority: [u32; SOURCES],
    pending: [u32; WORDS],
    claimed: [u32; WORDS],
    enable: [[u32; WORDS]; CONTEXTS],
    threshold: [u32; CONTEXTS],
    /// Each source's line as the device last drove it.
    line: [u32; WORDS],
    /// Each context's interrupt line (kept current: the hart reads it for `mip`).
    eip: [bool; CONTEXTS],
    /// Contexts present: two per hart of the machine (the rest of the map reads 0).
    contexts: usize,
}

fn bit(src: usize) -> (usize, u32) {
    (src / 32, 1 << (src % 32))
}

impl Default for Plic {
    /// The PLIC of a one-hart machine after reset.
    fn default() -> Plic {
        Plic::new(1)
    }
}

impl Plic {
    /// The PLIC of a machine of `harts` harts (1..=[`crate::smp::MAX_HARTS`]) after reset:
    /// every register 0.
    pub fn new(harts: usize) -> Plic {
        Plic {
            priority: [0; SOURCES],
            pending: [0; WORDS],
            claimed: [0; WORDS],
            enable: [[0; WORDS]; CONTEXTS],
            threshold: [0; CONTEXTS],
            line: [0; WORDS],
            eip: [false; CONTEXTS],
            contexts: 2 * harts.clamp(1, crate::smp::MAX_HARTS),
        }
    }

    /// Context `ctx`'s interrupt line (`2 * hart`: the hart's MEIP, `2 * hart + 1`: its SEIP).
    #[inline]
    pub fn eip(&self, ctx: usize) -> bool {
        self.eip[ctx]
    }

    /// A device drives source `src`'s line.
    pub fn set_line(&mut self, src: usize, high: bool) {
        let (w, b) = bit(src);
        if high {
            self.line[w] |= b;
            if self.claimed[w] & b == 0 {
                self.pending[w] |= b;
            }
        } else {
            self.line[w] &= !b;
        }
        self.update();
    }

    /// The source a claim by `ctx` would return (0: none).
    fn best(&self, ctx: usize) -> usize {
        let mut best = (0, self.threshold[ctx]);
        for w in 0..WORDS {
            let bits = self.pending[w] & !self.claimed[w] & self.enable[ctx][w];
            for src in crate::ones(u64::from(bits)).map(|b| w * 32 + b) {
                if self.priority[src] > best.1 {
                    best = (src, self.priority[src]);
                }
            }
        }
        best.0
    }

    fn update(&mut self) {
        for ctx in 0..self.contexts {
            self.eip[ctx] = self.best(ctx) != 0;
        }
    }

    /// Every context's interrupt line (to tell whether an access changed any).
    pub fn lines(&self) -> [bool; CONTEXTS] {
        self.eip
    }

    /// A 32-bit read at offset `off` (`None`: not a 4-byte access, an access fault).
    pub fn read(&mut self, off: u64, size: u64) -> Option<u32> {
        if size != 4 || !off.is_multiple_of(4) {
            return None;
        }
        let word = |a: &[u32; WORDS], base: u64| a.get(((off - base) / 4) as usize).copied();
        Some(match off {
            _ if off < 4 * SOURCES as u64 => self.priority[(off / 4) as usize],
            PENDING..ENABLE => word(&self.pending, PENDING).unwrap_or(0),
            ENABLE..CONTEXT => {
                let ctx = ((off - ENABLE) / ENABLE_STRIDE) as usize;
                match self.enable[..self.contexts].get(ctx) {
                    Some(e) => word(e, ENABLE + ctx as u64 * ENABLE_STRIDE).unwrap_or(0),
                    None => 0,
                }
            }
            CONTEXT.. => {
                let ctx = ((off - CONTEXT) / CONTEXT_STRIDE) as usize;
                match (ctx < self.contexts, (off - CONTEXT) % CONTEXT_STRIDE) {
                    (true, 0) => self.threshold[ctx],
                    (true, 4) => self.claim(ctx),
                    _ => 0,
                }
            }
            _ => 0,
        })
    }

    fn claim(&mut self, ctx: usize) -> u32 {
        let src = self.best(ctx);
        if src != 0 {
            let (w, b) = bit(src);
            self.pending[w] &= !b;
            self.claimed[w] |= b;
            self.update();
        }
        src as u32
    }

    /// A 32-bit write at offset `off` (`None`: not a 4-byte access, an access fault).
    pub fn write(&mut self, off: u64, size: u64, v: u32) -> Option<()> {
        if size != 4 || !off.is_multiple_of(4) {
            return None;
        }
        match off {
            // Source 0 does not exist: its priority stays 0.
            0 => {}
            _ if off < 4 * SOURCES as u64 => self.priority[(off / 4) as usize] = v & MAX_PRIORITY,
            PENDING..ENABLE => {}
            ENABLE..CONTEXT => {
                let ctx = ((off - ENABLE) / ENABLE_STRIDE) as usize;
                let w = ((off - ENABLE) % ENABLE_STRIDE / 4) as usize;
                let n = self.contexts;
                if let Some(e) = self.enable[..n].get_mut(ctx).and_then(|e| e.get_mut(w)) {
                    // Bit 0 (source 0) is kept, as QEMU 7.2 keeps it; it never interrupts.
                    *e = v;
                }
            }
            CONTEXT.. => {
                let ctx = ((off - CONTEXT) / CONTEXT_STRIDE) as usize;
                match (ctx < self.contexts, (off - CONTEXT) % CONTEXT_STRIDE) {
                    // QEMU 7.2 ignores a threshold above the largest priority.
                    (true, 0) if v <= MAX_PRIORITY => self.threshold[ctx] = v,
                    (true, 4) if (v as usize) < SOURCES && v != 0 => {
                        let (w, b) = bit(v as usize);
                        self.claimed[w] &= !b;
                        // The gateway forwards a line still high.
                        if self.line[w] & b != 0 {
                            self.pending[w] |= b;
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        self.update();
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PLIC specification's flow: priority, enable, threshold; claim returns the source and
    /// drops the line; completion with the device's line still high makes it pending again.
    #[test]
    fn claim_and_complete_follow_the_gateway() {
        let mut p = Plic::default();
        let s_ctx = CONTEXT + CONTEXT_STRIDE;
        p.set_line(UART_IRQ, true);
        assert!(!p.eip(1), "priority 0 never interrupts");
        p.write(4 * UART_IRQ as u64, 4, 9).unwrap();
        assert_eq!(p.read(4 * UART_IRQ as u64, 4), Some(1), "3 priority bits");
        p.write(ENABLE + ENABLE_STRIDE, 4, 1 << UART_IRQ).unwrap();
        assert!(p.eip(1) && !p.eip(0));
        assert_eq!(p.read(PENDING, 4), Some(1 << UART_IRQ));
        p.write(s_ctx, 4, 1).unwrap();
        assert!(!p.eip(1), "threshold 1 masks priority 1");
        p.write(s_ctx, 4, 8).unwrap();
        assert_eq!(p.read(s_ctx, 4), Some(1), "a threshold above 7 is ignored");
        p.write(s_ctx, 4, 0).unwrap();
        assert_eq!(p.read(s_ctx + 4, 4), Some(UART_IRQ as u32));
        assert!(!p.eip(1) && p.read(PENDING, 4) == Some(0));
        assert_eq!(p.read(s_ctx + 4, 4), Some(0), "claimed: nothing more");
        p.write(s_ctx + 4, 4, UART_IRQ as u32).unwrap();
        assert!(p.eip(1), "the line is still high: pending again");
        p.read(s_ctx + 4, 4);
        p.set_line(UART_IRQ, false);
        p.write(s_ctx + 4, 4, UART_IRQ as u32).unwrap();
        assert!(!p.eip(1));
        assert_eq!(p.read(s_ctx + 4, 2), None, "32-bit registers only");
        // Holes read 0 and ignore writes.
        for off in [
            0x180,
            0xffc,
            0x2100,
            0x1f_fffc,
            CONTEXT + 2 * CONTEXT_STRIDE,
            PLIC_SIZE - 4,
        ] {
            assert_eq!(p.write(off, 4, 0xffff_ffff), Some(()));
            assert_eq!(p.read(off, 4), Some(0), "{off:#x}");
        }
    }
}
