//! The JSON report (docs/report.md): the contract shared by the page's "Export JSON" and
//! the CLI's `--json`. Fields may be added; the documented ones are never renamed or dropped.
//! Every byte count and offset is a u64.

use crate::error::{Finding, Severity};
use crate::stats::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const TOOL: &str = "tensorpeek";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The whole document.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub tool: &'static str,
    pub version: &'static str,
    pub files: Vec<FileReport>,
    pub model: Option<serde_json::Value>,
}

impl Report {
    pub fn new(files: Vec<FileReport>) -> Self {
        Report {
            tool: TOOL,
            version: VERSION,
            files,
            model: None,
        }
    }

    /// True when no file (and no merged model) has an error.
    pub fn ok(&self) -> bool {
        let model_ok = self
            .model
            .as_ref()
            .and_then(|m| m.get("errors"))
            .and_then(|e| e.as_array())
            .is_none_or(|e| e.is_empty());
        self.files.iter().all(|f| f.ok) && model_ok
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// What kind of file an entry describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Safetensors,
    Gguf,
    SafetensorsIndex,
    Config,
    Unknown,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Safetensors => "safetensors",
            Format::Gguf => "gguf",
            Format::SafetensorsIndex => "safetensors-index",
            Format::Config => "config",
            Format::Unknown => "unknown",
        }
    }
}

/// One tensor as the report lists it. The shape is row-major (numpy order) for both
/// formats; `ggml_dims` keeps a GGUF tensor's dims as stored (ne[0] first).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorEntry {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub ggml_dims: Option<Vec<u64>>,
    /// Element count; `None` when the shape's product overflows u64.
    pub params: Option<u64>,
    /// Byte range relative to the data section, as in the header.
    pub start: u64,
    pub end: u64,
    /// Absolute byte offset of the first byte in the file (`None` on overflow).
    pub abs_start: Option<u64>,
    /// end - start (`None` when end < start).
    pub bytes: Option<u64>,
    pub stats: Option<Stats>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DtypeTotals {
    pub tensors: u64,
    pub params: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub tensors: u64,
    pub params: u64,
    pub bytes: u64,
    pub by_dtype: BTreeMap<String, DtypeTotals>,
}

impl Totals {
    /// Sums the tensors with saturating arithmetic (a lying header cannot wrap a total; an
    /// overflowing tensor is already a finding of its own).
    pub fn of(tensors: &[TensorEntry]) -> Totals {
        let mut t = Totals::default();
        for e in tensors {
            let params = e.params.unwrap_or(0);
            let bytes = e.bytes.unwrap_or(0);
            t.tensors = t.tensors.saturating_add(1);
            t.params = t.params.saturating_add(params);
            t.bytes = t.bytes.saturating_add(bytes);
            let d = t.by_dtype.entry(e.dtype.clone()).or_default();
            d.tensors = d.tensors.saturating_add(1);
            d.params = d.params.saturating_add(params);
            d.bytes = d.bytes.saturating_add(bytes);
        }
        t
    }
}

/// One input file.
#[derive(Clone, Debug, Serialize)]
pub struct FileReport {
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
    pub tensors: Vec<TensorEntry>,
    pub totals: Totals,
    /// Format-specific extras (GGUF layout, model card, tokenizer summary, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl FileReport {
    /// An empty report for a file of `size` bytes; parsers fill it in.
    pub fn new(name: impl Into<String>, size: u64, format: Format) -> Self {
        FileReport {
            name: name.into(),
            size,
            format,
            ok: true,
            errors: Vec::new(),
            warnings: Vec::new(),
            bytes_read: 0,
            header_len: None,
            gguf_version: None,
            alignment: None,
            kv_count: None,
            data_start: None,
            metadata: serde_json::Value::Object(serde_json::Map::new()),
            tensors: Vec::new(),
            totals: Totals::default(),
            details: None,
        }
    }

    /// Files findings under errors/warnings, recomputes totals and `ok`.
    pub fn finish(&mut self, findings: Vec<Finding>) {
        for f in findings {
            match f.severity {
                Severity::Error => self.errors.push(f),
                Severity::Warning => self.warnings.push(f),
            }
        }
        self.totals = Totals::of(&self.tensors);
        self.ok = self.errors.is_empty();
    }

    /// All findings, errors first.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.errors.iter().chain(self.warnings.iter())
    }

    /// "sound", "sound with warnings" or "errors".
    pub fn verdict(&self) -> Verdict {
        if !self.errors.is_empty() {
            Verdict::Errors
        } else if !self.warnings.is_empty() {
            Verdict::Warnings
        } else {
            Verdict::Sound
        }
    }
}

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
}
