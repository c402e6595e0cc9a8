//! Garbage, truncated and bit-flipped traces never panic or hang the codec or the decoder:
//! errors are reported (as `Loss` elements) and decoding resumes.

use rvtrace_etrace::code::Code;
use rvtrace_etrace::codec::{EncapConfig, Item, PacketReader};
use rvtrace_etrace::config::{ConfigInputs, Framing, TraceConfig};
use rvtrace_etrace::decoder::{Decoder, DecoderConfig, Limits};
use rvtrace_etrace::encoder::{Encoder, FrameWriter};
use rvtrace_etrace::{IOptions, Params};
use rvtrace_flow::{decode_all, FlowElement};
use rvtrace_isa::IsaConfig;
use rvtrace_testkit::{run_test_program, test_programs, Rng};

#[test]
fn corrupted_traces_decode_without_panicking() {
    let run = run_test_program("recurse-rv64gc", 4);
    let code = Code::new(&run.image, IsaConfig::rv64());
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let sets = [
        ConfigInputs::default(),
        ConfigInputs {
            implicit_return: true,
            return_stack: Some(8),
            branch_prediction: Some(64),
            jump_target_cache: Some(16),
            implicit_exception: true,
            sijump: true,
            ..ConfigInputs::default()
        },
    ];
    for inputs in sets {
        let cfg = TraceConfig::build(&ConfigInputs {
            xlen_bits: 64,
            ..inputs
        })
        .unwrap();
        let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
        for r in &run.records {
            enc.push(r).unwrap();
        }
        let good = enc.finish().unwrap().into_inner();
        for trial in 0..300 {
            let mut bad = good.clone();
            match trial % 4 {
                // Flip a few bits.
                0 => {
                    for _ in 0..1 + rng.next_u64() % 4 {
                        let i = (rng.next_u64() % bad.len() as u64) as usize;
                        bad[i] ^= 1 << (rng.next_u64() % 8);
                    }
                }
                // Truncate.
                1 => bad.truncate((rng.next_u64() % bad.len() as u64) as usize),
                // Start in the middle.
                2 => {
                    let i = (rng.next_u64() % bad.len() as u64) as usize;
                    bad.drain(..i);
                }
                // Overwrite a run with garbage.
                _ => {
                    let i = (rng.next_u64() % bad.len() as u64) as usize;
                    for b in bad.iter_mut().skip(i).take(16) {
                        *b = rng.next_u64() as u8;
                    }
                }
            }
            let o = DecoderConfig {
                limits: Limits {
                    max_jumps_per_packet: 1 << 16,
                    max_insns_per_packet: 1 << 24,
                },
                ..DecoderConfig::with_layout(
                    cfg.params,
                    cfg.options,
                    Framing::Encap(EncapConfig::PLAIN),
                    code.isa,
                )
            };
            let mut dec = Decoder::with_code(&run.image, o, code.clone());
            let mut n = 0u64;
            let mut sink = |e: &FlowElement| {
                if let FlowElement::Range { count, .. } = e {
                    n += count;
                }
            };
            decode_all(&mut dec, &bad, &mut sink);
        }
    }
}

#[test]
fn random_bytes_parse_and_decode_without_panicking() {
    let elf = test_programs()
        .into_iter()
        .find(|p| p.ends_with("loops-rv32imac.elf"))
        .unwrap();
    let mut image = rvtrace_image::Image::new();
    image.load_file(&elf).unwrap();
    let code = Code::new(&image, IsaConfig::rv32());
    let mut rng = Rng(99);
    for trial in 0..200 {
        let len = (rng.next_u64() % 2000) as usize;
        let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let mut p = Params::rvtrace(32);
        p.call_counter_size_p = (trial % 3) as u8 * 4;
        p.cache_size_p = (trial % 2) as u8 * 3;
        p.bpred_size_p = (trial % 2) as u8 * 5;
        if trial % 4 == 1 {
            p = p.with_options_layout(rvtrace_etrace::OptionsLayout::Pulp);
        }
        let o = IOptions::from_field(rng.next_u64(), p.options_layout);
        for raw in [false, true] {
            for item in PacketReader::new(&data, EncapConfig::PLAIN, raw, p, o) {
                let _ = item;
            }
        }
        let framing = match trial % 2 == 0 {
            true => Framing::Raw,
            false => Framing::Encap(EncapConfig::PLAIN),
        };
        let opts = DecoderConfig {
            limits: Limits {
                max_jumps_per_packet: 1 << 16,
                max_insns_per_packet: 1 << 24,
            },
            ..DecoderConfig::with_layout(p, o, framing, code.isa)
        };
        let mut dec = Decoder::with_code(&image, opts, code.clone());
        let mut sink = |_: &FlowElement| {};
        decode_all(&mut dec, &data, &mut sink);
        let items = PacketReader::new(&data, EncapConfig::TE_INST_RAW, true, p, o);
        for (_, it) in items {
            if let Item::Packet(pkt) = it {
                let _ = pkt.fields(&p).to_string();
                let _ = pkt.csv(&p).to_string();
            }
        }
    }
}
