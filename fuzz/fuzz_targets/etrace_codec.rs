//! E-Trace codec: any bytes, read as `te_inst_raw` and as encapsulated packets under parameters
//! and options taken from the input, must parse or fail without panicking; every packet that
//! parses must re-encode to a payload that parses back to the same packet.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rvtrace_etrace::codec::{EncapConfig, Item, PacketReader};
use rvtrace_etrace::{IOptions, Params, TeInst};

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (cfg, data) = data.split_at(4);
    let mut p = Params::reference(if cfg[0] & 1 != 0 { 64 } else { 32 });
    p.iaddress_lsb_p = (cfg[0] >> 1) & 1;
    p.nocontext_p = cfg[0] & 4 != 0;
    p.notime_p = cfg[0] & 8 == 0;
    p.time_width_p = 1 + (cfg[1] & 63);
    p.call_counter_size_p = cfg[1] >> 6;
    p.return_stack_size_p = cfg[2] & 7;
    p.cache_size_p = (cfg[2] >> 3) & 7;
    p.bpred_size_p = cfg[2] >> 6;
    p.f0s_width_p = cfg[3] & 1;
    let o = IOptions::from_field((cfg[3] >> 1) as u64, rvtrace_etrace::OptionsLayout::Rvtrace);
    let encap = EncapConfig {
        srcid_bits: cfg[1] & 15,
        timestamp_bytes: cfg[2] & 7,
        type_bits: cfg[3] >> 6,
        te_inst_type: 0,
    };
    for (enc, raw) in [(EncapConfig::TE_INST_RAW, true), (encap, false)] {
        let mut rd = PacketReader::new(data, enc, raw, p, o);
        while let Some((_, item)) = rd.next() {
            if let Item::Packet(pkt) = item {
                let _ = pkt.fields(&p).to_string();
                let _ = pkt.csv(&p).to_string();
                let opts = rd.options();
                let mut out = [0u8; 64];
                let n = pkt.encode(&p, opts, &mut out).expect("a parsed packet re-encodes");
                let back = TeInst::decode(&out[..n], &p, opts).expect("and parses back");
                assert_eq!(back, pkt);
            }
        }
    }
});
