//! The one property `text --all-harts` reads from a device tree blob: the timer's frequency,
//! `/cpus/timebase-frequency` (Devicetree Specification v0.4, 3.7 "/cpus Node Properties"),
//! found by walking the blob's structure block (5.4: big-endian tokens `FDT_BEGIN_NODE` 1,
//! `FDT_END_NODE` 2, `FDT_PROP` 3, `FDT_NOP` 4, `FDT_END` 9, each aligned to 4 bytes; the
//! header of 5.2 gives the offsets of the structure and strings blocks).

/// The big-endian word at `at`.
fn word(blob: &[u8], at: usize) -> Option<u32> {
    let b = blob.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The NUL-terminated string at `at`.
fn cstr(blob: &[u8], at: usize) -> Option<&[u8]> {
    let rest = blob.get(at..)?;
    Some(&rest[..rest.iter().position(|&b| b == 0)?])
}

/// `/cpus/timebase-frequency` of the device tree blob `blob` (a 32- or 64-bit cell).
pub fn timebase_frequency(blob: &[u8]) -> Result<u64, String> {
    let bad = |what: &str| format!("not a device tree blob ({what})");
    if word(blob, 0) != Some(0xd00d_feed) {
        return Err(bad("no magic 0xd00dfeed"));
    }
    let structure = word(blob, 8).ok_or_else(|| bad("short header"))? as usize;
    let strings = word(blob, 12).ok_or_else(|| bad("short header"))? as usize;
    let mut at = structure;
    // The path of the node the walk is in, from the root (whose name is empty).
    let mut path: Vec<&[u8]> = Vec::new();
    loop {
        let token = word(blob, at).ok_or_else(|| bad("the structure block ends early"))?;
        at += 4;
        match token {
            1 => {
                let name = cstr(blob, at).ok_or_else(|| bad("unterminated node name"))?;
                at += (name.len() + 1).next_multiple_of(4);
                path.push(name);
            }
            2 => {
                path.pop();
            }
            3 => {
                let len = word(blob, at).ok_or_else(|| bad("short property"))? as usize;
                let name_off = word(blob, at + 4).ok_or_else(|| bad("short property"))? as usize;
                let value = blob
                    .get(at + 8..at + 8 + len)
                    .ok_or_else(|| bad("a property runs past the end"))?;
                at += 8 + len.next_multiple_of(4);
                let name =
                    cstr(blob, strings + name_off).ok_or_else(|| bad("a bad name offset"))?;
                if path.len() == 2 && path[1] == b"cpus" && name == b"timebase-frequency" {
                    return match *value {
                        [a, b, c, d] => Ok(u32::from_be_bytes([a, b, c, d]).into()),
                        [a, b, c, d, e, f, g, h] => {
                            Ok(u64::from_be_bytes([a, b, c, d, e, f, g, h]))
                        }
                        _ => Err(format!(
                            "/cpus/timebase-frequency is {len} bytes (a 4- or 8-byte cell)"
                        )),
                    };
                }
            }
            4 => {}
            9 => return Err("no /cpus/timebase-frequency: give --timebase-hz".into()),
            t => return Err(bad(&format!("token {t:#x}"))),
        }
    }
}
