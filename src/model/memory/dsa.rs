//! DSA's compute terms (deepseek32, glm-dsa: `src/models/deepseek32.cpp`,
//! `src/models/glm-dsa.cpp`, `build_attn` with top-k in `src/llama-graph.cpp:3039-3110`), beside
//! the generic MLA ones of `compute.rs`. What ggml-alloc holds at the peak was read from its own
//! debug layout (`GGML_ALLOCATOR_DEBUG`, tests/fixtures/memory/README.md) for the deepseek32
//! fixture at `-c 4096` with and without flash attention, `-c 2048 -ub 256` and `-np 3`, on the
//! CPU and on one RPC device; with `n_kv` the cache's cells and `T` the ubatch's tokens:
//! - inputs: the indexer's own KQ mask beside the MLA cache's (`build_attn_inp_k_dsa`,
//!   src/llama-graph.cpp:3352-3363), always f16 (the fused lightning indexer needs it, `fused_lid`
//!   is on: src/llama-context.cpp:237, graph :3357);
//! - leaves: every DSA layer's `build_attn` makes a tensor of zeros `[1, n_top_k, T]` f32 with no
//!   op (src/llama-graph.cpp:3083), a graph leaf: ggml-alloc allocates all leaves before the first
//!   node (ggml-alloc.c:723-728), so each layer's is live from the start (the `ggml_fill` that
//!   zeroes it works in place, :24);
//! - a full indexer layer, with flash attention: the indexer's scores `[n_kv, T]` f32
//!   (`ggml_lightning_indexer`, ggml.c:6432-6460) and the top-k indices `[n_top_k, T]` i32
//!   (`ggml_top_k`, ggml.c:5468-5479) live together, `n_top_k = min(n_kv, indexer.top_k)`
//!   (src/models/deepseek32.cpp:320);
//! - without flash attention the scores `kq` (`n_kv · T · n_head` f32) come first, the mask chain
//!   after them (`ggml_soft_max_ext(kq, mask)` visits `kq` first): the top-k's copy, then the
//!   filled mask (`ggml_fill`, a new tensor: the input mask has many children) and the unmasked
//!   sum (`ggml_add`, not in place there), both of the MLA mask's f32 size, above them.
//!
//! The graph's top-k placement with layers split between the host and a device (the device's
//! buffer then holds the scores but not the top-k) and with two devices is not modelled.

use super::params::ContextParams;
use super::KvSummary;
use crate::model::description::{Attention, Description, Layer, MemoryKind};

const F32: u64 = 4;
/// The indexer's mask is f16 (`fused_lid`).
const F16: u64 = 2;

/// Whether the layer runs DSA's `build_attn` (every trunk attention layer of a DSA model).
pub fn is_dsa_layer(desc: &Description, l: &Layer) -> bool {
    desc.memory == MemoryKind::Dsa && l.attention == Attention::Mla && !l.nextn
}

/// `n_top_k · T · 4`: one layer's zeros leaf, and the top-k indices.
fn top_k_bytes(desc: &Description, kv: &KvSummary, n_tokens: u64) -> u64 {
    let top_k = desc.indexer.map_or(0, |ix| ix.top_k).min(kv.cells);
    top_k.saturating_mul(n_tokens).saturating_mul(F32)
}

/// The indexer's KQ mask, an input beside the MLA cache's.
pub fn indexer_mask(desc: &Description, kv: &KvSummary, n_tokens: u64) -> u64 {
    if desc.memory != MemoryKind::Dsa {
        return 0;
    }
    kv.cells.saturating_mul(n_tokens).saturating_mul(F16)
}

/// The zeros leaves of the DSA layers `on` says are on a device.
pub fn leaves(desc: &Description, kv: &KvSummary, n_tokens: u64, on: impl Fn(usize) -> bool) -> u64 {
    let n = desc.layers.iter().enumerate().filter(|(il, l)| on(*il) && is_dsa_layer(desc, l)).count() as u64;
    n.saturating_mul(top_k_bytes(desc, kv, n_tokens))
}

/// What a DSA layer's attention adds at its peak to the generic MLA working set (`mla`, the
/// absorbed query, latent output and value expansion): with flash attention the scores and the
/// top-k; without, the scores `kq` and, above them, the top-k's copy and two masks of f32.
pub fn attention(desc: &Description, l: &Layer, p: &ContextParams, kv: &KvSummary, n_tokens: u64, mla: u64, row: u64) -> u64 {
    let cells = kv.cells.saturating_mul(n_tokens);
    let y = top_k_bytes(desc, kv, n_tokens);
    if p.flash_attn {
        let scores = if l.indexer { cells.saturating_mul(F32) } else { 0 };
        scores.saturating_add(y).saturating_add(mla).saturating_add(2 * row)
    } else {
        let kq = cells.saturating_mul(l.n_head).saturating_mul(F32);
        kq.saturating_add(y).saturating_add(cells.saturating_mul(2 * F32)).saturating_add(mla).saturating_add(4 * row)
    }
}
