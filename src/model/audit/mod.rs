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
//!   weights, re-quantization to the target type ([`crate::dtype::quantize`]); generated
//!   tensors are checked against config.json ([`generated`]); tied embeddings are paired;
//! - **identity** (safetensors ↔ safetensors, GGUF ↔ GGUF): pairing by name ("what did
//!   this fine-tune change?").
//!
//! [`plan`] decides every pair before a byte of tensor data is read; [`Audit::assemble`]
//! turns the plan and the comparators' outcomes into the report's `audit` object
//! (docs/report.md).

pub mod compare;
pub mod generated;
pub mod permute;
pub mod reconcile;
pub mod roles;

pub use compare::{Class, Comparator, Method, Mismatch, Outcome, Verdict};

use crate::dtype::decode::Codec;
use crate::dtype::ggml::GgmlType;
use crate::dtype::quantize::Requant;
use crate::dtype::{Dtype, TensorDtype};
use crate::formats::gguf::{GgufFile, Value};
use crate::formats::Inspection;
use crate::model::architecture::{Architecture, Family};
use crate::model::gguf_split;
use crate::values::TensorRange;
use crate::vocab::{Format, TensorEntry};
use generated::{Expected, NotExpected};
use permute::QkPermutation;
use reconcile::Reconciliation;
use roles::{Generated, QkRole};
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
}

impl ReadSpec {
    /// Elements a unit-aligned piece must be a multiple of: a whole number of units on
    /// both sides (and of re-quantization blocks).
    pub fn piece_elements(&self) -> u64 {
        let mut l = lcm(self.source_unit.values, self.target_unit.values);
        if let Method::Values { class: Class::Requant(r), .. } = &self.method {
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

/// The unit of a tensor's type: from its codec, or for a ggml type we do not decode from
/// the type table.
fn unit_of(dtype: &TensorDtype) -> Option<Unit> {
    if let Ok(c) = Codec::for_dtype(dtype) {
        return Some(Unit { values: c.unit_values() as u64, bytes: c.unit_bytes() as u64 });
    }
    dtype.ggml().map(|t: GgmlType| Unit { values: t.block_size, bytes: t.type_size })
}

/// The checked byte range of `elements` leading elements of a tensor, in a file of
/// `file_len` bytes.
fn range_of(t: &TensorRef, unit: Unit, elements: u64, file_len: u64) -> Result<TensorRange, String> {
    let all = t.entry.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or("its element count overflows u64")?;
    if unit.values == 0 || !all.is_multiple_of(unit.values) || !elements.is_multiple_of(unit.values) {
        return Err(format!("{all} elements are not a whole number of {}-element units of {}", unit.values, t.entry.dtype));
    }
    let need = (all / unit.values).checked_mul(unit.bytes).ok_or("its byte size overflows u64")?;
    if t.entry.bytes != Some(need) {
        return Err(format!("{} holds {} bytes but its shape and type need {need}", t.entry.name, t.entry.bytes.map_or("?".into(), |b| b.to_string())));
    }
    let start = t.entry.abs_start.ok_or("its offset overflows u64")?;
    if start.checked_add(need).is_none_or(|end| end > file_len) {
        return Err(format!("its bytes run past the end of {}", t.file_name));
    }
    Ok(TensorRange { start, len: elements / unit.values * unit.bytes, elements })
}

/// Whether a type is a float type (a narrowing, not a quantization, when it rounds).
fn is_float(d: &TensorDtype) -> bool {
    matches!(d, TensorDtype::Safetensors(_)) || matches!(d.name().as_ref(), "F64" | "F32" | "F16" | "BF16")
}

/// Whether every value of `s` is a value of `t` (the target holds the source exactly).
fn lossless(s: &TensorDtype, t: &TensorDtype) -> bool {
    let (sn, tn) = (s.name(), t.name());
    if sn == tn {
        return true;
    }
    let f8 = |n: &str| n.starts_with("F8_") && n != "F8_E8M0";
    let small_float = |n: &str| matches!(n, "BF16" | "F16" | "F4" | "F6_E2M3" | "F6_E3M2" | "F8_E8M0") || f8(n);
    match tn.as_ref() {
        "F32" => small_float(&sn),
        "F16" | "BF16" => f8(&sn) || matches!(sn.as_ref(), "F4" | "F6_E2M3" | "F6_E3M2"),
        _ => false,
    }
}

/// How a rounding target is judged.
fn lossy_class(t: &TensorDtype) -> Class {
    if let Some(r) = Requant::from_name(&t.name()) {
        return Class::Requant(r);
    }
    let bits = match t {
        TensorDtype::Ggml(_) => t.ggml().map_or(4.0, |g| g.bits_per_weight()),
        TensorDtype::Safetensors(d) => match d {
            Dtype::F4 => 2.0,
            Dtype::F6E2m3 | Dtype::F6E3m2 => 3.0,
            _ => 4.0,
        },
        TensorDtype::Unknown(_) => 4.0,
    };
    Class::Quantized { max_rel_rmse: compare::quantized_rel_rmse(bits) }
}

/// What the pairing needs to know besides the tensors.
struct Context {
    family: Family,
    identity: bool,
    target_is_gguf: bool,
    n_head: Option<u64>,
    n_head_kv: Option<u64>,
}

/// Builds the comparison of a source and a target tensor, or decides it.
fn compare_pair(
    ctx: &Context,
    s: &TensorRef,
    t: &TensorRef,
    s_len: u64,
    t_len: u64,
    transforms: &mut Vec<String>,
) -> Work {
    let not_compared = |why: String| Work::Decided(Outcome::decided(Verdict::NotCompared, why));
    let (ss, ts) = (&s.entry.shape, &t.entry.shape);
    if !ctx.identity && ctx.target_is_gguf {
        transforms.push("ggml_dims_reversed".into());
    }
    // The elements compared: all, or the rows gemma3's converter kept of the embedding.
    let elements = match ts.iter().try_fold(1u64, |a, &d| a.checked_mul(d)) {
        Some(n) => n,
        None => return not_compared("the target's element count overflows u64".into()),
    };
    if ss != ts {
        let truncated = ctx.family == Family::Gemma3
            && ss.len() == 2
            && ts.len() == 2
            && ss.get(1) == ts.get(1)
            && ts.first() < ss.first()
            && roles::gguf_name(ctx.family, &s.entry.name).as_deref() == Some("token_embd.weight");
        if truncated {
            transforms.push(format!(
                "embedding_rows_kept({} of {})",
                ts.first().copied().unwrap_or(0),
                ss.first().copied().unwrap_or(0)
            ));
        } else {
            return Work::Decided(Outcome::decided(
                Verdict::Mismatch,
                format!("shape {} in the source, {} in the target", crate::fmt::shape(ss), crate::fmt::shape(ts)),
            ));
        }
    }
    let (Some(su), Some(tu)) = (unit_of(&s.entry.dtype), unit_of(&t.entry.dtype)) else {
        return not_compared(format!("unknown element type ({} / {})", s.entry.dtype, t.entry.dtype));
    };
    // Rows: the last dim is a row; a permuted 1-D bias has rows of one element.
    let role = if ctx.identity { None } else { roles::qk_role(ctx.family, &s.entry.name) };
    let cols = if ts.len() >= 2 {
        ts.last().copied().unwrap_or(1)
    } else if role.is_some() {
        1
    } else {
        elements
    };
    let permutation = match role {
        None => None,
        Some(role) => {
            let heads = match role {
                QkRole::Q => ctx.n_head,
                QkRole::K => ctx.n_head_kv.or(ctx.n_head),
            };
            let label = if role == QkRole::Q { "n_head" } else { "n_head_kv" };
            let Some(heads) = heads else {
                return not_compared(format!("the Q/K permutation needs {label}: neither the GGUF nor config.json gives it"));
            };
            let rows = elements / cols.max(1);
            if cols > MAX_PERMUTED_ROW_ELEMENTS {
                return not_compared(format!("rows of {cols} elements are longer than the {MAX_PERMUTED_ROW_ELEMENTS} a permuted tensor is compared by"));
            }
            match QkPermutation::new(rows, heads) {
                Some(p) => {
                    transforms.push(format!("qk_permutation(n_head={heads})"));
                    Some(p)
                }
                None => return not_compared(format!("{rows} rows are not an even number of rows per head for {label} = {heads}")),
            }
        }
    };
    let shift = if ctx.identity { 0.0 } else { roles::norm_shift(ctx.family, &s.entry.name) };
    if shift != 0.0 {
        transforms.push("norm_plus_one".into());
    }
    let same_type = s.entry.dtype.name() == t.entry.dtype.name();
    let method = if same_type && shift == 0.0 {
        let codec = Codec::for_dtype(&s.entry.dtype).ok();
        Method::Bytes { codec, unit_values: su.values as usize, unit_bytes: su.bytes as usize }
    } else {
        let sc = match Codec::for_dtype(&s.entry.dtype) {
            Ok(c) if compare::f32_exact(&c) => c,
            Ok(_) => return not_compared(format!("{} values are compared only with {} values", s.entry.dtype, s.entry.dtype)),
            Err(e) => return not_compared(format!("source {}", e.message())),
        };
        let tc = match Codec::for_dtype(&t.entry.dtype) {
            Ok(c) if compare::f32_exact(&c) => c,
            Ok(_) => return not_compared(format!("{} values are compared only with {} values", t.entry.dtype, t.entry.dtype)),
            Err(e) => return not_compared(format!("target {}", e.message())),
        };
        let class = if lossless(&s.entry.dtype, &t.entry.dtype) { Class::Lossless } else { lossy_class(&t.entry.dtype) };
        let step = match class {
            Class::Lossless => "widen",
            _ if is_float(&t.entry.dtype) => "narrow",
            _ => "quantize",
        };
        if !same_type {
            transforms.push(format!("{step}({}→{})", s.entry.dtype, t.entry.dtype));
        }
        Method::Values { source: sc, target: tc, shift, class }
    };
    let spec_units = ReadSpec {
        source: TensorRange { start: 0, len: 0, elements: 0 },
        target: TensorRange { start: 0, len: 0, elements: 0 },
        source_unit: su,
        target_unit: tu,
        rows: 0,
        cols,
        permutation,
        method,
    };
    let piece = spec_units.piece_elements();
    if cols == 0 || !elements.is_multiple_of(cols) || (permutation.is_some() && !cols.is_multiple_of(piece)) || !elements.is_multiple_of(piece) {
        return not_compared(format!(
            "rows of {cols} elements are not a whole number of {piece}-element blocks on both sides"
        ));
    }
    let source = match range_of(s, su, elements, s_len) {
        Ok(r) => r,
        Err(e) => return not_compared(format!("the source tensor cannot be read: {e}")),
    };
    let target = match range_of(t, tu, elements, t_len) {
        Ok(r) => r,
        Err(e) => return not_compared(format!("the target tensor cannot be read: {e}")),
    };
    Work::Compare(ReadSpec { source, target, rows: elements / cols.max(1), ..spec_units })
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
    let ctx = Context { family, identity, target_is_gguf: tf == Format::Gguf, n_head, n_head_kv };
    let architecture = gguf_arch.or_else(|| config.and_then(|c| c.model_type.clone()));

    let s_tensors = side_tensors(source);
    let t_tensors = side_tensors(target);
    let s_len = |t: &TensorRef| source.files.get(t.file).map_or(0, |f| f.size);
    let t_len = |t: &TensorRef| target.files.get(t.file).map_or(0, |f| f.size);
    let t_index: HashMap<&str, usize> = t_tensors.iter().enumerate().map(|(i, t)| (t.entry.name.as_str(), i)).collect();
    let mut used = vec![false; t_tensors.len()];
    let mut pairs = Vec::new();

    for s in &s_tensors {
        let name = s.entry.name.as_str();
        let mapped = if identity { Some(name.to_string()) } else { roles::gguf_name(family, name) };
        let found = mapped.as_deref().and_then(|m| t_index.get(m).copied()).filter(|&i| !used.get(i).copied().unwrap_or(true));
        let Some(ti) = found else {
            let split = target.split_missing.as_ref().filter(|(m, _)| !m.is_empty()).map_or_else(String::new, |(m, n)| {
                let parts: Vec<String> = m.iter().map(u64::to_string).collect();
                format!(" (split part(s) {} of {n} not given)", parts.join(", "))
            });
            let (verdict, reason) = match (roles::dropped_by_converter(family, name), &mapped) {
                (Some(why), _) if !identity => (Verdict::NotCompared, why.to_string()),
                (_, Some(m)) => (Verdict::MissingInTarget, format!("no {m} in the target{split}")),
                (_, None) => (Verdict::MissingInTarget, "no GGUF role known for this name".to_string()),
            };
            pairs.push(PlannedPair {
                source: Some(s.clone()),
                target: None,
                kind: PairKind::OnlySource,
                transforms: Vec::new(),
                work: Work::Decided(Outcome::decided(verdict, reason)),
            });
            continue;
        };
        if let Some(u) = used.get_mut(ti) {
            *u = true;
        }
        let Some(t) = t_tensors.get(ti) else { continue };
        let mut transforms = Vec::new();
        let work = compare_pair(&ctx, s, t, s_len(s), t_len(t), &mut transforms);
        pairs.push(PlannedPair { source: Some(s.clone()), target: Some(t.clone()), kind: PairKind::Paired, transforms, work });
    }

    for (i, t) in t_tensors.iter().enumerate() {
        if used.get(i).copied().unwrap_or(true) {
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
            },
        };
        pairs.push(pair);
    }

    let source_summary = summary(source, s_format);
    let target_summary = summary(target, t_format);
    let reconciliation = reconcile::reconcile(&pairs, source, target, &source_summary, &target_summary);
    Ok(Plan { identity, architecture, source: source_summary, target: target_summary, pairs, reconciliation, notes })
}

/// The pair of a generated target tensor.
fn generated_pair(kind: Generated, t: &TensorRef, t_len: u64, config: Option<&Architecture>) -> PlannedPair {
    let mut pair = PlannedPair {
        source: None,
        target: Some(t.clone()),
        kind: PairKind::Generated,
        transforms: Vec::new(),
        work: Work::Decided(Outcome::decided(Verdict::NotCompared, "")),
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
    pair.work = match range_of(t, unit, n, t_len) {
        Ok(target) => Work::Generated { target, codec, expected },
        Err(e) => Work::Decided(Outcome::decided(Verdict::NotCompared, format!("the tensor cannot be read: {e}"))),
    };
    pair
}

/// One pair in the report (docs/report.md, `audit.pairs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairReport {
    pub source: Option<String>,
    pub target: Option<String>,
    pub source_dtype: Option<String>,
    pub target_dtype: Option<String>,
    pub transforms: Vec<String>,
    pub verdict: Verdict,
    pub count: Option<u64>,
    pub max_abs: Option<f64>,
    pub rmse: Option<f64>,
    pub max_rel: Option<f64>,
    pub requant_exact: Option<bool>,
    pub first_mismatch: Option<Mismatch>,
    pub reason: Option<String>,
    /// A diagnosis of a mismatch ("target equals the source without the Q/K row
    /// permutation").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// For a generated tensor: what its values were checked against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<GeneratedCheck>,
    /// The files the tensors are in (a shard, a split part).
    pub source_file: Option<String>,
    pub target_file: Option<String>,
    /// Row-major shapes.
    pub source_shape: Option<Vec<u64>>,
    pub target_shape: Option<Vec<u64>>,
}

/// What a generated tensor was checked against (the report's `pairs[].generated`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeneratedCheck {
    /// "config.json rope_scaling (rope_type llama3)".
    pub from: String,
    /// The config's parameters used ("factor=32, …"), when there are several.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parameters: String,
    pub expected: Vec<f64>,
    pub rel_tol: f64,
}

/// Pairs by verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub exact: u64,
    pub close: u64,
    pub mismatch: u64,
    pub missing_in_target: u64,
    pub missing_in_source: u64,
    pub generated_ok: u64,
    pub generated_mismatch: u64,
    pub not_compared: u64,
}

impl Summary {
    fn add(&mut self, v: Verdict) {
        let slot = match v {
            Verdict::Exact => &mut self.exact,
            Verdict::Close => &mut self.close,
            Verdict::Mismatch => &mut self.mismatch,
            Verdict::MissingInTarget => &mut self.missing_in_target,
            Verdict::MissingInSource => &mut self.missing_in_source,
            Verdict::GeneratedOk => &mut self.generated_ok,
            Verdict::GeneratedMismatch => &mut self.generated_mismatch,
            Verdict::NotCompared => &mut self.not_compared,
        };
        *slot = slot.saturating_add(1);
    }

    pub fn get(&self, v: Verdict) -> u64 {
        match v {
            Verdict::Exact => self.exact,
            Verdict::Close => self.close,
            Verdict::Mismatch => self.mismatch,
            Verdict::MissingInTarget => self.missing_in_target,
            Verdict::MissingInSource => self.missing_in_source,
            Verdict::GeneratedOk => self.generated_ok,
            Verdict::GeneratedMismatch => self.generated_mismatch,
            Verdict::NotCompared => self.not_compared,
        }
    }
}

/// The report's `audit` object (docs/report.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Audit {
    /// Every pair exact, close or generated_ok.
    pub ok: bool,
    /// False when the audit stopped early (`--first-mismatch`, Cancel).
    pub complete: bool,
    pub architecture: Option<String>,
    /// "conversion" (pairing by role) or "identity" (same format, pairing by name).
    pub mode: String,
    /// "20/20 exact" (exact pairs / source tensors) and the other verdicts' counts.
    pub summary_line: String,
    pub source: SideSummary,
    pub target: SideSummary,
    pub pairs: Vec<PairReport>,
    pub summary: Summary,
    pub reconciliation: Reconciliation,
    pub notes: Vec<String>,
}

impl Audit {
    /// The audit from its plan and the outcome of each pair (`None`: not read, because the
    /// audit stopped first — `stop_reason` says why).
    pub fn assemble(plan: &Plan, outcomes: Vec<Option<Outcome>>, stop_reason: Option<&str>) -> Audit {
        let complete = stop_reason.is_none() && outcomes.len() >= plan.pairs.len() && outcomes.iter().all(Option::is_some);
        let mut summary = Summary::default();
        let mut pairs = Vec::with_capacity(plan.pairs.len());
        for (p, o) in plan.pairs.iter().zip(outcomes.into_iter().chain(std::iter::repeat(None))) {
            let o = match o {
                Some(o) => o,
                None => Outcome::decided(Verdict::NotCompared, format!("not read: {}", stop_reason.unwrap_or("the audit stopped"))),
            };
            summary.add(o.verdict);
            pairs.push(PairReport {
                source: p.source.as_ref().map(|t| t.entry.name.clone()),
                target: p.target.as_ref().map(|t| t.entry.name.clone()),
                source_dtype: p.source.as_ref().map(|t| t.entry.dtype.name().into_owned()),
                target_dtype: p.target.as_ref().map(|t| t.entry.dtype.name().into_owned()),
                transforms: p.transforms.clone(),
                verdict: o.verdict,
                count: o.count,
                max_abs: o.max_abs,
                rmse: o.rmse,
                max_rel: o.max_rel,
                requant_exact: o.requant_exact,
                first_mismatch: o.first_mismatch,
                reason: o.reason,
                hint: o.hint,
                generated: match &p.work {
                    Work::Generated { expected, .. } => Some(GeneratedCheck {
                        from: expected.from.clone(),
                        parameters: expected.parameters.clone(),
                        expected: expected.values.clone(),
                        rel_tol: expected.rel_tol,
                    }),
                    _ => None,
                },
                source_file: p.source.as_ref().map(|t| t.file_name.clone()),
                target_file: p.target.as_ref().map(|t| t.file_name.clone()),
                source_shape: p.source.as_ref().map(|t| t.entry.shape.clone()),
                target_shape: p.target.as_ref().map(|t| t.entry.shape.clone()),
            });
        }
        let ok = pairs.iter().all(|p| p.verdict.is_ok());
        let summary_line = summary_line(&summary, plan.source.tensors);
        Audit {
            ok,
            complete,
            architecture: plan.architecture.clone(),
            mode: if plan.identity { "identity" } else { "conversion" }.to_string(),
            summary_line,
            source: plan.source.clone(),
            target: plan.target.clone(),
            pairs,
            summary,
            reconciliation: plan.reconciliation.clone(),
            notes: plan.notes.clone(),
        }
    }
}

/// "20/20 exact" — exact pairs over source tensors — then the other verdicts that occur
/// ("19/20 exact, 1 mismatch, 1 generated_ok").
pub fn summary_line(s: &Summary, source_tensors: u64) -> String {
    let mut line = format!("{}/{} exact", s.exact, source_tensors);
    for v in Verdict::ALL.iter().skip(1) {
        let n = s.get(*v);
        if n > 0 {
            line.push_str(&format!(", {n} {}", v.name()));
        }
    }
    line
}
