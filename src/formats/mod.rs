//! File formats. Every parser is a synchronous function over (prefix bytes, total file
//! length) that either finishes or says how long a prefix it needs ([`Step::Need`]); the
//! async driver in `source` fetches that many bytes and calls it again.
//!
//! A parser fills the vocabulary types (`crate::vocab`) and its own header type; an
//! [`Inspection`] is one file read that way. The report is built from it one layer up.

pub mod gguf;
pub mod safetensors;
pub mod npy;
pub mod pickle;
pub mod text;
pub mod torch;
pub mod zip;

use crate::error::{Code, Finding, Severity};
use crate::vocab::{Format, TensorEntry, Totals};
use serde::{Deserialize, Serialize};

/// The outcome of one parse attempt over a prefix of the file.
#[derive(Clone, Debug, PartialEq)]
pub enum Step<T> {
    /// The parser is finished (possibly with findings).
    Done(T),
    /// The parser needs a prefix of at least this many bytes (never more than the file).
    Need(u64),
}

/// Most tensors read from one file's header, in any format. Each costs ~200 bytes of
/// memory (`TensorEntry`) for as few as 24 bytes of header (a GGUF tensor info), so a
/// dense hostile header would otherwise take 8× its size (issue 12's bound is 4× + 64
/// MiB). Real files hold hundreds to a few thousand (a Llama 3 70B GGUF: 724; DeepSeek-V3
/// in safetensors: 91,991 tensors over 163 shards, ~560 per shard; even Qwen3-235B's
/// 36,000 unmerged expert weights are spread over 118 shards), but a merged MoE file can
/// hold all of a model's ~100,000 (issue 13 benchmarks 100,352 in one file): 2^17 =
/// 131,072 is above that and stays inside the allowance (tests/memory_bounds.rs measures
/// a GGUF listing 400,000 tensors). Past it: `LimitExceeded`, the first ones kept. A
/// pickle's walk keeps as many tensor rebuilds and storages (`pickle::eval`), counting the
/// rest in one `LimitExceeded` each.
pub const MAX_TENSORS: u64 = 131_072;
/// Most metadata entries read from one file's header (GGUF key-value pairs, safetensors
/// `__metadata__` entries). An entry costs ~100 bytes kept for as few as 7–13 bytes of
/// header; real files have 1–60 (GGUF: general.*, the architecture's keys, tokenizer.*).
/// 10,000 is over a hundred times that. Past it: `LimitExceeded`, the first ones kept.
pub const MAX_METADATA_ENTRIES: u64 = 10_000;

/// Pushes onto a list that grows by a quarter at a time instead of doubling: a list of
/// 200,000 tensors of ~200 bytes would otherwise hold up to twice its length, and three
/// times while it is being moved.
pub(crate) fn push_grow<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact((v.len() / 4).max(16));
    }
    v.push(x);
}

/// Bytes needed to tell the formats apart.
pub const SNIFF_LEN: u64 = 9;

/// Tells the format from the first bytes alone (no side effects, no allocation).
/// `GGUF` magic → GGUF; a plausible u64 header length followed by `{` (or JSON
/// whitespace) → safetensors; a zip, the `.npy` magic or a pickle PROTO opcode → the
/// pickle family (a zip is told to be `.npz` or PyTorch only by its directory, so it
/// answers [`Format::PytorchZip`] here); anything else → unknown.
pub fn sniff(prefix: &[u8], file_len: u64) -> Format {
    if prefix.get(..4) == Some(b"GGUF".as_slice()) {
        return Format::Gguf;
    }
    let Some(n_bytes) = prefix.get(..8) else {
        return sniff_pickle(prefix);
    };
    let mut n = [0u8; 8];
    n.copy_from_slice(n_bytes);
    let n = u64::from_le_bytes(n);
    let fits = n
        .checked_add(safetensors::LEN_PREFIX)
        .is_some_and(|end| end <= file_len);
    match prefix.get(8) {
        Some(b'{' | b' ' | b'\t' | b'\n' | b'\r') if fits => Format::Safetensors,
        _ => sniff_pickle(prefix),
    }
}

/// The pickle family's containers from their first bytes ([`torch::sniff`]).
fn sniff_pickle(prefix: &[u8]) -> Format {
    match torch::sniff(prefix) {
        Some(torch::Container::PytorchZip) => Format::PytorchZip,
        Some(torch::Container::Npy) => Format::Npy,
        Some(torch::Container::PytorchLegacy) => Format::PytorchLegacy,
        Some(torch::Container::Pickle) => Format::Pickle,
        Some(torch::Container::Npz | torch::Container::Unknown) | None => Format::Unknown,
    }
}

/// A file's header as its format's parser read it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Parsed {
    Safetensors(safetensors::Header),
    Gguf(Box<gguf::GgufFile>),
    /// A pickle-based file (PyTorch zip or legacy, plain pickle, `.npy`, `.npz`), read by
    /// [`torch::Reader`]: its safety verdict and inventory.
    Torch(Box<torch::TorchFile>),
    /// Nothing could be parsed (unknown format, or the read failed).
    None,
}

impl Parsed {
    /// The tensors, in header order.
    pub fn tensors(&self) -> &[TensorEntry] {
        match self {
            Parsed::Safetensors(h) => &h.tensors,
            Parsed::Gguf(g) => &g.tensors,
            Parsed::Torch(t) => &t.entries,
            Parsed::None => &[],
        }
    }

    /// The parser's findings.
    pub fn findings(&self) -> &[Finding] {
        match self {
            Parsed::Safetensors(h) => &h.findings,
            Parsed::Gguf(g) => &g.findings,
            Parsed::Torch(t) => &t.inspection.findings,
            Parsed::None => &[],
        }
    }

    /// Absolute offset of the data section.
    pub fn data_start(&self) -> Option<u64> {
        match self {
            Parsed::Safetensors(h) => h.data_start,
            Parsed::Gguf(g) => g.header.data_start,
            // offsets are absolute: the "data section" is the whole file
            Parsed::Torch(t) => (t.inspection.format != torch::Container::Unknown).then_some(0),
            Parsed::None => None,
        }
    }

    pub fn gguf(&self) -> Option<&gguf::GgufFile> {
        match self {
            Parsed::Gguf(g) => Some(g),
            _ => None,
        }
    }

    pub fn safetensors(&self) -> Option<&safetensors::Header> {
        match self {
            Parsed::Safetensors(h) => Some(h),
            _ => None,
        }
    }

    pub fn torch(&self) -> Option<&torch::TorchFile> {
        match self {
            Parsed::Torch(t) => Some(t),
            _ => None,
        }
    }
}

/// One file, inspected: its name and length, the bytes the driver read, what the parser
/// made of it, and the findings of reading it (a failed read, an unknown format).
/// Serializable as a whole: the page's worker hands it to the page (postcard, binary).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Inspection {
    pub name: String,
    pub size: u64,
    pub format: Format,
    pub bytes_read: u64,
    pub parsed: Parsed,
    /// Findings about reading the file, besides the parser's own.
    pub read_findings: Vec<Finding>,
    /// The tensors summed once (the table, the summary and the report all use it).
    pub totals: Totals,
}

/// "sound", "sound with warnings" or "errors".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Sound,
    Warnings,
    Errors,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Sound => "sound",
            Verdict::Warnings => "sound with warnings",
            Verdict::Errors => "errors",
        }
    }

    /// The verdict of a list of findings.
    pub fn of<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Verdict {
        let mut v = Verdict::Sound;
        for f in findings {
            match f.severity {
                Severity::Error => return Verdict::Errors,
                Severity::Warning => v = Verdict::Warnings,
            }
        }
        v
    }
}

impl Inspection {
    pub fn new(name: impl Into<String>, size: u64, format: Format, bytes_read: u64, parsed: Parsed) -> Self {
        let totals = Totals::of(parsed.tensors());
        Inspection {
            name: name.into(),
            size,
            format,
            bytes_read,
            parsed,
            read_findings: Vec::new(),
            totals,
        }
    }

    /// A file that could not be parsed, with the finding that says why.
    pub fn failed(name: impl Into<String>, size: u64, format: Format, bytes_read: u64, finding: Finding) -> Self {
        let mut i = Inspection::new(name, size, format, bytes_read, Parsed::None);
        i.read_findings.push(finding);
        i
    }

    pub fn tensors(&self) -> &[TensorEntry] {
        self.parsed.tensors()
    }

    /// Every finding, the parser's first.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.parsed.findings().iter().chain(self.read_findings.iter())
    }

    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings().filter(|f| f.is_error())
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings().filter(|f| !f.is_error())
    }

    /// False when any error was found (the file cannot be trusted as is).
    pub fn ok(&self) -> bool {
        self.errors().next().is_none()
    }

    pub fn verdict(&self) -> Verdict {
        Verdict::of(self.findings())
    }

    pub fn data_start(&self) -> Option<u64> {
        self.parsed.data_start()
    }

    /// N, the safetensors JSON header's length.
    pub fn header_len(&self) -> Option<u64> {
        self.parsed.safetensors().and_then(|h| h.header_len)
    }

    /// The inspection in a compact binary form (postcard), for handing it from the page's
    /// parse worker to the page.
    pub fn to_bytes(&self) -> Result<Vec<u8>, String> {
        postcard::to_stdvec(self).map_err(|e| e.to_string())
    }

    /// An inspection back from [`Inspection::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Inspection, String> {
        postcard::from_bytes(bytes).map_err(|e| e.to_string())
    }
}

/// The safety verdict of findings about text a loader renders or shows (a GGUF's chat
/// templates, keys, values and tokens; a checkpoint's tokenizer_config.json): `dangerous`
/// when a chat template reaches Python internals (`ChatTemplateUnsafe`: rendered outside a
/// sandbox, as llama-cpp-python did before CVE-2024-34359 was fixed, it runs code), else
/// `error` when any finding is an error (the file cannot be read whole, so nothing in it
/// can be vouched for), else `suspicious` when text hides what it shows
/// (`SuspiciousText`, `SuspiciousName`), else `safe`.
pub fn text_safety<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> pickle::Verdict {
    let (mut unsafe_template, mut error, mut suspicious) = (false, false, false);
    for f in findings {
        unsafe_template |= f.code == Code::ChatTemplateUnsafe;
        error |= f.is_error();
        suspicious |= matches!(f.code, Code::SuspiciousText | Code::SuspiciousName);
    }
    if unsafe_template {
        pickle::Verdict::Dangerous
    } else if error {
        pickle::Verdict::Error
    } else if suspicious {
        pickle::Verdict::Suspicious
    } else {
        pickle::Verdict::Safe
    }
}

/// How bad a safety verdict is: `dangerous` > `error` > `suspicious` > `safe` (the worst of
/// several files is the one with the highest rank).
pub fn safety_rank(v: pickle::Verdict) -> u8 {
    match v {
        pickle::Verdict::Safe => 0,
        pickle::Verdict::Suspicious => 1,
        pickle::Verdict::Error => 2,
        pickle::Verdict::Dangerous => 3,
    }
}

impl Inspection {
    /// The file's safety verdict, for every format: the pickle family's own (which imports
    /// loading it would perform); a safetensors file `safe` — it cannot carry code — unless
    /// its header is broken (any error: `error`); a GGUF by [`text_safety`]; anything else
    /// (an unknown format, a failed read) `error`.
    pub fn safety(&self) -> pickle::Verdict {
        match &self.parsed {
            Parsed::Torch(t) if self.ok() || t.inspection.safety.verdict == pickle::Verdict::Dangerous => t.inspection.safety.verdict,
            Parsed::Torch(_) => pickle::Verdict::Error,
            Parsed::Safetensors(_) if self.ok() => pickle::Verdict::Safe,
            Parsed::Gguf(_) => text_safety(self.findings()),
            Parsed::Safetensors(_) | Parsed::None => pickle::Verdict::Error,
        }
    }
}

/// File name endings of the pickle family and the format each suggests (the reader decides:
/// a `.bin` may be a torch zip, a legacy file or a plain pickle).
pub const PICKLE_EXTENSIONS: [(&str, Format); 7] = [
    (".bin", Format::PytorchZip),
    (".pt", Format::PytorchZip),
    (".pth", Format::PytorchZip),
    (".ckpt", Format::PytorchZip),
    (".pkl", Format::Pickle),
    (".npy", Format::Npy),
    (".npz", Format::Npz),
];

/// Format guessed from a file name, for files too short or too broken to sniff.
pub fn format_from_name(name: &str) -> Format {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".gguf") {
        Format::Gguf
    } else if lower.ends_with(".safetensors") {
        Format::Safetensors
    } else {
        PICKLE_EXTENSIONS
            .iter()
            .find(|(ext, _)| lower.ends_with(ext))
            .map_or(Format::Unknown, |(_, f)| *f)
    }
}

/// Deserializes a list of tensors with its whole capacity at once when the encoding says how
/// many come (postcard does), up to [`MAX_TENSORS`]: serde's own `Vec` takes at most 1 MiB
/// ahead and grows from there, and growing a 100,352-entry list (~14 MB in wasm) was the
/// largest part of reading an inspection back on the page's UI thread (Chromium profile).
pub mod tensor_list {
    use super::MAX_TENSORS;
    use crate::vocab::TensorEntry;
    use serde::de::{Deserializer, SeqAccess, Visitor};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<TensorEntry>, D::Error> {
        struct List;
        impl<'de> Visitor<'de> for List {
            type Value = Vec<TensorEntry>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of tensors")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let cap = seq.size_hint().unwrap_or(0).min(usize::try_from(MAX_TENSORS).unwrap_or(usize::MAX));
                let mut list = Vec::with_capacity(cap);
                while let Some(t) = seq.next_element()? {
                    list.push(t);
                }
                Ok(list)
            }
        }
        d.deserialize_seq(List)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs() {
        assert_eq!(sniff(b"GGUF\x03\0\0\0", 100), Format::Gguf);
        let mut st = 2u64.to_le_bytes().to_vec();
        st.extend_from_slice(b"{}");
        assert_eq!(sniff(&st, 10), Format::Safetensors);
        assert_eq!(sniff(&st, 9), Format::Unknown, "header past the end");
        assert_eq!(sniff(b"PK\x03\x04abcdef", 100), Format::PytorchZip);
        assert_eq!(sniff(b"\x93NUMPY\x01\x00v", 100), Format::Npy);
        assert_eq!(sniff(b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9", 100), Format::Pickle);
        assert_eq!(sniff(b"\x80\x04", 2), Format::Pickle);
        assert_eq!(sniff(b"(dp0\nS'a'", 100), Format::Unknown, "protocol 0 has no marker");
        assert_eq!(sniff(b"", 0), Format::Unknown);
        assert_eq!(format_from_name("A.SafeTensors"), Format::Safetensors);
        assert_eq!(format_from_name("pytorch_model-00001-of-00002.BIN"), Format::PytorchZip);
        assert_eq!(format_from_name("w.npz"), Format::Npz);
        assert_eq!(format_from_name("notes.txt"), Format::Unknown);
    }
}
