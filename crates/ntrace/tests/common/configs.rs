//! The encoder option sets of the round trip (`roundtrip.rs`), shared with the parallel decode
//! test (`parallel.rs`): every option set decoded in chunks too.

use rvtrace_isa::{IsaConfig, Xlen};
use rvtrace_ntrace::decoder::DecoderConfig;
use rvtrace_ntrace::options::{CallStack, EncoderConfig, Mode, Spec, SyncUnit};

/// One named configuration: N-Trace 1.0 (the default), the `nexrv` ones and those ending in
/// `+rc7` rc7's rules (options.rs `Spec`).
pub fn configs(xlen: Xlen) -> Vec<(&'static str, EncoderConfig)> {
    let base = EncoderConfig::new(xlen);
    let btm = EncoderConfig {
        mode: Mode::Btm,
        ..base
    };
    let cs8 = CallStack::Full { depth: 8 };
    let rc7 = |c: EncoderConfig| EncoderConfig {
        spec: Spec::Rc7,
        ..c
    };
    vec![
        ("btm+rc7", rc7(btm)),
        ("htm+rc7", rc7(base)),
        (
            "htm+cs8+sync+rc7",
            rc7(EncoderConfig {
                call_stack: cs8,
                sync_period: Some((SyncUnit::Messages, 16)),
                ..base
            }),
        ),
        // SYNC=4 (a full I-CNT with HIST bits) keeps the call stack in rc7.
        (
            "htm+cs8+small-icnt+rc7",
            rc7(EncoderConfig {
                call_stack: cs8,
                icnt_bits: 7,
                ..base
            }),
        ),
        (
            "htm+small-counters+rc7",
            rc7(EncoderConfig {
                icnt_bits: 6,
                hist_bits: 5,
                ..base
            }),
        ),
        (
            "btm+sync+rc7",
            rc7(EncoderConfig {
                sync_period: Some((SyncUnit::Messages, 8)),
                ..btm
            }),
        ),
        ("btm", btm),
        ("htm", base),
        (
            "htm+rpt",
            EncoderConfig {
                repeat_history: true,
                ..base
            },
        ),
        (
            "htm+cs8",
            EncoderConfig {
                call_stack: cs8,
                ..base
            },
        ),
        (
            "htm+cs8+rpt",
            EncoderConfig {
                call_stack: cs8,
                repeat_history: true,
                ..base
            },
        ),
        (
            "htm+cs8+pat+rb",
            EncoderConfig {
                call_stack: cs8,
                repeat_history: true,
                hist_patterns: true,
                repeat_branch: true,
                ..base
            },
        ),
        (
            "htm+pat+small-counters",
            EncoderConfig {
                icnt_bits: 6,
                hist_bits: 5,
                repeat_history: true,
                hist_patterns: true,
                max_hrepeat: 3,
                ..base
            },
        ),
        (
            "btm+repeat-branch",
            EncoderConfig {
                repeat_branch: true,
                ..btm
            },
        ),
        (
            "htm+sync+ts",
            EncoderConfig {
                sync_period: Some((SyncUnit::Messages, 16)),
                timestamps: true,
                ..base
            },
        ),
        (
            "htm+sync-halfwords+ts",
            EncoderConfig {
                sync_period: Some((SyncUnit::Halfwords, 1000)),
                timestamps: true,
                ..base
            },
        ),
        (
            "btm+sync-cycles",
            EncoderConfig {
                sync_period: Some((SyncUnit::Cycles, 500)),
                ..btm
            },
        ),
        (
            "htm+counter8",
            EncoderConfig {
                call_stack: CallStack::Counter { max: 8 },
                ..base
            },
        ),
        (
            "htm+partial32x12",
            EncoderConfig {
                call_stack: CallStack::Partial {
                    depth: 32,
                    bits: 12,
                },
                ..base
            },
        ),
        (
            "htm+cs2",
            EncoderConfig {
                call_stack: CallStack::Full { depth: 2 },
                ..base
            },
        ),
        (
            "htm+seqjump+cs8",
            EncoderConfig {
                sequential_jumps: true,
                call_stack: cs8,
                ..base
            },
        ),
        (
            "htm+alljumps",
            EncoderConfig {
                all_jumps: true,
                ..base
            },
        ),
        (
            "btm+alljumps",
            EncoderConfig {
                all_jumps: true,
                ..btm
            },
        ),
        (
            "htm+msb",
            EncoderConfig {
                extend_addr_msb: true,
                ..base
            },
        ),
        (
            "htm+ownership+src",
            EncoderConfig {
                ownership: true,
                codec: rvtrace_ntrace::codec::CodecConfig::new(4),
                src_id: 9,
                ..base
            },
        ),
        // B-TYPE 1 in 1.0 cannot tell an interrupt right before an `ecall` from the `ecall`'s
        // exception (roundtrip.rs `btype_compat_in_1_0`).
        (
            "btm+compat+rc7",
            rc7(EncoderConfig {
                btype_compat: true,
                ..btm
            }),
        ),
        (
            "htm+small-counters",
            EncoderConfig {
                icnt_bits: 6,
                hist_bits: 5,
                ..base
            },
        ),
        (
            "btm+small-icnt",
            EncoderConfig {
                icnt_bits: 5,
                ..btm
            },
        ),
        (
            "htm+small-hist+rpt",
            EncoderConfig {
                hist_bits: 3,
                repeat_history: true,
                ..base
            },
        ),
        ("htm+nexrv", base.nexrv()),
        (
            "btm+nexrv",
            EncoderConfig {
                mode: Mode::Btm,
                ..base.nexrv()
            },
        ),
        (
            "everything",
            EncoderConfig {
                repeat_history: true,
                hist_patterns: true,
                repeat_branch: true,
                call_stack: cs8,
                sequential_jumps: true,
                extend_addr_msb: true,
                sync_period: Some((SyncUnit::Messages, 50)),
                timestamps: true,
                ownership: true,
                codec: rvtrace_ntrace::codec::CodecConfig::new(2),
                src_id: 1,
                ..base
            },
        ),
    ]
}

/// The decoder settings for traces made with `cfg`.
pub fn decoder_config(cfg: &EncoderConfig) -> DecoderConfig {
    let mut d = DecoderConfig::new(IsaConfig::new(cfg.xlen));
    d.codec = cfg.codec;
    d.src = (cfg.codec.src_bits > 0).then_some(cfg.src_id);
    d.extend_addr_msb = cfg.extend_addr_msb;
    d.all_jumps = cfg.all_jumps;
    d.spec = cfg.spec;
    d
}
