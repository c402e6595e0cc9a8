//! The checker's memory stays flat on hostile input (issue 9): 20 MB of each pattern, streamed
//! through `Checker::check`, must not make it hold more than a few MiB, whatever the input size.
//! Measured with a counting global allocator (its own test binary, so no other test's
//! allocations count).

mod common;

use common::{program, reference};
use rvtrace_tandem::checker::{CheckOptions, Checker, MAX_GROUP_BYTES};
use rvtrace_tandem::{Elements, Params};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = NOW.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        NOW.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            NOW.fetch_sub(l.size(), Relaxed);
            grew(new);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// `total` bytes: `head`, then `unit` over and over.
struct Pattern {
    head: Vec<u8>,
    unit: Vec<u8>,
    pos: usize,
    total: usize,
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() && self.pos < self.total {
            buf[n] = if self.pos < self.head.len() {
                self.head[self.pos]
            } else {
                self.unit[(self.pos - self.head.len()) % self.unit.len()]
            };
            n += 1;
            self.pos += 1;
        }
        Ok(n)
    }
}

#[test]
fn hostile_input_keeps_memory_flat() {
    let elf = program("setjmp-rv64gc");
    let mut image = rvtrace_image::Image::new();
    image.load_file(&elf).unwrap();
    let store = {
        // A state initialization store of 8 bytes at 0x80001000.
        let mut v = vec![1, 11, 8];
        v.extend(0x8000_1000u64.to_le_bytes());
        v.push(1 | 3 << 4);
        v.extend(0x1122_3344_5566_7788u64.to_le_bytes());
        v.push(2);
        v
    };
    // A load request of 1 byte at 0x80001000.
    let mut load = vec![8];
    load.extend(0x8000_1000u64.to_le_bytes());
    load.push(0);
    let patterns: [(&str, Vec<u8>, Vec<u8>, usize); 7] = [
        ("one group of memory requests", vec![1], load, 20 << 20),
        (
            "empty state initialization groups",
            vec![],
            vec![1, 11, 2],
            20 << 20,
        ),
        ("state initialization stores", vec![], store, 20 << 20),
        ("one group of increment pc", vec![1], vec![3], 20 << 20),
        (
            "one group of register updates",
            vec![1],
            vec![5, 0x01, 0x10, 1],
            20 << 20,
        ),
        ("0xff", vec![], vec![0xff], 20 << 20),
        // Every group a mismatch (no instruction): 256 KB, as each one steps the reference.
        ("begin groups", vec![], vec![1], 256 << 10),
    ];
    for (what, head, unit, total) in patterns {
        let mut c = Checker::new(
            reference(&image),
            &image,
            CheckOptions::new(Params::RV64, Elements::NONE),
        );
        let base = NOW.load(Relaxed);
        PEAK.store(base, Relaxed);
        let src = Pattern {
            head,
            unit,
            pos: 0,
            total,
        };
        let mut reported = 0u64;
        let r = c.check(src, &mut |_| reported += 1);
        let grown = PEAK.load(Relaxed) - base;
        let s = c.summary().clone();
        assert!(r.map(|s| !s.passed()).unwrap_or(true), "{what}: {s}");
        eprintln!(
            "{what}: {} bytes read, {reported} mismatches, peak {:.1} MiB above the start",
            s.bytes,
            grown as f64 / (1 << 20) as f64
        );
        // The read buffer (a group of at most MAX_GROUP_BYTES) and a group's records (at most
        // MAX_GROUP_REGS / MAX_GROUP_MEMS): a few MiB, whatever the input's size; and the
        // reference hart's pool of pre-decoded blocks (8 MiB, made whole when it decodes its
        // first block, whatever the input: crates/sim/src/block.rs `POOL`).
        assert!(
            grown < 8 * MAX_GROUP_BYTES + (8 << 20),
            "{what}: {grown} bytes"
        );
    }
}
