//! Reading a trace of either protocol through the decode layer (`rvtrace-decode`): its options
//! as every trace-reading command takes them, its warnings printed, its errors as this tool's
//! failures. Nothing else in the CLI resolves a trace's protocol or settings.

use crate::report::{self, Failure};
use rvtrace_analysis::Symbols;
use rvtrace_decode::{DecodeOptions, Protocol, Trace};
use rvtrace_image::Image;
use rvtrace_isa::Xlen;
use std::path::{Path, PathBuf};

/// Decoder options (for decoded inputs): the protocol (sniffed when not given), the source field,
/// each protocol's own; completed by each trace's sidecar.
#[derive(clap::Args, Clone, Debug)]
pub struct TraceDecodeOpts {
    #[command(flatten)]
    pub(crate) opts: DecodeOptions,
}

/// The failure for a decode-layer error: what the user asked for is a usage error; a file that
/// is not what it should be, or cannot be read, the tool's.
pub fn failure(e: rvtrace_decode::Error) -> Failure {
    match e {
        rvtrace_decode::Error::Usage(_) | rvtrace_decode::Error::UnknownProtocol { .. } => {
            Failure::Usage(e.to_string())
        }
        rvtrace_decode::Error::WrongKind { .. } | rvtrace_decode::Error::File(_) => {
            Failure::Tool(e.to_string())
        }
    }
}

/// The trace whose sidecar is read: none for stdin.
fn sidecar_of(path: &Path) -> Option<&Path> {
    (!report::is_std(path)).then_some(path)
}

impl TraceDecodeOpts {
    /// The protocol of the trace at `path` whose first bytes are `head` (`whole`: all of it):
    /// the options', its sidecar's or its bytes'.
    pub fn protocol(&self, path: &Path, head: &[u8], whole: bool) -> Result<Protocol, Failure> {
        rvtrace_decode::protocol(sidecar_of(path), head, whole, &self.opts).map_err(failure)
    }

    /// The trace at `path` (first bytes `head`; `whole`: all of it) resolved for decoding by a
    /// hart of address width `xlen`; the warnings printed.
    pub fn resolve(
        &self,
        path: &Path,
        head: &[u8],
        whole: bool,
        xlen: Xlen,
    ) -> Result<Trace, Failure> {
        let t = rvtrace_decode::resolve(sidecar_of(path), head, whole, &self.opts, xlen)
            .map_err(failure)?;
        for w in &t.warnings {
            warn!("{w}");
        }
        Ok(t)
    }

    /// [`resolve`](Self::resolve) for a trace known to be of protocol `p`.
    pub fn resolve_as(
        &self,
        p: Protocol,
        path: &Path,
        head: &[u8],
        xlen: Xlen,
    ) -> Result<Trace, Failure> {
        let t = rvtrace_decode::resolve_as(p, sidecar_of(path), head, &self.opts, xlen)
            .map_err(failure)?;
        for w in &t.warnings {
            warn!("{w}");
        }
        Ok(t)
    }

    /// The N-Trace options as given (for a command that encodes N-Trace: `transcode`).
    pub fn ntrace_given(&self) -> rvtrace_ntrace::meta::Given {
        self.opts.ntrace_given()
    }

    /// The E-Trace options as given (for a command that encodes E-Trace: `transcode`).
    pub fn etrace_given(&self) -> rvtrace_etrace::options::Options {
        self.opts.etrace_given()
    }
}

/// More of the code a trace ran, beside `--elf`: the same options in every command that reads
/// a program (issue 31).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ImageArgs {
    /// More of the code the trace ran (repeatable): an ELF file, moved by a load bias with
    /// `FILE@BIAS` (a position-independent program or library where it was loaded), or a raw
    /// binary (firmware `.bin`, a memory dump) at its address with `FILE@ADDR`. Addresses hex
    /// with 0x, or decimal. With --elf or alone. `decode`, `text`, `profile`, `coverage`,
    /// `stats` and `export` also take where the code runs:
    /// `,priv=m|s|u` and `,ctx=N` after it (`user.elf,priv=u,ctx=2`: the process of context 2,
    /// an ASID or scontext value), and walks each file only where the trace reports that
    /// privilege and context (N-Trace Ownership, E-Trace format 3 `privilege`/`context`);
    /// files without them apply everywhere.
    ///
    /// A kernel's function names: `kallsyms:FILE` reads /proc/kallsyms (or a System.map, with
    /// `@OFFSET` its KASLR offset). Memory pages: `pages:DIR` loads each file of DIR named
    /// `NAME.0xADDR` (SiFive's kmem pages) at ADDR.
    ///
    /// A process's files: `maps:FILE` reads a copy of its `/proc/PID/maps` and loads each
    /// executable file it lists from under --sysroot at the address it was mapped. An ELF core
    /// file (a core dump, gdb's gcore, the kernel's /proc/kcore) gives the executable memory it
    /// holds, and with --sysroot the files its NT_FILE note lists (where the dump left their
    /// code out, as Linux does by default).
    #[arg(long = "image", value_name = "FILE[@ADDR][,priv=P][,ctx=N]")]
    pub image: Vec<rvtrace_image::ImageSpec>,
    /// The root of the traced system's files, for the paths `maps:` files and core files name
    /// (as gdb's `set sysroot`; a file not found at its path is looked for by its name at the
    /// root, as SiFive's decoder finds files beside its settings file).
    #[arg(long, value_name = "DIR")]
    pub sysroot: Option<PathBuf>,
    /// The vdso's ELF file (dumped from the traced system), placed where a `maps:` file's
    /// `[vdso]` line maps it.
    #[arg(long, value_name = "FILE")]
    pub vdso: Option<PathBuf>,
    /// The address width the code is read with when only raw --image files give it.
    #[arg(long, value_name = "32|64", value_parser = crate::etrace::parse_xlen)]
    pub xlen: Option<u8>,
    /// Where the debug files of stripped ELF files are (repeatable; `text`, `profile`,
    /// `coverage`): by build ID at `DIR/.build-id/xx/rest.debug`, or by the name the file's
    /// `.gnu_debuglink` gives at `DIR/NAME` (also looked for beside the file and in its
    /// `.debug` directory), as gdb finds them.
    #[arg(long, value_name = "DIR")]
    pub debug_dir: Vec<PathBuf>,
}

/// A program as `--elf` and `--image` give it: the files that apply everywhere as one image,
/// those with a privilege or context (`rvtrace_image::space`) each alone with its scope.
pub struct Program {
    /// The files without a scope.
    pub image: Image,
    /// The files with one, in the order given.
    pub scoped: Vec<(rvtrace_image::space::Scope, Image)>,
    /// The address width of the first ELF file (`None` when no file says it).
    pub xlen: Option<Xlen>,
    /// The symbols of the `--image` files ([`load_system_symbols`]): those without a scope,
    /// one per file, and one per entry of `scoped`.
    pub syms: Option<FileSymbols>,
}

/// The symbols of the `--image` files: those without a scope, one per file; and one per
/// scoped file.
pub type FileSymbols = (Vec<Symbols>, Vec<Symbols>);

impl Program {
    /// Every file with its scope, for [`rvtrace_decode::Trace::spaces`] (`None`: no file has a
    /// scope, one image is the program).
    pub fn scoped_files(&self) -> Option<Vec<(rvtrace_image::space::Scope, Image)>> {
        if self.scoped.is_empty() {
            return None;
        }
        let mut all = vec![(Default::default(), self.image.clone())];
        all.extend(self.scoped.iter().cloned());
        Some(all)
    }
}

/// The program's ELF files (`--elf`, repeatable) and `--image` files as one image, and the
/// address width of the first ELF file (`None` when no file says it), for a command that reads
/// one address space: a file with a privilege or context is a usage error.
pub fn load_program(paths: &[PathBuf], more: &ImageArgs) -> Result<(Image, Option<Xlen>), Failure> {
    let p = load_system(paths, more)?;
    if let Some(spec) = more.image.iter().find(|s| !s.scope.is_everywhere()) {
        return Err(one_space_error(spec));
    }
    Ok((p.image, p.xlen))
}

/// The usage error of a command that reads one address space given a file with a scope.
pub fn one_space_error(spec: &rvtrace_image::ImageSpec) -> Failure {
    Failure::Usage(format!(
        "--image {}: priv= and ctx= (address spaces) are read by `decode`, `text`, `profile`, \
         `coverage`, `stats` and `export`; this command reads one address space",
        spec.path.display()
    ))
}

/// The program's files ([`Program`]): `--elf` files, then `--image` files.
pub fn load_system(paths: &[PathBuf], more: &ImageArgs) -> Result<Program, Failure> {
    load(paths, more, false)
}

/// [`load_system`] with the symbols of the `--image` files ([`Program::syms`]): an ELF file's
/// functions and DWARF line tables at its load bias, a kernel's `kallsyms:` names (raw
/// binaries and memory have none).
pub fn load_system_symbols(paths: &[PathBuf], more: &ImageArgs) -> Result<Program, Failure> {
    load(paths, more, true)
}

fn load(paths: &[PathBuf], more: &ImageArgs, want_syms: bool) -> Result<Program, Failure> {
    let mut image = Image::new();
    let mut xlen = None;
    // A core file given as --elf (`run --code-snapshot`'s) is read as --image reads it.
    let mut specs = Vec::new();
    for p in paths {
        // The header says whether it is a core (read whole once, by `expand_system_files`).
        let mut head = Vec::new();
        std::fs::File::open(p)
            .and_then(|f| {
                use std::io::Read;
                f.take(18).read_to_end(&mut head)
            })
            .map_err(|e| Failure::io(p.display(), e))?;
        if rvtrace_image::system::is_core(&head) {
            specs.push(rvtrace_image::ImageSpec {
                path: p.clone(),
                at: None,
                scope: Default::default(),
                kind: Default::default(),
            });
            continue;
        }
        let bytes = std::fs::read(p).map_err(|e| Failure::io(p.display(), e))?;
        let info = image
            .load_bytes(&p.display().to_string(), &bytes)
            .map_err(|e| Failure::Tool(format!("{}: {e}", p.display())))?;
        xlen.get_or_insert(info.xlen);
    }
    specs.extend(more.image.iter().cloned());
    let given = more.xlen.map(|b| match b {
        32 => Xlen::Rv32,
        _ => Xlen::Rv64,
    });
    let mut scoped = Vec::new();
    let sources = expand_system_files(&specs, more.sysroot.as_deref(), more.vdso.as_deref())?;
    let mut syms = want_syms.then(|| (Vec::new(), Vec::new()));
    let xlen = load_images(
        &mut image,
        &mut scoped,
        &sources,
        xlen,
        given,
        syms.as_mut().map(|s| (s, more.debug_dir.as_slice())),
    )?;
    Ok(Program {
        image,
        scoped,
        xlen,
        syms,
    })
}

/// The symbols of one image file: an ELF file's (functions and line tables) moved by its load
/// bias; a kernel's names; none for raw code.
fn source_symbols(source: &Source, debug_dirs: &[PathBuf]) -> Result<Symbols, Failure> {
    Ok(match source {
        Source::Spec(spec, bytes) if rvtrace_image::ImageSpec::is_elf(bytes) => {
            Symbols::from_elf_or_debug(bytes, &spec.path, debug_dirs)
                .map_err(|e| Failure::Tool(format!("{}: {e}", spec.path.display())))?
                .moved(spec.at.unwrap_or(0))
        }
        Source::Symbols { symbols, .. } => Symbols::from_functions(
            symbols
                .iter()
                .map(|s| rvtrace_analysis::symbols::Function {
                    name: s.name.clone(),
                    start: s.addr,
                    end: s.addr.saturating_add(s.size.max(1)),
                })
                .collect(),
        ),
        _ => Symbols::from_functions(Vec::new()),
    })
}

/// The `--image` files with the files of a running system resolved (`rvtrace_image::system`):
/// a `maps:` file becomes the executable files it lists, each at its load bias; a core file its
/// executable memory (each segment as a raw binary at its address) and the files its NT_FILE
/// note lists. Each keeps the scope of the spec it came from.
fn expand_system_files(
    specs: &[rvtrace_image::ImageSpec],
    sysroot: Option<&Path>,
    vdso: Option<&Path>,
) -> Result<Vec<Source>, Failure> {
    use rvtrace_image::system;
    let mut out = Vec::new();
    for (specs_done, spec) in specs.iter().enumerate() {
        let name = spec.path.display().to_string();
        if spec.kind == rvtrace_image::SpecKind::Pages {
            let pages = system::page_files(&spec.path).map_err(|e| Failure::io(&name, e))?;
            if pages.is_empty() {
                warn!("--image pages:{name}: no file named NAME.0xADDR");
            }
            for (k, (addr, path)) in pages.iter().enumerate() {
                let (addr, mut data) = (
                    *addr,
                    std::fs::read(path).map_err(|e| Failure::io(path.display(), e))?,
                );
                // SiFive's pages carry the first bytes of the next page too (an instruction
                // that crosses into it): the next page's file has them.
                if let Some((next, _)) = pages.get(k + 1) {
                    let room = usize::try_from(next.saturating_sub(addr)).unwrap_or(usize::MAX);
                    data.truncate(room);
                }
                out.push(Source::Raw {
                    name: path.display().to_string(),
                    addr,
                    data,
                    scope: spec.scope,
                });
            }
            continue;
        }
        let bytes = std::fs::read(&spec.path).map_err(|e| Failure::io(&name, e))?;
        if spec.kind == rvtrace_image::SpecKind::Kallsyms {
            let text = String::from_utf8_lossy(&bytes);
            let symbols = system::parse_kallsyms(&text, spec.at.unwrap_or(0))
                .map_err(|e| Failure::Tool(format!("{name}: {e}")))?;
            out.push(Source::Symbols {
                name,
                symbols,
                scope: spec.scope,
            });
            continue;
        }
        let mappings = if spec.kind == rvtrace_image::SpecKind::Maps {
            let text = String::from_utf8_lossy(&bytes);
            let m = system::parse_maps(&text).map_err(|e| Failure::Tool(format!("{name}: {e}")))?;
            if sysroot.is_none() {
                return Err(Failure::Usage(format!(
                    "--image maps:{name}: give --sysroot DIR, the root of the files it names (/ for this machine's)"
                )));
            }
            m.into_iter().filter(|m| m.exec).collect()
        } else if system::is_core(&bytes) {
            let core =
                system::read_core(&bytes).map_err(|e| Failure::Tool(format!("{name}: {e}")))?;
            let xlen = if bytes[4] == 1 {
                Xlen::Rv32
            } else {
                Xlen::Rv64
            };
            for m in core.memory {
                // The spec's qualifiers, and the snapshot's scope of the run where they are
                // silent.
                let scope = rvtrace_image::space::Scope {
                    privilege: spec.scope.privilege.or(m.scope.privilege),
                    context: spec.scope.context.or(m.scope.context),
                };
                out.push(Source::Memory {
                    name: name.clone(),
                    addr: m.addr,
                    data: m.data,
                    scope,
                    xlen,
                    core: specs_done,
                });
            }
            if sysroot.is_none() && !core.files.is_empty() {
                note!(
                    "{name}: the core file names {} mapped files; give --sysroot DIR to read their code",
                    core.files.len()
                );
            }
            core.files
        } else {
            out.push(Source::Spec(spec.clone(), bytes));
            continue;
        };
        let Some(root) = sysroot else {
            continue;
        };
        // Each file once, at the bias of its first mapping that places one of its segments.
        let mut done: Vec<&str> = Vec::new();
        for m in &mappings {
            if done.contains(&m.path.as_str()) {
                continue;
            }
            let file = if m.path == system::VDSO {
                let Some(v) = vdso else {
                    continue;
                };
                v.to_path_buf()
            } else {
                let full = root.join(m.path.trim_start_matches('/'));
                match (full.exists(), Path::new(&m.path).file_name()) {
                    (false, Some(base)) if root.join(base).exists() => root.join(base),
                    _ => full,
                }
            };
            let Ok(fb) = std::fs::read(&file) else {
                warn!(
                    "{name}: {} is not under --sysroot ({}): its code is not loaded",
                    m.path,
                    file.display()
                );
                done.push(&m.path);
                continue;
            };
            if !rvtrace_image::ImageSpec::is_elf(&fb) {
                done.push(&m.path);
                continue;
            }
            let Some(bias) = system::bias_for(&fb, m, 4096) else {
                continue;
            };
            done.push(&m.path);
            let spec = rvtrace_image::ImageSpec {
                path: file,
                at: Some(bias),
                scope: spec.scope,
                kind: Default::default(),
            };
            out.push(Source::Spec(spec, fb));
        }
    }
    Ok(out)
}

/// An image file to load: a spec with the file's bytes, memory a core file held, a memory
/// page, or a kernel's symbols.
enum Source {
    Spec(rvtrace_image::ImageSpec, Vec<u8>),
    Raw {
        name: String,
        addr: u64,
        data: Vec<u8>,
        scope: rvtrace_image::space::Scope,
    },
    Symbols {
        name: String,
        symbols: Vec<rvtrace_image::Symbol>,
        scope: rvtrace_image::space::Scope,
    },
    /// A run of a core file's memory; `core` numbers the file (runs of one file and scope
    /// make one image).
    Memory {
        name: String,
        addr: u64,
        data: Vec<u8>,
        scope: rvtrace_image::space::Scope,
        xlen: Xlen,
        core: usize,
    },
}

/// `--image FILE[@ADDR]` files added to `image`, or each to its own image in `scoped` when it
/// has a scope (ELF files at a load bias, raw binaries at an address;
/// [`rvtrace_image::ImageSpec`]), after the `--elf` files gave `xlen` (or none did): the address
/// width the code is read with. Raw binaries do not say theirs: without an ELF it is `given`
/// (`--xlen`), else the first ELF image's; a `given` width another file contradicts is a usage
/// error.
fn load_images(
    image: &mut Image,
    scoped: &mut Vec<(rvtrace_image::space::Scope, Image)>,
    sources: &[Source],
    xlen: Option<Xlen>,
    given: Option<Xlen>,
    syms: Option<(&mut FileSymbols, &[PathBuf])>,
) -> Result<Option<Xlen>, Failure> {
    let mut xlen = xlen;
    // Each source's symbols, in the order its image is made (the order of `scoped`).
    let mut by_source: Vec<(usize, bool)> = Vec::new();
    // The core file and scope of the last scoped image made of a core file's memory: the
    // next run of the same file and scope joins it.
    let mut last_core: Option<(usize, rvtrace_image::space::Scope)> = None;
    // Which images hold a core file's memory (by index in `scoped`), and which files of the
    // unscoped image are files (not memory).
    let mut memory: Vec<bool> = Vec::new();
    // The --elf files are files of the unscoped image.
    let mut unscoped_files: Vec<usize> = (0..image.files().len()).collect();
    // Where a file goes: the common image, or one of its own.
    let mut target =
        |scoped: &mut Vec<(rvtrace_image::space::Scope, Image)>,
         scope: &rvtrace_image::space::Scope,
         k: usize,
         core: Option<usize>,
         load: &mut dyn FnMut(&mut Image) -> Result<Xlen, rvtrace_image::ImageError>|
         -> Result<Xlen, Failure> {
            let r = if scope.is_everywhere() {
                by_source.push((k, true));
                if core.is_none() {
                    unscoped_files.push(image.files().len());
                }
                load(image)
            } else if core.is_some() && last_core == core.map(|c| (c, *scope)) {
                let last = scoped.len() - 1;
                load(&mut scoped[last].1)
            } else {
                by_source.push((k, false));
                last_core = core.map(|c| (c, *scope));
                let mut own = Image::new();
                let r = load(&mut own);
                scoped.push((*scope, own));
                memory.push(core.is_some());
                r
            };
            r.map_err(|e| Failure::Tool(e.to_string()))
        };
    // ELF files first: they say the width raw ones are read with.
    let mut raws = Vec::new();
    for (k, source) in sources.iter().enumerate() {
        let (spec, bytes) = match source {
            Source::Spec(spec, bytes) => (spec, bytes),
            Source::Memory {
                name,
                addr,
                data,
                scope,
                xlen: x,
                core,
            } => {
                target(scoped, scope, k, Some(*core), &mut |im| {
                    im.load_raw(name, data, *addr, *x).map(|i| i.xlen)
                })?;
                xlen.get_or_insert(*x);
                continue;
            }
            Source::Symbols { .. } | Source::Raw { .. } => continue,
        };
        if !rvtrace_image::ImageSpec::is_elf(bytes) {
            raws.push((k, spec, bytes));
            continue;
        }
        let name = spec.path.display().to_string();
        let x = target(scoped, &spec.scope, k, None, &mut |im| {
            im.load_bytes_at(&name, bytes, spec.at.unwrap_or(0))
                .map(|i| i.xlen)
        })?;
        xlen.get_or_insert(x);
    }
    if let (Some(g), Some(x)) = (given, xlen) {
        if g != x {
            return Err(Failure::Usage(format!(
                "--xlen {} contradicts the program, which is RV{}",
                g.bits(),
                x.bits()
            )));
        }
    }
    for (k, spec, bytes) in raws {
        let name = spec.path.display().to_string();
        let Some(addr) = spec.at else {
            return Err(Failure::Usage(format!(
                "--image {name}: not an ELF file; a raw binary needs its address (--image {name}@ADDR)"
            )));
        };
        let Some(x) = xlen.or(given) else {
            return Err(Failure::Usage(format!(
                "--image {name}: a raw binary does not say its address width: give --xlen 32|64 \
                 (or an ELF file of the same program)"
            )));
        };
        target(scoped, &spec.scope, k, None, &mut |im| {
            im.load_raw(&name, bytes, addr, x).map(|i| i.xlen)
        })?;
        xlen = Some(x);
    }
    for (k, source) in sources.iter().enumerate() {
        if let Source::Raw {
            name,
            addr,
            data,
            scope,
        } = source
        {
            let Some(x) = xlen.or(given) else {
                return Err(Failure::Usage(format!(
                    "{name}: a memory page does not say its address width: give --xlen 32|64 \
                     (or an ELF file of the same program)"
                )));
            };
            target(scoped, scope, k, None, &mut |im| {
                im.load_raw(name, data, *addr, x).map(|i| i.xlen)
            })?;
            xlen = Some(x);
        }
    }
    for (k, source) in sources.iter().enumerate() {
        if let Source::Symbols {
            name,
            symbols,
            scope,
        } = source
        {
            let x = xlen.or(given).unwrap_or(Xlen::Rv64);
            target(scoped, scope, k, None, &mut |im| {
                im.load_symbols(name, symbols.clone(), x).map(|i| i.xlen)
            })?;
        }
    }
    let x = xlen.or(given).unwrap_or(Xlen::Rv64);
    yield_memory_to_files(image, scoped, &memory, &unscoped_files, x)?;
    if let Some(((everywhere, scoped_syms), debug_dirs)) = syms {
        for (k, all) in by_source {
            let s = source_symbols(&sources[k], debug_dirs)?;
            if all {
                everywhere.push(s);
            } else {
                scoped_syms.push(s);
            }
        }
    }
    Ok(xlen)
}

/// A core file's memory with a scope yields to the files whose code is in every space the
/// memory is (`scoped` images flagged in `memory`; the files `unscoped_files` of `image`,
/// which are in every space): where both have code, the file's is used (it has symbols and
/// line tables; `run --code-snapshot`'s memory is what ran), so a program given by its file
/// beside a snapshot of the whole run does not overlap the snapshot's copy of it. Bytes the
/// memory has (not zero) that the file has otherwise are reported: the file is not what ran.
fn yield_memory_to_files(
    image: &Image,
    scoped: &mut [(rvtrace_image::space::Scope, Image)],
    memory: &[bool],
    unscoped_files: &[usize],
    xlen: Xlen,
) -> Result<(), Failure> {
    use rvtrace_image::space::Scope;
    if !memory.iter().any(|&m| m) {
        return Ok(());
    }
    // Whether code of scope `file` is in every space code of scope `mem` is.
    let covers = |file: &Scope, mem: &Scope| {
        file.privilege.is_none_or(|p| mem.privilege == Some(p))
            && file.context.is_none_or(|c| mem.context == Some(c))
    };
    // (scope, file name, address, bytes) of the files' segments.
    let mut files: Vec<(Scope, String, u64, &[u8])> = Vec::new();
    for seg in image.segments() {
        if unscoped_files.contains(&seg.file_index) {
            let name = image.files()[seg.file_index].path.clone();
            files.push((Scope::default(), name, seg.vaddr, &seg.data));
        }
    }
    for ((scope, im), &m) in scoped.iter().zip(memory) {
        if !m {
            for seg in im.segments() {
                let name = im.files()[seg.file_index].path.clone();
                files.push((*scope, name, seg.vaddr, &seg.data));
            }
        }
    }
    let mut rebuilt: Vec<(usize, Image)> = Vec::new();
    // Per file whose code differs from what ran: (file, bytes, first address, spaces).
    let mut differs: Vec<(String, u64, u64, Vec<Scope>)> = Vec::new();
    for (i, ((scope, im), &m)) in scoped.iter().zip(memory).enumerate() {
        if !m {
            continue;
        }
        let over: Vec<&(Scope, String, u64, &[u8])> =
            files.iter().filter(|f| covers(&f.0, scope)).collect();
        let hit = |lo: u64, hi: u64| over.iter().any(|f| f.2 < hi && lo < f.2 + f.3.len() as u64);
        if !im
            .segments()
            .iter()
            .any(|s| hit(s.vaddr, s.vaddr + s.data.len() as u64))
        {
            continue;
        }
        let mut own = Image::new();
        let mut differ: Option<(u64, u64, &str)> = None; // count, first address, file
        for seg in im.segments() {
            let name = &im.files()[seg.file_index].path;
            let end = seg.vaddr + seg.data.len() as u64;
            if !hit(seg.vaddr, end) {
                own.load_raw(name, &seg.data, seg.vaddr, xlen)
                    .map_err(|e| Failure::Tool(e.to_string()))?;
                continue;
            }
            let mut keep: Vec<(u64, &[u8])> = Vec::new();
            let mut run: Option<u64> = None; // start of the bytes kept so far
            for a in seg.vaddr..=end {
                let file = (a < end)
                    .then(|| over.iter().find(|f| f.2 <= a && a < f.2 + f.3.len() as u64))
                    .flatten();
                if let Some(f) = file {
                    let mine = seg.data[(a - seg.vaddr) as usize];
                    if mine != 0 && mine != f.3[(a - f.2) as usize] {
                        let d = differ.get_or_insert((0, a, &f.1));
                        d.0 += 1;
                    }
                }
                match (file.is_some() || a == end, run) {
                    (true, Some(lo)) => {
                        keep.push((
                            lo,
                            &seg.data[(lo - seg.vaddr) as usize..(a - seg.vaddr) as usize],
                        ));
                        run = None;
                    }
                    (false, None) => run = Some(a),
                    _ => {}
                }
            }
            for (lo, bytes) in keep {
                own.load_raw(name, bytes, lo, xlen)
                    .map_err(|e| Failure::Tool(e.to_string()))?;
            }
        }
        if let Some((n, first, file)) = differ {
            match differs.iter_mut().find(|d| d.0 == file) {
                Some(d) => {
                    d.1 += n;
                    d.3.push(*scope);
                }
                None => differs.push((file.to_string(), n, first, vec![*scope])),
            }
        }
        rebuilt.push((i, own));
    }
    for (file, n, first, spaces) in differs {
        let ctx: Vec<String> = spaces
            .iter()
            .filter_map(|s| s.context.map(|c| c.to_string()))
            .collect();
        let where_ = match ctx.len() {
            0 => String::new(),
            1 => format!(" in context {}", ctx[0]),
            _ => format!(" in contexts {}", ctx.join(", ")),
        };
        warn!(
            "{file}: its code differs from what ran (the core file's memory of the same space){where_} \
             at {n} bytes, the first at {first:#x}; the decode reads the file (give it with \
             ctx= and priv= for the process it is)"
        );
    }
    for (i, im) in rebuilt {
        scoped[i].1 = im;
    }
    Ok(())
}
