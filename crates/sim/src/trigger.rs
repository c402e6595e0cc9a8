//! Debug triggers (the Sdtrig extension of "The RISC-V Debug Specification", chapter "Sdtrig
//! (ISA Extension)"): the Trigger Module's CSRs and the address matches that raise a breakpoint
//! exception, as QEMU 7.2's `virt` CPU presents them (probed with `programs/src/triggers.c`;
//! crates/sim/README.md, "Debug triggers"):
//!
//! - two triggers (`tselect` keeps 0 and 1, ignores larger values); `tinfo` = 0x44 (types 2,
//!   mcontrol, and 6, mcontrol6) for both, writes ignored; no `tcontrol`, `mcontext` or
//!   `scontext` (illegal); `tdata3` reads 0 and ignores writes;
//! - `tdata1` resets to type 2 with nothing enabled; a write of any other type than 2 or 6 is
//!   ignored (also 0, which the spec says disables the trigger); of a type 2/6 value QEMU keeps
//!   the type, `m`/`s`/`u`, `execute`/`store`/`load`, mcontrol6's `vs`/`vu`, and the size when
//!   it is any, 1, 2, 4 or 8 bytes (other sizes read back as any); `dmode`, `hit`, `select`,
//!   `timing`, `action`, `chain`, `match` and the rest read 0: every trigger is an address
//!   trigger with match = 0, timing = 0 (before) and action = 0 (breakpoint exception);
//! - an execute trigger fires when the pc of the instruction about to execute equals `tdata2`
//!   (the size does not matter), before the fetch ("Priority": an instruction address
//!   breakpoint comes before a fetch's access fault);
//! - a load/store trigger fires before the access (the instruction does not execute) when
//!   the address of a byte it accesses equals `tdata2` (match = 0, "Matches when any compare
//!   value equals tdata2", every accessed byte a compare value) and, unless the size is any,
//!   the access has that size. An AMO or a performed SC matches load and store triggers alike
//!   (QEMU checks the read-modify-write once, as both); LR is a load; a misaligned LR/SC/AMO
//!   raises the breakpoint before its misaligned exception ("Priority").
//! - the `m`/`s`/`u` bits filter on the privilege the hart runs at (also for loads and stores
//!   under `mstatus.MPRV`); triggers fire in M-mode whatever `mstatus.MIE` is;
//! - the exception is a breakpoint (cause 3) with `tval` = 0 and `epc` = the instruction.
//!
//! Where QEMU 7.2 differs from the spec the model follows the spec (README, "Debug triggers"):
//! QEMU ignores a write of 0 to `tdata1` (the spec: it disables the trigger); QEMU watches
//! `tdata2 .. tdata2 + n` bytes for any access size (n = XLEN/8 for size any, else the size
//! *code*: 3 bytes for "4", 5 for "8"); it splits a misaligned load into two aligned ones and
//! checks both, and checks a misaligned store over odd ranges; it raises the misaligned
//! exception of an LR/SC/AMO before the breakpoint. Like QEMU, the model ignores the size of an
//! execute trigger (the spec restricts it to instructions of that length).
//!
//! Cost: nothing while no trigger is armed for the current privilege. The hart's RAM fast
//! paths (`Bus::open`) are closed for the kinds of access a trigger watches
//! (`Triggers::restrict`, applied with the PMP fast path), so only the slow paths ask
//! [`Triggers::exec_hit`] / [`Triggers::data_hit`].

use rvtrace_isa::Xlen;

/// Number of triggers (QEMU 7.2 `RV_MAX_TRIGGERS`).
pub const COUNT: usize = 2;
/// `tinfo`: the types every trigger supports, one bit per type (2 mcontrol, 6 mcontrol6).
pub const TINFO: u64 = 1 << 2 | 1 << 6;

/// `tdata1` fields shared by mcontrol (type 2) and mcontrol6 (type 6) (Debug spec, "Match
/// Control", "Match Control Type 6").
pub mod field {
    /// `load`: match loads.
    pub const LOAD: u64 = 1 << 0;
    /// `store`: match stores.
    pub const STORE: u64 = 1 << 1;
    /// `execute`: match instruction fetches.
    pub const EXECUTE: u64 = 1 << 2;
    /// `u`: enabled in U-mode.
    pub const U: u64 = 1 << 3;
    /// `s`: enabled in S-mode.
    pub const S: u64 = 1 << 4;
    /// `m`: enabled in M-mode.
    pub const M: u64 = 1 << 6;
    /// mcontrol `sizelo` (bits 17:16).
    pub const SIZELO: u64 = 3 << 16;
    /// mcontrol `sizehi` (bits 22:21, RV64 only).
    pub const SIZEHI: u64 = 3 << 21;
    /// mcontrol6 `size` (bits 19:16).
    pub const SIZE6: u64 = 0xf << 16;
    /// mcontrol6 `vu` (bit 23) and `vs` (bit 24).
    pub const VU_VS: u64 = 3 << 23;
}

/// mcontrol's `type`.
pub const TYPE_MCONTROL: u64 = 2;
/// mcontrol6's `type`.
pub const TYPE_MCONTROL6: u64 = 6;

/// The Trigger Module's state.
#[derive(Clone, Debug)]
pub struct Triggers {
    pub(crate) xlen: Xlen,
    /// `tselect`.
    pub tselect: u64,
    pub(crate) tdata1: [u64; COUNT],
    pub(crate) tdata2: [u64; COUNT],
    /// Per kind of match (load, store, execute), a bit per privilege (1 << priv) at which some
    /// trigger of that kind is enabled: the hart's fast-path switch.
    pub(crate) armed: [u8; 3],
}

/// What an access is, for [`Triggers::data_hit`]: [`field::LOAD`], [`field::STORE`] or both.
pub type Kind = u64;

impl Triggers {
    /// The reset state (QEMU 7.2: every `tdata1` type 2 with nothing enabled).
    pub fn new(xlen: Xlen) -> Triggers {
        let mut t = Triggers {
            xlen,
            tselect: 0,
            tdata1: [0; COUNT],
            tdata2: [0; COUNT],
            armed: [0; 3],
        };
        t.tdata1 = [t.type_bits(TYPE_MCONTROL); COUNT];
        t
    }

    pub(crate) fn type_shift(&self) -> u32 {
        self.xlen.bits() - 4
    }

    pub(crate) fn type_bits(&self, ty: u64) -> u64 {
        ty << self.type_shift()
    }

    pub(crate) fn sel(&self) -> usize {
        self.tselect as usize
    }

    /// Write `tselect`: values beyond the last trigger are ignored (WARL; "Enumeration").
    pub fn write_tselect(&mut self, v: u64) {
        if v < COUNT as u64 {
            self.tselect = v;
        }
    }

    /// `tdata1` of the selected trigger.
    pub fn tdata1(&self) -> u64 {
        self.tdata1[self.sel()]
    }

    /// `tdata2` of the selected trigger.
    pub fn tdata2(&self) -> u64 {
        self.tdata2[self.sel()]
    }

    /// Write `tdata1` of the selected trigger (WARL, as QEMU 7.2 `type2_mcontrol_validate` /
    /// `type6_mcontrol6_validate`: see the module doc).
    pub fn write_tdata1(&mut self, v: u64) {
        let ty = (v >> self.type_shift()) & 0xf;
        let keep = field::M | field::S | field::U | field::EXECUTE | field::STORE | field::LOAD;
        let new = match ty {
            TYPE_MCONTROL => {
                let size_bits = match self.xlen {
                    Xlen::Rv64 => field::SIZEHI | field::SIZELO,
                    Xlen::Rv32 => field::SIZELO,
                };
                let size = if size_ok(mcontrol_size(v, self.xlen)) {
                    v & size_bits
                } else {
                    0
                };
                self.type_bits(ty) | size | (v & keep)
            }
            TYPE_MCONTROL6 => {
                let size = if size_ok((v & field::SIZE6) >> 16) {
                    v & field::SIZE6
                } else {
                    0
                };
                self.type_bits(ty) | (v & field::VU_VS) | size | (v & keep)
            }
            // "Trigger Module Registers": writing 0 disables the trigger (QEMU 7.2 ignores
            // it, see the module doc); writes of other types (icount included) are ignored.
            0 => self.type_bits(TYPE_MCONTROL),
            _ => return,
        };
        self.tdata1[self.sel()] = new;
        self.rearm();
    }

    /// Write `tdata2` of the selected trigger: the whole XLEN-wide value is kept ("Address
    /// Matches").
    pub fn write_tdata2(&mut self, v: u64) {
        self.tdata2[self.sel()] = v;
    }

    pub(crate) fn rearm(&mut self) {
        self.armed = [0; 3];
        for &t in &self.tdata1 {
            let privs = privileges(t);
            for (k, bit) in [field::LOAD, field::STORE, field::EXECUTE]
                .iter()
                .enumerate()
            {
                if t & bit != 0 {
                    self.armed[k] |= privs;
                }
            }
        }
    }

    /// Close the hart's RAM fast paths (`open` = 0) for the kinds of access a trigger watches
    /// at privilege `priv_`, so that they reach [`Triggers::exec_hit`] / [`Triggers::data_hit`].
    #[inline]
    pub(crate) fn restrict(&self, priv_: u8, open: &mut crate::bus::OpenRam) {
        let p = 1u8 << priv_;
        if self.armed[0] & p != 0 {
            open.load = 0;
        }
        if self.armed[1] & p != 0 {
            open.store = 0;
        }
        if self.armed[2] & p != 0 {
            open.fetch = 0;
        }
    }

    /// Whether an execute trigger fires on the instruction at `pc` in privilege `priv_`.
    #[inline]
    pub fn exec_hit(&self, pc: u64, priv_: u8) -> bool {
        self.armed[2] & (1 << priv_) != 0 && self.exec_match(pc, priv_)
    }

    #[cold]
    pub(crate) fn exec_match(&self, pc: u64, priv_: u8) -> bool {
        (0..COUNT).any(|i| {
            let t = self.tdata1[i];
            t & field::EXECUTE != 0 && privileges(t) & (1 << priv_) != 0 && self.tdata2[i] == pc
        })
    }

    /// Whether a load/store trigger fires on an access of `size` bytes at `addr` of `kind`
    /// ([`field::LOAD`], [`field::STORE`], or both for an AMO) in privilege `priv_`.
    #[inline]
    pub fn data_hit(&self, addr: u64, size: u64, kind: Kind, priv_: u8) -> bool {
        let p = 1 << priv_;
        let armed = (kind & field::LOAD != 0 && self.armed[0] & p != 0)
            || (kind & field::STORE != 0 && self.armed[1] & p != 0);
        armed && self.data_match(addr, size, kind, priv_)
    }

    #[cold]
    pub(crate) fn data_match(&self, addr: u64, size: u64, kind: Kind, priv_: u8) -> bool {
        (0..COUNT).any(|i| {
            let t = self.tdata1[i];
            if t & kind == 0 || privileges(t) & (1 << priv_) == 0 {
                return false;
            }
            // match = 0: "Matches when any compare value equals tdata2"; the compare values
            // are the addresses of the bytes accessed ("select"), and a size other than any
            // matches accesses of that size only ("size").
            let size_ok = match self.size_bytes(t) {
                Some(n) => n == size,
                None => true,
            };
            size_ok && self.tdata2[i].wrapping_sub(addr) < size
        })
    }

    /// The access size a trigger is restricted to (`None`: any).
    pub(crate) fn size_bytes(&self, t: u64) -> Option<u64> {
        let code = if (t >> self.type_shift()) & 0xf == TYPE_MCONTROL6 {
            (t & field::SIZE6) >> 16
        } else {
            mcontrol_size(t, self.xlen)
        };
        match code {
            1 => Some(1),
            2 => Some(2),
            3 => Some(4),
            5 => Some(8),
            _ => None,
        }
    }

    /// Everything software can see, for trap-loop detection (a handler that only reprograms
    /// triggers still makes progress).
    pub(crate) fn state(&self) -> [u64; 1 + 2 * COUNT] {
        [
            self.tselect,
            self.tdata1[0],
            self.tdata1[1],
            self.tdata2[0],
            self.tdata2[1],
        ]
    }
}

/// mcontrol's size code: `sizehi` (RV64) above `sizelo`.
pub(crate) fn mcontrol_size(v: u64, xlen: Xlen) -> u64 {
    let hi = match xlen {
        Xlen::Rv64 => (v & field::SIZEHI) >> 21,
        Xlen::Rv32 => 0,
    };
    hi << 2 | (v & field::SIZELO) >> 16
}

/// The size codes QEMU 7.2 keeps: any, 1, 2, 4 and 8 bytes.
pub(crate) fn size_ok(code: u64) -> bool {
    matches!(code, 0 | 1 | 2 | 3 | 5)
}

/// The privileges (bit 1 << priv) a trigger is enabled in: `u` (bit 3), `s` (4), `m` (6).
pub(crate) fn privileges(t: u64) -> u8 {
    ((t >> 3) & 0b1011) as u8
}
