//! The conversion audit, pure: which tensor of one model is which tensor of the other,
//! what the converter did to it, how to compare the two, and — once the read loop
//! (`source::audit`) has compared them — the verdicts and the size reconciliation.
//!
//! Two modes:
//! - **conversion** (safetensors → GGUF): tensors are paired by role per architecture
//!   ([`roles`]: llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3, phi3), and the
//!   converter's transformations are undone and named: GGUF's reversed dims
//!   (`ggml_dims_reversed`, no change to the data), the llama Q/K row permutation
//!   ([`permute`]), BF16/F16 → F32 widening (checked bit for bit), gemma's `+ 1` on norm
//!   weights, Falcon-H1's µP multipliers (redone in f32), re-quantization to the target type ([`crate::dtype::quantize`]); generated
//!   tensors are checked against config.json ([`generated`]); tied embeddings are paired;
//! - **identity** (safetensors ↔ safetensors, GGUF ↔ GGUF): pairing by name ("what did
//!   this fine-tune change?").
//!
//! [`plan`] decides every pair before a byte of tensor data is read; [`Audit::assemble`]
//! turns the plan and the comparators' outcomes into the report's `audit` object
//! (docs/report.md).

pub mod compare;
pub mod generated;
mod pair;
pub mod permute;
pub mod pieces;
pub mod reconcile;
mod report;
pub mod roles;

pub use compare::{Class, Comparator, Method, Mismatch, Outcome, Scale, ScaleStep, Verdict};
pub use pair::MAX_GATHER_SOURCE_BYTES;
pub use pieces::{Gather, Part};
pub use report::{summary_line, Audit, GeneratedCheck, PairReport, Summary};

use crate::dtype::decode::Codec;
use crate::formats::gguf::{GgufFile, Value};
use crate::formats::Inspection;
use crate::model::architecture::{Architecture, Family};
use crate::model::gguf_split;
use crate::values::TensorRange;
use crate::vocab::{Format, TensorEntry};
use generated::{Expected, NotExpected};
use permute::QkPermutation;
use reconcile::Reconciliation;
use roles::Generated;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Longest row (elements) of a permuted Q/K projection the read loop compares. Rows are
/// `hidden_size` long (3072 for Llama 3.2 3B, 16384 for Llama 3.1 405B); 2^20 leaves room
/// while bounding what a lying shape makes the loop read and decode at once (a row of
/// F32 is then at most 4 MiB, 8 MiB once decoded).
pub const MAX_PERMUTED_ROW_ELEMENTS: u64 = 1 << 20;

/// One side of an audit: its model files, in order (a checkpoint's shards, a split
/// GGUF's parts, or one file), and config.json's architecture when it was given.
pub struct Side<'a> {
    pub files: Vec<&'a Inspection>,
    pub config: Option<&'a Architecture>,
    /// What is known to be wrong with the side as a whole (a missing shard or part),
    /// repeated in the audit's notes.
    pub notes: Vec<String>,
    /// A split GGUF's parts that were not given (1-based) and its part count.
    pub split_missing: Option<(Vec<u64>, u64)>,
    /// The safetensors files came with a shard index (`model.safetensors.index.json`).
    pub indexed: bool,
}

/// A side's description in the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideSummary {
    /// "safetensors-checkpoint" (several shards, or an index), "safetensors" (one file)
    /// or "gguf" (one file, or the parts of a split model).
    pub format: String,
    pub files: Vec<String>,
    pub tensors: u64,
    pub params: u64,
    pub bytes: u64,
}

/// A tensor of one side and the file it is in.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorRef {
    /// Index into the side's files.
    pub file: usize,
    pub file_name: String,
    pub entry: TensorEntry,
}

/// Elements and bytes of a type's unit (one element, or one block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    pub values: u64,
    pub bytes: u64,
}

/// How the read loop compares a pair.
#[derive(Clone, Debug)]
pub struct ReadSpec {
    /// The bytes of each side that are compared (absolute; a truncated embedding's source
    /// range covers only the rows the target kept).
    pub source: TensorRange,
    pub target: TensorRange,
    pub source_unit: Unit,
    pub target_unit: Unit,
    /// Rows compared and elements per row (row-major, the last dim is a row).
    pub rows: u64,
    pub cols: u64,
    /// The source rows each target row holds (llama Q/K), or the identity.
    pub permutation: Option<QkPermutation>,
    pub method: Method,
    /// Source elements before `source` (a piece of a source tensor): added to the
    /// indices a mismatch is reported at, so they stay the source tensor's.
    pub source_index_base: u64,
    /// The source is read in the target's order through this view (`source` is then the
    /// view's whole span, held at once).
    pub gather: Option<Gather>,
}

impl ReadSpec {
    /// Elements a unit-aligned piece must be a multiple of: a whole number of units on
    /// both sides (and of re-quantization blocks).
    pub fn piece_elements(&self) -> u64 {
        let mut l = lcm(self.source_unit.values, self.target_unit.values);
        if let Method::Values { class: Class::Requant(r), .. } | Method::Scaled { class: Class::Requant(r), .. } = &self.method {
            l = lcm(l, r.block_values() as u64);
        }
        l.max(1)
    }

    /// Bytes of `elements` elements on each side (`elements` a multiple of
    /// [`piece_elements`](Self::piece_elements)).
    pub fn bytes_of(&self, elements: u64) -> (u64, u64) {
        let s = (elements / self.source_unit.values.max(1)).saturating_mul(self.source_unit.bytes);
        let t = (elements / self.target_unit.values.max(1)).saturating_mul(self.target_unit.bytes);
        (s, t)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: u64, b: u64) -> u64 {
    if a == 0 || b == 0 {
        a.max(b)
    } else {
        a / gcd(a, b) * b
    }
}

/// What the read loop does for a pair.
#[derive(Clone, Debug)]
pub enum Work {
    /// Nothing to read: the verdict is known (missing, not comparable).
    Decided(Outcome),
    Compare(ReadSpec),
    /// Read the target (small) and check it against config.json.
    Generated { target: TensorRange, codec: Codec, expected: Expected },
}

/// How a pair came about (the reconciliation groups by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairKind {
    /// A source tensor and its target.
    Paired,
    /// A target tensor generated from config.json.
    Generated,
    /// A source tensor with no target.
    OnlySource,
    /// A target tensor with no source.
    OnlyTarget,
}

/// One pair as planned.
#[derive(Clone, Debug)]
pub struct PlannedPair {
    pub source: Option<TensorRef>,
    pub target: Option<TensorRef>,
    pub kind: PairKind,
    /// What was undone, in order (the report's `transforms`).
    pub transforms: Vec<String>,
    pub work: Work,
    /// The expert, head or half of a sliced pair (the report's `part`).
    pub part: Option<Part>,
    /// The bytes of each side this pair accounts for in the reconciliation (a whole
    /// tensor's, or a piece's share).
    pub source_share: u64,
    pub target_share: u64,
}

/// Every pair, decided before anything is read.
#[derive(Clone, Debug)]
pub struct Plan {
    /// True for same-format audits (pairing by name).
    pub identity: bool,
    pub architecture: Option<String>,
    pub source: SideSummary,
    pub target: SideSummary,
    pub pairs: Vec<PlannedPair>,
    pub reconciliation: Reconciliation,
    pub notes: Vec<String>,
}

impl Plan {
    /// Source bytes the read loop will compare (for progress).
    pub fn source_bytes_to_read(&self) -> u64 {
        self.pairs
            .iter()
            .map(|p| match &p.work {
                Work::Compare(r) => r.source.len,
                _ => 0,
            })
            .fold(0u64, u64::saturating_add)
    }
}

/// Why an audit cannot be planned (a usage error: the sides are not two models).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError(pub String);

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The format of a side, or why its files are not one model.
fn side_format(side: &Side<'_>, what: &str) -> Result<(Format, &'static str), PlanError> {
    let Some(first) = side.files.first() else {
        return Err(PlanError(format!("the {what} has no safetensors or GGUF file")));
    };
    let format = first.format;
    if side.files.iter().any(|f| f.format != format) {
        return Err(PlanError(format!("the {what} mixes safetensors and GGUF files")));
    }
    match format {
        Format::Safetensors if side.files.len() > 1 || side.indexed => Ok((format, "safetensors-checkpoint")),
        Format::Safetensors => Ok((format, "safetensors")),
        Format::Gguf => {
            let split = side.files.iter().any(|f| f.parsed.gguf().is_some_and(gguf_split::is_split_part));
            if side.files.len() > 1 && !split {
                Err(PlanError(format!("the {what} has several GGUF files that are not parts of one split model")))
            } else {
                Ok((format, "gguf"))
            }
        }
        _ => Err(PlanError(format!("{} is not a safetensors or GGUF file", first.name))),
    }
}

/// The side's tensors in file order (the first of a repeated name).
fn side_tensors(side: &Side<'_>) -> Vec<TensorRef> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (i, f) in side.files.iter().enumerate() {
        for e in f.tensors() {
            if seen.insert(e.name.clone()) {
                out.push(TensorRef { file: i, file_name: f.name.clone(), entry: e.clone() });
            }
        }
    }
    out
}

fn summary(side: &Side<'_>, format: &str) -> SideSummary {
    let mut s = SideSummary { format: format.into(), files: Vec::new(), tensors: 0, params: 0, bytes: 0 };
    for f in &side.files {
        s.files.push(f.name.clone());
        s.tensors = s.tensors.saturating_add(f.totals.tensors);
        s.params = s.params.saturating_add(f.totals.params);
        s.bytes = s.bytes.saturating_add(f.totals.bytes);
    }
    s
}

fn first_gguf<'a>(side: &Side<'a>) -> Option<&'a GgufFile> {
    side.files.iter().find_map(|f| f.parsed.gguf())
}

/// A GGUF key of the architecture (`llama.attention.head_count`).
fn arch_u64(g: &GgufFile, key: &str) -> Option<u64> {
    let arch = g.architecture()?;
    g.kv(&format!("{arch}.{key}")).and_then(Value::as_u64)
}

/// Plans the audit of `source` against `target`.
pub fn plan(source: &Side<'_>, target: &Side<'_>) -> Result<Plan, PlanError> {
    let (sf, s_format) = side_format(source, "source")?;
    let (tf, t_format) = side_format(target, "target")?;
    if sf == Format::Gguf && tf == Format::Safetensors {
        return Err(PlanError(
            "the source is a GGUF and the target safetensors: give the safetensors model as the source and the GGUF with --against".into(),
        ));
    }
    let identity = sf == tf;
    let gguf = first_gguf(target).or_else(|| first_gguf(source));
    let gguf_arch = gguf.and_then(GgufFile::architecture).map(str::to_string);
    let config = source.config.or(target.config);
    let family = match config.map(|c| c.family) {
        Some(f) if f != Family::Unknown => f,
        _ => gguf_arch.as_deref().map_or(Family::Unknown, roles::family_of_gguf_arch),
    };
    let mut notes: Vec<String> = source.notes.iter().chain(&target.notes).cloned().collect();
    if !identity && family == Family::Unknown {
        notes.push(format!(
            "the architecture is not one the audit knows ({}): tensors are paired by the llama name table and compared without the Q/K permutation",
            roles::SUPPORTED
        ));
    }
    let n_head = gguf.and_then(|g| arch_u64(g, "attention.head_count")).or_else(|| config.and_then(|c| c.attention_heads));
    let n_head_kv = gguf
        .and_then(|g| arch_u64(g, "attention.head_count_kv"))
        .or_else(|| config.and_then(|c| c.kv_heads))
        .or(n_head);
    let ctx = pair::Context { family, identity, target_is_gguf: tf == Format::Gguf, n_head, n_head_kv, config };
    let architecture = gguf_arch.or_else(|| config.and_then(|c| c.model_type.clone()));

    let s_tensors = side_tensors(source);
    let t_tensors = side_tensors(target);
    let s_len = |t: &TensorRef| source.files.get(t.file).map_or(0, |f| f.size);
    let t_len = |t: &TensorRef| target.files.get(t.file).map_or(0, |f| f.size);
    let t_index: HashMap<&str, usize> = t_tensors.iter().enumerate().map(|(i, t)| (t.entry.name.as_str(), i)).collect();
    let target_shape = |name: &str| t_index.get(name).and_then(|&i| t_tensors.get(i)).map(|t| t.entry.shape.clone());
    // Per target: taken whole, or the element ranges (offset, elements) pieces cover.
    let mut used = vec![false; t_tensors.len()];
    let mut covered: Vec<Vec<(u64, u64)>> = vec![Vec::new(); t_tensors.len()];
    let mut pairs = Vec::new();
    let (layers, tied) = (config.and_then(|c| c.layers), config.is_some_and(|c| c.tie_word_embeddings));

    for s in &s_tensors {
        let name = s.entry.name.as_str();
        let mapping = if identity {
            let same = t_index.get(name).and_then(|&i| t_tensors.get(i));
            match same.and_then(|t| pieces::identity_pieces(name, &s.entry.shape, &t.entry.shape)) {
                Some(p) => pieces::Mapping::Pieces(p.into_iter().map(|p| pieces::Piece { target: name.to_string(), ..p }).collect()),
                None => pieces::Mapping::Whole(Some(name.to_string())),
            }
        } else {
            pieces::mapping(family, name, &s.entry.shape, &target_shape, config)
        };
        let only_source = |verdict: Verdict, reason: String, part: Option<Part>, share: u64| PlannedPair {
            source: Some(s.clone()),
            target: None,
            kind: PairKind::OnlySource,
            transforms: Vec::new(),
            work: Work::Decided(Outcome::decided(verdict, reason)),
            part,
            source_share: share,
            target_share: 0,
        };
        let s_bytes = s.entry.bytes.unwrap_or(0);
        let list = match mapping {
            pieces::Mapping::Pieces(list) => list,
            pieces::Mapping::Unfit { target: tn, why } => {
                let t = t_index.get(tn.as_str()).and_then(|&i| t_tensors.get(i));
                pairs.push(PlannedPair {
                    source: Some(s.clone()),
                    target: t.cloned(),
                    kind: PairKind::OnlySource,
                    transforms: Vec::new(),
                    work: Work::Decided(Outcome::decided(Verdict::Mismatch, why)),
                    part: None,
                    source_share: s_bytes,
                    target_share: 0,
                });
                continue;
            }
            pieces::Mapping::Whole(mapped) => {
                let found = mapped.as_deref().and_then(|m| t_index.get(m).copied()).filter(|&i| {
                    !used.get(i).copied().unwrap_or(true) && covered.get(i).is_some_and(Vec::is_empty)
                });
                let Some(ti) = found else {
                    let split = split_note(target);
                    let (verdict, reason) = match (roles::dropped_by_converter(family, name, layers, tied), &mapped) {
                        (Some(why), _) if !identity => (Verdict::NotCompared, why),
                        (_, Some(m)) => (Verdict::MissingInTarget, format!("no {m} in the target{split}")),
                        (_, None) => (Verdict::MissingInTarget, "no GGUF role known for this name".to_string()),
                    };
                    pairs.push(only_source(verdict, reason, None, s_bytes));
                    continue;
                };
                if let Some(u) = used.get_mut(ti) {
                    *u = true;
                }
                let Some(t) = t_tensors.get(ti) else { continue };
                let mut transforms = Vec::new();
                let work = pair::compare_pair(&ctx, s, t, (s_len(s), t_len(t)), None, &mut transforms);
                let target_share = t.entry.bytes.unwrap_or(0);
                pairs.push(PlannedPair { source: Some(s.clone()), target: Some(t.clone()), kind: PairKind::Paired, transforms, work, part: None, source_share: s_bytes, target_share });
                continue;
            }
        };
        // The source's bytes shared out over its pieces by elements (the last takes the
        // rest, so the shares add up to the tensor's bytes).
        let s_elements = s.entry.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).unwrap_or(u64::MAX).max(1);
        let mut given = 0u64;
        let n = list.len();
        for (k, piece) in list.into_iter().enumerate() {
            let share = if k + 1 == n {
                s_bytes.saturating_sub(given)
            } else {
                (u128::from(s_bytes) * u128::from(piece.elements()) / u128::from(s_elements)) as u64
            };
            given = given.saturating_add(share);
            let Some(ti) = t_index.get(piece.target.as_str()).copied().filter(|&i| !used.get(i).copied().unwrap_or(true)) else {
                let reason = format!("no {} in the target{}", piece.target, split_note(target));
                pairs.push(only_source(Verdict::MissingInTarget, reason, Some(piece.part), share));
                continue;
            };
            let Some(t) = t_tensors.get(ti) else { continue };
            if let Some(c) = covered.get_mut(ti) {
                c.push((piece.target_offset, piece.elements()));
            }
            let target_share = elements_bytes(t, piece.elements());
            let mut transforms = Vec::new();
            let work = pair::compare_pair(&ctx, s, t, (s_len(s), t_len(t)), Some(&piece), &mut transforms);
            pairs.push(PlannedPair {
                source: Some(s.clone()),
                target: Some(t.clone()),
                kind: PairKind::Paired,
                transforms,
                work,
                part: Some(piece.part),
                source_share: share,
                target_share,
            });
        }
    }

    for (i, t) in t_tensors.iter().enumerate() {
        if used.get(i).copied().unwrap_or(true) {
            continue;
        }
        if let Some(c) = covered.get(i).filter(|c| !c.is_empty()) {
            pairs.extend(uncovered_pairs(t, c));
            continue;
        }
        let generated = if identity { None } else { roles::generated(family, &t.entry.name) };
        let tied = !identity
            && t.entry.name == "output.weight"
            && config.is_some_and(|c| c.tie_word_embeddings)
            && !s_tensors.iter().any(|s| s.entry.name == "lm_head.weight");
        let reason = format!(
            "no source tensor for {}{}",
            t.entry.name,
            if tied { " (the source ties its embeddings: tie_word_embeddings is true)" } else { "" }
        );
        let pair = match generated {
            Some(kind) => generated_pair(kind, t, t_len(t), config),
            None => PlannedPair {
                source: None,
                target: Some(t.clone()),
                kind: PairKind::OnlyTarget,
                transforms: Vec::new(),
                work: Work::Decided(Outcome::decided(Verdict::MissingInSource, reason)),
                part: None,
                source_share: 0,
                target_share: t.entry.bytes.unwrap_or(0),
            },
        };
        pairs.push(pair);
    }

    let source_summary = summary(source, s_format);
    let target_summary = summary(target, t_format);
    let reconciliation = reconcile::reconcile(&pairs, source, target, &source_summary, &target_summary);
    Ok(Plan { identity, architecture, source: source_summary, target: target_summary, pairs, reconciliation, notes })
}

/// " (split part(s) 2, 3 of 4 not given)" when the target is a split GGUF with parts
/// missing.
fn split_note(target: &Side<'_>) -> String {
    target.split_missing.as_ref().filter(|(m, _)| !m.is_empty()).map_or_else(String::new, |(m, n)| {
        let parts: Vec<String> = m.iter().map(u64::to_string).collect();
        format!(" (split part(s) {} of {n} not given)", parts.join(", "))
    })
}

/// Bytes of `elements` elements of a tensor (whole units).
fn elements_bytes(t: &TensorRef, elements: u64) -> u64 {
    pair::unit_of(&t.entry.dtype).map_or(0, |u| (elements / u.values.max(1)).saturating_mul(u.bytes))
}

/// The parts of a sliced target no source piece covers: one `missing_in_source` pair per
/// uncovered run of elements, naming the experts (the first dim) it holds.
fn uncovered_pairs(t: &TensorRef, covered: &[(u64, u64)]) -> Vec<PlannedPair> {
    let all = t.entry.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).unwrap_or(0);
    let count = t.entry.shape.first().copied().unwrap_or(1).max(1);
    let per = (all / count).max(1);
    let mut runs = covered.to_vec();
    runs.sort_unstable();
    let mut gaps = Vec::new();
    let mut at = 0u64;
    for (o, n) in runs {
        if o > at {
            gaps.push((at, o));
        }
        at = at.max(o.saturating_add(n));
    }
    if at < all {
        gaps.push((at, all));
    }
    gaps.into_iter()
        .map(|(a, b)| {
            let (first, last) = (a / per, b.saturating_sub(1) / per);
            let which = if first == last { format!("expert {first} of {count}") } else { format!("experts {first}..={last} of {count}") };
            let part = (first == last).then(|| Part { kind: "expert".into(), index: first, count, split: None });
            PlannedPair {
                source: None,
                target: Some(t.clone()),
                kind: PairKind::OnlyTarget,
                transforms: Vec::new(),
                work: Work::Decided(Outcome::decided(
                    Verdict::MissingInSource,
                    format!("no source tensor for {which} of {} (elements {a}..{b})", t.entry.name),
                )),
                part,
                source_share: 0,
                target_share: elements_bytes(t, b - a),
            }
        })
        .collect()
}

/// The pair of a generated target tensor.
fn generated_pair(kind: Generated, t: &TensorRef, t_len: u64, config: Option<&Architecture>) -> PlannedPair {
    let mut pair = PlannedPair {
        source: None,
        target: Some(t.clone()),
        kind: PairKind::Generated,
        transforms: Vec::new(),
        work: Work::Decided(Outcome::decided(Verdict::NotCompared, "")),
        part: None,
        source_share: 0,
        target_share: t.entry.bytes.unwrap_or(0),
    };
    let Some(config) = config else {
        pair.work = Work::Decided(Outcome::decided(Verdict::NotCompared, "generated tensor, but no config.json to recompute it from"));
        return pair;
    };
    let expected = match generated::expected(kind, config) {
        Ok(e) => e,
        Err(NotExpected::Unknown(why)) => {
            pair.work = Work::Decided(Outcome::decided(Verdict::NotCompared, why));
            return pair;
        }
        Err(NotExpected::Contradicted(why)) => {
            pair.work = Work::Decided(Outcome::decided(Verdict::GeneratedMismatch, why));
            return pair;
        }
    };
    let codec = match Codec::for_dtype(&t.entry.dtype) {
        Ok(c) if compare::f32_exact(&c) => c,
        _ => {
            pair.work = Work::Decided(Outcome::decided(Verdict::NotCompared, format!("values of {} are not decoded", t.entry.dtype)));
            return pair;
        }
    };
    let unit = Unit { values: codec.unit_values() as u64, bytes: codec.unit_bytes() as u64 };
    let n = t.entry.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).unwrap_or(u64::MAX);
    if n != expected.values.len() as u64 {
        pair.work = Work::Decided(Outcome::decided(
            Verdict::GeneratedMismatch,
            format!("{n} values, config gives {}", expected.values.len()),
        ));
        return pair;
    }
    pair.work = match pair::range_of(t, unit, n, t_len) {
        Ok(target) => Work::Generated { target, codec, expected },
        Err(e) => Work::Decided(Outcome::decided(Verdict::NotCompared, format!("the tensor cannot be read: {e}"))),
    };
    pair
}

