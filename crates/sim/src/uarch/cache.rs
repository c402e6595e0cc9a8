//! Set-associative caches: tags only, true LRU, write-allocate write-back.

use super::{fmt_size, parse_num, parse_size, SpecError};
use std::fmt;
use std::str::FromStr;

/// Most lines in one cache (64 MiB of 64-byte lines).
const MAX_LINES: u64 = 1 << 20;
/// Most ways (each access scans every way of its set).
const MAX_WAYS: u64 = 64;
/// Longest line.
const MAX_LINE: u64 = 4096;

/// Which cache a [`CacheConfig`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheKind {
    /// `l1i`: the level-1 instruction cache.
    L1i,
    /// `l1d`: the level-1 data cache.
    L1d,
}

impl CacheKind {
    /// `l1i` or `l1d`.
    pub fn name(self) -> &'static str {
        match self {
            CacheKind::L1i => "l1i",
            CacheKind::L1d => "l1d",
        }
    }
}

/// A cache geometry. Syntax (`FromStr`): `<name>:<size>:<ways>:<line>`, e.g. `l1d:32k:8:64`; name
/// `l1i` or `l1d`; size in bytes or with a `k`/`m` suffix. Size, ways and line are powers of two
/// with line >= 8 bytes (at most 4096), ways <= 64, ways * line <= size, at most 2^20 lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    kind: CacheKind,
    size: u64,
    ways: u32,
    line: u32,
}

impl CacheConfig {
    /// A checked geometry (see the type's docs for the rules).
    pub fn new(kind: CacheKind, size: u64, ways: u32, line: u32) -> Result<Self, SpecError> {
        let name = kind.name();
        let bad = |what: &str, n: u64, rule: &str| {
            Err(SpecError::Value(format!(
                "{name} {what} {n}: expected {rule}"
            )))
        };
        if !(8..=MAX_LINE).contains(&u64::from(line)) || !line.is_power_of_two() {
            return bad(
                "line size",
                line.into(),
                "a power of two from 8 to 4096 bytes",
            );
        }
        if !(1..=MAX_WAYS).contains(&u64::from(ways)) || !ways.is_power_of_two() {
            return bad("ways", ways.into(), "a power of two from 1 to 64");
        }
        if !size.is_power_of_two() {
            return bad("size", size, "a power of two");
        }
        let way_bytes = u64::from(ways) * u64::from(line);
        if size < way_bytes {
            return bad(
                "size",
                size,
                &format!("at least ways * line = {way_bytes} bytes"),
            );
        }
        if size / u64::from(line) > MAX_LINES {
            return bad(
                "size",
                size,
                &format!(
                    "at most {MAX_LINES} lines ({} bytes)",
                    MAX_LINES * u64::from(line)
                ),
            );
        }
        Ok(CacheConfig {
            kind,
            size,
            ways,
            line,
        })
    }

    /// Which cache.
    pub fn kind(&self) -> CacheKind {
        self.kind
    }

    /// Capacity in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Associativity.
    pub fn ways(&self) -> u32 {
        self.ways
    }

    /// Line size in bytes.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// Number of sets.
    pub fn sets(&self) -> u64 {
        self.size / (u64::from(self.ways) * u64::from(self.line))
    }
}

impl FromStr for CacheConfig {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, SpecError> {
        const SYNTAX: &str = "expected <l1i|l1d>:<size>:<ways>:<line>, e.g. l1d:32k:8:64";
        let s = s.trim();
        let fields: Vec<&str> = s.split(':').collect();
        let [name, size, ways, line] = fields[..] else {
            return Err(SpecError::Syntax(format!("bad cache '{s}': {SYNTAX}")));
        };
        let kind = match name {
            "l1i" => CacheKind::L1i,
            "l1d" => CacheKind::L1d,
            _ => {
                return Err(SpecError::Syntax(format!(
                    "unknown cache '{name}' in '{s}': {SYNTAX}"
                )))
            }
        };
        let size = parse_size(size, &format!("{name} size"))?;
        let ways = parse_num(ways, &format!("{name} ways"), MAX_WAYS)? as u32;
        let line = parse_num(line, &format!("{name} line size"), MAX_LINE)? as u32;
        CacheConfig::new(kind, size, ways, line)
    }
}

/// The option syntax, e.g. `l1d:32k:8:64`.
impl fmt::Display for CacheConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, size) = (self.kind.name(), fmt_size(self.size));
        write!(f, "{name}:{size}:{}:{}", self.ways, self.line)
    }
}

/// Result of touching one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LineAccess {
    pub miss: bool,
    /// The miss evicted a dirty line.
    pub writeback: bool,
}

/// Tag of an invalid way (line numbers are at most 2^61 - 1).
const INVALID: u64 = u64::MAX;

/// Cache state: per way its line number (the tag), last-use stamp (0 = never) and dirty bit, set
/// by set.
#[derive(Clone, Debug)]
pub(super) struct Cache {
    line_shift: u32,
    set_mask: u64,
    ways: usize,
    tags: Vec<u64>,
    stamps: Vec<u64>,
    dirty: Vec<bool>,
    /// Stamp of the latest access.
    clock: u64,
    /// The line of the latest access (`INVALID`: none) and its way.
    last_line: u64,
    last_way: usize,
}

impl Cache {
    pub(super) fn new(c: &CacheConfig) -> Cache {
        let n = (c.size / u64::from(c.line)) as usize;
        Cache {
            line_shift: c.line.trailing_zeros(),
            set_mask: c.sets() - 1,
            ways: c.ways as usize,
            tags: vec![INVALID; n],
            stamps: vec![0; n],
            dirty: vec![false; n],
            clock: 0,
            last_line: INVALID,
            last_way: 0,
        }
    }

    pub(super) fn reset(&mut self) {
        self.tags.fill(INVALID);
        self.stamps.fill(0);
        self.dirty.fill(false);
        self.clock = 0;
        self.last_line = INVALID;
    }

    /// Line number of an address.
    #[inline]
    pub(super) fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    /// Touches line `line`: a hit refreshes its stamp; a miss fills the least recently used way
    /// (an invalid way first: its stamp 0 is the oldest). A write marks the line dirty.
    #[inline]
    pub(super) fn access(&mut self, line: u64, write: bool) -> LineAccess {
        // Most accesses touch the line of the previous one: still there, and already the most
        // recently used, so only its dirty bit can change.
        if line == self.last_line {
            if let Some(d) = self.dirty.get_mut(self.last_way) {
                *d |= write;
            }
            return LineAccess {
                miss: false,
                writeback: false,
            };
        }
        self.clock += 1;
        let base = (line & self.set_mask) as usize * self.ways;
        let tags = &self.tags[base..base + self.ways];
        if let Some(i) = tags.iter().position(|&t| t == line).map(|w| base + w) {
            self.stamps[i] = self.clock;
            self.dirty[i] |= write;
            self.last_line = line;
            self.last_way = i;
            return LineAccess {
                miss: false,
                writeback: false,
            };
        }
        let base = (line & self.set_mask) as usize * self.ways;
        let stamps = &self.stamps[base..base + self.ways];
        let mut victim = 0;
        for (w, &s) in stamps.iter().enumerate() {
            if s < stamps[victim] {
                victim = w;
            }
        }
        let v = base + victim;
        let writeback = self.tags[v] != INVALID && self.dirty[v];
        self.tags[v] = line;
        self.stamps[v] = self.clock;
        self.dirty[v] = write;
        self.last_line = line;
        self.last_way = v;
        LineAccess {
            miss: true,
            writeback,
        }
    }
}
