//! Appendix C of `tandem-trace-protocol-2018.txt` ("Examples", an rv64gc hart with Sv48:
//! XLEN = FLEN = MLEN = 64): every table's bytes, exactly as printed, decode to the records the
//! table's "Meaning" column names, and the records encode back to those bytes.
//!
//! The appendix spells the pc's additional-state identifier `10` (0x10) where chapter 2's table
//! numbers it 10 (0x0a); the encoder writes the appendix's spelling when asked
//! (`Params::pc_ident`), so these tables are reproduced byte for byte. Table C.5 writes opcode
//! `10` (16-bit instruction) before a 32-bit instruction: those bytes decode to the 32-bit
//! instruction, and the encoder writes opcode `11` (chapter 2: 17, 32-bit instruction) there.
//! Table C.4's register address bytes name x16 where its text says a0 (see the test).

use rvtrace_tandem::codec::{
    decode_all, encode_all, reg, state, AddlState, Params, Record, Record::*,
};

const APPENDIX: Params = Params {
    xlen: 64,
    flen: 64,
    mlen: 64,
    pc_ident: state::PC_APPENDIX,
};

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn check(table: &str, bytes: &str, records: &[Record]) {
    let bytes = hex(bytes);
    assert_eq!(
        decode_all(&bytes, &APPENDIX).unwrap(),
        records,
        "table {table}: decoding"
    );
    assert_eq!(
        encode_all(records, &APPENDIX),
        bytes,
        "table {table}: encoding"
    );
}

#[test]
fn c1_add_gp_t0_t1() {
    check(
        "C.1",
        "01 03 11 b3 81 62 00 04 03 10 34 12 00 00 00 00 00 00 02",
        &[
            BeginGroup,
            IncrPc,
            Insn32(0x0062_81b3),
            FullReg {
                addr: reg::gpr(3),
                value: 0x1234,
            },
            EndGroup,
        ],
    );
}

#[test]
fn c2_jr_256_sp() {
    check(
        "C.2",
        "01 07 10 00 01 00 0c 00 00 00 00 11 67 00 01 10 02",
        &[
            BeginGroup,
            State(AddlState::Pc(0x0c00_0100)),
            Insn32(0x1001_0067),
            EndGroup,
        ],
    );
}

#[test]
fn c3_fadd_s_ft7_fa3_fa7() {
    check(
        "C.3",
        "01 03 11 d3 f3 16 01 04 27 10 f9 f4 fe 66 ff ff ff ff 06 03 00 01 02",
        &[
            BeginGroup,
            IncrPc,
            Insn32(0x0116_f3d3),
            FullReg {
                addr: reg::fpr(7),
                value: 0xffff_ffff_66fe_f4f9,
            },
            IncrRegOr {
                addr: reg::FCSR,
                mask: 0x01,
            },
            EndGroup,
        ],
    );
}

/// The table's meaning column says "a0 (x10)", but the address bytes it prints, `10 10`, are
/// 0x1010, which is x16 (a6) in the Debug Specification's numbering (x10 would be `0a 10`): the
/// same decimal-for-hexadecimal slip as the pc identifier. The bytes are what is tested.
#[test]
fn c4_c_sub_a0_a1() {
    check(
        "C.4",
        "01 03 10 0d 8d 04 10 10 78 56 34 12 ff ff ff ff 02",
        &[
            BeginGroup,
            IncrPc,
            Insn16(0x8d0d),
            FullReg {
                addr: 0x1010,
                value: 0xffff_ffff_1234_5678,
            },
            EndGroup,
        ],
    );
}

#[test]
fn c5_lw_tp_8_t0() {
    let printed =
        "01 03 10 03 a2 82 00 04 04 10 aa 55 aa 55 aa 55 aa 55 07 02 08 00 00 01 00 00 00 00 02";
    let records = [
        BeginGroup,
        IncrPc,
        Insn32(0x0082_a203),
        FullReg {
            addr: reg::gpr(4),
            value: 0x55aa_55aa_55aa_55aa,
        },
        State(AddlState::Paddr(0x0100_0008)),
        EndGroup,
    ];
    // The printed bytes decode as the table means them ...
    assert_eq!(decode_all(&hex(printed), &APPENDIX).unwrap(), records);
    // ... and encode with the 32-bit instruction opcode (17 = 0x11) in place of the printed 0x10.
    let mut fixed = hex(printed);
    assert_eq!(fixed[2], 0x10);
    fixed[2] = 0x11;
    assert_eq!(encode_all(&records, &APPENDIX), fixed);
    assert_eq!(decode_all(&fixed, &APPENDIX).unwrap(), records);
}

#[test]
fn c6_csrrc_s1_mie_a1() {
    check(
        "C.6",
        "01 03 11 f3 b4 45 30 04 09 10 88 08 00 00 00 00 00 00 04 04 03 80 08 00 00 00 00 00 00 02",
        &[
            BeginGroup,
            IncrPc,
            Insn32(0x3045_b4f3),
            FullReg {
                addr: reg::gpr(9),
                value: 0x888,
            },
            FullReg {
                addr: 0x304,
                value: 0x880,
            },
            EndGroup,
        ],
    );
}

#[test]
fn c7_illegal_instruction() {
    check(
        "C.7",
        "01 07 10 00 00 01 00 00 00 00 00 11 00 00 00 00 \
         04 41 03 34 12 08 00 00 00 00 00 04 42 03 02 00 00 00 00 00 00 00 \
         04 00 03 b0 18 00 00 0a 00 00 00 04 43 03 00 00 00 00 00 00 00 00 07 01 03 02",
        &[
            BeginGroup,
            State(AddlState::Pc(0x1_0000)),
            Insn32(0),
            FullReg {
                addr: 0x341,
                value: 0x8_1234,
            },
            FullReg {
                addr: 0x342,
                value: 2,
            },
            FullReg {
                addr: 0x300,
                value: 0xa_0000_18b0,
            },
            FullReg {
                addr: 0x343,
                value: 0,
            },
            State(AddlState::Priv(3)),
            EndGroup,
        ],
    );
}

#[test]
fn c8_interrupt() {
    check(
        "C.8",
        "01 07 10 00 00 01 00 00 00 00 00 \
         04 41 03 56 12 08 00 00 00 00 00 04 42 03 03 00 00 00 00 00 00 80 \
         04 00 03 b0 18 00 00 0a 00 00 00 04 43 03 00 00 00 00 00 00 00 00 07 01 03 02",
        &[
            BeginGroup,
            State(AddlState::Pc(0x1_0000)),
            FullReg {
                addr: 0x341,
                value: 0x8_1256,
            },
            FullReg {
                addr: 0x342,
                value: 0x8000_0000_0000_0003,
            },
            FullReg {
                addr: 0x300,
                value: 0xa_0000_18b0,
            },
            FullReg {
                addr: 0x343,
                value: 0,
            },
            State(AddlState::Priv(3)),
            EndGroup,
        ],
    );
}

/// With chapter 2's identifier (the default), only the pc's identifier byte changes.
#[test]
fn pc_identifier_of_chapter_2() {
    let appendix = hex("01 07 10 00 01 00 0c 00 00 00 00 11 67 00 01 10 02");
    let records = decode_all(&appendix, &APPENDIX).unwrap();
    let table = encode_all(&records, &Params::RV64);
    assert_eq!(table[2], 0x0a);
    assert_eq!(&table[..2], &appendix[..2]);
    assert_eq!(&table[3..], &appendix[3..]);
    assert_eq!(decode_all(&table, &Params::RV64).unwrap(), records);
}
