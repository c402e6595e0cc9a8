//! Encoder parameters (`discovery.adoc`, tables `tab:iparameters` and `tab:requiredAttributes`) and
//! run-time options (`branchTrace.adoc`, "Optional and run-time configurable modes"; `payload.adoc`,
//! format 3 subformat 3 *ioptions*).
//!
//! [`Params`] fixes the layout of every `te_inst` packet: both ends of a trace must use the same
//! values. [`IOptions`] are the run-time modes, sent by the encoder in every support packet.

use crate::codec::CodecError;

/// The discovery parameters that shape `te_inst` packets (`discovery.adoc` `tab:iparameters`),
/// plus the implementation-defined widths of the support packet fields (`payload.adoc`, format 3
/// subformat 3: *encoder_mode* is E bits, *ioptions* N bits, *doptions* M bits).
///
/// Names are the spec's. Widths are in bits; `*_size_p` values are log2 of an entry count, 0 when
/// the feature is absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Params {
    /// `arch_p`: architecture version the encoder complies with (0 = initial).
    pub arch_p: u8,
    /// `bpred_size_p`: the branch predictor has 2^`bpred_size_p` entries (0 = none).
    pub bpred_size_p: u8,
    /// `cache_size_p`: the jump target cache has 2^`cache_size_p` entries (0 = none); also the
    /// width of the format 0 subformat 1 *index* field.
    pub cache_size_p: u8,
    /// `call_counter_size_p`: width of the implicit-return nested call counter (0 = none).
    pub call_counter_size_p: u8,
    /// `context_width_p`: width of the *context* field.
    pub context_width_p: u8,
    /// `time_width_p`: width of the *time* field.
    pub time_width_p: u8,
    /// `ecause_width_p`: width of the *ecause* field.
    pub ecause_width_p: u8,
    /// `f0s_width_p`: width of the format 0 *subformat* field (0 = omitted, inferred from the
    /// enabled option; `payload.adoc` `sec:f0s`).
    pub f0s_width_p: u8,
    /// `iaddress_lsb_p`: *address* fields hold the address shifted right by this.
    pub iaddress_lsb_p: u8,
    /// `iaddress_width_p`: width of instruction addresses (DXLEN); *tval* has this width.
    pub iaddress_width_p: u8,
    /// `nocontext_p`: *context* is omitted from `te_inst` packets.
    pub nocontext_p: bool,
    /// `notime_p`: *time* is omitted from `te_inst` packets.
    pub notime_p: bool,
    /// `privilege_width_p`: width of the *privilege* field.
    pub privilege_width_p: u8,
    /// `return_stack_size_p`: the implicit-return stack has 2^`return_stack_size_p` entries
    /// (0 = none).
    pub return_stack_size_p: u8,
    /// `sijump_p`: the hart identifies sequentially inferable jumps.
    pub sijump_p: bool,
    /// `itype_width_p`: 3 or 4 (ingress port; not part of any packet).
    pub itype_width_p: u8,
    /// E: width of *encoder_mode* in support packets (implementation defined; 1 in the reference
    /// flow).
    pub encoder_mode_width: u8,
    /// N: width of *ioptions* in support packets (implementation defined; see [`IOptions`]).
    pub ioptions_width: u8,
    /// M: width of *doptions* in support packets (implementation defined; 4 in the reference flow).
    pub doptions_width: u8,
}

impl Params {
    /// The reference flow's static configuration (`referenceFlow/tests/config_files/i_template.scf`
    /// as the conformance README lists it) for an address width of 32 or 64 bits:
    /// `iaddress_lsb_p=1, context_width_p=32, nocontext_p=0, time_width_p=1, notime_p=1,
    /// privilege_width_p=2, ecause_width_p=5`, every optional feature absent, `itype_width_p=4`.
    /// Support packets carry E=1, N=6, M=4 (see [`IOptions`] for N).
    pub const fn reference(iaddress_width_p: u8) -> Params {
        Params {
            arch_p: 0,
            bpred_size_p: 0,
            cache_size_p: 0,
            call_counter_size_p: 0,
            context_width_p: 32,
            time_width_p: 1,
            ecause_width_p: 5,
            f0s_width_p: 0,
            iaddress_lsb_p: 1,
            iaddress_width_p,
            nocontext_p: false,
            notime_p: true,
            privilege_width_p: 2,
            return_stack_size_p: 0,
            sijump_p: false,
            itype_width_p: 4,
            encoder_mode_width: 1,
            ioptions_width: IOptions::WIDTH,
            doptions_width: 4,
        }
    }

    /// rvtrace's own defaults for a hart with address width `iaddress_width_p`: like
    /// [`Params::reference`] but without *context* (`nocontext_p=1`), which the hart model does
    /// not report.
    pub const fn rvtrace(iaddress_width_p: u8) -> Params {
        let mut p = Params::reference(iaddress_width_p);
        p.nocontext_p = true;
        p
    }

    /// Width of *address* fields: `iaddress_width_p - iaddress_lsb_p`.
    pub const fn address_width(&self) -> u32 {
        self.iaddress_width_p as u32 - self.iaddress_lsb_p as u32
    }

    /// Width of *irdepth*: `return_stack_size_p + (return_stack_size_p > 0 ? 1 : 0) +
    /// call_counter_size_p` (`payload.adoc`, format 1/2 tables).
    pub const fn irdepth_width(&self) -> u32 {
        let rss = self.return_stack_size_p as u32;
        rss + if rss > 0 { 1 } else { 0 } + self.call_counter_size_p as u32
    }

    /// Width of *time* in `te_inst` packets (0 when `notime_p`).
    pub const fn time_width(&self) -> u32 {
        if self.notime_p {
            0
        } else {
            self.time_width_p as u32
        }
    }

    /// Width of *context* in `te_inst` packets (0 when `nocontext_p`).
    pub const fn context_width(&self) -> u32 {
        if self.nocontext_p {
            0
        } else {
            self.context_width_p as u32
        }
    }

    /// Check that every width is usable (fields up to 64 bits, an address wider than its
    /// dropped LSBs, `itype_width_p` 3 or 4, resources up to 2^16 entries).
    pub const fn validate(&self) -> Result<(), CodecError> {
        let w64 = [
            self.context_width_p,
            self.time_width_p,
            self.ecause_width_p,
            self.iaddress_width_p,
            self.privilege_width_p,
            self.encoder_mode_width,
            self.ioptions_width,
            self.doptions_width,
            self.f0s_width_p,
        ];
        let mut i = 0;
        while i < w64.len() {
            if w64[i] > 64 {
                return Err(CodecError::BadParams("a field width exceeds 64 bits"));
            }
            i += 1;
        }
        if self.iaddress_width_p == 0 || self.iaddress_lsb_p >= self.iaddress_width_p {
            return Err(CodecError::BadParams(
                "iaddress_lsb_p must be less than iaddress_width_p",
            ));
        }
        if self.iaddress_lsb_p > 2 {
            return Err(CodecError::BadParams("iaddress_lsb_p must be 0, 1 or 2"));
        }
        if self.itype_width_p != 3 && self.itype_width_p != 4 {
            return Err(CodecError::BadParams("itype_width_p must be 3 or 4"));
        }
        if self.cache_size_p > 16 || self.bpred_size_p > 16 || self.return_stack_size_p > 16 {
            return Err(CodecError::BadParams(
                "cache_size_p, bpred_size_p and return_stack_size_p must be at most 16",
            ));
        }
        if self.call_counter_size_p > 32 || self.irdepth_width() > 64 {
            return Err(CodecError::BadParams(
                "call_counter_size_p must be at most 32",
            ));
        }
        Ok(())
    }
}

/// The instruction trace run-time options, as rvtrace packs them into *ioptions*
/// (`payload.adoc` format 3 subformat 3: "an implementation specific set of individual bits").
///
/// Bits 0-4 are the reference flow's (`referenceFlow` `decoder-algorithm.h` `TE_OPTIONS_*`, as its
/// encoder and decoder models send and read them); bit 5 is rvtrace's addition. Reference-flow
/// support packets have *denable* where rvtrace reads bit 5, and the reference flow always sends
/// 0 there, so both read each other's support packets.
///
/// | bit | option |
/// |---|---|
/// | 0 | implicit return |
/// | 1 | implicit exception |
/// | 2 | full address |
/// | 3 | jump target cache |
/// | 4 | branch prediction |
/// | 5 | sequentially inferable jumps |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IOptions {
    /// Implicit return mode (`branchTrace.adoc` `sec:implicit-return`).
    pub implicit_return: bool,
    /// Implicit exception mode (`sec:implicit-exception`): F3 SF1 omits *address* when *thaddr*=1.
    pub implicit_exception: bool,
    /// Full address mode (`sec:full-address`).
    pub full_address: bool,
    /// Jump target cache mode (`sec:jump-cache`).
    pub jump_target_cache: bool,
    /// Branch prediction mode (`sec:branch-prediction`).
    pub branch_prediction: bool,
    /// Sequentially inferable jump mode (`sec:si-jump`).
    pub sijump: bool,
}

impl IOptions {
    /// Number of *ioptions* bits rvtrace sends.
    pub const WIDTH: u8 = 6;

    /// The *ioptions* field value.
    pub const fn to_bits(self) -> u64 {
        (self.implicit_return as u64)
            | (self.implicit_exception as u64) << 1
            | (self.full_address as u64) << 2
            | (self.jump_target_cache as u64) << 3
            | (self.branch_prediction as u64) << 4
            | (self.sijump as u64) << 5
    }

    /// Options from an *ioptions* field value (unknown bits are ignored).
    pub const fn from_bits(bits: u64) -> IOptions {
        IOptions {
            implicit_return: bits & 1 != 0,
            implicit_exception: bits & 2 != 0,
            full_address: bits & 4 != 0,
            jump_target_cache: bits & 8 != 0,
            branch_prediction: bits & 16 != 0,
            sijump: bits & 32 != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioptions_bits_round_trip() {
        for b in 0..64u64 {
            assert_eq!(IOptions::from_bits(b).to_bits(), b);
        }
        // Full address is bit 2: the reference flow's itype4_debug support packets carry 4.
        let fa = IOptions {
            full_address: true,
            ..IOptions::default()
        };
        assert_eq!(fa.to_bits(), 4);
    }

    #[test]
    fn widths() {
        let p = Params::reference(64);
        assert_eq!(p.address_width(), 63);
        assert_eq!(p.irdepth_width(), 0);
        assert_eq!(p.time_width(), 0);
        assert_eq!(p.context_width(), 32);
        let q = Params {
            return_stack_size_p: 3,
            ..p
        };
        assert_eq!(q.irdepth_width(), 4);
        let r = Params {
            call_counter_size_p: 9,
            ..p
        };
        assert_eq!(r.irdepth_width(), 9);
        assert!(p.validate().is_ok());
        assert!(Params {
            iaddress_lsb_p: 3,
            ..p
        }
        .validate()
        .is_err());
    }
}
