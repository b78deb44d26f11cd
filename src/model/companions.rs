//! A checkpoint's JSON companions, parsed: the shard index
//! (`model.safetensors.index.json`), `config.json`, `generation_config.json` and the
//! tokenizer files (`tokenizer.json`, `tokenizer_config.json`). JSON is parsed with
//! serde_json without building the large parts (vocabularies, merge lists are only
//! counted); chat templates are kept as text and never run.

use crate::error::{clip, keep_bounded, Code, Finding};
use crate::formats::text;
use crate::vocab::{ChatTemplate, SpecialToken, TokenizerSummary};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

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

/// Parses an index. Every finding names the file.
pub fn parse_index(file: &str, bytes: &[u8], findings: &mut Vec<Finding>) -> Option<IndexSummary> {
    let found = |f: Finding| f.file(file);
    let raw: RawIndex = match serde_json::from_slice(bytes) {
        Ok(r) => r,
        Err(e) => {
            findings.push(found(
                Finding::error(Code::InvalidIndex, format!("{file} is not a valid index: {e}"))
                    .at(json_error_offset(bytes, &e))
                    .field("weight_map"),
            ));
            return None;
        }
    };
    let Some(Pairs(pairs)) = raw.weight_map else {
        findings.push(found(Finding::error(Code::InvalidIndex, format!("{file} has no \"weight_map\" object")).field("weight_map")));
        return None;
    };
    let mut total_size = None;
    if let Some(meta) = raw.metadata.as_ref().and_then(Value::as_object) {
        match meta.get("total_size") {
            None => {}
            Some(v) => match v.as_u64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19).map(|f| f as u64)) {
                Some(n) => total_size = Some(n),
                None => findings.push(found(
                    Finding::warning(Code::InvalidIndex, format!("{file}: metadata.total_size is {}, not a byte count", clip(&v.to_string())))
                        .field("metadata.total_size"),
                )),
            },
        }
    }
    let mut weight_map = Vec::with_capacity(pairs.len());
    let mut seen = HashSet::new();
    let mut shard_of: HashMap<String, usize> = HashMap::new();
    let mut shards: Vec<IndexShard> = Vec::new();
    for (tensor, v) in pairs {
        keep_bounded(findings);
        let Some(shard) = v.as_str() else {
            findings.push(found(
                Finding::error(Code::InvalidIndex, format!("{}: weight_map[{:?}] is {}, not a file name", clip(file), clip(&tensor), kind_of(&v)))
                    .tensor(tensor.as_str())
                    .field("weight_map"),
            ));
            continue;
        };
        if !seen.insert(tensor.clone()) {
            findings.push(found(
                Finding::error(Code::InvalidIndex, format!("{}: {} is listed more than once in weight_map; loaders keep only one entry", clip(file), clip(&tensor)))
                    .tensor(tensor.as_str())
                    .field("weight_map"),
            ));
            continue;
        }
        match shard_of.get(shard).and_then(|&i| shards.get_mut(i)) {
            Some(s) => s.tensors = s.tensors.saturating_add(1),
            None => {
                shard_of.insert(shard.to_string(), shards.len());
                shards.push(IndexShard {
                    name: shard.to_string(),
                    tensors: 1,
                    provided: false,
                });
            }
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

/// The byte offset serde_json's error points at (its line and column, 1-based), or 0.
fn json_error_offset(bytes: &[u8], e: &serde_json::Error) -> u64 {
    let (line, column) = (e.line(), e.column());
    if line == 0 {
        return 0;
    }
    let mut offset = 0usize;
    for (i, l) in bytes.split(|b| *b == b'\n').enumerate() {
        if i + 1 == line {
            return offset.saturating_add(column.saturating_sub(1)) as u64;
        }
        offset = offset.saturating_add(l.len()).saturating_add(1);
    }
    offset as u64
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

/// tokenizer.json into `t`. Returns false when the file could not be read.
pub fn parse_tokenizer(file: &str, bytes: &[u8], t: &mut TokenizerSummary, findings: &mut Vec<Finding>) -> bool {
    let raw: RawTokenizer = match serde_json::from_slice(bytes) {
        Ok(r) => r,
        Err(e) => {
            findings.push(
                Finding::warning(Code::InvalidTokenizer, format!("{file} could not be read as a tokenizer: {e}"))
                    .at(json_error_offset(bytes, &e))
                    .file(file),
            );
            return false;
        }
    };
    if let Some(m) = raw.model {
        t.model = m.kind;
        t.tokens = m.vocab.map(|c| c.0);
        t.merges = m.merges.map(|c| c.0);
    }
    let added = raw.added_tokens.unwrap_or_default();
    t.added_tokens = Some(added.len() as u64);
    let max_added = added.iter().map(|a| a.id.saturating_add(1)).max();
    t.total_tokens = match (t.tokens, max_added) {
        (Some(v), Some(a)) => Some(v.max(a)),
        (v, a) => v.or(a),
    };
    // Roles (from tokenizer_config.json) may already be known: keep them first.
    t.special_tokens.retain(|s| s.role.is_some());
    add_specials(t, added.into_iter().filter(|a| a.special).map(|a| (None, Some(a.id), a.content)));
    true
}

/// Records special tokens, in one pass over them (a tokenizer may list a million). A role
/// given for a token already listed by its text names that token (a second role for the
/// same text gets an entry of its own, with the id); entries with a role come first, in
/// the order they got it, then the others in the order they were listed.
fn add_specials<'r>(t: &mut TokenizerSummary, items: impl IntoIterator<Item = (Option<&'r str>, Option<u64>, String)>) {
    let list = &mut t.special_tokens;
    let mut by_text: HashMap<String, usize> = HashMap::new();
    for (i, s) in list.iter().enumerate() {
        if let Some(x) = &s.text {
            by_text.entry(x.clone()).or_insert(i);
        }
    }
    // The sort key: when an entry got its role (or was listed, without one).
    let mut seq: Vec<usize> = (0..list.len()).collect();
    let mut next = list.len();
    for (role, id, text) in items {
        let found = by_text.get(&text).copied();
        match (role, found.and_then(|i| list.get_mut(i))) {
            (None, Some(_)) => {}
            (Some(r), Some(s)) if s.role.is_none() => {
                s.role = Some(r.to_string());
                s.id = s.id.or(id);
                if let Some(k) = found.and_then(|i| seq.get_mut(i)) {
                    *k = next;
                }
                next += 1;
            }
            (role, existing) => {
                let id = id.or(existing.and_then(|s| s.id));
                if found.is_none() {
                    by_text.insert(text.clone(), list.len());
                }
                list.push(SpecialToken { role: role.map(str::to_string), id, text: Some(text) });
                seq.push(next);
                next += 1;
            }
        }
    }
    let mut order: Vec<(bool, usize, SpecialToken)> = list.drain(..).zip(seq).map(|(s, k)| (s.role.is_none(), k, s)).collect();
    order.sort_by_key(|(none, k, _)| (*none, *k));
    list.extend(order.into_iter().map(|(_, _, s)| s));
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

/// tokenizer_config.json into `t`; `has_json` when tokenizer.json was read (it is the
/// authority on special tokens). Returns false when the file could not be read.
pub fn parse_tokenizer_config(file: &str, bytes: &[u8], has_json: bool, t: &mut TokenizerSummary, findings: &mut Vec<Finding>) -> bool {
    let raw: RawTokenizerConfig = match serde_json::from_slice(bytes) {
        Ok(r) => r,
        Err(e) => {
            findings.push(
                Finding::warning(Code::InvalidTokenizer, format!("{file} could not be read as a tokenizer config: {e}"))
                    .at(json_error_offset(bytes, &e))
                    .file(file),
            );
            return false;
        }
    };
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
                .field("chat_template")
                .file(file),
        ),
    }
    if !has_json {
        if let Some(dec) = raw.added_tokens_decoder {
            t.added_tokens = Some(dec.len() as u64);
            let mut specials: Vec<(u64, String)> = dec
                .into_iter()
                .filter(|(_, d)| d.special)
                .filter_map(|(id, d)| id.parse::<u64>().ok().map(|id| (id, d.content)))
                .collect();
            specials.sort_by_key(|s| s.0);
            add_specials(t, specials.into_iter().map(|(id, text)| (None, Some(id), text)));
        }
    }
    let roles = [("bos", &raw.bos_token), ("eos", &raw.eos_token), ("pad", &raw.pad_token), ("unk", &raw.unk_token)];
    add_specials(t, roles.iter().filter_map(|(role, v)| v.as_ref().and_then(token_text).map(|text| (Some(*role), None, text))));
    check_templates(file, bytes, t, findings);
    true
}

/// `ChatTemplateUnsafe` for each chat template of tokenizer_config.json that reaches Python
/// internals. The offset is that of the `"chat_template"` key.
fn check_templates(file: &str, bytes: &[u8], t: &TokenizerSummary, findings: &mut Vec<Finding>) {
    let key_at = bytes.windows(15).position(|w| w == b"\"chat_template\"").map(|p| p as u64);
    for ct in &t.chat_templates {
        let (risks, count) = text::template_risks(&ct.template);
        if count > 0 {
            findings.push(
                Finding::warning(Code::ChatTemplateUnsafe, text::describe_template_risks(&ct.name, &risks, count))
                    .at_opt(key_at)
                    .field("chat_template")
                    .file(file),
            );
        }
    }
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
