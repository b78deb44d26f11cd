//! The compute buffers (`sched_reserve`, `src/llama-context.cpp`). llama.cpp has no formula
//! for them: each is ggml-alloc's peak over the graph built for `n_ubatch` tokens against
//! the full cache, one buffer per backend that runs part of it. For the architectures whose
//! graph `graph.rs` builds (llama, with or without experts, qwen3, qwen3moe; a cache other
//! than f32; CPU and RPC backends) the peak is simulated: `galloc.rs` runs ggml's scheduler and
//! allocator over that graph (`simulated`), and tests/memory.rs holds every such buffer to
//! the 0.01 MiB llama.cpp prints, tests/memory_layout.rs the peak's tensors and offsets to
//! ggml-alloc's own. For the others, this is a model of that
//! peak's terms, fitted to what llama.cpp reports on its CPU backend and on a second
//! (RPC) device for the fixtures in tests/fixtures/memory/ (tests/memory.rs holds it to
//! 3 % or 1 MiB). A CUDA build runs the same graph but its scheduler may keep other copies
//! (op offload of host weights at batch ≥ 32, f16 copies of a quantized cache for flash
//! attention): there the figure is an estimate.
//!
//! The terms, with `row = n_embd · n_tokens · 4` bytes:
//! - the host holds the graph inputs: the token embeddings, one KQ mask per cache
//!   (`n_kv · n_tokens`, f16 with flash attention, else f32) and one more row;
//! - a layer's working set is the larger of its attention scores (without flash attention,
//!   `n_kv · n_tokens · n_head · 4`, plus four rows) and its feed-forward intermediates
//!   (three of `n_ff · n_tokens · 4`, plus two rows; an MoE layer: three of `n_ff_exp` and one
//!   of `n_embd` per expert used, the router's `n_expert`, its shared experts, three rows —
//!   on the experts' device when they are elsewhere), and lives beside the masks;
//! - the output phase holds the logits (`n_vocab · n_outputs · 4`) and two rows after the
//!   masks are freed; on a GPU that also runs layers the masks are copies kept to the end,
//!   with three rows more; with pipeline parallelism every copy of its split inputs stays
//!   beside the logits (ggml-alloc never frees a tensor flagged as an output).
//!
//! Where the terms model misses (the exceptions named in tests/memory.rs), ggml-alloc's debug
//! output shows placement — a best-fit hole too small for the peak's largest tensor — rather
//! than a term left out: what only the simulation gives.

use super::dsa;
use super::galloc;
use super::gemma3n;
use super::graph;
use super::kpool;
use super::msa;
use super::params::ContextParams;
use super::{device_label, Buffer, Kind, KvSummary, Settings};
use crate::model::description::{Attention, Description, EncoderDecoder, Ffn, Layer};

const F32: u64 = 4;
/// `GGML_SCHED_MAX_COPIES` (`ggml/src/ggml-backend.cpp`): the input copies a pipeline-parallel
/// scheduler keeps.
const SCHED_MAX_COPIES: u64 = 4;

/// The largest working set of one layer, masks aside, on the layer's device; and the part of
/// it its experts need where they are, when they are on another device.
#[allow(clippy::too_many_arguments)]
fn layer_peak(desc: &Description, il: usize, l: &Layer, p: &ContextParams, kv: &KvSummary, n_tokens: u64, row: u64, experts_apart: bool, msa_mask_here: bool) -> (u64, u64) {
    let n_embd = desc.n_embd;
    let n_kv = match l.attention {
        Attention::Sliding | Attention::Chunked => kv.swa_cells.unwrap_or(kv.cells),
        _ => kv.cells,
    };
    let attention = match l.attention {
        Attention::Full | Attention::Sliding | Attention::Chunked | Attention::Mla if !p.flash_attn => {
            n_kv.saturating_mul(n_tokens).saturating_mul(l.n_head).saturating_mul(F32).saturating_add(4 * row)
        }
        Attention::Recurrent => {
            // The scan's state and its inputs, about three rows of the inner width.
            (2 * n_embd).saturating_mul(n_tokens).saturating_mul(3 * F32)
        }
        _ => 2 * row,
    };
    // MLA with the absorbed weights: the query in the cache's width, the attention's output in
    // the latent width, and its expansion to the value heads.
    let attention = match (l.attention, desc.mla) {
        (Attention::Mla, Some(m)) => {
            let mla = l.n_head.saturating_mul(n_tokens).saturating_mul(F32).saturating_mul(l.head_k.saturating_add(m.kv_lora_rank).saturating_add(m.head_v_mla));
            // DSA's indexer and top-k unmasking (`dsa.rs`).
            if dsa::is_dsa_layer(desc, l) {
                dsa::attention(desc, l, p, kv, n_tokens, mla, row)
            } else if kpool::is_full(desc, l) {
                // hybrid-idx's k-pool selection (`kpool.rs`), the scores with it.
                let rows = if p.flash_attn { 2 * row } else { 4 * row };
                kpool::full_layer(desc, l, p, kv, n_tokens, mla).saturating_add(rows)
            } else {
                attention.saturating_add(mla)
            }
        }
        // MSA's sparse layers (`msa.rs`): the block masks at cell granularity.
        _ if msa::is_sparse(desc, p, l) => {
            let first = msa::first_sparse(desc, p) == Some(il);
            (2 * row).saturating_add(msa::attention(desc, p, kv, n_tokens, first, msa_mask_here))
        }
        _ => attention,
    };
    let ff = |n_ff: u64| n_ff.saturating_mul(n_tokens).saturating_mul(3 * F32);
    let (ffn, apart) = match l.ffn {
        Ffn::Dense { n_ff } => (ff(n_ff), 0),
        Ffn::Moe { experts, used, n_ff_exp, shared, n_ff_shexp } => {
            // The routed experts: gate, up and their product per expert used, and the down
            // projection's output per expert used before the weighted sum; the router's
            // probabilities; the shared experts as a dense FFN.
            let routed = ff(n_ff_exp.saturating_mul(used))
                .saturating_add(n_embd.saturating_mul(used).saturating_mul(n_tokens).saturating_mul(F32));
            let router = experts.saturating_mul(n_tokens).saturating_mul(F32);
            let shared_ff = ff(n_ff_shexp.saturating_mul(shared));
            if experts_apart {
                // On the experts' device the inputs' rows are not there: one row less.
                (shared_ff.saturating_add(router), routed.saturating_add(router).saturating_sub(row))
            } else {
                (routed.saturating_add(row).saturating_add(router).saturating_add(shared_ff), 0)
            }
        }
        Ffn::None => (0, 0),
    };
    // hybrid-idx: a full layer's selection, kept for the shared layers after it.
    let kept = if kpool::selection_live(desc, il) { kpool::selection(desc, p, kv, n_tokens) } else { 0 };
    (attention.max(ffn.saturating_add(2 * row)).saturating_add(kept), apart)
}

/// One compute buffer per backend that runs part of the graph: the host's, and each GPU's
/// with layers (or the output) on it.
pub fn buffers(desc: &Description, s: &Settings, p: &ContextParams, layers: &[Option<usize>], kv: &KvSummary) -> Vec<Buffer> {
    if let Some(ed) = desc.enc_dec {
        return enc_dec_buffers(desc, ed, s, p, layers, kv);
    }
    if let Some(b) = simulated(desc, s, p, layers, kv) {
        return b;
    }
    // The prompt reserve's tokens, rounded up to a multiple of the sequences (`graph_reserve`,
    // src/llama-context.cpp:2528-2530: 513 for `-np 3`).
    let (n_tokens, n_outputs) = prompt_ubatch(p);
    let row = desc.n_embd.saturating_mul(n_tokens).saturating_mul(F32);
    let mask_elem = if p.flash_attn { 2 } else { 4 };
    let attends = desc.layers.iter().any(has_attention);
    let full_mask = kv.cells.saturating_mul(n_tokens).saturating_mul(mask_elem);
    let swa_mask = kv.swa_cells.filter(|_| kv.swa_layers > 0).map_or(0, |c| c.saturating_mul(n_tokens).saturating_mul(mask_elem));
    // The masks of the caches the given layers read (all layers: `None`; one device's: `Some`).
    // MSA: the first sparse layer casts the f16 mask, the later ones read the f32 copy.
    let msa_first = msa::first_sparse(desc, p);
    let msa_first_device = msa_first.and_then(|f| layers.get(f).copied().flatten());
    let masks_of = |d: Option<Option<usize>>| -> u64 {
        let on = |il: usize| d.is_none_or(|d| layers.get(il).copied().flatten() == d);
        let sliding = |l: &Layer| matches!(l.attention, Attention::Sliding | Attention::Chunked) && kv.swa_cells.is_some();
        let reads_f16 = |il: usize, l: &Layer| !msa::is_sparse(desc, p, l) || msa_first == Some(il);
        let full = desc.layers.iter().enumerate().any(|(il, l)| on(il) && !l.nextn && has_attention(l) && !sliding(l) && reads_f16(il, l));
        let swa = desc.layers.iter().enumerate().any(|(il, l)| on(il) && !l.nextn && has_attention(l) && sliding(l));
        let indexer = desc.layers.iter().enumerate().any(|(il, l)| on(il) && l.indexer && dsa::is_dsa_layer(desc, l));
        let sparse = desc.layers.iter().enumerate().any(|(il, l)| on(il) && msa::is_sparse(desc, p, l));
        // A device running a later sparse layer but not the first holds a copy of the f32 mask.
        let cast_copy = matches!(d, Some(Some(dev)) if msa_first_device != Some(dev)
            && desc.layers.iter().enumerate().any(|(il, l)| on(il) && msa::is_sparse(desc, p, l) && msa_first != Some(il)));
        let pooled = desc.layers.iter().enumerate().any(|(il, l)| on(il) && kpool::is_full(desc, l));
        (if full { full_mask } else { 0 })
            + (if swa { swa_mask } else { 0 })
            + (if indexer { dsa::indexer_mask(desc, kv, n_tokens) } else { 0 })
            + (if sparse { msa::inputs(desc, p, kv, n_tokens) } else { 0 })
            + (if cast_copy { msa::cast_mask(kv, n_tokens) } else { 0 })
            + (if pooled { kpool::inputs(desc, p, kv, n_tokens) } else { 0 })
    };
    let masks = if attends { masks_of(None) } else { 0 };
    let logits = desc.n_vocab.saturating_mul(n_outputs).saturating_mul(F32);
    let output_device = layers.last().copied().flatten();
    // Each device's largest layer working set, over the layers it runs.
    let experts = super::weights::expert_devices(desc, s, layers);
    let peak_on = |d: Option<usize>| -> Option<u64> {
        let mut peak = None;
        for (il, l) in desc.layers.iter().enumerate().filter(|(_, l)| !l.nextn) {
            let at = layers.get(il).copied().flatten();
            let ex = experts.get(il).copied().flatten();
            let (own, apart) = layer_peak(desc, il, l, p, kv, n_tokens, row, ex != at, msa_first_device == at);
            if at == d {
                peak = Some(peak.unwrap_or(0).max(own));
            }
            if ex == d && ex != at && apart > 0 {
                peak = Some(peak.unwrap_or(0).max(apart));
            }
        }
        // DSA's zeros leaves, live from the graph's start (`dsa.rs`).
        peak.map(|x| x.saturating_add(dsa::leaves(desc, kv, n_tokens, |il| layers.get(il).copied().flatten() == d)))
    };
    // Pipeline parallelism (`llama_context`: more than one device, every layer offloaded,
    // layer split, the cache offloaded, no tensor overrides): the scheduler keeps
    // GGML_SCHED_MAX_COPIES (4) copies of each split's inputs, so every buffer holds three more
    // copies of what flows into it — the masks its layers read and one row of activations.
    let n_layer_all = desc.n_layer_all();
    let pipeline = s.devices.len() > 1
        && s.n_gpu_layers.is_none_or(|n| n > n_layer_all)
        && s.offload_kqv
        && s.overrides.is_empty()
        && s.n_cpu_moe == 0;
    let extra_copies = |inputs: u64| if pipeline { inputs.saturating_mul(SCHED_MAX_COPIES - 1) } else { 0 };
    let mut out = Vec::new();
    let inputs = row.saturating_mul(2).saturating_add(masks);
    let mut host = inputs;
    // gemma3n's per-layer inputs (`gemma3n.rs`): selected on the host, scaled on the output
    // layer's backend, projected on block 0's before the first block, read by every block.
    let per_layer = gemma3n::PerLayer::new(desc, p, layers, if pipeline { SCHED_MAX_COPIES } else { 1 });
    let blocks_on = |d: Option<usize>| desc.layers.iter().enumerate().filter(|(il, l)| !l.nextn && layers.get(*il).copied().flatten() == d).count() as u64;
    let with_per_layer = |d: Option<usize>, peak: Option<u64>| -> Option<u64> {
        let before = per_layer.at_projection(d);
        match peak {
            Some(x) => Some(before.max(x.saturating_add(per_layer.beside_blocks(d, blocks_on(d))))),
            None if before > 0 => Some(before),
            None => None,
        }
    };
    if let Some(peak) = with_per_layer(None, peak_on(None)) {
        host = host.saturating_add(peak);
    }
    if output_device.is_none() {
        host = host.max(logits.saturating_add(2 * row));
    }
    host = host.saturating_add(extra_copies(masks.saturating_add(row)));
    out.push(Buffer { device: device_label(None), buft: "CPU".to_string(), kind: Kind::Compute, bytes: host });
    for (i, d) in s.devices.iter().enumerate() {
        let runs_layers = peak_on(Some(i)).is_some();
        let peak = with_per_layer(Some(i), peak_on(Some(i))).filter(|_| runs_layers);
        // An output device running no layer: the scaled per-layer rows beside the logits.
        let scaled_rows = if runs_layers { 0 } else { per_layer.at_projection(Some(i)) };
        let is_output = output_device == Some(i);
        if peak.is_none() && !is_output {
            continue;
        }
        let mut copies = masks_of(Some(Some(i)));
        if !s.offload_kqv && peak.is_some() && desc.mla.is_some() {
            // MLA with its cache on the host (-nkvo): the absorbed attention reads the
            // compressed cache on the device, as two copies of one layer's K.
            let per_layer = kv.k_bytes / kv.layers.max(1);
            copies = copies.saturating_add(2 * per_layer);
        }
        let sparse_here = desc.layers.iter().enumerate().any(|(il, l)| layers.get(il).copied().flatten() == Some(i) && msa::is_sparse(desc, p, l));
        if !s.offload_kqv && sparse_here {
            // MSA with its cache on the host: a sparse layer's flash attention, on the device,
            // reads views of the host's K and V (minimax-m3.cpp:468-471, 519-522): a copy of one
            // layer's each.
            copies = copies.saturating_add(kv.k_bytes.saturating_add(kv.v_bytes) / kv.layers.max(1));
        }
        let mut b = peak.map_or(0, |x| copies.saturating_add(x).saturating_add(row));
        if is_output {
            // With pipeline parallelism the split inputs' copies are flagged as graph outputs
            // (`ggml_backend_sched_split_graph`, ggml-backend.cpp:1382-1384) and ggml-alloc never
            // frees an output (`ggml_gallocr_free_node`, ggml-alloc.c:692-695): on a device that
            // also runs layers, the copy in use (its masks and a row) is still there beside the
            // logits; the three others are added below.
            let kept = if pipeline && peak.is_some() { copies.saturating_add(row) } else { 0 };
            b = b.max(logits.saturating_add(row).saturating_add(kept)).max(scaled_rows.saturating_add(row));
        }
        if peak.is_some() {
            b = b.saturating_add(extra_copies(copies.saturating_add(row)));
        }
        out.push(Buffer { device: device_label(Some(i)), buft: d.name.clone(), kind: Kind::Compute, bytes: b });
    }
    out
}

fn has_attention(l: &Layer) -> bool {
    matches!(l.attention, Attention::Full | Attention::Mla | Attention::Sliding | Attention::Chunked)
}

/// An encoder–decoder model (T5, `src/models/t5.cpp`). The reserved graph is the decoder's
/// (`LLM_GRAPH_TYPE_DEFAULT`), t5encoder's the encoder's, for `n_tokens` tokens. Every
/// self-attention adds a relative-position bias (`build_pos_bias`, src/llama-graph.cpp:2601):
/// `ggml_get_rows` of the bucket table by the `[n_kv, n_tokens]` i32 bucket input, permuted and
/// made contiguous, then added to the scores; its gathered rows, their contiguous copy and the
/// scores (`n_kv · n_tokens · n_head · 4` each) are live together, and since the bias is no
/// flash-attention input the scores are computed whatever `-fa` says. `n_kv` is the cache
/// (decoder) or the batch itself (the encoder, `build_attn_inp_no_cache`). The graph inputs on
/// the host: the bucket table, the KQ mask (f16 with flash attention), and for the decoder the
/// cross-attention's mask and the encoder output (`build_inp_cross_embd`: `n_ctx_train`
/// positions at reserve, src/llama-graph.cpp:2558); a device running layers holds copies of
/// them. Checked against llama.cpp's CPU figures for the T5 fixtures (tests/memory.rs).
fn enc_dec_buffers(desc: &Description, ed: EncoderDecoder, s: &Settings, p: &ContextParams, layers: &[Option<usize>], kv: &KvSummary) -> Vec<Buffer> {
    let n_tokens = p.n_ubatch.min(p.n_ctx).max(1);
    let row = desc.n_embd.saturating_mul(n_tokens).saturating_mul(F32);
    let mask_elem = if p.flash_attn { 2 } else { F32 };
    let decoder = ed.dec_layers > 0;
    let n_kv = if decoder { kv.cells.saturating_mul(kv.streams.max(1)) } else { n_tokens };
    let n_head = desc.layers.iter().map(|l| l.n_head).max().unwrap_or(0);
    let cells = n_kv.saturating_mul(n_tokens);
    let scores = cells.saturating_mul(n_head).saturating_mul(F32);
    let n_enc = if decoder { desc.n_ctx_train } else { 0 };
    let cross = n_enc.saturating_mul(n_tokens).saturating_mul(mask_elem).saturating_add(desc.n_embd.saturating_mul(n_enc).saturating_mul(F32));
    let inputs = cells.saturating_mul(F32 + mask_elem).saturating_add(cross);
    let working = scores.saturating_mul(3).saturating_add(5 * row);
    let logits = desc.n_vocab.saturating_mul(n_tokens.min(p.n_outputs_max)).saturating_mul(F32);
    let on = |d: Option<usize>| layers.iter().take(desc.layers.len()).any(|x| *x == d);
    let output_device = layers.last().copied().flatten();
    let mut host = inputs.saturating_add(2 * row);
    if on(None) {
        host = host.saturating_add(working);
    }
    if output_device.is_none() && decoder {
        host = host.max(logits.saturating_add(2 * row));
    }
    let mut out = vec![Buffer { device: device_label(None), buft: "CPU".to_string(), kind: Kind::Compute, bytes: host }];
    for (i, d) in s.devices.iter().enumerate() {
        let runs = on(Some(i));
        let is_output = output_device == Some(i) && decoder;
        if !runs && !is_output {
            continue;
        }
        let mut b = if runs { inputs.saturating_add(working) } else { 0 };
        if is_output {
            b = b.max(logits.saturating_add(row));
        }
        out.push(Buffer { device: device_label(Some(i)), buft: d.name.clone(), kind: Kind::Compute, bytes: b });
    }
    out
}

/// Whether llama.cpp's scheduler keeps pipeline copies (`llama_context`,
/// src/llama-context.cpp:430-461): more than one device, every layer offloaded, the layer
/// split, the cache offloaded, no tensor overrides (`--n-cpu-moe` makes some).
fn pipeline(desc: &Description, s: &Settings) -> bool {
    s.devices.len() > 1 && s.n_gpu_layers.is_none_or(|n| n > desc.n_layer_all()) && s.offload_kqv && s.overrides.is_empty() && s.n_cpu_moe == 0
}

/// The compute buffers from a simulation of the scheduler and ggml-alloc over the graph
/// llama.cpp reserves (`sched_reserve`, src/llama-context.cpp:615-766), for the
/// architectures whose graph `graph` builds; `None` for the others (the terms model above).
/// llama.cpp reserves the prompt graph (`min(n_ctx, n_ubatch)` tokens, rounded up to a
/// multiple of the sequences, against the full cache), the one-token-per-sequence graph, and
/// the prompt graph again; each buffer only grows (ggml-alloc.c:905-925), so its size is the
/// larger of the two peaks.
/// The prompt reserve's ubatch (`sched_reserve`): tokens (rounded up to a multiple of the
/// sequences, `graph_reserve`) and outputs.
fn prompt_ubatch(p: &ContextParams) -> (u64, u64) {
    let n_seqs = p.n_seq.max(1);
    let n_tokens = p.n_ubatch.min(p.n_ctx).max(1);
    let n_outputs = n_tokens.min(p.n_outputs_max).max(1);
    (n_tokens.div_ceil(n_seqs).saturating_mul(n_seqs), n_outputs)
}

/// Each backend's buffer alignment (devices, then the CPU) and the pipeline copies.
fn backends(desc: &Description, s: &Settings) -> (Vec<u64>, usize) {
    let mut alignments: Vec<u64> = s.devices.iter().map(|d| d.backend.alignment()).collect();
    alignments.push(super::weights::CPU_ALIGNMENT);
    (alignments, if pipeline(desc, s) { galloc::SCHED_MAX_COPIES } else { 1 })
}

/// The tensors live in each compute buffer at its peak in the prompt reserve, as
/// GGML_ALLOCATOR_DEBUG prints them (name, start, end; copies named `DEV<i>#name#copy` or
/// `CPU#…`), per backend (devices, then the host); `None` where the graph is not simulated.
pub fn layouts(desc: &Description, s: &Settings, p: &ContextParams, layers: &[Option<usize>], kv: &KvSummary) -> Option<Vec<super::BufferLayout>> {
    let spec = graph::dense_llama(desc, s, p, layers, kv)?;
    let (n_tokens, n_outputs) = prompt_ubatch(p);
    let (alignments, copies) = backends(desc, s);
    let (sizes, named) = galloc::reserve_layout(spec.build(n_tokens, n_outputs), &alignments, copies).ok()?;
    Some(sizes.into_iter().zip(named).map(|(sz, l)| (sz, l.into_iter().map(|(n, o, z)| (n, o, o.saturating_add(z))).collect())).collect())
}

fn simulated(desc: &Description, s: &Settings, p: &ContextParams, layers: &[Option<usize>], kv: &KvSummary) -> Option<Vec<Buffer>> {
    let spec = graph::dense_llama(desc, s, p, layers, kv)?;
    let n_seqs = p.n_seq.max(1);
    let (n_tokens, n_outputs) = prompt_ubatch(p);
    let (alignments, copies) = backends(desc, s);
    let graph = |t: u64, o: u64| {
        let mut g = spec.build(t, o);
        if s.no_alloc {
            g.assigned.clear();
        }
        g
    };
    let pp = galloc::reserve(graph(n_tokens, n_outputs), &alignments, copies).ok()?;
    // A no_alloc load sizes the buffers from the first prompt reserve alone: the others only
    // split the graph (graph_reserve's `split_only`, src/llama-context.cpp:2566-2571).
    let tg = if s.no_alloc { Vec::new() } else { galloc::reserve(graph(n_seqs, n_seqs), &alignments, copies).ok()? };
    let mut out = Vec::new();
    let n_dev = s.devices.len();
    // The host's buffer first, as the terms model lists it; a buffer is reported when it holds
    // more than a byte (src/llama-context.cpp:736-744).
    for b in std::iter::once(n_dev).chain(0..n_dev) {
        let bytes = pp.get(b).copied().unwrap_or(0).max(tg.get(b).copied().unwrap_or(0));
        if bytes <= 1 {
            continue;
        }
        let (device, buft) = if b == n_dev { (device_label(None), "CPU".to_string()) } else { (device_label(Some(b)), s.devices.get(b).map(|d| d.name.clone()).unwrap_or_default()) };
        out.push(Buffer { device, buft, kind: Kind::Compute, bytes });
    }
    Some(out)
}
