//! The writers: flow elements of one or more harts in, the three Parquet tables out.
//!
//! Memory stays flat in the trace size: `flow` rows are buffered per hart only up to one row
//! group ([`ROW_GROUP_ROWS`]) and written as each fills; `functions` and `branches` are
//! aggregates whose size follows the program (its functions, its branches), not the trace.

use crate::schema;
use crate::TableError;
use arrow_array::builder::{
    BooleanBuilder, StringBuilder, StringDictionaryBuilder, UInt32Builder, UInt64Builder,
    UInt8Builder,
};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::{KeyValue, SortingColumn};
use parquet::file::properties::WriterProperties;
use rvtrace_analysis::{Place, Profiler, Symbols, System};
use rvtrace_flow::{insn_len_at, FlowElement, FlowSink, LossReason, SyncReason};
use rvtrace_image::space::Position;
use rvtrace_image::Image;
use rvtrace_isa::{classify, CfClass, IsaConfig};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::Arc;

/// Rows of one hart's `flow` buffered before they are written as one row group.
pub const ROW_GROUP_ROWS: usize = 1 << 17;

/// Distinct ranges whose walk (function pieces, inner branches) is remembered; past it the
/// cache starts again (memory stays bounded on code that never repeats).
const RANGE_CACHE: usize = 1 << 20;

/// The name of a control-flow class in the `class` column (the [`CfClass`] variant in
/// snake case).
pub fn class_name(c: CfClass) -> &'static str {
    match c {
        CfClass::None => "none",
        CfClass::Branch => "branch",
        CfClass::InferableCall => "inferable_call",
        CfClass::UninferableCall => "uninferable_call",
        CfClass::CoroutineSwap => "coroutine_swap",
        CfClass::Return => "return",
        CfClass::InferableJump => "inferable_jump",
        CfClass::UninferableJump => "uninferable_jump",
        CfClass::OtherInferableJump => "other_inferable_jump",
        CfClass::OtherUninferableJump => "other_uninferable_jump",
        CfClass::TrapReturn => "trap_return",
        CfClass::EnvTrap => "env_trap",
        CfClass::TableJump => "table_jump",
        CfClass::TableCall => "table_call",
        CfClass::PopRet => "pop_ret",
    }
}

fn sync_reason(r: &SyncReason) -> String {
    match r {
        SyncReason::Start => "start".into(),
        SyncReason::Periodic => "periodic".into(),
        SyncReason::Recovery => "recovery".into(),
        SyncReason::Other(n) => format!("other {n}"),
    }
}

fn loss_kind(r: &LossReason) -> &'static str {
    match r {
        LossReason::Malformed(_) => "malformed",
        LossReason::Overflow(_) => "overflow",
        LossReason::StartLost(_) => "start_lost",
        LossReason::EndLost(_) => "end_lost",
        LossReason::NoTrace(_) => "no_trace",
        LossReason::Mismatch(_) => "mismatch",
    }
}

fn props(sorted_by: &[usize]) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_sorting_columns((!sorted_by.is_empty()).then(|| {
            sorted_by
                .iter()
                .map(|&i| SortingColumn {
                    column_idx: i as i32,
                    descending: false,
                    nulls_first: false,
                })
                .collect()
        }))
        .set_key_value_metadata(Some(vec![KeyValue::new(
            schema::SCHEMA_KEY.to_string(),
            schema::SCHEMA_VERSION.to_string(),
        )]))
        .build()
}

/// A Parquet writer of one table.
struct Table<W: Write + Send> {
    w: ArrowWriter<W>,
    rows: u64,
}

impl<W: Write + Send> Table<W> {
    fn new(out: W, schema: SchemaRef, sorted_by: &[usize]) -> Result<Self, TableError> {
        let w = ArrowWriter::try_new(out, schema, Some(props(sorted_by)))?;
        Ok(Table { w, rows: 0 })
    }

    /// Writes `batch` as a row group of its own (so that each row group holds one hart).
    fn group(&mut self, batch: RecordBatch) -> Result<(), TableError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.rows += batch.num_rows() as u64;
        self.w.write(&batch)?;
        Ok(self.w.flush()?)
    }

    fn close(self) -> Result<W, TableError> {
        Ok(self.w.into_inner()?)
    }
}

/// What a range walks through: its pieces (one per function it runs in) and the conditional
/// branches before its last instruction (not taken, by the flow's range rule).
struct RangeWalk {
    /// (start, last, count, function index or `None`).
    pieces: Vec<(u64, u64, u64, Option<u32>)>,
    /// Conditional branches other than the last instruction.
    inner_branches: Vec<u64>,
    /// Whether the image holds the range (else it is one piece without inner branches).
    covered: bool,
}

/// Walks a range through the program. A range the image does not cover (it cannot come from
/// a decoder, which walks the same image) stays one piece with no inner branches.
fn walk(
    image: &Image,
    syms: &Symbols,
    isa: &IsaConfig,
    start: u64,
    last: u64,
    count: u64,
) -> RangeWalk {
    let func = |pc: u64| syms.function_index(pc).map(|i| i as u32);
    let whole = || RangeWalk {
        pieces: vec![(start, last, count, func(start))],
        inner_branches: Vec::new(),
        covered: false,
    };
    let mut pieces = Vec::new();
    let mut inner = Vec::new();
    let (mut pc, mut piece_start, mut piece_n, mut f) = (start, start, 0u64, func(start));
    for i in 0..count {
        piece_n += 1;
        if i + 1 == count {
            if pc != last {
                return whole();
            }
            break;
        }
        let Some(len) = insn_len_at(image, pc) else {
            return whole();
        };
        if let Some(bits) = image.fetch(pc) {
            if classify(isa, bits).class == CfClass::Branch {
                inner.push(pc);
            }
        }
        let next = pc.wrapping_add(len);
        let nf = func(next);
        if nf != f {
            pieces.push((piece_start, pc, piece_n, f));
            (piece_start, piece_n, f) = (next, 0, nf);
        }
        pc = next;
    }
    pieces.push((piece_start, last, piece_n, f));
    RangeWalk {
        pieces,
        inner_branches: inner,
        covered: true,
    }
}

/// Column builders of `flow` rows (in [`schema::flow`]'s order).
struct FlowRows {
    hart: UInt32Builder,
    seq: UInt64Builder,
    kind: StringDictionaryBuilder<Int32Type>,
    retired: UInt64Builder,
    start: UInt64Builder,
    last: UInt64Builder,
    count: UInt64Builder,
    class: StringDictionaryBuilder<Int32Type>,
    taken: BooleanBuilder,
    function: StringDictionaryBuilder<Int32Type>,
    cause: UInt64Builder,
    interrupt: BooleanBuilder,
    tval: UInt64Builder,
    epc: UInt64Builder,
    handler: UInt64Builder,
    privilege: UInt8Builder,
    context: UInt64Builder,
    process: StringDictionaryBuilder<Int32Type>,
    time: UInt64Builder,
    reason: StringDictionaryBuilder<Int32Type>,
    message: StringBuilder,
    offset: UInt64Builder,
    skipped: UInt64Builder,
    len: usize,
}

/// One row's values beyond hart, seq, kind and retired (all `None` unless set).
#[derive(Default)]
struct Row<'s> {
    start: Option<u64>,
    last: Option<u64>,
    count: Option<u64>,
    class: Option<&'static str>,
    taken: Option<bool>,
    function: Option<&'s str>,
    cause: Option<u64>,
    interrupt: Option<bool>,
    tval: Option<u64>,
    epc: Option<u64>,
    handler: Option<u64>,
    time: Option<u64>,
    reason: Option<&'s str>,
    message: Option<&'s str>,
    offset: Option<u64>,
    skipped: Option<u64>,
}

impl FlowRows {
    fn new() -> Self {
        FlowRows {
            hart: UInt32Builder::new(),
            seq: UInt64Builder::new(),
            kind: StringDictionaryBuilder::new(),
            retired: UInt64Builder::new(),
            start: UInt64Builder::new(),
            last: UInt64Builder::new(),
            count: UInt64Builder::new(),
            class: StringDictionaryBuilder::new(),
            taken: BooleanBuilder::new(),
            function: StringDictionaryBuilder::new(),
            cause: UInt64Builder::new(),
            interrupt: BooleanBuilder::new(),
            tval: UInt64Builder::new(),
            epc: UInt64Builder::new(),
            handler: UInt64Builder::new(),
            privilege: UInt8Builder::new(),
            context: UInt64Builder::new(),
            process: StringDictionaryBuilder::new(),
            time: UInt64Builder::new(),
            reason: StringDictionaryBuilder::new(),
            message: StringBuilder::new(),
            offset: UInt64Builder::new(),
            skipped: UInt64Builder::new(),
            len: 0,
        }
    }

    fn push(&mut self, hart: u32, seq: u64, kind: &str, retired: u64, at: &At, r: Row) {
        self.hart.append_value(hart);
        self.seq.append_value(seq);
        self.kind.append_value(kind);
        self.retired.append_value(retired);
        self.start.append_option(r.start);
        self.last.append_option(r.last);
        self.count.append_option(r.count);
        self.class.append_option(r.class);
        self.taken.append_option(r.taken);
        self.function.append_option(r.function);
        self.cause.append_option(r.cause);
        self.interrupt.append_option(r.interrupt);
        self.tval.append_option(r.tval);
        self.epc.append_option(r.epc);
        self.handler.append_option(r.handler);
        self.privilege.append_option(at.position.privilege);
        self.context.append_option(at.position.context);
        self.process.append_option(at.process);
        self.time.append_option(r.time);
        self.reason.append_option(r.reason);
        self.message.append_option(r.message);
        self.offset.append_option(r.offset);
        self.skipped.append_option(r.skipped);
        self.len += 1;
    }

    /// The rows so far as one batch; the builders start again.
    fn batch(&mut self) -> Result<RecordBatch, TableError> {
        self.len = 0;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.hart.finish()),
            Arc::new(self.seq.finish()),
            Arc::new(self.kind.finish()),
            Arc::new(self.retired.finish()),
            Arc::new(self.start.finish()),
            Arc::new(self.last.finish()),
            Arc::new(self.count.finish()),
            Arc::new(self.class.finish()),
            Arc::new(self.taken.finish()),
            Arc::new(self.function.finish()),
            Arc::new(self.cause.finish()),
            Arc::new(self.interrupt.finish()),
            Arc::new(self.tval.finish()),
            Arc::new(self.epc.finish()),
            Arc::new(self.handler.finish()),
            Arc::new(self.privilege.finish()),
            Arc::new(self.context.finish()),
            Arc::new(self.process.finish()),
            Arc::new(self.time.finish()),
            Arc::new(self.reason.finish()),
            Arc::new(self.message.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.skipped.finish()),
        ];
        Ok(RecordBatch::try_new(schema::flow(), cols)?)
    }
}

/// Taken, not taken, unknown outcome.
type Outcomes = [u64; 3];

/// Where a hart's flow is: the privilege and context last reported (each row's), and the
/// name of its address space ([`System::name`]; `None` for a program of one space).
struct At<'s> {
    position: Position,
    process: Option<&'s str>,
}

/// What is kept per hart.
struct Hart<'a> {
    seq: u64,
    retired: u64,
    rows: Option<FlowRows>,
    profiler: Option<Profiler<'a>>,
    /// Outcomes by space and address.
    branches: HashMap<(usize, u64), Outcomes>,
    /// The space its flow is in.
    place: Place<'a>,
    position: Position,
}

/// Which tables to write, and where.
pub struct Outputs<W: Write + Send> {
    /// `flow`.
    pub flow: Option<W>,
    /// `functions`.
    pub functions: Option<W>,
    /// `branches`.
    pub branches: Option<W>,
}

/// Rows written per table ([`Tables::finish`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Rows of `flow`.
    pub flow: u64,
    /// Rows of `functions`.
    pub functions: u64,
    /// Rows of `branches`.
    pub branches: u64,
    /// Ranges that the program image did not cover (kept whole in `flow`; their inner
    /// branches are not in `branches`).
    pub unwalked: u64,
}

/// Flow elements of one or more harts in, the Parquet tables out. Feed each hart through
/// [`Tables::hart`] (a [`FlowSink`]), then call [`Tables::finish`].
pub struct Tables<'a, W: Write + Send> {
    image: &'a Image,
    syms: &'a Symbols,
    /// A program of several address spaces ([`Tables::in_system`]).
    system: Option<&'a System>,
    isa: IsaConfig,
    flow: Option<Table<W>>,
    functions: Option<W>,
    branches: Option<W>,
    harts: BTreeMap<u32, Hart<'a>>,
    /// Ranges walked, by space, start, last and count.
    walks: HashMap<(usize, u64, u64, u64), Arc<RangeWalk>>,
    unwalked: u64,
    error: Option<TableError>,
}

impl<'a, W: Write + Send> Tables<'a, W> {
    /// Tables of the program in `image` (functions from `syms`) of harts with `isa`.
    pub fn new(
        image: &'a Image,
        syms: &'a Symbols,
        isa: IsaConfig,
        out: Outputs<W>,
    ) -> Result<Self, TableError> {
        let flow = match out.flow {
            // Each row group holds one hart's rows in `seq` order (Table::group).
            Some(w) => Some(Table::new(w, schema::flow(), &[0, 1])?),
            None => None,
        };
        Ok(Tables {
            image,
            syms,
            system: None,
            isa,
            flow,
            functions: out.functions,
            branches: out.branches,
            harts: BTreeMap::new(),
            walks: HashMap::new(),
            unwalked: 0,
            error: None,
        })
    }

    /// Tables of a program of several address spaces ([`System`]): each range is walked and
    /// named in the space the flow is in, each row carries the space's name (`process`), the
    /// profile and the branches are per hart and space.
    pub fn in_system(
        system: &'a System,
        isa: IsaConfig,
        out: Outputs<W>,
    ) -> Result<Self, TableError> {
        let mut t = Tables::new(system.image(0), system.syms(0), isa, out)?;
        t.system = Some(system);
        Ok(t)
    }

    /// The sink of hart `hart`'s flow elements (in execution order; one hart's elements may
    /// come in several calls).
    pub fn hart(&mut self, hart: u32) -> HartSink<'_, 'a, W> {
        HartSink { t: self, hart }
    }

    fn range_walk(&mut self, place: Place, start: u64, last: u64, count: u64) -> Arc<RangeWalk> {
        let key = (place.index, start, last, count);
        let w = match self.walks.get(&key) {
            Some(w) => w.clone(),
            None => {
                if self.walks.len() >= RANGE_CACHE {
                    self.walks.clear();
                }
                let w = Arc::new(walk(place.image, place.syms, &self.isa, start, last, count));
                self.walks.insert(key, w.clone());
                w
            }
        };
        if !w.covered {
            self.unwalked += 1;
        }
        w
    }

    fn element(&mut self, hart: u32, e: &FlowElement) {
        if self.error.is_some() {
            return;
        }
        let (image, syms, isa, system) = (self.image, self.syms, self.isa, self.system);
        let (want_flow, want_profile) = (self.flow.is_some(), self.functions.is_some());
        let want_branches = self.branches.is_some();
        let h = self.harts.entry(hart).or_insert_with(|| Hart {
            seq: 0,
            retired: 0,
            rows: want_flow.then(FlowRows::new),
            profiler: want_profile.then(|| match system {
                Some(s) => Profiler::in_system(s, isa),
                None => Profiler::new(image, syms, isa),
            }),
            branches: HashMap::new(),
            place: match system {
                Some(s) => Place::start(s),
                None => Place::one(image, syms),
            },
            position: Position::default(),
        });
        if let FlowElement::Context { privilege, context } = *e {
            h.position.report(privilege, context);
            h.place.report(privilege, context);
        }
        if let Some(p) = h.profiler.as_mut() {
            p.element(e);
        }
        let place = h.place;
        let walk = match *e {
            FlowElement::Range {
                start, last, count, ..
            } if want_flow || want_branches => Some(self.range_walk(place, start, last, count)),
            _ => None,
        };
        let Some(h) = self.harts.get_mut(&hart) else {
            return;
        };
        if let (
            true,
            Some(w),
            FlowElement::Range {
                last, class, taken, ..
            },
        ) = (want_branches, &walk, e)
        {
            for pc in &w.inner_branches {
                h.branches.entry((place.index, *pc)).or_default()[1] += 1;
            }
            if *class == CfClass::Branch {
                let i = match taken {
                    Some(true) => 0,
                    Some(false) => 1,
                    None => 2,
                };
                h.branches.entry((place.index, *last)).or_default()[i] += 1;
            }
        }
        let Some(rows) = h.rows.as_mut() else {
            if let FlowElement::Range { count, .. } = e {
                h.retired += count;
            }
            return;
        };
        let syms = place.syms;
        let name = |pc: u64| Some(syms.name_at(pc));
        let at = At {
            position: h.position,
            process: system.map(|s| s.name(place.index)),
        };
        let mut push = |kind: &str, retired: u64, r: Row| {
            rows.push(hart, h.seq, kind, retired, &at, r);
            h.seq += 1;
        };
        match e {
            FlowElement::Sync { addr, reason } => push(
                "sync",
                h.retired,
                Row {
                    start: Some(*addr),
                    function: name(*addr),
                    reason: Some(&sync_reason(reason)),
                    ..Row::default()
                },
            ),
            FlowElement::Range {
                count,
                class,
                taken,
                ..
            } => {
                let w = walk.as_ref().expect("walked above");
                let n = w.pieces.len();
                let mut retired = h.retired;
                for (i, &(s, l, c, f)) in w.pieces.iter().enumerate() {
                    let end = i + 1 == n;
                    push(
                        "range",
                        retired,
                        Row {
                            start: Some(s),
                            last: Some(l),
                            count: Some(c),
                            // A piece that falls into the next function ends sequentially.
                            class: Some(if end { class_name(*class) } else { "none" }),
                            taken: if end { *taken } else { None },
                            function: Some(f.map_or(rvtrace_analysis::symbols::UNKNOWN, |f| {
                                syms.functions()[f as usize].name.as_str()
                            })),
                            ..Row::default()
                        },
                    );
                    retired += c;
                }
                h.retired += count;
            }
            FlowElement::Trap {
                cause,
                interrupt,
                tval,
                epc,
                handler,
            } => push(
                "trap",
                h.retired,
                Row {
                    cause: *cause,
                    interrupt: Some(*interrupt),
                    tval: *tval,
                    epc: *epc,
                    handler: *handler,
                    function: epc.and_then(name),
                    ..Row::default()
                },
            ),
            // The row carries the report (the position from here on).
            FlowElement::Context { .. } => push("context", h.retired, Row::default()),
            FlowElement::Time { time } => push(
                "time",
                h.retired,
                Row {
                    time: Some(*time),
                    ..Row::default()
                },
            ),
            FlowElement::Loss {
                offset,
                skipped,
                reason,
            } => push(
                "loss",
                h.retired,
                Row {
                    offset: Some(*offset),
                    skipped: *skipped,
                    reason: Some(loss_kind(reason)),
                    message: Some(reason.text()),
                    ..Row::default()
                },
            ),
            FlowElement::End { offset } => push(
                "end",
                h.retired,
                Row {
                    offset: Some(*offset),
                    ..Row::default()
                },
            ),
            FlowElement::Event {
                offset,
                kind,
                addr,
                value,
            } => {
                // The value (and a write's tag) as text, as the flow text shows them.
                let text = kind.details(*value);
                push(
                    "event",
                    h.retired,
                    Row {
                        start: *addr,
                        function: addr.and_then(name),
                        reason: Some(kind.name()),
                        message: (!text.is_empty()).then_some(text.as_str()),
                        offset: Some(*offset),
                        ..Row::default()
                    },
                )
            }
            FlowElement::Ignored {
                offset,
                kind,
                fields,
            } => push(
                "ignored",
                h.retired,
                Row {
                    offset: Some(*offset),
                    reason: Some(kind),
                    message: Some(fields),
                    ..Row::default()
                },
            ),
        }
        if rows.len >= ROW_GROUP_ROWS {
            let r = rows.batch().and_then(|b| match self.flow.as_mut() {
                Some(t) => t.group(b),
                None => Ok(()),
            });
            if let Err(m) = r {
                self.error = Some(m);
            }
        }
    }

    /// Whether a write failed (the elements after it are dropped; [`Tables::finish`] returns
    /// the error).
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Writes what is left and closes every table; returns the writers and the row counts.
    pub fn finish(mut self) -> Result<(Outputs<W>, Written), TableError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut written = Written {
            unwalked: self.unwalked,
            ..Written::default()
        };
        let mut out = Outputs {
            flow: None,
            functions: None,
            branches: None,
        };
        if let Some(mut t) = self.flow.take() {
            for h in self.harts.values_mut() {
                if let Some(rows) = h.rows.as_mut() {
                    t.group(rows.batch()?)?;
                }
            }
            written.flow = t.rows;
            out.flow = Some(t.close()?);
        }
        if let Some(w) = self.functions.take() {
            let mut t = Table::new(w, schema::functions(), &[0])?;
            for (&hart, h) in self.harts.iter_mut() {
                let Some(p) = h.profiler.take() else {
                    continue;
                };
                match self.system {
                    Some(s) => {
                        for (i, part) in p.profiles_by_space() {
                            t.group(functions_batch(hart, Some(s.name(i)), &part)?)?;
                        }
                    }
                    None => t.group(functions_batch(hart, None, &p.profile())?)?,
                }
            }
            written.functions = t.rows;
            out.functions = Some(t.close()?);
        }
        if let Some(w) = self.branches.take() {
            let mut t = Table::new(w, schema::branches(), &[0])?;
            for (&hart, h) in self.harts.iter() {
                t.group(branches_batch(hart, &h.branches, self.syms, self.system)?)?;
            }
            written.branches = t.rows;
            out.branches = Some(t.close()?);
        }
        Ok((out, written))
    }
}

/// One hart's flat profile (the order of [`rvtrace_analysis::Profile::flat`]).
fn functions_batch(
    hart: u32,
    process: Option<&str>,
    p: &rvtrace_analysis::Profile,
) -> Result<RecordBatch, TableError> {
    let flat = p.flat();
    let mut process_col = StringBuilder::new();
    let mut b = (
        UInt32Builder::new(),
        StringBuilder::new(),
        UInt64Builder::new(),
        UInt64Builder::new(),
        UInt64Builder::new(),
        UInt64Builder::new(),
        UInt64Builder::new(),
    );
    for r in &flat {
        b.0.append_value(hart);
        process_col.append_option(process);
        b.1.append_value(&r.name);
        b.2.append_value(r.self_.insns);
        b.3.append_value(r.inclusive.insns);
        b.4.append_value(r.calls);
        b.5.append_option(p.has_time.then_some(r.self_.time));
        b.6.append_option(p.has_time.then_some(r.inclusive.time));
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(b.0.finish()),
        Arc::new(process_col.finish()),
        Arc::new(b.1.finish()),
        Arc::new(b.2.finish()),
        Arc::new(b.3.finish()),
        Arc::new(b.4.finish()),
        Arc::new(b.5.finish()),
        Arc::new(b.6.finish()),
    ];
    Ok(RecordBatch::try_new(schema::functions(), cols)?)
}

/// One hart's branch outcomes, by space and address.
fn branches_batch(
    hart: u32,
    m: &HashMap<(usize, u64), Outcomes>,
    syms: &Symbols,
    system: Option<&System>,
) -> Result<RecordBatch, TableError> {
    let mut pcs: Vec<_> = m.iter().collect();
    pcs.sort_unstable_by_key(|(k, _)| **k);
    let mut process_col = StringBuilder::new();
    let mut b = (
        UInt32Builder::new(),
        UInt64Builder::new(),
        StringBuilder::new(),
        UInt64Builder::new(),
        UInt64Builder::new(),
        UInt64Builder::new(),
    );
    for (&(space, pc), o) in pcs {
        b.0.append_value(hart);
        process_col.append_option(system.map(|s| s.name(space)));
        b.1.append_value(pc);
        b.2.append_value(system.map_or(syms, |s| s.syms(space)).name_at(pc));
        b.3.append_value(o[0]);
        b.4.append_value(o[1]);
        b.5.append_value(o[2]);
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(b.0.finish()),
        Arc::new(process_col.finish()),
        Arc::new(b.1.finish()),
        Arc::new(b.2.finish()),
        Arc::new(b.3.finish()),
        Arc::new(b.4.finish()),
        Arc::new(b.5.finish()),
    ];
    Ok(RecordBatch::try_new(schema::branches(), cols)?)
}

/// One hart's flow into [`Tables`].
pub struct HartSink<'t, 'a, W: Write + Send> {
    t: &'t mut Tables<'a, W>,
    hart: u32,
}

impl<W: Write + Send> FlowSink for HartSink<'_, '_, W> {
    fn element(&mut self, e: &FlowElement) {
        self.t.element(self.hart, e);
    }

    fn stop_requested(&self) -> bool {
        self.t.failed()
    }
}
