//! E-Trace's side of the decoder cases (`tests/cases/*.case`, the format in
//! `crates/ntrace/tests/cases/README.md`): a case's settings as a [`TraceConfig`], its `te_inst`
//! lines as packets and as the bytes the crate's own codec frames them into. Shared by the
//! harness (`cases.rs`, which decodes them) and the encoder's tests (`corner_cases.rs`, which
//! check that rvtrace's encoder gives exactly a case's packets).

use rvtrace_etrace::codec::encap::{MAX_PACKET, RAW_TE_INST};
use rvtrace_etrace::codec::{encode_frame, AddrTail, FrameFields, Support, SyncFields};
use rvtrace_etrace::config::{params_from_scf, TraceConfig};
use rvtrace_etrace::options::Options;
use rvtrace_etrace::{IOptions, TeInst};
use rvtrace_testkit::case::{Case, CaseError, CaseFile, Fields, TraceLine};

/// The settings of a case's `option` lines (the file's, then its own), for a hart of the file's
/// `xlen`: the command line's options ([`Options`], named as `rvtrace encode etrace` names them:
/// `format=raw`, `src-bits=4`, `implicit-return=1`, `return-stack=4`, `sync-period=2`, ...)
/// and discovery parameters named as in `discovery.adoc` (`iaddress_lsb_p=0`), which apply last.
pub fn config(f: &CaseFile, c: &Case) -> Result<TraceConfig, CaseError> {
    let mut o = Options::default();
    let mut scf = String::new();
    for l in f.options_of(c) {
        let word = |allowed: &[&str]| {
            if allowed.contains(&l.value.as_str()) {
                Ok(Some(l.value.clone()))
            } else {
                Err(f.error(l.line, format!("{}: one of {}", l.name, allowed.join(", "))))
            }
        };
        let small = |v: u64| {
            u8::try_from(v).map_err(|_| f.error(l.line, format!("{}={v}: too large", l.name)))
        };
        match l.name.as_str() {
            "preset" => o.preset = word(&["rvtrace", "reference"])?,
            "format" => o.format = word(&["raw", "encap"])?,
            "full-address" => o.full_address = l.number(f)? != 0,
            "implicit-exception" => o.implicit_exception = l.number(f)? != 0,
            "sijump" => o.sijump = l.number(f)? != 0,
            "implicit-return" => o.implicit_return = l.number(f)? != 0,
            "timestamps" => o.timestamps = l.number(f)? != 0,
            "return-stack" => o.return_stack = Some(l.number(f)? as u32),
            "branch-prediction" => o.branch_prediction = Some(l.number(f)? as u32),
            "jump-target-cache" => o.jump_target_cache = Some(l.number(f)? as u32),
            "timestamp-bytes" => o.timestamp_bytes = Some(small(l.number(f)?)?),
            "type-bits" => o.type_bits = Some(small(l.number(f)?)?),
            "src-bits" => o.srcid_bits = Some(small(l.number(f)?)?),
            "src" => o.srcid = Some(l.number(f)? as u16),
            "itype-width" => o.itype_width = Some(small(l.number(f)?)?),
            // The encoder's; the decoder does not need it.
            "sync-period" => o.resync = Some(l.number(f)?),
            p if PARAMS.contains(&p) => scf += &format!("{p}={}\n", l.number(f)?),
            name => return Err(f.error(l.line, format!("no E-Trace option {name}"))),
        }
    }
    let mut cfg = o
        .config(f.xlen.bits() as u8, None)
        .map_err(|e| f.error(0, e.to_string()))?;
    if !scf.is_empty() {
        cfg.params = params_from_scf(&scf, cfg.params).map_err(|e| f.error(0, e.to_string()))?;
    }
    Ok(cfg)
}

/// The discovery parameters a case may set (`discovery.adoc` `tab:iparameters`, those
/// `params_from_scf` reads).
const PARAMS: &[&str] = &[
    "arch_p",
    "bpred_size_p",
    "cache_size_p",
    "call_counter_size_p",
    "context_width_p",
    "time_width_p",
    "ecause_width_p",
    "f0s_width_p",
    "iaddress_lsb_p",
    "iaddress_width_p",
    "privilege_width_p",
    "return_stack_size_p",
    "itype_width_p",
    "nocontext_p",
    "notime_p",
    "sijump_p",
];

/// The fields that end formats 0 (with address), 1 (with address) and 2 (`AddrTail`).
const TAIL: &[&str] = &["address", "notify", "updiscon", "irreport", "irdepth"];

/// The packet of a line `te_inst format=F subformat=S field=value ...` (`payload.adoc`, the
/// fields named as there; what a field holds is its raw bits as transmitted, as `rvtrace dump
/// etrace` prints them), with the encapsulation's *srcID* and *timestamp* (`src`, `tstamp`).
/// The address of format 0 subformat 0, of format 1 and of a trap, and a trap's *tval*, are
/// present when written (format 0 and 1: when *branch_fmt* or *branches* say so).
pub fn te_inst(
    f: &CaseFile,
    line: usize,
    name: &str,
    w: &[(String, String)],
) -> Result<(TeInst, FrameFields), CaseError> {
    if name != "te_inst" {
        return Err(f.error(line, format!("{name}: not an E-Trace packet (te_inst)")));
    }
    let err = |m: String| f.error(line, m);
    // The format and subformat first: they decide the other fields.
    let head: Vec<_> = w
        .iter()
        .filter(|(k, _)| k == "format" || k == "subformat")
        .cloned()
        .collect();
    let head = Fields::new(f, line, name, &head, &["format", "subformat"], &[])?;
    let (format, sub) = (head.bits("format", 2)?, head.opt("subformat"));
    let known: Vec<&str> = match (format, sub) {
        (0, Some(0)) => [&["branch_count", "branch_fmt"][..], TAIL].concat(),
        (0, Some(1)) => vec!["index", "branches", "branch_map", "irreport", "irdepth"],
        (1, None) => [&["branches", "branch_map"][..], TAIL].concat(),
        (2, None) => TAIL.to_vec(),
        (3, Some(0)) => [&SYNC[..], &["address"]].concat(),
        (3, Some(1)) => [
            &SYNC[..],
            &["ecause", "interrupt", "thaddr", "address", "tval"],
        ]
        .concat(),
        (3, Some(2)) => vec!["privilege", "time", "context"],
        (3, Some(3)) => vec![
            "ienable",
            "encoder_mode",
            "qual_status",
            "ioptions",
            "denable",
            "dloss",
            "doptions",
        ],
        _ => {
            return Err(err(format!(
                "format {format} subformat {sub:?}: no such packet"
            )))
        }
    };
    let all = [&["format", "subformat", "src", "tstamp"][..], &known].concat();
    let x = Fields::new(f, line, name, w, &all, QUAL)?;
    let bit = |k: &str| x.bits(k, 1).map(|v| v != 0);
    let tail = |present: bool| -> Result<Option<AddrTail>, CaseError> {
        if !present {
            return match TAIL.iter().find(|k| x.opt(k).is_some()) {
                Some(k) => Err(err(format!("{k}: this packet has no address"))),
                None => Ok(None),
            };
        }
        Ok(Some(AddrTail {
            address: x.get("address"),
            notify: bit("notify")?,
            updiscon: bit("updiscon")?,
            irreport: bit("irreport")?,
            irdepth: x.get("irdepth"),
        }))
    };
    let sync = || -> Result<SyncFields, CaseError> {
        Ok(SyncFields {
            branch: bit("branch")?,
            privilege: x.get("privilege"),
            time: x.get("time"),
            context: x.get("context"),
        })
    };
    let pkt = match (format, sub) {
        (0, Some(0)) => {
            let branch_fmt = x.bits("branch_fmt", 2)? as u8;
            TeInst::BranchCount {
                branch_count: x.bits("branch_count", 32)? as u32,
                branch_fmt,
                tail: tail(branch_fmt != 0)?,
            }
        }
        (0, Some(1)) => TeInst::JumpTargetIndex {
            index: x.get("index"),
            branches: x.bits("branches", 5)? as u8,
            branch_map: x.bits("branch_map", 32)? as u32,
            irreport: bit("irreport")?,
            irdepth: x.get("irdepth"),
        },
        (1, None) => {
            let branches = x.bits("branches", 5)? as u8;
            TeInst::Branch {
                branches,
                branch_map: x.bits("branch_map", 32)? as u32,
                tail: tail(branches != 0)?,
            }
        }
        (2, None) => TeInst::Addr(tail(true)?.unwrap_or_default()),
        (3, Some(0)) => TeInst::Start {
            sync: sync()?,
            address: x.get("address"),
        },
        (3, Some(1)) => TeInst::Trap {
            sync: sync()?,
            ecause: x.get("ecause"),
            interrupt: bit("interrupt")?,
            thaddr: bit("thaddr")?,
            address: x.opt("address"),
            tval: x.opt("tval"),
        },
        (3, Some(2)) => TeInst::Context {
            privilege: x.get("privilege"),
            time: x.get("time"),
            context: x.get("context"),
        },
        _ => TeInst::Support(Support {
            ienable: bit("ienable")?,
            encoder_mode: x.get("encoder_mode"),
            qual_status: rvtrace_etrace::codec::QualStatus::from_code(
                x.bits("qual_status", 2)? as u8
            ),
            ioptions: x.get("ioptions"),
            denable: bit("denable")?,
            dloss: bit("dloss")?,
            doptions: x.get("doptions"),
        }),
    };
    let frame = FrameFields {
        srcid: x.bits("src", 16)? as u16,
        timestamp: x.opt("tstamp"),
        ..FrameFields::default()
    };
    Ok((pkt, frame))
}

/// The fields format 3 subformats 0 and 1 begin with.
const SYNC: [&str; 4] = ["branch", "privilege", "time", "context"];

/// *qual_status* by name (`payload.adoc` `sec:format33`: 00 no_change .. 11 ended_ntr).
const QUAL: &[(&str, &[&str])] = &[(
    "qual_status",
    &["no_change", "ended_rep", "trace_lost", "ended_ntr"],
)];

/// A case's packets, and its trace as bytes: each `te_inst` encoded and
/// framed by the crate's codec as `cfg` says (`te_inst_raw` or the encapsulation; a support
/// packet's *ioptions* lay out the packets after it, as in the encoder's `FrameWriter`), the
/// `bytes` lines as they are.
pub fn trace(
    f: &CaseFile,
    c: &Case,
    cfg: &TraceConfig,
) -> Result<(Vec<TeInst>, Vec<u8>), CaseError> {
    let (encap, raw) = cfg.framing.reader();
    let mut options = cfg.options;
    let mut packets = Vec::new();
    let mut bytes = Vec::new();
    for t in &c.trace {
        match t {
            TraceLine::Record { line, name, fields } => {
                let (pkt, frame) = te_inst(f, *line, name, fields)?;
                if let TeInst::Support(s) = pkt {
                    options = IOptions::from_field(s.ioptions, cfg.params.options_layout);
                }
                let frame = FrameFields {
                    flow: if raw { RAW_TE_INST } else { 0 },
                    ptype: encap.te_inst_type,
                    ..frame
                };
                let mut out = [0u8; MAX_PACKET];
                let n = encode_frame(&pkt, &cfg.params, options, &frame, &encap, &mut out)
                    .map_err(|e| f.error(*line, format!("{}: {e}", pkt.kind())))?;
                bytes.extend_from_slice(&out[..n]);
                packets.push(pkt);
            }
            TraceLine::Bytes { bytes: b, .. } => bytes.extend_from_slice(b),
        }
    }
    Ok((packets, bytes))
}
