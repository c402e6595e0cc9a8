//! The dump of every NexRv-made HTM stream equals `NexRv -dump` (conformance vectors): field
//! boundaries, widths and values all agree with the reference tool.

use rvtrace_ntrace::codec::CodecConfig;
use rvtrace_ntrace::dump::dump;
use rvtrace_testkit::{conformance_dir, read_vector, PROGRAMS};

#[test]
fn dump_matches_nexrv_dump() {
    let Some(dir) = conformance_dir() else { return };
    let mut checked = 0;
    for (prog, _) in PROGRAMS {
        for (bin, txt) in [
            (
                format!("ntrace/{prog}/{prog}-htm.bin"),
                format!("ntrace/{prog}/{prog}-htm-DUMP.txt"),
            ),
            (
                format!("ntrace/{prog}/variant-jalt0-as-jump/{prog}-htm-cs8.bin"),
                format!("ntrace/{prog}/variant-jalt0-as-jump/{prog}-htm-cs8-DUMP.txt"),
            ),
        ] {
            let data = read_vector(&dir, &bin);
            let want = String::from_utf8(read_vector(&dir, &txt)).unwrap();
            let mut out = Vec::new();
            let st = dump(&data, &CodecConfig::default(), &mut out).unwrap();
            let got = String::from_utf8(out).unwrap();
            if got != want {
                let (n, (g, w)) = got
                    .lines()
                    .zip(want.lines())
                    .enumerate()
                    .find(|(_, (g, w))| g != w)
                    .unwrap_or((0, ("(length)", "(length)")));
                panic!("{bin}: line {}: got {g:?}, NexRv {w:?}", n + 1);
            }
            assert_eq!(st.errors, 0);
            checked += 1;
        }
    }
    assert_eq!(checked, 12);
}
