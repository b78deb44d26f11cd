//! What each finding code means, for a person reading a code-scanning alert: a one-line
//! summary, a paragraph (what it means and what to do), and the page that documents the
//! check in depth. SARIF rules are built from it (`report::sarif`), and `docs/codes.md` is
//! generated from it (`tests/sarif.rs` keeps the committed page current: `BLESS=1`).

use super::Code;

/// One code's documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeDoc {
    /// One sentence: what was found.
    pub short: &'static str,
    /// What it means for the file and what to do.
    pub full: &'static str,
    /// The page (relative to the repository root, with its anchor) that documents the
    /// check in depth.
    pub page: &'static str,
}

const ST: &str = "README.md#safetensors-what-is-validated";
const GG: &str = "docs/gguf.md";
const CK: &str = "docs/checkpoints.md";
const PK: &str = "docs/pickle.md";
const VA: &str = "docs/values.md";
const HA: &str = "README.md#hardening";

const fn doc(short: &'static str, full: &'static str, page: &'static str) -> CodeDoc {
    CodeDoc { short, full, page }
}

impl Code {
    /// This code's documentation.
    pub fn doc(self) -> CodeDoc {
        match self {
            Code::FileTooShort => doc("The file is shorter than its format's fixed header.", "The file ends before the fixed part of its header (8 bytes for safetensors, the magic, version and counts for GGUF): it is truncated or not a model file. Download it again.", ST),
            Code::UnknownFormat => doc("The file is not a safetensors, GGUF, PyTorch, pickle or numpy file.", "Its first bytes match none of the formats tensorpeek reads, and its name does not say which it is. A file named like a model file but holding something else cannot be loaded as one.", HA),
            Code::ReadFailed => doc("Reading the file failed.", "The byte source reported an error (permission denied, an I/O error, a short read) before the header was read whole: nothing in the file can be vouched for. Check that the file is readable and complete.", PK),
            Code::DuplicateTensor => doc("Two tensors share a name.", "Two tensor entries (in one file, or in two shards of a checkpoint) have the same name; a loader keeps one of them silently. The file was written wrongly or edited.", GG),
            Code::SuspiciousName => doc("A tensor name holds control characters, bidirectional overrides or active HTML.", "Such characters hide or disguise what a tool or a web page shows (the Trojan Source set) or run script in a page that renders the name. Real tensor names never hold them: treat the file as crafted.", GG),
            Code::ShapeOverflow => doc("A shape's element count or byte size overflows 64 bits.", "The dimensions multiply past u64: no real tensor is that large, so the header lies. A loader may overflow and read out of bounds.", ST),
            Code::TensorOverlap => doc("The byte ranges of two tensors overlap.", "Two tensors claim the same bytes of the data section. The reference readers refuse such a file (safetensors) or it is corrupt (GGUF).", ST),
            Code::TensorGap => doc("Bytes between two tensors belong to no tensor.", "The data section has a hole between two tensors. The safetensors reference reader refuses such a file; llama.cpp expects each tensor right after the one before, aligned.", ST),
            Code::TensorPastEnd => doc("A tensor's bytes run past the end of the file.", "The header places a tensor (partly) beyond the file's last byte: the file is truncated, or its header is wrong. Download it again.", ST),
            Code::TrailingBytes => doc("Bytes after the last tensor belong to no tensor.", "The file is longer than its tensors: extra data was appended (which a loader ignores) or the header lists too few tensors.", ST),
            Code::SuspiciousText => doc("Metadata keys, string values or tokens hold control characters, bidirectional overrides or active HTML.", "Text that a tool or a page shows holds characters that hide or reorder what is displayed, or HTML that runs script where it is rendered. The findings count them and quote the first few, escaped. The file's verdict is suspicious.", GG),
            Code::ChatTemplateUnsafe => doc("A chat template reaches Python internals (the CVE-2024-34359 class of template injection).", "The Jinja chat template uses `__class__`, `__globals__`, `__subclasses__` or similar: what template-injection exploits do. A loader that renders it outside a sandbox (llama-cpp-python before 0.2.72) runs code. The file's verdict is dangerous: do not load it with such a loader.", GG),
            Code::LimitExceeded => doc("The header holds more entries than tensorpeek reads per file.", "More tensors, metadata entries or index entries than the named limit (docs/limits.md): the first ones are read, the rest are not, so the file cannot be judged whole.", "docs/limits.md"),
            Code::HeaderTooLarge => doc("The header is longer than its limit.", "A safetensors header past 100,000,000 bytes (the reference reader's limit), or a GGUF header past 128 MiB: no real file has one; the file is crafted or corrupt.", ST),
            Code::HeaderPastEnd => doc("The safetensors header runs past the end of the file.", "8 + N (the header's length) is beyond the file's length: the file is truncated. Download it again.", ST),
            Code::HeaderNotUtf8 => doc("The safetensors header is not valid UTF-8.", "The reference reader refuses a header that is not UTF-8 JSON.", ST),
            Code::HeaderNotJson => doc("The safetensors header is not valid JSON.", "The reference reader refuses the file; the finding names the offset where JSON parsing failed.", ST),
            Code::HeaderNotObject => doc("The safetensors header is not a JSON object.", "The header must be an object of tensor entries (and `__metadata__`).", ST),
            Code::JsonTooDeep => doc("The header's JSON nests deeper than the limit.", "Deep nesting is how parsers are made to overflow their stack; no real header nests more than a few levels.", ST),
            Code::DuplicateKey => doc("A key appears twice in the safetensors header.", "The reference reader silently keeps the last one, so two tools may read different tensors from the same file.", ST),
            Code::LeadingWhitespace => doc("Whitespace precedes the header's opening brace.", "Allowed by JSON, but not what the reference writer produces.", ST),
            Code::InvalidMetadata => doc("`__metadata__` is not a map of strings to strings.", "The reference reader refuses metadata values that are not strings.", ST),
            Code::MissingField => doc("A tensor entry lacks `dtype`, `shape` or `data_offsets`, or is not an object.", "The reference reader refuses the file.", ST),
            Code::InvalidField => doc("A tensor field has the wrong type.", "A negative or fractional number, offsets that are not a pair, a number past u64, a shape of more than 64 dimensions: the reference reader refuses the file.", ST),
            Code::UnknownField => doc("A tensor entry has a field besides `dtype`, `shape` and `data_offsets`.", "The reference reader ignores it; the writer was not the reference one.", ST),
            Code::UnknownDtype => doc("The dtype is not one of the format's dtypes.", "The safetensors format has 22 dtypes; a loader cannot size or decode any other.", ST),
            Code::InvalidOffsets => doc("A tensor's `data_offsets` begin after they end.", "begin > end: the reference reader refuses the file.", ST),
            Code::SizeMismatch => doc("A tensor's byte range differs from its shape times its dtype's size.", "end − begin ≠ elements × element size: the reference reader refuses the file.", ST),
            Code::PartialByte => doc("A sub-byte tensor's bits are not a whole number of bytes.", "A 4- or 6-bit dtype with an element count whose bits do not fill whole bytes cannot be stored.", ST),
            Code::BadMagic => doc("The GGUF magic is wrong.", "The file does not start with `GGUF`.", GG),
            Code::UnsupportedVersion => doc("The GGUF version is not one tensorpeek reads.", "Versions 1 to 3 are read; anything else is not a GGUF file any loader reads.", GG),
            Code::CountTooLarge => doc("A count, length or size claims more bytes than remain in the file.", "A tensor count, string length or array length that the rest of the file cannot hold: checked before anything is allocated, so a lying header costs nothing. The file is crafted or truncated.", GG),
            Code::InvalidUtf8 => doc("A GGUF string is not UTF-8.", "GGUF strings (keys, values, tensor names) must be UTF-8.", GG),
            Code::UnknownValueType => doc("A GGUF value type id is outside 0..=12.", "The file uses a metadata value type no GGUF version defines: the rest of the header cannot be read.", GG),
            Code::NestingTooDeep => doc("GGUF arrays nest deeper than the limit.", "Deeply nested arrays are how readers are made to overflow their stack.", GG),
            Code::NestedArray => doc("A GGUF metadata value is an array of arrays.", "The format allows it; llama.cpp refuses to load such a file.", GG),
            Code::InvalidBool => doc("A GGUF BOOL value is neither 0 nor 1.", "Readers disagree on what such a value means.", GG),
            Code::EmptyKey => doc("A GGUF metadata key is empty.", "llama.cpp refuses empty keys.", GG),
            Code::DuplicateMetadataKey => doc("A GGUF metadata key appears twice.", "Readers disagree on which value wins.", GG),
            Code::NameTooLong => doc("A tensor name is longer than llama.cpp accepts.", "llama.cpp refuses tensor names of 64 bytes or more.", GG),
            Code::TooManyDims => doc("A tensor has more than 4 dimensions.", "ggml tensors have at most 4.", GG),
            Code::ZeroDim => doc("A tensor has a dimension of zero.", "An empty tensor; older llama.cpp builds divide by that dimension and crash.", GG),
            Code::BlockMisaligned => doc("A tensor's first dimension is not a multiple of its type's block size.", "A quantized ggml type stores whole blocks along ne[0]; such a tensor cannot be stored.", GG),
            Code::UnknownGgmlType => doc("A tensor's ggml type id is unknown.", "No ggml version defines it: the tensor cannot be sized or loaded.", GG),
            Code::RemovedGgmlType => doc("A tensor's ggml type was removed from ggml.", "Old files only: current llama.cpp refuses them. The tensor is still sized.", GG),
            Code::UnalignedOffset => doc("A tensor's offset is not a multiple of the alignment.", "llama.cpp refuses a tensor that does not start on `general.alignment`.", GG),
            Code::InvalidAlignment => doc("`general.alignment` has the wrong type, is zero or is not a power of two.", "The default of 32 is used instead.", GG),
            Code::LlamaCppIncompatible => doc("llama.cpp will not load this GGUF although the format allows it.", "One finding per reason, naming it: a version 1 file, a big-endian file, nested arrays, a removed or unknown ggml type, a dimension of 0, dimensions past the signed 64-bit range.", GG),
            Code::MissingShard => doc("A shard of the checkpoint was not found.", "The index (or a `-0000k-of-0000n` name series) names a shard that is not beside the others: the model cannot load. Download the missing shard.", CK),
            Code::TensorNotInShard => doc("The index places a tensor in a shard that does not hold it.", "Loading it fails: the index and the shards do not belong together.", CK),
            Code::TensorNotInIndex => doc("A shard holds a tensor the index does not list.", "Loaders never read it (or the whole shard is unreferenced): the index and the shards do not belong together.", CK),
            Code::TensorInWrongShard => doc("The index places a tensor in one shard; it is stored in another.", "Loading it fails: the index and the shards do not belong together.", CK),
            Code::TotalSizeMismatch => doc("The index's `metadata.total_size` differs from the tensors' bytes.", "Loaders do not use it; a converter wrote it wrongly.", CK),
            Code::MissingTensor => doc("A tensor the configuration implies is absent.", "config.json's architecture needs a tensor no shard holds: the model will not load.", CK),
            Code::UnexpectedTensor => doc("A tensor the configuration does not imply.", "For example lm_head.weight with tied embeddings, or old rotary buffers: loaders usually ignore it.", CK),
            Code::ShapeMismatch => doc("A tensor's shape differs from the one the configuration implies.", "The finding names the expected shape and the config values behind it: the model will not load.", CK),
            Code::InvalidIndex => doc("The shard index cannot be read.", "Unreadable or mistyped JSON, or several shards without an index.", CK),
            Code::InvalidConfig => doc("config.json cannot be read.", "Unreadable or mistyped JSON: the architecture checks are skipped.", CK),
            Code::SplitMissing => doc("A part of a split GGUF was not found.", "The parts' `split.count` names more parts than were given: the model cannot load.", GG),
            Code::SplitMismatch => doc("The parts of a split GGUF do not belong together.", "Their `split.count`, numbering or tensor counts disagree.", GG),
            Code::InvalidTokenizer => doc("tokenizer.json or tokenizer_config.json cannot be read.", "Unreadable or mistyped JSON: the tokenizer checks are skipped.", CK),
            Code::VocabMismatch => doc("The tokenizer has more token ids than config.json's vocab_size.", "Token ids past the embedding's rows index out of bounds.", CK),
            Code::CompanionTooLarge => doc("A JSON companion is larger than the limit read whole.", "It is not read; its checks are skipped.", CK),
            Code::DuplicateCompanion => doc("Two files of the same companion kind.", "Two configs, two indexes or the same shard twice: the first one is used.", CK),
            Code::ValuesNotDecoded => doc("A tensor's values cannot be decoded for this type.", "No statistics are shown for it (never statistics of raw bytes).", VA),
            Code::FileChanged => doc("The file changed while it was read.", "Its length or its bytes differ from what was read first: read it again.", VA),
            Code::PickleTruncated => doc("The pickle ends before its STOP opcode.", "The file is truncated: loading it fails, and nothing after the cut can be judged.", PK),
            Code::PickleMalformed => doc("The pickle stream is malformed.", "An unknown opcode, a stack underflow, a missing mark, a negative length, an unknown memo index or a bad protocol: loading it fails, and what it would do cannot be vouched for.", PK),
            Code::PickleLimit => doc("The pickle exceeds one of the static evaluator's limits.", "Too many opcodes, too deep a stack or memo, too deep nesting for a file of tensors: the rest is not evaluated, so the file cannot be vouched for.", PK),
            Code::DangerousGlobal => doc("Loading the file would import something that runs code or touches the system.", "The pickle imports a callable such as os.system, builtins.exec or subprocess.Popen (the finding names it, with the opcode's offset): torch.load, pickle.load or numpy with allow_pickle would run it. Do not load the file; it is not converted.", PK),
            Code::UnknownGlobal => doc("Loading the file would import something not on the allow-list.", "Not known to be dangerous, but torch.load(weights_only=True) refuses it, and a full load would import and call it. Load it with weights_only=True, or convert it to safetensors.", PK),
            Code::UnexpectedPersistentId => doc("A persistent id that is not a torch storage reference.", "PyTorch files reference their storages by persistent ids of one shape; anything else (or any persistent id in a plain pickle) is not what torch.save writes.", PK),
            Code::ZipMalformed => doc("The zip structure is broken.", "No end-of-central-directory record, a bad central directory, or a local header that does not match it.", PK),
            Code::CompressedMember => doc("A zip member is compressed.", "torch.save stores members uncompressed; a compressed one cannot be memory-mapped and was not written by torch.", PK),
            Code::MissingStorage => doc("A storage the pickle references is not in the file.", "Loading it fails.", PK),
            Code::TensorPastStorage => doc("A tensor reaches past the end of its storage.", "Loading it fails or reads other tensors' bytes.", PK),
            Code::StorageSizeMismatch => doc("A storage's recorded element count disagrees with the pickle.", "Legacy PyTorch files record each storage's size twice; they differ.", PK),
            Code::NpyMalformed => doc("The .npy header is malformed.", "numpy cannot load the array.", PK),
            Code::UnsupportedDtype => doc("A dtype with no safetensors name.", "complex128, quantized, big-endian or structured dtypes: the tensor is listed but left out of a conversion.", PK),
            Code::NonContiguous => doc("A tensor that is not contiguous.", "A view, a transpose or a Fortran-order array: its values are gathered when read; it is left out of a conversion.", PK),
            Code::NotConvertible => doc("A tensor or file that cannot be converted to safetensors.", "A tensor not contiguous, of an unsupported dtype or past its storage, or a file judged dangerous or unreadable: it is left out, or nothing is written.", PK),
        }
    }
}
