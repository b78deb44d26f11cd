//! The model families of tests/fixtures/families, both sides of each conversion:
//!
//! - `Description::from_config(hf/<family>/config.json)` equals
//!   `Description::from_gguf(gguf/<family>-{BF16,Q8_0}.gguf)` in every field but `side` and
//!   `gaps`, layer by layer;
//! - the keys the converter emulation writes are the keys llama.cpp's converter wrote, and
//!   every key the loader reads that the converter wrote is emulated;
//! - a few numbers per family against gguf-py's reading of the same files
//!   (`expected/<family>.json`) and llama.cpp's own load log (README), so that neither side
//!   is only checked against the other.

use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use tensorpeek::formats::gguf::{self, GgufFile, Value};
use tensorpeek::formats::Step;
use tensorpeek::model::description::{Attention, Description, Ffn, MemoryKind, Side, SwaKind};

const FAMILIES: [&str; 14] = ["llama", "qwen3", "gemma3", "qwen3moe", "deepseek3", "gptoss", "granitehybrid", "mamba2", "mixtral", "olmoe", "glm4moe", "qwen3next", "llama4", "falconh1"];
const TYPES: [&str; 2] = ["BF16", "Q8_0"];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families")
}

fn parse_gguf(family: &str, ty: &str) -> GgufFile {
    let path = dir().join(format!("gguf/{family}-{ty}.gguf"));
    let bytes = std::fs::read(&path).unwrap();
    match gguf::parse(&bytes, bytes.len() as u64) {
        Step::Done(g) => g,
        Step::Need(n) => panic!("{}: whole file given, asked for {n}", path.display()),
    }
}

/// Python's `json.dump` writes `Infinity` / `NaN` (mamba2's `time_step_limit`), which JSON
/// has not: they become `null` here, outside strings.
fn python_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_str, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if !in_str {
            if let Some(word) = ["-Infinity", "Infinity", "NaN"].iter().find(|w| rest.starts_with(**w)) {
                out.push_str("null");
                rest = &rest[word.len()..];
                continue;
            }
        }
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn config(family: &str) -> Json {
    let text = std::fs::read_to_string(dir().join(format!("hf/{family}/config.json"))).unwrap();
    serde_json::from_str(&python_json(&text)).unwrap()
}

fn expected(family: &str) -> Json {
    serde_json::from_str(&python_json(&std::fs::read_to_string(dir().join(format!("expected/{family}.json"))).unwrap())).unwrap()
}

fn from_config(family: &str) -> Description {
    Description::from_config(&config(family)).unwrap_or_else(|| panic!("{family}: no description from config.json"))
}

fn from_gguf(family: &str, ty: &str) -> Description {
    Description::from_gguf(&parse_gguf(family, ty)).unwrap_or_else(|| panic!("{family} {ty}: no description from the GGUF"))
}

#[test]
fn config_and_gguf_describe_alike() {
    for family in FAMILIES {
        let c = from_config(family);
        assert_eq!(c.side, Side::Config);
        assert!(c.gaps.is_empty(), "{family}: config gaps {:?}", c.gaps);
        for ty in TYPES {
            let g = from_gguf(family, ty);
            let at = format!("{family} {ty}");
            assert_eq!(g.side, Side::Gguf);
            assert!(g.gaps.is_empty(), "{at}: GGUF gaps {:?}", g.gaps);
            assert_eq!(c.arch, g.arch, "{at}: arch");
            assert_eq!(c.n_embd, g.n_embd, "{at}: n_embd");
            assert_eq!(c.n_vocab, g.n_vocab, "{at}: n_vocab");
            assert_eq!(c.n_ctx_train, g.n_ctx_train, "{at}: n_ctx_train");
            assert_eq!(c.n_layer_nextn, g.n_layer_nextn, "{at}: n_layer_nextn");
            assert_eq!(c.causal, g.causal, "{at}: causal");
            assert_eq!(c.swa, g.swa, "{at}: swa");
            assert_eq!(c.mla, g.mla, "{at}: mla");
            assert_eq!(c.recurrent, g.recurrent, "{at}: recurrent");
            assert_eq!(c.leading_dense, g.leading_dense, "{at}: leading_dense");
            assert_eq!(c.memory, g.memory, "{at}: memory");
            assert_eq!(c.layers.len(), g.layers.len(), "{at}: layer count");
            for (i, (lc, lg)) in c.layers.iter().zip(&g.layers).enumerate() {
                assert_eq!(lc, lg, "{at}: layer {i}");
            }
            // Every field, also one added later.
            let mut same = c.clone();
            same.side = g.side;
            same.gaps.clone_from(&g.gaps);
            assert_eq!(same, g, "{at}");
        }
    }
}

/// A key's value as numbers (a scalar, a bool as 0/1, or an array's elements).
fn numbers(v: &Value) -> Option<Vec<u64>> {
    match v {
        Value::Bool(b) => Some(vec![u64::from(*b)]),
        Value::Array(a) => a.head.iter().map(Value::as_u64).collect(),
        v => v.as_u64().map(|n| vec![n]),
    }
}

/// The `{arch}.` keys `Description::from_gguf` reads.
const READ: &[&str] = &[
    "block_count", "embedding_length", "context_length", "nextn_predict_layers", "vocab_size", "attention.causal",
    "attention.head_count", "attention.head_count_kv", "feed_forward_length", "attention.key_length",
    "attention.value_length", "attention.key_length_swa", "attention.value_length_swa", "expert_count",
    "expert_used_count", "expert_feed_forward_length", "expert_shared_count", "expert_shared_feed_forward_length",
    "leading_dense_block_count", "attention.key_length_mla", "attention.value_length_mla", "attention.kv_lora_rank",
    "attention.q_lora_rank", "attention.sliding_window", "attention.sliding_window_pattern", "full_attention_interval",
    "attention.recurrent_layers", "wkv.head_size", "token_shift_count", "shortconv.l_cache", "ssm.state_size",
    "ssm.inner_size", "ssm.conv_kernel", "ssm.group_count", "interleave_moe_layer_step",
];

#[test]
fn emulated_keys_are_the_converters() {
    for family in FAMILIES {
        let (arch, keys) = Description::converter_keys(&config(family)).unwrap();
        for ty in TYPES {
            let g = parse_gguf(family, ty);
            let at = format!("{family} {ty}");
            assert_eq!(g.architecture(), Some(arch), "{at}");
            for (key, want) in &keys {
                if key == "tokenizer.ggml.tokens" {
                    let Some(Value::Array(tokens)) = g.kv(key) else { panic!("{at}: no token list") };
                    let Value::Array(n) = want else { panic!("{at}: {key} emulated as {want:?}") };
                    assert_eq!(n.len, tokens.len, "{at}: token count");
                    continue;
                }
                let got = g.kv(key).unwrap_or_else(|| panic!("{at}: the converter wrote no {key}"));
                assert_eq!(numbers(want), numbers(got), "{at}: {key}");
            }
            for key in READ.iter().map(|k| format!("{arch}.{k}")) {
                if g.kv(&key).is_some() {
                    assert!(keys.contains_key(&key), "{at}: the converter wrote {key}, the emulation did not");
                }
            }
        }
    }
}

/// `{arch}.{key}` as gguf-py read it from the BF16 file.
fn kv<'a>(exp: &'a Json, key: &str) -> &'a Json {
    let arch = exp["gguf_architecture"].as_str().unwrap();
    &exp["gguf"]["BF16"]["arch_kv"][format!("{arch}.{key}")]["value"]
}

fn kv_u64(exp: &Json, key: &str) -> u64 {
    kv(exp, key).as_u64().unwrap_or_else(|| panic!("expected/: no {key}"))
}

fn moe(d: &Description, layer: usize) -> (u64, u64, u64, u64, u64) {
    match d.layers[layer].ffn {
        Ffn::Moe { experts, used, n_ff_exp, shared, n_ff_shexp } => (experts, used, n_ff_exp, shared, n_ff_shexp),
        f => panic!("{}: layer {layer} is {f:?}", d.arch),
    }
}

fn dense(d: &Description, layer: usize) -> u64 {
    match d.layers[layer].ffn {
        Ffn::Dense { n_ff } => n_ff,
        f => panic!("{}: layer {layer} is {f:?}", d.arch),
    }
}

fn sliding(d: &Description) -> Vec<bool> {
    d.layers.iter().map(|l| l.attention == Attention::Sliding).collect()
}

/// Numbers from gguf-py (expected/) and llama.cpp's load log, against both sides.
#[test]
fn third_party_values() {
    for family in FAMILIES {
        let exp = expected(family);
        let tokens = exp["gguf"]["BF16"]["other_kv"]["tokenizer.ggml.tokens"]["len"].as_u64().unwrap();
        let sides = [from_config(family), from_gguf(family, "BF16"), from_gguf(family, "Q8_0")];
        for d in &sides {
            let at = format!("{family} {:?}", d.side);
            assert_eq!(d.arch, exp["gguf_architecture"].as_str().unwrap(), "{at}");
            assert_eq!(d.n_layer_all(), kv_u64(&exp, "block_count"), "{at}");
            assert_eq!(d.n_embd, kv_u64(&exp, "embedding_length"), "{at}");
            assert_eq!(d.n_ctx_train, kv_u64(&exp, "context_length"), "{at}");
            assert_eq!(d.n_vocab, kv(&exp, "vocab_size").as_u64().unwrap_or(tokens), "{at}");
            let l0 = d.layers[0];
            match family {
                "llama" | "qwen3" => {
                    // qwen3's heads are wider than hidden / heads (32, not 16).
                    assert_eq!(l0.head_k, kv_u64(&exp, "attention.key_length"), "{at}");
                    assert_eq!(l0.n_head_kv, kv_u64(&exp, "attention.head_count_kv"), "{at}");
                    assert_eq!(dense(d, 0), kv_u64(&exp, "feed_forward_length"), "{at}");
                    assert_eq!(d.memory, MemoryKind::Kv, "{at}");
                }
                "gemma3" => {
                    assert_eq!(d.swa.map(|s| (s.kind, s.window)), Some((SwaKind::Standard, kv_u64(&exp, "attention.sliding_window"))), "{at}");
                    // llama-completion's load_tensors log: is_swa = 0 on layer 5 only.
                    assert_eq!(sliding(d), [true, true, true, true, true, false, true], "{at}");
                    assert_eq!(d.memory, MemoryKind::Iswa, "{at}");
                }
                "qwen3moe" => {
                    for i in 0..d.layers.len() {
                        let (e, u, ff, _, _) = moe(d, i);
                        assert_eq!((e, u, ff), (kv_u64(&exp, "expert_count"), kv_u64(&exp, "expert_used_count"), kv_u64(&exp, "expert_feed_forward_length")), "{at}");
                    }
                }
                "deepseek3" => {
                    let m = d.mla.unwrap();
                    assert_eq!(m.kv_lora_rank, kv_u64(&exp, "attention.kv_lora_rank"), "{at}");
                    assert_eq!(m.q_lora_rank, kv_u64(&exp, "attention.q_lora_rank"), "{at}");
                    assert_eq!(m.rope_dim, kv_u64(&exp, "rope.dimension_count"), "{at}");
                    assert_eq!((m.head_k_mla, m.head_v_mla), (kv_u64(&exp, "attention.key_length_mla"), kv_u64(&exp, "attention.value_length_mla")), "{at}");
                    assert_eq!((l0.attention, l0.n_head_kv), (Attention::Mla, 1), "{at}");
                    assert_eq!((l0.head_k, l0.head_v), (kv_u64(&exp, "attention.key_length"), kv_u64(&exp, "attention.value_length")), "{at}");
                    assert_eq!(d.leading_dense, kv_u64(&exp, "leading_dense_block_count"), "{at}");
                    assert_eq!(dense(d, 0), kv_u64(&exp, "feed_forward_length"), "{at}");
                    let (e, u, ff, shared, _) = moe(d, 1);
                    assert_eq!((e, u, ff, shared), (8, 2, 32, kv_u64(&exp, "expert_shared_count")), "{at}");
                }
                "gptoss" => {
                    assert_eq!(d.swa.map(|s| s.window), Some(kv_u64(&exp, "attention.sliding_window")), "{at}");
                    assert_eq!(sliding(d), [true, false], "{at}");
                    assert_eq!(moe(d, 1).0, kv_u64(&exp, "expert_count"), "{at}");
                    assert_eq!(d.memory, MemoryKind::Iswa, "{at}");
                }
                "granitehybrid" => {
                    let kv_heads: Vec<u64> = kv(&exp, "attention.head_count_kv").as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
                    assert_eq!(d.layers.iter().map(|l| l.n_head_kv).collect::<Vec<_>>(), kv_heads, "{at}");
                    assert_eq!(d.layers.iter().map(|l| l.recurrent).collect::<Vec<_>>(), [true, true, false, true], "{at}");
                    // granite's experts are feed_forward_length wide (granite-hybrid.cpp:108).
                    let (e, u, ff, shared, shexp) = moe(d, 0);
                    assert_eq!((e, u, ff), (kv_u64(&exp, "expert_count"), kv_u64(&exp, "expert_used_count"), kv_u64(&exp, "feed_forward_length")), "{at}");
                    assert_eq!((shared, shexp), (1, kv_u64(&exp, "expert_shared_feed_forward_length")), "{at}");
                    assert_eq!(d.memory, MemoryKind::Hybrid, "{at}");
                }
                "mixtral" | "olmoe" => {
                    // llama's and olmoe's experts are feed_forward_length wide (llama.cpp:80).
                    for i in 0..d.layers.len() {
                        let (e, u, ff, shared, _) = moe(d, i);
                        assert_eq!((e, u, ff, shared), (kv_u64(&exp, "expert_count"), kv_u64(&exp, "expert_used_count"), kv_u64(&exp, "feed_forward_length"), 0), "{at}");
                    }
                    assert_eq!((l0.n_head, l0.n_head_kv), (kv_u64(&exp, "attention.head_count"), kv_u64(&exp, "attention.head_count_kv")), "{at}");
                    assert_eq!((d.memory, d.n_layer_nextn), (MemoryKind::Kv, 0), "{at}");
                }
                "glm4moe" => {
                    // The converter keeps GLM-4.5's MTP layer: block_count 3 = 2 + 1 nextn.
                    assert_eq!(d.n_layer_nextn, kv_u64(&exp, "nextn_predict_layers"), "{at}");
                    assert_eq!((d.n_layer(), d.layers.iter().map(|l| l.nextn).collect::<Vec<_>>()), (2, vec![false, false, true]), "{at}");
                    assert_eq!(d.leading_dense, kv_u64(&exp, "leading_dense_block_count"), "{at}");
                    assert_eq!(dense(d, 0), kv_u64(&exp, "feed_forward_length"), "{at}");
                    for i in [1, 2] {
                        let (e, u, ff, shared, shexp) = moe(d, i);
                        assert_eq!((e, u, ff, shared), (kv_u64(&exp, "expert_count"), kv_u64(&exp, "expert_used_count"), kv_u64(&exp, "expert_feed_forward_length"), kv_u64(&exp, "expert_shared_count")), "{at}");
                        // No shared width key: llama.cpp takes the expert width.
                        assert_eq!(shexp, ff, "{at}");
                    }
                    assert_eq!((l0.head_k, l0.n_head_kv), (kv_u64(&exp, "attention.key_length"), kv_u64(&exp, "attention.head_count_kv")), "{at}");
                    assert_eq!(d.memory, MemoryKind::Kv, "{at}");
                }
                "llama4" => {
                    // Every layer MoE (interleave_moe_layer_step 1), one routed expert a token and a
                    // shared one as wide (src/models/llama4.cpp:84); llama.cpp's chunked attention
                    // of 8192 (it ignores attention_chunk_size), pattern 3 chunked + 1 full: with
                    // 2 layers both chunked, as transformers' layer_types.
                    for i in 0..2 {
                        let (e, u, ff, shared, shexp) = moe(d, i);
                        assert_eq!((e, u, ff, shared, shexp), (kv_u64(&exp, "expert_count"), kv_u64(&exp, "expert_used_count"), kv_u64(&exp, "expert_feed_forward_length"), 1, kv_u64(&exp, "expert_feed_forward_length")), "{at}");
                    }
                    assert_eq!(kv_u64(&exp, "interleave_moe_layer_step"), 1, "{at}");
                    assert_eq!(d.swa.map(|s| (s.kind, s.window)), Some((SwaKind::Chunked, 8192)), "{at}");
                    let hf: Vec<bool> = exp["hf"]["config"]["layer_types"].as_array().unwrap().iter().map(|t| t == "chunked_attention").collect();
                    assert_eq!(d.layers.iter().map(|l| l.attention == Attention::Chunked).collect::<Vec<_>>(), hf, "{at}");
                    assert_eq!(d.memory, MemoryKind::Iswa, "{at}");
                }
                "qwen3next" => {
                    // attention.recurrent_layers as gguf-py read it: 3 delta-net layers, 1 full.
                    let recurrent: Vec<bool> = kv(&exp, "attention.recurrent_layers").as_array().unwrap().iter().map(|v| v.as_bool().unwrap()).collect();
                    assert_eq!(d.layers.iter().map(|l| l.recurrent).collect::<Vec<_>>(), recurrent, "{at}");
                    assert_eq!(recurrent, [true, true, true, false], "{at}");
                    for i in 0..4 {
                        let (e, u, ff, shared, shexp) = moe(d, i);
                        assert_eq!((e, u, ff, shared, shexp), (kv_u64(&exp, "expert_count"), kv_u64(&exp, "expert_used_count"), kv_u64(&exp, "expert_feed_forward_length"), 1, kv_u64(&exp, "expert_shared_feed_forward_length")), "{at}");
                    }
                    assert_eq!((d.layers[3].attention, d.layers[3].head_k), (Attention::Full, kv_u64(&exp, "attention.key_length")), "{at}");
                    assert_eq!(d.memory, MemoryKind::Hybrid, "{at}");
                    // n_embd_r = (d_conv - 1)(d_inner + 2 n_group d_state), n_embd_s = d_state d_inner.
                    let (conv, inner, state, group) =
                        (kv_u64(&exp, "ssm.conv_kernel"), kv_u64(&exp, "ssm.inner_size"), kv_u64(&exp, "ssm.state_size"), kv_u64(&exp, "ssm.group_count"));
                    let r = d.recurrent.unwrap();
                    assert_eq!((r.r, r.s), ((conv - 1) * (inner + 2 * group * state), state * inner), "{at}");
                }
                "falconh1" => {
                    // A parallel hybrid: every layer attends (its own KV cache) and keeps a
                    // recurrent state (llama.cpp's falcon-h1 marks every layer recurrent).
                    assert!(d.layers.iter().all(|l| l.recurrent && l.attention == Attention::Full), "{at}");
                    assert_eq!((l0.n_head, l0.n_head_kv), (kv_u64(&exp, "attention.head_count"), kv_u64(&exp, "attention.head_count_kv")), "{at}");
                    assert_eq!((l0.head_k, l0.head_v), (kv_u64(&exp, "attention.key_length"), kv_u64(&exp, "attention.value_length")), "{at}");
                    assert_eq!(dense(d, 1), kv_u64(&exp, "feed_forward_length"), "{at}");
                    assert_eq!(d.memory, MemoryKind::Hybrid, "{at}");
                }
                _ => {}
            }
            if matches!(family, "granitehybrid" | "mamba2" | "falconh1") {
                // n_embd_r = (d_conv - 1)(d_inner + 2 n_group d_state), n_embd_s = d_state d_inner.
                let (conv, inner, state, group) =
                    (kv_u64(&exp, "ssm.conv_kernel"), kv_u64(&exp, "ssm.inner_size"), kv_u64(&exp, "ssm.state_size"), kv_u64(&exp, "ssm.group_count"));
                let r = d.recurrent.unwrap();
                assert_eq!((r.r, r.s), ((conv - 1) * (inner + 2 * group * state), state * inner), "{at}");
            }
            if family == "mamba2" {
                assert!(d.layers.iter().all(|l| l.attention == Attention::Recurrent && l.n_head_kv == 0 && l.ffn == Ffn::None), "{at}");
                assert_eq!(d.memory, MemoryKind::Recurrent, "{at}");
            }
        }
    }
}

/// The layer strip and the active parameters of the model card, against gguf-py's tensor
/// list: a token uses `used / experts` of every routed expert tensor, all of the rest.
#[test]
fn pattern_and_active_parameters() {
    let strips = [
        ("llama", "FF"),
        ("gemma3", "SSSSSFS"),
        ("gptoss", "SF"),
        ("deepseek3", "MMM"),
        ("granitehybrid", "RRFR"),
        ("mamba2", "RR"),
        ("mixtral", "FF"),
        ("olmoe", "FF"),
        ("glm4moe", "FFf"),
        ("qwen3next", "RRRF"),
        ("llama4", "CC"),
        ("falconh1", "FF"),
    ];
    for (family, strip) in strips {
        assert_eq!(from_gguf(family, "BF16").pattern(), strip, "{family}");
    }
    for family in ["qwen3moe", "deepseek3", "gptoss", "granitehybrid", "mixtral", "olmoe", "glm4moe", "qwen3next", "llama4"] {
        let d = from_gguf(family, "BF16");
        let (experts, used) = d.experts().expect("an MoE family");
        let tensors = expected(family)["gguf"]["BF16"]["tensors"].as_array().unwrap().clone();
        let mut want_active = 0u128;
        let mut want_total = 0u64;
        for t in &tensors {
            let n = t["n_elements"].as_u64().unwrap();
            want_total += n;
            want_active += if t["name"].as_str().unwrap().contains("_exps.") { n as u128 * used as u128 / experts as u128 } else { n as u128 };
        }
        let g = parse_gguf(family, "BF16");
        let (active, total) = d.active_params(g.tensors.iter().map(|t| (t.name.as_str(), t.params.unwrap_or(0)))).unwrap();
        assert_eq!(total, want_total, "{family}");
        // Rounded per tensor there and once here: equal within one element per expert tensor.
        let routed = tensors.iter().filter(|t| t["name"].as_str().unwrap().contains("_exps.")).count() as i128;
        assert!((active as i128 - want_active as i128).abs() <= routed, "{family}: {active} vs {want_active}");
        assert!(active < total, "{family}");
    }
    assert_eq!(from_gguf("llama", "BF16").active_params(std::iter::empty()), None);
}

/// The checkpoint's side counts the same routed experts as the GGUF's: per-expert 2-D
/// tensors (qwen3moe, deepseek3), fused 3-D ones (gpt-oss `experts.gate_up_proj`), Granite's
/// `block_sparse_moe.input_linear`; shared experts are not routed. So the parameters a
/// token does not use are the same number on both sides.
#[test]
fn checkpoint_names_count_the_same_routed_experts() {
    for family in ["qwen3moe", "deepseek3", "gptoss", "granitehybrid", "mixtral", "olmoe", "glm4moe", "qwen3next", "llama4"] {
        let g = parse_gguf(family, "BF16");
        let d = from_gguf(family, "BF16");
        let (ga, gt) = d.active_params(g.tensors.iter().map(|t| (t.name.as_str(), t.params.unwrap_or(0)))).unwrap();
        let bytes = std::fs::read(dir().join(format!("hf/{family}/model.safetensors"))).unwrap();
        let Step::Done(h) = tensorpeek::formats::safetensors::parse(&bytes, bytes.len() as u64) else { panic!("{family}") };
        let names: Vec<(String, u64)> = h.tensors.iter().map(|t| (t.name.clone(), t.params.unwrap_or(0))).collect();
        let (ha, ht) = from_config(family).active_params(names.iter().map(|(n, p)| (n.as_str(), *p))).unwrap();
        assert!(ha < ht, "{family}: nothing counted as routed on the checkpoint's side");
        assert_eq!(ht - ha, gt - ga, "{family}: inactive parameters, checkpoint vs GGUF");
    }
}
