//! Helpers shared by several test files.

pub mod configs;
pub mod messages;

/// The PCs of the ranges of a decode's elements and the texts of its losses.
pub fn pcs_and_losses(
    image: &rvtrace_image::Image,
    elements: &[rvtrace_flow::FlowElement],
) -> (Vec<u64>, Vec<String>) {
    use rvtrace_flow::FlowElement;
    let mut pcs = Vec::new();
    let mut losses = Vec::new();
    for e in elements {
        match e {
            FlowElement::Range { start, count, .. } => {
                rvtrace_flow::for_each_pc(image, *start, *count, |pc| pcs.push(pc)).unwrap()
            }
            FlowElement::Loss { reason, .. } => losses.push(reason.to_string()),
            _ => {}
        }
    }
    (pcs, losses)
}

/// The times of a decode's [`rvtrace_flow::FlowElement::Time`] elements.
pub fn times(elements: &[rvtrace_flow::FlowElement]) -> Vec<u64> {
    elements
        .iter()
        .filter_map(|e| match e {
            rvtrace_flow::FlowElement::Time { time } => Some(*time),
            _ => None,
        })
        .collect()
}
