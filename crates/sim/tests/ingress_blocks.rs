//! Block records (`IngressRecorder::block_records`, `rvtrace run --ingress-blocks`), on every test
//! program and on random programs (traps, interrupts, U-mode), for both `itype` widths, with and
//! without `--context asid`:
//! - expanding every block record over the program's instructions (`Record::split_block`) gives
//!   exactly the per-instruction records of the general recorder on the same run;
//! - the blocks are maximal: no record could have gone on with the next one (same privilege and
//!   context, the address after it, the time one step on, and it ended with `itype` 0 and no
//!   trap);
//! - the fast recorder taking each pre-decoded block's instructions as a run (its run cut by
//!   `--max-insns` slices or stop requests), the fast recorder given one instruction at a time,
//!   and the general recorder give the same block records, and the binary format reads them
//!   back unchanged; the runs' records mostly made from a kept summary of the block's, and
//!   mostly copied by the writer (`RecordSink::blocks_again`), with small and large blocks of
//!   the file;
//! - code rewritten over and over (blocks decoded again, the pool of decoded instructions
//!   refilled many times): the fast recorder's runs write the general recorder's bytes (no
//!   summary or bytes of another decoding used).

use rvtrace_image::Image;
use rvtrace_ingress::{IngressHeader, IngressWriter, Itype, Record, RecordSink, WriterSink};
use rvtrace_isa::IsaConfig;
use rvtrace_sim::ingress::IngressRecorder;
use rvtrace_sim::{Config, Hart};
use std::collections::HashMap;

use crate::common::rewriting_loop;
use crate::common::stop_every;
use stop_every::{run_cut, Cut, LIMIT};

/// The binary writer as `rvtrace run --ingress-blocks` drives it ([`WriterSink`]), counting the
/// runs' calls.
struct Counting<'a> {
    sink: WriterSink<'a, Vec<u8>>,
    /// Runs whose records after the first the writer copied.
    copied: u64,
    /// Runs whose records went to `blocks_keyed`.
    keyed: u64,
}

impl RecordSink for &mut Counting<'_> {
    fn record(&mut self, r: &Record) {
        self.sink.record(r);
    }
    fn block(&mut self, r: &Record) {
        self.sink.block(r);
    }
    fn blocks_keyed(&mut self, key: u64, recs: &[Record]) {
        self.keyed += 1;
        self.sink.blocks_keyed(key, recs);
    }
    fn blocks_again(&mut self, first: &Record, m: usize, key: u64) -> bool {
        let done = self.sink.blocks_again(first, m, key);
        self.copied += done as u64;
        done
    }
}

fn hart(image: &Image, cmdline: &str) -> Hart {
    let xlen = image.files()[0].xlen;
    let mut hart = Hart::new(&Config::virt(xlen));
    hart.load(image).unwrap();
    rvtrace_testkit::quiet_semihost(&mut hart, image, cmdline);
    hart
}

/// Length of the instruction at `pc`: as the per-instruction records of the run say (code at
/// virtual addresses the ELF does not map, `vm-*`), else the program's.
fn len_at(seen: &HashMap<u64, u32>, image: &Image, pc: u64) -> Option<u32> {
    match seen.get(&pc) {
        Some(&n) if n != 0 => Some(n),
        _ => image.fetch(pc).map(|w| if w & 3 == 3 { 4 } else { 2 }),
    }
}

/// What the comparison saw.
#[derive(Default)]
struct Seen {
    instructions: u64,
    blocks: u64,
    /// Block records of more than one instruction.
    multi: u64,
    /// Trap records (`iretire` 0) right after a block of more than one instruction.
    trap_after_multi: u64,
    /// Runs whose records the writer copied, runs given to it by key.
    copied: u64,
    keyed: u64,
}

/// The writer's block target: small (many block starts, where the prediction state is reset)
/// or large (runs' records copied).
const TARGETS: [usize; 2] = [977, 1 << 16];

fn compare(
    name: &str,
    image: &Image,
    cmdline: &str,
    (width, context, target): (u8, bool, usize),
    cut: Cut,
) -> Seen {
    let xlen = image.files()[0].xlen;
    let isa = IsaConfig::new(xlen);
    let mut header = IngressHeader::new(xlen, width, "test");
    header.has_time = true;
    header.has_sijump = true;
    header.has_context = context;
    header.multi_retire = true;

    // The fast recorder alone (runs), through the binary writer as `rvtrace run` drives it.
    let mut w = IngressWriter::new(Vec::new(), &header)
        .unwrap()
        .block_target(target);
    let mut err = None;
    let mut hart_a = hart(image, cmdline);
    let satp = hart_a.csr_read(rvtrace_sim::csr::num::SATP).unwrap_or(0);
    let mut seen = Seen::default();
    {
        let mut sink = Counting {
            sink: WriterSink {
                w: &mut w,
                err: &mut err,
            },
            copied: 0,
            keyed: 0,
        };
        let mut a = IngressRecorder::new(isa, width, &mut sink).block_records(true);
        if context {
            a = a.context_from_asid(satp);
        }
        run_cut(&mut hart_a, &mut a, cut);
        a.finish();
        drop(a);
        (seen.copied, seen.keyed) = (sink.copied, sink.keyed);
    }
    assert!(err.is_none(), "{err:?}");
    let (h, alone) = rvtrace_ingress::binary::from_slice(&w.finish().unwrap()).unwrap();
    assert!(h.multi_retire);

    // One instruction at a time: the fast recorder in block mode, the general one in block
    // mode, and the general one per instruction.
    let (mut fast, mut general, mut per_insn) = (Vec::new(), Vec::new(), Vec::new());
    let mut hart_b = hart(image, cmdline);
    {
        let mut a =
            IngressRecorder::new(isa, width, |r: &Record| fast.push(*r)).block_records(true);
        let mut b =
            IngressRecorder::general(isa, width, |r: &Record| general.push(*r)).block_records(true);
        let mut c = IngressRecorder::general(isa, width, |r: &Record| per_insn.push(*r));
        if context {
            a = a.context_from_asid(satp);
            b = b.context_from_asid(satp);
            c = c.context_from_asid(satp);
        }
        hart_b.run(&mut (&mut a, (&mut b, &mut c)), LIMIT);
        a.finish();
        b.finish();
        c.finish();
    }
    assert_eq!(hart_a.instret, hart_b.instret, "{name}");
    let what = format!("{name} width {width} context {context} block target {target}");
    assert!(fast == general, "{what}: fast (per instruction) != general");
    assert!(alone == general, "{what}: fast (runs, {cut:?}) != general");

    // Expanded blocks == the per-instruction records.
    let mut lens = HashMap::new();
    for r in per_insn.iter().filter(|r| r.retires()) {
        let n = 2 * r.iretire;
        // 0: two lengths at one address (code changed), the program decides.
        let e = lens.entry(r.iaddr).or_insert(n);
        if *e != n {
            *e = 0;
        }
    }
    let mut expanded = Vec::with_capacity(per_insn.len());
    let mut prev: Option<(Record, u64)> = None;
    for (i, b) in general.iter().enumerate() {
        let mut first_time = None;
        let n = b
            .split_block(
                |pc| len_at(&lens, image, pc),
                |r| {
                    first_time.get_or_insert(r.time);
                    expanded.push(r)
                },
            )
            .unwrap_or_else(|e| panic!("{what}: record {i} {b}: {e}"));
        seen.instructions += n;
        if b.retires() {
            seen.blocks += 1;
            seen.multi += (n > 1) as u64;
        }
        if let Some((p, pn)) = prev {
            if !b.retires() && pn > 1 {
                seen.trap_after_multi += 1;
            }
            // Maximal: `p` could not have gone on with `b`'s first instruction.
            let could_merge = p.retires()
                && b.retires()
                && p.itype == Itype::None
                && !p.sijump
                && p.next_iaddr() == b.iaddr
                && p.priv_ == b.priv_
                && p.context == b.context
                && b.ctype == 0
                && first_time == Some(p.time.wrapping_add(1));
            assert!(
                !could_merge,
                "{what}: records {} and {i} not merged: {p} / {b}",
                i - 1
            );
        }
        prev = Some((*b, n));
    }
    if expanded != per_insn {
        let k = expanded
            .iter()
            .zip(&per_insn)
            .position(|(a, b)| a != b)
            .unwrap_or(expanded.len().min(per_insn.len()));
        panic!(
            "{what}: expanded blocks differ from the per-instruction records at {k}: {:?} vs {:?}",
            expanded.get(k).map(|r| r.to_string()),
            per_insn.get(k).map(|r| r.to_string())
        );
    }
    seen
}

const CONFIGS: [(u8, bool); 4] = [(4, false), (3, true), (4, true), (3, false)];

/// The options of the `i`-th comparison: every pair of `itype` width and context with each
/// block target.
fn cfg(i: usize) -> (u8, bool, usize) {
    let (width, context) = CONFIGS[i % 4];
    (width, context, TARGETS[i / 4 % 2])
}

#[test]
fn expanded_block_records_are_the_per_instruction_records() {
    let (mut multi, mut blocks, mut insns) = (0, 0, 0);
    let (mut copied, mut keyed) = (0, 0);
    for (i, elf) in rvtrace_testkit::test_programs().into_iter().enumerate() {
        let name = elf.file_name().unwrap().to_string_lossy().to_string();
        let mut image = Image::new();
        image.load_file(&elf).unwrap();
        let cut = if i % 2 == 0 {
            Cut::Slices(997 + i as u64)
        } else {
            Cut::Requests(3 + i as u64 % 5)
        };
        let s = compare(&name, &image, &name, cfg(i), cut);
        assert!(s.blocks > 10, "{name}");
        multi += s.multi;
        blocks += s.blocks;
        insns += s.instructions;
        copied += s.copied;
        keyed += s.keyed;
    }
    // Most runs of several records: copied by the writer.
    assert!(
        copied > 10_000 && copied > 2 * keyed,
        "{copied} copied, {keyed} keyed"
    );
    // Blocks of several instructions are the common case: fewer records than instructions.
    assert!(multi * 2 > blocks, "{multi} of {blocks} blocks");
    assert!(
        insns > 2 * blocks,
        "{insns} instructions in {blocks} blocks"
    );
}

/// Random programs (`rvtrace_testkit::randprog`: traps, timer interrupts inside blocks, U-mode,
/// every kind of call and return; `RVTRACE_RANDOM_SEEDS` runs more).
#[test]
fn expanded_block_records_on_random_programs() {
    use rvtrace_testkit::randprog::{random_program, seeds};
    let mut trap_after_multi = 0;
    for seed in seeds(40) {
        let p = random_program(seed);
        let mut image = Image::new();
        image.load_bytes("prog.elf", &p.elf).unwrap();
        let name = format!("random program {seed} ({:?})", p.shape);
        let cut = Cut::Requests(1 + seed % 7);
        trap_after_multi +=
            compare(&name, &image, "prog.elf", cfg(seed as usize), cut).trap_after_multi;
    }
    // Traps and interrupts taken inside what would have been one block.
    assert!(trap_after_multi > 0);
}

/// Runs `hart` to `n` instructions, with a stop request after every `every`-th run.
fn run_to(hart: &mut Hart, obs: impl rvtrace_sim::Observer, n: u64, every: u64) {
    let mut obs = stop_every::StopEvery {
        inner: obs,
        every,
        seen: 0,
    };
    while hart.instret < n {
        hart.run(&mut obs, n - hart.instret);
    }
}

/// The rewriting loop (`common/rewriting_loop.rs`: the rewritten instruction a not-taken
/// branch, which ends a block record, then an `addi`, which does not): the fast recorder's
/// runs write the general recorder's bytes, for both `itype` widths, with stop requests
/// cutting runs.
#[test]
fn rewritten_blocks_use_no_stale_block_records() {
    use rvtrace_isa::Xlen;
    let code = rewriting_loop::rewriting_loop();
    let n = 300_000;
    for (width, every) in [(4, u64::MAX), (3, u64::MAX), (4, 7)] {
        let make = || rvtrace_testkit::asm::hart_with_code(Config::virt(Xlen::Rv64), &code);
        let isa = IsaConfig::new(Xlen::Rv64);
        let mut h = IngressHeader::new(Xlen::Rv64, width, "test");
        h.has_time = true;
        h.has_sijump = true;
        h.multi_retire = true;
        let mut w = IngressWriter::new(Vec::new(), &h).unwrap();
        let mut err = None;
        let mut hart_a = make();
        let keyed = {
            let mut sink = Counting {
                sink: WriterSink {
                    w: &mut w,
                    err: &mut err,
                },
                copied: 0,
                keyed: 0,
            };
            let mut a = IngressRecorder::new(isa, width, &mut sink).block_records(true);
            run_to(&mut hart_a, &mut a, n, every);
            a.finish();
            drop(a);
            sink.keyed
        };
        assert!(err.is_none(), "{err:?}");
        let mut general = Vec::new();
        let mut hart_b = make();
        {
            let mut b = IngressRecorder::general(isa, width, |r: &Record| general.push(*r))
                .block_records(true);
            run_to(&mut hart_b, &mut b, n, every);
            b.finish();
        }
        assert_eq!(hart_a.instret, hart_b.instret);
        assert!(hart_a.instret >= 100_000, "{}", hart_a.instret);
        let want = rvtrace_ingress::binary::to_vec(&h, &general).unwrap();
        let got = w.finish().unwrap();
        assert!(got == want, "width {width} every {every}: bytes differ");
        // Runs taken by key (each a new decoding, so none copied).
        assert!(keyed > 1000, "width {width} every {every}: {keyed} keyed");
    }
}
