//! DBTR, the debug triggers extension (SBI v3.0 chapter 19 "Debug Triggers Extension", EID
//! 0x44425452), over the hart's Sdtrig Trigger Module (`rvtrace_sim::trigger`): `trig_max`
//! is its trigger count, and logical trigger `i` is hardware trigger `i` (a fixed mapping, so
//! `trig_state.hw_trig_idx` = `i`). Each hart's [`crate::Sbi`] keeps its own state.
//!
//! A configuration is what the hart's triggers can hold: `tdata1` of type 2 (mcontrol) or 6
//! (mcontrol6) whose every bit the hart keeps (its WARL `tdata1` reads it back unchanged:
//! `execute`/`store`/`load`, `s`/`u`, mcontrol6's `vs`/`vu`, a size it implements; no `chain`,
//! `timing`, `action`, `match`, `select`, `hit`), and `tdata3` = 0 (the hart's `tdata3` is
//! read-only 0). `dmode` and `m` set are INVALID_PARAM (the chapter's two constraints); any
//! other type or bit the hart does not keep is NOT_SUPPORTED ("unimplemented optional bits").
//! A hit raises a breakpoint exception, which `medeleg` sends to S-mode.

use crate::{err, error, in_ram, ok, Args, SbiRet};
use rvtrace_isa::Xlen;
use rvtrace_sim::csr::num;
use rvtrace_sim::extension::{Ctx, HartAccess};
use rvtrace_sim::trigger::{self, Triggers};

/// `trig_state` bits (table "Debug Trigger State Fields").
mod state {
    pub const MAPPED: u64 = 1 << 0;
    pub const U: u64 = 1 << 1;
    pub const S: u64 = 1 << 2;
    pub const VU: u64 = 1 << 3;
    pub const VS: u64 = 1 << 4;
    pub const HAVE_HW_TRIG: u64 = 1 << 5;
    pub const HW_TRIG_IDX_SHIFT: u32 = 8;
}

/// `tdata1` bits of mcontrol/mcontrol6 the enable/disable functions move.
const TDATA1_U: u64 = 1 << 3;
const TDATA1_S: u64 = 1 << 4;
const TDATA1_M: u64 = 1 << 6;
const TDATA1_VU: u64 = 1 << 23;
const TDATA1_VS: u64 = 1 << 24;
/// The mode bits: mcontrol6's `vs`/`vu` exist only in type 6.
fn mode_bits(tdata1: u64, xlen: Xlen) -> u64 {
    let ty = tdata1 >> (xlen.bits() - 4);
    TDATA1_U
        | TDATA1_S
        | if ty == trigger::TYPE_MCONTROL6 {
            TDATA1_VU | TDATA1_VS
        } else {
            0
        }
}

#[derive(Clone, Copy, Debug)]
struct Installed {
    /// The configuration as installed or updated (its mode bits are `trig_state`'s copy).
    tdata1: u64,
    tdata2: u64,
    enabled: bool,
}

/// This hart's DBTR state.
#[derive(Debug, Default)]
pub(crate) struct Dbtr {
    shmem: Option<u64>,
    trig: [Option<Installed>; trigger::COUNT],
}

/// Why a configuration cannot be installed: its SBI error.
fn check_config(xlen: Xlen, tdata1: u64, tdata3: u64) -> Result<(), i64> {
    let bits = xlen.bits();
    let dmode = 1u64 << (bits - 5);
    if tdata1 & (dmode | TDATA1_M) != 0 {
        return Err(error::INVALID_PARAM);
    }
    let ty = tdata1 >> (bits - 4);
    if ty != trigger::TYPE_MCONTROL && ty != trigger::TYPE_MCONTROL6 {
        return Err(error::NOT_SUPPORTED);
    }
    let mut t = Triggers::new(xlen);
    t.write_tdata1(tdata1);
    if t.tdata1() != tdata1 || tdata3 != 0 {
        return Err(error::NOT_SUPPORTED);
    }
    Ok(())
}

/// XLEN/8: the size of a shared-memory word.
fn word(xlen: Xlen) -> u64 {
    xlen.bits() as u64 / 8
}

fn read_word(ctx: &Ctx, addr: u64, xlen: Xlen) -> Option<u64> {
    let mut b = [0u8; 8];
    let n = word(xlen) as usize;
    ctx.read_memory(addr, &mut b[..n])
        .then(|| u64::from_le_bytes(b))
}

fn write_word(ctx: &mut Ctx, addr: u64, v: u64, xlen: Xlen) -> bool {
    let n = word(xlen) as usize;
    ctx.write_memory(addr, &v.to_le_bytes()[..n])
}

/// Program hardware trigger `i` (M-level CSR writes, in effect after the call).
fn program(h: &mut dyn HartAccess, i: usize, tdata1: u64, tdata2: u64) {
    h.csr_write(num::TSELECT, i as u64);
    h.csr_write(num::TDATA1, tdata1);
    h.csr_write(num::TDATA2, tdata2);
}

impl Dbtr {
    pub(crate) fn call(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> SbiRet {
        let xlen = args.xlen;
        match fid {
            // num_triggers(trig_tdata1): trig_max for 0, else how many can hold it.
            0 => {
                let t1 = args.a[0];
                if t1 == 0 || check_config(xlen, t1, 0).is_ok() {
                    ok(trigger::COUNT as u64)
                } else {
                    ok(0)
                }
            }
            1 => self.set_shmem(ctx, args),
            2 => self.read(ctx, args),
            3 => self.install(ctx, args),
            4 => self.update(ctx, args),
            5..=7 => self.set_op(ctx, fid, args),
            _ => err(error::NOT_SUPPORTED),
        }
    }

    /// set_shmem(lo, hi, flags): all-ones in both disables; flags must be 0 and `lo` XLEN/8
    /// aligned (INVALID_PARAM); `trig_max * XLEN/2` bytes of RAM (INVALID_ADDRESS).
    fn set_shmem(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let (lo, hi, flags) = (args.a[0], args.a[1], args.a[2]);
        if lo == args.all_ones() && hi == args.all_ones() {
            self.shmem = None;
            return ok(0);
        }
        if flags != 0 || lo % word(args.xlen) != 0 {
            return err(error::INVALID_PARAM);
        }
        let len = trigger::COUNT as u64 * 4 * word(args.xlen);
        match args.phys_at(0).filter(|&a| in_ram(ctx, a, len)) {
            Some(a) => {
                self.shmem = Some(a);
                ok(0)
            }
            None => err(error::INVALID_ADDRESS),
        }
    }

    /// The shared memory and the entry stride, or NO_SHMEM.
    fn shmem(&self, xlen: Xlen) -> Result<(u64, u64), SbiRet> {
        self.shmem
            .map(|a| (a, 4 * word(xlen)))
            .ok_or(err(error::NO_SHMEM))
    }

    /// `trig_state` of logical trigger `i`.
    fn state(&self, i: usize, xlen: Xlen) -> u64 {
        let Some(t) = self.trig[i] else {
            return 0;
        };
        let m = t.tdata1;
        let mut s = state::MAPPED | state::HAVE_HW_TRIG | (i as u64) << state::HW_TRIG_IDX_SHIFT;
        for (bit, st) in [
            (TDATA1_U, state::U),
            (TDATA1_S, state::S),
            (TDATA1_VU, state::VU),
            (TDATA1_VS, state::VS),
        ] {
            if m & mode_bits(m, xlen) & bit != 0 {
                s |= st;
            }
        }
        s
    }

    /// The `tdata1` the hardware holds for an installed trigger: the mode bits cleared while
    /// it is disabled.
    fn hw_tdata1(t: &Installed, xlen: Xlen) -> u64 {
        if t.enabled {
            t.tdata1
        } else {
            t.tdata1 & !mode_bits(t.tdata1, xlen)
        }
    }

    /// read_triggers(base, count): NO_SHMEM; BAD_RANGE when `base >= trig_max` or
    /// `base + count >= trig_max` (the chapter's rule as written, which OpenSBI 1.5.1 applies
    /// too: it leaves the last trigger out of every read); else the four words of each.
    fn read(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let xlen = args.xlen;
        let (at, stride) = match self.shmem(xlen) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let (base, count) = (args.a[0], args.a[1]);
        let max = trigger::COUNT as u64;
        if base >= max || base.checked_add(count).is_none_or(|e| e >= max) {
            return err(error::BAD_RANGE);
        }
        for k in 0..count {
            let i = (base + k) as usize;
            let (t1, t2) = match &self.trig[i] {
                Some(t) => (Self::hw_tdata1(t, xlen), t.tdata2),
                None => (0, 0),
            };
            let e = at + k * stride;
            let w = word(xlen);
            for (n, v) in [self.state(i, xlen), t1, t2, 0].into_iter().enumerate() {
                if !write_word(ctx, e + n as u64 * w, v, xlen) {
                    return err(error::FAILED);
                }
            }
        }
        ok(0)
    }

    /// The `count` configurations at the start of the shared memory: (word0, tdata1, tdata2,
    /// tdata3) each.
    fn entries(
        &self,
        ctx: &Ctx,
        at: u64,
        stride: u64,
        count: u64,
        xlen: Xlen,
    ) -> Option<Vec<[u64; 4]>> {
        let w = word(xlen);
        (0..count)
            .map(|k| {
                let e = at + k * stride;
                Some([
                    read_word(ctx, e, xlen)?,
                    read_word(ctx, e + w, xlen)?,
                    read_word(ctx, e + 2 * w, xlen)?,
                    read_word(ctx, e + 3 * w, xlen)?,
                ])
            })
            .collect()
    }

    /// install_triggers(count): NO_SHMEM; BAD_RANGE for `count >= trig_max`; every entry is
    /// checked first (value = the failing index: INVALID_PARAM / NOT_SUPPORTED for its
    /// configuration, FAILED when no free trigger is left for it), then each gets the lowest
    /// free trigger, enabled, and its `trig_idx` in word 0.
    fn install(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let xlen = args.xlen;
        let (at, stride) = match self.shmem(xlen) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let count = args.a[0];
        if count >= trigger::COUNT as u64 {
            return err(error::BAD_RANGE);
        }
        let Some(entries) = self.entries(ctx, at, stride, count, xlen) else {
            return err(error::FAILED);
        };
        let mut free = (0..trigger::COUNT).filter(|&i| self.trig[i].is_none());
        let mut picks = Vec::new();
        for (k, e) in entries.iter().enumerate() {
            if let Err(code) = check_config(xlen, e[1], e[3]) {
                return (code, k as u64);
            }
            match free.next() {
                Some(i) => picks.push(i),
                None => return (error::FAILED, k as u64),
            }
        }
        for (k, (e, &i)) in entries.iter().zip(&picks).enumerate() {
            let t = Installed {
                tdata1: e[1],
                tdata2: e[2],
                enabled: true,
            };
            program(ctx.hart_mut(), i, t.tdata1, t.tdata2);
            self.trig[i] = Some(t);
            if !write_word(ctx, at + k as u64 * stride, i as u64, xlen) {
                return err(error::FAILED);
            }
        }
        ok(0)
    }

    /// update_triggers(count): NO_SHMEM; BAD_RANGE for `count >= trig_max`; every entry is
    /// checked first (value = the failing index): `trig_idx >= trig_max`, a configuration that
    /// is invalid, or a `type` or `chain` other than the installed one → INVALID_PARAM (or
    /// NOT_SUPPORTED for bits the hart lacks); a trigger not installed → FAILED. Then each
    /// trigger takes the new configuration; a disabled one stays disabled (its new mode bits
    /// saved for enable).
    fn update(&mut self, ctx: &mut Ctx, args: &Args) -> SbiRet {
        let xlen = args.xlen;
        let (at, stride) = match self.shmem(xlen) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let count = args.a[0];
        if count >= trigger::COUNT as u64 {
            return err(error::BAD_RANGE);
        }
        let Some(entries) = self.entries(ctx, at, stride, count, xlen) else {
            return err(error::FAILED);
        };
        let type_chain = (0xfu64 << (xlen.bits() - 4)) | 1 << 11;
        for (k, e) in entries.iter().enumerate() {
            let fail = |code| (code, k as u64);
            let Some(slot) = usize::try_from(e[0]).ok().filter(|&i| i < trigger::COUNT) else {
                return fail(error::INVALID_PARAM);
            };
            let Some(t) = self.trig[slot] else {
                return fail(error::FAILED);
            };
            if let Err(code) = check_config(xlen, e[1], e[3]) {
                return fail(code);
            }
            if (e[1] ^ t.tdata1) & type_chain != 0 {
                return fail(error::INVALID_PARAM);
            }
        }
        for e in &entries {
            let i = e[0] as usize;
            if let Some(t) = self.trig[i].as_mut() {
                t.tdata1 = e[1];
                t.tdata2 = e[2];
                let (t1, t2) = (Self::hw_tdata1(t, xlen), t.tdata2);
                program(ctx.hart_mut(), i, t1, t2);
            }
        }
        ok(0)
    }

    /// uninstall (5), enable (6), disable (7) of the set `base + bit` of `mask`: INVALID_PARAM
    /// when one of them is not installed or not below `trig_max` (checked before any effect).
    fn set_op(&mut self, ctx: &mut Ctx, fid: u64, args: &Args) -> SbiRet {
        let xlen = args.xlen;
        let (base, mask) = (args.a[0], args.a[1]);
        let mut set = Vec::new();
        for bit in 0..64u64 {
            if mask >> bit & 1 == 0 {
                continue;
            }
            match base
                .checked_add(bit)
                .and_then(|i| usize::try_from(i).ok())
                .filter(|&i| i < trigger::COUNT && self.trig[i].is_some())
            {
                Some(i) => set.push(i),
                None => return err(error::INVALID_PARAM),
            }
        }
        for i in set {
            let (t1, t2) = match fid {
                5 => {
                    self.trig[i] = None;
                    (0, 0)
                }
                _ => {
                    let Some(t) = self.trig[i].as_mut() else {
                        continue;
                    };
                    t.enabled = fid == 6;
                    (Self::hw_tdata1(t, xlen), t.tdata2)
                }
            };
            program(ctx.hart_mut(), i, t1, t2);
        }
        ok(0)
    }
}
