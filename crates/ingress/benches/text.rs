//! Reading the text ingress formats an encoder takes (E-Trace `encoder_input` CSV, NexRv
//! PCSEQ), in records per second, on the benchmark workload (`programs/bench/workload.c`, run
//! on the hart model: one record per retired instruction). Does nothing unless run with
//! `--bench` (`cargo bench -p rvtrace-ingress`). Prints figures; asserts every record is read.

use rvtrace_ingress::etrace_csv::{CsvColumns, EtraceCsvReader, EtraceCsvWriter};
use rvtrace_ingress::pcseq::{PcseqReader, PcseqWriter};
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::insn_len;
use rvtrace_testkit::bench::{best_of, figure};
use std::path::Path;

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/bench");
    let name = "workload-rv64gc.elf";
    let run = rvtrace_testkit::run_program(&dir.join(name), &format!("bench/{name}"), 4);
    // One record per instruction: its size from the image, a taken branch where the next one
    // is not the next in memory (the rows' shapes are what matters here, not the types).
    // The first 3 M instructions (memory: the texts and the records).
    let pcs = &run.pcs[..run.pcs.len().min(3_000_000)];
    let records: Vec<Record> = pcs
        .iter()
        .zip(pcs.iter().skip(1).chain([&0]))
        .map(|(&pc, &next)| {
            let len = run.image.read_u16(pc).map_or(4, |p| insn_len(p) as u64);
            let ilastsize = (len == 4) as u8;
            Record {
                iaddr: pc,
                iretire: 1 << ilastsize,
                ilastsize,
                itype: match next == pc + len {
                    true => Itype::None,
                    false => Itype::TakenBranch,
                },
                priv_: 3,
                ..Record::default()
            }
        })
        .collect();
    let n = records.len() as f64;
    println!("{name}: {} records", records.len());

    let mut csv = EtraceCsvWriter::new(Vec::new(), CsvColumns::default()).unwrap();
    let mut pcseq = PcseqWriter::new(Vec::new());
    for r in &records {
        csv.write(r).unwrap();
        pcseq.write(r).unwrap();
    }
    let (csv, pcseq) = (csv.finish().unwrap(), pcseq.finish().unwrap());

    let (csv_s, got) = best_of(5, || {
        EtraceCsvReader::new(&csv[..])
            .unwrap()
            .map(|r| r.unwrap().iaddr)
            .fold(0u64, |n, _| n + 1)
    });
    assert_eq!(got as f64, n);
    let (pcseq_s, got) = best_of(5, || {
        PcseqReader::new(&pcseq[..])
            .map(|r| r.unwrap().iaddr)
            .fold(0u64, |n, _| n + 1)
    });
    assert_eq!(got as f64, n);
    println!(
        "  read E-Trace CSV {:>7.1} M records/s ({:.1} MB/s), PCSEQ {:>7.1} M records/s",
        n / csv_s / 1e6,
        csv.len() as f64 / csv_s / 1e6,
        n / pcseq_s / 1e6
    );
    figure("ingress.rv64gc.read_csv", n / csv_s / 1e6, "Mrec/s");
    figure("ingress.rv64gc.read_pcseq", n / pcseq_s / 1e6, "Mrec/s");

    // As the encoders read (`rvtrace encode etrace|ntrace`): `read_into` a reused slice.
    let mut batch = vec![Record::default(); 4096];
    let (csv_s, got) = best_of(5, || {
        let mut r = EtraceCsvReader::new(&csv[..]).unwrap();
        std::iter::from_fn(|| Some(r.read_into(&mut batch).unwrap()).filter(|&k| k > 0))
            .sum::<usize>()
    });
    assert_eq!(got as f64, n);
    let (pcseq_s, got) = best_of(5, || {
        let mut r = PcseqReader::new(&pcseq[..]);
        std::iter::from_fn(|| Some(r.read_into(&mut batch).unwrap()).filter(|&k| k > 0))
            .sum::<usize>()
    });
    assert_eq!(got as f64, n);
    println!(
        "  read_into: E-Trace CSV {:>7.1} M records/s, PCSEQ {:>7.1} M records/s",
        n / csv_s / 1e6,
        n / pcseq_s / 1e6
    );
    figure("ingress.rv64gc.read_csv_into", n / csv_s / 1e6, "Mrec/s");
    figure(
        "ingress.rv64gc.read_pcseq_into",
        n / pcseq_s / 1e6,
        "Mrec/s",
    );
}
