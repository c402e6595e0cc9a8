//! Helpers shared by the command-line tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The function symbols (`T`/`t`) of a program by address, as `riscv64-unknown-elf-nm -n` lists
/// them: the independent oracle of the symbolised outputs.
pub struct NmFunctions(Vec<(u64, String)>);

impl NmFunctions {
    /// The table of `elf`; `None` (with a note on stderr) when nm is not installed.
    pub fn of(elf: &Path) -> Option<NmFunctions> {
        let Ok(nm) = Command::new("riscv64-unknown-elf-nm")
            .arg("-n")
            .arg(elf)
            .output()
        else {
            eprintln!("note: riscv64-unknown-elf-nm not found; symbols not checked against it");
            return None;
        };
        Some(NmFunctions(
            String::from_utf8_lossy(&nm.stdout)
                .lines()
                .filter_map(|l| {
                    let mut w = l.split_whitespace();
                    let (a, k, n) = (w.next()?, w.next()?, w.next()?);
                    matches!(k, "T" | "t")
                        .then(|| (u64::from_str_radix(a, 16).unwrap(), n.to_string()))
                })
                .collect(),
        ))
    }

    /// The address of the function `name`.
    pub fn addr_of(&self, name: &str) -> Option<u64> {
        self.0.iter().find(|(_, n)| n == name).map(|&(a, _)| a)
    }

    /// Whether a function is named `name`.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(_, n)| n == name)
    }

    /// Every name of the function `a` falls in (the nearest at or below it; aliases share an
    /// address), and `a`'s offset into it; `None` below the first function.
    pub fn names_at(&self, a: u64) -> Option<(Vec<&str>, u64)> {
        let base = self.0.iter().rev().find(|(b, _)| *b <= a)?.0;
        let names = self.0.iter().filter(|(b, _)| *b == base);
        Some((names.map(|(_, n)| n.as_str()).collect(), a - base))
    }
}

/// A test program's ELF (`programs/elf/NAME.elf`, built by programs/build.sh).
pub fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../programs/elf/{name}.elf"))
}

/// `p` if it is a file; else `None`, with a note on stderr that the test is skipped (the
/// files `scripts/setup.sh` installs).
pub fn installed(p: PathBuf) -> Option<PathBuf> {
    if p.is_file() {
        Some(p)
    } else {
        eprintln!(
            "note: {} absent (scripts/setup.sh installs it); skipped",
            p.display()
        );
        None
    }
}

/// A path as a command-line argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Assert the command succeeded, showing its status and stderr if not.
pub fn ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what}: {:?}\n{}", o.status, stderr(o));
}

/// Run the `rvtrace` binary with `args`.
pub fn rvtrace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .args(args)
        .output()
        .expect("run rvtrace")
}

/// A fresh scratch directory for one test (unique per test: the test harness names each test's
/// thread after the test's path), removed when dropped unless the test failed (then its path is
/// printed so the files can be inspected).
pub fn tmpdir(name: &str) -> TmpDir {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("main").replace("::", "-");
    let d = std::env::temp_dir().join(format!("rvtrace-{}-{test}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

/// A scratch directory owned by one test; see [`tmpdir`].
pub struct TmpDir(PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TmpDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("(scratch files kept in {})", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The command's stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The command's stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The messages of an N-Trace stream, in order: each ends at a byte with MSEO = 11 (N-Trace
/// 3.1; our encoder writes no idle bytes).
pub fn ntrace_messages(b: &[u8]) -> Vec<&[u8]> {
    b.split_inclusive(|x| x & 3 == 3).collect()
}

/// The packets of an encapsulated E-Trace stream with a srcID of fewer than 8 bits and no
/// timestamps: each is its header byte and *length* bytes more (`encapsulation.adoc`).
pub fn etrace_packets(b: &[u8]) -> Vec<&[u8]> {
    let mut v = Vec::new();
    let mut rest = b;
    while let Some(&h) = rest.first() {
        let (p, r) = rest.split_at((1 + (h & 0x1f) as usize).min(rest.len()));
        v.push(p);
        rest = r;
    }
    v
}

/// The harts' messages or packets interleaved unevenly into one trace: round robin, 1 from the
/// first hart, 2 from the second, 3 from the third...
pub fn interleave(harts: Vec<Vec<&[u8]>>) -> Vec<u8> {
    let mut queues: Vec<std::collections::VecDeque<&[u8]>> =
        harts.into_iter().map(Into::into).collect();
    let mut merged = Vec::new();
    while queues.iter().any(|q| !q.is_empty()) {
        for (k, q) in queues.iter_mut().enumerate() {
            for m in q.drain(..q.len().min(k + 1)) {
                merged.extend_from_slice(m);
            }
        }
    }
    merged
}
