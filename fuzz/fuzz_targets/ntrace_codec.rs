//! N-Trace codec: any bytes are framed (MSEO/MDO) and parsed with a SRC width from the first
//! byte; every message that parses must serialize to bytes that parse to the same message, and
//! serializing that again gives the same bytes. The dump (with --lastip) must take any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rvtrace_isa::Xlen;
use rvtrace_ntrace::codec::{parse, CodecConfig, Dialect, Frame, Frames};
use rvtrace_ntrace::dump::{dump_with, DumpOptions};

fuzz_target!(|data: &[u8]| {
    let Some((&first, data)) = data.split_first() else {
        return;
    };
    let cfg = CodecConfig {
        src_bits: first % 13,
        // The high bit also reads SiFive's messages.
        dialect: if first >= 0x80 {
            Dialect::Sifive
        } else {
            Dialect::Standard
        },
    };
    for f in Frames::new(data) {
        let Frame::Message(raw) = f else { continue };
        let Ok(m) = parse(&raw, &cfg) else { continue };
        let bytes = m.encode(&cfg);
        let again: Vec<Frame> = Frames::new(bytes.as_slice()).collect();
        let [Frame::Message(raw2)] = &again[..] else {
            panic!("{m:?} serialized to {:02x?}: not one message", bytes.as_slice());
        };
        let m2 = parse(raw2, &cfg).unwrap_or_else(|e| panic!("{m:?}: {e}"));
        assert_eq!(m, m2, "{:02x?}", bytes.as_slice());
        assert_eq!(m2.encode(&cfg).as_slice(), bytes.as_slice());
    }
    let opts = DumpOptions {
        lastip: first & 0x80 != 0,
        extend_addr_msb: (first & 0x40 != 0).then_some(if first & 0x20 != 0 {
            Xlen::Rv32
        } else {
            Xlen::Rv64
        }),
    };
    // The first 512 bytes: formatting thousands of lines per input would slow the search down.
    dump_with(&data[..data.len().min(512)], &cfg, &opts, &mut std::io::sink()).unwrap();
});
