//! Text dump of an E-Trace byte stream, packet by packet (`rvtrace dump etrace`): each packet's
//! byte offset, kind and fields, with the absolute address a differential *address* resolves to
//! (as Intel ptdump's `--lastip`), or the reference flow's `te_inst` CSV.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::codec::te_inst::CSV_HEADER;
use crate::codec::{read_frame, read_trace_items, EncapConfig, Frame, Item};
use crate::config::{Framing, TraceConfig};
use crate::params::IOptions;
use crate::TeInst;

/// How the dump is written.
#[derive(Clone, Copy, Debug, Default)]
pub struct DumpOptions<'a> {
    /// The reference flow's `te_inst` CSV instead of the text.
    pub csv: bool,
    /// The program whose symbols name each resolved address (`-> 0x80000010 <main+0x10>`, as
    /// objdump writes them).
    pub image: Option<&'a rvtrace_image::Image>,
}

/// Counts from a dump.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpStats {
    /// `te_inst` packets.
    pub packets: u64,
    /// Packets or bytes that did not decode.
    pub errors: u64,
    /// Bytes read.
    pub bytes: u64,
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
/// one line per packet, `OFFSET  KIND  FIELDS  -> ADDRESS`; with `opts.csv`, the reference flow's
/// `te_inst` CSV instead (header first, CRLF line ends as its Python csv writer ends them, errors
/// left out). A stream of several harts (an encapsulation *srcID* field, `e-trace-specifics.adoc`):
/// with `cfg.srcid` only that hart's packets are written; without, each line names its packet's
/// `srcID=K` and differential addresses resolve against the same hart's last address.
pub fn dump<W: Write + ?Sized>(
    data: &[u8],
    cfg: &TraceConfig,
    opts: &DumpOptions,
    out: &mut W,
) -> io::Result<DumpStats> {
    dump_read(data, cfg, opts, out)
}

/// [`dump`] of a stream read from `input` a window at a time
/// ([`read_trace_items`]): the same text, with memory flat in the stream's
/// size. [`DumpStats::bytes`] counts the bytes read.
pub fn dump_read<R: io::Read, W: Write + ?Sized>(
    input: R,
    cfg: &TraceConfig,
    opts: &DumpOptions,
    out: &mut W,
) -> io::Result<DumpStats> {
    let mut lines = Lines::new(cfg, opts, out)?;
    let mut werr: Option<io::Error> = None;
    let bytes = read_trace_items(input, cfg, |off, item, options, bytes| {
        match lines.item(off, item, options, bytes) {
            Ok(()) => true,
            Err(e) => {
                werr = Some(e);
                false
            }
        }
    })?;
    if let Some(e) = werr {
        return Err(e);
    }
    lines.st.bytes = bytes;
    Ok(lines.st)
}

/// The dump's text, item after item (packets, other frames, errors) as they are read.
struct Lines<'a, W: Write + ?Sized> {
    out: &'a mut W,
    p: crate::Params,
    csv: bool,
    image: Option<&'a rvtrace_image::Image>,
    /// The mask of an instruction address (`iaddress_width_p` bits).
    amask: u64,
    /// The last absolute address of each *srcID* (0 without), to resolve differential
    /// addresses (as ptdump's --lastip).
    last: HashMap<u16, Option<u64>>,
    /// The encapsulation, when lines name each packet's *srcID* (several harts, no filter).
    named: Option<EncapConfig>,
    /// The one *srcID* dumped (`cfg.srcid`): the other harts' packets are left out.
    only: Option<u16>,
    st: DumpStats,
}

impl<'a, W: Write + ?Sized> Lines<'a, W> {
    /// The dump of a stream configured by `cfg` to `out` (the CSV header written first).
    fn new(cfg: &TraceConfig, opts: &DumpOptions<'a>, out: &'a mut W) -> io::Result<Self> {
        let p = cfg.params;
        let csv = opts.csv;
        if csv {
            write!(out, "{CSV_HEADER}\r\n")?;
        }
        let amask = if p.iaddress_width_p >= 64 {
            u64::MAX
        } else {
            (1u64 << p.iaddress_width_p) - 1
        };
        let named = match cfg.framing {
            Framing::Encap(e) if e.srcid_bits > 0 && cfg.srcid.is_none() => Some(e),
            _ => None,
        };
        Ok(Lines {
            out,
            p,
            csv,
            image: opts.image,
            amask,
            last: HashMap::new(),
            named,
            only: cfg.srcid,
            st: DumpStats::default(),
        })
    }

    /// The line of the item read at byte `off` (`bytes` from its start), with `options` in
    /// force.
    fn item(&mut self, off: u64, item: Item, options: IOptions, bytes: &[u8]) -> io::Result<()> {
        let (p, amask, out) = (self.p, self.amask, &mut *self.out);
        let csv = self.csv;
        // The packet's hart, named on its line, when the stream has several and none is chosen.
        let src = match self.named {
            Some(e) => match read_frame(bytes, &e) {
                Ok((Frame::Normal(n), _)) => Some(n.srcid),
                _ => None,
            },
            None => None,
        };
        if matches!(item, Item::Error(_)) {
            // Bytes lost: no hart's last address is known any more.
            self.last.clear();
        }
        let st = &mut self.st;
        let last = self.last.entry(src.unwrap_or(0)).or_insert(None);
        let hart = src.map_or(String::new(), |k| format!("srcID={k} "));
        match item {
            Item::Packet(pkt) if csv => {
                st.packets += 1;
                write!(out, "{}\r\n", pkt.csv(&p))?;
            }
            Item::Packet(pkt) => {
                st.packets += 1;
                let lsb = p.iaddress_lsb_p as u32;
                let full = options.full_address;
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
                        *last = None;
                        format!(
                            "  [{}]",
                            option_names(IOptions::from_field(sp.ioptions, p.options_layout))
                        )
                    }
                    (_, Some(x)) => {
                        *last = Some(x);
                        match self.image {
                            Some(image) => {
                                format!("  -> {}", rvtrace_flow::addr_with_symbol(image, x))
                            }
                            None => format!("  -> {x:#x}"),
                        }
                    }
                    (_, None) if pkt.tail().is_some() => {
                        "  -> ? (no address to resolve from yet)".into()
                    }
                    _ => String::new(),
                };
                writeln!(
                    out,
                    "{off:08x}  {:<4}  {hart}{}{extra}",
                    pkt.kind(),
                    pkt.fields(&p)
                )?;
            }
            // Another hart's packet, in a dump of one.
            Item::Other(Frame::Normal(n)) if self.only.is_some_and(|k| k != n.srcid) => {}
            Item::Other(f) if !csv => writeln!(out, "{off:08x}  --    {f:?}")?,
            Item::Other(_) => {}
            Item::Error(e) => {
                st.errors += 1;
                if !csv {
                    writeln!(out, "{off:08x}  ERROR {e}")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dump as it was before it streamed: one packet reader over the whole stream in
    /// memory (the same lines). The reference of [`streaming_equals_whole`].
    fn dump_whole<W: Write + ?Sized>(
        data: &[u8],
        cfg: &TraceConfig,
        csv: bool,
        out: &mut W,
    ) -> io::Result<DumpStats> {
        let (encap, raw) = cfg.framing.reader();
        let opts = DumpOptions { csv, image: None };
        let mut lines = Lines::new(cfg, &opts, out)?;
        let mut rd = crate::codec::PacketReader::new(data, encap, raw, cfg.params, cfg.options);
        while let Some((off, item)) = rd.next() {
            lines.item(off as u64, item, rd.options(), &data[off..])?;
        }
        Ok(lines.st)
    }

    /// Real traces in both framings (the rvtrace preset's encapsulation, the reference flow's
    /// `te_inst_raw`), cut, damaged, and random bytes, read in random pieces: the text (plain
    /// and CSV) and counts are those of the whole-stream dump.
    #[test]
    fn streaming_equals_whole() {
        use crate::config::{ConfigInputs, Preset};
        use crate::encoder::{Encoder, FrameWriter};
        let elf = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../programs/elf/traps-rv64gc.elf");
        let run = rvtrace_testkit::run_program(&elf, "traps", 4);
        for preset in [Preset::Rvtrace, Preset::Reference] {
            let cfg = TraceConfig::build(&ConfigInputs {
                preset,
                xlen_bits: 64,
                ..ConfigInputs::default()
            })
            .unwrap();
            let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
            for r in &run.records {
                enc.push(r).unwrap();
            }
            let trace = enc.finish().unwrap().into_inner();
            let mut garbage = vec![0u8; 20_000];
            rvtrace_testkit::Rng(1).fill(&mut garbage);
            let mut inputs = vec![trace.clone(), trace[..trace.len() / 2].to_vec(), garbage];
            for k in [3usize, 101, 977] {
                let mut bad = trace.clone();
                bad[(k * 7919) % trace.len()] ^= 0xa5;
                inputs.push(bad);
            }
            for (i, data) in inputs.iter().enumerate() {
                for csv in [false, true] {
                    let mut want = Vec::new();
                    let want_st = dump_whole(data, &cfg, csv, &mut want).unwrap();
                    let mut got = Vec::new();
                    let r = rvtrace_testkit::ChunkedReader {
                        data,
                        seed: i as u64 + 1,
                        max: 97,
                    };
                    let st =
                        dump_read(r, &cfg, &DumpOptions { csv, image: None }, &mut got).unwrap();
                    assert_eq!((st.packets, st.errors), (want_st.packets, want_st.errors));
                    assert_eq!(st.bytes, data.len() as u64);
                    assert!(
                        got == want,
                        "{preset:?} input {i} csv {csv}: the text differs"
                    );
                    if i == 0 {
                        assert!(st.packets > 50 && st.errors == 0, "{st:?}");
                    }
                }
            }
        }
    }

    /// Two harts' packets interleaved (srcIDs 1 and 6): the dump of one hart (`srcid`) is the
    /// dump of its own stream; the dump of all names each packet's hart and resolves its
    /// differential addresses against the same hart's (the same lines, less `srcID=K `).
    #[test]
    fn harts_dumped_apart() {
        use crate::codec::FrameReader;
        use crate::config::ConfigInputs;
        use crate::encoder::{Encoder, FrameWriter};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../programs/elf");
        let runs = ["traps-rv64gc", "recurse-rv64gc"]
            .map(|n| rvtrace_testkit::run_program(&dir.join(format!("{n}.elf")), n, 4));
        let base = TraceConfig::build(&ConfigInputs {
            xlen_bits: 64,
            framing: Some(Framing::Encap(EncapConfig {
                srcid_bits: 3,
                ..EncapConfig::PLAIN
            })),
            ..ConfigInputs::default()
        })
        .unwrap();
        let Framing::Encap(encap) = base.framing else {
            panic!("encapsulated")
        };
        let harts = [1u16, 6];
        let traces: Vec<Vec<u8>> = runs
            .iter()
            .zip(harts)
            .map(|(run, k)| {
                let cfg = base.with_srcid(Some(k)).unwrap();
                let mut enc = Encoder::new(&cfg, FrameWriter::new(Vec::new(), &cfg)).unwrap();
                for r in &run.records {
                    enc.push(r).unwrap();
                }
                enc.finish().unwrap().into_inner()
            })
            .collect();
        let packets = |t: &[u8]| -> Vec<Vec<u8>> {
            let offs: Vec<usize> = FrameReader::new(t, encap).map(|(o, _)| o).collect();
            (0..offs.len())
                .map(|i| t[offs[i]..*offs.get(i + 1).unwrap_or(&t.len())].to_vec())
                .collect()
        };
        let (a, b) = (packets(&traces[0]), packets(&traces[1]));
        let mut mixed = Vec::new();
        for i in 0..a.len().max(b.len()) {
            for p in [a.get(i), b.get(i)].into_iter().flatten() {
                mixed.extend_from_slice(p);
            }
        }
        // The lines without their offsets (which differ between the streams).
        let dump = |data: &[u8], srcid| {
            let cfg = base.with_srcid(srcid).unwrap();
            let mut out = Vec::new();
            dump_read(data, &cfg, &DumpOptions::default(), &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            text.lines()
                .map(|l| l[10..].to_string())
                .collect::<Vec<_>>()
        };
        let all = dump(&mixed, None);
        assert_eq!(all.len(), a.len() + b.len());
        for (t, k) in traces.iter().zip(harts) {
            let own = dump(t, Some(k));
            assert!(own.len() > 20 && own.iter().any(|l| l.contains("F1 ")));
            assert_eq!(dump(&mixed, Some(k)), own, "srcID {k}");
            let tag = format!("srcID={k} ");
            let named: Vec<String> = all
                .iter()
                .filter(|l| l.contains(&tag))
                .map(|l| l.replacen(&tag, "", 1))
                .collect();
            assert_eq!(named, own, "srcID {k} in the dump of all");
        }
    }

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

    /// Notes how many bytes the reader had given at the first write.
    struct FirstWrite<'a> {
        given: &'a std::cell::Cell<u64>,
        at: Option<u64>,
    }

    impl Write for FirstWrite<'_> {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.at.get_or_insert(self.given.get());
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A reader of `data` repeated `times` times, counting what it gave.
    struct Repeat<'a> {
        data: &'a [u8],
        pos: usize,
        times: u32,
        given: &'a std::cell::Cell<u64>,
    }

    impl io::Read for Repeat<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.pos == self.data.len() {
                if self.times == 0 {
                    return Ok(0);
                }
                self.times -= 1;
                self.pos = 0;
            }
            let n = buf.len().min(self.data.len() - self.pos);
            buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            self.given.set(self.given.get() + n as u64);
            Ok(n)
        }
    }

    /// The dump writes as it reads: the first lines of a stream of several MiB are out after
    /// the first windows, long before its end.
    #[test]
    fn dump_streams() {
        let cfg = TraceConfig::build(&crate::config::ConfigInputs {
            xlen_bits: 64,
            ..Default::default()
        })
        .unwrap();
        // Packets of random bytes: many errors, many packets, every byte looked at.
        let mut data = vec![0u8; 1 << 16];
        rvtrace_testkit::Rng(5).fill(&mut data);
        let given = std::cell::Cell::new(0);
        let r = Repeat {
            data: &data,
            pos: data.len(),
            times: 64,
            given: &given,
        };
        let mut out = FirstWrite {
            given: &given,
            at: None,
        };
        let st = dump_read(r, &cfg, &DumpOptions::default(), &mut out).unwrap();
        assert_eq!(st.bytes, 64 << 16);
        assert!(out.at.unwrap() <= 4 << 16, "first write at {:?}", out.at);
    }
}
