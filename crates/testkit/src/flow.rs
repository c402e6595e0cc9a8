//! Flow sinks for decoder tests (every protocol's decoder honours the same sink contract).

use rvtrace_flow::{FlowElement, FlowSink};

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
