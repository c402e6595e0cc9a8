//! `encode ntrace|etrace H0 H1 ...`: several harts' ingress files (`run --harts N --ingress
//! 'h{hart}.ing'`) encoded into one trace, each hart's messages with its own source (N-Trace
//! 6.2 SRC, the E-Trace encapsulation's *srcID*), as a trace funnel merges the encoders of a
//! multi-hart system (N-Trace 6.2: "SRC ... identifies the source of the message in a system
//! with several harts sharing a trace output").
//!
//! The harts' records are taken in the order of their `time` (the shared `mtime` the hart model
//! writes into every record; on a tie the lower hart first), each given to its hart's encoder,
//! whose messages go out as they are made. The order is deterministic, so the same ingress files
//! give the same trace; `decode --all-harts` splits it back by source.

use crate::report::Failure;
use rvtrace_ingress::{IngressHeader, IngressReader, Record};
use std::io::BufRead;
use std::path::PathBuf;

/// One hart's ingress file, open.
pub(crate) struct Input {
    /// Its path, for messages.
    pub(crate) name: String,
    /// Its header.
    pub(crate) header: IngressHeader,
    reader: IngressReader<Box<dyn BufRead>>,
    batch: Vec<Record>,
    at: usize,
    done: bool,
}

/// The k-th of `n` files is source k: no single `--src-id` (`id`), and a source field of `bits`
/// (at most `max_bits`) that holds 0..n-1. `field` names it (SRC, srcID).
pub(crate) fn check_sources(
    n: usize,
    id: Option<u16>,
    bits: u8,
    max_bits: u8,
    field: &str,
) -> Result<(), Failure> {
    if id.is_some() {
        return Err(Failure::Usage(format!(
            "--src-id with several ingress files: the k-th file's {field} is k"
        )));
    }
    if bits > max_bits || n > 1 << bits {
        return Err(Failure::Usage(format!(
            "{n} ingress files need {field}s 0..{}: give --src-bits {} or more (at most {max_bits})",
            n - 1,
            usize::BITS - (n - 1).leading_zeros()
        )));
    }
    Ok(())
}

/// Open every hart's ingress file and check that they can be funnelled: binary ingress with
/// time, one record per instruction, one address width.
pub(crate) fn open(paths: &[PathBuf]) -> Result<Vec<Input>, Failure> {
    let mut inputs = Vec::with_capacity(paths.len());
    for p in paths {
        let name = p.display().to_string();
        let file = std::fs::File::open(p)
            .map_err(|e| Failure::Tool(format!("{name}: cannot open: {e}")))?;
        let reader: Box<dyn BufRead> = Box::new(std::io::BufReader::with_capacity(1 << 16, file));
        let reader = IngressReader::new(reader).map_err(|e| format!("{name}: {e}"))?;
        let header = reader.header().clone();
        if !header.has_time {
            return Err(Failure::Usage(format!(
                "{name}: no time in the records: several harts are merged in time order (rvtrace run writes it)"
            )));
        }
        if header.multi_retire {
            return Err(Failure::Usage(format!(
                "{name} holds block records (multi-retire): several harts are merged record by record; write one record per instruction (run without --ingress-blocks)"
            )));
        }
        inputs.push(Input {
            name,
            header,
            reader,
            batch: Vec::with_capacity(4096),
            at: 0,
            done: false,
        });
    }
    if let Some(other) = inputs
        .iter()
        .find(|i| i.header.xlen != inputs[0].header.xlen)
    {
        return Err(Failure::Usage(format!(
            "{} and {} have different address widths",
            inputs[0].name, other.name
        )));
    }
    Ok(inputs)
}

impl Input {
    /// The next record's time, reading a batch when the last one is used up; `None` at the end.
    /// A damaged file ends here with its error.
    fn head(&mut self) -> Result<Option<u64>, String> {
        if self.at == self.batch.len() && !self.done {
            self.batch.clear();
            self.at = 0;
            let n = self
                .reader
                .read_batch(&mut self.batch, 4096)
                .map_err(|e| format!("{}: {e}", self.name))?;
            self.done = n == 0;
        }
        Ok(self.batch.get(self.at).map(|r| r.time))
    }
}

/// Give every record of `inputs` to `push(hart, records)`, in time order across the harts
/// (runs of one hart's records at a time). Returns the number of records, and the first
/// damaged input's error, after which nothing more is pushed (the records before it are).
pub(crate) fn merge<E>(
    inputs: &mut [Input],
    mut push: impl FnMut(usize, &[Record]) -> Result<(), E>,
) -> Result<(u64, Option<String>), E> {
    let mut records = 0u64;
    let mut heads: Vec<Option<u64>> = Vec::with_capacity(inputs.len());
    loop {
        heads.clear();
        for i in inputs.iter_mut() {
            match i.head() {
                Ok(h) => heads.push(h),
                Err(e) => return Ok((records, Some(e))),
            }
        }
        // The hart whose next record is earliest (the lower hart on a tie), and the earliest
        // other (time, hart) its run must stay before.
        let Some((k, _)) = heads
            .iter()
            .enumerate()
            .filter_map(|(k, h)| h.map(|t| (k, t)))
            .min_by_key(|&(k, t)| (t, k))
        else {
            return Ok((records, None));
        };
        let bound = heads
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != k)
            .filter_map(|(j, h)| h.map(|t| (t, j)))
            .min();
        let i = &mut inputs[k];
        let run = i.batch[i.at..]
            .iter()
            .take_while(|r| bound.is_none_or(|b| (r.time, k) < b))
            .count();
        push(k, &i.batch[i.at..i.at + run])?;
        i.at += run;
        records += run as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of times `ts` for one hart, as an ingress file.
    fn file(dir: &std::path::Path, name: &str, ts: &[u64]) -> PathBuf {
        let p = dir.join(name);
        let mut h = IngressHeader::new(rvtrace_isa::Xlen::Rv64, 4, "test");
        h.has_time = true;
        let mut w =
            rvtrace_ingress::IngressWriter::new(std::fs::File::create(&p).unwrap(), &h).unwrap();
        for (n, &t) in ts.iter().enumerate() {
            let r = Record {
                iaddr: 0x1000 + 4 * n as u64,
                time: t,
                ..Record::default()
            };
            w.write(&r).unwrap();
        }
        w.finish().unwrap();
        p
    }

    /// Records come out in (time, hart) order, each hart's in its own order, in runs.
    #[test]
    fn merged_in_time_order() {
        let d = std::env::temp_dir().join(format!("rvtrace-funnel-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let a = file(&d, "a.ing", &[0, 1, 5, 5, 9]);
        let b = file(&d, "b.ing", &[1, 2, 3, 5, 20, 21]);
        let c = file(&d, "c.ing", &[]);
        let mut inputs = open(&[a, b, c]).unwrap();
        let mut got = Vec::new();
        let mut runs = 0;
        let (n, damage) = merge(&mut inputs, |k, rs| -> Result<(), ()> {
            runs += 1;
            got.extend(rs.iter().map(|r| (r.time, k)));
            Ok(())
        })
        .unwrap();
        assert_eq!((n, damage), (11, None));
        let mut want = got.clone();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(got.len(), 11);
        // a: 0, 1 | b: 1, 2, 3 | a: 5, 5 | b: 5 | a: 9 | b: 20, 21.
        assert_eq!(runs, 6);
        let _ = std::fs::remove_dir_all(&d);
    }
}
