//! `encode --dialect sifive` (issue 30 item 4; the rules and their sources are in the crate
//! README, "SiFive dialect", the `encode` column): hand-built vectors the encoder must produce
//! byte for byte, and round trips of hart runs decoded in the dialect.

use rvtrace_flow::FlowElement;
use rvtrace_ingress::pcseq::PcseqReader;
use rvtrace_ingress::Record;
use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_ntrace::codec::{rcode, Body, Dialect};
use rvtrace_ntrace::decoder::{decode, DecoderConfig};
use rvtrace_ntrace::encoder::encode;
use rvtrace_ntrace::options::{CallStack, ConfigError, EncoderConfig, Mode};
use rvtrace_testkit::run_program;
use std::path::Path;

/// A call, a loop branch taken 20 times then not taken, the return, one more instruction
/// (NexRv PCSEQ lines: `C` call, `B`/`BN` branch taken / not taken, `R` return).
fn loop_records() -> Vec<Record> {
    let mut text = String::from("0x80000000,C4\n0x80000100,L4\n");
    text += &"0x80000104,B2\n".repeat(20);
    text += "0x80000104,BN2\n0x80000106,R2\n0x80000004,L4\n";
    PcseqReader::new(text.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

fn sifive(call_stack: CallStack) -> EncoderConfig {
    let mut c = EncoderConfig::new(Xlen::Rv64);
    c.codec.dialect = Dialect::Sifive;
    c.call_stack = call_stack;
    c.sync_period = None;
    c
}

/// ProgTraceSync: TCODE 9 | SYNC 3, I-CNT 0, end of field | F-ADDR 0x40000000 (0x80000000 >> 1)
/// in six MDO records, end of message (N-Trace 7.5; SYNC 3 as SiFive's captures start).
const SYNC_START: [u8; 8] = [0x24, 0x0D, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07];

/// RCODE 8/9 (B.1 of the facts, README S1), implicit return by counting (B.5, S5),
/// CDF=0 without HIST (the captures).
#[test]
fn hand_built_vectors() {
    let recs = loop_records();
    // The call counts 1, so the return is implicit (simple counting: no address compare).
    let (got, _) = encode(sifive(CallStack::Counter { max: 1023 }), &recs);
    let mut want = SYNC_START.to_vec();
    // ResourceFull: TCODE 27 | RCODE 9 (taken run), RDATA low bits 00 | RDATA 20 >> 2 = 5, end
    // of message. HIST took the first 16 taken branches and became a run, 4 more counted, the
    // not-taken branch ended it and starts HIST.
    want.extend([0x6C, 0x24, 0x17]);
    // ProgTraceCorrelation: TCODE 33 | EVCODE 0, CDF 1 | I-CNT 28 (call 2, 2, 21 branches, the
    // return 1, 2 half-words), end of field | HIST 0b10 (stop-bit, not taken), end of message.
    want.extend([0x84, 0x40, 0x71, 0x0B]);
    assert_eq!(got, want);

    // No implicit return: the return is IndirectBranchHist; the trace ends with no HIST left,
    // which SiFive sends as CDF=0.
    let (got, _) = encode(sifive(CallStack::Off), &recs);
    let mut want = SYNC_START.to_vec();
    want.extend([0x6C, 0x24, 0x17]);
    // IndirectBranchHist: TCODE 28 | B-TYPE 0, I-CNT 26 low 4 bits | I-CNT 26 >> 4, end of field
    // | U-ADDR (0x80000004 ^ 0x80000000) >> 1 = 2, end of field | HIST 0b10, end of message.
    want.extend([0x70, 0xA0, 0x05, 0x09, 0x0B]);
    // ProgTraceCorrelation: TCODE 33 | EVCODE 0, CDF 0 | I-CNT 2, end of message.
    want.extend([0x84, 0x00, 0x0B]);
    assert_eq!(got, want);

    // XOR timestamps (B.4, S4): record i at time 0x10F + 5i.
    let timed: Vec<Record> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| Record {
            time: 0x10F + 5 * i as u64,
            ..*r
        })
        .collect();
    let mut c = sifive(CallStack::Counter { max: 1023 });
    c.timestamps = true;
    let (got, _) = encode(c, &timed);
    // ProgTraceSync as above, F-ADDR ending its field, then the absolute TSTAMP 0x10F (record
    // 0's time): MDO 0b001111, 0b000100, end of message.
    let mut want = SYNC_START[..7].to_vec();
    want.extend([0x05, 0x3C, 0x13]);
    // The run, sent with the time of its last branch (record 21, 0x178): TSTAMP 0x178 ^ 0x10F =
    // 0x77 (added, it would be 0x69).
    want.extend([0x6C, 0x24, 0x15, 0xDC, 0x07]);
    // ProgTraceCorrelation at the last record (0x187): TSTAMP 0x187 ^ 0x178 = 0xFF (added,
    // 0x0F): MDO 0b111111, 0b000011, end of message.
    want.extend([0x84, 0x40, 0x71, 0x09, 0xFC, 0x0F]);
    assert_eq!(got, want);
}

/// A run ends at `max_hrepeat` (the counter's width is not public) and at any message but
/// ResourceFull RCODE 0, which SiFive's captures send while a run goes on; a sync clears the
/// call counter (B.5: "a SYNC message ... resets the encoder return stack").
#[test]
fn run_ends_and_counter_clears() {
    let bodies = |cfg: EncoderConfig| {
        let (b, _) = encode(cfg, &loop_records());
        crate::common::messages::bodies(&b, &cfg.codec)
    };
    // (RCODE, RDATA[0]) of the ResourceFull messages.
    let rf = |cfg| -> Vec<(u8, u64)> {
        bodies(cfg)
            .into_iter()
            .filter_map(|b| match b {
                Body::ResourceFull { rcode, rdata0, .. } => Some((rcode, rdata0)),
                _ => None,
            })
            .collect()
    };
    let mut c = sifive(CallStack::Off);
    c.max_hrepeat = 18;
    // 16 + 2 taken make a full run; the last 2 taken start HIST again.
    assert_eq!(rf(c), [(rcode::SIFIVE_TAKEN, 18)]);
    // A narrow I-CNT overflows inside the run: RCODE 0 goes out, the run goes on.
    let mut c = sifive(CallStack::Off);
    c.icnt_bits = 4;
    let narrow = rf(c);
    assert!(narrow.iter().any(|r| r.0 == rcode::ICNT), "{narrow:?}");
    let runs: Vec<_> = narrow.iter().filter(|r| r.0 != rcode::ICNT).collect();
    assert_eq!(runs, [&(rcode::SIFIVE_TAKEN, 20)]);
    // A periodic sync between the call and the return clears the count: the return is sent.
    let mut c = sifive(CallStack::Counter { max: 1023 });
    c.sync_period = Some((rvtrace_ntrace::options::SyncUnit::Halfwords, 10));
    let b = bodies(c);
    assert!(
        b.iter().any(|b| matches!(
            b,
            Body::IndirectBranch { .. } | Body::IndirectBranchHist { .. }
        )),
        "{b:?}"
    );
}

/// What SiFive's decoder cannot read, and stacks that are not simple counting, are refused.
#[test]
fn refused_in_the_dialect() {
    let mut c = sifive(CallStack::Off);
    c.repeat_history = true;
    assert_eq!(c.validate(), Err(ConfigError::SifiveRepeats));
    let c = sifive(CallStack::Full { depth: 8 });
    assert_eq!(c.validate(), Err(ConfigError::SifiveStack));
    let mut c = sifive(CallStack::Counter { max: 8 });
    c.mode = Mode::Btm;
    assert_eq!(c.validate(), Err(ConfigError::SifiveStack));
    let mut c = EncoderConfig::new(Xlen::Rv64);
    c.call_stack = CallStack::Full { depth: 33 };
    assert_eq!(c.validate(), Err(ConfigError::StackTooDeep { depth: 33 }));
}

/// Hart runs of the N-Trace CLI tests' programs (and programs whose returns match their calls,
/// for implicit return), encoded in the dialect with BTM and HTM, with and without timestamps
/// (and Ownership) and implicit return, decode in the dialect to exactly the run's PCs; HTM streams carry runs.
#[test]
fn round_trips() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf");
    let mut runs = 0;
    for (prog, counting) in [
        ("timer-rv64gc", false),
        ("traps-rv32imac", false),
        ("setjmp-rv64gc", false),
        ("recurse-rv64gc", true),
        ("fnptr-rv32imac", true),
        ("heap-rv64gc", true),
    ] {
        let run = run_program(&dir.join(format!("{prog}.elf")), prog, 4);
        let xlen = run.image.files()[0].xlen;
        let mut total_runs = 0;
        for mode in [Mode::Btm, Mode::Htm] {
            for timestamps in [false, true] {
                for stack in [None, Some(1023), Some(2)] {
                    if stack.is_some() && (!counting || mode == Mode::Btm) {
                        continue;
                    }
                    let mut c = EncoderConfig::new(xlen);
                    c.codec.dialect = Dialect::Sifive;
                    c.mode = mode;
                    c.timestamps = timestamps;
                    // Ownership (scontext then hcontext 0 after each sync) with the timestamps.
                    c.ownership = timestamps;
                    c.tstamp_bits = 40;
                    c.call_stack = stack.map_or(CallStack::Off, |max| CallStack::Counter { max });
                    let (bytes, _) = encode(c, &run.records);
                    let mut d = DecoderConfig::new(IsaConfig::new(xlen));
                    d.codec.dialect = Dialect::Sifive;
                    d.tstamp_bits = Some(40);
                    let mut el: Vec<FlowElement> = Vec::new();
                    decode(&run.image, d, &bytes, &mut el);
                    let (pcs, losses) = crate::common::pcs_and_losses(&run.image, &el);
                    let what = format!("{prog} {mode:?} timestamps {timestamps} stack {stack:?}");
                    assert!(losses.is_empty(), "{what}: {losses:?}");
                    assert!(pcs == run.pcs, "{what}");
                    if timestamps {
                        // The XORed times come back as the run's: never backwards, the last
                        // one the last record's.
                        let times = crate::common::times(&el);
                        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{what}");
                        let last = run.records.iter().map(|r| r.time).max();
                        assert_eq!(times.last().copied(), last, "{what}");
                    }
                    total_runs += crate::common::messages::bodies(&bytes, &c.codec)
                        .iter()
                        .filter(|b| matches!(b, Body::ResourceFull { rcode: 8 | 9, .. }))
                        .count();
                    runs += 1;
                }
            }
        }
        assert!(total_runs > 0, "{prog}: no RCODE 8/9 run");
    }
    assert_eq!(runs, 3 * 4 + 3 * 8);
}
