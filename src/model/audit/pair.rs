//! One pair's comparison, planned: the byte ranges of both sides, their units, the
//! rows, the Q/K permutation or gather, and the method — or why the pair is decided
//! without reading.

use super::compare::{self, Class, Method, Outcome, Scale, ScaleStep, Verdict};
use super::permute::QkPermutation;
use super::pieces::Piece;
use super::roles::{self, QkRole, ValueOp};
use super::{ReadSpec, TensorRef, Unit, Work, MAX_PERMUTED_ROW_ELEMENTS};
use crate::dtype::decode::Codec;
use crate::dtype::ggml::GgmlType;
use crate::dtype::quantize::Requant;
use crate::dtype::{Dtype, TensorDtype};
use crate::model::architecture::{Architecture, Family};
use crate::values::TensorRange;

/// Most source bytes a gathered piece (a transposed or de-interleaved expert or head) reads
/// at once: the piece's whole source span is held while the target is read in order.
/// gpt-oss-120b's largest expert (`gate_up_proj`, 2880 × 5760 in BF16) spans 33 MB;
/// 64 MiB leaves room and bounds what a lying shape makes the loop hold.
pub const MAX_GATHER_SOURCE_BYTES: u64 = 64 * 1024 * 1024;

/// The unit of a tensor's type: from its codec, or for a ggml type we do not decode from
/// the type table.
pub(super) fn unit_of(dtype: &TensorDtype) -> Option<Unit> {
    if let Ok(c) = Codec::for_dtype(dtype) {
        return Some(Unit { values: c.unit_values() as u64, bytes: c.unit_bytes() as u64 });
    }
    dtype.ggml().map(|t: GgmlType| Unit { values: t.block_size, bytes: t.type_size })
}

/// The checked byte range of `elements` leading elements of a tensor, in a file of
/// `file_len` bytes.
pub(super) fn range_of(t: &TensorRef, unit: Unit, elements: u64, file_len: u64) -> Result<TensorRange, String> {
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

/// The checked byte range of `elements` elements of a tensor from element `offset` on.
fn sub_range(t: &TensorRef, unit: Unit, offset: u64, elements: u64, file_len: u64) -> Result<TensorRange, String> {
    let all = t.entry.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or("its element count overflows u64")?;
    if offset.checked_add(elements).is_none_or(|end| end > all) {
        return Err(format!("elements {offset}..+{elements} are past its {all}"));
    }
    if unit.values == 0 || !offset.is_multiple_of(unit.values) {
        return Err(format!("element {offset} does not start a {}-element unit of {}", unit.values, t.entry.dtype));
    }
    let whole = range_of(t, unit, all, file_len)?;
    let skip = (offset / unit.values).checked_mul(unit.bytes).ok_or("its byte offset overflows u64")?;
    let len = (elements / unit.values).checked_mul(unit.bytes).ok_or("its byte size overflows u64")?;
    if !elements.is_multiple_of(unit.values) {
        return Err(format!("{elements} elements are not a whole number of {}-element units of {}", unit.values, t.entry.dtype));
    }
    Ok(TensorRange { start: whole.start.saturating_add(skip), len, elements })
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
pub(super) struct Context<'a> {
    pub family: Family,
    pub identity: bool,
    pub target_is_gguf: bool,
    pub n_head: Option<u64>,
    pub n_head_kv: Option<u64>,
    /// config.json (Falcon-H1's multipliers).
    pub config: Option<&'a Architecture>,
}

/// The converter's µP multiplications of a tensor (`roles::mup_steps`) as a [`Scale`] over
/// rows of `cols` elements of a source of `rows` rows, each step named in `transforms`.
fn mup_scale(steps: &[roles::MupStep], rows: u64, cols: u64, transforms: &mut Vec<String>) -> Scale {
    let mut scale = Scale { cols, steps: Vec::new() };
    for step in steps {
        // torch multiplies an f32 tensor by a Python float rounded to f32.
        let factor = step.value as f32;
        let rows = step.rows.map(|(a, b, name)| (a.min(rows), b.min(rows), name));
        match rows {
            None => transforms.push(format!("mup_scale({}={})", step.key, step.value)),
            Some((a, b, name)) => transforms.push(format!("mup_scale({}={} on rows {a}..{b}: {name})", step.key, step.value)),
        }
        scale.steps.push(ScaleStep { factor, rows: rows.map(|(a, b, _)| (a, b)) });
    }
    scale
}

/// Builds the comparison of a source and a target tensor — the whole tensors, or the
/// `piece` of them a sliced pair compares — or decides it.
pub(super) fn compare_pair(
    ctx: &Context<'_>,
    s: &TensorRef,
    t: &TensorRef,
    (s_len, t_len): (u64, u64),
    piece: Option<&Piece>,
    transforms: &mut Vec<String>,
) -> Work {
    let not_compared = |why: String| Work::Decided(Outcome::decided(Verdict::NotCompared, why));
    let (ss, ts) = (&s.entry.shape, &t.entry.shape);
    if !ctx.identity && ctx.target_is_gguf {
        transforms.push("ggml_dims_reversed".into());
    }
    // The elements compared: all, the rows gemma3's converter kept of the embedding, or
    // the piece's.
    let elements = match piece {
        Some(p) => p.elements(),
        None => match ts.iter().try_fold(1u64, |a, &d| a.checked_mul(d)) {
            Some(n) => n,
            None => return not_compared("the target's element count overflows u64".into()),
        },
    };
    let op = if ctx.identity { None } else { roles::value_op(ctx.family, &s.entry.name) };
    if let Some(p) = piece {
        transforms.extend(p.transforms.iter().cloned());
    } else if ss != ts {
        let truncated = ctx.family == Family::Gemma3
            && ss.len() == 2
            && ts.len() == 2
            && ss.get(1) == ts.get(1)
            && ts.first() < ss.first()
            && roles::gguf_name(ctx.family, &s.entry.name).as_deref() == Some("token_embd.weight");
        let count = |x: &[u64]| x.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let reshaped = !ctx.identity && roles::reshaped_by_converter(ctx.family, &t.entry.name) && count(ss) == count(ts);
        if truncated {
            transforms.push(format!(
                "embedding_rows_kept({} of {})",
                ts.first().copied().unwrap_or(0),
                ss.first().copied().unwrap_or(0)
            ));
        } else if reshaped {
            transforms.push(format!("reshape({}→{})", crate::fmt::shape(ss), crate::fmt::shape(ts)));
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
    let role = if ctx.identity || piece.is_some() { None } else { roles::qk_role(ctx.family, &s.entry.name) };
    let cols = if let Some(p) = piece {
        p.cols
    } else if ts.len() >= 2 {
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
    let codecs = || -> Result<(Codec, Codec), String> {
        let sc = match Codec::for_dtype(&s.entry.dtype) {
            Ok(c) if compare::f32_exact(&c) => c,
            Ok(_) => return Err(format!("{} values are compared only with {} values", s.entry.dtype, s.entry.dtype)),
            Err(e) => return Err(format!("source {}", e.message())),
        };
        let tc = match Codec::for_dtype(&t.entry.dtype) {
            Ok(c) if compare::f32_exact(&c) => c,
            Ok(_) => return Err(format!("{} values are compared only with {} values", t.entry.dtype, t.entry.dtype)),
            Err(e) => return Err(format!("target {}", e.message())),
        };
        Ok((sc, tc))
    };
    let mup = if ctx.identity { None } else { roles::mup_steps(ctx.family, &s.entry.name, ctx.config) };
    let method = if let Some(steps) = mup {
        let steps = match steps {
            Ok(s) => s,
            Err(why) => return not_compared(why),
        };
        if piece.is_some() || permutation.is_some() || shift != 0.0 || op.is_some() {
            return not_compared("a tensor the converter scales is compared whole, with no other value transform".into());
        }
        if ss.len() != 2 && steps.iter().any(|st| st.rows.is_some()) {
            return not_compared("the converter scales row blocks of this tensor, which has no rows".into());
        }
        let (source, target) = match codecs() {
            Ok(c) => c,
            Err(e) => return not_compared(e),
        };
        if matches!(source, Codec::F16) {
            // The converter widens every type but F16 to f32 first (conversion/base.py
            // `prepare_tensors`); an F16 tensor is scaled by torch in F16, one rounding per
            // product: not what is redone here.
            return not_compared("the converter scales an F16 tensor in F16 (it widens only other types to f32): not checked".into());
        }
        if !matches!(source, Codec::F32) {
            transforms.push(format!("widen({}→F32)", s.entry.dtype));
        }
        // Rows of a 2-D source (`[out, in]`); a 1-D one is one row.
        let (rows, row_len) = match ss.as_slice() {
            [r, c] => (*r, *c),
            _ => (1, elements),
        };
        let scale = mup_scale(&steps, rows, row_len, transforms);
        let (round, class) = match Requant::from_name(&t.entry.dtype.name()) {
            Some(r) if r.block_values() == 1 => (Some(r), Class::Lossless),
            _ if matches!(target, Codec::F32) => (None, Class::Lossless),
            _ => (None, lossy_class(&t.entry.dtype)),
        };
        match (round, &class) {
            (Some(_), _) => transforms.push(format!("narrow(F32→{})", t.entry.dtype)),
            (None, Class::Lossless) => {}
            _ => transforms.push(format!("quantize(F32→{})", t.entry.dtype)),
        }
        Method::Scaled { source, target, scale, round, class }
    } else if let Some(ValueOp::NegExp) = op {
        let (source, target) = match codecs() {
            Ok(c) => c,
            Err(e) => return not_compared(e),
        };
        if !matches!(target, Codec::F32) {
            return not_compared(format!("A = -exp(A_log) is checked in F32 only; the target is {}", t.entry.dtype));
        }
        transforms.push("neg_exp(A = -exp(A_log))".into());
        if !same_type {
            transforms.push(format!("widen({}→{})", s.entry.dtype, t.entry.dtype));
        }
        Method::NegExp { source, target }
    } else if same_type && shift == 0.0 {
        let codec = Codec::for_dtype(&s.entry.dtype).ok();
        Method::Bytes { codec, unit_values: su.values as usize, unit_bytes: su.bytes as usize }
    } else {
        let (sc, tc) = match codecs() {
            Ok(c) => c,
            Err(e) => return not_compared(e),
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
    let gather = piece.and_then(|p| p.gather);
    let spec_units = ReadSpec {
        source: TensorRange { start: 0, len: 0, elements: 0 },
        target: TensorRange { start: 0, len: 0, elements: 0 },
        source_unit: su,
        target_unit: tu,
        rows: 0,
        cols,
        permutation,
        method,
        source_index_base: piece.map_or(0, |p| p.source_offset),
        gather,
    };
    let piece_elements = spec_units.piece_elements();
    let rows_whole = permutation.is_some() || gather.is_some();
    if cols == 0 || !elements.is_multiple_of(cols) || (rows_whole && !cols.is_multiple_of(piece_elements)) || !elements.is_multiple_of(piece_elements) {
        return not_compared(format!(
            "rows of {cols} elements are not a whole number of {piece_elements}-element blocks on both sides"
        ));
    }
    if gather.is_some() && su.values != 1 {
        return not_compared(format!("a transposed or interleaved piece is read from an element type, not {}", s.entry.dtype));
    }
    let (s_offset, s_elements) = match piece {
        Some(p) => (p.source_offset, p.source_span()),
        None => (0, elements),
    };
    let source = match sub_range(s, su, s_offset, s_elements, s_len) {
        Ok(r) => r,
        Err(e) => return not_compared(format!("the source tensor cannot be read: {e}")),
    };
    if gather.is_some() && source.len > MAX_GATHER_SOURCE_BYTES {
        return not_compared(format!("the piece spans {} source bytes, more than the {MAX_GATHER_SOURCE_BYTES} read at once for a transposed piece", source.len));
    }
    let target = match sub_range(t, tu, piece.map_or(0, |p| p.target_offset), elements, t_len) {
        Ok(r) => r,
        Err(e) => return not_compared(format!("the target tensor cannot be read: {e}")),
    };
    Work::Compare(ReadSpec { source, target, rows: elements / cols.max(1), ..spec_units })
}
