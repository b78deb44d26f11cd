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

/// Most `weight_map` entries read from an index. An entry costs ~150 bytes while the
/// checkpoint is checked, for as few as 8 bytes of JSON; real indexes list every tensor of
/// a checkpoint: DeepSeek-V3 ~92,000 (FP8 weights and their scales), Kimi K2 ~140,000.
/// Past it: `LimitExceeded`, the first ones kept.
pub const MAX_INDEX_ENTRIES: usize = 250_000;
/// Most distinct shards an index may name. Real checkpoints have up to a few hundred
/// (Llama 3.1 405B: 191; DeepSeek-V3: 163). Past it the index is not used
/// (`LimitExceeded`): every shard named costs a finding and a name kept.
pub const MAX_INDEX_SHARDS: usize = 10_000;
/// Most special tokens kept from tokenizer.json / tokenizer_config.json (all are counted
/// in `added_tokens`). Real tokenizers mark a few hundred to a few thousand (Llama 3: 256).
pub const MAX_SPECIAL_TOKENS: usize = 100_000;

/// What a JSON value is, in words, without building it.
#[derive(Clone, Copy, Debug)]
struct Kind(&'static str);

/// A JSON string, or the kind of the value that is not one (skipped without building).
enum StrOr {
    Str(String),
    Other(Kind),
}

impl<'de> Deserialize<'de> for StrOr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StrOr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, v: &str) -> Result<StrOr, E> {
                Ok(StrOr::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<StrOr, E> {
                Ok(StrOr::Str(v))
            }
            fn visit_bool<E>(self, _: bool) -> Result<StrOr, E> {
                Ok(StrOr::Other(Kind("a boolean")))
            }
            fn visit_i64<E>(self, _: i64) -> Result<StrOr, E> {
                Ok(StrOr::Other(Kind("a number")))
            }
            fn visit_u64<E>(self, _: u64) -> Result<StrOr, E> {
                Ok(StrOr::Other(Kind("a number")))
            }
            fn visit_f64<E>(self, _: f64) -> Result<StrOr, E> {
                Ok(StrOr::Other(Kind("a number")))
            }
            fn visit_unit<E>(self) -> Result<StrOr, E> {
                Ok(StrOr::Other(Kind("null")))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrOr, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(StrOr::Other(Kind("an array")))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrOr, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(StrOr::Other(Kind("an object")))
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON object's entries in file order, duplicates kept (serde_json's map keeps only
/// the last of a repeated key; a repeated tensor in `weight_map` must be seen): the first
/// [`MAX_INDEX_ENTRIES`], and how many there are.
struct Pairs(Vec<(String, StrOr)>, u64);

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
                let mut n = 0u64;
                while let Some(k) = map.next_key::<StrOr>()? {
                    n = n.saturating_add(1);
                    match k {
                        StrOr::Str(k) if out.len() < MAX_INDEX_ENTRIES => out.push((k, map.next_value::<StrOr>()?)),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Pairs(out, n))
            }
        }
        d.deserialize_map(V)
    }
}

/// `metadata.total_size` as given: an integer, or what else it is (never built).
#[derive(Deserialize)]
struct IndexMetadata {
    total_size: Option<TotalSize>,
}

enum TotalSize {
    Bytes(u64),
    Not(String),
}

impl<'de> Deserialize<'de> for TotalSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TotalSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a byte count")
            }
            fn visit_u64<E>(self, v: u64) -> Result<TotalSize, E> {
                Ok(TotalSize::Bytes(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<TotalSize, E> {
                Ok(TotalSize::Not(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<TotalSize, E> {
                // Some writers emit 1.23e10: a whole number in range is a byte count.
                if v.fract() == 0.0 && (0.0..1.8e19).contains(&v) {
                    Ok(TotalSize::Bytes(v as u64))
                } else {
                    Ok(TotalSize::Not(v.to_string()))
                }
            }
            fn visit_str<E>(self, v: &str) -> Result<TotalSize, E> {
                Ok(TotalSize::Not(format!("{:?}", clip(v))))
            }
            fn visit_bool<E>(self, v: bool) -> Result<TotalSize, E> {
                Ok(TotalSize::Not(v.to_string()))
            }
            fn visit_unit<E>(self) -> Result<TotalSize, E> {
                Ok(TotalSize::Not("null".into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TotalSize, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(TotalSize::Not("an array".into()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TotalSize, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(TotalSize::Not("an object".into()))
            }
        }
        d.deserialize_any(V)
    }
}

/// `metadata` when it is an object (anything else is ignored, as before).
enum MaybeMetadata {
    Object(IndexMetadata),
    Other,
}

impl<'de> Deserialize<'de> for MaybeMetadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeMetadata;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeMetadata, A::Error> {
                let mut total_size = None;
                while let Some(k) = map.next_key::<StrOr>()? {
                    match k {
                        StrOr::Str(k) if k == "total_size" => total_size = Some(map.next_value::<TotalSize>()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(MaybeMetadata::Object(IndexMetadata { total_size }))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeMetadata, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeMetadata::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<MaybeMetadata, E> {
                Ok(MaybeMetadata::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<MaybeMetadata, E> {
                Ok(MaybeMetadata::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<MaybeMetadata, E> {
                Ok(MaybeMetadata::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<MaybeMetadata, E> {
                Ok(MaybeMetadata::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<MaybeMetadata, E> {
                Ok(MaybeMetadata::Other)
            }
            fn visit_unit<E>(self) -> Result<MaybeMetadata, E> {
                Ok(MaybeMetadata::Other)
            }
        }
        d.deserialize_any(V)
    }
}

// ---------------------------------------------------------------- companions

#[derive(Deserialize)]
struct RawIndex {
    metadata: Option<MaybeMetadata>,
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
    let Some(Pairs(pairs, entries)) = raw.weight_map else {
        findings.push(found(Finding::error(Code::InvalidIndex, format!("{file} has no \"weight_map\" object")).field("weight_map")));
        return None;
    };
    if entries > pairs.len() as u64 {
        findings.push(found(
            Finding::error(
                Code::LimitExceeded,
                format!("{file}: weight_map has {entries} entries; only the first {MAX_INDEX_ENTRIES} are read"),
            )
            .field("weight_map"),
        ));
    }
    let mut total_size = None;
    if let Some(MaybeMetadata::Object(meta)) = raw.metadata {
        match meta.total_size {
            None => {}
            Some(TotalSize::Bytes(n)) => total_size = Some(n),
            Some(TotalSize::Not(v)) => findings.push(found(
                Finding::warning(Code::InvalidIndex, format!("{file}: metadata.total_size is {v}, not a byte count")).field("metadata.total_size"),
            )),
        }
    }
    // Duplicates first, over borrowed names; then the entries are moved, not copied.
    let mut keep = Vec::with_capacity(pairs.len());
    {
        let mut seen: HashSet<&str> = HashSet::with_capacity(pairs.len());
        for (tensor, v) in &pairs {
            keep_bounded(findings);
            if !matches!(v, StrOr::Str(_)) {
                keep.push(false);
                continue;
            }
            let fresh = seen.insert(tensor.as_str());
            if !fresh {
                findings.push(found(
                    Finding::error(Code::InvalidIndex, format!("{}: {} is listed more than once in weight_map; loaders keep only one entry", clip(file), clip(tensor)))
                        .tensor(tensor.as_str())
                        .field("weight_map"),
                ));
            }
            keep.push(fresh);
        }
    }
    // In place: the pairs' buffer becomes the weight map's (an entry may be 6 bytes of JSON).
    let mut keep = keep.into_iter();
    let weight_map: Vec<(String, String)> = pairs
        .into_iter()
        .filter_map(|(tensor, v)| {
            let kept = keep.next().unwrap_or(false);
            keep_bounded(findings);
            match v {
                StrOr::Str(shard) => kept.then_some((tensor, shard)),
                StrOr::Other(kind) => {
                    findings.push(found(
                        Finding::error(Code::InvalidIndex, format!("{}: weight_map[{:?}] is {}, not a file name", clip(file), clip(&tensor), kind.0))
                            .tensor(tensor.as_str())
                            .field("weight_map"),
                    ));
                    None
                }
            }
        })
        .collect();
    // The shards and their tensor counts, from the sorted names (no map of copies).
    let mut names: Vec<&str> = weight_map.iter().map(|(_, s)| s.as_str()).collect();
    names.sort_unstable();
    let mut shards: Vec<IndexShard> = Vec::new();
    for name in names {
        let full = shards.len() >= MAX_INDEX_SHARDS;
        match shards.last_mut() {
            Some(s) if s.name == name => s.tensors = s.tensors.saturating_add(1),
            _ if full => {
                findings.push(found(
                    Finding::error(Code::LimitExceeded, format!("{file}: weight_map names more than {MAX_INDEX_SHARDS} shards; the index is not used"))
                        .field("weight_map"),
                ));
                return None;
            }
            _ => shards.push(IndexShard {
                name: name.to_string(),
                tensors: 1,
                provided: false,
            }),
        }
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
        let full = list.len() >= MAX_SPECIAL_TOKENS;
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
            // Past the limit only roles are added (at most four).
            (None, None) if full => {}
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
    bos_token: Option<TokenText>,
    eos_token: Option<TokenText>,
    pad_token: Option<TokenText>,
    unk_token: Option<TokenText>,
    chat_template: Option<Templates>,
    tokenizer_class: Option<String>,
    model_max_length: Option<MaxLength>,
    added_tokens_decoder: Option<BTreeMap<String, RawDecoderToken>>,
}

#[derive(Deserialize)]
struct RawDecoderToken {
    content: String,
    #[serde(default)]
    special: bool,
}

/// A token given as a string or as an AddedToken object `{"content": …}`; anything else
/// is skipped without being built.
struct TokenText(Option<String>);

impl<'de> Deserialize<'de> for TokenText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TokenText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a token")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TokenText, A::Error> {
                let mut text = None;
                while let Some(k) = map.next_key::<StrOr>()? {
                    match (k, text.is_none()) {
                        (StrOr::Str(k), true) if k == "content" => {
                            if let StrOr::Str(s) = map.next_value::<StrOr>()? {
                                text = Some(s);
                            }
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(TokenText(text))
            }
            fn visit_str<E>(self, v: &str) -> Result<TokenText, E> {
                Ok(TokenText(Some(v.to_string())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TokenText, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(TokenText(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<TokenText, E> {
                Ok(TokenText(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<TokenText, E> {
                Ok(TokenText(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<TokenText, E> {
                Ok(TokenText(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<TokenText, E> {
                Ok(TokenText(None))
            }
            fn visit_unit<E>(self) -> Result<TokenText, E> {
                Ok(TokenText(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// `chat_template`: one template, or a list of `{"name", "template"}` (items of any other
/// shape skipped), or something else (its kind, for the finding).
enum Templates {
    One(String),
    Named(Vec<(String, String)>),
    Other(Kind),
}

impl<'de> Deserialize<'de> for Templates {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Item(Option<(String, String)>);
        impl<'de> Deserialize<'de> for Item {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = Item;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str("a named template")
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
                        let (mut name, mut template) = (None, None);
                        while let Some(k) = map.next_key::<StrOr>()? {
                            let slot = match &k {
                                StrOr::Str(k) if k == "name" && name.is_none() => &mut name,
                                StrOr::Str(k) if k == "template" && template.is_none() => &mut template,
                                _ => {
                                    map.next_value::<IgnoredAny>()?;
                                    continue;
                                }
                            };
                            if let StrOr::Str(v) = map.next_value::<StrOr>()? {
                                *slot = Some(v);
                            }
                        }
                        Ok(Item(name.zip(template)))
                    }
                    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
                        while seq.next_element::<IgnoredAny>()?.is_some() {}
                        Ok(Item(None))
                    }
                    fn visit_str<E>(self, _: &str) -> Result<Item, E> {
                        Ok(Item(None))
                    }
                    fn visit_bool<E>(self, _: bool) -> Result<Item, E> {
                        Ok(Item(None))
                    }
                    fn visit_i64<E>(self, _: i64) -> Result<Item, E> {
                        Ok(Item(None))
                    }
                    fn visit_u64<E>(self, _: u64) -> Result<Item, E> {
                        Ok(Item(None))
                    }
                    fn visit_f64<E>(self, _: f64) -> Result<Item, E> {
                        Ok(Item(None))
                    }
                    fn visit_unit<E>(self) -> Result<Item, E> {
                        Ok(Item(None))
                    }
                }
                d.deserialize_any(V)
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Templates;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a chat template")
            }
            fn visit_str<E>(self, v: &str) -> Result<Templates, E> {
                Ok(Templates::One(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Templates, E> {
                Ok(Templates::One(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Templates, A::Error> {
                let mut out = Vec::new();
                while let Some(Item(item)) = seq.next_element::<Item>()? {
                    out.extend(item);
                }
                Ok(Templates::Named(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Templates, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Templates::Other(Kind("an object")))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Templates, E> {
                Ok(Templates::Other(Kind("a boolean")))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Templates, E> {
                Ok(Templates::Other(Kind("a number")))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Templates, E> {
                Ok(Templates::Other(Kind("a number")))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Templates, E> {
                Ok(Templates::Other(Kind("a number")))
            }
            fn visit_unit<E>(self) -> Result<Templates, E> {
                Ok(Templates::Named(Vec::new()))
            }
        }
        d.deserialize_any(V)
    }
}

/// `model_max_length` when it is a number or a string (some files hold 1e30); anything
/// else is skipped without being built.
struct MaxLength(Option<Value>);

impl<'de> Deserialize<'de> for MaxLength {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaxLength;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a length")
            }
            fn visit_u64<E>(self, v: u64) -> Result<MaxLength, E> {
                Ok(MaxLength(Some(Value::from(v))))
            }
            fn visit_i64<E>(self, v: i64) -> Result<MaxLength, E> {
                Ok(MaxLength(Some(Value::from(v))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<MaxLength, E> {
                Ok(MaxLength(Some(Value::from(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<MaxLength, E> {
                Ok(MaxLength(Some(Value::String(clip(v).into_owned()))))
            }
            fn visit_bool<E>(self, v: bool) -> Result<MaxLength, E> {
                Ok(MaxLength(Some(Value::Bool(v))))
            }
            fn visit_unit<E>(self) -> Result<MaxLength, E> {
                Ok(MaxLength(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaxLength, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaxLength(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaxLength, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaxLength(None))
            }
        }
        d.deserialize_any(V)
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
    t.model_max_length = raw.model_max_length.and_then(|m| m.0);
    match raw.chat_template {
        Some(Templates::One(s)) => t.chat_templates.push(ChatTemplate {
            name: "default".into(),
            template: s,
        }),
        Some(Templates::Named(items)) => {
            t.chat_templates.extend(items.into_iter().map(|(name, template)| ChatTemplate { name, template }));
        }
        None => {}
        Some(Templates::Other(kind)) => findings.push(
            Finding::warning(Code::InvalidTokenizer, format!("{file}: chat_template is {}, not text", kind.0))
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
    let roles = [("bos", raw.bos_token), ("eos", raw.eos_token), ("pad", raw.pad_token), ("unk", raw.unk_token)];
    add_specials(t, roles.into_iter().filter_map(|(role, v)| v.and_then(|v| v.0).map(|text| (Some(role), None, text))));
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


/// A config.json as Python's `json` writes it: `Infinity`, `-Infinity` and `NaN` (which
/// transformers puts in e.g. Mamba-2's `time_step_limit`) are not JSON, so they become `null`
/// before serde_json reads the rest. Written by hand: serde_json has no lenient mode, and a
/// JSON5 parser would accept far more than Python writes. Bytes inside strings are left alone.
pub fn python_json(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    const WORDS: [&[u8]; 3] = [b"-Infinity", b"Infinity", b"NaN"];
    let mut out: Option<Vec<u8>> = None;
    let (mut i, mut in_string, mut escaped) = (0, false, false);
    while let Some(&b) = bytes.get(i) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if let Some(w) = WORDS.iter().find(|w| bytes.get(i..).is_some_and(|r| r.starts_with(w))) {
            let o = out.get_or_insert_with(|| bytes.get(..i).unwrap_or_default().to_vec());
            o.extend_from_slice(b"null");
            i += w.len();
            continue;
        }
        if let Some(o) = out.as_mut() {
            o.push(b);
        }
        i += 1;
    }
    match out {
        Some(o) => std::borrow::Cow::Owned(o),
        None => std::borrow::Cow::Borrowed(bytes),
    }
}

#[cfg(test)]
mod python_json_tests {
    use super::python_json;

    #[test]
    fn python_floats_become_null_outside_strings() {
        let got = python_json(br#"{"time_step_limit": [0.0, Infinity], "a": -Infinity, "b": NaN, "s": "NaN \" Infinity"}"#);
        let v: serde_json::Value = serde_json::from_slice(&got).unwrap();
        assert_eq!(v["time_step_limit"], serde_json::json!([0.0, null]));
        assert_eq!(v["a"], serde_json::Value::Null);
        assert_eq!(v["b"], serde_json::Value::Null);
        assert_eq!(v["s"], "NaN \" Infinity");
        assert!(matches!(python_json(b"{}"), std::borrow::Cow::Borrowed(_)));
    }
}
