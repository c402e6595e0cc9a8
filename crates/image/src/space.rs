//! Address spaces: which code a decoder walks, by the privilege and context the trace reports.
//!
//! A whole system runs code of several layers at overlapping addresses: firmware in M-mode, a
//! kernel in S-mode shared by every process, processes in U-mode that may be linked at the same
//! virtual addresses, told apart by their context (an ASID, or the `scontext` a kernel writes).
//! Each file of the image carries a [`Scope`]: the privilege and context its code runs in, or
//! none (every space). The space of a privilege and a context is the union of the files whose
//! scope applies ([`Scope::applies`]); a decoder switches space where the flow's privilege or
//! context changes (N-Trace's Ownership message, 7.1 and "Decoding trace of operating systems";
//! E-Trace's format 3 `privilege` and `context` fields, `te_inst` payload). Before the trace says
//! either, only the files without a scope apply.
//!
//! Spaces with the same files are one space, built (image and block table) the first time a
//! decoder enters it; [`Spaces::new`] checks up front that no space has two files at the same
//! virtual addresses.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::code::Code;
use crate::{Image, ImageError};

/// A privilege a file's code runs in (`priv=m|s|u` on a command line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Privilege {
    /// Machine mode (ingress encoding 3).
    M,
    /// Supervisor mode (ingress encoding 1).
    S,
    /// User mode (ingress encoding 0).
    U,
}

impl Privilege {
    /// The privilege of an ingress-port `priv` value (0 U, 1 S, 3 M; debug mode and the
    /// virtualized modes are none of the three).
    pub fn from_ingress(code: u8) -> Option<Privilege> {
        match code {
            0 => Some(Privilege::U),
            1 => Some(Privilege::S),
            3 => Some(Privilege::M),
            _ => None,
        }
    }
}

impl std::str::FromStr for Privilege {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "m" | "M" => Ok(Privilege::M),
            "s" | "S" => Ok(Privilege::S),
            "u" | "U" => Ok(Privilege::U),
            _ => Err(format!("priv={s:?}: expected m, s or u")),
        }
    }
}

/// Where a file's code runs: a privilege, a context, both, or neither (everywhere).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    /// Only in this privilege.
    pub privilege: Option<Privilege>,
    /// Only in this context (the trace's context value: ASID, `scontext`, process id).
    pub context: Option<u64>,
}

impl Scope {
    /// Whether a file of this scope is code of the flow at `privilege` (ingress encoding) in
    /// `context`; `None`: the trace has not said. A qualifier applies only where the trace says
    /// the same value.
    pub fn applies(&self, privilege: Option<u8>, context: Option<u64>) -> bool {
        let p = self
            .privilege
            .is_none_or(|want| privilege.and_then(Privilege::from_ingress) == Some(want));
        let c = self.context.is_none_or(|want| context == Some(want));
        p && c
    }

    /// Whether this is the scope of every space.
    pub fn is_everywhere(&self) -> bool {
        self.privilege.is_none() && self.context.is_none()
    }
}

/// Where the flow is, as the trace reports it: the last privilege (ingress encoding) and the
/// last context reported, each kept until reported again (N-Trace's FORMAT 0 Ownership says
/// the privilege alone; an E-Trace without `context` never says one). Decoders and the
/// consumers of their flow (its `Context` elements) follow it the same way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// The privilege last reported.
    pub privilege: Option<u8>,
    /// The context last reported.
    pub context: Option<u64>,
}

impl Position {
    /// A report of `privilege` and/or `context` (`None`: not in this report).
    pub fn report(&mut self, privilege: Option<u8>, context: Option<u64>) {
        self.privilege = privilege.or(self.privilege);
        self.context = context.or(self.context);
    }
}

/// A reader of a decoded flow that follows its address space: the [`Position`] the flow's
/// `Context` elements report, and the space it selects.
#[derive(Clone, Copy)]
pub struct Follower<'a> {
    spaces: &'a Spaces,
    position: Position,
    at: usize,
}

impl<'a> Follower<'a> {
    /// At the start of a flow: nothing reported yet.
    pub fn new(spaces: &'a Spaces) -> Self {
        let position = Position::default();
        Follower {
            spaces,
            at: spaces.index_at(&position),
            position,
        }
    }

    /// The spaces followed.
    pub fn spaces(&self) -> &'a Spaces {
        self.spaces
    }

    /// The space the flow is in.
    pub fn space(&self) -> &'a Space {
        self.spaces.space(self.at)
    }

    /// Its index ([`Spaces::index`]).
    pub fn index(&self) -> usize {
        self.at
    }

    /// A `Context` element: `Some(index)` of the space the flow enters, `None` if it stays.
    pub fn report(&mut self, privilege: Option<u8>, context: Option<u64>) -> Option<usize> {
        self.position.report(privilege, context);
        let i = self.spaces.index_at(&self.position);
        (i != self.at).then(|| {
            self.at = i;
            i
        })
    }
}

/// The code of one address space: its image and the block table a decoder walks.
pub struct Space {
    /// The files of the space.
    pub image: Image,
    /// Its block table, built by the decoder's rule ([`Spaces::new`]).
    pub code: Code,
}

/// How a decoder builds the block table of an image.
type BuildCode = dyn Fn(&Image) -> Code + Send + Sync;

/// A set of files (bit `i` of word `i / 64`: `files[i]`).
type FileSet = Vec<u64>;

/// Whether `files[i]` is in `set`.
fn in_set(set: &FileSet, i: usize) -> bool {
    set[i / 64] >> (i % 64) & 1 != 0
}

/// The address spaces of a program made of scoped files (module documentation).
pub struct Spaces {
    files: Vec<(Scope, Image)>,
    build: Box<BuildCode>,
    /// Every distinct set of files a privilege and context can select, with its space once
    /// built.
    sets: Vec<(FileSet, OnceLock<Space>)>,
    /// The set (index into `sets`) of every privilege the trace can report (and none) with
    /// every context a file names (and none); other contexts select `unnamed`'s.
    by_position: HashMap<(Option<u8>, Option<u64>), usize>,
    /// A context no file names.
    unnamed: Option<u64>,
}

impl Spaces {
    /// The spaces of `files` (each loaded alone, with its scope), their block tables built
    /// with `build`. Fails if two files of one space overlap by virtual address (naming both).
    pub fn new(
        files: Vec<(Scope, Image)>,
        build: impl Fn(&Image) -> Code + Send + Sync + 'static,
    ) -> Result<Spaces, ImageError> {
        let mut spaces = Spaces {
            files,
            build: Box::new(build),
            sets: Vec::new(),
            by_position: HashMap::new(),
            unnamed: None,
        };
        // Every privilege the trace can report (and none), every context a file names, one it
        // names not (u64::MAX unless named: then some other value) and none.
        let mut privileges: Vec<Option<u8>> = vec![None, Some(0), Some(1), Some(3)];
        privileges.push(Some(4)); // debug mode: files without a privilege only
        let mut contexts: Vec<Option<u64>> = vec![None];
        for (scope, _) in &spaces.files {
            if let Some(c) = scope.context {
                if !contexts.contains(&Some(c)) {
                    contexts.push(Some(c));
                }
            }
        }
        let unnamed = (0..=u64::MAX).rev().find(|c| !contexts.contains(&Some(*c)));
        contexts.push(unnamed);
        spaces.unnamed = unnamed;
        let mut index: HashMap<FileSet, usize> = HashMap::new();
        for &p in &privileges {
            for &c in &contexts {
                let set = spaces.set_of(p, c);
                let i = match index.get(&set) {
                    Some(&i) => i,
                    None => {
                        spaces.check(&set)?;
                        spaces.sets.push((set.clone(), OnceLock::new()));
                        index.insert(set, spaces.sets.len() - 1);
                        spaces.sets.len() - 1
                    }
                };
                spaces.by_position.insert((p, c), i);
            }
        }
        Ok(spaces)
    }

    /// The files of the space of `privilege` and `context`.
    fn set_of(&self, privilege: Option<u8>, context: Option<u64>) -> FileSet {
        let mut set = vec![0u64; self.files.len().div_ceil(64)];
        for (i, (scope, _)) in self.files.iter().enumerate() {
            if scope.applies(privilege, context) {
                set[i / 64] |= 1 << (i % 64);
            }
        }
        set
    }

    /// Checks that the files of `set` fit in one space (no two overlap by virtual address).
    fn check(&self, set: &FileSet) -> Result<(), ImageError> {
        let members: Vec<&Image> = self.members(set).collect();
        for (i, a) in members.iter().enumerate() {
            for b in &members[..i] {
                for sa in a.segments() {
                    for sb in b.segments() {
                        let (ra, rb) = (sa.vaddr_range(), sb.vaddr_range());
                        if ra.start < rb.end && rb.start < ra.end {
                            let path = |im: &Image, s: &crate::Segment| {
                                im.files()
                                    .get(s.file_index)
                                    .map_or_else(String::new, |f| f.path.clone())
                            };
                            return Err(ImageError::Overlap {
                                path: path(a, sa),
                                space: "vaddr",
                                range: ra,
                                other_path: path(b, sb),
                                other_range: rb,
                            });
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn members<'a>(&'a self, set: &'a FileSet) -> impl Iterator<Item = &'a Image> {
        self.files
            .iter()
            .enumerate()
            .filter(move |(i, _)| in_set(set, *i))
            .map(|(_, (_, im))| im)
    }

    /// The files of space `index` ([`Spaces::index`]): indices into [`Spaces::files`].
    pub fn files_of(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        let set = &self.sets[index].0;
        (0..self.files.len()).filter(move |&i| in_set(set, i))
    }

    /// The files and their scopes, in the order given.
    pub fn files(&self) -> &[(Scope, Image)] {
        &self.files
    }

    /// How many distinct spaces the files make (1: every file applies everywhere).
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether there are no spaces (never: a program without files has one, empty).
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The index of the space of `privilege` (ingress encoding) and `context` (`None`: not
    /// reported), for [`Spaces::space`].
    pub fn index(&self, privilege: Option<u8>, context: Option<u64>) -> usize {
        // `new` listed every privilege the trace can report and every named context: an
        // unlisted context selects what the unnamed one does, an unlisted privilege what
        // debug mode does.
        let p = match privilege {
            None | Some(0 | 1 | 3) => privilege,
            _ => Some(4),
        };
        let c = match context {
            Some(c) if !self.by_position.contains_key(&(p, Some(c))) => self.unnamed,
            _ => context,
        };
        self.by_position.get(&(p, c)).copied().unwrap_or(0)
    }

    /// The index of the space at `pos` ([`Spaces::index`]).
    pub fn index_at(&self, pos: &Position) -> usize {
        self.index(pos.privilege, pos.context)
    }

    /// Space `index` ([`Spaces::index`]), built on first use.
    pub fn space(&self, index: usize) -> &Space {
        let (set, cell) = &self.sets[index];
        cell.get_or_init(|| {
            let mut image = Image::new();
            for m in self.members(set) {
                // `new` checked that the members do not overlap.
                let _ = image.add_image(m);
            }
            let code = (self.build)(&image);
            Space { image, code }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(name: &str, addr: u64, bytes: &[u8]) -> Image {
        let mut im = Image::new();
        im.load_raw(name, bytes, addr, crate::Xlen::Rv64).unwrap();
        im
    }

    fn scope(p: Option<Privilege>, c: Option<u64>) -> Scope {
        Scope {
            privilege: p,
            context: c,
        }
    }

    #[test]
    fn scopes_select_spaces() {
        // nop (0x0001), c.j . (0xa001) ...: two processes at 0x10000, a kernel, a firmware.
        let u1 = raw("u1", 0x10000, &[0x01, 0x00, 0x01, 0x00]);
        let u2 = raw("u2", 0x10000, &[0x01, 0xa0]);
        let k = raw("k", 0x8020_0000, &[0x01, 0x00]);
        let fw = raw("fw", 0x8000_0000, &[0x01, 0x00]);
        let everywhere = raw("all", 0x4000, &[0x01, 0x00]);
        let spaces = Spaces::new(
            vec![
                (scope(Some(Privilege::U), Some(1)), u1),
                (scope(Some(Privilege::U), Some(2)), u2),
                (scope(Some(Privilege::S), None), k),
                (scope(Some(Privilege::M), None), fw),
                (Scope::default(), everywhere),
            ],
            |im| Code::new(im, rvtrace_isa::IsaConfig::rv64()),
        )
        .unwrap();
        let names = |p: Option<u8>, c: Option<u64>| -> Vec<String> {
            let s = spaces.space(spaces.index(p, c));
            s.image.files().iter().map(|f| f.path.clone()).collect()
        };
        assert_eq!(names(Some(0), Some(1)), ["u1", "all"]);
        assert_eq!(names(Some(0), Some(2)), ["u2", "all"]);
        assert_eq!(names(Some(0), Some(3)), ["all"]);
        assert_eq!(names(Some(1), Some(2)), ["k", "all"]);
        assert_eq!(names(Some(3), None), ["fw", "all"]);
        assert_eq!(names(None, None), ["all"]);
        assert_eq!(names(Some(4), Some(1)), ["all"]);
        // The same address decodes as each process's code.
        let len = |c| {
            let s = spaces.space(spaces.index(Some(0), Some(c)));
            s.code.ent(0x10000).map(|e| (e.class, e.len))
        };
        assert_ne!(len(1), len(2));
        // S under any context is one space.
        assert_eq!(
            spaces.index(Some(1), Some(1)),
            spaces.index(Some(1), Some(2))
        );
    }

    #[test]
    fn many_processes_at_one_address() {
        // 100 processes at 0x10000 (a Linux run's snapshot has one file per context), each a
        // different instruction: nop (0x0001) or c.j . (0xa001) by the parity of its context.
        let files: Vec<(Scope, Image)> = (0..100u64)
            .map(|c| {
                let code = if c % 2 == 0 {
                    [0x01, 0x00]
                } else {
                    [0x01, 0xa0]
                };
                let im = raw(&format!("p{c}"), 0x10000, &code);
                (scope(Some(Privilege::U), Some(c)), im)
            })
            .chain([(Scope::default(), raw("k", 0x8020_0000, &[0x01, 0x00]))])
            .collect();
        let spaces =
            Spaces::new(files, |im| Code::new(im, rvtrace_isa::IsaConfig::rv64())).unwrap();
        let name = |p: Option<u8>, c: Option<u64>| {
            let s = spaces.space(spaces.index(p, c));
            let names: Vec<String> = s.image.files().iter().map(|f| f.path.clone()).collect();
            names.join(" ")
        };
        assert_eq!(name(Some(0), Some(77)), "p77 k");
        assert_eq!(name(Some(0), Some(0)), "p0 k");
        assert_eq!(name(Some(0), Some(1000)), "k");
        assert_eq!(name(Some(1), Some(77)), "k");
        assert_eq!(name(Some(2), Some(77)), "k");
        assert_eq!(name(None, None), "k");
        // 100 user spaces, and one for everything else.
        assert_eq!(spaces.len(), 101);
        assert_eq!(
            spaces
                .files_of(spaces.index(Some(0), Some(99)))
                .collect::<Vec<_>>(),
            [99, 100]
        );
    }

    #[test]
    fn overlap_in_one_space_is_an_error() {
        let a = raw("a", 0x10000, &[0x01, 0x00, 0x01, 0x00]);
        let b = raw("b", 0x10002, &[0x01, 0x00]);
        let build = |im: &Image| Code::new(im, rvtrace_isa::IsaConfig::rv64());
        // Apart: fine; both in U with context 1: refused, naming both files.
        let ok = Spaces::new(
            vec![
                (scope(Some(Privilege::U), Some(1)), a.clone()),
                (scope(Some(Privilege::U), Some(2)), b.clone()),
            ],
            build,
        );
        assert!(ok.is_ok());
        let e = Spaces::new(
            vec![
                (scope(None, Some(1)), a),
                (scope(Some(Privilege::U), None), b),
            ],
            build,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("b") && e.contains("a"), "{e}");
    }

    #[test]
    fn qualifiers_parse() {
        let s: crate::ImageSpec = "user.elf@0x1000,priv=u,ctx=0x2".parse().unwrap();
        assert_eq!(s.path, std::path::PathBuf::from("user.elf"));
        assert_eq!(s.at, Some(0x1000));
        assert_eq!(s.scope, scope(Some(Privilege::U), Some(2)));
        let s: crate::ImageSpec = "fw.bin@0x80000000,priv=m".parse().unwrap();
        assert_eq!(s.scope, scope(Some(Privilege::M), None));
        let s: crate::ImageSpec = "a,b.elf".parse().unwrap();
        assert_eq!(
            (s.path.to_str(), s.scope),
            (Some("a,b.elf"), Scope::default())
        );
        for bad in [
            "x.elf,priv=h",
            "x.elf,ctx=one",
            "x.elf,priv=u,priv=s",
            ",ctx=1",
        ] {
            assert!(bad.parse::<crate::ImageSpec>().is_err(), "{bad}");
        }
    }
}
