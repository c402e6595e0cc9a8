//! `rvtrace query` (built with `--features query`): SQL over `rvtrace export`'s tables answers
//! the per-function question with `rvtrace profile`'s figures; CSV and errors.
#![cfg(feature = "query")]

use crate::common;

use common::{ok, program, rvtrace, s, stderr, stdout, tmpdir};
use std::collections::BTreeMap;
use std::path::Path;

/// Function -> self instructions, from `rvtrace profile`'s flat profile.
fn profile_self(ing: &Path, e: &Path) -> BTreeMap<String, u64> {
    let o = rvtrace(&["profile", s(ing), "--elf", s(e), "--top", "1000000"]);
    ok(&o, "profile");
    let mut m = BTreeMap::new();
    for l in stdout(&o).lines().skip(2) {
        if l.is_empty() {
            break;
        }
        let f: Vec<&str> = l.split_whitespace().collect();
        let n: u64 = f[0].parse().unwrap();
        if n > 0 {
            m.insert(f.last().unwrap().to_string(), n);
        }
    }
    m
}

/// "Instructions per function per hart" from the flow and from the functions table, in CSV,
/// equal to the profile; the text table holds the same figures.
#[test]
fn per_function_question_equals_profile() {
    for name in ["recurse-rv64gc", "fnptr-rv32imac"] {
        let t = tmpdir(name);
        let e = program(name);
        let ing = t.join("t.ingress");
        ok(&rvtrace(&["run", s(&e), "--ingress", s(&ing)]), "run");
        let dir = t.join("tables");
        ok(
            &rvtrace(&["export", s(&ing), "--elf", s(&e), "-o", s(&dir)]),
            "export",
        );
        let want = profile_self(&ing, &e);
        assert!(want.len() > 3, "{want:?}");
        for sql in [
            "SELECT hart, function, SUM(count) AS insns FROM flow WHERE kind = 'range' \
             GROUP BY hart, function ORDER BY hart, insns DESC",
            "SELECT hart, function, self_insns AS insns FROM functions WHERE self_insns > 0 \
             ORDER BY hart, insns DESC",
        ] {
            let o = rvtrace(&["query", "-d", s(&dir), "--format", "csv", sql]);
            ok(&o, sql);
            let text = stdout(&o);
            let mut lines = text.lines();
            assert_eq!(lines.next(), Some("hart,function,insns"), "{text}");
            let mut got = BTreeMap::new();
            for l in lines {
                let f: Vec<&str> = l.split(',').collect();
                assert_eq!(f.len(), 3, "{l}");
                assert_eq!(f[0], "0", "{l}: one hart");
                got.insert(f[1].to_string(), f[2].parse::<u64>().unwrap());
            }
            assert_eq!(got, want, "{name}: {sql}");
        }
        // The text table: the top function and its count in a bordered row.
        let o = rvtrace(&[
            "query",
            "--table",
            &format!("f={}", s(&dir.join("functions.parquet"))),
            "SELECT function, self_insns FROM f ORDER BY self_insns DESC LIMIT 1",
        ]);
        ok(&o, "query --table");
        let (top, n) = want.iter().max_by_key(|(_, n)| **n).unwrap();
        let text = stdout(&o);
        let row = text
            .lines()
            .find(|l| l.contains(top.as_str()))
            .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>());
        assert_eq!(
            row,
            Some(vec!["", top.as_str(), &n.to_string(), ""]),
            "{text}"
        );
    }
}

/// A bad statement, a missing directory, a malformed --table: errors, not panics.
#[test]
fn query_errors() {
    let t = tmpdir("errors");
    let o = rvtrace(&["query", "-d", s(&t.join("none")), "SELECT 1"]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    let o = rvtrace(&["query", "--table", "x", "SELECT 1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = rvtrace(&["query", "SELECT * FROM nowhere"]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("nowhere"), "{}", stderr(&o));
    let o = rvtrace(&[
        "query",
        "--format",
        "csv",
        "SELECT 1 + 1 AS two, 'a,b' AS s",
    ]);
    ok(&o, "constant query");
    assert_eq!(stdout(&o), "two,s\n2,\"a,b\"\n");
}
