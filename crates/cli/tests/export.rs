//! `rvtrace export`: the Parquet tables of a run and of its N-Trace and E-Trace decodes.
//! `functions` equals `rvtrace profile`'s flat profile, `flow`'s ranges add up to the same self
//! instructions per function, `branches` equals the outcomes the hart recorded (`ingress dump`),
//! and Spark (local mode) computes the same per-function profile from the files, with pyarrow
//! checking the schema (skipped with a message when PySpark or Java is absent;
//! `scripts/setup.sh` installs them).

use crate::common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use common::{ok, program, rvtrace, s, stderr, stdout, tmpdir};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every row of a Parquet file, read with the parquet crate's Arrow reader.
pub(crate) fn read(path: &Path) -> Vec<RecordBatch> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

pub(crate) fn u64s(b: &RecordBatch, col: &str) -> Vec<Option<u64>> {
    let a = b.column_by_name(col).unwrap().as_primitive::<UInt64Type>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i)))
        .collect()
}

pub(crate) fn strs(b: &RecordBatch, col: &str) -> Vec<Option<String>> {
    let c = b.column_by_name(col).unwrap();
    if let Some(d) = c.as_dictionary_opt::<Int32Type>() {
        let v = d.values().as_string::<i32>();
        return (0..d.len())
            .map(|i| {
                d.is_valid(i)
                    .then(|| v.value(d.keys().value(i) as usize).to_string())
            })
            .collect();
    }
    let a = c.as_string::<i32>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i).to_string()))
        .collect()
}

fn harts(b: &RecordBatch) -> Vec<u32> {
    b.column_by_name("hart")
        .unwrap()
        .as_primitive::<UInt32Type>()
        .values()
        .to_vec()
}

/// Function -> (self, total, calls).
type Flat = BTreeMap<String, (u64, u64, u64)>;

/// The flat profile `rvtrace profile` prints (all of it).
fn profile(args: &[&str]) -> Flat {
    let mut a = vec!["profile", "--top", "1000000"];
    a.extend(args);
    let o = rvtrace(&a);
    ok(&o, &format!("profile {args:?}"));
    let text = stdout(&o);
    let mut m = Flat::new();
    for l in text.lines().skip(2) {
        if l.is_empty() {
            break;
        }
        let f: Vec<&str> = l.split_whitespace().collect();
        let n = |i: usize| f[i].parse::<u64>().unwrap();
        m.insert(f.last().unwrap().to_string(), (n(0), n(2), n(4)));
    }
    assert!(!m.is_empty(), "{text}");
    m
}

/// The `functions` table as a flat profile; every row of hart `hart`.
fn functions(path: &Path, hart: u32) -> Flat {
    let mut m = Flat::new();
    for b in read(path) {
        assert!(harts(&b).iter().all(|&h| h == hart));
        let (names, se, to, ca) = (
            strs(&b, "function"),
            u64s(&b, "self_insns"),
            u64s(&b, "total_insns"),
            u64s(&b, "calls"),
        );
        for i in 0..b.num_rows() {
            let prev = m.insert(
                names[i].clone().unwrap(),
                (se[i].unwrap(), to[i].unwrap(), ca[i].unwrap()),
            );
            assert!(prev.is_none(), "{:?} twice", names[i]);
        }
    }
    m
}

/// The `functions` rows of hart `hart` as a flat profile.
fn functions_of(path: &Path, hart: u32) -> Flat {
    let mut m = Flat::new();
    for b in read(path) {
        let (hs, names, se, to, ca) = (
            harts(&b),
            strs(&b, "function"),
            u64s(&b, "self_insns"),
            u64s(&b, "total_insns"),
            u64s(&b, "calls"),
        );
        for i in (0..b.num_rows()).filter(|&i| hs[i] == hart) {
            let v = (se[i].unwrap(), to[i].unwrap(), ca[i].unwrap());
            assert!(m.insert(names[i].clone().unwrap(), v).is_none());
        }
    }
    m
}

/// Self instructions per function from `flow` (ranges are split at function boundaries), after
/// checking the table's sequence numbers, kinds and retired counts.
fn flow_self(path: &Path, hart: u32) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    let (mut seq, mut retired) = (0u64, 0u64);
    for b in read(path) {
        assert!(harts(&b).iter().all(|&h| h == hart));
        let (sq, kind, func, count, ret) = (
            u64s(&b, "seq"),
            strs(&b, "kind"),
            strs(&b, "function"),
            u64s(&b, "count"),
            u64s(&b, "retired"),
        );
        for i in 0..b.num_rows() {
            assert_eq!(sq[i], Some(seq), "seq runs 0, 1, 2, ...");
            seq += 1;
            assert_eq!(ret[i], Some(retired), "row {i}: retired before it");
            if kind[i].as_deref() == Some("range") {
                let n = count[i].unwrap();
                retired += n;
                *m.entry(func[i].clone().unwrap()).or_default() += n;
            } else {
                assert_eq!(count[i], None, "only ranges have a count");
            }
        }
    }
    assert!(seq > 0);
    m
}

/// A run recorded as ingress, and its N-Trace and E-Trace encodings (as tests/analysis.rs).
fn sources(t: &Path, name: &str) -> (PathBuf, Vec<(PathBuf, Option<&'static str>)>) {
    let e = program(name);
    let ing = t.join("t.ingress");
    let nex = t.join("t.nex");
    let te = t.join("t.te");
    ok(
        &rvtrace(&["run", s(&e), "--itype-width", "4", "--ingress", s(&ing)]),
        "run",
    );
    ok(
        &rvtrace(&["encode", "ntrace", s(&ing), "-o", s(&nex)]),
        "encode ntrace",
    );
    ok(
        &rvtrace(&["encode", "etrace", s(&ing), "-o", s(&te)]),
        "encode etrace",
    );
    (
        e,
        vec![(ing, None), (nex, Some("ntrace")), (te, Some("etrace"))],
    )
}

/// The `functions` table equals `rvtrace profile`'s flat profile, from a run and from both
/// decoders; `flow`'s ranges give the same self instructions per function.
#[test]
fn functions_table_equals_profile() {
    for name in [
        "recurse-rv64gc",
        "setjmp-rv32imac",
        "fnptr-rv64gc",
        "timer-rv64gc",
    ] {
        let t = tmpdir(name);
        let (e, srcs) = sources(&t, name);
        for (input, trace) in &srcs {
            let what = format!("{name} {}", trace.unwrap_or("ingress"));
            let dir = t.join(format!("tables-{}", trace.unwrap_or("ingress")));
            let mut args = vec![s(input), "--elf", s(&e)];
            if let Some(p) = trace {
                args.extend(["--trace", p]);
            }
            let want = profile(&args);
            let mut ex = vec!["export"];
            ex.extend(&args);
            ex.extend(["-o", s(&dir)]);
            let o = rvtrace(&ex);
            ok(&o, &what);
            assert!(stderr(&o).contains(" flow rows, "), "{}", stderr(&o));
            let got = functions(&dir.join("functions.parquet"), 0);
            assert_eq!(got, want, "{what}: functions table vs profile");
            let self_of: BTreeMap<String, u64> = want
                .iter()
                .filter(|(_, v)| v.0 > 0)
                .map(|(k, v)| (k.clone(), v.0))
                .collect();
            assert_eq!(
                flow_self(&dir.join("flow.parquet"), 0),
                self_of,
                "{what}: flow ranges per function vs profile self"
            );
        }
    }
}

/// `branches` holds the outcome of every conditional branch the hart recorded (`ingress dump`:
/// itype 5 taken, 4 not taken, one record per retired instruction), and `--hart` tags the rows.
#[test]
fn branches_equal_recorded_outcomes() {
    for name in ["loops-rv64gc", "switch-rv32imac"] {
        let t = tmpdir(name);
        let (e, srcs) = sources(&t, name);
        let ing = &srcs[0].0;
        let dump = rvtrace(&["ingress", "dump", s(ing)]);
        ok(&dump, "ingress dump");
        let mut want: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        let mut single = true;
        for l in stdout(&dump).lines().filter(|l| l.starts_with("0x")) {
            let f: Vec<&str> = l.split_whitespace().collect();
            let Some(it) = f.iter().find_map(|x| x.strip_prefix("itype=")) else {
                continue;
            };
            let mut pc = u64::from_str_radix(&f[0][2..], 16).unwrap();
            if let Some((bytes, last)) = f[1][1..].split_once('/') {
                single = false;
                pc += bytes.parse::<u64>().unwrap() - last.parse::<u64>().unwrap();
            }
            match it {
                "5" => want.entry(pc).or_default().0 += 1,
                "4" => want.entry(pc).or_default().1 += 1,
                _ => {}
            }
        }
        assert!(
            single,
            "{name}: records of several instructions hide not-taken branches"
        );
        assert!(want.values().any(|v| v.0 > 0) && want.values().any(|v| v.1 > 0));
        for (input, trace) in &srcs {
            let what = format!("{name} {}", trace.unwrap_or("ingress"));
            let dir = t.join(format!("b-{}", trace.unwrap_or("ingress")));
            let mut args = vec!["export", s(input), "--elf", s(&e), "-o", s(&dir)];
            args.extend(["--tables", "branches", "--hart", "7"]);
            if let Some(p) = trace {
                args.extend(["--trace", p]);
            }
            ok(&rvtrace(&args), &what);
            assert!(!dir.join("flow.parquet").exists(), "--tables branches only");
            let mut got = BTreeMap::new();
            for b in read(&dir.join("branches.parquet")) {
                assert!(harts(&b).iter().all(|&h| h == 7), "{what}: --hart 7");
                let (pc, tk, nt, un) = (
                    u64s(&b, "pc"),
                    u64s(&b, "taken"),
                    u64s(&b, "not_taken"),
                    u64s(&b, "unknown"),
                );
                for i in 0..b.num_rows() {
                    assert_eq!(un[i], Some(0), "{what}: no outcome unknown without loss");
                    got.insert(pc[i].unwrap(), (tk[i].unwrap(), nt[i].unwrap()));
                }
            }
            assert_eq!(got, want, "{what}: branches table vs ingress records");
        }
    }
}

/// Bad uses: a directory that is stdout, a table over an input, a cut ingress file (exit 1,
/// the tables hold what came before).
#[test]
fn export_usage_and_damaged_input() {
    let t = tmpdir("usage");
    let e = program("recurse-rv64gc");
    let ing = t.join("flow.parquet");
    ok(
        &rvtrace(&["run", s(&e), "--ingress", s(&ing)]),
        "run --ingress",
    );
    let o = rvtrace(&["export", s(&ing), "--elf", s(&e), "-o", "-"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // The input is named flow.parquet in the output directory: refused before truncating.
    let o = rvtrace(&["export", s(&ing), "--elf", s(&e), "-o", s(&t)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(std::fs::metadata(&ing).unwrap().len() > 1000);
    let data = std::fs::read(&ing).unwrap();
    let cut = t.join("cut.ingress");
    std::fs::write(&cut, &data[..data.len() / 2 + 3]).unwrap();
    let dir = t.join("cut");
    let o = rvtrace(&["export", s(&cut), "--elf", s(&e), "-o", s(&dir)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let n: usize = read(&dir.join("flow.parquet"))
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert!(n > 100, "{n} rows before the damage");
}

/// Every row of a table's files, each as its cells (the `hart` column left out), in file
/// order, with its hart: dictionary strings by value (their keys differ between files).
fn rows(path: &Path) -> Vec<(u32, Vec<String>)> {
    let mut v = Vec::new();
    for b in read(path) {
        let hs = harts(&b);
        let mut cols: Vec<Vec<String>> = Vec::new();
        for (f, c) in b.schema().fields().iter().zip(b.columns()) {
            if f.name() == "hart" {
                continue;
            }
            let text =
                c.as_dictionary_opt::<Int32Type>().is_some() || c.as_string_opt::<i32>().is_some();
            cols.push(if text {
                strs(&b, f.name())
                    .into_iter()
                    .map(|x| format!("{x:?}"))
                    .collect()
            } else {
                (0..b.num_rows())
                    .map(|i| format!("{:?}", c.slice(i, 1)))
                    .collect()
            });
        }
        for (i, &h) in hs.iter().enumerate() {
            v.push((h, cols.iter().map(|c| c[i].clone()).collect()));
        }
    }
    v
}

/// The harts of [`merged_harts`]: their SRC (srcID) and where their runs stop.
const HARTS: [(u16, &str); 2] = [(1, "2000"), (6, "100000000")];

/// A trace of the harts [`HARTS`] running `e` in `t`, encoded with `proto` (`--src-bits 3`
/// or `--srcid-bits 3`), their messages (packets) interleaved: `all.PROTO`; each hart's own
/// trace is `hSRC.PROTO`. Returns the merged trace's path and the protocol's options
/// (width, id).
fn merged_harts(t: &Path, e: &Path, proto: &str) -> (PathBuf, &'static str, &'static str) {
    type Split = fn(&[u8]) -> Vec<&[u8]>;
    let (bits, id, split): (&str, &str, Split) = match proto {
        "ntrace" => ("--src-bits", "--src-id", common::ntrace_messages),
        _ => ("--srcid-bits", "--srcid", common::etrace_packets),
    };
    let mut traces = Vec::new();
    for (src, max) in HARTS {
        let ing = t.join(format!("h{src}.ing"));
        let o = rvtrace(&["run", s(e), "--ingress", s(&ing), "--max-insns", max]);
        assert!(matches!(o.status.code(), Some(0 | 124)), "{}", stderr(&o));
        let tr = t.join(format!("h{src}.{proto}"));
        let k = src.to_string();
        let o = rvtrace(&["encode", proto, s(&ing), "-o", s(&tr), bits, "3", id, &k]);
        ok(&o, "encode");
        traces.push(std::fs::read(&tr).unwrap());
    }
    let merged = common::interleave(traces.iter().map(|b| split(b)).collect());
    let all = t.join(format!("all.{proto}"));
    std::fs::write(&all, &merged).unwrap();
    (all, bits, id)
}

/// A trace of several harts (two runs of one program cut at different lengths, then encoded
/// with N-Trace SRC 1 and 6 or E-Trace srcID 1 and 6, their messages interleaved):
/// `export --all-harts` writes each hart's rows, equal to the export of that hart alone
/// (`--src-id`/`--srcid`, `--hart`), the files sorted by hart then seq, the same on two
/// threads (`--jobs 2`, no part file left); each hart's `functions` equal the profile of its
/// own trace.
#[test]
fn all_harts_are_exported() {
    let t = tmpdir("export-harts");
    let e = program("recurse-rv64gc");
    let harts = HARTS;
    for proto in ["ntrace", "etrace"] {
        let (all, bits, id) = merged_harts(&t, &e, proto);
        let dir = t.join(format!("all-{proto}"));
        let base = [
            "export",
            s(&all),
            "--elf",
            s(&e),
            "--trace",
            proto,
            bits,
            "3",
        ];
        let mut args = base.to_vec();
        args.extend(["--all-harts", "-o", s(&dir)]);
        ok(&rvtrace(&args), "export --all-harts");
        // On two threads: the same rows, and no part file left.
        let dir2 = t.join(format!("all-{proto}-jobs2"));
        let mut args = base.to_vec();
        args.extend(["--all-harts", "--jobs", "2", "-o", s(&dir2)]);
        ok(&rvtrace(&args), "export --all-harts --jobs 2");
        let mut names: Vec<_> = std::fs::read_dir(&dir2)
            .unwrap()
            .map(|d| d.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["branches.parquet", "flow.parquet", "functions.parquet"]
        );
        for table in ["flow", "functions", "branches"] {
            let got = rows(&dir.join(format!("{table}.parquet")));
            assert!(
                rows(&dir2.join(format!("{table}.parquet"))) == got,
                "{proto} {table}: --jobs 2 vs 1"
            );
            let order: Vec<u32> = got.iter().map(|r| r.0).collect();
            assert!(
                order.windows(2).all(|w| w[0] <= w[1]),
                "{proto} {table}: by hart"
            );
            for (src, _) in harts {
                let k = src.to_string();
                let one = t.join(format!("one-{proto}-{src}"));
                let mut args = base.to_vec();
                args.extend([id, &k, "--hart", &k, "-o", s(&one)]);
                args.extend(["--tables", table]);
                ok(&rvtrace(&args), "export one hart");
                let want = rows(&one.join(format!("{table}.parquet")));
                assert!(!want.is_empty() && want.iter().all(|r| r.0 == src as u32));
                let mine: Vec<_> = got.iter().filter(|r| r.0 == src as u32).collect();
                assert!(
                    mine.into_iter().eq(want.iter()),
                    "{proto} {table}: hart {src}'s rows"
                );
            }
        }
        for (src, _) in harts {
            let own = t.join(format!("h{src}.{proto}"));
            let want = profile(&[s(&own), "--elf", s(&e), "--trace", proto]);
            let got = functions_of(&dir.join("functions.parquet"), src as u32);
            assert_eq!(
                got, want,
                "{proto}: hart {src}'s functions vs its own trace"
            );
        }
    }
    // --all-harts without the field's width: a usage error.
    let dir = t.join("nobits");
    let o = rvtrace(&[
        "export",
        s(&t.join("all.ntrace")),
        "--elf",
        s(&e),
        "--trace",
        "ntrace",
        "--all-harts",
        "-o",
        s(&dir),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!dir.exists());
}

/// The Python with PySpark and pyarrow that scripts/setup.sh installs, or the system's.
fn spark_python() -> Option<PathBuf> {
    let venv =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/spark-venv/bin/python");
    [venv, PathBuf::from("python3")].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import pyspark, pyarrow"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// The check Spark runs: pyarrow reads the schema; Spark (local mode) computes self
/// instructions per function from `flow` and reads `functions`; both printed as
/// `function<TAB>self<TAB>total<TAB>calls<TAB>flow self`.
const SPARK_SCRIPT: &str = r#"
import sys
import pyarrow.parquet as pq
from pyspark.sql import SparkSession, functions as F
spark = (SparkSession.builder.master("local[1]").appName("rvtrace-check")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
for k, d in enumerate(sys.argv[1:]):
    sch = pq.read_schema(d + "/flow.parquet")
    assert str(sch.field("count").type) == "uint64", sch
    assert str(sch.field("hart").type) == "uint32", sch
    assert pq.ParquetFile(d + "/flow.parquet").metadata.num_rows > 0
    flow = spark.read.parquet(d + "/flow.parquet")
    per = (flow.where(F.col("kind") == "range").groupBy("hart", "function")
           .agg(F.sum("count").alias("flow_self")))
    fun = spark.read.parquet(d + "/functions.parquet")
    rows = fun.join(per, ["hart", "function"], "full_outer").collect()
    for r in rows:
        print("\t".join(str(x) for x in [k, r["hart"], r["function"], r["self_insns"], r["total_insns"], r["calls"], r["flow_self"]]))
spark.stop()
"#;

/// Spark computes the per-function profile from the Parquet files: equal to `rvtrace profile`,
/// for one hart (a run's ingress stream) and per hart for a trace of two (N-Trace SRC 1 and 6,
/// `export --all-harts`; each hart's profile is that of its own trace).
#[test]
fn spark_computes_the_same_profile() {
    let Some(py) = spark_python() else {
        eprintln!("skipped: no Python with pyspark and pyarrow (scripts/setup.sh installs them)");
        return;
    };
    if Command::new("java").arg("-version").output().is_err() {
        eprintln!("skipped: no java (scripts/setup.sh installs openjdk-17-jre-headless)");
        return;
    }
    let t = tmpdir("spark");
    let e = program("recurse-rv32imac");
    let ing = t.join("t.ingress");
    ok(&rvtrace(&["run", s(&e), "--ingress", s(&ing)]), "run");
    let one = t.join("tables");
    ok(
        &rvtrace(&["export", s(&ing), "--elf", s(&e), "-o", s(&one)]),
        "export",
    );
    let e2 = program("recurse-rv64gc");
    let (all, bits, _) = merged_harts(&t, &e2, "ntrace");
    let two = t.join("harts");
    let args = ["export", s(&all), "--elf", s(&e2), "--trace", "ntrace"];
    let mut args = args.to_vec();
    args.extend([bits, "3", "--all-harts", "-o", s(&two)]);
    ok(&rvtrace(&args), "export --all-harts");
    let script = t.join("check.py");
    std::fs::write(&script, SPARK_SCRIPT).unwrap();
    let o = Command::new(&py)
        .arg(&script)
        .args([&one, &two])
        .output()
        .expect("run python");
    assert!(o.status.success(), "spark: {}", stderr(&o));
    // (table set, hart) -> the profile Spark computed.
    let mut got: BTreeMap<(u32, u32), Flat> = BTreeMap::new();
    for l in stdout(&o).lines() {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 7, "{l}");
        let n = |x: &str| x.parse::<u64>().unwrap_or_else(|_| panic!("{l}"));
        let (se, flow_self) = (n(f[3]), if f[6] == "None" { 0 } else { n(f[6]) });
        assert_eq!(
            se, flow_self,
            "{l}: Spark's sum over flow vs the functions table"
        );
        let key = (n(f[0]) as u32, n(f[1]) as u32);
        let row = (se, n(f[4]), n(f[5]));
        got.entry(key).or_default().insert(f[2].to_string(), row);
    }
    let mut want = BTreeMap::new();
    want.insert((0, 0), profile(&[s(&ing), "--elf", s(&e)]));
    for (src, _) in HARTS {
        let own = t.join(format!("h{src}.ntrace"));
        let p = profile(&[s(&own), "--elf", s(&e2), "--trace", "ntrace"]);
        want.insert((1, src as u32), p);
    }
    assert_eq!(got, want, "Spark's profiles vs rvtrace profile");
}
