//! What a dropped or listed file is, told from its name, its first bytes and its length —
//! before anything else is read: a model file (inspected header-only), one of a
//! checkpoint's small JSON companions (read whole) or something to leave alone.

use crate::formats::{sniff, SNIFF_LEN};
use crate::vocab::Format;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Largest companion JSON read whole. tokenizer.json is the big one: ~9 MB for Llama 3,
/// ~7 MB for Qwen2, ~17 MB for some multilingual tokenizers, ~33 MB for Gemma 3; an index
/// of a 90k-tensor MoE is a few MB. 64 MiB leaves room and still bounds memory.
pub const MAX_COMPANION_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes [`classify`] looks at: enough for the leading keys of every companion
/// (`metadata`/`weight_map`, `architectures`, `version`/`added_tokens`, …).
pub const CLASSIFY_LEN: u64 = 4096;
/// What a dropped or listed file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Safetensors,
    Gguf,
    /// A pickle-based file (PyTorch zip or legacy, plain pickle, `.npy`, `.npz`).
    Pickle,
    /// `model.safetensors.index.json`: `weight_map` (+ `metadata.total_size`).
    Index,
    /// `config.json`: `model_type` / `architectures`.
    Config,
    GenerationConfig,
    /// `tokenizer.json` (Hugging Face tokenizers).
    Tokenizer,
    TokenizerConfig,
    /// Some other JSON object.
    Json,
    Unknown,
}

impl Kind {
    /// True for model files whose header is inspected (never read whole).
    pub fn is_tensor_file(self) -> bool {
        matches!(self, Kind::Safetensors | Kind::Gguf | Kind::Pickle)
    }

    /// True for the small JSON files a checkpoint carries.
    pub fn is_companion(self) -> bool {
        matches!(
            self,
            Kind::Index | Kind::Config | Kind::GenerationConfig | Kind::Tokenizer | Kind::TokenizerConfig | Kind::Json
        )
    }

    /// Whether a file of this kind and length should be read whole and passed to
    /// [`build_model`] as a companion.
    pub fn read_whole(self, len: u64) -> bool {
        self.is_companion() && len <= MAX_COMPANION_BYTES
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Safetensors => "safetensors",
            Kind::Gguf => "gguf",
            Kind::Pickle => "pytorch / pickle",
            Kind::Index => "shard index",
            Kind::Config => "config",
            Kind::GenerationConfig => "generation config",
            Kind::Tokenizer => "tokenizer",
            Kind::TokenizerConfig => "tokenizer config",
            Kind::Json => "json",
            Kind::Unknown => "unknown",
        }
    }
}

/// Classifies a file from its name, its first bytes (up to [`CLASSIFY_LEN`] is enough)
/// and its length: binary magic first, then JSON content hints, then the name.
pub fn classify(name: &str, first_bytes: &[u8], file_len: u64) -> Kind {
    match sniff(first_bytes, file_len) {
        Format::Gguf => return Kind::Gguf,
        Format::Safetensors => return Kind::Safetensors,
        f if f.is_pickle_family() => return Kind::Pickle,
        _ => {}
    }
    let trimmed = first_bytes.trim_ascii_start();
    if trimmed.first() == Some(&b'{') {
        if let Some(kind) = kind_from_text_hint(trimmed) {
            return kind;
        }
        return match kind_from_name(name) {
            Kind::Unknown | Kind::Safetensors | Kind::Gguf | Kind::Pickle => Kind::Json,
            k => k,
        };
    }
    if first_bytes.len() as u64 >= file_len.min(SNIFF_LEN) && !first_bytes.is_empty() {
        // Enough bytes to know it is neither JSON nor a model file: trust the content,
        // except that a short/broken model file still goes to its parser to be explained.
        return match kind_from_name(name) {
            k @ (Kind::Safetensors | Kind::Gguf | Kind::Pickle) => k,
            _ => Kind::Unknown,
        };
    }
    kind_from_name(name)
}

/// Substring hints within the first bytes of a JSON object.
fn kind_from_text_hint(bytes: &[u8]) -> Option<Kind> {
    let has = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
    if has("\"weight_map\"") {
        Some(Kind::Index)
    } else if has("\"model_type\"") || has("\"architectures\"") {
        Some(Kind::Config)
    } else if has("\"added_tokens\"") || has("\"pre_tokenizer\"") || has("\"normalizer\"") {
        Some(Kind::Tokenizer)
    } else if has("\"added_tokens_decoder\"") || has("\"tokenizer_class\"") || has("\"chat_template\"") {
        Some(Kind::TokenizerConfig)
    } else {
        None
    }
}

/// The last component of a path-like name ("ckpt/model.safetensors" → "model.safetensors").
pub fn base_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

fn kind_from_name(name: &str) -> Kind {
    let base = base_name(name).to_ascii_lowercase();
    if base.ends_with(".safetensors") {
        Kind::Safetensors
    } else if base.ends_with(".gguf") {
        Kind::Gguf
    } else if crate::formats::format_from_name(&base).is_pickle_family() {
        Kind::Pickle
    } else if base.ends_with(".index.json") {
        Kind::Index
    } else if base == "config.json" {
        Kind::Config
    } else if base == "generation_config.json" {
        Kind::GenerationConfig
    } else if base == "tokenizer.json" {
        Kind::Tokenizer
    } else if base == "tokenizer_config.json" {
        Kind::TokenizerConfig
    } else if base.ends_with(".json") {
        Kind::Json
    } else {
        Kind::Unknown
    }
}

/// The top-level keys of a JSON object, values skipped without being built.
struct TopKeys(Vec<String>);

impl<'de> Deserialize<'de> for TopKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TopKeys;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopKeys, A::Error> {
                let mut keys = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    map.next_value::<IgnoredAny>()?;
                    keys.push(k);
                }
                Ok(TopKeys(keys))
            }
        }
        d.deserialize_map(V)
    }
}

/// Classifies a companion from its whole content (top-level keys), the name second.
pub fn companion_kind(name: &str, bytes: &[u8]) -> Kind {
    let by_name = kind_from_name(name);
    let Ok(TopKeys(keys)) = serde_json::from_slice::<TopKeys>(bytes) else {
        return if by_name.is_companion() { by_name } else { Kind::Unknown };
    };
    let has = |k: &str| keys.iter().any(|x| x == k);
    if has("weight_map") {
        Kind::Index
    } else if has("model_type") || has("architectures") {
        Kind::Config
    } else if has("model") && (has("added_tokens") || has("pre_tokenizer") || has("normalizer") || has("decoder")) {
        Kind::Tokenizer
    } else if has("chat_template") || has("tokenizer_class") || has("added_tokens_decoder") {
        Kind::TokenizerConfig
    } else if by_name == Kind::GenerationConfig
        || (by_name == Kind::Json
            && ["do_sample", "temperature", "top_p", "top_k", "max_new_tokens"].iter().any(|k| has(k)))
    {
        Kind::GenerationConfig
    } else if by_name.is_companion() {
        by_name
    } else {
        Kind::Json
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_content_then_name() {
        let idx = br#"{"metadata": {"total_size": 10}, "weight_map": {"a": "x.safetensors"}}"#;
        assert_eq!(classify("whatever.json", idx, idx.len() as u64), Kind::Index);
        assert_eq!(classify("config.json", br#"{"weight_map": {}}"#, 18), Kind::Index);
        assert_eq!(classify("x", br#"{"architectures": ["LlamaForCausalLM"]}"#, 40), Kind::Config);
        assert_eq!(classify("generation_config.json", br#"{"bos_token_id": 1}"#, 19), Kind::GenerationConfig);
        assert_eq!(classify("README.md", b"# Model card", 12), Kind::Unknown);
        assert_eq!(classify("tokenizer.model", b"\x0a\x0b", 2), Kind::Unknown);
        assert_eq!(classify("a.safetensors", b"", 0), Kind::Safetensors);
        let mut st = 2u64.to_le_bytes().to_vec();
        st.extend_from_slice(b"{}");
        assert_eq!(classify("config.json", &st, 10), Kind::Safetensors);
        assert!(Kind::Tokenizer.read_whole(17_000_000));
        assert!(!Kind::Tokenizer.read_whole(MAX_COMPANION_BYTES + 1));
        assert!(!Kind::Safetensors.read_whole(10));
        assert_eq!(companion_kind("tokenizer.json", br#"{"version":"1.0","added_tokens":[],"model":{"type":"BPE","vocab":{},"merges":[]}}"#), Kind::Tokenizer);
        assert_eq!(companion_kind("x.json", br#"{"do_sample": true, "temperature": 0.6}"#), Kind::GenerationConfig);
        assert_eq!(companion_kind("config.json", b"not json"), Kind::Config);
    }
}
