//! Helpers shared by the command-line tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Run the `rvtrace` binary with `args`.
pub fn rvtrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args(args)
        .output()
        .expect("run rvtrace")
}

/// A fresh scratch directory for one test (unique per test binary run).
pub fn tmpdir(name: &str) -> PathBuf {
    let exe = std::env::current_exe().ok();
    let bin = exe
        .as_ref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let d = std::env::temp_dir().join(format!("rvtrace-{bin}-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The command's stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The command's stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
