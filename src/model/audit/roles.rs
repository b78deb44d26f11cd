//! Which GGUF tensor holds which Hugging Face tensor, per architecture, and what
//! llama.cpp's converter does to it on the way.
//!
//! Facts (no code) from llama.cpp's `convert_hf_to_gguf.py` (`conversion/llama.py`,
//! `gemma.py`, `qwen.py`, `phi.py`, `base.py`) and gguf-py's `tensor_mapping.py` /
//! `constants.py` (the HF ↔ GGUF name table and `TENSOR_NAMES`):
//! - names: `model.embed_tokens` → `token_embd`, `model.norm` → `output_norm`, `lm_head`
//!   → `output`, `model.layers.N.<module>` → `blk.N.<role>` (table below); the
//!   `.weight` / `.bias` suffix is kept;
//! - `model.layers.N.post_attention_layernorm` is `ffn_norm` in llama, mistral, qwen2,
//!   qwen3, gemma and phi3 but `post_attention_norm` in gemma2 and gemma3, whose
//!   `pre_feedforward_layernorm` is `ffn_norm`;
//! - the Q/K row permutation (`LlamaModel.permute`, `undo_permute = True`) is applied by
//!   the llama converter — also to mistral checkpoints, which it converts — to
//!   `q_proj.weight/bias` with `num_attention_heads` and `k_proj.weight/bias` with
//!   `num_key_value_heads`. qwen2, qwen3, gemma 1/2/3 and phi3 use NEOX-style rope and are
//!   written unpermuted;
//! - gemma 1/2/3 add 1 to every `*norm.weight` (the modules compute `x · (1 + w)`);
//!   gemma and gemma2 drop `lm_head.weight`; gemma3 keeps only the embedding rows the
//!   tokenizer uses;
//! - generated tensors: `rope_freqs.weight` for a llama-family config whose rope type is
//!   `llama3`; `rope_factors_long.weight` / `rope_factors_short.weight` for phi3 with
//!   `long_factor` / `short_factor`;
//! - the converter skips `*.rotary_emb.inv_freq` buffers.

use crate::model::architecture::Family;

/// The family a GGUF `general.architecture` names.
pub fn family_of_gguf_arch(arch: &str) -> Family {
    match arch {
        "llama" | "mistral" => Family::Llama,
        "qwen2" => Family::Qwen2,
        "qwen3" => Family::Qwen3,
        "gemma" => Family::Gemma,
        "gemma2" => Family::Gemma2,
        "gemma3" => Family::Gemma3,
        "phi3" => Family::Phi3,
        _ => Family::Unknown,
    }
}

/// The families whose tensors this audit pairs by role (a name in the report).
pub const SUPPORTED: &str = "llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3, phi3";

/// `model.layers.N.` module → GGUF role, shared by every supported family.
const LAYER_ROLES: &[(&str, &str)] = &[
    ("input_layernorm", "attn_norm"),
    ("self_attn.q_proj", "attn_q"),
    ("self_attn.k_proj", "attn_k"),
    ("self_attn.v_proj", "attn_v"),
    ("self_attn.o_proj", "attn_output"),
    ("self_attn.qkv_proj", "attn_qkv"),
    ("self_attn.q_norm", "attn_q_norm"),
    ("self_attn.k_norm", "attn_k_norm"),
    ("pre_feedforward_layernorm", "ffn_norm"),
    ("post_feedforward_layernorm", "post_ffw_norm"),
    ("mlp.gate_proj", "ffn_gate"),
    ("mlp.up_proj", "ffn_up"),
    ("mlp.down_proj", "ffn_down"),
    ("mlp.gate_up_proj", "ffn_up"),
];

/// The name without the decoder's `model.` prefix (a bare `*Model` checkpoint has none).
fn strip_model(name: &str) -> &str {
    name.strip_prefix("model.").unwrap_or(name)
}

/// The GGUF name the converter gives a Hugging Face tensor, `None` when the name has no
/// role in the table.
pub fn gguf_name(family: Family, hf: &str) -> Option<String> {
    if hf == "lm_head.weight" {
        return Some("output.weight".into());
    }
    let name = strip_model(hf);
    match name {
        "embed_tokens.weight" => return Some("token_embd.weight".into()),
        "norm.weight" => return Some("output_norm.weight".into()),
        _ => {}
    }
    let rest = name.strip_prefix("layers.")?;
    let (layer, module) = rest.split_once('.')?;
    if layer.is_empty() || !layer.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (module, suffix) = module.rsplit_once('.')?;
    if suffix != "weight" && suffix != "bias" {
        return None;
    }
    let role = if module == "post_attention_layernorm" {
        match family {
            Family::Gemma2 | Family::Gemma3 => "post_attention_norm",
            _ => "ffn_norm",
        }
    } else {
        LAYER_ROLES.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)?
    };
    Some(format!("blk.{layer}.{role}.{suffix}"))
}

/// Which rows a permuted projection holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QkRole {
    /// `q_proj`: permuted with `n_head`.
    Q,
    /// `k_proj`: permuted with `n_head_kv`.
    K,
}

/// Whether the converter permutes this tensor's rows (llama family only).
pub fn qk_role(family: Family, hf: &str) -> Option<QkRole> {
    if family != Family::Llama {
        return None;
    }
    let name = strip_model(hf);
    if !name.starts_with("layers.") {
        return None;
    }
    if name.ends_with(".self_attn.q_proj.weight") || name.ends_with(".self_attn.q_proj.bias") {
        Some(QkRole::Q)
    } else if name.ends_with(".self_attn.k_proj.weight") || name.ends_with(".self_attn.k_proj.bias") {
        Some(QkRole::K)
    } else {
        None
    }
}

/// What the converter adds to the values (gemma's `+ 1` on norm weights), or 0.
pub fn norm_shift(family: Family, hf: &str) -> f32 {
    match family {
        Family::Gemma | Family::Gemma2 | Family::Gemma3 if hf.ends_with("norm.weight") => 1.0,
        _ => 0.0,
    }
}

/// Why the converter writes no GGUF tensor for this source tensor, when it skips it by
/// design.
pub fn dropped_by_converter(family: Family, hf: &str) -> Option<&'static str> {
    if hf.ends_with(".rotary_emb.inv_freq") {
        return Some("the converter skips rotary-embedding buffers (llama.cpp computes them)");
    }
    if hf == "lm_head.weight" && matches!(family, Family::Gemma | Family::Gemma2) {
        return Some("the gemma converter skips lm_head.weight (the output layer uses the embedding)");
    }
    None
}

/// A GGUF tensor the converter generates from config.json instead of copying it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generated {
    /// `rope_freqs.weight`: Llama 3 `rope_scaling` frequency factors.
    RopeFreqs,
    /// `rope_factors_long.weight` (phi3 `rope_scaling.long_factor`).
    RopeFactorsLong,
    /// `rope_factors_short.weight` (phi3 `rope_scaling.short_factor`).
    RopeFactorsShort,
}

pub fn generated(family: Family, gguf: &str) -> Option<Generated> {
    match (family, gguf) {
        (Family::Llama | Family::Unknown, "rope_freqs.weight") => Some(Generated::RopeFreqs),
        (Family::Phi3, "rope_factors_long.weight") => Some(Generated::RopeFactorsLong),
        (Family::Phi3, "rope_factors_short.weight") => Some(Generated::RopeFactorsShort),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_by_family() {
        let l = Family::Llama;
        assert_eq!(gguf_name(l, "model.layers.0.self_attn.q_proj.weight").as_deref(), Some("blk.0.attn_q.weight"));
        assert_eq!(gguf_name(l, "model.embed_tokens.weight").as_deref(), Some("token_embd.weight"));
        assert_eq!(gguf_name(l, "model.norm.weight").as_deref(), Some("output_norm.weight"));
        assert_eq!(gguf_name(l, "lm_head.weight").as_deref(), Some("output.weight"));
        assert_eq!(gguf_name(l, "model.layers.27.post_attention_layernorm.weight").as_deref(), Some("blk.27.ffn_norm.weight"));
        assert_eq!(gguf_name(Family::Gemma2, "model.layers.3.post_attention_layernorm.weight").as_deref(), Some("blk.3.post_attention_norm.weight"));
        assert_eq!(gguf_name(Family::Gemma2, "model.layers.3.pre_feedforward_layernorm.weight").as_deref(), Some("blk.3.ffn_norm.weight"));
        assert_eq!(gguf_name(Family::Qwen2, "model.layers.1.self_attn.k_proj.bias").as_deref(), Some("blk.1.attn_k.bias"));
        assert_eq!(gguf_name(Family::Phi3, "model.layers.1.mlp.gate_up_proj.weight").as_deref(), Some("blk.1.ffn_up.weight"));
        assert_eq!(gguf_name(l, "model.layers.x.mlp.up_proj.weight"), None);
        assert_eq!(gguf_name(l, "model.vision.weight"), None);
        assert_eq!(qk_role(l, "model.layers.2.self_attn.k_proj.weight"), Some(QkRole::K));
        assert_eq!(qk_role(Family::Qwen2, "model.layers.2.self_attn.k_proj.weight"), None);
        assert_eq!(norm_shift(Family::Gemma3, "model.layers.0.self_attn.q_norm.weight"), 1.0);
        assert_eq!(norm_shift(l, "model.norm.weight"), 0.0);
    }
}
