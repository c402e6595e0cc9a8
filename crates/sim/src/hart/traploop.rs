//! The hart's trap-loop detection (the rules and their state are `crate::traploop`).

use super::Hart;
use crate::arch::{cause, exception_name};
use crate::decode::{decode, Extensions, Op};
use crate::observer::TrapInfo;
use crate::traploop::*;

impl Hart {
    fn snapshot(&self) -> Snapshot {
        let mut x = self.x;
        x[2] = 0; // sp: see the module doc
        let c = &self.csr;
        Snapshot {
            x,
            f: self.f,
            priv_: self.priv_,
            csrs: [
                c.mscratch, c.sscratch, c.mtvec, c.stvec, c.mie, c.medeleg, c.mideleg, c.satp,
                c.mstatus,
            ],
            trig: c.trig.state(),
        }
    }

    /// Rule 2, called by `take_trap` once the trap is taken (registers still as the trap found them).
    pub(crate) fn note_trap(&mut self, trap: &TrapInfo) {
        let io = std::mem::take(&mut self.bus.io_touched);
        if trap.interrupt {
            self.trap_loop.key = None;
            return;
        }
        let mut snap = self.snapshot();
        snap.priv_ = trap.from_priv;
        let key = Some((trap.cause, trap.epc));
        let tl = &mut self.trap_loop;
        if io || tl.key != key || tl.snapshot != snap {
            tl.key = key;
            tl.snapshot = snap;
            tl.repeats = 1;
            tl.threshold = REPEAT_THRESHOLD;
            tl.ram_digest = None;
            return;
        }
        tl.repeats += 1;
        if tl.repeats == tl.threshold {
            let digest = self.loop_digest(trap.from_priv);
            let tl = &mut self.trap_loop;
            tl.ram_digest = Some(digest);
            tl.sp_at_digest = self.x[2];
        } else if tl.repeats == 2 * tl.threshold {
            let digest = self.loop_digest(trap.from_priv);
            let tl = &mut self.trap_loop;
            if tl.ram_digest == Some(digest) {
                if self.stop.is_none() {
                    let sp_moved = tl.sp_at_digest != self.x[2];
                    let repeats = tl.repeats as u64;
                    let reason = self.likely_reason(trap.cause, trap.tval, sp_moved);
                    self.stop_for_trap_loop(*trap, repeats, reason);
                }
            } else {
                // Progress in RAM: look again after twice as many.
                tl.threshold = tl.threshold.saturating_mul(2).min(1 << 30);
                tl.repeats = 1;
                tl.ram_digest = None;
            }
        }
    }

    /// The digest of the RAM a loop of exceptions taken from `from` could see. From S or U, the
    /// pages PMP denies that privilege are left out: they are the firmware's own, and its locks
    /// and counters move on every exception it redirects to the payload (OpenSBI's ticket locks,
    /// issue 29), which the payload's loop can never observe. A firmware that redirected the same
    /// fault 2 * REPEAT_THRESHOLD times is taken to keep doing so.
    fn loop_digest(&self, from: u8) -> u64 {
        use crate::pmp::Access;
        if from == crate::arch::privilege::M {
            return self.bus.ram_digest(|_, _| true);
        }
        let pmp = &self.csr.pmp;
        self.bus.ram_digest(|lo, hi| {
            [Access::Read, Access::Write]
                .into_iter()
                .any(|a| pmp.uniform(lo, hi, a, from) != Some(false))
        })
    }

    fn stop_for_trap_loop(&mut self, trap: TrapInfo, repeats: u64, reason: Option<String>) {
        let mut msg = format!(
            "stuck in a trap loop: {} at pc {:#x} (tval {:#x}) taken {repeats} times in a row \
             with nothing else changing",
            exception_name(trap.cause),
            trap.epc,
            trap.tval
        );
        if let Some(r) = &reason {
            msg.push_str(&format!(": {r}"));
        }
        self.trap_loop.report = Some(TrapLoopReport {
            trap,
            repeats,
            reason,
        });
        self.stop = Some(crate::Stop::Error(msg));
        self.recheck();
    }

    /// Why an exception would repeat, when the hart can tell.
    fn likely_reason(&self, code: u64, tval: u64, sp_moved: bool) -> Option<String> {
        if code == cause::ILLEGAL {
            let bits = tval as u32;
            if bits & 3 != 3 && !self.ext.c {
                return Some(
                    "a compressed instruction, and the hart's ISA lacks C (see --isa)".into(),
                );
            }
            if decode(bits, self.xlen, &self.ext).op == Op::Illegal {
                let all = Extensions::ALL;
                if decode(bits, self.xlen, &all).op != Op::Illegal {
                    for (letter, on) in [
                        (
                            "M",
                            Extensions {
                                m: true,
                                ..self.ext
                            },
                        ),
                        (
                            "A",
                            Extensions {
                                a: true,
                                ..self.ext
                            },
                        ),
                        (
                            "F",
                            Extensions {
                                f: true,
                                ..self.ext
                            },
                        ),
                        (
                            "D",
                            Extensions {
                                d: true,
                                f: true,
                                ..self.ext
                            },
                        ),
                        (
                            "Zba",
                            Extensions {
                                zba: true,
                                ..self.ext
                            },
                        ),
                        (
                            "Zbb",
                            Extensions {
                                zbb: true,
                                ..self.ext
                            },
                        ),
                        (
                            "Zbs",
                            Extensions {
                                zbs: true,
                                ..self.ext
                            },
                        ),
                        (
                            "Zbc",
                            Extensions {
                                zbc: true,
                                ..self.ext
                            },
                        ),
                    ] {
                        if decode(bits, self.xlen, &on).op != Op::Illegal {
                            return Some(format!(
                                "the instruction needs {letter}, which the hart's ISA lacks (see --isa)"
                            ));
                        }
                    }
                }
            }
            return Some("the trap handler returns to the instruction that traps".into());
        }
        if sp_moved {
            return Some(format!(
                "the trap handler faults before it returns, with only sp changing (sp {:#x}): a bad stack pointer?",
                self.x[2]
            ));
        }
        None
    }

    /// Rule 1: record a trap taken without retiring an instruction. A hart that keeps trapping
    /// without ever retiring one (say, a handler whose first instruction is illegal) would spin
    /// forever, as QEMU does; the model stops instead and says where the loop started.
    pub(crate) fn note_fault(&mut self, trap: TrapInfo) {
        let tl = &mut self.trap_loop;
        if tl.traps_without_retire == 0 {
            tl.first_fault = Some((trap, self.instret));
        }
        tl.traps_without_retire += 1;
        tl.last_handler = Some(trap.handler);
        if tl.traps_without_retire >= NO_RETIRE_LIMIT && self.stop.is_none() {
            let mut msg = format!(
                "stuck in a trap loop: {NO_RETIRE_LIMIT} traps without retiring an instruction"
            );
            if let Some((t, n)) = tl.first_fault {
                msg.push_str(&format!(
                    "; the first was {} at pc {:#x} (tval {:#x}) after {} instructions, handled at {:#x}",
                    trap_name(&t),
                    t.epc,
                    t.tval,
                    n,
                    t.handler
                ));
            }
            msg.push_str(&format!(
                "; the last was {} at pc {:#x}",
                trap_name(&trap),
                trap.epc
            ));
            tl.report = Some(TrapLoopReport {
                trap,
                repeats: tl.traps_without_retire as u64,
                reason: Some("the trap handler's first instruction traps".into()),
            });
            self.stop = Some(crate::Stop::Error(msg));
            self.recheck();
        }
    }

    /// Rule 1, the runaway case: the message for a trap whose handler is not in memory.
    pub(crate) fn runaway_message(&self, pc: u64) -> String {
        let mut msg = String::new();
        if let Some((t, n)) = self.trap_loop.first_fault {
            msg.push_str(&format!(
                "{} at pc {:#x} (tval {:#x}) after {} instructions",
                trap_name(&t),
                t.epc,
                t.tval,
                n
            ));
            msg.push_str(&format!(
                "; its trap handler at {:#x} ({}) is not in memory",
                pc,
                if t.to_priv == crate::privilege::M {
                    "mtvec"
                } else {
                    "stvec"
                }
            ));
        } else {
            msg.push_str(&format!("instruction access fault at pc {pc:#x}"));
        }
        msg
    }

    /// The trap loop the hart stopped in, if [`Hart::run`] returned [`crate::Stop::Error`] for one.
    pub fn trap_loop(&self) -> Option<&TrapLoopReport> {
        self.trap_loop.report.as_ref()
    }
}

fn trap_name(t: &TrapInfo) -> String {
    if t.interrupt {
        format!("interrupt {}", t.cause)
    } else {
        exception_name(t.cause).to_string()
    }
}
