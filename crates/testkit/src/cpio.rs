//! A writer of cpio archives in the "new ASCII" (newc) format, the one Linux unpacks as an
//! initramfs (the kernel's `Documentation/driver-api/early-userspace/buffer-format.rst`): per
//! entry the magic `070701`, thirteen 8-digit hexadecimal fields, the NUL-terminated name padded
//! to 4 bytes, the data padded to 4 bytes; the archive ends with the entry `TRAILER!!!`.

/// File type bits of `mode` (`S_IFDIR`, `S_IFREG`, `S_IFCHR`).
pub mod kind {
    /// A directory.
    pub const DIR: u32 = 0o040_000;
    /// A regular file.
    pub const FILE: u32 = 0o100_000;
    /// A character device.
    pub const CHAR: u32 = 0o020_000;
}

/// A newc archive being built.
#[derive(Default)]
pub struct Cpio {
    out: Vec<u8>,
    ino: u32,
}

impl Cpio {
    /// An empty archive.
    pub fn new() -> Cpio {
        Cpio::default()
    }

    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) -> &mut Cpio {
        self.ino += 1;
        let nlink = if mode & kind::DIR == kind::DIR { 2 } else { 1 };
        let fields = [
            self.ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime
            data.len() as u32,
            0, // devmajor
            0, // devminor
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0, // check (newc: 0)
        ];
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
        self
    }

    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }

    /// A directory `name` (no leading `/`), mode 0755.
    pub fn dir(&mut self, name: &str) -> &mut Cpio {
        self.entry(name, kind::DIR | 0o755, (0, 0), &[])
    }

    /// A regular file `name` with permission bits `perm` (such as 0o755).
    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) -> &mut Cpio {
        self.entry(name, kind::FILE | perm, (0, 0), data)
    }

    /// A character device `name` (major, minor), mode 0600.
    pub fn char_dev(&mut self, name: &str, major: u32, minor: u32) -> &mut Cpio {
        self.entry(name, kind::CHAR | 0o600, (major, minor), &[])
    }

    /// The archive with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, (0, 0), &[]);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GNU cpio, when present, lists the archive and extracts the file's bytes.
    #[test]
    fn gnu_cpio_reads_it() {
        let mut c = Cpio::new();
        c.dir("bin")
            .file("bin/x", 0o755, b"hello")
            .char_dev("console", 5, 1);
        let a = c.finish();
        assert_eq!(a.len() % 4, 0);
        // The first header field by field (buffer-format.rst): magic, ino 1, mode 040755,
        // uid, gid, nlink 2, mtime, filesize 0, dev 0:0, rdev 0:0, namesize 4 ("bin\0"),
        // check 0; the name; padding to 4 (110 + 4 = 114 -> 116).
        let h = std::str::from_utf8(&a[..110]).unwrap();
        assert_eq!(
            h,
            "070701\
             00000001000041ed000000000000000000000002000000000000000000000000\
             00000000000000000000000000000004\
             00000000"
        );
        assert_eq!(&a[110..116], b"bin\0\0\0");
        assert_eq!(&a[116..122], b"070701");
        assert!(a.ends_with(b"TRAILER!!!\0\0\0\0"));
        let Ok(mut child) = std::process::Command::new("cpio")
            .args(["-i", "-t", "-v", "--quiet"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
        else {
            eprintln!("note: cpio absent; only the layout checked");
            return;
        };
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&a).unwrap();
        let o = child.wait_with_output().unwrap();
        let t = String::from_utf8_lossy(&o.stdout);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[0].starts_with("drwxr-xr-x") && lines[0].ends_with(" bin"));
        assert!(
            lines[1].starts_with("-rwxr-xr-x")
                && lines[1].contains(" 5 ")
                && lines[1].ends_with(" bin/x")
        );
        assert!(
            lines[2].starts_with("crw-------")
                && lines[2].contains("5,")
                && lines[2].ends_with(" console")
        );
    }
}
