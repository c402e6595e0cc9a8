//! Text dump of an E-Trace byte stream, packet by packet (`rvtrace dump etrace`): each packet's
//! byte offset, kind and fields, with the absolute address a differential *address* resolves to
//! (as Intel ptdump's `--lastip`), or the reference flow's `te_inst` CSV.

use std::io::{self, Write};

use crate::codec::te_inst::CSV_HEADER;
use crate::codec::{EncapConfig, Item, PacketReader};
use crate::config::{Framing, TraceConfig};
use crate::params::IOptions;
use crate::TeInst;

/// Counts from a dump.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpStats {
    /// `te_inst` packets.
    pub packets: u64,
    /// Packets or bytes that did not decode.
    pub errors: u64,
}

/// Names of the options an *ioptions* value enables (`implicit-return,sijump`, or `none`), as
/// the command line spells them.
pub fn option_names(o: IOptions) -> String {
    let mut v = Vec::new();
    for (on, name) in [
        (o.implicit_return, "implicit-return"),
        (o.implicit_exception, "implicit-exception"),
        (o.full_address, "full-address"),
        (o.jump_target_cache, "jump-target-cache"),
        (o.branch_prediction, "branch-prediction"),
        (o.sijump, "sijump"),
    ] {
        if on {
            v.push(name);
        }
    }
    if v.is_empty() {
        "none".into()
    } else {
        v.join(",")
    }
}

/// Write the packets of `data` (framed as `cfg.framing`, laid out per `cfg.params`) to `out`:
/// one line per packet, `OFFSET  KIND  FIELDS  -> ADDRESS`; with `csv`, the reference flow's
/// `te_inst` CSV instead (header first, CRLF line ends as its Python csv writer ends them, errors
/// left out).
pub fn dump<W: Write + ?Sized>(
    data: &[u8],
    cfg: &TraceConfig,
    csv: bool,
    out: &mut W,
) -> io::Result<DumpStats> {
    let (encap, raw) = match cfg.framing {
        Framing::Raw => (EncapConfig::TE_INST_RAW, true),
        Framing::Encap(e) => (e, false),
    };
    let p = cfg.params;
    if csv {
        write!(out, "{CSV_HEADER}\r\n")?;
    }
    let mut st = DumpStats::default();
    // The last absolute address, to resolve differential addresses (as ptdump's --lastip).
    let mut last: Option<u64> = None;
    let amask = if p.iaddress_width_p >= 64 {
        u64::MAX
    } else {
        (1u64 << p.iaddress_width_p) - 1
    };
    let mut rd = PacketReader::new(data, encap, raw, p, cfg.options);
    while let Some((off, item)) = rd.next() {
        match item {
            Item::Packet(pkt) if csv => {
                st.packets += 1;
                write!(out, "{}\r\n", pkt.csv(&p))?;
            }
            Item::Packet(pkt) => {
                st.packets += 1;
                let lsb = p.iaddress_lsb_p as u32;
                let full = rd.options().full_address;
                let abs = match &pkt {
                    TeInst::Start { address, .. } => Some((address << lsb) & amask),
                    TeInst::Trap {
                        address: Some(a), ..
                    } => Some((a << lsb) & amask),
                    TeInst::Support(_) | TeInst::Context { .. } | TeInst::Trap { .. } => None,
                    _ => match pkt.tail() {
                        Some(t) if full => Some((t.address << lsb) & amask),
                        Some(t) => last
                            .map(|l| l.wrapping_add((t.signed_address(&p) as u64) << lsb) & amask),
                        None => None,
                    },
                };
                let extra = match (&pkt, abs) {
                    (TeInst::Support(sp), _) => {
                        last = None;
                        format!("  [{}]", option_names(IOptions::from_bits(sp.ioptions)))
                    }
                    (_, Some(x)) => {
                        last = Some(x);
                        format!("  -> {x:#x}")
                    }
                    (_, None) if pkt.tail().is_some() => {
                        "  -> ? (no address to resolve from yet)".into()
                    }
                    _ => String::new(),
                };
                writeln!(
                    out,
                    "{off:08x}  {:<4}  {}{extra}",
                    pkt.kind(),
                    pkt.fields(&p)
                )?;
            }
            Item::Other(f) if !csv => writeln!(out, "{off:08x}  --    {f:?}")?,
            Item::Other(_) => {}
            Item::Error(e) => {
                st.errors += 1;
                last = None;
                if !csv {
                    writeln!(out, "{off:08x}  ERROR {e}")?;
                }
            }
        }
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(option_names(IOptions::default()), "none");
        let o = IOptions {
            implicit_return: true,
            sijump: true,
            ..IOptions::default()
        };
        assert_eq!(option_names(o), "implicit-return,sijump");
    }
}
