//! SiFive's dialect of N-Trace beyond the message set ([`crate::codec::Dialect::Sifive`]): the
//! parameters of known parts (`--hw`), SiFive decoder settings files (`--sifive-settings`), and
//! the text of ITC prints (`--itc-print`). The facts and their sources are in the crate README,
//! "SiFive dialect".

use crate::codec::Dialect;
use crate::meta::Given;
use crate::options::{CallStack, EncoderConfig, Mode};

/// A known SiFive part: the settings its trace encoder has (`--hw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Hw {
    /// HiFive Premier P550 (EIC7700X), 4 harts: SRC 2 bits, TSTAMP 40 bits, 48-bit addresses,
    /// return stack 1023 (libnexus-rv `lib/msg-decoder.c` model "p550x4" and
    /// `contrib/p550/README.md`, which measured 1023).
    #[cfg_attr(feature = "clap", value(name = "p550x4"))]
    P550x4,
    /// P550, 8 harts: as `p550x4` with SRC 3 bits (libnexus-rv `msg-decoder.h`; its code says
    /// 2, which cannot number 8 harts).
    #[cfg_attr(feature = "clap", value(name = "p550x8"))]
    P550x8,
    /// E31 (Arty board) captures of sifive/trace-decoder-tests: no SRC field, 32-bit addresses
    /// (their Makefiles give no `-srcbits`, `e31_coremark.settings` has `archsize = 32`).
    #[cfg_attr(feature = "clap", value(name = "e31"))]
    E31,
}

impl Hw {
    /// The part's settings as decoder options (only what the sources give).
    pub fn given(self) -> Given {
        let p550 = |src_bits| Given {
            src_bits: Some(src_bits),
            tstamp_bits: Some(40),
            addr_bits: Some(48),
            stack_depth: Some(1023),
            dialect: Some(Dialect::Sifive),
            ..Given::default()
        };
        match self {
            Hw::P550x4 => p550(2),
            Hw::P550x8 => p550(3),
            Hw::E31 => Given {
                src_bits: Some(0),
                addr_bits: Some(32),
                dialect: Some(Dialect::Sifive),
                ..Given::default()
            },
        }
    }
}

impl Hw {
    /// The part's settings for an encoder (`encode ntrace --hw`), from [`Hw::given`]: the
    /// dialect, the SRC and timestamp widths, and where the part's return stack is known (the
    /// P550's: simple counting, on in the board's teControl, libnexus-rv `contrib/p550/README.md`)
    /// implicit return counting up to its depth, in HTM (the optimization is an HTM mode).
    pub fn apply_to_encoder(self, cfg: &mut EncoderConfig) {
        let g = self.given();
        cfg.codec.dialect = Dialect::Sifive;
        cfg.codec.src_bits = g.src_bits.unwrap_or(cfg.codec.src_bits);
        cfg.tstamp_bits = g.tstamp_bits.unwrap_or(cfg.tstamp_bits);
        if let (Some(max), Mode::Htm) = (g.stack_depth, cfg.mode) {
            cfg.call_stack = CallStack::Counter { max };
        }
    }
}

/// Fills the options of `given` that are not set from `other` (`given` wins).
pub fn fill(given: &mut Given, other: &Given) {
    macro_rules! take {
        ($($f:ident),*) => { $( if given.$f.is_none() { given.$f = other.$f; } )* };
    }
    take!(
        src_bits,
        src_id,
        extend_addr_msb,
        all_jumps,
        spec,
        link,
        dialect,
        hw,
        addr_bits,
        tstamp_bits,
        stack_depth
    );
}

/// What a SiFive decoder settings file says (`dqr -sf FILE`): the decoder options it maps to,
/// and the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// `srcbits`, `addrbits`, `tsSize`, and the dialect (the file is SiFive's).
    pub given: Given,
    /// `archsize`: 32 or 64.
    pub archsize: Option<u32>,
    /// `elf`: the program.
    pub elf: Option<String>,
    /// `rtd`: the trace.
    pub rtd: Option<String>,
    /// `image = FILE:LO-HI`: a raw binary loaded at LO (sifive/trace-decoder-tests
    /// `e31_coremark_bin`; newer than the public decoder).
    pub image: Option<(String, u64)>,
    /// `freq` or `timebasefreq`: the timestamp clock in Hz.
    pub freq: Option<u64>,
    /// `trace.config.boolean.enable.itc.print.processing`.
    pub itc_print: Option<bool>,
    /// `trace.config.int.itc.print.channel`.
    pub itc_channel: Option<u32>,
    /// `pids`: the processes (scontext values) SiFive's decoder shows.
    pub pids: Vec<u64>,
    /// `map = PID,FILE[;PID,FILE...]`: each process's `/proc/PID/maps`.
    pub maps: Vec<(u64, String)>,
    /// `vdso`: the vdso's ELF file, where the maps' `[vdso]` line places it.
    pub vdso: Option<String>,
    /// `kmempath`: a directory of kernel memory pages, one file `kmem.0x<ADDR>` per page.
    pub kmempath: Option<String>,
    /// One line per key rvtrace does not use or does not know, and per bad value.
    pub warnings: Vec<String>,
}

/// A number as SiFive's decoder reads it (C `strtol` base 0: decimal, `0x` hex, `0` octal).
fn c_number(v: &str) -> Option<u64> {
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if v.len() > 1 && v.starts_with('0') {
        u64::from_str_radix(&v[1..], 8).ok()
    } else {
        v.parse().ok()
    }
}

impl Settings {
    /// Parse a settings file: one `name = value` per line, `#` starts a comment, the value is
    /// one token (up to a blank), names are case-insensitive (SiFive's decoder,
    /// `propertiesParser`). Keys not used are warned once each, never fatal.
    pub fn parse(text: &str) -> Settings {
        let mut s = Settings::default();
        s.given.dialect = Some(Dialect::Sifive);
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("");
            let Some((k, v)) = line.split_once('=') else {
                if !line.trim().is_empty() {
                    s.warnings
                        .push(format!("line {}: no `name = value`: ignored", n + 1));
                }
                continue;
            };
            let key = k.trim().to_ascii_lowercase();
            let v = v.split_whitespace().next().unwrap_or("");
            let num = c_number(v);
            let mut bad = false;
            let small = |max: u64| num.filter(|&x| x <= max).map(|x| x as u8);
            match key.as_str() {
                "srcbits" => match small(12) {
                    Some(b) => s.given.src_bits = Some(b),
                    None => bad = true,
                },
                "addrbits" => match small(64) {
                    Some(b) => s.given.addr_bits = Some(b),
                    None => bad = true,
                },
                "tssize" => match small(64) {
                    Some(b) => s.given.tstamp_bits = Some(b),
                    None => bad = true,
                },
                "archsize" => match num {
                    Some(a @ (32 | 64)) => s.archsize = Some(a as u32),
                    _ => bad = true,
                },
                "freq" | "timebasefreq" => match num {
                    Some(f) => s.freq = Some(f),
                    None => bad = true,
                },
                "teinstruction" => {
                    // rvtrace reads BTM and HTM alike and finds implicit returns by walking, so
                    // the mode needs no setting; the value is checked.
                    const MODES: [&str; 6] = [
                        "teinstnone",
                        "teinstevent",
                        "teinstpath",
                        "teinstbtmsync",
                        "teinsthtmsyncnoopt",
                        "teinsthtmsync",
                    ];
                    bad = !MODES.contains(&v.to_ascii_lowercase().as_str());
                }
                "elf" => s.elf = Some(v.to_string()),
                "image" => {
                    // FILE:LO-HI (the file name may hold ':' itself: the last one splits).
                    let lo = v
                        .rsplit_once(':')
                        .and_then(|(f, r)| Some((f, c_number(r.split('-').next()?)?)));
                    match lo {
                        Some((f, at)) => s.image = Some((f.to_string(), at)),
                        None => bad = true,
                    }
                }
                "rtd" => s.rtd = Some(v.to_string()),
                "trace.config.boolean.enable.itc.print.processing" => {
                    s.itc_print = match v {
                        "true" => Some(true),
                        "false" => Some(false),
                        _ => num.map(|x| x != 0),
                    };
                    bad = s.itc_print.is_none();
                }
                "trace.config.int.itc.print.channel" => match num.filter(|&c| c < 32) {
                    Some(c) => s.itc_channel = Some(c as u32),
                    None => bad = true,
                },
                "pids" => match v.split(',').map(|p| p.parse().ok()).collect() {
                    Some(p) => {
                        s.pids = p;
                        s.warnings.push(format!(
                            "line {}: pids: rvtrace decodes every process (the flow's context \
                             elements say which runs); not a filter",
                            n + 1
                        ));
                    }
                    None => bad = true,
                },
                "map" => {
                    let m: Option<Vec<(u64, String)>> = v
                        .split(';')
                        .map(|e| {
                            let (pid, file) = e.split_once(',')?;
                            Some((pid.parse().ok()?, file.to_string()))
                        })
                        .collect();
                    match m {
                        Some(m) => s.maps = m,
                        None => bad = true,
                    }
                }
                "vdso" => s.vdso = Some(v.to_string()),
                "kmempath" => s.kmempath = Some(v.to_string()),
                _ => s.warnings.push(format!(
                    "line {}: {key}: not a setting rvtrace uses; ignored",
                    n + 1
                )),
            }
            if bad {
                s.warnings
                    .push(format!("line {}: {key} = {v}: bad value; ignored", n + 1));
            }
        }
        s
    }
}

/// The "no load string" formats of ITC prints: `#ident "N:format"` strings of the program's
/// `.comment` section, per channel 0..31 (SiFive's `itc_utils` readme; its decoder accepts
/// channels up to 31).
pub fn nls_formats(comment: &[u8]) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for s in comment.split(|&b| b == 0) {
        let Ok(s) = std::str::from_utf8(s) else {
            continue;
        };
        let Some((n, fmt)) = s.split_once(':') else {
            continue;
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(ch @ 0..=31) = n.parse::<u32>() {
            out.retain(|(c, _)| *c != ch);
            out.push((ch, fmt.to_string()));
        }
    }
    out
}

/// One conversion of a printf format: flags, width, precision, conversion character.
struct Spec {
    left: bool,
    zero: bool,
    width: usize,
    conv: char,
}

/// The pieces of a printf format: literal text and conversions (`%%` is literal).
fn pieces(fmt: &str) -> Vec<Result<String, Spec>> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut it = fmt.chars().peekable();
    while let Some(c) = it.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        if it.peek() == Some(&'%') {
            it.next();
            lit.push('%');
            continue;
        }
        let (mut left, mut zero, mut width) = (false, false, 0usize);
        while let Some(&f) = it.peek() {
            match f {
                '-' => left = true,
                '0' => zero = true,
                '+' | ' ' | '#' => {}
                _ => break,
            }
            it.next();
        }
        while let Some(d) = it.peek().and_then(|c| c.to_digit(10)) {
            width = width * 10 + d as usize;
            it.next();
        }
        if it.peek() == Some(&'.') {
            it.next();
            while it.peek().is_some_and(|c| c.is_ascii_digit()) {
                it.next();
            }
        }
        while it.peek().is_some_and(|c| "hlLqjzt".contains(*c)) {
            it.next();
        }
        let Some(conv) = it.next() else { break };
        if !lit.is_empty() {
            out.push(Ok(std::mem::take(&mut lit)));
        }
        out.push(Err(Spec {
            left,
            zero,
            width,
            conv,
        }));
    }
    if !lit.is_empty() {
        out.push(Ok(lit));
    }
    out
}

/// The text of an NLS print: `fmt` with the arguments packed in the 32-bit `data` (SiFive's
/// `itc_nls_print_*`: one argument is the word; two are bits 31..16, 15..0; three are bits
/// 31..21, 20..10, 9..0; four are the bytes, most significant first). `%d`/`%i` read their
/// field as signed.
pub fn nls_text(fmt: &str, data: u32) -> String {
    let pieces = pieces(fmt);
    let n = pieces.iter().filter(|p| p.is_err()).count();
    let fields: &[(u32, u32)] = match n {
        0 => &[],
        1 => &[(0, 32)],
        2 => &[(16, 16), (0, 16)],
        3 => &[(21, 11), (10, 11), (0, 10)],
        _ => &[(24, 8), (16, 8), (8, 8), (0, 8)],
    };
    let mut out = String::new();
    let mut k = 0;
    for p in pieces {
        match p {
            Ok(t) => out.push_str(&t),
            Err(spec) => {
                let Some(&(lo, w)) = fields.get(k) else {
                    continue;
                };
                k += 1;
                let raw = (u64::from(data) >> lo) & ((1u64 << w) - 1);
                let signed = (raw as i64) << (64 - w) >> (64 - w);
                let body = match spec.conv {
                    'd' | 'i' => signed.to_string(),
                    'x' | 'p' => format!("{raw:x}"),
                    'X' => format!("{raw:X}"),
                    'o' => format!("{raw:o}"),
                    'c' => char::from_u32(raw as u32).map_or(String::new(), String::from),
                    _ => raw.to_string(),
                };
                let pad = spec.width.saturating_sub(body.chars().count());
                if spec.left {
                    out.push_str(&body);
                    out.push_str(&" ".repeat(pad));
                } else if spec.zero && spec.conv != 'c' {
                    let (sign, digits) = match body.strip_prefix('-') {
                        Some(d) => ("-", d),
                        None => ("", body.as_str()),
                    };
                    out.push_str(sign);
                    out.push_str(&"0".repeat(pad));
                    out.push_str(digits);
                } else {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(&body);
                }
            }
        }
    }
    out
}

/// Turns ITC stimulus writes (DataAcquisition: IDTAG, DQDATA) into text lines (SiFive's ITC
/// prints): a channel with an NLS format prints it for each 32-bit store; the print channel
/// collects the bytes of its stores (4, 2 or 1, least significant first) into lines ended by
/// `\n`, `\r` or NUL; any other write is a `channel N value 0x...` line.
pub struct ItcPrinter {
    channel: u32,
    nls: Vec<(u32, String)>,
    line: Vec<u8>,
    last: u8,
}

impl ItcPrinter {
    /// A printer whose text prints come on `channel`, with the NLS formats `nls`.
    pub fn new(channel: u32, nls: Vec<(u32, String)>) -> Self {
        ItcPrinter {
            channel,
            nls,
            line: Vec::new(),
            last: 0,
        }
    }

    /// One write; the lines it completes are appended to `out`.
    pub fn write(&mut self, idtag: u64, data: u64, out: &mut Vec<String>) {
        let channel = (idtag / 4) as u32;
        // IDTAG & 3: 0 (or 1) a 32-bit store, 2 a 16-bit one, 3 an 8-bit one.
        let size = match idtag & 3 {
            2 => 2,
            3 => 1,
            _ => 4,
        };
        if size == 4 {
            if let Some((_, fmt)) = self.nls.iter().find(|(c, _)| *c == channel) {
                out.push(nls_text(fmt, data as u32));
                return;
            }
        }
        if channel != self.channel {
            out.push(format!("channel {channel} value {data:#x}"));
            return;
        }
        for i in 0..size {
            let b = (data >> (8 * i)) as u8;
            match b {
                b'\n' if self.last == b'\r' => {}
                b'\n' | b'\r' => out.push(self.take()),
                0 if !self.line.is_empty() => out.push(self.take()),
                0 => {}
                b => self.line.push(b),
            }
            self.last = b;
        }
    }

    fn take(&mut self) -> String {
        String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned()
    }

    /// The end of the trace: an unfinished text line, if any.
    pub fn finish(&mut self) -> Option<String> {
        (!self.line.is_empty()).then(|| self.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TST nls.test: `hello.c`'s `#ident` formats and calls, the lines of the reference output.
    #[test]
    fn nls_examples() {
        let i8 = |a: u32, b: u32, c: u32, d: u32| {
            (a & 0xff) << 24 | (b & 0xff) << 16 | (c & 0xff) << 8 | (d & 0xff)
        };
        let i11 = |a: u32, b: u32, c: u32| (a & 0x7ff) << 21 | (b & 0x7ff) << 10 | (c & 0x3ff);
        let i16 = |a: u32, b: u32| (a & 0xffff) << 16 | (b & 0xffff);
        let m = |x: i32| x as u32;
        assert_eq!(nls_text("Foo Bar", 0), "Foo Bar");
        assert_eq!(
            nls_text("uint 8: %u %u %u %u, and %%", i8(1, 2, 3, 4)),
            "uint 8: 1 2 3 4, and %"
        );
        assert_eq!(
            nls_text("int 8: %d %d %d %d", i8(m(-1), 2, m(-3), 4)),
            "int 8: -1 2 -3 4"
        );
        assert_eq!(
            nls_text("hex 8: 0x%02x 0x%02x 0x%02x 0x%02x", i8(0xff, 2, 0xff, 4)),
            "hex 8: 0xff 0x02 0xff 0x04"
        );
        assert_eq!(
            nls_text("oct 8: %o %o %o %o", i8(21, 42, 63, 84)),
            "oct 8: 25 52 77 124"
        );
        assert_eq!(
            nls_text("char 8: %c %c %c %c", i8(97, 98, 99, 100)),
            "char 8: a b c d"
        );
        assert_eq!(
            nls_text("uint 11: %u %d %u", i11(0x7ff, 0xfff, 42)),
            "uint 11: 2047 -1 42"
        );
        assert_eq!(
            nls_text("int 11: %d %d %d", i11(1, m(-2), m(-3))),
            "int 11: 1 -2 -3"
        );
        assert_eq!(
            nls_text("hex 11: %03x %03x %03x", i11(0xfff, 0xfff, 0xfff)),
            "hex 11: 7ff 7ff 3ff"
        );
        assert_eq!(
            nls_text("oct 11: %o %o %o", i11(123, 456, 42)),
            "oct 11: 173 710 52"
        );
        assert_eq!(
            nls_text("uint 16: %u %u", i16(m(-1), 65535)),
            "uint 16: 65535 65535"
        );
        assert_eq!(
            nls_text("int 16: %d %d", i16(m(-42), 1234)),
            "int 16: -42 1234"
        );
        assert_eq!(nls_text("uint 32: %u", 0xffff_ffff), "uint 32: 4294967295");
        assert_eq!(nls_text("int 32: %d", m(-42)), "int 32: -42");
    }

    #[test]
    fn text_prints_and_raw_writes() {
        let mut p = ItcPrinter::new(0, nls_formats(b"GCC: (SiFive) 10.2\x001:Foo\x00"));
        let mut out = Vec::new();
        // "Hi!\n" as one 32-bit store, "ok" as a 16-bit store (IDTAG 2) and "\r\n" as two
        // 8-bit stores (IDTAG 3).
        p.write(0, u64::from(u32::from_le_bytes(*b"Hi!\n")), &mut out);
        p.write(2, u64::from(u16::from_le_bytes(*b"ok")), &mut out);
        p.write(3, u64::from(b'\r'), &mut out);
        p.write(3, u64::from(b'\n'), &mut out);
        p.write(4, 0, &mut out);
        p.write(8, 0x1234, &mut out);
        p.write(3, u64::from(b'x'), &mut out);
        assert_eq!(out, ["Hi!", "ok", "Foo", "channel 2 value 0x1234"]);
        assert_eq!(p.finish().as_deref(), Some("x"));
    }

    #[test]
    fn settings_file() {
        let s = Settings::parse(
            "# gtod.settings\nsrcbits = 2\nADDRBITS=48 # comment\narchsize = 64\n\
             tsSize = 0x28\ntimebasefreq = 10833333\nteinstruction = teInstHTMSyncNoOpt\n\
             pids = 1,2\nclockfreq = 32500000\ntrace.config.int.itc.print.channel = 3\n\
             cmdLine = /bin/tracer trace\nsrcbits = x\nimage = cm.bin:0x40400000-0x4040912a\n\
             map = 738,gtod.map;9,x.map\nvdso = gtod.vdso\nkmempath = ./kmem\n",
        );
        assert_eq!(s.pids, [1, 2]);
        assert_eq!(s.maps, [(738, "gtod.map".into()), (9, "x.map".into())]);
        assert_eq!(s.vdso.as_deref(), Some("gtod.vdso"));
        assert_eq!(s.kmempath.as_deref(), Some("./kmem"));
        assert_eq!(s.given.src_bits, Some(2));
        assert_eq!(s.given.addr_bits, Some(48));
        assert_eq!(s.given.tstamp_bits, Some(40));
        assert_eq!(s.given.dialect, Some(Dialect::Sifive));
        assert_eq!(s.archsize, Some(64));
        assert_eq!(s.freq, Some(10833333));
        assert_eq!(s.itc_channel, Some(3));
        assert_eq!(s.image, Some(("cm.bin".into(), 0x4040_0000)));
        assert_eq!(s.warnings.len(), 4, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("pids: rvtrace decodes every process"));
        assert!(s.warnings[1].contains("clockfreq: not a setting"));
        assert!(s.warnings[2].contains("cmdline"));
        assert!(s.warnings[3].contains("srcbits = x: bad value"));
    }

    #[test]
    fn presets_fill_only_what_is_not_given() {
        let mut g = Given {
            src_bits: Some(1),
            ..Given::default()
        };
        fill(&mut g, &Hw::P550x4.given());
        assert_eq!(g.src_bits, Some(1));
        assert_eq!(g.stack_depth, Some(1023));
        assert_eq!(g.dialect, Some(Dialect::Sifive));
    }
}
