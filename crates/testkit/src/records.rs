//! Random ingress record streams for tests that compare an encoder's fast paths with its
//! general algorithm (the records need no program: encoders only read the records).

use crate::Rng;
use rvtrace_ingress::{Itype, Record};

/// A random record stream shaped like a program's: runs of plain instructions (and blocks
/// of several), branches to a few targets, calls and returns (mostly to the call's next
/// address), other jumps, traps that retire or not, trap returns, privilege and context
/// changes of each `ctype`. `calm`: the other records are rare (long stretches of branches
/// without a packet).
pub fn random_records(seed: u64, n: usize, calm: bool) -> Vec<Record> {
    let mut g = Rng(seed);
    let targets: Vec<u64> = (0..6).map(|i| 0x8000_0000 + 0x40 * i).collect();
    let handlers = [0x8000_1000u64, 0x8000_2000];
    let (mut pc, mut priv_, mut context, mut time) = (0x8000_0000u64, 3u8, 0u64, 0u64);
    let mut calls: Vec<u64> = Vec::new();
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let ilastsize = g.below(2) as u8;
        let size = 1u32 << ilastsize;
        let mut r = Record {
            iaddr: pc,
            iretire: size,
            ilastsize,
            priv_,
            context,
            time,
            ..Record::default()
        };
        time += 1 + g.below(3);
        let seq = pc + 2 * size as u64;
        let mut k = g.below(1000);
        if calm && k >= 800 && g.below(30) != 0 {
            k = g.below(800);
        }
        pc = match k {
            0..=599 => {
                if k < 40 {
                    // A block of several instructions.
                    r.iretire += 2 * (1 + g.below(4) as u32);
                }
                r.next_iaddr()
            }
            600..=799 => {
                if g.below(2) == 0 {
                    r.itype = Itype::TakenBranch;
                    targets[g.below(6) as usize]
                } else {
                    r.itype = Itype::NonTakenBranch;
                    seq
                }
            }
            800..=829 => {
                r.itype = Itype::InferableJump;
                targets[g.below(6) as usize]
            }
            830..=869 => {
                r.itype = if g.below(2) == 0 {
                    Itype::InferableCall
                } else {
                    Itype::UninferableCall
                };
                calls.push(seq);
                targets[g.below(6) as usize] + 0x200
            }
            870..=909 => {
                r.itype = Itype::Return;
                match calls.pop() {
                    Some(a) if g.below(8) != 0 => a,
                    _ => targets[g.below(6) as usize],
                }
            }
            910..=929 => {
                r.itype = if g.below(2) == 0 {
                    Itype::UninferableJump
                } else {
                    Itype::OtherUninferableJump
                };
                r.sijump = g.below(3) == 0;
                if r.sijump {
                    seq
                } else {
                    targets[g.below(6) as usize] + 0x100
                }
            }
            930..=954 => {
                // A trap: after an instruction (ecall) or retiring nothing (a fault).
                r.itype = if g.below(4) == 0 {
                    Itype::Interrupt
                } else {
                    Itype::Exception
                };
                r.cause = g.below(12);
                r.tval = g.below(4) * 0x1234;
                if g.below(2) == 0 {
                    r.iretire = 0;
                }
                priv_ = 3;
                handlers[g.below(2) as usize]
            }
            955..=969 => {
                r.itype = Itype::TrapReturn;
                priv_ = [0, 1, 3][g.below(3) as usize];
                targets[g.below(6) as usize]
            }
            970..=984 => {
                priv_ = [0, 1, 3][g.below(3) as usize];
                r.next_iaddr()
            }
            _ => {
                context = g.below(3);
                r.ctype = g.below(4) as u8;
                r.next_iaddr()
            }
        };
        v.push(r);
    }
    v
}

/// `recs` cut at random places (mostly pieces of up to 700 records, now and then of up to 3,
/// empty ones included), each piece with whether a trace loss comes before it (1 in 10);
/// reproducible by `seed`.
pub fn random_pieces(recs: &[Record], seed: u64) -> Vec<(&[Record], bool)> {
    let mut g = Rng(seed);
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < recs.len() {
        let n = match g.below(4) {
            0 => g.below(4),
            _ => g.below(700),
        } as usize;
        let end = (at + n).min(recs.len());
        pieces.push((&recs[at..end], g.below(10) == 0));
        at = end;
    }
    pieces
}
