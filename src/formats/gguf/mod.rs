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

//!
//! The module by job: [`value`] the metadata value model, `cursor` reading numbers and
//! strings from a prefix, `parse` the parser itself (entries, tensor infos, the data-section
//! checks), [`summary`] what is derived from a parsed header (model card, tokenizer
//! summary, byte layout), [`array`] reading a long array's further elements on request.

mod array;
mod cursor;
mod parse;
pub mod summary;
pub mod value;

pub use array::{array_elements, MAX_ELEMENTS_PER_READ};
pub use parse::{parse, parse_resumable, Resume};
pub use summary::{token_type_name, KvGroup, Layout, LayoutTerm, ModelCard};
pub use value::{Array, Value, ValueJson, ValueType};

use crate::error::Finding;
use crate::vocab::{TensorEntry, TokenizerSummary};
use serde::{Deserialize, Serialize};

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
/// A numeric array outside `tokenizer.*` of at most this many elements is kept whole: a
/// per-layer setting (`head_count_kv`, `sliding_window_pattern`, …) that the architecture
/// description needs for every layer. llama.cpp's `LLAMA_MAX_LAYERS`.
pub const PER_LAYER_ARRAY_LEN: usize = 512;

/// How many elements of a top-level array the parser keeps (before the file-wide
/// [`MAX_HEAD_VALUES`] budget): a short numeric array outside `tokenizer.*` (a per-layer
/// setting) whole, any other [`ARRAY_HEAD_LEN`].
pub fn top_level_keep(key: &str, elem: ValueType, len: u64) -> usize {
    if elem.fixed_size().is_some() && len <= PER_LAYER_ARRAY_LEN as u64 && !key.starts_with("tokenizer.") {
        PER_LAYER_ARRAY_LEN
    } else {
        ARRAY_HEAD_LEN
    }
}
/// Elements kept of an array nested inside another (bounds memory: 64 × 4^depth).
pub const NESTED_HEAD_LEN: usize = 4;
/// Largest GGUF header read: magic, counts, metadata and tensor infos (the tensor data is
/// never read). Real headers are a few MB — the largest tokenizers (Llama 3: 128,256 tokens
/// and 280,147 merges; Gemma 3: 262,144 tokens) take 5–11 MB — so 128 MiB is over ten times
/// the largest seen, while bounding what a hostile header costs: with the parse's copies
/// and the report, peak memory stays under 4 × this + 64 MiB (tests/memory_bounds.rs),
/// well inside wasm32's 4 GiB. Past it: `HeaderTooLarge`, and what was read is kept.
pub const MAX_GGUF_HEADER_BYTES: u64 = 128 * 1024 * 1024;
/// Array elements kept over a whole file (the heads of all arrays together). A kept value
/// takes 40 bytes for as little as 1 byte in the file (a U8 element), so without a budget
/// 10,000 arrays of 64 bytes would take 25 MiB, and nested heads multiply. Real files keep
/// a few thousand (≈ 50 arrays × 64); past the budget heads are shorter (the length is
/// still exact, and the page reads elements from the file on request).
pub const MAX_HEAD_VALUES: u64 = 100_000;
/// Bytes of a fixed header before the counts.
pub(crate) const MAGIC_AND_VERSION: u64 = 8;

/// Byte order of the numbers in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Endian {
    Little,
    Big,
}

/// One metadata entry, with where it sits in the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kv {
    pub key: String,
    pub value: Value,
    /// Absolute offset of the entry (its key length).
    pub offset: u64,
    /// Bytes the entry takes (key, type, value).
    pub bytes: u64,
    pub group: KvGroup,
}

/// The fixed header and where the sections lie.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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

/// Everything read from a GGUF header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GgufFile {
    pub file_size: u64,
    pub header: Header,
    pub kvs: Vec<Kv>,
    /// The tensors in header order (`header_offset`: where each tensor info starts).
    #[serde(deserialize_with = "crate::formats::tensor_list::deserialize")]
    pub tensors: Vec<TensorEntry>,
    pub card: ModelCard,
    pub tokenizer: TokenizerSummary,
    pub layout: Layout,
    pub findings: Vec<Finding>,
}

impl GgufFile {
    pub fn kv(&self, key: &str) -> Option<&Value> {
        self.kvs.iter().find(|kv| kv.key == key).map(|kv| &kv.value)
    }

    pub fn architecture(&self) -> Option<&str> {
        self.kv("general.architecture").and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests;
