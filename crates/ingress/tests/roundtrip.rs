//! Round trips over randomized records (binary, text, dump) and robustness of the binary reader
//! against truncation and corruption.

use crate::common;

use common::{random_record, realistic_stream, Rng};
use rvtrace_ingress::binary::{from_slice, to_vec};
use rvtrace_ingress::text::{parse_line, TextReader, TextWriter};
use rvtrace_ingress::{
    dump, IngressError, IngressHeader, IngressReader, IngressWriter, Record, Xlen,
};

fn header() -> IngressHeader {
    let mut h = IngressHeader::new(Xlen::Rv64, 4, "roundtrip test\nsecond line ✓");
    h.has_context = true;
    h.has_time = true;
    h
}

fn streams() -> Vec<Vec<Record>> {
    let mut rng = Rng(0x1234_5678);
    vec![
        Vec::new(),
        vec![Record::default()],
        (0..5000).map(|_| random_record(&mut rng)).collect(),
        realistic_stream(&mut rng, 300_000), // several 64 KiB blocks
    ]
}

#[test]
fn binary_round_trip() {
    for recs in streams() {
        let bytes = to_vec(&header(), &recs).unwrap();
        let (h, back) = from_slice(&bytes).unwrap();
        assert_eq!(h, header());
        assert_eq!(back, recs);
        // next_record and the iterator agree with read_batch.
        let mut r = IngressReader::new(&bytes[..]).unwrap();
        let mut one = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            one.push(rec);
        }
        assert_eq!(one, recs);
        assert_eq!(r.next_record().unwrap(), None);
        let it: Vec<Record> = IngressReader::new(&bytes[..])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(it, recs);
        // Odd batch sizes across block boundaries.
        let mut r = IngressReader::new(&bytes[..]).unwrap();
        let mut v = Vec::new();
        let mut rng = Rng(9);
        loop {
            let max = 1 + rng.below(5000) as usize;
            if r.read_batch(&mut v, max).unwrap() == 0 {
                break;
            }
        }
        assert_eq!(v, recs);
        assert_eq!(r.records_read(), recs.len() as u64);
    }
}

#[test]
fn binary_through_a_one_byte_reader() {
    // Short reads must not matter.
    struct Trickle<'a>(&'a [u8]);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }
    let recs = realistic_stream(&mut Rng(5), 20_000);
    let bytes = to_vec(&header(), &recs).unwrap();
    let back = IngressReader::new(Trickle(&bytes))
        .unwrap()
        .read_to_end()
        .unwrap();
    assert_eq!(back, recs);
}

#[test]
fn realistic_stream_is_compact() {
    let recs = realistic_stream(&mut Rng(77), 100_000);
    let bytes = to_vec(&header(), &recs).unwrap();
    let per = bytes.len() as f64 / recs.len() as f64;
    assert!(per < 2.5, "{per} bytes per record");
}

#[test]
fn text_round_trip() {
    for recs in streams() {
        for r in &recs {
            let line = r.to_string();
            assert_eq!(parse_line(&line, 1).unwrap(), Some(*r), "{line}");
        }
        let mut w = TextWriter::new(Vec::new());
        w.comment("a comment").unwrap();
        for r in &recs {
            w.write(r).unwrap();
        }
        let text = w.finish().unwrap();
        let back: Vec<Record> = TextReader::new(&text[..])
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, recs);
    }
}

#[test]
fn dump_prints_header_records_and_summary() {
    let recs = realistic_stream(&mut Rng(3), 10_000);
    let bytes = to_vec(&header(), &recs).unwrap();
    let mut out = Vec::new();
    let sum = dump(&bytes[..], &mut out).unwrap();
    assert_eq!(sum.records, recs.len() as u64);
    assert_eq!(
        sum.instructions,
        recs.iter().filter(|r| r.iretire != 0).count() as u64
    );
    assert_eq!(
        sum.traps,
        recs.iter().filter(|r| r.is_trap()).count() as u64
    );
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("# rvtrace ingress v1: xlen=64 itype_width=4 signals=context,time\n# source: roundtrip test\n# second line ✓\n"), "{}", &text[..200]);
    assert!(text.ends_with(&format!("# {sum}\n")));
    let back: Vec<Record> = TextReader::new(text.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, recs);
    // dump of a non-ingress file is the clear error.
    let e = dump(&b"itype_0,cause\n"[..], Vec::new()).unwrap_err();
    assert_eq!(e.to_string(), "not an rvtrace ingress file");
}

#[test]
fn writer_counts_and_finish_returns_inner() {
    let recs = realistic_stream(&mut Rng(11), 1000);
    let mut w = IngressWriter::new(Vec::new(), &header()).unwrap();
    for r in &recs {
        w.write(r).unwrap();
    }
    assert_eq!(w.records_written(), 1000);
    let bytes = w.finish().unwrap();
    assert_eq!(from_slice(&bytes).unwrap().1, recs);
}

/// Prefixes of a multi-block file are errors carrying a byte offset within the prefix: every cut
/// near the start, the end and each block boundary, plus random cuts. (Every cut of a real file is
/// tested in `conformance.rs`.)
#[test]
fn truncations_are_errors() {
    let recs = realistic_stream(&mut Rng(21), 60_000);
    let bytes = to_vec(&header(), &recs).unwrap();
    assert!(bytes.len() > 65536, "want several blocks: {}", bytes.len());
    let mut cuts: Vec<usize> = (0..2000).chain(bytes.len() - 500..bytes.len()).collect();
    for b in 1..bytes.len() / 65536 + 1 {
        let boundary = b * 65536;
        cuts.extend(boundary.saturating_sub(100)..(boundary + 100).min(bytes.len()));
    }
    let mut rng = Rng(8);
    cuts.extend((0..200).map(|_| rng.below(bytes.len() as u64) as usize));
    let mut out = Vec::new();
    for cut in cuts {
        let res = IngressReader::new(&bytes[..cut]).and_then(|mut r| {
            out.clear();
            while r.read_batch(&mut out, 1 << 20)? > 0 {}
            Ok(())
        });
        match res {
            Err(e @ IngressError::Truncated { .. }) => {
                assert!(e.offset().unwrap() <= cut as u64, "cut {cut}: {e}")
            }
            other => panic!("cut {cut}: expected Truncated, got {other:?}"),
        }
    }
}

/// Any single corrupted byte is detected (CRCs, magic, version, record count), never a panic.
#[test]
fn every_byte_flip_is_an_error() {
    let recs = realistic_stream(&mut Rng(33), 3000);
    let bytes = to_vec(&header(), &recs).unwrap();
    let mut rng = Rng(44);
    let mut data = bytes.clone();
    for pos in 0..bytes.len() {
        let flip = 1 + rng.below(255) as u8;
        data[pos] ^= flip;
        let res = IngressReader::new(&data[..]).and_then(|mut r| r.read_to_end());
        assert!(res.is_err(), "flip {flip:#x} at {pos} not detected");
        data[pos] ^= flip;
    }
    // Appended garbage is an error too.
    data.push(0);
    let e = from_slice(&data).unwrap_err();
    assert!(e.to_string().contains("after the end block"), "{e}");
}

/// Blocks with valid CRCs but random payloads (as a buggy writer could produce): never a panic,
/// and errors point into the block.
#[test]
fn random_payloads_with_valid_checksums_never_panic() {
    let head = to_vec(&header(), &[]).unwrap();
    let head = &head[..head.len() - 20]; // without the end block
    let mut rng = Rng(55);
    for round in 0..3000 {
        let len = 1 + rng.below(200) as usize;
        let mut payload: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        if round % 2 == 0 {
            // Bias towards plausible tags.
            for b in payload.iter_mut() {
                if rng.one_in(2) {
                    *b &= 0x3f;
                }
            }
        }
        let count = 1 + rng.below(len as u64) as u32;
        let mut file = head.to_vec();
        let mut blk = Vec::new();
        blk.extend_from_slice(&(len as u32).to_le_bytes());
        blk.extend_from_slice(&count.to_le_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(&blk);
        crc.update(&payload);
        blk.extend_from_slice(&crc.sum().to_le_bytes());
        blk.extend_from_slice(&payload);
        file.extend_from_slice(&blk);
        // End block counting `count` records.
        let mut end = Vec::new();
        end.extend_from_slice(&8u32.to_le_bytes());
        end.extend_from_slice(&0u32.to_le_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(&end);
        crc.update(&(count as u64).to_le_bytes());
        end.extend_from_slice(&crc.sum().to_le_bytes());
        end.extend_from_slice(&(count as u64).to_le_bytes());
        file.extend_from_slice(&end);
        match from_slice(&file) {
            Ok((_, recs)) => assert_eq!(recs.len(), count as usize),
            Err(e) => {
                let off = e.offset().expect("binary errors carry an offset");
                assert!(
                    off >= head.len() as u64 && off <= (head.len() + 12 + len) as u64,
                    "{e}"
                );
            }
        }
    }
}

/// The byte ranges of the blocks of a binary file (header length, then `(start, end, records)`).
fn blocks(bytes: &[u8]) -> Vec<(usize, usize, u32)> {
    let src_len = u16::from_le_bytes([bytes[14], bytes[15]]) as usize;
    let mut at = 20 + src_len;
    let mut v = Vec::new();
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let count = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
        v.push((at, at + 12 + len, count));
        at += 12 + len;
    }
    v
}

/// Issue 9 item 6: damage in block k costs only blocks k.. : the records of the verified blocks
/// before it are delivered (by every reading API), then the error.
#[test]
fn records_before_a_damaged_block_are_delivered() {
    let recs = realistic_stream(&mut Rng(61), 200_000);
    let bytes = to_vec(&header(), &recs).unwrap();
    let blks = blocks(&bytes);
    assert!(blks.len() >= 4, "want several blocks: {}", blks.len());
    for k in [0, 1, blks.len() / 2, blks.len() - 2] {
        let (start, end, _) = blks[k];
        let before: usize = blks[..k].iter().map(|b| b.2 as usize).sum();
        let mut bad = bytes.clone();
        bad[(start + end) / 2] ^= 0x10; // a payload byte: the block CRC fails
                                        // read_batch with `?`, as every consumer writes it: the records come first.
        let mut r = IngressReader::new(&bad[..]).unwrap();
        let mut got = Vec::new();
        let err = loop {
            match r.read_batch(&mut got, 1000) {
                Ok(0) => panic!("block {k}: damage not reported"),
                Ok(_) => {}
                Err(e) => break e,
            }
        };
        assert_eq!(got, recs[..before], "block {k}");
        assert_eq!(err.offset(), Some(start as u64), "block {k}: {err}");
        assert!(err.to_string().contains("checksum"), "{err}");
        // The error is reported once, then the reader stays failed.
        assert!(r.read_batch(&mut got, 1000).is_err());
        // next_record and the iterator: the same records, then the error.
        let mut r = IngressReader::new(&bad[..]).unwrap();
        let mut one = Vec::new();
        let e2 = loop {
            match r.next_record() {
                Ok(Some(x)) => one.push(x),
                Ok(None) => panic!("block {k}: damage not reported"),
                Err(e) => break e,
            }
        };
        assert_eq!(one.len(), before);
        assert_eq!(e2.offset(), err.offset());
        let items: Vec<_> = IngressReader::new(&bad[..]).unwrap().collect();
        assert_eq!(items.len(), before + 1);
        assert!(items[before].is_err());
        // read_to_end_partial keeps them; read_to_end is the error.
        let (part, e3) = IngressReader::new(&bad[..]).unwrap().read_to_end_partial();
        assert_eq!(part, recs[..before]);
        assert_eq!(e3.unwrap().offset(), err.offset());
        assert!(from_slice(&bad).is_err());
    }
}

/// Issue 9 item 6: a file whose writer was stopped (no `finish`, as after Ctrl-C) reads up to its
/// last complete block; a cut at a block boundary is told apart from a cut inside a block.
#[test]
fn an_unfinished_file_reads_to_its_last_complete_block() {
    let recs = realistic_stream(&mut Rng(62), 150_000);
    // The writer as a killed process leaves it: blocks written, no end block.
    let mut w = IngressWriter::new(Vec::new(), &header()).unwrap();
    w.write_batch(&recs).unwrap();
    let written = w.records_written();
    let whole = w.finish().unwrap();
    let blks = blocks(&whole);
    let (last_start, _, _) = *blks.last().unwrap(); // the end block
    let unfinished = &whole[..last_start - (blks[blks.len() - 2].1 - blks[blks.len() - 2].0)];
    let in_full_blocks: usize = blks[..blks.len() - 2].iter().map(|b| b.2 as usize).sum();
    assert!(in_full_blocks > 0 && (in_full_blocks as u64) < written);
    let (got, e) = IngressReader::new(unfinished)
        .unwrap()
        .read_to_end_partial();
    let e = e.expect("an unfinished file is reported");
    assert!(e.is_missing_end_block(), "{e}");
    assert_eq!(e.offset(), Some(unfinished.len() as u64));
    assert_eq!(got, recs[..in_full_blocks]);
    // Cut inside the next block: the same records, a different error.
    let cut = &whole[..unfinished.len() + 100];
    let (got, e) = IngressReader::new(cut).unwrap().read_to_end_partial();
    let e = e.unwrap();
    assert!(!e.is_missing_end_block(), "{e}");
    assert!(matches!(e, IngressError::Truncated { .. }), "{e}");
    assert_eq!(got, recs[..in_full_blocks]);
    // The whole file has no error at all.
    let (got, e) = IngressReader::new(&whole[..])
        .unwrap()
        .read_to_end_partial();
    assert!(e.is_none());
    assert_eq!(got, recs);
}

/// A block header that claims the largest payload costs only the bytes that are there.
#[test]
fn a_huge_claimed_block_is_not_allocated() {
    let head = to_vec(&header(), &[]).unwrap();
    let mut file = head[..head.len() - 20].to_vec();
    file.extend_from_slice(&(16u32 << 20).to_le_bytes());
    file.extend_from_slice(&5u32.to_le_bytes());
    file.extend_from_slice(&[0; 4]);
    file.extend_from_slice(&[0x10; 30]);
    let mut r = IngressReader::new(&file[..]).unwrap();
    let e = r.next_record().unwrap_err();
    assert!(
        matches!(
            e,
            IngressError::Truncated {
                what: "block payload",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.offset(), Some(file.len() as u64));
}
