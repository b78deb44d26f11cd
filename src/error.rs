//! Findings: everything the core has to say about a file is a [`Finding`].
//!
//! There is one code enum for the whole core. A finding carries what a person needs to
//! locate the problem: the field, the absolute byte offset in the file and the tensor.
//! Parsers never return early on a bad file when something can still be shown: they record
//! a finding and keep whatever could be read.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

pub mod docs;

/// Longest file-derived string (a name, a key, a value) quoted in a finding; longer ones
/// are cut by [`clip`] and keep their length. Real tensor names and keys are under 200
/// bytes; 256 keeps every real one whole while a hostile 8 MiB name costs 256 bytes per
/// finding instead of 8 MiB (issue 12: two 8 MiB names made 154 MB of findings).
pub const MAX_QUOTED_BYTES: usize = 256;

/// Longest finding message kept. Messages are built from clipped quotes and numbers, so
/// this is a backstop (a message can still quote several things, or a JSON error text).
pub const MAX_MESSAGE_BYTES: usize = 4096;

/// Findings of one code kept per file (or per merged model); the rest are counted in one
/// last finding of that code (`more`). A file with a million broken entries would
/// otherwise make a million findings — several hundred bytes each for an entry of a few
/// dozen bytes, the amplification issue 12 forbids. 200 is more than a person reads.
pub const MAX_FINDINGS_PER_CODE: usize = 200;

/// A list of findings is compacted ([`cap_findings`]) when it reaches this length: twice
/// what a capped list can hold, so compaction costs O(1) per finding amortized.
pub fn compact_threshold() -> usize {
    2 * Code::ALL.len() * (MAX_FINDINGS_PER_CODE + 1)
}

/// Keeps the first [`MAX_FINDINGS_PER_CODE`] findings of each code (in order) and counts
/// the rest in one finding per code at the end ("… and N more X findings", `more` = N; an
/// error when any of them was). Summaries from an earlier call are merged, so this can run
/// again and again on a growing list.
pub fn cap_findings(findings: &mut Vec<Finding>) {
    let mut kept: Vec<Finding> = Vec::with_capacity(findings.len().min(compact_threshold()));
    let mut per_code: std::collections::HashMap<Code, usize> = std::collections::HashMap::new();
    let mut dropped: Vec<(Code, bool, u64)> = Vec::new();
    let mut drop = |code: Code, error: bool, n: u64| match dropped.iter_mut().find(|d| d.0 == code) {
        Some(d) => {
            d.1 |= error;
            d.2 = d.2.saturating_add(n);
        }
        None => dropped.push((code, error, n)),
    };
    for f in findings.drain(..) {
        if f.more > 0 {
            drop(f.code, f.is_error(), u64::from(f.more));
            continue;
        }
        let n = per_code.entry(f.code).or_insert(0);
        if *n < MAX_FINDINGS_PER_CODE {
            *n += 1;
            kept.push(f);
        } else {
            drop(f.code, f.is_error(), 1);
        }
    }
    for (code, error, n) in dropped {
        let message = format!("… and {n} more {code} findings like the ones above");
        let mut f = if error { Finding::error(code, message) } else { Finding::warning(code, message) };
        f.more = n;
        kept.push(f);
    }
    *findings = kept;
}

/// Caps findings as they are made, for loops that may make very many of one code: a
/// finding past [`MAX_FINDINGS_PER_CODE`] of its code is counted, never built (no message
/// formatted). [`FindingCap::finish`] adds the counts as [`cap_findings`] does.
#[derive(Default)]
pub struct FindingCap {
    per_code: std::collections::HashMap<Code, usize>,
    dropped: Vec<(Code, bool, u64)>,
}

impl FindingCap {
    /// Pushes `make()` onto `out` unless `code` already has its share.
    pub fn push(&mut self, out: &mut Vec<Finding>, code: Code, error: bool, make: impl FnOnce() -> Finding) {
        let n = self.per_code.entry(code).or_insert(0);
        if *n < MAX_FINDINGS_PER_CODE {
            *n += 1;
            out.push(make());
        } else {
            match self.dropped.iter_mut().find(|d| d.0 == code) {
                Some(d) => {
                    d.1 |= error;
                    d.2 = d.2.saturating_add(1);
                }
                None => self.dropped.push((code, error, 1)),
            }
        }
    }

    /// One finding per code that had more, counting them.
    pub fn finish(self, out: &mut Vec<Finding>) {
        for (code, error, n) in self.dropped {
            let message = format!("… and {n} more {code} findings like the ones above");
            let mut f = if error { Finding::error(code, message) } else { Finding::warning(code, message) };
            f.more = n;
            out.push(f);
        }
    }
}

/// Compacts `findings` once it reaches [`compact_threshold`]: call it between the entries
/// of a loop that may produce a finding per entry.
#[inline]
pub fn keep_bounded(findings: &mut Vec<Finding>) {
    if findings.len() >= compact_threshold() {
        cap_findings(findings);
    }
}

/// Pushes and keeps the list bounded.
#[inline]
pub fn push_bounded(findings: &mut Vec<Finding>, f: Finding) {
    findings.push(f);
    keep_bounded(findings);
}

/// `s` when it has at most [`MAX_QUOTED_BYTES`] bytes; otherwise its first bytes (cut on
/// a character boundary) followed by `…(8,388,608 bytes)`. The one helper for every
/// file-derived string that goes into a finding: its message, tensor, field and file.
pub fn clip(s: &str) -> Cow<'_, str> {
    clip_to(s, MAX_QUOTED_BYTES)
}

/// [`clip`] for a string already owned: moved as it is when short, copied only when clipped.
pub fn clip_owned(s: String) -> String {
    match clip(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(c) => c,
    }
}

/// [`clip`] with another limit.
pub fn clip_to(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    let head = s.get(..end).unwrap_or("");
    Cow::Owned(format!("{head}…({} bytes)", crate::fmt::thousands(s.len() as u64)))
}

/// [`clip`] for bytes that may not be UTF-8 (read lossily, at most the limit's worth).
pub fn clip_bytes(b: &[u8]) -> String {
    let head = b.get(..MAX_QUOTED_BYTES.min(b.len())).unwrap_or(b);
    let text = String::from_utf8_lossy(head);
    if b.len() <= MAX_QUOTED_BYTES {
        text.into_owned()
    } else {
        format!("{text}…({} bytes)", crate::fmt::thousands(b.len() as u64))
    }
}

/// How bad a finding is. `Error`: the file cannot be trusted as is (the report's `ok` is
/// false). `Warning`: the file loads, but something deserves a look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// Every finding the core can produce. The serialized name (the variant name) is part of
/// the JSON report contract: add codes freely, never rename one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Code {
    // ---- shared ----
    /// The file is shorter than its fixed header.
    FileTooShort,
    /// The format could not be recognised from the first bytes.
    UnknownFormat,
    /// A read from the byte source failed.
    ReadFailed,
    /// Two tensors share a name.
    DuplicateTensor,
    /// A tensor name holds control characters or bidirectional overrides.
    SuspiciousName,
    /// A shape's element count or byte size overflows u64.
    ShapeOverflow,
    /// Tensor byte ranges overlap.
    TensorOverlap,
    /// Bytes between two tensors belong to no tensor.
    TensorGap,
    /// A tensor's bytes run past the end of the file.
    TensorPastEnd,
    /// Bytes after the last tensor belong to no tensor.
    TrailingBytes,
    /// Metadata keys, string values or tokenizer tokens hold control characters,
    /// bidirectional overrides or active HTML (counted; the first few quoted, escaped).
    SuspiciousText,
    /// A chat template reaches Python internals (`__class__`, `__globals__`, …): the
    /// CVE-2024-34359 class of template injection. The template is still shown as text.
    ChatTemplateUnsafe,
    /// A header holds more entries (tensors, metadata entries) than the named limit read
    /// per file; the rest is not read, so the file cannot be judged whole.
    LimitExceeded,

    // ---- safetensors ----
    /// The header exceeds its limit: safetensors N > `MAX_HEADER_LEN`, or a GGUF header
    /// (metadata and tensor infos) longer than `MAX_GGUF_HEADER_BYTES`.
    HeaderTooLarge,
    /// 8 + N is past the end of the file.
    HeaderPastEnd,
    /// The header is not valid UTF-8.
    HeaderNotUtf8,
    /// The header is not valid JSON.
    HeaderNotJson,
    /// The header JSON is not an object.
    HeaderNotObject,
    /// The header JSON nests deeper than the limit.
    JsonTooDeep,
    /// A key appears twice in the header object.
    DuplicateKey,
    /// Whitespace precedes the opening brace.
    LeadingWhitespace,
    /// `__metadata__` is not a map of strings to strings.
    InvalidMetadata,
    /// A tensor entry is not an object, or lacks dtype/shape/data_offsets.
    MissingField,
    /// A tensor field has the wrong type (negative number, not an array, …).
    InvalidField,
    /// A tensor entry has a field besides dtype, shape and data_offsets.
    UnknownField,
    /// The dtype name is not one of the format's dtypes.
    UnknownDtype,
    /// begin > end in data_offsets.
    InvalidOffsets,
    /// end - begin differs from shape × dtype size.
    SizeMismatch,
    /// A sub-byte tensor whose bits are not a whole number of bytes.
    PartialByte,

    // ---- gguf ----
    BadMagic,
    UnsupportedVersion,
    /// A count, length or size claims more bytes than remain in the file.
    CountTooLarge,
    /// A string is not UTF-8.
    InvalidUtf8,
    /// A value type id outside 0..=12.
    UnknownValueType,
    /// Arrays nested deeper than the limit.
    NestingTooDeep,
    /// Nested arrays (llama.cpp refuses them).
    NestedArray,
    /// A BOOL value other than 0 or 1.
    InvalidBool,
    /// An empty metadata key.
    EmptyKey,
    /// A metadata key seen twice.
    DuplicateMetadataKey,
    /// A tensor name longer than llama.cpp accepts.
    NameTooLong,
    /// More than 4 dimensions.
    TooManyDims,
    /// A dimension of zero.
    ZeroDim,
    /// ne[0] is not a multiple of the type's block size.
    BlockMisaligned,
    /// A ggml type id that is unknown.
    UnknownGgmlType,
    /// A ggml type id that was removed from ggml.
    RemovedGgmlType,
    /// A tensor offset not a multiple of the alignment.
    UnalignedOffset,
    /// general.alignment has the wrong type, is zero or not a power of two.
    InvalidAlignment,
    /// Something the GGUF format allows but llama.cpp refuses to load (nested arrays, a
    /// legacy v1 file, big-endian, a type it no longer knows, …); the message names it.
    LlamaCppIncompatible,

    // ---- checkpoints (shards, index, config) ----
    MissingShard,
    TensorNotInShard,
    TensorNotInIndex,
    TensorInWrongShard,
    TotalSizeMismatch,
    MissingTensor,
    UnexpectedTensor,
    ShapeMismatch,
    InvalidIndex,
    InvalidConfig,
    SplitMissing,
    SplitMismatch,
    /// tokenizer.json / tokenizer_config.json could not be read.
    InvalidTokenizer,
    /// The tokenizer has more token ids than config.json's vocab_size.
    VocabMismatch,
    /// A JSON companion is larger than the limit read whole.
    CompanionTooLarge,
    /// Two files of the same companion kind (or the same shard twice).
    DuplicateCompanion,

    // ---- values ----
    ValuesNotDecoded,
    FileChanged,

    // ---- pickle-based files (PyTorch zip / legacy, plain pickle, npy, npz) ----
    /// The pickle stream ends before its STOP opcode.
    PickleTruncated,
    /// The pickle stream is malformed: unknown opcode, stack underflow, missing mark,
    /// negative length, unknown memo index, bad protocol.
    PickleMalformed,
    /// The pickle exceeds one of the walker's limits (opcodes, stack, memo, nesting).
    PickleLimit,
    /// An import the pickle would perform can run code or touch the system.
    DangerousGlobal,
    /// An import the pickle would perform is not on the allow-list.
    UnknownGlobal,
    /// A persistent id that is not a torch storage reference (or one in a plain pickle).
    UnexpectedPersistentId,
    /// The zip structure is broken (no end-of-central-directory record, bad central
    /// directory, local header not matching).
    ZipMalformed,
    /// A zip member is compressed (torch writes them stored).
    CompressedMember,
    /// A storage the pickle references has no member / no record in the file.
    MissingStorage,
    /// A tensor reaches past the end of its storage.
    TensorPastStorage,
    /// A storage's recorded element count disagrees with the pickle (legacy format).
    StorageSizeMismatch,
    /// The .npy header is malformed.
    NpyMalformed,
    /// A dtype with no safetensors name (complex128, quantized, big-endian, structured).
    UnsupportedDtype,
    /// A tensor that is not contiguous (a view, a transpose, a Fortran-order array).
    NonContiguous,
    /// A tensor that cannot be turned into safetensors (not contiguous, unsupported dtype,
    /// past its storage) or a file that must not be converted (dangerous, error).
    NotConvertible,
}

impl Code {
    /// Every code, in declaration order (tests/every_code.rs triggers each one).
    pub const ALL: &'static [Code] = &[
        Code::FileTooShort,
        Code::UnknownFormat,
        Code::ReadFailed,
        Code::DuplicateTensor,
        Code::SuspiciousName,
        Code::ShapeOverflow,
        Code::TensorOverlap,
        Code::TensorGap,
        Code::TensorPastEnd,
        Code::TrailingBytes,
        Code::SuspiciousText,
        Code::ChatTemplateUnsafe,
        Code::LimitExceeded,
        Code::HeaderTooLarge,
        Code::HeaderPastEnd,
        Code::HeaderNotUtf8,
        Code::HeaderNotJson,
        Code::HeaderNotObject,
        Code::JsonTooDeep,
        Code::DuplicateKey,
        Code::LeadingWhitespace,
        Code::InvalidMetadata,
        Code::MissingField,
        Code::InvalidField,
        Code::UnknownField,
        Code::UnknownDtype,
        Code::InvalidOffsets,
        Code::SizeMismatch,
        Code::PartialByte,
        Code::BadMagic,
        Code::UnsupportedVersion,
        Code::CountTooLarge,
        Code::InvalidUtf8,
        Code::UnknownValueType,
        Code::NestingTooDeep,
        Code::NestedArray,
        Code::InvalidBool,
        Code::EmptyKey,
        Code::DuplicateMetadataKey,
        Code::NameTooLong,
        Code::TooManyDims,
        Code::ZeroDim,
        Code::BlockMisaligned,
        Code::UnknownGgmlType,
        Code::RemovedGgmlType,
        Code::UnalignedOffset,
        Code::InvalidAlignment,
        Code::LlamaCppIncompatible,
        Code::MissingShard,
        Code::TensorNotInShard,
        Code::TensorNotInIndex,
        Code::TensorInWrongShard,
        Code::TotalSizeMismatch,
        Code::MissingTensor,
        Code::UnexpectedTensor,
        Code::ShapeMismatch,
        Code::InvalidIndex,
        Code::InvalidConfig,
        Code::SplitMissing,
        Code::SplitMismatch,
        Code::InvalidTokenizer,
        Code::VocabMismatch,
        Code::CompanionTooLarge,
        Code::DuplicateCompanion,
        Code::ValuesNotDecoded,
        Code::FileChanged,
        Code::PickleTruncated,
        Code::PickleMalformed,
        Code::PickleLimit,
        Code::DangerousGlobal,
        Code::UnknownGlobal,
        Code::UnexpectedPersistentId,
        Code::ZipMalformed,
        Code::CompressedMember,
        Code::MissingStorage,
        Code::TensorPastStorage,
        Code::StorageSizeMismatch,
        Code::NpyMalformed,
        Code::UnsupportedDtype,
        Code::NonContiguous,
        Code::NotConvertible,
    ];

    /// The stable name used in the JSON report.
    pub fn as_str(self) -> String {
        format!("{self:?}")
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One thing the core found, ready for a person and for the JSON report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// "error" or "warning" (in the report also told by the list the finding is in).
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    /// Absolute byte offset in the file the finding concerns, if one can be named.
    pub offset: Option<u64>,
    /// The tensor it concerns, if any.
    pub tensor: Option<String>,
    /// The header field it concerns (`dtype`, `data_offsets`, `general.alignment`, …).
    pub field: Option<String>,
    /// The file it concerns, for a finding about several files (a checkpoint, a split
    /// model): the offset is then an offset in that file.
    pub file: Option<String>,
    /// For the last finding of a code whose others were too many to list
    /// ([`cap_findings`]): how many were counted, not kept. 0 otherwise. Always written
    /// (a skipped field would break the binary form the parse worker sends).
    pub more: u64,
}

impl Finding {
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        let mut message: String = message.into();
        if message.len() > MAX_MESSAGE_BYTES {
            message = clip_to(&message, MAX_MESSAGE_BYTES).into_owned();
        }
        Finding {
            severity: Severity::Error,
            code,
            message,
            offset: None,
            tensor: None,
            field: None,
            file: None,
            more: 0,
        }
    }

    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Finding {
            severity: Severity::Warning,
            ..Finding::error(code, message)
        }
    }

    pub fn at(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }

    pub fn at_opt(mut self, offset: Option<u64>) -> Self {
        self.offset = offset;
        self
    }

    /// The tensor's name ([`clip`]ped).
    pub fn tensor(mut self, name: impl AsRef<str>) -> Self {
        self.tensor = Some(clip(name.as_ref()).into_owned());
        self
    }

    /// The header field ([`clip`]ped: a GGUF key comes from the file).
    pub fn field(mut self, field: impl AsRef<str>) -> Self {
        self.field = Some(clip(field.as_ref()).into_owned());
        self
    }

    /// The file's name ([`clip`]ped).
    pub fn file(mut self, file: impl AsRef<str>) -> Self {
        self.file = Some(clip(file.as_ref()).into_owned());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{sev} {}: {}", self.code, self.message)?;
        if let Some(file) = &self.file {
            write!(f, " (in {file})")?;
        }
        if let Some(off) = self.offset {
            write!(f, " (at byte {off})")?;
        }
        if let Some(t) = &self.tensor {
            write!(f, " [tensor {t}]")?;
        }
        Ok(())
    }
}

/// A failed read from a byte source (not a finding about the file's content).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError {
    pub message: String,
}

impl SourceError {
    pub fn new(message: impl Into<String>) -> Self {
        SourceError {
            message: message.into(),
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SourceError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capping_keeps_the_first_and_counts_the_rest_across_compactions() {
        let mut v = Vec::new();
        for i in 0..100_000u64 {
            let f = if i % 2 == 0 { Finding::error(Code::SizeMismatch, "e") } else { Finding::warning(Code::UnknownField, "w") };
            push_bounded(&mut v, f.at(i));
        }
        cap_findings(&mut v);
        cap_findings(&mut v); // idempotent
        assert_eq!(v.len(), 2 * MAX_FINDINGS_PER_CODE + 2);
        assert_eq!(v.iter().filter(|f| f.code == Code::SizeMismatch && f.more == 0).count(), MAX_FINDINGS_PER_CODE);
        assert_eq!(v[0].offset, Some(0));
        let more: Vec<(Code, u64, bool)> = v.iter().filter(|f| f.more > 0).map(|f| (f.code, f.more, f.is_error())).collect();
        let rest = 50_000 - MAX_FINDINGS_PER_CODE as u64;
        assert_eq!(more, vec![(Code::SizeMismatch, rest, true), (Code::UnknownField, rest, false)]);
        assert!(v.last().unwrap().message.contains(&format!("{rest} more UnknownField")));
    }

    #[test]
    fn clip_keeps_short_strings_and_the_length_of_long_ones() {
        assert!(matches!(clip("blk.0.attn_q.weight"), Cow::Borrowed("blk.0.attn_q.weight")));
        let long = "é".repeat(4_194_304); // 8,388,608 bytes, a 2-byte char at every odd cut
        let c = clip(&long);
        assert!(c.ends_with("…(8,388,608 bytes)"), "{}", &c[c.len() - 40..]);
        assert!(c.len() <= MAX_QUOTED_BYTES + 40);
        assert!(c.starts_with("éé"));
        let f = Finding::error(Code::DuplicateTensor, "x").tensor(long.as_str()).field(long.clone()).file(&long);
        for s in [f.tensor, f.field, f.file] {
            assert!(s.unwrap().len() < 300);
        }
        let f = Finding::warning(Code::DuplicateTensor, "m".repeat(1 << 20));
        assert!(f.message.len() <= MAX_MESSAGE_BYTES + 40 && f.message.ends_with("…(1,048,576 bytes)"));
        assert_eq!(clip_bytes(&[0xff; 300]).chars().filter(|c| *c == '\u{fffd}').count(), MAX_QUOTED_BYTES);
    }
}
