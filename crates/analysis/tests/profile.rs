//! Profiles of real program runs (programs/dwarf, run on the hart model): self counts checked
//! against the retired-PC list, the shadow stack against longjmp and traps, merging, and the
//! exports read back by their own tools' parsers (inferno, serde).

use rvtrace_analysis::export::{self, Unit};
use rvtrace_analysis::{Counter, Profile, Profiler, Symbols};
use rvtrace_decode::ingress::IngressFlow;
use rvtrace_flow::FlowSink;
use rvtrace_isa::IsaConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn dwarf(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../programs/dwarf/{name}.elf"))
}

struct Run {
    run: rvtrace_testkit::ProgramRun,
    syms: Symbols,
    isa: IsaConfig,
}

fn run(name: &str) -> Run {
    let path = dwarf(name);
    let run = rvtrace_testkit::run_program(&path, "prog.elf", 4);
    assert!(
        matches!(run.stop, rvtrace_sim::Stop::Exit(0)),
        "{name}: {:?}",
        run.stop
    );
    let syms = Symbols::load(&path).unwrap();
    let xlen = run.image.files()[0].xlen;
    Run {
        run,
        syms,
        isa: IsaConfig::new(xlen),
    }
}

/// Feeds records to `sink` through the ingress adapter.
fn feed(r: &Run, recs: &[rvtrace_ingress::Record], sink: &mut dyn FlowSink) {
    let mut a = IngressFlow::new(&r.run.image, r.isa, true);
    for rec in recs {
        a.push(rec, sink).unwrap();
    }
    a.finish(sink);
}

fn profile(r: &Run, recs: &[rvtrace_ingress::Record]) -> Profile {
    let mut p = Profiler::new(&r.run.image, &r.syms, r.isa);
    feed(r, recs, &mut p);
    p.profile()
}

/// Self instructions per function = the retired-PC list attributed to function symbols.
fn check_self_counts(r: &Run, p: &Profile) {
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for &pc in &r.run.pcs {
        *want.entry(r.syms.name_at(pc).to_string()).or_default() += 1;
    }
    let got: BTreeMap<String, u64> = p
        .flat()
        .into_iter()
        .filter(|f| f.self_.insns > 0)
        .map(|f| (f.name, f.self_.insns))
        .collect();
    assert_eq!(got, want);
    assert_eq!(p.total().insns, r.run.pcs.len() as u64);
}

#[test]
fn recurse_self_counts_calls_and_depth() {
    let r = run("recurse-rv64gc");
    let p = profile(&r, &r.run.records);
    check_self_counts(&r, &p);
    assert_eq!(p.losses, 0);
    // The call graph counts retired call instructions: count them in the PC list.
    let mut calls: BTreeMap<(String, String), u64> = BTreeMap::new();
    let pcs = &r.run.pcs;
    for w in pcs.windows(2) {
        let info = rvtrace_isa::classify(&r.isa, r.run.image.fetch(w[0]).unwrap());
        use rvtrace_isa::CfClass::*;
        if matches!(info.class, InferableCall | UninferableCall | TableCall) {
            let k = (
                r.syms.name_at(w[0]).to_string(),
                r.syms.name_at(w[1]).to_string(),
            );
            *calls.entry(k).or_default() += 1;
        }
    }
    let got: BTreeMap<(String, String), u64> = p
        .calls
        .iter()
        .filter(|(_, c)| c.calls > 0)
        .map(|(k, c)| (k.clone(), c.calls))
        .collect();
    assert_eq!(got, calls);
    // deep(1500) recurses 1500 times below main: its stacks reach that depth.
    let deepest = p
        .stacks
        .keys()
        .filter(|s| s.last().unwrap() == "deep")
        .map(|s| s.len())
        .max();
    let main_depth = p
        .stacks
        .keys()
        .find(|s| s.last().unwrap() == "main")
        .unwrap()
        .len();
    assert_eq!(
        deepest,
        Some(main_depth + 1501),
        "deep(1500) makes 1501 frames"
    );
    // Every instruction of main runs on one stack: returns came back to it.
    let mains: Vec<_> = p
        .stacks
        .keys()
        .filter(|s| s.last().unwrap() == "main")
        .collect();
    assert_eq!(mains.len(), 1, "{mains:?}");
    // Inclusive of main: from its first instruction to the return into its caller.
    let entry = r
        .syms
        .functions()
        .iter()
        .find(|f| f.name == "main")
        .unwrap()
        .start;
    let first = pcs.iter().position(|&pc| pc == entry).unwrap();
    let caller = r.syms.name_at(pcs[first - 1]);
    let ret = pcs[first..]
        .iter()
        .position(|&pc| r.syms.name_at(pc) == caller)
        .unwrap();
    let main_row = p.flat().into_iter().find(|f| f.name == "main").unwrap();
    assert_eq!(main_row.inclusive.insns, ret as u64);
    assert_eq!(main_row.calls, 1);
}

#[test]
fn longjmp_unwinds_to_the_frame_it_returns_to() {
    let r = run("setjmp-rv64gc");
    let p = profile(&r, &r.run.records);
    check_self_counts(&r, &p);
    // main runs on one stack whatever longjmp did, and nothing stays on top of a longjmp.
    let mains: Vec<_> = p
        .stacks
        .keys()
        .filter(|s| s.last().unwrap() == "main")
        .collect();
    assert_eq!(mains.len(), 1, "{mains:?}");
    for s in p.stacks.keys() {
        if let Some(i) = s.iter().position(|f| f == "longjmp") {
            assert_eq!(i + 1, s.len(), "a frame above longjmp: {s:?}");
        }
        assert!(
            s.len() < 40,
            "stack grows across longjmp: {} frames",
            s.len()
        );
    }
}

#[test]
fn traps_push_the_handler_and_xret_pops_it() {
    let r = run("traps-rv64gc");
    let p = profile(&r, &r.run.records);
    check_self_counts(&r, &p);
    let traps: u64 = p.calls.values().map(|c| c.traps).sum();
    // Traps with a handler: not those the hart serviced in place (semihosting's ebreak).
    let recs = &r.run.records;
    let want = recs
        .windows(2)
        .filter(|w| w[0].is_trap() && w[1].iaddr != w[0].next_iaddr() && w[1].iaddr != w[0].iaddr)
        .count() as u64;
    assert!(want > 0);
    assert_eq!(traps, want, "one trap edge per trap taken");
    let mains: Vec<_> = p
        .stacks
        .keys()
        .filter(|s| s.last().unwrap() == "main")
        .collect();
    assert_eq!(mains.len(), 1, "{mains:?}");
}

/// profile(A + B) = merge(profile(A), profile(B)), for the profile and the counts.
#[test]
fn profiles_and_counts_merge() {
    let r = run("recurse-rv64gc");
    let recs = &r.run.records;
    let k = recs.len() / 3;
    let (a, b) = recs.split_at(k);
    let mut both = Profiler::new(&r.run.image, &r.syms, r.isa);
    feed(&r, a, &mut both);
    feed(&r, b, &mut both);
    let mut merged = profile(&r, a);
    merged.merge(&profile(&r, b));
    assert_eq!(both.profile(), merged);
    assert_eq!(merged.total().insns, recs.len() as u64);

    let mut cb = Counter::new(&r.run.image);
    feed(&r, a, &mut cb);
    feed(&r, b, &mut cb);
    let mut ca = Counter::new(&r.run.image);
    feed(&r, a, &mut ca);
    let mut c2 = Counter::new(&r.run.image);
    feed(&r, b, &mut c2);
    let mut m = ca.finish();
    m.merge(&c2.finish());
    assert_eq!(cb.finish(), m);
}

/// Time: the hart's mtime advances one tick per instruction, so time per stack equals
/// instructions per stack, but for the last range (its end time is not in the trace).
#[test]
fn time_follows_the_time_elements() {
    let r = run("recurse-rv64gc");
    let p = profile(&r, &r.run.records);
    assert!(p.has_time);
    let mut flow: Vec<rvtrace_flow::FlowElement> = Vec::new();
    feed(&r, &r.run.records, &mut flow);
    let last_range = flow
        .iter()
        .rev()
        .find_map(|e| match e {
            rvtrace_flow::FlowElement::Range { count, .. } => Some(*count),
            _ => None,
        })
        .unwrap();
    let t = p.total();
    assert_eq!(t.time, t.insns - last_range);
    let differ: Vec<_> = p.stacks.iter().filter(|(_, w)| w.time != w.insns).collect();
    assert_eq!(differ.len(), 1, "{differ:?}");
}

/// The timeline's samples add up to the profile's totals, instructions and time, also when time
/// is uneven, some `Time` elements are missing and a loss stops time in the middle; there are
/// at most `MAX_SAMPLES` of them, every `period` instructions, their times in order, the first
/// at the first `Time`.
#[test]
fn timeline_weights_are_the_profile_totals_across_a_loss() {
    use rvtrace_flow::{FlowElement, LossReason};
    let r = run("recurse-rv64gc");
    let mut flow: Vec<FlowElement> = Vec::new();
    feed(&r, &r.run.records, &mut flow);
    let mut k = 0u64;
    flow.retain_mut(|e| {
        if let FlowElement::Time { time } = e {
            k += 1;
            *time = *time * 3 + *time / 7; // uneven steps
            return !k.is_multiple_of(5); // and some missing
        }
        true
    });
    let mid = flow.len() / 2
        + flow[flow.len() / 2..]
            .iter()
            .position(|e| matches!(e, FlowElement::Range { .. }))
            .unwrap();
    flow.insert(
        mid,
        FlowElement::Loss {
            offset: 0,
            skipped: None,
            reason: LossReason::Malformed("test".into()),
        },
    );
    let mut pr = Profiler::new(&r.run.image, &r.syms, r.isa).with_timeline();
    for e in &flow {
        pr.element(e);
    }
    let (p, tl) = (pr.profile(), pr.timeline().unwrap());
    assert_eq!(p.losses, 1);
    let total = p.total();
    assert!(total.time > 0 && total.time != total.insns);
    let sum =
        |f: fn(&rvtrace_analysis::timeline::Sample) -> u64| tl.samples.iter().map(f).sum::<u64>();
    assert_eq!(sum(|s| s.weight.insns), total.insns);
    assert_eq!(sum(|s| s.weight.time), total.time);
    assert!(tl.has_time && tl.period > 1);
    assert!(tl.samples.len() <= rvtrace_analysis::timeline::MAX_SAMPLES);
    let first_time = flow.iter().find_map(|e| match e {
        FlowElement::Time { time } => Some(*time),
        _ => None,
    });
    assert_eq!(tl.samples[0].time, first_time);
    for (k, w) in tl.samples.windows(2).enumerate() {
        assert_eq!(w[0].index, k as u64 * tl.period);
        assert!(w[0].time <= w[1].time, "sample {k}: {:?} {:?}", w[0], w[1]);
    }
}

#[test]
fn folded_stacks_read_by_inferno_and_firefox_json_by_serde() {
    let r = run("recurse-rv64gc");
    let p = profile(&r, &r.run.records);
    let folded = p.folded(false);
    // Every line: frames;... count, counts add up to the instructions.
    let sum: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(sum, r.run.pcs.len() as u64);
    let svg = export::flamegraph(&p, Unit::Instructions, "recurse").unwrap();
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.starts_with("<?xml"), "{}", &svg[..100]);
    for f in ["main", "fib", "deep", "hanoi"] {
        assert!(svg.contains(&format!(">{f} (")), "flame graph lacks {f}");
    }
    // Firefox Profiler processed format: the fields the viewer requires, consistent.
    let mut pr = Profiler::new(&r.run.image, &r.syms, r.isa).with_timeline();
    feed(&r, &r.run.records, &mut pr);
    assert_eq!(
        pr.profile(),
        p,
        "the timeline changes nothing of the profile"
    );
    let tl = pr.timeline().unwrap();
    let json = export::firefox(&tl, &r.syms, Unit::Instructions, "recurse").unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["meta"]["preprocessedProfileVersion"], 55);
    assert!(v["meta"]["interval"].as_f64().unwrap() > 0.0);
    let th = &v["threads"][0];
    let samples = &th["samples"];
    let n = samples["length"].as_u64().unwrap() as usize;
    assert!(n <= rvtrace_analysis::timeline::MAX_SAMPLES, "{n} samples");
    assert_eq!(samples["stack"].as_array().unwrap().len(), n);
    let weights: u64 = samples["weight"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_u64().unwrap())
        .sum();
    assert_eq!(weights, r.run.pcs.len() as u64);
    assert_eq!(samples["weightType"], "samples");
    // Samples every `period` instructions, at the records' time (ns).
    assert!(tl.period > 1, "a run this long halves the samples");
    assert!(tl.has_time);
    let mut t = 0.0;
    for (k, d) in samples["timeDeltas"].as_array().unwrap().iter().enumerate() {
        t += d.as_f64().unwrap();
        assert_eq!(tl.samples[k].index, k as u64 * tl.period);
        assert_eq!(Some((t * 1e6).round() as u64), tl.samples[k].time);
    }
    let strings: Vec<&str> = th["stringArray"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    for f in ["main", "fib", "deep"] {
        assert!(strings.contains(&f), "no {f} in the string table");
    }
    // Rebuild every sample's call stack as the viewer does (stackTable prefix/frame ->
    // frameTable func -> funcTable name -> stringArray): stacks of the profile; and each
    // sample's stack is the one the retired PCs give its instruction (its function is the
    // innermost frame's).
    let col = |table: &str, field: &str| -> Vec<Option<u64>> {
        th[table][field]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64())
            .collect()
    };
    let (prefix, frame) = (col("stackTable", "prefix"), col("stackTable", "frame"));
    let (func, name) = (col("frameTable", "func"), col("funcTable", "name"));
    let addr = col("frameTable", "address");
    assert_eq!(
        prefix.len() as u64,
        th["stackTable"]["length"].as_u64().unwrap()
    );
    for (k, st) in samples["stack"].as_array().unwrap().iter().enumerate() {
        let mut names = Vec::new();
        let mut at = st.as_u64();
        let leaf = addr[frame[at.unwrap() as usize].unwrap() as usize].unwrap();
        assert_eq!(leaf, r.run.pcs[k * tl.period as usize], "sample {k}");
        while let Some(i) = at {
            let f = func[frame[i as usize].unwrap() as usize].unwrap();
            names.push(strings[name[f as usize].unwrap() as usize].to_string());
            at = prefix[i as usize];
        }
        names.reverse();
        assert!(p.stacks.contains_key(&names), "{names:?}");
        assert_eq!(names.last().unwrap(), r.syms.name_at(leaf));
    }
}

/// `perf script` text: inferno's `collapse-perf` (the independent reader of perf's text)
/// collapses it to exactly our folded stacks (its process-name frame aside), by instructions and
/// by time; also with a frame in no function (`[unknown]`).
#[test]
fn perf_script_collapses_to_our_folded_stacks() {
    use inferno::collapse::Collapse;
    for name in ["recurse-rv64gc", "setjmp-rv64gc", "traps-rv64gc", "unknown"] {
        let (r, p) = if name == "unknown" {
            // Code outside every function, called from main and calling main.
            let r = run("recurse-rv64gc");
            let mut p = Profile::default();
            let w = |insns, time| rvtrace_analysis::profile::Weight { insns, time };
            for (stack, weight) in [
                (vec!["_start", "main"], w(7, 9)),
                (vec!["_start", "main", "[unknown]"], w(5, 6)),
                (vec!["_start", "main", "[unknown]", "main"], w(3, 4)),
                (vec!["[unknown]"], w(2, 1)),
                (vec!["_start", "fib"], w(11, 0)),
            ] {
                p.stacks
                    .insert(stack.into_iter().map(String::from).collect(), weight);
            }
            (r, p)
        } else {
            let r = run(name);
            let p = profile(&r, &r.run.records);
            (r, p)
        };
        for (unit, period) in [
            (Unit::Instructions, 0),
            (Unit::Time, 0),
            (Unit::Instructions, 100),
        ] {
            let text = export::perf_script(&p, &r.syms, unit, period, "my prog", "prog.elf");
            assert!(
                text.starts_with("my_prog 1/1 [000] 0.000000: "),
                "{text:.80}"
            );
            let mut out = Vec::new();
            inferno::collapse::perf::Folder::from(inferno::collapse::perf::Options::default())
                .collapse(text.as_bytes(), &mut out)
                .unwrap();
            let collapsed: BTreeMap<String, u64> = String::from_utf8(out)
                .unwrap()
                .lines()
                .map(|l| {
                    let (stack, n) = l.rsplit_once(' ').unwrap();
                    let stack = stack.strip_prefix("my_prog;").unwrap();
                    (stack.to_string(), n.parse().unwrap())
                })
                .collect();
            let ours: BTreeMap<String, u64> = p
                .folded(unit == Unit::Time)
                .lines()
                .map(|l| {
                    let (stack, n) = l.rsplit_once(' ').unwrap();
                    (stack.to_string(), n.parse().unwrap())
                })
                .collect();
            assert!(ours.len() > 3, "{name}");
            assert_eq!(collapsed, ours, "{name} {unit:?} {period}");
            // Samples: one per stack, or w/N rounded up with a period N (what a collapser that
            // counts samples, stackcollapse-perf.pl, adds up).
            let samples = text.lines().filter(|l| l.starts_with("my_prog ")).count() as u64;
            let want: u64 = ours
                .values()
                .map(|&w| if period == 0 { 1 } else { w.div_ceil(period) })
                .sum();
            assert_eq!(samples, want, "{name} {unit:?} {period}");
        }
    }
}

/// Tail calls replace the frame: picolibc's `_start` jumps (`j`) to `_cstart`, so `_start` is
/// no caller of anything `_cstart` runs.
#[test]
fn tail_call_replaces_the_frame() {
    let r = run("recurse-rv64gc");
    let p = profile(&r, &r.run.records);
    let e = p.calls[&("_start".to_string(), "_cstart".to_string())];
    assert_eq!((e.calls, e.tail_calls), (0, 1));
    assert!(
        p.stacks.keys().all(|s| s.len() == 1 || s[0] == "_cstart"),
        "a stack under _start"
    );
}

/// Arbitrary flow (ranges anywhere, traps, losses, syncs, time going backwards) never panics,
/// and no instruction is lost: the profile and the counts hold every instruction of every range.
#[test]
fn arbitrary_flow_keeps_every_instruction() {
    use rvtrace_flow::{FlowElement as E, SyncReason};
    let r = run("recurse-rv64gc");
    let text = r.syms.functions().iter().map(|f| f.end).max().unwrap();
    let mut rng = rvtrace_testkit::Rng(0x2545_f491_4f6c_dd1d);
    let mut next = move |n: u64| rng.below(n.max(1));
    for round in 0..20 {
        let mut p = Profiler::new(&r.run.image, &r.syms, r.isa);
        let mut c = Counter::new(&r.run.image);
        let mut want = 0u64;
        for _ in 0..2000 {
            let e = match next(8) {
                0..=3 => {
                    // Mostly inside the program, sometimes anywhere (even backwards).
                    let start = if next(10) == 0 {
                        next(u64::MAX)
                    } else {
                        (0x8000_0000 + next(text - 0x8000_0000)) & !1
                    };
                    let count = 1 + next(40);
                    let last = if next(10) == 0 {
                        next(u64::MAX)
                    } else {
                        start + 2 * (count - 1)
                    };
                    want += count;
                    let class = rvtrace_flow::CfClass::ALL[next(15) as usize];
                    let taken = match next(3) {
                        0 => None,
                        t => Some(t == 1),
                    };
                    E::Range {
                        start,
                        last,
                        count,
                        class,
                        taken,
                    }
                }
                4 => E::Trap {
                    cause: Some(next(16)),
                    interrupt: next(2) == 0,
                    tval: None,
                    epc: Some(0x8000_0000 + next(0x1000)),
                    handler: None,
                },
                5 => E::Time {
                    time: next(1 << 20),
                },
                6 => E::Sync {
                    addr: 0x8000_0000 + next(0x1000),
                    reason: [
                        SyncReason::Start,
                        SyncReason::Periodic,
                        SyncReason::Recovery,
                    ][next(3) as usize],
                },
                _ => {
                    if next(2) == 0 {
                        E::Loss {
                            offset: 0,
                            skipped: None,
                            reason: rvtrace_flow::LossReason::Malformed("x".into()),
                        }
                    } else {
                        E::End { offset: 0 }
                    }
                }
            };
            p.element(&e);
            c.element(&e);
        }
        let prof = p.profile();
        assert_eq!(prof.total().insns, want, "round {round}");
        let counts = c.finish();
        assert_eq!(counts.instructions, want);
        let _ = prof.folded(false);
        let _ = prof.report(10);
        let _ = rvtrace_analysis::autofdo::text(&counts, &r.run.image, 0x8000_0000);
        let _ = rvtrace_analysis::Coverage::new(&counts, &r.run.image, &r.syms, r.isa).lcov("t");
    }
}

/// Random programs (every kind of call and return, co-routine swaps, tail calls, millicode,
/// recursion, traps, timer interrupts, U-mode): the profile and the counts from the ingress
/// records, an N-Trace decode and an E-Trace decode are the same. Functions are the call
/// targets (the programs have no symbols).
#[test]
fn random_programs_same_profile_from_every_source() {
    use rvtrace_analysis::symbols::Function;
    use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
    use rvtrace_etrace::encoder::{Encoder, FrameWriter};
    use rvtrace_flow::FlowElement;
    use rvtrace_testkit::randprog::{random_program, seeds};
    // Instructions per stack and call edges, without time (only the ingress has time).
    let strip = |p: &Profile| {
        let stacks: BTreeMap<Vec<String>, u64> =
            p.stacks.iter().map(|(k, w)| (k.clone(), w.insns)).collect();
        (stacks, p.calls.clone(), p.losses)
    };
    // What the seeds exercised: deepest stack, traps, tail calls.
    let mut seen = (0usize, 0u64, 0u64);
    for seed in seeds(12) {
        let prog = random_program(seed);
        let run = rvtrace_testkit::run_elf_bytes(&prog.elf, 4);
        let image = &run.image;
        let xlen = image.files()[0].xlen;
        let isa = IsaConfig::new(xlen);
        // Call targets: where a record of a call went.
        let mut starts: Vec<u64> = vec![run.records[0].iaddr];
        for w in run.records.windows(2) {
            if matches!(
                w[0].itype,
                rvtrace_ingress::Itype::InferableCall | rvtrace_ingress::Itype::UninferableCall
            ) {
                starts.push(w[1].iaddr);
            }
        }
        starts.sort();
        starts.dedup();
        let funcs = starts
            .iter()
            .enumerate()
            .map(|(k, &s)| Function {
                name: format!("f{k}"),
                start: s,
                end: starts.get(k + 1).copied().unwrap_or(u64::MAX),
            })
            .collect();
        let syms = Symbols::from_functions(funcs);
        let r = Run {
            run: rvtrace_testkit::run_elf_bytes(&prog.elf, 4),
            syms,
            isa,
        };
        let from_ingress = profile(&r, &r.run.records);
        check_self_counts(&r, &from_ingress);
        let depth = from_ingress.stacks.keys().map(Vec::len).max().unwrap_or(0);
        let traps: u64 = from_ingress.calls.values().map(|c| c.traps).sum();
        let tails: u64 = from_ingress.calls.values().map(|c| c.tail_calls).sum();
        seen.0 = seen.0.max(depth);
        seen.1 += traps;
        seen.2 += tails;
        let mut c0 = Counter::new(image);
        feed(&r, &r.run.records, &mut c0);
        let c0 = c0.finish();

        // N-Trace: HTM with a call stack (even seeds), BTM with periodic sync (odd seeds).
        use rvtrace_ntrace::options::{CallStack, EncoderConfig, Mode, SyncUnit};
        let ncfg = if seed % 2 == 0 {
            EncoderConfig {
                call_stack: CallStack::Full { depth: 8 },
                ..EncoderConfig::new(xlen)
            }
        } else {
            EncoderConfig {
                mode: Mode::Btm,
                sync_period: Some((SyncUnit::Messages, 16)),
                ..EncoderConfig::new(xlen)
            }
        };
        let (nbytes, _) = rvtrace_ntrace::encoder::encode(ncfg, &r.run.records);
        // E-Trace: implicit return with a return stack (even seeds); branch prediction, jump
        // target cache and periodic resync (odd seeds).
        let ecfg = TraceConfig::build(&if seed % 2 == 0 {
            ConfigInputs {
                xlen_bits: xlen.bits() as u8,
                itype_width: Some(4),
                implicit_return: true,
                return_stack: Some(16),
                ..Default::default()
            }
        } else {
            ConfigInputs {
                xlen_bits: xlen.bits() as u8,
                itype_width: Some(4),
                branch_prediction: Some(64),
                jump_target_cache: Some(8),
                resync: Some(20),
                ..Default::default()
            }
        })
        .unwrap();
        let mut enc = Encoder::new(&ecfg, FrameWriter::new(Vec::new(), &ecfg)).unwrap();
        for rec in &r.run.records {
            enc.push(rec).unwrap();
        }
        let ebytes = enc.finish().unwrap().into_inner();
        for (what, bytes) in [("ntrace", &nbytes), ("etrace", &ebytes)] {
            let mut p = Profiler::new(image, &r.syms, isa);
            let mut c = Counter::new(image);
            let mut both = |e: &FlowElement| {
                p.element(e);
                c.element(e);
            };
            let st = if what == "ntrace" {
                let cfg = rvtrace_ntrace::decoder::DecoderConfig::new(isa);
                let mut dec = rvtrace_ntrace::decoder::Decoder::new(image, cfg);
                rvtrace_flow::decode_all(&mut dec, bytes, &mut both)
            } else {
                let o = rvtrace_etrace::decoder::DecoderConfig::from_config(&ecfg, isa);
                let mut dec = rvtrace_etrace::decoder::Decoder::new(image, o);
                rvtrace_flow::decode_all(&mut dec, bytes, &mut both)
            };
            assert_eq!(st.losses, 0, "seed {seed} {what}");
            let (got, want) = (strip(&p.profile()), strip(&from_ingress));
            if got != want {
                let diff = |a: &BTreeMap<Vec<String>, u64>, b: &BTreeMap<Vec<String>, u64>| {
                    a.iter()
                        .filter(|(k, v)| b.get(*k) != Some(v))
                        .take(6)
                        .map(|(k, v)| format!("{}={v}", k.join(";")))
                        .collect::<Vec<_>>()
                };
                let calls: Vec<_> = got
                    .1
                    .iter()
                    .filter(|(k, v)| want.1.get(*k) != Some(v))
                    .collect();
                panic!(
                    "seed {seed} {what}: stacks only in the decode {:?}, only in the ingress {:?}; call edges differing {calls:?}; losses {} vs {}",
                    diff(&got.0, &want.0),
                    diff(&want.0, &got.0),
                    got.2,
                    want.2
                );
            }
            assert_eq!(c.finish(), c0, "seed {seed} {what}: counts");
        }
    }
    if seeds(12) == (0..12) {
        assert!(
            seen.0 > 20 && seen.1 > 100 && seen.2 > 0,
            "seeds 0..12 exercised {seen:?}"
        );
    }
}

/// A trap whose epc the flow does not give, right after a taken branch into another function
/// (programs/dwarf/traps.S: `beqz a0, m_leave` at 0x80000634 in `m_common`, as
/// `riscv64-unknown-elf-objdump -d` shows it): the trap was taken in the branch's target
/// function, so that is the caller of the handler.
#[test]
fn trap_after_a_taken_branch_is_taken_at_its_target() {
    use rvtrace_flow::{CfClass, FlowElement as E, SyncReason};
    let r = run("traps-rv64gc");
    assert_eq!(r.syms.name_at(0x8000_0634), "m_common");
    assert_eq!(r.syms.name_at(0x8000_0660), "m_leave");
    for (taken, caller) in [(Some(true), "m_leave"), (Some(false), "m_common")] {
        let mut p = Profiler::new(&r.run.image, &r.syms, r.isa);
        for e in [
            E::Sync {
                addr: 0x8000_0606,
                reason: SyncReason::Start,
            },
            E::Range {
                start: 0x8000_0606,
                last: 0x8000_0634,
                count: 4,
                class: CfClass::Branch,
                taken,
            },
            E::Trap {
                cause: Some(7),
                interrupt: false,
                tval: None,
                epc: None,
                handler: Some(0x8000_0600),
            },
            E::Range {
                start: 0x8000_0600,
                last: 0x8000_0602,
                count: 2,
                class: CfClass::None,
                taken: None,
            },
            E::End { offset: 0 },
        ] {
            p.element(&e);
        }
        let prof = p.profile();
        let traps: Vec<_> = prof
            .calls
            .iter()
            .filter(|(_, c)| c.traps > 0)
            .map(|((a, b), _)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(traps, [(caller, "m_trap_entry")], "taken {taken:?}");
    }
}
