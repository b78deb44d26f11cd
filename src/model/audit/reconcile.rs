//! The size reconciliation of an audit, term by term, adding up exactly: why the target's
//! tensor data and files are larger or smaller than the source's.
//!
//! - **tensor bytes**: every pair contributes its target bytes minus its source bytes to
//!   one term — a dtype change ("57 tensors BF16 → F32"), a generated tensor, an output
//!   layer written from a tied embedding, a tensor only one side has;
//! - **file bytes**: the tensor-data difference plus what each side's files hold besides
//!   tensors — safetensors headers (8-byte length + JSON), GGUF fixed headers, metadata by
//!   group (the tokenizer separately), tensor infos, alignment padding — the target's
//!   added, the source's subtracted.
//!
//! Each term is a signed byte count; `adds_up` says whether the terms sum to the
//! difference (anything that does not is a last "unexplained" term, never hidden).

use super::{PairKind, PlannedPair, Side, SideSummary};
use crate::formats::Inspection;
use crate::vocab::Format;
use serde::Serialize;
use std::collections::BTreeMap;

/// One term: what, and how many bytes it adds to the target (negative: removes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Term {
    pub what: String,
    pub bytes: i64,
}

/// Source and target totals and the terms that explain their difference.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Balance {
    pub source: u64,
    pub target: u64,
    /// target − source.
    pub difference: i64,
    pub terms: Vec<Term>,
    /// The terms sum to the difference.
    pub adds_up: bool,
}

/// The report's `reconciliation`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Reconciliation {
    pub tensor_bytes: Balance,
    pub file_bytes: Balance,
}

fn signed(n: u64) -> i128 {
    i128::from(n)
}

fn clamp(n: i128) -> i64 {
    i64::try_from(n).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX })
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Terms in order of first appearance, summed by label.
#[derive(Default)]
struct Terms {
    order: Vec<String>,
    sums: BTreeMap<String, (u64, i128)>,
}

impl Terms {
    fn add(&mut self, key: String, count: u64, bytes: i128) {
        if !self.sums.contains_key(&key) {
            self.order.push(key.clone());
        }
        let e = self.sums.entry(key).or_insert((0, 0));
        e.0 = e.0.saturating_add(count);
        e.1 = e.1.saturating_add(bytes);
    }
}

fn balance(source: u64, target: u64, terms: Vec<(String, i128)>) -> Balance {
    let difference = signed(target) - signed(source);
    let mut out: Vec<Term> = terms.into_iter().map(|(what, b)| Term { what, bytes: clamp(b) }).collect();
    let sum: i128 = out.iter().map(|t| i128::from(t.bytes)).sum();
    if sum != difference {
        out.push(Term { what: "unexplained".into(), bytes: clamp(difference - sum) });
    }
    Balance { source, target, difference: clamp(difference), adds_up: sum == difference, terms: out }
}

/// The tensor-byte terms of the pairs.
fn tensor_terms(pairs: &[PlannedPair]) -> Vec<(String, i128)> {
    let bytes = |t: &Option<super::TensorRef>| t.as_ref().and_then(|t| t.entry.bytes).unwrap_or(0);
    let mut dtype = Terms::default();
    let mut rest: Vec<(String, i128)> = Vec::new();
    let mut reshaped = Terms::default();
    let (mut only_source, mut only_source_bytes) = (0u64, 0u64);
    let (mut only_target, mut only_target_bytes) = (0u64, 0u64);
    for p in pairs {
        match p.kind {
            PairKind::Paired => {
                let (Some(s), Some(t)) = (&p.source, &p.target) else { continue };
                let d = signed(bytes(&p.target)) - signed(bytes(&p.source));
                let (sd, td) = (s.entry.dtype.name(), t.entry.dtype.name());
                if sd != td {
                    dtype.add(format!("{sd} → {td}"), 1, d);
                } else if d != 0 {
                    reshaped.add(format!("{sd} with other shapes"), 1, d);
                }
            }
            PairKind::Tied => {
                let (Some(s), Some(t)) = (&p.source, &p.target) else { continue };
                rest.push((format!("{} written from the tied {}", t.entry.name, s.entry.name), signed(bytes(&p.target))));
            }
            PairKind::Generated => {
                if let Some(t) = &p.target {
                    rest.push((format!("generated {}", t.entry.name), signed(bytes(&p.target))));
                }
            }
            PairKind::OnlySource => {
                only_source += 1;
                only_source_bytes = only_source_bytes.saturating_add(bytes(&p.source));
            }
            PairKind::OnlyTarget => {
                only_target += 1;
                only_target_bytes = only_target_bytes.saturating_add(bytes(&p.target));
            }
        }
    }
    let mut out: Vec<(String, i128)> = Vec::new();
    for key in &dtype.order {
        if let Some((n, b)) = dtype.sums.get(key) {
            out.push((format!("{} {key}", plural(*n, "tensor", "tensors")), *b));
        }
    }
    out.extend(rest);
    for key in &reshaped.order {
        if let Some((n, b)) = reshaped.sums.get(key) {
            out.push((format!("{} {key}", plural(*n, "tensor", "tensors")), *b));
        }
    }
    if only_source > 0 {
        out.push((format!("{} not in the target", plural(only_source, "source tensor", "source tensors")), -signed(only_source_bytes)));
    }
    if only_target > 0 {
        out.push((format!("{} not in the source", plural(only_target, "target tensor", "target tensors")), signed(only_target_bytes)));
    }
    out
}

/// What a side's files hold besides tensor data, by label: (label, files, bytes).
fn overhead(files: &[&Inspection]) -> Vec<(String, i128)> {
    let mut t = Terms::default();
    for f in files {
        match f.format {
            Format::Safetensors => {
                let header = f.data_start().unwrap_or(f.size);
                t.add("safetensors header (8-byte length + JSON)".into(), 1, signed(header));
                let rest = signed(f.size) - signed(header) - signed(f.totals.bytes);
                if rest != 0 {
                    t.add("safetensors bytes outside the header and the tensors".into(), 1, rest);
                }
            }
            Format::Gguf => {
                if let Some(g) = f.parsed.gguf() {
                    for term in &g.layout.terms {
                        let label = match term.kind {
                            "tensor_data" => continue,
                            "header" => "GGUF fixed header (magic, version, counts)".to_string(),
                            "kv" => format!("GGUF {}", term.label),
                            "tensor_infos" => "GGUF tensor infos".to_string(),
                            "padding" | "tensor_padding" => "GGUF alignment padding".to_string(),
                            other => format!("GGUF {other}"),
                        };
                        t.add(label, 1, signed(term.bytes));
                    }
                    // The layout counts the tensors' claimed bytes; the balance uses the
                    // tensors' sizes, so a difference between the two shows here.
                    let claimed = signed(g.card.tensor_bytes) - signed(f.totals.bytes);
                    if claimed != 0 {
                        t.add("GGUF tensor bytes the layout counts differently".into(), 1, claimed);
                    }
                } else {
                    t.add("unparsed GGUF bytes".into(), 1, signed(f.size) - signed(f.totals.bytes));
                }
            }
            _ => t.add("bytes of files that are not models".into(), 1, signed(f.size)),
        }
    }
    t.order
        .iter()
        .filter_map(|k| t.sums.get(k).map(|(n, b)| (if *n > 1 { format!("{k} × {n} files") } else { k.clone() }, *b)))
        .collect()
}

/// The reconciliation of a plan's pairs and both sides' files.
pub fn reconcile(pairs: &[PlannedPair], source: &Side<'_>, target: &Side<'_>, s: &SideSummary, t: &SideSummary) -> Reconciliation {
    let tensor_bytes = balance(s.bytes, t.bytes, tensor_terms(pairs));
    let s_size = source.files.iter().fold(0u64, |a, f| a.saturating_add(f.size));
    let t_size = target.files.iter().fold(0u64, |a, f| a.saturating_add(f.size));
    let mut terms = vec![("tensor data".to_string(), i128::from(tensor_bytes.difference))];
    terms.extend(overhead(&target.files));
    terms.extend(overhead(&source.files).into_iter().map(|(k, b)| (format!("source {k}"), -b)));
    let file_bytes = balance(s_size, t_size, terms);
    Reconciliation { tensor_bytes, file_bytes }
}
