//! Ingress-port verification: every record of an ingress stream checked against the program
//! and the rules of the ingress port (E-Trace v2.0 `ingressPort.adoc`, "Instruction Trace
//! Interface"; N-Trace chapter "Trace Ingress Port", which uses the same port), as a hardware
//! engineer checks a hart's port or an encoder's input (`rvtrace ingress check`, and the
//! importers of `rvtrace ingress convert`).
//!
//! The rules, each a [`Violation`] kind:
//!
//! * the instructions: `iaddr` even, `iretire` half-words ending on an
//!   instruction, `ilastsize` the size of the last one (table "Instruction interface signals -
//!   multiple retirement per block"), and only the last instruction of a block a control
//!   transfer ("the block would not be comprised of contiguous instructions");
//! * `itype` against the last instruction: one of the codes the itype tables give for it (E-Trace
//!   `JumpClasses` and table "Instruction Type (itype) encoding"; N-Trace table "Generating itype
//!   for different instructions", both its ratified and rc7 forms) at the port's
//!   `itype_width_p`, or an exception/interrupt "following the last retired instruction";
//!   `ecall`/`ebreak` always trap (itype 1);
//! * the flow: each record starts where the one before it goes (the next instruction, or the
//!   static target of a taken branch or an inferable jump), unless that one ended in a trap, a
//!   trap return or an uninferable jump, or this one is an asynchronous context change (`ctype`
//!   3, "treated the same as an exception");
//! * traps: `cause` a standard or custom exception/interrupt code (the privileged
//!   architecture's `mcause` table), an `ecall`'s the one for its privilege with `tval` 0, an
//!   `ebreak`'s a breakpoint;
//! * privilege: a defined code (table "Privilege level (priv) encoding"), changed only after a
//!   trap (never to a lower level) or a trap return (never to a higher one), or by an
//!   asynchronous context change;
//! * context: `ctype` one of the four codes (table "Context type ctype values"), and a new
//!   `context` reported (`ctype` not 0) on the first record in it.
//!
//! A record with `iretire` 0 and `itype` 0 carries nothing ("the values of all other signals are
//! undefined") and is skipped. A record whose instructions are not in the program (code written
//! at run time, or mapped where the ELF does not say) cannot be checked against it: it is
//! counted ([`IngressChecker::outside`]), its start checked against the record before, and the
//! flow after it not.

use rvtrace_flow::insn_len_at;
use rvtrace_image::Image;
use rvtrace_ingress::{privilege, Itype, Record};
use rvtrace_isa::insn::{decode, Extensions, Op};
use rvtrace_isa::{classify, CfClass, IsaConfig};
use std::fmt;

/// `mcause` exception codes: breakpoint, illegal instruction, environment call from U/VU.
const CAUSE_BREAKPOINT: u64 = 3;
const CAUSE_ILLEGAL: u64 = 2;
const CAUSE_ECALL_U: u64 = 8;

/// One rule a record breaks ([`Violation::kind`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `iaddr` of a retiring record (or of a trap with nothing retired) is odd.
    OddAddress,
    /// The `iretire` half-words do not end on an instruction of the program.
    Iretire {
        /// The length in bytes the program's instructions give from `iaddr` past the end.
        bytes: u64,
    },
    /// `ilastsize` is not the size of the last instruction.
    Ilastsize {
        /// The size of the instruction at the last address, in bytes.
        bytes: u64,
    },
    /// An instruction before the last one of a block is a control transfer (only the last
    /// instruction of a block can be one).
    InBlock {
        /// Its address.
        pc: u64,
        /// Its class.
        class: CfClass,
    },
    /// `itype` is none of the codes the tables give for the last instruction.
    Itype {
        /// The class of the last instruction.
        class: CfClass,
        /// The codes allowed for it (a trap after it, 1 and 2, besides).
        allowed: Vec<Itype>,
    },
    /// `itype` other than 0, 1 or 2 with nothing retired.
    ItypeNothingRetired,
    /// The record does not start where the record before it goes.
    Discontinuity {
        /// The index of the record before it.
        prev: u64,
        /// That record.
        prev_record: Record,
        /// Where that record goes.
        expected: u64,
    },
    /// A cause no trap has (a reserved `mcause` code), or one the instruction cannot raise.
    Cause {
        /// What is wrong.
        why: &'static str,
    },
    /// A `tval` the trap cannot have.
    Tval {
        /// What is wrong.
        why: &'static str,
    },
    /// `priv` is a reserved code (2 or 7).
    PrivilegeCode,
    /// The privilege changed where no trap, trap return or asynchronous context change is.
    Privilege {
        /// The privilege before.
        from: u8,
        /// What the record before this one ended with ("no trap", "a trap", "a trap return").
        why: &'static str,
    },
    /// `ctype` is not one of the four codes.
    Ctype,
    /// `context` changed with `ctype` 0 (unreported).
    Context {
        /// The context before.
        from: u64,
    },
}

/// A record that breaks a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The record's index in the stream (from 0).
    pub index: u64,
    /// The record.
    pub record: Record,
    /// The rule.
    pub kind: Kind,
}

impl Violation {
    /// The address whose instruction the violation is about: the last retired one, or `iaddr`
    /// for a record that retires nothing; for a discontinuity, that of the record before.
    pub fn insn_addr(&self) -> u64 {
        match &self.kind {
            Kind::Discontinuity { prev_record, .. } => prev_record.last_iaddr(),
            Kind::InBlock { pc, .. } => *pc,
            _ if self.record.retires() => self.record.last_iaddr(),
            _ => self.record.iaddr,
        }
    }
}

fn priv_name(p: u8) -> String {
    privilege::name(p).map_or_else(|| p.to_string(), str::to_string)
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::OddAddress => f.write_str("iaddr is odd: no instruction starts there"),
            Kind::Iretire { bytes } => write!(
                f,
                "iretire does not end on an instruction: the program's instructions from iaddr take {bytes} bytes past it"
            ),
            Kind::Ilastsize { bytes } => write!(
                f,
                "ilastsize says the last instruction is not {bytes} bytes, the size it has in the program"
            ),
            Kind::InBlock { pc, class } => write!(
                f,
                "the instruction at {pc:#x} ({class:?}) is a control transfer before the block's last instruction: only the last can be"
            ),
            Kind::Itype { class, allowed } => {
                let codes: Vec<String> = allowed.iter().map(|t| t.code().to_string()).collect();
                write!(
                    f,
                    "itype does not fit the last instruction ({class:?}): the itype tables give {} (or 1/2, a trap after it)",
                    codes.join(" or ")
                )
            }
            Kind::ItypeNothingRetired => {
                f.write_str("itype other than 0, 1 or 2 on a record that retires nothing")
            }
            Kind::Discontinuity {
                prev,
                prev_record,
                expected,
            } => write!(
                f,
                "a discontinuity nothing explains: record {prev} ({prev_record}) goes on at {expected:#x} (a record lost, or a wrong itype)"
            ),
            Kind::Cause { why } | Kind::Tval { why } => f.write_str(why),
            Kind::PrivilegeCode => f.write_str("priv is a reserved code"),
            Kind::Privilege { from, why } => write!(
                f,
                "the privilege changed from {} after {why}: only traps (up) and trap returns (down) change it",
                priv_name(*from)
            ),
            Kind::Ctype => f.write_str("ctype is not a code (0-3)"),
            Kind::Context { from } => write!(
                f,
                "context changed from {from:#x} with ctype 0: the first record in a new context reports it"
            ),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "record {}: {}: {}", self.index, self.record, self.kind)
    }
}

/// Where a record goes: the address the next record must start at, if it is known.
type Next = Option<u64>;

/// The rank of a privilege code, for "a trap never lowers it": U/VU 0, S/VS 1, M 3, D 4.
fn rank(p: u8) -> u8 {
    match p {
        privilege::U | privilege::VU => 0,
        privilege::S | privilege::VS => 1,
        p => p,
    }
}

/// Whether `c` is a standard or custom `mcause` code (privileged architecture, tables
/// "Machine cause register (mcause) values after trap", with the H extension's and Ssdbltrp's):
/// interrupts 1-3, 5-7, 9-13 and 16 up (platform use); exceptions 0-13, 15, 16, 18-31 (24-31
/// custom) and 48-63 (custom).
fn standard_cause(c: u64, interrupt: bool) -> bool {
    if interrupt {
        matches!(c, 1..=3 | 5..=7 | 9..=13) || c >= 16
    } else {
        matches!(c, 0..=13 | 15 | 16 | 18..=31 | 48..=63)
    }
}

/// Checks ingress records one by one ([`push`](Self::push)), in stream order.
pub struct IngressChecker<'a> {
    image: &'a Image,
    isa: IsaConfig,
    itype_width: u8,
    /// The last record that carries anything, its index and where it goes.
    prev: Option<(u64, Record, Next)>,
    /// An `ecall`/`ebreak` with itype 0: a violation unless it is the last record (the hart
    /// model's exit call, which never traps).
    held: Option<Violation>,
    records: u64,
    instructions: u64,
    outside: u64,
    violations: u64,
}

impl<'a> IngressChecker<'a> {
    /// A checker for records of the program in `image`, of a hart with `isa`, through a port
    /// with `itype_width` (`itype_width_p`, 3 or 4: the header's).
    pub fn new(image: &'a Image, isa: IsaConfig, itype_width: u8) -> Self {
        IngressChecker {
            image,
            isa,
            itype_width,
            prev: None,
            held: None,
            records: 0,
            instructions: 0,
            outside: 0,
            violations: 0,
        }
    }

    /// Records checked so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Instructions retired by the records checked so far (those the program could count).
    pub fn instructions(&self) -> u64 {
        self.instructions
    }

    /// Records not checked so far: their instructions are not in the program (code written
    /// at run time, or mapped at addresses the ELF does not give).
    pub fn outside(&self) -> u64 {
        self.outside
    }

    /// Violations found so far.
    pub fn violations(&self) -> u64 {
        self.violations
    }

    /// Checks the next record; gives each rule it breaks to `report`.
    pub fn push(&mut self, r: &Record, mut report: impl FnMut(Violation)) {
        let index = self.records;
        self.records += 1;
        if let Some(v) = self.held.take() {
            self.violations += 1;
            report(v);
        }
        if !r.retires() && r.itype == Itype::None {
            return;
        }
        let mut found = Vec::new();
        let next = self.rules(r, &mut found);
        for kind in found {
            let v = Violation {
                index,
                record: *r,
                kind,
            };
            if matches!(
                v.kind,
                Kind::Itype {
                    class: CfClass::EnvTrap,
                    ..
                }
            ) && r.itype == Itype::None
            {
                self.held = Some(v);
            } else {
                self.violations += 1;
                report(v);
            }
        }
        self.prev = Some((index, *r, next));
    }

    /// The end of the stream.
    pub fn finish(&mut self) {
        self.held = None;
    }

    /// The rules for record `r`; returns where it goes.
    fn rules(&mut self, r: &Record, found: &mut Vec<Kind>) -> Next {
        let async_context = r.ctype == 3;
        // The flow: where the record before goes.
        if let Some((pi, p, Some(expected))) = self.prev {
            if r.iaddr != expected && !async_context {
                found.push(Kind::Discontinuity {
                    prev: pi,
                    prev_record: p,
                    expected,
                });
            }
        }
        self.privilege_and_context(r, found);
        if r.iaddr & 1 != 0 {
            found.push(Kind::OddAddress);
            return None;
        }
        if !r.retires() {
            if !r.is_trap() {
                found.push(Kind::ItypeNothingRetired);
            } else {
                // The trap is at iaddr (the faulting instruction, or the interrupted one).
                self.trap_fields(r, Some(r.iaddr), found);
            }
            return None;
        }
        // The instructions of the block, all but the last plain ones.
        let bytes = 2 * r.iretire as u64;
        let mut off = 0u64;
        let mut n = 0u64;
        let last = loop {
            let pc = r.iaddr.wrapping_add(off);
            let Some(len) = insn_len_at(self.image, pc) else {
                // Code the program does not hold (generated at run time, mapped elsewhere):
                // not checked; the flow is checked again from the next record on.
                self.outside += 1;
                return None;
            };
            n += 1;
            if off + len >= bytes {
                if off + len > bytes {
                    found.push(Kind::Iretire { bytes: off + len });
                    return None;
                }
                if r.last_size_bytes() != Some(len as u32) {
                    found.push(Kind::Ilastsize { bytes: len });
                }
                break pc;
            }
            let class = self.class_at(pc);
            if class != CfClass::None {
                found.push(Kind::InBlock { pc, class });
            }
            off += len;
        };
        self.instructions += n;
        let bits = self.image.fetch(last).unwrap_or(0);
        let info = classify(&self.isa, bits);
        let class = info.class;
        let seq = last.wrapping_add(info.len as u64);
        let target = info.target_addr(last, self.isa.xlen);
        // itype against the last instruction.
        let mut allowed: Vec<Itype> = Vec::with_capacity(4);
        for taken in [false, true] {
            for t in [
                class.etrace_itype(taken, self.itype_width),
                class.ntrace_itype(taken, self.itype_width),
            ] {
                if !allowed.contains(&t) {
                    allowed.push(t);
                }
            }
        }
        let trap_after = r.is_trap() && class != CfClass::EnvTrap;
        if !allowed.contains(&r.itype) && !trap_after {
            found.push(Kind::Itype { class, allowed });
            return None;
        }
        if r.is_trap() {
            // The trap is raised by the ecall/ebreak retired, else by the instruction after
            // the last (known when that one is no control transfer).
            let at = match class {
                CfClass::EnvTrap => Some(last),
                CfClass::None => Some(seq),
                _ => None,
            };
            self.trap_fields(r, at, found);
            return None;
        }
        match r.itype {
            Itype::TakenBranch => target,
            Itype::NonTakenBranch => Some(seq),
            Itype::TrapReturn => None,
            _ if class.is_uninferable() || class == CfClass::TrapReturn => None,
            // cm.jt/cm.jalt: the target is in the jump table, not the program.
            _ if class.is_inferable() => target,
            _ => Some(seq),
        }
    }

    fn class_at(&self, pc: u64) -> CfClass {
        self.image
            .fetch(pc)
            .map_or(CfClass::None, |bits| classify(&self.isa, bits).class)
    }

    /// `cause` and `tval` of a trap record whose trap is raised by the instruction at `at`
    /// (`None`: not known).
    fn trap_fields(&self, r: &Record, at: Option<u64>, found: &mut Vec<Kind>) {
        let interrupt = r.itype == Itype::Interrupt;
        if !standard_cause(r.cause, interrupt) {
            found.push(Kind::Cause {
                why: if interrupt {
                    "cause is a reserved interrupt code"
                } else {
                    "cause is a reserved exception code"
                },
            });
            return;
        }
        if interrupt {
            return;
        }
        // The instruction's own bits (a compressed one without the half-word after it), named
        // by the one instruction decoder.
        let bits = at.and_then(|a| {
            let bits = self.image.fetch(a)?;
            Some(match insn_len_at(self.image, a)? {
                2 => bits & 0xffff,
                _ => bits,
            })
        });
        let op = bits.map(|b| decode(b, self.isa.xlen, &Extensions::ALL).op);
        let at = at.unwrap_or(0);
        let ecall_cause = CAUSE_ECALL_U + rank(r.priv_) as u64 + (r.priv_ == privilege::VS) as u64;
        match op {
            Some(Op::Ecall) => {
                if r.cause != ecall_cause {
                    found.push(Kind::Cause {
                        why: "an ecall raises the environment call of its privilege (8 U/VU, 9 S, 10 VS, 11 M)",
                    });
                } else if r.tval != 0 {
                    found.push(Kind::Tval {
                        why: "an ecall writes tval 0",
                    });
                }
            }
            Some(Op::Ebreak) => {
                if r.cause != CAUSE_BREAKPOINT {
                    found.push(Kind::Cause {
                        why: "an ebreak raises a breakpoint (3)",
                    });
                } else if r.tval != 0 && r.tval != at {
                    found.push(Kind::Tval {
                        why: "an ebreak writes tval 0 or its own address",
                    });
                }
            }
            _ if (CAUSE_ECALL_U..=CAUSE_ECALL_U + 3).contains(&r.cause) => {
                found.push(Kind::Cause {
                    why: "an environment call (8-11) but no ecall retired",
                });
            }
            _ if r.cause == CAUSE_ILLEGAL && r.tval != 0 => {
                // mtval: 0 or the faulting instruction's bits (privileged architecture,
                // "mtval"), when that instruction is known.
                if let Some(b) = bits {
                    if r.tval != b as u64 {
                        found.push(Kind::Tval {
                            why: "an illegal instruction writes tval 0 or the instruction's bits",
                        });
                    }
                }
            }
            _ => {}
        }
    }

    fn privilege_and_context(&self, r: &Record, found: &mut Vec<Kind>) {
        if privilege::name(r.priv_).is_none() {
            found.push(Kind::PrivilegeCode);
        }
        if r.ctype > 3 {
            found.push(Kind::Ctype);
        }
        let Some((_, p, _)) = &self.prev else {
            return;
        };
        let async_context = r.ctype == 3;
        if r.priv_ != p.priv_ && !async_context {
            let (up, down) = (
                rank(r.priv_) >= rank(p.priv_),
                rank(r.priv_) <= rank(p.priv_),
            );
            let why = match p.itype {
                Itype::Exception | Itype::Interrupt if up => None,
                Itype::TrapReturn if down => None,
                Itype::Exception | Itype::Interrupt => Some("a trap"),
                Itype::TrapReturn => Some("a trap return"),
                _ => Some("neither a trap nor a trap return"),
            };
            if let Some(why) = why {
                found.push(Kind::Privilege { from: p.priv_, why });
            }
        }
        if r.context != p.context && r.ctype == 0 {
            found.push(Kind::Context { from: p.context });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvtrace_ingress::privilege::M;

    /// `nop; beq x0, x0, +8; ecall; nop` at 0x1000.
    fn image() -> Image {
        let code: [u32; 4] = [0x0000_0013, 0x0000_0463, 0x0000_0073, 0x0000_0013];
        let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
        let elf = rvtrace_testkit::minimal_elf(true, 0x1000, &bytes);
        let mut im = Image::new();
        im.load_bytes("t", &elf).unwrap();
        im
    }

    fn one(iaddr: u64, itype: Itype) -> Record {
        Record {
            iaddr,
            iretire: 2,
            ilastsize: 1,
            itype,
            priv_: M,
            ..Record::default()
        }
    }

    /// At 0x1000: `ebreak; c.ebreak; c.nop; csrrw x0, cycle, x0` (illegal: `cycle` is
    /// read-only); `0x0004` (a reserved `c.addi4spn`, nzuimm 0); `c.nop; mret`.
    fn traps_image() -> Image {
        let bytes: Vec<u8> = [
            &0x0010_0073u32.to_le_bytes()[..],
            &0x9002u16.to_le_bytes(),
            &0x0001u16.to_le_bytes(),
            &0xc000_1073u32.to_le_bytes(),
            &0x0004u16.to_le_bytes(),
            &0x0001u16.to_le_bytes(),
            &0x3020_0073u32.to_le_bytes(),
        ]
        .concat();
        let elf = rvtrace_testkit::minimal_elf(true, 0x1000, &bytes);
        let mut im = Image::new();
        im.load_bytes("t", &elf).unwrap();
        im
    }

    /// The violations of `recs`, as (index, kind).
    fn check(recs: &[Record]) -> Vec<(u64, Kind)> {
        check_in(&image(), recs)
    }

    fn check_in(im: &Image, recs: &[Record]) -> Vec<(u64, Kind)> {
        let mut c = IngressChecker::new(im, IsaConfig::rv64(), 4);
        let mut out = Vec::new();
        for r in recs {
            c.push(r, |v| out.push((v.index, v.kind)));
        }
        c.finish();
        assert_eq!(c.violations(), out.len() as u64);
        out
    }

    #[test]
    fn clean_records_pass() {
        let ecall = Record {
            itype: Itype::Exception,
            cause: 11,
            ..one(0x1008, Itype::None)
        };
        // A taken branch to 0x100c, then back to the ecall (after a trap: anywhere), the
        // exit ecall with itype 0 last (the hart model's exit call).
        let recs = [
            one(0x1000, Itype::None),
            one(0x1004, Itype::TakenBranch),
            one(0x100c, Itype::None),
            Record {
                iretire: 0,
                itype: Itype::Exception,
                cause: 2,
                ..one(0x1010, Itype::None)
            },
            ecall,
            one(0x1000, Itype::None),
            one(0x1004, Itype::NonTakenBranch),
            one(0x1008, Itype::None),
        ];
        assert_eq!(check(&recs), []);
    }

    /// Each rule the CLI tests do not damage a real run for.
    #[test]
    fn each_rule() {
        let odd = Record {
            iaddr: 0x1001,
            ..one(0x1000, Itype::None)
        };
        assert_eq!(check(&[odd]), [(0, Kind::OddAddress)]);
        // beq inside a block that ends with the ecall.
        let block = Record {
            iretire: 4,
            itype: Itype::Exception,
            cause: 11,
            ..one(0x1004, Itype::None)
        };
        assert_eq!(
            check(&[block]),
            [(
                0,
                Kind::InBlock {
                    pc: 0x1004,
                    class: CfClass::Branch
                }
            )]
        );
        let nothing = Record {
            iretire: 0,
            ..one(0x1000, Itype::TakenBranch)
        };
        assert_eq!(check(&[nothing]), [(0, Kind::ItypeNothingRetired)]);
        let tval = Record {
            itype: Itype::Exception,
            cause: 11,
            tval: 5,
            ..one(0x1008, Itype::None)
        };
        assert_eq!(
            check(&[tval]),
            [(
                0,
                Kind::Tval {
                    why: "an ecall writes tval 0"
                }
            )]
        );
        let code = Record {
            priv_: 2,
            ..one(0x1000, Itype::None)
        };
        assert_eq!(check(&[code]), [(0, Kind::PrivilegeCode)]);
        let ctype = Record {
            ctype: 4,
            ..one(0x1000, Itype::None)
        };
        assert_eq!(check(&[ctype]), [(0, Kind::Ctype)]);
        // An ecall with itype 0 that is not the last record.
        let recs = [one(0x1008, Itype::None), one(0x100c, Itype::None)];
        let got = check(&recs);
        assert_eq!(got.len(), 1);
        assert!(matches!(
            got[0],
            (
                0,
                Kind::Itype {
                    class: CfClass::EnvTrap,
                    ..
                }
            )
        ));
        // An interrupt with a reserved code.
        let irq = Record {
            itype: Itype::Interrupt,
            cause: 4,
            ..one(0x1000, Itype::None)
        };
        assert_eq!(
            check(&[irq]),
            [(
                0,
                Kind::Cause {
                    why: "cause is a reserved interrupt code"
                }
            )]
        );
    }

    /// The privilege goes up only at a trap and down only at a trap return (or with an
    /// asynchronous context change, `ctype` 3, which also excuses the jump).
    #[test]
    fn privilege_changes() {
        use rvtrace_ingress::privilege::U;
        let irq = Record {
            itype: Itype::Interrupt,
            cause: 7,
            ..one(0x1000, Itype::None)
        };
        let user = |r: Record| Record { priv_: U, ..r };
        // Down after a trap.
        assert_eq!(
            check(&[irq, user(one(0x1000, Itype::None))]),
            [(
                1,
                Kind::Privilege {
                    from: M,
                    why: "a trap"
                }
            )]
        );
        // Up after a trap (from U): allowed.
        assert_eq!(check(&[user(irq), one(0x1000, Itype::None)]), []);
        // Down with no trap between.
        assert_eq!(
            check(&[
                one(0x1000, Itype::None),
                user(one(0x1004, Itype::NonTakenBranch))
            ]),
            [(
                1,
                Kind::Privilege {
                    from: M,
                    why: "neither a trap nor a trap return"
                }
            )]
        );
        // Up after a trap return (the mret at 0x1010 of the second image), then down: allowed.
        let im = traps_image();
        let cnop = Record {
            iretire: 1,
            ilastsize: 0,
            ..one(0x100e, Itype::None)
        };
        let mret = user(one(0x1010, Itype::TrapReturn));
        assert_eq!(
            check_in(&im, &[mret, cnop]),
            [(
                1,
                Kind::Privilege {
                    from: U,
                    why: "a trap return"
                }
            )]
        );
        let mret = one(0x1010, Itype::TrapReturn);
        assert_eq!(check_in(&im, &[mret, user(cnop)]), []);
        // An asynchronous context change: another privilege, another place, a new context.
        let switch = Record {
            ctype: 3,
            context: 5,
            ..user(one(0x100c, Itype::None))
        };
        assert_eq!(check(&[one(0x1000, Itype::None), switch]), []);
        // The same context value without ctype: unreported.
        let silent = Record { ctype: 0, ..switch };
        assert_eq!(
            check(&[one(0x1000, Itype::None), silent]),
            [
                (
                    1,
                    Kind::Discontinuity {
                        prev: 0,
                        prev_record: one(0x1000, Itype::None),
                        expected: 0x1004
                    }
                ),
                (
                    1,
                    Kind::Privilege {
                        from: M,
                        why: "neither a trap nor a trap return"
                    }
                ),
                (1, Kind::Context { from: 0 })
            ]
        );
    }

    /// `cause` and `tval` of breakpoints and illegal instructions, 16- and 32-bit, each read
    /// with its own length (a `c.ebreak` followed by code is a breakpoint; a compressed
    /// illegal instruction's `tval` is its 16 bits).
    #[test]
    fn breakpoint_and_illegal_fields() {
        let im = traps_image();
        let trap = |iaddr: u64, iretire: u32, cause: u64, tval: u64| Record {
            iaddr,
            iretire,
            ilastsize: if iretire == 1 { 0 } else { 1 },
            itype: Itype::Exception,
            cause,
            tval,
            priv_: M,
            ..Record::default()
        };
        let bad_tval = |why| Kind::Tval { why };
        let ebreak_tval = "an ebreak writes tval 0 or its own address";
        let illegal_tval = "an illegal instruction writes tval 0 or the instruction's bits";
        for (r, want) in [
            (trap(0x1000, 2, 3, 0x1000), None),
            (trap(0x1000, 2, 3, 0), None),
            (trap(0x1000, 2, 3, 0x1004), Some(bad_tval(ebreak_tval))),
            (trap(0x1004, 1, 3, 0x1004), None),
            (
                trap(0x1004, 1, 2, 0),
                Some(Kind::Cause {
                    why: "an ebreak raises a breakpoint (3)",
                }),
            ),
            // Faults: nothing retired, iaddr the faulting instruction.
            (trap(0x1008, 0, 2, 0xc000_1073), None),
            (trap(0x1008, 0, 2, 0), None),
            (trap(0x1008, 0, 2, 0x1073), Some(bad_tval(illegal_tval))),
            (trap(0x100c, 0, 2, 0x0004), None),
            (trap(0x100c, 0, 2, 0x1_0004), Some(bad_tval(illegal_tval))),
        ] {
            let got = check_in(&im, &[r]);
            assert_eq!(
                got,
                want.into_iter().map(|k| (0, k)).collect::<Vec<_>>(),
                "{r}"
            );
        }
    }
}
