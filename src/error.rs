//! Findings: everything the core has to say about a file is a [`Finding`].
//!
//! There is one code enum for the whole core. A finding carries what a person needs to
//! locate the problem: the field, the absolute byte offset in the file and the tensor.
//! Parsers never return early on a bad file when something can still be shown: they record
//! a finding and keep whatever could be read.

use serde::{Deserialize, Serialize};
use std::fmt;

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

    // ---- safetensors ----
    /// The header length N exceeds the limit.
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
}

impl Finding {
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Finding {
            severity: Severity::Error,
            code,
            message: message.into(),
            offset: None,
            tensor: None,
            field: None,
            file: None,
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

    pub fn tensor(mut self, name: impl Into<String>) -> Self {
        self.tensor = Some(name.into());
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
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
