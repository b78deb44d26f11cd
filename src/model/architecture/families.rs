//! The tensor inventory of the MoE, MLA and hybrid families, as transformers 4.57 names
//! them in `state_dict()` (its `modeling_qwen3_moe.py`, `modeling_deepseek_v3.py`,
//! `modeling_gpt_oss.py`, `modeling_granitemoehybrid.py`, `modeling_mamba2.py`):
//!
//! - **qwen3_moe**: qwen3 attention (q/k norms of `head_dim`); a layer is sparse unless it
//!   is in `mlp_only_layers` or `(layer + 1) % decoder_sparse_step != 0`: then a router
//!   `mlp.gate [num_experts, hidden]` and `mlp.experts.{e}.{gate,up,down}_proj` of
//!   `moe_intermediate_size`; dense layers have `intermediate_size`;
//! - **deepseek_v2 / v3**: MLA — `q_a_proj [q_lora_rank, hidden]`, `q_a_layernorm`,
//!   `q_b_proj [heads·(nope + rope), q_lora_rank]` (or `q_proj` when `q_lora_rank` is null),
//!   `kv_a_proj_with_mqa [kv_lora_rank + rope, hidden]`, `kv_a_layernorm [kv_lora_rank]`,
//!   `kv_b_proj [heads·(nope + v_head_dim), kv_lora_rank]`, `o_proj [hidden, heads·v]`; the
//!   first `first_k_dense_replace` layers dense, the rest a router, `n_routed_experts`
//!   experts and a shared MLP of `n_shared_experts · moe_intermediate_size`; V3's router
//!   has the `e_score_correction_bias [n_routed_experts]` buffer (V2's only with
//!   `topk_method: noaux_tc`);
//! - **gpt_oss**: biased q/k/v/o, `self_attn.sinks [heads]`, `mlp.router.{weight,bias}`,
//!   fused `mlp.experts.gate_up_proj [E, hidden, 2·intermediate]` (+ `_bias [E, 2·inter]`),
//!   `down_proj [E, inter, hidden]` (+ `_bias [E, hidden]`);
//! - **granitemoehybrid**: per `layer_types` a Mamba-2 mixer (`mamba.*`) or attention
//!   (`self_attn.*`, head_dim hidden / heads); every layer a fused MoE
//!   (`block_sparse_moe.input_linear [E, 2·inter, hidden]`, `output_linear [E, hidden,
//!   inter]`, `router.layer [E, hidden]`) when `num_local_experts` > 0 and a shared MLP
//!   (`shared_mlp.input_linear [2·shared, hidden]`, `output_linear`) when
//!   `shared_intermediate_size` > 0;
//! - **mamba2**: `backbone.embeddings`, per layer `norm` and the mixer, `backbone.norm_f`.
//! - **mixtral** (`modeling_mixtral.py`): llama attention (`head_dim` or hidden / heads, no
//!   biases); every layer `block_sparse_moe.gate [E, hidden]` and per expert
//!   `block_sparse_moe.experts.{e}.w1` / `w3 [intermediate, hidden]`, `w2 [hidden,
//!   intermediate]` (gate, up, down);
//! - **olmoe** (`modeling_olmoe.py`): llama attention (biases with `attention_bias`), a
//!   `q_norm [heads · head_dim]` and `k_norm [kv_heads · head_dim]` over the whole
//!   projection; every layer `mlp.gate [E, hidden]` and `mlp.experts.{e}.*` of
//!   `intermediate_size`;
//! - **glm4_moe** (`modeling_glm4_moe.py`): q/k/v biased with `attention_bias` (o_proj never),
//!   `q_norm` / `k_norm [head_dim]` with `use_qk_norm`; layers below `first_k_dense_replace`
//!   a dense MLP of `intermediate_size`, the rest `mlp.gate [E, hidden]`, its
//!   `e_score_correction_bias [E]` buffer, experts of `moe_intermediate_size` and
//!   `mlp.shared_experts` of `n_shared_experts · moe_intermediate_size`. GLM-4.5's checkpoints
//!   carry `num_nextn_predict_layers` multi-token-prediction layers past `num_hidden_layers`
//!   (transformers does not load them; llama.cpp's converter keeps them unless `--no-mtp`):
//!   a decoder layer like the others plus `eh_proj [hidden, 2 · hidden]`, `enorm`, `hnorm`
//!   and `shared_head.norm [hidden]`.
//!
//! - **qwen3_next** (`modeling_qwen3_next.py`): per `layer_types` a gated delta-net
//!   `linear_attn` — `in_proj_qkvz [2 · key_dim + 2 · value_dim, hidden]`, `in_proj_ba [2 ·
//!   v_heads, hidden]`, `conv1d.weight [2 · key_dim + value_dim, 1, kernel]`, `dt_bias` /
//!   `A_log [v_heads]`, `norm [v_head_dim]`, `out_proj [hidden, value_dim]` (key_dim =
//!   `linear_num_key_heads · linear_key_head_dim`, value_dim likewise) — or gated attention
//!   (`q_proj [2 · heads · head_dim, hidden]`: queries and their gate, q/k norms of
//!   `head_dim`); the qwen MoE rule for sparse layers, each with `shared_expert.*` of
//!   `shared_expert_intermediate_size` and `shared_expert_gate [1, hidden]`.
//!
//! - **llama4_text** (`modeling_llama4.py`): llama attention; layers in `moe_layers`
//!   (default every `interleave_moe_layer_step`-th) `feed_forward.router [E, hidden]`, fused
//!   `feed_forward.experts.gate_up_proj [E, hidden, 2 · intermediate_size]` and `down_proj
//!   [E, intermediate_size, hidden]`, `feed_forward.shared_expert.*` of `intermediate_size`;
//!   the others `feed_forward.*_proj` of `intermediate_size_mlp`.
//!
//! - **falcon_h1** (`modeling_falcon_h1.py`): every layer `input_layernorm`, attention
//!   (`self_attn.*`, `head_dim`, biased with `attention_bias`) and a Mamba-2 mixer
//!   (`mamba.*`) in parallel, `d_inner` = `mamba_d_ssm` (else `mamba_expand · hidden`),
//!   `in_proj` biased with `mamba_proj_bias`, `out_proj` with `projectors_bias`, the gated
//!   `norm` only with `mamba_rms_norm`; then `pre_ff_layernorm` and `feed_forward.*` of
//!   `intermediate_size` (biased with `mlp_bias`); the final norm is `final_layernorm`.
//!
//! The Mamba-2 mixer: `d_inner = num_heads · head_dim`, `conv_dim = d_inner +
//! 2 · n_groups · state_size`; `in_proj [d_inner + conv_dim + num_heads, hidden]`,
//! `conv1d.weight [conv_dim, 1, conv_kernel]` (+ bias), `A_log`, `D`, `dt_bias`
//! `[num_heads]`, `norm.weight [d_inner]`, `out_proj [hidden, d_inner]`.

use super::{Architecture, Expected, Family};
use serde_json::Value;

/// A positive integer of the config (the first of `keys` given).
fn get(arch: &Architecture, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| arch.raw.get(*k).and_then(Value::as_u64)).filter(|n| *n <= super::MAX_DIM)
}

fn flag(arch: &Architecture, key: &str, default: bool) -> bool {
    arch.raw.get(key).and_then(Value::as_bool).unwrap_or(default)
}

struct Out {
    list: Vec<Expected>,
}

impl Out {
    fn push(&mut self, name: String, shape: Vec<u64>, why: impl Into<String>) {
        self.list.push(Expected { name, shape, why: why.into() });
    }
}

fn mul(a: u64, b: u64) -> Option<u64> {
    a.checked_mul(b)
}

/// q/k/v/o projections of `heads` × `hd` (and `kv` KV heads), with biases when `bias`.
fn attention(o: &mut Out, l: &str, hidden: u64, heads: u64, kv: u64, hd: u64, bias: bool) -> Option<()> {
    let (q_out, kv_out) = (mul(heads, hd)?, mul(kv, hd)?);
    let why = |n: u64, what: &str| format!("{what} {n} × head_dim {hd}, hidden_size {hidden}");
    o.push(format!("{l}self_attn.q_proj.weight"), vec![q_out, hidden], why(heads, "heads"));
    o.push(format!("{l}self_attn.k_proj.weight"), vec![kv_out, hidden], why(kv, "kv_heads"));
    o.push(format!("{l}self_attn.v_proj.weight"), vec![kv_out, hidden], why(kv, "kv_heads"));
    o.push(format!("{l}self_attn.o_proj.weight"), vec![hidden, q_out], format!("hidden_size {hidden}, heads {heads} × head_dim {hd}"));
    if bias {
        o.push(format!("{l}self_attn.q_proj.bias"), vec![q_out], format!("heads {heads} × head_dim {hd}"));
        o.push(format!("{l}self_attn.k_proj.bias"), vec![kv_out], format!("kv_heads {kv} × head_dim {hd}"));
        o.push(format!("{l}self_attn.v_proj.bias"), vec![kv_out], format!("kv_heads {kv} × head_dim {hd}"));
        o.push(format!("{l}self_attn.o_proj.bias"), vec![hidden], format!("hidden_size {hidden}"));
    }
    Some(())
}

/// gate/up/down of width `ff` under `m` (`mlp.`, `mlp.experts.3.`, `mlp.shared_experts.`).
fn mlp(o: &mut Out, m: &str, hidden: u64, ff: u64, what: &str) {
    o.push(format!("{m}gate_proj.weight"), vec![ff, hidden], format!("{what} {ff}, hidden_size {hidden}"));
    o.push(format!("{m}up_proj.weight"), vec![ff, hidden], format!("{what} {ff}, hidden_size {hidden}"));
    o.push(format!("{m}down_proj.weight"), vec![hidden, ff], format!("hidden_size {hidden}, {what} {ff}"));
}

/// Routed experts one by one under `{l}mlp.experts.{e}.` and the router `{l}mlp.gate`.
fn experts(o: &mut Out, l: &str, hidden: u64, n: u64, ff: u64) {
    o.push(format!("{l}mlp.gate.weight"), vec![n, hidden], format!("{n} experts, hidden_size {hidden}"));
    for e in 0..n {
        mlp(o, &format!("{l}mlp.experts.{e}."), hidden, ff, &format!("expert {e} of {n}: moe_intermediate_size"));
    }
}

/// The experts of layer `i` when the qwen MoE rule makes it sparse (not in
/// `mlp_only_layers`, `(i + 1) % decoder_sparse_step == 0`, `num_experts` > 0).
fn qwen_sparse(arch: &Architecture, i: u64) -> Option<u64> {
    let n = get(arch, &["num_experts"]).unwrap_or(0);
    let step = get(arch, &["decoder_sparse_step"]).unwrap_or(1).max(1);
    let dense_only = arch.raw.get("mlp_only_layers").and_then(Value::as_array).is_some_and(|a| a.iter().any(|v| v.as_u64() == Some(i)));
    (n > 0 && !dense_only && (i + 1).is_multiple_of(step)).then_some(n)
}

/// DeepSeek's and GLM-4.5's feed-forward part of layer `i`: a dense MLP below
/// `first_k_dense_replace`, then a router (with its `e_score_correction_bias` when
/// `score_bias`), `n_routed_experts` experts and the shared experts.
fn dense_then_routed(arch: &Architecture, o: &mut Out, l: &str, i: u64, hidden: u64, score_bias: bool) -> Option<()> {
    let dense = get(arch, &["first_k_dense_replace"]).unwrap_or(0);
    let n = get(arch, &["n_routed_experts"]).unwrap_or(0);
    if i < dense || n == 0 {
        mlp(o, &format!("{l}mlp."), hidden, arch.intermediate_size?, &format!("a leading dense layer (first_k_dense_replace {dense}): intermediate_size"));
        return Some(());
    }
    let ff = get(arch, &["moe_intermediate_size"])?;
    experts(o, l, hidden, n, ff);
    if score_bias {
        o.push(format!("{l}mlp.gate.e_score_correction_bias"), vec![n], format!("{n} experts (the router's score bias)"));
    }
    let shared = get(arch, &["n_shared_experts"]).unwrap_or(0);
    if shared > 0 {
        mlp(o, &format!("{l}mlp.shared_experts."), hidden, mul(shared, ff)?, &format!("n_shared_experts {shared} × moe_intermediate_size"));
    }
    Some(())
}

/// A Mamba-2 mixer under `m`.
fn mamba(o: &mut Out, m: &str, hidden: u64, c: &Mamba) -> Option<()> {
    let d_inner = c.inner;
    let conv_dim = d_inner.checked_add(mul(2, mul(c.groups, c.state)?)?)?;
    let in_proj = d_inner.checked_add(conv_dim)?.checked_add(c.heads)?;
    let d = c.inner_why.clone();
    o.push(format!("{m}in_proj.weight"), vec![in_proj, hidden], format!("{d} + conv_dim {conv_dim} + {} heads, hidden_size {hidden}", c.heads));
    if c.proj_bias {
        o.push(format!("{m}in_proj.bias"), vec![in_proj], format!("{d} + conv_dim {conv_dim} + heads"));
    }
    o.push(format!("{m}conv1d.weight"), vec![conv_dim, 1, c.kernel], format!("conv_dim {conv_dim} = d_inner + 2 × {} groups × state {}, kernel {}", c.groups, c.state, c.kernel));
    if c.conv_bias {
        o.push(format!("{m}conv1d.bias"), vec![conv_dim], format!("conv_dim {conv_dim}"));
    }
    for p in ["A_log", "D", "dt_bias"] {
        o.push(format!("{m}{p}"), vec![c.heads], format!("{} heads", c.heads));
    }
    if c.norm {
        o.push(format!("{m}norm.weight"), vec![d_inner], d.clone());
    }
    o.push(format!("{m}out_proj.weight"), vec![hidden, d_inner], format!("hidden_size {hidden}, {d}"));
    if c.out_bias {
        o.push(format!("{m}out_proj.bias"), vec![hidden], format!("hidden_size {hidden}"));
    }
    Some(())
}

struct Mamba {
    heads: u64,
    /// `d_inner`: heads × head_dim (Falcon-H1: `mamba_d_ssm`), and how it was found.
    inner: u64,
    inner_why: String,
    groups: u64,
    state: u64,
    kernel: u64,
    conv_bias: bool,
    proj_bias: bool,
    /// `out_proj`'s bias (Falcon-H1: `projectors_bias`; elsewhere the in-projection's).
    out_bias: bool,
    /// The gated RMS norm (Falcon-H1 without `mamba_rms_norm` has none).
    norm: bool,
}

impl Mamba {
    /// granite's and mamba2's mixer from the config keys of its heads, head size, groups
    /// (default 1), state, kernel, conv bias (default true) and projection bias (default
    /// false): `d_inner = heads × head_dim`, one bias flag for both projections, always a norm.
    fn of_heads(arch: &Architecture, [heads, head_dim, groups, state, kernel, conv_bias, proj_bias]: [&str; 7]) -> Option<Mamba> {
        let (heads, head_dim) = (get(arch, &[heads])?, get(arch, &[head_dim])?);
        let (groups, state, kernel) = (get(arch, &[groups]).unwrap_or(1), get(arch, &[state])?, get(arch, &[kernel])?);
        let (conv_bias, proj_bias) = (flag(arch, conv_bias, true), flag(arch, proj_bias, false));
        let inner = mul(heads, head_dim)?;
        let inner_why = format!("d_inner {inner} = {heads} heads × {head_dim}");
        Some(Mamba { heads, inner, inner_why, groups, state, kernel, conv_bias, proj_bias, out_bias: proj_bias, norm: true })
    }
}

/// The inventory, or `None` when a dimension it needs is missing.
pub fn expected_tensors(arch: &Architecture, prefix: &str) -> Option<Vec<Expected>> {
    let hidden = arch.hidden_size?;
    let vocab = arch.vocab_size?;
    let layers = arch.layers?;
    let mut o = Out { list: Vec::new() };
    let prefix = if arch.family == Family::Mamba2 { "backbone." } else { prefix };
    let embed = if arch.family == Family::Mamba2 { "embeddings" } else { "embed_tokens" };
    o.push(format!("{prefix}{embed}.weight"), vec![vocab, hidden], format!("vocab_size {vocab} × hidden_size {hidden}"));
    for i in 0..layers {
        let l = format!("{prefix}layers.{i}.");
        layer(arch, &mut o, &l, i, hidden)?;
    }
    if arch.family == Family::Glm4Moe {
        let nextn = get(arch, &["num_nextn_predict_layers"]).unwrap_or(0);
        for i in layers..layers.checked_add(nextn)?.min(super::MAX_LAYERS) {
            let l = format!("{prefix}layers.{i}.");
            layer(arch, &mut o, &l, i, hidden)?;
            let why = |what: &str| format!("{what}: the multi-token-prediction layer {i} (num_nextn_predict_layers {nextn})");
            o.push(format!("{l}eh_proj.weight"), vec![hidden, mul(2, hidden)?], why(&format!("hidden_size {hidden}, 2 × hidden_size")));
            for n in ["enorm", "hnorm", "shared_head.norm"] {
                o.push(format!("{l}{n}.weight"), vec![hidden], why(&format!("hidden_size {hidden}")));
            }
        }
    }
    let final_norm = match arch.family {
        Family::Mamba2 => "norm_f",
        Family::FalconH1 => "final_layernorm",
        _ => "norm",
    };
    o.push(format!("{prefix}{final_norm}.weight"), vec![hidden], format!("hidden_size {hidden}"));
    if !arch.tie_word_embeddings {
        o.push("lm_head.weight".into(), vec![vocab, hidden], format!("vocab_size {vocab} × hidden_size {hidden}, tie_word_embeddings false"));
    }
    Some(o.list)
}

fn layer(arch: &Architecture, o: &mut Out, l: &str, i: u64, hidden: u64) -> Option<()> {
    let norm = |o: &mut Out, name: &str| o.push(format!("{l}{name}.weight"), vec![hidden], format!("hidden_size {hidden}"));
    match arch.family {
        Family::Qwen3Moe => {
            let (heads, kv, hd) = (arch.attention_heads?, arch.kv_heads?, arch.head_dim?);
            norm(o, "input_layernorm");
            attention(o, l, hidden, heads, kv, hd, arch.attention_bias)?;
            o.push(format!("{l}self_attn.q_norm.weight"), vec![hd], format!("head_dim {hd}"));
            o.push(format!("{l}self_attn.k_norm.weight"), vec![hd], format!("head_dim {hd}"));
            norm(o, "post_attention_layernorm");
            if let Some(n) = qwen_sparse(arch, i) {
                experts(o, l, hidden, n, get(arch, &["moe_intermediate_size"])?);
            } else {
                mlp(o, &format!("{l}mlp."), hidden, arch.intermediate_size?, "intermediate_size");
            }
        }
        Family::Deepseek2 => {
            let heads = arch.attention_heads?;
            let (nope, rope, v) = (get(arch, &["qk_nope_head_dim"])?, get(arch, &["qk_rope_head_dim"])?, get(arch, &["v_head_dim"])?);
            let kv_lora = get(arch, &["kv_lora_rank"])?;
            let qk = nope.checked_add(rope)?;
            norm(o, "input_layernorm");
            match get(arch, &["q_lora_rank"]) {
                Some(q_lora) => {
                    o.push(format!("{l}self_attn.q_a_proj.weight"), vec![q_lora, hidden], format!("q_lora_rank {q_lora}, hidden_size {hidden}"));
                    o.push(format!("{l}self_attn.q_a_layernorm.weight"), vec![q_lora], format!("q_lora_rank {q_lora}"));
                    o.push(format!("{l}self_attn.q_b_proj.weight"), vec![mul(heads, qk)?, q_lora], format!("heads {heads} × (qk_nope {nope} + qk_rope {rope}), q_lora_rank {q_lora}"));
                }
                None => o.push(format!("{l}self_attn.q_proj.weight"), vec![mul(heads, qk)?, hidden], format!("heads {heads} × (qk_nope {nope} + qk_rope {rope}), hidden_size {hidden}")),
            }
            o.push(format!("{l}self_attn.kv_a_proj_with_mqa.weight"), vec![kv_lora.checked_add(rope)?, hidden], format!("kv_lora_rank {kv_lora} + qk_rope {rope}, hidden_size {hidden}"));
            o.push(format!("{l}self_attn.kv_a_layernorm.weight"), vec![kv_lora], format!("kv_lora_rank {kv_lora}"));
            o.push(format!("{l}self_attn.kv_b_proj.weight"), vec![mul(heads, nope.checked_add(v)?)?, kv_lora], format!("heads {heads} × (qk_nope {nope} + v_head_dim {v}), kv_lora_rank {kv_lora}"));
            o.push(format!("{l}self_attn.o_proj.weight"), vec![hidden, mul(heads, v)?], format!("hidden_size {hidden}, heads {heads} × v_head_dim {v}"));
            norm(o, "post_attention_layernorm");
            let v3 = arch.model_type.as_deref() == Some("deepseek_v3");
            dense_then_routed(arch, o, l, i, hidden, v3 || arch.raw.get("topk_method").and_then(Value::as_str) == Some("noaux_tc"))?;
        }
        Family::GptOss => {
            let (heads, kv, hd) = (arch.attention_heads?, arch.kv_heads?, arch.head_dim?);
            let (n, ff) = (get(arch, &["num_local_experts"])?, arch.intermediate_size?);
            norm(o, "input_layernorm");
            attention(o, l, hidden, heads, kv, hd, flag(arch, "attention_bias", true))?;
            o.push(format!("{l}self_attn.sinks"), vec![heads], format!("heads {heads} (attention sinks)"));
            norm(o, "post_attention_layernorm");
            o.push(format!("{l}mlp.router.weight"), vec![n, hidden], format!("{n} experts, hidden_size {hidden}"));
            o.push(format!("{l}mlp.router.bias"), vec![n], format!("{n} experts"));
            let ff2 = mul(2, ff)?;
            o.push(format!("{l}mlp.experts.gate_up_proj"), vec![n, hidden, ff2], format!("{n} experts, hidden_size {hidden}, 2 × intermediate_size {ff} (gate and up interleaved)"));
            o.push(format!("{l}mlp.experts.gate_up_proj_bias"), vec![n, ff2], format!("{n} experts, 2 × intermediate_size {ff}"));
            o.push(format!("{l}mlp.experts.down_proj"), vec![n, ff, hidden], format!("{n} experts, intermediate_size {ff}, hidden_size {hidden}"));
            o.push(format!("{l}mlp.experts.down_proj_bias"), vec![n, hidden], format!("{n} experts, hidden_size {hidden}"));
        }
        Family::GraniteHybrid => {
            norm(o, "input_layernorm");
            let kind = arch.raw.get("layer_types").and_then(Value::as_array).and_then(|a| a.get(usize::try_from(i).ok()?)).and_then(Value::as_str).unwrap_or("attention");
            if kind == "mamba" {
                let c = Mamba::of_heads(arch, ["mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv", "mamba_conv_bias", "mamba_proj_bias"])?;
                mamba(o, &format!("{l}mamba."), hidden, &c)?;
            } else {
                let (heads, kv) = (arch.attention_heads?, arch.kv_heads?);
                attention(o, l, hidden, heads, kv, hidden.checked_div(heads)?, arch.attention_bias)?;
            }
            norm(o, "post_attention_layernorm");
            let n = get(arch, &["num_local_experts"]).unwrap_or(0);
            let ff = arch.intermediate_size?;
            if n > 0 {
                o.push(format!("{l}block_sparse_moe.input_linear.weight"), vec![n, mul(2, ff)?, hidden], format!("{n} experts, 2 × intermediate_size {ff} (gate, up), hidden_size {hidden}"));
                o.push(format!("{l}block_sparse_moe.output_linear.weight"), vec![n, hidden, ff], format!("{n} experts, hidden_size {hidden}, intermediate_size {ff}"));
                o.push(format!("{l}block_sparse_moe.router.layer.weight"), vec![n, hidden], format!("{n} experts, hidden_size {hidden}"));
            }
            let shared = get(arch, &["shared_intermediate_size"]).unwrap_or(0);
            if shared > 0 {
                o.push(format!("{l}shared_mlp.input_linear.weight"), vec![mul(2, shared)?, hidden], format!("2 × shared_intermediate_size {shared}, hidden_size {hidden}"));
                o.push(format!("{l}shared_mlp.output_linear.weight"), vec![hidden, shared], format!("hidden_size {hidden}, shared_intermediate_size {shared}"));
            }
        }
        Family::Mixtral => {
            let (heads, kv, hd) = (arch.attention_heads?, arch.kv_heads?, arch.head_dim?);
            let (n, ff) = (get(arch, &["num_local_experts"])?, arch.intermediate_size?);
            norm(o, "input_layernorm");
            attention(o, l, hidden, heads, kv, hd, false)?;
            norm(o, "post_attention_layernorm");
            o.push(format!("{l}block_sparse_moe.gate.weight"), vec![n, hidden], format!("{n} experts, hidden_size {hidden}"));
            for e in 0..n {
                let what = format!("expert {e} of {n}: intermediate_size {ff}");
                o.push(format!("{l}block_sparse_moe.experts.{e}.w1.weight"), vec![ff, hidden], format!("{what} (gate), hidden_size {hidden}"));
                o.push(format!("{l}block_sparse_moe.experts.{e}.w2.weight"), vec![hidden, ff], format!("hidden_size {hidden}, {what} (down)"));
                o.push(format!("{l}block_sparse_moe.experts.{e}.w3.weight"), vec![ff, hidden], format!("{what} (up), hidden_size {hidden}"));
            }
        }
        Family::Olmoe => {
            let (heads, kv, hd) = (arch.attention_heads?, arch.kv_heads?, arch.head_dim?);
            norm(o, "input_layernorm");
            attention(o, l, hidden, heads, kv, hd, arch.attention_bias)?;
            o.push(format!("{l}self_attn.q_norm.weight"), vec![mul(heads, hd)?], format!("heads {heads} × head_dim {hd} (the whole projection)"));
            o.push(format!("{l}self_attn.k_norm.weight"), vec![mul(kv, hd)?], format!("kv_heads {kv} × head_dim {hd} (the whole projection)"));
            norm(o, "post_attention_layernorm");
            experts(o, l, hidden, get(arch, &["num_experts"])?, arch.intermediate_size?);
        }
        Family::Glm4Moe => {
            let (heads, kv, hd) = (arch.attention_heads?, arch.kv_heads?, arch.head_dim?);
            norm(o, "input_layernorm");
            attention(o, l, hidden, heads, kv, hd, false)?;
            if arch.attention_bias {
                o.push(format!("{l}self_attn.q_proj.bias"), vec![mul(heads, hd)?], format!("heads {heads} × head_dim {hd}"));
                o.push(format!("{l}self_attn.k_proj.bias"), vec![mul(kv, hd)?], format!("kv_heads {kv} × head_dim {hd}"));
                o.push(format!("{l}self_attn.v_proj.bias"), vec![mul(kv, hd)?], format!("kv_heads {kv} × head_dim {hd}"));
            }
            if flag(arch, "use_qk_norm", false) {
                o.push(format!("{l}self_attn.q_norm.weight"), vec![hd], format!("head_dim {hd}"));
                o.push(format!("{l}self_attn.k_norm.weight"), vec![hd], format!("head_dim {hd}"));
            }
            norm(o, "post_attention_layernorm");
            dense_then_routed(arch, o, l, i, hidden, true)?;
        }
        Family::Qwen3Next => {
            norm(o, "input_layernorm");
            let kind = arch.raw.get("layer_types").and_then(Value::as_array).and_then(|a| a.get(usize::try_from(i).ok()?)).and_then(Value::as_str).unwrap_or("full_attention");
            if kind == "linear_attention" {
                let (nk, nv) = (get(arch, &["linear_num_key_heads"])?, get(arch, &["linear_num_value_heads"])?);
                let (hk, hv) = (get(arch, &["linear_key_head_dim"])?, get(arch, &["linear_value_head_dim"])?);
                let (key, value) = (mul(nk, hk)?, mul(nv, hv)?);
                let m = format!("{l}linear_attn.");
                let dims = format!("key_dim {key} = {nk} × {hk}, value_dim {value} = {nv} × {hv}");
                o.push(format!("{m}in_proj_qkvz.weight"), vec![mul(2, key)?.checked_add(mul(2, value)?)?, hidden], format!("2 × key_dim + 2 × value_dim ({dims}), hidden_size {hidden}"));
                o.push(format!("{m}in_proj_ba.weight"), vec![mul(2, nv)?, hidden], format!("2 × {nv} value heads, hidden_size {hidden}"));
                let kernel = get(arch, &["linear_conv_kernel_dim"])?;
                o.push(format!("{m}conv1d.weight"), vec![mul(2, key)?.checked_add(value)?, 1, kernel], format!("2 × key_dim + value_dim ({dims}), kernel {kernel}"));
                for p in ["dt_bias", "A_log"] {
                    o.push(format!("{m}{p}"), vec![nv], format!("{nv} value heads"));
                }
                o.push(format!("{m}norm.weight"), vec![hv], format!("linear_value_head_dim {hv}"));
                o.push(format!("{m}out_proj.weight"), vec![hidden, value], format!("hidden_size {hidden}, {dims}"));
            } else {
                let (heads, kv, hd) = (arch.attention_heads?, arch.kv_heads?, arch.head_dim?);
                attention(o, l, hidden, heads, kv, hd, arch.attention_bias)?;
                if let Some(q) = o.list.iter_mut().find(|e| e.name == format!("{l}self_attn.q_proj.weight")) {
                    q.shape = vec![mul(2, mul(heads, hd)?)?, hidden];
                    q.why = format!("2 × heads {heads} × head_dim {hd} (queries and their gate), hidden_size {hidden}");
                }
                if let Some(q) = o.list.iter_mut().find(|e| e.name == format!("{l}self_attn.q_proj.bias")) {
                    q.shape = vec![mul(2, mul(heads, hd)?)?];
                }
                o.push(format!("{l}self_attn.q_norm.weight"), vec![hd], format!("head_dim {hd}"));
                o.push(format!("{l}self_attn.k_norm.weight"), vec![hd], format!("head_dim {hd}"));
            }
            norm(o, "post_attention_layernorm");
            if let Some(n) = qwen_sparse(arch, i) {
                experts(o, l, hidden, n, get(arch, &["moe_intermediate_size"])?);
                let shared = get(arch, &["shared_expert_intermediate_size"])?;
                mlp(o, &format!("{l}mlp.shared_expert."), hidden, shared, "shared_expert_intermediate_size");
                o.push(format!("{l}mlp.shared_expert_gate.weight"), vec![1, hidden], format!("one gate value, hidden_size {hidden}"));
            } else {
                mlp(o, &format!("{l}mlp."), hidden, arch.intermediate_size?, "intermediate_size");
            }
        }
        Family::Llama4 => {
            let (heads, kv, hd) = (arch.attention_heads?, arch.kv_heads?, arch.head_dim?);
            norm(o, "input_layernorm");
            attention(o, l, hidden, heads, kv, hd, arch.attention_bias)?;
            norm(o, "post_attention_layernorm");
            let moe = match arch.raw.get("moe_layers").and_then(Value::as_array) {
                Some(list) => list.iter().any(|v| v.as_u64() == Some(i)),
                None => get(arch, &["interleave_moe_layer_step"]).unwrap_or(1).max(1).checked_sub(1).is_some_and(|s| (i + 1).is_multiple_of(s + 1)),
            };
            let ff = arch.intermediate_size?;
            if moe {
                let n = get(arch, &["num_local_experts"])?;
                o.push(format!("{l}feed_forward.router.weight"), vec![n, hidden], format!("{n} experts, hidden_size {hidden}"));
                o.push(format!("{l}feed_forward.experts.gate_up_proj"), vec![n, hidden, mul(2, ff)?], format!("{n} experts, hidden_size {hidden}, 2 × intermediate_size {ff} (gate, up halves)"));
                o.push(format!("{l}feed_forward.experts.down_proj"), vec![n, ff, hidden], format!("{n} experts, intermediate_size {ff}, hidden_size {hidden}"));
                mlp(o, &format!("{l}feed_forward.shared_expert."), hidden, ff, "the shared expert: intermediate_size");
            } else {
                mlp(o, &format!("{l}feed_forward."), hidden, get(arch, &["intermediate_size_mlp"])?, "a dense layer: intermediate_size_mlp");
            }
        }
        Family::FalconH1 => {
            // Every layer: attention and a Mamba-2 mixer in parallel, then the MLP.
            let (heads, kv, hd) = (arch.attention_heads?, arch.kv_heads?, arch.head_dim?);
            norm(o, "input_layernorm");
            attention(o, l, hidden, heads, kv, hd, arch.attention_bias)?;
            let (m_heads, expand) = (get(arch, &["mamba_n_heads"])?, get(arch, &["mamba_expand"]).unwrap_or(2));
            let (inner, inner_why) = match get(arch, &["mamba_d_ssm"]) {
                Some(d) => (d, format!("mamba_d_ssm {d}")),
                None => {
                    let d = mul(expand, hidden)?;
                    (d, format!("d_inner {d} = mamba_expand {expand} × hidden_size {hidden}"))
                }
            };
            let c = Mamba {
                heads: m_heads,
                inner,
                inner_why,
                groups: get(arch, &["mamba_n_groups"]).unwrap_or(1),
                state: get(arch, &["mamba_d_state"])?,
                kernel: get(arch, &["mamba_d_conv"])?,
                conv_bias: flag(arch, "mamba_conv_bias", true),
                proj_bias: flag(arch, "mamba_proj_bias", false),
                out_bias: flag(arch, "projectors_bias", false),
                norm: flag(arch, "mamba_rms_norm", false),
            };
            mamba(o, &format!("{l}mamba."), hidden, &c)?;
            norm(o, "pre_ff_layernorm");
            let ff = arch.intermediate_size?;
            mlp(o, &format!("{l}feed_forward."), hidden, ff, "intermediate_size");
            if arch.mlp_bias {
                for (p, n) in [("gate_proj", ff), ("up_proj", ff), ("down_proj", hidden)] {
                    o.push(format!("{l}feed_forward.{p}.bias"), vec![n], format!("{n} outputs"));
                }
            }
        }
        Family::Mamba2 => {
            o.push(format!("{l}norm.weight"), vec![hidden], format!("hidden_size {hidden}"));
            let c = Mamba::of_heads(arch, ["num_heads", "head_dim", "n_groups", "state_size", "conv_kernel", "use_conv_bias", "use_bias"])?;
            mamba(o, &format!("{l}mixer."), hidden, &c)?;
        }
        _ => return None,
    }
    Some(())
}
