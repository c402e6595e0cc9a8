//! The disassembler against GNU objdump 2.40: `tests/data/objdump.txt` holds what objdump printed
//! for each instruction (recorded once, as that file's header says; objdump is not run here).

use rvtrace_tandem::disasm::disasm;

#[test]
fn matches_objdump() {
    let table = include_str!("data/objdump.txt");
    let mut n = 0;
    let mut bad = Vec::new();
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let mut it = line.splitn(4, ' ');
        let xlen: u32 = it.next().unwrap().parse().unwrap();
        let pc = u64::from_str_radix(it.next().unwrap(), 16).unwrap();
        let bits = u32::from_str_radix(it.next().unwrap(), 16).unwrap();
        let want = it.next().unwrap_or("");
        let got = disasm(bits, pc, xlen);
        if got != want {
            bad.push(format!("{line}: got {got:?}"));
        }
        n += 1;
    }
    assert!(n > 700, "{n} lines");
    assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
}

/// The appendix C instructions (the C.4 and C.6 titles name them as an assembler writes them;
/// objdump prints `c.sub a0, a1` as `sub a0,a0,a1`).
#[test]
fn appendix_c_instructions() {
    assert_eq!(disasm(0x0062_81b3, 0, 64), "add gp,t0,t1");
    assert_eq!(disasm(0x1001_0067, 0, 64), "jr 256(sp)");
    assert_eq!(disasm(0x0116_f3d3, 0, 64), "fadd.s ft7,fa3,fa7");
    assert_eq!(disasm(0x8d0d, 0, 64), "sub a0,a0,a1");
    assert_eq!(disasm(0x0082_a203, 0, 64), "lw tp,8(t0)");
    assert_eq!(disasm(0x3045_b4f3, 0, 64), "csrrc s1,mie,a1");
    assert_eq!(disasm(0, 0, 64), "unimp");
}
