//! The option sets of the round trip (`roundtrip.rs`), shared with the parallel decode test
//! (`parallel.rs`): every option set decoded in chunks too.

use rvtrace_etrace::config::ConfigInputs;

/// The judged option sets (and their flags).
pub fn option_sets() -> Vec<(&'static str, ConfigInputs)> {
    let d = ConfigInputs::default();
    vec![
        ("default", d.clone()),
        (
            "--full-address",
            ConfigInputs {
                full_address: true,
                ..d.clone()
            },
        ),
        (
            "--implicit-return",
            ConfigInputs {
                implicit_return: true,
                ..d.clone()
            },
        ),
        (
            "--implicit-return --return-stack 8",
            ConfigInputs {
                implicit_return: true,
                return_stack: Some(8),
                ..d.clone()
            },
        ),
        (
            "--sijump",
            ConfigInputs {
                sijump: true,
                ..d.clone()
            },
        ),
        (
            "--implicit-exception",
            ConfigInputs {
                implicit_exception: true,
                ..d.clone()
            },
        ),
        (
            "--branch-prediction 64",
            ConfigInputs {
                branch_prediction: Some(64),
                ..d.clone()
            },
        ),
        (
            "--jump-target-cache 16",
            ConfigInputs {
                jump_target_cache: Some(16),
                ..d.clone()
            },
        ),
        (
            "--resync 256 --timestamps",
            ConfigInputs {
                resync: Some(256),
                timestamps: true,
                ..d.clone()
            },
        ),
        (
            "--sijump --implicit-return --return-stack 16 --implicit-exception",
            ConfigInputs {
                sijump: true,
                implicit_return: true,
                return_stack: Some(16),
                implicit_exception: true,
                ..d.clone()
            },
        ),
        (
            "--resync 16 --implicit-return --return-stack 8 --sijump",
            ConfigInputs {
                resync: Some(16),
                implicit_return: true,
                return_stack: Some(8),
                sijump: true,
                ..d.clone()
            },
        ),
        (
            "--resync 32 --branch-prediction 16 --jump-target-cache 4 --full-address",
            ConfigInputs {
                resync: Some(32),
                branch_prediction: Some(16),
                jump_target_cache: Some(4),
                full_address: true,
                ..d.clone()
            },
        ),
        (
            "--branch-prediction 64 --jump-target-cache 16 --implicit-return",
            ConfigInputs {
                branch_prediction: Some(64),
                jump_target_cache: Some(16),
                implicit_return: true,
                ..d.clone()
            },
        ),
    ]
}
