//! A program of several address spaces (`rvtrace_image::space`: firmware, a kernel, processes
//! at the same virtual addresses) for the analysis sinks: each space's code and symbols, and its
//! name as a process. A sink follows the flow from space to space with a [`Place`], which moves
//! where the flow's `Context` elements say, by the decoders' own rule
//! ([`rvtrace_image::space::Follower`]): the code it reads and the names it gives are those of
//! the space the decoder walked.

use crate::symbols::Symbols;
use rvtrace_image::space::{Follower, Spaces};
use rvtrace_image::Image;

/// The code, symbols and names of a program's address spaces.
pub struct System {
    /// The program when it is one space.
    image: Image,
    spaces: Option<Spaces>,
    /// Per space (index of [`Spaces::index`]; one without spaces).
    syms: Vec<Symbols>,
    names: Vec<String>,
}

impl System {
    /// A program of one address space: `image` named with `syms`, the space named `name`.
    pub fn one(image: Image, syms: Symbols, name: String) -> System {
        System {
            image,
            spaces: None,
            syms: vec![syms],
            names: vec![name],
        }
    }

    /// A program of several address spaces: `spaces`, and the symbols of each of its files
    /// (`file_syms[k]` for `spaces.files()[k]`, loaded at the same addresses). Each space's
    /// symbols are its files' merged; its name is that of the files that have a scope (the
    /// scope's qualifiers, then the files' names: `ctx=1 user.elf (U)`), else of the files
    /// without (`kernel.elf`).
    pub fn with_spaces(spaces: Spaces, file_syms: &[Symbols]) -> System {
        let files = spaces.files();
        let mut syms = Vec::with_capacity(spaces.len());
        let mut names = Vec::with_capacity(spaces.len());
        for i in 0..spaces.len() {
            let members: Vec<usize> = spaces.files_of(i).collect();
            syms.push(Symbols::merge(
                members
                    .iter()
                    .filter_map(|&k| file_syms.get(k).map(Symbols::share)),
            ));
            let scoped: Vec<usize> = members
                .iter()
                .copied()
                .filter(|&k| !files[k].0.is_everywhere())
                .collect();
            let named = if scoped.is_empty() { members } else { scoped };
            // One group per scope, in the order given.
            let mut groups: Vec<(rvtrace_image::space::Scope, Vec<String>)> = Vec::new();
            for k in named {
                let (scope, im) = &files[k];
                // Each name once (a core file's memory is a file per run).
                let mut file_names: Vec<String> = Vec::new();
                for f in im.files() {
                    let b = base(&f.path);
                    if !file_names.contains(&b) {
                        file_names.push(b);
                    }
                }
                if file_names.len() > 2 {
                    let more = file_names.len() - 1;
                    file_names.truncate(1);
                    file_names.push(format!("{more} more"));
                }
                match groups.iter_mut().find(|g| g.0 == *scope) {
                    Some(g) => {
                        for n in file_names {
                            if !g.1.contains(&n) {
                                g.1.push(n);
                            }
                        }
                    }
                    None => groups.push((*scope, file_names)),
                }
            }
            let mut name: Vec<String> = Vec::new();
            for (scope, file_names) in groups {
                let mut s = String::new();
                if let Some(c) = scope.context {
                    s += &format!("ctx={c} ");
                }
                s += &file_names.join("+");
                if let Some(p) = scope.privilege {
                    s += &format!(" ({p:?})");
                }
                name.push(s);
            }
            names.push(if name.is_empty() {
                "(no image)".into()
            } else {
                name.join(", ")
            });
        }
        System {
            image: Image::new(),
            spaces: Some(spaces),
            syms,
            names,
        }
    }

    /// The address spaces, if there are several (for [`rvtrace_decode`]'s decoders).
    ///
    /// [`rvtrace_decode`]: https://docs.rs/rvtrace-decode
    pub fn spaces(&self) -> Option<&Spaces> {
        self.spaces.as_ref()
    }

    /// How many spaces (1 without scoped files).
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// Whether there are no spaces (never).
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The code of space `i` (built on first use).
    pub fn image(&self, i: usize) -> &Image {
        match &self.spaces {
            Some(s) => &s.space(i).image,
            None => &self.image,
        }
    }

    /// The symbols of space `i`.
    pub fn syms(&self, i: usize) -> &Symbols {
        &self.syms[i]
    }

    /// The name of space `i` as a process.
    pub fn name(&self, i: usize) -> &str {
        &self.names[i]
    }
}

/// The file name of a path (the whole text when it has none).
fn base(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Where a sink reading the flow is: the space the flow is in, its code and symbols.
#[derive(Clone, Copy)]
pub struct Place<'a> {
    /// The code of the space.
    pub image: &'a Image,
    /// Its symbols.
    pub syms: &'a Symbols,
    /// Its index ([`System::image`]).
    pub index: usize,
    system: Option<(&'a System, Follower<'a>)>,
}

impl<'a> Place<'a> {
    /// In a program of one space, `image` named with `syms`: it never moves.
    pub fn one(image: &'a Image, syms: &'a Symbols) -> Self {
        Place {
            image,
            syms,
            index: 0,
            system: None,
        }
    }

    /// At the start of a flow through `system`: in the space of nothing reported yet.
    pub fn start(system: &'a System) -> Self {
        let follower = system.spaces.as_ref().map(Follower::new);
        let index = follower.as_ref().map_or(0, |f| f.index());
        Place {
            image: system.image(index),
            syms: system.syms(index),
            index,
            system: follower.map(|f| (system, f)),
        }
    }

    /// A `Context` element: whether the flow moved to another space (then this is there).
    #[inline]
    pub fn report(&mut self, privilege: Option<u8>, context: Option<u64>) -> bool {
        let Some((system, f)) = self.system.as_mut() else {
            return false;
        };
        let Some(i) = f.report(privilege, context) else {
            return false;
        };
        let system: &'a System = system;
        self.index = i;
        self.image = system.image(i);
        self.syms = system.syms(i);
        true
    }
}
