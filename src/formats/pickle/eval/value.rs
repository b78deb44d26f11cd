//! The value model: what the machine pushes ([`Value`]: constants, and indices into the
//! arena, the imports, the storages and the tensors), the arena's objects ([`Obj`],
//! [`Instance`]), and what a walk records ([`GlobalRef`], [`MoreGlobals`], [`StorageRef`],
//! [`TensorRef`]).

use crate::formats::pickle::ops;
use crate::formats::pickle::safety::GlobalVerdict;
use serde::{Deserialize, Deserializer, Serialize};
use std::rc::Rc;

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
    /// A string longer than [`MAX_STRING_KEPT`](super::MAX_STRING_KEPT) (its length).
    LongStr(u64),
    /// Bytes stored in the walked stream: absolute offset and length.
    Bytes {
        at: u64,
        len: u64,
    },
    /// Bytes computed by `_codecs.encode(str, "latin1")`.
    OwnedBytes(Rc<[u8]>),
    /// The object an import produced: index into [`Walk::globals`](super::Walk::globals).
    Global(u32),
    /// A storage from a persistent id: index into [`Walk::storages`](super::Walk::storages)
    /// (a value, not an arena object: a state dict holds one per tensor, and a slot each
    /// was a fifth of the walk).
    Storage(u32),
    /// A tensor from a rebuild call: index into [`Walk::tensors`](super::Walk::tensors).
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

impl Obj {
    /// Its direct children (entries, items; an instance's state, items and entries).
    pub fn entry_count(&self) -> usize {
        match self {
            Obj::List(v) | Obj::Tuple(v) | Obj::Set(v) => v.len(),
            Obj::Dict(d) => d.len(),
            Obj::Instance(i) => usize::from(i.state.is_some()).saturating_add(i.items.len()).saturating_add(i.entries.len()),
            Obj::Free => 0,
        }
    }
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
    pub(super) fn obj(func: Value, args: Value) -> Obj {
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

/// Imports past [`MAX_GLOBALS`](super::MAX_GLOBALS), counted by verdict (occurrences, not distinct names).
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
    pub(super) fn full(&self) -> Option<(&str, &str)> {
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

/// Bytes of one symbolic value.
pub(super) const VALUE: usize = std::mem::size_of::<Value>();
