//! Writing code as an ELF core file: a memory snapshot (`rvtrace run --code-snapshot`), which
//! [`system::read_core`](crate::system::read_core) and other tools (binutils, gdb) read back.
//!
//! Each piece of code is a `PT_LOAD` segment at its virtual (and physical) address, readable
//! and executable. Pieces that belong to some address spaces only ([`Scope`]: a process's
//! code in user mode under its ASID) are listed in a note named `rvtrace` of type
//! [`NT_RVTRACE_SCOPES`], so that pieces of several processes at the same addresses can be
//! in one file: its description has 16 bytes per `PT_LOAD`, in their order: the privilege
//! (ingress encoding: 0 U, 1 S, 3 M; 0xff any), 1 if a context follows, six bytes of zero,
//! the context (64 bits, little-endian). A file without the note has every piece in every
//! space.

use crate::space::{Privilege, Scope};
use crate::{Xlen, EF_RISCV_RVC, PF_R, PF_X};

/// `EM_RISCV`.
const EM_RISCV: u16 = 243;
/// `ET_CORE`.
const ET_CORE: u16 = 4;
/// `PT_LOAD`.
const PT_LOAD: u32 = 1;
/// `PT_NOTE`.
const PT_NOTE: u32 = 4;
/// The owner of rvtrace's notes.
pub const NOTE_NAME: &[u8] = b"rvtrace";
/// The type of the note that gives each `PT_LOAD` segment its scope (module documentation).
pub const NT_RVTRACE_SCOPES: u32 = 1;
/// The bytes of one segment's entry in that note.
pub const SCOPE_ENTRY: usize = 16;

/// One piece of a snapshot: code at a virtual address, in the address spaces of `scope`.
#[derive(Clone, Copy, Debug)]
pub struct Piece<'a> {
    /// Where the code is.
    pub addr: u64,
    /// Its bytes.
    pub bytes: &'a [u8],
    /// Where it applies ([`Scope::default`]: everywhere).
    pub scope: Scope,
}

/// The scope note's entry of one segment (module documentation).
fn scope_entry(s: &Scope) -> [u8; SCOPE_ENTRY] {
    let mut e = [0u8; SCOPE_ENTRY];
    e[0] = match s.privilege {
        Some(Privilege::U) => 0,
        Some(Privilege::S) => 1,
        Some(Privilege::M) => 3,
        None => 0xff,
    };
    if let Some(c) = s.context {
        e[1] = 1;
        e[8..].copy_from_slice(&c.to_le_bytes());
    }
    e
}

/// The scope of a scope note's entry (module documentation); `None` if it is malformed.
pub fn read_scope_entry(e: &[u8]) -> Option<Scope> {
    let e: &[u8; SCOPE_ENTRY] = e.try_into().ok()?;
    let privilege = match e[0] {
        0xff => None,
        p => Some(Privilege::from_ingress(p)?),
    };
    let context = match e[1] {
        0 => None,
        1 => Some(u64::from_le_bytes(e[8..].try_into().ok()?)),
        _ => return None,
    };
    Some(Scope { privilege, context })
}

/// An ELF core file (little-endian, `EM_RISCV`, ELF32 for RV32 and ELF64 for RV64) holding
/// `pieces`, each a `PT_LOAD` segment (module documentation), with the scope note when a piece
/// has a scope. `rvc` sets `EF_RISCV_RVC`. Pieces of one scope must not overlap (the caller
/// merges them).
pub fn core_of(xlen: Xlen, rvc: bool, pieces: &[Piece]) -> Vec<u8> {
    let is64 = xlen == Xlen::Rv64;
    let (ehsize, phentsize) = if is64 { (64u16, 56u16) } else { (52, 32) };
    let note: Option<Vec<u8>> = pieces.iter().any(|p| !p.scope.is_everywhere()).then(|| {
        let desc: Vec<u8> = pieces.iter().flat_map(|p| scope_entry(&p.scope)).collect();
        let mut n = Vec::new();
        n.extend_from_slice(&(NOTE_NAME.len() as u32 + 1).to_le_bytes());
        n.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        n.extend_from_slice(&NT_RVTRACE_SCOPES.to_le_bytes());
        n.extend_from_slice(NOTE_NAME);
        n.push(0); // "rvtrace\0": 8 bytes, a multiple of 4
        n.extend_from_slice(&desc);
        n
    });
    let headers = pieces.len() + usize::from(note.is_some());
    let phoff = ehsize as u64;
    let mut data_at = phoff + phentsize as u64 * headers as u64;
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
    out.extend_from_slice(&ET_CORE.to_le_bytes());
    out.extend_from_slice(&EM_RISCV.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes()); // e_version
    word(&mut out, 0); // e_entry
    word(&mut out, phoff);
    word(&mut out, 0); // e_shoff
    out.extend_from_slice(&(if rvc { EF_RISCV_RVC } else { 0 }).to_le_bytes());
    out.extend_from_slice(&ehsize.to_le_bytes());
    out.extend_from_slice(&phentsize.to_le_bytes());
    out.extend_from_slice(&(headers as u16).to_le_bytes());
    out.extend_from_slice(&[0; 6]); // e_shentsize, e_shnum, e_shstrndx
    let mut header = |out: &mut Vec<u8>, kind: u32, flags: u32, addr: u64, len: u64, align| {
        out.extend_from_slice(&kind.to_le_bytes());
        if is64 {
            out.extend_from_slice(&flags.to_le_bytes());
        }
        word(out, data_at); // p_offset
        word(out, addr); // p_vaddr
        word(out, addr); // p_paddr
        word(out, len); // p_filesz
        word(out, if kind == PT_LOAD { len } else { 0 }); // p_memsz
        if !is64 {
            out.extend_from_slice(&flags.to_le_bytes());
        }
        word(out, align); // p_align
        data_at += len;
    };
    if let Some(n) = &note {
        header(&mut out, PT_NOTE, 0, 0, n.len() as u64, 4);
    }
    for p in pieces {
        header(
            &mut out,
            PT_LOAD,
            PF_R | PF_X,
            p.addr,
            p.bytes.len() as u64,
            1,
        );
    }
    if let Some(n) = &note {
        out.extend_from_slice(n);
    }
    for p in pieces {
        out.extend_from_slice(p.bytes);
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
            let piece = |addr, bytes| Piece {
                addr,
                bytes,
                scope: Scope::default(),
            };
            let elf = core_of(xlen, true, &[piece(0x1000, &a), piece(0x8000_0000, &b)]);
            assert!(crate::system::is_core(&elf));
            let mut image = Image::new();
            let info = image.load_bytes("snap", &elf).unwrap();
            assert_eq!((info.xlen, info.has_rvc()), (xlen, true));
            assert_eq!(image.segments().len(), 2);
            assert_eq!(image.fetch(0x1000), Some(0x13));
            assert_eq!(image.read_u16(0x1004), Some(0x0001));
            assert_eq!(image.fetch(0x8000_0000), Some(0x0010_0073));
            assert!(image.segments().iter().all(|s| s.is_executable()));
            let core = crate::system::read_core(&elf).unwrap();
            let got: Vec<(u64, usize, Scope)> = core
                .memory
                .iter()
                .map(|m| (m.addr, m.data.len(), m.scope))
                .collect();
            assert_eq!(
                got,
                [
                    (0x1000, 6, Scope::default()),
                    (0x8000_0000, 4, Scope::default())
                ]
            );
        }
    }

    #[test]
    fn scopes_read_back() {
        // Two processes' code at one address, a kernel's, and code of every space.
        let (u1, u2, k, all) = ([0x01u8, 0x00], [0x01u8, 0xa0], [0x13u8, 0, 0, 0], [1u8, 0]);
        let scope = |privilege, context| Scope { privilege, context };
        let pieces = [
            Piece {
                addr: 0x10000,
                bytes: &u1,
                scope: scope(Some(Privilege::U), Some(7)),
            },
            Piece {
                addr: 0x10000,
                bytes: &u2,
                scope: scope(Some(Privilege::U), Some(u64::MAX)),
            },
            Piece {
                addr: 0xffff_ffff_8000_0000,
                bytes: &k,
                scope: scope(Some(Privilege::S), None),
            },
            Piece {
                addr: 0x8000_0000,
                bytes: &all,
                scope: Scope::default(),
            },
        ];
        let core = crate::system::read_core(&core_of(Xlen::Rv64, true, &pieces)).unwrap();
        assert_eq!(core.memory.len(), 4);
        for (m, p) in core.memory.iter().zip(&pieces) {
            assert_eq!(
                (m.addr, m.data.as_slice(), m.scope),
                (p.addr, p.bytes, p.scope)
            );
        }
        for bad in [[2u8; 16], {
            let mut e = [0u8; 16];
            e[1] = 2;
            e
        }] {
            assert_eq!(read_scope_entry(&bad), None);
        }
    }
}
