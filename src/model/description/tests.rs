//! Tests of the description (the fixture pairs are in tests/families.rs): the tricky parts of
//! reading a config.json as the converter would, from small inline configs, and the loader's
//! expert widths.

use super::*;
use serde_json::json;

fn desc(config: serde_json::Value) -> Description {
    Description::from_config(&config).expect("a description")
}

fn sliding(d: &Description) -> Vec<bool> {
    d.layers.iter().map(|l| l.attention == Attention::Sliding).collect()
}

fn gemma3(layers: u64) -> serde_json::Value {
    json!({
        "model_type": "gemma3_text", "num_hidden_layers": layers, "hidden_size": 640, "intermediate_size": 2048,
        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "sliding_window": 512,
        "max_position_embeddings": 32768, "vocab_size": 262144
    })
}

#[test]
fn gemma3_slides_five_layers_in_six() {
    let d = desc(gemma3(12));
    assert_eq!(d.side, Side::Config);
    assert_eq!(d.arch, "gemma3");
    let full: Vec<usize> = sliding(&d).iter().enumerate().filter(|(_, s)| !**s).map(|(i, _)| i).collect();
    assert_eq!(full, [5, 11]);
    assert_eq!(d.swa, Some(Swa { kind: SwaKind::Standard, window: 512 }));
    assert_eq!(d.memory, MemoryKind::Iswa);
    // head_dim, not hidden / heads (160)
    assert!(d.layers.iter().all(|l| (l.head_k, l.head_v, l.n_head, l.n_head_kv) == (256, 256, 4, 1)));
    assert_eq!((d.n_ctx_train, d.n_vocab), (32768, 262144));
    assert!(d.gaps.is_empty(), "{:?}", d.gaps);
}

#[test]
fn gemma3_layer_types_llama_cpp_does_not_follow_are_a_gap() {
    // HF slides every other layer; llama.cpp keeps its own pattern 6 (no pattern key written).
    let mut c = gemma3(6);
    c["layer_types"] = json!(["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"]);
    let d = desc(c);
    assert_eq!(sliding(&d), [true, true, true, true, true, false]);
    assert!(d.gaps.iter().any(|g| g.contains("layer_types") && g.contains("[0, 2, 4]")), "{:?}", d.gaps);
    // A `sliding_window_pattern` without `layer_types` is what transformers derives them from.
    let mut c = gemma3(4);
    c["sliding_window_pattern"] = json!(2);
    assert!(desc(c).gaps.iter().any(|g| g.contains("layer_types")));
    // Agreeing layer_types: no gap.
    let mut c = gemma3(6);
    c["layer_types"] = json!(["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]);
    assert!(desc(c).gaps.is_empty());
}

#[test]
fn gemma3_pattern_one_has_no_window() {
    // The converter writes no sliding_window when sliding_window_pattern is 1.
    let mut c = gemma3(4);
    c["sliding_window_pattern"] = json!(1);
    let d = desc(c);
    assert_eq!(d.swa, None);
    assert_eq!(sliding(&d), [false; 4]);
    assert_eq!(d.memory, MemoryKind::Kv);
}

#[test]
fn gemma3_multimodal_text_config_takes_transformers_defaults() {
    // gemma-3-4b-it's config.json: the text config names only what differs from
    // Gemma3TextConfig's defaults (8 heads, 4 KV heads, head 256, 131072 context).
    let d = desc(json!({
        "model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
        "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34, "sliding_window": 1024},
        "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27}
    }));
    assert_eq!(d.n_layer_all(), 34);
    assert_eq!(d.n_embd, 2560);
    assert_eq!(d.n_ctx_train, 131_072);
    assert_eq!(d.n_vocab, 262_208);
    assert_eq!(d.swa.map(|s| s.window), Some(1024));
    let l = d.layers[0];
    assert_eq!((l.n_head, l.n_head_kv, l.head_k, l.ffn), (8, 4, 256, Ffn::Dense { n_ff: 10240 }));
}

#[test]
fn gpt_oss_alternates_and_its_experts_are_intermediate_size_wide() {
    let d = desc(json!({
        "model_type": "gpt_oss", "num_hidden_layers": 4, "hidden_size": 2880, "intermediate_size": 2880,
        "head_dim": 64, "num_attention_heads": 64, "num_key_value_heads": 8, "sliding_window": 128,
        "num_local_experts": 32, "num_experts_per_tok": 4, "max_position_embeddings": 131072, "vocab_size": 201088,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]
    }));
    assert_eq!(d.arch, "gpt-oss");
    assert_eq!(sliding(&d), [true, false, true, false]);
    assert_eq!(d.swa, Some(Swa { kind: SwaKind::Standard, window: 128 }));
    assert!(d.layers.iter().all(|l| l.ffn == Ffn::Moe { experts: 32, used: 4, n_ff_exp: 2880, shared: 0, n_ff_shexp: 0 }));
    assert_eq!(d.layers[0].k_width(), Some(512));
    assert!(d.gaps.is_empty(), "{:?}", d.gaps);
}

fn deepseek_v3() -> serde_json::Value {
    json!({
        "model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168, "intermediate_size": 18432,
        "moe_intermediate_size": 2048, "num_attention_heads": 128, "num_key_value_heads": 128,
        "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
        "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
        "num_nextn_predict_layers": 1, "max_position_embeddings": 163840, "vocab_size": 129280
    })
}

#[test]
fn mla_widths_are_the_converters_mqa() {
    let d = desc(deepseek_v3());
    assert_eq!(d.arch, "deepseek2");
    // The MTP layer is dropped by the converter: 61 blocks, no nextn.
    assert_eq!((d.n_layer_all(), d.n_layer_nextn), (61, 0));
    assert_eq!(d.mla, Some(Mla { kv_lora_rank: 512, rope_dim: 64, q_lora_rank: 1536, head_k_mla: 192, head_v_mla: 128 }));
    for l in &d.layers {
        assert_eq!((l.attention, l.n_head, l.n_head_kv, l.head_k, l.head_v), (Attention::Mla, 128, 1, 576, 512));
    }
    assert_eq!(d.leading_dense, 3);
    assert_eq!(d.layers[2].ffn, Ffn::Dense { n_ff: 18432 });
    assert_eq!(d.layers[3].ffn, Ffn::Moe { experts: 256, used: 8, n_ff_exp: 2048, shared: 1, n_ff_shexp: 2048 });
    assert_eq!(d.memory, MemoryKind::Kv);
}

#[test]
fn deepseek_v2_lite_and_dense_variants() {
    // V2-Lite: no q_lora_rank (null); dense without routed experts: every layer leads.
    let mut c = deepseek_v3();
    c["model_type"] = json!("deepseek_v2");
    c["q_lora_rank"] = json!(null);
    assert_eq!(desc(c).mla.map(|m| m.q_lora_rank), Some(0));
    let mut c = deepseek_v3();
    c.as_object_mut().unwrap().remove("n_routed_experts");
    c.as_object_mut().unwrap().remove("first_k_dense_replace");
    let d = desc(c);
    assert_eq!(d.leading_dense, 61);
    assert!(!d.is_moe());
}

fn granite_hybrid(layer_types: &[&str]) -> serde_json::Value {
    json!({
        "model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"],
        "num_hidden_layers": layer_types.len(), "hidden_size": 1536, "intermediate_size": 512,
        "shared_intermediate_size": 1024, "num_attention_heads": 12, "num_key_value_heads": 4,
        "num_local_experts": 62, "num_experts_per_tok": 6, "layer_types": layer_types,
        "mamba_d_conv": 4, "mamba_d_state": 128, "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 48,
        "mamba_d_head": 64, "max_position_embeddings": 131072, "vocab_size": 100352, "head_dim": 999
    })
}

#[test]
fn granite_hybrid_mamba_layers_have_no_kv_heads() {
    let d = desc(granite_hybrid(&["mamba", "mamba", "attention", "mamba", "mamba", "attention"]));
    assert_eq!(d.arch, "granitehybrid");
    let kv: Vec<u64> = d.layers.iter().map(|l| l.n_head_kv).collect();
    assert_eq!(kv, [0, 0, 4, 0, 0, 4]);
    let recr: Vec<bool> = d.layers.iter().map(|l| l.recurrent).collect();
    assert_eq!(recr, [true, true, false, true, true, false]);
    assert_eq!(d.layers[0].attention, Attention::Recurrent);
    assert_eq!(d.layers[2].attention, Attention::Full);
    // head_dim is dropped for granite: 1536 / 12.
    assert_eq!(d.layers[2].head_k, 128);
    // d_inner = 2 · 1536; r = (4 - 1)(3072 + 2 · 1 · 128), s = 128 · 3072.
    assert_eq!(d.recurrent, Some(Recurrent { r: 3 * (3072 + 256), s: 128 * 3072 }));
    assert_eq!(d.layers[0].ffn, Ffn::Moe { experts: 62, used: 6, n_ff_exp: 512, shared: 1, n_ff_shexp: 1024 });
    assert_eq!(d.memory, MemoryKind::Hybrid);
    // No RoPE: the converter's fixed 2^20 context.
    assert_eq!(d.n_ctx_train, 1 << 20);
}

#[test]
fn granite_hybrid_layer_kinds_from_indices_or_period() {
    let mut c = granite_hybrid(&["mamba"; 6]);
    c.as_object_mut().unwrap().remove("layer_types");
    c["attn_layer_indices"] = json!([1, 4]);
    assert_eq!(desc(c.clone()).layers.iter().map(|l| l.n_head_kv).collect::<Vec<_>>(), [0, 4, 0, 0, 4, 0]);
    c.as_object_mut().unwrap().remove("attn_layer_indices");
    c["attn_layer_period"] = json!(3);
    c["attn_layer_offset"] = json!(2);
    assert_eq!(desc(c.clone()).layers.iter().map(|l| l.n_head_kv).collect::<Vec<_>>(), [0, 0, 4, 0, 0, 4]);
    // Bamba keeps RoPE, so its context is max_position_embeddings.
    c["architectures"] = json!(["BambaForCausalLM"]);
    assert_eq!(desc(c.clone()).n_ctx_train, 131072);
    // Neither: a gap, every layer Mamba.
    c.as_object_mut().unwrap().remove("attn_layer_period");
    let d = desc(c);
    assert!(d.layers.iter().all(|l| l.recurrent));
    assert!(d.gaps.iter().any(|g| g.contains("attn_layer_period")));
}

#[test]
fn granite_hybrid_without_mamba_layers_is_granitemoe() {
    let d = desc(granite_hybrid(&["attention"; 3]));
    assert_eq!(d.arch, "granitemoe");
    assert_eq!(d.memory, MemoryKind::Kv);
    assert!(d.layers.iter().all(|l| l.n_head_kv == 4 && !l.recurrent));
    assert_eq!(d.n_ctx_train, 131072);
}

#[test]
fn mamba2_pads_the_vocabulary_and_has_only_state() {
    let d = desc(json!({
        "model_type": "mamba2", "num_hidden_layers": 64, "hidden_size": 4096, "state_size": 128, "expand": 2,
        "n_groups": 8, "head_dim": 64, "conv_kernel": 4, "vocab_size": 32770
    }));
    assert_eq!(d.n_vocab, 32784);
    assert_eq!(d.recurrent, Some(Recurrent { r: 3 * (8192 + 2 * 8 * 128), s: 128 * 8192 }));
    assert!(d.layers.iter().all(|l| l.attention == Attention::Recurrent && l.ffn == Ffn::None && l.n_head == 0));
    assert_eq!(d.memory, MemoryKind::Recurrent);
}

#[test]
fn mixtral_experts_are_feed_forward_length_wide() {
    // The converter writes no expert_feed_forward_length for llama; llama.cpp's llama
    // experts are n_ff wide (src/models/llama.cpp:80).
    let d = desc(json!({
        "model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096, "intermediate_size": 14336,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2,
        "max_position_embeddings": 32768, "vocab_size": 32000, "sliding_window": null
    }));
    assert_eq!(d.arch, "llama");
    assert_eq!(d.layers[0].ffn, Ffn::Moe { experts: 8, used: 2, n_ff_exp: 14336, shared: 0, n_ff_shexp: 0 });
    assert_eq!(d.layers[0].head_k, 128);
    assert!(d.gaps.is_empty(), "{:?}", d.gaps);
    // Mistral 7B v0.1's window: llama.cpp's llama attends in full.
    let d = desc(json!({"model_type": "mistral", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "sliding_window": 4096}));
    assert_eq!(d.swa, None);
    assert!(d.gaps.iter().any(|g| g.contains("sliding window")));
}

#[test]
fn qwen_moe_dense_layers_are_described_with_a_gap() {
    let d = desc(json!({
        "model_type": "qwen3_moe", "num_hidden_layers": 4, "hidden_size": 64, "intermediate_size": 256,
        "moe_intermediate_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "num_experts": 8, "num_experts_per_tok": 2, "mlp_only_layers": [0], "decoder_sparse_step": 2, "vocab_size": 100
    }));
    // Sparse iff not in mlp_only_layers and (i + 1) % 2 == 0: layers 1 and 3.
    assert_eq!(d.layers.iter().map(|l| matches!(l.ffn, Ffn::Moe { .. })).collect::<Vec<_>>(), [false, true, false, true]);
    assert_eq!(d.layers[0].ffn, Ffn::Dense { n_ff: 256 });
    assert_eq!(d.leading_dense, 1);
    assert!(d.gaps.iter().any(|g| g.contains("layers 0, 2")));
    // Without them every layer is MoE, the qwen3moe loader's n_ff_exp.
    let d = desc(json!({"model_type": "qwen3_moe", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "vocab_size": 10}));
    assert!(d.layers.iter().all(|l| matches!(l.ffn, Ffn::Moe { n_ff_exp: 32, .. })));
}

#[test]
fn qwen3_head_dim_defaults_to_128() {
    let d = desc(json!({"model_type": "qwen3", "num_hidden_layers": 1, "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8, "vocab_size": 10}));
    assert_eq!((d.layers[0].head_k, d.layers[0].k_width()), (128, Some(1024)));
}

#[test]
fn unknown_or_unbounded_configs() {
    assert_eq!(Description::from_config(&json!({"model_type": "no-such-model", "num_hidden_layers": 2})), None);
    assert_eq!(Description::from_config(&json!([1, 2])), None);
    assert_eq!(Description::from_config(&json!({"model_type": "llama"})), None);
    assert_eq!(Description::from_config(&json!({"model_type": "llama", "num_hidden_layers": MAX_LAYERS + 1})), None);
    assert_eq!(Description::from_config(&json!({"model_type": "llama", "num_hidden_layers": 0})), None);
    // Numbers that are not widths are gaps, and taken as absent.
    let d = desc(json!({
        "model_type": "llama", "num_hidden_layers": 2, "hidden_size": u64::MAX, "num_attention_heads": -4,
        "intermediate_size": 1.5, "num_key_value_heads": "8", "vocab_size": [1], "num_local_experts": 100000, "num_experts_per_tok": 2
    }));
    for key in ["hidden_size", "num_attention_heads", "intermediate_size", "num_key_value_heads", "vocab_size"] {
        assert!(d.gaps.iter().any(|g| g.contains(key)), "{key}: {:?}", d.gaps);
    }
    assert!(d.gaps.iter().any(|g| g.contains("experts")));
    assert_eq!((d.n_embd, d.layers[0].n_head), (0, 0));
    assert_eq!(d.experts().map(|e| e.0), Some(MAX_EXPERTS));
}

/// Every family with every key the emulation reads set to each awkward value: no panic.
#[test]
fn awkward_values_do_not_panic() {
    let keys = [
        "num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim",
        "vocab_size", "sliding_window", "sliding_window_pattern", "layer_types", "kv_lora_rank", "qk_rope_head_dim",
        "qk_nope_head_dim", "v_head_dim", "q_lora_rank", "n_routed_experts", "first_k_dense_replace", "moe_intermediate_size",
        "mamba_expand", "mamba_d_conv", "mamba_d_state", "mamba_n_groups", "mamba_n_heads", "expand", "n_groups",
        "state_size", "conv_kernel", "pad_vocab_size_multiple", "attn_layer_period", "attn_layer_offset",
        "attn_layer_indices", "mlp_only_layers", "decoder_sparse_step", "num_experts", "num_local_experts",
        "num_experts_per_tok", "text_config", "max_position_embeddings",
    ];
    let values = [json!(null), json!(0), json!(1), json!(u64::MAX), json!(MAX_WIDTH), json!(-1), json!(2.5), json!("x"), json!([]), json!([1, 2, 3]), json!(["attention", 7]), json!({})];
    let types = [
        "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma2", "gemma3", "gemma3_text",
        "deepseek_v2", "deepseek_v3", "gpt_oss", "granite", "granitemoe", "granitemoehybrid", "bamba", "mamba2", "olmoe", "phi3",
    ];
    for ty in types {
        for key in keys {
            for v in &values {
                let mut c = granite_hybrid(&["mamba", "attention"]);
                c["model_type"] = json!(ty);
                c["kv_lora_rank"] = json!(MAX_WIDTH);
                c["qk_rope_head_dim"] = json!(MAX_WIDTH);
                c[key] = v.clone();
                if let Some(d) = Description::from_config(&c) {
                    assert!(d.n_layer_all() <= MAX_LAYERS);
                }
            }
        }
    }
}

/// The loader's expert widths when the header has no `expert_feed_forward_length`.
#[test]
fn expert_width_falls_back_per_arch() {
    let keys = |arch: &str| -> BTreeMap<String, Value> {
        [("block_count", 1), ("embedding_length", 64), ("attention.head_count", 4), ("feed_forward_length", 96), ("expert_count", 8), ("expert_used_count", 2)]
            .into_iter()
            .map(|(k, v)| (format!("{arch}.{k}"), Value::U32(v)))
            .collect()
    };
    let width = |arch: &str| {
        let k = keys(arch);
        let d = Description::load(Source::Converted(&k), arch, Side::Gguf).unwrap();
        match d.layers[0].ffn {
            Ffn::Moe { n_ff_exp, .. } => n_ff_exp,
            f => panic!("{f:?}"),
        }
    };
    assert_eq!(width("granitehybrid"), 96);
    assert_eq!(width("llama"), 96);
    assert_eq!(width("qwen3moe"), 48);
    // An arch that needs the key (deepseek2): none is none.
    assert_eq!(width("deepseek2"), 0);
}

/// A Falcon-H1-0.5B-shaped config.json (36 layers, 1024 wide, 8 / 2 heads, 24 Mamba heads of
/// 64, state 128, as transformers' Falcon-H1 page lists it): every layer attends and is
/// recurrent; `ssm.inner_size` is `mamba_d_ssm` (1536), not `mamba_expand · hidden` (2048);
/// without `mamba_d_ssm` the converter stops (`FalconH1Model.__init__`'s `find_hparam`).
#[test]
fn falcon_h1_is_a_parallel_hybrid() {
    let mut c = json!({
        "model_type": "falcon_h1", "num_hidden_layers": 36, "hidden_size": 1024, "intermediate_size": 2048,
        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64, "max_position_embeddings": 16384,
        "vocab_size": 32784, "mamba_d_ssm": 1536, "mamba_n_heads": 24, "mamba_d_head": 64, "mamba_expand": 2,
        "mamba_n_groups": 1, "mamba_d_state": 128, "mamba_d_conv": 4
    });
    let d = desc(c.clone());
    assert_eq!((d.arch.as_str(), d.memory, d.n_ctx_train, d.n_vocab), ("falcon-h1", MemoryKind::Hybrid, 16384, 32784));
    assert!(d.layers.iter().all(|l| l.recurrent && l.attention == Attention::Full && (l.n_head, l.n_head_kv, l.head_k) == (8, 2, 64)));
    assert_eq!(d.layers.first().map(|l| l.ffn), Some(Ffn::Dense { n_ff: 2048 }));
    // n_embd_r = (d_conv − 1)(d_inner + 2 · n_group · d_state), n_embd_s = d_state · d_inner.
    assert_eq!(d.recurrent, Some(Recurrent { r: 3 * (1536 + 2 * 128), s: 128 * 1536 }));
    assert!(d.gaps.is_empty(), "{:?}", d.gaps);
    c.as_object_mut().map(|o| o.remove("mamba_d_ssm"));
    assert!(desc(c).gaps.iter().any(|g| g.contains("mamba_d_ssm")));
}

/// A header's keys by their short names, as `load_hparams` reads them.
fn header(arch: &str, keys: &[(&str, Value)]) -> Description {
    let k: BTreeMap<String, Value> = keys.iter().map(|(key, v)| (format!("{arch}.{key}"), v.clone())).collect();
    Description::load(Source::Converted(&k), arch, Side::Gguf).expect("a description")
}

fn bools(v: &[bool]) -> Value {
    Value::Array(crate::formats::gguf::Array {
        elem_type: crate::formats::gguf::ValueType::Bool,
        len: v.len() as u64,
        head: v.iter().map(|b| Value::Bool(u8::from(*b))).collect(),
    })
}

fn indexed(d: &Description) -> Vec<bool> {
    d.layers.iter().map(|l| l.indexer).collect()
}

/// glm-dsa's indexer layers: `attention.indexer.types` (one per trunk layer), else every layer
/// below GLM-5.2's 1,048,576-token context and GLM-5.2's table from it on
/// (src/models/glm-dsa.cpp:6-27, 60-66).
#[test]
fn glm_dsa_indexer_layers_follow_its_types() {
    let dsa = |n: u32, ctx: u32, types: Option<Value>| {
        let mut keys = vec![
            ("block_count", Value::U32(n)),
            ("context_length", Value::U32(ctx)),
            ("embedding_length", Value::U32(64)),
            ("attention.head_count", Value::U32(4)),
            ("attention.head_count_kv", Value::U32(1)),
            ("attention.key_length_mla", Value::U32(64)),
            ("attention.value_length_mla", Value::U32(32)),
            ("attention.kv_lora_rank", Value::U32(64)),
            ("attention.indexer.head_count", Value::U32(4)),
            ("attention.indexer.key_length", Value::U32(64)),
            ("attention.indexer.top_k", Value::U32(2048)),
        ];
        if let Some(t) = types {
            keys.push(("attention.indexer.types", t));
        }
        header("glm-dsa", &keys)
    };
    let d = dsa(4, 202_752, Some(bools(&[true, false, true, false])));
    assert_eq!(d.memory, MemoryKind::Dsa);
    assert_eq!(indexed(&d), [true, false, true, false]);
    assert!(d.layers.iter().all(|l| l.attention == Attention::Mla));
    assert!(d.gaps.is_empty(), "{:?}", d.gaps);
    // No types: GLM-5 / 5.1 index every layer; GLM-5.2 (its 1M context) keeps 1, 1, then one in four.
    assert_eq!(indexed(&dsa(4, 202_752, None)), [true; 4]);
    let glm52 = indexed(&dsa(10, 1_048_576, None));
    assert_eq!(glm52, [true, true, true, false, false, false, true, false, false, false]);
    // A scalar is every layer's; an array of another length is refused by llama.cpp.
    assert_eq!(indexed(&dsa(3, 202_752, Some(Value::U32(0)))), [false; 3]);
    let wrong = dsa(3, 202_752, Some(bools(&[true, false])));
    assert!(wrong.gaps.iter().any(|g| g.contains("indexer.types")), "{:?}", wrong.gaps);
}

/// minimax-m3 (MSA): an indexer cache over the layers from `leading_dense_block_count` on
/// (src/llama-model.cpp:2379); its five indexer keys are required (src/models/minimax-m3.cpp:21-25).
#[test]
fn minimax_m3_indexes_its_sparse_layers() {
    let mut keys = vec![
        ("block_count", Value::U32(3)),
        ("embedding_length", Value::U32(64)),
        ("attention.head_count", Value::U32(4)),
        ("attention.head_count_kv", Value::U32(2)),
        ("attention.key_length", Value::U32(32)),
        ("attention.value_length", Value::U32(32)),
        ("leading_dense_block_count", Value::U32(1)),
        ("attention.indexer.head_count", Value::U32(2)),
        ("attention.indexer.key_length", Value::U32(32)),
        ("attention.indexer.top_k", Value::U32(4)),
        ("attention.indexer.local_blocks", Value::U32(1)),
    ];
    // Without `block_size` (asserted > 0) llama.cpp stops: not modelled, and said.
    let d = header("minimax-m3", &keys);
    assert_eq!(d.memory, MemoryKind::Unmodelled);
    assert!(d.gaps.iter().any(|g| g.contains("block_size")), "{:?}", d.gaps);
    keys.push(("attention.indexer.block_size", Value::U32(64)));
    let d = header("minimax-m3", &keys);
    assert_eq!(d.memory, MemoryKind::Msa);
    assert_eq!(indexed(&d), [false, true, true]);
    assert_eq!(d.indexer, Some(Indexer { n_head: 2, head_size: 32, top_k: 4, block_size: 64, kpool: 0, kpool_tail: false }));
    assert!(d.layers.iter().all(|l| l.attention == Attention::Full && (l.head_k, l.head_v, l.n_head_kv) == (32, 32, 2)));
    assert!(d.gaps.is_empty(), "{:?}", d.gaps);
}

/// hy_v4: DSA only with an indexer (`top_k` > 0), over its full layers; without one a plain
/// MLA cache (src/llama-model.cpp:2494-2534); layer 0 shared is refused (src/models/hy-v4.cpp:55-57).
#[test]
fn hy_v4_is_dsa_only_with_an_indexer() {
    let mla = [
        ("block_count", Value::U32(3)),
        ("embedding_length", Value::U32(64)),
        ("attention.head_count", Value::U32(4)),
        ("attention.head_count_kv", Value::U32(1)),
        ("attention.key_length_mla", Value::U32(64)),
        ("attention.value_length_mla", Value::U32(32)),
        ("rope.dimension_count", Value::U32(32)),
    ];
    assert_eq!(header("hy_v4", &mla).memory, MemoryKind::Kv);
    let mut keys = mla.to_vec();
    keys.extend([
        ("attention.indexer.head_count", Value::U32(4)),
        ("attention.indexer.key_length", Value::U32(64)),
        ("attention.indexer.top_k", Value::U32(2048)),
        ("attention.indexer.types", bools(&[true, false, true])),
    ]);
    let d = header("hy_v4", &keys);
    assert_eq!(d.memory, MemoryKind::Dsa);
    assert_eq!(indexed(&d), [true, false, true]);
    keys.pop();
    keys.push(("attention.indexer.types", bools(&[false, true, true])));
    assert_eq!(header("hy_v4", &keys).memory, MemoryKind::Unmodelled);
}

/// glm5-next (hybrid-idx): KDA layers (no KV heads) keep a recurrent state of Q/K/V
/// convolutions and head_dim² per head; the attention layers an MLA cache, and those
/// `attention.indexer.types` calls full the k-pool indexer's (src/models/glm5-next.cpp:7-47,
/// src/llama-hparams.cpp:219-247).
#[test]
fn glm5_next_is_hybrid_with_an_indexer() {
    let u32s = |v: &[u32]| {
        Value::Array(crate::formats::gguf::Array {
            elem_type: crate::formats::gguf::ValueType::U32,
            len: v.len() as u64,
            head: v.iter().map(|x| Value::U32(*x)).collect(),
        })
    };
    let mut keys = vec![
        ("block_count", Value::U32(4)),
        ("embedding_length", Value::U32(64)),
        ("attention.head_count", Value::U32(4)),
        ("attention.head_count_kv", u32s(&[0, 1, 0, 1])),
        ("attention.key_length", Value::U32(64)),
        ("attention.key_length_mla", Value::U32(32)),
        ("attention.value_length_mla", Value::U32(32)),
        ("attention.kv_lora_rank", Value::U32(64)),
        ("ssm.conv_kernel", Value::U32(4)),
        ("kda.head_dim", Value::U32(16)),
        ("attention.indexer.head_count", Value::U32(4)),
        ("attention.indexer.key_length", Value::U32(64)),
        ("attention.indexer.top_k", Value::U32(2048)),
        ("attention.indexer.types", bools(&[true, true, true, false])),
    ];
    // Without a k-pool (> 1, dividing top_k) llama.cpp stops.
    assert_eq!(header("glm5-next", &keys).memory, MemoryKind::Unmodelled);
    keys.push(("attention.indexer.kpool", Value::U32(4)));
    let d = header("glm5-next", &keys);
    assert_eq!(d.memory, MemoryKind::HybridIdx);
    assert_eq!(d.pattern(), "RMRM");
    assert_eq!(indexed(&d), [false, true, false, false]);
    // r = 3 · (d_conv − 1) · n_head · head_dim, s = head_dim² · n_head.
    assert_eq!(d.recurrent, Some(Recurrent { r: 3 * 3 * 64, s: 16 * 16 * 4 }));
    assert!(d.gaps.is_empty(), "{:?}", d.gaps);
}

/// gemma3n: the gemma4 rule with a fixed `n_layer_kv_from_start` of 20 (src/models/gemma3n.cpp:7)
/// and pattern 5: of 21 blocks the last (sliding) reads block 18's cache.
#[test]
fn gemma3n_shares_the_cache_from_block_20() {
    let d = header(
        "gemma3n",
        &[
            ("block_count", Value::U32(21)),
            ("embedding_length", Value::U32(32)),
            ("attention.head_count", Value::U32(2)),
            ("attention.head_count_kv", Value::U32(1)),
            ("attention.key_length", Value::U32(32)),
            ("attention.sliding_window", Value::U32(64)),
        ],
    );
    assert_eq!(d.memory, MemoryKind::Iswa);
    assert_eq!(d.pattern(), "SSSSFSSSSFSSSSFSSSSFS");
    let shared: Vec<usize> = d.layers.iter().enumerate().filter(|(_, l)| l.shares_kv).map(|(i, _)| i).collect();
    assert_eq!(shared, [20]);
}
