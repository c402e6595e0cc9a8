//! Writing code as an ELF file: the loadable segments of a memory snapshot (`rvtrace run
//! --code-snapshot`), which [`Image`](crate::Image) and other tools read back.

use crate::{Xlen, EF_RISCV_RVC, PF_R, PF_X};

/// `EM_RISCV`.
const EM_RISCV: u16 = 243;
/// `ET_EXEC`.
const ET_EXEC: u16 = 2;
/// `PT_LOAD`.
const PT_LOAD: u32 = 1;

/// An ELF executable (little-endian, `EM_RISCV`, ELF32 for RV32 and ELF64 for RV64) holding
/// `segments` (address and bytes, each a `PT_LOAD` at that virtual and physical address,
/// readable and executable), entered at `entry`, with no sections and no symbols. `rvc` sets
/// `EF_RISCV_RVC`. The segments must not overlap (the caller merges them).
pub fn elf_of(xlen: Xlen, entry: u64, rvc: bool, segments: &[(u64, &[u8])]) -> Vec<u8> {
    let is64 = xlen == Xlen::Rv64;
    let (ehsize, phentsize) = if is64 { (64u16, 56u16) } else { (52, 32) };
    let phoff = ehsize as u64;
    let mut data_at = phoff + phentsize as u64 * segments.len() as u64;
    let mut out = Vec::new();
    // e_ident: magic, class, data (LSB), version, OS ABI (System V), padding.
    out.extend_from_slice(b"\x7fELF");
    out.extend_from_slice(&[if is64 { 2 } else { 1 }, 1, 1, 0]);
    out.extend_from_slice(&[0; 8]);
    let word = |out: &mut Vec<u8>, v: u64| {
        if is64 {
            out.extend_from_slice(&v.to_le_bytes());
        } else {
            out.extend_from_slice(&(v as u32).to_le_bytes());
        }
    };
    out.extend_from_slice(&ET_EXEC.to_le_bytes());
    out.extend_from_slice(&EM_RISCV.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes()); // e_version
    word(&mut out, entry);
    word(&mut out, phoff);
    word(&mut out, 0); // e_shoff
    out.extend_from_slice(&(if rvc { EF_RISCV_RVC } else { 0 }).to_le_bytes());
    out.extend_from_slice(&ehsize.to_le_bytes());
    out.extend_from_slice(&phentsize.to_le_bytes());
    out.extend_from_slice(&(segments.len() as u16).to_le_bytes());
    out.extend_from_slice(&[0; 6]); // e_shentsize, e_shnum, e_shstrndx
    for (addr, bytes) in segments {
        let len = bytes.len() as u64;
        out.extend_from_slice(&PT_LOAD.to_le_bytes());
        if is64 {
            out.extend_from_slice(&(PF_R | PF_X).to_le_bytes());
        }
        word(&mut out, data_at); // p_offset
        word(&mut out, *addr); // p_vaddr
        word(&mut out, *addr); // p_paddr
        word(&mut out, len); // p_filesz
        word(&mut out, len); // p_memsz
        if !is64 {
            out.extend_from_slice(&(PF_R | PF_X).to_le_bytes());
        }
        word(&mut out, 1); // p_align
        data_at += len;
    }
    for (_, bytes) in segments {
        out.extend_from_slice(bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Image;

    #[test]
    fn read_back() {
        for xlen in [Xlen::Rv32, Xlen::Rv64] {
            let (a, b) = ([0x13u8, 0, 0, 0, 0x01, 0x00], [0x73u8, 0x00, 0x10, 0x00]);
            let elf = elf_of(xlen, 0x1000, true, &[(0x1000, &a), (0x8000_0000, &b)]);
            let mut image = Image::new();
            let info = image.load_bytes("snap", &elf).unwrap();
            assert_eq!(
                (info.xlen, info.entry, info.has_rvc()),
                (xlen, 0x1000, true)
            );
            assert_eq!(image.segments().len(), 2);
            assert_eq!(image.fetch(0x1000), Some(0x13));
            assert_eq!(image.read_u16(0x1004), Some(0x0001));
            assert_eq!(image.fetch(0x8000_0000), Some(0x0010_0073));
            assert!(image.segments().iter().all(|s| s.is_executable()));
        }
    }
}
