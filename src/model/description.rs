//! One typed description of a model's architecture, read from either side of a conversion:
//! the GGUF header (`{arch}.*` keys, as llama.cpp reads them) or a checkpoint's
//! `config.json` (the keys llama.cpp's converter would write for it, `description/config.rs`,
//! then loaded as a header's). The memory planner ([`crate::model::memory`]) and the model
//! card build on it; tests/families.rs checks that both sides of every fixture pair give the
//! same description.
//!
//! Written by hand: no crate knows these layouts. The rules are llama.cpp's hyper-parameter
//! loading (`src/llama-model.cpp` `load_hparams`, `src/llama-hparams.cpp`, each
//! `src/models/<arch>.cpp` `load_arch_hparams`) in the tree vendored by llama-cpp-python
//! 0.3.36, and the converter's key names (`convert_hf_to_gguf.py`, `gguf-py`).

use crate::formats::gguf::{GgufFile, Value};
use serde::Serialize;
use std::collections::BTreeMap;

mod config;

/// Most layers llama.cpp accepts (`LLAMA_MAX_LAYERS`, `src/llama-hparams.h`); a header
/// claiming more is refused there, and is not described here.
pub const MAX_LAYERS: u64 = 512;
/// Most experts llama.cpp accepts (`LLAMA_MAX_EXPERTS`, `src/llama-hparams.h`).
pub const MAX_EXPERTS: u64 = 512;
/// Largest width believed from a header (embedding, feed-forward, head sizes, vocabulary):
/// 2^32 keeps every product of two of them in u64.
pub const MAX_WIDTH: u64 = 1 << 32;

/// What one layer's attention is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Attention {
    /// Attends to the whole context.
    Full,
    /// A sliding window of `Description::swa.window` tokens.
    Sliding,
    /// Chunked attention (llama4): blocks of `window` tokens.
    Chunked,
    /// Multi-head latent attention (DeepSeek 2/3): a compressed K of `kv_lora_rank + rope`.
    Mla,
    /// A recurrent (state-space or linear-attention) layer: no KV, a fixed state.
    Recurrent,
    /// No attention in this layer (an MLP-only layer of a hybrid).
    None,
}

/// What one layer's feed-forward part is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ffn {
    Dense { n_ff: u64 },
    Moe { experts: u64, used: u64, n_ff_exp: u64, shared: u64, n_ff_shexp: u64 },
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Layer {
    pub attention: Attention,
    pub n_head: u64,
    pub n_head_kv: u64,
    /// Key and value head sizes in this layer (the SWA sizes on a sliding layer).
    pub head_k: u64,
    pub head_v: u64,
    pub ffn: Ffn,
    /// A multi-token-prediction (nextn) layer: the last blocks, not run by the main model.
    pub nextn: bool,
    /// The layer keeps a recurrent state (`is_recr(il)`; falcon-h1's layers also attend).
    pub recurrent: bool,
    /// The layer attends over another layer's cache and has none of its own (gemma4's
    /// `shared_kv_layers`, the last blocks: `!has_kv(il)`, llama.cpp's `n_layer_kv_from_start`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shares_kv: bool,
    /// The layer keeps indexer keys in the indexer's own cache (`create_memory`: DSA's
    /// `filter_lid` — every trunk layer of deepseek32, glm-dsa's `is_indexer_full(il)` ones —,
    /// MSA's `filter_idx`, the layers from `leading_dense_block_count` on).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub indexer: bool,
}

impl Layer {
    /// K and V widths of this layer's cache rows (`n_embd_k_gqa`, `n_embd_v_gqa`).
    pub fn k_width(&self) -> Option<u64> {
        self.head_k.checked_mul(self.n_head_kv)
    }
    pub fn v_width(&self) -> Option<u64> {
        self.head_v.checked_mul(self.n_head_kv)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SwaKind {
    Standard,
    Chunked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Swa {
    pub kind: SwaKind,
    /// Window (or chunk) length in tokens.
    pub window: u64,
}

/// Multi-head latent attention's cache widths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Mla {
    pub kv_lora_rank: u64,
    pub rope_dim: u64,
    pub q_lora_rank: u64,
    /// The decompressed head sizes (`key_length_mla`, `value_length_mla`).
    pub head_k_mla: u64,
    pub head_v_mla: u64,
}

/// DSA's lightning indexer or MSA's block indexer (`attention.indexer.*`): a cache of one
/// head of `head_size` per indexed layer, and the `top_k` cells (DSA) or blocks (MSA) each
/// query keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Indexer {
    pub n_head: u64,
    pub head_size: u64,
    pub top_k: u64,
    /// MSA's position block (`attention.indexer.block_size`, minimax-m3); 0 elsewhere. Only the
    /// compute terms read it (not in the report).
    #[serde(skip)]
    pub block_size: u64,
    /// hybrid-idx's k-pool (`attention.indexer.kpool`, glm5-next: keys pooled `kpool` cells at a
    /// time); 0 elsewhere. Only the compute terms read it (not in the report).
    #[serde(skip)]
    pub kpool: u64,
    /// Whether the k-pool selection appends the incomplete tail's `kpool − 1` cells
    /// (`attention.indexer.kpool_select_tail`, true when absent: src/llama-hparams.h:286).
    #[serde(skip)]
    pub kpool_tail: bool,
}

/// An encoder–decoder model (T5, `llama_model_has_encoder`): the encoder's blocks read the
/// prompt once; the decoder's blocks attend to their own cache (over `block_count` layers,
/// the encoder's count) and, across, to the encoder's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EncoderDecoder {
    /// Decoder blocks (`decoder_block_count`, by default `block_count`); 0 for an encoder
    /// alone (`t5encoder`, `llama_model_has_decoder` false).
    pub dec_layers: u64,
    /// Relative-position buckets (`attention.relative_buckets_count`).
    pub rel_buckets: u64,
}

/// The recurrent state per layer and per sequence, in f32 elements (llama.cpp's
/// `n_embd_r()` and `n_embd_s()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Recurrent {
    pub r: u64,
    pub s: u64,
}

/// Which memory module llama.cpp makes for the architecture (`llama_model::create_memory`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// No KV cache (encoder-only and diffusion models).
    None,
    /// One KV cache over every layer with attention.
    Kv,
    /// A full cache and a sliding-window cache.
    Iswa,
    /// Recurrent state only.
    Recurrent,
    /// Recurrent layers' state plus a KV cache over the attention layers.
    Hybrid,
    /// Hybrid with a sliding-window attention part.
    HybridIswa,
    /// DSA (`llama_kv_cache_dsa`, deepseek32 and glm-dsa): the MLA cache and the lightning
    /// indexer's key cache, both of the full context.
    Dsa,
    /// MSA (`llama_kv_cache_msa`, minimax-m3): a KV cache over every layer and the block
    /// indexer's cache (K, and V: the model is no MLA) over its sparse layers, both of the full
    /// context.
    Msa,
    /// hybrid-idx (`llama_memory_hybrid_idx`, glm5-next): the recurrent layers' state, an MLA
    /// cache over the attention layers and the k-pool indexer's key cache over their full ones.
    HybridIdx,
    /// A memory module tensorpeek does not model (DSV4, DSA-iSWA, …).
    Unmodelled,
}

/// Where a description was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Gguf,
    Config,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Description {
    pub side: Side,
    /// llama.cpp's architecture name (`general.architecture`), also for a config.json.
    pub arch: String,
    pub n_embd: u64,
    pub n_vocab: u64,
    pub n_ctx_train: u64,
    /// Trailing nextn (multi-token prediction) blocks among `layers`.
    pub n_layer_nextn: u64,
    pub causal: bool,
    pub layers: Vec<Layer>,
    pub swa: Option<Swa>,
    pub mla: Option<Mla>,
    pub recurrent: Option<Recurrent>,
    /// The indexer, when the memory is [`MemoryKind::Dsa`] or [`MemoryKind::Msa`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexer: Option<Indexer>,
    /// An encoder–decoder model's decoder (T5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enc_dec: Option<EncoderDecoder>,
    /// Leading dense blocks before the MoE ones (`leading_dense_block_count`).
    pub leading_dense: u64,
    pub memory: MemoryKind,
    /// The model has llama3's RoPE frequency factors (`rope_freqs.weight`, which the converter
    /// writes for a `rope_scaling` of type `llama3`): every RoPE node reads them, on its
    /// layer's device (the compute-buffer simulation needs them; not in the report).
    #[serde(skip)]
    pub rope_freqs: bool,
    /// What could not be read, each a sentence naming the key.
    pub gaps: Vec<String>,
}

impl Description {
    pub fn n_layer_all(&self) -> u64 {
        self.layers.len() as u64
    }
    /// Layers the main model runs (`n_layer()`): all but the nextn ones.
    pub fn n_layer(&self) -> u64 {
        self.n_layer_all().saturating_sub(self.n_layer_nextn)
    }
    pub fn is_moe(&self) -> bool {
        self.layers.iter().any(|l| matches!(l.ffn, Ffn::Moe { .. }))
    }
    /// Largest V width over every layer (`n_embd_v_gqa_max()`: a transposed V is padded to it).
    pub fn v_width_max(&self) -> u64 {
        self.layers.iter().filter_map(Layer::v_width).max().unwrap_or(0)
    }
    /// Experts per MoE layer, and how many are used per token (the first MoE layer's).
    pub fn experts(&self) -> Option<(u64, u64)> {
        self.layers.iter().find_map(|l| match l.ffn {
            Ffn::Moe { experts, used, .. } => Some((experts, used)),
            _ => None,
        })
    }

    /// The attention pattern as a strip, one letter a layer: `F` full, `S` sliding, `C`
    /// chunked, `M` MLA, `R` recurrent, `-` none; a nextn layer in lower case.
    pub fn pattern(&self) -> String {
        self.layers
            .iter()
            .map(|l| {
                let c = match l.attention {
                    Attention::Full => 'F',
                    Attention::Sliding => 'S',
                    Attention::Chunked => 'C',
                    Attention::Mla => 'M',
                    Attention::Recurrent => 'R',
                    Attention::None => '-',
                };
                if l.nextn {
                    c.to_ascii_lowercase()
                } else {
                    c
                }
            })
            .collect()
    }

    /// Parameters a token uses, of `total`: every routed expert tensor counts `used /
    /// experts` of its elements; `None` for a dense model. `tensors` are (name, element
    /// count) pairs, named as in a GGUF (`…_exps` / `…_chexps`, or unmerged
    /// `blk.N.ffn_*.E.…`) or as in a checkpoint (`….experts.…`, per expert or fused as
    /// gpt-oss has them — not `shared_experts` —, Granite's `block_sparse_moe.input_linear` /
    /// `output_linear`).
    pub fn active_params<'a>(&self, tensors: impl Iterator<Item = (&'a str, u64)>) -> Option<(u64, u64)> {
        let (experts, used) = self.experts()?;
        if experts == 0 {
            return None;
        }
        let (mut total, mut routed) = (0u64, 0u64);
        for (name, n) in tensors {
            total = total.saturating_add(n);
            let unmerged = name.split('.').nth(3).is_some_and(|p| p.parse::<u64>().is_ok()) && name.contains(".ffn_");
            let hf = name.split('.').any(|p| p == "experts")
                || name.contains("block_sparse_moe.input_linear.")
                || name.contains("block_sparse_moe.output_linear.");
            if name.contains("_exps.") || name.contains("_chexps.") || unmerged || hf {
                routed = routed.saturating_add(n);
            }
        }
        let inactive = (routed as u128 * (experts - used.min(experts)) as u128 / experts as u128) as u64;
        Some((total.saturating_sub(inactive), total))
    }
}

/// The architectures whose memory module is none (`create_memory`'s first case).
const NO_MEMORY: &[&str] = &[
    "bert", "jina-bert-v2", "jina-bert-v3", "nomic-bert", "nomic-bert-moe", "neo-bert", "eurobert",
    "wavtokenizer-dec", "modern-bert", "gemma-embedding", "dream", "llada", "llada-moe", "rnd1",
];
/// `llm_arch_is_recurrent`.
const RECURRENT: &[&str] = &["mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"];
/// `llm_arch_is_hybrid` (deepseek4 is there too, with its own cache kind: unmodelled).
const HYBRID: &[&str] = &[
    "jamba", "falcon-h1", "plamo2", "granitehybrid", "lfm2", "lfm2moe", "nemotron_h", "nemotron_h_moe",
    "qwen3next", "qwen35", "qwen35moe", "minimax-01",
];
/// Cache kinds of their own (hybrid-idx, DSV4, …): not modelled.
const UNMODELLED: &[&str] = &[
    "dots3note", "deepseek4", "qwen4exp", "dflash",
    "gemma4-assistant",
    // hybrids whose recurrent state has its own formula (KDA, …)
    "kimi-linear", "kimi-k3", "bailingmoe3",
];

/// `llama_kv_cache_dsa` (`create_memory`, src/llama-model.cpp:2397-2448): the indexer's cache
/// over every trunk layer (deepseek32) or over those `is_indexer_full(il)` says (glm-dsa, :2431).
const DSA: &[&str] = &["deepseek32", "glm-dsa"];
/// `llama_kv_cache_dsa` when `attention.indexer.top_k` > 0, else a plain (MLA) cache
/// (`create_memory`, src/llama-model.cpp:2494-2534): the indexer is optional there.
const DSA_IF_INDEXED: &[&str] = &["hy_v4"];
/// `llama_memory_hybrid_idx` (`create_memory`, src/llama-model.cpp:2450-2492).
const HYBRID_IDX: &[&str] = &["glm5-next"];
/// `llama_kv_cache_msa` (`create_memory`, src/llama-model.cpp:2375-2395).
const MSA: &[&str] = &["minimax-m3"];
/// glm-dsa's layer types when `n_ctx_train` is 1,048,576 or more and the header has no
/// `attention.indexer.types` (`GLM_5_2_DEFAULT_INDEXER_TYPES`, src/models/glm-dsa.cpp:6-27):
/// 1 = full, the rest of the array 0 = shared.
const GLM_5_2_INDEXER_TYPES: [bool; 78] = {
    let mut t = [false; 78];
    let mut i = 0;
    while i < 78 {
        t[i] = i < 2 || (i - 2) % 4 == 0;
        i += 1;
    }
    t
};
/// gemma3n's `n_layer_kv_from_start` (src/models/gemma3n.cpp:7): blocks from the 21st on read an
/// earlier block's cache.
const GEMMA3N_KV_FROM_START: u64 = 20;
/// Below this training context glm-dsa is GLM-5 / 5.1, whose layers are all full
/// (`is_pre_5_2`, src/models/glm-dsa.cpp:61).
const GLM_5_2_CONTEXT: u64 = 1_048_576;

/// Archs whose experts are `n_ff` wide (`{n_embd, n_ff, n_expert}` in `load_arch_tensors`,
/// e.g. src/models/llama.cpp:80, granite-hybrid.cpp:108; cohere2moe and grok fall back to
/// `n_ff`): an expert width key of 0 or none means `feed_forward_length`.
const EXPERTS_N_FF: &[&str] = &[
    "llama", "arctic", "dbrx", "granite", "granitemoe", "granitehybrid", "hunyuan-moe", "jamba", "minicpm",
    "minimax-01", "minimax-m2", "mistral3", "olmoe", "phimoe", "refact", "cohere2moe", "grok",
];
/// Archs with `n_ff_exp ? n_ff_exp : n_ff / n_expert_used` (src/models/qwen3moe.cpp:50, …).
const EXPERTS_N_FF_PER_USED: &[&str] = &[
    "qwen2moe", "qwen3moe", "qwen3next", "qwen3vlmoe", "qwen35moe", "glm4moe", "grovemoe", "llada-moe", "mellum",
    "hy_v3",
];

/// An architecture's sliding-window rule: (arch, kind, default pattern n, dense first,
/// default window; `None` = the window key must be there and non-zero). From each
/// `src/models/<arch>.cpp`'s `load_arch_hparams`.
const SWA_RULES: &[(&str, SwaKind, u64, bool, Option<u64>)] = &[
    ("gemma2", SwaKind::Standard, 2, false, Some(4096)),
    ("gemma3", SwaKind::Standard, 6, false, None),
    ("cohere2", SwaKind::Standard, 4, false, Some(0)),
    ("cohere2moe", SwaKind::Standard, 4, true, Some(0)),
    ("gpt-oss", SwaKind::Standard, 2, false, Some(0)),
    ("exaone-moe", SwaKind::Standard, 4, false, Some(128)),
    ("llama4", SwaKind::Chunked, 4, false, Some(8192)),
    // gemma4: the pattern is a required per-layer array and the window a required key.
    ("gemma4", SwaKind::Standard, 0, false, None),
    // gemma3n: pattern 5 (`load_swa_pattern(ml, 5)`), the window required (src/models/gemma3n.cpp:4-11).
    ("gemma3n", SwaKind::Standard, 5, false, None),
];

/// Where the keys come from: a GGUF header, or the keys the converter would write for a
/// config.json ([`config`]), by their full names (`qwen3.block_count`).
enum Source<'a> {
    Gguf(&'a GgufFile),
    Converted(&'a BTreeMap<String, Value>),
}

impl Source<'_> {
    fn kv(&self, key: &str) -> Option<&Value> {
        match self {
            Source::Gguf(file) => file.kv(key),
            Source::Converted(keys) => keys.get(key),
        }
    }
}

/// Reads GGUF keys the way llama.cpp's loader does: `{arch}.` keys, a per-layer key as a
/// scalar or an array of exactly `n_layer_all` values.
struct Keys<'a> {
    src: Source<'a>,
    arch: &'a str,
    gaps: Vec<String>,
}

impl Keys<'_> {
    fn value(&self, key: &str) -> Option<&Value> {
        self.src.kv(&format!("{}.{key}", self.arch))
    }
    fn u64(&self, key: &str) -> Option<u64> {
        self.value(key).and_then(Value::as_u64).filter(|v| *v <= MAX_WIDTH)
    }
    fn bool(&self, key: &str) -> Option<bool> {
        match self.value(key)? {
            Value::Bool(b) => Some(*b != 0),
            v => v.as_u64().map(|n| n != 0),
        }
    }
    /// A per-layer key: a scalar for every layer, or an array of `n` values. An array of
    /// another length (or only partly kept) is a gap, and the key is taken as absent.
    fn per_layer(&mut self, key: &str, n: usize) -> Option<Vec<u64>> {
        match self.value(key)? {
            Value::Array(a) => {
                let vals: Option<Vec<u64>> = a.head.iter().map(|v| v.as_u64().filter(|x| *x <= MAX_WIDTH)).collect();
                match vals {
                    Some(v) if v.len() == n && a.len == n as u64 => Some(v),
                    _ => {
                        self.gaps.push(format!("{}.{key}: an array of {} values where {n} layers were expected", self.arch, a.len));
                        None
                    }
                }
            }
            v => v.as_u64().filter(|x| *x <= MAX_WIDTH).map(|x| vec![x; n]),
        }
    }
    /// A per-layer bool array (`sliding_window_pattern` as an array).
    fn bool_array(&self, key: &str, n: usize) -> Option<Vec<bool>> {
        match self.value(key)? {
            Value::Array(a) if a.len == n as u64 && a.head.len() == n => a
                .head
                .iter()
                .map(|v| match v {
                    Value::Bool(b) => Some(*b != 0),
                    v => v.as_u64().map(|x| x != 0),
                })
                .collect(),
            _ => None,
        }
    }
}

impl Description {
    /// The description llama.cpp would load from this GGUF header. `None` when the header
    /// has no architecture or no block count (nothing to describe); unreadable parts are in
    /// `gaps`.
    pub fn from_gguf(file: &GgufFile) -> Option<Description> {
        let mut desc = Description::load(Source::Gguf(file), file.architecture()?, Side::Gguf)?;
        desc.rope_freqs = file.tensors.iter().any(|t| t.name == "rope_freqs.weight");
        Some(desc)
    }

    /// The description of a Hugging Face `config.json`: the keys llama.cpp's converter would
    /// write for it (`description/config.rs`), loaded as [`Description::from_gguf`] loads a header.
    /// `None` for a `model_type` the converter emulation does not know, or without a layer
    /// count; what the converter would refuse or llama.cpp would do differently from
    /// `transformers` is in `gaps`.
    pub fn from_config(config: &serde_json::Value) -> Option<Description> {
        let conv = config::convert(config)?;
        let mut desc = Description::load(Source::Converted(&conv.keys), conv.arch, Side::Config)?;
        // convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors: rope_freqs for llama3 scaling.
        let rope_type = config.get("rope_scaling").and_then(|r| r.get("rope_type").or_else(|| r.get("type"))).and_then(|t| t.as_str());
        desc.rope_freqs = desc.arch == "llama" && rope_type.is_some_and(|t| t.eq_ignore_ascii_case("llama3"));
        config::finish(&mut desc, conv);
        Some(desc)
    }

    /// The keys llama.cpp's converter would write for this config.json (those the
    /// description reads, by full name; the vocabulary as `tokenizer.ggml.tokens`' length
    /// where no `{arch}.vocab_size` is written), and the architecture: what
    /// [`Description::from_config`] loads.
    pub fn converter_keys(config: &serde_json::Value) -> Option<(&'static str, BTreeMap<String, Value>)> {
        config::convert(config).map(|c| (c.arch, c.keys))
    }

    /// llama.cpp's `load_hparams` over `src`.
    fn load(src: Source, arch: &str, side: Side) -> Option<Description> {
        let mut k = Keys { src, arch, gaps: Vec::new() };
        let n_layer_all = k.u64("block_count").filter(|n| (1..=MAX_LAYERS).contains(n))?;
        let n = usize::try_from(n_layer_all).ok()?;
        let n_embd = k.u64("embedding_length").unwrap_or(0);
        let n_ctx_train = k.u64("context_length").unwrap_or(0);
        let n_layer_nextn = k.u64("nextn_predict_layers").unwrap_or(0).min(n_layer_all);
        let n_layer = n_layer_all - n_layer_nextn;
        let n_vocab = k
            .u64("vocab_size")
            .or_else(|| match k.src.kv("tokenizer.ggml.tokens") {
                Some(Value::Array(a)) => Some(a.len),
                _ => None,
            })
            .unwrap_or(0);
        let causal = k.bool("attention.causal").unwrap_or(true);

        let n_head = k.per_layer("attention.head_count", n).unwrap_or_else(|| vec![0; n]);
        let n_head_kv = k.per_layer("attention.head_count_kv", n).unwrap_or_else(|| n_head.clone());
        let n_ff = k.per_layer("feed_forward_length", n).unwrap_or_else(|| vec![0; n]);
        let head0 = n_head.first().copied().unwrap_or(0);
        let (head_k_full, head_v_full) = if head0 > 0 {
            let default = n_embd / head0;
            (k.u64("attention.key_length").unwrap_or(default), k.u64("attention.value_length").unwrap_or(default))
        } else {
            (0, 0)
        };
        let head_k_swa = k.u64("attention.key_length_swa").unwrap_or(head_k_full);
        let head_v_swa = k.u64("attention.value_length_swa").unwrap_or(head_v_full);

        // Experts.
        let experts = k.u64("expert_count").unwrap_or(0).min(MAX_EXPERTS);
        let used = k.per_layer("expert_used_count", n).unwrap_or_else(|| vec![0; n]);
        let mut n_ff_exp = k.per_layer("expert_feed_forward_length", n).unwrap_or_else(|| vec![0; n]);
        for (i, w) in n_ff_exp.iter_mut().enumerate() {
            let ff = n_ff.get(i).copied().unwrap_or(0);
            if *w == 0 && EXPERTS_N_FF.contains(&arch) {
                *w = ff;
            } else if *w == 0 && EXPERTS_N_FF_PER_USED.contains(&arch) {
                *w = ff.checked_div(used.get(i).copied().unwrap_or(0)).unwrap_or(0);
            }
        }
        let n_ff_shexp = k.u64("expert_shared_feed_forward_length").unwrap_or(0);
        // A shared expert without a count (granite's, qwen2moe's): one (`if (n_ff_shexp > 0)`,
        // src/models/granite-hybrid.cpp:113).
        let shared = k.u64("expert_shared_count").unwrap_or(u64::from(n_ff_shexp > 0));
        let leading_dense = k.u64("leading_dense_block_count").unwrap_or(0);
        // llama4: MoE every `interleave_moe_layer_step`-th layer (`(il + 1) % step == 0`),
        // each with a shared expert as wide as the routed ones (src/models/llama4.cpp:62, 84).
        let moe_step = if arch == "llama4" { k.u64("interleave_moe_layer_step").unwrap_or(0) } else { 1 };
        let shared = if arch == "llama4" && experts > 0 { 1 } else { shared };

        // MLA: both decompressed head sizes given (`is_mla()`).
        let mla = match (k.u64("attention.key_length_mla"), k.u64("attention.value_length_mla")) {
            (Some(hk), Some(hv)) if hk > 0 && hv > 0 => Some(Mla {
                kv_lora_rank: k.u64("attention.kv_lora_rank").unwrap_or(0),
                rope_dim: k.u64("rope.dimension_count").unwrap_or(0),
                q_lora_rank: k.u64("attention.q_lora_rank").unwrap_or(0),
                head_k_mla: hk,
                head_v_mla: hv,
            }),
            _ => None,
        };

        // Sliding window: the arch's rule, the pattern key (bool array or int n).
        let mut is_swa = vec![false; n];
        let mut swa = None;
        let window_key = k.u64("attention.sliding_window");
        if let Some(&(_, kind, default_n, dense_first, default_window)) = SWA_RULES.iter().find(|r| r.0 == arch) {
            let window = match (window_key, default_window) {
                (Some(w), _) => Some(w),
                (None, Some(d)) => Some(d),
                (None, None) => None,
            };
            // gemma3: SWA only with a window > 0; llama4: no SWA when the key says 0.
            let on = match window {
                Some(w) => w > 0 || !matches!(arch, "gemma3" | "llama4"),
                None => false,
            };
            if on {
                let w = window.unwrap_or(0);
                if let Some(flags) = k.bool_array("attention.sliding_window_pattern", n) {
                    is_swa = flags;
                } else {
                    let p = k.u64("attention.sliding_window_pattern").unwrap_or(default_n);
                    set_swa_pattern(&mut is_swa, n_layer, p, dense_first);
                }
                swa = Some(Swa { kind, window: w });
            }
        } else if let Some(flags) = k.bool_array("attention.sliding_window_pattern", n) {
            // The archs that take an explicit per-layer array (granite-swa, step35, …).
            if flags.iter().any(|f| *f) {
                is_swa = flags;
                swa = Some(Swa { kind: SwaKind::Standard, window: window_key.unwrap_or(0) });
            }
        }
        if arch == "phi3" {
            // phi3 disables SWA (`src/models/phi3.cpp`).
            swa = None;
            is_swa = vec![false; n];
        }

        // Recurrent layers.
        let mut is_recr = vec![RECURRENT.contains(&arch); n];
        match arch {
            "jamba" | "lfm2" | "lfm2moe" | "granitehybrid" | "plamo2" | "glm5-next" => {
                for (i, r) in is_recr.iter_mut().enumerate() {
                    *r = n_head_kv.get(i).copied() == Some(0);
                }
            }
            "falcon-h1" => is_recr = vec![true; n],
            "nemotron_h" | "nemotron_h_moe" => {
                for (i, r) in is_recr.iter_mut().enumerate() {
                    *r = (i as u64) < n_layer && n_head_kv.get(i) == Some(&0) && n_ff.get(i) == Some(&0);
                }
            }
            "qwen3next" | "qwen35" | "qwen35moe" | "minimax-01" => {
                if let Some(flags) = k.bool_array("attention.recurrent_layers", n) {
                    is_recr = flags;
                } else {
                    let interval = k.u64("full_attention_interval").unwrap_or(4).max(1);
                    for (i, r) in is_recr.iter_mut().enumerate() {
                        let i = i as u64;
                        *r = i < n_layer && (i + 1) % interval != 0;
                    }
                }
            }
            _ => {}
        }
        if arch == "lfm2" && window_key.is_some_and(|w| w > 0) {
            // lfm2 with a window: its attention layers slide.
            for (s, r) in is_swa.iter_mut().zip(&is_recr) {
                *s = !*r;
            }
            swa = Some(Swa { kind: SwaKind::Standard, window: window_key.unwrap_or(0) });
        }

        let recurrent = if is_recr.iter().any(|r| *r) { recurrent_state(&mut k, arch, n_embd, head0) } else { None };

        // gemma4: the last `shared_kv_layers` blocks read the cache of an earlier one
        // (`n_layer_kv_from_start = n_layer_all - shared_kv_layers`, src/models/gemma4.cpp).
        let kv_from_start = match arch {
            "gemma4" => Some(n_layer_all.saturating_sub(k.u64("attention.shared_kv_layers").unwrap_or(0))),
            // gemma3n: a fixed 20 (src/models/gemma3n.cpp:7).
            "gemma3n" => Some(GEMMA3N_KV_FROM_START),
            _ => None,
        };

        // The indexer (src/models/deepseek32.cpp and glm-dsa.cpp `load_arch_hparams`: the three
        // keys are required; minimax-m3.cpp also requires `block_size` — asserted > 0 — and
        // `local_blocks`).
        let msa = MSA.contains(&arch);
        // hy_v4 (src/models/hy-v4.cpp:45-61): the keys are optional, top_k 0 means no indexer;
        // with one, its head count must be > 0 and its key length above the rope's.
        let optional = DSA_IF_INDEXED.contains(&arch);
        // A header llama.cpp refuses to load for its indexer: no plan.
        let mut refused_indexer = false;
        let indexer = if optional {
            match (k.u64("attention.indexer.head_count"), k.u64("attention.indexer.key_length"), k.u64("attention.indexer.top_k")) {
                (_, _, None | Some(0)) => None,
                (Some(n_head), Some(head_size), Some(top_k)) if n_head > 0 && head_size > k.u64("rope.dimension_count").unwrap_or(0) => {
                    Some(Indexer { n_head, head_size, top_k, block_size: 0, kpool: 0, kpool_tail: false })
                }
                _ => {
                    k.gaps.push(format!("{arch}.attention.indexer: a bad head count or key length, which llama.cpp refuses"));
                    refused_indexer = true;
                    None
                }
            }
        } else if HYBRID_IDX.contains(&arch) {
            // src/models/glm5-next.cpp:39-45: the four keys are required, the k-pool > 1 and
            // dividing top_k (asserted).
            match (k.u64("attention.indexer.head_count"), k.u64("attention.indexer.key_length"), k.u64("attention.indexer.top_k"), k.u64("attention.indexer.kpool")) {
                (Some(n_head), Some(head_size), Some(top_k), Some(kpool)) if kpool > 1 && top_k % kpool == 0 => Some(Indexer { n_head, head_size, top_k, block_size: 0, kpool, kpool_tail: k.bool("attention.indexer.kpool_select_tail").unwrap_or(true) }),
                _ => {
                    k.gaps.push(format!("{arch}.attention.indexer.head_count / key_length / top_k / kpool (> 1, dividing top_k): missing or wrong, which llama.cpp refuses"));
                    None
                }
            }
        } else if DSA.contains(&arch) || msa {
            let blocks = !msa || (k.u64("attention.indexer.block_size").is_some_and(|b| b > 0) && k.u64("attention.indexer.local_blocks").is_some());
            match (k.u64("attention.indexer.head_count"), k.u64("attention.indexer.key_length"), k.u64("attention.indexer.top_k")) {
                (Some(n_head), Some(head_size), Some(top_k)) if blocks => {
                    Some(Indexer { n_head, head_size, top_k, block_size: if msa { k.u64("attention.indexer.block_size").unwrap_or(0) } else { 0 }, kpool: 0, kpool_tail: false })
                }
                _ => {
                    let keys = if msa { "head_count / key_length / top_k / block_size (> 0) / local_blocks" } else { "head_count / key_length / top_k" };
                    k.gaps.push(format!("{arch}.attention.indexer.{keys}: missing, which llama.cpp refuses"));
                    None
                }
            }
        } else {
            None
        };
        // Which layers keep indexer keys: every trunk layer (deepseek32); glm-dsa's full ones —
        // all below GLM-5.2's context, GLM-5.2's table above it, then `attention.indexer.types`
        // (`get_key_or_arr` over `n_layer()` entries: another length is refused) —; MSA's from
        // `leading_dense_block_count` on (src/llama-model.cpp:2379).
        let indexed: Vec<bool> = match arch {
            _ if indexer.is_none() => vec![false; n],
            // hy_v4: `attention.indexer.types` over `n_layer()`, all shared without it — and
            // layer 0 must be full, or llama.cpp refuses the model.
            "hy_v4" => {
                let n_trunk = usize::try_from(n_layer).unwrap_or(n);
                let mut full = vec![false; n];
                if let Some(types) = k.bool_array("attention.indexer.types", n_trunk) {
                    full.iter_mut().zip(types).for_each(|(f, t)| *f = t);
                }
                if full.first() != Some(&true) {
                    k.gaps.push(format!("{arch}.attention.indexer.types: layer 0 is not full, which llama.cpp refuses"));
                    refused_indexer = true;
                }
                full
            }
            // glm5-next: the attention (non-recurrent) trunk layers `attention.indexer.types`
            // calls full, all by default (src/models/glm5-next.cpp:46-47; the filter,
            // src/llama-model.cpp:2457-2459).
            "glm5-next" => {
                let n_trunk = usize::try_from(n_layer).unwrap_or(n);
                let types = k.bool_array("attention.indexer.types", n_trunk);
                if types.is_none() && k.value("attention.indexer.types").is_some() {
                    k.gaps.push(format!("{arch}.attention.indexer.types: not an array of {n_trunk} values, which llama.cpp refuses"));
                }
                (0..n).map(|i| i < n_trunk && !is_recr.get(i).copied().unwrap_or(false) && types.as_ref().is_none_or(|t| t.get(i).copied().unwrap_or(false))).collect()
            }
            "glm-dsa" => {
                let mut full: Vec<bool> = if n_ctx_train < GLM_5_2_CONTEXT {
                    vec![true; n]
                } else {
                    (0..n).map(|i| GLM_5_2_INDEXER_TYPES.get(i).copied().unwrap_or(false)).collect()
                };
                let n_trunk = usize::try_from(n_layer).unwrap_or(n);
                let is_array = matches!(k.value("attention.indexer.types"), Some(Value::Array(_)));
                let scalar = k.value("attention.indexer.types").map(Value::as_u64);
                if is_array {
                    match k.bool_array("attention.indexer.types", n_trunk) {
                        Some(types) => full.iter_mut().zip(types).for_each(|(f, t)| *f = t),
                        None => k.gaps.push(format!("{arch}.attention.indexer.types: not an array of {n_trunk} values, which llama.cpp refuses")),
                    }
                } else if let Some(scalar) = scalar {
                    match scalar {
                        Some(x) => full.iter_mut().take(n_trunk).for_each(|f| *f = x != 0),
                        None => k.gaps.push(format!("{arch}.attention.indexer.types: neither a number nor an array, which llama.cpp refuses")),
                    }
                }
                full
            }
            _ if msa => (0..n).map(|i| i as u64 >= leading_dense).collect(),
            _ => vec![true; n],
        };
        // Encoder–decoder (`llama_model_has_encoder`, src/llama-model.cpp:3310): T5's
        // `decoder_block_count` defaults to `block_count` (src/models/t5.cpp:12); t5encoder has
        // no decoder (:3320). Both get the `create_memory` default, a plain KV cache over
        // `block_count` layers (:2856) — t5encoder's is never used.
        let enc_dec = match arch {
            "t5" => Some(EncoderDecoder {
                dec_layers: k.u64("decoder_block_count").unwrap_or(n_layer_all),
                rel_buckets: k.u64("attention.relative_buckets_count").unwrap_or(0),
            }),
            "t5encoder" => Some(EncoderDecoder { dec_layers: 0, rel_buckets: k.u64("attention.relative_buckets_count").unwrap_or(0) }),
            _ => None,
        };

        let memory = if NO_MEMORY.contains(&arch) {
            MemoryKind::None
        } else if UNMODELLED.contains(&arch) || refused_indexer || ((DSA.contains(&arch) || msa || HYBRID_IDX.contains(&arch)) && indexer.is_none()) {
            MemoryKind::Unmodelled
        } else if DSA.contains(&arch) || (optional && indexer.is_some()) {
            MemoryKind::Dsa
        } else if msa {
            MemoryKind::Msa
        } else if HYBRID_IDX.contains(&arch) {
            MemoryKind::HybridIdx
        } else if RECURRENT.contains(&arch) {
            MemoryKind::Recurrent
        } else if HYBRID.contains(&arch) {
            if swa.is_some() {
                MemoryKind::HybridIswa
            } else {
                MemoryKind::Hybrid
            }
        } else if swa.is_some() {
            MemoryKind::Iswa
        } else {
            MemoryKind::Kv
        };

        let layers = (0..n)
            .map(|i| {
                let il = i as u64;
                let recr = is_recr.get(i).copied().unwrap_or(false);
                let sw = is_swa.get(i).copied().unwrap_or(false);
                let nh = n_head.get(i).copied().unwrap_or(0);
                let nkv = n_head_kv.get(i).copied().unwrap_or(0);
                let attention = if recr && arch != "falcon-h1" {
                    Attention::Recurrent
                } else if nh == 0 && !recr {
                    if RECURRENT.contains(&arch) {
                        Attention::Recurrent
                    } else {
                        Attention::None
                    }
                } else if mla.is_some() {
                    Attention::Mla
                } else if sw {
                    match swa.map(|s| s.kind) {
                        Some(SwaKind::Chunked) => Attention::Chunked,
                        _ => Attention::Sliding,
                    }
                } else {
                    Attention::Full
                };
                let used_i = used.get(i).copied().unwrap_or(0);
                let moe_layer = moe_step > 0 && (il + 1).is_multiple_of(moe_step);
                let ffn = if experts > 0 && used_i > 0 && il >= leading_dense && moe_layer {
                    Ffn::Moe {
                        experts,
                        used: used_i,
                        n_ff_exp: n_ff_exp.get(i).copied().unwrap_or(0),
                        shared,
                        n_ff_shexp: if shared > 0 && n_ff_shexp == 0 { n_ff_exp.get(i).copied().unwrap_or(0) } else { n_ff_shexp },
                    }
                } else {
                    match n_ff.get(i).copied().unwrap_or(0) {
                        0 => Ffn::None,
                        f => Ffn::Dense { n_ff: f },
                    }
                };
                let (head_k, head_v) = if sw { (head_k_swa, head_v_swa) } else { (head_k_full, head_v_full) };
                let shares_kv = kv_from_start.is_some_and(|from| il >= from);
                let nextn = il >= n_layer;
                let indexer = !nextn && indexed.get(i).copied().unwrap_or(false);
                Layer { attention, n_head: nh, n_head_kv: nkv, head_k, head_v, ffn, nextn, recurrent: recr, shares_kv, indexer }
            })
            .collect();

        Some(Description {
            side,
            arch: arch.to_string(),
            n_embd,
            n_vocab,
            n_ctx_train,
            n_layer_nextn,
            causal,
            layers,
            swa,
            mla,
            recurrent,
            indexer,
            enc_dec,
            leading_dense,
            memory,
            rope_freqs: false,
            gaps: k.gaps,
        })
    }
}

/// `set_swa_pattern(n, dense_first)`: layer il slides iff `n == 0 || il % n < n - 1`
/// (dense first: `il % n != 0`); nextn layers never slide.
fn set_swa_pattern(is_swa: &mut [bool], n_layer: u64, n_pattern: u64, dense_first: bool) {
    for (il, s) in is_swa.iter_mut().enumerate() {
        let il = il as u64;
        *s = il < n_layer
            && (n_pattern == 0
                || if dense_first { il % n_pattern != 0 } else { il % n_pattern < n_pattern.saturating_sub(1) });
    }
}

/// `n_embd_r()` / `n_embd_s()` (`src/llama-hparams.cpp`): the recurrent state's row widths.
fn recurrent_state(k: &mut Keys, arch: &str, n_embd: u64, n_head0: u64) -> Option<Recurrent> {
    let wkv = k.u64("wkv.head_size").unwrap_or(0);
    if wkv != 0 {
        let shift = k.u64("token_shift_count").unwrap_or(2);
        return Some(Recurrent { r: shift.checked_mul(n_embd)?, s: n_embd.checked_mul(wkv)? });
    }
    // Kimi's KDA (glm5-next's linear layers too): the Q, K and V convolutions' state, and a
    // head_dim² state per head (src/llama-hparams.cpp:219-224, 242-247).
    if let Some(kda) = k.u64("kda.head_dim").filter(|d| *d > 0) {
        let d_conv = k.u64("ssm.conv_kernel").unwrap_or(0);
        let d_inner = n_head0.checked_mul(kda)?;
        let conv = if d_conv > 0 { d_conv - 1 } else { 3 };
        return Some(Recurrent { r: conv.checked_mul(d_inner)?.checked_mul(3)?, s: kda.checked_mul(kda)?.checked_mul(n_head0)? });
    }
    if let Some(l_cache) = k.u64("shortconv.l_cache") {
        let s = k.u64("ssm.state_size").unwrap_or(0).checked_mul(k.u64("ssm.inner_size").unwrap_or(0))?;
        return Some(Recurrent { r: n_embd.checked_mul(l_cache.saturating_sub(1))?, s });
    }
    let d_conv = k.u64("ssm.conv_kernel").unwrap_or(0);
    let d_inner = k.u64("ssm.inner_size").unwrap_or(0);
    let d_state = k.u64("ssm.state_size").unwrap_or(0);
    let n_group = k.u64("ssm.group_count").unwrap_or(0);
    let r = d_conv.saturating_sub(1).checked_mul(d_inner.checked_add(n_group.checked_mul(d_state)?.checked_mul(2)?)?)?;
    let s = if arch == "minimax-01" {
        let h = k.u64("attention.key_length").unwrap_or(0);
        h.checked_mul(h)?.checked_mul(n_head0)?
    } else {
        d_state.checked_mul(d_inner)?
    };
    Some(Recurrent { r, s })
}

#[cfg(test)]
mod tests;
