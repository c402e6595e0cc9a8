//! Test helper: writes small synthetic little-endian ELF files.
#![allow(dead_code)]

/// One `PT_LOAD` segment to write.
#[derive(Clone)]
pub struct Seg {
    pub vaddr: u64,
    pub paddr: u64,
    pub data: Vec<u8>,
    pub memsz: u64,
    pub flags: u32,
}

impl Seg {
    /// Segment with `paddr == vaddr` and `memsz == data.len()`, flags R+X.
    pub fn new(vaddr: u64, data: Vec<u8>) -> Self {
        let memsz = data.len() as u64;
        Seg {
            vaddr,
            paddr: vaddr,
            data,
            memsz,
            flags: 5,
        }
    }
}

/// One symbol to write.
#[derive(Clone)]
pub struct Sym {
    pub name: String,
    pub value: u64,
    pub size: u64,
    /// `st_info`: type | bind << 4.
    pub info: u8,
    pub shndx: u16,
}

pub const STT_NOTYPE: u8 = 0;
pub const STT_OBJECT: u8 = 1;
pub const STT_FUNC: u8 = 2;
pub const STT_SECTION: u8 = 3;
pub const STT_FILE: u8 = 4;
pub const STB_LOCAL: u8 = 0;
pub const STB_GLOBAL: u8 = 1;

impl Sym {
    pub fn new(name: &str, value: u64, size: u64, ty: u8, bind: u8) -> Self {
        Sym {
            name: name.to_string(),
            value,
            size,
            info: ty | bind << 4,
            shndx: 1,
        }
    }
}

/// Description of a synthetic ELF file.
#[derive(Clone)]
pub struct ElfBuilder {
    pub is64: bool,
    pub machine: u16,
    pub entry: u64,
    pub flags: u32,
    pub segs: Vec<Seg>,
    pub syms: Vec<Sym>,
}

/// Result of [`ElfBuilder::build`], with the offsets tests may want to corrupt.
pub struct Built {
    pub bytes: Vec<u8>,
    pub phoff: usize,
    pub shoff: usize,
    pub seg_offsets: Vec<usize>,
    pub symtab_off: usize,
    pub strtab_off: usize,
}

fn put(v: &mut Vec<u8>, is64: bool, x: u64) {
    if is64 {
        v.extend_from_slice(&x.to_le_bytes());
    } else {
        v.extend_from_slice(&(x as u32).to_le_bytes());
    }
}
fn put16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn put32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}

impl ElfBuilder {
    pub fn new(is64: bool) -> Self {
        ElfBuilder {
            is64,
            machine: 243,
            entry: 0x8000_0000,
            flags: 5,
            segs: Vec::new(),
            syms: Vec::new(),
        }
    }

    pub fn seg(mut self, s: Seg) -> Self {
        self.segs.push(s);
        self
    }

    pub fn sym(mut self, s: Sym) -> Self {
        self.syms.push(s);
        self
    }

    /// Layout: ehdr, phdrs, segment data, symtab, strtab, shstrtab, shdrs
    /// (sections: null, .symtab, .strtab, .shstrtab).
    pub fn build(&self) -> Built {
        let is64 = self.is64;
        let (ehsize, phentsize, shentsize, symsize) = if is64 {
            (64, 56, 64, 24)
        } else {
            (52, 32, 40, 16)
        };
        let phoff = ehsize;
        let mut off = phoff + phentsize * self.segs.len();
        let mut seg_offsets = Vec::new();
        for s in &self.segs {
            seg_offsets.push(off);
            off += s.data.len();
        }
        // String table and symbol table.
        let mut strtab = vec![0u8];
        let mut symtab = vec![0u8; symsize]; // null symbol
        for s in &self.syms {
            let name_off = strtab.len() as u32;
            strtab.extend_from_slice(s.name.as_bytes());
            strtab.push(0);
            if is64 {
                put32(&mut symtab, name_off);
                symtab.push(s.info);
                symtab.push(0);
                put16(&mut symtab, s.shndx);
                put(&mut symtab, true, s.value);
                put(&mut symtab, true, s.size);
            } else {
                put32(&mut symtab, name_off);
                put(&mut symtab, false, s.value);
                put(&mut symtab, false, s.size);
                symtab.push(s.info);
                symtab.push(0);
                put16(&mut symtab, s.shndx);
            }
        }
        let shstrtab = b"\0.symtab\0.strtab\0.shstrtab\0".to_vec();
        let symtab_off = off;
        let strtab_off = symtab_off + symtab.len();
        let shstrtab_off = strtab_off + strtab.len();
        let shoff = shstrtab_off + shstrtab.len();

        let mut v = Vec::new();
        v.extend_from_slice(&[0x7f, b'E', b'L', b'F', if is64 { 2 } else { 1 }, 1, 1, 0]);
        v.extend_from_slice(&[0; 8]);
        put16(&mut v, 2); // ET_EXEC
        put16(&mut v, self.machine);
        put32(&mut v, 1);
        put(&mut v, is64, self.entry);
        put(&mut v, is64, phoff as u64);
        put(&mut v, is64, shoff as u64);
        put32(&mut v, self.flags);
        put16(&mut v, ehsize as u16);
        put16(&mut v, phentsize as u16);
        put16(&mut v, self.segs.len() as u16);
        put16(&mut v, shentsize as u16);
        put16(&mut v, 4);
        put16(&mut v, 3);
        assert_eq!(v.len(), ehsize);
        for (s, &o) in self.segs.iter().zip(&seg_offsets) {
            put32(&mut v, 1); // PT_LOAD
            if is64 {
                put32(&mut v, s.flags);
                put(&mut v, true, o as u64);
                put(&mut v, true, s.vaddr);
                put(&mut v, true, s.paddr);
                put(&mut v, true, s.data.len() as u64);
                put(&mut v, true, s.memsz);
                put(&mut v, true, 0x1000);
            } else {
                put(&mut v, false, o as u64);
                put(&mut v, false, s.vaddr);
                put(&mut v, false, s.paddr);
                put(&mut v, false, s.data.len() as u64);
                put(&mut v, false, s.memsz);
                put32(&mut v, s.flags);
                put(&mut v, false, 0x1000);
            }
        }
        for s in &self.segs {
            v.extend_from_slice(&s.data);
        }
        v.extend_from_slice(&symtab);
        v.extend_from_slice(&strtab);
        v.extend_from_slice(&shstrtab);
        assert_eq!(v.len(), shoff);
        // Section headers: (name, type, offset, size, link, info, entsize)
        let shdrs: [(u32, u32, usize, usize, u32, u32, usize); 4] = [
            (0, 0, 0, 0, 0, 0, 0),
            (1, 2, symtab_off, symtab.len(), 2, 1, symsize),
            (9, 3, strtab_off, strtab.len(), 0, 0, 0),
            (17, 3, shstrtab_off, shstrtab.len(), 0, 0, 0),
        ];
        for (name, ty, o, size, link, info, entsize) in shdrs {
            put32(&mut v, name);
            put32(&mut v, ty);
            put(&mut v, is64, 0); // flags
            put(&mut v, is64, 0); // addr
            put(&mut v, is64, o as u64);
            put(&mut v, is64, size as u64);
            put32(&mut v, link);
            put32(&mut v, info);
            put(&mut v, is64, 1); // addralign
            put(&mut v, is64, entsize as u64);
        }
        Built {
            bytes: v,
            phoff,
            shoff,
            seg_offsets,
            symtab_off,
            strtab_off,
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.build().bytes
    }
}

/// `n` bytes of a recognisable pattern starting at `seed`.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| seed.wrapping_add(i as u8)).collect()
}
