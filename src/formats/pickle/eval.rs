//! A static evaluator for pickle streams: it walks every opcode with a symbolic stack and
//! memo, records every import the stream would perform (with its absolute byte offset),
//! follows torch's persistent ids and tensor rebuild calls to build the tensor inventory,
//! and walks nested pickles (bytes handed to `pickle.loads`). It never imports, never
//! calls, never executes anything: a "call" (REDUCE, NEWOBJ, INST, OBJ) only builds a
//! symbolic [`Obj::Instance`], except for the few torch/collections/_codecs functions
//! whose meaning is fixed by the format (tensor rebuilds, `OrderedDict`, `_codecs.encode`).
//!
//! Objects live in an arena (a [`Chunked`] vector of [`Obj`]) and values refer to them by
//! index, so DUP / GET are O(1), mutation through the memo is shared as in Python, and
//! cycles are harmless. Every container item was pushed by one opcode, so memory is
//! O(opcodes), and the opcode count is bounded. What the stream can no longer reach is
//! freed: a mark-and-sweep collector ([`Machine::collect`]) returns unreachable objects'
//! slots for reuse, and the memo keeps only entries some GET of the stream reads.

use super::ops::{self, Arg, DecodeError, Op};
use super::safety::{self, GlobalVerdict};
use crate::error::{cap_findings, clip, clip_owned, push_bounded, Code, Finding, MAX_QUOTED_BYTES};
use crate::formats::MAX_TENSORS;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

/// Most opcodes walked in one file (all nested pickles included). A 50 MB state-dict
/// pickle has about 10 M opcodes; 200 M bounds the work at a few seconds.
pub const MAX_OPCODES: u64 = 200_000_000;
/// Deepest value stack. Pickle writers batch containers 1000 items at a time, so real
/// stacks stay small; protocol 0 `LIST`/`DICT`/`TUPLE` of a big container can hold all
/// items at once. 16 M values (about 400 MB of symbolic values) is beyond any real file.
pub const MAX_STACK: usize = 16 << 20;
/// Deepest MARK nesting (each nested container under construction adds one).
pub const MAX_MARKS: usize = 1 << 16;
/// Most memo entries. Writers memoize every container and string once.
pub const MAX_MEMO: usize = 16 << 20;
/// Longest string kept as a value (keys, module and class names); a longer one is kept
/// only as its length and cannot name an import or a tensor.
pub const MAX_STRING_KEPT: usize = 1 << 20;
/// Nested pickles walked inside one another (`pickle.loads(b"…pickle.loads(b'…')…")`).
pub const MAX_NESTING: u32 = 8;
/// Deepest container nesting followed when naming tensors by key path.
pub const MAX_PATH_DEPTH: usize = 256;
/// Most dimensions read from a tensor's size tuple (torch allows 64).
pub const MAX_DIMS: usize = 64;
/// Longest key path a tensor is named by: each key is clipped (`MAX_QUOTED_BYTES`) and
/// keys past this length are `…`. Real names are under 300 bytes; unbounded, one 1 MiB
/// key memoized and used at 256 levels made every tensor's name 256 MiB.
pub const MAX_NAME_BYTES: usize = 1024;
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
/// Bytes of objects a walk makes before its first collection, and at least between two
/// (otherwise half of what was live after the last): small pickles are never collected,
/// and garbage stays under half of what is live.
pub const COLLECT_FLOOR: u64 = 4 << 20;
/// Largest item vector kept for reuse (a state dict's tuples hold 2 to 6 items).
const POOLED_CAPACITY: usize = 8;
/// Fewest and most vectors, and instances, kept for reuse: as many as were made in the
/// last round between two collections, within these (the rest go back to the allocator).
const MIN_POOLED: usize = 1 << 10;
const MAX_POOLED: usize = 1 << 20;
/// Distinct imports listed per walk beyond the ones that cannot be numerous (allowed ones,
/// and the callables the walker follows): real files import a few dozen things; one
/// crafted to import 200,000 distinct names made a record and an explanation each. Past
/// this the imports are counted by verdict ([`MoreGlobals`]), never dropped from the
/// verdict.
pub const MAX_GLOBALS: usize = 4096;

/// A symbolic value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer that needs 65 to 128 bits, as two halves (keeps `Value` 8-byte aligned).
    Long {
        lo: u64,
        hi: i64,
    },
    /// An integer wider than 128 bits.
    BigInt,
    Float(f64),
    Str(Rc<str>),
    /// A string longer than [`MAX_STRING_KEPT`] (its length).
    LongStr(u64),
    /// Bytes stored in the walked stream: absolute offset and length.
    Bytes {
        at: u64,
        len: u64,
    },
    /// Bytes computed by `_codecs.encode(str, "latin1")`.
    OwnedBytes(Rc<[u8]>),
    /// The object an import produced: index into [`Walk::globals`].
    Global(u32),
    /// A storage from a persistent id: index into [`Walk::storages`] (a value, not an arena
    /// object: a state dict holds one per tensor, and a slot each was a fifth of the walk).
    Storage(u32),
    /// A tensor from a rebuild call: index into [`Walk::tensors`].
    Tensor(u32),
    /// A container or object: index into the arena.
    Obj(u32),
    /// Anything we do not model (out-of-band buffers, results of unknown imports).
    Unknown,
}

/// An integer value, as narrow as it fits.
pub fn int_value(v: i128) -> Value {
    match i64::try_from(v) {
        Ok(i) => Value::Int(i),
        Err(_) => Value::Long {
            lo: v as u64,
            hi: (v >> 64) as i64,
        },
    }
}

impl Value {
    /// The integer, when it is one that fits 128 bits.
    pub fn as_i128(&self) -> Option<i128> {
        match self {
            Value::Int(i) => Some(i128::from(*i)),
            Value::Long { lo, hi } => Some((i128::from(*hi) << 64) | i128::from(*lo)),
            Value::Bool(b) => Some(i128::from(*b)),
            _ => None,
        }
    }
}

/// An arena object.
#[derive(Clone, Debug)]
pub enum Obj {
    List(Vec<Value>),
    Tuple(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    Set(Vec<Value>),
    /// The result of a call we did not evaluate (boxed: keeps `Obj` small).
    Instance(Box<Instance>),
    /// A slot the collector freed (no value refers to it); the next object made takes it.
    Free,
}

/// What was called, its arguments, the state BUILD gave it, and items / entries appended
/// to it.
#[derive(Clone, Debug)]
pub struct Instance {
    pub func: Value,
    pub args: Value,
    pub state: Option<Value>,
    pub items: Vec<Value>,
    pub entries: Vec<(Value, Value)>,
}

impl Instance {
    fn obj(func: Value, args: Value) -> Obj {
        Obj::Instance(Box::new(Instance {
            func,
            args,
            state: None,
            items: Vec::new(),
            entries: Vec::new(),
        }))
    }
}

/// One import the stream performs. Serializable both ways (the page's parse worker hands
/// inspections over in postcard, which needs every field written, always).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GlobalRef {
    /// The module imported (after `_compat_pickle` renames); `None` when computed at run time.
    pub module: Option<String>,
    /// The attribute path; `None` when computed at run time.
    pub name: Option<String>,
    /// `GLOBAL`, `STACK_GLOBAL`, `INST`, `EXT1/2/4`, or `REDUCE` for a
    /// `getattr(module, "name")` the walker resolved.
    #[serde(deserialize_with = "opcode_name")]
    pub opcode: OpcodeName,
    /// Absolute byte offset of the opcode in the file.
    pub offset: u64,
    /// The zip member the pickle is in.
    pub member: Option<String>,
    pub verdict: GlobalVerdict,
    pub why: String,
    /// The module and name as written, when `_compat_pickle` renamed them.
    pub written: Option<(String, String)>,
    /// 0 for the file's own pickle, 1 for a pickle nested in it, …
    pub nesting: u32,
    /// How many times the stream performs this import (same module, name, opcode and
    /// nesting); `offset` is the first.
    pub count: u64,
}

/// Imports past [`MAX_GLOBALS`], counted by verdict (occurrences, not distinct names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoreGlobals {
    pub count: u64,
    pub dangerous: u64,
    pub unknown: u64,
}

impl MoreGlobals {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn add(&mut self, o: &MoreGlobals) {
        self.count = self.count.saturating_add(o.count);
        self.dangerous = self.dangerous.saturating_add(o.dangerous);
        self.unknown = self.unknown.saturating_add(o.unknown);
    }
}

/// An opcode's name, one of the table's. A named type so that serde's derive does not
/// take the field for a `&str` borrowed from the input (which would need `'de: 'static`);
/// it is read back through [`opcode_name`].
pub type OpcodeName = &'static str;

/// An opcode name read back: the table's own `&'static str` ("?" for a name no opcode has).
fn opcode_name<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let name = std::borrow::Cow::<str>::deserialize(d)?;
    Ok(ops::static_name(&name))
}

impl GlobalRef {
    fn full(&self) -> Option<(&str, &str)> {
        Some((self.module.as_deref()?, self.name.as_deref()?))
    }
}

/// A storage named by a torch persistent id `('storage', type, key, location, numel[, view])`.
#[derive(Clone, Debug, PartialEq)]
pub struct StorageRef {
    pub key: Rc<str>,
    /// `module.name` of the storage class (`torch.FloatStorage`, `torch.storage.UntypedStorage`).
    pub type_name: Rc<str>,
    pub location: Rc<str>,
    /// Elements of the storage class (bytes for UntypedStorage).
    pub numel: u64,
    /// Absolute offset of the BINPERSID / PERSID opcode.
    pub offset: u64,
}

/// A tensor from a rebuild call.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorRef {
    pub storage: u32,
    pub storage_offset: u64,
    pub shape: Vec<u64>,
    pub stride: Vec<u64>,
    /// `_rebuild_tensor_v3`'s dtype argument (`torch.float8_e4m3fn` → `float8_e4m3fn`).
    pub dtype: Option<String>,
    /// Absolute offset of the REDUCE that rebuilt it.
    pub offset: u64,
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

/// Everything a walk learned.
#[derive(Debug)]
pub struct Walk {
    /// Each distinct import, at its first occurrence, in opcode order.
    pub globals: Vec<GlobalRef>,
    /// Imports past [`MAX_GLOBALS`].
    pub more_globals: MoreGlobals,
    pub storages: Vec<StorageRef>,
    pub tensors: Vec<TensorRef>,
    pub findings: Vec<Finding>,
    /// Opcodes walked (nested pickles included).
    pub opcodes: u64,
    /// The highest PROTO seen (0 when none).
    pub proto: u8,
    /// Bytes of symbolic values the walk held at its end, as counted against
    /// [`MEMORY_PER_BYTE`].
    pub held: u64,
    pub end: End,
    /// The value STOP returned.
    pub root: Value,
    pub arena: Chunked<Obj>,
    /// The tensors named, once [`Walk::settle`] has named them and let the values go.
    pub settled: Option<(Vec<NamedTensor>, Vec<Finding>)>,
}

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

/// Walks one pickle stream starting at `data[0]`.
pub fn walk(data: &[u8], ctx: &Context) -> Walk {
    walk_with(data, ctx, false)
}

/// [`walk`] with the collector run after every opcode (and not charged to the work
/// budget): for tests, which check that collecting never changes what a walk finds.
#[doc(hidden)]
pub fn walk_collecting_at_every_opcode(data: &[u8], ctx: &Context) -> Walk {
    walk_with(data, ctx, true)
}

fn walk_with(data: &[u8], ctx: &Context, collect_always: bool) -> Walk {
    let mut sink = Sink {
        collect_always,
        names: std::collections::hash_map::RandomState::new(),
        past_cap: Default::default(),
        globals: Vec::new(),
        global_index: HashMap::new(),
        more_globals: MoreGlobals::default(),
        findings: Vec::new(),
        opcodes: 0,
        walked: std::collections::HashSet::new(),
        budget: WORK_BUDGET_PER_BYTE.saturating_mul(data.len() as u64),
        exhausted: false,
        held: 0,
        memory: MEMORY_PER_BYTE
            .saturating_mul(data.len() as u64)
            .saturating_add(MEMORY_SLACK),
    };
    let mut m = Machine::new(data, ctx, 0, &mut sink);
    let end = m.run();
    let root = if matches!(end, End::Stop(_)) {
        m.result.take().unwrap_or(Value::Unknown)
    } else {
        Value::Unknown
    };
    let (storages, tensors, arena, proto) = (
        std::mem::take(&mut m.storages),
        std::mem::take(&mut m.tensors),
        std::mem::take(&mut m.arena),
        m.proto,
    );
    drop(m);
    let mut findings = sink.findings;
    findings.extend(sink.past_cap.0.finding("tensor rebuilds"));
    findings.extend(sink.past_cap.1.finding("storages"));
    cap_findings(&mut findings);
    Walk {
        globals: sink.globals,
        more_globals: sink.more_globals,
        storages,
        tensors,
        findings,
        opcodes: sink.opcodes,
        proto,
        held: sink.held,
        end,
        root,
        arena,
        settled: None,
    }
}

/// Slots per chunk of a [`Chunked`] vector.
const CHUNK: usize = 1 << 14;

/// A vector in fixed chunks: growing never copies what it holds and never leaves more than
/// one chunk unused. Written here because the arena and the memo of a big pickle were
/// most of its walk's peak as `Vec`s: a doubling vector holds up to twice its length and,
/// while it moves, its old and new blocks at once (3× its length for a moment).
#[derive(Clone, Debug)]
pub struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked { chunks: Vec::new(), len: 0 }
    }
}

impl<T> Chunked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots allocated (every chunk but the last is full, and holds exactly `CHUNK`).
    pub fn capacity(&self) -> usize {
        match self.chunks.last() {
            Some(last) => (self.chunks.len() - 1) * CHUNK + last.capacity(),
            None => 0,
        }
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }

    pub fn push(&mut self, v: T) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(v),
            _ => {
                // the first chunk grows as a vector does (small pickles stay small; doubling
                // from 4 reaches `CHUNK` exactly); the others are allocated whole
                let mut c = if self.chunks.is_empty() { Vec::new() } else { Vec::with_capacity(CHUNK) };
                c.push(v);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }
}

/// Indices as a bitset for the small ones (below the stream's length: one bit each) and a
/// set for the others, which each cost a LONG_BINPUT / LONG_BINGET of the stream.
#[derive(Default)]
struct IndexSet {
    bits: Vec<u64>,
    /// Indices from `bits.len() * 64` up to this bound go into `bits` (grown to reach them).
    small: u64,
    large: std::collections::HashSet<u64>,
}

impl IndexSet {
    fn new(small: u64) -> Self {
        IndexSet { small, ..Default::default() }
    }

    fn contains(&self, i: u64) -> bool {
        if i < self.small {
            let word = usize::try_from(i / 64).ok().and_then(|w| self.bits.get(w));
            word.is_some_and(|w| w & (1 << (i % 64)) != 0)
        } else {
            self.large.contains(&i)
        }
    }

    /// Adds `i`; whether it was new, and the bytes the set grew by.
    fn insert(&mut self, i: u64) -> (bool, usize) {
        if i < self.small {
            let Ok(w) = usize::try_from(i / 64) else { return (false, 0) };
            let before = self.bits.capacity();
            if self.bits.len() <= w {
                self.bits.resize(w + 1, 0);
            }
            let grown = self.bits.capacity().saturating_sub(before) * 8;
            match self.bits.get_mut(w) {
                Some(word) => {
                    let bit = 1 << (i % 64);
                    let new = *word & bit == 0;
                    *word |= bit;
                    (new, grown)
                }
                None => (false, grown),
            }
        } else {
            let before = self.large.capacity();
            let new = self.large.insert(i);
            // a hash set slot: the key and a control byte
            (new, self.large.capacity().saturating_sub(before) * 9)
        }
    }
}

/// The memo. CPython's is a dict from index to object; here only the entries some GET of
/// the stream reads are kept (the pre-pass [`read_indices`] lists them): torch.save
/// memoizes every container and string it writes and reads back only the few it repeats
/// (the storage tag, `"cpu"`, the rebuild function), so the rest need not be held, and
/// once off the stack they are garbage the collector frees. Every index stored is still
/// counted once, as `MEMOIZE` names the next entry by the memo's length.
struct Memo {
    /// Indices some GET / BINGET / LONG_BINGET of the stream names.
    read: IndexSet,
    /// Indices PUT so far (for the length).
    put: IndexSet,
    values: HashMap<u64, Value>,
    len: usize,
}

impl Memo {
    fn new(read: IndexSet, small: u64) -> Self {
        Memo { read, put: IndexSet::new(small), values: HashMap::new(), len: 0 }
    }

    /// Distinct indices stored (CPython's `len(memo)`).
    fn len(&self) -> usize {
        self.len
    }

    fn has(&self, idx: u64) -> bool {
        self.put.contains(idx)
    }

    fn get(&self, idx: u64) -> Option<&Value> {
        self.values.get(&idx)
    }

    /// Stores `v` at `idx`; the bytes the memo grew by.
    fn insert(&mut self, idx: u64, v: Value) -> usize {
        let (new, mut grown) = self.put.insert(idx);
        if new {
            self.len += 1;
        }
        if self.read.contains(idx) {
            let before = self.values.capacity();
            self.values.insert(idx, v);
            grown += self.values.capacity().saturating_sub(before) * (VALUE + 9);
        }
        grown
    }

    fn values(&self) -> impl Iterator<Item = &Value> {
        self.values.values()
    }
}

/// The memo indices a stream reads (GET, BINGET, LONG_BINGET), up to its STOP or the
/// first byte that is not an opcode: one decoding pass, no values. Indices below the
/// stream's length go into a bitset (an eighth of a byte per byte of stream), others into
/// a set (each costs a 5-byte LONG_BINGET).
fn read_indices(data: &[u8]) -> IndexSet {
    let mut set = IndexSet::new(data.len() as u64);
    let mut pos = 0;
    while let Ok(d) = ops::decode(data, pos) {
        match (d.info.op, d.arg) {
            (Op::Stop, _) => break,
            (Op::Get, Arg::Line(l)) => {
                if let Some(Value::Int(i)) = parse_int_line(l) {
                    if let Ok(i) = u64::try_from(i) {
                        set.insert(i);
                    }
                }
            }
            (Op::BinGet | Op::LongBinGet, Arg::Int(i)) => {
                if let Ok(i) = u64::try_from(i) {
                    set.insert(i);
                }
            }
            _ => {}
        }
        pos = d.next;
    }
    set
}

/// An import's identity: module, name, opcode and nesting (a name longer than
/// [`MAX_QUOTED_BYTES`] by its clip and a hash of the whole: [`Sink::key_of`]).
type GlobalKey = (Option<String>, Option<String>, &'static str, u32);

struct Sink {
    globals: Vec<GlobalRef>,
    /// Where each listed import is in `globals`.
    global_index: HashMap<GlobalKey, u32>,
    more_globals: MoreGlobals,
    findings: Vec<Finding>,
    opcodes: u64,
    /// Nested pickles of the file already walked (absolute offset, length).
    walked: std::collections::HashSet<(u64, u64)>,
    /// Nested or computed bytes and copied items still allowed ([`WORK_BUDGET_PER_BYTE`]).
    budget: u64,
    /// Whether the budget ran out (said once).
    exhausted: bool,
    /// Bytes of symbolic values held, as counted ([`MEMORY_PER_BYTE`]).
    held: u64,
    /// What `held` may reach.
    memory: u64,
    /// Collect after every opcode ([`walk_collecting_at_every_opcode`]).
    collect_always: bool,
    /// Keys the hash of a long name (random per walk: no crafted collision).
    names: std::collections::hash_map::RandomState,
    /// Tensor rebuilds and storages past [`MAX_TENSORS`] (not kept): said once each.
    past_cap: (PastCap, PastCap),
}

/// How many of something went past a cap, and where the first was.
#[derive(Clone, Copy, Debug, Default)]
struct PastCap {
    count: u64,
    first: Option<u64>,
}

impl PastCap {
    fn note(&mut self, at: u64) {
        self.count = self.count.saturating_add(1);
        self.first.get_or_insert(at);
    }

    /// The one finding for `what` past the cap, if any went past it.
    fn finding(&self, what: &str) -> Option<Finding> {
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

const VALUE: usize = std::mem::size_of::<Value>();


/// Bytes an arena object holds beyond its slot, as counted: its vectors by capacity.
fn obj_bytes(o: &Obj) -> usize {
    match o {
        Obj::List(v) | Obj::Tuple(v) | Obj::Set(v) => v.capacity() * VALUE,
        Obj::Dict(d) => d.capacity() * 2 * VALUE,
        Obj::Instance(inst) => {
            std::mem::size_of::<Instance>()
                + inst.items.capacity() * VALUE
                + inst.entries.capacity() * 2 * VALUE
        }
        Obj::Free => 0,
    }
}

struct Machine<'a, 's> {
    data: &'a [u8],
    ctx: &'a Context,
    nesting: u32,
    sink: &'s mut Sink,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: Memo,
    arena: Chunked<Obj>,
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
    storages: Vec<StorageRef>,
    storage_by_key: BTreeMap<Rc<str>, u32>,
    /// `module.name` of each global, made once (indexed like `sink.globals`).
    global_names: Vec<Option<Rc<str>>>,
    tensors: Vec<TensorRef>,
    proto: u8,
    /// Offset (in data) of the opcode being executed.
    pos: usize,
    result: Option<Value>,
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

/// Known callables, recognised by their resolved `module.name`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    RebuildTensor,
    RebuildTensorV2,
    RebuildTensorV3,
    RebuildParameter,
    RebuildFromTypeV2,
    OrderedDict,
    CodecsEncode,
    Loads,
    GetAttr,
    Import,
}

fn known(module: &str, name: &str) -> Option<Known> {
    Some(match (module, name) {
        ("torch._utils", "_rebuild_tensor") => Known::RebuildTensor,
        ("torch._utils", "_rebuild_tensor_v2") => Known::RebuildTensorV2,
        ("torch._utils", "_rebuild_tensor_v3") => Known::RebuildTensorV3,
        ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state") => {
            Known::RebuildParameter
        }
        ("torch._tensor", "_rebuild_from_type_v2") => Known::RebuildFromTypeV2,
        ("collections", "OrderedDict") => Known::OrderedDict,
        ("_codecs" | "codecs", "encode") => Known::CodecsEncode,
        ("pickle" | "_pickle" | "cPickle" | "dill" | "cloudpickle", "loads" | "_loads") => {
            Known::Loads
        }
        ("builtins", "getattr") => Known::GetAttr,
        ("builtins", "__import__") | ("importlib", "import_module") => Known::Import,
        _ => return None,
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// Python 2 `repr` of a str (protocol 0 STRING): quotes removed, backslash escapes undone.
fn unrepr(line: &[u8]) -> Option<Vec<u8>> {
    let (first, rest) = line.split_first()?;
    let (last, inner) = rest.split_last()?;
    if first != last || !(*first == b'\'' || *first == b'"') {
        return None;
    }
    let mut out = Vec::with_capacity(inner.len());
    let mut it = inner.iter().copied().peekable();
    while let Some(c) = it.next() {
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let Some(e) = it.next() else {
            out.push(b'\\');
            break;
        };
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match it.peek() {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            it.next();
                        }
                        _ => break,
                    }
                }
                out.push((v & 0xff) as u8);
            }
            b'x' => {
                let hi = it.next().and_then(|d| char::from(d).to_digit(16));
                let lo = it.next().and_then(|d| char::from(d).to_digit(16));
                match (hi, lo) {
                    (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                    _ => return None,
                }
            }
            b'\\' | b'\'' | b'"' => out.push(e),
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

/// `raw-unicode-escape` (protocol 0 UNICODE): `\uXXXX` / `\UXXXXXXXX`, other bytes latin-1.
fn raw_unicode_escape(line: &[u8]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while let Some(&c) = line.get(i) {
        let width = match (c, line.get(i + 1)) {
            (b'\\', Some(b'u')) => 4,
            (b'\\', Some(b'U')) => 8,
            _ => 0,
        };
        if width > 0 {
            let hex = line
                .get(i + 2..i + 2 + width)
                .and_then(|h| std::str::from_utf8(h).ok());
            if let Some(ch) = hex
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32)
            {
                out.push(ch);
                i += 2 + width;
                continue;
            }
        }
        out.push(char::from(c));
        i += 1;
    }
    out
}

fn parse_int_line(line: &[u8]) -> Option<Value> {
    let s = std::str::from_utf8(line).ok()?.trim();
    let s = s.strip_suffix('L').unwrap_or(s);
    match s {
        "00" => return Some(Value::Bool(false)),
        "01" => return Some(Value::Bool(true)),
        _ => {}
    }
    if let Ok(v) = s.parse::<i128>() {
        return Some(int_value(v));
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(Value::BigInt)
}

/// LONG1 / LONG4: little-endian two's complement.
fn long_bytes(b: &[u8]) -> Value {
    if b.is_empty() {
        return Value::Int(0);
    }
    if b.len() > 16 {
        return Value::BigInt;
    }
    let neg = b.last().is_some_and(|&x| x & 0x80 != 0);
    let mut buf = if neg { [0xffu8; 16] } else { [0u8; 16] };
    if let Some(dst) = buf.get_mut(..b.len()) {
        dst.copy_from_slice(b);
    }
    int_value(i128::from_le_bytes(buf))
}

impl<'a, 's> Machine<'a, 's> {
    fn new(data: &'a [u8], ctx: &'a Context, nesting: u32, sink: &'s mut Sink) -> Self {
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

    fn run(&mut self) -> End {
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

    fn push(&mut self, v: Value) -> Res<()> {
        if self.stack.len() >= MAX_STACK {
            return Err(Stop::Limit(format!("the stack exceeds {MAX_STACK} values")));
        }
        // a vector that grows holds its old and new blocks at once: checked before, so a
        // doubling never takes the walk past its budget (found measuring: a 100 MB list
        // peaked at 12 × its stream)
        if self.stack.len() == self.stack.capacity()
            && growth(self.stack.len(), self.stack.capacity(), 1, VALUE) > self.room()
        {
            return Err(Stop::Memory);
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self) -> Res<Value> {
        match self.stack.pop() {
            Some(v) => Ok(v),
            None => malformed("stack underflow"),
        }
    }

    fn top(&self) -> Res<&Value> {
        match self.stack.last() {
            Some(v) => Ok(v),
            None => malformed("stack underflow"),
        }
    }

    fn pop_mark(&mut self) -> Res<Vec<Value>> {
        let Some(k) = self.marks.pop() else {
            return malformed("no MARK on the stack");
        };
        if k > self.stack.len() {
            return malformed("the MARK is above the stack");
        }
        let mut items = self.take_vec(self.stack.len() - k);
        items.extend(self.stack.drain(k..));
        Ok(items)
    }

    /// An empty vector for `n` items: a pooled one when `n` is small.
    fn take_vec(&mut self, n: usize) -> Vec<Value> {
        if n <= POOLED_CAPACITY {
            self.small_made += 1;
            if let Some(mut v) = self.vec_pool.pop() {
                self.unpool(v.capacity() * VALUE);
                // emptied here, not when pooled: its memory is touched once, when reused
                v.clear();
                return v;
            }
        }
        Vec::with_capacity(n)
    }

    /// Keeps an item vector for reuse when it is small (counted while pooled; its items,
    /// values nothing refers to, are dropped when it is taken).
    fn pool_vec(&mut self, v: Vec<Value>) {
        let cap = v.capacity();
        if cap == 0 || cap > POOLED_CAPACITY || self.vec_pool.len() >= self.pool_cap {
            return;
        }
        let grown = pushed(&mut self.vec_pool, v);
        self.pool(cap * VALUE, grown);
    }

    /// Counts `bytes` of items entering a pool (and `spine` bytes the pool's own vector
    /// grew by): still held, but not live.
    fn pool(&mut self, bytes: usize, spine: usize) {
        self.sink.hold(bytes + spine);
        self.pooled = self.pooled.saturating_add(bytes as u64);
    }

    /// Counts `bytes` leaving a pool: the object made from them counts them again.
    fn unpool(&mut self, bytes: usize) {
        self.sink.held = self.sink.held.saturating_sub(bytes as u64);
        self.pooled = self.pooled.saturating_sub(bytes as u64);
    }

    /// A call's symbolic result: an instance (a pooled one when there is one).
    fn instance(&mut self, func: Value, args: Value) -> Obj {
        self.small_made += 1;
        match self.instance_pool.pop() {
            Some(mut inst) => {
                self.unpool(std::mem::size_of::<Instance>());
                inst.func = func;
                inst.args = args;
                Obj::Instance(inst)
            }
            None => Instance::obj(func, args),
        }
    }

    /// What a freed object held, kept for reuse where it can be.
    fn recycle(&mut self, o: Obj) {
        match o {
            Obj::List(v) | Obj::Tuple(v) | Obj::Set(v) => self.pool_vec(v),
            Obj::Instance(mut inst) => {
                let empty = inst.items.capacity() == 0 && inst.entries.capacity() == 0;
                if empty && self.instance_pool.len() < self.pool_cap {
                    inst.func = Value::Unknown;
                    inst.args = Value::Unknown;
                    inst.state = None;
                    let grown = pushed(&mut self.instance_pool, inst);
                    self.pool(std::mem::size_of::<Instance>(), grown);
                }
            }
            Obj::Dict(_) | Obj::Free => {}
        }
    }

    fn new_obj(&mut self, o: Obj) -> Value {
        // held: the container's capacity (not its length: a vector's spare room is memory
        // too) and the arena's growth
        let extra = obj_bytes(&o);
        self.made = self.made.saturating_add((std::mem::size_of::<Obj>() + extra) as u64);
        if let Some(id) = self.free.pop() {
            if let Some(slot) = self.arena.get_mut(id as usize) {
                *slot = o;
                self.sink.hold(extra);
                return Value::Obj(id);
            }
        }
        let id = u32::try_from(self.arena.len()).unwrap_or(u32::MAX);
        let before = self.arena.capacity();
        self.arena.push(o);
        let grown = self.arena.capacity().saturating_sub(before);
        self.sink.hold(grown * std::mem::size_of::<Obj>() + extra);
        Value::Obj(id)
    }

    /// Frees every arena object no value the walk can still reach refers to (mark from the
    /// stack, the memo and the result; sweep the rest into the free list): the arguments
    /// of a tensor rebuild, the persistent id of a storage, containers popped and never
    /// memoized for a GET. Runs between opcodes only, when no value is held elsewhere.
    /// Linear in the arena; called after as many bytes were made as were live.
    fn collect(&mut self) {
        let mut marked = vec![0u64; self.arena.len().div_ceil(64)];
        let mut work: Vec<u32> = Vec::new();
        let roots = self.stack.iter().chain(self.memo.values()).chain(self.result.iter());
        let reach = |v: &Value, marked: &mut Vec<u64>, work: &mut Vec<u32>| {
            if let Value::Obj(i) = v {
                if let Some(w) = marked.get_mut(*i as usize / 64) {
                    let bit = 1u64 << (*i % 64);
                    if *w & bit == 0 {
                        *w |= bit;
                        work.push(*i);
                    }
                }
            }
        };
        for v in roots {
            reach(v, &mut marked, &mut work);
        }
        while let Some(i) = work.pop() {
            match self.arena.get(i as usize) {
                Some(Obj::List(v) | Obj::Tuple(v) | Obj::Set(v)) => {
                    for x in v {
                        reach(x, &mut marked, &mut work);
                    }
                }
                Some(Obj::Dict(d)) => {
                    for (k, x) in d {
                        reach(k, &mut marked, &mut work);
                        reach(x, &mut marked, &mut work);
                    }
                }
                Some(Obj::Instance(inst)) => {
                    let Instance { func, args, state, items, entries } = &**inst;
                    for x in [func, args].into_iter().chain(state).chain(items) {
                        reach(x, &mut marked, &mut work);
                    }
                    for (k, x) in entries {
                        reach(k, &mut marked, &mut work);
                        reach(x, &mut marked, &mut work);
                    }
                }
                _ => {}
            }
        }
        let free_cap = self.free.capacity();
        self.pool_cap = self.small_made.clamp(MIN_POOLED, MAX_POOLED);
        self.small_made = 0;
        for i in 0..self.arena.len() {
            let live = marked.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0);
            if live {
                continue;
            }
            let old = match self.arena.get_mut(i) {
                Some(slot) if !matches!(slot, Obj::Free) => std::mem::replace(slot, Obj::Free),
                _ => continue,
            };
            self.free.push(i as u32);
            // freed as counted; what is pooled is counted again
            self.sink.held = self.sink.held.saturating_sub(obj_bytes(&old) as u64);
            self.recycle(old);
        }
        let grown = self.free.capacity().saturating_sub(free_cap) * 4;
        self.sink.hold(grown);
        // the next collection after objects of half what is live were made (the pools left
        // out; at least COLLECT_FLOOR, and at least a sweep's worth of slots): garbage
        // stays under half of what is live
        self.made = 0;
        self.collect_after = (self.sink.held.saturating_sub(self.pooled) / 2)
            .max(COLLECT_FLOOR)
            .max((self.arena.len() as u64).saturating_mul(8));
    }

    fn obj_mut(&mut self, v: &Value) -> Option<&mut Obj> {
        match v {
            Value::Obj(i) => self.arena.get_mut(*i as usize),
            _ => None,
        }
    }

    fn obj(&self, v: &Value) -> Option<&Obj> {
        match v {
            Value::Obj(i) => self.arena.get(*i as usize),
            _ => None,
        }
    }

    fn string(&mut self, bytes: &[u8], decode: fn(&[u8]) -> String) -> Value {
        if bytes.len() > MAX_STRING_KEPT {
            return Value::LongStr(bytes.len() as u64);
        }
        // the Rc's two counts and the text
        self.sink.hold(16 + bytes.len());
        // ASCII reads the same in every decoding: one allocation
        if bytes.is_ascii() {
            if let Ok(s) = std::str::from_utf8(bytes) {
                return Value::Str(Rc::from(s));
            }
        }
        Value::Str(Rc::from(decode(bytes)))
    }

    fn bytes_value(&self, b: &[u8]) -> Value {
        // b is a sub-slice of self.data: its offset is the pointer difference
        let off = (b.as_ptr() as usize).saturating_sub(self.data.as_ptr() as usize);
        Value::Bytes {
            at: self.abs(off),
            len: b.len() as u64,
        }
    }

    fn memo_get(&mut self, idx: i64) -> Res<()> {
        let v = u64::try_from(idx)
            .ok()
            .and_then(|i| self.memo.get(i))
            .cloned();
        match v {
            Some(v) => self.push(v),
            None => malformed(format!("memo index {idx} was never stored")),
        }
    }

    fn memo_put(&mut self, idx: u64) -> Res<()> {
        let v = self.top()?.clone();
        if self.memo.len() >= MAX_MEMO && !self.memo.has(idx) {
            return Err(Stop::Limit(format!("the memo exceeds {MAX_MEMO} entries")));
        }
        let grown = self.memo.insert(idx, v);
        self.sink.hold(grown);
        Ok(())
    }

    fn line_index(line: &[u8]) -> Res<i64> {
        match parse_int_line(line) {
            Some(Value::Int(v)) => Ok(v),
            _ => malformed(format!("not a memo index: {:?}", text(line))),
        }
    }

    fn exec(&mut self, op: Op, arg: Arg<'a>) -> Res<()> {
        match op {
            Op::Mark => {
                if self.marks.len() >= MAX_MARKS {
                    return Err(Stop::Limit(format!("more than {MAX_MARKS} nested MARKs")));
                }
                self.marks.push(self.stack.len());
            }
            Op::Stop => {}
            Op::Pop => {
                // CPython: pops the top value, or the topmost mark when the stack above
                // it is empty
                let above_mark = self.marks.last().is_some_and(|&k| k == self.stack.len());
                if above_mark {
                    self.marks.pop();
                } else {
                    self.pop()?;
                }
            }
            Op::PopMark => {
                self.pop_mark()?;
            }
            Op::Dup => {
                let v = self.top()?.clone();
                self.push(v)?;
            }
            Op::Float => {
                let Arg::Line(l) = arg else {
                    return malformed("bad argument");
                };
                let v = std::str::from_utf8(l)
                    .ok()
                    .and_then(|s| s.trim().parse::<f64>().ok());
                match v {
                    Some(f) => self.push(Value::Float(f))?,
                    None => return malformed(format!("not a float: {:?}", text(l))),
                }
            }
            Op::Int | Op::Long => {
                let Arg::Line(l) = arg else {
                    return malformed("bad argument");
                };
                match parse_int_line(l) {
                    Some(v) => self.push(v)?,
                    None => return malformed(format!("not an integer: {:?}", text(l))),
                }
            }
            Op::BinInt | Op::BinInt1 | Op::BinInt2 => {
                let Arg::Int(v) = arg else {
                    return malformed("bad argument");
                };
                self.push(Value::Int(v))?;
            }
            Op::Long1 | Op::Long4 => {
                let Arg::Bytes(b) = arg else {
                    return malformed("bad argument");
                };
                self.push(long_bytes(b))?;
            }
            Op::BinFloat => {
                let Arg::Float(f) = arg else {
                    return malformed("bad argument");
                };
                self.push(Value::Float(f))?;
            }
            Op::None => self.push(Value::None)?,
            Op::NewTrue => self.push(Value::Bool(true))?,
            Op::NewFalse => self.push(Value::Bool(false))?,
            Op::String => {
                let Arg::Line(l) = arg else {
                    return malformed("bad argument");
                };
                let Some(b) = unrepr(l) else {
                    return malformed("the STRING argument must be quoted");
                };
                let v = self.string(&b, latin1);
                self.push(v)?;
            }
            Op::BinString | Op::ShortBinString => {
                let Arg::Bytes(b) = arg else {
                    return malformed("bad argument");
                };
                let v = self.string(b, latin1);
                self.push(v)?;
            }
            Op::Unicode => {
                let Arg::Line(l) = arg else {
                    return malformed("bad argument");
                };
                let v = self.string(l, raw_unicode_escape);
                self.push(v)?;
            }
            Op::BinUnicode | Op::ShortBinUnicode | Op::BinUnicode8 => {
                let Arg::Bytes(b) = arg else {
                    return malformed("bad argument");
                };
                let v = self.string(b, text);
                self.push(v)?;
            }
            Op::BinBytes | Op::ShortBinBytes | Op::BinBytes8 | Op::ByteArray8 => {
                let Arg::Bytes(b) = arg else {
                    return malformed("bad argument");
                };
                let v = self.bytes_value(b);
                self.push(v)?;
            }
            Op::NextBuffer => self.push(Value::Unknown)?,
            Op::ReadonlyBuffer => {
                self.top()?;
            }
            Op::EmptyTuple => {
                let v = self.new_obj(Obj::Tuple(Vec::new()));
                self.push(v)?;
            }
            Op::Tuple => {
                let items = self.pop_mark()?;
                let v = self.new_obj(Obj::Tuple(items));
                self.push(v)?;
            }
            Op::Tuple1 | Op::Tuple2 | Op::Tuple3 => {
                let n = match op {
                    Op::Tuple1 => 1,
                    Op::Tuple2 => 2,
                    _ => 3,
                };
                if self.stack.len() < n {
                    return malformed("stack underflow");
                }
                let mut items = self.take_vec(n);
                let at = self.stack.len() - n;
                items.extend(self.stack.drain(at..));
                let v = self.new_obj(Obj::Tuple(items));
                self.push(v)?;
            }
            Op::EmptyList => {
                let v = self.new_obj(Obj::List(Vec::new()));
                self.push(v)?;
            }
            Op::List => {
                let items = self.pop_mark()?;
                let v = self.new_obj(Obj::List(items));
                self.push(v)?;
            }
            Op::EmptyDict => {
                let v = self.new_obj(Obj::Dict(Vec::new()));
                self.push(v)?;
            }
            Op::Dict => {
                let items = self.pop_mark()?;
                let pairs = pairs(items)?;
                let v = self.new_obj(Obj::Dict(pairs));
                self.push(v)?;
            }
            Op::EmptySet => {
                let v = self.new_obj(Obj::Set(Vec::new()));
                self.push(v)?;
            }
            Op::FrozenSet => {
                let items = self.pop_mark()?;
                let v = self.new_obj(Obj::Set(items));
                self.push(v)?;
            }
            Op::Append => {
                let v = self.pop()?;
                let mut one = self.take_vec(1);
                one.push(v);
                self.append(one)?;
            }
            Op::Appends | Op::AddItems => {
                let items = self.pop_mark()?;
                self.append(items)?;
            }
            Op::SetItem => {
                let v = self.pop()?;
                let k = self.pop()?;
                self.set_items(vec![(k, v)])?;
            }
            Op::SetItems => {
                let items = self.pop_mark()?;
                let p = pairs(items)?;
                self.set_items(p)?;
            }
            Op::Get => {
                let Arg::Line(l) = arg else {
                    return malformed("bad argument");
                };
                let i = Self::line_index(l)?;
                self.memo_get(i)?;
            }
            Op::BinGet | Op::LongBinGet => {
                let Arg::Int(i) = arg else {
                    return malformed("bad argument");
                };
                self.memo_get(i)?;
            }
            Op::Put => {
                let Arg::Line(l) = arg else {
                    return malformed("bad argument");
                };
                let i = Self::line_index(l)?;
                let Ok(i) = u64::try_from(i) else {
                    return malformed("negative memo index");
                };
                self.memo_put(i)?;
            }
            Op::BinPut | Op::LongBinPut => {
                let Arg::Int(i) = arg else {
                    return malformed("bad argument");
                };
                let Ok(i) = u64::try_from(i) else {
                    return malformed("negative memo index");
                };
                self.memo_put(i)?;
            }
            Op::Memoize => {
                let i = self.memo.len() as u64;
                self.memo_put(i)?;
            }
            Op::Global => {
                let Arg::Pair(m, n) = arg else {
                    return malformed("bad argument");
                };
                let g = self.record(Some(text(m)), Some(text(n)), "GLOBAL", None);
                self.push(g)?;
            }
            Op::StackGlobal => {
                let name = self.pop()?;
                let module = self.pop()?;
                let as_str = |v: &Value| match v {
                    Value::Str(s) => Some(s.to_string()),
                    _ => None,
                };
                let (m, n) = (as_str(&module), as_str(&name));
                let note = if m.is_none() || n.is_none() {
                    Some(describe_operands(&module, &name))
                } else {
                    None
                };
                let g = self.record(m, n, "STACK_GLOBAL", note);
                self.push(g)?;
            }
            Op::Inst => {
                let Arg::Pair(m, n) = arg else {
                    return malformed("bad argument");
                };
                let args = self.pop_mark()?;
                let g = self.record(Some(text(m)), Some(text(n)), "INST", None);
                let a = self.new_obj(Obj::Tuple(args));
                let v = self.call(g, a)?;
                self.push(v)?;
            }
            Op::Obj => {
                let mut args = self.pop_mark()?;
                if args.is_empty() {
                    return malformed("OBJ without a class");
                }
                let cls = args.remove(0);
                let a = self.new_obj(Obj::Tuple(args));
                let v = self.call(cls, a)?;
                self.push(v)?;
            }
            Op::Ext1 | Op::Ext2 | Op::Ext4 => {
                let Arg::Int(code) = arg else {
                    return malformed("bad argument");
                };
                let name = match op {
                    Op::Ext1 => "EXT1",
                    Op::Ext2 => "EXT2",
                    _ => "EXT4",
                };
                let note = format!(
                    "extension code {code}: resolved through copyreg's extension registry at load time, which a file cannot show; no standard entry exists"
                );
                let g = self.record(None, None, name, Some(note));
                self.push(g)?;
            }
            Op::Reduce => {
                let args = self.pop()?;
                let func = self.pop()?;
                let v = self.call(func, args)?;
                self.push(v)?;
            }
            Op::NewObj => {
                let args = self.pop()?;
                let cls = self.pop()?;
                let o = self.instance(cls, args);
                let v = self.new_obj(o);
                self.push(v)?;
            }
            Op::NewObjEx => {
                let _kwargs = self.pop()?;
                let args = self.pop()?;
                let cls = self.pop()?;
                let o = self.instance(cls, args);
                let v = self.new_obj(o);
                self.push(v)?;
            }
            Op::Build => {
                let state = self.pop()?;
                let target = self.top()?.clone();
                if let Some(Obj::Instance(inst)) = self.obj_mut(&target) {
                    inst.state = Some(state);
                }
            }
            Op::PersId => {
                let Arg::Line(l) = arg else {
                    return malformed("bad argument");
                };
                let pid = Value::Str(Rc::from(text(l)));
                let v = self.persistent_load(pid);
                self.push(v)?;
            }
            Op::BinPersId => {
                let pid = self.pop()?;
                let v = self.persistent_load(pid);
                self.push(v)?;
            }
            Op::Proto => {
                let Arg::Int(p) = arg else {
                    return malformed("bad argument");
                };
                if !(0..=5).contains(&p) {
                    return malformed(format!("unsupported protocol {p}"));
                }
                self.proto = self.proto.max(p as u8);
            }
            // a frame only groups the opcodes that follow (they are decoded in place);
            // a frame longer than the stream shows up as the stream being truncated
            Op::Frame => {}
        }
        Ok(())
    }

    fn append(&mut self, mut new: Vec<Value>) -> Res<()> {
        let target = self.top()?.clone();
        let room = self.room();
        let grown = match self.obj_mut(&target) {
            Some(Obj::List(v) | Obj::Set(v)) => grow(v, &mut new, room),
            Some(Obj::Instance(inst)) => grow(&mut inst.items, &mut new, room),
            _ => return malformed("APPEND to something that is not a list"),
        };
        self.pool_vec(new);
        self.sink.hold(grown.ok_or(Stop::Memory)?);
        Ok(())
    }

    fn set_items(&mut self, mut new: Vec<(Value, Value)>) -> Res<()> {
        let target = self.top()?.clone();
        let room = self.room();
        let grown = match self.obj_mut(&target) {
            Some(Obj::Dict(d)) => grow(d, &mut new, room),
            Some(Obj::Instance(inst)) => grow(&mut inst.entries, &mut new, room),
            _ => return malformed("SETITEM on something that is not a dict"),
        };
        self.sink.hold(grown.ok_or(Stop::Memory)?);
        Ok(())
    }

    /// Records an import and returns the value it pushes: the same import again (module,
    /// name, opcode, nesting) is counted on its first record; past [`MAX_GLOBALS`] distinct
    /// ones, an import the walker neither allows nor follows is counted by verdict only
    /// (and pushes an unknown object).
    fn record(
        &mut self,
        module: Option<String>,
        name: Option<String>,
        opcode: &'static str,
        note: Option<String>,
    ) -> Value {
        let mut written = None;
        let (mut module, mut name) = (module, name);
        if self.proto < 3 {
            if let (Some(m), Some(n)) = (&module, &name) {
                if let Some((m2, n2)) = safety::compat_rename(m, n) {
                    written = Some((m.clone(), n.clone()));
                    module = Some(m2);
                    name = Some(n2);
                }
            }
        }
        let key: GlobalKey = (self.sink.key_of(&module), self.sink.key_of(&name), opcode, self.nesting);
        if let Some(&i) = self.sink.global_index.get(&key) {
            if let Some(g) = self.sink.globals.get_mut(i as usize) {
                g.count = g.count.saturating_add(1);
            }
            return Value::Global(i);
        }
        let (verdict, why) = match (&module, &name, note) {
            (Some(m), Some(n), _) => {
                let (mut v, mut why) = safety::judge(m, n);
                // judge the name as written too: a protocol 3+ stream is not renamed, but
                // a conservative reading does not depend on the PROTO opcode
                if let Some((wm, wn)) = &written {
                    let (v2, why2) = safety::judge(wm, wn);
                    if v2 == GlobalVerdict::Dangerous && v != GlobalVerdict::Dangerous {
                        v = v2;
                        why = why2;
                    }
                }
                (v, why)
            }
            (_, _, Some(note)) if opcode.starts_with("EXT") => (GlobalVerdict::Unknown, note),
            (_, _, note) => (
                GlobalVerdict::Dangerous,
                format!(
                    "the module or name is computed at run time ({}), so what it imports cannot be known without running the pickle",
                    note.unwrap_or_default()
                ),
            ),
        };
        let followed = match (&module, &name) {
            (Some(m), Some(n)) => known(m, n).is_some(),
            _ => false,
        };
        if self.sink.globals.len() >= MAX_GLOBALS && verdict != GlobalVerdict::Allowed && !followed {
            let more = &mut self.sink.more_globals;
            more.count = more.count.saturating_add(1);
            match verdict {
                GlobalVerdict::Dangerous => more.dangerous = more.dangerous.saturating_add(1),
                GlobalVerdict::Unknown => more.unknown = more.unknown.saturating_add(1),
                GlobalVerdict::Allowed => {}
            }
            return Value::Unknown;
        }
        // judged on the whole names above; kept (and reported) clipped, with their length:
        // a 16 MiB protocol-0 line is not copied into the report (tests/fuzz_regressions.rs)
        let (module, name) = (module.map(clip_owned), name.map(clip_owned));
        let written = written.map(|(m, n)| (clip_owned(m), clip_owned(n)));
        let strings = |o: &Option<String>| o.as_ref().map_or(0, String::len);
        let held = std::mem::size_of::<GlobalRef>()
            + std::mem::size_of::<GlobalKey>()
            + 2 * (strings(&module) + strings(&name))
            + why.len()
            + written.as_ref().map_or(0, |(m, n)| m.len() + n.len());
        self.sink.hold(held);
        let offset = self.here();
        let id = u32::try_from(self.sink.globals.len()).unwrap_or(u32::MAX);
        self.sink.global_index.insert(key, id);
        self.sink.globals.push(GlobalRef {
            module,
            name,
            opcode,
            offset,
            member: self.ctx.member.clone(),
            verdict,
            why,
            written,
            nesting: self.nesting,
            count: 1,
        });
        Value::Global(id)
    }

    fn known_of(&self, v: &Value) -> Option<Known> {
        let Value::Global(i) = v else { return None };
        let g = self.sink.globals.get(*i as usize)?;
        let (m, n) = g.full()?;
        known(m, n)
    }

    /// The items of a tuple or list (or of `torch.Size((…))`, a tuple built by a call).
    fn tuple_ref(&self, v: &Value) -> Option<&[Value]> {
        match self.obj(v)? {
            Obj::Tuple(t) | Obj::List(t) => Some(t),
            Obj::Instance(inst) => match self.obj(&inst.args)? {
                Obj::Tuple(t) if t.len() == 1 => self.tuple_ref(t.first()?),
                _ => None,
            },
            _ => None,
        }
    }

    fn tuple_items(&self, v: &Value) -> Option<Vec<Value>> {
        self.tuple_ref(v).map(<[Value]>::to_vec)
    }

    fn ints(&self, v: &Value) -> Option<Vec<u64>> {
        let items = self.tuple_ref(v)?;
        if items.len() > MAX_DIMS {
            return None;
        }
        items
            .iter()
            .map(|x| match x {
                Value::Int(i) => u64::try_from(*i).ok(),
                _ => None,
            })
            .collect()
    }

    fn call(&mut self, func: Value, args: Value) -> Res<Value> {
        let generic = |m: &mut Self, func: Value, args: Value| {
            let o = m.instance(func, args);
            m.new_obj(o)
        };
        let Some(k) = self.known_of(&func) else {
            return Ok(generic(self, func, args));
        };
        let at = self.here();
        if matches!(
            k,
            Known::RebuildTensor | Known::RebuildTensorV2 | Known::RebuildTensorV3
        ) {
            return match self.rebuild(k, &args, at) {
                Some(t) => Ok(t),
                None => {
                    self.finding(
                        Finding::warning(
                            Code::PickleMalformed,
                            "a tensor rebuild call whose arguments are not (storage, offset, size, stride, …): the tensor is not listed",
                        )
                        .at(at)
                        .field("pickle"),
                    );
                    Ok(generic(self, func, args))
                }
            };
        }
        // the arguments are copied: charged to the work budget (a memoized tuple of n items
        // passed k times costs k × n)
        let n = self.tuple_ref(&args).map_or(0, <[Value]>::len) as u64;
        if !self.charge(n, at) {
            return Ok(generic(self, func, args));
        }
        let items = self.tuple_items(&args).unwrap_or_default();
        match k {
            // handled above
            Known::RebuildTensor | Known::RebuildTensorV2 | Known::RebuildTensorV3 => {
                Ok(generic(self, func, args))
            }
            Known::RebuildParameter => Ok(items.first().cloned().unwrap_or(Value::Unknown)),
            Known::RebuildFromTypeV2 => {
                // (func, new_type, args, state): the tensor is func(*args)
                let (Some(f), Some(a)) = (items.first().cloned(), items.get(2).cloned()) else {
                    return Ok(generic(self, func, args));
                };
                self.call(f, a)
            }
            Known::OrderedDict => {
                // OrderedDict(items) copies the items: charged, as above (found by fuzzing:
                // a memoized list of 5,000 pairs passed 1,500 times took 591 ms for 20 KB)
                let n = items.first().and_then(|f| self.tuple_ref(f)).map_or(0, <[Value]>::len) as u64;
                if !self.charge(n, at) {
                    return Ok(generic(self, func, args));
                }
                let mut d = Vec::new();
                if let Some(pairs) = items.first().and_then(|f| self.tuple_ref(f)) {
                    for pair in pairs {
                        if let Some([k, v]) = self.tuple_ref(pair) {
                            d.push((k.clone(), v.clone()));
                        }
                    }
                }
                Ok(self.new_obj(Obj::Dict(d)))
            }
            Known::CodecsEncode => match items.as_slice() {
                [Value::Str(s), Value::Str(enc)]
                    if matches!(&**enc, "latin1" | "latin-1" | "iso-8859-1") =>
                {
                    if !self.charge(s.len() as u64, at) {
                        return Ok(Value::Unknown);
                    }
                    self.sink.hold(s.len());
                    let bytes: Option<Vec<u8>> =
                        s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect();
                    Ok(bytes.map_or(Value::Unknown, |b| Value::OwnedBytes(Rc::from(b))))
                }
                [Value::Str(s)] | [Value::Str(s), _] => {
                    if !self.charge(s.len() as u64, at) {
                        return Ok(Value::Unknown);
                    }
                    self.sink.hold(s.len());
                    Ok(Value::OwnedBytes(Rc::from(s.as_bytes())))
                }
                _ => Ok(generic(self, func, args)),
            },
            Known::Loads => {
                if let Some(payload) = items.first() {
                    self.nested(payload, at);
                }
                Ok(generic(self, func, args))
            }
            Known::GetAttr => {
                // getattr(module-ish, "name"): record what it reaches
                if let [target, Value::Str(attr)] = items.as_slice() {
                    let base = self.module_path_of(target);
                    let (m, n) = match base {
                        Some((m, Some(n))) => (Some(m), Some(format!("{n}.{attr}"))),
                        Some((m, None)) => (Some(m), Some(attr.to_string())),
                        None => (None, Some(attr.to_string())),
                    };
                    let note = if m.is_none() {
                        Some("getattr on an object computed at run time".to_string())
                    } else {
                        None
                    };
                    let g = self.record(m, n, "REDUCE", note);
                    return Ok(g);
                }
                Ok(generic(self, func, args))
            }
            Known::Import => Ok(generic(self, func, args)),
        }
    }

    /// What a value names as (module, attribute path): an import, or `__import__("x")`.
    fn module_path_of(&self, v: &Value) -> Option<(String, Option<String>)> {
        match v {
            Value::Global(i) => {
                let g = self.sink.globals.get(*i as usize)?;
                let (m, n) = g.full()?;
                Some((m.to_string(), Some(n.to_string())))
            }
            Value::Obj(_) => match self.obj(v)? {
                Obj::Instance(inst) if self.known_of(&inst.func) == Some(Known::Import) => {
                    match self.tuple_ref(&inst.args)?.first()? {
                        Value::Str(m) => Some((m.to_string(), None)),
                        _ => None,
                    }
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn rebuild(&mut self, k: Known, args: &Value, at: u64) -> Option<Value> {
        // past the most tensors listed from one file (as for safetensors and GGUF), a
        // rebuild is counted in the finding, not kept: what a walk holds for its tensors is
        // bounded whatever the pickle's length
        if self.tensors.len() >= MAX_TENSORS as usize {
            self.sink.past_cap.0.note(at);
            return Some(Value::Unknown);
        }
        let items = self.tuple_ref(args)?;
        let storage = match items.first()? {
            Value::Storage(s) => *s,
            _ => return None,
        };
        let storage_offset = match items.get(1)? {
            Value::Int(i) => u64::try_from(*i).ok()?,
            _ => return None,
        };
        let shape = self.ints(items.get(2)?)?;
        let stride = self.ints(items.get(3)?)?;
        // torch refuses a size and a stride of different lengths (`set_`): no such tensor
        // can be loaded, so it is not listed (found by fuzzing: tests/fuzz_regressions.rs)
        if shape.len() != stride.len() {
            return None;
        }
        let dtype = if k == Known::RebuildTensorV3 {
            match items.get(6)? {
                Value::Global(i) => {
                    let g = self.sink.globals.get(*i as usize)?;
                    match g.full()? {
                        ("torch", n) => Some(n.to_string()),
                        _ => None,
                    }
                }
                _ => None,
            }
        } else {
            None
        };
        let id = u32::try_from(self.tensors.len()).ok()?;
        self.sink.hold(std::mem::size_of::<TensorRef>() + 16 * (shape.len() + stride.len()));
        self.tensors.push(TensorRef {
            storage,
            storage_offset,
            shape,
            stride,
            dtype,
            offset: at,
        });
        Some(Value::Tensor(id))
    }

    fn persistent_load(&mut self, pid: Value) -> Value {
        let at = self.here();
        let parsed = match self.obj(&pid) {
            Some(Obj::Tuple(items)) => match items.as_slice() {
                [Value::Str(tag), Value::Global(g), Value::Str(key), Value::Str(loc), Value::Int(numel), ..]
                    if &**tag == "storage" =>
                {
                    u64::try_from(*numel)
                        .ok()
                        .map(|n| (*g, key.clone(), loc.clone(), n))
                }
                _ => None,
            },
            _ => None,
        };
        let parsed = parsed.and_then(|(g, key, loc, n)| Some((self.global_name(g)?, key, loc, n)));
        let Some((type_name, key, location, numel)) = parsed else {
            let msg = if self.ctx.torch {
                "a persistent id that is not ('storage', type, key, location, numel): its object is unknown"
            } else {
                "a persistent id in a plain pickle: the loader's persistent_load decides what it becomes"
            };
            self.finding(
                Finding::warning(Code::UnexpectedPersistentId, msg)
                    .at(at)
                    .field("pickle"),
            );
            return Value::Unknown;
        };
        if !self.ctx.torch {
            self.finding(
                Finding::warning(
                    Code::UnexpectedPersistentId,
                    "a torch storage reference in a plain pickle: its bytes are not in this file",
                )
                .at(at)
                .field("pickle"),
            );
        }
        if self.storages.len() >= MAX_TENSORS as usize && !self.storage_by_key.contains_key(&key) {
            self.sink.past_cap.1.note(at);
            return Value::Unknown;
        }
        let next = u32::try_from(self.storages.len()).unwrap_or(u32::MAX);
        let id = *self.storage_by_key.entry(key.clone()).or_insert(next);
        if id == next {
            // its strings are shared with the values (and counted when made)
            self.sink.hold(std::mem::size_of::<StorageRef>());
            self.storages.push(StorageRef {
                key,
                type_name,
                location,
                numel,
                offset: at,
            });
        }
        Value::Storage(id)
    }

    /// `module.name` of a recorded global (made once per global).
    fn global_name(&mut self, g: u32) -> Option<Rc<str>> {
        let i = g as usize;
        if let Some(Some(n)) = self.global_names.get(i) {
            return Some(n.clone());
        }
        let (m, n) = self.sink.globals.get(i)?.full()?;
        let name: Rc<str> = Rc::from(format!("{m}.{n}"));
        if self.global_names.len() <= i {
            // globals are recorded one opcode each, so this is bounded by the opcodes
            self.global_names.resize(i + 1, None);
        }
        if let Some(slot) = self.global_names.get_mut(i) {
            *slot = Some(name.clone());
        }
        Some(name)
    }

    /// Takes `n` from the work budget (nested or computed bytes, copied items); false (with one
    /// `PickleLimit` finding per walk) when they are not there.
    fn charge(&mut self, n: u64, at: u64) -> bool {
        if n <= self.sink.budget {
            self.sink.budget -= n;
            return true;
        }
        if !self.sink.exhausted {
            self.sink.exhausted = true;
            self.finding(
                Finding::error(
                    Code::PickleLimit,
                    format!("nested pickles, computed bytes and copied items of more than {WORK_BUDGET_PER_BYTE} per byte of the stream: the rest are not walked"),
                )
                .at(at),
            );
        }
        false
    }

    /// Walks a pickle passed to `pickle.loads`.
    fn nested(&mut self, payload: &Value, at: u64) {
        if self.nesting + 1 > MAX_NESTING {
            self.finding(
                Finding::error(
                    Code::PickleLimit,
                    format!(
                        "pickles nested more than {MAX_NESTING} deep: the innermost is not walked"
                    ),
                )
                .at(at),
            );
            return;
        }
        let (bytes, base): (Vec<u8>, u64) = match payload {
            Value::Bytes { at: start, len } => {
                let rel = start.saturating_sub(self.ctx.base);
                let slice = usize::try_from(rel)
                    .ok()
                    .zip(usize::try_from(*len).ok())
                    .and_then(|(s, l)| self.data.get(s..s.checked_add(l)?));
                match slice {
                    Some(s) => (s.to_vec(), *start),
                    None => return,
                }
            }
            // computed bytes have no place in the file: offsets are those of the call
            Value::OwnedBytes(b) => (b.to_vec(), at),
            _ => {
                self.finding(
                    Finding::warning(
                        Code::PickleMalformed,
                        "pickle.loads of something that is not a bytes constant: not walked",
                    )
                    .at(at),
                );
                return;
            }
        };
        let exact = matches!(payload, Value::Bytes { .. });
        // bytes of the file (not inside a computed pickle, whose offsets are the call's) are
        // walked once, however often they are loaded: the same bytes, the same imports
        if exact && self.place_at.is_none() && !self.sink.walked.insert((base, bytes.len() as u64)) {
            return;
        }
        if !self.charge(bytes.len() as u64, at) {
            return;
        }
        let ctx = Context {
            base,
            member: self.ctx.member.clone(),
            torch: false,
        };
        let first_global = self.sink.globals.len();
        // a computed pickle's findings at the call (found by fuzzing, as above); one inside
        // a computed pickle at the outer call
        let place_at = if exact { self.place_at } else { Some(self.place_at.unwrap_or(at)) };
        let end = {
            let mut inner = Machine::new(&bytes, &ctx, self.nesting + 1, self.sink);
            inner.place_at = place_at;
            inner.run()
        };
        if !exact {
            for g in self.sink.globals.iter_mut().skip(first_global) {
                g.offset = at;
            }
        }
        match end {
            End::Stop(_) => {}
            End::OutOfData(o) => self.finding(
                Finding::error(
                    Code::PickleTruncated,
                    "a nested pickle ends before its STOP",
                )
                .at(if exact { o } else { at }),
            ),
            End::Failed => {}
        }
    }
}

/// Pushes `item`; the bytes `v`'s capacity grew by.
fn pushed<T>(v: &mut Vec<T>, item: T) -> usize {
    let before = v.capacity();
    v.push(item);
    v.capacity().saturating_sub(before) * std::mem::size_of::<T>()
}

/// Bytes a vector of `len` items in `capacity` slots of `size` bytes takes while it grows
/// to hold `more` (its old and new blocks, as a reallocation may copy); 0 when it fits.
fn growth(len: usize, capacity: usize, more: usize, size: usize) -> u64 {
    let need = len.saturating_add(more);
    if need <= capacity {
        return 0;
    }
    // a Vec at least doubles (and starts at 4 slots for small items)
    let new = need.max(capacity.saturating_mul(2)).max(4);
    (new.saturating_add(capacity) as u64).saturating_mul(size as u64)
}

/// Moves `new`'s items to the end of `v` when its growth fits in `room` bytes; the bytes
/// its capacity grew by (None, and both unchanged, when it does not fit).
fn grow<T>(v: &mut Vec<T>, new: &mut Vec<T>, room: u64) -> Option<usize> {
    let size = std::mem::size_of::<T>();
    if growth(v.len(), v.capacity(), new.len(), size) > room {
        return None;
    }
    let before = v.capacity();
    v.append(new);
    Some(v.capacity().saturating_sub(before) * size)
}

fn pairs(items: Vec<Value>) -> Res<Vec<(Value, Value)>> {
    if !items.len().is_multiple_of(2) {
        return malformed("an odd number of items for a dict");
    }
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    Ok(out)
}

fn describe_operands(module: &Value, name: &Value) -> String {
    let d = |v: &Value| match v {
        Value::Str(s) => format!("{s:?}"),
        Value::Obj(_) => "the result of a call".to_string(),
        Value::Global(_) => "an imported object".to_string(),
        Value::LongStr(n) => format!("a {n}-byte string"),
        other => format!("{other:?}"),
    };
    format!("module: {}, name: {}", d(module), d(name))
}

/// A tensor found in the value tree, with its key path.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedTensor {
    pub name: String,
    pub tensor: u32,
}

impl Walk {
    /// Names the tensors once and drops the symbolic values (the arena and the root), for a
    /// walk nothing else will look into: a torch pickle's values are ~3–4 bytes per byte of
    /// stream, its names far fewer, and the inventory is built after.
    pub fn settle(&mut self) {
        if self.settled.is_none() {
            self.settled = Some(self.named_tensors());
            self.arena = Chunked::default();
            self.root = Value::Unknown;
        }
    }

    /// Every tensor reachable from the root, named by its key path: dict keys and list /
    /// tuple indices joined with `.`; an object's BUILD state and appended items count as
    /// its children. A tensor reached twice (the same object) is listed once, under its
    /// first path. The root itself is named `""`. (A settled walk's, as named then.)
    pub fn named_tensors(&self) -> (Vec<NamedTensor>, Vec<Finding>) {
        if let Some(s) = &self.settled {
            return s.clone();
        }
        let mut out = Vec::new();
        let mut findings = Vec::new();
        let mut seen_tensor = vec![false; self.tensors.len()];
        let mut on_path = vec![false; self.arena.len()];
        let mut path: Vec<String> = Vec::new();
        self.visit(
            &self.root,
            &mut path,
            &mut on_path,
            &mut seen_tensor,
            &mut out,
            &mut findings,
        );
        (out, findings)
    }

    fn visit(
        &self,
        v: &Value,
        path: &mut Vec<String>,
        on_path: &mut Vec<bool>,
        seen: &mut Vec<bool>,
        out: &mut Vec<NamedTensor>,
        findings: &mut Vec<Finding>,
    ) {
        if !matches!(v, Value::Obj(_) | Value::Tensor(_)) {
            return;
        }
        if path.len() >= MAX_PATH_DEPTH {
            if findings.is_empty() {
                findings.push(Finding::warning(
                    Code::PickleLimit,
                    format!("containers nested deeper than {MAX_PATH_DEPTH}: tensors below are not listed"),
                ));
            }
            return;
        }
        if let Value::Tensor(t) = v {
            if let Some(s) = seen.get_mut(*t as usize) {
                if !*s {
                    *s = true;
                    out.push(NamedTensor {
                        name: path.join("."),
                        tensor: *t,
                    });
                }
            }
            return;
        }
        let Value::Obj(id) = v else { return };
        let id = *id as usize;
        let Some(obj) = self.arena.get(id) else {
            return;
        };
        if on_path.get(id).copied().unwrap_or(true) {
            return; // a cycle, or a container already walked by another path
        }
        if let Some(f) = on_path.get_mut(id) {
            *f = true;
        }
        let child = |key: String,
                     val: &Value,
                     path: &mut Vec<String>,
                     on_path: &mut Vec<bool>,
                     seen: &mut Vec<bool>,
                     out: &mut Vec<NamedTensor>,
                     findings: &mut Vec<Finding>| {
            let used: usize = path.iter().map(|p| p.len() + 1).sum();
            path.push(if used.saturating_add(key.len()) > MAX_NAME_BYTES { "…".to_string() } else { key });
            self.visit(val, path, on_path, seen, out, findings);
            path.pop();
        };
        match obj {
            Obj::Dict(d) => {
                for (k, val) in d {
                    child(key_text(k), val, path, on_path, seen, out, findings);
                }
            }
            Obj::List(items) | Obj::Tuple(items) | Obj::Set(items) => {
                for (i, val) in items.iter().enumerate() {
                    child(i.to_string(), val, path, on_path, seen, out, findings);
                }
            }
            Obj::Instance(inst) => {
                let Instance {
                    state,
                    items,
                    entries,
                    ..
                } = &**inst;
                if let Some(s) = state {
                    // an object's attributes are its children: __dict__ keys join the path
                    match s {
                        Value::Obj(sid)
                            if matches!(self.arena.get(*sid as usize), Some(Obj::Dict(_))) =>
                        {
                            self.visit(s, path, on_path, seen, out, findings);
                        }
                        other => child("state".into(), other, path, on_path, seen, out, findings),
                    }
                }
                for (i, val) in items.iter().enumerate() {
                    child(i.to_string(), val, path, on_path, seen, out, findings);
                }
                for (k, val) in entries {
                    child(key_text(k), val, path, on_path, seen, out, findings);
                }
            }
            Obj::Free => {}
        }
        // stays marked: a container shared by many paths is walked once, by the first
        // (its tensors are named there); unmarking it made a DAG of n lists each holding
        // the next twice cost 2^n (a 366-byte pickle never finished: found by fuzzing,
        // tests/fuzz_regressions.rs)
    }
}

fn key_text(k: &Value) -> String {
    match k {
        Value::Str(s) => crate::error::clip(s).into_owned(),
        Value::Int(i) => i.to_string(),
        Value::Long { .. } => k.as_i128().map_or_else(|| "?".into(), |i| i.to_string()),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Value::None => "None".to_string(),
        Value::Float(f) => f.to_string(),
        _ => "?".to_string(),
    }
}

#[cfg(test)]
mod tests;
