//! Cross-check with the independent `riscv-etrace` crate (FZI): for the options it supports
//! (delta and full addresses; the reference encoder's support packets), its tracer turns the
//! reference flow's conformance traces and rvtrace's own traces into the same retired PCs.

use riscv_etrace::binary::elf::Elf;
use riscv_etrace::config::{AddressMode, Parameters};
use riscv_etrace::packet;
use riscv_etrace::tracer::{self, item, Tracer};
use rvtrace_etrace::config::{params_from_scf, ConfigInputs, TraceConfig};
use rvtrace_etrace::encoder::{Encoder, FrameWriter};
use rvtrace_etrace::Params;
use rvtrace_testkit::{assert_pcs_eq, conformance_dir, parse_pcs, read_vector, run_program};
use std::num::NonZeroU8;

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

/// The retired PCs `riscv-etrace` reconstructs from a stream of encapsulated packets (the
/// `te_inst_raw` header is the encapsulation header with no srcID and no timestamp).
fn their_pcs(elf_bytes: &[u8], trace: &[u8], p: &Params, full: bool) -> Result<Vec<u64>, String> {
    let elf = elf::ElfBytes::<elf::endian::LittleEndian>::minimal_parse(elf_bytes).unwrap();
    let binary: Elf<_, _, riscv_etrace::instruction::base::Set> = Elf::new(elf).unwrap();
    let params = their_params(p);
    let mut decoder = packet::builder()
        .with_params(&params)
        .with_hart_index_width(0)
        .decoder(trace);
    let mut tracer: Tracer<_, riscv_etrace::types::stack::VecStack> = tracer::builder()
        .with_binary(binary)
        .with_params(&params)
        .with_address_mode(if full {
            AddressMode::Full
        } else {
            AddressMode::Delta
        })
        .build()
        .unwrap();
    let mut pcs = Vec::new();
    while decoder.bytes_left() > 0 {
        let at = trace.len() - decoder.bytes_left();
        let pkt = decoder
            .decode_encap_packet()
            .map_err(|e| format!("packet at {at}: {e:?}"))?;
        let Some(normal) = pkt.into_normal() else {
            continue;
        };
        let payload = normal
            .decode_payload()
            .map_err(|e| format!("payload at {at}: {e:?}"))?;
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
    for name in [
        "loops-rv32imac",
        "fnptr-rv64gc",
        "switch-rv64gc",
        "heap-rv32imac",
    ] {
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
            let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
            for r in &run.records {
                enc.push(r).unwrap();
            }
            let trace = enc.finish().unwrap().into_inner();
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
