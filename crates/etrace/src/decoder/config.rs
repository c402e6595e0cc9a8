//! What the decoder is told: [`DecoderConfig`] and the [`Limits`] on garbage input.

use rvtrace_isa::IsaConfig;

use crate::codec::Framing;
use crate::config::{Preset, TraceConfig};
use crate::params::{IOptions, Params};

/// Limits that keep garbage input from running long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most jumps followed without consuming any branch or reaching the packet's address.
    pub max_jumps_per_packet: u64,
    /// Most instructions reported for one packet (`u64::MAX`: no limit).
    pub max_insns_per_packet: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_jumps_per_packet: 1 << 22,
            max_insns_per_packet: u64::MAX,
        }
    }
}

/// Everything the E-Trace decoder is told: what the trace does not carry (the packet layout,
/// the starting run-time options, the framing), the ISA of the traced hart, and where the decoder
/// follows the reference flow instead of the specification ([`DecoderConfig::reference_flow`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecoderConfig {
    /// Packet layout (discovery parameters).
    pub params: Params,
    /// Run-time options at the start (support packets replace them).
    pub options: IOptions,
    /// How packets are framed in the byte stream.
    pub framing: Framing,
    /// ISA of the traced hart (XLEN, Zcmp, Zcmt) for the block table.
    pub isa: IsaConfig,
    /// Resource limits.
    pub limits: Limits,
    /// Keep the return address stack across synchronisation packets (the reference flow's
    /// encoder in implicit return mode never reports a return, even after a resync; see the
    /// crate README). Off by default (`decoder.adoc` empties it at every sync).
    pub keep_stack_across_syncs: bool,
    /// Classify `c.jr x5` as the reference flow does: `post-iss` reports it as an other
    /// uninferable jump (itype 14), so the reference encoder reports its target even in implicit
    /// return mode, where the spec (`ingressPort.adoc`, jump classes) calls it a return. Such a
    /// jump is then followed to the reported address, and pops the return address stack only if
    /// it goes to the top entry (millicode `jal t0` ... `jr t0`). Off by default.
    pub reference_x5_jumps: bool,
    /// Decode only the packets of this *srcID* (the encapsulation's source field,
    /// `e-trace-specifics.adoc`: one hart of a trace of several; [`crate::scan::sources`] lists
    /// them); `None`: every packet (a single source).
    pub src: Option<u16>,
}

impl DecoderConfig {
    /// The specification's decoder for a trace made with rvtrace's defaults (`rvtrace encode
    /// etrace` without options: [`Preset::Rvtrace`]'s parameters for the address width of
    /// `isa.xlen`, no optional mode, its framing) of a hart with `isa`.
    pub fn new(isa: IsaConfig) -> Self {
        let preset = Preset::Rvtrace;
        DecoderConfig::with_layout(
            preset.params(isa.xlen.bits() as u8),
            IOptions::default(),
            preset.framing(),
            isa,
        )
    }

    /// The specification's decoder for a trace laid out per `params`, starting with `options`,
    /// framed as `framing`, of a hart with `isa`.
    pub fn with_layout(
        params: Params,
        options: IOptions,
        framing: Framing,
        isa: IsaConfig,
    ) -> Self {
        DecoderConfig {
            params,
            options,
            framing,
            isa,
            limits: Limits::default(),
            keep_stack_across_syncs: false,
            reference_x5_jumps: false,
            src: None,
        }
    }

    /// The decoder for traces made with `cfg` (as `rvtrace encode etrace` makes them): its
    /// parameters, options and framing, and the reference flow's quirks when `cfg.preset` is
    /// [`Preset::Reference`].
    pub fn from_config(cfg: &TraceConfig, isa: IsaConfig) -> Self {
        let o = DecoderConfig {
            src: cfg.srcid,
            ..DecoderConfig::with_layout(cfg.params, cfg.options, cfg.framing, isa)
        };
        match cfg.preset {
            Preset::Reference => o.reference_flow(),
            Preset::Rvtrace => o,
        }
    }

    /// The reference flow's decoder quirks (`--preset reference`): the return address stack is
    /// kept across synchronisation packets and `c.jr x5` is an other uninferable jump.
    pub const fn reference_flow(mut self) -> Self {
        self.keep_stack_across_syncs = true;
        self.reference_x5_jumps = true;
        self
    }
}

/// Entries the decoder's return address stack keeps (the encoder's: `return_stack_size_p`, or
/// the call counter's range).
pub(super) fn stack_max(p: &Params) -> usize {
    if p.return_stack_size_p > 0 {
        1 << p.return_stack_size_p
    } else if p.call_counter_size_p > 0 {
        (1usize << p.call_counter_size_p.min(24)) - 1
    } else {
        // Implicit return without a stack or counter size: the reference flow's encoder in
        // implicit return mode never reports returns (it keeps no stack), so the decoder's
        // stack must not lose entries.
        usize::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigInputs;

    /// `DecoderConfig::new` decodes what the encoder makes with its defaults, the address
    /// width given once (by the ISA).
    #[test]
    fn new_is_the_default_encoders() {
        for isa in [IsaConfig::rv32(), IsaConfig::rv64()] {
            let inputs = ConfigInputs {
                xlen_bits: isa.xlen.bits() as u8,
                ..ConfigInputs::default()
            };
            let cfg = TraceConfig::build(&inputs).unwrap();
            assert_eq!(
                DecoderConfig::new(isa),
                DecoderConfig::from_config(&cfg, isa)
            );
            assert_eq!(
                DecoderConfig::new(isa).params.iaddress_width_p as u32,
                isa.xlen.bits()
            );
        }
    }
}
