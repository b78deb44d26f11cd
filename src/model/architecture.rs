//! Architecture from `config.json`, and the checks of a checkpoint's tensors against it.
//!
//! [`Architecture::from_config`] reads the fields Hugging Face `transformers` uses for the
//! llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text and phi3 families (other
//! families are shown raw). [`check_inventory`] derives the tensor inventory those classes create
//! (names and shapes, as `transformers` names them in `state_dict()`) and compares it with
//! the tensors actually present: missing, unexpected and misshapen tensors become findings
//! naming the tensor and the expected shape.
//!
//! Written by hand because no crate knows these model layouts; the facts (tensor names,
//! which config key drives which dimension, family defaults) come from the configuration
//! and modeling files of `transformers`.

use crate::error::{clip, keep_bounded, Code, Finding, FindingCap};
use crate::fmt::shape as fmt_shape;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};

mod families;

/// Most decoder layers we generate an inventory for. The deepest public decoder stacks
/// have about a hundred layers (Llama 3.1 405B: 126); a config claiming more is not
/// believed. The inventory costs ~10 names per layer, so this bounds what a 150-byte
/// config.json can make us do: at 10,000 layers one took 72 ms of CPU (found by the
/// `companions` fuzz target's time check); at 1,000, under 5 ms.
pub const MAX_LAYERS: u64 = 1_000;
/// Largest dimension believed from a config (hidden, intermediate, vocab, heads). Real
/// vocabularies stay below ~300k and widths below ~100k; 2^32 keeps products in u64.
pub const MAX_DIM: u64 = 1 << 32;

/// The family a config belongs to, deciding the tensor inventory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// llama, mistral: q/k/v/o + gate/up/down + 2 norms per layer.
    Llama,
    /// qwen2: llama plus q/k/v biases.
    Qwen2,
    /// qwen3: llama plus q_norm/k_norm per layer.
    Qwen3,
    /// gemma: llama layout, tied embeddings by default, explicit head_dim.
    Gemma,
    /// gemma2: gemma plus pre/post feed-forward norms.
    Gemma2,
    /// gemma3_text: gemma2 plus q_norm/k_norm.
    Gemma3,
    /// phi3: fused qkv_proj and gate_up_proj.
    Phi3,
    /// qwen3_moe: qwen3 attention, every layer a router and per-expert gate/up/down.
    Qwen3Moe,
    /// deepseek_v2 / deepseek_v3: MLA attention (q_a/q_b, kv_a/kv_b), leading dense
    /// layers, then routed and shared experts (and V3's router score bias).
    Deepseek2,
    /// gpt_oss: biased attention with sinks, fused 3-D experts (gate_up interleaved).
    GptOss,
    /// granitemoehybrid: Mamba-2 and attention layers, fused 3-D experts, a shared MLP.
    GraniteHybrid,
    /// mamba2: Mamba-2 mixer layers only (`backbone.` names).
    Mamba2,
    /// mixtral: llama attention, every layer a router `block_sparse_moe.gate` and
    /// per-expert `w1` / `w2` / `w3`.
    Mixtral,
    /// olmoe: llama attention with q/k norms over the whole projection, every layer a router
    /// and per-expert gate/up/down.
    Olmoe,
    /// glm4_moe (GLM-4.5): biased q/k/v, q/k norms, leading dense layers, then routed
    /// experts with a router score bias and shared experts; and the checkpoint's
    /// multi-token-prediction layers past `num_hidden_layers`.
    Glm4Moe,
    /// qwen3_next: per `layer_types` a gated delta-net (`linear_attn.*`) or gated attention
    /// (`q_proj` twice as wide); every layer a router, per-expert MLPs and a gated shared expert.
    Qwen3Next,
    /// llama4_text (Llama 4's text model): llama attention, fused `feed_forward.experts`
    /// (`gate_up_proj [E, hidden, 2·ff]`, `down_proj [E, ff, hidden]`), a router and a shared
    /// expert in the `moe_layers`, a dense MLP of `intermediate_size_mlp` elsewhere.
    Llama4,
    /// falcon_h1 (Falcon-H1): a parallel hybrid — every layer has attention (`self_attn.*`)
    /// and a Mamba-2 mixer (`mamba.*`) side by side, then a dense `feed_forward`; µP
    /// multipliers in the config that llama.cpp's converter folds into the weights.
    FalconH1,
    /// Anything else: the config is shown raw, no inventory check.
    Unknown,
}

impl Family {
    fn of(model_type: &str) -> Family {
        match model_type {
            "llama" | "mistral" => Family::Llama,
            "qwen2" => Family::Qwen2,
            "qwen3" => Family::Qwen3,
            "gemma" => Family::Gemma,
            "gemma2" => Family::Gemma2,
            "gemma3_text" => Family::Gemma3,
            "phi3" => Family::Phi3,
            "qwen3_moe" => Family::Qwen3Moe,
            "deepseek_v2" | "deepseek_v3" => Family::Deepseek2,
            "gpt_oss" => Family::GptOss,
            "granitemoehybrid" => Family::GraniteHybrid,
            "mamba2" => Family::Mamba2,
            "mixtral" => Family::Mixtral,
            "olmoe" => Family::Olmoe,
            "glm4_moe" => Family::Glm4Moe,
            "qwen3_next" => Family::Qwen3Next,
            "llama4_text" => Family::Llama4,
            "falcon_h1" => Family::FalconH1,
            _ => Family::Unknown,
        }
    }

    /// `tie_word_embeddings` when the config omits it (each config class's default).
    fn default_tied(self) -> bool {
        matches!(self, Family::Gemma | Family::Gemma2 | Family::Gemma3)
    }

    /// Whether the family's inventory is one of the dense llama-like layouts (the rest:
    /// [`families`]).
    pub fn is_dense(self) -> bool {
        matches!(self, Family::Llama | Family::Qwen2 | Family::Qwen3 | Family::Gemma | Family::Gemma2 | Family::Gemma3 | Family::Phi3)
    }
}

/// What `config.json` says about the model. Dimensions are `None` when absent or invalid
/// (an [`Code::InvalidConfig`] finding says which).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Architecture {
    pub family: Family,
    pub model_type: Option<String>,
    pub architectures: Vec<String>,
    pub layers: Option<u64>,
    pub hidden_size: Option<u64>,
    pub intermediate_size: Option<u64>,
    pub attention_heads: Option<u64>,
    pub kv_heads: Option<u64>,
    pub head_dim: Option<u64>,
    pub vocab_size: Option<u64>,
    pub tie_word_embeddings: bool,
    pub attention_bias: bool,
    pub mlp_bias: bool,
    pub rope_theta: Option<f64>,
    pub rope_scaling: Option<Value>,
    pub max_position_embeddings: Option<u64>,
    pub torch_dtype: Option<String>,
    /// "24 query heads share 8 KV heads (3 per group)" when heads are known.
    pub attention: Option<String>,
    /// The config's top-level fields as given (shown for unknown families).
    pub raw: Map<String, Value>,
}

impl Architecture {
    /// Reads a parsed `config.json`. Never fails: missing or mistyped fields are findings
    /// (warnings: the model may still load) and stay `None`.
    pub fn from_config(config: &Value, file: &str) -> (Architecture, Vec<Finding>) {
        let mut findings = Vec::new();
        let raw = config.as_object().cloned().unwrap_or_default();
        let model_type = raw.get("model_type").and_then(Value::as_str).map(str::to_string);
        let family = model_type.as_deref().map_or(Family::Unknown, Family::of);
        let architectures = raw
            .get("architectures")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        let known = family != Family::Unknown;
        let dim = |key: &str, required: bool, findings: &mut Vec<Finding>| -> Option<u64> {
            match raw.get(key) {
                None | Some(Value::Null) => {
                    // Mamba-2 has neither attention heads nor an MLP.
                    let needed = !(family == Family::Mamba2 && matches!(key, "num_attention_heads" | "intermediate_size"));
                    if required && known && needed {
                        findings.push(
                            Finding::warning(
                                Code::InvalidConfig,
                                format!("{file} has no {key:?}; the tensors cannot be checked against it"),
                            )
                            .field(key),
                        );
                    }
                    None
                }
                Some(v) => match v.as_u64().filter(|n| *n > 0 && *n <= MAX_DIM) {
                    Some(n) => Some(n),
                    None => {
                        findings.push(
                            Finding::warning(
                                Code::InvalidConfig,
                                format!("{file}: {key:?} is {}, not a positive integer up to {MAX_DIM}", clip(&v.to_string())),
                            )
                            .field(key),
                        );
                        None
                    }
                },
            }
        };
        let layers = dim("num_hidden_layers", true, &mut findings);
        let layers = match layers {
            Some(n) if n > MAX_LAYERS => {
                findings.push(
                    Finding::warning(
                        Code::InvalidConfig,
                        format!("{file}: num_hidden_layers = {n} exceeds the {MAX_LAYERS} believed"),
                    )
                    .field("num_hidden_layers"),
                );
                None
            }
            other => other,
        };
        let hidden_size = dim("hidden_size", true, &mut findings);
        let intermediate_size = dim("intermediate_size", true, &mut findings);
        let attention_heads = dim("num_attention_heads", true, &mut findings);
        let vocab_size = dim("vocab_size", true, &mut findings);
        // num_key_value_heads defaults to num_attention_heads (multi-head attention).
        let kv_heads = dim("num_key_value_heads", false, &mut findings).or(attention_heads);
        // head_dim: explicit when given, else hidden / heads (gemma's default is 256).
        let explicit_head_dim = dim("head_dim", false, &mut findings);
        let head_dim = explicit_head_dim.or(match family {
            Family::Gemma | Family::Gemma2 | Family::Gemma3 if raw.get("head_dim").is_none() => Some(256),
            _ => hidden_size.zip(attention_heads).and_then(|(h, n)| h.checked_div(n)),
        });
        if explicit_head_dim.is_none() && family != Family::Unknown {
            if let (Some(h), Some(n)) = (hidden_size, attention_heads) {
                if h % n != 0 && !matches!(family, Family::Gemma | Family::Gemma2 | Family::Gemma3) {
                    findings.push(
                        Finding::warning(
                            Code::InvalidConfig,
                            format!("{file}: hidden_size {h} is not a multiple of num_attention_heads {n} and no head_dim is given"),
                        )
                        .field("head_dim"),
                    );
                }
            }
        }
        if let (Some(q), Some(kv)) = (attention_heads, kv_heads) {
            if q % kv != 0 {
                findings.push(
                    Finding::warning(
                        Code::InvalidConfig,
                        format!("{file}: num_attention_heads {q} is not a multiple of num_key_value_heads {kv}"),
                    )
                    .field("num_key_value_heads"),
                );
            }
        }
        let attention = attention_heads.zip(kv_heads).map(|(q, kv)| {
            if q == kv {
                format!("{q} query heads, {kv} KV heads (multi-head attention)")
            } else {
                format!(
                    "{q} query heads share {kv} KV heads ({} per group, grouped-query attention)",
                    q.checked_div(kv).unwrap_or(0)
                )
            }
        });
        let flag = |key: &str, default: bool| raw.get(key).and_then(Value::as_bool).unwrap_or(default);
        let tie_word_embeddings = flag("tie_word_embeddings", family.default_tied());
        // qwen2's q/k/v biases are fixed by the class, not by a config key.
        let attention_bias = flag("attention_bias", false);
        let mlp_bias = flag("mlp_bias", false);
        let torch_dtype = raw
            .get("torch_dtype")
            .or_else(|| raw.get("dtype"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let arch = Architecture {
            family,
            model_type,
            architectures,
            layers,
            hidden_size,
            intermediate_size,
            attention_heads,
            kv_heads,
            head_dim,
            vocab_size,
            tie_word_embeddings,
            attention_bias,
            mlp_bias,
            rope_theta: raw.get("rope_theta").and_then(Value::as_f64),
            rope_scaling: raw.get("rope_scaling").filter(|v| !v.is_null()).cloned(),
            max_position_embeddings: raw.get("max_position_embeddings").and_then(Value::as_u64),
            torch_dtype,
            attention,
            raw: raw.clone(),
        };
        (arch, findings)
    }

    /// The tensors the `transformers` class for this config creates, in model order, with
    /// their shapes (row-major, `[out_features, in_features]` for linear weights). `None`
    /// for unknown families, a missing dimension, or a shape that overflows.
    pub fn expected_tensors(&self, prefix: &str) -> Option<Vec<Expected>> {
        if self.family == Family::Unknown {
            return None;
        }
        if !self.family.is_dense() {
            return families::expected_tensors(self, prefix);
        }
        let hidden = self.hidden_size?;
        let inter = self.intermediate_size?;
        let heads = self.attention_heads?;
        let kv = self.kv_heads?;
        let hd = self.head_dim?;
        let vocab = self.vocab_size?;
        let layers = self.layers?;
        let q_out = heads.checked_mul(hd)?;
        let kv_out = kv.checked_mul(hd)?;
        let mut out = Vec::new();
        let mut push = |name: String, shape: Vec<u64>, why: String| out.push(Expected { name, shape, why });
        push(
            format!("{prefix}embed_tokens.weight"),
            vec![vocab, hidden],
            format!("vocab_size {vocab} × hidden_size {hidden}"),
        );
        let fam = self.family;
        let gemma = matches!(fam, Family::Gemma | Family::Gemma2 | Family::Gemma3);
        for i in 0..layers {
            let l = format!("{prefix}layers.{i}.");
            push(format!("{l}input_layernorm.weight"), vec![hidden], format!("hidden_size {hidden}"));
            if fam == Family::Phi3 {
                let qkv = heads.checked_add(kv.checked_mul(2)?)?.checked_mul(hd)?;
                push(
                    format!("{l}self_attn.qkv_proj.weight"),
                    vec![qkv, hidden],
                    format!("(heads {heads} + 2 × kv_heads {kv}) × head_dim {hd}, hidden_size {hidden}"),
                );
            } else {
                push(
                    format!("{l}self_attn.q_proj.weight"),
                    vec![q_out, hidden],
                    format!("heads {heads} × head_dim {hd}, hidden_size {hidden}"),
                );
                push(
                    format!("{l}self_attn.k_proj.weight"),
                    vec![kv_out, hidden],
                    format!("kv_heads {kv} × head_dim {hd}, hidden_size {hidden}"),
                );
                push(
                    format!("{l}self_attn.v_proj.weight"),
                    vec![kv_out, hidden],
                    format!("kv_heads {kv} × head_dim {hd}, hidden_size {hidden}"),
                );
                if fam == Family::Qwen2 || self.attention_bias {
                    push(format!("{l}self_attn.q_proj.bias"), vec![q_out], format!("heads {heads} × head_dim {hd}"));
                    push(format!("{l}self_attn.k_proj.bias"), vec![kv_out], format!("kv_heads {kv} × head_dim {hd}"));
                    push(format!("{l}self_attn.v_proj.bias"), vec![kv_out], format!("kv_heads {kv} × head_dim {hd}"));
                }
                if matches!(fam, Family::Qwen3 | Family::Gemma3) {
                    push(format!("{l}self_attn.q_norm.weight"), vec![hd], format!("head_dim {hd}"));
                    push(format!("{l}self_attn.k_norm.weight"), vec![hd], format!("head_dim {hd}"));
                }
            }
            push(
                format!("{l}self_attn.o_proj.weight"),
                vec![hidden, q_out],
                format!("hidden_size {hidden}, heads {heads} × head_dim {hd}"),
            );
            if self.attention_bias && fam != Family::Phi3 {
                push(format!("{l}self_attn.o_proj.bias"), vec![hidden], format!("hidden_size {hidden}"));
            }
            push(
                format!("{l}post_attention_layernorm.weight"),
                vec![hidden],
                format!("hidden_size {hidden}"),
            );
            if matches!(fam, Family::Gemma2 | Family::Gemma3) {
                push(format!("{l}pre_feedforward_layernorm.weight"), vec![hidden], format!("hidden_size {hidden}"));
                push(format!("{l}post_feedforward_layernorm.weight"), vec![hidden], format!("hidden_size {hidden}"));
            }
            if fam == Family::Phi3 {
                push(
                    format!("{l}mlp.gate_up_proj.weight"),
                    vec![inter.checked_mul(2)?, hidden],
                    format!("2 × intermediate_size {inter}, hidden_size {hidden}"),
                );
            } else {
                push(
                    format!("{l}mlp.gate_proj.weight"),
                    vec![inter, hidden],
                    format!("intermediate_size {inter}, hidden_size {hidden}"),
                );
                push(
                    format!("{l}mlp.up_proj.weight"),
                    vec![inter, hidden],
                    format!("intermediate_size {inter}, hidden_size {hidden}"),
                );
                if self.mlp_bias && !gemma {
                    push(format!("{l}mlp.gate_proj.bias"), vec![inter], format!("intermediate_size {inter}"));
                    push(format!("{l}mlp.up_proj.bias"), vec![inter], format!("intermediate_size {inter}"));
                }
            }
            push(
                format!("{l}mlp.down_proj.weight"),
                vec![hidden, inter],
                format!("hidden_size {hidden}, intermediate_size {inter}"),
            );
            if self.mlp_bias && !gemma && fam != Family::Phi3 {
                push(format!("{l}mlp.down_proj.bias"), vec![hidden], format!("hidden_size {hidden}"));
            }
        }
        push(format!("{prefix}norm.weight"), vec![hidden], format!("hidden_size {hidden}"));
        if !self.tie_word_embeddings {
            push(
                "lm_head.weight".to_string(),
                vec![vocab, hidden],
                format!("vocab_size {vocab} × hidden_size {hidden}, tie_word_embeddings false"),
            );
        }
        Some(out)
    }
}

/// Most findings of one code listed one by one (the rest are counted in a last finding):
/// the crate-wide cap, [`crate::error::MAX_FINDINGS_PER_CODE`]. A config that does not
/// belong to the tensors (or claims thousands of layers) would otherwise bury the page
/// under one finding per tensor.
pub use crate::error::MAX_FINDINGS_PER_CODE;

/// Keeps the first [`MAX_FINDINGS_PER_CODE`] findings of each code and counts the rest.
pub fn cap_findings(mut findings: Vec<Finding>) -> Vec<Finding> {
    crate::error::cap_findings(&mut findings);
    findings
}

/// One tensor the config implies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Expected {
    pub name: String,
    pub shape: Vec<u64>,
    /// Which config values give the shape, for messages.
    pub why: String,
}

/// A tensor as the inventory check sees it: name, shape, element count and the file it is in.
#[derive(Clone, Copy, Debug)]
pub struct Present<'a> {
    pub name: &'a str,
    pub shape: &'a [u64],
    pub params: Option<u64>,
    pub file: &'a str,
}

/// The outcome of checking the tensors against the config.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct InventoryCheck {
    /// Whether the inventory could be derived (known family, all dimensions present).
    pub checked: bool,
    /// The name prefix the decoder's tensors use ("model." for *ForCausalLM).
    pub prefix: String,
    pub expected_tensors: u64,
    /// Parameters the config implies (sum over the expected shapes).
    pub expected_params: Option<u64>,
    pub present_tensors: u64,
    pub matched: u64,
    pub missing: u64,
    pub unexpected: u64,
    pub shape_mismatches: u64,
    /// Missing tensors the index places in a shard that was not provided (not findings:
    /// the missing shard is).
    pub in_missing_shards: u64,
    pub total_params: u64,
    pub embedding_params: Option<u64>,
    /// The embedding's share of all parameters, in percent (Llama 3.2 3B: 12.26).
    pub embedding_share_percent: Option<f64>,
    /// Tensors per decoder layer the config implies.
    pub tensors_per_layer: Option<u64>,
}

/// The layer of a decoder tensor (`model.layers.61.eh_proj.weight` → 61).
fn layer_number(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("model.").unwrap_or(name).strip_prefix("layers.")?;
    let (layer, _) = rest.split_once('.')?;
    if layer.is_empty() || !layer.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    layer.parse().ok()
}

/// Checks `present` against the inventory `arch` implies (every finding; callers cap them
/// with [`cap_findings`]). `absent_ok` holds names that
/// are known to be in shards that were not provided: their absence is not reported again.
pub fn check_inventory(arch: &Architecture, present: &[Present<'_>], absent_ok: &BTreeSet<String>) -> (InventoryCheck, Vec<Finding>) {
    let mut a = InventoryCheck {
        present_tensors: present.len() as u64,
        total_params: present
            .iter()
            .fold(0u64, |s, t| s.saturating_add(t.params.unwrap_or(0))),
        ..InventoryCheck::default()
    };
    let mut findings = Vec::new();
    let by_name: HashMap<&str, &Present<'_>> = present.iter().map(|t| (t.name, t)).collect();
    // *ForCausalLM nests the decoder under "model."; a bare *Model has no prefix.
    // Mamba-2 nests it under "backbone." and names the embedding "embeddings".
    let prefix = if arch.family == Family::Mamba2 {
        "backbone."
    } else if by_name.contains_key("model.embed_tokens.weight") || !by_name.contains_key("embed_tokens.weight") {
        "model."
    } else {
        ""
    };
    a.prefix = prefix.to_string();
    let embed_name = if arch.family == Family::Mamba2 { "backbone.embeddings.weight".to_string() } else { format!("{prefix}embed_tokens.weight") };
    a.embedding_params = by_name.get(embed_name.as_str()).and_then(|t| t.params);
    a.embedding_share_percent = a.embedding_params.and_then(|e| {
        if a.total_params == 0 {
            None
        } else {
            Some(e as f64 * 100.0 / a.total_params as f64)
        }
    });
    let Some(expected) = arch.expected_tensors(prefix) else {
        return (a, findings);
    };
    a.checked = true;
    a.expected_tensors = expected.len() as u64;
    a.expected_params = expected.iter().try_fold(0u64, |s, e| {
        let n = e.shape.iter().try_fold(1u64, |p, d| p.checked_mul(*d))?;
        s.checked_add(n)
    });
    a.tensors_per_layer = arch.layers.filter(|l| *l > 0).and_then(|l| {
        let per_model = if arch.tie_word_embeddings { 2 } else { 3 };
        (expected.len() as u64).checked_sub(per_model)?.checked_div(l)
    });
    let mut expected_names = BTreeSet::new();
    let mut cap = FindingCap::default();
    for e in &expected {
        keep_bounded(&mut findings);
        expected_names.insert(e.name.as_str());
        match by_name.get(e.name.as_str()) {
            Some(t) if t.shape == e.shape.as_slice() => a.matched += 1,
            Some(t) => {
                a.shape_mismatches += 1;
                let what = if e.name == embed_name {
                    format!(
                        "the embedding {} has {} rows but config.json says vocab_size {}; expected {} ({})",
                        e.name,
                        t.shape.first().map_or_else(|| "no".to_string(), u64::to_string),
                        arch.vocab_size.unwrap_or(0),
                        fmt_shape(&e.shape),
                        e.why
                    )
                } else {
                    format!(
                        "{} has shape {} but config.json implies {} ({})",
                        clip(&e.name),
                        fmt_shape(t.shape),
                        fmt_shape(&e.shape),
                        e.why
                    )
                };
                cap.push(&mut findings, Code::ShapeMismatch, true, || {
                    Finding::error(Code::ShapeMismatch, format!("{what}; it is in {}", clip(t.file)))
                        .tensor(e.name.as_str())
                        .field("shape")
                });
            }
            None if absent_ok.contains(&e.name) => a.in_missing_shards += 1,
            None => {
                a.missing += 1;
                cap.push(&mut findings, Code::MissingTensor, true, || {
                    Finding::error(
                        Code::MissingTensor,
                        format!(
                            "{} {} ({}) is expected from config.json but no file has it",
                            e.name,
                            fmt_shape(&e.shape),
                            e.why
                        ),
                    )
                    .tensor(e.name.as_str())
                });
            }
        }
    }
    for t in present {
        keep_bounded(&mut findings);
        if expected_names.contains(t.name) {
            continue;
        }
        a.unexpected += 1;
        let mtp_layer = arch.family == Family::Deepseek2
            && layer_number(t.name).zip(arch.layers).is_some_and(|(layer, n)| layer >= n);
        let message = || if mtp_layer {
            format!(
                "{} in {} is in a layer past num_hidden_layers ({}): a multi-token-prediction (MTP) layer, which transformers does not load and llama.cpp's converter drops by design",
                clip(t.name),
                clip(t.file),
                arch.layers.unwrap_or(0)
            )
        } else if t.name.ends_with(".rotary_emb.inv_freq") {
            format!(
                "{} in {} is a rotary-embedding buffer that current loaders recompute and ignore",
                clip(t.name),
                clip(t.file)
            )
        } else if t.name == "lm_head.weight" && arch.tie_word_embeddings {
            format!(
                "lm_head.weight is stored in {} although tie_word_embeddings is true; loaders tie it to the embedding and ignore these bytes",
                clip(t.file)
            )
        } else {
            format!(
                "{} {} in {} is not among the tensors config.json implies for {}",
                clip(t.name),
                fmt_shape(t.shape),
                clip(t.file),
                clip(arch.model_type.as_deref().unwrap_or("this model"))
            )
        };
        cap.push(&mut findings, Code::UnexpectedTensor, false, || Finding::warning(Code::UnexpectedTensor, message()).tensor(t.name));
    }
    cap.finish(&mut findings);
    (a, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn llama32_3b() -> Value {
        json!({
            "architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 28,
            "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128,
            "vocab_size": 128256, "tie_word_embeddings": true, "rope_theta": 500000.0,
            "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"},
            "torch_dtype": "bfloat16", "max_position_embeddings": 131072
        })
    }

    #[test]
    fn llama_inventory_counts() {
        let (a, f) = Architecture::from_config(&llama32_3b(), "config.json");
        assert!(f.is_empty(), "{f:?}");
        assert_eq!(a.family, Family::Llama);
        let e = a.expected_tensors("model.").unwrap();
        assert_eq!(e.len(), 254);
        let params: u64 = e.iter().map(|e| e.shape.iter().product::<u64>()).sum();
        assert_eq!(params, 3_212_749_824);
        assert_eq!(a.attention.as_deref(), Some("24 query heads share 8 KV heads (3 per group, grouped-query attention)"));
    }

    #[test]
    fn families_add_their_tensors() {
        let mut c = llama32_3b();
        c["model_type"] = json!("qwen2");
        let (a, _) = Architecture::from_config(&c, "config.json");
        assert_eq!(a.expected_tensors("model.").unwrap().len(), 254 + 3 * 28);
        c["model_type"] = json!("phi3");
        let (a, _) = Architecture::from_config(&c, "config.json");
        let e = a.expected_tensors("model.").unwrap();
        assert_eq!(e.len(), 2 + 6 * 28);
        assert!(e.iter().any(|e| e.name == "model.layers.0.self_attn.qkv_proj.weight" && e.shape == [(24 + 16) * 128, 3072]));
        c["model_type"] = json!("gemma2");
        let (a, _) = Architecture::from_config(&c, "config.json");
        assert_eq!(a.expected_tensors("model.").unwrap().len(), 2 + 11 * 28);
        c["model_type"] = json!("something_new");
        let (a, f) = Architecture::from_config(&c, "config.json");
        assert!(a.expected_tensors("model.").is_none());
        assert!(f.is_empty());
        assert_eq!(a.raw.get("hidden_size"), Some(&json!(3072)));
    }

    #[test]
    fn findings_are_capped_per_code() {
        let (a, _) = Architecture::from_config(&llama32_3b(), "config.json");
        let shape = [1u64];
        let names: Vec<String> = (0..300).map(|i| format!("other.{i}")).collect();
        let present: Vec<Present<'_>> = names
            .iter()
            .map(|n| Present { name: n, shape: &shape, params: Some(1), file: "x.safetensors" })
            .collect();
        let (check, f) = check_inventory(&a, &present, &BTreeSet::new());
        assert_eq!((check.missing, check.unexpected), (254, 300));
        assert_eq!(f.len(), 2 * (MAX_FINDINGS_PER_CODE + 1), "capped as they are made");
        let f = cap_findings(f);
        let missing = f.iter().filter(|x| x.code == Code::MissingTensor).count();
        let unexpected = f.iter().filter(|x| x.code == Code::UnexpectedTensor).count();
        assert_eq!((missing, unexpected), (MAX_FINDINGS_PER_CODE + 1, MAX_FINDINGS_PER_CODE + 1));
        assert!(f.iter().any(|x| x.message == "… and 54 more MissingTensor findings like the ones above" && x.is_error()));
        assert!(f.iter().any(|x| x.message == "… and 100 more UnexpectedTensor findings like the ones above" && !x.is_error()));
    }

    #[test]
    fn hostile_config_is_bounded() {
        let mut c = llama32_3b();
        c["num_hidden_layers"] = json!(u64::MAX);
        c["hidden_size"] = json!(-1);
        let (a, f) = Architecture::from_config(&c, "config.json");
        assert_eq!(a.layers, None);
        assert_eq!(a.hidden_size, None);
        assert_eq!(f.len(), 2);
        assert!(a.expected_tensors("model.").is_none());
    }
}
