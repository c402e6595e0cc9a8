//! Text dump of a message stream, byte by byte and field by field, in the layout of N-Trace 3.5
//! Table 6 and of the reference tool's dump (`NexRv -dump`): one line per byte with its MDO and
//! MSEO bits and the fields that end in that byte, a blank line between messages.
//!
//! ```text
//! 0x70 011100_00: TCODE[6]=28 (MSG #0) - IndirectBranchHist
//! 0xD0 110100_00: BTYPE[2]=0x0
//! 0x1D 000111_01: ICNT[10]=0x7D
//! ```
//!
//! For a field, `[n]` is the number of MDO bits it spans (a variable-length field: up to the end of
//! its last byte). Idle bytes between messages are shown as one `Idle` line per run; transport
//! and message errors as `ERROR` lines. Field names are the reference tool's C identifiers (N-Trace
//! 6.1 note: "B-TYPE will become BTYPE"), plus `SRC`, `TSTAMP`, `HREPEAT` (`RDATA[1]` of RCODE 2),
//! `PROCESS`, `ETYPE`, `ECODE`, `BCNT`, and `DATA` for fields of vendor-defined or reserved
//! messages.

use crate::codec::mseo::{Deframer, Frame, FrameError, RawMessage};
use crate::codec::{layout, parse, tcode, Body, CodecConfig};
use rvtrace_isa::Xlen;
use std::io::{self, Write};

/// Counts from a dump.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpStats {
    /// Bytes read.
    pub bytes: u64,
    /// Idle bytes.
    pub idles: u64,
    /// Messages.
    pub messages: u64,
    /// Messages that did not parse, and transport errors.
    pub errors: u64,
}

fn write_byte_prefix(out: &mut impl Write, b: u8, at: Option<u64>) -> io::Result<()> {
    if let Some(at) = at {
        write!(out, "{at:08x}  ")?;
    }
    write!(out, "0x{b:02X} {:06b}_{:02b}:", b >> 2, b & 3)
}

/// Extra columns of the dump (the default is NexRv's text exactly).
#[derive(Clone, Copy, Debug, Default)]
pub struct DumpOptions<'a> {
    /// Show the absolute address next to each F-ADDR/U-ADDR field (as Intel `ptdump --lastip`):
    /// F-ADDR as it is, U-ADDR XOR the previous address (N-Trace 8.1).
    pub lastip: bool,
    /// With [`DumpOptions::lastip`], the program whose symbols name each absolute address
    /// (` => 0x80000010 <main+0x10>`, as objdump writes them).
    pub image: Option<&'a rvtrace_image::Image>,
    /// The addresses use the MSB extension of this XLEN (trTeInstExtendAddrMSB, 9.4).
    pub extend_addr_msb: Option<Xlen>,
    /// Start every line with the byte offset of its byte in the trace (8 hex digits, as the
    /// E-Trace dump does; the offsets `decode` and `compare` report). Without it the text is
    /// NexRv's `-dump` exactly.
    pub offsets: bool,
}

/// The absolute address a message's address field gives, and the new last address.
fn message_addr(body: &Body, last: u64, opts: &DumpOptions) -> Option<u64> {
    let full = |a: &crate::codec::Addr| a.value(opts.extend_addr_msb) << 1;
    match body {
        Body::ProgTraceSync { faddr, .. }
        | Body::DirectBranchSync { faddr, .. }
        | Body::IndirectBranchSync { faddr, .. }
        | Body::IndirectBranchHistSync { faddr, .. } => Some(full(faddr)),
        Body::IndirectBranch { uaddr, .. } | Body::IndirectBranchHist { uaddr, .. } => {
            Some(last ^ full(uaddr))
        }
        _ => None,
    }
}

#[allow(clippy::too_many_arguments)]
fn dump_message(
    out: &mut impl Write,
    bytes: &[u8],
    raw: &RawMessage,
    cfg: &CodecConfig,
    index: u64,
    opts: &DumpOptions,
    last_addr: &mut u64,
    start: u64,
) -> io::Result<bool> {
    let parsed = parse(raw, cfg);
    let addr = match (&parsed, opts.lastip) {
        (Ok(m), true) => message_addr(&m.body, *last_addr, opts),
        _ => None,
    };
    if let Some(a) = addr {
        *last_addr = a;
    }
    let l = layout(raw, cfg);
    let spans = l.spans();
    for (k, &b) in bytes.iter().enumerate() {
        write_byte_prefix(out, b, opts.offsets.then_some(start + k as u64))?;
        for s in spans.iter().filter(|s| s.last_byte() == k as u64) {
            if s.name == "TCODE" {
                let tc = raw.tcode();
                let name = tcode::name_in(tc, cfg.dialect).unwrap_or(if tcode::is_vendor(tc) {
                    "VendorDefined"
                } else {
                    "Reserved"
                });
                write!(out, " TCODE[6]={tc} (MSG #{index}) - {name}")?;
            } else {
                match s.value {
                    Some(v) => write!(out, " {}[{}]=0x{v:X}", s.name, s.nbits)?,
                    None => write!(out, " {}[{}]=(more than 64 bits)", s.name, s.nbits)?,
                }
                if let (Some(a), "FADDR" | "UADDR") = (addr, s.name) {
                    write!(out, " => 0x{a:X}")?;
                    if let Some(image) = opts.image {
                        write!(out, "{}", rvtrace_flow::symbol_suffix(image, a))?;
                    }
                }
            }
        }
        writeln!(out)?;
    }
    match parsed {
        Ok(_) => Ok(true),
        Err(e) => {
            writeln!(out, "ERROR: {e}")?;
            Ok(false)
        }
    }
}

/// A blank line between blocks (not before the first).
fn separate(out: &mut impl Write, first: &mut bool) -> io::Result<()> {
    if !*first {
        writeln!(out)?;
    }
    *first = false;
    Ok(())
}

fn flush_idle(
    out: &mut impl Write,
    run: &mut u64,
    first: &mut bool,
    at: Option<u64>,
) -> io::Result<()> {
    if *run > 0 {
        separate(out, first)?;
        if let Some(at) = at {
            write!(out, "{at:08x}  ")?;
        }
        writeln!(out, "0xFF 111111_11: Idle ({} bytes)", *run)?;
        *run = 0;
    }
    Ok(())
}

/// Dump `data` (a whole trace file) to `out`.
pub fn dump(data: &[u8], cfg: &CodecConfig, out: &mut impl Write) -> io::Result<DumpStats> {
    dump_with(data, cfg, &DumpOptions::default(), out)
}

/// [`dump`] with extra columns ([`DumpOptions`]).
pub fn dump_with(
    data: &[u8],
    cfg: &CodecConfig,
    opts: &DumpOptions,
    out: &mut impl Write,
) -> io::Result<DumpStats> {
    dump_read(data, cfg, opts, out)
}

/// Bytes read at a time by [`dump_read`].
const READ_CHUNK: usize = 1 << 16;

/// [`dump_with`] of a trace read from `input` a piece at a time: the same text, with memory
/// flat in the trace's size (it holds one read buffer and the bytes of the message being
/// read, whose lines can be written only once its fields are known).
pub fn dump_read(
    mut input: impl io::Read,
    cfg: &CodecConfig,
    opts: &DumpOptions,
    out: &mut impl Write,
) -> io::Result<DumpStats> {
    let mut d = Dumper {
        cfg,
        opts,
        st: DumpStats::default(),
        deframer: Deframer::new(),
        last_addr: 0,
        first: true,
        idle_run: 0,
        idle_start: 0,
        msg: Vec::new(),
    };
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        for &b in &buf[..n] {
            d.byte(b, out)?;
        }
    }
    d.finish(out)
}

/// The state of [`dump_read`] between bytes.
struct Dumper<'a> {
    cfg: &'a CodecConfig,
    opts: &'a DumpOptions<'a>,
    st: DumpStats,
    deframer: Deframer,
    last_addr: u64,
    /// No block written yet (no blank line before the next one).
    first: bool,
    idle_run: u64,
    /// The offset of the first byte of `idle_run`.
    idle_start: u64,
    /// The bytes since the deframer was last between messages: the message being read.
    msg: Vec<u8>,
}

impl Dumper<'_> {
    /// The offset `at`, when the lines show offsets.
    fn at(&self, at: u64) -> Option<u64> {
        self.opts.offsets.then_some(at)
    }

    fn byte(&mut self, b: u8, out: &mut impl Write) -> io::Result<()> {
        let pos = self.st.bytes;
        self.st.bytes += 1;
        if !self.deframer.in_message() {
            self.msg.clear();
        }
        self.msg.push(b);
        let idle_before = self.deframer.idles();
        let f = self.deframer.push(b);
        if self.deframer.idles() > idle_before {
            if self.idle_run == 0 {
                self.idle_start = pos;
            }
            self.idle_run += 1;
            self.st.idles += 1;
            return Ok(());
        }
        let Some(f) = f else { return Ok(()) };
        let idle_at = self.at(self.idle_start);
        flush_idle(out, &mut self.idle_run, &mut self.first, idle_at)?;
        separate(out, &mut self.first)?;
        match f {
            Frame::Message(raw) => {
                debug_assert_eq!(raw.len, self.msg.len() as u64, "a message's bytes");
                let (cfg, opts) = (self.cfg, self.opts);
                let start = pos + 1 - self.msg.len() as u64;
                let ok = dump_message(
                    out,
                    &self.msg,
                    &raw,
                    cfg,
                    self.st.messages,
                    opts,
                    &mut self.last_addr,
                    start,
                )?;
                if !ok {
                    self.st.errors += 1;
                }
                self.st.messages += 1;
            }
            Frame::Error(e) => {
                writeln!(out, "ERROR: {e}")?;
                self.st.errors += 1;
            }
        }
        Ok(())
    }

    fn finish(mut self, out: &mut impl Write) -> io::Result<DumpStats> {
        let idle_at = self.at(self.idle_start);
        flush_idle(out, &mut self.idle_run, &mut self.first, idle_at)?;
        let inside = self.deframer.in_message();
        let msg_start = self.st.bytes - self.msg.len() as u64;
        if let Some(e) = self.deframer.finish() {
            separate(out, &mut self.first)?;
            if let (FrameError::Truncated { .. }, true) = (&e, inside) {
                // The bytes of the message cut by the end.
                for (k, &b) in self.msg.iter().enumerate() {
                    write_byte_prefix(out, b, self.at(msg_start + k as u64))?;
                    writeln!(out)?;
                }
            }
            writeln!(out, "ERROR: {e}")?;
            self.st.errors += 1;
        }
        Ok(self.st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// The dump as it was before it streamed: the whole trace in memory, a message's bytes
    /// sliced from it. The reference of [`streaming_equals_whole`].
    fn dump_whole(
        data: &[u8],
        cfg: &CodecConfig,
        opts: &DumpOptions,
        out: &mut impl Write,
    ) -> io::Result<DumpStats> {
        let mut last_addr = 0u64;
        let mut st = DumpStats {
            bytes: data.len() as u64,
            ..DumpStats::default()
        };
        let mut d = Deframer::new();
        let mut first = true;
        let mut idle_run = 0u64;
        let mut idle_start = 0u64;
        let at = |o: u64| opts.offsets.then_some(o);
        for (pos, &b) in data.iter().enumerate() {
            let idle_before = d.idles();
            let f = d.push(b);
            if d.idles() > idle_before {
                if idle_run == 0 {
                    idle_start = pos as u64;
                }
                idle_run += 1;
                st.idles += 1;
                continue;
            }
            let Some(f) = f else { continue };
            flush_idle(out, &mut idle_run, &mut first, at(idle_start))?;
            separate(out, &mut first)?;
            match f {
                Frame::Message(raw) => {
                    let end = (raw.offset + raw.len) as usize;
                    let bytes = &data[raw.offset as usize..end.min(data.len())];
                    let (i, o) = (st.messages, opts);
                    if !dump_message(out, bytes, &raw, cfg, i, o, &mut last_addr, raw.offset)? {
                        st.errors += 1;
                    }
                    st.messages += 1;
                }
                Frame::Error(e) => {
                    writeln!(out, "ERROR: {e}")?;
                    st.errors += 1;
                }
            }
        }
        flush_idle(out, &mut idle_run, &mut first, at(idle_start))?;
        if let Some(e) = d.finish() {
            separate(out, &mut first)?;
            if let FrameError::Truncated { offset, .. } = e {
                for (k, &b) in data[offset as usize..].iter().enumerate() {
                    write_byte_prefix(out, b, at(offset + k as u64))?;
                    writeln!(out)?;
                }
            }
            writeln!(out, "ERROR: {e}")?;
            st.errors += 1;
        }
        Ok(st)
    }

    fn garbage(n: usize, seed: u64) -> Vec<u8> {
        let mut v = vec![0; n];
        rvtrace_testkit::Rng(seed).fill(&mut v);
        v
    }

    /// A real trace (every message kind the encoder writes), cut, damaged and random bytes:
    /// read in random pieces, the text and counts are those of the whole-trace dump.
    #[test]
    fn streaming_equals_whole() {
        let elf = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../programs/elf/traps-rv64gc.elf");
        let run = rvtrace_testkit::run_program(&elf, "traps", 4);
        let ecfg = crate::options::EncoderConfig::new(Xlen::Rv64);
        let (trace, _) = crate::encoder::encode(ecfg, &run.records);
        let mut inputs = vec![
            trace.clone(),
            trace[..trace.len() / 2].to_vec(),
            garbage(50_000, 7),
            vec![0u8; 3000],
            [vec![0xff; 5], vec![0u8; 300], vec![3]].concat(),
        ];
        for k in [3usize, 101, 977] {
            let mut bad = trace.clone();
            bad[(k * 7919) % trace.len()] ^= 0x5a;
            inputs.push(bad);
        }
        for (lastip, offsets) in [(false, false), (true, false), (true, true)] {
            let opts = DumpOptions {
                lastip,
                offsets,
                ..DumpOptions::default()
            };
            for (i, data) in inputs.iter().enumerate() {
                let cfg = CodecConfig::default();
                let mut want = Vec::new();
                let want_st = dump_whole(data, &cfg, &opts, &mut want).unwrap();
                let mut got = Vec::new();
                let mut r = rvtrace_testkit::ChunkedReader {
                    data,
                    seed: i as u64 + 1,
                    max: 97,
                };
                let st = dump_read(&mut r, &cfg, &opts, &mut got).unwrap();
                assert_eq!(st, want_st, "input {i}");
                assert!(got == want, "input {i}: the text differs");
                assert!(r.data.is_empty(), "input {i}: not read to the end");
            }
        }
    }

    /// Writes nothing, and notes how many bytes the reader had given at the first write.
    struct FirstWrite<'a> {
        given: &'a Cell<u64>,
        at: Option<u64>,
        bytes: u64,
    }

    impl Write for FirstWrite<'_> {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.at.get_or_insert(self.given.get());
            self.bytes += b.len() as u64;
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The dump writes as it reads: a 4 MiB trace's first lines are out after one read
    /// buffer, not after the whole trace (which it never holds).
    #[test]
    fn dump_streams() {
        let one = garbage(1 << 16, 99);
        let given = Cell::new(0);
        let mut left = 64u32;
        let mut src = std::iter::from_fn(|| {
            left = left.checked_sub(1)?;
            Some(&one[..])
        });
        let mut cur: &[u8] = &[];
        let reader = ReadFn(|buf: &mut [u8]| {
            if cur.is_empty() {
                cur = src.next().unwrap_or(&[]);
            }
            let n = buf.len().min(cur.len());
            buf[..n].copy_from_slice(&cur[..n]);
            cur = &cur[n..];
            given.set(given.get() + n as u64);
            Ok(n)
        });
        let mut out = FirstWrite {
            given: &given,
            at: None,
            bytes: 0,
        };
        let st = dump_read(
            reader,
            &CodecConfig::default(),
            &DumpOptions::default(),
            &mut out,
        )
        .unwrap();
        assert_eq!(st.bytes, 64 << 16);
        assert!(out.bytes > st.bytes, "every byte has its line");
        assert!(out.at.unwrap() <= (READ_CHUNK as u64), "{:?}", out.at);
    }

    /// A reader from a closure.
    struct ReadFn<F>(F);

    impl<F: FnMut(&mut [u8]) -> io::Result<usize>> io::Read for ReadFn<F> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            (self.0)(buf)
        }
    }

    #[test]
    fn table6_dump() {
        let data = [0xFF, 0x70, 0xD0, 0x1D, 0x1D, 0xF8, 0xFF, 0xFF];
        let mut out = Vec::new();
        let st = dump(&data, &CodecConfig::default(), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "0xFF 111111_11: Idle (1 bytes)\n\n\
             0x70 011100_00: TCODE[6]=28 (MSG #0) - IndirectBranchHist\n\
             0xD0 110100_00: BTYPE[2]=0x0\n\
             0x1D 000111_01: ICNT[10]=0x7D\n\
             0x1D 000111_01: UADDR[6]=0x7\n\
             0xF8 111110_00:\n\
             0xFF 111111_11: HIST[12]=0xFFE\n\n\
             0xFF 111111_11: Idle (1 bytes)\n"
        );
        assert_eq!(
            st,
            DumpStats {
                bytes: 8,
                idles: 2,
                messages: 1,
                errors: 0
            }
        );
    }

    #[test]
    fn garbage_never_panics() {
        let mut data = vec![0u8; 200_000];
        rvtrace_testkit::Rng(0x1234_5678_9abc_def0).fill(&mut data);
        for src_bits in [0, 3, 12] {
            let cfg = CodecConfig::new(src_bits);
            let mut out = Vec::new();
            let st = dump(&data, &cfg, &mut out).unwrap();
            assert!(st.messages > 1000 && st.errors > 0);
            // Every truncation of a short piece.
            for n in 0..64 {
                dump(&data[..n], &cfg, &mut Vec::new()).unwrap();
            }
        }
        // All zeros: one very long field, truncated.
        let mut out = Vec::new();
        let st = dump(&[0u8; 4096], &CodecConfig::default(), &mut out).unwrap();
        assert_eq!((st.messages, st.errors), (0, 1));
        let mut zeros = vec![0u8; 4096];
        zeros.push(3);
        let mut out = Vec::new();
        let st = dump(&zeros, &CodecConfig::default(), &mut out).unwrap();
        // TCODE 0 is reserved: surfaced as a message, not an error.
        assert_eq!((st.messages, st.errors), (1, 0));
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("0x00 000000_00: TCODE[6]=0 (MSG #0) - Reserved\n"));
        assert!(
            text.ends_with("0x03 000000_11: DATA[24576]=0x0\n"),
            "{}",
            &text[text.len() - 80..]
        );
    }

    /// `--lastip`: F-ADDR as it is, U-ADDR XOR the last address (N-Trace 8.1); the rest of the
    /// text is the plain dump's.
    #[test]
    fn lastip_addresses() {
        use crate::codec::{Addr, Message};
        let bytes: Vec<u8> = [
            Body::ProgTraceSync {
                sync: 3,
                icnt: 0,
                faddr: Addr::plain(0x4000_0000),
            },
            Body::IndirectBranch {
                btype: 0,
                icnt: 2,
                uaddr: Addr::plain(0x8),
            },
            Body::IndirectBranch {
                btype: 0,
                icnt: 2,
                uaddr: Addr::plain(0x8),
            },
        ]
        .iter()
        .flat_map(|b| Message::new(*b).encode(&CodecConfig::default()).to_vec())
        .collect();
        let cfg = CodecConfig::default();
        let mut plain = Vec::new();
        dump(&bytes, &cfg, &mut plain).unwrap();
        let mut last = Vec::new();
        let opts = DumpOptions {
            lastip: true,
            ..DumpOptions::default()
        };
        dump_with(&bytes, &cfg, &opts, &mut last).unwrap();
        let last = String::from_utf8(last).unwrap();
        let shown: Vec<&str> = last
            .lines()
            .filter_map(|l| l.split(" => ").nth(1))
            .collect();
        assert_eq!(shown, ["0x80000000", "0x80000010", "0x80000000"]);
        let stripped: String = last
            .lines()
            .map(|l| format!("{}\n", l.split(" => ").next().unwrap()))
            .collect();
        assert_eq!(stripped.as_bytes(), plain);
    }

    /// With offsets every line starts with its byte's offset: the idle run's first, each byte
    /// of a message (N-Trace 3.5 Table 6's message, whose last byte is 0xFF, between idles).
    #[test]
    fn offsets() {
        let data = [0xFFu8, 0x70, 0xD0, 0x1D, 0x1D, 0xF8, 0xFF, 0xFF];
        let opts = DumpOptions {
            offsets: true,
            ..DumpOptions::default()
        };
        let mut with = Vec::new();
        dump_read(&data[..], &CodecConfig::default(), &opts, &mut with).unwrap();
        let mut without = Vec::new();
        dump_read(
            &data[..],
            &CodecConfig::default(),
            &DumpOptions::default(),
            &mut without,
        )
        .unwrap();
        let (with, without) = (
            String::from_utf8(with).unwrap(),
            String::from_utf8(without).unwrap(),
        );
        let at: Vec<&str> = with
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| &l[..8])
            .collect();
        assert_eq!(
            at,
            [
                "00000000", "00000001", "00000002", "00000003", "00000004", "00000005", "00000006",
                "00000007"
            ],
            "{with}"
        );
        // The rest of each line is NexRv's text.
        let rest: Vec<&str> = with.lines().map(|l| l.get(10..).unwrap_or("")).collect();
        assert_eq!(rest, without.lines().collect::<Vec<_>>());
        assert!(
            with.ends_with("00000007  0xFF 111111_11: Idle (1 bytes)\n"),
            "{with}"
        );
    }
}
