//! The `xctrctl` field positions of CTR v1.0 ("Machine Control Transfer Records Control
//! Register" diagram: U 0, S 1, M 2, RASEMU 7, STE 8, MTE 9, BPFRZ 11, LCOFIFRZ 12, WPRI 13..32,
//! EXCINH 33 .. TKBRINH 37, WPRI 38..39, INDCALLINH 40 .. DIRLJMPINH 47): the filter bit of
//! transfer type T is bit 32 + T, as "Transfer Type Filtering" and QEMU 10 (`programs/ctr_m`,
//! `ctr_su`) have it.

use rvtrace_ctr::{ctl, ty};

#[test]
fn filter_bit_of_type_t_is_bit_32_plus_t() {
    for t in (1u8..=15).filter(|t| !matches!(t, 6 | 7)) {
        assert_eq!(ty::filter_bit(t), 1 << (32 + t as u32), "type {t}");
    }
    assert_eq!(ty::filter_bit(6), 0);
    assert_eq!(ty::filter_bit(7), 0);
}

#[test]
fn control_masks_follow_the_register_diagrams() {
    assert_eq!(ctl::MCTRCTL_MASK, 0x0000_ff3e_0000_1b87);
    assert_eq!(ctl::SCTRCTL_MASK, 0x0000_ff3e_0000_1983);
    assert_eq!(ctl::NTBREN, 1 << 36);
    assert_eq!(ctl::EXCINH, 1 << 33);
    assert_eq!(ctl::DIRLJMPINH, 1 << 47);
}
