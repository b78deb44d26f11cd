//! A Hugging Face `config.json` read as llama.cpp's converter would write it: the GGUF keys
//! the description reads, per architecture, after each converter class's
//! `set_gguf_parameters` (`conversion/*.py` in the tree vendored by llama-cpp-python 0.3.36;
//! file:line references below are to that tree). [`Description::from_config`] loads these
//! keys with the loader that reads a header, so both sides of a conversion give one
//! description: this file emulates the converter, not llama.cpp.
//!
//! - `text_config` is merged over the top level (`conversion/base.py:1352`).
//! - The converter reads the config through `AutoConfig`, so transformers' class defaults
//!   fill absent keys; the few that decide a width are in [`DEFAULTS`]. Mamba2 and the
//!   Granite hybrids read the raw file (`conversion/mamba.py:108`): no defaults there.
//! - `find_hparam` takes the first key present, a `null` one included (`base.py:211`).
//! - An unknown `model_type` gives `None`: there is no llama.cpp architecture to name.
//! - What the converter would refuse, or where llama.cpp runs the model differently from
//!   transformers (a `layer_types` llama.cpp does not follow), is a gap sentence.

use super::{Attention, Description, Ffn, MAX_EXPERTS, MAX_LAYERS, MAX_WIDTH};
use crate::formats::gguf::{Array, Value, ValueType};
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;

/// The converter's output for one config: the architecture, the keys by full name, and
/// what transformers runs that the keys cannot say (checked against the loaded description).
pub(super) struct Converted {
    pub arch: &'static str,
    pub keys: BTreeMap<String, Value>,
    gaps: Vec<String>,
    /// The layers transformers slides (`layer_types`).
    hf_sliding: Option<Vec<bool>>,
    /// Dense layers of a qwen MoE (`mlp_only_layers`, `decoder_sparse_step`) and their width.
    hf_dense: Option<(Vec<bool>, u64)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    Llama,
    Qwen2,
    Qwen2Moe,
    Qwen3,
    Qwen3Moe,
    Gemma2,
    Gemma3,
    Deepseek2,
    GptOss,
    Granite,
    GraniteMoe,
    GraniteHybrid,
    Mamba2,
    Olmoe,
    Glm4Moe,
    Qwen3Next,
    Llama4,
    FalconH1,
    Phi3,
}

/// `model_type` → the converter class (dispatched on `architectures[0]`, which these
/// model types name one to one).
fn family(model_type: &str) -> Option<Family> {
    Some(match model_type {
        "llama" | "mistral" | "mixtral" => Family::Llama,
        "qwen2" => Family::Qwen2,
        "qwen2_moe" => Family::Qwen2Moe,
        "qwen3" => Family::Qwen3,
        "qwen3_moe" => Family::Qwen3Moe,
        "gemma2" => Family::Gemma2,
        "gemma3" | "gemma3_text" => Family::Gemma3,
        "deepseek_v2" | "deepseek_v3" => Family::Deepseek2,
        "gpt_oss" => Family::GptOss,
        "granite" => Family::Granite,
        "granitemoe" | "granitemoeshared" => Family::GraniteMoe,
        "granitemoehybrid" | "bamba" => Family::GraniteHybrid,
        "mamba2" => Family::Mamba2,
        "olmoe" => Family::Olmoe,
        "glm4_moe" => Family::Glm4Moe,
        "qwen3_next" => Family::Qwen3Next,
        "llama4" | "llama4_text" => Family::Llama4,
        "falcon_h1" => Family::FalconH1,
        "phi3" => Family::Phi3,
        _ => return None,
    })
}

fn arch_name(f: Family) -> &'static str {
    match f {
        Family::Llama => "llama",
        Family::Qwen2 => "qwen2",
        Family::Qwen2Moe => "qwen2moe",
        Family::Qwen3 => "qwen3",
        Family::Qwen3Moe => "qwen3moe",
        Family::Gemma2 => "gemma2",
        Family::Gemma3 => "gemma3",
        Family::Deepseek2 => "deepseek2",
        Family::GptOss => "gpt-oss",
        Family::Granite => "granite",
        Family::GraniteMoe => "granitemoe",
        Family::GraniteHybrid => "granitehybrid",
        Family::Mamba2 => "mamba2",
        Family::Olmoe => "olmoe",
        Family::Glm4Moe => "glm4moe",
        Family::Qwen3Next => "qwen3next",
        Family::Llama4 => "llama4",
        Family::FalconH1 => "falcon-h1",
        Family::Phi3 => "phi3",
    }
}

/// transformers 4.57's config class defaults that decide a width (`Gemma3TextConfig`,
/// `Gemma2Config`, `Qwen3Config`, `GptOssConfig`); other classes' defaults give what
/// llama.cpp's own defaults give (a head of `hidden_size / num_attention_heads`, as many KV
/// heads as heads).
const DEFAULTS: &[(Family, &str, u64)] = &[
    (Family::Gemma3, "vocab_size", 262_208),
    (Family::Gemma3, "hidden_size", 2304),
    (Family::Gemma3, "intermediate_size", 9216),
    (Family::Gemma3, "num_hidden_layers", 26),
    (Family::Gemma3, "num_attention_heads", 8),
    (Family::Gemma3, "num_key_value_heads", 4),
    (Family::Gemma3, "head_dim", 256),
    (Family::Gemma3, "max_position_embeddings", 131_072),
    (Family::Gemma3, "sliding_window", 4096),
    (Family::Gemma2, "vocab_size", 256_000),
    (Family::Gemma2, "hidden_size", 2304),
    (Family::Gemma2, "intermediate_size", 9216),
    (Family::Gemma2, "num_hidden_layers", 26),
    (Family::Gemma2, "num_attention_heads", 8),
    (Family::Gemma2, "num_key_value_heads", 4),
    (Family::Gemma2, "head_dim", 256),
    (Family::Gemma2, "max_position_embeddings", 8192),
    (Family::Gemma2, "sliding_window", 4096),
    (Family::Qwen3, "head_dim", 128),
    (Family::GptOss, "sliding_window", 128),
];

/// The config's hyper-parameters as the converter sees them (`self.hparams`).
struct Hp {
    map: Map<String, Json>,
    /// Prefix also tried after the plain keys (`GraniteHybridModel.find_hparam`, `mamba_`).
    prefix: Option<&'static str>,
    gaps: Vec<String>,
}

/// What a JSON value is, for a gap sentence (never the value itself: it may be long).
fn kind(v: &Json) -> String {
    match v {
        Json::Number(n) => n.to_string(),
        Json::String(_) => "a string".into(),
        Json::Array(_) => "an array".into(),
        Json::Object(_) => "an object".into(),
        Json::Bool(b) => b.to_string(),
        Json::Null => "null".into(),
    }
}

impl Hp {
    /// `find_hparam`: the first of `keys` present (a null one included), then the prefixed ones.
    fn find(&self, keys: &[&str]) -> Option<(String, &Json)> {
        let plain = keys.iter().find_map(|k| self.map.get(*k).map(|v| (k.to_string(), v)));
        plain.or_else(|| {
            let p = self.prefix?;
            keys.iter().find_map(|k| {
                let key = format!("{p}{k}");
                self.map.get(&key).map(|v| (key, v))
            })
        })
    }
    /// A width: a whole number up to [`MAX_WIDTH`]. `null` is absent (`is not None`); any
    /// other value is a gap.
    fn num(&mut self, keys: &[&str]) -> Option<u64> {
        let (key, v) = self.find(keys)?;
        if v.is_null() {
            return None;
        }
        let n = v.as_u64().filter(|n| *n <= MAX_WIDTH);
        if n.is_none() {
            let what = kind(v);
            self.gaps.push(format!("config.json `{key}`: {what} is not a whole number up to 2^32"));
        }
        n
    }
    /// `self.hparams.get(key)` (no prefix).
    fn get(&mut self, key: &str) -> Option<u64> {
        let prefix = self.prefix.take();
        let n = self.num(&[key]);
        self.prefix = prefix;
        n
    }
    /// A key the converter indexes (`hparams[key]`): absent, it stops the conversion.
    fn need(&mut self, keys: &[&str], arch: &str) -> Option<u64> {
        let n = self.num(keys);
        if n.is_none() && self.find(keys).is_none_or(|(_, v)| v.is_null()) {
            let names = keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" / ");
            self.gaps.push(format!("config.json has no {names}, which the converter needs for {arch}"));
        }
        n
    }
    fn flag(&self, key: &str) -> Option<bool> {
        self.map.get(key).and_then(Json::as_bool)
    }
    fn str_list(&self, key: &str) -> Option<Vec<&str>> {
        self.map.get(key)?.as_array()?.iter().map(Json::as_str).collect()
    }
    fn num_list(&self, key: &str) -> Option<Vec<u64>> {
        self.map.get(key)?.as_array()?.iter().map(Json::as_u64).collect()
    }
}

/// The keys written, by full name (`{arch}.{key}`).
struct Out {
    arch: &'static str,
    keys: BTreeMap<String, Value>,
}

impl Out {
    fn put(&mut self, key: &str, v: Option<u64>) {
        if let Some(v) = v {
            self.keys.insert(format!("{}.{key}", self.arch), Value::U64(v));
        }
    }
    fn put_bool(&mut self, key: &str, b: bool) {
        self.keys.insert(format!("{}.{key}", self.arch), Value::Bool(u8::from(b)));
    }
    fn put_bools(&mut self, key: &str, vals: Vec<bool>) {
        let head: Vec<Value> = vals.into_iter().map(|b| Value::Bool(u8::from(b))).collect();
        let array = Array { elem_type: ValueType::Bool, len: head.len() as u64, head };
        self.keys.insert(format!("{}.{key}", self.arch), Value::Array(array));
    }
    fn put_array(&mut self, key: &str, vals: Vec<u64>) {
        let head: Vec<Value> = vals.into_iter().map(Value::U64).collect();
        let array = Array { elem_type: ValueType::U32, len: head.len() as u64, head };
        self.keys.insert(format!("{}.{key}", self.arch), Value::Array(array));
    }
    /// The token list's length (`tokenizer.ggml.tokens`): the vocabulary the converter pads
    /// the tokenizer to (`vocab_size`), where no `{arch}.vocab_size` key is written.
    fn tokens(&mut self, n: Option<u64>) {
        if let Some(n) = n {
            let array = Array { elem_type: ValueType::String, len: n, head: Vec::new() };
            self.keys.insert("tokenizer.ggml.tokens".into(), Value::Array(array));
        }
    }
}

/// `TextModel.set_gguf_parameters` (`conversion/base.py:1434-1545`), the keys it writes
/// that the description reads.
fn base(hp: &mut Hp, out: &mut Out) {
    let ctx = hp.num(&["max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length", "model_max_length"]);
    out.put("context_length", ctx);
    out.put("embedding_length", hp.num(&["hidden_size", "n_embd", "dim"]));
    let ff = hp.num(&["prefix_dense_intermediate_size", "dense_intermediate_size", "intermediate_size", "n_inner", "hidden_dim"]);
    out.put("feed_forward_length", ff);
    out.put("attention.head_count", hp.num(&["num_attention_heads", "n_head", "n_heads"]));
    out.put("attention.head_count_kv", hp.num(&["num_key_value_heads", "n_kv_heads"]));
    if hp.flag("is_causal") == Some(false) {
        out.put_bool("attention.causal", false);
    }
    let experts = hp.num(&["num_local_experts", "num_experts", "n_routed_experts"]);
    if experts.is_some_and(|e| e > MAX_EXPERTS) {
        hp.gaps.push(format!("config.json: more than {MAX_EXPERTS} experts, which llama.cpp refuses"));
    }
    out.put("expert_count", experts);
    out.put("expert_used_count", hp.num(&["num_experts_per_tok", "num_experts_per_token", "top_k_experts"]));
    let head_dim = hp.get("head_dim");
    out.put("attention.key_length", head_dim);
    out.put("attention.value_length", head_dim);
}

/// `hf_sliding` from `layer_types`.
fn sliding_types(hp: &Hp) -> Option<Vec<bool>> {
    Some(hp.str_list("layer_types")?.iter().map(|t| *t == "sliding_attention").collect())
}

pub(super) fn convert(config: &Json) -> Option<Converted> {
    let top = config.as_object()?;
    let text = top.get("text_config").and_then(Json::as_object);
    let model_type = |o: &Map<String, Json>| o.get("model_type").and_then(Json::as_str).and_then(family);
    let fam = model_type(top).or_else(|| text.and_then(model_type))?;
    let mut map = top.clone();
    for (k, v) in text.into_iter().flatten() {
        map.insert(k.clone(), v.clone());
    }
    if !matches!(fam, Family::Mamba2 | Family::GraniteHybrid | Family::FalconH1) {
        for (_, key, v) in DEFAULTS.iter().filter(|d| d.0 == fam) {
            map.entry(*key).or_insert(Json::from(*v));
        }
    }
    let mut hp = Hp { map, prefix: None, gaps: Vec::new() };
    if matches!(fam, Family::GraniteHybrid | Family::FalconH1) {
        hp.prefix = Some("mamba_");
    }
    let n_layer = hp.num(&["n_layers", "num_hidden_layers", "n_layer", "num_layers"]).filter(|n| (1..=MAX_LAYERS).contains(n))?;
    let n = usize::try_from(n_layer).ok()?;

    // Granite hybrids: which layers attend (`get_attn_layers`, conversion/granite.py:431); a
    // hybrid without a Mamba layer is converted as granite / granitemoe (granite.py:418).
    let mut attn_layers = vec![false; n];
    let mut arch = arch_name(fam);
    if fam == Family::GraniteHybrid {
        attn_layers = granite_attention_layers(&mut hp, n);
        if attn_layers.iter().all(|a| *a) {
            let has_experts = hp.num(&["num_experts_per_tok", "num_experts_per_token"]).is_some_and(|e| e > 0);
            arch = if has_experts { "granitemoe" } else { "granite" };
        }
    }
    let mut out = Out { arch, keys: BTreeMap::new() };
    out.put("block_count", Some(n_layer));
    if fam == Family::Glm4Moe {
        // Glm4MoeModel.__init__ (conversion/glm.py:120): the MTP layers are blocks too.
        let nextn = hp.get("num_nextn_predict_layers").unwrap_or(0);
        out.put("block_count", n_layer.checked_add(nextn).filter(|n| *n <= MAX_LAYERS));
    }
    let mut hf_sliding = None;
    let mut hf_dense = None;
    let vocab = hp.get("vocab_size");

    match fam {
        Family::Llama | Family::Qwen2 | Family::Qwen2Moe | Family::Qwen3 | Family::Qwen3Moe | Family::Olmoe => {
            base(&mut hp, &mut out);
            if fam == Family::Llama {
                // LlamaModel.set_gguf_parameters (conversion/llama.py:165).
                out.put("vocab_size", hp.need(&["vocab_size"], arch));
            } else {
                out.tokens(vocab);
            }
            if matches!(fam, Family::Qwen2Moe | Family::Qwen3Moe) {
                // Qwen2MoeModel.set_gguf_parameters (conversion/qwen.py:81-88).
                out.put("expert_feed_forward_length", hp.get("moe_intermediate_size"));
                out.put("expert_shared_feed_forward_length", hp.get("shared_expert_intermediate_size"));
                hf_dense = qwen_moe_dense(&mut hp, n, arch);
            }
            if hp.flag("use_sliding_window") == Some(true) || (fam == Family::Llama && hp.get("sliding_window").is_some()) {
                hp.gaps.push(format!(
                    "config.json sets a sliding window, which llama.cpp's {arch} does not have: it attends in full"
                ));
            }
        }
        Family::Gemma2 => {
            // Gemma2Model.set_gguf_parameters (conversion/gemma.py:84-103).
            out.put("context_length", hp.need(&["max_position_embeddings"], arch));
            out.put("embedding_length", hp.need(&["hidden_size"], arch));
            out.put("feed_forward_length", hp.need(&["intermediate_size"], arch));
            let heads = hp.need(&["num_attention_heads"], arch);
            out.put("attention.head_count", heads);
            out.put("attention.head_count_kv", hp.get("num_key_value_heads").or(heads));
            let head_dim = hp.need(&["head_dim"], arch);
            out.put("attention.key_length", head_dim);
            out.put("attention.value_length", head_dim);
            out.put("attention.sliding_window", hp.need(&["sliding_window"], arch));
            out.tokens(vocab);
            hf_sliding = sliding_types(&hp);
        }
        Family::Gemma3 => {
            // Gemma3Model.set_gguf_parameters (conversion/gemma.py:141-161); its `.get`
            // defaults are Gemma3TextConfig's (in DEFAULTS).
            base(&mut hp, &mut out);
            if hp.map.get("sliding_window_pattern").and_then(Json::as_u64) != Some(1) {
                let mut window = hp.need(&["sliding_window"], arch);
                if hp.flag("use_bidirectional_attention") == Some(true) {
                    // Gemma3TextConfig.__init__ halves it for bidirectional attention.
                    window = window.map(|w| w / 2 + 1);
                }
                out.put("attention.sliding_window", window);
            }
            out.tokens(vocab);
            hf_sliding = sliding_types(&hp).or_else(|| {
                // transformers' layer_types from `sliding_window_pattern` (default 6).
                let p = hp.map.get("sliding_window_pattern").and_then(Json::as_u64)?.max(1);
                Some((0..n_layer).map(|i| (i + 1) % p != 0).collect())
            });
        }
        Family::Deepseek2 => deepseek2(&mut hp, &mut out, n_layer),
        Family::Llama4 => {
            // Llama4Model (conversion/llama.py:379-399) over LlamaModel: `intermediate_size`
            // is the experts' width, `intermediate_size_mlp` the dense layers'.
            if let Some(v) = hp.map.get("intermediate_size_mlp").cloned() {
                let experts = hp.map.insert("intermediate_size".into(), v);
                base(&mut hp, &mut out);
                if let Some(e) = experts {
                    hp.map.insert("intermediate_size".into(), e);
                }
            } else {
                hp.gaps.push(format!("config.json has no `intermediate_size_mlp`, which the converter needs for {arch}"));
                base(&mut hp, &mut out);
            }
            out.put("vocab_size", hp.need(&["vocab_size"], arch));
            out.put("interleave_moe_layer_step", hp.need(&["interleave_moe_layer_step"], arch));
            out.put("expert_feed_forward_length", hp.get("intermediate_size"));
            if hp.str_list("layer_types").is_some_and(|t| t.iter().all(|x| *x == "full_attention")) {
                out.put("attention.sliding_window", Some(0));
            }
        }
        Family::Qwen3Next => {
            // Qwen3NextModel.set_gguf_parameters (conversion/qwen.py:374-392) over
            // Qwen2MoeModel's. Without `mtp.*` tensors the converter needs `--no-mtp`
            // (qwen.py:303): block_count stays num_hidden_layers.
            base(&mut hp, &mut out);
            out.put("expert_feed_forward_length", hp.get("moe_intermediate_size"));
            out.put("expert_shared_feed_forward_length", hp.get("shared_expert_intermediate_size"));
            out.put("ssm.conv_kernel", hp.need(&["linear_conv_kernel_dim"], arch));
            out.put("ssm.state_size", hp.need(&["linear_key_head_dim"], arch));
            out.put("ssm.group_count", hp.need(&["linear_num_key_heads"], arch));
            let v_heads = hp.need(&["linear_num_value_heads"], arch);
            out.put("ssm.time_step_rank", v_heads);
            let v_dim = hp.need(&["linear_value_head_dim"], arch);
            out.put("ssm.inner_size", v_dim.zip(v_heads).and_then(|(a, b)| a.checked_mul(b)).filter(|w| *w <= MAX_WIDTH));
            match hp.str_list("layer_types") {
                Some(types) if types.len() == n => out.put_bools("attention.recurrent_layers", types.iter().map(|t| *t == "linear_attention").collect()),
                Some(types) => hp.gaps.push(format!("config.json `layer_types` has {} entries for {n} layers, which the converter refuses", types.len())),
                None => {}
            }
            out.put("full_attention_interval", Some(hp.get("full_attention_interval").unwrap_or(4)));
            hf_dense = qwen_moe_dense(&mut hp, n, arch);
            out.tokens(vocab);
        }
        Family::Glm4Moe => {
            // Glm4MoeModel.set_gguf_parameters (conversion/glm.py:147-184); the vocabulary
            // from get_vocab_base (padded to `vocab_size`).
            base(&mut hp, &mut out);
            out.put("expert_count", hp.get("n_routed_experts"));
            out.put("expert_feed_forward_length", hp.get("moe_intermediate_size"));
            out.put("expert_shared_count", hp.get("n_shared_experts"));
            out.put("leading_dense_block_count", hp.get("first_k_dense_replace"));
            out.put("nextn_predict_layers", hp.get("num_nextn_predict_layers"));
            out.tokens(vocab);
        }
        Family::GptOss => {
            // GptOssModel.set_gguf_parameters (conversion/gpt_oss.py:128-131).
            base(&mut hp, &mut out);
            out.put("attention.sliding_window", hp.need(&["sliding_window"], arch));
            out.put("expert_feed_forward_length", hp.need(&["intermediate_size"], arch));
            out.tokens(vocab);
            hf_sliding = sliding_types(&hp);
        }
        Family::Granite | Family::GraniteMoe => granite(&mut hp, &mut out, fam == Family::GraniteMoe),
        Family::GraniteHybrid => granite_hybrid(&mut hp, &mut out, &attn_layers),
        Family::Mamba2 => mamba2(&mut hp, &mut out),
        Family::FalconH1 => falcon_h1(&mut hp, &mut out),
        Family::Phi3 => {
            // Phi3MiniModel.set_gguf_parameters (conversion/phi.py:148-173); its sliding
            // window is written but llama.cpp's phi3 ignores it.
            out.put("embedding_length", hp.need(&["hidden_size", "n_embd"], arch));
            let heads = hp.need(&["num_attention_heads", "n_head"], arch);
            out.put("attention.head_count", heads);
            // Phi3Config fills an absent num_key_value_heads with num_attention_heads.
            out.put("attention.head_count_kv", hp.num(&["num_key_value_heads", "n_head_kv"]).or(heads));
            out.put("context_length", hp.need(&["n_positions", "max_position_embeddings"], arch));
            out.put("feed_forward_length", hp.need(&["intermediate_size"], arch));
            out.put("attention.sliding_window", Some(hp.get("sliding_window").unwrap_or(0)));
            out.tokens(vocab);
        }
    }
    if vocab.is_none() {
        hp.gaps.push("config.json has no `vocab_size`: the vocabulary is the tokenizer's".into());
    }
    Some(Converted { arch, keys: out.keys, gaps: hp.gaps, hf_sliding, hf_dense })
}

/// `DeepseekV2Model.set_gguf_parameters` (conversion/deepseek.py:319-386): MLA written as MQA
/// with one KV head of `kv_lora_rank + qk_rope_head_dim` (K) and `kv_lora_rank` (V).
fn deepseek2(hp: &mut Hp, out: &mut Out, n_layer: u64) {
    let arch = out.arch;
    hp.map.insert("num_key_value_heads".into(), Json::from(1));
    base(hp, out);
    let has_moe = hp.get("n_routed_experts").is_some();
    let dense = hp.get("first_k_dense_replace").unwrap_or(if has_moe { 0 } else { n_layer });
    out.put("leading_dense_block_count", Some(dense));
    out.put("vocab_size", hp.need(&["vocab_size"], arch));
    out.put("attention.q_lora_rank", hp.get("q_lora_rank"));
    let kv_lora = if hp.map.contains_key("kv_lora_rank") { hp.get("kv_lora_rank") } else { Some(512) };
    let rope = hp.need(&["qk_rope_head_dim"], arch);
    let nope = hp.need(&["qk_nope_head_dim"], arch);
    out.put("attention.kv_lora_rank", kv_lora);
    out.put("attention.key_length", kv_lora.zip(rope).and_then(|(a, b)| a.checked_add(b)));
    out.put("attention.value_length", kv_lora);
    out.put("attention.key_length_mla", nope.zip(rope).and_then(|(a, b)| a.checked_add(b)));
    out.put("attention.value_length_mla", hp.need(&["v_head_dim"], arch));
    out.put("expert_feed_forward_length", hp.need(&["moe_intermediate_size", "intermediate_size"], arch));
    out.put("expert_shared_count", Some(hp.get("n_shared_experts").unwrap_or(0)));
    out.put("rope.dimension_count", rope);
}

/// `GraniteModel` / `GraniteMoeModel.set_gguf_parameters` (conversion/granite.py:23-61,
/// 185-192): `head_dim` is dropped, the head is `hidden_size / num_attention_heads`.
fn granite(hp: &mut Hp, out: &mut Out, moe: bool) {
    hp.map.remove("head_dim");
    base(hp, out);
    out.put("vocab_size", hp.need(&["vocab_size"], out.arch));
    if moe {
        out.put("expert_shared_feed_forward_length", hp.get("shared_intermediate_size").filter(|w| *w > 0));
    }
}

/// `GraniteHybridModel.get_attn_layers` (conversion/granite.py:431-450).
fn granite_attention_layers(hp: &mut Hp, n: usize) -> Vec<bool> {
    if let Some(types) = hp.str_list("layer_types").filter(|t| !t.is_empty()) {
        return (0..n).map(|i| types.get(i) == Some(&"attention")).collect();
    }
    if let Some(idx) = hp.num_list("attn_layer_indices").filter(|l| !l.is_empty()) {
        return (0..n).map(|i| idx.contains(&(i as u64))).collect();
    }
    match (hp.get("attn_layer_period").filter(|p| *p > 0), hp.get("attn_layer_offset")) {
        (Some(period), Some(offset)) => (0..n).map(|i| i as u64 % period == offset).collect(),
        _ => {
            hp.gaps.push("config.json has no `layer_types`, `attn_layer_indices` or `attn_layer_period`: every layer taken as Mamba".into());
            vec![false; n]
        }
    }
}

/// `GraniteHybridModel.set_gguf_parameters` (conversion/granite.py:486-526) and `__init__`
/// (its `d_model`, `n_group`, `d_inner`): granite's keys, Mamba2's SSM keys, and a KV head
/// count of 0 on every Mamba layer (which llama.cpp takes as recurrent).
fn granite_hybrid(hp: &mut Hp, out: &mut Out, attn: &[bool]) {
    let arch = out.arch;
    granite(hp, out, true);
    out.put("ssm.conv_kernel", hp.need(&["conv_kernel", "d_conv"], arch));
    out.put("ssm.state_size", hp.need(&["state_size", "d_state", "state_dim", "ssm_state_size"], arch));
    out.put("ssm.group_count", hp.need(&["n_groups", "num_groups"], arch));
    let d_model = hp.need(&["mamba_head_dim", "hidden_size", "d_model"], arch);
    let expand = hp.need(&["expand", "num_heads"], arch);
    out.put("ssm.inner_size", d_model.zip(expand).and_then(|(a, b)| a.checked_mul(b)).filter(|w| *w <= MAX_WIDTH));
    out.put("ssm.time_step_rank", hp.need(&["n_heads", "num_heads"], arch));
    if let Some(kv) = hp.need(&["num_key_value_heads", "n_head_kv"], arch) {
        out.put_array("attention.head_count_kv", attn.iter().map(|a| if *a { kv } else { 0 }).collect());
    }
    let bamba = hp.map.get("architectures").and_then(Json::as_array).is_some_and(|a| a.iter().any(|x| x.as_str() == Some("BambaForCausalLM")));
    if !bamba && attn.iter().any(|a| !*a) {
        // No RoPE: the context is the converter's fixed 2^20.
        out.put("context_length", Some(1 << 20));
    }
}

/// `Mamba2Model.__init__` / `set_gguf_parameters` / `set_vocab` (conversion/mamba.py:108-166):
/// no attention, no feed-forward, the vocabulary padded to `pad_vocab_size_multiple` (16).
fn mamba2(hp: &mut Hp, out: &mut Out) {
    let arch = out.arch;
    let d_model = hp.need(&["hidden_size", "d_model", "dim"], arch);
    let expand = hp.num(&["mamba_expand", "expand"]).filter(|e| *e > 0).unwrap_or(2);
    let d_inner = hp
        .num(&["mamba_d_ssm", "intermediate_size", "d_inner"])
        .filter(|d| *d > 0)
        .or_else(|| d_model.and_then(|d| d.checked_mul(expand)).filter(|w| *w <= MAX_WIDTH));
    let head_dim = hp.num(&["mamba_d_head", "head_dim"]).filter(|h| *h > 0).unwrap_or(64);
    out.put("context_length", Some(1 << 20));
    out.put("embedding_length", d_model);
    out.put("feed_forward_length", Some(0));
    out.put("attention.head_count", Some(0));
    out.put("ssm.conv_kernel", Some(hp.num(&["conv_kernel", "d_conv"]).filter(|d| *d > 0).unwrap_or(4)));
    out.put("ssm.inner_size", d_inner);
    out.put("ssm.state_size", Some(hp.num(&["state_size", "d_state"]).filter(|d| *d > 0).unwrap_or(128)));
    out.put("ssm.time_step_rank", d_inner.map(|d| d / head_dim));
    out.put("ssm.group_count", Some(hp.num(&["n_groups"]).filter(|g| *g > 0).unwrap_or(1)));
    let pad = hp.get("pad_vocab_size_multiple").filter(|p| *p > 0).unwrap_or(16);
    let vocab = hp.get("vocab_size").and_then(|v| v.div_ceil(pad).checked_mul(pad));
    out.tokens(vocab);
}

/// `FalconH1Model` (conversion/falcon_h1.py) over `Mamba2Model.set_gguf_parameters`
/// (conversion/mamba.py): the raw config.json, `find_hparam` trying each key and then
/// `mamba_` + key; Mamba2's SSM keys with `d_inner` = `mamba_d_ssm` (FalconH1's `__init__`
/// requires it), then FalconH1's overrides of the context, feed-forward, head and
/// vocabulary keys. The vocabulary is not padded (`set_vocab` is the gpt2 path alone).
fn falcon_h1(hp: &mut Hp, out: &mut Out) {
    let arch = out.arch;
    let d_model = hp.need(&["hidden_size", "d_model", "dim"], arch);
    let d_inner = hp.need(&["mamba_d_ssm"], arch);
    let head_dim = hp.num(&["mamba_d_head", "head_dim"]).filter(|h| *h > 0).unwrap_or(64);
    out.put("embedding_length", d_model);
    out.put("ssm.conv_kernel", Some(hp.num(&["conv_kernel", "d_conv"]).filter(|d| *d > 0).unwrap_or(4)));
    out.put("ssm.inner_size", d_inner);
    out.put("ssm.state_size", Some(hp.num(&["state_size", "d_state"]).filter(|d| *d > 0).unwrap_or(128)));
    out.put("ssm.time_step_rank", d_inner.map(|d| d / head_dim));
    out.put("ssm.group_count", Some(hp.num(&["n_groups"]).filter(|g| *g > 0).unwrap_or(1)));
    out.put("vocab_size", hp.need(&["vocab_size"], arch));
    out.put("context_length", Some(hp.get("max_position_embeddings").unwrap_or(0)));
    out.put("feed_forward_length", hp.need(&["intermediate_size"], arch));
    out.put("attention.head_count", hp.need(&["num_attention_heads"], arch));
    out.put("attention.head_count_kv", hp.need(&["num_key_value_heads"], arch));
    let head = hp.need(&["head_dim"], arch);
    out.put("attention.key_length", head);
    out.put("attention.value_length", head);
}

/// The dense layers transformers makes in a qwen MoE (`Qwen3MoeDecoderLayer`: sparse iff not
/// in `mlp_only_layers` and `(i + 1) % decoder_sparse_step == 0`), with `intermediate_size`.
/// The converter cannot write them (no `ffn_gate` in the qwen MoE tensor sets, gguf-py
/// `constants.py` `MODEL_TENSORS[QWEN3MOE]`): a gap.
fn qwen_moe_dense(hp: &mut Hp, n: usize, arch: &str) -> Option<(Vec<bool>, u64)> {
    let only = hp.num_list("mlp_only_layers").unwrap_or_default();
    let step = hp.get("decoder_sparse_step").unwrap_or(1).max(1);
    let experts = hp.num(&["num_local_experts", "num_experts"]).unwrap_or(0);
    let dense: Vec<bool> = (0..n as u64).map(|i| only.contains(&i) || experts == 0 || (i + 1) % step != 0).collect();
    if !dense.iter().any(|d| *d) {
        return None;
    }
    let list: Vec<String> = dense.iter().enumerate().filter(|(_, d)| **d).map(|(i, _)| i.to_string()).collect();
    hp.gaps.push(format!(
        "layers {} have a dense MLP (`mlp_only_layers` / `decoder_sparse_step`), which the converter cannot write for {arch}: no GGUF can be made",
        list.join(", ")
    ));
    Some((dense, hp.get("intermediate_size").unwrap_or(0)))
}

/// The loaded description, checked against what transformers runs.
pub(super) fn finish(desc: &mut Description, conv: Converted) {
    let mut gaps = conv.gaps;
    if let Some(hf) = conv.hf_sliding {
        let llama: Vec<bool> = desc.layers.iter().map(|l| l.attention == Attention::Sliding).collect();
        if hf.len() != llama.len() {
            gaps.push(format!("config.json `layer_types` has {} entries for {} layers", hf.len(), llama.len()));
        } else if hf != llama {
            let list = |v: &[bool]| v.iter().enumerate().filter(|(_, s)| **s).map(|(i, _)| i.to_string()).collect::<Vec<_>>().join(", ");
            gaps.push(format!(
                "config.json `layer_types` slides layers [{}], but llama.cpp's {} slides [{}] (its own pattern: the converter writes none)",
                list(&hf),
                desc.arch,
                list(&llama)
            ));
        }
    }
    if let Some((dense, n_ff)) = conv.hf_dense {
        for (l, d) in desc.layers.iter_mut().zip(&dense) {
            if *d {
                l.ffn = Ffn::Dense { n_ff };
            }
        }
        desc.leading_dense = dense.iter().take_while(|d| **d).count() as u64;
    }
    gaps.append(&mut desc.gaps);
    desc.gaps = gaps;
}
