//! The benchmark workload on HTIF (`programs/bench/workload-htif-rv64gc.elf`, built from
//! `workload.c` and `htif_wrap.c`): it runs on the hart model to exit 0 with the semihosting
//! workload's checksum line; and, when Spike is installed (`scripts/setup.sh`; otherwise the Spike
//! parts say so and pass), Spike prints the same output, which includes the count of instructions
//! retired from the program's first constructor to its first output, and retires the same first
//! 100,000 instruction addresses.

use rvtrace_image::Image;
use rvtrace_sim::{Config, Hart, Observer, Retired, Stop};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

fn bench_elf(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../programs/bench")
        .join(name)
}

/// The hart's console (HTIF and UART) or semihosting output, kept.
#[derive(Clone, Default)]
struct Console(Arc<Mutex<Vec<u8>>>);

impl Write for Console {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every retired instruction address.
struct Pcs(Vec<u64>);

impl Observer for Pcs {
    fn retire(&mut self, ev: &Retired) {
        self.0.push(ev.pc);
    }
}

/// Run `name` (semihosting when `semihost`) on the hart with observer `obs` for at most `max`
/// instructions: how it stopped and its output.
fn run_hart<O: Observer>(name: &str, semihost: bool, obs: &mut O, max: u64) -> (Stop, String) {
    let mut image = Image::new();
    image.load_file(&bench_elf(name)).unwrap();
    let mut h = Hart::new(&Config::virt(image.files()[0].xlen));
    h.load(&image).unwrap();
    let console = Console::default();
    if semihost {
        rvtrace_testkit::semihost_with_console(&mut h, &image, name, console.clone());
    } else {
        h.bus.console = Box::new(console.clone());
    }
    let stop = h.run(obs, max);
    let out = String::from_utf8(console.0.lock().unwrap().clone()).unwrap();
    (stop, out)
}

/// The HTIF workload's output on the hart, after checking that it exits 0 and prints the
/// semihosting workload's checksum line and then its instruction count line.
fn hart_output() -> String {
    let (stop, semihosted) = run_hart("workload-rv64gc.elf", true, &mut (), u64::MAX);
    assert_eq!(stop, Stop::Exit(0), "semihosting workload: {semihosted}");
    assert!(
        semihosted.starts_with("workload checksum "),
        "semihosting workload printed {semihosted:?}"
    );
    let (stop, out) = run_hart("workload-htif-rv64gc.elf", false, &mut (), u64::MAX);
    assert_eq!(stop, Stop::Exit(0), "HTIF workload: {out}");
    let mut lines = out.lines();
    assert_eq!(lines.next(), semihosted.lines().next(), "checksum line");
    let count = lines.next().and_then(|l| {
        l.strip_prefix("instructions to first output ")?
            .parse::<u64>()
            .ok()
    });
    assert!(count.is_some_and(|c| c > 1_000_000), "count line: {out:?}");
    assert_eq!(lines.next(), None, "{out:?}");
    out
}

#[test]
fn htif_workload_on_hart() {
    hart_output();
}

/// Spike with `args`, its output, killed (and the test failed) if it runs longer than 5 minutes:
/// a hart that goes wrong can spin for ever.
fn run_spike(spike: &Path, args: &[&str]) -> std::process::Output {
    let mut child = Command::new(spike)
        .args(args)
        .arg(bench_elf("workload-htif-rv64gc.elf"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read both pipes on their own threads so a full pipe cannot stop Spike.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).map(|_| v)
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).map(|_| v)
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed().as_secs() > 300 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("spike {args:?} still running after 5 minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: out.join().unwrap().unwrap(),
        stderr: err.join().unwrap().unwrap(),
    }
}

fn spike_or_skip(what: &str) -> Option<PathBuf> {
    match rvtrace_testkit::spike() {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("note: {e}; {what} skipped");
            None
        }
    }
}

/// Spike's output (checksum and instruction count lines) and exit status equal the hart's.
#[test]
fn htif_workload_spike_same_output() {
    let Some(spike) = spike_or_skip("Spike run of the HTIF workload") else {
        return;
    };
    let ours = hart_output();
    let o = run_spike(&spike, &["--isa=rv64gc"]);
    assert!(
        o.status.success(),
        "spike: {:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), ours);
}

/// The first 100,000 instruction addresses from Spike's `-l` log (its boot ROM below the
/// program left out) equal the hart's.
#[test]
fn htif_workload_spike_same_pcs() {
    let Some(spike) = spike_or_skip("Spike PC comparison") else {
        return;
    };
    const N: usize = 100_000;
    // Spike's boot ROM runs 5 instructions at 0x1000 before jumping to the entry.
    let o = run_spike(
        &spike,
        &["--isa=rv64gc", "-l", &format!("--instructions={}", N + 5)],
    );
    assert!(o.status.success(), "spike: {:?}", o.status);
    // "core   0: 0x0000000080000000 (0x00400117) auipc   sp, 0x400"
    let theirs: Vec<u64> = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter_map(|l| {
            let hex = l.split_whitespace().nth(2)?.strip_prefix("0x")?;
            u64::from_str_radix(hex, 16).ok()
        })
        .filter(|&pc| pc >= 0x8000_0000)
        .collect();
    assert_eq!(theirs.len(), N, "Spike's log has {} PCs", theirs.len());
    let mut ours = Pcs(Vec::with_capacity(N));
    let (stop, _) = run_hart("workload-htif-rv64gc.elf", false, &mut ours, N as u64);
    assert!(matches!(stop, Stop::InsnLimit), "{stop:?}");
    rvtrace_testkit::assert_pcs_eq("workload-htif-rv64gc", "spike", &theirs, "hart", &ours.0);
}
