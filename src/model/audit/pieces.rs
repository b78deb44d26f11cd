//! Sliced pairs: where llama.cpp's converter moves a source tensor into a part of a target
//! tensor, or parts of one source tensor into several targets, each part is a pair of its
//! own, so a mismatch names the expert, head or half it is in.
//!
//! Facts (no code) from the converter vendored in llama-cpp-python 0.3.36
//! (`conversion/base.py`, `qwen.py`, `deepseek.py`, `gpt_oss.py`, `granite.py`):
//! - **expert stacking** (qwen3moe, deepseek2 and every per-expert checkpoint):
//!   `mlp.experts.{e}.{gate,up,down}_proj.weight` are stacked with `torch.stack(dim=0)`
//!   into `ffn_{gate,up,down}_exps.weight`, row-major `[E, out, in]`: expert `e` is the
//!   `e`-th contiguous slice;
//! - **gpt-oss** keeps its experts fused, `[E, in, out]`: `gate_up_proj [E, n_embd, 2·n_ff]`
//!   is transposed and de-interleaved — even rows `ffn_gate_exps`, odd rows `ffn_up_exps`
//!   (`[E, n_ff, n_embd]`); `gate_up_proj_bias [E, 2·n_ff]` likewise (`[..., 0::2]` /
//!   `[..., 1::2]`); `down_proj [E, n_ff, n_embd]` is transposed into `ffn_down_exps`;
//!   `down_proj_bias` is copied;
//! - **granite** (`block_sparse_moe.input_linear [E, 2·n_ff, n_embd]`) is split in halves
//!   on dim −2: the first `ffn_gate_exps`, the second `ffn_up_exps`; `output_linear` is
//!   `ffn_down_exps` as is; `shared_mlp.input_linear [2·n_sh, n_embd]` is split in halves
//!   into `ffn_gate_shexp` / `ffn_up_shexp`;
//! - **Llama 4** (`conversion/llama.py` `Llama4Model`) `feed_forward.experts.gate_up_proj
//!   [E, n_embd, 2·n_ff]` is transposed and split in halves: the first `n_ff` columns
//!   `ffn_gate_exps`, the rest `ffn_up_exps` (`[E, n_ff, n_embd]`); `down_proj [E, n_ff,
//!   n_embd]` is transposed into `ffn_down_exps`;
//! - **DeepSeek's MLA** `kv_b_proj [H·(nope + v), kv_lora]` is viewed as
//!   `[H, nope + v, kv_lora]`, split on dim 1: `attn_k_b` is the first `nope` rows of each
//!   head transposed (`[H, kv_lora, nope]`), `attn_v_b` the other `v` rows
//!   (`[H, v, kv_lora]`); no `attn_kv_b` is written.
//!
//! - **Qwen3-Next's gated delta-net** `linear_attn.in_proj_qkvz [nk · (2·hk + 2·r·hv),
//!   hidden]` holds per key head `g` the rows `q` (hk), `k` (hk), `v` (r·hv), `z` (r·hv)
//!   (r = value heads per key head); the converter regroups them (`conversion/qwen.py`
//!   `Qwen3NextModel.modify_tensors`) into `attn_qkv` = all q, then all k, then all v, and
//!   `attn_gate` = all z: each (head, part) is a contiguous block of rows on both sides.
//!
//! Every size is read from the two tensors' shapes, which must agree with each other (and,
//! for Qwen3-Next's heads, with config.json's `linear_*` keys).

use crate::model::architecture::{Architecture, Family};
use serde::{Deserialize, Serialize};

/// Which part of a tensor a pair compares (the report's `pairs[].part`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// "expert", "head" or "half".
    pub kind: String,
    /// 0-based, of `count`.
    pub index: u64,
    pub count: u64,
    /// Which piece of a split source this is ("gate", "up", "k", "v").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
}

impl Part {
    fn new(kind: &str, index: u64, count: u64, split: Option<&str>) -> Part {
        Part { kind: kind.into(), index, count, split: split.map(str::to_string) }
    }

    /// "expert 5 of 8 (gate)".
    pub fn label(&self) -> String {
        let split = self.split.as_deref().map_or_else(String::new, |s| format!(" ({s})"));
        format!("{} {} of {}{split}", self.kind, self.index, self.count)
    }
}

/// A source view read in the target's order: target element `(r, c)` of the piece is
/// source element `source_offset + r·row_stride + c·col_stride` (a transpose, a stride-2
/// de-interleave).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gather {
    pub row_stride: u64,
    pub col_stride: u64,
}

/// One part of a sliced pair, in elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    pub target: String,
    pub part: Part,
    /// What the converter did to this part, in order (after `ggml_dims_reversed`).
    pub transforms: Vec<String>,
    /// Source elements before the piece's first one (row-major).
    pub source_offset: u64,
    /// Target elements before the piece's first one.
    pub target_offset: u64,
    /// The piece's rows and row length in the target.
    pub rows: u64,
    pub cols: u64,
    /// `None`: the piece is `rows · cols` contiguous source elements.
    pub gather: Option<Gather>,
}

impl Piece {
    pub fn elements(&self) -> u64 {
        self.rows.saturating_mul(self.cols)
    }

    /// Source elements from the first the piece reads to one past its last.
    pub fn source_span(&self) -> u64 {
        match self.gather {
            None => self.elements(),
            Some(g) => {
                let last = self.rows.saturating_sub(1).saturating_mul(g.row_stride).saturating_add(self.cols.saturating_sub(1).saturating_mul(g.col_stride));
                last.saturating_add(1)
            }
        }
    }
}

/// Where a source tensor goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Mapping {
    /// One target tensor, whole (the dense path; `None`: no role known).
    Whole(Option<String>),
    /// Parts of one or more targets.
    Pieces(Vec<Piece>),
    /// The targets are there but their shapes do not fit the source: the first target and
    /// why.
    Unfit { target: String, why: String },
}

/// The shape of a target tensor (row-major), `None` when the target has no such tensor.
pub type TargetShape<'a> = &'a dyn Fn(&str) -> Option<Vec<u64>>;

fn dims3(s: &[u64]) -> Option<(u64, u64, u64)> {
    match s {
        [a, b, c] => Some((*a, *b, *c)),
        _ => None,
    }
}

fn dims2(s: &[u64]) -> Option<(u64, u64)> {
    match s {
        [a, b] => Some((*a, *b)),
        _ => None,
    }
}

fn unfit(target: &str, source: &[u64], t: &[u64], rule: &str) -> Mapping {
    Mapping::Unfit {
        target: target.to_string(),
        why: format!(
            "shape {} in the source and {} in the target do not fit {rule}",
            crate::fmt::shape(source),
            crate::fmt::shape(t)
        ),
    }
}

fn expert_transform(e: u64, n: u64) -> String {
    format!("expert_slice(expert={e} of {n})")
}

/// `mlp.experts.{e}.{proj}_proj.weight` (Mixtral's `block_sparse_moe.experts.{e}.w1` /
/// `w3` / `w2`: gate, up, down) → expert `e` of `ffn_{proj}_exps.weight`.
fn per_expert(layer: u64, module: &str, source: &[u64], shape: TargetShape<'_>) -> Option<Mapping> {
    let rest = module.strip_prefix("mlp.experts.").or_else(|| module.strip_prefix("block_sparse_moe.experts."))?;
    let (e, proj) = rest.split_once('.')?;
    let e: u64 = e.parse().ok()?;
    let role = match proj {
        "gate_proj.weight" | "w1.weight" => "gate",
        "up_proj.weight" | "w3.weight" => "up",
        "down_proj.weight" | "w2.weight" => "down",
        _ => return None,
    };
    let target = format!("blk.{layer}.ffn_{role}_exps.weight");
    let Some(t) = shape(&target) else { return Some(Mapping::Whole(Some(target))) };
    let (Some((rows, cols)), Some((n, tr, tc))) = (dims2(source), dims3(&t)) else {
        return Some(unfit(&target, source, &t, "a stack of 2-D experts"));
    };
    if (tr, tc) != (rows, cols) || e >= n {
        return Some(unfit(&target, source, &t, &format!("expert {e} of a stack of [{rows}, {cols}] experts")));
    }
    let piece = Piece {
        target,
        part: Part::new("expert", e, n, None),
        transforms: match proj.strip_suffix(".weight").filter(|w| w.starts_with('w')) {
            Some(w) => vec![format!("rename({w} = {role})"), expert_transform(e, n)],
            None => vec![expert_transform(e, n)],
        },
        source_offset: 0,
        target_offset: e.saturating_mul(rows).saturating_mul(cols),
        rows,
        cols,
        gather: None,
    };
    Some(Mapping::Pieces(vec![piece]))
}

/// gpt-oss's fused experts.
fn gpt_oss(layer: u64, module: &str, source: &[u64], shape: TargetShape<'_>) -> Option<Mapping> {
    let blk = |t: &str| format!("blk.{layer}.{t}");
    let split_targets = |suffix: &str| [("gate", 0u64, blk(&format!("ffn_gate_exps.{suffix}"))), ("up", 1, blk(&format!("ffn_up_exps.{suffix}")))];
    let mut pieces = Vec::new();
    match module {
        "mlp.experts.gate_up_proj" => {
            for (split, parity, target) in split_targets("weight") {
                let Some(t) = shape(&target) else { return Some(Mapping::Whole(Some(target))) };
                let (Some((n, h, f2)), Some((tn, f, th))) = (dims3(source), dims3(&t)) else {
                    return Some(unfit(&target, source, &t, "gpt-oss's [E, n_embd, 2·n_ff] → [E, n_ff, n_embd]"));
                };
                if tn != n || th != h || f.checked_mul(2) != Some(f2) {
                    return Some(unfit(&target, source, &t, "gpt-oss's [E, n_embd, 2·n_ff] → [E, n_ff, n_embd]"));
                }
                for e in 0..n {
                    pieces.push(Piece {
                        target: target.clone(),
                        part: Part::new("expert", e, n, Some(split)),
                        transforms: vec![format!("deinterleave({split}: columns {parity}::2)"), "transpose".into(), expert_transform(e, n)],
                        source_offset: e.saturating_mul(h).saturating_mul(f2).saturating_add(parity),
                        target_offset: e.saturating_mul(f).saturating_mul(h),
                        rows: f,
                        cols: h,
                        gather: Some(Gather { row_stride: 2, col_stride: f2 }),
                    });
                }
            }
        }
        "mlp.experts.gate_up_proj_bias" => {
            for (split, parity, target) in split_targets("bias") {
                let Some(t) = shape(&target) else { return Some(Mapping::Whole(Some(target))) };
                let (Some((n, f2)), Some((tn, f))) = (dims2(source), dims2(&t)) else {
                    return Some(unfit(&target, source, &t, "gpt-oss's [E, 2·n_ff] → [E, n_ff]"));
                };
                if tn != n || f.checked_mul(2) != Some(f2) {
                    return Some(unfit(&target, source, &t, "gpt-oss's [E, 2·n_ff] → [E, n_ff]"));
                }
                for e in 0..n {
                    pieces.push(Piece {
                        target: target.clone(),
                        part: Part::new("expert", e, n, Some(split)),
                        transforms: vec![format!("deinterleave({split}: columns {parity}::2)"), expert_transform(e, n)],
                        source_offset: e.saturating_mul(f2).saturating_add(parity),
                        target_offset: e.saturating_mul(f),
                        rows: 1,
                        cols: f,
                        gather: Some(Gather { row_stride: 0, col_stride: 2 }),
                    });
                }
            }
        }
        "mlp.experts.down_proj" => return Some(transposed_down(&blk("ffn_down_exps.weight"), source, shape, "gpt-oss's")),
        "mlp.experts.down_proj_bias" => return Some(expert_rows(&blk("ffn_down_exps.bias"), source, shape, &[])),
        _ => return None,
    }
    Some(Mapping::Pieces(pieces))
}

/// A fused `down_proj [E, n_ff, n_embd]` transposed expert by expert into `target [E,
/// n_embd, n_ff]` (gpt-oss, Llama 4).
fn transposed_down(target: &str, source: &[u64], shape: TargetShape<'_>, whose: &str) -> Mapping {
    let Some(t) = shape(target) else { return Mapping::Whole(Some(target.to_string())) };
    let rule = format!("{whose} [E, n_ff, n_embd] → [E, n_embd, n_ff]");
    let (Some((n, f, h)), Some((tn, th, tf))) = (dims3(source), dims3(&t)) else { return unfit(target, source, &t, &rule) };
    if (tn, th, tf) != (n, h, f) {
        return unfit(target, source, &t, &rule);
    }
    let pieces = (0..n)
        .map(|e| Piece {
            target: target.to_string(),
            part: Part::new("expert", e, n, None),
            transforms: vec!["transpose".into(), expert_transform(e, n)],
            source_offset: e.saturating_mul(f).saturating_mul(h),
            target_offset: e.saturating_mul(h).saturating_mul(f),
            rows: h,
            cols: f,
            gather: Some(Gather { row_stride: 1, col_stride: h }),
        })
        .collect();
    Mapping::Pieces(pieces)
}

/// Llama 4's fused experts.
fn llama4(layer: u64, module: &str, source: &[u64], shape: TargetShape<'_>) -> Option<Mapping> {
    let blk = |t: &str| format!("blk.{layer}.{t}");
    let mut pieces = Vec::new();
    match module {
        "feed_forward.experts.gate_up_proj" => {
            for (split, half, target) in [("gate", 0u64, blk("ffn_gate_exps.weight")), ("up", 1, blk("ffn_up_exps.weight"))] {
                let Some(t) = shape(&target) else { return Some(Mapping::Whole(Some(target))) };
                let rule = "Llama 4's [E, n_embd, 2·n_ff] → [E, n_ff, n_embd] halves";
                let (Some((n, h, f2)), Some((tn, f, th))) = (dims3(source), dims3(&t)) else { return Some(unfit(&target, source, &t, rule)) };
                if tn != n || th != h || f.checked_mul(2) != Some(f2) {
                    return Some(unfit(&target, source, &t, rule));
                }
                let half_name = if half == 0 { "first" } else { "second" };
                for e in 0..n {
                    pieces.push(Piece {
                        target: target.clone(),
                        part: Part::new("expert", e, n, Some(split)),
                        transforms: vec![format!("halves_split({split}: {half_name} half of dim -1)"), "transpose".into(), expert_transform(e, n)],
                        source_offset: e.saturating_mul(h).saturating_mul(f2).saturating_add(half.saturating_mul(f)),
                        target_offset: e.saturating_mul(f).saturating_mul(h),
                        rows: f,
                        cols: h,
                        gather: Some(Gather { row_stride: 1, col_stride: f2 }),
                    });
                }
            }
        }
        "feed_forward.experts.down_proj" => return Some(transposed_down(&blk("ffn_down_exps.weight"), source, shape, "Llama 4's")),
        _ => return None,
    }
    Some(Mapping::Pieces(pieces))
}

/// A fused `[E, …]` source whose experts are the target's as they are: one contiguous
/// piece per expert (granite's `output_linear`, gpt-oss's `down_proj_bias`, and every
/// fused expert tensor compared with itself).
fn expert_rows(target: &str, source: &[u64], shape: TargetShape<'_>, before: &[String]) -> Mapping {
    let Some(t) = shape(target) else { return Mapping::Whole(Some(target.to_string())) };
    let Some((&n, rest)) = source.split_first() else { return unfit(target, source, &t, "a stack of experts") };
    if t != source || n == 0 {
        return unfit(target, source, &t, "a stack of experts");
    }
    let Some(per) = rest.iter().try_fold(1u64, |a, &d| a.checked_mul(d)) else { return unfit(target, source, &t, "a stack of experts") };
    let cols = rest.last().copied().unwrap_or(1);
    let pieces = (0..n)
        .map(|e| {
            let mut transforms = before.to_vec();
            transforms.push(expert_transform(e, n));
            Piece {
                target: target.to_string(),
                part: Part::new("expert", e, n, None),
                transforms,
                source_offset: e.saturating_mul(per),
                target_offset: e.saturating_mul(per),
                rows: per / cols.max(1),
                cols,
                gather: None,
            }
        })
        .collect();
    Mapping::Pieces(pieces)
}

/// Granite's fused experts and shared MLP (halves).
fn granite(layer: u64, module: &str, source: &[u64], shape: TargetShape<'_>) -> Option<Mapping> {
    let blk = |t: &str| format!("blk.{layer}.{t}");
    let mut pieces = Vec::new();
    match module {
        "block_sparse_moe.input_linear.weight" => {
            for (split, half, target) in [("gate", 0u64, blk("ffn_gate_exps.weight")), ("up", 1, blk("ffn_up_exps.weight"))] {
                let Some(t) = shape(&target) else { return Some(Mapping::Whole(Some(target))) };
                let (Some((n, f2, h)), Some((tn, f, th))) = (dims3(source), dims3(&t)) else {
                    return Some(unfit(&target, source, &t, "granite's [E, 2·n_ff, n_embd] halves"));
                };
                if tn != n || th != h || f.checked_mul(2) != Some(f2) {
                    return Some(unfit(&target, source, &t, "granite's [E, 2·n_ff, n_embd] halves"));
                }
                let half_name = if half == 0 { "first" } else { "second" };
                for e in 0..n {
                    pieces.push(Piece {
                        target: target.clone(),
                        part: Part::new("expert", e, n, Some(split)),
                        transforms: vec![format!("halves_split({split}: {half_name} half of dim -2)"), expert_transform(e, n)],
                        source_offset: e.saturating_mul(f2).saturating_add(half.saturating_mul(f)).saturating_mul(h),
                        target_offset: e.saturating_mul(f).saturating_mul(h),
                        rows: f,
                        cols: h,
                        gather: None,
                    });
                }
            }
        }
        "block_sparse_moe.output_linear.weight" => return Some(expert_rows(&blk("ffn_down_exps.weight"), source, shape, &[])),
        "shared_mlp.input_linear.weight" => {
            for (split, half, target) in [("gate", 0u64, blk("ffn_gate_shexp.weight")), ("up", 1, blk("ffn_up_shexp.weight"))] {
                let Some(t) = shape(&target) else { return Some(Mapping::Whole(Some(target))) };
                let (Some((f2, h)), Some((f, th))) = (dims2(source), dims2(&t)) else {
                    return Some(unfit(&target, source, &t, "granite's [2·n_shared, n_embd] halves"));
                };
                if th != h || f.checked_mul(2) != Some(f2) {
                    return Some(unfit(&target, source, &t, "granite's [2·n_shared, n_embd] halves"));
                }
                let half_name = if half == 0 { "first" } else { "second" };
                pieces.push(Piece {
                    target,
                    part: Part::new("half", half, 2, Some(split)),
                    transforms: vec![format!("halves_split({split}: {half_name} half of dim -2)")],
                    source_offset: half.saturating_mul(f).saturating_mul(h),
                    target_offset: 0,
                    rows: f,
                    cols: h,
                    gather: None,
                });
            }
        }
        _ => return None,
    }
    Some(Mapping::Pieces(pieces))
}

/// DeepSeek's `kv_b_proj` → `attn_k_b` (transposed, per head) and `attn_v_b` (per head).
fn kv_b(layer: u64, source: &[u64], shape: TargetShape<'_>) -> Mapping {
    let (kt, vt) = (format!("blk.{layer}.attn_k_b.weight"), format!("blk.{layer}.attn_v_b.weight"));
    let Some(k) = shape(&kt) else { return Mapping::Whole(Some(kt)) };
    let Some(v) = shape(&vt) else { return Mapping::Whole(Some(vt)) };
    let rule = "kv_b_proj [H·(nope + v), kv_lora] → attn_k_b [H, kv_lora, nope] + attn_v_b [H, v, kv_lora]";
    let (Some((rows, c)), Some((hk, kc, nope)), Some((hv, vh, vc))) = (dims2(source), dims3(&k), dims3(&v)) else {
        return unfit(&kt, source, &k, rule);
    };
    let per = nope.saturating_add(vh);
    if hk != hv || kc != c || vc != c || hk.checked_mul(per) != Some(rows) || hk == 0 {
        return unfit(&kt, source, &k, rule);
    }
    let mut pieces = Vec::new();
    for h in 0..hk {
        let head0 = h.saturating_mul(per).saturating_mul(c);
        pieces.push(Piece {
            target: kt.clone(),
            part: Part::new("head", h, hk, Some("k")),
            transforms: vec![format!("kv_b_split(k: rows 0..{nope} of each head)"), "transpose".into(), format!("head_slice(head={h} of {hk})")],
            source_offset: head0,
            target_offset: h.saturating_mul(c).saturating_mul(nope),
            rows: c,
            cols: nope,
            gather: Some(Gather { row_stride: 1, col_stride: c }),
        });
    }
    for h in 0..hk {
        let head0 = h.saturating_mul(per).saturating_mul(c);
        pieces.push(Piece {
            target: vt.clone(),
            part: Part::new("head", h, hk, Some("v")),
            transforms: vec![format!("kv_b_split(v: rows {nope}..{per} of each head)"), format!("head_slice(head={h} of {hk})")],
            source_offset: head0.saturating_add(nope.saturating_mul(c)),
            target_offset: h.saturating_mul(vh).saturating_mul(c),
            rows: vh,
            cols: c,
            gather: None,
        });
    }
    Mapping::Pieces(pieces)
}

/// Qwen3-Next's `in_proj_qkvz` → `attn_qkv` (q, k, v per key head) and `attn_gate` (z).
fn qkvz(layer: u64, source: &[u64], shape: TargetShape<'_>, config: Option<&Architecture>) -> Mapping {
    let (qt, zt) = (format!("blk.{layer}.attn_qkv.weight"), format!("blk.{layer}.attn_gate.weight"));
    let Some(q) = shape(&qt) else { return Mapping::Whole(Some(qt)) };
    let Some(z) = shape(&zt) else { return Mapping::Whole(Some(zt)) };
    let rule = "in_proj_qkvz [nk·(2·hk + 2·r·hv), hidden] → attn_qkv [nk·(2·hk + r·hv), hidden] + attn_gate [nk·r·hv, hidden] (config.json's linear_* heads)";
    let key = |k: &str| config.and_then(|c| c.raw.get(k)).and_then(serde_json::Value::as_u64).filter(|n| *n > 0 && *n <= 1 << 32);
    let dims = (key("linear_num_key_heads"), key("linear_num_value_heads"), key("linear_key_head_dim"), key("linear_value_head_dim"));
    let (Some((rows, h)), Some((qr, qh)), Some((zr, zh)), (Some(nk), Some(nv), Some(hk), Some(hv))) = (dims2(source), dims2(&q), dims2(&z), dims) else {
        return unfit(&qt, source, &q, rule);
    };
    let r = nv / nk;
    let sizes = || -> Option<(u64, u64, u64, u64)> {
        let vz = r.checked_mul(hv)?;
        let qkv = hk.checked_mul(2)?.checked_add(vz)?;
        let per = qkv.checked_add(vz)?;
        Some((vz, per, nk.checked_mul(per)?, nk.checked_mul(qkv)?))
    };
    let Some((vz, per, want_rows, want_qkv)) = sizes() else { return unfit(&qt, source, &q, rule) };
    if nv % nk != 0 || qh != h || zh != h || rows != want_rows || qr != want_qkv || Some(zr) != nk.checked_mul(vz) {
        return unfit(&qt, source, &q, rule);
    }
    // Every row index below is under `rows` (checked above): no product overflows.
    let mut pieces = Vec::new();
    // (split, rows, row within a source head, first target row of head 0, target)
    let parts = [("q", hk, 0, 0, &qt), ("k", hk, hk, nk * hk, &qt), ("v", vz, 2 * hk, 2 * nk * hk, &qt), ("z", vz, 2 * hk + vz, 0, &zt)];
    let elements = |row: u64| row.saturating_mul(h);
    for (split, n_rows, within, first, target) in parts {
        for g in 0..nk {
            pieces.push(Piece {
                target: target.clone(),
                part: Part::new("head", g, nk, Some(split)),
                transforms: vec![format!("qkvz_regroup({split}: rows {within}..{} of key head {g} of {nk})", within + n_rows)],
                source_offset: elements(g * per + within),
                target_offset: elements(first + g * n_rows),
                rows: n_rows,
                cols: h,
                gather: None,
            });
        }
    }
    Mapping::Pieces(pieces)
}

/// Where the converter puts the source tensor `hf` (`source` its row-major shape; `config`
/// for the head counts a split cannot read from the shapes).
pub fn mapping(family: Family, hf: &str, source: &[u64], shape: TargetShape<'_>, config: Option<&Architecture>) -> Mapping {
    let whole = || Mapping::Whole(super::roles::gguf_name(family, hf));
    let Some((layer, module)) = super::roles::layer_of(hf) else { return whole() };
    let sliced = match family {
        Family::Qwen3Moe | Family::Deepseek2 | Family::Mixtral | Family::Olmoe | Family::Glm4Moe | Family::Qwen3Next | Family::Unknown => {
            per_expert(layer, module, source, shape)
        }
        Family::GptOss => gpt_oss(layer, module, source, shape),
        Family::GraniteHybrid => granite(layer, module, source, shape),
        Family::Llama4 => llama4(layer, module, source, shape),
        _ => None,
    };
    if let Some(m) = sliced {
        return m;
    }
    if family == Family::Deepseek2 && module == "self_attn.kv_b_proj.weight" {
        return kv_b(layer, source, shape);
    }
    if family == Family::Qwen3Next && module == "linear_attn.in_proj_qkvz.weight" {
        return qkvz(layer, source, shape, config);
    }
    whole()
}

/// Whether a tensor is a fused stack of experts on its first dim (gpt-oss's
/// `mlp.experts.*`, granite's `block_sparse_moe.{input,output}_linear`, Llama 4's
/// `feed_forward.experts.*`): compared with itself expert by expert.
pub fn fused_experts(hf: &str) -> bool {
    let Some((_, module)) = super::roles::layer_of(hf) else { return false };
    let fused = module.strip_prefix("mlp.experts.").or_else(|| module.strip_prefix("feed_forward.experts.")).is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit()));
    fused || matches!(module, "block_sparse_moe.input_linear.weight" | "block_sparse_moe.output_linear.weight")
}

/// The pieces of a fused expert tensor compared with the same tensor of another model.
pub fn identity_pieces(hf: &str, source: &[u64], target: &[u64]) -> Option<Vec<Piece>> {
    if !fused_experts(hf) || source.len() < 2 {
        return None;
    }
    let shape = |_: &str| Some(target.to_vec());
    match expert_rows(hf, source, &shape, &[]) {
        Mapping::Pieces(p) => Some(p),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy's `w.transpose(-1, -2)[:, parity::2, :]` for one expert, index by index.
    #[test]
    fn gpt_oss_gate_is_the_transposed_even_columns() {
        let (n, h, f) = (2u64, 3u64, 2u64);
        let shape = |t: &str| if t.contains("exps.weight") { Some(vec![n, f, h]) } else { None };
        let Mapping::Pieces(p) = mapping(Family::GptOss, "model.layers.0.mlp.experts.gate_up_proj", &[n, h, 2 * f], &shape, None) else { panic!() };
        assert_eq!(p.len(), 4);
        let up1 = p.iter().find(|p| p.part.split.as_deref() == Some("up") && p.part.index == 1).unwrap();
        let g = up1.gather.unwrap();
        for j in 0..f {
            for i in 0..h {
                // target[e=1][j][i] = source[1][i][2j+1]
                let src = 1 * h * 2 * f + i * 2 * f + 2 * j + 1;
                assert_eq!(up1.source_offset + j * g.row_stride + i * g.col_stride, src);
            }
        }
        assert_eq!(up1.target_offset, f * h);
        assert_eq!(up1.source_span(), (f - 1) * 2 + (h - 1) * 2 * f + 1);
    }

    #[test]
    fn kv_b_heads() {
        let (heads, nope, v, c) = (2u64, 3u64, 2u64, 4u64);
        let shape = |t: &str| match t {
            "blk.1.attn_k_b.weight" => Some(vec![heads, c, nope]),
            "blk.1.attn_v_b.weight" => Some(vec![heads, v, c]),
            _ => None,
        };
        let Mapping::Pieces(p) = mapping(Family::Deepseek2, "model.layers.1.self_attn.kv_b_proj.weight", &[heads * (nope + v), c], &shape, None) else { panic!() };
        assert_eq!(p.len(), 4);
        let k1 = &p[1];
        let g = k1.gather.unwrap();
        // attn_k_b[h][col][n] = kv_b[h·(nope+v) + n][col]
        assert_eq!(k1.source_offset + 2 * g.row_stride + 1 * g.col_stride, (1 * (nope + v) + 1) * c + 2);
        assert_eq!((p[3].source_offset, p[3].target_offset), (((nope + v) + nope) * c, v * c));
        assert_eq!(p[3].part.label(), "head 1 of 2 (v)");
        let bad = |_: &str| Some(vec![heads, c, nope + 1]);
        assert!(matches!(mapping(Family::Deepseek2, "model.layers.1.self_attn.kv_b_proj.weight", &[heads * (nope + v), c], &bad, None), Mapping::Unfit { .. }));
    }

    /// Qwen3-Next's regrouping, against the converter's torch code run by hand for nk 2,
    /// hk 1, nv 4, hv 1 (r 2): per head [q, k, v0, v1, z0, z1] → qkv [q0 q1 k0 k1 v00 v01
    /// v10 v11], gate [z00 z01 z10 z11].
    #[test]
    fn qkvz_regrouped_per_key_head() {
        let config = serde_json::json!({"model_type": "qwen3_next", "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 1, "linear_value_head_dim": 1});
        let (arch, _) = Architecture::from_config(&config, "config.json");
        let shape = |t: &str| match t {
            "blk.0.attn_qkv.weight" => Some(vec![8, 3]),
            "blk.0.attn_gate.weight" => Some(vec![4, 3]),
            _ => None,
        };
        let Mapping::Pieces(p) = mapping(Family::Qwen3Next, "model.layers.0.linear_attn.in_proj_qkvz.weight", &[12, 3], &shape, Some(&arch)) else { panic!() };
        assert_eq!(p.len(), 8);
        // source row of each target row, from the pieces
        let mut qkv = vec![u64::MAX; 8];
        let mut gate = vec![u64::MAX; 4];
        for piece in &p {
            let rows = if piece.target.ends_with("attn_qkv.weight") { &mut qkv } else { &mut gate };
            for r in 0..piece.rows {
                rows[(piece.target_offset / 3 + r) as usize] = piece.source_offset / 3 + r;
            }
        }
        assert_eq!(qkv, [0, 6, 1, 7, 2, 3, 8, 9]);
        assert_eq!(gate, [4, 5, 10, 11]);
        assert!(matches!(mapping(Family::Qwen3Next, "model.layers.0.linear_attn.in_proj_qkvz.weight", &[12, 3], &shape, None), Mapping::Unfit { .. }));
    }

    #[test]
    fn stacked_experts_and_halves() {
        let shape = |t: &str| (t == "blk.0.ffn_up_exps.weight").then(|| vec![8, 32, 64]);
        let Mapping::Pieces(p) = mapping(Family::Qwen3Moe, "model.layers.0.mlp.experts.5.up_proj.weight", &[32, 64], &shape, None) else { panic!() };
        assert_eq!((p[0].target_offset, p[0].part.label()), (5 * 32 * 64, "expert 5 of 8".to_string()));
        assert_eq!(mapping(Family::Qwen3Moe, "model.layers.0.mlp.experts.5.gate_proj.weight", &[32, 64], &shape, None), Mapping::Whole(Some("blk.0.ffn_gate_exps.weight".into())));
        let shape = |t: &str| t.ends_with("exps.weight").then(|| vec![4, 32, 64]);
        let Mapping::Pieces(p) = mapping(Family::GraniteHybrid, "model.layers.0.block_sparse_moe.input_linear.weight", &[4, 64, 64], &shape, None) else { panic!() };
        let up3 = p.iter().find(|p| p.part.split.as_deref() == Some("up") && p.part.index == 3).unwrap();
        assert_eq!(up3.source_offset, (3 * 64 + 32) * 64);
        assert!(fused_experts("model.layers.0.mlp.experts.down_proj_bias"));
        assert!(!fused_experts("model.layers.0.mlp.experts.3.down_proj.weight"));
    }
}
