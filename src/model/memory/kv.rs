//! The memory module's buffers: the KV cache (`src/llama-kv-cache.cpp`), its sliding-window
//! twin (`src/llama-kv-cache-iswa.cpp`), DSA's indexer key cache (`src/llama-kv-cache-dsa.cpp`),
//! MSA's indexer cache (`src/llama-kv-cache-msa.cpp`) and the recurrent state (`src/llama-memory-recurrent.cpp`), each on the device of its layer.

use super::params::{pad, ContextParams, CTX_PAD};
use super::weights::CPU_ALIGNMENT;
use super::{device_label, Backend, Buffer, Kind, KvSummary, Settings};
use crate::model::description::{Attention, Description, Layer, MemoryKind};
use std::collections::BTreeMap;

fn has_kv(l: &Layer) -> bool {
    !l.nextn && !l.shares_kv && matches!(l.attention, Attention::Full | Attention::Sliding | Attention::Chunked | Attention::Mla)
}

fn slides(l: &Layer) -> bool {
    matches!(l.attention, Attention::Sliding | Attention::Chunked)
}

/// Bytes of a cache tensor in a buffer of `device` (alignment, CUDA's quantized row padding).
fn padded(bytes: u64, row_elems: u64, quant: Option<(u64, u64)>, device: Option<usize>, s: &Settings) -> u64 {
    let backend = device.and_then(|d| s.devices.get(d)).map(|d| d.backend);
    match backend {
        Some(Backend::Cuda) => {
            let mut b = bytes;
            if let Some((blck, tsize)) = quant {
                if row_elems % 512 != 0 {
                    b = b.saturating_add((512 - row_elems % 512) / blck * tsize);
                }
            }
            pad(b, 128)
        }
        _ => pad(bytes, CPU_ALIGNMENT),
    }
}

/// The cache llama.cpp makes, its buffers per device, and a refusal if any.
pub fn cache(
    desc: &Description,
    s: &Settings,
    p: &ContextParams,
    layers: &[Option<usize>],
) -> (KvSummary, Vec<Buffer>, Option<String>) {
    let v_trans = !p.flash_attn;
    let mut sum = KvSummary {
        memory: desc.memory,
        cells: 0,
        swa_cells: None,
        streams: p.n_stream,
        type_k: s.type_k,
        type_v: s.type_v,
        layers: 0,
        swa_layers: 0,
        k_bytes: 0,
        v_bytes: 0,
        recurrent_layers: 0,
        r_bytes: 0,
        s_bytes: 0,
        indexer_layers: 0,
        indexer_k_bytes: 0,
        indexer_v_bytes: 0,
        v_trans,
    };
    let mut bufs: BTreeMap<(u8, Option<usize>), u64> = BTreeMap::new();
    let device_of = |il: usize| if s.offload_kqv { layers.get(il).copied().flatten() } else { None };
    let attends = !matches!(desc.memory, MemoryKind::None | MemoryKind::Recurrent);
    let iswa = matches!(desc.memory, MemoryKind::Iswa | MemoryKind::HybridIswa);
    if attends {
        sum.cells = p.n_ctx_seq;
        let swa_cells = desc.swa.map(|w| {
            if s.swa_full {
                p.n_ctx_seq
            } else {
                let seqs = if s.kv_unified { p.n_seq } else { 1 };
                pad(p.n_ctx_seq.min(w.window.saturating_mul(seqs).saturating_add(p.n_ubatch)), CTX_PAD)
            }
        });
        if iswa {
            sum.swa_cells = swa_cells;
        }
        let v_max = desc.v_width_max();
        for (il, l) in desc.layers.iter().enumerate() {
            if !has_kv(l) {
                continue;
            }
            let swa_layer = iswa && slides(l);
            let cells = if swa_layer { swa_cells.unwrap_or(p.n_ctx_seq) } else { p.n_ctx_seq };
            let rows = cells.saturating_mul(p.n_stream);
            let kw = l.k_width().unwrap_or(0);
            let k = s.type_k.row_size(kw).unwrap_or(0).saturating_mul(rows);
            let (vw, v) = if l.attention == Attention::Mla {
                (0, 0)
            } else {
                let vw = if v_trans { v_max } else { l.v_width().unwrap_or(0) };
                (vw, s.type_v.row_size(vw).unwrap_or(0).saturating_mul(rows))
            };
            sum.layers += 1;
            if swa_layer {
                sum.swa_layers += 1;
            }
            sum.k_bytes += k;
            sum.v_bytes += v;
            let d = device_of(il);
            let q = |t: super::CacheType| Some((t.ggml().block_size, t.ggml().type_size)).filter(|_| t.is_quantized());
            let key = (u8::from(swa_layer), d);
            *bufs.entry(key).or_insert(0) += padded(k, kw, q(s.type_k), d, s);
            if l.attention != Attention::Mla {
                *bufs.entry(key).or_insert(0) += padded(v, vw, q(s.type_v), d, s);
            }
        }
    }
    // The indexer's cache: a second `llama_kv_cache` of the same cells over a copy of the
    // hyper-parameters with one KV head of `indexer.key_length` (DSA, src/llama-kv-cache-dsa.cpp:
    // 39-53; MSA, src/llama-kv-cache-msa.cpp:38-49), over the layers its filter keeps, of
    // `-ctk` / `-ctv`, on each layer's device, a buffer of its own. DSA's model is MLA, so K
    // only (src/llama-kv-cache.cpp:231); MSA's is not, so each layer also gets a V of the model's
    // `value_length` × that one head — transposed (flash attention off), padded to the widest,
    // which is the same here: every layer has the one head (`n_embd_v_gqa_max`, :215).
    // hybrid-idx (src/llama-memory-hybrid-idx.cpp:54-71) fakes MLA for its indexer cache (K only)
    // and keeps key, gate and pooled values per token: a row of 3 × `indexer.key_length` (its
    // k-pool is asserted > 1).
    if let (Some(ix), MemoryKind::Dsa | MemoryKind::Msa | MemoryKind::HybridIdx) = (desc.indexer, desc.memory) {
        let rows = p.n_ctx_seq.saturating_mul(p.n_stream);
        let with_v = desc.memory == MemoryKind::Msa;
        let width = if desc.memory == MemoryKind::HybridIdx { ix.head_size.saturating_mul(3) } else { ix.head_size };
        let q = |t: super::CacheType| Some((t.ggml().block_size, t.ggml().type_size)).filter(|_| t.is_quantized());
        let v_max = if v_trans { desc.layers.iter().map(|l| l.head_v).max().unwrap_or(0) } else { 0 };
        for (il, l) in desc.layers.iter().enumerate() {
            if !l.indexer || l.nextn {
                continue;
            }
            let k = s.type_k.row_size(width).unwrap_or(0).saturating_mul(rows);
            let vw = if v_trans { v_max } else { l.head_v };
            let v = if with_v { s.type_v.row_size(vw).unwrap_or(0).saturating_mul(rows) } else { 0 };
            sum.indexer_layers += 1;
            sum.indexer_k_bytes += k;
            sum.indexer_v_bytes += v;
            let d = device_of(il);
            let mut b = padded(k, width, q(s.type_k), d, s);
            if with_v {
                b = b.saturating_add(padded(v, vw, q(s.type_v), d, s));
            }
            *bufs.entry((3, d)).or_insert(0) += b;
        }
    }
    if let Some(r) = desc.recurrent.filter(|_| matches!(desc.memory, MemoryKind::Recurrent | MemoryKind::Hybrid | MemoryKind::HybridIswa | MemoryKind::HybridIdx)) {
        let rows = p.n_seq.max(1);
        for (il, l) in desc.layers.iter().enumerate() {
            if !l.recurrent || l.nextn {
                continue;
            }
            let rb = r.r.saturating_mul(rows).saturating_mul(4);
            let sb = r.s.saturating_mul(rows).saturating_mul(4);
            sum.recurrent_layers += 1;
            sum.r_bytes += rb;
            sum.s_bytes += sb;
            let d = device_of(il);
            *bufs.entry((2, d)).or_insert(0) += padded(rb, r.r, None, d, s) + padded(sb, r.s, None, d, s);
        }
    }
    let buffers = bufs
        .into_iter()
        .filter(|(_, b)| *b > 0)
        .map(|((_, d), bytes)| Buffer {
            device: device_label(d),
            buft: match d {
                Some(i) => s.devices.get(i).map_or_else(|| format!("GPU{i}"), |x| x.name.clone()),
                None => "CPU".to_string(),
            },
            kind: Kind::Context,
            bytes,
        })
        .collect();
    (sum, buffers, None)
}
