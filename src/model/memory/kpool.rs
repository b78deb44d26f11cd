//! hybrid-idx's compute terms (glm5-next: the k-pool indexer of `src/models/glm5-next.cpp`),
//! beside the generic MLA and recurrent ones of `compute.rs`. At a reserve the ubatch's `T`
//! tokens attend over the full cache of `n_kv` cells, so the selection takes the scatter path
//! (`gather` needs `T ≤ 16`, glm5-next.cpp:326-331). The sizes (`build_inp_kpool`, :290-350;
//! the reserve's context, src/llama-memory-hybrid-idx.cpp:831-840): `n_pool =
//! kpool_pad(n_kv / kpool · n_seq)` (`max(64, pad(n + 1, 64))`, :706-708), `n_top_pool =
//! min(n_pool, top_k / kpool)`, `n_sel = kpool · n_top_pool + kpool − 1` (the tail, unless
//! `attention.indexer.kpool_select_tail` is false: glm5-next.cpp:328-329).
//! - inputs: the pool mask `[n_pool, T]`, f16 (the fused lightning indexer, `fused_lid`, is always
//!   on: src/llama-context.cpp:237; glm5-next.cpp:303, 310), the slot mask `[n_sel, T]` f32 (:334,
//!   kept allocated: :337), the tail `[kpool − 1, T]` and the pools' members `[kpool, n_pool]` i32;
//! - a full indexer layer's selection (`build_kpool_select`, :766-918), in the KQ mask's type
//!   (f16 with flash attention): `mask_all` `[n_kv + n_sel, T]` (`ggml_repeat_4d`, :894), the
//!   zeros scattered into it `[n_sel, T]` f32 (:898, the set_rows at :910), and the selection
//!   `sel` `[n_kv, T]` (`ggml_add` of its view and the KQ mask, a new tensor: the view is strided,
//!   :915), which the shared indexer layers after it read again (`prev_sel`, :960-963) — live
//!   until the last one;
//! - before `mask_all`, the scatter indices (:904-908): the zeros in the block the ordered top-k
//!   and the pools' members it gathered left (:859-873), the selection with the tail appended
//!   (:877) and the selected cells cast to f32 (`idx_f`, shifted in place after), `[n_sel, T]`
//!   4-byte each, the slot mask (an input) still beside them;
//! - without flash attention the scores `[n_kv, T, n_head]` f32 of `build_attn_mha` (:1005) come
//!   above `sel`, with `mask_all`'s freed block below them (too small for them);
//! - the mHC residual streams `[n_embd, 4, T]` f32 (`residual = inpL`, :588), kept through the
//!   mixer for `build_hc_post`.
//!
//! Checked against ggml-alloc's own layout (GGML_ALLOCATOR_DEBUG, 2026-12-03: the peak is the
//! scatter indices' phase at `-np 3` and `-ub 256`, `mask_all` above the freed slot mask
//! elsewhere): every CPU-only run of the fixture is within 1 MiB (tests/memory.rs), the holes
//! left by the earlier layers (~0.7 MiB at 512 tokens) aside. With devices the split inputs'
//! copies are not modelled: glm5-next is in `COMPUTE_NOT_MODELLED` for those runs.

use super::params::{pad, ContextParams};
use super::KvSummary;
use crate::model::description::{Attention, Description, Layer, MemoryKind};

const F32: u64 = 4;
const F16: u64 = 2;
/// `kpool_pad`'s granularity and floor (src/llama-memory-hybrid-idx.cpp:706-708).
const POOL_PAD: u64 = 64;
/// mHC's streams (`hyper_connection.count`, asserted 4: glm5-next.cpp:53).
const HC_STREAMS: u64 = 4;
/// The `[n_sel, T]` 4-byte tensors live at the scatter indices' peak: the zeros, the indices with
/// the tail appended, `idx_f` (the slot mask beside them is an input).
const INDEX_PHASE: u64 = 3;

pub fn is_kpool(desc: &Description) -> bool {
    desc.memory == MemoryKind::HybridIdx && desc.indexer.is_some_and(|ix| ix.kpool > 1)
}

/// Whether the layer runs `build_kpool_select` (a full indexer MLA layer of the trunk).
pub fn is_full(desc: &Description, l: &Layer) -> bool {
    is_kpool(desc) && l.indexer && l.attention == Attention::Mla && !l.nextn
}

/// The selection's sizes, from the header and the reserve's cache (`build_inp_kpool`).
struct Sizes {
    kpool: u64,
    n_pool: u64,
    n_top_pool: u64,
    /// `kpool · n_top_pool`, with the appended tail's `kpool − 1` (glm5-next.cpp:329).
    n_sel: u64,
}

fn sizes(desc: &Description, p: &ContextParams, kv: &KvSummary) -> Sizes {
    let (kpool, top_k, tail) = desc.indexer.map_or((1, 0, false), |ix| (ix.kpool.max(1), ix.top_k, ix.kpool_tail));
    let n_pool_max = (kv.cells / kpool).saturating_mul(p.n_seq.max(1));
    let n_pool = pad(n_pool_max.saturating_add(1), POOL_PAD).max(POOL_PAD);
    let n_top_pool = n_pool.min(top_k / kpool);
    let tail = if tail { kpool - 1 } else { 0 };
    Sizes { kpool, n_pool, n_top_pool, n_sel: kpool.saturating_mul(n_top_pool).saturating_add(tail) }
}

/// The k-pool inputs.
pub fn inputs(desc: &Description, p: &ContextParams, kv: &KvSummary, n_tokens: u64) -> u64 {
    if !desc.layers.iter().any(|l| is_full(desc, l)) {
        return 0;
    }
    let Sizes { kpool, n_pool, n_sel, .. } = sizes(desc, p, kv);
    let pool_mask = n_pool.saturating_mul(n_tokens).saturating_mul(F16);
    let slot_mask = n_sel.saturating_mul(n_tokens).saturating_mul(F32);
    let tail = kpool.saturating_sub(1).saturating_mul(n_tokens).saturating_mul(F32);
    let members = kpool.saturating_mul(n_pool).saturating_mul(F32);
    pool_mask.saturating_add(slot_mask).saturating_add(tail).saturating_add(members)
}

fn mask_elem(p: &ContextParams) -> u64 {
    if p.flash_attn {
        F16
    } else {
        F32
    }
}

/// The selection `sel`, kept from a full layer to the last shared layer reading it.
pub fn selection(desc: &Description, p: &ContextParams, kv: &KvSummary, n_tokens: u64) -> u64 {
    if !is_kpool(desc) {
        return 0;
    }
    kv.cells.saturating_mul(n_tokens).saturating_mul(mask_elem(p))
}

/// The mHC residual streams, `hyper_connection.count` (asserted 4, glm5-next.cpp:53) rows.
pub fn residual_streams(desc: &Description, n_tokens: u64) -> u64 {
    if !is_kpool(desc) {
        return 0;
    }
    desc.n_embd.saturating_mul(HC_STREAMS).saturating_mul(n_tokens).saturating_mul(F32)
}

/// A full layer's peak beyond the generic rows: the scatter indices' phase (the zeros over the
/// top-k's freed block, the appended indices, `idx_f`), or `mask_all` and `sel` with the zeros
/// (set_rows' source) or — without flash attention — the scores and the absorbed MLA working
/// set `mla` above them.
pub fn full_layer(desc: &Description, l: &Layer, p: &ContextParams, kv: &KvSummary, n_tokens: u64, mla: u64) -> u64 {
    let Sizes { kpool, n_top_pool, n_sel, .. } = sizes(desc, p, kv);
    let me = mask_elem(p);
    let mask_all = kv.cells.saturating_add(n_sel).saturating_mul(n_tokens).saturating_mul(me);
    let zeros = n_sel.saturating_mul(n_tokens).saturating_mul(F32);
    // The scatter indices' phase, as ggml-alloc lays it out (GGML_ALLOCATOR_DEBUG on the fixture,
    // 2026-12-03): the ordered top-k `[n_top_pool, T]` i32 and the pools' members gathered by it
    // `[kpool · n_top_pool, T]` i32 (glm5-next.cpp:859-873) are freed once the tail is appended
    // (:877), and the zeros take their block — no smaller than them —, then the appended indices
    // and `idx_f` above: the block of the two plus two `[n_sel, T]` 4-byte tensors.
    let top_k_rows = n_top_pool.saturating_mul(n_tokens).saturating_mul(F32);
    let freed_block = top_k_rows.saturating_add(top_k_rows.saturating_mul(kpool)).max(zeros);
    let indices = freed_block.saturating_add(zeros.saturating_mul(INDEX_PHASE - 1));
    let above = if p.flash_attn { zeros } else { zeros.max(kv.cells.saturating_mul(n_tokens).saturating_mul(l.n_head).saturating_mul(F32).saturating_add(mla)) };
    let masks = mask_all.saturating_add(selection(desc, p, kv, n_tokens)).saturating_add(above);
    // With flash attention the absorbed query (made before the selection, glm5-next.cpp:950-953,
    // 966, read by the attention after it, :1005) is there throughout; without, `mla` has it.
    let q_absorbed = if p.flash_attn { desc.mla.map_or(0, |m| l.n_head.saturating_mul(n_tokens).saturating_mul(m.kv_lora_rank).saturating_mul(F32)) } else { 0 };
    masks.max(indices).saturating_add(residual_streams(desc, n_tokens)).saturating_add(q_absorbed)
}

/// Whether layer `il` runs while a full layer's selection is still to be read: a shared MLA
/// layer after a full one, or any layer between the two.
pub fn selection_live(desc: &Description, il: usize) -> bool {
    if !is_kpool(desc) {
        return false;
    }
    let full_before = desc.layers.iter().take(il).rposition(|l| is_full(desc, l));
    let Some(f) = full_before else { return false };
    // The shared layers reading `f`'s selection: the MLA layers after it up to the next full one.
    let last_reader = desc
        .layers
        .iter()
        .enumerate()
        .skip(f + 1)
        .take_while(|(_, l)| !is_full(desc, l))
        .filter(|(_, l)| l.attention == Attention::Mla && !l.nextn)
        .map(|(i, _)| i)
        .last();
    last_reader.is_some_and(|r| il <= r)
}
