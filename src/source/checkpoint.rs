//! Reads a set of files that may form a checkpoint: classifies each from its first bytes,
//! inspects model files header-only, reads the small JSON companions whole, and merges
//! the result (`formats::checkpoint::build_model`). Shared by the CLI and the page.

use super::{inspect, ByteSource, Parsed};
use crate::formats;
use crate::formats::checkpoint::{self, Kind, ModelReport};
use crate::report::{FileReport, Format};

/// One input that was neither inspected nor read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub name: String,
    pub kind: Kind,
    pub len: u64,
    pub reason: String,
}

/// What [`inspect_set`] found.
#[derive(Clone, Debug)]
pub struct SetInspection {
    /// Model files (safetensors, GGUF, and unrecognised files when asked), in input order.
    pub files: Vec<FileReport>,
    /// The parsed form of each entry of `files` (same order), for detailed views.
    pub parsed: Vec<Parsed>,
    /// Companion JSON files read whole: (name, bytes).
    pub companions: Vec<(String, Vec<u8>)>,
    /// The merged model, when the inputs form a checkpoint ([`checkpoint::wants_model`]).
    pub model: Option<ModelReport>,
    pub skipped: Vec<Skipped>,
    /// Bytes read over all inputs (headers, companions, classification prefixes).
    pub bytes_read: u64,
}

/// Inspects `inputs` (name, source). Files that are neither model files nor JSON are
/// skipped (README.md, tokenizer.model, …) unless `inspect_unknown`, in which case they
/// are inspected and reported as unknown format.
pub async fn inspect_set<S: ByteSource>(inputs: &[(String, S)], inspect_unknown: bool) -> SetInspection {
    let mut out = SetInspection {
        files: Vec::new(),
        parsed: Vec::new(),
        companions: Vec::new(),
        model: None,
        skipped: Vec::new(),
        bytes_read: 0,
    };
    let mut recognised = 0usize;
    for (name, src) in inputs {
        let len = src.len();
        // A file named as a model file goes straight to `inspect`, which sniffs its first
        // bytes itself: no separate classification read (a lone safetensors file is read
        // exactly 8 + N bytes).
        if formats::format_from_name(name) != Format::Unknown {
            let inspection = inspect(src, name).await;
            out.bytes_read = out.bytes_read.saturating_add(inspection.report.bytes_read);
            out.files.push(inspection.report);
            out.parsed.push(inspection.parsed);
            continue;
        }
        let head_len = len.min(checkpoint::CLASSIFY_LEN);
        let head = match src.read_at(0, head_len).await {
            Ok(h) => h,
            Err(e) => {
                out.skipped.push(Skipped {
                    name: name.clone(),
                    kind: Kind::Unknown,
                    len,
                    reason: format!("reading it failed: {e}"),
                });
                continue;
            }
        };
        out.bytes_read = out.bytes_read.saturating_add(head.len() as u64);
        let kind = checkpoint::classify(name, &head, len);
        if kind.is_companion() {
            if !kind.read_whole(len) {
                out.skipped.push(Skipped {
                    name: name.clone(),
                    kind,
                    len,
                    reason: format!("larger than the {} bytes read for a JSON file", checkpoint::MAX_COMPANION_BYTES),
                });
                continue;
            }
            let bytes = if head.len() as u64 == len {
                head
            } else {
                match src.read_at(0, len).await {
                    Ok(b) => b,
                    Err(e) => {
                        out.skipped.push(Skipped {
                            name: name.clone(),
                            kind,
                            len,
                            reason: format!("reading it failed: {e}"),
                        });
                        continue;
                    }
                }
            };
            out.bytes_read = out.bytes_read.saturating_add(if bytes.len() as u64 == head_len { 0 } else { len });
            if kind != Kind::Json {
                recognised += 1;
            }
            out.companions.push((name.clone(), bytes));
            continue;
        }
        if !kind.is_tensor_file() && !inspect_unknown {
            out.skipped.push(Skipped {
                name: name.clone(),
                kind,
                len,
                reason: "not a model file or a JSON companion".into(),
            });
            continue;
        }
        let inspection = inspect(src, name).await;
        out.bytes_read = out.bytes_read.saturating_add(inspection.report.bytes_read);
        out.files.push(inspection.report);
        out.parsed.push(inspection.parsed);
    }
    let safetensors = out.files.iter().filter(|f| f.format == Format::Safetensors).count();
    if checkpoint::wants_model(safetensors, recognised) {
        out.model = Some(checkpoint::build_model(&out.files, &out.companions));
    }
    out
}
