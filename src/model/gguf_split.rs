//! Split GGUF models (`name-00001-of-00003.gguf`, written by llama.cpp's `gguf-split` and
//! gguf-py): each part is a whole GGUF file with the keys `split.no` (0-based),
//! `split.count` and `split.tensors.count` (the tensors of all parts). [`merge`] joins the
//! parsed parts into one model and names what is missing or inconsistent.

use crate::error::{cap_findings, clip, keep_bounded, Code, Finding, Severity, MAX_FINDINGS_PER_CODE};
use crate::formats::gguf::{GgufFile, Value};
use crate::formats::Inspection;
use crate::vocab::{TensorEntry, Totals};
use serde::Serialize;
use std::collections::HashMap;

pub const KEY_SPLIT_NO: &str = "split.no";
pub const KEY_SPLIT_COUNT: &str = "split.count";
pub const KEY_SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// One part as the merged model lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Part {
    pub name: String,
    /// `split.no`, when present.
    pub split_no: Option<u64>,
    /// Tensors in this part.
    pub tensors: u64,
}

/// One tensor of the merged model and the part it is in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SplitTensor {
    #[serde(flatten)]
    pub tensor: TensorEntry,
    pub file: String,
}

/// The merged model (the report's `model` section for a split GGUF, docs/report.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SplitModel {
    /// Always "gguf-split".
    pub kind: &'static str,
    pub architecture: Option<String>,
    pub split_count: Option<u64>,
    /// Parts in `split.no` order.
    pub parts: Vec<Part>,
    /// In part order, then file order.
    pub tensors: Vec<SplitTensor>,
    pub totals: Totals,
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

/// True when the file carries split keys (a part of a split model).
pub fn is_split_part(f: &GgufFile) -> bool {
    f.kv(KEY_SPLIT_COUNT).is_some() || f.kv(KEY_SPLIT_NO).is_some()
}

/// `model-00002-of-00003.gguf` → ("model", 2, 3).
pub fn parse_split_name(name: &str) -> Option<(&str, u64, u64)> {
    let stem = name.strip_suffix(".gguf")?;
    let (rest, of) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    if no.len() != 5 || of.len() != 5 {
        return None;
    }
    Some((prefix, no.parse().ok()?, of.parse().ok()?))
}

/// The file name llama.cpp gives part `no` (1-based) of `count`.
pub fn split_name(prefix: &str, no: u64, count: u64) -> String {
    format!("{prefix}-{no:05}-of-{count:05}.gguf")
}

/// Merges the parts (any order; inspections that are not GGUF files are ignored) into one
/// model. Every finding names the part it concerns.
pub fn merge(parts: &[&Inspection]) -> SplitModel {
    let mut findings = Vec::new();
    let mut ordered: Vec<(Option<u64>, &str, &Inspection)> = Vec::new();
    let mut count: Option<u64> = None;
    let mut tensors_count: Option<u64> = None;
    for part in parts {
        let Some(f) = part.parsed.gguf() else { continue };
        let name = part.name.as_str();
        let no = f.kv(KEY_SPLIT_NO).and_then(Value::as_u64);
        let c = f.kv(KEY_SPLIT_COUNT).and_then(Value::as_u64);
        let tc = f.kv(KEY_SPLIT_TENSORS_COUNT).and_then(Value::as_u64);
        if no.is_none() || c.is_none() {
            findings.push(Finding::error(Code::SplitMismatch, format!("{name} has no {KEY_SPLIT_NO} / {KEY_SPLIT_COUNT}: it is not a part of a split model")).file(name));
        }
        match (count, c) {
            (Some(a), Some(b)) if a != b => findings.push(
                Finding::error(Code::SplitMismatch, format!("{name} says the model has {b} parts; an earlier part says {a}"))
                    .field(KEY_SPLIT_COUNT)
                    .file(name),
            ),
            (None, Some(b)) => count = Some(b),
            _ => {}
        }
        match (tensors_count, tc) {
            (Some(a), Some(b)) if a != b => findings.push(
                Finding::error(Code::SplitMismatch, format!("{name} says the model has {b} tensors; an earlier part says {a}"))
                    .field(KEY_SPLIT_TENSORS_COUNT)
                    .file(name),
            ),
            (None, Some(b)) => tensors_count = Some(b),
            _ => {}
        }
        ordered.push((no, name, part));
    }
    ordered.sort_by_key(|(no, _, _)| no.unwrap_or(u64::MAX));

    // Duplicate and missing part numbers.
    let mut seen: HashMap<u64, &str> = HashMap::new();
    for (no, name, _) in &ordered {
        if let Some(no) = no {
            if let Some(other) = seen.insert(*no, name) {
                findings.push(
                    Finding::error(Code::SplitMismatch, format!("{name} and {other} are both part {} (split.no {no})", no.saturating_add(1)))
                        .field(KEY_SPLIT_NO)
                        .file(*name),
                );
            }
            if count.is_some_and(|c| *no >= c) {
                findings.push(
                    Finding::error(Code::SplitMismatch, format!("{name} is split.no {no}, but the model has only {} parts", count.unwrap_or(0)))
                        .field(KEY_SPLIT_NO)
                        .file(*name),
                );
            }
        }
    }
    if let Some(c) = count {
        let template = ordered.iter().find_map(|(_, n, _)| parse_split_name(n));
        // Bounded: `split.count` comes from a file and may claim 2^64 parts. The first
        // missing ones are named; how many there are in all is counted from the parts seen.
        let mut missing = Vec::new();
        for no in 0..c {
            if missing.len() >= MAX_FINDINGS_PER_CODE {
                break;
            }
            if !seen.contains_key(&no) {
                missing.push(no);
            }
        }
        let present = seen.keys().filter(|no| **no < c).count() as u64;
        let total_missing = c.saturating_sub(present);
        let listed = missing.len() as u64;
        for no in missing {
            let file = template.map_or_else(
                || format!("part {} of {c}", no.saturating_add(1)),
                |(prefix, _, _)| split_name(prefix, no.saturating_add(1), c),
            );
            findings.push(Finding::error(Code::SplitMissing, format!("part {} of {c} is missing: {file}", no.saturating_add(1))).field(KEY_SPLIT_NO).file(file));
        }
        if total_missing > listed {
            let mut f = Finding::error(Code::SplitMissing, format!("… and {} more parts of {c} are missing", total_missing - listed)).field(KEY_SPLIT_NO);
            f.more = total_missing.saturating_sub(listed);
            findings.push(f);
        }
    }

    let mut tensors: Vec<SplitTensor> = Vec::new();
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut per_part = Vec::new();
    for (_, name, f) in &ordered {
        for t in f.tensors() {
            keep_bounded(&mut findings);
            if let Some(other) = names.insert(t.name.as_str(), name) {
                findings.push(
                    Finding::error(Code::DuplicateTensor, format!("the tensor is in both {} and {}", clip(other), clip(name)))
                        .at_opt(t.header_offset)
                        .tensor(t.name.as_str())
                        .file(*name),
                );
            }
            tensors.push(SplitTensor { tensor: t.clone(), file: name.to_string() });
        }
        per_part.push(f.tensors().len() as u64);
    }
    let all_present = count.is_some_and(|c| seen.len() as u64 == c);
    if let (Some(tc), true) = (tensors_count, all_present) {
        if tc != tensors.len() as u64 {
            findings.push(
                Finding::error(Code::SplitMismatch, format!("{KEY_SPLIT_TENSORS_COUNT} is {tc}, but the parts hold {} tensors", tensors.len()))
                    .field(KEY_SPLIT_TENSORS_COUNT),
            );
        }
    }
    cap_findings(&mut findings);
    let (errors, warnings) = findings.into_iter().partition(|f: &Finding| f.severity == Severity::Error);
    SplitModel {
        kind: "gguf-split",
        architecture: ordered.iter().find_map(|(_, _, f)| f.parsed.gguf().and_then(GgufFile::architecture).map(str::to_string)),
        split_count: count,
        parts: ordered
            .iter()
            .zip(per_part)
            .map(|((no, name, _), tensors)| Part {
                name: name.to_string(),
                split_no: *no,
                tensors,
            })
            .collect(),
        totals: Totals::of(tensors.iter().map(|t| &t.tensor)),
        tensors,
        errors,
        warnings,
    }
}

impl SplitModel {
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// All findings, errors first.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.errors.iter().chain(self.warnings.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_names() {
        assert_eq!(parse_split_name("m-00002-of-00003.gguf"), Some(("m", 2, 3)));
        assert_eq!(parse_split_name("a-b-00001-of-00010.gguf"), Some(("a-b", 1, 10)));
        assert_eq!(parse_split_name("m.gguf"), None);
        assert_eq!(split_name("m", 3, 3), "m-00003-of-00003.gguf");
    }
}
