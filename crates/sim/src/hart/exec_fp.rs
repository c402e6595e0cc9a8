//! F and D extension execution (unprivileged ISA chapters "F" and "D"): NaN-boxing, the `mstatus.FS`
//! gate, rounding-mode resolution and `fflags` accrual. The arithmetic itself is in [`crate::fpu`].

use super::Hart;
use crate::arch::Exc;
use crate::decode::{Insn, Op};
use crate::fpu::{self, Rm};
use crate::observer::Observer;

/// Canonical single-precision NaN, used when a single is read from a register that is not
/// properly NaN-boxed (unprivileged ISA, "NaN Boxing of Narrower Values").
const CANONICAL_NAN_S: u32 = 0x7fc0_0000;

#[inline(always)]
fn unbox(v: u64) -> u32 {
    if v >> 32 == 0xffff_ffff {
        v as u32
    } else {
        CANONICAL_NAN_S
    }
}

#[inline(always)]
fn boxed(v: u32) -> u64 {
    0xffff_ffff_0000_0000 | v as u64
}

impl Hart {
    #[inline(always)]
    fn wf<O: Observer>(&mut self, obs: &mut O, rd: u8, v: u64) {
        self.f[rd as usize] = v;
        obs.fpr_write(rd, v);
        if self.csr.mstatus & crate::csr::mstatus::FS != crate::csr::mstatus::FS {
            self.csr.set_fs_dirty();
            obs.csr_write(crate::csr::num::MSTATUS, self.csr.mstatus_read(self.xlen));
        }
    }

    /// Resolve the instruction's rounding mode; DYN (7) reads `frm`. Invalid modes are illegal.
    #[inline(always)]
    fn rm(&self, i: &Insn, bits: u32) -> Result<Rm, Exc> {
        let rm = if i.rm == 7 {
            self.csr.frm as u32
        } else {
            i.rm as u32
        };
        Rm::from_bits(rm).ok_or(Exc::illegal(bits))
    }

    pub(crate) fn execute_fp<O: Observer, const RV64: bool>(
        &mut self,
        obs: &mut O,
        i: &Insn,
        bits: u32,
        pc: u64,
    ) -> Result<u64, Exc> {
        // mstatus.FS = Off makes every F/D instruction illegal.
        if !self.csr.fs_on() {
            return Err(Exc::illegal(bits));
        }
        let next = pc.wrapping_add(i.len as u64);
        let next = if RV64 { next } else { next & 0xffff_ffff };
        let (f1, f2, f3) = (
            self.f[i.rs1 as usize],
            self.f[i.rs2 as usize],
            self.f[i.rs3 as usize],
        );
        let (s1, s2, s3) = (unbox(f1), unbox(f2), unbox(f3));
        let x1 = self.x[i.rs1 as usize];
        let mut fl = 0u8;
        use Op::*;
        macro_rules! fs {
            ($v:expr) => {{
                let v = $v;
                self.wf(obs, i.rd, boxed(v));
            }};
        }
        macro_rules! fd {
            ($v:expr) => {{
                let v = $v;
                self.wf(obs, i.rd, v);
            }};
        }
        macro_rules! x {
            ($v:expr) => {{
                let v = $v;
                self.wx::<O, RV64>(obs, i.rd, v);
            }};
        }
        match i.op {
            Flw | Fld => {
                let a = self.addr::<RV64>(i.rs1, i.imm);
                if i.op == Flw {
                    let v = self.mem_load(obs, a, 4)?;
                    fs!(v as u32);
                } else {
                    let v = self.mem_load(obs, a, 8)?;
                    fd!(v);
                }
                return Ok(next);
            }
            Fsw | Fsd => {
                let a = self.addr::<RV64>(i.rs1, i.imm);
                if i.op == Fsw {
                    self.mem_store(obs, a, 4, f2 & 0xffff_ffff)?;
                } else {
                    self.mem_store(obs, a, 8, f2)?;
                }
                return Ok(next);
            }
            FmaddS | FmsubS | FnmsubS | FnmaddS => {
                let rm = self.rm(i, bits)?;
                let (np, na) = fma_signs(i.op);
                fs!(fpu::f32_fma(s1, s2, s3, np, na, rm, &mut fl))
            }
            FmaddD | FmsubD | FnmsubD | FnmaddD => {
                let rm = self.rm(i, bits)?;
                let (np, na) = fma_signs(i.op);
                fd!(fpu::f64_fma(f1, f2, f3, np, na, rm, &mut fl))
            }
            FaddS => {
                let rm = self.rm(i, bits)?;
                fs!(fpu::f32_add(s1, s2, rm, &mut fl))
            }
            FsubS => {
                let rm = self.rm(i, bits)?;
                fs!(fpu::f32_sub(s1, s2, rm, &mut fl))
            }
            FmulS => {
                let rm = self.rm(i, bits)?;
                fs!(fpu::f32_mul(s1, s2, rm, &mut fl))
            }
            FdivS => {
                let rm = self.rm(i, bits)?;
                fs!(fpu::f32_div(s1, s2, rm, &mut fl))
            }
            FsqrtS => {
                let rm = self.rm(i, bits)?;
                fs!(fpu::f32_sqrt(s1, rm, &mut fl))
            }
            FaddD => {
                let rm = self.rm(i, bits)?;
                fd!(fpu::f64_add(f1, f2, rm, &mut fl))
            }
            FsubD => {
                let rm = self.rm(i, bits)?;
                fd!(fpu::f64_sub(f1, f2, rm, &mut fl))
            }
            FmulD => {
                let rm = self.rm(i, bits)?;
                fd!(fpu::f64_mul(f1, f2, rm, &mut fl))
            }
            FdivD => {
                let rm = self.rm(i, bits)?;
                fd!(fpu::f64_div(f1, f2, rm, &mut fl))
            }
            FsqrtD => {
                let rm = self.rm(i, bits)?;
                fd!(fpu::f64_sqrt(f1, rm, &mut fl))
            }
            FsgnjS => fs!((s1 & 0x7fff_ffff) | (s2 & 0x8000_0000)),
            FsgnjnS => fs!((s1 & 0x7fff_ffff) | (!s2 & 0x8000_0000)),
            FsgnjxS => fs!(s1 ^ (s2 & 0x8000_0000)),
            FsgnjD => fd!((f1 & !(1 << 63)) | (f2 & (1 << 63))),
            FsgnjnD => fd!((f1 & !(1 << 63)) | (!f2 & (1 << 63))),
            FsgnjxD => fd!(f1 ^ (f2 & (1 << 63))),
            FminS => fs!(fpu::f32_min(s1, s2, &mut fl)),
            FmaxS => fs!(fpu::f32_max(s1, s2, &mut fl)),
            FminD => fd!(fpu::f64_min(f1, f2, &mut fl)),
            FmaxD => fd!(fpu::f64_max(f1, f2, &mut fl)),
            FcvtSD => {
                let rm = self.rm(i, bits)?;
                fs!(fpu::f64_to_f32(f1, rm, &mut fl))
            }
            FcvtDS => {
                // The rounding mode is encoded but unused (conversion is exact); QEMU still
                // rejects invalid modes.
                self.rm(i, bits)?;
                fd!(fpu::f32_to_f64(s1, &mut fl))
            }
            FeqS => x!(fpu::f32_eq(s1, s2, &mut fl) as u64),
            FltS => x!(fpu::f32_lt(s1, s2, &mut fl) as u64),
            FleS => x!(fpu::f32_le(s1, s2, &mut fl) as u64),
            FeqD => x!(fpu::f64_eq(f1, f2, &mut fl) as u64),
            FltD => x!(fpu::f64_lt(f1, f2, &mut fl) as u64),
            FleD => x!(fpu::f64_le(f1, f2, &mut fl) as u64),
            FclassS => x!(fpu::f32_classify(s1) as u64),
            FclassD => x!(fpu::f64_classify(f1) as u64),
            FmvXW => x!(f1 as u32 as i32 as i64 as u64),
            FmvXD => x!(f1),
            FmvWX => fs!(x1 as u32),
            FmvDX => fd!(x1),
            FcvtWS | FcvtWuS | FcvtLS | FcvtLuS | FcvtWD | FcvtWuD | FcvtLD | FcvtLuD => {
                let rm = self.rm(i, bits)?;
                let v = match i.op {
                    FcvtWS => fpu::f32_to_i32(s1, rm, &mut fl) as i64 as u64,
                    FcvtWuS => fpu::f32_to_u32(s1, rm, &mut fl) as i32 as i64 as u64,
                    FcvtLS => fpu::f32_to_i64(s1, rm, &mut fl) as u64,
                    FcvtLuS => fpu::f32_to_u64(s1, rm, &mut fl),
                    FcvtWD => fpu::f64_to_i32(f1, rm, &mut fl) as i64 as u64,
                    FcvtWuD => fpu::f64_to_u32(f1, rm, &mut fl) as i32 as i64 as u64,
                    FcvtLD => fpu::f64_to_i64(f1, rm, &mut fl) as u64,
                    _ => fpu::f64_to_u64(f1, rm, &mut fl),
                };
                x!(v)
            }
            FcvtSW | FcvtSWu | FcvtSL | FcvtSLu => {
                let rm = self.rm(i, bits)?;
                fs!(match i.op {
                    FcvtSW => fpu::i32_to_f32(x1 as i32, rm, &mut fl),
                    FcvtSWu => fpu::u32_to_f32(x1 as u32, rm, &mut fl),
                    FcvtSL => fpu::i64_to_f32(x1 as i64, rm, &mut fl),
                    _ => fpu::u64_to_f32(x1, rm, &mut fl),
                })
            }
            FcvtDW | FcvtDWu | FcvtDL | FcvtDLu => {
                let rm = self.rm(i, bits)?;
                fd!(match i.op {
                    FcvtDW => fpu::i32_to_f64(x1 as i32, rm, &mut fl),
                    FcvtDWu => fpu::u32_to_f64(x1 as u32, rm, &mut fl),
                    FcvtDL => fpu::i64_to_f64(x1 as i64, rm, &mut fl),
                    _ => fpu::u64_to_f64(x1, rm, &mut fl),
                })
            }
            _ => return Err(Exc::illegal(bits)),
        }
        if fl & !self.csr.fflags != 0 {
            self.csr.fflags |= fl;
            obs.csr_write(crate::csr::num::FFLAGS, self.csr.fflags as u64);
        }
        Ok(next)
    }
}

/// (negate product, negate addend) for fmadd, fmsub, fnmsub, fnmadd.
fn fma_signs(op: Op) -> (bool, bool) {
    match op {
        Op::FmaddS | Op::FmaddD => (false, false),
        Op::FmsubS | Op::FmsubD => (false, true),
        Op::FnmsubS | Op::FnmsubD => (true, false),
        _ => (true, true),
    }
}
