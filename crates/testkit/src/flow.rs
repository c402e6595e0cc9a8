//! Flow sinks for decoder tests (every protocol's decoder honours the same sink contract).

use rvtrace_flow::{decode_all, FlowElement, FlowSink, LossReason, PcWriter, TraceDecoder};
use rvtrace_image::Image;

/// The retired PCs of `flow`, through `PcWriter` (what `--pcs` writes) and read back.
pub fn pcs_of(image: &Image, flow: &[FlowElement]) -> Vec<u64> {
    let mut w = PcWriter::new(image, Vec::new());
    for e in flow {
        w.element(e);
    }
    crate::parse_pcs(&w.finish().unwrap())
}

/// Decode `bytes` whole with `dec`: the retired PCs (as [`pcs_of`]) and the losses, in order.
pub fn decode_pcs<D: TraceDecoder>(
    dec: &mut D,
    image: &Image,
    bytes: &[u8],
) -> (Vec<u64>, Vec<LossReason>) {
    let mut w = PcWriter::new(image, Vec::new());
    let mut losses = Vec::new();
    let mut sink = |e: &FlowElement| {
        if let FlowElement::Loss { reason, .. } = e {
            losses.push(reason.clone());
        }
        w.element(e);
    };
    decode_all(dec, bytes, &mut sink);
    (crate::parse_pcs(&w.finish().unwrap()), losses)
}

/// A sink that asks to stop once it has `after` ranges, keeping what it got.
pub struct Stopper {
    /// Ranges after which it asks to stop.
    pub after: usize,
    /// Ranges received.
    pub ranges: usize,
    /// Every element received.
    pub got: Vec<FlowElement>,
}

impl Stopper {
    /// A sink that stops after `after` ranges.
    pub fn new(after: usize) -> Stopper {
        Stopper {
            after,
            ranges: 0,
            got: Vec::new(),
        }
    }
}

impl FlowSink for Stopper {
    fn element(&mut self, e: &FlowElement) {
        self.ranges += matches!(e, FlowElement::Range { .. }) as usize;
        self.got.push(e.clone());
    }
    fn stop_requested(&self) -> bool {
        self.ranges >= self.after
    }
}

/// Checks a decode stopped by its sink: what came is the start of the whole decode (`whole`),
/// little more than asked for, without an End.
pub fn check_stopped(whole: &[FlowElement], s: &Stopper) {
    assert!(s.ranges >= s.after);
    assert!(
        s.got.len() < whole.len() / 4,
        "{} of {}",
        s.got.len(),
        whole.len()
    );
    assert_eq!(&whole[..s.got.len()], &s.got[..]);
    assert!(!s.got.iter().any(|e| matches!(e, FlowElement::End { .. })));
}

/// Checks the rules of [`FlowElement::Range`] on a flow as it comes, against the program image:
/// * a range's instructions before its last are no control transfer but a (not-taken) branch
///   (an `ecall`/`ebreak` is no transfer);
///   `count` instructions from `start` end at `last`;
/// * `class` is [`rvtrace_isa::classify`]'s at `last` (unless [`RangeContract::classes`] is
///   off: a decoder with its own link rules);
/// * `taken` is given for a branch and only for one; a branch's may be missing only when a
///   `Loss` comes next;
/// * two ranges in a row: the first one's last instruction transferred control, and the second
///   starts at its static target when it has one;
/// * a range after another with only time or context between them starts where the first one's
///   last instruction leads: the next instruction, or the target of a taken branch.
///
/// Violations are collected in [`RangeContract::errors`] (the first 20).
pub struct RangeContract<'a> {
    image: &'a rvtrace_image::Image,
    isa: rvtrace_isa::IsaConfig,
    /// Check `class` against `classify` (default true).
    pub classes: bool,
    /// The previous range: (last, class, taken, nothing but time/context since, directly
    /// before).
    prev: Option<(u64, rvtrace_isa::CfClass, Option<bool>, bool)>,
    /// A branch without an outcome: the next element must be a loss.
    needs_loss: Option<u64>,
    /// Ranges checked.
    pub ranges: u64,
    /// Branch outcomes checked against where the next range starts.
    pub outcomes: u64,
    /// What broke the rules.
    pub errors: Vec<String>,
}

impl<'a> RangeContract<'a> {
    /// A checker for a program in `image` run by a hart with `isa`.
    pub fn new(image: &'a rvtrace_image::Image, isa: rvtrace_isa::IsaConfig) -> Self {
        RangeContract {
            image,
            isa,
            classes: true,
            prev: None,
            needs_loss: None,
            ranges: 0,
            outcomes: 0,
            errors: Vec::new(),
        }
    }

    fn fail(&mut self, msg: String) {
        if self.errors.len() < 20 {
            self.errors.push(msg);
        }
    }

    fn info(&self, pc: u64) -> Option<rvtrace_isa::InsnInfo> {
        let bits = self.image.fetch(pc)?;
        let i = rvtrace_isa::classify(&self.isa, bits);
        (i.len > 0).then_some(i)
    }

    /// Panics with the violations, if any, naming `what`.
    pub fn assert_ok(&self, what: &str) {
        assert!(self.errors.is_empty(), "{what}: {:#?}", self.errors);
    }

    fn range(&mut self, start: u64, last: u64, count: u64, class: CfClass, taken: Option<bool>) {
        use rvtrace_flow::walk::transfers;
        self.ranges += 1;
        let mask = self.isa.xlen.addr_mask();
        if let Some((pl, pclass, ptaken, direct)) = self.prev.take() {
            let pinfo = self.info(pl);
            let fall = pinfo.map(|i| pl.wrapping_add(i.len as u64) & mask);
            let target = pinfo.and_then(|i| i.target_addr(pl, self.isa.xlen));
            if direct && !transfers(pclass, ptaken == Some(true)) {
                self.fail(format!(
                    "range at {start:#x} right after one ending at {pl:#x} ({pclass:?}, taken {ptaken:?}), which did not transfer control"
                ));
            }
            let want = match pclass {
                CfClass::Branch => match ptaken {
                    Some(true) => target,
                    Some(false) => fall,
                    None => None,
                },
                CfClass::None => fall,
                c if c.is_inferable() => target,
                _ => None,
            };
            // A branch to the next instruction goes there either way.
            if want.is_some_and(|w| w != start) && !(pclass == CfClass::Branch && target == fall) {
                self.fail(format!(
                    "range at {start:#x} after {pl:#x} ({pclass:?}, taken {ptaken:?}), which leads to {:#x}",
                    want.unwrap()
                ));
            }
            if pclass == CfClass::Branch && ptaken.is_some() && target != fall {
                self.outcomes += 1;
            }
        }
        // The instructions of the range.
        let mut pc = start;
        for k in 0..count {
            let Some(i) = self.info(pc) else {
                self.fail(format!(
                    "range {start:#x}..{last:#x}: no instruction at {pc:#x}"
                ));
                return;
            };
            if k + 1 == count {
                break;
            }
            // An `ecall`/`ebreak` serviced in place (semihosting) that the trace does not
            // report as a trap goes on to the next instruction.
            if !matches!(i.class, CfClass::None | CfClass::Branch | CfClass::EnvTrap) {
                self.fail(format!(
                    "range {start:#x}..{last:#x}: {:?} at {pc:#x} inside it",
                    i.class
                ));
            }
            pc = pc.wrapping_add(i.len as u64) & mask;
        }
        if pc != last {
            self.fail(format!(
                "range {start:#x}..{last:#x} of {count} instructions ends at {pc:#x}"
            ));
        }
        if let Some(i) = self.info(last) {
            if self.classes && i.class != class {
                self.fail(format!(
                    "range ending at {last:#x}: class {class:?}, the image has {:?}",
                    i.class
                ));
            }
        }
        match (class == CfClass::Branch, taken) {
            (true, None) => self.needs_loss = Some(last),
            (false, Some(_)) => self.fail(format!(
                "range ending at {last:#x}: {class:?} with an outcome {taken:?}"
            )),
            _ => {}
        }
        self.prev = Some((last, class, taken, true));
    }
}

use rvtrace_flow::CfClass;

impl FlowSink for RangeContract<'_> {
    fn element(&mut self, e: &FlowElement) {
        if let Some(at) = self.needs_loss.take() {
            if !matches!(e, FlowElement::Loss { .. }) {
                self.fail(format!(
                    "branch at {at:#x} without an outcome, followed by {e:?} (not a loss)"
                ));
            }
        }
        match *e {
            FlowElement::Range {
                start,
                last,
                count,
                class,
                taken,
            } => self.range(start, last, count, class, taken),
            FlowElement::Time { .. } | FlowElement::Context { .. } => {
                if let Some(p) = &mut self.prev {
                    p.3 = false;
                }
            }
            _ => self.prev = None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvtrace_isa::{IsaConfig, Xlen};

    /// 0x1000 `beq x0, x0, +8` (to 0x1008), 0x1004 `addi x0, x0, 0`, 0x1008 `addi`, 0x100c
    /// `jal x0, -12` (to 0x1000); encodings as `riscv64-unknown-elf-as` gives them.
    fn program() -> rvtrace_image::Image {
        let code: Vec<u8> = [0x0000_0463u32, 0x0000_0013, 0x0000_0013, 0xff5f_f06f]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let mut image = rvtrace_image::Image::new();
        image
            .load_bytes("t", &crate::minimal_elf(true, 0x1000, &code))
            .unwrap();
        image
    }

    fn check(flow: &[FlowElement]) -> Vec<String> {
        let image = program();
        let isa = IsaConfig::new(Xlen::Rv64);
        let mut c = RangeContract::new(&image, isa);
        for e in flow {
            c.element(e);
        }
        c.errors
    }

    fn range(
        start: u64,
        last: u64,
        count: u64,
        class: CfClass,
        taken: Option<bool>,
    ) -> FlowElement {
        FlowElement::Range {
            start,
            last,
            count,
            class,
            taken,
        }
    }

    #[test]
    fn contract_holds_and_breaks() {
        let time = FlowElement::Time { time: 1 };
        let ok = [
            range(0x1000, 0x1000, 1, CfClass::Branch, Some(true)),
            range(0x1008, 0x100c, 2, CfClass::InferableJump, None),
            range(0x1000, 0x1000, 1, CfClass::Branch, Some(false)),
            time.clone(),
            range(0x1004, 0x1008, 2, CfClass::None, None),
            time.clone(),
            range(0x100c, 0x100c, 1, CfClass::InferableJump, None),
        ];
        assert_eq!(check(&ok), Vec::<String>::new());
        // Each of these breaks one rule.
        let bad: [&[FlowElement]; 7] = [
            // The outcome is not where the next range starts.
            &[
                range(0x1000, 0x1000, 1, CfClass::Branch, Some(false)),
                time.clone(),
                range(0x1008, 0x1008, 1, CfClass::None, None),
            ],
            // Two ranges in a row without a transfer.
            &[
                range(0x1000, 0x1000, 1, CfClass::Branch, Some(false)),
                range(0x1004, 0x1004, 1, CfClass::None, None),
            ],
            // A wrong class.
            &[range(0x1004, 0x1004, 1, CfClass::Branch, Some(false))],
            // No outcome for a branch, and no loss after it.
            &[
                range(0x1000, 0x1000, 1, CfClass::Branch, None),
                FlowElement::End { offset: 0 },
            ],
            // An outcome for what is not a branch.
            &[range(0x1004, 0x1004, 1, CfClass::None, Some(false))],
            // A jump inside a range.
            &[range(0x100c, 0x1000, 2, CfClass::Branch, Some(true))],
            // Counts that do not end at `last`.
            &[range(0x1004, 0x100c, 2, CfClass::InferableJump, None)],
        ];
        for (k, flow) in bad.iter().enumerate() {
            assert!(!check(flow).is_empty(), "case {k}");
        }
        // A branch without an outcome right before a loss is fine.
        let lost = [
            range(0x1000, 0x1000, 1, CfClass::Branch, None),
            FlowElement::Loss {
                offset: 0,
                skipped: None,
                reason: rvtrace_flow::LossReason::Malformed("x".into()),
            },
        ];
        assert_eq!(check(&lost), Vec::<String>::new());
    }
}
