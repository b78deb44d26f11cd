//! The size reconciliation of an audit, term by term, adding up exactly: why the target's
//! tensor data and files are larger or smaller than the source's.
//!
//! - **tensor bytes** (`key`): every paired (source dtype, target dtype) group with a
//!   different dtype or size — `dtype_change` for a float target ("5 tensors BF16 → F32"),
//!   `quantization` for a block type; each `generated` tensor; the tensors only the source
//!   (`missing_in_target`) or only the target (`missing_in_source`) has.
//! - **file bytes**: each side's files split into components — `safetensors_headers`
//!   (8 + N per file), `trailing` (bytes after a safetensors file's data),
//!   `gguf_fixed_header`, `gguf_kv_tokenizer` (every `tokenizer.*` KV), `gguf_kv_other`,
//!   `gguf_tensor_infos`, `gguf_padding` (before the data, between and after tensors),
//!   `gguf_unparsed` (what a broken header left unread) and `tensor_data` — one term per
//!   component: target bytes − source bytes.
//!
//! Each term is a signed byte count; `adds_up` says whether the terms sum to the
//! difference (anything that does not is a last `unexplained` term, never hidden).

use super::{PairKind, PlannedPair, Side, SideSummary};
use crate::formats::Inspection;
use crate::vocab::Format;
use serde::{Deserialize, Serialize};

/// Target tensor names quoted in the `missing_in_source` term (the rest are counted).
pub const MAX_NAMES_QUOTED: usize = 8;

/// One term: what, and how many bytes it adds to the target (negative: removes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Term {
    pub key: String,
    pub what: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensors: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_bytes: Option<u64>,
    pub bytes: i64,
}

impl Term {
    fn new(key: &str, what: String, bytes: i128) -> Term {
        Term { key: key.to_string(), what, tensors: None, from: None, to: None, source_bytes: None, target_bytes: None, bytes: clamp(bytes) }
    }
}

/// Source and target totals and the terms that explain their difference.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reconciliation {
    pub tensor_bytes: Balance,
    pub file_bytes: Balance,
}

fn clamp(n: i128) -> i64 {
    i64::try_from(n).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX })
}

fn plural(n: u64, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn balance(source: u64, target: u64, mut terms: Vec<Term>) -> Balance {
    let difference = i128::from(target) - i128::from(source);
    let sum: i128 = terms.iter().map(|t| i128::from(t.bytes)).sum();
    if sum != difference {
        terms.push(Term::new("unexplained", "bytes no term explains".into(), difference - sum));
    }
    Balance { source, target, difference: clamp(difference), adds_up: sum == difference, terms }
}

/// Whether a target type is a float type (`dtype_change`) rather than a block type
/// (`quantization`).
fn float_type(name: &str) -> bool {
    matches!(name, "F64" | "F32" | "F16" | "BF16")
}

/// A (source dtype, target dtype) group: its target tensors (by name: the pairs of a
/// sliced target are one tensor), source bytes and target bytes.
type Group<'a> = ((String, String), (std::collections::HashSet<&'a str>, u64, u64));

/// The tensor-byte terms of the pairs.
fn tensor_terms(pairs: &[PlannedPair]) -> Vec<Term> {
    // (from, to) → (tensors, source bytes, target bytes), in order of first appearance.
    let mut groups: Vec<Group> = Vec::new();
    let mut generated = Vec::new();
    let (mut only_source, mut only_source_bytes) = (0u64, 0u64);
    let mut only_target: Vec<&str> = Vec::new();
    let mut only_target_bytes = 0u64;
    for p in pairs {
        match (p.kind, &p.source, &p.target) {
            (PairKind::Paired, Some(s), Some(t)) => {
                let key = (s.entry.dtype.name().into_owned(), t.entry.dtype.name().into_owned());
                let (sb, tb) = (p.source_share, p.target_share);
                let name = t.entry.name.as_str();
                match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, g)) => {
                        g.0.insert(name);
                        g.1 = g.1.saturating_add(sb);
                        g.2 = g.2.saturating_add(tb);
                    }
                    None => groups.push((key, (std::collections::HashSet::from([name]), sb, tb))),
                }
            }
            (PairKind::Generated, _, Some(t)) => {
                let mut term = Term::new("generated", format!("generated {} ({})", t.entry.name, t.entry.dtype), i128::from(p.target_share));
                term.tensors = Some(1);
                generated.push(term);
            }
            (PairKind::OnlySource, Some(_), _) => {
                only_source += 1;
                only_source_bytes = only_source_bytes.saturating_add(p.source_share);
            }
            (PairKind::OnlyTarget, _, Some(t)) => {
                only_target.push(&t.entry.name);
                only_target_bytes = only_target_bytes.saturating_add(p.target_share);
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for ((from, to), (names, sb, tb)) in groups {
        let n = names.len() as u64;
        if from == to && sb == tb {
            continue;
        }
        let key = if float_type(&to) { "dtype_change" } else { "quantization" };
        let mut term = Term::new(key, format!("{} {from} → {to}", plural(n, "tensor")), i128::from(tb) - i128::from(sb));
        term.tensors = Some(n);
        term.source_bytes = Some(sb);
        term.target_bytes = Some(tb);
        term.from = Some(from);
        term.to = Some(to);
        out.push(term);
    }
    out.extend(generated);
    if only_source > 0 {
        let mut term = Term::new("missing_in_target", format!("{} not in the target", plural(only_source, "source tensor")), -i128::from(only_source_bytes));
        term.tensors = Some(only_source);
        out.push(term);
    }
    if !only_target.is_empty() {
        let n = only_target.len();
        let mut names = only_target.iter().take(MAX_NAMES_QUOTED).copied().collect::<Vec<_>>().join(", ");
        if n > MAX_NAMES_QUOTED {
            names.push_str(&format!(", … {} more", n - MAX_NAMES_QUOTED));
        }
        let mut term = Term::new(
            "missing_in_source",
            format!("{} not in the source ({names})", plural(n as u64, "target tensor")),
            i128::from(only_target_bytes),
        );
        term.tensors = Some(n as u64);
        out.push(term);
    }
    out
}

/// One side's files split into components: (key, what, bytes), in a fixed order.
fn components(files: &[&Inspection]) -> Vec<(&'static str, String, u64)> {
    let n = files.len();
    let (mut st_headers, mut trailing, mut data) = (0u64, 0u64, 0u64);
    let (mut fixed, mut kv_tok, mut kv_other, mut infos, mut pad, mut unparsed) = (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut n_tok, mut n_other, mut n_tensors, mut fixed_each) = (0u64, 0u64, 0u64, None::<u64>);
    let (mut any_st, mut any_gguf) = (false, false);
    let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
    for f in files {
        add(&mut data, f.totals.bytes);
        n_tensors = n_tensors.saturating_add(f.totals.tensors);
        match (f.format, f.parsed.gguf()) {
            (Format::Gguf, Some(g)) => {
                any_gguf = true;
                add(&mut fixed, g.header.fixed_header_bytes);
                fixed_each = match fixed_each {
                    None => Some(g.header.fixed_header_bytes),
                    Some(x) if x == g.header.fixed_header_bytes => Some(x),
                    Some(_) => Some(0),
                };
                for kv in &g.kvs {
                    if kv.key.starts_with("tokenizer.") {
                        add(&mut kv_tok, kv.bytes);
                        n_tok += 1;
                    } else {
                        add(&mut kv_other, kv.bytes);
                        n_other += 1;
                    }
                }
                for t in &g.layout.terms {
                    match t.kind.as_ref() {
                        "tensor_infos" => add(&mut infos, t.bytes),
                        "padding" | "tensor_padding" => add(&mut pad, t.bytes),
                        "unparsed" => add(&mut unparsed, t.bytes),
                        _ => {}
                    }
                }
                // The layout counts the tensors' claimed bytes; a file whose data section
                // is shorter than they claim leaves the difference unexplained.
            }
            _ => {
                any_st = true;
                let header = f.data_start().unwrap_or(f.size).min(f.size);
                add(&mut st_headers, header);
                add(&mut trailing, f.size.saturating_sub(header).saturating_sub(f.totals.bytes));
            }
        }
    }
    let mut out = Vec::new();
    if any_st {
        out.push(("safetensors_headers", format!("safetensors headers (8 + N, {n} file(s))"), st_headers));
        if trailing > 0 {
            out.push(("trailing", "bytes after the data".to_string(), trailing));
        }
    }
    if any_gguf {
        let each = match fixed_each {
            Some(e) if e > 0 => format!("{e} bytes x {n} file(s)"),
            _ => format!("{n} file(s)"),
        };
        out.push(("gguf_fixed_header", format!("GGUF fixed header (magic, version, counts: {each})"), fixed));
        out.push(("gguf_kv_tokenizer", format!("GGUF metadata, tokenizer.* keys ({n_tok} KVs)"), kv_tok));
        out.push(("gguf_kv_other", format!("GGUF metadata, other keys ({n_other} KVs)"), kv_other));
        out.push(("gguf_tensor_infos", format!("GGUF tensor infos ({n_tensors} tensors)"), infos));
        out.push(("gguf_padding", "GGUF alignment padding".to_string(), pad));
        if unparsed > 0 {
            out.push(("gguf_unparsed", "GGUF bytes the parser could not read".to_string(), unparsed));
        }
    }
    out.push(("tensor_data", "tensor data (see tensor_bytes)".to_string(), data));
    out
}

/// The reconciliation of a plan's pairs and both sides' files.
pub fn reconcile(pairs: &[PlannedPair], source: &Side<'_>, target: &Side<'_>, s: &SideSummary, t: &SideSummary) -> Reconciliation {
    let tensor_bytes = balance(s.bytes, t.bytes, tensor_terms(pairs));
    let s_size = source.files.iter().fold(0u64, |a, f| a.saturating_add(f.size));
    let t_size = target.files.iter().fold(0u64, |a, f| a.saturating_add(f.size));
    let sc = components(&source.files);
    let tc = components(&target.files);
    // Keys in order: the source's, then the target's new ones, tensor_data last.
    let mut keys: Vec<(&'static str, String)> = Vec::new();
    for (k, what, _) in sc.iter().chain(tc.iter()) {
        if *k != "tensor_data" && !keys.iter().any(|(x, _)| x == k) {
            keys.push((k, what.clone()));
        }
    }
    keys.push(("tensor_data", "tensor data (see tensor_bytes)".into()));
    let get = |c: &[(&'static str, String, u64)], k: &str| c.iter().find(|(x, _, _)| *x == k).map(|(_, w, b)| (w.clone(), *b));
    let terms = keys
        .into_iter()
        .map(|(k, what)| {
            let a = get(&sc, k).map_or(0, |x| x.1);
            let (what, b) = match get(&tc, k) {
                Some((w, b)) => (w, b),
                None => (what, 0),
            };
            let mut term = Term::new(k, what, i128::from(b) - i128::from(a));
            term.source_bytes = Some(a);
            term.target_bytes = Some(b);
            term
        })
        .collect();
    let file_bytes = balance(s_size, t_size, terms);
    Reconciliation { tensor_bytes, file_bytes }
}
