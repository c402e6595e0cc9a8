//! `rvtrace run --tandem`, `rvtrace tandem check` and `rvtrace tandem dump`.

use crate::common;
use common::{rvtrace, stderr, stdout, tmpdir};
use rvtrace_tandem::codec::{reg, Params, Reader, Record};
use rvtrace_tandem::Meta;
use std::path::{Path, PathBuf};

fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../programs/elf/{name}.elf"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn run_then_check_rv64_and_rv32() {
    let d = tmpdir("roundtrip");
    for name in ["recurse-rv64gc", "traps-rv32imac", "float-rv64gc"] {
        let elf = program(name);
        let trace = d.join(format!("{name}.tt"));
        let o = rvtrace(&["run", s(&elf), "--tandem", s(&trace)]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let meta = std::fs::read_to_string(d.join(format!("{name}.tt.meta"))).unwrap();
        let xlen = if name.contains("rv32") { 32 } else { 64 };
        assert!(meta.contains(&format!("xlen = {xlen}\n")), "{meta}");
        assert!(meta.contains("absent = \n"), "{meta}");
        let o = rvtrace(&["tandem", "check", s(&trace), "--elf", s(&elf)]);
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains(" 0 mismatches"), "{}", stdout(&o));
    }
}

#[test]
fn a_corrupted_register_write_is_reported_at_its_group() {
    let d = tmpdir("corrupt");
    let elf = program("switch-rv32imac");
    let trace = d.join("t.tt");
    let o = rvtrace(&["run", s(&elf), "--tandem", s(&trace)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut bytes = std::fs::read(&trace).unwrap();
    // Find the 2000th integer register write, counting groups from 1.
    let p = Params::RV32;
    let mut r = Reader::new(&bytes, p, 0);
    let (mut group, mut seen, mut hit) = (0u64, 0, None);
    while let Some(x) = r.next() {
        let (off, rec) = x.unwrap();
        match rec {
            Record::BeginGroup => group += 1,
            Record::FullReg { addr, .. } if reg::is_gpr(addr) && group > 10 => {
                seen += 1;
                if seen == 2000 {
                    hit = Some((group, off));
                    break;
                }
            }
            _ => {}
        }
    }
    let (group, off) = hit.unwrap();
    bytes[off as usize + 3] ^= 0x01;
    std::fs::write(&trace, &bytes).unwrap();
    let o = rvtrace(&["tandem", "check", s(&trace), "--elf", s(&elf)]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with(&format!("mismatch in group {group} ")),
        "{text}"
    );
    assert!(text.contains("expected 0x"), "{text}");
    assert!(text.contains("traced 0x"), "{text}");
    assert!(
        text.contains(" 1 mismatch\n") || text.contains(" 1 mismatch ("),
        "{text}"
    );
}

#[test]
fn partial_trace_options_and_sidecar() {
    let d = tmpdir("partial");
    let elf = program("heap-rv64gc");
    let trace = d.join("p.tt");
    let o = rvtrace(&[
        "run",
        s(&elf),
        "--tandem",
        s(&trace),
        "--tandem-omit",
        "eaddr,csr",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let meta = Meta::read(&trace, &Meta::new(Params::RV64, Default::default()))
        .unwrap()
        .unwrap();
    assert_eq!(meta.absent.to_string(), "csr,eaddr");
    let o = rvtrace(&["tandem", "check", s(&trace), "--elf", s(&elf)]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let o = rvtrace(&[
        "run",
        s(&elf),
        "--tandem",
        s(&trace),
        "--tandem-omit",
        "bogus",
    ]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("unknown trace element"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn dump_prints_groups_and_where_malformed_bytes_start() {
    let d = tmpdir("dump");
    let elf = program("traps-rv64gc");
    let trace = d.join("d.tt");
    let o = rvtrace(&["run", s(&elf), "--tandem", s(&trace)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = rvtrace(&["tandem", "dump", s(&trace)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("group 1 @0: state initialization"),
        "{}",
        &text[..500]
    );
    assert!(text.contains(": ecall\n"));
    assert!(text.contains("    mcause = 0x000000000000000b\n"));
    // Cut the trace inside a record, then put an unknown opcode after a group.
    let bytes = std::fs::read(&trace).unwrap();
    let cut = d.join("cut.tt");
    std::fs::write(&cut, &bytes[..bytes.len() - 3]).unwrap();
    let o = rvtrace(&["tandem", "dump", s(&cut), "--xlen", "64"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("malformed trace at byte offset"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("error: bytes from offset"),
        "{}",
        stdout(&o)
    );
    let bad = d.join("bad.tt");
    let mut b = bytes.clone();
    b.extend([0x01, 0x03, 0x13, 0x00]);
    std::fs::write(&bad, &b).unwrap();
    let o = rvtrace(&["tandem", "check", s(&bad), "--elf", s(&elf), "--xlen", "64"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains(&format!("byte offset {}", bytes.len() + 2)),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("unknown opcode 19"), "{}", stderr(&o));
}

/// The first store of the trace's state initialization whose data is not what `elf` has at its
/// address (read with the ELF loader, independently of the checker): (address, ELF's value,
/// trace's value).
fn first_init_difference(trace: &[u8], p: Params, elf: &Path) -> (u64, u64, u64) {
    let mut image = rvtrace_image::Image::new();
    image.load_file(elf).unwrap();
    let elf_bytes = |a: u64, n: usize| -> u64 {
        let mut v = 0u64;
        for k in 0..n {
            let b = image
                .segments()
                .iter()
                .find(|s| a + k as u64 >= s.paddr && a + (k as u64) < s.paddr + s.data.len() as u64)
                .map(|s| s.data[(a + k as u64 - s.paddr) as usize])
                .unwrap_or(0);
            v |= (b as u64) << (8 * k);
        }
        v
    };
    let mut r = Reader::new(trace, p, 0);
    let mut found: Option<(u64, u64, u64)> = None;
    let mut init = false;
    while let Some(x) = r.next() {
        match x.unwrap().1 {
            Record::BeginGroup => init = false,
            Record::StateInit => init = true,
            Record::Insn16(_) | Record::Insn32(_) => break,
            Record::MemReq {
                addr,
                size,
                data: Some(d),
                ..
            } if init => {
                let e = elf_bytes(addr, 1 << size);
                if e != d && found.is_none_or(|f| addr < f.0) {
                    found = Some((addr, e, d));
                }
            }
            _ => {}
        }
    }
    found.unwrap()
}

#[test]
fn a_trace_of_another_program_is_refused() {
    let d = tmpdir("wrong-program");
    let (a, b) = (program("recurse-rv64gc"), program("loops-rv64gc"));
    let trace = d.join("a.tt");
    let o = rvtrace(&["run", s(&a), "--tandem", s(&trace)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = rvtrace(&["tandem", "check", s(&trace), "--elf", s(&a)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("program: the trace's initial memory is the ELF's"),
        "{}",
        stdout(&o)
    );
    // Against the other program: exit 1, and the first difference with both values.
    let o = rvtrace(&["tandem", "check", s(&trace), "--elf", s(&b)]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let text = stdout(&o);
    let (addr, elf, traced) =
        first_init_difference(&std::fs::read(&trace).unwrap(), Params::RV64, &b);
    assert!(
        text.starts_with("mismatch in group "),
        "the program difference comes first: {text}"
    );
    assert!(
        text.contains(&format!(
            "memory at 0x{addr:x}: expected 0x{elf:016x} (the ELF), traced 0x{traced:016x}"
        )),
        "{text}"
    );
    assert!(text.contains("NOT THE ELF'S"), "{text}");
    assert!(text.contains(&format!("first at 0x{addr:x}")), "{text}");
}

#[test]
fn partial_traces_carry_semihosting_results() {
    let d = tmpdir("omit-gpr");
    let elf = program("stdio-rv32imac");
    let trace = d.join("g.tt");
    let o = rvtrace(&[
        "run",
        s(&elf),
        "--tandem",
        s(&trace),
        "--tandem-omit",
        "gpr,mem",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = rvtrace(&["tandem", "check", s(&trace), "--elf", s(&elf)]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains("note:"), "{}", stdout(&o));
    // A partial trace without them (as another producer may write it): the checker says why
    // it cannot verify the calls.
    let bytes = std::fs::read(&trace).unwrap();
    let p = Params::RV32;
    let recs = rvtrace_tandem::codec::decode_all(&bytes, &p).unwrap();
    let mut out = Vec::new();
    let mut semihosting = false;
    for r in recs {
        match r {
            Record::BeginGroup => semihosting = false,
            Record::Insn32(0x0010_0073) => semihosting = true,
            _ => {}
        }
        let drop = semihosting
            && (matches!(r, Record::FullReg { addr, .. } if reg::is_gpr(addr))
                || matches!(r, Record::MemReq { .. } | Record::MemRsp { .. }));
        if !drop {
            out.push(r);
        }
    }
    let stripped = d.join("s.tt");
    std::fs::write(&stripped, rvtrace_tandem::codec::encode_all(&out, &p)).unwrap();
    std::fs::copy(d.join("g.tt.meta"), d.join("s.tt.meta")).unwrap();
    let o = rvtrace(&["tandem", "check", s(&stripped), "--elf", s(&elf)]);
    let text = stdout(&o);
    assert!(
        text.contains("semihosting calls without their results in the trace"),
        "{text}"
    );
    assert!(text.contains("(protocol 3.2)"), "{text}");
}

#[test]
fn cut_traces_are_truncated_not_interrupts() {
    let d = tmpdir("cut");
    let elf = program("recurse-rv32imac");
    let trace = d.join("t.tt");
    let o = rvtrace(&["run", s(&elf), "--tandem", s(&trace)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bytes = std::fs::read(&trace).unwrap();
    // Every record's offset; a group in the middle. Record sizes depend on the values the
    // program computes (its stack, below the command line's semihosting copy, moves with the
    // ELF's path), so the cuts are found from the records, not fixed offsets.
    let mut r = Reader::new(&bytes, Params::RV32, 0);
    let mut offs: Vec<(usize, bool)> = Vec::new(); // (offset, is a begin group)
    while let Some(x) = r.next() {
        let (off, rec) = x.unwrap();
        offs.push((off as usize, rec == Record::BeginGroup));
    }
    let starts: Vec<usize> = (0..offs.len()).filter(|&i| offs[i].1).collect();
    let b = starts[starts.len() / 2];
    // The first record of the group after its begin group and pc record that is longer than
    // a byte.
    let long = (b + 2..offs.len() - 1)
        .find(|&i| offs[i + 1].0 - offs[i].0 > 1)
        .expect("a record of several bytes");
    let cases = [
        // Cut after the begin group and the pc record: no instruction yet.
        (offs[b + 2].0, "before its end group"),
        // Inside a record.
        (offs[long].0 + 1, "in the middle of a record"),
        // At a group boundary.
        (offs[b].0, "but the program had not ended"),
    ];
    for (cut, what) in cases {
        for sidecar in [true, false] {
            let t = d.join(format!("cut{cut}{sidecar}.tt"));
            std::fs::write(&t, &bytes[..cut]).unwrap();
            if sidecar {
                std::fs::copy(
                    d.join("t.tt.meta"),
                    d.join(format!("cut{cut}{sidecar}.tt.meta")),
                )
                .unwrap();
            }
            let o = rvtrace(&["tandem", "check", s(&t), "--elf", s(&elf), "--xlen", "32"]);
            let text = stdout(&o);
            assert_eq!(o.status.code(), Some(1), "{cut}: {text}{}", stderr(&o));
            assert!(text.contains("TRUNCATED"), "{text}");
            assert!(text.contains(what), "{text}");
            assert!(!text.contains("interrupt"), "{text}");
            assert!(text.contains(" 0 mismatches"), "{text}");
        }
    }
    // A run stopped by --max-insns says so in its sidecar: its trace passes, a cut one not.
    let o = rvtrace(&["run", s(&elf), "--tandem", s(&trace), "--max-insns", "3000"]);
    assert_eq!(o.status.code(), Some(124), "{}", stderr(&o));
    let meta = std::fs::read_to_string(d.join("t.tt.meta")).unwrap();
    assert!(meta.contains("end = stopped\n"), "{meta}");
    let o = rvtrace(&["tandem", "check", s(&trace), "--elf", s(&elf)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("where the run was stopped"),
        "{}",
        stdout(&o)
    );
    // Without its last group.
    let bytes = std::fs::read(&trace).unwrap();
    let mut r = Reader::new(&bytes, Params::RV32, 0);
    let mut last = 0;
    while let Some(x) = r.next() {
        let (off, rec) = x.unwrap();
        if rec == Record::BeginGroup {
            last = off as usize;
        }
    }
    std::fs::write(&trace, &bytes[..last]).unwrap();
    let o = rvtrace(&["tandem", "check", s(&trace), "--elf", s(&elf)]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("the producer wrote 3005"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn malformed_bytes_report_what_was_checked_before() {
    let d = tmpdir("malformed");
    let elf = program("recurse-rv64gc");
    let trace = d.join("t.tt");
    let o = rvtrace(&["run", s(&elf), "--tandem", s(&trace)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut bytes = std::fs::read(&trace).unwrap();
    // The begin group of group 5000 becomes an unknown opcode.
    let mut r = Reader::new(&bytes, Params::RV64, 0);
    let (mut n, mut at) = (0, 0);
    while let Some(x) = r.next() {
        let (off, rec) = x.unwrap();
        if rec == Record::BeginGroup {
            n += 1;
            if n == 5000 {
                at = off as usize;
                break;
            }
        }
    }
    bytes[at] = 0xff;
    std::fs::write(&trace, &bytes).unwrap();
    let o = rvtrace(&["tandem", "check", s(&trace), "--elf", s(&elf)]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(&format!(
            "tandem check: stopped at byte offset {at} (malformed trace), having read 4999 \
             groups: 4994 instructions and traps checked, 5 state initialization; 0 mismatches"
        )),
        "{text}"
    );
    assert!(
        stderr(&o).contains(&format!("malformed trace at byte offset {at}")),
        "{}",
        stderr(&o)
    );
}
