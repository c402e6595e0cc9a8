//! `rvtrace run --tandem`, `rvtrace tandem check` and `rvtrace tandem dump`.

use rvtrace_tandem::codec::{reg, Params, Reader, Record};
use rvtrace_tandem::Meta;
use std::path::{Path, PathBuf};
mod common;
use common::{rvtrace, stderr, stdout, tmpdir};

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
    let meta = Meta::read(
        &trace,
        &Meta {
            params: Params::RV64,
            absent: Default::default(),
        },
    )
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
