//! Instruction length from the first 16-bit parcel.
//!
//! RISC-V Unprivileged ISA, "Expanded Instruction-Length Encoding" (the figure "RISC-V instruction
//! length encoding"), applied to the lowest-addressed parcel:
//!
//! | parcel bits                      | length            |
//! |----------------------------------|-------------------|
//! | `[1:0] != 11`                    | 16-bit            |
//! | `[1:0] == 11`, `[4:2] != 111`    | 32-bit            |
//! | `[5:0] == 011111`                | 48-bit            |
//! | `[6:0] == 0111111`               | 64-bit            |
//! | `[6:0] == 1111111`, `[14:12] = nnn != 111` | (80 + 16*nnn)-bit |
//! | `[6:0] == 1111111`, `[14:12] == 111`       | reserved for >= 192-bit |

/// Length in bytes of the instruction whose first (lowest-addressed) 16-bit parcel is `first_parcel`.
///
/// Returns 2, 4, 6 or 8 for the standard 16/32/48/64-bit encodings. For the `[6:0] == 1111111`
/// prefix the length the ISA manual's length-encoding figure implies is returned: `10 + 2*nnn`
/// bytes (80..=176 bits) where `nnn = [14:12]`, and **0** for `nnn == 111` (reserved for >= 192-bit
/// encodings, whose length is not defined). Callers advancing a pc must treat 0 as "unknown length".
/// Never panics.
pub const fn insn_len(first_parcel: u16) -> usize {
    let p = first_parcel;
    if p & 0b11 != 0b11 {
        2
    } else if p & 0b1_1100 != 0b1_1100 {
        4
    } else if p & 0b10_0000 == 0 {
        // [5:0] == 011111
        6
    } else if p & 0b100_0000 == 0 {
        // [6:0] == 0111111
        8
    } else {
        // [6:0] == 1111111
        let nnn = ((p >> 12) & 0b111) as usize;
        if nnn == 0b111 {
            0
        } else {
            10 + 2 * nnn
        }
    }
}

/// The ingress-port `ilastsize` for an instruction of `len_bytes` bytes: the size is
/// 2^`ilastsize` half-words (E-Trace `ingressPort.adoc`, "Instruction interface signals").
///
/// `None` when the length is not a power-of-two number of half-words (e.g. 48-bit instructions,
/// or 0).
pub const fn ilastsize(len_bytes: usize) -> Option<u8> {
    if len_bytes < 2 || len_bytes & 1 != 0 {
        return None;
    }
    let halfwords = len_bytes / 2;
    if halfwords.is_power_of_two() {
        Some(halfwords.trailing_zeros() as u8)
    } else {
        None
    }
}
