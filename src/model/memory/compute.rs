//! The compute buffers (`sched_reserve`, `src/llama-context.cpp`). llama.cpp has no formula
//! for them: each is ggml-alloc's peak over the graph built for `n_ubatch` tokens against
//! the full cache. This is a model of that peak's terms, checked against what llama.cpp
//! reports on its CPU backend (tests/fixtures/memory/), where it matches within the tests'
//! tolerance; a GPU backend's scheduler splits the graph differently, so there the figure is
//! an estimate.

use super::params::{pad, ContextParams};
use super::{device_label, Buffer, Kind, KvSummary, Settings};
use crate::model::description::{Attention, Description, Ffn};

/// The KQ mask's rows are padded to this many tokens (`GGML_KQ_MASK_PAD`).
const KQ_MASK_PAD: u64 = 1;

/// One compute buffer per backend that runs part of the graph: the host's, and each GPU's
/// with layers on it.
pub fn buffers(desc: &Description, s: &Settings, p: &ContextParams, layers: &[Option<usize>], kv: &KvSummary) -> Vec<Buffer> {
    let n_tokens = p.n_ubatch.min(p.n_ctx).max(1);
    let n_outputs = n_tokens.min(p.n_outputs_max);
    let f = 4u64;
    // The largest per-layer working set: attention scores (without flash attention) or the
    // feed-forward intermediates, whichever is larger, plus the layer's input/output rows.
    let mut layer_peak = 0u64;
    for l in desc.layers.iter().filter(|l| !l.nextn) {
        let n_kv = match l.attention {
            Attention::Sliding | Attention::Chunked => kv.swa_cells.unwrap_or(kv.cells),
            _ => kv.cells,
        };
        let kq = if p.flash_attn { 0 } else { n_kv.saturating_mul(n_tokens).saturating_mul(l.n_head).saturating_mul(f) };
        let ff = match l.ffn {
            Ffn::Dense { n_ff } => n_ff.saturating_mul(n_tokens).saturating_mul(2 * f),
            Ffn::Moe { used, n_ff_exp, .. } => n_ff_exp.saturating_mul(used).saturating_mul(n_tokens).saturating_mul(2 * f),
            Ffn::None => 0,
        };
        let rows = desc.n_embd.saturating_mul(n_tokens).saturating_mul(3 * f);
        layer_peak = layer_peak.max(kq.max(ff).saturating_add(rows));
    }
    let mask = pad(kv.cells, 1).saturating_mul(pad(n_tokens, KQ_MASK_PAD)).saturating_mul(if p.flash_attn { 2 } else { 4 });
    let logits = desc.n_vocab.saturating_mul(n_outputs).saturating_mul(f);
    let output_device = layers.last().copied().flatten();
    let mut out = Vec::new();
    let host_bytes = match output_device {
        None => layer_peak.max(logits).saturating_add(mask),
        Some(_) => desc.n_embd.saturating_mul(n_tokens).saturating_mul(f).saturating_add(mask),
    };
    out.push(Buffer { device: device_label(None), buft: "CPU".to_string(), kind: Kind::Compute, bytes: host_bytes });
    for (i, d) in s.devices.iter().enumerate() {
        if !layers.contains(&Some(i)) {
            continue;
        }
        let mut b = layer_peak.saturating_add(mask);
        if output_device == Some(i) {
            b = b.max(logits);
        }
        out.push(Buffer { device: device_label(Some(i)), buft: d.name.clone(), kind: Kind::Compute, bytes: b });
    }
    out
}
