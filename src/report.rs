//! The JSON report (docs/report.md): the contract shared by the page's "Export JSON" and
//! the CLI's `--json`. Fields may be added; the documented ones are never renamed or dropped.
//! Every byte count and offset is a u64.
//!
//! The report is built *from* what was read — the inspections of the files
//! ([`crate::formats::Inspection`]) and the merged model (`crate::model`) — at the moment
//! it is exported or printed; nothing below this module knows it exists.

use crate::error::Finding;
use crate::formats::gguf::{GgufFile, Value, ValueJson};
use crate::formats::pickle::eval::MoreGlobals;
use crate::formats::pickle::{GlobalVerdict, Verdict as SafetyVerdict};
use crate::formats::torch::{self, TorchFile};
use crate::formats::{Inspection, Parsed};
use crate::model::audit::Audit;
use crate::model::checkpoint::CheckpointModel;
use crate::model::description::Description;
use crate::model::gguf_split::SplitModel;
use crate::model::memory::fit::Fitted;
use crate::model::memory::flags::Projection;
use crate::model::memory::Plan;
use crate::stats::Stats;
use crate::vocab::{Format, TensorEntry, Totals};
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;

pub mod sarif;
pub mod table;

pub const TOOL: &str = "tensorpeek";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The whole document. `F` is how each file is held: owned ([`FileReport`], the page's
/// export) or borrowing the inspection's tensor list ([`FileReportRef`], the CLI: a header
/// may list 200,000 tensors, and the report must not hold a second copy of them). Both
/// serialize to the same JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Report<F = FileReport> {
    pub tool: &'static str,
    pub version: &'static str,
    pub files: Vec<F>,
    pub model: Option<ModelSection>,
    /// A conversion audit (`tensorpeek audit`, the page's Audit tab), when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<Box<Audit>>,
    /// The memory llama.cpp would allocate (`tensorpeek fit`, the page's Will it run? card).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Box<MemorySection>>,
}

/// The report's `memory` (docs/report.md): the description it was projected from, every
/// buffer llama.cpp would allocate, the per-device totals, the cache, and what fits.
#[derive(Clone, Debug, Serialize)]
pub struct MemorySection {
    pub architecture: Description,
    #[serde(flatten)]
    pub plan: Plan,
    /// `--fit`: the arguments llama.cpp's fitting would settle on.
    pub fitted_args: Option<Fitted>,
    /// The largest context that fits with every layer offloaded.
    pub largest_context: Option<u64>,
}

impl MemorySection {
    pub fn new(desc: &Description, p: &Plan, fitted: Option<&Fitted>, largest_context: Option<u64>) -> MemorySection {
        MemorySection { architecture: desc.clone(), plan: p.clone(), fitted_args: fitted.cloned(), largest_context }
    }

    /// The section of a projection (`tensorpeek fit --json`, the library's `fit`).
    pub fn of(desc: &Description, p: &Projection) -> MemorySection {
        MemorySection::new(desc, &p.plan, p.fitted.as_ref().and_then(|f| f.as_ref().ok()), p.largest)
    }
}

/// The merged view when several files form one model.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum ModelSection {
    Checkpoint(Box<CheckpointModel>),
    Split(Box<SplitModel>),
}

impl ModelSection {
    /// The merged view of a set of files: its checkpoint, else its first split model.
    pub fn of(checkpoint: Option<&CheckpointModel>, split: Option<&SplitModel>) -> Option<ModelSection> {
        match (checkpoint, split) {
            (Some(c), _) => Some(ModelSection::Checkpoint(Box::new(c.clone()))),
            (None, Some(s)) => Some(ModelSection::Split(Box::new(s.clone()))),
            (None, None) => None,
        }
    }

    pub fn ok(&self) -> bool {
        match self {
            ModelSection::Checkpoint(m) => m.ok,
            ModelSection::Split(m) => m.ok(),
        }
    }
}

impl<T> Report<FileReport<T>> {
    pub fn new(files: Vec<FileReport<T>>) -> Self {
        Report {
            tool: TOOL,
            version: VERSION,
            files,
            model: None,
            audit: None,
            memory: None,
        }
    }

    /// True when no file (and no merged model) has an error, and an audit that ran passed.
    pub fn ok(&self) -> bool {
        self.files.iter().all(|f| f.ok)
            && self.model.as_ref().is_none_or(ModelSection::ok)
            && self.audit.as_ref().is_none_or(|a| a.ok)
    }
}

impl Report {
    /// The report of inspected files, without values.
    pub fn of(inspections: &[Inspection]) -> Self {
        Report::new(inspections.iter().map(|i| FileReport::of(i, &BTreeMap::new())).collect())
    }
}

impl<F: Serialize> Report<F> {
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The same document written as it is serialized (the CLI: no copy of the whole text
    /// in memory; a name of control characters takes 6 bytes per character in JSON).
    pub fn write_json_pretty(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self).map_err(std::io::Error::other)?;
        out.write_all(b"\n")
    }
}

/// One tensor as the report lists it: the entry and, once its values were read, its stats.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TensorReport {
    #[serde(flatten)]
    pub entry: TensorEntry,
    /// Pickle-based files: stride, storage, storage offset, contiguity.
    #[serde(flatten)]
    pub layout: Option<TensorLayout>,
    pub stats: Option<Stats>,
}

/// [`TensorReport`] borrowing the entry (the same JSON).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TensorRef<'a> {
    #[serde(flatten)]
    pub entry: &'a TensorEntry,
    #[serde(flatten)]
    pub layout: Option<TensorLayout>,
    pub stats: Option<Stats>,
}

/// What a tensor of a pickle-based file adds (docs/report.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TensorLayout {
    /// In elements, outermost dimension first.
    pub stride: Vec<u64>,
    /// The storage key (the zip member `…/data/<key>`, the legacy key, the `.npz` member).
    pub storage: String,
    /// In elements of the tensor's dtype.
    pub storage_offset: u64,
    pub contiguous: bool,
    /// The other tensors over the same storage.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shares_storage_with: Vec<String>,
}

impl TensorLayout {
    pub fn of(t: &torch::Tensor) -> TensorLayout {
        TensorLayout {
            stride: t.stride.clone(),
            storage: t.storage.clone(),
            storage_offset: t.storage_offset,
            contiguous: t.contiguous,
            shares_storage_with: t.shares_storage_with.clone(),
        }
    }
}

/// A pickle-based file's `safety` object: the verdict and every distinct import the
/// pickle would perform, in opcode order (each at its first occurrence, with its count).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SafetyReport {
    pub verdict: SafetyVerdict,
    pub globals: Vec<GlobalReport>,
    /// Imports past the first `MAX_GLOBALS` distinct ones, counted by verdict (absent when
    /// none).
    #[serde(skip_serializing_if = "MoreGlobals::is_empty")]
    pub more_globals: MoreGlobals,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GlobalReport {
    /// `None` when computed at run time (what it imports cannot be known statically).
    pub module: Option<String>,
    pub name: Option<String>,
    pub opcode: &'static str,
    /// Absolute byte offset of the opcode in the file.
    pub offset: u64,
    /// The zip member holding the pickle.
    pub member: Option<String>,
    pub verdict: GlobalVerdict,
    pub why: String,
    /// How many times the pickle performs this import (`offset` is the first).
    pub count: u64,
}

/// What a file's safety verdict means, in one sentence for a person (the CLI's block and
/// the page's card say the same).
pub fn safety_meaning(v: SafetyVerdict) -> &'static str {
    match v {
        SafetyVerdict::Safe => "only the imports torch.load(weights_only=True) allows (tensors, storages, plain containers): nothing in it runs code when it is loaded",
        SafetyVerdict::Suspicious => "it imports classes or functions that are not on the allow-list; none is known to be dangerous, but loading it would import and call them: load it with weights_only=True, or convert it",
        SafetyVerdict::Dangerous => "loading it (torch.load, pickle.load, numpy with allow_pickle) would run code or touch the system: do not load it; it is not converted",
        SafetyVerdict::Error => "it could not be read completely (truncated, malformed, a missing storage, not a pickle): nothing in it can be vouched for; do not load it; it is not converted",
    }
}

impl SafetyReport {
    pub fn of(t: &TorchFile) -> SafetyReport {
        let s = &t.inspection.safety;
        SafetyReport {
            verdict: s.verdict,
            globals: s
                .globals
                .iter()
                .map(|g| GlobalReport {
                    module: g.module.clone(),
                    name: g.name.clone(),
                    opcode: g.opcode,
                    offset: g.offset,
                    member: g.member.clone(),
                    verdict: g.verdict,
                    why: g.why.clone(),
                    count: g.count,
                })
                .collect(),
            more_globals: s.more_globals,
        }
    }
}

/// A file's report borrowing the inspection's tensors.
pub type FileReportRef<'a> = FileReport<TensorRef<'a>>;

/// One input file.
#[derive(Clone, Debug, Serialize)]
pub struct FileReport<T = TensorReport> {
    pub name: String,
    pub size: u64,
    pub format: Format,
    pub ok: bool,
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
    pub bytes_read: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_len: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gguf_version: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alignment: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_count: Option<u64>,
    pub data_start: Option<u64>,
    pub metadata: serde_json::Value,
    pub tensors: Vec<T>,
    pub totals: Totals,
    /// Every file's safety verdict (`Inspection::safety`); for pickle-based files also
    /// every import (docs/report.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety: Option<SafetyReport>,
    /// Format-specific extras (GGUF layout, model card, tokenizer summary, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl FileReport {
    /// The report entry of an inspected file; `stats` are the values read so far, by
    /// tensor index.
    pub fn of(i: &Inspection, stats: &BTreeMap<usize, Stats>) -> FileReport {
        FileReport::build(i, stats, |e, layout, stats| TensorReport { entry: e.clone(), layout, stats })
    }
}

impl<'a> FileReport<TensorRef<'a>> {
    /// [`FileReport::of`] borrowing the tensor list.
    pub fn borrowed(i: &'a Inspection, stats: &BTreeMap<usize, Stats>) -> Self {
        FileReport::build(i, stats, |entry, layout, stats| TensorRef { entry, layout, stats })
    }
}

impl<T> FileReport<T> {
    fn build<'a>(i: &'a Inspection, stats: &BTreeMap<usize, Stats>, tensor: impl Fn(&'a TensorEntry, Option<TensorLayout>, Option<Stats>) -> T) -> Self {
        let layout = |j: usize| i.parsed.torch().and_then(|t| t.layout(j)).map(TensorLayout::of);
        let tensors = i.tensors().iter().enumerate().map(|(j, e)| tensor(e, layout(j), stats.get(&j).cloned())).collect();
        let mut r = FileReport {
            name: i.name.clone(),
            size: i.size,
            format: i.format,
            ok: i.ok(),
            errors: i.errors().cloned().collect(),
            warnings: i.warnings().cloned().collect(),
            bytes_read: i.bytes_read,
            header_len: None,
            gguf_version: None,
            alignment: None,
            kv_count: None,
            data_start: i.data_start(),
            metadata: serde_json::Value::Object(serde_json::Map::new()),
            tensors,
            totals: i.totals.clone(),
            safety: Some(SafetyReport { verdict: i.safety(), globals: Vec::new(), more_globals: MoreGlobals::default() }),
            details: None,
        };
        match &i.parsed {
            Parsed::Safetensors(h) => {
                r.header_len = h.header_len;
                r.metadata = serde_json::Value::Object(
                    h.metadata.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect(),
                );
            }
            Parsed::Gguf(g) => {
                r.gguf_version = g.header.version;
                r.alignment = Some(g.header.alignment);
                r.kv_count = g.header.kv_count;
                r.metadata = gguf_metadata(g);
                r.details = Some(gguf_details(g));
            }
            Parsed::Torch(t) => {
                r.safety = Some(SafetyReport { verdict: i.safety(), ..SafetyReport::of(t) });
                r.details = Some(torch_details(t));
            }
            Parsed::None => {}
        }
        r
    }
}

/// `details` of a pickle-based file: the container, where its main pickle is, the opcodes
/// walked, the tensor data bytes (shared storages counted once) and the zip members.
pub fn torch_details(t: &TorchFile) -> serde_json::Value {
    let i = &t.inspection;
    json!({
        "container": i.format.name(),
        "pickle": i.pickle.map(|(offset, len)| json!({ "offset": offset, "len": len })),
        "opcodes": i.opcodes,
        "data_bytes": t.data_bytes,
    })
}

/// A GGUF file's metadata as the report's map: each key's value in its JSON form, a long
/// array summarised as `{"type","len","head"}`.
pub fn gguf_metadata(g: &GgufFile) -> serde_json::Value {
    serde_json::Value::Object(
        g.kvs
            .iter()
            .map(|kv| (kv.key.clone(), serde_json::to_value(ValueJson(&kv.value)).unwrap_or(serde_json::Value::Null)))
            .collect(),
    )
}

/// `details` of a GGUF file: header, KV list (types, offsets, sizes), layout, model card,
/// tokenizer.
pub fn gguf_details(g: &GgufFile) -> serde_json::Value {
    let kv: Vec<serde_json::Value> = g
        .kvs
        .iter()
        .map(|kv| {
            let mut o = json!({
                "key": kv.key,
                "type": kv.value.value_type().name(),
                "group": kv.group,
                "offset": kv.offset,
                "bytes": kv.bytes,
            });
            if let (Value::Array(a), Some(obj)) = (&kv.value, o.as_object_mut()) {
                obj.insert("elem_type".into(), json!(a.elem_type.name()));
                obj.insert("len".into(), json!(a.len));
            }
            o
        })
        .collect();
    let description = Description::from_gguf(g);
    let architecture = description.as_ref().map(|d| {
        let active = d.active_params(g.tensors.iter().map(|t| (t.name.as_str(), t.params.unwrap_or(0))));
        json!({
            "description": d,
            "pattern": d.pattern(),
            "active_params": active.map(|a| a.0),
        })
    });
    json!({
        "header": g.header,
        "kv": kv,
        "layout": g.layout,
        "model_card": g.card,
        "tokenizer": g.tokenizer,
        "architecture": architecture,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::{safetensors, Parsed, Step};

    #[test]
    fn owned_and_borrowed_reports_are_the_same_json() {
        let header = r#"{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.resize(bytes.len() + 8, 0);
        let Step::Done(h) = safetensors::parse(&bytes, bytes.len() as u64) else { panic!() };
        let i = Inspection::new("a.safetensors", bytes.len() as u64, Format::Safetensors, bytes.len() as u64 - 8, Parsed::Safetensors(h));
        let owned = Report::new(vec![FileReport::of(&i, &BTreeMap::new())]).to_json_pretty();
        let borrowed = Report::new(vec![FileReport::borrowed(&i, &BTreeMap::new())]);
        let mut written = Vec::new();
        borrowed.write_json_pretty(&mut written).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), owned + "\n");
        assert!(borrowed.ok());
    }
}
