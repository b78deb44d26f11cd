//! The GGUF parser: fixed header, metadata entries, tensor infos, then the checks of the
//! data section (alignment, overlaps, gaps, the end of the file). A parse over a prefix
//! either finishes or says how long a prefix it needs; a [`Resume`] carries the entries read
//! whole from one round to the next.

use super::cursor::{quick_str, Cursor, Stop, R};
use super::summary::{KvGroup, Layout, ModelCard, TokenTypes};
use super::value::{Array, Value, ValueType};
use super::{
    Endian, GgufFile, Header, Kv, DEFAULT_ALIGNMENT, GGML_MAX_DIMS, GGML_MAX_NAME, MAGIC,
    MAGIC_AND_VERSION, MAX_ARRAY_DEPTH, MAX_DIMS_READ, MAX_GGUF_HEADER_BYTES, MAX_HEAD_VALUES, NESTED_HEAD_LEN, SUPPORTED_VERSIONS,
};
use crate::formats::{MAX_METADATA_ENTRIES, MAX_TENSORS};
use crate::dtype::ggml::GgmlType;
use crate::dtype::TensorDtype;
use crate::error::{clip, clip_bytes, keep_bounded, push_bounded, Code, Finding};
use crate::formats::text::{self, Tally, TextKind};
use crate::formats::Step;
use crate::vocab::{TensorEntry, TokenizerSummary};
use std::collections::HashSet;

/// What the KV reader remembers for the summaries.
/// A top-level string array cut short by the prefix: where its walk stopped.
pub(super) struct ArrayResume {
    /// Offset of the array's first element (identifies the array).
    data_at: u64,
    next: u64,
    pos: u64,
    head: Vec<Value>,
    bad_utf8: Option<Finding>,
    /// What the walk had noticed when it stopped (this array's tokens included).
    seen: Seen,
}

#[derive(Default)]
pub(super) struct Notes {
    /// Set when a parse stopped inside a long string array; travels in `Resume`.
    pub(super) array_resume: Option<ArrayResume>,
    /// tokenizer.ggml.tokens: absolute offset of the first element and the count.
    pub(super) tokens_at: Option<(u64, u64)>,
    pub(super) token_types: TokenTypes,
    /// Counted while walking the entries; saved before each entry and restored when the
    /// entry is cut short by the prefix (it is then read again from its start).
    pub(super) seen: Seen,
}

/// What the walk through the entries noticed, for findings made once at the end.
#[derive(Clone, Debug, Default)]
pub(super) struct Seen {
    pub(super) keys: Tally,
    pub(super) values: Tally,
    pub(super) tokens: Tally,
    /// Top-level arrays of arrays: how many, and the first one's key and offset.
    pub(super) nested: u64,
    pub(super) first_nested: Option<(String, u64)>,
    /// Array elements kept so far (heads), against [`MAX_HEAD_VALUES`].
    pub(super) head_values: u64,
}

/// Reads a value of type `t`; `key` names it in findings.
pub(super) fn value(c: &mut Cursor<'_>, t: ValueType, depth: usize, key: &str, notes: &mut Notes, findings: &mut Vec<Finding>) -> R<Value> {
    if t == ValueType::String {
        let at = c.pos;
        let s = c.string(key)?;
        let text = match std::str::from_utf8(s) {
            Ok(text) => text.to_string(),
            Err(_) => {
                push_bounded(findings, Finding::warning(Code::InvalidUtf8, format!("the string value of {} is not valid UTF-8", clip(key))).at(at).field(key));
                String::from_utf8_lossy(s).into_owned()
            }
        };
        notes.seen.values.check(&text, TextKind::Value, at, key);
        return Ok(Value::String(text));
    }
    if t != ValueType::Array {
        let at = c.pos;
        let v = c.scalar(t, key)?;
        if let Value::Bool(b) = v {
            if b > 1 {
                push_bounded(
                    findings,
                    Finding::error(Code::InvalidBool, format!("{} is a BOOL of value {b}; only 0 and 1 are valid", clip(key)))
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
            Finding::error(Code::UnknownValueType, format!("the array {} has element type id {elem_id}; valid ids are 0 to 12", clip(key)))
                .at(type_at)
                .field(key),
        )));
    };
    let len_at = c.pos;
    let len = c.len(key)?;
    let min = elem.min_size(c.v1);
    c.claim(len.checked_mul(min), || format!("the array {} claims {len} elements of type {} (at least {min} bytes each)", clip(key), elem.name()), len_at, key)?;
    // Everything the array holds must be in the prefix before what follows it.
    let arr_bound = c.pos.saturating_add(len.saturating_mul(min));
    // What the rest of the header needs beyond this array (a lower bound).
    let tail = c.hint.saturating_sub(arr_bound);
    c.hint = c.hint.max(arr_bound);
    c.check_hint(key)?;
    // A short numeric array outside the tokenizer is a per-layer setting (head counts,
    // sliding-window flags, …): llama.cpp reads it whole, and so does the description.
    let keep = if depth == 0 { super::top_level_keep(key, elem, len) } else { NESTED_HEAD_LEN };
    let budget = MAX_HEAD_VALUES.saturating_sub(notes.seen.head_values);
    let keep = usize::try_from(len.min(budget)).map_or(keep, |l| l.min(keep));
    notes.seen.head_values = notes.seen.head_values.saturating_add(keep as u64);
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
                push_bounded(
                    findings,
                    Finding::error(Code::InvalidBool, format!("element {i} of {} is a BOOL other than 0 or 1", clip(key)))
                        .at(data_at.saturating_add(i as u64))
                        .field(key),
                );
            }
        }
        if key == "tokenizer.ggml.token_type" && depth == 0 && matches!(elem, ValueType::I32 | ValueType::U32) {
            // The defined ids 0..=6 by id, every other id in one count: fixed memory.
            for chunk in bytes.chunks_exact(4) {
                let mut b = [0u8; 4];
                b.copy_from_slice(chunk);
                let id = if c.big { i32::from_be_bytes(b) } else { i32::from_le_bytes(b) };
                let id = if elem == ValueType::U32 { i64::from(id as u32) } else { i64::from(id) };
                notes.token_types.add(id);
            }
        }
    } else if elem == ValueType::String {
        if key == "tokenizer.ggml.tokens" && depth == 0 {
            notes.tokens_at = Some((c.pos, len));
        }
        let data_at = c.pos;
        let mut bad_utf8: Option<Finding> = None;
        let mut first = 0;
        let kind = if depth == 0 && matches!(key, "tokenizer.ggml.tokens" | "tokenizer.ggml.merges") { TextKind::Token } else { TextKind::Value };
        if depth == 0 {
            // Continue a long string array where a shorter prefix stopped (see `Resume`).
            if let Some(ar) = notes.array_resume.take() {
                if ar.data_at == data_at && ar.pos <= c.buf.len() as u64 && ar.next <= len {
                    first = ar.next;
                    c.pos = ar.pos;
                    head = ar.head;
                    bad_utf8 = ar.bad_utf8;
                    notes.seen = ar.seen;
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
                            seen: notes.seen.clone(),
                        });
                    }
                    let left = len.saturating_sub(i).saturating_mul(min);
                    let bound = at.saturating_add(left).saturating_add(tail).min(c.file_len);
                    return Err(Stop::Need(n.max(bound)));
                }
                Err(e) => return Err(e),
            };
            let text = std::str::from_utf8(s);
            match text {
                Ok(t) => {
                    let tally = if kind == TextKind::Token { &mut notes.seen.tokens } else { &mut notes.seen.values };
                    tally.check(t, kind, at, key);
                }
                Err(_) if bad_utf8.is_none() => {
                    bad_utf8 = Some(Finding::warning(Code::InvalidUtf8, format!("element {i} of {} is not valid UTF-8", clip(key))).at(at).field(key));
                }
                Err(_) => {}
            }
            if i < keep as u64 {
                head.push(Value::String(text.map_or_else(|_| String::from_utf8_lossy(s).into_owned(), str::to_string)));
            }
        }
        if let Some(f) = bad_utf8 {
            push_bounded(findings, f);
        }
    } else {
        // Nested arrays.
        if depth == 0 {
            push_bounded(
                findings,
                Finding::warning(Code::NestedArray, format!("{} is an array of arrays; gguf-py reads it, llama.cpp refuses the file", clip(key)))
                    .at(type_at)
                    .field(key),
            );
            notes.seen.nested = notes.seen.nested.saturating_add(1);
            if notes.seen.first_nested.is_none() {
                notes.seen.first_nested = Some((clip(key).into_owned(), type_at));
            }
        }
        if depth + 1 >= MAX_ARRAY_DEPTH {
            return Err(Stop::Fail(Box::new(
                Finding::error(Code::NestingTooDeep, format!("{} nests arrays deeper than {MAX_ARRAY_DEPTH} levels", clip(key)))
                    .at(type_at)
                    .field(key),
            )));
        }
        let data_at = c.pos;
        for i in 0..len {
            let v = match value(c, ValueType::Array, depth + 1, key, notes, findings) {
                Ok(v) => v,
                // A nested array is walked again from its start each round (only string
                // arrays at the top level resume mid-way), and the lower bound of what its
                // elements take can be far too low: ask for twice what was walked, so the
                // walks add up to a small multiple of its size (linear time), not one
                // walk per read granule (quadratic).
                Err(Stop::Need(n)) if depth == 0 => {
                    let walked = (c.buf.len() as u64).saturating_sub(data_at);
                    let doubled = data_at.saturating_add(walked.saturating_mul(2));
                    return Err(Stop::Need(n.max(doubled.min(c.file_len).min(MAX_GGUF_HEADER_BYTES))));
                }
                Err(e) => return Err(e),
            };
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

/// Where a parse of a shorter prefix stopped: the metadata entries and tensor infos read
/// whole so far. The driver keeps one per file and passes it to every round, so a 10 MB
/// tokenizer (or 100,000 tensor infos) read in 1 MiB steps is walked about once instead of
/// once per step. Only valid for growing prefixes of one file (checked: file length and
/// header end must match).
#[derive(Default)]
pub struct Resume {
    state: Option<Progress>,
}

/// Everything read so far, carried from one round to the next.
#[derive(Default)]
struct Progress {
    file_len: u64,
    /// End of the fixed header (0: not started).
    header_end: u64,
    /// Offset of the first entry (or tensor info) not yet read, and the hint there.
    pos: u64,
    hint: u64,
    kv_next: u64,
    kvs: Vec<Kv>,
    findings: Vec<Finding>,
    seen: HashSet<String>,
    arch: Option<String>,
    notes: Notes,
    /// Set once every entry was read (groups and alignment are then known).
    kvs_done: bool,
    alignment: u64,
    tensor_infos_start: u64,
    ti_next: u64,
    tensors: Vec<TensorEntry>,
    names: HashSet<String>,
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
    let mut c = Cursor {
        buf: prefix,
        pos: 0,
        file_len,
        big: false,
        v1: false,
        hint: 0,
    };
    let mut st = Progress::default();
    match read_header(&mut c, &mut g.header, &mut st, resume) {
        Ok(()) => {}
        Err(Stop::Need(n)) => {
            if n > prefix.len() as u64 && n <= file_len {
                if st.header_end > 0 {
                    resume.state = Some(st);
                }
                return Step::Need(n);
            }
            // Cannot happen (take only asks for bytes inside the file); never loop on it.
            st.findings.push(Finding::error(Code::ReadFailed, format!("the parser asked for {n} bytes it could not have")).at(c.pos));
        }
        Err(Stop::Fail(f)) => st.findings.push(*f),
    }
    if st.kvs_done {
        g.header.alignment = st.alignment;
    } else {
        for kv in &mut st.kvs {
            kv.group = KvGroup::of(&kv.key, st.arch.as_deref());
        }
    }
    g.kvs = st.kvs;
    g.tensors = st.tensors;
    g.findings = st.findings;
    g.finish(prefix, &st.notes);
    Step::Done(g)
}

fn read_header(c: &mut Cursor<'_>, h: &mut Header, st: &mut Progress, resume: &mut Resume) -> R<()> {
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
    h.version = Some(version);
    h.endian = Some(endian);
    let n_tensors = c.len("tensor_count")?;
    h.tensor_count = Some(n_tensors);
    let n_kv = c.len("kv_count")?;
    h.kv_count = Some(n_kv);
    h.fixed_header_bytes = c.pos;
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
    c.check_hint("kv_count")?;

    let header_end = c.pos;
    match resume.state.take() {
        // A shorter prefix of the same file got this far: continue from there.
        Some(cp) if cp.file_len == c.file_len && cp.header_end == header_end && cp.pos <= c.buf.len() as u64 => {
            *st = cp;
            c.pos = st.pos;
            c.hint = c.hint.max(st.hint);
        }
        _ => {
            st.file_len = c.file_len;
            st.header_end = header_end;
            st.pos = header_end;
        }
    }
    while st.kv_next < n_kv {
        let i = st.kv_next;
        if i >= MAX_METADATA_ENTRIES {
            return Err(Stop::Fail(Box::new(
                Finding::error(Code::LimitExceeded, format!("the header has {n_kv} metadata entries; only the first {MAX_METADATA_ENTRIES} are read, and not the tensor infos after them"))
                    .at(c.pos)
                    .field("kv_count"),
            )));
        }
        let kv_at = c.pos;
        let hint_at = c.hint;
        let n_findings = st.findings.len();
        let seen_before = st.notes.seen.clone();
        match read_kv(c, i, st) {
            Ok(()) => {}
            Err(Stop::Need(n)) => {
                // Keep everything up to the last whole entry for the next, longer prefix.
                st.findings.truncate(n_findings);
                st.notes.seen = seen_before;
                st.pos = kv_at;
                st.hint = hint_at;
                return Err(Stop::Need(n));
            }
            Err(e) => return Err(e),
        }
        keep_bounded(&mut st.findings);
        st.kv_next = i.saturating_add(1);
        let left = n_kv.saturating_sub(st.kv_next);
        c.hint = c.hint.max(c.pos.saturating_add(left.saturating_mul(min_kv)).saturating_add(ti_min));
        c.check_hint("kv_count")?;
    }
    if !st.kvs_done {
        for kv in &mut st.kvs {
            kv.group = KvGroup::of(&kv.key, st.arch.as_deref());
        }
        st.alignment = alignment(&st.kvs, &mut st.findings);
        st.tensor_infos_start = c.pos;
        st.kvs_done = true;
    }
    h.alignment = st.alignment;
    h.tensor_infos_start = Some(st.tensor_infos_start);
    while st.ti_next < n_tensors {
        if st.ti_next >= MAX_TENSORS {
            return Err(Stop::Fail(Box::new(
                Finding::error(Code::LimitExceeded, format!("the header lists {n_tensors} tensors; only the first {MAX_TENSORS} are read, so the data section is not checked"))
                    .at(c.pos)
                    .field("tensor_count"),
            )));
        }
        let ti_at = c.pos;
        let hint_at = c.hint;
        let n_findings = st.findings.len();
        match tensor_info(c, &mut st.names, &mut st.findings) {
            Ok(t) => crate::formats::push_grow(&mut st.tensors, t),
            Err(Stop::Need(n)) => {
                st.findings.truncate(n_findings);
                st.pos = ti_at;
                st.hint = hint_at;
                return Err(Stop::Need(n));
            }
            Err(e) => return Err(e),
        }
        keep_bounded(&mut st.findings);
        st.ti_next = st.ti_next.saturating_add(1);
        let left = n_tensors.saturating_sub(st.ti_next);
        c.hint = c.hint.max(c.pos.saturating_add(left.saturating_mul(min_ti)));
        c.check_hint("tensor_count")?;
    }
    h.tensor_infos_end = Some(c.pos);
    h.data_start = align_up(c.pos, h.alignment);
    Ok(())
}

/// One metadata entry: key, type, value. Key checks come after the value so that an entry
/// cut short by the prefix leaves no trace (see `Resume`).
fn read_kv(c: &mut Cursor<'_>, i: u64, st: &mut Progress) -> R<()> {
    let kv_at = c.pos;
    let key_bytes = c.string("key")?;
    let key_utf8 = std::str::from_utf8(key_bytes).is_ok();
    let key = String::from_utf8_lossy(key_bytes).into_owned();
    let type_at = c.pos;
    let type_id = c.u32(&key)?;
    let Some(t) = ValueType::from_id(type_id) else {
        return Err(Stop::Fail(Box::new(
            Finding::error(Code::UnknownValueType, format!("{} has value type id {type_id}; valid ids are 0 to 12", clip(&key)))
                .at(type_at)
                .field(key.as_str()),
        )));
    };
    let mut value_findings = Vec::new();
    let v = value(c, t, 0, &key, &mut st.notes, &mut value_findings)?;
    if !key_utf8 {
        st.findings.push(Finding::error(Code::InvalidUtf8, format!("metadata key {:?} is not valid UTF-8", clip(&key))).at(kv_at).field("key"));
    }
    if key.is_empty() {
        st.findings.push(Finding::error(Code::EmptyKey, format!("metadata entry {i} has an empty key")).at(kv_at).field("key"));
    } else if !st.seen.insert(key.clone()) {
        st.findings.push(
            Finding::error(Code::DuplicateMetadataKey, format!("the metadata key {:?} appears more than once; llama.cpp refuses the file", clip(&key)))
                .at(kv_at)
                .field(key.as_str()),
        );
    }
    st.notes.seen.keys.check(&key, TextKind::Name, kv_at, &key);
    st.findings.extend(value_findings);
    if key == "general.architecture" {
        st.arch = v.as_str().map(str::to_string);
    }
    crate::formats::push_grow(&mut st.kvs, Kv {
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

pub(super) fn align_up(x: u64, alignment: u64) -> Option<u64> {
    if alignment == 0 {
        return Some(x);
    }
    x.checked_add(alignment - 1).map(|v| v / alignment * alignment)
}

fn tensor_info(c: &mut Cursor<'_>, names: &mut HashSet<String>, findings: &mut Vec<Finding>) -> R<TensorEntry> {
    let at = c.pos;
    let name_bytes = c.string("tensor name")?;
    let name = match std::str::from_utf8(name_bytes) {
        Ok(n) => n.to_string(),
        Err(_) => {
            findings.push(Finding::error(Code::InvalidUtf8, "a tensor name is not valid UTF-8").at(at).tensor(clip_bytes(name_bytes)));
            String::from_utf8_lossy(name_bytes).into_owned()
        }
    };
    let err = |code: Code, msg: String| Finding::error(code, msg).at(at).tensor(name.as_str());
    if name_bytes.len() as u64 >= GGML_MAX_NAME {
        findings.push(err(
            Code::NameTooLong,
            format!("the tensor name is {} bytes; llama.cpp accepts at most {} (GGML_MAX_NAME {GGML_MAX_NAME} with its NUL)", name_bytes.len(), GGML_MAX_NAME - 1),
        ));
    }
    if let Some(why) = text::suspicious(&name, TextKind::Name) {
        findings.push(
            Finding::warning(
                Code::SuspiciousName,
                format!("the tensor name {} holds {}, which can make it display as another name or as markup", text::escape_example(&name), why.describe()),
            )
            .at(at)
            .tensor(name.as_str()),
        );
    }
    let dims_at = c.pos;
    let n_dims = c.u32("n_dims")?;
    if n_dims > GGML_MAX_DIMS {
        findings.push(err(Code::TooManyDims, format!("the tensor has {n_dims} dims; ggml allows at most {GGML_MAX_DIMS}")).at(dims_at));
    }
    let dim_size: u64 = if c.v1 { 4 } else { 8 };
    c.claim(u64::from(n_dims).checked_mul(dim_size), || format!("tensor {:?} claims {n_dims} dims", clip(&name)), dims_at, "n_dims")?;
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
    // Every field is read: the entry is whole (a name is remembered only now, so that an
    // entry cut short by the prefix and read again is not its own duplicate).
    if !names.insert(name.clone()) {
        findings.push(err(Code::DuplicateTensor, format!("the tensor name {:?} appears more than once", clip(&name))));
    }
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
    let end = bytes.and_then(|b| offset.checked_add(b)).unwrap_or(offset);
    Ok(TensorEntry {
        name,
        dtype: TensorDtype::Ggml(type_id),
        shape: dims.iter().rev().copied().collect(),
        ggml_dims: Some(dims),
        params,
        start: offset,
        end,
        // Set once the data section's start is known (`GgufFile::finish`).
        abs_start: None,
        bytes,
        header_offset: Some(at),
    })
}

impl GgufFile {
    /// Data-section checks, summaries and the layout, once reading stopped.
    fn finish(&mut self, prefix: &[u8], notes: &Notes) {
        if let Some(ds) = self.header.data_start {
            for t in &mut self.tensors {
                t.abs_start = ds.checked_add(t.start);
            }
        }
        self.check_offsets();
        self.check_llama_cpp();
        self.check_text(&notes.seen);
        crate::error::cap_findings(&mut self.findings);
        self.card = self.model_card();
        self.tokenizer = self.tokenizer_summary(prefix, notes.tokens_at, &notes.token_types);
        self.layout = self.layout();
    }

    /// `LlamaCppIncompatible`: what the format allows but llama.cpp's loader
    /// (`ggml/src/gguf.cpp`) refuses, one warning per reason.
    fn check_llama_cpp(&mut self) {
        let mut out = Vec::new();
        let warn = |msg: String| Finding::warning(Code::LlamaCppIncompatible, format!("llama.cpp will not load this file: {msg}"));
        if self.header.version == Some(1) {
            out.push(warn("it is a GGUF version 1 file (\"GGUFv1 is no longer supported\"); convert it again or update it with gguf-py".into()).at(4).field("version"));
        }
        if self.header.endian == Some(Endian::Big) {
            out.push(
                warn("it is big-endian; llama.cpp reads only files in its host's byte order (every common host is little-endian) and takes this version number for a corrupt one".into())
                    .at(4)
                    .field("version"),
            );
        }
        let seen = |pred: &dyn Fn(&TensorEntry) -> bool| {
            let mut hits = self.tensors.iter().filter(|t| pred(t));
            let first = hits.next();
            first.map(|t| (t, 1 + hits.count()))
        };
        let one = |n: usize| if n == 1 { "1 tensor".to_string() } else { format!("{n} tensors") };
        let ty = |t: &TensorEntry| match t.dtype {
            TensorDtype::Ggml(id) => Some(GgmlType::from_id(id)),
            _ => None,
        };
        if let Some((t, n)) = seen(&|t| matches!(ty(t), Some(Some(g)) if g.is_removed())) {
            let name = ty(t).flatten().map_or("?", |g| g.name);
            out.push(warn(format!("{} of a ggml type llama.cpp no longer knows (first: {name}); it has no block size for them", one(n))).at_opt(t.header_offset).tensor(t.name.as_str()));
        }
        if let Some((t, n)) = seen(&|t| matches!(ty(t), Some(None))) {
            out.push(warn(format!("{} of a ggml type id past the last one llama.cpp knows ({})", one(n), crate::dtype::ggml::GGML_TYPE_COUNT - 1)).at_opt(t.header_offset).tensor(t.name.as_str()));
        }
        let dims = |t: &TensorEntry| t.ggml_dims.clone().unwrap_or_default();
        if let Some((t, n)) = seen(&|t| dims(t).iter().skip(1).any(|d| *d == 0)) {
            out.push(
                warn(format!(
                    "{} with a dimension of 0 after ne[0]: llama.cpp's reader divided by it until mid-2026 (a SIGFPE crash on x86-64, ggml-org/llama.cpp#26366), so most installed builds crash on this file",
                    one(n)
                ))
                .at_opt(t.header_offset)
                .tensor(t.name.as_str()),
            );
        }
        let too_big = |t: &TensorEntry| {
            let d = dims(t);
            d.iter().any(|x| *x > i64::MAX as u64) || d.iter().try_fold(1u64, |a, x| a.checked_mul(*x)).is_none_or(|p| p > i64::MAX as u64)
        };
        if let Some((t, n)) = seen(&too_big) {
            out.push(warn(format!("{} whose dimensions or element count do not fit a signed 64-bit integer, which llama.cpp uses for them", one(n))).at_opt(t.header_offset).tensor(t.name.as_str()));
        }
        self.findings.extend(out);
    }

    /// `SuspiciousText` for keys, string values and tokens (counted while parsing), and
    /// `ChatTemplateUnsafe` for each chat template.
    fn check_text(&mut self, seen: &Seen) {
        for (tally, what) in [(&seen.keys, "metadata keys"), (&seen.values, "metadata string values"), (&seen.tokens, "tokenizer tokens")] {
            if tally.count > 0 {
                let mut f = Finding::warning(Code::SuspiciousText, tally.describe(what)).at_opt(tally.first_offset);
                if let Some(k) = &tally.first_field {
                    f = f.field(k.as_str());
                }
                self.findings.push(f);
            }
        }
        if seen.nested > 0 {
            let (key, at) = seen.first_nested.clone().unwrap_or_default();
            let n = seen.nested;
            self.findings.push(
                Finding::warning(
                    Code::LlamaCppIncompatible,
                    format!("llama.cpp will not load this file: {n} metadata entr{} an array of arrays (first: {key}); llama.cpp reads no nested arrays", if n == 1 { "y is" } else { "ies are" }),
                )
                .at(at)
                .field(key),
            );
        }
        let mut out = Vec::new();
        for kv in &self.kvs {
            let Some(name) = kv.key.strip_prefix("tokenizer.chat_template") else { continue };
            let Some(t) = kv.value.as_str() else { continue };
            let (risks, count) = text::template_risks(t);
            if count > 0 {
                let name = if name.is_empty() { "default" } else { name.trim_start_matches('.') };
                out.push(Finding::warning(Code::ChatTemplateUnsafe, text::describe_template_risks(name, &risks, count)).at(kv.offset).field(kv.key.as_str()));
            }
        }
        self.findings.extend(out);
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
            keep_bounded(&mut out);
            let abs = data_start.checked_add(t.start);
            if t.start % align != 0 {
                out.push(
                    Finding::error(Code::UnalignedOffset, format!("offset {} is not a multiple of the alignment {align}", t.start))
                        .at_opt(abs)
                        .tensor(t.name.as_str()),
                );
            }
            let Some(bytes) = t.bytes else { continue };
            let end = t.start.checked_add(bytes);
            match end.and_then(|e| data_start.checked_add(e)) {
                Some(abs_end) if abs_end <= file_len => spans.push((t.start, t.start.saturating_add(bytes), t.name.as_str())),
                _ => out.push(
                    Finding::error(
                        Code::TensorPastEnd,
                        format!("the tensor's {bytes} bytes at offset {} run past the end of the file ({file_len} bytes; data starts at {data_start})", t.start),
                    )
                    .at_opt(abs)
                    .tensor(t.name.as_str()),
                ),
            }
        }
        spans.sort_unstable();
        let mut expected = 0u64;
        for (start, end, name) in &spans {
            keep_bounded(&mut out);
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

}
