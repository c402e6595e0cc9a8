//! Instruction execution (unprivileged ISA: RV32I/RV64I, M, A, Zba, Zbb, Zbs, Zbc, Zicsr, Zifencei;
//! privileged ISA: `mret`, `sret`, `wfi`, `sfence.vma`). F and D live in `exec_fp.rs`.
//!
//! Generic over `RV64` so the RV32 and RV64 loops each compile to straight-line code. RV32 register
//! values are kept sign-extended to 64 bits, so most operations compute in 64 bits and the register
//! write narrows.

use super::Hart;
use crate::alu::{self, AmoOp};
use crate::arch::{cause, privilege, Exc, Stop};
use crate::csr::{irq, mstatus};
use crate::decode::{Insn, Op};
use crate::observer::{MemAccess, MemKind, Observer};
use crate::pmp::Access;

/// The three instructions that mark a semihosting call (RISC-V semihosting spec):
/// `slli x0, x0, 0x1f`, `ebreak`, `srai x0, x0, 7`.
const SEMIHOST_PRE: u32 = 0x01f0_1013;
const SEMIHOST_EBREAK: u32 = 0x0010_0073;
const SEMIHOST_POST: u32 = 0x4070_5013;

impl Hart {
    #[inline(always)]
    pub(crate) fn wx<O: Observer, const RV64: bool>(&mut self, obs: &mut O, rd: u8, v: u64) {
        if rd != 0 {
            let v = if RV64 { v } else { v as i32 as i64 as u64 };
            // Register numbers are 5 bits: the mask makes the bounds check go away.
            self.x[(rd & 31) as usize] = v;
            obs.gpr_write(rd, v);
        }
    }

    /// Effective address `x[base] + imm`, XLEN-wrapped.
    #[inline(always)]
    pub(crate) fn addr<const RV64: bool>(&self, base: u8, imm: i32) -> u64 {
        let a = self.x[base as usize].wrapping_add(imm as i64 as u64);
        if RV64 {
            a
        } else {
            a & 0xffff_ffff
        }
    }

    #[inline(always)]
    pub(crate) fn mem_load<O: Observer>(
        &mut self,
        obs: &mut O,
        addr: u64,
        size: u64,
    ) -> Result<u64, Exc> {
        let v = match self.bus.fast_load(addr, size, self.bus.open.load) {
            Some(v) => v,
            None => {
                self.data_trigger(addr, size, crate::trigger::field::LOAD)?;
                self.load_checked(addr, size)?
            }
        };
        Self::loaded(obs, addr, size, v);
        Ok(v)
    }

    /// The observer's event for a load of `v`.
    #[inline(always)]
    pub(crate) fn loaded<O: Observer>(obs: &mut O, addr: u64, size: u64, v: u64) {
        obs.mem_access(&MemAccess {
            addr,
            size: size as u8,
            value: v,
            kind: MemKind::Load,
        });
    }

    #[inline(always)]
    pub(crate) fn mem_store<O: Observer>(
        &mut self,
        obs: &mut O,
        addr: u64,
        size: u64,
        v: u64,
    ) -> Result<(), Exc> {
        if !self.bus.fast_store(addr, size, v, self.bus.open.store) {
            self.data_trigger(addr, size, crate::trigger::field::STORE)?;
            self.store_checked(addr, size, v)?;
        }
        self.after_store();
        Self::stored(obs, addr, size, v);
        Ok(())
    }

    /// After a store: a device or a write to code asks for a re-check (true if so).
    #[inline(always)]
    pub(crate) fn after_store(&mut self) -> bool {
        let again = self.bus.exit.is_some() || self.bus.irq_dirty;
        if again {
            self.recheck();
        }
        again
    }

    /// The observer's event for a store of `v`.
    #[inline(always)]
    pub(crate) fn stored<O: Observer>(obs: &mut O, addr: u64, size: u64, v: u64) {
        obs.mem_access(&MemAccess {
            addr,
            size: size as u8,
            value: if size == 8 {
                v
            } else {
                v & ((1 << (8 * size)) - 1)
            },
            kind: MemKind::Store,
        });
    }

    /// A load outside the PMP fast path: translated when data accesses are (`mmu.rs`; a load
    /// that crosses into a page mapped elsewhere is done byte by byte), the PMP check at the
    /// effective privilege, then the bus (RAM or a device). The observer and the reservation
    /// keep the virtual address.
    #[cold]
    #[inline(never)]
    fn load_checked(&mut self, addr: u64, size: u64) -> Result<u64, Exc> {
        if let Some(pa) = self.mmu.recent(addr, size, 1) {
            if let Some(v) = self.bus.fast_load(pa, size, self.bus.ram_size()) {
                return Ok(v);
            }
        }
        let pieces = self.data_pieces(addr, size, Access::Read)?;
        let mtime = self.mtime();
        let fault = Exc {
            cause: cause::LOAD_ACCESS,
            tval: addr,
        };
        if let [(_, pa, n), (_, _, 0)] = pieces {
            return self.bus.load(pa, n, mtime).ok_or(fault);
        }
        let mut v = 0;
        let bytes = pieces
            .iter()
            .flat_map(|&(_, pa, n)| (0..n).map(move |k| pa + k));
        for (k, pa) in bytes.enumerate() {
            v |= self.bus.load(pa, 1, mtime).ok_or(fault)? << (8 * k);
        }
        Ok(v)
    }

    /// A store outside the PMP fast path (see [`Hart::load_checked`]).
    #[cold]
    #[inline(never)]
    fn store_checked(&mut self, addr: u64, size: u64, v: u64) -> Result<(), Exc> {
        if let Some(pa) = self.mmu.recent(addr, size, 2) {
            if self.bus.fast_store(pa, size, v, self.bus.ram_size()) {
                return Ok(());
            }
        }
        let pieces = self.data_pieces(addr, size, Access::Write)?;
        let mtime = self.mtime();
        let done = match pieces {
            [(_, pa, n), (_, _, 0)] => self.bus.store(pa, n, v, mtime).is_some(),
            _ => {
                let bytes = pieces
                    .iter()
                    .flat_map(|&(_, pa, n)| (0..n).map(move |k| pa + k));
                let mut ok = true;
                for (k, pa) in bytes.enumerate() {
                    ok &= self.bus.store(pa, 1, v >> (8 * k), mtime).is_some();
                }
                ok
            }
        };
        done.then_some(()).ok_or(Exc {
            cause: cause::STORE_ACCESS,
            tval: addr,
        })
    }

    /// The physical pieces `(va, pa, len)` of a data access, each PMP-checked at the effective
    /// privilege: the access itself when data accesses are not translated, else its
    /// translation (one piece, or two for an access that crosses a page; `len` 0 = no second
    /// piece). A fault's `tval` is the virtual address of the piece that faulted.
    fn data_pieces(
        &mut self,
        va: u64,
        size: u64,
        access: Access,
    ) -> Result<[(u64, u64, u64); 2], Exc> {
        let pieces = if self.translating().1 {
            self.translate_data(va, size, access)?
        } else {
            [(va, va, size), (0, 0, 0)]
        };
        let p = self.data_priv();
        for &(va, pa, n) in &pieces {
            if n != 0 && !self.csr.pmp.check(pa, n, access, p) {
                return Err(Exc {
                    cause: if access == Access::Read {
                        cause::LOAD_ACCESS
                    } else {
                        cause::STORE_ACCESS
                    },
                    tval: va,
                });
            }
        }
        Ok(pieces)
    }

    /// The read of an AMO or SC (aligned; the write follows through [`Hart::mem_store`]). As
    /// QEMU 7.2 (probed with programs/src/pmp.c): without PMP read permission it is a *load*
    /// access fault (the spec says store/AMO access fault for AMOs), with read but not write
    /// a store/AMO access fault; nothing at the address is a store/AMO access fault. Translated
    /// (programs/src/vm.c), QEMU 7.2 likewise translates for reading first: a page that cannot
    /// be read (or a PTE that PMP denies) is a load fault (13, 5), one that can be read but
    /// not written a store/AMO page fault (15).
    #[inline(always)]
    fn amo_read(&mut self, a: u64, size: u64) -> Result<u64, Exc> {
        let open = self.bus.open.load.min(self.bus.open.store);
        if let Some(v) = self.bus.fast_load(a, size, open) {
            return Ok(v);
        }
        // The read-modify-write matches load and store triggers (QEMU 7.2 checks it as both).
        use crate::trigger::field::{LOAD, STORE};
        self.data_trigger(a, size, LOAD | STORE)?;
        self.amo_read_checked(a, size)
    }

    #[cold]
    #[inline(never)]
    fn amo_read_checked(&mut self, va: u64, size: u64) -> Result<u64, Exc> {
        let a = if self.translating().1 {
            self.translate_data(va, size, Access::Read)?;
            self.translate_data(va, size, Access::Write)?[0].1
        } else {
            va
        };
        let p = self.data_priv();
        let fault = |cause| Err(Exc { cause, tval: va });
        if !self.csr.pmp.check(a, size, Access::Read, p) {
            return fault(cause::LOAD_ACCESS);
        }
        if !self.csr.pmp.check(a, size, Access::Write, p) {
            return fault(cause::STORE_ACCESS);
        }
        let mtime = self.mtime();
        match self.bus.load(a, size, mtime) {
            Some(v) => Ok(v),
            None => fault(cause::STORE_ACCESS),
        }
    }

    /// The target of a jump or taken branch, XLEN-wrapped. Without C, a target that is not
    /// 4-byte aligned raises instruction-address-misaligned at the jump, which does not retire
    /// (unprivileged ISA, "Control Transfer Instructions"); with C every target is aligned.
    #[inline(always)]
    pub(crate) fn jump_target<const RV64: bool>(&self, t: u64) -> Result<u64, Exc> {
        let t = if RV64 { t } else { t & 0xffff_ffff };
        if !self.ext.c && t & 2 != 0 {
            return Err(Exc {
                cause: cause::INSN_MISALIGNED,
                tval: t,
            });
        }
        Ok(t)
    }

    /// Execute one instruction at `pc`; returns the next pc or the exception it raised.
    #[inline(always)]
    pub(crate) fn execute<O: Observer, const RV64: bool>(
        &mut self,
        obs: &mut O,
        i: &Insn,
        bits: u32,
        pc: u64,
    ) -> Result<u64, Exc> {
        let rs1 = self.x[(i.rs1 & 31) as usize];
        let rs2 = self.x[(i.rs2 & 31) as usize];
        let imm = i.imm as i64 as u64;
        let next = pc.wrapping_add(i.len as u64);
        let next = if RV64 { next } else { next & 0xffff_ffff };
        let sh_mask: u64 = if RV64 { 63 } else { 31 };
        macro_rules! w {
            ($v:expr) => {{
                let v = $v;
                self.wx::<O, RV64>(obs, i.rd, v);
            }};
        }
        macro_rules! target {
            ($t:expr) => {{
                self.jump_target::<RV64>($t)?
            }};
        }
        macro_rules! branch {
            ($cond:expr) => {{
                if $cond {
                    return Ok(target!(pc.wrapping_add(imm)));
                }
            }};
        }
        // 32-bit views for RV32 semantics and RV64 *W operations.
        let (a32, b32) = (rs1 as u32, rs2 as u32);
        use Op::*;
        match i.op {
            Illegal => return Err(Exc::illegal(bits)),
            Lui => w!(imm),
            Auipc => w!(pc.wrapping_add(imm)),
            Jal => {
                let t = target!(pc.wrapping_add(imm));
                w!(next);
                return Ok(t);
            }
            Jalr => {
                let t = target!(rs1.wrapping_add(imm) & !1);
                w!(next);
                return Ok(t);
            }
            Beq => branch!(rs1 == rs2),
            Bne => branch!(rs1 != rs2),
            Blt => branch!((rs1 as i64) < (rs2 as i64)),
            Bge => branch!((rs1 as i64) >= (rs2 as i64)),
            // Sign-extended RV32 values keep their unsigned order.
            Bltu => branch!(rs1 < rs2),
            Bgeu => branch!(rs1 >= rs2),
            Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu => {
                let a = self.addr::<RV64>(i.rs1, i.imm);
                let size = match i.op {
                    Lb | Lbu => 1,
                    Lh | Lhu => 2,
                    Lw | Lwu => 4,
                    _ => 8,
                };
                let v = self.mem_load(obs, a, size)?;
                w!(match i.op {
                    Lb => v as i8 as i64 as u64,
                    Lh => v as i16 as i64 as u64,
                    Lw => v as i32 as i64 as u64,
                    _ => v,
                });
            }
            Sb | Sh | Sw | Sd => {
                let a = self.addr::<RV64>(i.rs1, i.imm);
                let size = match i.op {
                    Sb => 1,
                    Sh => 2,
                    Sw => 4,
                    _ => 8,
                };
                self.mem_store(obs, a, size, rs2)?;
            }
            Addi => w!(alu::add(rs1, imm)),
            Slti => w!(alu::slt(rs1, imm)),
            Sltiu => w!(alu::sltu(rs1, imm)),
            Xori => w!(rs1 ^ imm),
            Ori => w!(rs1 | imm),
            Andi => w!(rs1 & imm),
            Slli => w!(alu::sll::<RV64>(rs1, imm)),
            Srli => w!(alu::srl::<RV64>(rs1, imm)),
            Srai => w!(alu::sra::<RV64>(rs1, imm)),
            Add => w!(alu::add(rs1, rs2)),
            Sub => w!(alu::sub(rs1, rs2)),
            Sll => w!(alu::sll::<RV64>(rs1, rs2)),
            Slt => w!(alu::slt(rs1, rs2)),
            Sltu => w!(alu::sltu(rs1, rs2)),
            Xor => w!(rs1 ^ rs2),
            Srl => w!(alu::srl::<RV64>(rs1, rs2)),
            Sra => w!(alu::sra::<RV64>(rs1, rs2)),
            Or => w!(rs1 | rs2),
            And => w!(rs1 & rs2),
            Addiw => w!(alu::addw(rs1, imm)),
            Slliw => w!(alu::sllw(rs1, imm)),
            Srliw => w!(alu::srlw(rs1, imm)),
            Sraiw => w!(alu::sraw(rs1, imm)),
            Addw => w!(alu::addw(rs1, rs2)),
            Subw => w!(alu::subw(rs1, rs2)),
            Sllw => w!(alu::sllw(rs1, rs2)),
            Srlw => w!(alu::srlw(rs1, rs2)),
            Sraw => w!(alu::sraw(rs1, rs2)),
            Fence => {}
            FenceI => {}
            Mul => w!(alu::mul(rs1, rs2)),
            Mulh => w!(if RV64 {
                ((rs1 as i64 as i128 * rs2 as i64 as i128) >> 64) as u64
            } else {
                ((a32 as i32 as i64 * b32 as i32 as i64) >> 32) as u64
            }),
            Mulhsu => w!(if RV64 {
                ((rs1 as i64 as i128 * rs2 as u128 as i128) >> 64) as u64
            } else {
                ((a32 as i32 as i64 * b32 as i64) >> 32) as u64
            }),
            Mulhu => w!(if RV64 {
                ((rs1 as u128 * rs2 as u128) >> 64) as u64
            } else {
                ((a32 as u64 * b32 as u64) >> 32) as i32 as i64 as u64
            }),
            Div => w!(if RV64 {
                div_s64(rs1 as i64, rs2 as i64) as u64
            } else {
                div_s32(a32 as i32, b32 as i32) as i64 as u64
            }),
            Divu => w!(if RV64 {
                rs1.checked_div(rs2).unwrap_or(u64::MAX)
            } else {
                a32.checked_div(b32).unwrap_or(u32::MAX) as u64
            }),
            Rem => w!(if RV64 {
                rem_s64(rs1 as i64, rs2 as i64) as u64
            } else {
                rem_s32(a32 as i32, b32 as i32) as i64 as u64
            }),
            Remu => w!(if RV64 {
                if rs2 == 0 {
                    rs1
                } else {
                    rs1 % rs2
                }
            } else if b32 == 0 {
                a32 as u64
            } else {
                (a32 % b32) as u64
            }),
            Mulw => w!(alu::mulw(rs1, rs2)),
            Divw => w!(div_s32(a32 as i32, b32 as i32) as i64 as u64),
            Divuw => w!(a32.checked_div(b32).unwrap_or(u32::MAX) as i32 as i64 as u64),
            Remw => w!(rem_s32(a32 as i32, b32 as i32) as i64 as u64),
            Remuw => w!((if b32 == 0 { a32 } else { a32 % b32 }) as i32 as i64 as u64),
            LrW | LrD => {
                let size = if i.op == LrW { 4 } else { 8 };
                let a = self.addr::<RV64>(i.rs1, 0);
                if a & (size - 1) != 0 {
                    // Sdtrig "Priority": a load/store address breakpoint comes first.
                    self.data_trigger(a, size, crate::trigger::field::LOAD)?;
                    return Err(Exc {
                        cause: cause::LOAD_MISALIGNED,
                        tval: a,
                    });
                }
                let v = self.mem_load(obs, a, size)?;
                self.reservation = Some((a, v));
                if self.bus.harts.count() > 1 {
                    self.reserve(a);
                }
                w!(if size == 4 { v as i32 as i64 as u64 } else { v });
            }
            ScW | ScD => {
                let size = if i.op == ScW { 4 } else { 8 };
                let a = self.addr::<RV64>(i.rs1, 0);
                // QEMU 7.2: SC succeeds if the reservation address matches and memory still holds
                // the value LR loaded; the reservation is cleared either way.
                let res = self.reservation.take();
                // Given up either way too, whether the SC succeeds or not.
                let held = self.reservation_held(a);
                let ok = match res {
                    Some((ra, rv)) if ra == a => {
                        // As for AMOs, QEMU 7.2's atomic compare-and-swap reports cause 4.
                        if a & (size - 1) != 0 {
                            self.data_trigger(a, size, crate::trigger::field::STORE)?;
                            return Err(Exc {
                                cause: cause::LOAD_MISALIGNED,
                                tval: a,
                            });
                        }
                        if self.amo_read(a, size)? == rv && held {
                            self.mem_store(obs, a, size, rs2)?;
                            true
                        } else {
                            false
                        }
                    }
                    _ => false,
                };
                w!(if ok { 0 } else { 1 });
            }
            AmoSwapW | AmoAddW | AmoXorW | AmoAndW | AmoOrW | AmoMinW | AmoMaxW | AmoMinuW
            | AmoMaxuW | AmoSwapD | AmoAddD | AmoXorD | AmoAndD | AmoOrD | AmoMinD | AmoMaxD
            | AmoMinuD | AmoMaxuD => {
                let word = matches!(
                    i.op,
                    AmoSwapW
                        | AmoAddW
                        | AmoXorW
                        | AmoAndW
                        | AmoOrW
                        | AmoMinW
                        | AmoMaxW
                        | AmoMinuW
                        | AmoMaxuW
                );
                let size = if word { 4 } else { 8 };
                let a = self.addr::<RV64>(i.rs1, 0);
                // QEMU 7.2 reports a misaligned AMO as a *load* address misaligned exception
                // (cause 4; the ISA manual says store/AMO, 6). Matching QEMU keeps PC lists equal.
                if a & (size - 1) != 0 {
                    use crate::trigger::field::{LOAD, STORE};
                    self.data_trigger(a, size, LOAD | STORE)?;
                    return Err(Exc {
                        cause: cause::LOAD_MISALIGNED,
                        tval: a,
                    });
                }
                let old = self.amo_read(a, size)?;
                obs.mem_access(&MemAccess {
                    addr: a,
                    size: size as u8,
                    value: old,
                    kind: MemKind::Load,
                });
                let op = match i.op {
                    AmoSwapW | AmoSwapD => AmoOp::Swap,
                    AmoAddW | AmoAddD => AmoOp::Add,
                    AmoXorW | AmoXorD => AmoOp::Xor,
                    AmoAndW | AmoAndD => AmoOp::And,
                    AmoOrW | AmoOrD => AmoOp::Or,
                    AmoMinW | AmoMinD => AmoOp::Min,
                    AmoMaxW | AmoMaxD => AmoOp::Max,
                    AmoMinuW | AmoMinuD => AmoOp::Minu,
                    _ => AmoOp::Maxu,
                };
                let new = op.apply(old, rs2, size as u8);
                self.mem_store(obs, a, size, new)?;
                // rd gets the old value, sign-extended from a word.
                w!(if word { old as i32 as i64 as u64 } else { old });
            }
            Ecall => {
                return Err(Exc {
                    cause: match self.priv_ {
                        privilege::U => cause::ECALL_U,
                        privilege::S => cause::ECALL_S,
                        _ => cause::ECALL_M,
                    },
                    tval: 0,
                })
            }
            // A semihosting `ebreak` is serviced by the semihosting extension (`semihost.rs`)
            // when the hart offers it the exception.
            Ebreak => {
                return Err(Exc {
                    cause: cause::BREAKPOINT,
                    tval: 0,
                });
            }
            Mret => {
                if self.priv_ != privilege::M {
                    return Err(Exc::illegal(bits));
                }
                let (n, new_priv) = mstatus::after_mret(self.csr.mstatus, self.ext.u);
                let t = target!(self.csr.mepc);
                self.csr.mstatus = n;
                self.priv_ = new_priv;
                self.pmp_refresh();
                // The mret itself retires in M.
                self.counters.set_mode(new_priv, self.instret + 1);
                obs.trap_return(n, new_priv);
                self.recheck();
                return Ok(t);
            }
            Sret => {
                if self.priv_ < privilege::S
                    || (self.priv_ == privilege::S && self.csr.mstatus & mstatus::TSR != 0)
                {
                    return Err(Exc::illegal(bits));
                }
                let (n, spp) = mstatus::after_sret(self.csr.mstatus);
                let t = target!(self.csr.sepc);
                self.csr.mstatus = n;
                self.priv_ = spp;
                self.pmp_refresh();
                self.counters.set_mode(spp, self.instret + 1);
                obs.trap_return(n, spp);
                self.recheck();
                return Ok(t);
            }
            Wfi => {
                // QEMU 7.2 helper_wfi: illegal in U-mode (S implemented), and in S-mode with TW=1.
                let tw = self.csr.mstatus & mstatus::TW != 0;
                if self.priv_ == privilege::U || (self.priv_ == privilege::S && tw) {
                    return Err(Exc::illegal(bits));
                }
                self.wait_for_interrupt();
            }
            SfenceVma => {
                if self.priv_ == privilege::U
                    || (self.priv_ == privilege::S && self.csr.mstatus & mstatus::TVM != 0)
                {
                    return Err(Exc::illegal(bits));
                }
                // rs1/rs2 = x0 (the register, not its value) mean every address/every ASID.
                self.sfence_vma((i.rs1 != 0).then_some(rs1), (i.rs2 != 0).then_some(rs2));
            }
            Csrrw | Csrrs | Csrrc | Csrrwi | Csrrsi | Csrrci => {
                self.csr_insn::<O, RV64>(obs, i, bits)?;
            }
            Sh1add => w!((rs1 << 1).wrapping_add(rs2)),
            Sh2add => w!((rs1 << 2).wrapping_add(rs2)),
            Sh3add => w!((rs1 << 3).wrapping_add(rs2)),
            AddUw => w!((a32 as u64).wrapping_add(rs2)),
            Sh1addUw => w!(((a32 as u64) << 1).wrapping_add(rs2)),
            Sh2addUw => w!(((a32 as u64) << 2).wrapping_add(rs2)),
            Sh3addUw => w!(((a32 as u64) << 3).wrapping_add(rs2)),
            SlliUw => w!((a32 as u64) << i.imm),
            Andn => w!(rs1 & !rs2),
            Orn => w!(rs1 | !rs2),
            Xnor => w!(!(rs1 ^ rs2)),
            Clz => w!(if RV64 {
                rs1.leading_zeros()
            } else {
                a32.leading_zeros()
            } as u64),
            Ctz => w!(if RV64 {
                rs1.trailing_zeros()
            } else {
                a32.trailing_zeros()
            } as u64),
            Cpop => w!(if RV64 {
                rs1.count_ones()
            } else {
                a32.count_ones()
            } as u64),
            Clzw => w!(a32.leading_zeros() as u64),
            Ctzw => w!(a32.trailing_zeros() as u64),
            Cpopw => w!(a32.count_ones() as u64),
            Max => w!((rs1 as i64).max(rs2 as i64) as u64),
            Maxu => w!(rs1.max(rs2)),
            Min => w!((rs1 as i64).min(rs2 as i64) as u64),
            Minu => w!(rs1.min(rs2)),
            SextB => w!(rs1 as i8 as i64 as u64),
            SextH => w!(rs1 as i16 as i64 as u64),
            ZextH => w!(rs1 & 0xffff),
            Rol => w!(if RV64 {
                rs1.rotate_left((rs2 & 63) as u32)
            } else {
                a32.rotate_left(b32 & 31) as u64
            }),
            Ror => w!(if RV64 {
                rs1.rotate_right((rs2 & 63) as u32)
            } else {
                a32.rotate_right(b32 & 31) as u64
            }),
            Rori => w!(if RV64 {
                rs1.rotate_right(i.imm as u32)
            } else {
                a32.rotate_right(i.imm as u32) as u64
            }),
            Rolw => w!(a32.rotate_left(b32 & 31) as i32 as i64 as u64),
            Rorw => w!(a32.rotate_right(b32 & 31) as i32 as i64 as u64),
            Roriw => w!(a32.rotate_right(i.imm as u32) as i32 as i64 as u64),
            OrcB => {
                let mut v = 0u64;
                for k in 0..8 {
                    if (rs1 >> (8 * k)) & 0xff != 0 {
                        v |= 0xff << (8 * k);
                    }
                }
                w!(v)
            }
            Rev8 => w!(if RV64 {
                rs1.swap_bytes()
            } else {
                a32.swap_bytes() as u64
            }),
            // Bit-manipulation 1.0.0, Zbs: the bit index is rs2 (or shamt) mod XLEN.
            Bclr => w!(rs1 & !(1u64 << (rs2 & sh_mask))),
            Bclri => w!(rs1 & !(1u64 << i.imm)),
            Bext => w!((rs1 >> (rs2 & sh_mask)) & 1),
            Bexti => w!((rs1 >> i.imm) & 1),
            Binv => w!(rs1 ^ (1u64 << (rs2 & sh_mask))),
            Binvi => w!(rs1 ^ (1u64 << i.imm)),
            Bset => w!(rs1 | (1u64 << (rs2 & sh_mask))),
            Bseti => w!(rs1 | (1u64 << i.imm)),
            // Zbc.
            Clmul => w!(crate::clmul::clmul(0, rs1, rs2, RV64)),
            Clmulh => w!(crate::clmul::clmul(1, rs1, rs2, RV64)),
            Clmulr => w!(crate::clmul::clmul(2, rs1, rs2, RV64)),
            _ => return self.execute_fp::<O, RV64>(obs, i, bits, pc),
        }
        Ok(next)
    }

    /// Whether the `ebreak` at `pc` is a semihosting call by its surroundings (RISC-V
    /// semihosting spec), as the hart decides it when semihosting is on. QEMU 7.2 trans_ebreak:
    /// semihosting is disabled in U-mode; the three instructions must be uncompressed and lie in
    /// one 4 KiB page. Public for consumers that follow a hart (the tandem checker).
    pub fn semihosting_sequence_at(&self, pc: u64) -> bool {
        if self.priv_ == privilege::U {
            return false;
        }
        let (pre, post) = (pc.wrapping_sub(4), pc.wrapping_add(4));
        // One page: its physical address serves the three (fetches may be translated).
        let Some(pa) = self.peek_fetch_address(pc) else {
            return false;
        };
        let (pre_pa, post_pa) = (pa.wrapping_sub(4), pa.wrapping_add(4));
        pre & !0xfff == post & !0xfff
            && self.bus.fetch(pre_pa) == Some(SEMIHOST_PRE)
            && self.bus.fetch(pa) == Some(SEMIHOST_EBREAK)
            && self.bus.fetch(post_pa) == Some(SEMIHOST_POST)
    }

    /// `wfi`: the model has nothing else to run, so time jumps to the next timer interrupt if one
    /// is enabled in `mie`; with nothing that could wake the hart, the run stops with an error.
    fn wait_for_interrupt(&mut self) {
        if self.idle_until_interrupt() {
            return;
        }
        self.stop = Some(Stop::Error(format!(
            "wfi at pc {:#x}: no enabled interrupt can wake the hart (mie={:#x}, mip={:#x})",
            self.pc,
            self.csr.mie,
            self.mip()
        )));
    }

    /// Idle as `wfi` does (privileged ISA, "Wait for Interrupt": wake when an interrupt is
    /// pending and enabled in `mie`, whatever the global enables): if none is pending, time jumps
    /// to the earliest timer deadline (`mtimecmp`, `stimecmp`) whose interrupt `mie` enables.
    /// False when nothing could ever wake the hart (time is then unchanged). Public for an SBI
    /// implementation's retentive `hart_suspend`.
    pub fn idle_until_interrupt(&mut self) -> bool {
        self.recheck();
        if self.mip() & self.csr.mie != 0 {
            return true;
        }
        if self.bus.harts.count() > 1 {
            // Other harts run meanwhile: the machine wakes this one (`hart/smp.rs`).
            return self.wait_for_other_harts();
        }
        // Input arrives while the hart idles: a UART that waits for data with its receive
        // interrupt enabled takes what its input has (blocking until some comes or it ends).
        if self.bus.uart_wants_input() {
            self.bus.uart_poll_input();
            if self.mip() & self.csr.mie != 0 {
                return true;
            }
        }
        let mtime = self.mtime();
        match self.wake_deadline() {
            Some(cmp) => {
                self.bus.clint.mtime_offset = self.bus.clint.mtime_offset.wrapping_add(cmp - mtime);
                true
            }
            None => false,
        }
    }

    /// The earliest timer deadline (`mtimecmp`, `stimecmp`, the RTC's alarm through the PLIC)
    /// still in the future whose interrupt `mie` enables: when an idle hart wakes if nothing
    /// else wakes it.
    pub(crate) fn wake_deadline(&self) -> Option<u64> {
        let mtime = self.mtime();
        let rtc = self.bus.rtc.deadline().unwrap_or(u64::MAX);
        [
            (irq::MTI, self.bus.clint.mtimecmp[self.id]),
            (irq::STI, self.csr.stimecmp),
            (irq::MEI, rtc),
            (irq::SEI, rtc),
        ]
        .into_iter()
        .filter(|&(bit, _)| bit != irq::STI || self.stimer_drives_stip())
        .filter(|&(bit, cmp)| self.csr.mie & bit != 0 && cmp != u64::MAX && cmp > mtime)
        .map(|(_, cmp)| cmp)
        .min()
    }
}

fn div_s64(a: i64, b: i64) -> i64 {
    if b == 0 {
        -1
    } else {
        a.wrapping_div(b)
    }
}

fn rem_s64(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        a.wrapping_rem(b)
    }
}

fn div_s32(a: i32, b: i32) -> i32 {
    if b == 0 {
        -1
    } else {
        a.wrapping_div(b)
    }
}

fn rem_s32(a: i32, b: i32) -> i32 {
    if b == 0 {
        a
    } else {
        a.wrapping_rem(b)
    }
}
