//! Binary ingress reader: any bytes must read or fail without panicking, with bounded memory
//! (a block header claiming a huge payload must not allocate it; run with `-malloc_limit_mb`).
//! Every record delivered, written again with the same header, must read back the same: the
//! reader delivers only what a writer can have written.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rvtrace_ingress::binary::{from_slice, to_vec};
use rvtrace_ingress::IngressReader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = IngressReader::new(data) else {
        return;
    };
    let header = r.header().clone();
    let mut recs = Vec::new();
    let mut err = None;
    loop {
        let before = recs.len();
        match r.read_batch(&mut recs, 1 + data.len() % 5000) {
            Ok(0) => break,
            Ok(n) => assert_eq!(recs.len(), before + n),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    assert_eq!(r.records_read(), recs.len() as u64);
    if let Some(e) = &err {
        let _ = e.to_string();
        assert!(e.offset().is_some_and(|o| o <= data.len() as u64), "{e}");
    }
    // The same records one by one through the iterator.
    let mut n = 0;
    for item in IngressReader::new(data).unwrap() {
        match item {
            Ok(rec) => {
                assert_eq!(rec, recs[n]);
                n += 1;
            }
            Err(_) => break,
        }
    }
    assert_eq!(n, recs.len());
    let again = to_vec(&header, &recs).expect("a header that was read can be written");
    let (h2, back) = from_slice(&again).expect("what was written reads back");
    assert_eq!(h2, header);
    assert_eq!(back, recs);
});
