//! The context parameters llama.cpp derives from the settings (`llama_context`'s
//! constructor, `src/llama-context.cpp`), and the refusals it makes on the way.

use super::{NoPlan, Settings, MAX_CONTEXT, MAX_SEQ};
use crate::dtype::ggml::GgmlType;
use crate::model::description::{Description, MemoryKind};
use serde::Serialize;

/// A KV cache element type (`-ctk`, `-ctv`: the types `common/arg.cpp` allows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheType {
    F32,
    F16,
    Bf16,
    Q8_0,
    Q4_0,
    Q4_1,
    Iq4Nl,
    Q5_0,
    Q5_1,
}

impl CacheType {
    pub const ALL: [CacheType; 9] = [
        CacheType::F32,
        CacheType::F16,
        CacheType::Bf16,
        CacheType::Q8_0,
        CacheType::Q4_0,
        CacheType::Q4_1,
        CacheType::Iq4Nl,
        CacheType::Q5_0,
        CacheType::Q5_1,
    ];
    /// llama.cpp's spelling (`f16`, `q8_0`, `iq4_nl`).
    pub fn name(self) -> &'static str {
        match self {
            CacheType::F32 => "f32",
            CacheType::F16 => "f16",
            CacheType::Bf16 => "bf16",
            CacheType::Q8_0 => "q8_0",
            CacheType::Q4_0 => "q4_0",
            CacheType::Q4_1 => "q4_1",
            CacheType::Iq4Nl => "iq4_nl",
            CacheType::Q5_0 => "q5_0",
            CacheType::Q5_1 => "q5_1",
        }
    }
    pub fn parse(s: &str) -> Option<CacheType> {
        CacheType::ALL.into_iter().find(|t| t.name().eq_ignore_ascii_case(s))
    }
    pub fn ggml(self) -> GgmlType {
        let name = match self {
            CacheType::F32 => "F32",
            CacheType::F16 => "F16",
            CacheType::Bf16 => "BF16",
            CacheType::Q8_0 => "Q8_0",
            CacheType::Q4_0 => "Q4_0",
            CacheType::Q4_1 => "Q4_1",
            CacheType::Iq4Nl => "IQ4_NL",
            CacheType::Q5_0 => "Q5_0",
            CacheType::Q5_1 => "Q5_1",
        };
        // Every name above is in the table (tested).
        GgmlType::from_name(name).unwrap_or(crate::dtype::ggml::GGML_TYPES[1])
    }
    pub fn is_quantized(self) -> bool {
        self.ggml().block_size > 1
    }
    /// `ggml_row_size(type, n)`: bytes of `n` elements (`type_size · n / block_size`).
    pub fn row_size(self, n: u64) -> Option<u64> {
        let t = self.ggml();
        n.checked_mul(t.type_size).map(|b| b / t.block_size.max(1))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlashAttn {
    Auto,
    On,
    Off,
}

impl FlashAttn {
    pub fn parse(s: &str) -> Option<FlashAttn> {
        match s {
            "auto" => Some(FlashAttn::Auto),
            "on" | "1" | "true" => Some(FlashAttn::On),
            "off" | "0" | "false" => Some(FlashAttn::Off),
            _ => None,
        }
    }
}

/// The parameters llama.cpp derives (`cparams`), as the KV cache and the compute buffers
/// see them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContextParams {
    /// Context length after padding and the per-stream split (`n_ctx`).
    pub n_ctx: u64,
    /// Cells per stream (`n_ctx_seq`).
    pub n_ctx_seq: u64,
    pub n_seq: u64,
    pub n_stream: u64,
    pub n_batch: u64,
    pub n_ubatch: u64,
    pub n_outputs_max: u64,
    /// Flash attention as the cache is made (`auto` counts as on: V not transposed).
    pub flash_attn: bool,
    #[serde(skip)]
    pub refused: Option<String>,
}

/// `GGML_PAD(x, n)`, rounding up.
pub fn pad(x: u64, n: u64) -> u64 {
    if n == 0 {
        return x;
    }
    x.div_ceil(n).saturating_mul(n)
}

/// llama.cpp pads the context to this many cells (`llama_context`: `GGML_PAD(n_ctx, 256)`).
pub const CTX_PAD: u64 = 256;

pub fn derive(desc: &Description, s: &Settings) -> Result<(ContextParams, Vec<String>), NoPlan> {
    let mut warnings = Vec::new();
    let mut refused = None;
    if s.n_seq > MAX_SEQ {
        return Err(NoPlan::Setting(format!("n_seq_max must be <= {MAX_SEQ}")));
    }
    if s.n_ctx > MAX_CONTEXT {
        return Err(NoPlan::Setting(format!("a context of at most {MAX_CONTEXT} tokens")));
    }
    if s.n_batch == 0 || s.n_ubatch == 0 {
        return Err(NoPlan::Setting("the batch sizes must be at least 1".to_string()));
    }
    let n_seq = s.n_seq.max(1);
    let mut n_ctx = if s.n_ctx == 0 { desc.n_ctx_train } else { s.n_ctx };
    let n_batch = if desc.causal { n_ctx.min(s.n_batch) } else { s.n_batch };
    let n_ubatch = n_batch.min(s.n_ubatch);
    let n_outputs_max = n_batch;
    n_ctx = pad(n_ctx, CTX_PAD);
    let n_ctx_seq = if s.kv_unified {
        n_ctx
    } else {
        let per = pad(n_ctx / n_seq, CTX_PAD);
        n_ctx = per.saturating_mul(n_seq);
        per
    };
    let n_stream = if s.kv_unified { 1 } else { n_seq };
    if desc.n_ctx_train > 0 && n_ctx_seq > desc.n_ctx_train {
        warnings.push(format!(
            "n_ctx_seq ({n_ctx_seq}) > n_ctx_train ({}) -- possible training context overflow: llama.cpp runs, but the model was not trained for positions past {}",
            desc.n_ctx_train, desc.n_ctx_train
        ));
    }

    // Flash attention (`llama_init_from_model`).
    let quant_v = s.type_v.is_quantized();
    let quant_k = s.type_k.is_quantized();
    let mut fa = s.flash_attn;
    if desc.arch == "grok" {
        fa = FlashAttn::Off;
    }
    if desc.mla.is_some() && s.type_k != s.type_v {
        refused = Some(format!("model does not support different K ({}) and V ({}) cache types", s.type_k.name(), s.type_v.name()));
    }
    if quant_v {
        match fa {
            FlashAttn::Off => {
                refused.get_or_insert_with(|| "quantized V cache requires flash_attn to be enabled".to_string());
            }
            FlashAttn::Auto => fa = FlashAttn::On,
            FlashAttn::On => {}
        }
    }
    let flash_attn = fa != FlashAttn::Off;
    if flash_attn && (quant_k || quant_v) && desc.memory != MemoryKind::None {
        // K for every main layer first, then V (`llama_init_from_model`'s order).
        for (t, what) in [(s.type_k, "k"), (s.type_v, "v")] {
            let blck = t.ggml().block_size;
            for l in desc.layers.iter().filter(|l| !l.nextn) {
                let h = if what == "k" { l.head_k } else { l.head_v };
                if t.is_quantized() && h % blck != 0 {
                    refused.get_or_insert_with(|| {
                        format!(
                            "{} cache type {} with block size {blck} does not divide n_embd_head_{what}={h}",
                            what.to_uppercase(),
                            t.name()
                        )
                    });
                }
            }
        }
    }
    Ok((ContextParams { n_ctx, n_ctx_seq, n_seq, n_stream, n_batch, n_ubatch, n_outputs_max, flash_attn, refused }, warnings))
}

/// The output buffer at creation (`output_reserve`): logits for `n_seq_max` outputs, f32; T5
/// also keeps the embeddings (`has_embd`, src/llama-context.cpp:2131-2135).
pub fn output_bytes(desc: &Description, p: &ContextParams) -> u64 {
    let embd = if desc.arch == "t5" { desc.n_embd } else { 0 };
    desc.n_vocab.saturating_add(embd).saturating_mul(p.n_seq).saturating_mul(4)
}
