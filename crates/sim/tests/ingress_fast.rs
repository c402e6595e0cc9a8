//! The ingress recorder's fast paths write the same bytes as the general path (every record
//! built in full and encoded by `IngressWriter::write`), on every test program and on random
//! programs, for both `itype` widths, with and without `--context asid` (one combination per
//! program, in turn):
//! - the fast recorder alone takes each block's instructions as one run
//!   (`Observer::retire_run`, records handed to `IngressWriter::write_predicted_run`), its run
//!   cut by `--max-insns` stops (the run in slices) or by stop requests;
//!   A run's records from a block (all of them, or all but a last one that takes the full
//!   path) go to `IngressWriter::write_predicted_run_again`, which copies what it wrote for the
//!   same records before (named by `RetiredRun::block_id`, their number and whether the last
//!   went on in the block), else to `IngressWriter::write_predicted_run_keyed`; code rewritten
//!   over and over, so that blocks are decoded again and the pool of decoded instructions is
//!   refilled many times, checks that no bytes of another decoding are copied;
//! - the fast recorder beside the general one (a pair whose other member takes no runs) gets a
//!   `retire` per instruction (`IngressWriter::write_predicted`).

use rvtrace_image::Image;
use rvtrace_ingress::binary::to_vec;
use rvtrace_ingress::{IngressHeader, IngressWriter, Near, Record, RecordSink, RunHead};
use rvtrace_isa::IsaConfig;
use rvtrace_sim::ingress::IngressRecorder;
use rvtrace_sim::{Config, Hart, RunStep};

use crate::common::rewriting_loop;
use crate::common::stop_every;
use rewriting_loop::rewriting_loop;
use stop_every::{run_cut, Cut, LIMIT};

/// The binary writer as `rvtrace run --ingress` drives it.
struct Fast(IngressWriter<Vec<u8>>);

impl RecordSink for &mut Fast {
    fn record(&mut self, r: &Record) {
        self.0.write(r).unwrap();
    }
    fn predicted(&mut self, r: &Record) {
        self.0.write_predicted(r).unwrap();
    }
    fn predicted_run(&mut self, head: &RunHead, n: usize, nears: impl Iterator<Item = Near>) {
        self.0.write_predicted_run(head, n, nears).unwrap();
    }
    fn predicted_run_keyed(
        &mut self,
        head: &RunHead,
        n: usize,
        key: u64,
        ends: (Near, Near),
        nears: impl Iterator<Item = Near>,
    ) {
        self.0
            .write_predicted_run_keyed(head, n, key, ends, nears)
            .unwrap();
    }
    fn predicted_run_again(&mut self, head: &RunHead, n: usize, key: u64) -> bool {
        self.0.write_predicted_run_again(head, n, key).unwrap()
    }
}

fn header(image: &Image, width: u8, context: bool) -> IngressHeader {
    let mut h = IngressHeader::new(image.files()[0].xlen, width, "test");
    h.has_time = true;
    h.has_sijump = true;
    h.has_context = context;
    h
}

fn hart(image: &Image, cmdline: &str) -> Hart {
    let xlen = image.files()[0].xlen;
    let mut hart = Hart::new(&Config::virt(xlen));
    hart.load(image).unwrap();
    rvtrace_testkit::quiet_semihost(&mut hart, image, cmdline);
    hart
}

/// Runs `image` with the fast recorder alone (runs, cut as `cut` says), and with the fast and
/// the general recorder side by side; asserts the three give the same bytes and returns the
/// number of records.
fn compare(name: &str, image: &Image, cfg: Cfg, cut: Cut) -> u64 {
    let Cfg {
        cmdline,
        width,
        context,
        target,
    } = cfg;
    let isa = IsaConfig::new(image.files()[0].xlen);
    let h = header(image, width, context);
    let writer = || {
        Fast(
            IngressWriter::new(Vec::new(), &h)
                .unwrap()
                .block_target(target),
        )
    };

    // The fast recorder alone: block runs.
    let mut alone = writer();
    let mut hart_a = hart(image, cmdline);
    let satp = hart_a.csr_read(rvtrace_sim::csr::num::SATP).unwrap_or(0);
    let alone_records = {
        let mut a = IngressRecorder::new(isa, width, &mut alone);
        if context {
            a = a.context_from_asid(satp);
        }
        run_cut(&mut hart_a, &mut a, cut);
        a.finish();
        a.records
    };

    // The fast recorder per instruction beside the general one.
    let mut fast = writer();
    let mut general = Vec::new();
    let mut hart_b = hart(image, cmdline);
    {
        let mut a = IngressRecorder::new(isa, width, &mut fast);
        let mut b = IngressRecorder::general(isa, width, |r: &Record| general.push(*r));
        if context {
            a = a.context_from_asid(satp);
            b = b.context_from_asid(satp);
        }
        hart_b.run(&mut (&mut a, &mut b), LIMIT);
        a.finish();
        b.finish();
        assert_eq!(a.records, b.records, "{name}");
        assert_eq!(alone_records, b.records, "{name}");
    }
    assert_eq!(hart_a.instret, hart_b.instret, "{name}");
    let per_insn = fast.0.finish().unwrap();
    let runs = alone.0.finish().unwrap();
    let mut w = IngressWriter::new(Vec::new(), &h)
        .unwrap()
        .block_target(target);
    w.write_batch(&general).unwrap();
    let want = w.finish().unwrap();
    // The general path's records, written as `rvtrace run --ingress` always did.
    assert_eq!(
        rvtrace_ingress::binary::from_slice(&want).unwrap().1,
        general
    );
    assert_eq!(
        rvtrace_ingress::binary::from_slice(&to_vec(&h, &general).unwrap())
            .unwrap()
            .1,
        general
    );
    let what = format!("{name} width {width} context {context} block target {target}");
    assert!(per_insn == want, "{what}: per instruction, bytes differ");
    assert!(runs == want, "{what}: runs ({cut:?}), bytes differ");
    general.len() as u64
}

/// The options of one comparison.
#[derive(Clone, Copy)]
struct Cfg<'a> {
    cmdline: &'a str,
    width: u8,
    context: bool,
    /// The writer's block target: small blocks (many block starts, where the prediction state
    /// is reset; runs mostly written record by record) or large ones (runs in one loop).
    target: usize,
}

// Alternate the options between programs (the suite stays fast).
const CONFIGS: [(u8, bool, usize); 4] = [
    (4, false, 61),
    (3, true, 4096),
    (4, true, 61),
    (3, false, 4096),
];

fn cfg(cmdline: &str, i: usize) -> Cfg<'_> {
    let (width, context, target) = CONFIGS[i % 4];
    Cfg {
        cmdline,
        width,
        context,
        target,
    }
}

#[test]
fn fast_path_writes_the_same_bytes_as_the_general_path() {
    let mut fast_records = 0u64;
    for (i, elf) in rvtrace_testkit::test_programs().into_iter().enumerate() {
        let name = elf.file_name().unwrap().to_string_lossy().to_string();
        let mut image = Image::new();
        image.load_file(&elf).unwrap();
        let n = compare(&name, &image, cfg(&name, i), Cut::Slices(997 + i as u64));
        assert!(n > 100, "{name}: {n} records");
        fast_records += n;
    }
    assert!(fast_records > 100_000, "{fast_records}");
}

/// Random programs (`rvtrace_testkit::randprog`: traps, timer interrupts, U-mode, every kind of
/// call and return; `RVTRACE_RANDOM_SEEDS` runs more).
#[test]
fn fast_path_writes_the_same_bytes_on_random_programs() {
    use rvtrace_testkit::randprog::{random_program, seeds};
    for seed in seeds(60) {
        let p = random_program(seed);
        let mut image = Image::new();
        image.load_bytes("prog.elf", &p.elf).unwrap();
        let name = format!("random program {seed} ({:?})", p.shape);
        let cut = Cut::Requests(1 + seed % 7);
        compare(&name, &image, cfg("prog.elf", seed as usize), cut);
    }
}

/// Runs `hart` to `n` instructions, with a stop request after every `every`-th run if asked.
fn run_to(hart: &mut Hart, obs: impl rvtrace_sim::Observer, n: u64, every: Option<u64>) {
    let mut obs = stop_every::StopEvery {
        inner: obs,
        every: every.unwrap_or(u64::MAX),
        seen: 0,
    };
    while hart.instret < n {
        hart.run(&mut obs, n - hart.instret);
    }
}

/// The rewriting loop ([`rewriting_loop`]): the fast recorder alone (keyed runs) writes the
/// general path's bytes, for both `itype` widths and with stop requests cutting runs.
#[test]
fn rewritten_blocks_copy_no_stale_bytes() {
    let code = rewriting_loop();
    let n = 300_000;
    for (width, cut) in [(4, None), (3, None), (4, Some(7u64))] {
        let make =
            || rvtrace_testkit::asm::hart_with_code(Config::virt(rvtrace_isa::Xlen::Rv64), &code);
        let isa = IsaConfig::new(rvtrace_isa::Xlen::Rv64);
        let mut h = IngressHeader::new(rvtrace_isa::Xlen::Rv64, width, "test");
        h.has_time = true;
        h.has_sijump = true;
        let mut fast = Fast(IngressWriter::new(Vec::new(), &h).unwrap());
        let mut hart_a = make();
        {
            let mut a = IngressRecorder::new(isa, width, &mut fast);
            run_to(&mut hart_a, &mut a, n, cut);
            a.finish();
        }
        let mut general = Vec::new();
        let mut hart_b = make();
        {
            let mut b = IngressRecorder::general(isa, width, |r: &Record| general.push(*r));
            run_to(&mut hart_b, &mut b, n, cut);
            b.finish();
        }
        assert_eq!(hart_a.instret, hart_b.instret);
        assert!(hart_a.instret >= 100_000, "{}", hart_a.instret);
        let want = rvtrace_ingress::binary::to_vec(&h, &general).unwrap();
        let got = fast.0.finish().unwrap();
        assert!(got == want, "width {width} cut {cut:?}: bytes differ");
    }
    // A new decoding (a new id) every iteration: the pool was refilled many times (it holds
    // ~2000 of these), its places decoded again with the other instruction.
    let mut check = StepCheck::default();
    rvtrace_testkit::asm::hart_with_code(Config::virt(rvtrace_isa::Xlen::Rv64), &code)
        .run(&mut check, n);
    assert!(check.by_id.len() > 20_000, "{}", check.by_id.len());
}

/// Checks that every run's field-wise steps and fields (`RetiredRun::step`, `RetiredRun::steps`,
/// `RetiredRun::last_step`, `mtime`, `insn`, `priv_`: what the fast recorder reads) say what
/// the run's events say.
/// And that runs with the same `RetiredRun::block_id` have the same steps before their last,
/// and those of one length the same last step but for `taken` (what the recorder's keys rely
/// on).
#[derive(Default)]
struct StepCheck {
    steps: u64,
    /// Steps inside a run whose next pc is not the one after them (a `jal` or a backward
    /// branch the block goes on through).
    taken: u64,
    /// The steps before the last of the longest run seen with each id.
    by_id: std::collections::HashMap<u64, Vec<RunStep>>,
    /// Runs whose id was seen before.
    same_id: u64,
    /// The last step (`taken` false) of the runs seen with each id and length.
    last_by_id: std::collections::HashMap<(u64, usize), RunStep>,
    /// Runs whose id and length were seen before.
    same_last: u64,
}

impl rvtrace_sim::Observer for StepCheck {
    const RETIRE_RUNS: bool = true;
    fn retire_run(&mut self, run: &impl rvtrace_sim::RetiredRun) {
        let n = run.len();
        let want: Vec<RunStep> = (0..n - 1).map(|i| RunStep::of(&run.get(i))).collect();
        let got: Vec<RunStep> = (0..n - 1).map(|i| run.step(i)).collect();
        assert_eq!(got, want);
        let last = run.last_step();
        assert_eq!(last, RunStep::of(&run.get(n - 1)));
        for i in 0..n {
            let ev = run.get(i);
            assert_eq!(
                (run.mtime(i), run.insn(i), run.priv_()),
                (ev.mtime, ev.insn, ev.priv_)
            );
        }
        for from in 0..n - 1 {
            let got: Vec<RunStep> = run.steps(from, n - 1).collect();
            assert_eq!(got, want[from..]);
        }
        self.steps += want.len() as u64;
        self.taken += want.iter().filter(|s| s.taken).count() as u64;
        if let Some(id) = run.block_id() {
            let last = RunStep {
                taken: false,
                ..last
            };
            if let Some(seen) = self.last_by_id.insert((id, n), last) {
                assert_eq!(seen, last, "block id {id:#x}, {n} instructions");
                self.same_last += 1;
            }
            let seen = self.by_id.entry(id).or_default();
            if !seen.is_empty() {
                self.same_id += 1;
            }
            let k = seen.len().min(want.len());
            assert_eq!(seen[..k], want[..k], "block id {id:#x}");
            if want.len() > seen.len() {
                *seen = want;
            }
        }
    }
}

#[test]
fn run_steps_are_the_events() {
    let mut all = StepCheck::default();
    let mut images = Vec::new();
    for elf in rvtrace_testkit::test_programs() {
        let mut image = Image::new();
        image.load_file(&elf).unwrap();
        images.push((
            elf.file_name().unwrap().to_string_lossy().to_string(),
            image,
        ));
    }
    for seed in rvtrace_testkit::randprog::seeds(20) {
        let mut image = Image::new();
        let p = rvtrace_testkit::randprog::random_program(seed);
        image.load_bytes("prog.elf", &p.elf).unwrap();
        images.push(("prog.elf".to_string(), image));
    }
    for (cmdline, image) in &images {
        hart(image, cmdline).run(&mut all, LIMIT);
    }
    assert!(all.steps > 100_000, "{}", all.steps);
    assert!(all.taken > 1000, "{}", all.taken);
    assert!(all.same_id > 10_000, "{}", all.same_id);
    assert!(all.same_last > 10_000, "{}", all.same_last);
}
