//! A walk from end to end: [`walk`] runs the machine over a stream and gathers what it
//! learned into a [`Walk`]; [`Walk::named_tensors`] names the tensors reachable from the
//! value STOP returned by their key paths ([`NamedTensor`]).

use super::machine::{Chunked, Context, End, Machine, Sink};
use super::value::{GlobalRef, Instance, MoreGlobals, Obj, StorageRef, TensorRef, Value};
use crate::error::{cap_findings, Code, Finding};
use crate::formats::MAX_TENSORS;

/// Deepest container nesting followed when naming tensors by key path.
pub const MAX_PATH_DEPTH: usize = 256;
/// Longest key path a tensor is named by: each key is clipped (`MAX_QUOTED_BYTES`) and
/// keys past this length are `…`. Real names are under 300 bytes; unbounded, one 1 MiB
/// key memoized and used at 256 levels made every tensor's name 256 MiB.
pub const MAX_NAME_BYTES: usize = 1024;
/// Bytes of tensor names a walk lists in all: this + 1 per byte of the stream. A state
/// dict's names are its keys, which are in the stream; but a name is its whole key path,
/// and many tensors under one long path (or one tensor listed under many keys, 2 bytes of
/// memo GET each) were ~1 KiB of name per few bytes of stream.
pub const NAMES_SLACK: u64 = 8 << 20;
/// Names a walk gives tensors already named (one tensor object under several keys): at
/// most this many + 1 per [`REPEAT_NAME_STREAM_BYTES`] bytes of the stream. Each is an
/// inventory entry (~0.5 KiB with its copies), and a repeat costs the stream 2 bytes (a
/// memo GET); a new tensor costs ~16 bytes at the least, so a repeat is charged that.
pub const REPEAT_NAMES_SLACK: u64 = 4096;
/// See [`REPEAT_NAMES_SLACK`].
pub const REPEAT_NAME_STREAM_BYTES: u64 = 16;

/// Everything a walk learned.
#[derive(Debug)]
pub struct Walk {
    /// Each distinct import, at its first occurrence, in opcode order.
    pub globals: Vec<GlobalRef>,
    /// Imports past [`MAX_GLOBALS`](super::MAX_GLOBALS).
    pub more_globals: MoreGlobals,
    pub storages: Vec<StorageRef>,
    pub tensors: Vec<TensorRef>,
    pub findings: Vec<Finding>,
    /// Opcodes walked (nested pickles included).
    pub opcodes: u64,
    /// The highest PROTO seen (0 when none).
    pub proto: u8,
    /// Bytes of symbolic values the walk held at its end, as counted against
    /// [`MEMORY_PER_BYTE`](super::MEMORY_PER_BYTE).
    pub held: u64,
    pub end: End,
    /// The value STOP returned.
    pub root: Value,
    pub arena: Chunked<Obj>,
    /// The tensors named, once [`Walk::settle`] has named them and let the values go.
    pub settled: Option<(Vec<NamedTensor>, Vec<Finding>)>,
    /// Bytes of the stream walked (from its first byte).
    pub len: u64,
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
    let mut sink = Sink::new(data.len() as u64, collect_always);
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
        len: data.len() as u64,
    }
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
    /// its children. A tensor reached by several paths (one tensor object under several
    /// keys: torch pickles the second as a memo GET of the first) is named by each, as
    /// `torch.load` gives each key. The root itself is named `""`. (A settled walk's, as
    /// named then.) At most [`MAX_TENSORS`] names, of at most [`NAMES_SLACK`] + 1 byte per
    /// byte of the stream in all; past either, the rest are counted in one finding.
    pub fn named_tensors(&self) -> (Vec<NamedTensor>, Vec<Finding>) {
        if let Some(s) = &self.settled {
            return s.clone();
        }
        let mut n = Naming {
            on_path: vec![false; self.arena.len()],
            walked: vec![false; self.arena.len()],
            path: Vec::new(),
            out: Vec::new(),
            bytes_left: NAMES_SLACK.saturating_add(self.len),
            named: vec![false; self.tensors.len()],
            repeats_left: REPEAT_NAMES_SLACK.saturating_add(self.len / REPEAT_NAME_STREAM_BYTES),
            past: 0,
            too_deep: false,
        };
        self.visit(&self.root, &mut n);
        let mut findings = Vec::new();
        if n.too_deep {
            findings.push(Finding::warning(
                Code::PickleLimit,
                format!("containers nested deeper than {MAX_PATH_DEPTH}: tensors below are not listed"),
            ));
        }
        if n.past > 0 {
            findings.push(Finding::warning(
                Code::LimitExceeded,
                format!(
                    "{} more tensor names (key paths) are not listed: at most {} names, of at most {} bytes in all ({} MiB + 1 per byte of the pickle), {} of them for tensors named already ({} + 1 per {} bytes)",
                    crate::fmt::thousands(n.past),
                    crate::fmt::thousands(MAX_TENSORS),
                    crate::fmt::thousands(NAMES_SLACK.saturating_add(self.len)),
                    NAMES_SLACK >> 20,
                    crate::fmt::thousands(REPEAT_NAMES_SLACK.saturating_add(self.len / REPEAT_NAME_STREAM_BYTES)),
                    crate::fmt::thousands(REPEAT_NAMES_SLACK),
                    REPEAT_NAME_STREAM_BYTES
                ),
            ));
        }
        (n.out, findings)
    }

    fn visit(&self, v: &Value, n: &mut Naming) {
        if !matches!(v, Value::Obj(_) | Value::Tensor(_)) {
            return;
        }
        if n.path.len() >= MAX_PATH_DEPTH {
            n.too_deep = true;
            return;
        }
        if let Value::Tensor(t) = v {
            if let Some(named) = n.named.get_mut(*t as usize) {
                let len: usize = n.path.iter().map(|p| p.len()).sum::<usize>() + n.path.len().saturating_sub(1);
                let again = *named;
                if (n.out.len() as u64) < MAX_TENSORS
                    && len as u64 <= n.bytes_left
                    && (!again || n.repeats_left > 0)
                {
                    n.bytes_left -= len as u64;
                    if again {
                        n.repeats_left -= 1;
                    }
                    *named = true;
                    n.out.push(NamedTensor {
                        name: n.path.join("."),
                        tensor: *t,
                    });
                } else {
                    n.past += 1;
                }
            }
            return;
        }
        let Value::Obj(id) = v else { return };
        let id = *id as usize;
        let Some(obj) = self.arena.get(id) else {
            return;
        };
        if n.on_path.get(id).copied().unwrap_or(true) {
            return; // a cycle
        }
        if n.walked.get(id).copied().unwrap_or(true) {
            // A container shared by several paths (a sub-dict under two keys: torch
            // pickles the second as a memo GET) is walked again, as `torch.load` gives it
            // under each key — its entries charged to the names allowed for repeats, so
            // that a DAG of lists each holding the next twice (2^n paths in a 366-byte
            // pickle, found by fuzzing: tests/fuzz_regressions.rs) stops at that budget.
            let cost = (obj.entry_count() as u64).max(1);
            if n.repeats_left < cost {
                n.past = n.past.saturating_add(1);
                return;
            }
            n.repeats_left -= cost;
        }
        if let (Some(f), Some(w)) = (n.on_path.get_mut(id), n.walked.get_mut(id)) {
            *f = true;
            *w = true;
        }
        let child = |key: String, val: &Value, n: &mut Naming| {
            let used: usize = n.path.iter().map(|p| p.len() + 1).sum();
            n.path.push(if used.saturating_add(key.len()) > MAX_NAME_BYTES { "…".to_string() } else { key });
            self.visit(val, n);
            n.path.pop();
        };
        match obj {
            Obj::Dict(d) => {
                for (k, val) in d {
                    child(key_text(k), val, n);
                }
            }
            Obj::List(items) | Obj::Tuple(items) | Obj::Set(items) => {
                for (i, val) in items.iter().enumerate() {
                    child(i.to_string(), val, n);
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
                            self.visit(s, n);
                        }
                        other => child("state".into(), other, n),
                    }
                }
                for (i, val) in items.iter().enumerate() {
                    child(i.to_string(), val, n);
                }
                for (k, val) in entries {
                    child(key_text(k), val, n);
                }
            }
            Obj::Free => {}
        }
        if let Some(f) = n.on_path.get_mut(id) {
            *f = false;
        }
    }
}

/// What naming carries down the value tree.
struct Naming {
    /// Containers on the path (a cycle is not followed).
    on_path: Vec<bool>,
    /// Containers walked already (walking one again is charged to `repeats_left`).
    walked: Vec<bool>,
    path: Vec<String>,
    out: Vec<NamedTensor>,
    /// Bytes of names still allowed.
    bytes_left: u64,
    /// Tensors named already, by index.
    named: Vec<bool>,
    /// Names still allowed for tensors named already.
    repeats_left: u64,
    /// Names not listed (past [`MAX_TENSORS`] or the bytes allowed).
    past: u64,
    too_deep: bool,
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

