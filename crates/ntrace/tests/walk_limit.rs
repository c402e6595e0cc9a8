//! A walk with HIST bits left that meets a jump to itself (`j .`) never reaches the branch its
//! bits are for: the decoder must report a loss (the walk limit: HIST bits left and no
//! conditional branch for `MAX_WALK_WITHOUT_BRANCH` instructions), not walk on forever. Once it
//! did, for messages with an I-CNT (the limit applied to HIST-only walks alone).
//!
//! Each decode runs in a thread that the test waits for with a generous timeout, so that a lost
//! limit fails the test instead of hanging it (the timeout is a guard, not a measurement).

use rvtrace_flow::{FlowElement, LossReason};
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::codec::{rcode, sync, Addr, Body, CodecConfig, Message};
use rvtrace_ntrace::decoder::{decode, DecoderConfig};
use std::sync::mpsc;
use std::time::Duration;

/// 0x1000 `beq a0,a1,+4` (0x00b50263: taken or not, the next instruction), 0x1004 `j .`
/// (0x0000006f), encodings as `riscv64-unknown-elf-as` gives them.
fn image() -> Image {
    let code: Vec<u8> = [0x00b5_0263u32, 0x0000_006f]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let mut image = Image::new();
    image
        .load_bytes("jself", &rvtrace_testkit::minimal_elf(true, 0x1000, &code))
        .unwrap();
    image
}

/// The bytes of a stream: ProgTraceSync at 0x1000, then `rest`.
fn stream(rest: &[Body]) -> Vec<u8> {
    let start = Body::ProgTraceSync {
        sync: sync::EXIT_DEBUG,
        icnt: 0,
        faddr: Addr::plain(0x1000 >> 1),
    };
    std::iter::once(&start)
        .chain(rest)
        .flat_map(|b| Message::new(*b).encode(&CodecConfig::default()).to_vec())
        .collect()
}

/// What a decode of `bytes` gives: (instructions walked, losses), the decode bounded by a
/// timeout (a hang fails the test).
fn decode_guarded(bytes: Vec<u8>) -> (u64, Vec<LossReason>) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let image = image();
        let mut el: Vec<FlowElement> = Vec::new();
        let st = decode(
            &image,
            DecoderConfig::new(IsaConfig::rv64()),
            &bytes[..],
            &mut el,
        );
        let losses: Vec<LossReason> = el
            .into_iter()
            .filter_map(|e| match e {
                FlowElement::Loss { reason, .. } => Some(reason),
                _ => None,
            })
            .collect();
        assert_eq!(st.errors, losses.len() as u64, "one count of losses");
        tx.send((st.instructions, losses)).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the decode did not end: the walk with HIST bits left ran on at `j .`")
}

/// The decode ends with one loss, a mismatch of the walk with the code that names the
/// missing branch, after the walk limit (1 << 20 instructions without a branch).
fn assert_walk_limit(bytes: Vec<u8>) {
    let (instructions, losses) = decode_guarded(bytes);
    assert_eq!(losses.len(), 1, "{losses:?}");
    match &losses[0] {
        LossReason::Mismatch(t) => assert!(
            t.contains("no direct conditional branch for the HIST bits"),
            "{t}"
        ),
        other => panic!("not a mismatch: {other:?}"),
    }
    // The branch, then `j .` up to the limit: bounded, and not cut short before it.
    assert!(
        (1 << 20..=(1 << 20) + 2).contains(&instructions),
        "{instructions} instructions"
    );
}

/// IndirectBranchHist with two HIST bits: the first is the `beq`'s, the second is left for a
/// branch the walk never meets (it spins at `j .`, its I-CNT spent after one turn).
#[test]
fn indirect_branch_hist_at_jump_to_itself() {
    assert_walk_limit(stream(&[Body::IndirectBranchHist {
        btype: 0,
        icnt: 4,
        uaddr: Addr::plain(0),
        hist: 0b111,
    }]));
}

/// ProgTraceCorrelation (the end of trace) with HIST bits left at `j .`.
#[test]
fn correlation_with_hist_at_jump_to_itself() {
    assert_walk_limit(stream(&[Body::ProgTraceCorrelation {
        evcode: 0,
        cdf: 1,
        icnt: 4,
        hist: Some(0b111),
    }]));
}

/// ResourceFull HIST (a HIST-only walk, no I-CNT) with a bit left at `j .`.
#[test]
fn resource_full_hist_at_jump_to_itself() {
    assert_walk_limit(stream(&[Body::ResourceFull {
        rcode: rcode::HIST,
        rdata0: 0b111,
        rdata1: None,
    }]));
}

/// A valid stream over the same code ends without a loss: the `beq` takes its bit, and the
/// I-CNT covers a few turns of `j .` before an interrupt (B-TYPE 3) leaves it.
#[test]
fn jump_to_itself_with_hist_spent_is_fine() {
    let (instructions, losses) = decode_guarded(stream(&[
        Body::IndirectBranchHist {
            btype: 3,
            icnt: 2 + 2 * 5,
            uaddr: Addr::plain(0),
            hist: 0b11,
        },
        Body::ProgTraceCorrelation {
            evcode: 0,
            cdf: 0,
            icnt: 0,
            hist: None,
        },
    ]));
    assert!(losses.is_empty(), "{losses:?}");
    assert_eq!(instructions, 6);
}
