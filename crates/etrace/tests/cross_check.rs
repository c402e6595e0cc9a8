//! Cross-check with the independent `riscv-etrace` crate (FZI): for the options it supports
//! (delta and full addresses; the reference encoder's support packets), its tracer turns the
//! reference flow's conformance traces and rvtrace's own traces into the same retired PCs; and
//! its trace generator (a software encoder) encodes the reference flow's encoder inputs and
//! rvtrace's hart runs into traces rvtrace's decoder turns into the retired PCs.

use riscv_etrace::binary::elf::Elf;
use riscv_etrace::config::{AddressMode, Parameters};
use riscv_etrace::packet;
use riscv_etrace::tracer::{self, item, Tracer};
use rvtrace_etrace::config::{params_from_scf, ConfigInputs, TraceConfig};
use rvtrace_etrace::encoder::encode;
use rvtrace_etrace::Params;
use rvtrace_testkit::{assert_pcs_eq, conformance_dir, parse_pcs, read_vector, run_program};
use std::num::NonZeroU8;

/// The bundled programs whose hart runs are encoded and decoded both ways.
const RUN_PROGRAMS: [&str; 4] = [
    "loops-rv32imac",
    "fnptr-rv64gc",
    "switch-rv64gc",
    "heap-rv32imac",
];

fn their_params(p: &Params) -> Parameters {
    let nz = |v: u8| NonZeroU8::new(v.max(1)).unwrap();
    Parameters {
        cache_size_p: p.cache_size_p,
        call_counter_size_p: p.call_counter_size_p,
        context_width_p: nz(p.context_width_p),
        time_width_p: nz(p.time_width_p),
        ecause_width_p: nz(p.ecause_width_p),
        f0s_width_p: p.f0s_width_p,
        iaddress_lsb_p: p.iaddress_lsb_p,
        iaddress_width_p: nz(p.iaddress_width_p),
        nocontext_p: p.nocontext_p,
        notime_p: p.notime_p,
        privilege_width_p: nz(p.privilege_width_p),
        return_stack_size_p: p.return_stack_size_p,
        sijump_p: p.sijump_p,
    }
}

/// Its address mode: full or delta.
fn address_mode(full: bool) -> AddressMode {
    if full {
        AddressMode::Full
    } else {
        AddressMode::Delta
    }
}

/// The retired PCs `riscv-etrace` reconstructs from a stream of encapsulated packets (the
/// `te_inst_raw` header is the encapsulation header with no srcID and no timestamp).
fn their_pcs(elf_bytes: &[u8], trace: &[u8], p: &Params, full: bool) -> Result<Vec<u64>, String> {
    their_pcs_framed(elf_bytes, trace, p, full, 0, |d| {
        let pkt = d
            .decode_encap_packet()
            .map_err(|e| format!("packet: {e:?}"))?;
        pkt.into_normal()
            .map(|n| n.decode_payload().map_err(|e| format!("payload: {e:?}")))
            .transpose()
    })
}

/// Its packet decoder, reading packets whose source index is `index_bits` wide.
type TheirDecoder<'a> = packet::decoder::Decoder<'a, riscv_etrace::packet::unit::Reference>;

/// Its payloads of trace unit `U`.
type TheirPayload<U> = riscv_etrace::packet::payload::Payload<
    <U as riscv_etrace::packet::unit::Unit>::IOptions,
    <U as riscv_etrace::packet::unit::Unit>::DOptions,
>;

/// The retired PCs `riscv-etrace` reconstructs from `trace`, its packets read one at a time by
/// `next` (a payload, or `None` for a packet that carries none).
fn their_pcs_framed(
    elf_bytes: &[u8],
    trace: &[u8],
    p: &Params,
    full: bool,
    index_bits: u8,
    next: impl FnMut(
        &mut TheirDecoder,
    ) -> Result<Option<riscv_etrace::packet::payload::Payload>, String>,
) -> Result<Vec<u64>, String> {
    use riscv_etrace::packet::unit::Reference;
    their_pcs_of_unit(elf_bytes, trace, p, full, index_bits, Reference, next)
}

/// [`their_pcs_framed`] for the support packets of trace unit `unit` (`riscv-etrace`'s name
/// for an encoder's implementation-defined *ioptions*/*doptions*).
fn their_pcs_of_unit<U: riscv_etrace::packet::unit::Unit + Clone>(
    elf_bytes: &[u8],
    trace: &[u8],
    p: &Params,
    full: bool,
    index_bits: u8,
    unit: U,
    mut next: impl FnMut(&mut packet::decoder::Decoder<U>) -> Result<Option<TheirPayload<U>>, String>,
) -> Result<Vec<u64>, String> {
    let elf = elf::ElfBytes::<elf::endian::LittleEndian>::minimal_parse(elf_bytes).unwrap();
    let binary: Elf<_, _, riscv_etrace::instruction::base::Set> = Elf::new(elf).unwrap();
    let params = their_params(p);
    let mut decoder = packet::builder()
        .with_params(&params)
        .with_hart_index_width(index_bits)
        .for_unit(unit)
        .decoder(trace);
    let mut tracer: Tracer<_, riscv_etrace::types::stack::VecStack> = tracer::builder()
        .with_binary(binary)
        .with_params(&params)
        .with_address_mode(address_mode(full))
        .build()
        .unwrap();
    let mut pcs = Vec::new();
    while decoder.bytes_left() > 0 {
        let at = trace.len() - decoder.bytes_left();
        let Some(payload) = next(&mut decoder).map_err(|e| format!("at {at}: {e}"))? else {
            continue;
        };
        tracer
            .process_payload(&payload)
            .map_err(|e| format!("tracer at {at}: {e:?}"))?;
        for it in tracer.by_ref() {
            let it =
                it.map_err(|e| format!("item after packet at {at} (PC {}): {e:?}", pcs.len()))?;
            if let item::Kind::Regular(_) = it.kind() {
                pcs.push(it.pc());
            }
        }
    }
    Ok(pcs)
}

#[test]
fn riscv_etrace_decodes_the_reference_vectors() {
    let Some(dir) = conformance_dir() else {
        return;
    };
    for prog in [
        "matrix-rv32imac",
        "matrix-rv64gc",
        "parser-rv64gc",
        "crc-rv32imac",
    ] {
        let bits = if prog.contains("rv64") { 64 } else { 32 };
        let elf = std::fs::read(dir.join(format!("etrace/{prog}/{prog}.elf"))).unwrap();
        let want = parse_pcs(&read_vector(&dir, &format!("etrace/{prog}/{prog}.pcs.txt")));
        // Full address (itype4_debug) only for RV64, as below.
        let cfgs: &[(&str, bool)] = if bits == 64 {
            &[("itype4_basic", false), ("itype4_debug", true)]
        } else {
            &[("itype4_basic", false)]
        };
        for &(cfg, full) in cfgs {
            let base = format!("etrace/{prog}/{cfg}");
            let scf = read_vector(&dir, &format!("{base}/hardware_{bits}.scf"));
            let p =
                params_from_scf(std::str::from_utf8(&scf).unwrap(), Params::reference(64)).unwrap();
            let raw = read_vector(&dir, &format!("{base}/{prog}.te_inst_raw"));
            let got = their_pcs(&elf, &raw, &p, full).unwrap_or_else(|e| panic!("{base}: {e}"));
            assert_pcs_eq(&base, "riscv-etrace", &got, "X.pcs.txt", &want);
        }
    }
}

#[test]
fn riscv_etrace_decodes_rvtrace_traces() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf");
    for name in RUN_PROGRAMS {
        let path = dir.join(format!("{name}.elf"));
        let elf = std::fs::read(&path).unwrap();
        let run = run_program(&path, &format!("elf/{name}.elf"), 4);
        let xlen = run.image.files()[0].xlen.bits() as u8;
        // Full address mode only for RV64: riscv-etrace 0.10 reads the full address field as
        // signed, which for RV32 (a 31-bit field with bit 30 set for 0x8000_0000 and up) gives
        // it a different trap handling path (see the crate README).
        let modes: &[bool] = if xlen == 64 { &[false, true] } else { &[false] };
        for &full in modes {
            let cfg = TraceConfig::build(&ConfigInputs {
                xlen_bits: xlen,
                full_address: full,
                ..ConfigInputs::default()
            })
            .unwrap();
            let trace = encode(&cfg, &run.records).unwrap();
            let got = their_pcs(&elf, &trace, &cfg.params, full)
                .unwrap_or_else(|e| panic!("{name} full={full}: {e}"));
            assert_pcs_eq(
                &format!("{name} full={full}"),
                "riscv-etrace",
                &got,
                "run",
                &run.pcs,
            );
        }
    }
}

/// An ingress record as a step of `riscv-etrace`'s trace generator (its hart-to-encoder
/// interface, E-Trace ingressPort.adoc): one instruction or trap per record.
#[derive(Clone, Copy)]
struct Step(rvtrace_ingress::Record);

impl riscv_etrace::generator::step::Step for Step {
    fn address(&self) -> u64 {
        self.0.iaddr
    }

    fn kind(&self) -> riscv_etrace::generator::step::Kind {
        use riscv_etrace::instruction::Size;
        let r = &self.0;
        let size = if r.ilastsize == 0 {
            Size::Compressed
        } else {
            Size::Normal
        };
        riscv_etrace::generator::step::Kind::from_hart(
            (r.itype as u8).try_into().unwrap(),
            r.cause as u16,
            r.tval,
            size,
            r.iretire != 0,
            r.sijump,
        )
    }

    fn ctype(&self) -> riscv_etrace::generator::hart2enc::CType {
        self.0.ctype.try_into().unwrap()
    }

    fn context(&self) -> riscv_etrace::types::Context {
        riscv_etrace::types::Context {
            privilege: self.0.priv_.try_into().unwrap(),
            context: self.0.context,
        }
    }
}

/// The trace `riscv-etrace`'s generator makes of `records` (delta or full addresses; a resync
/// every `resync` records when given), each payload framed by `frame` (its bytes appended).
fn their_trace(
    records: &[rvtrace_ingress::Record],
    p: &Params,
    full: bool,
    resync: Option<usize>,
    frame: impl FnMut(&Parameters, riscv_etrace::packet::payload::Payload, &mut Vec<u8>),
) -> Vec<u8> {
    let ioptions = riscv_etrace::packet::unit::ReferenceIOptions {
        full_address: full,
        ..Default::default()
    };
    their_trace_with(records, p, full, resync, ioptions, frame)
}

/// [`their_trace`] with the support packets' *ioptions* `ioptions` (of some trace unit).
fn their_trace_with<I, D>(
    records: &[rvtrace_ingress::Record],
    p: &Params,
    full: bool,
    resync: Option<usize>,
    ioptions: I,
    mut frame: impl FnMut(&Parameters, riscv_etrace::packet::payload::Payload<I, D>, &mut Vec<u8>),
) -> Vec<u8>
where
    I: riscv_etrace::packet::unit::IOptions + Clone,
    D: Clone + Default,
{
    use riscv_etrace::generator::{self, Event, Generator};
    use riscv_etrace::packet::payload::InstructionTrace;
    let params = their_params(p);
    let mut gen: Generator<Step, I, D> = generator::builder()
        .with_params(&params)
        .with_address_mode(address_mode(full))
        .build()
        .unwrap();
    let mut out = Vec::new();
    let support = gen
        .begin_qualification(ioptions, Default::default())
        .unwrap();
    frame(&params, InstructionTrace::from(support).into(), &mut out);
    for (i, r) in records.iter().enumerate() {
        let event = resync
            .is_some_and(|n| i > 0 && i % n == 0)
            .then_some(Event::ReSync);
        for p in gen.process_step(Step(*r), event) {
            frame(&params, p.unwrap().into(), &mut out);
        }
    }
    for p in gen.end_qualification(true) {
        frame(&params, p.unwrap().into(), &mut out);
    }
    out
}

/// A payload framed as `te_inst_raw` (encapsulation header, *flow* 2, no srcID or timestamp).
fn te_inst_raw(
    params: &Parameters,
    payload: riscv_etrace::packet::payload::Payload,
    out: &mut Vec<u8>,
) {
    let mut buf = [0u8; 64];
    let mut enc = packet::builder()
        .with_params(params)
        .with_hart_index_width(0)
        .encoder(&mut buf);
    enc.encode(&packet::encap::Normal::new(2, 0, payload))
        .unwrap();
    let n = 64 - enc.uncommitted();
    out.extend_from_slice(&buf[..n]);
}

/// rvtrace's decoder on `trace` framed as `framing` (the packets of source `src` when given):
/// the retired PCs; a loss is a failure.
fn our_pcs(
    what: &str,
    image: &rvtrace_image::Image,
    trace: &[u8],
    p: &Params,
    full: bool,
    framing: rvtrace_etrace::config::Framing,
    src: Option<u16>,
) -> Vec<u64> {
    use rvtrace_etrace::decoder::{Decoder, DecoderConfig};
    use rvtrace_etrace::IOptions;
    let xlen = image.files()[0].xlen;
    let io = IOptions {
        full_address: full,
        ..IOptions::default()
    };
    let mut o = DecoderConfig::with_layout(*p, io, framing, rvtrace_isa::IsaConfig::new(xlen));
    o.src = src;
    let mut dec = Decoder::new(image, o);
    let (pcs, losses) = rvtrace_testkit::flow::decode_pcs(&mut dec, image, trace);
    assert!(losses.is_empty(), "{what}: {losses:?}");
    pcs
}

/// The other direction: `riscv-etrace`'s own trace generator (a software encoder written from
/// the spec by others) encodes the reference flow's encoder inputs and rvtrace's hart runs;
/// rvtrace's decoder rebuilds the retired PCs from its packets.
#[test]
fn rvtrace_decodes_riscv_etrace_generator_traces() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf");
    let mut cases: Vec<(
        String,
        rvtrace_image::Image,
        Vec<rvtrace_ingress::Record>,
        Vec<u64>,
    )> = Vec::new();
    for name in RUN_PROGRAMS {
        let path = dir.join(format!("{name}.elf"));
        let run = run_program(&path, &format!("elf/{name}.elf"), 4);
        cases.push((name.into(), run.image, run.records, run.pcs));
    }
    if let Some(cdir) = conformance_dir() {
        for prog in ["crc-rv32imac", "matrix-rv64gc"] {
            let mut image = rvtrace_image::Image::new();
            image
                .load_file(&cdir.join(format!("etrace/{prog}/{prog}.elf")))
                .unwrap();
            let csv = read_vector(
                &cdir,
                &format!("etrace/{prog}/itype4_basic/{prog}.encoder_input"),
            );
            let records: Vec<_> = rvtrace_ingress::etrace_csv::EtraceCsvReader::new(&csv[..])
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            let want = parse_pcs(&read_vector(
                &cdir,
                &format!("etrace/{prog}/{prog}.pcs.txt"),
            ));
            cases.push((
                format!("{prog} (reference flow input)"),
                image,
                records,
                want,
            ));
        }
    }
    for (name, image, records, want) in &cases {
        let xlen = image.files()[0].xlen.bits() as u8;
        // Full addresses for RV64 only, as above.
        let modes: &[bool] = if xlen == 64 { &[false, true] } else { &[false] };
        for &full in modes {
            for resync in [None, Some(1000)] {
                let cfg = TraceConfig::build(&ConfigInputs {
                    xlen_bits: xlen,
                    full_address: full,
                    ..ConfigInputs::default()
                })
                .unwrap();
                let trace = their_trace(records, &cfg.params, full, resync, te_inst_raw);
                let what = format!("{name} full={full} resync={resync:?}");
                let raw = rvtrace_etrace::config::Framing::Raw;
                let got = our_pcs(&what, image, &trace, &cfg.params, full, raw, None);
                assert_pcs_eq(&what, "rvtrace", &got, "run", want);
            }
        }
    }
}

/// The E-Trace 1.x Siemens Messaging Infrastructure framing (`--format smi`), both ways with
/// `riscv-etrace`'s SMI packets: its generator's payloads in its SMI packets (with and without a
/// 16-bit time tag each) decode with rvtrace; rvtrace's encoder writing SMI packets of source 5
/// with a 6-bit index decodes with `riscv-etrace`. (Its SMI encoder writes no index field,
/// though its decoder reads one, so only index-less packets go that way; where a stream has both
/// an index and time tags the two read them in a different order: see `codec::encap`.)
#[test]
fn smi_framing_both_ways() {
    use riscv_etrace::packet::smi;
    use rvtrace_etrace::codec::EncapConfig;
    use rvtrace_etrace::config::Framing;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf");
    for name in ["loops-rv32imac", "fnptr-rv64gc"] {
        let path = dir.join(format!("{name}.elf"));
        let run = run_program(&path, &format!("elf/{name}.elf"), 4);
        let xlen = run.image.files()[0].xlen.bits() as u8;
        let cfg = TraceConfig::build(&ConfigInputs {
            xlen_bits: xlen,
            ..ConfigInputs::default()
        })
        .unwrap();
        for time_tags in [false, true] {
            let mut tag = 0u16;
            let trace = their_trace(
                &run.records,
                &cfg.params,
                false,
                None,
                |params, payload, out| {
                    let mut buf = [0u8; 64];
                    let mut enc = packet::builder()
                        .with_params(params)
                        .with_hart_index_width(0)
                        .encoder(&mut buf);
                    let payload =
                        riscv_etrace::packet::payload::InstructionTrace::try_from(payload).unwrap();
                    let mut pkt = smi::Packet::new(0b10, 0, payload);
                    if time_tags {
                        tag = tag.wrapping_add(0x1234);
                        pkt = pkt.with_time_tag(tag);
                    }
                    enc.encode(&pkt).unwrap();
                    let n = 64 - enc.uncommitted();
                    out.extend_from_slice(&buf[..n]);
                },
            );
            let what = format!("{name} riscv-etrace SMI time tags {time_tags}");
            let framing = Framing::Encap(EncapConfig::smi(0));
            let got = our_pcs(&what, &run.image, &trace, &cfg.params, false, framing, None);
            assert_pcs_eq(&what, "rvtrace", &got, "run", &run.pcs);
        }
        // rvtrace's encoder writing SMI: riscv-etrace reads it.
        let smi_cfg = TraceConfig {
            framing: Framing::Encap(EncapConfig::smi(6)),
            ..cfg
        }
        .with_srcid(Some(5))
        .unwrap();
        let trace = encode(&smi_cfg, &run.records).unwrap();
        let elf = std::fs::read(&path).unwrap();
        let got = their_pcs_framed(&elf, &trace, &cfg.params, false, 6, |d| {
            let pkt = d
                .decode_smi_packet()
                .map_err(|e| format!("packet: {e:?}"))?;
            if pkt.hart() != 5 {
                return Err(format!("hart {}", pkt.hart()));
            }
            pkt.decode_payload()
                .map(Some)
                .map_err(|e| format!("payload: {e:?}"))
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_pcs_eq(
            &format!("{name} rvtrace SMI"),
            "riscv-etrace",
            &got,
            "run",
            &run.pcs,
        );
    }
}

/// The PULP platform's rv_tracer support packets (`--options-layout pulp`: 7 *ioptions* bits in
/// its order, no *doptions*), both ways with `riscv-etrace`'s `PULP` trace unit: rvtrace's
/// encoder in that layout decodes with `riscv-etrace` to the run's PCs, and `riscv-etrace`'s
/// generator with `PULPIOptions` decodes with rvtrace; delta and (RV64) full addresses.
#[test]
fn pulp_options_layout_both_ways() {
    use riscv_etrace::packet::unit::{NoOptions, PULPIOptions, PULP};
    use rvtrace_etrace::config::Framing;
    use rvtrace_etrace::OptionsLayout;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf");
    for name in ["loops-rv32imac", "fnptr-rv64gc", "switch-rv64gc"] {
        let path = dir.join(format!("{name}.elf"));
        let elf = std::fs::read(&path).unwrap();
        let run = run_program(&path, &format!("elf/{name}.elf"), 4);
        let xlen = run.image.files()[0].xlen.bits() as u8;
        // Full addresses for RV64 only, as above.
        let modes: &[bool] = if xlen == 64 { &[false, true] } else { &[false] };
        for &full in modes {
            let cfg = TraceConfig::build(&ConfigInputs {
                xlen_bits: xlen,
                full_address: full,
                options_layout: OptionsLayout::Pulp,
                ..ConfigInputs::default()
            })
            .unwrap();
            assert_eq!(
                (
                    cfg.params.encoder_mode_width,
                    cfg.params.ioptions_width,
                    cfg.params.doptions_width
                ),
                (1, 7, 0)
            );
            let what = format!("{name} full={full} PULP");
            // rvtrace -> riscv-etrace.
            let trace = encode(&cfg, &run.records).unwrap();
            let got = their_pcs_of_unit(&elf, &trace, &cfg.params, full, 0, PULP, |d| {
                let pkt = d
                    .decode_encap_packet()
                    .map_err(|e| format!("packet: {e:?}"))?;
                pkt.into_normal()
                    .map(|n| n.decode_payload().map_err(|e| format!("payload: {e:?}")))
                    .transpose()
            })
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_pcs_eq(&what, "riscv-etrace", &got, "run", &run.pcs);
            // riscv-etrace -> rvtrace.
            let ioptions = PULPIOptions {
                delta_address: !full,
                full_address: full,
                implicit_exception: false,
                sijump: false,
                implicit_return: false,
                branch_prediction: false,
                jump_target_cache: false,
            };
            let trace = their_trace_with::<_, NoOptions>(
                &run.records,
                &cfg.params,
                full,
                Some(1000),
                ioptions,
                |params, payload, out| {
                    let mut buf = [0u8; 64];
                    let mut enc = packet::builder()
                        .with_params(params)
                        .with_hart_index_width(0)
                        .for_unit(PULP)
                        .encoder(&mut buf);
                    enc.encode(&packet::encap::Normal::new(2, 0, payload))
                        .unwrap();
                    let n = 64 - enc.uncommitted();
                    out.extend_from_slice(&buf[..n]);
                },
            );
            let got = our_pcs(
                &what,
                &run.image,
                &trace,
                &cfg.params,
                full,
                Framing::Raw,
                None,
            );
            assert_pcs_eq(&what, "rvtrace", &got, "run", &run.pcs);
        }
    }
}

/// The ESP32-C6 trace unit's framing (`--format esp32`), both ways with `riscv-etrace`'s
/// `packet::esp32` reader: rvtrace's encoder writing it decodes with `riscv-etrace`; the
/// generator's payloads (its own te_inst_raw packets, re-framed with the 3-byte header as that
/// reader takes it: length with the header, 16-bit index) decode with rvtrace.
#[test]
fn esp32_framing_both_ways() {
    use rvtrace_etrace::codec::EncapConfig;
    use rvtrace_etrace::config::Framing;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf");
    for name in ["loops-rv32imac", "heap-rv32imac"] {
        let path = dir.join(format!("{name}.elf"));
        let elf = std::fs::read(&path).unwrap();
        let run = run_program(&path, &format!("elf/{name}.elf"), 4);
        let cfg = TraceConfig {
            framing: Framing::Encap(EncapConfig::ESP32),
            ..TraceConfig::build(&ConfigInputs {
                xlen_bits: 32,
                ..ConfigInputs::default()
            })
            .unwrap()
        };
        // rvtrace -> riscv-etrace.
        let trace = encode(&cfg, &run.records).unwrap();
        let mut index = 0u16;
        let got = their_pcs_framed(&elf, &trace, &cfg.params, false, 0, |d| {
            let pkt = d
                .decode_esp32_packet()
                .map_err(|e| format!("packet: {e:?}"))?;
            let Some(n) = pkt.into_normal() else {
                return Ok(None);
            };
            if n.index() != index {
                return Err(format!("index {} after {}", n.index(), index));
            }
            index = index.wrapping_add(1);
            n.decode_payload()
                .map(Some)
                .map_err(|e| format!("payload: {e:?}"))
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_pcs_eq(
            &format!("{name} ESP32"),
            "riscv-etrace",
            &got,
            "run",
            &run.pcs,
        );
        // riscv-etrace -> rvtrace, a null packet between every two.
        let mut n = 0u16;
        let trace = their_trace(
            &run.records,
            &cfg.params,
            false,
            None,
            |params, payload, out| {
                let mut raw = Vec::new();
                te_inst_raw(params, payload, &mut raw);
                let len = (raw[0] & 0x1f) as usize;
                assert_eq!(raw.len(), 1 + len);
                out.push((3 + len) as u8);
                out.extend_from_slice(&n.wrapping_mul(7).to_le_bytes());
                out.extend_from_slice(&raw[1..]);
                out.extend_from_slice(&[0, 0, 0]);
                n += 1;
            },
        );
        let what = format!("{name} riscv-etrace ESP32");
        let got = our_pcs(
            &what,
            &run.image,
            &trace,
            &cfg.params,
            false,
            cfg.framing,
            None,
        );
        assert_pcs_eq(&what, "rvtrace", &got, "run", &run.pcs);
    }
}
