//! Split GGUF models (`name-00001-of-00003.gguf`, written by llama.cpp's `gguf-split` and
//! gguf-py): each part is a whole GGUF file with the keys `split.no` (0-based),
//! `split.count` and `split.tensors.count` (the tensors of all parts). [`merge`] joins the
//! parsed parts into one model and names what is missing or inconsistent.

use super::gguf::{GgufFile, Value};
use crate::error::{Code, Finding, Severity};
use crate::report::{TensorEntry, Totals};
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, HashMap};

pub const KEY_SPLIT_NO: &str = "split.no";
pub const KEY_SPLIT_COUNT: &str = "split.count";
pub const KEY_SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// One part as the merged model lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub name: String,
    /// `split.no`, when present.
    pub split_no: Option<u64>,
}

/// The merged model.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitModel {
    pub architecture: Option<String>,
    pub split_count: Option<u64>,
    /// Parts in `split.no` order.
    pub parts: Vec<Part>,
    /// (file name, tensor), in part order then file order.
    pub tensors: Vec<(String, TensorEntry)>,
    pub totals: Totals,
    pub findings: Vec<Finding>,
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

/// Merges the parts (any order) into one model.
pub fn merge(parts: &[(&str, &GgufFile)]) -> SplitModel {
    let mut findings = Vec::new();
    let mut ordered: Vec<(Option<u64>, &str, &GgufFile)> = Vec::new();
    let mut count: Option<u64> = None;
    let mut tensors_count: Option<u64> = None;
    for (name, f) in parts {
        let no = f.kv(KEY_SPLIT_NO).and_then(Value::as_u64);
        let c = f.kv(KEY_SPLIT_COUNT).and_then(Value::as_u64);
        let tc = f.kv(KEY_SPLIT_TENSORS_COUNT).and_then(Value::as_u64);
        if no.is_none() || c.is_none() {
            findings.push(Finding::error(Code::SplitMismatch, format!("{name} has no {KEY_SPLIT_NO} / {KEY_SPLIT_COUNT}: it is not a part of a split model")));
        }
        match (count, c) {
            (Some(a), Some(b)) if a != b => findings.push(Finding::error(
                Code::SplitMismatch,
                format!("{name} says the model has {b} parts; an earlier part says {a}"),
            )),
            (None, Some(b)) => count = Some(b),
            _ => {}
        }
        match (tensors_count, tc) {
            (Some(a), Some(b)) if a != b => findings.push(Finding::error(
                Code::SplitMismatch,
                format!("{name} says the model has {b} tensors; an earlier part says {a}"),
            )),
            (None, Some(b)) => tensors_count = Some(b),
            _ => {}
        }
        ordered.push((no, name, f));
    }
    ordered.sort_by_key(|(no, _, _)| no.unwrap_or(u64::MAX));

    // Duplicate and missing part numbers.
    let mut seen: HashMap<u64, &str> = HashMap::new();
    for (no, name, _) in &ordered {
        if let Some(no) = no {
            if let Some(other) = seen.insert(*no, name) {
                findings.push(Finding::error(Code::SplitMismatch, format!("{name} and {other} are both part {} (split.no {no})", no.saturating_add(1))));
            }
            if count.is_some_and(|c| *no >= c) {
                findings.push(Finding::error(
                    Code::SplitMismatch,
                    format!("{name} is split.no {no}, but the model has only {} parts", count.unwrap_or(0)),
                ));
            }
        }
    }
    if let Some(c) = count {
        let template = ordered.iter().find_map(|(_, n, _)| parse_split_name(n));
        // Bounded: never list more missing names than parts exist to name (a lying count).
        let mut missing = Vec::new();
        for no in 0..c {
            if !seen.contains_key(&no) {
                missing.push(no);
                if missing.len() > 1000 {
                    break;
                }
            }
        }
        for no in missing {
            let file = template.map_or_else(
                || format!("part {} of {c}", no.saturating_add(1)),
                |(prefix, _, _)| split_name(prefix, no.saturating_add(1), c),
            );
            findings.push(Finding::error(Code::SplitMissing, format!("part {} of {c} is missing: {file}", no.saturating_add(1))).field(KEY_SPLIT_NO));
        }
    }

    let mut tensors = Vec::new();
    let mut names: HashMap<String, String> = HashMap::new();
    for (_, name, f) in &ordered {
        for t in f.tensor_entries() {
            if let Some(other) = names.insert(t.name.clone(), name.to_string()) {
                findings.push(Finding::error(Code::DuplicateTensor, format!("the tensor is in both {other} and {name}")).tensor(t.name.as_str()));
            }
            tensors.push((name.to_string(), t));
        }
    }
    let all_present = count.is_some_and(|c| seen.len() as u64 == c);
    if let (Some(tc), true) = (tensors_count, all_present) {
        if tc != tensors.len() as u64 {
            findings.push(Finding::error(
                Code::SplitMismatch,
                format!("{KEY_SPLIT_TENSORS_COUNT} is {tc}, but the parts hold {} tensors", tensors.len()),
            ));
        }
    }
    let entries: Vec<TensorEntry> = tensors.iter().map(|(_, t)| t.clone()).collect();
    SplitModel {
        architecture: ordered.iter().find_map(|(_, _, f)| f.architecture().map(str::to_string)),
        split_count: count,
        parts: ordered
            .iter()
            .map(|(no, name, _)| Part {
                name: name.to_string(),
                split_no: *no,
            })
            .collect(),
        tensors,
        totals: Totals::of(&entries),
        findings,
    }
}

impl SplitModel {
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.severity == Severity::Error)
    }

    /// The report's `model` section (docs/report.md).
    pub fn to_json(&self) -> Json {
        let tensors: Vec<Json> = self
            .tensors
            .iter()
            .map(|(file, t)| {
                let mut v = serde_json::to_value(t).unwrap_or(Json::Null);
                if let Some(o) = v.as_object_mut() {
                    o.insert("file".into(), json!(file));
                }
                v
            })
            .collect();
        let (errors, warnings): (Vec<&Finding>, Vec<&Finding>) = self.findings.iter().partition(|f| f.severity == Severity::Error);
        let per_file: BTreeMap<&str, usize> = self.tensors.iter().fold(BTreeMap::new(), |mut m, (f, _)| {
            *m.entry(f.as_str()).or_default() += 1;
            m
        });
        json!({
            "kind": "gguf-split",
            "architecture": self.architecture,
            "split_count": self.split_count,
            "parts": self.parts.iter().map(|p| json!({
                "name": p.name,
                "split_no": p.split_no,
                "tensors": per_file.get(p.name.as_str()).copied().unwrap_or(0),
            })).collect::<Vec<_>>(),
            "tensors": tensors,
            "totals": self.totals,
            "errors": errors,
            "warnings": warnings,
        })
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
