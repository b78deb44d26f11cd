//! gemma3n's compute terms (`src/models/gemma3n.cpp`), beside the generic ones of `compute.rs`:
//! its per-layer inputs. Every token carries `n_embd_altup · n_layer` more values
//! (`n_embd_altup` is llama.cpp's fixed 256, src/llama-hparams.h:267), made before the first
//! block and read by every block; with `P = n_embd_altup · n_layer · T · 4` (one such f32
//! tensor at `T` tokens):
//! - `build_inp_per_layer` (gemma3n.cpp:324-352): `ggml_get_rows` of `per_layer_token_embd`
//!   (P), reshaped, then scaled into a new tensor (P: a view is never an allocated parent, so
//!   never reused in place, ggml/src/ggml-alloc.c:640-643), put in the graph first (:112);
//! - `project_per_layer_inputs` (:357-376), inside block 0 (its first user): the projection of
//!   the embeddings (`ggml_mul_mat`, P, scaled in place), `build_norm`'s RMS norm of its reshaped
//!   view (a new P), then in place the norm's weight, the sum with the scaled rows and a scale, and
//!   the permuted copy (`ggml_cont`, P) that every block reads (`inp_this_layer`, :243), live to
//!   the last block.
//!
//! Where they are made (the scheduler, ggml/src/ggml-backend.cpp:1087-1199): the rows on the
//! host (`per_layer_token_embd` is an input-layer tensor, src/llama-arch.cpp:921); the scale on
//! the output layer's backend — the next node with weights is the `altup_proj` product
//! (gemma3n.cpp:123), an output-layer tensor (src/llama-arch.cpp:924), and the scheduler's upward
//! pass gives its backend to the nodes without weights before it —; the projection and its norm
//! on block 0's backend (`per_layer_model_proj` and `per_layer_proj_norm` are block 0's tensors,
//! made with `tn(…, 0)`, gemma3n.cpp:40-41). A scale on another backend than the rows' reads the
//! scheduler's copy of them (a tensor of its own, scaled in place), and the projection's backend
//! a copy of the scaled rows when they are not its own.
//!
//! All on the host, ggml-alloc's best fit (ggml-alloc.c:202-300) puts block 0's small tensors
//! made before the projection into the freed rows' block (the only free block below the top), so
//! the projection and its norm no longer fit there: at the norm the rows' place, the scaled rows,
//! the projection and the norm lie one above the other, `4 P`. Split, the projection's backend
//! holds the scaled rows (or its copy of them) with the projection and the norm, `3 P`, the
//! scale's the scaled rows, the host the rows. The blocks then run beside the permuted copy (P)
//! on block 0's backend, and beside their slice's copy elsewhere. With pipeline parallelism
//! each split input is `GGML_SCHED_MAX_COPIES` copies, all kept.

use super::params::ContextParams;
use crate::model::description::Description;

const F32: u64 = 4;
/// `n_embd_altup` (src/llama-hparams.h:267): fixed, no GGUF key.
const N_EMBD_ALTUP: u64 = 256;
/// The per-layer tensors one above the other at the projection's norm when the host makes them
/// all: the rows' freed place, the scaled rows, the projection, its norm.
const ALL_ON_HOST: u64 = 4;
/// The projection and its norm.
const PROJECTION: u64 = 2;

pub fn is_gemma3n(desc: &Description) -> bool {
    desc.arch == "gemma3n"
}

/// `P`: one f32 tensor of the per-layer inputs, `[n_embd_altup, n_layer, T]`.
pub fn per_layer_inputs(desc: &Description, p: &ContextParams) -> u64 {
    if !is_gemma3n(desc) {
        return 0;
    }
    let n_tokens = p.n_ubatch.min(p.n_ctx).max(1);
    N_EMBD_ALTUP.saturating_mul(desc.n_layer()).saturating_mul(n_tokens).saturating_mul(F32)
}

/// The per-layer inputs' placement: block 0's backend (the projection), the output layer's (the
/// scale), the copies a split input has (`None`: the host).
pub struct PerLayer {
    pl: u64,
    proj: Option<usize>,
    out: Option<usize>,
    copies: u64,
    n_layer: u64,
}

impl PerLayer {
    pub fn new(desc: &Description, p: &ContextParams, layers: &[Option<usize>], copies: u64) -> PerLayer {
        let proj = layers.first().copied().flatten();
        let out = layers.last().copied().flatten();
        PerLayer { pl: per_layer_inputs(desc, p), proj, out, copies: copies.max(1), n_layer: desc.n_layer().max(1) }
    }

    /// What backend `b` holds of them before block 0's working set, at the projection's norm.
    pub fn at_projection(&self, b: Option<usize>) -> u64 {
        let pl = self.pl;
        if b == self.proj {
            if self.proj.is_none() && self.out.is_none() {
                return pl.saturating_mul(ALL_ON_HOST);
            }
            // The scaled rows (or their copies) beside the projection and the norm.
            return pl.saturating_mul(self.copies.saturating_add(PROJECTION));
        }
        match b {
            // The rows, and the scaled rows beside them when the scale is the host's.
            None if self.out.is_none() => pl.saturating_mul(2),
            None => pl,
            // The copies of the rows, the first scaled in place.
            Some(_) if b == self.out => pl.saturating_mul(self.copies),
            Some(_) => 0,
        }
    }

    /// What backend `b` holds of them beside its `blocks`: the permuted copy on block 0's
    /// backend, each block's slice copied elsewhere.
    pub fn beside_blocks(&self, b: Option<usize>, blocks: u64) -> u64 {
        if blocks == 0 {
            return 0;
        }
        if b == self.proj {
            return self.pl;
        }
        (self.pl / self.n_layer).saturating_mul(blocks).saturating_mul(self.copies)
    }
}
