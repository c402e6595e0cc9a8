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
    /// How *ioptions* packs the run-time options (implementation defined, see [`OptionsLayout`]).
    pub options_layout: OptionsLayout,
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
            options_layout: OptionsLayout::Rvtrace,
        }
    }

    /// These parameters with the support-packet fields of `layout`: *encoder_mode*, *ioptions*
    /// and *doptions* widths as that encoder sends them (see [`OptionsLayout`]).
    pub const fn with_options_layout(mut self, layout: OptionsLayout) -> Params {
        self.options_layout = layout;
        match layout {
            OptionsLayout::Rvtrace => {
                self.encoder_mode_width = 1;
                self.ioptions_width = IOptions::WIDTH;
                self.doptions_width = 4;
            }
            OptionsLayout::Pulp => {
                self.encoder_mode_width = 1;
                self.ioptions_width = 7;
                self.doptions_width = 0;
            }
        }
        self
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

/// How a support packet's *ioptions* packs the run-time options (`payload.adoc` format 3
/// subformat 3: "an implementation specific set of individual bits"), and the widths of
/// *encoder_mode*, *ioptions* and *doptions* that go with it.
///
/// | bit | [`Rvtrace`](OptionsLayout::Rvtrace) (E=1, N=6, M=4) | [`Pulp`](OptionsLayout::Pulp) (E=1, N=7, M=0) |
/// |---|---|---|
/// | 0 | implicit return | jump target cache |
/// | 1 | implicit exception | branch prediction |
/// | 2 | full address | implicit return |
/// | 3 | jump target cache | sequentially inferable jumps |
/// | 4 | branch prediction | implicit exception |
/// | 5 | sequentially inferable jumps | full address |
/// | 6 | | delta address (the complement of bit 5) |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OptionsLayout {
    /// rvtrace's: bits 0-4 are the reference flow's (`referenceFlow` `decoder-algorithm.h`
    /// `TE_OPTIONS_*`, as its encoder and decoder models send and read them); bit 5 is rvtrace's
    /// addition. Reference-flow support packets have *denable* where rvtrace reads bit 5, and the
    /// reference flow always sends 0 there, so both read each other's support packets.
    #[default]
    Rvtrace,
    /// The PULP platform's `rv_tracer` (ETH Zurich / University of Bologna), as the independent
    /// `riscv-etrace` crate (0.10, `PULPIOptions`) reads and writes it: 7 *ioptions* bits, no
    /// *doptions*. Bit 6 says delta addresses, so exactly one of bits 5 and 6 is set; a packet
    /// with both or neither is refused ([`crate::CodecError::Inconsistent`]).
    Pulp,
}

impl OptionsLayout {
    /// The layout's name on the command line and in sidecars.
    pub const fn name(self) -> &'static str {
        match self {
            OptionsLayout::Rvtrace => "rvtrace",
            OptionsLayout::Pulp => "pulp",
        }
    }

    /// The layout called `name` ([`OptionsLayout::name`]).
    pub fn from_name(name: &str) -> Option<OptionsLayout> {
        [OptionsLayout::Rvtrace, OptionsLayout::Pulp]
            .into_iter()
            .find(|l| l.name() == name)
    }

    /// Why an *ioptions* value cannot be of this layout, if it cannot.
    pub const fn check(self, bits: u64) -> Result<(), &'static str> {
        match self {
            OptionsLayout::Rvtrace => Ok(()),
            OptionsLayout::Pulp => {
                if (bits >> 5) & 1 == (bits >> 6) & 1 {
                    Err("PULP ioptions: exactly one of full_address (bit 5) and delta_address (bit 6) must be set")
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// The instruction trace run-time options a support packet's *ioptions* carries, in the bit
/// order of an [`OptionsLayout`].
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
    /// Number of *ioptions* bits rvtrace sends ([`OptionsLayout::Rvtrace`]).
    pub const WIDTH: u8 = 6;

    /// Each option's bit in `layout` (see [`OptionsLayout`]): implicit return, implicit
    /// exception, full address, jump target cache, branch prediction, sequentially inferable
    /// jumps.
    const fn positions(layout: OptionsLayout) -> [u32; 6] {
        match layout {
            OptionsLayout::Rvtrace => [0, 1, 2, 3, 4, 5],
            OptionsLayout::Pulp => [2, 4, 5, 0, 1, 3],
        }
    }

    /// The *ioptions* field value in `layout`.
    pub const fn to_field(self, layout: OptionsLayout) -> u64 {
        let [ir, ie, fa, jtc, bp, sj] = IOptions::positions(layout);
        let mut v = (self.implicit_return as u64) << ir
            | (self.implicit_exception as u64) << ie
            | (self.full_address as u64) << fa
            | (self.jump_target_cache as u64) << jtc
            | (self.branch_prediction as u64) << bp
            | (self.sijump as u64) << sj;
        if let OptionsLayout::Pulp = layout {
            v |= (!self.full_address as u64) << 6;
        }
        v
    }

    /// Options from an *ioptions* field value in `layout` (other bits are ignored; a PULP
    /// value's bit 6 is checked by the packet reader, [`OptionsLayout::check`]).
    pub const fn from_field(bits: u64, layout: OptionsLayout) -> IOptions {
        let [ir, ie, fa, jtc, bp, sj] = IOptions::positions(layout);
        IOptions {
            implicit_return: (bits >> ir) & 1 != 0,
            implicit_exception: (bits >> ie) & 1 != 0,
            full_address: (bits >> fa) & 1 != 0,
            jump_target_cache: (bits >> jtc) & 1 != 0,
            branch_prediction: (bits >> bp) & 1 != 0,
            sijump: (bits >> sj) & 1 != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioptions_bits_round_trip() {
        let (rv, pulp) = (OptionsLayout::Rvtrace, OptionsLayout::Pulp);
        for b in 0..64u64 {
            assert_eq!(IOptions::from_field(b, rv).to_field(rv), b);
            // PULP: bit 6 is bit 5's complement.
            let p = b | (!b >> 5 & 1) << 6;
            assert_eq!(IOptions::from_field(p, pulp).to_field(pulp), p);
            assert!(pulp.check(p).is_ok() && pulp.check(p ^ 64).is_err());
        }
        // Full address is bit 2: the reference flow's itype4_debug support packets carry 4.
        let fa = IOptions {
            full_address: true,
            ..IOptions::default()
        };
        assert_eq!(fa.to_field(rv), 4);
        // PULP (riscv-etrace's PULPIOptions, read bit 0 first): jtc, bpred, implicit return,
        // sijump, implicit exception, full address, delta address.
        assert_eq!(fa.to_field(pulp), 0b010_0000);
        assert_eq!(IOptions::default().to_field(pulp), 0b100_0000);
        let ir = IOptions {
            implicit_return: true,
            jump_target_cache: true,
            ..IOptions::default()
        };
        assert_eq!(ir.to_field(pulp), 0b100_0101);
        for l in [rv, pulp] {
            assert_eq!(OptionsLayout::from_name(l.name()), Some(l));
        }
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
