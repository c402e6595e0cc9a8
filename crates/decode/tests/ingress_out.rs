//! The flow -> ingress adapter (`ingress_out::FlowIngress`) gives back the hart's records:
//! run -> ingress -> encode X -> decode X -> adapter equals the original records in every field
//! protocol X carries, for every test program and random programs, N-Trace and E-Trace.

use rvtrace_decode::transcode::{AdaptStats, FlowIngress, Records};
use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::decoder::{Decoder as EDecoder, DecoderConfig as EConfig};
use rvtrace_etrace::encoder::{Encoder as EEncoder, FrameWriter};
use rvtrace_flow::decode_all;
use rvtrace_image::Image;
use rvtrace_ingress::{Itype, Record};
use rvtrace_isa::IsaConfig;
use rvtrace_ntrace::decoder::{Decoder as NDecoder, DecoderConfig as NConfig};
use rvtrace_ntrace::encoder::Encoder as NEncoder;
use rvtrace_ntrace::options::EncoderConfig;
use rvtrace_testkit::randprog::{random_program, seeds};
use rvtrace_testkit::{run_elf_bytes, run_program, traceable_programs, ProgramRun};

/// Which record fields a protocol carries.
#[derive(Clone, Copy, Debug)]
struct Carried {
    /// Trap cause and value (E-Trace format 3 subformat 1; not N-Trace).
    cause: bool,
    /// Privilege (E-Trace sync packets; N-Trace Ownership messages).
    privilege: bool,
    /// The privilege a trap was taken from at a trap return's target, before anything retired
    /// there (not E-Trace: [`carried`]).
    xret_trap_privilege: bool,
}

fn isa(image: &Image) -> IsaConfig {
    IsaConfig::new(image.files()[0].xlen)
}

fn adapt(
    image: &Image,
    width: u8,
    decode: impl FnOnce(&mut FlowIngress<Records>),
) -> (Records, AdaptStats) {
    let mut a = FlowIngress::new(image, isa(image), width, Records::default());
    decode(&mut a);
    let (r, st) = a.finish();
    assert_eq!(st.refused, 0);
    (r, st)
}

fn ntrace(run: &ProgramRun, width: u8, ownership: bool) -> (Records, AdaptStats) {
    let isa = isa(&run.image);
    let mut cfg = EncoderConfig::new(isa.xlen);
    cfg.ownership = ownership;
    let mut enc = NEncoder::new(cfg);
    let mut bytes = Vec::new();
    for r in &run.records {
        enc.push(r, &mut bytes);
    }
    enc.finish(&mut bytes);
    adapt(&run.image, width, |a| {
        let mut dec = NDecoder::new(&run.image, NConfig::new(isa));
        decode_all(&mut dec, &bytes, a);
    })
}

fn etrace(run: &ProgramRun, width: u8) -> (Records, AdaptStats) {
    let isa = isa(&run.image);
    let cfg = TraceConfig::build(&ConfigInputs {
        xlen_bits: isa.xlen.bits() as u8,
        itype_width: Some(width),
        ..ConfigInputs::default()
    })
    .unwrap();
    let mut enc = EEncoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
    for r in &run.records {
        enc.push(r).unwrap();
    }
    let bytes = enc.finish().unwrap().into_inner();
    adapt(&run.image, width, |a| {
        let mut dec = EDecoder::new(&run.image, EConfig::from_config(&cfg, isa));
        decode_all(&mut dec, &bytes, a);
    })
}

/// The fields of `r` (after the original record `prev`) a protocol carries (the rest zeroed).
fn carried(r: &Record, prev: Option<&Record>, c: Carried) -> Record {
    // A trap taken at a trap return's target before it retired: E-Trace's trap packet (thaddr
    // 1) reports the handler's privilege (payload.adoc, "Format 3 thaddr, address and
    // privilege fields"), so the privilege the trap was taken from is not in the trace.
    let after_xret = r.iretire == 0 && prev.is_some_and(|p| p.itype == Itype::TrapReturn);
    Record {
        cause: if c.cause { r.cause } else { 0 },
        tval: if c.cause { r.tval } else { 0 },
        priv_: if c.privilege && (c.xret_trap_privilege || !after_xret) {
            r.priv_
        } else {
            0
        },
        // Time is carried only with time stamps, at messages/packets (module doc of
        // ingress_out); context: the hart reports none.
        time: 0,
        ..*r
    }
}

fn check(what: &str, got: &Records, st: &AdaptStats, want: &[Record], c: Carried) {
    assert!(got.losses.is_empty(), "{what}: {:?}", got.losses);
    assert_eq!(st.gaps, 0, "{what}");
    for (k, (g, w)) in got.records.iter().zip(want).enumerate() {
        let prev = k.checked_sub(1).map(|p| &want[p]);
        let (g, w) = (carried(g, prev, c), carried(w, prev, c));
        assert_eq!(
            g,
            w,
            "{what}: record {k} differs (got, original); the ones before:\n{:#?}",
            &want[k.saturating_sub(3)..k]
        );
    }
    assert_eq!(got.records.len(), want.len(), "{what}: record count");
}

const ETRACE: Carried = Carried {
    cause: true,
    privilege: true,
    xret_trap_privilege: false,
};

/// Every test program, itype 4: N-Trace (with and without Ownership) and E-Trace.
#[test]
fn test_programs_round_trip() {
    let (mut n_programs, mut n_causes) = (0, 0);
    for elf in traceable_programs() {
        let name = elf.file_name().unwrap().to_str().unwrap().to_string();
        let run = run_program(&elf, &format!("elf/{name}"), 4);
        let (r, st) = ntrace(&run, 4, false);
        // Without Ownership messages N-Trace carries no privilege: M is assumed.
        let n_plain = Carried {
            cause: false,
            privilege: false,
            xret_trap_privilege: false,
        };
        check(&format!("{name} ntrace"), &r, &st, &run.records, n_plain);
        let (r, st) = ntrace(&run, 4, true);
        let n_own = Carried {
            cause: false,
            privilege: true,
            xret_trap_privilege: true,
        };
        check(
            &format!("{name} ntrace --ownership"),
            &r,
            &st,
            &run.records,
            n_own,
        );
        assert_eq!(st.assumed_privilege, 0, "{name}");
        n_causes += st.assumed_causes;
        let (r, st) = etrace(&run, 4);
        check(&format!("{name} etrace"), &r, &st, &run.records, ETRACE);
        assert_eq!((st.assumed_causes, st.assumed_privilege), (0, 0), "{name}");
        n_programs += 1;
    }
    assert!(n_programs >= 38, "{n_programs} programs");
    // The trap programs fault: N-Trace has no cause for those.
    assert!(n_causes > 0);
}

/// Random programs (traps, timer interrupts, U mode, every call/return kind), itype 4 and 3.
#[test]
fn random_programs_round_trip() {
    for seed in seeds(12) {
        let p = random_program(seed);
        for width in [4, 3] {
            let run = run_elf_bytes(&p.elf, width);
            let what = format!("seed {seed} itype{width}");
            let (r, st) = ntrace(&run, width, true);
            let n_own = Carried {
                cause: false,
                privilege: true,
                xret_trap_privilege: true,
            };
            check(
                &format!("{what} ntrace --ownership"),
                &r,
                &st,
                &run.records,
                n_own,
            );
            let (r, st) = etrace(&run, width);
            check(&format!("{what} etrace"), &r, &st, &run.records, ETRACE);
        }
    }
}
