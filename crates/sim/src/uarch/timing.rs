//! The timing model's penalties.

use super::{parse_num, SpecError};
use std::fmt;
use std::str::FromStr;

/// Largest penalty accepted from an option.
const MAX_PENALTY: u64 = 1 << 20;

/// Extra cycles charged on top of one cycle per retired instruction:
/// `cycles = instructions + frontend stalls + backend stalls`.
///
/// Syntax (`FromStr`): `on` for the defaults, or comma-separated `key=cycles` overrides of them
/// (`on,` may precede them): `mispredict=8,redirect=1,l1i-miss=20,l1d-miss=20,mul=3,div=20`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimingConfig {
    /// `mispredict`: per mispredicted control transfer (frontend; default 8).
    pub mispredict: u32,
    /// `redirect`: per decode redirect, a BTB miss on a direct target (frontend; default 1).
    pub redirect: u32,
    /// `l1i-miss`: per missed L1I access (frontend; default 20).
    pub l1i_miss: u32,
    /// `l1d-miss`: per missed L1D access, load or store (backend; default 20).
    pub l1d_miss: u32,
    /// `mul`: per multiply (backend; default 3).
    pub mul: u32,
    /// `div`: per divide or remainder (backend; default 20).
    pub div: u32,
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig {
            mispredict: 8,
            redirect: 1,
            l1i_miss: 20,
            l1d_miss: 20,
            mul: 3,
            div: 20,
        }
    }
}

const KEYS: &str = "mispredict, redirect, l1i-miss, l1d-miss, mul, div";

impl FromStr for TimingConfig {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, SpecError> {
        let s = s.trim();
        let mut t = TimingConfig::default();
        for part in s.split(',').map(str::trim) {
            if part == "on" {
                continue;
            }
            let Some((key, value)) = part.split_once('=') else {
                return Err(SpecError::Syntax(format!(
                    "bad timing part '{part}': expected on, or key=cycles with key one of {KEYS} \
                     (e.g. on,mispredict=8,l1d-miss=20)"
                )));
            };
            let field = match key.trim() {
                "mispredict" => &mut t.mispredict,
                "redirect" => &mut t.redirect,
                "l1i-miss" => &mut t.l1i_miss,
                "l1d-miss" => &mut t.l1d_miss,
                "mul" => &mut t.mul,
                "div" => &mut t.div,
                k => {
                    return Err(SpecError::Syntax(format!(
                        "unknown timing key '{k}': expected one of {KEYS}"
                    )))
                }
            };
            *field =
                parse_num(value.trim(), &format!("timing {}", key.trim()), MAX_PENALTY)? as u32;
        }
        Ok(t)
    }
}

/// All six penalties in the option syntax.
impl fmt::Display for TimingConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "mispredict={},redirect={},l1i-miss={},l1d-miss={},mul={},div={}",
            self.mispredict, self.redirect, self.l1i_miss, self.l1d_miss, self.mul, self.div
        )
    }
}
