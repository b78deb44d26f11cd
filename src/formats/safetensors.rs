//! safetensors: `[u64 little-endian N][N bytes of JSON header][tensor data]`.
//!
//! [`parse`] validates everything the reference `safetensors` crate validates, computed
//! from the header and the file length alone (the data section is never read), plus a few
//! checks the crate does not make (duplicate keys, leading whitespace, unknown fields,
//! suspicious names). It never fails outright: a broken file yields findings and whatever
//! could still be read.

use super::text::{Tally, TextKind};
use super::{Step, MAX_METADATA_ENTRIES, MAX_TENSORS};
use crate::dtype::{Dtype, TensorDtype};
use crate::error::{clip, keep_bounded, Code, Finding};
use crate::vocab::TensorEntry;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

/// Bytes of the little-endian u64 that holds the header length N.
pub const LEN_PREFIX: u64 = 8;
/// Largest header the reference reader accepts (`MAX_HEADER_SIZE` in safetensors).
pub const MAX_HEADER_LEN: u64 = 100_000_000;
/// Deepest JSON nesting we parse. A valid header needs 3 levels (object → tensor →
/// shape); anything deeper is hostile. Checked by a linear scan before serde sees the
/// text, so no input can exhaust the stack.
pub const MAX_JSON_DEPTH: usize = 64;
/// Most dimensions read from a shape. NumPy 2 allows 64 (`NPY_MAXDIMS`; NumPy 1: 32) and
/// PyTorch fewer in practice, so no reference writer makes more; past it the shape is an
/// `InvalidField` and is not kept (a shape of millions of 1s would cost 8 bytes kept per
/// 2 bytes of header).
pub const MAX_SHAPE_DIMS: usize = 64;
/// The key that holds the free-form string map.
pub const METADATA_KEY: &str = "__metadata__";
/// The fields a tensor entry may have.
const TENSOR_FIELDS: [&str; 3] = ["dtype", "shape", "data_offsets"];

/// The validated header of a safetensors file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    /// N, when the first 8 bytes could be read.
    pub header_len: Option<u64>,
    /// 8 + N, when N is within the file.
    pub data_start: Option<u64>,
    /// `__metadata__`, in file order (only its string values).
    pub metadata: Vec<(String, String)>,
    /// Tensors in header order.
    #[serde(deserialize_with = "crate::formats::tensor_list::deserialize")]
    pub tensors: Vec<TensorEntry>,
    pub findings: Vec<Finding>,
}

impl Header {
    fn empty() -> Self {
        Header {
            header_len: None,
            data_start: None,
            metadata: Vec::new(),
            tensors: Vec::new(),
            findings: Vec::new(),
        }
    }
}

/// Parses the header from `prefix` (the first bytes of a file of `file_len` bytes).
/// Needs 8 bytes, then exactly 8 + N.
pub fn parse(prefix: &[u8], file_len: u64) -> Step<Header> {
    let mut h = Header::empty();
    if file_len < LEN_PREFIX {
        h.findings.push(
            Finding::error(
                Code::FileTooShort,
                format!("the file has {file_len} bytes; a safetensors file starts with an 8-byte header length"),
            )
            .at(0)
            .field("header length"),
        );
        return Step::Done(h);
    }
    let Some(len_bytes) = prefix.get(..8) else {
        return Step::Need(LEN_PREFIX);
    };
    let mut n = [0u8; 8];
    n.copy_from_slice(len_bytes);
    let n = u64::from_le_bytes(n);
    h.header_len = Some(n);
    if n > MAX_HEADER_LEN {
        h.findings.push(
            Finding::error(
                Code::HeaderTooLarge,
                format!("the header length N = {n} exceeds the limit of {MAX_HEADER_LEN} bytes"),
            )
            .at(0)
            .field("header length"),
        );
        return Step::Done(h);
    }
    // n <= MAX_HEADER_LEN, so this cannot overflow; checked all the same.
    let Some(end) = n.checked_add(LEN_PREFIX) else {
        return Step::Done(h);
    };
    if end > file_len {
        h.findings.push(
            Finding::error(
                Code::HeaderPastEnd,
                format!("the header claims {n} bytes, so it ends at byte {end}, but the file has only {file_len} bytes"),
            )
            .at(0)
            .field("header length"),
        );
        return Step::Done(h);
    }
    h.data_start = Some(end);
    let text_bytes = usize::try_from(end)
        .ok()
        .and_then(|end| prefix.get(8..end));
    let Some(text_bytes) = text_bytes else {
        return Step::Need(end);
    };
    parse_json(text_bytes, file_len, &mut h);
    Step::Done(h)
}

fn parse_json(bytes: &[u8], file_len: u64, h: &mut Header) {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let at = LEN_PREFIX.saturating_add(e.valid_up_to() as u64);
            h.findings.push(
                Finding::error(Code::HeaderNotUtf8, "the header is not valid UTF-8")
                    .at(at)
                    .field("header"),
            );
            return;
        }
    };
    if let Some((depth_at, depth)) = too_deep(bytes) {
        h.findings.push(
            Finding::error(
                Code::JsonTooDeep,
                format!("the header JSON nests deeper than {MAX_JSON_DEPTH} levels (level {depth} reached)"),
            )
            .at(LEN_PREFIX.saturating_add(depth_at as u64))
            .field("header"),
        );
        return;
    }
    let trimmed = text.trim_start_matches([' ', '\t', '\n', '\r']);
    let lead = text.len() - trimmed.len();
    if lead > 0 {
        h.findings.push(
            Finding::warning(
                Code::LeadingWhitespace,
                format!("the header starts with {lead} whitespace byte(s) before '{{'; the reference reader accepts this today, but a stricter one may refuse it"),
            )
            .at(LEN_PREFIX)
            .field("header"),
        );
    }
    let raw: &RawValue = match serde_json::from_str(text) {
        Ok(r) => r,
        Err(e) => {
            h.findings.push(
                Finding::error(Code::HeaderNotJson, format!("the header is not valid JSON: {e}"))
                    .at(LEN_PREFIX.saturating_add(json_error_offset(text, &e)))
                    .field("header"),
            );
            return;
        }
    };
    let data_start = h.data_start.unwrap_or(LEN_PREFIX);
    // The top-level entries, one at a time as serde_json reads them (nothing is collected
    // first: an entry of a few dozen bytes must not cost more than its tensor).
    h.tensors.reserve_exact(top_level_entries(bytes).min(MAX_TENSORS as usize));
    let mut walk = Walk {
        h,
        text,
        data_start,
        seen: HashSet::new(),
        values: Tally::default(),
        keys: Tally::default(),
        entries: 0,
        metadata_entries: 0,
        truncated: false,
    };
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let ok = (&mut de).deserialize_map(&mut walk).is_ok() && de.end().is_ok();
    let Walk { h, seen, keys, values, truncated, .. } = walk;
    drop(seen);
    if !ok {
        h.findings.push(
            Finding::error(Code::HeaderNotObject, "the header JSON is not an object")
                .at(LEN_PREFIX.saturating_add(lead as u64))
                .field("header"),
        );
        return;
    }
    for (tally, what) in [(&keys, "__metadata__ keys"), (&values, "__metadata__ values")] {
        if tally.count > 0 {
            h.findings.push(Finding::warning(Code::SuspiciousText, tally.describe(what)).at_opt(tally.first_offset).field(METADATA_KEY));
        }
    }
    if !truncated {
        check_layout(h, data_start, file_len);
    }
    crate::error::cap_findings(&mut h.findings);
}

/// Top-level entries (':' at depth 1 outside strings), to size the tensor list once.
fn top_level_entries(bytes: &[u8]) -> usize {
    let (mut depth, mut in_string, mut escaped, mut n) = (0usize, false, false, 0usize);
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b':' if depth == 1 => n += 1,
            _ => {}
        }
    }
    n
}

/// The walk over the header object's entries.
struct Walk<'h, 'de> {
    h: &'h mut Header,
    text: &'de str,
    data_start: u64,
    seen: HashSet<Cow<'de, str>>,
    keys: Tally,
    values: Tally,
    entries: u64,
    metadata_entries: u64,
    /// More tensors than [`MAX_TENSORS`]: the rest were not read.
    truncated: bool,
}

impl<'de> Visitor<'de> for &mut Walk<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key_seed(KeySeed)? {
            if self.truncated {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value: &'de RawValue = map.next_value()?;
            keep_bounded(&mut self.h.findings);
            let at = LEN_PREFIX.saturating_add(offset_in(self.text, value.get()));
            if self.seen.contains(&key) {
                self.h.findings.push(
                    Finding::error(
                        Code::DuplicateKey,
                        format!("the key {:?} appears more than once in the header; readers keep only one of them", clip(&key)),
                    )
                    .at(at)
                    .tensor(&*key),
                );
            }
            if key == METADATA_KEY {
                self.metadata(value);
            } else if self.entries >= MAX_TENSORS {
                self.h.findings.push(
                    Finding::error(
                        Code::LimitExceeded,
                        format!("the header lists more than {MAX_TENSORS} tensors, the most read from one file; the rest were not read, so the data section is not checked"),
                    )
                    .at(at)
                    .tensor(&*key),
                );
                self.truncated = true;
            } else {
                self.entries += 1;
                let text = self.text;
                let at_of = |raw: &RawValue| LEN_PREFIX.saturating_add(offset_in(text, raw.get()));
                if let Some(t) = parse_tensor(&key, value, self.data_start, &at_of, self.h) {
                    self.h.tensors.push(t);
                }
            }
            self.seen.insert(key);
        }
        Ok(())
    }
}

impl Walk<'_, '_> {
    fn metadata(&mut self, value: &RawValue) {
        let text = self.text;
        let at = |raw: &RawValue| LEN_PREFIX.saturating_add(offset_in(text, raw.get()));
        let Some(map) = Entries::parse(value.get(), MAX_METADATA_ENTRIES as usize) else {
            self.h.findings.push(
                Finding::error(Code::InvalidMetadata, "__metadata__ is not an object of strings")
                    .at(at(value))
                    .field(METADATA_KEY),
            );
            return;
        };
        let mut seen: HashSet<&str> = HashSet::new();
        for (k, v) in &map.0 {
            keep_bounded(&mut self.h.findings);
            let k: &str = k;
            if self.metadata_entries >= MAX_METADATA_ENTRIES {
                self.h.findings.push(
                    Finding::error(
                        Code::LimitExceeded,
                        format!("__metadata__ has {} entries; only the first {MAX_METADATA_ENTRIES} are read", map.1),
                    )
                    .at(at(v))
                    .field(METADATA_KEY),
                );
                break;
            }
            self.metadata_entries += 1;
            if !seen.insert(k) {
                self.h.findings.push(
                    Finding::error(
                        Code::DuplicateKey,
                        format!("the __metadata__ key {:?} appears more than once", clip(k)),
                    )
                    .at(at(v))
                    .field(METADATA_KEY),
                );
            }
            self.keys.check(k, TextKind::Name, at(v), k);
            match serde_json::from_str::<String>(v.get()) {
                Ok(s) => {
                    self.values.check(&s, TextKind::Value, at(v), k);
                    self.h.metadata.push((k.to_string(), s));
                }
                Err(_) => self.h.findings.push(
                    Finding::error(
                        Code::InvalidMetadata,
                        format!("__metadata__[{:?}] is {}, not a string", clip(k), json_kind(v.get())),
                    )
                    .at(at(v))
                    .field(format!("{METADATA_KEY}.{}", clip(k))),
                ),
            }
        }
    }
}

/// A key, borrowed from the header text when it has no escapes.
struct Key<'de>(Cow<'de, str>);
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v)))
    }
}

fn parse_tensor(
    name: &str,
    value: &RawValue,
    data_start: u64,
    at: &dyn Fn(&RawValue) -> u64,
    h: &mut Header,
) -> Option<TensorEntry> {
    let entry_at = at(value);
    if let Some(why) = super::text::suspicious(name, TextKind::Name) {
        h.findings.push(
            Finding::warning(
                Code::SuspiciousName,
                format!("the tensor name {} holds {}, which can make it display as another name or as markup", super::text::escape_example(name), why.describe()),
            )
            .at(entry_at)
            .tensor(name),
        );
    }
    let Some(fields) = Entries::parse(value.get(), MAX_FIELDS_READ) else {
        h.findings.push(
            Finding::error(
                Code::MissingField,
                format!("the entry is {}, not an object with dtype, shape and data_offsets", json_kind(value.get())),
            )
            .at(entry_at)
            .tensor(name),
        );
        return None;
    };
    let get = |field: &str| fields.0.iter().find(|(k, _)| k == field).map(|(_, v)| *v);
    let mut ok = true;
    let missing = |field: &str, h: &mut Header| {
        h.findings.push(
            Finding::error(Code::MissingField, format!("the entry has no {field:?} field"))
                .at(entry_at)
                .tensor(name)
                .field(field),
        );
    };
    let mut seen: HashSet<&str> = HashSet::new();
    for (k, v) in &fields.0 {
        let k: &str = k;
        if !seen.insert(k) {
            h.findings.push(
                Finding::error(Code::DuplicateKey, format!("the field {:?} appears more than once", clip(k)))
                    .at(at(v))
                    .tensor(name)
                    .field(k),
            );
        }
        if !TENSOR_FIELDS.contains(&k) {
            h.findings.push(
                Finding::warning(
                    Code::UnknownField,
                    format!("the entry has an unknown field {:?}, which readers ignore", clip(k)),
                )
                .at(at(v))
                .tensor(name)
                .field(k),
            );
        }
    }
    if fields.1 > fields.0.len() {
        h.findings.push(
            Finding::warning(
                Code::UnknownField,
                format!("the entry has {} fields; the {} past the first {MAX_FIELDS_READ} were not read", fields.1, fields.1 - fields.0.len()),
            )
            .at(entry_at)
            .tensor(name),
        );
    }

    // dtype
    let dtype_name = match get("dtype") {
        None => {
            missing("dtype", h);
            ok = false;
            None
        }
        Some(raw) => match serde_json::from_str::<String>(raw.get()) {
            Ok(s) => Some((s, raw)),
            Err(_) => {
                h.findings.push(
                    Finding::error(Code::InvalidField, format!("dtype is {}, not a string", json_kind(raw.get())))
                        .at(at(raw))
                        .tensor(name)
                        .field("dtype"),
                );
                ok = false;
                None
            }
        },
    };
    let dtype = dtype_name.as_ref().and_then(|(s, raw)| {
        let d = Dtype::from_name(s);
        if d.is_none() {
            h.findings.push(
                Finding::error(
                    Code::UnknownDtype,
                    format!("the dtype {:?} is not a safetensors dtype", clip(s)),
                )
                .at(at(raw))
                .tensor(name)
                .field("dtype"),
            );
        }
        d
    });

    // shape
    let shape = match get("shape") {
        None => {
            missing("shape", h);
            None
        }
        Some(raw) => {
            let s = u64_array(raw.get(), MAX_SHAPE_DIMS);
            if s.is_none() {
                h.findings.push(
                    Finding::error(
                        Code::InvalidField,
                        format!("shape is not an array of at most {MAX_SHAPE_DIMS} non-negative integers"),
                    )
                    .at(at(raw))
                    .tensor(name)
                    .field("shape"),
                );
            }
            s
        }
    };

    // data_offsets
    let offsets = match get("data_offsets") {
        None => {
            missing("data_offsets", h);
            None
        }
        Some(raw) => match u64_array(raw.get(), 2).as_deref() {
            Some(&[b, e]) => Some((b, e, raw)),
            _ => {
                h.findings.push(
                    Finding::error(
                        Code::InvalidField,
                        "data_offsets is not a pair [begin, end] of non-negative integers",
                    )
                    .at(at(raw))
                    .tensor(name)
                    .field("data_offsets"),
                );
                None
            }
        },
    };
    let (shape, (begin, end, offsets_raw)) = match (shape, offsets) {
        (Some(s), Some(o)) if ok => (s, o),
        _ => return None,
    };
    let offsets_at = at(offsets_raw);

    let params = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    if params.is_none() {
        h.findings.push(
            Finding::error(
                Code::ShapeOverflow,
                format!("the element count of shape {shape:?} overflows a 64-bit integer"),
            )
            .at(entry_at)
            .tensor(name)
            .field("shape"),
        );
    }
    let bytes = end.checked_sub(begin);
    if bytes.is_none() {
        h.findings.push(
            Finding::error(
                Code::InvalidOffsets,
                format!("data_offsets [{begin}, {end}] ends before it begins"),
            )
            .at(offsets_at)
            .tensor(name)
            .field("data_offsets"),
        );
    }
    if let (Some(d), Some(p)) = (dtype, params) {
        match p.checked_mul(d.bits()) {
            None => h.findings.push(
                Finding::error(
                    Code::ShapeOverflow,
                    format!("the byte size of {p} {} elements overflows a 64-bit integer", d.name()),
                )
                .at(entry_at)
                .tensor(name)
                .field("shape"),
            ),
            Some(bits) if bits % 8 != 0 => h.findings.push(
                Finding::error(
                    Code::PartialByte,
                    format!("{p} {} elements take {bits} bits, which is not a whole number of bytes", d.name()),
                )
                .at(entry_at)
                .tensor(name)
                .field("shape"),
            ),
            Some(bits) => {
                let want = bits / 8;
                if let Some(have) = bytes {
                    if have != want {
                        h.findings.push(
                            Finding::error(
                                Code::SizeMismatch,
                                format!(
                                    "data_offsets span {have} bytes, but shape {shape:?} of {} needs {want}",
                                    d.name()
                                ),
                            )
                            .at(offsets_at)
                            .tensor(name)
                            .field("data_offsets"),
                        );
                    }
                }
            }
        }
    }
    let dtype = match (dtype, dtype_name) {
        (Some(d), _) => TensorDtype::Safetensors(d),
        (None, Some((s, _))) => TensorDtype::Unknown(s),
        (None, None) => TensorDtype::Unknown("?".to_string()),
    };
    Some(TensorEntry {
        name: name.to_string(),
        dtype,
        shape,
        ggml_dims: None,
        params,
        start: begin,
        end,
        abs_start: data_start.checked_add(begin),
        bytes,
        header_offset: Some(entry_at),
    })
}

/// Tensors, taken in offset order, must tile the data section exactly: no hole, no
/// overlap, the last one ending at the end of the file.
fn check_layout(h: &mut Header, data_start: u64, file_len: u64) {
    let data_len = file_len.saturating_sub(data_start);
    let mut spans: Vec<(u64, u64, &str)> = h
        .tensors
        .iter()
        .filter(|t| t.start <= t.end)
        .map(|t| (t.start, t.end, t.name.as_str()))
        .collect();
    spans.sort_unstable();
    let mut found = Vec::new();
    let mut cursor = 0u64;
    let mut cursor_owner: Option<&str> = None;
    for &(begin, end, name) in &spans {
        keep_bounded(&mut found);
        if begin > cursor {
            let msg = match cursor_owner {
                Some(prev) => format!("{} bytes after {:?} belong to no tensor", begin - cursor, clip(prev)),
                None => format!("the first {} bytes of the data section belong to no tensor", begin - cursor),
            };
            found.push(
                Finding::error(Code::TensorGap, msg)
                    .at_opt(data_start.checked_add(cursor))
                    .tensor(name)
                    .field("data_offsets"),
            );
        } else if begin < cursor {
            found.push(
                Finding::error(
                    Code::TensorOverlap,
                    format!(
                        "its bytes [{begin}, {end}) overlap {:?}, which runs to {cursor}",
                        clip(cursor_owner.unwrap_or("another tensor"))
                    ),
                )
                .at_opt(data_start.checked_add(begin))
                .tensor(name)
                .field("data_offsets"),
            );
        }
        if end > data_len {
            found.push(
                Finding::error(
                    Code::TensorPastEnd,
                    format!(
                        "its bytes end at data offset {end}, past the end of the data section ({data_len} bytes)"
                    ),
                )
                .at_opt(data_start.checked_add(begin))
                .tensor(name)
                .field("data_offsets"),
            );
        }
        if end >= cursor {
            cursor = end;
            cursor_owner = Some(name);
        }
    }
    if cursor < data_len {
        found.push(
            Finding::error(
                Code::TrailingBytes,
                format!(
                    "{} bytes after the last tensor belong to no tensor (the file has {file_len} bytes, the tensors end at byte {})",
                    data_len - cursor,
                    data_start.saturating_add(cursor)
                ),
            )
            .at_opt(data_start.checked_add(cursor)),
        );
    }
    h.findings.extend(found);
}

/// Fields of one tensor entry read (there are three; more are `UnknownField`s, and past
/// this many they are counted, not read).
pub const MAX_FIELDS_READ: usize = 16;

/// A JSON object's entries in file order, duplicates kept, values left as raw text (so
/// their byte offsets in the header are known): the first `max`, and how many there are.
/// serde_json's own map would silently keep only the last of two equal keys.
struct Entries<'a>(Vec<(Cow<'a, str>, &'a RawValue)>, usize);

impl<'a> Entries<'a> {
    fn parse(text: &'a str, max: usize) -> Option<Self> {
        let mut de = serde_json::Deserializer::from_str(text);
        let e = de.deserialize_map(EntriesVisitor(max)).ok()?;
        de.end().ok()?;
        Some(e)
    }
}

struct EntriesVisitor(usize);

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Entries<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        let mut n = 0usize;
        while let Some(Key(k)) = map.next_key_seed(KeySeed)? {
            n += 1;
            if out.len() < self.0 {
                let v: &'de RawValue = map.next_value()?;
                out.push((k, v));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Entries(out, n))
    }
}

/// A JSON array of at most `max` integers that fit u64 (no sign, no fraction); `None`
/// otherwise (without reading more than `max` + 1 of them).
fn u64_array(text: &str, max: usize) -> Option<Vec<u64>> {
    struct V(usize);
    impl<'de> Visitor<'de> for V {
        type Value = Option<Vec<u64>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an array of integers")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(n) = seq.next_element::<serde_json::Number>()? {
                match n.as_u64() {
                    Some(x) if out.len() < self.0 => out.push(x),
                    _ => return Ok(None),
                }
            }
            Ok(Some(out))
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    // An early `None` leaves the rest unread; the header was validated as JSON already.
    de.deserialize_seq(V(max)).ok().flatten()
}

fn json_kind(text: &str) -> &'static str {
    match text.trim_start().as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// Byte offset of `inner` within `outer`; `inner` is a sub-slice handed out by serde_json
/// (RawValue borrows from the input), so the address difference is its position.
fn offset_in(outer: &str, inner: &str) -> u64 {
    (inner.as_ptr() as usize)
        .checked_sub(outer.as_ptr() as usize)
        .filter(|&d| d <= outer.len())
        .map_or(0, |d| d as u64)
}

/// serde_json reports errors as line and column (1-based, column counted in bytes).
fn json_error_offset(text: &str, e: &serde_json::Error) -> u64 {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start.saturating_add(e.column().saturating_sub(1))).min(text.len()) as u64
}

/// (byte position, depth) of the first bracket that nests past [`MAX_JSON_DEPTH`], found
/// by a linear scan that skips strings.
fn too_deep(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Some((i, depth));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Control characters and the Unicode bidirectional embeddings, overrides and isolates
/// (the "Trojan Source" set) make a name display as something else.
pub fn is_suspicious_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

#[cfg(test)]
mod tests;
