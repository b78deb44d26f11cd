//! What is derived from a parsed GGUF header: the metadata groups, the model card (the
//! model as llama.cpp's loader would describe it), the tokenizer summary and the byte-exact
//! layout of the file.

use super::cursor::{quick_str, Cursor};
use super::value::Value;
use super::{Endian, GgufFile};
use crate::dtype::ggml::file_type_name;
use crate::vocab::{ChatTemplate, SpecialToken, TokenTypeCount, TokenizerSummary};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

/// Which part of the metadata a key belongs to (the layout and the page group by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
            KvGroup::Architecture => format!("{} metadata", crate::error::clip(arch.unwrap_or("architecture"))),
            KvGroup::Tokenizer => "tokenizer metadata".into(),
            KvGroup::Other => "other metadata".into(),
        }
    }
}

/// One term of the layout accounting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayoutTerm {
    /// "header", "kv", "tensor_infos", "padding", "tensor_data", "tensor_padding", "unparsed".
    pub kind: Cow<'static, str>,
    pub label: String,
    pub bytes: u64,
}

/// Where every byte of the file goes. `adds_up` is true when the terms sum to `file_size`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub file_size: u64,
    pub terms: Vec<LayoutTerm>,
    pub adds_up: bool,
}

/// The model as llama.cpp's loader would describe it, from the metadata and tensors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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

/// `tokenizer.ggml.token_type` counted in fixed memory: the seven defined types by id,
/// every other id together (issue 12: a file with 4 million distinct ids made a map of
/// 4 million entries, 2 GB of memory).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct TokenTypes {
    pub(super) known: [u64; 7],
    pub(super) other: u64,
    /// The first id outside 0..=6, as an example.
    pub(super) first_other: Option<i64>,
}

impl TokenTypes {
    #[inline]
    pub(super) fn add(&mut self, id: i64) {
        match usize::try_from(id).ok().and_then(|i| self.known.get_mut(i)) {
            Some(n) => *n = n.saturating_add(1),
            None => {
                self.other = self.other.saturating_add(1);
                self.first_other.get_or_insert(id);
            }
        }
    }
}

/// The name of the one entry that counts every token type id outside 0..=6 (its `id` is
/// the first such id in the file).
pub const OTHER_TOKEN_TYPES: &str = "OTHER";

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

impl GgufFile {
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

    pub(super) fn model_card(&self) -> ModelCard {
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

    /// `tokens_at`: where `tokenizer.ggml.tokens`' elements start and how many there are;
    /// `token_types`: the count of each `tokenizer.ggml.token_type` id (both noted by the
    /// parser on its way through).
    pub(super) fn tokenizer_summary(&self, prefix: &[u8], tokens_at: Option<(u64, u64)>, token_types: &TokenTypes) -> TokenizerSummary {
        let arr_len = |k: &str| match self.kv(k) {
            Some(Value::Array(a)) => Some(a.len),
            _ => None,
        };
        let ids: Vec<(&str, Option<u64>)> = ["bos", "eos", "padding", "unknown"]
            .iter()
            .map(|k| (*k, self.kv(&format!("tokenizer.ggml.{k}_token_id")).and_then(Value::as_u64)))
            .collect();
        let wanted: Vec<u64> = ids.iter().filter_map(|(_, id)| *id).collect();
        let texts = tokens_at.map_or_else(HashMap::new, |(at, len)| token_strings(prefix, self.header.version == Some(1), self.header.endian == Some(Endian::Big), at, len, &wanted));
        let special_tokens = ["bos", "eos", "pad", "unk"]
            .iter()
            .zip(&ids)
            .filter_map(|(role, (_, id))| {
                id.map(|id| SpecialToken {
                    role: Some((*role).to_string()),
                    id: Some(id),
                    text: texts.get(&id).cloned(),
                })
            })
            .collect();
        // `tokenizer.chat_template` is the default; `tokenizer.chat_template.NAME` the others.
        let chat_templates = self
            .kvs
            .iter()
            .filter_map(|kv| {
                let name = match kv.key.strip_prefix("tokenizer.chat_template")? {
                    "" => "default",
                    rest => rest.strip_prefix('.')?,
                };
                Some(ChatTemplate {
                    name: name.to_string(),
                    template: kv.value.as_str()?.to_string(),
                })
            })
            .collect();
        let tokens = arr_len("tokenizer.ggml.tokens");
        let metadata_bytes = self.kvs.iter().filter(|k| k.group == KvGroup::Tokenizer).fold(0u64, |a, k| a.saturating_add(k.bytes));
        TokenizerSummary {
            model: self.kv("tokenizer.ggml.model").and_then(Value::as_str).map(str::to_string),
            pre: self.kv("tokenizer.ggml.pre").and_then(Value::as_str).map(str::to_string),
            tokens,
            merges: arr_len("tokenizer.ggml.merges"),
            total_tokens: tokens,
            token_types: token_types
                .known
                .iter()
                .zip(0i64..)
                .filter(|(n, _)| **n > 0)
                .map(|(n, id)| TokenTypeCount {
                    id,
                    name: Cow::Borrowed(token_type_name(id)),
                    count: *n,
                })
                .chain(token_types.first_other.map(|id| TokenTypeCount {
                    id,
                    name: Cow::Borrowed(OTHER_TOKEN_TYPES),
                    count: token_types.other,
                }))
                .collect(),
            special_tokens,
            chat_templates,
            metadata_bytes: (metadata_bytes > 0).then_some(metadata_bytes),
            ..TokenizerSummary::default()
        }
    }

    pub(super) fn layout(&self) -> Layout {
        let mut terms = Vec::new();
        let h = &self.header;
        if h.fixed_header_bytes > 0 {
            terms.push(LayoutTerm {
                kind: Cow::Borrowed("header"),
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
                kind: Cow::Borrowed("kv"),
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
                kind: Cow::Borrowed("tensor_infos"),
                label: format!("tensor infos ({} tensors)", self.tensors.len()),
                bytes: ti_end.saturating_sub(start),
            });
            accounted = ti_end;
        }
        if let (Some(ti_end), Some(ds)) = (h.tensor_infos_end, h.data_start) {
            let ds_in_file = ds.min(self.file_size);
            terms.push(LayoutTerm {
                kind: Cow::Borrowed("padding"),
                label: format!("padding to the alignment ({})", h.alignment),
                bytes: ds_in_file.saturating_sub(ti_end),
            });
            let data_len = self.file_size.saturating_sub(ds);
            let tensor_bytes = self.card.tensor_bytes;
            if tensor_bytes <= data_len {
                terms.push(LayoutTerm {
                    kind: Cow::Borrowed("tensor_data"),
                    label: "tensor data".into(),
                    bytes: tensor_bytes,
                });
                terms.push(LayoutTerm {
                    kind: Cow::Borrowed("tensor_padding"),
                    label: "padding between and after tensors".into(),
                    bytes: data_len - tensor_bytes,
                });
            } else {
                terms.push(LayoutTerm {
                    kind: Cow::Borrowed("tensor_data"),
                    label: format!("tensor data (the tensors claim {tensor_bytes} bytes; the file holds {data_len})"),
                    bytes: data_len,
                });
            }
            accounted = ds_in_file.saturating_add(data_len);
        }
        if accounted < self.file_size {
            terms.push(LayoutTerm {
                kind: Cow::Borrowed("unparsed"),
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

