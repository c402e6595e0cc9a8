//! Parsing of `--isa` strings such as `rv64gc`, `rv32imac` or `rv64imafdc_zicsr_zba_zbb`.

use rvtrace_isa::Xlen;
use rvtrace_sim::decode::Extensions;

/// What an `--isa` string asks for.
#[derive(Clone, Copy, Debug)]
pub struct Isa {
    /// Base width.
    pub xlen: Xlen,
    /// Unprivileged extensions the hart executes.
    pub ext: Extensions,
    /// Sscofpmf (counter overflow and mode filtering): only when the string names it.
    pub sscofpmf: bool,
    /// Smcntrpmf (cycle/instret mode filtering): only when the string names it.
    pub smcntrpmf: bool,
    /// Sstc (`stimecmp`): only when the string names it (QEMU's default CPU has it).
    pub sstc: bool,
}

/// Parse an ISA string (`rv64gc`, `rv64imac_zba_sscofpmf`, ...). Unknown extensions are an
/// error, so a typo never silently changes what runs.
pub fn parse_isa(s: &str) -> Result<Isa, String> {
    let (xlen, ext, multi) = parse_letters(s)?;
    let has = |n: &str| multi.iter().any(|m| m == n);
    Ok(Isa {
        xlen,
        ext,
        sscofpmf: has("sscofpmf"),
        smcntrpmf: has("smcntrpmf"),
        sstc: has("sstc"),
    })
}

fn parse_letters(s: &str) -> Result<(Xlen, Extensions, Vec<String>), String> {
    let lower = s.to_ascii_lowercase();
    let (xlen, rest) = if let Some(r) = lower.strip_prefix("rv64") {
        (Xlen::Rv64, r)
    } else if let Some(r) = lower.strip_prefix("rv32") {
        (Xlen::Rv32, r)
    } else {
        return Err(format!(
            "--isa {s:?}: must start with rv32 or rv64 (for example rv64gc or rv32imac)"
        ));
    };
    let mut ext = Extensions {
        m: false,
        a: false,
        f: false,
        d: false,
        c: false,
        zba: false,
        zbb: false,
        zbs: false,
        zbc: false,
        s: true,
        u: true,
    };
    let mut parts = rest.split('_');
    let single = parts.next().unwrap_or("");
    let mut chars = single.chars();
    match chars.next() {
        Some('i') => {}
        Some('g') => {
            ext.m = true;
            ext.a = true;
            ext.f = true;
            ext.d = true;
        }
        _ => {
            return Err(format!(
                "--isa {s:?}: the base must be i or g after rv32/rv64"
            ))
        }
    }
    for c in chars {
        match c {
            'm' => ext.m = true,
            'a' => ext.a = true,
            'f' => ext.f = true,
            'd' => {
                ext.d = true;
                ext.f = true;
            }
            'c' => ext.c = true,
            'g' => {
                ext.m = true;
                ext.a = true;
                ext.f = true;
                ext.d = true;
            }
            // B = Zba + Zbb + Zbs (unprivileged ISA, "B" Extension for Bit Manipulation).
            'b' => {
                ext.zba = true;
                ext.zbb = true;
                ext.zbs = true;
            }
            _ => {
                return Err(format!(
                    "--isa {s:?}: unsupported extension '{c}' (supported: i, m, a, f, d, c, g, b)"
                ))
            }
        }
    }
    let mut multi = Vec::new();
    for p in parts {
        match p {
            "" | "zicsr" | "zifencei" | "zicntr" | "zihpm" => {}
            "zba" => ext.zba = true,
            "zbb" => ext.zbb = true,
            "zbc" => ext.zbc = true,
            "zbs" => ext.zbs = true,
            "sscofpmf" | "smcntrpmf" | "sstc" => multi.push(p.to_string()),
            _ => return Err(format!("--isa {s:?}: unsupported extension {p:?} (supported: zicsr, zifencei, zicntr, zihpm, zba, zbb, zbc, zbs, sscofpmf, smcntrpmf, sstc)")),
        }
    }
    Ok((xlen, ext, multi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_strings() {
        let i = parse_isa("rv64gc").unwrap();
        assert_eq!(i.xlen, Xlen::Rv64);
        let e = i.ext;
        assert!(e.m && e.a && e.f && e.d && e.c && !e.zba && !e.zbs && !e.zbc);
        assert!(!i.sscofpmf && !i.smcntrpmf, "left out unless named");
        let i = parse_isa("RV32IMAC").unwrap();
        assert_eq!(i.xlen, Xlen::Rv32);
        let e = i.ext;
        assert!(e.m && e.a && e.c && !e.f && !e.d);
        let i = parse_isa("rv64imafdc_zicsr_zifencei_zba_zbb_zihpm_sscofpmf").unwrap();
        assert!(i.ext.zba && i.ext.zbb && i.ext.d && i.sscofpmf && !i.smcntrpmf);
        let e = parse_isa("rv64gcb").unwrap().ext;
        assert!(e.zba && e.zbb && e.zbs && !e.zbc, "B is Zba, Zbb and Zbs");
        let e = parse_isa("rv32imac_zbs_zbc").unwrap().ext;
        assert!(e.zbs && e.zbc && !e.zba && !e.zbb);
        assert!(parse_isa("rv64gcv").is_err());
        assert!(parse_isa("x86").is_err());
        assert!(parse_isa("rv64e").is_err());
    }
}
