//! The machine: its state ([`Machine`]: the stack, the marks, the memo, the arena; the
//! [`Sink`] that the machines of nested pickles share), the run loop and the opcode table
//! ([`Machine::exec`]), and where a walk starts and stops ([`Context`], [`End`]). Each
//! family of opcodes is in its own file: `stack` (the stack, marks and memo), `constants`,
//! `containers`, `globals` (imports), `calls` (calls, BUILD, tensor rebuilds, nested
//! pickles), `persistent` (persistent ids); `arena` holds the arena, its collector and
//! the pools of freed vectors.

mod arena;
mod calls;
mod constants;
mod containers;
mod globals;
mod persistent;
mod stack;

pub use arena::{Chunked, COLLECT_FLOOR};
pub use calls::{MAX_DIMS, MAX_NESTING};
pub use constants::MAX_STRING_KEPT;
pub use globals::MAX_GLOBALS;
pub use stack::{MAX_MARKS, MAX_MEMO, MAX_STACK};

use arena::MIN_POOLED;
use super::memo::{read_indices, Memo};
use super::text::{latin1, long_bytes, raw_unicode_escape, text};
use super::value::{GlobalRef, Instance, MoreGlobals, Obj, StorageRef, TensorRef, Value, VALUE};
use crate::error::{clip, push_bounded, Code, Finding, MAX_QUOTED_BYTES};
use crate::formats::pickle::ops::{self, Arg, DecodeError, Op};
use crate::formats::MAX_TENSORS;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

/// Most opcodes walked in one file (all nested pickles included). A 50 MB state-dict
/// pickle has about 10 M opcodes; 200 M bounds the work at a few seconds.
pub const MAX_OPCODES: u64 = 200_000_000;
/// Work beyond one step per opcode, per byte of the walked stream: bytes of nested pickles walked, bytes computed (`_codecs.encode`),
/// items copied (a call's arguments, `OrderedDict(items)`). A memoized pickle loaded, a
/// memoized string encoded or a memoized list passed a thousand times costs a thousand
/// times its size for a few bytes each (found by fuzzing: 820 ms for 31 KB, 591 ms for
/// 20 KB). A pickle at a given offset is walked once; past the budget the rest is not
/// walked or copied (`PickleLimit`). Real files use a few items per call and nest no
/// pickles (obfuscated malware does, once or twice).
pub const WORK_BUDGET_PER_BYTE: u64 = 16;
/// Symbolic values a walk may hold, per byte of the walked stream, plus
/// [`MEMORY_SLACK`]: the stack, the arena's objects and container items, the memo, kept
/// strings, import records, storages and tensors, as counted by the walker (a vector's
/// growth is checked before it happens). With the stream itself in memory, a walk stays
/// within issue 12's 4 × the bytes read + 64 MiB: 3 per byte + 48 MiB, the stream 1 per
/// byte. A state dict laid out as torch.save writes it holds 4.2–4.6 per byte of its first
/// [`MAX_TENSORS`] tensors (560–620 bytes a tensor, with the garbage made since the last
/// collection: 56 MB for 100,000; 81 MB for 131,072, 0.79 of 3 × 17.5 MB + 48 MiB) and
/// ~1.5 per byte past them (only keys and the dict); a stream of one-byte opcodes that each push a value or
/// make an empty list could hold 24–56 (a 24-byte value; a 32-byte slot and its value).
/// Past the budget the walk stops (`PickleLimit`) and the rest of the stream is only
/// scanned for the imports it names.
pub const MEMORY_PER_BYTE: u64 = 3;
/// What any walk may hold whatever its length: a small pickle with a few big containers,
/// and the first ~100,000 tensors of a state dict (see [`MEMORY_PER_BYTE`]).
pub const MEMORY_SLACK: u64 = 48 << 20;

/// What a walk is told about where its bytes are.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// Absolute offset of `data[0]` in the file.
    pub base: u64,
    /// The zip member, if any.
    pub member: Option<String>,
    /// Whether persistent ids are expected (torch files); in a plain pickle one is a finding.
    pub torch: bool,
}

/// Where a walk stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// STOP reached; absolute offset just past it.
    Stop(u64),
    /// The bytes ran out before STOP: absolute offset of the opcode that needed more.
    OutOfData(u64),
    /// Malformed or over a limit (the finding says which).
    Failed,
}

/// An import's identity: module, name, opcode and nesting (a name longer than
/// [`MAX_QUOTED_BYTES`] by its clip and a hash of the whole: [`Sink::key_of`]).
type GlobalKey = (Option<String>, Option<String>, &'static str, u32);

/// What the machines of one walk share (a nested pickle's machine borrows it): the
/// imports, the findings, the opcode count and the work and memory budgets.
pub(super) struct Sink {
    pub(super) globals: Vec<GlobalRef>,
    /// Where each listed import is in `globals`.
    global_index: HashMap<GlobalKey, u32>,
    pub(super) more_globals: MoreGlobals,
    pub(super) findings: Vec<Finding>,
    pub(super) opcodes: u64,
    /// Nested pickles of the file already walked (absolute offset, length).
    walked: std::collections::HashSet<(u64, u64)>,
    /// Nested or computed bytes and copied items still allowed ([`WORK_BUDGET_PER_BYTE`]).
    budget: u64,
    /// Whether the budget ran out (said once).
    exhausted: bool,
    /// Bytes of symbolic values held, as counted ([`MEMORY_PER_BYTE`]).
    pub(super) held: u64,
    /// What `held` may reach.
    memory: u64,
    /// Collect after every opcode
    /// ([`walk_collecting_at_every_opcode`](super::walk_collecting_at_every_opcode)).
    collect_always: bool,
    /// Keys the hash of a long name (random per walk: no crafted collision).
    names: std::collections::hash_map::RandomState,
    /// Tensor rebuilds and storages past [`MAX_TENSORS`] (not kept): said once each.
    pub(super) past_cap: (PastCap, PastCap),
}

/// How many of something went past a cap, and where the first was.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PastCap {
    count: u64,
    first: Option<u64>,
}

impl PastCap {
    fn note(&mut self, at: u64) {
        self.count = self.count.saturating_add(1);
        self.first.get_or_insert(at);
    }

    /// The one finding for `what` past the cap, if any went past it.
    pub(super) fn finding(&self, what: &str) -> Option<Finding> {
        let at = self.first?;
        Some(
            Finding::error(
                Code::LimitExceeded,
                format!(
                    "the pickle has {} more {what} past the first {}, the most tensors listed from one file: they are not listed",
                    crate::fmt::thousands(self.count),
                    crate::fmt::thousands(MAX_TENSORS)
                ),
            )
            .at(at)
            .field("pickle"),
        )
    }
}

impl Sink {
    /// What a walk of a stream of `len` bytes starts with: its work and memory budgets
    /// in proportion ([`WORK_BUDGET_PER_BYTE`], [`MEMORY_PER_BYTE`] + [`MEMORY_SLACK`]).
    pub(super) fn new(len: u64, collect_always: bool) -> Sink {
        Sink {
            collect_always,
            names: std::collections::hash_map::RandomState::new(),
            past_cap: Default::default(),
            globals: Vec::new(),
            global_index: HashMap::new(),
            more_globals: MoreGlobals::default(),
            findings: Vec::new(),
            opcodes: 0,
            walked: std::collections::HashSet::new(),
            budget: WORK_BUDGET_PER_BYTE.saturating_mul(len),
            exhausted: false,
            held: 0,
            memory: MEMORY_PER_BYTE
                .saturating_mul(len)
                .saturating_add(MEMORY_SLACK),
        }
    }

    /// A module or name as part of a [`GlobalKey`]: itself, or when long its clip and a
    /// 64-bit hash of the whole, so that two long names with the same start stay apart
    /// (each judged) while the key holds a bounded copy.
    fn key_of(&self, s: &Option<String>) -> Option<String> {
        use std::hash::BuildHasher;
        s.as_ref().map(|s| {
            if s.len() <= MAX_QUOTED_BYTES {
                s.clone()
            } else {
                format!("{}#{:016x}", clip(s), self.names.hash_one(s))
            }
        })
    }

    fn hold(&mut self, bytes: usize) {
        self.held = self.held.saturating_add(bytes as u64);
    }
}

pub(super) struct Machine<'a, 's> {
    data: &'a [u8],
    ctx: &'a Context,
    nesting: u32,
    sink: &'s mut Sink,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: Memo,
    pub(super) arena: Chunked<Obj>,
    /// Arena slots the collector freed, taken by the next objects made.
    free: Vec<u32>,
    /// Small item vectors and instances the collector freed, emptied, for the next ones
    /// made: a state dict makes and drops five per tensor, and handing them back to the
    /// allocator one by one (then asking again) was a third of the walk's time.
    vec_pool: Vec<Vec<Value>>,
    // boxes, as `Obj::Instance` holds them: a pooled one is reused without allocating
    #[allow(clippy::vec_box)]
    instance_pool: Vec<Box<Instance>>,
    /// Most entries each pool may hold: as many small vectors / instances as the walk made
    /// between the last two collections (so the pools hold one round's worth, not more).
    pool_cap: usize,
    /// Small vectors and instances made since the last collection.
    small_made: usize,
    /// Counted bytes the pools hold (left out of what a collection finds live).
    pooled: u64,
    /// Bytes of objects made (slots and items, reused ones too) since the last collection,
    /// and how many the next collection waits for ([`Machine::collect`]).
    made: u64,
    collect_after: u64,
    pub(super) storages: Vec<StorageRef>,
    storage_by_key: BTreeMap<Rc<str>, u32>,
    /// `module.name` of each global, made once (indexed like `sink.globals`).
    global_names: Vec<Option<Rc<str>>>,
    pub(super) tensors: Vec<TensorRef>,
    pub(super) proto: u8,
    /// Offset (in data) of the opcode being executed.
    pos: usize,
    pub(super) result: Option<Value>,
    /// Where the findings of a pickle computed at run time are placed: the `pickle.loads`
    /// call, as its offsets inside the computed bytes are no place in the file.
    place_at: Option<u64>,
}

/// Why execution stopped early.
enum Stop {
    Malformed(String),
    Limit(String),
    /// Growing the stack or a container would take the walk past its memory budget.
    Memory,
}

type Res<T> = Result<T, Stop>;

fn malformed<T>(msg: impl Into<String>) -> Res<T> {
    Err(Stop::Malformed(msg.into()))
}

/// An opcode's argument of the kind its table entry gives (any other is malformed).
fn line(arg: Arg<'_>) -> Res<&[u8]> {
    match arg {
        Arg::Line(l) => Ok(l),
        _ => malformed("bad argument"),
    }
}

fn bytes(arg: Arg<'_>) -> Res<&[u8]> {
    match arg {
        Arg::Bytes(b) => Ok(b),
        _ => malformed("bad argument"),
    }
}

fn int(arg: Arg<'_>) -> Res<i64> {
    match arg {
        Arg::Int(i) => Ok(i),
        _ => malformed("bad argument"),
    }
}

fn float(arg: Arg<'_>) -> Res<f64> {
    match arg {
        Arg::Float(f) => Ok(f),
        _ => malformed("bad argument"),
    }
}

fn pair(arg: Arg<'_>) -> Res<(&[u8], &[u8])> {
    match arg {
        Arg::Pair(m, n) => Ok((m, n)),
        _ => malformed("bad argument"),
    }
}

impl<'a, 's> Machine<'a, 's> {
    pub(super) fn new(data: &'a [u8], ctx: &'a Context, nesting: u32, sink: &'s mut Sink) -> Self {
        let read = read_indices(data);
        sink.hold(read.bits.capacity() * 8 + read.large.capacity() * 9);
        Machine {
            data,
            ctx,
            nesting,
            sink,
            stack: Vec::new(),
            marks: Vec::new(),
            memo: Memo::new(read, data.len() as u64),
            arena: Chunked::default(),
            free: Vec::new(),
            vec_pool: Vec::new(),
            instance_pool: Vec::new(),
            pool_cap: MIN_POOLED,
            small_made: 0,
            pooled: 0,
            made: 0,
            collect_after: COLLECT_FLOOR,
            storages: Vec::new(),
            storage_by_key: BTreeMap::new(),
            global_names: Vec::new(),
            tensors: Vec::new(),
            proto: 0,
            pos: 0,
            result: None,
            place_at: None,
        }
    }

    fn abs(&self, pos: usize) -> u64 {
        self.ctx.base.saturating_add(pos as u64)
    }

    fn here(&self) -> u64 {
        self.abs(self.pos)
    }

    /// Records a finding; the list stays bounded (`MAX_FINDINGS_PER_CODE` per code, the
    /// rest counted: found by fuzzing, tests/fuzz_regressions.rs).
    fn finding(&mut self, f: Finding) {
        let f = match self.place_at {
            Some(at) if f.offset.is_some() => f.at(at),
            _ => f,
        };
        push_bounded(&mut self.sink.findings, f);
    }

    pub(super) fn run(&mut self) -> End {
        loop {
            if self.sink.opcodes >= MAX_OPCODES {
                let at = self.here();
                self.finding(
                    Finding::error(
                        Code::PickleLimit,
                        format!("more than {MAX_OPCODES} opcodes: the walk stops here"),
                    )
                    .at(at),
                );
                return End::Failed;
            }
            let d = match ops::decode(self.data, self.pos) {
                Ok(d) => d,
                Err(DecodeError::Truncated { .. }) => return End::OutOfData(self.here()),
                Err(e) => {
                    let at = self.here();
                    let msg = match e {
                        DecodeError::UnknownOpcode(b) => {
                            format!("byte {b:#04x} is not a pickle opcode")
                        }
                        DecodeError::NegativeLength(n) => format!("negative length {n}"),
                        DecodeError::LineTooLong => {
                            format!("no newline within {} bytes", ops::MAX_LINE_LEN)
                        }
                        DecodeError::Truncated { .. } => "truncated".into(),
                    };
                    self.finding(
                        Finding::error(Code::PickleMalformed, msg)
                            .at(at)
                            .field("pickle"),
                    );
                    return End::Failed;
                }
            };
            self.sink.opcodes += 1;
            if d.info.op == Op::Stop {
                return match self.stack.pop() {
                    Some(v) => {
                        self.result = Some(v);
                        End::Stop(self.abs(d.next))
                    }
                    None => {
                        let at = self.here();
                        self.finding(
                            Finding::error(Code::PickleMalformed, "STOP with an empty stack")
                                .at(at),
                        );
                        End::Failed
                    }
                };
            }
            if let Err(stop) = self.exec(d.info.op, d.arg) {
                let at = self.here();
                let name = d.info.name;
                let f = match stop {
                    Stop::Malformed(m) => {
                        Finding::error(Code::PickleMalformed, format!("{name}: {m}"))
                    }
                    Stop::Limit(m) => Finding::error(Code::PickleLimit, format!("{name}: {m}")),
                    Stop::Memory => return self.over_memory(),
                };
                self.finding(f.at(at).field("pickle"));
                return End::Failed;
            }
            self.pos = d.next;
            let stack = (self.stack.capacity() as u64).saturating_mul(VALUE as u64);
            let held = self.sink.held.saturating_add(stack);
            // collect once the objects made since the last collection (reused slots and
            // pooled items too) reach half of what was live after it (so each collection,
            // linear in the arena, is paid for by as many bytes made since), or when over
            // the budget; a collection takes a step per arena slot from the work budget, so
            // a walk that holds close to its memory budget, collecting again and again,
            // stops in linear time all the same
            if self.sink.collect_always {
                self.collect();
            } else if self.made > self.collect_after || held > self.sink.memory {
                let cost = self.arena.len() as u64;
                if cost <= self.sink.budget {
                    self.sink.budget -= cost;
                    self.collect();
                }
            }
            let held = self.sink.held.saturating_add(stack);
            if held > self.sink.memory {
                return self.over_memory();
            }
        }
    }

    /// Stops the walk over its memory budget: a finding, then the imports the rest of the
    /// stream names.
    fn over_memory(&mut self) -> End {
        let at = self.here();
        let msg = format!(
            "the walk holds more than {} bytes of symbolic values ({MEMORY_PER_BYTE} per byte of the stream + {} MiB): it stops here; the imports the rest of the stream names (GLOBAL, INST) are still listed",
            self.sink.memory,
            MEMORY_SLACK >> 20
        );
        self.finding(Finding::error(Code::PickleLimit, msg).at(at).field("pickle"));
        self.scan_imports();
        End::Failed
    }

    /// Bytes the walk may still take before its memory budget (the stack by capacity).
    fn room(&self) -> u64 {
        let stack = (self.stack.capacity() as u64).saturating_mul(VALUE as u64);
        self.sink.memory.saturating_sub(self.sink.held.saturating_add(stack))
    }

    /// After the walk stopped: the imports that name themselves in the stream (GLOBAL,
    /// INST), up to STOP or the first byte that is not an opcode. Nothing is pushed.
    fn scan_imports(&mut self) {
        while self.sink.opcodes < MAX_OPCODES {
            let Ok(d) = ops::decode(self.data, self.pos) else { return };
            self.sink.opcodes += 1;
            match (d.info.op, d.arg) {
                (Op::Stop, _) => return,
                (Op::Global, Arg::Pair(m, n)) => {
                    self.record(Some(text(m)), Some(text(n)), "GLOBAL", None);
                }
                (Op::Inst, Arg::Pair(m, n)) => {
                    self.record(Some(text(m)), Some(text(n)), "INST", None);
                }
                _ => {}
            }
            self.pos = d.next;
        }
    }

    /// Executes one opcode (STOP ends the run loop before it gets here): the opcode table,
    /// each family's opcodes done in its file, with their argument as the table decodes it.
    fn exec(&mut self, op: Op, arg: Arg<'a>) -> Res<()> {
        match op {
            // the stack, the marks and the memo (stack.rs)
            Op::Mark => self.mark(),
            Op::Stop => Ok(()),
            Op::Pop => self.pop_top(),
            Op::PopMark => self.pop_mark().map(|_| ()),
            Op::Dup => self.dup(),
            Op::Get => self.memo_get(Self::line_index(line(arg)?)?),
            Op::BinGet | Op::LongBinGet => self.memo_get(int(arg)?),
            Op::Put => self.put(Self::line_index(line(arg)?)?),
            Op::BinPut | Op::LongBinPut => self.put(int(arg)?),
            Op::Memoize => self.memoize(),
            // constants (constants.rs)
            Op::Float => self.float_line(line(arg)?),
            Op::Int | Op::Long => self.int_line(line(arg)?),
            Op::BinInt | Op::BinInt1 | Op::BinInt2 => self.push(Value::Int(int(arg)?)),
            Op::Long1 | Op::Long4 => self.push(long_bytes(bytes(arg)?)),
            Op::BinFloat => self.push(Value::Float(float(arg)?)),
            Op::None => self.push(Value::None),
            Op::NewTrue => self.push(Value::Bool(true)),
            Op::NewFalse => self.push(Value::Bool(false)),
            Op::String => self.quoted_string(line(arg)?),
            Op::BinString | Op::ShortBinString => self.push_string(bytes(arg)?, latin1),
            Op::Unicode => self.push_string(line(arg)?, raw_unicode_escape),
            Op::BinUnicode | Op::ShortBinUnicode | Op::BinUnicode8 => {
                self.push_string(bytes(arg)?, text)
            }
            Op::BinBytes | Op::ShortBinBytes | Op::BinBytes8 | Op::ByteArray8 => {
                self.push_bytes(bytes(arg)?)
            }
            Op::NextBuffer => self.push(Value::Unknown),
            Op::ReadonlyBuffer => self.top().map(|_| ()),
            // containers (containers.rs)
            Op::EmptyTuple => self.push_obj(Obj::Tuple(Vec::new())),
            Op::Tuple => self.push_marked(Obj::Tuple),
            Op::Tuple1 => self.tuple_of(1),
            Op::Tuple2 => self.tuple_of(2),
            Op::Tuple3 => self.tuple_of(3),
            Op::EmptyList => self.push_obj(Obj::List(Vec::new())),
            Op::List => self.push_marked(Obj::List),
            Op::EmptyDict => self.push_obj(Obj::Dict(Vec::new())),
            Op::Dict => self.dict(),
            Op::EmptySet => self.push_obj(Obj::Set(Vec::new())),
            Op::FrozenSet => self.push_marked(Obj::Set),
            Op::Append => self.append_one(),
            Op::Appends | Op::AddItems => self.append_mark(),
            Op::SetItem => self.set_item(),
            Op::SetItems => self.set_items_mark(),
            // imports (globals.rs)
            Op::Global => self.global(pair(arg)?),
            Op::StackGlobal => self.stack_global(),
            Op::Ext1 => self.ext("EXT1", int(arg)?),
            Op::Ext2 => self.ext("EXT2", int(arg)?),
            Op::Ext4 => self.ext("EXT4", int(arg)?),
            // calls and BUILD (calls.rs)
            Op::Inst => self.inst(pair(arg)?),
            Op::Obj => self.obj_call(),
            Op::Reduce => self.reduce(),
            Op::NewObj => self.new_instance(false),
            Op::NewObjEx => self.new_instance(true),
            Op::Build => self.build(),
            // persistent ids (persistent.rs)
            Op::PersId => self.pers_id(line(arg)?),
            Op::BinPersId => self.bin_pers_id(),
            // framing
            Op::Proto => self.protocol(int(arg)?),
            // a frame only groups the opcodes that follow (they are decoded in place);
            // a frame longer than the stream shows up as the stream being truncated
            Op::Frame => Ok(()),
        }
    }

    /// PROTO: the highest protocol seen.
    fn protocol(&mut self, p: i64) -> Res<()> {
        if !(0..=5).contains(&p) {
            return malformed(format!("unsupported protocol {p}"));
        }
        self.proto = self.proto.max(p as u8);
        Ok(())
    }
}
