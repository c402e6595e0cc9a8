//! `run --code-snapshot`: the code a run executed, as a decoder needs it (issue 31 item 3), in
//! an ELF core file (`rvtrace_image::write`).
//!
//! Firmware and kernel code is read at the end of the run: the reset ROM, the loaded files'
//! RAM and the RAM pages the hart marked as code at their physical addresses, and those pages
//! again where the supervisor's page table maps them (as `/proc/kcore` gives a kernel's live
//! text). Over it go the bytes of every instruction retired in machine or supervisor mode as
//! they were when it first retired ([`Executed`]): a kernel patches its text while it runs
//! (static keys when a perf event opens, alternatives), and a trace decodes from its start, so
//! the code as the window first ran it decodes further than the code at the end; both are
//! code of every address space. Where the two differ the run warns: a decoder that reaches the
//! instructions after the change follows the first version.
//!
//! A process's code is gone by the end (its pages freed, its table dropped), and processes
//! may be linked at the same addresses: the bytes of every instruction retired in user mode
//! are kept as it retires, by the context the trace reports for it (`run --context asid`: the
//! `satp.ASID` it ran under), and written as code of user mode in that context.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use rvtrace_image::space::{Privilege, Scope};
use rvtrace_image::write::Piece;
use rvtrace_image::{Image, Xlen};
use rvtrace_sim::csr::num;
use rvtrace_sim::observer::{Observer, Retired, RetiredRun};

use crate::report::{Failure, Output};

const PAGE: u64 = 4096;

/// The space key of machine and supervisor code ([`Executed`]'s pages): above every ASID.
const EVERYWHERE: u64 = u64::MAX;

/// Recent pages [`Executed`] finds without its map.
const RECENT: usize = 64;

/// Block runs [`Executed`] remembers.
const SEEN: usize = 4096;

/// A page of user code: the bytes of the instructions retired in it.
struct CodePage {
    bytes: Box<[u8; PAGE as usize]>,
    /// Which bytes are an instruction's (bit `i`: byte `i`).
    filled: Box<[u64; PAGE as usize / 64]>,
}

/// The code a run retired (module documentation): an observer of one hart.
pub struct Executed {
    xlen: Xlen,
    /// Key the pages by the ASID (the trace reports it as the context) or not.
    by_asid: bool,
    /// `satp.ASID` in effect.
    asid: u64,
    /// Pages by (space, page address): space [`EVERYWHERE`] for machine and supervisor code,
    /// else user code of that context (0 without `by_asid`); indices into `store`.
    pages: HashMap<(u64, u64), usize>,
    store: Vec<CodePage>,
    /// The last page recorded in: (space, page address, index into `store`).
    last: (u64, u64, usize),
    /// Recent pages, direct-mapped by page and space.
    recent: [(u64, u64, usize); RECENT],
    /// Block runs recorded: (block id, space, most instructions), direct-mapped.
    seen: Box<[(u64, u64, u8)]>,
    /// Bytes of user code retired again with another value (the first is kept).
    changed: u64,
}

impl Executed {
    /// For a hart of width `xlen` whose `satp` is `satp`; `by_asid`: the trace's context is
    /// `satp.ASID` (`run --context asid`).
    pub fn new(xlen: Xlen, by_asid: bool, satp: u64) -> Executed {
        Executed {
            xlen,
            by_asid,
            asid: rvtrace_sim::ingress::satp_asid(xlen, satp),
            pages: HashMap::new(),
            store: Vec::new(),
            last: (EVERYWHERE, u64::MAX, usize::MAX),
            recent: [(EVERYWHERE, u64::MAX, usize::MAX); RECENT],
            seen: vec![(u64::MAX, 0, 0); SEEN].into_boxed_slice(),
            changed: 0,
        }
    }

    /// The space key of code run at `priv_`.
    #[inline(always)]
    fn key(&self, priv_: u8) -> u64 {
        match priv_ {
            0 if self.by_asid => self.asid,
            0 => 0,
            _ => EVERYWHERE,
        }
    }

    /// Records an instruction retired in space `key` ([`Executed::key`]).
    #[inline(always)]
    fn record(&mut self, key: u64, pc: u64, insn: u32, len: u8) {
        let pc = if self.xlen == Xlen::Rv32 {
            pc & 0xffff_ffff
        } else {
            pc
        };
        let (page, off, n) = (pc & !(PAGE - 1), (pc & (PAGE - 1)) as usize, len as usize);
        // The common case: an instruction seen before, in the page of the last one. Bytes are
        // filled by whole instructions, which start on halfwords: its first and last bytes
        // filled means its halfwords are.
        if (key, page) == (self.last.0, self.last.1) && off + n <= PAGE as usize && n > 0 {
            let p = &self.store[self.last.2];
            let bit = |i: usize| p.filled[i / 64] >> (i % 64) & 1;
            if bit(off) & bit(off + n - 1) != 0 {
                if key != EVERYWHERE && p.bytes[off..off + n] != insn.to_le_bytes()[..n] {
                    self.record_bytes(key, pc, insn, len);
                }
                return;
            }
        }
        self.record_bytes(key, pc, insn, len);
    }

    /// [`Executed::record`] byte by byte (a page crossed, a page not the last, bytes not seen
    /// or changed).
    fn record_bytes(&mut self, key: u64, pc: u64, insn: u32, len: u8) {
        for j in 0..u64::from(len) {
            let a = pc.wrapping_add(j);
            let a = if self.xlen == Xlen::Rv32 {
                a & 0xffff_ffff
            } else {
                a
            };
            let page = a & !(PAGE - 1);
            if (key, page) != (self.last.0, self.last.1) {
                // Recent pages first (a kernel's code moves among a few), then the map.
                let slot = ((page >> 12) ^ key) as usize % RECENT;
                let i = match self.recent[slot] {
                    (k, p, i) if (k, p) == (key, page) => i,
                    _ => {
                        let store = &mut self.store;
                        let i = *self.pages.entry((key, page)).or_insert_with(|| {
                            store.push(CodePage {
                                bytes: Box::new([0; PAGE as usize]),
                                filled: Box::new([0; PAGE as usize / 64]),
                            });
                            store.len() - 1
                        });
                        self.recent[slot] = (key, page, i);
                        i
                    }
                };
                self.last = (key, page, i);
            }
            let p = &mut self.store[self.last.2];
            let (off, b) = ((a & (PAGE - 1)) as usize, (insn >> (8 * j)) as u8);
            if p.filled[off / 64] >> (off % 64) & 1 != 0 {
                self.changed += u64::from(p.bytes[off] != b && key != EVERYWHERE);
            } else {
                p.bytes[off] = b;
                p.filled[off / 64] |= 1 << (off % 64);
            }
        }
    }

    /// Adds `other`'s pages (another hart's); a byte both have keeps this one's.
    pub fn merge(&mut self, other: Executed) {
        self.changed += other.changed;
        let mut theirs_all: Vec<Option<CodePage>> = other.store.into_iter().map(Some).collect();
        for (key, k) in other.pages {
            let Some(theirs) = theirs_all[k].take() else {
                continue;
            };
            let Some(&i) = self.pages.get(&key) else {
                self.store.push(theirs);
                self.pages.insert(key, self.store.len() - 1);
                continue;
            };
            let mine = &mut self.store[i];
            for off in 0..PAGE as usize {
                let bit = 1u64 << (off % 64);
                if theirs.filled[off / 64] & bit == 0 {
                    continue;
                }
                if mine.filled[off / 64] & bit != 0 {
                    self.changed +=
                        u64::from(mine.bytes[off] != theirs.bytes[off] && key.0 != EVERYWHERE);
                } else {
                    mine.bytes[off] = theirs.bytes[off];
                    mine.filled[off / 64] |= bit;
                }
            }
        }
    }

    /// The user pages as runs of consecutive pages of one context: (scope, address, bytes).
    fn user_runs(&self) -> Vec<(Scope, u64, Vec<u8>)> {
        let mut keys: Vec<&(u64, u64)> = self.pages.keys().filter(|k| k.0 != EVERYWHERE).collect();
        keys.sort_unstable();
        let mut out: Vec<(Scope, u64, Vec<u8>)> = Vec::new();
        for &(ctx, page) in keys {
            let bytes = &self.store[self.pages[&(ctx, page)]].bytes[..];
            let scope = Scope {
                privilege: Some(Privilege::U),
                context: self.by_asid.then_some(ctx),
            };
            match out.last_mut() {
                Some((s, at, d)) if *s == scope && at.wrapping_add(d.len() as u64) == page => {
                    d.extend_from_slice(bytes)
                }
                _ => out.push((scope, page, bytes.to_vec())),
            }
        }
        out
    }
}

impl Observer for Executed {
    const RETIRE_RUNS: bool = true;

    #[inline(always)]
    fn retire(&mut self, ev: &Retired) {
        self.record(self.key(ev.priv_), ev.pc, ev.insn, ev.len);
    }

    #[inline(always)]
    fn retire_run(&mut self, run: &impl RetiredRun) {
        let (n, key) = (run.len(), self.key(run.priv_()));
        // A run of a block recorded before in the same space, as long or longer, has the same
        // instructions (`RetiredRun::block_id`): nothing new.
        if let Some(id) = run.block_id() {
            let slot = (id ^ key.rotate_left(32)) as usize % SEEN;
            match &mut self.seen[slot] {
                (i, k, len) if (*i, *k) == (id, key) && *len as usize >= n => return,
                e => *e = (id, key, n.min(u8::MAX as usize) as u8),
            }
        }
        for i in 0..n {
            let s = if i + 1 < n {
                run.step(i)
            } else {
                run.last_step()
            };
            self.record(key, s.pc, run.insn(i), s.len);
        }
    }

    #[inline(always)]
    fn csr_write(&mut self, csr: u16, value: u64) {
        if csr == num::SATP {
            self.asid = rvtrace_sim::ingress::satp_asid(self.xlen, value);
        }
    }
}

/// Writes the snapshot (module documentation) of `hart` after a run of the files `image`, with
/// the code `executed` kept during the run.
pub fn write_code_snapshot(
    path: &Path,
    hart: &mut rvtrace_sim::Hart,
    image: &Image,
    executed: Option<&Executed>,
) -> Result<(), Failure> {
    use rvtrace_sim::bus::RAM_BASE;
    let ram_end = RAM_BASE + hart.bus.ram_size();
    let mut ranges: Vec<(u64, u64)> = hart.bus.code_pages().map(|p| (p, p + PAGE)).collect();
    ranges.extend(
        image
            .segments()
            .iter()
            .filter(|s| s.is_executable())
            .map(|s| {
                (
                    s.paddr.max(RAM_BASE),
                    (s.paddr + s.data.len() as u64).min(ram_end),
                )
            })
            .filter(|(lo, hi)| lo < hi),
    );
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (lo, hi) in ranges {
        match merged.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    let mut contents: Vec<(u64, Vec<u8>)> = Vec::new();
    let rom = hart.bus.rom();
    if !rom.is_empty() {
        contents.push((rvtrace_sim::bus::ROM_BASE, rom.to_vec()));
    }
    for (lo, hi) in merged {
        let mut buf = vec![0; (hi - lo) as usize];
        if hart.bus.read_ram(lo, &mut buf) {
            contents.push((lo, buf));
        }
    }
    // The same pages where the supervisor's page table maps them (a kernel runs there).
    // A virtual page where a physical range already is (an identity mapping) is that range.
    let physical: Vec<(u64, u64)> = contents
        .iter()
        .map(|(a, d)| (*a, a + d.len() as u64))
        .collect();
    let code: std::collections::BTreeSet<u64> = hart.bus.code_pages().collect();
    for m in hart.supervisor_code_mappings() {
        for &p in code.range(m.pa..m.pa.saturating_add(m.len)) {
            let va = m.va.wrapping_add(p - m.pa);
            if physical
                .iter()
                .any(|&(lo, hi)| va < hi && lo < va.wrapping_add(PAGE))
            {
                continue;
            }
            let mut page = vec![0; PAGE as usize];
            if !hart.bus.read_ram(p, &mut page) {
                continue;
            }
            match contents.last_mut() {
                Some((at, d)) if at.wrapping_add(d.len() as u64) == va => d.extend(page),
                _ => contents.push((va, page)),
            }
        }
    }
    contents.sort_unstable_by_key(|c| c.0);
    let mut changed = Changed::default();
    if let Some(e) = executed {
        overlay_first_versions(&mut contents, e, &mut changed);
    }
    if changed.bytes > 0 {
        warn!(
            "--code-snapshot: the code at {} bytes (the first at {:#x}) changed after it ran \
             in the window (a kernel patching its text: static keys, alternatives); the \
             snapshot has it as it first ran, so a decode goes wrong where the trace reaches \
             it after the change",
            changed.bytes, changed.first
        );
    }
    let user_runs = executed.map(Executed::user_runs).unwrap_or_default();
    if let Some(u) = executed.filter(|u| u.changed > 0) {
        warn!(
            "--code-snapshot: {} bytes of user code were retired with other values at the same \
             address{}; the snapshot has the first{}",
            u.changed,
            if u.by_asid { " and ASID" } else { "" },
            if u.by_asid {
                " (code rewritten, or an ASID reused)"
            } else {
                " (processes at the same addresses: run with --context asid to keep each apart)"
            }
        );
    }
    let pieces: Vec<Piece> = contents
        .iter()
        .map(|(addr, d)| Piece {
            addr: *addr,
            bytes: d,
            scope: Scope::default(),
        })
        .chain(user_runs.iter().map(|(scope, addr, d)| Piece {
            addr: *addr,
            bytes: d,
            scope: *scope,
        }))
        .collect();
    // misa.C (bit 2): the hart runs compressed instructions.
    let rvc = hart.csr_read(num::MISA).unwrap_or(0) & (1 << 2) != 0;
    let elf = rvtrace_image::write::core_of(hart.xlen, rvc, &pieces);
    let mut out = Output::create(path)?;
    out.write_all(&elf).map_err(|e| out.fail(e))?;
    out.finish()
}

/// Where machine and supervisor code changed after it first ran.
#[derive(Default)]
struct Changed {
    bytes: u64,
    first: u64,
}

/// Puts the machine and supervisor code of `executed` over `contents` (sorted, not
/// overlapping) as it first ran, counting the bytes that differ in `changed`; code that
/// `contents` does not have (freed by the end, as a kernel's init text) is added.
fn overlay_first_versions(
    contents: &mut Vec<(u64, Vec<u8>)>,
    executed: &Executed,
    changed: &mut Changed,
) {
    let mut keys: Vec<u64> = executed
        .pages
        .keys()
        .filter(|k| k.0 == EVERYWHERE)
        .map(|k| k.1)
        .collect();
    keys.sort_unstable();
    let mut missing: Vec<(u64, Vec<u8>)> = Vec::new();
    for page in keys {
        let p = &executed.store[executed.pages[&(EVERYWHERE, page)]];
        for off in 0..PAGE as usize {
            if p.filled[off / 64] >> (off % 64) & 1 == 0 {
                continue;
            }
            let (a, b) = (page + off as u64, p.bytes[off]);
            // The piece that holds `a`: the last that starts at or before it.
            let i = contents.partition_point(|c| c.0 <= a);
            let held = i
                .checked_sub(1)
                .map(|i| &mut contents[i])
                .filter(|c| a - c.0 < c.1.len() as u64);
            match held {
                Some((at, d)) => {
                    let byte = &mut d[(a - *at) as usize];
                    if *byte != b {
                        if changed.bytes == 0 {
                            changed.first = a;
                        }
                        changed.bytes += 1;
                        *byte = b;
                    }
                }
                // Not held: a run of its own, which takes up the gap from the last run
                // (zeros) when the gap is short and no piece starts in it.
                None => {
                    let after = |c: &(u64, Vec<u8>)| c.0 + c.1.len() as u64;
                    let piece_start = i.checked_sub(1).map_or(0, |i| contents[i].0);
                    match missing.last_mut() {
                        Some(run)
                            if a >= after(run)
                                && a - after(run) < 64
                                && piece_start < after(run) =>
                        {
                            run.1.resize((a - run.0) as usize, 0);
                            run.1.push(b);
                        }
                        _ => missing.push((a, vec![b])),
                    }
                }
            }
        }
    }
    if !missing.is_empty() {
        contents.extend(missing);
        contents.sort_unstable_by_key(|c| c.0);
    }
}
