//! The test programs in `programs/elf` (sources in `programs/src`, see `programs/README.md`) on
//! the hart model, checked against QEMU:
//!
//! 1. `rvtrace run elf/<name>.elf --pcs FILE [OPTIONS]` (run in `programs/`; OPTIONS from
//!    `qemu.conf`'s rvtrace column, e.g. `--ctr=1.0`) must exit with status 0 and
//!    print exactly `programs/expected/<name>.out` (made by `programs/qemu-expected.sh`). QEMU
//!    merges the program's streams (picolibc sends stdout and stderr alike through SYS_WRITEC),
//!    so the expectation is compared with rvtrace's stdout followed by its stderr.
//! 2. If the program's QEMU is there, the retired-PC list from QEMU
//!    (`-singlestep -d exec,nochain,int`, see `convert_qemu_log`) for the same path string
//!    must equal rvtrace's `--pcs` list. Without QEMU (or with `RVTRACE_SKIP_QEMU=1`) a note
//!    is printed and only this part is skipped.
//!
//! Which QEMU (Debian's 7.2 on PATH, or QEMU 10 from `rvtrace_testkit::qemu10`), its `-cpu`
//! properties and extra arguments, what the expected file is and whether the PC lists are
//! compared: `programs/qemu.conf`, shared with `programs/qemu-expected.sh` (see [`QemuConf`]).
//!
//! Also the reference team's conformance programs: if `../shared/conformance` (next to the
//! workspace) exists, each `ntrace/<prog>-<arch>/<prog>-<arch>.elf` is run, its output must
//! end in `fails=0` and its PC list must equal the stored `<prog>-<arch>.pcs.txt[.gz]`. Those
//! lists were made with the ELF given to QEMU as `out/<prog>-<arch>.elf` (the path string is
//! the semihosting command line, which picolibc's crt0 splits into argv: 6 instructions per
//! character), so the ELF is copied to `TMP/out/` and run from `TMP` under that name.

use crate::common;

use common::{tmpdir, TmpDir};
use rvtrace_testkit::{
    assert_pcs_eq, conformance_cmdline, conformance_dir, parse_pcs, read_vector,
};
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Generous limit for one rvtrace or QEMU run (the slowest QEMU run takes ~3 s).
const TIME_LIMIT: Duration = Duration::from_secs(300);

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn programs_dir() -> PathBuf {
    workspace_root().join("programs")
}

/// Waits for `child`, killing it after `TIME_LIMIT`.
fn wait_limited(child: &mut Child, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {TIME_LIMIT:?}, killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct RunResult {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// `rvtrace run ELF --pcs PCS OPTIONS` in directory `cwd`, ELF given exactly as `elf`.
fn rvtrace_run(
    cwd: &Path,
    elf: &str,
    pcs: &Path,
    options: &[String],
    scratch: &TmpDir,
) -> RunResult {
    let out_path = scratch.join("rvtrace.stdout");
    let err_path = scratch.join("rvtrace.stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rvtrace"))
        .current_dir(cwd)
        .arg("run")
        .arg(elf)
        .arg("--pcs")
        .arg(pcs)
        .args(options)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("start rvtrace");
    let status = wait_limited(&mut child, &format!("rvtrace run {elf}"));
    RunResult {
        status,
        stdout: fs::read(&out_path).unwrap(),
        stderr: fs::read(&err_path).unwrap(),
    }
}

/// ELF class (32 or 64) and entry point.
fn elf_class_entry(path: &Path) -> (u32, u64) {
    let mut head = [0u8; 32];
    fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        &head[..4],
        b"\x7fELF",
        "{}: not an ELF file",
        path.display()
    );
    match head[4] {
        1 => (
            32,
            u32::from_le_bytes(head[24..28].try_into().unwrap()) as u64,
        ),
        2 => (64, u64::from_le_bytes(head[24..32].try_into().unwrap())),
        c => panic!("{}: bad ELF class {c}", path.display()),
    }
}

/// What `programs/qemu.conf` says about one program (see that file).
#[derive(Debug)]
struct QemuConf {
    /// QEMU 10 (else Debian's 7.2 on PATH).
    qemu10: bool,
    /// CPU properties (`-cpu rvXX,h=false,<props>`: `rvtrace_testkit::qemu_cpu`), if any.
    props: Option<String>,
    /// The expected output: `expected/<name>.out` ("qemu" or "spec"), or none ("none": the
    /// output is checked elsewhere).
    expected: bool,
    /// Compare the PC list with QEMU's.
    pcs: bool,
    /// Options added to `rvtrace run` (the rvtrace column: comma-separated, `-` for none).
    run: Vec<String>,
    /// Further QEMU arguments.
    extra: Vec<String>,
}

/// The `programs/qemu.conf` line of program `prog` (name without the arch), or the defaults.
fn qemu_conf(prog: &str) -> QemuConf {
    let path = programs_dir().join("qemu.conf");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() != Some(&prog) {
            continue;
        }
        assert!(f.len() >= 6, "{}: short line {line:?}", path.display());
        let bad =
            |what: &str| -> ! { panic!("{}: {prog}: bad {what} in {line:?}", path.display()) };
        return QemuConf {
            qemu10: match f[1] {
                "10" => true,
                "7.2" => false,
                _ => bad("QEMU"),
            },
            props: (f[2] != "-").then(|| f[2].to_string()),
            expected: match f[3] {
                "qemu" | "spec" => true,
                "none" => false,
                _ => bad("output"),
            },
            pcs: match f[4] {
                "yes" => true,
                "no" => false,
                _ => bad("pcs"),
            },
            run: match f[5] {
                "-" => Vec::new(),
                opts => opts.split(',').map(str::to_string).collect(),
            },
            extra: f[6..].iter().map(|s| s.to_string()).collect(),
        };
    }
    QemuConf {
        qemu10: false,
        props: None,
        expected: true,
        pcs: true,
        run: Vec::new(),
        extra: Vec::new(),
    }
}

/// The program name of `<prog>-<arch>`.
fn prog_of(name: &str) -> &str {
    name.rsplit_once('-').map_or(name, |(p, _)| p)
}

/// The QEMU binary for this ELF class and configuration, or why there is none.
fn qemu_binary(class: u32, conf: &QemuConf) -> Result<PathBuf, String> {
    if conf.qemu10 {
        rvtrace_testkit::qemu10(class).map_err(|e| e.to_string())
    } else {
        Ok(PathBuf::from(format!("qemu-system-riscv{class}")))
    }
}

/// QEMU's binary and version ("7.2.22") if QEMU for this ELF class can be used; prints a note
/// when not.
fn qemu_version(class: u32, conf: &QemuConf, name: &str) -> Option<(PathBuf, String)> {
    if std::env::var_os("RVTRACE_SKIP_QEMU").is_some_and(|v| !v.is_empty() && v != "0") {
        eprintln!("note: {name}: RVTRACE_SKIP_QEMU is set, QEMU PC comparison skipped");
        return None;
    }
    let bin = match qemu_binary(class, conf) {
        Ok(b) => b,
        Err(why) => {
            eprintln!("note: {name}: QEMU 10 unavailable ({why}), QEMU PC comparison skipped");
            return None;
        }
    };
    let out = Command::new(&bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            // "QEMU emulator version 7.2.22 (Debian ...)"
            let v = text
                .split_whitespace()
                .skip_while(|w| *w != "version")
                .nth(1)
                .unwrap_or("?");
            Some((bin, v.to_string()))
        }
        _ => {
            eprintln!(
                "note: {name}: {} not found, QEMU PC comparison skipped",
                bin.display()
            );
            None
        }
    }
}

/// QEMU's option for one instruction per translation block: `-singlestep` (used to make the
/// reference lists, QEMU 7.2) was replaced by `-accel tcg,one-insn-per-tb=on` in QEMU 8.1.
fn one_insn_per_tb(version: &str) -> &'static [&'static str] {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) >= (8, 1) {
        &["-accel", "tcg,one-insn-per-tb=on"]
    } else {
        &["-singlestep"]
    }
}

/// Converts QEMU's `-d exec,nochain,int` log to the retired-PC list with the library's reader
/// (`rvtrace_ingress::qemu`, which documents every line it accepts and rejects any other): the
/// retired steps from the first execution of the ELF entry point on (QEMU's reset stub dropped).
/// The ELF's code tells an `ebreak`'s breakpoint from a debug trigger's on a load or store.
fn convert_qemu_log(log: impl BufRead, elf: &Path, entry: u64, what: &str) -> Vec<u64> {
    use rvtrace_ingress::pcs::{StartAt, Step, StepSource};
    let mut image = rvtrace_image::Image::new();
    image
        .load_file(elf)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let log = rvtrace_ingress::qemu::QemuLogReader::with_code(log, move |pc| image.fetch(pc));
    let mut r = StartAt::new(log, Some(entry));
    let mut pcs = Vec::new();
    while let Some((_, step)) = r.next_step().unwrap_or_else(|e| panic!("{what}: {e}")) {
        if let Step::Retired { pc, .. } = step {
            pcs.push(pc);
        }
    }
    assert!(
        r.started(),
        "{what}: the entry point {entry:#x} never executed under QEMU"
    );
    pcs
}

/// Runs QEMU on `elf` (given exactly so, in `cwd`) and returns its retired-PC list. The log goes
/// through a pipe (`-D /dev/stdout`; the program's console output is on QEMU's stderr).
#[allow(clippy::too_many_arguments)]
fn qemu_pcs(
    cwd: &Path,
    elf: &str,
    class: u32,
    (bin, version): (&Path, &str),
    conf: &QemuConf,
    entry: u64,
    scratch: &TmpDir,
) -> Vec<u64> {
    let err_path = scratch.join("qemu.stderr");
    let cpu = [
        "-cpu".to_string(),
        rvtrace_testkit::qemu_cpu(class, conf.props.as_deref()),
    ];
    let mut child = Command::new(bin)
        .current_dir(cwd)
        .args(["-M", "virt"])
        .args(&cpu)
        .args([
            "-bios",
            "none",
            "-nographic",
            "-semihosting-config",
            "enable=on,target=native",
        ])
        .args(&conf.extra)
        .args(one_insn_per_tb(version))
        .args([
            "-d",
            "exec,nochain,int",
            "-D",
            "/dev/stdout",
            "-kernel",
            elf,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", bin.display()));
    let stdout = child.stdout.take().unwrap();
    // A watchdog kills QEMU if it runs too long (the reader below then sees EOF).
    let child = Arc::new(Mutex::new(child));
    let dog = {
        let child = Arc::clone(&child);
        std::thread::spawn(move || {
            let start = Instant::now();
            loop {
                std::thread::sleep(Duration::from_millis(50));
                let mut c = child.lock().unwrap();
                if c.try_wait().expect("wait").is_some() {
                    return false;
                }
                if start.elapsed() > TIME_LIMIT {
                    let _ = c.kill();
                    return true;
                }
            }
        })
    };
    let pcs = convert_qemu_log(
        BufReader::with_capacity(1 << 20, stdout),
        &cwd.join(elf),
        entry,
        &format!("QEMU {elf}"),
    );
    let killed = dog.join().unwrap();
    let status = child.lock().unwrap().wait().expect("wait for QEMU");
    let console = String::from_utf8_lossy(&fs::read(&err_path).unwrap()).into_owned();
    assert!(
        !killed,
        "QEMU {elf}: still running after {TIME_LIMIT:?}, killed"
    );
    assert!(
        status.success(),
        "QEMU {elf}: exit status {status}, console output:\n{console}"
    );
    pcs
}

/// One program of `programs/elf`: output and exit status, then the PC list against QEMU.
fn check_program(name: &str) {
    let dir = programs_dir();
    let conf = qemu_conf(prog_of(name));
    let elf = format!("elf/{name}.elf");
    let elf_path = dir.join(&elf);
    assert!(
        elf_path.is_file(),
        "{}: missing (run programs/build.sh)",
        elf_path.display()
    );
    let expected_path = dir.join(format!("expected/{name}.out"));
    let expected = conf.expected.then(|| {
        fs::read(&expected_path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run programs/qemu-expected.sh)",
                expected_path.display()
            )
        })
    });
    let scratch = tmpdir(name);
    let pcs_path = scratch.join("rvtrace.pcs");

    let started = Instant::now();
    let r = rvtrace_run(&dir, &elf, &pcs_path, &conf.run, &scratch);
    let rvtrace_time = started.elapsed();
    let mut output = r.stdout.clone();
    output.extend_from_slice(&r.stderr);
    if !r.status.success() || expected.as_ref().is_some_and(|e| output != *e) {
        let problem = if r.status.success() {
            "the output differs from the expected one".to_string()
        } else {
            format!("{} (want exit status 0)", r.status)
        };
        panic!(
            "{name}: rvtrace run {elf}: {problem}\n--- stdout:\n{}--- stderr:\n{}--- expected (stdout then stderr), {}:\n{}",
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&r.stderr),
            expected_path.display(),
            String::from_utf8_lossy(expected.as_deref().unwrap_or(b"(none: only the exit status is checked here)\n")),
        );
    }
    if !conf.pcs {
        eprintln!("note: {name}: programs/qemu.conf: no PC comparison with QEMU (its output differs from the spec)");
        return;
    }
    let ours = parse_pcs(&fs::read(&pcs_path).unwrap());

    let (class, entry) = elf_class_entry(&elf_path);
    let Some((bin, version)) = qemu_version(class, &conf, name) else {
        return;
    };
    let started = Instant::now();
    let theirs = qemu_pcs(&dir, &elf, class, (&bin, &version), &conf, entry, &scratch);
    eprintln!(
        "{name}: {} PCs; rvtrace {:.2} s, QEMU (logging) {:.2} s",
        theirs.len(),
        rvtrace_time.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert_pcs_eq(name, "rvtrace", &ours, &format!("QEMU {version}"), &theirs);
}

/// Declares one test per program (with the attributes given, e.g. `#[ignore]`) and the list of
/// them.
macro_rules! program_tests {
    ($($(#[$attr:meta])* $test:ident => $name:literal,)*) => {
        $(
            #[test]
            $(#[$attr])*
            fn $test() {
                check_program($name);
            }
        )*
        const PROGRAMS: &[&str] = &[$($name),*];
    };
}

program_tests! {
    recurse_rv64gc => "recurse-rv64gc",
    recurse_rv32imac => "recurse-rv32imac",
    switch_rv64gc => "switch-rv64gc",
    switch_rv32imac => "switch-rv32imac",
    fnptr_rv64gc => "fnptr-rv64gc",
    fnptr_rv32imac => "fnptr-rv32imac",
    loops_rv64gc => "loops-rv64gc",
    loops_rv32imac => "loops-rv32imac",
    setjmp_rv64gc => "setjmp-rv64gc",
    setjmp_rv32imac => "setjmp-rv32imac",
    stdio_rv64gc => "stdio-rv64gc",
    stdio_rv32imac => "stdio-rv32imac",
    heap_rv64gc => "heap-rv64gc",
    heap_rv32imac => "heap-rv32imac",
    float_rv64gc => "float-rv64gc",
    float_rv32imac => "float-rv32imac",
    mixed_rv64gc => "mixed-rv64gc",
    mixed_rv32imac => "mixed-rv32imac",
    nocompress_rv64g => "nocompress-rv64g",
    nocompress_rv32ima => "nocompress-rv32ima",
    traps_rv64gc => "traps-rv64gc",
    traps_rv32imac => "traps-rv32imac",
    timer_rv64gc => "timer-rv64gc",
    timer_rv32imac => "timer-rv32imac",
    sdeleg_rv64gc => "sdeleg-rv64gc",
    sdeleg_rv32imac => "sdeleg-rv32imac",
    csrs_rv64gc => "csrs-rv64gc",
    csrs_rv32imac => "csrs-rv32imac",
    no_h_rv64gc => "no_h-rv64gc",
    no_h_rv32imac => "no_h-rv32imac",
    bitmanip_rv64gc_zba_zbb => "bitmanip-rv64gc_zba_zbb",
    bitmanip_rv32imac_zba_zbb => "bitmanip-rv32imac_zba_zbb",
    zbs_zbc_rv64gc_zbs_zbc => "zbs_zbc-rv64gc_zbs_zbc",
    zbs_zbc_rv32imac_zbs_zbc => "zbs_zbc-rv32imac_zbs_zbc",
    pmu_access_rv64gc => "pmu_access-rv64gc",
    pmu_access_rv32imac => "pmu_access-rv32imac",
    pmu_overflow_rv64gc => "pmu_overflow-rv64gc",
    pmu_overflow_rv32imac => "pmu_overflow-rv32imac",
    pmu_events_rv64gc => "pmu_events-rv64gc",
    pmu_events_rv32imac => "pmu_events-rv32imac",
    pmu_spec_rv64gc => "pmu_spec-rv64gc",
    pmu_spec_rv32imac => "pmu_spec-rv32imac",
    ctr_m_rv64gc => "ctr_m-rv64gc",
    ctr_m_rv32imac => "ctr_m-rv32imac",
    ctr_su_rv64gc => "ctr_su-rv64gc",
    ctr_su_rv32imac => "ctr_su-rv32imac",
    ctr_stateen_rv64gc => "ctr_stateen-rv64gc",
    ctr_stateen_rv32imac => "ctr_stateen-rv32imac",
    sstc_rv64gc => "sstc-rv64gc",
    sstc_rv32imac => "sstc-rv32imac",
    pmp_rv64gc => "pmp-rv64gc",
    pmp_rv32imac => "pmp-rv32imac",
    triggers_rv64gc => "triggers-rv64gc",
    triggers_rv32imac => "triggers-rv32imac",
    vm_rv64gc => "vm-rv64gc",
    vm_rv32imac => "vm-rv32imac",
    plic_rv64gc => "plic-rv64gc",
    plic_rv32imac => "plic-rv32imac",
    virt_io_rv64gc => "virt_io-rv64gc",
    virt_io_rv32imac => "virt_io-rv32imac",
    kernel_rv64gc => "kernel-rv64gc",
    kernel_rv32imac => "kernel-rv32imac",
}

/// Every ELF in programs/elf has a test above and an expected output, and vice versa.
#[test]
fn every_program_is_tested() {
    let dir = programs_dir();
    let mut on_disk: Vec<String> = fs::read_dir(dir.join("elf"))
        .expect("programs/elf")
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".elf").map(str::to_string)
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = PROGRAMS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "programs/elf/*.elf and the program_tests! list differ"
    );
    for name in PROGRAMS {
        let p = dir.join(format!("expected/{name}.out"));
        let want = qemu_conf(prog_of(name)).expected;
        assert_eq!(
            p.is_file(),
            want,
            "{}: {} (programs/qemu.conf)",
            p.display(),
            if want { "missing" } else { "not expected" }
        );
    }
}

/// One conformance program (`ntrace/<name>/`), if the conformance set is present.
fn check_conformance(name: &str) {
    let Some(dir) = conformance_dir() else { return };
    let expected = parse_pcs(&read_vector(&dir, &format!("ntrace/{name}/{name}.pcs.txt")));
    // The stored lists were made with the ELF passed to QEMU as "out/<name>.elf".
    let scratch = tmpdir(&format!("conformance-{name}"));
    let cmdline = conformance_cmdline(name);
    fs::create_dir_all(scratch.join("out")).unwrap();
    fs::copy(
        dir.join(format!("ntrace/{name}/{name}.elf")),
        scratch.join(&cmdline),
    )
    .unwrap();
    let pcs_path = scratch.join("rvtrace.pcs");
    let r = rvtrace_run(&scratch, &cmdline, &pcs_path, &[], &scratch);
    let mut output = String::from_utf8_lossy(&r.stdout).into_owned();
    output += &String::from_utf8_lossy(&r.stderr);
    assert!(
        r.status.success() && output.ends_with("fails=0\n"),
        "{name}: rvtrace run: exit status {}, output:\n{output}",
        r.status
    );
    let ours = parse_pcs(&fs::read(&pcs_path).unwrap());
    assert_pcs_eq(name, "rvtrace", &ours, "conformance", &expected);
}

macro_rules! conformance_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check_conformance($name);
            }
        )*
    };
}

conformance_tests! {
    conformance_crc_rv64gc => "crc-rv64gc",
    conformance_crc_rv32imac => "crc-rv32imac",
    conformance_matrix_rv64gc => "matrix-rv64gc",
    conformance_matrix_rv32imac => "matrix-rv32imac",
    conformance_parser_rv64gc => "parser-rv64gc",
    conformance_parser_rv32imac => "parser-rv32imac",
}

/// A PC difference is reported (first difference, context, lengths).
#[test]
#[should_panic(expected = "PC lists differ at index 3 (line 4): rvtrace has 5 PCs, QEMU has 4")]
fn pc_difference_is_reported() {
    assert_pcs_eq("demo", "rvtrace", &[1, 2, 3, 4, 5], "QEMU", &[1, 2, 3, 7]);
}
