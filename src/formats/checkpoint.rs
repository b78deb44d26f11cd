//! Whole checkpoints: several safetensors shards plus their small JSON companions
//! (`model.safetensors.index.json`, `config.json`, `generation_config.json`,
//! `tokenizer.json`, `tokenizer_config.json`) merged into one model.
//!
//! Everything here is pure (no I/O): the caller inspects the shards' headers
//! (`source::inspect`), reads the small JSON files whole (those [`classify`] marks with
//! [`Kind::read_whole`]) and calls [`build_model`]. Companions are recognised by content
//! first (an index has `weight_map`, a config has `model_type`/`architectures`), by name
//! second. JSON is parsed with serde_json; chat templates are kept as text and never run.

use super::sniff;
use crate::audit::{self, Architecture, Audit, Present};
use crate::error::{Code, Finding, Severity};
use crate::report::{FileReport, Format, TensorEntry, Totals};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

/// Largest companion JSON read whole. tokenizer.json is the big one: ~9 MB for Llama 3,
/// ~7 MB for Qwen2, ~17 MB for some multilingual tokenizers, ~33 MB for Gemma 3; an index
/// of a 90k-tensor MoE is a few MB. 64 MiB leaves room and still bounds memory.
pub const MAX_COMPANION_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes [`classify`] looks at: enough for the leading keys of every companion
/// (`metadata`/`weight_map`, `architectures`, `version`/`added_tokens`, …).
pub const CLASSIFY_LEN: u64 = 4096;
/// Bytes of each shard's header length prefix (the safetensors u64).
pub const SHARD_PREFIX_BYTES: u64 = super::safetensors::LEN_PREFIX;
/// Tensor names quoted in one summarising finding (the rest are counted).
pub const MAX_NAMES_LISTED: usize = 5;
/// Largest `generation_config.json` kept verbatim in the report (real ones are < 1 KB).
pub const MAX_GENERATION_CONFIG_BYTES: usize = 64 * 1024;

/// What a dropped or listed file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Safetensors,
    Gguf,
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
        matches!(self, Kind::Safetensors | Kind::Gguf)
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
            Kind::Index => "safetensors index",
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
        _ => {}
    }
    let trimmed = first_bytes.trim_ascii_start();
    if trimmed.first() == Some(&b'{') {
        if let Some(kind) = kind_from_text_hint(trimmed) {
            return kind;
        }
        return match kind_from_name(name) {
            Kind::Unknown | Kind::Safetensors | Kind::Gguf => Kind::Json,
            k => k,
        };
    }
    if first_bytes.len() as u64 >= file_len.min(super::SNIFF_LEN) && !first_bytes.is_empty() {
        // Enough bytes to know it is neither JSON nor a model file: trust the content,
        // except that a short/broken model file still goes to its parser to be explained.
        return match kind_from_name(name) {
            k @ (Kind::Safetensors | Kind::Gguf) => k,
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

/// Counts the elements of a JSON array or object without building them (vocabularies and
/// merge lists hold hundreds of thousands of entries).
#[derive(Clone, Copy, Debug, Default)]
struct Count(u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON array or object")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0u64;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n = n.saturating_add(1);
                }
                Ok(Count(n))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
                let mut n = 0u64;
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    n = n.saturating_add(1);
                }
                Ok(Count(n))
            }
            fn visit_unit<E>(self) -> Result<Count, E> {
                Ok(Count(0))
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON object's entries in file order, duplicates kept (serde_json's map keeps only
/// the last of a repeated key; a repeated tensor in `weight_map` must be seen).
struct Pairs(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Pairs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pairs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Pairs(out))
            }
        }
        d.deserialize_map(V)
    }
}

// ---------------------------------------------------------------- companions

#[derive(Deserialize)]
struct RawIndex {
    metadata: Option<Value>,
    weight_map: Option<Pairs>,
}

/// What the index says.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IndexSummary {
    pub file: String,
    /// `metadata.total_size`, when it is an integer.
    pub total_size: Option<u64>,
    /// Whether total_size could be compared (every referenced shard provided).
    pub total_size_checked: bool,
    pub tensors: u64,
    /// Shards the weight_map names, sorted by name, with their tensor counts.
    pub shards: Vec<IndexShard>,
    #[serde(skip)]
    pub weight_map: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IndexShard {
    pub name: String,
    pub tensors: u64,
    pub provided: bool,
}

fn parse_index(file: &str, bytes: &[u8], findings: &mut Vec<Finding>) -> Option<IndexSummary> {
    let raw: RawIndex = match serde_json::from_slice(bytes) {
        Ok(r) => r,
        Err(e) => {
            findings.push(Finding::error(Code::InvalidIndex, format!("{file} is not a valid index: {e}")).field("weight_map"));
            return None;
        }
    };
    let Some(Pairs(pairs)) = raw.weight_map else {
        findings.push(Finding::error(Code::InvalidIndex, format!("{file} has no \"weight_map\" object")).field("weight_map"));
        return None;
    };
    let mut total_size = None;
    if let Some(meta) = raw.metadata.as_ref().and_then(Value::as_object) {
        match meta.get("total_size") {
            None => {}
            Some(v) => match v.as_u64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19).map(|f| f as u64)) {
                Some(n) => total_size = Some(n),
                None => findings.push(
                    Finding::warning(Code::InvalidIndex, format!("{file}: metadata.total_size is {v}, not a byte count"))
                        .field("metadata.total_size"),
                ),
            },
        }
    }
    let mut weight_map = Vec::with_capacity(pairs.len());
    let mut seen = BTreeSet::new();
    let mut shards: Vec<IndexShard> = Vec::new();
    for (tensor, v) in pairs {
        let Some(shard) = v.as_str() else {
            findings.push(
                Finding::error(Code::InvalidIndex, format!("{file}: weight_map[{tensor:?}] is {v}, not a file name"))
                    .tensor(tensor.as_str())
                    .field("weight_map"),
            );
            continue;
        };
        if !seen.insert(tensor.clone()) {
            findings.push(
                Finding::error(Code::InvalidIndex, format!("{file}: {tensor} is listed more than once in weight_map; loaders keep only one entry"))
                    .tensor(tensor.as_str())
                    .field("weight_map"),
            );
            continue;
        }
        match shards.iter_mut().find(|s| s.name == shard) {
            Some(s) => s.tensors = s.tensors.saturating_add(1),
            None => shards.push(IndexShard {
                name: shard.to_string(),
                tensors: 1,
                provided: false,
            }),
        }
        weight_map.push((tensor, shard.to_string()));
    }
    shards.sort_by(|a, b| a.name.cmp(&b.name));
    Some(IndexSummary {
        file: file.to_string(),
        total_size,
        total_size_checked: false,
        tensors: weight_map.len() as u64,
        shards,
        weight_map,
    })
}

#[derive(Deserialize)]
struct RawTokenizer {
    model: Option<RawTokModel>,
    added_tokens: Option<Vec<RawAddedToken>>,
}

#[derive(Deserialize)]
struct RawTokModel {
    #[serde(rename = "type")]
    kind: Option<String>,
    vocab: Option<Count>,
    merges: Option<Count>,
}

#[derive(Deserialize)]
struct RawAddedToken {
    id: u64,
    content: String,
    #[serde(default)]
    special: bool,
}

/// What tokenizer.json and tokenizer_config.json say.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TokenizerSummary {
    /// tokenizer.json `model.type` (BPE, Unigram, WordPiece, …).
    pub model_type: Option<String>,
    /// Entries in `model.vocab`.
    pub vocab: Option<u64>,
    /// Entries in `model.merges` (BPE).
    pub merges: Option<u64>,
    pub added_tokens: u64,
    /// Highest token id + 1 over the vocabulary and the added tokens.
    pub total_tokens: Option<u64>,
    /// Added tokens marked special (content, id), in file order.
    pub special_tokens: Vec<SpecialToken>,
    /// tokenizer_config.json: bos/eos/pad/unk tokens.
    pub roles: BTreeMap<String, String>,
    pub tokenizer_class: Option<String>,
    pub model_max_length: Option<Value>,
    /// Chat templates as text (a single template is named "default"). Never executed.
    pub chat_templates: Vec<ChatTemplate>,
    #[serde(skip)]
    has_json: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SpecialToken {
    pub id: u64,
    pub content: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChatTemplate {
    pub name: String,
    pub template: String,
}

fn parse_tokenizer(file: &str, bytes: &[u8], t: &mut TokenizerSummary, findings: &mut Vec<Finding>) {
    let raw: RawTokenizer = match serde_json::from_slice(bytes) {
        Ok(r) => r,
        Err(e) => {
            findings.push(Finding::warning(Code::InvalidTokenizer, format!("{file} could not be read as a tokenizer: {e}")));
            return;
        }
    };
    t.has_json = true;
    if let Some(m) = raw.model {
        t.model_type = m.kind;
        t.vocab = m.vocab.map(|c| c.0);
        t.merges = m.merges.map(|c| c.0);
    }
    let added = raw.added_tokens.unwrap_or_default();
    t.added_tokens = added.len() as u64;
    let max_added = added.iter().map(|a| a.id.saturating_add(1)).max();
    t.total_tokens = match (t.vocab, max_added) {
        (Some(v), Some(a)) => Some(v.max(a)),
        (v, a) => v.or(a),
    };
    t.special_tokens = added
        .into_iter()
        .filter(|a| a.special)
        .map(|a| SpecialToken { id: a.id, content: a.content })
        .collect();
}

#[derive(Deserialize)]
struct RawTokenizerConfig {
    bos_token: Option<Value>,
    eos_token: Option<Value>,
    pad_token: Option<Value>,
    unk_token: Option<Value>,
    chat_template: Option<Value>,
    tokenizer_class: Option<String>,
    model_max_length: Option<Value>,
    added_tokens_decoder: Option<BTreeMap<String, RawDecoderToken>>,
}

#[derive(Deserialize)]
struct RawDecoderToken {
    content: String,
    #[serde(default)]
    special: bool,
}

/// A token given as a string or as an AddedToken object `{"content": …}`.
fn token_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// Returns false when the file could not be read.
fn parse_tokenizer_config(file: &str, bytes: &[u8], t: &mut TokenizerSummary, findings: &mut Vec<Finding>) -> bool {
    let raw: RawTokenizerConfig = match serde_json::from_slice(bytes) {
        Ok(r) => r,
        Err(e) => {
            findings.push(Finding::warning(Code::InvalidTokenizer, format!("{file} could not be read as a tokenizer config: {e}")));
            return false;
        }
    };
    for (role, v) in [
        ("bos_token", &raw.bos_token),
        ("eos_token", &raw.eos_token),
        ("pad_token", &raw.pad_token),
        ("unk_token", &raw.unk_token),
    ] {
        if let Some(s) = v.as_ref().and_then(token_text) {
            t.roles.insert(role.to_string(), s);
        }
    }
    t.tokenizer_class = raw.tokenizer_class;
    t.model_max_length = raw.model_max_length;
    match raw.chat_template {
        Some(Value::String(s)) => t.chat_templates.push(ChatTemplate {
            name: "default".into(),
            template: s,
        }),
        Some(Value::Array(items)) => {
            for item in items {
                let name = item.get("name").and_then(Value::as_str);
                let template = item.get("template").and_then(Value::as_str);
                if let (Some(name), Some(template)) = (name, template) {
                    t.chat_templates.push(ChatTemplate {
                        name: name.to_string(),
                        template: template.to_string(),
                    });
                }
            }
        }
        Some(Value::Null) | None => {}
        Some(other) => findings.push(
            Finding::warning(Code::InvalidTokenizer, format!("{file}: chat_template is {}, not text", kind_of(&other)))
                .field("chat_template"),
        ),
    }
    // tokenizer.json, when given, is the authority on special tokens.
    if !t.has_json {
        if let Some(dec) = raw.added_tokens_decoder {
            t.added_tokens = dec.len() as u64;
            let mut specials: Vec<SpecialToken> = dec
                .into_iter()
                .filter(|(_, d)| d.special)
                .filter_map(|(id, d)| id.parse::<u64>().ok().map(|id| SpecialToken { id, content: d.content }))
                .collect();
            specials.sort_by_key(|s| s.id);
            t.special_tokens = specials;
        }
    }
    true
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

// ---------------------------------------------------------------- the merged model

/// One tensor of the merged model: the file's entry plus the shard it is in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelTensor {
    #[serde(flatten)]
    pub tensor: TensorEntry,
    pub file: String,
}

/// One provided shard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ShardInfo {
    pub name: String,
    pub size: u64,
    pub ok: bool,
    /// N, the JSON header's length.
    pub header_len: Option<u64>,
    /// 8 + N: the header with its length prefix.
    pub header_bytes: Option<u64>,
    pub tensors: u64,
    pub params: u64,
    pub tensor_bytes: u64,
    /// size − (8 + N) − tensor bytes: 0 for a well-formed shard.
    pub unaccounted_bytes: Option<i64>,
    /// Tensors the index places in this shard (None without an index).
    pub indexed_tensors: Option<u64>,
}

/// "sum of shard sizes = tensor bytes + headers + 8-byte prefixes".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Reconciliation {
    pub file_bytes: u64,
    pub tensor_bytes: u64,
    /// Sum of the N's.
    pub header_bytes: u64,
    /// 8 per shard.
    pub prefix_bytes: u64,
    pub headers_and_prefixes: u64,
    /// file_bytes − tensor_bytes − headers_and_prefixes (0 when the files hold nothing else).
    pub unaccounted_bytes: i64,
    pub balanced: bool,
}

/// A companion file that was given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CompanionInfo {
    pub name: String,
    pub kind: Kind,
    pub size: u64,
    /// False when it was not read (too large, unreadable JSON, a second file of a kind).
    pub used: bool,
}

/// The merged view of a checkpoint: the report's `model` section (docs/report.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelReport {
    pub format: &'static str,
    /// False when the merged model has errors (each shard's own findings are in its file
    /// entry; see also [`ModelReport::ok_with`]).
    pub ok: bool,
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
    pub shards: Vec<ShardInfo>,
    /// Shards the index (or the `-0000k-of-0000n` naming) expects but that were not given.
    pub missing_shards: Vec<String>,
    pub companions: Vec<CompanionInfo>,
    pub tensors: Vec<ModelTensor>,
    pub totals: Totals,
    pub reconciliation: Reconciliation,
    pub index: Option<IndexSummary>,
    pub architecture: Option<Architecture>,
    pub audit: Option<Audit>,
    pub tokenizer: Option<TokenizerSummary>,
    pub generation_config: Option<Value>,
}

impl ModelReport {
    /// The report's `model` value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// True when neither the merged model nor any of the given shard reports has errors.
    pub fn ok_with(&self, files: &[FileReport]) -> bool {
        self.ok && files.iter().all(|f| f.ok)
    }

    /// All findings, errors first.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.errors.iter().chain(self.warnings.iter())
    }
}

/// Whether a set of inputs forms a checkpoint to merge: several safetensors files, or
/// any recognised companion (index, config, tokenizer files; not [`Kind::Json`]). A single
/// safetensors file on its own keeps `model` null.
pub fn wants_model(safetensors_files: usize, recognised_companions: usize) -> bool {
    safetensors_files > 1 || recognised_companions > 0
}

/// Builds the merged model from the safetensors shard reports (from `source::inspect`;
/// other formats are ignored) and the companions' names and whole bytes. Pure: no I/O.
pub fn build_model(files: &[FileReport], companions: &[(String, Vec<u8>)]) -> ModelReport {
    let mut findings: Vec<Finding> = Vec::new();

    // ---- companions
    let mut companion_infos = Vec::new();
    let mut index: Option<IndexSummary> = None;
    let mut config: Option<(String, Value)> = None;
    let mut tokenizer = TokenizerSummary::default();
    let mut tokenizer_seen = false;
    let mut tokenizer_config_seen = false;
    let mut generation_config = None;
    // tokenizer.json before tokenizer_config.json (the former decides special tokens).
    let mut order: Vec<(Kind, &str, &[u8])> = companions
        .iter()
        .map(|(n, b)| (companion_kind(n, b), n.as_str(), b.as_slice()))
        .collect();
    order.sort_by_key(|(k, _, _)| *k != Kind::Tokenizer);
    for (kind, name, bytes) in order {
        let size = bytes.len() as u64;
        let mut used = true;
        if size > MAX_COMPANION_BYTES {
            findings.push(Finding::warning(
                Code::CompanionTooLarge,
                format!("{name} has {size} bytes, more than the {MAX_COMPANION_BYTES} read for a JSON companion; it was skipped"),
            ));
            used = false;
        } else {
            match kind {
                Kind::Index if index.is_none() => {
                    index = parse_index(name, bytes, &mut findings);
                    used = index.is_some();
                }
                Kind::Config if config.is_none() => match serde_json::from_slice::<Value>(bytes) {
                    Ok(v) if v.is_object() => config = Some((name.to_string(), v)),
                    Ok(_) => {
                        findings.push(Finding::error(Code::InvalidConfig, format!("{name} is not a JSON object")));
                        used = false;
                    }
                    Err(e) => {
                        findings.push(Finding::error(Code::InvalidConfig, format!("{name} is not valid JSON: {e}")));
                        used = false;
                    }
                },
                Kind::Tokenizer if !tokenizer.has_json => {
                    parse_tokenizer(name, bytes, &mut tokenizer, &mut findings);
                    used = tokenizer.has_json;
                    tokenizer_seen |= used;
                }
                Kind::TokenizerConfig if !tokenizer_config_seen => {
                    used = parse_tokenizer_config(name, bytes, &mut tokenizer, &mut findings);
                    tokenizer_config_seen = used;
                    tokenizer_seen |= used;
                }
                Kind::GenerationConfig if generation_config.is_none() => {
                    generation_config = if bytes.len() <= MAX_GENERATION_CONFIG_BYTES {
                        serde_json::from_slice::<Value>(bytes).ok()
                    } else {
                        None
                    };
                    used = generation_config.is_some();
                }
                Kind::Json | Kind::Unknown | Kind::Safetensors | Kind::Gguf => used = false,
                _ => {
                    findings.push(Finding::warning(
                        Code::DuplicateCompanion,
                        format!("{name} is a second {} file; only the first one is used", kind.name()),
                    ));
                    used = false;
                }
            }
        }
        companion_infos.push(CompanionInfo {
            name: name.to_string(),
            kind,
            size,
            used,
        });
    }

    // ---- shards (safetensors only), sorted by name
    let mut shard_files: Vec<&FileReport> = files.iter().filter(|f| f.format == Format::Safetensors).collect();
    shard_files.sort_by(|a, b| a.name.cmp(&b.name));
    let mut shards = Vec::new();
    let mut tensors: Vec<ModelTensor> = Vec::new();
    // tensor name → shards holding it
    let mut located: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut recon = Reconciliation::default();
    for f in &shard_files {
        // The index names shards by base name; a dropped folder may give relative paths.
        let base = base_name(&f.name);
        if shards.iter().any(|s: &ShardInfo| s.name == base) {
            findings.push(Finding::warning(
                Code::DuplicateCompanion,
                format!("{base} was given twice; only the first is used"),
            ));
            continue;
        }
        let header_bytes = f.header_len.and_then(|n| n.checked_add(SHARD_PREFIX_BYTES));
        let unaccounted = header_bytes.and_then(|h| {
            let used = i128::from(h) + i128::from(f.totals.bytes);
            i64::try_from(i128::from(f.size) - used).ok()
        });
        shards.push(ShardInfo {
            name: base.to_string(),
            size: f.size,
            ok: f.ok,
            header_len: f.header_len,
            header_bytes,
            tensors: f.totals.tensors,
            params: f.totals.params,
            tensor_bytes: f.totals.bytes,
            unaccounted_bytes: unaccounted,
            indexed_tensors: None,
        });
        recon.file_bytes = recon.file_bytes.saturating_add(f.size);
        recon.tensor_bytes = recon.tensor_bytes.saturating_add(f.totals.bytes);
        if let Some(n) = f.header_len {
            recon.header_bytes = recon.header_bytes.saturating_add(n);
            recon.prefix_bytes = recon.prefix_bytes.saturating_add(SHARD_PREFIX_BYTES);
        }
        for t in &f.tensors {
            located.entry(t.name.as_str()).or_default().push(base);
            tensors.push(ModelTensor {
                tensor: t.clone(),
                file: base.to_string(),
            });
        }
    }
    recon.headers_and_prefixes = recon.header_bytes.saturating_add(recon.prefix_bytes);
    recon.unaccounted_bytes = i64::try_from(
        i128::from(recon.file_bytes) - i128::from(recon.tensor_bytes) - i128::from(recon.headers_and_prefixes),
    )
    .unwrap_or(i64::MAX);
    recon.balanced = recon.unaccounted_bytes == 0;

    // ---- duplicates across shards (in the order tensors appear)
    let mut reported = BTreeSet::new();
    for t in &tensors {
        let name = t.tensor.name.as_str();
        if let Some(where_) = located.get(name).filter(|w| w.len() > 1) {
            if reported.insert(name) {
                findings.push(
                    Finding::error(
                        Code::DuplicateTensor,
                        format!("{name} is stored in more than one shard: {}; loaders keep only one of them", where_.join(", ")),
                    )
                    .tensor(name),
                );
            }
        }
    }

    // ---- index checks
    let provided: BTreeSet<String> = shards.iter().map(|s| s.name.clone()).collect();
    let mut missing_shards: Vec<String> = Vec::new();
    let mut absent_ok: BTreeSet<String> = BTreeSet::new();
    if let Some(idx) = index.as_mut() {
        for s in &mut idx.shards {
            s.provided = provided.contains(s.name.as_str());
            if !s.provided {
                findings.push(
                    Finding::error(Code::MissingShard, format!("{} is referenced by the index but was not provided", s.name))
                        .field("weight_map"),
                );
                missing_shards.push(s.name.clone());
            }
        }
        for shard in &mut shards {
            shard.indexed_tensors = Some(idx.shards.iter().find(|s| s.name == shard.name).map_or(0, |s| s.tensors));
        }
        let mut listed: HashMap<&str, &str> = HashMap::new();
        for (tensor, shard) in &idx.weight_map {
            listed.insert(tensor.as_str(), shard.as_str());
            if !provided.contains(shard.as_str()) {
                absent_ok.insert(tensor.clone());
                continue;
            }
            let holders = located.get(tensor.as_str()).map(Vec::as_slice).unwrap_or(&[]);
            if holders.contains(&shard.as_str()) {
                continue;
            }
            if let Some(actual) = holders.first() {
                findings.push(
                    Finding::error(
                        Code::TensorInWrongShard,
                        format!("the index places {tensor} in {shard}, but it is stored in {actual}; loaders following the index will not find it"),
                    )
                    .tensor(tensor.as_str())
                    .field("weight_map"),
                );
            } else {
                findings.push(
                    Finding::error(
                        Code::TensorNotInShard,
                        format!("the index places {tensor} in {shard}, but that shard has no such tensor"),
                    )
                    .tensor(tensor.as_str())
                    .field("weight_map"),
                );
            }
        }
        let referenced: BTreeSet<&str> = idx.shards.iter().map(|s| s.name.as_str()).collect();
        for shard in &shards {
            if !referenced.contains(shard.name.as_str()) {
                if shard.tensors > 0 {
                    findings.push(Finding::error(
                        Code::TensorNotInIndex,
                        format!(
                            "{} is not referenced by the index; none of its {} tensors is listed in {}",
                            shard.name, shard.tensors, idx.file
                        ),
                    ));
                }
                continue;
            }
        }
        for t in &tensors {
            let name = t.tensor.name.as_str();
            if !referenced.contains(t.file.as_str()) {
                continue;
            }
            if !listed.contains_key(name) {
                findings.push(
                    Finding::error(
                        Code::TensorNotInIndex,
                        format!("{name} is stored in {} but the index does not list it; loaders following the index will not find it", t.file),
                    )
                    .tensor(name),
                );
            }
        }
        let all_present = missing_shards.is_empty() && shards.iter().all(|s| s.ok);
        if let (Some(total), true) = (idx.total_size, all_present) {
            idx.total_size_checked = true;
            if total != recon.tensor_bytes {
                findings.push(
                    Finding::warning(
                        Code::TotalSizeMismatch,
                        format!(
                            "{}: metadata.total_size is {total} but the shards hold {} bytes of tensors (off by {})",
                            idx.file,
                            recon.tensor_bytes,
                            i128::from(total) - i128::from(recon.tensor_bytes)
                        ),
                    )
                    .field("metadata.total_size"),
                );
            }
        }
    } else if shards.len() > 1 {
        findings.push(Finding::warning(
            Code::InvalidIndex,
            "several safetensors files but no model.safetensors.index.json: loaders need the index to find each tensor's shard",
        ));
    }
    // Shards named "<stem>-0000k-of-0000n.safetensors" tell how many there should be.
    let provided_names: BTreeSet<&str> = provided.iter().map(String::as_str).collect();
    for name in series_missing(&provided_names) {
        if !missing_shards.contains(&name) {
            findings.push(Finding::error(
                Code::MissingShard,
                format!("{name} is expected from the shard names but was not provided"),
            ));
            missing_shards.push(name);
        }
    }

    // ---- architecture
    let mut architecture = None;
    let mut audit_out = None;
    if let Some((name, cfg)) = &config {
        let (arch, f) = Architecture::from_config(cfg, name);
        findings.extend(f);
        if !tensors.is_empty() {
            let present: Vec<Present<'_>> = tensors
                .iter()
                .map(|t| Present {
                    name: t.tensor.name.as_str(),
                    shape: t.tensor.shape.as_slice(),
                    params: t.tensor.params,
                    file: t.file.as_str(),
                })
                .collect();
            let (a, f) = audit::audit(&arch, &present, &absent_ok);
            if index.is_none() && !missing_shards.is_empty() {
                // Without an index we cannot tell which tensors the missing shards hold:
                // one finding instead of one per absent tensor.
                let (missing, rest): (Vec<Finding>, Vec<Finding>) = f.into_iter().partition(|x| x.code == Code::MissingTensor);
                findings.extend(rest);
                if let Some(first) = missing.first() {
                    let names: Vec<&str> = missing.iter().filter_map(|x| x.tensor.as_deref()).take(MAX_NAMES_LISTED).collect();
                    findings.push(
                        Finding::error(
                            Code::MissingTensor,
                            format!(
                                "{} tensors config.json expects are absent, probably in the missing shard(s) {}: {}{}",
                                missing.len(),
                                missing_shards.join(", "),
                                names.join(", "),
                                if missing.len() > names.len() { ", …" } else { "" }
                            ),
                        )
                        .tensor(first.tensor.clone().unwrap_or_default()),
                    );
                }
            } else {
                findings.extend(f);
            }
            audit_out = Some(a);
        }
        if let (Some(vocab), Some(total)) = (arch.vocab_size, tokenizer.total_tokens) {
            if total > vocab {
                findings.push(
                    Finding::error(
                        Code::VocabMismatch,
                        format!("the tokenizer has {total} token ids but config.json's vocab_size is {vocab}: ids from {vocab} on have no embedding row"),
                    )
                    .field("vocab_size"),
                );
            }
        }
        architecture = Some(arch);
    }

    let totals = Totals::of(&tensors.iter().map(|t| t.tensor.clone()).collect::<Vec<_>>());
    let (errors, warnings): (Vec<Finding>, Vec<Finding>) =
        audit::cap_findings(findings).into_iter().partition(|f| f.severity == Severity::Error);
    ModelReport {
        format: "safetensors-checkpoint",
        ok: errors.is_empty(),
        errors,
        warnings,
        shards,
        missing_shards,
        companions: companion_infos,
        tensors,
        totals,
        reconciliation: recon,
        index,
        architecture,
        audit: audit_out,
        tokenizer: tokenizer_seen.then_some(tokenizer),
        generation_config,
    }
}

/// Parses "<stem>-<k>-of-<n>.safetensors" (k, n decimal, same width).
fn series(name: &str) -> Option<(&str, usize, u64, u64)> {
    let stem = name.strip_suffix(".safetensors")?;
    let (head, n) = stem.rsplit_once("-of-")?;
    let (prefix, k) = head.rsplit_once('-')?;
    if k.is_empty() || k.len() != n.len() || !k.bytes().all(|b| b.is_ascii_digit()) || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((prefix, k.len(), k.parse().ok()?, n.parse().ok()?))
}

/// Most shards a name series is trusted to announce (real checkpoints: up to a few
/// hundred; DeepSeek-V3 has 163).
pub const MAX_SERIES_SHARDS: u64 = 100_000;

/// Names of a "-0000k-of-0000n" series that are absent from `provided`.
fn series_missing(provided: &BTreeSet<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen_series = BTreeSet::new();
    for name in provided {
        let Some((prefix, width, _, n)) = series(name) else {
            continue;
        };
        if n > MAX_SERIES_SHARDS || !seen_series.insert((prefix, width, n)) {
            continue;
        }
        for k in 1..=n {
            let want = format!("{prefix}-{k:0width$}-of-{n:0width$}.safetensors");
            if !provided.contains(want.as_str()) {
                out.push(want);
            }
        }
    }
    out
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

    #[test]
    fn tokenizer_counts_without_building() {
        let tok = br#"{"version":"1.0","added_tokens":[{"id":5,"content":"<s>","special":true},{"id":6,"content":"x","special":false}],
            "model":{"type":"BPE","vocab":{"a":0,"b":1,"c":2,"d":3,"e":4},"merges":["a b","c d"]}}"#;
        let cfg = br#"{"bos_token":"<s>","eos_token":{"content":"</s>"},"chat_template":"{% for m in messages %}{{ m.content }}{% endfor %}"}"#;
        let m = build_model(&[], &[("tokenizer_config.json".into(), cfg.to_vec()), ("tokenizer.json".into(), tok.to_vec())]);
        let t = m.tokenizer.unwrap();
        assert_eq!(t.model_type.as_deref(), Some("BPE"));
        assert_eq!((t.vocab, t.merges, t.added_tokens, t.total_tokens), (Some(5), Some(2), 2, Some(7)));
        assert_eq!(t.special_tokens, vec![SpecialToken { id: 5, content: "<s>".into() }]);
        assert_eq!(t.roles.get("eos_token").map(String::as_str), Some("</s>"));
        assert_eq!(t.chat_templates.len(), 1);
        assert!(t.chat_templates[0].template.starts_with("{% for m"));
    }

    #[test]
    fn series_names() {
        assert_eq!(series("model-00001-of-00002.safetensors"), Some(("model", 5, 1, 2)));
        assert_eq!(series("model.safetensors"), None);
        let provided: BTreeSet<&str> = ["model-00001-of-00003.safetensors", "model-00003-of-00003.safetensors"].into();
        assert_eq!(series_missing(&provided), vec!["model-00002-of-00003.safetensors".to_string()]);
    }

    fn shard(name: &str, tensors: &[(&str, Vec<u64>)]) -> FileReport {
        let mut r = FileReport::new(name, 0, Format::Safetensors);
        let mut off = 0;
        for (t, shape) in tensors {
            let params: u64 = shape.iter().product();
            r.tensors.push(TensorEntry {
                name: t.to_string(),
                dtype: "F32".into(),
                shape: shape.clone(),
                ggml_dims: None,
                params: Some(params),
                start: off,
                end: off + params * 4,
                abs_start: Some(off + 108),
                bytes: Some(params * 4),
                stats: None,
            });
            off += params * 4;
        }
        r.header_len = Some(100);
        r.size = 108 + off;
        r.finish(Vec::new());
        r
    }

    #[test]
    fn repeated_weight_map_key_and_unreferenced_shard() {
        let files = vec![shard("a.safetensors", &[("x", vec![2])]), shard("b.safetensors", &[("y", vec![3]), ("z", vec![1])])];
        let idx = br#"{"weight_map": {"x": "a.safetensors", "x": "a.safetensors"}, "metadata": {"total_size": 8}}"#;
        let m = build_model(&files, &[("model.safetensors.index.json".into(), idx.to_vec())]);
        let codes: Vec<Code> = m.errors.iter().map(|f| f.code).collect();
        assert_eq!(codes, vec![Code::InvalidIndex, Code::TensorNotInIndex]);
        assert!(m.errors[1].message.contains("b.safetensors is not referenced by the index; none of its 2 tensors"));
        assert_eq!(m.reconciliation.file_bytes, 108 + 8 + 108 + 16);
        assert_eq!(m.reconciliation.headers_and_prefixes, 216);
        assert!(m.reconciliation.balanced);
        // total_size counts only what is stored: 8 + 16 bytes here, so 8 is a mismatch.
        assert_eq!(m.warnings.iter().map(|f| f.code).collect::<Vec<_>>(), vec![Code::TotalSizeMismatch]);
    }

    #[test]
    fn tokenizer_larger_than_vocab() {
        let cfg = br#"{"model_type": "llama", "vocab_size": 4}"#;
        let tok = br#"{"added_tokens": [{"id": 9, "content": "<x>", "special": true}], "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}"#;
        let m = build_model(&[], &[("config.json".into(), cfg.to_vec()), ("tokenizer.json".into(), tok.to_vec())]);
        assert!(m.errors.iter().any(|f| f.code == Code::VocabMismatch && f.message.contains("10 token ids")), "{:?}", m.errors);
    }

    #[test]
    fn bad_index_is_a_finding() {
        let m = build_model(&[], &[("model.safetensors.index.json".into(), br#"{"weight_map": {"a": 3}, "metadata": {"total_size": "x"}}"#.to_vec())]);
        let codes: Vec<Code> = m.findings().map(|f| f.code).collect();
        assert!(codes.contains(&Code::InvalidIndex), "{codes:?}");
        let m = build_model(&[], &[("model.safetensors.index.json".into(), br#"{"weight_map": ["#.to_vec())]);
        assert_eq!(m.errors.first().map(|f| f.code), Some(Code::InvalidIndex));
    }
}
