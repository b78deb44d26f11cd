//! MSA's compute terms (minimax-m3: `src/models/minimax-m3.cpp`), beside the generic ones of
//! `compute.rs`. MSA runs only with flash attention and per-sequence streams
//! (`msa_enabled`, minimax-m3.cpp:233-235); otherwise every layer is a dense `build_attn`,
//! which the generic terms cover. With `n_kv` the cache's cells per stream, `T` the ubatch's
//! tokens, `ns` the streams and `Hd` the indexer's heads (one per KV head, asserted :382):
//! - inputs (minimax-m3.cpp:279-296): the local-force bias `[nblk, T]` f32, the position mask
//!   `[n_ps, T]` f32, the position → cell map `[n_ps, ns]` i32 and the cell → block map
//!   `[n_kv, ns]` i32, where `n_ps` is the cache's positions padded to the block: at a reserve the
//!   cache is empty, so `get_n_pos` is `max(n_pad, 256)` with the cache's `n_pad` of 1
//!   (src/llama-kv-cache-msa.cpp:262-273, src/llama-model.cpp:2381-2395);
//! - the f32 copy of the f16 KQ mask (`msa_mf = ggml_cast(msa_kqm, F32)`, :295), `n_kv · T · 4`,
//!   made where the first sparse layer runs (its first user) and read by every sparse layer;
//! - per sparse layer and stream, the block mask expanded to cells: `bmc = ggml_get_rows(bm2,
//!   cb_s)` `[n_tps · Hd, n_kv]` f32 and its transposed copy `bmx` (:510-511), live together
//!   (`bmc` is freed once `bmx` is made); `mask4` is `bmx` plus the f32 mask in place (:513), its
//!   f16 cast half of it.
//!
//! Where they sit (ggml-alloc's best fit, `ggml_dyn_tallocr_alloc`, ggml/src/ggml-alloc.c:202-300):
//! the first sparse layer makes `bmc` and `bmx` above the f16 mask, and the f32 mask cast after
//! `bmx` takes `bmc`'s freed block when it fits there (`n_kv · T · 4 ≤ bmc`, i.e. `ns ≤ Hd`);
//! the f16 mask is then freed (no later user), a block below the f32 mask that a later layer's
//! `bmc` does not fit in, so every later sparse layer's `bmc` and `bmx` go above both: the f16
//! mask's place, the f32 mask and the two. On a device that runs a later sparse layer but not
//! the first, the f32 mask is the scheduler's copy, an input of its split.

use super::params::{pad, ContextParams};
use super::KvSummary;
use crate::model::description::{Attention, Description, Layer, MemoryKind};

const F32: u64 = 4;
/// `get_n_pos`'s smallest padding (src/llama-kv-cache-msa.cpp:264): the positions of an empty
/// cache.
const N_POS_PAD: u64 = 256;

/// Whether the graph takes MSA's path (minimax-m3.cpp:233-235): flash attention, and one
/// sequence or a stream per sequence.
pub fn enabled(desc: &Description, p: &ContextParams) -> bool {
    desc.memory == MemoryKind::Msa && p.flash_attn && (p.n_seq <= 1 || p.n_stream > 1)
}

/// Whether the layer is a sparse one (`is_sparse`, minimax-m3.cpp:334: the layers from
/// `leading_dense_block_count` on, those with indexer keys).
pub fn is_sparse(desc: &Description, p: &ContextParams, l: &Layer) -> bool {
    enabled(desc, p) && l.indexer && l.attention == Attention::Full && !l.nextn
}

/// The first sparse layer: where the f32 mask is made.
pub fn first_sparse(desc: &Description, p: &ContextParams) -> Option<usize> {
    desc.layers.iter().position(|l| is_sparse(desc, p, l))
}

fn n_ps(desc: &Description) -> u64 {
    let blk = desc.indexer.map_or(1, |ix| ix.block_size).max(1);
    pad(N_POS_PAD, blk)
}

/// The MSA graph inputs: bias, position mask and the two maps.
pub fn inputs(desc: &Description, p: &ContextParams, kv: &KvSummary, n_tokens: u64) -> u64 {
    if first_sparse(desc, p).is_none() {
        return 0;
    }
    let n_ps = n_ps(desc);
    let blk = desc.indexer.map_or(1, |ix| ix.block_size).max(1);
    let nblk = n_ps / blk;
    let ns = p.n_stream.max(1);
    let bias = nblk.saturating_mul(n_tokens).saturating_mul(F32);
    let pos_mask = n_ps.saturating_mul(n_tokens).saturating_mul(F32);
    let maps = n_ps.saturating_add(kv.cells).saturating_mul(ns).saturating_mul(F32);
    bias.saturating_add(pos_mask).saturating_add(maps)
}

/// The f32 copy of the KQ mask (`msa_mf`).
pub fn cast_mask(kv: &KvSummary, n_tokens: u64) -> u64 {
    kv.cells.saturating_mul(n_tokens).saturating_mul(F32)
}

/// One stream's block mask at cell granularity (`bmc`; `bmx` is as large).
fn block_mask(desc: &Description, p: &ContextParams, kv: &KvSummary, n_tokens: u64) -> u64 {
    let hd = desc.indexer.map_or(0, |ix| ix.n_head);
    let n_tps = n_tokens.div_ceil(p.n_stream.max(1));
    hd.saturating_mul(n_tps).saturating_mul(kv.cells).saturating_mul(F32)
}

/// What a sparse layer's attention holds at its peak beyond the generic rows: `bmc` and `bmx`,
/// and — on the device that made it, after the first sparse layer — the f32 mask below them
/// (elsewhere it is an input copy, counted with the device's inputs). At the first sparse
/// layer the f32 mask goes into `bmc`'s freed block when it fits, else above `bmx`.
pub fn attention(desc: &Description, p: &ContextParams, kv: &KvSummary, n_tokens: u64, first: bool, mask_made_here: bool) -> u64 {
    let b = block_mask(desc, p, kv, n_tokens);
    let mf = cast_mask(kv, n_tokens);
    let two = b.saturating_mul(2);
    if first {
        if mf > b {
            two.saturating_add(mf)
        } else {
            two
        }
    } else if mask_made_here {
        two.saturating_add(mf)
    } else {
        two
    }
}
