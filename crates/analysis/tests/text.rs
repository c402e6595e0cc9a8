//! The instruction trace and the call trace of real runs: every disassembled line equals GNU
//! objdump's disassembly of its pc (the independent oracle; skipped when objdump is absent), the
//! call trace's moves are the profile's call graph, and the same text comes out of the ingress
//! records, an N-Trace decode and an E-Trace decode of one execution.

use rvtrace_analysis::{CallTrace, Profile, Profiler, StackEvent, StackOp, Symbols, TextTrace};
use rvtrace_decode::ingress::IngressFlow;
use rvtrace_flow::{FlowElement, FlowSink};
use rvtrace_image::Image;
use rvtrace_isa::IsaConfig;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

fn elf(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../programs/elf/{name}.elf"))
}

fn isa_of(image: &Image) -> IsaConfig {
    IsaConfig::new(image.files()[0].xlen)
}

fn feed(image: &Image, recs: &[rvtrace_ingress::Record], sink: &mut dyn FlowSink) {
    let mut a = IngressFlow::new(image, isa_of(image), true);
    for rec in recs {
        a.push(rec, sink).unwrap();
    }
    a.finish(sink);
}

fn text_of(image: &Image, syms: &Symbols, feed_it: impl FnOnce(&mut dyn FlowSink)) -> String {
    let mut t = TextTrace::new(image, syms, isa_of(image), Vec::new());
    feed_it(&mut t);
    String::from_utf8(t.finish().unwrap()).unwrap()
}

/// The instruction lines of a text trace: (pc, disassembly).
fn insn_lines(text: &str) -> Vec<(u64, &str)> {
    text.lines()
        .filter_map(|l| {
            let hex = l.strip_prefix("0x")?;
            let end = hex.find(' ')?;
            let pc = u64::from_str_radix(&hex[..end], 16).ok()?;
            let (_, dis) = l.split_once("  ")?;
            Some((pc, dis))
        })
        .collect()
}

/// What `objdump -d` prints at each address of `path`, without `<symbol>` annotations and `#`
/// comments; `None` when objdump is not installed.
fn objdump(path: &Path) -> Option<HashMap<u64, String>> {
    let out = Command::new("riscv64-unknown-elf-objdump")
        .arg("-d")
        .arg(path)
        .output()
        .ok()?;
    assert!(out.status.success());
    let mut m = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(addr), Some(_hex), Some(asm)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Some(Ok(addr)) = addr
            .trim()
            .strip_suffix(':')
            .map(|a| u64::from_str_radix(a, 16))
        else {
            continue;
        };
        let asm = asm
            .split("\t#")
            .next()
            .unwrap()
            .split(" # ")
            .next()
            .unwrap();
        let asm = asm.find(" <").map_or(asm, |i| &asm[..i]);
        m.insert(addr, asm.trim_end().replacen('\t', " ", 1));
    }
    Some(m)
}

/// Every retired instruction's line of an N-Trace decode: `0x... <symbol+off>  disassembly`, the
/// pcs those the hart retired, the disassembly equal to objdump's at that pc. The programs cover
/// RV32/RV64, compressed code, F/D, Zba/Zbb, CSRs and traps.
#[test]
fn every_line_disassembles_as_objdump() {
    let mut total = 0;
    for name in [
        "recurse-rv64gc",
        "float-rv64gc",
        "bitmanip-rv64gc_zba_zbb",
        "bitmanip-rv32imac_zba_zbb",
        "setjmp-rv32imac",
        "sdeleg-rv64gc",
        "nocompress-rv64g",
    ] {
        let path = elf(name);
        let run = rvtrace_testkit::run_program(&path, "prog.elf", 4);
        let syms = Symbols::load(&path).unwrap();
        let isa = isa_of(&run.image);
        let ncfg = rvtrace_ntrace::options::EncoderConfig::new(isa.xlen);
        let (nbytes, _) = rvtrace_ntrace::encoder::encode(ncfg, &run.records);
        let text = text_of(&run.image, &syms, |s| {
            let cfg = rvtrace_ntrace::decoder::DecoderConfig::new(isa);
            let mut dec = rvtrace_ntrace::decoder::Decoder::new(&run.image, cfg);
            let st = rvtrace_flow::decode_all(&mut dec, &nbytes, s);
            assert_eq!(st.losses, 0, "{name}");
        });
        let lines = insn_lines(&text);
        assert_eq!(lines.len(), run.pcs.len(), "{name}: a line per instruction");
        for ((pc, _), want) in lines.iter().zip(&run.pcs) {
            assert_eq!(pc, want, "{name}: the retired pcs in order");
        }
        // Symbols: the first line is the entry.
        assert!(text.contains("0x80000000 <_start>  "), "{name}");
        let Some(od) = objdump(&path) else {
            eprintln!("skipped the objdump comparison: riscv64-unknown-elf-objdump not installed");
            return;
        };
        let mut seen = BTreeMap::new();
        for (pc, dis) in &lines {
            seen.entry(*pc).or_insert(*dis);
        }
        for (pc, dis) in &seen {
            let want = od
                .get(pc)
                .unwrap_or_else(|| panic!("{name}: objdump has no {pc:#x}"));
            assert_eq!(dis, want, "{name} at {pc:#x}");
        }
        total += seen.len();
    }
    assert!(total > 3000, "{total} distinct instructions checked");
}

/// Counts per (caller, callee) of each kind of stack move.
fn moves(events: &[StackEvent], p: &Profiler) -> BTreeMap<(String, String), [u64; 3]> {
    let mut m: BTreeMap<(String, String), [u64; 3]> = BTreeMap::new();
    for e in events {
        let k = match e.op {
            StackOp::Call => 0,
            StackOp::TailCall => 1,
            StackOp::Trap => 2,
            _ => continue,
        };
        if let (Some(from), Some(to)) = (e.from, e.to) {
            let key = (
                p.function_name(from).to_string(),
                p.function_name(to).to_string(),
            );
            m.entry(key).or_default()[k] += 1;
        }
    }
    m
}

fn call_graph(p: &Profile) -> BTreeMap<(String, String), [u64; 3]> {
    p.calls
        .iter()
        .map(|(k, c)| (k.clone(), [c.calls, c.tail_calls, c.traps]))
        .filter(|(_, v)| v.iter().any(|&n| n > 0))
        .collect()
}

/// The call trace's calls, tail calls and traps are the profile's call-graph edges, one for
/// one; its lines are its moves; every call line is indented four spaces per level.
#[test]
fn call_trace_is_the_call_graph() {
    for name in [
        "recurse-rv64gc",
        "setjmp-rv32imac",
        "sdeleg-rv64gc",
        "fnptr-rv64gc",
    ] {
        let path = elf(name);
        let run = rvtrace_testkit::run_program(&path, "prog.elf", 4);
        let syms = Symbols::load(&path).unwrap();
        let isa = isa_of(&run.image);
        // The moves themselves.
        let mut p = Profiler::new(&run.image, &syms, isa).with_stack_events();
        let mut events = Vec::new();
        let mut sink = |e: &FlowElement| {
            p.element(e);
            p.drain_stack_events(&mut events);
        };
        feed(&run.image, &run.records, &mut sink);
        let graph = call_graph(&p.profile());
        assert_eq!(moves(&events, &p), graph, "{name}");
        assert!(graph.values().map(|v| v[0]).sum::<u64>() > 10, "{name}");
        // The text: one line per move, the depth as indentation.
        let mut ct = CallTrace::new(&run.image, &syms, isa, Vec::new());
        feed(&run.image, &run.records, &mut ct);
        let (out, profile) = ct.finish().unwrap();
        assert_eq!(call_graph(&profile), graph);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("end")).collect();
        assert_eq!(lines.len(), events.len(), "{name}");
        for (l, e) in lines.iter().zip(&events) {
            let word = match e.op {
                StackOp::Call => "call",
                StackOp::TailCall => "tailcall",
                StackOp::Trap => "trap",
                StackOp::Return => "return",
                StackOp::TrapReturn => "trapret",
            };
            let want = format!("{:>12} {word:<9}{}", e.index, " ".repeat(4 * (e.depth - 1)));
            assert!(l.starts_with(&want), "{name}: {l:?} for {e:?}");
            assert!(!l[want.len()..].starts_with(' '), "{name}: {l:?}");
        }
    }
}

/// One execution, three sources: the instruction lines of the text trace and the whole call
/// trace are the same from the ingress records, an N-Trace decode and an E-Trace decode.
#[test]
fn same_text_from_every_source() {
    use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
    use rvtrace_etrace::encoder::{Encoder, FrameWriter};
    use rvtrace_ntrace::options::{CallStack, EncoderConfig};
    for name in ["recurse-rv64gc", "setjmp-rv32imac", "sdeleg-rv64gc"] {
        let path = elf(name);
        let run = rvtrace_testkit::run_program(&path, "prog.elf", 4);
        let syms = Symbols::load(&path).unwrap();
        let image = &run.image;
        let isa = isa_of(image);
        let xlen = isa.xlen;
        let ncfg = EncoderConfig {
            call_stack: CallStack::Full { depth: 8 },
            ..EncoderConfig::new(xlen)
        };
        let (nbytes, _) = rvtrace_ntrace::encoder::encode(ncfg, &run.records);
        let ecfg = TraceConfig::build(&ConfigInputs {
            xlen_bits: xlen.bits() as u8,
            itype_width: Some(4),
            implicit_return: true,
            return_stack: Some(16),
            ..Default::default()
        })
        .unwrap();
        let mut enc = Encoder::new(&ecfg, FrameWriter::new(Vec::new(), &ecfg)).unwrap();
        for rec in &run.records {
            enc.push(rec).unwrap();
        }
        let ebytes = enc.finish().unwrap().into_inner();
        let both = |f: &dyn Fn(&mut dyn FlowSink)| {
            let mut t = TextTrace::new(image, &syms, isa, Vec::new());
            let mut c = CallTrace::new(image, &syms, isa, Vec::new());
            let mut sink = |e: &FlowElement| {
                t.element(e);
                c.element(e);
            };
            f(&mut sink);
            let text = String::from_utf8(t.finish().unwrap()).unwrap();
            let calls = String::from_utf8(c.finish().unwrap().0).unwrap();
            let calls: Vec<String> = calls
                .lines()
                .filter(|l| !l.starts_with("end"))
                .map(str::to_string)
                .collect();
            let insns: Vec<(u64, String)> = insn_lines(&text)
                .into_iter()
                .map(|(pc, d)| (pc, d.to_string()))
                .collect();
            (insns, calls)
        };
        let from_ingress = both(&|s| feed(image, &run.records, s));
        assert_eq!(from_ingress.0.len(), run.pcs.len());
        let from_ntrace = both(&|s| {
            let cfg = rvtrace_ntrace::decoder::DecoderConfig::new(isa);
            let mut dec = rvtrace_ntrace::decoder::Decoder::new(image, cfg);
            let st = rvtrace_flow::decode_all(&mut dec, &nbytes, s);
            assert_eq!(st.losses, 0);
        });
        let from_etrace = both(&|s| {
            let mut sink = |e: &FlowElement| s.element(e);
            let o = rvtrace_etrace::decoder::DecoderConfig::from_config(&ecfg, isa);
            let mut dec = rvtrace_etrace::decoder::Decoder::new(image, o);
            let st = rvtrace_flow::decode_all(&mut dec, &ebytes, &mut sink);
            assert_eq!(st.losses, 0);
        });
        assert!(from_ingress == from_ntrace, "{name}: N-Trace text differs");
        assert!(from_ingress == from_etrace, "{name}: E-Trace text differs");
    }
}

/// Symbols moved by a load bias keep their line tables (issue 31 item 4: a position-independent
/// program or library where it was loaded): at each function's instructions moved by the bias,
/// the line is binutils' `addr2line` line of the linked address (skipped when addr2line is
/// absent); symbols of two files merged give each file's lines at its own addresses.
#[test]
fn moved_symbols_keep_their_lines_at_the_bias() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../programs/system/user_a-rv64gc.elf");
    let bias = 0x4000_0000u64;
    let linked = Symbols::load(&path).unwrap();
    let moved = Symbols::load(&path).unwrap().moved(bias);
    assert!(moved.has_lines());
    let addrs: Vec<u64> = linked
        .functions()
        .iter()
        .flat_map(|f| (f.start..f.end).step_by(2))
        .collect();
    assert!(addrs.len() > 50);
    let o = match Command::new("riscv64-unknown-elf-addr2line")
        .arg("-e")
        .arg(&path)
        .args(addrs.iter().map(|a| format!("{a:#x}")))
        .output()
    {
        Ok(o) => o,
        Err(_) => {
            eprintln!("skipped: riscv64-unknown-elf-addr2line is not installed");
            return;
        }
    };
    let want = String::from_utf8(o.stdout).unwrap();
    let mut checked = 0;
    for (a, w) in addrs.iter().zip(want.lines()) {
        let w = w.split(" (discriminator").next().unwrap();
        let got = moved
            .line_at(a + bias)
            .map(|l| format!("{}:{}", l.file, l.line));
        if w.starts_with("??") || w.ends_with(":0") || w.ends_with(":?") {
            continue;
        }
        assert_eq!(got.as_deref(), Some(w), "{a:#x} + bias");
        assert_eq!(moved.line_at(*a), None, "{a:#x}: no code there once moved");
        checked += 1;
    }
    assert!(checked > 50, "{checked}");
    // With another file's symbols: each file's lines at its own addresses.
    let other = Symbols::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../programs/system/user_b-rv64gc.elf"),
    )
    .unwrap();
    let both = Symbols::merge([moved, other]);
    let b_main = both
        .functions()
        .iter()
        .find(|f| f.name == "user_b_main")
        .unwrap();
    assert!(both
        .line_at(b_main.start)
        .unwrap()
        .file
        .ends_with("user_b.c"));
    let a_main = both
        .functions()
        .iter()
        .find(|f| f.name == "user_a_main")
        .unwrap();
    assert!(a_main.start >= bias);
    assert!(both
        .line_at(a_main.start)
        .unwrap()
        .file
        .ends_with("user_a.c"));
}
