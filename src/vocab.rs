//! The crate's vocabulary: the few plain types every layer speaks — what kind of file
//! ([`Format`]), one tensor as any format describes it ([`TensorEntry`], with a typed
//! dtype), sums over tensors ([`Totals`]) and a tokenizer's summary ([`TokenizerSummary`],
//! the same for GGUF metadata and Hugging Face tokenizer files).
//!
//! It sits under everything else: the parsers fill these types, the model wing combines
//! them, the report serializes them. It imports only `dtype` (the element types).

use crate::dtype::TensorDtype;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What kind of file an entry describes (`files[].format` in the report).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Safetensors,
    Gguf,
    SafetensorsIndex,
    Config,
    /// PyTorch's zip format (`torch.save` since 1.6): a `data.pkl` and stored storages.
    PytorchZip,
    /// PyTorch's legacy format: five pickles, then the raw storages.
    PytorchLegacy,
    /// A plain pickle of any protocol (0–5).
    Pickle,
    /// A numpy `.npy` array.
    Npy,
    /// A numpy `.npz` (a zip of `.npy` members).
    Npz,
    Unknown,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Safetensors => "safetensors",
            Format::Gguf => "gguf",
            Format::SafetensorsIndex => "safetensors-index",
            Format::Config => "config",
            Format::PytorchZip => "pytorch-zip",
            Format::PytorchLegacy => "pytorch-legacy",
            Format::Pickle => "pickle",
            Format::Npy => "npy",
            Format::Npz => "npz",
            Format::Unknown => "unknown",
        }
    }

    /// The formats read by the pickle-aware reader (`formats::torch`): they may hold code
    /// that runs when loaded, and get a safety verdict.
    pub fn is_pickle_family(self) -> bool {
        matches!(self, Format::PytorchZip | Format::PytorchLegacy | Format::Pickle | Format::Npy | Format::Npz)
    }

    /// PyTorch checkpoints (`.bin`, `.pt`, `.pth`, `.ckpt`): what a checkpoint folder's
    /// `pytorch_model*.bin` shards are.
    pub fn is_torch(self) -> bool {
        matches!(self, Format::PytorchZip | Format::PytorchLegacy)
    }
}

/// One tensor as a header describes it. The shape is row-major (numpy order) for every
/// format; `ggml_dims` keeps a GGUF tensor's dims as stored (ne[0] first).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorEntry {
    pub name: String,
    pub dtype: TensorDtype,
    pub shape: Vec<u64>,
    pub ggml_dims: Option<Vec<u64>>,
    /// Element count; `None` when the shape's product overflows u64.
    pub params: Option<u64>,
    /// Byte range relative to the data section, as in the header.
    pub start: u64,
    pub end: u64,
    /// Absolute byte offset of the first byte in the file (`None` on overflow).
    pub abs_start: Option<u64>,
    /// end - start (`None` when end < start).
    pub bytes: Option<u64>,
    /// Absolute offset of the tensor's description in the header: its JSON entry
    /// (safetensors) or its tensor info (GGUF).
    #[serde(default)]
    pub header_offset: Option<u64>,
}

impl TensorEntry {
    /// The `N` of a `blk.N.` (GGUF) or `model.layers.N.` (Hugging Face) name.
    pub fn block(&self) -> Option<u64> {
        let rest = self
            .name
            .strip_prefix("blk.")
            .or_else(|| self.name.strip_prefix("model.layers."))?;
        rest.split('.').next()?.parse().ok()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DtypeTotals {
    pub tensors: u64,
    pub params: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub tensors: u64,
    pub params: u64,
    pub bytes: u64,
    pub by_dtype: BTreeMap<String, DtypeTotals>,
}

impl Totals {
    /// Sums the tensors with saturating arithmetic (a lying header cannot wrap a total; an
    /// overflowing tensor is already a finding of its own).
    pub fn of<'a>(tensors: impl IntoIterator<Item = &'a TensorEntry>) -> Totals {
        let mut t = Totals::default();
        for e in tensors {
            let params = e.params.unwrap_or(0);
            let bytes = e.bytes.unwrap_or(0);
            t.tensors = t.tensors.saturating_add(1);
            t.params = t.params.saturating_add(params);
            t.bytes = t.bytes.saturating_add(bytes);
            let name = e.dtype.name();
            let d = match t.by_dtype.get_mut(name.as_ref()) {
                Some(d) => d,
                None => t.by_dtype.entry(name.into_owned()).or_default(),
            };
            d.tensors = d.tensors.saturating_add(1);
            d.params = d.params.saturating_add(params);
            d.bytes = d.bytes.saturating_add(bytes);
        }
        t
    }
}

/// What a tokenizer is, from a GGUF file's `tokenizer.*` metadata or a checkpoint's
/// `tokenizer.json` / `tokenizer_config.json`. Fields a source does not have stay empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenizerSummary {
    /// The tokenizer model: GGUF `tokenizer.ggml.model` ("gpt2", "llama"), or tokenizer.json
    /// `model.type` ("BPE", "Unigram", …).
    pub model: Option<String>,
    /// GGUF `tokenizer.ggml.pre` (the pre-tokenizer llama.cpp applies).
    pub pre: Option<String>,
    /// Entries in the vocabulary (GGUF `tokenizer.ggml.tokens`, tokenizer.json `model.vocab`).
    pub tokens: Option<u64>,
    /// Merge rules (BPE).
    pub merges: Option<u64>,
    /// tokenizer.json `added_tokens` (or tokenizer_config's `added_tokens_decoder`).
    pub added_tokens: Option<u64>,
    /// Highest token id + 1 over the vocabulary and the added tokens.
    pub total_tokens: Option<u64>,
    /// GGUF `tokenizer.ggml.token_type`: how many tokens of each type, by id.
    pub token_types: Vec<TokenTypeCount>,
    /// Special tokens: the roles (bos, eos, pad, unk) first, then other special tokens.
    pub special_tokens: Vec<SpecialToken>,
    /// tokenizer_config.json `tokenizer_class`.
    pub tokenizer_class: Option<String>,
    /// tokenizer_config.json `model_max_length` (any JSON value; some files hold 1e30).
    pub model_max_length: Option<serde_json::Value>,
    /// Chat templates as text (a single template is named "default"). Never executed,
    /// never rendered as markup.
    pub chat_templates: Vec<ChatTemplate>,
    /// Bytes the `tokenizer.*` metadata takes in a GGUF file.
    pub metadata_bytes: Option<u64>,
}

impl TokenizerSummary {
    /// The special token of a role ("bos", "eos", "pad", "unk").
    pub fn role(&self, role: &str) -> Option<&SpecialToken> {
        self.special_tokens.iter().find(|t| t.role.as_deref() == Some(role))
    }

    /// The first (default) chat template.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_templates.first().map(|t| t.template.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenTypeCount {
    pub id: i64,
    /// gguf-py's `TokenType` name ("NORMAL", "CONTROL", …), "?" for an id it does not define.
    pub name: std::borrow::Cow<'static, str>,
    pub count: u64,
}

/// A special token: its role when it has one, its id and its text when they are known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecialToken {
    pub role: Option<String>,
    pub id: Option<u64>,
    pub text: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatTemplate {
    pub name: String,
    pub template: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;

    fn entry(name: &str, dtype: TensorDtype, params: Option<u64>, bytes: Option<u64>) -> TensorEntry {
        TensorEntry {
            name: name.into(),
            dtype,
            shape: vec![],
            ggml_dims: None,
            params,
            start: 0,
            end: 0,
            abs_start: None,
            bytes,
            header_offset: None,
        }
    }

    #[test]
    fn totals_saturate_and_group_by_name() {
        let t = Totals::of(&[
            entry("a", TensorDtype::Safetensors(Dtype::Bf16), Some(u64::MAX), Some(2)),
            entry("b", TensorDtype::Safetensors(Dtype::Bf16), Some(5), None),
            entry("c", TensorDtype::Ggml(12), Some(256), Some(144)),
        ]);
        assert_eq!(t.tensors, 3);
        assert_eq!(t.params, u64::MAX);
        assert_eq!(t.bytes, 146);
        assert_eq!(t.by_dtype["BF16"].tensors, 2);
        assert_eq!(t.by_dtype["Q4_K"].bytes, 144);
    }

    #[test]
    fn blocks() {
        assert_eq!(entry("blk.12.attn_q.weight", TensorDtype::Ggml(0), None, None).block(), Some(12));
        assert_eq!(entry("model.layers.3.mlp.up_proj.weight", TensorDtype::Ggml(0), None, None).block(), Some(3));
        assert_eq!(entry("token_embd.weight", TensorDtype::Ggml(0), None, None).block(), None);
    }
}
