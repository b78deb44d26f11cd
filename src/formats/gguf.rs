//! GGUF: `magic "GGUF" | version u32 | tensor count | KV count | KVs | tensor infos |
//! padding to the alignment | tensor data`.
//!
//! [`parse`] reads everything up to the end of the tensor infos from a prefix of the file
//! and never touches tensor data. Versions 1 (u32 counts and lengths), 2 and 3, little- and
//! big-endian (told from the version field). Every count and length is checked against the
//! bytes that remain in the *file* before anything is read or allocated: a claim the file
//! cannot hold is a finding at once; a claim that fits the file but not yet the prefix asks
//! the driver for more ([`Step::Need`], with a lower bound of what the rest of the header
//! must take, so a large tokenizer needs few rounds).
//!
//! Long arrays (token lists, merges) are walked but only their first [`ARRAY_HEAD_LEN`]
//! elements are kept; the summaries a person needs (token count, token-type counts, the
//! special tokens' strings) are computed while parsing.
//!
//! Facts (not code) from the GGUF spec (ggml-org/ggml `docs/gguf.md`), llama.cpp
//! `ggml/src/gguf.cpp` (what llama.cpp refuses) and gguf-py.

use super::Step;
use crate::dtype::ggml::{file_type_name, GgmlType};
use crate::error::{Code, Finding};
use crate::report::{FileReport, Format, TensorEntry};
use serde::Serialize;
use serde_json::{json, Map, Value as Json};
use std::collections::{BTreeMap, HashMap, HashSet};

pub const MAGIC: &[u8; 4] = b"GGUF";
/// Versions this parser reads (the spec's 1, 2 and 3).
pub const SUPPORTED_VERSIONS: [u32; 3] = [1, 2, 3];
/// Default for `general.alignment` (spec: `GGUF_DEFAULT_ALIGNMENT`).
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// `GGML_MAX_DIMS` in ggml.h: llama.cpp refuses tensors with more dims.
pub const GGML_MAX_DIMS: u32 = 4;
/// We still read dims of a tensor claiming up to this many (to show them); past it the
/// tensor infos cannot be trusted and parsing stops.
pub const MAX_DIMS_READ: u32 = 64;
/// `GGML_MAX_NAME` in ggml.h: a tensor name must be shorter than this (llama.cpp's gguf.cpp
/// refuses names of 64 bytes or more: it needs room for the terminating NUL).
pub const GGML_MAX_NAME: u64 = 64;
/// How deep arrays may nest before we stop (llama.cpp refuses any nesting; gguf-py reads
/// it). Bounds recursion, so no file can exhaust the stack.
pub const MAX_ARRAY_DEPTH: usize = 4;
/// Elements of a top-level array kept for display; the rest are walked, not kept.
pub const ARRAY_HEAD_LEN: usize = 64;
/// Elements kept of an array nested inside another (bounds memory: 64 × 4^depth).
pub const NESTED_HEAD_LEN: usize = 4;
/// Bytes of a fixed header before the counts.
const MAGIC_AND_VERSION: u64 = 8;

/// Byte order of the numbers in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Endian {
    Little,
    Big,
}

/// The 13 metadata value types (spec `gguf_metadata_value_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl ValueType {
    pub fn from_id(id: u32) -> Option<ValueType> {
        use ValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    pub fn id(self) -> u32 {
        use ValueType::*;
        match self {
            U8 => 0,
            I8 => 1,
            U16 => 2,
            I16 => 3,
            U32 => 4,
            I32 => 5,
            F32 => 6,
            Bool => 7,
            String => 8,
            Array => 9,
            U64 => 10,
            I64 => 11,
            F64 => 12,
        }
    }

    pub fn name(self) -> &'static str {
        use ValueType::*;
        match self {
            U8 => "U8",
            I8 => "I8",
            U16 => "U16",
            I16 => "I16",
            U32 => "U32",
            I32 => "I32",
            F32 => "F32",
            Bool => "BOOL",
            String => "STRING",
            Array => "ARRAY",
            U64 => "U64",
            I64 => "I64",
            F64 => "F64",
        }
    }

    /// Size of a fixed-size value, `None` for strings and arrays.
    pub fn fixed_size(self) -> Option<u64> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }

    /// The fewest bytes one value of this type can take (for checking counts).
    fn min_size(self, v1: bool) -> u64 {
        let len = if v1 { 4 } else { 8 };
        match self {
            ValueType::String => len,
            ValueType::Array => 4 + len,
            t => t.fixed_size().unwrap_or(1),
        }
    }
}

/// A metadata value. Arrays keep a head of their elements and their full length.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    /// A BOOL byte: 0 or 1 are true booleans; anything else is kept raw (and a finding).
    Bool(u8),
    String(String),
    Array(Array),
    U64(u64),
    I64(i64),
    F64(f64),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub elem_type: ValueType,
    pub len: u64,
    /// The first elements (all of them when `head.len() == len`).
    pub head: Vec<Value>,
}

impl Value {
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::F32(_) => ValueType::F32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
        }
    }

    /// An integer value (any width, non-negative) as u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(u64::from(v)),
            Value::U16(v) => Some(u64::from(v)),
            Value::U32(v) => Some(u64::from(v)),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(f64::from(v)),
            Value::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// JSON for the report: scalars as JSON scalars; an array whole when short, otherwise
    /// `{"type","len","head"}`.
    pub fn to_json(&self) -> Json {
        match self {
            Value::U8(v) => json!(v),
            Value::I8(v) => json!(v),
            Value::U16(v) => json!(v),
            Value::I16(v) => json!(v),
            Value::U32(v) => json!(v),
            Value::I32(v) => json!(v),
            Value::F32(v) => json!(v),
            Value::Bool(0) => json!(false),
            Value::Bool(1) => json!(true),
            Value::Bool(v) => json!(v),
            Value::String(s) => json!(s),
            Value::U64(v) => json!(v),
            Value::I64(v) => json!(v),
            Value::F64(v) => json!(v),
            Value::Array(a) => {
                let head: Vec<Json> = a.head.iter().map(Value::to_json).collect();
                if head.len() as u64 == a.len {
                    Json::Array(head)
                } else {
                    json!({ "type": a.elem_type.name(), "len": a.len, "head": head })
                }
            }
        }
    }

    /// Short display text (strings quoted; arrays as `[TYPE; len]`).
    pub fn display(&self) -> String {
        match self {
            Value::String(s) => format!("{s:?}"),
            Value::Array(a) => format!("[{}; {}]", a.elem_type.name(), a.len),
            Value::Bool(0) => "false".into(),
            Value::Bool(1) => "true".into(),
            other => other.to_json().to_string(),
        }
    }
}

/// Which part of the metadata a key belongs to (the layout and the page group by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KvGroup {
    General,
    Architecture,
    Tokenizer,
    Other,
}

impl KvGroup {
    pub fn of(key: &str, arch: Option<&str>) -> KvGroup {
        if key.starts_with("general.") {
            KvGroup::General
        } else if key.starts_with("tokenizer.") {
            KvGroup::Tokenizer
        } else if arch.is_some_and(|a| !a.is_empty() && key.strip_prefix(a).is_some_and(|r| r.starts_with('.'))) {
            KvGroup::Architecture
        } else {
            KvGroup::Other
        }
    }

    pub fn label(self, arch: Option<&str>) -> String {
        match self {
            KvGroup::General => "general metadata".into(),
            KvGroup::Architecture => format!("{} metadata", arch.unwrap_or("architecture")),
            KvGroup::Tokenizer => "tokenizer metadata".into(),
            KvGroup::Other => "other metadata".into(),
        }
    }
}

/// One metadata entry, with where it sits in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Kv {
    pub key: String,
    pub value: Value,
    /// Absolute offset of the entry (its key length).
    pub offset: u64,
    /// Bytes the entry takes (key, type, value).
    pub bytes: u64,
    pub group: KvGroup,
}

/// One tensor info.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// Dims as stored, ne[0] first.
    pub dims: Vec<u64>,
    pub type_id: u32,
    /// The type's row, when the id is known (also for removed ids).
    pub ggml_type: Option<GgmlType>,
    /// Offset relative to the data section.
    pub offset: u64,
    /// Element count (`None` on overflow).
    pub params: Option<u64>,
    /// Byte size (`None` on overflow, unknown type or a partial block).
    pub bytes: Option<u64>,
    /// Absolute offset of this tensor info in the file.
    pub info_offset: u64,
}

impl TensorInfo {
    /// Row-major shape (numpy order): the dims reversed.
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().rev().copied().collect()
    }

    pub fn type_name(&self) -> String {
        self.ggml_type
            .map_or_else(|| format!("type {}", self.type_id), |t| t.name.to_string())
    }

    /// The `N` of a `blk.N.` name.
    pub fn block(&self) -> Option<u64> {
        self.name.strip_prefix("blk.")?.split('.').next()?.parse().ok()
    }
}

/// The fixed header and where the sections lie.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Header {
    pub version: Option<u32>,
    pub endian: Option<Endian>,
    pub tensor_count: Option<u64>,
    pub kv_count: Option<u64>,
    /// The alignment in force (the default when `general.alignment` is absent or invalid).
    pub alignment: u64,
    /// Bytes of magic, version and the two counts (24; 16 for version 1).
    pub fixed_header_bytes: u64,
    pub tensor_infos_start: Option<u64>,
    pub tensor_infos_end: Option<u64>,
    /// Absolute offset of the data section (the tensor infos' end, aligned).
    pub data_start: Option<u64>,
}

/// One term of the layout accounting.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayoutTerm {
    /// "header", "kv", "tensor_infos", "padding", "tensor_data", "tensor_padding", "unparsed".
    pub kind: &'static str,
    pub label: String,
    pub bytes: u64,
}

/// Where every byte of the file goes. `adds_up` is true when the terms sum to `file_size`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Layout {
    pub file_size: u64,
    pub terms: Vec<LayoutTerm>,
    pub adds_up: bool,
}

/// The model as llama.cpp's loader would describe it, from the metadata and tensors.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelCard {
    pub architecture: Option<String>,
    pub name: Option<String>,
    pub file_type: Option<u64>,
    pub file_type_name: Option<String>,
    pub quantization_version: Option<u64>,
    pub context_length: Option<u64>,
    pub embedding_length: Option<u64>,
    pub block_count: Option<u64>,
    pub feed_forward_length: Option<u64>,
    pub head_count: Option<u64>,
    pub head_count_kv: Option<u64>,
    pub vocab_size: Option<u64>,
    pub rope_freq_base: Option<f64>,
    pub rope_dimension_count: Option<u64>,
    pub rope_scaling_type: Option<String>,
    pub rope_scaling_factor: Option<f64>,
    pub rope_original_context_length: Option<u64>,
    /// Sum of the tensors' element counts.
    pub parameter_count: u64,
    /// Sum of the tensors' byte sizes.
    pub tensor_bytes: u64,
    /// tensor_bytes × 8 / parameter_count.
    pub bits_per_weight: Option<f64>,
}

/// A special token id and its string, when the token list holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpecialToken {
    pub id: u64,
    pub text: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TokenizerSummary {
    pub model: Option<String>,
    pub pre: Option<String>,
    pub token_count: Option<u64>,
    pub merge_count: Option<u64>,
    /// (token type id, name, count), by id.
    pub token_type_counts: Vec<(i64, &'static str, u64)>,
    pub bos: Option<SpecialToken>,
    pub eos: Option<SpecialToken>,
    pub pad: Option<SpecialToken>,
    pub unk: Option<SpecialToken>,
    /// Plain text: never interpret or render it as markup.
    pub chat_template: Option<String>,
    /// Bytes the tokenizer.* entries take in the file.
    pub metadata_bytes: u64,
}

/// Token type names (`TokenType` in gguf-py; 0 is llama.cpp's UNDEFINED).
pub fn token_type_name(id: i64) -> &'static str {
    match id {
        0 => "UNDEFINED",
        1 => "NORMAL",
        2 => "UNKNOWN",
        3 => "CONTROL",
        4 => "USER_DEFINED",
        5 => "UNUSED",
        6 => "BYTE",
        _ => "?",
    }
}

/// Everything read from a GGUF header.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufFile {
    pub file_size: u64,
    pub header: Header,
    pub kvs: Vec<Kv>,
    pub tensors: Vec<TensorInfo>,
    pub card: ModelCard,
    pub tokenizer: TokenizerSummary,
    pub layout: Layout,
    pub findings: Vec<Finding>,
}

/// Why reading stopped early.
enum Stop {
    /// The prefix must be at least this long.
    Need(u64),
    /// The rest cannot be read (the finding says why). Boxed: keeps the hot `Result`s small.
    Fail(Box<Finding>),
}

type R<T> = Result<T, Stop>;

/// A position in the prefix of a file, reading numbers in the file's byte order.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: u64,
    file_len: u64,
    big: bool,
    v1: bool,
    /// A lower bound on how far the header must reach, for `Need`.
    hint: u64,
}

impl<'a> Cursor<'a> {
    fn remaining_in_file(&self) -> u64 {
        self.file_len.saturating_sub(self.pos)
    }

    /// Checks that `bytes` (None = overflowed) fit in what remains of the file.
    #[inline]
    fn claim(&self, bytes: Option<u64>, what: impl FnOnce() -> String, at: u64, field: &str) -> R<()> {
        match bytes {
            Some(b) if b <= self.remaining_in_file() => Ok(()),
            _ => Err(Stop::Fail(Box::new(
                Finding::error(
                    Code::CountTooLarge,
                    format!("{}, but only {} bytes remain in the file", what(), self.remaining_in_file()),
                )
                .at(at)
                .field(field),
            ))),
        }
    }

    #[inline]
    fn take(&mut self, n: u64, field: &str) -> R<&'a [u8]> {
        let end = match self.pos.checked_add(n) {
            Some(e) if e <= self.file_len => e,
            _ => {
                return Err(Stop::Fail(Box::new(
                    Finding::error(
                        Code::FileTooShort,
                        format!("the file ends inside the header: {field} needs {n} bytes at byte {}, the file has {}", self.pos, self.file_len),
                    )
                    .at(self.pos)
                    .field(field),
                )))
            }
        };
        let slice = usize::try_from(self.pos)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| self.buf.get(s..e));
        match slice {
            Some(s) => {
                self.pos = end;
                Ok(s)
            }
            None => Err(Stop::Need(end.max(self.hint).min(self.file_len))),
        }
    }

    #[inline]
    fn array<const N: usize>(&mut self, field: &str) -> R<[u8; N]> {
        let s = self.take(N as u64, field)?;
        let mut a = [0u8; N];
        if s.len() == N {
            a.copy_from_slice(s);
        }
        Ok(a)
    }

    #[inline]
    fn u32(&mut self, field: &str) -> R<u32> {
        let a = self.array::<4>(field)?;
        Ok(if self.big { u32::from_be_bytes(a) } else { u32::from_le_bytes(a) })
    }

    #[inline]
    fn u64(&mut self, field: &str) -> R<u64> {
        let a = self.array::<8>(field)?;
        Ok(if self.big { u64::from_be_bytes(a) } else { u64::from_le_bytes(a) })
    }

    /// A count or length: u32 in version 1, u64 after.
    #[inline]
    fn len(&mut self, field: &str) -> R<u64> {
        if self.v1 {
            self.u32(field).map(u64::from)
        } else {
            self.u64(field)
        }
    }

    /// A string's bytes, its length checked against the file first.
    #[inline]
    fn string(&mut self, field: &str) -> R<&'a [u8]> {
        let at = self.pos;
        let n = self.len(field)?;
        self.claim(Some(n), || format!("{field} claims a string of {n} bytes"), at, field)?;
        self.take(n, field)
    }

    fn scalar(&mut self, t: ValueType, field: &str) -> R<Value> {
        let big = self.big;
        macro_rules! num {
            ($n:literal, $ty:ty, $var:ident) => {{
                let a = self.array::<$n>(field)?;
                Value::$var(if big { <$ty>::from_be_bytes(a) } else { <$ty>::from_le_bytes(a) })
            }};
        }
        Ok(match t {
            ValueType::U8 => num!(1, u8, U8),
            ValueType::I8 => num!(1, i8, I8),
            ValueType::U16 => num!(2, u16, U16),
            ValueType::I16 => num!(2, i16, I16),
            ValueType::U32 => num!(4, u32, U32),
            ValueType::I32 => num!(4, i32, I32),
            ValueType::F32 => num!(4, f32, F32),
            ValueType::Bool => num!(1, u8, Bool),
            ValueType::U64 => num!(8, u64, U64),
            ValueType::I64 => num!(8, i64, I64),
            ValueType::F64 => num!(8, f64, F64),
            ValueType::String => {
                let s = self.string(field)?;
                Value::String(String::from_utf8_lossy(s).into_owned())
            }
            // Arrays are read by `value`.
            ValueType::Array => Value::U8(0),
        })
    }
}

/// The length-prefixed string at `pos` when it lies wholly in `buf` (the hot path of long
/// string arrays: no `Result`, no finding built). `None` sends the caller to the checked
/// path, which names the problem or asks for more bytes.
#[inline(always)]
fn quick_str(buf: &[u8], pos: u64, v1: bool, big: bool) -> Option<(&[u8], u64)> {
    let p = usize::try_from(pos).ok()?;
    let (n, lw) = if v1 {
        let b: [u8; 4] = buf.get(p..p.checked_add(4)?)?.try_into().ok()?;
        (u64::from(if big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) }), 4usize)
    } else {
        let b: [u8; 8] = buf.get(p..p.checked_add(8)?)?.try_into().ok()?;
        (if big { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) }, 8usize)
    };
    let start = p.checked_add(lw)?;
    let end = start.checked_add(usize::try_from(n).ok()?)?;
    Some((buf.get(start..end)?, end as u64))
}

/// What the KV reader remembers for the summaries.
/// A top-level string array cut short by the prefix: where its walk stopped.
struct ArrayResume {
    /// Offset of the array's first element (identifies the array).
    data_at: u64,
    next: u64,
    pos: u64,
    head: Vec<Value>,
    bad_utf8: Option<Finding>,
}

#[derive(Default)]
struct Notes {
    /// Set when a parse stopped inside a long string array; travels in `Resume`.
    array_resume: Option<ArrayResume>,
    /// tokenizer.ggml.tokens: absolute offset of the first element and the count.
    tokens_at: Option<(u64, u64)>,
    token_types: BTreeMap<i64, u64>,
}

/// Reads a value of type `t`; `key` names it in findings.
fn value(c: &mut Cursor<'_>, t: ValueType, depth: usize, key: &str, notes: &mut Notes, findings: &mut Vec<Finding>) -> R<Value> {
    if t == ValueType::String {
        let at = c.pos;
        let s = c.string(key)?;
        return Ok(Value::String(match std::str::from_utf8(s) {
            Ok(text) => text.to_string(),
            Err(_) => {
                findings.push(Finding::warning(Code::InvalidUtf8, format!("the string value of {key} is not valid UTF-8")).at(at).field(key));
                String::from_utf8_lossy(s).into_owned()
            }
        }));
    }
    if t != ValueType::Array {
        let at = c.pos;
        let v = c.scalar(t, key)?;
        if let Value::Bool(b) = v {
            if b > 1 {
                findings.push(
                    Finding::error(Code::InvalidBool, format!("{key} is a BOOL of value {b}; only 0 and 1 are valid"))
                        .at(at)
                        .field(key),
                );
            }
        }
        return Ok(v);
    }
    let type_at = c.pos;
    let elem_id = c.u32(key)?;
    let Some(elem) = ValueType::from_id(elem_id) else {
        return Err(Stop::Fail(Box::new(
            Finding::error(Code::UnknownValueType, format!("the array {key} has element type id {elem_id}; valid ids are 0 to 12"))
                .at(type_at)
                .field(key),
        )));
    };
    let len_at = c.pos;
    let len = c.len(key)?;
    let min = elem.min_size(c.v1);
    c.claim(len.checked_mul(min), || format!("the array {key} claims {len} elements of type {} (at least {min} bytes each)", elem.name()), len_at, key)?;
    // Everything the array holds must be in the prefix before what follows it.
    let arr_bound = c.pos.saturating_add(len.saturating_mul(min));
    // What the rest of the header needs beyond this array (a lower bound).
    let tail = c.hint.saturating_sub(arr_bound);
    c.hint = c.hint.max(arr_bound);
    let keep = if depth == 0 { ARRAY_HEAD_LEN } else { NESTED_HEAD_LEN };
    let keep = usize::try_from(len).map_or(keep, |l| l.min(keep));
    let mut head = Vec::with_capacity(keep);
    if let Some(size) = elem.fixed_size() {
        let data_at = c.pos;
        let bytes = c.take(len.saturating_mul(size), key)?;
        let mut sub = Cursor {
            buf: bytes,
            pos: 0,
            file_len: bytes.len() as u64,
            big: c.big,
            v1: c.v1,
            hint: 0,
        };
        for _ in 0..keep {
            head.push(sub.scalar(elem, key)?);
        }
        if elem == ValueType::Bool {
            if let Some(i) = bytes.iter().position(|b| *b > 1) {
                findings.push(
                    Finding::error(Code::InvalidBool, format!("element {i} of {key} is a BOOL other than 0 or 1"))
                        .at(data_at.saturating_add(i as u64))
                        .field(key),
                );
            }
        }
        if key == "tokenizer.ggml.token_type" && depth == 0 && matches!(elem, ValueType::I32 | ValueType::U32) {
            // Counted in a small array first (ids 0..=6 are the defined ones): fast on 128k.
            let mut small = [0u64; 8];
            for chunk in bytes.chunks_exact(4) {
                let mut b = [0u8; 4];
                b.copy_from_slice(chunk);
                let id = if c.big { i32::from_be_bytes(b) } else { i32::from_le_bytes(b) };
                let id = if elem == ValueType::U32 { i64::from(id as u32) } else { i64::from(id) };
                match usize::try_from(id).ok().and_then(|i| small.get_mut(i)) {
                    Some(n) => *n += 1,
                    None => *notes.token_types.entry(id).or_default() += 1,
                }
            }
            for (id, n) in small.iter().enumerate() {
                if *n > 0 {
                    *notes.token_types.entry(id as i64).or_default() += n;
                }
            }
        }
    } else if elem == ValueType::String {
        if key == "tokenizer.ggml.tokens" && depth == 0 {
            notes.tokens_at = Some((c.pos, len));
        }
        let data_at = c.pos;
        let mut bad_utf8: Option<Finding> = None;
        let mut first = 0;
        if depth == 0 {
            // Continue a long string array where a shorter prefix stopped (see `Resume`).
            if let Some(ar) = notes.array_resume.take() {
                if ar.data_at == data_at && ar.pos <= c.buf.len() as u64 && ar.next <= len {
                    first = ar.next;
                    c.pos = ar.pos;
                    head = ar.head;
                    bad_utf8 = ar.bad_utf8;
                }
            }
        }
        for i in first..len {
            let at = c.pos;
            let quick = quick_str(c.buf, at, c.v1, c.big);
            let s = match quick {
                Some((s, end)) => {
                    c.pos = end;
                    Ok(s)
                }
                None => c.string(key),
            };
            let s = match s {
                Ok(s) => s,
                // Refresh the lower bound: the elements left take at least `min` each.
                Err(Stop::Need(n)) => {
                    if depth == 0 {
                        notes.array_resume = Some(ArrayResume {
                            data_at,
                            next: i,
                            pos: at,
                            head: std::mem::take(&mut head),
                            bad_utf8: bad_utf8.take(),
                        });
                    }
                    let left = len.saturating_sub(i).saturating_mul(min);
                    let bound = at.saturating_add(left).saturating_add(tail).min(c.file_len);
                    return Err(Stop::Need(n.max(bound)));
                }
                Err(e) => return Err(e),
            };
            let text = std::str::from_utf8(s);
            if text.is_err() && bad_utf8.is_none() {
                bad_utf8 = Some(Finding::warning(Code::InvalidUtf8, format!("element {i} of {key} is not valid UTF-8")).at(at).field(key));
            }
            if i < keep as u64 {
                head.push(Value::String(text.map_or_else(|_| String::from_utf8_lossy(s).into_owned(), str::to_string)));
            }
        }
        findings.extend(bad_utf8);
    } else {
        // Nested arrays.
        if depth == 0 {
            findings.push(
                Finding::warning(Code::NestedArray, format!("{key} is an array of arrays; gguf-py reads it, llama.cpp refuses the file"))
                    .at(type_at)
                    .field(key),
            );
        }
        if depth + 1 >= MAX_ARRAY_DEPTH {
            return Err(Stop::Fail(Box::new(
                Finding::error(Code::NestingTooDeep, format!("{key} nests arrays deeper than {MAX_ARRAY_DEPTH} levels"))
                    .at(type_at)
                    .field(key),
            )));
        }
        for i in 0..len {
            let v = value(c, ValueType::Array, depth + 1, key, notes, findings)?;
            if i < keep as u64 {
                head.push(v);
            }
        }
    }
    Ok(Value::Array(Array { elem_type: elem, len, head }))
}

/// Parses the header from `prefix` (the first bytes of a file of `file_len` bytes). Never
/// reads tensor data; asks for more prefix until the tensor infos end.
pub fn parse(prefix: &[u8], file_len: u64) -> Step<GgufFile> {
    parse_resumable(prefix, file_len, &mut Resume::default())
}

/// Where a parse of a shorter prefix stopped: the metadata entries read whole so far. The
/// driver keeps one per file and passes it to every round, so a 10 MB tokenizer read in
/// 1 MiB steps is walked about twice instead of once per step. Only valid for growing
/// prefixes of one file (checked: file length and header end must match).
#[derive(Default)]
pub struct Resume {
    kv: Option<KvCheckpoint>,
}

struct KvCheckpoint {
    file_len: u64,
    header_end: u64,
    /// Offset of the first entry not yet read, and its index.
    pos: u64,
    next: u64,
    hint: u64,
    kvs: Vec<Kv>,
    findings: Vec<Finding>,
    seen: HashSet<String>,
    arch: Option<String>,
    notes: Notes,
}

/// [`parse`], continuing from `resume` when a shorter prefix of the same file was parsed.
/// The result is the same as `parse(prefix, file_len)`.
pub fn parse_resumable(prefix: &[u8], file_len: u64, resume: &mut Resume) -> Step<GgufFile> {
    let mut g = GgufFile {
        file_size: file_len,
        header: Header {
            alignment: DEFAULT_ALIGNMENT,
            ..Header::default()
        },
        kvs: Vec::new(),
        tensors: Vec::new(),
        card: ModelCard::default(),
        tokenizer: TokenizerSummary::default(),
        layout: Layout::default(),
        findings: Vec::new(),
    };
    let mut notes = Notes::default();
    let mut c = Cursor {
        buf: prefix,
        pos: 0,
        file_len,
        big: false,
        v1: false,
        hint: 0,
    };
    match read_header(&mut c, &mut g, &mut notes, resume) {
        Ok(()) => {}
        Err(Stop::Need(n)) => {
            if n > prefix.len() as u64 && n <= file_len {
                return Step::Need(n);
            }
            // Cannot happen (take only asks for bytes inside the file); never loop on it.
            g.findings.push(Finding::error(Code::ReadFailed, format!("the parser asked for {n} bytes it could not have")).at(c.pos));
        }
        Err(Stop::Fail(f)) => g.findings.push(*f),
    }
    g.finish(prefix, &notes);
    Step::Done(g)
}

fn read_header(c: &mut Cursor<'_>, g: &mut GgufFile, notes: &mut Notes, resume: &mut Resume) -> R<()> {
    let magic = c.take(4, "magic")?;
    if magic != MAGIC.as_slice() {
        return Err(Stop::Fail(Box::new(
            Finding::error(Code::BadMagic, format!("the file starts with {magic:02x?}, not the GGUF magic \"GGUF\"")).at(0).field("magic"),
        )));
    }
    let raw = c.array::<4>("version")?;
    let le = u32::from_le_bytes(raw);
    let be = u32::from_be_bytes(raw);
    let (version, endian) = if SUPPORTED_VERSIONS.contains(&le) {
        (le, Endian::Little)
    } else if SUPPORTED_VERSIONS.contains(&be) {
        (be, Endian::Big)
    } else {
        return Err(Stop::Fail(Box::new(
            Finding::error(Code::UnsupportedVersion, format!("GGUF version {le} (read little-endian; {be} big-endian) is not 1, 2 or 3"))
                .at(4)
                .field("version"),
        )));
    };
    c.big = endian == Endian::Big;
    c.v1 = version == 1;
    g.header.version = Some(version);
    g.header.endian = Some(endian);
    let n_tensors = c.len("tensor_count")?;
    g.header.tensor_count = Some(n_tensors);
    let n_kv = c.len("kv_count")?;
    g.header.kv_count = Some(n_kv);
    g.header.fixed_header_bytes = c.pos;
    // The fewest bytes a KV and a tensor info can take: key length, type, a 1-byte value;
    // name length, n_dims, type, offset with no dims.
    let len_bytes: u64 = if c.v1 { 4 } else { 8 };
    let min_kv = len_bytes + 4 + 1;
    let min_ti = len_bytes + 4 + 4 + 8;
    let ti_bytes = n_tensors.checked_mul(min_ti);
    c.claim(ti_bytes, || format!("the header claims {n_tensors} tensors (at least {min_ti} bytes of tensor info each)"), MAGIC_AND_VERSION, "tensor_count")?;
    let kv_bytes = n_kv.checked_mul(min_kv);
    c.claim(
        kv_bytes.zip(ti_bytes).and_then(|(a, b)| a.checked_add(b)),
        || format!("the header claims {n_kv} metadata entries (at least {min_kv} bytes each) besides {n_tensors} tensor infos"),
        MAGIC_AND_VERSION.saturating_add(len_bytes),
        "kv_count",
    )?;
    let ti_min = ti_bytes.unwrap_or(0);
    c.hint = c.pos.saturating_add(kv_bytes.unwrap_or(0)).saturating_add(ti_min);

    let mut seen: HashSet<String> = HashSet::new();
    let mut arch: Option<String> = None;
    let mut first = 0;
    let header_end = c.pos;
    if let Some(cp) = resume.kv.take() {
        // A shorter prefix of the same file got this far: continue from there.
        if cp.file_len == c.file_len && cp.header_end == header_end && cp.pos <= c.buf.len() as u64 {
            c.pos = cp.pos;
            c.hint = c.hint.max(cp.hint);
            g.kvs = cp.kvs;
            g.findings = cp.findings;
            seen = cp.seen;
            arch = cp.arch;
            *notes = cp.notes;
            first = cp.next;
        }
    }
    for i in first..n_kv {
        let kv_at = c.pos;
        let hint_at = c.hint;
        let n_findings = g.findings.len();
        match read_kv(c, i, g, notes, &mut seen, &mut arch) {
            Ok(()) => {}
            Err(Stop::Need(n)) => {
                // Keep everything up to the last whole entry for the next, longer prefix.
                g.findings.truncate(n_findings);
                resume.kv = Some(KvCheckpoint {
                    file_len: c.file_len,
                    header_end,
                    pos: kv_at,
                    next: i,
                    hint: hint_at,
                    kvs: std::mem::take(&mut g.kvs),
                    findings: std::mem::take(&mut g.findings),
                    seen: std::mem::take(&mut seen),
                    arch: arch.take(),
                    notes: std::mem::take(notes),
                });
                return Err(Stop::Need(n));
            }
            Err(e) => return Err(e),
        }
        let left = n_kv.saturating_sub(i).saturating_sub(1);
        c.hint = c.hint.max(c.pos.saturating_add(left.saturating_mul(min_kv)).saturating_add(ti_min));
    }
    for kv in &mut g.kvs {
        kv.group = KvGroup::of(&kv.key, arch.as_deref());
    }
    g.header.alignment = alignment(&g.kvs, &mut g.findings);

    g.header.tensor_infos_start = Some(c.pos);
    let mut names: HashSet<String> = HashSet::new();
    for i in 0..n_tensors {
        let t = tensor_info(c, &mut names, &mut g.findings)?;
        g.tensors.push(t);
        let left = n_tensors.saturating_sub(i).saturating_sub(1);
        c.hint = c.hint.max(c.pos.saturating_add(left.saturating_mul(min_ti)));
    }
    g.header.tensor_infos_end = Some(c.pos);
    g.header.data_start = align_up(c.pos, g.header.alignment);
    Ok(())
}

/// One metadata entry: key, type, value. Key checks come after the value so that an entry
/// cut short by the prefix leaves no trace (see `Resume`).
fn read_kv(c: &mut Cursor<'_>, i: u64, g: &mut GgufFile, notes: &mut Notes, seen: &mut HashSet<String>, arch: &mut Option<String>) -> R<()> {
    let kv_at = c.pos;
    let key_bytes = c.string("key")?;
    let key_utf8 = std::str::from_utf8(key_bytes).is_ok();
    let key = String::from_utf8_lossy(key_bytes).into_owned();
    let type_at = c.pos;
    let type_id = c.u32(&key)?;
    let Some(t) = ValueType::from_id(type_id) else {
        return Err(Stop::Fail(Box::new(
            Finding::error(Code::UnknownValueType, format!("{key} has value type id {type_id}; valid ids are 0 to 12"))
                .at(type_at)
                .field(key.as_str()),
        )));
    };
    let mut value_findings = Vec::new();
    let v = value(c, t, 0, &key, notes, &mut value_findings)?;
    if !key_utf8 {
        g.findings.push(Finding::error(Code::InvalidUtf8, format!("metadata key {key:?} is not valid UTF-8")).at(kv_at).field("key"));
    }
    if key.is_empty() {
        g.findings.push(Finding::error(Code::EmptyKey, format!("metadata entry {i} has an empty key")).at(kv_at).field("key"));
    } else if !seen.insert(key.clone()) {
        g.findings.push(
            Finding::error(Code::DuplicateMetadataKey, format!("the metadata key {key:?} appears more than once; llama.cpp refuses the file"))
                .at(kv_at)
                .field(key.as_str()),
        );
    }
    g.findings.extend(value_findings);
    if key == "general.architecture" {
        *arch = v.as_str().map(str::to_string);
    }
    g.kvs.push(Kv {
        key,
        value: v,
        offset: kv_at,
        bytes: c.pos.saturating_sub(kv_at),
        group: KvGroup::Other,
    });
    Ok(())
}

/// `general.alignment`: must be a U32, non-zero and a power of two (llama.cpp's rule).
fn alignment(kvs: &[Kv], findings: &mut Vec<Finding>) -> u64 {
    let Some(kv) = kvs.iter().find(|kv| kv.key == "general.alignment") else {
        return DEFAULT_ALIGNMENT;
    };
    let bad = |msg: String| Finding::error(Code::InvalidAlignment, msg).at(kv.offset).field("general.alignment");
    match kv.value {
        Value::U32(a) if a != 0 && a.is_power_of_two() => u64::from(a),
        Value::U32(a) => {
            findings.push(bad(format!("general.alignment is {a}; it must be a non-zero power of two (using {DEFAULT_ALIGNMENT})")));
            DEFAULT_ALIGNMENT
        }
        ref other => {
            findings.push(bad(format!(
                "general.alignment is a {}, not a U32 (using {DEFAULT_ALIGNMENT})",
                other.value_type().name()
            )));
            DEFAULT_ALIGNMENT
        }
    }
}

fn align_up(x: u64, alignment: u64) -> Option<u64> {
    if alignment == 0 {
        return Some(x);
    }
    x.checked_add(alignment - 1).map(|v| v / alignment * alignment)
}

fn tensor_info(c: &mut Cursor<'_>, names: &mut HashSet<String>, findings: &mut Vec<Finding>) -> R<TensorInfo> {
    let at = c.pos;
    let name_bytes = c.string("tensor name")?;
    let name = match std::str::from_utf8(name_bytes) {
        Ok(n) => n.to_string(),
        Err(_) => {
            let n = String::from_utf8_lossy(name_bytes).into_owned();
            findings.push(Finding::error(Code::InvalidUtf8, "a tensor name is not valid UTF-8").at(at).tensor(n.as_str()));
            n
        }
    };
    let err = |code: Code, msg: String| Finding::error(code, msg).at(at).tensor(name.as_str());
    if name_bytes.len() as u64 >= GGML_MAX_NAME {
        findings.push(err(
            Code::NameTooLong,
            format!("the tensor name is {} bytes; llama.cpp accepts at most {} (GGML_MAX_NAME {GGML_MAX_NAME} with its NUL)", name_bytes.len(), GGML_MAX_NAME - 1),
        ));
    }
    if !names.insert(name.clone()) {
        findings.push(err(Code::DuplicateTensor, format!("the tensor name {name:?} appears more than once")));
    }
    let dims_at = c.pos;
    let n_dims = c.u32("n_dims")?;
    if n_dims > GGML_MAX_DIMS {
        findings.push(err(Code::TooManyDims, format!("the tensor has {n_dims} dims; ggml allows at most {GGML_MAX_DIMS}")).at(dims_at));
    }
    let dim_size: u64 = if c.v1 { 4 } else { 8 };
    c.claim(u64::from(n_dims).checked_mul(dim_size), || format!("tensor {name:?} claims {n_dims} dims"), dims_at, "n_dims")?;
    if n_dims > MAX_DIMS_READ {
        return Err(Stop::Fail(Box::new(err(Code::TooManyDims, format!("{n_dims} dims is past any sane limit ({MAX_DIMS_READ}); the tensor infos cannot be read further")).at(dims_at))));
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    for _ in 0..n_dims {
        dims.push(c.len("dims")?);
    }
    let type_at = c.pos;
    let type_id = c.u32("type")?;
    let offset = c.u64("offset")?;
    let ggml_type = GgmlType::from_id(type_id);
    match ggml_type {
        None => findings.push(err(Code::UnknownGgmlType, format!("ggml type id {type_id} is unknown (known ids are 0 to 41)")).at(type_at)),
        Some(t) if t.is_removed() => findings.push(err(
            Code::RemovedGgmlType,
            format!("ggml type {} (id {type_id}) was removed from ggml; current llama.cpp cannot load it", t.name),
        ).at(type_at)),
        Some(_) => {}
    }
    if dims.contains(&0) {
        findings.push(Finding::warning(Code::ZeroDim, "the tensor has a dimension of 0 (it holds no elements)").at(dims_at).tensor(name.as_str()));
    }
    let params = dims.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d));
    if params.is_none() {
        findings.push(err(Code::ShapeOverflow, format!("the dims {dims:?} multiply past u64")).at(dims_at));
    }
    let mut bytes = None;
    if let (Some(t), Some(p)) = (ggml_type, params) {
        let ne0 = dims.first().copied().unwrap_or(1);
        if ne0 % t.block_size != 0 {
            findings.push(err(
                Code::BlockMisaligned,
                format!("ne[0] = {ne0} is not a multiple of {}'s block size {}", t.name, t.block_size),
            ).at(dims_at));
        } else {
            bytes = (p / t.block_size).checked_mul(t.type_size);
            if bytes.is_none() {
                findings.push(err(Code::ShapeOverflow, "the tensor's byte size overflows u64".into()).at(dims_at));
            }
        }
    }
    Ok(TensorInfo {
        name,
        dims,
        type_id,
        ggml_type,
        offset,
        params,
        bytes,
        info_offset: at,
    })
}

impl GgufFile {
    pub fn kv(&self, key: &str) -> Option<&Value> {
        self.kvs.iter().find(|kv| kv.key == key).map(|kv| &kv.value)
    }

    pub fn architecture(&self) -> Option<&str> {
        self.kv("general.architecture").and_then(Value::as_str)
    }

    /// Data-section checks, summaries and the layout, once reading stopped.
    fn finish(&mut self, prefix: &[u8], notes: &Notes) {
        self.check_offsets();
        self.card = self.model_card();
        self.tokenizer = self.tokenizer_summary(prefix, notes);
        self.layout = self.layout();
    }

    fn check_offsets(&mut self) {
        let Some(data_start) = self.header.data_start else {
            return;
        };
        let align = self.header.alignment;
        let file_len = self.file_size;
        let mut out = Vec::new();
        let mut spans: Vec<(u64, u64, &str)> = Vec::new();
        for t in &self.tensors {
            let abs = data_start.checked_add(t.offset);
            if t.offset % align != 0 {
                out.push(
                    Finding::error(Code::UnalignedOffset, format!("offset {} is not a multiple of the alignment {align}", t.offset))
                        .at_opt(abs)
                        .tensor(t.name.as_str()),
                );
            }
            let Some(bytes) = t.bytes else { continue };
            let end = t.offset.checked_add(bytes);
            match end.and_then(|e| data_start.checked_add(e)) {
                Some(abs_end) if abs_end <= file_len => spans.push((t.offset, t.offset.saturating_add(bytes), t.name.as_str())),
                _ => out.push(
                    Finding::error(
                        Code::TensorPastEnd,
                        format!("the tensor's {bytes} bytes at offset {} run past the end of the file ({file_len} bytes; data starts at {data_start})", t.offset),
                    )
                    .at_opt(abs)
                    .tensor(t.name.as_str()),
                ),
            }
        }
        spans.sort_unstable();
        let mut expected = 0u64;
        for (start, end, name) in &spans {
            let aligned = align_up(expected, align).unwrap_or(expected);
            if *start < expected {
                out.push(
                    Finding::error(Code::TensorOverlap, format!("bytes {start}..{end} overlap the previous tensor, which ends at {expected}"))
                        .at_opt(data_start.checked_add(*start))
                        .tensor(*name),
                );
            } else if *start > aligned {
                out.push(
                    Finding::error(
                        Code::TensorGap,
                        format!("{} bytes between offset {expected} and this tensor belong to no tensor; llama.cpp expects each tensor right after the previous one (aligned)", start - expected),
                    )
                    .at_opt(data_start.checked_add(expected))
                    .tensor(*name),
                );
            }
            expected = expected.max(*end);
        }
        if !spans.is_empty() || self.tensors.is_empty() {
            let data_len = file_len.saturating_sub(data_start);
            let aligned = align_up(expected, align).unwrap_or(expected);
            if data_len > aligned && !spans.is_empty() {
                out.push(
                    Finding::warning(Code::TrailingBytes, format!("{} bytes after the last tensor belong to no tensor", data_len - expected))
                        .at_opt(data_start.checked_add(expected)),
                );
            }
        }
        self.findings.extend(out);
    }

    /// `{arch}.{suffix}` as an integer; a per-layer array (some architectures store head
    /// counts per layer) gives its largest value when the array was kept whole.
    fn arch_u64(&self, suffix: &str) -> Option<u64> {
        let arch = self.architecture()?;
        match self.kv(&format!("{arch}.{suffix}"))? {
            Value::Array(a) if a.head.len() as u64 == a.len => a.head.iter().filter_map(Value::as_u64).max(),
            v => v.as_u64(),
        }
    }

    fn arch_f64(&self, suffix: &str) -> Option<f64> {
        let arch = self.architecture()?;
        self.kv(&format!("{arch}.{suffix}")).and_then(Value::as_f64)
    }

    fn model_card(&self) -> ModelCard {
        let params = self.tensors.iter().fold(0u64, |a, t| a.saturating_add(t.params.unwrap_or(0)));
        let bytes = self.tensors.iter().fold(0u64, |a, t| a.saturating_add(t.bytes.unwrap_or(0)));
        let file_type = self.kv("general.file_type").and_then(Value::as_u64);
        let tokens = self.kv("tokenizer.ggml.tokens").and_then(|v| match v {
            Value::Array(a) => Some(a.len),
            _ => None,
        });
        let arch = self.architecture().map(str::to_string);
        let rope_type = arch
            .as_ref()
            .and_then(|a| self.kv(&format!("{a}.rope.scaling.type")))
            .and_then(Value::as_str)
            .map(str::to_string);
        ModelCard {
            architecture: arch,
            name: self.kv("general.name").and_then(Value::as_str).map(str::to_string),
            file_type,
            file_type_name: file_type.map(|f| file_type_name(f).map_or_else(|| format!("unknown ({f})"), str::to_string)),
            quantization_version: self.kv("general.quantization_version").and_then(Value::as_u64),
            context_length: self.arch_u64("context_length"),
            embedding_length: self.arch_u64("embedding_length"),
            block_count: self.arch_u64("block_count"),
            feed_forward_length: self.arch_u64("feed_forward_length"),
            head_count: self.arch_u64("attention.head_count"),
            head_count_kv: self.arch_u64("attention.head_count_kv"),
            vocab_size: self.arch_u64("vocab_size").or(tokens),
            rope_freq_base: self.arch_f64("rope.freq_base"),
            rope_dimension_count: self.arch_u64("rope.dimension_count"),
            rope_scaling_type: rope_type,
            rope_scaling_factor: self.arch_f64("rope.scaling.factor"),
            rope_original_context_length: self.arch_u64("rope.scaling.original_context_length"),
            parameter_count: params,
            tensor_bytes: bytes,
            bits_per_weight: (params > 0).then(|| bytes as f64 * 8.0 / params as f64),
        }
    }

    fn tokenizer_summary(&self, prefix: &[u8], notes: &Notes) -> TokenizerSummary {
        let arr_len = |k: &str| match self.kv(k) {
            Some(Value::Array(a)) => Some(a.len),
            _ => None,
        };
        let ids: Vec<(&str, Option<u64>)> = ["bos", "eos", "padding", "unknown"]
            .iter()
            .map(|k| (*k, self.kv(&format!("tokenizer.ggml.{k}_token_id")).and_then(Value::as_u64)))
            .collect();
        let wanted: Vec<u64> = ids.iter().filter_map(|(_, id)| *id).collect();
        let texts = notes.tokens_at.map_or_else(HashMap::new, |(at, len)| token_strings(prefix, self.header.version == Some(1), self.header.endian == Some(Endian::Big), at, len, &wanted));
        let special = |i: usize| {
            ids.get(i).and_then(|(_, id)| *id).map(|id| SpecialToken {
                id,
                text: texts.get(&id).cloned(),
            })
        };
        TokenizerSummary {
            model: self.kv("tokenizer.ggml.model").and_then(Value::as_str).map(str::to_string),
            pre: self.kv("tokenizer.ggml.pre").and_then(Value::as_str).map(str::to_string),
            token_count: arr_len("tokenizer.ggml.tokens"),
            merge_count: arr_len("tokenizer.ggml.merges"),
            token_type_counts: notes.token_types.iter().map(|(id, n)| (*id, token_type_name(*id), *n)).collect(),
            bos: special(0),
            eos: special(1),
            pad: special(2),
            unk: special(3),
            chat_template: self.kv("tokenizer.chat_template").and_then(Value::as_str).map(str::to_string),
            metadata_bytes: self.kvs.iter().filter(|k| k.group == KvGroup::Tokenizer).fold(0u64, |a, k| a.saturating_add(k.bytes)),
        }
    }

    fn layout(&self) -> Layout {
        let mut terms = Vec::new();
        let h = &self.header;
        if h.fixed_header_bytes > 0 {
            terms.push(LayoutTerm {
                kind: "header",
                label: "fixed header (magic, version, counts)".into(),
                bytes: h.fixed_header_bytes,
            });
        }
        let arch = self.architecture();
        let mut groups: BTreeMap<KvGroup, u64> = BTreeMap::new();
        for kv in &self.kvs {
            let g = groups.entry(kv.group).or_default();
            *g = g.saturating_add(kv.bytes);
        }
        for (g, bytes) in groups {
            terms.push(LayoutTerm {
                kind: "kv",
                label: g.label(arch),
                bytes,
            });
        }
        let kv_end = self.kvs.last().map_or(h.fixed_header_bytes, |k| k.offset.saturating_add(k.bytes));
        let mut accounted = kv_end;
        if let Some(start) = h.tensor_infos_start {
            let end = h.tensor_infos_end.unwrap_or_else(|| self.tensors.last().map_or(start, |_| start));
            let ti_end = h.tensor_infos_end.unwrap_or(end);
            terms.push(LayoutTerm {
                kind: "tensor_infos",
                label: format!("tensor infos ({} tensors)", self.tensors.len()),
                bytes: ti_end.saturating_sub(start),
            });
            accounted = ti_end;
        }
        if let (Some(ti_end), Some(ds)) = (h.tensor_infos_end, h.data_start) {
            let ds_in_file = ds.min(self.file_size);
            terms.push(LayoutTerm {
                kind: "padding",
                label: format!("padding to the alignment ({})", h.alignment),
                bytes: ds_in_file.saturating_sub(ti_end),
            });
            let data_len = self.file_size.saturating_sub(ds);
            let tensor_bytes = self.card.tensor_bytes;
            if tensor_bytes <= data_len {
                terms.push(LayoutTerm {
                    kind: "tensor_data",
                    label: "tensor data".into(),
                    bytes: tensor_bytes,
                });
                terms.push(LayoutTerm {
                    kind: "tensor_padding",
                    label: "padding between and after tensors".into(),
                    bytes: data_len - tensor_bytes,
                });
            } else {
                terms.push(LayoutTerm {
                    kind: "tensor_data",
                    label: format!("tensor data (the tensors claim {tensor_bytes} bytes; the file holds {data_len})"),
                    bytes: data_len,
                });
            }
            accounted = ds_in_file.saturating_add(data_len);
        }
        if accounted < self.file_size {
            terms.push(LayoutTerm {
                kind: "unparsed",
                label: "not parsed (the header could not be read further)".into(),
                bytes: self.file_size - accounted,
            });
        }
        let sum = terms.iter().fold(0u64, |a, t| a.saturating_add(t.bytes));
        Layout {
            file_size: self.file_size,
            adds_up: sum == self.file_size,
            terms,
        }
    }

    /// The metadata as the report's JSON map.
    pub fn metadata_json(&self) -> Json {
        let mut m = Map::new();
        for kv in &self.kvs {
            m.insert(kv.key.clone(), kv.value.to_json());
        }
        Json::Object(m)
    }

    /// `details`: header, KV list (types, offsets, sizes), layout, model card, tokenizer.
    pub fn details_json(&self) -> Json {
        let kv: Vec<Json> = self
            .kvs
            .iter()
            .map(|kv| {
                let mut o = json!({
                    "key": kv.key,
                    "type": kv.value.value_type().name(),
                    "group": kv.group,
                    "offset": kv.offset,
                    "bytes": kv.bytes,
                });
                if let (Value::Array(a), Some(obj)) = (&kv.value, o.as_object_mut()) {
                    obj.insert("elem_type".into(), json!(a.elem_type.name()));
                    obj.insert("len".into(), json!(a.len));
                }
                o
            })
            .collect();
        json!({
            "header": self.header,
            "kv": kv,
            "layout": self.layout,
            "model_card": self.card,
            "tokenizer": self.tokenizer,
        })
    }

    /// The tensors as report entries.
    pub fn tensor_entries(&self) -> Vec<TensorEntry> {
        let ds = self.header.data_start;
        self.tensors
            .iter()
            .map(|t| TensorEntry {
                name: t.name.clone(),
                dtype: t.type_name(),
                shape: t.shape(),
                ggml_dims: Some(t.dims.clone()),
                params: t.params,
                start: t.offset,
                end: t.bytes.and_then(|b| t.offset.checked_add(b)).unwrap_or(t.offset),
                abs_start: ds.and_then(|d| d.checked_add(t.offset)),
                bytes: t.bytes,
                stats: None,
            })
            .collect()
    }

    /// The report entry for this file.
    pub fn into_report(self, name: &str, size: u64, bytes_read: u64) -> FileReport {
        let mut r = FileReport::new(name, size, Format::Gguf);
        r.bytes_read = bytes_read;
        r.gguf_version = self.header.version;
        r.alignment = Some(self.header.alignment);
        r.kv_count = self.header.kv_count;
        r.data_start = self.header.data_start;
        r.metadata = self.metadata_json();
        r.tensors = self.tensor_entries();
        r.details = Some(self.details_json());
        r.finish(self.findings);
        r
    }
}

/// Most elements [`array_elements`] returns at once (the page pages through the rest).
pub const MAX_ELEMENTS_PER_READ: u64 = 4096;

/// Elements `start..start+count` (at most [`MAX_ELEMENTS_PER_READ`]) of the array held by
/// `kv`, from `entry`: the entry's bytes as read again from the file
/// (`read_at(kv.offset, kv.bytes)`). The "rest on demand" of a long array. Nested arrays
/// come back with their own heads. Returns `None` when `kv` is not an array or `entry`
/// does not hold it.
pub fn array_elements(entry: &[u8], kv: &Kv, header: &Header, start: u64, count: u64) -> Option<Vec<Value>> {
    let Value::Array(a) = &kv.value else {
        return None;
    };
    let mut c = Cursor {
        buf: entry,
        pos: 0,
        file_len: entry.len() as u64,
        big: header.endian == Some(Endian::Big),
        v1: header.version == Some(1),
        hint: 0,
    };
    c.string("key").ok()?;
    let _type = c.u32("type").ok()?;
    let _elem = c.u32("type").ok()?;
    let len = c.len("len").ok()?;
    if len != a.len {
        return None;
    }
    let end = start.saturating_add(count.min(MAX_ELEMENTS_PER_READ)).min(len);
    let mut out = Vec::new();
    if let Some(size) = a.elem_type.fixed_size() {
        c.pos = c.pos.checked_add(start.checked_mul(size)?)?;
        for _ in start..end {
            out.push(c.scalar(a.elem_type, "element").ok()?);
        }
        return Some(out);
    }
    let mut notes = Notes::default();
    let mut findings = Vec::new();
    for i in 0..end {
        let v = if a.elem_type == ValueType::String {
            let s = c.string("element").ok()?;
            (i >= start).then(|| Value::String(String::from_utf8_lossy(s).into_owned()))
        } else {
            let v = value(&mut c, a.elem_type, 1, "element", &mut notes, &mut findings).ok()?;
            (i >= start).then_some(v)
        };
        out.extend(v);
    }
    Some(out)
}

/// The strings at `ids` of a string array whose elements start at `at` (already parsed,
/// so inside `prefix`). One linear walk.
fn token_strings(prefix: &[u8], v1: bool, big: bool, at: u64, len: u64, ids: &[u64]) -> HashMap<u64, String> {
    let mut out = HashMap::new();
    let Some(&max) = ids.iter().max() else {
        return out;
    };
    let mut c = Cursor {
        buf: prefix,
        pos: at,
        file_len: prefix.len() as u64,
        big,
        v1,
        hint: 0,
    };
    for i in 0..len.min(max.saturating_add(1)) {
        let s = match quick_str(prefix, c.pos, v1, big) {
            Some((s, end)) => {
                c.pos = end;
                s
            }
            None => break,
        };
        if ids.contains(&i) {
            out.insert(i, String::from_utf8_lossy(s).into_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests;
