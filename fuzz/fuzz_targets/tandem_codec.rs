//! Tandem trace codec: any bytes, read with parameters chosen by the first byte, must never panic;
//! the records read re-encode to bytes that read back as the same records; `dump` never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rvtrace_tandem::codec::{encode_all, state, Params, Reader};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, bytes)) = data.split_first() else {
        return;
    };
    let p = Params {
        xlen: if sel & 1 != 0 { 32 } else { 64 },
        flen: [0, 32, 64, 64][(sel as usize >> 1) & 3],
        mlen: [32, 34, 40, 64][(sel as usize >> 3) & 3],
        pc_ident: if sel & 0x20 != 0 {
            state::PC_APPENDIX
        } else {
            state::PC
        },
    };
    let mut r = Reader::new(bytes, p, 0);
    let mut recs = Vec::new();
    while let Some(x) = r.next() {
        match x {
            Ok((_, rec)) => recs.push(rec),
            Err(e) => {
                assert!(e.offset as usize <= bytes.len());
                break;
            }
        }
    }
    let again = encode_all(&recs, &p);
    let mut r = Reader::new(&again, p, 0);
    let mut back = Vec::new();
    while let Some(x) = r.next() {
        back.push(x.expect("re-encoded records read back").1);
    }
    assert_eq!(back, recs);
    let _ = rvtrace_tandem::dump::dump(bytes, &p, &mut std::io::sink());
});
