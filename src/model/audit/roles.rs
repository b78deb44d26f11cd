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
//! - the converter skips `*.rotary_emb.inv_freq` buffers;
//! - Falcon-H1 (`conversion/falcon_h1.py`, over `mamba.py`'s `Mamba2Model`):
//!   `final_layernorm` → `output_norm`, `pre_ff_layernorm` → `blk.N.ffn_norm` (no suffix),
//!   `feed_forward.*` → `ffn_*`, `mamba.*` → `ssm_*` as Mamba-2's; and the µP multipliers of
//!   config.json multiplied into 10 kinds of tensor ([`mup_steps`]).

use crate::model::architecture::{Architecture, Family};

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
        "qwen3moe" => Family::Qwen3Moe,
        "deepseek2" => Family::Deepseek2,
        "gpt-oss" => Family::GptOss,
        "granitehybrid" => Family::GraniteHybrid,
        "mamba2" => Family::Mamba2,
        "olmoe" => Family::Olmoe,
        "glm4moe" => Family::Glm4Moe,
        "qwen3next" => Family::Qwen3Next,
        "llama4" => Family::Llama4,
        "falcon-h1" => Family::FalconH1,
        _ => Family::Unknown,
    }
}

/// The families whose tensors this audit pairs by role (a name in the report).
pub const SUPPORTED: &str =
    "llama, mistral, mixtral, qwen2, qwen3, gemma, gemma2, gemma3, phi3, qwen3moe, olmoe, glm4moe (GLM-4.5), qwen3next, llama4, deepseek2 (DeepSeek V2/V3), gpt-oss, granitehybrid, mamba2, falcon-h1";

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
    // MoE routers (qwen3moe / deepseek2 `mlp.gate`, gpt-oss `mlp.router`, granite's
    // `block_sparse_moe.router.layer`) and shared experts.
    ("mlp.gate", "ffn_gate_inp"),
    ("mlp.router", "ffn_gate_inp"),
    ("block_sparse_moe.gate", "ffn_gate_inp"),
    ("block_sparse_moe.router.layer", "ffn_gate_inp"),
    ("mlp.shared_experts.gate_proj", "ffn_gate_shexp"),
    ("mlp.shared_experts.up_proj", "ffn_up_shexp"),
    ("mlp.shared_experts.down_proj", "ffn_down_shexp"),
    ("shared_mlp.output_linear", "ffn_down_shexp"),
    // GLM-4.5's multi-token-prediction layer (the parts beyond a decoder layer).
    ("eh_proj", "nextn.eh_proj"),
    ("enorm", "nextn.enorm"),
    ("hnorm", "nextn.hnorm"),
    ("shared_head.norm", "nextn.shared_head_norm"),
    // DeepSeek's multi-head latent attention.
    ("self_attn.q_a_proj", "attn_q_a"),
    ("self_attn.q_a_layernorm", "attn_q_a_norm"),
    ("self_attn.q_b_proj", "attn_q_b"),
    ("self_attn.kv_a_proj_with_mqa", "attn_kv_a_mqa"),
    ("self_attn.kv_a_layernorm", "attn_kv_a_norm"),
    // Mamba-2 mixers: granite's `mamba.*`, mamba2's `mixer.*`.
    ("mamba.in_proj", "ssm_in"),
    ("mamba.out_proj", "ssm_out"),
    ("mamba.conv1d", "ssm_conv1d"),
    ("mamba.norm", "ssm_norm"),
    ("mixer.in_proj", "ssm_in"),
    ("mixer.out_proj", "ssm_out"),
    ("mixer.conv1d", "ssm_conv1d"),
    ("mixer.norm", "ssm_norm"),
    // Qwen3-Next's gated delta-net (`in_proj_qkvz` is split: `pieces`) and its gated
    // shared expert.
    ("linear_attn.in_proj_ba", "ssm_ba"),
    ("linear_attn.conv1d", "ssm_conv1d"),
    ("linear_attn.norm", "ssm_norm"),
    ("linear_attn.out_proj", "ssm_out"),
    ("mlp.shared_expert.gate_proj", "ffn_gate_shexp"),
    ("mlp.shared_expert.up_proj", "ffn_up_shexp"),
    ("mlp.shared_expert.down_proj", "ffn_down_shexp"),
    ("mlp.shared_expert_gate", "ffn_gate_inp_shexp"),
    // Llama 4's `feed_forward` (its fused experts: `pieces`).
    ("feed_forward.router", "ffn_gate_inp"),
    ("feed_forward.shared_expert.gate_proj", "ffn_gate_shexp"),
    ("feed_forward.shared_expert.up_proj", "ffn_up_shexp"),
    ("feed_forward.shared_expert.down_proj", "ffn_down_shexp"),
    ("feed_forward.gate_proj", "ffn_gate"),
    ("feed_forward.up_proj", "ffn_up"),
    ("feed_forward.down_proj", "ffn_down"),
];

/// Layer tensors whose last name part is not `weight` / `bias`, and the GGUF name the
/// converter gives them (`ssm_a` and `ssm_d` have no suffix; `dt_bias` becomes
/// `ssm_dt.bias`, gpt-oss's `sinks` `attn_sinks.weight`, DeepSeek-V3's router score bias
/// `exp_probs_b.bias`).
const SUFFIXLESS: &[(&str, &str)] = &[
    ("mamba.A_log", "ssm_a"),
    ("mamba.D", "ssm_d"),
    ("mamba.dt_bias", "ssm_dt.bias"),
    ("mixer.A_log", "ssm_a"),
    ("mixer.D", "ssm_d"),
    ("mixer.dt_bias", "ssm_dt.bias"),
    ("linear_attn.A_log", "ssm_a"),
    ("linear_attn.dt_bias", "ssm_dt.bias"),
    ("self_attn.sinks", "attn_sinks.weight"),
    ("mlp.gate.e_score_correction_bias", "exp_probs_b.bias"),
];

/// The name without the decoder's `model.` prefix (a bare `*Model` checkpoint has none;
/// Mamba-2's is `backbone.`).
fn strip_model(name: &str) -> &str {
    name.strip_prefix("model.").or_else(|| name.strip_prefix("backbone.")).unwrap_or(name)
}

/// A layer tensor's layer number and the rest of its name (`layers.3.mlp.gate.weight` →
/// (3, "mlp.gate.weight")).
pub fn layer_of(hf: &str) -> Option<(u64, &str)> {
    let rest = strip_model(hf).strip_prefix("layers.")?;
    let (layer, module) = rest.split_once('.')?;
    if layer.is_empty() || !layer.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((layer.parse().ok()?, module))
}

/// The GGUF name the converter gives a Hugging Face tensor, `None` when the name has no
/// role in the table.
pub fn gguf_name(family: Family, hf: &str) -> Option<String> {
    if hf == "lm_head.weight" {
        return Some("output.weight".into());
    }
    let name = strip_model(hf);
    match name {
        "embed_tokens.weight" | "embeddings.weight" => return Some("token_embd.weight".into()),
        "norm.weight" | "norm_f.weight" | "final_layernorm.weight" => return Some("output_norm.weight".into()),
        _ => {}
    }
    let (layer, module) = layer_of(hf)?;
    if let Some((_, g)) = SUFFIXLESS.iter().find(|(m, _)| *m == module) {
        return Some(format!("blk.{layer}.{g}"));
    }
    if family == Family::Mamba2 && module == "norm.weight" {
        return Some(format!("blk.{layer}.attn_norm.weight"));
    }
    if family == Family::FalconH1 && module == "pre_ff_layernorm.weight" {
        // gguf-py's FALCON_H1 map has `ffn_norm` without a suffix (llama.cpp loads it so).
        return Some(format!("blk.{layer}.ffn_norm"));
    }
    let (module, suffix) = module.rsplit_once('.')?;
    if suffix != "weight" && suffix != "bias" {
        return None;
    }
    let role = if module == "post_attention_layernorm" {
        match family {
            Family::Gemma2 | Family::Gemma3 | Family::GptOss | Family::Glm4Moe | Family::Qwen3Next => "post_attention_norm",
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

/// Whether the converter permutes this tensor's rows (the llama family — Mixtral is
/// converted by `LlamaModel` too —, and granite's attention layers: `GraniteHybridModel`
/// has `undo_permute = True` and hands them to the llama converter).
pub fn qk_role(family: Family, hf: &str) -> Option<QkRole> {
    if !matches!(family, Family::Llama | Family::Mixtral | Family::GraniteHybrid) {
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

/// What the converter adds to the values (gemma's `+ 1` on norm weights; Qwen3-Next's on
/// every norm but the delta-net's gated `linear_attn.norm`, `conversion/qwen.py`), or 0.
pub fn norm_shift(family: Family, hf: &str) -> f32 {
    match family {
        Family::Gemma | Family::Gemma2 | Family::Gemma3 if hf.ends_with("norm.weight") => 1.0,
        Family::Qwen3Next if hf.ends_with("norm.weight") && !hf.ends_with("linear_attn.norm.weight") => 1.0,
        _ => 0.0,
    }
}

/// A value the converter computes from the source's (undone by the comparator).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueOp {
    /// Mamba-2's `A_log` is written as `ssm_a = -exp(A_log)` (`conversion/mamba.py`,
    /// computed by torch in f32 from the BF16 value widened to f32).
    NegExp,
}

pub fn value_op(family: Family, hf: &str) -> Option<ValueOp> {
    let ssm = matches!(family, Family::GraniteHybrid | Family::Mamba2 | Family::Qwen3Next | Family::FalconH1);
    (ssm && hf.ends_with(".A_log")).then_some(ValueOp::NegExp)
}

/// One f32 multiplication llama.cpp's converter folds into a tensor's values: Falcon-H1's
/// µP multipliers (`conversion/falcon_h1.py` `FalconH1Model.modify_tensors`, on the tensor
/// already widened to f32, `conversion/base.py` `prepare_tensors`).
#[derive(Clone, Debug, PartialEq)]
pub struct MupStep {
    /// The config.json key the factor is (`key_multiplier`, `ssm_multipliers[2]`).
    pub key: String,
    /// As config.json gives it; torch multiplies by it rounded to f32.
    pub value: f64,
    /// Only rows `start..end` (clamped to the tensor's) and the block's name: `in_proj`'s
    /// z / x / B / C / dt blocks.
    pub rows: Option<(u64, u64, &'static str)>,
}

/// Falcon-H1's multipliers per tensor, as the converter tests them: the first of these
/// substrings the Hugging Face name contains decides, and the factors are applied in this
/// order (`k_proj`: `tensor * key_multiplier * attention_in_multiplier`, two f32 products).
/// `up_proj` and everything else are not scaled.
const MUP_RULES: &[(&str, &[&str])] = &[
    ("down_proj", &["mlp_multipliers[1]"]),
    ("gate_proj", &["mlp_multipliers[0]"]),
    ("k_proj", &["key_multiplier", "attention_in_multiplier"]),
    ("q_proj", &["attention_in_multiplier"]),
    ("v_proj", &["attention_in_multiplier"]),
    ("o_proj", &["attention_out_multiplier"]),
    ("out_proj", &["ssm_out_multiplier"]),
    ("in_proj", &["ssm_in_multiplier"]),
    ("lm_head", &["lm_head_multiplier"]),
    ("embed_tokens", &["embedding_multiplier"]),
];

/// `name` or `name[i]` of config.json as a number.
fn config_number(config: &Architecture, key: &str) -> Option<f64> {
    match key.strip_suffix(']').and_then(|k| k.split_once('[')) {
        Some((name, i)) => config.raw.get(name)?.as_array()?.get(i.parse::<usize>().ok()?)?.as_f64(),
        None => config.raw.get(key)?.as_f64(),
    }
}

/// The multiplications the converter does to `hf`'s values, in order: `None` when it does
/// none, an error (why the pair cannot be checked) when config.json lacks a multiplier.
/// `in_proj` is first scaled whole by `ssm_in_multiplier`, then its row blocks z
/// `[0, d_ssm)`, x `[d_ssm, 2·d_ssm)`, B and C (`n_groups · d_state` rows each) and dt (the
/// rest) by `ssm_multipliers[0..5]` (`mamba_d_ssm`, `mamba_n_groups`, `mamba_d_state`).
pub fn mup_steps(family: Family, hf: &str, config: Option<&Architecture>) -> Option<Result<Vec<MupStep>, String>> {
    if family != Family::FalconH1 {
        return None;
    }
    let (pattern, keys) = MUP_RULES.iter().find(|(p, _)| hf.contains(p))?;
    let Some(config) = config else {
        return Some(Err(format!("the converter multiplies it by {} from config.json, and no config.json was given", keys.join(" × "))));
    };
    let missing = |key: &str| format!("config.json has no number `{key}`, which the converter multiplies this tensor by");
    let mut steps = Vec::new();
    for key in keys.iter() {
        let Some(value) = config_number(config, key) else { return Some(Err(missing(key))) };
        steps.push(MupStep { key: key.to_string(), value, rows: None });
    }
    if *pattern == "in_proj" {
        let dim = |k: &str| config.raw.get(k).and_then(serde_json::Value::as_u64).filter(|n| *n <= 1 << 32);
        let (Some(d), Some(g), Some(n)) = (dim("mamba_d_ssm"), dim("mamba_n_groups"), dim("mamba_d_state")) else {
            return Some(Err("config.json lacks `mamba_d_ssm`, `mamba_n_groups` or `mamba_d_state`, which place the converter's ssm_multipliers rows".into()));
        };
        let bounds = (|| {
            let gs = g.checked_mul(n)?;
            let d2 = d.checked_mul(2)?;
            Some([0, d, d2, d2.checked_add(gs)?, d2.checked_add(gs.checked_mul(2)?)?, u64::MAX])
        })();
        let Some(bounds) = bounds else { return Some(Err("config.json's `mamba_d_ssm`, `mamba_n_groups` and `mamba_d_state` overflow u64".into())) };
        for (k, name) in ["z", "x", "B", "C", "dt"].into_iter().enumerate() {
            let key = format!("ssm_multipliers[{k}]");
            let Some(value) = config_number(config, &key) else { return Some(Err(missing(&key))) };
            let (start, end) = (bounds.get(k).copied().unwrap_or(0), bounds.get(k + 1).copied().unwrap_or(0));
            steps.push(MupStep { key, value, rows: Some((start, end, name)) });
        }
    }
    Some(Ok(steps))
}

/// Whether the converter reshapes this target's data without moving it: Mamba-2's
/// `ssm_a` / `ssm_d` (`[n_head]` → `[n_head, 1]`), `ssm_conv1d.weight` (`[C, 1, K]`
/// squeezed to `[C, K]`) and `ssm_norm.weight` (`[d_inner]` → `[n_group,
/// d_inner / n_group]`). Row-major order is kept, so the bytes compare as they are.
pub fn reshaped_by_converter(family: Family, gguf: &str) -> bool {
    matches!(family, Family::GraniteHybrid | Family::Mamba2 | Family::Qwen3Next | Family::FalconH1)
        && gguf.strip_prefix("blk.").and_then(|r| r.split_once('.')).is_some_and(|(_, role)| {
            matches!(role, "ssm_a" | "ssm_d" | "ssm_conv1d.weight" | "ssm_norm.weight")
        })
}

/// Why the converter writes no GGUF tensor for this source tensor, when it skips it by
/// design.
///
/// `layers` is config.json's `num_hidden_layers`: DeepSeek's converter drops every layer
/// at or past it (V3's multi-token-prediction layer 61), and its `lm_head.weight` when
/// `tied` (`tie_word_embeddings`).
pub fn dropped_by_converter(family: Family, hf: &str, layers: Option<u64>, tied: bool) -> Option<String> {
    if hf.ends_with(".rotary_emb.inv_freq") {
        return Some("the converter skips rotary-embedding buffers (llama.cpp computes them)".into());
    }
    if hf == "lm_head.weight" && matches!(family, Family::Gemma | Family::Gemma2) {
        return Some("the gemma converter skips lm_head.weight (the output layer uses the embedding)".into());
    }
    if family == Family::Deepseek2 {
        if hf == "lm_head.weight" && tied {
            return Some("the deepseek2 converter skips lm_head.weight when tie_word_embeddings is true".into());
        }
        if let (Some((layer, _)), Some(n)) = (layer_of(hf), layers) {
            if layer >= n {
                return Some(format!(
                    "dropped by design: the deepseek2 converter skips layers from num_hidden_layers ({n}) on, the multi-token-prediction (MTP) layers"
                ));
            }
        }
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

    /// conversion/falcon_h1.py's tests, in its order, on Falcon-H1's names.
    #[test]
    fn falcon_h1_multipliers_per_tensor() {
        let config = serde_json::json!({
            "model_type": "falcon_h1", "key_multiplier": 0.5, "attention_in_multiplier": 0.75, "ssm_out_multiplier": 0.25,
            "ssm_in_multiplier": 1.5, "ssm_multipliers": [1.0, 2.0, 3.0, 4.0, 5.0], "mamba_d_ssm": 8, "mamba_n_groups": 2, "mamba_d_state": 3
        });
        let (arch, _) = Architecture::from_config(&config, "config.json");
        let f = Family::FalconH1;
        let keys = |hf: &str| mup_steps(f, hf, Some(&arch)).map(|r| r.map(|s| s.iter().map(|x| (x.key.clone(), x.rows.map(|r| (r.0, r.1)))).collect::<Vec<_>>()));
        let k = Some(Ok(vec![("key_multiplier".to_string(), None), ("attention_in_multiplier".to_string(), None)]));
        assert_eq!(keys("model.layers.0.self_attn.k_proj.weight"), k);
        // `out_proj` is not `o_proj`; a bias is scaled like its weight.
        assert_eq!(keys("model.layers.3.mamba.out_proj.weight"), Some(Ok(vec![("ssm_out_multiplier".to_string(), None)])));
        assert_eq!(keys("model.layers.0.self_attn.k_proj.bias"), k);
        assert_eq!(keys("model.layers.0.feed_forward.up_proj.weight"), None);
        assert_eq!(keys("model.layers.0.mamba.norm.weight"), None);
        let in_proj = keys("model.layers.1.mamba.in_proj.weight").unwrap().unwrap();
        let rows: Vec<_> = in_proj.iter().map(|s| s.1).collect();
        // z 0..8, x 8..16, B 16..22, C 22..28, dt 28..: groups × state = 6.
        assert_eq!(rows, [None, Some((0, 8)), Some((8, 16)), Some((16, 22)), Some((22, 28)), Some((28, u64::MAX))]);
        // A multiplier the config lacks: why the pair is not checked.
        assert!(matches!(keys("model.layers.0.feed_forward.gate_proj.weight"), Some(Err(e)) if e.contains("mlp_multipliers[0]")));
        assert_eq!(mup_steps(Family::Llama, "model.layers.0.self_attn.k_proj.weight", Some(&arch)), None);
    }
}
