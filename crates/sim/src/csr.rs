//! The CSR file (privileged ISA, "Machine-Level CSRs" and "Supervisor-Level CSRs").
//!
//! Write masks follow QEMU 7.2's `virt` CPU so that programs reading back what they wrote see the
//! same values under both. Extensions (CTR, ...) add CSRs through [`crate::extension::Extension`].

use rvtrace_isa::Xlen;

/// CSR numbers used by the hart model.
#[allow(missing_docs)]
pub mod num {
    pub const FFLAGS: u16 = 0x001;
    pub const FRM: u16 = 0x002;
    pub const FCSR: u16 = 0x003;
    pub const SSTATUS: u16 = 0x100;
    pub const SIE: u16 = 0x104;
    pub const STVEC: u16 = 0x105;
    pub const SCOUNTEREN: u16 = 0x106;
    pub const SENVCFG: u16 = 0x10a;
    pub const SSTATEEN0: u16 = 0x10c;
    pub const SSTATEEN3: u16 = 0x10f;
    pub const SSCRATCH: u16 = 0x140;
    pub const SEPC: u16 = 0x141;
    pub const SCAUSE: u16 = 0x142;
    pub const STVAL: u16 = 0x143;
    /// `stimecmp` (Sstc).
    pub const STIMECMP: u16 = 0x14d;
    /// `stimecmph` (Sstc, RV32 only).
    pub const STIMECMPH: u16 = 0x15d;
    pub const SIP: u16 = 0x144;
    pub const SATP: u16 = 0x180;
    pub const MSTATUS: u16 = 0x300;
    pub const MISA: u16 = 0x301;
    pub const MEDELEG: u16 = 0x302;
    pub const MIDELEG: u16 = 0x303;
    pub const MIE: u16 = 0x304;
    pub const MTVEC: u16 = 0x305;
    pub const MCOUNTEREN: u16 = 0x306;
    pub const MENVCFG: u16 = 0x30a;
    pub const MSTATEEN0: u16 = 0x30c;
    pub const MSTATEEN3: u16 = 0x30f;
    pub const MSTATUSH: u16 = 0x310;
    pub const MENVCFGH: u16 = 0x31a;
    pub const MSTATEEN0H: u16 = 0x31c;
    pub const MSTATEEN3H: u16 = 0x31f;
    pub const MCOUNTINHIBIT: u16 = 0x320;
    pub const MCYCLECFG: u16 = 0x321;
    pub const MINSTRETCFG: u16 = 0x322;
    pub const MHPMEVENT3: u16 = 0x323;
    pub const MHPMEVENT31: u16 = 0x33f;
    pub const MCYCLECFGH: u16 = 0x721;
    pub const MINSTRETCFGH: u16 = 0x722;
    pub const MHPMEVENT3H: u16 = 0x723;
    pub const MHPMEVENT31H: u16 = 0x73f;
    pub const MSCRATCH: u16 = 0x340;
    pub const MEPC: u16 = 0x341;
    pub const MCAUSE: u16 = 0x342;
    pub const MTVAL: u16 = 0x343;
    pub const MIP: u16 = 0x344;
    pub const PMPCFG0: u16 = 0x3a0;
    pub const PMPCFG15: u16 = 0x3af;
    pub const PMPADDR0: u16 = 0x3b0;
    pub const PMPADDR63: u16 = 0x3ef;
    pub const TSELECT: u16 = 0x7a0;
    pub const TDATA1: u16 = 0x7a1;
    pub const TDATA2: u16 = 0x7a2;
    pub const TDATA3: u16 = 0x7a3;
    pub const TINFO: u16 = 0x7a4;
    pub const MCYCLE: u16 = 0xb00;
    pub const MINSTRET: u16 = 0xb02;
    pub const MHPMCOUNTER3: u16 = 0xb03;
    pub const MHPMCOUNTER31: u16 = 0xb1f;
    pub const MCYCLEH: u16 = 0xb80;
    pub const MINSTRETH: u16 = 0xb82;
    pub const MHPMCOUNTER3H: u16 = 0xb83;
    pub const MHPMCOUNTER31H: u16 = 0xb9f;
    pub const CYCLE: u16 = 0xc00;
    pub const TIME: u16 = 0xc01;
    pub const INSTRET: u16 = 0xc02;
    pub const HPMCOUNTER31: u16 = 0xc1f;
    pub const CYCLEH: u16 = 0xc80;
    pub const TIMEH: u16 = 0xc81;
    pub const HPMCOUNTER31H: u16 = 0xc9f;
    pub const SCOUNTOVF: u16 = 0xda0;
    pub const MVENDORID: u16 = 0xf11;
    pub const MARCHID: u16 = 0xf12;
    pub const MIMPID: u16 = 0xf13;
    pub const MHARTID: u16 = 0xf14;
    pub const MCONFIGPTR: u16 = 0xf15;
}

/// `mstatus` fields.
#[allow(missing_docs)]
pub mod mstatus {
    pub const SIE: u64 = 1 << 1;
    pub const MIE: u64 = 1 << 3;
    pub const SPIE: u64 = 1 << 5;
    pub const UBE: u64 = 1 << 6;
    pub const MPIE: u64 = 1 << 7;
    pub const SPP: u64 = 1 << 8;
    pub const VS: u64 = 3 << 9;
    pub const MPP: u64 = 3 << 11;
    pub const MPP_SHIFT: u32 = 11;
    pub const FS: u64 = 3 << 13;
    pub const XS: u64 = 3 << 15;
    pub const MPRV: u64 = 1 << 17;
    pub const SUM: u64 = 1 << 18;
    pub const MXR: u64 = 1 << 19;
    pub const TVM: u64 = 1 << 20;
    pub const TW: u64 = 1 << 21;
    pub const TSR: u64 = 1 << 22;
    pub const UXL: u64 = 3 << 32;
    pub const SXL: u64 = 3 << 34;
    pub const GVA: u64 = 1 << 38;
    pub const MPV: u64 = 1 << 39;
    /// The `mstatus` bits `sstatus` shows (privileged ISA, "Supervisor Status Register"), SD aside.
    pub const SSTATUS_BITS: u64 = SIE | SPIE | UBE | SPP | VS | FS | XS | SUM | MXR | UXL;

    // The privilege and global interrupt-enable stack (privileged ISA, "Privilege and Global
    // Interrupt-Enable Stack in mstatus register", and "Trap-Return Instructions"). The hart
    // applies these, and so do consumers that follow its state (the tandem producer and checker):
    // one copy of each rule.

    /// `mstatus` as software reads it: the raw value (RV64 layout, as the hart holds it) with SD
    /// computed from FS/XS/VS, XLEN-wide.
    #[inline]
    pub fn read(raw: u64, xlen: rvtrace_isa::Xlen) -> u64 {
        let dirty = (raw & FS) == FS || (raw & XS) == XS || (raw & VS) == VS;
        match xlen {
            rvtrace_isa::Xlen::Rv32 => (raw & 0xffff_ffff) | if dirty { 1 << 31 } else { 0 },
            rvtrace_isa::Xlen::Rv64 => raw | if dirty { 1 << 63 } else { 0 },
        }
    }

    /// `mstatus` after a trap taken from privilege `from` into `to` (1 S, else M): xPIE = xIE,
    /// xIE = 0, xPP = `from`.
    #[inline]
    pub fn after_trap(s: u64, from: u8, to: u8) -> u64 {
        if to == 1 {
            let mut n = s & !(SPIE | SIE | SPP);
            if s & SIE != 0 {
                n |= SPIE;
            }
            if from == 1 {
                n |= SPP;
            }
            n
        } else {
            let mut n = s & !(MPIE | MIE | MPP);
            if s & MIE != 0 {
                n |= MPIE;
            }
            n | (from as u64) << MPP_SHIFT
        }
    }

    /// `mstatus` and the new privilege after `mret`: MIE = MPIE, MPIE = 1, MPP = the least
    /// privileged mode (U if `has_u`, else M), MPRV cleared when leaving M. MPP = 2 (reserved)
    /// returns to U, as QEMU does.
    #[inline]
    pub fn after_mret(s: u64, has_u: bool) -> (u64, u8) {
        let mpp = ((s & MPP) >> MPP_SHIFT) as u8;
        let mut n = s & !(MIE | MPP);
        if s & MPIE != 0 {
            n |= MIE;
        }
        n |= MPIE;
        if !has_u {
            n |= MPP;
        }
        let new_priv = if mpp == 2 { 0 } else { mpp };
        if new_priv != 3 {
            n &= !MPRV;
        }
        (n, new_priv)
    }

    /// `mstatus` and the new privilege after `sret`: SIE = SPIE, SPIE = 1, SPP = U, MPRV cleared.
    #[inline]
    pub fn after_sret(s: u64) -> (u64, u8) {
        let spp = if s & SPP != 0 { 1 } else { 0 };
        let mut n = s & !(SIE | SPP);
        if s & SPIE != 0 {
            n |= SIE;
        }
        n |= SPIE;
        n &= !MPRV;
        (n, spp)
    }
}

/// `menvcfg` fields (privileged ISA, "Machine Environment Configuration Register").
pub mod menvcfg {
    /// STCE (bit 63): Sstc's `stimecmp` is enabled below M and drives STIP (Sstc).
    pub const STCE: u64 = 1 << 63;
}

/// Interrupt bits of `mip`/`mie` (privileged ISA, "Machine Interrupt Registers").
#[allow(missing_docs)]
pub mod irq {
    pub const SSI: u64 = 1 << 1;
    pub const MSI: u64 = 1 << 3;
    pub const STI: u64 = 1 << 5;
    pub const MTI: u64 = 1 << 7;
    pub const SEI: u64 = 1 << 9;
    pub const MEI: u64 = 1 << 11;
    /// Interrupts the hart model implements.
    pub const ALL: u64 = SSI | MSI | STI | MTI | SEI | MEI;
    /// Interrupts that can be delegated to S-mode.
    pub const S_MODE: u64 = SSI | STI | SEI;
    /// Writable bits of `mie` on QEMU 7.2's `virt` CPU without H (`-cpu rvXX,h=false`): QEMU
    /// keeps the VS interrupts 2/6/10 (and LCOFI 13) there as storage; they never fire here.
    pub const MIE_WRITABLE: u64 = 0x2eee;
    /// Software-writable bits of `mip` on QEMU 7.2 (SSIP, VSSIP, STIP, VSTIP, SEIP, VSEIP, LCOFIP).
    pub const MIP_WRITABLE: u64 = 0x2666;
    /// Writable bits of `mideleg` on QEMU 7.2 without H (SSI, STI, SEI, LCOFI, and the VS bits
    /// as storage).
    pub const MIDELEG_WRITABLE: u64 = 0x2666;
    /// Counter-overflow interrupt (Sscofpmf), present on QEMU 7.2's CPU.
    pub const LCOFI: u64 = 1 << 13;
    /// The interrupts `sie`/`sip` show (when delegated).
    pub const S_VIEW: u64 = SSI | STI | SEI | LCOFI;
    /// Priority order for taking interrupts: MEI, MSI, MTI, SEI, SSI, STI, then LCOFI.
    pub const PRIORITY: [u64; 7] = [11, 3, 7, 9, 1, 5, 13];
}

/// Exceptions that `medeleg` can delegate (QEMU 7.2 `DELEGABLE_EXCPS`, with the H causes; read
/// back from QEMU by `programs/src/csrs.c`).
pub const DELEGABLE_EXCEPTIONS: u64 = 0xf0_bfff;

/// `satp.ASID`: bits 59:44 on RV64 (Sv39/48/57), 30:22 on RV32 (Sv32) (privileged ISA, "satp").
pub fn satp_asid(xlen: Xlen, satp: u64) -> u64 {
    match xlen {
        Xlen::Rv64 => (satp >> 44) & 0xffff,
        Xlen::Rv32 => (satp >> 22) & 0x1ff,
    }
}

/// The CSRs that share bits: a write of one changes the others (one copy of each rule, for the
/// hart and for consumers that follow its state, such as the tandem checker's shadow).
///
/// - `fflags`, `frm` and `fcsr` are one state seen through three CSRs (unprivileged ISA, F
///   extension, "Floating-Point Control and Status Register": `fcsr` = `frm` << 5 | `fflags`).
/// - `sstatus` is a view of `mstatus` (privileged ISA, "Supervisor Status (sstatus) Register":
///   "a restricted view of mstatus").
/// - `sie`/`sip` are views of `mie`/`mip` restricted to the interrupts `mideleg` delegates
///   (privileged ISA, "Supervisor Interrupt (sip and sie) Registers").
pub mod shared {
    use super::{irq, mstatus, num};
    use rvtrace_isa::Xlen;

    /// `fflags` (bits 4:0, the accrued exception flags) of an `fcsr` value (F extension, "fcsr").
    #[inline]
    pub fn fflags_of(fcsr: u64) -> u8 {
        (fcsr & 0x1f) as u8
    }

    /// `frm` (bits 7:5, the dynamic rounding mode) of an `fcsr` value (F extension, "fcsr").
    #[inline]
    pub fn frm_of(fcsr: u64) -> u8 {
        ((fcsr >> 5) & 7) as u8
    }

    /// The `fcsr` value of `fflags` and `frm` (F extension, "fcsr").
    #[inline]
    pub fn fcsr(fflags: u8, frm: u8) -> u64 {
        u64::from(frm & 7) << 5 | u64::from(fflags & 0x1f)
    }

    /// `fcsr` after a write of `fflags` with `value`: its flags bits replaced.
    #[inline]
    pub fn fcsr_with_fflags(fcsr: u64, value: u64) -> u64 {
        (fcsr & !0x1f) | (value & 0x1f)
    }

    /// `fcsr` after a write of `frm` with `value`: its rounding-mode bits replaced.
    #[inline]
    pub fn fcsr_with_frm(fcsr: u64, value: u64) -> u64 {
        (fcsr & !0xe0) | ((value & 7) << 5)
    }

    /// The `mstatus` bits `sstatus` shows at `xlen`, SD (bit XLEN-1) included (privileged ISA,
    /// "Supervisor Status (sstatus) Register"; UXL exists on RV64 only).
    #[inline]
    pub fn sstatus_view(xlen: Xlen) -> u64 {
        match xlen {
            Xlen::Rv32 => (mstatus::SSTATUS_BITS & !mstatus::UXL) | 1 << 31,
            Xlen::Rv64 => mstatus::SSTATUS_BITS | 1 << 63,
        }
    }

    /// The `sstatus` bits software can write at `xlen` (the others are read-only or, like UBE
    /// and XS, fixed on the modelled CPU).
    #[inline]
    pub fn sstatus_writable(xlen: Xlen) -> u64 {
        let m = mstatus::SIE
            | mstatus::SPIE
            | mstatus::SPP
            | mstatus::FS
            | mstatus::VS
            | mstatus::SUM
            | mstatus::MXR;
        match xlen {
            Xlen::Rv32 => m,
            Xlen::Rv64 => m | mstatus::UXL,
        }
    }

    /// `sstatus` as read, from `mstatus` as read ([`mstatus::read`]).
    #[inline]
    pub fn sstatus_read(mstatus_read: u64, xlen: Xlen) -> u64 {
        mstatus_read & sstatus_view(xlen)
    }

    /// `mstatus` after `sstatus` is written with `value`: the bits in `mask` (a view or its
    /// writable part) come from `value`, the others stay.
    #[inline]
    pub fn mstatus_with_sstatus(mstatus: u64, value: u64, mask: u64) -> u64 {
        (mstatus & !mask) | (value & mask)
    }

    /// The `mie`/`mip` bits `sie`/`sip` show: the delegated supervisor-level interrupts.
    #[inline]
    pub fn s_view(mideleg: u64) -> u64 {
        mideleg & irq::S_VIEW
    }

    /// `sie` as read from `mie` and `mideleg`.
    #[inline]
    pub fn sie_read(mie: u64, mideleg: u64) -> u64 {
        mie & s_view(mideleg)
    }

    /// `mie` after `sie` is written with `value`: the delegated bits come from `value`.
    #[inline]
    pub fn mie_with_sie(mie: u64, mideleg: u64, value: u64) -> u64 {
        let m = s_view(mideleg);
        (mie & !m) | (value & m)
    }

    /// `sip` as read from `mip` and `mideleg`.
    #[inline]
    pub fn sip_read(mip: u64, mideleg: u64) -> u64 {
        mip & s_view(mideleg)
    }

    /// The software-written `mip` bits after `sip` is written with `value`: SSIP, and LCOFIP
    /// (Sscofpmf), when delegated; STIP and SEIP are read-only in `sip`.
    #[inline]
    pub fn mip_with_sip(mip: u64, mideleg: u64, value: u64) -> u64 {
        let m = mideleg & (irq::SSI | irq::LCOFI);
        (mip & !m) | (value & m)
    }

    /// Write `value` to CSR `csr` of a CSR file held as values indexed by CSR number (a
    /// consumer's shadow of the hart, such as the tandem checker's), with what the write does
    /// to the CSRs that share its bits: `fcsr`/`fflags`/`frm` update each other, `sstatus`
    /// updates the `mstatus` bits it shows and `sie` the delegated `mie` bits (each also keeps
    /// the value written). Other CSRs just take the value; `sip` too (the shadow follows `mip`
    /// as the trace reports it). `value` is XLEN-truncated by the caller; a `csr` outside
    /// `file` is ignored.
    pub fn write_file(file: &mut [u64], csr: u16, value: u64, xlen: Xlen) {
        let at = |n: u16| n as usize;
        let set = |file: &mut [u64], n: u16, v: u64| {
            if let Some(x) = file.get_mut(at(n)) {
                *x = v;
            }
        };
        if at(csr) >= file.len() {
            return;
        }
        match csr {
            num::FCSR => {
                file[at(csr)] = value & 0xff;
                set(file, num::FFLAGS, u64::from(fflags_of(value)));
                set(file, num::FRM, u64::from(frm_of(value)));
            }
            num::FFLAGS => {
                file[at(csr)] = value & 0x1f;
                if let Some(f) = file.get_mut(at(num::FCSR)) {
                    *f = fcsr_with_fflags(*f, value);
                }
            }
            num::FRM => {
                file[at(csr)] = value & 7;
                if let Some(f) = file.get_mut(at(num::FCSR)) {
                    *f = fcsr_with_frm(*f, value);
                }
            }
            num::SSTATUS => {
                if let Some(m) = file.get_mut(at(num::MSTATUS)) {
                    *m = mstatus_with_sstatus(*m, value, sstatus_view(xlen));
                }
                file[at(csr)] = value;
            }
            num::SIE => {
                let deleg = file.get(at(num::MIDELEG)).copied().unwrap_or(0);
                if let Some(m) = file.get_mut(at(num::MIE)) {
                    *m = mie_with_sie(*m, deleg, value);
                }
                file[at(csr)] = value;
            }
            _ => file[at(csr)] = value,
        }
    }
}

/// Architectural CSR state (the values that are plain storage; counters are in
/// [`crate::counters`]).
#[derive(Clone, Debug)]
pub struct Csrs {
    /// `mstatus` in the RV64 layout (SD is computed on read).
    pub mstatus: u64,
    /// `misa`.
    pub misa: u64,
    /// `medeleg`.
    pub medeleg: u64,
    /// `mideleg`.
    pub mideleg: u64,
    /// `mie`.
    pub mie: u64,
    /// Software-writable part of `mip` (SSIP, STIP, SEIP); MTIP/MSIP come from the CLINT.
    pub mip_sw: u64,
    /// `mtvec`.
    pub mtvec: u64,
    /// `mscratch`.
    pub mscratch: u64,
    /// `mepc`.
    pub mepc: u64,
    /// `mcause` (interrupt flag at bit XLEN-1).
    pub mcause: u64,
    /// `mtval`.
    pub mtval: u64,
    /// `mcounteren`.
    pub mcounteren: u64,
    /// `menvcfg`.
    pub menvcfg: u64,
    /// `stvec`.
    pub stvec: u64,
    /// `sscratch`.
    pub sscratch: u64,
    /// `sepc`.
    pub sepc: u64,
    /// `scause`.
    pub scause: u64,
    /// `stval`.
    pub stval: u64,
    /// `scounteren`.
    pub scounteren: u64,
    /// `senvcfg`.
    pub senvcfg: u64,
    /// `satp` (stored; address translation is not modelled).
    pub satp: u64,
    /// Sstc's `stimecmp` (reset 0, as QEMU), also the deadline of the supervisor timer an SBI
    /// implementation's `set_timer` arms ([`crate::Hart::set_stimecmp`]).
    pub stimecmp: u64,
    /// `stimecmp` was written: the timer compares from then on (QEMU 7.2 compares only after a
    /// write, so a reset value of 0 does not make STIP pending).
    pub stimer_armed: bool,
    /// The deadline is the firmware's own supervisor timer ([`crate::Hart::set_stimecmp`] while
    /// `menvcfg.STCE` is 0): it drives STIP as an SBI implementation's timer would. A `stimecmp`
    /// CSR write clears it: with STCE 0 the CSR does not drive STIP (Sstc).
    pub firmware_timer: bool,
    /// Accrued FP exception flags.
    pub fflags: u8,
    /// FP dynamic rounding mode.
    pub frm: u8,
    /// PMP registers and their decoded ranges (16 entries, as QEMU 7.2; `pmp.rs`).
    pub pmp: crate::pmp::Pmp,
    /// The debug triggers (Sdtrig: `tselect`, `tdata1..3`, `tinfo`; `trigger.rs`).
    pub trig: crate::trigger::Triggers,
    /// `mstateen0..3` (Smstateen; only with [`crate::Config::smstateen`]).
    pub mstateen: [u64; 4],
}

/// `mstateen0` bits (Smstateen, "State Enable Extensions"; the CTR and CSRIND bits are given by
/// the Smctr and Smcsrind specifications). Bits the hart has no state for are read-only 0.
pub mod stateen {
    /// SE0 (bit 63 of every `mstateenN`): S-mode access to `sstateenN`.
    pub const SE0: u64 = 1 << 63;
    /// ENVCFG: S-mode access to `senvcfg`.
    pub const ENVCFG: u64 = 1 << 62;
    /// CSRIND: S-mode access to `siselect`/`sireg*` (Sscsrind).
    pub const CSRIND: u64 = 1 << 60;
    /// CTR: S-mode access to the CTR CSRs and `sctrclr` (Smctr, "State Enable Access Control").
    pub const CTR: u64 = 1 << 54;
}

impl Csrs {
    /// Reset values (QEMU 7.2 `riscv_cpu_reset` for the `virt` machine with `-bios none`).
    pub fn new(xlen: Xlen, misa_ext: u64) -> Csrs {
        let (misa, mstatus) = match xlen {
            Xlen::Rv32 => ((1u64 << 30) | misa_ext, 0),
            // SXL = UXL = 2 (64-bit), read-only.
            Xlen::Rv64 => ((2u64 << 62) | misa_ext, (2 << 32) | (2 << 34)),
        };
        Csrs {
            mstatus,
            misa,
            medeleg: 0,
            mideleg: 0,
            mie: 0,
            mip_sw: 0,
            mtvec: 0,
            mscratch: 0,
            mepc: 0,
            mcause: 0,
            mtval: 0,
            mcounteren: 0,
            menvcfg: 0,
            stvec: 0,
            sscratch: 0,
            sepc: 0,
            scause: 0,
            stval: 0,
            scounteren: 0,
            senvcfg: 0,
            satp: 0,
            stimecmp: 0,
            stimer_armed: false,
            firmware_timer: false,
            fflags: 0,
            frm: 0,
            pmp: crate::pmp::Pmp::new(xlen == Xlen::Rv32),
            trig: crate::trigger::Triggers::new(xlen),
            mstateen: [0; 4],
        }
    }

    /// `mstatus` as read, with SD computed from FS/XS/VS.
    pub fn mstatus_read(&self, xlen: Xlen) -> u64 {
        mstatus::read(self.mstatus, xlen)
    }

    /// Write `mstatus` with QEMU 7.2's mask (`write_mstatus`): on RV64 MPV and GVA are writable
    /// (QEMU keeps them so without H too; they change nothing here), and UXL is written only
    /// when the value has a UXL bit set.
    pub fn mstatus_write(&mut self, val: u64, has_f: bool, xlen: Xlen) {
        use mstatus::*;
        let mut mask = SIE | SPIE | MIE | MPIE | SPP | MPRV | SUM | MPP | MXR | TVM | TSR | TW | VS;
        if has_f {
            mask |= FS;
        }
        if xlen == Xlen::Rv64 {
            mask |= MPV | GVA;
            if val & UXL != 0 {
                mask |= UXL;
            }
        }
        self.mstatus = (self.mstatus & !mask) | (val & mask);
    }

    /// Mark the FP state dirty (any FP register or `fcsr` write).
    #[inline]
    pub fn set_fs_dirty(&mut self) {
        self.mstatus |= mstatus::FS;
    }

    /// FP unit enabled (`mstatus.FS != Off`).
    #[inline]
    pub fn fs_on(&self) -> bool {
        self.mstatus & mstatus::FS != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fcsr`, `fflags` and `frm` are one state: a write of any keeps the other two in step.
    #[test]
    fn fcsr_views_stay_in_step() {
        let mut f = vec![0u64; 4096];
        shared::write_file(&mut f, num::FCSR, 0x1ff, Xlen::Rv64);
        assert_eq!(
            (
                f[num::FCSR as usize],
                f[num::FFLAGS as usize],
                f[num::FRM as usize]
            ),
            (0xff, 0x1f, 7)
        );
        shared::write_file(&mut f, num::FFLAGS, 0x3, Xlen::Rv64);
        assert_eq!((f[num::FCSR as usize], f[num::FFLAGS as usize]), (0xe3, 3));
        shared::write_file(&mut f, num::FRM, 0x2, Xlen::Rv64);
        assert_eq!((f[num::FCSR as usize], f[num::FRM as usize]), (0x43, 2));
        assert_eq!(
            shared::fcsr(shared::fflags_of(0x43), shared::frm_of(0x43)),
            0x43
        );
    }

    /// `sstatus` writes reach the `mstatus` bits it shows, SD included, and no others.
    #[test]
    fn sstatus_is_a_view_of_mstatus() {
        let mut f = vec![0u64; 4096];
        f[num::MSTATUS as usize] = mstatus::MIE | mstatus::MPP;
        shared::write_file(&mut f, num::SSTATUS, u64::MAX, Xlen::Rv64);
        let m = f[num::MSTATUS as usize];
        assert_eq!(
            m,
            mstatus::MIE | mstatus::MPP | mstatus::SSTATUS_BITS | 1 << 63
        );
        assert_eq!(f[num::SSTATUS as usize], u64::MAX);
        // RV32: no UXL, SD is bit 31.
        let v = shared::sstatus_view(Xlen::Rv32);
        assert_eq!(v & mstatus::UXL, 0);
        assert_ne!(v & 1 << 31, 0);
        // The hart's write keeps read-only bits (XS, UBE).
        let w = shared::mstatus_with_sstatus(0, u64::MAX, shared::sstatus_writable(Xlen::Rv64));
        assert_eq!(w & (mstatus::XS | mstatus::UBE), 0);
        assert_ne!(w & mstatus::SUM, 0);
    }

    /// `sie`/`sip` show and write only the delegated supervisor interrupts.
    #[test]
    fn sie_and_sip_are_views_through_mideleg() {
        let mut f = vec![0u64; 4096];
        f[num::MIDELEG as usize] = irq::SSI | irq::STI;
        f[num::MIE as usize] = irq::MTI;
        shared::write_file(&mut f, num::SIE, u64::MAX, Xlen::Rv64);
        assert_eq!(f[num::MIE as usize], irq::MTI | irq::SSI | irq::STI);
        assert_eq!(shared::sie_read(u64::MAX, irq::SSI), irq::SSI);
        assert_eq!(shared::sip_read(irq::SEI | irq::SSI, irq::SEI), irq::SEI);
        // Only SSIP (and LCOFIP) are writable through `sip`.
        let deleg = irq::SSI | irq::STI | irq::LCOFI;
        assert_eq!(
            shared::mip_with_sip(0, deleg, u64::MAX),
            irq::SSI | irq::LCOFI
        );
        assert_eq!(shared::mie_with_sie(0, 0, u64::MAX), 0);
    }

    /// A CSR number outside the file is ignored, not a panic.
    #[test]
    fn write_file_ignores_numbers_outside_the_file() {
        let mut f = vec![0u64; 8];
        shared::write_file(&mut f, num::SSTATUS, 1, Xlen::Rv64);
        shared::write_file(&mut f, num::FCSR, 0xff, Xlen::Rv64);
        assert_eq!(f[num::FFLAGS as usize], 0x1f);
    }
}
